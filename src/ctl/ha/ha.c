/*
 * ha.c - one member of the controllers' group (ha.h): the lease and its
 * keepalive, the campaign, the follower's catch-up and the leader's log
 * writes, snapshots and compaction.
 *
 * Workload: one log entry per group commit, handed to the log writer
 * (logw.c) without waiting, one keepalive and one member write a second,
 * and a follower's range read of the log every 100 ms.
 */
#include <errno.h>
#include <event2/event.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ha/ha.h"
#include "ha/entry.h"
#include "ha/snapshot.h"

#include "base/loop.h"
#include "log.h"
#include "sluice/alloc.h"

#define CALL_MS 2000

/* The fence's clock: CLOCK_BOOTTIME, which also counts a suspend of the
 * machine (CLOCK_MONOTONIC does not: a leader suspended past its lease
 * would resume believing it still leads), as the agents' fence does. */
static int64_t boot_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_BOOTTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}
#define TICK_US 100000

static void key(const ctl_ha_t *h, char *out, size_t n, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void key(const ctl_ha_t *h, char *out, size_t n, const char *fmt, ...) {
    size_t p = (size_t)snprintf(out, n, "%s", h->cfg.prefix);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out + p, n - p, fmt, ap);
    va_end(ap);
}

/* The fence margin: a fifth of the TTL, at least half a second. */
static int64_t margin_us(const ctl_ha_t *h) {
    int64_t m = (int64_t)h->cfg.ttl_s * 200000;
    return m < 500000 ? 500000 : m;
}

static int keepalive(ctl_ha_t *h) {
    int64_t sent = boot_us();
    h->last_keepalive_us = sent;
    char id[32];
    snprintf(id, sizeof id, "%" PRId64, h->lease_id);
    json_t *req = json_pack("{s:s}", "ID", id), *resp = NULL;
    int64_t left = h->leader ? (h->deadline_us - sent) / 1000 : CALL_MS;
    int rc = ctl_etcd_post(&h->etcd, "/v3/lease/keepalive", req, &resp, left > 1000 ? 1000 :
                           left < 1 ? 1 : (int)left);
    json_decref(req);
    if (rc < 0) {
        sl_log(SL_LOG_WARN, "ha", "lease keepalive: %s", h->etcd.err);
        return -1;
    }
    json_t *res = json_object_get(resp, "result");
    int64_t ttl = ctl_etcd_int(res ? res : resp, "TTL", 0);
    json_decref(resp);
    if (ttl <= 0)
        return -2; /* the lease is gone */
    h->renewed_us = sent;
    h->deadline_us = sent + (int64_t)h->cfg.ttl_s * 1000000 - margin_us(h);
    return 0;
}

static int grant(ctl_ha_t *h, char *err, size_t errlen) {
    json_t *req = json_pack("{s:i}", "TTL", h->cfg.ttl_s), *resp = NULL;
    int64_t sent = boot_us();
    int rc = ctl_etcd_post(&h->etcd, "/v3/lease/grant", req, &resp, CALL_MS);
    json_decref(req);
    if (rc < 0) {
        snprintf(err, errlen, "etcd: lease grant: %s", h->etcd.err);
        return -1;
    }
    h->lease_id = ctl_etcd_int(resp, "ID", 0);
    json_decref(resp);
    h->renewed_us = sent;
    h->deadline_us = sent + (int64_t)h->cfg.ttl_s * 1000000 - margin_us(h);
    h->last_keepalive_us = sent;
    return h->lease_id ? 0 : -1;
}

/* The member's own record, with its lease. */
static void put_member(ctl_ha_t *h) {
    char k[512], id[32];
    key(h, k, sizeof k, "members/%s", h->cfg.name);
    json_t *v = json_pack("{s:s,s:s,s:s,s:s,s:I,s:I}", "name", h->cfg.name, "api", h->cfg.api_url,
                          "agent", h->cfg.agent_addr, "role", h->leader ? "leader" : "follower",
                          "applied", (json_int_t)h->applied, "epoch", (json_int_t)h->epoch);
    char *txt = json_dumps(v, JSON_COMPACT);
    json_decref(v);
    char *b = ctl_etcd_b64(txt, strlen(txt));
    free(txt);
    snprintf(id, sizeof id, "%" PRId64, h->lease_id);
    json_t *req = json_pack("{s:o,s:s,s:s}", "key", ctl_etcd_key(k), "value", b, "lease", id);
    sl_free(b);
    json_t *resp = NULL;
    if (ctl_etcd_post(&h->etcd, "/v3/kv/put", req, &resp, 500) < 0)
        sl_log(SL_LOG_DEBUG, "ha", "members/%s: %s", h->cfg.name, h->etcd.err);
    json_decref(req);
    json_decref(resp);
    h->last_member_us = boot_us();
}

