/*
 * secretref.c - names, keys and the `secrets` field of a job spec
 * (secretref.h). The check is the one the CLI's manifest reader and the
 * server both apply through the job-spec table (jobspec.c).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "secretref.h"

bool sl_secret_name_ok(const char *s) {
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > SL_SECRET_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        bool alnum = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
        if (!alnum && ((ch != '-' && ch != '.') || i == 0 || i == n - 1))
            return false;
    }
    return true;
}

static bool key_n_ok(const char *s, size_t n) {
    if (n == 0 || n > SL_SECRET_KEY_MAX || (n == 1 && s[0] == '.') ||
        (n == 2 && s[0] == '.' && s[1] == '.'))
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '-' || ch == '.' || ch == '_'))
            return false;
    }
    return true;
}

bool sl_secret_key_ok(const char *s) {
    return s != NULL && key_n_ok(s, strlen(s));
}

bool sl_secret_relpath_ok(const char *s) {
    if (s == NULL || strlen(s) > 1024 || s[0] == '\0')
        return false;
    for (const char *p = s;;) {
        size_t w = strcspn(p, "/");
        if (!key_n_ok(p, w))
            return false;
        if (p[w] == '\0')
            return true;
        p += w + 1;
    }
}

static int bad(char *err, size_t errlen, size_t i, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int bad(char *err, size_t errlen, size_t i, const char *fmt, ...) {
    int n = snprintf(err, errlen, "[%zu]", i);
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < errlen)
        vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return -1;
}

static bool env_name_ok(const char *k, bool prefix) {
    size_t n = strlen(k);
    if ((n == 0 && !prefix) || n >= 256)
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = k[i];
        bool alpha = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_';
        if (!alpha && !(i > 0 && ch >= '0' && ch <= '9'))
            return false;
    }
    return true;
}

static int check_one(json_t *o, size_t i, char *err, size_t errlen) {
    static const char *const known[] = {"secret", "config_map", "key", "env", "optional",
                                        "env_prefix", "path", "items", "mode", NULL};
    const char *k;
    json_t *x;
    if (!json_is_object(o))
        return bad(err, errlen, i, ": must be an object with secret or config_map");
    json_object_foreach(o, k, x) {
        size_t n = 0;
        while (known[n] && strcmp(known[n], k) != 0) n++;
        if (known[n] == NULL)
            return bad(err, errlen, i, ".%.64s: unknown field (secret, config_map, key, env, "
                       "optional, env_prefix, path, items, mode)", k);
    }
    json_t *sec = json_object_get(o, "secret"), *cm = json_object_get(o, "config_map");
    if ((sec != NULL) == (cm != NULL))
        return bad(err, errlen, i, ": needs exactly one of secret and config_map");
    const char *which = sec ? "secret" : "config_map";
    json_t *nm = sec ? sec : cm;
    if (!json_is_string(nm) || !sl_secret_name_ok(json_string_value(nm)))
        return bad(err, errlen, i, ".%s: must be a name of 1 to %d lower-case letters, digits, "
                   "'-' and '.', starting and ending with a letter or digit", which,
                   SL_SECRET_NAME_MAX);
    json_t *key = json_object_get(o, "key"), *env = json_object_get(o, "env");
    json_t *pre = json_object_get(o, "env_prefix"), *path = json_object_get(o, "path");
    int forms = (key || env) + (pre != NULL) + (path != NULL);
    if (forms != 1)
        return bad(err, errlen, i, ": needs exactly one of key with env, env_prefix, or path");
    if (key || env) {
        if (!json_is_string(key) || !sl_secret_key_ok(json_string_value(key)))
            return bad(err, errlen, i, ".key: must be a key of 1 to %d letters, digits, '-', "
                       "'.' and '_'", SL_SECRET_KEY_MAX);
        if (!json_is_string(env) || !env_name_ok(json_string_value(env), false))
            return bad(err, errlen, i, ".env: must be a variable name ([A-Za-z_][A-Za-z0-9_]*)");
    }
    json_t *opt = json_object_get(o, "optional");
    if (opt && !json_is_boolean(opt))
        return bad(err, errlen, i, ".optional: must be true or false");
    if (pre && (!json_is_string(pre) || !env_name_ok(json_string_value(pre), true)))
        return bad(err, errlen, i, ".env_prefix: must be \"\" or the start of a variable name "
                   "([A-Za-z_][A-Za-z0-9_]*)");
    json_t *items = json_object_get(o, "items"), *mode = json_object_get(o, "mode");
    if ((items || mode) && !path)
        return bad(err, errlen, i, ".%s: only with path", items ? "items" : "mode");
    if (path) {
        const char *p = json_string_value(path);
        if (p == NULL || p[0] != '/' || strlen(p) >= 4096 || strstr(p, "/../") ||
            (strlen(p) >= 3 && strcmp(p + strlen(p) - 3, "/..") == 0) || strchr(p, ':'))
            return bad(err, errlen, i, ".path: must be an absolute directory without \"..\" or "
                       "':' (under 4096 bytes)");
        if (items) {
            if (!json_is_object(items) || json_object_size(items) == 0)
                return bad(err, errlen, i, ".items: must be an object of keys to relative paths");
            json_object_foreach(items, k, x) {
                if (!sl_secret_key_ok(k))
                    return bad(err, errlen, i, ".items: \"%.64s\" is not a key (letters, digits, "
                               "'-', '.' and '_')", k);
                if (!json_is_string(x) || !sl_secret_relpath_ok(json_string_value(x)))
                    return bad(err, errlen, i, ".items.%s: must be a relative path of keys "
                               "joined by '/' (no \"..\")", k);
            }
        }
        if (mode && (!json_is_integer(mode) || json_integer_value(mode) < 0 ||
                     json_integer_value(mode) > 0777))
            return bad(err, errlen, i, ".mode: must be a file mode from 0 to 511 (0777)");
    }
    return 0;
}

int sl_secretref_check(json_t *v, char *err, size_t errlen) {
    if (!json_is_array(v))
        return snprintf(err, errlen, "must be a list of references to secrets or config maps"), -1;
    if (json_array_size(v) > SL_SECRET_REFS_MAX)
        return snprintf(err, errlen, "holds %zu references, over the limit of %d",
                        json_array_size(v), SL_SECRET_REFS_MAX), -1;
    size_t i;
    json_t *o;
    json_array_foreach(v, i, o) if (check_one(o, i, err, errlen) < 0) return -1;
    return 0;
}
