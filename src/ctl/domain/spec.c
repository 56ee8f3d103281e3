/*
 * spec.c - validation of a job submission (POST /v1/jobs) and the core's
 * view of a stored spec.
 *
 * ctl_job_from_spec checks the JSON body against the job-spec table
 * (src/common/jobspec.h, which the CLI and docs/jobspec.md share, so that
 * they cannot disagree with the server), then what only the server knows:
 * the tenant against the token, the pool against the configuration, and
 * whether the cluster could take the GPU model and pool names. It parses
 * every quantity once: the stored spec gets their canonical text, the core
 * request their integers.
 *
 * Validation has no side effects. A job naming GPU models or a pool the
 * cluster has never seen is checked against the room left in the cluster's
 * fixed tables (SL_MAX_MODELS, SL_MAX_POOLS) and in the jobs' share of them
 * (SL_MAX_JOB_MODELS, SL_MAX_JOB_POOLS: names no node has may fill half of
 * each, so that a new node can always register; each tenant's jobs only its
 * part of that half, so that no tenant locks another out) without adding
 * the names,
 * so a rejected job leaves the cluster exactly as it was;
 * ctl_job_core_spec adds them, right before the job goes to the core (and
 * at recovery, past the share if need be), each with a job's reference the
 * job holds until ctl_job_release_names, when it leaves the core for good;
 * a name nothing references then frees its slot.
 */
#include <grp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "domain/ctl.h"
#include "domain/secrets.h"
#include "jobspec.h"
#include "log.h"
#include "quantity.h"

