/*
 * volume.h - a job's volumes (volume.c): the job spec's `volumes` field as
 * a user writes it, and a volume as the controller resolves it for the
 * agent's launch (docs/jobspec.md "Volumes", docs/protocol.md).
 *
 * In the spec, each volume is an object
 *
 *     {"path": "/data", "read_only": false, "sub_path": "a/b",
 *      and exactly one source:
 *      "empty_dir": {"medium": "" | "Memory", "size_limit": "8Gi"}
 *      "host_path": "/datasets/imagenet"
 *      "pvc": "claim-name"
 *      "nfs": {"server": "nfs1", "path": "/export/data"}
 *      "csi": {"driver": "gcsfuse.csi.storage.gke.io",
 *              "attributes": {"bucketName": "b1"}}}
 *
 * sl_volumes_check reads such a list against its shape alone (what only
 * the operator's config knows, the allowed host paths, the claims, the
 * exports and the CSI drivers' volumes, is the controller's: src/ctl/base/volcfg.h). On the wire a
 * volume is resolved: a bind of a node directory (base, trusted: the
 * operator configured it) and a path below it (sub, which the agent walks
 * without following a symbolic link), a per-job directory (empty_dir) or
 * a tmpfs of a size.
 */
#ifndef SLUICE_COMMON_VOLUME_H
#define SLUICE_COMMON_VOLUME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* The most volumes of one job. */
#define SL_VOLUMES_MAX 64
/* The longest path in a volume, with its NUL. */
#define SL_VOLUME_PATH_MAX 4096
/* The prefix of the variable that names a volume's node path for a task
 * (SLUICE_VOLUME_DATA for /data). */
#define SL_VOLUME_ENV_PREFIX "SLUICE_VOLUME_"

/*
 * Checks a spec's `volumes` value v (not null) by shape: a list of at
 * most SL_VOLUMES_MAX objects, each with an absolute `path` (not "/", no
 * "." or ".." part, no two the same, no two whose variables collide),
 * `read_only` a boolean, `sub_path` a relative path without "..", and
 * exactly one source of the right form (above). Every problem is said,
 * each as "volumes[I].KEY: message", joined by "; " (truncated to errlen).
 * Returns 0, or SL_EINVAL with the messages in err. Reads only;
 * O(volumes^2).
 */
int sl_volumes_check(json_t *v, char *err, size_t errlen);

/* The problems of a job's volumes as they are found, into a caller's
 * buffer: "volumes[I].KEY: message; volumes[J]: message" (KEY "" names the
 * volume itself), cut at the buffer's end; n counts them all. This file's
 * shape check and the controller's resolution (volcfg.c) both write it,
 * and the containers' check (pod.c, list "containers"). */
typedef struct sl_volume_errs {
    char *buf;
    size_t len, used;
    int n;
    const char *list; /* the list's name in each message; NULL: "volumes" */
} sl_volume_errs_t;
void sl_volume_err_add(sl_volume_errs_t *e, size_t i, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The source key of a volume object that passed sl_volumes_check
 * ("empty_dir", "host_path", "pvc", "nfs", "csi"), or NULL. */
const char *sl_volume_source(json_t *vol);

/* Whether rel is a relative path of one or more parts, none of them "."
 * or "..", without a leading "/" (a trailing one is allowed). */
bool sl_volume_rel_ok(const char *rel);

/* The variable that names the node path of the volume at path, for a
 * task: SL_VOLUME_ENV_PREFIX and path's parts in upper case, each run of
 * other characters than letters and digits one "_" ("/dev/shm" ->
 * SLUICE_VOLUME_DEV_SHM). snprintf semantics. */
int sl_volume_env_name(const char *path, char *buf, size_t len);

/* ---- the wire: a launch's resolved volumes ---- */

typedef enum sl_volume_kind {
    SL_VOLUME_BIND = 0,   /* base/sub bound at path */
    SL_VOLUME_EMPTY_DIR,  /* the job's directory of this volume on the node (sub below it) */
    SL_VOLUME_TMPFS       /* a tmpfs of size bytes at path */
} sl_volume_kind_t;

/* One resolved volume of a launch. Strings borrowed (decoded: from the
 * message's document). */
typedef struct sl_proto_volume {
    const char *path;       /* where the task sees it: absolute */
    sl_volume_kind_t kind;
    const char *base;       /* BIND: the node directory the operator configured */
    const char *sub;        /* BIND, EMPTY_DIR: a relative path below it, or NULL */
    bool read_only;
    int64_t size;           /* TMPFS: bytes (> 0); EMPTY_DIR: its size_limit, 0: none */
    int32_t index;          /* its place in the job's list (the empty_dir's name) */
    const char *error;      /* why the controller could not resolve it (the task
                             * then fails with this reason), or NULL */
} sl_proto_volume_t;

/* Writes `,"volumes":[...]` (nothing when n is 0) into buf (cap bytes,
 * snprintf semantics without the NUL: returns the length needed, writes
 * what fits). Returns the length, or -1 when a volume cannot be encoded
 * (path NULL, a BIND without base, a TMPFS of size 0 or less). Allocates
 * nothing. */
long sl__proto_volumes_encode(const sl_proto_volume_t *v, size_t n, char *buf, size_t cap);

/* The number of volumes in a launch's "volumes" (arr may be NULL: 0). */
size_t sl__proto_volumes_count(json_t *arr);

/* Decodes arr (a list, or absent/null: nothing) into out[0..n) (n from
 * sl__proto_volumes_count). 0, or -1 with "WHAT: volumes[I].KEY: must
 * be ..." in err. Strings borrowed from arr. */
int sl__proto_volumes_decode(json_t *arr, sl_proto_volume_t *out, size_t n, const char *what,
                             char *err, size_t errlen);

#endif
