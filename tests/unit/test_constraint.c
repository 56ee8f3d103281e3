/*
 * test_constraint.c - node labels, selectors, label expressions, taints and
 * tolerations (sluice/constraint.h): compiling (errors name the field),
 * interning, evaluation against label sets, classes split by label set,
 * the placement filter (only admitted nodes are chosen, one-task and gang,
 * for every policy) and the reasons of a job that no node admits.
 */
#include <stdio.h>
#include <string.h>

#include "sluice/constraint.h"
#include "testutil.h"

#define GI (1024LL * 1024 * 1024)

static uint32_t add(sl_cluster_t *cl, const char *name, const char *pool, const char *labels,
                    const char *taints) {
    sl_node_spec_t sp = tu_node_spec(name, 8000, 64 * GI, 4, "A100", 80 * GI, pool);
    sp.labels = labels;
    sp.taints = taints;
    return tu_node_add(cl, sp);
}

static const sl_constraint_t *cons(sl_cluster_t *cl, const char *sel, const char *ex,
                                   const char *tol) {
    sl_constraint_spec_t sp = {sel, ex, tol};
    const sl_constraint_t *c = NULL;
    char err[256] = "";
    int rc = sl_cluster_constraint_intern(cl, &sp, &c, err, sizeof err);
    if (rc) fail_msg("constraint: %s", err);
    return c;
}

static int cons_err(sl_cluster_t *cl, const char *sel, const char *ex, const char *tol, char *err,
                    size_t len) {
    sl_constraint_spec_t sp = {sel, ex, tol};
    const sl_constraint_t *c = (const sl_constraint_t *)1;
    int rc = sl_cluster_constraint_intern(cl, &sp, &c, err, len);
    assert_null(c);
    return rc;
}

static void test_constraint_errors_name_the_field(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    char err[256];
    assert_int_equal(cons_err(cl, "gpu", NULL, NULL, err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, "node_selector"));
    assert_int_equal(cons_err(cl, NULL, "a=b &", NULL, err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, "constraint"));
    assert_int_equal(cons_err(cl, NULL, "a in (b, c", NULL, err, sizeof err), SL_EINVAL);
    assert_int_equal(cons_err(cl, NULL, "a b", NULL, err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, "unexpected"));
    assert_int_equal(cons_err(cl, NULL, NULL, "k=v:Sometimes", err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, "tolerations"));
    /* Empty: no constraint at all. */
    assert_int_equal(cons_err(cl, "", "", "", err, sizeof err), 0);
    assert_int_equal(sl_cluster_constraint_count(cl), 0);
    /* A taint needs its effect. */
    sl_node_spec_t sp = tu_node_spec("n", 1000, GI, 0, NULL, 0, NULL);
    sp.taints = "k=v";
    assert_int_equal(sl_cluster_add_node(cl, &sp, NULL, err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, "taints"));
    assert_int_equal(sl_cluster_node_count(cl), 0);
    assert_int_equal(sl_node_labels_check("a=b,feature", "x:NoExecute", err, sizeof err), 0);
    sl_cluster_destroy(cl);
}

static void test_constraint_interning(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    const sl_constraint_t *a = cons(cl, "zone=a", NULL, NULL);
    const sl_constraint_t *b = cons(cl, "zone=a", NULL, NULL);
    const sl_constraint_t *c = cons(cl, "zone=b", NULL, NULL);
    assert_ptr_equal(a, b);
    assert_ptr_not_equal(a, c);
    assert_int_equal(sl_cluster_constraint_count(cl), 2);
    sl_cluster_constraint_release(cl, a);
    assert_int_equal(sl_cluster_constraint_count(cl), 2);
    sl_cluster_constraint_release(cl, b);
    assert_int_equal(sl_cluster_constraint_count(cl), 1);
    sl_cluster_constraint_release(cl, c);
    sl_cluster_constraint_release(cl, NULL);
    assert_int_equal(sl_cluster_constraint_count(cl), 0);
    sl_cluster_destroy(cl);
}

