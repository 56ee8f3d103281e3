/*
 * sqlite_epoch.c - the controller's epoch counter (store.h,
 * ctl_store_epoch_bump): a row of the meta table, 'epoch', bumped in its
 * own committed statement at every start, so that a restarted controller
 * (or a second one started on the same database while the first is
 * stopped) sends a higher epoch than every run before it, and agents
 * refuse the older one (docs/protocol.md, "Controllers and epochs").
 */
#include <stdio.h>

#include "store/sqlite.h"
#include "store/store.h"

int ctl_store_epoch_bump(ctl_store_t *s, uint64_t *epoch, char *err, size_t errlen) {
    sqlite3_stmt *st = NULL;
    int rc = -1;
    *epoch = 0;
    if (s->in_txn) {
        snprintf(err, errlen, "%s: the epoch is bumped before any other write", s->path);
        return -1;
    }
    /* One statement outside any transaction: autocommit, durable
     * (synchronous=FULL) once it has run to its end (a RETURNING row
     * comes before the commit). */
    if (sqlite3_prepare_v2(s->db, "INSERT INTO meta(key, value) VALUES('epoch', '1') ON CONFLICT(key)"
                           " DO UPDATE SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)"
                           " RETURNING CAST(value AS INTEGER)", -1, &st, NULL) != SQLITE_OK ||
        sqlite3_step(st) != SQLITE_ROW)
        goto out;
    sqlite3_int64 v = sqlite3_column_int64(st, 0);
    if (sqlite3_step(st) != SQLITE_DONE)
        goto out;
    if (v < 1) {
        snprintf(err, errlen, "%s: the epoch in its meta table (%lld) is not one sluiced writes",
                 s->path, (long long)v);
        sqlite3_finalize(st);
        return -1;
    }
    *epoch = (uint64_t)v;
    rc = 0;
out:
    if (rc != 0) snprintf(err, errlen, "%s: cannot bump the epoch: %s", s->path, sqlite3_errmsg(s->db));
    sqlite3_finalize(st);
    return rc;
}
