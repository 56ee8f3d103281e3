/* buf.c - growable buffer and JSON writer (see buf.h). */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/buf.h"
#include "jsonesc.h"
#include "sluice/alloc.h"

void ctl_buf_init(ctl_buf_t *b) {
    b->p = NULL;
    b->len = 0;
    b->cap = 0;
}

void ctl_buf_fini(ctl_buf_t *b) {
    sl_free(b->p);
    ctl_buf_init(b);
}

void ctl_buf_grow(ctl_buf_t *b, size_t extra) {
    if (b->len + extra <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra)
        cap *= 2;
    b->p = sl_xrealloc(b->p, cap);
    b->cap = cap;
}

char *ctl_buf_steal(ctl_buf_t *b, size_t *len) {
    char *p = b->p;
    if (len)
        *len = b->len;
    ctl_buf_init(b);
    return p;
}

void ctl_buf_printf(ctl_buf_t *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n <= 0)
        return;
    ctl_buf_reserve(b, (size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void ctl_buf_u64(ctl_buf_t *b, uint64_t v) {
    char tmp[24];
    int i = 24;
    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    ctl_buf_add(b, tmp + i, (size_t)(24 - i));
}

void ctl_buf_i64(ctl_buf_t *b, int64_t v) {
    if (v < 0) {
        ctl_buf_putc(b, '-');
        ctl_buf_u64(b, (uint64_t)0 - (uint64_t)v);
    } else {
        ctl_buf_u64(b, (uint64_t)v);
    }
}

void ctl_buf_jstrn(ctl_buf_t *b, const char *s, size_t n) {
    /* One pass into the room there is, which holds a string with nothing
     * to escape once n + 2 bytes are reserved; a second, into exactly what
     * the first said it needed, only when escapes outgrew that room. */
    ctl_buf_reserve(b, n + 2);
    size_t room = b->cap - b->len;
    size_t k = sl_json_quote(b->p + b->len, room, s, n);
    if (k > room) {
        ctl_buf_reserve(b, k);
        sl_json_quote(b->p + b->len, k, s, n);
    }
    b->len += k;
}

void ctl_buf_jstr(ctl_buf_t *b, const char *s) {
    if (s == NULL)
        ctl_buf_add(b, "null", 4);
    else
        ctl_buf_jstrn(b, s, strlen(s));
}

static void frac(ctl_buf_t *b, uint64_t f, int digits) {
    char tmp[8];
    for (int i = digits - 1; i >= 0; i--) {
        tmp[i] = (char)('0' + f % 10);
        f /= 10;
    }
    ctl_buf_putc(b, '.');
    ctl_buf_add(b, tmp, (size_t)digits);
}

void ctl_buf_time(ctl_buf_t *b, int64_t us) {
    if (us < 0) {
        ctl_buf_add(b, "null", 4);
        return;
    }
    ctl_buf_u64(b, (uint64_t)us / 1000000u);
    frac(b, (uint64_t)us % 1000000u, 6);
}

void ctl_buf_milli(ctl_buf_t *b, int64_t milli) {
    if (milli < 0) {
        ctl_buf_putc(b, '-');
        milli = -milli;
    }
    ctl_buf_u64(b, (uint64_t)milli / 1000u);
    uint64_t f = (uint64_t)milli % 1000u;
    if (f == 0)
        return;
    int digits = 3;
    while (f % 10 == 0) {
        f /= 10;
        digits--;
    }
    frac(b, f, digits);
}

void ctl_buf_double(ctl_buf_t *b, double v) {
    if (v != v) {
        ctl_buf_add(b, "0", 1);
        return;
    }
    ctl_buf_printf(b, "%.6g", v);
}
