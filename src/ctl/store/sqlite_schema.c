/*
 * sqlite_schema.c - the backend's tables (sqlite.h's ctl_sqlite_schema)
 * and what a database written by an older sluiced gains at its first open
 * (ctl_sqlite_upgrade).
 */
#include <stdbool.h>
#include <stdio.h>

#include "store/sqlite.h"
#include "log.h"
#include "proto_run.h"

#define PREEMPTIONS_SQL(name)                                                               \
    "CREATE TABLE IF NOT EXISTS " name "(id INTEGER PRIMARY KEY, job INTEGER NOT NULL,"       \
    " at_us INTEGER NOT NULL, kind TEXT NOT NULL, cause TEXT, by_job INTEGER, by_tenant TEXT,"  \
    " reason TEXT, tasks INTEGER, gpu_seconds REAL);"
#define PREEMPTIONS_COLS "job, at_us, kind, cause, by_job, by_tenant, reason, tasks, gpu_seconds"
#define JOB_SIZE_SQL(name)                                                                  \
    "CREATE TABLE IF NOT EXISTS " name "(id INTEGER PRIMARY KEY, job INTEGER NOT NULL,"       \
    " at_us INTEGER NOT NULL, size INTEGER NOT NULL, why TEXT);"
#define JOB_SIZE_COLS "job, at_us, size, why"

const char *const ctl_sqlite_schema =
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);"
    "CREATE TABLE IF NOT EXISTS jobs(id INTEGER PRIMARY KEY, tenant TEXT NOT NULL,"
    " spec TEXT NOT NULL, state TEXT NOT NULL, submit_us INTEGER, start_us INTEGER,"
    " end_us INTEGER, reason TEXT, exit_code INTEGER, requeue_wait INTEGER DEFAULT 0,"
    " requeues INTEGER DEFAULT 0);"
    "CREATE TABLE IF NOT EXISTS tasks(job INTEGER NOT NULL, idx INTEGER NOT NULL,"
    " node TEXT NOT NULL, gpu_mask INTEGER, gpu_milli INTEGER, gpu_mem INTEGER,"
    " state TEXT NOT NULL, pid INTEGER, exit_code INTEGER, signal INTEGER,"
    " start_us INTEGER, end_us INTEGER, attempt INTEGER, PRIMARY KEY(job, idx));"
    "CREATE TABLE IF NOT EXISTS nodes(name TEXT PRIMARY KEY, spec TEXT NOT NULL,"
    " addr TEXT, last_seen_us INTEGER);"
    /* Start-up reads only the active jobs and the recently finished ones.
     * jobs_unfinished holds every row whose state is not a final one, so a
     * state sluiced never writes is read (and refused) rather than
     * skipped; jobs_active serves the report's running jobs. */
    "CREATE INDEX IF NOT EXISTS jobs_active ON jobs(id) WHERE state IN ('pending','running');"
    "CREATE INDEX IF NOT EXISTS jobs_unfinished ON jobs(id)"
    " WHERE state NOT IN ('succeeded','failed','cancelled');"
    "CREATE INDEX IF NOT EXISTS jobs_end ON jobs(end_us);"
    "CREATE INDEX IF NOT EXISTS tasks_live ON tasks(job) WHERE state IN ('launching','running');"
    /* The scheduler's own decision time per started job (`sluice report`). */
    "CREATE TABLE IF NOT EXISTS job_sched(job INTEGER PRIMARY KEY, sched_delay_us INTEGER);"
    /* Efficiency (domain/eff.c), its own table so that old databases need no
     * migration; `sluice report` reads it too. */
    "CREATE TABLE IF NOT EXISTS job_eff(job INTEGER PRIMARY KEY, gpu_util_mean REAL, gpu_util_peak REAL, gpu_mem_peak INTEGER, gpu_mem_total INTEGER, cpu_seconds REAL, mem_peak INTEGER, samples INTEGER);"
    "CREATE TABLE IF NOT EXISTS task_mem(job INTEGER NOT NULL, idx INTEGER NOT NULL,"
    " oom_killed INTEGER NOT NULL, mem_peak INTEGER, mem_limit INTEGER, mem_request INTEGER,"
    " PRIMARY KEY(job, idx));"
    /* Job arrays (sqlite_arrays.c): elements are the jobs id..id+n-1. */
    "CREATE TABLE IF NOT EXISTS job_arrays(id INTEGER PRIMARY KEY, n INTEGER NOT NULL,"
    " text TEXT NOT NULL, done INTEGER NOT NULL DEFAULT 0);"
    /* Drains, preemptions and elastic sizes (sqlite_disruptions.c). */
    "CREATE TABLE IF NOT EXISTS node_drain(name TEXT PRIMARY KEY, reason TEXT,"
    " deadline_us INTEGER, since_us INTEGER NOT NULL, drained_us INTEGER);"
    /* Their id (the rowid, in the order they happened) is a declared
     * primary key, so that an HA leader's session replicates them. */
    PREEMPTIONS_SQL("preemptions") "CREATE INDEX IF NOT EXISTS preemptions_job ON preemptions(job);"
    JOB_SIZE_SQL("job_size") "CREATE INDEX IF NOT EXISTS job_size_job ON job_size(job);"
    /* The attempts of retried jobs (sqlite_attempts.c). */
    "CREATE TABLE IF NOT EXISTS job_attempts(job INTEGER NOT NULL, attempt INTEGER NOT NULL,"
    " start_us INTEGER, end_us INTEGER, exit_code INTEGER, reason TEXT, retry_at_us INTEGER,"
    " PRIMARY KEY(job, attempt));"
    /* GPUs fenced for a health fault (sqlite_health.c). */
    "CREATE TABLE IF NOT EXISTS gpu_fence(node TEXT NOT NULL, gpu INTEGER NOT NULL, reason TEXT,"
    " since_us INTEGER NOT NULL, faults INTEGER NOT NULL, pinned INTEGER NOT NULL,"
    " PRIMARY KEY(node, gpu));"
    /* Advance reservations (sqlite_resv.c): nodes and tenants by name,
     * comma-separated. New in this version; an older database gains the
     * table at its first open (CREATE ... IF NOT EXISTS, no migration). */
    "CREATE TABLE IF NOT EXISTS reservations(name TEXT PRIMARY KEY, start_us INTEGER NOT NULL,"
    " end_us INTEGER NOT NULL, nodes TEXT NOT NULL, tenants TEXT NOT NULL,"
    " created_us INTEGER NOT NULL);"
    /* Secrets and config maps (sqlite_secrets.c): values sealed, never plain. */
    "CREATE TABLE IF NOT EXISTS secrets(tenant TEXT NOT NULL, name TEXT NOT NULL, type TEXT NOT NULL,"
    " created_us INTEGER NOT NULL, PRIMARY KEY(tenant, name));"
    "CREATE TABLE IF NOT EXISTS secret_values(tenant TEXT NOT NULL, name TEXT NOT NULL,"
    " key TEXT NOT NULL, size INTEGER NOT NULL, sealed BLOB NOT NULL, PRIMARY KEY(tenant, name, key));"
    "INSERT OR IGNORE INTO meta(key, value) VALUES('schema', '1');";