/* The leader key's value and create_revision from a range answer's kvs. */
static void read_leader(ctl_ha_t *h, json_t *kvs) {
    json_t *kv = json_array_get(kvs, 0);
    if (kv == NULL) {
        h->info.leader_api[0] = h->info.leader_agent[0] = h->leader_name[0] = '\0';
        return;
    }
    uint64_t epoch = (uint64_t)ctl_etcd_int(kv, "create_revision", 0);
    size_t n = 0;
    char *val = ctl_etcd_unb64(json_string_value(json_object_get(kv, "value")) ?: "", &n);
    json_t *v = val ? json_loadb(val, n, 0, NULL) : NULL;
    sl_free(val);
    const char *api = json_string_value(json_object_get(v, "api"));
    const char *agent = json_string_value(json_object_get(v, "agent"));
    const char *name = json_string_value(json_object_get(v, "name"));
    if (epoch != h->epoch && name) {
        h->leader_changes++;
        sl_log(SL_LOG_INFO, "ha", "leader=%s epoch=%" PRIu64, name, epoch);
    }
    h->epoch = h->info.epoch = epoch;
    snprintf(h->info.leader_api, sizeof h->info.leader_api, "%s", api ? api : "");
    snprintf(h->info.leader_agent, sizeof h->info.leader_agent, "%s", agent ? agent : "");
    snprintf(h->leader_name, sizeof h->leader_name, "%s", name ? name : "");
    json_decref(v);
}

/* One try for the leadership: the leader key created with our lease if it
 * does not exist; else it is read. 1 when we lead, 0, or -1. */
static int campaign(ctl_ha_t *h) {
    char k[512], id[32];
    key(h, k, sizeof k, "leader");
    json_t *v = json_pack("{s:s,s:s,s:s}", "name", h->cfg.name, "api", h->cfg.api_url, "agent",
                          h->cfg.agent_addr);
    char *txt = json_dumps(v, JSON_COMPACT);
    json_decref(v);
    char *b = ctl_etcd_b64(txt, strlen(txt));
    free(txt);
    snprintf(id, sizeof id, "%" PRId64, h->lease_id);
    json_t *req = json_pack(
        "{s:[{s:o,s:s,s:s,s:s}],s:[{s:{s:o,s:s,s:s}}],s:[{s:{s:o}}]}", "compare", "key",
        ctl_etcd_key(k), "target", "CREATE", "result", "EQUAL", "create_revision", "0", "success",
        "request_put", "key", ctl_etcd_key(k), "value", b, "lease", id, "failure", "request_range",
        "key", ctl_etcd_key(k));
    sl_free(b);
    json_t *resp = NULL;
    int rc = ctl_etcd_post(&h->etcd, "/v3/kv/txn", req, &resp, CALL_MS);
    json_decref(req);
    if (rc < 0) {
        sl_log(SL_LOG_WARN, "ha", "campaign: %s", h->etcd.err);
        return -1;
    }
    if (json_is_true(json_object_get(resp, "succeeded"))) {
        uint64_t epoch = (uint64_t)ctl_etcd_int(json_object_get(resp, "header"), "revision", 0);
        h->leader_changes++;
        h->epoch = h->info.epoch = epoch;
        snprintf(h->leader_name, sizeof h->leader_name, "%s", h->cfg.name);
        snprintf(h->info.leader_api, sizeof h->info.leader_api, "%s", h->cfg.api_url);
        snprintf(h->info.leader_agent, sizeof h->info.leader_agent, "%s", h->cfg.agent_addr);
        json_decref(resp);
        return 1;
    }
    json_t *r0 = json_object_get(json_array_get(json_object_get(resp, "responses"), 0),
                                 "response_range");
    json_t *kv = json_array_get(json_object_get(r0, "kvs"), 0);
    if (kv && h->lease_id && ctl_etcd_int(kv, "lease", 0) == h->lease_id) {
        /* Our own key: an earlier try of this campaign reached a member
         * that did not answer in time, and its retry found the key made. */
        uint64_t epoch = (uint64_t)ctl_etcd_int(kv, "create_revision", 0);
        json_decref(resp);
        if (epoch == 0)
            return -1;
        sl_log(SL_LOG_INFO, "ha", "member=%s: the leader key of its retried campaign is its own "
               "(lease %" PRId64 ")", h->cfg.name, h->lease_id);
        h->leader_changes++;
        h->epoch = h->info.epoch = epoch;
        snprintf(h->leader_name, sizeof h->leader_name, "%s", h->cfg.name);
        snprintf(h->info.leader_api, sizeof h->info.leader_api, "%s", h->cfg.api_url);
        snprintf(h->info.leader_agent, sizeof h->info.leader_agent, "%s", h->cfg.agent_addr);
        return 1;
    }
    read_leader(h, json_object_get(r0, "kvs"));
    json_decref(resp);
    return 0;
}

/* ---- the follower's copy ---- */

static bool file_exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && sb.st_size > 0;
}

/* The directory that holds path, made (0700, with its parents) when it
 * is missing: a member whose state directory was deleted rebuilds it. */
static int make_parent(const char *path, char *err, size_t errlen) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash == NULL || slash == dir)
        return 0;
    *slash = '\0';
    for (char *p = dir + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char c = *p;
        *p = '\0';
        if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
            snprintf(err, errlen, "%s: cannot be made: %s", dir, strerror(errno));
            return -1;
        }
        *p = c;
        if (c == '\0')
            return 0;
    }
}

/* The local file holds entries that the record does not (a leader that
 * died or stepped down with entries on their way): removed, with its
 * -wal and -shm, so that the snapshot and the log rebuild it. */
