/*
 * metrics.c - the agent's exporter (metrics.h, docs/metrics-agent.md).
 *
 * Sampling. A timer reads every GPU through NVML each sample_ms (gpu.c)
 * and keeps the last reading, so a scrape only formats what is there (a
 * scrape costs no NVML call, and many scrapers cost the node nothing
 * more) and the usage summaries have samples whether anyone scrapes or
 * not. Without NVML there are no readings, and no GPU series at all: a
 * number the agent did not measure is never exported.
 *
 * Attribution. Who holds a GPU is read from the tasks (the GPU indices and
 * tenant of each running task's launch) at each sample and each scrape:
 * O(tasks x GPUs each), a few hundred at most. A GPU held by several
 * tasks (GPU sharing) gets ONE series whose job and tenant labels list
 * the distinct holders, comma-separated in job id order ("12,15"): the
 * series per GPU stay one, so cardinality is bounded by the GPUs of the
 * node, and a sum over GPUs counts each GPU once. A free GPU has empty
 * job and tenant labels.
 *
 * Tasks. With enforcement on, each sample also reads every running
 * task's cgroup (agent_cgroup_task_stats: CPU time, memory in use and at
 * its peak, OOM kills), exported per task while it runs (one series per
 * running task and family) and kept for its summary. Where the cgroup
 * has no peak (cgroup v2 before memory.peak), the highest use sampled
 * stands in for it.
 *
 * Usage summaries. Per task (running, or ended and not yet acknowledged)
 * an accumulator adds, at each sample, the mean utilisation of the task's
 * GPUs (one sample), and keeps the highest utilisation and memory used of
 * any of them. A shared GPU's readings are the whole GPU's, counted for
 * each holder: NVML has no per-process utilisation that would split it.
 * Each heartbeat carries every accumulator as it stands (cumulative since
 * the agent began watching the task), so the controller keeps the latest
 * and a lost heartbeat costs nothing. Accumulators live in a list (a node
 * runs at most a few hundred tasks) and go once the task is forgotten.
 *
 * Job mapping (dcgm-exporter's --hpc-job-mapping-dir). For each GPU index
 * the directory holds a file named after the index that lists, one per
 * line, the ids of the jobs running on that GPU; a GPU no job holds has no
 * file. Each file is rewritten when its content changes (a launch, an end,
 * the re-adoption at start-up): written beside it as .INDEX.tmp, then
 * renamed over it, so a reader sees the old list or the new, never half.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "gpu.h"
#include "http.h"
#include "log.h"
#include "loop.h"
#include "metrics.h"

/* One task's usage so far (see the file header). */
typedef struct acc {
    struct acc *next;
    uint64_t job;
    int32_t task;
    int64_t attempt;            /* of the task's launch (-1: none): a new attempt starts anew */
    char cgroup[AGENT_CGROUP_NAME_MAX]; /* the task's cgroup name */
    int seen;                   /* the tasks still know it (sweep) */
    int64_t samples;
    double util_sum;            /* sum over samples of the mean over its GPUs */
    double util_peak;
    int64_t gmem_peak;          /* -1: never read */
    int64_t gmem_total;
    int holds_gpus;
    int has_cg;                 /* its cgroup was read */
    double cpu_s;
    int64_t mem_current;        /* bytes, at the last read */
    int64_t mem_peak;           /* bytes */
    int64_t oom_kills;
} acc_t;

/* Holders of one GPU, built from the tasks: job ids (distinct, in id
 * order, at most HOLDERS_MAX) and their tenants (distinct, in the order of
 * those jobs), each as the comma-separated label value. */
#define HOLDERS_MAX 16
typedef struct holders {
    uint64_t ids[HOLDERS_MAX];
    char tenant[HOLDERS_MAX][64];
    int nids;
    char jobs[HOLDERS_MAX * 21];
    char tenants[HOLDERS_MAX * 65];
} holders_t;

struct agent_metrics {
    struct event_base *base;
    agent_metrics_config_t cfg;
    agent_tasks_t *ts;
    agent_nvml_t *nv;           /* NULL: no NVML on this node */
    int nvml_gpus;
    agent_gpu_sample_t *last;   /* nvml_gpus readings */
    int sampled;                /* last[] holds a reading */
    struct event *sample_ev;
    acc_t *accs;
    agent_http_t *http;
    char **mapped;              /* the content of each mapping file written; NULL: none */
    int map_gpus;
};

