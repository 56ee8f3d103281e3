/*
 * entry.c - a log entry's value and one read of the log (entry.h).
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

#include "ha/entry.h"

#include "sluice/alloc.h"

#define ENTRY_HEAD 12
#define ENTRY_MAX (256u << 20)

/* Changes under this many bytes are stored, not compressed (zlib level
 * 0): level 1 costs about 60,000 instructions a call whatever the size
 * (its Huffman trees), more than the leader spends on the rest of an
 * entry of a few rows, and etcd's cost for the bytes it would save did
 * not show in the throughput (bench/RESULTS.md). Either way the value is
 * a zlib stream that uncompress reads. */
#define ENTRY_STORE_BELOW 2048

/* The two compressors, made once each: a 4 KiB window and 2,048 hash
 * chains (the defaults, 32 KiB and 32,768, cost a 64 KiB clear at every
 * deflateReset). A row repeats much of the one before it, so the small
 * window loses little. */
struct ctl_ha_packer {
    z_stream z[2]; /* level 0, level 1 */
    bool made[2];
};

unsigned char *ctl_ha_entry_pack(ctl_ha_packer_t **pk, const void *changes, size_t len,
                                 uint64_t digest, size_t *n) {
    if (*pk == NULL)
        *pk = sl_xcalloc(1, sizeof **pk);
    int level = len >= ENTRY_STORE_BELOW;
    z_stream *zs = &(*pk)->z[level];
    if (!(*pk)->made[level]) {
        if (deflateInit2(zs, level, Z_DEFLATED, 12, 4, Z_DEFAULT_STRATEGY) != Z_OK)
            return NULL;
        (*pk)->made[level] = true;
    }
    uLong zn = deflateBound(zs, (uLong)len);
    unsigned char *v = sl_xmalloc(ENTRY_HEAD + zn);
    for (int i = 0; i < 8; i++)
        v[i] = (unsigned char)(digest >> (56 - 8 * i));
    for (int i = 0; i < 4; i++)
        v[8 + i] = (unsigned char)(len >> (24 - 8 * i));
    zs->next_in = (Bytef *)changes;
    zs->avail_in = (uInt)len;
    zs->next_out = v + ENTRY_HEAD;
    zs->avail_out = (uInt)zn;
    int rc = len > ENTRY_MAX ? Z_BUF_ERROR : deflate(zs, Z_FINISH);
    *n = ENTRY_HEAD + zs->total_out;
    deflateReset(zs);
    if (rc != Z_STREAM_END) {
        sl_free(v);
        return NULL;
    }
    return v;
}

bool ctl_ha_entry_digest(const unsigned char *v, size_t n, uint64_t *digest) {
    if (n < ENTRY_HEAD)
        return false;
    *digest = 0;
    for (int i = 0; i < 8; i++)
        *digest = *digest << 8 | v[i];
    return true;
}

void *ctl_ha_entry_unpack(const unsigned char *v, size_t n, uint64_t *digest, size_t *len) {
    if (!ctl_ha_entry_digest(v, n, digest))
        return NULL;
    uLongf raw = (uLongf)v[8] << 24 | (uLongf)v[9] << 16 | (uLongf)v[10] << 8 | v[11];
    if (raw > ENTRY_MAX)
        return NULL;
    unsigned char *out = sl_xmalloc(raw ? raw : 1);
    uLongf got = raw;
    if (uncompress(out, &got, v + ENTRY_HEAD, (uLong)(n - ENTRY_HEAD)) != Z_OK || got != raw) {
        sl_free(out);
        return NULL;
    }
    *len = raw;
    return out;
}

void ctl_ha_packer_free(ctl_ha_packer_t *pk) {
    if (pk == NULL)
        return;
    for (int i = 0; i < 2; i++)
        if (pk->made[i])
            deflateEnd(&pk->z[i]);
    sl_free(pk);
}

void ctl_ha_log_read_free(ctl_ha_log_read_t *r) {
    ctl_etcdg_txnr_free(&r->t);
    sl_free(r->buf);
}

int ctl_ha_log_read(ctl_etcdg_t *g, const char *prefix, uint64_t from, int timeout_ms,
                    ctl_ha_log_read_t *r, char *err, size_t errlen) {
    *r = (ctl_ha_log_read_t){0};
    char fk[600], end[600], sk[600];
    snprintf(fk, sizeof fk, "%slog/%020" PRIu64, prefix, from);
    snprintf(end, sizeof end, "%slog0", prefix);
    snprintf(sk, sizeof sk, "%ssnapshot", prefix);
    ctl_pb_t txn = {0}, range = {0}, op = {0};
    ctl_pb_bytes(&range, CTL_PB_RANGE_KEY, fk, strlen(fk));
    ctl_pb_bytes(&range, CTL_PB_RANGE_END, end, strlen(end));
    ctl_pb_varint(&range, CTL_PB_RANGE_LIMIT, 256);
    ctl_pb_varint(&range, CTL_PB_RANGE_SERIALIZABLE, 1);
    ctl_pb_msg(&op, CTL_PB_OP_RANGE, &range);
    ctl_pb_msg(&txn, CTL_PB_TXN_SUCCESS, &op);
    range.len = op.len = 0;
    ctl_pb_bytes(&range, CTL_PB_RANGE_KEY, sk, strlen(sk));
    ctl_pb_varint(&range, CTL_PB_RANGE_SERIALIZABLE, 1);
    ctl_pb_msg(&op, CTL_PB_OP_RANGE, &range);
    ctl_pb_msg(&txn, CTL_PB_TXN_SUCCESS, &op);
    ctl_pb_free(&range);
    ctl_pb_free(&op);
    size_t len = 0;
    int rc = ctl_etcdg_call(g, txn.p, txn.len, &r->buf, &len, timeout_ms);
    ctl_pb_free(&txn);
    if (rc < 0) {
        snprintf(err, errlen, "etcd: log: %s", ctl_etcdg_err(g));
        return -1;
    }
    if (ctl_etcdg_txnr_read(r->buf, len, &r->t) < 0 || !r->t.succeeded || r->t.nranges != 2) {
        snprintf(err, errlen, "etcd: log: an answer without its two ranges");
        ctl_ha_log_read_free(r);
        *r = (ctl_ha_log_read_t){0};
        return -1;
    }
    r->log = &r->t.ranges[0];
    if (r->t.ranges[1].nkvs > 0) {
        const ctl_etcdg_kv_t *kv = &r->t.ranges[1].kvs[0];
        json_t *j = json_loadb((const char *)kv->value, kv->vlen, 0, NULL);
        r->has_snap = json_is_integer(json_object_get(j, "index"));
        r->snap = r->has_snap ? (uint64_t)json_integer_value(json_object_get(j, "index")) : 0;
        json_decref(j);
    }
    return 0;
}


