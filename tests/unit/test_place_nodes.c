/*
 * test_place_nodes.c - gangs that name their nodes (sl_task_req_t
 * nodes_min/nodes_max, tasks_per_node, exclusive, include, exclude):
 *
 *  - against a brute force on random small clusters, partly filled and
 *    with nodes draining, for every placement policy: sl_place_gang fits
 *    exactly when some set of nodes admits an assignment (N distinct nodes
 *    in range, k tasks on each, every included node and no excluded one,
 *    only idle nodes for an exclusive gang), uses the fewest nodes such a
 *    set can have, and the result satisfies every constraint; on failure
 *    the cluster is unchanged and a reason is given;
 *  - an exclusive gang's nodes take nothing else while it runs, and do
 *    again once it is released;
 *  - zero fields place exactly as before (a packed gang);
 *  - sl_task_req_check refuses bad node fields.
 */
#include <stdio.h>
#include <string.h>

#include "testutil.h"

#define GI (INT64_C(1) << 30)
#define MAXN 6

typedef struct snap {
    int64_t cpu[MAXN], mem[MAXN];
    int32_t gpu[MAXN][SL_MAX_GPUS_PER_NODE];
    uint32_t kinds[MAXN];
} snap_t;

static void take_snap(const sl_cluster_t *cl, int nn, snap_t *s) {
    memset(s, 0, sizeof *s);
    for (int i = 0; i < nn; i++) {
        const sl_node_t *n = sl_cluster_node(cl, (uint32_t)i);
        s->cpu[i] = n->cpu_free;
        s->mem[i] = n->mem_free;
        s->kinds[i] = n->kinds;
        for (int g = 0; g < n->ngpus; g++) s->gpu[i][g] = n->gpu_free[g];
    }
}

static bool idle(const sl_node_t *n) {
    if (n->cpu_free != n->cpu_total || n->mem_free != n->mem_total || n->kinds) return false;
    for (int g = 0; g < n->ngpus; g++)
        if (n->gpu_free[g] != SL_GPU_MILLI || n->gpu_mem_free[g] != n->gpu_mem_total) return false;
    return true;
}

static int64_t rnd(sl_rng_t *r, int64_t lo, int64_t hi) {
    return lo + (int64_t)sl_rng_below(r, (uint64_t)(hi - lo + 1));
}

/* The fewest nodes of any admissible set (0: none). */
static int brute_min_nodes(const sl_cluster_t *cl, int nn, const sl_task_req_t *r, int32_t n,
                           uint32_t incl, uint32_t excl) {
    int32_t k = r->tasks_per_node, best = 0;
    int32_t cap[MAXN];
    bool ok[MAXN];
    for (int i = 0; i < nn; i++) {
        const sl_node_t *node = sl_cluster_node(cl, (uint32_t)i);
        cap[i] = sl_node_fit_count(node, r, k > 0 ? k : n);
        ok[i] = node->state == SL_NODE_UP && !(excl >> i & 1) && (!r->exclusive || idle(node)) &&
                cap[i] >= (k > 0 ? k : 1);
    }
    for (uint32_t S = 1; S < (1u << nn); S++) {
        if ((S & incl) != incl) continue;
        int sz = __builtin_popcount(S);
        int64_t sum = 0;
        bool good = true;
        for (int i = 0; i < nn && good; i++) {
            if (!(S >> i & 1)) continue;
            good = ok[i];
            sum += cap[i];
        }
        if (!good) continue;
        if (k > 0) {
            if (sz * k != n) continue;
            if (r->nodes_min > 0 &&
                (sz < r->nodes_min || sz > (r->nodes_max ? r->nodes_max : r->nodes_min)))
                continue;
        } else {
            int lo = r->nodes_min > 0 ? r->nodes_min : 1;
            int hi = r->nodes_max > 0 ? r->nodes_max : r->nodes_min > 0 ? r->nodes_min : n;
            if (sz < lo || sz > hi || sz > n || sum < n) continue;
        }
        if (best == 0 || sz < best) best = sz;
    }
    return best;
}

static void names_of(uint32_t set, int nn, char *buf, size_t len) {
    buf[0] = '\0';
    for (int i = 0; i < nn; i++) {
        if (!(set >> i & 1)) continue;
        size_t o = strlen(buf);
        snprintf(buf + o, len - o, "%sn-%d", o ? "," : "", i);
    }
}

