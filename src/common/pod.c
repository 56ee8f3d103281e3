/*
 * pod.c - the job spec's `containers` (pod.h): their shape, and their
 * agreement with the spec's volumes and GPUs.
 *
 * Workload: a handful of containers (a Kubernetes pod has one to a few:
 * a server and its client, a trainer and a log shipper), so every check
 * is a plain scan, quadratic in the containers and their volumes.
 */
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "pod.h"
#include "volume.h"
#include "sluice/error.h"

typedef sl_volume_errs_t errs_t;

static bool name_ok(const char *s) {
    size_t n = strlen(s);
    if (n == 0 || n > SL_POD_NAME_MAX || s[0] == '-' || s[n - 1] == '-')
        return false;
    for (const char *p = s; *p; p++)
        if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '-'))
            return false;
    return true;
}

static bool var_ok(const char *k) {
    if (!(isalpha((unsigned char)k[0]) || k[0] == '_') || strlen(k) >= 256)
        return false;
    for (const char *p = k; *p; p++)
        if (!(isalnum((unsigned char)*p) || *p == '_'))
            return false;
    return true;
}

static bool abs_path(json_t *v) {
    const char *s = json_string_value(v);
    if (!s || s[0] != '/' || strlen(s) >= 4096)
        return false;
    for (const char *p = s; *p;) {
        size_t n = strcspn(p, "/");
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return false;
        p += n + (p[n] == '/');
    }
    return true;
}

static void check_one(errs_t *e, size_t i, json_t *c) {
    if (!json_is_object(c)) {
        sl_volume_err_add(e, i, "", "must be an object ({\"name\": N, \"image\": I, ...})");
        return;
    }
    const char *k;
    json_t *v, *x;
    size_t j, l;
    json_object_foreach(c, k, v) {
        if (strcmp(k, "name") == 0) {
            if (!json_is_string(v) || !name_ok(json_string_value(v)))
                sl_volume_err_add(e, i, k, "must be 1 to %d of a-z, 0-9 and -, not starting or ending with -",
                        SL_POD_NAME_MAX);
        } else if (strcmp(k, "image") == 0) {
            if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) > 1024)
                sl_volume_err_add(e, i, k, "must be an image's name of 1 to 1024 characters");
        } else if (strcmp(k, "command") == 0 || strcmp(k, "args") == 0) {
            bool ok = json_is_array(v) && json_array_size(v) > 0;
            json_array_foreach(v, j, x) ok = ok && json_is_string(x);
            if (!ok)
                sl_volume_err_add(e, i, k, "must be a list of one or more strings");
        } else if (strcmp(k, "env") == 0) {
            const char *ek;
            if (!json_is_object(v)) {
                sl_volume_err_add(e, i, k, "must be an object of string values");
                continue;
            }
            json_object_foreach(v, ek, x) {
                if (!var_ok(ek))
                    sl_volume_err_add(e, i, k, "\"%s\" is not a valid variable name", ek);
                else if (!json_is_string(x))
                    sl_volume_err_add(e, i, k, "value of %s must be a string", ek);
            }
        } else if (strcmp(k, "workdir") == 0) {
            if (!abs_path(v))
                sl_volume_err_add(e, i, k, "must be an absolute path inside the container");
        } else if (strcmp(k, "volumes") == 0) {
            if (!json_is_array(v)) {
                sl_volume_err_add(e, i, k, "must be a list of the paths of the job's volumes");
                continue;
            }
            json_array_foreach(v, j, x) {
                if (!abs_path(x)) {
                    sl_volume_err_add(e, i, k, "[%zu] must be an absolute path (a volume's path)", j);
                    continue;
                }
                for (l = 0; l < j; l++)
                    if (json_equal(json_array_get(v, l), x))
                        sl_volume_err_add(e, i, k, "%s is listed twice", json_string_value(x));
            }
        } else if (strcmp(k, "role") == 0) {
            const char *r = json_string_value(v);
            if (!r || (strcmp(r, "init") && strcmp(r, "sidecar")))
                sl_volume_err_add(e, i, k, "must be init or sidecar (absent: one of the pod's containers)");
        } else if (strcmp(k, "gpus") == 0) {
            if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 64)
                sl_volume_err_add(e, i, k, "must be a whole number from 0 to 64");
        } else {
            sl_volume_err_add(e, i, k, "unknown field (name, image, command, args, env, workdir, volumes, gpus, "
                    "role)");
        }
    }
    if (!json_object_get(c, "name"))
        sl_volume_err_add(e, i, "name", "required");
    if (!json_object_get(c, "image"))
        sl_volume_err_add(e, i, "image", "required");
    if (json_object_get(c, "command") && json_object_get(c, "args"))
        sl_volume_err_add(e, i, "args", "cannot be combined with command (give args after the command)");
}

