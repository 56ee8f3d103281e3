/*
 * store.h - sluiced's durable state: rows in SQLite, nothing more.
 *
 * The store knows tables, statements and transactions. It does not know
 * the scheduler, the cluster or a job's lifecycle: the domain passes names
 * (tenant, node) where a row holds them, and reading back hands rows to the
 * caller (recover.c), which rebuilds the core and the jobs.
 *
 * Every write joins the loop iteration's open transaction; the COMMIT hook
 * (ctl_store_flush, run by the loop after the scheduling cycle) commits it
 * once. A failed write or COMMIT is fatal (fail-stop: the process exits
 * with status 3 and a restart recovers from the database, which is the
 * truth), except for ctl_store_job_insert, whose failure the submitter
 * answers. Reads fail back to the caller while sluiced starts (recover.c
 * stops the load and sluiced exits 2) and are fatal like writes once
 * fail_stop is set.
 */
#ifndef SLUICE_CTL_STORE_H
#define SLUICE_CTL_STORE_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/loop.h"
#include "base/model.h"

struct event;

#define CTL_LAZY_COMMIT_MS 100

typedef struct ctl_store {
    sqlite3 *db;
    const char *path;      /* not owned */
    ctl_loop_t *loop;      /* kicked when a write must commit this iteration */
    bool in_txn;
    bool txn_urgent;       /* the open transaction must commit this iteration */
    struct event *lazy_ev; /* commits a transaction holding only lazy writes */
    sqlite3_stmt *st[16];
    uint64_t commits;      /* for /metrics */
    uint64_t commit_us;
    bool fail_stop;        /* a failed read exits 3, as a failed write does */
    char errbuf[320];      /* why the last read failed, when SQLite did not say */
} ctl_store_t;

/* Opens the database at path in caller storage s, after PRAGMA
 * quick_check. A missing or empty (0-byte) file is created only when init
 * is true. 0, or -1 with "path: message" in err saying what to do: for a
 * damaged file, restore a backup (the file is left as it was); for a
 * missing or empty one, --init. Close s anyway. O(database size). */
int ctl_store_open(ctl_store_t *s, ctl_loop_t *loop, const char *path, bool init, char *err,
                   size_t errlen);
/* Commits what is open and closes; accepts a store never opened. */
void ctl_store_close(ctl_store_t *s);
/* Why the last call failed: the store's own message for a bad row or a
 * failed read, else SQLite's (valid until the next call). */
const char *ctl_store_errmsg(ctl_store_t *s);
/* Rolls the open transaction back, if any: for a start-up that failed
 * half-way, so that a refused load leaves the file as it was. Can't fail
 * (a failed ROLLBACK is logged; SQLite then undoes it at the next open). */
void ctl_store_discard(ctl_store_t *s);
/* Commits the open transaction, if any. 0 (a failure exits). */
int ctl_store_commit(ctl_store_t *s);
/* The loop's COMMIT hook: commits when a write asked for it (ud is the
 * store). Returns false (no work left). */
bool ctl_store_flush(void *ud);

/* For the other writers of this layer (store_deps.c): opens the
 * iteration's transaction as an urgent write; ends the process for a
 * failed write (as every write here does); a failed read as the reads
 * below treat it (-1, or fatal once fail_stop is set). */
void ctl_store_begin(ctl_store_t *s);
void ctl_store_fatal(ctl_store_t *s, const char *what);
int ctl_store_read_fail(ctl_store_t *s, const char *what);

/* ---- writes (each joins the iteration's transaction) ---- */

/* Inserts j's row (tenant is its tenant's name). 0, or SL_EIO when SQLite
 * refused the row (logged; the transaction stays open and usable, or the
 * process exits if SQLite rolled it back). */
int ctl_store_job_insert(ctl_store_t *s, const ctl_job_t *j, const char *tenant);
void ctl_store_job_update(ctl_store_t *s, const ctl_job_t *j);
/* Task i of j, placed on the node called node. */
void ctl_store_task_put(ctl_store_t *s, const ctl_job_t *j, int32_t i, const char *node);
/* The same for a change whose loss in a crash is harmless (a task reported
 * started): committed with the next urgent write or after
 * CTL_LAZY_COMMIT_MS. */
void ctl_store_task_put_lazy(ctl_store_t *s, const ctl_job_t *j, int32_t i, const char *node);
/* Deletes the job's task rows (and their task_mem rows). */
void ctl_store_tasks_delete(ctl_store_t *s, uint64_t job);
/* Task i of j's memory end (oom_killed, mem_peak, mem_limit, mem_request)
 * into task_mem, a table of its own so that databases of earlier versions
 * need no migration. */
void ctl_store_task_mem_put(ctl_store_t *s, const ctl_job_t *j, int32_t i);
void ctl_store_node_put(ctl_store_t *s, const ctl_node_t *n, const char *name);
/* The scheduler's decision time for job (`sluice report`'s scheduling
 * delay), a lazy write: the domain calls it where it starts the job, with
 * the wall time the cycle spent deciding for it. */
