/*
 * test_preempt.c - preemption in the core (sluice/preempt.h), case by case:
 * a high-priority job preempts exactly the lower-priority jobs it needs,
 * waits for them to stop (resources are freed only by sl_sched_stop_done)
 * and then starts before the queue order; never equal priorities, never
 * for a job that would still not fit; elastic jobs shrink (highest ranks)
 * before whole jobs go; the rate bound and the protection of often
 * preempted jobs hold; no job is preempted twice for the same waiting job;
 * a drain's deadline evicts; the las queue orders by attained service and
 * preempts by it. Randomised properties are in test_preempt_random.c,
 * reclaim in test_preempt_reclaim.c, growth in test_elastic.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define SEC INT64_C(1000000)

/* What a run reported. */
typedef struct seen {
    sl_preemption_t pre[64];
    size_t npre;
    sl_resize_t rsz[64];
    size_t nrsz;
    tu_ids_t starts;
} seen_t;

static void on_pre(void *ud, const sl_preemption_t *p) {
    seen_t *s = ud;
    if (s->npre < 64) s->pre[s->npre++] = *p;
}

static void on_rsz(void *ud, const sl_resize_t *r) {
    seen_t *s = ud;
    if (s->nrsz < 64) {
        s->rsz[s->nrsz] = *r;
        s->rsz[s->nrsz++].pls = NULL; /* valid during the callback only */
    }
}

static void on_st(void *ud, const sl_job_t *j) {
    tu_ids_on_start(&((seen_t *)ud)->starts, j);
}

static const sl_cycle_ops_t OPS = {on_st, on_pre, on_rsz};

static sl_sched_t *make(sl_cluster_t *cl, const char *queue, sl_preempt_config_t pc) {
    sl_sched_config_t cfg;
    sl_sched_config_init(&cfg);
    cfg.queue = queue;
    cfg.placement = "firstfit";
    cfg.preempt = pc;
    sl_sched_t *s = NULL;
    char err[256];
    assert_int_equal(sl_sched_create(&cfg, cl, &s, err, sizeof err), 0);
    return s;
}

static int add_class(sl_sched_t *s, const char *name, int32_t v, bool may, bool pre) {
    sl_prio_class_spec_t c = {name, v, may, pre};
    int id = sl_sched_add_class(s, &c);
    assert_true(id >= 1);
    return id;
}

static void submit(sl_sched_t *s, uint64_t id, int t, int cls, int32_t n, int32_t m, int gpus) {
    sl_job_spec_t sp = tu_spec(id, t, n, tu_req("1", "1Gi", gpus, ""));
    sp.min_tasks = m;
    sp.prio_class = cls;
    tu_submit(s, sp);
}

static seen_t run(sl_sched_t *s, int64_t now) {
    seen_t r;
    memset(&r, 0, sizeof r);
    sl_sched_run(s, now, &OPS, &r, NULL);
    assert_int_equal(sl_sched_check(s), 0);
    return r;
}

/* Two nodes of 4 GPUs full of one-GPU low jobs; a 4-GPU high job takes
 * exactly the four jobs of one node, waits, and starts once they ended. */
