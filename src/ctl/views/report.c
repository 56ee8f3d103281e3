/*
 * report.c - `sluice report` (GET /v1/report): the seed's figures for a
 * window [now - since, now], computed from the controller's database.
 *
 * Every figure comes from one indexed read (store/store.h, ctl_store_report_rows: the jobs that
 * ended in the window and the jobs running now, with their GPUs,
 * scheduling delay and efficiency summary) and one pass over its rows:
 *
 *   throughput        jobs that ran (had a start) and ended in the window,
 *                     per hour of the window, with every ending by state;
 *   queueing delay    start - submit of the jobs that ran and ended in the
 *                     window: p50, p90, p99 (nearest rank: the value at
 *                     position ceil(p/100 * n) of the sorted delays), mean
 *                     and max;
 *   scheduling delay  the same over job_sched, the scheduler's own decision
 *                     time per job (recorded where the domain starts a job;
 *                     jobs without a row are left out, never counted as 0);
 *   usage             GPU-hours per tenant: GPUs held (its tasks' masks and
 *                     shares) * the part of [start, end or now] inside the
 *                     window;
 *   fairness          over the tenants with demand in the window (a job
 *                     that ended or runs, or work pending now) and a
 *                     weight: fair share = weight / sum of their weights,
 *                     usage share = GPU-hours / all GPU-hours, and the
 *                     ratio of the two; min/max of the ratios (1 = usage in
 *                     proportion to weight) and Jain's index of them;
 *                     none of it for a tenant's token (scope "tenant"),
 *                     since with two tenants the other's use follows from
 *                     one's own share;
 *   allocation        GPU-hours held / (GPUs of the up and draining nodes
 *                     now * window hours): the capacity of today is taken
 *                     for the whole window, as the store keeps no history
 *                     of it; for a tenant's token, its own GPU-hours;
 *   utilisation       from job_eff (the agents' summaries): the mean GPU
 *                     utilisation of the jobs that have one, weighted by
 *                     their GPU-hours in the window, and idle GPU memory as
 *                     1 - peak / total per GPU, weighted the same way. No
 *                     summary, no figure: the answer says null, never 0.
 *   fragmentation     a live gauge (sluice_gpu_fragmentation_ratio in
 *                     /metrics): it depends on the pending jobs of each
 *                     moment, which the store does not keep.
 *
 * job_eff's units, as the exporter writes them: gpu_util_mean a ratio
 * 0..1, gpu_mem_peak and gpu_mem_total bytes of one GPU.
 *
 * Threads (report.h). The report thread reads the database and fills the
 * rep_t below; it touches nothing else of the controller, and allocates
 * with malloc (xrealloc here), never sl_x*, whose live-block counter is the
 * loop's. The loop's thread writes the JSON from the finished rep_t after
 * joining the thread, which orders every write of the thread before it.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "log.h"
#include "views/report.h"
#include "store/store.h"

typedef struct rep_tenant {
    char *name;
    int32_t weight;        /* -1: no longer configured */
    bool demand;           /* a job in the window, or pending work now */
    int64_t jobs;          /* jobs in the window (ended or running) */
    double gpu_us;         /* GPU-microseconds held inside the window */
    double *bgpu_us;       /* the same per bucket of the series (nbuckets), or NULL */
} rep_tenant_t;

typedef struct delays {
    int64_t *v;
    size_t n, cap;
} delays_t;

/* One bucket of the series (?buckets=): the window's figures over its
 * part of the window, delays by the jobs' end. */
typedef struct bucket {
    delays_t queue, sched;
    double gpu_us_all, gpu_us, eff_gpu_us, util_w, mem_gpu_us, idle_mem_w;
} bucket_t;

/* One report: what the loop's thread fills before the report thread
 * starts (the snapshot, down to `only`), then what the thread fills. */
struct ctl_report {
    ctl_report_done_fn done;
    void *ud;
    pthread_t thread;
    int pipe[2];           /* the thread writes a byte to [1] when it is done */
    struct event *ev;      /* on [0], in the loop */
    char *path;            /* the database */
    char err[320];         /* why the read failed */
    int rc;
    int64_t since_s;
    int64_t capacity_milli; /* GPUs of the up and draining nodes at the start */
    int64_t since_us, until_us;
    char *only;            /* tenant filter, or NULL */
    bool own_only;         /* a tenant's token: nothing from the others' use */
    rep_tenant_t *t;
    size_t nt, tcap;
    int64_t ended[CTL_JOB_NSTATES];
    int64_t ran;
    delays_t queue, sched;
    double gpu_us_all;     /* every tenant's, for the allocation */
    double gpu_us;         /* the filtered tenant's (or all) */
    int64_t eff_jobs;
    double eff_gpu_us, util_w, mem_gpu_us, idle_mem_w;
    int nbuckets;          /* 0: no series */
    bucket_t *b;
};

