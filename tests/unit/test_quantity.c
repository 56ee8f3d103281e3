/*
 * test_quantity.c - exact parsing and formatting of quantities.
 *
 * Table-driven (SQLite style): every row is a text, a kind and the expected
 * integer or error with a fragment of the message. Property tests check that
 * format(parse(x)) parses back to the same value for the table and for
 * seeded random values of every magnitude.
 */
#include <stdio.h>
#include <string.h>

#include "quantity.h"
#include "testutil.h"

typedef struct row {
    const char *text;
    sl_qty_kind_t kind;
    int rc;          /* 0, SL_EINVAL or SL_EOVERFLOW */
    int64_t value;   /* when rc == 0 */
    const char *msg; /* when rc != 0: a fragment the message must contain */
} row_t;

#define C SL_QTY_CPU
#define M SL_QTY_MEM
#define G SL_QTY_GPU
#define KI INT64_C(1024)
#define MI (KI * 1024)
#define GI (MI * 1024)
#define TI (GI * 1024)
#define PI_ (TI * 1024)
#define EI (PI_ * 1024)

static const row_t rows[] = {
    /* CPU */
    {"16", C, 0, 16000, NULL},
    {"0", C, 0, 0, NULL},
    {"0m", C, 0, 0, NULL},
    {"500m", C, 0, 500, NULL},
    {"1.5", C, 0, 1500, NULL},
    {"1.50", C, 0, 1500, NULL},
    {"1.500000000000000000000", C, 0, 1500, NULL},
    {"0.001", C, 0, 1, NULL},
    {".5", C, 0, 500, NULL},
    {"007", C, 0, 7000, NULL},
    {"1m", C, 0, 1, NULL},
    {"2.000m", C, 0, 2, NULL},
    {"9223372036854775807m", C, 0, INT64_MAX, NULL},
    {"9223372036854775.807", C, 0, INT64_MAX, NULL},
    {"9223372036854775808m", C, SL_EOVERFLOW, 0, "overflow"},
    {"9223372036854776", C, SL_EOVERFLOW, 0, "overflow"},
    {"99999999999999999999999", C, SL_EOVERFLOW, 0, "overflow"},
    {"0.0001", C, SL_EINVAL, 0, "finer than 1m"},
    {"1.5m", C, SL_EINVAL, 0, "finer than 1m"},
    {"0.0000000000000000001", C, SL_EINVAL, 0, "too fine"},
    {"-1", C, SL_EINVAL, 0, "negative"},
    {"-0", C, SL_EINVAL, 0, "negative"},
    {"", C, SL_EINVAL, 0, "empty"},
    {"m", C, SL_EINVAL, 0, "not a number"},
    {".", C, SL_EINVAL, 0, "not a number"},
    {"1.", C, SL_EINVAL, 0, "not a number"},
    {"1.2.3", C, SL_EINVAL, 0, "not a number"},
    {"+1", C, SL_EINVAL, 0, "not a number"},
    {" 1", C, SL_EINVAL, 0, "not a number"},
    {"1 ", C, SL_EINVAL, 0, "unknown unit \" \""},
    {"1Gi", C, SL_EINVAL, 0, "unknown unit \"Gi\""},
    {"2k", C, SL_EINVAL, 0, "unknown unit \"k\""},
    {"1e3", C, SL_EINVAL, 0, "unknown unit \"e3\""},
    {"abc", C, SL_EINVAL, 0, "not a number"},
    {"1abc", C, SL_EINVAL, 0, "unknown unit \"abc\""},
    /* memory */
    {"1000", M, 0, 1000, NULL},
    {"0", M, 0, 0, NULL},
    {"1Ki", M, 0, KI, NULL},
    {"512Mi", M, 0, 512 * MI, NULL},
    {"128Gi", M, 0, 128 * GI, NULL},
    {"2Ti", M, 0, 2 * TI, NULL},
    {"3Pi", M, 0, 3 * PI_, NULL},
    {"7Ei", M, 0, 7 * EI, NULL},
    {"1.5Gi", M, 0, 3 * GI / 2, NULL},
    {"0.5Ki", M, 0, 512, NULL},
    {"0.0009765625Ki", M, 0, 1, NULL},
    {"100k", M, 0, 100000, NULL},
    {"64G", M, 0, INT64_C(64000000000), NULL},
    {"1M", M, 0, 1000000, NULL},
    {"1T", M, 0, INT64_C(1000000000000), NULL},
    {"1P", M, 0, INT64_C(1000000000000000), NULL},
    {"9E", M, 0, INT64_C(9000000000000000000), NULL},
    {"1.5k", M, 0, 1500, NULL},
    {"0.000000000000000001E", M, 0, 1, NULL},
    {"9223372036854775807", M, 0, INT64_MAX, NULL},
    {"9223372036854775808", M, SL_EOVERFLOW, 0, "overflow"},
    {"8Ei", M, SL_EOVERFLOW, 0, "overflow"},
    {"10E", M, SL_EOVERFLOW, 0, "overflow"},
    {"8589934592Gi", M, SL_EOVERFLOW, 0, "overflow"},
    {"0.5", M, SL_EINVAL, 0, "finer than one byte"},
    {"0.1Ki", M, SL_EINVAL, 0, "finer than one byte"},
    {"1.0001k", M, SL_EINVAL, 0, "finer than one byte"},
    {"12Qi", M, SL_EINVAL, 0, "unknown unit \"Qi\""},
    {"1K", M, SL_EINVAL, 0, "unknown unit \"K\""},
    {"1m", M, SL_EINVAL, 0, "unknown unit \"m\""},
    {"1gi", M, SL_EINVAL, 0, "unknown unit \"gi\""},
    {"1GiB", M, SL_EINVAL, 0, "unknown unit \"GiB\""},
    {"-1Gi", M, SL_EINVAL, 0, "negative"},
    {"", M, SL_EINVAL, 0, "empty"},
    {"Gi", M, SL_EINVAL, 0, "not a number"},
    /* GPU */
    {"2", G, 0, 2000, NULL},
    {"0.25", G, 0, 250, NULL},
    {"500m", G, 0, 500, NULL},
    {"0.125", G, 0, 125, NULL},
    {"16", G, 0, 16000, NULL},
    {"0.0005", G, SL_EINVAL, 0, "finer than 1m"},
    {"1Gi", G, SL_EINVAL, 0, "unknown unit \"Gi\""},
    {"-0.5", G, SL_EINVAL, 0, "negative"},
};