/* Whether table has a declared primary key. */
static bool has_pk(sqlite3 *db, const char *table) {
    sqlite3_stmt *st = NULL;
    bool pk = false;
    if (sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM pragma_table_info(?1) WHERE pk > 0", -1, &st,
                           NULL) == SQLITE_OK &&
        sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        pk = sqlite3_column_int(st, 0) > 0;
    sqlite3_finalize(st);
    return pk;
}

/* The preemption and size records of a database from before their id was
 * declared: copied, rowids kept (their order), into the tables of today,
 * in one transaction. */
static const char *const pk_upgrade =
    "BEGIN;"
    PREEMPTIONS_SQL("preemptions_v2")
    "INSERT INTO preemptions_v2(id, " PREEMPTIONS_COLS ") SELECT rowid, " PREEMPTIONS_COLS
    " FROM preemptions;"
    "DROP TABLE preemptions; ALTER TABLE preemptions_v2 RENAME TO preemptions;"
    "CREATE INDEX IF NOT EXISTS preemptions_job ON preemptions(job);"
    JOB_SIZE_SQL("job_size_v2")
    "INSERT INTO job_size_v2(id, " JOB_SIZE_COLS ") SELECT rowid, " JOB_SIZE_COLS " FROM job_size;"
    "DROP TABLE job_size; ALTER TABLE job_size_v2 RENAME TO job_size;"
    "CREATE INDEX IF NOT EXISTS job_size_job ON job_size(job);"
    "COMMIT;";

/* What a database from before gains at its first open: the tasks' attempt
 * column, the preemption and size records' primary keys, and a cluster
 * instance id (16 random hex digits, kept once made), read into
 * s->instance. 0, or -1 with the message in err. */
int ctl_sqlite_upgrade(ctl_store_t *s, char *err, size_t errlen) {
    sqlite3_stmt *st = NULL;
    if (!has_pk(s->db, "preemptions") || !has_pk(s->db, "job_size")) {
        char *msg = NULL;
        if (sqlite3_exec(s->db, pk_upgrade, NULL, NULL, &msg) != SQLITE_OK) {
            snprintf(err, errlen, "%s: adding the preemption records' ids: %s", s->path,
                     msg ? msg : sqlite3_errmsg(s->db));
            sqlite3_free(msg);
            sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
            return -1;
        }
        sl_log(SL_LOG_INFO, "store", "%s: the preemption and size records now have ids", s->path);
    }
    int has_attempt = 0;
    if (sqlite3_prepare_v2(s->db, "SELECT COUNT(*) FROM pragma_table_info('tasks')"
                           " WHERE name = 'attempt'", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        has_attempt = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    unsigned char rnd[8];
    char hex[17], sql[128];
    sqlite3_randomness((int)sizeof rnd, rnd);
    for (int i = 0; i < 8; i++)
        snprintf(hex + 2 * i, 3, "%02x", rnd[i]);
    snprintf(sql, sizeof sql, "INSERT OR IGNORE INTO meta(key, value) VALUES('instance', '%s')", hex);
    if ((!has_attempt &&
         sqlite3_exec(s->db, "ALTER TABLE tasks ADD COLUMN attempt INTEGER", NULL, NULL, NULL) !=
             SQLITE_OK) ||
        sqlite3_exec(s->db, sql, NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(s->db, "SELECT value FROM meta WHERE key = 'instance'", -1, &st,
                           NULL) != SQLITE_OK ||
        sqlite3_step(st) != SQLITE_ROW) {
        snprintf(err, errlen, "%s: %s", s->path, sqlite3_errmsg(s->db));
        sqlite3_finalize(st);
        return -1;
    }
    snprintf(s->instance, sizeof s->instance, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    if (!sl_proto_instance_valid(s->instance)) {
        snprintf(err, errlen, "%s: the cluster instance id in its meta table (\"%.40s\") is not "
                 "one sluiced writes" CTL_SQLITE_RESTORE_HINT, s->path, s->instance, s->path);
        return -1;
    }
    return 0;
}
