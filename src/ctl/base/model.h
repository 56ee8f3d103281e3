/*
 * model.h - the records sluiced keeps about jobs, tasks and nodes, and the
 * names of their states (as stored in SQLite and shown by the API).
 *
 * Plain data: every layer above may read these records; only the domain
 * (jobs.c, nodes.c, recover.c) changes them, and the adapters write the few
 * fields marked "adapter" (what the agent port knows about a connection).
 */
#ifndef SLUICE_CTL_MODEL_H
#define SLUICE_CTL_MODEL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "sluice/list.h"
#include "sluice/sluice.h"

typedef enum ctl_job_state {
    CTL_JOB_PENDING = 0,
    CTL_JOB_RUNNING,
    CTL_JOB_SUCCEEDED,
    CTL_JOB_FAILED,
    CTL_JOB_CANCELLED,
    CTL_JOB_NSTATES
} ctl_job_state_t;

typedef enum ctl_task_state {
    CTL_TASK_LAUNCHING = 0, /* launch queued or sent, no `started` yet */
    CTL_TASK_RUNNING,
    CTL_TASK_EXITED,
    CTL_TASK_FAILED,        /* could not be launched */
    CTL_TASK_LOST,          /* its node failed */
    CTL_TASK_NSTATES
} ctl_task_state_t;

struct ctl_job;

/* What an agent reported of a task's usage (the heartbeat's usage, which
 * is cumulative since that agent began watching the task; eff.c). Zeroed:
 * nothing known. */
typedef struct ctl_usage {
    bool known;             /* a report arrived */
    int64_t samples;        /* GPU readings */
    double util_sum;        /* mean utilisation x samples */
    double util_peak;
    bool has_gpu_mem;
    int64_t gpu_mem_peak;   /* bytes */
    int64_t gpu_mem_total;  /* bytes, per GPU */
    bool has_cpu;
    double cpu_seconds;
    bool has_mem;
    int64_t mem_peak;       /* bytes */
    bool no_nvml;           /* its node cannot measure its GPUs */
} ctl_usage_t;

/* A job's efficiency, over its tasks (eff.c), as the job_eff table holds
 * it: NAN or -1 where unknown (NULL in the table). */
typedef struct ctl_eff {
    int64_t samples;        /* GPU readings over all its tasks */
    double gpu_util_mean;   /* 0..1, weighted by samples; NAN: unknown */
    double gpu_util_peak;
    int64_t gpu_mem_peak;   /* bytes, the most any of its GPUs used; -1 */
    int64_t gpu_mem_total;  /* bytes, per GPU; -1 */
    double cpu_seconds;     /* all its tasks; NAN */
    int64_t mem_peak;       /* bytes, the most any of its tasks used; -1 */
    int32_t no_nvml_node;   /* a core node id whose agent had no NVML for its GPUs; -1 */
} ctl_eff_t;

typedef struct ctl_task {
    int32_t node;          /* core node id; -1 when its node is no longer known */
    uint32_t gpu_mask;
    int32_t gpu_milli;
    int64_t gpu_mem_bytes;
    ctl_task_state_t state;
    int32_t pid;
    int32_t exit_code;     /* valid when has_exit */
    int32_t signal;
    bool has_exit;
    int64_t start_us;      /* reported by the agent; -1 until started */
    int64_t end_us;
    /* How its memory ended, as its agent reported with the exit
     * (docs/protocol.md, Enforcement; store: task_mem): killed by the
     * kernel for memory, the most it used, the hard limit it ran under and
     * the request that limit came from, in bytes; 0 when not known. */
    bool oom_killed;
    int64_t mem_peak;
    int64_t mem_limit;
    int64_t mem_request;
    /* The node's index of its live tasks (nodes.c): an intrusive list
     * (sluice/list.h), so that a node failure or an agent's hello visits
     * only that node's tasks. Linked while the task is launching or running
     * on a known node; `linked` says so, since a zeroed node is not. */
    struct ctl_job *job;   /* the job whose tasks[] holds this task */
    sl_list_t node_link;   /* on ctl_node_t.tasks while linked */
    bool linked;
    uint32_t seen;         /* hello reconciliation stamp (nodes.c) */
    bool stopping;         /* an elastic shrink stops it (preempt.c): its end fails nothing */
    /* Which run of its job it is (docs/protocol.md): the job's requeues
     * when it was placed, sent in its launch and named by every report of
     * it; -1: unknown (a row from before attempts), which any report
     * matches. */
    int32_t attempt;
    int64_t launch_mono_us; /* when its launch was last sent (ctl_mono_us); 0: not yet */
    /* Usage (eff.c): the agent's latest report, and what earlier agents of
     * this node reported before a restart started the count again. */
    ctl_usage_t use, use_before;
    /* Its GPUs' mean utilisation (0..1) between its last two reports (its
     * first report: its mean so far), for the heat map's idle GPUs
     * (eff.c); has_util_now false: not known. */
    bool has_util_now;
    double util_now;
} ctl_task_t;

