/*
 * sqlite_arrays.c - the rows of job arrays in SQLite (store.h).
 *
 * Workload: one submission of up to max_array_size (10,001 by default)
 * elements must be durable in well under 100 ms. The elements share one
 * spec, so its JSON is formatted once and bound once; one prepared INSERT
 * is stepped n times, rebinding only the id, inside a SAVEPOINT of the
 * iteration's transaction (group commit: one fsync for the lot).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "store/changes.h"
#include "store/sqlite.h"

int ctl_store_array_insert(ctl_store_t *s, ctl_job_t *const *jobs, size_t n, const char *text,
                           const char *tenant) {
    const ctl_job_t *j = jobs[0];
    ctl_sqlite_begin(s);
    if (sqlite3_exec(s->db, "SAVEPOINT array_insert", NULL, NULL, NULL) != SQLITE_OK)
        ctl_sqlite_fatal(s, "SAVEPOINT");
    size_t mark = ctl_changes_mark(s->changes);
    sqlite3_stmt *st = NULL;
    char *spec = json_dumps(j->spec, JSON_COMPACT | JSON_PRESERVE_ORDER);
    int rc = sqlite3_prepare_v2(s->db,
                                "INSERT INTO job_arrays(id, n, text, done) VALUES(?1, ?2, ?3, 0)",
                                -1, &st, NULL);
    if (rc == SQLITE_OK) {
        rc = sqlite3_bind_int64(st, 1, (sqlite3_int64)j->id) | sqlite3_bind_int64(st, 2, (sqlite3_int64)n) |
             sqlite3_bind_text(st, 3, text, -1, SQLITE_STATIC);
        rc = rc == SQLITE_OK ? sqlite3_step(st) : rc;
        rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
    }
    sqlite3_finalize(st);
    st = NULL;
    if (rc == SQLITE_OK && spec != NULL)
        rc = sqlite3_prepare_v2(s->db,
                                "INSERT INTO jobs(id, tenant, spec, state, submit_us, reason,"
                                " requeue_wait, requeues) VALUES(?1, ?2, ?3, ?4, ?5, '', 0, 0)",
                                -1, &st, NULL);
    if (rc == SQLITE_OK && spec != NULL) {
        rc = sqlite3_bind_text(st, 2, tenant, -1, SQLITE_STATIC) |
             sqlite3_bind_text(st, 3, spec, -1, SQLITE_STATIC) |
             sqlite3_bind_text(st, 4, ctl_job_state_name(CTL_JOB_PENDING), -1, SQLITE_STATIC) |
             sqlite3_bind_int64(st, 5, j->submit_us);
        for (size_t k = 0; k < n && rc == SQLITE_OK; k++) {
            rc = sqlite3_bind_int64(st, 1, (sqlite3_int64)jobs[k]->id);
            rc = rc == SQLITE_OK ? sqlite3_step(st) : rc;
            rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
            sqlite3_reset(st);
        }
    }
    sqlite3_finalize(st);
    free(spec);
    if (rc == SQLITE_OK && spec != NULL) {
        if (sqlite3_exec(s->db, "RELEASE array_insert", NULL, NULL, NULL) != SQLITE_OK)
            ctl_sqlite_fatal(s, "RELEASE");
        return 0;
    }
    sl_log(SL_LOG_ERROR, "store", "array=%llu insert of %zu elements: %s",
           (unsigned long long)j->id, n, spec ? sqlite3_errmsg(s->db) : "out of memory");
    if (sqlite3_get_autocommit(s->db))
        ctl_sqlite_fatal(s, "array insert rolled the transaction back");
    if (sqlite3_exec(s->db, "ROLLBACK TO array_insert; RELEASE array_insert", NULL, NULL, NULL) !=
        SQLITE_OK)
        ctl_sqlite_fatal(s, "ROLLBACK TO array_insert");
    ctl_changes_rewind(s->changes, mark);
    return SL_EIO;
}

void ctl_store_array_done(ctl_store_t *s, uint64_t id) {
    ctl_sqlite_begin(s);
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db, "UPDATE job_arrays SET done = 1 WHERE id = ?1", -1, &st, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 1, (sqlite3_int64)id);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        ctl_sqlite_fatal(s, "array done");
}

static void array_row(sqlite3_stmt *st, ctl_store_array_t *a) {
    a->id = (uint64_t)sqlite3_column_int64(st, 0);
    a->n = (int32_t)sqlite3_column_int64(st, 1);
    const char *t = (const char *)sqlite3_column_text(st, 2);
    snprintf(a->text, sizeof a->text, "%s", t ? t : "");
    a->done = sqlite3_column_int(st, 3) != 0;
}

int ctl_store_array_of(ctl_store_t *s, uint64_t id, ctl_store_array_t *out) {
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db,
                                "SELECT id, n, text, done FROM job_arrays WHERE id <= ?1"
                                " ORDER BY id DESC LIMIT 1", -1, &st, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 1, (sqlite3_int64)id);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    int found = 0;
    if (rc == SQLITE_ROW) {
        array_row(st, out);
        found = id < out->id + (uint64_t)out->n;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return ctl_sqlite_read_fail(s, "reading a job array");
    return found;
}

int ctl_store_arrays_read(ctl_store_t *s, uint64_t min_id, ctl_store_array_fn fn, void *ud) {
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db,
                                "SELECT id, n, text, done FROM job_arrays WHERE done = 0"
                                " OR id + n > ?1 ORDER BY id", -1, &st, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 1, (sqlite3_int64)min_id);
    int out = 0;
    while (rc == SQLITE_OK && out == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        ctl_store_array_t a;
        array_row(st, &a);
        out = fn(ud, &a);
        rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    if (out == 0 && rc != SQLITE_DONE && rc != SQLITE_OK)
        return ctl_sqlite_read_fail(s, "reading the job arrays");
    return out;
}

int ctl_store_array_counts(ctl_store_t *s, uint64_t id, int32_t n, int32_t *begun,
                           int32_t *ended, int32_t *notok) {
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(
        s->db,
        "SELECT count(*) FILTER (WHERE start_us IS NOT NULL OR state IN ('succeeded','failed',"
        "'cancelled')), count(*) FILTER (WHERE state IN ('succeeded','failed','cancelled')),"
        " count(*) FILTER (WHERE state IN ('failed','cancelled'))"
        " FROM jobs WHERE id >= ?1 AND id < ?2", -1, &st, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_int64(st, 1, (sqlite3_int64)id) |
             sqlite3_bind_int64(st, 2, (sqlite3_int64)(id + (uint64_t)n));
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *begun = sqlite3_column_int(st, 0);
        *ended = sqlite3_column_int(st, 1);
        *notok = sqlite3_column_int(st, 2);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? 0 : ctl_sqlite_read_fail(s, "counting a job array's elements");
}
