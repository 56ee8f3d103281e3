/*
 * test_place.c - the placement framework and policies: every policy places
 * only where the task fits, shares never over-fill a GPU, gangs are all or
 * none (the cluster is unchanged on failure), the class-based search finds
 * the same best score as a naive scan of every node, randomness is uniform
 * over nodes, gangs pack onto few nodes, and failures explain themselves.
 */
#include <stdio.h>
#include <string.h>

#include "policy/place.h"
#include "testutil.h"

/* Fixture: a cluster, a workload and a cycle over them. */
typedef struct fx {
    sl_cluster_t *cl;
    sl_workload_t *w;
    sl_rng_t rng;
    sl_cycle_t cy;
} fx_t;

static void fx_init(fx_t *f, uint64_t seed) {
    sl_cluster_create(&f->cl);
    sl_workload_create(&f->w);
    sl_rng_seed(&f->rng, seed);
    f->cy = (sl_cycle_t){.cluster = f->cl, .workload = f->w, .rng = &f->rng, .now_us = 0};
}

static void fx_fini(fx_t *f) {
    sl_workload_destroy(f->w);
    sl_cluster_destroy(f->cl);
}

/* Alibaba-like shapes for the workload (FGD needs one). */
static void fx_workload(fx_t *f) {
    const struct {
        const char *cpu, *mem;
        int gpus;
        const char *share;
        int count;
    } s[] = {{"4", "8Gi", 0, "0.5", 30}, {"8", "16Gi", 1, "", 25}, {"2", "4Gi", 0, "0.25", 20},
             {"16", "32Gi", 2, "", 10},  {"8", "8Gi", 0, "", 10},  {"32", "64Gi", 4, "", 5}};
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++) {
        sl_task_req_t r = tu_req(s[i].cpu, s[i].mem, s[i].gpus, s[i].share);
        sl_workload_add(f->w, &r, s[i].count);
    }
}

/* A mixed cluster: two models, a CPU-only pool, different sizes. */
static void fx_mixed_cluster(fx_t *f) {
    tu_add_nodes(f->cl, "g8", 6, "96", "384Gi", 8, "V100", "32Gi", "");
    tu_add_nodes(f->cl, "g4", 4, "32", "128Gi", 4, "T4", "16Gi", "");
    tu_add_nodes(f->cl, "g2", 3, "16", "64Gi", 2, "T4", "16Gi", "");
    tu_add_nodes(f->cl, "cpu", 3, "64", "256Gi", 0, NULL, "", "cpu");
}

static bool any_node_fits(const sl_cluster_t *cl, const sl_task_req_t *r) {
    for (uint32_t id = 0; id < sl_cluster_node_count(cl); id++)
        if (sl_node_fits(sl_cluster_node(cl, id), r)) return true;
    return false;
}

/* Checks no GPU is over-filled and the index is consistent. */
static void assert_cluster_sane(const sl_cluster_t *cl) {
    assert_int_equal(sl_cluster_check(cl), 0);
    for (uint32_t id = 0; id < sl_cluster_node_count(cl); id++) {
        const sl_node_t *n = sl_cluster_node(cl, id);
        assert_true(n->cpu_free >= 0 && n->mem_free >= 0);
        for (int g = 0; g < n->ngpus; g++) {
            assert_true(n->gpu_free[g] >= 0 && n->gpu_free[g] <= SL_GPU_MILLI);
            assert_true(n->gpu_mem_free[g] >= 0 && n->gpu_mem_free[g] <= n->gpu_mem_total);
        }
    }
}

static void test_place_registry(void **state) {
    (void)state;
    const char *names[] = {"firstfit", "bestfit", "fgd", "dotprod", "gpupacking", "gpuclustering", "random"};
    const sl_place_policy_t *const *list = sl_place_policy_list();
    size_t n = 0;
    while (list[n]) {
        assert_non_null(list[n]->help);
        assert_non_null(list[n]->score);
        assert_ptr_equal(sl_place_policy_find(list[n]->name), list[n]); /* names are unique */
        n++;
    }
    assert_true(n >= sizeof names / sizeof names[0]); /* the FGD paper's set, maybe more */
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const sl_place_policy_t *p = sl_place_policy_find(names[i]);
        assert_non_null(p);
        assert_string_equal(p->name, names[i]);
    }
    assert_null(sl_place_policy_find("worstfit"));
    assert_null(sl_place_policy_find(NULL));
    assert_non_null(sl_place_policy_find(sl_place_policy_default()));
}

/* Every policy: a placement is on a node where the task fits, the cluster
 * accepts it, and NOFIT comes only when no node fits. Fills the cluster with
 * random tasks until many fail; shares never exceed a GPU. */
static void test_place_every_policy_feasible(void **state) {
    (void)state;
    const sl_place_policy_t *const *list = sl_place_policy_list();
    for (size_t pi = 0; list[pi]; pi++) {
        fx_t f;
        fx_init(&f, 1000 + pi);
        fx_mixed_cluster(&f);
        fx_workload(&f);
        sl_rng_t rr;
        sl_rng_seed(&rr, 42);
        int placed = 0, nofit = 0;
        for (int it = 0; it < 600; it++) {
            sl_task_req_t r = tu_random_req(&rr, f.cl, true);
            sl_place_t pl;
            int st = sl_place_task(list[pi], &f.cy, &r, &pl);
            if (st == SL_FIT) {
                const sl_node_t *n = sl_cluster_node(f.cl, pl.node);
                assert_non_null(n);
                assert_true(sl_node_fits(n, &r));
                assert_int_equal(sl_cluster_alloc(f.cl, &r, &pl), 0);
                placed++;
            } else {
                assert_true(st == SL_NOFIT || st == SL_NOFIT_EVER);
                assert_false(any_node_fits(f.cl, &r));
                nofit++;
            }
            if (it % 50 == 0) assert_cluster_sane(f.cl);
        }
        assert_cluster_sane(f.cl);
        assert_true(placed > 50);
        assert_true(nofit > 50);
        fx_fini(&f);
    }
}

