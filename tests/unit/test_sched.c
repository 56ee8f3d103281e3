/*
 * test_sched.c - the scheduler: tenants, job lifecycle, strict order,
 * never-fitting jobs, elastic jobs, quotas, try_start, adopt, reasons, and
 * a seeded randomised property test that checks, after every step, the
 * scheduler's allocations against a naive reference (plain per-node and
 * per-GPU sums): no over-allocation, gangs all-or-none.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_internal.h" /* sl__sched_set_group_skip: the reference walk */
#include "testutil.h"

#define GI (INT64_C(1) << 30)

static sl_job_spec_t spec(uint64_t id, int tn, int32_t ntasks, sl_task_req_t task) {
    sl_job_spec_t sp = {.id = id, .tenant = tn, .submit_us = (int64_t)id, .ntasks = ntasks,
                        .task = task};
    return sp;
}

static void sub(sl_sched_t *s, sl_job_spec_t sp) {
    char err[256];
    int rc = sl_sched_submit(s, &sp, err, sizeof err);
    if (rc) fprintf(stderr, "submit %llu: %s\n", (unsigned long long)sp.id, err);
    assert_int_equal(rc, 0);
}


static void test_sched_config_defaults(void **state) {
    (void)state;
    sl_sched_config_t cfg;
    sl_sched_config_init(&cfg);
    assert_string_equal(cfg.queue, "fifo");
    assert_string_equal(cfg.backfill, "none");
    assert_null(cfg.placement);
    assert_int_equal(cfg.max_starts_per_cycle, 0);
    assert_int_equal(cfg.max_backfill_tries, SL_SCHED_MAX_BACKFILL_TRIES_DEFAULT);
    assert_int_equal(cfg.max_backfill_tries, 500);
    sl_cluster_t *cl;
    sl_cluster_create(&cl);
    sl_sched_t *s = tu_sched_create(cl, "fifo", "none");
    assert_ptr_equal(sl_sched_cluster(s), cl);
    assert_non_null(sl_sched_workload(s));
    assert_string_equal(sl_sched_place_policy(s)->name, sl_place_policy_default());
    assert_string_equal(sl_sched_queue_policy(s)->name, "fifo");
    assert_int_equal(sl_sched_backfill(s), SL_BACKFILL_NONE);
    assert_non_null(sl_sched_rng(s));
    sl_sched_destroy(s);
    sl_sched_destroy(NULL);
    sl_cluster_destroy(cl);
}

