/*
 * test_changes.c - the row changes of a transaction, recorded on one
 * SQLite connection and applied on another (src/ctl/store/changes.h).
 *
 * Two in-memory databases of one schema: a key that is the rowid, a key
 * of two columns, a text key, a table whose name needs quoting, and a
 * table left out. Whatever the first one commits, the second must hold
 * the same rows once it applies the string, compared as a dump of every
 * table (each value by SQLite's quote()). A differential run does
 * seeded random inserts, updates (some moving keys), replaces, deletes
 * and rolled-back savepoints over many commits and compares after each.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#include <sqlite3.h>

#include "store/changes.h"

#define SCHEMA                                                                              \
    "CREATE TABLE jobs(id INTEGER PRIMARY KEY, tenant TEXT NOT NULL, spec TEXT, score REAL,"  \
    " blob BLOB, n INTEGER);"                                                                 \
    "CREATE TABLE tasks(job INTEGER NOT NULL, idx INTEGER NOT NULL, node TEXT, state TEXT,"   \
    " PRIMARY KEY(job, idx));"                                                                \
    "CREATE TABLE nodes(name TEXT PRIMARY KEY, spec TEXT NOT NULL);"                          \
    "CREATE TABLE \"we\"\"ird\"(\"k\"\"ey\" INTEGER PRIMARY KEY, v TEXT);"                    \
    "CREATE TABLE ha_meta(k TEXT PRIMARY KEY, v INTEGER);"

static const char *const skip[] = {"ha_meta", NULL};

static sqlite3 *db_new(const char *schema) {
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, schema, NULL, NULL, NULL), SQLITE_OK);
    return db;
}

static void exec(sqlite3 *db, const char *sql) {
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("%s: %s", sql, msg);
}

static ctl_changes_t *attach(sqlite3 *db, const char *const *skip_these) {
    ctl_changes_t *rec = NULL;
    char err[256] = "";
    if (ctl_changes_attach(&rec, db, skip_these, err, sizeof err) != 0)
        fail_msg("attach: %s", err);
    return rec;
}

/* Every table's rows in key order, each value quoted: equal dumps, equal
 * tables. The caller frees. */
static char *dump(sqlite3 *db, bool with_meta) {
    static const char *const q[] = {
        "SELECT 'jobs', quote(id), quote(tenant), quote(spec), quote(score), quote(blob),"
        " quote(n) FROM jobs ORDER BY id",
        "SELECT 'tasks', quote(job), quote(idx), quote(node), quote(state) FROM tasks"
        " ORDER BY job, idx",
        "SELECT 'nodes', quote(name), quote(spec) FROM nodes ORDER BY name",
        "SELECT 'weird', quote(\"k\"\"ey\"), quote(v) FROM \"we\"\"ird\" ORDER BY 2",
        "SELECT 'meta', quote(k), quote(v) FROM ha_meta ORDER BY k",
    };
    size_t cap = 4096, len = 0;
    char *out = malloc(cap);
    out[0] = '\0';
    for (size_t i = 0; i < sizeof q / sizeof q[0] - (with_meta ? 0 : 1); i++) {
        sqlite3_stmt *st = NULL;
        assert_int_equal(sqlite3_prepare_v2(db, q[i], -1, &st, NULL), SQLITE_OK);
        while (sqlite3_step(st) == SQLITE_ROW)
            for (int c = 0; c < sqlite3_column_count(st); c++) {
                const char *v = (const char *)sqlite3_column_text(st, c);
                size_t n = strlen(v) + 2;
                if (len + n + 1 > cap) {
                    cap = 2 * (len + n + 1);
                    out = realloc(out, cap);
                }
                len += (size_t)snprintf(out + len, cap - len, "%s%c", v,
                                        c + 1 == sqlite3_column_count(st) ? '\n' : '|');
            }
        sqlite3_finalize(st);
    }
    return out;
}

