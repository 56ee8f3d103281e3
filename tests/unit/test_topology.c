/*
 * test_topology.c - topology-aware gangs (sluice/topology.h, topology.c):
 * a gang that needs several nodes spans the fewest racks that can hold it,
 * then the fewest blocks; a required level waits (with a reason naming it)
 * rather than spread, and says when no group could ever hold the gang; a
 * preferred level stays in one block when one holds the gang (Kueue's
 * meaning) and spreads when it must; the block count is exact (a case that
 * every heuristic candidate misses, and a differential test against brute
 * force); ranks are laid out group by group.
 * Nodes are added with racks interleaved, so that a placement blind to
 * topology (node ids in order) would spread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

typedef struct fx {
    sl_cluster_t *cl;
    sl_workload_t *w;
    sl_rng_t rng;
    sl_cycle_t cy;
    const sl_place_policy_t *pol;
} fx_t;

/* One 8-GPU node at path (NULL: no topology). */
static uint32_t add(fx_t *f, const char *name, const char *path) {
    char labels[128];
    sl_node_spec_t sp = tu_node_spec(name, 96000, 384LL << 30, 8, "H100", 80LL << 30, "");
    if (path) {
        snprintf(labels, sizeof labels, "gpu=h100,topology=%s,zone=a", path);
        sp.labels = labels;
    }
    return tu_node_add(f->cl, sp);
}

/* Block b1: rack r1 (2 nodes), r2 (4 nodes); block b2: rack r3 (3 nodes),
 * r4 (3 nodes); nodes added in turn across the racks. */
static void fx_init(fx_t *f, const char *policy) {
    sl_cluster_create(&f->cl);
    sl_workload_create(&f->w);
    sl_rng_seed(&f->rng, 7);
    f->cy = (sl_cycle_t){.cluster = f->cl, .workload = f->w, .rng = &f->rng};
    f->pol = sl_place_policy_find(policy);
    assert_non_null(f->pol);
    const char *racks[] = {"b1/r1", "b1/r2", "b2/r3", "b2/r4"};
    int sizes[] = {2, 4, 3, 3};
    char name[32];
    for (int k = 0; k < 4; k++)
        for (int r = 0; r < 4; r++)
            if (k < sizes[r]) {
                snprintf(name, sizeof name, "n-%c%d", 'a' + r, k);
                add(f, name, racks[r]);
            }
}

static void fx_fini(fx_t *f) {
    sl_workload_destroy(f->w);
    sl_cluster_destroy(f->cl);
}

static sl_task_req_t whole8(void) {
    return tu_req("8", "32Gi", 8, "");
}

static const char *rack_of(const fx_t *f, uint32_t node) {
    const char *p;
    size_t len;
    assert_true(sl_topo_path(sl_cluster_node(f->cl, node)->labels, &p, &len));
    return p; /* "bX/rY,..." : the first 5 bytes name the rack */
}

static void release_all(fx_t *f, const sl_task_req_t *r, sl_place_t *pls, int n) {
    for (int i = n - 1; i >= 0; i--) assert_int_equal(sl_cluster_release(f->cl, r, &pls[i]), 0);
}

static void test_topology_path_and_levels(void **state) {
    const char *p;
    size_t len;
    assert_true(sl_topo_path("a=b,topology=b1/r2,c=d", &p, &len));
    assert_int_equal(len, 5);
    assert_memory_equal(p, "b1/r2", 5);
    assert_int_equal(sl_topo_block_len(p, len), 2);
    assert_int_equal(sl_topo_block_len("r9", 2), 0);
    assert_false(sl_topo_path("topologyx=1,topology=", &p, &len));
    assert_false(sl_topo_path(NULL, &p, &len));
    assert_true(sl_topo_path_ok("b1/r2"));
    assert_true(sl_topo_path_ok("zone-a.1/b_1/r2"));
    const char *bad[] = {"", "/r2", "b1/", "b1//r2", "b1/r2,x=y", "b1=r2", "b 1", NULL};
    for (int i = 0; bad[i]; i++) assert_false(sl_topo_path_ok(bad[i]));
    int lv = -1;
    assert_int_equal(sl_topo_level_parse("rack", &lv), 0);
    assert_int_equal(lv, SL_TOPO_RACK);
    assert_int_equal(sl_topo_level_parse("node", &lv), 0);
    assert_int_equal(lv, SL_TOPO_HOST);
    assert_int_equal(sl_topo_level_parse("switch", &lv), SL_EINVAL);
    assert_string_equal(sl_topo_level_name(SL_TOPO_BLOCK), "block");
    sl_task_req_t r = whole8();
    r.topo_required = 9;
    char err[96];
    assert_int_equal(sl_task_req_check(&r, err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, "topo_required"));
}

