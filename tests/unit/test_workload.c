/*
 * test_workload.c - the workload of typical task shapes and the FGD
 * fragmentation measure, checked against cases computed by hand, and the
 * memoised measure against the direct one on seeded random node states.
 */
#include <math.h>
#include <string.h>

#include "policy/place.h"
#include "testutil.h"

#define GiB (INT64_C(1) << 30)

/* A bare node: 4 GPUs of model 0 without GPU-memory accounting. */
static sl_node_t hand_node(int64_t cpu_free, int64_t mem_free, const int32_t *gfree, int ngpus) {
    sl_node_t n;
    memset(&n, 0, sizeof n);
    n.model = 0;
    n.ngpus = ngpus;
    n.cpu_total = 32000;
    n.mem_total = 128 * GiB;
    n.cpu_free = cpu_free;
    n.mem_free = mem_free;
    for (int g = 0; g < ngpus; g++) n.gpu_free[g] = gfree[g];
    return n;
}

static sl_task_req_t shape(int64_t cpu, int64_t mem, int32_t gpus, int32_t milli) {
    sl_task_req_t r;
    sl_task_req_init(&r);
    r.cpu_milli = cpu;
    r.mem_bytes = mem;
    r.gpus = gpus;
    r.gpu_milli = milli;
    return r;
}

static void test_workload_add_merges_identical_shapes(void **state) {
    (void)state;
    sl_workload_t *w;
    assert_int_equal(sl_workload_create(&w), 0);
    sl_task_req_t a = shape(4000, 8 * GiB, 0, 500);
    sl_task_req_t b = a;
    b.pool = 3; /* the pool is ignored */
    assert_int_equal(sl_workload_add(w, &a, 2), 0);
    assert_int_equal(sl_workload_add(w, &b, 3), 0);
    assert_int_equal(sl_workload_shape_count(w), 1);
    assert_int_equal(sl_workload_total(w), 5);
    int64_t cnt = 0;
    const sl_task_req_t *s = sl_workload_shape(w, 0, &cnt);
    assert_non_null(s);
    assert_int_equal(cnt, 5);
    assert_int_equal(s->gpu_milli, 500);
    assert_null(sl_workload_shape(w, 1, &cnt));
    sl_task_req_t c = shape(4000, 8 * GiB, 2, 0);
    assert_int_equal(sl_workload_add(w, &c, 1), 0);
    assert_int_equal(sl_workload_shape_count(w), 2);
    assert_int_equal(sl_workload_add(w, &c, 0), SL_EINVAL);
    assert_int_equal(sl_workload_add(w, &c, -4), SL_EINVAL);
    assert_int_equal(sl_workload_total(w), 6);
    sl_workload_clear(w);
    assert_int_equal(sl_workload_shape_count(w), 0);
    assert_int_equal(sl_workload_total(w), 0);
    sl_workload_destroy(w);
    sl_workload_destroy(NULL);
}

/*
 * The node: CPU 16 free, memory 64Gi free, 4 GPUs with free milli
 * [1000, 1000, 500, 200] (2700 in all). Per shape:
 *
 *   A  share 500m, cpu 4:   fits; GPUs with >= 500 free: 0,1,2; GPU 3 (200)
 *                           cannot take it                       -> 200
 *   B  2 whole GPUs, cpu 8: fits on GPUs 0,1; GPUs 2,3 are partly
 *                           used                                 -> 500 + 200 = 700
 *   C  CPU only:            uses no GPU                          -> 2700
 *   D  share 500m, cpu 32:  lacks CPU                            -> 2700
 *   E  3 whole GPUs:        only 2 fully free                    -> 2700
 *   F  share 500m, 100Gi:   lacks memory                         -> 2700
 *   G  share 500m, model 1: the node has model 0                 -> 2700
 */
static void test_frag_node_shape_by_hand(void **state) {
    (void)state;
    const int32_t gf[4] = {1000, 1000, 500, 200};
    sl_node_t n = hand_node(16000, 64 * GiB, gf, 4);
    sl_task_req_t a = shape(4000, 8 * GiB, 0, 500), b = shape(8000, 8 * GiB, 2, 0),
                  c = shape(2000, GiB, 0, 0), d = shape(32000, GiB, 0, 500),
                  e = shape(1000, GiB, 3, 0), f = shape(1000, 100 * GiB, 0, 500),
                  g = shape(1000, GiB, 0, 500);
    g.model_mask = UINT64_C(1) << 1;
    assert_int_equal(sl_frag_node_shape(&n, &a), 200);
    assert_int_equal(sl_frag_node_shape(&n, &b), 700);
    assert_int_equal(sl_frag_node_shape(&n, &c), 2700);
    assert_int_equal(sl_frag_node_shape(&n, &d), 2700);
    assert_int_equal(sl_frag_node_shape(&n, &e), 2700);
    assert_int_equal(sl_frag_node_shape(&n, &f), 2700);
    assert_int_equal(sl_frag_node_shape(&n, &g), 2700);
    g.model_mask = UINT64_C(1); /* model 0 allowed: like A without its CPU */
    assert_int_equal(sl_frag_node_shape(&n, &g), 200);
}

