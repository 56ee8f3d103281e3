/*
 * sqlite.c - the store (store.h) in SQLite: the connection, transactions
 * and backups, and the rows of jobs, tasks, nodes, scheduling delays and
 * efficiency (WAL journal, synchronous=FULL, so a COMMIT is on disk when
 * it returns).
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
 *         exit_code, signal, start_us, end_us, attempt)
 *         attempt: the job's requeues when the task was placed (NULL in a
 *         row from before attempts: unknown)
 *   task_mem(job, idx, oom_killed, mem_peak, mem_limit, mem_request)
 *         how a task's memory ended, as its agent reported
 *   nodes(name, spec JSON, addr, last_seen_us)     last known node specs
 *   meta(key, value)                               schema version; instance,
 *                                                  the cluster instance id
 *   job_eff(job, gpu_util_mean, gpu_util_peak, gpu_mem_peak, gpu_mem_total,
 *           cpu_seconds, mem_peak, samples)        each job's efficiency
 *                                                  (domain/eff.c; NULL: unknown)
 *   job_sched(job, sched_delay_us)                 scheduling delay per job
 *                                                  (`sluice report`)
 *   job_arrays(id, n, text, done)                  job arrays: the jobs
 *                                                  id..id+n-1 (sqlite_arrays.c)
 *   node_drain, preemptions, job_size              drains, preemptions and
 *                                                  elastic sizes
 *                                                  (sqlite_disruptions.c)
 *   reservations(name, start_us, end_us, nodes,   advance reservations
 *                tenants, created_us)              (sqlite_resv.c)
 *   secrets, secret_values                         secrets and config maps,
 *                                                  values sealed (sqlite_secrets.c)
 *
 * Partial indexes on the active rows and an index on end_us keep start-up
 * (domain/recover.c) proportional to what it reads, not to the history.
 *
 * Integrity. Every SQLite call that can fail is checked: a statement step
 * must give SQLITE_ROW or SQLITE_DONE, anything else is an error, never
 * the end of the data (a damaged page once read as "no more rows" lost a
 * pending job and reissued job id 1). Opening runs PRAGMA quick_check
 * (O(database size): it walks every b-tree page, without checking that
 * index entries match their rows) and refuses a damaged file without
 * changing it. A missing or empty file is created only when asked to
 * (--init or init: true), as an empty file at a wrong path would otherwise
 * start an empty cluster without a word. Reads fail back to the caller
 * while sluiced starts (it exits 2 and says what to do) and are fail-stop
 * once it runs (ctl_store_set_fail_stop), like writes.
 *
 * Backups (ctl_store_backup) use SQLite's online backup API from a second
 * connection that holds one read transaction for the whole copy: in WAL
 * mode that is a consistent snapshot which the daemon's commits neither
 * block nor restart.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>

#include "sluice/alloc.h"
#include "store/changes.h"
#include "store/sqlite.h"
#include "base/loop.h"
#include "log.h"
#include "proto_run.h"

enum {
    ST_JOB_INSERT,
    ST_JOB_UPDATE,
    ST_TASK_PUT,
    ST_TASKS_DELETE,
    ST_NODE_PUT,
    ST_JOB_GET,
    ST_TASKS_GET,
    ST_TASK_MEM_PUT,
    ST_TASK_MEM_DELETE,
    ST_TASK_MEM_GET,
    ST_JOB_SCHED_PUT,
    ST_BEGIN, /* a group commit's two ends, prepared once like the rest */
    ST_COMMIT,
    ST_COUNT
};

#define JOB_COLS                                                                            \
    "SELECT id, tenant, spec, state, submit_us, start_us, end_us, reason, exit_code,"       \
    " requeue_wait, requeues FROM jobs"


static const char *const stmts[ST_COUNT] = {
    [ST_JOB_INSERT] = "INSERT INTO jobs(id, tenant, spec, state, submit_us, start_us, end_us,"
                      " reason, exit_code, requeue_wait, requeues)"
                      " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    [ST_JOB_UPDATE] = "UPDATE jobs SET state = ?2, start_us = ?3, end_us = ?4, reason = ?5,"
                      " exit_code = ?6, requeue_wait = ?7, requeues = ?8 WHERE id = ?1",
    [ST_TASK_PUT] = "INSERT OR REPLACE INTO tasks(job, idx, node, gpu_mask, gpu_milli, gpu_mem,"
                    " state, pid, exit_code, signal, start_us, end_us, attempt)"
                    " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
    [ST_TASKS_DELETE] = "DELETE FROM tasks WHERE job = ?1",
    [ST_NODE_PUT] = "INSERT OR REPLACE INTO nodes(name, spec, addr, last_seen_us)"
                    " VALUES(?1, ?2, ?3, ?4)",
    [ST_JOB_GET] = JOB_COLS " WHERE id = ?1",
    [ST_TASKS_GET] = "SELECT idx, node, gpu_mask, gpu_milli, gpu_mem, state, pid, exit_code,"
                     " signal, start_us, end_us, attempt FROM tasks WHERE job = ?1 ORDER BY idx",
    [ST_TASK_MEM_PUT] = "INSERT OR REPLACE INTO task_mem(job, idx, oom_killed, mem_peak, mem_limit,"
                        " mem_request) VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
    [ST_TASK_MEM_DELETE] = "DELETE FROM task_mem WHERE job = ?1",
    [ST_TASK_MEM_GET] = "SELECT idx, oom_killed, mem_peak, mem_limit, mem_request FROM task_mem"
                        " WHERE job = ?1",
    [ST_JOB_SCHED_PUT] = "INSERT OR REPLACE INTO job_sched(job, sched_delay_us) VALUES(?1, ?2)",
    [ST_BEGIN] = "BEGIN",
    [ST_COMMIT] = "COMMIT",
};