/* Many small shares on one node: every policy keeps each GPU <= 1000 milli
 * and fills the node completely. */
static void test_place_shares_never_overfill(void **state) {
    (void)state;
    const sl_place_policy_t *const *list = sl_place_policy_list();
    for (size_t pi = 0; list[pi]; pi++) {
        fx_t f;
        fx_init(&f, 7 + pi);
        tu_add_nodes(f.cl, "n", 2, "1000", "1000Gi", 4, "A100", "", "");
        fx_workload(&f);
        sl_task_req_t r = tu_req("1", "1Gi", 0, "0.3");
        int placed = 0;
        for (;;) {
            sl_place_t pl;
            if (sl_place_task(list[pi], &f.cy, &r, &pl) != SL_FIT) break;
            assert_int_equal(sl_cluster_alloc(f.cl, &r, &pl), 0);
            placed++;
            assert_true(placed <= 24);
        }
        assert_int_equal(placed, 24); /* 3 per GPU x 8 GPUs */
        assert_cluster_sane(f.cl);
        for (uint32_t id = 0; id < 2; id++)
            for (int g = 0; g < 4; g++) assert_int_equal(sl_cluster_node(f.cl, id)->gpu_free[g], 100);
        fx_fini(&f);
    }
}

/* Snapshot of every node's free state. */
typedef struct snap {
    int64_t cpu, mem;
    int32_t gf[SL_MAX_GPUS_PER_NODE];
    int64_t gm[SL_MAX_GPUS_PER_NODE];
} snap_t;

static snap_t *take_snap(const sl_cluster_t *cl) {
    size_t nn = sl_cluster_node_count(cl);
    snap_t *s = sl_xcalloc(nn, sizeof *s);
    for (uint32_t id = 0; id < nn; id++) {
        const sl_node_t *n = sl_cluster_node(cl, id);
        s[id].cpu = n->cpu_free;
        s[id].mem = n->mem_free;
        memcpy(s[id].gf, n->gpu_free, sizeof s[id].gf);
        memcpy(s[id].gm, n->gpu_mem_free, sizeof s[id].gm);
    }
    return s;
}

static void assert_snap(const sl_cluster_t *cl, const snap_t *s) {
    for (uint32_t id = 0; id < sl_cluster_node_count(cl); id++) {
        const sl_node_t *n = sl_cluster_node(cl, id);
        assert_int_equal(s[id].cpu, n->cpu_free);
        assert_int_equal(s[id].mem, n->mem_free);
        assert_memory_equal(s[id].gf, n->gpu_free, sizeof s[id].gf);
        assert_memory_equal(s[id].gm, n->gpu_mem_free, sizeof s[id].gm);
    }
}

/* A gang that cannot fit leaves the cluster exactly as it was, for every
 * policy and for gangs that partly fit (so some tasks were placed first). */
static void test_gang_all_or_none(void **state) {
    (void)state;
    const sl_place_policy_t *const *list = sl_place_policy_list();
    for (size_t pi = 0; list[pi]; pi++) {
        fx_t f;
        fx_init(&f, 99 + pi);
        fx_mixed_cluster(&f);
        fx_workload(&f);
        sl_rng_t rr;
        sl_rng_seed(&rr, 5);
        /* Some background load. */
        for (int i = 0; i < 40; i++) {
            sl_task_req_t r = tu_random_req(&rr, f.cl, true);
            sl_place_t pl;
            if (sl_place_task(list[pi], &f.cy, &r, &pl) == SL_FIT) sl_cluster_alloc(f.cl, &r, &pl);
        }
        int fails = 0, fits = 0;
        for (int it = 0; it < 200; it++) {
            sl_task_req_t r = tu_random_req(&rr, f.cl, true);
            int32_t n = 1 + (int32_t)sl_rng_below(&rr, 12);
            sl_place_t pls[16];
            char reason[SL_REASON_MAX];
            snap_t *s = take_snap(f.cl);
            int st = sl_place_gang(list[pi], &f.cy, f.cl, &r, n, pls, reason, sizeof reason);
            if (st == SL_FIT) {
                fits++;
                assert_string_equal(reason, "");
                for (int32_t k = 0; k < n; k++) assert_true(pls[k].node < sl_cluster_node_count(f.cl));
                assert_cluster_sane(f.cl);
                /* Give it back (in reverse) so later gangs still have room. */
                for (int32_t k = n - 1; k >= 0; k--) assert_int_equal(sl_cluster_release(f.cl, &r, &pls[k]), 0);
                assert_snap(f.cl, s);
            } else {
                fails++;
                assert_true(st == SL_NOFIT || st == SL_NOFIT_EVER);
                assert_true(strlen(reason) > 0);
                assert_snap(f.cl, s);
                assert_int_equal(sl_cluster_check(f.cl), 0);
            }
            sl_free(s);
        }
        assert_true(fits > 10);
        assert_true(fails > 10);
        fx_fini(&f);
    }
}

/* Seeded property: the best score found through classes equals the best
 * score of a naive scan over every up node (primary part, the policy's
 * own score before the random tie-break), and NOFIT iff no node fits. */
