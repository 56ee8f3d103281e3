/*
 * store.h - sluiced's durable state: the store's one interface.
 *
 * The store knows tables, rows and transactions. It does not know the
 * scheduler, the cluster or a job's lifecycle: the domain passes names
 * (tenant, node) where a row holds them, and reading back hands rows to the
 * caller (domain/recover.c), which rebuilds the core and the jobs. Every
 * table is here: jobs, tasks, nodes, task memory ends, scheduling delays,
 * efficiency, job arrays, node drains, preemptions and elastic sizes, and
 * the read-only reads of `sluice report` and GET /v1/history.
 *
 * This header names no type of the backend: ctl_store_t and
 * ctl_store_reader_t are opaque, so a second backend (a replicated store)
 * implements these functions without a change to the domain, the views or
 * main.c. The one backend today is SQLite (store/sqlite*.c, WAL journal,
 * synchronous=FULL).
 *
 * Transactions. Every write joins the loop iteration's open transaction;
 * the COMMIT hook (ctl_store_flush, run by the loop after the scheduling
 * cycle) commits it once (group commit). A write is urgent (it commits in
 * this iteration) unless it says it is lazy (committed with the next
 * urgent write or after CTL_LAZY_COMMIT_MS: its loss in a crash is
 * harmless). A failed write or COMMIT is fatal (fail-stop: the process
 * exits with status 3 and a restart recovers from the store, which is the
 * truth), except for ctl_store_job_insert and ctl_store_array_insert,
 * whose failure the submitter answers. Reads fail back to the caller while
 * sluiced starts (recover.c stops the load and sluiced exits 2) and are
 * fatal like writes once ctl_store_set_fail_stop was called.
 */
#ifndef SLUICE_CTL_STORE_H
#define SLUICE_CTL_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/loop.h"
#include "base/model.h"

#define CTL_LAZY_COMMIT_MS 100

typedef struct ctl_store ctl_store_t;

/* ---- opening, transactions, errors ---- */

/* Opens the store at path into *out, checking it first (SQLite: PRAGMA
 * quick_check, O(database size)) and creating missing tables. A missing
 * or empty (0-byte) file is created only when init is true. 0, or -1
 * with "path: message" in err saying what to do: for a damaged file,
 * restore a backup (the file is left as it was); for a missing or empty
 * one, --init. *out is set either way; close it anyway. loop is kicked
 * when a write must commit this iteration. */
int ctl_store_open(ctl_store_t **out, ctl_loop_t *loop, const char *path, bool init, char *err,
                   size_t errlen);
/* Commits what is open, closes and frees; accepts NULL. */
void ctl_store_close(ctl_store_t *s);
/* The cluster instance id of this database: 16 random lower-case hex
 * digits made when the database was created, or at its first open by a
 * sluiced that knows instances, and kept in it (a backup keeps it; a
 * database made anew with --init gets a new one). Agents put it in the
 * names of their tasks' files and cgroups (docs/protocol.md). Valid while
 * the store is open. Can't fail. */
const char *ctl_store_instance(const ctl_store_t *s);
/* Bumps the database's epoch counter by one and sets *epoch to the new
 * value (1 at the first start), durably before it returns: a controller
 * calls it once at every start, so that each run has a higher epoch than
 * every run before it on this database (docs/protocol.md, "Controllers
 * and epochs"). Must be called while no transaction is open (recover.c,
 * once start-up's load has committed). 0, or -1 with "path: message" in err. */
int ctl_store_epoch_bump(ctl_store_t *s, uint64_t *epoch, char *err, size_t errlen);
/* Why the last call failed: the store's own message for a bad row or a
 * failed read, else the backend's (valid until the next call). */
const char *ctl_store_errmsg(ctl_store_t *s);
/* Sets the store's message (what ctl_store_errmsg returns next): for a
 * read callback that refuses a row, saying why. */
