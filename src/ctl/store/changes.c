/*
 * changes.c - a transaction's row changes recorded from SQLite's
 * pre-update hook, and applied to another copy (changes.h).
 *
 * Workload: HA mode's leader records every row its group commits write
 * (a few to a few thousand a commit) and its standbys apply them, a batch
 * of log entries per transaction. Both sides look a table up by name
 * among a score of tables (the last one found is tried first: a commit
 * writes runs of rows of one table) and keep what they know of it for
 * the connection's life: its shape from PRAGMA table_info, and on the
 * applying side its two statements, prepared once.
 */
#define SQLITE_ENABLE_PREUPDATE_HOOK 1
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "store/changes.h"

#include "base/buf.h"
#include "sluice/alloc.h"

#define FORMAT_VERSION 1

enum { TAG_NULL, TAG_INT, TAG_REAL, TAG_TEXT, TAG_BLOB };

/* What both sides know of a table. */
typedef struct table {
    char *name;
    size_t namelen;
    int ncol;
    char **cols;           /* their names, in the table's order */
    int npk;
    int *pk;               /* the key's columns, in the key's order */
    bool skip;             /* the recorder's: not recorded */
    sqlite3_stmt *put;     /* the applier's INSERT OR REPLACE of a whole row */
    sqlite3_stmt *del;     /* the applier's DELETE by key */
} table_t;

typedef struct tables {
    table_t *t;
    size_t n;
    size_t last; /* the last one found */
} tables_t;

static void table_free(table_t *t) {
    for (int c = 0; c < t->ncol; c++)
        sl_free(t->cols[c]);
    sl_free(t->cols);
    sl_free(t->name);
    sl_free(t->pk);
    sqlite3_finalize(t->put);
    sqlite3_finalize(t->del);
}

static void tables_fini(tables_t *ts) {
    for (size_t i = 0; i < ts->n; i++)
        table_free(&ts->t[i]);
    sl_free(ts->t);
    *ts = (tables_t){0};
}

static table_t *tables_find(tables_t *ts, const char *name, size_t len) {
    if (ts->last < ts->n && ts->t[ts->last].namelen == len &&
        memcmp(ts->t[ts->last].name, name, len) == 0)
        return &ts->t[ts->last];
    for (size_t i = 0; i < ts->n; i++)
        if (ts->t[i].namelen == len && memcmp(ts->t[i].name, name, len) == 0) {
            ts->last = i;
            return &ts->t[i];
        }
    return NULL;
}

/* Reads the shape of main's table name (len bytes) into a new entry of
 * ts: the new entry, or NULL with err (no such table, no primary key, a
 * name too long for the format). */
static table_t *tables_load(tables_t *ts, sqlite3 *db, const char *name, size_t len, char *err,
                            size_t errlen) {
    if (len == 0 || len > 255) {
        snprintf(err, errlen, "a table name of %zu bytes", len);
        return NULL;
    }
    table_t t = {.name = sl_xmalloc(len + 1), .namelen = len};
    memcpy(t.name, name, len);
    t.name[len] = '\0';
    char *q = sqlite3_mprintf("SELECT name, pk FROM pragma_table_info(%Q, 'main') ORDER BY cid",
                              t.name);
    sqlite3_stmt *st = NULL;
    int cap = 0, *pkpos = NULL; /* each column's place in the key (0: none) */
    int rc = q ? sqlite3_prepare_v2(db, q, -1, &st, NULL) : SQLITE_NOMEM;
    sqlite3_free(q);
    while (st != NULL && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (t.ncol == cap) {
            cap = cap ? 2 * cap : 16;
            pkpos = sl_xrealloc(pkpos, (size_t)cap * sizeof *pkpos);
            t.cols = sl_xrealloc(t.cols, (size_t)cap * sizeof *t.cols);
        }
        t.cols[t.ncol] = sl_xstrdup((const char *)sqlite3_column_text(st, 0));
        pkpos[t.ncol] = sqlite3_column_int(st, 1);
        t.npk += pkpos[t.ncol] > 0;
        t.ncol++;
    }
    sqlite3_finalize(st);
    if (rc == SQLITE_DONE && t.ncol > 0 && t.npk > 0) {
        t.pk = sl_xcalloc((size_t)t.npk, sizeof *t.pk);
        for (int c = 0; c < t.ncol; c++)
            if (pkpos[c] > 0 && pkpos[c] <= t.npk)
                t.pk[pkpos[c] - 1] = c;
    }
    sl_free(pkpos);
    if (t.pk == NULL) {
        snprintf(err, errlen, "table %s: %s", t.name,
                 rc != SQLITE_DONE ? sqlite3_errmsg(db)
                 : t.ncol == 0     ? "no such table"
                                   : "no primary key (its rows could not be told apart)");
        table_free(&t);
        return NULL;
    }
    ts->t = sl_xrealloc(ts->t, (ts->n + 1) * sizeof *ts->t);
    ts->t[ts->n] = t;
    ts->last = ts->n++;
    return &ts->t[ts->last];
}