/*
 * Same node, workload A x2, B x1, C x1 (total 4; popularity 1/2, 1/4, 1/4):
 *   F = 0.5 * 200 + 0.25 * 700 + 0.25 * 2700 = 100 + 175 + 675 = 950.
 */
static void test_frag_node_by_hand(void **state) {
    (void)state;
    const int32_t gf[4] = {1000, 1000, 500, 200};
    sl_node_t n = hand_node(16000, 64 * GiB, gf, 4);
    sl_workload_t *w;
    sl_workload_create(&w);
    assert_true(sl_frag_node(&n, w) == 0.0); /* empty workload: nothing is fragmented */
    sl_task_req_t a = shape(4000, 8 * GiB, 0, 500), b = shape(8000, 8 * GiB, 2, 0),
                  c = shape(2000, GiB, 0, 0);
    sl_workload_add(w, &a, 2);
    sl_workload_add(w, &b, 1);
    sl_workload_add(w, &c, 1);
    assert_true(fabs(sl_frag_node(&n, w) - 950.0) < 1e-9);
    assert_true(sl__frag_node_cached(w, &n) == sl_frag_node(&n, w));
    /* A node with no free GPU is never fragmented. */
    const int32_t none[4] = {0, 0, 0, 0};
    sl_node_t full = hand_node(16000, 64 * GiB, none, 4);
    assert_true(sl_frag_node(&full, w) == 0.0);
    sl_workload_destroy(w);
}

/* The FGD artifact's typical pods (sl_workload_set_typical): shapes equal
 * but for memory merge and memory stops counting; only the most popular
 * shapes making the threshold are kept (the one crossing it too, equal
 * counts in the order first added), renormalised over those kept. Values
 * by hand on one node (frag per shape: share 500 -> 200, the same share
 * short of memory -> 2700, two whole GPUs -> 700, CPU only -> 2700). */
static void test_frag_typical_by_hand(void **state) {
    (void)state;
    const int32_t gf[4] = {1000, 1000, 500, 200};
    sl_node_t n = hand_node(16000, 64 * GiB, gf, 4);
    sl_workload_t *w;
    sl_workload_create(&w);
    sl_task_req_t a = shape(4000, 8 * GiB, 0, 500), a2 = shape(4000, 100 * GiB, 0, 500),
                  b = shape(8000, 8 * GiB, 2, 0), c = shape(2000, GiB, 0, 0);
    sl_workload_add(w, &a, 6);
    sl_workload_add(w, &a2, 2);
    sl_workload_add(w, &b, 1);
    sl_workload_add(w, &c, 1);
    struct { int pct; bool mem; double want; } cases[] = {
        {100, true, 1000.0},         /* (6*200 + 2*2700 + 700 + 2700) / 10 */
        {100, false, 500.0},         /* (8*200 + 700 + 2700) / 10 */
        {95, false, 500.0},          /* 8, then 9 of 10 < 95%: all kept */
        {85, false, 2300.0 / 9.0},   /* 8 < 8.5, 9 >= 8.5: b kept (first added), c not */
        {80, false, 200.0},          /* 8 >= 8: the merged share alone */
        {85, true, 7300.0 / 9.0},    /* 6, 8, 9: a, a2, b */
        {100, true, 1000.0},         /* back to the default */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_int_equal(sl_workload_set_typical(w, cases[i].pct, cases[i].mem), 0);
        assert_true(fabs(sl_frag_node(&n, w) - cases[i].want) < 1e-9);
        assert_true(sl__frag_node_cached(w, &n) == sl_frag_node(&n, w));
    }
    /* The shapes themselves stay as added. */
    assert_int_equal(sl_workload_shape_count(w), 4);
    assert_int_equal(sl_workload_total(w), 10);
    /* A mode survives additions: a new most popular shape (CPU only). */
    assert_int_equal(sl_workload_set_typical(w, 50, false), 0);
    sl_workload_add(w, &c, 19); /* c: 20 of 30, >= 50% alone */
    assert_true(fabs(sl_frag_node(&n, w) - 2700.0) < 1e-9);
    assert_true(sl__frag_node_cached(w, &n) == sl_frag_node(&n, w));
    assert_int_equal(sl_workload_set_typical(w, 0, false), SL_EINVAL);
    assert_int_equal(sl_workload_set_typical(w, 101, true), SL_EINVAL);
    assert_int_equal(sl_workload_set_typical(NULL, 95, true), SL_EINVAL);
    sl_workload_destroy(w);
}

