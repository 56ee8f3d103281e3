/*
 * store.c - sluiced's durable state in SQLite (WAL journal,
 * synchronous=FULL, so a COMMIT is on disk when it returns).
 *
 * Writes never commit on their own: the first write of a loop iteration
 * opens a transaction and the loop's COMMIT hook commits it once, after the
 * iteration's I/O callbacks (group commit). Thousands of submissions per
 * second then cost a few fsyncs each second, not one per job.
 *
 * Lazy writes (a task reported started) are not needed for any
 * acknowledgement: if they are lost in a crash, the agent's next hello
 * reports the task running again. They join the open transaction and are
 * committed with the next urgent write or after CTL_LAZY_COMMIT_MS, so
 * they do not put an fsync between a task's exit and the next launch.
 *
 * Tables:
 *   jobs(id, tenant, spec JSON, state, submit_us, start_us, end_us, reason,
 *        exit_code, requeue_wait, requeues)
 *   tasks(job, idx, node, gpu_mask, gpu_milli, gpu_mem, state, pid,
 *         exit_code, signal, start_us, end_us)
 *   nodes(name, spec JSON, addr, last_seen_us)     last known node specs
 *   meta(key, value)                               schema version
 *
 * Partial indexes on the active rows and an index on end_us keep start-up
 * (recover.c) proportional to what it reads, not to the history.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "store.h"
#include "loop.h"
#include "log.h"

enum {
    ST_JOB_INSERT,
    ST_JOB_UPDATE,
    ST_TASK_PUT,
    ST_TASKS_DELETE,
    ST_NODE_PUT,
    ST_JOB_GET,
    ST_TASKS_GET,
    ST_COUNT
};

#define JOB_COLS                                                                            \
    "SELECT id, tenant, spec, state, submit_us, start_us, end_us, reason, exit_code,"       \
    " requeue_wait, requeues FROM jobs"


static const char *const schema =
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);"
    "CREATE TABLE IF NOT EXISTS jobs(id INTEGER PRIMARY KEY, tenant TEXT NOT NULL,"
    " spec TEXT NOT NULL, state TEXT NOT NULL, submit_us INTEGER, start_us INTEGER,"
    " end_us INTEGER, reason TEXT, exit_code INTEGER, requeue_wait INTEGER DEFAULT 0,"
    " requeues INTEGER DEFAULT 0);"
    "CREATE TABLE IF NOT EXISTS tasks(job INTEGER NOT NULL, idx INTEGER NOT NULL,"
    " node TEXT NOT NULL, gpu_mask INTEGER, gpu_milli INTEGER, gpu_mem INTEGER,"
    " state TEXT NOT NULL, pid INTEGER, exit_code INTEGER, signal INTEGER,"
    " start_us INTEGER, end_us INTEGER, PRIMARY KEY(job, idx));"
    "CREATE TABLE IF NOT EXISTS nodes(name TEXT PRIMARY KEY, spec TEXT NOT NULL,"
    " addr TEXT, last_seen_us INTEGER);"
    /* Start-up reads only the active jobs and the recently finished ones. */
    "CREATE INDEX IF NOT EXISTS jobs_active ON jobs(id) WHERE state IN ('pending','running');"
    "CREATE INDEX IF NOT EXISTS jobs_end ON jobs(end_us);"
    "CREATE INDEX IF NOT EXISTS tasks_live ON tasks(job) WHERE state IN ('launching','running');"
    "INSERT OR IGNORE INTO meta(key, value) VALUES('schema', '1');";

