/*
 * test_queue.c - queue policies: the registry, fifo, priority, DRF (the
 * NSDI'11 paper's example, weighted and not) and the seed's weighted fair
 * queue (wait_time / normalised tenant weight), observed through the order
 * in which a cycle starts jobs and through sl_sched_foreach.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define GB (INT64_C(1) << 30)

static void submit(sl_sched_t *s, uint64_t id, int tenant, int prio, int64_t submit_us,
                   sl_task_req_t task) {
    sl_job_spec_t sp = {.id = id, .tenant = tenant, .priority = prio, .submit_us = submit_us,
                        .ntasks = 1, .task = task};
    char err[256];
    assert_int_equal(sl_sched_submit(s, &sp, err, sizeof err), 0);
}

static void test_queue_registry_lists_policies(void **state) {
    (void)state;
    const char *names[] = {"fifo", "priority", "drf", "wfq", "las"};
    const sl_queue_policy_t *const *l = sl_queue_policy_list();
    size_t n = 0;
    while (l[n]) n++;
    assert_int_equal(n, 5);
    for (size_t i = 0; i < 5; i++) {
        const sl_queue_policy_t *p = sl_queue_policy_find(names[i]);
        assert_non_null(p);
        assert_string_equal(p->name, names[i]);
        assert_non_null(p->help);
        assert_non_null(p->less);
    }
    assert_null(sl_queue_policy_find("lifo"));
    assert_null(sl_queue_policy_find(NULL));

    sl_backfill_kind_t k = SL_BACKFILL_EASY;
    assert_int_equal(sl_backfill_parse("none", &k), 0);
    assert_int_equal(k, SL_BACKFILL_NONE);
    assert_int_equal(sl_backfill_parse("easy", &k), 0);
    assert_int_equal(k, SL_BACKFILL_EASY);
    assert_int_equal(sl_backfill_parse("conservative", &k), SL_EINVAL);
    assert_string_equal(sl_backfill_name(SL_BACKFILL_NONE), "none");
    assert_string_equal(sl_backfill_name(SL_BACKFILL_EASY), "easy");
}

static void test_queue_unknown_policy_is_named(void **state) {
    (void)state;
    sl_cluster_t *cl;
    sl_cluster_create(&cl);
    sl_sched_config_t cfg;
    sl_sched_config_init(&cfg);
    cfg.queue = "lifo";
    sl_sched_t *s = NULL;
    char err[256];
    assert_int_equal(sl_sched_create(&cfg, cl, &s, err, sizeof err), SL_EINVAL);
    assert_null(s);
    assert_non_null(strstr(err, "unknown queue \"lifo\""));
    assert_non_null(strstr(err, "wfq"));
    cfg.queue = "fifo";
    cfg.placement = "foo";
    assert_int_equal(sl_sched_create(&cfg, cl, &s, err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, "unknown placement \"foo\" (known: "));
    cfg.placement = NULL;
    cfg.backfill = "greedy";
    assert_int_equal(sl_sched_create(&cfg, cl, &s, err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, "greedy"));
    sl_cluster_destroy(cl);
}

/* Jobs of three tenants with mixed submit times and priorities; a cluster
 * big enough for all, so the start order is the queue order. */