/* ---- the recorder ---- */

struct ctl_changes {
    sqlite3 *db;
    ctl_buf_t b;
    tables_t ts;     /* the tables not recorded among them, marked skip */
    bool failed;     /* a change not recorded since the last rewind to 0 */
    char why[256];   /* what it was */
};

static void put_varint(ctl_buf_t *b, uint64_t v) {
    ctl_buf_reserve(b, 10);
    while (v >= 0x80) {
        b->p[b->len++] = (char)(v | 0x80);
        v >>= 7;
    }
    b->p[b->len++] = (char)v;
}

static void put_value(ctl_buf_t *b, sqlite3_value *v) {
    switch (sqlite3_value_type(v)) {
    case SQLITE_INTEGER: {
        int64_t i = sqlite3_value_int64(v);
        ctl_buf_putc(b, TAG_INT);
        put_varint(b, ((uint64_t)i << 1) ^ (uint64_t)(i >> 63));
        break;
    }
    case SQLITE_FLOAT: {
        double d = sqlite3_value_double(v);
        uint64_t u;
        memcpy(&u, &d, sizeof u);
        unsigned char be[8];
        for (int i = 0; i < 8; i++)
            be[i] = (unsigned char)(u >> (56 - 8 * i));
        ctl_buf_putc(b, TAG_REAL);
        ctl_buf_add(b, be, sizeof be);
        break;
    }
    case SQLITE_TEXT: {
        const unsigned char *s = sqlite3_value_text(v);
        size_t n = (size_t)sqlite3_value_bytes(v);
        ctl_buf_putc(b, TAG_TEXT);
        put_varint(b, n);
        ctl_buf_add(b, s, n);
        break;
    }
    case SQLITE_BLOB: {
        size_t n = (size_t)sqlite3_value_bytes(v);
        const void *p = sqlite3_value_blob(v);
        ctl_buf_putc(b, TAG_BLOB);
        put_varint(b, n);
        ctl_buf_add(b, p, n);
        break;
    }
    default:
        ctl_buf_putc(b, TAG_NULL);
    }
}

static bool same_value(sqlite3_value *a, sqlite3_value *b) {
    int ta = sqlite3_value_type(a);
    if (ta != sqlite3_value_type(b))
        return false;
    switch (ta) {
    case SQLITE_INTEGER:
        return sqlite3_value_int64(a) == sqlite3_value_int64(b);
    case SQLITE_FLOAT: {
        double x = sqlite3_value_double(a), y = sqlite3_value_double(b);
        return memcmp(&x, &y, sizeof x) == 0;
    }
    case SQLITE_TEXT:
    case SQLITE_BLOB: {
        const void *pa = ta == SQLITE_TEXT ? (const void *)sqlite3_value_text(a)
                                           : sqlite3_value_blob(a);
        int na = sqlite3_value_bytes(a);
        const void *pb = ta == SQLITE_TEXT ? (const void *)sqlite3_value_text(b)
                                           : sqlite3_value_blob(b);
        return na == sqlite3_value_bytes(b) && (na == 0 || memcmp(pa, pb, (size_t)na) == 0);
    }
    default:
        return true;
    }
}

/* The first failure since the last rewind to 0 is the one kept. */
static void fail(ctl_changes_t *c, const char *what) {
    if (!c->failed)
        snprintf(c->why, sizeof c->why, "%s", what);
    c->failed = true;
}