/* Applies what rec holds to the applier's db in one transaction; the
 * apply's return. */
static int apply(ctl_changes_t *rec, ctl_changes_applier_t *a, sqlite3 *dst) {
    size_t n = 0;
    const char *why = NULL;
    const void *p = ctl_changes_take(rec, &n, &why);
    assert_non_null(p);
    assert_null(why);
    char err[256] = "";
    exec(dst, "BEGIN");
    int rc = ctl_changes_apply(a, p, n, err, sizeof err);
    exec(dst, rc == 0 ? "COMMIT" : "ROLLBACK");
    return rc;
}

/* The fixture: the recorded database, its copy, the recorder, the
 * applier. */
typedef struct pair {
    sqlite3 *src, *dst;
    ctl_changes_t *rec;
    ctl_changes_applier_t *a;
} pair_t;

static pair_t pair_open(void) {
    pair_t p = {db_new(SCHEMA), db_new(SCHEMA), NULL, NULL};
    p.rec = attach(p.src, skip);
    p.a = ctl_changes_applier_create(p.dst);
    return p;
}

static void pair_close(pair_t *p) {
    ctl_changes_applier_destroy(p->a);
    ctl_changes_detach(p->rec);
    sqlite3_close(p->src);
    sqlite3_close(p->dst);
}

static void assert_same(sqlite3 *a, sqlite3 *b) {
    char *da = dump(a, false), *db = dump(b, false);
    assert_string_equal(da, db);
    free(da);
    free(db);
}

static void test_changes_round_trip_of_every_kind_of_change(void **state) {
    (void)state;
    pair_t p = pair_open();
    sqlite3 *src = p.src, *dst = p.dst;
    ctl_changes_t *rec = p.rec;
    ctl_changes_applier_t *a = p.a;

    exec(src, "BEGIN;"
              "INSERT INTO jobs VALUES(1, 'alice', '{\"a\":\"b''c\"}', 1.5, x'00ff10', -9223372036854775808);"
              "INSERT INTO jobs VALUES(2, 'bob', NULL, -0.0, x'', 9223372036854775807);"
              "INSERT INTO jobs(tenant) VALUES('carol');"
              "INSERT INTO tasks VALUES(1, 0, 'n1', 'RUNNING'), (1, 1, 'n2', 'RUNNING');"
              "INSERT INTO nodes VALUES('n1', 'a'), ('n2', 'b');"
              "INSERT INTO \"we\"\"ird\" VALUES(7, 'q\"uote');"
              "INSERT INTO ha_meta VALUES('index', 1);"
              "COMMIT");
    assert_int_equal(apply(rec, a, dst), 0);
    assert_same(src, dst);
    /* The table left out: not recorded, so not applied. */
    char *meta = dump(dst, true);
    assert_null(strstr(meta, "'index'"));
    free(meta);
    ctl_changes_rewind(rec, 0);

    exec(src, "BEGIN;"
              "UPDATE jobs SET spec = 'new', score = 2.25 WHERE id = 1;"
              "UPDATE jobs SET id = 10 WHERE id = 2;"              /* a key that moves */
              "UPDATE tasks SET idx = 5, state = 'DONE' WHERE job = 1 AND idx = 1;"
              "INSERT OR REPLACE INTO nodes VALUES('n1', 'replaced');"
              "DELETE FROM nodes WHERE name = 'n2';"
              "DELETE FROM jobs WHERE id = 3;"
              "UPDATE ha_meta SET v = 2;"
              "COMMIT");
    assert_int_equal(apply(rec, a, dst), 0);
    assert_same(src, dst);

    /* The same string again changes nothing more. */
    assert_int_equal(apply(rec, a, dst), 0);
    assert_same(src, dst);
    ctl_changes_rewind(rec, 0);

    /* Nothing recorded: an empty string. */
    size_t n = 1;
    const char *why = "x";
    assert_non_null(ctl_changes_take(rec, &n, &why));
    assert_int_equal(n, 0);
    assert_null(why);

    pair_close(&p);
    SL_ASSERT_NO_LEAKS();
}

