/*
 * volume.c - a job's volumes: the spec's shape, and their codec on the
 * wire (volume.h).
 *
 * The check walks every volume and every key and says every problem at
 * once, each named by its place ("[2].host_path: must be an absolute
 * path"), so that a Kubernetes manifest with three bad volumes needs one
 * submission to learn of all three. Paths are checked as text here: no
 * ".." part anywhere (a mount path, a host path, a sub_path), absolute
 * where the task or the node sees them, relative where they go below a
 * volume. What a path resolves to on a node (a symbolic link planted by a
 * tenant) is the agent's to check, where the files are
 * (src/agent/volumes.c).
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "jsonesc.h"
#include "quantity.h"
#include "sluice/error.h"
#include "volume.h"

/* ---- the spec ---- */

typedef sl_volume_errs_t errs_t;

void sl_volume_err_add(sl_volume_errs_t *e, size_t i, const char *key, const char *fmt, ...) {
    e->n++;
    if (e->used >= e->len)
        return;
    e->used += (size_t)snprintf(e->buf + e->used, e->len - e->used, "%s%s[%zu]%s%s: ",
                                e->used ? "; " : "", e->list ? e->list : "volumes", i,
                                key[0] ? "." : "", key);
    if (e->used >= e->len)
        return;
    va_list ap;
    va_start(ap, fmt);
    e->used += (size_t)vsnprintf(e->buf + e->used, e->len - e->used, fmt, ap);
    va_end(ap);
}

/* Whether some part of p (split at '/') is "..", or "." when dot. */
static bool has_dots(const char *p, bool dot) {
    for (const char *s = p; *s;) {
        size_t n = strcspn(s, "/");
        if ((n == 2 && s[0] == '.' && s[1] == '.') || (dot && n == 1 && s[0] == '.'))
            return true;
        s += n + (s[n] == '/');
    }
    return false;
}

bool sl_volume_rel_ok(const char *rel) {
    if (rel == NULL || rel[0] == '\0' || rel[0] == '/' || strlen(rel) >= SL_VOLUME_PATH_MAX)
        return false;
    for (const char *s = rel; *s; s++)
        if ((unsigned char)*s < 0x20 || (s[0] == '/' && s[1] == '/'))
            return false;
    return !has_dots(rel, true);
}

/* An absolute path without "." or ".." parts, control characters or
 * empty parts; "/" only when root_ok. */
static bool abs_ok(const char *p, bool root_ok) {
    if (p == NULL || p[0] != '/' || strlen(p) >= SL_VOLUME_PATH_MAX)
        return false;
    if (p[1] == '\0')
        return root_ok;
    return sl_volume_rel_ok(p + 1);
}

int sl_volume_env_name(const char *path, char *buf, size_t len) {
    char tmp[SL_VOLUME_PATH_MAX + 32];
    size_t o = (size_t)snprintf(tmp, sizeof tmp, "%s", SL_VOLUME_ENV_PREFIX);
    bool sep = false;
    for (const char *s = path; *s && o + 2 < sizeof tmp; s++) {
        if (isalnum((unsigned char)*s) && ((unsigned char)*s) < 0x80) {
            if (sep && o > strlen(SL_VOLUME_ENV_PREFIX))
                tmp[o++] = '_';
            tmp[o++] = (char)toupper((unsigned char)*s);
            sep = false;
        } else {
            sep = true;
        }
    }
    tmp[o] = '\0';
    return snprintf(buf, len, "%s", tmp);
}