static void test_place_task_matches_naive(void **state) {
    (void)state;
    const char *pols[] = {"bestfit", "fgd", "dotprod", "gpupacking", "gpuclustering", "random"};
    for (size_t pi = 0; pi < 2 * sizeof pols / sizeof pols[0]; pi++) {
        /* Each built-in policy twice: as registered (the framework's fast
         * path) and as an unregistered copy (the generic path through
         * score, which any other policy takes). */
        size_t np = sizeof pols / sizeof pols[0];
        sl_place_policy_t copy = *sl_place_policy_find(pols[pi % np]);
        const sl_place_policy_t *pol = pi < np ? sl_place_policy_find(pols[pi]) : &copy;
        for (uint64_t seed = 1; seed <= 4; seed++) {
            fx_t f;
            fx_init(&f, seed);
            sl_rng_t rr;
            sl_rng_seed(&rr, seed * 7919);
            /* Random cluster: 30..80 nodes of a few types, random load. */
            int nn = 30 + (int)sl_rng_below(&rr, 51);
            for (int i = 0; i < nn; i++) {
                static const int g[] = {8, 4, 2, 0};
                int k = (int)sl_rng_below(&rr, 4);
                char name[32];
                snprintf(name, sizeof name, "n%d", i);
                tu_add_nodes(f.cl, name, 1, k == 0 ? "96" : "32", "256Gi", g[k], g[k] ? (k == 1 ? "T4" : "V100") : NULL,
                             "16Gi", k == 3 ? "cpu" : "");
            }
            fx_workload(&f);
            for (int i = 0; i < 3 * nn; i++) {
                sl_task_req_t r = tu_random_req(&rr, f.cl, true);
                sl_place_t pl;
                const sl_place_policy_t *ff = sl_place_policy_find("random");
                if (sl_place_task(ff, &f.cy, &r, &pl) == SL_FIT) sl_cluster_alloc(f.cl, &r, &pl);
            }
            if (seed == 2) sl_cluster_set_state(f.cl, 0, SL_NODE_DOWN);
            for (int q = 0; q < 150; q++) {
                sl_task_req_t r = tu_random_req(&rr, f.cl, true);
                sl_place_t pl;
                if (!tu_place_check_naive(pol, &f.cy, &r, strcmp(pols[pi % np], "random") != 0, &pl)) continue;
                assert_int_equal(sl_cluster_node(f.cl, pl.node)->state, SL_NODE_UP);
                assert_int_equal(sl_cluster_alloc(f.cl, &r, &pl), 0);
            }
            assert_cluster_sane(f.cl);
            fx_fini(&f);
        }
    }
}

/* firstfit takes the class representative with the lowest id that fits,
 * deterministically, and fills the cluster. */
static void test_place_firstfit_lowest(void **state) {
    (void)state;
    fx_t f;
    fx_init(&f, 1);
    tu_add_nodes(f.cl, "a", 4, "8", "32Gi", 2, "T4", "", "");
    const sl_place_policy_t *ff = sl_place_policy_find("firstfit");
    sl_task_req_t r = tu_req("1", "1Gi", 2, "");
    for (int k = 0; k < 4; k++) {
        uint32_t want = UINT32_MAX;
        for (size_t i = 0; i < sl_cluster_class_count(f.cl); i++) {
            const sl_node_t *rep = sl_cluster_class_rep(f.cl, i);
            if (sl_node_fits(rep, &r) && rep->id < want) want = rep->id;
        }
        sl_place_t pl;
        assert_int_equal(sl_place_task(ff, &f.cy, &r, &pl), SL_FIT);
        assert_int_equal(pl.node, want);
        assert_int_equal(pl.gpu_mask, 3u);
        assert_int_equal(sl_cluster_alloc(f.cl, &r, &pl), 0);
    }
    sl_place_t pl;
    assert_int_equal(sl_place_task(ff, &f.cy, &r, &pl), SL_NOFIT);
    sl_task_req_t big = tu_req("1", "1Gi", 4, "");
    assert_int_equal(sl_place_task(ff, &f.cy, &big, &pl), SL_NOFIT_EVER);
    fx_fini(&f);
}

/* random is uniform over nodes, not classes: 9 empty nodes form one class,
 * one half-used node another; the half-used one must win about 1/10. */
static void test_place_random_uniform_over_nodes(void **state) {
    (void)state;
    fx_t f;
    fx_init(&f, 12345);
    tu_add_nodes(f.cl, "n", 10, "32", "128Gi", 4, "T4", "", "");
    sl_task_req_t r = tu_req("1", "1Gi", 2, "");
    sl_place_t pl = {.node = 9, .gpu_mask = 3u, .gpu_milli = 1000};
    assert_int_equal(sl_cluster_alloc(f.cl, &r, &pl), 0);
    assert_int_equal(sl_cluster_class_count(f.cl), 2);
    const sl_place_policy_t *rnd = sl_place_policy_find("random");
    sl_task_req_t t = tu_req("1", "1Gi", 1, "");
    int hits = 0, trials = 20000;
    for (int i = 0; i < trials; i++) {
        assert_int_equal(sl_place_task(rnd, &f.cy, &t, &pl), SL_FIT);
        hits += pl.node == 9;
    }
    /* Binomial(20000, 0.1): mean 2000, sd 42; the bounds are > 7 sd away. */
    assert_true(hits > 1700 && hits < 2300);
    fx_fini(&f);
}

/* Ties between classes are broken uniformly over NODES on the fast path
 * too: 9 untouched nodes form one class, one node with memory in use (which
 * bestfit does not score) another, with the same primary score; the odd one
 * must win about 1/10 for bestfit, the baseline that breaks ties by a draw
 * (the others but random use the node order, tested below; bestfit's
 * results are the same either way, and its fast path is cheaper so). */
