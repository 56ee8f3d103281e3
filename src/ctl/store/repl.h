/*
 * repl.h - the store's replication hooks, for a controller whose store of
 * record is elsewhere (HA mode, docs/ha.md).
 *
 * The store stays a local SQLite file; what is replicated is the change a
 * group commit makes. On the leader, every COMMIT first hands the
 * transaction's changes (an opaque byte string, SQLite's session
 * changeset) to the ship callback with the next log index; only when the
 * callback says they are durable on the replicated store does the local
 * COMMIT happen, with the index in the same transaction. A standby
 * applies each change, in index order, to its own copy (ctl_replica_*),
 * so that taking over reads an up-to-date local file.
 *
 * Tables without a primary key (preemptions, job_size) are not seen by
 * SQLite's session extension: they stay local to each controller.
 * Like store.h, this header names no type of the backend.
 */
#ifndef SLUICE_CTL_STORE_REPL_H
#define SLUICE_CTL_STORE_REPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

/* Makes changes durable elsewhere before the local COMMIT: index is the
 * log index they take (the last one + 1). 0 when they are, or -1 (the
 * store then exits 3 without committing: fail-stop). */
typedef int (*ctl_store_ship_fn)(void *ud, const void *changes, size_t len, uint64_t index);

/* True when the SQLite library has the session extension (run time). */
bool ctl_store_repl_supported(void);
/* Turns shipping on for the open store s: from now on every commit that
 * changes a row calls fn first. 0, or -1 with err. The store's log index
 * starts at its file's (ctl_store_repl_index). */
int ctl_store_repl_enable(ctl_store_t *s, ctl_store_ship_fn fn, void *ud, char *err,
                          size_t errlen);
/* The log index of the last change committed to the file. Can't fail. */
uint64_t ctl_store_repl_index(const ctl_store_t *s);
/* A consistent copy of the whole database (every commit so far) as one
 * byte string in *out (free with ctl_store_repl_free) of *len bytes.
 * Commits what is open first. 0 or -1 with err. O(database size). */
int ctl_store_repl_serialize(ctl_store_t *s, void **out, size_t *len, char *err, size_t errlen);
void ctl_store_repl_free(void *p);

/* ---- a standby's copy ---- */
typedef struct ctl_replica ctl_replica_t;

/* Opens the database at path, which must exist, for applying changes
 * (synchronous=NORMAL: a lost tail is applied again from the log). *out
 * is NULL on failure: -1 with err. */
int ctl_replica_open(ctl_replica_t **out, const char *path, char *err, size_t errlen);
void ctl_replica_close(ctl_replica_t *r);
/* The log index the file holds, and whether it was ever synced with a
 * replicated store (a file made by --init alone was not). */
uint64_t ctl_replica_index(const ctl_replica_t *r);
bool ctl_replica_synced(const ctl_replica_t *r);
/* Applies the changes of log entry index (the next one) in one
 * transaction with the index. 0, or -1 with err (the file unchanged). */
int ctl_replica_apply(ctl_replica_t *r, const void *changes, size_t len, uint64_t index,
                      char *err, size_t errlen);
/* Reads the log index of a database image (a snapshot) without opening
 * it as a file: 0 with *index (0 when it has none), or -1 with err. */
int ctl_replica_image_index(const void *img, size_t len, uint64_t *index, char *err,
                            size_t errlen);
/* Writes the image (a snapshot) to path atomically: a file beside it,
 * fsync, checked, renamed over path; the old file's -wal and -shm
 * removed. 0, or -1 with err (path unchanged). */
int ctl_replica_install(const char *path, const void *img, size_t len, char *err, size_t errlen);

#endif
