/*
 * test_units.c - the core's formatter of user units (src/core/units.h),
 * table-driven: counts of GPUs and CPUs from thousandths, bytes with a
 * binary suffix (bare below 1Ki, else hundredths of the largest unit),
 * times in seconds, and truncation into a short buffer.
 */
#include <string.h>

#include "testutil.h"
#include "units.h"

static void test_units_table(void **state) {
    (void)state;
    char b[SL__UNIT_BUF];
    static const struct {
        int64_t v;
        const char *gpus, *cpus, *bytes, *secs;
    } t[] = {
        {0, "0 GPUs", "0 CPUs", "0", "0s"},
        {1000, "1 GPU", "1 CPU", "1000", "0.001s"},
        {500, "0.5 GPUs", "0.5 CPUs", "500", "0.0005s"},
        {32000, "32 GPUs", "32 CPUs", "31.25Ki", "0.032s"},
        {2250, "2.25 GPUs", "2.25 CPUs", "2.2Ki", "0.00225s"},
        {1, "0.001 GPUs", "0.001 CPUs", "1", "0.000001s"},
        {-1500, "-1.5 GPUs", "-1.5 CPUs", "-1.46Ki", "-0.0015s"},
        {INT64_C(1) << 30, "1073741.824 GPUs", "1073741.824 CPUs", "1Gi", "1073.741824s"},
        {INT64_C(3600000000), "3600000 GPUs", "3600000 CPUs", "3.35Gi", "3600s"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        assert_string_equal(sl__fmt_gpus(b, sizeof b, t[i].v), t[i].gpus);
        assert_string_equal(sl__fmt_cpus(b, sizeof b, t[i].v), t[i].cpus);
        assert_string_equal(sl__fmt_bytes(b, sizeof b, t[i].v), t[i].bytes);
        assert_string_equal(sl__fmt_secs(b, sizeof b, t[i].v), t[i].secs);
    }
}

static void test_units_bytes(void **state) {
    (void)state;
    char b[SL__UNIT_BUF];
    static const struct {
        int64_t v;
        const char *want;
    } t[] = {
        {128 * (INT64_C(1) << 30), "128Gi"},
        {512 * (INT64_C(1) << 20), "512Mi"},
        {1536 * (INT64_C(1) << 20), "1.5Gi"},      /* the largest unit, exact */
        {1536 * (INT64_C(1) << 20) + 1, "1.5Gi"},  /* rounded to hundredths */
        {1023, "1023"},
        {1025, "1Ki"},                             /* 1.0009765625Ki rounds to 1 */
        {10000000000, "9.31Gi"},
        {INT64_C(1) << 62, "4Ei"},
        {INT64_MAX, "8Ei"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        assert_string_equal(sl__fmt_bytes(b, sizeof b, t[i].v), t[i].want);
    assert_string_equal(sl__fmt_milli(b, sizeof b, 1000), "1");
    /* A short buffer truncates and stays terminated. */
    char small[4];
    assert_string_equal(sl__fmt_gpus(small, sizeof small, 32000), "32 ");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_units_table, tu_teardown),
        cmocka_unit_test_teardown(test_units_bytes, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
