/*
 * sqlite_attempts.c - the failed attempts of retried jobs in SQLite
 * (store.h; the table is created with the others, sqlite.c).
 *
 * A row is written when a failed job goes back to the queue for another
 * attempt: a few per failure, never on the per-job path of a job that
 * succeeds, so each function prepares and finalises its statement.
 */
#include <stdio.h>
#include <string.h>

#include "store/sqlite.h"

void ctl_store_attempt_add(ctl_store_t *s, uint64_t job, const ctl_attempt_t *a) {
    sqlite3_stmt *st = NULL;
    ctl_sqlite_write_begin(s, true);
    if (sqlite3_prepare_v2(s->db, "INSERT OR REPLACE INTO job_attempts(job, attempt, start_us,"
                                  " end_us, exit_code, reason, retry_at_us)"
                                  " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)", -1, &st,
                           NULL) != SQLITE_OK)
        ctl_sqlite_write_step(s, NULL, SQLITE_ERROR, "attempt add");
    int b = sqlite3_bind_int64(st, 1, (sqlite3_int64)job);
    b |= sqlite3_bind_int(st, 2, a->attempt);
    b |= a->start_us >= 0 ? sqlite3_bind_int64(st, 3, a->start_us) : sqlite3_bind_null(st, 3);
    b |= a->end_us >= 0 ? sqlite3_bind_int64(st, 4, a->end_us) : sqlite3_bind_null(st, 4);
    b |= a->has_exit ? sqlite3_bind_int(st, 5, a->exit_code) : sqlite3_bind_null(st, 5);
    b |= sqlite3_bind_text(st, 6, a->reason, -1, SQLITE_STATIC);
    b |= sqlite3_bind_int64(st, 7, a->retry_at_us);
    ctl_sqlite_write_step(s, st, b, "attempt add");
    sqlite3_finalize(st);
}

int ctl_store_attempts_active(ctl_store_t *s, ctl_store_attempts_fn fn, void *ud) {
    sqlite3_stmt *st = NULL;
    /* The active jobs through their partial indexes, then each one's rows
     * by the primary key. */
    /* Active: pending or running, or failed with tasks still live (the
     * last attempt's row then has no retry_at yet). */
    if (sqlite3_prepare_v2(s->db, "SELECT a.job, COUNT(*), (SELECT b.retry_at_us FROM"
                                  " job_attempts b WHERE b.job = a.job ORDER BY b.attempt DESC"
                                  " LIMIT 1) FROM jobs j JOIN job_attempts a ON a.job = j.id"
                                  " WHERE j.state IN ('pending','running') OR j.id IN"
                                  " (SELECT job FROM tasks WHERE state IN ('launching','running'))"
                                  " GROUP BY a.job",
                           -1, &st, NULL) != SQLITE_OK) {
        ctl_sqlite_read_fail(s, "reading attempts");
        return -1;
    }
    int rc, out = 0;
    while (out == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW)
        out = fn(ud, (uint64_t)sqlite3_column_int64(st, 0), sqlite3_column_int(st, 1),
                 ctl_sqlite_col_i64(st, 2, 0));
    if (out == 0 && rc != SQLITE_DONE) {
        ctl_sqlite_read_fail(s, "reading attempts");
        out = -1;
    }
    sqlite3_finalize(st);
    return out;
}

int ctl_store_attempts_read(ctl_store_t *s, uint64_t job, ctl_attempt_t **out, size_t *n) {
    sqlite3_stmt *st = NULL;
    *out = NULL;
    *n = 0;
    if (sqlite3_prepare_v2(s->db, "SELECT attempt, start_us, end_us, exit_code, reason,"
                                  " retry_at_us FROM job_attempts WHERE job = ?1"
                                  " ORDER BY attempt", -1, &st, NULL) != SQLITE_OK ||
        sqlite3_bind_int64(st, 1, (sqlite3_int64)job) != SQLITE_OK) {
        sqlite3_finalize(st);
        ctl_sqlite_read_fail(s, "reading attempts");
        return -1;
    }
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? 2 * cap : 4;
            *out = sl_xrealloc(*out, cap * sizeof **out);
        }
        ctl_attempt_t *a = &(*out)[(*n)++];
        memset(a, 0, sizeof *a);
        a->attempt = sqlite3_column_int(st, 0);
        a->start_us = ctl_sqlite_col_i64(st, 1, -1);
        a->end_us = ctl_sqlite_col_i64(st, 2, -1);
        a->has_exit = sqlite3_column_type(st, 3) != SQLITE_NULL;
        a->exit_code = sqlite3_column_int(st, 3);
        const char *r = (const char *)sqlite3_column_text(st, 4);
        snprintf(a->reason, sizeof a->reason, "%s", r ? r : "");
        a->retry_at_us = ctl_sqlite_col_i64(st, 5, 0);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        sl_free(*out);
        *out = NULL;
        *n = 0;
        ctl_sqlite_read_fail(s, "reading attempts");
        return -1;
    }
    return 0;
}
