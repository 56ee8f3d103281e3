/*
 * test_sim_stats.c - the simulator's statistics: percentiles (numpy's
 * linear interpolation), mean and sample sd, and time-weighted means.
 * Expected values are worked by hand. (The fairness figures are the
 * core's: tests/unit/test_fair.c.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>

#include "sim.h"

#define NEAR(a, b) assert_true(fabs((a) - (b)) < 1e-9)

static void test_sim_percentile_interpolates(void **state) {
    (void)state;
    double v[] = {1, 2, 3, 4};
    NEAR(sim_percentile(v, 4, 50), 2.5);
    NEAR(sim_percentile(v, 4, 95), 3.85);
    NEAR(sim_percentile(v, 4, 99), 3.97);
    NEAR(sim_percentile(v, 4, 0), 1);
    NEAR(sim_percentile(v, 4, 100), 4);
    NEAR(sim_percentile(v, 4, 25), 1.75);
    double one[] = {7};
    NEAR(sim_percentile(one, 1, 99), 7);
    NEAR(sim_percentile(v, 0, 50), 0);
}

static void test_sim_summarize_sorts(void **state) {
    (void)state;
    sim_dvec_t d = {0};
    double in[] = {9, 1, 5, 3, 7};
    for (int i = 0; i < 5; i++) sim_dvec_push(&d, in[i]);
    sim_summary_t s;
    sim_summarize(&d, &s);
    assert_int_equal(s.n, 5);
    NEAR(s.mean, 5);
    NEAR(s.p50, 5);
    NEAR(s.p95, 8.6);
    NEAR(s.p99, 8.92);
    NEAR(d.v[0], 1);
    NEAR(d.v[4], 9);
    sim_dvec_free(&d);
    sim_summarize(&d, &s); /* empty */
    assert_int_equal(s.n, 0);
    NEAR(s.mean, 0);
    NEAR(s.p99, 0);
    assert_int_equal(sl_alloc_live(), 0);
}

static void test_sim_mean_sd(void **state) {
    (void)state;
    double v[] = {2, 4, 4, 4, 5, 5, 7, 9};
    NEAR(sim_mean(v, 8), 5);
    NEAR(sim_sd(v, 8), sqrt(32.0 / 7.0));
    NEAR(sim_sd(v, 1), 0);
    NEAR(sim_mean(v, 0), 0);
}

static void test_sim_time_weighted_mean(void **state) {
    (void)state;
    sim_twmean_t m = {0};
    sim_tw_add(&m, 1.0, 3);  /* 1 for 3 s */
    sim_tw_add(&m, 0.0, 1);  /* 0 for 1 s */
    sim_tw_add(&m, 9.0, 0);  /* an instant weighs nothing */
    NEAR(sim_tw_mean(&m), 0.75);
    sim_twmean_t e = {0};
    NEAR(sim_tw_mean(&e), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sim_percentile_interpolates),
        cmocka_unit_test(test_sim_summarize_sorts),
        cmocka_unit_test(test_sim_mean_sd),
        cmocka_unit_test(test_sim_time_weighted_mean),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
