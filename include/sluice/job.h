/*
 * job.h - jobs as the scheduler sees them.
 *
 * A job is a gang of ntasks identical tasks: all start together or none do.
 * An elastic job has min_tasks < ntasks and starts with the largest count in
 * [min_tasks, ntasks] that fits; later it may grow toward ntasks and shrink
 * toward min_tasks (sluice/preempt.h). A job belongs to a tenant (fair sharing),
 * has a priority, a submit time and an optional time limit that also serves
 * as the runtime estimate for backfill.
 */
#ifndef SLUICE_JOB_H
#define SLUICE_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "sluice/cluster.h"
#include "sluice/error.h" /* sl_status_t */
#include "sluice/resources.h"

#define SL_MAX_TASKS 4096
#define SL_REASON_MAX 160

typedef enum sl_job_state {
    SL_JOB_PENDING = 0,
    SL_JOB_RUNNING = 1,
    SL_JOB_DONE = 2,      /* finished (any exit), resources released */
    SL_JOB_CANCELLED = 3
} sl_job_state_t;

const char *sl_job_state_name(sl_job_state_t st);

typedef struct sl_job_spec {
    uint64_t id;            /* chosen by the caller, unique within a scheduler */
    int32_t tenant;         /* id from sl_sched_add_tenant */
    int32_t priority;       /* higher runs first under the "priority" order */
    int64_t submit_us;
    int32_t ntasks;         /* 1..SL_MAX_TASKS; the maximum for elastic jobs */
    int32_t min_tasks;      /* 0 or == ntasks: rigid gang; else elastic minimum */
    /* per task; its node fields (nodes_min.., exclusive, include, exclude)
     * shape the gang (sl_place_gang); include/exclude are the caller's and
     * must stay valid while the scheduler knows the job. An elastic job
     * cannot set them; tasks_per_node must divide ntasks. */
    sl_task_req_t task;
    int64_t time_limit_us;  /* 0 = none (backfill then uses default_limit_us) */
    /* The runtime backfill assumes for a job without time_limit_us (the
     * caller's default for the job's pool, say): an estimate, which the
     * core never enforces. 0 = the scheduler's default_time_limit_us. */
    int64_t default_limit_us;
    /* Priority class (sluice/preempt.h, sl_sched_add_class); 0 = "default".
     * With a class, sl_sched_submit sets the stored spec's priority to the
     * class's value, so that one number orders and preempts. */
    int32_t prio_class;
    /* Advance reservation the job runs in (sluice/resv.h: an id from
     * sl_sched_resv_add, whose tenants must include the job's); 0 = none.
     * Such a job runs only on the reservation's nodes, inside its window. */
    int32_t resv;
} sl_job_spec_t;

typedef struct sl_job sl_job_t; /* owned by the scheduler */

uint64_t sl_job_id(const sl_job_t *job);
const sl_job_spec_t *sl_job_spec(const sl_job_t *job);
sl_job_state_t sl_job_state(const sl_job_t *job);
int64_t sl_job_start_us(const sl_job_t *job);   /* -1 if never started */
/* Number of tasks placed (running); 0 while pending. */
int32_t sl_job_ntasks_placed(const sl_job_t *job);
/* Placement of task i (0 <= i < ntasks_placed); NULL otherwise. */
const sl_place_t *sl_job_place(const sl_job_t *job, int32_t i);
/* Why the job waits ("needs 4 GPUs of model H100 on one node; largest free
 * block is 2"); "" when running or never tried. Valid until the job changes. */
const char *sl_job_reason(const sl_job_t *job);
/* Status of the last attempt to start it (SL_FIT once running). */
sl_status_t sl_job_status(const sl_job_t *job);

#endif
