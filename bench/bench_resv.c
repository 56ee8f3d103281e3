/*
 * bench_resv.c - cost of one scheduling cycle with advance reservations
 * (sluice/resv.h), against the same cycle without any.
 *
 * Workload: bench_sched.c's "few" mix. 10,000 nodes x 8 GPUs, full with
 * 20,000 running jobs of 4 GPUs (time limits 1-10 h), 10,000 pending jobs
 * of five shapes from 8 tenants (time limits 10 min - 10 h), DRF with EASY
 * backfill. Then R reservations (R = 0, 4, 32) of 16 named nodes each
 * (ignore_jobs: the nodes are busy now), windows starting 2 h after the
 * last submission, 4 h long ("ahead"), or open all along ("open"), each
 * for tenant t0; with R > 0, 5% of the
 * pending jobs (t0's) name a reservation. With a reservation a job's
 * attempt takes the nodes it may not use out of the index and puts them
 * back, and the cycle examines jobs one by one instead of skipping shape
 * groups (EASY's max_backfill_tries, 500, bounds how many).
 *
 * Measured, for each R: K cycles right after one submission ("submit")
 * and K cycles right after the running job with the earliest expected end
 * finished ("finish"). Only sl_sched_cycle is timed.
 *
 * Output: one line per case,
 *   bench resv reservations=R windows=W event=E cycles=K mean_us=N p50_us=N p99_us=N max_us=N started=N
 * Usage: bench_resv [cycles] (default 200); build/bench/bench_resv.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sluice/sluice.h"

#include "benchcycle.h"

#define NODES 10000
#define RUNNING 20000
#define PENDING 10000
#define TENANTS 8
#define GI (INT64_C(1) << 30)
#define SEC INT64_C(1000000)

static sl_job_spec_t pending_spec(sl_rng_t *r, uint64_t id, int64_t submit, int nresv,
                                  const int32_t *rids) {
    static const int32_t gpus[5] = {1, 2, 4, 8, 8};
    int k = (int)sl_rng_below(r, 5);
    sl_job_spec_t sp = {.id = id, .tenant = (int32_t)sl_rng_below(r, TENANTS),
                        .submit_us = submit, .ntasks = k == 4 ? 4 : 1,
                        .time_limit_us = (600 + (int64_t)sl_rng_below(r, 36000 - 600)) * SEC};
    sl_task_req_init(&sp.task);
    sp.task.gpus = gpus[k];
    sp.task.cpu_milli = 4000 * gpus[k];
    sp.task.mem_bytes = 16 * GI * gpus[k];
    if (nresv > 0 && sl_rng_below(r, 20) == 0) {
        sp.tenant = 0;
        sp.resv = rids[sl_rng_below(r, (uint64_t)nresv)];
    }
    return sp;
}

static void run_case(int nresv, bool open, int cycles) {
    sl_cluster_t *cl;
    char err[256];
    if (sl_cluster_create(&cl) != 0) abort();
    for (int i = 0; i < NODES; i++) {
        char name[32];
        snprintf(name, sizeof name, "n%05d", i);
        sl_node_spec_t ns = {.name = name, .cpu_milli = 96000, .mem_bytes = 384 * GI,
                             .gpus = 8, .gpu_model = "A100", .gpu_mem_bytes = 80 * GI};
        if (sl_cluster_add_node(cl, &ns, NULL, err, sizeof err) != 0) abort();
    }
    sl_sched_config_t cfg;
    sl_sched_config_init(&cfg);
    cfg.queue = "drf";
    cfg.backfill = "easy";
    cfg.placement = "bestfit";
    cfg.seed = 7;
    sl_sched_t *s;
    if (sl_sched_create(&cfg, cl, &s, err, sizeof err) != 0) abort();
    for (int i = 0; i < TENANTS; i++) {
        char name[16];
        snprintf(name, sizeof name, "t%d", i);
        sl_tenant_spec_t ts = {.name = name, .weight = 1};
        if (sl_sched_add_tenant(s, &ts) < 0) abort();
    }
    sl_rng_t r;
    sl_rng_seed(&r, 20240601);
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
    int64_t now = PENDING + 1;
    int32_t rids[32];
    for (int k = 0; k < nresv; k++) {
        uint32_t nodes[16];
        for (int i = 0; i < 16; i++) nodes[i] = (uint32_t)(k * 16 + i) * 7 % NODES;
        char name[16];
        snprintf(name, sizeof name, "r%d", k);
        int32_t t0 = 0;
        int64_t at = open ? 0 : (now + 7200) * SEC;
        sl_resv_spec_t rs = {.name = name, .start_us = at,
                             .end_us = at + (open ? 100000 : 14400) * SEC, .nodes = nodes, .nnodes = 16,
                             .tenants = &t0, .ntenants = 1, .ignore_jobs = true};
        if (sl_sched_resv_add(s, &rs, 0, &rids[k], err, sizeof err) != 0) {
            fprintf(stderr, "resv: %s\n", err);
            exit(1);
        }
    }
    now = 1;
    for (int i = 0; i < PENDING; i++, id++, now++) {
        sl_job_spec_t sp = pending_spec(&r, id, now * SEC, nresv, rids);
        if (sl_sched_submit(s, &sp, err, sizeof err) != 0) abort();
    }
    int64_t t_us = now * SEC;
    sl_sched_cycle(s, t_us, NULL, NULL, NULL);

    double *lat = malloc((size_t)cycles * sizeof *lat);
    for (int ev = 0; ev < 2; ev++) {
        long started = 0;
        for (int k = 0; k < cycles; k++) {
            if (ev == 0) {
                t_us += SEC;
                sl_job_spec_t sp = pending_spec(&r, id++, t_us, nresv, rids);
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
        printf("bench resv reservations=%d windows=%s event=%s cycles=%d mean_us=%.1f "
               "p50_us=%.1f p99_us=%.1f max_us=%.1f started=%ld\n", nresv,
               open ? "open" : "ahead", ev == 0 ? "submit" : "finish",
               cycles, sum / cycles, lat[cycles / 2], lat[(cycles * 99) / 100], lat[cycles - 1],
               started);
        fflush(stdout);
    }
    free(lat);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

int main(int argc, char **argv) {
    int cycles = argc > 1 ? atoi(argv[1]) : 200;
    if (cycles < 1) cycles = 1;
    static const int counts[] = {0, 4, 32};
    for (size_t i = 0; i < 3; i++) run_case(counts[i], false, cycles);
    for (size_t i = 1; i < 3; i++) run_case(counts[i], true, cycles);
    return 0;
}
