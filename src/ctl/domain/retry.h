/*
 * retry.h - retries of failed jobs (docs/jobspec.md, "Retries").
 *
 * A job whose spec has retries N (sbatch --requeue with the config's
 * scheduler.default_retries, Kubernetes backoffLimit) runs up to N + 1
 * times with the same id. What counts as a failure: a task that exits
 * non-zero, is killed by a signal or by the kernel for memory, cannot be
 * launched, or is lost with its node under on_node_failure: fail (with the
 * default on_node_failure: requeue a node's loss requeues the job at once
 * and counts no attempt, as before). A cancel, a time limit, a dependency
 * never met and the controller's own refusals are final.
 *
 * A failed attempt is recorded (store: job_attempts) and the job leaves the
 * core at once, its resources freed, and waits pending outside it for its
 * back-off (backoff.h in slcommon: retry_backoff doubled per failure, at most
 * scheduler.retry_backoff_max); the sweep queues it again with its
 * original submit time. Its dependents and its array see only its last
 * attempt's end, since only that one ends the job. The back-off is wall
 * clock, stored, so a controller restarted during it keeps it.
 */
#ifndef SLUICE_CTL_RETRY_H
#define SLUICE_CTL_RETRY_H

#include "domain/ctl.h"

/* Whether j, failed by a task (j->retry_failed), gets another attempt:
 * its spec's retries are not used up. O(1). */
bool ctl_retry_due(const ctl_t *c, const ctl_job_t *j);
/* A task's failure has just failed j (its state FAILED, other tasks may
 * still be stopping): marks it (j->retry_failed) and, when a retry is
 * due, records the attempt at once without its back-off, so that a
 * controller restarted before the job settles still retries it. Urgent
 * write. */
void ctl_retry_failed(ctl_t *c, ctl_job_t *j);
/* Records j's failed attempt and puts j into its back-off: out of the core
 * (its resources freed, its names kept), its task rows gone, pending with
 * the reason "RetryBackoff: ...", its attempt counted in j->requeues (the
 * tasks' attempt number). Notifies REQUEUE. Can't fail (a failed write is
 * fatal, as every write). */
void ctl_retry_begin(ctl_t *c, ctl_job_t *j);
/* The sweep's part: queues the jobs whose back-off is over; a job the
 * core now refuses is failed through fail (jobs.c's ctl_job_fail, a
 * function pointer since it is a layer above). O(jobs in back-off). */
void ctl_retry_sweep(ctl_t *c, void (*fail)(ctl_t *c, ctl_job_t *j, const char *reason));
/* Start-up, after the active jobs are loaded and before they go back into
 * the core: each job's attempts so far, and back-offs still running (such
 * a job stays out of the core, j->retry_wait). 0, or -1 when the store
 * could not be read. */
int ctl_retry_recover(ctl_t *c);
/* Frees the list of jobs in back-off. Accepts a domain never opened. */
void ctl_retry_fini(ctl_t *c);

#endif
