/*
 * units.c - the core's formatter of user units (units.h). Decimals are
 * written from integers (no floating point), trailing zeros trimmed, so the
 * text is exact and the same on every platform.
 */
#include "units.h"

#include <stdio.h> /* snprintf only: formats text, no I/O */

/* v / scale with up to `digits` decimals (scale = 10^digits), trailing
 * zeros trimmed; v is rounded to the nearest unit of the last digit by the
 * caller. */
static char *fmt_fixed(char *buf, size_t len, int64_t v, int64_t scale, int digits) {
    const char *sign = "";
    uint64_t a = (uint64_t)v;
    if (v < 0) {
        sign = "-";
        a = 0 - a;
    }
    uint64_t whole = a / (uint64_t)scale, frac = a % (uint64_t)scale;
    if (frac == 0) {
        snprintf(buf, len, "%s%llu", sign, (unsigned long long)whole);
        return buf;
    }
    while (frac % 10 == 0) {
        frac /= 10;
        digits--;
    }
    snprintf(buf, len, "%s%llu.%0*llu", sign, (unsigned long long)whole, digits,
             (unsigned long long)frac);
    return buf;
}

char *sl__fmt_milli(char *buf, size_t len, int64_t milli) {
    return fmt_fixed(buf, len, milli, 1000, 3);
}

static char *fmt_count(char *buf, size_t len, int64_t milli, const char *one, const char *many) {
    char n[SL__UNIT_BUF];
    snprintf(buf, len, "%s %s", sl__fmt_milli(n, sizeof n, milli), milli == 1000 ? one : many);
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
    uint64_t a = bytes < 0 ? 0 - (uint64_t)bytes : (uint64_t)bytes;
    const char *sign = bytes < 0 ? "-" : "";
    int u = 0;
    uint64_t x = a;
    while (u < 6 && x != 0 && x % 1024 == 0) {
        x /= 1024;
        u++;
    }
    if (x < 1024 || u == 6) { /* a whole number of the largest unit it reaches */
        snprintf(buf, len, "%s%llu%s", sign, (unsigned long long)x, unit[u]);
        return buf;
    }
    /* Not a whole number of any unit of which it is at least one: the
     * largest such unit, rounded to hundredths. */
    u = 0;
    uint64_t div = 1;
    while (u < 6 && a / div >= 1024) {
        div *= 1024;
        u++;
    }
    uint64_t hundredths =
        (a / div) * 100 + (uint64_t)(((unsigned __int128)(a % div) * 100 + div / 2) / div);
    char n[SL__UNIT_BUF];
    fmt_fixed(n, sizeof n, (int64_t)hundredths, 100, 2);
    snprintf(buf, len, "%s%s%s", sign, n, unit[u]);
    return buf;
}

char *sl__fmt_secs(char *buf, size_t len, int64_t us) {
    char n[SL__UNIT_BUF];
    snprintf(buf, len, "%ss", fmt_fixed(n, sizeof n, us, 1000000, 6));
    return buf;
}
