/*
 * test_array_spec.c - the Slurm texts of --array and --dependency
 * (src/common/arraydep.c), table-driven: each row is a text and what the
 * parser must make of it (the indexes, the limit, the terms) or a
 * fragment of its message. The check-only call (out NULL) must agree with
 * the full parse on every row. The array parser is also checked against a
 * naive reading (every item expanded into a sorted list) on seeded random
 * texts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arraydep.h"
#include "testutil.h"

typedef struct arow {
    const char *text;
    int32_t max;
    const char *want;   /* the indexes as sl_array_format writes them; NULL: an error */
    int32_t n, limit;
    const char *msg;    /* a fragment of the error */
} arow_t;

static const arow_t arows[] = {
    {"0-99", 10001, "0-99", 100, 0, NULL},
    {"1,3,5-9:2", 10001, "1,3,5,7,9", 5, 0, NULL},
    {"0-99%8", 10001, "0-99", 100, 8, NULL},
    {"7", 10001, "7", 1, 0, NULL},
    {"5,1,5,2-3", 10001, "1-3,5", 4, 0, NULL},
    {"0-10000", 10001, "0-10000", 10001, 0, NULL},
    {"0-10:5%1", 10001, "0,5,10", 3, 1, NULL},
    {"0-10001", 10001, NULL, 0, 0, "index 10001 is too large: indexes are 0 to 10000"},
    {"0-9999,0-9999", 10001, NULL, 0, 0, "more than 10001 elements"},
    {"", 10001, NULL, 0, 0, "must be indexes"},
    {"a-b", 10001, NULL, 0, 0, "\"a-b\" is not an index"},
    {"5-1", 10001, NULL, 0, 0, "must not end below its start"},
    {"1-5:0", 10001, NULL, 0, 0, "the step after ':'"},
    {"1-", 10001, NULL, 0, 0, "needs its last index"},
    {"1,,2", 10001, NULL, 0, 0, "\"\" is not an index"},
    {"0-9%", 10001, NULL, 0, 0, "concurrency limit"},
    {"0-9%0", 10001, NULL, 0, 0, "concurrency limit"},
    {"0-9%2x", 10001, NULL, 0, 0, "concurrency limit"},
    {"-1", 10001, NULL, 0, 0, "is not an index"},
    {"99999999999999999999", 10001, NULL, 0, 0, "is not an index"},
};

static void test_array_spec_table(void **state) {
    (void)state;
    for (size_t r = 0; r < sizeof arows / sizeof arows[0]; r++) {
        const arow_t *row = &arows[r];
        sl_array_spec_t a;
        char err[256] = "", err2[256] = "";
        int rc = sl_array_parse(row->text, row->max, &a, err, sizeof err);
        int rc2 = sl_array_parse(row->text, row->max, NULL, err2, sizeof err2);
        if (rc != rc2)
            fail_msg("row %zu \"%s\": check-only says %d, parse says %d", r, row->text, rc2, rc);
        if (row->want == NULL) {
            if (rc == 0 || strstr(err, row->msg) == NULL)
                fail_msg("row %zu \"%s\": want an error with \"%s\", got %d \"%s\"", r, row->text,
                         row->msg, rc, err);
            assert_string_equal(err, err2);
            continue;
        }
        if (rc != 0)
            fail_msg("row %zu \"%s\": %s", r, row->text, err);
        char buf[256];
        sl_array_format(a.idx, (size_t)a.n, buf, sizeof buf);
        assert_string_equal(buf, row->want);
        assert_int_equal(a.n, row->n);
        assert_int_equal(a.limit, row->limit);
        sl_array_spec_fini(&a);
    }
}

static int cmp_i32(const void *x, const void *y) {
    int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
    return (a > b) - (a < b);
}

/* Random texts of 1..4 items against every item expanded, sorted, deduplicated. */
static void test_array_spec_matches_naive(void **state) {
    (void)state;
    sl_rng_t rng;
    sl_rng_seed(&rng, 13);
    for (int round = 0; round < 500; round++) {
        char text[256] = "";
        int32_t naive[4 * 200];
        size_t nn = 0;
        int items = 1 + (int)sl_rng_below(&rng, 4);
        for (int k = 0; k < items; k++) {
            int lo = (int)sl_rng_below(&rng, 150);
            int hi = lo + (int)sl_rng_below(&rng, 50);
            int step = 1 + (int)sl_rng_below(&rng, 4);
            size_t l = strlen(text);
            int form = (int)sl_rng_below(&rng, 3);
            if (form == 0)
                hi = lo;
            if (form == 0)
                snprintf(text + l, sizeof text - l, "%s%d", k ? "," : "", lo);
            else if (form == 1 || step == 1)
                snprintf(text + l, sizeof text - l, "%s%d-%d", k ? "," : "", lo, hi), step = 1;
            else
                snprintf(text + l, sizeof text - l, "%s%d-%d:%d", k ? "," : "", lo, hi, step);
            for (int i = lo; i <= hi; i += step)
                naive[nn++] = i;
        }
        qsort(naive, nn, sizeof naive[0], cmp_i32);
        size_t u = 0;
        for (size_t i = 0; i < nn; i++)
            if (u == 0 || naive[u - 1] != naive[i])
                naive[u++] = naive[i];
        sl_array_spec_t a;
        char err[256];
        if (sl_array_parse(text, 10001, &a, err, sizeof err) != 0)
            fail_msg("\"%s\": %s", text, err);
        assert_int_equal(a.n, (int32_t)u);
        for (size_t i = 0; i < u; i++)
            assert_int_equal(a.idx[i], naive[i]);
        sl_array_spec_fini(&a);
    }
}

