/*
 * volumes.h - a task's volumes made ready on its node (volumes.c,
 * docs/jobspec.md "Volumes"): the launch's resolved volumes (volume.h)
 * opened, checked and, for an empty_dir, made.
 *
 *     WORKDIR/volumes/NAME/I   the job's empty_dir number I on this node
 *                              (root's 0711 above it, the tenant's 0700),
 *                              shared by the job's tasks here, removed when
 *                              the last of them ends (agent_volumes_remove)
 *
 * A bind's source is its base (the operator's directory, opened as it is)
 * and then its sub walked one part at a time with O_NOFOLLOW: a symbolic
 * link anywhere below the base is refused, never followed, and the real
 * path of what was opened must still lie under the base's and must
 * neither lie under the agent's work directory nor contain it (another
 * tenant's job directory, logs, bundles). The opened descriptor is kept,
 * with its device and inode: a plain task, in its own mount namespace
 * (where a descriptor of the node's namespace cannot be the source of a
 * bind), opens the real path again and binds it only when it is the very
 * inode that was checked, so nothing can be swapped in between.
 */
#ifndef SLUICE_AGENT_VOLUMES_H
#define SLUICE_AGENT_VOLUMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "volume.h"

/* One volume ready for a task. */
typedef struct agent_volume {
    const char *path;       /* where the task sees it (borrowed from the launch) */
    sl_volume_kind_t kind;  /* TMPFS only where a namespace or container makes one */
    bool read_only;
    bool is_dir;            /* the source is a directory (else a file) */
    bool mount_here;        /* a plain task in its own mount namespace: path exists on the
                             * node as the source's kind, so it is mounted there */
    int64_t size;           /* TMPFS: bytes */
    int fd;                 /* BIND, EMPTY_DIR: O_PATH descriptor of the source; else -1 */
    char fdpath[32];        /* "/proc/self/fd/N" */
    dev_t dev;              /* the source's device and inode, as opened */
    ino_t ino;
    char node_path[4096];   /* the source's real path on the node ("" for a TMPFS) */
} agent_volume_t;

/*
 * Makes ready the n launch volumes lv for a task of job NAME (names.h) in
 * workdir, for user uid/gid (chown: the agent may change owners, i.e. it
 * is root). fresh: the first task of this run of the job on the node, so
 * empty_dirs an earlier run left are removed first. container: the task
 * runs in one (which makes its tmpfs itself); ns: a plain task gets a
 * private mount namespace (the agent is root), in which each volume whose
 * path exists on the node as a directory (or a file, for a file) is
 * mounted there (mount_here); a medium Memory empty_dir that can be
 * neither becomes a disk one. node names the node in
 * messages. Fills *out (n entries, sl_xcalloc'd; free with
 * agent_volumes_release). Returns 0, or -1 with reason ("volume /data:
 * sub_path a/b: b is a symbolic link on node n1") and nothing left open.
 */
int agent_volumes_prepare(const char *workdir, const char *name, const char *node, bool fresh,
                          uid_t uid, gid_t gid, bool chown, bool container, bool ns,
                          const sl_proto_volume_t *lv, size_t n, agent_volume_t **out,
                          char *reason, size_t rlen);

/*
 * In a plain task's child, still root, before it takes the tenant's user:
 * a mount namespace of its own (unshare(CLONE_NEWNS), "/" made
 * MS_PRIVATE: nothing propagates back to the node's), then each volume
 * with mount_here mounted at its path: a TMPFS with its mount data
 * opts[i]; a bind of its real path opened again here (a descriptor of the
 * node's namespace cannot be bound in this one) only when that is the
 * inode the agent checked (else ESTALE), read-only ones remounted so.
 * System calls only (the child shares the agent's memory). 0, or -1 with
 * errno and the failing volume in *failed.
 */
int agent_volumes_mount(const agent_volume_t *v, size_t n, const char *const *opts,
                        size_t *failed);

/* Closes the descriptors and frees v (n entries). Accepts NULL. */
void agent_volumes_release(agent_volume_t *v, size_t n);

/* Removes WORKDIR/volumes/NAME and everything in it without following a
 * link; logs what it cannot remove. Can't fail. */
void agent_volumes_remove(const char *workdir, const char *name);

#endif