/* 3 nodes: r3 and r4 hold it alone (tightest: 3 of 3), r2 too (4); it goes
 * to one rack. 5 nodes: no rack holds it, block b1 (2 + 4) and b2 (3 + 3)
 * both in 2 racks: one block, 2 racks. */
static void test_topology_gang_spans_fewest_groups(void **state) {
    const char *policies[] = {"firstfit", "bestfit", "fgd", "fgdbal", "random"};
    for (size_t k = 0; k < sizeof policies / sizeof *policies; k++) {
        fx_t f;
        fx_init(&f, policies[k]);
        assert_int_equal(sl_cluster_topo_count(f.cl), 12);
        sl_task_req_t r = whole8();
        sl_place_t pls[16];
        char why[SL_REASON_MAX];
        assert_int_equal(sl_place_gang(f.pol, &f.cy, f.cl, &r, 3, pls, why, sizeof why), SL_FIT);
        assert_int_equal(sl_topo_groups_spanned(f.cl, pls, 3, SL_TOPO_RACK), 1);
        assert_int_equal(sl_topo_groups_spanned(f.cl, pls, 3, SL_TOPO_HOST), 3);
        assert_memory_not_equal(rack_of(&f, pls[0].node), "b1/r2", 5); /* tightest rack */
        release_all(&f, &r, pls, 3);
        assert_int_equal(sl_place_gang(f.pol, &f.cy, f.cl, &r, 5, pls, why, sizeof why), SL_FIT);
        assert_int_equal(sl_topo_groups_spanned(f.cl, pls, 5, SL_TOPO_RACK), 2);
        assert_int_equal(sl_topo_groups_spanned(f.cl, pls, 5, SL_TOPO_BLOCK), 1);
        assert_int_equal(sl_cluster_check(f.cl), 0);
        release_all(&f, &r, pls, 5);
        fx_fini(&f);
    }
}

/* Ranks: each rack's ranks are one contiguous run, and rank 0 is in the
 * first. A gang of 12 spans every rack. */
static void test_topology_rank_order_by_group(void **state) {
    fx_t f;
    fx_init(&f, "bestfit");
    sl_task_req_t r = tu_req("8", "32Gi", 4, ""); /* 2 per node */
    sl_place_t pls[32];
    assert_int_equal(sl_place_gang(f.pol, &f.cy, f.cl, &r, 24, pls, NULL, 0), SL_FIT);
    assert_int_equal(sl_topo_groups_spanned(f.cl, pls, 24, SL_TOPO_RACK), 4);
    for (int i = 1; i < 24; i++) {
        if (memcmp(rack_of(&f, pls[i].node), rack_of(&f, pls[i - 1].node), 5) == 0) continue;
        for (int j = 0; j < i - 1; j++) /* a rack, once left, never comes back */
            assert_memory_not_equal(rack_of(&f, pls[j].node), rack_of(&f, pls[i].node), 5);
    }
    for (int i = 1; i < 24; i++) /* and a node's ranks are neighbours too */
        if (pls[i].node != pls[i - 1].node)
            for (int j = 0; j < i - 1; j++) assert_int_not_equal(pls[j].node, pls[i].node);
    release_all(&f, &r, pls, 24);
    fx_fini(&f);
}

/* Required rack: 4 nodes fit only r2; once r2 has a busy node the gang
 * waits (SL_NOFIT, reason names the rack level and the roomiest rack)
 * rather than spread, and starts when r2 is free again. 5 nodes never fit
 * one rack: SL_NOFIT_EVER. Required block: 7 nodes never fit one block. */
