/*
 * test_preempt_reclaim.c - fair-share reclaim (sluice/preempt.h) on seeded
 * random clusters: tenants of random weights (1-3) arrive in two phases
 * with more one-GPU jobs than the cluster holds; the first fills the
 * cluster, the later ones reclaim. Checked in every phase (demand fixed):
 *
 *  - no cycle: never does tenant A take from B and B from A;
 *  - the potential Phi = sum over tenants of |held share - fair share|
 *    never grows from one round to the next, and falls with every round
 *    that reclaimed (the argument in sluice/preempt.h);
 *  - convergence: the rounds end (bounded) in a state where no tenant
 *    that could take one more task within its share finds a tenant that
 *    could give one and stay at or above its share: DRF's allocation up
 *    to one task, each tenant within n tenants' tasks of its fair share;
 *  - a victim is always of another tenant above its fair share, and
 *    sl_sched_check holds throughout.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define SEC INT64_C(1000000)
#define MAXT 4

static size_t reclaims; /* over all seeds: the generator must reclaim */

static int64_t rnd(sl_rng_t *r, int64_t lo, int64_t hi) {
    return lo + (int64_t)sl_rng_below(r, (uint64_t)(hi - lo + 1));
}

typedef struct round {
    uint64_t victims[256];
    uint64_t preemptors[256];
    size_t n;
} round_t;

static void on_pre(void *ud, const sl_preemption_t *p) {
    round_t *r = ud;
    assert_int_equal(p->reason, SL_PREEMPT_RECLAIM);
    assert_true(r->n < 256);
    r->victims[r->n] = p->victim;
    r->preemptors[r->n++] = p->preemptor;
}

static const sl_cycle_ops_t OPS = {NULL, on_pre, NULL};

static double phi(const sl_sched_t *s, sl_fair_tenant_t *f, size_t nt) {
    assert_int_equal(sl_sched_fairness(s, f, nt, NULL), 0);
    double x = 0;
    for (size_t i = 0; i < nt; i++) x += fabs(f[i].held_share - f[i].fair_share);
    return x;
}

/* Runs rounds until one changes nothing; checks the properties above. */
static void converge(sl_sched_t *s, size_t nt, int64_t *now, double task_share) {
    bool took[MAXT][MAXT];
    memset(took, 0, sizeof took);
    sl_fair_tenant_t f[MAXT];
    double last = phi(s, f, nt);
    int rounds = 0;
    for (;; rounds++) {
        assert_true(rounds < 400);
        round_t r;
        memset(&r, 0, sizeof r);
        sl_cycle_stats_t st;
        sl_sched_fairness(s, f, nt, NULL);
        int started = sl_sched_run(s, *now, &OPS, &r, &st);
        assert_int_equal(sl_sched_check(s), 0);
        reclaims += r.n;
        for (size_t i = 0; i < r.n; i++) {
            int32_t vt = sl_job_spec(sl_sched_job(s, r.victims[i]))->tenant;
            int32_t pt = sl_job_spec(sl_sched_job(s, r.preemptors[i]))->tenant;
            assert_int_not_equal(vt, pt);
            assert_true(f[vt].held_share > f[vt].fair_share); /* above its share */
            assert_true(f[pt].held_share < f[pt].fair_share); /* below its share */
            assert_false(took[vt][pt]);                         /* no cycle */
            took[pt][vt] = true;
            assert_int_equal(sl_sched_stop_done(s, r.victims[i], *now + SEC), 0);
        }
        assert_int_equal(sl_sched_check(s), 0);
        *now += 2 * SEC;
        double x = phi(s, f, nt);
        assert_true(x <= last + 1e-9);
        last = x;
        if (r.n == 0 && started == 0) break;
    }
    /* The fixed point: nobody can take one more task within its share
     * from anybody who would stay at or above its share. */
    phi(s, f, nt);
    for (size_t p = 0; p < nt; p++) {
        if (f[p].held_share + task_share > f[p].fair_share + 1e-9) continue;
        for (size_t v = 0; v < nt; v++)
            if (v != p) assert_true(f[v].held_share - task_share < f[v].fair_share - 1e-9);
    }
    for (size_t i = 0; i < nt; i++)
        assert_true(fabs(f[i].held_share - f[i].fair_share) <= (double)nt * task_share + 1e-9);
}