static const char *const stmts[ST_COUNT] = {
    [ST_JOB_INSERT] = "INSERT INTO jobs(id, tenant, spec, state, submit_us, start_us, end_us,"
                      " reason, exit_code, requeue_wait, requeues)"
                      " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    [ST_JOB_UPDATE] = "UPDATE jobs SET state = ?2, start_us = ?3, end_us = ?4, reason = ?5,"
                      " exit_code = ?6, requeue_wait = ?7, requeues = ?8 WHERE id = ?1",
    [ST_TASK_PUT] = "INSERT OR REPLACE INTO tasks(job, idx, node, gpu_mask, gpu_milli, gpu_mem,"
                    " state, pid, exit_code, signal, start_us, end_us)"
                    " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
    [ST_TASKS_DELETE] = "DELETE FROM tasks WHERE job = ?1",
    [ST_NODE_PUT] = "INSERT OR REPLACE INTO nodes(name, spec, addr, last_seen_us)"
                    " VALUES(?1, ?2, ?3, ?4)",
    [ST_JOB_GET] = JOB_COLS " WHERE id = ?1",
    [ST_TASKS_GET] = "SELECT idx, node, gpu_mask, gpu_milli, gpu_mem, state, pid, exit_code,"
                     " signal, start_us, end_us FROM tasks WHERE job = ?1 ORDER BY idx",
};

static void lazy_cb(evutil_socket_t fd, short what, void *ud) {
    ctl_store_commit(ud);
}

static void fatal_sql(ctl_store_t *s, const char *what) {
    sl_log(SL_LOG_ERROR, "store", "%s: %s; exiting (state on disk is consistent)", what,
           sqlite3_errmsg(s->db));
    exit(3);
}

int ctl_store_open(ctl_store_t *s, ctl_loop_t *loop, const char *path, char *err, size_t errlen) {
    *s = (ctl_store_t){.path = path, .loop = loop};
    int rc = sqlite3_open_v2(path, &s->db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "%s: %s", s->path, s->db ? sqlite3_errmsg(s->db) : "cannot open");
        return -1;
    }
    sqlite3_busy_timeout(s->db, 5000);
    char *msg = NULL;
    if (sqlite3_exec(s->db,
                     "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                     " PRAGMA wal_autocheckpoint=4000; PRAGMA foreign_keys=OFF;",
                     NULL, NULL, &msg) != SQLITE_OK ||
        sqlite3_exec(s->db, schema, NULL, NULL, &msg) != SQLITE_OK) {
        snprintf(err, errlen, "%s: %s", s->path, msg ? msg : sqlite3_errmsg(s->db));
        sqlite3_free(msg);
        return -1;
    }
    for (int i = 0; i < ST_COUNT; i++) {
        if (sqlite3_prepare_v3(s->db, stmts[i], -1, SQLITE_PREPARE_PERSISTENT, &s->st[i], NULL) !=
            SQLITE_OK) {
            snprintf(err, errlen, "%s: %s", s->path, sqlite3_errmsg(s->db));
            return -1;
        }
    }
    s->lazy_ev = evtimer_new(loop->base, lazy_cb, s);
    return 0;
}

void ctl_store_close(ctl_store_t *s) {
    if (s->db == NULL)
        return;
    if (s->in_txn)
        ctl_store_commit(s);
    for (int i = 0; i < ST_COUNT; i++)
        sqlite3_finalize(s->st[i]);
    sqlite3_close(s->db);
    s->db = NULL;
    if (s->lazy_ev)
        event_free(s->lazy_ev);
    s->lazy_ev = NULL;
}

const char *ctl_store_errmsg(ctl_store_t *s) {
    return s->db ? sqlite3_errmsg(s->db) : "not open";
}

bool ctl_store_flush(void *ud) {
    ctl_store_t *s = ud;
    if (s->txn_urgent)
        ctl_store_commit(s);
    return false;
}

