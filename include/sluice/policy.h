/*
 * policy.h - the scheduling framework's extension points (after the
 * Kubernetes scheduling framework: QueueSort, Filter, Score), as structs of
 * function pointers chosen by name at run time from a static registry.
 *
 * A placement policy scores a node for one task; the framework evaluates
 * each free-capacity class of the cluster once (through its representative
 * node) and takes the highest score. A queue policy orders pending jobs.
 * A backfill policy decides which jobs may pass a blocked one.
 */
#ifndef SLUICE_POLICY_H
#define SLUICE_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice/cluster.h"
#include "sluice/error.h"
#include "sluice/job.h"
#include "sluice/rng.h"
#include "sluice/workload.h"

/* Per-decision context (k8s CycleState). Owned by the framework. */
typedef struct sl_cycle {
    const sl_cluster_t *cluster;
    const sl_workload_t *workload; /* typical task shapes (FGD); never NULL */
    sl_rng_t *rng;                 /* seeded; for "random" and tie-breaks */
    int64_t now_us;
    /* Mixes the node order gpupacking, gpuclustering, dotprod and fgd break
     * ties by (each key its own pseudo-random order of node ids); the
     * scheduler sets it from its seed. 0 (a zero-initialised cycle) is a
     * valid key. */
    uint64_t order_key;
    /* Set by the scheduler while it places a job of an advance reservation
     * (sluice/resv.h): allow[id] is nonzero for the nodes (ids below
     * allow_n) the job may use, which its placement policy's filter then
     * enforces on top of allow_base's own filter. NULL when unused (a
     * zero-initialised cycle). */
    const uint8_t *allow;
    size_t allow_n;
    const struct sl_place_policy *allow_base;
} sl_cycle_t;

typedef struct sl_place_policy {
    const char *name;
    const char *help; /* one line for --help */
    /*
     * Scores placing one task of req on node (a class representative of
     * `weight` identical nodes). Returns SL_FIT with *score (higher is
     * better) and the chosen GPUs in *pl (pl->node is set by the caller), or
     * SL_NOFIT. NULL-free: every policy implements it.
     */
    int (*score)(sl_cycle_t *cy, const sl_task_req_t *req, const sl_node_t *node,
                 uint32_t weight, int64_t *score, sl_place_t *pl);
    /*
     * Filter (k8s Filter): may a task of req go on node at all? NULL means
     * every node that has room. It sees nodes one by one, so with a filter
     * the framework scores each passing node (weight 1) instead of each
     * class once: O(up nodes in the buckets that can hold the task). It
     * must depend only on what does not change as tasks come and go (labels,
     * pool, model, totals, the node's name or id) and the request, so that a
     * node refused once is refused on the empty cluster too (SL_NOFIT_EVER).
     */
    bool (*filter)(const sl_cycle_t *cy, const sl_task_req_t *req, const sl_node_t *node);
} sl_place_policy_t;

/* Looks a placement policy up by name; NULL if unknown. */
const sl_place_policy_t *sl_place_policy_find(const char *name);
/* The registry, NULL-terminated, for --help and "unknown policy" messages. */
const sl_place_policy_t *const *sl_place_policy_list(void);
/* The policy used when none is named. */
const char *sl_place_policy_default(void);

/*
 * Places one task of req on the best node of the cluster under policy pol:
 * evaluates every class that can hold the task once (classes are bucketed by
 * free GPU, so buckets that cannot hold it are skipped), takes the highest
 * score, and a node of that class. Equal scores are settled by a draw from
 * cy->rng weighted by class size, so ties are uniform over nodes and a
 * decision is a pure function of the cluster, the request and the RNG state.
 * Fills *pl and returns SL_FIT, or SL_NOFIT / SL_NOFIT_EVER. Does not
 * allocate anything in the cluster. O(classes * cost of score) at worst.
 */
int sl_place_task(const sl_place_policy_t *pol, sl_cycle_t *cy, const sl_task_req_t *req,
                  sl_place_t *pl);

/*
 * Places a gang of n tasks of req all-or-none, packing onto as few nodes as
 * possible (the node that holds the most remaining tasks first, policy score
 * among equals). On SL_FIT, pls[0..n-1] are filled and the resources ARE
 * allocated in cl; on failure nothing is allocated. reason (if non-NULL)
 * receives why it does not fit. A request that sets its node fields
 * (nodes_min/nodes_max, tasks_per_node, exclusive, include, exclude:
 * sluice/resources.h) gets exactly that: N distinct nodes, the fewest in
 * range that fit, k tasks on each, only idle nodes held whole, every
 * included node and no excluded one; the nodes beyond those named are
 * chosen by how many tasks they hold, then the policy's score.
 */
