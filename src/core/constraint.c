/*
 * constraint.c - node label sets and job constraints (constraint.h): the
 * parsers, the interning tables the cluster owns, and the evaluation of a
 * constraint on a label set.
 *
 * Label sets. A node's labels and taints text is interned by its exact
 * text: nodes declared alike share one set, and its id joins the node's
 * class key (cluster_class.c), so the placement filter evaluates a
 * constraint once per class. Sets live as long as the cluster (nodes are
 * never removed; a cluster sees few distinct sets), so ids are dense and
 * never reused, and a constraint's memo indexed by set id stays valid.
 *
 * Constraints. The selector's pairs, the expression (terms of
 * requirements, in disjunctive normal form) and the tolerations are
 * parsed into arrays once; equal texts are interned to one object with a
 * reference count (the controller takes one per job). Evaluating on a
 * label set is O(requirements x labels) and memoised in one byte per set,
 * so the steady-state filter is a load and a compare.
 */
#include <stdio.h>
#include <string.h>

#include "constraint_internal.h"
#include "sluice/alloc.h"
#include "sluice/error.h"

static void seterr(char *err, size_t len, const char *fmt, const char *field, const char *what) {
    if (err && len) snprintf(err, len, fmt, field, what);
}

static bool name_char(char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '.' || ch == '_' || ch == '/' || ch == '-';
}

/* Reads a name (1..63 name characters) at *p; NULL if there is none. */
static char *read_name(const char **p) {
    const char *s = *p;
    size_t n = 0;
    while (name_char(s[n])) n++;
    if (n == 0 || n >= SL_NAME_MAX) return NULL;
    char *out = sl_xmalloc(n + 1);
    memcpy(out, s, n);
    out[n] = '\0';
    *p = s + n;
    return out;
}

static void skip_ws(const char **p) {
    while (**p == ' ' || **p == '\t') (*p)++;
}

static int effect_parse(const char *s, size_t n, uint8_t *out) {
    static const struct { const char *w; uint8_t e; } tab[] = {
        {"NoSchedule", SL__EFF_NOSCHED}, {"PreferNoSchedule", SL__EFF_PREFER},
        {"NoExecute", SL__EFF_NOEXEC}};
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (strlen(tab[i].w) == n && strncmp(tab[i].w, s, n) == 0) {
            *out = tab[i].e;
            return 0;
        }
    return SL_EINVAL;
}

static void kv_free(sl__kv_t *a, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) {
        sl_free(a[i].k);
        sl_free(a[i].v);
    }
    sl_free(a);
}

/*
 * Parses a comma list of key[=value][:Effect] into *out. mode 0: labels
 * (no effect; an item that does not parse is kept whole as a feature),
 * 1: taints (value optional, effect required), 2: tolerations (value and
 * effect optional, "*" tolerates all: *all). Returns 0 or SL_EINVAL.
 */
