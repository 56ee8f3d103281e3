/*
 * test_fair.c - fair shares by DRF's progressive filling and the fairness
 * figures (sluice/fair.h): hand-computed cases (equal weights, 2:1
 * weights, a tenant whose demand is below its share, the NSDI'11 paper's
 * two-resource example, a resource one tenant does not use, nobody
 * backlogged, one tenant), the bottleneck property of weighted max-min
 * fairness on seeded random inputs, and sl_sched_fairness over a live
 * scheduler as jobs queue, start and end.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "testutil.h"

#define GB (INT64_C(1) << 30)
#define EPS 1e-9
#define NEAR(a, b) assert_true(fabs((double)(a) - (double)(b)) < 1e-9)

/* A cluster of 100 GPUs with CPU and memory to spare (1,000,000 CPUs). */
static const sl_res_t CAP100 = {INT64_C(1000000000), INT64_C(1) << 50, 100 * SL_GPU_MILLI};

static sl_res_t gpus(int64_t n) {
    return (sl_res_t){0, 0, n * SL_GPU_MILLI};
}

static sl_fair_tenant_t tenant(int32_t w, sl_res_t held, sl_res_t pending) {
    return (sl_fair_tenant_t){.weight = w,
                              .held = held,
                              .pending = pending,
                              .backlogged = pending.cpu_milli || pending.mem_bytes ||
                                            pending.gpu_milli};
}

static void test_fair_equal_weights_split_evenly(void **state) {
    (void)state;
    /* Both want the whole cluster: each is owed 50 GPUs. a holds 10, b 30. */
    sl_fair_tenant_t t[] = {tenant(1, gpus(10), gpus(90)), tenant(1, gpus(30), gpus(100))};
    sl_fair_summary_t sum;
    assert_int_equal(sl_fair_compute(CAP100, t, 2, &sum), 0);
    NEAR(t[0].fair_share, 0.5);
    NEAR(t[1].fair_share, 0.5);
    NEAR(t[0].held_share, 0.1);
    NEAR(t[1].held_share, 0.3);
    NEAR(t[0].deficit, 0.4);
    NEAR(t[1].deficit, 0.2);
    assert_int_equal(sum.counted, 2);
    /* x = (0.2, 0.6): ratio 0.2; Jain 0.8^2 / (2 * (0.04 + 0.36)) = 0.8. */
    NEAR(sum.drf_ratio, 0.2);
    NEAR(sum.jain, 0.8);
}

static void test_fair_weights_two_to_one(void **state) {
    (void)state;
    /* Weights 2:1, both want everything: owed 2/3 and 1/3. a holds 60, b 40. */
    sl_fair_tenant_t t[] = {tenant(2, gpus(60), gpus(100)), tenant(1, gpus(40), gpus(100))};
    sl_fair_summary_t sum;
    assert_int_equal(sl_fair_compute(CAP100, t, 2, &sum), 0);
    NEAR(t[0].fair_share, 2.0 / 3);
    NEAR(t[1].fair_share, 1.0 / 3);
    NEAR(t[0].deficit, 2.0 / 3 - 0.6);
    NEAR(t[1].deficit, 1.0 / 3 - 0.4);
    /* x = (0.9, 1.2): the ratio caps b at 1 and reads a's 0.9. */
    NEAR(sum.drf_ratio, 0.9);
    NEAR(sum.jain, 2.1 * 2.1 / (2 * (0.81 + 1.44)));
    /* Holding exactly the fair shares is perfectly fair. */
    t[0].held = (sl_res_t){0, 0, 200000 / 3};
    t[1].held = (sl_res_t){0, 0, 100000 / 3};
    t[0].pending = gpus(100);
    t[1].pending = gpus(100);
    assert_int_equal(sl_fair_compute(CAP100, t, 2, &sum), 0);
    assert_true(sum.drf_ratio > 1 - 1e-4);
    assert_true(sum.jain > 1 - 1e-8);
}

