/*
 * sqlite_reader.c - the store's read-only reader in SQLite (store.h): the
 * rows of `sluice report` and the pages of GET /v1/history.
 *
 * The report. One statement, a UNION ALL of two range reads: jobs that ended in the
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
 *
 * The history. One statement walks the index jobs_end from the page's
 * start (the window's since, or just after the previous page's last
 * (end_us, id)) in (end_us, id) order, the index's own order (its entries
 * end with the rowid), so SQLite neither sorts nor reads outside the
 * window. It returns only what the filters need (tenant, state, and the
 * name from the stored spec when a name filter is given); each row that
 * passes gets a second, primary-key read for the rest (times, reason, exit
 * code, and the GPUs its tasks held, summed as the report does). The walk
 * stops when the page is full or after scan_max rows, so one page costs
 * O(limit + scan bound) row reads, whatever the history's length.
 */
#include <stdio.h>
#include <stdlib.h>

#include "store/sqlite.h"

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

#define col_i64 ctl_sqlite_col_i64

int ctl_store_reader_open(const char *path, ctl_store_reader_t **out, char *err, size_t errlen) {
    sqlite3 *db = NULL;
    *out = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK ||
        sqlite3_create_function(db, "sl_popcount", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL,
                                popcount_fn, NULL, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "%s: %s", path, db ? sqlite3_errmsg(db) : "cannot open");
        sqlite3_close(db);
        return -1;
    }
    sqlite3_busy_timeout(db, 5000);
    /* Plain malloc: this runs on the reader's thread (store.h). */
    ctl_store_reader_t *r = malloc(sizeof *r);
    if (r == NULL) {
        snprintf(err, errlen, "%s: out of memory", path);
        sqlite3_close(db);
        return -1;
    }
    r->db = db;
    *out = r;
    return 0;
}

void ctl_store_reader_close(ctl_store_reader_t *r) {
    if (r == NULL)
        return;
    sqlite3_close(r->db);
    free(r);
}

int ctl_store_report_rows(ctl_store_reader_t *reader, int64_t since_us, int64_t until_us,
                          ctl_report_row_fn fn, void *ud, char *err, size_t errlen) {
    sqlite3 *db = reader->db;
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

static const char history_scan_sql[] =
    "SELECT id, end_us, tenant, state,"
    " CASE WHEN ?5 THEN json_extract(spec, '$.name') END"
    " FROM jobs WHERE end_us >= ?3 AND end_us <= ?2 AND (end_us > ?3 OR id > ?4)"
    " ORDER BY end_us, id";

static const char history_row_sql[] =
    "SELECT json_extract(j.spec, '$.name'), json_extract(j.spec, '$.pool'),"
    " json_extract(j.spec, '$.time_limit'), json_extract(j.spec, '$.tasks'),"
    " j.submit_us, j.start_us, j.reason, j.exit_code,"
    " (SELECT total(t.gpu_milli * sl_popcount(t.gpu_mask)) FROM tasks t WHERE t.job = j.id),"
    " (SELECT count(*) FROM tasks t WHERE t.job = j.id)"
    " FROM jobs j WHERE j.id = ?1";

int ctl_store_history_walk(ctl_store_reader_t *reader, ctl_history_walk_t *w, char *err,
                           size_t errlen) {
    sqlite3 *db = reader->db;
    sqlite3_stmt *scan = NULL, *one = NULL;
    int rc = -1, step = SQLITE_DONE;
    bool room = true;
    w->scanned = 0;
    w->more = false;
    if (sqlite3_prepare_v2(db, history_scan_sql, -1, &scan, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, history_row_sql, -1, &one, NULL) != SQLITE_OK)
        goto out;
    if ((sqlite3_bind_int64(scan, 2, w->until_us) | sqlite3_bind_int64(scan, 3, w->after_end_us) |
         sqlite3_bind_int64(scan, 4, (sqlite3_int64)w->after_id) |
         sqlite3_bind_int(scan, 5, w->need_name)) != SQLITE_OK)
        goto out;
    while (room && w->scanned < w->scan_max && (step = sqlite3_step(scan)) == SQLITE_ROW) {
        w->scanned++;
        int64_t id = sqlite3_column_int64(scan, 0);
        w->last_end_us = sqlite3_column_int64(scan, 1);
        w->last_id = (uint64_t)id;
        const char *tenant = (const char *)sqlite3_column_text(scan, 2);
        const char *state = (const char *)sqlite3_column_text(scan, 3);
        if (!w->want(w->ud, tenant, state, (const char *)sqlite3_column_text(scan, 4)))
            continue;
        sqlite3_reset(one);
        if (sqlite3_bind_int64(one, 1, id) != SQLITE_OK || sqlite3_step(one) != SQLITE_ROW)
            goto out;
        ctl_history_row_t r = {
            .id = (uint64_t)id, .end_us = w->last_end_us, .tenant = tenant, .state = state,
            .name = (const char *)sqlite3_column_text(one, 0),
            .pool = (const char *)sqlite3_column_text(one, 1),
            .time_limit = col_i64(one, 2, 0), .tasks = col_i64(one, 9, 0),
            .submit_us = col_i64(one, 4, -1), .start_us = col_i64(one, 5, -1),
            .reason = (const char *)sqlite3_column_text(one, 6),
            .has_exit = sqlite3_column_type(one, 7) != SQLITE_NULL,
            .exit_code = col_i64(one, 7, 0),
            .gpu_milli = (int64_t)sqlite3_column_double(one, 8)};
        if (r.tasks == 0)
            r.tasks = col_i64(one, 3, 0); /* never started: what it asked for */
        room = w->take(w->ud, &r);
    }
    if (step != SQLITE_ROW && step != SQLITE_DONE)
        goto out;
    /* More rows may follow unless the walk reached the window's end. */
    w->more = step == SQLITE_ROW && (!room || w->scanned >= w->scan_max);
    if (w->more && !room) {
        /* A full page: is there a row after it at all? */
        int s = sqlite3_step(scan);
        if (s != SQLITE_ROW && s != SQLITE_DONE)
            goto out;
        w->more = s == SQLITE_ROW;
    }
    rc = 0;
out:
    if (rc != 0)
        snprintf(err, errlen, "reading the history: %s", sqlite3_errmsg(db));
    sqlite3_finalize(scan);
    sqlite3_finalize(one);
    return rc;
}