static void test_place_ties_uniform_over_nodes(void **state) {
    (void)state;
    const char *pols[] = {"bestfit"};
    for (size_t pi = 0; pi < sizeof pols / sizeof pols[0]; pi++) {
        fx_t f;
        fx_init(&f, 4242 + pi);
        fx_workload(&f);
        tu_add_nodes(f.cl, "n", 10, "32", "128Gi", 4, "T4", "", "");
        sl_task_req_t m = tu_req("", "8Gi", 0, "");
        sl_place_t pl = {.node = 9};
        assert_int_equal(sl_cluster_alloc(f.cl, &m, &pl), 0);
        assert_int_equal(sl_cluster_class_count(f.cl), 2);
        const sl_place_policy_t *pol = sl_place_policy_find(pols[pi]);
        sl_task_req_t t = tu_req("1", "1Gi", 1, "");
        int hits = 0, trials = 20000;
        for (int i = 0; i < trials; i++) {
            assert_int_equal(sl_place_task(pol, &f.cy, &t, &pl), SL_FIT);
            hits += pl.node == 9;
        }
        /* Binomial(20000, 0.1): mean 2000, sd 42; the bounds are > 7 sd away. */
        assert_true(hits > 1700 && hits < 2300);
        fx_fini(&f);
    }
}

/* Nodes 0..n-1 in the node order of key (selection sort on sl__node_rank). */
static void rank_order(uint64_t key, uint32_t *order, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) order[i] = i;
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t j = i + 1; j < n; j++)
            if (sl__node_rank(key, order[j]) < sl__node_rank(key, order[i])) {
                uint32_t t = order[i];
                order[i] = order[j];
                order[j] = t;
            }
}

/* One run of the tie scenario below with policy pol and cy.order_key = key;
 * with cluster_key the cluster keeps its classes in that order too (the O(1)
 * path), else in the order of key 0 (the scan). Writes the node order the
 * ties followed to out[10]. */
static void ties_run(const char *pol_name, uint64_t seed, uint64_t key, bool cluster_key,
                     uint32_t *out) {
    fx_t f;
    fx_init(&f, seed);
    fx_workload(&f);
    tu_add_nodes(f.cl, "n", 10, "4", "128Gi", 4, "T4", "", "");
    sl_task_req_t m = tu_req("", "8Gi", 0, "");
    sl_place_t pl = {.node = 9};
    assert_int_equal(sl_cluster_alloc(f.cl, &m, &pl), 0);
    assert_int_equal(sl_cluster_class_count(f.cl), 2);
    if (cluster_key) sl__cluster_set_order_key(f.cl, key);
    assert_int_equal(sl_cluster_check(f.cl), 0);
    f.cy.order_key = key;
    uint32_t order[10];
    rank_order(key, order, 10);
    const sl_place_policy_t *pol = sl_place_policy_find(pol_name);
    sl_rng_t before = f.rng;
    sl_task_req_t t = tu_req("1", "1Gi", 1, "");
    for (int i = 0; i < 50; i++) {
        assert_int_equal(sl_place_task(pol, &f.cy, &t, &pl), SL_FIT);
        assert_int_equal(pl.node, order[0]);
    }
    /* 40 one-CPU tasks without GPUs fill the 4-CPU nodes in rank order;
     * half through sl_place_gang (n = 1), as the scheduler places. */
    sl_task_req_t c = tu_req("1", "1Gi", 0, "");
    for (int i = 0; i < 40; i++) {
        if (i % 2 == 0) {
            assert_int_equal(sl_place_task(pol, &f.cy, &c, &pl), SL_FIT);
            assert_int_equal(sl_cluster_alloc(f.cl, &c, &pl), 0);
        } else {
            char reason[SL_REASON_MAX];
            assert_int_equal(sl_place_gang(pol, &f.cy, f.cl, &c, 1, &pl, reason, sizeof reason), SL_FIT);
        }
        assert_int_equal(pl.node, order[i / 4]);
        if (i % 4 == 3) out[i / 4] = pl.node;
    }
    assert_int_equal(sl_place_task(pol, &f.cy, &c, &pl), SL_NOFIT);
    assert_memory_equal(&before, &f.rng, sizeof before);
    assert_true(sl__cluster_order_key(f.cl) == (cluster_key ? key : 0));
    assert_cluster_sane(f.cl);
    fx_fini(&f);
}

/* gpupacking, gpuclustering, dotprod and fgd break ties as the FGD paper's
 * simulator does (issue 12: this replaced the uniform draw dotprod and fgd
 * used before): the first node in a pseudo-random order keyed by cy->order_key
 * (sl__node_rank), the same node every time, never a draw. 10 identical
 * nodes in two classes (one with memory in use): a 1-GPU task always goes
 * to the lowest-ranked node, whichever class holds it; tasks without GPUs
 * (score 0 everywhere) fill the nodes one after the other in rank order
 * (first fit over the order), through the scheduler's path (sl_place_gang)
 * as well as sl_place_task, and the cycle's RNG is never touched. The same
 * holds whether the cluster keeps its classes in the cycle's order (O(1))
 * or not (a scan), and different keys give different orders. */
static void test_place_ties_node_order(void **state) {
    (void)state;
    const char *pols[] = {"gpupacking", "gpuclustering", "dotprod", "fgd"};
    const uint64_t keys[] = {0, UINT64_C(0x9e3779b97f4a7c15), UINT64_C(0x0123456789abcdef)};
    for (size_t pi = 0; pi < sizeof pols / sizeof pols[0]; pi++) {
        uint32_t seen[3][10];
        for (size_t ki = 0; ki < 3; ki++) {
            uint32_t scan[10];
            ties_run(pols[pi], 77 + pi, keys[ki], true, seen[ki]);
            ties_run(pols[pi], 77 + pi, keys[ki], false, scan);
            assert_memory_equal(seen[ki], scan, sizeof scan);
        }
        assert_memory_not_equal(seen[0], seen[1], sizeof seen[0]);
        assert_memory_not_equal(seen[0], seen[2], sizeof seen[0]);
        assert_memory_not_equal(seen[1], seen[2], sizeof seen[0]);
    }
}

