/*
 * test_sched_gang.c - a big gang among tenants that stream short jobs must
 * not starve (issue 8, finding 6): the job blocked at the head keeps its
 * EASY reservation across cycles whichever tenant the queue policy puts
 * first, and starts within the bound stated in policy/backfill_easy.c.
 *
 *  - The scenario of the finding, in discrete events: 8 nodes x 4 GPUs,
 *    two or three tenants keeping a backlog of one-GPU jobs with a 20 s
 *    limit (each runs 10-20 s), and one 8 x 4-GPU gang; under fifo, drf
 *    and wfq the gang keeps the reservation from the first cycle that gave
 *    it one until it starts, and starts by the reserved time, which is at
 *    most 20 s (the longest limit of the jobs running then) after the
 *    reservation was made.
 *  - Seeded random workloads (random nodes, shapes, gangs, elastic jobs,
 *    two or three tenants, fifo/drf/wfq, jobs that end by their limit):
 *    a job that was given a reservation starts no later than the first
 *    reserved time (no job started after it, whatever its tenant or place
 *    in the order, delays it), and the reservation passes to another job
 *    only when the held one has started.
 *  - The rules: under "priority" the hold yields to a pending job of a
 *    higher priority; under drf a tenant's own priorities cannot take
 *    another tenant's hold; a cancel releases it; when no reservation is
 *    possible for the held job (a node it needs went down), it gives the
 *    hold up and holds nothing back.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define GI (INT64_C(1) << 30)
#define SEC INT64_C(1000000)

static int64_t rnd(sl_rng_t *r, int64_t lo, int64_t hi) {
    return lo + (int64_t)sl_rng_below(r, (uint64_t)(hi - lo + 1));
}

/* ---- a small discrete-event driver: jobs end at start + runtime ---- */

enum { MAXJ = 4096 };

typedef struct drv {
    sl_sched_t *s;
    int64_t runtime[MAXJ + 1]; /* by id; each <= the job's limit */
    int64_t now;
} drv_t;

typedef struct ends {
    const drv_t *d;
    int64_t next;
    uint64_t due[MAXJ];
    size_t ndue;
} ends_t;

static int scan_running(void *ud, const sl_job_t *j) {
    ends_t *e = ud;
    int64_t end = sl_job_start_us(j) + e->d->runtime[sl_job_id(j)];
    if (end <= e->d->now) e->due[e->ndue++] = sl_job_id(j);
    else if (end < e->next) e->next = end;
    return 0;
}

/* Ends the jobs due at d->now; returns the next end after it (INT64_MAX if none). */
static int64_t drv_end_due(drv_t *d) {
    static ends_t e;
    e = (ends_t){.d = d, .next = INT64_MAX};
    sl_sched_foreach(d->s, SL_JOB_RUNNING, scan_running, &e);
    for (size_t i = 0; i < e.ndue; i++) assert_int_equal(sl_sched_finish(d->s, e.due[i], d->now), 0);
    e = (ends_t){.d = d, .next = INT64_MAX};
    sl_sched_foreach(d->s, SL_JOB_RUNNING, scan_running, &e);
    return e.next;
}

/* ---- the scenario of the finding ---- */

typedef struct gang_result {
    int64_t resv_made;  /* time of the first cycle that reserved for the gang */
    int64_t resv_at;    /* the reserved start time given then */
    int64_t start;      /* the gang's start, or -1 */
    int later_ahead;    /* jobs submitted after the gang that started before it */
    int held_cycles;    /* cycles that reserved for the gang */
} gang_result_t;

static int count_later(void *ud, const sl_job_t *j) {
    int64_t *p = ud; /* p[0]: gang submit, p[1]: gang start, p[2]: count */
    if (sl_job_spec(j)->submit_us > p[0] && sl_job_start_us(j) >= 0 && sl_job_start_us(j) < p[1])
        p[2]++;
    return 0;
}

/*
 * 8 nodes x 4 GPUs; ntenants tenants each keep `backlog` one-GPU jobs
 * pending (20 s limit, 10-20 s run), submitting one more per tenant and
 * second; at t=5 s tenant 0 submits the 8 x 4-GPU gang (limit 100 s).
 * Runs until the gang starts or 600 s.
 */
