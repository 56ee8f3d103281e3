/*
 * test_sim_run.c - the fill protocol's arrival order (shuffle, inflation by
 * sampling with replacement, trimming), its curve, and small fill and
 * replay runs whose every number (fairness included) is worked out by hand.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sim.h"
#include "simtest.h"

#define NEAR(a, b) assert_true(fabs((a) - (b)) < 1e-9)

/* ---- the arrival order ---- */

static void test_sim_fill_order_inflates(void **state) {
    (void)state;
    /* 10 pods of 100..1000 milli (5500), capacity 10000: target 13000. */
    int64_t req[10];
    for (int i = 0; i < 10; i++) req[i] = 100 * (i + 1);
    size_t *ord, n;
    sim_fill_order(req, 10, 10000, 130, 42, &ord, &n);
    assert_true(n > 10);
    /* The originals come first, each exactly once. */
    int seen[10] = {0};
    for (size_t i = 0; i < 10; i++) seen[ord[i]]++;
    for (int i = 0; i < 10; i++) assert_int_equal(seen[i], 1);
    /* Appended pods are draws from the list; the last one crosses 130%. */
    int64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        assert_true(ord[i] < 10);
        total += req[ord[i]];
    }
    assert_true(total >= 13000);
    assert_true(total - req[ord[n - 1]] < 13000);
    /* Same seed, same order; another seed, another order. */
    size_t *ord2, n2;
    sim_fill_order(req, 10, 10000, 130, 42, &ord2, &n2);
    assert_int_equal(n, n2);
    assert_memory_equal(ord, ord2, n * sizeof *ord);
    sl_free(ord2);
    sim_fill_order(req, 10, 10000, 130, 43, &ord2, &n2);
    assert_true(n != n2 || memcmp(ord, ord2, n * sizeof *ord) != 0);
    sl_free(ord2);
    sl_free(ord);
}

static void test_sim_fill_order_trims(void **state) {
    (void)state;
    /* 20 pods of 1000 milli (20000) on capacity 10000: target 13000, so
     * random pods go until the total is at most 13000: exactly 13 stay. */
    int64_t req[20];
    for (int i = 0; i < 20; i++) req[i] = 1000;
    size_t *ord, n;
    sim_fill_order(req, 20, 10000, 130, 7, &ord, &n);
    assert_int_equal(n, 13);
    int seen[20] = {0};
    for (size_t i = 0; i < n; i++) assert_int_equal(seen[ord[i]]++, 0);
    sl_free(ord);
    /* Exactly at the target: nothing added or removed. */
    int64_t r13[13];
    for (int i = 0; i < 13; i++) r13[i] = 1000;
    sim_fill_order(r13, 13, 10000, 130, 7, &ord, &n);
    assert_int_equal(n, 13);
    sl_free(ord);
    /* No GPU pods: no inflation (it could never reach the target). */
    int64_t cpu[3] = {0, 0, 0};
    sim_fill_order(cpu, 3, 10000, 130, 7, &ord, &n);
    assert_int_equal(n, 3);
    sl_free(ord);
}

static void test_sim_curve_step(void **state) {
    (void)state;
    double x[] = {30, 60, 90, 120, 150};
    double y[] = {70, 40, 40, 40, 40};
    NEAR(sim_curve_at(x, y, 5, 100, 0), 100);
    NEAR(sim_curve_at(x, y, 5, 100, 29.5), 100);
    NEAR(sim_curve_at(x, y, 5, 100, 30), 70);
    NEAR(sim_curve_at(x, y, 5, 100, 59.9), 70);
    NEAR(sim_curve_at(x, y, 5, 100, 100), 40);
    NEAR(sim_curve_at(x, y, 5, 100, 130), 40);
}

/* ---- a whole fill run ---- */

static void test_sim_fill_run_by_hand(void **state) {
    (void)state;
    /* One node with 2 GPUs; pods ask 0.6 of a GPU. Arrivals: 30, 60, 90,
     * 120, 150 % of capacity (inflated from 2 pods to 5). Two fit (one per
     * GPU), the rest cannot use the 0.4 left on each: unallocated is 70%
     * after the first and 40% from the second on, for every seed. */
    char pn[256], pj[256], err[512];
    simtest_put("n.csv", "name,cpu,memory,gpus,gpu_model,gpu_memory,pool\nn1,64,256Gi,2,T4,16Gi,\n", pn,
        sizeof pn);
    simtest_put("p.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,1024,1,600\n"
                 "p1,1000,1024,1,600\n", pj, sizeof pj);
    sim_trace_t t;
    sim_trace_init(&t);
    assert_int_equal(sim_load(&t, pn, pj, NULL, SIM_FMT_AUTO, err, sizeof err), 0);
    uint64_t seeds[] = {1, 2, 3};
    sim_run_opts_t o = {.check = true, .progress = false};
    const sl_place_policy_t *const *pols = sl_place_policy_list();
    for (size_t p = 0; pols[p]; p++) {
        sim_fill_result_t r;
        int rc = sim_fill_run(&t, pols[p]->name, seeds, 3, &o, &r, err, sizeof err);
        if (rc != 0) fail_msg("%s: %s", pols[p]->name, err);
        NEAR(r.u100_mean, 40);
        NEAR(r.u100_sd, 0);
        NEAR(r.u130_mean, 40);
        NEAR(r.mean[(int)(50 / SIM_FILL_GRID_STEP)], 70);
        NEAR(r.mean[0], 100);
        assert_int_equal(r.pods_total, 15);
        assert_int_equal(r.pods_failed, 9);
        assert_int_equal(r.nlat, 15);
        sim_fill_result_fini(&r);
    }
    sim_trace_fini(&t);
}