static void discard_file(ctl_ha_t *h, const char *why) {
    sl_log(SL_LOG_WARN, "ha", "member=%s state=%s: %s; replacing it with the snapshot and the log",
           h->cfg.name, h->cfg.state, why);
    h->discards++;
    ctl_replica_close(h->rep);
    h->rep = NULL;
    char side[4200];
    const char *sfx[3] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        snprintf(side, sizeof side, "%s%s", h->cfg.state, sfx[i]);
        (void)unlink(side);
    }
    h->applied = 0;
}

static int open_replica(ctl_ha_t *h, char *err, size_t errlen) {
    ctl_replica_close(h->rep);
    h->rep = NULL;
    if (!file_exists(h->cfg.state))
        return 0;
    if (ctl_replica_open(&h->rep, h->cfg.state, err, errlen) < 0)
        return -1;
    h->applied = ctl_replica_index(h->rep);
    return 0;
}

/* Whether the local file (index h->applied, at or after snapshot m's) is
 * a state of the record: its digest is the snapshot's at the same index,
 * or the log entry's at its index. 1 when it is; 0 when it is not (the
 * file is discarded); -1 when etcd did not answer. */
static int verify_file(ctl_ha_t *h, const ctl_ha_snapmeta_t *m) {
    uint64_t mine = ctl_replica_digest(h->rep);
    if (h->applied == m->index) {
        if (m->has_digest && m->digest == mine)
            return 1;
        discard_file(h, m->has_digest ? "its digest is not the snapshot's at the same index"
                                      : "the snapshot at its index has no digest to check it by");
        return 0;
    }
    /* The record's entry at our index, and how many entries it holds
     * after the snapshot up to it, in one transaction: a leader that died
     * may have left the record a gap (an entry still on its way when a
     * later one landed), and the later one's digest then vouches for the
     * history of this file, not of the record. */
    char k[512], from[512], end[512];
    key(h, k, sizeof k, "log/%020" PRIu64, h->applied);
    key(h, from, sizeof from, "log/%020" PRIu64, m->index + 1);
    key(h, end, sizeof end, "log/%020" PRIu64, h->applied + 1);
    json_t *req = json_pack("{s:[],s:[{s:{s:o}},{s:{s:o,s:o,s:b}}]}", "compare", "success",
                            "request_range", "key", ctl_etcd_key(k), "request_range", "key",
                            ctl_etcd_key(from), "range_end", ctl_etcd_key(end), "count_only", 1),
           *resp = NULL;
    int rc = ctl_etcd_post(&h->etcd, "/v3/kv/txn", req, &resp, CALL_MS);
    json_decref(req);
    if (rc < 0)
        return -1;
    json_t *rs = json_object_get(resp, "responses");
    json_t *kv = json_array_get(json_object_get(json_object_get(json_array_get(rs, 0),
                                                                "response_range"), "kvs"), 0);
    int64_t held = ctl_etcd_int(json_object_get(json_array_get(rs, 1), "response_range"), "count",
                                0);
    uint64_t theirs = 0;
    size_t n = 0;
    unsigned char *v = kv ? ctl_etcd_unb64(json_string_value(json_object_get(kv, "value")) ?: "",
                                           &n)
                          : NULL;
    bool entry = v && ctl_ha_entry_digest(v, n, &theirs);
    json_decref(resp);
    sl_free(v);
    uint64_t want = h->applied - m->index;
    if (entry && theirs == mine && held == (int64_t)want)
        return 1;
    char why[200];
    if (entry && theirs == mine)
        snprintf(why, sizeof why, "the record holds %" PRId64 " of the %" PRIu64 " entries after "
                 "the snapshot up to its entry %" PRIu64, held, want, h->applied);
    else
        snprintf(why, sizeof why, "its last entry %" PRIu64 " is %s", h->applied,
                 entry ? "not the record's" : "not in the record");
    discard_file(h, why);
    return 0;
}

/* Brings the local file to a state of the record: a snapshot when the file
 * is missing, was never synced, or is older than the snapshot. The leader
 * may replace the snapshot while its chunks are read (their keys are then
 * gone): the meta is read again, up to 4 snapshots. 0 or -1. */
static int sync_base(ctl_ha_t *h, char *err, size_t errlen) {
    bool tried = false;
    uint64_t last = 0;
    for (int attempt = 0;; attempt++) {
        ctl_ha_snapmeta_t m;
        int r = ctl_ha_snapshot_meta(&h->etcd, h->cfg.prefix, &m);
        if (r < 0) {
            snprintf(err, errlen, "etcd: snapshot: %s", h->etcd.err);
            return -1;
        }
        h->have_snapshot = r == 1;
        h->snap_index = r == 1 ? m.index : 0;
        if (open_replica(h, err, errlen) < 0)
            return -1;
        if (r == 0)
            return 0; /* no record yet: the first leader makes it */
        if (h->rep && ctl_replica_synced(h->rep) && h->applied >= m.index) {
            int v = verify_file(h, &m);
            if (v < 0) {
                snprintf(err, errlen, "etcd: log: %s", h->etcd.err);
                return -1;
            }
            if (v == 1)
                return 0;
            continue; /* discarded: the snapshot next */
        }
        if (tried && (m.index == last || attempt == 4))
            return -1; /* err: why the last one failed */
        sl_log(SL_LOG_INFO, "ha", "state=%s: %s; installing snapshot index=%" PRIu64,
               h->cfg.state,
               h->rep == NULL                  ? "missing"
               : !ctl_replica_synced(h->rep) ? "never synced"
                                               : "older",
               m.index);
        ctl_replica_close(h->rep);
        h->rep = NULL;
        tried = true;
        last = m.index;
        if (make_parent(h->cfg.state, err, errlen) < 0)
            return -1;
        if (ctl_ha_snapshot_fetch(&h->etcd, h->cfg.prefix, &m, h->cfg.state, err, errlen) == 0)
            return open_replica(h, err, errlen);
        sl_log(SL_LOG_INFO, "ha", "snapshot index=%" PRIu64 ": %s; reading the current one",
               m.index, err);
    }
}

