/*
 * secrets.h - a task's secrets on its node (docs/secrets.md): the files
 * of its launch's secret_files, written before it starts and removed when
 * it ends, and the values of its secret_env.
 *
 * Files lie in JOBDIR/secrets/TASK/DIR/REL: JOBDIR/secrets is the agent's
 * (0711), TASK and each DIR below it are the task's user's, mode 0500, each
 * file the task's user's with the launch's mode (0400 unless it says
 * otherwise). Other tenants' users cannot reach them: the job directory
 * is 0700 and its user's. Nothing is written through a link: every step is
 * openat with O_NOFOLLOW from a directory held open, and every file is new
 * (O_EXCL), so a name the task planted fails the launch instead.
 */
#ifndef SLUICE_AGENT_SECRETS_H
#define SLUICE_AGENT_SECRETS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "proto.h"

/* JOBDIR/secrets/TASK, the task's SLUICE_SECRETS_DIR. */
void agent_secrets_dir(const char *jobdir, int32_t task, char *buf, size_t len);

/* Writes s's files below jobfd (the job directory, open) for task, owned
 * by uid:gid when chown is set (a root agent), else by the agent. A
 * TASK directory left from before is removed first. 0, or -1 with reason
 * (never a value) in rlen bytes. O(bytes written). */
int agent_secrets_write(int jobfd, int32_t task, const sl_proto_secrets_t *s, bool chown,
                        uid_t uid, gid_t gid, char *reason, size_t rlen);

/* Removes WORKDIR/jobs/NAME/secrets/TASK and everything in it, if there.
 * Can't fail (what cannot be removed is logged). */
void agent_secrets_remove(const char *workdir, const char *name, int32_t task);

/* Decodes each secret_env value of s and calls set(ud, name, value).
 * 0, or -1 with reason when a value is not base64 or holds a NUL byte. */
int agent_secrets_env(const sl_proto_secrets_t *s, void (*set)(void *ud, const char *k,
                      const char *v), void *ud, char *reason, size_t rlen);

#endif
