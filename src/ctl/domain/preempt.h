/*
 * preempt.h - preemption, elastic resizes and drain evictions in sluiced
 * (docs/elastic.md).
 *
 * The core decides (sluice/preempt.h: sl_sched_run's on_preempt and
 * on_resize, sl_sched_evict_node); this layer carries the decisions out on
 * the live cluster: the victim's tasks get their priority class's signal
 * and SIGKILL after its grace (a kill with preempt set, so each task finds
 * the SIGKILL time in its SLUICE_PREEMPT_FILE), the victim waits, pending,
 * until they have all ended and is then requeued with its original submit
 * time and id (ctl_job_settle calls sl_sched_stop_done); a shrink stops the
 * highest ranks the same way and releases them once they have ended; a
 * grow launches the new ranks at once. Every preemption and shrink is
 * recorded (the preemptions table: who, for whom, why, GPU-seconds lost),
 * every size change too (job_size), and counted for /metrics.
 *
 * It sits above the domain (jobs.c) and reaches it by calls; the domain
 * reaches it only through the hooks ctl_preempt_init registers (c->preempt).
 */
#ifndef SLUICE_CTL_PREEMPT_H
#define SLUICE_CTL_PREEMPT_H

#include <stdbool.h>

#include "domain/jobs.h"

/* Registers this layer's hooks in c->preempt (before the first cycle). */
void ctl_preempt_init(ctl_t *c);

/* How j's tasks are stopped when it is preempted, shrunk or drained: the
 * signal and grace of its priority class (SIGTERM and kill_grace without
 * one), preempt set. Can't fail. */
void ctl_job_stop_opts(ctl_t *c, const ctl_job_t *j, sl_proto_kill_t *k);
/* The GPU time of task t's work so far: its GPUs (a share as a fraction)
 * x seconds since it started; 0 before it started. Can't fail. */
double ctl_task_gpu_seconds(const ctl_job_t *j, const ctl_task_t *t, int64_t now_us);
/* Counts one preemption of tenant's jobs for /metrics. Can't fail. */
void ctl_preempt_count(ctl_t *c, int32_t tenant, ctl_preempt_cause_t cause);
/* Preempts running job j: each live task gets ctl_job_stop_opts's kill,
 * the job is pending again at once (requeue_wait, its resources held in
 * the core) and is requeued with its original submit time and id once the
 * last task has reported its end (ctl_job_settle). The caller fills p's
 * kind, by_job, by_tenant and reason; this fills the rest and records it
 * (the preemptions table, j->x, the count of cause). 0, or SL_ESTATE when j
 * is not running. O(j's tasks). */
int ctl_job_preempt(ctl_t *c, ctl_job_t *j, ctl_preempt_t *p, ctl_preempt_cause_t cause);

/* After a restart: j, re-adopted with every task row it had, was being
 * shrunk to size tasks (its last size record is newer than its start and
 * below its task rows). Marks ranks >= size stopping again and tells the
 * core (sl_sched_resume_shrink), so that their ends fail nothing and free
 * their capacity; finishes the shrink at once when none of them is live.
 * Their agents are told again when they say hello (jobs.c). */
void ctl_job_resume_shrink(ctl_t *c, ctl_job_t *j, int32_t size);

/* Every running job with a task on node (all), or on one of its GPUs of
 * gpu_mask, is preempted as kind ("drain", "health") with cause and reason
 * (sl_sched_evict_node, sl_sched_evict_gpus): a drain's deadline, a GPU's
 * fault. Returns the number of jobs preempted, or SL_ENOENT for a bad
 * node. O(running jobs x tasks). */
int ctl_preempt_evict(ctl_t *c, uint32_t node, bool all, uint32_t gpu_mask, const char *kind,
                      ctl_preempt_cause_t cause, const char *reason);

#endif
