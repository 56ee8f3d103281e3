/*
 * storerep.h - the rows `sluice report` reads from the store: every job
 * that held GPUs at some time in a window, one row each, with its GPUs,
 * its scheduling delay and its efficiency summary when they were recorded.
 *
 * A read over the store's connection, on the store's layer: it knows the
 * tables (jobs, tasks, job_sched, job_eff) and nothing of what the report
 * makes of them (report.c).
 */
#ifndef SLUICE_CTL_STOREREP_H
#define SLUICE_CTL_STOREREP_H

#include <stdbool.h>
#include <stdint.h>

#include "store.h"

typedef struct ctl_report_row {
    const char *tenant;        /* the stored tenant name; valid during the call */
    ctl_job_state_t state;
    int64_t submit_us;
    int64_t start_us;          /* -1: never started (cancelled while pending) */
    int64_t end_us;            /* -1: still running */
    int64_t gpu_milli;         /* GPUs its tasks held, summed (1000 = one GPU) */
    bool has_sched;            /* a job_sched row exists */
    int64_t sched_delay_us;
    bool has_eff;              /* a job_eff row with samples > 0 exists */
    double gpu_util_mean;      /* 0..1, mean over the job's GPUs and samples */
    int64_t gpu_mem_peak;      /* bytes, the peak on one of its GPUs */
    int64_t gpu_mem_total;     /* bytes, what one of its GPUs has */
} ctl_report_row_t;

/* A row; 0 to go on, -1 to stop (the reason in the store's errbuf). */
typedef int (*ctl_report_row_fn)(void *ud, const ctl_report_row_t *r);

/*
 * Hands fn every job that ended in [since_us, until_us] and every job
 * running now that started before until_us, in no stated order. Two range
 * reads on the indexes jobs_end and jobs_active, each job's tasks by their
 * primary key, and job_sched and job_eff by theirs: O(jobs in the window *
 * log(jobs)), whatever the history's length. 0, or -1 as the store's other
 * reads (ctl_store_errmsg says why; fatal once fail_stop is set).
 */
int ctl_store_report_rows(ctl_store_t *s, int64_t since_us, int64_t until_us,
                          ctl_report_row_fn fn, void *ud);

#endif
