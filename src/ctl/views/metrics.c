/*
 * metrics.c - GET /metrics in the Prometheus text format (0.0.4).
 *
 * One table declares every metric (name, type, help, writer); it drives
 * both the scrape output and `sluiced --help`, and docs/metrics.md
 * describes each family. Counters come from ctl->n and ctl->obs (obs.h);
 * gauges are computed at scrape time from the core and the job table.
 *
 * Cost per scrape: O(jobs in memory + node classes + tenants log tenants),
 * plus, for the fragmentation gauge, O(pending jobs log pending jobs) to
 * gather the pending task shapes and O(classes * CTL_FRAG_SHAPES) for the
 * FGD measure (bench/metrics_scrape.py: 10,000 jobs on 1,000 nodes).
 * Every label but "state", "resource", "port" and "le" is a configured
 * tenant's name, so the number of series is fixed by the configuration.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/notify.h"
#include "domain/eff.h"
#include "views/health_view.h"
#include "views/metrics.h"
#include "ha/ha.h"

/* Writes a family's samples; only >= 0 keeps the series of that tenant
 * alone (families of scope M_TENANT), -1 writes every tenant's. */
typedef void (*metric_fn)(ctl_t *c, ctl_buf_t *b, const char *name, int32_t only);

/* Who sees a family (docs/metrics.md, "Who sees what"): the admin and the
 * monitoring token see every family; a tenant token sees the M_TENANT
 * families (its own tenant's series only) and the M_PUBLIC ones, which
 * describe the cluster's hardware and the daemon's age, nobody's use. */
enum { M_TENANT = 0, M_PUBLIC, M_CLUSTER };

typedef struct metric {
    const char *name;
    const char *type;
    const char *help;
    metric_fn write;
    int scope;      /* M_TENANT, M_PUBLIC or M_CLUSTER */
} metric_t;

/* k="v" with v escaped as the text format asks (backslash, quote, newline). */
static void label(ctl_buf_t *b, const char *k, const char *v) {
    ctl_buf_puts(b, k);
    ctl_buf_puts(b, "=\"");
    for (const char *p = v; *p; p++) {
        if (*p == '"' || *p == '\\')
            ctl_buf_putc(b, '\\');
        if (*p == '\n') {
            ctl_buf_puts(b, "\\n");
            continue;
        }
        ctl_buf_putc(b, *p);
    }
    ctl_buf_putc(b, '"');
}

static void sample(ctl_buf_t *b, const char *name, const char *lk, const char *lv) {
    ctl_buf_puts(b, name);
    if (lk) {
        ctl_buf_putc(b, '{');
        label(b, lk, lv);
        ctl_buf_putc(b, '}');
    }
    ctl_buf_putc(b, ' ');
}

/* name<suffix>{k1="v1",k2="v2"} and a space. */
static void sample2(ctl_buf_t *b, const char *name, const char *suffix, const char *k1,
                    const char *v1, const char *k2, const char *v2) {
    ctl_buf_puts(b, name);
    ctl_buf_puts(b, suffix);
    ctl_buf_putc(b, '{');
    label(b, k1, v1);
    if (k2) {
        ctl_buf_putc(b, ',');
        label(b, k2, v2);
    }
    ctl_buf_puts(b, "} ");
}

/* Whether tenant i's series are left out of a scrape for tenant only. */
static bool skip(int32_t only, size_t i) {
    return only >= 0 && (size_t)only != i;
}

static void u64_line(ctl_buf_t *b, const char *name, uint64_t v) {
    sample(b, name, NULL, NULL);
    ctl_buf_u64(b, v);
    ctl_buf_putc(b, '\n');
}

static void secs_line(ctl_buf_t *b, const char *name, uint64_t us) {
    sample(b, name, NULL, NULL);
    ctl_buf_time(b, (int64_t)us);
    ctl_buf_putc(b, '\n');
}

#define COUNTER(fn, field)                                        \
    static void fn(ctl_t *c, ctl_buf_t *b, const char *name, int32_t only) {\
        u64_line(b, name, c->n.field);                            \
    }
COUNTER(m_http, http_requests)
COUNTER(m_http_err, http_errors)
COUNTER(m_submissions, submissions)
COUNTER(m_cycles, cycles)
COUNTER(m_started, jobs_started)
COUNTER(m_launched, tasks_launched)
COUNTER(m_exited, tasks_exited)
COUNTER(m_node_fail, node_failures)
COUNTER(m_requeues, requeues)
COUNTER(m_agent_msgs, agent_messages)
COUNTER(m_forgotten, jobs_forgotten)
COUNTER(m_retries, retries)
#undef COUNTER

