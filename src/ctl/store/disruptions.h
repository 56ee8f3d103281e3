/*
 * opstore.h - the store's tables for issue 11: node drains, preemptions
 * and elastic size changes. Rows only, like store.h, in tables of their own
 * (CREATE TABLE IF NOT EXISTS), so databases of earlier versions need no
 * migration:
 *
 *   node_drain(name, reason, deadline_us, since_us, drained_us)
 *         a drain outlives a restart of sluiced (drain.c)
 *   preemptions(job, at_us, kind, cause, by_job, by_tenant, reason, tasks,
 *               gpu_seconds)   every preemption, shrink or drain stop
 *   job_size(job, at_us, size, why)   an elastic job's size changes
 *
 * Writes join the iteration's transaction (store.h); reads follow the
 * store's fail_stop. Statements are prepared per call: these are rare
 * events (an operator's drain, a preemption), not the per-job path.
 */
#ifndef SLUICE_CTL_OPSTORE_H
#define SLUICE_CTL_OPSTORE_H

#include "store/store.h"

/* Creates the tables if they are missing. 0, or -1 with a message in err. */
int ctl_opstore_open(ctl_store_t *s, char *err, size_t errlen);

/* A node's drain row (replacing any): deadline_us and drained_us -1 for
 * none (NULL in the table). Urgent: committed this iteration. */
void ctl_opstore_drain_put(ctl_store_t *s, const char *name, const ctl_node_t *n);
/* Removes the node's drain row (resume). Urgent. */
void ctl_opstore_drain_delete(ctl_store_t *s, const char *name);
/* A drain row; name valid during the call. 0, or -1 to stop. */
typedef int (*ctl_opstore_drain_fn)(void *ud, const char *name, const char *reason,
                                    int64_t deadline_us, int64_t since_us, int64_t drained_us);
/* Every drain row. 0 or -1 (ctl_store_errmsg). */
int ctl_opstore_drains_read(ctl_store_t *s, ctl_opstore_drain_fn fn, void *ud);

/* Records one preemption of job. Urgent. */
void ctl_opstore_preempt_add(ctl_store_t *s, uint64_t job, const ctl_preempt_t *p);
/* Records an elastic job's size change. Urgent: it commits with the task
 * rows the change adds (or, for a shrink, before the rows it will trim), so
 * that after a crash a last size below the job's task rows means a shrink
 * that had not finished (recover.c). */
void ctl_opstore_size_add(ctl_store_t *s, uint64_t job, const ctl_size_change_t *z);
/* Job's latest size change into *z: 1, 0 if it has none, or -1
 * (ctl_store_errmsg). */
int ctl_opstore_size_last(ctl_store_t *s, uint64_t job, ctl_size_change_t *z);
/* Deletes job's task rows (and task_mem rows) of index n and above: the
 * ranks an elastic shrink released. Urgent. */
void ctl_opstore_tasks_trim(ctl_store_t *s, uint64_t job, int32_t n);
/* Reads job's preemptions and size changes, oldest first, into x (whose
 * arrays the caller frees; loaded set). 0 or -1. */
int ctl_opstore_jobx_read(ctl_store_t *s, uint64_t job, ctl_jobx_t *x);

#endif