typedef struct ctl_report rep_t;

/* malloc that aborts, for the report thread (see the header). */
static void *xrealloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (q == NULL)
        abort();
    return q;
}

static char *xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    return memcpy(xrealloc(NULL, n), s, n);
}

static rep_tenant_t *tenant_get(rep_t *r, const char *name) {
    for (size_t i = 0; i < r->nt; i++)
        if (strcmp(r->t[i].name, name) == 0)
            return &r->t[i];
    if (r->nt == r->tcap) {
        r->tcap = r->tcap ? 2 * r->tcap : 8;
        r->t = xrealloc(r->t, r->tcap * sizeof *r->t);
    }
    rep_tenant_t *t = &r->t[r->nt++];
    *t = (rep_tenant_t){.name = xstrdup(name), .weight = -1};
    if (r->nbuckets > 0) {
        t->bgpu_us = xrealloc(NULL, (size_t)r->nbuckets * sizeof *t->bgpu_us);
        memset(t->bgpu_us, 0, (size_t)r->nbuckets * sizeof *t->bgpu_us);
    }
    return t;
}

static void delay_add(delays_t *d, int64_t us) {
    if (d->n == d->cap) {
        d->cap = d->cap ? 2 * d->cap : 1024;
        d->v = xrealloc(d->v, d->cap * sizeof *d->v);
    }
    d->v[d->n++] = us < 0 ? 0 : us;
}

/* Row w into the buckets of the series: its GPU time in each bucket its
 * run overlaps, its delays in the bucket of its end. */
static void row_buckets(rep_t *r, rep_tenant_t *t, const ctl_report_row_t *w, bool mine) {
    double len = (double)(r->until_us - r->since_us) / r->nbuckets;
    if (w->start_us >= 0) {
        int64_t a = w->start_us > r->since_us ? w->start_us : r->since_us;
        int64_t e = w->end_us < 0 || w->end_us > r->until_us ? r->until_us : w->end_us;
        for (int k = (int)((double)(a - r->since_us) / len); e > a && k < r->nbuckets; k++) {
            double lo = (double)r->since_us + k * len, hi = lo + len;
            double x = ((double)e < hi ? (double)e : hi) - ((double)a > lo ? (double)a : lo);
            if (x <= 0)
                break;
            double g = (double)w->gpu_milli / 1000.0 * x;
            bucket_t *bk = &r->b[k];
            t->bgpu_us[k] += g;
            bk->gpu_us_all += g;
            if (!mine)
                continue;
            bk->gpu_us += g;
            if (w->has_eff) {
                bk->eff_gpu_us += g;
                bk->util_w += w->gpu_util_mean * g;
                if (w->gpu_mem_total > 0 && w->gpu_mem_peak >= 0) {
                    double used = (double)w->gpu_mem_peak / (double)w->gpu_mem_total;
                    bk->mem_gpu_us += g;
                    bk->idle_mem_w += (1.0 - (used > 1.0 ? 1.0 : used)) * g;
                }
            }
        }
    }
    if (mine && w->end_us >= 0 && w->start_us >= 0 && w->end_us >= r->since_us) {
        int k = (int)((double)(w->end_us - r->since_us) / len);
        k = k < 0 ? 0 : k >= r->nbuckets ? r->nbuckets - 1 : k;
        delay_add(&r->b[k].queue, w->start_us - w->submit_us);
        if (w->has_sched)
            delay_add(&r->b[k].sched, w->sched_delay_us);
    }
}