static int kv_list(const char *text, int mode, const char *field, sl__kv_t **out, uint32_t *nout,
                   bool *all, char *err, size_t errlen) {
    *out = NULL;
    *nout = 0;
    if (!text || !*text) return 0;
    size_t cap = 1;
    for (const char *q = text; *q; q++) cap += *q == ',';
    sl__kv_t *a = sl_xcalloc(cap, sizeof *a);
    uint32_t n = 0;
    const char *p = text;
    while (*p) {
        const char *end = strchr(p, ',');
        if (!end) end = p + strlen(p);
        char item[256];
        size_t len = (size_t)(end - p);
        if (len >= sizeof item) len = sizeof item - 1;
        memcpy(item, p, len);
        item[len] = '\0';
        p = *end ? end + 1 : end;
        const char *s = item;
        skip_ws(&s);
        if (!*s) continue;
        if (mode == 2 && strcmp(s, "*") == 0) {
            *all = true;
            continue;
        }
        sl__kv_t kv = {NULL, NULL, SL__EFF_ANY};
        kv.k = read_name(&s);
        bool ok = kv.k != NULL;
        if (ok && *s == '=') {
            s++;
            kv.v = read_name(&s);
            ok = kv.v != NULL;
        } else if (ok && mode != 2) {
            kv.v = sl_xstrdup("");
        }
        if (ok && *s == ':' && mode != 0) {
            s++;
            ok = effect_parse(s, strlen(s), &kv.effect) == 0;
            s += strlen(s);
        } else if (ok && mode == 1) {
            ok = false; /* a taint needs its effect */
        }
        skip_ws(&s);
        ok = ok && *s == '\0';
        if (!ok && mode == 0) { /* a label that is not k=v: a feature, kept whole */
            sl_free(kv.k);
            sl_free(kv.v);
            kv.k = sl_xstrdup(item);
            kv.v = sl_xstrdup("");
            ok = true;
        }
        if (!ok) {
            sl_free(kv.k);
            sl_free(kv.v);
            kv_free(a, n);
            seterr(err, errlen,
                   mode == 1 ? "%s: \"%s\" is not key[=value]:NoSchedule|PreferNoSchedule|NoExecute"
                             : "%s: \"%s\" is not key[=value][:NoSchedule|PreferNoSchedule|NoExecute] or *",
                   field, item);
            return SL_EINVAL;
        }
        a[n++] = kv;
    }
    *out = a;
    *nout = n;
    return 0;
}

int sl_node_labels_check(const char *labels, const char *taints, char *err, size_t errlen) {
    sl__kv_t *a;
    uint32_t n;
    bool all = false;
    int rc = kv_list(labels, 0, "labels", &a, &n, &all, err, errlen);
    if (rc < 0) return rc;
    kv_free(a, n);
    rc = kv_list(taints, 1, "taints", &a, &n, &all, err, errlen);
    if (rc < 0) return rc;
    kv_free(a, n);
    return 0;
}

/* ---- label sets ---- */

void sl__ltab_init(sl__ltab_t *t) {
    memset(t, 0, sizeof *t);
    sl_hash_init(&t->by_key);
    sl_hash_init(&t->cons);
}

static void cons_free(sl_constraint_t *c);

void sl__ltab_fini(sl__ltab_t *t) {
    for (uint32_t i = 0; i < t->nsets; i++) {
        struct sl_lset *s = t->sets[i];
        kv_free(s->l, s->nl);
        kv_free(s->t, s->nt);
        sl_free(s->key);
        sl_free(s);
    }
    sl_free(t->sets);
    size_t it = 0;
    for (const sl_hash_entry_t *e; (e = sl_hash_next(&t->cons, &it));) cons_free(e->val);
    sl_hash_fini(&t->by_key);
    sl_hash_fini(&t->cons);
    memset(t, 0, sizeof *t);
}

int sl__ltab_lset(sl__ltab_t *t, const char *labels, const char *taints,
                  const struct sl_lset **out, char *err, size_t errlen) {
    if (!labels) labels = "";
    if (!taints) taints = "";
    size_t ll = strlen(labels), tl = strlen(taints);
    char *key = sl_xmalloc(ll + tl + 2);
    memcpy(key, labels, ll);
    key[ll] = '\n';
    memcpy(key + ll + 1, taints, tl + 1);
    uint64_t h = sl_hash_str(key);
    size_t it = 0;
    for (struct sl_lset *s; (s = sl_hash_find_next(&t->by_key, h, &it));)
        if (strcmp(s->key, key) == 0) {
            sl_free(key);
            *out = s;
            return 0;
        }
    struct sl_lset *s = sl_xcalloc(1, sizeof *s);
    bool all = false;
    int rc = kv_list(labels, 0, "labels", &s->l, &s->nl, &all, err, errlen);
    if (rc == 0) rc = kv_list(taints, 1, "taints", &s->t, &s->nt, &all, err, errlen);
    if (rc < 0) {
        kv_free(s->l, s->nl);
        sl_free(s);
        sl_free(key);
        return rc;
    }
    for (uint32_t i = 0; i < s->nt; i++)
        if (s->t[i].effect != SL__EFF_PREFER) s->hard = true;
    s->key = key;
    if (t->nsets == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 16;
        t->sets = sl_xrealloc(t->sets, t->cap * sizeof *t->sets);
    }
    s->id = t->nsets;
    t->sets[t->nsets++] = s;
    sl_hash_add(&t->by_key, h, s);
    *out = s;
    return 0;
}