static void test_topology_required_waits(void **state) {
    fx_t f;
    fx_init(&f, "bestfit");
    sl_task_req_t r = whole8();
    r.topo_required = SL_TOPO_RACK;
    sl_place_t pls[16], busy;
    char why[SL_REASON_MAX];
    sl_task_req_t one = tu_req("1", "1Gi", 1, "");
    const sl_node_t *r2 = sl_cluster_find_node(f.cl, "n-b0");
    assert_int_equal(sl_node_choose_gpus(r2, &one, &busy), SL_FIT);
    busy.node = r2->id;
    assert_int_equal(sl_cluster_alloc(f.cl, &one, &busy), 0);
    assert_int_equal(sl_place_gang(f.pol, &f.cy, f.cl, &r, 4, pls, why, sizeof why), SL_NOFIT);
    assert_non_null(strstr(why, "one rack"));
    assert_non_null(strstr(why, "required"));
    assert_non_null(strstr(why, "holds 3 now"));
    assert_int_equal(sl_cluster_check(f.cl), 0);
    r.topo_required = SL_TOPO_ANY; /* unconstrained, the same gang spreads */
    assert_int_equal(sl_place_gang(f.pol, &f.cy, f.cl, &r, 4, pls, why, sizeof why), SL_FIT);
    assert_int_equal(sl_topo_groups_spanned(f.cl, pls, 4, SL_TOPO_RACK), 2);
    release_all(&f, &r, pls, 4);
    r.topo_required = SL_TOPO_RACK;
    assert_int_equal(sl_cluster_release(f.cl, &one, &busy), 0);
    assert_int_equal(sl_place_gang(f.pol, &f.cy, f.cl, &r, 4, pls, why, sizeof why), SL_FIT);
    for (int i = 0; i < 4; i++) assert_memory_equal(rack_of(&f, pls[i].node), "b1/r2", 5);
    release_all(&f, &r, pls, 4);
    assert_int_equal(sl_place_gang(f.pol, &f.cy, f.cl, &r, 5, pls, why, sizeof why),
                     SL_NOFIT_EVER);
    assert_non_null(strstr(why, "even when empty"));
    r.topo_required = SL_TOPO_BLOCK;
    assert_int_equal(sl_place_gang(f.pol, &f.cy, f.cl, &r, 6, pls, why, sizeof why), SL_FIT);
    assert_int_equal(sl_topo_groups_spanned(f.cl, pls, 6, SL_TOPO_BLOCK), 1);
    release_all(&f, &r, pls, 6);
    assert_int_equal(sl_place_gang(f.pol, &f.cy, f.cl, &r, 7, pls, why, sizeof why),
                     SL_NOFIT_EVER);
    r.topo_required = SL_TOPO_HOST;
    assert_int_equal(sl_place_gang(f.pol, &f.cy, f.cl, &r, 2, pls, why, sizeof why),
                     SL_NOFIT_EVER);
    assert_non_null(strstr(why, "one host"));
    r = tu_req("8", "32Gi", 4, "");
    r.topo_required = SL_TOPO_HOST;
    assert_int_equal(sl_place_gang(f.pol, &f.cy, f.cl, &r, 2, pls, why, sizeof why), SL_FIT);
    assert_int_equal(pls[0].node, pls[1].node);
    release_all(&f, &r, pls, 2);
    assert_int_equal(sl_cluster_check(f.cl), 0);
    fx_fini(&f);
}

/* Preferred rack: a gang larger than any rack, and than any block, still
 * starts, over the fewest blocks (2) and racks (3 of 12 nodes' worth). */
static void test_topology_preferred_spreads_when_it_must(void **state) {
    fx_t f;
    fx_init(&f, "fgdbal");
    sl_task_req_t r = whole8();
    r.topo_preferred = SL_TOPO_RACK;
    sl_place_t pls[16];
    char why[SL_REASON_MAX];
    assert_int_equal(sl_place_gang(f.pol, &f.cy, f.cl, &r, 9, pls, why, sizeof why), SL_FIT);
    assert_int_equal(sl_topo_groups_spanned(f.cl, pls, 9, SL_TOPO_BLOCK), 2);
    assert_int_equal(sl_topo_groups_spanned(f.cl, pls, 9, SL_TOPO_RACK), 3);
    release_all(&f, &r, pls, 9);
    fx_fini(&f);
}

