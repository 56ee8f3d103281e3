/*
 * test_backfill_topo.c - EASY backfill for a job that requires a topology
 * level (policy/backfill_easy.c, easy_reserve_topo): it gets a reservation
 * on ONE group of that level (the earliest time that group's nodes hold the
 * whole gang), a short job passes it, a long one that would take the
 * group's reserved nodes does not, one that avoids them does; the same for
 * the host level; and a seeded randomised check against a naive timeline
 * (jobs run exactly their time limit) on clusters of blocks and racks with
 * a share of rack-, block- and host-required gangs: a job reserved for time
 * T starts no later than T, and a later reservation never moves it back.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define GI (INT64_C(1) << 30)

/* One node of `gpus` GPUs at path. */
static uint32_t add(sl_cluster_t *cl, const char *name, const char *path, int gpus) {
    char labels[96];
    sl_node_spec_t sp = tu_node_spec(name, 96000, 384 * GI, gpus, gpus ? "H100" : NULL,
                                     gpus ? 80 * GI : 0, "");
    snprintf(labels, sizeof labels, "topology=%s", path);
    sp.labels = labels;
    return tu_node_add(cl, sp);
}

static sl_sched_t *mk(sl_cluster_t *cl) {
    sl_sched_config_t cfg;
    sl_sched_config_init(&cfg);
    cfg.queue = "fifo";
    cfg.backfill = "easy";
    cfg.placement = "bestfit";
    sl_sched_t *s = NULL;
    char err[256];
    assert_int_equal(sl_sched_create(&cfg, cl, &s, err, sizeof err), 0);
    sl_tenant_spec_t t = {.name = "a", .weight = 1};
    assert_int_equal(sl_sched_add_tenant(s, &t), 0);
    return s;
}

static void sub(sl_sched_t *s, uint64_t id, int64_t submit, int32_t ntasks, int gpus,
                int64_t limit, int required) {
    sl_job_spec_t sp = {.id = id, .submit_us = submit, .ntasks = ntasks,
                        .task = tu_req("1", "1Gi", gpus, ""), .time_limit_us = limit};
    sp.task.topo_required = (int16_t)required;
    char err[256];
    assert_int_equal(sl_sched_submit(s, &sp, err, sizeof err), 0);
}

/* Racks r0 (n0, n1) and r1 (n2, n3) in block b0, 8 GPUs a node. n0 is busy
 * until 100, n2 and n3 until 300: two nodes are free at 300 in r1, at 100
 * in r0. The rack-required gang of 2 nodes is reserved from 100 on r0; the
 * long job (which fits only on n1, a reserved node) waits; the short one
 * (ends at 60) passes on n1. Before this reservation existed the gang got
 * none and the short job waited behind it (strict order). */