/* ---- constraints ---- */

static void req_free(sl__req_t *r) {
    sl_free(r->key);
    for (uint32_t v = 0; v < r->nvals; v++) sl_free(r->vals[v]);
    sl_free(r->vals);
}

static void term_free(sl__term_t *tm) {
    for (uint32_t i = 0; i < tm->n; i++) req_free(&tm->r[i]);
    sl_free(tm->r);
}

static void cons_free(sl_constraint_t *c) {
    for (uint32_t i = 0; i < c->nterms; i++) term_free(&c->terms[i]);
    sl_free(c->terms);
    kv_free(c->tol, c->ntol);
    sl_free(c->memo);
    sl_free(c->key);
    sl_free(c);
}

static void term_push(sl__term_t *tm, sl__req_t r) {
    tm->r = sl_xrealloc(tm->r, (tm->n + 1) * sizeof *tm->r);
    tm->r[tm->n++] = r;
}

static void req_push_val(sl__req_t *r, char *v) {
    r->vals = sl_xrealloc(r->vals, (r->nvals + 1) * sizeof *r->vals);
    r->vals[r->nvals++] = v;
}

/* Whether the word w (followed by optional blanks and '(') is at *p. */
static bool at_word(const char *p, const char *w) {
    size_t n = strlen(w);
    if (strncmp(p, w, n) != 0) return false;
    p += n;
    skip_ws(&p);
    return *p == '(';
}

/* One requirement at *p; 0 or SL_EINVAL. */
static int parse_req(const char **p, sl__req_t *r) {
    memset(r, 0, sizeof *r);
    skip_ws(p);
    if (**p == '!' && (*p)[1] != '=') {
        (*p)++;
        skip_ws(p);
        r->op = SL__OP_DNE;
        r->key = read_name(p);
        return r->key ? 0 : SL_EINVAL;
    }
    r->key = read_name(p);
    if (!r->key) return SL_EINVAL;
    skip_ws(p);
    if (**p == '=' || (**p == '!' && (*p)[1] == '=')) {
        r->op = **p == '=' ? SL__OP_IN : SL__OP_NOTIN;
        *p += **p == '=' ? 1 : 2;
        skip_ws(p);
        char *v = read_name(p);
        if (!v) return SL_EINVAL;
        req_push_val(r, v);
        return 0;
    }
    bool in = at_word(*p, "in"), notin = !in && at_word(*p, "notin");
    if (!in && !notin) {
        r->op = SL__OP_EXISTS;
        return 0;
    }
    r->op = in ? SL__OP_IN : SL__OP_NOTIN;
    *p = strchr(*p, '(') + 1;
    for (;;) {
        skip_ws(p);
        char *v = read_name(p);
        if (!v) return SL_EINVAL;
        req_push_val(r, v);
        skip_ws(p);
        if (**p == ',') {
            (*p)++;
            continue;
        }
        if (**p != ')') return SL_EINVAL;
        (*p)++;
        return 0;
    }
}

