/*
 * config.c - sluiced's YAML configuration (docs/config.md).
 *
 * The file is read into a yamldoc tree and walked against fixed key tables;
 * an unknown key, a wrong type or a bad value is an error that names the
 * file, line and key, and sluiced exits non-zero rather than guessing.
 */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arraydep.h"
#include "base/config.h"
#include "base/loop.h"
#include "proto_kill.h"
#include "log.h"
#include "quantity.h"
#include "yamldoc.h"

void ctl_config_init(ctl_config_t *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->node_timeout_ms = 10000;
    ctl_health_cfg_init(&cfg->health);
    cfg->heartbeat_s = 2;
    cfg->kill_grace_ms = 10000;
    cfg->hello_timeout_ms = CTL_DEFAULT_HELLO_TIMEOUT_MS;
    cfg->launch_timeout_ms = CTL_DEFAULT_LAUNCH_TIMEOUT_MS;
    cfg->job_retention_ms = CTL_DEFAULT_JOB_RETENTION_MS;
    cfg->max_finished_jobs = CTL_DEFAULT_MAX_FINISHED_JOBS;
    cfg->queue = sl_xstrdup("drf");
    cfg->placement = sl_xstrdup(sl_place_policy_default());
    cfg->backfill = sl_xstrdup("easy");
    cfg->default_time_limit_s = CTL_DEFAULT_TIME_LIMIT_S;
    cfg->default_user = sl_xstrdup("nobody");
    cfg->max_connections = CTL_DEFAULT_MAX_CONNECTIONS;
    cfg->max_connections_per_peer = CTL_DEFAULT_MAX_CONNECTIONS_PER_PEER;
    cfg->header_timeout_ms = CTL_DEFAULT_HEADER_TIMEOUT_MS;
    cfg->body_timeout_ms = CTL_DEFAULT_BODY_TIMEOUT_MS;
    cfg->idle_timeout_ms = CTL_DEFAULT_IDLE_TIMEOUT_MS;
    cfg->max_header_bytes = CTL_DEFAULT_MAX_HEADER_BYTES;
    cfg->reply_buffer_bytes = CTL_DEFAULT_REPLY_BUFFER_BYTES;
    cfg->max_pending_jobs = CTL_DEFAULT_MAX_PENDING_JOBS;
    cfg->max_array_size = CTL_DEFAULT_MAX_ARRAY_SIZE;
    cfg->secrets_max_per_tenant = 100;
    cfg->secrets_max_bytes = 256 * 1024;
    cfg->oom_score_adj = CTL_DEFAULT_OOM_SCORE_ADJ;
    cfg->preempt_priority = true;
    cfg->preempt_grow = true;
    cfg->preempt_max_per_minute = CTL_DEFAULT_PREEMPT_MAX_PER_MINUTE;
    cfg->preempt_protect_after = CTL_DEFAULT_PREEMPT_PROTECT_AFTER;
    cfg->preempt_protect_ms = CTL_DEFAULT_PREEMPT_PROTECT_MS;
}

void ctl_config_fini(ctl_config_t *cfg) {
    sl_free(cfg->listen);
    sl_free(cfg->agent_listen);
    sl_free(cfg->state);
    sl_free(cfg->admin_token);
    sl_free(cfg->cluster_token);
    sl_free(cfg->monitoring_token);
    sl_free(cfg->queue);
    sl_free(cfg->placement);
    sl_free(cfg->backfill);
    sl_free(cfg->log_level);
    sl_free(cfg->default_user);
    sl_free(cfg->tls_cert);
    sl_free(cfg->tls_key);
    sl_free(cfg->tls_ca);
    sl_free(cfg->secrets_key_file);
    sl_free(cfg->agent_client_cert);
    for (size_t i = 0; i < cfg->ntenants; i++) {
        sl_free(cfg->tenants[i].name);
        sl_free(cfg->tenants[i].token);
        sl_free(cfg->tenants[i].user);
        sl_free(cfg->tenants[i].group);
    }
    sl_free(cfg->tenants);
    for (size_t i = 0; i < cfg->npools; i++) {
        sl_free(cfg->pools[i]);
        for (size_t k = 0; cfg->pool_cfg && k < cfg->pool_cfg[i].ntenants; k++)
            sl_free(cfg->pool_cfg[i].tenants[k]);
        if (cfg->pool_cfg)
            sl_free(cfg->pool_cfg[i].tenants);
    }
    sl_free(cfg->pools);
    sl_free(cfg->pool_cfg);
    for (size_t i = 0; i < cfg->nrevoked; i++)
        sl_free(cfg->revoked_nodes[i]);
    sl_free(cfg->revoked_nodes);
    for (size_t i = 0; i < cfg->ncontainer_mounts; i++)
        sl_free(cfg->container_mounts[i]);
    sl_free(cfg->container_mounts);
    sl_free(cfg->oom_rules);
    for (size_t i = 0; i < cfg->nprio_classes; i++) {
        sl_free(cfg->prio_classes[i].name);
        for (size_t k = 0; k < cfg->prio_classes[i].ntenants; k++)
            sl_free(cfg->prio_classes[i].tenants[k]);
        sl_free(cfg->prio_classes[i].tenants);
    }
    sl_free(cfg->prio_classes);
    memset(cfg, 0, sizeof *cfg);
}

typedef ctl_cfg_rd_t rd_t;

static int fail(rd_t *r, const sl_yaml_node_t *n, const char *fmt, const char *a, const char *b) {
    char msg[256];
    snprintf(msg, sizeof msg, fmt, a, b);
    return ctl_cfg_fail(r, n, "%s", msg);
}

static int check_keys(rd_t *r, const sl_yaml_node_t *map, const char *where,
                      const char *const *known) {
    if (map->kind != SL_YAML_MAP)
        return fail(r, map, "%s must be a mapping%s", where, "");
    for (size_t i = 0; i < map->n; i++) {
        const char *k = map->items[2 * i]->value;
        bool ok = false;
        for (size_t j = 0; known[j]; j++)
            ok = ok || strcmp(k, known[j]) == 0;
        if (!ok) {
            char list[256] = "";
            for (size_t j = 0; known[j]; j++) {
                strncat(list, j ? ", " : "", sizeof list - strlen(list) - 1);
                strncat(list, known[j], sizeof list - strlen(list) - 1);
            }
            char what[160];
            snprintf(what, sizeof what, "unknown key \"%s\" in %s", k, where);
            return fail(r, map->items[2 * i], "%s (known: %s)", what, list);
        }
    }
    return 0;
}