/* ---- attribution ---- */

typedef struct build {
    agent_metrics_t *m;
    holders_t *h;               /* per GPU index, n of them */
    int n;
} build_t;

static void add_holder(holders_t *h, uint64_t job, const char *tenant) {
    for (int i = 0; i < h->nids; i++)
        if (h->ids[i] == job) return;
    if (h->nids == HOLDERS_MAX) return;
    int at = h->nids;
    while (at > 0 && h->ids[at - 1] > job) at--;
    memmove(&h->ids[at + 1], &h->ids[at], (size_t)(h->nids - at) * sizeof h->ids[0]);
    memmove(&h->tenant[at + 1], &h->tenant[at], (size_t)(h->nids - at) * sizeof h->tenant[0]);
    h->ids[at] = job;
    snprintf(h->tenant[at], sizeof h->tenant[at], "%s", tenant);
    h->nids++;
    /* The label values, rebuilt: a GPU has a handful of holders at most. */
    size_t jl = 0, tl = 0;
    h->tenants[0] = '\0';
    for (int i = 0; i < h->nids; i++) {
        jl += (size_t)snprintf(h->jobs + jl, sizeof h->jobs - jl, "%s%llu", i ? "," : "",
                               (unsigned long long)h->ids[i]);
        int dup = h->tenant[i][0] == '\0';
        for (int k = 0; k < i && !dup; k++) dup = strcmp(h->tenant[k], h->tenant[i]) == 0;
        if (!dup)
            tl += (size_t)snprintf(h->tenants + tl, sizeof h->tenants - tl, "%s%s", tl ? "," : "",
                                   h->tenant[i]);
    }
}

static void build_cb(void *ud, const agent_task_info_t *ti) {
    build_t *b = ud;
    if (!ti->running) return;
    for (size_t i = 0; i < ti->ngpus; i++)
        if (ti->gpus[i] >= 0 && ti->gpus[i] < b->n) add_holder(&b->h[ti->gpus[i]], ti->job, ti->tenant);
}

/* The holders of GPUs 0..n-1 (calloc'd; the caller frees). */
static holders_t *holders_build(agent_metrics_t *m, int n) {
    holders_t *h = calloc(n > 0 ? (size_t)n : 1, sizeof *h);
    if (!h) abort();
    build_t b = {m, h, n};
    agent_tasks_foreach(m->ts, build_cb, &b);
    return h;
}

/* ---- usage accumulators ---- */

static acc_t *acc_get(agent_metrics_t *m, const agent_task_info_t *ti) {
    int64_t attempt = ti->has_attempt ? (int64_t)ti->attempt : -1;
    for (acc_t *a = m->accs; a; a = a->next)
        if (a->job == ti->job && a->task == ti->task && a->attempt == attempt) return a;
    acc_t *a = calloc(1, sizeof *a);
    if (!a) abort();
    a->job = ti->job;
    a->task = ti->task;
    a->attempt = attempt;
    snprintf(a->cgroup, sizeof a->cgroup, "%s", ti->cgroup ? ti->cgroup : "");
    a->gmem_peak = a->gmem_total = -1;
    a->mem_peak = -1;
    a->next = m->accs;
    m->accs = a;
    return a;
}

/* Drops the accumulators of tasks the tasks no longer know. */
static void acc_sweep(agent_metrics_t *m) {
    for (acc_t **pp = &m->accs; *pp;) {
        acc_t *a = *pp;
        if (!a->seen) {
            *pp = a->next;
            free(a);
        } else {
            a->seen = 0;
            pp = &a->next;
        }
    }
}

/* Reads a's task's cgroup (a running task: an ended one's cgroup is gone
 * and its last reading stands). */
static void sample_cgroup(agent_metrics_t *m, acc_t *a) {
    agent_cgroup_stats_t st;
    if (!m->cfg.cgroup || agent_cgroup_task_stats(m->cfg.cgroup, a->cgroup, &st) != 0) return;
    a->has_cg = 1;
    a->cpu_s = (double)st.cpu_usec / 1e6;
    a->mem_current = st.mem_current;
    if (st.mem_peak > a->mem_peak) a->mem_peak = st.mem_peak;
    if (st.mem_current > a->mem_peak) a->mem_peak = st.mem_current;
    a->oom_kills = st.oom_kills;
}

