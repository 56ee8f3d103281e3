/*
 * sched.h - the scheduler: tenants, the pending queue, running jobs, and the
 * scheduling cycle that ties queue order, placement and backfill together.
 *
 * Pure: time comes in as now_us, randomness from the seed in the config.
 * The same calls drive the simulator and the live controller. The scheduler
 * borrows the cluster (the caller owns it and must outlive the scheduler)
 * and allocates in it when jobs start.
 *
 * Cycle: pending jobs are tried in the queue policy's order. A job that
 * fits starts (all tasks of its gang, or none). With backfill "none" the
 * cycle stops at the first job that cannot start (strict order, no
 * starvation). With "easy", that first blocked job gets a reservation (the
 * earliest time it could start, from the time limits of running jobs, on
 * specific nodes); later jobs start only if they cannot delay it: they end
 * before the reservation, or use none of its nodes. The job keeps (holds)
 * the reservation across cycles until it starts, whichever tenant the
 * queue policy puts first, and each cycle tries it first; so it starts by
 * the time first reserved for it if jobs end by their limits
 * (docs/scheduling.md: the rules, and the bound on its wait). A blocked
 * job for which no reservation can be computed (no estimate for the jobs
 * it waits for, or a node it needs is down) holds nothing back: its start
 * time is unknown.
 */
#ifndef SLUICE_SCHED_H
#define SLUICE_SCHED_H

#include <stddef.h>
#include <stdint.h>

#include "sluice/cluster.h"
#include "sluice/fair.h"
#include "sluice/job.h"
#include "sluice/policy.h"
#include "sluice/preempt.h"
#include "sluice/workload.h"

typedef struct sl_sched_config {
    const char *queue;            /* "fifo" (default), "priority", "drf", "wfq", "las" */
    const char *placement;        /* NULL = sl_place_policy_default() */
    const char *backfill;         /* "none" (default) or "easy" */
    uint64_t seed;                /* for "random" placement and tie-breaks */
    int64_t default_time_limit_us; /* runtime estimate for jobs without a limit or their own
                                    * default (sl_job_spec_t.default_limit_us); 0 = unbounded */
    int32_t max_starts_per_cycle; /* 0 = unbounded; bounds one cycle's work */
    bool track_workload;          /* add each submitted job's shape to the workload (FGD) */
    /* EASY backfill depth: the most pending jobs one cycle examines once a
     * reservation exists (Slurm's bf_max_job_test); the rest wait for a
     * later cycle (each cycle starts again at the head of the queue) with
     * the reason "not considered". Jobs skipped together with a failed job
     * of the same tenant and shape (see sl_sched_cycle) do not count, so
     * the limit only bites on queues of many distinct shapes. 0 = unbounded;
     * negative is SL_EINVAL. Default SL_SCHED_MAX_BACKFILL_TRIES_DEFAULT. */
    int32_t max_backfill_tries;
    /* Preemption, reclaim and elastic growth (sluice/preempt.h), used by
     * sl_sched_run only; all off when zeroed. */
    sl_preempt_config_t preempt;
    /* "las" queue (Tiresias' discretised 2D-LAS): attained-service
     * thresholds in GPU-seconds, ascending; queue k holds the jobs whose
     * attained service is below las_thresholds_gpu_s[k]. All 0: the
     * defaults SL_LAS_THRESHOLDS_DEFAULT. */
    int64_t las_thresholds_gpu_s[4];
} sl_sched_config_t;

/* 1 GPU-hour, 10 GPU-hours: three queues (sched.c states why). */
#define SL_LAS_THRESHOLDS_DEFAULT {3600, 36000, 0, 0}

/* 500: Slurm's default bf_max_job_test. A cycle that examines 500 jobs
 * costs ~0.2-0.4 ms at 10,000 nodes (bench/bench_sched.c), and the Philly
 * replay at 8x load schedules exactly as without a limit. */
#define SL_SCHED_MAX_BACKFILL_TRIES_DEFAULT 500

void sl_sched_config_init(sl_sched_config_t *cfg); /* defaults; can't fail */

typedef struct sl_tenant_spec {
    const char *name;   /* unique, 1..63 bytes */
    int32_t weight;     /* >= 1; 0 means 1 */
    sl_res_t quota;     /* per-resource cap on what the tenant runs at once; 0 = none */
} sl_tenant_spec_t;

