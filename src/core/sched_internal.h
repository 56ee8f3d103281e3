/*
 * sched_internal.h - the scheduler's private types, shared by sched.c, job.c
 * and the queue policies (src/core/policy/queue_*.c). Not installed.
 *
 * A job is one heap block holding its spec, its state and intrusive links:
 * two treap nodes while pending (its tenant's queue, and its shape group's
 * queue, see sched.c) and a list node while running (start order); the job
 * table is the core's hash table by id (sluice/hash.h). Enqueueing therefore
 * allocates nothing beyond the job (and, for the first job of a new shape,
 * its group).
 */
#ifndef SLUICE_SCHED_INTERNAL_H
#define SLUICE_SCHED_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice/job.h"
#include "sluice/policy.h"
#include "sluice/sched.h"

/* An intrusive treap node (sched.c): ordered by a caller's `less`,
 * heap-ordered by prio (a hash of the owner's id: deterministic). */
typedef struct sl__tnode {
    struct sl__tnode *l, *r, *up;
    uint64_t prio;
} sl__tnode_t;

static inline sl__tnode_t *sl__tn_first(sl__tnode_t *x) {
    if (!x) return NULL;
    while (x->l) x = x->l;
    return x;
}

/* In-order successor; NULL after the last. O(1) amortised over a walk. */
static inline sl__tnode_t *sl__tn_next(const sl__tnode_t *x) {
    if (x->r) return sl__tn_first(x->r);
    while (x->up && x->up->r == x) x = x->up;
    return x->up;
}

struct sl__group; /* the pending jobs of one tenant with one shape (sched.c) */

struct sl_job {
    sl_job_spec_t spec;       /* copied at submit; spec.min_tasks as given */
    const sl_sched_t *owner;  /* for lazily shared reasons (see sched.c) */
    sl_job_state_t state;
    sl_status_t status;       /* of the last attempt (own, not shared) */
    int64_t start_us;         /* -1 until started */
    int32_t nplaced;
    sl_place_t *pls;          /* nplaced entries while running; owned */

    /* While pending: the tenant's queue and the shape group's queue, both
     * ordered by (priority desc, submit asc, id asc). The group's treap
     * keeps the least backfill estimate of each subtree (minlim), so the
     * cycle finds the next job short enough to pass a reservation in
     * O(log n). */
    sl__tnode_t tq;
    sl__tnode_t gq;
    struct sl__group *grp;    /* NULL unless pending */
    int64_t lim;              /* runtime estimate for backfill; INT64_MAX = none */
    int64_t minlim;           /* min lim over this job's subtree of gq */

    /* Running list, in start order; and, for a running job with a finite
     * expected end, the scheduler's treap of running jobs ordered by
     * (end_us, start_us, run_seq), which is expected end, then start order. */
    sl_job_t *r_prev, *r_next;
    sl__tnode_t eq;
    int64_t end_us;           /* sl__job_expected_end while running */
    uint64_t run_seq;         /* order of insertion into the running list */

    /* Reason bookkeeping: the epoch (cycle or try_start) in which the job's
     * own reason was written, and the epoch at which it was last queued. */
    uint64_t reason_epoch;
    uint64_t enq_epoch;
    char reason[SL_REASON_MAX];
};

/* The queue policies of the registry (queue_registry.c lists them). */
extern const sl_queue_policy_t sl__queue_fifo;
extern const sl_queue_policy_t sl__queue_priority;
extern const sl_queue_policy_t sl__queue_drf;
extern const sl_queue_policy_t sl__queue_wfq;

/* Ties shared by all policies: earlier submit first, then lower id. */
static inline bool sl__job_submit_less(const sl_job_t *a, const sl_job_t *b) {
    if (a->spec.submit_us != b->spec.submit_us) return a->spec.submit_us < b->spec.submit_us;
    return a->spec.id < b->spec.id;
}

/* The reason and status a pending job shows, taking into account reasons
 * shared by the jobs of a shape group the cycle skipped, by the jobs behind
 * a quota-blocked tenant head and by every job a cycle did not reach
 * (sched.c). */
const char *sl__sched_job_reason(const sl_sched_t *s, const sl_job_t *job);
sl_status_t sl__sched_job_status(const sl_sched_t *s, const sl_job_t *job);

/*
 * Tests only: with on == false a cycle examines every pending job in order
 * instead of skipping the rest of a shape group after a failure (each is
 * then answered by the failed-shape cache). Decisions must be identical
 * either way; test_sched.c checks that on random workloads. Can't fail.
 */
void sl__sched_set_group_skip(sl_sched_t *s, bool on);

/* Tests only: how many group verdicts skipped at least one job, and how
 * many groups a quota change resumed, since creation. Can't fail. */
void sl__sched_group_counters(const sl_sched_t *s, uint64_t *skips, uint64_t *revived);

/* ---- EASY backfill: the reservation of the first blocked job ---- */

/* Expected end of a running job: start + its time limit, else start + the
 * default limit; INT64_MAX ("never") when both are 0. */
int64_t sl__job_expected_end(const sl_job_t *job, int64_t default_limit_us);

/*
 * The reservation state and its scratch buffers, owned by the scheduler and
 * reused from cycle to cycle (steady state allocates nothing). Fields after
 * the scratch are the result of sl__easy_reserve.
 */
typedef struct sl__easy {
    /* scratch */
    sl_node_t *copies;              /* copies of the nodes a release touched */
    int32_t *copy_fit;              /* tasks of the blocked job each copy holds */
    size_t copies_cap;
    int32_t *copy_of;               /* node id -> index in copies, or -1 */
    uint8_t *reserved;              /* node id -> 1 if reserved */
    size_t nodes_cap;               /* entries of copy_of and reserved */
    struct sl__easy_cand *cands;    /* candidate nodes at the shadow time */
    size_t cands_cap;
    /* result */
    bool active;
    int64_t shadow_us;              /* the reserved start time */
    uint32_t *rnodes;               /* the reserved nodes */
    size_t nrnodes, rnodes_cap;
} sl__easy_t;

void sl__easy_init(sl__easy_t *e);  /* can't fail */
void sl__easy_fini(sl__easy_t *e);  /* frees the scratch */

/* The running job of a node of the end-ordered treap (job.eq). */
static inline const sl_job_t *sl__end_job(const sl__tnode_t *n) {
    return (const sl_job_t *)((uintptr_t)n - offsetof(sl_job_t, eq));
}

/*
 * Computes the reservation of a job that needs `count` tasks of req and
 * cannot start now: its shadow time (the earliest expected end of running
 * jobs, walked in order from `ends`, the root of the treap of running jobs
 * with a finite expected end, after which `count` tasks fit on the released
 * state) and the nodes it would use then. Works on copies of the nodes
 * involved; the cluster is not changed. Returns true and sets e->active,
 * e->shadow_us, e->rnodes and the reserved marks; false (e->active false)
 * if the job does not fit even after every running job with a finite
 * expected end has ended. O(K + touched nodes * gpus + classes + C log C)
 * for the K running jobs that end up to the shadow time (all of them when
 * it fails) and C candidate nodes.
 */
bool sl__easy_reserve(sl__easy_t *e, const sl_cluster_t *cl, const sl__tnode_t *ends,
                      const sl_task_req_t *req, int32_t count, int64_t now_us);

/* Drops the reservation (clears the marks). O(reserved nodes). */
void sl__easy_clear(sl__easy_t *e);

/* True if any of the n placements uses a reserved node. O(n). */
bool sl__easy_touches(const sl__easy_t *e, const sl_place_t *pls, int32_t n);

#endif
