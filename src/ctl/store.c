/*
 * store.c - sluiced's durable state in SQLite (WAL journal,
 * synchronous=FULL, so a COMMIT is on disk when it returns).
 *
 * Writes never commit on their own: the first write of a loop iteration
 * opens a transaction and the flush event commits it once, after the
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
 * Recovery (ctl_store_load): nodes are re-created in the core as down (their
 * agents must say hello again); pending jobs return to the queue with their
 * original submit times; jobs that hold tasks are re-adopted at their stored
 * placement (sl_sched_adopt), so nothing is restarted, and the agents'
 * hello reports then confirm, end or resend each task. Of the finished
 * jobs only those within job_retention and max_finished_jobs are read
 * (partial indexes on the active rows and an index on end_us keep
 * start-up proportional to what is loaded, not to the history); the rest
 * stay on disk and ctl_store_job_fetch reads one back by id.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "ctl.h"
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

static void fatal_sql(ctl_t *c, const char *what) {
    sl_log(SL_LOG_ERROR, "store", "%s: %s; exiting (state on disk is consistent)", what,
           sqlite3_errmsg(c->db));
    exit(3);
}

int ctl_store_open(ctl_t *c, char *err, size_t errlen) {
    int rc = sqlite3_open_v2(c->cfg.state, &c->db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "%s: %s", c->cfg.state, c->db ? sqlite3_errmsg(c->db) : "cannot open");
        return -1;
    }
    sqlite3_busy_timeout(c->db, 5000);
    char *msg = NULL;
    if (sqlite3_exec(c->db,
                     "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                     " PRAGMA wal_autocheckpoint=4000; PRAGMA foreign_keys=OFF;",
                     NULL, NULL, &msg) != SQLITE_OK ||
        sqlite3_exec(c->db, schema, NULL, NULL, &msg) != SQLITE_OK) {
        snprintf(err, errlen, "%s: %s", c->cfg.state, msg ? msg : sqlite3_errmsg(c->db));
        sqlite3_free(msg);
        return -1;
    }
    for (int i = 0; i < ST_COUNT; i++) {
        if (sqlite3_prepare_v3(c->db, stmts[i], -1, SQLITE_PREPARE_PERSISTENT, &c->st[i], NULL) !=
            SQLITE_OK) {
            snprintf(err, errlen, "%s: %s", c->cfg.state, sqlite3_errmsg(c->db));
            return -1;
        }
    }
    return 0;
}

void ctl_store_close(ctl_t *c) {
    if (c->db == NULL)
        return;
    if (c->in_txn)
        ctl_store_commit(c);
    for (int i = 0; i < ST_COUNT; i++)
        sqlite3_finalize(c->st[i]);
    sqlite3_close(c->db);
    c->db = NULL;
}

static void open_txn(ctl_t *c) {
    if (c->in_txn)
        return;
    if (sqlite3_exec(c->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
        fatal_sql(c, "BEGIN");
    c->in_txn = true;
}

void ctl_store_begin(ctl_t *c) {
    open_txn(c);
    c->txn_urgent = true;
    ctl_kick(c);
}

void ctl_store_begin_lazy(ctl_t *c) {
    open_txn(c);
    if (!c->txn_urgent && c->lazy_ev && !evtimer_pending(c->lazy_ev, NULL)) {
        struct timeval tv = {0, CTL_LAZY_COMMIT_MS * 1000};
        evtimer_add(c->lazy_ev, &tv);
    }
}

int ctl_store_commit(ctl_t *c) {
    if (!c->in_txn)
        return 0;
    int64_t t0 = ctl_mono_us();
    if (sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        fatal_sql(c, "COMMIT");
    c->in_txn = false;
    c->txn_urgent = false;
    if (c->lazy_ev)
        evtimer_del(c->lazy_ev);
    c->n.commits++;
    c->n.commit_us += (uint64_t)(ctl_mono_us() - t0);
    return 0;
}

static void step(ctl_t *c, sqlite3_stmt *st, const char *what) {
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc != SQLITE_DONE)
        fatal_sql(c, what);
}

static void bind_opt_i64(sqlite3_stmt *st, int i, bool has, int64_t v) {
    if (has)
        sqlite3_bind_int64(st, i, v);
    else
        sqlite3_bind_null(st, i);
}

static void bind_job(ctl_t *c, sqlite3_stmt *st, const ctl_job_t *j, int base) {
    sqlite3_bind_text(st, base, ctl_job_state_name(j->state), -1, SQLITE_STATIC);
    bind_opt_i64(st, base + 1, j->start_us >= 0, j->start_us);
    bind_opt_i64(st, base + 2, j->end_us >= 0, j->end_us);
    sqlite3_bind_text(st, base + 3, j->reason, -1, SQLITE_STATIC);
    bind_opt_i64(st, base + 4, j->has_exit, j->exit_code);
    sqlite3_bind_int(st, base + 5, j->requeue_wait);
    sqlite3_bind_int(st, base + 6, j->requeues);
}

int ctl_store_job_insert(ctl_t *c, const ctl_job_t *j) {
    ctl_store_begin(c);
    sqlite3_stmt *st = c->st[ST_JOB_INSERT];
    char *spec = json_dumps(j->spec, JSON_COMPACT | JSON_PRESERVE_ORDER);
    sqlite3_bind_int64(st, 1, (sqlite3_int64)j->id);
    sqlite3_bind_text(st, 2, sl_sched_tenant_name(c->sched, j->tenant), -1, SQLITE_STATIC);
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
               sqlite3_errmsg(c->db));
        return SL_EIO;
    }
    return 0;
}

void ctl_store_job_update(ctl_t *c, const ctl_job_t *j) {
    ctl_store_begin(c);
    sqlite3_stmt *st = c->st[ST_JOB_UPDATE];
    sqlite3_bind_int64(st, 1, (sqlite3_int64)j->id);
    bind_job(c, st, j, 2);
    step(c, st, "job update");
}

void ctl_store_task_put(ctl_t *c, const ctl_job_t *j, int32_t i) {
    ctl_store_task_put_lazy(c, j, i);
    ctl_store_begin(c);
}

void ctl_store_task_put_lazy(ctl_t *c, const ctl_job_t *j, int32_t i) {
    ctl_store_begin_lazy(c);
    const ctl_task_t *t = &j->tasks[i];
    const sl_node_t *nd = sl_cluster_node(c->cl, (uint32_t)t->node);
    sqlite3_stmt *st = c->st[ST_TASK_PUT];
    sqlite3_bind_int64(st, 1, (sqlite3_int64)j->id);
    sqlite3_bind_int(st, 2, i);
    sqlite3_bind_text(st, 3, nd ? nd->name : "", -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, t->gpu_mask);
    sqlite3_bind_int(st, 5, t->gpu_milli);
    sqlite3_bind_int64(st, 6, t->gpu_mem_bytes);
    sqlite3_bind_text(st, 7, ctl_task_state_name(t->state), -1, SQLITE_STATIC);
    bind_opt_i64(st, 8, t->pid > 0, t->pid);
    bind_opt_i64(st, 9, t->has_exit, t->exit_code);
    bind_opt_i64(st, 10, t->has_exit, t->signal);
    bind_opt_i64(st, 11, t->start_us >= 0, t->start_us);
    bind_opt_i64(st, 12, t->end_us >= 0, t->end_us);
    step(c, st, "task put");
}

void ctl_store_tasks_delete(ctl_t *c, uint64_t job) {
    ctl_store_begin(c);
    sqlite3_stmt *st = c->st[ST_TASKS_DELETE];
    sqlite3_bind_int64(st, 1, (sqlite3_int64)job);
    step(c, st, "tasks delete");
}

void ctl_store_node_put(ctl_t *c, const ctl_node_t *n, const char *name) {
    ctl_store_begin(c);
    sqlite3_stmt *st = c->st[ST_NODE_PUT];
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, n->spec_json ? n->spec_json : "{}", -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, n->addr, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, n->last_seen_us);
    step(c, st, "node put");
}

/* ---- recovery ---- */

