/*
 * preempt.h - taking back what was granted: priority classes, preemption,
 * fair-share reclaim, elastic grow and shrink, and evicting a drained node.
 *
 * The core decides; its caller carries the decisions out. A decision to
 * stop tasks (a preemption or a shrink) does NOT free their resources: the
 * victim keeps them, marked "stopping", until the caller says its tasks
 * have ended (sl_sched_stop_done), because on a real cluster a GPU is free
 * only once the process that held it is gone (after the class's signal and
 * grace). The job a preemption was made for (the preemptor) waits for its
 * victims; no second preemption is made for it meanwhile, and once the
 * last victim is gone it is tried first by the next sl_sched_run, before
 * the queue order, so the capacity it paid for goes to it. A grow is
 * allocated at once, as a start is, and reported for the caller to launch.
 *
 * How a preemption is decided (sched_preempt.c; docs/scheduling.md):
 * simulate first, commit only if the preemptor then fits (as KAI does).
 *  1. Candidates: running jobs not already stopping whose class may be
 *     preempted, not protected (below), not preempted before for this same
 *     waiting job; for a priority preemption, of a strictly lower priority
 *     than the preemptor, whose class must allow it to preempt; for a
 *     reclaim (below), of a tenant above its fair share.
 *  2. Units, cheapest first: each task an elastic job holds beyond its
 *     min_tasks is a unit of its own (highest rank first), ahead of every
 *     whole job, so elastic jobs shrink before anything is preempted
 *     whole; then whole jobs (a gang always whole: never half a gang) by
 *     lowest priority, then fewest GPUs, then least work lost (GPU-seconds
 *     since start), then latest start. Priority comes first because a
 *     lower class exists to be preempted first (as in Kueue and KAI); among
 *     equals the set with the fewest GPUs and least lost work is sought
 *     greedily (the exact cheapest set is a knapsack problem).
 *  3. Units are released one by one from the cluster itself (release and
 *     allocate are exact inverses, so this is the scratch state) until the
 *     preemptor's gang (min_tasks of an elastic one) fits; the placement
 *     found is given back at once. If it never fits, every unit is
 *     allocated again and nothing is preempted.
 *  4. A reverse pass (as Kueue does) allocates each released unit again,
 *     last released first, and drops it from the victim set if the
 *     preemptor still fits without it; a shrink unit is dropped only while
 *     the lower ranks of its job are already dropped, so a shrink always
 *     removes the highest ranks. So no victim is preempted that the
 *     preemptor does not need. The cluster is then exactly as before.
 *  5. Commit: the victims are marked stopping and reported (on_preempt,
 *     on_resize for shrinks); each is recorded with its preemptor, reason
 *     and GPU-seconds lost.
 *
 * Fair-share reclaim. With reclaim on, a pending job whose tenant is below
 * its fair share (sluice/fair.h: DRF progressive filling over what every
 * tenant holds and asks for) may take from tenants above theirs. A unit of
 * tenant V may be taken for a job of tenant P only if, with s the held
 * dominant share and f the fair share,
 *     s_V - (the unit's dominant share) >= f_V   (V stays at or above its share)
 *     s_P + (the job's dominant share)  <= f_P   (P stays at or below its share).
 * Why this cannot cycle. Fix every tenant's demand (held + pending). The
 * fair shares depend only on the demands and the capacity, and a reclaim
 * changes no demand (the victim is requeued: what it held becomes
 * pending). Count a stopping victim as gone and a waiting preemptor as
 * placed, and let Phi = sum over tenants of |s_T - f_T|. A reclaim lowers
 * s_V by some d_V >= 0 while V stays at or above f_V, so |s_V - f_V| falls
 * by d_V; it raises s_P by some d_P >= 0 while P stays at or below f_P, so
 * |s_P - f_P| falls by d_P: Phi never grows. When the tasks' dominant
 * resource is the tenants' dominant resource (GPUs, on a GPU cluster), d_V
 * and d_P are at least the smallest task's share delta > 0, so Phi falls
 * by 2 * delta per reclaim and at most Phi / (2 * delta) reclaims happen
 * before the demands change: reclaim stops. And no two tenants take from
 * each other in turn: after A took from B, B is at or above f_B and A at
 * or below f_A; B may take from A only once B is below f_B and A above
 * f_A, which a reclaim never causes, only a change of demand (an arrival,
 * an end) or a start into capacity nobody below its share could use (the
 * freed capacity goes first to the waiting preemptor, below). At the fixed
 * point no tenant that could take one more task within its share finds a
 * tenant that could give one and stay at or above its share: DRF's
 * allocation up to one task per tenant. test_preempt_reclaim.c checks on
 * random clusters that Phi never grows, that no pair of tenants takes from
 * each other, and this fixed point.
 *
 * Limits against thrashing: at most max_per_minute victims per 60 seconds
 * of the caller's clock (0 = no bound); a job preempted protect_after times
 * is exempt for protect_us after its last preemption (0 = never exempt).
 * The core takes time only from its caller (now_us): it stays pure.
 *
 * Elastic grow: after the cycle, if no pending job is blocked for lack of
 * capacity, running elastic jobs below their ntasks grow (in start order)
 * into what is free, as far as their tenant's quota allows: the new tasks
 * are allocated at once and reported through on_resize.
 *
 * Drain: a node in state SL_NODE_DRAINING (sl_cluster_set_state) takes no
 * new placements and keeps what runs on it; sl_sched_evict_node preempts
 * (reason SL_PREEMPT_DRAIN) every job with a task on a node, for a drain
 * past its deadline.
 */
