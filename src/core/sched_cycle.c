/*
 * sched_cycle.c - the scheduling cycle (sl_sched_cycle) and
 * sl_sched_try_start.
 *
 * The cycle. The next job is the least tenant head under the queue policy's
 * `less`. The tenants with jobs left sit in a binary heap keyed by their
 * heads, so a pick costs O(log active tenants). This relies on a property
 * all our policies have: comparing two heads depends only on those jobs,
 * their own tenants and now, so a start changes only the starter's key
 * (DRF: its share grows), and that tenant is the heap's top, re-sifted
 * after each pick. A tenant's head is the least "next job" over its groups
 * the cycle has reached (a small heap per tenant), or the first job of the
 * next group of its index, whichever comes first: groups are reached
 * lazily, when the walk gets to their first job. For each job:
 *  1. Quota: the tenant's usage plus the job must stay within every non-zero
 *     quota dimension (an elastic job is capped to the count the quota
 *     allows). Otherwise the job waits (SL_WAIT, "tenant quota ...") and
 *     its TENANT is blocked for the rest of the cycle: its later jobs keep
 *     their order behind it, while other tenants go on (a tenant at its
 *     quota must not stop everybody else; this is the "blocked-tenant skip").
 *  2. Placement: sl_place_gang with the full task count, or for an elastic
 *     job the most tasks that fit between min_tasks and ntasks
 *     (sl__place_range, sched.c).
 *  3. A job that fits starts (state RUNNING, tenant usage updated). A job
 *     that can never fit (SL_NOFIT_EVER) is skipped with its reason and does
 *     not block anything. A job that does not fit now is "blocked":
 *       - backfill none (a policy without `reserve`): the cycle stops;
 *         every job it did not reach shows "waiting behind job N" (strict
 *         order, no starvation);
 *       - backfill easy: the first blocked job gets a reservation from the
 *         backfill policy (policy/backfill_easy.c, which sees the scheduler
 *         only through sl_backfill_view_t: the cluster and the running jobs
 *         by expected end), and HOLDS it across cycles (below). If none can
 *         be computed (it would not fit even after every job with a finite
 *         estimate ended: a node it needs is down, or jobs without any
 *         estimate hold what it needs) its start time is unknown, and it
 *         holds nothing back: its group fails, the walk goes on and the
 *         next blocked job (of another group) may get the reservation, at
 *         most SL__RESERVE_TRIES computed per cycle (each failed one walks
 *         every running job with an estimate). Stopping there instead, as
 *         once, left nodes the job could not use idle for as long as the
 *         job without a limit ran. With a reservation, later jobs start if
 *         they fit now and either
 *         end by the shadow time (now + their limit <= shadow) or use no
 *         reserved node. A long job whose placement lands on a reserved
 *         node is released and retried with the reserved nodes temporarily
 *         drained (sl_cluster_set_state), so it may still start elsewhere;
 *         drained nodes are restored to up before the cycle returns.
 *         Past the reservation (or the first job without one possible) a
 *         cycle examines at most max_backfill_tries jobs (Slurm's
 *         bf_max_job_test); the rest are "not considered".
 *  The held reservation (docs/scheduling.md states the rules and the bound
 *  on the held job's wait). The order of drf (and of any policy keyed by
 *  shares or waits) moves between cycles, so "the first blocked job" would
 *  be another tenant's job whenever that tenant's share dipped, and a wide
 *  gang lost its reservation every time. So the job that gets a
 *  reservation keeps it (s->hold_id) until it starts, is cancelled, waits
 *  on its own tenant's quota, can never fit, or, under "priority" only, a
 *  pending job of a higher priority exists (hold_yields). A cycle with a
 *  hold (hold_begin) first tries the held job on its own; if it still
 *  cannot start, its reservation is computed afresh and the whole walk,
 *  including jobs the policy now puts before it, is backfill against it;
 *  when the walk reaches it, its failure is its group's verdict. A held job
 *  for which no reservation can be computed any more (a node it needs went
 *  down) gives the hold up: it holds nothing back, as above.
 *  Skipping by group. The cluster only fills during a cycle, so once a job
 *  fails on the whole cluster every later job of its group fails the same
 *  way (same shape, same counts, and the same quota-capped count); once a
 *  long backfill candidate fits only on reserved nodes, so do the later
 *  long ones of its group. The group then takes the failure as its
 *  verdict: it leaves the tenant's heap (or, for the second kind, jumps to
 *  its next short job, found in O(log n) through the subtree minima), and
 *  its skipped jobs share its reason. This is exactly what walking them
 *  would decide, since each would be answered by the failed-shape cache
 *  below without touching the cluster or the RNG. A verdict depends on the
 *  count the tenant's quota allows; when a tenant with a quota starts a
 *  job, its groups whose count changed are resumed after that job. So a
 *  run of 10,000 identical pending jobs costs one examination, and a cycle
 *  costs O((examined + groups reached) * log) instead of O(pending).
 *  Reasons of the jobs a cycle does not reach are shared, not copied: the
 *  scheduler keeps one "waiting behind ..." string per cycle (and one per
 *  blocked tenant, and one per group) with the epoch it belongs to, and
 *  sl_job_reason() picks the newest that applies.
 *  Shapes that failed in this cycle are also remembered across tenants (a
 *  small hash keyed by task shape and counts, stamped with the cycle's
 *  epoch), so the first job of another tenant's group of the same shape is
 *  answered in O(1) too.
 *
 * Advance reservations (sched_resv.c): a placement keeps a job off the
 * reserved nodes it may not use; with a reservation ahead the walk does not
 * skip by group (the nodes a job may use depend on its estimate) and the
 * failed-shape cache keys its answers by the reserved nodes a job was kept
 * off; the jobs of open windows are tried first (resv_begin), take no EASY
 * reservation and are never kept off EASY's nodes.
 * (Group skipping stays on once every window has begun: no other job may
 * use a window's nodes whatever its estimate, and the jobs of a
 * reservation form groups of their own.)
 *
 * on_start callbacks run after the cycle's decisions, in start order, for
 * jobs still running; they may call back into the scheduler (finish, cancel,
 * requeue, submit) but must not run another cycle from inside one. The
 * sl_sched_foreach callback must not change the scheduler.
 *
 * sl_sched_foreach(PENDING) merges the tenant queues with the same heap and
 * the shares as they are now, at the latest time the scheduler was given
 * (so "wfq" lists in the order the last cycle used); DONE and CANCELLED jobs
 * (sl_cycle_t.order_key) and the cluster keeps its classes' first members
 * in (sl__cluster_set_order_key, set at creation and checked, O(1), at each
 * cycle), so gpupacking and gpuclustering shuffle the nodes per seed.
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
#include "units.h"
#include "sluice/alloc.h"
#include "sluice/error.h"

/* ---- failed-shape cache (valid within one epoch) ---- */