/* A cluster of 8-GPU nodes from rack sizes: sizes[b][r] nodes in rack r of
 * block b (0 ends a block's list), nodes added rack after rack. */
static void fx_racks(fx_t *f, const char *policy, int nb, const int sizes[][8]) {
    sl_cluster_create(&f->cl);
    sl_workload_create(&f->w);
    sl_rng_seed(&f->rng, 7);
    f->cy = (sl_cycle_t){.cluster = f->cl, .workload = f->w, .rng = &f->rng};
    f->pol = sl_place_policy_find(policy);
    assert_non_null(f->pol);
    char name[32], path[32];
    for (int b = 0; b < nb; b++)
        for (int r = 0; r < 8 && sizes[b][r]; r++)
            for (int k = 0; k < sizes[b][r]; k++) {
                snprintf(name, sizeof name, "b%d-r%d-%d", b, r, k);
                snprintf(path, sizeof path, "b%d/r%d", b, r);
                add(f, name, path);
            }
}

/* Preferred (Kueue's meaning): block A holds 6 nodes in 3 racks of 2; B's
 * one rack of 4 and C's one rack of 3 hold them in 2 racks over 2 blocks.
 * The default takes the fewest racks (2 racks, 2 blocks); preferred block
 * (and rack, which moves up to block when no rack holds the gang) stays in
 * block A (3 racks, 1 block). A gang no block holds (8) spreads as the
 * default does: 3 racks (4 + 2 + 2), 2 blocks. */
static void test_topology_preferred_stays_in_one_block(void **state) {
    const int sizes[][8] = {{2, 2, 2}, {4}, {3}};
    const int prefs[] = {SL_TOPO_ANY, SL_TOPO_BLOCK, SL_TOPO_RACK};
    for (size_t k = 0; k < sizeof prefs / sizeof *prefs; k++) {
        fx_t f;
        fx_racks(&f, "bestfit", 3, sizes);
        sl_task_req_t r = whole8();
        r.topo_preferred = (int16_t)prefs[k];
        sl_place_t pls[16];
        char why[SL_REASON_MAX];
        assert_int_equal(sl_place_gang(f.pol, &f.cy, f.cl, &r, 6, pls, why, sizeof why), SL_FIT);
        int32_t racks = sl_topo_groups_spanned(f.cl, pls, 6, SL_TOPO_RACK);
        int32_t blocks = sl_topo_groups_spanned(f.cl, pls, 6, SL_TOPO_BLOCK);
        if (prefs[k] == SL_TOPO_ANY) {
            assert_int_equal(racks, 2);
            assert_int_equal(blocks, 2);
        } else {
            assert_int_equal(racks, 3);
            assert_int_equal(blocks, 1);
            for (int i = 0; i < 6; i++)
                assert_memory_equal(rack_of(&f, pls[i].node), "b0/", 3);
        }
        release_all(&f, &r, pls, 6);
        assert_int_equal(sl_place_gang(f.pol, &f.cy, f.cl, &r, 8, pls, why, sizeof why), SL_FIT);
        assert_int_equal(sl_topo_groups_spanned(f.cl, pls, 8, SL_TOPO_RACK), 3);
        assert_int_equal(sl_topo_groups_spanned(f.cl, pls, 8, SL_TOPO_BLOCK), 2); /* 4 + 2 + 2 */
        release_all(&f, &r, pls, 8);
        assert_int_equal(sl_cluster_check(f.cl), 0);
        fx_fini(&f);
    }
}

/* Where every heuristic candidate misses the fewest blocks: A has racks of
 * 6, 1, 1, 1, 1, 1 nodes, B and C one rack of 5 each, D racks of 4 and 4.
 * A gang of 14 needs 3 racks; the 3 largest (6, 5, 5) cross 3 blocks, the
 * blocks largest first (A, D) need 7 racks, no block holds it; 6 + 4 + 4
 * (A and D) is 3 racks in 2 blocks, which the exact search finds. */
