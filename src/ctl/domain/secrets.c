/*
 * secrets.c - the tenants' secrets and config maps (secrets.h): the key
 * file, creation and deletion through the store with values sealed, the
 * check of a spec's references at submission and their values opened for
 * a launch.
 *
 * Workload: a tenant holds tens of secrets of a few keys; a launch opens
 * the few its job references (one AES-GCM pass over each value, a few
 * microseconds per KiB). Nothing is cached: a value lives in memory only
 * while its launch is built, and is wiped after.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/rand.h>

#include "domain/secrets.h"
#include "jobspec.h"
#include "log.h"
#include "seal.h"
#include "secretref.h"
#include "sluice/error.h"

/* ---- the key file ---- */

static void key_path(const ctl_t *c, char *buf, size_t len) {
    if (c->cfg.secrets_key_file) {
        snprintf(buf, len, "%s", c->cfg.secrets_key_file);
        return;
    }
    const char *st = c->cfg.state ? c->cfg.state : "sluice.db";
    const char *slash = strrchr(st, '/');
    if (slash == NULL)
        snprintf(buf, len, "secrets.key");
    else
        snprintf(buf, len, "%.*s/secrets.key", (int)(slash - st), st);
}

int ctl_secrets_open(ctl_t *c, bool shared, char *err, size_t errlen) {
    char path[4096];
    key_path(c, path, sizeof path);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT && shared) {
        snprintf(err, errlen, "secrets.key_file: %s does not exist: the members of an HA group "
                 "share one sealing key, which none of them makes; make it once (head -c 32 "
                 "/dev/urandom > FILE; chmod 600 FILE), copy it to every member and name it in "
                 "secrets.key_file (docs/ha.md)", path);
        return -1;
    }
    if (fd < 0 && errno == ENOENT) {
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0 || RAND_bytes(c->secret_key, sizeof c->secret_key) != 1 ||
            write(fd, c->secret_key, sizeof c->secret_key) != (ssize_t)sizeof c->secret_key ||
            fsync(fd) != 0) {
            snprintf(err, errlen, "secrets.key_file: cannot create %s: %s (make its directory "
                     "writable, or set secrets.key_file)", path, strerror(errno ? errno : EIO));
            if (fd >= 0) {
                close(fd);
                unlink(path);
            }
            sl_wipe(c->secret_key, sizeof c->secret_key);
            return -1;
        }
        close(fd);
        c->has_secret_key = true;
        sl_log(SL_LOG_INFO, "secrets", "made the secrets' sealing key %s (mode 0600): keep a copy "
               "apart from the database's backups", path);
        return 0;
    }
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(err, errlen, "secrets.key_file: cannot open %s: %s", path, strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    int rc = -1;
    if (!S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
        snprintf(err, errlen, "secrets.key_file: %s must be a regular file owned by this user "
                 "(uid %u)", path, (unsigned)geteuid());
    } else if (st.st_mode & 077) {
        snprintf(err, errlen, "secrets.key_file: %s has mode %04o: group or others may use it; "
                 "run chmod 600 %s", path, (unsigned)(st.st_mode & 07777), path);
    } else if (st.st_size != (off_t)sizeof c->secret_key ||
               read(fd, c->secret_key, sizeof c->secret_key) != (ssize_t)sizeof c->secret_key) {
        snprintf(err, errlen, "secrets.key_file: %s must hold exactly 32 bytes (it has %lld); "
                 "make one with head -c 32 /dev/urandom", path, (long long)st.st_size);
    } else {
        c->has_secret_key = true;
        rc = 0;
    }
    close(fd);
    return rc;
}

void ctl_secrets_close(ctl_t *c) {
    sl_wipe(c->secret_key, sizeof c->secret_key);
    c->has_secret_key = false;
}