/* A table not recorded, known by name alone (it needs no key). */
static void tables_add_skip(tables_t *ts, const char *name) {
    ts->t = sl_xrealloc(ts->t, (ts->n + 1) * sizeof *ts->t);
    ts->t[ts->n++] = (table_t){.name = sl_xstrdup(name), .namelen = strlen(name), .skip = true};
}

static void put_head(ctl_changes_t *c, char op, const table_t *t, int nval) {
    if (c->b.len == 0)
        ctl_buf_putc(&c->b, FORMAT_VERSION);
    ctl_buf_putc(&c->b, op);
    ctl_buf_putc(&c->b, (char)t->namelen);
    ctl_buf_add(&c->b, t->name, t->namelen);
    put_varint(&c->b, (uint64_t)nval);
}

/* The changed row's key as it was ('D'). */
static bool put_old_key(ctl_changes_t *c, const table_t *t) {
    put_head(c, 'D', t, t->npk);
    for (int k = 0; k < t->npk; k++) {
        sqlite3_value *v = NULL;
        if (sqlite3_preupdate_old(c->db, t->pk[k], &v) != SQLITE_OK)
            return false;
        put_value(&c->b, v);
    }
    return true;
}

static bool put_row(ctl_changes_t *c, const table_t *t) {
    put_head(c, 'I', t, t->ncol);
    for (int i = 0; i < t->ncol; i++) {
        sqlite3_value *v = NULL;
        if (sqlite3_preupdate_new(c->db, i, &v) != SQLITE_OK)
            return false;
        put_value(&c->b, v);
    }
    return true;
}

/* Whether an update moves the row's key. */
static bool key_moves(ctl_changes_t *c, const table_t *t) {
    for (int k = 0; k < t->npk; k++) {
        sqlite3_value *o = NULL, *n = NULL;
        if (sqlite3_preupdate_old(c->db, t->pk[k], &o) != SQLITE_OK ||
            sqlite3_preupdate_new(c->db, t->pk[k], &n) != SQLITE_OK || !same_value(o, n))
            return true;
    }
    return false;
}

static void on_change(void *ud, sqlite3 *db, int op, const char *zdb, const char *name,
                      sqlite3_int64 key1, sqlite3_int64 key2) {
    (void)key1;
    (void)key2;
    ctl_changes_t *c = ud;
    if (strcmp(zdb, "main") != 0)
        return;
    size_t len = strlen(name);
    table_t *t = tables_find(&c->ts, name, len);
    if (t == NULL && strncmp(name, "sqlite_", 7) == 0)
        return;
    if (t == NULL) {
        /* A table made after attach: read its shape here, as SQLite's own
         * session extension does in this hook. */
        char err[sizeof c->why];
        t = tables_load(&c->ts, db, name, len, err, sizeof err);
        if (t == NULL) {
            fail(c, err);
            return;
        }
    }
    if (t->skip)
        return;
    if (sqlite3_preupdate_count(db) != t->ncol) {
        char err[sizeof c->why];
        snprintf(err, sizeof err, "table %s: %d columns, %d when its changes began to be "
                 "recorded", t->name, sqlite3_preupdate_count(db), t->ncol);
        fail(c, err);
        return;
    }
    bool ok;
    if (op == SQLITE_DELETE)
        ok = put_old_key(c, t);
    else if (op == SQLITE_INSERT)
        ok = put_row(c, t);
    else
        ok = (!key_moves(c, t) || put_old_key(c, t)) && put_row(c, t);
    if (!ok)
        fail(c, "SQLite did not give a changed row's values");
}

