/*
 * sqlite_repl.c - the SQLite backend's replication hooks (store/repl.h).
 *
 * The leader's side: a recorder (changes.h) on every table but ha_meta
 * writes down the rows the open transaction changes; before COMMIT they
 * go to the ship callback, then the new log index and the log's digest
 * are written into ha_meta in the same transaction, so the file always
 * says which log entry it holds, and which history led there. What
 * SQLite undoes inside a transaction (an array refused half-way rolls
 * back to its savepoint, a ROLLBACK) the store rewinds in the recorder
 * too (s->changes).
 *
 * The standby's side: the changes of one read of the log applied in one
 * transaction with the last index and digest (a row is written whole, a
 * delete of a missing row does nothing: the leader's file is the truth),
 * and snapshots (the whole file, sqlite3_serialize) read and installed.
 *
 * Debian's libsqlite3 is built with SQLITE_ENABLE_PREUPDATE_HOOK;
 * ctl_store_repl_supported checks at run time.
 */
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "store/changes.h"
#include "store/sqlite.h"
#include "store/repl.h"

#include "log.h"
#include "sluice/alloc.h"

#define HA_META_SQL "CREATE TABLE IF NOT EXISTS ha_meta(k TEXT PRIMARY KEY, v INTEGER);"

struct ctl_store_repl {
    sqlite3_stmt *put_index; /* the index and digest rows' statement, prepared once */
    ctl_store_ship_fn fn;
    ctl_store_wait_fn wait;
    void *ud;
    uint64_t digest;       /* the log's digest at the file's index (s->seq) */
};

struct ctl_replica {
    sqlite3 *db;
    ctl_changes_applier_t *apply;
    sqlite3_stmt *put_index; /* write_index's, prepared at the first apply */
    uint64_t index, digest;
    bool synced;
};

uint64_t ctl_store_repl_chain(uint64_t prev, const void *changes, size_t n) {
    /* The digest and its context, made once (OpenSSL 3 looks the
     * algorithm up at every EVP_sha256 init otherwise): the store is the
     * loop thread's alone. */
    static EVP_MD *sha256;
    static EVP_MD_CTX *ctx;
    unsigned char head[8], md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    for (int i = 0; i < 8; i++)
        head[i] = (unsigned char)(prev >> (56 - 8 * i));
    if (sha256 == NULL)
        sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
    if (ctx == NULL)
        ctx = EVP_MD_CTX_new();
    if (sha256 == NULL || ctx == NULL || EVP_DigestInit_ex(ctx, sha256, NULL) != 1 ||
        EVP_DigestUpdate(ctx, head, sizeof head) != 1 ||
        EVP_DigestUpdate(ctx, changes, n) != 1 || EVP_DigestFinal_ex(ctx, md, &mdlen) != 1 ||
        mdlen < 8) {
        /* Only out of memory gets here: no digest is better than a wrong one. */
        sl_log(SL_LOG_ERROR, "store", "SHA-256 failed; exiting");
        exit(3);
    }
    uint64_t d = 0;
    for (int i = 0; i < 8; i++)
        d = d << 8 | md[i];
    return d;
}

bool ctl_store_repl_supported(void) {
    return sqlite3_compileoption_used("ENABLE_PREUPDATE_HOOK");
}

/* Every table but the file's own log index is recorded. */
static const char *const not_recorded[] = {"ha_meta", NULL};