/* The notifier's counters (base/notify.h); zeros without one. */
static ctl_notify_stats_t notify_stats(ctl_t *c) {
    ctl_notify_stats_t st = {0};
    if (c->notifier)
        ctl_notifier_stats(c->notifier, &st);
    return st;
}
#define NOTIFY(fn, field)                                             \
    static void fn(ctl_t *c, ctl_buf_t *b, const char *name, int32_t only) { \
        (void)only;                                                   \
        u64_line(b, name, notify_stats(c).field);                     \
    }
NOTIFY(m_notify_delivered, delivered)
NOTIFY(m_notify_failed, failed)
NOTIFY(m_notify_dropped, dropped)
NOTIFY(m_notify_queued, queued)
#undef NOTIFY

static void m_commits(ctl_t *c, ctl_buf_t *b, const char *name, int32_t only) {
    ctl_store_stats_t st;
    ctl_store_stats(c->store, &st);
    u64_line(b, name, st.commits);
}

static void m_commit_s(ctl_t *c, ctl_buf_t *b, const char *name, int32_t only) {
    ctl_store_stats_t st;
    ctl_store_stats(c->store, &st);
    secs_line(b, name, st.commit_us);
}

static void m_cycle_s(ctl_t *c, ctl_buf_t *b, const char *name, int32_t only) {
    secs_line(b, name, c->n.cycle_us);
}

static void m_jobs(ctl_t *c, ctl_buf_t *b, const char *name, int32_t only) {
    uint64_t count[CTL_JOB_NSTATES] = {0};
    size_t it = 0;
    for (const sl_hash_entry_t *e; (e = sl_hash_next(&c->jobs, &it)) != NULL;)
        count[((const ctl_job_t *)e->val)->state]++;
    for (int s = 0; s < CTL_JOB_NSTATES; s++) {
        sample(b, name, "state", ctl_job_state_name((ctl_job_state_t)s));
        ctl_buf_u64(b, count[s]);
        ctl_buf_putc(b, '\n');
    }
}

static void m_nodes(ctl_t *c, ctl_buf_t *b, const char *name, int32_t only) {
    uint64_t count[3] = {0};
    for (size_t i = 0; i < c->nnodes; i++) {
        const sl_node_t *nd = sl_cluster_node(c->cl, (uint32_t)i);
        if (nd && (unsigned)nd->state < 3)
            count[nd->state]++;
    }
    for (int s = 0; s < 3; s++) {
        sample(b, name, "state", sl_node_state_name((sl_node_state_t)s));
        ctl_buf_u64(b, count[s]);
        ctl_buf_putc(b, '\n');
    }
}

static void res_lines(ctl_buf_t *b, const char *name, sl_res_t r) {
    sample(b, name, "resource", "cpus");
    ctl_buf_milli(b, r.cpu_milli);
    ctl_buf_putc(b, '\n');
    sample(b, name, "resource", "memory_bytes");
    ctl_buf_i64(b, r.mem_bytes);
    ctl_buf_putc(b, '\n');
    sample(b, name, "resource", "gpus");
    ctl_buf_milli(b, r.gpu_milli);
    ctl_buf_putc(b, '\n');
}

static void m_capacity(ctl_t *c, ctl_buf_t *b, const char *name, int32_t only) {
    sl_res_t total, free_;
    sl_cluster_capacity(c->cl, &total, &free_);
    res_lines(b, name, total);
}

static void m_allocated(ctl_t *c, ctl_buf_t *b, const char *name, int32_t only) {
    sl_res_t total, free_;
    sl_cluster_capacity(c->cl, &total, &free_);
    res_lines(b, name, sl_res_sub(total, free_));
}

static void m_share(ctl_t *c, ctl_buf_t *b, const char *name, int32_t only) {
    for (size_t i = 0; i < sl_sched_tenant_count(c->sched); i++) {
        if (skip(only, i))
            continue;
        sample(b, name, "tenant", sl_sched_tenant_name(c->sched, (int32_t)i));
        ctl_buf_double(b, sl_sched_tenant_share(c->sched, (int32_t)i));
        ctl_buf_putc(b, '\n');
    }
}

/* One sample a tenant: the GPUs of what get says it holds or asks for. */
static void tenant_gpu_lines(ctl_t *c, ctl_buf_t *b, const char *name, int32_t only,
                             sl_res_t (*get)(const sl_sched_t *, int32_t)) {
    for (size_t i = 0; i < sl_sched_tenant_count(c->sched); i++) {
        if (skip(only, i))
            continue;
        sample(b, name, "tenant", sl_sched_tenant_name(c->sched, (int32_t)i));
        ctl_buf_milli(b, get(c->sched, (int32_t)i).gpu_milli);
        ctl_buf_putc(b, '\n');
    }
}

static void m_tenant_gpus(ctl_t *c, ctl_buf_t *b, const char *name, int32_t only) {
    tenant_gpu_lines(c, b, name, only, sl_sched_tenant_usage);
}

