/*
 * test_place_fgdbal.c - Sluice's own placement policy (policy/place_fgdbal.c):
 * its score on small hand-computed cases (the stranding term, the share's
 * GPU choice, the packing preference, the weight of multi-GPU shapes, scarce
 * models, a workload without GPU shapes), that
 * it never over-allocates while filling a mixed cluster to refusal, that
 * gangs placed with it are all or none, and that the framework's fast path
 * for it picks what a naive scan of every node picks.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "policy/place.h"
#include "testutil.h"

typedef struct fx {
    sl_cluster_t *cl;
    sl_workload_t *w;
    sl_rng_t rng;
    sl_cycle_t cy;
    const sl_place_policy_t *pol;
} fx_t;

static void fx_init(fx_t *f, uint64_t seed) {
    sl_cluster_create(&f->cl);
    sl_workload_create(&f->w);
    sl_rng_seed(&f->rng, seed);
    f->cy = (sl_cycle_t){.cluster = f->cl, .workload = f->w, .rng = &f->rng, .now_us = 0};
    f->pol = sl_place_policy_find("fgdbal");
    assert_non_null(f->pol);
}

static void fx_fini(fx_t *f) {
    sl_workload_destroy(f->w);
    sl_cluster_destroy(f->cl);
}

/* The primary score (score >> 32: the tie-break is below 2^32). */
static int64_t primary_of(fx_t *f, const sl_task_req_t *r, uint32_t node, sl_place_t *pl) {
    int64_t s = 0;
    sl_place_t p;
    assert_int_equal(f->pol->score(&f->cy, r, sl_cluster_node(f->cl, node), 1, &s, &p), SL_FIT);
    if (pl) *pl = p;
    return s >> 32;
}

static void test_fgdbal_registered(void **state) {
    (void)state;
    const sl_place_policy_t *p = sl_place_policy_find("fgdbal");
    assert_non_null(p);
    assert_string_equal(p->name, "fgdbal");
    assert_non_null(p->help);
    assert_non_null(p->score);
}

/*
 * Workload: 1-GPU tasks asking 10 CPUs and 10Gi, so GPUs need 10 CPU milli
 * per GPU milli. Node a (4 GPUs, 40 CPUs) is balanced; node b (4 GPUs, 100
 * CPUs) has CPU to spare. A CPU-only task of 30 CPUs on a leaves 10 CPUs for
 * 4000 free GPU milli: 4000 - 10000 / 10 = 3000 milli stranded, while FGD's
 * fragmentation does not change (a 1-GPU task still fits). On b nothing is
 * stranded. fgdbal: a scores -3000 milli, b 0 (scaled by 64), b wins; FGD
 * scores both the same.
 */
static void test_fgdbal_cpu_stranding(void **state) {
    (void)state;
    fx_t f;
    fx_init(&f, 1);
    uint32_t a = tu_add_nodes(f.cl, "a", 1, "40", "1000Gi", 4, "V100", "32Gi", "");
    uint32_t b = tu_add_nodes(f.cl, "b", 1, "100", "1000Gi", 4, "V100", "32Gi", "");
    sl_task_req_t g1 = tu_req("10", "10Gi", 1, "");
    sl_workload_add(f.w, &g1, 10);
    sl_task_req_t cpu = tu_req("30", "1Gi", 0, "");
    assert_int_equal(primary_of(&f, &cpu, a, NULL), -3000 * 64);
    assert_int_equal(primary_of(&f, &cpu, b, NULL), 0);
    sl_place_t pl;
    assert_int_equal(sl_place_task(f.pol, &f.cy, &cpu, &pl), SL_FIT);
    assert_int_equal(pl.node, b);
    assert_int_equal(pl.gpu_mask, 0);
    /* FGD cannot tell them apart. */
    const sl_place_policy_t *fgd = sl_place_policy_find("fgd");
    int64_t sa, sb;
    sl_place_t p;
    assert_int_equal(fgd->score(&f.cy, &cpu, sl_cluster_node(f.cl, a), 1, &sa, &p), SL_FIT);
    assert_int_equal(fgd->score(&f.cy, &cpu, sl_cluster_node(f.cl, b), 1, &sb, &p), SL_FIT);
    assert_int_equal(sa >> 32, sb >> 32);
    fx_fini(&f);
}

/* Memory strands GPUs the same way: 10Gi per GPU, a node left with 15Gi and
 * 4 free GPUs feeds 1500 milli and strands 2500. */