static void open_txn(ctl_store_t *s) {
    if (s->in_txn)
        return;
    if (sqlite3_exec(s->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
        fatal_sql(s, "BEGIN");
    s->in_txn = true;
}

static void store_begin(ctl_store_t *s) {
    open_txn(s);
    s->txn_urgent = true;
    ctl_loop_kick(s->loop);
}

static void store_begin_lazy(ctl_store_t *s) {
    open_txn(s);
    if (!s->txn_urgent && s->lazy_ev && !evtimer_pending(s->lazy_ev, NULL)) {
        struct timeval tv = {0, CTL_LAZY_COMMIT_MS * 1000};
        evtimer_add(s->lazy_ev, &tv);
    }
}

int ctl_store_commit(ctl_store_t *s) {
    if (!s->in_txn)
        return 0;
    int64_t t0 = ctl_mono_us();
    if (sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        fatal_sql(s, "COMMIT");
    s->in_txn = false;
    s->txn_urgent = false;
    if (s->lazy_ev)
        evtimer_del(s->lazy_ev);
    s->commits++;
    s->commit_us += (uint64_t)(ctl_mono_us() - t0);
    return 0;
}

static void step(ctl_store_t *s, sqlite3_stmt *st, const char *what) {
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc != SQLITE_DONE)
        fatal_sql(s, what);
}

static void bind_opt_i64(sqlite3_stmt *st, int i, bool has, int64_t v) {
    if (has)
        sqlite3_bind_int64(st, i, v);
    else
        sqlite3_bind_null(st, i);
}

static void bind_job(sqlite3_stmt *st, const ctl_job_t *j, int base) {
    sqlite3_bind_text(st, base, ctl_job_state_name(j->state), -1, SQLITE_STATIC);
    bind_opt_i64(st, base + 1, j->start_us >= 0, j->start_us);
    bind_opt_i64(st, base + 2, j->end_us >= 0, j->end_us);
    sqlite3_bind_text(st, base + 3, j->reason, -1, SQLITE_STATIC);
    bind_opt_i64(st, base + 4, j->has_exit, j->exit_code);
    sqlite3_bind_int(st, base + 5, j->requeue_wait);
    sqlite3_bind_int(st, base + 6, j->requeues);
}

int ctl_store_job_insert(ctl_store_t *s, const ctl_job_t *j, const char *tenant) {
    store_begin(s);
    sqlite3_stmt *st = s->st[ST_JOB_INSERT];
    char *spec = json_dumps(j->spec, JSON_COMPACT | JSON_PRESERVE_ORDER);
    sqlite3_bind_int64(st, 1, (sqlite3_int64)j->id);
    sqlite3_bind_text(st, 2, tenant, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, spec, -1, free);
    sqlite3_bind_text(st, 4, ctl_job_state_name(j->state), -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 5, j->submit_us);
    bind_opt_i64(st, 6, j->start_us >= 0, j->start_us);
    bind_opt_i64(st, 7, j->end_us >= 0, j->end_us);
    sqlite3_bind_text(st, 8, j->reason, -1, SQLITE_STATIC);
    bind_opt_i64(st, 9, j->has_exit, j->exit_code);
    sqlite3_bind_int(st, 10, j->requeue_wait);
    sqlite3_bind_int(st, 11, j->requeues);
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc != SQLITE_DONE) {
        sl_log(SL_LOG_ERROR, "store", "job=%llu insert: %s", (unsigned long long)j->id,
               sqlite3_errmsg(s->db));
        /* SQLite may roll the whole transaction back (a full disk): the
         * iteration's other writes are then lost, and only a restart from
         * the database can make memory agree with it again. */
        if (sqlite3_get_autocommit(s->db))
            fatal_sql(s, "job insert rolled the transaction back");
        return SL_EIO;
    }
    return 0;
}

void ctl_store_job_update(ctl_store_t *s, const ctl_job_t *j) {
    store_begin(s);
    sqlite3_stmt *st = s->st[ST_JOB_UPDATE];
    sqlite3_bind_int64(st, 1, (sqlite3_int64)j->id);
    bind_job(st, j, 2);
    step(s, st, "job update");
}

void ctl_store_task_put(ctl_store_t *s, const ctl_job_t *j, int32_t i, const char *node) {
    ctl_store_task_put_lazy(s, j, i, node);
    store_begin(s);
}

void ctl_store_task_put_lazy(ctl_store_t *s, const ctl_job_t *j, int32_t i, const char *node) {
    store_begin_lazy(s);
    const ctl_task_t *t = &j->tasks[i];
    sqlite3_stmt *st = s->st[ST_TASK_PUT];
    sqlite3_bind_int64(st, 1, (sqlite3_int64)j->id);
    sqlite3_bind_int(st, 2, i);
    sqlite3_bind_text(st, 3, node ? node : "", -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, t->gpu_mask);
    sqlite3_bind_int(st, 5, t->gpu_milli);
    sqlite3_bind_int64(st, 6, t->gpu_mem_bytes);
    sqlite3_bind_text(st, 7, ctl_task_state_name(t->state), -1, SQLITE_STATIC);
    bind_opt_i64(st, 8, t->pid > 0, t->pid);
    bind_opt_i64(st, 9, t->has_exit, t->exit_code);
    bind_opt_i64(st, 10, t->has_exit, t->signal);
    bind_opt_i64(st, 11, t->start_us >= 0, t->start_us);
    bind_opt_i64(st, 12, t->end_us >= 0, t->end_us);
    step(s, st, "task put");
}

void ctl_store_tasks_delete(ctl_store_t *s, uint64_t job) {
    store_begin(s);
    sqlite3_stmt *st = s->st[ST_TASKS_DELETE];
    sqlite3_bind_int64(st, 1, (sqlite3_int64)job);
    step(s, st, "tasks delete");
}

void ctl_store_node_put(ctl_store_t *s, const ctl_node_t *n, const char *name) {
    store_begin(s);
    sqlite3_stmt *st = s->st[ST_NODE_PUT];
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, n->spec_json ? n->spec_json : "{}", -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, n->addr, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, n->last_seen_us);
    step(s, st, "node put");
}