/* The entries after ours were deleted by a newer snapshot (at snap): the
 * file is replaced by it and the log followed from there. 1 or -1. */
static int fall_back(ctl_ha_t *h, uint64_t next, uint64_t snap, char *err, size_t errlen) {
    sl_log(SL_LOG_WARN, "ha", "member=%s: log entry %" PRIu64 " was compacted away (the snapshot "
           "is at index %" PRIu64 "); falling back to the snapshot", h->cfg.name, next, snap);
    h->fallbacks++;
    ctl_replica_close(h->rep);
    h->rep = NULL;
    /* The file stays until the snapshot is renamed over it; it is older. */
    if (sync_base(h, err, errlen) < 0)
        return -1;
    if (h->rep == NULL || h->applied < snap) {
        snprintf(err, errlen, "the snapshot at index %" PRIu64 " left this file at index %" PRIu64
                 ": the record in etcd is not consistent", snap, h->applied);
        return -1;
    }
    return 1;
}

/* Applies the log entries after ours, up to 256 a call. They are read in
 * one etcd transaction with the snapshot's meta (one revision, so the two
 * agree): the leader deletes the entries a new snapshot covers, so when
 * the entry after ours is gone (the first one read is later, or none is
 * left while the snapshot is ahead of us) the newer snapshot is installed
 * instead. 1 when more may follow, 0 at the end, -1 on an error (err). */
static int poll_log(ctl_ha_t *h, char *err, size_t errlen) {
    if (h->rep == NULL)
        return 0;
    ctl_ha_log_read_t lr;
    if (ctl_ha_log_read(h->grpc, h->cfg.prefix, h->applied + 1, CALL_MS, &lr, err, errlen) < 0)
        return -1;
    int rc = 0;
    const ctl_etcdg_range_t *log = lr.log;
    if (log->nkvs == 0 && lr.has_snap && lr.snap > h->applied) {
        rc = fall_back(h, h->applied + 1, lr.snap, err, errlen);
        goto out;
    }
    /* The entries up to the first gap, then applied in one transaction. */
    ctl_replica_entry_t *es = sl_xcalloc(log->nkvs ? log->nkvs : 1, sizeof *es);
    void **bufs = sl_xcalloc(log->nkvs ? log->nkvs : 1, sizeof *bufs);
    size_t ne = 0;
    bool gap = false;
    for (size_t i = 0; i < log->nkvs; i++) {
        const ctl_etcdg_kv_t *kv = &log->kvs[i];
        const char *slash = memrchr(kv->key, '/', kv->klen);
        uint64_t idx = 0;
        for (const unsigned char *c = slash ? (const unsigned char *)slash + 1 : kv->key;
             c < kv->key + kv->klen && *c >= '0' && *c <= '9'; c++)
            idx = idx * 10 + (uint64_t)(*c - '0');
        if (idx != h->applied + 1 + ne) {
            if (ne == 0 && lr.has_snap && lr.snap > h->applied) {
                /* Compacted under us: the snapshot covers it. */
                rc = fall_back(h, h->applied + 1, lr.snap, err, errlen);
                goto done;
            }
            /* A gap the snapshot does not cover: the leader's transactions
             * land out of order (logw.h), so the next entry is on its way
             * (or was left for good by a leader that died: the next one
             * deletes what follows it). Applied up to here. */
            gap = true;
            break;
        }
        es[ne].index = idx;
        bufs[ne] = ctl_ha_entry_unpack(kv->value, kv->vlen, &es[ne].digest, &es[ne].len);
        if (bufs[ne] == NULL) {
            snprintf(err, errlen, "log entry %" PRIu64 ": not an entry (a digest, a length and "
                     "compressed changes)", idx);
            rc = -1;
            goto done;
        }
        es[ne].changes = bufs[ne];
        ne++;
    }
    int ar = ctl_replica_apply(h->rep, es, ne, err, errlen);
    if (ar == -2) {
        /* This file went its own way (its entries after the record's last,
         * as a leader that stepped down): rebuilt. */
        discard_file(h, err);
        rc = sync_base(h, err, errlen) < 0 ? -1 : 1;
        goto done;
    }
    if (ar < 0) {
        rc = -1;
        goto done;
    }
    h->applied = ctl_replica_index(h->rep);
    h->behind = log->count > (int64_t)ne ? (uint64_t)log->count - ne : 0;
    rc = !gap && log->more ? 1 : 0;
done:
    for (size_t i = 0; i < ne; i++)
        sl_free(bufs[i]);
    sl_free(bufs);
    sl_free(es);
out:
    ctl_ha_log_read_free(&lr);
    return rc;
}

