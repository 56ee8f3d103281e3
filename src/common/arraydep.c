/*
 * arraydep.c - the Slurm texts of --array and --dependency (arraydep.h).
 *
 * Both are small recursive-descent readers over the text, with messages
 * that quote the part that is wrong. An array is read twice: a first pass
 * checks the syntax and sums the items' sizes (so that "0-3999999,..."
 * is refused before anything is allocated), a second marks each index in
 * a bitmap of max_size bits, whose walk yields the indexes sorted and
 * without duplicates. A dependency is one pass into a vector of terms.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arraydep.h"
#include "sluice/alloc.h"
#include "sluice/error.h"

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return SL_EINVAL;
}

/* A decimal number at *p of at most 18 digits (no overflow) into *out (advancing *p);
 * false when there is none. */
static bool number(const char **p, int64_t *out) {
    const char *s = *p;
    int64_t v = 0;
    int d = 0;
    while (*s >= '0' && *s <= '9' && d < 18) {
        v = v * 10 + (*s++ - '0');
        d++;
    }
    if (d == 0 || (*s >= '0' && *s <= '9'))
        return false;
    *p = s;
    *out = v;
    return true;
}

/* ---- arrays ---- */

typedef struct item {
    int64_t lo, hi, step;
} item_t;

/* One item "N", "N-M" or "N-M:S" at *p. */
static int array_item(const char **p, int32_t max_size, item_t *it, char *err, size_t errlen) {
    const char *start = *p;
    size_t len = strcspn(start, ",%");
    if (!number(p, &it->lo))
        return fail(err, errlen, "\"%.*s\" is not an index, a range N-M or a range with a step "
                    "N-M:S", (int)len, start);
    it->hi = it->lo;
    it->step = 1;
    if (**p == '-') {
        (*p)++;
        if (!number(p, &it->hi))
            return fail(err, errlen, "\"%.*s\": a range needs its last index after '-'", (int)len,
                        start);
        if (**p == ':') {
            (*p)++;
            if (!number(p, &it->step) || it->step < 1)
                return fail(err, errlen, "\"%.*s\": the step after ':' must be a whole number "
                            "of 1 or more", (int)len, start);
        }
    }
    if (**p != '\0' && **p != ',' && **p != '%')
        return fail(err, errlen, "\"%.*s\" is not an index, a range N-M or a range with a step "
                    "N-M:S", (int)len, start);
    if (it->hi < it->lo)
        return fail(err, errlen, "\"%.*s\": a range must not end below its start", (int)len, start);
    if (it->hi >= max_size)
        return fail(err, errlen, "index %lld is too large: indexes are 0 to %d", (long long)it->hi,
                    max_size - 1);
    return 0;
}

int sl_array_parse(const char *text, int32_t max_size, sl_array_spec_t *out, char *err,
                   size_t errlen) {
    if (out)
        *out = (sl_array_spec_t){0};
    if (text == NULL || text[0] == '\0')
        return fail(err, errlen, "must be indexes such as \"0-99\", \"1,3,5-9:2\" or \"0-99%%8\"");
    if (max_size < 1 || max_size > SL_ARRAY_SIZE_CEILING)
        max_size = SL_ARRAY_SIZE_CEILING;
    int64_t total = 0, limit = 0;
    const char *p = text;
    /* Pass 1: syntax, bounds and the size before duplicates merge. */
    for (;;) {
        item_t it;
        int rc = array_item(&p, max_size, &it, err, errlen);
        if (rc < 0)
            return rc;
        total += (it.hi - it.lo) / it.step + 1;
        if (total > max_size)
            return fail(err, errlen, "more than %d elements (the most an array may have here)",
                        max_size);
        if (*p == ',') {
            p++;
            continue;
        }
        break;
    }
    if (*p == '%') {
        p++;
        if (!number(&p, &limit) || *p != '\0' || limit < 1 || limit > SL_ARRAY_SIZE_CEILING)
            return fail(err, errlen, "the concurrency limit after '%%' must be a whole number "
                        "from 1 to %d", SL_ARRAY_SIZE_CEILING);
    }
    if (*p != '\0')
        return fail(err, errlen, "unexpected \"%s\" (items are separated by commas; a limit "
                    "%%N comes last)", p);
    if (out == NULL)
        return 0;
    /* Pass 2: the indexes into a bitmap, then in order. */
    int64_t hi_all = 0;
    size_t words = (size_t)max_size / 64 + 1;
    uint64_t *bits = sl_xcalloc(words, sizeof *bits);
    p = text;
    for (;;) {
        item_t it;
        array_item(&p, max_size, &it, err, errlen);
        for (int64_t i = it.lo; i <= it.hi; i += it.step)
            bits[i / 64] |= 1ull << (i % 64);
        if (it.hi > hi_all)
            hi_all = it.hi;
        if (*p != ',')
            break;
        p++;
    }
    out->idx = sl_xmalloc((size_t)total * sizeof *out->idx);
    int32_t n = 0;
    for (size_t w = 0; w <= (size_t)hi_all / 64; w++) {
        for (uint64_t b = bits[w]; b; b &= b - 1)
            out->idx[n++] = (int32_t)(w * 64 + (size_t)__builtin_ctzll(b));
    }
    sl_free(bits);
    out->n = n;
    out->limit = (int32_t)limit;
    return 0;
}

void sl_array_spec_fini(sl_array_spec_t *a) {
    sl_free(a->idx);
    *a = (sl_array_spec_t){0};
}