/* The associated data of a value: tenant, name and key, NUL-separated. */
static size_t aad(char *buf, size_t cap, const char *tenant, const char *name, const char *key) {
    int n = snprintf(buf, cap, "%s%c%s%c%s", tenant, 0, name, 0, key);
    return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

/* ---- reading the store ---- */

typedef struct meta {
    size_t count;
    char type[16];
} meta_t;

static int meta_row(void *ud, const ctl_store_secret_t *s) {
    meta_t *m = ud;
    m->count++;
    snprintf(m->type, sizeof m->type, "%s", s->type);
    return 0;
}

/* An object's values, opened: keys[i], vals[i] (lens[i] bytes). */
typedef struct vals {
    ctl_t *c;
    const char *tenant, *name;
    char **keys;
    unsigned char **vals;
    size_t *lens;
    size_t n, cap;
    bool bad;          /* a value did not open */
    bool open;         /* open the values, or only list the keys */
} vals_t;

static int value_row(void *ud, const ctl_store_secret_value_t *v) {
    vals_t *vs = ud;
    if (vs->n == vs->cap) {
        vs->cap = vs->cap ? 2 * vs->cap : 8;
        vs->keys = sl_xrealloc(vs->keys, vs->cap * sizeof *vs->keys);
        vs->vals = sl_xrealloc(vs->vals, vs->cap * sizeof *vs->vals);
        vs->lens = sl_xrealloc(vs->lens, vs->cap * sizeof *vs->lens);
    }
    size_t k = vs->n++;
    vs->keys[k] = sl_xstrdup(v->key);
    vs->vals[k] = NULL;
    vs->lens[k] = 0;
    if (!vs->open)
        return 0;
    char ad[600];
    size_t adn = aad(ad, sizeof ad, vs->tenant, vs->name, v->key);
    vs->vals[k] = sl_xmalloc(v->sealed_len + 1);
    if (sl_unseal(vs->c->secret_key, ad, adn, v->sealed, v->sealed_len, vs->vals[k],
                  &vs->lens[k]) != 0)
        vs->bad = true;
    vs->vals[k][vs->lens[k]] = '\0';
    return 0;
}

static void vals_fini(vals_t *vs) {
    for (size_t i = 0; i < vs->n; i++) {
        sl_free(vs->keys[i]);
        if (vs->vals[i]) {
            sl_wipe(vs->vals[i], vs->lens[i]);
            sl_free(vs->vals[i]);
        }
    }
    sl_free(vs->keys);
    sl_free(vs->vals);
    sl_free(vs->lens);
}

/* tenant's object name of type: 1 with its values in *vs (opened when
 * open), 0 when there is none of that type, -1 when the store failed. */
static int load(ctl_t *c, const char *tenant, const char *name, const char *type, bool open,
                vals_t *vs) {
    *vs = (vals_t){.c = c, .tenant = tenant, .name = name, .open = open};
    meta_t m = {0};
    if (ctl_store_secrets_read(c->store, tenant, name, meta_row, &m) < 0)
        return -1;
    if (m.count == 0 || strcmp(m.type, type) != 0)
        return 0;
    return ctl_store_secret_values_read(c->store, tenant, name, value_row, vs) < 0 ? -1 : 1;
}

static ssize_t find_key(const vals_t *vs, const char *key) {
    for (size_t i = 0; i < vs->n; i++)
        if (strcmp(vs->keys[i], key) == 0)
            return (ssize_t)i;
    return -1;
}

/* ---- create, delete ---- */

int ctl_secret_create(ctl_t *c, const char *tenant, const char *name, const char *type,
                      const ctl_secret_kv_t *kv, size_t n, char *err, size_t errlen) {
    meta_t all = {0}, one = {0};
    if (ctl_store_secrets_read(c->store, tenant, name, meta_row, &one) < 0 ||
        ctl_store_secrets_read(c->store, tenant, NULL, meta_row, &all) < 0) {
        snprintf(err, errlen, "the store cannot be read: %s", ctl_store_errmsg(c->store));
        return SL_EIO;
    }
    if (one.count > 0) {
        snprintf(err, errlen, "name: %s already exists (a %s); delete it first", name,
                 strcmp(one.type, "secret") == 0 ? "secret" : "config map");
        return SL_EEXIST;
    }
    if ((int64_t)all.count >= c->cfg.secrets_max_per_tenant) {
        snprintf(err, errlen, "name: tenant %s already has %zu secrets and config maps, the "
                 "limit (secrets.max_per_tenant)", tenant, all.count);
        return SL_ERANGE;
    }
    size_t total = 0;
    for (size_t i = 0; i < n; i++) total += kv[i].len + strlen(kv[i].key);
    if ((int64_t)total > c->cfg.secrets_max_bytes) {
        snprintf(err, errlen, "data: %zu bytes of keys and values, over the limit of %lld KiB "
                 "(secrets.max_bytes)", total, (long long)(c->cfg.secrets_max_bytes / 1024));
        return SL_ERANGE;
    }
    ctl_store_secret_value_t *v = sl_xcalloc(n ? n : 1, sizeof *v);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        char ad[600];
        size_t adn = aad(ad, sizeof ad, tenant, name, kv[i].key);
        unsigned char *sealed = sl_xmalloc(kv[i].len + SL_SEAL_OVERHEAD);
        v[i] = (ctl_store_secret_value_t){kv[i].key, (int64_t)kv[i].len, sealed,
                                          kv[i].len + SL_SEAL_OVERHEAD};
        if (sl_seal(c->secret_key, ad, adn, kv[i].val, kv[i].len, sealed) != 0) {
            snprintf(err, errlen, "data: the value of %s cannot be sealed (OpenSSL failed)",
                     kv[i].key);
            rc = SL_EIO;
        }
    }
    if (rc == 0) {
        ctl_store_secret_t s = {tenant, name, type, ctl_now_us()};
        ctl_store_secret_put(c->store, &s, v, n);
        sl_log(SL_LOG_INFO, "secrets", "tenant=%s %s=%s created keys=%zu", tenant, type, name, n);
    }
    for (size_t i = 0; i < n; i++) sl_free((void *)v[i].sealed);
    sl_free(v);
    return rc;
}