#ifndef SLUICE_PREEMPT_H
#define SLUICE_PREEMPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice/cluster.h"
#include "sluice/job.h"
#include "sluice/policy.h" /* sl_sched_t */

typedef struct sl_cycle_stats sl_cycle_stats_t; /* sluice/sched.h */

/* ---- priority classes ---- */

/*
 * A priority class, as the configuration declares it. The core needs only
 * value, may_preempt and preemptible; the signal and the grace its victims
 * get are the controller's, looked up by the class id the job carries.
 */
typedef struct sl_prio_class_spec {
    const char *name;     /* unique, 1..63 bytes */
    int32_t value;        /* the priority of its jobs (higher wins) */
    bool may_preempt;     /* its jobs may preempt strictly lower priorities */
    bool preemptible;     /* its jobs may be preempted (or shrunk, or reclaimed) */
} sl_prio_class_spec_t;

/*
 * Class 0 always exists: "default", for jobs that name no class. Its jobs
 * keep the priority of their spec, may be preempted, and may preempt only
 * if sl_preempt_config_t.default_may_preempt.
 */
#define SL_PRIO_CLASS_DEFAULT 0
#define SL_PRIO_CLASS_MAX 64

/* ---- configuration (part of sl_sched_config_t) ---- */

typedef struct sl_preempt_config {
    bool priority;             /* preempt strictly lower priorities (false: never) */
    bool reclaim;              /* fair-share reclaim across tenants */
    bool grow;                 /* grow elastic jobs into free capacity */
    bool default_may_preempt;  /* jobs of class 0 may preempt (the simulator's --preempt) */
    int32_t max_per_minute;    /* victims per 60 s of the caller's clock; 0 = unbounded */
    int32_t protect_after;     /* preemptions before a job is exempt; 0 = never exempt */
    int64_t protect_us;        /* how long the exemption lasts after its last preemption */
    int32_t max_preemptors;    /* victim searches one run makes; 0 = 16 */
} sl_preempt_config_t;

#define SL_PREEMPT_MAX_PREEMPTORS_DEFAULT 16

/* ---- what the core reports ---- */

typedef enum sl_preempt_reason {
    SL_PREEMPT_PRIORITY = 0, /* for a job of a higher priority */
    SL_PREEMPT_RECLAIM = 1,  /* for a job of a tenant below its fair share */
    SL_PREEMPT_DRAIN = 2     /* its node is drained past its deadline (no preemptor) */
} sl_preempt_reason_t;

const char *sl_preempt_reason_name(sl_preempt_reason_t r); /* "priority", "reclaim", "drain" */

