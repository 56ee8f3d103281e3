/*
 * test_error.c - the error table (error.h): every SL_E* code has its own
 * message and symbolic name, both generated from SL_ERRNO_MAP, the codes
 * equal negated errno values, unknown codes get fixed fallbacks, and every
 * sl_status_t has a name. Table-driven over the X-macro itself, so a code
 * added to the map is checked without touching this file.
 */
#include <string.h>

#include "testutil.h"

typedef struct err_row {
    int code;
    const char *name;
    const char *msg;
} err_row_t;

static const err_row_t rows[] = {
#define ROW(name, val, msg) {(val), "SL_E" #name, (msg)},
    SL_ERRNO_MAP(ROW)
#undef ROW
};
#define NROWS (sizeof rows / sizeof rows[0])

static void test_error_strerror_every_code(void **state) {
    (void)state;
    assert_true(NROWS >= 11);
    for (size_t i = 0; i < NROWS; i++) {
        assert_true(rows[i].code < 0);
        assert_string_equal(sl_strerror(rows[i].code), rows[i].msg);
        for (size_t k = 0; k < i; k++) { /* codes and messages are distinct */
            assert_int_not_equal(rows[i].code, rows[k].code);
            assert_string_not_equal(rows[i].msg, rows[k].msg);
        }
    }
    assert_string_equal(sl_strerror(0), "success");
    assert_string_equal(sl_strerror(SL_EINVAL), "invalid argument");
    assert_string_equal(sl_strerror(SL_ENOSPC), "not enough free capacity");
}

static void test_error_codes_are_negated_errno(void **state) {
    (void)state;
    assert_int_equal(SL_EINVAL, -EINVAL);
    assert_int_equal(SL_ENOMEM, -ENOMEM);
    assert_int_equal(SL_ENOENT, -ENOENT);
    assert_int_equal(SL_EEXIST, -EEXIST);
    assert_int_equal(SL_ERANGE, -ERANGE);
    assert_int_equal(SL_EOVERFLOW, -EOVERFLOW);
    assert_int_equal(SL_ENOSPC, -ENOSPC);
    assert_int_equal(SL_EBUSY, -EBUSY);
    assert_int_equal(SL_EPERM, -EPERM);
    assert_int_equal(SL_ESTATE, -EALREADY);
    assert_int_equal(SL_EIO, -EIO);
}

static void test_error_unknown_code_falls_back(void **state) {
    (void)state;
    const int unknown[] = {1, -1000000, -EPIPE, 12345, INT32_MIN};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        assert_non_null(sl_strerror(unknown[i]));
        assert_string_equal(sl_strerror(unknown[i]), "unknown error");
        assert_string_equal(sl_errname(unknown[i]), "SL_EUNKNOWN");
    }
}

static void test_error_errname_every_code(void **state) {
    (void)state;
    for (size_t i = 0; i < NROWS; i++) assert_string_equal(sl_errname(rows[i].code), rows[i].name);
    assert_string_equal(sl_errname(SL_EINVAL), "SL_EINVAL");
    assert_string_equal(sl_errname(SL_ESTATE), "SL_ESTATE");
    assert_string_equal(sl_errname(0), "SL_OK");
}

static void test_error_status_names(void **state) {
    (void)state;
    assert_string_equal(sl_status_name(SL_FIT), "fit");
    assert_string_equal(sl_status_name(SL_NOFIT), "nofit");
    assert_string_equal(sl_status_name(SL_NOFIT_EVER), "nofit_ever");
    assert_string_equal(sl_status_name(SL_WAIT), "wait");
    assert_string_equal(sl_status_name(SL_SKIP), "skip");
    assert_string_equal(sl_status_name((sl_status_t)99), "unknown");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_error_strerror_every_code, tu_teardown),
        cmocka_unit_test_teardown(test_error_codes_are_negated_errno, tu_teardown),
        cmocka_unit_test_teardown(test_error_unknown_code_falls_back, tu_teardown),
        cmocka_unit_test_teardown(test_error_errname_every_code, tu_teardown),
        cmocka_unit_test_teardown(test_error_status_names, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
