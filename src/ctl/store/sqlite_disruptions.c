/*
 * sqlite_disruptions.c - node drains, preemptions and elastic size changes
 * in SQLite (store.h; the tables are created with the others, sqlite.c).
 *
 * Each function prepares its statement, runs it inside the iteration's
 * transaction (sqlite.c's group commit) and finalises it: drains and
 * preemptions happen a few times a minute at most, so a cached statement
 * would save nothing worth a slot in sqlite.c's table.
 */
#include <stdio.h>
#include <string.h>

#include "store/sqlite.h"

/* A statement for a write, or exit 3 as for any failed write. */
static sqlite3_stmt *prep(ctl_store_t *s, const char *sql, bool urgent, const char *what) {
    sqlite3_stmt *st = NULL;
    ctl_sqlite_write_begin(s, urgent);
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        ctl_sqlite_write_step(s, NULL, SQLITE_ERROR, what);
    return st;
}

static int bind_opt(sqlite3_stmt *st, int i, int64_t v) {
    return v >= 0 ? sqlite3_bind_int64(st, i, v) : sqlite3_bind_null(st, i);
}

void ctl_store_drain_put(ctl_store_t *s, const char *name, const ctl_node_t *n) {
    sqlite3_stmt *st = prep(s, "INSERT OR REPLACE INTO node_drain(name, reason, deadline_us,"
                               " since_us, drained_us) VALUES(?1, ?2, ?3, ?4, ?5)", true, "drain put");
    int b = sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    b |= sqlite3_bind_text(st, 2, n->drain_reason, -1, SQLITE_STATIC);
    b |= bind_opt(st, 3, n->drain_deadline_us);
    b |= sqlite3_bind_int64(st, 4, n->drain_since_us);
    b |= bind_opt(st, 5, n->drained_us);
    ctl_sqlite_write_step(s, st, b, "drain put");
    sqlite3_finalize(st);
}

void ctl_store_drain_delete(ctl_store_t *s, const char *name) {
    sqlite3_stmt *st = prep(s, "DELETE FROM node_drain WHERE name = ?1", true, "drain delete");
    ctl_sqlite_write_step(s, st, sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC), "drain delete");
    sqlite3_finalize(st);
}

static int64_t col_opt(sqlite3_stmt *st, int i) {
    return sqlite3_column_type(st, i) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, i);
}

static const char *col_text(sqlite3_stmt *st, int i) {
    const char *v = (const char *)sqlite3_column_text(st, i);
    return v ? v : "";
}

int ctl_store_drains_read(ctl_store_t *s, ctl_store_drain_fn fn, void *ud) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, "SELECT name, reason, deadline_us, since_us, drained_us"
                                  " FROM node_drain ORDER BY rowid", -1, &st, NULL) != SQLITE_OK) {
        ctl_sqlite_read_fail(s, "reading node drains");
        return -1;
    }
    int rc, out = 0;
    while (out == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW)
        out = fn(ud, col_text(st, 0), col_text(st, 1), col_opt(st, 2), col_opt(st, 3),
                 col_opt(st, 4));
    if (out == 0 && rc != SQLITE_DONE) {
        ctl_sqlite_read_fail(s, "reading node drains");
        out = -1;
    }
    sqlite3_finalize(st);
    return out;
}

void ctl_store_preempt_add(ctl_store_t *s, uint64_t job, const ctl_preempt_t *p) {
    sqlite3_stmt *st = prep(s, "INSERT INTO preemptions(job, at_us, kind, by_job, by_tenant,"
                               " reason, tasks, gpu_seconds, cause)"
                               " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)", true, "preemption add");
    int b = sqlite3_bind_int64(st, 1, (sqlite3_int64)job);
    b |= sqlite3_bind_int64(st, 2, p->at_us);
    b |= sqlite3_bind_text(st, 3, p->kind, -1, SQLITE_STATIC);
    b |= p->by_job ? sqlite3_bind_int64(st, 4, (sqlite3_int64)p->by_job) : sqlite3_bind_null(st, 4);
    b |= p->by_tenant[0] ? sqlite3_bind_text(st, 5, p->by_tenant, -1, SQLITE_STATIC)
                         : sqlite3_bind_null(st, 5);
    b |= sqlite3_bind_text(st, 6, p->reason, -1, SQLITE_STATIC);
    b |= sqlite3_bind_int(st, 7, p->tasks);
    b |= sqlite3_bind_double(st, 8, p->gpu_seconds);
    b |= sqlite3_bind_text(st, 9, p->cause, -1, SQLITE_STATIC);
    ctl_sqlite_write_step(s, st, b, "preemption add");
    sqlite3_finalize(st);
}

