/*
 * proto_utf8.c - UTF-8 validity for the wire (proto_utf8.h): RFC 3629's
 * table of well-formed sequences (Table 3-7 of the Unicode standard), one
 * leading byte deciding the length and the range of the second byte.
 */
#include "proto_utf8.h"

size_t sl_proto_utf8_seq(const unsigned char *s, size_t n, bool *cut) {
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

size_t sl_proto_utf8_clean(unsigned char *b, size_t n, bool final) {
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
        size_t k = sl_proto_utf8_seq(b + i, n - i, &cut);
        if (k > 0)
            i += k;
        else if (cut && !final)
            return i; /* incomplete at the end: left for the next read */
        else
            b[i++] = '?';
    }
    return n;
}