static void lazy_cb(evutil_socket_t fd, short what, void *ud) {
    ctl_store_commit(ud);
}

static void fatal_sql(ctl_store_t *s, const char *what) __attribute__((noreturn));
static void fatal_sql(ctl_store_t *s, const char *what) {
    sl_log(SL_LOG_ERROR, "store", "%s: %s: %s; exiting (state on disk is consistent)", s->path,
           what, sqlite3_errmsg(s->db));
    exit(3);
}

/* A failed read: fatal once sluiced runs, else -1 with the message kept
 * for ctl_store_errmsg. */
static int read_fail(ctl_store_t *s, const char *what) {
    if (s->fail_stop)
        fatal_sql(s, what);
    snprintf(s->errbuf, sizeof s->errbuf, "%s: %s", what, sqlite3_errmsg(s->db));
    return -1;
}

/* A row SQLite read but whose content is not what sluiced wrote. -1. */
static int bad_row(ctl_store_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad_row(ctl_store_t *s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->errbuf, sizeof s->errbuf, fmt, ap);
    va_end(ap);
    return -1;
}


/* PRAGMA quick_check: 0 when it reports "ok", else -1 with what it found:
 * damage (what quick_check lists, or SQLite calling the file corrupt or
 * not a database) with the advice to restore, or any other failure (a
 * lock, a permission, an I/O error) as SQLite's message alone. */
static int quick_check(sqlite3 *db, const char *path, char *err, size_t errlen) {
    sqlite3_stmt *st = NULL;
    char first[200] = "";
    int nbad = 0;
    int rc = sqlite3_prepare_v2(db, "PRAGMA quick_check", -1, &st, NULL);
    if (rc == SQLITE_OK) {
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            const char *m = (const char *)sqlite3_column_text(st, 0);
            if (m == NULL || strcmp(m, "ok") != 0) {
                if (nbad++ == 0)
                    snprintf(first, sizeof first, "%s", m ? m : "(no message)");
            }
        }
    }
    bool ran = rc == SQLITE_DONE || rc == SQLITE_OK;
    int code = sqlite3_errcode(db);
    if (!ran)
        snprintf(first, sizeof first, "%s", sqlite3_errmsg(db));
    sqlite3_finalize(st);
    if (ran && nbad == 0)
        return 0;
    if (!ran && code != SQLITE_CORRUPT && code != SQLITE_NOTADB) {
        snprintf(err, errlen, "%s: cannot be read: %s", path, first);
        return -1;
    }
    snprintf(err, errlen, "%s: the database is damaged (quick_check: %s%s)" CTL_SQLITE_RESTORE_HINT, path,
             first, nbad > 1 ? "; and more" : "", path);
    return -1;
}

const char *ctl_store_instance(const ctl_store_t *s) {
    return s->instance;
}

/* Whether the state file must be created: it is missing, or empty with no
 * write-ahead log holding its pages. */
static bool needs_init(const char *path, bool *missing) {
    struct stat sb;
    *missing = false;
    if (stat(path, &sb) != 0) {
        *missing = errno == ENOENT;
        return *missing;
    }
    if (!S_ISREG(sb.st_mode) || sb.st_size != 0)
        return false;
    char wal[4096];
    snprintf(wal, sizeof wal, "%s-wal", path);
    return stat(wal, &sb) != 0 || sb.st_size == 0;
}

