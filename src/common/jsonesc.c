/*
 * jsonesc.c - JSON string literals and the UTF-8 check (see jsonesc.h).
 *
 * Workload: short strings (names, states, reasons: tens of bytes) by the
 * hundred thousand in a big GET /v1/jobs, nearly all plain ASCII, and now
 * and then a log chunk of up to a few hundred KB. So the common case is a
 * string with nothing to escape, and the loop is built for it: a byte's
 * class comes from one table look-up, a run of plain bytes is passed over
 * with no call and copied with one memcpy, and only a byte that needs
 * work (an escape, or a byte of 0x80 or more to check as UTF-8) leaves the
 * inner loop.
 */
#include <stdint.h>
#include <string.h>

#include "jsonesc.h"

enum { PLAIN = 0, ESCAPE, HIGH };

/* The class of each byte: PLAIN is copied as it is, ESCAPE gets a
 * backslash form, HIGH is copied only inside a valid UTF-8 sequence. */
#define P PLAIN
#define E ESCAPE
#define H HIGH
static const unsigned char byte_class[256] = {
    E, E, E, E, E, E, E, E, E, E, E, E, E, E, E, E,  /* 0x0_ */
    E, E, E, E, E, E, E, E, E, E, E, E, E, E, E, E,  /* 0x1_ */
    P, P, E, P, P, P, P, P, P, P, P, P, P, P, P, P,  /* 0x2_ */
    P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P,  /* 0x3_ */
    P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P,  /* 0x4_ */
    P, P, P, P, P, P, P, P, P, P, P, P, E, P, P, P,  /* 0x5_ */
    P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P,  /* 0x6_ */
    P, P, P, P, P, P, P, P, P, P, P, P, P, P, P, P,  /* 0x7_ */
    H, H, H, H, H, H, H, H, H, H, H, H, H, H, H, H,  /* 0x8_ */
    H, H, H, H, H, H, H, H, H, H, H, H, H, H, H, H,  /* 0x9_ */
    H, H, H, H, H, H, H, H, H, H, H, H, H, H, H, H,  /* 0xa_ */
    H, H, H, H, H, H, H, H, H, H, H, H, H, H, H, H,  /* 0xb_ */
    H, H, H, H, H, H, H, H, H, H, H, H, H, H, H, H,  /* 0xc_ */
    H, H, H, H, H, H, H, H, H, H, H, H, H, H, H, H,  /* 0xd_ */
    H, H, H, H, H, H, H, H, H, H, H, H, H, H, H, H,  /* 0xe_ */
    H, H, H, H, H, H, H, H, H, H, H, H, H, H, H, H,  /* 0xf_ */
};
#undef P
#undef E
#undef H

size_t sl_utf8_seq(const unsigned char *s, size_t n, bool *cut) {
    unsigned c = s[0], lo = 0x80, hi = 0xBF;
    size_t k;
    if (cut) *cut = false;
    if (c >= 0xC2 && c <= 0xDF) {
        k = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        k = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        k = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else {
        return 0;
    }
    for (size_t j = 1; j < k; j++) {
        if (j == n) {
            if (cut) *cut = true;
            return 0;
        }
        if (j == 1 ? (s[1] < lo || s[1] > hi) : (s[j] < 0x80 || s[j] > 0xBF)) return 0;
    }
    return k;
}

/* Appends p[0..k) to dst at *len, as far as cap allows, and counts all k. */
static inline void emit(char *dst, size_t cap, size_t *len, const void *p, size_t k) {
    if (k > 0 && *len < cap) {
        size_t room = cap - *len;
        memcpy(dst + *len, p, k < room ? k : room);
    }
    *len += k;
}

/* Whether one of the 8 bytes of x is not PLAIN: below 0x20, '"', '\\' or
 * 0x80 and above, by the has-less-than and has-zero-byte tests of "Bit
 * Twiddling Hacks" (exact for whether any byte matches). */
static inline bool word_has_nonplain(uint64_t x) {
    const uint64_t ones = UINT64_C(0x0101010101010101), highs = UINT64_C(0x8080808080808080);
    uint64_t q = x ^ (ones * '"'), bs = x ^ (ones * '\\');
    uint64_t m = ((x - ones * 0x20) & ~x) | ((q - ones) & ~q) | ((bs - ones) & ~bs) | x;
    return (m & highs) != 0;
}

size_t sl_json_quote(char *dst, size_t cap, const char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    const unsigned char *u = (const unsigned char *)s;
    size_t len = 0, start = 0, i = 0;
    emit(dst, cap, &len, "\"", 1);
    while (i < n) {
        uint64_t x;
        while (i + 8 <= n) { /* the common case: runs of plain bytes, 8 at a time */
            memcpy(&x, u + i, 8);
            if (word_has_nonplain(x))
                break;
            i += 8;
        }
        while (i < n && byte_class[u[i]] == PLAIN)
            i++;
        if (i == n)
            break;
        unsigned c = u[i];
        if (byte_class[c] == HIGH) {
            size_t k = sl_utf8_seq(u + i, n - i, NULL);
            if (k > 0) {
                i += k;
                continue;
            }
        }
        emit(dst, cap, &len, s + start, i - start);
        char esc[6] = {'\\', 0, '0', '0', 0, 0};
        size_t en = 2;
        switch (c) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        default:
            if (c >= 0x80) {
                esc[0] = '?'; /* not UTF-8: one byte becomes one '?' */
                en = 1;
            } else {
                esc[1] = 'u';
                esc[4] = hex[c >> 4];
                esc[5] = hex[c & 15];
                en = 6;
            }
        }
        emit(dst, cap, &len, esc, en);
        start = ++i;
    }
    if (start < n) /* s may be NULL when n is 0 */
        emit(dst, cap, &len, s + start, n - start);
    emit(dst, cap, &len, "\"", 1);
    return len;
}

size_t sl_utf8_clean(unsigned char *b, size_t n, bool final) {
    size_t i = 0;
    while (i < n) {
        if (b[i] == 0) {
            b[i++] = '?';
            continue;
        }
        if (b[i] < 0x80) {
            i++;
            continue;
        }
        bool cut;
        size_t k = sl_utf8_seq(b + i, n - i, &cut);
        if (k > 0)
            i += k;
        else if (cut && !final)
            return i; /* incomplete at the end: left for the next read */
        else
            b[i++] = '?';
    }
    return n;
}
