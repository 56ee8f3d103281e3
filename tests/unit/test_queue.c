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

/*
 * wfq is start-time fair queueing (policy/queue_wfq.c). A deterministic
 * run: one node of 4 GPUs, tenants a and b with weights 2 and 1 both keep
 * far more 1-GPU jobs queued than fit (each runs exactly its time limit of
 * `lim` seconds), and every job end is followed by a cycle. Returns the
 * GPU-seconds each tenant received in [0, window_s) in got[2]. With
 * b_from_s > 0 tenant b submits nothing before that time (it was idle).
 */
typedef struct wfq_run {
    int64_t end_us[64];
    uint64_t id[64];
    int tenant[64];
    size_t n;
} wfq_run_t;

static void wfq_on_start(void *ud, const sl_job_t *job) {
    wfq_run_t *r = ud;
    assert_true(r->n < 64);
    r->id[r->n] = sl_job_id(job);
    r->tenant[r->n] = sl_job_spec(job)->tenant;
    r->end_us[r->n] = sl_job_start_us(job) + sl_job_spec(job)->time_limit_us;
    r->n++;
}

static void wfq_flood(int64_t window_s, int64_t b_from_s, double got[2]) {
    const int64_t S = 1000000, lim = 100;
    sl_cluster_t *cl;
    sl_cluster_create(&cl);
    tu_add_nodes(cl, "n", 1, "64", "64Gi", 4, "A100", "80Gi", NULL);
    sl_sched_t *s = tu_sched_create(cl, "wfq", "none");
    int t[2] = {tu_tenant_add(s, "a", 2, TU_NO_QUOTA), tu_tenant_add(s, "b", 1, TU_NO_QUOTA)};
    uint64_t next = 1;
    size_t queued[2] = {0, 0};
    wfq_run_t r = {.n = 0};
    got[0] = got[1] = 0;
    int64_t now = 0;
    for (int step = 0; step < 100000 && now < window_s * S; step++) {
        /* Keep each active tenant's queue at 16 jobs (the flood). */
        for (int k = 0; k < 2; k++) {
            if (k == 1 && now < b_from_s * S) continue;
            while (queued[k] < 16) {
                sl_job_spec_t sp = tu_spec(next++, t[k], 1, tu_req("1", "1Gi", 1, NULL));
                sp.submit_us = now;
                sp.time_limit_us = lim * S;
                tu_submit(s, sp);
                queued[k]++;
            }
        }
        size_t before = r.n;
        assert_int_equal(sl_sched_cycle(s, now, wfq_on_start, &r, NULL) >= 0, 1);
        for (size_t i = before; i < r.n; i++) queued[r.tenant[i] == t[0] ? 0 : 1]--;
        /* Advance to the earliest end and finish what ends then. */
        int64_t e = INT64_MAX;
        for (size_t i = 0; i < r.n; i++)
            if (r.end_us[i] < e) e = r.end_us[i];
        assert_true(e != INT64_MAX);
        now = e;
        for (size_t i = 0; i < r.n;) {
            if (r.end_us[i] != now) {
                i++;
                continue;
            }
            int64_t st = r.end_us[i] - lim * S, en = r.end_us[i];
            if (en > window_s * S) en = window_s * S;
            if (en > st) got[r.tenant[i] == t[0] ? 0 : 1] += (double)(en - st) / (double)S;
            assert_int_equal(sl_sched_finish(s, r.id[i], now), 0);
            r.n--;
            r.id[i] = r.id[r.n];
            r.tenant[i] = r.tenant[r.n];
            r.end_us[i] = r.end_us[r.n];
        }
        assert_int_equal(sl_sched_check(s), 0);
    }
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

/* Weights 2:1, both flooding: GPU-time 2:1 within 5% over a long window
 * (200 job lengths). The seed's formula gave the heavier tenant less. */
static void test_queue_wfq_weights_two_to_one(void **state) {
    (void)state;
    double got[2];
    wfq_flood(20000, 0, got);
    assert_true(got[0] > 0 && got[1] > 0);
    double ratio = got[0] / got[1];
    assert_true(ratio > 2.0 * 0.95 && ratio < 2.0 * 1.05);
}

/* b is idle for the first half; when it arrives it gets its 1/3 of the GPUs
 * from then on, not the whole cluster until it has caught up on the half
 * it missed (no banked credit): over the second half a still gets 2:1. */
static void test_queue_wfq_idle_tenant_banks_no_credit(void **state) {
    (void)state;
    double all[2], first[2];
    wfq_flood(20000, 10000, all);
    wfq_flood(10000, 10000, first);
    assert_true(first[1] == 0); /* b was idle */
    double a2 = all[0] - first[0], b2 = all[1] - first[1];
    assert_true(b2 > 0);
    double ratio = a2 / b2;
    assert_true(ratio > 2.0 * 0.95 && ratio < 2.0 * 1.05);
    /* With banked credit b would have had all 4 GPUs for ~10,000 s first. */
}

/* Order: the smallest start tag first; ties (two fresh tenants) by submit
 * time, then id; a start advances only the starter's tag. */
static void test_queue_wfq_tags_order(void **state) {
    (void)state;
    sl_cluster_t *cl;
    sl_cluster_create(&cl);
    tu_add_nodes(cl, "n", 1, "1", "1Gi", 0, NULL, NULL, NULL); /* one job at a time */
    sl_sched_t *s = tu_sched_create(cl, "wfq", "none");
    int a = tu_tenant_add(s, "a", 1, TU_NO_QUOTA), b = tu_tenant_add(s, "b", 3, TU_NO_QUOTA);
    /* Equal cost per job (the whole node for 100 s): a's tag advances by
     * 100 per job, b's by 33.3. */
    for (uint64_t i = 0; i < 4; i++) {
        sl_job_spec_t sp = tu_spec(1 + i, a, 1, tu_req("1", "1Gi", 0, NULL));
        sp.submit_us = (int64_t)i;
        sp.time_limit_us = 100000000;
        tu_submit(s, sp);
        sp = tu_spec(11 + i, b, 1, tu_req("1", "1Gi", 0, NULL));
        sp.submit_us = 10 + (int64_t)i;
        sp.time_limit_us = 100000000;
        tu_submit(s, sp);
    }
    /* a0 (tie at 0, earlier submit), b0 b1 b2 (tags 0, 33, 67 < a's 100),
     * then a1 (100) before b3 (100, later submit), a2, a3. */
    const uint64_t expect[] = {1, 11, 12, 13, 2, 14, 3, 4};
    for (size_t k = 0; k < 8; k++) {
        tu_ids_t o = {0};
        assert_int_equal(sl_sched_cycle(s, 1000, tu_ids_on_start, &o, NULL), 1);
        assert_int_equal(o.v[0], expect[k]);
        assert_int_equal(sl_sched_finish(s, o.v[0], 1000), 0);
    }
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
        cmocka_unit_test_teardown(test_queue_wfq_weights_two_to_one, tu_teardown),
        cmocka_unit_test_teardown(test_queue_wfq_idle_tenant_banks_no_credit, tu_teardown),
        cmocka_unit_test_teardown(test_queue_wfq_tags_order, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
