/*
 * sched_queue.c - the scheduler's data structures (sched_internal.h says
 * which file owns what): the intrusive treaps, the tenants and their
 * pending queues, the shape groups, the running list, and the reasons that
 * pending jobs share.
 *
 * Data structures.
 * Data structures.
 *  - Jobs: one heap block each (struct sl_job, sched_internal.h), found by
 *    id through the core's hash table (sluice/hash.h). O(1) expected.
 *  - Pending queues: one per tenant, an intrusive treap ordered by
 *    (qkey desc, submit asc, id asc), qkey being the priority (or, under
 *    "las", minus the attained-service queue) and heap-ordered by a hash of the
 *    id (deterministic, no RNG consumed). Insert/remove O(log n), successor
 *    O(1) amortised, so enqueueing allocates nothing beyond the job.
 *  - Shape groups: each pending job is also in the treap of its group, the
 *    tenant's pending jobs with the same task shape, ntasks and min_tasks
 *    (found through a chained hash), in the same order. Each node keeps
 *    the least runtime estimate of its subtree. The tenant indexes its
 *    non-empty groups in a treap ordered by their first job.
 *  - Running jobs: an intrusive doubly linked list in start order, and a
 *    treap of those with a finite expected end, by end then start order,
 *    which EASY walks from the earliest end (no per-cycle sort).
 *
 * Pure: no I/O, no clock; time comes in as now_us.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h> /* snprintf only: formats reasons and errors, no I/O */
#include <stdlib.h>
#include <string.h>

#include "cluster_index.h"
#include "sched_internal.h"
#include "sluice/alloc.h"
#include "sluice/error.h"

