/*
 * test_sched.c - the scheduler: tenants, job lifecycle, strict order,
 * never-fitting jobs, elastic jobs, quotas, try_start, adopt, reasons and
 * their units. The seeded randomised tests are in test_sched_random.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_internal.h" /* sl__sched_set_group_skip: the reference walk */
#include "testutil.h"

#define GI (INT64_C(1) << 30)


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
    sl_job_spec_t sp = tu_spec(1, t, 2, tu_req("1", "1Gi", 0, ""));
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
    tu_submit(s, tu_spec(1, t, 2, tu_req("16", "128Gi", 4, ""))); /* the seed's Megatron shape */
    tu_submit(s, tu_spec(2, t, 1, tu_req("4", "16Gi", 2, "")));
    tu_submit(s, tu_spec(3, t, 1, tu_req("1", "1Gi", 0, "0.5")));
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

    tu_submit(s, tu_spec(4, t, 1, tu_req("1", "1Gi", 0, "")));
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
    tu_submit(s, tu_spec(5, t, 1, tu_req("8", "1Gi", 0, "")));
    assert_int_equal(sl_sched_cycle(s, 100, NULL, NULL, NULL), 1);
    tu_submit(s, tu_spec(6, t, 1, tu_req("8", "1Gi", 0, "")));
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
    tu_submit(s, tu_spec(1, t, 1, tu_req("1", "1Gi", 6, "")));
    tu_submit(s, tu_spec(2, t, 2, tu_req("1", "1Gi", 8, ""))); /* needs both nodes whole */
    tu_submit(s, tu_spec(3, u, 1, tu_req("1", "1Gi", 1, ""))); /* would fit */
    tu_submit(s, tu_spec(4, t, 1, tu_req("1", "1Gi", 1, ""))); /* would fit */
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
    tu_submit(s, tu_spec(7, u, 1, tu_req("1", "1Gi", 1, "")));
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
    tu_submit(s, tu_spec(1, t, 1, tu_req("1", "1Gi", 16, ""))); /* no node has 16 GPUs */
    tu_submit(s, tu_spec(2, t, 1, tu_req("1", "1Gi", 4, "")));
    tu_submit(s, tu_spec(3, t, 1, tu_req("1", "1Gi", 16, ""))); /* same shape: cached */
    tu_submit(s, tu_spec(4, t, 1, tu_req("1", "1Gi", 4, "")));
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
            sl_job_spec_t sp = tu_spec(100 + n, t, 1, r);
            char err[256];
            assert_int_equal(sl_sched_adopt(s, &sp, pl, 1, 0, err, sizeof err), 0);
        }
        sl_job_spec_t sp = tu_spec(1, t, cases[c].max, tu_req("4", "32Gi", 4, ""));
        sp.min_tasks = cases[c].min;
        tu_submit(s, sp);
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
    tu_submit(s, tu_spec(1, a, 1, tu_req("1", "1Gi", 6, "")));
    tu_submit(s, tu_spec(2, a, 1, tu_req("1", "1Gi", 4, ""))); /* 6 + 4 > 8 */
    tu_submit(s, tu_spec(3, a, 1, tu_req("1", "1Gi", 1, ""))); /* behind 2 in a's queue */
    tu_submit(s, tu_spec(4, b, 1, tu_req("1", "1Gi", 8, "")));
    sl_job_spec_t el = tu_spec(5, a, 10, tu_req("1", "1Gi", 1, "")); /* elastic, capped by quota */
    el.min_tasks = 1;
    el.priority = 5; /* heads a's queue */
    el.submit_us = 0;
    tu_submit(s, el);
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

/* Regression: a quota reason said "gpu_milli 32000 > 24000" for 32 GPUs
 * against a 24-GPU quota. Reasons speak GPUs, CPUs and bytes with a
 * binary suffix, as the user wrote them. */