int sl_pod_check(json_t *v, char *err, size_t errlen) {
    errs_t e = {err, errlen, 0, 0, "containers"};
    if (errlen)
        err[0] = '\0';
    if (!json_is_array(v) || json_array_size(v) == 0) {
        snprintf(err, errlen, "must be a list of containers ({\"name\": N, \"image\": I, ...})");
        return SL_EINVAL;
    }
    if (json_array_size(v) > SL_POD_CONTAINERS_MAX) {
        snprintf(err, errlen, "%zu containers: at most %d", json_array_size(v), SL_POD_CONTAINERS_MAX);
        return SL_EINVAL;
    }
    size_t i, j, mains = 0;
    json_t *c;
    json_array_foreach(v, i, c) {
        check_one(&e, i, c);
        bool role = json_object_get(c, "role") != NULL;
        if (role && mains)
            sl_volume_err_add(&e, i, "role", "an init container or sidecar must come before the pod's "
                    "containers");
        mains += !role;
        json_t *n = json_object_get(c, "name");
        for (j = 0; json_is_string(n) && j < i; j++)
            if (json_equal(json_object_get(json_array_get(v, j), "name"), n))
                sl_volume_err_add(&e, i, "name", "\"%s\" is also container [%zu]'s", json_string_value(n), j);
    }
    if (mains == 0 && e.n == 0) {
        snprintf(err, errlen, "only init containers and sidecars: at least one container "
                 "without a role");
        return SL_EINVAL;
    }
    return e.n ? SL_EINVAL : 0;
}

int sl_pod_rules(json_t *containers, json_t *volumes, int64_t gpus, char *err, size_t errlen) {
    errs_t e = {err, errlen, 0, 0, "containers"};
    if (errlen)
        err[0] = '\0';
    size_t i, j, k;
    json_t *c, *p, *vol;
    int64_t sum = 0;
    bool split = false;
    json_array_foreach(containers, i, c) {
        json_t *g = json_object_get(c, "gpus");
        split = split || g;
        sum += json_integer_value(g);
        json_array_foreach(json_object_get(c, "volumes"), j, p) {
            bool found = false;
            json_array_foreach(volumes, k, vol) found = found || json_equal(json_object_get(vol, "path"), p);
            if (!found)
                sl_volume_err_add(&e, i, "volumes", "%s is not the path of one of the job's volumes",
                        json_string_value(p));
        }
    }
    if (split && sum != gpus) {
        e.n++;
        if (e.used < e.len)
            e.used += (size_t)snprintf(e.buf + e.used, e.len - e.used,
                                       "%scontainers: their gpus add up to %lld, the job asks for %lld",
                                       e.used ? "; " : "", (long long)sum, (long long)gpus);
    }
    return e.n ? SL_EINVAL : 0;
}

int sl_pod_sees(json_t *c, const char *path) {
    json_t *vs = json_object_get(c, "volumes"), *p;
    size_t i;
    if (!vs)
        return 1;
    json_array_foreach(vs, i, p) if (json_is_string(p) && strcmp(json_string_value(p), path) == 0) return 1;
    return 0;
}

void sl_pod_gpus(json_t *cs, size_t i, size_t ngpus, size_t *first, size_t *n) {
    size_t k, off = 0;
    json_t *c;
    bool split = false;
    json_array_foreach(cs, k, c) split = split || json_object_get(c, "gpus");
    if (!split) {
        *first = 0;
        *n = ngpus;
        return;
    }
    for (k = 0; k < i && k < json_array_size(cs); k++)
        off += (size_t)json_integer_value(json_object_get(json_array_get(cs, k), "gpus"));
    size_t want = (size_t)json_integer_value(json_object_get(json_array_get(cs, i), "gpus"));
    *first = off < ngpus ? off : ngpus;
    *n = *first + want <= ngpus ? want : ngpus - *first;
}
