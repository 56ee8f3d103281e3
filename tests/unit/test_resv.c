/*
 * test_resv.c - advance reservations (sluice/resv.h): hand-made cases (a
 * job that would run into the window is kept off the reserved nodes and a
 * short one is backfilled before it; a job of the reservation waits for
 * the window and runs only on its nodes; tenants it does not admit are
 * refused; nodes picked by count and by GPUs; every refusal names its
 * field), and a seeded randomised workload under EASY backfill and each
 * queue policy (jobs of one to three tasks; half the seeds with a backfill
 * limit of 4 jobs), checked at every cycle: no job outside a reservation runs
 * on its nodes inside its window, no job of a reservation runs outside its
 * nodes or its window, and at each window's start its nodes are empty of
 * other jobs and a pending job of it starts then (backfill never delays
 * it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sched_internal.h" /* sl__sched_set_group_skip: the reference walk */
#include "testutil.h"
#include "sluice/resv.h"

static int32_t add_resv(sl_sched_t *s, const char *name, int64_t start, int64_t end,
                        const uint32_t *nodes, size_t nnodes, int32_t count, int32_t gpus,
                        int32_t tenant) {
    sl_resv_spec_t sp = {.name = name, .start_us = start, .end_us = end, .nodes = nodes,
                         .nnodes = nnodes, .node_count = count, .gpus = gpus,
                         .tenants = &tenant, .ntenants = 1};
    char err[256];
    int32_t id = -1;
    int rc = sl_sched_resv_add(s, &sp, 0, &id, err, sizeof err);
    if (rc != 0) fail_msg("sl_sched_resv_add: %s", err);
    return id;
}

static void sub(sl_sched_t *s, uint64_t id, int tn, int gpus, int64_t limit, int32_t resv) {
    sl_job_spec_t sp = tu_spec(id, tn, 1, tu_req("1", "1Gi", gpus, ""));
    sp.time_limit_us = limit;
    sp.resv = resv;
    tu_submit(s, sp);
}

static uint32_t node_of(const sl_sched_t *s, uint64_t id) {
    return sl_job_place(sl_sched_job(s, id), 0)->node;
}

