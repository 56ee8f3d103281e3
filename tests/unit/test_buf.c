/*
 * test_buf.c - sluiced's byte buffer and JSON writer (src/ctl/base/buf.h).
 *
 * The JSON string writer (the one escaper, jsonesc.h, which scans 8 bytes
 * at a time for a byte that is not plain) is checked against a naive
 * one-byte-at-a-time escaper on seeded random
 * strings of every length up to 40 (each word boundary and tail), drawn
 * from all 256 bytes, from an alphabet dense in the bytes that need
 * escapes, and mostly plain with a rare one, appended after a prefix so
 * that the buffer grows on the way. The number writers are checked
 * against printf.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include "base/buf.h"
#include "jsonesc.h"

/* The escaper the writer replaces: one byte at a time. */
static size_t naive_jstr(char *out, const char *s, size_t n) {
    size_t o = 0;
    out[o++] = '"';
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            out[o++] = '\\';
            out[o++] = (char)c;
        } else if (c == '\n' || c == '\r' || c == '\t') {
            out[o++] = '\\';
            out[o++] = c == '\n' ? 'n' : c == '\r' ? 'r' : 't';
        } else if (c < 0x20) {
            o += (size_t)sprintf(out + o, "\\u%04x", c);
        } else if (c >= 0x80) {
            /* A valid UTF-8 sequence is copied, any other such byte is '?'. */
            size_t k = sl_utf8_seq((const unsigned char *)s + i, n - i, NULL);
            if (k == 0) {
                out[o++] = '?';
            } else {
                memcpy(out + o, s + i, k);
                o += k;
                i += k - 1;
            }
        } else {
            out[o++] = (char)c;
        }
    }
    out[o++] = '"';
    return o;
}

static void test_buf_jstr_matches_naive_on_random_strings(void **state) {
    (void)state;
    static const char dense[] = "ab\"\\\n\r\t\x01\x1f\x20\x7f\x80\xc3\xa9/";
    sl_rng_t rng;
    sl_rng_seed(&rng, 19);
    ctl_buf_t b;
    ctl_buf_init(&b);
    for (int it = 0; it < 30000; it++) {
        char s[48], want[48 * 6 + 2];
        size_t n = (size_t)sl_rng_below(&rng, 41);
        int mode = it % 3;
        for (size_t i = 0; i < n; i++) {
            if (mode == 0)
                s[i] = (char)sl_rng_below(&rng, 256);
            else if (mode == 1 || sl_rng_below(&rng, 24) == 0)
                s[i] = dense[sl_rng_below(&rng, sizeof dense - 1)];
            else
                s[i] = (char)('a' + sl_rng_below(&rng, 26));
        }
        size_t before = b.len;
        ctl_buf_jstrn(&b, s, n);
        size_t wl = naive_jstr(want, s, n);
        assert_int_equal(b.len - before, wl);
        assert_memory_equal(b.p + before, want, wl);
        if (b.len > 60000)
            b.len = 0; /* keep the prefix short, the buffer grown */
    }
    ctl_buf_fini(&b);
    assert_null(b.p);
}

static void test_buf_jstr_pinned(void **state) {
    (void)state;
    ctl_buf_t b;
    ctl_buf_init(&b);
    ctl_buf_jstr(&b, NULL);
    ctl_buf_putc(&b, ' ');
    ctl_buf_jstr(&b, "");
    ctl_buf_putc(&b, ' ');
    ctl_buf_jstr(&b, "waiting behind job 9 (no reservation \"possible\")\n");
    ctl_buf_putc(&b, '\0');
    assert_string_equal(b.p, "null \"\" \"waiting behind job 9 (no reservation \\\"possible\\\")\\n\"");
    ctl_buf_fini(&b);
}

static void test_buf_numbers_match_printf(void **state) {
    (void)state;
    static const int64_t v[] = {0, 1, -1, 9, 10, 999999, 1000000, -1000001, 1796155413234011LL,
                                INT64_MAX, INT64_MIN};
    ctl_buf_t b;
    ctl_buf_init(&b);
    char want[64];
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        b.len = 0;
        ctl_buf_i64(&b, v[i]);
        snprintf(want, sizeof want, "%lld", (long long)v[i]);
        assert_int_equal(b.len, strlen(want));
        assert_memory_equal(b.p, want, b.len);
        if (v[i] < 0)
            continue;
        b.len = 0;
        ctl_buf_time(&b, v[i]);
        snprintf(want, sizeof want, "%lld.%06lld", (long long)(v[i] / 1000000), (long long)(v[i] % 1000000));
        assert_int_equal(b.len, strlen(want));
        assert_memory_equal(b.p, want, b.len);
    }
    b.len = 0;
    ctl_buf_time(&b, -1);
    ctl_buf_milli(&b, 250);
    ctl_buf_putc(&b, ' ');
    ctl_buf_milli(&b, 4000);
    ctl_buf_putc(&b, '\0');
    assert_string_equal(b.p, "null0.25 4");
    ctl_buf_fini(&b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_buf_jstr_matches_naive_on_random_strings, tu_teardown),
        cmocka_unit_test_teardown(test_buf_jstr_pinned, tu_teardown),
        cmocka_unit_test_teardown(test_buf_numbers_match_printf, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