static gang_result_t run_gang(const char *queue, int ntenants, uint64_t seed) {
    sl_cluster_t *cl = tu_cluster();
    tu_add_nodes(cl, "g", 8, "32", "256Gi", 4, "A100", "80Gi", NULL);
    sl_sched_config_t cfg;
    sl_sched_config_init(&cfg);
    cfg.queue = queue;
    cfg.backfill = "easy";
    cfg.seed = seed;
    sl_sched_t *s = NULL;
    char err[256];
    assert_int_equal(sl_sched_create(&cfg, cl, &s, err, sizeof err), 0);
    for (int i = 0; i < ntenants; i++) {
        char name[16];
        snprintf(name, sizeof name, "t%d", i);
        tu_tenant_add(s, name, 1, TU_NO_QUOTA);
    }
    static drv_t d;
    memset(&d, 0, sizeof d);
    d.s = s;
    sl_rng_t r;
    sl_rng_seed(&r, seed);
    uint64_t next_id = 1, gang_id = 0;
    const int64_t gang_submit = 5 * SEC;
    gang_result_t res = {-1, -1, -1, 0, 0};
    int64_t next_arrival = 0;
    for (int guard = 0; guard < 100000 && d.now <= 600 * SEC; guard++) {
        int64_t next_end = drv_end_due(&d);
        if (d.now == next_arrival) {
            for (int t = 0; t < ntenants; t++) {
                size_t pend;
                sl_sched_tenant_jobs(s, t, &pend, &(size_t){0});
                /* Top the backlog up (the first second fills it). */
                size_t want = d.now == 0 ? 40 : pend + 1;
                for (; pend < want && next_id < MAXJ; pend++) {
                    sl_job_spec_t sp = tu_spec(next_id, t, 1, tu_req("1", "4Gi", 1, ""));
                    sp.submit_us = d.now;
                    sp.time_limit_us = 20 * SEC;
                    d.runtime[next_id] = rnd(&r, 10, 20) * SEC;
                    tu_submit(s, sp);
                    next_id++;
                }
            }
            if (d.now == gang_submit) {
                gang_id = next_id++;
                sl_job_spec_t sp = tu_spec(gang_id, 0, 8, tu_req("4", "64Gi", 4, ""));
                sp.submit_us = d.now;
                sp.time_limit_us = 100 * SEC;
                d.runtime[gang_id] = 100 * SEC;
                tu_submit(s, sp);
            }
            next_arrival += SEC;
        }
        sl_cycle_stats_t st;
        sl_sched_cycle(s, d.now, NULL, NULL, &st);
        assert_int_equal(sl_sched_check(s), 0);
        if (gang_id && (uint64_t)st.reserved_job == gang_id) {
            res.held_cycles++;
            if (res.resv_made < 0) {
                res.resv_made = d.now;
                res.resv_at = st.reserved_at_us;
            }
            /* Refreshed each cycle, never later than first given. */
            assert_true(st.reserved_at_us <= res.resv_at);
        } else if (res.resv_made >= 0 && res.start < 0) {
            /* Once given, the reservation stays with the gang until it starts. */
            const sl_job_t *g = sl_sched_job(s, gang_id);
            assert_int_equal(sl_job_state(g), SL_JOB_RUNNING);
        }
        if (gang_id && res.start < 0 && sl_job_state(sl_sched_job(s, gang_id)) == SL_JOB_RUNNING) {
            res.start = sl_job_start_us(sl_sched_job(s, gang_id));
            break;
        }
        int64_t next = next_arrival < next_end ? next_arrival : next_end;
        assert_true(next > d.now);
        d.now = next;
    }
    if (res.start >= 0) {
        int64_t p[3] = {gang_submit, res.start, 0};
        sl_sched_foreach(s, SL_JOB_RUNNING, count_later, p);
        sl_sched_foreach(s, SL_JOB_DONE, count_later, p);
        res.later_ahead = (int)p[2];
    }
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
    return res;
}