static int row(void *ud, const ctl_report_row_t *w) {
    rep_t *r = ud;
    rep_tenant_t *t = tenant_get(r, w->tenant);
    t->demand = true;
    t->jobs++;
    double gpu_us = 0;
    if (w->start_us >= 0) {
        int64_t a = w->start_us > r->since_us ? w->start_us : r->since_us;
        int64_t b = w->end_us < 0 || w->end_us > r->until_us ? r->until_us : w->end_us;
        if (b > a)
            gpu_us = (double)w->gpu_milli / 1000.0 * (double)(b - a);
    }
    t->gpu_us += gpu_us;
    r->gpu_us_all += gpu_us;
    if (r->only && strcmp(r->only, w->tenant) != 0)
        return 0;
    r->gpu_us += gpu_us;
    if (w->end_us >= 0) {
        r->ended[w->state]++;
        if (w->start_us >= 0) {
            r->ran++;
            delay_add(&r->queue, w->start_us - w->submit_us);
            if (w->has_sched)
                delay_add(&r->sched, w->sched_delay_us);
        }
    }
    if (w->has_eff && gpu_us > 0) {
        r->eff_jobs++;
        r->eff_gpu_us += gpu_us;
        r->util_w += w->gpu_util_mean * gpu_us;
        if (w->gpu_mem_total > 0 && w->gpu_mem_peak >= 0) {
            double used = (double)w->gpu_mem_peak / (double)w->gpu_mem_total;
            r->mem_gpu_us += gpu_us;
            r->idle_mem_w += (1.0 - (used > 1.0 ? 1.0 : used)) * gpu_us;
        }
    }
    return 0;
}