/* gpuclustering keeps kinds apart as the FGD artifact does (issue 12): a
 * kind per GPU count ("<k>-gpu") and one for shares, read from the tasks a
 * node runs, not from its free capacity. Three 8-GPU nodes: A runs one
 * 2-GPU task, B two 1-GPU tasks (both 6 GPUs free, the same free state),
 * C runs one 2-GPU task and a share. A 2-GPU task goes to A (its only
 * kind: 75 + base) and a 1-GPU task to B, under every node order; a share
 * goes to C (its kind among others: 50 + base beats 25 + base on the idle
 * D and base on A and B). Inferring kinds from free capacity (a fully used
 * GPU means "whole GPUs") sees A and B alike and lets the order decide. */
static void test_place_gpuclustering_kinds(void **state) {
    (void)state;
    const uint64_t keys[] = {0, 1, 2, 3, UINT64_C(0x9e3779b97f4a7c15), UINT64_C(0x0123456789abcdef)};
    const sl_place_policy_t *pol = sl_place_policy_find("gpuclustering");
    for (size_t ki = 0; ki < sizeof keys / sizeof keys[0]; ki++) {
        fx_t f;
        fx_init(&f, 5);
        uint32_t a = tu_add_nodes(f.cl, "a", 1, "96", "384Gi", 8, "V100", "", "");
        uint32_t b = tu_add_nodes(f.cl, "b", 1, "96", "384Gi", 8, "V100", "", "");
        uint32_t c = tu_add_nodes(f.cl, "c", 1, "96", "384Gi", 8, "V100", "", "");
        tu_add_nodes(f.cl, "d", 1, "96", "384Gi", 8, "V100", "", "");
        sl_task_req_t two = tu_req("1", "1Gi", 2, ""), one = tu_req("1", "1Gi", 1, "");
        sl_task_req_t share = tu_req("1", "1Gi", 0, "0.5");
        sl_place_t pl = {.node = a, .gpu_mask = 0x3, .gpu_milli = SL_GPU_MILLI};
        assert_int_equal(sl_cluster_alloc(f.cl, &two, &pl), 0);
        pl = (sl_place_t){.node = b, .gpu_mask = 0x1, .gpu_milli = SL_GPU_MILLI};
        assert_int_equal(sl_cluster_alloc(f.cl, &one, &pl), 0);
        pl.gpu_mask = 0x2;
        assert_int_equal(sl_cluster_alloc(f.cl, &one, &pl), 0);
        pl = (sl_place_t){.node = c, .gpu_mask = 0x3, .gpu_milli = SL_GPU_MILLI};
        assert_int_equal(sl_cluster_alloc(f.cl, &two, &pl), 0);
        pl = (sl_place_t){.node = c, .gpu_mask = 0x4, .gpu_milli = 500};
        assert_int_equal(sl_cluster_alloc(f.cl, &share, &pl), 0);
        /* A and B have the same free state but not the same kinds. */
        assert_int_equal(sl_cluster_node(f.cl, a)->kinds, 1u << 2);
        assert_int_equal(sl_cluster_node(f.cl, b)->kinds, 1u << 1);
        assert_int_equal(sl_cluster_node(f.cl, c)->kinds, (1u << 2) | SL_KIND_SHARE);
        f.cy.order_key = keys[ki];
        sl__cluster_set_order_key(f.cl, keys[ki]);
        assert_int_equal(sl_place_task(pol, &f.cy, &two, &pl), SL_FIT);
        assert_int_equal(pl.node, a);
        assert_int_equal(sl_place_task(pol, &f.cy, &one, &pl), SL_FIT);
        assert_int_equal(pl.node, b);
        assert_int_equal(sl_place_task(pol, &f.cy, &share, &pl), SL_FIT);
        assert_int_equal(pl.node, c);
        assert_cluster_sane(f.cl);
        fx_fini(&f);
    }
}

/* The scheduler keys the node order by its seed: the cluster follows the
 * scheduler's key, seeds give different keys, and a job of one CPU task
 * (every node ties) starts on the first node in that key's order. */
static void test_place_ties_order_from_seed(void **state) {
    (void)state;
    uint64_t got[3];
    for (uint64_t seed = 0; seed < 3; seed++) {
        sl_cluster_t *cl;
        sl_cluster_create(&cl);
        tu_add_nodes(cl, "n", 12, "4", "16Gi", 2, "T4", "", "");
        sl_sched_config_t cfg;
        sl_sched_config_init(&cfg);
        cfg.placement = "gpupacking";
        cfg.seed = seed;
        sl_sched_t *s = NULL;
        char err[256];
        assert_int_equal(sl_sched_create(&cfg, cl, &s, err, sizeof err), 0);
        got[seed] = sl__cluster_order_key(cl);
        assert_int_equal(tu_tenant_add(s, "a", 1, TU_NO_QUOTA), 0);
        sl_job_spec_t sp = {.id = 1, .ntasks = 1, .task = tu_req("1", "1Gi", 0, "")};
        assert_int_equal(sl_sched_submit(s, &sp, err, sizeof err), 0);
        assert_int_equal(sl_sched_cycle(s, 0, NULL, NULL, NULL), 1);
        uint32_t order[12];
        rank_order(got[seed], order, 12);
        assert_int_equal(sl_job_place(sl_sched_job(s, 1), 0)->node, order[0]);
        assert_int_equal(sl_cluster_check(cl), 0);
        sl_sched_destroy(s);
        sl_cluster_destroy(cl);
    }
    assert_true(got[0] != got[1] && got[0] != got[2] && got[1] != got[2]);
}

/* The classes' first members in a key's order stay right while nodes move
 * between classes under random allocations and releases, and across key
 * changes: each equals the member of lowest rank (sl_cluster_check also
 * verifies the heaps). */