static void check_gang(const char *queue, int ntenants) {
    for (uint64_t seed = 1; seed <= 5; seed++) {
        gang_result_t g = run_gang(queue, ntenants, seed);
        if (g.start < 0 || g.start > g.resv_at)
            fprintf(stderr, "%s, %d tenants, seed %llu: reserved at %.1f s for %.1f s, "
                    "started %.1f s, %d later jobs ahead\n", queue, ntenants,
                    (unsigned long long)seed, g.resv_made / 1e6, g.resv_at / 1e6, g.start / 1e6,
                    g.later_ahead);
        assert_true(g.resv_made >= 0);
        assert_true(g.start >= 0);
        /* The bound: by the reserved time, itself within the longest limit
         * of the jobs running when the reservation was made (20 s). */
        assert_true(g.start <= g.resv_at);
        assert_true(g.resv_at <= g.resv_made + 20 * SEC);
        assert_true(g.held_cycles >= 1);
    }
}

static void test_sched_gang_two_tenants_drf(void **state) {
    (void)state;
    check_gang("drf", 2);
}

static void test_sched_gang_three_tenants_drf(void **state) {
    (void)state;
    check_gang("drf", 3);
}

static void test_sched_gang_two_and_three_tenants_wfq(void **state) {
    (void)state;
    check_gang("wfq", 2);
    check_gang("wfq", 3);
}

static void test_sched_gang_two_and_three_tenants_fifo(void **state) {
    (void)state;
    check_gang("fifo", 2);
    check_gang("fifo", 3);
}

/* One tenant: plain EASY, as before (the gang is the head in every order). */
static void test_sched_gang_one_tenant(void **state) {
    (void)state;
    check_gang("drf", 1);
    check_gang("fifo", 1);
}

/* ---- the rule for priorities, cancel ---- */

/* One node of 8 GPUs: job 1 (tenant a, 4 GPUs) runs until 101; job 2
 * (tenant a, 8 GPUs, priority 0) is blocked and holds the reservation for
 * 101; then tenant b submits job 3 (8 GPUs, priority 5). */
static sl_sched_t *prio_setup(sl_cluster_t *cl, const char *queue) {
    tu_add_nodes(cl, "g", 1, "32", "256Gi", 8, "A100", "80Gi", NULL);
    sl_sched_t *s = tu_sched_create(cl, queue, "easy");
    tu_tenant_add(s, "a", 1, TU_NO_QUOTA);
    tu_tenant_add(s, "b", 1, TU_NO_QUOTA);
    sl_job_spec_t sp = tu_spec(1, 0, 1, tu_req("1", "1Gi", 4, ""));
    sp.time_limit_us = 100;
    tu_submit(s, sp);
    assert_int_equal(sl_sched_cycle(s, 1, NULL, NULL, NULL), 1);
    sp = tu_spec(2, 0, 1, tu_req("1", "1Gi", 8, ""));
    sp.time_limit_us = 100;
    tu_submit(s, sp);
    sl_cycle_stats_t st;
    assert_int_equal(sl_sched_cycle(s, 2, NULL, NULL, &st), 0);
    assert_int_equal(st.reserved_job, 2);
    int64_t since;
    assert_int_equal(sl_sched_held_job(s, &since), 2);
    assert_int_equal(since, 2);
    sp = tu_spec(3, 1, 1, tu_req("1", "1Gi", 8, ""));
    sp.priority = 5;
    sp.time_limit_us = 100;
    tu_submit(s, sp);
    return s;
}

/* Under "priority" the order does not move with shares, and a pending job
 * of a higher priority comes first: the hold yields to it. */