/* The entries after the log's first gap, which a leader that died left
 * with their predecessor still on its way: they were never acknowledged
 * (nothing of an entry leaves before every entry before it is in etcd),
 * and the new leader's own entries take their indexes. Deleted in one
 * transaction guarded by our epoch, before our first entry. 0 or -1. */
static int drop_orphans(ctl_ha_t *h, char *err, size_t errlen) {
    char lk[512], from[512], end[512], ep[32];
    key(h, lk, sizeof lk, "leader");
    key(h, from, sizeof from, "log/%020" PRIu64, h->applied + 1);
    key(h, end, sizeof end, "log0");
    snprintf(ep, sizeof ep, "%" PRIu64, h->epoch);
    json_t *req = json_pack("{s:[{s:o,s:s,s:s,s:s}],s:[{s:{s:o,s:o}}]}", "compare", "key",
                            ctl_etcd_key(lk), "target", "CREATE", "result", "EQUAL",
                            "create_revision", ep, "success", "request_delete_range", "key",
                            ctl_etcd_key(from), "range_end", ctl_etcd_key(end)), *resp = NULL;
    int rc = ctl_etcd_post(&h->etcd, "/v3/kv/txn", req, &resp, CALL_MS);
    json_decref(req);
    if (rc < 0 || !json_is_true(json_object_get(resp, "succeeded"))) {
        snprintf(err, errlen, "the log after entry %" PRIu64 " could not be cleared: %s",
                 h->applied, rc < 0 ? h->etcd.err : "the leader key is not ours");
        json_decref(resp);
        return -1;
    }
    json_t *r0 = json_object_get(json_array_get(json_object_get(resp, "responses"), 0),
                                 "response_delete_range");
    int64_t n = ctl_etcd_int(r0, "deleted", 0);
    if (n > 0)
        sl_log(SL_LOG_WARN, "ha", "member=%s: deleted %" PRId64 " log entries after entry %"
               PRIu64 ", left after a gap by the last leader (never acknowledged)", h->cfg.name,
               n, h->applied);
    json_decref(resp);
    return 0;
}

static void revoke_again(ctl_ha_t *h);

static void standby_tick(evutil_socket_t fd, short what, void *ud) {
    (void)fd;
    (void)what;
    ctl_ha_t *h = ud;
    char err[512];
    int64_t now = boot_us();
    if (now - h->last_keepalive_us >= (int64_t)h->cfg.ttl_s * 1000000 / 3) {
        if (h->lease_id == 0 || keepalive(h) == -2) {
            /* No lease yet (etcd was out of reach) or ours expired (etcd
             * unreachable for a TTL): a new one. */
            h->last_keepalive_us = now;
            if (grant(h, err, sizeof err) < 0) {
                sl_log(SL_LOG_WARN, "ha", "%s", err);
                h->lease_id = 0;
            }
        }
    }
    revoke_again(h);
    if (h->lease_id == 0)
        return; /* nothing to campaign with */
    if (!h->based || !h->have_snapshot || h->rep == NULL) {
        if (sync_base(h, err, sizeof err) < 0) {
            sl_log(SL_LOG_WARN, "ha", "%s", err);
            if (!h->based)
                return; /* not a state of the record yet: no campaign */
        } else {
            h->based = true;
        }
    }
    for (int i = 0; i < 8; i++) {
        int r = poll_log(h, err, sizeof err);
        if (r < 0)
            sl_log(SL_LOG_WARN, "ha", "%s", err);
        if (r != 1)
            break;
    }
    if (now - h->last_member_us >= 1000000)
        put_member(h);
    if (boot_us() >= h->deadline_us)
        return; /* our lease may be gone on etcd's clock: a leader of it would step down at once */
    int c = campaign(h);
    if (c == 1) {
        /* Leader: nobody else can append now; read the log to its end. */
        for (int r = 1; r == 1;) {
            r = poll_log(h, err, sizeof err);
            if (r < 0) {
                ctl_ha_step_down(h, err);
            }
        }
        if (h->have_snapshot && (h->rep == NULL || !ctl_replica_synced(h->rep)))
            ctl_ha_step_down(h, "elected without a synced copy of the record");
        if (drop_orphans(h, err, sizeof err) < 0)
            ctl_ha_step_down(h, err);
        h->leader = true;
        event_base_loopbreak(h->base);
    }
}

static char *view_cb(void *ud) {
    return ctl_ha_view(ud);
}

/* A follower's /metrics: the HA series that the leader's table also has
 * (views/metrics.c), plus its lag. */