int ctl_store_open(ctl_store_t **out, ctl_loop_t *loop, const char *path, bool init, char *err,
                   size_t errlen) {
    ctl_store_t *s = *out = sl_xmalloc(sizeof *s);
    *s = (ctl_store_t){.path = sl_xstrdup(path), .loop = loop};
    bool missing;
    bool fresh = needs_init(path, &missing);
    if (fresh && !init) {
        snprintf(err, errlen,
                 "%s: %s; start sluiced with --init (or init: true in the config) to create an "
                 "empty state database there, or point --state at the existing one (a copy made "
                 "with `sluiced backup` will do)",
                 path, missing ? "no such file" : "the file is empty (0 bytes)");
        return -1;
    }
    int rc = sqlite3_open_v2(path, &s->db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX |
                                 (missing ? SQLITE_OPEN_CREATE : 0),
                             NULL);
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "%s: %s", s->path, s->db ? sqlite3_errmsg(s->db) : "cannot open");
        return -1;
    }
    sqlite3_busy_timeout(s->db, 5000);
    if (!fresh && quick_check(s->db, path, err, errlen) < 0) {
        /* Leave the file and its log exactly as found: no checkpoint. */
        sqlite3_db_config(s->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL);
        return -1;
    }
    char *msg = NULL;
    if (sqlite3_exec(s->db,
                     "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                     " PRAGMA wal_autocheckpoint=4000; PRAGMA foreign_keys=OFF;",
                     NULL, NULL, &msg) != SQLITE_OK ||
        sqlite3_exec(s->db, ctl_sqlite_schema, NULL, NULL, &msg) != SQLITE_OK) {
        snprintf(err, errlen, "%s: %s", s->path, msg ? msg : sqlite3_errmsg(s->db));
        sqlite3_free(msg);
        return -1;
    }
    if (ctl_sqlite_upgrade(s, err, errlen) < 0)
        return -1;
    for (int i = 0; i < ST_COUNT; i++) {
        if (sqlite3_prepare_v3(s->db, stmts[i], -1, SQLITE_PREPARE_PERSISTENT, &s->st[i], NULL) !=
            SQLITE_OK) {
            snprintf(err, errlen, "%s: %s", s->path, sqlite3_errmsg(s->db));
            return -1;
        }
    }
    if (fresh)
        sl_log(SL_LOG_INFO, "store", "created an empty state database at %s (--init)", path);
    s->lazy_ev = evtimer_new(loop->base, lazy_cb, s);
    return 0;
}

void ctl_store_close(ctl_store_t *s) {
    if (s == NULL)
        return;
    if (s->db != NULL) {
        if (s->in_txn)
            ctl_store_commit(s);
        if (s->repl_fini)
            s->repl_fini(s);
        for (int i = 0; i < ST_COUNT; i++)
            sqlite3_finalize(s->st[i]);
        sqlite3_close(s->db);
    }
    if (s->lazy_ev)
        event_free(s->lazy_ev);
    sl_free(s->path);
    sl_free(s);
}

const char *ctl_store_errmsg(ctl_store_t *s) {
    if (s->errbuf[0] != '\0')
        return s->errbuf;
    return s->db ? sqlite3_errmsg(s->db) : "not open";
}

void ctl_store_set_error(ctl_store_t *s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->errbuf, sizeof s->errbuf, fmt, ap);
    va_end(ap);
}

void ctl_store_set_fail_stop(ctl_store_t *s) {
    s->fail_stop = true;
}

void ctl_store_stats(const ctl_store_t *s, ctl_store_stats_t *out) {
    *out = (ctl_store_stats_t){.commits = s->commits, .commit_us = s->commit_us};
}

/* One step of a statement without parameters or rows, reset after. */
static int run(sqlite3_stmt *st) {
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc;
}

/* The COMMIT itself: in HA mode the changes are handed to the replicated
 * store first (repl_commit), which may not have them durable yet. */
static void commit_local(ctl_store_t *s) {
    int64_t t0 = ctl_mono_us();
    if (s->repl_commit && s->repl_commit(s) < 0)
        fatal_sql(s, "replicate");
    if (run(s->st[ST_COMMIT]) != SQLITE_DONE)
        fatal_sql(s, "COMMIT");
    s->in_txn = false;
    s->txn_urgent = false;
    if (s->lazy_ev)
        evtimer_del(s->lazy_ev);
    s->commits++;
    if (s->repl_commit == NULL)
        s->seq = s->durable = s->commits; /* synchronous=FULL: durable now */
    s->commit_us += (uint64_t)(ctl_mono_us() - t0);
}

bool ctl_store_flush(void *ud) {
    ctl_store_t *s = ud;
    if (s->txn_urgent)
        commit_local(s);
    return false;
}

uint64_t ctl_store_seq(const ctl_store_t *s) {
    return s->seq;
}

uint64_t ctl_store_durable(const ctl_store_t *s) {
    return s->durable;
}