/* Every operator against nodes with known labels. */
static void test_constraint_operators(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    uint32_t n0 = add(cl, "n0", NULL, "gpu.class=a100-80g,zone=a,nvlink", NULL);
    uint32_t n1 = add(cl, "n1", NULL, "gpu.class=h100,zone=b", NULL);
    uint32_t n2 = add(cl, "n2", NULL, NULL, NULL);
    const sl_node_t *n[3] = {sl_cluster_node(cl, n0), sl_cluster_node(cl, n1), sl_cluster_node(cl, n2)};
    const struct {
        const char *sel, *ex;
        bool ok[3];
    } cases[] = {
        {"gpu.class=a100-80g", NULL, {true, false, false}},
        {"gpu.class=h100,zone=b", NULL, {false, true, false}},
        {"gpu.class=h100,zone=a", NULL, {false, false, false}},
        {NULL, "gpu.class in (a100-80g, h100)", {true, true, false}},
        {NULL, "gpu.class notin (h100)", {true, false, true}}, /* absent counts as not in */
        {NULL, "gpu.class", {true, true, false}},
        {NULL, "!gpu.class", {false, false, true}},
        {NULL, "gpu.class!=a100-80g", {false, true, true}},
        {NULL, "nvlink", {true, false, false}},          /* a Slurm feature */
        {NULL, "nvlink|zone=b", {true, true, false}},    /* Slurm's | */
        {NULL, "nvlink&zone=b", {false, false, false}},  /* Slurm's & */
        {NULL, "zone=b | !zone & !gpu.class", {false, true, true}},
        {"zone=a", "nvlink | zone=b", {true, false, false}}, /* selector ANDs every term */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const sl_constraint_t *c = cons(cl, cases[i].sel, cases[i].ex, NULL);
        for (int k = 0; k < 3; k++) {
            /* twice: the second answer comes from the memo */
            if (sl_constraint_admits(c, n[k]) != cases[i].ok[k] ||
                sl_constraint_admits(c, n[k]) != cases[i].ok[k])
                fail_msg("case %zu (%s / %s) on n%d", i, cases[i].sel ? cases[i].sel : "",
                         cases[i].ex ? cases[i].ex : "", k);
        }
        sl_cluster_constraint_release(cl, c);
    }
    sl_cluster_destroy(cl);
}