void ctl_store_set_error(ctl_store_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* From now on a failed read exits 3, as a failed write does (set once
 * start-up has loaded the state). Can't fail. */
void ctl_store_set_fail_stop(ctl_store_t *s);
/* Rolls the open transaction back, if any: for a start-up that failed
 * half-way, so that a refused load leaves the file as it was. Can't fail
 * (a failed ROLLBACK is logged; SQLite then undoes it at the next open). */
void ctl_store_discard(ctl_store_t *s);
/* Commits the open transaction, if any, and returns once every commit so
 * far is durable (in HA mode: in the replicated store too, repl.h). 0 (a
 * failure exits). */
int ctl_store_commit(ctl_store_t *s);
/* The loop's COMMIT hook: commits when a write asked for it (ud is the
 * store). In HA mode the commit's log entry may still be on its way to
 * the replicated store when it returns: what it explains waits for
 * ctl_store_durable to reach ctl_store_seq. Returns false (no work left). */
bool ctl_store_flush(void *ud);
/* The sequence number of the last local commit that changed something,
 * and of the last one that is durable; outputs (replies, launches, events)
 * made before a flush are tagged with the seq after it and leave once
 * durable reaches that tag. Outside HA mode a COMMIT is durable as it
 * returns (synchronous=FULL): both are the count of commits. Can't fail. */
uint64_t ctl_store_seq(const ctl_store_t *s);
uint64_t ctl_store_durable(const ctl_store_t *s);

/* Commits so far and the time they took, for /metrics. Can't fail. */
typedef struct ctl_store_stats {
    uint64_t commits;
    uint64_t commit_us;
} ctl_store_stats_t;
void ctl_store_stats(const ctl_store_t *s, ctl_store_stats_t *out);

/* ---- writes (each joins the iteration's transaction) ---- */

/* Inserts j's row (tenant is its tenant's name). 0, or SL_EIO when SQLite
 * refused the row (logged; the transaction stays open and usable, or the
 * process exits if SQLite rolled it back). */
int ctl_store_job_insert(ctl_store_t *s, const ctl_job_t *j, const char *tenant);
void ctl_store_job_update(ctl_store_t *s, const ctl_job_t *j);
/* Task i of j, placed on the node called node (with its attempt: the
 * column a database from before attempts gains at its first open). */
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

/* ---- reads ----
 * Each returns 0, or -1 (fatal instead once fail_stop is set) when a
 * statement failed or a row does not hold what sluiced writes (damage
 * inside a value, which quick_check does not see), with the reason in
 * ctl_store_errmsg; or -1 when the callback returned -1, which stops the
 * walk (the callback leaves its reason with ctl_store_set_error). */

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
/* Jobs not finished (pending or running, and any row whose state is not
 * one sluiced writes, which fails the read: -1 naming the job and the
 * state), or finished with tasks that had not reported their end, by id
 * (partial indexes: proportional to what is read). */
int ctl_store_jobs_active(ctl_store_t *s, ctl_store_job_fn fn, void *ud);
/* Finished jobs that ended at or after since_us, newest first, at most
 * limit of them. */
int ctl_store_jobs_finished(ctl_store_t *s, int64_t since_us, int64_t limit, ctl_store_job_fn fn,
                            void *ud);
/* The job row with this id as a new record (the caller frees it) and its
 * tenant's name in tenant; NULL if there is none, or if its row is
 * unreadable (logged). A failed statement follows fail_stop. */
ctl_job_t *ctl_store_job_get(ctl_store_t *s, uint64_t id, char *tenant, size_t tenantlen);
/* A job's efficiency (domain/eff.c) into its job_eff row, replacing what was
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

/* ---- job arrays ----
 * An array of n elements is one row of job_arrays(id, n, text, done) and
 * n ordinary job rows with the ids id..id+n-1, all written in one nested
 * transaction of the iteration's, so that an array is on disk whole or
 * not at all. Dependencies need no table: a job's spec keeps its
 * dependency text, and the states of the jobs it names are durable, so
 * recovery evaluates it again and finds what was found before. */

/* Inserts the array row (id jobs[0]->id, n, text) and the rows of its n
 * elements jobs[0..n), which share one spec (jobs[0]->spec) and tenant.
 * 0, or SL_EIO when the backend refused a row (logged; nothing of the
 * array is left in the transaction). O(n). */
int ctl_store_array_insert(ctl_store_t *s, ctl_job_t *const *jobs, size_t n, const char *text,
                           const char *tenant);
/* Marks the array done (every element ended). */
void ctl_store_array_done(ctl_store_t *s, uint64_t id);

/* An array row. */
typedef struct ctl_store_array {
    uint64_t id;
    int32_t n;
    bool done;
    char text[260];
} ctl_store_array_t;

/* The array whose elements include job id (the row with the largest id at
 * most id, if id is below its end): 1 with *out, 0 when none, -1 on a
 * failed read. O(log arrays). */
int ctl_store_array_of(ctl_store_t *s, uint64_t id, ctl_store_array_t *out);
/* Every array that is not done, or that has elements at or above min_id,
 * by id. fn returns 0, or -1 to stop (its reason set with
 * ctl_store_set_error). */
typedef int (*ctl_store_array_fn)(void *ud, const ctl_store_array_t *a);
int ctl_store_arrays_read(ctl_store_t *s, uint64_t min_id, ctl_store_array_fn fn, void *ud);
/* The elements of array id (n of them) that started (or ended), ended,
 * and ended without succeeding, from their rows. 0 or -1. O(n). */
int ctl_store_array_counts(ctl_store_t *s, uint64_t id, int32_t n, int32_t *begun,
                           int32_t *ended, int32_t *notok);

/* ---- node drains, preemptions and elastic sizes ----
 *   node_drain(name, reason, deadline_us, since_us, drained_us)
 *         a drain outlives a restart of sluiced (domain/drain.c)
 *   preemptions(job, at_us, kind, cause, by_job, by_tenant, reason, tasks,
 *               gpu_seconds)   every preemption, shrink or drain stop
 *   job_size(job, at_us, size, why)   an elastic job's size changes
 * These are rare events (an operator's drain, a preemption), not the
 * per-job path. */

/* A node's drain row (replacing any): deadline_us and drained_us -1 for
 * none. Urgent: committed this iteration. */
void ctl_store_drain_put(ctl_store_t *s, const char *name, const ctl_node_t *n);
/* Removes the node's drain row (resume). Urgent. */
void ctl_store_drain_delete(ctl_store_t *s, const char *name);
/* A drain row; name valid during the call. 0, or -1 to stop. */
typedef int (*ctl_store_drain_fn)(void *ud, const char *name, const char *reason,
                                  int64_t deadline_us, int64_t since_us, int64_t drained_us);
/* Every drain row. 0 or -1 (ctl_store_errmsg). */
int ctl_store_drains_read(ctl_store_t *s, ctl_store_drain_fn fn, void *ud);

/* ---- GPUs fenced for a health fault (domain/health.c) ----
 *   gpu_fence(node, gpu, reason, since_us, faults, pinned)
 * A fence outlives a restart of sluiced: the GPU stays out of placement
 * until it is resumed (or a passing check clears it). */

/* The fence row of GPU gpu of node (replacing any): faults within the
 * flap window, pinned (only an operator returns it). Urgent. */
void ctl_store_gpu_fence_put(ctl_store_t *s, const char *node, int32_t gpu, const char *reason,
                             int64_t since_us, int32_t faults, bool pinned);
/* Removes it. Urgent. */
void ctl_store_gpu_fence_delete(ctl_store_t *s, const char *node, int32_t gpu);
/* A fence row; strings valid during the call. 0, or -1 to stop. */
typedef int (*ctl_store_gpu_fence_fn)(void *ud, const char *node, int32_t gpu, const char *reason,
                                      int64_t since_us, int32_t faults, bool pinned);
/* Every fence row. 0 or -1 (ctl_store_errmsg). */
int ctl_store_gpu_fences_read(ctl_store_t *s, ctl_store_gpu_fence_fn fn, void *ud);

/* Records one preemption of job. Urgent. */
void ctl_store_preempt_add(ctl_store_t *s, uint64_t job, const ctl_preempt_t *p);
/* Records an elastic job's size change. Urgent: it commits with the task
 * rows the change adds (or, for a shrink, before the rows it will trim), so
 * that after a crash a last size below the job's task rows means a shrink
 * that had not finished (domain/recover.c). */
void ctl_store_size_add(ctl_store_t *s, uint64_t job, const ctl_size_change_t *z);
/* Job's latest size change into *z: 1, 0 if it has none, or -1
 * (ctl_store_errmsg). */
int ctl_store_size_last(ctl_store_t *s, uint64_t job, ctl_size_change_t *z);
/* Deletes job's task rows (and task memory rows) of index n and above:
 * the ranks an elastic shrink released. Urgent. */
void ctl_store_tasks_trim(ctl_store_t *s, uint64_t job, int32_t n);
/* Reads job's preemptions and size changes, oldest first, into x (whose
 * arrays the caller frees; loaded set). 0 or -1. */
int ctl_store_jobx_read(ctl_store_t *s, uint64_t job, ctl_jobx_t *x);

/* ---- attempts of retried jobs ----
 *   job_attempts(job, attempt, start_us, end_us, exit_code, reason,
 *                retry_at_us)   one row per failed attempt that was retried
 * A table of its own, so that a database of an earlier version gains it at
 * its first open and needs no other migration. */

/* Records failed attempt a of job. Urgent. */
void ctl_store_attempt_add(ctl_store_t *s, uint64_t job, const ctl_attempt_t *a);
/* For each job with attempts that is pending or running, or has live
 * tasks: their count and the last one's retry_at_us (-1: recorded before
 * its back-off was known). fn returns 0, or -1 to stop. 0 or -1
 * (ctl_store_errmsg). O(attempts of active jobs). */
typedef int (*ctl_store_attempts_fn)(void *ud, uint64_t job, int32_t n, int64_t retry_at_us);
int ctl_store_attempts_active(ctl_store_t *s, ctl_store_attempts_fn fn, void *ud);
/* Job's attempts, oldest first, into a new array *out (the caller frees it
 * with sl_free) of *n. 0 or -1. */
int ctl_store_attempts_read(ctl_store_t *s, uint64_t job, ctl_attempt_t **out, size_t *n);

/* ---- advance reservations ----
 *   reservations(name, start_us, end_us, nodes, tenants, created_us)
 * nodes and tenants are names, comma-separated (domain/reservations.c).
 * Rare writes (an operator's create or delete, a window's end). */
typedef struct ctl_store_resv {
    const char *name;
    int64_t start_us, end_us;
    const char *nodes;     /* "a,b,c" */
    const char *tenants;   /* "x,y" */
    int64_t created_us;
} ctl_store_resv_t;

/* Inserts (or replaces) the reservation's row. Urgent. */
void ctl_store_resv_put(ctl_store_t *s, const ctl_store_resv_t *r);
/* Deletes the reservation's row. Urgent. */
void ctl_store_resv_delete(ctl_store_t *s, const char *name);
/* A row; its strings are valid during the call. 0, or -1 to stop. */
typedef int (*ctl_store_resv_fn)(void *ud, const ctl_store_resv_t *r);
/* Every reservation row, oldest first. 0 or -1 (ctl_store_errmsg). */
int ctl_store_resvs_read(ctl_store_t *s, ctl_store_resv_fn fn, void *ud);

/* ---- secrets and config maps ----
 *   secrets(tenant, name, type, created_us)
 *   secret_values(tenant, name, key, size, sealed)
 * A tenant's secret or config map (domain/secrets.c): its keys' values
 * sealed by the domain (src/common/seal.h) before they reach the store,
 * which holds and hands back only the sealed bytes. Rare writes. */
typedef struct ctl_store_secret {
    const char *tenant, *name;
    const char *type;          /* "secret" or "config_map" */
    int64_t created_us;
} ctl_store_secret_t;
typedef struct ctl_store_secret_value {
    const char *key;
    int64_t size;              /* the plain value's bytes */
    const void *sealed;        /* sealed_len bytes */
    size_t sealed_len;
} ctl_store_secret_value_t;

/* Inserts the secret's row and its n values (a row of the same tenant and
 * name is replaced with its values). Urgent. */
void ctl_store_secret_put(ctl_store_t *s, const ctl_store_secret_t *sec,
                          const ctl_store_secret_value_t *v, size_t n);
/* Deletes tenant's secret name and its values. Urgent. 1 when it was
 * there, else 0. */
int ctl_store_secret_delete(ctl_store_t *s, const char *tenant, const char *name);
/* Rows; strings and bytes valid during the call. 0, or -1 to stop. */
typedef int (*ctl_store_secret_fn)(void *ud, const ctl_store_secret_t *sec);
typedef int (*ctl_store_secret_value_fn)(void *ud, const ctl_store_secret_value_t *v);
/* tenant's secrets by name (only name's when name is not NULL). 0, -1 (a
 * failed read, ctl_store_errmsg), or what fn stopped with. O(its rows). */
int ctl_store_secrets_read(ctl_store_t *s, const char *tenant, const char *name,
                           ctl_store_secret_fn fn, void *ud);
/* The values of tenant's secret name by key. As ctl_store_secrets_read. */
int ctl_store_secret_values_read(ctl_store_t *s, const char *tenant, const char *name,
                                 ctl_store_secret_value_fn fn, void *ud);

/* ---- the read-only reader: `sluice report` and GET /v1/history ----
 * A reader is a connection of its own (read-only; it sees every commit
 * made before each read began and never blocks the daemon's writes),
 * opened and used by one thread: the report and the history run beside
 * the event loop (views/report.c, views/history.c). Nothing here
 * allocates with sl_x*, whose counter belongs to the loop's thread. */
typedef struct ctl_store_reader ctl_store_reader_t;

/* Opens the store at path for reading into *out. 0, or -1 with
 * "path: message" in err (*out is then NULL). */
int ctl_store_reader_open(const char *path, ctl_store_reader_t **out, char *err, size_t errlen);
/* Closes and frees; accepts NULL. */
void ctl_store_reader_close(ctl_store_reader_t *r);

typedef struct ctl_report_row {
    const char *tenant;        /* the stored tenant name; valid during the call */
    ctl_job_state_t state;
    int64_t submit_us;
    int64_t start_us;          /* -1: never started (cancelled while pending) */
    int64_t end_us;            /* -1: still running */
    int64_t gpu_milli;         /* GPUs its tasks held, summed (1000 = one GPU) */
    bool has_sched;            /* a scheduling delay was recorded */
    int64_t sched_delay_us;
    bool has_eff;              /* an efficiency summary with samples > 0 exists */
    double gpu_util_mean;      /* 0..1, mean over the job's GPUs and samples */
    int64_t gpu_mem_peak;      /* bytes, the peak on one of its GPUs */
    int64_t gpu_mem_total;     /* bytes, what one of its GPUs has */
} ctl_report_row_t;

/* A row; 0 to go on, -1 to stop (the reason in err). */
typedef int (*ctl_report_row_fn)(void *ud, const ctl_report_row_t *r);

/*
 * Hands fn every job that ended in [since_us, until_us] and every job
 * running now that started before until_us, in no stated order. Two range
 * reads (jobs by end time, active jobs), each job's tasks, scheduling
 * delay and efficiency by its id: O(jobs in the window * log(jobs)),
 * whatever the history's length. 0, or -1 with the reason in err (a failed
 * read, a row sluiced did not write, or fn's -1).
 */
int ctl_store_report_rows(ctl_store_reader_t *r, int64_t since_us, int64_t until_us,
                          ctl_report_row_fn fn, void *ud, char *err, size_t errlen);

/* A finished job as GET /v1/history shows it; the strings are valid during
 * the call only (NULL where the row has none). */
typedef struct ctl_history_row {
    uint64_t id;
    const char *name, *tenant, *state, *reason, *pool;
    int64_t submit_us, start_us, end_us;
    bool has_exit;
    int64_t exit_code;
    int64_t gpu_milli;     /* GPUs its tasks held, summed */
    int64_t tasks;         /* tasks it ran (task rows), or its spec's count */
    int64_t time_limit;    /* seconds, 0: none */
} ctl_history_row_t;

/* One page's walk: jobs that ended at or before until_us, after
 * (after_end_us, after_id) in (end time, id) order. want decides from the
 * cheap columns (name only when need_name) whether a job is a row of the
 * page; take receives each such row and returns true while the page has
 * room. The walk reads at most scan_max jobs. */
typedef struct ctl_history_walk {
    int64_t until_us, after_end_us;
    uint64_t after_id;
    bool need_name;
    int64_t scan_max;
    bool (*want)(void *ud, const char *tenant, const char *state, const char *name);
    bool (*take)(void *ud, const ctl_history_row_t *row);
    void *ud;
    /* Out: jobs read, the (end time, id) of the last one read, and whether
     * a job may follow it in the window. */
    int64_t scanned;
    int64_t last_end_us;
    uint64_t last_id;
    bool more;
} ctl_history_walk_t;

/* Walks one page of the history (w's in-fields), filling w's out-fields.
 * O(rows taken + jobs scanned) reads, whatever the history's length. 0, or
 * -1 with the reason in err. */
int ctl_store_history_walk(ctl_store_reader_t *r, ctl_history_walk_t *w, char *err, size_t errlen);

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
