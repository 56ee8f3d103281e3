/*
 * test_place_filter.c - the placement policies' filter step (policy.h): a
 * policy whose filter refuses some nodes never gets a task placed there,
 * even on nodes of the same free-capacity class as nodes it accepts (so the
 * framework must look past the class representative); a gang counts only
 * the nodes that pass; a task no node may take is SL_NOFIT_EVER with a
 * reason naming the filter. Random requests are checked against a naive
 * scan: SL_FIT exactly when some passing node fits, and never elsewhere.
 */
#include <stdio.h>
#include <string.h>

#include "testutil.h"

/* bestfit's score, behind filters on the node's name. */
static int bestfit_score(sl_cycle_t *cy, const sl_task_req_t *req, const sl_node_t *node,
                         uint32_t weight, int64_t *score, sl_place_t *pl) {
    return sl_place_policy_find("bestfit")->score(cy, req, node, weight, score, pl);
}

static bool not_a(const sl_cycle_t *cy, const sl_task_req_t *req, const sl_node_t *node) {
    return node->name[0] != 'a';
}

static bool none_at_all(const sl_cycle_t *cy, const sl_task_req_t *req, const sl_node_t *node) {
    return false;
}

/* Odd node ids only: splits every class of identical nodes in two. */
static bool odd_id(const sl_cycle_t *cy, const sl_task_req_t *req, const sl_node_t *node) {
    return node->id % 2 == 1;
}

static const sl_place_policy_t no_a = {"no-a", "bestfit off nodes named a*", bestfit_score, not_a};
static const sl_place_policy_t nothing = {"nothing", "refuses every node", bestfit_score, none_at_all};
static const sl_place_policy_t odd = {"odd", "odd node ids only", bestfit_score, odd_id};

typedef struct fx {
    sl_cluster_t *cl;
    sl_workload_t *w;
    sl_rng_t rng;
    sl_cycle_t cy;
} fx_t;

static void fx_init(fx_t *f) {
    sl_cluster_create(&f->cl);
    sl_workload_create(&f->w);
    sl_rng_seed(&f->rng, 1);
    f->cy = (sl_cycle_t){.cluster = f->cl, .workload = f->w, .rng = &f->rng};
    /* a-* and b-* are identical: one free-capacity class until tasks land. */
    tu_add_nodes(f->cl, "a", 4, "96", "384Gi", 8, "H100", "80Gi", "");
    tu_add_nodes(f->cl, "b", 4, "96", "384Gi", 8, "H100", "80Gi", "");
}

static void fx_fini(fx_t *f) {
    sl_workload_destroy(f->w);
    sl_cluster_destroy(f->cl);
}

static void test_place_filter_excludes_nodes_of_one_class(void **state) {
    (void)state;
    fx_t f;
    fx_init(&f);
    assert_int_equal(sl_cluster_class_count(f.cl), 1);
    sl_place_t pl;
    sl_task_req_t r = tu_req("4", "16Gi", 1, "");
    /* Single tasks until the b nodes are full: never on an a node. */
    int placed = 0;
    while (sl_place_task(&no_a, &f.cy, &r, &pl) == SL_FIT) {
        assert_int_equal(sl_cluster_node(f.cl, pl.node)->name[0], 'b');
        assert_int_equal(sl_cluster_alloc(f.cl, &r, &pl), 0);
        placed++;
    }
    assert_int_equal(placed, 32); /* 4 b nodes x 8 GPUs, the a nodes still empty */
    assert_int_equal(sl_place_task(&no_a, &f.cy, &r, &pl), SL_NOFIT);
    assert_int_equal(sl_place_task(sl_place_policy_find("bestfit"), &f.cy, &r, &pl), SL_FIT);
    assert_int_equal(sl_cluster_check(f.cl), 0);
    fx_fini(&f);
}