static void test_quantity_parse_table(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const row_t *r = &rows[i];
        int64_t v = -12345;
        char err[160] = "";
        int rc = sl_qty_parse(r->text, r->kind, &v, err, sizeof err);
        if (rc != r->rc) fail_msg("row %zu \"%s\": rc %d, want %d (%s)", i, r->text, rc, r->rc, err);
        if (rc == 0) {
            if (v != r->value)
                fail_msg("row %zu \"%s\": %lld, want %lld", i, r->text, (long long)v,
                         (long long)r->value);
        } else {
            assert_int_equal(v, -12345); /* unchanged on failure */
            char quoted[96];
            snprintf(quoted, sizeof quoted, "\"%s\"", r->text);
            if (!strstr(err, quoted)) fail_msg("row %zu: message \"%s\" lacks the text", i, err);
            if (!strstr(err, r->msg))
                fail_msg("row %zu \"%s\": message \"%s\" lacks \"%s\"", i, r->text, err, r->msg);
        }
    }
}

static void test_quantity_parse_null_and_small_err(void **state) {
    (void)state;
    int64_t v = 7;
    assert_int_equal(sl_qty_parse(NULL, SL_QTY_CPU, &v, NULL, 0), SL_EINVAL);
    assert_int_equal(v, 7);
    char err[4] = "xyz";
    assert_int_equal(sl_qty_parse("12Qi", SL_QTY_MEM, &v, err, sizeof err), SL_EINVAL);
    assert_int_equal(strlen(err), 3); /* truncated, still terminated */
    assert_int_equal(sl_qty_parse("1", (sl_qty_kind_t)9, &v, NULL, 0), SL_EINVAL);
}

typedef struct frow {
    int64_t v;
    sl_qty_kind_t kind;
    const char *text;
} frow_t;

static const frow_t frows[] = {
    {16000, C, "16"}, {1500, C, "1.5"}, {500, C, "500m"}, {0, C, "0"}, {1, C, "1m"},
    {1250, C, "1.25"}, {1001, C, "1.001"}, {999, C, "999m"},
    {2000, G, "2"}, {250, G, "0.25"}, {500, G, "0.5"}, {1, G, "0.001"}, {0, G, "0"},
    /* GPUs read as GPUs, never milli-GPUs: the job spec's share range and
     * messages are formatted this way. */
    {999, G, "0.999"}, {16000, G, "16"}, {1125, G, "1.125"},
    {128 * GI, M, "128Gi"}, {3 * GI / 2, M, "1536Mi"}, {KI, M, "1Ki"}, {1000, M, "1000"},
    {0, M, "0"}, {7 * EI, M, "7Ei"}, {INT64_MAX, M, "9223372036854775807"}, {1023, M, "1023"},
    {1025 * KI, M, "1025Ki"}, {-2048, M, "-2Ki"}, {-1500, C, "-1.5"},
};

static void test_quantity_format_table(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof frows / sizeof frows[0]; i++) {
        char buf[64];
        int n = sl_qty_format(frows[i].v, frows[i].kind, buf, sizeof buf);
        assert_string_equal(buf, frows[i].text);
        assert_int_equal(n, (int)strlen(frows[i].text));
    }
}

static void test_quantity_format_truncates_like_snprintf(void **state) {
    (void)state;
    char buf[4];
    int n = sl_qty_format(128 * GI, SL_QTY_MEM, buf, sizeof buf);
    assert_int_equal(n, 5);
    assert_string_equal(buf, "128");
    assert_int_equal(sl_qty_format(1500, SL_QTY_CPU, NULL, 0), 3);
}

