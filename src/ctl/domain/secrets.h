/*
 * secrets.h - the tenants' secrets and config maps (docs/secrets.md).
 *
 * A secret (or config map: the same object with another type) is a set of
 * keys and values that belongs to one tenant. Its values are sealed with
 * the controller's key (AES-256-GCM, src/common/seal.h; the tenant, name
 * and key are the associated data) before they reach the store, so the
 * database alone reveals names, keys and sizes, never a value. Values are
 * opened only to build the launch of a task that references them
 * (ctl_secrets_resolve), and go nowhere else: not into job objects, logs,
 * events or /metrics. Another tenant's secret is, to every function here,
 * one that does not exist.
 */
#ifndef SLUICE_CTL_SECRETS_H
#define SLUICE_CTL_SECRETS_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "domain/ctl.h"
#include "proto.h"

/* Reads the sealing key from cfg.secrets_key_file (default: secrets.key in
 * the state database's directory), or, unless shared, makes one there (32
 * random bytes, mode 0600, O_EXCL) when the file does not exist. shared:
 * the key is one file every member of an HA group holds a copy of, so a
 * missing file is an error (a key made by one member would seal what the
 * others cannot open). A file that group or others may read or write,
 * that is not a regular file of this user, or that does not hold exactly
 * 32 bytes is refused. 0, or -1 with a message naming the file and what to
 * do in err. */
int ctl_secrets_open(ctl_t *c, bool shared, char *err, size_t errlen);
/* Wipes the key. Can't fail. */
void ctl_secrets_close(ctl_t *c);

/* One key and its value (len bytes, any bytes). */
typedef struct ctl_secret_kv {
    const char *key;
    const unsigned char *val;
    size_t len;
} ctl_secret_kv_t;

/* Creates tenant's secret name of type ("secret" or "config_map") with
 * the n values kv (keys valid and unique: the caller checks). 0;
 * SL_EEXIST when tenant has one of that name; SL_ERANGE over a limit
 * (cfg.secrets_max_per_tenant, cfg.secrets_max_bytes), with err naming
 * it. Urgent write. O(n + the tenant's secrets). */
int ctl_secret_create(ctl_t *c, const char *tenant, const char *name, const char *type,
                      const ctl_secret_kv_t *kv, size_t n, char *err, size_t errlen);
/* Deletes tenant's secret name: 0, or SL_ENOENT. */
int ctl_secret_delete(ctl_t *c, const char *tenant, const char *name);

/* Checks that each reference of refs (a spec's valid `secrets`) that is
 * not optional names an existing object of tenant of its type (and, for
 * key and items, those keys). 0, or SL_ENOENT with err saying which
 * ("secrets[1]: secret db-pass does not exist, or has no key password")
 * without telling another tenant's objects from absent ones. Warnings
 * (env_prefix keys that are not variable names) are appended to warn,
 * when not NULL, as strings. O(references + their keys). */
int ctl_secrets_check(ctl_t *c, const char *tenant, json_t *refs, json_t *warn, char *err,
                      size_t errlen);

/* A task's resolved secrets: what the launch carries (out.secrets points
 * into it), owned here. */
typedef struct ctl_secrets_res {
    sl_proto_secrets_t out;
    char **owned;
    size_t nowned, owned_cap;
    const char **env_keys, **env_values;
    sl_proto_secret_dir_t *dirs;
    sl_proto_secret_file_t **files;
} ctl_secrets_res_t;

/* Opens the values j's `secrets` reference (the job's tenant's) into *r:
 * environment values and files, base64. 0 (r empty when j has none), or
 * SL_ENOENT (a reference that is not optional is missing) or SL_EIO (a
 * value does not open: another key, or a changed database) with err
 * naming the reference, never a value. Fini r in either case. */
int ctl_secrets_resolve(ctl_t *c, const ctl_job_t *j, ctl_secrets_res_t *r, char *err,
                        size_t errlen);
/* Wipes and frees what r holds. Accepts a zeroed r. */
void ctl_secrets_res_fini(ctl_secrets_res_t *r);

#endif
