/*
 * repl.h - the store's replication hooks, for a controller whose store of
 * record is elsewhere (HA mode, docs/ha.md).
 *
 * The store stays a local SQLite file; what is replicated is the change a
 * group commit makes. On the leader, every COMMIT hands the transaction's
 * changes (an opaque byte string, store/changes.h's) to the ship
 * callback with the next log index and the log's digest after it, then
 * commits locally with both in the same transaction. The callback may
 * return before the changes are durable on the replicated store (a
 * pipelined commit): the replicated store says when they are
 * (ctl_store_repl_durable), and what they explain leaves only then
 * (store.h, ctl_store_durable). So the local file may hold entries the
 * record never got, when the leader dies or steps down meanwhile: the
 * digest, which chains every entry's changes to the ones before, is what
 * tells at the next start whether the file is a state of the record.
 * A standby applies each change, in index order, to its own copy
 * (ctl_replica_*), checking the chain, so that taking over reads an
 * up-to-date local file.
 *
 * Like store.h, this header names no type of the backend.
 */
#ifndef SLUICE_CTL_STORE_REPL_H
#define SLUICE_CTL_STORE_REPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

/* Hands the changes of log entry index (the last one + 1) to the
 * replicated store; digest is the log's digest after them
 * (ctl_store_repl_chain). 0 when they are taken (durable now or later),
 * or -1 (the store then exits 3 without committing: fail-stop). */
typedef int (*ctl_store_ship_fn)(void *ud, const void *changes, size_t len, uint64_t index,
                                 uint64_t digest);
/* Returns once every entry up to index is durable (having called
 * ctl_store_repl_durable), or does not return (the leader steps down). */
typedef void (*ctl_store_wait_fn)(void *ud, uint64_t index);

/* The log's digest after an entry of changes (n bytes) that follows prev:
 * the first 8 bytes of SHA-256(prev, changes), big-endian. The empty
 * log's digest is 0. Can't fail. O(n). */
uint64_t ctl_store_repl_chain(uint64_t prev, const void *changes, size_t n);

/* True when the SQLite library has the pre-update hook (run time). */
bool ctl_store_repl_supported(void);
/* Turns shipping on for the open store s: from now on every commit that
 * changes a row calls fn first, and ctl_store_commit calls wait before it
 * returns. 0, or -1 with err. The store's log index starts at its
 * file's (ctl_store_repl_index), durable. */
int ctl_store_repl_enable(ctl_store_t *s, ctl_store_ship_fn fn, ctl_store_wait_fn wait, void *ud,
                          char *err, size_t errlen);
/* The log index of the last change committed to the file, and the log's
 * digest there. Can't fail. */
uint64_t ctl_store_repl_index(const ctl_store_t *s);
uint64_t ctl_store_repl_digest(const ctl_store_t *s);
/* The replicated store holds every entry up to index (ignored when it is
 * not beyond what was said before). Can't fail. O(1). */
void ctl_store_repl_durable(ctl_store_t *s, uint64_t index);
/* A consistent copy of the whole database (every commit so far, each
 * durable: it waits for them) as one byte string in *out (free with
 * ctl_store_repl_free) of *len bytes. Commits what is open first. 0 or -1
 * with err. O(database size). */
int ctl_store_repl_serialize(ctl_store_t *s, void **out, size_t *len, char *err, size_t errlen);
void ctl_store_repl_free(void *p);

/* ---- a standby's copy ---- */
typedef struct ctl_replica ctl_replica_t;

/* Opens the database at path, which must exist, for applying changes
 * (synchronous=NORMAL: a lost tail is applied again from the log). *out
 * is NULL on failure: -1 with err. */
int ctl_replica_open(ctl_replica_t **out, const char *path, char *err, size_t errlen);
void ctl_replica_close(ctl_replica_t *r);
/* The log index the file holds, the log's digest there, and whether it
 * was ever synced with a replicated store (a file made by --init alone
 * was not). */
uint64_t ctl_replica_index(const ctl_replica_t *r);
uint64_t ctl_replica_digest(const ctl_replica_t *r);
bool ctl_replica_synced(const ctl_replica_t *r);
/* One log entry as read from the record. */
typedef struct ctl_replica_entry {
    const void *changes;
    size_t len;
    uint64_t index;   /* each the one after the previous (the file's + 1 first) */
    uint64_t digest;  /* the log's digest after it */
} ctl_replica_entry_t;
/* Applies n log entries, in order, in one transaction with the last one's
 * index and digest. 0; -2 with err when the chain does not hold
 * (ctl_store_repl_chain of the digest before an entry and its changes is
 * not its digest: the file is not a state of the record before it); -1
 * with err. On an error the file is unchanged. */
int ctl_replica_apply(ctl_replica_t *r, const ctl_replica_entry_t *e, size_t n, char *err,
                      size_t errlen);
/* Writes the image (a snapshot) to path atomically: a file beside it,
 * fsync, checked, renamed over path; the old file's -wal and -shm
 * removed. 0, or -1 with err (path unchanged). */
int ctl_replica_install(const char *path, const void *img, size_t len, char *err, size_t errlen);

#endif