static void test_place_filter_gang_counts_passing_nodes(void **state) {
    (void)state;
    fx_t f;
    fx_init(&f);
    sl_place_t pls[8];
    char reason[SL_REASON_MAX];
    sl_task_req_t r = tu_req("8", "32Gi", 8, "");
    /* Four whole nodes pass the filter: a gang of 4 lands on all b nodes. */
    assert_int_equal(sl_place_gang(&no_a, &f.cy, f.cl, &r, 4, pls, reason, sizeof reason), SL_FIT);
    for (int i = 0; i < 4; i++) assert_int_equal(sl_cluster_node(f.cl, pls[i].node)->name[0], 'b');
    for (int i = 3; i >= 0; i--) assert_int_equal(sl_cluster_release(f.cl, &r, &pls[i]), 0);
    /* Five never fit under the filter, though the cluster has eight nodes;
     * nothing stays allocated. */
    sl_res_t before, after;
    sl_cluster_capacity(f.cl, NULL, &before);
    assert_int_equal(sl_place_gang(&no_a, &f.cy, f.cl, &r, 5, pls, reason, sizeof reason),
                     SL_NOFIT_EVER);
    sl_cluster_capacity(f.cl, NULL, &after);
    assert_memory_equal(&before, &after, sizeof before);
    assert_int_equal(sl_place_gang(sl_place_policy_find("bestfit"), &f.cy, f.cl, &r, 5, pls, reason,
                                   sizeof reason),
                     SL_FIT);
    for (int i = 4; i >= 0; i--) assert_int_equal(sl_cluster_release(f.cl, &r, &pls[i]), 0);
    /* A filter that refuses everything says so. */
    r = tu_req("1", "1Gi", 0, "");
    assert_int_equal(sl_place_gang(&nothing, &f.cy, f.cl, &r, 1, pls, reason, sizeof reason),
                     SL_NOFIT_EVER);
    assert_string_equal(reason, "no node passes placement nothing's filter");
    assert_int_equal(sl_place_task(&nothing, &f.cy, &r, &pls[0]), SL_NOFIT_EVER);
    assert_int_equal(sl_cluster_check(f.cl), 0);
    fx_fini(&f);
}

/* Random requests and fills against a naive scan of every node. */
static void test_place_filter_matches_naive_scan(void **state) {
    (void)state;
    for (uint64_t seed = 1; seed <= 20; seed++) {
        fx_t f;
        fx_init(&f);
        tu_add_nodes(f.cl, "t", 5, "32", "128Gi", 4, "T4", "16Gi", "");
        tu_add_nodes(f.cl, "v", 3, "48", "192Gi", 4, "V100", "32Gi", ""); /* tu_random_req's models */
        tu_add_nodes(f.cl, "cpu", 3, "64", "256Gi", 0, NULL, "", "cpu");
        sl_rng_t rng;
        sl_rng_seed(&rng, seed);
        for (int step = 0; step < 300; step++) {
            sl_task_req_t r = tu_random_req(&rng, f.cl, true);
            bool naive = false;
            for (uint32_t id = 0; id < sl_cluster_node_count(f.cl); id++) {
                const sl_node_t *n = sl_cluster_node(f.cl, id);
                if (odd_id(&f.cy, &r, n) && sl_node_fits(n, &r)) naive = true;
            }
            sl_place_t pl;
            int st = sl_place_task(&odd, &f.cy, &r, &pl);
            assert_int_equal(st == SL_FIT, naive);
            if (st != SL_FIT) continue;
            assert_int_equal(pl.node % 2, 1);
            assert_true(sl_node_fits(sl_cluster_node(f.cl, pl.node), &r));
            assert_int_equal(sl_cluster_alloc(f.cl, &r, &pl), 0);
        }
        assert_int_equal(sl_cluster_check(f.cl), 0);
        /* Even nodes stay untouched. */
        for (uint32_t id = 0; id < sl_cluster_node_count(f.cl); id += 2) {
            const sl_node_t *n = sl_cluster_node(f.cl, id);
            assert_true(n->cpu_free == n->cpu_total && n->mem_free == n->mem_total);
        }
        fx_fini(&f);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_place_filter_excludes_nodes_of_one_class, tu_teardown),
        cmocka_unit_test_teardown(test_place_filter_gang_counts_passing_nodes, tu_teardown),
        cmocka_unit_test_teardown(test_place_filter_matches_naive_scan, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