/* The selector's pairs as requirements appended to every term. */
static int parse_selector(const char *sel, sl__term_t *base, char *err, size_t errlen) {
    sl__kv_t *a;
    uint32_t n;
    bool all = false;
    if (!sel || !*sel) return 0;
    /* Items must be k=v: parse as tolerations (value optional) and check. */
    int rc = kv_list(sel, 2, "node_selector", &a, &n, &all, err, errlen);
    if (rc < 0) return rc;
    for (uint32_t i = 0; i < n; i++) {
        if (!a[i].v || a[i].effect != SL__EFF_ANY || all) {
            seterr(err, errlen, "%s: \"%s\" is not key=value", "node_selector", a[i].k);
            kv_free(a, n);
            return SL_EINVAL;
        }
        sl__req_t r = {.op = SL__OP_IN, .key = a[i].k};
        req_push_val(&r, a[i].v);
        a[i].k = a[i].v = NULL;
        term_push(base, r);
    }
    kv_free(a, n);
    if (all) {
        seterr(err, errlen, "%s: \"%s\" is not key=value", "node_selector", "*");
        return SL_EINVAL;
    }
    return 0;
}

static sl__req_t req_copy(const sl__req_t *r) {
    sl__req_t c = {.op = r->op, .key = sl_xstrdup(r->key)};
    for (uint32_t i = 0; i < r->nvals; i++) req_push_val(&c, sl_xstrdup(r->vals[i]));
    return c;
}

static int parse_expr(const char *expr, const sl__term_t *base, sl_constraint_t *c, char *err,
                      size_t errlen) {
    const char *p = expr ? expr : "";
    skip_ws(&p);
    if (!*p) {
        if (base->n == 0) return 0;
        c->terms = sl_xcalloc(1, sizeof *c->terms);
        c->nterms = 1;
        for (uint32_t i = 0; i < base->n; i++) term_push(&c->terms[0], req_copy(&base->r[i]));
        return 0;
    }
    for (;;) {
        c->terms = sl_xrealloc(c->terms, (c->nterms + 1) * sizeof *c->terms);
        sl__term_t *tm = &c->terms[c->nterms++];
        memset(tm, 0, sizeof *tm);
        for (uint32_t i = 0; i < base->n; i++) term_push(tm, req_copy(&base->r[i]));
        for (;;) {
            sl__req_t r;
            const char *at = p;
            if (parse_req(&p, &r) < 0) {
                req_free(&r);
                char where[80];
                snprintf(where, sizeof where, *at ? "\"%.60s\"" : "the end", at);
                seterr(err, errlen,
                       "%s: cannot read a requirement at %s (key, !key, key=value, "
                       "key!=value, key in (a,b), key notin (a,b), joined by & and |)",
                       "constraint", where);
                return SL_EINVAL;
            }
            term_push(tm, r);
            skip_ws(&p);
            if (*p == '&') {
                p++;
                continue;
            }
            break;
        }
        if (*p == '|') {
            p++;
            continue;
        }
        if (*p) {
            seterr(err, errlen, "%s: unexpected \"%s\" (requirements are joined by & and |)",
                   "constraint", p);
            return SL_EINVAL;
        }
        return 0;
    }
}

int sl__ltab_cons_intern(sl__ltab_t *t, const sl_constraint_spec_t *spec,
                         const sl_constraint_t **out, char *err, size_t errlen) {
    *out = NULL;
    const char *sel = spec->selector ? spec->selector : "";
    const char *ex = spec->expr ? spec->expr : "";
    const char *tol = spec->tolerations ? spec->tolerations : "";
    if (!*sel && !*ex && !*tol) return 0;
    size_t n = strlen(sel) + strlen(ex) + strlen(tol) + 3;
    char *key = sl_xmalloc(n);
    snprintf(key, n, "%s\x1f%s\x1f%s", sel, ex, tol);
    uint64_t h = sl_hash_str(key);
    size_t it = 0;
    for (sl_constraint_t *c; (c = sl_hash_find_next(&t->cons, h, &it));)
        if (strcmp(c->key, key) == 0) {
            sl_free(key);
            c->refs++;
            *out = c;
            return 0;
        }
    sl_constraint_t *c = sl_xcalloc(1, sizeof *c);
    c->key = key;
    c->hash = h;
    sl__term_t base = {NULL, 0};
    int rc = parse_selector(sel, &base, err, errlen);
    if (rc == 0) rc = parse_expr(ex, &base, c, err, errlen);
    term_free(&base);
    if (rc == 0) rc = kv_list(tol, 2, "tolerations", &c->tol, &c->ntol, &c->tol_all, err, errlen);
    if (rc < 0) {
        cons_free(c);
        return rc;
    }
    c->refs = 1;
    sl_hash_add(&t->cons, h, c);
    *out = c;
    return 0;
}