static void sample_task_cb(void *ud, const agent_task_info_t *ti) {
    agent_metrics_t *m = ud;
    acc_t *a = acc_get(m, ti);
    a->seen = 1;
    if (ti->ngpus > 0) a->holds_gpus = 1;
    if (ti->running) sample_cgroup(m, a);
    if (!ti->running || !m->sampled) return;
    double sum = 0, peak = 0;
    int n = 0;
    for (size_t i = 0; i < ti->ngpus; i++) {
        int g = ti->gpus[i];
        if (g < 0 || g >= m->nvml_gpus) continue;
        const agent_gpu_sample_t *s = &m->last[g];
        if (s->has_util) {
            sum += s->util;
            if (s->util > peak) peak = s->util;
            n++;
        }
        if (s->has_mem) {
            if ((int64_t)s->mem_used > a->gmem_peak) a->gmem_peak = (int64_t)s->mem_used;
            if (a->gmem_total < 0 || (int64_t)s->mem_total < a->gmem_total)
                a->gmem_total = (int64_t)s->mem_total;
        }
    }
    if (n == 0) return;
    a->samples++;
    a->util_sum += sum / n;
    if (peak > a->util_peak) a->util_peak = peak;
}

/* Marks every known task's accumulator seen (creating those missing). */
static void seen_cb(void *ud, const agent_task_info_t *ti) {
    agent_metrics_t *m = ud;
    acc_t *a = acc_get(m, ti);
    a->seen = 1;
    if (ti->ngpus > 0) a->holds_gpus = 1;
}

size_t agent_metrics_usage(void *ud, sl_proto_usage_t **out) {
    agent_metrics_t *m = ud;
    agent_tasks_foreach(m->ts, seen_cb, m);
    acc_sweep(m);
    size_t n = 0;
    for (acc_t *a = m->accs; a; a = a->next) n++;
    *out = NULL;
    if (n == 0) return 0;
    sl_proto_usage_t *u = calloc(n, sizeof *u);
    if (!u) abort();
    size_t i = 0;
    for (acc_t *a = m->accs; a; a = a->next, i++) {
        u[i] = (sl_proto_usage_t){.job = a->job, .task = a->task, .has_attempt = a->attempt >= 0,
                                  .attempt = a->attempt >= 0 ? (uint32_t)a->attempt : 0,
                                  .samples = a->samples,
                                  .gpu_mem_peak = a->gmem_peak, .gpu_mem_total = a->gmem_total,
                                  .cpu_seconds = a->has_cg ? a->cpu_s : -1,
                                  .mem_peak = a->has_cg ? a->mem_peak : -1,
                                  .no_nvml = a->holds_gpus && m->nv == NULL};
        if (a->samples > 0) {
            u[i].gpu_util_mean = a->util_sum / (double)a->samples;
            u[i].gpu_util_peak = a->util_peak;
        }
    }
    *out = u;
    return n;
}

/* ---- sampling ---- */

static void sample_cb(evutil_socket_t fd, short ev, void *arg) {
    agent_metrics_t *m = arg;
    for (int i = 0; i < m->nvml_gpus; i++) agent_nvml_sample(m->nv, i, &m->last[i]);
    m->sampled = m->nv != NULL;
    agent_tasks_foreach(m->ts, sample_task_cb, m);
    acc_sweep(m);
}

/* ---- job mapping files ---- */

/* DIR/INDEX gets content (NULL or "": the file goes). 0, or -1 logged. */
static int map_write(agent_metrics_t *m, int gpu, const char *content) {
    char path[4096], tmp[4096];
    snprintf(path, sizeof path, "%s/%d", m->cfg.jobmap_dir, gpu);
    if (!content || !*content) {
        if (unlink(path) != 0 && errno != ENOENT) {
            sl_log(SL_LOG_WARN, "metrics", "cannot remove %s: %s", path, strerror(errno));
            return -1;
        }
        return 0;
    }
    snprintf(tmp, sizeof tmp, "%s/.%d.tmp", m->cfg.jobmap_dir, gpu);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    size_t len = strlen(content);
    if (fd < 0 || write(fd, content, len) != (ssize_t)len || close(fd) != 0 ||
        rename(tmp, path) != 0) {
        sl_log(SL_LOG_WARN, "metrics", "cannot write %s: %s", path, strerror(errno));
        if (fd >= 0) unlink(tmp);
        return -1;
    }
    return 0;
}