static void test_array_format_cuts(void **state) {
    (void)state;
    int32_t idx[100];
    for (int i = 0; i < 100; i++)
        idx[i] = 2 * i;
    char buf[24];
    size_t n = sl_array_format(idx, 100, buf, sizeof buf);
    assert_true(n < sizeof buf);
    assert_string_equal(buf + n - 3, "...");
}

typedef struct drow {
    const char *text;
    const char *want;  /* terms as "kind:job[_idx]" joined by ' ', prefixed "any " for '?'; NULL: error */
    const char *msg;
} drow_t;

static const drow_t drows[] = {
    {"afterok:123", "afterok:123", NULL},
    {"afterok:123:124,afterany:7", "afterok:123 afterok:124 afterany:7", NULL},
    {"afterok:1?afterok:2", "any afterok:1 afterok:2", NULL},
    {"singleton", "singleton:0", NULL},
    {"after:5_3,afternotok:6", "after:5_3 afternotok:6", NULL},
    {"singleton,afterok:9", "singleton:0 afterok:9", NULL},
    {"", NULL, "must be dependencies"},
    {"afterok", NULL, "afterok needs job ids"},
    {"afterok:", NULL, "is not a job id"},
    {"afterok:x", NULL, "\"x\" is not a job id"},
    {"afterok:0", NULL, "\"0\" is not a job id"},
    {"afterok:1,afterok:2?afterok:3", NULL, "do not mix"},
    {"afterok:1,", NULL, "ends with ','"},
    {"aftercorr:1", NULL, "\"aftercorr\" is not supported"},
    {"before:1", NULL, "\"before\" is not a dependency kind"},
    {"afterok:1+10", NULL, "delays (+minutes) are not supported"},
    {"afterok:1_", NULL, "after '_' comes an array index"},
    {"singleton:3", NULL, "singleton takes no job ids"},
};

static void test_dep_spec_table(void **state) {
    (void)state;
    for (size_t r = 0; r < sizeof drows / sizeof drows[0]; r++) {
        const drow_t *row = &drows[r];
        sl_dep_spec_t d;
        char err[256] = "";
        int rc = sl_dep_parse(row->text, &d, err, sizeof err);
        assert_int_equal(sl_dep_parse(row->text, NULL, err, sizeof err), rc);
        if (row->want == NULL) {
            if (rc == 0 || strstr(err, row->msg) == NULL)
                fail_msg("row %zu \"%s\": want an error with \"%s\", got %d \"%s\"", r, row->text,
                         row->msg, rc, err);
            assert_null(d.t);
            continue;
        }
        if (rc != 0)
            fail_msg("row %zu \"%s\": %s", r, row->text, err);
        char buf[512] = "";
        size_t l = 0;
        if (d.any)
            l += (size_t)snprintf(buf + l, sizeof buf - l, "any ");
        for (size_t i = 0; i < d.n; i++) {
            l += (size_t)snprintf(buf + l, sizeof buf - l, "%s%s:%llu", i ? " " : "",
                                  sl_dep_kind_name(d.t[i].kind), (unsigned long long)d.t[i].job);
            if (d.t[i].index >= 0)
                l += (size_t)snprintf(buf + l, sizeof buf - l, "_%d", d.t[i].index);
        }
        assert_string_equal(buf, row->want);
        sl_dep_spec_fini(&d);
    }
}

static void test_dep_spec_bounds_terms(void **state) {
    (void)state;
    size_t len = 8 + (SL_DEP_MAX_TERMS + 1) * 3;
    char *text = malloc(len);
    size_t l = (size_t)snprintf(text, len, "afterok");
    for (int i = 0; i <= SL_DEP_MAX_TERMS; i++)
        l += (size_t)snprintf(text + l, len - l, ":%d", 1 + i % 9);
    char err[256];
    sl_dep_spec_t d;
    assert_int_equal(sl_dep_parse(text, &d, err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, "more than 1024 jobs"));
    free(text);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_array_spec_table, tu_teardown),
        cmocka_unit_test_teardown(test_array_spec_matches_naive, tu_teardown),
        cmocka_unit_test_teardown(test_array_format_cuts, tu_teardown),
        cmocka_unit_test_teardown(test_dep_spec_table, tu_teardown),
        cmocka_unit_test_teardown(test_dep_spec_bounds_terms, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
