/*
 * sched.c - the scheduler: tenants, pending queues, running jobs and the
 * scheduling cycle (include/sluice/sched.h).
 *
 * Data structures.
 *  - Jobs: one heap block each (struct sl_job, sched_internal.h), found by
 *    id through the core's hash table (sluice/hash.h). O(1) expected.
 *  - Pending queues: one per tenant, an intrusive treap ordered by
 *    (priority desc, submit asc, id asc) and heap-ordered by a hash of the
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
 *  2. Placement: sl_place_gang with the full task count; for an elastic job
 *     that does not fit, an upper bound of the tasks that fit (sum over
 *     free-capacity classes of sl_node_fit_count) gives the first count to
 *     try; we then step down linearly (at most 8 tries) and finally try
 *     min_tasks. The bound is exact when the placer is complete, so this
 *     costs one or two gang attempts in practice.
 *  3. A job that fits starts (state RUNNING, tenant usage updated). A job
 *     that can never fit (SL_NOFIT_EVER) is skipped with its reason and does
 *     not block anything. A job that does not fit now is "blocked":
 *       - backfill none: the cycle stops; every job it did not reach shows
 *         "waiting behind job N" (strict order, no starvation);
 *       - backfill easy: the first blocked job gets a reservation
 *         (backfill_easy.c). If none can be computed (it would not fit even
 *         after every job with a finite estimate ended) the cycle stops as
 *         with none: conservative, nothing may pass a job whose start time
 *         is unknown. Otherwise later jobs start if they fit now and either
 *         end by the shadow time (now + their limit <= shadow) or use no
 *         reserved node. A long job whose placement lands on a reserved
 *         node is released and retried with the reserved nodes temporarily
 *         drained (sl_cluster_set_state), so it may still start elsewhere;
 *         drained nodes are restored to up before the cycle returns.
 *         Past the reservation a cycle examines at most max_backfill_tries
 *         jobs (Slurm's bf_max_job_test); the rest are "not considered".
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
 * on_start callbacks run after the cycle's decisions, in start order, for
 * jobs still running; they may call back into the scheduler (finish, cancel,
 * requeue, submit) but must not run another cycle from inside one. The
 * sl_sched_foreach callback must not change the scheduler.
 *
 * sl_sched_foreach(PENDING) merges the tenant queues with the same heap and
 * the shares as they are now, at the latest time the scheduler was given
 * (so "wfq" lists in the order the last cycle used); DONE and CANCELLED jobs
 * come in table order.
 *
 * Randomness: one RNG seeded with the config's seed, and a node order key
 * derived from the same seed (splitmix64 of it) that every cycle carries
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
#include "sluice/alloc.h"
#include "sluice/error.h"
#include "sluice/hash.h"
#include "sluice/heap.h"

#define FCACHE_SIZE 1024 /* failed-shape cache slots (power of two) */
#define FCACHE_PROBES 16
#define ELASTIC_STEPS 8

/* A group's verdict within a cycle. */
enum { V_ALIVE = 0, V_LONG = 1, V_DEAD = 2 };

/*
 * A shape group: the pending jobs of one tenant that ask for the same task
 * shape and the same counts (ntasks, min_tasks). Such jobs meet the same
 * fate in a cycle as long as their tenant's quota allows the same count:
 * once one fails on the full cluster, all later ones fail (the cluster only
 * fills during a cycle); once a long one fits only on reserved nodes, later
 * long ones do too. The cycle therefore walks groups, not jobs, past a
 * failure.
 */
typedef struct sl__group {
    sl__tnode_t ix;           /* the tenant's group index, ordered by head */
    struct sl__group *h_next; /* group hash chain */
    uint64_t hash;
    int32_t tenant, n, m;     /* key: tenant, ntasks, min count, and req */
    sl_task_req_t req;
    sl__tnode_t *root;        /* treap of the pending jobs (job.gq) */
    sl_job_t *head;           /* first of them in queue order */
    size_t npending;
    /* per cycle */
    uint64_t act_epoch;       /* == the cycle's epoch once its head was reached */
    uint64_t dead_epoch;      /* == the cycle's epoch while on the tenant's dead list */
    sl_job_t *cur;            /* next job of the group to examine, or NULL */
    int verdict;              /* V_ALIVE, V_LONG, V_DEAD */
    int32_t vqn;              /* the quota-capped count the verdict holds for */
    /* reasons shared by the jobs a verdict skipped: V_DEAD's (all jobs),
     * and V_LONG's (for the jobs that were long at that cycle) */
    uint64_t r_epoch;
    sl_status_t r_status;
    char reason[SL_REASON_MAX];
    uint64_t l_epoch;
    int64_t l_short_lim;
    char l_reason[SL_REASON_MAX];
} group_t;

typedef struct tenant {
    char name[SL_NAME_MAX];
    int32_t weight;
    sl_res_t quota;
    bool has_quota;
    sl_res_t usage;
    double share;    /* sl_sched_tenant_share, cached while cap_valid */
    size_t npending, nrunning;
    sl__tnode_t *root;  /* treap of pending jobs (job.tq) */
    sl__tnode_t *groot; /* treap of its non-empty groups by head (group.ix) */
    /* per cycle */
    sl_job_t *cur;      /* next job of this tenant to consider */
    sl__tnode_t *gnext; /* next group of the index whose head is not reached */
    sl_heap_t gh;       /* reached groups with jobs left (group_t *), by cur */
    bool skip;          /* group verdicts may skip jobs this cycle (see the cycle) */
    group_t **dl;       /* groups with a verdict (quota tenants only) */
    size_t ndl, dl_cap;
    /* shared reason of the jobs behind a blocked head (the blocker's key) */
    uint64_t behind_epoch;
    int32_t blk_prio;
    int64_t blk_submit;
    uint64_t blk_id;
    char behind_reason[SL_REASON_MAX];
} tenant_t;

typedef struct fcache_entry {
    uint64_t epoch; /* valid iff equal to the scheduler's epoch */
    sl_task_req_t req;
    int32_t n, m;
    bool lng;       /* applies to long backfill candidates only */
    sl_status_t st;
    char reason[SL_REASON_MAX];
} fcache_entry_t;

struct sl_sched {
    sl_cluster_t *cl;
    sl_workload_t *wl;
    const sl_place_policy_t *place;
    const sl_queue_policy_t *queue;
    sl_backfill_kind_t backfill;
    sl_rng_t rng;
    uint64_t order_key;     /* of the node order ties follow (sl_cycle_t.order_key) */
    int64_t default_limit_us;
    int32_t max_starts;
    int32_t max_bf_tries;
    bool track_workload;
    bool group_skip;       /* off only in tests: examine every job (reference) */
    uint64_t n_skips, n_revived; /* verdicts that skipped jobs; resumed groups */

    tenant_t *tenants;
    size_t ntenants, tenants_cap;

    sl_hash_t jobs;   /* every job by id (sl_job_t *, owned) */

    group_t **gtab;   /* group hash (chained), gbuckets a power of two */
    size_t gbuckets, ngroups;
    group_t **gdefer; /* groups emptied during a cycle, freed at its end */
    size_t ndefer, defer_cap;
    bool in_cycle;

    sl_job_t *run_head, *run_tail;
    sl__tnode_t *ends_root; /* running jobs with a finite expected end (job.eq) */
    uint64_t run_seq;
    size_t npending, nrunning;

