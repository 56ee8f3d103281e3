/*
 * sitecfg.c - the site's keys of the configuration (sitecfg.h): aliases,
 * retries' defaults, notifications.
 *
 * The file is read a second time, after config.c has read (and checked
 * the keys of) the rest, so that each file keeps its own keys; config.c
 * lists these keys among the known ones and ignores them. Aliases are
 * checked against what config.c read: each names a configured pool,
 * tenant or priority class, and none is a configured name of its kind or
 * a second alias (a name must resolve to one thing).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/sitecfg.h"
#include "quantity.h"
#include "yamldoc.h"

void ctl_sitecfg_init(ctl_site_cfg_t *s) {
    memset(s, 0, sizeof *s);
    s->retry_backoff_max_ms = CTL_DEFAULT_RETRY_BACKOFF_MAX_MS;
    s->notify_queue = CTL_DEFAULT_NOTIFY_QUEUE;
    s->notify_timeout_ms = CTL_DEFAULT_NOTIFY_TIMEOUT_MS;
}

void ctl_sitecfg_fini(ctl_site_cfg_t *s) {
    for (size_t i = 0; i < s->naliases; i++) {
        sl_free(s->aliases[i].alias);
        sl_free(s->aliases[i].name);
    }
    sl_free(s->aliases);
    sl_free(s->notify_command);
    sl_free(s->notify_webhook);
    ctl_volcfg_fini(&s->volumes);
    memset(s, 0, sizeof *s);
}

static const char *const kind_key[CTL_ALIAS_NKINDS] = {"pools[].aliases", "tenants[].accounts",
                                                      "priority_classes[].aliases",
                                                      "tenants[].namespaces", "gpu_resources"};

static bool same(ctl_alias_kind_t kind, const char *a, const char *b) {
    /* Kubernetes' names are exact, as pools are. */
    return kind == CTL_ALIAS_POOL || kind == CTL_ALIAS_NAMESPACE || kind == CTL_ALIAS_GPU_RESOURCE
               ? strcmp(a, b) == 0
               : strcasecmp(a, b) == 0;
}

const char *ctl_sitecfg_resolve(const ctl_site_cfg_t *s, ctl_alias_kind_t kind, const char *alias) {
    for (size_t i = 0; alias && i < s->naliases; i++)
        if (s->aliases[i].kind == kind && same(kind, s->aliases[i].alias, alias))
            return s->aliases[i].name;
    return NULL;
}

const char *ctl_sitecfg_aliases_of(const ctl_site_cfg_t *s, ctl_alias_kind_t kind,
                                   const char *name, char *buf, size_t len) {
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < s->naliases; i++)
        if (s->aliases[i].kind == kind && strcmp(s->aliases[i].name, name) == 0 && o < len)
            o += (size_t)snprintf(buf + o, len - o, "%s%s", o ? ", " : "", s->aliases[i].alias);
    return buf;
}

typedef ctl_cfg_rd_t rd_t; /* config.h: errors as PATH:LINE: message */

/* Whether name is a configured name of kind. */
static bool configured(const ctl_config_t *cfg, ctl_alias_kind_t kind, const char *name) {
    switch (kind) {
    case CTL_ALIAS_POOL:
        for (size_t i = 0; i < cfg->npools; i++)
            if (cfg->pools[i] && strcmp(cfg->pools[i], name) == 0)
                return true;
        return false;
    case CTL_ALIAS_TENANT:
    case CTL_ALIAS_NAMESPACE: /* a tenant's own name is always its namespace */
        for (size_t i = 0; i < cfg->ntenants; i++)
            if (strcasecmp(cfg->tenants[i].name, name) == 0)
                return true;
        return false;
    default:
        for (size_t i = 0; i < cfg->nprio_classes; i++)
            if (strcasecmp(cfg->prio_classes[i].name, name) == 0)
                return true;
        return false;
    }
}

/* The aliases (a list of names, or one) under key of entry, which stand
 * for name. */
static int load_list(rd_t *r, ctl_site_cfg_t *s, const ctl_config_t *cfg, ctl_alias_kind_t kind,
                     const sl_yaml_node_t *entry, const char *key, const char *name) {
    const sl_yaml_node_t *l = entry->kind == SL_YAML_MAP ? sl_yaml_map_get(entry, key) : NULL;
    if (l == NULL || sl_yaml_is_null(l))
        return 0;
    size_t k = l->kind == SL_YAML_SEQ ? l->n : 1;
    for (size_t i = 0; i < k; i++) {
        const sl_yaml_node_t *v = l->kind == SL_YAML_SEQ ? l->items[i] : l;
        if (v->kind != SL_YAML_SCALAR || v->value[0] == '\0' || strlen(v->value) >= SL_NAME_MAX)
            return ctl_cfg_fail(r, v, "%s: must be a list of names (1..63 characters)", kind_key[kind]);
        if (configured(cfg, kind, v->value))
            return ctl_cfg_fail(r, v, "%s: \"%s\" is itself a configured name; an alias must be another "
                        "name", kind_key[kind], v->value);
        const char *other = ctl_sitecfg_resolve(s, kind, v->value);
        if (other)
            return ctl_cfg_fail(r, v, "%s: \"%s\" is already an alias of \"%s\"", kind_key[kind],
                        v->value, other);
        s->aliases = sl_xrealloc(s->aliases, (s->naliases + 1) * sizeof *s->aliases);
        s->aliases[s->naliases++] =
            (ctl_alias_t){kind, sl_xstrdup(v->value), sl_xstrdup(name)};
    }
    return 0;
}