static void m_queue(ctl_t *c, ctl_buf_t *b, const char *name, int32_t only) {
    u64_line(b, name, sl_sched_pending_count(c->sched));
}

/* One sample per port of a ctl_port_counters_t field (listen.h). */
#define PORT_METRIC(fn, field)                                   \
    static void fn(ctl_t *c, ctl_buf_t *b, const char *name, int32_t only) {\
        sample(b, name, "port", "api");                          \
        ctl_buf_u64(b, c->n.api_port.field);                     \
        ctl_buf_putc(b, '\n');                                   \
        sample(b, name, "port", "agent");                        \
        ctl_buf_u64(b, c->n.agent_port.field);                   \
        ctl_buf_putc(b, '\n');                                   \
    }
PORT_METRIC(m_conns, conns)
PORT_METRIC(m_conns_refused, refused)
PORT_METRIC(m_conns_evicted, evicted)
PORT_METRIC(m_accept_errors, accept_errors)
#undef PORT_METRIC

static void m_replies_refused(ctl_t *c, ctl_buf_t *b, const char *name, int32_t only) {
    u64_line(b, name, c->n.replies_refused);
}

static void m_uptime(ctl_t *c, ctl_buf_t *b, const char *name, int32_t only) {
    secs_line(b, name, (uint64_t)(ctl_mono_us() - c->started_mono_us));
}

/* ---- high availability (docs/ha.md); one controller: its own figures ---- */

static void m_ha_leader(ctl_t *c, ctl_buf_t *b, const char *name, int32_t only) {
    ctl_buf_printf(b, "%s %d\n", name, c->ha == NULL || c->ha->leader ? 1 : 0);
}

static void m_ha_epoch(ctl_t *c, ctl_buf_t *b, const char *name, int32_t only) {
    ctl_buf_printf(b, "%s %llu\n", name, (unsigned long long)c->epoch);
}

static void m_ha_changes(ctl_t *c, ctl_buf_t *b, const char *name, int32_t only) {
    ctl_buf_printf(b, "%s %llu\n", name, (unsigned long long)(c->ha ? c->ha->leader_changes : 0));
}

static void m_ha_index(ctl_t *c, ctl_buf_t *b, const char *name, int32_t only) {
    ctl_buf_printf(b, "%s %llu\n", name, (unsigned long long)(c->ha ? c->ha->applied : 0));
}

static void hist_plain(ctl_buf_t *b, const char *name, const ctl_hist_t *h);

static void m_ha_commit(ctl_t *c, ctl_buf_t *b, const char *name, int32_t only) {
    static const ctl_hist_t none;
    hist_plain(b, name, c->ha ? &c->ha->commit : &none);
}

/* The leader's log writer (logw.h); zeros elsewhere. */
static ctl_logw_stats_t logw_stats(const ctl_t *c) {
    ctl_logw_stats_t st = {0};
    if (c->ha && c->ha->logw)
        ctl_logw_stats(c->ha->logw, &st);
    return st;
}

static void m_ha_durable(ctl_t *c, ctl_buf_t *b, const char *name, int32_t only) {
    uint64_t d = c->ha && c->ha->logw ? ctl_logw_durable(c->ha->logw) : c->ha ? c->ha->applied : 0;
    ctl_buf_printf(b, "%s %llu\n", name, (unsigned long long)d);
}

static void m_ha_txns(ctl_t *c, ctl_buf_t *b, const char *name, int32_t only) {
    ctl_buf_printf(b, "%s %llu\n", name, (unsigned long long)logw_stats(c).txns);
}

static void m_ha_retries(ctl_t *c, ctl_buf_t *b, const char *name, int32_t only) {
    ctl_buf_printf(b, "%s %llu\n", name, (unsigned long long)logw_stats(c).retries);
}

/* ---- throughput, delays, fairness, allocation, fragmentation ---- */

static void m_completed(ctl_t *c, ctl_buf_t *b, const char *name, int32_t only) {
    for (size_t i = 0; i < c->obs.ntenants; i++) {
        if (skip(only, i))
            continue;
        const char *tn = sl_sched_tenant_name(c->sched, (int32_t)i);
        for (int st = 0; st < CTL_OBS_NFINAL; st++) {
            sample2(b, name, "", "tenant", tn, "state", ctl_obs_final_name(st));
            ctl_buf_u64(b, c->obs.tenants[i].completed[st]);
            ctl_buf_putc(b, '\n');
        }
    }
}