void sl__setf(char *buf, size_t len, const char *fmt, ...) {
    if (!buf || len == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
}

/* ---- intrusive treaps ---- */

/* ---- intrusive treaps ---- */

typedef bool (*tn_less_fn)(const sl__tnode_t *a, const sl__tnode_t *b);
typedef void (*tn_fix_fn)(sl__tnode_t *x); /* recomputes x's subtree summary */

static void tn_rotate_up(sl__tnode_t **root, sl__tnode_t *x, tn_fix_fn fix) {
    sl__tnode_t *p = x->up, *g = p->up;
    if (p->l == x) {
        p->l = x->r;
        if (x->r) x->r->up = p;
        x->r = p;
    } else {
        p->r = x->l;
        if (x->l) x->l->up = p;
        x->l = p;
    }
    p->up = x;
    x->up = g;
    if (!g) *root = x;
    else if (g->l == p) g->l = x;
    else g->r = x;
    if (fix) {
        fix(p);
        fix(x);
    }
}

static void tn_insert(sl__tnode_t **root, sl__tnode_t *x, tn_less_fn less, tn_fix_fn fix) {
    x->l = x->r = x->up = NULL;
    sl__tnode_t *p = NULL, **link = root;
    while (*link) {
        p = *link;
        link = less(x, p) ? &p->l : &p->r;
    }
    *link = x;
    x->up = p;
    if (fix)
        for (sl__tnode_t *a = x; a; a = a->up) fix(a);
    while (x->up && x->up->prio < x->prio) tn_rotate_up(root, x, fix);
}

static void tn_remove(sl__tnode_t **root, sl__tnode_t *x, tn_fix_fn fix) {
    while (x->l || x->r) {
        sl__tnode_t *c;
        if (!x->l) c = x->r;
        else if (!x->r) c = x->l;
        else c = x->l->prio > x->r->prio ? x->l : x->r;
        tn_rotate_up(root, c, fix);
    }
    sl__tnode_t *p = x->up;
    if (!p) *root = NULL;
    else if (p->l == x) p->l = NULL;
    else p->r = NULL;
    x->up = NULL;
    if (fix)
        for (; p; p = p->up) fix(p);
}

/* ---- the pending queues: per tenant, and per shape group ---- */

static bool tq_less(const sl__tnode_t *a, const sl__tnode_t *b) {
    return qless(tq_job(a), tq_job(b));
}

static bool gq_less(const sl__tnode_t *a, const sl__tnode_t *b) {
    return qless(gq_job(a), gq_job(b));
}

static bool ix_less(const sl__tnode_t *a, const sl__tnode_t *b) {
    return qless(ix_group(a)->head, ix_group(b)->head);
}

static void gq_fix(sl__tnode_t *x) {
    sl_job_t *j = gq_job(x);
    int64_t m = j->lim;
    if (x->l && gq_job(x->l)->minlim < m) m = gq_job(x->l)->minlim;
    if (x->r && gq_job(x->r)->minlim < m) m = gq_job(x->r)->minlim;
    j->minlim = m;
}

/*
 * First job of the group subtree x, in queue order, that comes after key
 * (any job if key is NULL) and whose estimate is at most lim. O(depth):
 * subtrees without a small enough estimate are never entered, and once
 * past key every subtree entered holds a match.
 */
sl_job_t *sl__gq_find(const sl__tnode_t *x, const sl_job_t *key, int64_t lim) {
    while (x) {
        sl_job_t *j = gq_job(x);
        if (j->minlim > lim) return NULL;
        if (key && !qless(key, j)) { /* j and its left subtree are not after key */
            x = x->r;
            continue;
        }
        if (x->l) {
            sl_job_t *r = sl__gq_find(x->l, key, lim);
            if (r) return r;
        }
        if (j->lim <= lim) return j;
        x = x->r;
        key = NULL; /* all of j's right subtree comes after key */
    }
    return NULL;
}

/* ---- running list ---- */

int64_t sl__job_expected_end(const sl_job_t *job, int64_t default_limit_us) {
    int64_t lim = sl__job_limit(job, default_limit_us);
    if (lim <= 0) return INT64_MAX;
    if (job->start_us > INT64_MAX - lim) return INT64_MAX;
    return job->start_us + lim;
}

void sl__run_insert(sl_sched_t *s, sl_job_t *j) {
    /* Keep start order; starts come in time order, so this is O(1) except
     * for adopted jobs with earlier start times. */
    sl_job_t *after = s->run_tail;
    while (after && after->start_us > j->start_us) after = after->r_prev;
    j->r_prev = after;
    j->r_next = after ? after->r_next : s->run_head;
    if (j->r_next) j->r_next->r_prev = j;
    else s->run_tail = j;
    if (after) after->r_next = j;
    else s->run_head = j;
    j->run_seq = ++s->run_seq;
    j->end_us = sl__job_expected_end(j, s->default_limit_us);
    if (j->end_us != INT64_MAX) tn_insert(&s->ends_root, &j->eq, eq_less, NULL);
}

void sl__run_remove(sl_sched_t *s, sl_job_t *j) {
    if (j->end_us != INT64_MAX) tn_remove(&s->ends_root, &j->eq, NULL);
    if (j->r_prev) j->r_prev->r_next = j->r_next;
    else s->run_head = j->r_next;
    if (j->r_next) j->r_next->r_prev = j->r_prev;
    else s->run_tail = j->r_prev;
    j->r_prev = j->r_next = NULL;
}

/* ---- shape groups ---- */

/* The group of j's shape, created (empty, not indexed) if there is none.
 * O(1) expected: the table grows to keep at most one group per bucket. */
static group_t *group_get(sl_sched_t *s, const sl_job_t *j) {
    uint64_t h = group_hash(j);
    if (s->gbuckets) {
        for (group_t *g = s->gtab[h & (s->gbuckets - 1)]; g; g = g->h_next)
            if (group_matches(g, h, j)) return g;
    }
    if (s->ngroups + 1 > s->gbuckets) {
        size_t nb = s->gbuckets ? s->gbuckets * 2 : 64;
        group_t **nt = sl_xcalloc(nb, sizeof *nt);
        for (size_t i = 0; i < s->gbuckets; i++) {
            for (group_t *g = s->gtab[i], *nx; g; g = nx) {
                nx = g->h_next;
                g->h_next = nt[g->hash & (nb - 1)];
                nt[g->hash & (nb - 1)] = g;
            }
        }
        sl_free(s->gtab);
        s->gtab = nt;
        s->gbuckets = nb;
    }
    group_t *g = sl_xcalloc(1, sizeof *g);
    g->hash = h;
    g->tenant = j->spec.tenant;
    g->n = j->spec.ntasks;
    g->m = job_min(j);
    g->resv = j->spec.resv;
    g->req = j->spec.task;
    g->ix.prio = sl_mix64(h ^ UINT64_C(0x2545f4914f6cdd1d));
    g->h_next = s->gtab[h & (s->gbuckets - 1)];
    s->gtab[h & (s->gbuckets - 1)] = g;
    s->ngroups++;
    return g;
}

/* Unhashes an empty group and frees it, or, during a cycle (whose heaps
 * may still point at it), at the cycle's end. */
static void group_drop(sl_sched_t *s, group_t *g) {
    group_t **pp = &s->gtab[g->hash & (s->gbuckets - 1)];
    while (*pp != g) pp = &(*pp)->h_next;
    *pp = g->h_next;
    s->ngroups--;
    if (!s->in_cycle) {
        sl_free(g);
        return;
    }
    if (s->ndefer == s->defer_cap) {
        s->defer_cap = s->defer_cap ? s->defer_cap * 2 : 16;
        s->gdefer = sl_xrealloc(s->gdefer, s->defer_cap * sizeof *s->gdefer);
    }
    s->gdefer[s->ndefer++] = g;
}

/* ---- state transitions ---- */

void sl__enqueue(sl_sched_t *s, sl_job_t *j) {
    tenant_t *t = tenant_of(s, j);
    j->state = SL_JOB_PENDING;
    j->enq_epoch = s->epoch;
    /* Under "las" the order is the attained-service queue, then submit
     * time: a pending job's attained service does not change, so the key
     * is fixed until it runs again. */
    j->qkey = s->las ? -(int64_t)las_level(s, j->att_gpu_s) : j->spec.priority;
    int64_t lim = sl__job_limit(j, s->default_limit_us);
    j->lim = lim > 0 ? lim : INT64_MAX;
    /* wfq: a tenant that was idle rejoins at the system virtual time
     * instead of the tag it left with, so it banks no credit. */
    if (t->npending == 0 && t->vtag < s->vnow) t->vtag = s->vnow;
    tn_insert(&t->root, &j->tq, tq_less, NULL);
    group_t *g = group_get(s, j);
    bool new_head = !g->head || qless(j, g->head);
    if (new_head && g->head) tn_remove(&t->groot, &g->ix, NULL);
    tn_insert(&g->root, &j->gq, gq_less, gq_fix);
    if (new_head) {
        g->head = j;
        tn_insert(&t->groot, &g->ix, ix_less, NULL);
    }
    g->npending++;
    j->grp = g;
    t->pend = sl_res_add(t->pend, job_total(j, j->spec.ntasks));
    t->npending++;
    sl__resv_pend(s, j, true);
    s->npending++;
}

void sl__dequeue(sl_sched_t *s, sl_job_t *j) {
    tenant_t *t = tenant_of(s, j);
    group_t *g = j->grp;
    tn_remove(&t->root, &j->tq, NULL);
    if (g->head == j) {
        /* The group's position in the tenant's index follows its head. */
        sl_job_t *nx = gq_job(sl__tn_next(&j->gq));
        tn_remove(&t->groot, &g->ix, NULL);
        g->head = nx;
        if (nx) tn_insert(&t->groot, &g->ix, ix_less, NULL);
    }
    tn_remove(&g->root, &j->gq, gq_fix);
    j->grp = NULL;
    if (--g->npending == 0) group_drop(s, g);
    t->pend = sl_res_sub(t->pend, job_total(j, j->spec.ntasks));
    t->npending--;
    s->npending--;
    sl__resv_pend(s, j, false);
}

/* ---- tenants ---- */

int sl_sched_add_tenant(sl_sched_t *s, const sl_tenant_spec_t *spec) {
    if (!spec || !spec->name) return SL_EINVAL;
    size_t len = strlen(spec->name);
    if (len == 0 || len >= SL_NAME_MAX) return SL_EINVAL;
    if (spec->weight < 0) return SL_EINVAL;
    if (spec->quota.cpu_milli < 0 || spec->quota.mem_bytes < 0 || spec->quota.gpu_milli < 0)
        return SL_EINVAL;
    if (sl_sched_tenant_find(s, spec->name) >= 0) return SL_EEXIST;
    if (s->ntenants >= INT32_MAX) return SL_ERANGE;
    if (s->ntenants == s->tenants_cap) {
        s->tenants_cap = s->tenants_cap ? s->tenants_cap * 2 : 8;
        s->tenants = sl_xrealloc(s->tenants, s->tenants_cap * sizeof *s->tenants);
    }
    tenant_t *t = &s->tenants[s->ntenants];
    memset(t, 0, sizeof *t);
    memcpy(t->name, spec->name, len + 1);
    t->weight = spec->weight ? spec->weight : 1;
    t->quota = spec->quota;
    t->has_quota = spec->quota.cpu_milli > 0 || spec->quota.mem_bytes > 0 || spec->quota.gpu_milli > 0;
    return (int)s->ntenants++;
}

int sl_sched_tenant_find(const sl_sched_t *s, const char *name) {
    if (!name) return SL_ENOENT;
    for (size_t i = 0; i < s->ntenants; i++)
        if (strcmp(s->tenants[i].name, name) == 0) return (int)i;
    return SL_ENOENT;
}

size_t sl_sched_tenant_count(const sl_sched_t *s) {
    return s->ntenants;
}

const char *sl_sched_tenant_name(const sl_sched_t *s, int32_t tenant) {
    return tenant_ok(s, tenant) ? s->tenants[tenant].name : NULL;
}

int32_t sl_sched_tenant_weight(const sl_sched_t *s, int32_t tenant) {
    return tenant_ok(s, tenant) ? s->tenants[tenant].weight : 1;
}

sl_res_t sl_sched_tenant_usage(const sl_sched_t *s, int32_t tenant) {
    return tenant_ok(s, tenant) ? s->tenants[tenant].usage : (sl_res_t){0, 0, 0};
}

sl_res_t sl_sched_tenant_pending(const sl_sched_t *s, int32_t tenant) {
    return tenant_ok(s, tenant) ? s->tenants[tenant].pend : (sl_res_t){0, 0, 0};
}

static double ratio(int64_t used, int64_t cap) {
    return cap > 0 ? (double)used / (double)cap : 0.0;
}

double sl__share_of(const tenant_t *t, sl_res_t cap) {
    double m = ratio(t->usage.cpu_milli, cap.cpu_milli);
    double r = ratio(t->usage.mem_bytes, cap.mem_bytes);
    if (r > m) m = r;
    r = ratio(t->usage.gpu_milli, cap.gpu_milli);
    if (r > m) m = r;
    return m / (double)t->weight;
}

double sl_sched_tenant_share(const sl_sched_t *s, int32_t tenant) {
    if (!tenant_ok(s, tenant)) return 0.0;
    const tenant_t *t = &s->tenants[tenant];
    if (s->cap_valid) return t->share; /* during a cycle: DRF compares often */
    sl_res_t cap;
    sl_cluster_capacity(s->cl, &cap, NULL);
    return sl__share_of(t, cap);
}

void sl_sched_tenant_jobs(const sl_sched_t *s, int32_t tenant, size_t *pending, size_t *running) {
    size_t p = 0, r = 0;
    if (tenant_ok(s, tenant)) {
        p = s->tenants[tenant].npending;
        r = s->tenants[tenant].nrunning;
    }
    if (pending) *pending = p;
    if (running) *running = r;
}

/* ---- shared reasons ---- */

/* Is job j after the tenant's quota-blocked head in the tenant's order? */
static bool after_blocker(const tenant_t *t, const sl_job_t *j) {
    if (t->blk_prio != j->qkey) return t->blk_prio > j->qkey;
    if (t->blk_submit != j->spec.submit_us) return t->blk_submit < j->spec.submit_us;
    return t->blk_id < j->spec.id;
}

/*
 * The newest reason that applies to pending job j: its own (written when a
 * cycle examined it), its group's (the group's verdict skipped it), its
 * tenant's (it was behind the tenant's quota-blocked head) or the cycle's
 * (the cycle stopped before it). Within one cycle the more specific wins,
 * except that a job of a skipped group that lies behind its tenant's
 * blocked head shows the tenant's reason, as if it had been walked to.
 */
static const char *resolve_reason(const sl_sched_t *s, const sl_job_t *j, sl_status_t *st) {
    const char *r = j->reason;
    sl_status_t rs = j->status;
    uint64_t e = j->reason_epoch;
    bool from_group = false;
    const group_t *g = j->grp;
    /* A long job skipped while the group could only run short ones keeps
     * that reason even if a short one then failed outright in that cycle
     * (the failed-shape cache answers the same). */
    if (g && g->l_epoch > e && g->l_epoch >= g->r_epoch && j->enq_epoch < g->l_epoch &&
        j->lim > g->l_short_lim) {
        r = g->l_reason;
        rs = SL_WAIT;
        e = g->l_epoch;
        from_group = true;
    } else if (g && g->r_epoch > e && j->enq_epoch < g->r_epoch) {
        r = g->reason;
        rs = g->r_status;
        e = g->r_epoch;
        from_group = true;
    }
    const tenant_t *t = tenant_of(s, j);
    if (j->enq_epoch < t->behind_epoch &&
        (t->behind_epoch > e || (t->behind_epoch == e && from_group && after_blocker(t, j)))) {
        r = t->behind_reason;
        rs = SL_WAIT;
        e = t->behind_epoch;
    }
    if (s->behind_epoch > e && j->enq_epoch < s->behind_epoch) {
        r = s->behind_reason;
        rs = SL_WAIT;
    }
    if (st) *st = rs;
    return r;
}

const char *sl__sched_job_reason(const sl_sched_t *s, const sl_job_t *j) {
    return resolve_reason(s, j, NULL);
}

sl_status_t sl__sched_job_status(const sl_sched_t *s, const sl_job_t *j) {
    sl_status_t st;
    resolve_reason(s, j, &st);
    return st;
}