static int load_aliases(rd_t *r, ctl_site_cfg_t *s, const ctl_config_t *cfg,
                        const sl_yaml_node_t *root) {
    static const char *const sect[CTL_ALIAS_NKINDS] = {"pools", "tenants", "priority_classes",
                                                       "tenants", NULL};
    static const char *const key[CTL_ALIAS_NKINDS] = {"aliases", "accounts", "aliases",
                                                      "namespaces", NULL};
    for (int kind = 0; kind < CTL_ALIAS_NKINDS; kind++) {
        if (sect[kind] == NULL)
            continue; /* gpu_resources: load_gpu_resources */
        const sl_yaml_node_t *seq = sl_yaml_map_get(root, sect[kind]);
        if (seq == NULL || seq->kind != SL_YAML_SEQ)
            continue; /* config.c refused anything else */
        for (size_t i = 0; i < seq->n; i++) {
            const sl_yaml_node_t *e = seq->items[i];
            const sl_yaml_node_t *nm = e->kind == SL_YAML_MAP ? sl_yaml_map_get(e, "name") : NULL;
            if (nm == NULL || nm->kind != SL_YAML_SCALAR)
                continue;
            if (load_list(r, s, cfg, (ctl_alias_kind_t)kind, e, key[kind], nm->value) < 0)
                return -1;
        }
    }
    return 0;
}

/* gpu_resources: {"nvidia.com/a100": A100, ...}: each Kubernetes extended
 * resource a manifest may ask for GPUs by, and the GPU model it means
 * (as the nodes report it). */
static int load_gpu_resources(rd_t *r, ctl_site_cfg_t *s, const sl_yaml_node_t *m) {
    if (m->kind != SL_YAML_MAP)
        return ctl_cfg_fail(r, m, "gpu_resources: must be a mapping of resource names to GPU models");
    for (size_t i = 0; i < m->n; i++) {
        const sl_yaml_node_t *k = m->items[2 * i], *v = m->items[2 * i + 1];
        if (k->kind != SL_YAML_SCALAR || v->kind != SL_YAML_SCALAR || !strchr(k->value, '/') ||
            strlen(k->value) >= SL_NAME_MAX || !v->value[0] || strlen(v->value) >= SL_NAME_MAX)
            return ctl_cfg_fail(r, k, "gpu_resources: each key is a resource name with a \"/\" "
                        "(nvidia.com/a100) and each value a GPU model (1..63 characters)");
        if (!strcmp(k->value, "nvidia.com/gpu"))
            return ctl_cfg_fail(r, k, "gpu_resources: nvidia.com/gpu is any GPU; map other names");
        s->aliases = sl_xrealloc(s->aliases, (s->naliases + 1) * sizeof *s->aliases);
        s->aliases[s->naliases++] = (ctl_alias_t){CTL_ALIAS_GPU_RESOURCE, sl_xstrdup(k->value),
                                                  sl_xstrdup(v->value)};
    }
    return 0;
}

static int get_seconds_ms(rd_t *r, const sl_yaml_node_t *m, const char *key, const char *what,
                          int64_t min_ms, int64_t *out) {
    const sl_yaml_node_t *v = sl_yaml_map_get(m, key);
    if (v == NULL || sl_yaml_is_null(v))
        return 0;
    int64_t ms;
    char qerr[128];
    if (v->kind != SL_YAML_SCALAR || sl_qty_parse(v->value, SL_QTY_CPU, &ms, qerr, sizeof qerr) < 0)
        return ctl_cfg_fail(r, v, "%s: must be a number of seconds", what);
    if (ms < min_ms)
        return ctl_cfg_fail(r, v, "%s: must be at least %g seconds", what, (double)min_ms / 1000);
    *out = ms;
    return 0;
}

static int get_count(rd_t *r, const sl_yaml_node_t *m, const char *key, const char *what,
                     int64_t lo, int64_t hi, int64_t *out) {
    const sl_yaml_node_t *v = sl_yaml_map_get(m, key);
    if (v == NULL || sl_yaml_is_null(v))
        return 0;
    int64_t x;
    if (sl_yaml_int(v, &x) < 0 || x < lo || x > hi)
        return ctl_cfg_fail(r, v, "%s: must be a whole number from %lld to %lld", what, (long long)lo,
                    (long long)hi);
    *out = x;
    return 0;
}