/* One histogram per tenant: cumulative buckets, +Inf, _sum, _count. */
static void hist_lines(ctl_t *c, ctl_buf_t *b, const char *name, int32_t only, size_t off) {
    for (size_t i = 0; i < c->obs.ntenants; i++) {
        if (skip(only, i))
            continue;
        const char *tn = sl_sched_tenant_name(c->sched, (int32_t)i);
        const ctl_hist_t *h = (const ctl_hist_t *)((const char *)&c->obs.tenants[i] + off);
        uint64_t cum = 0;
        for (int k = 0; k < CTL_HIST_NB; k++) {
            cum += h->bucket[k];
            sample2(b, name, "_bucket", "tenant", tn, "le", ctl_hist_le_text[k]);
            ctl_buf_u64(b, cum);
            ctl_buf_putc(b, '\n');
        }
        sample2(b, name, "_bucket", "tenant", tn, "le", "+Inf");
        ctl_buf_u64(b, h->count);
        ctl_buf_putc(b, '\n');
        sample2(b, name, "_sum", "tenant", tn, NULL, NULL);
        ctl_buf_time(b, h->sum_us);
        ctl_buf_putc(b, '\n');
        sample2(b, name, "_count", "tenant", tn, NULL, NULL);
        ctl_buf_u64(b, h->count);
        ctl_buf_putc(b, '\n');
    }
}

/* A histogram without labels: cumulative buckets, +Inf, _sum, _count. */
static void hist_plain(ctl_buf_t *b, const char *name, const ctl_hist_t *h) {
    uint64_t cum = 0;
    for (int k = 0; k < CTL_HIST_NB; k++) {
        cum += h->bucket[k];
        sample2(b, name, "_bucket", "le", ctl_hist_le_text[k], NULL, NULL);
        ctl_buf_u64(b, cum);
        ctl_buf_putc(b, '\n');
    }
    sample2(b, name, "_bucket", "le", "+Inf", NULL, NULL);
    ctl_buf_u64(b, h->count);
    ctl_buf_printf(b, "\n%s_sum ", name);
    ctl_buf_time(b, h->sum_us);
    ctl_buf_printf(b, "\n%s_count %llu\n", name, (unsigned long long)h->count);
}

static void m_node_failure(ctl_t *c, ctl_buf_t *b, const char *name, int32_t only) {
    hist_plain(b, name, &c->obs.node_failure);
}

static void m_queueing(ctl_t *c, ctl_buf_t *b, const char *name, int32_t only) {
    hist_lines(c, b, name, only, offsetof(ctl_tenant_obs_t, queueing));
}

static void m_scheduling(ctl_t *c, ctl_buf_t *b, const char *name, int32_t only) {
    hist_lines(c, b, name, only, offsetof(ctl_tenant_obs_t, scheduling));
}

/* The core's fairness figures (sluice/fair.h) over the tenants now; the
 * caller frees the array. O(tenants log tenants). */
static sl_fair_tenant_t *fairness(ctl_t *c, sl_fair_summary_t *sum) {
    size_t n = sl_sched_tenant_count(c->sched);
    sl_fair_tenant_t *f = sl_xmalloc((n ? n : 1) * sizeof *f);
    if (sl_sched_fairness(c->sched, f, n, sum) < 0) /* n is the count: cannot happen */
        *sum = (sl_fair_summary_t){0, 1.0, 1.0};
    return f;
}

static void m_drf_ratio(ctl_t *c, ctl_buf_t *b, const char *name, int32_t only) {
    sl_fair_summary_t sum;
    sl_free(fairness(c, &sum));
    sample(b, name, NULL, NULL);
    ctl_buf_double(b, sum.drf_ratio);
    ctl_buf_putc(b, '\n');
}

static void m_jain(ctl_t *c, ctl_buf_t *b, const char *name, int32_t only) {
    sl_fair_summary_t sum;
    sl_free(fairness(c, &sum));
    sample(b, name, NULL, NULL);
    ctl_buf_double(b, sum.jain);
    ctl_buf_putc(b, '\n');
}

static void m_deficit(ctl_t *c, ctl_buf_t *b, const char *name, int32_t only) {
    sl_fair_summary_t sum;
    sl_fair_tenant_t *f = fairness(c, &sum);
    for (size_t i = 0; i < sl_sched_tenant_count(c->sched); i++) {
        if (skip(only, i))
            continue;
        sample(b, name, "tenant", sl_sched_tenant_name(c->sched, (int32_t)i));
        ctl_buf_double(b, f[i].deficit);
        ctl_buf_putc(b, '\n');
    }
    sl_free(f);
}

static void m_gpu_alloc(ctl_t *c, ctl_buf_t *b, const char *name, int32_t only) {
    sl_res_t total, free_;
    sl_cluster_capacity(c->cl, &total, &free_);
    sample(b, name, NULL, NULL);
    ctl_buf_double(b, total.gpu_milli > 0
                          ? (double)(total.gpu_milli - free_.gpu_milli) / (double)total.gpu_milli
                          : 0.0);
    ctl_buf_putc(b, '\n');
}

