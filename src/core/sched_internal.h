/*
 * sched_internal.h - the scheduler's private types, shared by the sched_*.c
 * files, job.c and the queue policies (src/core/policy/queue_*.c). Not
 * installed. Which file owns what (src/core/LAYERS orders them):
 *
 *   sched_queue.c  the data structures: the intrusive treaps, tenants and
 *                  their pending queues, shape groups, the running list and
 *                  its end-ordered treap, and the reasons pending jobs share
 *                  (sl__sched_job_reason). Calls only the cluster.
 *   sched.c        the front door and a job's lifecycle: config, create and
 *                  destroy, submit, cancel, finish, requeue, adopt, forget,
 *                  start and stop, the quota check and elastic placement.
 *   sched_cycle.c  the cycle and try_start: the tenant heap, group verdicts,
 *                  the failed-shape cache, and the backfill policy's
 *                  reservation (asked through sl_backfill_policy_t only).
 *   sched_check.c  sl_sched_foreach and sl_sched_check.
 *   sched_fair.c   sl_sched_fairness.
 *   sched_preempt.c sl_sched_run: preemption, reclaim, elastic growth,
 *                  stop_done and drain eviction (sluice/preempt.h).
 *
 * Each calls only files above it in this list; helpers that several need
 * are static inline below.
 *
 * A job is one heap block holding its spec, its state and intrusive links:
 * two treap nodes while pending (its tenant's queue, and its shape group's
 * queue, see sched_queue.c) and a list node while running (start order); the job
 * table is the core's hash table by id (sluice/hash.h). Enqueueing therefore
 * allocates nothing beyond the job (and, for the first job of a new shape,
 * its group).
 */
#ifndef SLUICE_SCHED_INTERNAL_H
#define SLUICE_SCHED_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "sluice/alloc.h"
#include "sluice/hash.h"
#include "sluice/heap.h"
#include "sluice/job.h"
#include "sluice/policy.h"
#include "sluice/resv.h"
#include "sluice/sched.h"

/* An intrusive treap node (sched_queue.c): ordered by a caller's `less`,
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

struct sl__group; /* the pending jobs of one tenant with one shape (sched_queue.c) */

struct sl_job {
    sl_job_spec_t spec;       /* copied at submit; spec.min_tasks as given */
    const sl_sched_t *owner;  /* for lazily shared reasons (see sched_queue.c) */
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

    /* Queue key (qless): the priority, or under "las" minus the job's
     * attained-service queue, fixed while it is pending (sl__enqueue). */
    int64_t qkey;

    /* Preemption (sched_preempt.c, sluice/preempt.h). While stopping, the
     * job holds all nplaced tasks until sl_sched_stop_done; the top stop_n
     * of them stop (all when stop_whole). stop_for is the preemptor (0 for
     * a drain), which counts its victims in victims_left. */
    int32_t stop_n;
    bool stop_whole;
    sl_preempt_reason_t stop_reason;
    uint64_t stop_for;
    uint64_t last_preemptor;  /* the waiting job it was last preempted for */
    int32_t victims_left;     /* as a preemptor: stops it waits for */
    int32_t npreempt;
    int64_t last_preempt_us;  /* -1 if never */
    /* Attained service: GPU-seconds of finished runs and size changes, plus
     * the current size since att_mark_us while running. */
    double att_gpu_s;
    int64_t att_mark_us;
    /* Size history, oldest first: the first entries inline, the rest on
     * the heap once more are needed (most jobs start and end only). */
    sl_size_change_t h_in[2];
    sl_size_change_t *hist;   /* NULL while h_in suffices; else SL_JOB_HISTORY_MAX */
    int32_t nhist;
};