int ctl_secret_delete(ctl_t *c, const char *tenant, const char *name) {
    if (ctl_store_secret_delete(c->store, tenant, name) == 0)
        return SL_ENOENT;
    sl_log(SL_LOG_INFO, "secrets", "tenant=%s name=%s deleted", tenant, name);
    return 0;
}

/* ---- references ---- */

static const char *ref_type(json_t *ref, const char **name) {
    json_t *s = json_object_get(ref, "secret");
    *name = json_string_value(s ? s : json_object_get(ref, "config_map"));
    return s ? "secret" : "config_map";
}

static const char *type_words(const char *type) {
    return strcmp(type, "secret") == 0 ? "secret" : "config map";
}

int ctl_secrets_check(ctl_t *c, const char *tenant, json_t *refs, json_t *warn, char *err,
                      size_t errlen) {
    size_t i;
    json_t *ref;
    json_array_foreach(refs, i, ref) {
        const char *name, *type = ref_type(ref, &name);
        bool optional = json_is_true(json_object_get(ref, "optional"));
        vals_t vs;
        int got = load(c, tenant, name, type, false, &vs);
        const char *miss = NULL;
        if (got < 0) {
            snprintf(err, errlen, "secrets[%zu]: the store cannot be read: %s", i,
                     ctl_store_errmsg(c->store));
            vals_fini(&vs);
            return SL_EIO;
        }
        json_t *key = json_object_get(ref, "key"), *items = json_object_get(ref, "items"), *x;
        const char *k;
        if (got == 1 && key && find_key(&vs, json_string_value(key)) < 0)
            miss = json_string_value(key);
        json_object_foreach(items, k, x) if (got == 1 && !miss && find_key(&vs, k) < 0) miss = k;
        if (got == 1 && warn && json_object_get(ref, "env_prefix")) {
            const char *pre = json_string_value(json_object_get(ref, "env_prefix"));
            for (size_t n = 0; n < vs.n; n++) {
                char var[600];
                snprintf(var, sizeof var, "%s%s", pre, vs.keys[n]);
                if (!sl_jobspec_env_name_ok(var))
                    json_array_append_new(warn, json_sprintf("secrets[%zu]: key %s of %s %s is "
                                          "not a variable name and is left out", i, vs.keys[n],
                                          type_words(type), name));
            }
        }
        vals_fini(&vs);
        if (!optional && (got == 0 || miss)) {
            snprintf(err, errlen, "secrets[%zu]: %s %s does not exist%s%s", i, type_words(type),
                     name, miss ? ", or has no key " : "", miss ? miss : "");
            return SL_ENOENT;
        }
    }
    return 0;
}

