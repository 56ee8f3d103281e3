/*
 * container.h - an image task's bundle (container.c): what the agent hands
 * sluice-cstart (container/cstart.c) to run one task's container through a
 * real OCI runtime (runc), inside the task's own cgroup, as its tenant's
 * user (docs/containers.md).
 *
 * The agent writes WORKDIR/containers/NAME.TASK/spec.json (the directory
 * made anew for each start, root's, 0700) and starts the task as
 *
 *     sluice-cstart BUNDLE
 *
 * still root (no identity change in the task's child: cstart takes the
 * tenant's user itself once the image is ready), in the task's cgroup,
 * session and process group, under the task's monitor. spec.json, one
 * JSON object, says everything cstart needs, and nothing there is the
 * tenant's to change (the directory is root's until cstart hands it over):
 *
 *     {"id": "sluice-NAME.TASK", "image": "nvcr.io/megatron",
 *      "store": "/var/lib/containers/storage" | null, "pull": "never",
 *      "runtime": "/usr/sbin/runc", "init": ".../sluice-init",
 *      "images": "WORKDIR/images", "uid": 1001, "gid": 1001,
 *      "hostname": "n1", "args": ["python3", "train.py"] | null,
 *      "cwd": "/workspace" | null, "jobdir": "WORKDIR/jobs/NAME",
 *      "image_args": ["--epochs", "3"] (only with args null: after the
 *                    image's entrypoint, instead of its command),
 *      "env": ["K=V", ...], "shm_size": 67108864,
 *      "mounts": [{"source": "/data", "destination": "/data", "ro": true},
 *                 {"source": "/mnt/pvc/x", "destination": "/x", "ro": false,
 *                  "dev": 2049, "ino": 1234},
 *                 {"destination": "/cache", "tmpfs": 1073741824}],
 *      "devices": [{"source": "/dev/nvidia3", "destination": "/dev/nvidia3"}],
 *      "reason": "WORKDIR/containers/NAME.TASK/failed",
 *      "cdi": "/etc/cdi/nvidia.yaml" | null}
 *
 * A pod's task (the job's `containers`, pod.h) has, beside these, the
 * list of its containers, each started by cstart as a container of its
 * own (BUNDLE/c.NAME, runc id "sluice-NAME.TASK.CNAME"), all in the one
 * task, the top-level image, args, cwd, env and devices unused:
 *
 *      "containers": [{"name": "server", "image": "...", "args": [...] | null,
 *                      "image_args": [...] | null (after the image's entrypoint),
 *                      "cwd": "/srv" | null, "env": ["K=V", ...],
 *                      "mounts": [0, 2], "devices": [...],
 *                      "role": "init" | "sidecar" (absent: a main one)}, ...]
 *
 * where "mounts" are indices into the top-level list (the host mounts and
 * secret directories every container has, and the volumes it asked for).
 *
 * A task with GPUs gets the edits of the NVIDIA toolkit's CDI spec (cdi.h)
 * when the node has one ("cdi" names it: its devices, mounts and env are in
 * the lists above), else its GPUs' device files
 * (agent_container_gpu_devices).
 *
 * A start that fails before the container runs (the image is not in the
 * store and cannot be pulled, say) leaves its reason, one line, in
 * BUNDLE/failed (root's) and exits AGENT_CONTAINER_FAILED_EXIT; the tasks
 * layer then reports the task failed with that reason (agent_container_
 * failure).
 */
#ifndef SLUICE_AGENT_CONTAINER_H
#define SLUICE_AGENT_CONTAINER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* volumes.h (not included: sluice-cstart includes this header alone). A
 * volume's mount carries the device and inode the agent checked: cstart,
 * still root, binds the source onto BUNDLE/vol/I (a tmpfs of its own, in a
 * mount namespace of its own) only when it is still that inode, and runc
 * binds from there, so nothing a tenant renames in between is mounted. */
struct agent_volume;

/* The program that starts a container, and the container's first process,
 * both found beside sluice-agent. */
#define AGENT_CSTART_NAME "sluice-cstart"
#define AGENT_CINIT_NAME "sluice-init"

/* cstart's exit status when the container could not be started (its
 * reason in BUNDLE/failed), as podman's and docker's 125. */
#define AGENT_CONTAINER_FAILED_EXIT 125