/* ---- a whole replay ---- */

static sim_replay_result_t replay(const char *nodes, const char *jobs, const char *queue,
                                  const char *backfill, bool sharing, sim_trace_t *t) {
    char pn[256], pj[256], err[512];
    simtest_put("n.csv", nodes, pn, sizeof pn);
    simtest_put("j.csv", jobs, pj, sizeof pj);
    sim_trace_init(t);
    assert_int_equal(sim_load(t, pn, pj, NULL, SIM_FMT_AUTO, err, sizeof err), 0);
    sim_replay_cfg_t cfg = {.queue = queue, .placement = "bestfit", .backfill = backfill,
                            .sharing = sharing, .estimate_exact = true, .seed = 1};
    sim_run_opts_t o = {.check = true};
    sim_replay_result_t r;
    int rc = sim_replay_run(t, &cfg, &o, &r, err, sizeof err);
    if (rc != 0) fail_msg("replay: %s", err);
    return r;
}

static const char *ONE_GPU = "name,cpu,memory,gpus,gpu_model,gpu_memory\nn1,8,64Gi,1,A100,80Gi\n";

static void test_sim_replay_fifo_by_hand(void **state) {
    (void)state;
    /* a runs 0..10; b (submitted at 1) waits for it, runs 10..15; c asks
     * for 2 GPUs, more than any node has: rejected; d has a time limit of
     * 3 s below its 10 s duration and is killed at the limit: 15..18. */
    sim_trace_t t;
    sim_replay_result_t r = replay(ONE_GPU,
                                   "id,tenant,submit,duration,gpus,time_limit\n"
                                   "a,x,0,10,1,\n"
                                   "b,y,1,5,1,\n"
                                   "c,x,2,5,2,\n"
                                   "d,x,3,10,1,3\n",
                                   "fifo", "none", true, &t);
    assert_int_equal(r.jobs, 4);
    assert_int_equal(r.completed, 3);
    assert_int_equal(r.rejected, 1);
    assert_true(r.recs[2].rejected);
    assert_int_equal(r.recs[0].start_us, 0);
    assert_int_equal(r.recs[1].start_us, 10000000);
    assert_int_equal(r.recs[1].end_us, 15000000);
    assert_int_equal(r.recs[3].start_us, 15000000);
    assert_int_equal(r.recs[3].end_us, 18000000);
    assert_string_equal(r.recs[1].nodes, "n1");
    /* Queueing delays 0, 9, 12; JCTs 10, 14, 15. */
    NEAR(r.queue_delay_s.mean, 7);
    NEAR(r.queue_delay_s.p50, 9);
    NEAR(r.jct_s.mean, 13);
    NEAR(r.makespan_s, 18);
    NEAR(r.throughput_jobs_per_hour, 3 / (18.0 / 3600));
    /* The GPU is busy the whole 18 s; a whole GPU's memory counts as used. */
    NEAR(r.gpu_allocation_ratio_mean, 1);
    assert_true(r.gpu_memory_known);
    NEAR(r.gpu_memory_idle_ratio_mean, 0);
    assert_true(r.checks > 0);
    assert_int_equal(r.ntenants, 2);
    assert_int_equal(r.tenants[1].completed, 1);
    NEAR(r.tenants[1].queue_delay_s.mean, 9);
    sim_replay_result_fini(&r);
    sim_trace_fini(&t);
}

