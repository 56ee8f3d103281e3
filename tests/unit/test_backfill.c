/*
 * test_backfill.c - EASY backfill: hand-made cases (a small short job passes
 * a blocked one, a long one does not; a long one may pass on nodes the
 * reservation does not need; runtime estimates from a job's limit, its own
 * default or the scheduler's; a job without a reservation possible, for
 * want of estimates or of a node that is down, holds nothing back; a
 * reservation holds back only nodes its job can use),
 * and a seeded randomised check against a naive timeline: jobs run exactly
 * their time limit, and a job that gets a reservation for time T at some
 * cycle must start no later than T.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define GI (INT64_C(1) << 30)

static sl_sched_t *mk(sl_cluster_t *cl, const char *backfill, const char *placement,
                      int64_t default_limit) {
    sl_sched_config_t cfg;
    sl_sched_config_init(&cfg);
    cfg.queue = "fifo";
    cfg.backfill = backfill;
    cfg.placement = placement;
    cfg.default_time_limit_us = default_limit;
    sl_sched_t *s = NULL;
    char err[256];
    assert_int_equal(sl_sched_create(&cfg, cl, &s, err, sizeof err), 0);
    sl_tenant_spec_t t = {.name = "a", .weight = 1};
    assert_int_equal(sl_sched_add_tenant(s, &t), 0);
    return s;
}

static void sub(sl_sched_t *s, uint64_t id, int64_t submit, int gpus, int64_t limit) {
    sl_job_spec_t sp = {.id = id, .submit_us = submit, .ntasks = 1,
                        .task = tu_req("1", "1Gi", gpus, ""), .time_limit_us = limit};
    char err[256];
    assert_int_equal(sl_sched_submit(s, &sp, err, sizeof err), 0);
}

static void test_backfill_short_job_passes_long_does_not(void **state) {
    (void)state;
    sl_cluster_t *cl;
    sl_cluster_create(&cl);
    tu_add_nodes(cl, "g", 1, "32", "256Gi", 8, "H100", "80Gi", NULL);
    sl_sched_t *s = mk(cl, "easy", NULL, 0);
    tu_adopt_one(s, 1, 0, 4, 100); /* ends at 100 */
    sub(s, 2, 1, 8, 1000);  /* blocked until 100 */
    sub(s, 3, 2, 2, 50);    /* 10 + 50 <= 100: may pass */
    sub(s, 4, 3, 2, 500);   /* would hold 2 GPUs past 100: may not */
    sl_cycle_stats_t st;
    assert_int_equal(sl_sched_cycle(s, 10, NULL, NULL, &st), 1);
    assert_int_equal(st.reserved_job, 2);
    assert_int_equal(st.reserved_at_us, 100);
    assert_int_equal(st.backfilled, 1);
    assert_int_equal(tu_state(s, 3), SL_JOB_RUNNING);
    assert_int_equal(tu_state(s, 4), SL_JOB_PENDING);
    assert_int_equal(sl_job_status(sl_sched_job(s, 4)), SL_WAIT);
    assert_non_null(strstr(sl_job_reason(sl_sched_job(s, 4)), "reserved for job 2"));
    assert_non_null(strstr(sl_job_reason(sl_sched_job(s, 2)), "reserved from t=0.0001s"));
    assert_int_equal(sl_sched_check(s), 0);

    /* Job 3 ends at 60; job 4 still may not pass (60 + 500 > 100). */
    assert_int_equal(sl_sched_finish(s, 3, 60), 0);
    assert_int_equal(sl_sched_cycle(s, 60, NULL, NULL, &st), 0);
    assert_int_equal(st.reserved_at_us, 100);
    assert_int_equal(tu_state(s, 4), SL_JOB_PENDING);
    /* At 100 the reserved job starts on time, and job 4 waits behind it. */
    assert_int_equal(sl_sched_finish(s, 1, 100), 0);
    assert_int_equal(sl_sched_cycle(s, 100, NULL, NULL, &st), 1);
    assert_int_equal(tu_state(s, 2), SL_JOB_RUNNING);
    assert_int_equal(sl_job_start_us(sl_sched_job(s, 2)), 100);
    assert_int_equal(tu_state(s, 4), SL_JOB_PENDING);
    assert_int_equal(sl_sched_check(s), 0);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

