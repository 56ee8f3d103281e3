/*
 * test_fielderr.c - a request's refusal (src/ctl/views/fielderr.h): each
 * part set, the status returned, no field when none is named, and a field
 * or message longer than its room cut, never overrun.
 */
#include <string.h>

#include "testutil.h"

#include "views/fielderr.h"

static void test_field_err_sets_each_part(void **state) {
    (void)state;
    ctl_field_err_t fe;
    memset(&fe, 0x5a, sizeof fe);
    int st = ctl_field_errf(&fe, 404, "not_found", "name", "no reservation \"%s\"", "r1");
    assert_int_equal(st, 404);
    assert_int_equal(fe.status, 404);
    assert_string_equal(fe.code, "not_found");
    assert_string_equal(fe.field, "name");
    assert_string_equal(fe.message, "no reservation \"r1\"");
}

static void test_field_err_without_field(void **state) {
    (void)state;
    ctl_field_err_t fe;
    memset(&fe, 0x5a, sizeof fe);
    assert_int_equal(ctl_field_errf(&fe, 403, "forbidden", NULL, "only the admin token may"), 403);
    assert_string_equal(fe.field, "");
    assert_string_equal(fe.message, "only the admin token may");
}

static void test_field_err_cuts_long_text(void **state) {
    (void)state;
    ctl_field_err_t fe;
    char longf[200], longm[3000];
    memset(longf, 'f', sizeof longf - 1);
    longf[sizeof longf - 1] = '\0';
    memset(longm, 'm', sizeof longm - 1);
    longm[sizeof longm - 1] = '\0';
    assert_int_equal(ctl_field_errf(&fe, 400, "invalid_field", longf, "%s", longm), 400);
    assert_int_equal(strlen(fe.field), sizeof fe.field - 1);
    assert_int_equal(strlen(fe.message), sizeof fe.message - 1);
    assert_int_equal(fe.message[0], 'm');
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_field_err_sets_each_part),
        cmocka_unit_test(test_field_err_without_field),
        cmocka_unit_test(test_field_err_cuts_long_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