void sl__ltab_cons_release(sl__ltab_t *t, const sl_constraint_t *cc) {
    if (!cc) return;
    sl_constraint_t *c = (sl_constraint_t *)cc;
    if (--c->refs > 0) return;
    sl_hash_remove(&t->cons, c->hash, c);
    cons_free(c);
}

/* ---- evaluation ---- */

static const char *label_of(const struct sl_lset *ls, const char *k) {
    for (uint32_t i = 0; ls && i < ls->nl; i++)
        if (strcmp(ls->l[i].k, k) == 0) return ls->l[i].v;
    return NULL;
}

static bool req_holds(const sl__req_t *r, const struct sl_lset *ls) {
    const char *v = label_of(ls, r->key);
    switch (r->op) {
    case SL__OP_EXISTS: return v != NULL;
    case SL__OP_DNE: return v == NULL;
    default: break;
    }
    bool in = false;
    for (uint32_t i = 0; v && i < r->nvals && !in; i++) in = strcmp(r->vals[i], v) == 0;
    return r->op == SL__OP_IN ? in : !in;
}

static bool labels_hold(const sl_constraint_t *c, const struct sl_lset *ls) {
    if (c->nterms == 0) return true;
    for (uint32_t t = 0; t < c->nterms; t++) {
        bool all = true;
        for (uint32_t i = 0; i < c->terms[t].n && all; i++) all = req_holds(&c->terms[t].r[i], ls);
        if (all) return true;
    }
    return false;
}

static bool tolerates(const sl_constraint_t *c, const sl__kv_t *taint) {
    if (c->tol_all) return true;
    for (uint32_t i = 0; i < c->ntol; i++) {
        const sl__kv_t *o = &c->tol[i];
        if (strcmp(o->k, taint->k) != 0) continue;
        if (o->v && strcmp(o->v, taint->v) != 0) continue;
        if (o->effect != SL__EFF_ANY && o->effect != taint->effect) continue;
        return true;
    }
    return false;
}

/* The first hard taint of ls that c does not tolerate, or NULL. */
static const sl__kv_t *untolerated(const sl_constraint_t *c, const struct sl_lset *ls) {
    for (uint32_t i = 0; ls && i < ls->nt; i++)
        if (ls->t[i].effect != SL__EFF_PREFER && !tolerates(c, &ls->t[i])) return &ls->t[i];
    return NULL;
}

bool sl__cons_eval(const sl_constraint_t *cc, const struct sl_lset *ls) {
    sl_constraint_t *c = (sl_constraint_t *)cc;
    bool ok = labels_hold(c, ls) && !untolerated(c, ls);
    if (ls) {
        if (ls->id >= c->nmemo) {
            uint32_t n = c->nmemo ? c->nmemo : 16;
            while (n <= ls->id) n *= 2;
            c->memo = sl_xrealloc(c->memo, n);
            memset(c->memo + c->nmemo, 0, n - c->nmemo);
            c->nmemo = n;
        }
        c->memo[ls->id] = ok ? 2 : 1;
    }
    return ok;
}

bool sl_constraint_admits(const sl_constraint_t *c, const sl_node_t *node) {
    return sl__cons_admits(c, node->lset);
}

/* ---- reasons (used by constraint_explain.c through these) ---- */

bool sl__cons_labels_hold(const sl_constraint_t *c, const struct sl_lset *ls) {
    return labels_hold(c, ls);
}

const sl__kv_t *sl__cons_untolerated(const sl_constraint_t *c, const struct sl_lset *ls) {
    return untolerated(c, ls);
}