static void test_sched_tenants_add_find_validate(void **state) {
    (void)state;
    sl_cluster_t *cl;
    sl_cluster_create(&cl);
    sl_sched_t *s = tu_sched_create(cl, "drf", "none");
    assert_int_equal(tu_tenant_add(s, "research", 0, TU_NO_QUOTA), 0);
    assert_int_equal(tu_tenant_add(s, "prod", 3, TU_NO_QUOTA), 1);
    sl_tenant_spec_t dup = {.name = "prod", .weight = 1};
    assert_int_equal(sl_sched_add_tenant(s, &dup), SL_EEXIST);
    sl_tenant_spec_t bad = {.name = "", .weight = 1};
    assert_int_equal(sl_sched_add_tenant(s, &bad), SL_EINVAL);
    char longname[80];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    bad.name = longname;
    assert_int_equal(sl_sched_add_tenant(s, &bad), SL_EINVAL);
    bad.name = "neg";
    bad.weight = -1;
    assert_int_equal(sl_sched_add_tenant(s, &bad), SL_EINVAL);
    assert_int_equal(sl_sched_tenant_find(s, "prod"), 1);
    assert_int_equal(sl_sched_tenant_find(s, "nope"), SL_ENOENT);
    assert_int_equal(sl_sched_tenant_count(s), 2);
    assert_string_equal(sl_sched_tenant_name(s, 0), "research");
    assert_null(sl_sched_tenant_name(s, 7));
    assert_int_equal(sl_sched_tenant_weight(s, 0), 1); /* 0 means 1 */
    assert_int_equal(sl_sched_tenant_weight(s, 1), 3);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

static void test_sched_submit_validates_spec(void **state) {
    (void)state;
    sl_cluster_t *cl;
    sl_cluster_create(&cl);
    sl_sched_t *s = tu_sched_create(cl, "fifo", "none");
    int t = tu_tenant_add(s, "a", 1, TU_NO_QUOTA);
    char err[256];
    sl_job_spec_t sp = spec(1, t, 2, tu_req("1", "1Gi", 0, ""));
    assert_int_equal(sl_sched_submit(s, &sp, err, sizeof err), 0);
    assert_int_equal(sl_sched_submit(s, &sp, err, sizeof err), SL_EEXIST);
    assert_non_null(strstr(err, "already exists"));
    sp.id = 2;
    sp.tenant = 9;
    assert_int_equal(sl_sched_submit(s, &sp, err, sizeof err), SL_ENOENT);
    assert_non_null(strstr(err, "tenant"));
    sp.tenant = t;
    sp.ntasks = 0;
    assert_int_equal(sl_sched_submit(s, &sp, err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, "ntasks"));
    sp.ntasks = SL_MAX_TASKS + 1;
    assert_int_equal(sl_sched_submit(s, &sp, err, sizeof err), SL_EINVAL);
    sp.ntasks = 4;
    sp.min_tasks = 5;
    assert_int_equal(sl_sched_submit(s, &sp, err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, "min_tasks"));
    sp.min_tasks = 0;
    sp.time_limit_us = -5;
    assert_int_equal(sl_sched_submit(s, &sp, err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, "time_limit_us"));
    sp.time_limit_us = 0;
    sp.task.gpu_milli = 1500;
    assert_int_equal(sl_sched_submit(s, &sp, err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, "task: gpu_milli"));
    assert_int_equal(sl_sched_pending_count(s), 1);
    assert_null(sl_sched_job(s, 2));
    const sl_job_t *j = sl_sched_job(s, 1);
    assert_non_null(j);
    assert_int_equal(sl_job_state(j), SL_JOB_PENDING);
    assert_string_equal(sl_job_reason(j), "");
    assert_int_equal(sl_job_start_us(j), -1);
    assert_int_equal(sl_job_ntasks_placed(j), 0);
    assert_null(sl_job_place(j, 0));
    assert_int_equal(sl_job_spec(j)->ntasks, 2);
    assert_int_equal(sl_sched_check(s), 0);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

static void test_sched_lifecycle_finish_cancel_forget(void **state) {
    (void)state;
    sl_cluster_t *cl;
    sl_cluster_create(&cl);
    tu_add_nodes(cl, "g", 2, "32", "256Gi", 8, "H100", "80Gi", NULL);
    sl_sched_t *s = tu_sched_create(cl, "fifo", "none");
    int t = tu_tenant_add(s, "a", 1, TU_NO_QUOTA);
    sub(s, spec(1, t, 2, tu_req("16", "128Gi", 4, ""))); /* the seed's Megatron shape */
    sub(s, spec(2, t, 1, tu_req("4", "16Gi", 2, "")));
    sub(s, spec(3, t, 1, tu_req("1", "1Gi", 0, "0.5")));
    tu_ids_t o = {0};
    assert_int_equal(sl_sched_cycle(s, 10, tu_ids_on_start, &o, NULL), 3);
    assert_int_equal(o.n, 3);
    assert_int_equal(o.v[0], 1);
    assert_int_equal(sl_sched_running_count(s), 3);
    assert_int_equal(sl_sched_check(s), 0);
    const sl_job_t *j1 = sl_sched_job(s, 1);
    assert_int_equal(sl_job_state(j1), SL_JOB_RUNNING);
    assert_int_equal(sl_job_status(j1), SL_FIT);
    assert_int_equal(sl_job_start_us(j1), 10);
    assert_int_equal(sl_job_ntasks_placed(j1), 2);
    assert_non_null(sl_job_place(j1, 1));
    assert_null(sl_job_place(j1, 2));
    sl_res_t u = sl_sched_tenant_usage(s, t);
    assert_int_equal(u.gpu_milli, 8000 + 2000 + 500);
    assert_int_equal(u.cpu_milli, 32000 + 4000 + 1000);

    assert_int_equal(sl_sched_finish(s, 1, 20), 0);
    assert_int_equal(sl_sched_finish(s, 1, 20), SL_ESTATE);
    assert_int_equal(sl_sched_finish(s, 99, 20), SL_ENOENT);
    assert_int_equal(sl_job_state(sl_sched_job(s, 1)), SL_JOB_DONE);
    assert_int_equal(sl_sched_cancel(s, 1, 20), SL_ESTATE);
    assert_int_equal(sl_sched_cancel(s, 2, 21), 0);
    assert_int_equal(sl_job_state(sl_sched_job(s, 2)), SL_JOB_CANCELLED);
    assert_int_equal(sl_sched_requeue(s, 2, 21), SL_ESTATE);
    assert_int_equal(sl_sched_check(s), 0);
    u = sl_sched_tenant_usage(s, t);
    assert_int_equal(u.gpu_milli, 500);

    sub(s, spec(4, t, 1, tu_req("1", "1Gi", 0, "")));
    assert_int_equal(sl_sched_forget(s, 4), SL_ESTATE);
    assert_int_equal(sl_sched_forget(s, 3), SL_ESTATE);
    assert_int_equal(sl_sched_cancel(s, 4, 22), 0);
    assert_int_equal(sl_sched_pending_count(s), 0);
    assert_int_equal(sl_sched_forget(s, 4), 0);
    assert_int_equal(sl_sched_forget(s, 4), SL_ENOENT);
    assert_int_equal(sl_sched_forget(s, 1), 0);
    assert_null(sl_sched_job(s, 1));
    assert_int_equal(sl_sched_check(s), 0);
    size_t p, r;
    sl_sched_tenant_jobs(s, t, &p, &r);
    assert_int_equal(p, 0);
    assert_int_equal(r, 1);
    tu_ids_t d = {0};
    sl_sched_foreach(s, SL_JOB_CANCELLED, tu_ids_each, &d);
    assert_int_equal(d.n, 1);
    assert_int_equal(d.v[0], 2);
    sl_sched_destroy(s); /* frees running job 3 and cancelled job 2 */
    sl_cluster_destroy(cl);
}

static void test_sched_requeue_keeps_submit_time(void **state) {
    (void)state;
    sl_cluster_t *cl;
    sl_cluster_create(&cl);
    tu_add_nodes(cl, "g", 1, "8", "32Gi", 0, NULL, NULL, NULL);
    sl_sched_t *s = tu_sched_create(cl, "fifo", "none");
    int t = tu_tenant_add(s, "a", 1, TU_NO_QUOTA);
    sub(s, spec(5, t, 1, tu_req("8", "1Gi", 0, "")));
    assert_int_equal(sl_sched_cycle(s, 100, NULL, NULL, NULL), 1);
    sub(s, spec(6, t, 1, tu_req("8", "1Gi", 0, "")));
    assert_int_equal(sl_sched_requeue(s, 5, 200), 0);
    const sl_job_t *j = sl_sched_job(s, 5);
    assert_int_equal(sl_job_state(j), SL_JOB_PENDING);
    assert_int_equal(sl_job_start_us(j), -1);
    assert_int_equal(sl_job_spec(j)->submit_us, 5);
    assert_non_null(strstr(sl_job_reason(j), "requeued"));
    assert_int_equal(sl_sched_check(s), 0);
    tu_ids_t o = {0};
    assert_int_equal(sl_sched_cycle(s, 300, tu_ids_on_start, &o, NULL), 1);
    assert_int_equal(o.v[0], 5); /* still ahead of job 6 */
    assert_int_equal(sl_job_start_us(j), 300);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

static void test_sched_strict_blocking_backfill_none(void **state) {
    (void)state;
    sl_cluster_t *cl;
    sl_cluster_create(&cl);
    tu_add_nodes(cl, "g", 2, "32", "256Gi", 8, "H100", "80Gi", NULL);
    sl_sched_t *s = tu_sched_create(cl, "fifo", "none");
    int t = tu_tenant_add(s, "a", 1, TU_NO_QUOTA), u = tu_tenant_add(s, "b", 1, TU_NO_QUOTA);
    sub(s, spec(1, t, 1, tu_req("1", "1Gi", 6, "")));
    sub(s, spec(2, t, 2, tu_req("1", "1Gi", 8, ""))); /* needs both nodes whole */
    sub(s, spec(3, u, 1, tu_req("1", "1Gi", 1, ""))); /* would fit */
    sub(s, spec(4, t, 1, tu_req("1", "1Gi", 1, ""))); /* would fit */
    sl_cycle_stats_t st;
    assert_int_equal(sl_sched_cycle(s, 50, NULL, NULL, &st), 1);
    assert_int_equal(st.tried, 2);
    assert_int_equal(st.reserved_job, -1);
    assert_int_equal(st.reserved_at_us, -1);
    const sl_job_t *j2 = sl_sched_job(s, 2), *j3 = sl_sched_job(s, 3), *j4 = sl_sched_job(s, 4);
    assert_int_equal(sl_job_state(j2), SL_JOB_PENDING);
    assert_int_equal(sl_job_status(j2), SL_NOFIT);
    assert_true(strlen(sl_job_reason(j2)) > 0);
    assert_int_equal(sl_job_state(j3), SL_JOB_PENDING);
    assert_int_equal(sl_job_status(j3), SL_WAIT);
    assert_non_null(strstr(sl_job_reason(j3), "waiting behind job 2"));
    assert_non_null(strstr(sl_job_reason(j4), "waiting behind job 2"));
    /* The shared reason belongs to that cycle: a job submitted later has none. */
    sub(s, spec(7, u, 1, tu_req("1", "1Gi", 1, "")));
    assert_string_equal(sl_job_reason(sl_sched_job(s, 7)), "");
    /* Once job 1 ends, job 2 starts first, then the others. */
    assert_int_equal(sl_sched_finish(s, 1, 60), 0);
    tu_ids_t o = {0};
    assert_int_equal(sl_sched_cycle(s, 60, tu_ids_on_start, &o, NULL), 1);
    assert_int_equal(o.v[0], 2);
    /* Job 2 took every GPU: now job 3 is the one blocking, job 4 behind it. */
    assert_int_equal(sl_job_status(j3), SL_NOFIT);
    assert_non_null(strstr(sl_job_reason(j4), "waiting behind job 3"));
    assert_int_equal(sl_sched_check(s), 0);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

static void test_sched_nofit_ever_does_not_block(void **state) {
    (void)state;
    sl_cluster_t *cl;
    sl_cluster_create(&cl);
    tu_add_nodes(cl, "g", 2, "32", "256Gi", 8, "H100", "80Gi", NULL);
    sl_sched_t *s = tu_sched_create(cl, "fifo", "none");
    int t = tu_tenant_add(s, "a", 1, TU_NO_QUOTA);
    sub(s, spec(1, t, 1, tu_req("1", "1Gi", 16, ""))); /* no node has 16 GPUs */
    sub(s, spec(2, t, 1, tu_req("1", "1Gi", 4, "")));
    sub(s, spec(3, t, 1, tu_req("1", "1Gi", 16, ""))); /* same shape: cached */
    sub(s, spec(4, t, 1, tu_req("1", "1Gi", 4, "")));
    sl_cycle_stats_t st;
    assert_int_equal(sl_sched_cycle(s, 1, NULL, NULL, &st), 2);
    assert_int_equal(st.tried, 3); /* job 3 answered from the failed-shape cache */
    const sl_job_t *j1 = sl_sched_job(s, 1), *j3 = sl_sched_job(s, 3);
    assert_int_equal(sl_job_state(j1), SL_JOB_PENDING);
    assert_int_equal(sl_job_status(j1), SL_NOFIT_EVER);
    assert_int_equal(sl_job_status(j3), SL_NOFIT_EVER);
    assert_true(strlen(sl_job_reason(j1)) > 0);
    assert_string_equal(sl_job_reason(j1), sl_job_reason(j3));
    assert_int_equal(sl_job_state(sl_sched_job(s, 4)), SL_JOB_RUNNING);
    assert_int_equal(sl_sched_check(s), 0);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

/* Largest count that fits, computed naively: per-node whole free GPUs. */
static void test_sched_elastic_starts_largest_count(void **state) {
    (void)state;
    static const struct {
        int busy_gpus[4]; /* GPUs taken on each node before the elastic job */
        int32_t min, max;
        int32_t expect; /* 0 = does not start */
    } cases[] = {
        {{0, 0, 0, 0}, 2, 6, 6},   /* all fit */
        {{8, 4, 0, 8}, 2, 10, 3},  /* 1 + 2 tasks of 4 GPUs */
        {{8, 8, 8, 4}, 2, 10, 0},  /* only 1 fits: below min */
        {{8, 8, 8, 4}, 1, 10, 1},
        {{2, 2, 2, 2}, 1, 8, 4},   /* 6 free per node: one 4-GPU task each */
        {{0, 8, 8, 8}, 2, 2, 2},   /* rigid gang of 2 */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        sl_cluster_t *cl;
        sl_cluster_create(&cl);
        tu_add_nodes(cl, "g", 4, "64", "512Gi", 8, "H100", "80Gi", NULL);
        sl_sched_t *s = tu_sched_create(cl, "fifo", "none");
        int t = tu_tenant_add(s, "a", 1, TU_NO_QUOTA);
        sl_place_t pl[4];
        for (uint32_t n = 0; n < 4; n++) {
            if (!cases[c].busy_gpus[n]) continue;
            sl_task_req_t r = tu_req("1", "1Gi", cases[c].busy_gpus[n], "");
            pl[0] = (sl_place_t){.node = n, .gpu_mask = (1u << cases[c].busy_gpus[n]) - 1,
                                 .gpu_milli = 1000};
            sl_job_spec_t sp = spec(100 + n, t, 1, r);
            char err[256];
            assert_int_equal(sl_sched_adopt(s, &sp, pl, 1, 0, err, sizeof err), 0);
        }
        sl_job_spec_t sp = spec(1, t, cases[c].max, tu_req("4", "32Gi", 4, ""));
        sp.min_tasks = cases[c].min;
        sub(s, sp);
        sl_sched_cycle(s, 5, NULL, NULL, NULL);
        const sl_job_t *j = sl_sched_job(s, 1);
        if (cases[c].expect == 0) {
            assert_int_equal(sl_job_state(j), SL_JOB_PENDING);
            assert_non_null(strstr(sl_job_reason(j), "elastic"));
        } else {
            assert_int_equal(sl_job_state(j), SL_JOB_RUNNING);
            assert_int_equal(sl_job_ntasks_placed(j), cases[c].expect);
        }
        assert_int_equal(sl_sched_check(s), 0);
        sl_sched_destroy(s);
        sl_cluster_destroy(cl);
    }
}

static void test_sched_quota_blocks_only_its_tenant(void **state) {
    (void)state;
    sl_cluster_t *cl;
    sl_cluster_create(&cl);
    tu_add_nodes(cl, "g", 4, "64", "512Gi", 8, "H100", "80Gi", NULL);
    sl_sched_t *s = tu_sched_create(cl, "fifo", "none");
    int a = tu_tenant_add(s, "a", 1, (sl_res_t){0, 0, 8000}); /* at most 8 GPUs */
    int b = tu_tenant_add(s, "b", 1, TU_NO_QUOTA);
    sub(s, spec(1, a, 1, tu_req("1", "1Gi", 6, "")));
    sub(s, spec(2, a, 1, tu_req("1", "1Gi", 4, ""))); /* 6 + 4 > 8 */
    sub(s, spec(3, a, 1, tu_req("1", "1Gi", 1, ""))); /* behind 2 in a's queue */
    sub(s, spec(4, b, 1, tu_req("1", "1Gi", 8, "")));
    sl_job_spec_t el = spec(5, a, 10, tu_req("1", "1Gi", 1, "")); /* elastic, capped by quota */
    el.min_tasks = 1;
    el.priority = 5; /* heads a's queue */
    el.submit_us = 0;
    sub(s, el);
    tu_ids_t o = {0};
    assert_int_equal(sl_sched_cycle(s, 1, tu_ids_on_start, &o, NULL), 2);
    assert_int_equal(o.v[0], 5);
    assert_int_equal(sl_job_ntasks_placed(sl_sched_job(s, 5)), 8); /* 10 fit, the quota allows 8 */
    /* Then job 1 (6 GPUs) is over quota, so a is blocked; b goes on. */
    assert_int_equal(o.v[1], 4);
    const sl_job_t *j1 = sl_sched_job(s, 1);
    assert_int_equal(sl_job_status(j1), SL_WAIT);
    assert_non_null(strstr(sl_job_reason(j1), "quota"));
    assert_non_null(strstr(sl_job_reason(sl_sched_job(s, 3)), "waiting behind job 1"));
    assert_int_equal(sl_job_status(sl_sched_job(s, 3)), SL_WAIT);
    assert_int_equal(sl_sched_finish(s, 5, 2), 0);
    o.n = 0;
    assert_int_equal(sl_sched_cycle(s, 2, tu_ids_on_start, &o, NULL), 1);
    assert_int_equal(o.v[0], 1);
    assert_int_equal(sl_job_status(sl_sched_job(s, 2)), SL_WAIT);
    assert_int_equal(sl_sched_tenant_usage(s, a).gpu_milli, 6000);
    assert_int_equal(sl_sched_try_start(s, 2, 3), SL_WAIT);
    assert_int_equal(sl_sched_try_start(s, 3, 3), SL_FIT);
    assert_int_equal(sl_sched_tenant_usage(s, a).gpu_milli, 7000);
    assert_int_equal(sl_sched_check(s), 0);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

static void test_sched_try_start_ignores_order(void **state) {
    (void)state;
    sl_cluster_t *cl;
    sl_cluster_create(&cl);
    tu_add_nodes(cl, "g", 1, "16", "64Gi", 4, "T4", "16Gi", NULL);
    sl_sched_t *s = tu_sched_create(cl, "fifo", "none");
    int t = tu_tenant_add(s, "a", 1, TU_NO_QUOTA);
    sub(s, spec(1, t, 1, tu_req("1", "1Gi", 8, "")));
    sub(s, spec(2, t, 1, tu_req("1", "1Gi", 0, "0.25")));
    sub(s, spec(3, t, 1, tu_req("1", "1Gi", 4, "")));
    assert_int_equal(sl_sched_try_start(s, 3, 7), SL_FIT);
    assert_int_equal(sl_job_start_us(sl_sched_job(s, 3)), 7);
    assert_int_equal(sl_sched_try_start(s, 3, 7), SL_ESTATE);
    assert_int_equal(sl_sched_try_start(s, 42, 7), SL_ENOENT);
    assert_int_equal(sl_sched_try_start(s, 2, 8), SL_NOFIT);
    assert_int_equal(sl_job_status(sl_sched_job(s, 2)), SL_NOFIT);
    assert_true(strlen(sl_job_reason(sl_sched_job(s, 2))) > 0);
    assert_int_equal(sl_sched_try_start(s, 1, 8), SL_NOFIT_EVER);
    assert_int_equal(sl_sched_check(s), 0);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

static void test_sched_adopt_running_job(void **state) {
    (void)state;
    sl_cluster_t *cl;
    sl_cluster_create(&cl);
    tu_add_nodes(cl, "g", 2, "16", "64Gi", 4, "T4", "16Gi", NULL);
    sl_sched_t *s = tu_sched_create(cl, "fifo", "none");
    int t = tu_tenant_add(s, "a", 1, TU_NO_QUOTA);
    sl_job_spec_t sp = spec(9, t, 2, tu_req("2", "4Gi", 2, ""));
    sl_place_t pl[2] = {{.node = 0, .gpu_mask = 0x3, .gpu_milli = 1000},
                        {.node = 1, .gpu_mask = 0xc, .gpu_milli = 1000}};
    char err[256];
    assert_int_equal(sl_sched_adopt(s, &sp, pl, 1, 5, err, sizeof err), SL_EINVAL); /* 1 < 2 */
    assert_int_equal(sl_sched_adopt(s, &sp, pl, 2, 5, err, sizeof err), 0);
    assert_int_equal(sl_sched_adopt(s, &sp, pl, 2, 5, err, sizeof err), SL_EEXIST);
    const sl_job_t *j = sl_sched_job(s, 9);
    assert_int_equal(sl_job_state(j), SL_JOB_RUNNING);
    assert_int_equal(sl_job_start_us(j), 5);
    assert_int_equal(sl_job_place(j, 1)->gpu_mask, 0xc);
    /* Overlapping GPUs: nothing changes. */
    sl_job_spec_t sp2 = spec(10, t, 2, tu_req("2", "4Gi", 2, ""));
    sl_place_t pl2[2] = {{.node = 0, .gpu_mask = 0xc, .gpu_milli = 1000},
                         {.node = 1, .gpu_mask = 0x3 << 2, .gpu_milli = 1000}};
    assert_int_equal(sl_sched_adopt(s, &sp2, pl2, 2, 6, err, sizeof err), SL_ENOSPC);
    assert_null(sl_sched_job(s, 10));
    assert_int_equal(sl_cluster_node(cl, 0)->gpu_free[2], 1000);
    pl2[0].gpu_mask = 0x7; /* three GPUs for a two-GPU task */
    assert_int_equal(sl_sched_adopt(s, &sp2, pl2, 2, 6, err, sizeof err), SL_EINVAL);
    /* An earlier start time goes earlier in the running list. */
    sl_job_spec_t sp3 = spec(11, t, 1, tu_req("1", "1Gi", 0, ""));
    sl_place_t pl3 = {.node = 1};
    assert_int_equal(sl_sched_adopt(s, &sp3, &pl3, 1, 1, err, sizeof err), 0);
    tu_ids_t o = {0};
    sl_sched_foreach(s, SL_JOB_RUNNING, tu_ids_each, &o);
    assert_int_equal(o.n, 2);
    assert_int_equal(o.v[0], 11);
    assert_int_equal(o.v[1], 9);
    assert_int_equal(sl_sched_check(s), 0);
    assert_int_equal(sl_sched_finish(s, 9, 10), 0);
    assert_int_equal(sl_sched_check(s), 0);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

static void test_sched_max_starts_per_cycle(void **state) {
    (void)state;
    sl_cluster_t *cl;
    sl_cluster_create(&cl);
    tu_add_nodes(cl, "c", 1, "64", "64Gi", 0, NULL, NULL, NULL);
    sl_sched_config_t cfg;
    sl_sched_config_init(&cfg);
    cfg.max_starts_per_cycle = 3;
    sl_sched_t *s = NULL;
    char err[256];
    assert_int_equal(sl_sched_create(&cfg, cl, &s, err, sizeof err), 0);
    int t = tu_tenant_add(s, "a", 1, TU_NO_QUOTA);
    for (uint64_t i = 1; i <= 10; i++) sub(s, spec(i, t, 1, tu_req("1", "1Gi", 0, "")));
    assert_int_equal(sl_sched_cycle(s, 1, NULL, NULL, NULL), 3);
    assert_non_null(strstr(sl_job_reason(sl_sched_job(s, 4)), "start limit"));
    assert_int_equal(sl_job_status(sl_sched_job(s, 4)), SL_WAIT);
    assert_int_equal(sl_sched_cycle(s, 2, NULL, NULL, NULL), 3);
    assert_int_equal(sl_sched_cycle(s, 3, NULL, NULL, NULL), 3);
    assert_int_equal(sl_sched_cycle(s, 4, NULL, NULL, NULL), 1);
    assert_int_equal(sl_sched_pending_count(s), 0);
    sl_sched_destroy(s);
    cfg.max_starts_per_cycle = -1;
    assert_int_equal(sl_sched_create(&cfg, cl, &s, err, sizeof err), SL_EINVAL);
    sl_cluster_destroy(cl);
}

static void test_sched_track_workload(void **state) {
    (void)state;
    sl_cluster_t *cl;
    sl_cluster_create(&cl);
    sl_sched_config_t cfg;
    sl_sched_config_init(&cfg);
    cfg.track_workload = true;
    sl_sched_t *s = NULL;
    char err[256];
    assert_int_equal(sl_sched_create(&cfg, cl, &s, err, sizeof err), 0);
    int t = tu_tenant_add(s, "a", 1, TU_NO_QUOTA);
    sub(s, spec(1, t, 8, tu_req("16", "128Gi", 4, "")));
    sub(s, spec(2, t, 2, tu_req("16", "128Gi", 4, "")));
    sub(s, spec(3, t, 3, tu_req("2", "8Gi", 0, "0.5")));
    sl_workload_t *w = sl_sched_workload(s);
    assert_int_equal(sl_workload_total(w), 13);
    assert_int_equal(sl_workload_shape_count(w), 2);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

static void count_cb(void *ud, const sl_job_t *job) {
    (void)job;
    (*(int *)ud)++;
}

typedef struct cb_ctx {
    sl_sched_t *s;
    int calls;
} cb_ctx_t;

/* on_start runs after the cycle's decisions; it may call back in. */
static void finish_cb(void *ud, const sl_job_t *job) {
    cb_ctx_t *c = ud;
    c->calls++;
    assert_int_equal(sl_sched_finish(c->s, sl_job_id(job), 9), 0);
}

static void test_sched_on_start_may_call_back(void **state) {
    (void)state;
    sl_cluster_t *cl;
    sl_cluster_create(&cl);
    tu_add_nodes(cl, "c", 1, "4", "8Gi", 0, NULL, NULL, NULL);
    sl_sched_t *s = tu_sched_create(cl, "priority", "easy");
    int t = tu_tenant_add(s, "a", 1, TU_NO_QUOTA);
    for (uint64_t i = 1; i <= 6; i++) sub(s, spec(i, t, 1, tu_req("1", "1Gi", 0, "")));
    cb_ctx_t c = {s, 0};
    assert_int_equal(sl_sched_cycle(s, 9, finish_cb, &c, NULL), 4);
    assert_int_equal(c.calls, 4);
    assert_int_equal(sl_sched_running_count(s), 0);
    int n = 0;
    assert_int_equal(sl_sched_cycle(s, 10, count_cb, &n, NULL), 2);
    assert_int_equal(n, 2);
    assert_int_equal(sl_sched_check(s), 0);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

/* ---- randomised property test against a naive reference ---- */

typedef struct ref_node {
    int64_t cpu, mem;
    int32_t milli[SL_MAX_GPUS_PER_NODE];
    int64_t gmem[SL_MAX_GPUS_PER_NODE];
} ref_node_t;

typedef struct ref_ctx {
    const sl_cluster_t *cl;
    ref_node_t *nodes;
    int bad;
} ref_ctx_t;

static int ref_add_job(void *ud, const sl_job_t *job) {
    ref_ctx_t *r = ud;
    const sl_job_spec_t *sp = sl_job_spec(job);
    int32_t n = sl_job_ntasks_placed(job);
    int32_t min = sp->min_tasks > 0 ? sp->min_tasks : sp->ntasks;
    if (n < min || n > sp->ntasks) r->bad++; /* all-or-none (or within the elastic range) */
    for (int32_t i = 0; i < n; i++) {
        const sl_place_t *pl = sl_job_place(job, i);
        const sl_node_t *nd = sl_cluster_node(r->cl, pl->node);
        ref_node_t *x = &r->nodes[pl->node];
        x->cpu += sp->task.cpu_milli;
        x->mem += sp->task.mem_bytes;
        int ng = 0;
        for (int g = 0; g < SL_MAX_GPUS_PER_NODE; g++) {
            if (!(pl->gpu_mask & (1u << g))) continue;
            ng++;
            if (sp->task.gpus > 0) {
                x->milli[g] += 1000;
                x->gmem[g] += nd->gpu_mem_total;
            } else {
                x->milli[g] += sp->task.gpu_milli;
                x->gmem[g] += sp->task.gpu_mem_bytes;
            }
        }
        int want = sp->task.gpus > 0 ? sp->task.gpus : (sp->task.gpu_milli > 0 ? 1 : 0);
        if (ng != want) r->bad++;
        /* The task's placement respects its pool and model. */
        if (sp->task.pool >= 0 && nd->pool != sp->task.pool) r->bad++;
        if (sp->task.model_mask && want &&
            (nd->model < 0 || !(sp->task.model_mask & (UINT64_C(1) << nd->model))))
            r->bad++;
    }
    return 0;
}

static int ref_pending(void *ud, const sl_job_t *job) {
    ref_ctx_t *r = ud;
    if (sl_job_ntasks_placed(job) != 0 || sl_job_state(job) != SL_JOB_PENDING) r->bad++;
    return 0;
}

static void ref_check(const sl_sched_t *s, const sl_cluster_t *cl) {
    size_t nn = sl_cluster_node_count(cl);
    ref_ctx_t r = {cl, calloc(nn, sizeof(ref_node_t)), 0};
    sl_sched_foreach(s, SL_JOB_RUNNING, ref_add_job, &r);
    sl_sched_foreach(s, SL_JOB_PENDING, ref_pending, &r);
    assert_int_equal(r.bad, 0);
    for (size_t i = 0; i < nn; i++) {
        const sl_node_t *n = sl_cluster_node(cl, (uint32_t)i);
        const ref_node_t *x = &r.nodes[i];
        assert_true(x->cpu <= n->cpu_total);
        assert_true(x->mem <= n->mem_total);
        assert_int_equal(n->cpu_free, n->cpu_total - x->cpu);
        assert_int_equal(n->mem_free, n->mem_total - x->mem);
        for (int g = 0; g < n->ngpus; g++) {
            assert_true(x->milli[g] <= 1000);
            assert_true(x->gmem[g] <= n->gpu_mem_total);
            assert_int_equal(n->gpu_free[g], 1000 - x->milli[g]);
            assert_int_equal(n->gpu_mem_free[g], n->gpu_mem_total - x->gmem[g]);
        }
        for (int g = n->ngpus; g < SL_MAX_GPUS_PER_NODE; g++) assert_int_equal(x->milli[g], 0);
    }
    free(r.nodes);
    assert_int_equal(sl_sched_check(s), 0);
}

static int64_t rnd(sl_rng_t *r, int64_t lo, int64_t hi) {
    return lo + (int64_t)sl_rng_below(r, (uint64_t)(hi - lo + 1));
}

static sl_task_req_t random_task(sl_rng_t *r, int32_t pool1) {
    sl_task_req_t t;
    sl_task_req_init(&t);
    t.cpu_milli = rnd(r, 1, 16) * 500;
    t.mem_bytes = rnd(r, 1, 32) * GI;
    switch (rnd(r, 0, 3)) {
    case 0: break;
    case 1:
    case 2: t.gpus = (int32_t)rnd(r, 1, 4); break;
    default:
        t.gpu_milli = (int32_t)rnd(r, 1, 9) * 100;
        if (rnd(r, 0, 1)) t.gpu_mem_bytes = rnd(r, 1, 8) * GI;
        break;
    }
    int64_t k = rnd(r, 0, 9);
    if (k == 0) t.model_mask = 1;      /* model "A" */
    else if (k == 1) t.model_mask = 2; /* model "B" */
    k = rnd(r, 0, 9);
    if (k == 0) t.pool = 0;
    else if (k == 1) t.pool = pool1;
    return t;
}

static void test_sched_gang_never_partial_random(void **state) {
    (void)state;
    const char *queues[] = {"fifo", "priority", "drf", "wfq"};
    const char *const backfills[] = {"none", "easy"};
    const sl_place_policy_t *const *pols = sl_place_policy_list();
    size_t npols = 0;
    while (pols[npols]) npols++;
    for (uint64_t seed = 1; seed <= 120; seed++) {
        sl_rng_t r;
        sl_rng_seed(&r, seed);
        sl_cluster_t *cl;
        sl_cluster_create(&cl);
        assert_int_equal(sl_cluster_model_intern(cl, "A"), 0);
        assert_int_equal(sl_cluster_model_intern(cl, "B"), 1);
        int32_t pool1 = sl_cluster_pool_intern(cl, "p1");
        int nnodes = (int)rnd(&r, 1, 10);
        for (int i = 0; i < nnodes; i++) {
            char name[32], err[128];
            snprintf(name, sizeof name, "n%d", i);
            int32_t gpus = (int32_t)rnd(&r, 0, 8);
            sl_node_spec_t ns = {.name = name, .cpu_milli = rnd(&r, 4, 64) * 1000,
                                 .mem_bytes = rnd(&r, 16, 256) * GI, .gpus = gpus,
                                 .gpu_model = gpus ? (rnd(&r, 0, 1) ? "A" : "B") : NULL,
                                 .gpu_mem_bytes = gpus ? rnd(&r, 16, 80) * GI : 0,
                                 .pool = rnd(&r, 0, 3) ? NULL : "p1"};
            assert_int_equal(sl_cluster_add_node(cl, &ns, NULL, err, sizeof err), 0);
        }
        sl_sched_config_t cfg;
        sl_sched_config_init(&cfg);
        cfg.queue = queues[seed % 4];
        cfg.backfill = backfills[(seed / 4) % 2];
        cfg.placement = pols[seed % npols]->name;
        cfg.seed = seed;
        cfg.default_time_limit_us = rnd(&r, 0, 1) * 50;
        cfg.max_starts_per_cycle = (int32_t)rnd(&r, 0, 1) * 5;
        cfg.track_workload = true;
        sl_sched_t *s = NULL;
        char err[256];
        assert_int_equal(sl_sched_create(&cfg, cl, &s, err, sizeof err), 0);
        int ntenants = (int)rnd(&r, 1, 4);
        for (int i = 0; i < ntenants; i++) {
            char name[16];
            snprintf(name, sizeof name, "t%d", i);
            sl_res_t q = TU_NO_QUOTA;
            if (rnd(&r, 0, 3) == 0) q.gpu_milli = rnd(&r, 1, 16) * 1000;
            if (rnd(&r, 0, 3) == 0) q.cpu_milli = rnd(&r, 8, 64) * 1000;
            tu_tenant_add(s, name, (int32_t)rnd(&r, 1, 4), q);
        }
        uint64_t next_id = 1;
        int64_t now = 0;
        for (int round = 0; round < 30; round++) {
            now += rnd(&r, 1, 20);
            int nsub = (int)rnd(&r, 0, 6);
            for (int k = 0; k < nsub; k++) {
                sl_job_spec_t sp = {.id = next_id++, .tenant = (int32_t)rnd(&r, 0, ntenants - 1),
                                    .priority = (int32_t)rnd(&r, 0, 3), .submit_us = now,
                                    .ntasks = (int32_t)rnd(&r, 1, 6),
                                    .task = random_task(&r, pool1),
                                    .time_limit_us = rnd(&r, 0, 1) * rnd(&r, 1, 100)};
                if (rnd(&r, 0, 2) == 0) sp.min_tasks = (int32_t)rnd(&r, 1, sp.ntasks);
                assert_int_equal(sl_sched_submit(s, &sp, err, sizeof err), 0);
            }
            if (rnd(&r, 0, 4) == 0 && next_id > 1) {
                uint64_t id = (uint64_t)rnd(&r, 1, (int64_t)next_id - 1);
                const sl_job_t *j = sl_sched_job(s, id);
                int rc = sl_sched_try_start(s, id, now);
                if (j && sl_job_state(j) == SL_JOB_RUNNING && rc != SL_FIT)
                    assert_int_equal(rc, SL_ESTATE);
            } else {
                sl_sched_cycle(s, now, NULL, NULL, NULL);
            }
            ref_check(s, cl);
            /* Random ends: finish, cancel, requeue; node state changes. */
            for (uint64_t id = 1; id < next_id; id++) {
                const sl_job_t *j = sl_sched_job(s, id);
                if (!j) continue;
                int64_t k = rnd(&r, 0, 9);
                if (sl_job_state(j) == SL_JOB_RUNNING) {
                    if (k < 3) assert_int_equal(sl_sched_finish(s, id, now), 0);
                    else if (k == 3) assert_int_equal(sl_sched_cancel(s, id, now), 0);
                    else if (k == 4) assert_int_equal(sl_sched_requeue(s, id, now), 0);
                } else if (sl_job_state(j) == SL_JOB_PENDING && k == 0) {
                    assert_int_equal(sl_sched_cancel(s, id, now), 0);
                } else if (sl_job_state(j) >= SL_JOB_DONE && k < 5) {
                    assert_int_equal(sl_sched_forget(s, id), 0);
                }
            }
            if (rnd(&r, 0, 5) == 0) {
                uint32_t nid = (uint32_t)rnd(&r, 0, nnodes - 1);
                sl_node_state_t ns = (sl_node_state_t)rnd(&r, 0, 2);
                assert_int_equal(sl_cluster_set_state(cl, nid, ns), 0);
            }
            ref_check(s, cl);
        }
        sl_sched_destroy(s);
        sl_cluster_destroy(cl);
        assert_int_equal(sl_alloc_live(), 0);
    }
}

/* Regression (quota + skipping): a group skipped after a failure must be
 * examined again once its tenant's quota changes, at the place where the
 * walk meets it, or a later job of the tenant would pass a quota-blocked
 * one. Job 3 (same shape as the reserved job 1) blocks tenant a once job 2
 * took a GPU of its quota; job 4 must wait behind it. */
static void test_sched_quota_change_resumes_skipped_group(void **state) {
    (void)state;
    sl_cluster_t *cl;
    sl_cluster_create(&cl);
    tu_add_nodes(cl, "g", 1, "32", "256Gi", 8, "H100", "80Gi", NULL);
    sl_sched_t *s = tu_sched_create(cl, "fifo", "easy");
    int a = tu_tenant_add(s, "a", 1, (sl_res_t){0, 0, 3000}), b = tu_tenant_add(s, "b", 1, TU_NO_QUOTA);
    sl_job_spec_t blocker = spec(100, b, 1, tu_req("1", "1Gi", 6, ""));
    blocker.time_limit_us = 100;
    sl_place_t pl = {.node = 0, .gpu_mask = 0x3f, .gpu_milli = 1000};
    char err[256];
    assert_int_equal(sl_sched_adopt(s, &blocker, &pl, 1, 0, err, sizeof err), 0);
    sl_job_spec_t j1 = spec(1, a, 1, tu_req("1", "1Gi", 3, "")); /* 2 GPUs free: reserved */
    sl_job_spec_t j2 = spec(2, a, 1, tu_req("1", "1Gi", 1, "")); /* short: starts */
    sl_job_spec_t j3 = spec(3, a, 1, tu_req("1", "1Gi", 3, "")); /* 1 + 3 > quota 3 */
    sl_job_spec_t j4 = spec(4, a, 1, tu_req("1", "1Gi", 1, "")); /* would fit */
    j1.time_limit_us = j3.time_limit_us = 1000;
    j2.time_limit_us = j4.time_limit_us = 10;
    sub(s, j1);
    sub(s, j2);
    sub(s, j3);
    sub(s, j4);
    sl_cycle_stats_t st;
    assert_int_equal(sl_sched_cycle(s, 5, NULL, NULL, &st), 1);
    assert_int_equal(st.reserved_job, 1);
    assert_int_equal(sl_job_state(sl_sched_job(s, 2)), SL_JOB_RUNNING);
    const sl_job_t *x3 = sl_sched_job(s, 3), *x4 = sl_sched_job(s, 4);
    assert_int_equal(sl_job_status(x3), SL_WAIT);
    assert_non_null(strstr(sl_job_reason(x3), "quota"));
    assert_int_equal(sl_job_state(x4), SL_JOB_PENDING);
    assert_non_null(strstr(sl_job_reason(x4), "waiting behind job 3 of the same tenant"));
    uint64_t skips, revived;
    sl__sched_group_counters(s, &skips, &revived);
    assert_int_equal(revived, 1);
    assert_int_equal(sl_sched_check(s), 0);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

/* A run of identical pending jobs behind a failure costs one examination,
 * and the skipped jobs show the failure (shared, not copied). */
static void test_sched_identical_jobs_skipped_together(void **state) {
    (void)state;
    sl_cluster_t *cl;
    sl_cluster_create(&cl);
    tu_add_nodes(cl, "g", 2, "32", "256Gi", 8, "H100", "80Gi", NULL);
    sl_sched_t *s = tu_sched_create(cl, "drf", "easy");
    int t = tu_tenant_add(s, "a", 1, TU_NO_QUOTA), u = tu_tenant_add(s, "b", 1, TU_NO_QUOTA);
    sl_job_spec_t big = spec(1, t, 2, tu_req("1", "1Gi", 8, ""));
    big.time_limit_us = 50;
    sub(s, big); /* takes the whole cluster */
    assert_int_equal(sl_sched_cycle(s, 1, NULL, NULL, NULL), 1);
    for (uint64_t id = 2; id <= 5001; id++) {
        sl_job_spec_t sp = spec(id, id % 2 ? t : u, 1, tu_req("1", "1Gi", 2, ""));
        sp.time_limit_us = 1000;
        sub(s, sp);
    }
    sl_cycle_stats_t st;
    assert_int_equal(sl_sched_cycle(s, 2, NULL, NULL, &st), 0);
    assert_int_equal(st.reserved_job, 2);
    assert_int_equal(st.tried, 1); /* the reserved job; the rest by shape */
    const sl_job_t *last = sl_sched_job(s, 5001);
    assert_int_equal(sl_job_status(last), SL_NOFIT);
    assert_string_equal(sl_job_reason(last), sl_job_reason(sl_sched_job(s, 3)));
    uint64_t skips, revived;
    sl__sched_group_counters(s, &skips, &revived);
    assert_int_equal(skips, 2); /* one verdict per tenant's group */
    /* The big job ends: its GPUs go to the queue in order. */
    assert_int_equal(sl_sched_finish(s, 1, 50), 0);
    assert_int_equal(sl_sched_cycle(s, 50, NULL, NULL, &st), 8);
    for (uint64_t id = 2; id <= 9; id++)
        assert_int_equal(sl_job_state(sl_sched_job(s, id)), SL_JOB_RUNNING);
    assert_int_equal(sl_sched_check(s), 0);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

/* ---- group skipping against the full walk (differential) ---- */

typedef struct pair_ctx {
    const sl_sched_t *other;
    bool a_skips; /* the scheduler walked is the skipping one */
    int bad;
    int verdict_over_stop;
} pair_ctx_t;

/* Same state, placements, status and reason for the job in the other scheduler. */
static int pair_job(void *ud, const sl_job_t *a) {
    pair_ctx_t *c = ud;
    const sl_job_t *b = sl_sched_job(c->other, sl_job_id(a));
    if (!b || sl_job_state(a) != sl_job_state(b) || sl_job_start_us(a) != sl_job_start_us(b) ||
        sl_job_ntasks_placed(a) != sl_job_ntasks_placed(b)) {
        c->bad++;
        return 0;
    }
    for (int32_t i = 0; i < sl_job_ntasks_placed(a); i++) {
        const sl_place_t *x = sl_job_place(a, i), *y = sl_job_place(b, i);
        if (x->node != y->node || x->gpu_mask != y->gpu_mask || x->gpu_milli != y->gpu_milli ||
            x->gpu_mem_bytes != y->gpu_mem_bytes)
            c->bad++;
    }
    if (sl_job_status(a) == sl_job_status(b) && strcmp(sl_job_reason(a), sl_job_reason(b)) == 0)
        return 0;
    /* One difference is by design: a job the reference walk did not reach
     * before the cycle stopped shows the cycle's reason there, while the
     * skipping cycle may already know its group's verdict (a failure of the
     * same shape, with its own reason), which it shows instead. */
    const sl_job_t *skip = c->a_skips ? a : b, *ref = c->a_skips ? b : a;
    const char *rr = sl_job_reason(ref), *rs = sl_job_reason(skip);
    bool stop_reason = (strncmp(rr, "waiting behind job", 18) == 0 && !strstr(rr, "tenant quota")) ||
                       strncmp(rr, "not considered", 14) == 0;
    sl_status_t ss = sl_job_status(skip);
    if (sl_job_state(a) == SL_JOB_PENDING && stop_reason && sl_job_status(ref) == SL_WAIT &&
        (ss == SL_NOFIT || ss == SL_NOFIT_EVER || ss == SL_WAIT) && rs[0] &&
        strncmp(rs, "waiting behind", 14) != 0 && strncmp(rs, "not considered", 14) != 0) {
        c->verdict_over_stop++;
        return 0;
    }
    fprintf(stderr, "job %llu: status %d/%d reason \"%s\" / \"%s\"\n",
            (unsigned long long)sl_job_id(a), sl_job_status(a), sl_job_status(b),
            sl_job_reason(a), sl_job_reason(b));
    c->bad++;
    return 0;
}

/* Returns how many jobs showed a group verdict where the reference showed
 * the cycle's stop reason. */
static int pair_check(const sl_sched_t *a, const sl_sched_t *b, bool a_skips) {
    pair_ctx_t c = {b, a_skips, 0, 0};
    sl_sched_foreach(a, SL_JOB_PENDING, pair_job, &c);
    sl_sched_foreach(a, SL_JOB_RUNNING, pair_job, &c);
    assert_int_equal(c.bad, 0);
    assert_int_equal(sl_sched_pending_count(a), sl_sched_pending_count(b));
    assert_int_equal(sl_sched_running_count(a), sl_sched_running_count(b));
    assert_int_equal(sl_sched_check(a), 0);
    return c.verdict_over_stop;
}

/*
 * The cycle skips the rest of a shape group after a failure; the reference
 * (sl__sched_set_group_skip off) examines every job. On seeded random
 * workloads with few shapes (so groups repeat), several tenants (some with
 * quotas, so verdicts are resumed), elastic gangs, priorities, all queue
 * orders and both backfill kinds, the two schedulers must take the same
 * decisions (same starts, placements, stats) and show the same status and
 * reason on every job, after every cycle.
 */
static void test_sched_group_skip_matches_full_walk_random(void **state) {
    (void)state;
    const char *queues[] = {"fifo", "priority", "drf", "wfq"};
    const sl_place_policy_t *const *pols = sl_place_policy_list();
    size_t npols = 0;
    while (pols[npols]) npols++;
    uint64_t skips = 0, revived = 0;
    int over_stop = 0;
    for (uint64_t seed = 1; seed <= 160; seed++) {
        sl_rng_t r;
        sl_rng_seed(&r, seed * 104729);
        sl_cluster_t *cl[2];
        sl_sched_t *s[2];
        int nnodes = (int)rnd(&r, 1, 6);
        sl_node_spec_t ns[6];
        char names[6][16];
        for (int i = 0; i < nnodes; i++) {
            snprintf(names[i], sizeof names[i], "n%d", i);
            int32_t gpus = rnd(&r, 0, 4) ? (int32_t)rnd(&r, 1, 8) : 0;
            ns[i] = (sl_node_spec_t){.name = names[i], .cpu_milli = rnd(&r, 8, 64) * 1000,
                                     .mem_bytes = rnd(&r, 32, 256) * GI, .gpus = gpus,
                                     .gpu_model = gpus ? "A" : NULL,
                                     .gpu_mem_bytes = gpus ? 40 * GI : 0};
        }
        sl_sched_config_t cfg;
        sl_sched_config_init(&cfg);
        cfg.queue = queues[seed % 4];
        cfg.backfill = rnd(&r, 0, 3) ? "easy" : "none";
        cfg.placement = pols[seed % npols]->name;
        cfg.seed = seed;
        cfg.default_time_limit_us = rnd(&r, 0, 1) * 40;
        cfg.max_backfill_tries = 0; /* the reference would count skipped jobs */
        int ntenants = (int)rnd(&r, 1, 3);
        sl_tenant_spec_t ts[3];
        char tnames[3][16];
        for (int i = 0; i < ntenants; i++) {
            snprintf(tnames[i], sizeof tnames[i], "t%d", i);
            ts[i] = (sl_tenant_spec_t){.name = tnames[i], .weight = (int32_t)rnd(&r, 1, 3)};
            if (rnd(&r, 0, 2) == 0) ts[i].quota.gpu_milli = rnd(&r, 1, 12) * 1000;
            if (rnd(&r, 0, 4) == 0) ts[i].quota.cpu_milli = rnd(&r, 4, 32) * 1000;
        }
        for (int k = 0; k < 2; k++) {
            char err[256];
            sl_cluster_create(&cl[k]);
            for (int i = 0; i < nnodes; i++)
                assert_int_equal(sl_cluster_add_node(cl[k], &ns[i], NULL, err, sizeof err), 0);
            assert_int_equal(sl_sched_create(&cfg, cl[k], &s[k], err, sizeof err), 0);
            for (int i = 0; i < ntenants; i++) assert_int_equal(sl_sched_add_tenant(s[k], &ts[i]), i);
        }
        sl__sched_set_group_skip(s[1], false);
        /* A few shapes, so that groups hold several jobs. */
        sl_task_req_t shapes[4];
        for (int i = 0; i < 4; i++) {
            sl_task_req_init(&shapes[i]);
            shapes[i].cpu_milli = rnd(&r, 1, 8) * 1000;
            shapes[i].mem_bytes = rnd(&r, 1, 32) * GI;
            int64_t k = rnd(&r, 0, 3);
            if (k <= 1) shapes[i].gpus = (int32_t)rnd(&r, 1, 4);
            else if (k == 2) shapes[i].gpu_milli = (int32_t)rnd(&r, 1, 9) * 100;
        }
        uint64_t next_id = 1;
        int64_t now = 0;
        int64_t ends[512] = {0}; /* planned end of each started job, by id */
        for (int round = 0; round < 40; round++) {
            now += rnd(&r, 1, 15);
            char err[256];
            int nsub = (int)rnd(&r, 0, 6);
            for (int k = 0; k < nsub && next_id < 512; k++) {
                int sh = (int)rnd(&r, 0, 3);
                sl_job_spec_t sp = {.id = next_id++, .tenant = (int32_t)rnd(&r, 0, ntenants - 1),
                                    .priority = (int32_t)rnd(&r, 0, 1), .submit_us = now,
                                    .ntasks = 1 + sh % 2 + (int32_t)rnd(&r, 0, 1) * 2,
                                    .task = shapes[sh],
                                    .time_limit_us = rnd(&r, 0, 3) * rnd(&r, 5, 60)};
                if (sh == 3 && sp.ntasks > 1) sp.min_tasks = 1;
                for (int q = 0; q < 2; q++)
                    assert_int_equal(sl_sched_submit(s[q], &sp, err, sizeof err), 0);
            }
            sl_cycle_stats_t st[2];
            int started[2];
            for (int q = 0; q < 2; q++) started[q] = sl_sched_cycle(s[q], now, NULL, NULL, &st[q]);
            assert_int_equal(started[0], started[1]);
            assert_int_equal(st[0].tried, st[1].tried);
            assert_int_equal(st[0].started, st[1].started);
            assert_int_equal(st[0].backfilled, st[1].backfilled);
            assert_int_equal(st[0].reserved_job, st[1].reserved_job);
            assert_int_equal(st[0].reserved_at_us, st[1].reserved_at_us);
            over_stop += pair_check(s[0], s[1], true);
            over_stop += pair_check(s[1], s[0], false);
            /* Ends as planned, and random cancels, requeues, node changes. */
            for (uint64_t id = 1; id < next_id; id++) {
                const sl_job_t *j = sl_sched_job(s[0], id);
                if (sl_job_state(j) == SL_JOB_RUNNING && ends[id] == 0) {
                    int64_t lim = sl_job_spec(j)->time_limit_us;
                    if (lim <= 0) lim = cfg.default_time_limit_us;
                    ends[id] = sl_job_start_us(j) + (lim > 0 ? lim : rnd(&r, 5, 80));
                }
                int64_t k = rnd(&r, 0, 29);
                for (int q = 0; q < 2; q++) {
                    j = sl_sched_job(s[q], id);
                    if (sl_job_state(j) == SL_JOB_RUNNING && ends[id] <= now) {
                        assert_int_equal(sl_sched_finish(s[q], id, now), 0);
                    } else if (sl_job_state(j) == SL_JOB_RUNNING && k == 0) {
                        assert_int_equal(sl_sched_requeue(s[q], id, now), 0);
                        if (q == 1) ends[id] = 0;
                    } else if (sl_job_state(j) == SL_JOB_PENDING && k == 1) {
                        assert_int_equal(sl_sched_cancel(s[q], id, now), 0);
                    }
                }
            }
            if (rnd(&r, 0, 7) == 0) {
                uint32_t nid = (uint32_t)rnd(&r, 0, nnodes - 1);
                sl_node_state_t nst = (sl_node_state_t)rnd(&r, 0, 1);
                for (int q = 0; q < 2; q++) assert_int_equal(sl_cluster_set_state(cl[q], nid, nst), 0);
            }
            over_stop += pair_check(s[0], s[1], true);
        }
        uint64_t sk, rv;
        sl__sched_group_counters(s[0], &sk, &rv);
        skips += sk;
        revived += rv;
        sl__sched_group_counters(s[1], &sk, &rv);
        assert_int_equal(sk + rv, 0); /* the reference never skips */
        for (int q = 0; q < 2; q++) {
            sl_sched_destroy(s[q]);
            sl_cluster_destroy(cl[q]);
        }
        assert_int_equal(sl_alloc_live(), 0);
    }
    /* The generator must exercise both: skipping, and resuming by quota. */
    fprintf(stderr, "group verdicts that skipped jobs: %llu, resumed by quota: %llu, "
            "verdict shown instead of the stop reason: %d\n",
            (unsigned long long)skips, (unsigned long long)revived, over_stop);
    assert_true(skips > 200);
    assert_true(revived > 5);
}

/* 100,000 pending jobs: a cycle must stay linear (failed-shape cache,
 * shared reasons), under both backfill kinds and a tenant-aware order. */
static void run_big(const char *backfill, bool limits) {
    sl_cluster_t *cl;
    sl_cluster_create(&cl);
    tu_add_nodes(cl, "g", 100, "64", "512Gi", 8, "H100", "80Gi", NULL);
    sl_sched_config_t cfg;
    sl_sched_config_init(&cfg);
    cfg.queue = "drf";
    cfg.backfill = backfill;
    sl_sched_t *s = NULL;
    char err[256];
    assert_int_equal(sl_sched_create(&cfg, cl, &s, err, sizeof err), 0);
    for (int i = 0; i < 10; i++) {
        char name[16];
        snprintf(name, sizeof name, "t%d", i);
        tu_tenant_add(s, name, 1 + i % 3, TU_NO_QUOTA);
    }
    const int N = 100000;
    for (int i = 0; i < N; i++) {
        sl_job_spec_t sp = {.id = (uint64_t)i + 1, .tenant = i % 10, .submit_us = i / 7,
                            .ntasks = 1 + i % 2, .task = tu_req("2", "16Gi", 1 + i % 4, ""),
                            .time_limit_us = limits ? 1000 + i % 5000 : 0};
        assert_int_equal(sl_sched_submit(s, &sp, err, sizeof err), 0);
    }
    sl_cycle_stats_t st;
    int started = sl_sched_cycle(s, N, NULL, NULL, &st);
    assert_true(started > 0);
    /* No GPU over-allocated, and nothing left that a pending shape could use
     * without passing a blocked job: at least one GPU job no longer fits. */
    sl_res_t tot, fr;
    sl_cluster_capacity(cl, &tot, &fr);
    assert_true(fr.gpu_milli >= 0 && fr.gpu_milli < 8 * 1000);
    assert_int_equal(sl_sched_pending_count(s) + sl_sched_running_count(s), (size_t)N);
    if (strcmp(backfill, "easy") == 0 && limits) {
        assert_true(st.reserved_job > 0);
        assert_true(st.tried <= st.started + 8); /* the rest: failed-shape cache */
    }
    assert_int_equal(sl_sched_check(s), 0);
    /* A second cycle with nothing freed starts nothing. */
    assert_int_equal(sl_sched_cycle(s, N + 1, NULL, NULL, NULL), 0);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

static void test_sched_100k_pending_jobs(void **state) {
    (void)state;
    run_big("none", false);
    run_big("easy", true);
    run_big("easy", false);
}

static void test_sched_job_state_names(void **state) {
    (void)state;
    assert_string_equal(sl_job_state_name(SL_JOB_PENDING), "pending");
    assert_string_equal(sl_job_state_name(SL_JOB_RUNNING), "running");
    assert_string_equal(sl_job_state_name(SL_JOB_DONE), "done");
    assert_string_equal(sl_job_state_name(SL_JOB_CANCELLED), "cancelled");
    assert_string_equal(sl_job_state_name((sl_job_state_t)42), "unknown");
}

/* sl_sched_create: a NULL config means the defaults; a missing cluster or
 * output and a negative default_time_limit_us are SL_EINVAL with a message;
 * sl_sched_destroy accepts NULL. */
static void test_sched_create_contract(void **state) {
    (void)state;
    sl_cluster_t *cl;
    sl_cluster_create(&cl);
    char err[256];
    sl_sched_t *s = NULL;
    assert_int_equal(sl_sched_create(NULL, cl, &s, err, sizeof err), 0);
    assert_non_null(s);
    assert_string_equal(sl_sched_queue_policy(s)->name, "fifo");
    assert_string_equal(sl_sched_place_policy(s)->name, sl_place_policy_default());
    assert_int_equal(sl_sched_backfill(s), SL_BACKFILL_NONE);
    assert_int_equal(sl_sched_tenant_count(s), 0);
    sl_sched_destroy(s);

    sl_sched_config_t cfg;
    sl_sched_config_init(&cfg);
    sl_sched_t *bad = (sl_sched_t *)&cfg; /* must stay untouched on failure */
    err[0] = '\0';
    assert_int_equal(sl_sched_create(&cfg, NULL, &bad, err, sizeof err), SL_EINVAL);
    assert_ptr_equal(bad, (sl_sched_t *)&cfg);
    assert_non_null(strstr(err, "cluster"));
    assert_int_equal(sl_sched_create(&cfg, cl, NULL, err, sizeof err), SL_EINVAL);
    cfg.default_time_limit_us = -1;
    err[0] = '\0';
    assert_int_equal(sl_sched_create(&cfg, cl, &bad, err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, "default_time_limit_us"));
    assert_ptr_equal(bad, (sl_sched_t *)&cfg);
    sl_sched_destroy(NULL);
    sl_cluster_destroy(cl);
}

/* A NULL spec to submit and a negative start time to adopt are SL_EINVAL
 * and change nothing. */
static void test_sched_submit_adopt_reject_null_and_negative(void **state) {
    (void)state;
    sl_cluster_t *cl;
    sl_cluster_create(&cl);
    tu_add_nodes(cl, "g", 1, "16", "64Gi", 4, "T4", "16Gi", NULL);
    sl_sched_t *s = tu_sched_create(cl, "fifo", "none");
    int t = tu_tenant_add(s, "a", 1, TU_NO_QUOTA);
    char err[256] = "";
    assert_int_equal(sl_sched_submit(s, NULL, err, sizeof err), SL_EINVAL);
    assert_true(err[0] != '\0');
    sl_job_spec_t sp = spec(1, t, 1, tu_req("2", "4Gi", 2, ""));
    sl_place_t pl = {.node = 0, .gpu_mask = 0x3, .gpu_milli = 1000};
    err[0] = '\0';
    assert_int_equal(sl_sched_adopt(s, &sp, &pl, 1, -1, err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, "start_us"));
    assert_null(sl_sched_job(s, 1));
    assert_int_equal(sl_cluster_node(cl, 0)->gpu_free[0], 1000);
    assert_int_equal(sl_sched_running_count(s), 0);
    assert_int_equal(sl_sched_check(s), 0);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

/* Tenant getters on ids that do not exist: no name, weight 1, no usage, no
 * share, no jobs (and NULL out-params are accepted). */
static void test_sched_tenant_getters_bad_id(void **state) {
    (void)state;
    sl_cluster_t *cl;
    sl_cluster_create(&cl);
    tu_add_nodes(cl, "g", 1, "16", "64Gi", 4, "T4", "16Gi", NULL);
    sl_sched_t *s = tu_sched_create(cl, "fifo", "none");
    int t = tu_tenant_add(s, "a", 2, TU_NO_QUOTA);
    sub(s, spec(1, t, 1, tu_req("2", "4Gi", 2, "")));
    sub(s, spec(2, t, 1, tu_req("2", "4Gi", 4, "")));
    assert_int_equal(sl_sched_cycle(s, 1, NULL, NULL, NULL), 1);
    size_t p = 99, r = 99;
    sl_sched_tenant_jobs(s, t, &p, &r);
    assert_int_equal(p, 1);
    assert_int_equal(r, 1);
    sl_sched_tenant_jobs(s, t, NULL, &r);
    assert_int_equal(r, 1);
    sl_sched_tenant_jobs(s, t, &p, NULL);
    assert_int_equal(p, 1);
    assert_true(sl_sched_tenant_share(s, t) > 0.0);
    const int32_t bad[] = {-1, 1, 1000, INT32_MAX};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_null(sl_sched_tenant_name(s, bad[i]));
        assert_int_equal(sl_sched_tenant_weight(s, bad[i]), 1);
        sl_res_t u = sl_sched_tenant_usage(s, bad[i]);
        assert_true(u.cpu_milli == 0 && u.mem_bytes == 0 && u.gpu_milli == 0);
        assert_true(sl_sched_tenant_share(s, bad[i]) == 0.0);
        p = r = 99;
        sl_sched_tenant_jobs(s, bad[i], &p, &r);
        assert_int_equal(p, 0);
        assert_int_equal(r, 0);
    }
    assert_int_equal(sl_sched_tenant_find(s, ""), SL_ENOENT);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

typedef struct stop_after {
    tu_ids_t ids;
    size_t limit;
} stop_after_t;

static int stop_after_each(void *ud, const sl_job_t *job) {
    stop_after_t *st = ud;
    st->ids.v[st->ids.n++] = sl_job_id(job);
    return st->ids.n >= st->limit;
}

/* sl_sched_foreach stops as soon as the callback returns non-zero, for
 * every state, and visits pending jobs in queue order and running jobs in
 * start order. */
static void test_sched_foreach_stops_early(void **state) {
    (void)state;
    sl_cluster_t *cl;
    sl_cluster_create(&cl);
    tu_add_nodes(cl, "g", 1, "16", "64Gi", 4, "T4", "16Gi", NULL);
    sl_sched_t *s = tu_sched_create(cl, "fifo", "none");
    int t = tu_tenant_add(s, "a", 1, TU_NO_QUOTA);
    for (uint64_t id = 1; id <= 4; id++) sub(s, spec(id, t, 1, tu_req("1", "1Gi", 1, "")));
    for (uint64_t id = 5; id <= 9; id++) sub(s, spec(id, t, 1, tu_req("1", "1Gi", 4, "")));
    assert_int_equal(sl_sched_cycle(s, 1, NULL, NULL, NULL), 4);
    for (uint64_t id = 1; id <= 3; id++) assert_int_equal(sl_sched_finish(s, id, 2), 0);
    for (uint64_t id = 7; id <= 9; id++) assert_int_equal(sl_sched_cancel(s, id, 2), 0);
    const struct {
        sl_job_state_t st;
        size_t all;
        uint64_t first;
    } rows[] = {{SL_JOB_PENDING, 2, 5}, {SL_JOB_RUNNING, 1, 4}, {SL_JOB_DONE, 3, 1},
                {SL_JOB_CANCELLED, 3, 7}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        stop_after_t all = {.limit = 100};
        sl_sched_foreach(s, rows[i].st, stop_after_each, &all);
        assert_int_equal(all.ids.n, rows[i].all);
        stop_after_t one = {.limit = 1};
        sl_sched_foreach(s, rows[i].st, stop_after_each, &one);
        assert_int_equal(one.ids.n, 1);
        assert_int_equal(one.ids.v[0], all.ids.v[0]);
        if (rows[i].st == SL_JOB_PENDING || rows[i].st == SL_JOB_RUNNING)
            assert_int_equal(one.ids.v[0], rows[i].first);
    }
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_sched_config_defaults, tu_teardown),
        cmocka_unit_test_teardown(test_sched_job_state_names, tu_teardown),
        cmocka_unit_test_teardown(test_sched_create_contract, tu_teardown),
        cmocka_unit_test_teardown(test_sched_submit_adopt_reject_null_and_negative, tu_teardown),
        cmocka_unit_test_teardown(test_sched_tenant_getters_bad_id, tu_teardown),
        cmocka_unit_test_teardown(test_sched_foreach_stops_early, tu_teardown),
        cmocka_unit_test_teardown(test_sched_tenants_add_find_validate, tu_teardown),
        cmocka_unit_test_teardown(test_sched_submit_validates_spec, tu_teardown),
        cmocka_unit_test_teardown(test_sched_lifecycle_finish_cancel_forget, tu_teardown),
        cmocka_unit_test_teardown(test_sched_requeue_keeps_submit_time, tu_teardown),
        cmocka_unit_test_teardown(test_sched_strict_blocking_backfill_none, tu_teardown),
        cmocka_unit_test_teardown(test_sched_nofit_ever_does_not_block, tu_teardown),
        cmocka_unit_test_teardown(test_sched_elastic_starts_largest_count, tu_teardown),
        cmocka_unit_test_teardown(test_sched_quota_blocks_only_its_tenant, tu_teardown),
        cmocka_unit_test_teardown(test_sched_try_start_ignores_order, tu_teardown),
        cmocka_unit_test_teardown(test_sched_adopt_running_job, tu_teardown),
        cmocka_unit_test_teardown(test_sched_max_starts_per_cycle, tu_teardown),
        cmocka_unit_test_teardown(test_sched_track_workload, tu_teardown),
        cmocka_unit_test_teardown(test_sched_on_start_may_call_back, tu_teardown),
        cmocka_unit_test_teardown(test_sched_gang_never_partial_random, tu_teardown),
        cmocka_unit_test_teardown(test_sched_100k_pending_jobs, tu_teardown),
        cmocka_unit_test_teardown(test_sched_quota_change_resumes_skipped_group, tu_teardown),
        cmocka_unit_test_teardown(test_sched_identical_jobs_skipped_together, tu_teardown),
        cmocka_unit_test_teardown(test_sched_group_skip_matches_full_walk_random, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
