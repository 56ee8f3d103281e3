/*
 * bench_sched.c - cost of one scheduling cycle against the length of the
 * pending queue, as the live controller runs it (one sl_sched_cycle after
 * every batch of events, e.g. each submission or each job end).
 *
 * Workload: 10,000 nodes x 8 GPUs (96 CPUs, 384 GiB). The cluster is full:
 * 20,000 running jobs of 4 GPUs, each with a time limit of 1-10 h (so EASY
 * has a reservation and a timeline to walk). Then P pending jobs (P =
 * 10,000 and 100,000) from 8 tenants of equal weight, submitted one per
 * second, with time limits of 10 min - 10 h. Two shape mixes:
 *  - "few": the usual case, a handful of shapes (1, 2, 4, 8 GPUs per task,
 *    and 4-task gangs of 8 GPUs), so each tenant has 5 shape groups;
 *  - "distinct": every job asks for a different amount of memory, so no two
 *    pending jobs share a shape (the worst case for skipping by shape; here
 *    EASY's max_backfill_tries is what bounds a cycle).
 * Measured, for each (mix, P, queue/backfill): K cycles each right after
 * one submission ("submit"), and K cycles each right after the job with
 * the earliest expected end finished, at that time ("finish"; the freed
 * GPUs may start the reserved job or backfill others). Only sl_sched_cycle
 * is timed (clock_gettime(CLOCK_MONOTONIC)); the submission, the finish and
 * finding the next end are not.
 *
 * Output: one line per case on stdout,
 *   bench sched mix=M pending=P queue=Q backfill=B event=E cycles=K mean_us=N p50_us=N p99_us=N max_us=N started=N
 * Usage: bench_sched [cycles]  (default 200). Built by bench/CMakeLists.txt
 * as build/bench/bench_sched; it uses only the public API, so the same file
 * builds against an older libsluice for before/after figures.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sluice/sluice.h"

#include "benchcycle.h"

#define NODES 10000
#define RUNNING 20000
#define TENANTS 8
#define GI (INT64_C(1) << 30)
#define SEC INT64_C(1000000)

static sl_job_spec_t pending_spec(sl_rng_t *r, uint64_t id, int64_t submit, bool distinct) {
    static const int32_t gpus[5] = {1, 2, 4, 8, 8};
    int k = (int)sl_rng_below(r, 5);
    sl_job_spec_t sp = {.id = id, .tenant = (int32_t)sl_rng_below(r, TENANTS),
                        .submit_us = submit, .ntasks = k == 4 ? 4 : 1,
                        .time_limit_us = (600 + (int64_t)sl_rng_below(r, 36000 - 600)) * SEC};
    sl_task_req_init(&sp.task);
    sp.task.gpus = gpus[k];
    sp.task.cpu_milli = 4000 * gpus[k];
    sp.task.mem_bytes = 16 * GI * gpus[k];
    if (distinct) sp.task.mem_bytes += (int64_t)id * 4096; /* a shape of its own */
    return sp;
}