/* Rewrites the mapping files whose content changed. */
static void map_update(agent_metrics_t *m) {
    if (!m->cfg.jobmap_dir) return;
    holders_t *h = holders_build(m, m->map_gpus);
    for (int g = 0; g < m->map_gpus; g++) {
        char content[512] = "";
        for (int i = 0; i < h[g].nids; i++) {
            size_t used = strlen(content);
            snprintf(content + used, sizeof content - used, "%llu\n", (unsigned long long)h[g].ids[i]);
        }
        const char *old = m->mapped[g] ? m->mapped[g] : "";
        if (strcmp(old, content) == 0) continue;
        if (map_write(m, g, content) == 0) {
            free(m->mapped[g]);
            m->mapped[g] = content[0] ? strdup(content) : NULL;
        }
    }
    free(h);
}

/* At start-up: removes files a previous agent left for GPU indices, so that
 * map_update's record of what is written starts true. */
static int map_init(agent_metrics_t *m, char *err, size_t errlen) {
    const char *dir = m->cfg.jobmap_dir;
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "--hpc-job-mapping-dir: cannot create %s: %s", dir, strerror(errno));
        return -1;
    }
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(err, errlen, "--hpc-job-mapping-dir: cannot read %s: %s", dir, strerror(errno));
        return -1;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char *end;
        long g = strtol(e->d_name, &end, 10);
        if (e->d_name[0] >= '0' && e->d_name[0] <= '9' && *end == '\0' && g >= 0 && g < 1024)
            map_write(m, (int)g, NULL);
    }
    closedir(d);
    m->mapped = calloc(m->map_gpus > 0 ? (size_t)m->map_gpus : 1, sizeof *m->mapped);
    if (!m->mapped) abort();
    return 0;
}

static void tasks_changed(void *ud) {
    map_update(ud);
}

/* ---- exposition ---- */

static void put_label(struct evbuffer *b, const char *k, const char *v, int first) {
    evbuffer_add_printf(b, "%s%s=\"", first ? "" : ",", k);
    for (const char *p = v; *p; p++) {
        if (*p == '\\' || *p == '"')
            evbuffer_add_printf(b, "\\%c", *p);
        else if (*p == '\n')
            evbuffer_add(b, "\\n", 2);
        else
            evbuffer_add(b, p, 1);
    }
    evbuffer_add(b, "\"", 1);
}

/* The per-GPU families: which reading each shows (has, value). */
typedef struct gpu_family {
    const char *name;
    const char *help;
} gpu_family_t;

enum { F_UTIL, F_MEM_USED, F_MEM_TOTAL, F_POWER, F_TEMP, F_GR_ACTIVE, F_SM_OCC, F_COUNT };

static const gpu_family_t gpu_families[F_COUNT] = {
    [F_UTIL] = {"sluice_gpu_utilization_ratio",
                "Fraction of the last sample period in which one or more kernels ran on the GPU "
                "(NVML utilization.gpu; 1.0 even if one kernel keeps one SM busy)."},
    [F_MEM_USED] = {"sluice_gpu_memory_used_bytes", "GPU memory in use (NVML)."},
    [F_MEM_TOTAL] = {"sluice_gpu_memory_total_bytes", "GPU memory installed (NVML)."},
    [F_POWER] = {"sluice_gpu_power_watts", "GPU power draw (NVML), where the board reports it."},
    [F_TEMP] = {"sluice_gpu_temperature_celsius", "GPU core temperature (NVML), where reported."},
    [F_GR_ACTIVE] = {"sluice_gpu_graphics_active_ratio",
                     "Fraction of time the graphics/compute engine was active over the last sample "
                     "period (NVML GPM GRAPHICS_UTIL; Hopper and later)."},
    [F_SM_OCC] = {"sluice_gpu_sm_occupancy_ratio",
                  "Resident warps over the SMs' maximum, averaged over the last sample period "
                  "(NVML GPM SM_OCCUPANCY; Hopper and later)."},
};