static void test_fgdbal_mem_stranding(void **state) {
    (void)state;
    fx_t f;
    fx_init(&f, 2);
    uint32_t a = tu_add_nodes(f.cl, "a", 1, "1000", "40Gi", 4, "V100", "32Gi", "");
    sl_task_req_t g1 = tu_req("10", "10Gi", 1, "");
    sl_workload_add(f.w, &g1, 10);
    sl_task_req_t cpu = tu_req("1", "25Gi", 0, "");
    assert_int_equal(primary_of(&f, &cpu, a, NULL), -2500 * 64);
    fx_fini(&f);
}

/*
 * The share's GPU. Workload: shares of 700 milli. A node's GPUs are free
 * 1000, 500 and 300 (CPU plentiful). F before: 500 + 300 = 800 (the GPUs a
 * 700 share cannot use). A 500 share on GPU 0 leaves 500, 500, 300: F = 1300
 * (delta -500); on GPU 1 it leaves 1000, 0, 300: F = 300 (delta +500); GPU 2
 * cannot hold it. fgdbal takes GPU 1, value 500 + 10 (the node is in use).
 */
static void test_fgdbal_share_gpu_choice(void **state) {
    (void)state;
    fx_t f;
    fx_init(&f, 3);
    uint32_t n = tu_add_nodes(f.cl, "n", 1, "96", "384Gi", 3, "V100", "32Gi", "");
    sl_task_req_t s7 = tu_req("1", "1Gi", 0, "0.7");
    sl_workload_add(f.w, &s7, 5);
    /* Take 500 of GPU 1 and 700 of GPU 2 (without CPU or memory). */
    sl_task_req_t t5 = tu_req("0", "0", 0, "0.5");
    sl_task_req_t t7 = tu_req("0", "0", 0, "0.7");
    sl_place_t p1 = {.node = n, .gpu_mask = 2, .gpu_milli = 500, .gpu_mem_bytes = 0};
    sl_place_t p2 = {.node = n, .gpu_mask = 4, .gpu_milli = 700, .gpu_mem_bytes = 0};
    assert_int_equal(sl_cluster_alloc(f.cl, &t5, &p1), 0);
    assert_int_equal(sl_cluster_alloc(f.cl, &t7, &p2), 0);
    sl_task_req_t s5 = tu_req("1", "1Gi", 0, "0.5");
    sl_place_t pl;
    assert_int_equal(primary_of(&f, &s5, n, &pl), (500 + 10) * 64);
    assert_int_equal(pl.gpu_mask, 2u);
    assert_int_equal(pl.gpu_milli, 500);
    fx_fini(&f);
}

/* Equal fragmentation and stranding: the node already in use wins, always
 * (by 10 milli), over any number of empty ones. */
static void test_fgdbal_prefers_used_node(void **state) {
    (void)state;
    fx_t f;
    fx_init(&f, 4);
    tu_add_nodes(f.cl, "empty", 5, "64", "256Gi", 4, "V100", "32Gi", "");
    uint32_t u = tu_add_nodes(f.cl, "used", 1, "64", "256Gi", 4, "V100", "32Gi", "");
    sl_task_req_t g1 = tu_req("1", "1Gi", 1, "");
    sl_workload_add(f.w, &g1, 3);
    sl_place_t p = {.node = u, .gpu_mask = 1, .gpu_milli = 1000, .gpu_mem_bytes = 0};
    assert_int_equal(sl_cluster_alloc(f.cl, &g1, &p), 0);
    assert_int_equal(primary_of(&f, &g1, u, NULL), 10 * 64);
    for (uint64_t seed = 0; seed < 20; seed++) {
        sl_rng_seed(&f.rng, seed);
        sl_place_t pl;
        assert_int_equal(sl_place_task(f.pol, &f.cy, &g1, &pl), SL_FIT);
        assert_int_equal(pl.node, u);
    }
    fx_fini(&f);
}

/*
 * Multi-GPU shapes weigh their GPU count. Workload: one 8-GPU task and three
 * 1-GPU tasks (T = 4, y = 1 * 7 = 7); CPU and memory plentiful (no
 * stranding). A 1-GPU task on an empty 8-GPU node breaks the 8-GPU shape:
 * FGD's d = -(1/4) * 7000 = -1750; the correction adds 1 * 7 * (0 - 7000),
 * so D = (4 * -1750 - 49000) / 11 = -56000 / 11, exactly what weights 8 and
 * 3 would give. On a node with one free GPU left (7 fully used, so in use)
 * no multi-GPU shape fits before or after: d = (1/4) * 1000 = 250, the
 * correction is y * 1000 = 7000 without a scan, D = 8000 / 11, plus 10.
 */
