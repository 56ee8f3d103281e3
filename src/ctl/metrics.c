/*
 * metrics.c - GET /metrics in the Prometheus text format (0.0.4).
 *
 * One table declares every metric (name, type, help, writer); it drives
 * both the scrape output and `sluiced --help`. Counters come from
 * ctl->n; gauges are computed at scrape time from the core and the job
 * table (O(jobs in memory + nodes + tenants) per scrape).
 */
#include <stdio.h>
#include <string.h>

#include "eff.h"
#include "metrics.h"

typedef void (*metric_fn)(ctl_t *c, ctl_buf_t *b, const char *name);

typedef struct metric {
    const char *name;
    const char *type;
    const char *help;
    metric_fn write;
} metric_t;

static void sample(ctl_buf_t *b, const char *name, const char *lk, const char *lv) {
    ctl_buf_puts(b, name);
    if (lk) {
        ctl_buf_putc(b, '{');
        ctl_buf_puts(b, lk);
        ctl_buf_puts(b, "=\"");
        for (const char *p = lv; *p; p++) {
            if (*p == '"' || *p == '\\')
                ctl_buf_putc(b, '\\');
            if (*p == '\n') {
                ctl_buf_puts(b, "\\n");
                continue;
            }
            ctl_buf_putc(b, *p);
        }
        ctl_buf_puts(b, "\"}");
    }
    ctl_buf_putc(b, ' ');
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
    static void fn(ctl_t *c, ctl_buf_t *b, const char *name) {    \
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
#undef COUNTER

static void m_commits(ctl_t *c, ctl_buf_t *b, const char *name) {
    u64_line(b, name, c->store.commits);
}

static void m_commit_s(ctl_t *c, ctl_buf_t *b, const char *name) {
    secs_line(b, name, c->store.commit_us);
}

static void m_cycle_s(ctl_t *c, ctl_buf_t *b, const char *name) {
    secs_line(b, name, c->n.cycle_us);
}

static void m_jobs(ctl_t *c, ctl_buf_t *b, const char *name) {
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

static void m_nodes(ctl_t *c, ctl_buf_t *b, const char *name) {
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

static void m_capacity(ctl_t *c, ctl_buf_t *b, const char *name) {
    sl_res_t total, free_;
    sl_cluster_capacity(c->cl, &total, &free_);
    res_lines(b, name, total);
}

static void m_allocated(ctl_t *c, ctl_buf_t *b, const char *name) {
    sl_res_t total, free_;
    sl_cluster_capacity(c->cl, &total, &free_);
    res_lines(b, name, sl_res_sub(total, free_));
}

static void m_share(ctl_t *c, ctl_buf_t *b, const char *name) {
    for (size_t i = 0; i < sl_sched_tenant_count(c->sched); i++) {
        sample(b, name, "tenant", sl_sched_tenant_name(c->sched, (int32_t)i));
        ctl_buf_double(b, sl_sched_tenant_share(c->sched, (int32_t)i));
        ctl_buf_putc(b, '\n');
    }
}

static void m_tenant_gpus(ctl_t *c, ctl_buf_t *b, const char *name) {
    for (size_t i = 0; i < sl_sched_tenant_count(c->sched); i++) {
        sample(b, name, "tenant", sl_sched_tenant_name(c->sched, (int32_t)i));
        ctl_buf_milli(b, sl_sched_tenant_usage(c->sched, (int32_t)i).gpu_milli);
        ctl_buf_putc(b, '\n');
    }
}

static void m_queue(ctl_t *c, ctl_buf_t *b, const char *name) {
    u64_line(b, name, sl_sched_pending_count(c->sched));
}

/* One sample per port of a ctl_port_counters_t field (listen.h). */
#define PORT_METRIC(fn, field)                                   \
    static void fn(ctl_t *c, ctl_buf_t *b, const char *name) {   \
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

static void m_replies_refused(ctl_t *c, ctl_buf_t *b, const char *name) {
    u64_line(b, name, c->n.replies_refused);
}

static void m_uptime(ctl_t *c, ctl_buf_t *b, const char *name) {
    secs_line(b, name, (uint64_t)(ctl_mono_us() - c->started_mono_us));
}

/* Per-job efficiency gauges (eff.c), for running jobs only: one series per
 * running job and family, so the cardinality follows the running jobs and
 * a finished job's series go with it (its figures stay in job_eff and the
 * API). Written: field 0 mean utilisation, 1 GPU memory peak, 2 memory peak. */
static void job_eff_lines(ctl_t *c, ctl_buf_t *b, const char *name, int field) {
    size_t it = 0;
    for (const sl_hash_entry_t *e; (e = sl_hash_next(&c->jobs, &it)) != NULL;) {
        const ctl_job_t *j = e->val;
        ctl_eff_t ef;
        if (j->state != CTL_JOB_RUNNING || !ctl_eff_job(j, &ef)) continue;
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

static void m_job_gpu_util(ctl_t *c, ctl_buf_t *b, const char *name) {
    job_eff_lines(c, b, name, 0);
}

static void m_job_gpu_mem_peak(ctl_t *c, ctl_buf_t *b, const char *name) {
    job_eff_lines(c, b, name, 1);
}

static void m_job_mem_peak(ctl_t *c, ctl_buf_t *b, const char *name) {
    job_eff_lines(c, b, name, 2);
}

static const metric_t metrics[] = {
    {"sluice_jobs", "gauge",
     "Jobs held in memory by state (finished ones only within job_retention and max_finished_jobs).",
     m_jobs},
    {"sluice_queue_length", "gauge", "Jobs waiting in the scheduler's queue.", m_queue},
    {"sluice_nodes", "gauge", "Nodes by state.", m_nodes},
    {"sluice_capacity", "gauge", "Capacity of up and draining nodes.", m_capacity},
    {"sluice_allocated", "gauge", "Resources held by running tasks.", m_allocated},
    {"sluice_tenant_dominant_share", "gauge", "Weighted DRF dominant share of each tenant.", m_share},
    {"sluice_tenant_gpus", "gauge", "GPUs held by each tenant's running tasks.", m_tenant_gpus},
    {"sluice_http_requests_total", "counter", "HTTP requests received.", m_http},
    {"sluice_http_errors_total", "counter", "HTTP requests answered with an error.", m_http_err},
    {"sluice_submissions_total", "counter", "Jobs accepted.", m_submissions},
    {"sluice_db_commits_total", "counter", "SQLite transactions committed (group commits).", m_commits},
    {"sluice_db_commit_seconds_total", "counter", "Time spent in COMMIT (fsync).", m_commit_s},
    {"sluice_sched_cycles_total", "counter", "Scheduling cycles run.", m_cycles},
    {"sluice_sched_cycle_seconds_total", "counter", "Time spent in scheduling cycles.", m_cycle_s},
    {"sluice_jobs_started_total", "counter", "Jobs started by the scheduler.", m_started},
    {"sluice_tasks_launched_total", "counter", "Launch messages sent to agents.", m_launched},
    {"sluice_tasks_ended_total", "counter", "Tasks that exited, failed to launch or were lost.", m_exited},
    {"sluice_node_failures_total", "counter", "Nodes declared down.", m_node_fail},
    {"sluice_requeues_total", "counter", "Jobs requeued after a node failure.", m_requeues},
    {"sluice_agent_messages_total", "counter", "Messages received from agents.", m_agent_msgs},
    {"sluice_jobs_forgotten_total", "counter",
     "Finished jobs dropped from memory (still in the database).", m_forgotten},
    {"sluice_connections", "gauge", "Connections open, by port (api, agent).", m_conns},
    {"sluice_connections_refused_total", "counter",
     "Connections closed at once: over max_connections or max_connections_per_peer, none idle to evict.",
     m_conns_refused},
    {"sluice_connections_evicted_total", "counter",
     "Idle connections closed to make room for a new one.", m_conns_evicted},
    {"sluice_accept_errors_total", "counter",
     "accept() failures (EMFILE, ENFILE, ENOBUFS...), each pausing the port.", m_accept_errors},
    {"sluice_http_replies_refused_total", "counter",
     "Replies refused with 503 because unread replies filled limits.reply_buffer.", m_replies_refused},
    {"sluice_uptime_seconds", "gauge", "Seconds since sluiced started.", m_uptime},
    {"sluice_job_gpu_utilization_ratio", "gauge",
     "Mean GPU utilisation of a running job so far, over its GPUs and readings (agents' NVML).",
     m_job_gpu_util},
    {"sluice_job_gpu_memory_peak_bytes", "gauge",
     "Most GPU memory any GPU of a running job has used so far.", m_job_gpu_mem_peak},
    {"sluice_job_memory_peak_bytes", "gauge",
     "Most memory any task of a running job has used so far (its cgroup).", m_job_mem_peak},
};

void ctl_metrics_write(ctl_t *c, ctl_buf_t *b) {
    for (size_t i = 0; i < sizeof metrics / sizeof metrics[0]; i++) {
        const metric_t *m = &metrics[i];
        ctl_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", m->name, m->help, m->name, m->type);
        m->write(c, b, m->name);
    }
}

void ctl_metrics_print_help(void) {
    for (size_t i = 0; i < sizeof metrics / sizeof metrics[0]; i++)
        printf("  %-34s %-7s %s\n", metrics[i].name, metrics[i].type, metrics[i].help);
}