/* ---- reads ---- */

static int64_t col_i64(sqlite3_stmt *st, int i, int64_t dflt) {
    return sqlite3_column_type(st, i) == SQLITE_NULL ? dflt : sqlite3_column_int64(st, i);
}

int ctl_store_nodes_read(ctl_store_t *s, ctl_store_node_fn fn, void *ud) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "SELECT name, spec, addr, last_seen_us FROM nodes ORDER BY rowid",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *spec = (const char *)sqlite3_column_text(st, 1);
        fn(ud, (const char *)sqlite3_column_text(st, 0), spec ? spec : "{}",
           (const char *)sqlite3_column_text(st, 2), col_i64(st, 3, -1));
    }
    sqlite3_finalize(st);
    return 0;
}

int ctl_store_max_id(ctl_store_t *s, uint64_t *out) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "SELECT MAX(id) FROM jobs", -1, &st, NULL) != SQLITE_OK)
        return -1;
    *out = 0;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        *out = (uint64_t)sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return 0;
}

/* A job from a JOB_COLS row (see ctl_store_job_fn); NULL if the stored
 * spec is unreadable. */
static ctl_job_t *job_from_row(sqlite3_stmt *st) {
    uint64_t id = (uint64_t)sqlite3_column_int64(st, 0);
    const char *spec = (const char *)sqlite3_column_text(st, 2);
    json_error_t jerr;
    json_t *js = json_loads(spec ? spec : "", 0, &jerr);
    if (js == NULL) {
        sl_log(SL_LOG_ERROR, "store", "job=%llu has an unreadable spec; skipped",
               (unsigned long long)id);
        return NULL;
    }
    ctl_job_t *j = ctl_job_new();
    j->id = id;
    j->spec = js;
    j->tenant = -1;
    if (ctl_job_state_parse((const char *)sqlite3_column_text(st, 3), &j->state) < 0)
        j->state = CTL_JOB_FAILED;
    j->submit_us = col_i64(st, 4, 0);
    j->start_us = col_i64(st, 5, -1);
    j->end_us = col_i64(st, 6, -1);
    const char *reason = (const char *)sqlite3_column_text(st, 7);
    snprintf(j->reason, sizeof j->reason, "%s", reason ? reason : "");
    j->has_exit = sqlite3_column_type(st, 8) != SQLITE_NULL;
    j->exit_code = (int32_t)col_i64(st, 8, 0);
    j->requeue_wait = sqlite3_column_int(st, 9) != 0;
    j->requeues = sqlite3_column_int(st, 10);
    return j;
}

