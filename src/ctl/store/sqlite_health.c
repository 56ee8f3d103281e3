/*
 * sqlite_health.c - GPUs fenced for a health fault in SQLite (store.h;
 * the table is created with the others, sqlite.c). A fence is rare (a
 * GPU fails a few times a day on a large cluster), so each write prepares
 * its statement, as sqlite_disruptions.c does.
 */
#include <stdio.h>
#include <string.h>

#include "store/sqlite.h"

static sqlite3_stmt *prep(ctl_store_t *s, const char *sql, const char *what) {
    sqlite3_stmt *st = NULL;
    ctl_sqlite_write_begin(s, true);
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        ctl_sqlite_write_step(s, NULL, SQLITE_ERROR, what);
    return st;
}

void ctl_store_gpu_fence_put(ctl_store_t *s, const char *node, int32_t gpu, const char *reason,
                             int64_t since_us, int32_t faults, bool pinned) {
    sqlite3_stmt *st = prep(s, "INSERT OR REPLACE INTO gpu_fence(node, gpu, reason, since_us, faults,"
                               " pinned) VALUES(?1, ?2, ?3, ?4, ?5, ?6)", "gpu fence put");
    int b = sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
    b |= sqlite3_bind_int(st, 2, gpu);
    b |= sqlite3_bind_text(st, 3, reason, -1, SQLITE_STATIC);
    b |= sqlite3_bind_int64(st, 4, since_us);
    b |= sqlite3_bind_int(st, 5, faults);
    b |= sqlite3_bind_int(st, 6, pinned);
    ctl_sqlite_write_step(s, st, b, "gpu fence put");
    sqlite3_finalize(st);
}

void ctl_store_gpu_fence_delete(ctl_store_t *s, const char *node, int32_t gpu) {
    sqlite3_stmt *st = prep(s, "DELETE FROM gpu_fence WHERE node = ?1 AND gpu = ?2", "gpu fence delete");
    int b = sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
    b |= sqlite3_bind_int(st, 2, gpu);
    ctl_sqlite_write_step(s, st, b, "gpu fence delete");
    sqlite3_finalize(st);
}

int ctl_store_gpu_fences_read(ctl_store_t *s, ctl_store_gpu_fence_fn fn, void *ud) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, "SELECT node, gpu, reason, since_us, faults, pinned FROM gpu_fence"
                                  " ORDER BY node, gpu", -1, &st, NULL) != SQLITE_OK) {
        ctl_sqlite_read_fail(s, "reading fenced GPUs");
        return -1;
    }
    int rc, out = 0;
    while (out == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const unsigned char *node = sqlite3_column_text(st, 0), *reason = sqlite3_column_text(st, 2);
        out = fn(ud, node ? (const char *)node : "", sqlite3_column_int(st, 1),
                 reason ? (const char *)reason : "", sqlite3_column_int64(st, 3),
                 sqlite3_column_int(st, 4), sqlite3_column_int(st, 5) != 0);
    }
    if (out == 0 && rc != SQLITE_DONE) {
        ctl_sqlite_read_fail(s, "reading fenced GPUs");
        out = -1;
    }
    sqlite3_finalize(st);
    return out;
}