/* The queue policies of the registry (queue_registry.c lists them). */
extern const sl_queue_policy_t sl__queue_fifo;
extern const sl_queue_policy_t sl__queue_priority;
extern const sl_queue_policy_t sl__queue_drf;
extern const sl_queue_policy_t sl__queue_wfq;
extern const sl_queue_policy_t sl__queue_las;
/* wfq's cost when a job and the scheduler have no time limit, in seconds. */
#define SL__WFQ_DEFAULT_LIMIT_S 3600
struct sl_sched;
/* wfq's bookkeeping when job j starts `total` (every queue policy keeps it,
 * so a scheduler's tags are the same whatever it ran before): the tenant's
 * tag advances by cost / weight, the system virtual time to the job's start
 * tag. Can't fail; O(1). (policy/queue_wfq.c) */
void sl__wfq_charge(struct sl_sched *s, const sl_job_t *j, sl_res_t total);

/* Ties shared by all policies: earlier submit first, then lower id. */
static inline bool sl__job_submit_less(const sl_job_t *a, const sl_job_t *b) {
    if (a->spec.submit_us != b->spec.submit_us) return a->spec.submit_us < b->spec.submit_us;
    return a->spec.id < b->spec.id;
}

/* The reason and status a pending job shows, taking into account reasons
 * shared by the jobs of a shape group the cycle skipped, by the jobs behind
 * a quota-blocked tenant head and by every job a cycle did not reach
 * (sched_queue.c). */
const char *sl__sched_job_reason(const sl_sched_t *s, const sl_job_t *job);
sl_status_t sl__sched_job_status(const sl_sched_t *s, const sl_job_t *job);

/*
 * Tests only: with on == false a cycle examines every pending job in order
 * instead of skipping the rest of a shape group after a failure (each is
 * then answered by the failed-shape cache). Decisions must be identical
 * either way; test_sched_random.c checks that on random workloads. Can't
 * fail. (sched_cycle.c)
 */
void sl__sched_set_group_skip(sl_sched_t *s, bool on);

/* Tests only: how many group verdicts skipped at least one job, and how
 * many groups a quota change resumed, since creation. Can't fail. */
void sl__sched_group_counters(const sl_sched_t *s, uint64_t *skips, uint64_t *revived);

/* ---- running jobs by expected end (sched_queue.c) ---- */

/* Expected end of a running job: start + its time limit, else start + the
 * default limit; INT64_MAX ("never") when both are 0. */
int64_t sl__job_expected_end(const sl_job_t *job, int64_t default_limit_us);
/* A job's runtime estimate for backfill: its time limit, else its own
 * default (spec.default_limit_us), else the scheduler's (default_limit_us);
 * 0 when it has none. O(1). */
static inline int64_t sl__job_limit(const sl_job_t *job, int64_t default_limit_us) {
    if (job->spec.time_limit_us > 0) return job->spec.time_limit_us;
    return job->spec.default_limit_us > 0 ? job->spec.default_limit_us : default_limit_us;
}

/* The running job of a node of the end-ordered treap (job.eq). */
static inline const sl_job_t *sl__end_job(const sl__tnode_t *n) {
    return (const sl_job_t *)((uintptr_t)n - offsetof(sl_job_t, eq));
}

/* ==== The scheduler's state (shared by the sched_*.c files) ==== */

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
    int32_t resv;             /* and the advance reservation (sl_job_spec_t.resv) */
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
    /* == the cycle's epoch once no reservation could be computed for the
     * group's shape in it: none can be later in the cycle either (starts
     * only take capacity), so its later jobs are not asked again. */
    uint64_t noresv_epoch;
} group_t;

/* Reservations one cycle computes at most: the held job's, then the first
 * blocked jobs' (of distinct groups) until one can be made. A failed one
 * walks every running job with an estimate, so this bounds a cycle in
 * which no reservation is possible (sched_cycle.c). */
#define SL__RESERVE_TRIES 4

/* An advance reservation (sched_resv.c). */
typedef struct sl__resv {
    int32_t id;
    char name[SL_NAME_MAX];
    int64_t start_us, end_us;
    uint32_t *nodes;          /* owned */
    size_t nnodes;
    int32_t tenants[SL_RESV_TENANTS_MAX];
    size_t ntenants;
    int32_t gpus;
    uint8_t *member;          /* node id -> 1 if reserved here (nmember entries) */
    size_t nmember;
    /* Its pending jobs (sl__enqueue and sl__dequeue keep them; any order),
     * which each cycle inside the window tries first (sched_cycle.c). */
    sl_job_t **pend;
    size_t npend, pend_cap;
} sl__resv_t;