static int reading(const agent_gpu_sample_t *s, int f, double *v) {
    switch (f) {
    case F_UTIL: *v = s->util; return s->has_util;
    case F_MEM_USED: *v = (double)s->mem_used; return s->has_mem;
    case F_MEM_TOTAL: *v = (double)s->mem_total; return s->has_mem;
    case F_POWER: *v = s->power_w; return s->has_power;
    case F_TEMP: *v = s->temp_c; return s->has_temp;
    case F_GR_ACTIVE: *v = s->gr_active; return s->has_gr_active;
    case F_SM_OCC: *v = s->sm_occupancy; return s->has_sm_occupancy;
    default: return 0;
    }
}

static void write_gpus(agent_metrics_t *m, struct evbuffer *b) {
    if (!m->sampled) return;
    holders_t *h = holders_build(m, m->nvml_gpus);
    const char *model = m->cfg.gpu_model ? m->cfg.gpu_model : "unknown";
    for (int f = 0; f < F_COUNT; f++) {
        double v;
        int any = 0;
        for (int g = 0; g < m->nvml_gpus && !any; g++) any = reading(&m->last[g], f, &v);
        if (!any) continue; /* a family NVML has for no GPU is left out */
        evbuffer_add_printf(b, "# HELP %s %s\n# TYPE %s gauge\n", gpu_families[f].name,
                            gpu_families[f].help, gpu_families[f].name);
        for (int g = 0; g < m->nvml_gpus; g++) {
            if (!reading(&m->last[g], f, &v)) continue;
            char idx[16];
            snprintf(idx, sizeof idx, "%d", g);
            evbuffer_add_printf(b, "%s{", gpu_families[f].name);
            put_label(b, "node", m->cfg.node, 1);
            put_label(b, "gpu", idx, 0);
            put_label(b, "uuid", m->last[g].uuid, 0);
            put_label(b, "model", model, 0);
            put_label(b, "job", h[g].jobs, 0);
            put_label(b, "tenant", h[g].tenants, 0);
            evbuffer_add_printf(b, "} %.17g\n", v);
        }
    }
    free(h);
}

/* The per-task families (cgroup), for running tasks whose cgroup was read. */
static const struct {
    const char *name, *type, *help;
} task_families[] = {
    {"sluice_task_cpu_seconds_total", "counter", "CPU time a running task has used (its cgroup)."},
    {"sluice_task_memory_used_bytes", "gauge", "Memory a running task uses (its cgroup)."},
    {"sluice_task_memory_peak_bytes", "gauge",
     "Most memory a running task has used (its cgroup's peak, else the highest sampled)."},
    {"sluice_task_oom_kills_total", "counter",
     "Processes of a running task the kernel killed for memory (its cgroup)."},
};

typedef struct task_lines {
    agent_metrics_t *m;
    struct evbuffer *b;
    int family;
    int any;
} task_lines_t;

static void task_line_cb(void *ud, const agent_task_info_t *ti) {
    task_lines_t *tl = ud;
    if (!ti->running) return;
    acc_t *a = NULL;
    for (acc_t *x = tl->m->accs; x && !a; x = x->next)
        if (x->job == ti->job && x->task == ti->task && x->has_cg) a = x;
    if (!a) return;
    tl->any = 1;
    if (!tl->b) return;
    char job[24], task[16];
    snprintf(job, sizeof job, "%llu", (unsigned long long)ti->job);
    snprintf(task, sizeof task, "%d", (int)ti->task);
    evbuffer_add_printf(tl->b, "%s{", task_families[tl->family].name);
    put_label(tl->b, "node", tl->m->cfg.node, 1);
    put_label(tl->b, "job", job, 0);
    put_label(tl->b, "task", task, 0);
    put_label(tl->b, "tenant", ti->tenant, 0);
    switch (tl->family) {
    case 0: evbuffer_add_printf(tl->b, "} %.6f\n", a->cpu_s); break;
    case 1: evbuffer_add_printf(tl->b, "} %lld\n", (long long)a->mem_current); break;
    case 2: evbuffer_add_printf(tl->b, "} %lld\n", (long long)a->mem_peak); break;
    default: evbuffer_add_printf(tl->b, "} %lld\n", (long long)a->oom_kills); break;
    }
}

