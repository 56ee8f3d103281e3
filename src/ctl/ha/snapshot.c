/*
 * snapshot.c - the record's snapshots in etcd (snapshot.h).
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ha/snapshot.h"
#include "store/repl.h"

#include "log.h"
#include "sluice/alloc.h"

#define CALL_MS 5000

/* One key's value (decoded) as a new buffer, or NULL with *found false. */
static int get_one(ctl_etcd_t *e, const char *k, void **val, size_t *n, bool *found) {
    json_t *req = json_pack("{s:o}", "key", ctl_etcd_key(k)), *resp = NULL;
    int rc = ctl_etcd_post(e, "/v3/kv/range", req, &resp, CALL_MS);
    json_decref(req);
    *found = false;
    *val = NULL;
    if (rc < 0)
        return -1;
    json_t *kv = json_array_get(json_object_get(resp, "kvs"), 0);
    if (kv) {
        *val = ctl_etcd_unb64(json_string_value(json_object_get(kv, "value")) ?: "", n);
        *found = *val != NULL;
    }
    json_decref(resp);
    return 0;
}

int ctl_ha_snapshot_meta(ctl_etcd_t *e, const char *prefix, ctl_ha_snapmeta_t *m) {
    char k[512];
    snprintf(k, sizeof k, "%ssnapshot", prefix);
    void *val;
    size_t n = 0;
    bool found;
    if (get_one(e, k, &val, &n, &found) < 0)
        return -1;
    if (!found)
        return 0;
    json_t *j = json_loadb(val, n, 0, NULL);
    sl_free(val);
    *m = (ctl_ha_snapmeta_t){
        .index = (uint64_t)json_integer_value(json_object_get(j, "index")),
        .chunks = (uint64_t)json_integer_value(json_object_get(j, "chunks")),
        .bytes = (uint64_t)json_integer_value(json_object_get(j, "bytes")),
    };
    const char *d = json_string_value(json_object_get(j, "digest"));
    if (d && strlen(d) == 16) {
        m->digest = strtoull(d, NULL, 16);
        m->has_digest = true;
    }
    json_decref(j);
    return 1;
}

int ctl_ha_snapshot_fetch(ctl_etcd_t *e, const char *prefix, const ctl_ha_snapmeta_t *m,
                          const char *path, char *err, size_t errlen) {
    char *img = sl_xmalloc(m->bytes ? m->bytes : 1);
    size_t at = 0;
    int rc = -1;
    for (uint64_t c = 0; c < m->chunks; c++) {
        char k[512];
        snprintf(k, sizeof k, "%ssnap/%020" PRIu64 "/%06" PRIu64, prefix, m->index, c);
        void *val;
        size_t n = 0;
        bool found;
        if (get_one(e, k, &val, &n, &found) < 0) {
            snprintf(err, errlen, "etcd: %.200s: %s", k, e->err);
            goto out;
        }
        if (!found || at + n > m->bytes) {
            snprintf(err, errlen, "etcd: %.200s: %s", k, found ? "longer than its snapshot says" :
                     "missing (a newer snapshot replaced it: read again)");
            sl_free(val);
            goto out;
        }
        memcpy(img + at, val, n);
        at += n;
        sl_free(val);
    }
    if (at != m->bytes) {
        snprintf(err, errlen, "etcd: snapshot %" PRIu64 ": %zu of %" PRIu64 " bytes", m->index, at,
                 m->bytes);
        goto out;
    }
    rc = ctl_replica_install(path, img, at, err, errlen);
out:
    sl_free(img);
    return rc;
}

/* A put guarded by the leader key's create_revision. 0, or -1 (err). */
static int guarded_put(ctl_etcd_t *e, const char *prefix, uint64_t epoch, const char *k,
                       const void *val, size_t n, char *err, size_t errlen) {
    char lk[512], ep[32];
    snprintf(lk, sizeof lk, "%sleader", prefix);
    snprintf(ep, sizeof ep, "%" PRIu64, epoch);
    char *b = ctl_etcd_b64(val, n);
    json_t *req = json_pack("{s:[{s:o,s:s,s:s,s:s}],s:[{s:{s:o,s:s}}]}", "compare", "key",
                            ctl_etcd_key(lk), "target", "CREATE", "result", "EQUAL",
                            "create_revision", ep, "success", "request_put", "key",
                            ctl_etcd_key(k), "value", b), *resp = NULL;
    sl_free(b);
    int rc = ctl_etcd_post(e, "/v3/kv/txn", req, &resp, CALL_MS);
    json_decref(req);
    if (rc < 0) {
        snprintf(err, errlen, "etcd: %.200s: %s", k, e->err);
        return -1;
    }
    bool ok = json_is_true(json_object_get(resp, "succeeded"));
    json_decref(resp);
    if (!ok) {
        snprintf(err, errlen, "etcd: %s: refused: epoch %" PRIu64 " no longer leads", k, epoch);
        return -1;
    }
    return 0;
}