/*
 * One preemption decision: job `victim` is to stop all its tasks (the
 * caller signals them with the class's signal, then SIGKILL after the
 * grace), then call sl_sched_stop_done; the core then requeues it with its
 * original submit time. lost_gpu_s is the work the victim loses, counted
 * as its GPUs times the seconds since it (last) started: the core does not
 * know about checkpoints. Valid during the callback only.
 */
typedef struct sl_preemption {
    uint64_t victim;
    uint64_t preemptor;        /* 0 for SL_PREEMPT_DRAIN */
    sl_preempt_reason_t reason;
    int32_t ntasks;            /* tasks the victim holds (all of them stop) */
    int64_t gpu_milli;         /* GPU capacity it holds, 1000 per whole GPU */
    double lost_gpu_s;         /* GPU-seconds since its start */
    int64_t at_us;             /* the decision's time */
} sl_preemption_t;

/*
 * A change of an elastic job's size. Shrink (to < from): tasks of ranks
 * to..from-1 are to stop (the highest ranks), then sl_sched_stop_done;
 * pls is NULL. Grow (to > from): tasks of ranks from..to-1 are placed and
 * allocated now at pls[0..to-from-1], for the caller to launch. preemptor
 * and reason say why a shrink was made (as sl_preemption_t); for a grow
 * preemptor is 0. Valid during the callback only.
 */
typedef struct sl_resize {
    uint64_t job;
    int32_t from, to;
    const sl_place_t *pls;
    uint64_t preemptor;
    sl_preempt_reason_t reason;
    int64_t at_us;
} sl_resize_t;

typedef void (*sl_preempt_fn)(void *ud, const sl_preemption_t *p);
typedef void (*sl_resize_fn)(void *ud, const sl_resize_t *r);

/*
 * The callbacks of sl_sched_run; any may be NULL (the decision is still
 * made). They run after all of a run's decisions, in decision order:
 * preemptions and shrinks, then starts, then grows. They may call back into
 * the scheduler (finish, cancel, requeue, submit, stop_done) but must not
 * run another cycle from inside one.
 */
typedef struct sl_cycle_ops {
    void (*on_start)(void *ud, const sl_job_t *job);
    sl_preempt_fn on_preempt;
    sl_resize_fn on_resize;
} sl_cycle_ops_t;

/* ---- a job's size history (elastic jobs; any job has its start) ---- */

/* One entry: from at_us on, the job's target size was ntasks (0 when it
 * stopped: finished, requeued or preempted). */
typedef struct sl_size_change {
    int64_t at_us;
    int32_t ntasks;
} sl_size_change_t;

/* The core keeps the last SL_JOB_HISTORY_MAX entries of each job. */
#define SL_JOB_HISTORY_MAX 32

/* ---- the scheduler's side (implemented in src/core/sched_preempt.c) ---- */

/*
 * Adds a priority class; returns its id (>= 1), SL_EEXIST for a used name,
 * SL_EINVAL for an empty or long name, SL_ERANGE past SL_PRIO_CLASS_MAX.
 * The name is copied. Jobs name it by id in sl_job_spec_t.prio_class.
 * O(classes).
 */
int sl_sched_add_class(sl_sched_t *s, const sl_prio_class_spec_t *spec);
/* The id of a class by name, or SL_ENOENT. O(classes). */
int sl_sched_class_find(const sl_sched_t *s, const char *name);
/* The class with this id (its name owned by the scheduler), or NULL. O(1). */
const sl_prio_class_spec_t *sl_sched_class(const sl_sched_t *s, int32_t id);

/*
 * One scheduling round at now_us, the entry point for callers that want
 * preemption, reclaim and elastic growth (sl_sched_cycle alone does none of
 * them): (1) each preemptor whose victims have all stopped is tried first;
 * (2) the cycle (sl_sched_cycle's rules); (3) if preemption or reclaim is
 * configured, the first 256 waiting jobs in queue order that do not fit
 * now are looked at, and each that may preempt (its class) or reclaim (its
 * tenant below its share) is given a victim set if one makes it fit (see
 * the file header), up to max_preemptors victim searches; jobs started by
 * this run are neither victims nor grown in it; (4) if grow is configured
 * and no job waits for room, elastic jobs grow. Calls ops (may be NULL)
 * as sl_cycle_ops_t says. Returns the number of jobs started. Can't fail.
 * Costs the cycle's, plus per examined preemptor O(running jobs log
 * running + units * placement).
 */