static void open_txn(ctl_store_t *s) {
    if (s->in_txn)
        return;
    if (run(s->st[ST_BEGIN]) != SQLITE_DONE)
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

void ctl_sqlite_begin(ctl_store_t *s) {
    store_begin(s);
}

void ctl_sqlite_fatal(ctl_store_t *s, const char *what) {
    fatal_sql(s, what);
}

int ctl_sqlite_read_fail(ctl_store_t *s, const char *what) {
    return read_fail(s, what);
}

void ctl_store_discard(ctl_store_t *s) {
    if (s->db == NULL || !s->in_txn)
        return;
    if (sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL) != SQLITE_OK)
        sl_log(SL_LOG_ERROR, "store", "%s: ROLLBACK: %s", s->path, sqlite3_errmsg(s->db));
    ctl_changes_rewind(s->changes, 0);
    s->in_txn = false;
    s->txn_urgent = false;
    if (s->lazy_ev)
        evtimer_del(s->lazy_ev);
}

int ctl_store_commit(ctl_store_t *s) {
    if (s->in_txn)
        commit_local(s);
    if (s->repl_wait && s->durable < s->seq)
        s->repl_wait(s);
    return 0;
}

/* Runs a write statement whose binds gave bound (SQLITE_OK, or not when
 * any failed); anything but SQLITE_DONE is fatal. */
static void step(ctl_store_t *s, sqlite3_stmt *st, int bound, const char *what) {
    int rc = bound == SQLITE_OK ? sqlite3_step(st) : bound;
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc != SQLITE_DONE)
        fatal_sql(s, what);
}

void ctl_sqlite_write_begin(ctl_store_t *s, bool urgent) {
    if (urgent)
        store_begin(s);
    else
        store_begin_lazy(s);
}

void ctl_sqlite_write_step(ctl_store_t *s, sqlite3_stmt *st, int bound, const char *what) {
    step(s, st, bound, what);
}

/* The binds below return SQLITE_OK or an error; OR-ing them is nonzero
 * exactly when one failed, which is all step() needs to know. */
static int bind_opt_i64(sqlite3_stmt *st, int i, bool has, int64_t v) {
    return has ? sqlite3_bind_int64(st, i, v) : sqlite3_bind_null(st, i);
}

static int bind_job(sqlite3_stmt *st, const ctl_job_t *j, int base) {
    int b = sqlite3_bind_text(st, base, ctl_job_state_name(j->state), -1, SQLITE_STATIC);
    b |= bind_opt_i64(st, base + 1, j->start_us >= 0, j->start_us);
    b |= bind_opt_i64(st, base + 2, j->end_us >= 0, j->end_us);
    b |= sqlite3_bind_text(st, base + 3, j->reason, -1, SQLITE_STATIC);
    b |= bind_opt_i64(st, base + 4, j->has_exit, j->exit_code);
    b |= sqlite3_bind_int(st, base + 5, j->requeue_wait);
    b |= sqlite3_bind_int(st, base + 6, j->requeues);
    return b;
}

int ctl_store_job_insert(ctl_store_t *s, const ctl_job_t *j, const char *tenant) {
    store_begin(s);
    sqlite3_stmt *st = s->st[ST_JOB_INSERT];
    char *spec = json_dumps(j->spec, JSON_COMPACT | JSON_PRESERVE_ORDER);
    int b = sqlite3_bind_int64(st, 1, (sqlite3_int64)j->id);
    b |= sqlite3_bind_text(st, 2, tenant, -1, SQLITE_STATIC);
    b |= spec ? sqlite3_bind_text(st, 3, spec, -1, free) : SQLITE_NOMEM;
    b |= sqlite3_bind_text(st, 4, ctl_job_state_name(j->state), -1, SQLITE_STATIC);
    b |= sqlite3_bind_int64(st, 5, j->submit_us);
    b |= bind_opt_i64(st, 6, j->start_us >= 0, j->start_us);
    b |= bind_opt_i64(st, 7, j->end_us >= 0, j->end_us);
    b |= sqlite3_bind_text(st, 8, j->reason, -1, SQLITE_STATIC);
    b |= bind_opt_i64(st, 9, j->has_exit, j->exit_code);
    b |= sqlite3_bind_int(st, 10, j->requeue_wait);
    b |= sqlite3_bind_int(st, 11, j->requeues);
    size_t mark = ctl_changes_mark(s->changes);
    int rc = b == SQLITE_OK ? sqlite3_step(st) : b;
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc != SQLITE_DONE) {
        sl_log(SL_LOG_ERROR, "store", "job=%llu insert: %s", (unsigned long long)j->id,
               b == SQLITE_OK ? sqlite3_errmsg(s->db) : "the row could not be bound");
        /* SQLite may roll the whole transaction back (a full disk): the
         * iteration's other writes are then lost, and only a restart from
         * the database can make memory agree with it again. */
        if (sqlite3_get_autocommit(s->db))
            fatal_sql(s, "job insert rolled the transaction back");
        ctl_changes_rewind(s->changes, mark); /* the statement was undone */
        return SL_EIO;
    }
    return 0;
}