static int64_t col_i64(sqlite3_stmt *st, int i, int64_t dflt) {
    return sqlite3_column_type(st, i) == SQLITE_NULL ? dflt : sqlite3_column_int64(st, i);
}

static int load_nodes(ctl_t *c) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(c->db, "SELECT name, spec, addr, last_seen_us FROM nodes ORDER BY rowid",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        const char *spec = (const char *)sqlite3_column_text(st, 1);
        json_t *js = json_loads(spec ? spec : "{}", 0, NULL);
        if (js == NULL)
            continue;
        sl_node_spec_t ns = {
            .name = name,
            .cpu_milli = json_integer_value(json_object_get(js, "cpu_milli")),
            .mem_bytes = json_integer_value(json_object_get(js, "mem_bytes")),
            .gpus = (int32_t)json_integer_value(json_object_get(js, "gpus")),
            .gpu_model = json_string_value(json_object_get(js, "gpu_model")),
            .gpu_mem_bytes = json_integer_value(json_object_get(js, "gpu_mem_bytes")),
            .pool = json_string_value(json_object_get(js, "pool")),
            .labels = json_string_value(json_object_get(js, "labels")),
        };
        uint32_t id;
        char err[200];
        if (sl_cluster_add_node(c->cl, &ns, &id, err, sizeof err) < 0) {
            sl_log(SL_LOG_WARN, "store", "node=%s not restored: %s", name, err);
            json_decref(js);
            continue;
        }
        sl_cluster_set_state(c->cl, id, SL_NODE_DOWN);
        ctl_node_t *n = ctl_node_new(c, id);
        n->spec_json = sl_xstrdup(spec);
        const char *addr = (const char *)sqlite3_column_text(st, 2);
        snprintf(n->addr, sizeof n->addr, "%s", addr ? addr : "");
        n->last_seen_us = col_i64(st, 3, -1);
        n->last_seen_mono_us = c->started_mono_us; /* its agent has node_timeout to return */
        if (ns.gpu_model)
            snprintf(n->gpu_model, sizeof n->gpu_model, "%s", ns.gpu_model);
        json_decref(js);
    }
    sqlite3_finalize(st);
    return 0;
}