static int row_series(void *ud, const ctl_report_row_t *w) {
    rep_t *r = ud;
    row(ud, w);
    row_buckets(r, tenant_get(r, w->tenant), w, !r->only || strcmp(r->only, w->tenant) == 0);
    return 0;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static void num_or_null(ctl_buf_t *b, bool have, double v) {
    if (have && isfinite(v))
        ctl_buf_double(b, v);
    else
        ctl_buf_puts(b, "null");
}

static void key(ctl_buf_t *b, const char *k) {
    ctl_buf_putc(b, ',');
    ctl_buf_jstr(b, k);
    ctl_buf_putc(b, ':');
}

/* {"jobs":n,"p50_seconds":...}: nearest-rank percentiles of d (sorted). */
static void delays_write(ctl_buf_t *b, const delays_t *d) {
    ctl_buf_puts(b, "{\"jobs\":");
    ctl_buf_u64(b, d->n);
    static const struct { const char *k; int p; } pct[] = {
        {"p50_seconds", 50}, {"p90_seconds", 90}, {"p99_seconds", 99}};
    for (size_t i = 0; i < 3; i++) {
        key(b, pct[i].k);
        if (d->n == 0) {
            ctl_buf_puts(b, "null");
            continue;
        }
        size_t rank = (size_t)((d->n * (size_t)pct[i].p + 99) / 100); /* ceil(p/100 * n) */
        ctl_buf_time(b, d->v[rank ? rank - 1 : 0]);
    }
    double sum = 0;
    for (size_t i = 0; i < d->n; i++)
        sum += (double)d->v[i];
    key(b, "mean_seconds");
    num_or_null(b, d->n > 0, d->n ? sum / (double)d->n / 1e6 : 0);
    key(b, "max_seconds");
    if (d->n)
        ctl_buf_time(b, d->v[d->n - 1]);
    else
        ctl_buf_puts(b, "null");
    ctl_buf_putc(b, '}');
}

static void write_tenants(rep_t *r, ctl_buf_t *b) {
    double wsum = 0;
    for (size_t i = 0; i < r->nt; i++)
        if (r->t[i].demand && r->t[i].weight > 0)
            wsum += r->t[i].weight;
    double lo = INFINITY, hi = 0, s1 = 0, s2 = 0;
    int k = 0;
    bool used = r->gpu_us_all > 0;
    ctl_buf_puts(b, ",\"tenants\":[");
    bool first = true;
    for (size_t i = 0; i < r->nt; i++) {
        rep_tenant_t *t = &r->t[i];
        bool fair = t->demand && t->weight > 0 && wsum > 0;
        double fs = fair ? t->weight / wsum : 0;
        double us = used ? t->gpu_us / r->gpu_us_all : 0;
        if (fair && used) {
            double q = us / fs;
            lo = q < lo ? q : lo;
            hi = q > hi ? q : hi;
            s1 += q;
            s2 += q * q;
            k++;
        }
        if (r->only && strcmp(r->only, t->name) != 0)
            continue;
        if (!r->only && !t->demand)
            continue;
        /* The shares divide by every tenant's GPU-hours and weights: from
         * them and a tenant's own figures the others' use follows. */
        bool shares = !r->own_only;
        if (!first)
            ctl_buf_putc(b, ',');
        first = false;
        ctl_buf_puts(b, "{\"name\":");
        ctl_buf_jstr(b, t->name);
        key(b, "weight");
        if (t->weight >= 0)
            ctl_buf_i64(b, t->weight);
        else
            ctl_buf_puts(b, "null");
        key(b, "jobs");
        ctl_buf_i64(b, t->jobs);
        key(b, "gpu_hours");
        ctl_buf_double(b, t->gpu_us / 3.6e9);
        key(b, "usage_share");
        num_or_null(b, shares && used, us);
        key(b, "fair_share");
        num_or_null(b, shares && fair, fs);
        key(b, "usage_to_fair");
        num_or_null(b, shares && fair && used, fs > 0 ? us / fs : 0);
        ctl_buf_putc(b, '}');
    }
    ctl_buf_puts(b, "],\"fairness\":{\"tenants\":");
    if (r->own_only)
        ctl_buf_puts(b, "null");
    else
        ctl_buf_i64(b, k);
    key(b, "min_over_max");
    num_or_null(b, !r->own_only && k > 0 && hi > 0, lo / hi);
    key(b, "jain_index");
    num_or_null(b, !r->own_only && k > 0 && s2 > 0, s1 * s1 / (k * s2));
    ctl_buf_putc(b, '}');
}

/* `,"series":{...}`: the window cut in r->nbuckets, each bucket's delays
 * (p50, p90, p99), allocation, utilisation, idle GPU memory and GPU-hours
 * per tenant (those the report lists). */
static void series_write(rep_t *r, ctl_buf_t *b) {
    double len_us = (double)(r->until_us - r->since_us) / r->nbuckets;
    ctl_buf_puts(b, ",\"series\":{\"bucket_seconds\":");
    ctl_buf_double(b, len_us / 1e6);
    ctl_buf_puts(b, ",\"buckets\":[");
    for (int k = 0; k < r->nbuckets; k++) {
        bucket_t *bk = &r->b[k];
        ctl_buf_puts(b, k ? ",{\"since\":" : "{\"since\":");
        ctl_buf_time(b, r->since_us + (int64_t)(k * len_us));
        ctl_buf_puts(b, ",\"queueing_delay\":");
        delays_write(b, &bk->queue);
        ctl_buf_puts(b, ",\"scheduling_delay\":");
        delays_write(b, &bk->sched);
        double avail = (double)r->capacity_milli / 1000.0 * len_us;
        double held = r->own_only ? bk->gpu_us : bk->gpu_us_all;
        key(b, "gpu_allocation_ratio");
        num_or_null(b, avail > 0, held / avail);
        key(b, "gpu_util_mean");
        num_or_null(b, bk->eff_gpu_us > 0, bk->util_w / bk->eff_gpu_us);
        key(b, "idle_memory_ratio");
        num_or_null(b, bk->mem_gpu_us > 0, bk->idle_mem_w / bk->mem_gpu_us);
        ctl_buf_puts(b, ",\"tenants\":[");
        bool first = true;
        for (size_t i = 0; i < r->nt; i++) {
            rep_tenant_t *t = &r->t[i];
            if ((r->only && strcmp(r->only, t->name) != 0) || (!r->only && !t->demand))
                continue;
            ctl_buf_puts(b, first ? "{\"name\":" : ",{\"name\":");
            first = false;
            ctl_buf_jstr(b, t->name);
            key(b, "gpu_hours");
            ctl_buf_double(b, t->bgpu_us[k] / 3.6e9);
            ctl_buf_putc(b, '}');
        }
        ctl_buf_puts(b, "]}");
    }
    ctl_buf_puts(b, "]}");
}

/* The JSON report of r, whose rows have all been read. */
static void report_write(rep_t *r, ctl_buf_t *b) {
    const char *tenant = r->only;
    double hours = (double)(r->until_us - r->since_us) / 3.6e9;
    ctl_buf_puts(b, "{\"window\":{\"since\":");
    ctl_buf_time(b, r->since_us);
    key(b, "until");
    ctl_buf_time(b, r->until_us);
    key(b, "seconds");
    ctl_buf_i64(b, r->since_s);
    ctl_buf_puts(b, "},\"tenant\":");
    if (tenant)
        ctl_buf_jstr(b, tenant);
    else
        ctl_buf_puts(b, "null");
    key(b, "scope");
    ctl_buf_jstr(b, r->own_only ? "tenant" : "cluster");
    ctl_buf_puts(b, ",\"throughput\":{\"jobs_ran\":");
    ctl_buf_i64(b, r->ran);
    key(b, "jobs_per_hour");
    ctl_buf_double(b, (double)r->ran / hours);
    for (int s = CTL_JOB_SUCCEEDED; s < CTL_JOB_NSTATES; s++) {
        key(b, ctl_job_state_name((ctl_job_state_t)s));
        ctl_buf_i64(b, r->ended[s]);
    }
    ctl_buf_puts(b, "},\"queueing_delay\":");
    delays_write(b, &r->queue);
    ctl_buf_puts(b, ",\"scheduling_delay\":");
    delays_write(b, &r->sched);
    write_tenants(r, b);
    if (r->nbuckets > 0)
        series_write(r, b);
    double avail = (double)r->capacity_milli / 1000.0 * hours;
    double held = r->own_only ? r->gpu_us : r->gpu_us_all; /* the tenant's, or everyone's */
    ctl_buf_puts(b, ",\"gpu_allocation\":{\"capacity_gpus\":");
    ctl_buf_milli(b, r->capacity_milli);
    key(b, "gpu_hours_available");
    ctl_buf_double(b, avail);
    key(b, "gpu_hours_allocated");
    ctl_buf_double(b, held / 3.6e9);
    key(b, "ratio");
    num_or_null(b, avail > 0, held / 3.6e9 / avail);
    ctl_buf_puts(b, "},\"gpu_utilization\":{\"gpu_hours\":");
    ctl_buf_double(b, r->gpu_us / 3.6e9);
    key(b, "jobs_with_data");
    ctl_buf_i64(b, r->eff_jobs);
    key(b, "gpu_hours_with_data");
    ctl_buf_double(b, r->eff_gpu_us / 3.6e9);
    key(b, "mean_ratio");
    num_or_null(b, r->eff_gpu_us > 0, r->util_w / r->eff_gpu_us);
    key(b, "idle_memory_ratio");
    num_or_null(b, r->mem_gpu_us > 0, r->idle_mem_w / r->mem_gpu_us);
    ctl_buf_puts(b, "},\"fragmentation\":{\"ratio\":null,\"metric\":"
                    "\"sluice_gpu_fragmentation_ratio\",\"note\":\"a live gauge: it depends on "
                    "the jobs pending at each moment, which the database does not keep; "
                    "query it in Prometheus over the window\"}}\n");
}

/* The report thread: the read, the sums, the sorts; then one byte to the loop. */
static void *report_main(void *arg) {
    rep_t *r = arg;
    ctl_store_reader_t *reader = NULL;
    r->rc = ctl_store_reader_open(r->path, &reader, r->err, sizeof r->err);
    if (r->rc == 0)
        r->rc = ctl_store_report_rows(reader, r->since_us, r->until_us,
                                      r->nbuckets > 0 ? row_series : row, r, r->err, sizeof r->err);
    ctl_store_reader_close(reader);
    if (r->rc == 0) {
        if (r->queue.n > 1)
            qsort(r->queue.v, r->queue.n, sizeof *r->queue.v, cmp_i64);
        if (r->sched.n > 1)
            qsort(r->sched.v, r->sched.n, sizeof *r->sched.v, cmp_i64);
        for (int k = 0; k < r->nbuckets; k++) {
            delays_t *d[2] = {&r->b[k].queue, &r->b[k].sched};
            for (int i = 0; i < 2; i++)
                if (d[i]->n > 1)
                    qsort(d[i]->v, d[i]->n, sizeof *d[i]->v, cmp_i64);
        }
    }
    ssize_t n;
    do
        n = write(r->pipe[1], "", 1);
    while (n < 0 && errno == EINTR);
    return NULL;
}

static void report_free(rep_t *r) {
    for (size_t i = 0; i < r->nt; i++) {
        free(r->t[i].name);
        free(r->t[i].bgpu_us);
    }
    free(r->t);
    for (int k = 0; k < r->nbuckets; k++) {
        free(r->b[k].queue.v);
        free(r->b[k].sched.v);
    }
    free(r->b);
    free(r->queue.v);
    free(r->sched.v);
    free(r->only);
    free(r->path);
    if (r->ev)
        event_free(r->ev);
    if (r->pipe[0] >= 0)
        close(r->pipe[0]);
    if (r->pipe[1] >= 0)
        close(r->pipe[1]);
    free(r);
}

/* The loop's side: the thread is done. */
static void report_ready(evutil_socket_t fd, short what, void *arg) {
    rep_t *r = arg;
    pthread_join(r->thread, NULL);
    ctl_buf_t b;
    ctl_buf_init(&b);
    int status = 200;
    if (r->rc == 0) {
        report_write(r, &b);
    } else {
        status = 500;
        ctl_buf_puts(&b, r->err);
        sl_log(SL_LOG_ERROR, "report", "%s", r->err);
    }
    r->done(r->ud, status, &b);
    report_free(r);
}

int ctl_report_start(ctl_t *c, int64_t since_s, const char *tenant, bool own_only,
                     ctl_report_done_fn done, void *ud, ctl_report_t **out) {
    return ctl_report_start_series(c, since_s, tenant, own_only, 0, done, ud, out);
}

int ctl_report_start_series(ctl_t *c, int64_t since_s, const char *tenant, bool own_only,
                            int buckets, ctl_report_done_fn done, void *ud, ctl_report_t **out) {
    rep_t *r = xrealloc(NULL, sizeof *r);
    *r = (rep_t){.done = done, .ud = ud, .pipe = {-1, -1}, .since_s = since_s,
                 .until_us = ctl_now_us(), .path = xstrdup(c->cfg.state),
                 .only = tenant ? xstrdup(tenant) : NULL, .own_only = own_only && tenant,
                 .nbuckets = buckets > 0 && buckets <= CTL_REPORT_MAX_BUCKETS ? buckets : 0};
    if (r->nbuckets > 0) {
        r->b = xrealloc(NULL, (size_t)r->nbuckets * sizeof *r->b);
        memset(r->b, 0, (size_t)r->nbuckets * sizeof *r->b);
    }
    r->since_us = r->until_us - since_s * 1000000;
    sl_res_t total, free_;
    sl_cluster_capacity(c->cl, &total, &free_);
    r->capacity_milli = total.gpu_milli;
    for (size_t i = 0; i < c->cfg.ntenants; i++) {
        rep_tenant_t *t = tenant_get(r, c->cfg.tenants[i].name);
        t->weight = c->cfg.tenants[i].weight;
        int32_t id = sl_sched_tenant_find(c->sched, t->name);
        if (id >= 0) {
            size_t pending, running;
            sl_sched_tenant_jobs(c->sched, id, &pending, &running);
            t->demand = pending > 0;
        }
    }
    int err;
    if (pipe2(r->pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
        err = errno;
        goto fail;
    }
    r->ev = event_new(c->loop->base, r->pipe[0], EV_READ, report_ready, r);
    if (r->ev == NULL || event_add(r->ev, NULL) != 0) {
        err = ENOMEM;
        goto fail;
    }
    if ((err = pthread_create(&r->thread, NULL, report_main, r)) != 0)
        goto fail;
    *out = r;
    return 0;
fail:
    sl_log(SL_LOG_ERROR, "report", "cannot start a report: %s", strerror(err));
    report_free(r);
    return SL_EIO;
}

void ctl_report_abandon(ctl_report_t *r) {
    if (r == NULL)
        return;
    pthread_join(r->thread, NULL);
    report_free(r);
}

int ctl_report_query(ctl_t *c, const char *since_text, const char *tenant_text, bool all,
                     int32_t token_tenant, int64_t *since, const char **tenant, char *field,
                     size_t flen, char *msg, size_t mlen) {
    *since = 86400;
    *tenant = NULL;
    if (since_text != NULL) {
        char *end;
        errno = 0;
        long long v = strtoll(since_text, &end, 10);
        if (errno != 0 || since_text[0] < '0' || since_text[0] > '9' || *end != '\0' || v < 1 ||
            v > CTL_REPORT_MAX_SINCE_S) {
            snprintf(field, flen, "since");
            snprintf(msg, mlen, "since: must be the window's length in whole seconds, from 1 to "
                     "%lld (ten years)", (long long)CTL_REPORT_MAX_SINCE_S);
            return 400;
        }
        *since = v;
    }
    if (tenant_text != NULL) {
        int32_t t = sl_sched_tenant_find(c->sched, tenant_text);
        snprintf(field, flen, "tenant");
        if (t < 0) {
            snprintf(msg, mlen, "tenant: unknown tenant \"%s\"", tenant_text);
            return 400;
        }
        if (!all && t != token_tenant) {
            snprintf(msg, mlen, "tenant: this token reports on its own tenant only");
            return 403;
        }
        *tenant = tenant_text;
    } else if (!all) {
        *tenant = sl_sched_tenant_name(c->sched, token_tenant);
    }
    return 0;
}