static void test_fair_surplus_of_small_demand_goes_to_others(void **state) {
    (void)state;
    /* 90 GPUs; a wants 10, b and c want 100 each: a gets its 10, and the
     * 80 left split 40/40 (not 30 each). */
    sl_res_t cap = {INT64_C(1000000000), INT64_C(1) << 50, 90 * SL_GPU_MILLI};
    sl_fair_tenant_t t[] = {tenant(1, gpus(0), gpus(10)), tenant(1, gpus(50), gpus(50)),
                            tenant(1, gpus(40), gpus(60))};
    sl_fair_summary_t sum;
    assert_int_equal(sl_fair_compute(cap, t, 3, &sum), 0);
    NEAR(t[0].fair_share, 10.0 / 90);
    NEAR(t[1].fair_share, 40.0 / 90);
    NEAR(t[2].fair_share, 40.0 / 90);
    NEAR(t[0].deficit, 10.0 / 90);
    NEAR(t[1].deficit, -10.0 / 90);
    NEAR(t[2].deficit, 0);
    /* a holds nothing of what it is owed: starved. */
    NEAR(sum.drf_ratio, 0);
    NEAR(sum.jain, (0 + 1.25 + 1.0) * (0 + 1.25 + 1.0) / (3 * (1.5625 + 1.0)));
}

static void test_fair_nsdi_paper_example(void **state) {
    (void)state;
    /* 9 CPUs, 18 GB; a's tasks <1 CPU, 4 GB>, b's <3 CPUs, 1 GB>, both with
     * more tasks than fit. DRF: 3 tasks of a (2/3 of memory), 2 of b (2/3
     * of CPU): both dominant shares 2/3, and the CPUs run out. */
    sl_res_t cap = {9000, 18 * GB, 0};
    sl_fair_tenant_t t[] = {tenant(1, (sl_res_t){0, 0, 0}, (sl_res_t){9000, 36 * GB, 0}),
                            tenant(1, (sl_res_t){0, 0, 0}, (sl_res_t){27000, 9 * GB, 0})};
    assert_int_equal(sl_fair_compute(cap, t, 2, NULL), 0);
    NEAR(t[0].fair_share, 2.0 / 3);
    NEAR(t[1].fair_share, 2.0 / 3);
    /* Holding what DRF gives: 3 and 2 tasks. */
    t[0].held = (sl_res_t){3000, 12 * GB, 0};
    t[1].held = (sl_res_t){6000, 2 * GB, 0};
    sl_fair_summary_t sum;
    assert_int_equal(sl_fair_compute(cap, t, 2, &sum), 0);
    NEAR(t[0].held_share, 2.0 / 3);
    NEAR(t[1].held_share, 2.0 / 3);
    NEAR(sum.drf_ratio, 1);
    NEAR(sum.jain, 1);
}

static void test_fair_unused_resource_does_not_stop_others(void **state) {
    (void)state;
    /* 10 GPUs, 100 CPUs. a: GPU jobs wanting 20 GPUs and 10 CPUs; b: CPU
     * jobs wanting 80 CPUs and no GPU. b's demand is met at 0.8; a goes on
     * until the GPUs run out at 1.0 (CPU use 0.8 + 0.05 < 1). */
    sl_res_t cap = {100000, 0, 10 * SL_GPU_MILLI};
    sl_fair_tenant_t t[] = {tenant(1, (sl_res_t){0, 0, 0}, (sl_res_t){10000, 0, 20000}),
                            tenant(1, (sl_res_t){0, 0, 0}, (sl_res_t){80000, 0, 0})};
    assert_int_equal(sl_fair_compute(cap, t, 2, NULL), 0);
    NEAR(t[0].fair_share, 1.0);
    NEAR(t[1].fair_share, 0.8);
}

static void test_fair_nobody_backlogged_reads_fair(void **state) {
    (void)state;
    /* a holds half the cluster and wants no more; b is idle. */
    sl_fair_tenant_t t[] = {tenant(1, gpus(50), gpus(0)), tenant(3, gpus(0), gpus(0))};
    sl_fair_summary_t sum = {99, 0, 0};
    assert_int_equal(sl_fair_compute(CAP100, t, 2, &sum), 0);
    NEAR(t[0].fair_share, 0.5);
    NEAR(t[0].deficit, 0);
    NEAR(t[1].fair_share, 0);
    NEAR(t[1].deficit, 0);
    assert_int_equal(sum.counted, 0);
    NEAR(sum.drf_ratio, 1);
    NEAR(sum.jain, 1);
    /* No tenants at all. */
    assert_int_equal(sl_fair_compute(CAP100, NULL, 0, &sum), 0);
    assert_int_equal(sum.counted, 0);
    NEAR(sum.drf_ratio, 1);
}

