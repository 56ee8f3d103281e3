/*
 * test_preempt_random.c - the properties of priority preemption on seeded
 * random clusters (bounded: 300 seeds of at most 6 nodes and 40 jobs):
 *
 *  - never a victim of an equal or higher priority, nor of a class that
 *    may not be preempted, nor for a preemptor whose class may not preempt;
 *  - never half a gang: a victim stops whole, or (elastic) shrinks by its
 *    highest ranks to no fewer than min_tasks;
 *  - always enough: with every victim's stopping tasks gone the preemptor
 *    fits, and after sl_sched_stop_done of each it starts in the next run;
 *  - never more than needed (the reverse pass): keeping any one whole
 *    victim, or one more task of a shrunk one, the preemptor does not fit;
 *  - no preemption for a job that would not fit even if every job it may
 *    preempt stopped;
 *  - sl_sched_check holds after every step, with jobs stopping.
 *
 * Whether the preemptor fits is decided here without the core's placer:
 * its tasks are identical, so a gang of n fits exactly when the nodes'
 * sl_node_fit_count sum to at least n (each node independently).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define SEC INT64_C(1000000)

static int64_t rnd(sl_rng_t *r, int64_t lo, int64_t hi) {
    return lo + (int64_t)sl_rng_below(r, (uint64_t)(hi - lo + 1));
}

typedef struct seen {
    sl_preemption_t pre[64];
    size_t npre;
    sl_resize_t rsz[64];
    size_t nrsz;
    tu_ids_t starts;
} seen_t;

static void on_pre(void *ud, const sl_preemption_t *p) {
    seen_t *s = ud;
    assert_true(s->npre < 64);
    s->pre[s->npre++] = *p;
}

static void on_rsz(void *ud, const sl_resize_t *r) {
    seen_t *s = ud;
    assert_true(s->nrsz < 64);
    s->rsz[s->nrsz] = *r;
    s->rsz[s->nrsz++].pls = NULL;
}

static void on_st(void *ud, const sl_job_t *j) {
    tu_ids_on_start(&((seen_t *)ud)->starts, j);
}

static const sl_cycle_ops_t OPS = {on_st, on_pre, on_rsz};

/* Gang of n tasks of req fits now (identical tasks: per-node counts add). */
static bool gang_fits(const sl_cluster_t *cl, const sl_task_req_t *req, int32_t n) {
    int64_t sum = 0;
    for (uint32_t id = 0; id < sl_cluster_node_count(cl) && sum < n; id++)
        sum += sl_node_fit_count(sl_cluster_node(cl, id), req, n);
    return sum >= n;
}

/* Releases (or, with back, re-allocates) tasks [lo, hi) of job j. */
static void move_tasks(sl_cluster_t *cl, const sl_job_t *j, int32_t lo, int32_t hi, bool back) {
    const sl_task_req_t *req = &sl_job_spec(j)->task;
    for (int32_t i = lo; i < hi; i++) {
        const sl_place_t *pl = sl_job_place(j, i);
        assert_non_null(pl);
        if (back) assert_int_equal(sl_cluster_alloc(cl, req, pl), 0);
        else assert_int_equal(sl_cluster_release(cl, req, pl), 0);
    }
}

/* A victim as the run decided it: tasks [lo, hi) of the job stop. */
typedef struct vic {
    const sl_job_t *j;
    int32_t lo, hi;
} vic_t;

/* Whether p fits with every victim's tasks gone except those of victim
 * `keep` (-1: none kept), or with kept_one: victim keep keeps only its
 * lowest stopping task. */
static bool fits_without(sl_cluster_t *cl, const vic_t *v, size_t n, long keep, bool kept_one,
                         const sl_task_req_t *req, int32_t m) {
    for (size_t i = 0; i < n; i++) {
        int32_t lo = v[i].lo;
        if ((long)i == keep) {
            if (!kept_one) continue;
            lo++;
        }
        move_tasks(cl, v[i].j, lo, v[i].hi, false);
    }
    bool ok = gang_fits(cl, req, m);
    for (size_t i = 0; i < n; i++) {
        int32_t lo = v[i].lo;
        if ((long)i == keep) {
            if (!kept_one) continue;
            lo++;
        }
        move_tasks(cl, v[i].j, lo, v[i].hi, true);
    }
    return ok;
}