typedef struct tenant {
    char name[SL_NAME_MAX];
    int32_t weight;
    sl_res_t quota;
    bool has_quota;
    sl_res_t usage;
    sl_res_t pend;   /* what its pending jobs ask for (all tasks of each) */
    double share;    /* sl_sched_tenant_share, cached while cap_valid */
    double vtag;     /* wfq: start tag of its next job (policy/queue_wfq.c) */
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
    int64_t blk_prio;   /* its qkey */
    int64_t blk_submit;
    uint64_t blk_id;
    char behind_reason[SL_REASON_MAX];
} tenant_t;

typedef struct fcache_entry {
    uint64_t epoch; /* valid iff equal to the scheduler's epoch */
    sl_task_req_t req;
    int32_t n, m;
    uint64_t xsig;  /* the reserved nodes the job was kept off (sl__resv_sig) */
    bool lng;       /* applies to long backfill candidates only */
    sl_status_t st;
    char reason[SL_REASON_MAX];
} fcache_entry_t;

struct sl_sched {
    sl_cluster_t *cl;
    sl_workload_t *wl;
    const sl_place_policy_t *place;
    const sl_queue_policy_t *queue;
    const sl_backfill_policy_t *backfill;
    void *bf_state;        /* the backfill policy's (init/fini) */
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
    double vnow;           /* wfq: system virtual time (policy/queue_wfq.c) */

    bool cap_valid;        /* cap is a snapshot valid during a cycle */
    sl_res_t cap;

    sl_place_t *pls;       /* SL_MAX_TASKS scratch for the placer */
    fcache_entry_t *fcache;
    sl_heap_t act;         /* tenants with jobs left in a cycle (uint32_t), by head */
    uint64_t *started;     /* ids started by the cycle, in order */
    size_t started_cap;

    bool resv_active;      /* a reservation is held in this cycle */
    sl_reservation_t resv; /* its start time and nodes (the policy's) */
    uint64_t plan_id;      /* the last cycle's reserved job (0: none) and */
    int64_t plan_start_us; /* its expected start, kept after the cycle */
    int64_t short_lim;     /* with a reservation: a job is short iff lim <= this */
    uint32_t *drained;     /* reserved nodes drained by this cycle */
    size_t ndrained, drained_cap;

    /* The held reservation (sched_cycle.c): the job blocked at the head
     * that keeps its reservation from cycle to cycle until it starts. */
    uint64_t hold_id;      /* the job holding it; 0 = none */
    int64_t hold_since_us; /* the cycle that gave it to that job */

    /* Preemption (sched_preempt.c): the configuration, the classes (0 is
     * "default"), the preemptors waiting for their victims (tried first by
     * sl_sched_run) and the times of the last victims (the rate bound, a
     * ring of max_per_minute entries). */
    sl_preempt_config_t pc;
    sl_prio_class_spec_t classes[SL_PRIO_CLASS_MAX];
    char class_names[SL_PRIO_CLASS_MAX][SL_NAME_MAX];
    int32_t nclasses;
    uint64_t *nom;
    size_t nnom, nom_cap;
    int64_t *pr_times;
    size_t pr_head, pr_count;
    /* "las": thresholds in GPU-seconds, ascending (nlas of them). */
    bool las;
    int64_t las_thr[4];
    int32_t nlas;

    /* Advance reservations (sched_resv.c, sluice/resv.h), by id; and the
     * nodes an attempt took out of the index (restored after it). */
    sl__resv_t resvs[SL_RESV_MAX];
    size_t nresv;
    int32_t resv_next_id;
    uint32_t *xdrained;
    size_t nxdrained, xdrained_cap;
    sl_job_t **rtry;       /* scratch: the pending jobs of windows now (sched_resv.c) */
    size_t rtry_cap;
    /* The placement policy with the reservation's node filter on top
     * (sl__resv_filter), for the jobs of advance reservations. */
    sl_place_policy_t resv_place;
};