static void test_topology_fewest_blocks_exact(void **state) {
    const int sizes[][8] = {{6, 1, 1, 1, 1, 1}, {5}, {5}, {4, 4}};
    fx_t f;
    fx_racks(&f, "firstfit", 4, sizes);
    sl_task_req_t r = whole8();
    sl_place_t pls[16];
    char why[SL_REASON_MAX];
    assert_int_equal(sl_place_gang(f.pol, &f.cy, f.cl, &r, 14, pls, why, sizeof why), SL_FIT);
    assert_int_equal(sl_topo_groups_spanned(f.cl, pls, 14, SL_TOPO_RACK), 3);
    assert_int_equal(sl_topo_groups_spanned(f.cl, pls, 14, SL_TOPO_BLOCK), 2);
    for (int i = 0; i < 14; i++) {
        const char *p = rack_of(&f, pls[i].node);
        assert_true(memcmp(p, "b0/r0", 5) == 0 || memcmp(p, "b3/", 3) == 0);
    }
    release_all(&f, &r, pls, 14);
    assert_int_equal(sl_cluster_check(f.cl), 0);
    fx_fini(&f);
}

/* A cluster without topology places as before (the ordinary search), and
 * a node without a path is a group of its own. */
static void test_topology_absent_is_each_node_alone(void **state) {
    fx_t f;
    sl_cluster_create(&f.cl);
    sl_workload_create(&f.w);
    sl_rng_seed(&f.rng, 7);
    f.cy = (sl_cycle_t){.cluster = f.cl, .workload = f.w, .rng = &f.rng};
    f.pol = sl_place_policy_find("bestfit");
    add(&f, "x0", NULL);
    add(&f, "x1", NULL);
    assert_int_equal(sl_cluster_topo_count(f.cl), 0);
    sl_task_req_t r = whole8();
    sl_place_t pls[4];
    char why[SL_REASON_MAX];
    assert_int_equal(sl_place_gang(f.pol, &f.cy, f.cl, &r, 2, pls, why, sizeof why), SL_FIT);
    assert_int_equal(sl_topo_groups_spanned(f.cl, pls, 2, SL_TOPO_RACK), 2);
    release_all(&f, &r, pls, 2);
    r.topo_required = SL_TOPO_RACK;
    assert_int_equal(sl_place_gang(f.pol, &f.cy, f.cl, &r, 2, pls, why, sizeof why),
                     SL_NOFIT_EVER);
    fx_fini(&f);
}


/* Differential: on 600 seeded random clusters (2-4 blocks of 1-3 racks of
 * 1-4 nodes, some GPUs taken), a gang of 3..12 tasks x 4 GPUs spans exactly
 * the fewest racks that can hold it (brute force over every set of racks),
 * and exactly the fewest blocks among the sets of that many racks (the
 * exact search of topology.c; before it, the heuristic was one block over
 * in 4 of 229 cases); nothing is over-allocated. */