static void test_preempt_takes_one_node_and_waits(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    tu_add_nodes(cl, "n", 2, "16", "64Gi", 4, "A100", "80Gi", NULL);
    sl_preempt_config_t pc = {.priority = true};
    sl_sched_t *s = make(cl, "fifo", pc);
    int t = tu_tenant_add(s, "a", 1, TU_NO_QUOTA);
    int lo = add_class(s, "low", 0, false, true), hi = add_class(s, "high", 10, true, false);
    assert_int_equal(sl_sched_class_find(s, "high"), hi);
    assert_int_equal(sl_sched_class(s, hi)->value, 10);
    for (uint64_t id = 1; id <= 8; id++) submit(s, id, t, lo, 1, 0, 1);
    seen_t r = run(s, 0);
    assert_int_equal(r.starts.n, 8);
    submit(s, 100, t, hi, 1, 0, 4);
    assert_int_equal(sl_job_spec(sl_sched_job(s, 100))->priority, 10);
    r = run(s, 10 * SEC);
    assert_int_equal(r.npre, 4);
    uint32_t node = sl_job_place(sl_sched_job(s, r.pre[0].victim), 0)->node;
    for (size_t i = 0; i < r.npre; i++) {
        assert_int_equal(r.pre[i].preemptor, 100);
        assert_int_equal(r.pre[i].reason, SL_PREEMPT_PRIORITY);
        assert_int_equal(r.pre[i].gpu_milli, 1000);
        assert_true(r.pre[i].lost_gpu_s > 9.9 && r.pre[i].lost_gpu_s < 10.1);
        const sl_job_t *v = sl_sched_job(s, r.pre[i].victim);
        assert_int_equal(sl_job_place(v, 0)->node, node);
        assert_true(sl_job_stopping(v));
        assert_int_equal(sl_job_target_tasks(v), 0);
        assert_int_equal(sl_job_state(v), SL_JOB_RUNNING); /* holds until stopped */
    }
    assert_int_equal(sl_job_victims_left(sl_sched_job(s, 100)), 4);
    /* Nothing freed yet: no start, and no second preemption for job 100. */
    r = run(s, 11 * SEC);
    assert_int_equal(r.npre, 0);
    assert_int_equal(r.starts.n, 0);
    assert_int_equal(sl_sched_stop_done(s, 1000, 12 * SEC), SL_ENOENT);
    assert_int_equal(sl_sched_stop_done(s, 100, 12 * SEC), SL_ESTATE);
    /* Stop the victims: the preemptor starts in the next run. */
    size_t k = 0;
    for (uint64_t id = 1; id <= 8; id++)
        if (sl_job_stopping(sl_sched_job(s, id))) {
            assert_int_equal(sl_sched_stop_done(s, id, 12 * SEC), 0);
            const sl_job_t *v = sl_sched_job(s, id);
            assert_int_equal(sl_job_state(v), SL_JOB_PENDING);
            assert_int_equal(sl_job_spec(v)->submit_us, (int64_t)id); /* original submit */
            assert_int_equal(sl_job_preempt_count(v), 1);
            assert_non_null(strstr(sl_job_reason(v), "preempted"));
            k++;
        }
    assert_int_equal(k, 4);
    assert_int_equal(sl_job_victims_left(sl_sched_job(s, 100)), 0);
    r = run(s, 13 * SEC);
    assert_int_equal(r.starts.n, 1);
    assert_int_equal(r.starts.v[0], 100);
    assert_int_equal(r.npre, 0); /* the high job is not preemptible; the low ones may not preempt */
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

/* Equal priorities are never preempted, and nothing is preempted for a job
 * that would not fit even after every lower-priority job left. */
static void test_preempt_never_equal_nor_useless(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    tu_add_nodes(cl, "n", 2, "16", "64Gi", 4, "A100", "80Gi", NULL);
    sl_preempt_config_t pc = {.priority = true};
    sl_sched_t *s = make(cl, "fifo", pc);
    int t = tu_tenant_add(s, "a", 1, TU_NO_QUOTA);
    int lo = add_class(s, "low", 0, false, true), mid = add_class(s, "mid", 5, true, true);
    submit(s, 1, t, mid, 1, 0, 4); /* node 0, same priority as the preemptor below */
    submit(s, 2, t, lo, 1, 0, 4);  /* node 1 */
    run(s, 0);
    submit(s, 3, t, mid, 1, 0, 4);
    seen_t r = run(s, SEC);
    assert_int_equal(r.npre, 1);
    assert_int_equal(r.pre[0].victim, 2);
    assert_int_equal(sl_sched_stop_done(s, 2, 2 * SEC), 0);
    r = run(s, 3 * SEC);
    assert_int_equal(r.starts.n, 1);
    assert_int_equal(r.starts.v[0], 3);
    /* Now both nodes hold mid jobs: a mid job of 2 x 4 GPUs finds no victim. */
    submit(s, 4, t, mid, 2, 0, 4);
    r = run(s, 4 * SEC);
    assert_int_equal(r.npre, 0);
    /* A high job of 2 x 4 GPUs with only one node of lower priority. */
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);

    cl = tu_cluster();
    tu_add_nodes(cl, "n", 2, "16", "64Gi", 4, "A100", "80Gi", NULL);
    s = make(cl, "fifo", pc);
    t = tu_tenant_add(s, "a", 1, TU_NO_QUOTA);
    lo = add_class(s, "low", 0, false, true);
    int hi = add_class(s, "high", 9, true, true);
    mid = add_class(s, "mid", 9, false, true);
    submit(s, 1, t, mid, 1, 0, 4);
    submit(s, 2, t, lo, 1, 0, 4);
    run(s, 0);
    submit(s, 3, t, hi, 2, 0, 4);
    r = run(s, SEC);
    assert_int_equal(r.npre, 0);
    assert_false(sl_job_stopping(sl_sched_job(s, 2)));
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

/* An elastic job shrinks (highest ranks first) before a whole job goes. */
static void test_preempt_shrinks_elastic_first(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    tu_add_nodes(cl, "n", 2, "16", "64Gi", 4, "A100", "80Gi", NULL);
    sl_preempt_config_t pc = {.priority = true};
    sl_sched_t *s = make(cl, "fifo", pc);
    int t = tu_tenant_add(s, "a", 1, TU_NO_QUOTA);
    int lo = add_class(s, "low", 0, false, true), hi = add_class(s, "high", 10, true, false);
    submit(s, 1, t, lo, 1, 0, 4);    /* rigid, one node */
    submit(s, 2, t, lo, 4, 1, 1);    /* elastic 1..4 one-GPU tasks, the other node */
    seen_t r = run(s, 0);
    assert_int_equal(r.starts.n, 2);
    assert_int_equal(sl_job_ntasks_placed(sl_sched_job(s, 2)), 4);
    submit(s, 3, t, hi, 1, 0, 2);
    r = run(s, 5 * SEC);
    assert_int_equal(r.npre, 0);
    assert_int_equal(r.nrsz, 1);
    assert_int_equal(r.rsz[0].job, 2);
    assert_int_equal(r.rsz[0].from, 4);
    assert_int_equal(r.rsz[0].to, 2);
    assert_int_equal(r.rsz[0].preemptor, 3);
    const sl_job_t *e = sl_sched_job(s, 2);
    assert_int_equal(sl_job_target_tasks(e), 2);
    assert_int_equal(sl_job_ntasks_placed(e), 4); /* held until stopped */
    assert_int_equal(sl_sched_stop_done(s, 2, 6 * SEC), 0);
    assert_int_equal(sl_job_ntasks_placed(e), 2);
    assert_false(sl_job_stopping(e));
    const sl_size_change_t *h;
    size_t nh = sl_job_size_history(e, &h);
    assert_int_equal(nh, 2);
    assert_int_equal(h[0].ntasks, 4);
    assert_int_equal(h[1].ntasks, 2);
    assert_int_equal(h[1].at_us, 5 * SEC);
    r = run(s, 7 * SEC);
    assert_int_equal(r.starts.n, 1);
    assert_int_equal(r.starts.v[0], 3);
    /* A 4-GPU high job: node 1 holds the high job 3, so only node 0 (the
     * rigid job) can make room; the elastic job's units are tried first
     * and then put back by the reverse pass. */
    submit(s, 4, t, hi, 1, 0, 4);
    r = run(s, 8 * SEC);
    assert_int_equal(r.npre, 1);
    assert_int_equal(r.pre[0].victim, 1);
    assert_int_equal(r.nrsz, 0);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

/* The rate bound and the protection after repeated preemptions. */
static void test_preempt_rate_and_protection(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    tu_add_nodes(cl, "n", 4, "16", "64Gi", 1, "A100", "80Gi", NULL);
    sl_preempt_config_t pc = {.priority = true, .max_per_minute = 2, .protect_after = 1,
                              .protect_us = 300 * SEC};
    sl_sched_t *s = make(cl, "fifo", pc);
    int t = tu_tenant_add(s, "a", 1, TU_NO_QUOTA);
    int lo = add_class(s, "low", 0, false, true), hi = add_class(s, "high", 10, true, false);
    for (uint64_t id = 1; id <= 4; id++) submit(s, id, t, lo, 1, 0, 1);
    run(s, 0);
    for (uint64_t id = 11; id <= 14; id++) submit(s, id, t, hi, 1, 0, 1);
    seen_t r = run(s, SEC);
    assert_int_equal(r.npre, 2); /* two per minute */
    r = run(s, 30 * SEC);
    assert_int_equal(r.npre, 0);
    r = run(s, 62 * SEC);
    assert_int_equal(r.npre, 2);
    /* All four stop; the high jobs run; the low ones are requeued once. */
    for (uint64_t id = 1; id <= 4; id++) assert_int_equal(sl_sched_stop_done(s, id, 63 * SEC), 0);
    r = run(s, 64 * SEC);
    assert_int_equal(r.starts.n, 4);
    /* The high jobs end; the low ones run again and are now protected. */
    for (uint64_t id = 11; id <= 14; id++) assert_int_equal(sl_sched_finish(s, id, 100 * SEC), 0);
    r = run(s, 100 * SEC);
    assert_int_equal(r.starts.n, 4);
    submit(s, 21, t, hi, 1, 0, 1);
    r = run(s, 200 * SEC);
    assert_int_equal(r.npre, 0);
    assert_int_equal(sl_job_state(sl_sched_job(s, 21)), SL_JOB_PENDING);
    r = run(s, 364 * SEC); /* 300 s after the last preemption: no longer exempt */
    assert_int_equal(r.npre, 1);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

/* The rate bound counts victim jobs: a set larger than it allows is not
 * made at all (half of it would not let the gang fit). */
static void test_preempt_rate_bounds_a_whole_set(void **state) {
    (void)state;
    for (int32_t max = 3; max <= 4; max++) {
        sl_cluster_t *cl = tu_cluster();
        tu_add_nodes(cl, "n", 1, "16", "64Gi", 4, "A100", "80Gi", NULL);
        sl_preempt_config_t pc = {.priority = true, .max_per_minute = max};
        sl_sched_t *s = make(cl, "fifo", pc);
        int t = tu_tenant_add(s, "a", 1, TU_NO_QUOTA);
        int lo = add_class(s, "low", 0, false, true), hi = add_class(s, "high", 10, true, false);
        for (uint64_t id = 1; id <= 4; id++) submit(s, id, t, lo, 1, 0, 1);
        run(s, 0);
        submit(s, 9, t, hi, 1, 0, 4);
        seen_t r = run(s, SEC);
        assert_int_equal(r.npre, max == 3 ? 0 : 4);
        sl_sched_destroy(s);
        sl_cluster_destroy(cl);
    }
}

/* No job is preempted twice for the same waiting job. */
static void test_preempt_not_twice_for_the_same_job(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    tu_add_nodes(cl, "n", 1, "16", "64Gi", 1, "A100", "80Gi", NULL);
    sl_preempt_config_t pc = {.priority = true};
    sl_sched_t *s = make(cl, "fifo", pc);
    int t = tu_tenant_add(s, "a", 1, TU_NO_QUOTA);
    int lo = add_class(s, "low", 0, false, true), hi = add_class(s, "high", 10, true, true);
    submit(s, 1, t, lo, 1, 0, 1);
    run(s, 0);
    submit(s, 2, t, hi, 1, 0, 1);
    seen_t r = run(s, SEC);
    assert_int_equal(r.npre, 1);
    assert_int_equal(sl_sched_stop_done(s, 1, 2 * SEC), 0);
    r = run(s, 3 * SEC);
    assert_int_equal(r.starts.v[0], 2);
    /* Job 2 is requeued (its node failed, say) and job 1 gets the GPU back. */
    assert_int_equal(sl_sched_cancel(s, 2, 4 * SEC), 0);
    assert_int_equal(sl_sched_try_start(s, 1, 4 * SEC), SL_FIT);
    submit(s, 3, t, hi, 1, 0, 1);
    r = run(s, 5 * SEC);
    /* Job 3 is another waiting job: it may preempt job 1. */
    assert_int_equal(r.npre, 1);
    assert_int_equal(r.pre[0].preemptor, 3);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);

    /* The same waiting job: 2 preempts 1, 1 comes back while 2 waits for a
     * requeue, and 2 may not take 1 again. */
    cl = tu_cluster();
    tu_add_nodes(cl, "n", 1, "16", "64Gi", 1, "A100", "80Gi", NULL);
    s = make(cl, "fifo", pc);
    t = tu_tenant_add(s, "a", 1, TU_NO_QUOTA);
    lo = add_class(s, "low", 0, false, true);
    hi = add_class(s, "high", 10, true, true);
    submit(s, 1, t, lo, 1, 0, 1);
    run(s, 0);
    submit(s, 2, t, hi, 1, 0, 1);
    run(s, SEC);
    assert_int_equal(sl_sched_stop_done(s, 1, 2 * SEC), 0);
    run(s, 3 * SEC);                                      /* 2 runs */
    assert_int_equal(sl_sched_requeue(s, 2, 4 * SEC), 0); /* 2 waits again */
    assert_int_equal(sl_sched_try_start(s, 1, 4 * SEC), SL_FIT);
    r = run(s, 5 * SEC);
    assert_int_equal(r.npre, 0);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

/* A drain's deadline: every job on the node is preempted (reason drain),
 * and a finish while stopping counts as the stop. */
static void test_preempt_evict_node(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    tu_add_nodes(cl, "n", 2, "16", "64Gi", 4, "A100", "80Gi", NULL);
    sl_sched_t *s = make(cl, "fifo", (sl_preempt_config_t){0});
    int t = tu_tenant_add(s, "a", 1, TU_NO_QUOTA);
    submit(s, 1, t, 0, 2, 0, 4); /* both nodes */
    submit(s, 2, t, 0, 1, 0, 0); /* CPU only, on node 0 */
    run(s, 0);
    assert_int_equal(sl_cluster_set_state(cl, 0, SL_NODE_DRAINING), 0);
    seen_t r;
    memset(&r, 0, sizeof r);
    assert_int_equal(sl_sched_evict_node(s, 99, SEC, &OPS, &r), SL_ENOENT);
    assert_int_equal(sl_sched_evict_node(s, 0, SEC, &OPS, &r), 2);
    assert_int_equal(r.npre, 2);
    assert_int_equal(r.pre[0].reason, SL_PREEMPT_DRAIN);
    assert_int_equal(r.pre[0].preemptor, 0);
    assert_int_equal(sl_sched_evict_node(s, 0, SEC, &OPS, &r), 0); /* already stopping */
    assert_int_equal(sl_sched_finish(s, 2, 2 * SEC), 0);             /* ended by itself */
    assert_int_equal(sl_sched_stop_done(s, 1, 2 * SEC), 0);
    assert_int_equal(sl_sched_check(s), 0);
    r = run(s, 3 * SEC); /* job 1 needs both nodes; node 0 is draining */
    assert_int_equal(r.starts.n, 0);
    assert_int_equal(sl_cluster_set_state(cl, 0, SL_NODE_UP), 0);
    r = run(s, 4 * SEC);
    assert_int_equal(r.starts.n, 1);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

/* las: jobs of less attained GPU-time go first, and with preemption a
 * waiting job of a lower queue preempts a running one that aged. */
static void test_preempt_las(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    tu_add_nodes(cl, "n", 1, "16", "64Gi", 2, "A100", "80Gi", NULL);
    sl_sched_config_t cfg;
    sl_sched_config_init(&cfg);
    cfg.queue = "las";
    cfg.placement = "firstfit";
    cfg.preempt = (sl_preempt_config_t){.priority = true, .default_may_preempt = true};
    cfg.las_thresholds_gpu_s[0] = 100;
    sl_sched_t *s = NULL;
    char err[256];
    assert_int_equal(sl_sched_create(&cfg, cl, &s, err, sizeof err), 0);
    int t = tu_tenant_add(s, "a", 1, TU_NO_QUOTA);
    submit(s, 1, t, 0, 1, 0, 2);
    seen_t r = run(s, 0);
    assert_int_equal(r.starts.n, 1);
    submit(s, 2, t, 0, 1, 0, 2);
    r = run(s, 10 * SEC); /* job 1 attained 20 GPU-s: same queue, no preemption */
    assert_int_equal(r.npre, 0);
    r = run(s, 60 * SEC); /* 120 GPU-s: queue 1 now; job 2 (queue 0) preempts it */
    assert_int_equal(r.npre, 1);
    assert_int_equal(r.pre[0].victim, 1);
    assert_true(sl_job_attained_gpu_s(sl_sched_job(s, 1), 60 * SEC) > 119.9);
    assert_int_equal(sl_sched_stop_done(s, 1, 61 * SEC), 0);
    r = run(s, 61 * SEC);
    assert_int_equal(r.starts.v[0], 2);
    /* A new job 3 (queue 0) goes before job 1 (queue 1) though submitted later. */
    submit(s, 3, t, 0, 1, 0, 2);
    tu_ids_t order = {.n = 0};
    sl_sched_foreach(s, SL_JOB_PENDING, tu_ids_each, &order);
    assert_int_equal(order.n, 2);
    assert_int_equal(order.v[0], 3);
    assert_int_equal(order.v[1], 1);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

/* Bad configuration and classes are refused with the field named. */
static void test_preempt_config_errors(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    sl_sched_config_t cfg;
    sl_sched_config_init(&cfg);
    cfg.preempt.max_per_minute = -1;
    sl_sched_t *s = NULL;
    char err[256];
    assert_int_equal(sl_sched_create(&cfg, cl, &s, err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, "max_per_minute"));
    sl_sched_config_init(&cfg);
    cfg.las_thresholds_gpu_s[0] = 100;
    cfg.las_thresholds_gpu_s[1] = 50;
    assert_int_equal(sl_sched_create(&cfg, cl, &s, err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, "las_thresholds_gpu_s"));
    s = make(cl, "fifo", (sl_preempt_config_t){0});
    sl_prio_class_spec_t c = {"", 1, true, true};
    assert_int_equal(sl_sched_add_class(s, &c), SL_EINVAL);
    c.name = "default";
    assert_int_equal(sl_sched_add_class(s, &c), SL_EEXIST);
    assert_int_equal(sl_sched_class_find(s, "nope"), SL_ENOENT);
    assert_null(sl_sched_class(s, 5));
    int t = tu_tenant_add(s, "a", 1, TU_NO_QUOTA);
    sl_job_spec_t sp = tu_spec(1, t, 1, tu_req("1", "1Gi", 0, ""));
    sp.prio_class = 3;
    assert_int_equal(sl_sched_submit(s, &sp, err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, "prio_class"));
    assert_string_equal(sl_preempt_reason_name(SL_PREEMPT_RECLAIM), "reclaim");
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_preempt_takes_one_node_and_waits, tu_teardown),
        cmocka_unit_test_teardown(test_preempt_never_equal_nor_useless, tu_teardown),
        cmocka_unit_test_teardown(test_preempt_shrinks_elastic_first, tu_teardown),
        cmocka_unit_test_teardown(test_preempt_rate_and_protection, tu_teardown),
        cmocka_unit_test_teardown(test_preempt_rate_bounds_a_whole_set, tu_teardown),
        cmocka_unit_test_teardown(test_preempt_not_twice_for_the_same_job, tu_teardown),
        cmocka_unit_test_teardown(test_preempt_evict_node, tu_teardown),
        cmocka_unit_test_teardown(test_preempt_las, tu_teardown),
        cmocka_unit_test_teardown(test_preempt_config_errors, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
