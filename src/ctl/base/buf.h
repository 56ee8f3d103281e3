/*
 * buf.h - a growable byte buffer with a fast JSON writer, used for every
 * reply and protocol message sluiced writes.
 *
 * The API lists 10,000 jobs in a few milliseconds by appending cached job
 * heads with memcpy and formatting numbers with hand-written integer
 * conversion instead of printf. Appending never fails (sl_xrealloc aborts on
 * out-of-memory). The caller owns the buffer; ctl_buf_fini frees it.
 */
#ifndef SLUICE_CTL_BUF_H
#define SLUICE_CTL_BUF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct ctl_buf {
    char *p;
    size_t len;
    size_t cap;
} ctl_buf_t;

void ctl_buf_init(ctl_buf_t *b);
void ctl_buf_fini(ctl_buf_t *b);
/* Grows the buffer to hold extra more bytes (the slow half of reserve). */
void ctl_buf_grow(ctl_buf_t *b, size_t extra);
/* Hands the bytes to the caller (free with sl_free) and empties b. */
char *ctl_buf_steal(ctl_buf_t *b, size_t *len);

/* Room for extra more bytes. The appends below are inline so that a JSON
 * key of a fixed text costs a compare and a few stores (the compiler
 * folds the strlen of a literal): listing 10,000 jobs makes half a
 * million of them. */
static inline void ctl_buf_reserve(ctl_buf_t *b, size_t extra) {
    if (b->cap - b->len < extra)
        ctl_buf_grow(b, extra);
}

static inline void ctl_buf_add(ctl_buf_t *b, const void *p, size_t n) {
    ctl_buf_reserve(b, n);
    if (n > 0)
        memcpy(b->p + b->len, p, n);
    b->len += n;
}

static inline void ctl_buf_puts(ctl_buf_t *b, const char *s) {
    ctl_buf_add(b, s, strlen(s));
}

static inline void ctl_buf_putc(ctl_buf_t *b, char c) {
    ctl_buf_reserve(b, 1);
    b->p[b->len++] = c;
}

void ctl_buf_printf(ctl_buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ctl_buf_i64(ctl_buf_t *b, int64_t v);
void ctl_buf_u64(ctl_buf_t *b, uint64_t v);
/* A JSON string literal of s (to its NUL), or of s[0..n) (which may hold
 * NULs), escaped by the one escaper (jsonesc.h: invalid UTF-8 bytes become
 * '?'); jstr writes null for NULL. O(n). */
void ctl_buf_jstr(ctl_buf_t *b, const char *s);
void ctl_buf_jstrn(ctl_buf_t *b, const char *s, size_t n);
/* Microseconds since the epoch as seconds with 6 decimals; < 0 writes null. */
void ctl_buf_time(ctl_buf_t *b, int64_t us);
/* A double with up to 6 significant decimals (for shares). */
void ctl_buf_double(ctl_buf_t *b, double v);
/* Milli-units as a JSON number: 4000 -> 4, 250 -> 0.25. */
void ctl_buf_milli(ctl_buf_t *b, int64_t milli);

#endif