static void test_fair_one_tenant(void **state) {
    (void)state;
    /* Alone and wanting 130 GPUs of 100: owed the whole cluster. */
    sl_fair_tenant_t t[] = {tenant(1, gpus(30), gpus(100))};
    sl_fair_summary_t sum;
    assert_int_equal(sl_fair_compute(CAP100, t, 1, &sum), 0);
    NEAR(t[0].fair_share, 1.0);
    NEAR(t[0].deficit, 0.7);
    assert_int_equal(sum.counted, 1);
    NEAR(sum.drf_ratio, 0.3);
    NEAR(sum.jain, 1);
}

static void test_fair_starved_tenant_holding_nothing(void **state) {
    (void)state;
    /* A backlogged tenant that holds nothing reads 0; Jain's index of
     * (1, 0) is 1/2. Held while idle (a's 100 GPUs, nothing pending)
     * does not count a as backlogged, so only b's 0 counts in a third
     * case. */
    sl_fair_tenant_t t[] = {tenant(1, gpus(50), gpus(50)), tenant(1, gpus(0), gpus(50))};
    sl_fair_summary_t sum;
    assert_int_equal(sl_fair_compute(CAP100, t, 2, &sum), 0);
    NEAR(sum.drf_ratio, 0);
    NEAR(sum.jain, 0.5);
    sl_fair_tenant_t u[] = {tenant(1, gpus(100), gpus(0)), tenant(1, gpus(0), gpus(8))};
    assert_int_equal(sl_fair_compute(CAP100, u, 2, &sum), 0);
    assert_int_equal(sum.counted, 1);
    NEAR(u[1].fair_share, 0.08);
    NEAR(u[0].fair_share, 0.92);
    NEAR(sum.drf_ratio, 0);
    /* Every backlogged tenant holding 0: equally served, Jain reads 1. */
    NEAR(sum.jain, 1);
}

static void test_fair_zero_capacity_and_weight_zero(void **state) {
    (void)state;
    /* A cluster without GPUs owes GPU jobs nothing. */
    sl_res_t cap = {1000, GB, 0};
    sl_fair_tenant_t t[] = {tenant(0, gpus(0), gpus(4))};
    sl_fair_summary_t sum;
    assert_int_equal(sl_fair_compute(cap, t, 1, &sum), 0);
    NEAR(t[0].fair_share, 0);
    assert_int_equal(sum.counted, 0);
    NEAR(sum.drf_ratio, 1);
    /* Weight 0 is weight 1. */
    sl_fair_tenant_t u[] = {tenant(0, gpus(0), gpus(100)), tenant(1, gpus(0), gpus(100))};
    assert_int_equal(sl_fair_compute(CAP100, u, 2, NULL), 0);
    NEAR(u[0].fair_share, 0.5);
    NEAR(u[1].fair_share, 0.5);
}

static void test_fair_bad_input_is_refused(void **state) {
    (void)state;
    sl_fair_tenant_t t[] = {tenant(1, gpus(1), gpus(1))};
    t[0].fair_share = 42;
    assert_int_equal(sl_fair_compute(CAP100, NULL, 1, NULL), SL_EINVAL);
    assert_int_equal(sl_fair_compute((sl_res_t){-1, 0, 0}, t, 1, NULL), SL_EINVAL);
    t[0].weight = -1;
    assert_int_equal(sl_fair_compute(CAP100, t, 1, NULL), SL_EINVAL);
    t[0].weight = 1;
    t[0].pending.mem_bytes = -5;
    assert_int_equal(sl_fair_compute(CAP100, t, 1, NULL), SL_EINVAL);
    NEAR(t[0].fair_share, 42); /* nothing written */
}