/* One preemption of a job (the preemptions table, store/store.h):
 * its tasks stopped and the job requeued (kind "preempt": for job by_job;
 * "shrink": an elastic job lost tasks; "drain": its node's drain deadline
 * passed). */
typedef struct ctl_preempt {
    int64_t at_us;
    char kind[12];         /* "preempt", "shrink" or "drain" */
    char cause[12];        /* "priority", "reclaim" or "drain": /metrics' reason label */
    uint64_t by_job;       /* 0: none (a drain) */
    char by_tenant[SL_NAME_MAX];
    char reason[224];
    int32_t tasks;         /* tasks stopped */
    double gpu_seconds;    /* GPU time of the work lost: GPUs x seconds since each task started */
} ctl_preempt_t;

/* An elastic job's size change (the job_size table). */
typedef struct ctl_size_change {
    int64_t at_us;
    int32_t size;          /* tasks after the change */
    char why[96];
} ctl_size_change_t;

/* A job's preemptions and size changes, read from the store on first
 * view (views/disruptions.c):
 * loaded false until then. Freed with the job. */
typedef struct ctl_jobx {
    bool loaded;
    ctl_preempt_t *preempts;
    size_t npreempts;
    ctl_size_change_t *sizes;
    size_t nsizes;
} ctl_jobx_t;

/* One failed attempt of a job that was retried (the job_attempts table,
 * domain/retry.c): attempts count from 1; the run now (or the last one)
 * is the job's own record. */
typedef struct ctl_attempt {
    int32_t attempt;
    int64_t start_us, end_us;  /* -1: not known */
    bool has_exit;
    int32_t exit_code;
    int64_t retry_at_us;       /* when the next attempt could be queued again */
    char reason[256];
} ctl_attempt_t;

typedef struct ctl_job {
    uint64_t id;
    /* The spec's nodelist and exclude joined by commas (NULL: none): the
     * core request's include and exclude point here (domain/spec.c). */
    char *node_incl, *node_excl;
    int32_t tenant;        /* core tenant id; -1 when no longer configured */
    ctl_job_state_t state;
    /* What a listing reads of every job, in its first cache lines (a page
     * of 10,000 jobs touches each job once or twice; api.c). */
    int64_t submit_us, start_us, end_us;
    int32_t ntasks;        /* placed tasks (0 while pending) */
    ctl_task_t *tasks;
    bool in_core;          /* the core holds it (pending or running) */
    bool requeue_wait;     /* requeue once the surviving tasks have stopped */
    uint8_t hold;          /* CTL_HOLD_*; CTL_HOLD_NONE in the core or finished (deps.c) */
    int32_t array_index;   /* the I of A_I (deps.c, below) */
    uint64_t array_id;     /* 0: not an array element */
    json_t *spec;          /* the normalised submission (owned) */
    /* View caches that the API fills on first use (api.c); NULL until then. */
    char *head;            /* `{"id":N,<spec fields>,"submit_time":T` */
    size_t head_len;
    char *row;             /* text-table cells that never change: id, name,
                            * tenant, tasks, per-task resources */
    uint16_t row_len[5];   /* their lengths, stored back to back in row */
    uint16_t row_w[5];     /* and their widths on a terminal */
    char reason[256];      /* for finished jobs and the requeue wait (a listing
                            * reads its first byte for every pending job) */
    sl_job_spec_t core;    /* what the core was given */
    bool requeue_on_node_failure;
    int32_t exit_code;
    bool has_exit;
    int32_t live;          /* tasks launching or running */
    bool names_held;       /* core.task's GPU models and pool hold a reference
                            * each in the cluster (spec.c), from submission
                            * (or recovery) until the job leaves for good */
    int64_t requeue_after_mono_us; /* and not before this (fencing, jobs.c); 0: none */
    int32_t requeues;
    uint32_t master_node;
    bool retained;         /* finished and settled: in the finished list */
    /* Efficiency (eff.c): reports since the last job_eff write, when that
     * was (monotonic), and the row read back for a job whose tasks
     * reported nothing in memory (eff_db 0: not looked, 1: none, 2: eff_row). */
    bool eff_dirty;
    int64_t eff_written_mono_us;
    uint8_t eff_db;
    ctl_eff_t eff_row;
    /* Arrays and dependencies (deps.c, docs/arrays.md). An array of n
     * elements has the job ids A..A+n-1, A its own id; element k has the
     * k-th smallest index. A held job is pending outside the core until
     * deps.c releases it (its dependencies are met, its array's limit has
     * room) or fails it (DependencyNeverSatisfied). */
    uint8_t dep_seen;      /* deps.c's own marks of what it has counted */
    ctl_jobx_t x;          /* preemptions and size changes */
    /* Retries (domain/retry.c): failed attempts retried so far; while
     * retry_wait, the job is pending outside the core until retry_at_us
     * (wall clock), its back-off. */
    int32_t retries_used;
    int32_t retries;       /* the spec's retries, copied where spec is set:
                            * a list reads it for every job, and a look-up
                            * in the spec object is a cache miss each */
    bool retry_wait;
    bool retry_failed;     /* this run failed as a retry counts (a task's failure) */
    int64_t retry_at_us;
    /* The failed attempts as the API shows them, a view cache read from
     * the store on first view (views/disruptions.c) and appended to by
     * retry.c once loaded; freed with the job. */
    bool attempts_loaded;
    ctl_attempt_t *attempts;
    size_t nattempts;
    /* What its submission was told (views/secretapi.h), shown with the job
     * until the controller restarts (not stored); NULL: nothing. Owned. */
    json_t *warnings;
} ctl_job_t;