static void test_fgdbal_multi_gpu_weight(void **state) {
    (void)state;
    fx_t f;
    fx_init(&f, 8);
    uint32_t e = tu_add_nodes(f.cl, "e", 1, "1000", "4000Gi", 8, "V100", "32Gi", "");
    uint32_t u = tu_add_nodes(f.cl, "u", 1, "1000", "4000Gi", 8, "V100", "32Gi", "");
    sl_task_req_t g8 = tu_req("8", "8Gi", 8, "");
    sl_task_req_t g1 = tu_req("1", "1Gi", 1, "");
    sl_workload_add(f.w, &g8, 1);
    sl_workload_add(f.w, &g1, 3);
    sl_task_req_t g7 = tu_req("0", "0", 7, "");
    sl_place_t p7 = {.node = u, .gpu_mask = 0x7f, .gpu_milli = 1000, .gpu_mem_bytes = 0};
    assert_int_equal(sl_cluster_alloc(f.cl, &g7, &p7), 0);
    assert_int_equal(primary_of(&f, &g1, e, NULL), llround(-56000.0 / 11.0 * 64.0));
    assert_int_equal(primary_of(&f, &g1, u, NULL), llround((8000.0 / 11.0 + 10.0) * 64.0));
    fx_fini(&f);
}

/*
 * Scarce models. Two 2-GPU nodes, models A and B (half the GPUs each); the
 * workload: 1-GPU tasks, one constrained to A and one free (half the GPU
 * demand can only run on A: scarcity of A = 0.5 / 0.5 = 1, of B = 0). A free
 * 1-GPU task on A: F does not change (both shapes still fit), the scarcity
 * term costs 1000 * 1; on B: F drops by 1/2 * 1000 (the A-only shape counts
 * B's free GPUs as fragmented), no scarcity cost. B wins by 1500 milli.
 */
static void test_fgdbal_scarce_model(void **state) {
    (void)state;
    fx_t f;
    fx_init(&f, 9);
    uint32_t a = tu_add_nodes(f.cl, "a", 1, "100", "1000Gi", 2, "A", "16Gi", "");
    uint32_t b = tu_add_nodes(f.cl, "b", 1, "100", "1000Gi", 2, "B", "16Gi", "");
    sl_task_req_t only_a = tu_req("1", "1Gi", 1, "");
    only_a.model_mask = UINT64_C(1) << sl_cluster_model_find(f.cl, "A");
    sl_task_req_t any = tu_req("1", "1Gi", 1, "");
    sl_workload_add(f.w, &only_a, 1);
    sl_workload_add(f.w, &any, 1);
    assert_int_equal(primary_of(&f, &any, a, NULL), -1000 * 64);
    assert_int_equal(primary_of(&f, &any, b, NULL), 500 * 64);
    sl_place_t pl;
    assert_int_equal(sl_place_task(f.pol, &f.cy, &any, &pl), SL_FIT);
    assert_int_equal(pl.node, b);
    fx_fini(&f);
}

/* A workload without GPU shapes has no rates: no stranding term, and
 * nothing divides by zero. CPU-only shapes count every free GPU milli as
 * fragmented, so a 1-GPU task lowers F by 1000 wherever it goes. */
static void test_fgdbal_cpu_only_workload(void **state) {
    (void)state;
    fx_t f;
    fx_init(&f, 5);
    uint32_t a = tu_add_nodes(f.cl, "a", 1, "8", "32Gi", 2, "T4", "16Gi", "");
    sl_task_req_t c = tu_req("4", "4Gi", 0, "");
    sl_workload_add(f.w, &c, 7);
    sl_task_req_t g1 = tu_req("8", "32Gi", 1, "");
    assert_int_equal(primary_of(&f, &g1, a, NULL), 1000 * 64);
    fx_fini(&f);
}

/* Fills a mixed cluster with random tasks until many are refused: every
 * placement is accepted by the cluster (no over-allocation), no GPU, CPU or
 * memory ever goes negative, the index stays consistent, and a refusal
 * happens only when the naive check agrees that no node fits. */
