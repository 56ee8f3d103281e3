/*
 * storerep.h - the rows `sluice report` reads from the store: every job
 * that held GPUs at some time in a window, one row each, with its GPUs,
 * its scheduling delay and its efficiency summary when they were recorded.
 *
 * A read on a connection of its own (read-only, WAL: it sees every commit
 * made before it began and never blocks the daemon's writes), opened and
 * used by one thread: the report runs beside the event loop (report.c).
 * It knows the tables (jobs, tasks, job_sched, job_eff) and nothing of
 * what the report makes of them. Nothing here allocates with sl_x*, whose
 * counter belongs to the loop's thread.
 */
#ifndef SLUICE_CTL_STOREREP_H
#define SLUICE_CTL_STOREREP_H

#include <stdbool.h>
#include <stdint.h>

#include <sqlite3.h>
#include <stddef.h>

#include "base/model.h"

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

/* Opens the database at path read-only for ctl_store_report_rows. 0, or -1
 * with "path: message" in err (*db is then NULL). */
int ctl_store_report_open(const char *path, sqlite3 **db, char *err, size_t errlen);

/*
 * Hands fn every job that ended in [since_us, until_us] and every job
 * running now that started before until_us, in no stated order. Two range
 * reads on the indexes jobs_end and jobs_active, each job's tasks by their
 * primary key, and job_sched and job_eff by theirs: O(jobs in the window *
 * log(jobs)), whatever the history's length. 0, or -1 with the reason in
 * err (a failed statement, a row sluiced did not write, or fn's -1).
 */
int ctl_store_report_rows(sqlite3 *db, int64_t since_us, int64_t until_us, ctl_report_row_fn fn,
                          void *ud, char *err, size_t errlen);

#endif