/* The memo returns exactly the direct value on many random states, across
 * flushes (more distinct states than half the table). */
static void test_frag_memo_matches_direct(void **state) {
    (void)state;
    sl_rng_t rng;
    sl_rng_seed(&rng, 20231);
    sl_workload_t *w;
    sl_workload_create(&w);
    for (int i = 0; i < 40; i++) {
        int kind = (int)sl_rng_below(&rng, 3);
        sl_task_req_t s = shape(1000 * (int64_t)sl_rng_below(&rng, 33), GiB * (int64_t)sl_rng_below(&rng, 64),
                                kind == 1 ? 1 + (int32_t)sl_rng_below(&rng, 8) : 0,
                                kind == 0 ? 1 + (int32_t)sl_rng_below(&rng, 999) : 0);
        sl_workload_add(w, &s, 1 + (int64_t)sl_rng_below(&rng, 100));
    }
    for (int it = 0; it < 60000; it++) {
        int32_t gf[8];
        for (int g = 0; g < 8; g++) gf[g] = (int32_t)sl_rng_below(&rng, 11) * 100;
        sl_node_t n = hand_node(1000 * (int64_t)sl_rng_below(&rng, 33), GiB * (int64_t)sl_rng_below(&rng, 129), gf, 8);
        double direct = sl_frag_node(&n, w);
        assert_true(sl__frag_node_cached(w, &n) == direct);
        assert_true(sl__frag_node_cached(w, &n) == direct); /* hit */
    }
    /* Changing the workload invalidates the memo. */
    const int32_t gf[8] = {1000, 1000, 1000, 1000, 500, 500, 0, 0};
    sl_node_t n = hand_node(8000, 8 * GiB, gf, 8);
    double before = sl__frag_node_cached(w, &n);
    sl_task_req_t cpu_only = shape(1000, GiB, 0, 0);
    sl_workload_add(w, &cpu_only, 100000);
    assert_true(sl__frag_node_cached(w, &n) == sl_frag_node(&n, w));
    assert_true(sl__frag_node_cached(w, &n) != before);
    sl_workload_destroy(w);
}

/* More distinct states than the memo holds before it flushes (half of its
 * 2^18 slots): values stay exact across flushes, old and new entries. */
static void test_frag_memo_flush_keeps_exact(void **state) {
    (void)state;
    sl_rng_t rng;
    sl_rng_seed(&rng, 777);
    sl_workload_t *w;
    sl_workload_create(&w);
    for (int i = 0; i < 60; i++) {
        sl_task_req_t s = shape(500 * (int64_t)i, GiB * (int64_t)i, i % 3 == 1 ? 1 + i % 8 : 0,
                                i % 3 == 0 ? 1 + 16 * i : 0);
        sl_workload_add(w, &s, 1 + i);
    }
    for (int it = 0; it < 300000; it++) {
        int32_t gf[8];
        for (int g = 0; g < 8; g++) gf[g] = (int32_t)sl_rng_below(&rng, 21) * 50;
        sl_node_t n = hand_node(500 * (int64_t)sl_rng_below(&rng, 64), GiB * (int64_t)sl_rng_below(&rng, 64), gf, 8);
        if (it % 7 == 0) assert_true(sl__frag_node_cached(w, &n) == sl_frag_node(&n, w));
        else (void)sl__frag_node_cached(w, &n);
    }
    sl_workload_destroy(w);
}

