/*
 * test_jsonesc.c - the JSON string escaper and the UTF-8 check
 * (src/common/jsonesc.h).
 *
 * Table cases first: each escape, the bytes that are copied as they are
 * (0x7f, '/', valid UTF-8), and each kind of bad UTF-8 (a stray
 * continuation, an overlong form, a surrogate, a code point past U+10FFFF,
 * a sequence cut short), which becomes one '?' a byte. Then a differential
 * test: seeded random byte strings, drawn to hit every class of byte (all
 * control bytes, NULs, quotes, backslashes, high bytes alone, valid and
 * broken sequences), escaped by sl_json_quote and by a naive reference that
 * works byte by byte and checks UTF-8 by decoding the code point, which
 * must agree byte for byte; the output must also parse with jansson back
 * to the input with its bad bytes as '?', and a short buffer must get
 * exactly the first bytes of the literal and its whole length.
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "jsonesc.h"
#include "testutil.h"

#define MAXN 300

/* The length of the valid UTF-8 sequence at s[0..n) by decoding it, or 0:
 * the code point must need all its bytes and be a scalar value. */
static size_t ref_utf8(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    size_t k;
    uint32_t cp, min;
    if ((c & 0xE0) == 0xC0) {
        k = 2, cp = c & 0x1F, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
        k = 3, cp = c & 0x0F, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
        k = 4, cp = c & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (n < k) return 0;
    for (size_t j = 1; j < k; j++) {
        if ((s[j] & 0xC0) != 0x80) return 0;
        cp = cp << 6 | (s[j] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return k;
}

/* The literal, one byte at a time; *plain gets what it decodes to (the
 * input with each bad byte as '?') and *nplain its length. */
static size_t ref_quote(char *out, const unsigned char *s, size_t n, char *plain, size_t *nplain) {
    size_t o = 0, p = 0;
    out[o++] = '"';
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        size_t k = c >= 0x80 ? ref_utf8(s + i, n - i) : 0;
        if (k > 0) {
            memcpy(out + o, s + i, k);
            memcpy(plain + p, s + i, k);
            o += k, p += k, i += k;
            continue;
        }
        plain[p++] = c >= 0x80 ? '?' : (char)c;
        if (c == '"' || c == '\\') {
            out[o++] = '\\';
            out[o++] = (char)c;
        } else if (c == '\n' || c == '\r' || c == '\t') {
            out[o++] = '\\';
            out[o++] = c == '\n' ? 'n' : c == '\r' ? 'r' : 't';
        } else if (c < 0x20) {
            o += (size_t)snprintf(out + o, 7, "\\u%04x", c);
        } else if (c >= 0x80) {
            out[o++] = '?';
        } else {
            out[o++] = (char)c;
        }
        i++;
    }
    out[o++] = '"';
    *nplain = p;
    return o;
}

/* Appends the UTF-8 form of cp (surrogates included, which are invalid). */
static size_t put_cp(unsigned char *s, uint32_t cp) {
    if (cp < 0x80) {
        s[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        s[0] = (unsigned char)(0xC0 | cp >> 6);
        s[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        s[0] = (unsigned char)(0xE0 | cp >> 12);
        s[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
        s[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    s[0] = (unsigned char)(0xF0 | cp >> 18);
    s[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
    s[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
    s[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

/* A random string of up to MAXN bytes, built from pieces of every class. */
static size_t random_string(sl_rng_t *r, unsigned char *s) {
    size_t target = (size_t)sl_rng_below(r, MAXN - 3), n = 0;
    while (n < target) {
        uint64_t kind = sl_rng_below(r, 100);
        if (kind < 30) {
            s[n++] = (unsigned char)(0x20 + sl_rng_below(r, 0x60)); /* printable ASCII, 0x7f too */
        } else if (kind < 42) {
            s[n++] = (unsigned char)sl_rng_below(r, 0x20); /* control, NUL included */
        } else if (kind < 48) {
            s[n++] = '"';
        } else if (kind < 54) {
            s[n++] = '\\';
        } else if (kind < 58) {
            s[n++] = sl_rng_below(r, 2) ? '/' : 0x7f;
        } else if (kind < 68) {
            s[n++] = (unsigned char)(0x80 + sl_rng_below(r, 0x80)); /* a high byte alone */
        } else if (kind < 88) { /* a whole sequence, valid unless a surrogate */
            static const uint32_t lo[] = {0x80, 0x800, 0x10000}, span[] = {0x780, 0xF800, 0x100000};
            int len = (int)sl_rng_below(r, 3);
            n += put_cp(s + n, lo[len] + (uint32_t)sl_rng_below(r, span[len]));
        } else if (kind < 94) { /* a sequence cut short */
            unsigned char t[4];
            size_t k = put_cp(t, 0x80 + (uint32_t)sl_rng_below(r, 0x10FF80));
            size_t keep = 1 + (size_t)sl_rng_below(r, k > 1 ? k - 1 : 1);
            memcpy(s + n, t, keep);
            n += keep;
        } else { /* overlong forms and code points past U+10FFFF */
            static const unsigned char bad[][4] = {
                {0xC0, 0x80}, {0xC1, 0xBF}, {0xE0, 0x80, 0x80}, {0xE0, 0x9F, 0xBF},
                {0xF0, 0x8F, 0xBF, 0xBF}, {0xF4, 0x90, 0x80, 0x80}, {0xF5, 0x80, 0x80, 0x80},
                {0xFF, 0xFE}};
            static const size_t badn[] = {2, 2, 3, 3, 4, 4, 4, 2};
            size_t b = (size_t)sl_rng_below(r, 8);
            memcpy(s + n, bad[b], badn[b]);
            n += badn[b];
        }
    }
    return n;
}

/* The escaper against the reference on s, and its short-buffer contract. */
static void check_one(sl_rng_t *r, const unsigned char *s, size_t n) {
    static char want[SL_JSON_QUOTE_MAX(MAXN)], got[SL_JSON_QUOTE_MAX(MAXN) + 8];
    static char plain[MAXN];
    size_t nplain;
    size_t wn = ref_quote(want, s, n, plain, &nplain);
    size_t gn = sl_json_quote(got, sizeof got, (const char *)s, n);
    assert_int_equal(gn, wn);
    assert_memory_equal(got, want, wn);
    assert_true(gn <= SL_JSON_QUOTE_MAX(n));
    assert_int_equal(sl_json_quote(NULL, 0, (const char *)s, n), wn);

    /* A short buffer: the first cap bytes, nothing past them, the whole length. */
    size_t cap = (size_t)sl_rng_below(r, wn + 1);
    memset(got, 0x5a, sizeof got);
    assert_int_equal(sl_json_quote(got, cap, (const char *)s, n), wn);
    assert_memory_equal(got, want, cap);
    for (size_t i = cap; i < sizeof got; i++)
        assert_int_equal((unsigned char)got[i], 0x5a);

    /* Valid JSON, whatever the input: it reads back as the input with '?'
     * for each bad byte. */
    json_error_t err;
    json_t *v = json_loadb(want, wn, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
    if (v == NULL)
        fail_msg("not JSON: %s", err.text);
    assert_true(json_is_string(v));
    assert_int_equal(json_string_length(v), nplain);
    assert_memory_equal(json_string_value(v), plain, nplain);
    json_decref(v);
}

static void test_jsonesc_matches_reference_on_random_strings(void **state) {
    (void)state;
    static unsigned char s[MAXN];
    for (uint64_t seed = 1; seed <= 200; seed++) {
        sl_rng_t r;
        sl_rng_seed(&r, seed);
        for (int k = 0; k < 40; k++)
            check_one(&r, s, random_string(&r, s));
    }
    /* Every single byte, and every byte between two plain ones. */
    sl_rng_t r;
    sl_rng_seed(&r, 0);
    for (unsigned c = 0; c < 256; c++) {
        unsigned char one[3] = {'a', (unsigned char)c, 'b'};
        check_one(&r, one + 1, 1);
        check_one(&r, one, 3);
    }
}

static void test_jsonesc_table(void **state) {
    (void)state;
    static const struct {
        const char *in;
        size_t n;
        const char *want;
    } cases[] = {
        {"", 0, "\"\""},
        {"plain text", 10, "\"plain text\""},
        {"\"", 1, "\"\\\"\""},
        {"\\", 1, "\"\\\\\""},
        {"a\nb\rc\td", 7, "\"a\\nb\\rc\\td\""},
        {"\x01\x08\x0c\x1f", 4, "\"\\u0001\\u0008\\u000c\\u001f\""},
        {"a\0b", 3, "\"a\\u0000b\""},         /* an embedded NUL */
        {"/\x7f", 2, "\"/\x7f\""},            /* neither is escaped */
        {"\xc3\xa9t\xc3\xa9", 5, "\"\xc3\xa9t\xc3\xa9\""},
        {"\xf0\x9f\x98\x80", 4, "\"\xf0\x9f\x98\x80\""},
        {"\xe2\x82\xac!", 4, "\"\xe2\x82\xac!\""},
        {"a\xff" "b", 3, "\"a?b\""},         /* never a UTF-8 byte */
        {"\x80\xbf", 2, "\"??\""},           /* continuations alone */
        {"\xc3", 1, "\"?\""},                /* cut at the end */
        {"\xe2\x82", 2, "\"??\""},
        {"\xe2\x82x", 3, "\"??x\""},         /* cut before a plain byte */
        {"\xc0\xaf", 2, "\"??\""},           /* overlong */
        {"\xed\xa0\x80", 3, "\"???\""},      /* a surrogate */
        {"\xf4\x90\x80\x80", 4, "\"????\""}, /* past U+10FFFF */
        {"\"\xff\\", 3, "\"\\\"?\\\\\""},
    };
    char out[64];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t n = sl_json_quote(out, sizeof out, cases[i].in, cases[i].n);
        assert_int_equal(n, strlen(cases[i].want));
        assert_memory_equal(out, cases[i].want, n);
    }
    /* No input at all, and no buffer at all. */
    assert_int_equal(sl_json_quote(out, sizeof out, NULL, 0), 2);
    assert_memory_equal(out, "\"\"", 2);
    assert_int_equal(sl_json_quote(NULL, 0, "\x01", 1), 8);
}

/* The UTF-8 check the escaper and the agent's log chunks share: valid
 * sequences of each length, the RFC 3629 exclusions, and a sequence cut
 * short by the end of the buffer told apart from a bad one. */
static void test_jsonesc_utf8_seq(void **state) {
    (void)state;
    static const struct {
        const char *s;
        size_t n;
        size_t want;
        bool cut;
    } cases[] = {
        {"\xc3\xa9", 2, 2, false},         /* e acute */
        {"\xe2\x82\xac", 3, 3, false},     /* euro sign */
        {"\xf0\x9f\x98\x80", 4, 4, false}, /* emoji */
        {"\xc3", 1, 0, true},              /* cut after the lead byte */
        {"\xf0\x9f\x98", 3, 0, true},      /* cut after three of four */
        {"\xc0\xaf", 2, 0, false},         /* overlong */
        {"\xe0\x80\xaf", 3, 0, false},     /* overlong */
        {"\xed\xa0\x80", 3, 0, false},     /* surrogate */
        {"\xf4\x90\x80\x80", 4, 0, false}, /* past U+10FFFF */
        {"\x80", 1, 0, false},             /* a continuation byte alone */
        {"\xe2\x28\xa1", 3, 0, false},     /* bad second byte */
        {"\xf0\x9f\x28", 3, 0, false},     /* bad third byte before the end */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bool cut = !cases[i].cut;
        assert_int_equal(sl_utf8_seq((const unsigned char *)cases[i].s, cases[i].n, &cut),
                         cases[i].want);
        assert_int_equal(cut, cases[i].cut);
    }
    assert_int_equal(sl_utf8_seq((const unsigned char *)"\xc3\xa9", 2, NULL), 2);
    /* Against the decoding reference for every two- and three-byte prefix
     * of a lead byte, so each range boundary is covered. */
    for (unsigned a = 0x80; a < 0x100; a++)
        for (unsigned b = 0; b < 0x100; b++) {
            unsigned char s[4] = {(unsigned char)a, (unsigned char)b, 0x80, 0x80};
            assert_int_equal(sl_utf8_seq(s, 4, NULL), ref_utf8(s, 4));
        }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_jsonesc_table, tu_teardown),
        cmocka_unit_test_teardown(test_jsonesc_utf8_seq, tu_teardown),
        cmocka_unit_test_teardown(test_jsonesc_matches_reference_on_random_strings, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
