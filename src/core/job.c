/*
 * job.c - read-only accessors of a job (include/sluice/job.h).
 *
 * Jobs are owned by the scheduler (sched*.c); the struct lives in
 * sched_internal.h. Every accessor is O(1) and can't fail. The reason and
 * status of a pending job may be shared by all jobs a cycle did not reach
 * ("waiting behind job 17"), so they are resolved through the scheduler
 * instead of being copied into every job: a cycle costs O(jobs examined),
 * not O(jobs pending).
 */
#include <stddef.h>

#include "sched_internal.h"

const char *sl_job_state_name(sl_job_state_t st) {
    switch (st) {
    case SL_JOB_PENDING: return "pending";
    case SL_JOB_RUNNING: return "running";
    case SL_JOB_DONE: return "done";
    case SL_JOB_CANCELLED: return "cancelled";
    }
    return "unknown";
}

uint64_t sl_job_id(const sl_job_t *job) {
    return job->spec.id;
}

const sl_job_spec_t *sl_job_spec(const sl_job_t *job) {
    return &job->spec;
}

sl_job_state_t sl_job_state(const sl_job_t *job) {
    return job->state;
}

int64_t sl_job_start_us(const sl_job_t *job) {
    return job->start_us;
}

int32_t sl_job_ntasks_placed(const sl_job_t *job) {
    return job->state == SL_JOB_RUNNING ? job->nplaced : 0;
}

const sl_place_t *sl_job_place(const sl_job_t *job, int32_t i) {
    if (job->state != SL_JOB_RUNNING || i < 0 || i >= job->nplaced) return NULL;
    return &job->pls[i];
}

const char *sl_job_reason(const sl_job_t *job) {
    if (job->state != SL_JOB_PENDING) return job->state == SL_JOB_RUNNING ? "" : job->reason;
    return sl__sched_job_reason(job->owner, job);
}

sl_status_t sl_job_status(const sl_job_t *job) {
    if (job->state == SL_JOB_RUNNING) return SL_FIT;
    if (job->state != SL_JOB_PENDING) return job->status;
    return sl__sched_job_status(job->owner, job);
}

/* ---- preemption state (sluice/preempt.h) ---- */

int32_t sl_job_target_tasks(const sl_job_t *job) {
    if (job->state != SL_JOB_RUNNING) return 0;
    return job->stop_whole ? 0 : job->nplaced - job->stop_n;
}

bool sl_job_stopping(const sl_job_t *job) {
    return job->state == SL_JOB_RUNNING && job->stop_n > 0;
}

int32_t sl_job_preempt_count(const sl_job_t *job) {
    return job->npreempt;
}

int64_t sl_job_last_preempt_us(const sl_job_t *job) {
    return job->last_preempt_us;
}

int32_t sl_job_victims_left(const sl_job_t *job) {
    return job->victims_left;
}

double sl_job_attained_gpu_s(const sl_job_t *job, int64_t now_us) {
    return job_attained(job, now_us);
}

size_t sl_job_size_history(const sl_job_t *job, const sl_size_change_t **out) {
    *out = job->hist ? job->hist : job->h_in;
    return (size_t)job->nhist;
}