/* sl_frag_cluster sums sl_frag_node over up nodes (classes x size). */
static void test_frag_cluster_sums_nodes(void **state) {
    (void)state;
    sl_cluster_t *cl;
    sl_cluster_create(&cl);
    tu_add_nodes(cl, "a", 5, "32", "128Gi", 4, "V100", "", "");
    tu_add_nodes(cl, "b", 3, "16", "64Gi", 2, "T4", "", "");
    sl_task_req_t r = tu_req("2", "4Gi", 0, "0.3");
    sl_place_t pl = {.node = 1, .gpu_mask = 1u << 2, .gpu_milli = 300};
    assert_int_equal(sl_cluster_alloc(cl, &r, &pl), 0);
    sl_task_req_t r2 = tu_req("8", "4Gi", 1, "");
    pl = (sl_place_t){.node = 6, .gpu_mask = 1u, .gpu_milli = 1000};
    assert_int_equal(sl_cluster_alloc(cl, &r2, &pl), 0);
    sl_cluster_set_state(cl, 7, SL_NODE_DOWN);

    sl_workload_t *w;
    sl_workload_create(&w);
    sl_task_req_t s1 = tu_req("4", "8Gi", 0, "0.8"), s2 = tu_req("4", "8Gi", 2, "");
    sl_workload_add(w, &s1, 3);
    sl_workload_add(w, &s2, 1);
    double naive = 0.0;
    for (uint32_t id = 0; id < sl_cluster_node_count(cl); id++) {
        const sl_node_t *n = sl_cluster_node(cl, id);
        if (n->state == SL_NODE_UP) naive += sl_frag_node(n, w);
    }
    assert_true(fabs(sl_frag_cluster(cl, w) - naive) < 1e-6);
    sl_workload_destroy(w);
    sl_cluster_destroy(cl);
}

/*
 * FGD's choice, by hand. Workload: W1 = 2 whole GPUs (x1), W2 = share 500m
 * (x1), popularity 1/2 each. Nodes (2 GPUs each, CPU and memory plenty):
 * P with free [1000, 1000], Q with free [1000, 600]. Task: share 500m.
 *
 *   P before: W1 fits on GPUs 0,1 -> 0; W2 fits everywhere -> 0.  F = 0.
 *   P, GPU 0 -> [500, 1000] (1500 free): W1 lacks 2 free GPUs -> 1500;
 *            W2 -> 0. F = 750; d = -750 -> trunc(100 sigmoid(-0.75)) = 32.
 *            (GPU 1 is in the same state: same score, GPU 0 kept.)
 *   Q before (1600 free): W1 -> 1600 (one free GPU); W2 -> 0.  F = 800.
 *   Q, GPU 0 -> [500, 600] (1100): W1 -> 1100; W2 -> 0.  F = 550;
 *            d = +250 -> trunc(100 sigmoid(0.25)) = trunc(56.2) = 56.
 *   Q, GPU 1 -> [1000, 100] (1100): W1 -> 1100; W2 -> 100 (GPU 1).
 *            F = 600; d = +200 -> trunc(100 sigmoid(0.2)) = trunc(54.9) = 54.
 *
 * So FGD puts the task on Q, GPU 0 (score 56), where best fit would take
 * GPU 1 of Q (the least free GPU that fits).
 */
static void test_fgd_choice_by_hand(void **state) {
    (void)state;
    sl_cluster_t *cl;
    sl_cluster_create(&cl);
    uint32_t p = tu_add_nodes(cl, "p", 1, "32", "128Gi", 2, "V100", "", "");
    uint32_t q = tu_add_nodes(cl, "q", 1, "32", "128Gi", 2, "V100", "", "");
    sl_task_req_t used = tu_req("0", "0", 0, "0.4");
    sl_place_t upl = {.node = q, .gpu_mask = 1u << 1, .gpu_milli = 400};
    assert_int_equal(sl_cluster_alloc(cl, &used, &upl), 0);

    sl_workload_t *w;
    sl_workload_create(&w);
    sl_task_req_t w1 = tu_req("1", "1Gi", 2, ""), w2 = tu_req("1", "1Gi", 0, "0.5");
    sl_workload_add(w, &w1, 1);
    sl_workload_add(w, &w2, 1);
    assert_true(fabs(sl_frag_node(sl_cluster_node(cl, p), w) - 0.0) < 1e-9);
    assert_true(fabs(sl_frag_node(sl_cluster_node(cl, q), w) - 800.0) < 1e-9);

    sl_rng_t rng;
    sl_rng_seed(&rng, 7);
    sl_cycle_t cy = {.cluster = cl, .workload = w, .rng = &rng, .now_us = 0};
    const sl_place_policy_t *fgd = sl_place_policy_find("fgd");
    assert_non_null(fgd);
    sl_task_req_t t = tu_req("1", "1Gi", 0, "0.5");
    int64_t s;
    sl_place_t pl;
    assert_int_equal(fgd->score(&cy, &t, sl_cluster_node(cl, p), 1, &s, &pl), SL_FIT);
    assert_int_equal(s >> 32, 32);
    assert_int_equal(pl.gpu_mask, 1u << 0);
    assert_int_equal(fgd->score(&cy, &t, sl_cluster_node(cl, q), 1, &s, &pl), SL_FIT);
    assert_int_equal(s >> 32, 56);
    assert_int_equal(pl.gpu_mask, 1u << 0);

    assert_int_equal(sl_place_task(fgd, &cy, &t, &pl), SL_FIT);
    assert_int_equal(pl.node, q);
    assert_int_equal(pl.gpu_mask, 1u << 0);
    assert_int_equal(pl.gpu_milli, 500);

    const sl_place_policy_t *bf = sl_place_policy_find("bestfit");
    assert_int_equal(sl_place_task(bf, &cy, &t, &pl), SL_FIT);
    assert_int_equal(pl.node, q);
    assert_int_equal(pl.gpu_mask, 1u << 1);

    sl_workload_destroy(w);
    sl_cluster_destroy(cl);
}