static void test_constraint_taints_and_tolerations(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    uint32_t a = add(cl, "a", NULL, NULL, "dedicated=secure:NoSchedule");
    uint32_t b = add(cl, "b", NULL, NULL, "gpu:NoExecute,slow=yes:PreferNoSchedule");
    uint32_t p = add(cl, "p", NULL, NULL, "slow=yes:PreferNoSchedule");
    const sl_node_t *na = sl_cluster_node(cl, a), *nb = sl_cluster_node(cl, b),
                    *np = sl_cluster_node(cl, p);
    /* No constraint: only nodes without hard taints (PreferNoSchedule is advice). */
    assert_false(sl_constraint_admits(NULL, na));
    assert_false(sl_constraint_admits(NULL, nb));
    assert_true(sl_constraint_admits(NULL, np));
    const struct {
        const char *tol;
        bool ok[2];
    } cases[] = {
        {"dedicated=secure:NoSchedule", {true, false}},
        {"dedicated=secure", {true, false}},   /* any effect */
        {"dedicated", {true, false}},          /* Exists: any value */
        {"dedicated=other", {false, false}},
        {"dedicated=secure:NoExecute", {false, false}},
        {"gpu:NoExecute", {false, true}},
        {"dedicated,gpu", {true, true}},
        {"*", {true, true}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const sl_constraint_t *c = cons(cl, NULL, NULL, cases[i].tol);
        if (sl_constraint_admits(c, na) != cases[i].ok[0] ||
            sl_constraint_admits(c, nb) != cases[i].ok[1])
            fail_msg("case %s", cases[i].tol);
        assert_true(sl_constraint_admits(c, np));
        sl_cluster_constraint_release(cl, c);
    }
    sl_cluster_destroy(cl);
}

/* Nodes alike but for labels are different classes; alike with the same
 * labels share one. */
static void test_constraint_classes_split_by_label_set(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    add(cl, "a0", NULL, "zone=a", NULL);
    add(cl, "a1", NULL, "zone=a", NULL);
    add(cl, "b0", NULL, "zone=b", NULL);
    add(cl, "t0", NULL, "zone=a", "x:NoSchedule");
    add(cl, "u0", NULL, NULL, NULL);
    assert_int_equal(sl_cluster_class_count(cl), 4);
    assert_int_equal(sl_cluster_check(cl), 0);
    sl_cluster_destroy(cl);
}

typedef struct fx {
    sl_cluster_t *cl;
    sl_workload_t *w;
    sl_rng_t rng;
    sl_cycle_t cy;
} fx_t;

static void fx_init(fx_t *f) {
    sl_cluster_create(&f->cl);
    sl_workload_create(&f->w);
    sl_rng_seed(&f->rng, 7);
    f->cy = (sl_cycle_t){.cluster = f->cl, .workload = f->w, .rng = &f->rng, .now_us = 0};
}

static void fx_fini(fx_t *f) {
    sl_workload_destroy(f->w);
    sl_cluster_destroy(f->cl);
}

/* Every policy places tasks and gangs only on admitted nodes. */
static void test_constraint_placement_filter_every_policy(void **state) {
    (void)state;
    const sl_place_policy_t *const *pols = sl_place_policy_list();
    for (size_t k = 0; pols[k]; k++) {
        fx_t f;
        fx_init(&f);
        sl_task_req_t w = tu_req("1", "1Gi", 1, NULL);
        sl_workload_add(f.w, &w, 1);
        char nm[16];
        for (int i = 0; i < 12; i++) {
            snprintf(nm, sizeof nm, "n%02d", i);
            add(f.cl, nm, NULL, i % 3 == 0 ? "gpu.class=a100-80g" : "gpu.class=h100",
                i % 4 == 1 ? "maint:NoSchedule" : NULL);
        }
        sl_task_req_t r = tu_req("1", "1Gi", 1, NULL);
        r.cons = cons(f.cl, "gpu.class=a100-80g", NULL, NULL);
        /* n00 n03 n06 admit: n09 has the label but also the taint */
        sl_place_t pls[32];
        char reason[SL_REASON_MAX];
        int rc = sl_place_gang(pols[k], &f.cy, f.cl, &r, 12, pls, reason, sizeof reason);
        assert_int_equal(rc, SL_FIT);
        for (int i = 0; i < 12; i++) {
            const sl_node_t *n = sl_cluster_node(f.cl, pls[i].node);
            if (!sl_constraint_admits(r.cons, n)) fail_msg("%s placed on %s", pols[k]->name, n->name);
        }
        /* 3 admitted nodes x 4 GPUs = 12; one more task does not fit now but would on the
         * empty cluster. */
        rc = sl_place_gang(pols[k], &f.cy, f.cl, &r, 1, pls, reason, sizeof reason);
        assert_int_equal(rc, SL_NOFIT);
        /* A request without constraint never lands on a tainted node. */
        sl_task_req_t u = tu_req("1", "1Gi", 1, NULL);
        rc = sl_place_gang(pols[k], &f.cy, f.cl, &u, 20, pls, reason, sizeof reason);
        assert_int_equal(rc, SL_FIT);
        for (int i = 0; i < 20; i++)
            assert_false(sl_cluster_node(f.cl, pls[i].node)->lset == NULL ||
                         !sl_constraint_admits(NULL, sl_cluster_node(f.cl, pls[i].node)));
        assert_int_equal(sl_cluster_check(f.cl), 0);
        sl_cluster_constraint_release(f.cl, r.cons);
        fx_fini(&f);
    }
}

static void expect_reason(fx_t *f, const sl_task_req_t *r, const char *want) {
    sl_place_t pls[4];
    char reason[SL_REASON_MAX] = "";
    int rc = sl_place_gang(sl_place_policy_find("bestfit"), &f->cy, f->cl, r, 1, pls, reason,
                           sizeof reason);
    assert_int_equal(rc, SL_NOFIT_EVER);
    if (strcmp(reason, want) != 0) fail_msg("reason \"%s\", want \"%s\"", reason, want);
}

static void test_constraint_reasons(void **state) {
    (void)state;
    fx_t f;
    fx_init(&f);
    add(f.cl, "s0", "secure", "gpu.class=a100-80g", "dedicated=secure:NoSchedule");
    add(f.cl, "g0", NULL, "gpu.class=h100,zone=a", NULL);
    add(f.cl, "g1", NULL, "zone=b", NULL);
    sl_task_req_t r = tu_req("1", "1Gi", 1, NULL);
    r.cons = cons(f.cl, "gpu.class=a100-40g", NULL, NULL);
    expect_reason(&f, &r, "no node has label gpu.class=a100-40g");
    sl_cluster_constraint_release(f.cl, r.cons);
    r.cons = cons(f.cl, "gpu.class=a100-80g", NULL, NULL);
    expect_reason(&f, &r, "tolerates no taint of pool secure (dedicated=secure:NoSchedule)");
    sl_cluster_constraint_release(f.cl, r.cons);
    r.cons = cons(f.cl, NULL, "zone in (c, d)", NULL);
    expect_reason(&f, &r, "no node has label zone in (c, d)");
    sl_cluster_constraint_release(f.cl, r.cons);
    r.cons = cons(f.cl, "gpu.class=h100,zone=b", NULL, NULL); /* each exists, never together */
    expect_reason(&f, &r, "no node has labels matching gpu.class=h100 & zone=b");
    sl_cluster_constraint_release(f.cl, r.cons);
    r.cons = cons(f.cl, NULL, "a | b", NULL);
    expect_reason(&f, &r, "no node has labels matching a | b");
    sl_cluster_constraint_release(f.cl, r.cons);
    /* With the toleration it fits. */
    r.cons = cons(f.cl, "gpu.class=a100-80g", NULL, "dedicated=secure:NoSchedule");
    sl_place_t pl[1];
    char reason[SL_REASON_MAX];
    assert_int_equal(sl_place_gang(sl_place_policy_find("fgdbal"), &f.cy, f.cl, &r, 1, pl, reason,
                                   sizeof reason),
                     SL_FIT);
    assert_string_equal(sl_cluster_node(f.cl, pl[0].node)->name, "s0");
    sl_cluster_constraint_release(f.cl, r.cons);
    fx_fini(&f);
}

/* Through the scheduler: a job no node admits waits with the reason. */
static void test_constraint_sched_reason(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    add(cl, "n0", NULL, "gpu.class=h100", NULL);
    sl_sched_t *s = tu_sched_create(cl, "fifo", "easy");
    int t = tu_tenant_add(s, "t", 1, TU_NO_QUOTA);
    sl_task_req_t r = tu_req("1", "1Gi", 1, NULL);
    r.cons = cons(cl, "gpu.class=a100-80g", NULL, NULL);
    tu_submit(s, tu_spec(1, t, 1, r));
    sl_task_req_t ok = r;
    ok.cons = cons(cl, NULL, "gpu.class in (h100)", NULL);
    tu_submit(s, tu_spec(2, t, 2, ok));
    tu_ids_t o = {0};
    assert_int_equal(sl_sched_cycle(s, 0, tu_ids_on_start, &o, NULL), 1);
    assert_int_equal(o.v[0], 2);
    const sl_job_t *j = sl_sched_job(s, 1);
    assert_int_equal(sl_job_status(j), SL_NOFIT_EVER);
    assert_non_null(strstr(sl_job_reason(j), "no node has label gpu.class=a100-80g"));
    assert_int_equal(sl_sched_check(s), 0);
    sl_sched_destroy(s);
    sl_cluster_constraint_release(cl, r.cons);
    sl_cluster_constraint_release(cl, ok.cons);
    sl_cluster_destroy(cl);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_constraint_errors_name_the_field, tu_teardown),
        cmocka_unit_test_teardown(test_constraint_interning, tu_teardown),
        cmocka_unit_test_teardown(test_constraint_operators, tu_teardown),
        cmocka_unit_test_teardown(test_constraint_taints_and_tolerations, tu_teardown),
        cmocka_unit_test_teardown(test_constraint_classes_split_by_label_set, tu_teardown),
        cmocka_unit_test_teardown(test_constraint_placement_filter_every_policy, tu_teardown),
        cmocka_unit_test_teardown(test_constraint_reasons, tu_teardown),
        cmocka_unit_test_teardown(test_constraint_sched_reason, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
