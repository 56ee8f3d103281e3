/*
 * test_backoff.c - the back-off between a failed job's attempts
 * (src/common/backoff.h) and the event types of its notifications
 * (src/common/mailtype.h): tables of failures with their wait, of texts
 * with their mask, and of refused texts with their message.
 */
#include <stdint.h>
#include <string.h>

#include "mailtype.h"
#include "backoff.h"
#include "testutil.h"

static void test_retry_backoff_doubles_to_its_cap(void **state) {
    (void)state;
    static const struct { int64_t base, cap; int32_t failure; int64_t want; } cases[] = {
        {10000, 360000, 1, 10000},   {10000, 360000, 2, 20000},  {10000, 360000, 3, 40000},
        {10000, 360000, 6, 320000},  {10000, 360000, 7, 360000}, {10000, 360000, 1000, 360000},
        {10000, 360000, 0, 10000},   {10000, 360000, -5, 10000}, {0, 360000, 9, 0},
        {500000, 360000, 1, 360000}, {10000, 0, 3, 0},           {-1, 100, 2, 0},
        {INT64_MAX / 2 + 1, INT64_MAX, 3, INT64_MAX},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t got = sl_retry_backoff_ms(cases[i].base, cases[i].cap, cases[i].failure);
        if (got != cases[i].want)
            fail_msg("case %zu: %lld, not %lld", i, (long long)got, (long long)cases[i].want);
    }
}

static void test_mail_types_parse_slurm_words(void **state) {
    (void)state;
    static const struct { const char *text; uint32_t mask; } ok[] = {
        {"BEGIN", SL_MAIL_BEGIN},
        {"begin,end", SL_MAIL_BEGIN | SL_MAIL_END},
        {"FAIL,REQUEUE", SL_MAIL_FAIL | SL_MAIL_REQUEUE},
        {"ALL", SL_MAIL_ALL},
        {"END,ALL", SL_MAIL_ALL},
        {"NONE", 0},
        {"END,ARRAY_TASKS", SL_MAIL_END},
        {"TIME_LIMIT,INVALID_DEPEND", SL_MAIL_TIME_LIMIT | SL_MAIL_INVALID_DEPEND},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        uint32_t m = 12345;
        char err[200];
        if (sl_mail_types_parse(ok[i].text, &m, err, sizeof err) != 0)
            fail_msg("%s: %s", ok[i].text, err);
        assert_int_equal(m, ok[i].mask);
    }
    static const struct { const char *text, *err; } bad[] = {
        {"", "needs event types such as BEGIN,END,FAIL (or ALL)"},
        {"BEGIN,,END", "an empty event type in \"BEGIN,,END\""},
        {"BEGIN,", "an empty event type in \"BEGIN,\""},
        {"START", "\"START\" is not an event type (BEGIN, END, FAIL, REQUEUE, TIME_LIMIT, "
                  "INVALID_DEPEND, ALL, NONE, ARRAY_TASKS)"},
        {"END,TIME_LIMIT_90", "\"TIME_LIMIT_90\" is not supported: Sluice reports no share of a "
                              "time limit; use TIME_LIMIT"},
        {"NONE,END", "NONE goes alone, not with other event types"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint32_t m = 7;
        char err[200];
        assert_int_equal(sl_mail_types_parse(bad[i].text, &m, err, sizeof err), -1);
        assert_string_equal(err, bad[i].err);
        assert_int_equal(m, 7); /* unchanged on failure */
    }
    assert_string_equal(sl_mail_type_name(SL_MAIL_REQUEUE), "REQUEUE");
    assert_null(sl_mail_type_name(SL_MAIL_ALL));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_retry_backoff_doubles_to_its_cap, tu_teardown),
        cmocka_unit_test_teardown(test_mail_types_parse_slurm_words, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