static void one_seed(uint64_t seed) {
    sl_rng_t r;
    sl_rng_seed(&r, seed);
    sl_cluster_t *cl = tu_cluster();
    int nn = (int)rnd(&r, 1, 5);
    tu_add_nodes(cl, "n", nn, "256", "1024Gi", 8, "A100", "80Gi", NULL);
    int gpus = nn * 8;
    sl_sched_config_t cfg;
    sl_sched_config_init(&cfg);
    cfg.queue = "drf";
    cfg.seed = seed;
    cfg.preempt = (sl_preempt_config_t){.reclaim = true, .max_preemptors = (int32_t)rnd(&r, 1, 8)};
    sl_sched_t *s = NULL;
    char err[256];
    assert_int_equal(sl_sched_create(&cfg, cl, &s, err, sizeof err), 0);
    size_t nt = (size_t)rnd(&r, 2, MAXT);
    for (size_t i = 0; i < nt; i++) {
        char name[32];
        snprintf(name, sizeof name, "t%d", (int)i);
        tu_tenant_add(s, name, (int32_t)rnd(&r, 1, 3), TU_NO_QUOTA);
    }
    uint64_t id = 1;
    int64_t now = 0;
    size_t first = (size_t)rnd(&r, 1, (int64_t)nt - 1);
    for (int phase = 0; phase < 2; phase++) {
        size_t lo = phase == 0 ? 0 : first, hi = phase == 0 ? first : nt;
        for (size_t t = lo; t < hi; t++) {
            int nj = gpus + (int)rnd(&r, 1, 8);
            for (int k = 0; k < nj; k++, id++) {
                sl_job_spec_t sp = tu_spec(id, (int)t, 1, tu_req("1", "1Gi", 1, ""));
                sp.submit_us = now;
                tu_submit(s, sp);
            }
        }
        converge(s, nt, &now, 1.0 / gpus);
    }
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

static void test_preempt_reclaim_converges_without_cycles(void **state) {
    (void)state;
    for (uint64_t seed = 1; seed <= 120; seed++) one_seed(seed);
    assert_true(reclaims >= 500);
}

/* A tenant that reached its share takes nothing more, even while waiting. */
static void test_preempt_reclaim_stops_at_the_share(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    tu_add_nodes(cl, "n", 1, "64", "256Gi", 4, "A100", "80Gi", NULL);
    sl_sched_config_t cfg;
    sl_sched_config_init(&cfg);
    cfg.queue = "drf";
    cfg.preempt.reclaim = true;
    sl_sched_t *s = NULL;
    char err[256];
    assert_int_equal(sl_sched_create(&cfg, cl, &s, err, sizeof err), 0);
    int a = tu_tenant_add(s, "a", 1, TU_NO_QUOTA), b = tu_tenant_add(s, "b", 1, TU_NO_QUOTA);
    for (uint64_t id = 1; id <= 6; id++) tu_submit(s, tu_spec(id, a, 1, tu_req("1", "1Gi", 1, "")));
    int64_t now = 0;
    sl_sched_run(s, now, &OPS, &(round_t){.n = 0}, NULL);
    now += SEC; /* jobs started by a run are not victims in that same run */
    for (uint64_t id = 11; id <= 16; id++) tu_submit(s, tu_spec(id, b, 1, tu_req("1", "1Gi", 1, "")));
    int64_t t0 = now;
    converge(s, 2, &now, 0.25);
    assert_true(now > t0);
    assert_int_equal(sl_sched_tenant_usage(s, a).gpu_milli, 2000);
    assert_int_equal(sl_sched_tenant_usage(s, b).gpu_milli, 2000);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_preempt_reclaim_converges_without_cycles, tu_teardown),
        cmocka_unit_test_teardown(test_preempt_reclaim_stops_at_the_share, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