static void test_place_order_first_member_churn(void **state) {
    (void)state;
    fx_t f;
    fx_init(&f, 11);
    fx_mixed_cluster(&f);
    tu_add_nodes(f.cl, "x", 40, "8", "32Gi", 4, "T4", "16Gi", "");
    sl_place_t held[400];
    sl_task_req_t reqs[400];
    int nheld = 0;
    for (int step = 0; step < 2000; step++) {
        if (step % 500 == 0) {
            f.cy.order_key = sl_rng_next(&f.rng);
            sl__cluster_set_order_key(f.cl, f.cy.order_key);
        }
        if (nheld > 0 && (nheld == 400 || sl_rng_below(&f.rng, 3) == 0)) {
            int k = (int)sl_rng_below(&f.rng, (uint64_t)nheld);
            assert_int_equal(sl_cluster_release(f.cl, &reqs[k], &held[k]), 0);
            held[k] = held[--nheld];
            reqs[k] = reqs[nheld];
        } else {
            sl_task_req_t r = tu_random_req(&f.rng, f.cl, false);
            if (sl_place_task(sl_place_policy_find("gpupacking"), &f.cy, &r, &held[nheld]) == SL_FIT) {
                assert_int_equal(sl_cluster_alloc(f.cl, &r, &held[nheld]), 0);
                reqs[nheld++] = r;
            }
        }
        if (step % 50 == 0) {
            assert_int_equal(sl_cluster_check(f.cl), 0);
            for (size_t i = 0; i < sl_cluster_class_count(f.cl); i++) {
                uint32_t best = UINT32_MAX;
                for (uint32_t k = 0; k < sl_cluster_class_size(f.cl, i); k++) {
                    uint32_t id = sl_cluster_class_node(f.cl, i, k);
                    if (best == UINT32_MAX ||
                        sl__node_rank(f.cy.order_key, id) < sl__node_rank(f.cy.order_key, best))
                        best = id;
                }
                assert_int_equal(sl__cluster_class_ids(f.cl)[i].first, best);
                assert_int_equal(sl__class_first_member(&f.cy, f.cl, (uint32_t)i), best);
            }
        }
    }
    while (nheld > 0) {
        nheld--;
        assert_int_equal(sl_cluster_release(f.cl, &reqs[nheld], &held[nheld]), 0);
    }
    assert_int_equal(sl_cluster_check(f.cl), 0);
    fx_fini(&f);
}

/* A request no bucket can hold (more GPUs than any node has free) is refused
 * without a full scan and with the same reasons; after a release it fits. */
static void test_place_bucket_refusal_and_recovery(void **state) {
    (void)state;
    fx_t f;
    fx_init(&f, 5);
    fx_workload(&f);
    tu_add_nodes(f.cl, "n", 3, "96", "384Gi", 8, "V100", "32Gi", "");
    const sl_place_policy_t *const *list = sl_place_policy_list();
    sl_task_req_t five = tu_req("1", "1Gi", 5, "");
    sl_place_t hold[3];
    for (uint32_t id = 0; id < 3; id++) {
        hold[id] = (sl_place_t){.node = id, .gpu_mask = 0x1fu, .gpu_milli = 1000};
        assert_int_equal(sl_cluster_alloc(f.cl, &five, &hold[id]), 0);
    }
    sl_task_req_t four = tu_req("1", "1Gi", 4, "");
    sl_task_req_t big_share = tu_req("1", "1Gi", 0, "0.5");
    for (size_t pi = 0; list[pi]; pi++) {
        sl_place_t pl;
        char reason[SL_REASON_MAX];
        assert_int_equal(sl_place_task(list[pi], &f.cy, &four, &pl), SL_NOFIT);
        assert_int_equal(sl_place_gang(list[pi], &f.cy, f.cl, &four, 1, &pl, reason, sizeof reason), SL_NOFIT);
        assert_string_equal(reason, "needs 4 GPUs on one node; largest free block is 3");
        /* A share still fits on the free GPUs. */
        assert_int_equal(sl_place_task(list[pi], &f.cy, &big_share, &pl), SL_FIT);
        assert_true(pl.gpu_mask & 0xe0u);
    }
    assert_int_equal(sl_cluster_release(f.cl, &five, &hold[1]), 0);
    for (size_t pi = 0; list[pi]; pi++) {
        sl_place_t pl;
        assert_int_equal(sl_place_task(list[pi], &f.cy, &four, &pl), SL_FIT);
        assert_int_equal(pl.node, 1);
    }
    assert_cluster_sane(f.cl);
    fx_fini(&f);
}

static int distinct_nodes(const sl_place_t *pls, int32_t n) {
    int d = 0;
    for (int32_t i = 0; i < n; i++) {
        bool seen = false;
        for (int32_t j = 0; j < i; j++) seen |= pls[j].node == pls[i].node;
        d += !seen;
    }
    return d;
}

/* Gangs pack: 4 x 4 GPUs on 8-GPU nodes take 2 nodes, and a 2-task gang
 * goes onto one empty node rather than two half-empty ones. */