/*
 * Creates a scheduler over cl. Returns 0, or SL_EINVAL with a message in err
 * naming the unknown policy ("unknown placement \"foo\" (known: ...)").
 */
int sl_sched_create(const sl_sched_config_t *cfg, sl_cluster_t *cl, sl_sched_t **out,
                    char *err, size_t errlen);
void sl_sched_destroy(sl_sched_t *s); /* accepts NULL; frees all jobs */

sl_cluster_t *sl_sched_cluster(sl_sched_t *s);
/* The workload FGD scores against; the caller may fill it (sim: the trace's
 * shapes) or let track_workload do it. Owned by the scheduler. */
sl_workload_t *sl_sched_workload(sl_sched_t *s);
/* The rank of node (an id of the scheduler's cluster) in the node order
 * that decides equal scores for the placements that follow the FGD
 * artifact's rule (gpupacking, gpuclustering, dotprod, fgd; see
 * docs/placement.md): among equal scores the lowest rank wins. A bijection
 * of the id, fixed by the config's seed; O(1). For tools that replay a
 * run's decisions elsewhere (sluice-sim fill --dump-order). */
uint32_t sl_sched_node_rank(const sl_sched_t *s, uint32_t node);
const sl_place_policy_t *sl_sched_place_policy(const sl_sched_t *s);
const sl_queue_policy_t *sl_sched_queue_policy(const sl_sched_t *s);
sl_backfill_kind_t sl_sched_backfill(const sl_sched_t *s);
sl_rng_t *sl_sched_rng(sl_sched_t *s);

/* ---- Tenants ---- */

/* Adds a tenant; returns its id (>= 0), SL_EEXIST, or SL_EINVAL (bad name or weight). */
int sl_sched_add_tenant(sl_sched_t *s, const sl_tenant_spec_t *spec);
int sl_sched_tenant_find(const sl_sched_t *s, const char *name); /* id or SL_ENOENT */
size_t sl_sched_tenant_count(const sl_sched_t *s);
const char *sl_sched_tenant_name(const sl_sched_t *s, int32_t tenant);
int32_t sl_sched_tenant_weight(const sl_sched_t *s, int32_t tenant);
/* What the tenant's running tasks hold now. */
sl_res_t sl_sched_tenant_usage(const sl_sched_t *s, int32_t tenant);
/* What the tenant's pending jobs ask for: every task of each (ntasks of an
 * elastic job). O(1), kept as jobs enter and leave the queue. */
sl_res_t sl_sched_tenant_pending(const sl_sched_t *s, int32_t tenant);
/* Weighted dominant share: max over CPU, memory, GPU of usage/capacity,
 * divided by weight (DRF). 0 for an idle tenant. */
double sl_sched_tenant_share(const sl_sched_t *s, int32_t tenant);
/*
 * Fairness of the tenants now (sluice/fair.h): fills out[0..n-1] (tenant
 * id order; n must be sl_sched_tenant_count) with each tenant's weight,
 * usage and pending demand, and their fair share, held share and deficit
 * over the cluster's capacity; *sum (may be NULL) gets the DRF fairness
 * ratio and Jain's index over backlogged tenants. Returns 0, or SL_EINVAL
 * for a wrong n. O(tenants log tenants).
 */
int sl_sched_fairness(const sl_sched_t *s, sl_fair_tenant_t *out, size_t n,
                      sl_fair_summary_t *sum);
/* Number of the tenant's pending and running jobs. */
void sl_sched_tenant_jobs(const sl_sched_t *s, int32_t tenant, size_t *pending, size_t *running);

/* ---- Jobs ---- */

/*
 * Queues a job (copied). Returns 0, SL_EEXIST for a used id, SL_ENOENT for
 * an unknown tenant, SL_EINVAL with a message naming the field for a bad
 * spec. O(log n).
 */
int sl_sched_submit(sl_sched_t *s, const sl_job_spec_t *spec, char *err, size_t errlen);

/* Finds a job by id; NULL if unknown (or forgotten). O(1). */
const sl_job_t *sl_sched_job(const sl_sched_t *s, uint64_t id);

/* Cancels a pending or running job, releasing what it holds. SL_ENOENT if
 * unknown, SL_ESTATE if already done or cancelled. */
int sl_sched_cancel(sl_sched_t *s, uint64_t id, int64_t now_us);

/* A running job ended (all its tasks): releases its resources, state DONE.
 * SL_ENOENT / SL_ESTATE. */
