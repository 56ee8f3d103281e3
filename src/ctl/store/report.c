/*
 * storerep.c - the store's read for `sluice report` (storerep.h).
 *
 * One statement, a UNION ALL of two range reads: jobs that ended in the
 * window (the jobs_end index) and jobs running now (the jobs_active partial
 * index, whose WHERE clause the query repeats word for word so that SQLite
 * uses it). For each job a correlated sub-query sums its tasks' GPUs by the
 * tasks table's primary key, and job_sched and job_eff are joined by
 * theirs. The number of rows read is the number of jobs in the window (plus
 * their tasks), never the whole history: at 1,000,000 finished jobs a
 * 24-hour window reads that day's jobs only (bench/report_scale.py).
 *
 * A task row holds a GPU mask and the share of each GPU it uses (1000 for
 * whole GPUs), so the GPUs it holds are popcount(mask) * milli; SQLite has
 * no popcount, so the statement calls sl_popcount, registered on the
 * connection here.
 */
#include <stdio.h>
#include <stdlib.h>

#include "store/report.h"

#define JOB_SIDE                                                                                \
    "SELECT j.tenant, j.state, j.submit_us, j.start_us, j.end_us,"                              \
    " (SELECT total(t.gpu_milli * sl_popcount(t.gpu_mask)) FROM tasks t WHERE t.job = j.id),"  \
    " s.sched_delay_us, e.gpu_util_mean, e.gpu_mem_peak, e.gpu_mem_total, e.samples"            \
    " FROM jobs j LEFT JOIN job_sched s ON s.job = j.id LEFT JOIN job_eff e ON e.job = j.id"

static const char report_sql[] =
    JOB_SIDE " WHERE j.end_us >= ?1 AND j.end_us <= ?2"
    " UNION ALL "
    JOB_SIDE " WHERE j.state IN ('pending','running') AND j.start_us IS NOT NULL"
    " AND j.start_us <= ?2";

static void popcount_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
    (void)argc;
    sqlite3_result_int(ctx, __builtin_popcountll((unsigned long long)sqlite3_value_int64(argv[0])));
}

static int fail(sqlite3 *db, const char *what, char *err, size_t errlen) {
    snprintf(err, errlen, "%s: %s", what, db ? sqlite3_errmsg(db) : "out of memory");
    return -1;
}

static int64_t col_i64(sqlite3_stmt *st, int i, int64_t dflt) {
    return sqlite3_column_type(st, i) == SQLITE_NULL ? dflt : sqlite3_column_int64(st, i);
}

int ctl_store_report_open(const char *path, sqlite3 **db, char *err, size_t errlen) {
    if (sqlite3_open_v2(path, db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK ||
        sqlite3_create_function(*db, "sl_popcount", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL,
                                popcount_fn, NULL, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s: %s", path, *db ? sqlite3_errmsg(*db) : "cannot open");
        sqlite3_close(*db);
        *db = NULL;
        return -1;
    }
    sqlite3_busy_timeout(*db, 5000);
    return 0;
}

int ctl_store_report_rows(sqlite3 *db, int64_t since_us, int64_t until_us, ctl_report_row_fn fn,
                          void *ud, char *err, size_t errlen) {
    const char *what = "reading the report's jobs";
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, report_sql, -1, &st, NULL) != SQLITE_OK)
        return fail(db, what, err, errlen);
    int rc = SQLITE_DONE, out = 0;
    if ((sqlite3_bind_int64(st, 1, since_us) | sqlite3_bind_int64(st, 2, until_us)) != SQLITE_OK) {
        out = fail(db, what, err, errlen);
        goto done;
    }
    while (out == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        ctl_report_row_t r = {0};
        const char *tenant = (const char *)sqlite3_column_text(st, 0);
        const char *state = (const char *)sqlite3_column_text(st, 1);
        if (tenant == NULL || state == NULL || ctl_job_state_parse(state, &r.state) < 0) {
            snprintf(err, errlen, "%s: a job row's tenant or state (\"%.32s\") is not one sluiced "
                     "writes", what, state ? state : "");
            out = -1;
            break;
        }
        r.tenant = tenant;
        r.submit_us = col_i64(st, 2, 0);
        r.start_us = col_i64(st, 3, -1);
        r.end_us = col_i64(st, 4, -1);
        r.gpu_milli = (int64_t)sqlite3_column_double(st, 5);
        r.has_sched = sqlite3_column_type(st, 6) != SQLITE_NULL;
        r.sched_delay_us = col_i64(st, 6, 0);
        r.has_eff = col_i64(st, 10, 0) > 0 && sqlite3_column_type(st, 7) != SQLITE_NULL;
        r.gpu_util_mean = sqlite3_column_double(st, 7);
        r.gpu_mem_peak = col_i64(st, 8, -1);
        r.gpu_mem_total = col_i64(st, 9, -1);
        out = fn(ud, &r);
    }
    if (out == 0 && rc != SQLITE_DONE)
        out = fail(db, what, err, errlen);
done:
    sqlite3_finalize(st);
    return out;
}