static char *metrics_cb(void *ud) {
    const ctl_ha_t *h = ud;
    char *out = NULL;
    if (asprintf(&out,
                 "# HELP sluice_ha_leader 1 on the controller that leads.\n"
                 "# TYPE sluice_ha_leader gauge\nsluice_ha_leader 0\n"
                 "# HELP sluice_ha_epoch The leader's epoch.\n"
                 "# TYPE sluice_ha_epoch gauge\nsluice_ha_epoch %" PRIu64 "\n"
                 "# HELP sluice_ha_leader_changes_total Leaders this controller has seen elected.\n"
                 "# TYPE sluice_ha_leader_changes_total counter\n"
                 "sluice_ha_leader_changes_total %" PRIu64 "\n"
                 "# HELP sluice_ha_log_index The last replicated log entry in this file.\n"
                 "# TYPE sluice_ha_log_index gauge\nsluice_ha_log_index %" PRIu64 "\n"
                 "# HELP sluice_ha_replication_lag Log entries in etcd not yet applied here.\n"
                 "# TYPE sluice_ha_replication_lag gauge\nsluice_ha_replication_lag %" PRIu64 "\n"
                 "# HELP sluice_ha_snapshot_fallbacks_total Times this follower's next log entry "
                 "was compacted away and it installed the newer snapshot.\n"
                 "# TYPE sluice_ha_snapshot_fallbacks_total counter\n"
                 "sluice_ha_snapshot_fallbacks_total %" PRIu64 "\n",
                 h->epoch, h->leader_changes, h->applied, h->behind, h->fallbacks) < 0)
        return NULL;
    return out;
}

/* The lease this process held before it stepped down and re-executed
 * itself (OLD_LEASE_ENV, set by ctl_ha_step_down): revoked, so that the
 * leader key it may still hold goes at once instead of when the lease
 * expires (nothing can act on that epoch any more: the old image is
 * gone). A leader often steps down because etcd is not answering (an
 * etcd member lost, its election under way), and etcd's next leader
 * renews every lease as it takes over: so the revoke is tried again every
 * tick, for up to TTL + REVOKE_SLACK_US, rather than once. */
#define OLD_LEASE_ENV "SLUICE_HA_PREVIOUS_LEASE"
#define REVOKE_SLACK_US 10000000

/* One try: true when the lease is gone (revoked now, or not found). */
static bool revoke_try(ctl_ha_t *h, int timeout_ms) {
    char id[32];
    snprintf(id, sizeof id, "%" PRId64, h->prev_lease);
    json_t *req = json_pack("{s:s}", "ID", id), *resp = NULL;
    int rc = ctl_etcd_post(&h->etcd, "/v3/lease/revoke", req, &resp, timeout_ms);
    json_decref(req);
    json_decref(resp);
    bool gone = rc == 0 || strstr(h->etcd.err, "lease not found") != NULL;
    if (gone) {
        sl_log(SL_LOG_INFO, "ha", "member=%s revoked lease %s, held before stepping down",
               h->cfg.name, id);
        h->prev_lease = 0;
    }
    return gone;
}

static void revoke_previous(ctl_ha_t *h) {
    const char *v = getenv(OLD_LEASE_ENV);
    h->prev_lease = v ? strtoll(v, NULL, 10) : 0;
    unsetenv(OLD_LEASE_ENV);
    if (h->prev_lease == 0)
        return;
    h->prev_lease_until = boot_us() + (int64_t)h->cfg.ttl_s * 1000000 + REVOKE_SLACK_US;
    if (!revoke_try(h, 1000))
        sl_log(SL_LOG_INFO, "ha", "member=%s: lease %" PRId64 ", held before stepping down, not "
               "revoked yet (%s): tried again every tick", h->cfg.name, h->prev_lease,
               h->etcd.err);
}

/* The standby tick's part: the old lease again, until it is gone or
 * has surely expired by itself. */
static void revoke_again(ctl_ha_t *h) {
    if (h->prev_lease == 0)
        return;
    if (boot_us() >= h->prev_lease_until) {
        h->prev_lease = 0;
        return;
    }
    (void)revoke_try(h, 500);
}

int ctl_ha_init(ctl_ha_t *h, struct event_base *base, const ctl_ha_config_t *cfg, char *err,
                size_t errlen) {
    *h = (ctl_ha_t){.cfg = *cfg, .base = base};
    h->etcd.fd = -1;
    h->info.view = view_cb;
    h->info.metrics = metrics_cb;
    h->info.view_ud = h;
    if (!ctl_store_repl_supported()) {
        snprintf(err, errlen, "--ha: this SQLite library has no pre-update hook "
                 "(SQLITE_ENABLE_PREUPDATE_HOOK), which HA mode needs");
        return -1;
    }
    if (ctl_etcd_init(&h->etcd, cfg->endpoints, err, errlen) < 0 ||
        ctl_etcdg_open(&h->grpc, cfg->endpoints, err, errlen) < 0)
        return -1;
    revoke_previous(h);
    /* etcd out of reach (a partition, a member restarting) is no reason to
     * exit: the member stands by and the tick tries again; it campaigns
     * only with a lease and a file brought to a state of the record. */
    if (grant(h, err, errlen) < 0) {
        sl_log(SL_LOG_WARN, "ha", "member=%s: %s; standing by until etcd answers", cfg->name, err);
        h->lease_id = 0;
    }
    return 0;
}