static void run_case(const char *mix, int npending, const char *queue, const char *backfill,
                     int cycles) {
    bool distinct = strcmp(mix, "distinct") == 0;
    sl_cluster_t *cl;
    char err[256];
    if (sl_cluster_create(&cl) != 0) abort();
    for (int i = 0; i < NODES; i++) {
        char name[32];
        snprintf(name, sizeof name, "n%05d", i);
        sl_node_spec_t ns = {.name = name, .cpu_milli = 96000, .mem_bytes = 384 * GI,
                             .gpus = 8, .gpu_model = "A100", .gpu_mem_bytes = 80 * GI};
        if (sl_cluster_add_node(cl, &ns, NULL, err, sizeof err) != 0) {
            fprintf(stderr, "node: %s\n", err);
            exit(1);
        }
    }
    sl_sched_config_t cfg;
    sl_sched_config_init(&cfg);
    cfg.queue = queue;
    cfg.backfill = backfill;
    cfg.placement = "bestfit";
    cfg.seed = 7;
    sl_sched_t *s;
    if (sl_sched_create(&cfg, cl, &s, err, sizeof err) != 0) {
        fprintf(stderr, "sched: %s\n", err);
        exit(1);
    }
    for (int i = 0; i < TENANTS; i++) {
        char name[16];
        snprintf(name, sizeof name, "t%d", i);
        sl_tenant_spec_t ts = {.name = name, .weight = 1};
        if (sl_sched_add_tenant(s, &ts) < 0) abort();
    }
    sl_rng_t r;
    sl_rng_seed(&r, 20240601);
    /* Fill the cluster: 20,000 running jobs of 4 GPUs. */
    uint64_t id = 1;
    for (int i = 0; i < RUNNING; i++, id++) {
        sl_job_spec_t sp = {.id = id, .tenant = i % TENANTS, .submit_us = 0, .ntasks = 1,
                            .time_limit_us = (3600 + (int64_t)sl_rng_below(&r, 32400)) * SEC};
        sl_task_req_init(&sp.task);
        sp.task.gpus = 4;
        sp.task.cpu_milli = 16000;
        sp.task.mem_bytes = 64 * GI;
        if (sl_sched_submit(s, &sp, err, sizeof err) != 0) abort();
    }
    sl_sched_cycle(s, 0, NULL, NULL, NULL);
    if (sl_sched_running_count(s) != RUNNING) {
        fprintf(stderr, "fill: %zu running\n", sl_sched_running_count(s));
        exit(1);
    }
    int64_t now = 1;
    for (int i = 0; i < npending; i++, id++, now++) {
        sl_job_spec_t sp = pending_spec(&r, id, now * SEC, distinct);
        if (sl_sched_submit(s, &sp, err, sizeof err) != 0) abort();
    }
    int64_t t_us = now * SEC;
    sl_sched_cycle(s, t_us, NULL, NULL, NULL); /* settle: the first reservation */

    double *lat = malloc((size_t)cycles * sizeof *lat);
    for (int ev = 0; ev < 2; ev++) {
        long started = 0;
        for (int k = 0; k < cycles; k++) {
            if (ev == 0) {
                t_us += SEC;
                sl_job_spec_t sp = pending_spec(&r, id++, t_us, distinct);
                if (sl_sched_submit(s, &sp, err, sizeof err) != 0) abort();
            } else {
                end_scan_t e = {INT64_MAX, 0};
                sl_sched_foreach(s, SL_JOB_RUNNING, find_first_end, &e);
                if (e.end > t_us) t_us = e.end;
                if (sl_sched_finish(s, e.id, t_us) != 0) abort();
            }
            double t0 = now_s();
            started += sl_sched_cycle(s, t_us, NULL, NULL, NULL);
            lat[k] = (now_s() - t0) * 1e6;
        }
        double sum = 0;
        for (int k = 0; k < cycles; k++) sum += lat[k];
        qsort(lat, (size_t)cycles, sizeof *lat, cmp_double);
        printf("bench sched mix=%s pending=%d queue=%s backfill=%s event=%s cycles=%d "
               "mean_us=%.1f p50_us=%.1f p99_us=%.1f max_us=%.1f started=%ld\n",
               mix, npending, queue, backfill, ev == 0 ? "submit" : "finish", cycles,
               sum / cycles, lat[cycles / 2], lat[(cycles * 99) / 100], lat[cycles - 1], started);
        fflush(stdout);
    }
    free(lat);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

int main(int argc, char **argv) {
    int cycles = argc > 1 ? atoi(argv[1]) : 200;
    if (cycles < 1) cycles = 1;
    static const char *const combos[][2] = {{"fifo", "none"}, {"fifo", "easy"}, {"drf", "easy"}};
    static const char *const mixes[] = {"few", "distinct"};
    static const int sizes[] = {10000, 100000};
    for (size_t m = 0; m < 2; m++)
        for (size_t p = 0; p < 2; p++)
            for (size_t c = 0; c < 3; c++) {
                if (m == 1 && c == 0) continue; /* strict order stops at the head anyway */
                run_case(mixes[m], sizes[p], combos[c][0], combos[c][1], cycles);
            }
    return 0;
}