int sl_sched_run(sl_sched_t *s, int64_t now_us, const sl_cycle_ops_t *ops, void *ud,
                 sl_cycle_stats_t *stats);

/*
 * The tasks the core asked job id to stop have all ended: a preempted job
 * releases everything and is requeued with its original submit time (its
 * preemption counted for protection); a shrunk job releases the tasks of
 * the ranks above its new size. Returns 0, SL_ENOENT, or SL_ESTATE if the
 * job is not stopping (nothing changed). O(tasks + log pending).
 * sl_sched_finish / sl_sched_cancel / sl_sched_requeue of a stopping job
 * are allowed too (the job ended by itself meanwhile); they count as the
 * stop for its preemptor.
 */
int sl_sched_stop_done(sl_sched_t *s, uint64_t id, int64_t now_us);

/*
 * After a restart: job id, re-adopted (sl_sched_adopt) with every task it
 * had placed, was being shrunk to `to` tasks when the caller stopped (the
 * caller's own durable record says so, and its ranks >= to were told to
 * stop). Marks those top nplaced - to ranks stopping again, as the shrink
 * had left them, with no preemptor waiting for them (the one the shrink was
 * for is an ordinary pending job after a restart), so that
 * sl_sched_stop_done releases them once they have ended and no other
 * preemption picks the job meanwhile. Returns 0, SL_ENOENT, SL_ESTATE if
 * the job is not running or already stopping, or SL_EINVAL if `to` is not
 * in [max(1, min_tasks), nplaced). O(1).
 */
int sl_sched_resume_shrink(sl_sched_t *s, uint64_t id, int32_t to, int64_t now_us);

/*
 * Preempts (reason SL_PREEMPT_DRAIN, no preemptor) every running job with a
 * task on node that is not already stopping, ignoring classes and limits:
 * a drain's deadline has passed. Calls ops->on_preempt for each. Returns
 * the number of jobs preempted, or SL_ENOENT for a bad node. O(running
 * jobs * tasks).
 */
int sl_sched_evict_node(sl_sched_t *s, uint32_t node, int64_t now_us, const sl_cycle_ops_t *ops,
                        void *ud);
/*
 * As sl_sched_evict_node, but only the running jobs with a task on one of
 * node's GPUs in gpu_mask (bit i = GPU i): a GPU failed under them. A job
 * of a gang loses all its tasks, on every node (a gang never runs in
 * part). Returns the number preempted, or SL_ENOENT for a bad node.
 * O(running jobs * tasks).
 */
int sl_sched_evict_gpus(sl_sched_t *s, uint32_t node, uint32_t gpu_mask, int64_t now_us,
                        const sl_cycle_ops_t *ops, void *ud);

/* ---- a job's preemption state (O(1), can't fail) ---- */

/* The size the job is going to: ntasks placed less the tasks being stopped
 * (0 for a job being preempted, and for a job not running). */
int32_t sl_job_target_tasks(const sl_job_t *job);
/* Whether the core asked some of its tasks to stop and waits for stop_done. */
bool sl_job_stopping(const sl_job_t *job);
/* Times it was preempted, and when last (-1 if never). */
int32_t sl_job_preempt_count(const sl_job_t *job);
int64_t sl_job_last_preempt_us(const sl_job_t *job);
/* For a preemptor: victims (jobs or shrinks) it still waits for; 0 if none. */
int32_t sl_job_victims_left(const sl_job_t *job);
/* GPU-seconds the job has run, over all its runs, up to now_us. */
double sl_job_attained_gpu_s(const sl_job_t *job, int64_t now_us);
/* Its last sizes, oldest first: *out points to n <= SL_JOB_HISTORY_MAX
 * entries owned by the job (valid until it changes); returns n. */
size_t sl_job_size_history(const sl_job_t *job, const sl_size_change_t **out);

#endif
