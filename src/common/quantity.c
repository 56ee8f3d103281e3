/*
 * quantity.c - exact parsing and formatting of "16", "500m", "1.5Gi".
 *
 * Grammar: DIGITS [ "." DIGITS ] [ UNIT ], at least one digit, no sign, no
 * space, no exponent (the letter E is the exa suffix). Units:
 *   CPU, GPU: none (whole units, x1000 milli) or "m" (milli);
 *   memory:   none (bytes), Ki Mi Gi Ti Pi Ei (powers of 1024),
 *             k M G T P E (powers of 1000).
 *
 * Arithmetic is exact, on integers only. The digits give a mantissa M and a
 * count f of fraction digits (trailing zeros of the fraction dropped), so the
 * value is M * unit / 10^f. With q = M / 10^f and r = M % 10^f the value is
 * q*unit + r*unit/10^f; it is exact iff 10^f divides r*unit, which 128-bit
 * arithmetic decides without overflow (q < 10^19, r < 10^18, unit < 2^61).
 * A value that is not a whole number of the base unit (milli or byte) is
 * rejected as too fine rather than rounded.
 *
 * Limit: at most 18 significant fraction digits. Every quantity with more is
 * finer than the base unit except contrived binary-suffix cases (e.g. 19
 * digits spelling 2^-19 Ei), which are rejected with their own message.
 *
 * Formatting picks the largest unit that represents the value exactly, so
 * that formatting then parsing gives back the same integer (tested).
 */
#include <stdbool.h>
#include <stdio.h> /* snprintf only: formats text into caller buffers, no I/O */
#include <string.h>

#include "sluice/error.h"
#include "quantity.h"

#define MAX_INT_DIGITS 19  /* 10^19 > INT64_MAX: any more is an overflow */
#define MAX_FRAC_DIGITS 18

typedef struct unit {
    const char *suffix;
    int64_t mult;
} unit_t;

static const unit_t cpu_units[] = {{"", 1000}, {"m", 1}};

static const unit_t mem_units[] = {
    {"", 1},
    {"Ki", INT64_C(1) << 10}, {"Mi", INT64_C(1) << 20}, {"Gi", INT64_C(1) << 30},
    {"Ti", INT64_C(1) << 40}, {"Pi", INT64_C(1) << 50}, {"Ei", INT64_C(1) << 60},
    {"k", INT64_C(1000)}, {"M", INT64_C(1000000)}, {"G", INT64_C(1000000000)},
    {"T", INT64_C(1000000000000)}, {"P", INT64_C(1000000000000000)},
    {"E", INT64_C(1000000000000000000)},
};

static int fail(int rc, char *err, size_t errlen, const char *text, const char *why,
                const char *unit) {
    if (err && errlen > 0) {
        if (unit)
            snprintf(err, errlen, "\"%s\": %s \"%s\"", text, why, unit);
        else
            snprintf(err, errlen, "\"%s\": %s", text, why);
    }
    return rc;
}

static bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