static void test_fgdbal_never_overallocates(void **state) {
    (void)state;
    fx_t f;
    fx_init(&f, 6);
    tu_add_nodes(f.cl, "g8", 5, "96", "384Gi", 8, "V100", "32Gi", "");
    tu_add_nodes(f.cl, "g2", 6, "104", "512Gi", 2, "T4", "16Gi", "");
    tu_add_nodes(f.cl, "p", 4, "16", "120Gi", 2, "P100", "16Gi", "");
    const struct {
        const char *cpu, *mem;
        int gpus;
        const char *share;
        int count;
    } shapes[] = {{"6", "12Gi", 0, "0.81", 30}, {"12", "40Gi", 1, "", 40}, {"4", "8Gi", 0, "0.47", 20},
                  {"16", "32Gi", 0, "", 13}, {"64", "256Gi", 8, "", 1}, {"20", "64Gi", 2, "", 2}};
    size_t ns = sizeof shapes / sizeof shapes[0];
    sl_task_req_t reqs[6];
    for (size_t i = 0; i < ns; i++) {
        reqs[i] = tu_req(shapes[i].cpu, shapes[i].mem, shapes[i].gpus, shapes[i].share);
        sl_workload_add(f.w, &reqs[i], shapes[i].count);
    }
    int refused = 0, placed = 0;
    for (int k = 0; k < 2000 && refused < 200; k++) {
        sl_task_req_t r = reqs[sl_rng_below(&f.rng, ns)];
        if (sl_rng_below(&f.rng, 4) == 0 && sl_task_req_has_gpu(&r))
            r.model_mask = UINT64_C(1) << sl_cluster_model_find(f.cl, sl_rng_below(&f.rng, 2) ? "T4" : "V100");
        sl_place_t pl;
        int st = sl_place_task(f.pol, &f.cy, &r, &pl);
        bool any = false;
        for (uint32_t id = 0; id < sl_cluster_node_count(f.cl); id++)
            any |= sl_node_fits(sl_cluster_node(f.cl, id), &r);
        if (st == SL_FIT) {
            assert_true(any);
            assert_true(sl_node_fits(sl_cluster_node(f.cl, pl.node), &r));
            assert_int_equal(sl_cluster_alloc(f.cl, &r, &pl), 0);
            placed++;
        } else {
            assert_false(any);
            refused++;
        }
        if (k % 50 == 0) assert_int_equal(sl_cluster_check(f.cl), 0);
    }
    assert_true(placed > 40);
    assert_true(refused > 0);
    for (uint32_t id = 0; id < sl_cluster_node_count(f.cl); id++) {
        const sl_node_t *n = sl_cluster_node(f.cl, id);
        assert_true(n->cpu_free >= 0 && n->mem_free >= 0);
        for (int g = 0; g < n->ngpus; g++) assert_true(n->gpu_free[g] >= 0 && n->gpu_free[g] <= 1000);
    }
    assert_int_equal(sl_cluster_check(f.cl), 0);
    fx_fini(&f);
}

/* A gang through fgdbal: all tasks or none, and the cluster is unchanged
 * when it does not fit. */
static void test_fgdbal_gang_all_or_none(void **state) {
    (void)state;
    fx_t f;
    fx_init(&f, 7);
    tu_add_nodes(f.cl, "g8", 3, "96", "384Gi", 8, "V100", "32Gi", "");
    sl_task_req_t g4 = tu_req("8", "32Gi", 4, "");
    sl_workload_add(f.w, &g4, 1);
    sl_place_t pls[8];
    char why[256];
    assert_int_equal(sl_place_gang(f.pol, &f.cy, f.cl, &g4, 6, pls, why, sizeof why), SL_FIT);
    for (int i = 0; i < 6; i++) assert_int_equal(__builtin_popcount(pls[i].gpu_mask), 4);
    sl_res_t tot, fr;
    sl_cluster_capacity(f.cl, &tot, &fr);
    assert_int_equal(fr.gpu_milli, 0);
    for (int i = 0; i < 6; i++) assert_int_equal(sl_cluster_release(f.cl, &g4, &pls[i]), 0);
    sl_task_req_t g1 = tu_req("1", "1Gi", 1, "");
    sl_place_t one = {.node = 0, .gpu_mask = 1, .gpu_milli = 1000, .gpu_mem_bytes = 0};
    assert_int_equal(sl_cluster_alloc(f.cl, &g1, &one), 0);
    assert_int_not_equal(sl_place_gang(f.pol, &f.cy, f.cl, &g4, 6, pls, why, sizeof why), SL_FIT);
    sl_cluster_capacity(f.cl, &tot, &fr);
    assert_int_equal(fr.gpu_milli, tot.gpu_milli - 1000);
    assert_int_equal(sl_cluster_check(f.cl), 0);
    fx_fini(&f);
}

