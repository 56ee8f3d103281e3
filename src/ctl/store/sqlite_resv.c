/*
 * sqlite_resv.c - advance reservations in SQLite (store.h; the table is
 * created with the others, sqlite.c). A reservation is written when an
 * operator creates it and deleted when it is deleted or its window ends:
 * a few statements a day, so each is prepared on use, as the drains'.
 */
#include <stdio.h>
#include <string.h>

#include "store/sqlite.h"

void ctl_store_resv_put(ctl_store_t *s, const ctl_store_resv_t *r) {
    sqlite3_stmt *st = NULL;
    ctl_sqlite_write_begin(s, true);
    if (sqlite3_prepare_v2(s->db, "INSERT OR REPLACE INTO reservations(name, start_us, end_us,"
                                  " nodes, tenants, created_us) VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
                           -1, &st, NULL) != SQLITE_OK)
        ctl_sqlite_write_step(s, NULL, SQLITE_ERROR, "reservation put");
    int b = sqlite3_bind_text(st, 1, r->name, -1, SQLITE_STATIC);
    b |= sqlite3_bind_int64(st, 2, r->start_us);
    b |= sqlite3_bind_int64(st, 3, r->end_us);
    b |= sqlite3_bind_text(st, 4, r->nodes, -1, SQLITE_STATIC);
    b |= sqlite3_bind_text(st, 5, r->tenants, -1, SQLITE_STATIC);
    b |= sqlite3_bind_int64(st, 6, r->created_us);
    ctl_sqlite_write_step(s, st, b, "reservation put");
    sqlite3_finalize(st);
}

void ctl_store_resv_delete(ctl_store_t *s, const char *name) {
    sqlite3_stmt *st = NULL;
    ctl_sqlite_write_begin(s, true);
    if (sqlite3_prepare_v2(s->db, "DELETE FROM reservations WHERE name = ?1", -1, &st, NULL) !=
        SQLITE_OK)
        ctl_sqlite_write_step(s, NULL, SQLITE_ERROR, "reservation delete");
    ctl_sqlite_write_step(s, st, sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC),
                          "reservation delete");
    sqlite3_finalize(st);
}

static const char *col_text(sqlite3_stmt *st, int i) {
    const char *v = (const char *)sqlite3_column_text(st, i);
    return v ? v : "";
}

int ctl_store_resvs_read(ctl_store_t *s, ctl_store_resv_fn fn, void *ud) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, "SELECT name, start_us, end_us, nodes, tenants, created_us"
                                  " FROM reservations ORDER BY rowid", -1, &st, NULL) != SQLITE_OK) {
        ctl_sqlite_read_fail(s, "reading reservations");
        return -1;
    }
    int rc, out = 0;
    while (out == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        ctl_store_resv_t r = {col_text(st, 0), sqlite3_column_int64(st, 1),
                              sqlite3_column_int64(st, 2), col_text(st, 3), col_text(st, 4),
                              sqlite3_column_int64(st, 5)};
        out = fn(ud, &r);
    }
    if (out == 0 && rc != SQLITE_DONE) {
        ctl_sqlite_read_fail(s, "reading reservations");
        out = -1;
    }
    sqlite3_finalize(st);
    return out;
}