int sl_sched_finish(sl_sched_t *s, uint64_t id, int64_t now_us);

/* Puts a running job back in the queue (its node failed), releasing what it
 * holds; keeps its submit time. SL_ENOENT / SL_ESTATE. */
int sl_sched_requeue(sl_sched_t *s, uint64_t id, int64_t now_us);

/*
 * Re-adopts a job that is already running at known places (controller
 * restart): allocates them and marks it running from start_us. n is the
 * number of placed tasks. SL_EEXIST / SL_ENOSPC (nothing changed) /
 * SL_EINVAL.
 */
int sl_sched_adopt(sl_sched_t *s, const sl_job_spec_t *spec, const sl_place_t *pls, int32_t n,
                   int64_t start_us, char *err, size_t errlen);

/* Drops a finished or cancelled job from memory. SL_ESTATE if pending or running. */
int sl_sched_forget(sl_sched_t *s, uint64_t id);

/* Counts of jobs by state. */
size_t sl_sched_pending_count(const sl_sched_t *s);
size_t sl_sched_running_count(const sl_sched_t *s);

/* ---- The cycle ---- */

/* Called for each job started by a cycle, in start order. */
typedef void (*sl_start_fn)(void *ud, const sl_job_t *job);

typedef struct sl_cycle_stats {
    int32_t tried;        /* jobs whose placement was attempted */
    int32_t started;      /* jobs started */
    int32_t backfilled;   /* of which started past a reservation */
    int64_t reserved_job; /* id of the job holding the reservation, or -1 */
    int64_t reserved_at_us; /* its reserved start time, or -1 */
    int32_t preempted;    /* sl_sched_run: whole jobs it asked to stop */
    int32_t shrunk;       /* elastic jobs it asked to shrink */
    int32_t grown;        /* elastic jobs it grew */
} sl_cycle_stats_t;

/*
 * Runs one scheduling cycle at time now_us: starts what the policies allow,
 * calls on_start for each started job, records a reason on each job left
 * waiting, fills *stats (may be NULL). Returns the number of jobs started.
 * Can't fail. Pending jobs of one tenant with the same shape and counts are
 * skipped together once one of them fails, so the cost grows with the jobs
 * examined and the distinct shapes reached, not with the queue; with EASY
 * backfill at most max_backfill_tries jobs are examined past the
 * reservation. O((examined + groups reached) * (log pending + placement)).
 */
int sl_sched_cycle(sl_sched_t *s, int64_t now_us, sl_start_fn on_start, void *ud,
                   sl_cycle_stats_t *stats);

/*
 * The job that holds the EASY reservation across cycles (the job blocked at
 * the head of the order, which keeps it whichever tenant the queue policy
 * puts first until it starts; see sl_sched_cycle and backfill_easy.c), or 0
 * if none; *since_us (may be NULL) gets the time of the cycle that gave it,
 * or -1. Can't fail. O(1).
 */
uint64_t sl_sched_held_job(const sl_sched_t *s, int64_t *since_us);

/*
 * When the last cycle's plan expects pending job id to start: the start
 * time of its backfill reservation (EASY: the first blocked job's, when
 * every running job ends by its limit), or -1 for a job the plan holds no
 * start for (any other job, or no backfill). What `squeue --start` shows.
 * Can't fail. O(1).
 */
int64_t sl_sched_expected_start(const sl_sched_t *s, uint64_t id);

/*
 * Tries to start one pending job now, ignoring queue order and backfill
 * (the FGD paper's "schedule each pod once" protocol). Returns SL_FIT (job
 * is running; on_start not called) or SL_NOFIT / SL_NOFIT_EVER / SL_WAIT
 * (quota) with the reason recorded. SL_ENOENT / SL_ESTATE for a bad job.
 */
int sl_sched_try_start(sl_sched_t *s, uint64_t id, int64_t now_us);

/* Iterates jobs in a state in queue order (pending) or start order (running).
 * Calls fn for each; stops early if fn returns non-zero. */
typedef int (*sl_job_fn)(void *ud, const sl_job_t *job);
void sl_sched_foreach(const sl_sched_t *s, sl_job_state_t st, sl_job_fn fn, void *ud);

/* Checks internal invariants (usage sums, cluster index, queue order) for
 * tests. Returns 0 or SL_ESTATE. O(jobs + nodes). */
int sl_sched_check(const sl_sched_t *s);

#endif
