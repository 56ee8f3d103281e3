/*
 * test_reportq.c - GET /v1/report's ?buckets= (src/ctl/views/reportq.h):
 * absent, each bound and one past it, and text that is not a whole
 * decimal number (a sign, a space, a fraction, hex, overflow, empty);
 * every refusal is a 400 whose message names the field and its range.
 */
#include <stdio.h>
#include <string.h>

#include "testutil.h"

#include "views/reportq.h"

static void test_buckets_accepted(void **state) {
    (void)state;
    char msg[160] = "";
    int b = -1;
    assert_int_equal(ctl_report_buckets_query(NULL, &b, msg, sizeof msg), 0);
    assert_int_equal(b, 0);
    assert_int_equal(ctl_report_buckets_query("1", &b, msg, sizeof msg), 0);
    assert_int_equal(b, 1);
    assert_int_equal(ctl_report_buckets_query("12", &b, msg, sizeof msg), 0);
    assert_int_equal(b, 12);
    char top[16];
    snprintf(top, sizeof top, "%d", CTL_REPORT_MAX_BUCKETS);
    assert_int_equal(ctl_report_buckets_query(top, &b, msg, sizeof msg), 0);
    assert_int_equal(b, CTL_REPORT_MAX_BUCKETS);
    assert_int_equal(ctl_report_buckets_query("007", &b, msg, sizeof msg), 0);
    assert_int_equal(b, 7);
    assert_string_equal(msg, "");
}

static void test_buckets_refused(void **state) {
    (void)state;
    char past[16];
    snprintf(past, sizeof past, "%d", CTL_REPORT_MAX_BUCKETS + 1);
    const char *bad[] = {"0", past, "-1", "+3", " 3", "3 ", "3.5", "0x10", "1e2", "", "abc",
                         "99999999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char msg[160] = "";
        int b = -1;
        assert_int_equal(ctl_report_buckets_query(bad[i], &b, msg, sizeof msg), 400);
        assert_int_equal(b, 0);
        assert_int_equal(strncmp(msg, "buckets: ", 9), 0);
        char range[40];
        snprintf(range, sizeof range, "from 1 to %d", CTL_REPORT_MAX_BUCKETS);
        assert_non_null(strstr(msg, range));
    }
    /* A short message buffer is cut, never overrun. */
    char tiny[8];
    int b;
    assert_int_equal(ctl_report_buckets_query("0", &b, tiny, sizeof tiny), 400);
    assert_string_equal(tiny, "buckets");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_buckets_accepted, tu_teardown),
        cmocka_unit_test_teardown(test_buckets_refused, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
