/*
 * test_sim_failures.c - `sluice-sim failures` (failures.c): without faults
 * every policy keeps all but the first start; with them the three are
 * ordered as their handling is (sluice's fence and requeue at least as
 * good as Slurm + NHC's, both far better than requeues by hand that land
 * on the bad GPU again); a seed gives the same figures twice; bad options
 * are refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>

#include "sim.h"

static void test_sim_failures_no_faults_keeps_all_but_the_start(void **state) {
    (void)state;
    sim_fail_opts_t o;
    sim_fail_opts_init(&o);
    o.rate_per_gpu_hour = 0;
    o.nseeds = 2;
    o.days = 1;
    sim_fail_result_t r[SIM_FAIL_NPOLICIES];
    assert_int_equal(sim_failures_eval(&o, r), 0);
    for (int p = 0; p < SIM_FAIL_NPOLICIES; p++) {
        assert_true(fabs(r[p].effective - (86400 - o.restart_s) / 86400) < 1e-9);
        assert_true(r[p].faults == 0 && r[p].starts == 1);
    }
}

static void test_sim_failures_policies_ordered_and_deterministic(void **state) {
    (void)state;
    sim_fail_opts_t o;
    sim_fail_opts_init(&o);
    o.nseeds = 4;
    o.days = 14;
    o.rate_per_gpu_hour *= 4;
    sim_fail_result_t a[SIM_FAIL_NPOLICIES], b[SIM_FAIL_NPOLICIES];
    assert_int_equal(sim_failures_eval(&o, a), 0);
    assert_int_equal(sim_failures_eval(&o, b), 0);
    for (int p = 0; p < SIM_FAIL_NPOLICIES; p++) {
        assert_true(a[p].effective == b[p].effective);
        assert_true(a[p].effective > 0 && a[p].effective < 1);
    }
    assert_string_equal(a[0].policy, "sluice");
    assert_string_equal(a[2].policy, "none");
    assert_true(a[0].faults > 0);
    assert_true(a[0].effective >= a[1].effective);
    assert_true(a[1].effective > a[2].effective);
    /* Sluice never restarts on the GPU that failed: one start per fault. */
    assert_true(a[0].starts == a[0].faults + 1);
}

static void test_sim_failures_bad_options(void **state) {
    (void)state;
    sim_fail_opts_t o;
    sim_fail_result_t r[SIM_FAIL_NPOLICIES];
    sim_fail_opts_init(&o);
    o.gpus = 12;
    assert_int_equal(sim_failures_eval(&o, r), -1);
    sim_fail_opts_init(&o);
    o.days = 0;
    assert_int_equal(sim_failures_eval(&o, r), -1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sim_failures_no_faults_keeps_all_but_the_start),
        cmocka_unit_test(test_sim_failures_policies_ordered_and_deterministic),
        cmocka_unit_test(test_sim_failures_bad_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