static void test_gang_fewest_nodes(void **state) {
    (void)state;
    const char *pols[] = {"bestfit", "fgd", "random", "firstfit"};
    for (size_t pi = 0; pi < 4; pi++) {
        fx_t f;
        fx_init(&f, 3);
        fx_workload(&f);
        tu_add_nodes(f.cl, "n", 6, "96", "384Gi", 8, "V100", "32Gi", "");
        /* Nodes 0 and 1 are half used: 4 free GPUs each. */
        sl_task_req_t half = tu_req("1", "1Gi", 4, "");
        for (uint32_t id = 0; id < 2; id++) {
            sl_place_t pl = {.node = id, .gpu_mask = 0x0fu, .gpu_milli = 1000};
            assert_int_equal(sl_cluster_alloc(f.cl, &half, &pl), 0);
        }
        const sl_place_policy_t *pol = sl_place_policy_find(pols[pi]);
        sl_task_req_t r = tu_req("8", "32Gi", 4, "");
        sl_place_t pls[8];
        char reason[SL_REASON_MAX];
        assert_int_equal(sl_place_gang(pol, &f.cy, f.cl, &r, 2, pls, reason, sizeof reason), SL_FIT);
        assert_int_equal(distinct_nodes(pls, 2), 1);
        assert_true(pls[0].node >= 2);
        assert_int_equal(pls[0].gpu_mask & pls[1].gpu_mask, 0);
        assert_int_equal(sl_place_gang(pol, &f.cy, f.cl, &r, 4, pls, reason, sizeof reason), SL_FIT);
        assert_int_equal(distinct_nodes(pls, 4), 2);
        /* Left: one empty node (2 tasks) and two half nodes (1 task each). */
        assert_int_equal(sl_place_gang(pol, &f.cy, f.cl, &r, 5, pls, reason, sizeof reason), SL_NOFIT);
        assert_int_equal(sl_place_gang(pol, &f.cy, f.cl, &r, 4, pls, reason, sizeof reason), SL_FIT);
        assert_int_equal(distinct_nodes(pls, 4), 3);
        assert_int_equal(pls[0].node, pls[1].node); /* the empty node is filled first */
        assert_cluster_sane(f.cl);
        fx_fini(&f);
    }
}

/* n == 1 through the gang path chooses what sl_place_task chooses. */
static void test_gang_of_one_equals_task(void **state) {
    (void)state;
    const sl_place_policy_t *const *list = sl_place_policy_list();
    for (size_t pi = 0; list[pi]; pi++) {
        fx_t a, b;
        fx_init(&a, 77);
        fx_init(&b, 77);
        fx_mixed_cluster(&a);
        fx_mixed_cluster(&b);
        fx_workload(&a);
        fx_workload(&b);
        sl_rng_t rr;
        sl_rng_seed(&rr, 31337);
        for (int it = 0; it < 200; it++) {
            sl_task_req_t r = tu_random_req(&rr, a.cl, true);
            sl_place_t p1, p2;
            int s1 = sl_place_task(list[pi], &a.cy, &r, &p1);
            int s2 = sl_place_gang(list[pi], &b.cy, b.cl, &r, 1, &p2, NULL, 0);
            assert_int_equal(s1, s2);
            if (s1 != SL_FIT) continue;
            assert_int_equal(p1.node, p2.node);
            assert_int_equal(p1.gpu_mask, p2.gpu_mask);
            assert_int_equal(sl_cluster_alloc(a.cl, &r, &p1), 0);
        }
        fx_fini(&a);
        fx_fini(&b);
    }
}

static void test_gang_reasons(void **state) {
    (void)state;
    fx_t f;
    fx_init(&f, 1);
    tu_add_nodes(f.cl, "n", 4, "96", "384Gi", 8, "H100", "80Gi", "");
    int h100 = sl_cluster_model_find(f.cl, "H100");
    int a100 = sl_cluster_model_intern(f.cl, "A100");
    int xpool = sl_cluster_pool_intern(f.cl, "x");
    const sl_place_policy_t *pol = sl_place_policy_find("bestfit");
    char reason[SL_REASON_MAX];
    sl_place_t pls[8];

    sl_task_req_t r = tu_req("1", "1Gi", 1, "");
    r.pool = xpool;
    assert_int_equal(sl_place_gang(pol, &f.cy, f.cl, &r, 1, pls, reason, sizeof reason), SL_NOFIT_EVER);
    assert_string_equal(reason, "no node in pool \"x\"");

    r = tu_req("1", "1Gi", 1, "");
    r.model_mask = UINT64_C(1) << a100;
    assert_int_equal(sl_place_gang(pol, &f.cy, f.cl, &r, 1, pls, reason, sizeof reason), SL_NOFIT_EVER);
    assert_string_equal(reason, "no node has model A100");

    r = tu_req("1", "1Gi", 16, "");
    assert_int_equal(sl_place_gang(pol, &f.cy, f.cl, &r, 1, pls, reason, sizeof reason), SL_NOFIT_EVER);
    assert_string_equal(reason, "needs 16 GPUs on one node; the largest node has 8");

    r = tu_req("200", "1Gi", 0, "");
    assert_int_equal(sl_place_gang(pol, &f.cy, f.cl, &r, 1, pls, reason, sizeof reason), SL_NOFIT_EVER);
    assert_string_equal(reason, "needs cpu 200, mem 1Gi; no node is that large even when empty");

    r = tu_req("1", "1Gi", 4, "");
    assert_int_equal(sl_place_gang(pol, &f.cy, f.cl, &r, 9, pls, reason, sizeof reason), SL_NOFIT_EVER);
    assert_string_equal(reason, "needs 9 tasks x (cpu 1, mem 1Gi, 4 GPUs); the whole cluster holds at most 8 even when empty");

    /* Leave a largest free block of 2 GPUs on every node. */
    sl_task_req_t six = tu_req("1", "1Gi", 6, "");
    for (uint32_t id = 0; id < 4; id++) {
        sl_place_t pl = {.node = id, .gpu_mask = 0x3fu, .gpu_milli = 1000};
        assert_int_equal(sl_cluster_alloc(f.cl, &six, &pl), 0);
    }
    r = tu_req("8", "32Gi", 4, "");
    r.model_mask = UINT64_C(1) << h100;
    assert_int_equal(sl_place_gang(pol, &f.cy, f.cl, &r, 8, pls, reason, sizeof reason), SL_NOFIT);
    assert_string_equal(reason, "needs 8 tasks x 4 GPUs of model H100; largest free block is 2 GPUs on one node");
    assert_int_equal(sl_place_gang(pol, &f.cy, f.cl, &r, 1, pls, reason, sizeof reason), SL_NOFIT);
    assert_string_equal(reason, "needs 4 GPUs of model H100 on one node; largest free block is 2");

    /* GPUs are there but not the CPU. */
    r = tu_req("96", "1Gi", 1, "");
    assert_int_equal(sl_place_gang(pol, &f.cy, f.cl, &r, 1, pls, reason, sizeof reason), SL_NOFIT);
    assert_string_equal(reason, "needs cpu 96, mem 1Gi, 1 GPU; no node has enough free CPU");

    /* A gang of which only some tasks fit now. */
    r = tu_req("1", "1Gi", 2, "");
    assert_int_equal(sl_place_gang(pol, &f.cy, f.cl, &r, 5, pls, reason, sizeof reason), SL_NOFIT);
    assert_string_equal(reason, "needs 5 tasks x (cpu 1, mem 1Gi, 2 GPUs); only 4 fit now");
    assert_int_equal(sl_place_gang(pol, &f.cy, f.cl, &r, 4, pls, reason, sizeof reason), SL_FIT);
    assert_string_equal(reason, "");

    /* Bad arguments. */
    assert_int_equal(sl_place_gang(pol, &f.cy, f.cl, &r, 0, pls, reason, sizeof reason), SL_EINVAL);
    assert_int_equal(sl_place_gang(NULL, &f.cy, f.cl, &r, 1, pls, reason, sizeof reason), SL_EINVAL);
    assert_int_equal(sl_place_task(pol, &f.cy, &r, NULL), SL_EINVAL);
    fx_fini(&f);
}