/* Keyed by shape, counts and the reserved nodes the job is kept off
 * (xsig, sched_resv.c: 0 without advance reservations). */
static size_t fcache_home(const sl_task_req_t *r, int32_t n, int32_t m, uint64_t xsig) {
    return (size_t)sl_mix64(req_hash(r, n, m) ^ xsig) & (FCACHE_SIZE - 1);
}

static const fcache_entry_t *fcache_find(const sl_sched_t *s, const sl_task_req_t *r, int32_t n,
                                         int32_t m, bool lng, uint64_t xsig) {
    size_t i = fcache_home(r, n, m, xsig);
    for (int p = 0; p < FCACHE_PROBES; p++, i = (i + 1) & (FCACHE_SIZE - 1)) {
        const fcache_entry_t *e = &s->fcache[i];
        if (e->epoch != s->epoch) return NULL;
        if (e->n == n && e->m == m && e->xsig == xsig && (!e->lng || lng) && req_eq(&e->req, r))
            return e;
    }
    return NULL;
}

static void fcache_put(sl_sched_t *s, const sl_task_req_t *r, int32_t n, int32_t m, bool lng,
                       uint64_t xsig, sl_status_t st, const char *reason) {
    size_t i = fcache_home(r, n, m, xsig);
    for (int p = 0; p < FCACHE_PROBES; p++, i = (i + 1) & (FCACHE_SIZE - 1)) {
        fcache_entry_t *e = &s->fcache[i];
        if (e->epoch == s->epoch) continue;
        e->epoch = s->epoch;
        e->req = *r;
        e->n = n;
        e->m = m;
        e->lng = lng;
        e->xsig = xsig;
        e->st = st;
        sl__setf(e->reason, sizeof e->reason, "%s", reason);
        return;
    }
}

/* ---- the backfill policy's reservation ---- */

/* The backfill view's walk over the running jobs by expected end: the
 * cursor is the job's node in the end-ordered treap. */
static bool next_end(const void *ctx, const void **cursor, sl_running_view_t *out) {
    const sl_sched_t *s = ctx;
    const sl__tnode_t *x = *cursor ? sl__tn_next(*cursor) : sl__tn_first(s->ends_root);
    if (!x) return false;
    const sl_job_t *j = sl__end_job(x);
    *out = (sl_running_view_t){&j->spec.task, j->pls, j->nplaced, j->end_us};
    *cursor = x;
    return true;
}

/* The latest expected end of the running jobs (now_us if none ends
 * later): no reservation's shadow time is later. O(depth). */
static int64_t last_end(const sl_sched_t *s, int64_t now_us) {
    const sl__tnode_t *x = s->ends_root;
    if (!x) return now_us;
    while (x->r) x = x->r;
    int64_t e = sl__end_job(x)->end_us;
    return e > now_us ? e : now_us;
}

/* Asks the backfill policy for a reservation of count tasks of j's shape,
 * with the nodes of advance reservations j could run into at any shadow
 * time out of the index (sched_resv.c). */
static bool reserve(sl_sched_t *s, const sl_job_t *j, int32_t count, int64_t now_us) {
    if (!s->backfill->reserve || j->spec.resv) return false;
    if (s->nresv > 0 &&
        sl__resv_exclude(s, j, now_us, last_end(s, now_us), NULL, 0) != SL_FIT)
        return false;
    sl_backfill_view_t v = {.cluster = s->cl, .next_end = next_end, .ctx = s};
    s->resv_active = s->backfill->reserve(s->bf_state, &v, &j->spec.task, count, now_us, &s->resv);
    sl__resv_restore(s);
    return s->resv_active;
}