void ctl_ha_fini(ctl_ha_t *h) {
    if (h->etcd.n == 0)
        return; /* never initialised (no --ha): its descriptors are not ours */
    if (h->tick_ev)
        event_free(h->tick_ev);
    h->tick_ev = NULL;
    ctl_standby_close(&h->standby);
    if (h->lease_id && h->etcd.n) {
        char id[32];
        snprintf(id, sizeof id, "%" PRId64, h->lease_id);
        json_t *req = json_pack("{s:s}", "ID", id), *resp = NULL;
        (void)ctl_etcd_post(&h->etcd, "/v3/lease/revoke", req, &resp, 1000);
        json_decref(req);
        json_decref(resp);
    }
    ctl_replica_close(h->rep);
    h->rep = NULL;
    ctl_logw_close(h->logw);
    h->logw = NULL;
    ctl_ha_packer_free(h->packer);
    h->packer = NULL;
    ctl_etcdg_free(h->grpc);
    h->grpc = NULL;
    ctl_etcd_fini(&h->etcd);
}

int ctl_ha_standby(ctl_ha_t *h, char *err, size_t errlen) {
    if (h->lease_id == 0 || sync_base(h, err, errlen) < 0) {
        if (h->lease_id != 0)
            sl_log(SL_LOG_WARN, "ha", "member=%s: %s; standing by until etcd answers",
                   h->cfg.name, err);
        if (open_replica(h, err, errlen) < 0)
            return -1;
    } else {
        h->based = true;
    }
    if (ctl_standby_open(&h->standby, h->base, h->cfg.listen, h->cfg.agent_listen, &h->info, err,
                         errlen) < 0)
        return -1;
    sl_log(SL_LOG_INFO, "ha", "member=%s standing by: state=%s index=%" PRIu64 " listen=%s",
           h->cfg.name, h->cfg.state, h->applied, h->cfg.listen);
    h->tick_ev = event_new(h->base, -1, EV_PERSIST, standby_tick, h);
    struct timeval tv = {0, TICK_US};
    event_add(h->tick_ev, &tv);
    standby_tick(-1, 0, h);
    if (!h->leader)
        event_base_dispatch(h->base);
    event_free(h->tick_ev);
    h->tick_ev = NULL;
    ctl_standby_close(&h->standby);
    ctl_replica_close(h->rep);
    h->rep = NULL;
    if (!h->leader) {
        snprintf(err, errlen, "stopped before leading");
        return -1;
    }
    sl_log(SL_LOG_INFO, "ha", "member=%s leads: epoch=%" PRIu64 " index=%" PRIu64, h->cfg.name,
           h->epoch, h->applied);
    return 0;
}

/* ---- the leader ---- */

/* The store's ship hook: the entry (its digest, then its changes) to the
 * log writer, which writes it without the loop waiting; what it explains
 * leaves once the writer says it is durable (durable_cb). */
static int ship(void *ud, const void *changes, size_t len, uint64_t index, uint64_t digest) {
    ctl_ha_t *h = ud;
    ctl_ha_check(h);
    size_t n = 0;
    unsigned char *v = ctl_ha_entry_pack(&h->packer, changes, len, digest, &n);
    if (v == NULL) {
        sl_log(SL_LOG_ERROR, "ha", "log entry %" PRIu64 ": %zu bytes of changes cannot be "
               "compressed", index, len);
        return -1;
    }
    ctl_logw_append(h->logw, index, v, n); /* takes v */
    h->applied = index;
    return 0;
}

/* The store's wait hook (ctl_store_commit): every entry up to index in etcd. */
static void wait_durable(void *ud, uint64_t index) {
    ctl_ha_t *h = ud;
    ctl_logw_sync(h->logw, index);
}

static void durable_cb(void *ud, uint64_t index) {
    ctl_ha_t *h = ud;
    ctl_store_repl_durable(h->store, index);
    ctl_loop_kick(h->loop);
}

static void fail_cb(void *ud, const char *why) {
    ctl_ha_t *h = ud;
    h->ship_failures++;
    ctl_ha_step_down(h, why);
}

static int64_t left_cb(void *ud) {
    const ctl_ha_t *h = ud;
    return (h->deadline_us - boot_us()) / 1000;
}

static void observe_cb(void *ud, int64_t us) {
    ctl_ha_t *h = ud;
    ctl_hist_observe(&h->commit, us);
}

/* The leader's file as the current snapshot (see snapshot.h). 0 or -1. */
static int snapshot_put(ctl_ha_t *h, char *err, size_t errlen) {
    void *img = NULL;
    size_t len = 0;
    if (ctl_store_repl_serialize(h->store, &img, &len, err, errlen) < 0)
        return -1;
    /* serialize committed what was open and waited for it to be durable */
    uint64_t index = h->applied;
    int rc = ctl_ha_snapshot_write(&h->etcd, h->cfg.prefix, h->epoch, img, len, index,
                                   ctl_store_repl_digest(h->store), h->have_snapshot,
                                   h->snap_index, err, errlen);
    ctl_store_repl_free(img);
    if (rc == 0) {
        h->have_snapshot = true;
        h->snap_index = index;
    }
    return rc;
}