static int get_text(rd_t *r, const sl_yaml_node_t *m, const char *key, const char *what,
                    char **out) {
    const sl_yaml_node_t *v = sl_yaml_map_get(m, key);
    if (v == NULL || sl_yaml_is_null(v))
        return 0;
    if (v->kind != SL_YAML_SCALAR || v->value[0] == '\0')
        return ctl_cfg_fail(r, v, "%s: must be a non-empty string", what);
    sl_free(*out);
    *out = sl_xstrdup(v->value);
    return 0;
}

static int load_scheduler(rd_t *r, ctl_site_cfg_t *s, const sl_yaml_node_t *m) {
    int64_t n = s->default_retries;
    if (get_count(r, m, "default_retries", "scheduler.default_retries", 0, CTL_MAX_RETRIES, &n) < 0 ||
        get_seconds_ms(r, m, "retry_backoff_max", "scheduler.retry_backoff_max", 0,
                       &s->retry_backoff_max_ms) < 0)
        return -1;
    s->default_retries = (int32_t)n;
    const sl_yaml_node_t *u = sl_yaml_map_get(m, "unknown_pools");
    if (u != NULL && !sl_yaml_is_null(u)) {
        if (u->kind != SL_YAML_SCALAR ||
            (strcmp(u->value, "reject") != 0 && strcmp(u->value, "accept") != 0))
            return ctl_cfg_fail(r, u, "scheduler.unknown_pools: must be reject or accept");
        s->accept_unknown_pools = strcmp(u->value, "accept") == 0;
    }
    return 0;
}

/* http://HOST[:PORT][/PATH], the only form the notifier speaks. */
static bool webhook_ok(const char *url) {
    if (strncmp(url, "http://", 7) != 0)
        return false;
    const char *h = url + 7;
    size_t hl = strcspn(h, ":/");
    if (hl == 0)
        return false;
    if (h[hl] == ':') {
        const char *p = h + hl + 1;
        char *end;
        long port = strtol(p, &end, 10);
        if (end == p || port < 1 || port > 65535 || (*end != '\0' && *end != '/'))
            return false;
    }
    return true;
}

static int load_notify(rd_t *r, ctl_site_cfg_t *s, const sl_yaml_node_t *m) {
    static const char *const keys[] = {"command", "webhook", "queue", "timeout", NULL};
    if (m->kind != SL_YAML_MAP)
        return ctl_cfg_fail(r, m, "notify: must be a mapping of command, webhook, queue, timeout");
    for (size_t i = 0; i < m->n; i++) {
        const char *k = m->items[2 * i]->value;
        bool ok = false;
        for (size_t j = 0; keys[j]; j++)
            ok = ok || strcmp(k, keys[j]) == 0;
        if (!ok)
            return ctl_cfg_fail(r, m->items[2 * i], "unknown key \"%s\" in notify (known: command, "
                        "webhook, queue, timeout)", k);
    }
    if (get_text(r, m, "command", "notify.command", &s->notify_command) < 0 ||
        get_text(r, m, "webhook", "notify.webhook", &s->notify_webhook) < 0 ||
        get_count(r, m, "queue", "notify.queue", 1, 1000000, &s->notify_queue) < 0 ||
        get_seconds_ms(r, m, "timeout", "notify.timeout", 100, &s->notify_timeout_ms) < 0)
        return -1;
    if (s->notify_webhook && !webhook_ok(s->notify_webhook))
        return ctl_cfg_fail(r, sl_yaml_map_get(m, "webhook"),
                    "notify.webhook: \"%s\" is not an http://HOST[:PORT]/PATH URL (https is not "
                    "spoken; put a local relay in front)", s->notify_webhook);
    return 0;
}

int ctl_sitecfg_load(ctl_site_cfg_t *s, const ctl_config_t *cfg, const char *path, char *err,
                     size_t errlen) {
    rd_t r = {path, err, errlen};
    sl_yaml_node_t *root = NULL;
    char yerr[256];
    if (sl_yaml_load_file(path, &root, yerr, sizeof yerr) < 0) {
        snprintf(err, errlen, "%s:%s", path, yerr);
        return -1;
    }
    if (root == NULL || root->kind != SL_YAML_MAP) {
        sl_yaml_free(root);
        return 0;
    }
    int rc = -1;
    const sl_yaml_node_t *sch = sl_yaml_map_get(root, "scheduler");
    const sl_yaml_node_t *no = sl_yaml_map_get(root, "notify");
    const sl_yaml_node_t *gr = sl_yaml_map_get(root, "gpu_resources");
    if (load_aliases(&r, s, cfg, root) < 0 ||
        (gr && !sl_yaml_is_null(gr) && load_gpu_resources(&r, s, gr) < 0) ||
        (sch && sch->kind == SL_YAML_MAP && load_scheduler(&r, s, sch) < 0) ||
        (no && !sl_yaml_is_null(no) && load_notify(&r, s, no) < 0) ||
        ctl_volcfg_load(&s->volumes, sl_yaml_map_get(root, "volumes"), path, err, errlen) < 0)
        goto out;
    rc = 0;
out:
    sl_yaml_free(root);
    return rc;
}