/* ---- small helpers (inline: used by every sched_*.c file) ---- */

static inline void sl__invariant(bool ok) {
    if (!ok) abort(); /* internal state is corrupt: no safe decision exists */
}

/* snprintf into buf (if any), truncating. Can't fail. (sched_queue.c) */
void sl__setf(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static inline int32_t job_min(const sl_job_t *j) {
    return j->spec.min_tasks > 0 ? j->spec.min_tasks : j->spec.ntasks;
}

static inline tenant_t *tenant_of(const sl_sched_t *s, const sl_job_t *j) {
    return &s->tenants[j->spec.tenant];
}

static inline sl_job_t *jobs_find(const sl_sched_t *s, uint64_t id) {
    return (sl_job_t *)sl_hash_find(&s->jobs, id);
}

static inline bool qless(const sl_job_t *a, const sl_job_t *b) {
    if (a->qkey != b->qkey) return a->qkey > b->qkey;
    return sl__job_submit_less(a, b);
}

/* GPU capacity of n tasks of j, in milli-GPUs. */
static inline int64_t job_gpu_milli(const sl_job_t *j, int32_t n) {
    return sl_task_req_total(&j->spec.task).gpu_milli * n;
}

/* The "las" queue of an attained service (0 = least attained). */
static inline int32_t las_level(const sl_sched_t *s, double gpu_s) {
    int32_t k = 0;
    while (k < s->nlas && gpu_s >= (double)s->las_thr[k]) k++;
    return k;
}

/* Attained GPU-seconds of j up to now_us. */
static inline double job_attained(const sl_job_t *j, int64_t now_us) {
    double a = j->att_gpu_s;
    if (j->state == SL_JOB_RUNNING && now_us > j->att_mark_us)
        a += (double)job_gpu_milli(j, j->nplaced) / 1000.0 * (double)(now_us - j->att_mark_us) / 1e6;
    return a;
}

static inline sl_job_t *tq_job(const sl__tnode_t *n) {
    return n ? (sl_job_t *)((uintptr_t)n - offsetof(sl_job_t, tq)) : NULL;
}

static inline sl_job_t *gq_job(const sl__tnode_t *n) {
    return n ? (sl_job_t *)((uintptr_t)n - offsetof(sl_job_t, gq)) : NULL;
}

static inline group_t *ix_group(const sl__tnode_t *n) {
    return n ? (group_t *)((uintptr_t)n - offsetof(group_t, ix)) : NULL;
}

/* Running jobs by expected end, then start order (the running list's). */
static inline bool eq_less(const sl__tnode_t *a, const sl__tnode_t *b) {
    const sl_job_t *x = sl__end_job(a), *y = sl__end_job(b);
    if (x->end_us != y->end_us) return x->end_us < y->end_us;
    if (x->start_us != y->start_us) return x->start_us < y->start_us;
    return x->run_seq < y->run_seq;
}

static inline bool req_eq(const sl_task_req_t *a, const sl_task_req_t *b) {
    return a->cpu_milli == b->cpu_milli && a->mem_bytes == b->mem_bytes && a->gpus == b->gpus &&
           a->gpu_milli == b->gpu_milli && a->gpu_mem_bytes == b->gpu_mem_bytes &&
           a->model_mask == b->model_mask && a->pool == b->pool && a->cons == b->cons &&
           a->topo_required == b->topo_required && a->topo_preferred == b->topo_preferred &&
           a->nodes_min == b->nodes_min && a->nodes_max == b->nodes_max &&
           a->tasks_per_node == b->tasks_per_node && a->exclusive == b->exclusive &&
           a->include == b->include && a->exclude == b->exclude;
}

static inline uint64_t req_hash(const sl_task_req_t *r, int32_t n, int32_t m) {
    uint64_t h = sl_mix64((uint64_t)r->cpu_milli);
    h = sl_mix64(h ^ (uint64_t)r->mem_bytes);
    h = sl_mix64(h ^ (uint64_t)r->gpus ^ ((uint64_t)(uint32_t)r->gpu_milli << 32));
    h = sl_mix64(h ^ (uint64_t)r->gpu_mem_bytes);
    h = sl_mix64(h ^ r->model_mask);
    h = sl_mix64(h ^ (uint64_t)(uint32_t)r->pool ^ ((uint64_t)(uint32_t)n << 32));
    h ^= (uint64_t)(uintptr_t)r->cons;
    h = sl_mix64(h ^ (uint64_t)(uint16_t)r->nodes_min ^ ((uint64_t)(uint16_t)r->nodes_max << 16) ^
                 ((uint64_t)(uint16_t)r->tasks_per_node << 32) ^ ((uint64_t)r->exclusive << 48));
    h ^= (uint64_t)(uintptr_t)r->include ^ ((uint64_t)(uintptr_t)r->exclude << 1);
    return sl_mix64(h ^ (uint64_t)(uint32_t)m);
}

/* A group's key also holds the advance reservation its jobs run in: a job
 * of one may use only its nodes, so it shares no verdict with others. */
static inline uint64_t group_hash(const sl_job_t *j) {
    return sl_mix64(req_hash(&j->spec.task, j->spec.ntasks, job_min(j)) ^
                 ((uint64_t)(uint32_t)j->spec.tenant << 17) ^
                 ((uint64_t)(uint32_t)j->spec.resv << 41));
}

static inline bool group_matches(const group_t *g, uint64_t h, const sl_job_t *j) {
    return g->hash == h && g->tenant == j->spec.tenant && g->n == j->spec.ntasks &&
           g->m == job_min(j) && g->resv == j->spec.resv && req_eq(&g->req, &j->spec.task);
}

static inline sl_res_t job_total(const sl_job_t *j, int32_t n) {
    return sl_res_scale(sl_task_req_total(&j->spec.task), n);
}

static inline bool tenant_ok(const sl_sched_t *s, int32_t tenant) {
    return tenant >= 0 && (size_t)tenant < s->ntenants;
}

static inline void see_time(sl_sched_t *s, int64_t now_us) {
    if (now_us > s->clock_us) s->clock_us = now_us;
}

/* The pending jobs of advance reservations (sl__resv_t.pend), kept as a
 * job of one enters and leaves the queue. O(reservations + its pending). */
static inline void sl__resv_pend(sl_sched_t *s, sl_job_t *j, bool add) {
    for (size_t i = 0; i < s->nresv && j->spec.resv; i++) {
        sl__resv_t *r = &s->resvs[i];
        if (r->id != j->spec.resv) continue;
        if (add) {
            if (r->npend == r->pend_cap) {
                r->pend_cap = r->pend_cap ? 2 * r->pend_cap : 8;
                r->pend = sl_xrealloc(r->pend, r->pend_cap * sizeof *r->pend);
            }
            r->pend[r->npend++] = j;
            return;
        }
        for (size_t k = 0; k < r->npend; k++) {
            if (r->pend[k] != j) continue;
            r->pend[k] = r->pend[--r->npend];
            return;
        }
        return;
    }
}

/* ---- sched_queue.c: treaps, tenant and group queues, the running list,
 * tenants and shared reasons ---- */

/* First job of the group subtree x after key (any if NULL) with estimate
 * at most lim; NULL if none. O(depth). */
sl_job_t *sl__gq_find(const sl__tnode_t *x, const sl_job_t *key, int64_t lim);
/* Puts a job in / takes it off its tenant's and its group's queues. O(log n). */
void sl__enqueue(sl_sched_t *s, sl_job_t *j);
void sl__dequeue(sl_sched_t *s, sl_job_t *j);
/* Adds a job to / removes it from the running list and the end-ordered treap. */
void sl__run_insert(sl_sched_t *s, sl_job_t *j);
void sl__run_remove(sl_sched_t *s, sl_job_t *j);
/* A tenant's dominant share over cap, divided by its weight. O(1). */
double sl__share_of(const tenant_t *t, sl_res_t cap);

/* ---- sched.c: the lifecycle of a job ---- */

/* Marks a pending job (already allocated at pls[0..n-1]) running. */
void sl__start_job(sl_sched_t *s, sl_job_t *j, const sl_place_t *pls, int32_t n, int64_t now_us);
/* Appends (at_us, n) to the job's size history. Can't fail. */
void sl__hist_push(sl_job_t *j, int64_t at_us, int32_t n);
/* Adds the job's current size since its mark to its attained service and
 * moves the mark to now_us (before its size changes). */
void sl__att_mark(sl_job_t *j, int64_t now_us);
/* Ends the stop the core asked of j (it ended, or by itself): its
 * preemptor waits for one victim less. */
void sl__stop_clear(sl_sched_t *s, sl_job_t *j);
/* Gives n placements of req back to the cluster. */
void sl__release_pls(sl_sched_t *s, const sl_task_req_t *req, const sl_place_t *pls, int32_t n);
/* The count the tenant's quota allows (<= n), or -1 with a reason if not even m. */
int32_t sl__quota_cap(const sl_sched_t *s, const sl_job_t *j, int32_t n, int32_t m, char *reason,
                      size_t rlen);
/* Places between m and n tasks of j (the most that fit: elastic jobs); on
 * SL_FIT they are allocated at s->pls[0..*k-1]; otherwise reason says why
 * and the status of the attempt at m tasks is returned. */
int sl__place_range(sl_sched_t *s, sl_cycle_t *cy, const sl_job_t *j, int32_t n, int32_t m,
                    int32_t *k, char *reason, size_t rlen);

/* ---- sched_resv.c: advance reservations in placement ---- */

/*
 * Takes out of the index, for one placement attempt of j (a job of no
 * reservation) at now_us, the up nodes of each reservation whose window
 * the job would overlap if it started at any time up to horizon_us (now_us
 * for a placement; later for a backfill plan). Returns SL_FIT (then
 * sl__resv_restore must follow); SL_NOFIT for a job of a reservation,
 * which is placed through sl__resv_allow instead. O(nodes taken out).
 */
int sl__resv_exclude(sl_sched_t *s, const sl_job_t *j, int64_t now_us, int64_t horizon_us,
                     char *reason, size_t rlen);
/* For a job of a reservation: fills cy's allow fields with the
 * reservation's nodes (base: the scheduler's placement policy) and
 * returns SL_FIT, or SL_NOFIT / SL_NOFIT_EVER with a reason (outside its
 * window, or the reservation is gone) leaving cy as it was. O(1) but the
 * lookup, O(reservations). The caller clears cy->allow afterwards. */
int sl__resv_allow(const sl_sched_t *s, const sl_job_t *j, sl_cycle_t *cy, char *reason,
                   size_t rlen);
/* The filter of sched.resv_place: the node is one cy->allow lets through,
 * and the base policy's filter (if any) takes it. */
bool sl__resv_filter(const sl_cycle_t *cy, const sl_task_req_t *req, const sl_node_t *node);
/* Puts the nodes sl__resv_exclude took out back. Idempotent. */
void sl__resv_restore(sl_sched_t *s);
/* Which reserved nodes j may not use at now_us, as a key for the
 * failed-shape cache: 0 when none. O(reservations). */
uint64_t sl__resv_sig(const sl_sched_t *s, const sl_job_t *j, int64_t now_us);
/* Frees the reservations (sl_sched_destroy). */
void sl__resv_fini(sl_sched_t *s);
/* The pending jobs of the reservations whose window holds now_us, in queue
 * order, into *out (the scheduler's scratch, valid until the next call);
 * returns how many. O(k log k) for k such jobs. */
size_t sl__resv_window_jobs(sl_sched_t *s, int64_t now_us, sl_job_t ***out);

#endif