void ctl_store_size_add(ctl_store_t *s, uint64_t job, const ctl_size_change_t *z) {
    sqlite3_stmt *st = prep(s, "INSERT INTO job_size(job, at_us, size, why) VALUES(?1, ?2, ?3, ?4)",
                            true, "size add");
    int b = sqlite3_bind_int64(st, 1, (sqlite3_int64)job);
    b |= sqlite3_bind_int64(st, 2, z->at_us);
    b |= sqlite3_bind_int(st, 3, z->size);
    b |= sqlite3_bind_text(st, 4, z->why, -1, SQLITE_STATIC);
    ctl_sqlite_write_step(s, st, b, "size add");
    sqlite3_finalize(st);
}

/* Runs sql (job bound to ?1) and hands each row to row(x, st). */
static int read_rows(ctl_store_t *s, const char *sql, uint64_t job, ctl_jobx_t *x,
                     void (*row)(ctl_jobx_t *x, sqlite3_stmt *st), const char *what) {
    sqlite3_stmt *st = NULL;
    int rc;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK ||
        sqlite3_bind_int64(st, 1, (sqlite3_int64)job) != SQLITE_OK) {
        sqlite3_finalize(st);
        ctl_sqlite_read_fail(s, what);
        return -1;
    }
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        row(x, st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        ctl_sqlite_read_fail(s, what);
        return -1;
    }
    return 0;
}

static void preempt_row(ctl_jobx_t *x, sqlite3_stmt *st) {
    x->preempts = sl_xrealloc(x->preempts, (x->npreempts + 1) * sizeof *x->preempts);
    ctl_preempt_t *p = &x->preempts[x->npreempts++];
    memset(p, 0, sizeof *p);
    p->at_us = sqlite3_column_int64(st, 0);
    snprintf(p->kind, sizeof p->kind, "%s", col_text(st, 1));
    int64_t by = col_opt(st, 2);
    p->by_job = by > 0 ? (uint64_t)by : 0;
    snprintf(p->by_tenant, sizeof p->by_tenant, "%s", col_text(st, 3));
    snprintf(p->reason, sizeof p->reason, "%s", col_text(st, 4));
    p->tasks = sqlite3_column_int(st, 5);
    p->gpu_seconds = sqlite3_column_double(st, 6);
    snprintf(p->cause, sizeof p->cause, "%s", col_text(st, 7));
}

static void size_row(ctl_jobx_t *x, sqlite3_stmt *st) {
    x->sizes = sl_xrealloc(x->sizes, (x->nsizes + 1) * sizeof *x->sizes);
    ctl_size_change_t *z = &x->sizes[x->nsizes++];
    z->at_us = sqlite3_column_int64(st, 0);
    z->size = sqlite3_column_int(st, 1);
    snprintf(z->why, sizeof z->why, "%s", col_text(st, 2));
}

int ctl_store_size_last(ctl_store_t *s, uint64_t job, ctl_size_change_t *z) {
    ctl_jobx_t x = {0};
    if (read_rows(s, "SELECT at_us, size, why FROM job_size WHERE job = ?1 ORDER BY rowid DESC"
                     " LIMIT 1", job, &x, size_row, "reading job sizes") < 0)
        return -1;
    if (x.nsizes == 0)
        return 0;
    *z = x.sizes[0];
    sl_free(x.sizes);
    return 1;
}

int ctl_store_jobx_read(ctl_store_t *s, uint64_t job, ctl_jobx_t *x) {
    if (read_rows(s, "SELECT at_us, kind, by_job, by_tenant, reason, tasks, gpu_seconds, cause FROM"
                     " preemptions WHERE job = ?1 ORDER BY rowid", job, x, preempt_row,
                  "reading preemptions") < 0 ||
        read_rows(s, "SELECT at_us, size, why FROM job_size WHERE job = ?1 ORDER BY rowid", job, x,
                  size_row, "reading job sizes") < 0)
        return -1;
    x->loaded = true;
    return 0;
}

void ctl_store_tasks_trim(ctl_store_t *s, uint64_t job, int32_t n) {
    static const char *const sql[2] = {"DELETE FROM tasks WHERE job = ?1 AND idx >= ?2",
                                       "DELETE FROM task_mem WHERE job = ?1 AND idx >= ?2"};
    for (int k = 0; k < 2; k++) {
        sqlite3_stmt *st = prep(s, sql[k], true, "tasks trim");
        int b = sqlite3_bind_int64(st, 1, (sqlite3_int64)job);
        b |= sqlite3_bind_int(st, 2, n);
        ctl_sqlite_write_step(s, st, b, "tasks trim");
        sqlite3_finalize(st);
    }
}
