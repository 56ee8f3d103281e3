/*
 * test_rng.c - the core's seeded RNG (rng.h, xoshiro256** seeded through
 * splitmix64): a seed fixes the stream, different seeds give different
 * streams, sl_rng_below stays in [0, n) (including n = 1 and n near 2^64,
 * where Lemire's rejection step runs) and is roughly uniform, and
 * sl_rng_unit stays in [0, 1). Uniformity bounds are loose chi-square-like
 * limits over fixed seeds, so the test is deterministic.
 */
#include <string.h>

#include "testutil.h"

static void test_rng_seed_is_deterministic(void **state) {
    (void)state;
    sl_rng_t a, b, c;
    sl_rng_seed(&a, 42);
    sl_rng_seed(&b, 42);
    sl_rng_seed(&c, 43);
    assert_memory_equal(&a, &b, sizeof a);
    int same_as_c = 0;
    for (int i = 0; i < 1000; i++) {
        uint64_t x = sl_rng_next(&a);
        assert_true(x == sl_rng_next(&b));
        if (x == sl_rng_next(&c)) same_as_c++;
    }
    assert_int_equal(same_as_c, 0); /* nearby seeds give unrelated streams */
    /* Re-seeding restarts the stream. */
    sl_rng_seed(&a, 42);
    sl_rng_seed(&b, 42);
    assert_true(sl_rng_below(&a, 1000) == sl_rng_below(&b, 1000));
    /* Seed 0 is valid: the state is not all zero (xoshiro would be stuck). */
    sl_rng_seed(&a, 0);
    assert_true(a.s[0] | a.s[1] | a.s[2] | a.s[3]);
    uint64_t x0 = sl_rng_next(&a);
    assert_true(x0 != sl_rng_next(&a));
}

static void test_rng_below_range(void **state) {
    (void)state;
    sl_rng_t r;
    sl_rng_seed(&r, 7);
    for (int i = 0; i < 1000; i++) assert_true(sl_rng_below(&r, 1) == 0);
    const uint64_t ns[] = {2, 3, 7, 10, 1000, UINT64_C(1) << 32, (UINT64_C(1) << 63) + 1, UINT64_MAX};
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++)
        for (int i = 0; i < 5000; i++) assert_true(sl_rng_below(&r, ns[k]) < ns[k]);
}

/* n just above 2^63: about half of all 64-bit draws fall in the rejected
 * zone, so the rejection loop runs; results stay uniform over the two
 * halves of [0, n). */
static void test_rng_below_rejection_unbiased(void **state) {
    (void)state;
    sl_rng_t r;
    sl_rng_seed(&r, 99);
    const uint64_t n = (UINT64_C(1) << 63) + (UINT64_C(1) << 62);
    const int draws = 20000;
    int low = 0;
    for (int i = 0; i < draws; i++) {
        uint64_t v = sl_rng_below(&r, n);
        assert_true(v < n);
        if (v < n / 2) low++;
    }
    /* Expected draws/2 = 10000, sd ~71: allow 6 sd. */
    assert_true(low > 10000 - 430 && low < 10000 + 430);
}

static void test_rng_below_roughly_uniform(void **state) {
    (void)state;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        sl_rng_t r;
        sl_rng_seed(&r, seed);
        enum { N = 10, DRAWS = 100000 };
        int count[N];
        memset(count, 0, sizeof count);
        for (int i = 0; i < DRAWS; i++) count[sl_rng_below(&r, N)]++;
        double chi2 = 0;
        for (int i = 0; i < N; i++) {
            double d = count[i] - DRAWS / (double)N;
            chi2 += d * d / (DRAWS / (double)N);
        }
        /* 9 degrees of freedom: P(chi2 > 40) < 1e-5. */
        assert_true(chi2 < 40.0);
    }
}

static void test_rng_unit_interval(void **state) {
    (void)state;
    sl_rng_t r;
    sl_rng_seed(&r, 5);
    double sum = 0, lo = 1, hi = 0;
    const int draws = 100000;
    for (int i = 0; i < draws; i++) {
        double u = sl_rng_unit(&r);
        assert_true(u >= 0.0 && u < 1.0);
        sum += u;
        if (u < lo) lo = u;
        if (u > hi) hi = u;
    }
    /* Mean 0.5, sd of the mean ~0.0009; the extremes reach the ends. */
    assert_true(sum / draws > 0.49 && sum / draws < 0.51);
    assert_true(lo < 0.001 && hi > 0.999);
    /* The same seed gives the same doubles. */
    sl_rng_t a, b;
    sl_rng_seed(&a, 11);
    sl_rng_seed(&b, 11);
    for (int i = 0; i < 100; i++) assert_true(sl_rng_unit(&a) == sl_rng_unit(&b));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_rng_seed_is_deterministic, tu_teardown),
        cmocka_unit_test_teardown(test_rng_below_range, tu_teardown),
        cmocka_unit_test_teardown(test_rng_below_rejection_unbiased, tu_teardown),
        cmocka_unit_test_teardown(test_rng_below_roughly_uniform, tu_teardown),
        cmocka_unit_test_teardown(test_rng_unit_interval, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