    uint64_t epoch;        /* bumped by every cycle and try_start */
    uint64_t behind_epoch; /* epoch of the cycle that left jobs unreached */
    char behind_reason[SL_REASON_MAX];
    int64_t clock_us;      /* latest now_us seen (for foreach under wfq) */

    bool cap_valid;        /* cap is a snapshot valid during a cycle */
    sl_res_t cap;

    sl_place_t *pls;       /* SL_MAX_TASKS scratch for the placer */
    fcache_entry_t *fcache;
    sl_heap_t act;         /* tenants with jobs left in a cycle (uint32_t), by head */
    uint64_t *started;     /* ids started by the cycle, in order */
    size_t started_cap;

    sl__easy_t easy;
    int64_t short_lim;     /* with a reservation: a job is short iff lim <= this */
    uint32_t *drained;     /* reserved nodes drained by this cycle */
    size_t ndrained, drained_cap;
};

/* ---- small helpers ---- */

static double share_of(const tenant_t *t, sl_res_t cap);

static void invariant(bool ok) {
    if (!ok) abort(); /* internal state is corrupt: no safe decision exists */
}

static void setf(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void setf(char *buf, size_t len, const char *fmt, ...) {
    if (!buf || len == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
}

static int32_t job_min(const sl_job_t *j) {
    return j->spec.min_tasks > 0 ? j->spec.min_tasks : j->spec.ntasks;
}

static tenant_t *tenant_of(const sl_sched_t *s, const sl_job_t *j) {
    return &s->tenants[j->spec.tenant];
}

/* ---- the job table (sl_hash_t by id) ---- */

static sl_job_t *jobs_find(const sl_sched_t *s, uint64_t id) {
    return sl_hash_find(&s->jobs, id);
}

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

#define tn_first sl__tn_first
#define tn_next sl__tn_next

/* ---- the pending queues: per tenant, and per shape group ---- */

static bool qless(const sl_job_t *a, const sl_job_t *b) {
    if (a->spec.priority != b->spec.priority) return a->spec.priority > b->spec.priority;
    return sl__job_submit_less(a, b);
}

static sl_job_t *tq_job(const sl__tnode_t *n) {
    return n ? (sl_job_t *)((uintptr_t)n - offsetof(sl_job_t, tq)) : NULL;
}

static sl_job_t *gq_job(const sl__tnode_t *n) {
    return n ? (sl_job_t *)((uintptr_t)n - offsetof(sl_job_t, gq)) : NULL;
}

static group_t *ix_group(const sl__tnode_t *n) {
    return n ? (group_t *)((uintptr_t)n - offsetof(group_t, ix)) : NULL;
}

/* Running jobs by expected end, then start order (the running list's). */
static bool eq_less(const sl__tnode_t *a, const sl__tnode_t *b) {
    const sl_job_t *x = sl__end_job(a), *y = sl__end_job(b);
    if (x->end_us != y->end_us) return x->end_us < y->end_us;
    if (x->start_us != y->start_us) return x->start_us < y->start_us;
    return x->run_seq < y->run_seq;
}

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
static sl_job_t *gq_find(const sl__tnode_t *x, const sl_job_t *key, int64_t lim) {
    while (x) {
        sl_job_t *j = gq_job(x);
        if (j->minlim > lim) return NULL;
        if (key && !qless(key, j)) { /* j and its left subtree are not after key */
            x = x->r;
            continue;
        }
        if (x->l) {
            sl_job_t *r = gq_find(x->l, key, lim);
            if (r) return r;
        }
        if (j->lim <= lim) return j;
        x = x->r;
        key = NULL; /* all of j's right subtree comes after key */
    }
    return NULL;
}

/* ---- running list ---- */

static void run_insert(sl_sched_t *s, sl_job_t *j) {
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

static void run_remove(sl_sched_t *s, sl_job_t *j) {
    if (j->end_us != INT64_MAX) tn_remove(&s->ends_root, &j->eq, NULL);
    if (j->r_prev) j->r_prev->r_next = j->r_next;
    else s->run_head = j->r_next;
    if (j->r_next) j->r_next->r_prev = j->r_prev;
    else s->run_tail = j->r_prev;
    j->r_prev = j->r_next = NULL;
}

/* ---- shape groups ---- */

static bool req_eq(const sl_task_req_t *a, const sl_task_req_t *b) {
    return a->cpu_milli == b->cpu_milli && a->mem_bytes == b->mem_bytes && a->gpus == b->gpus &&
           a->gpu_milli == b->gpu_milli && a->gpu_mem_bytes == b->gpu_mem_bytes &&
           a->model_mask == b->model_mask && a->pool == b->pool;
}

static uint64_t req_hash(const sl_task_req_t *r, int32_t n, int32_t m) {
    uint64_t h = sl_mix64((uint64_t)r->cpu_milli);
    h = sl_mix64(h ^ (uint64_t)r->mem_bytes);
    h = sl_mix64(h ^ (uint64_t)r->gpus ^ ((uint64_t)(uint32_t)r->gpu_milli << 32));
    h = sl_mix64(h ^ (uint64_t)r->gpu_mem_bytes);
    h = sl_mix64(h ^ r->model_mask);
    h = sl_mix64(h ^ (uint64_t)(uint32_t)r->pool ^ ((uint64_t)(uint32_t)n << 32));
    return sl_mix64(h ^ (uint64_t)(uint32_t)m);
}

static uint64_t group_hash(const sl_job_t *j) {
    return sl_mix64(req_hash(&j->spec.task, j->spec.ntasks, job_min(j)) ^
                 ((uint64_t)(uint32_t)j->spec.tenant << 17));
}

static bool group_matches(const group_t *g, uint64_t h, const sl_job_t *j) {
    return g->hash == h && g->tenant == j->spec.tenant && g->n == j->spec.ntasks &&
           g->m == job_min(j) && req_eq(&g->req, &j->spec.task);
}

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

static void enqueue(sl_sched_t *s, sl_job_t *j) {
    tenant_t *t = tenant_of(s, j);
    j->state = SL_JOB_PENDING;
    j->enq_epoch = s->epoch;
    int64_t lim = j->spec.time_limit_us > 0 ? j->spec.time_limit_us : s->default_limit_us;
    j->lim = lim > 0 ? lim : INT64_MAX;
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
    t->npending++;
    s->npending++;
}

static void dequeue(sl_sched_t *s, sl_job_t *j) {
    tenant_t *t = tenant_of(s, j);
    group_t *g = j->grp;
    tn_remove(&t->root, &j->tq, NULL);
    if (g->head == j) {
        /* The group's position in the tenant's index follows its head. */
        sl_job_t *nx = gq_job(tn_next(&j->gq));
        tn_remove(&t->groot, &g->ix, NULL);
        g->head = nx;
        if (nx) tn_insert(&t->groot, &g->ix, ix_less, NULL);
    }
    tn_remove(&g->root, &j->gq, gq_fix);
    j->grp = NULL;
    if (--g->npending == 0) group_drop(s, g);
    t->npending--;
    s->npending--;
}

static sl_res_t job_total(const sl_job_t *j, int32_t n) {
    return sl_res_scale(sl_task_req_total(&j->spec.task), n);
}

/* Marks a pending job (already allocated at pls[0..n-1]) running. */
static void start_job(sl_sched_t *s, sl_job_t *j, const sl_place_t *pls, int32_t n, int64_t now_us) {
    tenant_t *t = tenant_of(s, j);
    dequeue(s, j);
    j->pls = sl_xmalloc((size_t)n * sizeof *pls);
    memcpy(j->pls, pls, (size_t)n * sizeof *pls);
    j->nplaced = n;
    j->state = SL_JOB_RUNNING;
    j->status = SL_FIT;
    j->reason[0] = '\0';
    j->start_us = now_us;
    t->usage = sl_res_add(t->usage, job_total(j, n));
    if (s->cap_valid) t->share = share_of(t, s->cap);
    t->nrunning++;
    s->nrunning++;
    run_insert(s, j);
}

/* Releases what a running job holds and takes it off the running list. */
static void stop_job(sl_sched_t *s, sl_job_t *j) {
    tenant_t *t = tenant_of(s, j);
    for (int32_t i = j->nplaced - 1; i >= 0; i--)
        invariant(sl_cluster_release(s->cl, &j->spec.task, &j->pls[i]) == 0);
    t->usage = sl_res_sub(t->usage, job_total(j, j->nplaced));
    t->nrunning--;
    s->nrunning--;
    run_remove(s, j);
    sl_free(j->pls);
    j->pls = NULL;
    j->nplaced = 0;
}

static void release_pls(sl_sched_t *s, const sl_task_req_t *req, const sl_place_t *pls, int32_t n) {
    for (int32_t i = n - 1; i >= 0; i--) invariant(sl_cluster_release(s->cl, req, &pls[i]) == 0);
}

/* ---- config, create, destroy ---- */

/* The node order key of a seed: splitmix64's first output for it (the
 * golden-ratio step, then the mixer), so neighbouring seeds give unrelated
 * orders. */
static uint64_t order_key_of(uint64_t seed) {
    return sl_mix64(seed + UINT64_C(0x9e3779b97f4a7c15));
}

void sl_sched_config_init(sl_sched_config_t *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->queue = "fifo";
    cfg->placement = NULL;
    cfg->backfill = "none";
    cfg->max_backfill_tries = SL_SCHED_MAX_BACKFILL_TRIES_DEFAULT;
}

static void list_names(char *buf, size_t len, const char *const *names, size_t n) {
    size_t off = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && off < len; i++) {
        int w = snprintf(buf + off, len - off, "%s%s", i ? ", " : "", names[i]);
        if (w < 0) break;
        off += (size_t)w;
    }
}

int sl_sched_create(const sl_sched_config_t *cfg, sl_cluster_t *cl, sl_sched_t **out, char *err,
                    size_t errlen) {
    sl_sched_config_t def;
    if (!cfg) {
        sl_sched_config_init(&def);
        cfg = &def;
    }
    if (!cl || !out) {
        setf(err, errlen, "missing cluster or output");
        return SL_EINVAL;
    }
    const char *names[16];
    char known[256];

    const char *qname = cfg->queue ? cfg->queue : "fifo";
    const sl_queue_policy_t *q = sl_queue_policy_find(qname);
    if (!q) {
        const sl_queue_policy_t *const *l = sl_queue_policy_list();
        size_t n = 0;
        for (; l[n] && n < 16; n++) names[n] = l[n]->name;
        list_names(known, sizeof known, names, n);
        setf(err, errlen, "unknown queue \"%s\" (known: %s)", qname, known);
        return SL_EINVAL;
    }
    const char *pname = cfg->placement ? cfg->placement : sl_place_policy_default();
    const sl_place_policy_t *p = sl_place_policy_find(pname);
    if (!p) {
        const sl_place_policy_t *const *l = sl_place_policy_list();
        size_t n = 0;
        for (; l[n] && n < 16; n++) names[n] = l[n]->name;
        list_names(known, sizeof known, names, n);
        setf(err, errlen, "unknown placement \"%s\" (known: %s)", pname, known);
        return SL_EINVAL;
    }
    sl_backfill_kind_t bf = SL_BACKFILL_NONE;
    if (cfg->backfill && sl_backfill_parse(cfg->backfill, &bf) != 0) {
        setf(err, errlen, "unknown backfill \"%s\" (known: none, easy)", cfg->backfill);
        return SL_EINVAL;
    }
    if (cfg->default_time_limit_us < 0) {
        setf(err, errlen, "default_time_limit_us is negative");
        return SL_EINVAL;
    }
    if (cfg->max_starts_per_cycle < 0) {
        setf(err, errlen, "max_starts_per_cycle is negative");
        return SL_EINVAL;
    }
    if (cfg->max_backfill_tries < 0) {
        setf(err, errlen, "max_backfill_tries is negative");
        return SL_EINVAL;
    }

    sl_sched_t *s = sl_xcalloc(1, sizeof *s);
    s->cl = cl;
    sl_workload_create(&s->wl);
    s->place = p;
    s->queue = q;
    s->backfill = bf;
    sl_rng_seed(&s->rng, cfg->seed);
    s->order_key = order_key_of(cfg->seed);
    sl__cluster_set_order_key(cl, s->order_key);
    s->default_limit_us = cfg->default_time_limit_us;
    s->max_starts = cfg->max_starts_per_cycle;
    s->max_bf_tries = cfg->max_backfill_tries;
    s->group_skip = true;
    s->track_workload = cfg->track_workload;
    sl_hash_init(&s->jobs);
    s->pls = sl_xmalloc(SL_MAX_TASKS * sizeof *s->pls);
    s->fcache = sl_xcalloc(FCACHE_SIZE, sizeof *s->fcache);
    s->epoch = 1;
    s->clock_us = INT64_MIN;
    sl__easy_init(&s->easy);
    *out = s;
    return 0;
}

void sl_sched_destroy(sl_sched_t *s) {
    if (!s) return;
    size_t it = 0;
    for (const sl_hash_entry_t *e; (e = sl_hash_next(&s->jobs, &it));) {
        sl_job_t *j = e->val;
        sl_free(j->pls);
        sl_free(j);
    }
    sl_hash_fini(&s->jobs);
    for (size_t i = 0; i < s->gbuckets; i++) {
        for (group_t *g = s->gtab[i], *nx; g; g = nx) {
            nx = g->h_next;
            sl_free(g);
        }
    }
    sl_free(s->gtab);
    sl_free(s->gdefer);
    for (size_t i = 0; i < s->ntenants; i++) {
        sl_heap_fini(&s->tenants[i].gh);
        sl_free(s->tenants[i].dl);
    }
    sl_free(s->tenants);
    sl_free(s->pls);
    sl_free(s->fcache);
    sl_heap_fini(&s->act);
    sl_free(s->started);
    sl_free(s->drained);
    sl__easy_fini(&s->easy);
    sl_workload_destroy(s->wl);
    sl_free(s);
}

sl_cluster_t *sl_sched_cluster(sl_sched_t *s) {
    return s->cl;
}
sl_workload_t *sl_sched_workload(sl_sched_t *s) {
    return s->wl;
}
const sl_place_policy_t *sl_sched_place_policy(const sl_sched_t *s) {
    return s->place;
}
const sl_queue_policy_t *sl_sched_queue_policy(const sl_sched_t *s) {
    return s->queue;
}
sl_backfill_kind_t sl_sched_backfill(const sl_sched_t *s) {
    return s->backfill;
}
sl_rng_t *sl_sched_rng(sl_sched_t *s) {
    return &s->rng;
}

static void see_time(sl_sched_t *s, int64_t now_us) {
    if (now_us > s->clock_us) s->clock_us = now_us;
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

static bool tenant_ok(const sl_sched_t *s, int32_t tenant) {
    return tenant >= 0 && (size_t)tenant < s->ntenants;
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

static double ratio(int64_t used, int64_t cap) {
    return cap > 0 ? (double)used / (double)cap : 0.0;
}

static double share_of(const tenant_t *t, sl_res_t cap) {
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
    return share_of(t, cap);
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

/* ---- jobs ---- */

static int spec_check(const sl_sched_t *s, const sl_job_spec_t *spec, char *err, size_t errlen) {
    if (!spec) {
        setf(err, errlen, "job spec is missing");
        return SL_EINVAL;
    }
    if (!tenant_ok(s, spec->tenant)) {
        setf(err, errlen, "tenant: no tenant with id %d", (int)spec->tenant);
        return SL_ENOENT;
    }
    if (jobs_find(s, spec->id)) {
        setf(err, errlen, "id: job %llu already exists", (unsigned long long)spec->id);
        return SL_EEXIST;
    }
    if (spec->ntasks < 1 || spec->ntasks > SL_MAX_TASKS) {
        setf(err, errlen, "ntasks: %d is outside 1..%d", (int)spec->ntasks, SL_MAX_TASKS);
        return SL_EINVAL;
    }
    if (spec->min_tasks < 0 || spec->min_tasks > spec->ntasks) {
        setf(err, errlen, "min_tasks: %d is outside 0..ntasks (%d)", (int)spec->min_tasks,
             (int)spec->ntasks);
        return SL_EINVAL;
    }
    if (spec->time_limit_us < 0) {
        setf(err, errlen, "time_limit_us: %lld is negative", (long long)spec->time_limit_us);
        return SL_EINVAL;
    }
    char rerr[128];
    if (sl_task_req_check(&spec->task, rerr, sizeof rerr) != 0) {
        setf(err, errlen, "task: %s", rerr);
        return SL_EINVAL;
    }
    return 0;
}

static sl_job_t *job_new(sl_sched_t *s, const sl_job_spec_t *spec) {
    sl_job_t *j = sl_xcalloc(1, sizeof *j);
    j->spec = *spec;
    j->owner = s;
    j->start_us = -1;
    j->status = SL_SKIP;
    j->tq.prio = j->gq.prio = j->eq.prio = sl_mix64(spec->id ^ UINT64_C(0x5851f42d4c957f2d));
    sl_hash_add(&s->jobs, spec->id, j);
    if (s->track_workload)
        sl_workload_add(s->wl, &spec->task, spec->ntasks);
    return j;
}

int sl_sched_submit(sl_sched_t *s, const sl_job_spec_t *spec, char *err, size_t errlen) {
    int rc = spec_check(s, spec, err, errlen);
    if (rc) return rc;
    enqueue(s, job_new(s, spec));
    return 0;
}

const sl_job_t *sl_sched_job(const sl_sched_t *s, uint64_t id) {
    return jobs_find(s, id);
}

int sl_sched_cancel(sl_sched_t *s, uint64_t id, int64_t now_us) {
    sl_job_t *j = jobs_find(s, id);
    if (!j) return SL_ENOENT;
    see_time(s, now_us);
    if (j->state == SL_JOB_PENDING) dequeue(s, j);
    else if (j->state == SL_JOB_RUNNING) stop_job(s, j);
    else return SL_ESTATE;
    j->state = SL_JOB_CANCELLED;
    setf(j->reason, sizeof j->reason, "cancelled at %lld", (long long)now_us);
    return 0;
}

int sl_sched_finish(sl_sched_t *s, uint64_t id, int64_t now_us) {
    sl_job_t *j = jobs_find(s, id);
    if (!j) return SL_ENOENT;
    if (j->state != SL_JOB_RUNNING) return SL_ESTATE;
    see_time(s, now_us);
    stop_job(s, j);
    j->state = SL_JOB_DONE;
    j->reason[0] = '\0';
    return 0;
}

int sl_sched_requeue(sl_sched_t *s, uint64_t id, int64_t now_us) {
    sl_job_t *j = jobs_find(s, id);
    if (!j) return SL_ENOENT;
    if (j->state != SL_JOB_RUNNING) return SL_ESTATE;
    see_time(s, now_us);
    stop_job(s, j);
    j->start_us = -1;
    j->status = SL_SKIP;
    setf(j->reason, sizeof j->reason, "requeued at %lld", (long long)now_us);
    j->reason_epoch = s->epoch;
    enqueue(s, j);
    return 0;
}

int sl_sched_adopt(sl_sched_t *s, const sl_job_spec_t *spec, const sl_place_t *pls, int32_t n,
                   int64_t start_us, char *err, size_t errlen) {
    int rc = spec_check(s, spec, err, errlen);
    if (rc) return rc;
    int32_t m = spec->min_tasks > 0 ? spec->min_tasks : spec->ntasks;
    if (!pls || n < m || n > spec->ntasks) {
        setf(err, errlen, "placed tasks: %d is outside %d..%d", (int)n, (int)m, (int)spec->ntasks);
        return SL_EINVAL;
    }
    if (start_us < 0) {
        setf(err, errlen, "start_us: %lld is negative", (long long)start_us);
        return SL_EINVAL;
    }
    for (int32_t i = 0; i < n; i++) {
        rc = sl_cluster_alloc(s->cl, &spec->task, &pls[i]);
        if (rc == 0) continue;
        release_pls(s, &spec->task, pls, i);
        if (rc == SL_ENOSPC) {
            setf(err, errlen, "task %d: node %u lacks free capacity", (int)i, (unsigned)pls[i].node);
            return SL_ENOSPC;
        }
        setf(err, errlen, "task %d: placement does not match the node or request (%s)", (int)i,
             sl_strerror(rc));
        return SL_EINVAL;
    }
    sl_job_t *j = job_new(s, spec);
    tenant_t *t = tenant_of(s, j);
    j->pls = sl_xmalloc((size_t)n * sizeof *pls);
    memcpy(j->pls, pls, (size_t)n * sizeof *pls);
    j->nplaced = n;
    j->state = SL_JOB_RUNNING;
    j->status = SL_FIT;
    j->start_us = start_us;
    t->usage = sl_res_add(t->usage, job_total(j, n));
    t->nrunning++;
    s->nrunning++;
    run_insert(s, j);
    return 0;
}

int sl_sched_forget(sl_sched_t *s, uint64_t id) {
    sl_job_t *j = jobs_find(s, id);
    if (!j) return SL_ENOENT;
    if (j->state == SL_JOB_PENDING || j->state == SL_JOB_RUNNING) return SL_ESTATE;
    sl_hash_remove(&s->jobs, id, j);
    sl_free(j->pls);
    sl_free(j);
    return 0;
}

size_t sl_sched_pending_count(const sl_sched_t *s) {
    return s->npending;
}

size_t sl_sched_running_count(const sl_sched_t *s) {
    return s->nrunning;
}

/* ---- shared reasons ---- */

/* Is job j after the tenant's quota-blocked head in the tenant's order? */
static bool after_blocker(const tenant_t *t, const sl_job_t *j) {
    if (t->blk_prio != j->spec.priority) return t->blk_prio > j->spec.priority;
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

/* ---- placement of one job ---- */

/* Tasks of req that fit now, summed over classes; stops at cap. */
static int32_t fit_bound(const sl_sched_t *s, const sl_task_req_t *req, int32_t cap) {
    int64_t sum = 0;
    size_t nc = sl_cluster_class_count(s->cl);
    for (size_t i = 0; i < nc && sum < cap; i++)
        sum += (int64_t)sl_cluster_class_size(s->cl, i) *
               sl_node_fit_count(sl_cluster_class_rep(s->cl, i), req, cap);
    return sum < cap ? (int32_t)sum : cap;
}

/*
 * Places between m and n tasks of j (the most that fit); on SL_FIT the
 * resources are allocated at s->pls[0..*k-1]. Otherwise the reason goes to
 * reason and the status of the attempt at m tasks is returned.
 */
static int place_range(sl_sched_t *s, sl_cycle_t *cy, const sl_job_t *j, int32_t n, int32_t m,
                       int32_t *k, char *reason, size_t rlen) {
    const sl_task_req_t *req = &j->spec.task;
    int rc = sl_place_gang(s->place, cy, s->cl, req, n, s->pls, reason, rlen);
    if (rc == SL_FIT) {
        *k = n;
        return SL_FIT;
    }
    if (m >= n) return rc;
    int32_t c = fit_bound(s, req, n - 1);
    for (int steps = 0; c > m && steps < ELASTIC_STEPS; c--, steps++) {
        if (sl_place_gang(s->place, cy, s->cl, req, c, s->pls, NULL, 0) == SL_FIT) {
            *k = c;
            return SL_FIT;
        }
    }
    char r2[SL_REASON_MAX];
    rc = sl_place_gang(s->place, cy, s->cl, req, m, s->pls, r2, sizeof r2);
    if (rc == SL_FIT) {
        *k = m;
        return SL_FIT;
    }
    setf(reason, rlen, "elastic: not even %d of %d tasks fit: %s", (int)m, (int)n, r2);
    return rc;
}

/* The count the tenant's quota allows (<= n), or -1 with a reason if not even m. */
static int32_t quota_cap(const sl_sched_t *s, const sl_job_t *j, int32_t n, int32_t m, char *reason,
                         size_t rlen) {
    const tenant_t *t = tenant_of(s, j);
    sl_res_t per = sl_task_req_total(&j->spec.task);
    const int64_t q[3] = {t->quota.cpu_milli, t->quota.mem_bytes, t->quota.gpu_milli};
    const int64_t u[3] = {t->usage.cpu_milli, t->usage.mem_bytes, t->usage.gpu_milli};
    const int64_t d[3] = {per.cpu_milli, per.mem_bytes, per.gpu_milli};
    static const char *const what[3] = {"cpu_milli", "mem_bytes", "gpu_milli"};
    int32_t k = n;
    for (int i = 0; i < 3; i++) {
        if (q[i] <= 0 || d[i] <= 0) continue;
        int64_t room = q[i] - u[i];
        int64_t fit = room < 0 ? 0 : room / d[i];
        if (fit < m) {
            setf(reason, rlen, "tenant %s quota: %s in use %lld + job %lld > quota %lld", t->name,
                 what[i], (long long)u[i], (long long)(d[i] * m), (long long)q[i]);
            return -1;
        }
        if (fit < k) k = (int32_t)fit;
    }
    return k;
}

/* ---- failed-shape cache (valid within one epoch) ---- */

static size_t fcache_home(const sl_task_req_t *r, int32_t n, int32_t m) {
    return (size_t)req_hash(r, n, m) & (FCACHE_SIZE - 1);
}

static const fcache_entry_t *fcache_find(const sl_sched_t *s, const sl_task_req_t *r, int32_t n,
                                         int32_t m, bool lng) {
    size_t i = fcache_home(r, n, m);
    for (int p = 0; p < FCACHE_PROBES; p++, i = (i + 1) & (FCACHE_SIZE - 1)) {
        const fcache_entry_t *e = &s->fcache[i];
        if (e->epoch != s->epoch) return NULL;
        if (e->n == n && e->m == m && (!e->lng || lng) && req_eq(&e->req, r)) return e;
    }
    return NULL;
}

static void fcache_put(sl_sched_t *s, const sl_task_req_t *r, int32_t n, int32_t m, bool lng,
                       sl_status_t st, const char *reason) {
    size_t i = fcache_home(r, n, m);
    for (int p = 0; p < FCACHE_PROBES; p++, i = (i + 1) & (FCACHE_SIZE - 1)) {
        fcache_entry_t *e = &s->fcache[i];
        if (e->epoch == s->epoch) continue;
        e->epoch = s->epoch;
        e->req = *r;
        e->n = n;
        e->m = m;
        e->lng = lng;
        e->st = st;
        setf(e->reason, sizeof e->reason, "%s", reason);
        return;
    }
}

/* ---- draining the reserved nodes for long backfill jobs ---- */

static void drain_reserved(sl_sched_t *s) {
    for (size_t i = 0; i < s->easy.nrnodes; i++) {
        uint32_t id = s->easy.rnodes[i];
        const sl_node_t *n = sl_cluster_node(s->cl, id);
        if (!n || n->state != SL_NODE_UP) continue;
        if (s->ndrained == s->drained_cap) {
            s->drained_cap = s->drained_cap ? s->drained_cap * 2 : 16;
            s->drained = sl_xrealloc(s->drained, s->drained_cap * sizeof *s->drained);
        }
        invariant(sl_cluster_set_state(s->cl, id, SL_NODE_DRAINING) == 0);
        s->drained[s->ndrained++] = id;
    }
}

static void undrain(sl_sched_t *s) {
    while (s->ndrained > 0)
        invariant(sl_cluster_set_state(s->cl, s->drained[--s->ndrained], SL_NODE_UP) == 0);
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

    const fcache_entry_t *fe = fcache_find(s, req, n, m, mode == MODE_LONG);
    if (fe) {
        j->status = fe->st;
        memcpy(j->reason, fe->reason, strlen(fe->reason) + 1); /* both SL_REASON_MAX */
        return fe->st;
    }
    a->tried = true;

    bool drained_tried = false;
    if (mode == MODE_LONG && s->ndrained > 0) {
        /* Reserved nodes are drained: anything found avoids them. */
        rc = place_range(s, cy, j, n, m, &a->k, reason, sizeof reason);
        if (rc == SL_FIT) return SL_FIT;
        drained_tried = true;
        undrain(s);
    } else if (mode != MODE_LONG) {
        undrain(s);
    }

    rc = place_range(s, cy, j, n, m, &a->k, reason, sizeof reason);
    if (rc == SL_FIT) {
        if (mode != MODE_LONG || !sl__easy_touches(&s->easy, s->pls, a->k)) return SL_FIT;
        /* It would delay the reservation here; try again off the reserved nodes. */
        release_pls(s, req, s->pls, a->k);
        if (!drained_tried) {
            drain_reserved(s);
            rc = place_range(s, cy, j, n, m, &a->k, reason, sizeof reason);
            if (rc == SL_FIT) return SL_FIT;
        }
        j->status = SL_WAIT;
        setf(j->reason, sizeof j->reason,
             "fits only on nodes reserved for job %llu from %lld and would run past then",
             (unsigned long long)resv_id, (long long)s->easy.shadow_us);
        fcache_put(s, req, n, m, true, SL_WAIT, j->reason);
        return SL_WAIT;
    }
    j->status = rc == SL_NOFIT_EVER ? SL_NOFIT_EVER : SL_NOFIT;
    setf(j->reason, sizeof j->reason, "%s", reason);
    fcache_put(s, req, n, m, false, j->status, j->reason);
    return j->status;
}

static void behind_global(sl_sched_t *s, const char *fmt, unsigned long long id, const char *why) {
    s->behind_epoch = s->epoch;
    setf(s->behind_reason, sizeof s->behind_reason, fmt, id, why);
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
        while (t->gnext && ix_group(t->gnext)->act_epoch == s->epoch) t->gnext = tn_next(t->gnext);
        if (!t->gnext) break;
        group_t *g = ix_group(t->gnext);
        if (sl_heap_count(&t->gh) && !qless(g->head, gh_top(t)->cur)) break;
        g->act_epoch = s->epoch;
        g->cur = g->head;
        g->verdict = V_ALIVE;
        t->gnext = tn_next(t->gnext);
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
        g->cur = gq_job(tn_next(&j->gq));
        gh_fix_top(t);
        return;
    }
    const sl_job_t *nx = gq_job(tn_next(&j->gq));
    g->vqn = qn;
    if (rc == SL_WAIT) {
        g->l_epoch = s->epoch;
        g->l_short_lim = s->short_lim;
        memcpy(g->l_reason, reason, strlen(reason) + 1); /* both SL_REASON_MAX */
        g->verdict = V_LONG;
        g->cur = gq_find(g->root, j, s->short_lim);
    } else {
        g->r_epoch = s->epoch;
        g->r_status = rc;
        memcpy(g->reason, reason, strlen(reason) + 1);
        g->verdict = V_DEAD;
        g->cur = NULL;
        /* If a long candidate of this shape (another tenant's) was already
         * refused for the reservation's sake, the failed-shape cache gives
         * later long jobs that answer first: so do we. */
        const fcache_entry_t *fe = s->easy.active ? fcache_find(s, &g->req, qn, g->m, true) : NULL;
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
        int32_t qn = g->npending ? quota_cap(s, g->head, g->n, g->m, scratch, sizeof scratch)
                                 : g->vqn;
        if (qn == g->vqn) {
            i++;
            continue;
        }
        t->dl[i] = t->dl[--t->ndl];
        g->dead_epoch = 0;
        bool in_heap = g->cur != NULL; /* a V_LONG group with short jobs left */
        g->verdict = V_ALIVE;
        g->cur = gq_find(g->root, j, INT64_MAX); /* never later than before */
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
 * job's submit time and id; only "priority" also through priorities. So
 * the orders agree under "priority", and under the others when all the
 * tenant's pending jobs share one priority. Otherwise a skipped job (a
 * high-priority head, say) would have held its tenant back in the merge,
 * and the tenant's jobs are examined one by one, as before. O(log n).
 */
static bool skip_exact(const sl_sched_t *s, const tenant_t *t) {
    if (s->queue == &sl__queue_priority || !t->root) return true;
    const sl__tnode_t *last = t->root;
    while (last->r) last = last->r;
    return tq_job(tn_first(t->root))->spec.priority == tq_job(last)->spec.priority;
}

void sl__sched_set_group_skip(sl_sched_t *s, bool on) {
    s->group_skip = on;
}

void sl__sched_group_counters(const sl_sched_t *s, uint64_t *skips, uint64_t *revived) {
    *skips = s->n_skips;
    *revived = s->n_revived;
}

int sl_sched_cycle(sl_sched_t *s, int64_t now_us, sl_start_fn on_start, void *ud,
                   sl_cycle_stats_t *stats) {
    sl_cycle_stats_t st = {0, 0, 0, -1, -1};
    s->epoch++;
    see_time(s, now_us);
    sl_cluster_capacity(s->cl, &s->cap, NULL);
    for (size_t i = 0; i < s->ntenants; i++) s->tenants[i].share = share_of(&s->tenants[i], s->cap);
    s->cap_valid = true;
    s->in_cycle = true;
    sl__cluster_set_order_key(s->cl, s->order_key); /* O(1) unless another key was set */
    sl_cycle_t cy = {.cluster = s->cl, .workload = s->wl, .rng = &s->rng, .now_us = now_us,
                     .order_key = s->order_key};
    sl__easy_clear(&s->easy);
    size_t nstarted = 0;

    /* A binary heap of the tenants with jobs left to consider, keyed by
     * their current head under the policy. */
    head_ctx_t hc = {s, now_us};
    sl_heap_clear(&s->act);
    for (size_t i = 0; i < s->ntenants; i++) {
        tenant_t *t = &s->tenants[i];
        sl_heap_clear(&t->gh);
        t->ndl = 0;
        t->gnext = tn_first(t->groot);
        t->skip = s->group_skip && skip_exact(s, t);
        tenant_settle(s, t);
        uint32_t ti = (uint32_t)i;
        if (t->cur) sl_heap_append(&s->act, &head_heap, &ti);
    }
    sl_heap_build(&s->act, &head_heap, &hc);

    uint64_t resv_id = 0;
    int32_t examined = 0; /* jobs examined since the reservation */
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
        if (s->easy.active && s->max_bf_tries > 0 && examined >= s->max_bf_tries) {
            behind_global(s, "not considered: this cycle examined its backfill limit of jobs "
                          "past job %llu%s", (unsigned long long)resv_id, " (reserved)");
            break;
        }
        tenant_t *t = &s->tenants[*(uint32_t *)sl_heap_top(&s->act)];
        sl_job_t *j = t->cur;
        group_t *g = gh_top(t);
        fix_top = true;
        j->reason_epoch = s->epoch;
        if (s->easy.active) examined++;

        int32_t n = j->spec.ntasks, m = job_min(j);
        int32_t qn = quota_cap(s, j, n, m, j->reason, sizeof j->reason);
        if (qn < 0) {
            j->status = SL_WAIT;
            t->behind_epoch = s->epoch;
            t->blk_prio = j->spec.priority;
            t->blk_submit = j->spec.submit_us;
            t->blk_id = j->spec.id;
            setf(t->behind_reason, sizeof t->behind_reason,
                 "waiting behind job %llu of the same tenant (tenant quota)",
                 (unsigned long long)j->spec.id);
            t->cur = NULL; /* the tenant leaves the heap */
            continue;
        }

        int mode = MODE_PLAIN;
        if (s->easy.active) mode = is_short(s, j) ? MODE_SHORT : MODE_LONG;
        attempt_t at;
        int rc = attempt_job(s, &cy, j, qn, m, mode, resv_id, &at);
        if (at.tried) st.tried++;
        if (rc == SL_FIT) {
            /* The group's next candidate: in a V_LONG group only short jobs. */
            sl_job_t *nx = g->verdict == V_LONG ? NULL : gq_job(tn_next(&j->gq));
            start_job(s, j, s->pls, at.k, now_us);
            if (g->verdict == V_LONG) nx = gq_find(g->root, j, s->short_lim);
            g->cur = nx;
            gh_fix_top(t);
            if (t->has_quota) quota_revive(s, t, j);
            tenant_settle(s, t);
            st.started++;
            if (s->easy.active) st.backfilled++;
            if (nstarted == s->started_cap) {
                s->started_cap = s->started_cap ? s->started_cap * 2 : 64;
                s->started = sl_xrealloc(s->started, s->started_cap * sizeof *s->started);
            }
            s->started[nstarted++] = j->spec.id;
            continue;
        }
        if (rc == SL_NOFIT_EVER || s->easy.active) {
            group_fail(s, t, g, j, rc, qn, j->reason);
            tenant_settle(s, t);
            continue;
        }

        /* The first blocked job. */
        if (s->backfill == SL_BACKFILL_EASY &&
            sl__easy_reserve(&s->easy, s->cl, s->ends_root, &j->spec.task, m, now_us)) {
            resv_id = j->spec.id;
            st.reserved_job = (int64_t)j->spec.id;
            st.reserved_at_us = s->easy.shadow_us;
            if (__builtin_sub_overflow(s->easy.shadow_us, now_us, &s->short_lim) ||
                s->short_lim == INT64_MAX)
                s->short_lim = INT64_MAX - 1;
            group_fail(s, t, g, j, rc, qn, j->reason);
            tenant_settle(s, t);
            char r[SL_REASON_MAX];
            setf(r, sizeof r, "%s", j->reason);
            setf(j->reason, sizeof j->reason, "reserved from %lld on %zu nodes; now: %s",
                 (long long)s->easy.shadow_us, s->easy.nrnodes, r);
            continue;
        }
        if (s->backfill == SL_BACKFILL_EASY) {
            char r[SL_REASON_MAX];
            setf(r, sizeof r, "%s", j->reason);
            setf(j->reason, sizeof j->reason, "no reservation possible (running jobs without "
                 "time limits); now: %s", r);
        }
        behind_global(s, "waiting behind job %llu (%s)", (unsigned long long)j->spec.id,
                      s->backfill == SL_BACKFILL_EASY ? "no reservation possible" : "strict order");
        break;
    }

    undrain(s);
    sl__easy_clear(&s->easy);
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
    int32_t qn = quota_cap(s, j, n, m, j->reason, sizeof j->reason);
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
    start_job(s, j, s->pls, at.k, now_us);
    return SL_FIT;
}

/* ---- iteration and checks ---- */

/* foreach's heap of tenant indices (size_t) by their cursors. */
typedef struct fe_ctx {
    const sl_sched_t *s;
    const sl_job_t **cur;
    int64_t now_us;
} fe_ctx_t;

static bool fe_less(void *ctx, const void *a, const void *b) {
    const fe_ctx_t *c = ctx;
    return c->s->queue->less(c->s, c->cur[*(const size_t *)a], c->cur[*(const size_t *)b], c->now_us);
}

static const sl_heap_type_t fe_heap = {sizeof(size_t), fe_less, NULL};

void sl_sched_foreach(const sl_sched_t *s, sl_job_state_t st, sl_job_fn fn, void *ud) {
    if (st == SL_JOB_RUNNING) {
        for (const sl_job_t *j = s->run_head; j;) {
            const sl_job_t *next = j->r_next;
            if (fn(ud, j)) return;
            j = next;
        }
        return;
    }
    if (st != SL_JOB_PENDING) {
        size_t it = 0;
        for (const sl_hash_entry_t *e; (e = sl_hash_next(&s->jobs, &it));) {
            const sl_job_t *j = e->val;
            if (j->state == st && fn(ud, j)) return;
        }
        return;
    }
    /* Merge the tenant queues under the policy, as a cycle would order them
     * with the shares as they are now: a heap of tenant cursors. */
    size_t cap = s->ntenants ? s->ntenants : 1;
    const sl_job_t **cur = sl_xcalloc(cap, sizeof *cur);
    fe_ctx_t fc = {s, cur, s->clock_us == INT64_MIN ? 0 : s->clock_us};
    sl_heap_t heap;
    sl_heap_init(&heap);
    for (size_t i = 0; i < s->ntenants; i++) {
        cur[i] = tq_job(tn_first(s->tenants[i].root));
        if (cur[i]) sl_heap_append(&heap, &fe_heap, &i);
    }
    sl_heap_build(&heap, &fe_heap, &fc);
    while (sl_heap_count(&heap) > 0) {
        size_t ti = *(size_t *)sl_heap_top(&heap);
        const sl_job_t *j = cur[ti];
        cur[ti] = tq_job(tn_next(&j->tq));
        if (!cur[ti]) sl_heap_pop(&heap, &fe_heap, &fc, NULL);
        else sl_heap_fix(&heap, &fe_heap, &fc, 0);
        if (fn(ud, j)) break;
    }
    sl_heap_fini(&heap);
    sl_free(cur);
}

/* Links and heap order of one treap; its in-order nodes go to fn. */
static int check_tn(const sl__tnode_t *root, size_t limit, int (*fn)(void *, const sl__tnode_t *),
                    void *ud) {
    size_t n = 0;
    if (root && root->up) return SL_ESTATE;
    for (const sl__tnode_t *x = tn_first((sl__tnode_t *)(uintptr_t)root); x; x = tn_next(x)) {
        if (x->l && (x->l->up != x || x->l->prio > x->prio)) return SL_ESTATE;
        if (x->r && (x->r->up != x || x->r->prio > x->prio)) return SL_ESTATE;
        if (++n > limit || fn(ud, x)) return SL_ESTATE;
    }
    return 0;
}

typedef struct check_ctx {
    const sl_sched_t *s;
    int32_t tid;
    const group_t *g;
    const sl_job_t *prev;
    const group_t *gprev;
    size_t n, ngroups;
} check_ctx_t;

static int check_tq_job(void *ud, const sl__tnode_t *x) {
    check_ctx_t *c = ud;
    const sl_job_t *j = tq_job(x);
    if (j->state != SL_JOB_PENDING || j->spec.tenant != c->tid || !j->grp) return SL_ESTATE;
    if (c->prev && !qless(c->prev, j)) return SL_ESTATE;
    if (jobs_find(c->s, j->spec.id) != j) return SL_ESTATE;
    c->prev = j;
    c->n++;
    return 0;
}

static int check_gq_job(void *ud, const sl__tnode_t *x) {
    check_ctx_t *c = ud;
    const sl_job_t *j = gq_job(x);
    const group_t *g = c->g;
    if (j->state != SL_JOB_PENDING || j->grp != g || !group_matches(g, g->hash, j)) return SL_ESTATE;
    if (c->prev ? !qless(c->prev, j) : g->head != j) return SL_ESTATE;
    int64_t lim = j->spec.time_limit_us > 0 ? j->spec.time_limit_us : c->s->default_limit_us;
    if (j->lim != (lim > 0 ? lim : INT64_MAX)) return SL_ESTATE;
    int64_t m = j->lim;
    if (x->l && gq_job(x->l)->minlim < m) m = gq_job(x->l)->minlim;
    if (x->r && gq_job(x->r)->minlim < m) m = gq_job(x->r)->minlim;
    if (j->minlim != m) return SL_ESTATE;
    c->prev = j;
    c->n++;
    return 0;
}

static int check_group(void *ud, const sl__tnode_t *x) {
    check_ctx_t *c = ud;
    const group_t *g = ix_group(x);
    if (g->tenant != c->tid || !g->head || g->npending == 0) return SL_ESTATE;
    if (c->gprev && !qless(c->gprev->head, g->head)) return SL_ESTATE;
    if (g->hash != group_hash(g->head)) return SL_ESTATE;
    check_ctx_t gc = {.s = c->s, .tid = c->tid, .g = g};
    if (check_tn(g->root, g->npending, check_gq_job, &gc) || gc.n != g->npending) return SL_ESTATE;
    c->gprev = g;
    c->n += g->npending;
    c->ngroups++;
    return 0;
}

static int check_end_job(void *ud, const sl__tnode_t *x) {
    check_ctx_t *c = ud;
    const sl_job_t *j = sl__end_job(x);
    if (j->state != SL_JOB_RUNNING || j->end_us == INT64_MAX ||
        j->end_us != sl__job_expected_end(j, c->s->default_limit_us))
        return SL_ESTATE;
    if (c->prev && !eq_less(&c->prev->eq, x)) return SL_ESTATE;
    c->prev = j;
    c->n++;
    return 0;
}

static int check_treap(const sl_sched_t *s, const tenant_t *t, int32_t tid, size_t *ngroups) {
    check_ctx_t c = {.s = s, .tid = tid};
    if (check_tn(t->root, sl_hash_count(&s->jobs), check_tq_job, &c) || c.n != t->npending) return SL_ESTATE;
    check_ctx_t gc = {.s = s, .tid = tid};
    if (check_tn(t->groot, sl_hash_count(&s->jobs), check_group, &gc) || gc.n != t->npending) return SL_ESTATE;
    *ngroups += gc.ngroups;
    return 0;
}

/* Per-node usage recomputed from the running jobs, against the cluster. */
static int check_nodes(const sl_sched_t *s) {
    size_t nn = sl_cluster_node_count(s->cl);
    typedef struct {
        int64_t cpu, mem;
        int32_t milli[SL_MAX_GPUS_PER_NODE];
        int64_t gmem[SL_MAX_GPUS_PER_NODE];
        uint32_t whole;
    } use_t;
    use_t *u = sl_xcalloc(nn ? nn : 1, sizeof *u);
    int rc = SL_ESTATE;
    for (const sl_job_t *j = s->run_head; j; j = j->r_next) {
        const sl_task_req_t *r = &j->spec.task;
        for (int32_t i = 0; i < j->nplaced; i++) {
            const sl_place_t *pl = &j->pls[i];
            if (pl->node >= nn) goto out;
            use_t *x = &u[pl->node];
            x->cpu += r->cpu_milli;
            x->mem += r->mem_bytes;
            for (int g = 0; g < SL_MAX_GPUS_PER_NODE; g++) {
                if (!(pl->gpu_mask & (1u << g))) continue;
                if (r->gpus > 0) {
                    if (x->whole & (1u << g)) goto out;
                    x->whole |= 1u << g;
                } else {
                    x->milli[g] += r->gpu_milli;
                    x->gmem[g] += r->gpu_mem_bytes;
                }
            }
        }
    }
    for (uint32_t id = 0; id < nn; id++) {
        const sl_node_t *n = sl_cluster_node(s->cl, id);
        const use_t *x = &u[id];
        if (n->cpu_free != n->cpu_total - x->cpu || n->mem_free != n->mem_total - x->mem) goto out;
        if (x->whole >> n->ngpus) goto out;
        for (int g = 0; g < n->ngpus; g++) {
            if (x->whole & (1u << g)) {
                if (x->milli[g] || x->gmem[g] || n->gpu_free[g] != 0 || n->gpu_mem_free[g] != 0)
                    goto out;
            } else if (n->gpu_free[g] != SL_GPU_MILLI - x->milli[g] ||
                       n->gpu_mem_free[g] != n->gpu_mem_total - x->gmem[g]) {
                goto out;
            }
        }
    }
    rc = 0;
out:
    sl_free(u);
    return rc;
}

int sl_sched_check(const sl_sched_t *s) {
    size_t count = 0, npend = 0, nrun = 0;
    size_t it = 0;
    for (const sl_hash_entry_t *e; (e = sl_hash_next(&s->jobs, &it));) {
        const sl_job_t *j = e->val;
        count++;
        if (jobs_find(s, j->spec.id) != j || j->owner != s) return SL_ESTATE;
        if (!tenant_ok(s, j->spec.tenant)) return SL_ESTATE;
        if (j->state == SL_JOB_PENDING) npend++;
        if (j->state == SL_JOB_RUNNING) nrun++;
        if (j->state != SL_JOB_RUNNING && (j->nplaced != 0 || j->pls)) return SL_ESTATE;
    }
    if (count != sl_hash_count(&s->jobs) || npend != s->npending || nrun != s->nrunning) return SL_ESTATE;

    size_t tp = 0, ng = 0, nh = 0;
    for (size_t i = 0; i < s->ntenants; i++) {
        if (check_treap(s, &s->tenants[i], (int32_t)i, &ng)) return SL_ESTATE;
        tp += s->tenants[i].npending;
    }
    if (tp != s->npending) return SL_ESTATE;
    /* Every hashed group is indexed (and so non-empty), in its bucket. */
    for (size_t i = 0; i < s->gbuckets; i++)
        for (const group_t *g = s->gtab[i]; g; g = g->h_next, nh++)
            if ((g->hash & (s->gbuckets - 1)) != i || nh >= s->ngroups) return SL_ESTATE;
    if (ng != s->ngroups || nh != s->ngroups) return SL_ESTATE;

    /* Running list: order, links, and usage per tenant. */
    sl_res_t *use = sl_xcalloc(s->ntenants ? s->ntenants : 1, sizeof *use);
    size_t *cnt = sl_xcalloc(s->ntenants ? s->ntenants : 1, sizeof *cnt);
    int rc = SL_ESTATE;
    size_t r = 0;
    const sl_job_t *prev = NULL;
    for (const sl_job_t *j = s->run_head; j; prev = j, j = j->r_next) {
        if (j->state != SL_JOB_RUNNING || j->r_prev != prev || ++r > nrun) goto out;
        if (prev && prev->start_us > j->start_us) goto out;
        int32_t m = job_min(j);
        if (j->nplaced < m || j->nplaced > j->spec.ntasks || !j->pls) goto out;
        use[j->spec.tenant] = sl_res_add(use[j->spec.tenant], job_total(j, j->nplaced));
        cnt[j->spec.tenant]++;
    }
    if (r != nrun || s->run_tail != prev) goto out;
    size_t nfinite = 0;
    for (const sl_job_t *j = s->run_head; j; j = j->r_next) nfinite += j->end_us != INT64_MAX;
    check_ctx_t ec = {.s = s};
    if (check_tn(s->ends_root, nrun, check_end_job, &ec) || ec.n != nfinite) goto out;
    for (size_t i = 0; i < s->ntenants; i++) {
        const tenant_t *t = &s->tenants[i];
        if (memcmp(&use[i], &t->usage, sizeof use[i]) != 0 || cnt[i] != t->nrunning) goto out;
    }
    if (sl_cluster_check(s->cl) != 0) goto out;
    if (check_nodes(s) != 0) goto out;
    rc = 0;
out:
    sl_free(use);
    sl_free(cnt);
    return rc;
}