/* Reads j's task rows (ST_TASKS_GET) into j->tasks. */
static void load_tasks(ctl_t *c, ctl_job_t *j) {
    sqlite3_stmt *st = c->st[ST_TASKS_GET];
    sqlite3_bind_int64(st, 1, (sqlite3_int64)j->id);
    while (sqlite3_step(st) == SQLITE_ROW) {
        int32_t idx = sqlite3_column_int(st, 0);
        if (idx < 0 || idx >= j->core.ntasks)
            continue;
        if (j->tasks == NULL)
            j->tasks = sl_xcalloc((size_t)j->core.ntasks, sizeof *j->tasks);
        if (idx + 1 > j->ntasks)
            j->ntasks = idx + 1;
        ctl_task_t *t = &j->tasks[idx];
        const sl_node_t *nd = sl_cluster_find_node(c->cl, (const char *)sqlite3_column_text(st, 1));
        t->node = nd ? (int32_t)nd->id : -1;
        t->gpu_mask = (uint32_t)sqlite3_column_int64(st, 2);
        t->gpu_milli = sqlite3_column_int(st, 3);
        t->gpu_mem_bytes = sqlite3_column_int64(st, 4);
        if (ctl_task_state_parse((const char *)sqlite3_column_text(st, 5), &t->state) < 0)
            t->state = CTL_TASK_LOST;
        t->pid = (int32_t)col_i64(st, 6, 0);
        t->has_exit = sqlite3_column_type(st, 7) != SQLITE_NULL;
        t->exit_code = (int32_t)col_i64(st, 7, 0);
        t->signal = (int32_t)col_i64(st, 8, 0);
        t->start_us = col_i64(st, 9, -1);
        t->end_us = col_i64(st, 10, -1);
    }
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
}

/* A job from a JOB_COLS row: not registered, no core spec yet
 * (core.ntasks from the spec, for load_tasks), j->tenant -1 when its
 * tenant is not configured. NULL if the stored spec is unreadable. */
static ctl_job_t *job_from_row(ctl_t *c, sqlite3_stmt *st) {
    uint64_t id = (uint64_t)sqlite3_column_int64(st, 0);
    const char *tenant = (const char *)sqlite3_column_text(st, 1);
    const char *spec = (const char *)sqlite3_column_text(st, 2);
    json_error_t jerr;
    json_t *js = json_loads(spec ? spec : "", 0, &jerr);
    if (js == NULL) {
        sl_log(SL_LOG_ERROR, "store", "job=%llu has an unreadable spec; skipped",
               (unsigned long long)id);
        return NULL;
    }
    ctl_job_t *j = sl_xcalloc(1, sizeof *j);
    j->id = id;
    j->spec = js;
    j->tenant = sl_sched_tenant_find(c->sched, tenant ? tenant : "");
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
    json_int_t n = json_integer_value(json_object_get(js, "tasks"));
    j->core.ntasks = n >= 1 && n <= SL_MAX_TASKS ? (int32_t)n : 1;
    j->core.submit_us = j->submit_us;
    return j;
}