static int get_str(rd_t *r, const sl_yaml_node_t *map, const char *key, char **out) {
    const sl_yaml_node_t *v = sl_yaml_map_get(map, key);
    if (v == NULL || sl_yaml_is_null(v))
        return 0;
    if (v->kind != SL_YAML_SCALAR)
        return fail(r, v, "%s: must be a string, not a %s", key, sl_yaml_kind_name(v->kind));
    sl_free(*out);
    *out = sl_xstrdup(v->value);
    return 0;
}

/* Seconds as an integer or decimal ("0.5"), returned in milliseconds. */
static int get_ms(rd_t *r, const sl_yaml_node_t *map, const char *key, int64_t min_ms,
                  int64_t *out) {
    const sl_yaml_node_t *v = sl_yaml_map_get(map, key);
    if (v == NULL || sl_yaml_is_null(v))
        return 0;
    int64_t ms;
    char qerr[128];
    /* Seconds parse exactly like CPUs: "2" -> 2000 milli, "0.5" -> 500. */
    if (v->kind != SL_YAML_SCALAR || sl_qty_parse(v->value, SL_QTY_CPU, &ms, qerr, sizeof qerr) < 0)
        return fail(r, v, "%s: must be a number of seconds%s", key, "");
    if (ms < min_ms) {
        char least[48];
        snprintf(least, sizeof least, " (at least %g seconds)", (double)min_ms / 1000);
        return fail(r, v, "%s: too small%s", key, least);
    }
    *out = ms;
    return 0;
}

static int get_int(rd_t *r, const sl_yaml_node_t *map, const char *key, int64_t lo, int64_t hi,
                   int64_t *out) {
    const sl_yaml_node_t *v = sl_yaml_map_get(map, key);
    if (v == NULL || sl_yaml_is_null(v))
        return 0;
    int64_t x;
    if (sl_yaml_int(v, &x) < 0 || x < lo || x > hi) {
        char range[64];
        snprintf(range, sizeof range, " from %lld to %lld", (long long)lo, (long long)hi);
        return fail(r, v, "%s: must be a whole number%s", key, range);
    }
    *out = x;
    return 0;
}

static int get_qty(rd_t *r, const sl_yaml_node_t *map, const char *key, sl_qty_kind_t kind,
                   int64_t *out) {
    const sl_yaml_node_t *v = sl_yaml_map_get(map, key);
    if (v == NULL || sl_yaml_is_null(v))
        return 0;
    char qerr[160];
    if (v->kind != SL_YAML_SCALAR || sl_qty_parse(v->value, kind, out, qerr, sizeof qerr) < 0)
        return fail(r, v, "%s: %s", key, v->kind == SL_YAML_SCALAR ? qerr : "must be a quantity");
    return 0;
}

/*
 * Reads a Unix user or group name (key of map) into *out. Names, not ids:
 * each node's agent resolves them (getpwnam, getgrnam), so a cluster whose
 * nodes number users differently still runs a tenant as the same account,
 * and a name missing on a node fails the task with a reason that says so
 * instead of running it under an id nobody owns. The characters are the
 * portable ones useradd accepts; root needs allow_root (read before).
 */