/* A savepoint rolled back and a failed statement are rewound by the
 * caller; a whole ROLLBACK by a rewind to 0. */
static void test_changes_rewind_forgets_what_sqlite_undid(void **state) {
    (void)state;
    pair_t p = pair_open();
    sqlite3 *src = p.src, *dst = p.dst;
    ctl_changes_t *rec = p.rec;
    ctl_changes_applier_t *a = p.a;
    assert_int_equal(ctl_changes_mark(rec), 0);

    exec(src, "BEGIN; INSERT INTO jobs(id, tenant) VALUES(1, 'kept');");
    size_t m = ctl_changes_mark(rec);
    assert_true(m > 0);
    exec(src, "SAVEPOINT s; INSERT INTO jobs(id, tenant) VALUES(2, 'undone');"
              "UPDATE jobs SET tenant = 'undone too' WHERE id = 1;");
    assert_true(ctl_changes_mark(rec) > m);
    exec(src, "ROLLBACK TO s; RELEASE s;");
    ctl_changes_rewind(rec, m);
    assert_int_equal(ctl_changes_mark(rec), m);
    exec(src, "COMMIT");
    assert_int_equal(apply(rec, a, dst), 0);
    assert_same(src, dst);
    ctl_changes_rewind(rec, 0);

    exec(src, "BEGIN; DELETE FROM jobs; ROLLBACK");
    assert_true(ctl_changes_mark(rec) > 0);
    ctl_changes_rewind(rec, 0);
    assert_int_equal(ctl_changes_mark(rec), 0);
    assert_int_equal(apply(rec, a, dst), 0);
    assert_same(src, dst);

    /* NULL is no recorder: a single controller's store. */
    assert_int_equal(ctl_changes_mark(NULL), 0);
    ctl_changes_rewind(NULL, 0);
    ctl_changes_detach(NULL);
    ctl_changes_applier_destroy(NULL);

    pair_close(&p);
    SL_ASSERT_NO_LEAKS();
}

static void test_changes_attach_refuses_tables_it_cannot_key(void **state) {
    (void)state;
    char err[256] = "";
    ctl_changes_t *rec = (ctl_changes_t *)&err;
    sqlite3 *db = db_new("CREATE TABLE a(k INTEGER PRIMARY KEY); CREATE TABLE log(line TEXT);");
    assert_int_equal(ctl_changes_attach(&rec, db, NULL, err, sizeof err), -1);
    assert_null(rec);
    assert_non_null(strstr(err, "log"));
    assert_non_null(strstr(err, "primary key"));
    /* Left out, it is no matter. */
    static const char *const skip_log[] = {"log", NULL};
    assert_int_equal(ctl_changes_attach(&rec, db, skip_log, err, sizeof err), 0);
    exec(db, "INSERT INTO log VALUES('x')");
    assert_int_equal(ctl_changes_mark(rec), 0);
    ctl_changes_detach(rec);
    sqlite3_close(db);

    db = db_new("CREATE TABLE w(k TEXT PRIMARY KEY, v) WITHOUT ROWID;");
    assert_int_equal(ctl_changes_attach(&rec, db, NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "WITHOUT ROWID"));
    sqlite3_close(db);
    SL_ASSERT_NO_LEAKS();
}

/* A table made after attach without a key: the next take fails, and says
 * so, until a rewind to 0. */