ctl_job_t *ctl_store_job_fetch(ctl_t *c, uint64_t id) {
    sqlite3_stmt *st = c->st[ST_JOB_GET];
    sqlite3_bind_int64(st, 1, (sqlite3_int64)id);
    ctl_job_t *j = sqlite3_step(st) == SQLITE_ROW ? job_from_row(c, st) : NULL;
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (j == NULL)
        return NULL;
    ctl_job_make_head(j);
    load_tasks(c, j);
    return j;
}

/* Puts a loaded job back into the core: pending jobs into the queue, jobs
 * with live tasks re-adopted at their stored placement. */
static void restore_job(ctl_t *c, ctl_job_t *j) {
    char err[256];
    if (j->state == CTL_JOB_PENDING && !j->requeue_wait) {
        j->ntasks = 0;
        sl_free(j->tasks);
        j->tasks = NULL;
        if (sl_sched_submit(c->sched, &j->core, err, sizeof err) < 0) {
            ctl_job_fail(c, j, err);
            return;
        }
        j->in_core = true;
        return;
    }
    for (int32_t i = 0; i < j->ntasks; i++) {
        ctl_task_t *t = &j->tasks[i];
        if (t->state == CTL_TASK_LAUNCHING || t->state == CTL_TASK_RUNNING) {
            j->live++;
            if (t->node >= 0)
                ctl_node_get(c, (uint32_t)t->node)->live_tasks++;
        }
    }
    if (j->live == 0 && j->state != CTL_JOB_RUNNING && !j->requeue_wait)
        return; /* finished and settled */
    sl_place_t *pls = sl_xcalloc((size_t)(j->ntasks ? j->ntasks : 1), sizeof *pls);
    bool ok = j->ntasks > 0;
    for (int32_t i = 0; i < j->ntasks; i++) {
        if (j->tasks[i].node < 0)
            ok = false;
        pls[i] = (sl_place_t){(uint32_t)(j->tasks[i].node < 0 ? 0 : j->tasks[i].node),
                              j->tasks[i].gpu_mask, j->tasks[i].gpu_milli,
                              j->tasks[i].gpu_mem_bytes};
    }
    int rc = ok ? sl_sched_adopt(c->sched, &j->core, pls, j->ntasks, j->start_us, err, sizeof err)
                : SL_EINVAL;
    sl_free(pls);
    if (rc < 0) {
        if (!ok)
            snprintf(err, sizeof err, "placement lost");
        sl_log(SL_LOG_ERROR, "store", "job=%llu cannot be re-adopted: %s",
               (unsigned long long)j->id, err);
        char why[300];
        snprintf(why, sizeof why, "could not be re-adopted after restart: %s", err);
        for (int32_t i = 0; i < j->ntasks; i++) {
            ctl_task_t *t = &j->tasks[i];
            if (t->state == CTL_TASK_LAUNCHING || t->state == CTL_TASK_RUNNING) {
                if (t->node >= 0) {
                    ctl_node_get(c, (uint32_t)t->node)->live_tasks--;
                    ctl_send_kill(c, j, i);
                }
                t->state = CTL_TASK_LOST;
                ctl_store_task_put(c, j, i);
            }
        }
        j->live = 0;
        j->requeue_wait = false;
        if (j->state == CTL_JOB_RUNNING || j->state == CTL_JOB_PENDING)
            ctl_job_fail(c, j, why);
        return;
    }
    j->in_core = true;
    j->master_node = (uint32_t)j->tasks[0].node;
    if (j->live == 0)
        ctl_job_settle(c, j); /* every task ended and was recorded before the crash */
}

/* Registers a job read at start-up that is (or was, before the crash)
 * pending or running. False if it could not be kept as such: its tenant
 * or spec is no longer acceptable, and it was failed. */
static bool load_active(ctl_t *c, ctl_job_t *j) {
    char err[256];
    if (j->tenant < 0) {
        const char *tenant = json_string_value(json_object_get(j->spec, "tenant"));
        snprintf(err, sizeof err, "tenant \"%s\" is no longer configured", tenant ? tenant : "");
        j->tenant = 0;
        ctl_job_core_spec(c, j, err, sizeof err);
    } else if (ctl_job_core_spec(c, j, err, sizeof err) == 0) {
        j->core.submit_us = j->submit_us;
        ctl_job_make_head(j);
        ctl_job_register(c, j);
        return true;
    }
    ctl_job_make_head(j);
    ctl_job_register(c, j);
    if (j->state == CTL_JOB_PENDING || j->state == CTL_JOB_RUNNING)
        ctl_job_fail(c, j, err);
    else
        ctl_job_retain(c, j);
    load_tasks(c, j);
    return false;
}