static void check_order(const char *queue, const uint64_t *expect, size_t n) {
    sl_cluster_t *cl;
    sl_cluster_create(&cl);
    tu_add_nodes(cl, "n", 1, "64", "64Gi", 0, NULL, NULL, NULL);
    sl_sched_t *s = tu_sched_create(cl, queue, "none");
    int a = tu_tenant_add(s, "a", 1, TU_NO_QUOTA), b = tu_tenant_add(s, "b", 1, TU_NO_QUOTA);
    int c = tu_tenant_add(s, "c", 1, TU_NO_QUOTA);
    sl_task_req_t t = tu_req("1", "1Gi", 0, "");
    submit(s, 1, a, 0, 30, t);
    submit(s, 2, b, 5, 40, t);
    submit(s, 3, c, 0, 10, t);
    submit(s, 4, a, 9, 50, t);
    submit(s, 5, b, 0, 20, t);
    submit(s, 6, c, 0, 10, t);
    submit(s, 7, a, 0, 30, t);

    tu_ids_t fe = {0};
    sl_sched_foreach(s, SL_JOB_PENDING, tu_ids_each, &fe);
    assert_int_equal(fe.n, n);
    for (size_t i = 0; i < n; i++) assert_int_equal(fe.v[i], expect[i]);

    tu_ids_t o = {0};
    sl_cycle_stats_t st;
    assert_int_equal(sl_sched_cycle(s, 100, tu_ids_on_start, &o, &st), (int)n);
    assert_int_equal(st.started, (int)n);
    assert_int_equal(st.tried, (int)n);
    assert_int_equal(st.reserved_job, -1);
    assert_int_equal(o.n, n);
    for (size_t i = 0; i < n; i++) assert_int_equal(o.v[i], expect[i]);
    assert_int_equal(sl_sched_check(s), 0);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

static void test_queue_fifo_order(void **state) {
    (void)state;
    /* Across tenants by submit time then id; within a tenant its queue is
     * (priority desc, submit, id), so a's job 4 (priority 9) heads a's
     * queue and is compared by its submit time 50. */
    const uint64_t expect[] = {3, 6, 2, 5, 4, 1, 7};
    check_order("fifo", expect, 7);
}

static void test_queue_priority_order(void **state) {
    (void)state;
    const uint64_t expect[] = {4, 2, 3, 6, 5, 1, 7};
    check_order("priority", expect, 7);
}

/* The DRF paper's example (Ghodsi et al., NSDI'11, Sec. 4): 9 CPUs and
 * 18 GB; user A's tasks need <1 CPU, 4 GB>, B's <3 CPUs, 1 GB>. All jobs
 * are submitted at once, so equal shares fall to the lower id (A's). With
 * backfill none the cycle stops at the first job that does not fit, as
 * progressive filling stops when the next task of the least user fails. */
static void drf_paper(int32_t weight_a, int expect_a, int expect_b) {
    sl_cluster_t *cl;
    sl_cluster_create(&cl);
    tu_add_nodes(cl, "n", 1, "9", "18G", 0, NULL, NULL, NULL);
    sl_sched_t *s = tu_sched_create(cl, "drf", "none");
    int a = tu_tenant_add(s, "A", weight_a, TU_NO_QUOTA), b = tu_tenant_add(s, "B", 1, TU_NO_QUOTA);
    sl_task_req_t ta = tu_req("1", "4G", 0, ""), tb = tu_req("3", "1G", 0, "");
    for (int i = 0; i < 10; i++) {
        submit(s, 100 + (uint64_t)i, a, 0, 0, ta);
        submit(s, 200 + (uint64_t)i, b, 0, 0, tb);
    }
    sl_cycle_stats_t st;
    sl_sched_cycle(s, 1000, NULL, NULL, &st);
    size_t pa, ra, pb, rb;
    sl_sched_tenant_jobs(s, a, &pa, &ra);
    sl_sched_tenant_jobs(s, b, &pb, &rb);
    assert_int_equal(ra, expect_a);
    assert_int_equal(rb, expect_b);
    assert_int_equal(pa + ra, 10);
    assert_int_equal(pb + rb, 10);
    assert_int_equal(st.started, expect_a + expect_b);
    sl_res_t ua = sl_sched_tenant_usage(s, a);
    assert_int_equal(ua.cpu_milli, expect_a * 1000);
    assert_int_equal(ua.mem_bytes, expect_a * INT64_C(4000000000));
    /* The shares the cycle equalised. */
    double sa = sl_sched_tenant_share(s, a), sb = sl_sched_tenant_share(s, b);
    assert_true(sa > 0 && sb > 0);
    assert_true(sa / sb > 0.6 && sa / sb < 1.5);
    assert_int_equal(sl_sched_check(s), 0);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

static void test_queue_drf_paper_example(void **state) {
    (void)state;
    drf_paper(1, 3, 2);
}

static void test_queue_drf_weighted_paper_example(void **state) {
    (void)state;
    drf_paper(2, 4, 1);
}

static void test_queue_drf_share_definition(void **state) {
    (void)state;
    sl_cluster_t *cl;
    sl_cluster_create(&cl);
    tu_add_nodes(cl, "g", 2, "32", "128Gi", 4, "A100", "80Gi", NULL);
    sl_sched_t *s = tu_sched_create(cl, "drf", "none");
    int a = tu_tenant_add(s, "a", 2, TU_NO_QUOTA), b = tu_tenant_add(s, "b", 1, TU_NO_QUOTA);
    assert_true(sl_sched_tenant_share(s, a) == 0.0);
    submit(s, 1, a, 0, 0, tu_req("4", "8Gi", 2, ""));   /* GPU 2/8 dominant */
    submit(s, 2, b, 0, 0, tu_req("16", "8Gi", 0, ""));  /* CPU 16/64 dominant */
    sl_sched_cycle(s, 1, NULL, NULL, NULL);
    assert_true(sl_sched_tenant_share(s, a) == 0.25 / 2);
    assert_true(sl_sched_tenant_share(s, b) == 0.25);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

/* The seed: sorted(tasks, key = wait_time / normalized[tenant]) with
 * normalized = w / sum(w); the largest key goes first (see queue_wfq.c). */
typedef struct wjob {
    uint64_t id;
    int tenant;
    int64_t submit_us;
} wjob_t;

static double wfq_key(const wjob_t *j, const int32_t *w, const bool *pending_tenant, int nt,
                      int64_t now) {
    double sum = 0;
    for (int i = 0; i < nt; i++)
        if (pending_tenant[i]) sum += w[i];
    double normalized = w[j->tenant] / sum;
    return (double)(now - j->submit_us) / normalized;
}

static void test_queue_wfq_order_by_wait_over_normalised_weight(void **state) {
    (void)state;
    const int32_t w[3] = {1, 2, 5};
    const wjob_t jobs[] = {
        {1, 0, 900}, {2, 0, 700}, {3, 1, 500}, {4, 1, 100}, {5, 2, 0},
        {6, 2, 600}, {7, 0, 850}, {8, 1, 800}, {9, 2, 300}, {10, 0, 950},
    };
    const size_t n = sizeof jobs / sizeof jobs[0];
    const int64_t now = 1000;
    bool pend[3] = {true, true, true};

    /* Expected: key desc, ties by submit then id, as the seed defines. */
    uint64_t expect[16];
    bool used[16] = {false};
    for (size_t k = 0; k < n; k++) {
        int best = -1;
        for (size_t i = 0; i < n; i++) {
            if (used[i]) continue;
            if (best < 0) {
                best = (int)i;
                continue;
            }
            double ki = wfq_key(&jobs[i], w, pend, 3, now), kb = wfq_key(&jobs[best], w, pend, 3, now);
            double tol = 1e-9 * (ki > kb ? ki : kb);
            if (ki > kb + tol ||
                (ki > kb - tol && (jobs[i].submit_us < jobs[best].submit_us ||
                                   (jobs[i].submit_us == jobs[best].submit_us &&
                                    jobs[i].id < jobs[best].id))))
                best = (int)i;
        }
        used[best] = true;
        expect[k] = jobs[best].id;
    }
    /* The keys: wait 100 w1 -> 800, job 3: 500/(2/8) = 2000, job 5: 1000/(5/8) = 1600 ... */
    assert_int_equal(expect[0], 4); /* 900 / (2/8) = 3600 */

    sl_cluster_t *cl;
    sl_cluster_create(&cl);
    tu_add_nodes(cl, "n", 1, "1", "1Gi", 0, NULL, NULL, NULL); /* one job at a time */
    sl_sched_t *s = tu_sched_create(cl, "wfq", "none");
    assert_int_equal(tu_tenant_add(s, "t0", w[0], TU_NO_QUOTA), 0);
    assert_int_equal(tu_tenant_add(s, "t1", w[1], TU_NO_QUOTA), 1);
    assert_int_equal(tu_tenant_add(s, "t2", w[2], TU_NO_QUOTA), 2);
    for (size_t i = 0; i < n; i++)
        submit(s, jobs[i].id, jobs[i].tenant, 0, jobs[i].submit_us, tu_req("1", "1Gi", 0, ""));

    /* One job fits at a time; finishing it leaves the queue to order the
     * rest at the same now, so the start order is the WFQ order. The
     * normalised weights change when a tenant runs dry, which (being a
     * common factor) must not change the order. */
    for (size_t k = 0; k < n; k++) {
        tu_ids_t o = {0};
        assert_int_equal(sl_sched_cycle(s, now, tu_ids_on_start, &o, NULL), 1);
        assert_int_equal(o.v[0], expect[k]);
        assert_int_equal(sl_sched_check(s), 0);
        assert_int_equal(sl_sched_finish(s, o.v[0], now), 0);
    }
    assert_int_equal(sl_sched_pending_count(s), 0);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

static void test_queue_wfq_ties_and_waiting(void **state) {
    (void)state;
    sl_cluster_t *cl;
    sl_cluster_create(&cl);
    tu_add_nodes(cl, "n", 1, "8", "8Gi", 0, NULL, NULL, NULL);
    sl_sched_t *s = tu_sched_create(cl, "wfq", "none");
    int a = tu_tenant_add(s, "a", 1, TU_NO_QUOTA), b = tu_tenant_add(s, "b", 2, TU_NO_QUOTA);
    /* a waited 100 with weight 1, b waited 200 with weight 2: equal keys;
     * the earlier submit (b's, at 0) wins. Job 3 was submitted after now:
     * it counts as having waited 0 and goes last. */
    submit(s, 1, a, 0, 100, tu_req("1", "1Gi", 0, ""));
    submit(s, 2, b, 0, 0, tu_req("1", "1Gi", 0, ""));
    submit(s, 3, a, 0, 500, tu_req("1", "1Gi", 0, ""));
    tu_ids_t o = {0};
    assert_int_equal(sl_sched_cycle(s, 200, tu_ids_on_start, &o, NULL), 3);
    assert_int_equal(o.v[0], 2);
    assert_int_equal(o.v[1], 1);
    assert_int_equal(o.v[2], 3);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_queue_registry_lists_policies, tu_teardown),
        cmocka_unit_test_teardown(test_queue_unknown_policy_is_named, tu_teardown),
        cmocka_unit_test_teardown(test_queue_fifo_order, tu_teardown),
        cmocka_unit_test_teardown(test_queue_priority_order, tu_teardown),
        cmocka_unit_test_teardown(test_queue_drf_paper_example, tu_teardown),
        cmocka_unit_test_teardown(test_queue_drf_weighted_paper_example, tu_teardown),
        cmocka_unit_test_teardown(test_queue_drf_share_definition, tu_teardown),
        cmocka_unit_test_teardown(test_queue_wfq_order_by_wait_over_normalised_weight, tu_teardown),
        cmocka_unit_test_teardown(test_queue_wfq_ties_and_waiting, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