const char *sl_volume_source(json_t *vol) {
    static const char *const keys[] = {"empty_dir", "host_path", "pvc", "nfs", "csi"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (json_object_get(vol, keys[i]) && !json_is_null(json_object_get(vol, keys[i])))
            return keys[i];
    return NULL;
}

static void check_empty_dir(errs_t *e, size_t i, json_t *ed) {
    if (!json_is_object(ed)) {
        sl_volume_err_add(e, i, "empty_dir", "must be an object ({} or {\"medium\": \"Memory\", "
            "\"size_limit\": \"8Gi\"})");
        return;
    }
    const char *k;
    json_t *x;
    json_object_foreach(ed, k, x) {
        if (strcmp(k, "medium") == 0) {
            if (!json_is_null(x) && (!json_is_string(x) || (json_string_value(x)[0] &&
                                                             strcmp(json_string_value(x), "Memory"))))
                sl_volume_err_add(e, i, "empty_dir.medium", "must be \"\" (the node's disk) or \"Memory\" (a "
                    "tmpfs)");
        } else if (strcmp(k, "size_limit") == 0) {
            char t[64], qerr[160];
            int64_t b;
            if (json_is_null(x))
                continue;
            if (json_is_integer(x))
                snprintf(t, sizeof t, "%lld", (long long)json_integer_value(x));
            else
                snprintf(t, sizeof t, "%s", json_is_string(x) ? json_string_value(x) : "");
            if (!json_is_string(x) && !json_is_integer(x))
                sl_volume_err_add(e, i, "empty_dir.size_limit",
                                  "must be a memory quantity (\"8Gi\", \"512Mi\")");
            else if (sl_qty_parse(t, SL_QTY_MEM, &b, qerr, sizeof qerr) < 0)
                sl_volume_err_add(e, i, "empty_dir.size_limit", "%s", qerr);
            else if (b < 1024 * 1024)
                sl_volume_err_add(e, i, "empty_dir.size_limit", "\"%s\" is below 1Mi", t);
        } else {
            sl_volume_err_add(e, i, "empty_dir", "unknown key \"%s\" (known: medium, size_limit)", k);
        }
    }
}

static void check_nfs(errs_t *e, size_t i, json_t *nfs) {
    json_t *srv = json_object_get(nfs, "server"), *p = json_object_get(nfs, "path");
    if (!json_is_object(nfs)) {
        sl_volume_err_add(e, i, "nfs", "must be an object {\"server\": S, \"path\": P}");
        return;
    }
    if (!json_is_string(srv) || json_string_length(srv) == 0 || json_string_length(srv) > 253)
        sl_volume_err_add(e, i, "nfs.server", "must be a host name or address of 1 to 253 characters");
    if (!json_is_string(p) || !abs_ok(json_string_value(p), true))
        sl_volume_err_add(e, i, "nfs.path", "must be an absolute path without . or .. parts");
    const char *k;
    json_t *x;
    json_object_foreach(nfs, k, x) {
        if (strcmp(k, "server") && strcmp(k, "path"))
            sl_volume_err_add(e, i, "nfs", "unknown key \"%s\" (known: server, path; read_only is the "
                "volume's)", k);
    }
}

/* A CSI volume: {"driver": D, "attributes": {"K": "V", ...}}, the
 * driver a name of 1 to 253 characters, each attribute's value a string
 * (which attribute names the volume is the config's: volcfg.c). */
static void check_csi(errs_t *e, size_t i, json_t *csi) {
    if (!json_is_object(csi)) {
        sl_volume_err_add(e, i, "csi", "must be an object {\"driver\": D, \"attributes\": {...}}");
        return;
    }
    json_t *drv = json_object_get(csi, "driver"), *at = json_object_get(csi, "attributes");
    if (!json_is_string(drv) || json_string_length(drv) == 0 || json_string_length(drv) > 253)
        sl_volume_err_add(e, i, "csi.driver", "must be a driver's name of 1 to 253 characters");
    if (at && !json_is_null(at) && !json_is_object(at)) {
        sl_volume_err_add(e, i, "csi.attributes", "must be an object of strings");
    } else if (at) {
        const char *k;
        json_t *x;
        json_object_foreach(at, k, x) {
            if (!json_is_string(x))
                sl_volume_err_add(e, i, "csi.attributes", "\"%s\" must be a string", k);
        }
    }
    const char *k;
    json_t *x;
    json_object_foreach(csi, k, x) {
        if (strcmp(k, "driver") && strcmp(k, "attributes"))
            sl_volume_err_add(e, i, "csi", "unknown key \"%s\" (known: driver, attributes; read_only is the "
                "volume's)", k);
    }
}

static void check_one(errs_t *e, size_t i, json_t *vol) {
    static const char *const known =
        "path, read_only, sub_path, empty_dir, host_path, pvc, nfs, csi";
    if (!json_is_object(vol)) {
        sl_volume_err_add(e, i, "",
                          "must be an object {\"path\": P, and one of empty_dir, host_path, pvc, "
                          "nfs, csi}");
        return;
    }
    const char *k;
    json_t *x;
    int sources = 0;
    json_object_foreach(vol, k, x) {
        if (strcmp(k, "path") == 0 || strcmp(k, "read_only") == 0 || strcmp(k, "sub_path") == 0)
            continue;
        if (strcmp(k, "empty_dir") == 0 || strcmp(k, "host_path") == 0 || strcmp(k, "pvc") == 0 ||
            strcmp(k, "nfs") == 0 || strcmp(k, "csi") == 0) {
            sources += !json_is_null(x);
            continue;
        }
        sl_volume_err_add(e, i, k, "unknown key (known: %s)", known);
    }
    json_t *path = json_object_get(vol, "path");
    if (path == NULL || json_is_null(path))
        sl_volume_err_add(e, i, "path", "required: where the task sees the volume");
    else if (!json_is_string(path) || !abs_ok(json_string_value(path), false))
        sl_volume_err_add(e, i, "path", "must be an absolute path other than /, without . or .. parts");
    json_t *ro = json_object_get(vol, "read_only");
    if (ro && !json_is_null(ro) && !json_is_boolean(ro))
        sl_volume_err_add(e, i, "read_only", "must be true or false");
    json_t *sub = json_object_get(vol, "sub_path");
    if (sub && !json_is_null(sub) &&
        (!json_is_string(sub) || (json_string_length(sub) && !sl_volume_rel_ok(json_string_value(sub)))))
        sl_volume_err_add(e, i, "sub_path", "must be a relative path without . or .. parts (\"%s\")",
            json_is_string(sub) ? json_string_value(sub) : "");
    if (sources != 1) {
        sl_volume_err_add(e, i, "",
                          sources ? "has %d sources: give exactly one of empty_dir, host_path, pvc, "
                                    "nfs, csi"
                                  : "has no source%.0d: give one of empty_dir, host_path, pvc, nfs, csi",
                          sources);
        return;
    }
    const char *src = sl_volume_source(vol);
    x = json_object_get(vol, src);
    if (strcmp(src, "empty_dir") == 0) {
        check_empty_dir(e, i, x);
    } else if (strcmp(src, "host_path") == 0) {
        if (!json_is_string(x) || !abs_ok(json_string_value(x), true))
            sl_volume_err_add(e, i, "host_path", "must be an absolute path without . or .. parts (\"%s\")",
                json_is_string(x) ? json_string_value(x) : "");
    } else if (strcmp(src, "pvc") == 0) {
        if (!json_is_string(x) || json_string_length(x) == 0 || json_string_length(x) > 253 ||
            strchr(json_string_value(x), '/'))
            sl_volume_err_add(e, i, "pvc", "must be a claim's name of 1 to 253 characters, without /");
    } else if (strcmp(src, "nfs") == 0) {
        check_nfs(e, i, x);
    } else {
        check_csi(e, i, x);
    }
}

int sl_volumes_check(json_t *v, char *err, size_t errlen) {
    errs_t e = {err, errlen, 0, 0, NULL};
    if (errlen)
        err[0] = '\0';
    if (!json_is_array(v)) {
        snprintf(err, errlen, "must be a list of volumes ({\"path\": P, and one of empty_dir, "
                 "host_path, pvc, nfs, csi})");
        return SL_EINVAL;
    }
    if (json_array_size(v) > SL_VOLUMES_MAX) {
        snprintf(err, errlen, "%zu volumes: at most %d", json_array_size(v), SL_VOLUMES_MAX);
        return SL_EINVAL;
    }
    size_t i, j;
    json_t *vol;
    json_array_foreach(v, i, vol) {
        check_one(&e, i, vol);
        const char *p = json_string_value(json_object_get(vol, "path"));
        if (p == NULL)
            continue;
        char a[SL_VOLUME_PATH_MAX + 32], b[SL_VOLUME_PATH_MAX + 32];
        sl_volume_env_name(p, a, sizeof a);
        for (j = 0; j < i; j++) {
            const char *q = json_string_value(json_object_get(json_array_get(v, j), "path"));
            if (q == NULL)
                continue;
            sl_volume_env_name(q, b, sizeof b);
            if (strcmp(p, q) == 0)
                sl_volume_err_add(&e, i, "path", "%s is also volume [%zu]'s", p, j);
            else if (strcmp(a, b) == 0)
                sl_volume_err_add(&e, i, "path",
                                  "%s and volume [%zu]'s %s would both be named %s for the task",
                                  p, j, q, a);
        }
    }
    return e.n ? SL_EINVAL : 0;
}

/* ---- the wire ---- */

static const char *const kind_names[] = {"bind", "empty_dir", "tmpfs"};

typedef struct wr {
    char *buf;
    size_t cap, len;
} wr_t;

static void put(wr_t *w, const char *s, size_t n) {
    if (w->len < w->cap)
        memcpy(w->buf + w->len, s, n < w->cap - w->len ? n : w->cap - w->len);
    w->len += n;
}

static void put_s(wr_t *w, const char *s) {
    put(w, s, strlen(s));
}

static void put_q(wr_t *w, const char *key, const char *s) {
    put_s(w, ",\"");
    put_s(w, key);
    put_s(w, "\":");
    size_t room = w->len < w->cap ? w->cap - w->len : 0;
    w->len += sl_json_quote(room ? w->buf + w->len : NULL, room, s, strlen(s));
}

long sl__proto_volumes_encode(const sl_proto_volume_t *v, size_t n, char *buf, size_t cap) {
    wr_t w = {buf, buf ? cap : 0, 0};
    if (n == 0)
        return 0;
    put_s(&w, ",\"volumes\":[");
    for (size_t i = 0; i < n; i++) {
        const sl_proto_volume_t *x = &v[i];
        if (x->path == NULL || (unsigned)x->kind > SL_VOLUME_TMPFS ||
            (x->error == NULL && x->kind == SL_VOLUME_BIND && x->base == NULL) ||
            (x->error == NULL && x->kind == SL_VOLUME_TMPFS && x->size <= 0) || x->size < 0 ||
            x->index < 0)
            return -1;
        char num[64];
        put_s(&w, i ? ",{\"path\":" : "{\"path\":");
        size_t room = w.len < w.cap ? w.cap - w.len : 0;
        w.len += sl_json_quote(room ? w.buf + w.len : NULL, room, x->path, strlen(x->path));
        snprintf(num, sizeof num, ",\"kind\":\"%s\",\"index\":%d", kind_names[x->kind],
                 (int)x->index);
        put_s(&w, num);
        if (x->base)
            put_q(&w, "base", x->base);
        if (x->sub)
            put_q(&w, "sub", x->sub);
        if (x->read_only)
            put_s(&w, ",\"read_only\":true");
        if (x->size > 0) {
            snprintf(num, sizeof num, ",\"size\":%lld", (long long)x->size);
            put_s(&w, num);
        }
        if (x->error)
            put_q(&w, "error", x->error);
        put_s(&w, "}");
    }
    put_s(&w, "]");
    return (long)w.len;
}

size_t sl__proto_volumes_count(json_t *arr) {
    return json_is_array(arr) ? json_array_size(arr) : 0;
}

static int bad(char *err, size_t errlen, const char *what, size_t i, const char *key,
               const char *must) {
    snprintf(err, errlen, "%s: volumes[%zu].%s: must be %s", what, i, key, must);
    return -1;
}

int sl__proto_volumes_decode(json_t *arr, sl_proto_volume_t *out, size_t n, const char *what,
                             char *err, size_t errlen) {
    if (arr == NULL || json_is_null(arr))
        return 0;
    if (!json_is_array(arr)) {
        snprintf(err, errlen, "%s: volumes: must be a list of objects", what);
        return -1;
    }
    for (size_t i = 0; i < n && i < json_array_size(arr); i++) {
        json_t *o = json_array_get(arr, i);
        sl_proto_volume_t *x = &out[i];
        memset(x, 0, sizeof *x);
        const char *kind = json_string_value(json_object_get(o, "kind"));
        x->path = json_string_value(json_object_get(o, "path"));
        x->base = json_string_value(json_object_get(o, "base"));
        x->sub = json_string_value(json_object_get(o, "sub"));
        x->error = json_string_value(json_object_get(o, "error"));
        json_t *ro = json_object_get(o, "read_only"), *sz = json_object_get(o, "size");
        json_t *ix = json_object_get(o, "index");
        if (!json_is_object(o))
            return bad(err, errlen, what, i, "", "an object");
        if (x->path == NULL || x->path[0] != '/')
            return bad(err, errlen, what, i, "path", "an absolute path");
        int k = -1;
        for (int t = 0; kind && t <= SL_VOLUME_TMPFS; t++)
            if (strcmp(kind, kind_names[t]) == 0)
                k = t;
        if (k < 0)
            return bad(err, errlen, what, i, "kind", "bind, empty_dir or tmpfs");
        x->kind = (sl_volume_kind_t)k;
        if (x->error == NULL && x->kind == SL_VOLUME_BIND && (x->base == NULL || x->base[0] != '/'))
            return bad(err, errlen, what, i, "base", "an absolute path");
        if (x->sub && !sl_volume_rel_ok(x->sub))
            return bad(err, errlen, what, i, "sub", "a relative path without . or .. parts");
        if (ro && !json_is_boolean(ro))
            return bad(err, errlen, what, i, "read_only", "true or false");
        x->read_only = json_is_true(ro);
        if (sz && (!json_is_integer(sz) || json_integer_value(sz) < 0))
            return bad(err, errlen, what, i, "size", "a number of bytes");
        x->size = sz ? json_integer_value(sz) : 0;
        if (x->error == NULL && x->kind == SL_VOLUME_TMPFS && x->size <= 0)
            return bad(err, errlen, what, i, "size", "a number of bytes above 0");
        if (!json_is_integer(ix) || json_integer_value(ix) < 0 ||
            json_integer_value(ix) >= SL_VOLUMES_MAX)
            return bad(err, errlen, what, i, "index", "a whole number from 0 to 63");
        x->index = (int32_t)json_integer_value(ix);
    }
    return 0;
}