/*
 * The framework's fast path for fgdbal (rates once per search, F(before)
 * and its own primary cached per class in the class memo) and its generic
 * path (an unregistered copy, through score) both pick a node whose primary
 * score is the best of a naive scan of every node, with the GPUs score
 * chooses there, on random clusters under random load; also when FGD
 * decides on the same workload in between (shared memo rows).
 */
static void test_fgdbal_fast_path_matches_naive(void **state) {
    (void)state;
    sl_place_policy_t copy = *sl_place_policy_find("fgdbal");
    const sl_place_policy_t *fgd = sl_place_policy_find("fgd");
    /* variant 0: the fast path (with its per-class cache); 1: the generic
     * path (a copy has no fast path); 2: the fast path with FGD deciding on
     * the same workload before every query, so both policies' entries share
     * the class memo's rows and must never be taken for each other's. */
    for (int variant = 0; variant < 3; variant++) {
        for (uint64_t seed = 1; seed <= 4; seed++) {
            fx_t f;
            fx_init(&f, seed);
            const sl_place_policy_t *pol = variant == 1 ? &copy : f.pol;
            sl_rng_t rr;
            sl_rng_seed(&rr, seed * 104729);
            int nn = 30 + (int)sl_rng_below(&rr, 51);
            for (int i = 0; i < nn; i++) {
                static const int g[] = {8, 4, 2, 0};
                int k = (int)sl_rng_below(&rr, 4);
                char name[32];
                snprintf(name, sizeof name, "n%d", i);
                tu_add_nodes(f.cl, name, 1, k == 0 ? "96" : k == 2 ? "104" : "32", "256Gi", g[k],
                             g[k] ? (k == 1 ? "T4" : "V100") : NULL, "16Gi", "");
            }
            for (int i = 0; i < 12; i++) {
                sl_task_req_t r = tu_random_req(&rr, f.cl, false);
                sl_workload_add(f.w, &r, 1 + (int64_t)sl_rng_below(&rr, 20));
            }
            for (int i = 0; i < 3 * nn; i++) {
                sl_task_req_t r = tu_random_req(&rr, f.cl, false);
                sl_place_t pl;
                if (sl_place_task(pol, &f.cy, &r, &pl) == SL_FIT)
                    assert_int_equal(sl_cluster_alloc(f.cl, &r, &pl), 0);
            }
            for (int q = 0; q < 150; q++) {
                sl_task_req_t r = tu_random_req(&rr, f.cl, false);
                if (variant == 2) {
                    sl_place_t fp;
                    (void)sl_place_task(fgd, &f.cy, &r, &fp);
                }
                sl_place_t pl;
                if (!tu_place_check_naive(pol, &f.cy, &r, true, &pl)) continue;
                assert_int_equal(sl_cluster_alloc(f.cl, &r, &pl), 0);
            }
            assert_int_equal(sl_cluster_check(f.cl), 0);
            fx_fini(&f);
        }
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_fgdbal_registered, tu_teardown),
        cmocka_unit_test_teardown(test_fgdbal_cpu_stranding, tu_teardown),
        cmocka_unit_test_teardown(test_fgdbal_mem_stranding, tu_teardown),
        cmocka_unit_test_teardown(test_fgdbal_share_gpu_choice, tu_teardown),
        cmocka_unit_test_teardown(test_fgdbal_prefers_used_node, tu_teardown),
        cmocka_unit_test_teardown(test_fgdbal_multi_gpu_weight, tu_teardown),
        cmocka_unit_test_teardown(test_fgdbal_scarce_model, tu_teardown),
        cmocka_unit_test_teardown(test_fgdbal_cpu_only_workload, tu_teardown),
        cmocka_unit_test_teardown(test_fgdbal_never_overallocates, tu_teardown),
        cmocka_unit_test_teardown(test_fgdbal_gang_all_or_none, tu_teardown),
        cmocka_unit_test_teardown(test_fgdbal_fast_path_matches_naive, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