/* The pending tasks' shapes with their task counts, for the FGD measure. */
typedef struct shape_count {
    sl_task_req_t req;
    int64_t n;
} shape_count_t;

#define CMP(x, y) if ((x) != (y)) return (x) < (y) ? -1 : 1
static int cmp_shape(const sl_task_req_t *a, const sl_task_req_t *b) {
    CMP(a->gpus, b->gpus);
    CMP(a->gpu_milli, b->gpu_milli);
    CMP(a->gpu_mem_bytes, b->gpu_mem_bytes);
    CMP(a->cpu_milli, b->cpu_milli);
    CMP(a->mem_bytes, b->mem_bytes);
    CMP(a->model_mask, b->model_mask);
    return 0;
}

/* Most tasks first; equal counts in shape order, so the choice is stable. */
static int cmp_count(const void *pa, const void *pb) {
    const shape_count_t *a = pa, *b = pb;
    CMP(b->n, a->n);
    return cmp_shape(&a->req, &b->req);
}
#undef CMP

static uint64_t shape_hash(const sl_task_req_t *r) {
    uint64_t h = sl_mix64((uint64_t)r->gpus ^ ((uint64_t)(uint32_t)r->gpu_milli << 32));
    h = sl_mix64(h ^ (uint64_t)r->gpu_mem_bytes);
    h = sl_mix64(h ^ (uint64_t)r->cpu_milli);
    h = sl_mix64(h ^ (uint64_t)r->mem_bytes);
    return sl_mix64(h ^ r->model_mask);
}

/*
 * The distinct shapes of the pending jobs' tasks with their task counts,
 * into *out (the caller frees it); returns how many. One pass over the
 * job table with an open-addressing table of the shapes seen: O(jobs).
 */
static size_t pending_shapes(ctl_t *c, shape_count_t **out) {
    size_t np = sl_sched_pending_count(c->sched), cap = 16, n = 0;
    while (cap < 2 * np)
        cap *= 2;
    uint32_t *slot = sl_xcalloc(cap, sizeof *slot); /* index + 1 into v; 0 = empty */
    shape_count_t *v = sl_xmalloc((np ? np : 1) * sizeof *v);
    size_t it = 0;
    for (const sl_hash_entry_t *e; (e = sl_hash_next(&c->jobs, &it)) != NULL;) {
        const ctl_job_t *j = e->val;
        if (j->state != CTL_JOB_PENDING || !j->in_core || n == np)
            continue;
        sl_task_req_t r = j->core.task;
        r.pool = -1; /* the measure ignores pools (workload.h) */
        size_t k = shape_hash(&r) & (cap - 1);
        while (slot[k] && cmp_shape(&v[slot[k] - 1].req, &r) != 0)
            k = (k + 1) & (cap - 1);
        if (!slot[k]) {
            v[n] = (shape_count_t){r, 0};
            slot[k] = (uint32_t)++n;
        }
        v[slot[k] - 1].n += j->core.ntasks;
    }
    sl_free(slot);
    *out = v;
    return n;
}

/*
 * FGD's fragmentation (workload.h: free GPU capacity that a task shape
 * cannot use, weighted by the shape's popularity) with the pending tasks
 * as the workload, over the GPU capacity. The CTL_FRAG_SHAPES most common
 * pending shapes (by task count) make the workload, which bounds the
 * measure's cost at O(classes * shapes); it is exact whenever fewer shapes
 * wait. Nothing pending: 0, since no waiting task is kept out of any free
 * GPU (the FGD paper measures against a workload; here that workload is
 * what waits, and an empty one leaves nothing stranded). The workload
 * object lives in c->obs across scrapes, so that its memo is allocated
 * once (workload.h; sl_workload_clear empties it in O(1)).
 */
#define CTL_FRAG_SHAPES 64

static void m_gpu_frag(ctl_t *c, ctl_buf_t *b, const char *name, int32_t only) {
    sl_res_t total, free_;
    sl_cluster_capacity(c->cl, &total, &free_);
    double frag = 0;
    if (sl_sched_pending_count(c->sched) > 0 && total.gpu_milli > 0) {
        shape_count_t *v;
        size_t m = pending_shapes(c, &v);
        if (m > CTL_FRAG_SHAPES)
            qsort(v, m, sizeof *v, cmp_count);
        if (c->obs.frag_wl == NULL)
            sl_workload_create(&c->obs.frag_wl);
        sl_workload_clear(c->obs.frag_wl);
        for (size_t i = 0; i < m && i < CTL_FRAG_SHAPES; i++)
            sl_workload_add(c->obs.frag_wl, &v[i].req, v[i].n);
        if (m > 0)
            frag = sl_frag_cluster(c->cl, c->obs.frag_wl) / (double)total.gpu_milli;
        sl_free(v);
    }
    sample(b, name, NULL, NULL);
    ctl_buf_double(b, frag);
    ctl_buf_putc(b, '\n');
}

