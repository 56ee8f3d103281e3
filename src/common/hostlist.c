/*
 * hostlist.c - Slurm's host lists expanded (hostlist.h). One pass over the
 * words; each bracket's ranges are expanded in place.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostlist.h"
#include "sluice/alloc.h"
#include "sluice/error.h"

typedef struct out {
    char **v;
    size_t n, cap;
} out_t;

static int add(out_t *o, const char *pre, size_t plen, const char *mid, const char *suf,
               char *err, size_t errlen) {
    if (o->n >= SL_HOSTLIST_MAX) {
        snprintf(err, errlen, "more than %d names", SL_HOSTLIST_MAX);
        return SL_EINVAL;
    }
    if (o->n == o->cap) {
        o->cap = o->cap ? 2 * o->cap : 16;
        o->v = sl_xrealloc(o->v, o->cap * sizeof *o->v);
    }
    size_t len = plen + strlen(mid) + strlen(suf) + 1;
    char *s = sl_xmalloc(len);
    snprintf(s, len, "%.*s%s%s", (int)plen, pre, mid, suf);
    o->v[o->n++] = s;
    return 0;
}

/* One word: a name, or PREFIX[RANGES]SUFFIX. */
static int word(out_t *o, const char *w, size_t wl, char *err, size_t errlen) {
    const char *br = memchr(w, '[', wl);
    if (wl == 0) {
        snprintf(err, errlen, "an empty name");
        return SL_EINVAL;
    }
    if (br == NULL)
        return add(o, w, wl, "", "", err, errlen);
    const char *close = memchr(br, ']', wl - (size_t)(br - w));
    if (close == NULL) {
        snprintf(err, errlen, "%.*s: a [ without its ]", (int)wl, w);
        return SL_EINVAL;
    }
    char suf[256];
    snprintf(suf, sizeof suf, "%.*s", (int)(wl - (size_t)(close + 1 - w)), close + 1);
    for (const char *p = br + 1; p < close;) {
        const char *e = memchr(p, ',', (size_t)(close - p));
        if (e == NULL)
            e = close;
        const char *dash = memchr(p, '-', (size_t)(e - p));
        char *end;
        unsigned long long a = strtoull(p, &end, 10), b = a;
        int width = (int)((dash ? dash : e) - p);
        bool ok = end == (dash ? dash : e) && end > p;
        if (ok && dash) {
            b = strtoull(dash + 1, &end, 10);
            ok = end == e && end > dash + 1;
        }
        if (!ok) {
            snprintf(err, errlen, "%.*s: [%.*s] is not a number or a range A-B", (int)wl, w,
                     (int)(close - br - 1), br + 1);
            return SL_EINVAL;
        }
        if (b < a) {
            snprintf(err, errlen, "%.*s: a range must not go down", (int)wl, w);
            return SL_EINVAL;
        }
        for (unsigned long long v = a; v <= b; v++) {
            char mid[32];
            snprintf(mid, sizeof mid, "%0*llu", width > 20 ? 20 : width, v);
            int rc = add(o, w, (size_t)(br - w), mid, suf, err, errlen);
            if (rc != 0)
                return rc;
        }
        p = e + (e < close);
    }
    return 0;
}

int sl_hostlist_expand(const char *list, char ***names, size_t *n, char *err, size_t errlen) {
    out_t o = {0};
    int rc = 0;
    *names = NULL;
    *n = 0;
    for (const char *p = list; rc == 0;) {
        size_t l = 0;
        int depth = 0;
        while (p[l] && (depth > 0 || p[l] != ',')) {
            depth += p[l] == '[' ? 1 : p[l] == ']' ? -1 : 0;
            l++;
        }
        rc = word(&o, p, l, err, errlen);
        if (p[l] == '\0')
            break;
        p += l + 1;
    }
    if (rc != 0) {
        sl_hostlist_free(o.v, o.n);
        return rc;
    }
    *names = o.v;
    *n = o.n;
    return 0;
}

void sl_hostlist_free(char **names, size_t n) {
    for (size_t i = 0; names && i < n; i++)
        sl_free(names[i]);
    sl_free(names);
}