static void test_sim_replay_sharing_memory_idle(void **state) {
    (void)state;
    /* Two trials of 0.25 GPU and 20Gi each, on one 80Gi GPU, both 0..100.
     * Shared: one GPU holds both, 40 of 80Gi asked: 50% idle, 50% of GPU
     * allocated. Whole GPUs (static): the second waits; one GPU holds 20Gi
     * of 80Gi: 75% idle, allocation 100%. */
    const char *jobs = "id,tenant,submit,duration,gpu_share,gpu_memory\n"
                       "a,x,0,100,0.25,20Gi\n"
                       "b,x,0,100,0.25,20Gi\n";
    sim_trace_t t;
    sim_replay_result_t r = replay(ONE_GPU, jobs, "fifo", "none", true, &t);
    NEAR(r.gpu_memory_idle_ratio_mean, 0.5);
    NEAR(r.gpu_allocation_ratio_mean, 0.5);
    NEAR(r.makespan_s, 100);
    sim_replay_result_fini(&r);
    sim_trace_fini(&t);
    r = replay(ONE_GPU, jobs, "fifo", "none", false, &t);
    NEAR(r.gpu_memory_idle_ratio_mean, 0.75);
    NEAR(r.gpu_allocation_ratio_mean, 1);
    NEAR(r.makespan_s, 200);
    NEAR(r.queue_delay_s.mean, 50);
    sim_replay_result_fini(&r);
    sim_trace_fini(&t);
}

static const char *TWO_GPUS = "name,cpu,memory,gpus,gpu_model,gpu_memory\nn1,8,64Gi,2,A100,80Gi\n";

/*
 * Fairness (sluice/fair.h) by hand. x submits four 1-GPU jobs of 10 s at
 * 0 on 2 GPUs; y one at 1. [0,1): only x waits and holds the cluster it
 * is owed: ratio 1. [1,10): both are owed 1 GPU (0.5); x holds 2 (held /
 * fair = 2), y none (0): ratio 0, Jain (2)^2 / (2 * 4) = 0.5. At 10 fifo
 * starts x's a3 and a4 and y waits alone until 20: ratio 0, Jain 1 (one
 * tenant). drf starts a3 (tie at share 0, earlier submit) then y's b1: x,
 * still waiting for a4, holds the 1 GPU it is owed: ratio 1, Jain 1. From
 * 20 nobody waits (not counted). Means over [0,20): fifo ratio 1/20, drf
 * 11/20; Jain (1 + 9 * 0.5 + 10) / 20 both.
 */
static void test_sim_replay_fairness_by_hand(void **state) {
    (void)state;
    const char *jobs = "id,tenant,submit,duration,gpus\n"
                       "a1,x,0,10,1\na2,x,0,10,1\na3,x,0,10,1\na4,x,0,10,1\n"
                       "b1,y,1,10,1\n";
    sim_trace_t t;
    sim_replay_result_t r = replay(TWO_GPUS, jobs, "fifo", "none", true, &t);
    assert_int_equal(r.recs[4].start_us, 20000000);
    NEAR(r.drf_fairness_ratio_mean, 1.0 / 20);
    NEAR(r.jain_index_mean, 15.5 / 20);
    sim_replay_result_fini(&r);
    sim_trace_fini(&t);
    r = replay(TWO_GPUS, jobs, "drf", "none", true, &t);
    assert_int_equal(r.recs[4].start_us, 10000000);
    assert_int_equal(r.recs[3].start_us, 20000000);
    NEAR(r.drf_fairness_ratio_mean, 11.0 / 20);
    NEAR(r.jain_index_mean, 15.5 / 20);
    sim_replay_result_fini(&r);
    sim_trace_fini(&t);
}

static void test_sim_replay_needs_times(void **state) {
    (void)state;
    char pn[256], pj[256], err[512];
    simtest_put("n.csv", ONE_GPU, pn, sizeof pn);
    simtest_put("p.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,1024,1,600\n", pj, sizeof pj);
    sim_trace_t t;
    sim_trace_init(&t);
    assert_int_equal(sim_load(&t, pn, pj, NULL, SIM_FMT_AUTO, err, sizeof err), 0);
    sim_replay_cfg_t cfg = {.queue = "fifo", .placement = "bestfit", .backfill = "none",
                            .sharing = true, .estimate_exact = true};
    sim_run_opts_t o = {0};
    sim_replay_result_t r;
    assert_int_equal(sim_replay_run(&t, &cfg, &o, &r, err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, "replay needs submit times and durations"));
    sim_trace_fini(&t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sim_fill_order_inflates),
        cmocka_unit_test(test_sim_fill_order_trims),
        cmocka_unit_test(test_sim_curve_step),
        cmocka_unit_test(test_sim_fill_run_by_hand),
        cmocka_unit_test(test_sim_replay_fifo_by_hand),
        cmocka_unit_test(test_sim_replay_sharing_memory_idle),
        cmocka_unit_test(test_sim_replay_fairness_by_hand),
        cmocka_unit_test(test_sim_replay_needs_times),
    };
    return cmocka_run_group_tests(tests, simtest_setup, simtest_teardown);
}