/* With a reservation: a job is short (ends by the shadow time if started
 * now) iff its estimate is at most short_lim. */
static void set_short_lim(sl_sched_t *s, int64_t now_us) {
    if (__builtin_sub_overflow(s->resv.start_us, now_us, &s->short_lim) ||
        s->short_lim == INT64_MAX)
        s->short_lim = INT64_MAX - 1;
}

static void clear_reservation(sl_sched_t *s) {
    if (s->backfill->clear) s->backfill->clear(s->bf_state);
    s->resv_active = false;
    s->resv = (sl_reservation_t){-1, NULL, 0};
}

/* ---- draining the reserved nodes for long backfill jobs ---- */

static void drain_reserved(sl_sched_t *s) {
    for (size_t i = 0; i < s->resv.nnodes; i++) {
        uint32_t id = s->resv.nodes[i];
        const sl_node_t *n = sl_cluster_node(s->cl, id);
        if (!n || n->state != SL_NODE_UP) continue;
        if (s->ndrained == s->drained_cap) {
            s->drained_cap = s->drained_cap ? s->drained_cap * 2 : 16;
            s->drained = sl_xrealloc(s->drained, s->drained_cap * sizeof *s->drained);
        }
        sl__invariant(sl_cluster_set_state(s->cl, id, SL_NODE_DRAINING) == 0);
        s->drained[s->ndrained++] = id;
    }
}

static void undrain(sl_sched_t *s) {
    while (s->ndrained > 0)
        sl__invariant(sl_cluster_set_state(s->cl, s->drained[--s->ndrained], SL_NODE_UP) == 0);
}

/* ---- the cycle ---- */

enum { MODE_PLAIN = 0, MODE_SHORT = 1, MODE_LONG = 2 };

typedef struct attempt {
    int32_t k;      /* tasks placed on SL_FIT */
    bool tried;     /* the placer was called */
} attempt_t;

/*
 * Tries to place job j (quota already applied: n..m tasks). mode says
 * whether a reservation is active and whether j ends before it. On SL_FIT,
 * s->pls[0..a->k-1] is allocated. Otherwise j->status/j->reason are set.
 */
static int attempt_job(sl_sched_t *s, sl_cycle_t *cy, sl_job_t *j, int32_t n, int32_t m, int mode,
                       uint64_t resv_id, attempt_t *a) {
    const sl_task_req_t *req = &j->spec.task;
    char reason[SL_REASON_MAX];
    int rc;
    a->tried = false;
    a->k = 0;

    uint64_t xsig = s->nresv > 0 || j->spec.resv ? sl__resv_sig(s, j, cy->now_us) : 0;
    const fcache_entry_t *fe = fcache_find(s, req, n, m, mode == MODE_LONG, xsig);
    if (fe) {
        j->status = fe->st;
        memcpy(j->reason, fe->reason, strlen(fe->reason) + 1); /* both SL_REASON_MAX */
        return fe->st;
    }
    a->tried = true;

    bool drained_tried = false;
    if (mode == MODE_LONG && s->ndrained > 0) {
        /* Reserved nodes are drained: anything found avoids them. */
        rc = sl__place_range(s, cy, j, n, m, &a->k, reason, sizeof reason);
        if (rc == SL_FIT) return SL_FIT;
        drained_tried = true;
        undrain(s);
    } else if (mode != MODE_LONG) {
        undrain(s);
    }

    rc = sl__place_range(s, cy, j, n, m, &a->k, reason, sizeof reason);
    if (rc == SL_FIT) {
        if (mode != MODE_LONG || !s->backfill->touches(s->bf_state, s->pls, a->k)) return SL_FIT;
        /* It would delay the reservation here; try again off the reserved nodes. */
        sl__release_pls(s, req, s->pls, a->k);
        if (!drained_tried) {
            drain_reserved(s);
            rc = sl__place_range(s, cy, j, n, m, &a->k, reason, sizeof reason);
            if (rc == SL_FIT) return SL_FIT;
        }
        j->status = SL_WAIT;
        char at[SL__UNIT_BUF];
        sl__setf(j->reason, sizeof j->reason,
                 "fits only on nodes reserved for job %llu from t=%s and would run past then",
                 (unsigned long long)resv_id, sl__fmt_secs(at, sizeof at, s->resv.start_us));
        fcache_put(s, req, n, m, true, xsig, SL_WAIT, j->reason);
        return SL_WAIT;
    }
    j->status = rc == SL_NOFIT_EVER ? SL_NOFIT_EVER : SL_NOFIT;
    sl__setf(j->reason, sizeof j->reason, "%s", reason);
    fcache_put(s, req, n, m, false, xsig, j->status, j->reason);
    return j->status;
}

static void behind_global(sl_sched_t *s, const char *fmt, unsigned long long id, const char *why) {
    s->behind_epoch = s->epoch;
    sl__setf(s->behind_reason, sizeof s->behind_reason, fmt, id, why);
}