/* ---- a launch's values ---- */

static const char *own(ctl_secrets_res_t *r, char *s) {
    if (r->nowned == r->owned_cap) {
        r->owned_cap = r->owned_cap ? 2 * r->owned_cap : 16;
        r->owned = sl_xrealloc(r->owned, r->owned_cap * sizeof *r->owned);
    }
    r->owned[r->nowned++] = s;
    return s;
}

static void add_env(ctl_secrets_res_t *r, size_t cap, const char *var, const unsigned char *v,
                    size_t len) {
    size_t k = r->out.nenv;
    for (size_t i = 0; i < r->out.nenv; i++)
        if (strcmp(r->env_keys[i], var) == 0) k = i; /* a later reference wins */
    if (k == r->out.nenv) {
        if (k == cap) return;
        r->out.nenv++;
    }
    r->env_keys[k] = own(r, sl_xstrdup(var));
    r->env_values[k] = own(r, sl_base64_encode(v, len));
}

int ctl_secrets_resolve(ctl_t *c, const ctl_job_t *j, ctl_secrets_res_t *r, char *err,
                        size_t errlen) {
    *r = (ctl_secrets_res_t){0};
    size_t nd = 0;
    json_t *refs = json_object_get(j->spec, "secrets"), *ref;
    const char *tenant = json_string_value(json_object_get(j->spec, "tenant"));
    size_t nrefs = json_array_size(refs), i, envcap = 0, dircap = 0;
    if (nrefs == 0 || tenant == NULL)
        return 0;
    vals_t *all = sl_xcalloc(nrefs, sizeof *all);
    int rc = 0;
    json_array_foreach(refs, i, ref) {
        const char *name, *type = ref_type(ref, &name);
        int got = load(c, tenant, name, type, true, &all[i]);
        if (got < 0 || all[i].bad) {
            snprintf(err, errlen, "secrets[%zu]: the values of %s %s cannot be opened (%s)", i,
                     type_words(type), name, got < 0 ? "the store cannot be read"
                     : "sealed under another key, or changed in the database");
            rc = SL_EIO;
            goto out;
        }
        if (got == 0 && !json_is_true(json_object_get(ref, "optional"))) {
            snprintf(err, errlen, "secrets[%zu]: %s %s does not exist", i, type_words(type), name);
            rc = SL_ENOENT;
            goto out;
        }
        envcap += json_object_get(ref, "env_prefix") ? all[i].n : json_object_get(ref, "env") != 0;
        dircap += json_object_get(ref, "path") != NULL && got == 1;
    }
    r->env_keys = sl_xcalloc(envcap ? envcap : 1, sizeof *r->env_keys);
    r->env_values = sl_xcalloc(envcap ? envcap : 1, sizeof *r->env_values);
    r->dirs = sl_xcalloc(dircap ? dircap : 1, sizeof *r->dirs);
    r->files = sl_xcalloc(dircap ? dircap : 1, sizeof *r->files);
    json_array_foreach(refs, i, ref) {
        vals_t *vs = &all[i];
        const char *name, *type = ref_type(ref, &name);
        json_t *key = json_object_get(ref, "key"), *pre = json_object_get(ref, "env_prefix");
        json_t *path = json_object_get(ref, "path"), *items = json_object_get(ref, "items");
        bool optional = json_is_true(json_object_get(ref, "optional"));
        if (vs->n == 0 && vs->keys == NULL && !path && !key && !pre)
            continue;
        if (key) {
            ssize_t k = find_key(vs, json_string_value(key));
            if (k < 0 && optional) continue;
            if (k < 0) {
                snprintf(err, errlen, "secrets[%zu]: %s %s has no key %s", i, type_words(type),
                         name, json_string_value(key));
                rc = SL_ENOENT;
                goto out;
            }
            if (memchr(vs->vals[k], 0, vs->lens[k])) {
                snprintf(err, errlen, "secrets[%zu]: key %s of %s %s holds a NUL byte, which no "
                         "environment variable can hold; give it as a file (path)", i,
                         vs->keys[k], type_words(type), name);
                rc = SL_ENOENT;
                goto out;
            }
            add_env(r, envcap, json_string_value(json_object_get(ref, "env")), vs->vals[k],
                    vs->lens[k]);
        } else if (pre) {
            for (size_t k = 0; k < vs->n; k++) {
                char var[600];
                snprintf(var, sizeof var, "%s%s", json_string_value(pre), vs->keys[k]);
                if (sl_jobspec_env_name_ok(var) && !memchr(vs->vals[k], 0, vs->lens[k]))
                    add_env(r, envcap, var, vs->vals[k], vs->lens[k]);
            }
        } else if (path && vs->keys != NULL && nd < dircap) {
            sl_proto_secret_dir_t *d = &r->dirs[nd];
            sl_proto_secret_file_t *f = sl_xcalloc(vs->n ? vs->n : 1, sizeof *f);
            r->files[nd] = f;
            /* The directory: the object's name, with the reference's index
             * when an earlier reference already took it. */
            bool taken = false;
            for (size_t p = 0; p < nd; p++) taken |= strcmp(r->dirs[p].dir, name) == 0;
            char dir[300];
            snprintf(dir, sizeof dir, taken ? "%s.%zu" : "%s", name, i);
            json_t *mode = json_object_get(ref, "mode");
            *d = (sl_proto_secret_dir_t){own(r, sl_xstrdup(dir)), json_string_value(path),
                                         mode ? (int32_t)json_integer_value(mode)
                                              : SL_SECRET_DEFAULT_MODE, f, 0};
            for (size_t k = 0; k < vs->n; k++) {
                const char *rel = items ? json_string_value(json_object_get(items, vs->keys[k]))
                                        : vs->keys[k];
                if (rel == NULL) continue;
                f[d->nfiles++] = (sl_proto_secret_file_t){
                    own(r, sl_xstrdup(rel)), own(r, sl_base64_encode(vs->vals[k], vs->lens[k]))};
            }
            const char *k;
            json_t *x;
            json_object_foreach(items, k, x) if (find_key(vs, k) < 0 && !optional) {
                snprintf(err, errlen, "secrets[%zu]: %s %s has no key %s", i, type_words(type),
                         name, k);
                nd++;
                rc = SL_ENOENT;
                goto out;
            }
            nd++;
        }
    }
    r->out.ndirs = nd;
    r->out.env_keys = r->env_keys;
    r->out.env_values = r->env_values;
    r->out.dirs = r->dirs;
out:
    if (rc != 0) r->out.ndirs = nd;
    for (size_t k = 0; k < nrefs; k++) vals_fini(&all[k]);
    sl_free(all);
    return rc;
}

void ctl_secrets_res_fini(ctl_secrets_res_t *r) {
    for (size_t i = 0; i < r->nowned; i++) {
        sl_wipe(r->owned[i], strlen(r->owned[i]));
        sl_free(r->owned[i]);
    }
    sl_free(r->owned);
    for (size_t i = 0; i < r->out.ndirs; i++) sl_free(r->files[i]);
    sl_free(r->files);
    sl_free(r->dirs);
    sl_free(r->env_keys);
    sl_free(r->env_values);
    *r = (ctl_secrets_res_t){0};
}