static void write_tasks(agent_metrics_t *m, struct evbuffer *b) {
    task_lines_t tl = {m, NULL, 0, 0};
    agent_tasks_foreach(m->ts, task_line_cb, &tl);
    if (!tl.any) return; /* no cgroup read: no per-task families */
    for (int f = 0; f < (int)(sizeof task_families / sizeof task_families[0]); f++) {
        evbuffer_add_printf(b, "# HELP %s %s\n# TYPE %s %s\n", task_families[f].name,
                            task_families[f].help, task_families[f].name, task_families[f].type);
        tl = (task_lines_t){m, b, f, 0};
        agent_tasks_foreach(m->ts, task_line_cb, &tl);
    }
}

static int scrape(void *ud, const char *path, struct evbuffer *body, const char **ctype) {
    agent_metrics_t *m = ud;
    if (strcmp(path, "/metrics") != 0) return 404;
    *ctype = "text/plain; version=0.0.4; charset=utf-8";
    evbuffer_add_printf(body, "# HELP sluice_agent_nvml_available Whether NVML is loaded on this "
                        "node (0: no GPU readings are exported).\n"
                        "# TYPE sluice_agent_nvml_available gauge\n");
    evbuffer_add_printf(body, "sluice_agent_nvml_available{");
    put_label(body, "node", m->cfg.node, 1);
    evbuffer_add_printf(body, "} %d\n", m->nv != NULL);
    write_gpus(m, body);
    write_tasks(m, body);
    return 200;
}

/* ---- life ---- */

int agent_metrics_create(struct event_base *base, const agent_metrics_config_t *cfg,
                         agent_tasks_t *ts, agent_metrics_t **out, char *err, size_t errlen) {
    agent_metrics_t *m = calloc(1, sizeof *m);
    if (!m) abort();
    m->base = base;
    m->cfg = *cfg;
    m->ts = ts;
    char why[256];
    if (agent_nvml_open(&m->nv, why, sizeof why) == 0) {
        m->nvml_gpus = agent_nvml_count(m->nv);
        m->last = calloc((size_t)m->nvml_gpus, sizeof *m->last);
        if (!m->last) abort();
        int gpm = 0;
        for (int i = 0; i < m->nvml_gpus; i++) gpm += agent_nvml_gpm(m->nv, i);
        sl_log(SL_LOG_INFO, "metrics", "sampling %d GPU(s) through NVML every %d ms (GPM on %d)",
               m->nvml_gpus, cfg->sample_ms, gpm);
    } else {
        m->nv = NULL;
        if (cfg->gpus > 0)
            sl_log(SL_LOG_INFO, "metrics", "no GPU readings: %s (no utilisation is exported)", why);
    }
    m->map_gpus = cfg->gpus > m->nvml_gpus ? cfg->gpus : m->nvml_gpus;
    if (cfg->jobmap_dir && map_init(m, err, errlen) != 0) goto fail;
    if (cfg->listen) {
        char herr[300];
        if (agent_http_create(base, cfg->listen, scrape, m, &m->http, herr, sizeof herr) != 0) {
            snprintf(err, errlen, "--metrics-listen: %s", herr);
            goto fail;
        }
        sl_log(SL_LOG_INFO, "metrics", "serving GET /metrics on %s (port %d)", cfg->listen,
               agent_http_port(m->http));
    }
    m->sample_ev = event_new(base, -1, EV_PERSIST, sample_cb, m);
    if (!m->sample_ev) abort();
    struct timeval tv = agent_tv_ms(cfg->sample_ms);
    event_add(m->sample_ev, &tv);
    if (m->nv) sample_cb(-1, 0, m); /* readings from the start */
    agent_tasks_set_watcher(ts, tasks_changed, m);
    map_update(m);
    *out = m;
    return 0;
fail:
    agent_metrics_destroy(m);
    return -1;
}

void agent_metrics_destroy(agent_metrics_t *m) {
    if (!m) return;
    if (m->ts) agent_tasks_set_watcher(m->ts, NULL, NULL);
    if (m->sample_ev) event_free(m->sample_ev);
    agent_http_destroy(m->http);
    agent_nvml_close(m->nv);
    free(m->last);
    while (m->accs) {
        acc_t *a = m->accs;
        m->accs = a->next;
        free(a);
    }
    if (m->mapped)
        for (int g = 0; g < m->map_gpus; g++) free(m->mapped[g]);
    free(m->mapped);
    free(m);
}