static void test_changes_take_fails_after_a_change_it_could_not_record(void **state) {
    (void)state;
    char err[256] = "";
    sqlite3 *db = db_new("CREATE TABLE a(k INTEGER PRIMARY KEY);");
    ctl_changes_t *rec = NULL;
    assert_int_equal(ctl_changes_attach(&rec, db, NULL, err, sizeof err), 0);
    exec(db, "CREATE TABLE later(line TEXT); INSERT INTO a VALUES(1); INSERT INTO later VALUES('x')");
    size_t n = 0;
    const char *why = NULL;
    assert_null(ctl_changes_take(rec, &n, &why));
    assert_non_null(why);
    assert_non_null(strstr(why, "primary key"));
    ctl_changes_rewind(rec, 0);
    assert_non_null(ctl_changes_take(rec, &n, &why));
    /* A table made later with a key is recorded. */
    exec(db, "CREATE TABLE later2(k TEXT PRIMARY KEY); INSERT INTO later2 VALUES('y')");
    assert_non_null(ctl_changes_take(rec, &n, &why));
    assert_true(n > 0);
    ctl_changes_detach(rec);
    sqlite3_close(db);
    SL_ASSERT_NO_LEAKS();
}

/* Every prefix of a good string, a wrong version, a table missing or of
 * another shape: -1 with a message, never a crash, and the transaction
 * for the caller to roll back. */
static void test_changes_apply_refuses_bad_strings(void **state) {
    (void)state;
    pair_t pr = pair_open();
    sqlite3 *src = pr.src, *dst = pr.dst;
    ctl_changes_t *rec = pr.rec;
    ctl_changes_applier_t *a = pr.a;
    char err[256] = "";
    exec(src, "INSERT INTO jobs VALUES(1, 'alice', 'spec', 0.5, x'01', 3);"
              "INSERT INTO tasks VALUES(1, 0, 'n1', 'RUNNING'); DELETE FROM tasks;"
              "INSERT INTO nodes VALUES('n1', 'a')");
    size_t n = 0;
    const char *why = NULL;
    const unsigned char *p = ctl_changes_take(rec, &n, &why);
    assert_non_null(p);
    unsigned char *copy = malloc(n);
    memcpy(copy, p, n);
    int refused = 0;
    for (size_t k = 1; k < n; k++) {
        exec(dst, "BEGIN");
        err[0] = '\0';
        int rc = ctl_changes_apply(a, copy, k, err, sizeof err);
        if (rc < 0) {
            refused++;
            assert_true(err[0] != '\0');
        }
        exec(dst, "ROLLBACK");
    }
    /* A prefix that ends where a record does is a good, shorter string:
     * the version byte alone, and after each of the first three of the
     * four records. Every other prefix is refused. */
    assert_int_equal(refused, (int)n - 1 - 4);
    char *empty = dump(dst, true);
    assert_int_equal(strlen(empty), 0);
    free(empty);

    copy[0] = 9;
    assert_int_equal(ctl_changes_apply(a, copy, n, err, sizeof err), -1);
    assert_non_null(strstr(err, "format 9"));
    copy[0] = 1;

    /* Another shape: the copy's jobs table has a column fewer. */
    sqlite3 *other = db_new("CREATE TABLE jobs(id INTEGER PRIMARY KEY, tenant TEXT, spec TEXT,"
                            " score REAL, blob BLOB);");
    ctl_changes_applier_t *b = ctl_changes_applier_create(other);
    assert_int_equal(ctl_changes_apply(b, copy, n, err, sizeof err), -1);
    assert_non_null(strstr(err, "jobs"));
    assert_non_null(strstr(err, "6 values"));
    ctl_changes_applier_destroy(b);
    sqlite3_close(other);
    /* No such table. */
    other = db_new("CREATE TABLE x(k INTEGER PRIMARY KEY);");
    b = ctl_changes_applier_create(other);
    assert_int_equal(ctl_changes_apply(b, copy, n, err, sizeof err), -1);
    assert_non_null(strstr(err, "no such table"));
    ctl_changes_applier_destroy(b);
    sqlite3_close(other);

    free(copy);
    pair_close(&pr);
    SL_ASSERT_NO_LEAKS();
}

