/*
 * units.c - the core's formatter of user units (units.h). Decimals are
 * written from integers (no floating point), trailing zeros trimmed, so the
 * text is exact and the same on every platform. Digits are written by hand
 * rather than through snprintf: placement reasons are written for every
 * refused job, and this keeps them cheap.
 */
#include "units.h"

#include <stdbool.h>

/* An output cursor that truncates at the end of the buffer (len > 0). */
typedef struct out {
    char *p, *end; /* end is the last byte, kept for the NUL */
} out_t;

static void put_str(out_t *o, const char *s) {
    while (*s && o->p < o->end) *o->p++ = *s++;
    *o->p = '\0';
}

static void put_u64(out_t *o, uint64_t v, int min_digits) {
    char d[24];
    int n = 0;
    do {
        d[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v || n < min_digits);
    while (n > 0 && o->p < o->end) *o->p++ = d[--n];
    *o->p = '\0';
}

/* v / 10^digits with up to `digits` decimals, trailing zeros trimmed. */
static void put_fixed(out_t *o, int64_t v, int digits) {
    uint64_t a = (uint64_t)v, scale = 1;
    for (int i = 0; i < digits; i++) scale *= 10;
    if (v < 0) {
        put_str(o, "-");
        a = 0 - a;
    }
    uint64_t frac = a % scale;
    put_u64(o, a / scale, 1);
    if (frac == 0) return;
    while (frac % 10 == 0) {
        frac /= 10;
        digits--;
    }
    put_str(o, ".");
    put_u64(o, frac, digits);
}

static out_t out_of(char *buf, size_t len) {
    buf[0] = '\0';
    return (out_t){buf, buf + len - 1};
}

char *sl__fmt_milli(char *buf, size_t len, int64_t milli) {
    out_t o = out_of(buf, len);
    put_fixed(&o, milli, 3);
    return buf;
}

static char *fmt_count(char *buf, size_t len, int64_t milli, const char *one, const char *many) {
    out_t o = out_of(buf, len);
    put_fixed(&o, milli, 3);
    put_str(&o, " ");
    put_str(&o, milli == 1000 ? one : many);
    return buf;
}

char *sl__fmt_gpus(char *buf, size_t len, int64_t gpu_milli) {
    return fmt_count(buf, len, gpu_milli, "GPU", "GPUs");
}

char *sl__fmt_cpus(char *buf, size_t len, int64_t cpu_milli) {
    return fmt_count(buf, len, cpu_milli, "CPU", "CPUs");
}

char *sl__fmt_bytes(char *buf, size_t len, int64_t bytes) {
    static const char *const unit[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
    out_t o = out_of(buf, len);
    uint64_t a = (uint64_t)bytes;
    if (bytes < 0) {
        put_str(&o, "-");
        a = 0 - a;
    }
    int u = 0;
    uint64_t x = a;
    while (u < 6 && x != 0 && x % 1024 == 0) {
        x /= 1024;
        u++;
    }
    if (x < 1024 || u == 6) { /* a whole number of the largest unit it reaches */
        put_u64(&o, x, 1);
        put_str(&o, unit[u]);
        return buf;
    }
    /* Not a whole number of the largest unit it reaches: that unit, rounded
     * to hundredths. */
    u = 0;
    uint64_t div = 1;
    while (u < 6 && a / div >= 1024) {
        div *= 1024;
        u++;
    }
    uint64_t hundredths =
        (a / div) * 100 + (uint64_t)(((unsigned __int128)(a % div) * 100 + div / 2) / div);
    put_fixed(&o, (int64_t)hundredths, 2);
    put_str(&o, unit[u]);
    return buf;
}

char *sl__fmt_secs(char *buf, size_t len, int64_t us) {
    out_t o = out_of(buf, len);
    put_fixed(&o, us, 6);
    put_str(&o, "s");
    return buf;
}
