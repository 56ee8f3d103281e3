/*
 * sqlite_secrets.c - secrets and config maps in SQLite (store.h; the
 * tables are created with the others, sqlite.c). The values arrive sealed
 * (domain/secrets.c): nothing here sees a plain value. A user's create or
 * delete is a few statements, prepared on use as the reservations'.
 */
#include <stdio.h>
#include <string.h>

#include "store/sqlite.h"

static sqlite3_stmt *prep(ctl_store_t *s, const char *sql, const char *what) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
        ctl_sqlite_write_step(s, NULL, SQLITE_ERROR, what);
    return st;
}

static void del_rows(ctl_store_t *s, const char *table, const char *tenant, const char *name,
                     const char *what) {
    char sql[128];
    snprintf(sql, sizeof sql, "DELETE FROM %s WHERE tenant = ?1 AND name = ?2", table);
    sqlite3_stmt *st = prep(s, sql, what);
    int b = sqlite3_bind_text(st, 1, tenant, -1, SQLITE_STATIC);
    b |= sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
    ctl_sqlite_write_step(s, st, b, what);
    sqlite3_finalize(st);
}

void ctl_store_secret_put(ctl_store_t *s, const ctl_store_secret_t *sec,
                          const ctl_store_secret_value_t *v, size_t n) {
    ctl_sqlite_write_begin(s, true);
    del_rows(s, "secret_values", sec->tenant, sec->name, "secret put");
    sqlite3_stmt *st = prep(s, "INSERT OR REPLACE INTO secrets(tenant, name, type, created_us)"
                               " VALUES(?1, ?2, ?3, ?4)", "secret put");
    int b = sqlite3_bind_text(st, 1, sec->tenant, -1, SQLITE_STATIC);
    b |= sqlite3_bind_text(st, 2, sec->name, -1, SQLITE_STATIC);
    b |= sqlite3_bind_text(st, 3, sec->type, -1, SQLITE_STATIC);
    b |= sqlite3_bind_int64(st, 4, sec->created_us);
    ctl_sqlite_write_step(s, st, b, "secret put");
    sqlite3_finalize(st);
    st = prep(s, "INSERT INTO secret_values(tenant, name, key, size, sealed)"
                 " VALUES(?1, ?2, ?3, ?4, ?5)", "secret value put");
    for (size_t i = 0; i < n; i++) {
        b = sqlite3_bind_text(st, 1, sec->tenant, -1, SQLITE_STATIC);
        b |= sqlite3_bind_text(st, 2, sec->name, -1, SQLITE_STATIC);
        b |= sqlite3_bind_text(st, 3, v[i].key, -1, SQLITE_STATIC);
        b |= sqlite3_bind_int64(st, 4, v[i].size);
        b |= sqlite3_bind_blob(st, 5, v[i].sealed, (int)v[i].sealed_len, SQLITE_STATIC);
        ctl_sqlite_write_step(s, st, b, "secret value put"); /* steps and resets */
    }
    sqlite3_finalize(st);
}

int ctl_store_secret_delete(ctl_store_t *s, const char *tenant, const char *name) {
    ctl_sqlite_write_begin(s, true);
    del_rows(s, "secret_values", tenant, name, "secret delete");
    del_rows(s, "secrets", tenant, name, "secret delete");
    return sqlite3_changes(s->db) > 0;
}

static const char *col_text(sqlite3_stmt *st, int i) {
    const char *v = (const char *)sqlite3_column_text(st, i);
    return v ? v : "";
}

/* Binds tenant (and name, when not NULL) to sql and walks its rows, each
 * through row(st, fn, ud). */
static int walk(ctl_store_t *s, const char *sql, const char *tenant, const char *name,
                int (*row)(sqlite3_stmt *st, void *fn, void *ud), void *fn, void *ud) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK ||
        sqlite3_bind_text(st, 1, tenant, -1, SQLITE_STATIC) != SQLITE_OK ||
        (name && sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC) != SQLITE_OK)) {
        sqlite3_finalize(st);
        return ctl_sqlite_read_fail(s, "reading secrets");
    }
    int rc, out = 0;
    while (out == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW)
        out = row(st, fn, ud);
    if (out == 0 && rc != SQLITE_DONE)
        out = ctl_sqlite_read_fail(s, "reading secrets");
    sqlite3_finalize(st);
    return out;
}

static int secret_row(sqlite3_stmt *st, void *fn, void *ud) {
    ctl_store_secret_t r = {col_text(st, 0), col_text(st, 1), col_text(st, 2),
                            sqlite3_column_int64(st, 3)};
    return ((ctl_store_secret_fn)fn)(ud, &r);
}

static int value_row(sqlite3_stmt *st, void *fn, void *ud) {
    ctl_store_secret_value_t v = {col_text(st, 0), sqlite3_column_int64(st, 1),
                                  sqlite3_column_blob(st, 2),
                                  (size_t)sqlite3_column_bytes(st, 2)};
    return ((ctl_store_secret_value_fn)fn)(ud, &v);
}

int ctl_store_secrets_read(ctl_store_t *s, const char *tenant, const char *name,
                           ctl_store_secret_fn fn, void *ud) {
    return walk(s, name ? "SELECT tenant, name, type, created_us FROM secrets"
                          " WHERE tenant = ?1 AND name = ?2"
                        : "SELECT tenant, name, type, created_us FROM secrets"
                          " WHERE tenant = ?1 ORDER BY name",
                tenant, name, secret_row, (void *)fn, ud);
}

int ctl_store_secret_values_read(ctl_store_t *s, const char *tenant, const char *name,
                                 ctl_store_secret_value_fn fn, void *ud) {
    return walk(s, "SELECT key, size, sealed FROM secret_values WHERE tenant = ?1 AND name = ?2"
                   " ORDER BY key",
                tenant, name, value_row, (void *)fn, ud);
}