int sl_qty_parse(const char *text, sl_qty_kind_t kind, int64_t *out, char *err, size_t errlen) {
    const unit_t *units;
    size_t nunits;
    const char *fine;
    if (kind == SL_QTY_MEM) {
        units = mem_units;
        nunits = sizeof mem_units / sizeof mem_units[0];
        fine = "finer than one byte";
    } else if (kind == SL_QTY_CPU || kind == SL_QTY_GPU) {
        units = cpu_units;
        nunits = sizeof cpu_units / sizeof cpu_units[0];
        fine = "finer than 1m (one thousandth)";
    } else {
        return fail(SL_EINVAL, err, errlen, text ? text : "", "unknown quantity kind", NULL);
    }
    if (!text || !*text) return fail(SL_EINVAL, err, errlen, "", "empty quantity", NULL);

    const char *p = text;
    if (*p == '-') return fail(SL_EINVAL, err, errlen, text, "negative quantity", NULL);

    /* Mantissa: integer digits (leading zeros skipped), then fraction digits. */
    unsigned __int128 m = 0;
    int int_digits = 0, frac_digits = 0, any = 0;
    while (*p == '0') p++, any = 1;
    for (; is_digit(*p); p++) {
        any = 1;
        if (++int_digits > MAX_INT_DIGITS)
            return fail(SL_EOVERFLOW, err, errlen, text, "overflow: larger than 64-bit", NULL);
        m = m * 10 + (unsigned)(*p - '0');
    }
    if (*p == '.') {
        p++;
        const char *fs = p;
        while (is_digit(*p)) p++;
        const char *fe = p;
        if (fe == fs) return fail(SL_EINVAL, err, errlen, text, "not a number", NULL);
        any = 1;
        while (fe > fs && fe[-1] == '0') fe--; /* trailing zeros add nothing */
        if (fe - fs > MAX_FRAC_DIGITS)
            return fail(SL_EINVAL, err, errlen, text,
                        "too fine: more than 18 significant fraction digits", NULL);
        for (const char *q = fs; q < fe; q++) {
            m = m * 10 + (unsigned)(*q - '0');
            frac_digits++;
        }
    }
    if (!any) return fail(SL_EINVAL, err, errlen, text, "not a number", NULL);
    if (*p == '.' || is_digit(*p) || *p == '-' || *p == '+')
        return fail(SL_EINVAL, err, errlen, text, "not a number", NULL);

    const unit_t *u = NULL;
    for (size_t i = 0; i < nunits; i++)
        if (strcmp(p, units[i].suffix) == 0) u = &units[i];
    if (!u) return fail(SL_EINVAL, err, errlen, text, "unknown unit", p);

    unsigned __int128 pow10 = 1;
    for (int i = 0; i < frac_digits; i++) pow10 *= 10;
    unsigned __int128 q = m / pow10, r = m % pow10;
    unsigned __int128 mult = (unsigned __int128)u->mult;
    unsigned __int128 rm = r * mult;
    if (rm % pow10 != 0) return fail(SL_EINVAL, err, errlen, text, fine, NULL);
    unsigned __int128 v = q * mult + rm / pow10;
    if (v > (unsigned __int128)INT64_MAX)
        return fail(SL_EOVERFLOW, err, errlen, text, "overflow: larger than 64-bit", NULL);
    *out = (int64_t)v;
    return 0;
}

/* Writes "<int>.<frac>" for milli-units, dropping trailing zeros. */
static int format_milli(const char *sign, uint64_t a, char *buf, size_t len) {
    uint64_t whole = a / 1000, frac = a % 1000;
    if (frac == 0) return snprintf(buf, len, "%s%llu", sign, (unsigned long long)whole);
    int digits = 3;
    while (frac % 10 == 0) frac /= 10, digits--;
    return snprintf(buf, len, "%s%llu.%0*llu", sign, (unsigned long long)whole, digits,
                    (unsigned long long)frac);
}

int sl_qty_format(int64_t v, sl_qty_kind_t kind, char *buf, size_t len) {
    const char *sign = v < 0 ? "-" : "";
    uint64_t a = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    if (kind == SL_QTY_MEM) {
        static const char *const bin[] = {"Ei", "Pi", "Ti", "Gi", "Mi", "Ki"};
        if (a != 0) {
            for (int i = 0; i < 6; i++) {
                int shift = 60 - 10 * i;
                uint64_t unit = UINT64_C(1) << shift;
                if (a % unit == 0)
                    return snprintf(buf, len, "%s%llu%s", sign, (unsigned long long)(a >> shift), bin[i]);
            }
        }
        return snprintf(buf, len, "%s%llu", sign, (unsigned long long)a);
    }
    if (kind == SL_QTY_CPU && a < 1000 && a != 0)
        return snprintf(buf, len, "%s%llum", sign, (unsigned long long)a);
    return format_milli(sign, a, buf, len);
}

int sl_qty_format_mem_round(int64_t v, char *buf, size_t len) {
    static const char *const bin[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
    const char *sign = v < 0 ? "-" : "";
    uint64_t a = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    int u = 0;
    while (u < 6 && a >= UINT64_C(1) << (10 * (u + 1)))
        u++;
    if (u == 0)
        return snprintf(buf, len, "%s%llu", sign, (unsigned long long)a);
    /* Hundredths of the unit, rounded half up, then to the digits shown:
     * two decimals under 10, one under 100, none from 100. */
    double x = (double)a / (double)(UINT64_C(1) << (10 * u));
    int decimals = x < 9.995 ? 2 : x < 99.95 ? 1 : 0;
    char num[32];
    snprintf(num, sizeof num, "%.*f", decimals, x);
    if (strcmp(num, "1024") == 0 && u < 6) /* 1023.6Mi reads as 1Gi, not 1024Mi */
        return snprintf(buf, len, "%s1%s", sign, bin[u + 1]);
    char *dot = strchr(num, '.');
    if (dot) {
        char *e = num + strlen(num);
        while (e > dot + 1 && e[-1] == '0')
            *--e = '\0';
        if (e == dot + 1)
            *dot = '\0';
    }
    return snprintf(buf, len, "%s%s%s", sign, num, bin[u]);
}
