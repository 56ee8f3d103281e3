/*
 * health_config.c - the health: section of the configuration
 * (health_config.h). A table of the keys: each is one of a few words, a
 * number of seconds or a count, and an error names the key and the line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/health_config.h"

void ctl_health_cfg_init(ctl_health_cfg_t *h) {
    *h = (ctl_health_cfg_t){.gpu_fault = CTL_GPU_FAULT_FENCE, .node_drain = true,
                            .fence_degraded = false, .fail_app_xid = true,
                            .clear = CTL_CLEAR_RESUME, .clear_after_ms = 300000,
                            .flap_limit = 3, .flap_window_ms = 3600000};
}

static int fail(const char *path, const sl_yaml_node_t *n, char *err, size_t errlen, const char *key,
                const char *must) {
    snprintf(err, errlen, "%s:%d: health.%s: %s", path, n ? n->line : 1, key, must);
    return -1;
}

/* The index of v's word among words (NULL-terminated), or -1. */
static int word(const sl_yaml_node_t *v, const char *const *words) {
    for (int i = 0; v->kind == SL_YAML_SCALAR && words[i]; i++)
        if (strcmp(v->value, words[i]) == 0) return i;
    return -1;
}

/* A number of seconds (0 to 1e6, a decimal allowed) into *ms. */
static int seconds(const sl_yaml_node_t *v, int64_t *ms) {
    char *end;
    if (v->kind != SL_YAML_SCALAR) return -1;
    double s = strtod(v->value, &end);
    if (end == v->value || *end || !(s >= 0 && s <= 1e6)) return -1;
    *ms = (int64_t)(s * 1000 + 0.5);
    return 0;
}

int ctl_health_cfg_load(ctl_health_cfg_t *h, const sl_yaml_node_t *m, const char *path, char *err,
                        size_t errlen) {
    static const char *const keys[] = {"gpu_fault", "node_fault", "degraded", "application_xid",
                                       "clear", "clear_after", "flap_limit", "flap_window", NULL};
    if (m->kind != SL_YAML_MAP) {
        snprintf(err, errlen, "%s:%d: health must be a mapping", path, m->line);
        return -1;
    }
    for (size_t i = 0; i < m->n; i++) {
        const char *k = m->items[2 * i]->value;
        bool ok = false;
        for (size_t j = 0; keys[j]; j++) ok = ok || strcmp(k, keys[j]) == 0;
        if (!ok) {
            snprintf(err, errlen, "%s:%d: unknown key \"%.60s\" in health (known: gpu_fault, node_fault, "
                     "degraded, application_xid, clear, clear_after, flap_limit, flap_window)",
                     path, m->items[2 * i]->line, k);
            return -1;
        }
    }
    static const char *const gpu[] = {"fence", "drain", "none", NULL};
    static const char *const node[] = {"none", "drain", NULL};
    static const char *const deg[] = {"ignore", "fence", NULL};
    static const char *const app[] = {"ignore", "fail", NULL};
    static const char *const clr[] = {"resume", "check", NULL};
    const sl_yaml_node_t *v;
    int w;
    int64_t x;
    if ((v = sl_yaml_map_get(m, "gpu_fault")) && !sl_yaml_is_null(v)) {
        if ((w = word(v, gpu)) < 0) return fail(path, v, err, errlen, "gpu_fault", "must be fence, drain or none");
        h->gpu_fault = (ctl_gpu_fault_t)w;
    }
    if ((v = sl_yaml_map_get(m, "node_fault")) && !sl_yaml_is_null(v)) {
        if ((w = word(v, node)) < 0) return fail(path, v, err, errlen, "node_fault", "must be drain or none");
        h->node_drain = w == 1;
    }
    if ((v = sl_yaml_map_get(m, "degraded")) && !sl_yaml_is_null(v)) {
        if ((w = word(v, deg)) < 0) return fail(path, v, err, errlen, "degraded", "must be ignore or fence");
        h->fence_degraded = w == 1;
    }
    if ((v = sl_yaml_map_get(m, "application_xid")) && !sl_yaml_is_null(v)) {
        if ((w = word(v, app)) < 0)
            return fail(path, v, err, errlen, "application_xid", "must be fail or ignore");
        h->fail_app_xid = w == 1;
    }
    if ((v = sl_yaml_map_get(m, "clear")) && !sl_yaml_is_null(v)) {
        if ((w = word(v, clr)) < 0) return fail(path, v, err, errlen, "clear", "must be resume or check");
        h->clear = (ctl_health_clear_t)w;
    }
    if ((v = sl_yaml_map_get(m, "clear_after")) && !sl_yaml_is_null(v) && seconds(v, &h->clear_after_ms) < 0)
        return fail(path, v, err, errlen, "clear_after", "must be a number of seconds from 0 to 1000000");
    if ((v = sl_yaml_map_get(m, "flap_window")) && !sl_yaml_is_null(v) && seconds(v, &h->flap_window_ms) < 0)
        return fail(path, v, err, errlen, "flap_window", "must be a number of seconds from 0 to 1000000");
    if ((v = sl_yaml_map_get(m, "flap_limit")) && !sl_yaml_is_null(v)) {
        if (sl_yaml_int(v, &x) < 0 || x < 1 || x > 1000)
            return fail(path, v, err, errlen, "flap_limit", "must be a whole number of faults from 1 to 1000");
        h->flap_limit = (int32_t)x;
    }
    return 0;
}