/*
 * The per-class FGD memo (workload.c) against the direct score: one workload
 * serves two clusters in turn and changes midway, requests take more
 * distinct shapes than the memo interns (it starts over), and classes die
 * and are born (slots reused). The chosen node's FGD primary must always be
 * the best primary over every node, and its GPU the one score picks.
 */
static void test_fgd_class_memo_matches_direct(void **state) {
    (void)state;
    sl_workload_t *w;
    sl_workload_create(&w);
    const sl_task_req_t shapes[] = {shape(4000, 8 * GiB, 0, 500), shape(8000, 16 * GiB, 1, 0),
                                    shape(2000, 4 * GiB, 0, 250), shape(16000, 32 * GiB, 2, 0)};
    for (int i = 0; i < 4; i++) sl_workload_add(w, &shapes[i], 10 + i);
    sl_cluster_t *cl[2];
    sl_rng_t rng[2], rr;
    sl_rng_seed(&rr, 77);
    for (int k = 0; k < 2; k++) {
        sl_cluster_create(&cl[k]);
        tu_add_nodes(cl[k], k ? "b" : "a", 12, "32", "128Gi", 4, "T4", "", "");
        sl_rng_seed(&rng[k], (uint64_t)k + 1);
    }
    const sl_place_policy_t *fgd = sl_place_policy_find("fgd");
    sl_place_t live[2][256];
    sl_task_req_t lreq[2][256];
    int nlive[2] = {0, 0};
    for (int it = 0; it < 1600; it++) {
        int k = (int)sl_rng_below(&rr, 2);
        if (it == 800) {
            sl_task_req_t extra = shape(1000, GiB, 0, 700);
            sl_workload_add(w, &extra, 20); /* F changes: every cached value must go */
        }
        sl_cycle_t cy = {.cluster = cl[k], .workload = w, .rng = &rng[k], .now_us = 0};
        if (nlive[k] > 0 && (nlive[k] == 256 || sl_rng_below(&rr, 3) == 0)) {
            int j = (int)sl_rng_below(&rr, (uint64_t)nlive[k]);
            assert_int_equal(sl_cluster_release(cl[k], &lreq[k][j], &live[k][j]), 0);
            live[k][j] = live[k][--nlive[k]];
            lreq[k][j] = lreq[k][nlive[k]];
            continue;
        }
        /* Many distinct shapes: CPU in steps of 1 milli. */
        sl_task_req_t r = shape(1 + (int64_t)sl_rng_below(&rr, 3000), GiB, 0, 0);
        if (sl_rng_below(&rr, 2)) r.gpu_milli = 100 * (int32_t)(1 + sl_rng_below(&rr, 9));
        else r.gpus = 1 + (int32_t)sl_rng_below(&rr, 2);
        bool any = false;
        int64_t best = 0;
        for (uint32_t id = 0; id < sl_cluster_node_count(cl[k]); id++) {
            const sl_node_t *n = sl_cluster_node(cl[k], id);
            if (!sl_node_fits(n, &r)) continue;
            int64_t sc;
            sl_place_t p;
            assert_int_equal(fgd->score(&cy, &r, n, 1, &sc, &p), SL_FIT);
            if (!any || (sc >> 32) > best) best = sc >> 32;
            any = true;
        }
        sl_place_t pl;
        int st = sl_place_task(fgd, &cy, &r, &pl);
        assert_int_equal(st == SL_FIT, any);
        if (!any) continue;
        int64_t sc;
        sl_place_t p;
        assert_int_equal(fgd->score(&cy, &r, sl_cluster_node(cl[k], pl.node), 1, &sc, &p), SL_FIT);
        assert_int_equal(sc >> 32, best);
        assert_int_equal(p.gpu_mask, pl.gpu_mask);
        assert_int_equal(sl_cluster_alloc(cl[k], &r, &pl), 0);
        live[k][nlive[k]] = pl;
        lreq[k][nlive[k]++] = r;
    }
    for (int k = 0; k < 2; k++) {
        assert_int_equal(sl_cluster_check(cl[k]), 0);
        sl_cluster_destroy(cl[k]);
    }
    sl_workload_destroy(w);
}