static void delete_range(ctl_etcd_t *e, const char *from, const char *end) {
    json_t *req = json_pack("{s:o,s:o}", "key", ctl_etcd_key(from), "range_end",
                            ctl_etcd_key(end)), *resp = NULL;
    if (ctl_etcd_post(e, "/v3/kv/deleterange", req, &resp, CALL_MS) < 0)
        sl_log(SL_LOG_WARN, "ha", "etcd: delete %s..%s: %s", from, end, e->err);
    json_decref(req);
    json_decref(resp);
}

int ctl_ha_snapshot_write(ctl_etcd_t *e, const char *prefix, uint64_t epoch, const void *img,
                          size_t len, uint64_t index, uint64_t digest, bool old_valid,
                          uint64_t old_index, char *err, size_t errlen) {
    char k[512], end[512];
    uint64_t chunks = (len + CTL_HA_CHUNK_BYTES - 1) / CTL_HA_CHUNK_BYTES;
    for (uint64_t c = 0; c < chunks; c++) {
        size_t off = (size_t)c * CTL_HA_CHUNK_BYTES;
        size_t n = len - off < CTL_HA_CHUNK_BYTES ? len - off : CTL_HA_CHUNK_BYTES;
        snprintf(k, sizeof k, "%ssnap/%020" PRIu64 "/%06" PRIu64, prefix, index, c);
        if (guarded_put(e, prefix, epoch, k, (const char *)img + off, n, err, errlen) < 0)
            return -1;
    }
    char meta[200];
    int mn = snprintf(meta, sizeof meta, "{\"index\":%" PRIu64 ",\"chunks\":%" PRIu64
                      ",\"bytes\":%zu,\"digest\":\"%016" PRIx64 "\"}", index, chunks, len,
                      digest);
    snprintf(k, sizeof k, "%ssnapshot", prefix);
    if (guarded_put(e, prefix, epoch, k, meta, (size_t)mn, err, errlen) < 0)
        return -1;
    if (old_valid && old_index != index) {
        snprintf(k, sizeof k, "%ssnap/%020" PRIu64 "/", prefix, old_index);
        snprintf(end, sizeof end, "%ssnap/%020" PRIu64 "0", prefix, old_index);
        delete_range(e, k, end);
    }
    /* The log up to the snapshot: PREFIX log/ .. PREFIX log/(index+1). */
    snprintf(k, sizeof k, "%slog/", prefix);
    snprintf(end, sizeof end, "%slog/%020" PRIu64, prefix, index + 1);
    delete_range(e, k, end);
    /* Compact etcd's history to now, so deleted entries free their space. */
    json_t *req = json_pack("{s:o}", "key", ctl_etcd_key(k)), *resp = NULL;
    if (ctl_etcd_post(e, "/v3/kv/range", req, &resp, CALL_MS) == 0) {
        int64_t rev = ctl_etcd_int(json_object_get(resp, "header"), "revision", 0);
        json_decref(resp);
        resp = NULL;
        json_t *creq = json_pack("{s:I}", "revision", (json_int_t)rev);
        if (rev > 0 && ctl_etcd_post(e, "/v3/kv/compaction", creq, &resp, CALL_MS) < 0)
            sl_log(SL_LOG_DEBUG, "ha", "etcd: compaction: %s", e->err);
        json_decref(creq);
    }
    json_decref(req);
    json_decref(resp);
    sl_log(SL_LOG_INFO, "ha", "snapshot index=%" PRIu64 " %.1f MiB in %" PRIu64 " chunks", index,
           (double)len / (1024.0 * 1024.0), chunks);
    return 0;
}