static void test_gang_nodes_matches_brute_force(void **state) {
    (void)state;
    const sl_place_policy_t *const *pols = sl_place_policy_list();
    int fits = 0, total = 0, excl_fits = 0, k_fits = 0;
    for (int seed = 1; seed <= 400; seed++) {
        sl_rng_t rng;
        sl_rng_seed(&rng, (uint64_t)seed);
        sl_cluster_t *cl = tu_cluster();
        sl_workload_t *w;
        sl_workload_create(&w);
        int nn = (int)rnd(&rng, 2, MAXN);
        for (int i = 0; i < nn; i++) {
            char nm[16];
            snprintf(nm, sizeof nm, "n-%d", i);
            int g = (int)rnd(&rng, 0, 4) * 2;
            tu_node_add(cl, tu_node_spec(nm, rnd(&rng, 4, 16) * 1000, rnd(&rng, 8, 64) * GI, g,
                                         g ? "A" : NULL, g ? 16 * GI : 0, NULL));
        }
        /* Partly fill: random tasks where they fit. */
        sl_rng_t prng = rng;
        sl_cycle_t cy0 = {.cluster = cl, .workload = w, .rng = &prng};
        int nfill = (int)rnd(&rng, 0, 2 * nn);
        for (int f = 0; f < nfill; f++) {
            sl_task_req_t t = tu_req("1", "2Gi", (int)rnd(&rng, 0, 2), "");
            t.cpu_milli = rnd(&rng, 1, 4) * 1000;
            sl_place_t pl;
            if (sl_place_task(sl_place_policy_find("random"), &cy0, &t, &pl) == SL_FIT)
                assert_int_equal(sl_cluster_alloc(cl, &t, &pl), 0);
        }
        if (rnd(&rng, 0, 3) == 0) sl_cluster_set_state(cl, (uint32_t)rnd(&rng, 0, nn - 1), SL_NODE_DRAINING);

        sl_task_req_t r = tu_req("1", "1Gi", 0, "");
        r.cpu_milli = rnd(&rng, 1, 4) * 1000;
        r.mem_bytes = rnd(&rng, 1, 8) * GI;
        int gk = (int)rnd(&rng, 0, 3);
        if (gk == 3) r.gpu_milli = 500;
        else r.gpus = gk;
        int32_t n = (int32_t)rnd(&rng, 1, 10);
        r.nodes_min = (int16_t)rnd(&rng, 0, 4);
        r.nodes_max = r.nodes_min && rnd(&rng, 0, 1) ? (int16_t)(r.nodes_min + rnd(&rng, 0, 2)) : 0;
        if (rnd(&rng, 0, 2) == 0) {
            r.tasks_per_node = (int16_t)rnd(&rng, 1, 3);
            int N = r.nodes_min ? r.nodes_min : (int)rnd(&rng, 1, 3);
            n = N * r.tasks_per_node;
        }
        r.exclusive = rnd(&rng, 0, 3) == 0;
        uint32_t incl = 0, excl = 0;
        if (rnd(&rng, 0, 2) == 0) incl |= 1u << rnd(&rng, 0, nn - 1);
        if (rnd(&rng, 0, 2) == 0) excl |= 1u << rnd(&rng, 0, nn - 1);
        char ib[128], xb[128];
        names_of(incl, nn, ib, sizeof ib);
        names_of(excl, nn, xb, sizeof xb);
        r.include = incl ? ib : NULL;
        r.exclude = excl ? xb : NULL;
        char err[128];
        assert_int_equal(sl_task_req_check(&r, err, sizeof err), 0);

        int want = brute_min_nodes(cl, nn, &r, n, incl, excl);
        for (size_t p = 0; pols[p]; p++) {
            sl_rng_t crng;
            sl_rng_seed(&crng, (uint64_t)seed * 31 + p);
            sl_cycle_t cy = {.cluster = cl, .workload = w, .rng = &crng};
            snap_t before, after;
            take_snap(cl, nn, &before);
            sl_place_t pls[64];
            char reason[SL_REASON_MAX];
            int rc = sl_place_gang(pols[p], &cy, cl, &r, n, pls, reason, sizeof reason);
            total++;
            if (want == 0) {
                if (rc == SL_FIT)
                    fail_msg("seed %d policy %s: fits but brute force finds no set", seed, pols[p]->name);
                assert_true(rc == SL_NOFIT || rc == SL_NOFIT_EVER);
                assert_true(reason[0] != '\0');
                take_snap(cl, nn, &after);
                assert_memory_equal(&before, &after, sizeof before);
                continue;
            }
            if (rc != SL_FIT)
                fail_msg("seed %d policy %s: brute force fits on %d nodes, got %d (%s)", seed,
                         pols[p]->name, want, rc, reason);
            fits++;
            excl_fits += r.exclusive;
            k_fits += r.tasks_per_node > 0;
            assert_int_equal(sl_cluster_check(cl), 0);
            int per[MAXN] = {0};
            uint32_t used = 0;
            for (int32_t i = 0; i < n; i++) {
                assert_true(pls[i].node < (uint32_t)nn);
                per[pls[i].node]++;
                used |= 1u << pls[i].node;
            }
            assert_int_equal(__builtin_popcount(used), want);
            assert_int_equal(used & incl, incl);
            assert_int_equal(used & excl, 0);
            for (int i = 0; i < nn; i++) {
                if (!(used >> i & 1)) continue;
                if (r.tasks_per_node) assert_int_equal(per[i], r.tasks_per_node);
                if (r.exclusive) {
                    /* idle before; now nothing else fits there */
                    assert_int_equal(before.kinds[i], 0);
                    assert_int_equal(before.cpu[i], sl_cluster_node(cl, (uint32_t)i)->cpu_total);
                    sl_task_req_t tiny = tu_req("0", "0", 0, "");
                    assert_int_equal(sl_node_fit_count(sl_cluster_node(cl, (uint32_t)i), &tiny, 1), 0);
                }
            }
            for (int32_t i = n - 1; i >= 0; i--) assert_int_equal(sl_cluster_release(cl, &r, &pls[i]), 0);
            take_snap(cl, nn, &after);
            assert_memory_equal(&before, &after, sizeof before);
            assert_int_equal(sl_cluster_check(cl), 0);
        }
        sl_workload_destroy(w);
        sl_cluster_destroy(cl);
    }
    /* The random cases reach every kind of answer. */
    assert_true(fits > total / 10);
    assert_true(fits < total);
    assert_true(excl_fits > 0);
    assert_true(k_fits > 0);
}