size_t sl_array_format(const int32_t *idx, size_t n, char *buf, size_t len) {
    size_t l = 0;
    if (len == 0)
        return 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j + 1 < n && idx[j + 1] == idx[j] + 1)
            j++;
        char item[32];
        int k = j == i ? snprintf(item, sizeof item, "%s%d", i ? "," : "", idx[i])
                       : snprintf(item, sizeof item, "%s%d-%d", i ? "," : "", idx[i], idx[j]);
        if (l + (size_t)k + 4 >= len) {
            if (l + 4 < len) {
                memcpy(buf + l, "...", 4);
                l += 3;
            }
            return l;
        }
        memcpy(buf + l, item, (size_t)k + 1);
        l += (size_t)k;
        i = j + 1;
    }
    return l;
}

/* ---- dependencies ---- */

static const char *const kind_names[SL_DEP_NKINDS] = {"after", "afterany", "afterok", "afternotok",
                                                      "singleton"};

const char *sl_dep_kind_name(sl_dep_kind_t k) {
    return (unsigned)k < SL_DEP_NKINDS ? kind_names[k] : "?";
}

static void push(sl_dep_spec_t *d, size_t *cap, sl_dep_term_t t) {
    if (d == NULL)
        return;
    if (d->n == *cap) {
        *cap = *cap ? 2 * *cap : 4;
        d->t = sl_xrealloc(d->t, *cap * sizeof *d->t);
    }
    d->t[d->n++] = t;
}

int sl_dep_parse(const char *text, sl_dep_spec_t *out, char *err, size_t errlen) {
    sl_dep_spec_t tmp = {0};
    sl_dep_spec_t *d = out ? out : &tmp;
    *d = (sl_dep_spec_t){0};
    size_t cap = 0, nterms = 0;
    char sep = 0;
    int rc = 0;
    const char *p = text ? text : "";
    if (*p == '\0') {
        rc = fail(err, errlen, "must be dependencies such as \"afterok:123\", "
                  "\"afterany:7:8,afterok:9\" or \"singleton\"");
        goto out;
    }
    for (;;) {
        size_t kl = strcspn(p, ":,?");
        int kind = -1;
        for (int k = 0; k < SL_DEP_NKINDS; k++)
            if (strlen(kind_names[k]) == kl && strncmp(p, kind_names[k], kl) == 0)
                kind = k;
        if (kind < 0) {
            static const char *const unsupported[] = {"aftercorr", "afterburstbuffer", "expand"};
            bool known = false;
            for (size_t u = 0; u < 3; u++)
                known |= strlen(unsupported[u]) == kl && strncmp(p, unsupported[u], kl) == 0;
            if (known)
                rc = fail(err, errlen, "\"%.*s\" is not supported (after, afterany, afterok, "
                          "afternotok and singleton are)", (int)kl, p);
            else
                rc = fail(err, errlen, "\"%.*s\" is not a dependency kind (after, afterany, "
                          "afterok, afternotok or singleton)", (int)kl, p);
            goto out;
        }
        p += kl;
        if (kind == SL_DEP_SINGLETON) {
            if (*p == ':') {
                rc = fail(err, errlen, "singleton takes no job ids");
                goto out;
            }
            push(out, &cap, (sl_dep_term_t){SL_DEP_SINGLETON, 0, -1});
            nterms++;
        } else {
            if (*p != ':') {
                rc = fail(err, errlen, "%s needs job ids (%s:123 or %s:123:124)", kind_names[kind],
                          kind_names[kind], kind_names[kind]);
                goto out;
            }
            while (*p == ':') {
                p++;
                const char *ref = p;
                int64_t job, index = -1;
                if (!number(&p, &job) || job < 1) {
                    rc = fail(err, errlen, "%s: \"%.*s\" is not a job id (123, or 123_4 for an "
                              "array's element)", kind_names[kind], (int)strcspn(ref, ":,?"), ref);
                    goto out;
                }
                if (*p == '_' && !(p++, number(&p, &index) && index <= INT32_MAX)) {
                    rc = fail(err, errlen, "%s: \"%.*s\": after '_' comes an array index",
                              kind_names[kind], (int)strcspn(ref, ":,?"), ref);
                    goto out;
                }
                if (*p == '+') {
                    rc = fail(err, errlen, "%s: \"%.*s\": delays (+minutes) are not supported",
                              kind_names[kind], (int)strcspn(ref, ":,?"), ref);
                    goto out;
                }
                if (*p != '\0' && *p != ':' && *p != ',' && *p != '?') {
                    rc = fail(err, errlen, "%s: \"%.*s\" is not a job id (123, or 123_4 for an "
                              "array's element)", kind_names[kind], (int)strcspn(ref, ":,?"), ref);
                    goto out;
                }
                if (++nterms > SL_DEP_MAX_TERMS) {
                    rc = fail(err, errlen, "more than %d jobs named", SL_DEP_MAX_TERMS);
                    goto out;
                }
                push(out, &cap, (sl_dep_term_t){(uint8_t)kind, (uint64_t)job, (int32_t)index});
            }
        }
        if (*p == '\0')
            break;
        if (sep && *p != sep) {
            rc = fail(err, errlen, "',' (all must hold) and '?' (any may hold) do not mix");
            goto out;
        }
        sep = *p++;
        if (*p == '\0') {
            rc = fail(err, errlen, "ends with '%c': a dependency must follow it", sep);
            goto out;
        }
    }
    d->any = sep == '?';
out:
    if (rc < 0 || out == NULL)
        sl_dep_spec_fini(d);
    return rc;
}

void sl_dep_spec_fini(sl_dep_spec_t *d) {
    sl_free(d->t);
    *d = (sl_dep_spec_t){0};
}