/* The reason of a blocked job for which no reservation can be computed,
 * in front of its placement's. */
static void noresv_reason(sl_job_t *j) {
    char r[SL_REASON_MAX];
    sl__setf(r, sizeof r, "%s", j->reason);
    sl__setf(j->reason, sizeof j->reason, "no reservation possible (nodes down, or jobs without "
             "time limits, hold what it needs); now: %s", r);
}

/* With a reservation: does j end by the shadow time if it starts now? */
static bool is_short(const sl_sched_t *s, const sl_job_t *j) {
    return j->lim != INT64_MAX && j->lim <= s->short_lim;
}

/* The cycle's heap of tenants (uint32_t indices) by their current heads
 * under the queue policy, and a tenant's heap of reached groups
 * (group_t *) by their next jobs in queue order. */
typedef struct head_ctx {
    const sl_sched_t *s;
    int64_t now_us;
} head_ctx_t;

static bool head_less(void *ctx, const void *a, const void *b) {
    const head_ctx_t *c = ctx;
    const tenant_t *ta = &c->s->tenants[*(const uint32_t *)a];
    const tenant_t *tb = &c->s->tenants[*(const uint32_t *)b];
    return c->s->queue->less(c->s, ta->cur, tb->cur, c->now_us);
}

static const sl_heap_type_t head_heap = {sizeof(uint32_t), head_less, NULL};

static bool gh_less(void *ctx, const void *a, const void *b) {
    return qless((*(group_t *const *)a)->cur, (*(group_t *const *)b)->cur);
}

static const sl_heap_type_t group_heap = {sizeof(group_t *), gh_less, NULL};

static group_t *gh_top(const tenant_t *t) {
    return sl_heap_count(&t->gh) ? *(group_t **)sl_heap_top(&t->gh) : NULL;
}

static void gh_push(tenant_t *t, group_t *g) {
    sl_heap_push(&t->gh, &group_heap, NULL, &g);
}

/* The top group's cur changed (NULL: it has nothing left this cycle). */
static void gh_fix_top(tenant_t *t) {
    if (!gh_top(t)->cur) sl_heap_pop(&t->gh, &group_heap, NULL, NULL);
    else sl_heap_fix(&t->gh, &group_heap, NULL, 0);
}

/*
 * Sets t->cur to the tenant's next job in its queue order: the least of
 * the reached groups' next jobs and the head of the first group not yet
 * reached (the index is ordered by head, so groups are reached lazily and
 * a cycle touches only the groups it gets to).
 */
static void tenant_settle(const sl_sched_t *s, tenant_t *t) {
    for (;;) {
        while (t->gnext && ix_group(t->gnext)->act_epoch == s->epoch) t->gnext = sl__tn_next(t->gnext);
        if (!t->gnext) break;
        group_t *g = ix_group(t->gnext);
        if (sl_heap_count(&t->gh) && !qless(g->head, gh_top(t)->cur)) break;
        g->act_epoch = s->epoch;
        g->cur = g->head;
        g->verdict = V_ALIVE;
        t->gnext = sl__tn_next(t->gnext);
        gh_push(t, g);
    }
    t->cur = sl_heap_count(&t->gh) ? gh_top(t)->cur : NULL;
}

/*
 * Job j, examined with the quota-capped count qn, did not start and the
 * cycle goes on: every later job of its group fails the same way (rc
 * SL_WAIT: only as a long backfill candidate, so short ones are still
 * examined). Records the verdict and the reason the skipped jobs show, and
 * moves the group to its next job that can still start.
 */
static void group_fail(sl_sched_t *s, tenant_t *t, group_t *g, const sl_job_t *j, int rc,
                       int32_t qn, const char *reason) {
    /* An elastic group under a quota may be resumed with a smaller count
     * and fail again, with another reason for the jobs after that point:
     * such groups (rare) are walked job by job, as the reference walk does. */
    if (!t->skip || (t->has_quota && g->m < g->n)) {
        g->cur = gq_job(sl__tn_next(&j->gq));
        gh_fix_top(t);
        return;
    }
    const sl_job_t *nx = gq_job(sl__tn_next(&j->gq));
    g->vqn = qn;
    if (rc == SL_WAIT) {
        g->l_epoch = s->epoch;
        g->l_short_lim = s->short_lim;
        memcpy(g->l_reason, reason, strlen(reason) + 1); /* both SL_REASON_MAX */
        g->verdict = V_LONG;
        g->cur = sl__gq_find(g->root, j, s->short_lim);
    } else {
        g->r_epoch = s->epoch;
        g->r_status = rc;
        memcpy(g->reason, reason, strlen(reason) + 1);
        g->verdict = V_DEAD;
        g->cur = NULL;
        /* If a long candidate of this shape (another tenant's) was already
         * refused for the reservation's sake, the failed-shape cache gives
         * later long jobs that answer first: so do we. */
        const fcache_entry_t *fe =
            s->resv_active ? fcache_find(s, &g->req, qn, g->m, true, 0) : NULL;
        if (fe && fe->lng) {
            g->l_epoch = s->epoch;
            g->l_short_lim = s->short_lim;
            memcpy(g->l_reason, fe->reason, strlen(fe->reason) + 1);
        }
    }
    if (nx && nx != g->cur) s->n_skips++;
    gh_fix_top(t);
    if (t->has_quota && g->dead_epoch != s->epoch) {
        g->dead_epoch = s->epoch;
        if (t->ndl == t->dl_cap) {
            t->dl_cap = t->dl_cap ? t->dl_cap * 2 : 8;
            t->dl = sl_xrealloc(t->dl, t->dl_cap * sizeof *t->dl);
        }
        t->dl[t->ndl++] = g;
    }
}