void ctl_store_job_update(ctl_store_t *s, const ctl_job_t *j) {
    store_begin(s);
    sqlite3_stmt *st = s->st[ST_JOB_UPDATE];
    int b = sqlite3_bind_int64(st, 1, (sqlite3_int64)j->id);
    b |= bind_job(st, j, 2);
    step(s, st, b, "job update");
}

void ctl_store_task_put(ctl_store_t *s, const ctl_job_t *j, int32_t i, const char *node) {
    ctl_store_task_put_lazy(s, j, i, node);
    store_begin(s);
}

void ctl_store_task_put_lazy(ctl_store_t *s, const ctl_job_t *j, int32_t i, const char *node) {
    store_begin_lazy(s);
    const ctl_task_t *t = &j->tasks[i];
    sqlite3_stmt *st = s->st[ST_TASK_PUT];
    int b = sqlite3_bind_int64(st, 1, (sqlite3_int64)j->id);
    b |= sqlite3_bind_int(st, 2, i);
    b |= sqlite3_bind_text(st, 3, node ? node : "", -1, SQLITE_STATIC);
    b |= sqlite3_bind_int64(st, 4, t->gpu_mask);
    b |= sqlite3_bind_int(st, 5, t->gpu_milli);
    b |= sqlite3_bind_int64(st, 6, t->gpu_mem_bytes);
    b |= sqlite3_bind_text(st, 7, ctl_task_state_name(t->state), -1, SQLITE_STATIC);
    b |= bind_opt_i64(st, 8, t->pid > 0, t->pid);
    b |= bind_opt_i64(st, 9, t->has_exit, t->exit_code);
    b |= bind_opt_i64(st, 10, t->has_exit, t->signal);
    b |= bind_opt_i64(st, 11, t->start_us >= 0, t->start_us);
    b |= bind_opt_i64(st, 12, t->end_us >= 0, t->end_us);
    b |= bind_opt_i64(st, 13, t->attempt >= 0, t->attempt);
    step(s, st, b, "task put");
}

void ctl_store_tasks_delete(ctl_store_t *s, uint64_t job) {
    store_begin(s);
    sqlite3_stmt *st = s->st[ST_TASKS_DELETE];
    step(s, st, sqlite3_bind_int64(st, 1, (sqlite3_int64)job), "tasks delete");
    st = s->st[ST_TASK_MEM_DELETE];
    step(s, st, sqlite3_bind_int64(st, 1, (sqlite3_int64)job), "task_mem delete");
}

void ctl_store_task_mem_put(ctl_store_t *s, const ctl_job_t *j, int32_t i) {
    store_begin(s);
    const ctl_task_t *t = &j->tasks[i];
    sqlite3_stmt *st = s->st[ST_TASK_MEM_PUT];
    int b = sqlite3_bind_int64(st, 1, (sqlite3_int64)j->id);
    b |= sqlite3_bind_int(st, 2, i);
    b |= sqlite3_bind_int(st, 3, t->oom_killed);
    b |= bind_opt_i64(st, 4, t->mem_peak > 0, t->mem_peak);
    b |= bind_opt_i64(st, 5, t->mem_limit > 0, t->mem_limit);
    b |= bind_opt_i64(st, 6, t->mem_request > 0, t->mem_request);
    step(s, st, b, "task_mem put");
}

void ctl_store_job_sched_put(ctl_store_t *s, uint64_t job, int64_t sched_delay_us) {
    store_begin_lazy(s);
    sqlite3_stmt *st = s->st[ST_JOB_SCHED_PUT];
    int b = sqlite3_bind_int64(st, 1, (sqlite3_int64)job);
    b |= sqlite3_bind_int64(st, 2, sched_delay_us);
    step(s, st, b, "job_sched put");
}

void ctl_store_node_put(ctl_store_t *s, const ctl_node_t *n, const char *name) {
    store_begin(s);
    sqlite3_stmt *st = s->st[ST_NODE_PUT];
    int b = sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    b |= sqlite3_bind_text(st, 2, n->spec_json ? n->spec_json : "{}", -1, SQLITE_STATIC);
    b |= sqlite3_bind_text(st, 3, n->addr, -1, SQLITE_STATIC);
    b |= sqlite3_bind_int64(st, 4, n->last_seen_us);
    step(s, st, b, "node put");
}

/* ---- reads ---- */

int64_t ctl_sqlite_col_i64(sqlite3_stmt *st, int i, int64_t dflt) {
    return sqlite3_column_type(st, i) == SQLITE_NULL ? dflt : sqlite3_column_int64(st, i);
}

