/*
 * test_elastic.c - elastic jobs in sl_sched_run (sluice/preempt.h): a job
 * with min_tasks < ntasks starts once min_tasks fit, grows toward ntasks
 * as capacity frees (never while another job waits for room, never past
 * its tenant's quota), shrinks by its highest ranks for higher-priority
 * work or a tenant owed its share, and keeps its size history. A seeded
 * random walk (grows, shrinks, ends, arrivals) checks the invariants:
 * min_tasks <= size <= ntasks, a shrink removes a top-rank suffix, a
 * grow's new tasks are where the job's list says, sl_sched_check holds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define SEC INT64_C(1000000)

typedef struct seen {
    sl_resize_t rsz[64];
    sl_place_t pls[64][8];
    size_t nrsz;
    tu_ids_t starts;
    size_t npre;
} seen_t;

static void on_rsz(void *ud, const sl_resize_t *r) {
    seen_t *s = ud;
    assert_true(s->nrsz < 64);
    s->rsz[s->nrsz] = *r;
    if (r->pls) {
        assert_true(r->to - r->from <= 8);
        memcpy(s->pls[s->nrsz], r->pls, (size_t)(r->to - r->from) * sizeof *r->pls);
    }
    s->rsz[s->nrsz++].pls = NULL;
}

static void on_pre(void *ud, const sl_preemption_t *p) {
    (void)p;
    ((seen_t *)ud)->npre++;
}

static void on_st(void *ud, const sl_job_t *j) {
    tu_ids_on_start(&((seen_t *)ud)->starts, j);
}

static const sl_cycle_ops_t OPS = {on_st, on_pre, on_rsz};

static sl_sched_t *make(sl_cluster_t *cl, const char *queue, sl_preempt_config_t pc, uint64_t seed) {
    sl_sched_config_t cfg;
    sl_sched_config_init(&cfg);
    cfg.queue = queue;
    cfg.preempt = pc;
    cfg.seed = seed;
    sl_sched_t *s = NULL;
    char err[256];
    assert_int_equal(sl_sched_create(&cfg, cl, &s, err, sizeof err), 0);
    return s;
}

static seen_t run(sl_sched_t *s, int64_t now) {
    seen_t r;
    memset(&r, 0, sizeof r);
    sl_sched_run(s, now, &OPS, &r, NULL);
    assert_int_equal(sl_sched_check(s), 0);
    return r;
}

static sl_job_spec_t elastic(uint64_t id, int t, int32_t n, int32_t m, int gpus) {
    sl_job_spec_t sp = tu_spec(id, t, n, tu_req("1", "1Gi", gpus, ""));
    sp.min_tasks = m;
    return sp;
}

/* Starts at what fits (>= min), grows when a job ends, not while another
 * waits for room, and up to ntasks only. */
