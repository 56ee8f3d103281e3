/*
 * changes.h - the rows one SQLite transaction writes, as a byte string
 * that another copy of the same schema applies: the changes of HA mode's
 * log entries (repl.h).
 *
 * A recorder sits on a connection's pre-update hook (SQLite built with
 * SQLITE_ENABLE_PREUPDATE_HOOK, as Debian's is) and writes each row
 * change as SQLite makes it: an insert or an update as the row's new
 * values, a delete as its primary key (an update that moves a key is a
 * delete and an insert). What SQLite undoes after the hook ran is the
 * caller's to rewind: a savepoint rolled back, a statement that failed, a
 * ROLLBACK (ctl_changes_mark, ctl_changes_rewind). An applier replays a
 * string on another connection, inside the caller's transaction: a row
 * is written whole (INSERT OR REPLACE), a delete of a missing row does
 * nothing, so a string applied twice leaves what it left once, and a row
 * that differs becomes the recorder's.
 *
 * Why not SQLite's session extension, which does this: a session reads a
 * table's schema (PRAGMA table_info) the first time it sees the table and
 * prepares a SELECT for each table at every changeset, so a session per
 * commit cost about 350,000 instructions a commit of three inserts,
 * against 48,000 for the commit itself (bench/RESULTS.md). Both sides
 * here read each table's shape once and keep their statements.
 *
 * Format: a version byte (1), then records, each: 'I' or 'D'; the table's
 * name (one byte of length, then the bytes); a varint count of values;
 * the values, each a tag (0 NULL, 1 integer as a zigzag varint, 2 real as
 * 8 bytes of IEEE 754 big-endian, 3 text and 4 blob as a varint length and
 * the bytes). 'I' carries every column in the table's order, 'D' the
 * primary key's columns in the key's order. Varints are LEB128.
 */
#ifndef SLUICE_CTL_STORE_CHANGES_H
#define SLUICE_CTL_STORE_CHANGES_H

#include <sqlite3.h>
#include <stddef.h>

typedef struct ctl_changes ctl_changes_t;

/* Records every row change of db's "main" tables but those named in skip
 * (NULL-terminated; NULL: none), from now on, replacing db's pre-update
 * hook. Every recorded table must have a primary key and a rowid. 0 with
 * *out, or -1 with err (*out NULL; db unchanged). O(tables). */
int ctl_changes_attach(ctl_changes_t **out, sqlite3 *db, const char *const *skip, char *err,
                       size_t errlen);
/* Removes the hook and frees c. NULL is a no-op. */
void ctl_changes_detach(ctl_changes_t *c);

/* The length recorded so far, to rewind to (0 when c is NULL). Can't fail. */
size_t ctl_changes_mark(const ctl_changes_t *c);
/* Forgets every change recorded after mark (0: all of them, and a
 * failure recorded). NULL is a no-op. O(1). */
void ctl_changes_rewind(ctl_changes_t *c, size_t mark);

/* The changes recorded since the last rewind to 0, in *len bytes (0:
 * none), owned by c and valid until its next change or rewind. NULL with
 * *err (owned by c, valid until the next rewind to 0) when a change could
 * not be recorded since then (a table without a primary key, or whose
 * shape changed under the hook): the caller must not commit what it
 * cannot ship. O(1). */
const void *ctl_changes_take(const ctl_changes_t *c, size_t *len, const char **err);

typedef struct ctl_changes_applier ctl_changes_applier_t;

/* An applier for db (which must outlive it). Can't fail (aborts when out
 * of memory). */
ctl_changes_applier_t *ctl_changes_applier_create(sqlite3 *db);
/* Finalizes its statements and frees a. NULL is a no-op. */
void ctl_changes_applier_destroy(ctl_changes_applier_t *a);
/* Applies the string p of n bytes (ctl_changes_take's) to the applier's
 * db, inside the caller's transaction. 0, or -1 with err: a malformed
 * string, a table missing here or of another shape, a failed statement;
 * what it applied before stays in the transaction for the caller to roll
 * back. O(n) after a table's first use. */
int ctl_changes_apply(ctl_changes_applier_t *a, const void *p, size_t n, char *err,
                      size_t errlen);

#endif