/* The default size of a container's /dev/shm, as docker's: 64 MiB. */
#define AGENT_CONTAINER_SHM_DEFAULT (INT64_C(64) << 20)

/* How the node runs images (agent flags --runtime, --image-store,
 * --image-pull, --gpu-device-files). All borrowed. */
typedef struct agent_container_config {
    const char *runtime;    /* the OCI runtime (runc); NULL: images go through --launcher */
    const char *store;      /* podman's storage root (--root); NULL: podman's default */
    const char *pull;       /* "never", "if-not-present" (default) or "always" */
    const char *gpu_files;  /* GPU i's device file, comma-separated; NULL: /dev/nvidiaI */
    const char *cdi_dirs;   /* where CDI specs are (cdi.h); NULL: AGENT_CDI_DIRS */
    const char *cstart;     /* sluice-cstart's path */
    const char *init;       /* sluice-init's path */
} agent_container_config_t;

/* One task's container. All borrowed. */
typedef struct agent_container_task {
    const char *workdir;    /* the agent's: containers/ and images/ under it */
    const char *name;       /* the job's NAME on the node */
    int32_t task;
    const char *node;       /* hostname inside, and messages */
    const char *image;
    const char *const *argv;    /* NULL: the image's entrypoint and command */
    size_t argc;
    char *const *env;       /* NULL-terminated, K=V */
    uid_t uid;
    gid_t gid;
    const char *jobdir;     /* bound at the same path inside */
    const char *cwd;        /* the spec's workdir, or NULL */
    int64_t shm_size;       /* bytes; 0: AGENT_CONTAINER_SHM_DEFAULT */
    const char *const *mounts;  /* "SRC:DST[:ro]", checked by the controller */
    size_t nmounts;
    const int32_t *gpus;    /* the task's GPU indices */
    size_t ngpus;
    /* The job's volumes, ready (volumes.h): each bind and empty_dir a
     * mount {"source": its node path, "destination", "ro"}, each tmpfs
     * {"destination", "tmpfs": bytes}; one at /dev/shm is the /dev/shm
     * (shm_size its size). */
    const struct agent_volume *volumes;
    size_t nvolumes;
    /* A pod's containers (pod.h), NULL for one container: each gets its
     * own image, command, env (over the task's, under Sluice's variables),
     * working directory, volumes and share of the GPUs; image, argv and
     * cwd above are then unused. */
    struct json_t *containers;
    /* argv NULL: the image's entrypoint's arguments instead of its command
     * (spec.json's "image_args"); NULL: its command. */
    const char *const *image_args;
    size_t nimage_args;
} agent_container_task_t;

/*
 * The device files of GPUs gpus[0..n) (with files, the agent's
 * --gpu-device-files list, else /dev/nvidiaI), then those every NVIDIA
 * process needs (/dev/nvidiactl, /dev/nvidia-uvm, /dev/nvidia-uvm-tools,
 * /dev/nvidia-modeset) that exist, each as its host path and its path in
 * the container (the host path under /dev, else /dev/ and its last part).
 * Only files that exist are listed, a GPU's own included (an emulated GPU
 * has none). Fills src[i] and dst[i] (each 256 bytes) for up to max files;
 * returns how many. Can't fail.
 */
size_t agent_container_gpu_devices(const char *files, const int32_t *gpus, size_t n,
                                   char (*src)[256], char (*dst)[256], size_t max);

/*
 * Writes t's bundle, WORKDIR/containers/NAME.TASK/spec.json (the directory
 * made anew: one left by an earlier start is renamed aside), and its path
 * into bundle (blen bytes). Returns 0, or -1 with reason filled (rlen
 * bytes).
 */
int agent_container_bundle(const agent_container_config_t *cc, const agent_container_task_t *t,
                           char *bundle, size_t blen, char *reason, size_t rlen);

/*
 * The reason a container task ended with AGENT_CONTAINER_FAILED_EXIT
 * before its container ran: WORKDIR/containers/NAME.TASK/failed, when it
 * is there and root's, into reason (rlen bytes). Returns true when found.
 */
bool agent_container_failure(const char *workdir, const char *name, int32_t task, char *reason,
                             size_t rlen);

/* The program name beside sluice-agent's own binary: a malloc'd path, or
 * NULL (logged) when it is not there or not executable. */
char *agent_container_program(const char *name);

#endif