static void test_gang_nodes_spread_and_exclusive(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    sl_workload_t *w;
    sl_workload_create(&w);
    tu_add_nodes(cl, "g", 4, "64", "512Gi", 8, "H100", "80Gi", NULL);
    sl_rng_t rng;
    sl_rng_seed(&rng, 7);
    sl_cycle_t cy = {.cluster = cl, .workload = w, .rng = &rng};
    const sl_place_policy_t *pol = sl_place_policy_find(sl_place_policy_default());
    sl_place_t pls[16];
    char reason[SL_REASON_MAX];

    /* Packed as before: 2 tasks of 4 GPUs go on one node. */
    sl_task_req_t r = tu_req("8", "32Gi", 4, "");
    assert_int_equal(sl_place_gang(pol, &cy, cl, &r, 2, pls, reason, sizeof reason), SL_FIT);
    assert_int_equal(pls[0].node, pls[1].node);
    for (int i = 1; i >= 0; i--) sl_cluster_release(cl, &r, &pls[i]);

    /* -N 2: two distinct nodes. */
    r.nodes_min = 2;
    assert_int_equal(sl_place_gang(pol, &cy, cl, &r, 2, pls, reason, sizeof reason), SL_FIT);
    assert_int_not_equal(pls[0].node, pls[1].node);
    for (int i = 1; i >= 0; i--) sl_cluster_release(cl, &r, &pls[i]);

    /* -N 4 --ntasks-per-node=2 --exclusive with one GPU each: every node
     * whole; then a one-GPU task finds no room anywhere. */
    sl_task_req_t e = tu_req("1", "1Gi", 1, "");
    e.nodes_min = 4;
    e.tasks_per_node = 2;
    e.exclusive = 1;
    assert_int_equal(sl_place_gang(pol, &cy, cl, &e, 8, pls, reason, sizeof reason), SL_FIT);
    sl_task_req_t one = tu_req("1", "1Gi", 1, "");
    sl_place_t pl;
    assert_int_equal(sl_place_task(pol, &cy, &one, &pl), SL_NOFIT);
    assert_int_equal(sl_place_gang(pol, &cy, cl, &one, 1, &pl, reason, sizeof reason), SL_NOFIT);
    /* A second exclusive gang waits for idle nodes. */
    sl_task_req_t e2 = e;
    e2.nodes_min = 1;
    assert_int_equal(sl_place_gang(pol, &cy, cl, &e2, 2, pls + 8, reason, sizeof reason), SL_NOFIT);
    assert_non_null(strstr(reason, "idle"));
    assert_int_equal(sl_cluster_check(cl), 0);
    for (int i = 7; i >= 0; i--) assert_int_equal(sl_cluster_release(cl, &e, &pls[i]), 0);
    assert_int_equal(sl_place_task(pol, &cy, &one, &pl), SL_FIT);

    /* Node lists: include g-2, exclude g-0 and g-1. */
    sl_task_req_t l = tu_req("1", "1Gi", 1, "");
    l.include = "g-2";
    l.exclude = "g-0,g-1";
    l.nodes_min = 2;
    assert_int_equal(sl_place_gang(pol, &cy, cl, &l, 2, pls, reason, sizeof reason), SL_FIT);
    uint32_t a = pls[0].node, b = pls[1].node;
    assert_true((a == 2 && b == 3) || (a == 3 && b == 2));
    for (int i = 1; i >= 0; i--) sl_cluster_release(cl, &l, &pls[i]);
    l.nodes_min = 3; /* only two nodes are left */
    assert_int_equal(sl_place_gang(pol, &cy, cl, &l, 3, pls, reason, sizeof reason), SL_NOFIT_EVER);
    l.nodes_min = 0;
    l.include = "nosuch";
    assert_int_equal(sl_place_gang(pol, &cy, cl, &l, 1, pls, reason, sizeof reason), SL_NOFIT);
    assert_non_null(strstr(reason, "nosuch"));
    /* 3 tasks do not divide into 2 per node. */
    sl_task_req_t d = tu_req("1", "1Gi", 0, "");
    d.tasks_per_node = 2;
    assert_int_equal(sl_place_gang(pol, &cy, cl, &d, 3, pls, reason, sizeof reason), SL_NOFIT_EVER);
    assert_non_null(strstr(reason, "per node"));
    sl_workload_destroy(w);
    sl_cluster_destroy(cl);
}