static void test_sched_gang_hold_yields_to_higher_priority(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    sl_sched_t *s = prio_setup(cl, "priority");
    sl_cycle_stats_t st;
    assert_int_equal(sl_sched_cycle(s, 3, NULL, NULL, &st), 0);
    assert_int_equal(st.reserved_job, 3);
    assert_int_equal(sl_sched_held_job(s, NULL), 3);
    assert_int_equal(sl_sched_finish(s, 1, 100), 0);
    assert_int_equal(sl_sched_cycle(s, 100, NULL, NULL, &st), 1);
    assert_int_equal(sl_job_state(sl_sched_job(s, 3)), SL_JOB_RUNNING);
    assert_int_equal(st.reserved_job, 2); /* the next blocked job holds it again */
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

/* Under drf a priority orders only its own tenant's jobs: tenant b cannot
 * take tenant a's reservation by raising its priority, though b's share
 * (0) puts its job first in the order. */
static void test_sched_gang_hold_kept_against_other_tenants_priority(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    sl_sched_t *s = prio_setup(cl, "drf");
    sl_cycle_stats_t st;
    for (int64_t t = 3; t < 100; t += 10) {
        assert_int_equal(sl_sched_cycle(s, t, NULL, NULL, &st), 0);
        assert_int_equal(st.reserved_job, 2);
        assert_int_equal(st.reserved_at_us, 101);
    }
    assert_non_null(strstr(sl_job_reason(sl_sched_job(s, 2)), "(held since t="));
    assert_int_equal(sl_sched_finish(s, 1, 100), 0);
    assert_int_equal(sl_sched_cycle(s, 100, NULL, NULL, &st), 1);
    assert_int_equal(sl_job_state(sl_sched_job(s, 2)), SL_JOB_RUNNING);
    assert_int_equal(sl_job_state(sl_sched_job(s, 3)), SL_JOB_PENDING);
    assert_int_equal(st.reserved_job, 3);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

/* Cancelling the held job releases the hold; the next cycle gives it to
 * the first blocked job. */
static void test_sched_gang_cancel_releases_hold(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    sl_sched_t *s = prio_setup(cl, "drf");
    assert_int_equal(sl_sched_cancel(s, 2, 3), 0);
    int64_t since;
    assert_int_equal(sl_sched_held_job(s, &since), 0);
    assert_int_equal(since, -1);
    sl_cycle_stats_t st;
    assert_int_equal(sl_sched_cycle(s, 4, NULL, NULL, &st), 0);
    assert_int_equal(st.reserved_job, 3);
    assert_int_equal(sl_sched_held_job(s, &since), 3);
    assert_int_equal(since, 4);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

/* The held job loses its reservation when a node it needs goes down: with
 * no reservation possible its start time is unknown, so it gives the hold
 * up and holds nothing back, and another tenant's job without a time limit
 * starts. That job then keeps the gang out until it ends (no estimate, no
 * reservation): the price of not idling the cluster for a start time
 * nobody knows. */
static void test_sched_gang_no_reservation_holds_nothing_back(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    tu_add_nodes(cl, "g", 2, "32", "256Gi", 8, "A100", "80Gi", NULL);
    sl_sched_t *s = tu_sched_create(cl, "drf", "easy");
    tu_tenant_add(s, "a", 1, TU_NO_QUOTA);
    tu_tenant_add(s, "b", 1, TU_NO_QUOTA);
    sl_job_spec_t sp = tu_spec(1, 0, 1, tu_req("1", "1Gi", 4, ""));
    sp.time_limit_us = 30;
    tu_submit(s, sp);
    assert_int_equal(sl_sched_cycle(s, 1, NULL, NULL, NULL), 1);
    tu_submit(s, tu_spec(2, 0, 2, tu_req("1", "1Gi", 8, "")));
    sl_cycle_stats_t st;
    assert_int_equal(sl_sched_cycle(s, 2, NULL, NULL, &st), 0);
    assert_int_equal(st.reserved_job, 2);
    assert_int_equal(st.reserved_at_us, 31);
    assert_int_equal(sl_sched_held_job(s, NULL), 2);
    uint32_t other = 1 - sl_job_place(sl_sched_job(s, 1), 0)->node;
    assert_int_equal(sl_cluster_set_state(cl, other, SL_NODE_DOWN), 0);
    tu_submit(s, tu_spec(3, 1, 1, tu_req("1", "1Gi", 2, ""))); /* b, no limit */
    assert_int_equal(sl_sched_cycle(s, 3, NULL, NULL, &st), 1);
    assert_int_equal(tu_state(s, 3), SL_JOB_RUNNING);
    assert_int_equal(st.reserved_job, -1);
    assert_int_equal(sl_sched_held_job(s, NULL), 0);
    assert_non_null(strstr(sl_job_reason(sl_sched_job(s, 2)), "no reservation possible"));
    assert_int_equal(sl_cluster_set_state(cl, other, SL_NODE_UP), 0);
    assert_int_equal(sl_sched_finish(s, 1, 31), 0);
    assert_int_equal(sl_sched_cycle(s, 31, NULL, NULL, &st), 0);
    assert_int_equal(st.reserved_job, -1);
    assert_int_equal(sl_sched_finish(s, 3, 40), 0);
    assert_int_equal(sl_sched_cycle(s, 40, NULL, NULL, &st), 1);
    assert_int_equal(tu_state(s, 2), SL_JOB_RUNNING);
    assert_int_equal(sl_sched_check(s), 0);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

/* ---- seeded random workloads: no job started after a reservation delays it ---- */

static void test_sched_gang_hold_never_delayed_random(void **state) {
    (void)state;
    const char *queues[] = {"fifo", "drf", "wfq"};
    const sl_place_policy_t *const *pols = sl_place_policy_list();
    size_t npols = 0;
    while (pols[npols]) npols++;
    int reservations = 0, backfilled = 0, moved = 0;
    for (uint64_t seed = 1; seed <= 240; seed++) {
        sl_rng_t r;
        sl_rng_seed(&r, seed * 6151);
        sl_cluster_t *cl = tu_cluster();
        int nnodes = (int)rnd(&r, 1, 6);
        for (int i = 0; i < nnodes; i++) {
            char name[16];
            snprintf(name, sizeof name, "n%d", i);
            int32_t gpus = rnd(&r, 0, 4) ? (int32_t)rnd(&r, 1, 8) : 0;
            tu_node_add(cl, tu_node_spec(name, rnd(&r, 8, 64) * 1000, rnd(&r, 32, 256) * GI,
                                         gpus, gpus ? "A100" : NULL, gpus ? 40 * GI : 0, NULL));
        }
        int64_t def = rnd(&r, 0, 1) ? 40 : 0;
        sl_sched_config_t cfg;
        sl_sched_config_init(&cfg);
        cfg.queue = queues[seed % 3];
        cfg.backfill = "easy";
        cfg.placement = pols[seed % npols]->name;
        cfg.seed = seed;
        cfg.default_time_limit_us = def;
        sl_sched_t *s = NULL;
        char err[256];
        assert_int_equal(sl_sched_create(&cfg, cl, &s, err, sizeof err), 0);
        int ntenants = (int)rnd(&r, 2, 3);
        for (int i = 0; i < ntenants; i++) {
            char name[16];
            snprintf(name, sizeof name, "t%d", i);
            tu_tenant_add(s, name, (int32_t)rnd(&r, 1, 3), TU_NO_QUOTA);
        }
        enum { NJ = 60 };
        static drv_t d;
        memset(&d, 0, sizeof d);
        d.s = s;
        sl_job_spec_t specs[NJ];
        int64_t first_resv[NJ + 1];
        int64_t t_sub = 0;
        for (int i = 0; i < NJ; i++) {
            t_sub += rnd(&r, 0, 8);
            sl_task_req_t task;
            sl_task_req_init(&task);
            task.cpu_milli = rnd(&r, 1, 8) * 1000;
            task.mem_bytes = rnd(&r, 1, 32) * GI;
            int64_t k = rnd(&r, 0, 4);
            if (k <= 2) task.gpus = (int32_t)rnd(&r, 1, 4);
            else if (k == 3) task.gpu_milli = (int32_t)rnd(&r, 1, 9) * 100;
            /* Mostly small short jobs, some wide gangs. */
            int32_t ntasks = rnd(&r, 0, 5) ? (int32_t)rnd(&r, 1, 2) : (int32_t)rnd(&r, 3, 8);
            specs[i] = (sl_job_spec_t){.id = (uint64_t)i + 1,
                                       .tenant = (int32_t)rnd(&r, 0, ntenants - 1),
                                       .priority = (int32_t)rnd(&r, 0, 2), .submit_us = t_sub,
                                       .ntasks = ntasks, .task = task,
                                       .time_limit_us = rnd(&r, 1, 100)};
            if (def && rnd(&r, 0, 2) == 0) specs[i].time_limit_us = 0; /* estimated by def */
            if (rnd(&r, 0, 4) == 0) specs[i].min_tasks = (int32_t)rnd(&r, 1, ntasks);
            /* Jobs honour their limits (or the default): each ends by it. */
            int64_t lim = specs[i].time_limit_us ? specs[i].time_limit_us : def;
            d.runtime[i + 1] = rnd(&r, 1, lim);
            first_resv[i + 1] = -1;
        }
        int next_sub = 0;
        uint64_t prev_held = 0;
        for (int guard = 0; guard < 20000; guard++) {
            int64_t next_end = drv_end_due(&d);
            while (next_sub < NJ && specs[next_sub].submit_us <= d.now) {
                tu_submit(s, specs[next_sub]);
                next_sub++;
            }
            sl_cycle_stats_t st;
            sl_sched_cycle(s, d.now, NULL, NULL, &st);
            assert_int_equal(sl_sched_check(s), 0);
            backfilled += st.backfilled;
            if (prev_held && (int64_t)prev_held != st.reserved_job)
                /* The reservation moves on only once its job has started. */
                assert_int_not_equal(sl_job_state(sl_sched_job(s, prev_held)), SL_JOB_PENDING);
            if (st.reserved_job > 0) {
                assert_true(st.reserved_at_us >= d.now);
                int64_t *f = &first_resv[st.reserved_job];
                if (*f < 0) {
                    *f = st.reserved_at_us;
                    reservations++;
                } else if (st.reserved_at_us < *f) {
                    moved++;
                }
                assert_true(st.reserved_at_us <= *f);
                assert_int_equal(sl_sched_held_job(s, NULL), (uint64_t)st.reserved_job);
            }
            prev_held = st.reserved_job > 0 ? (uint64_t)st.reserved_job : 0;
            next_end = drv_end_due(&d);
            int64_t next = next_end;
            if (next_sub < NJ && specs[next_sub].submit_us < next) next = specs[next_sub].submit_us;
            if (next == INT64_MAX) break;
            assert_true(next > d.now);
            d.now = next;
        }
        for (int i = 1; i <= NJ; i++) {
            if (first_resv[i] < 0) continue;
            const sl_job_t *j = sl_sched_job(s, (uint64_t)i);
            assert_int_not_equal(sl_job_state(j), SL_JOB_PENDING);
            if (sl_job_start_us(j) > first_resv[i])
                fprintf(stderr, "seed %llu (%s): job %d reserved for %lld started %lld\n",
                        (unsigned long long)seed, cfg.queue, i, (long long)first_resv[i],
                        (long long)sl_job_start_us(j));
            assert_true(sl_job_start_us(j) <= first_resv[i]);
        }
        sl_sched_destroy(s);
        sl_cluster_destroy(cl);
        assert_int_equal(sl_alloc_live(), 0);
    }
    fprintf(stderr, "reservations: %d, moved earlier: %d, backfilled: %d\n", reservations, moved,
            backfilled);
    /* The generator must exercise reservations, early ends and backfill. */
    assert_true(reservations > 200);
    assert_true(moved > 20);
    assert_true(backfilled > 200);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_sched_gang_two_tenants_drf, tu_teardown),
        cmocka_unit_test_teardown(test_sched_gang_three_tenants_drf, tu_teardown),
        cmocka_unit_test_teardown(test_sched_gang_two_and_three_tenants_wfq, tu_teardown),
        cmocka_unit_test_teardown(test_sched_gang_two_and_three_tenants_fifo, tu_teardown),
        cmocka_unit_test_teardown(test_sched_gang_one_tenant, tu_teardown),
        cmocka_unit_test_teardown(test_sched_gang_hold_yields_to_higher_priority, tu_teardown),
        cmocka_unit_test_teardown(test_sched_gang_hold_kept_against_other_tenants_priority,
                                  tu_teardown),
        cmocka_unit_test_teardown(test_sched_gang_cancel_releases_hold, tu_teardown),
        cmocka_unit_test_teardown(test_sched_gang_no_reservation_holds_nothing_back, tu_teardown),
        cmocka_unit_test_teardown(test_sched_gang_hold_never_delayed_random, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