/* Seeded random commits, each applied and compared. */
static void test_changes_random_commits_match_a_copy(void **state) {
    (void)state;
    pair_t p = pair_open();
    sqlite3 *src = p.src, *dst = p.dst;
    ctl_changes_t *rec = p.rec;
    ctl_changes_applier_t *a = p.a;
    unsigned seed = 20261203;
    char sql[512];
    for (int commit = 0; commit < 300; commit++) {
        exec(src, "BEGIN");
        int ops = 1 + (int)(rand_r(&seed) % 12);
        size_t mark = 0;
        bool in_sp = false;
        for (int k = 0; k < ops; k++) {
            int id = (int)(rand_r(&seed) % 40), idx = (int)(rand_r(&seed) % 4);
            switch (rand_r(&seed) % 9) {
            case 0:
                snprintf(sql, sizeof sql, "INSERT OR REPLACE INTO jobs VALUES(%d, 't%u', %s, %d.25,"
                         " randomblob(%d), %u)", id, rand_r(&seed) % 5,
                         rand_r(&seed) % 3 ? "'spec'" : "NULL", id - 20, id % 7, rand_r(&seed));
                break;
            case 1:
                snprintf(sql, sizeof sql, "UPDATE jobs SET spec = 's%u', n = n + 1 WHERE id = %d",
                         rand_r(&seed), id);
                break;
            case 2:
                snprintf(sql, sizeof sql, "UPDATE OR REPLACE jobs SET id = %d WHERE id = %d",
                         (id + 7) % 40, id);
                break;
            case 3:
                snprintf(sql, sizeof sql, "DELETE FROM jobs WHERE id %% 5 = %d", id % 5);
                break;
            case 4:
                snprintf(sql, sizeof sql, "INSERT OR REPLACE INTO tasks VALUES(%d, %d, 'n%d',"
                         " 'PENDING')", id, idx, idx);
                break;
            case 5:
                snprintf(sql, sizeof sql, "UPDATE OR REPLACE tasks SET idx = %d, state = 'MOVED'"
                         " WHERE job = %d", idx, id);
                break;
            case 6:
                snprintf(sql, sizeof sql, "INSERT OR REPLACE INTO nodes VALUES('n%d', 'v%u');"
                         " DELETE FROM nodes WHERE name = 'n%d'", id % 9, rand_r(&seed), idx);
                break;
            case 7:
                if (!in_sp) {
                    mark = ctl_changes_mark(rec);
                    snprintf(sql, sizeof sql, "SAVEPOINT sp");
                    in_sp = true;
                } else {
                    snprintf(sql, sizeof sql, "ROLLBACK TO sp; RELEASE sp");
                    in_sp = false;
                }
                break;
            default:
                snprintf(sql, sizeof sql, "INSERT OR REPLACE INTO ha_meta VALUES('index', %d)",
                         commit);
            }
            exec(src, sql);
            if (strncmp(sql, "ROLLBACK TO", 11) == 0)
                ctl_changes_rewind(rec, mark);
        }
        if (in_sp)
            exec(src, "RELEASE sp");
        exec(src, "COMMIT");
        assert_int_equal(apply(rec, a, dst), 0);
        ctl_changes_rewind(rec, 0);
        assert_same(src, dst);
    }
    pair_close(&p);
    SL_ASSERT_NO_LEAKS();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_changes_round_trip_of_every_kind_of_change, tu_teardown),
        cmocka_unit_test_teardown(test_changes_rewind_forgets_what_sqlite_undid, tu_teardown),
        cmocka_unit_test_teardown(test_changes_attach_refuses_tables_it_cannot_key, tu_teardown),
        cmocka_unit_test_teardown(test_changes_take_fails_after_a_change_it_could_not_record,
                                  tu_teardown),
        cmocka_unit_test_teardown(test_changes_apply_refuses_bad_strings, tu_teardown),
        cmocka_unit_test_teardown(test_changes_random_commits_match_a_copy, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