int ctl_store_nodes_read(ctl_store_t *s, ctl_store_node_fn fn, void *ud) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "SELECT name, spec, addr, last_seen_us FROM nodes ORDER BY rowid",
                           -1, &st, NULL) != SQLITE_OK)
        return read_fail(s, "reading nodes");
    int rc, out = 0;
    while (out == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        const char *spec = (const char *)sqlite3_column_text(st, 1);
        if (name == NULL || spec == NULL)
            out = bad_row(s, "a node row without a name or spec");
        else
            out = fn(ud, name, spec, (const char *)sqlite3_column_text(st, 2), ctl_sqlite_col_i64(st, 3, -1));
    }
    if (out == 0 && rc != SQLITE_DONE)
        out = read_fail(s, "reading nodes");
    sqlite3_finalize(st);
    return out;
}

int ctl_store_max_id(ctl_store_t *s, uint64_t *out) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "SELECT MAX(id) FROM jobs", -1, &st, NULL) != SQLITE_OK)
        return read_fail(s, "reading the highest job id");
    *out = 0;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        *out = (uint64_t)sqlite3_column_int64(st, 0);
    int ret = rc == SQLITE_ROW ? 0 : read_fail(s, "reading the highest job id");
    sqlite3_finalize(st);
    return ret;
}

/* A job from a JOB_COLS row (see ctl_store_job_fn) in *out. -1 (*out
 * NULL, the reason in s->errbuf) when a column does not hold what sluiced
 * writes there: damage that quick_check cannot see, inside a value. */
static int job_from_row(ctl_store_t *s, sqlite3_stmt *st, ctl_job_t **out) {
    *out = NULL;
    uint64_t id = (uint64_t)sqlite3_column_int64(st, 0);
    const char *spec = (const char *)sqlite3_column_text(st, 2);
    const char *state = (const char *)sqlite3_column_text(st, 3);
    json_error_t jerr;
    json_t *js = spec ? json_loads(spec, 0, &jerr) : NULL;
    if (js == NULL || !json_is_object(js)) {
        json_decref(js);
        return bad_row(s, "job %llu: its stored spec is not a JSON object",
                       (unsigned long long)id);
    }
    ctl_job_t *j = ctl_job_new();
    j->id = id;
    j->spec = js;
    j->retries = (int32_t)json_integer_value(json_object_get(js, "retries"));
    j->tenant = -1;
    if (sqlite3_column_text(st, 1) == NULL) {
        ctl_job_free(j);
        return bad_row(s, "job %llu: its stored tenant is empty, which sluiced never writes",
                       (unsigned long long)id);
    }
    if (ctl_job_state_parse(state, &j->state) < 0) {
        ctl_job_free(j);
        return bad_row(s, "job %llu: its stored state \"%.32s\" is not one sluiced writes "
                       "(pending, running, succeeded, failed, cancelled)",
                       (unsigned long long)id, state ? state : "");
    }
    j->submit_us = ctl_sqlite_col_i64(st, 4, 0);
    j->start_us = ctl_sqlite_col_i64(st, 5, -1);
    j->end_us = ctl_sqlite_col_i64(st, 6, -1);
    const char *reason = (const char *)sqlite3_column_text(st, 7);
    snprintf(j->reason, sizeof j->reason, "%s", reason ? reason : "");
    j->has_exit = sqlite3_column_type(st, 8) != SQLITE_NULL;
    j->exit_code = (int32_t)ctl_sqlite_col_i64(st, 8, 0);
    j->requeue_wait = sqlite3_column_int(st, 9) != 0;
    j->requeues = sqlite3_column_int(st, 10);
    *out = j;
    return 0;
}

static const char *row_tenant(sqlite3_stmt *st) {
    const char *t = (const char *)sqlite3_column_text(st, 1);
    return t ? t : "";
}

/* Hands every row of a prepared JOB_COLS statement to fn and finalizes it.
 * The first bad row, failed step or callback failure stops it: -1. */
static int jobs_read(ctl_store_t *s, sqlite3_stmt *st, const char *what, ctl_store_job_fn fn,
                     void *ud) {
    int rc, out = 0;
    while (out == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        ctl_job_t *j;
        out = job_from_row(s, st, &j);
        if (out == 0)
            out = fn(ud, j, row_tenant(st));
    }
    if (out == 0 && rc != SQLITE_DONE)
        out = read_fail(s, what);
    sqlite3_finalize(st);
    return out;
}

int ctl_store_jobs_active(ctl_store_t *s, ctl_store_job_fn fn, void *ud) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db,
                           JOB_COLS " WHERE state NOT IN ('succeeded','failed','cancelled')"
                                    " UNION " JOB_COLS
                                    " WHERE id IN (SELECT job FROM tasks WHERE state IN"
                                    " ('launching','running')) ORDER BY 1",
                           -1, &st, NULL) != SQLITE_OK)
        return read_fail(s, "reading the active jobs");
    return jobs_read(s, st, "reading the active jobs", fn, ud);
}