static ctl_job_t *bad(ctl_field_err_t *fe, int status, const char *code, const char *field,
                      const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static ctl_job_t *bad(ctl_field_err_t *fe, int status, const char *code, const char *field,
                      const char *fmt, ...) {
    fe->status = status;
    fe->code = code;
    snprintf(fe->field, sizeof fe->field, "%s", field ? field : "");
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    size_t fl = field ? strlen(field) : 0;
    if (field && strncmp(msg, field, fl) == 0 && msg[fl] == '[')
        /* A list's messages name their places themselves: volumes[2].path: ... */
        snprintf(fe->message, sizeof fe->message, "%s", msg);
    else if (field)
        snprintf(fe->message, sizeof fe->message, "%s: %s", field, msg);
    else
        snprintf(fe->message, sizeof fe->message, "%s", msg);
    return NULL;
}

static json_t *qty_json(int64_t v, sl_qty_kind_t kind) {
    char s[64];
    sl_qty_format(v, kind, s, sizeof s);
    return json_string(s);
}

/* The GPU models of a spec as a list (the field may be one name). New reference. */
static json_t *model_list(json_t *v) {
    if (v == NULL)
        return json_array();
    if (json_is_string(v))
        return json_pack("[O]", v);
    return json_incref(v);
}

/* The pool of a request that ctl_job_from_spec filled and whose GPU model
 * and pool names ctl_job_core_spec has yet to resolve. A job read back
 * from the store has its request zeroed (pool 0) instead, and
 * ctl_job_core_spec fills it from the stored spec first. */
#define POOL_UNRESOLVED (-2)

/* A list of strings (or one string) joined by commas into buf. */
static const char *join_list(json_t *v, char *buf, size_t len) {
    buf[0] = '\0';
    if (json_is_string(v))
        return json_string_value(v);
    size_t i, o = 0;
    json_t *m;
    json_array_foreach(v, i, m) {
        if (o < len)
            o += (size_t)snprintf(buf + o, len - o, "%s%s", i ? "," : "", json_string_value(m));
    }
    return buf;
}

/*
 * The job's constraint (node_selector, constraint, tolerations; a job
 * naming a dedicated pool also tolerates the pool's taint), interned in the
 * cluster with one reference in *out (NULL when it has none). 0, or -1 with
 * the field in *field and the message in err.
 */
static int constraint_of(ctl_t *c, json_t *s, const sl_constraint_t **out, char *field,
                         size_t fieldlen, char *err, size_t errlen) {
    char sel[2048], tol[2048 + SL_NAME_MAX + 40];
    sl_constraint_spec_t cs = {
        .selector = join_list(json_object_get(s, "node_selector"), sel, sizeof sel),
        .expr = json_string_value(json_object_get(s, "constraint")),
        .tolerations = join_list(json_object_get(s, "tolerations"), tol, sizeof tol)};
    const char *pool = json_string_value(json_object_get(s, "pool"));
    const struct ctl_pool_cfg *pc = ctl_pool_cfg(&c->cfg, pool);
    if (pc && pc->dedicated) {
        if (cs.tolerations != tol)
            snprintf(tol, sizeof tol, "%s", cs.tolerations ? cs.tolerations : "");
        size_t o = strlen(tol);
        snprintf(tol + o, sizeof tol - o, "%s" CTL_DEDICATED_TAINT_KEY "=%s:NoSchedule",
                 o ? "," : "", pool);
        cs.tolerations = tol;
    }
    char msg[300];
    if (sl_cluster_constraint_intern(c->cl, &cs, out, msg, sizeof msg) == 0)
        return 0;
    const char *colon = strstr(msg, ": ");
    snprintf(field, fieldlen, "%.*s", colon ? (int)(colon - msg) : 0, msg);
    snprintf(err, errlen, "%.270s", colon ? colon + 2 : msg);
    return -1;
}

/* A list of names (or one name) joined by commas, allocated whole; NULL
 * for none. */
static char *names_joined(json_t *v) {
    if (v == NULL)
        return NULL;
    if (json_is_string(v))
        return sl_xstrdup(json_string_value(v));
    size_t n = 1, i, o = 0;
    json_t *m;
    json_array_foreach(v, i, m) n += json_string_length(m) + 1;
    char *out = sl_xmalloc(n);
    out[0] = '\0';
    json_array_foreach(v, i, m) o += (size_t)snprintf(out + o, n - o, "%s%s", i ? "," : "",
                                                      json_string_value(m));
    return out;
}

/* The request of one task and the job's other numbers, from a parsed spec.
 * GPU models and pool stay unresolved (POOL_UNRESOLVED) until
 * ctl_job_core_spec resolves them. A job without a time limit gets its
 * pool's default as the estimate backfill plans with (never enforced). */
static void fill_core(const ctl_t *c, ctl_job_t *j, const sl_jobspec_t *js) {
    sl_job_spec_t *cs = &j->core;
    const int64_t *num = js->num;
    memset(cs, 0, sizeof *cs);
    cs->priority = (int32_t)num[SL_JS_PRIORITY];
    cs->ntasks = (int32_t)num[SL_JS_TASKS];
    cs->min_tasks = num[SL_JS_MIN_TASKS] == num[SL_JS_TASKS] ? 0 : (int32_t)num[SL_JS_MIN_TASKS];
    cs->time_limit_us = num[SL_JS_TIME_LIMIT] * 1000000;
    cs->default_limit_us =
        ctl_config_default_limit_s(&c->cfg, json_string_value(js->val[SL_JS_POOL])) * 1000000;
    const char *onf = json_string_value(js->val[SL_JS_ON_NODE_FAILURE]);
    j->requeue_on_node_failure = onf == NULL || strcmp(onf, "fail") != 0;
    sl_task_req_t *r = &cs->task;
    sl_task_req_init(r);
    r->cpu_milli = num[SL_JS_CPUS];
    r->mem_bytes = num[SL_JS_MEMORY];
    r->gpus = (int32_t)num[SL_JS_GPUS];
    r->gpu_milli = js->val[SL_JS_GPU_SHARE] ? (int32_t)num[SL_JS_GPU_SHARE] : 0;
    r->gpu_mem_bytes = js->val[SL_JS_GPU_MEMORY] ? num[SL_JS_GPU_MEMORY] : 0;
    r->model_mask = 0;
    r->pool = POOL_UNRESOLVED;
    int lv = 0; /* the table checked the word */
    if (sl_topo_level_parse(json_string_value(js->val[SL_JS_TOPOLOGY_REQUIRED]), &lv) == 0)
        r->topo_required = (int16_t)lv;
    if (sl_topo_level_parse(json_string_value(js->val[SL_JS_TOPOLOGY_PREFERRED]), &lv) == 0)
        r->topo_preferred = (int16_t)lv;
    /* Where the gang goes: distinct nodes, per-node tasks, whole nodes,
     * node lists (the core's node fields; the table checked the rules). */
    r->nodes_min = js->val[SL_JS_NODES] ? (int16_t)num[SL_JS_NODES] : 0;
    r->nodes_max = js->val[SL_JS_NODES_MAX] ? (int16_t)num[SL_JS_NODES_MAX] : 0;
    r->tasks_per_node = js->val[SL_JS_TASKS_PER_NODE] ? (int16_t)num[SL_JS_TASKS_PER_NODE] : 0;
    r->exclusive = json_is_true(js->val[SL_JS_EXCLUSIVE]) ? 1 : 0;
    if (js->val[SL_JS_MEM_PER_GPU])
        r->mem_bytes = num[SL_JS_MEM_PER_GPU] * r->gpus;
    sl_free(j->node_incl);
    sl_free(j->node_excl);
    j->node_incl = names_joined(js->val[SL_JS_NODELIST]);
    j->node_excl = names_joined(js->val[SL_JS_EXCLUDE]);
    r->include = j->node_incl;
    r->exclude = j->node_excl;
}

/* ---- the job share per tenant ----
 *
 * The names jobs alone hold may fill half of each table (names_fit); that
 * half is divided among the configured tenants, so that one tenant's
 * pending jobs naming made-up models or pools never keep another tenant
 * from naming a model or pool no node has yet. A tenant's part counts the
 * names jobs alone hold that at least one of its jobs names (a name two
 * tenants' jobs name counts for both, and for neither once a node has
 * it); each part is share / tenants (at least one), so the parts together
 * never pass the share and a tenant below its part always finds room. */

/* Tenant's row of c->name_refs, grown when grow; NULL when it has none
 * (or tenant < 0). A pointer valid until the next grow. */
static int32_t *name_row(ctl_t *c, int32_t tenant, bool grow) {
    if (tenant < 0)
        return NULL;
    size_t need = ((size_t)tenant + 1) * CTL_NAME_ROW;
    if (need > c->nname_refs) {
        if (!grow)
            return NULL;
        c->name_refs = sl_xrealloc(c->name_refs, need * sizeof *c->name_refs);
        memset(c->name_refs + c->nname_refs, 0, (need - c->nname_refs) * sizeof *c->name_refs);
        c->nname_refs = need;
    }
    return c->name_refs + (size_t)tenant * CTL_NAME_ROW;
}

/* One tenant's part of a share of names (at least 1). */
static size_t tenant_part(const ctl_t *c, int share) {
    size_t n = sl_sched_tenant_count(c->sched);
    size_t q = n > 0 ? (size_t)share / n : (size_t)share;
    return q > 0 ? q : 1;
}

static bool job_only(const ctl_t *c, int32_t id, bool pool) {
    return pool ? sl_cluster_pool_job_only(c->cl, id) : sl_cluster_model_job_only(c->cl, id);
}

/* The names jobs alone hold that row's tenant names. O(table). */
static size_t tenant_held(const ctl_t *c, const int32_t *row, bool pool) {
    size_t n = 0;
    int32_t max = pool ? SL_MAX_POOLS : SL_MAX_MODELS, off = pool ? SL_MAX_MODELS : 0;
    for (int32_t id = 0; row && id < max; id++)
        n += row[off + id] > 0 && job_only(c, id, pool);
    return n;
}

/* Whether the name (its id, or < 0 when the table lacks it) would add one
 * to the part of row's tenant: a new name, or one that jobs alone hold and
 * no job of the tenant names yet. */
static bool adds_to_part(const ctl_t *c, const int32_t *row, int32_t id, bool pool) {
    if (id < 0)
        return true;
    return job_only(c, id, pool) && (row == NULL || row[(pool ? SL_MAX_MODELS : 0) + id] == 0);
}

/* Whether tenant's part of the job share has room for the names of the
 * spec that would add to it (see above); with one tenant the part is the
 * share, which names_fit checks. Reads only. O(SL_MAX_MODELS + SL_MAX_POOLS
 * + models named x SL_MAX_MODELS). */
static bool part_fits(ctl_t *c, int32_t tenant, json_t *models, const char *pool,
                      ctl_field_err_t *fe) {
    size_t ntenants = sl_sched_tenant_count(c->sched);
    if (ntenants <= 1)
        return true;
    const int32_t *row = name_row(c, tenant, false);
    const char *tn = sl_sched_tenant_name(c->sched, tenant);
    size_t part = tenant_part(c, SL_MAX_JOB_MODELS), held = 0, nadd = 0;
    const char *added[SL_MAX_MODELS];
    size_t i;
    json_t *m;
    json_array_foreach(models, i, m) {
        const char *name = json_string_value(m);
        if (!adds_to_part(c, row, sl_cluster_model_find(c->cl, name), false))
            continue;
        bool dup = false;
        for (size_t k = 0; k < nadd && !dup; k++)
            dup = strcmp(added[k], name) == 0;
        if (dup)
            continue;
        if (nadd == 0)
            held = tenant_held(c, row, false);
        if (held + nadd >= part) {
            if (nadd == 0)
                bad(fe, 400, "invalid_field", "gpu_models",
                    "\"%s\": no node has this model and the jobs of tenant \"%s\" already name "
                    "%zu models no node has (each of the %zu tenants may name at most %zu); name "
                    "a model a node has", name, tn, held, ntenants, part);
            else
                bad(fe, 400, "invalid_field", "gpu_models",
                    "\"%s\": no node has this model, and with it this job would bring the models "
                    "no node has that tenant \"%s\" names to %zu (each of the %zu tenants may "
                    "name at most %zu); name models a node has", name, tn, held + nadd + 1,
                    ntenants, part);
            return false;
        }
        added[nadd++] = name;
    }
    if (pool && adds_to_part(c, row, sl_cluster_pool_find(c->cl, pool), true)) {
        size_t ppart = tenant_part(c, SL_MAX_JOB_POOLS), pheld = tenant_held(c, row, true);
        if (pheld >= ppart) {
            bad(fe, 400, "invalid_field", "pool",
                "\"%s\": no node is in this pool and the jobs of tenant \"%s\" already name "
                "%zu pools no node is in (each of the %zu tenants may name at most %zu); name a "
                "pool a node is in", pool, tn, pheld, ntenants, ppart);
            return false;
        }
    }
    return true;
}

/* "(the most)" when jobs hold exactly the job share of names no node
 * has, "(the most is N)" when they hold more (jobs recovered past it). */
static const char *share_note(size_t held, int share, char *buf, size_t len) {
    if (held == (size_t)share)
        return "the most";
    snprintf(buf, len, "the most is %d", share);
    return buf;
}

/* Whether the cluster could take the spec's GPU model and pool names
 * without adding any. A name it holds already takes no slot and always
 * fits. A new one becomes a name that jobs alone hold: it must fit in the
 * job share (SL_MAX_JOB_MODELS, SL_MAX_JOB_POOLS, half of each table, so
 * that a real node with a new model or pool can always register) and in
 * the table, as ctl_job_core_spec will find when it interns them. Reads
 * only. O(models x SL_MAX_MODELS). */
static bool names_fit(ctl_t *c, json_t *models, const char *pool, ctl_field_err_t *fe) {
    const char *fresh[SL_MAX_MODELS];
    size_t nfresh = 0, known = sl_cluster_model_count(c->cl);
    size_t jobs = sl_cluster_model_job_only_count(c->cl);
    char note[32];
    size_t i;
    json_t *m;
    json_array_foreach(models, i, m) {
        const char *name = json_string_value(m);
        if (sl_cluster_model_find(c->cl, name) >= 0)
            continue;
        bool dup = false;
        for (size_t k = 0; k < nfresh && !dup; k++)
            dup = strcmp(fresh[k], name) == 0;
        if (dup)
            continue;
        if (nfresh == 0 && jobs >= SL_MAX_JOB_MODELS) {
            bad(fe, 400, "invalid_field", "gpu_models",
                "\"%s\": no node has this model and jobs already name %zu models no node has "
                "(%s); name a model a node has", name, jobs,
                share_note(jobs, SL_MAX_JOB_MODELS, note, sizeof note));
            return false;
        }
        if (jobs + nfresh >= SL_MAX_JOB_MODELS) {
            bad(fe, 400, "invalid_field", "gpu_models",
                "\"%s\": no node has this model, and with it this job would bring the models "
                "no node has to %zu (the most is %d); name models a node has", name,
                jobs + nfresh + 1, SL_MAX_JOB_MODELS);
            return false;
        }
        if (known + nfresh >= SL_MAX_MODELS) {
            bad(fe, 400, "invalid_field", "gpu_models",
                "\"%s\" is not a GPU model of this cluster, and it has no room for another "
                "(at most %d models)", name, SL_MAX_MODELS);
            return false;
        }
        fresh[nfresh++] = name;
    }
    if (pool && sl_cluster_pool_find(c->cl, pool) < 0) {
        size_t pjobs = sl_cluster_pool_job_only_count(c->cl);
        if (pjobs >= SL_MAX_JOB_POOLS) {
            bad(fe, 400, "invalid_field", "pool",
                "\"%s\": no node is in this pool and jobs already name %zu pools no node is in "
                "(%s); name a pool a node is in", pool, pjobs,
                share_note(pjobs, SL_MAX_JOB_POOLS, note, sizeof note));
            return false;
        }
        if (sl_cluster_pool_count(c->cl) >= SL_MAX_POOLS) {
            bad(fe, 400, "invalid_field", "pool",
                "\"%s\" is not a pool of this cluster, and it has no room for another "
                "(at most %d pools)", pool, SL_MAX_POOLS);
            return false;
        }
    }
    return true;
}

/* Whether pool is a name a job may give: a configured pool, or (with no
 * pools configured) the pool of a node that registered. O(pools). */
static bool pool_known(const ctl_t *c, const char *pool) {
    if (c->cfg.npools > 0) {
        for (size_t i = 0; i < c->cfg.npools; i++)
            if (strcmp(c->cfg.pools[i], pool) == 0)
                return true;
        return false;
    }
    int id = sl_cluster_pool_find(c->cl, pool);
    return id >= 0 && !sl_cluster_pool_job_only(c->cl, id);
}

/* The names a job may give for kind, each with its aliases in brackets
 * ("a100 (gpu, batch), cpu"), into buf; "none" when there are none.
 * Returns buf; truncates with "...". O(names x aliases). */
static const char *known_names(const ctl_t *c, ctl_alias_kind_t kind, char *buf,
                                   size_t len) {
    size_t o = 0, n = kind == CTL_ALIAS_POOL
                          ? (c->cfg.npools ? c->cfg.npools : (size_t)SL_MAX_POOLS)
                      : kind == CTL_ALIAS_TENANT || kind == CTL_ALIAS_NAMESPACE
                          ? sl_sched_tenant_count(c->sched)
                          : c->cfg.nprio_classes;
    buf[0] = '\0';
    for (size_t i = 0; i < n && o + 4 < len; i++) {
        const char *name;
        if (kind == CTL_ALIAS_POOL && c->cfg.npools)
            name = c->cfg.pools[i];
        else if (kind == CTL_ALIAS_POOL)
            name = sl_cluster_pool_job_only(c->cl, (int32_t)i)
                       ? NULL
                       : sl_cluster_pool_name(c->cl, (int32_t)i);
        else if (kind == CTL_ALIAS_TENANT || kind == CTL_ALIAS_NAMESPACE)
            name = sl_sched_tenant_name(c->sched, (int32_t)i);
        else
            name = c->cfg.prio_classes[i].name;
        if (name == NULL)
            continue;
        char al[256];
        ctl_sitecfg_aliases_of(&c->site, kind, name, al, sizeof al);
        o += (size_t)snprintf(buf + o, len - o, "%s%s%s%s%s", o ? ", " : "", name,
                              al[0] ? " (" : "", al, al[0] ? ")" : "");
    }
    if (o >= len && len > 4)
        memcpy(buf + len - 4, "...", 4);
    if (buf[0] == '\0')
        snprintf(buf, len, "none");
    return buf;
}

/* The tenant a Kubernetes namespace names: a tenant's own name, or one of
 * its tenants[].namespaces. With decide (the admin token without a tenant
 * field) it becomes *tenant; else it must be *tenant's: another tenant's
 * namespace, or one that names none, is a 403 naming it (a token learns
 * nothing of the other tenants' namespaces). -1 with fe set. */
static int namespace_tenant(ctl_t *c, const char *ns, bool decide, int32_t *tenant,
                            ctl_field_err_t *fe) {
    int t = sl_sched_tenant_find(c->sched, ns);
    const char *real = t < 0 ? ctl_sitecfg_resolve(&c->site, CTL_ALIAS_NAMESPACE, ns) : NULL;
    if (real)
        t = sl_sched_tenant_find(c->sched, real);
    if (decide) {
        char known[512];
        if (t < 0) {
            bad(fe, 400, "invalid_field", "namespace",
                "unknown namespace \"%s\" (tenants and their namespaces: %s)", ns,
                known_names(c, CTL_ALIAS_NAMESPACE, known, sizeof known));
            return -1;
        }
        *tenant = t;
        return 0;
    }
    if (t == *tenant)
        return 0;
    const char *own = sl_sched_tenant_name(c->sched, *tenant);
    char al[256];
    ctl_sitecfg_aliases_of(&c->site, CTL_ALIAS_NAMESPACE, own, al, sizeof al);
    bad(fe, 403, "forbidden", "namespace",
        "namespace \"%s\" is not tenant \"%s\"'s (its namespaces: %s%s%s)", ns, own, own,
        al[0] ? ", " : "", al);
    return -1;
}

/* securityContext's runAsUser and runAsGroup: only the uid and gid the
 * tenant's tasks run as anyway (its user, else default_user, looked up on
 * the controller, as the nodes look it up). -1 with fe set. */
static int run_as_check(ctl_t *c, int32_t tenant, json_t *uid, json_t *gid, ctl_field_err_t *fe) {
    if (!uid && !gid)
        return 0;
    const char *tname = sl_sched_tenant_name(c->sched, tenant), *user = NULL, *group = NULL;
    for (size_t i = 0; i < c->cfg.ntenants; i++)
        if (strcmp(c->cfg.tenants[i].name, tname) == 0) {
            user = c->cfg.tenants[i].user;
            group = c->cfg.tenants[i].group;
        }
    if (!user)
        user = c->cfg.default_user ? c->cfg.default_user : "nobody";
    const char *field = uid ? "run_as_user" : "run_as_group";
    struct passwd *pw = getpwnam(user);
    if (!pw) {
        bad(fe, 400, "invalid_field", field,
            "cannot check: tenant \"%s\"'s user \"%s\" is not known on the controller", tname,
            user);
        return -1;
    }
    long long want_uid = pw->pw_uid, want_gid = pw->pw_gid;
    if (group) {
        struct group *gr = getgrnam(group);
        if (!gr) {
            bad(fe, 400, "invalid_field", "run_as_group",
                "cannot check: tenant \"%s\"'s group \"%s\" is not known on the controller",
                tname, group);
            return -1;
        }
        want_gid = gr->gr_gid;
    }
    if (uid && json_integer_value(uid) != want_uid) {
        bad(fe, 403, "forbidden", "run_as_user",
            "%lld is not tenant \"%s\"'s user %s (uid %lld): its tasks run as that user only",
            (long long)json_integer_value(uid), tname, user, want_uid);
        return -1;
    }
    if (gid && json_integer_value(gid) != want_gid) {
        bad(fe, 403, "forbidden", "run_as_group",
            "%lld is not tenant \"%s\"'s group (gid %lld): its tasks run in that group only",
            (long long)json_integer_value(gid), tname, want_gid);
        return -1;
    }
    return 0;
}

/* gpu_resource ("nvidia.com/a100", a Kubernetes extended resource) as the
 * GPU model the config's gpu_resources maps it to: spec's gpu_models
 * becomes [MODEL] (one given beside it must hold MODEL). -1 with fe. */
static int gpu_resource_model(ctl_t *c, json_t *spec, ctl_field_err_t *fe) {
    json_t *r = json_object_get(spec, "gpu_resource");
    if (!json_is_string(r))
        return 0; /* absent, or wrong: the table's check names it */
    const char *model = ctl_sitecfg_resolve(&c->site, CTL_ALIAS_GPU_RESOURCE, json_string_value(r));
    if (model == NULL) {
        char known[512] = "";
        size_t o = 0;
        for (size_t i = 0; i < c->site.naliases && o < sizeof known; i++)
            if (c->site.aliases[i].kind == CTL_ALIAS_GPU_RESOURCE)
                o += (size_t)snprintf(known + o, sizeof known - o, "%s%s: %s", o ? ", " : "",
                                      c->site.aliases[i].alias, c->site.aliases[i].name);
        bad(fe, 400, "invalid_field", "gpu_resource",
            "\"%s\" is not a GPU resource of this cluster (the config's gpu_resources: %s)",
            json_string_value(r), known[0] ? known : "none");
        return -1;
    }
    json_t *models = json_object_get(spec, "gpu_models");
    if (models) {
        bool has = json_is_string(models) && strcmp(json_string_value(models), model) == 0;
        size_t i;
        json_t *m;
        json_array_foreach(models, i, m)
            has |= json_is_string(m) && strcmp(json_string_value(m), model) == 0;
        if (!has) {
            bad(fe, 400, "invalid_field", "gpu_models",
                "does not hold %s, the model of gpu_resource \"%s\"", model, json_string_value(r));
            return -1;
        }
        return 0;
    }
    json_object_set_new(spec, "gpu_models", json_pack("[s]", model));
    return 0;
}

ctl_job_t *ctl_job_from_spec(ctl_t *c, json_t *spec, int32_t tenant, bool admin,
                             ctl_field_err_t *fe) {
    if (json_is_object(spec) && gpu_resource_model(c, spec, fe) < 0)
        return NULL;
    sl_jobspec_t js;
    const char *field;
    char err[1024];
    int rc = sl_jobspec_parse(spec, &js, &field, err, sizeof err);
    if (rc < 0)
        return bad(fe, 400, rc == SL_ENOENT ? "unknown_field" : "invalid_field", field, "%s", err);
    json_t **val = js.val;
    /* Volumes against the operator's host paths, claims and exports. */
    if (val[SL_JS_VOLUMES] && ctl_volcfg_resolve(&c->site.volumes, val[SL_JS_VOLUMES],
                                                 js.num[SL_JS_MEMORY], NULL, NULL, err,
                                                 sizeof err) < 0)
        return bad(fe, 400, "invalid_field", "volumes", "%s", err);
    if (val[SL_JS_SECRETS] && ctl_secrets_check(c, sl_sched_tenant_name(c->sched, tenant),
                                                val[SL_JS_SECRETS], NULL, err, sizeof err) < 0)
        return bad(fe, 400, "invalid_field", "secrets", "%s", err); /* the tenant's own only */
    if (val[SL_JS_MOUNTS]) {
        /* Each mount's source under a prefix the operator allows. */
        json_t *ms = val[SL_JS_MOUNTS];
        size_t n = json_is_array(ms) ? json_array_size(ms) : 1;
        for (size_t i = 0; i < n; i++) {
            const char *m = json_string_value(json_is_array(ms) ? json_array_get(ms, i) : ms);
            char src[SL_JOBSPEC_PATH_MAX];
            sl_jobspec_mount_parse(m, src, NULL, NULL, err, sizeof err);
            if (!sl_jobspec_mount_allowed(src, (const char *const *)c->cfg.container_mounts,
                                          c->cfg.ncontainer_mounts)) {
                char allowed[200] = "none";
                size_t k = 0;
                for (size_t p = 0; p < c->cfg.ncontainer_mounts && k < sizeof allowed; p++)
                    k += (size_t)snprintf(allowed + k, sizeof allowed - k, "%s%s", p ? ", " : "",
                                          c->cfg.container_mounts[p]);
                return bad(fe, 400, "invalid_field", "mounts",
                           "%s is not under a path the cluster allows containers to mount "
                           "(container_mounts: %s)", src, allowed);
            }
        }
    }

    char known[512];
    if (val[SL_JS_TENANT]) {
        const char *name = json_string_value(val[SL_JS_TENANT]);
        int t = sl_sched_tenant_find(c->sched, name);
        const char *real = t < 0 ? ctl_sitecfg_resolve(&c->site, CTL_ALIAS_TENANT, name) : NULL;
        if (real) /* an account the config maps to its tenant */
            t = sl_sched_tenant_find(c->sched, real);
        for (size_t i = 0; t < 0 && i < sl_sched_tenant_count(c->sched); i++)
            if (strcasecmp(sl_sched_tenant_name(c->sched, (int32_t)i), name) == 0)
                t = (int)i; /* sbatch -A keeps accounts in lower case, as Slurm does */
        if (!admin && (t < 0 || t != tenant))
            return bad(fe, 403, "forbidden", "tenant",
                       "this token may only submit for tenant \"%s\"",
                       sl_sched_tenant_name(c->sched, tenant));
        if (t < 0)
            return bad(fe, 400, "invalid_field", "tenant",
                       "unknown tenant or account \"%s\" (tenants: %s)", name,
                       known_names(c, CTL_ALIAS_TENANT, known, sizeof known));
        tenant = t;
    } else if (admin && !val[SL_JS_NAMESPACE]) {
        if (sl_sched_tenant_count(c->sched) != 1)
            return bad(fe, 400, "invalid_field", "tenant",
                       "required when submitting with the admin token");
        tenant = 0;
    }
    if (val[SL_JS_NAMESPACE] && namespace_tenant(c, json_string_value(val[SL_JS_NAMESPACE]),
                                                 admin && !val[SL_JS_TENANT], &tenant, fe) < 0)
        return NULL;
    if (run_as_check(c, tenant, val[SL_JS_RUN_AS_USER], val[SL_JS_RUN_AS_GROUP], fe) < 0)
        return NULL;
    const char *pool = json_string_value(val[SL_JS_POOL]);
    const char *pool_real = ctl_sitecfg_resolve(&c->site, CTL_ALIAS_POOL, pool);
    if (pool_real && !pool_known(c, pool))
        pool = pool_real; /* a partition's name the config maps to its pool */
    /* A priority class gives the job its priority; a priority
     * given beside it must be the same. */
    const char *pcname = json_string_value(val[SL_JS_PRIORITY_CLASS]);
    if (pcname != NULL && ctl_config_prio_class(&c->cfg, pcname) == NULL) {
        const char *real = ctl_sitecfg_resolve(&c->site, CTL_ALIAS_CLASS, pcname);
        if (real) /* a QoS the config maps to its class */
            pcname = real;
    }
    if (pcname != NULL) {
        const ctl_prio_class_t *pc = ctl_config_prio_class(&c->cfg, pcname);
        if (pc == NULL)
            return bad(fe, 400, "invalid_field", "priority_class",
                       "unknown priority class or QoS \"%s\" (%s%s)", pcname,
                       c->cfg.nprio_classes ? "priority classes: "
                                            : "the config has no priority_classes",
                       c->cfg.nprio_classes
                           ? known_names(c, CTL_ALIAS_CLASS, known, sizeof known)
                           : "");
        if (val[SL_JS_PRIORITY] && js.num[SL_JS_PRIORITY] != pc->value)
            return bad(fe, 400, "invalid_field", "priority",
                       "%lld differs from the value of priority class \"%s\" (%d); give one "
                       "of the two", (long long)js.num[SL_JS_PRIORITY], pcname, (int)pc->value);
        js.num[SL_JS_PRIORITY] = pc->value;
        if (ctl_prio_class_tenant_ok(pc, sl_sched_tenant_name(c->sched, tenant), err,
                                     sizeof err) < 0)
            return bad(fe, 403, "forbidden", "priority_class", "%s", err);
    }
    if (pool && ctl_pool_tenant_ok(&c->cfg, pool, sl_sched_tenant_name(c->sched, tenant), err,
                                   sizeof err) < 0)
        return bad(fe, 403, "forbidden", "pool", "%s", err);
    const char *rname = json_string_value(val[SL_JS_RESERVATION]);
    if (rname) {
        int rid = sl_sched_resv_find(c->sched, rname);
        if (rid < 0)
            return bad(fe, 400, "invalid_field", "reservation",
                       "no reservation \"%s\" (sluice reservation list)", rname);
        if (!sl_sched_resv_admits(c->sched, rid, tenant))
            return bad(fe, 403, "forbidden", "reservation",
                       "reservation \"%s\" does not admit tenant \"%s\"", rname,
                       sl_sched_tenant_name(c->sched, tenant));
    }
    {
        /* Labels and tolerations compile here so that a bad one is a 400
         * naming its field; the reference is given back at once. */
        const sl_constraint_t *cons;
        char cf[32];
        if (constraint_of(c, spec, &cons, cf, sizeof cf, err, sizeof err) < 0)
            return bad(fe, 400, "invalid_field", cf, "%s", err);
        sl_cluster_constraint_release(c->cl, cons);
    }
    if (val[SL_JS_SLURM]) {
        /* The request as sbatch read it: only the keys the SLURM_*
         * variables repeat (docs/slurm.md). */
        static const char *const keys[] = {"ntasks", "ntasks_per_node", "mem_per_node", "mem_per_cpu",
                                           "gpus_per_node", "gpus_per_task", "gpus", "qos",
                                           "submit_host", NULL};
        const char *k;
        json_t *v;
        json_object_foreach(val[SL_JS_SLURM], k, v) {
            bool ours = false;
            for (int i = 0; keys[i] && !ours; i++)
                ours = strcmp(keys[i], k) == 0;
            if (!ours)
                return bad(fe, 400, "invalid_field", "slurm",
                           "%s is not a key of slurm (ntasks, ntasks_per_node, mem_per_node, "
                           "mem_per_cpu, gpus_per_node, gpus_per_task, gpus, qos, submit_host)",
                           k);
            if (strlen(json_string_value(v)) > 255)
                return bad(fe, 400, "invalid_field", "slurm", "%s is over 255 bytes", k);
        }
    }
    json_t *models = model_list(val[SL_JS_GPU_MODELS]);
    if (!part_fits(c, tenant, models, pool, fe) || !names_fit(c, models, pool, fe)) {
        json_decref(models);
        return NULL;
    }
    if (pool && !pool_known(c, pool) && !(c->cfg.npools == 0 && c->site.accept_unknown_pools)) {
        json_decref(models);
        return bad(fe, 400, "invalid_field", "pool",
                   "unknown pool or partition \"%s\" (%s: %s)", pool,
                   c->cfg.npools ? "pools" : "the pools of this cluster's nodes",
                   known_names(c, CTL_ALIAS_POOL, known, sizeof known));
    }

    char dflt[SL_NAME_MAX];
    const char *name = json_string_value(val[SL_JS_NAME]);
    if (name == NULL) {
        json_t *image = val[SL_JS_IMAGE];
        const char *src = image                ? json_string_value(image)
                          : val[SL_JS_COMMAND] ? json_string_value(json_array_get(val[SL_JS_COMMAND], 0))
                                               : "script";
        const char *slash = strrchr(src, '/');
        snprintf(dflt, sizeof dflt, "%s", slash && slash[1] ? slash + 1 : src);
        json_t *ok = sl_jobspec_from_text(&sl_jobspec_fields[SL_JS_NAME], dflt, err, sizeof err);
        if (ok == NULL)
            snprintf(dflt, sizeof dflt, "job");
        json_decref(ok);
        name = dflt;
    }
    /* Memory: gpus x mem_per_gpu, else what the site configured for a job
     * that asks for none (per GPU, per CPU), else the table's 1Gi. */
    if (val[SL_JS_MEM_PER_GPU]) {
        js.num[SL_JS_MEMORY] = js.num[SL_JS_MEM_PER_GPU] * js.num[SL_JS_GPUS];
    } else if (!val[SL_JS_MEMORY] && ctl_config_default_mem_node(&c->cfg, pool) &&
               js.num[SL_JS_MIN_TASKS] == js.num[SL_JS_TASKS]) {
        val[SL_JS_EXCLUSIVE] = json_true(); /* the node's memory: the whole node */
    } else if (!val[SL_JS_MEMORY]) {
        int64_t m = ctl_config_default_mem(&c->cfg, pool, js.num[SL_JS_GPUS], js.num[SL_JS_CPUS]);
        if (m > 0)
            js.num[SL_JS_MEMORY] = m;
    }
    const int64_t *num = js.num;
    json_t *norm = json_object();
    json_object_set_new(norm, "name", json_string(name));
    json_object_set_new(norm, "tenant", json_string(sl_sched_tenant_name(c->sched, tenant)));
    json_object_set_new(norm, "tasks", json_integer(num[SL_JS_TASKS]));
    json_object_set_new(norm, "min_tasks", json_integer(num[SL_JS_MIN_TASKS]));
    json_object_set_new(norm, "cpus", qty_json(num[SL_JS_CPUS], SL_QTY_CPU));
    json_object_set_new(norm, "memory", qty_json(num[SL_JS_MEMORY], SL_QTY_MEM));
    json_object_set_new(norm, "gpus", json_integer(num[SL_JS_GPUS]));
    json_object_set_new(norm, "gpu_share", val[SL_JS_GPU_SHARE]
                                               ? qty_json(num[SL_JS_GPU_SHARE], SL_QTY_GPU)
                                               : json_null());
    json_object_set_new(norm, "gpu_memory", num[SL_JS_GPU_MEMORY] && val[SL_JS_GPU_MEMORY]
                                                ? qty_json(num[SL_JS_GPU_MEMORY], SL_QTY_MEM)
                                                : json_null());
    json_object_set_new(norm, "gpu_models", models);
    json_object_set_new(norm, "pool", pool ? json_string(pool) : json_null());
    json_object_set_new(norm, "priority", json_integer(num[SL_JS_PRIORITY]));
    json_object_set_new(norm, "priority_class", pcname ? json_string(pcname) : json_null());
    json_object_set_new(norm, "time_limit", json_integer(num[SL_JS_TIME_LIMIT]));
    for (int i = SL_JS_COMMAND; i <= SL_JS_IMAGE; i++) /* null when absent, as before */
        json_object_set_new(norm, sl_jobspec_fields[i].name, val[i] ? json_deep_copy(val[i]) : json_null());
    for (int i = SL_JS_CONTAINERS; i <= SL_JS_ARGS; i++) /* a pod's; an entrypoint's arguments */
        if (val[i]) json_object_set_new(norm, sl_jobspec_fields[i].name, json_deep_copy(val[i]));
    json_object_set_new(norm, "env", val[SL_JS_ENV] ? json_deep_copy(val[SL_JS_ENV])
                                                     : json_object());
    json_object_set_new(norm, "on_node_failure",
                        json_string(val[SL_JS_ON_NODE_FAILURE]
                                        ? json_string_value(val[SL_JS_ON_NODE_FAILURE])
                                        : "requeue"));
    /* Arrays and dependencies keep Slurm's text; deps.c parses it. */
    if (val[SL_JS_ARRAY])
        json_object_set_new(norm, "array", json_deep_copy(val[SL_JS_ARRAY]));
    if (val[SL_JS_DEPENDENCY])
        json_object_set_new(norm, "dependency", json_deep_copy(val[SL_JS_DEPENDENCY]));
    /* A batch script's fields only where it has one, so that every other
     * job's spec reads as before. */
    for (int i = SL_JS_SCRIPT; i <= SL_JS_SUBMIT_DIR; i++)
        if (val[i])
            json_object_set_new(norm, sl_jobspec_fields[i].name, json_deep_copy(val[i]));
    /* A container's options only where it has them. */
    if (val[SL_JS_MOUNTS])
        json_object_set_new(norm, "mounts", model_list(val[SL_JS_MOUNTS]));
    if (val[SL_JS_SECRETS]) /* references only (domain/secrets.h) */
        json_object_set(norm, "secrets", val[SL_JS_SECRETS]);
    if (val[SL_JS_SHM_SIZE])
        json_object_set_new(norm, "shm_size", qty_json(num[SL_JS_SHM_SIZE], SL_QTY_MEM));
    if (val[SL_JS_WORKDIR])
        json_object_set_new(norm, "workdir", json_deep_copy(val[SL_JS_WORKDIR]));
    if (json_array_size(val[SL_JS_VOLUMES]) > 0)
        json_object_set_new(norm, "volumes", json_deep_copy(val[SL_JS_VOLUMES]));
    /* Where it may run: lists as lists, the expression as given. */
    if (val[SL_JS_NODE_SELECTOR])
        json_object_set_new(norm, "node_selector", model_list(val[SL_JS_NODE_SELECTOR]));
    if (val[SL_JS_CONSTRAINT])
        json_object_set_new(norm, "constraint", json_deep_copy(val[SL_JS_CONSTRAINT]));
    if (val[SL_JS_TOLERATIONS])
        json_object_set_new(norm, "tolerations", model_list(val[SL_JS_TOLERATIONS]));
    if (val[SL_JS_TOPOLOGY_REQUIRED])
        json_object_set_new(norm, "topology_required",
                            json_deep_copy(val[SL_JS_TOPOLOGY_REQUIRED]));
    if (val[SL_JS_TOPOLOGY_PREFERRED])
        json_object_set_new(norm, "topology_preferred",
                            json_deep_copy(val[SL_JS_TOPOLOGY_PREFERRED]));
    if (json_is_true(val[SL_JS_ALLOCATION]))
        json_object_set_new(norm, "allocation", json_true());
    /* Retries as decided now (the config's default when the job gives
     * none), so that a later config leaves acknowledged jobs as they were;
     * only where a job has some, so that every other spec reads as before. */
    int64_t retries = val[SL_JS_RETRIES] ? num[SL_JS_RETRIES] : c->site.default_retries;
    if (retries > 0) {
        json_object_set_new(norm, "retries", json_integer(retries));
        json_object_set_new(norm, "retry_backoff", json_integer(num[SL_JS_RETRY_BACKOFF]));
    }
    for (int i = SL_JS_MAIL_TYPE; i <= SL_JS_MAIL_USER; i++)
        if (val[i])
            json_object_set_new(norm, sl_jobspec_fields[i].name, json_deep_copy(val[i]));
    /* The node fields and the rest only where given, so that every other
     * job's spec reads as before. */
    for (int i = SL_JS_NODES; i <= SL_JS_OPEN_MODE; i++) {
        if (!val[i] || json_is_false(val[i]))
            continue;
        if (i == SL_JS_NODELIST || i == SL_JS_EXCLUDE)
            json_object_set_new(norm, sl_jobspec_fields[i].name, model_list(val[i]));
        else if (i == SL_JS_MEM_PER_GPU)
            json_object_set_new(norm, "mem_per_gpu", qty_json(num[i], SL_QTY_MEM));
        else
            json_object_set_new(norm, sl_jobspec_fields[i].name, json_deep_copy(val[i]));
    }
    if (rname)
        json_object_set_new(norm, "reservation", json_string(rname));
    if (val[SL_JS_SLURM] && json_object_size(val[SL_JS_SLURM]))
        json_object_set_new(norm, "slurm", json_deep_copy(val[SL_JS_SLURM]));
    for (int i = SL_JS_NAMESPACE; i <= SL_JS_CPU_LIMIT; i++)
        if (val[i])
            json_object_set_new(norm, sl_jobspec_fields[i].name, json_deep_copy(val[i]));

    ctl_job_t *j = sl_xcalloc(1, sizeof *j);
    j->spec = norm;
    j->retries = (int32_t)json_integer_value(json_object_get(norm, "retries"));
    j->tenant = tenant;
    j->state = CTL_JOB_PENDING;
    j->start_us = j->end_us = -1;
    fill_core(c, j, &js);
    j->core.tenant = tenant;
    sl_task_req_t check = j->core.task;
    check.pool = -1;
    if (sl_task_req_check(&check, err, sizeof err) < 0) {
        ctl_job_free(j);
        return bad(fe, 400, "invalid_field", NULL, "%s", err);
    }
    return j;
}

/* Why a name could not be interned for a job: rc is what the intern
 * returned (SL_ENOSPC: the job share is full; SL_ERANGE: the table). */
static void intern_err(int rc, bool model, const char *name, char *err, size_t errlen) {
    const char *field = model ? "gpu_models" : "pool";
    if (rc == SL_ENOSPC && model)
        snprintf(err, errlen, "%s: \"%s\": no node has this model and jobs already name %d "
                 "models no node has (the most); name a model a node has", field, name,
                 SL_MAX_JOB_MODELS);
    else if (rc == SL_ENOSPC)
        snprintf(err, errlen, "%s: \"%s\": no node is in this pool and jobs already name %d "
                 "pools no node is in (the most); name a pool a node is in", field, name,
                 SL_MAX_JOB_POOLS);
    else if (model)
        snprintf(err, errlen, "%s: \"%s\" is not a GPU model of this cluster, and it has no "
                 "room for another (at most %d models)", field, name, SL_MAX_MODELS);
    else
        snprintf(err, errlen, "%s: \"%s\" is not a pool of this cluster, and it has no room "
                 "for another (at most %d pools)", field, name, SL_MAX_POOLS);
}

int ctl_job_core_spec(ctl_t *c, ctl_job_t *j, char *err, size_t errlen) {
    sl_job_spec_t *cs = &j->core;
    json_t *s = j->spec;
    ctl_job_release_names(c, j); /* a second call takes them afresh */
    /* A job read back from the store was acknowledged before, perhaps
     * before the job share existed: it takes its names past the share
     * rather than be dropped (the log says so), and the share counts them
     * until it ends. A submission keeps to the share, as names_fit did. */
    bool stored = cs->task.pool != POOL_UNRESOLVED;
    bool past_share = false;
    if (stored) {
        /* Its core request is filled from the stored spec, through the
         * same table as a submission. */
        sl_jobspec_t js;
        const char *field;
        char msg[280];
        if (sl_jobspec_parse(s, &js, &field, msg, sizeof msg) < 0) {
            snprintf(err, errlen, "%s%s%s", field ? field : "", field ? ": " : "", msg);
            return -1;
        }
        fill_core(c, j, &js);
    }
    cs->id = j->id;
    cs->tenant = j->tenant;
    cs->submit_us = j->submit_us;
    /* The class by name (a class no longer configured, or no longer
     * open to the job's tenant, leaves the job in class 0, with the
     * priority it was given: it preempts nothing). */
    const char *pcn = json_string_value(json_object_get(s, "priority_class"));
    int pcid = pcn ? sl_sched_class_find(c->sched, pcn) : 0;
    const ctl_prio_class_t *pcc = ctl_config_prio_class(&c->cfg, pcn);
    char why[SL_NAME_MAX + 200];
    if (pcid > 0 && pcc &&
        ctl_prio_class_tenant_ok(pcc, sl_sched_tenant_name(c->sched, j->tenant), why,
                                 sizeof why) < 0) {
        sl_log(SL_LOG_WARN, "store", "job=%llu keeps its priority but not its class: %s",
               (unsigned long long)j->id, why);
        pcid = 0;
    }
    cs->prio_class = pcid > 0 ? pcid : 0;
    /* The reservation by name; one that no longer exists (deleted, or
     * ended while sluiced was down) refuses the job here. */
    const char *rn = json_string_value(json_object_get(s, "reservation"));
    cs->resv = 0;
    if (rn) {
        int rid = sl_sched_resv_find(c->sched, rn);
        if (rid < 0) {
            snprintf(err, errlen, "reservation: \"%s\" no longer exists", rn);
            return -1;
        }
        cs->resv = rid;
    }
    sl_task_req_t *r = &cs->task;
    r->model_mask = 0;
    r->pool = -1;
    r->cons = NULL;
    j->names_held = true; /* from here on, ctl_job_release_names gives back what is in r */
    int32_t *row = name_row(c, j->tenant, true); /* the tenant's part of the share */
    size_t i;
    json_t *m;
    json_t *models = model_list(json_object_get(s, "gpu_models"));
    json_array_foreach(models, i, m) {
        const char *name = json_string_value(m);
        past_share |= stored && sl_cluster_model_find(c->cl, name) < 0 &&
                      sl_cluster_model_job_only_count(c->cl) >= SL_MAX_JOB_MODELS;
        int id = sl_cluster_model_intern_job(c->cl, name, stored);
        if (id < 0) {
            intern_err(id, true, name, err, errlen);
            json_decref(models);
            goto fail;
        }
        if (r->model_mask & (1ull << id)) {
            sl_cluster_model_release_job(c->cl, id); /* named twice: one reference per bit */
            continue;
        }
        r->model_mask |= 1ull << id;
        if (row)
            row[id]++;
    }
    json_decref(models);
    const char *q = json_string_value(json_object_get(s, "pool"));
    if (q) {
        past_share |= stored && sl_cluster_pool_find(c->cl, q) < 0 &&
                      sl_cluster_pool_job_only_count(c->cl) >= SL_MAX_JOB_POOLS;
        int id = sl_cluster_pool_intern_job(c->cl, q, stored);
        if (id < 0) {
            intern_err(id, false, q, err, errlen);
            goto fail;
        }
        r->pool = id;
        if (row)
            row[SL_MAX_MODELS + id]++;
    }
    char cf[32], cmsg[280];
    if (constraint_of(c, s, &r->cons, cf, sizeof cf, cmsg, sizeof cmsg) < 0) {
        snprintf(err, errlen, "%s: %s", cf, cmsg);
        goto fail;
    }
    if (sl_task_req_check(r, err, errlen) < 0)
        goto fail;
    if (past_share)
        sl_log(SL_LOG_WARN, "store",
               "job=%llu kept past the job share: jobs now name %zu GPU models and %zu pools no "
               "node has (new submissions may name at most %d and %d); it was accepted before",
               (unsigned long long)j->id, sl_cluster_model_job_only_count(c->cl),
               sl_cluster_pool_job_only_count(c->cl), SL_MAX_JOB_MODELS, SL_MAX_JOB_POOLS);
    return 0;
fail:
    /* Nothing taken on failure: give back the names interned so far. */
    ctl_job_release_names(c, j);
    return -1;
}

void ctl_job_release_names(ctl_t *c, ctl_job_t *j) {
    if (!j->names_held)
        return;
    sl_task_req_t *r = &j->core.task;
    int32_t *row = name_row(c, j->tenant, false);
    for (int32_t id = 0; id < SL_MAX_MODELS; id++) {
        if (!(r->model_mask & (1ull << id)))
            continue;
        sl_cluster_model_release_job(c->cl, id);
        if (row)
            row[id]--;
    }
    if (r->pool >= 0) {
        sl_cluster_pool_release_job(c->cl, r->pool);
        if (row)
            row[SL_MAX_MODELS + r->pool]--;
    }
    sl_cluster_constraint_release(c->cl, r->cons);
    r->cons = NULL;
    j->names_held = false;
}