static void test_gang_nodes_req_check(void **state) {
    (void)state;
    char err[128];
    sl_task_req_t r = tu_req("1", "1Gi", 0, "");
    r.nodes_min = -1;
    assert_int_equal(sl_task_req_check(&r, err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, "nodes_min"));
    r.nodes_min = 3;
    r.nodes_max = 2;
    assert_int_equal(sl_task_req_check(&r, err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, "nodes_max"));
    r.nodes_max = 0;
    r.tasks_per_node = -2;
    assert_int_equal(sl_task_req_check(&r, err, sizeof err), SL_EINVAL);
    r.tasks_per_node = 0;
    r.exclusive = 2;
    assert_int_equal(sl_task_req_check(&r, err, sizeof err), SL_EINVAL);
    r.exclusive = 1;
    assert_int_equal(sl_task_req_check(&r, err, sizeof err), 0);
}

/* Through the scheduler: -N 2 lands on two nodes, an exclusive job holds
 * its node against the next job until it finishes, and bad combinations
 * are refused at submission naming the field. */
static void test_sched_gang_nodes(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    tu_add_nodes(cl, "g", 2, "32", "256Gi", 8, "H100", "80Gi", NULL);
    sl_sched_t *s = tu_sched_create(cl, "fifo", "none");
    int t = tu_tenant_add(s, "a", 1, TU_NO_QUOTA);
    sl_task_req_t r = tu_req("4", "16Gi", 2, "");
    r.nodes_min = 2;
    tu_submit(s, tu_spec(1, t, 2, r));
    sl_task_req_t e = tu_req("1", "1Gi", 1, "");
    e.exclusive = 1;
    tu_submit(s, tu_spec(2, t, 1, e));
    tu_submit(s, tu_spec(3, t, 1, tu_req("1", "1Gi", 1, "")));
    tu_ids_t o = {0};
    /* 1 takes one GPU pair on each node: no node is idle for 2, and 3
     * (fifo, no backfill) waits behind it. */
    assert_int_equal(sl_sched_cycle(s, 10, tu_ids_on_start, &o, NULL), 1);
    const sl_job_t *j1 = sl_sched_job(s, 1);
    assert_int_not_equal(sl_job_place(j1, 0)->node, sl_job_place(j1, 1)->node);
    assert_non_null(strstr(sl_job_reason(sl_sched_job(s, 2)), "idle"));
    assert_int_equal(sl_sched_finish(s, 1, 20), 0);
    assert_int_equal(sl_sched_cycle(s, 30, tu_ids_on_start, &o, NULL), 2);
    const sl_job_t *j2 = sl_sched_job(s, 2), *j3 = sl_sched_job(s, 3);
    assert_int_not_equal(sl_job_place(j2, 0)->node, sl_job_place(j3, 0)->node);
    assert_int_equal(sl_sched_check(s), 0);

    char err[256];
    sl_task_req_t k = tu_req("1", "1Gi", 0, "");
    k.tasks_per_node = 2;
    sl_job_spec_t sp = tu_spec(4, t, 3, k);
    assert_int_equal(sl_sched_submit(s, &sp, err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, "tasks_per_node"));
    k.tasks_per_node = 0;
    k.nodes_min = 4;
    sp = tu_spec(5, t, 3, k);
    assert_int_equal(sl_sched_submit(s, &sp, err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, "nodes"));
    k.nodes_min = 2;
    sp = tu_spec(6, t, 4, k);
    sp.min_tasks = 2;
    assert_int_equal(sl_sched_submit(s, &sp, err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, "elastic"));
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

/* EASY backfill for a whole-node gang: its reservation is the time both
 * nodes are idle (the later end); a job that ends before may pass, a
 * longer one may not, on either node. */
static void test_sched_easy_reserves_whole_nodes(void **state) {
    (void)state;
    const int64_t S = 1000000;
    sl_cluster_t *cl = tu_cluster();
    tu_add_nodes(cl, "g", 2, "32", "256Gi", 8, "H100", "80Gi", NULL);
    sl_sched_t *s = tu_sched_create(cl, "fifo", "easy");
    int t = tu_tenant_add(s, "a", 1, TU_NO_QUOTA);
    sl_job_spec_t a = tu_spec(1, t, 1, tu_req("1", "1Gi", 1, ""));
    a.time_limit_us = 100 * S;
    a.task.include = "g-0";
    sl_job_spec_t b = a;
    b.id = 2;
    b.time_limit_us = 200 * S;
    b.task.include = "g-1";
    sl_task_req_t xr = tu_req("1", "1Gi", 0, "");
    xr.nodes_min = 2;
    xr.exclusive = 1;
    sl_job_spec_t x = tu_spec(3, t, 2, xr);
    x.time_limit_us = 50 * S;
    tu_submit(s, a);
    tu_submit(s, b);
    tu_ids_t o = {0};
    assert_int_equal(sl_sched_cycle(s, 0, tu_ids_on_start, &o, NULL), 2);
    assert_int_not_equal(sl_job_place(sl_sched_job(s, 1), 0)->node,
                         sl_job_place(sl_sched_job(s, 2), 0)->node);
    tu_submit(s, x);
    sl_job_spec_t shortj = tu_spec(4, t, 1, tu_req("1", "1Gi", 1, ""));
    shortj.time_limit_us = 150 * S; /* ends at 151 < 200 */
    sl_job_spec_t longj = tu_spec(5, t, 1, tu_req("1", "1Gi", 1, ""));
    longj.time_limit_us = 1000 * S;
    tu_submit(s, longj);
    tu_submit(s, shortj);
    o.n = 0;
    assert_int_equal(sl_sched_cycle(s, 1 * S, tu_ids_on_start, &o, NULL), 1);
    assert_int_equal(o.v[0], 4);
    assert_int_equal(sl_job_state(sl_sched_job(s, 5)), SL_JOB_PENDING);
    assert_int_equal(sl_job_state(sl_sched_job(s, 3)), SL_JOB_PENDING);
    assert_int_equal(sl_sched_finish(s, 1, 100 * S), 0);
    assert_int_equal(sl_sched_finish(s, 4, 151 * S), 0);
    assert_int_equal(sl_sched_finish(s, 2, 200 * S), 0);
    o.n = 0;
    assert_int_equal(sl_sched_cycle(s, 200 * S, tu_ids_on_start, &o, NULL), 1);
    assert_int_equal(o.v[0], 3); /* the whole-node gang first, then 5 waits for it */
    assert_int_equal(sl_sched_check(s), 0);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_gang_nodes_matches_brute_force, tu_teardown),
        cmocka_unit_test_teardown(test_gang_nodes_spread_and_exclusive, tu_teardown),
        cmocka_unit_test_teardown(test_gang_nodes_req_check, tu_teardown),
        cmocka_unit_test_teardown(test_sched_gang_nodes, tu_teardown),
        cmocka_unit_test_teardown(test_sched_easy_reserves_whole_nodes, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