static void roundtrip(int64_t v, sl_qty_kind_t kind) {
    char buf[64], err[128];
    int64_t back = -1;
    sl_qty_format(v, kind, buf, sizeof buf);
    if (sl_qty_parse(buf, kind, &back, err, sizeof err) != 0 || back != v)
        fail_msg("round trip of %lld (kind %d) via \"%s\": %s", (long long)v, kind, buf, err);
}

static void test_quantity_roundtrip_table(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        int64_t v;
        if (sl_qty_parse(rows[i].text, rows[i].kind, &v, NULL, 0) == 0) roundtrip(v, rows[i].kind);
    }
}

static void test_quantity_roundtrip_random(void **state) {
    (void)state;
    sl_rng_t rng;
    sl_rng_seed(&rng, 20240601);
    for (int i = 0; i < 200000; i++) {
        /* Spread over magnitudes: a random bit length, often with low zero bits. */
        int bits = (int)sl_rng_below(&rng, 63) + 1;
        int64_t v = (int64_t)(sl_rng_next(&rng) >> (64 - bits));
        int shift = (int)sl_rng_below(&rng, 4) * 10;
        if (shift && bits > shift) v = (int64_t)(((uint64_t)v >> shift) << shift);
        sl_qty_kind_t kind = (sl_qty_kind_t)sl_rng_below(&rng, 3);
        roundtrip(v, kind);
    }
}

/* Random texts: parse must never crash, and anything it accepts round-trips. */
static void test_quantity_parse_random_text(void **state) {
    (void)state;
    static const char alphabet[] = "0123456789.-mkMGTPEiKQ ";
    sl_rng_t rng;
    sl_rng_seed(&rng, 7);
    int accepted = 0;
    for (int i = 0; i < 100000; i++) {
        char text[16];
        int len = (int)sl_rng_below(&rng, sizeof text);
        for (int j = 0; j < len; j++) text[j] = alphabet[sl_rng_below(&rng, sizeof alphabet - 1)];
        text[len] = 0;
        sl_qty_kind_t kind = (sl_qty_kind_t)sl_rng_below(&rng, 3);
        int64_t v;
        char err[64];
        int rc = sl_qty_parse(text, kind, &v, err, sizeof err);
        if (rc == 0) {
            assert_true(v >= 0);
            roundtrip(v, kind);
            accepted++;
        } else {
            assert_true(rc == SL_EINVAL || rc == SL_EOVERFLOW);
            assert_non_null(strstr(err, "\""));
        }
    }
    assert_true(accepted > 100);
}

/* Rounded sizes for messages: three significant digits, a unit a person
 * reads, the next unit instead of 1024 of one. */
static void test_quantity_format_mem_round(void **state) {
    (void)state;
    static const struct {
        int64_t v;
        const char *want;
    } mrows[] = {
        {0, "0"},         {900, "900"},         {1023, "1023"},      {KI, "1Ki"},
        {1536, "1.5Ki"},  {128 * MI, "128Mi"},  {147639500, "141Mi"}, {147849216, "141Mi"},
        {GI + GI / 2, "1.5Gi"}, {(int64_t)(12.34 * (double)GI), "12.3Gi"}, {MI * 1023 + MI * 7 / 10, "1Gi"},
        {10 * MI - 1, "10Mi"}, {(int64_t)(9.994 * (double)MI), "9.99Mi"}, {EI * 7, "7Ei"},
        {-2 * MI, "-2Mi"}, {INT64_MAX, "8Ei"},
    };
    char buf[32];
    for (size_t i = 0; i < sizeof mrows / sizeof mrows[0]; i++) {
        int n = sl_qty_format_mem_round(mrows[i].v, buf, sizeof buf);
        if (strcmp(buf, mrows[i].want) != 0 || (size_t)n != strlen(buf))
            fail_msg("%lld: got \"%s\" (%d), want \"%s\"", (long long)mrows[i].v, buf, n, mrows[i].want);
    }
    /* snprintf semantics: a short buffer gets a prefix, the length is whole. */
    assert_int_equal(sl_qty_format_mem_round(147639500, buf, 3), 5);
    assert_string_equal(buf, "14");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_quantity_parse_table, tu_teardown),
        cmocka_unit_test_teardown(test_quantity_parse_null_and_small_err, tu_teardown),
        cmocka_unit_test_teardown(test_quantity_format_table, tu_teardown),
        cmocka_unit_test_teardown(test_quantity_format_truncates_like_snprintf, tu_teardown),
        cmocka_unit_test_teardown(test_quantity_roundtrip_table, tu_teardown),
        cmocka_unit_test_teardown(test_quantity_roundtrip_random, tu_teardown),
        cmocka_unit_test_teardown(test_quantity_parse_random_text, tu_teardown),
        cmocka_unit_test_teardown(test_quantity_format_mem_round, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