static void leader_tick(evutil_socket_t fd, short what, void *ud) {
    (void)fd;
    (void)what;
    ctl_ha_t *h = ud;
    ctl_ha_check(h);
    int64_t now = boot_us();
    if (now - h->last_keepalive_us >= (int64_t)h->cfg.ttl_s * 1000000 / 3) {
        if (keepalive(h) == -2)
            ctl_ha_step_down(h, "the lease expired");
        ctl_ha_check(h);
    }
    ctl_logw_tick(h->logw);
    if (now - h->last_member_us >= 1000000)
        put_member(h);
    if (h->cfg.snapshot_every && h->applied >= h->snap_index + h->cfg.snapshot_every) {
        char err[512];
        if (snapshot_put(h, err, sizeof err) < 0)
            sl_log(SL_LOG_WARN, "ha", "snapshot: %s", err);
    }
}

int ctl_ha_lead(ctl_ha_t *h, ctl_store_t *s, struct ctl_loop *loop, char *err, size_t errlen) {
    h->store = s;
    h->loop = loop;
    if (ctl_store_repl_enable(s, ship, wait_durable, h, err, errlen) < 0)
        return -1;
    h->applied = ctl_store_repl_index(s);
    /* Before the first commit that ships: nothing was written since the
     * enable, which committed what was open without shipping it. */
    ctl_logw_hooks_t hooks = {.durable = durable_cb, .fail = fail_cb, .left_ms = left_cb,
                              .observe = observe_cb, .ud = h};
    if (ctl_logw_open(&h->logw, h->base, h->cfg.endpoints, h->cfg.prefix, h->epoch,
                      h->cfg.pipeline, h->applied, &hooks, err, errlen) < 0)
        return -1;
    if (!h->have_snapshot && snapshot_put(h, err, errlen) < 0)
        return -1;
    h->tick_ev = event_new(h->base, -1, EV_PERSIST, leader_tick, h);
    struct timeval tv = {0, TICK_US};
    event_add(h->tick_ev, &tv);
    put_member(h);
    return 0;
}

void ctl_ha_check(ctl_ha_t *h) {
    if (h->leader && boot_us() >= h->deadline_us)
        ctl_ha_step_down(h, "the lease could not be renewed in time");
}

void ctl_ha_step_down(ctl_ha_t *h, const char *why) {
    sl_log(SL_LOG_ERROR, "ha", "member=%s epoch=%" PRIu64 " steps down: %s; nothing more is "
           "written or sent; restarting as a follower", h->cfg.name, h->epoch, why);
    /* Every socket and the database closed unflushed: the open SQLite
     * transaction is rolled back by the next open. */
    for (int fd = 3; fd < 65536; fd++)
        (void)close(fd);
    if (h->lease_id != 0) {
        char id[32];
        snprintf(id, sizeof id, "%" PRId64, h->lease_id);
        setenv(OLD_LEASE_ENV, id, 1);
    }
    execv("/proc/self/exe", h->cfg.argv);
    _exit(3);
}

/* ---- the view and /metrics ---- */

char *ctl_ha_view(ctl_ha_t *h) {
    char from[512], end[512];
    key(h, from, sizeof from, "members/");
    key(h, end, sizeof end, "members0");
    json_t *req = json_pack("{s:o,s:o}", "key", ctl_etcd_key(from), "range_end",
                            ctl_etcd_key(end)), *resp = NULL;
    int rc = ctl_etcd_post(&h->etcd, "/v3/kv/range", req, &resp, 1000);
    json_decref(req);
    json_t *members = json_array();
    uint64_t leader_applied = h->leader ? h->applied : 0;
    size_t i;
    json_t *kv;
    json_array_foreach(rc == 0 ? json_object_get(resp, "kvs") : NULL, i, kv) {
        size_t n = 0;
        char *val = ctl_etcd_unb64(json_string_value(json_object_get(kv, "value")) ?: "", &n);
        json_t *m = val ? json_loadb(val, n, 0, NULL) : NULL;
        sl_free(val);
        if (!json_is_object(m)) {
            json_decref(m);
            continue;
        }
        const char *name = json_string_value(json_object_get(m, "name"));
        bool lead = name && strcmp(name, h->leader_name) == 0;
        json_object_set_new(m, "role", json_string(lead ? "leader" : "follower"));
        if (lead && !h->leader)
            leader_applied = (uint64_t)json_integer_value(json_object_get(m, "applied"));
        json_array_append_new(members, m);
    }
    json_array_foreach(members, i, kv) {
        uint64_t a = (uint64_t)json_integer_value(json_object_get(kv, "applied"));
        json_object_set_new(kv, "lag", json_integer(leader_applied > a ? (json_int_t)(leader_applied - a) : 0));
    }
    json_t *v = json_pack("{s:s,s:s,s:s,s:I,s:I,s:I,s:o}", "mode", "ha", "self", h->cfg.name,
                          "leader", h->leader_name, "epoch", (json_int_t)h->epoch, "applied",
                          (json_int_t)h->applied, "snapshot_index", (json_int_t)h->snap_index,
                          "members", members);
    if (rc < 0)
        json_object_set_new(v, "error", json_string(h->etcd.err));
    json_decref(resp);
    char *out = json_dumps(v, JSON_COMPACT);
    json_decref(v);
    return out;
}