static void m_pending_jobs(ctl_t *c, ctl_buf_t *b, const char *name, int32_t only) {
    for (size_t i = 0; i < sl_sched_tenant_count(c->sched); i++) {
        if (skip(only, i))
            continue;
        size_t pending = 0;
        sl_sched_tenant_jobs(c->sched, (int32_t)i, &pending, NULL);
        sample(b, name, "tenant", sl_sched_tenant_name(c->sched, (int32_t)i));
        ctl_buf_u64(b, pending);
        ctl_buf_putc(b, '\n');
    }
}

/* Per-job efficiency gauges (eff.c), for running jobs only: one series per
 * running job and family, so the cardinality follows the running jobs and
 * a finished job's series go with it (its figures stay in job_eff and the
 * API). Written: field 0 mean utilisation, 1 GPU memory peak, 2 memory peak. */
static void job_eff_lines(ctl_t *c, ctl_buf_t *b, const char *name, int32_t only, int field) {
    size_t it = 0;
    for (const sl_hash_entry_t *e; (e = sl_hash_next(&c->jobs, &it)) != NULL;) {
        const ctl_job_t *j = e->val;
        ctl_eff_t ef;
        if (j->state != CTL_JOB_RUNNING || (only >= 0 && j->tenant != only) || !ctl_eff_job(j, &ef))
            continue;
        double v = field == 0 ? ef.gpu_util_mean : field == 1 ? (double)ef.gpu_mem_peak
                                                              : (double)ef.mem_peak;
        if (v != v || v < 0) continue; /* unknown: no series, never an invented 0 */
        const char *tenant = j->tenant >= 0 ? sl_sched_tenant_name(c->sched, j->tenant) : "";
        ctl_buf_printf(b, "%s{job=\"%llu\",tenant=\"", name, (unsigned long long)j->id);
        for (const char *p = tenant ? tenant : ""; *p; p++) {
            if (*p == '"' || *p == '\\') ctl_buf_putc(b, '\\');
            ctl_buf_putc(b, *p);
        }
        ctl_buf_puts(b, "\"} ");
        if (field == 0)
            ctl_buf_printf(b, "%.4f", v);
        else
            ctl_buf_i64(b, (int64_t)v);
        ctl_buf_putc(b, '\n');
    }
}

static void m_pending_gpus(ctl_t *c, ctl_buf_t *b, const char *name, int32_t only) {
    tenant_gpu_lines(c, b, name, only, sl_sched_tenant_pending);
}

static void m_job_gpu_util(ctl_t *c, ctl_buf_t *b, const char *name, int32_t only) {
    job_eff_lines(c, b, name, only, 0);
}

static void m_job_gpu_mem_peak(ctl_t *c, ctl_buf_t *b, const char *name, int32_t only) {
    job_eff_lines(c, b, name, only, 1);
}

static void m_job_mem_peak(ctl_t *c, ctl_buf_t *b, const char *name, int32_t only) {
    job_eff_lines(c, b, name, only, 2);
}

/* ---- preemptions, drains and elastic sizes ---- */

/* Every configured tenant and cause, zeros included, so that rate() sees
 * each series from the start. */
static void m_preemptions(ctl_t *c, ctl_buf_t *b, const char *name, int32_t only) {
    for (size_t t = 0; t < sl_sched_tenant_count(c->sched); t++) {
        if (skip(only, t))
            continue;
        for (int k = 0; k < CTL_PREEMPT_NCAUSES; k++) {
            size_t i = t * CTL_PREEMPT_NCAUSES + (size_t)k;
            sample2(b, name, "", "tenant", sl_sched_tenant_name(c->sched, (int32_t)t), "reason",
                    ctl_preempt_cause_name((ctl_preempt_cause_t)k));
            ctl_buf_u64(b, i < c->npreempt_counts ? c->preempt_counts[i] : 0);
            ctl_buf_putc(b, '\n');
        }
    }
}