/*
 * Tenant t (with a quota) just started job j, so its quota may now allow a
 * different count: a group verdict holds only for the count it was found
 * with. Groups whose count changed are examined again from the job after
 * j, exactly where the walk would meet them (a count of -1 then blocks the
 * tenant at the right place). O(groups with a verdict).
 */
static void quota_revive(sl_sched_t *s, tenant_t *t, const sl_job_t *j) {
    char scratch[SL_REASON_MAX];
    bool changed = false;
    for (size_t i = 0; i < t->ndl;) {
        group_t *g = t->dl[i];
        int32_t qn = g->npending ? sl__quota_cap(s, g->head, g->n, g->m, scratch, sizeof scratch)
                                 : g->vqn;
        if (qn == g->vqn) {
            i++;
            continue;
        }
        t->dl[i] = t->dl[--t->ndl];
        g->dead_epoch = 0;
        bool in_heap = g->cur != NULL; /* a V_LONG group with short jobs left */
        g->verdict = V_ALIVE;
        g->cur = sl__gq_find(g->root, j, INT64_MAX); /* never later than before */
        s->n_revived++;
        if (!in_heap && g->cur) gh_push(t, g);
        changed = true;
    }
    if (changed) sl_heap_build(&t->gh, &group_heap, NULL);
}

/*
 * Skipping a group's jobs leaves the order of the other jobs unchanged only
 * if a tenant's own queue order agrees with how the policy compares its
 * jobs to other tenants' jobs. Every policy compares two tenants' jobs
 * through the tenants (share, weight) and, monotonically, through each
 * job's submit time and id; only "priority" and "las" also through the
 * queue key (priority, or attained-service queue). So the orders agree
 * under those two, and under the others when all the tenant's pending
 * jobs share one key. Otherwise a skipped job (a
 * high-priority head, say) would have held its tenant back in the merge,
 * and the tenant's jobs are examined one by one, as before. O(log n).
 */
static bool skip_exact(const sl_sched_t *s, const tenant_t *t) {
    if (s->queue == &sl__queue_priority || s->las || !t->root) return true;
    const sl__tnode_t *last = t->root;
    while (last->r) last = last->r;
    return tq_job(sl__tn_first(t->root))->qkey == tq_job(last)->qkey;
}

void sl__sched_set_group_skip(sl_sched_t *s, bool on) {
    s->group_skip = on;
}

void sl__sched_group_counters(const sl_sched_t *s, uint64_t *skips, uint64_t *revived) {
    *skips = s->n_skips;
    *revived = s->n_revived;
}

/* Appends a job the cycle started to its start list (for on_start). */
static void note_start(sl_sched_t *s, size_t *nstarted, uint64_t id) {
    if (*nstarted == s->started_cap) {
        s->started_cap = s->started_cap ? s->started_cap * 2 : 64;
        s->started = sl_xrealloc(s->started, s->started_cap * sizeof *s->started);
    }
    s->started[(*nstarted)++] = id;
}

/* ---- the held reservation ---- */

/* Gives the hold to j, the first job of this cycle's order that is blocked
 * (keeping the time it was first given if j already had it). */
static void hold_give(sl_sched_t *s, const sl_job_t *j, int64_t now_us) {
    if (s->hold_id != j->spec.id) s->hold_since_us = now_us;
    s->hold_id = j->spec.id;
}

static void hold_drop(sl_sched_t *s) {
    s->hold_id = 0;
    s->hold_since_us = -1;
}

/*
 * Whether the held job h yields its hold: only under "priority", whose
 * order (priority, then submit) does not move as shares or waits change,
 * and only to a pending job of a higher priority, which that order puts
 * first. Under the other policies a job's priority orders only its own
 * tenant's queue, so one tenant cannot take another's reservation by
 * raising its own priorities. O(tenants * log pending).
 */
static bool hold_yields(const sl_sched_t *s, const sl_job_t *h) {
    if (s->queue != &sl__queue_priority) return false;
    for (size_t i = 0; i < s->ntenants; i++) {
        const sl_job_t *f = tq_job(sl__tn_first(s->tenants[i].root));
        if (f && f->spec.priority > h->spec.priority) return true;
    }
    return false;
}

enum { HOLD_NONE = 0, HOLD_RESERVED = 1 };

/*
 * The start of a cycle with a held reservation (see the file header): the
 * held job is examined first. It starts if it fits now (HOLD_NONE: the
 * cycle goes on as a plain EASY cycle). If it still cannot start, its
 * reservation is computed afresh and the whole walk backfills against it
 * (HOLD_RESERVED; *held is the job, raw the placement's reason for its
 * group). The hold is dropped, and the cycle is a plain one, when the job
 * is no longer pending, its tenant's quota holds it back, it can never
 * fit, it yields to a higher priority (hold_yields), or no reservation can
 * be computed for it now (its group is marked so, and *tries counts the
 * attempt): a job whose start time is unknown holds nothing back.
 */
