/*
 * deps.h - job arrays and job dependencies in sluiced (deps.c,
 * docs/arrays.md).
 *
 * A layer above the domain (jobs.c): jobs.c tells it of a job's first
 * start and of its end through c->ev (ctl.h), which ctl_deps_init sets;
 * it puts held jobs into the core and fails those whose dependencies can
 * never be met through the domain's own calls.
 */
#ifndef SLUICE_CTL_DEPS_H
#define SLUICE_CTL_DEPS_H

#include "domain/jobs.h"

/* Sets up c->deps and c->ev. Call after ctl_domain_open and before
 * ctl_recover. Can't fail (aborts on out-of-memory). */
void ctl_deps_init(ctl_t *c);
/* Frees c->deps (the jobs are the job table's); accepts NULL state. */
void ctl_deps_fini(ctl_t *c);

/*
 * Submits a validated job (ctl_job_from_spec). A job without `array` and
 * `dependency` goes to ctl_job_submit. An array creates its n elements
 * (j is the first, with the array's id) in the core or held, all written
 * in one transaction; a job with dependencies is written held and waits
 * outside the core until they are met (or is failed at once with
 * DependencyNeverSatisfied when they never can be). Ownership and return
 * codes as ctl_job_submit, plus: SL_EINVAL with *field "array" (over
 * max_array_size) or "dependency" (a job that does not exist, an index
 * the array does not have), SL_EPERM with *field "dependency" (another
 * tenant's job). *field is NULL when no field is to blame.
 * O(elements + terms).
 */
int ctl_submit(ctl_t *c, ctl_job_t *j, char *err, size_t errlen, const char **field);

/* The id of element index of array, or 0 when array is not an array or
 * has no such index. Reads the store for an array no longer in memory. */
uint64_t ctl_array_element(ctl_t *c, uint64_t array, int64_t index);
/* Whether id is an array's id (its first element's). */
bool ctl_array_is(ctl_t *c, uint64_t id);
/* Cancels every pending or running element of array id: first stops its
 * releases, then cancels them in index order. Returns how many were
 * cancelled (0: none left to cancel). O(elements). */
int ctl_array_cancel(ctl_t *c, uint64_t id);
/* The concurrency limit of array id while it has elements in memory
 * (0: none or unknown). */
int32_t ctl_array_limit(ctl_t *c, uint64_t id);
/* Fills array_id and array_index of a job read back from the store
 * (ctl_job_fetch). Can't fail (a failed read leaves them 0). */
void ctl_array_fill(ctl_t *c, ctl_job_t *j);

/* Why the held job j waits ("Dependency: waits for 123 (afterok)",
 * "JobArrayTaskLimit: ..."), into buf; "" for a job not held. */
const char *ctl_hold_reason(ctl_t *c, const ctl_job_t *j, char *buf, size_t len);

/* Start-up, between loading the active jobs and putting them back into
 * the core (recover.c): marks each pending job that waits on dependencies
 * or on its array as held (so that the restore leaves it out of the core)
 * and rebuilds the arrays. 0, or -1 when the store could not be read. */
int ctl_deps_recover_hold(ctl_t *c);
/* After the restore: counts the jobs in the core by name (singleton) and
 * releases what may run now, as a submission would. */
void ctl_deps_recover_release(ctl_t *c);

#endif