int ctl_store_load(ctl_t *c) {
    if (load_nodes(c) < 0)
        return -1;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(c->db, "SELECT MAX(id) FROM jobs", -1, &st, NULL) != SQLITE_OK)
        return -1;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        c->next_id = (uint64_t)sqlite3_column_int64(st, 0) + 1;
    sqlite3_finalize(st);

    /* Active jobs: pending or running, or finished with tasks that had
     * not yet reported their end (both found through partial indexes). */
    if (sqlite3_prepare_v2(c->db,
                           JOB_COLS " WHERE state IN ('pending','running') UNION " JOB_COLS
                                    " WHERE id IN (SELECT job FROM tasks WHERE state IN"
                                    " ('launching','running')) ORDER BY 1",
                           -1, &st, NULL) != SQLITE_OK)
        return -1;
    ctl_job_t **active = NULL;
    size_t nactive = 0, cap = 0, nfinished = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        ctl_job_t *j = job_from_row(c, st);
        if (j == NULL || !load_active(c, j))
            continue;
        if (nactive == cap) {
            cap = cap ? 2 * cap : 256;
            active = sl_xrealloc(active, cap * sizeof *active);
        }
        active[nactive++] = j;
    }
    sqlite3_finalize(st);

    /* The newest finished jobs within job_retention and max_finished_jobs,
     * retained oldest first as if they had just finished. */
    if (c->cfg.job_retention_ms > 0 && c->cfg.max_finished_jobs > 0) {
        if (sqlite3_prepare_v2(c->db,
                               JOB_COLS " WHERE end_us >= ?1 AND state IN ('succeeded','failed',"
                                        "'cancelled') ORDER BY end_us DESC, id DESC LIMIT ?2",
                               -1, &st, NULL) != SQLITE_OK) {
            sl_free(active);
            return -1;
        }
        sqlite3_bind_int64(st, 1, ctl_now_us() - c->cfg.job_retention_ms * 1000);
        sqlite3_bind_int64(st, 2, c->cfg.max_finished_jobs);
        ctl_job_t **fin = NULL;
        size_t fcap = 0;
        while (sqlite3_step(st) == SQLITE_ROW) {
            if (ctl_job_find(c, (uint64_t)sqlite3_column_int64(st, 0)) != NULL)
                continue; /* loaded above: its tasks were still stopping */
            ctl_job_t *j = job_from_row(c, st);
            if (j == NULL)
                continue;
            if (nfinished == fcap) {
                fcap = fcap ? 2 * fcap : 256;
                fin = sl_xrealloc(fin, fcap * sizeof *fin);
            }
            fin[nfinished++] = j;
        }
        sqlite3_finalize(st);
        for (size_t i = nfinished; i-- > 0;) {
            ctl_job_t *j = fin[i];
            ctl_job_make_head(j);
            ctl_job_register(c, j);
            load_tasks(c, j);
            ctl_job_retain(c, j);
        }
        sl_free(fin);
    }

    for (size_t i = 0; i < nactive; i++)
        load_tasks(c, active[i]);
    size_t pending = 0, adopted = 0;
    for (size_t i = 0; i < nactive; i++) {
        ctl_job_t *j = active[i];
        if (j->in_core)
            continue;
        bool is_pending = j->state == CTL_JOB_PENDING;
        restore_job(c, j);
        if (j->in_core && is_pending)
            pending++;
        else if (j->in_core)
            adopted++;
        else if (j->live == 0)
            ctl_job_retain(c, j); /* finished and settled before the crash */
    }
    /* The lowest id that may still be active; ids are sorted. */
    c->first_active = nactive > 0 ? active[0]->id : c->next_id;
    sl_free(active);
    sl_log(SL_LOG_INFO, "store", "loaded active=%zu pending=%zu adopted=%zu finished=%zu nodes=%zu",
           nactive, pending, adopted, nfinished, c->nnodes);
    ctl_store_commit(c);
    c->sched_dirty = true;
    return 0;
}