/* ha_meta's row k: 0 with *v (0 and *found false when there is none), or -1. */
static int read_meta(sqlite3 *db, const char *k, uint64_t *v, bool *found) {
    sqlite3_stmt *st = NULL;
    *v = 0;
    *found = false;
    if (sqlite3_prepare_v2(db, "SELECT v FROM ha_meta WHERE k = ?1", -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(st, 1, k, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *v = (uint64_t)sqlite3_column_int64(st, 0);
        *found = true;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : -1;
}

/* The file's log index (found: it has one) and digest (0 when it has none:
 * a file of the first log entries made before digests, or of none). */
static int read_index(sqlite3 *db, uint64_t *index, uint64_t *digest, bool *found) {
    bool has_digest;
    if (read_meta(db, "index", index, found) < 0)
        return -1;
    return read_meta(db, "digest", digest, &has_digest);
}

#define PUT_INDEX_SQL "INSERT OR REPLACE INTO ha_meta(k, v) VALUES('index', ?1), ('digest', ?2)"

/* Writes ha_meta's index and digest rows with *cached (prepared on first
 * use, kept and finalized by the caller) or, when cached is NULL, a
 * statement of its own. 0 or -1. */
static int write_index(sqlite3 *db, sqlite3_stmt **cached, uint64_t index, uint64_t digest) {
    sqlite3_stmt *own = NULL, **st = cached ? cached : &own;
    if (*st == NULL && sqlite3_prepare_v3(db, PUT_INDEX_SQL, -1,
                                          cached ? SQLITE_PREPARE_PERSISTENT : 0, st,
                                          NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(*st, 1, (sqlite3_int64)index);
    sqlite3_bind_int64(*st, 2, (sqlite3_int64)digest);
    int rc = sqlite3_step(*st);
    sqlite3_reset(*st);
    sqlite3_finalize(own);
    return rc == SQLITE_DONE ? 0 : -1;
}

/* Before COMMIT (sqlite.c): ship the transaction's changes, record the
 * index and digest (ha_meta is not recorded), and start the next
 * transaction's record empty. */
static int repl_commit(ctl_store_t *s) {
    struct ctl_store_repl *r = s->repl;
    size_t n = 0;
    const char *why = NULL;
    const void *p = ctl_changes_take(s->changes, &n, &why);
    if (p == NULL) {
        sl_log(SL_LOG_ERROR, "store", "%s: the transaction's changes: %s", s->path, why);
        return -1;
    }
    int rc = 0;
    if (n > 0) {
        uint64_t digest = ctl_store_repl_chain(r->digest, p, n);
        if (r->fn(r->ud, p, n, s->seq + 1, digest) < 0 ||
            write_index(s->db, &r->put_index, s->seq + 1, digest) < 0) {
            rc = -1;
        } else {
            s->seq++; /* the log index */
            r->digest = digest;
        }
    }
    ctl_changes_rewind(s->changes, 0);
    return rc;
}

static void repl_wait(ctl_store_t *s) {
    s->repl->wait(s->repl->ud, s->seq);
}

static void repl_fini(ctl_store_t *s) {
    if (s->repl == NULL)
        return;
    ctl_changes_detach(s->changes);
    s->changes = NULL;
    sqlite3_finalize(s->repl->put_index);
    sl_free(s->repl);
    s->repl = NULL;
    s->repl_commit = NULL;
    s->repl_wait = NULL;
}

int ctl_store_repl_enable(ctl_store_t *s, ctl_store_ship_fn fn, ctl_store_wait_fn wait, void *ud,
                          char *err, size_t errlen) {
    if (!ctl_store_repl_supported()) {
        snprintf(err, errlen, "%s: this SQLite library (%s) has no pre-update hook "
                 "(SQLITE_ENABLE_PREUPDATE_HOOK), which HA mode needs", s->path,
                 sqlite3_libversion());
        return -1;
    }
    ctl_store_commit(s);
    bool found;
    uint64_t index, digest;
    if (sqlite3_exec(s->db, HA_META_SQL, NULL, NULL, NULL) != SQLITE_OK ||
        read_index(s->db, &index, &digest, &found) < 0) {
        snprintf(err, errlen, "%s: ha_meta: %s", s->path, sqlite3_errmsg(s->db));
        return -1;
    }
    if (!found && write_index(s->db, NULL, 0, 0) < 0) {
        snprintf(err, errlen, "%s: ha_meta: %s", s->path, sqlite3_errmsg(s->db));
        return -1;
    }
    s->repl = sl_xmalloc(sizeof *s->repl);
    *s->repl = (struct ctl_store_repl){.fn = fn, .wait = wait, .ud = ud,
                                       .digest = digest};
    s->seq = s->durable = index;
    s->repl_fini = repl_fini;
    char why[256] = "";
    if (ctl_changes_attach(&s->changes, s->db, not_recorded, why, sizeof why) < 0) {
        snprintf(err, errlen, "%s: %s", s->path, why);
        repl_fini(s);
        return -1;
    }
    s->repl_commit = repl_commit;
    s->repl_wait = repl_wait;
    /* The file is a copy of the record: a lost tail comes back from the log. */
    (void)sqlite3_exec(s->db, "PRAGMA synchronous=NORMAL", NULL, NULL, NULL);
    return 0;
}

uint64_t ctl_store_repl_index(const ctl_store_t *s) {
    return s->repl ? s->seq : 0;
}

uint64_t ctl_store_repl_digest(const ctl_store_t *s) {
    return s->repl ? s->repl->digest : 0;
}

void ctl_store_repl_durable(ctl_store_t *s, uint64_t index) {
    if (index > s->durable)
        s->durable = index;
}

int ctl_store_repl_serialize(ctl_store_t *s, void **out, size_t *len, char *err, size_t errlen) {
    ctl_store_commit(s);
    sqlite3_int64 n = 0;
    unsigned char *p = sqlite3_serialize(s->db, "main", &n, 0);
    if (p == NULL) {
        snprintf(err, errlen, "%s: serialize: %s", s->path, sqlite3_errmsg(s->db));
        return -1;
    }
    *out = p;
    *len = (size_t)n;
    return 0;
}

void ctl_store_repl_free(void *p) {
    sqlite3_free(p);
}

/* ---- a standby's copy ---- */

int ctl_replica_open(ctl_replica_t **out, const char *path, char *err, size_t errlen) {
    *out = NULL;
    ctl_replica_t *r = sl_xmalloc(sizeof *r);
    *r = (ctl_replica_t){0};
    if (sqlite3_open_v2(path, &r->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
            SQLITE_OK ||
        sqlite3_exec(r->db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;" HA_META_SQL,
                     NULL, NULL, NULL) != SQLITE_OK ||
        read_index(r->db, &r->index, &r->digest, &r->synced) < 0) {
        snprintf(err, errlen, "%s: %s", path, r->db ? sqlite3_errmsg(r->db) : "cannot open");
        ctl_replica_close(r);
        return -1;
    }
    sqlite3_busy_timeout(r->db, 5000);
    r->apply = ctl_changes_applier_create(r->db);
    *out = r;
    return 0;
}

void ctl_replica_close(ctl_replica_t *r) {
    if (r == NULL)
        return;
    ctl_changes_applier_destroy(r->apply);
    sqlite3_finalize(r->put_index);
    sqlite3_close(r->db);
    sl_free(r);
}

uint64_t ctl_replica_index(const ctl_replica_t *r) {
    return r->index;
}

uint64_t ctl_replica_digest(const ctl_replica_t *r) {
    return r->digest;
}

bool ctl_replica_synced(const ctl_replica_t *r) {
    return r->synced;
}

int ctl_replica_apply(ctl_replica_t *r, const ctl_replica_entry_t *e, size_t n, char *err,
                      size_t errlen) {
    uint64_t d = r->digest, at = r->index;
    for (size_t i = 0; i < n; i++) {
        if (e[i].index != at + 1) {
            snprintf(err, errlen, "log entry %llu applied after entry %llu",
                     (unsigned long long)e[i].index, (unsigned long long)at);
            return -1;
        }
        d = ctl_store_repl_chain(d, e[i].changes, e[i].len);
        if (d != e[i].digest) {
            snprintf(err, errlen, "log entry %llu does not follow this file's entry %llu (the "
                     "log's digest differs): the file holds changes the record does not",
                     (unsigned long long)e[i].index, (unsigned long long)at);
            return -2;
        }
        at = e[i].index;
    }
    if (n == 0)
        return 0;
    if (sqlite3_exec(r->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
        goto fail;
    for (size_t i = 0; i < n; i++) {
        char why[256];
        if (ctl_changes_apply(r->apply, e[i].changes, e[i].len, why, sizeof why) < 0) {
            snprintf(err, errlen, "log entry %llu: %s", (unsigned long long)e[i].index, why);
            (void)sqlite3_exec(r->db, "ROLLBACK", NULL, NULL, NULL);
            return -1;
        }
    }
    if (write_index(r->db, &r->put_index, at, d) < 0 || sqlite3_exec(r->db, "COMMIT", NULL, NULL, NULL) !=
                                              SQLITE_OK)
        goto fail;
    r->index = at;
    r->digest = d;
    r->synced = true;
    return 0;
fail:
    snprintf(err, errlen, "log entries %llu..%llu: %s", (unsigned long long)e[0].index,
             (unsigned long long)at, sqlite3_errmsg(r->db));
    (void)sqlite3_exec(r->db, "ROLLBACK", NULL, NULL, NULL);
    return -1;
}

int ctl_replica_install(const char *path, const void *img, size_t len, char *err, size_t errlen) {
    char tmp[4200], side[4220];
    snprintf(tmp, sizeof tmp, "%s.snapshot", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
        return -1;
    }
    const char *p = img;
    size_t left = len;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
            close(fd);
            unlink(tmp);
            return -1;
        }
        p += w;
        left -= (size_t)w;
    }
    if (fsync(fd) != 0 || close(fd) != 0) {
        snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
        unlink(tmp);
        return -1;
    }
    sqlite3 *db = NULL;
    bool ok = sqlite3_open_v2(tmp, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
              sqlite3_exec(db, "PRAGMA quick_check", NULL, NULL, NULL) == SQLITE_OK;
    if (!ok)
        snprintf(err, errlen, "%s: the snapshot is not a sound database: %s", tmp,
                 db ? sqlite3_errmsg(db) : "cannot open");
    sqlite3_close(db);
    const char *sfx[2] = {"-wal", "-shm"};
    for (int i = 0; i < 2; i++) {
        snprintf(side, sizeof side, "%s%s", tmp, sfx[i]);
        (void)unlink(side);
    }
    if (!ok) {
        unlink(tmp);
        return -1;
    }
    for (int i = 0; i < 2; i++) {
        snprintf(side, sizeof side, "%s%s", path, sfx[i]);
        (void)unlink(side);
    }
    if (rename(tmp, path) != 0) {
        snprintf(err, errlen, "%s: rename to %s: %s", tmp, path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    sl_log(SL_LOG_INFO, "ha", "installed a snapshot of %.1f MiB at %s",
           (double)len / (1024.0 * 1024.0), path);
    return 0;
}
