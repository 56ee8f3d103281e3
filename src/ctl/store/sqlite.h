/*
 * sqlite.h - the SQLite backend of the store (store.h), shared by its
 * files and by nothing else: sqlite.c (the connection, transactions,
 * backups; jobs, tasks, nodes, scheduling delays and efficiency),
 * sqlite_schema.c (the tables and their upgrades), sqlite_arrays.c (job
 * arrays), sqlite_disruptions.c (drains, preemptions,
 * sizes) and sqlite_reader.c (the read-only reads of the report and the
 * history).
 */
#ifndef SLUICE_CTL_STORE_SQLITE_H
#define SLUICE_CTL_STORE_SQLITE_H

#include <sqlite3.h>

#include "store/store.h"

struct event;

struct ctl_store {
    sqlite3 *db;
    char *path;
    ctl_loop_t *loop;      /* kicked when a write must commit this iteration */
    bool in_txn;
    bool txn_urgent;       /* the open transaction must commit this iteration */
    struct event *lazy_ev; /* commits a transaction holding only lazy writes */
    sqlite3_stmt *st[16];
    uint64_t commits;      /* for /metrics */
    uint64_t commit_us;
    bool fail_stop;        /* a failed read exits 3, as a failed write does */
    char errbuf[320];      /* why the last read failed, when SQLite did not say */
    char instance[40];     /* the cluster instance id (meta 'instance') */
    /* HA mode (sqlite_repl.c, store/repl.h): run before each COMMIT; -1
     * is fatal. NULL: a single controller. */
    int (*repl_commit)(ctl_store_t *s);
    /* After a COMMIT that must be durable as it returns (ctl_store_commit):
     * waits until the replicated store holds every commit so far. */
    void (*repl_wait)(ctl_store_t *s);
    void (*repl_fini)(ctl_store_t *s); /* before the connection closes */
    /* ctl_store_seq and ctl_store_durable: the count of commits outside HA
     * mode; the log index of the last commit and of the last one in the
     * replicated store in HA mode (sqlite_repl.c keeps them). */
    uint64_t seq, durable;
    struct ctl_store_repl *repl;
    /* HA mode: the open transaction's row changes (changes.h); what SQLite
     * undoes (a savepoint rolled back, a ROLLBACK, a failed insert) is
     * rewound here too. NULL: a single controller. */
    struct ctl_changes *changes;
};

struct ctl_store_reader {
    sqlite3 *db;
};

/* What to do about a damaged file, after the message saying why. */
#define CTL_SQLITE_RESTORE_HINT                                                             \
    "; sluiced will not load it. Restore the last copy made with `sluiced backup` (copy it " \
    "over %s while sluiced is stopped), or move the file away and start with --init for an " \
    "empty cluster"

/* The tables (sqlite_schema.c): CREATE ... IF NOT EXISTS, run at every open. */
extern const char *const ctl_sqlite_schema;
/* What a database written by an older sluiced gains at its first open,
 * after ctl_sqlite_schema (sqlite_schema.c). 0, or -1 with the message in
 * err. */
int ctl_sqlite_upgrade(ctl_store_t *s, char *err, size_t errlen);

/* Opens the iteration's transaction as an urgent write. */
void ctl_sqlite_begin(ctl_store_t *s);
/* Ends the process for a failed write (exit 3), as every write does. */
void ctl_sqlite_fatal(ctl_store_t *s, const char *what) __attribute__((noreturn));
/* A failed read: -1 with the reason in the store's message, or fatal once
 * fail_stop is set. */
int ctl_sqlite_read_fail(ctl_store_t *s, const char *what);
/* Joins the iteration's transaction: urgent, it commits this iteration;
 * else with the next urgent write or after CTL_LAZY_COMMIT_MS. */
void ctl_sqlite_write_begin(ctl_store_t *s, bool urgent);
/* Steps and resets the write statement st whose binds gave bound; anything
 * but SQLITE_DONE is fatal (exit 3), as for the store's own writes. */
void ctl_sqlite_write_step(ctl_store_t *s, sqlite3_stmt *st, int bound, const char *what);
/* A column's integer, or dflt where it is NULL. */
int64_t ctl_sqlite_col_i64(sqlite3_stmt *st, int i, int64_t dflt);

#endif
