/*
 * hostlist.c - Slurm's host lists expanded and compressed (hostlist.h).
 * Expansion is one pass over the words, each bracket's ranges expanded in
 * place; compression sorts the names and folds runs of numbers.
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

/* ---- compression (the reverse of expansion) ---- */

typedef struct host {
    const char *name;
    size_t plen;      /* the prefix before the trailing digits */
    int width;        /* digits at the end; 0: none */
    unsigned long long num;
} host_t;

static void host_parse(const char *name, host_t *h) {
    size_t n = strlen(name), p = n;
    while (p > 0 && name[p - 1] >= '0' && name[p - 1] <= '9')
        p--;
    h->name = name;
    h->plen = p;
    h->width = n - p > 18 ? 0 : (int)(n - p); /* too long for a number: no range */
    if (h->width == 0)
        h->plen = n;
    h->num = h->width ? strtoull(name + p, NULL, 10) : 0;
}

static int host_cmp(const void *a, const void *b) {
    const host_t *x = a, *y = b;
    size_t m = x->plen < y->plen ? x->plen : y->plen;
    int c = memcmp(x->name, y->name, m);
    if (c != 0)
        return c;
    if (x->plen != y->plen)
        return x->plen < y->plen ? -1 : 1;
    if (x->width != y->width)
        return x->width < y->width ? -1 : 1;
    return x->num < y->num ? -1 : x->num > y->num;
}

static bool same_group(const host_t *a, const host_t *b) {
    return a->width && a->width == b->width && a->plen == b->plen &&
           memcmp(a->name, b->name, a->plen) == 0;
}

#define PUT(...) (n += (size_t)snprintf(buf + (n < len ? n : len), n < len ? len - n : 0, __VA_ARGS__))

size_t sl_hostlist_format(const char *const *names, size_t count, char *buf, size_t len) {
    host_t *h = sl_xmalloc((count ? count : 1) * sizeof *h);
    size_t k = 0, n = 0;
    for (size_t i = 0; i < count; i++)
        host_parse(names[i], &h[i]);
    qsort(h, count, sizeof *h, host_cmp);
    for (size_t i = 0; i < count; i++) /* drop duplicates */
        if (k == 0 || host_cmp(&h[k - 1], &h[i]) != 0)
            h[k++] = h[i];
    if (len)
        buf[0] = '\0';
    for (size_t i = 0; i < k;) {
        size_t e = i + 1;
        while (e < k && same_group(&h[i], &h[e]))
            e++;
        PUT("%s", i ? "," : "");
        if (e - i == 1) {
            PUT("%s", h[i].name);
            i = e;
            continue;
        }
        PUT("%.*s[", (int)h[i].plen, h[i].name);
        for (size_t r = i; r < e;) {
            size_t s = r;
            while (s + 1 < e && h[s + 1].num == h[s].num + 1)
                s++;
            PUT("%s%0*llu", r > i ? "," : "", h[r].width, h[r].num);
            if (s > r)
                PUT("-%0*llu", h[s].width, h[s].num);
            r = s + 1;
        }
        PUT("]");
        i = e;
    }
    sl_free(h);
    return n;
}