int sl_place_gang(const sl_place_policy_t *pol, sl_cycle_t *cy, sl_cluster_t *cl,
                  const sl_task_req_t *req, int32_t n, sl_place_t *pls,
                  char *reason, size_t reasonlen);

/* Forward declaration: the scheduler's view of tenants for queue policies. */
typedef struct sl_sched sl_sched_t;

typedef struct sl_queue_policy {
    const char *name;
    const char *help;
    /*
     * Returns true if job a should be tried before job b, given the current
     * tenant shares (sl_sched_tenant_share) and time now_us. Jobs of one
     * tenant are compared too (the framework keeps per-tenant queues in
     * (priority desc, submit, id) order and compares tenant heads).
     */
    bool (*less)(const sl_sched_t *s, const sl_job_t *a, const sl_job_t *b, int64_t now_us);
} sl_queue_policy_t;

const sl_queue_policy_t *sl_queue_policy_find(const char *name);
const sl_queue_policy_t *const *sl_queue_policy_list(void);

/*
 * Backfill: which jobs may pass the first job of a cycle that cannot start.
 *
 * A backfill policy sees the scheduler only through sl_backfill_view_t: the
 * cluster (read-only) and the running jobs with a finite expected end, in
 * order of expected end (ties: start order), one at a time. It computes a
 * reservation for the blocked job; the cycle (sched_cycle.c) then lets a
 * later job start only if it ends by the reservation's start or uses none
 * of its nodes (`touches`). A policy without `reserve` ("none") keeps
 * strict order: the cycle stops at the first blocked job.
 */

/* One running job, as a backfill policy sees it. Pointers are the
 * scheduler's, valid until the scheduler changes. */
typedef struct sl_running_view {
    const sl_task_req_t *req;  /* one task's request */
    const sl_place_t *pls;     /* where its n tasks run */
    int32_t n;
    int64_t end_us;            /* expected end (start + time limit) */
} sl_running_view_t;

typedef struct sl_backfill_view {
    const sl_cluster_t *cluster;
    /* Fills *out with the running job after *cursor (the first when *cursor
     * is NULL) and advances *cursor; false after the last. O(1) amortised. */
    bool (*next_end)(const void *ctx, const void **cursor, sl_running_view_t *out);
    const void *ctx;
} sl_backfill_view_t;

/* A reservation: when the blocked job is expected to start, and where. */
typedef struct sl_reservation {
    int64_t start_us;         /* the "shadow" time */
    const uint32_t *nodes;    /* reserved node ids; owned by the policy's state, */
    size_t nnodes;            /* valid until its next reserve or clear */
} sl_reservation_t;

typedef struct sl_backfill_policy {
    const char *name;
    const char *help;
    /* Per-scheduler state (scratch reused from cycle to cycle); NULL init
     * means none. init aborts on out-of-memory, fini accepts NULL. */
    void *(*init)(void);
    void (*fini)(void *st);
    /*
     * Computes the reservation of a job of `count` tasks of req that cannot
     * start now. Returns true with *out filled, or false if no start time
     * can be found (the cycle then stops, as with no backfill). NULL: no
     * backfill at all. Must not change the cluster.
     */
    bool (*reserve)(void *st, const sl_backfill_view_t *v, const sl_task_req_t *req,
                    int32_t count, int64_t now_us, sl_reservation_t *out);
    /* Whether any of the n placements uses a node of the current
     * reservation. Called only while one is held. */
    bool (*touches)(const void *st, const sl_place_t *pls, int32_t n);
    /* Drops the reservation; idempotent. */
    void (*clear)(void *st);
} sl_backfill_policy_t;

/* Looks a backfill policy up by name ("none", "easy"); NULL if unknown. */
const sl_backfill_policy_t *sl_backfill_policy_find(const char *name);
/* The registry, NULL-terminated. */
const sl_backfill_policy_t *const *sl_backfill_policy_list(void);

/* The policies by number, as earlier versions of this API named them. */
typedef enum sl_backfill_kind {
    SL_BACKFILL_NONE = 0, /* strict order: the cycle stops at the first job that cannot start */
    SL_BACKFILL_EASY = 1  /* the first blocked job gets a reservation; others pass only if they cannot delay it */
} sl_backfill_kind_t;

int sl_backfill_parse(const char *name, sl_backfill_kind_t *out); /* SL_EINVAL if unknown */
const char *sl_backfill_name(sl_backfill_kind_t k);

#endif