/*
 * Weighted max-min fairness, checked on seeded random inputs by its
 * bottleneck property: shares are feasible (no resource over capacity)
 * and at most the demand, and every tenant short of its demand uses a
 * resource that ran out on which no tenant has a larger weighted share.
 */
static void test_fair_random_inputs_are_weighted_max_min(void **state) {
    (void)state;
    sl_rng_t rng;
    sl_rng_seed(&rng, 42);
    enum { N = 12 };
    for (int round = 0; round < 2000; round++) {
        sl_res_t cap = {(int64_t)sl_rng_below(&rng, 4) * 10000,
                        (int64_t)sl_rng_below(&rng, 4) * GB,
                        (int64_t)sl_rng_below(&rng, 4) * 8000};
        size_t n = 1 + sl_rng_below(&rng, N);
        sl_fair_tenant_t t[N];
        for (size_t i = 0; i < n; i++) {
            sl_res_t h = {(int64_t)sl_rng_below(&rng, 20000), (int64_t)sl_rng_below(&rng, 2 * GB),
                          (int64_t)sl_rng_below(&rng, 3) * 1000};
            sl_res_t p = {(int64_t)sl_rng_below(&rng, 30000), (int64_t)sl_rng_below(&rng, 3 * GB),
                          (int64_t)sl_rng_below(&rng, 5) * 2000};
            if (sl_rng_below(&rng, 4) == 0) p = (sl_res_t){0, 0, 0};
            t[i] = tenant((int32_t)sl_rng_below(&rng, 4), h, p);
        }
        sl_fair_summary_t sum;
        assert_int_equal(sl_fair_compute(cap, t, n, &sum), 0);
        double c[3] = {(double)cap.cpu_milli, (double)cap.mem_bytes, (double)cap.gpu_milli};
        double v[N][3], dem[N], use[3] = {0, 0, 0};
        for (size_t i = 0; i < n; i++) {
            sl_res_t d = sl_res_add(t[i].held, t[i].pending);
            double dv[3] = {(double)d.cpu_milli, (double)d.mem_bytes, (double)d.gpu_milli};
            dem[i] = 0;
            for (int r = 0; r < 3; r++)
                if (c[r] > 0 && dv[r] / c[r] > dem[i]) dem[i] = dv[r] / c[r];
            for (int r = 0; r < 3; r++) {
                v[i][r] = dem[i] > 0 && c[r] > 0 ? dv[r] / c[r] / dem[i] : 0;
                use[r] += t[i].fair_share * v[i][r];
            }
            assert_true(t[i].fair_share >= 0 && t[i].fair_share <= dem[i] + EPS);
            NEAR(t[i].deficit, t[i].fair_share - t[i].held_share);
            if (!t[i].backlogged) assert_true(t[i].deficit <= EPS);
        }
        for (int r = 0; r < 3; r++) assert_true(use[r] <= 1 + 1e-9);
        for (size_t i = 0; i < n; i++) {
            if (t[i].fair_share >= dem[i] - EPS) continue;
            double wi = t[i].fair_share / (t[i].weight > 0 ? t[i].weight : 1);
            bool bottleneck = false;
            for (int r = 0; r < 3 && !bottleneck; r++) {
                if (v[i][r] <= 0 || use[r] < 1 - 1e-9) continue;
                bool top = true;
                for (size_t j = 0; j < n; j++)
                    if (v[j][r] > 0 &&
                        t[j].fair_share / (t[j].weight > 0 ? t[j].weight : 1) > wi + 1e-9)
                        top = false;
                bottleneck = top;
            }
            assert_true(bottleneck);
        }
        assert_true(sum.drf_ratio >= 0 && sum.drf_ratio <= 1);
        assert_true(sum.jain >= 0 && sum.jain <= 1 + EPS);
        if (sum.counted > 0) assert_true(sum.jain >= 1.0 / (double)sum.counted - EPS);
    }
}

/* sl_sched_fairness over a live scheduler: pending demand follows jobs as
 * they queue, start and end, and a starved tenant shows. */