static const metric_t metrics[] = {
    {"sluice_jobs", "gauge",
     "Jobs held in memory by state (finished ones only within job_retention and max_finished_jobs).",
     m_jobs, M_CLUSTER},
    {"sluice_queue_length", "gauge", "Jobs waiting in the scheduler's queue.", m_queue, M_CLUSTER},
    {"sluice_nodes", "gauge", "Nodes by state.", m_nodes, M_PUBLIC},
    {"sluice_capacity", "gauge", "Capacity of up and draining nodes.", m_capacity, M_PUBLIC},
    {"sluice_allocated", "gauge", "Resources held by running tasks.", m_allocated, M_CLUSTER},
    {"sluice_tenant_dominant_share", "gauge", "Weighted DRF dominant share of each tenant.", m_share, M_TENANT},
    {"sluice_tenant_gpus", "gauge", "GPUs held by each tenant's running tasks.", m_tenant_gpus, M_TENANT},
    {"sluice_jobs_completed_total", "counter",
     "Jobs that completed, by tenant and final state (succeeded, failed, cancelled), since sluiced started.",
     m_completed, M_TENANT},
    {"sluice_job_queueing_delay_seconds", "histogram",
     "Time from submission to a job's first start, by tenant.", m_queueing, M_TENANT},
    {"sluice_job_scheduling_delay_seconds", "histogram",
     "Time the scheduling cycle that started a job took to decide (monotonic clock), by tenant.",
     m_scheduling, M_TENANT},
    {"sluice_drf_fairness_ratio", "gauge",
     "Min over backlogged tenants of held / weighted max-min fair dominant share, capped at 1 (1 = fair).",
     m_drf_ratio, M_CLUSTER},
    {"sluice_jain_fairness_index", "gauge",
     "Jain's index of held / fair dominant share over backlogged tenants (1 = equal).", m_jain, M_CLUSTER},
    {"sluice_tenant_share_deficit_ratio", "gauge",
     "Fair dominant share minus held dominant share of each tenant (positive = owed more).", m_deficit, M_CLUSTER},
    {"sluice_gpu_allocation_ratio", "gauge", "Allocated GPU capacity / GPU capacity of up and draining nodes.",
     m_gpu_alloc, M_CLUSTER},
    {"sluice_gpu_fragmentation_ratio", "gauge",
     "Free GPU capacity the pending tasks cannot use (FGD's measure) / GPU capacity; 0 when nothing waits.",
     m_gpu_frag, M_CLUSTER},
    {"sluice_tenant_pending_jobs", "gauge",
     "Jobs of each tenant in the scheduler's queue (not those held on dependencies or array limits).",
     m_pending_jobs, M_TENANT},
    {"sluice_tenant_pending_gpus", "gauge", "GPUs asked for by each tenant's pending jobs (all their tasks).",
     m_pending_gpus, M_TENANT},
    {"sluice_http_requests_total", "counter", "HTTP requests received.", m_http, M_CLUSTER},
    {"sluice_http_errors_total", "counter", "HTTP requests answered with an error.", m_http_err, M_CLUSTER},
    {"sluice_submissions_total", "counter", "Jobs accepted.", m_submissions, M_CLUSTER},
    {"sluice_db_commits_total", "counter", "SQLite transactions committed (group commits).", m_commits, M_CLUSTER},
    {"sluice_db_commit_seconds_total", "counter", "Time spent in COMMIT (fsync).", m_commit_s, M_CLUSTER},
    {"sluice_sched_cycles_total", "counter", "Scheduling cycles run.", m_cycles, M_CLUSTER},
    {"sluice_sched_cycle_seconds_total", "counter", "Time spent in scheduling cycles.", m_cycle_s, M_CLUSTER},
    {"sluice_jobs_started_total", "counter", "Jobs started by the scheduler.", m_started, M_CLUSTER},
    {"sluice_tasks_launched_total", "counter", "Launch messages sent to agents.", m_launched, M_CLUSTER},
    {"sluice_tasks_ended_total", "counter", "Tasks that exited, failed to launch or were lost.", m_exited, M_CLUSTER},
    {"sluice_node_failures_total", "counter", "Nodes declared down.", m_node_fail, M_CLUSTER},
    {"sluice_node_failure_handling_seconds", "histogram",
     "Time to handle a node declared down: mark it, lose its tasks, requeue or fail their jobs.",
     m_node_failure, M_CLUSTER},
    {"sluice_requeues_total", "counter", "Jobs requeued after a node failure or a preemption.", m_requeues, M_CLUSTER},
    {"sluice_job_retries_total", "counter",
     "Failed attempts of jobs with retries put back for another attempt.", m_retries, M_CLUSTER},
    {"sluice_notifications_delivered_total", "counter",
     "Job notifications delivered (notify.command exited 0, notify.webhook answered 2xx).",
     m_notify_delivered, M_CLUSTER},
    {"sluice_notifications_failed_total", "counter",
     "Job notification deliveries that failed (exit status, timeout, no answer).",
     m_notify_failed, M_CLUSTER},
    {"sluice_notifications_dropped_total", "counter",
     "Job notifications dropped because notify.queue was full.", m_notify_dropped, M_CLUSTER},
    {"sluice_notifications_queued", "gauge", "Job notifications waiting for delivery.",
     m_notify_queued, M_CLUSTER},
    {"sluice_preemptions_total", "counter",
     "Preemptions (whole jobs or elastic shrinks) of each tenant's jobs, by reason: priority, "
     "reclaim (fair share), drain (a node's drain deadline).", m_preemptions, M_TENANT},
    {"sluice_gpu_health", "gauge",
     "Health of each GPU that is not healthy or is fenced (0 healthy, 1 degraded, 2 unhealthy), with the reason; "
     "no series: healthy.",
     ctl_health_metric_gpu, M_PUBLIC},
    {"sluice_gpu_fenced", "gauge", "1 for each GPU fenced out of placement for a health fault (no series: not fenced).",
     ctl_health_metric_fenced, M_PUBLIC},
    {"sluice_gpu_faults_total", "counter", "XID events agents reported, by XID, since sluiced started.",
     ctl_health_metric_faults, M_PUBLIC},
    {"sluice_agent_messages_total", "counter", "Messages received from agents.", m_agent_msgs, M_CLUSTER},
    {"sluice_jobs_forgotten_total", "counter",
     "Finished jobs dropped from memory (still in the database).", m_forgotten, M_CLUSTER},
    {"sluice_connections", "gauge", "Connections open, by port (api, agent).", m_conns, M_CLUSTER},
    {"sluice_connections_refused_total", "counter",
     "Connections closed at once: over max_connections or max_connections_per_peer, none idle to evict.",
     m_conns_refused, M_CLUSTER},
    {"sluice_connections_evicted_total", "counter",
     "Idle connections closed to make room for a new one.", m_conns_evicted, M_CLUSTER},
    {"sluice_accept_errors_total", "counter",
     "accept() failures (EMFILE, ENFILE, ENOBUFS...), each pausing the port.", m_accept_errors, M_CLUSTER},
    {"sluice_http_replies_refused_total", "counter",
     "Replies refused with 503 because unread replies filled limits.reply_buffer.", m_replies_refused, M_CLUSTER},
    {"sluice_uptime_seconds", "gauge", "Seconds since sluiced started.", m_uptime, M_PUBLIC},
    {"sluice_ha_leader", "gauge", "1 on the controller that leads (a single controller always does).",
     m_ha_leader, M_CLUSTER},
    {"sluice_ha_epoch", "gauge", "The leader's epoch (in HA mode the etcd revision of its key).",
     m_ha_epoch, M_CLUSTER},
    {"sluice_ha_leader_changes_total", "counter", "Leaders this controller has seen elected (HA mode).",
     m_ha_changes, M_CLUSTER},
    {"sluice_ha_log_index", "gauge", "The last replicated log entry in this controller's file (HA mode).",
     m_ha_index, M_CLUSTER},
    {"sluice_ha_commit_seconds", "histogram",
     "etcd transaction time of each log write, sent to answered; its group commits' replies leave then (HA mode).",
     m_ha_commit, M_CLUSTER},
    {"sluice_ha_log_durable_index", "gauge",
     "The last log entry the leader knows is in etcd; replies and launches of later ones wait (HA mode).",
     m_ha_durable, M_CLUSTER},
    {"sluice_ha_log_transactions_total", "counter",
     "The leader's log writes that succeeded, each of one or more group commits (HA mode).", m_ha_txns,
     M_CLUSTER},
    {"sluice_ha_log_retries_total", "counter",
     "Log writes retried on the next etcd member: no answer within 200 ms, or a failed connection (HA mode).",
     m_ha_retries, M_CLUSTER},
    {"sluice_job_gpu_utilization_ratio", "gauge",
     "Mean GPU utilisation of a running job so far, over its GPUs and readings (agents' NVML).",
     m_job_gpu_util, M_TENANT},
    {"sluice_job_gpu_memory_peak_bytes", "gauge",
     "Most GPU memory any GPU of a running job has used so far.", m_job_gpu_mem_peak, M_TENANT},
    {"sluice_job_memory_peak_bytes", "gauge",
     "Most memory any task of a running job has used so far (its cgroup).", m_job_mem_peak, M_TENANT},
};

void ctl_metrics_write(ctl_t *c, ctl_buf_t *b, int32_t tenant) {
    for (size_t i = 0; i < sizeof metrics / sizeof metrics[0]; i++) {
        const metric_t *m = &metrics[i];
        if (tenant >= 0 && m->scope == M_CLUSTER)
            continue;
        ctl_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", m->name, m->help, m->name, m->type);
        m->write(c, b, m->name, m->scope == M_TENANT ? tenant : -1);
    }
}

void ctl_metrics_print_help(void) {
    static const char *const who[] = {"[tenant]", "[all]", "[cluster]"};
    for (size_t i = 0; i < sizeof metrics / sizeof metrics[0]; i++)
        printf("  %-36s %-9s %-9s %s\n", metrics[i].name, metrics[i].type, who[metrics[i].scope],
               metrics[i].help);
}