/* The class memo's rows stay bounded: when the cluster grows past 16,384
 * class slots fewer request shapes are kept, which drops the ones interned
 * beyond that, and placements stay exact. */
static void test_fgd_class_memo_bounded_rows(void **state) {
    (void)state;
    sl_workload_t *w;
    sl_workload_create(&w);
    const sl_task_req_t ws[] = {shape(4000, 8 * GiB, 0, 500), shape(8000, 16 * GiB, 1, 0)};
    sl_workload_add(w, &ws[0], 3);
    sl_workload_add(w, &ws[1], 2);
    sl_cluster_t *cl;
    sl_cluster_create(&cl);
    tu_add_nodes(cl, "a", 40, "32", "64Gi", 2, "T4", "", "");
    sl_rng_t rng;
    sl_rng_seed(&rng, 3);
    sl_cycle_t cy = {.cluster = cl, .workload = w, .rng = &rng, .now_us = 0};
    const sl_place_policy_t *fgd = sl_place_policy_find("fgd");
    for (int i = 0; i < 300; i++) { /* 300 distinct shapes interned */
        sl_task_req_t r = shape(1 + i, GiB, 0, 100);
        sl_place_t pl;
        assert_int_equal(sl_place_task(fgd, &cy, &r, &pl), SL_FIT);
    }
    uint32_t first = tu_add_nodes(cl, "x", 17000, "32", "64Gi", 1, "T4", "", "");
    for (uint32_t i = 0; i < 17000; i++) { /* every new node in a class of its own */
        sl_task_req_t r = shape(1 + (int64_t)i, 0, 0, 0);
        sl_place_t pl = {.node = first + i};
        assert_int_equal(sl_cluster_alloc(cl, &r, &pl), 0);
    }
    assert_true(sl_cluster_class_count(cl) > 16384);
    for (int q = 0; q < 3; q++) {
        sl_task_req_t r = q == 1 ? shape(2000, GiB, 1, 0) : shape(1000 + q, GiB, 0, q ? 300 : 0);
        int64_t best = -1;
        for (uint32_t id = 0; id < sl_cluster_node_count(cl); id++) {
            const sl_node_t *n = sl_cluster_node(cl, id);
            if (!sl_node_fits(n, &r)) continue;
            int64_t sc;
            sl_place_t p;
            assert_int_equal(fgd->score(&cy, &r, n, 1, &sc, &p), SL_FIT);
            if ((sc >> 32) > best) best = sc >> 32;
        }
        sl_place_t pl;
        assert_int_equal(sl_place_task(fgd, &cy, &r, &pl), SL_FIT);
        int64_t sc;
        sl_place_t p;
        assert_int_equal(fgd->score(&cy, &r, sl_cluster_node(cl, pl.node), 1, &sc, &p), SL_FIT);
        assert_int_equal(sc >> 32, best);
    }
    sl_cluster_destroy(cl);
    sl_workload_destroy(w);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_workload_add_merges_identical_shapes, tu_teardown),
        cmocka_unit_test_teardown(test_frag_node_shape_by_hand, tu_teardown),
        cmocka_unit_test_teardown(test_frag_node_by_hand, tu_teardown),
        cmocka_unit_test_teardown(test_frag_typical_by_hand, tu_teardown),
        cmocka_unit_test_teardown(test_frag_memo_matches_direct, tu_teardown),
        cmocka_unit_test_teardown(test_frag_memo_flush_keeps_exact, tu_teardown),
        cmocka_unit_test_teardown(test_frag_cluster_sums_nodes, tu_teardown),
        cmocka_unit_test_teardown(test_fgd_choice_by_hand, tu_teardown),
        cmocka_unit_test_teardown(test_fgd_class_memo_matches_direct, tu_teardown),
        cmocka_unit_test_teardown(test_fgd_class_memo_bounded_rows, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
