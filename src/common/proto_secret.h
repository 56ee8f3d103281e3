/*
 * proto_secret.h - the secrets of a launch (docs/protocol.md "Secrets"):
 * the values a task's secret references resolve to, which the controller
 * sends only in the launch of that task to the agent that runs it. proto.h
 * includes this header; proto.c calls its codec for the launch.
 *
 * On the wire, two optional fields of a launch, values always base64 (a
 * secret may hold any bytes):
 *   "secret_env": {"VAR": "BASE64", ...}
 *   "secret_files": [{"dir": "NAME", "path": "/in/container" | null,
 *                     "mode": 256, "files": {"rel/path": "BASE64", ...}}, ...]
 * dir is the directory below the task's secrets directory (a key, as
 * secretref.h); each file's name is a relative path of keys.
 */
#ifndef SLUICE_COMMON_PROTO_SECRET_H
#define SLUICE_COMMON_PROTO_SECRET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

typedef struct sl_proto_secret_file {
    const char *rel;        /* a relative path of keys (sl_secret_relpath_ok) */
    const char *value;      /* base64 */
} sl_proto_secret_file_t;

typedef struct sl_proto_secret_dir {
    const char *dir;        /* a key: the directory's name below the task's secrets */
    const char *path;       /* a container's mount point; NULL: none */
    int32_t mode;           /* the files' mode, 0..0777 */
    const sl_proto_secret_file_t *files;
    size_t nfiles;
} sl_proto_secret_dir_t;

/* A launch's secrets: env (names and base64 values) and dirs. */
typedef struct sl_proto_secrets {
    const char *const *env_keys;   /* nenv names */
    const char *const *env_values; /* nenv base64 values */
    size_t nenv;
    const sl_proto_secret_dir_t *dirs;
    size_t ndirs;
} sl_proto_secrets_t;

/* Writes `,"secret_env":{..}` and `,"secret_files":[..]` for what s holds
 * (nothing for none) into buf (cap bytes, snprintf semantics: returns the
 * length the text needs, writes what fits, no NUL). Allocates nothing. */
size_t sl__proto_secret_encode(const sl_proto_secrets_t *s, char *buf, size_t cap);

/* Decodes a launch's two fields of o into *s, arrays from alloc(ud, count,
 * size) (zeroed; the strings are borrowed from o). 0, or -1 with
 * "launch: secret_files[I].FIELD: must be ..." in err. */
int sl__proto_secret_decode(json_t *o, void *(*alloc)(void *ud, size_t n, size_t size), void *ud,
                            sl_proto_secrets_t *s, char *err, size_t errlen);

#endif