int ctl_store_jobs_finished(ctl_store_t *s, int64_t since_us, int64_t limit, ctl_store_job_fn fn,
                            void *ud) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db,
                           JOB_COLS " WHERE end_us >= ?1 AND state IN ('succeeded','failed',"
                                    "'cancelled') ORDER BY end_us DESC, id DESC LIMIT ?2",
                           -1, &st, NULL) != SQLITE_OK)
        return read_fail(s, "reading the finished jobs");
    if ((sqlite3_bind_int64(st, 1, since_us) | sqlite3_bind_int64(st, 2, limit)) != SQLITE_OK) {
        int rc = read_fail(s, "reading the finished jobs");
        sqlite3_finalize(st);
        return rc;
    }
    return jobs_read(s, st, "reading the finished jobs", fn, ud);
}

ctl_job_t *ctl_store_job_get(ctl_store_t *s, uint64_t id, char *tenant, size_t tenantlen) {
    sqlite3_stmt *st = s->st[ST_JOB_GET];
    int rc = sqlite3_bind_int64(st, 1, (sqlite3_int64)id);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    ctl_job_t *j = NULL;
    if (rc == SQLITE_ROW) {
        if (job_from_row(s, st, &j) == 0)
            snprintf(tenant, tenantlen, "%s", row_tenant(st));
        else
            sl_log(SL_LOG_ERROR, "store", "%s: %s", s->path, s->errbuf);
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        read_fail(s, "reading a job");
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return j;
}

int ctl_store_tasks_read(ctl_store_t *s, ctl_job_t *j, ctl_store_task_fn fn, void *ud) {
    sqlite3_stmt *st = s->st[ST_TASKS_GET];
    if (sqlite3_bind_int64(st, 1, (sqlite3_int64)j->id) != SQLITE_OK)
        return read_fail(s, "reading tasks");
    int rc, out = 0;
    while (out == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        ctl_task_t t = {.node = -1};
        int32_t idx = sqlite3_column_int(st, 0);
        const char *state = (const char *)sqlite3_column_text(st, 5);
        if (ctl_task_state_parse(state, &t.state) < 0) {
            out = bad_row(s, "job %llu task %d: its stored state (\"%.32s\") is not one sluiced "
                          "writes", (unsigned long long)j->id, idx, state ? state : "");
            break;
        }
        t.gpu_mask = (uint32_t)sqlite3_column_int64(st, 2);
        t.gpu_milli = sqlite3_column_int(st, 3);
        t.gpu_mem_bytes = sqlite3_column_int64(st, 4);
        t.pid = (int32_t)ctl_sqlite_col_i64(st, 6, 0);
        t.has_exit = sqlite3_column_type(st, 7) != SQLITE_NULL;
        t.exit_code = (int32_t)ctl_sqlite_col_i64(st, 7, 0);
        t.signal = (int32_t)ctl_sqlite_col_i64(st, 8, 0);
        t.start_us = ctl_sqlite_col_i64(st, 9, -1);
        t.end_us = ctl_sqlite_col_i64(st, 10, -1);
        t.attempt = (int32_t)ctl_sqlite_col_i64(st, 11, -1);
        out = fn(ud, j, idx, (const char *)sqlite3_column_text(st, 1), &t);
    }
    if (out == 0 && rc != SQLITE_DONE)
        out = read_fail(s, "reading tasks");
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return out;
}

int ctl_store_task_mem_read(ctl_store_t *s, ctl_job_t *j) {
    sqlite3_stmt *st = s->st[ST_TASK_MEM_GET];
    if (sqlite3_bind_int64(st, 1, (sqlite3_int64)j->id) != SQLITE_OK)
        return read_fail(s, "reading task_mem");
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int32_t idx = sqlite3_column_int(st, 0);
        if (idx < 0 || idx >= j->ntasks || j->tasks == NULL) {
            sl_log(SL_LOG_WARN, "store", "job=%llu: a task_mem row for task %d, which the job "
                   "does not have; ignored", (unsigned long long)j->id, idx);
            continue;
        }
        ctl_task_t *t = &j->tasks[idx];
        t->oom_killed = sqlite3_column_int(st, 1) != 0;
        t->mem_peak = ctl_sqlite_col_i64(st, 2, 0);
        t->mem_limit = ctl_sqlite_col_i64(st, 3, 0);
        t->mem_request = ctl_sqlite_col_i64(st, 4, 0);
    }
    int out = rc == SQLITE_DONE ? 0 : read_fail(s, "reading task_mem");
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return out;
}

/* ---- backup ---- */

/* Pages copied per sqlite3_backup_step: 4 MiB at the default page size. */
#define BACKUP_PAGES_PER_STEP 1024