static void test_elastic_grows_into_freed_capacity(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    tu_add_nodes(cl, "n", 2, "16", "64Gi", 4, "A100", "80Gi", NULL);
    sl_sched_t *s = make(cl, "fifo", (sl_preempt_config_t){.grow = true}, 1);
    int t = tu_tenant_add(s, "a", 1, TU_NO_QUOTA);
    tu_submit(s, tu_spec(1, t, 1, tu_req("1", "1Gi", 4, "")));
    tu_submit(s, tu_spec(2, t, 1, tu_req("1", "1Gi", 2, "")));
    tu_submit(s, elastic(3, t, 6, 2, 1));
    seen_t r = run(s, 0);
    assert_int_equal(r.starts.n, 3);
    const sl_job_t *e = sl_sched_job(s, 3);
    assert_int_equal(sl_job_ntasks_placed(e), 2);
    /* A rigid 4-GPU job waits: nothing grows while it does. */
    tu_submit(s, tu_spec(4, t, 1, tu_req("1", "1Gi", 4, "")));
    assert_int_equal(sl_sched_finish(s, 2, 5 * SEC), 0);
    r = run(s, 5 * SEC);
    assert_int_equal(r.nrsz, 0);
    assert_int_equal(sl_job_ntasks_placed(e), 2);
    assert_int_equal(sl_sched_cancel(s, 4, 6 * SEC), 0);
    r = run(s, 6 * SEC);
    assert_int_equal(r.nrsz, 1);
    assert_int_equal(r.rsz[0].job, 3);
    assert_int_equal(r.rsz[0].from, 2);
    assert_int_equal(r.rsz[0].to, 4);
    assert_int_equal(sl_job_ntasks_placed(e), 4);
    for (int32_t i = 0; i < 2; i++)
        assert_memory_equal(sl_job_place(e, 2 + i), &r.pls[0][i], sizeof(sl_place_t));
    assert_int_equal(sl_sched_finish(s, 1, 7 * SEC), 0);
    r = run(s, 7 * SEC);
    assert_int_equal(r.rsz[0].to, 6); /* never past ntasks */
    r = run(s, 8 * SEC);
    assert_int_equal(r.nrsz, 0);
    const sl_size_change_t *h;
    size_t nh = sl_job_size_history(e, &h);
    assert_int_equal(nh, 3);
    assert_int_equal(h[0].ntasks, 2);
    assert_int_equal(h[1].ntasks, 4);
    assert_int_equal(h[1].at_us, 6 * SEC);
    assert_int_equal(h[2].ntasks, 6);
    assert_true(sl_job_attained_gpu_s(e, 8 * SEC) > 2 * 6 + 4 * 1 + 6 * 1 - 0.01);
    assert_int_equal(sl_sched_finish(s, 3, 9 * SEC), 0);
    nh = sl_job_size_history(e, &h);
    assert_int_equal(nh, 4);
    assert_int_equal(h[3].ntasks, 0);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

/* The tenant's quota caps a grow. */
static void test_elastic_grow_within_quota(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    tu_add_nodes(cl, "n", 2, "16", "64Gi", 4, "A100", "80Gi", NULL);
    sl_sched_t *s = make(cl, "fifo", (sl_preempt_config_t){.grow = true}, 1);
    int t = tu_tenant_add(s, "a", 1, (sl_res_t){0, 0, 5000});
    tu_submit(s, tu_spec(1, t, 1, tu_req("1", "1Gi", 4, "")));
    run(s, 0);
    tu_submit(s, elastic(2, t, 4, 1, 1));
    seen_t r = run(s, SEC);
    assert_int_equal(sl_job_ntasks_placed(sl_sched_job(s, 2)), 1);
    assert_int_equal(sl_sched_finish(s, 1, 2 * SEC), 0);
    r = run(s, 2 * SEC);
    assert_int_equal(r.nrsz, 1);
    assert_int_equal(r.rsz[0].to, 4); /* 4 GPUs: within the quota of 5 */
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

/* A tenant owed its share shrinks another tenant's elastic job first. */
static void test_elastic_shrinks_for_reclaim(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    tu_add_nodes(cl, "n", 1, "16", "64Gi", 8, "A100", "80Gi", NULL);
    sl_sched_t *s = make(cl, "drf", (sl_preempt_config_t){.reclaim = true, .grow = true}, 1);
    int a = tu_tenant_add(s, "a", 1, TU_NO_QUOTA), b = tu_tenant_add(s, "b", 1, TU_NO_QUOTA);
    tu_submit(s, elastic(1, a, 8, 2, 1));
    seen_t r = run(s, 0);
    assert_int_equal(sl_job_ntasks_placed(sl_sched_job(s, 1)), 8);
    tu_submit(s, tu_spec(2, b, 1, tu_req("1", "1Gi", 3, "")));
    r = run(s, SEC);
    assert_int_equal(r.npre, 0);
    assert_int_equal(r.nrsz, 1);
    assert_int_equal(r.rsz[0].from, 8);
    assert_int_equal(r.rsz[0].to, 5);
    assert_int_equal(r.rsz[0].reason, SL_PREEMPT_RECLAIM);
    assert_int_equal(sl_sched_stop_done(s, 1, 2 * SEC), 0);
    r = run(s, 3 * SEC);
    assert_int_equal(r.starts.v[0], 2);
    assert_int_equal(r.nrsz, 0); /* full: nothing to grow into */
    /* Job 2 ends: the elastic job grows back. */
    assert_int_equal(sl_sched_finish(s, 2, 4 * SEC), 0);
    r = run(s, 4 * SEC);
    assert_int_equal(r.nrsz, 1);
    assert_int_equal(r.rsz[0].to, 8);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

/* A random walk of arrivals, ends, preemptions (grace: one step) and
 * grows; the invariants after each step. */
static void test_elastic_random_walk(void **state) {
    (void)state;
    for (uint64_t seed = 1; seed <= 60; seed++) {
        sl_rng_t rng;
        sl_rng_seed(&rng, seed);
        sl_cluster_t *cl = tu_cluster();
        tu_add_nodes(cl, "n", 1 + (int)sl_rng_below(&rng, 4), "64", "256Gi", 8, "A100", "80Gi", NULL);
        sl_sched_t *s = make(cl, sl_rng_below(&rng, 2) ? "drf" : "fifo",
                             (sl_preempt_config_t){.priority = true, .reclaim = true, .grow = true},
                             seed);
        int tn[2] = {tu_tenant_add(s, "a", 1, TU_NO_QUOTA), tu_tenant_add(s, "b", 2, TU_NO_QUOTA)};
        sl_prio_class_spec_t lo = {"low", 0, false, true}, hi = {"high", 5, true, true};
        int cls[2] = {sl_sched_add_class(s, &lo), sl_sched_add_class(s, &hi)};
        uint64_t id = 1;
        uint64_t stopping[256];
        size_t nstop = 0;
        for (int step = 0; step < 60; step++) {
            int64_t now = step * SEC;
            for (size_t i = 0; i < nstop; i++) {
                const sl_job_t *j = sl_sched_job(s, stopping[i]);
                if (sl_job_stopping(j)) assert_int_equal(sl_sched_stop_done(s, stopping[i], now), 0);
            }
            nstop = 0;
            if (sl_rng_below(&rng, 2)) {
                int32_t n = 1 + (int32_t)sl_rng_below(&rng, 6);
                sl_job_spec_t sp = elastic(id, tn[sl_rng_below(&rng, 2)], n,
                                           1 + (int32_t)sl_rng_below(&rng, (uint64_t)n),
                                           1 + (int)sl_rng_below(&rng, 2));
                sp.prio_class = cls[sl_rng_below(&rng, 4) == 0];
                sp.submit_us = now;
                tu_submit(s, sp);
                id++;
            }
            if (id > 1 && sl_rng_below(&rng, 3) == 0) {
                uint64_t k = 1 + sl_rng_below(&rng, id - 1);
                const sl_job_t *j = sl_sched_job(s, k);
                if (sl_job_state(j) == SL_JOB_RUNNING) assert_int_equal(sl_sched_finish(s, k, now), 0);
            }
            /* Sizes before the run, to check the shrinks against. */
            int32_t before[512] = {0};
            for (uint64_t k = 1; k < id && k < 512; k++)
                before[k] = sl_job_ntasks_placed(sl_sched_job(s, k));
            seen_t r = run(s, now);
            for (size_t i = 0; i < r.nrsz; i++) {
                const sl_job_t *j = sl_sched_job(s, r.rsz[i].job);
                const sl_job_spec_t *js = sl_job_spec(j);
                assert_true(r.rsz[i].to >= js->min_tasks && r.rsz[i].to <= js->ntasks);
                if (r.rsz[i].to < r.rsz[i].from) {
                    assert_int_equal(r.rsz[i].from, before[r.rsz[i].job]);
                    assert_int_equal(sl_job_target_tasks(j), r.rsz[i].to);
                    stopping[nstop++] = r.rsz[i].job;
                } else {
                    assert_int_equal(sl_job_ntasks_placed(j), r.rsz[i].to);
                    for (int32_t k = r.rsz[i].from; k < r.rsz[i].to; k++)
                        assert_memory_equal(sl_job_place(j, k), &r.pls[i][k - r.rsz[i].from],
                                            sizeof(sl_place_t));
                }
            }
            for (uint64_t k = 1; k < id; k++) {
                const sl_job_t *j = sl_sched_job(s, k);
                if (sl_job_state(j) != SL_JOB_RUNNING) continue;
                int32_t m = sl_job_spec(j)->min_tasks;
                assert_true(sl_job_ntasks_placed(j) >= m && sl_job_ntasks_placed(j) <= sl_job_spec(j)->ntasks);
                if (sl_job_stopping(j) && sl_job_target_tasks(j) == 0) stopping[nstop++] = k;
            }
        }
        sl_sched_destroy(s);
        sl_cluster_destroy(cl);
    }
}

/* After a restart the caller re-adopts a job it was shrinking and marks
 * the shrink again: the top ranks are stopping (no new preemption picks
 * the job), and stop_done releases exactly them. */
static void test_elastic_resume_shrink_after_restart(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    tu_add_nodes(cl, "n", 2, "16", "64Gi", 4, "A100", "80Gi", NULL);
    sl_sched_t *s = make(cl, "priority", (sl_preempt_config_t){.priority = true, .default_may_preempt = true}, 1);
    int t = tu_tenant_add(s, "a", 1, TU_NO_QUOTA);
    sl_job_spec_t sp = elastic(3, t, 6, 2, 1);
    sl_place_t pls[6];
    for (int i = 0; i < 6; i++)
        pls[i] = (sl_place_t){.node = (uint32_t)(i / 4), .gpu_mask = 1u << (i % 4), .gpu_milli = 1000};
    char err[256];
    assert_int_equal(sl_sched_adopt(s, &sp, pls, 6, 0, err, sizeof err), 0);
    sl_job_spec_t rigid = tu_spec(4, t, 1, tu_req("1", "1Gi", 1, ""));
    rigid.priority = 20; /* never a victim here */
    sl_place_t one = {.node = 1, .gpu_mask = 1u << 2, .gpu_milli = 1000};
    assert_int_equal(sl_sched_adopt(s, &rigid, &one, 1, 0, err, sizeof err), 0);

    assert_int_equal(sl_sched_resume_shrink(s, 99, 4, SEC), SL_ENOENT);
    assert_int_equal(sl_sched_resume_shrink(s, 4, 0, SEC), SL_EINVAL);  /* rigid */
    assert_int_equal(sl_sched_resume_shrink(s, 3, 1, SEC), SL_EINVAL);  /* below min_tasks */
    assert_int_equal(sl_sched_resume_shrink(s, 3, 6, SEC), SL_EINVAL);  /* not a shrink */
    assert_int_equal(sl_sched_resume_shrink(s, 3, 4, SEC), 0);
    assert_int_equal(sl_sched_resume_shrink(s, 3, 3, SEC), SL_ESTATE); /* already stopping */
    const sl_job_t *e = sl_sched_job(s, 3);
    assert_true(sl_job_stopping(e));
    assert_int_equal(sl_job_target_tasks(e), 4);
    assert_int_equal(sl_sched_check(s), 0);

    /* A higher-priority job that needs the node's GPUs: the stopping job is
     * not shrunk a second time; the job waits for the stop in progress. */
    sl_job_spec_t hi = tu_spec(5, t, 1, tu_req("1", "1Gi", 2, ""));
    hi.priority = 10;
    tu_submit(s, hi);
    seen_t r = run(s, 2 * SEC);
    assert_int_equal(r.nrsz, 0);
    assert_int_equal(sl_job_ntasks_placed(e), 6);

    /* Ranks 4 and 5 (node 1, GPUs 0 and 1) end: they and only they go. */
    assert_int_equal(sl_sched_stop_done(s, 3, 3 * SEC), 0);
    assert_false(sl_job_stopping(e));
    assert_int_equal(sl_job_ntasks_placed(e), 4);
    const sl_node_t *n1 = sl_cluster_node(cl, 1);
    assert_int_equal(n1->gpu_free[0], 1000);
    assert_int_equal(n1->gpu_free[1], 1000);
    assert_int_equal(n1->gpu_free[2], 0);
    assert_int_equal(sl_sched_check(s), 0);
    r = run(s, 3 * SEC);
    assert_int_equal(r.starts.n, 1);
    assert_int_equal(r.starts.v[0], 5);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_elastic_grows_into_freed_capacity, tu_teardown),
        cmocka_unit_test_teardown(test_elastic_grow_within_quota, tu_teardown),
        cmocka_unit_test_teardown(test_elastic_shrinks_for_reclaim, tu_teardown),
        cmocka_unit_test_teardown(test_elastic_random_walk, tu_teardown),
        cmocka_unit_test_teardown(test_elastic_resume_shrink_after_restart, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
