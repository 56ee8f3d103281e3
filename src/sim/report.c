/*
 * report.c - what the simulator prints and writes: the human table on
 * stdout, the JSON results (jansson), the per-job CSV, and a progress bar on
 * stderr when stderr is a terminal.
 *
 * JSON layout ({"results": [...]}, one object per policy combination) is
 * documented in docs/sim.md; its keys there are always present, a
 * few extra ones (curve, seeds, wall_s, ...) are added for plots and audits.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "quantity.h"
#include "sim.h"

double sim_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void sim_progress(bool enabled, const char *label, double frac) {
    if (!enabled) return;
    if (frac < 0) frac = 0;
    if (frac > 1) frac = 1;
    int width = 30, fill = (int)(frac * width);
    char bar[64];
    for (int i = 0; i < width; i++) bar[i] = i < fill ? '#' : '.';
    bar[width] = '\0';
    fprintf(stderr, "\r%-40.40s [%s] %3d%%", label, bar, (int)(frac * 100));
    fflush(stderr);
}

void sim_progress_done(bool enabled) {
    if (!enabled) return;
    fprintf(stderr, "\r%-80s\r", "");
    fflush(stderr);
}

/* ------------------------------------------------------------ tables */

void sim_fill_table(FILE *f, const sim_fill_result_t *r, size_t n) {
    fprintf(f, "%-16s %5s %18s %18s %10s %9s %9s %8s\n", "placement", "seeds",
            "unalloc@100% (sd)", "unalloc@130% (sd)", "frag@100%", "failed%", "lat p99", "wall s");
    for (size_t i = 0; i < n; i++) {
        char a[32], b[32];
        snprintf(a, sizeof a, "%.2f (%.2f)", r[i].u100_mean, r[i].u100_sd);
        snprintf(b, sizeof b, "%.2f (%.2f)", r[i].u130_mean, r[i].u130_sd);
        fprintf(f, "%-16s %5zu %18s %18s %10.2f %9.2f %7.1fus %8.3f\n", r[i].placement,
                r[i].nseeds, a, b, r[i].frag100_mean,
                r[i].pods_total ? 100.0 * (double)r[i].pods_failed / (double)r[i].pods_total : 0,
                r[i].lat_p99, r[i].wall_s);
    }
}

static void fmt_dur(char *buf, size_t len, double s) {
    if (s < 100) snprintf(buf, len, "%.1fs", s);
    else if (s < 6000) snprintf(buf, len, "%.1fm", s / 60);
    else snprintf(buf, len, "%.1fh", s / 3600);
}

void sim_replay_table(FILE *f, const sim_replay_result_t *r, size_t n) {
    /* Two more columns on a cluster with topology: the mean racks and
     * blocks a gang spans (the table is unchanged without). */
    bool topo = false;
    for (size_t i = 0; i < n; i++) topo |= r[i].topo_gangs > 0;
    fprintf(f, "%-8s %-12s %-5s %-5s %-3s %7s %7s | %8s %8s %8s | %8s %8s | %8s %9s | %6s %6s %6s "
            "%5s %5s | %8s %8s",
            "queue", "placement", "bfill", "share", "pre", "done", "jobs/h", "wait avg", "wait p50",
            "wait p95", "jct avg", "jct p95", "preempts", "lost GPUh", "alloc%", "memid%", "frag%",
            "drf", "jain", "lat p50", "lat p99");
    fprintf(f, topo ? " | %5s %6s\n" : "\n", "racks", "blocks");
    for (size_t i = 0; i < n; i++) {
        const sim_replay_result_t *x = &r[i];
        char q1[16], q2[16], q3[16], j1[16], j2[16], mem[16];
        fmt_dur(q1, sizeof q1, x->queue_delay_s.mean);
        fmt_dur(q2, sizeof q2, x->queue_delay_s.p50);
        fmt_dur(q3, sizeof q3, x->queue_delay_s.p95);
        fmt_dur(j1, sizeof j1, x->jct_s.mean);
        fmt_dur(j2, sizeof j2, x->jct_s.p95);
        if (x->gpu_memory_known) snprintf(mem, sizeof mem, "%.1f", 100 * x->gpu_memory_idle_ratio_mean);
        else snprintf(mem, sizeof mem, "n/a");
        fprintf(f,
                "%-8s %-12s %-5s %-5s %-3s %7zu %7.1f | %8s %8s %8s | %8s %8s | %8zu %9.1f | %6.1f "
                "%6s %6.1f %5.2f %5.2f | %6.0fus %6.0fus",
                x->queue, x->placement, x->backfill, x->cfg.sharing ? "on" : "off",
                x->cfg.preempt ? "on" : "off", x->completed, x->throughput_jobs_per_hour, q1, q2, q3,
                j1, j2, x->preemptions, x->lost_gpu_h,
                100 * x->gpu_allocation_ratio_mean, mem, 100 * x->fragmentation_ratio_mean,
                x->drf_fairness_ratio_mean, x->jain_index_mean, x->lat_p50_us, x->lat_p99_us);
        if (topo) fprintf(f, " | %5.2f %6.2f", x->topo_racks_mean, x->topo_blocks_mean);
        fputc('\n', f);
    }
    size_t rej = n ? r[0].rejected : 0;
    if (rej)
        fprintf(f, "(%zu jobs can never fit this cluster and were rejected; see docs/sim.md)\n", rej);
}