/* firstfit's score (the generic path, which the registered policy never
 * takes because the framework uses its fast path) ranks a lower node id
 * higher and picks GPUs with the default rule; through an unregistered copy
 * the framework must choose the same class, and the same GPUs on it, as the
 * fast path, on random loads. */
static void test_place_firstfit_score_matches_fast_path(void **state) {
    (void)state;
    const sl_place_policy_t *ff = sl_place_policy_find("firstfit");
    assert_non_null(ff);
    sl_place_policy_t copy = *ff;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        fx_t f;
        fx_init(&f, seed);
        fx_mixed_cluster(&f);
        fx_workload(&f);
        sl_rng_t rr;
        sl_rng_seed(&rr, seed * 31);
        /* Direct scores: fits -> SL_FIT with -id; full node -> SL_NOFIT. */
        sl_task_req_t one = tu_req("1", "1Gi", 1, "");
        for (uint32_t id = 0; id < sl_cluster_node_count(f.cl); id++) {
            const sl_node_t *n = sl_cluster_node(f.cl, id);
            int64_t sc = 1;
            sl_place_t p;
            if (n->ngpus == 0) {
                assert_int_equal(copy.score(&f.cy, &one, n, 1, &sc, &p), SL_NOFIT);
                continue;
            }
            assert_int_equal(copy.score(&f.cy, &one, n, 1, &sc, &p), SL_FIT);
            assert_true(sc == -(int64_t)id);
            assert_int_equal(p.gpu_mask, 1u);
        }
        int placed = 0;
        for (int it = 0; it < 400; it++) {
            sl_task_req_t r = tu_random_req(&rr, f.cl, true);
            sl_place_t fast, slow;
            int a = sl_place_task(ff, &f.cy, &r, &fast);
            int b = sl_place_task(&copy, &f.cy, &r, &slow);
            assert_int_equal(a == SL_FIT, b == SL_FIT);
            if (a != SL_FIT) continue;
            /* Same class: the two nodes have identical free state, and no
             * class whose representative has a lower id fits. */
            uint32_t want = UINT32_MAX;
            for (size_t i = 0; i < sl_cluster_class_count(f.cl); i++) {
                const sl_node_t *rep = sl_cluster_class_rep(f.cl, i);
                if (sl_node_fits(rep, &r) && rep->id < want) want = rep->id;
            }
            assert_int_equal(fast.node, want);
            const sl_node_t *nf = sl_cluster_node(f.cl, fast.node), *ns = sl_cluster_node(f.cl, slow.node);
            assert_true(sl_node_fits(ns, &r));
            assert_int_equal(nf->cpu_free, ns->cpu_free);
            assert_int_equal(nf->ngpus, ns->ngpus);
            assert_int_equal(slow.gpu_mask, fast.gpu_mask);
            assert_int_equal(sl_cluster_alloc(f.cl, &r, &fast), 0);
            placed++;
        }
        assert_true(placed > 20);
        assert_cluster_sane(f.cl);
        fx_fini(&f);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_place_registry, tu_teardown),
        cmocka_unit_test_teardown(test_place_every_policy_feasible, tu_teardown),
        cmocka_unit_test_teardown(test_place_shares_never_overfill, tu_teardown),
        cmocka_unit_test_teardown(test_gang_all_or_none, tu_teardown),
        cmocka_unit_test_teardown(test_place_task_matches_naive, tu_teardown),
        cmocka_unit_test_teardown(test_place_firstfit_lowest, tu_teardown),
        cmocka_unit_test_teardown(test_place_firstfit_score_matches_fast_path, tu_teardown),
        cmocka_unit_test_teardown(test_place_random_uniform_over_nodes, tu_teardown),
        cmocka_unit_test_teardown(test_place_ties_uniform_over_nodes, tu_teardown),
        cmocka_unit_test_teardown(test_place_ties_node_order, tu_teardown),
        cmocka_unit_test_teardown(test_place_gpuclustering_kinds, tu_teardown),
        cmocka_unit_test_teardown(test_place_ties_order_from_seed, tu_teardown),
        cmocka_unit_test_teardown(test_place_order_first_member_churn, tu_teardown),
        cmocka_unit_test_teardown(test_place_bucket_refusal_and_recovery, tu_teardown),
        cmocka_unit_test_teardown(test_gang_fewest_nodes, tu_teardown),
        cmocka_unit_test_teardown(test_gang_of_one_equals_task, tu_teardown),
        cmocka_unit_test_teardown(test_gang_reasons, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