int ctl_changes_attach(ctl_changes_t **out, sqlite3 *db, const char *const *skip, char *err,
                       size_t errlen) {
    *out = NULL;
    ctl_changes_t *c = sl_xcalloc(1, sizeof *c);
    c->db = db;
    ctl_buf_init(&c->b);
    for (size_t i = 0; skip && skip[i]; i++)
        tables_add_skip(&c->ts, skip[i]);
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db,
                                "SELECT name, wr FROM pragma_table_list WHERE schema = 'main'"
                                " AND type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'",
                                -1, &st, NULL);
    while (st != NULL && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        if (tables_find(&c->ts, name, strlen(name)) != NULL) /* left out */
            continue;
        if (sqlite3_column_int(st, 1)) {
            snprintf(err, errlen, "table %s is WITHOUT ROWID, which this recorder does not take "
                     "(SQLite's pre-update hook is for rowid tables)", name);
            rc = SQLITE_ERROR;
            break;
        }
        if (tables_load(&c->ts, db, name, strlen(name), err, errlen) == NULL) {
            rc = SQLITE_ERROR;
            break;
        }
    }
    if (rc != SQLITE_DONE) {
        if (rc != SQLITE_ERROR)
            snprintf(err, errlen, "tables: %s", sqlite3_errmsg(db));
        sqlite3_finalize(st);
        tables_fini(&c->ts);
        ctl_buf_fini(&c->b);
        sl_free(c);
        return -1;
    }
    sqlite3_finalize(st);
    sqlite3_preupdate_hook(db, on_change, c);
    *out = c;
    return 0;
}

void ctl_changes_detach(ctl_changes_t *c) {
    if (c == NULL)
        return;
    sqlite3_preupdate_hook(c->db, NULL, NULL);
    tables_fini(&c->ts);
    ctl_buf_fini(&c->b);
    sl_free(c);
}

size_t ctl_changes_mark(const ctl_changes_t *c) {
    return c ? c->b.len : 0;
}

void ctl_changes_rewind(ctl_changes_t *c, size_t mark) {
    if (c == NULL)
        return;
    if (mark < c->b.len)
        c->b.len = mark <= 1 ? 0 : mark; /* the version byte alone is no change */
    if (mark == 0)
        c->failed = false;
}

const void *ctl_changes_take(const ctl_changes_t *c, size_t *len, const char **err) {
    *len = 0;
    if (c->failed) {
        *err = c->why;
        return NULL;
    }
    *len = c->b.len;
    *err = NULL;
    return c->b.len ? c->b.p : "";
}

/* ---- the applier ---- */

struct ctl_changes_applier {
    sqlite3 *db;
    tables_t ts;
};

ctl_changes_applier_t *ctl_changes_applier_create(sqlite3 *db) {
    ctl_changes_applier_t *a = sl_xcalloc(1, sizeof *a);
    a->db = db;
    return a;
}

void ctl_changes_applier_destroy(ctl_changes_applier_t *a) {
    if (a == NULL)
        return;
    tables_fini(&a->ts);
    sl_free(a);
}

typedef struct reader {
    const unsigned char *p, *end;
} reader_t;

static bool get_varint(reader_t *r, uint64_t *out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (r->p >= r->end)
            return false;
        unsigned char c = *r->p++;
        v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *out = v;
            return true;
        }
    }
    return false;
}

/* An SQL identifier, double-quoted. */
static void quoted(ctl_buf_t *b, const char *id) {
    ctl_buf_putc(b, '"');
    for (; *id; id++) {
        if (*id == '"')
            ctl_buf_putc(b, '"');
        ctl_buf_putc(b, *id);
    }
    ctl_buf_putc(b, '"');
}

/* Binds the next value to st's parameter i (the string must outlive the
 * step: SQLITE_STATIC). */
static bool bind_next(reader_t *r, sqlite3_stmt *st, int i) {
    if (r->p >= r->end)
        return false;
    int tag = *r->p++;
    uint64_t u;
    switch (tag) {
    case TAG_NULL:
        return sqlite3_bind_null(st, i) == SQLITE_OK;
    case TAG_INT:
        if (!get_varint(r, &u))
            return false;
        return sqlite3_bind_int64(st, i, (sqlite3_int64)((u >> 1) ^ (0 - (u & 1)))) == SQLITE_OK;
    case TAG_REAL: {
        if (r->end - r->p < 8)
            return false;
        u = 0;
        for (int k = 0; k < 8; k++)
            u = u << 8 | r->p[k];
        r->p += 8;
        double d;
        memcpy(&d, &u, sizeof d);
        return sqlite3_bind_double(st, i, d) == SQLITE_OK;
    }
    case TAG_TEXT:
    case TAG_BLOB:
        if (!get_varint(r, &u) || u > (uint64_t)(r->end - r->p) || u > INT32_MAX)
            return false;
        r->p += u;
        return (tag == TAG_TEXT
                    ? sqlite3_bind_text(st, i, (const char *)r->p - u, (int)u, SQLITE_STATIC)
                    : sqlite3_bind_blob(st, i, r->p - u, (int)u, SQLITE_STATIC)) == SQLITE_OK;
    default:
        return false;
    }
}