/* ------------------------------------------------------------ JSON */

static int json_write(json_t *root, const char *path, char *err, size_t errlen) {
    int rc = 0;
    if (json_dump_file(root, path, JSON_INDENT(2) | JSON_REAL_PRECISION(10)) != 0) {
        snprintf(err, errlen, "%s: cannot write JSON: %s", path, strerror(errno));
        rc = SL_EIO;
    }
    json_decref(root);
    return rc;
}

static json_t *meansd(double m, double sd) {
    return json_pack("{s:f,s:f}", "mean", m, "sd", sd);
}

int sim_fill_json(const char *path, const sim_fill_result_t *r, size_t n, const char *queue,
                  const char *backfill, char *err, size_t errlen) {
    json_t *root = json_object(), *arr = json_array();
    json_object_set_new(root, "mode", json_string("fill"));
    json_object_set_new(root, "results", arr);
    for (size_t i = 0; i < n; i++) {
        const sim_fill_result_t *x = &r[i];
        json_t *o = json_object(), *u = json_object(), *seeds = json_array(), *curve = json_array();
        json_object_set_new(o, "queue", json_string(queue));
        json_object_set_new(o, "placement", json_string(x->placement));
        json_object_set_new(o, "backfill", json_string(backfill));
        json_object_set_new(u, "100", meansd(x->u100_mean, x->u100_sd));
        json_object_set_new(u, "130", meansd(x->u130_mean, x->u130_sd));
        json_object_set_new(o, "unallocated_pct", u);
        for (size_t k = 0; k < x->nseeds; k++) json_array_append_new(seeds, json_integer((json_int_t)x->seeds[k]));
        json_object_set_new(o, "seeds", seeds);
        for (int g = 0; g < SIM_FILL_GRID_N; g++)
            json_array_append_new(curve, json_pack("{s:f,s:f,s:f}", "arrived_pct",
                                                   g * SIM_FILL_GRID_STEP, "mean", x->mean[g],
                                                   "sd", x->sd[g]));
        json_object_set_new(o, "curve", curve);
        json_object_set_new(o, "fragmentation_pct_100", json_real(x->frag100_mean));
        json_object_set_new(o, "pods_scheduled", json_integer((json_int_t)x->pods_total));
        json_object_set_new(o, "pods_failed", json_integer((json_int_t)x->pods_failed));
        json_object_set_new(o, "sched_latency_us",
                            json_pack("{s:f,s:f}", "p50", x->lat_p50, "p99", x->lat_p99));
        json_object_set_new(o, "wall_s", json_real(x->wall_s));
        json_array_append_new(arr, o);
    }
    return json_write(root, path, err, errlen);
}

static json_t *summary(const sim_summary_t *s) {
    return json_pack("{s:f,s:f,s:f,s:f}", "mean", s->mean, "p50", s->p50, "p95", s->p95, "p99",
                     s->p99);
}