static int hold_begin(sl_sched_t *s, sl_cycle_t *cy, int64_t now_us, sl_cycle_stats_t *st,
                      size_t *nstarted, int *tries, sl_job_t **held, char *raw, size_t rawlen) {
    *held = NULL;
    if (s->hold_id == 0) return HOLD_NONE;
    sl_job_t *h = jobs_find(s, s->hold_id);
    if (!h || h->state != SL_JOB_PENDING || !s->backfill->reserve || hold_yields(s, h)) {
        hold_drop(s);
        return HOLD_NONE;
    }
    int32_t n = h->spec.ntasks, m = job_min(h);
    char qr[SL_REASON_MAX];
    int32_t qn = sl__quota_cap(s, h, n, m, qr, sizeof qr);
    if (qn < 0) {
        hold_drop(s); /* the walk meets it and blocks its tenant */
        return HOLD_NONE;
    }
    h->reason_epoch = s->epoch;
    attempt_t at;
    int rc = attempt_job(s, cy, h, qn, m, MODE_PLAIN, 0, &at);
    if (at.tried) st->tried++;
    if (rc == SL_FIT) {
        sl__start_job(s, h, s->pls, at.k, now_us);
        note_start(s, nstarted, h->spec.id);
        st->started++;
        hold_drop(s);
        return HOLD_NONE;
    }
    if (rc != SL_NOFIT) {
        hold_drop(s);
        return HOLD_NONE;
    }
    sl__setf(raw, rawlen, "%s", h->reason);
    char since[SL__UNIT_BUF];
    sl__fmt_secs(since, sizeof since, s->hold_since_us);
    (*tries)++;
    if (!reserve(s, h, m, now_us)) {
        /* Its start time is unknown now: it holds nothing back (the walk
         * meets it and says why) and the hold goes to a job that has one. */
        h->grp->noresv_epoch = s->epoch;
        hold_drop(s);
        return HOLD_NONE;
    }
    set_short_lim(s, now_us);
    st->reserved_job = (int64_t)h->spec.id;
    st->reserved_at_us = s->resv.start_us;
    s->plan_id = h->spec.id;
    s->plan_start_us = s->resv.start_us;
    char from[SL__UNIT_BUF];
    sl__setf(h->reason, sizeof h->reason, "reserved from t=%s on %zu nodes (held since t=%s); "
             "now: %s", sl__fmt_secs(from, sizeof from, s->resv.start_us), s->resv.nnodes, since,
             raw);
    *held = h;
    return HOLD_RESERVED;
}

/*
 * The jobs of the advance reservations whose window is open are tried
 * before the walk, in queue order (sched_resv.c): no other job may use
 * their nodes then, so trying them first takes nothing from anyone, and
 * the walk's backfill limit (max_backfill_tries), which stops a cycle
 * after so many jobs past the EASY reservation, cannot keep them off
 * their own nodes. O(their pending jobs), each answered by the
 * failed-shape cache once its shape failed.
 */
static void resv_begin(sl_sched_t *s, sl_cycle_t *cy, int64_t now_us, sl_cycle_stats_t *st,
                       size_t *nstarted) {
    sl_job_t **v;
    size_t n = s->nresv ? sl__resv_window_jobs(s, now_us, &v) : 0;
    for (size_t i = 0; i < n; i++) {
        sl_job_t *j = v[i];
        int32_t m = job_min(j);
        char qr[SL_REASON_MAX];
        int32_t qn = sl__quota_cap(s, j, j->spec.ntasks, m, qr, sizeof qr);
        if (qn < 0) continue; /* the walk meets it and says why */
        j->reason_epoch = s->epoch;
        attempt_t at;
        int rc = attempt_job(s, cy, j, qn, m, MODE_PLAIN, 0, &at);
        if (at.tried) st->tried++;
        if (rc != SL_FIT) continue;
        sl__start_job(s, j, s->pls, at.k, now_us);
        note_start(s, nstarted, j->spec.id);
        st->started++;
    }
}

int64_t sl_sched_expected_start(const sl_sched_t *s, uint64_t id) {
    return id != 0 && s->plan_id == id ? s->plan_start_us : -1;
}

uint64_t sl_sched_held_job(const sl_sched_t *s, int64_t *since_us) {
    if (since_us) *since_us = s->hold_id ? s->hold_since_us : -1;
    return s->hold_id;
}