int ctl_store_backup(const char *src_path, const char *dst_path, ctl_store_backup_stats_t *stats,
                     char *err, size_t errlen) {
    sqlite3 *src = NULL, *dst = NULL;
    sqlite3_backup *b = NULL;
    char tmp[4096];
    int ret = -1, rc;
    bool tmp_made = false;
    memset(stats, 0, sizeof *stats);
    struct stat sb;
    if (stat(dst_path, &sb) == 0) {
        snprintf(err, errlen, "%s already exists; name a new file (a backup never overwrites)",
                 dst_path);
        return -1;
    }
    if (stat(src_path, &sb) != 0 || sb.st_size == 0) {
        snprintf(err, errlen, "%s: %s", src_path,
                 errno == ENOENT ? "no such file" : "empty or unreadable: nothing to back up");
        return -1;
    }
    snprintf(tmp, sizeof tmp, "%s.partial-%ld", dst_path, (long)getpid());
    /* Read-write only so that SQLite may use the WAL index; nothing is written. */
    if (sqlite3_open_v2(src_path, &src, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
        SQLITE_OK) {
        snprintf(err, errlen, "%s: %s", src_path, src ? sqlite3_errmsg(src) : "cannot open");
        goto out;
    }
    sqlite3_busy_timeout(src, 5000);
    /* One read transaction for the whole copy: a fixed snapshot in WAL
     * mode, so commits of the running sluiced neither wait for the copy
     * nor make it start over. */
    if (sqlite3_exec(src, "BEGIN; SELECT count(*) FROM sqlite_master;", NULL, NULL, NULL) !=
        SQLITE_OK) {
        snprintf(err, errlen, "%s: %s", src_path, sqlite3_errmsg(src));
        goto out;
    }
    if (sqlite3_open_v2(tmp, &dst, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
        SQLITE_OK) {
        snprintf(err, errlen, "%s: %s", tmp, dst ? sqlite3_errmsg(dst) : "cannot create");
        goto out;
    }
    tmp_made = true;
    b = sqlite3_backup_init(dst, "main", src, "main");
    if (b == NULL) {
        snprintf(err, errlen, "%s: %s", tmp, sqlite3_errmsg(dst));
        goto out;
    }
    do {
        rc = sqlite3_backup_step(b, BACKUP_PAGES_PER_STEP);
        stats->steps++;
        if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED)
            sqlite3_sleep(10);
    } while (rc == SQLITE_OK || rc == SQLITE_BUSY || rc == SQLITE_LOCKED);
    stats->pages = sqlite3_backup_pagecount(b);
    rc = sqlite3_backup_finish(b);
    b = NULL;
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "copying %s to %s: %s", src_path, tmp, sqlite3_errmsg(dst));
        goto out;
    }
    /* Ends the read transaction; the copy is complete either way. */
    (void)sqlite3_exec(src, "COMMIT", NULL, NULL, NULL);
    /* A self-contained file (no -wal beside it); sluiced turns WAL back on
     * when it opens the copy. */
    if (sqlite3_exec(dst, "PRAGMA journal_mode=DELETE", NULL, NULL, NULL) != SQLITE_OK ||
        quick_check(dst, tmp, err, errlen) < 0) {
        if (err[0] == '\0' || strstr(err, "quick_check") == NULL)
            snprintf(err, errlen, "%s: %s", tmp, sqlite3_errmsg(dst));
        goto out;
    }
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(dst, "SELECT count(*), count(*) FILTER (WHERE state IN"
                                " ('pending','running')) FROM jobs", -1, &st, NULL) != SQLITE_OK ||
        sqlite3_step(st) != SQLITE_ROW) {
        snprintf(err, errlen, "%s: %s", tmp, sqlite3_errmsg(dst));
        sqlite3_finalize(st);
        goto out;
    }
    stats->jobs = sqlite3_column_int64(st, 0);
    stats->active = sqlite3_column_int64(st, 1);
    sqlite3_finalize(st);
    if (sqlite3_close(dst) != SQLITE_OK) {
        snprintf(err, errlen, "%s: %s", tmp, sqlite3_errmsg(dst));
        goto out;
    }
    dst = NULL;
    if (stat(tmp, &sb) == 0)
        stats->bytes = (int64_t)sb.st_size;
    /* The copy takes its name only once it is whole and checked. */
    if (rename(tmp, dst_path) != 0) {
        snprintf(err, errlen, "renaming %s to %s: %s", tmp, dst_path, strerror(errno));
        goto out;
    }
    tmp_made = false;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", dst_path);
    char *slash = strrchr(dir, '/');
    if (slash == dir)
        slash[1] = '\0';
    else if (slash)
        *slash = '\0';
    else
        snprintf(dir, sizeof dir, ".");
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    if (dfd >= 0) {
        fsync(dfd); /* the new name survives a crash */
        close(dfd);
    }
    ret = 0;
out:
    if (b)
        sqlite3_backup_finish(b);
    sqlite3_close(dst);
    sqlite3_close(src);
    if (tmp_made)
        unlink(tmp);
    return ret;
}
