/*
 * proto_secret.c - the codec of a launch's secrets (proto_secret.h).
 *
 * Names, keys and paths are checked on decoding as the spec checks them
 * (secretref.h), so an agent never makes a file from a name it did not
 * expect; values are only checked to be base64 here (the agent decodes
 * them when it writes them).
 */
#include <stdio.h>
#include <string.h>

#include "jsonesc.h"
#include "proto_secret.h"
#include "secretref.h"

typedef struct w {
    char *buf;
    size_t cap, len;
} w_t;

static void put(w_t *w, const char *s, size_t n) {
    if (w->len < w->cap)
        memcpy(w->buf + w->len, s, n < w->cap - w->len ? n : w->cap - w->len);
    w->len += n;
}

static void puts_(w_t *w, const char *s) {
    put(w, s, strlen(s));
}

static void str(w_t *w, const char *s) {
    size_t room = w->len < w->cap ? w->cap - w->len : 0;
    w->len += sl_json_quote(room ? w->buf + w->len : NULL, room, s, strlen(s));
}

size_t sl__proto_secret_encode(const sl_proto_secrets_t *s, char *buf, size_t cap) {
    w_t w = {buf, cap, 0};
    if (s->nenv) {
        puts_(&w, ",\"secret_env\":{");
        for (size_t i = 0; i < s->nenv; i++) {
            if (i) put(&w, ",", 1);
            str(&w, s->env_keys[i]);
            put(&w, ":", 1);
            str(&w, s->env_values[i]);
        }
        put(&w, "}", 1);
    }
    if (s->ndirs) {
        puts_(&w, ",\"secret_files\":[");
        for (size_t i = 0; i < s->ndirs; i++) {
            const sl_proto_secret_dir_t *d = &s->dirs[i];
            char mode[48];
            puts_(&w, i ? ",{\"dir\":" : "{\"dir\":");
            str(&w, d->dir);
            puts_(&w, ",\"path\":");
            if (d->path) str(&w, d->path);
            else puts_(&w, "null");
            snprintf(mode, sizeof mode, ",\"mode\":%d,\"files\":{", (int)d->mode);
            puts_(&w, mode);
            for (size_t k = 0; k < d->nfiles; k++) {
                if (k) put(&w, ",", 1);
                str(&w, d->files[k].rel);
                put(&w, ":", 1);
                str(&w, d->files[k].value);
            }
            puts_(&w, "}}");
        }
        put(&w, "]", 1);
    }
    return w.len;
}

static bool b64_ok(const char *s) {
    size_t n = strlen(s);
    if (n % 4) return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                  c == '+' || c == '/' || (c == '=' && i + 2 >= n);
        if (!ok) return false;
    }
    return true;
}

int sl__proto_secret_decode(json_t *o, void *(*alloc)(void *ud, size_t n, size_t size), void *ud,
                            sl_proto_secrets_t *s, char *err, size_t errlen) {
    *s = (sl_proto_secrets_t){0};
    json_t *env = json_object_get(o, "secret_env"), *files = json_object_get(o, "secret_files");
    const char *k;
    json_t *v;
    if (env && !json_is_null(env)) {
        if (!json_is_object(env))
            return snprintf(err, errlen, "launch: secret_env: must be an object"), -1;
        size_t n = json_object_size(env), i = 0;
        const char **ks = alloc(ud, n ? n : 1, sizeof *ks), **vs = alloc(ud, n ? n : 1, sizeof *vs);
        json_object_foreach(env, k, v) {
            if (!json_is_string(v) || !b64_ok(json_string_value(v)))
                return snprintf(err, errlen, "launch: secret_env: the value of %.64s must be "
                                "base64", k), -1;
            ks[i] = k;
            vs[i++] = json_string_value(v);
        }
        s->env_keys = ks;
        s->env_values = vs;
        s->nenv = n;
    }
    if (files == NULL || json_is_null(files))
        return 0;
    if (!json_is_array(files))
        return snprintf(err, errlen, "launch: secret_files: must be a list"), -1;
    size_t n = json_array_size(files), i;
    sl_proto_secret_dir_t *ds = alloc(ud, n ? n : 1, sizeof *ds);
    json_array_foreach(files, i, v) {
        json_t *dir = json_object_get(v, "dir"), *path = json_object_get(v, "path");
        json_t *mode = json_object_get(v, "mode"), *fs = json_object_get(v, "files"), *x;
        if (!json_is_string(dir) || !sl_secret_key_ok(json_string_value(dir)))
            return snprintf(err, errlen, "launch: secret_files[%zu].dir: must be a key", i), -1;
        if (path && !json_is_null(path) &&
            (!json_is_string(path) || json_string_value(path)[0] != '/'))
            return snprintf(err, errlen, "launch: secret_files[%zu].path: must be an absolute "
                            "path or null", i), -1;
        if (!json_is_integer(mode) || json_integer_value(mode) < 0 ||
            json_integer_value(mode) > 0777)
            return snprintf(err, errlen, "launch: secret_files[%zu].mode: must be a file mode "
                            "from 0 to 511", i), -1;
        if (!json_is_object(fs))
            return snprintf(err, errlen, "launch: secret_files[%zu].files: must be an object", i),
                   -1;
        size_t nf = json_object_size(fs), j = 0;
        sl_proto_secret_file_t *f = alloc(ud, nf ? nf : 1, sizeof *f);
        json_object_foreach(fs, k, x) {
            if (!sl_secret_relpath_ok(k) || !json_is_string(x) || !b64_ok(json_string_value(x)))
                return snprintf(err, errlen, "launch: secret_files[%zu].files: %.64s must be a "
                                "relative path of keys with a base64 value", i, k), -1;
            f[j].rel = k;
            f[j++].value = json_string_value(x);
        }
        ds[i] = (sl_proto_secret_dir_t){json_string_value(dir),
                                        json_is_string(path) ? json_string_value(path) : NULL,
                                        (int32_t)json_integer_value(mode), f, nf};
    }
    s->dirs = ds;
    s->ndirs = n;
    return 0;
}