static void test_fair_sched_tracks_pending_and_held(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    tu_add_nodes(cl, "n", 2, "64", "256Gi", 8, "A100", "80Gi", NULL);
    sl_sched_t *s = tu_sched_create(cl, "fifo", "none");
    int a = tu_tenant_add(s, "a", 1, TU_NO_QUOTA), b = tu_tenant_add(s, "b", 1, TU_NO_QUOTA);
    char err[256];
    /* a: two jobs of 8 GPUs fill the cluster; b then asks for 8 GPUs. */
    sl_job_spec_t j1 = tu_spec(1, a, 1, tu_req("8", "16Gi", 8, ""));
    sl_job_spec_t j2 = tu_spec(2, a, 1, tu_req("8", "16Gi", 8, ""));
    sl_job_spec_t j3 = tu_spec(3, b, 2, tu_req("4", "8Gi", 4, ""));
    assert_int_equal(sl_sched_submit(s, &j1, err, sizeof err), 0);
    assert_int_equal(sl_sched_submit(s, &j2, err, sizeof err), 0);
    sl_fair_tenant_t t[2];
    sl_fair_summary_t sum;
    assert_int_equal(sl_sched_tenant_pending(s, a).gpu_milli, 16000);
    assert_int_equal(sl_sched_fairness(s, t, 2, &sum), 0);
    assert_true(t[0].backlogged && !t[1].backlogged);
    NEAR(t[0].fair_share, 1.0);
    NEAR(sum.drf_ratio, 0);
    assert_int_equal(sl_sched_cycle(s, 10, NULL, NULL, NULL), 2);
    assert_int_equal(sl_sched_submit(s, &j3, err, sizeof err), 0);
    assert_int_equal(sl_sched_tenant_pending(s, a).gpu_milli, 0);
    assert_int_equal(sl_sched_tenant_pending(s, b).gpu_milli, 8000);
    assert_int_equal(sl_sched_tenant_pending(s, b).cpu_milli, 8000);
    assert_int_equal(sl_sched_fairness(s, t, 2, &sum), 0);
    /* a holds 16 of 16 GPUs and wants no more; b is owed 8: starved. */
    NEAR(t[0].fair_share, 0.5);
    NEAR(t[1].fair_share, 0.5);
    NEAR(t[0].deficit, -0.5);
    NEAR(t[1].deficit, 0.5);
    assert_int_equal(sum.counted, 1);
    NEAR(sum.drf_ratio, 0);
    assert_int_equal(sl_sched_check(s), 0);
    /* One of a's jobs ends: b starts and the cluster is fair. */
    assert_int_equal(sl_sched_finish(s, 1, 20), 0);
    assert_int_equal(sl_sched_cycle(s, 20, NULL, NULL, NULL), 1);
    assert_int_equal(sl_sched_tenant_pending(s, b).gpu_milli, 0);
    assert_int_equal(sl_sched_fairness(s, t, 2, &sum), 0);
    assert_int_equal(sum.counted, 0);
    NEAR(sum.drf_ratio, 1);
    NEAR(t[1].held_share, 0.5);
    assert_int_equal(sl_sched_fairness(s, t, 1, &sum), SL_EINVAL);
    assert_int_equal(sl_sched_check(s), 0);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_fair_equal_weights_split_evenly, tu_teardown),
        cmocka_unit_test_teardown(test_fair_weights_two_to_one, tu_teardown),
        cmocka_unit_test_teardown(test_fair_surplus_of_small_demand_goes_to_others, tu_teardown),
        cmocka_unit_test_teardown(test_fair_nsdi_paper_example, tu_teardown),
        cmocka_unit_test_teardown(test_fair_unused_resource_does_not_stop_others, tu_teardown),
        cmocka_unit_test_teardown(test_fair_nobody_backlogged_reads_fair, tu_teardown),
        cmocka_unit_test_teardown(test_fair_one_tenant, tu_teardown),
        cmocka_unit_test_teardown(test_fair_starved_tenant_holding_nothing, tu_teardown),
        cmocka_unit_test_teardown(test_fair_zero_capacity_and_weight_zero, tu_teardown),
        cmocka_unit_test_teardown(test_fair_bad_input_is_refused, tu_teardown),
        cmocka_unit_test_teardown(test_fair_random_inputs_are_weighted_max_min, tu_teardown),
        cmocka_unit_test_teardown(test_fair_sched_tracks_pending_and_held, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