typedef struct elig {
    sl_cluster_t *cl;
    int32_t prio;
    const sl_sched_t *s;
    const sl_job_t *list[64];
    size_t n;
} elig_t;

static int collect_lower(void *ud, const sl_job_t *j) {
    elig_t *e = ud;
    const sl_prio_class_spec_t *c = sl_sched_class(e->s, sl_job_spec(j)->prio_class);
    if (sl_job_spec(j)->priority < e->prio && c->preemptible && e->n < 64) e->list[e->n++] = j;
    return 0;
}

static void one_seed(uint64_t seed, size_t *npreempting, size_t *nnone) {
    sl_rng_t r;
    sl_rng_seed(&r, seed);
    sl_cluster_t *cl = tu_cluster();
    int nn = (int)rnd(&r, 2, 6);
    for (int i = 0; i < nn; i++) {
        char name[16];
        snprintf(name, sizeof name, "n%d", i);
        int g = rnd(&r, 0, 1) ? 8 : 4;
        tu_node_add(cl, tu_node_spec(name, 64000, INT64_C(256) << 30, g, "A100", INT64_C(80) << 30,
                                     NULL));
    }
    sl_sched_config_t cfg;
    sl_sched_config_init(&cfg);
    cfg.placement = sl_rng_below(&r, 2) ? "firstfit" : "bestfit";
    cfg.seed = seed;
    cfg.preempt = (sl_preempt_config_t){.priority = true, .max_preemptors = 1};
    sl_sched_t *s = NULL;
    char err[256];
    assert_int_equal(sl_sched_create(&cfg, cl, &s, err, sizeof err), 0);
    int t = tu_tenant_add(s, "a", 1, TU_NO_QUOTA);
    int cls[6];
    for (int v = 0; v < 4; v++) {
        char name[16];
        snprintf(name, sizeof name, "low%d", v);
        sl_prio_class_spec_t c = {name, v, false, sl_rng_below(&r, 5) != 0};
        cls[v] = sl_sched_add_class(s, &c);
    }
    sl_prio_class_spec_t pc = {"pre", (int32_t)rnd(&r, 1, 4), sl_rng_below(&r, 8) != 0, true};
    cls[4] = sl_sched_add_class(s, &pc);

    /* Fill in a few waves, so start times (work lost) differ. */
    uint64_t id = 1;
    int64_t now = 0;
    for (int wave = 0; wave < 3; wave++) {
        int nj = (int)rnd(&r, 3, 12);
        for (int k = 0; k < nj; k++, id++) {
            int32_t n = (int32_t)rnd(&r, 1, 3);
            sl_job_spec_t sp = tu_spec(id, t, n, tu_req("1", "1Gi", (int)rnd(&r, 1, 4), ""));
            if (n > 1 && sl_rng_below(&r, 3) == 0) sp.min_tasks = (int32_t)rnd(&r, 1, n - 1);
            sp.prio_class = cls[rnd(&r, 0, 3)];
            tu_submit(s, sp);
        }
        seen_t sn;
        memset(&sn, 0, sizeof sn);
        sl_sched_run(s, now, &OPS, &sn, NULL);
        assert_int_equal(sn.npre + sn.nrsz, 0); /* low classes may not preempt */
        assert_int_equal(sl_sched_check(s), 0);
        now += 10 * SEC;
    }
    for (uint64_t k = 1; k < id; k++) {
        const sl_job_t *j = sl_sched_job(s, k);
        if (sl_job_state(j) == SL_JOB_PENDING) assert_int_equal(sl_sched_cancel(s, k, now), 0);
    }

    /* The preemptor. */
    uint64_t pid = 1000;
    int32_t pn = (int32_t)rnd(&r, 1, 3);
    sl_job_spec_t ps = tu_spec(pid, t, pn, tu_req("1", "1Gi", (int)rnd(&r, 1, 8), ""));
    if (pn > 1 && sl_rng_below(&r, 3) == 0) ps.min_tasks = (int32_t)rnd(&r, 1, pn - 1);
    ps.prio_class = cls[4];
    tu_submit(s, ps);
    int32_t pm = ps.min_tasks ? ps.min_tasks : pn;
    const sl_task_req_t *preq = &sl_job_spec(sl_sched_job(s, pid))->task;
    bool fit_before = gang_fits(cl, preq, pm);

    seen_t sn;
    memset(&sn, 0, sizeof sn);
    sl_sched_run(s, now, &OPS, &sn, NULL);
    assert_int_equal(sl_sched_check(s), 0);
    const sl_job_t *p = sl_sched_job(s, pid);
    if (fit_before) {
        assert_int_equal(sl_job_state(p), SL_JOB_RUNNING);
        assert_int_equal(sn.npre + sn.nrsz, 0);
        goto out;
    }

    vic_t v[128];
    size_t nv = 0;
    for (size_t i = 0; i < sn.npre; i++) {
        const sl_job_t *j = sl_sched_job(s, sn.pre[i].victim);
        assert_int_equal(sn.pre[i].preemptor, pid);
        assert_true(sl_job_stopping(j));
        assert_int_equal(sl_job_target_tasks(j), 0); /* whole */
        assert_int_equal(sn.pre[i].ntasks, sl_job_ntasks_placed(j));
        v[nv++] = (vic_t){j, 0, sl_job_ntasks_placed(j)};
    }
    for (size_t i = 0; i < sn.nrsz; i++) {
        const sl_job_t *j = sl_sched_job(s, sn.rsz[i].job);
        const sl_job_spec_t *js = sl_job_spec(j);
        assert_true(js->min_tasks > 0 && js->min_tasks < js->ntasks); /* elastic only */
        assert_true(sn.rsz[i].to >= js->min_tasks && sn.rsz[i].to < sn.rsz[i].from);
        assert_int_equal(sn.rsz[i].from, sl_job_ntasks_placed(j)); /* highest ranks go */
        assert_int_equal(sl_job_target_tasks(j), sn.rsz[i].to);
        v[nv++] = (vic_t){j, sn.rsz[i].to, sn.rsz[i].from};
    }
    for (size_t i = 0; i < nv; i++) {
        const sl_job_spec_t *js = sl_job_spec(v[i].j);
        assert_true(js->priority < pc.value);                             /* strictly lower */
        assert_true(sl_sched_class(s, js->prio_class)->preemptible);      /* may be preempted */
    }

    if (nv == 0) {
        /* Nothing preempted: even every job it may preempt gone, no fit. */
        (*nnone)++;
        if (pc.may_preempt) {
            elig_t e = {.cl = cl, .prio = pc.value, .s = s};
            sl_sched_foreach(s, SL_JOB_RUNNING, collect_lower, &e);
            for (size_t i = 0; i < e.n; i++) move_tasks(cl, e.list[i], 0, sl_job_ntasks_placed(e.list[i]), false);
            assert_false(gang_fits(cl, preq, pm));
            for (size_t i = 0; i < e.n; i++) move_tasks(cl, e.list[i], 0, sl_job_ntasks_placed(e.list[i]), true);
        }
        goto out;
    }
    (*npreempting)++;
    assert_true(pc.may_preempt);
    assert_true(fits_without(cl, v, nv, -1, false, preq, pm));       /* enough */
    for (size_t i = 0; i < nv; i++) {
        bool whole = v[i].lo == 0;
        assert_false(fits_without(cl, v, nv, (long)i, !whole, preq, pm)); /* each one needed */
    }
    assert_int_equal(sl_job_victims_left(p), (int32_t)nv);

    /* No second preemption while it waits. */
    memset(&sn, 0, sizeof sn);
    sl_sched_run(s, now + SEC, &OPS, &sn, NULL);
    assert_int_equal(sn.npre + sn.nrsz, 0);
    assert_int_equal(sl_job_state(p), SL_JOB_PENDING);
    for (size_t i = 0; i < nv; i++) {
        assert_int_equal(sl_sched_stop_done(s, sl_job_id(v[i].j), now + 2 * SEC), 0);
        assert_int_equal(sl_sched_check(s), 0);
    }
    memset(&sn, 0, sizeof sn);
    sl_sched_run(s, now + 3 * SEC, &OPS, &sn, NULL);
    assert_int_equal(sl_job_state(p), SL_JOB_RUNNING);
    assert_true(sn.starts.n >= 1 && sn.starts.v[0] == pid); /* first, before the queue */
    assert_int_equal(sl_sched_check(s), 0);
out:
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

static void test_preempt_random_properties(void **state) {
    (void)state;
    size_t preempting = 0, none = 0;
    for (uint64_t seed = 1; seed <= 300; seed++) one_seed(seed, &preempting, &none);
    /* The generator must exercise both outcomes. */
    assert_true(preempting >= 50);
    assert_true(none >= 10);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_preempt_random_properties, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