static int get_unix_name(rd_t *r, const ctl_config_t *cfg, const sl_yaml_node_t *map,
                         const char *key, const char *where, char **out) {
    if (get_str(r, map, key, out) < 0)
        return -1;
    const char *s = *out;
    if (s == NULL)
        return 0;
    const sl_yaml_node_t *v = sl_yaml_map_get(map, key);
    size_t n = strlen(s);
    bool ok = n > 0 && n <= 32 && s[0] != '-';
    for (size_t i = 0; ok && i < n; i++)
        ok = (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
             (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-' || s[i] == '.';
    if (!ok)
        return fail(r, v, "%s: \"%s\" is not a Unix name (1..32 letters, digits, '_', '-', '.')",
                    where, s);
    if (strcmp(s, "root") == 0 && !cfg->allow_root)
        return fail(r, v, "%s: %s needs allow_root: true (tasks run as root only where the config says so)",
                    where, "root");
    return 0;
}

static int load_tenants(rd_t *r, ctl_config_t *cfg, const sl_yaml_node_t *seq) {
    static const char *const keys[] = {"name", "weight", "token", "quota", "user", "group",
                                       "max_pending_jobs",
                                       "accounts", "namespaces", /* sitecfg.c */
                                       NULL};
    static const char *const qkeys[] = {"cpus", "memory", "gpus", NULL};
    if (seq->kind != SL_YAML_SEQ)
        return fail(r, seq, "tenants must be a sequence of mappings%s%s", "", "");
    cfg->tenants = sl_xcalloc(seq->n ? seq->n : 1, sizeof *cfg->tenants);
    for (size_t i = 0; i < seq->n; i++) {
        const sl_yaml_node_t *t = seq->items[i];
        ctl_tenant_cfg_t *tc = &cfg->tenants[cfg->ntenants++];
        tc->weight = 1;
        if (check_keys(r, t, "tenants[]", keys) < 0 || get_str(r, t, "name", &tc->name) < 0 ||
            get_str(r, t, "token", &tc->token) < 0)
            return -1;
        if (tc->name == NULL || tc->name[0] == '\0' || strlen(tc->name) >= SL_NAME_MAX)
            return fail(r, t, "tenants[]: name is required (1..63 characters)%s%s", "", "");
        if (get_unix_name(r, cfg, t, "user", "tenants[].user", &tc->user) < 0 ||
            get_unix_name(r, cfg, t, "group", "tenants[].group", &tc->group) < 0)
            return -1;
        int64_t w = 1;
        if (get_int(r, t, "weight", 1, 1000000, &w) < 0)
            return -1;
        tc->weight = (int32_t)w;
        if (get_int(r, t, "max_pending_jobs", 1, 100000000, &tc->max_pending_jobs) < 0)
            return -1;
        for (size_t j = 0; j + 1 < cfg->ntenants; j++) {
            if (strcmp(cfg->tenants[j].name, tc->name) == 0)
                return fail(r, t, "tenants: duplicate name \"%s\"%s", tc->name, "");
            if (tc->token && cfg->tenants[j].token && strcmp(cfg->tenants[j].token, tc->token) == 0)
                return fail(r, t, "tenants: tenant \"%s\" reuses the token of \"%s\"", tc->name,
                            cfg->tenants[j].name);
        }
        const sl_yaml_node_t *q = sl_yaml_map_get(t, "quota");
        if (q != NULL && !sl_yaml_is_null(q)) {
            if (check_keys(r, q, "quota", qkeys) < 0 ||
                get_qty(r, q, "cpus", SL_QTY_CPU, &tc->quota.cpu_milli) < 0 ||
                get_qty(r, q, "memory", SL_QTY_MEM, &tc->quota.mem_bytes) < 0 ||
                get_qty(r, q, "gpus", SL_QTY_GPU, &tc->quota.gpu_milli) < 0)
                return -1;
            tc->has_quota = true;
        }
    }
    return 0;
}

/* The `tenants` of mapping m (a list of tenant names, or one) into *out
 * and *n, which the caller frees whatever the outcome; what names the key
 * in errors ("pools[]"). */
static int load_tenant_list(rd_t *r, const sl_yaml_node_t *m, const char *what, char ***out,
                            size_t *n) {
    const sl_yaml_node_t *t = sl_yaml_map_get(m, "tenants");
    if (t == NULL || sl_yaml_is_null(t))
        return 0;
    size_t k = t->kind == SL_YAML_SEQ ? t->n : 1;
    *out = sl_xcalloc(k ? k : 1, sizeof **out);
    for (size_t i = 0; i < k; i++) {
        const sl_yaml_node_t *v = t->kind == SL_YAML_SEQ ? t->items[i] : t;
        if (v->kind != SL_YAML_SCALAR || v->value[0] == '\0')
            return fail(r, v, "%s.tenants: must be a list of tenant names%s", what, "");
        (*out)[(*n)++] = sl_xstrdup(v->value);
    }
    return 0;
}

/* A pool's `dedicated`, `default_time_limit` and `tenants`. */
static int load_pool_cfg(rd_t *r, const sl_yaml_node_t *p, struct ctl_pool_cfg *pc) {
    const sl_yaml_node_t *d = sl_yaml_map_get(p, "dedicated");
    if (d != NULL && !sl_yaml_is_null(d) && sl_yaml_bool(d, &pc->dedicated) < 0)
        return fail(r, d, "pools[].dedicated: must be true or false%s%s", "", "");
    if (get_ms(r, p, "default_time_limit", 1000, &pc->default_time_limit_ms) < 0 ||
        get_qty(r, p, "default_memory_per_gpu", SL_QTY_MEM, &pc->default_mem_per_gpu) < 0 ||
        get_qty(r, p, "default_memory_per_cpu", SL_QTY_MEM, &pc->default_mem_per_cpu) < 0)
        return -1;
    const sl_yaml_node_t *dn = sl_yaml_map_get(p, "default_memory_per_node");
    if (dn != NULL && !sl_yaml_is_null(dn)) {
        if (dn->kind != SL_YAML_SCALAR || strcmp(dn->value, "node") != 0)
            return fail(r, dn, "pools[].default_memory_per_node: must be \"node\" (the whole "
                        "node's memory, as sbatch --mem=0)%s%s", "", "");
        pc->default_mem_node = true;
    }
    return load_tenant_list(r, p, "pools[]", &pc->tenants, &pc->ntenants);
}

static int load_pools(rd_t *r, ctl_config_t *cfg, const sl_yaml_node_t *seq) {
    static const char *const keys[] = {"name", "description", "dedicated", "tenants",
                                       "default_time_limit", "aliases" /* sitecfg.c */,
                                       "default_memory_per_gpu", "default_memory_per_cpu",
                                       "default_memory_per_node", NULL};
    if (seq->kind != SL_YAML_SEQ)
        return fail(r, seq, "pools must be a sequence%s%s", "", "");
    cfg->pools = sl_xcalloc(seq->n ? seq->n : 1, sizeof *cfg->pools);
    cfg->pool_cfg = sl_xcalloc(seq->n ? seq->n : 1, sizeof *cfg->pool_cfg);
    for (size_t i = 0; i < seq->n; i++) {
        const sl_yaml_node_t *p = seq->items[i];
        char *name = NULL;
        if (p->kind == SL_YAML_SCALAR) {
            name = sl_xstrdup(p->value);
        } else {
            char *desc = NULL;
            if (check_keys(r, p, "pools[]", keys) < 0 || get_str(r, p, "name", &name) < 0 ||
                get_str(r, p, "description", &desc) < 0) {
                sl_free(name);
                sl_free(desc);
                return -1;
            }
            sl_free(desc);
            if (load_pool_cfg(r, p, &cfg->pool_cfg[cfg->npools]) < 0) {
                sl_free(name);
                cfg->npools++; /* so that its tenants are freed */
                cfg->pools[cfg->npools - 1] = NULL;
                return -1;
            }
        }
        if (name == NULL || name[0] == '\0' || strlen(name) >= SL_NAME_MAX) {
            sl_free(name);
            return fail(r, p, "pools[]: name is required (1..63 characters)%s%s", "", "");
        }
        cfg->pools[cfg->npools++] = name;
    }
    return 0;
}

/* The limits: section (docs/config.md, "Limits"). */
static int load_limits(rd_t *r, ctl_config_t *cfg, const sl_yaml_node_t *l) {
    static const char *const keys[] = {"max_connections", "max_connections_per_peer",
                                       "header_timeout", "body_timeout", "idle_timeout",
                                       "max_header_bytes",
                                       "reply_buffer", "max_pending_jobs",
                                       "max_array_size", "max_agent_connections", NULL};
    if (l == NULL || sl_yaml_is_null(l))
        return 0;
    if (check_keys(r, l, "limits", keys) < 0 ||
        get_int(r, l, "max_connections", 1, 1000000, &cfg->max_connections) < 0 ||
        get_int(r, l, "max_connections_per_peer", 1, 1000000, &cfg->max_connections_per_peer) < 0 ||
        get_ms(r, l, "header_timeout", 100, &cfg->header_timeout_ms) < 0 ||
        get_ms(r, l, "body_timeout", 100, &cfg->body_timeout_ms) < 0 ||
        get_ms(r, l, "idle_timeout", 100, &cfg->idle_timeout_ms) < 0 ||
        get_int(r, l, "max_header_bytes", 1024, 1048576, &cfg->max_header_bytes) < 0 ||
        get_qty(r, l, "reply_buffer", SL_QTY_MEM, &cfg->reply_buffer_bytes) < 0 ||
        get_int(r, l, "max_pending_jobs", 1, 100000000, &cfg->max_pending_jobs) < 0 ||
        get_int(r, l, "max_array_size", 1, SL_ARRAY_SIZE_CEILING, &cfg->max_array_size) < 0 ||
        get_int(r, l, "max_agent_connections", 1, 1000000, &cfg->max_agent_connections) < 0)
        return -1;
    if (cfg->reply_buffer_bytes < (1 << 20))
        return fail(r, sl_yaml_map_get(l, "reply_buffer"), "limits.reply_buffer: at least 1Mi%s%s", "",
                    "");
    return 0;
}

/* revoked_nodes: a sequence of node names whose hellos are refused. */
static int load_revoked(rd_t *r, ctl_config_t *cfg, const sl_yaml_node_t *seq) {
    if (seq->kind != SL_YAML_SEQ)
        return fail(r, seq, "revoked_nodes must be a sequence of node names%s%s", "", "");
    cfg->revoked_nodes = sl_xcalloc(seq->n ? seq->n : 1, sizeof *cfg->revoked_nodes);
    for (size_t i = 0; i < seq->n; i++) {
        const sl_yaml_node_t *v = seq->items[i];
        if (v->kind != SL_YAML_SCALAR || v->value[0] == '\0' || strlen(v->value) >= SL_NAME_MAX)
            return fail(r, v, "revoked_nodes[]: must be a node name (1..63 characters)%s%s", "", "");
        cfg->revoked_nodes[cfg->nrevoked++] = sl_xstrdup(v->value);
    }
    return 0;
}

/* container_mounts: a sequence of absolute host paths, the prefixes an
 * image job's mounts may come from. */
static int load_container_mounts(rd_t *r, ctl_config_t *cfg, const sl_yaml_node_t *seq) {
    if (seq->kind != SL_YAML_SEQ)
        return fail(r, seq, "container_mounts must be a sequence of absolute paths%s%s", "", "");
    cfg->container_mounts = sl_xcalloc(seq->n ? seq->n : 1, sizeof *cfg->container_mounts);
    for (size_t i = 0; i < seq->n; i++) {
        const sl_yaml_node_t *v = seq->items[i];
        if (v->kind != SL_YAML_SCALAR || v->value[0] != '/' || strlen(v->value) >= 4096 ||
            strstr(v->value, "/.."))
            return fail(r, v, "container_mounts[]: must be an absolute path without ..%s%s", "",
                        "");
        cfg->container_mounts[cfg->ncontainer_mounts++] = sl_xstrdup(v->value);
    }
    return 0;
}

/* An oom_score_adj value (key of map, named what in errors) into *out:
 * CTL_OOM_SCORE_ADJ_MIN..MAX, with the reason when it is below. */
static int get_oom_adj(rd_t *r, const sl_yaml_node_t *map, const char *key, const char *what,
                       int32_t *out) {
    const sl_yaml_node_t *v = sl_yaml_map_get(map, key);
    if (v == NULL || sl_yaml_is_null(v))
        return 0;
    int64_t x;
    if (sl_yaml_int(v, &x) < 0 || x > CTL_OOM_SCORE_ADJ_MAX || x < -1000)
        return fail(r, v, "%s: must be a whole number from -899 to 1000 (a task's oom_score_adj)%s",
                    what, "");
    if (x == -1000)
        return fail(r, v, "%s: -1000 would make the task unkillable by the OOM killer, which then "
                    "kills everything else on the node first; use -899 to 1000%s", what, "");
    if (x < CTL_OOM_SCORE_ADJ_MIN)
        return fail(r, v, "%s: must be above -900, the agent's own oom_score_adj, so that the "
                    "kernel kills a task before the agent that reports it; use -899 to 1000%s",
                    what, "");
    *out = (int32_t)x;
    return 0;
}

/* oom_score_adj_by_priority: a sequence of {min_priority, value}, sorted
 * here by min_priority, highest first (the first rule a job reaches wins). */
static int load_oom_rules(rd_t *r, ctl_config_t *cfg, const sl_yaml_node_t *seq) {
    static const char *const keys[] = {"min_priority", "value", NULL};
    const char *what = "oom_score_adj_by_priority";
    if (seq->kind != SL_YAML_SEQ)
        return fail(r, seq, "%s must be a sequence of {min_priority, value} mappings%s", what, "");
    sl_free(cfg->oom_rules);
    cfg->noom_rules = 0;
    cfg->oom_rules = sl_xcalloc(seq->n ? seq->n : 1, sizeof *cfg->oom_rules);
    for (size_t i = 0; i < seq->n; i++) {
        const sl_yaml_node_t *e = seq->items[i];
        int64_t minp = INT64_MIN;
        int32_t val = INT32_MIN;
        if (check_keys(r, e, "oom_score_adj_by_priority[]", keys) < 0 ||
            get_int(r, e, "min_priority", INT32_MIN, INT32_MAX, &minp) < 0 ||
            get_oom_adj(r, e, "value", "oom_score_adj_by_priority[].value", &val) < 0)
            return -1;
        if (minp == INT64_MIN || val == INT32_MIN)
            return fail(r, e, "%s[]: min_priority and value are both required%s", what, "");
        size_t k = cfg->noom_rules++;
        for (; k > 0 && cfg->oom_rules[k - 1].min_priority < minp; k--)
            cfg->oom_rules[k] = cfg->oom_rules[k - 1];
        if (k > 0 && cfg->oom_rules[k - 1].min_priority == minp) {
            char p[24];
            snprintf(p, sizeof p, "%lld", (long long)minp);
            return fail(r, e, "%s: min_priority %s is given twice", what, p);
        }
        cfg->oom_rules[k] = (ctl_oom_rule_t){(int32_t)minp, val};
    }
    return 0;
}

/* priority_classes: a sequence of {name, value, may_preempt, preemptible,
 * signal, grace, tenants}; name and value required, names unique. */
static int load_prio_classes(rd_t *r, ctl_config_t *cfg, const sl_yaml_node_t *seq) {
    static const char *const keys[] = {"name", "value", "may_preempt", "preemptible", "signal",
                                       "grace", "tenants", "aliases" /* sitecfg.c */, NULL};
    const char *what = "priority_classes";
    if (seq->kind != SL_YAML_SEQ)
        return fail(r, seq, "%s must be a sequence of {name, value, may_preempt, signal, grace}%s",
                    what, " mappings");
    cfg->prio_classes = sl_xcalloc(seq->n ? seq->n : 1, sizeof *cfg->prio_classes);
    for (size_t i = 0; i < seq->n; i++) {
        const sl_yaml_node_t *e = seq->items[i];
        ctl_prio_class_t *pc = &cfg->prio_classes[cfg->nprio_classes++];
        *pc = (ctl_prio_class_t){.signal = SIGTERM, .grace_ms = -1, .preemptible = true};
        int64_t value = INT64_MIN;
        char *sig = NULL;
        if (check_keys(r, e, "priority_classes[]", keys) < 0 || get_str(r, e, "name", &pc->name) < 0 ||
            get_int(r, e, "value", -1000000, 1000000, &value) < 0 ||
            get_ms(r, e, "grace", 0, &pc->grace_ms) < 0 || get_str(r, e, "signal", &sig) < 0)
            return -1;
        if (pc->name == NULL || pc->name[0] == '\0' || strlen(pc->name) >= SL_NAME_MAX ||
            value == INT64_MIN) {
            sl_free(sig);
            return fail(r, e, "%s[]: name (1..63 characters) and value are both required%s", what, "");
        }
        pc->value = (int32_t)value;
        int rc = sig ? sl_proto_signal_parse(sig, &pc->signal) : 0;
        sl_free(sig);
        if (rc < 0)
            return fail(r, sl_yaml_map_get(e, "signal"), "priority_classes[].signal: must be one of %s%s",
                        sl_proto_signal_names(), "");
        const sl_yaml_node_t *mp = sl_yaml_map_get(e, "may_preempt");
        if (mp != NULL && !sl_yaml_is_null(mp) && sl_yaml_bool(mp, &pc->may_preempt) < 0)
            return fail(r, mp, "priority_classes[].may_preempt: must be true or false%s%s", "", "");
        const sl_yaml_node_t *pe = sl_yaml_map_get(e, "preemptible");
        if (pe != NULL && !sl_yaml_is_null(pe) && sl_yaml_bool(pe, &pc->preemptible) < 0)
            return fail(r, pe, "priority_classes[].preemptible: must be true or false%s%s", "", "");
        if (load_tenant_list(r, e, "priority_classes[]", &pc->tenants, &pc->ntenants) < 0)
            return -1;
        for (size_t k = 0; k + 1 < cfg->nprio_classes; k++)
            if (strcmp(cfg->prio_classes[k].name, pc->name) == 0)
                return fail(r, e, "%s: duplicate name \"%s\"", what, pc->name);
    }
    return 0;
}

/* preemption: {priority, reclaim, grow, default_may_preempt,
 * max_per_minute, protect_after, protect}. */
static int load_preemption(rd_t *r, ctl_config_t *cfg, const sl_yaml_node_t *m) {
    static const char *const keys[] = {"priority", "reclaim", "grow", "default_may_preempt",
                                       "max_per_minute", "protect_after", "protect", NULL};
    static const char *const flags[] = {"priority", "reclaim", "grow", "default_may_preempt"};
    bool *dst[] = {&cfg->preempt_priority, &cfg->preempt_reclaim, &cfg->preempt_grow,
                   &cfg->default_may_preempt};
    if (check_keys(r, m, "preemption", keys) < 0)
        return -1;
    for (size_t i = 0; i < 4; i++) {
        const sl_yaml_node_t *v = sl_yaml_map_get(m, flags[i]);
        if (v != NULL && !sl_yaml_is_null(v) && sl_yaml_bool(v, dst[i]) < 0)
            return fail(r, v, "preemption.%s: must be true or false%s", flags[i], "");
    }
    return get_int(r, m, "max_per_minute", 0, 1000000, &cfg->preempt_max_per_minute) < 0 ||
                   get_int(r, m, "protect_after", 0, 1000000, &cfg->preempt_protect_after) < 0 ||
                   get_ms(r, m, "protect", 0, &cfg->preempt_protect_ms) < 0
               ? -1
               : 0;
}

const ctl_prio_class_t *ctl_config_prio_class(const ctl_config_t *cfg, const char *name) {
    for (size_t i = 0; name && i < cfg->nprio_classes; i++)
        if (strcmp(cfg->prio_classes[i].name, name) == 0)
            return &cfg->prio_classes[i];
    return NULL;
}

/* Whether tenant is one of the n names; if not, "WHAT is for tenant(s) a, b;
 * tenant \"c\" may not use it" in err. */
static int tenant_listed(char *const *names, size_t n, const char *what, const char *tenant,
                         char *err, size_t errlen) {
    size_t o = (size_t)snprintf(err, errlen, "%s tenant%s ", what, n > 1 ? "s" : "");
    for (size_t i = 0; i < n; i++) {
        if (tenant && strcmp(names[i], tenant) == 0)
            return 0;
        if (o < errlen)
            o += (size_t)snprintf(err + o, errlen - o, "%s%s", i ? ", " : "", names[i]);
    }
    if (o < errlen)
        snprintf(err + o, errlen - o, "; tenant \"%s\" may not use it", tenant ? tenant : "");
    return -1;
}

int ctl_prio_class_tenant_ok(const ctl_prio_class_t *pc, const char *tenant, char *err,
                             size_t errlen) {
    char what[SL_NAME_MAX + 32];
    if (pc->ntenants > 0) {
        snprintf(what, sizeof what, "priority class \"%s\" is for", pc->name);
        return tenant_listed(pc->tenants, pc->ntenants, what, tenant, err, errlen);
    }
    if (!pc->may_preempt)
        return 0;
    /* A class whose jobs preempt others is a privilege: granted by name. */
    snprintf(err, errlen, "priority class \"%s\" may preempt other jobs and lists no tenants that "
             "may use it (priority_classes[].tenants); tenant \"%s\" may not use it", pc->name,
             tenant ? tenant : "");
    return -1;
}

int64_t ctl_config_prio_grace_ms(const ctl_config_t *cfg, const ctl_prio_class_t *pc) {
    return pc && pc->grace_ms >= 0 ? pc->grace_ms : cfg->kill_grace_ms;
}

int32_t ctl_config_oom_score_adj(const ctl_config_t *cfg, int32_t priority) {
    for (size_t i = 0; i < cfg->noom_rules; i++)
        if (priority >= cfg->oom_rules[i].min_priority)
            return cfg->oom_rules[i].value;
    return cfg->oom_score_adj;
}

int ctl_config_load(ctl_config_t *cfg, const char *path, char *err, size_t errlen) {
    static const char *const top[] = {"listen", "agent_listen", "state", "admin_token",
                                      "cluster_token", "monitoring_token",
                                      "node_timeout", "heartbeat", "kill_grace",
                                      "scheduler", "tenants", "pools", "log_level",
                                      "job_retention", "max_finished_jobs",
                                      "init", /* create a missing or empty state database */
                                      "default_user", "allow_root",
                                      "limits",
                                      "tls_cert", "tls_key", "tls_ca", "agent_client_cert",
                                      "revoked_nodes", "hello_timeout", "launch_timeout",
                                      "oom_score_adj", "oom_score_adj_by_priority",
                                      "priority_classes", "preemption", "health",
                                      "container_mounts",
                                      "notify", "gpu_resources", /* sitecfg.c */
                                      "volumes", /* volcfg.c, through sitecfg.c */
                                      "secrets",
                                      NULL};
    static const char *const sch[] = {"queue", "placement", "backfill", "default_time_limit",
                                      "max_starts_per_cycle", "default_memory_per_gpu",
                                      "default_memory_per_cpu",
                                      /* sitecfg.c */
                                      "default_retries", "retry_backoff_max", "unknown_pools",
                                      NULL};
    rd_t r = {path, err, errlen};
    sl_yaml_node_t *root = NULL;
    char yerr[256];
    int rc = -1;
    if (sl_yaml_load_file(path, &root, yerr, sizeof yerr) < 0) {
        if (strncmp(yerr, path, strlen(path)) == 0)
            snprintf(err, errlen, "%s", yerr);
        else
            snprintf(err, errlen, "%s:%s", path, yerr);
        return -1;
    }
    if (root == NULL)
        return 0; /* an empty file: all defaults */
    if (check_keys(&r, root, "the top level", top) < 0)
        goto out;
    int64_t v;
    if (get_str(&r, root, "listen", &cfg->listen) < 0 ||
        get_str(&r, root, "agent_listen", &cfg->agent_listen) < 0 ||
        get_str(&r, root, "state", &cfg->state) < 0 ||
        get_str(&r, root, "admin_token", &cfg->admin_token) < 0 ||
        get_str(&r, root, "cluster_token", &cfg->cluster_token) < 0 ||
        get_str(&r, root, "monitoring_token", &cfg->monitoring_token) < 0 ||
        get_str(&r, root, "log_level", &cfg->log_level) < 0 ||
        get_str(&r, root, "tls_cert", &cfg->tls_cert) < 0 ||
        get_str(&r, root, "tls_key", &cfg->tls_key) < 0 ||
        get_str(&r, root, "tls_ca", &cfg->tls_ca) < 0 ||
        get_str(&r, root, "agent_client_cert", &cfg->agent_client_cert) < 0 ||
        get_ms(&r, root, "node_timeout", 100, &cfg->node_timeout_ms) < 0 ||
        get_ms(&r, root, "kill_grace", 0, &cfg->kill_grace_ms) < 0 ||
        get_ms(&r, root, "hello_timeout", 100, &cfg->hello_timeout_ms) < 0 ||
        get_ms(&r, root, "launch_timeout", 0, &cfg->launch_timeout_ms) < 0 ||
        get_ms(&r, root, "job_retention", 0, &cfg->job_retention_ms) < 0 ||
        get_int(&r, root, "max_finished_jobs", 0, 100000000, &cfg->max_finished_jobs) < 0)
        goto out;
    const sl_yaml_node_t *ar = sl_yaml_map_get(root, "allow_root");
    if (ar != NULL && !sl_yaml_is_null(ar) && sl_yaml_bool(ar, &cfg->allow_root) < 0) {
        fail(&r, ar, "allow_root: must be true or false%s%s", "", "");
        goto out;
    }
    if (get_unix_name(&r, cfg, root, "default_user", "default_user", &cfg->default_user) < 0)
        goto out;
    v = cfg->heartbeat_s;
    if (get_int(&r, root, "heartbeat", 1, 3600, &v) < 0)
        goto out;
    cfg->heartbeat_s = (int32_t)v;
    if (cfg->log_level) {
        sl_log_level_t lv;
        if (sl_log_parse_level(cfg->log_level, &lv) < 0) {
            fail(&r, sl_yaml_map_get(root, "log_level"),
                 "log_level: \"%s\" is not one of error, warn, info, debug%s", cfg->log_level, "");
            goto out;
        }
    }
    if (cfg->agent_client_cert && strcmp(cfg->agent_client_cert, "none") != 0 &&
        strcmp(cfg->agent_client_cert, "optional") != 0 &&
        strcmp(cfg->agent_client_cert, "require") != 0) {
        fail(&r, sl_yaml_map_get(root, "agent_client_cert"),
             "agent_client_cert: \"%s\" is not one of none, optional, require%s",
             cfg->agent_client_cert, "");
        goto out;
    }
    const sl_yaml_node_t *s = sl_yaml_map_get(root, "scheduler");
    if (s != NULL && !sl_yaml_is_null(s)) {
        if (check_keys(&r, s, "scheduler", sch) < 0 || get_str(&r, s, "queue", &cfg->queue) < 0 ||
            get_str(&r, s, "placement", &cfg->placement) < 0 ||
            get_str(&r, s, "backfill", &cfg->backfill) < 0)
            goto out;
        int64_t ms = cfg->default_time_limit_s * 1000;
        if (get_ms(&r, s, "default_time_limit", 0, &ms) < 0)
            goto out;
        cfg->default_time_limit_s = ms / 1000;
        if (get_qty(&r, s, "default_memory_per_gpu", SL_QTY_MEM, &cfg->default_mem_per_gpu) < 0 ||
            get_qty(&r, s, "default_memory_per_cpu", SL_QTY_MEM, &cfg->default_mem_per_cpu) < 0)
            goto out;
        v = cfg->max_starts_per_cycle;
        if (get_int(&r, s, "max_starts_per_cycle", 0, 1000000, &v) < 0)
            goto out;
        cfg->max_starts_per_cycle = (int32_t)v;
    }
    /* init: true lets sluiced create a missing or empty state database
     * (as --init does); without it such a file is refused (store/sqlite.c). */
    const sl_yaml_node_t *ini = sl_yaml_map_get(root, "init");
    if (ini != NULL && !sl_yaml_is_null(ini) && sl_yaml_bool(ini, &cfg->init) < 0) {
        fail(&r, ini, "init: must be true or false%s%s", "", "");
        goto out;
    }
    if (load_limits(&r, cfg, sl_yaml_map_get(root, "limits")) < 0)
        goto out;
    const sl_yaml_node_t *t = sl_yaml_map_get(root, "tenants");
    if (t != NULL && !sl_yaml_is_null(t) && load_tenants(&r, cfg, t) < 0)
        goto out;
    const sl_yaml_node_t *p = sl_yaml_map_get(root, "pools");
    if (p != NULL && !sl_yaml_is_null(p) && load_pools(&r, cfg, p) < 0)
        goto out;
    const sl_yaml_node_t *rv = sl_yaml_map_get(root, "revoked_nodes");
    if (rv != NULL && !sl_yaml_is_null(rv) && load_revoked(&r, cfg, rv) < 0)
        goto out;
    const sl_yaml_node_t *cm = sl_yaml_map_get(root, "container_mounts");
    if (cm != NULL && !sl_yaml_is_null(cm) && load_container_mounts(&r, cfg, cm) < 0)
        goto out;
    if (get_oom_adj(&r, root, "oom_score_adj", "oom_score_adj", &cfg->oom_score_adj) < 0)
        goto out;
    const sl_yaml_node_t *orl = sl_yaml_map_get(root, "oom_score_adj_by_priority");
    if (orl != NULL && !sl_yaml_is_null(orl) && load_oom_rules(&r, cfg, orl) < 0)
        goto out;
    const sl_yaml_node_t *pcs = sl_yaml_map_get(root, "priority_classes");
    if (pcs != NULL && !sl_yaml_is_null(pcs) && load_prio_classes(&r, cfg, pcs) < 0)
        goto out;
    const sl_yaml_node_t *pre = sl_yaml_map_get(root, "preemption");
    if (pre != NULL && !sl_yaml_is_null(pre) && load_preemption(&r, cfg, pre) < 0)
        goto out;
    const sl_yaml_node_t *hl = sl_yaml_map_get(root, "health");
    if (hl != NULL && !sl_yaml_is_null(hl) && ctl_health_cfg_load(&cfg->health, hl, path, err, errlen) < 0)
        goto out;
    static const char *const sec[] = {"key_file", "max_per_tenant", "max_bytes", NULL};
    const sl_yaml_node_t *sc = sl_yaml_map_get(root, "secrets");
    if (sc != NULL && !sl_yaml_is_null(sc) &&
        (check_keys(&r, sc, "secrets", sec) < 0 || get_str(&r, sc, "key_file", &cfg->secrets_key_file) < 0 ||
         get_int(&r, sc, "max_per_tenant", 0, 100000, &cfg->secrets_max_per_tenant) < 0 ||
         get_qty(&r, sc, "max_bytes", SL_QTY_MEM, &cfg->secrets_max_bytes) < 0))
        goto out;
    rc = 0;
out:
    sl_yaml_free(root);
    return rc;
}

static char *random_token(const char *prefix) {
    unsigned char raw[16];
    FILE *f = fopen("/dev/urandom", "rb");
    size_t got = f ? fread(raw, 1, sizeof raw, f) : 0;
    if (f)
        fclose(f);
    if (got != sizeof raw) {
        uint64_t x = (uint64_t)ctl_now_us() ^ ((uint64_t)getpid() << 32);
        for (size_t i = 0; i < sizeof raw; i++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            raw[i] = (unsigned char)(x >> 56);
        }
    }
    char *out = sl_xmalloc(strlen(prefix) + 33);
    strcpy(out, prefix);
    for (size_t i = 0; i < sizeof raw; i++)
        sprintf(out + strlen(prefix) + 2 * i, "%02x", raw[i]);
    return out;
}

void ctl_config_finish(ctl_config_t *cfg) {
    if (cfg->listen == NULL)
        cfg->listen = sl_xstrdup(CTL_DEFAULT_LISTEN);
    if (cfg->agent_listen == NULL)
        cfg->agent_listen = sl_xstrdup(CTL_DEFAULT_AGENT_LISTEN);
    if (cfg->state == NULL)
        cfg->state = sl_xstrdup(CTL_DEFAULT_STATE);
    if (cfg->admin_token == NULL) {
        cfg->admin_token = random_token("adm-");
        sl_log(SL_LOG_WARN, "config", "admin_token not configured; generated admin_token=%s",
               cfg->admin_token);
    }
    if (cfg->cluster_token == NULL) {
        cfg->cluster_token = random_token("clu-");
        sl_log(SL_LOG_WARN, "config", "cluster_token not configured; generated cluster_token=%s",
               cfg->cluster_token);
    }
    if (cfg->ntenants == 0) {
        cfg->tenants = sl_xcalloc(1, sizeof *cfg->tenants);
        cfg->tenants[0].name = sl_xstrdup("default");
        cfg->tenants[0].weight = 1;
        cfg->ntenants = 1;
    }
}

/* A token written "sha256:..." must be a whole SHA-256 in hex: anything
 * else is a typo that would lock everyone out (or, kept as a plain token,
 * be a guessable one). */
static int check_hashed(const char *what, const char *tok, char *err, size_t errlen) {
    if (tok == NULL || strncmp(tok, "sha256:", 7) != 0 || ctl_token_is_hashed(tok))
        return 0;
    snprintf(err, errlen,
             "%s: \"sha256:\" must be followed by 64 lower-case hex digits (the output of `sluiced "
             "hash-token`)", what);
    return -1;
}

int ctl_config_check(const ctl_config_t *cfg, char *err, size_t errlen) {
    const char *names[2] = {"admin_token", "cluster_token"};
    const char *toks[2] = {cfg->admin_token, cfg->cluster_token};
    if (toks[0][0] == '\0' || toks[1][0] == '\0') {
        snprintf(err, errlen, "%s must not be empty", toks[0][0] ? names[1] : names[0]);
        return -1;
    }
    if (check_hashed(names[0], toks[0], err, errlen) < 0 ||
        check_hashed(names[1], toks[1], err, errlen) < 0 ||
        check_hashed("monitoring_token", cfg->monitoring_token, err, errlen) < 0)
        return -1;
    /* The monitoring token reads every tenant's figures: it must be a
     * secret of its own, never one that also acts as another role. */
    const char *mon = cfg->monitoring_token;
    if (mon && (mon[0] == '\0' || strcmp(mon, toks[0]) == 0 || strcmp(mon, toks[1]) == 0)) {
        snprintf(err, errlen, "monitoring_token must be non-empty and differ from admin_token and "
                 "cluster_token");
        return -1;
    }
    for (size_t i = 0; i < cfg->ntenants; i++) {
        char what[128];
        snprintf(what, sizeof what, "tenant \"%s\": token", cfg->tenants[i].name);
        if (check_hashed(what, cfg->tenants[i].token, err, errlen) < 0)
            return -1;
    }
    if ((cfg->tls_cert == NULL) != (cfg->tls_key == NULL)) {
        snprintf(err, errlen, "%s is set without %s", cfg->tls_cert ? "tls_cert" : "tls_key",
                 cfg->tls_cert ? "tls_key" : "tls_cert");
        return -1;
    }
    if (cfg->tls_ca && !cfg->tls_cert) {
        snprintf(err, errlen, "tls_ca is set without tls_cert and tls_key");
        return -1;
    }
    if (cfg->agent_client_cert && strcmp(cfg->agent_client_cert, "none") != 0 && !cfg->tls_ca) {
        snprintf(err, errlen, "agent_client_cert: %s needs tls_ca (the CA that signs agents' "
                 "certificates)", cfg->agent_client_cert);
        return -1;
    }
    if (strcmp(toks[0], toks[1]) == 0) {
        snprintf(err, errlen, "admin_token and cluster_token must differ");
        return -1;
    }
    for (size_t i = 0; i < cfg->ntenants; i++) {
        const char *t = cfg->tenants[i].token;
        if (t == NULL)
            continue;
        for (int k = 0; k < 2; k++) {
            if (t[0] == '\0' || strcmp(t, toks[k]) == 0) {
                snprintf(err, errlen, "tenant \"%s\": token must be non-empty and differ from %s",
                         cfg->tenants[i].name, names[k]);
                return -1;
            }
        }
        if (mon && strcmp(t, mon) == 0) {
            snprintf(err, errlen, "tenant \"%s\": token must differ from monitoring_token",
                     cfg->tenants[i].name);
            return -1;
        }
    }
    return 0;
}

const char *ctl_config_task_user(const ctl_config_t *cfg, const char *tenant, const char **group) {
    *group = NULL;
    for (size_t i = 0; tenant && i < cfg->ntenants; i++) {
        if (strcmp(cfg->tenants[i].name, tenant) != 0)
            continue;
        *group = cfg->tenants[i].group;
        return cfg->tenants[i].user ? cfg->tenants[i].user : cfg->default_user;
    }
    return cfg->default_user;
}

bool ctl_node_revoked(const ctl_config_t *cfg, const char *name) {
    for (size_t i = 0; name && i < cfg->nrevoked; i++)
        if (strcmp(cfg->revoked_nodes[i], name) == 0)
            return true;
    return false;
}

int64_t ctl_config_default_limit_s(const ctl_config_t *cfg, const char *pool) {
    const struct ctl_pool_cfg *pc = ctl_pool_cfg(cfg, pool);
    return pc && pc->default_time_limit_ms > 0 ? pc->default_time_limit_ms / 1000
                                               : cfg->default_time_limit_s;
}

int64_t ctl_config_default_mem(const ctl_config_t *cfg, const char *pool, int64_t gpus,
                               int64_t cpu_milli) {
    const struct ctl_pool_cfg *pc = ctl_pool_cfg(cfg, pool ? pool : "default");
    int64_t per_gpu = cfg->default_mem_per_gpu, per_cpu = cfg->default_mem_per_cpu;
    if (pc && (pc->default_mem_per_gpu || pc->default_mem_per_cpu)) {
        per_gpu = pc->default_mem_per_gpu; /* a pool's own pair decides for it */
        per_cpu = pc->default_mem_per_cpu;
    }
    if (gpus > 0 && per_gpu > 0)
        return per_gpu * gpus;
    if (per_cpu > 0)
        return (int64_t)((double)per_cpu * (double)cpu_milli / 1000.0);
    return 0;
}

bool ctl_config_default_mem_node(const ctl_config_t *cfg, const char *pool) {
    const struct ctl_pool_cfg *pc = ctl_pool_cfg(cfg, pool ? pool : "default");
    return pc && pc->default_mem_node;
}

const struct ctl_pool_cfg *ctl_pool_cfg(const ctl_config_t *cfg, const char *pool) {
    for (size_t i = 0; pool && cfg->pool_cfg && i < cfg->npools; i++)
        if (cfg->pools[i] && strcmp(cfg->pools[i], pool) == 0)
            return &cfg->pool_cfg[i];
    return NULL;
}

const char *ctl_node_taints(const ctl_config_t *cfg, const char *pool, const char *taints,
                            char *buf, size_t len) {
    const struct ctl_pool_cfg *pc = ctl_pool_cfg(cfg, pool && pool[0] ? pool : "default");
    if (pc == NULL || !pc->dedicated)
        return taints;
    snprintf(buf, len, "%s%s" CTL_DEDICATED_TAINT_KEY "=%s:NoSchedule", taints ? taints : "",
             taints && taints[0] ? "," : "", pool && pool[0] ? pool : "default");
    return buf;
}

int ctl_pool_tenant_ok(const ctl_config_t *cfg, const char *pool, const char *tenant, char *err,
                       size_t errlen) {
    const struct ctl_pool_cfg *pc = ctl_pool_cfg(cfg, pool);
    if (pc == NULL || pc->ntenants == 0)
        return 0;
    char what[SL_NAME_MAX + 32];
    snprintf(what, sizeof what, "pool \"%s\" is dedicated to", pool);
    return tenant_listed(pc->tenants, pc->ntenants, what, tenant, err, errlen);
}