int sim_replay_json(const char *path, const sim_trace_t *t, const sim_replay_result_t *r,
                    size_t n, char *err, size_t errlen) {
    json_t *root = json_object(), *arr = json_array();
    json_object_set_new(root, "mode", json_string("replay"));
    json_object_set_new(root, "results", arr);
    for (size_t i = 0; i < n; i++) {
        const sim_replay_result_t *x = &r[i];
        json_t *o = json_object(), *pt = json_object();
        json_object_set_new(o, "queue", json_string(x->queue));
        json_object_set_new(o, "placement", json_string(x->placement));
        json_object_set_new(o, "backfill", json_string(x->backfill));
        json_object_set_new(o, "gpu_sharing", json_boolean(x->cfg.sharing));
        json_object_set_new(o, "estimate", json_string(x->cfg.estimate_exact ? "exact" : "none"));
        json_object_set_new(o, "jobs", json_integer((json_int_t)x->jobs));
        json_object_set_new(o, "jobs_completed", json_integer((json_int_t)x->completed));
        json_object_set_new(o, "jobs_rejected", json_integer((json_int_t)x->rejected));
        json_object_set_new(o, "makespan_s", json_real(x->makespan_s));
        json_object_set_new(o, "throughput_jobs_per_hour", json_real(x->throughput_jobs_per_hour));
        json_object_set_new(o, "queue_delay_s", summary(&x->queue_delay_s));
        json_object_set_new(o, "jct_s", summary(&x->jct_s));
        json_object_set_new(o, "preempt", json_boolean(x->cfg.preempt));
        json_object_set_new(o, "checkpoint_s", x->cfg.checkpoint_us > 0
                                                   ? json_real((double)x->cfg.checkpoint_us / 1e6)
                                                   : json_null());
        json_object_set_new(o, "preemptions", json_integer((json_int_t)x->preemptions));
        json_object_set_new(o, "elastic_shrinks", json_integer((json_int_t)x->shrinks));
        json_object_set_new(o, "elastic_grows", json_integer((json_int_t)x->grows));
        json_object_set_new(o, "gpu_hours_lost", json_real(x->lost_gpu_h));
        json_object_set_new(o, "gpu_allocation_ratio_mean", json_real(x->gpu_allocation_ratio_mean));
        json_object_set_new(o, "gpu_memory_idle_ratio_mean",
                            x->gpu_memory_known ? json_real(x->gpu_memory_idle_ratio_mean) : json_null());
        json_object_set_new(o, "fragmentation_ratio_mean", json_real(x->fragmentation_ratio_mean));
        json_object_set_new(o, "topology_gangs", json_integer((json_int_t)x->topo_gangs));
        json_object_set_new(o, "topology_racks_per_gang_mean", json_real(x->topo_racks_mean));
        json_object_set_new(o, "topology_blocks_per_gang_mean", json_real(x->topo_blocks_mean));
        json_object_set_new(o, "drf_fairness_ratio_mean", json_real(x->drf_fairness_ratio_mean));
        json_object_set_new(o, "jain_index_mean", json_real(x->jain_index_mean));
        json_object_set_new(o, "sched_latency_us",
                            json_pack("{s:f,s:f}", "p50", x->lat_p50_us, "p99", x->lat_p99_us));
        json_object_set_new(o, "cycles", json_integer((json_int_t)x->cycles));
        json_object_set_new(o, "sched_wall_s", json_real(x->sched_wall_s));
        json_object_set_new(o, "invariant_checks", json_integer((json_int_t)x->checks));
        for (size_t k = 0; k < x->ntenants; k++) {
            const sim_tenant_res_t *tr = &x->tenants[k];
            json_object_set_new(pt, t->tenants[k],
                                json_pack("{s:i,s:I,s:I,s:o,s:o,s:f}", "weight", (int)t->weights[k],
                                          "jobs", (json_int_t)tr->jobs, "jobs_completed",
                                          (json_int_t)tr->completed, "queue_delay_s",
                                          summary(&tr->queue_delay_s), "jct_s", summary(&tr->jct_s),
                                          "gpu_hours", tr->gpu_hours));
        }
        json_object_set_new(o, "per_tenant", pt);
        json_object_set_new(o, "wall_s", json_real(x->wall_s));
        json_array_append_new(arr, o);
    }
    return json_write(root, path, err, errlen);
}

/* ------------------------------------------------------------ per-job CSV */

/* Writes s as a CSV field, quoted when it holds a comma, quote or newline. */
static void csv_put(FILE *f, const char *s) {
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void put_time(FILE *f, int64_t us) {
    if (us < 0) return;
    if (us % 1000000 == 0) fprintf(f, "%" PRId64, us / 1000000);
    else fprintf(f, "%.6f", (double)us / 1e6);
}

int sim_jobs_csv(const char *path, const sim_trace_t *t, const sim_replay_result_t *r, char *err,
                 size_t errlen) {
    FILE *f = fopen(path, "w");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -errno;
    }
    fprintf(f, "id,tenant,submit,start,end,tasks,gpus,nodes\n");
    for (size_t i = 0; i < r->nrecs; i++) {
        const sim_job_t *j = &t->jobs[i];
        const sim_job_rec_t *x = &r->recs[i];
        csv_put(f, j->name);
        fputc(',', f);
        csv_put(f, t->tenants[j->tenant]);
        fputc(',', f);
        put_time(f, j->submit_us);
        fputc(',', f);
        put_time(f, x->start_us);
        fputc(',', f);
        put_time(f, x->end_us);
        /* gpus: per task, as the job asked (a share written as 0.25). */
        char g[32];
        if (j->gpus > 0) snprintf(g, sizeof g, "%d", j->gpus);
        else if (j->gpu_milli > 0 && r->cfg.sharing) sl_qty_format(j->gpu_milli, SL_QTY_GPU, g, sizeof g);
        else if (j->gpu_milli > 0) snprintf(g, sizeof g, "1");
        else snprintf(g, sizeof g, "0");
        fprintf(f, ",%d,%s,", x->start_us >= 0 ? x->tasks : j->ntasks, g);
        csv_put(f, x->nodes ? x->nodes : "");
        fputc('\n', f);
    }
    if (fclose(f) != 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return SL_EIO;
    }
    return 0;
}