int sl_sched_cycle(sl_sched_t *s, int64_t now_us, sl_start_fn on_start, void *ud,
                   sl_cycle_stats_t *stats) {
    sl_cycle_stats_t st = {0, 0, 0, -1, -1, 0, 0, 0};
    s->epoch++;
    see_time(s, now_us);
    sl_cluster_capacity(s->cl, &s->cap, NULL);
    for (size_t i = 0; i < s->ntenants; i++) s->tenants[i].share = sl__share_of(&s->tenants[i], s->cap);
    s->cap_valid = true;
    s->in_cycle = true;
    sl__cluster_set_order_key(s->cl, s->order_key); /* O(1) unless another key was set */
    sl_cycle_t cy = {.cluster = s->cl, .workload = s->wl, .rng = &s->rng, .now_us = now_us,
                     .order_key = s->order_key};
    clear_reservation(s);
    s->plan_id = 0;
    s->plan_start_us = -1;
    size_t nstarted = 0;
    sl_job_t *held = NULL;
    char held_raw[SL_REASON_MAX];
    int tries = 0; /* reservations computed (SL__RESERVE_TRIES) */
    hold_begin(s, &cy, now_us, &st, &nstarted, &tries, &held, held_raw, sizeof held_raw);
    resv_begin(s, &cy, now_us, &st, &nstarted);

    /* Whether a reservation's window lies ahead: then whether a job may use
     * its nodes depends on the job's estimate (sched_resv.c). Inside a
     * window no other job may, whatever its estimate, and a job of it is
     * in a group of its own (group_hash), so group verdicts hold. */
    bool resv_ahead = false;
    for (size_t i = 0; i < s->nresv; i++) resv_ahead |= s->resvs[i].start_us > now_us;

    /* A binary heap of the tenants with jobs left to consider, keyed by
     * their current head under the policy. */
    head_ctx_t hc = {s, now_us};
    sl_heap_clear(&s->act);
    for (size_t i = 0; i < s->ntenants; i++) {
        tenant_t *t = &s->tenants[i];
        sl_heap_clear(&t->gh);
        t->ndl = 0;
        t->gnext = sl__tn_first(t->groot);
        /* With a reservation ahead the nodes a job may use depend on its
         * estimate, which jobs of one group do not share: walk them. */
        t->skip = s->group_skip && !resv_ahead && skip_exact(s, t);
        tenant_settle(s, t);
        uint32_t ti = (uint32_t)i;
        if (t->cur) sl_heap_append(&s->act, &head_heap, &ti);
    }
    sl_heap_build(&s->act, &head_heap, &hc);

    uint64_t resv_id = held ? held->spec.id : 0;
    /* Backfill past a job: the reserved one, or the first blocked job for
     * which no reservation could be computed (none comes after it). */
    uint64_t past_id = resv_id;
    int32_t examined = 0; /* jobs examined since then */
    bool fix_top = false;
    for (;;) {
        if (fix_top) {
            /* The top tenant's head moved on (or its share grew): re-sift. */
            if (!s->tenants[*(uint32_t *)sl_heap_top(&s->act)].cur)
                sl_heap_pop(&s->act, &head_heap, &hc, NULL);
            else
                sl_heap_fix(&s->act, &head_heap, &hc, 0);
            fix_top = false;
        }
        if (sl_heap_count(&s->act) == 0) break;
        if (s->max_starts > 0 && st.started >= s->max_starts) {
            behind_global(s, "not considered: this cycle reached its start limit (%llu)%s",
                          (unsigned long long)s->max_starts, "");
            break;
        }
        if (past_id && s->max_bf_tries > 0 && examined >= s->max_bf_tries) {
            behind_global(s, "not considered: this cycle examined its backfill limit of jobs "
                          "past job %llu%s", (unsigned long long)past_id,
                          s->resv_active ? " (reserved)" : " (no reservation possible)");
            break;
        }
        tenant_t *t = &s->tenants[*(uint32_t *)sl_heap_top(&s->act)];
        sl_job_t *j = t->cur;
        group_t *g = gh_top(t);
        fix_top = true;
        j->reason_epoch = s->epoch;
        if (past_id && j != held) examined++; /* the held job is not past itself */

        int32_t n = j->spec.ntasks, m = job_min(j);
        int32_t qn = sl__quota_cap(s, j, n, m, j->reason, sizeof j->reason);
        if (qn < 0) {
            j->status = SL_WAIT;
            t->behind_epoch = s->epoch;
            t->blk_prio = j->qkey;
            t->blk_submit = j->spec.submit_us;
            t->blk_id = j->spec.id;
            sl__setf(t->behind_reason, sizeof t->behind_reason,
                 "waiting behind job %llu of the same tenant (tenant quota)",
                 (unsigned long long)j->spec.id);
            t->cur = NULL; /* the tenant leaves the heap */
            continue;
        }
        if (j == held) {
            /* Examined first, and reserved for: its failure is its group's
             * verdict (the jobs after it share its shape and counts). */
            group_fail(s, t, g, j, SL_NOFIT, qn, held_raw);
            tenant_settle(s, t);
            continue;
        }

        /* A job of an advance reservation is never kept off the EASY
         * reservation's nodes: it runs on its own nodes, which the EASY
         * head cannot use before that reservation's end, and ends by then
         * (sched_resv.c). */
        int mode = MODE_PLAIN;
        if (s->resv_active && !j->spec.resv) mode = is_short(s, j) ? MODE_SHORT : MODE_LONG;
        attempt_t at;
        int rc = attempt_job(s, &cy, j, qn, m, mode, resv_id, &at);
        if (at.tried) st.tried++;
        if (rc == SL_FIT) {
            /* The group's next candidate: in a V_LONG group only short jobs. */
            sl_job_t *nx = g->verdict == V_LONG ? NULL : gq_job(sl__tn_next(&j->gq));
            sl__start_job(s, j, s->pls, at.k, now_us);
            if (g->verdict == V_LONG) nx = sl__gq_find(g->root, j, s->short_lim);
            g->cur = nx;
            gh_fix_top(t);
            if (t->has_quota) quota_revive(s, t, j);
            tenant_settle(s, t);
            st.started++;
            if (s->resv_active) st.backfilled++;
            note_start(s, &nstarted, j->spec.id);
            continue;
        }
        if (rc == SL_NOFIT && g->noresv_epoch == s->epoch) {
            /* A job of its group (the held one, say) had no reservation
             * possible in this cycle: neither has this one. */
            noresv_reason(j);
            group_fail(s, t, g, j, rc, qn, j->reason);
            tenant_settle(s, t);
            continue;
        }
        if (rc == SL_NOFIT_EVER || s->resv_active || j->spec.resv) {
            /* (A job of an advance reservation takes no EASY reservation:
             * it waits for its window or its own nodes.) */
            group_fail(s, t, g, j, rc, qn, j->reason);
            tenant_settle(s, t);
            continue;
        }

        /* The first blocked job: it takes the hold if a reservation can be
         * computed for it. */
        bool tried = s->backfill->reserve && g->noresv_epoch != s->epoch &&
                     tries < SL__RESERVE_TRIES;
        if (tried) tries++;
        if (tried && reserve(s, j, m, now_us)) {
            hold_give(s, j, now_us);
            resv_id = past_id = j->spec.id;
            st.reserved_job = (int64_t)j->spec.id;
            st.reserved_at_us = s->resv.start_us;
            s->plan_id = j->spec.id;
            s->plan_start_us = s->resv.start_us;
            set_short_lim(s, now_us);
            group_fail(s, t, g, j, rc, qn, j->reason);
            tenant_settle(s, t);
            char r[SL_REASON_MAX];
            sl__setf(r, sizeof r, "%s", j->reason);
            char from[SL__UNIT_BUF];
            sl__setf(j->reason, sizeof j->reason, "reserved from t=%s on %zu nodes; now: %s",
                     sl__fmt_secs(from, sizeof from, s->resv.start_us), s->resv.nnodes, r);
            continue;
        }
        if (!s->backfill->reserve) {
            behind_global(s, "waiting behind job %llu (%s)", (unsigned long long)j->spec.id,
                          "strict order");
            break;
        }
        /* No reservation: the job does not fit even once every running job
         * with an estimate has ended (a node it needs is down, or jobs
         * without any estimate hold what it needs), or this cycle computed
         * as many as it may. Its start time is unknown, so it holds nothing
         * back: the walk goes on, as Slurm's backfill does past a job it
         * cannot plan within its window, and the jobs after it backfill. */
        if (!past_id) past_id = j->spec.id;
        if (tried) {
            g->noresv_epoch = s->epoch;
            noresv_reason(j);
        } else {
            char r[SL_REASON_MAX];
            sl__setf(r, sizeof r, "%s", j->reason);
            sl__setf(j->reason, sizeof j->reason, "no reservation: this cycle tried %d that could "
                     "not be made; now: %s", SL__RESERVE_TRIES, r);
        }
        group_fail(s, t, g, j, rc, qn, j->reason);
        tenant_settle(s, t);
        continue;
    }

    undrain(s);
    clear_reservation(s);
    s->cap_valid = false;
    s->in_cycle = false;
    while (s->ndefer > 0) sl_free(s->gdefer[--s->ndefer]);

    for (size_t i = 0; i < nstarted && on_start; i++) {
        const sl_job_t *j = jobs_find(s, s->started[i]);
        if (j && j->state == SL_JOB_RUNNING && j->start_us == now_us) on_start(ud, j);
    }
    if (stats) *stats = st;
    return st.started;
}

int sl_sched_try_start(sl_sched_t *s, uint64_t id, int64_t now_us) {
    sl_job_t *j = jobs_find(s, id);
    if (!j) return SL_ENOENT;
    if (j->state != SL_JOB_PENDING) return SL_ESTATE;
    s->epoch++;
    see_time(s, now_us);
    j->reason_epoch = s->epoch;
    int32_t n = j->spec.ntasks, m = job_min(j);
    int32_t qn = sl__quota_cap(s, j, n, m, j->reason, sizeof j->reason);
    if (qn < 0) {
        j->status = SL_WAIT;
        return SL_WAIT;
    }
    sl__cluster_set_order_key(s->cl, s->order_key); /* O(1) unless another key was set */
    sl_cycle_t cy = {.cluster = s->cl, .workload = s->wl, .rng = &s->rng, .now_us = now_us,
                     .order_key = s->order_key};
    attempt_t at;
    int rc = attempt_job(s, &cy, j, qn, m, MODE_PLAIN, 0, &at);
    if (rc != SL_FIT) return rc;
    sl__start_job(s, j, s->pls, at.k, now_us);
    return SL_FIT;
}