static void test_backfill_topo_rack_reservation(void **state) {
    (void)state;
    sl_cluster_t *cl;
    sl_cluster_create(&cl);
    uint32_t n0 = add(cl, "n0", "b0/r0", 8), n1 = add(cl, "n1", "b0/r0", 8);
    uint32_t n2 = add(cl, "n2", "b0/r1", 8), n3 = add(cl, "n3", "b0/r1", 8);
    sl_sched_t *s = mk(cl);
    tu_adopt_one(s, 1, n0, 8, 100);
    tu_adopt_one(s, 2, n2, 8, 300);
    tu_adopt_one(s, 3, n3, 8, 300);
    sub(s, 10, 1, 2, 8, 1000, SL_TOPO_RACK); /* the gang: one rack */
    sub(s, 11, 2, 1, 8, 500, SL_TOPO_ANY);   /* long: would hold n1 past 100 */
    sub(s, 12, 3, 1, 8, 50, SL_TOPO_ANY);    /* short: 10 + 50 <= 100 */
    sl_cycle_stats_t st;
    assert_int_equal(sl_sched_cycle(s, 10, NULL, NULL, &st), 1);
    assert_int_equal(st.reserved_job, 10);
    assert_int_equal(st.reserved_at_us, 100);
    assert_int_equal(st.backfilled, 1);
    assert_int_equal(tu_state(s, 12), SL_JOB_RUNNING);
    assert_int_equal(sl_job_place(sl_sched_job(s, 12), 0)->node, n1);
    assert_int_equal(tu_state(s, 11), SL_JOB_PENDING);
    assert_non_null(strstr(sl_job_reason(sl_sched_job(s, 11)), "reserved for job 10"));
    assert_non_null(strstr(sl_job_reason(sl_sched_job(s, 10)), "reserved from t=0.0001s on 2 nodes"));
    assert_int_equal(sl_sched_check(s), 0);
    /* At 100 the short job and job 1 have ended: the gang starts in r0. */
    assert_int_equal(sl_sched_finish(s, 12, 60), 0);
    assert_int_equal(sl_sched_finish(s, 1, 100), 0);
    assert_int_equal(sl_sched_cycle(s, 100, NULL, NULL, &st), 1);
    const sl_job_t *g = sl_sched_job(s, 10);
    assert_int_equal(sl_job_state(g), SL_JOB_RUNNING);
    assert_int_equal(sl_job_start_us(g), 100);
    assert_int_equal(sl_topo_groups_spanned(cl, sl_job_place(g, 0), 2, SL_TOPO_RACK), 1);
    assert_int_equal(tu_state(s, 11), SL_JOB_PENDING);
    assert_int_equal(sl_sched_check(s), 0);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

/* A long job that avoids the reserved group's nodes passes; a block-level
 * reservation covers only the nodes of the block it needs. Block b0 (n0,
 * n1) frees at 100, block b1 (n2, n3) holds a job until 1000 on n2 and has
 * n3 free: a 2-node block-required gang is reserved from 100 on b0, and a
 * long 1-node job starts on n3. */
static void test_backfill_topo_block_long_job_elsewhere(void **state) {
    (void)state;
    sl_cluster_t *cl;
    sl_cluster_create(&cl);
    uint32_t n0 = add(cl, "n0", "b0/r0", 8);
    add(cl, "n1", "b0/r1", 8);
    uint32_t n2 = add(cl, "n2", "b1/r2", 8), n3 = add(cl, "n3", "b1/r3", 8);
    sl_sched_t *s = mk(cl);
    tu_adopt_one(s, 1, n0, 8, 100);
    tu_adopt_one(s, 2, n2, 8, 1000);
    sub(s, 10, 1, 2, 8, 1000, SL_TOPO_BLOCK);
    sub(s, 11, 2, 1, 8, 5000, SL_TOPO_ANY);
    sl_cycle_stats_t st;
    assert_int_equal(sl_sched_cycle(s, 10, NULL, NULL, &st), 1);
    assert_int_equal(st.reserved_job, 10);
    assert_int_equal(st.reserved_at_us, 100);
    assert_int_equal(tu_state(s, 11), SL_JOB_RUNNING);
    assert_int_equal(sl_job_place(sl_sched_job(s, 11), 0)->node, n3);
    assert_int_equal(sl_sched_check(s), 0);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

/* Host level: two tasks of 4 GPUs on one node. n0 has 4 free now and frees
 * the rest at 200, n1 likewise at 100: the cluster holds both tasks now
 * (one per node), no host does; the reservation is n1 at 100. */
static void test_backfill_topo_host_reservation(void **state) {
    (void)state;
    sl_cluster_t *cl;
    sl_cluster_create(&cl);
    uint32_t n0 = add(cl, "n0", "b0/r0", 8), n1 = add(cl, "n1", "b0/r0", 8);
    sl_sched_t *s = mk(cl);
    tu_adopt_one(s, 1, n0, 4, 200);
    tu_adopt_one(s, 2, n1, 4, 100);
    sub(s, 10, 1, 2, 4, 1000, SL_TOPO_HOST);
    sub(s, 11, 2, 1, 4, 5000, SL_TOPO_ANY); /* long: n0 is not reserved */
    sl_cycle_stats_t st;
    assert_int_equal(sl_sched_cycle(s, 10, NULL, NULL, &st), 1);
    assert_int_equal(st.reserved_job, 10);
    assert_int_equal(st.reserved_at_us, 100);
    assert_int_equal(sl_job_place(sl_sched_job(s, 11), 0)->node, n0);
    assert_int_equal(sl_sched_finish(s, 2, 100), 0);
    assert_int_equal(sl_sched_cycle(s, 100, NULL, NULL, &st), 1);
    const sl_job_t *g = sl_sched_job(s, 10);
    assert_int_equal(sl_job_state(g), SL_JOB_RUNNING);
    assert_int_equal(sl_job_place(g, 0)->node, n1);
    assert_int_equal(sl_job_place(g, 1)->node, n1);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

/* The groups follow the nodes' states from cycle to cycle (the sorted
 * order is kept, a node that is not up is in no group): with n1 draining,
 * rack r0 cannot hold the 2-node gang, so the reservation moves to r1 at
 * 300 (the cluster shrank: the promise is conditional on that); with n1 up
 * again it is back on r0 at 100; a rack added later holds it at once. */
static void test_backfill_topo_follows_node_states(void **state) {
    (void)state;
    sl_cluster_t *cl;
    sl_cluster_create(&cl);
    uint32_t n0 = add(cl, "n0", "b0/r0", 8), n1 = add(cl, "n1", "b0/r0", 8);
    uint32_t n2 = add(cl, "n2", "b0/r1", 8), n3 = add(cl, "n3", "b0/r1", 8);
    sl_sched_t *s = mk(cl);
    tu_adopt_one(s, 1, n0, 8, 100);
    tu_adopt_one(s, 2, n2, 8, 300);
    tu_adopt_one(s, 3, n3, 8, 300);
    sub(s, 10, 1, 2, 8, 1000, SL_TOPO_RACK);
    sl_cycle_stats_t st;
    sl_sched_cycle(s, 10, NULL, NULL, &st);
    assert_int_equal(st.reserved_at_us, 100);
    assert_int_equal(sl_cluster_set_state(cl, n1, SL_NODE_DRAINING), 0);
    sl_sched_cycle(s, 20, NULL, NULL, &st);
    assert_int_equal(st.reserved_job, 10);
    assert_int_equal(st.reserved_at_us, 300);
    assert_int_equal(sl_cluster_set_state(cl, n1, SL_NODE_UP), 0);
    sl_sched_cycle(s, 30, NULL, NULL, &st);
    assert_int_equal(st.reserved_at_us, 100);
    /* A new rack of two free nodes (nodes added: the order is rebuilt,
     * with r2 sorted between r1's nodes' ids): the gang starts there. */
    uint32_t n4 = add(cl, "n4", "b0/r2", 8);
    add(cl, "n5", "b0/r0x", 8);
    uint32_t n6 = add(cl, "n6", "b0/r2", 8);
    assert_int_equal(sl_sched_cycle(s, 40, NULL, NULL, &st), 1);
    const sl_job_t *g = sl_sched_job(s, 10);
    assert_int_equal(sl_job_state(g), SL_JOB_RUNNING);
    uint32_t a = sl_job_place(g, 0)->node, b = sl_job_place(g, 1)->node;
    assert_true((a == n4 && b == n6) || (a == n6 && b == n4));
    assert_int_equal(sl_sched_check(s), 0);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

/* ---- randomised: the reserved job is never delayed ---- */

typedef struct simjob {
    sl_job_spec_t sp;
    int64_t first_resv; /* first reserved start time, or -1 */
} simjob_t;

static int64_t rnd(sl_rng_t *r, int64_t lo, int64_t hi) {
    return lo + (int64_t)sl_rng_below(r, (uint64_t)(hi - lo + 1));
}

typedef struct ends {
    int64_t now, next;
    uint64_t due[512];
    size_t ndue;
} ends_t;

static int scan_running(void *ud, const sl_job_t *j) {
    ends_t *e = ud;
    int64_t end = sl_job_start_us(j) + sl_job_spec(j)->time_limit_us;
    if (end <= e->now && e->ndue < 512) e->due[e->ndue++] = sl_job_id(j);
    else if (end > e->now && end < e->next) e->next = end;
    return 0;
}

/* 300 seeded runs: 2-3 blocks of 1-3 racks of 1-3 nodes (4 or 8 GPUs), 40
 * jobs of 1-4 tasks, a third of them requiring a rack, block or host;
 * discrete events (ends, arrivals, a cycle). Every job that ever held a
 * reservation starts by its first reserved time; reservations of required
 * gangs and backfill behind them must both occur often. */
static void test_backfill_topo_never_delays_reserved_random(void **state) {
    (void)state;
    int topo_resv = 0, backfilled = 0;
    for (uint64_t seed = 1; seed <= 300; seed++) {
        sl_rng_t r;
        sl_rng_seed(&r, seed * 104729);
        sl_cluster_t *cl;
        sl_cluster_create(&cl);
        int nb = (int)rnd(&r, 2, 3), nn = 0;
        for (int b = 0; b < nb; b++) {
            int nr = (int)rnd(&r, 1, 3);
            for (int k = 0; k < nr; k++) {
                int nodes = (int)rnd(&r, 1, 3);
                for (int i = 0; i < nodes; i++) {
                    char name[32], path[32];
                    snprintf(name, sizeof name, "n%d", nn++);
                    snprintf(path, sizeof path, "b%d/r%d", b, k);
                    add(cl, name, path, rnd(&r, 0, 1) ? 8 : 4);
                }
            }
        }
        sl_sched_config_t cfg;
        sl_sched_config_init(&cfg);
        cfg.queue = "fifo";
        cfg.backfill = "easy";
        cfg.placement = seed % 2 ? "bestfit" : "fgdbal";
        cfg.seed = seed;
        sl_sched_t *s = NULL;
        char err[256];
        assert_int_equal(sl_sched_create(&cfg, cl, &s, err, sizeof err), 0);
        sl_tenant_spec_t t = {.name = "t", .weight = 1};
        assert_true(sl_sched_add_tenant(s, &t) >= 0);
        enum { NJ = 40 };
        simjob_t jobs[NJ];
        int64_t t_sub = 0;
        for (int i = 0; i < NJ; i++) {
            t_sub += rnd(&r, 0, 10);
            sl_task_req_t task = tu_req("1", "1Gi", (int)rnd(&r, 1, 4) * 2, "");
            sl_job_spec_t sp = {.id = (uint64_t)i + 1, .submit_us = t_sub,
                                .ntasks = (int32_t)rnd(&r, 1, 4), .task = task,
                                .time_limit_us = rnd(&r, 1, 100)};
            if (rnd(&r, 0, 2) == 0) sp.task.topo_required = (int16_t)rnd(&r, 1, 3);
            jobs[i] = (simjob_t){.sp = sp, .first_resv = -1};
        }
        int64_t now = 0;
        int next_sub = 0;
        for (int guard = 0; guard < 10000; guard++) {
            ends_t e = {.now = now, .next = INT64_MAX};
            sl_sched_foreach(s, SL_JOB_RUNNING, scan_running, &e);
            for (size_t i = 0; i < e.ndue; i++)
                assert_int_equal(sl_sched_finish(s, e.due[i], now), 0);
            while (next_sub < NJ && jobs[next_sub].sp.submit_us <= now) {
                assert_int_equal(sl_sched_submit(s, &jobs[next_sub].sp, err, sizeof err), 0);
                next_sub++;
            }
            sl_cycle_stats_t st;
            sl_sched_cycle(s, now, NULL, NULL, &st);
            assert_int_equal(sl_sched_check(s), 0);
            if (st.reserved_job > 0) {
                simjob_t *b = &jobs[st.reserved_job - 1];
                assert_true(st.reserved_at_us >= now);
                if (b->first_resv < 0) {
                    b->first_resv = st.reserved_at_us;
                    topo_resv += b->sp.task.topo_required != SL_TOPO_ANY;
                }
                assert_true(st.reserved_at_us <= b->first_resv);
                if (b->sp.task.topo_required != SL_TOPO_ANY) backfilled += st.backfilled;
            }
            e = (ends_t){.now = now, .next = INT64_MAX};
            sl_sched_foreach(s, SL_JOB_RUNNING, scan_running, &e);
            int64_t next = e.next;
            if (next_sub < NJ && jobs[next_sub].sp.submit_us < next)
                next = jobs[next_sub].sp.submit_us;
            if (next == INT64_MAX) break;
            assert_true(next > now);
            now = next;
        }
        for (int i = 0; i < NJ; i++) {
            if (jobs[i].first_resv < 0) continue;
            const sl_job_t *j = sl_sched_job(s, jobs[i].sp.id);
            assert_int_not_equal(sl_job_state(j), SL_JOB_PENDING);
            if (sl_job_start_us(j) > jobs[i].first_resv)
                fail_msg("seed %llu: job %d (required level %d) reserved for %lld started %lld",
                         (unsigned long long)seed, i + 1, (int)jobs[i].sp.task.topo_required,
                         (long long)jobs[i].first_resv, (long long)sl_job_start_us(j));
        }
        sl_sched_destroy(s);
        sl_cluster_destroy(cl);
        assert_int_equal(sl_alloc_live(), 0);
    }
    printf("topology backfill: %d reservations of required gangs, %d jobs backfilled past them\n",
           topo_resv, backfilled);
    assert_true(topo_resv > 100);
    assert_true(backfilled > 100);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_backfill_topo_rack_reservation, tu_teardown),
        cmocka_unit_test_teardown(test_backfill_topo_block_long_job_elsewhere, tu_teardown),
        cmocka_unit_test_teardown(test_backfill_topo_host_reservation, tu_teardown),
        cmocka_unit_test_teardown(test_backfill_topo_follows_node_states, tu_teardown),
        cmocka_unit_test_teardown(test_backfill_topo_never_delays_reserved_random, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