/* The table's statements, prepared at its first use here. */
static int prepare(ctl_changes_applier_t *a, table_t *t, char *err, size_t errlen) {
    ctl_buf_t q;
    ctl_buf_init(&q);
    ctl_buf_puts(&q, "INSERT OR REPLACE INTO main.");
    quoted(&q, t->name);
    ctl_buf_putc(&q, '(');
    for (int i = 0; i < t->ncol; i++) {
        ctl_buf_puts(&q, i ? ", " : "");
        quoted(&q, t->cols[i]);
    }
    ctl_buf_puts(&q, ") VALUES(");
    for (int i = 0; i < t->ncol; i++)
        ctl_buf_printf(&q, "%s?%d", i ? ", " : "", i + 1);
    ctl_buf_putc(&q, ')');
    int rc = sqlite3_prepare_v3(a->db, q.p, (int)q.len, SQLITE_PREPARE_PERSISTENT, &t->put, NULL);
    q.len = 0;
    ctl_buf_puts(&q, "DELETE FROM main.");
    quoted(&q, t->name);
    for (int k = 0; k < t->npk; k++) {
        ctl_buf_puts(&q, k ? " AND " : " WHERE ");
        quoted(&q, t->cols[t->pk[k]]);
        ctl_buf_printf(&q, " IS ?%d", k + 1);
    }
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v3(a->db, q.p, (int)q.len, SQLITE_PREPARE_PERSISTENT, &t->del,
                                NULL);
    ctl_buf_fini(&q);
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "table %s: %s", t->name, sqlite3_errmsg(a->db));
        sqlite3_finalize(t->put);
        t->put = NULL;
        return -1;
    }
    return 0;
}

int ctl_changes_apply(ctl_changes_applier_t *a, const void *p, size_t n, char *err,
                      size_t errlen) {
    reader_t r = {p, (const unsigned char *)p + n};
    if (n == 0)
        return 0;
    if (*r.p++ != FORMAT_VERSION) {
        snprintf(err, errlen, "changes of format %d (this sluiced applies %d)", ((const unsigned char *)p)[0],
                 FORMAT_VERSION);
        return -1;
    }
    while (r.p < r.end) {
        size_t off = (size_t)(r.p - (const unsigned char *)p);
        char op = (char)*r.p++;
        if (r.p >= r.end || (op != 'I' && op != 'D'))
            goto bad;
        size_t nl = *r.p++;
        if ((size_t)(r.end - r.p) < nl)
            goto bad;
        const char *name = (const char *)r.p;
        r.p += nl;
        table_t *t = tables_find(&a->ts, name, nl);
        if (t == NULL && (t = tables_load(&a->ts, a->db, name, nl, err, errlen)) == NULL)
            return -1;
        if (t->put == NULL && prepare(a, t, err, errlen) < 0)
            return -1;
        uint64_t nv;
        if (!get_varint(&r, &nv))
            goto bad;
        if (nv != (uint64_t)(op == 'I' ? t->ncol : t->npk)) {
            snprintf(err, errlen, "table %s: a change of %llu values, and the table has %d %s "
                     "here", t->name, (unsigned long long)nv, op == 'I' ? t->ncol : t->npk,
                     op == 'I' ? "columns" : "key columns");
            return -1;
        }
        sqlite3_stmt *st = op == 'I' ? t->put : t->del;
        for (int i = 1; i <= (int)nv; i++)
            if (!bind_next(&r, st, i)) {
                sqlite3_clear_bindings(st);
                r.p = (const unsigned char *)p + off;
                goto bad;
            }
        int rc = sqlite3_step(st);
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
        if (rc != SQLITE_DONE) {
            snprintf(err, errlen, "table %s: %s", t->name, sqlite3_errmsg(a->db));
            return -1;
        }
    }
    return 0;
bad:
    snprintf(err, errlen, "malformed changes at byte %zu of %zu",
             (size_t)(r.p - (const unsigned char *)p), n);
    return -1;
}