static void test_backfill_none_keeps_strict_order(void **state) {
    (void)state;
    sl_cluster_t *cl;
    sl_cluster_create(&cl);
    tu_add_nodes(cl, "g", 1, "32", "256Gi", 8, "H100", "80Gi", NULL);
    sl_sched_t *s = mk(cl, "none", NULL, 0);
    tu_adopt_one(s, 1, 0, 4, 100);
    sub(s, 2, 1, 8, 1000);
    sub(s, 3, 2, 2, 50);
    sl_cycle_stats_t st;
    assert_int_equal(sl_sched_cycle(s, 10, NULL, NULL, &st), 0);
    assert_int_equal(st.reserved_job, -1);
    assert_int_equal(tu_state(s, 3), SL_JOB_PENDING);
    assert_non_null(strstr(sl_job_reason(sl_sched_job(s, 3)), "waiting behind job 2"));
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

/* A long job may pass if it avoids the reserved nodes; firstfit would put
 * it on the reserved node 0, so the scheduler must steer it to node 1. */
static void test_backfill_long_job_avoids_reserved_nodes(void **state) {
    (void)state;
    sl_cluster_t *cl;
    sl_cluster_create(&cl);
    tu_add_nodes(cl, "g", 2, "32", "256Gi", 8, "H100", "80Gi", NULL);
    sl_sched_t *s = mk(cl, "easy", "firstfit", 0);
    tu_adopt_one(s, 1, 0, 4, 100);  /* node 0 frees at 100 */
    tu_adopt_one(s, 2, 1, 6, 1000); /* node 1 keeps 2 free GPUs */
    sub(s, 3, 1, 8, 1000);   /* reserved: node 0 at 100 */
    sub(s, 4, 2, 2, 500);    /* long: only node 1 is allowed */
    sub(s, 5, 3, 2, 500);    /* long: node 1 is full now, node 0 reserved */
    sub(s, 6, 4, 2, 90);     /* short: may use node 0 */
    sl_cycle_stats_t st;
    assert_int_equal(sl_sched_cycle(s, 10, NULL, NULL, &st), 2);
    assert_int_equal(st.reserved_job, 3);
    assert_int_equal(st.reserved_at_us, 100);
    assert_int_equal(st.backfilled, 2);
    const sl_job_t *j4 = sl_sched_job(s, 4);
    assert_int_equal(sl_job_state(j4), SL_JOB_RUNNING);
    assert_int_equal(sl_job_place(j4, 0)->node, 1);
    assert_int_equal(tu_state(s, 5), SL_JOB_PENDING);
    assert_int_equal(sl_job_status(sl_sched_job(s, 5)), SL_WAIT);
    const sl_job_t *j6 = sl_sched_job(s, 6);
    assert_int_equal(sl_job_state(j6), SL_JOB_RUNNING);
    assert_int_equal(sl_job_place(j6, 0)->node, 0);
    /* The drained reserved node is back up after the cycle. */
    assert_int_equal(sl_cluster_node(cl, 0)->state, SL_NODE_UP);
    assert_int_equal(sl_sched_check(s), 0);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

/* A reservation needs runtime estimates of the jobs the blocked job waits
 * for: a job's time limit, else its own default (default_limit_us: the
 * controller's pool default), else the scheduler's. With one, later jobs
 * pass only if they end in time (job 3) and a long one waits (job 4).
 * Without any, the blocked job's start time is unknown: it takes no hold
 * and holds nothing back, so both start. */
static void test_backfill_runtime_estimates(void **state) {
    (void)state;
    for (int how = 0; how <= 2; how++) { /* none, the scheduler's, the job's own default */
        sl_cluster_t *cl;
        sl_cluster_create(&cl);
        tu_add_nodes(cl, "g", 1, "32", "256Gi", 8, "H100", "80Gi", NULL);
        sl_sched_t *s = mk(cl, "easy", NULL, how == 1 ? 200 : 0);
        /* Job 1 has no limit: it ends at the default, or never. */
        sl_job_spec_t sp = {.id = 1, .ntasks = 1, .task = tu_req("1", "1Gi", 4, ""),
                            .default_limit_us = how == 2 ? 200 : 0};
        sl_place_t pl = {.node = 0, .gpu_mask = 0xf, .gpu_milli = 1000};
        char err[256];
        assert_int_equal(sl_sched_adopt(s, &sp, &pl, 1, 0, err, sizeof err), 0);
        sub(s, 2, 1, 8, 0);
        sub(s, 3, 2, 2, 50);
        sub(s, 4, 3, 2, 0);
        sl_cycle_stats_t st;
        int started = sl_sched_cycle(s, 10, NULL, NULL, &st);
        assert_int_equal(tu_state(s, 3), SL_JOB_RUNNING);
        if (how) {
            assert_int_equal(started, 1);
            assert_int_equal(st.reserved_job, 2);
            assert_int_equal(st.reserved_at_us, 200);
            assert_int_equal(sl_sched_held_job(s, NULL), 2);
            assert_int_equal(tu_state(s, 4), SL_JOB_PENDING);
            /* The plan, kept after the cycle: job 2 at its reservation. */
            assert_int_equal(sl_sched_expected_start(s, 2), 200);
            assert_int_equal(sl_sched_expected_start(s, 4), -1);
            assert_int_equal(sl_sched_expected_start(s, 0), -1);
        } else {
            assert_int_equal(started, 2);
            assert_int_equal(st.reserved_job, -1);
            assert_int_equal(sl_sched_held_job(s, NULL), 0);
            assert_int_equal(sl_sched_expected_start(s, 2), -1);
            assert_non_null(strstr(sl_job_reason(sl_sched_job(s, 2)), "no reservation possible"));
            assert_int_equal(tu_state(s, 4), SL_JOB_RUNNING);
        }
        assert_int_equal(sl_sched_check(s), 0);
        sl_sched_destroy(s);
        sl_cluster_destroy(cl);
    }
}

/* The head job waits for A100 GPUs that a job without a time limit holds
 * while the H100 node is free. The jobs' default limit gives a reservation
 * on the A100 node only, so another tenant's job without a limit (a long
 * one) starts on the H100 node at once: a reservation holds back only nodes
 * its job can use. */
static void test_backfill_reservation_holds_only_nodes_the_job_can_use(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    tu_add_nodes(cl, "a", 1, "32", "256Gi", 4, "A100", "80Gi", NULL);
    tu_add_nodes(cl, "h", 1, "32", "256Gi", 4, "H100", "80Gi", NULL);
    sl_sched_t *s = tu_sched_create(cl, "drf", "easy");
    int a = tu_tenant_add(s, "a", 1, TU_NO_QUOTA), b = tu_tenant_add(s, "b", 1, TU_NO_QUOTA);
    sl_task_req_t a100 = tu_req("1", "1Gi", 4, "");
    a100.model_mask = 1ull << sl_cluster_model_find(cl, "A100");
    sl_job_spec_t sp = tu_spec(1, a, 1, a100);
    sp.default_limit_us = 1000;
    sl_place_t pl = {.node = 0, .gpu_mask = 0xf, .gpu_milli = 1000};
    char err[256];
    assert_int_equal(sl_sched_adopt(s, &sp, &pl, 1, 0, err, sizeof err), 0);
    sp = tu_spec(2, a, 1, a100);
    sp.default_limit_us = 1000;
    tu_submit(s, sp);
    sl_cycle_stats_t st;
    assert_int_equal(sl_sched_cycle(s, 10, NULL, NULL, &st), 0);
    assert_int_equal(st.reserved_job, 2);
    assert_int_equal(st.reserved_at_us, 1000);
    sp = tu_spec(3, b, 1, tu_req("1", "1Gi", 1, ""));
    sp.default_limit_us = 1000; /* long: 20 + 1000 is past the reserved time */
    tu_submit(s, sp);
    assert_int_equal(sl_sched_cycle(s, 20, NULL, NULL, &st), 1);
    const sl_job_t *j3 = sl_sched_job(s, 3);
    assert_int_equal(sl_job_state(j3), SL_JOB_RUNNING);
    assert_int_equal(sl_job_place(j3, 0)->node, 1);
    assert_int_equal(st.reserved_job, 2);
    assert_int_equal(sl_sched_held_job(s, NULL), 2);
    /* The held reservation's plan, from cycle to cycle. */
    assert_int_equal(sl_sched_expected_start(s, 2), 1000);
    assert_int_equal(sl_sched_expected_start(s, 3), -1);
    assert_int_equal(sl_sched_check(s), 0);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

/* A gang that needs a node that is down cannot be given a reservation (it
 * does not fit even once every job has ended): it holds nothing back, and
 * another tenant's job starts on the node that is up. Once the node is
 * back, the gang gets its reservation and the hold, and a long job waits. */
static void test_backfill_down_node_holds_nothing_back(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    tu_add_nodes(cl, "g", 2, "32", "256Gi", 8, "H100", "80Gi", NULL);
    assert_int_equal(sl_cluster_set_state(cl, 1, SL_NODE_DOWN), 0);
    sl_sched_t *s = tu_sched_create(cl, "fifo", "easy");
    int a = tu_tenant_add(s, "a", 1, TU_NO_QUOTA), b = tu_tenant_add(s, "b", 1, TU_NO_QUOTA);
    sl_job_spec_t sp = tu_spec(1, a, 2, tu_req("1", "1Gi", 8, ""));
    sp.time_limit_us = 100;
    tu_submit(s, sp);
    sl_cycle_stats_t st;
    assert_int_equal(sl_sched_cycle(s, 1, NULL, NULL, &st), 0);
    assert_int_equal(st.reserved_job, -1);
    assert_int_equal(sl_sched_held_job(s, NULL), 0);
    sp = tu_spec(2, b, 1, tu_req("1", "1Gi", 1, ""));
    sp.time_limit_us = 50;
    tu_submit(s, sp);
    assert_int_equal(sl_sched_cycle(s, 2, NULL, NULL, &st), 1);
    assert_int_equal(tu_state(s, 2), SL_JOB_RUNNING);
    assert_non_null(strstr(sl_job_reason(sl_sched_job(s, 1)), "no reservation possible"));
    assert_int_equal(sl_cluster_set_state(cl, 1, SL_NODE_UP), 0);
    tu_submit(s, tu_spec(3, b, 1, tu_req("1", "1Gi", 1, ""))); /* no limit: long */
    assert_int_equal(sl_sched_cycle(s, 3, NULL, NULL, &st), 0);
    assert_int_equal(st.reserved_job, 1);
    assert_int_equal(st.reserved_at_us, 52);
    assert_int_equal(sl_sched_held_job(s, NULL), 1);
    assert_int_equal(tu_state(s, 3), SL_JOB_PENDING);
    assert_int_equal(sl_sched_finish(s, 2, 52), 0);
    assert_int_equal(sl_sched_cycle(s, 52, NULL, NULL, &st), 1);
    assert_int_equal(tu_state(s, 1), SL_JOB_RUNNING);
    assert_int_equal(sl_sched_check(s), 0);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

/* The shadow time is the earliest expected end after which the job fits,
 * counting only the nodes it can use (pool, model). */
static void test_backfill_shadow_time_is_earliest(void **state) {
    (void)state;
    sl_cluster_t *cl;
    sl_cluster_create(&cl);
    tu_add_nodes(cl, "g", 3, "32", "256Gi", 4, "H100", "80Gi", NULL);
    sl_sched_t *s = mk(cl, "easy", NULL, 0);
    tu_adopt_one(s, 1, 0, 4, 300);
    tu_adopt_one(s, 2, 1, 4, 100);
    tu_adopt_one(s, 3, 2, 2, 200);
    /* Two tasks of 3 GPUs: node 1 frees at 100 (1 task), node 2 at 200 (2nd). */
    sl_job_spec_t sp = {.id = 4, .submit_us = 1, .ntasks = 2, .task = tu_req("1", "1Gi", 3, ""),
                        .time_limit_us = 10};
    char err[256];
    assert_int_equal(sl_sched_submit(s, &sp, err, sizeof err), 0);
    sl_cycle_stats_t st;
    sl_sched_cycle(s, 5, NULL, NULL, &st);
    assert_int_equal(st.reserved_job, 4);
    assert_int_equal(st.reserved_at_us, 200);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

/* Past the reservation a cycle examines at most max_backfill_tries jobs;
 * the others show "not considered" and get their turn in later cycles.
 * Jobs skipped together with a failed one of the same shape do not count. */
static void test_backfill_max_tries_bounds_a_cycle(void **state) {
    (void)state;
    for (int capped = 0; capped <= 1; capped++) {
        sl_cluster_t *cl;
        sl_cluster_create(&cl);
        tu_add_nodes(cl, "g", 1, "32", "256Gi", 8, "H100", "80Gi", NULL);
        sl_sched_config_t cfg;
        sl_sched_config_init(&cfg);
        cfg.backfill = "easy";
        cfg.max_backfill_tries = capped ? 3 : 0;
        sl_sched_t *s = NULL;
        char err[256];
        assert_int_equal(sl_sched_create(&cfg, cl, &s, err, sizeof err), 0);
        sl_tenant_spec_t t = {.name = "a", .weight = 1};
        assert_int_equal(sl_sched_add_tenant(s, &t), 0);
        tu_adopt_one(s, 1, 0, 4, 100); /* 4 GPUs free until 100 */
        sub(s, 2, 1, 8, 1000);  /* reserved from 100 */
        /* 20 identical 7-GPU jobs: skipped as one after the first. */
        for (uint64_t id = 3; id <= 22; id++) sub(s, id, 2, 7, 1000);
        /* 10 short one-GPU jobs, each its own shape (CPU), 4 can start. */
        for (uint64_t id = 23; id <= 32; id++) {
            sl_job_spec_t sp = {.id = id, .submit_us = 3, .ntasks = 1,
                                .task = tu_req("1", "1Gi", 1, ""), .time_limit_us = 50};
            sp.task.cpu_milli = (int64_t)id * 10;
            assert_int_equal(sl_sched_submit(s, &sp, err, sizeof err), 0);
        }
        sl_cycle_stats_t st;
        int started = sl_sched_cycle(s, 10, NULL, NULL, &st);
        assert_int_equal(st.reserved_job, 2);
        if (!capped) {
            assert_int_equal(started, 4);
        } else {
            /* Examined past the reservation: job 3 (its group's verdict
             * covers 4..22), then 23 and 24. */
            assert_int_equal(started, 2);
            const sl_job_t *j = sl_sched_job(s, 25);
            assert_int_equal(sl_job_state(j), SL_JOB_PENDING);
            assert_int_equal(sl_job_status(j), SL_WAIT);
            assert_non_null(strstr(sl_job_reason(j), "not considered"));
            assert_int_equal(sl_job_status(sl_sched_job(s, 22)), SL_NOFIT);
            /* Each cycle restarts at the head and gets a bit further. */
            assert_int_equal(sl_sched_cycle(s, 11, NULL, NULL, &st), 2);
            assert_int_equal(sl_sched_cycle(s, 12, NULL, NULL, &st), 0);
            assert_int_equal(sl_job_status(sl_sched_job(s, 27)), SL_NOFIT);
        }
        for (uint64_t id = 23; id <= 26; id++) assert_int_equal(tu_state(s, id), SL_JOB_RUNNING);
        assert_int_equal(sl_sched_check(s), 0);
        sl_sched_destroy(s);
        cfg.max_backfill_tries = -1;
        assert_int_equal(sl_sched_create(&cfg, cl, &s, err, sizeof err), SL_EINVAL);
        sl_cluster_destroy(cl);
    }
}

/* ---- randomised: the reserved job is never delayed ---- */

typedef struct simjob {
    sl_job_spec_t sp;
    int64_t runtime;    /* exactly its limit (or the default) */
    int64_t first_resv; /* first reserved start time, or -1 */
    bool submitted;
} simjob_t;

static int64_t rnd(sl_rng_t *r, int64_t lo, int64_t hi) {
    return lo + (int64_t)sl_rng_below(r, (uint64_t)(hi - lo + 1));
}

typedef struct ends {
    int64_t now, next;
    uint64_t due[512];
    size_t ndue;
    int64_t def;
} ends_t;

static int64_t runtime_of(const sl_job_t *j, int64_t def) {
    int64_t l = sl_job_spec(j)->time_limit_us;
    return l > 0 ? l : def;
}

static int scan_running(void *ud, const sl_job_t *j) {
    ends_t *e = ud;
    int64_t end = sl_job_start_us(j) + runtime_of(j, e->def);
    if (end <= e->now && e->ndue < 512) e->due[e->ndue++] = sl_job_id(j);
    else if (end > e->now && end < e->next) e->next = end;
    return 0;
}

static void test_backfill_never_delays_reserved_random(void **state) {
    (void)state;
    const sl_place_policy_t *const *pols = sl_place_policy_list();
    size_t npols = 0;
    while (pols[npols]) npols++;
    int reservations = 0, backfilled = 0;
    for (uint64_t seed = 1; seed <= 200; seed++) {
        sl_rng_t r;
        sl_rng_seed(&r, seed * 7919);
        sl_cluster_t *cl;
        sl_cluster_create(&cl);
        int nnodes = (int)rnd(&r, 1, 5);
        for (int i = 0; i < nnodes; i++) {
            char name[16], err[128];
            snprintf(name, sizeof name, "n%d", i);
            int32_t gpus = (int32_t)rnd(&r, 0, 4) ? (int32_t)rnd(&r, 1, 8) : 0;
            sl_node_spec_t ns = {.name = name, .cpu_milli = rnd(&r, 8, 64) * 1000,
                                 .mem_bytes = rnd(&r, 32, 256) * GI, .gpus = gpus,
                                 .gpu_model = gpus ? "A100" : NULL,
                                 .gpu_mem_bytes = gpus ? 40 * GI : 0};
            assert_int_equal(sl_cluster_add_node(cl, &ns, NULL, err, sizeof err), 0);
        }
        int64_t def = rnd(&r, 0, 1) ? 40 : 0;
        sl_sched_config_t cfg;
        sl_sched_config_init(&cfg);
        cfg.queue = "fifo";
        cfg.backfill = "easy";
        cfg.placement = pols[seed % npols]->name;
        cfg.seed = seed;
        cfg.default_time_limit_us = def;
        sl_sched_t *s = NULL;
        char err[256];
        assert_int_equal(sl_sched_create(&cfg, cl, &s, err, sizeof err), 0);
        int ntenants = (int)rnd(&r, 1, 3);
        for (int i = 0; i < ntenants; i++) {
            char name[16];
            snprintf(name, sizeof name, "t%d", i);
            sl_tenant_spec_t t = {.name = name, .weight = (int32_t)rnd(&r, 1, 3)};
            assert_true(sl_sched_add_tenant(s, &t) >= 0);
        }
        enum { NJ = 40 };
        simjob_t jobs[NJ];
        int64_t t_sub = 0;
        for (int i = 0; i < NJ; i++) {
            t_sub += rnd(&r, 0, 15);
            sl_task_req_t task;
            sl_task_req_init(&task);
            task.cpu_milli = rnd(&r, 1, 8) * 1000;
            task.mem_bytes = rnd(&r, 1, 32) * GI;
            int64_t k = rnd(&r, 0, 4);
            if (k <= 2) task.gpus = (int32_t)rnd(&r, 1, 4);
            else if (k == 3) task.gpu_milli = (int32_t)rnd(&r, 1, 9) * 100;
            sl_job_spec_t sp = {.id = (uint64_t)i + 1, .tenant = (int32_t)rnd(&r, 0, ntenants - 1),
                                .submit_us = t_sub, .ntasks = (int32_t)rnd(&r, 1, 4), .task = task,
                                .time_limit_us = rnd(&r, 1, 100)};
            if (def && rnd(&r, 0, 2) == 0) sp.time_limit_us = 0; /* runs the default */
            if (rnd(&r, 0, 3) == 0) sp.min_tasks = (int32_t)rnd(&r, 1, sp.ntasks);
            jobs[i] = (simjob_t){.sp = sp, .runtime = sp.time_limit_us ? sp.time_limit_us : def,
                                 .first_resv = -1};
        }
        /* Discrete events: at each time, ends first, then arrivals, then a cycle. */
        int64_t now = 0;
        int next_sub = 0;
        for (int guard = 0; guard < 10000; guard++) {
            ends_t e = {.now = now, .next = INT64_MAX, .def = def};
            sl_sched_foreach(s, SL_JOB_RUNNING, scan_running, &e);
            for (size_t i = 0; i < e.ndue; i++) assert_int_equal(sl_sched_finish(s, e.due[i], now), 0);
            while (next_sub < NJ && jobs[next_sub].sp.submit_us <= now) {
                assert_int_equal(sl_sched_submit(s, &jobs[next_sub].sp, err, sizeof err), 0);
                next_sub++;
            }
            sl_cycle_stats_t st;
            sl_sched_cycle(s, now, NULL, NULL, &st);
            assert_int_equal(sl_sched_check(s), 0);
            backfilled += st.backfilled;
            if (st.reserved_job > 0) {
                simjob_t *b = &jobs[st.reserved_job - 1];
                assert_true(st.reserved_at_us >= now);
                if (b->first_resv < 0) {
                    b->first_resv = st.reserved_at_us;
                    reservations++;
                }
                /* A later reservation of the same job never moves it back. */
                assert_true(st.reserved_at_us <= b->first_resv);
            }
            /* Next event. */
            e = (ends_t){.now = now, .next = INT64_MAX, .def = def};
            sl_sched_foreach(s, SL_JOB_RUNNING, scan_running, &e);
            int64_t next = e.next;
            if (next_sub < NJ && jobs[next_sub].sp.submit_us < next) next = jobs[next_sub].sp.submit_us;
            if (next == INT64_MAX) break;
            assert_true(next > now);
            now = next;
        }
        for (int i = 0; i < NJ; i++) {
            if (jobs[i].first_resv < 0) continue;
            const sl_job_t *j = sl_sched_job(s, jobs[i].sp.id);
            assert_int_not_equal(sl_job_state(j), SL_JOB_PENDING);
            if (sl_job_start_us(j) > jobs[i].first_resv)
                fprintf(stderr, "seed %llu: job %d reserved for %lld started %lld\n",
                        (unsigned long long)seed, i + 1, (long long)jobs[i].first_resv,
                        (long long)sl_job_start_us(j));
            assert_true(sl_job_start_us(j) <= jobs[i].first_resv);
        }
        sl_sched_destroy(s);
        sl_cluster_destroy(cl);
        assert_int_equal(sl_alloc_live(), 0);
    }
    /* The generator must actually exercise reservations and backfill. */
    assert_true(reservations > 100);
    assert_true(backfilled > 100);
}

/* Backfill policies are const structs looked up by name, like queue and
 * placement policies; "none" has no reservation hook, "easy" all of them;
 * the scheduler names the known ones when given an unknown one. */
static void test_backfill_policy_registry(void **state) {
    (void)state;
    const sl_backfill_policy_t *none = sl_backfill_policy_find("none");
    const sl_backfill_policy_t *easy = sl_backfill_policy_find("easy");
    assert_non_null(none);
    assert_non_null(easy);
    assert_null(sl_backfill_policy_find("conservative"));
    assert_null(sl_backfill_policy_find(NULL));
    assert_null(none->reserve);
    assert_true(easy->init && easy->fini && easy->reserve && easy->touches && easy->clear);
    const sl_backfill_policy_t *const *l = sl_backfill_policy_list();
    assert_ptr_equal(l[SL_BACKFILL_NONE], none);
    assert_ptr_equal(l[SL_BACKFILL_EASY], easy);
    assert_null(l[2]);
    sl_cluster_t *cl;
    sl_cluster_create(&cl);
    sl_sched_config_t cfg;
    sl_sched_config_init(&cfg);
    cfg.backfill = "conservative";
    sl_sched_t *s = NULL;
    char err[128];
    assert_int_equal(sl_sched_create(&cfg, cl, &s, err, sizeof err), SL_EINVAL);
    assert_string_equal(err, "unknown backfill \"conservative\" (known: none, easy)");
    cfg.backfill = "easy";
    assert_int_equal(sl_sched_create(&cfg, cl, &s, err, sizeof err), 0);
    assert_int_equal(sl_sched_backfill(s), SL_BACKFILL_EASY);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_backfill_short_job_passes_long_does_not, tu_teardown),
        cmocka_unit_test_teardown(test_backfill_none_keeps_strict_order, tu_teardown),
        cmocka_unit_test_teardown(test_backfill_long_job_avoids_reserved_nodes, tu_teardown),
        cmocka_unit_test_teardown(test_backfill_runtime_estimates, tu_teardown),
        cmocka_unit_test_teardown(test_backfill_reservation_holds_only_nodes_the_job_can_use,
                                  tu_teardown),
        cmocka_unit_test_teardown(test_backfill_down_node_holds_nothing_back, tu_teardown),
        cmocka_unit_test_teardown(test_backfill_shadow_time_is_earliest, tu_teardown),
        cmocka_unit_test_teardown(test_backfill_max_tries_bounds_a_cycle, tu_teardown),
        cmocka_unit_test_teardown(test_backfill_never_delays_reserved_random, tu_teardown),
        cmocka_unit_test_teardown(test_backfill_policy_registry, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