static void test_topology_matches_brute_force(void **state) {
    int checked = 0, multi_block = 0;
    for (uint64_t seed = 1; seed <= 600; seed++) {
        fx_t f;
        sl_cluster_create(&f.cl);
        sl_workload_create(&f.w);
        sl_rng_seed(&f.rng, seed);
        f.cy = (sl_cycle_t){.cluster = f.cl, .workload = f.w, .rng = &f.rng};
        f.pol = sl_place_policy_find(seed % 2 ? "bestfit" : "fgdbal");
        int nracks = 0, rack_block[12];
        char name[32], path[32];
        int nb = 2 + (int)sl_rng_below(&f.rng, seed <= 300 ? 2 : 3);
        for (int b = 0; b < nb; b++) {
            int nr = 1 + (int)sl_rng_below(&f.rng, 3);
            for (int r = 0; r < nr; r++, nracks++) {
                rack_block[nracks] = b;
                int nn = 1 + (int)sl_rng_below(&f.rng, 4);
                for (int k = 0; k < nn; k++) {
                    snprintf(name, sizeof name, "n%d-%d", nracks, k);
                    snprintf(path, sizeof path, "b%d/r%d", b, nracks);
                    add(&f, name, path);
                }
            }
        }
        sl_task_req_t one = tu_req("1", "1Gi", 1, "");
        sl_place_t busy[64];
        int nbusy = 0;
        for (int k = 0; k < 24; k++) {
            uint32_t id = (uint32_t)sl_rng_below(&f.rng, sl_cluster_node_count(f.cl));
            const sl_node_t *nd = sl_cluster_node(f.cl, id);
            if (sl_node_choose_gpus(nd, &one, &busy[nbusy]) != SL_FIT) continue;
            busy[nbusy].node = id;
            assert_int_equal(sl_cluster_alloc(f.cl, &one, &busy[nbusy]), 0);
            nbusy++;
        }
        sl_task_req_t r = tu_req("4", "16Gi", 4, "");
        int32_t n = 3 + (int32_t)sl_rng_below(&f.rng, 10);
        int64_t cap[12] = {0}, total = 0;
        for (uint32_t id = 0; id < sl_cluster_node_count(f.cl); id++) {
            const sl_node_t *nd = sl_cluster_node(f.cl, id);
            int rk = atoi(strchr(nd->name, 'n') + 1);
            cap[rk] += sl_node_fit_count(nd, &r, n);
        }
        int best_r = 99, best_b = 99;
        for (int set = 1; set < (1 << nracks); set++) {
            int64_t sum = 0;
            int cnt = 0, blocks = 0, seen = 0;
            for (int k = 0; k < nracks; k++)
                if (set & (1 << k)) {
                    sum += cap[k];
                    cnt++;
                    if (!(seen & (1 << rack_block[k]))) blocks++, seen |= 1 << rack_block[k];
                }
            if (sum < n) continue;
            if (cnt < best_r || (cnt == best_r && blocks < best_b)) best_r = cnt, best_b = blocks;
        }
        for (int k = 0; k < nracks; k++) total += cap[k];
        sl_place_t pls[16];
        int rc = sl_place_gang(f.pol, &f.cy, f.cl, &r, n, pls, NULL, 0);
        if (total < n) {
            assert_int_not_equal(rc, SL_FIT);
        } else {
            assert_int_equal(rc, SL_FIT);
            assert_int_equal(sl_cluster_check(f.cl), 0);
            int32_t hosts = sl_topo_groups_spanned(f.cl, pls, n, SL_TOPO_HOST);
            if (hosts > 1) { /* one node is the ordinary search's, not topology's */
                int32_t racks = sl_topo_groups_spanned(f.cl, pls, n, SL_TOPO_RACK);
                int32_t blocks = sl_topo_groups_spanned(f.cl, pls, n, SL_TOPO_BLOCK);
                if (racks != best_r || blocks != best_b)
                    fail_msg("seed %llu: n %d spans %d racks %d blocks, best %d %d",
                             (unsigned long long)seed, (int)n, (int)racks, (int)blocks, best_r,
                             best_b);
                checked++;
                multi_block += best_b > 1;
            }
            release_all(&f, &r, pls, n);
        }
        release_all(&f, &one, busy, nbusy);
        fx_fini(&f);
    }
    printf("topology differential: %d multi-node gangs, %d of them over several blocks, "
           "every one in the fewest racks and blocks\n", checked, multi_block);
    assert_true(checked > 300);
    assert_true(multi_block > 50); /* the exact search must actually be exercised */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_topology_path_and_levels, tu_teardown),
        cmocka_unit_test_teardown(test_topology_gang_spans_fewest_groups, tu_teardown),
        cmocka_unit_test_teardown(test_topology_rank_order_by_group, tu_teardown),
        cmocka_unit_test_teardown(test_topology_required_waits, tu_teardown),
        cmocka_unit_test_teardown(test_topology_preferred_spreads_when_it_must, tu_teardown),
        cmocka_unit_test_teardown(test_topology_preferred_stays_in_one_block, tu_teardown),
        cmocka_unit_test_teardown(test_topology_fewest_blocks_exact, tu_teardown),
        cmocka_unit_test_teardown(test_topology_absent_is_each_node_alone, tu_teardown),
        cmocka_unit_test_teardown(test_topology_matches_brute_force, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