void ctl_store_job_sched_put(ctl_store_t *s, uint64_t job, int64_t sched_delay_us);

/* ---- for the store's extensions (opstore.c), which keep tables of their own ---- */

/* Joins the iteration's transaction: urgent, it commits this iteration;
 * else with the next urgent write or after CTL_LAZY_COMMIT_MS. */
void ctl_store_write_begin(ctl_store_t *s, bool urgent);
/* Steps and resets the write statement st whose binds gave bound; anything
 * but SQLITE_DONE is fatal (exit 3), as for the store's own writes. */
void ctl_store_write_step(ctl_store_t *s, sqlite3_stmt *st, int bound, const char *what);
/* A failed read: ctl_store_read_fail, above. */

/* ---- reads ----
 * Each returns 0, or -1 (fatal instead once fail_stop is set) when a
 * statement failed or a row does not hold what sluiced writes (damage
 * inside a value, which quick_check does not see), with the reason in
 * ctl_store_errmsg; or -1 when the callback returned -1, which stops the
 * walk (the callback leaves its reason in s->errbuf). */

/* A node row. The strings are valid during the call only. 0 or -1. */
typedef int (*ctl_store_node_fn)(void *ud, const char *name, const char *spec_json,
                                 const char *addr, int64_t last_seen_us);
/* A job row as a new record (id, spec, state, times, reason, exit,
 * requeue_wait, requeues; tenant -1, no tasks), which the callee owns
 * (also when it returns -1); tenant is the stored tenant name, valid
 * during the call only. 0 or -1. */
typedef int (*ctl_store_job_fn)(void *ud, ctl_job_t *j, const char *tenant);
/* A task row: t has node -1; node is the stored node name. 0 or -1. */
typedef int (*ctl_store_task_fn)(void *ud, ctl_job_t *j, int32_t idx, const char *node,
                                 const ctl_task_t *t);

/* Every node row, oldest first. */
int ctl_store_nodes_read(ctl_store_t *s, ctl_store_node_fn fn, void *ud);
/* The highest job id ever stored (0 when none). */
int ctl_store_max_id(ctl_store_t *s, uint64_t *out);
/* Jobs pending or running, or finished with tasks that had not reported
 * their end, by id (partial indexes: proportional to what is read). */
int ctl_store_jobs_active(ctl_store_t *s, ctl_store_job_fn fn, void *ud);
/* Finished jobs that ended at or after since_us, newest first, at most
 * limit of them. */
int ctl_store_jobs_finished(ctl_store_t *s, int64_t since_us, int64_t limit, ctl_store_job_fn fn,
                            void *ud);
/* The job row with this id as a new record (the caller frees it) and its
 * tenant's name in tenant; NULL if there is none, or if its row is
 * unreadable (logged). A failed statement follows fail_stop. */
ctl_job_t *ctl_store_job_get(ctl_store_t *s, uint64_t id, char *tenant, size_t tenantlen);
/* A job's efficiency (eff.c) into its job_eff row, replacing what was
 * there; unknown values (NAN, -1) as NULL. A lazy write: committed with
 * the next urgent write or after CTL_LAZY_COMMIT_MS. */
void ctl_store_eff_put(ctl_store_t *s, uint64_t job, const ctl_eff_t *e);
/* Reads the job_eff row of job into *e (no_nvml_node -1): 1, 0 when there
 * is none, or -1 (fatal once fail_stop is set). */
int ctl_store_eff_get(ctl_store_t *s, uint64_t job, ctl_eff_t *e);

/* Every task row of job j, by index. */
int ctl_store_tasks_read(ctl_store_t *s, ctl_job_t *j, ctl_store_task_fn fn, void *ud);
/* The task_mem rows of job j into j->tasks (read after its task rows); a
 * row for a task j does not have is skipped with a warning (the record of
 * a memory end is not worth refusing the database for). */
int ctl_store_task_mem_read(ctl_store_t *s, ctl_job_t *j);

/* ---- backup ---- */

typedef struct ctl_store_backup_stats {
    int64_t pages;         /* database pages copied */
    int64_t steps;         /* sqlite3_backup_step calls */
    int64_t bytes;         /* size of the copy */
    int64_t jobs, active;  /* job rows in the copy; of them pending or running */
} ctl_store_backup_stats_t;

/* Copies the database at src_path into the new file dst_path with SQLite's
 * online backup API, in steps, from one read transaction: a consistent
 * snapshot (every commit before the copy began) taken while sluiced runs
 * and writes in WAL mode, without blocking it. The copy is written beside
 * dst_path, checked with quick_check and renamed into place, so dst_path
 * never names a partial copy. Refuses an existing dst_path. 0 with stats,
 * or -1 with a message in err (nothing left at dst_path). Opens no store:
 * for the `sluiced backup` command. O(database size). */
int ctl_store_backup(const char *src_path, const char *dst_path, ctl_store_backup_stats_t *stats,
                     char *err, size_t errlen);

#endif