/* Why a pending job is held outside the core (ctl_job_t.hold). */
enum {
    CTL_HOLD_NONE = 0,
    CTL_HOLD_DEPS,         /* its dependencies (or singleton) are not met */
    CTL_HOLD_ARRAY         /* its array waits on dependencies or at its limit */
};

typedef struct ctl_node {
    uint32_t id;           /* core node id */
    int64_t last_seen_mono_us;
    int64_t last_seen_us;  /* wall clock, for the API; -1 never */
    char addr[64];         /* address the agent connected from (MASTER_ADDR) */
    int32_t live_tasks;    /* the length of tasks below */
    sl_list_t tasks;       /* live tasks placed here, by ctl_task_t.node_link,
                            * the most recently linked first (nodes.c) */
    char gpu_model[SL_NAME_MAX];
    char *spec_json;       /* as stored in the nodes table */
    bool connected;        /* adapter: its agent has a connection that said hello */
    /* Tasks lost here may run until this time (monotonic): their agent
     * fences them by then (jobs.c, docs/protocol.md Fencing). 0: none. */
    int64_t fence_until_mono_us;
    /* Drain (domain/drain.c; the node_drain table): no new placements;
     * at drain_deadline_us (-1: none) the tasks left are preempted; drained
     * once no task is left. */
    bool draining;
    bool drained;
    bool drain_stopped;    /* the deadline passed and its tasks were stopped */
    int64_t drain_since_us;
    int64_t drain_deadline_us;
    int64_t drained_us;    /* -1 until drained */
    char drain_reason[128];
} ctl_node_t;

/* The causes of a preemption, /metrics' reason label. */
typedef enum ctl_preempt_cause {
    CTL_PREEMPT_PRIORITY = 0, /* for a higher-priority job */
    CTL_PREEMPT_RECLAIM,      /* for a tenant below its fair share */
    CTL_PREEMPT_DRAIN,        /* its node's drain deadline passed */
    CTL_PREEMPT_HEALTH,       /* a GPU or its node failed under it (domain/health.c) */
    CTL_PREEMPT_NCAUSES
} ctl_preempt_cause_t;
/* "priority", "reclaim", "drain", "health"; "?" out of range. Can't fail. */
const char *ctl_preempt_cause_name(ctl_preempt_cause_t c);

/* State names: "?" for a value out of range. Can't fail. */
const char *ctl_job_state_name(ctl_job_state_t st);
const char *ctl_task_state_name(ctl_task_state_t st);
/* Parses a state name. 0, or -1 (and *out unchanged) for an unknown name. */
int ctl_job_state_parse(const char *s, ctl_job_state_t *out);
int ctl_task_state_parse(const char *s, ctl_task_state_t *out);
/* True while a task is launching or running. */
bool ctl_task_is_live(const ctl_task_t *t);

/* A new job record with no spec, no tasks and no times (start/end -1).
 * Can't fail (aborts on out-of-memory). */
ctl_job_t *ctl_job_new(void);
/* Frees j with its spec, view caches and tasks; accepts NULL. The caller
 * must have taken j out of every index first (the job table, its nodes'
 * task lists). */
void ctl_job_free(ctl_job_t *j);

#endif