/* Two nodes of 4 GPUs; node 1 reserved for tenant b from 100 to 200. */
static void test_resv_keeps_nodes_and_backfills_before(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    tu_add_nodes(cl, "g", 2, "32", "256Gi", 4, "H100", "80Gi", NULL);
    sl_sched_t *s = tu_sched_create(cl, "fifo", "easy");
    int a = tu_tenant_add(s, "a", 1, TU_NO_QUOTA);
    int b = tu_tenant_add(s, "b", 1, TU_NO_QUOTA);
    uint32_t n1 = 1;
    int32_t r = add_resv(s, "maint", 100, 200, &n1, 1, 0, 0, b);
    assert_true(r >= 1);
    assert_int_equal(sl_sched_resv_find(s, "maint"), r);

    sub(s, 1, a, 4, 500, 0); /* would run into the window: node 0 only */
    sub(s, 2, a, 4, 50, 0);  /* ends at 60 <= 100: backfilled onto node 1 */
    sub(s, 3, a, 4, 500, 0); /* no node left for it now */
    sub(s, 4, b, 4, 50, r);  /* waits for the window */
    assert_int_equal(sl_sched_cycle(s, 10, NULL, NULL, NULL), 2);
    assert_int_equal(node_of(s, 1), 0);
    assert_int_equal(node_of(s, 2), 1);
    assert_int_equal(tu_state(s, 3), SL_JOB_PENDING);
    assert_int_equal(tu_state(s, 4), SL_JOB_PENDING);
    assert_non_null(strstr(sl_job_reason(sl_sched_job(s, 4)), "waiting for reservation maint"));

    /* Job 2 ends; job 3 still may not take node 1 (60 + 500 > 100). */
    assert_int_equal(sl_sched_finish(s, 2, 60), 0);
    assert_int_equal(sl_sched_cycle(s, 60, NULL, NULL, NULL), 0);
    assert_int_equal(tu_state(s, 3), SL_JOB_PENDING);
    assert_non_null(strstr(sl_job_reason(sl_sched_job(s, 3)), "kept off reserved nodes"));

    /* At the window's start the reserved job starts, on node 1. */
    assert_int_equal(sl_sched_cycle(s, 100, NULL, NULL, NULL), 1);
    assert_int_equal(tu_state(s, 4), SL_JOB_RUNNING);
    assert_int_equal(node_of(s, 4), 1);
    assert_int_equal(sl_sched_check(s), 0);

    /* After the window node 1 is everybody's again. */
    assert_int_equal(sl_sched_finish(s, 4, 150), 0);
    assert_int_equal(sl_sched_cycle(s, 200, NULL, NULL, NULL), 1);
    assert_int_equal(node_of(s, 3), 1);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

/* A job of a reservation uses only its nodes, and only inside the window;
 * after the window it can never start. */
static void test_resv_job_only_inside(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    tu_add_nodes(cl, "g", 3, "32", "256Gi", 4, "H100", "80Gi", NULL);
    sl_sched_t *s = tu_sched_create(cl, "fifo", "none");
    int a = tu_tenant_add(s, "a", 1, TU_NO_QUOTA);
    int32_t r = add_resv(s, "one", 0, 100, NULL, 0, 1, 0, a);
    sl_resv_info_t ri;
    assert_int_equal(sl_sched_resv_get(s, r, &ri), 0);
    assert_int_equal(ri.nnodes, 1);
    assert_int_equal(ri.gpus, 4);
    sub(s, 1, a, 4, 50, r);
    sub(s, 2, a, 4, 50, r); /* its one node is full: waits, holds nothing back */
    sub(s, 3, a, 4, 0, 0);  /* no limit: never on the reserved node while it lasts */
    assert_int_equal(sl_sched_cycle(s, 10, NULL, NULL, NULL), 2);
    assert_int_equal(node_of(s, 1), ri.nodes[0]);
    assert_true(node_of(s, 3) != ri.nodes[0]);
    assert_int_equal(tu_state(s, 2), SL_JOB_PENDING);
    assert_non_null(strstr(sl_job_reason(sl_sched_job(s, 2)), "in its reservation's nodes"));
    assert_int_equal(sl_sched_cycle(s, 100, NULL, NULL, NULL), 0);
    assert_int_equal(sl_job_status(sl_sched_job(s, 2)), SL_NOFIT_EVER);
    assert_non_null(strstr(sl_job_reason(sl_sched_job(s, 2)), "ended"));
    /* Removed: its pending job says so. */
    assert_int_equal(sl_sched_resv_remove(s, r), 0);
    assert_int_equal(sl_sched_resv_remove(s, r), SL_ENOENT);
    assert_int_equal(sl_sched_resv_count(s), 0);
    sl_sched_cycle(s, 110, NULL, NULL, NULL);
    assert_non_null(strstr(sl_job_reason(sl_sched_job(s, 2)), "no longer exists"));
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

static void test_resv_tenants_and_picking(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    tu_add_nodes(cl, "c", 2, "32", "256Gi", 0, NULL, NULL, NULL);
    tu_add_nodes(cl, "g", 2, "32", "256Gi", 8, "H100", "80Gi", NULL);
    tu_add_nodes(cl, "s", 1, "32", "256Gi", 2, "H100", "80Gi", NULL);
    sl_sched_t *s = tu_sched_create(cl, "fifo", "easy");
    int a = tu_tenant_add(s, "a", 1, TU_NO_QUOTA);
    int b = tu_tenant_add(s, "b", 1, TU_NO_QUOTA);
    /* 10 GPUs: the two 8-GPU nodes, most GPUs first. */
    int32_t r = add_resv(s, "gpu", 1000, 2000, NULL, 0, 0, 10, a);
    sl_resv_info_t ri;
    assert_int_equal(sl_sched_resv_get(s, r, &ri), 0);
    assert_int_equal(ri.nnodes, 2);
    assert_int_equal(ri.gpus, 16);
    assert_int_equal(sl_sched_resv_count(s), 1);
    assert_int_equal(sl_sched_resv_at(s, 0, &ri), 0);
    assert_string_equal(ri.name, "gpu");
    assert_int_equal(sl_sched_resv_at(s, 1, &ri), SL_ENOENT);
    assert_true(sl_sched_resv_admits(s, r, a));
    assert_false(sl_sched_resv_admits(s, r, b));
    assert_false(sl_sched_resv_admits(s, 99, a));

    sl_job_spec_t sp = tu_spec(1, b, 1, tu_req("1", "1Gi", 1, ""));
    sp.resv = r;
    char err[256];
    assert_int_equal(sl_sched_submit(s, &sp, err, sizeof err), SL_EPERM);
    assert_non_null(strstr(err, "does not admit tenant b"));
    sp.resv = 42;
    assert_int_equal(sl_sched_submit(s, &sp, err, sizeof err), SL_ENOENT);
    assert_non_null(strstr(err, "reservation"));

    /* Refusals name their field. */
    int32_t t = a;
    uint32_t g0 = 2, nodes2[2] = {0, 0};
    struct {
        sl_resv_spec_t sp;
        int rc;
        const char *field;
    } cases[] = {
        {{.name = "", .start_us = 0, .end_us = 10, .node_count = 1, .tenants = &t, .ntenants = 1},
         SL_EINVAL, "name:"},
        {{.name = "gpu", .start_us = 0, .end_us = 10, .node_count = 1, .tenants = &t,
          .ntenants = 1}, SL_EEXIST, "name:"},
        {{.name = "x", .start_us = 10, .end_us = 10, .node_count = 1, .tenants = &t,
          .ntenants = 1}, SL_EINVAL, "duration:"},
        {{.name = "x", .start_us = 0, .end_us = 10, .tenants = &t, .ntenants = 1}, SL_EINVAL,
         "nodes:"},
        {{.name = "x", .start_us = 0, .end_us = 10, .node_count = 1, .gpus = 1, .tenants = &t,
          .ntenants = 1}, SL_EINVAL, "nodes:"},
        {{.name = "x", .start_us = 0, .end_us = 10, .node_count = 1, .ntenants = 0}, SL_EINVAL,
         "tenants:"},
        {{.name = "x", .start_us = 1500, .end_us = 3000, .nodes = &g0, .nnodes = 1,
          .tenants = &t, .ntenants = 1}, SL_EBUSY, "in reservation gpu"},
        {{.name = "x", .start_us = 0, .end_us = 10, .nodes = nodes2, .nnodes = 2, .tenants = &t,
          .ntenants = 1}, SL_EINVAL, "named twice"},
        {{.name = "x", .start_us = 0, .end_us = 10, .node_count = 9, .tenants = &t,
          .ntenants = 1}, SL_ENOSPC, "node_count:"},
        {{.name = "x", .start_us = 1500, .end_us = 3000, .gpus = 3, .tenants = &t,
          .ntenants = 1}, SL_ENOSPC, "gpus:"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        err[0] = '\0';
        assert_int_equal(sl_sched_resv_add(s, &cases[i].sp, 0, NULL, err, sizeof err),
                         cases[i].rc);
        if (!strstr(err, cases[i].field)) fail_msg("case %zu: %s", i, err);
    }
    assert_int_equal(sl_sched_resv_count(s), 1);
    /* After its window another reservation may take the same nodes. */
    add_resv(s, "later", 2000, 3000, NULL, 0, 0, 10, a);
    /* A node running a job expected past the start is not picked or named. */
    tu_adopt_one(s, 7, 4, 2, 5000);
    sl_resv_spec_t busy = {.name = "busy", .start_us = 100, .end_us = 200, .nodes = (uint32_t[]){4},
                           .nnodes = 1, .tenants = &t, .ntenants = 1};
    assert_int_equal(sl_sched_resv_add(s, &busy, 0, NULL, err, sizeof err), SL_EBUSY);
    assert_non_null(strstr(err, "runs a job expected to end"));
    busy.ignore_jobs = true;
    assert_int_equal(sl_sched_resv_add(s, &busy, 0, NULL, err, sizeof err), 0);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

/* The backfill limit (max_backfill_tries) stops a cycle after so many jobs
 * past the EASY reservation; a job of a reservation behind more than that
 * still starts at its window's start. */
static void test_resv_job_starts_behind_the_backfill_limit(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    tu_add_nodes(cl, "g", 3, "32", "256Gi", 4, "H100", "80Gi", NULL);
    sl_sched_config_t cfg;
    sl_sched_config_init(&cfg);
    cfg.queue = "fifo";
    cfg.backfill = "easy";
    cfg.max_backfill_tries = 50;
    sl_sched_t *s = NULL;
    char err[256];
    assert_int_equal(sl_sched_create(&cfg, cl, &s, err, sizeof err), 0);
    int a = tu_tenant_add(s, "a", 1, TU_NO_QUOTA);
    uint32_t n2 = 2;
    int32_t r = add_resv(s, "late", 1000, 2000, &n2, 1, 0, 0, a);
    tu_adopt_one(s, 1, 0, 4, 5000);
    tu_adopt_one(s, 2, 1, 4, 5000);
    /* Blocked on nodes 0 and 1 until 5000: takes the EASY reservation. */
    sl_job_spec_t gang = tu_spec(3, a, 2, tu_req("1", "1Gi", 4, ""));
    gang.time_limit_us = 100;
    tu_submit(s, gang);
    /* Each would run into the window on node 2, and fits nowhere else. */
    for (uint64_t id = 4; id < 300; id++) sub(s, id, a, 1 + (int)(id % 4), 5000 + (int64_t)id, 0);
    sub(s, 300, a, 4, 100, r);
    sl_cycle_stats_t st;
    assert_int_equal(sl_sched_cycle(s, 10, NULL, NULL, &st), 0);
    assert_int_equal(st.reserved_job, 3);
    assert_int_equal(tu_state(s, 300), SL_JOB_PENDING);
    assert_non_null(strstr(sl_job_reason(sl_sched_job(s, 299)), "not considered"));
    assert_int_equal(sl_sched_cycle(s, 1000, NULL, NULL, NULL), 1);
    assert_int_equal(tu_state(s, 300), SL_JOB_RUNNING);
    assert_int_equal(node_of(s, 300), 2);
    assert_int_equal(sl_sched_check(s), 0);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

/* ---- the randomised check ---- */

#define NJOBS 160
#define NRESV 3

typedef struct rj {
    int64_t submit, runtime, limit;
    int32_t resv_ix;  /* -1 or index in the test's reservations */
    int tenant, gpus, ntasks;
} rj_t;

static bool on_node(const sl_job_t *j, uint32_t node) {
    for (int32_t i = 0; i < sl_job_ntasks_placed(j); i++)
        if (sl_job_place(j, i)->node == node) return true;
    return false;
}

typedef struct chk {
    const sl_sched_t *s;
    const sl_resv_info_t *ri;
    const int32_t *rid;
    int64_t now;
    int64_t limit_default;
    int bad;
    int before;  /* jobs outside a reservation on its nodes before its window */
} chk_t;

static int check_running(void *ud, const sl_job_t *j) {
    chk_t *c = ud;
    const sl_job_spec_t *sp = sl_job_spec(j);
    int64_t st = sl_job_start_us(j);
    int64_t lim = sp->time_limit_us > 0 ? sp->time_limit_us : c->limit_default;
    /* A job of a reservation is stopped at its window's end (as sluiced
     * does, and this test's loop). */
    for (int k = 0; k < NRESV; k++)
        if (sp->resv == c->rid[k] && c->ri[k].end_us - st < lim) lim = c->ri[k].end_us - st;
    for (int k = 0; k < NRESV; k++) {
        const sl_resv_info_t *r = &c->ri[k];
        if (sp->resv == c->rid[k]) {
            /* Only its nodes, only inside its window. */
            if (st < r->start_us || st >= r->end_us || c->now >= r->end_us) c->bad++;
            for (int32_t i = 0; i < sl_job_ntasks_placed(j); i++) {
                bool in = false;
                for (size_t x = 0; x < r->nnodes; x++) in |= sl_job_place(j, i)->node == r->nodes[x];
                if (!in) c->bad++;
            }
            continue;
        }
        for (size_t x = 0; x < r->nnodes; x++) {
            if (!on_node(j, r->nodes[x])) continue;
            /* Started before the window and ends by its start, or after it. */
            if (st + lim <= r->start_us) c->before++;
            if (!(st + lim <= r->start_us || st >= r->end_us)) {
                print_error("job %llu (start %lld, limit %lld) on node %u of %s [%lld, %lld)\n",
                            (unsigned long long)sp->id, (long long)st, (long long)lim,
                            r->nodes[x], r->name, (long long)r->start_us, (long long)r->end_us);
                c->bad++;
            }
        }
    }
    return 0;
}

typedef struct tally {
    int at_start;  /* window starts with pending jobs of the reservation */
    int before;    /* cycles with another job backfilled onto reserved nodes before */
} tally_t;

/* One workload; with skip false the reference walk (every job examined);
 * starts[i] gets job i+1's start time (-1: never). */
static void run_random(uint64_t seed, const char *queue, tally_t *ta, bool skip,
                       int64_t *starts) {
    sl_rng_t rng;
    sl_rng_seed(&rng, seed);
    sl_cluster_t *cl = tu_cluster();
    tu_add_nodes(cl, "g", 6, "64", "512Gi", 4, "H100", "80Gi", NULL);
    sl_sched_config_t cfg;
    sl_sched_config_init(&cfg);
    cfg.queue = queue;
    cfg.backfill = "easy";
    cfg.seed = seed;
    cfg.default_time_limit_us = 400;
    cfg.max_backfill_tries = seed % 2 ? 4 : 0; /* a small limit: resv_begin's case */
    sl_sched_t *s = NULL;
    char err[256];
    assert_int_equal(sl_sched_create(&cfg, cl, &s, err, sizeof err), 0);
    sl__sched_set_group_skip(s, skip);
    int tn[3] = {tu_tenant_add(s, "a", 1, TU_NO_QUOTA), tu_tenant_add(s, "b", 2, TU_NO_QUOTA),
                 tu_tenant_add(s, "c", 1, TU_NO_QUOTA)};

    /* Three reservations of 1..2 nodes, windows in [200, 1800). */
    sl_resv_info_t ri[NRESV];
    int32_t rid[NRESV];
    int rtenant[NRESV];
    for (int k = 0; k < NRESV; k++) {
        char name[16];
        snprintf(name, sizeof name, "r%d", k);
        int64_t start = 200 + (int64_t)sl_rng_below(&rng, 1200);
        int64_t dur = 100 + (int64_t)sl_rng_below(&rng, 400);
        rtenant[k] = tn[sl_rng_below(&rng, 3)];
        sl_resv_spec_t sp = {.name = name, .start_us = start, .end_us = start + dur,
                             .node_count = 1 + (int32_t)sl_rng_below(&rng, 2),
                             .tenants = &rtenant[k], .ntenants = 1};
        int rc = sl_sched_resv_add(s, &sp, 0, &rid[k], err, sizeof err);
        if (rc != 0) { /* overlapping windows took the nodes: a smaller one */
            sp.node_count = 1;
            sp.start_us = 2000 + 600 * k;
            sp.end_us = sp.start_us + dur;
            assert_int_equal(sl_sched_resv_add(s, &sp, 0, &rid[k], err, sizeof err), 0);
        }
        assert_int_equal(sl_sched_resv_get(s, rid[k], &ri[k]), 0);
    }

    rj_t jobs[NJOBS];
    for (int i = 0; i < NJOBS; i++) {
        rj_t *j = &jobs[i];
        j->submit = (int64_t)sl_rng_below(&rng, 2400);
        j->limit = sl_rng_below(&rng, 5) == 0 ? 0 : 20 + (int64_t)sl_rng_below(&rng, 500);
        int64_t lim = j->limit ? j->limit : cfg.default_time_limit_us;
        j->runtime = 1 + (int64_t)sl_rng_below(&rng, (uint32_t)lim);
        j->resv_ix = sl_rng_below(&rng, 4) == 0 ? (int32_t)sl_rng_below(&rng, NRESV) : -1;
        /* Gangs too; a reservation's fit on one of its empty nodes. */
        j->ntasks = 1 + (int)sl_rng_below(&rng, j->resv_ix >= 0 ? 2 : 3);
        j->gpus = 1 + (int)sl_rng_below(&rng, j->resv_ix >= 0 ? (uint64_t)(4 / j->ntasks) : 4);
        j->tenant = j->resv_ix >= 0 ? rtenant[j->resv_ix] : tn[sl_rng_below(&rng, 3)];
    }
    int64_t end_at[NJOBS];
    bool submitted[NJOBS] = {false};
    for (int i = 0; i < NJOBS; i++) end_at[i] = -1;

    /* Event times: submits, window starts and ends, job ends (by runtime). */
    int64_t now = 0;
    int started_at_window[NRESV] = {0};
    for (int step = 0; step < 20000; step++) {
        /* Jobs end by their runtime; jobs of a reservation at its end. */
        for (int i = 0; i < NJOBS; i++) {
            if (end_at[i] < 0) continue;
            const sl_job_t *j = sl_sched_job(s, (uint64_t)i + 1);
            if (sl_job_state(j) != SL_JOB_RUNNING) continue;
            int64_t e = end_at[i];
            if (jobs[i].resv_ix >= 0 && ri[jobs[i].resv_ix].end_us < e) e = ri[jobs[i].resv_ix].end_us;
            if (e <= now) assert_int_equal(sl_sched_finish(s, (uint64_t)i + 1, now), 0);
        }
        for (int i = 0; i < NJOBS; i++) {
            if (submitted[i] || jobs[i].submit > now) continue;
            sl_job_spec_t sp = tu_spec((uint64_t)i + 1, jobs[i].tenant, jobs[i].ntasks,
                                       tu_req("1", "1Gi", jobs[i].gpus, ""));
            sp.submit_us = jobs[i].submit;
            sp.time_limit_us = jobs[i].limit;
            sp.resv = jobs[i].resv_ix >= 0 ? rid[jobs[i].resv_ix] : 0;
            tu_submit(s, sp);
            submitted[i] = true;
        }
        /* Which reservations' windows start now, and whether they have
         * pending jobs submitted before. */
        bool pend_before[NRESV] = {false};
        for (int k = 0; k < NRESV; k++) {
            if (ri[k].start_us != now) continue;
            for (int i = 0; i < NJOBS; i++)
                if (submitted[i] && jobs[i].resv_ix == k &&
                    sl_job_state(sl_sched_job(s, (uint64_t)i + 1)) == SL_JOB_PENDING)
                    pend_before[k] = true;
        }
        tu_ids_t ids = {.n = 0};
        sl_sched_cycle(s, now, tu_ids_on_start, &ids, NULL);
        for (size_t x = 0; x < ids.n; x++) {
            int i = (int)ids.v[x] - 1;
            end_at[i] = now + jobs[i].runtime;
            if (jobs[i].resv_ix >= 0 && ri[jobs[i].resv_ix].start_us == now)
                started_at_window[jobs[i].resv_ix]++;
        }
        for (int k = 0; k < NRESV; k++) ta->at_start += pend_before[k];
        for (int k = 0; k < NRESV; k++)
            if (pend_before[k] && started_at_window[k] == 0)
                fail_msg("seed %llu %s: reservation %s has pending jobs at its start %lld and none "
                         "started", (unsigned long long)seed, queue, ri[k].name,
                         (long long)now);
        chk_t c = {s, ri, rid, now, cfg.default_time_limit_us, 0, 0};
        sl_sched_foreach(s, SL_JOB_RUNNING, check_running, &c);
        ta->before += c.before > 0;
        if (c.bad) fail_msg("seed %llu %s: %d violations at t=%lld", (unsigned long long)seed,
                            queue, c.bad, (long long)now);
        assert_int_equal(sl_sched_check(s), 0);

        /* The next event. */
        int64_t next = INT64_MAX;
        for (int i = 0; i < NJOBS; i++) {
            if (!submitted[i] && jobs[i].submit > now && jobs[i].submit < next) next = jobs[i].submit;
            if (end_at[i] > now && end_at[i] < next &&
                sl_job_state(sl_sched_job(s, (uint64_t)i + 1)) == SL_JOB_RUNNING)
                next = end_at[i];
        }
        for (int k = 0; k < NRESV; k++) {
            if (ri[k].start_us > now && ri[k].start_us < next) next = ri[k].start_us;
            if (ri[k].end_us > now && ri[k].end_us < next) next = ri[k].end_us;
        }
        if (next == INT64_MAX) break;
        now = next;
    }
    for (int i = 0; i < NJOBS; i++) {
        const sl_job_t *j = sl_sched_job(s, (uint64_t)i + 1);
        starts[i] = j ? sl_job_start_us(j) : -2;
    }
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

static void test_resv_random_workload(void **state) {
    (void)state;
    const char *queues[] = {"fifo", "drf", "priority"};
    tally_t ta = {0, 0};
    for (uint64_t seed = 1; seed <= 40; seed++) {
        /* The same decisions as the walk that examines every job (group
         * verdicts are skipped only once every window has begun); not with
         * a backfill limit, which skipped jobs do not count toward. */
        int64_t a[NJOBS], b[NJOBS];
        tally_t ref = {0, 0};
        run_random(seed, queues[seed % 3], &ta, true, a);
        if (seed % 2) continue;
        run_random(seed, queues[seed % 3], &ref, false, b);
        for (int i = 0; i < NJOBS; i++)
            if (a[i] != b[i])
                fail_msg("seed %llu: job %d started at %lld, by the walk at %lld",
                         (unsigned long long)seed, i + 1, (long long)a[i], (long long)b[i]);
    }
    /* The workload exercises both promises. */
    print_message("window starts with pending jobs: %d; cycles with backfill before a "
                  "window: %d\n", ta.at_start, ta.before);
    assert_true(ta.at_start >= 10);
    assert_true(ta.before >= 10);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_resv_keeps_nodes_and_backfills_before, tu_teardown),
        cmocka_unit_test_teardown(test_resv_job_only_inside, tu_teardown),
        cmocka_unit_test_teardown(test_resv_tenants_and_picking, tu_teardown),
        cmocka_unit_test_teardown(test_resv_job_starts_behind_the_backfill_limit, tu_teardown),
        cmocka_unit_test_teardown(test_resv_random_workload, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
