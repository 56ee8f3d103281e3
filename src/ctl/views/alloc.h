/*
 * alloc.h - what makes a job an allocation (alloc.c): Slurm's model, where
 * one task runs the job's command (the batch step) and every task holds
 * its resources for the job steps srun starts (docs/slurm.md).
 */
#ifndef SLUICE_CTL_ALLOC_H
#define SLUICE_CTL_ALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "domain/ctl.h"

/* The variables of an allocation's tasks that srun reads: the step token
 * and the API's URL. */
#define CTL_STEP_TOKEN_ENV "SLUICE_STEP_TOKEN"
#define CTL_STEP_SERVER_ENV "SLUICE_SERVER"
/* The step token: "step-" and 64 lower-case hex digits. */
#define CTL_STEP_TOKEN_LEN 69

/* True when j is an allocation (its spec's allocation is true). O(1). */
bool ctl_job_is_allocation(const ctl_job_t *j);

/* The task that runs an allocation's batch step: the first task on the
 * first of its nodes in Slurm's order (names sorted as SLURM_JOB_NODELIST
 * lists them). j must be placed (ntasks > 0). O(tasks^2) names compared,
 * for gangs of at most a few hundred tasks. */
int32_t ctl_alloc_batch_task(ctl_t *c, const ctl_job_t *j);

/* Slurm's SLURM_TASKS_PER_NODE of j: each node's tasks, nodes in name
 * order, runs of equal counts as N(xK) ("2(x3),1"), into buf. O(tasks^2). */
void ctl_alloc_tasks_per_node(ctl_t *c, const ctl_job_t *j, char *buf, size_t len);

/*
 * The step token of j's current run, into out (outlen > CTL_STEP_TOKEN_LEN):
 * "step-" + HMAC-SHA256(key, "sluice-step:" + job id + ":" + start time),
 * where key is the cluster token, or, when that is stored hashed, a
 * random key of this controller process (tokens then change when it
 * restarts). Only this job's tasks see it, and it opens only this job's
 * steps while the job runs (docs/security.md). 0, or SL_EIO when
 * libcrypto fails. O(1).
 */
int ctl_step_token(ctl_t *c, const ctl_job_t *j, char *out, size_t outlen);

/* The API's URL as the tasks reach it: http(s)://LISTEN. Returns buf. */
const char *ctl_step_server(ctl_t *c, char *buf, size_t len);

#endif