static void test_sched_quota_reason_in_user_units(void **state) {
    (void)state;
    sl_cluster_t *cl;
    sl_cluster_create(&cl);
    tu_add_nodes(cl, "g", 8, "64", "512Gi", 8, "H100", "80Gi", NULL);
    sl_sched_t *s = tu_sched_create(cl, "fifo", "none");
    int g = tu_tenant_add(s, "gpu-team", 1, (sl_res_t){0, 0, 24000});
    int c = tu_tenant_add(s, "cpu-team", 1, (sl_res_t){16000, 0, 0});
    int m = tu_tenant_add(s, "mem-team", 1, (sl_res_t){0, 128 * GI, 0});
    tu_submit(s, tu_spec(1, g, 4, tu_req("1", "1Gi", 8, "")));  /* 32 GPUs */
    tu_submit(s, tu_spec(2, c, 1, tu_req("8", "1Gi", 0, "")));  /* runs: 8 CPUs */
    tu_submit(s, tu_spec(3, c, 1, tu_req("12", "1Gi", 0, ""))); /* 8 + 12 > 16 */
    tu_submit(s, tu_spec(4, m, 2, tu_req("1", "96Gi", 0, ""))); /* 192Gi */
    assert_int_equal(sl_sched_cycle(s, 1, NULL, NULL, NULL), 1); /* job 2 */
    assert_string_equal(sl_job_reason(sl_sched_job(s, 1)),
                        "tenant gpu-team quota: 0 GPUs in use + 32 GPUs for this job > 24 GPUs");
    assert_string_equal(sl_job_reason(sl_sched_job(s, 3)),
                        "tenant cpu-team quota: 8 CPUs in use + 12 CPUs for this job > 16 CPUs");
    assert_string_equal(sl_job_reason(sl_sched_job(s, 4)),
                        "tenant mem-team quota: 0 memory in use + 192Gi memory for this job > "
                        "128Gi memory");
    /* Times are seconds. */
    assert_int_equal(sl_sched_cancel(s, 4, 2500000), 0);
    assert_string_equal(sl_job_reason(sl_sched_job(s, 4)), "cancelled at t=2.5s");
    assert_int_equal(sl_sched_requeue(s, 2, 3000000), 0);
    assert_string_equal(sl_job_reason(sl_sched_job(s, 2)), "requeued at t=3s");
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
    tu_submit(s, tu_spec(1, t, 1, tu_req("1", "1Gi", 8, "")));
    tu_submit(s, tu_spec(2, t, 1, tu_req("1", "1Gi", 0, "0.25")));
    tu_submit(s, tu_spec(3, t, 1, tu_req("1", "1Gi", 4, "")));
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
    sl_job_spec_t sp = tu_spec(9, t, 2, tu_req("2", "4Gi", 2, ""));
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
    sl_job_spec_t sp2 = tu_spec(10, t, 2, tu_req("2", "4Gi", 2, ""));
    sl_place_t pl2[2] = {{.node = 0, .gpu_mask = 0xc, .gpu_milli = 1000},
                         {.node = 1, .gpu_mask = 0x3 << 2, .gpu_milli = 1000}};
    assert_int_equal(sl_sched_adopt(s, &sp2, pl2, 2, 6, err, sizeof err), SL_ENOSPC);
    assert_null(sl_sched_job(s, 10));
    assert_int_equal(sl_cluster_node(cl, 0)->gpu_free[2], 1000);
    pl2[0].gpu_mask = 0x7; /* three GPUs for a two-GPU task */
    assert_int_equal(sl_sched_adopt(s, &sp2, pl2, 2, 6, err, sizeof err), SL_EINVAL);
    /* An earlier start time goes earlier in the running list. */
    sl_job_spec_t sp3 = tu_spec(11, t, 1, tu_req("1", "1Gi", 0, ""));
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
    for (uint64_t i = 1; i <= 10; i++) tu_submit(s, tu_spec(i, t, 1, tu_req("1", "1Gi", 0, "")));
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
    tu_submit(s, tu_spec(1, t, 8, tu_req("16", "128Gi", 4, "")));
    tu_submit(s, tu_spec(2, t, 2, tu_req("16", "128Gi", 4, "")));
    tu_submit(s, tu_spec(3, t, 3, tu_req("2", "8Gi", 0, "0.5")));
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
    for (uint64_t i = 1; i <= 6; i++) tu_submit(s, tu_spec(i, t, 1, tu_req("1", "1Gi", 0, "")));
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
    sl_job_spec_t sp = tu_spec(1, t, 1, tu_req("2", "4Gi", 2, ""));
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
    tu_submit(s, tu_spec(1, t, 1, tu_req("2", "4Gi", 2, "")));
    tu_submit(s, tu_spec(2, t, 1, tu_req("2", "4Gi", 4, "")));
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
    for (uint64_t id = 1; id <= 4; id++) tu_submit(s, tu_spec(id, t, 1, tu_req("1", "1Gi", 1, "")));
    for (uint64_t id = 5; id <= 9; id++) tu_submit(s, tu_spec(id, t, 1, tu_req("1", "1Gi", 4, "")));
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
        cmocka_unit_test_teardown(test_sched_quota_reason_in_user_units, tu_teardown),
        cmocka_unit_test_teardown(test_sched_try_start_ignores_order, tu_teardown),
        cmocka_unit_test_teardown(test_sched_adopt_running_job, tu_teardown),
        cmocka_unit_test_teardown(test_sched_max_starts_per_cycle, tu_teardown),
        cmocka_unit_test_teardown(test_sched_track_workload, tu_teardown),
        cmocka_unit_test_teardown(test_sched_on_start_may_call_back, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