static const char *row_tenant(sqlite3_stmt *st) {
    const char *t = (const char *)sqlite3_column_text(st, 1);
    return t ? t : "";
}

/* Hands every row of a prepared JOB_COLS statement to fn and finalizes it. */
static int jobs_read(sqlite3_stmt *st, ctl_store_job_fn fn, void *ud) {
    while (sqlite3_step(st) == SQLITE_ROW) {
        ctl_job_t *j = job_from_row(st);
        if (j != NULL)
            fn(ud, j, row_tenant(st));
    }
    sqlite3_finalize(st);
    return 0;
}

int ctl_store_jobs_active(ctl_store_t *s, ctl_store_job_fn fn, void *ud) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db,
                           JOB_COLS " WHERE state IN ('pending','running') UNION " JOB_COLS
                                    " WHERE id IN (SELECT job FROM tasks WHERE state IN"
                                    " ('launching','running')) ORDER BY 1",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    return jobs_read(st, fn, ud);
}

int ctl_store_jobs_finished(ctl_store_t *s, int64_t since_us, int64_t limit, ctl_store_job_fn fn,
                            void *ud) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db,
                           JOB_COLS " WHERE end_us >= ?1 AND state IN ('succeeded','failed',"
                                    "'cancelled') ORDER BY end_us DESC, id DESC LIMIT ?2",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(st, 1, since_us);
    sqlite3_bind_int64(st, 2, limit);
    return jobs_read(st, fn, ud);
}

ctl_job_t *ctl_store_job_get(ctl_store_t *s, uint64_t id, char *tenant, size_t tenantlen) {
    sqlite3_stmt *st = s->st[ST_JOB_GET];
    sqlite3_bind_int64(st, 1, (sqlite3_int64)id);
    ctl_job_t *j = NULL;
    if (sqlite3_step(st) == SQLITE_ROW && (j = job_from_row(st)) != NULL)
        snprintf(tenant, tenantlen, "%s", row_tenant(st));
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return j;
}

void ctl_store_tasks_read(ctl_store_t *s, ctl_job_t *j, ctl_store_task_fn fn, void *ud) {
    sqlite3_stmt *st = s->st[ST_TASKS_GET];
    sqlite3_bind_int64(st, 1, (sqlite3_int64)j->id);
    while (sqlite3_step(st) == SQLITE_ROW) {
        ctl_task_t t = {.node = -1};
        t.gpu_mask = (uint32_t)sqlite3_column_int64(st, 2);
        t.gpu_milli = sqlite3_column_int(st, 3);
        t.gpu_mem_bytes = sqlite3_column_int64(st, 4);
        if (ctl_task_state_parse((const char *)sqlite3_column_text(st, 5), &t.state) < 0)
            t.state = CTL_TASK_LOST;
        t.pid = (int32_t)col_i64(st, 6, 0);
        t.has_exit = sqlite3_column_type(st, 7) != SQLITE_NULL;
        t.exit_code = (int32_t)col_i64(st, 7, 0);
        t.signal = (int32_t)col_i64(st, 8, 0);
        t.start_us = col_i64(st, 9, -1);
        t.end_us = col_i64(st, 10, -1);
        fn(ud, j, sqlite3_column_int(st, 0), (const char *)sqlite3_column_text(st, 1), &t);
    }
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
}
