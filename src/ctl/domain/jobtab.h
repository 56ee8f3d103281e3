/*
 * jobtab.h - the jobs sluiced holds in memory, by id, and the list of
 * retained finished jobs.
 *
 * Memory stays bounded on a controller that runs for months: a finished
 * job, once settled (the core has already forgotten it), joins a FIFO of
 * finished jobs, and the loop's TRIM hook drops from its head the jobs that
 * ended more than job_retention ago or exceed max_finished_jobs (Slurm's
 * MinJobAge/MaxJobCount), at most CTL_TRIM_PER_PASS per pass. A job whose
 * spec has ttl_after_finished (Kubernetes' ttlSecondsAfterFinished) leaves
 * that many seconds after it ended, sooner than the others: a heap by that
 * time. SQLite keeps them; the API reads a forgotten job back by id
 * (ctl_job_fetch).
 */
#ifndef SLUICE_CTL_JOBTAB_H
#define SLUICE_CTL_JOBTAB_H

#include "domain/ctl.h"

/* An empty table (by id and in id order). Can't fail. */
void ctl_jobs_init(ctl_t *c);
/* The job with this id if it is in memory (pending, running, or finished
 * and still retained), else NULL. O(1) expected. */
ctl_job_t *ctl_job_find(ctl_t *c, uint64_t id);
/* Puts j into the table (replacing a job with its id); the table owns it
 * from then on. O(1) amortised. */
void ctl_job_register(ctl_t *c, ctl_job_t *j);
/* Takes the job with this id out of the table and returns it (NULL if
 * absent); the caller owns it again. */
ctl_job_t *ctl_job_unregister(ctl_t *c, uint64_t id);
/* Jobs in id order: ctl_jobs_seek gives the position from which
 * ctl_jobs_next returns, one per call, every job in memory whose id is
 * above `after`, lowest id first, then NULL. Registering or unregistering
 * a job invalidates the position. Seek is O(log n), except the first after
 * a start-up, which sorts (O(n log n)); next is O(1) amortised. */
size_t ctl_jobs_seek(ctl_t *c, uint64_t after);
ctl_job_t *ctl_jobs_next(ctl_t *c, size_t *it);
/* Appends a finished, settled job to the finished list (once), and to the
 * heap of jobs with a ttl_after_finished when its spec has one. O(log n). */
void ctl_job_retain(ctl_t *c, ctl_job_t *j);
/* Drops from memory the retained finished jobs that ended more than their
 * ttl_after_finished ago, then, oldest first, those that ended more than
 * job_retention ago or exceed max_finished_jobs, at most max of them. Returns how many list entries it consumed: max means there may be
 * more to drop. */
size_t ctl_jobs_trim(ctl_t *c, int64_t now_us, size_t max);
/* The loop's TRIM hook (ud is the ctl_t): one pass of ctl_jobs_trim;
 * true when there may be more to drop. */
bool ctl_jobs_trim_hook(void *ud);
/* Takes j out of the scheduler (finished if it runs there, cancelled if it
 * waits there, then forgotten), so that its resources serve others; no-op
 * for a job not in the core. */
void ctl_job_leave_core(ctl_t *c, ctl_job_t *j, int64_t now_us);
/* Frees every job in the table and the table itself. */
void ctl_jobs_fini(ctl_t *c);

#endif
