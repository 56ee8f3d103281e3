/*
 * entry.h - a log entry's value, and one read of the log with the
 * snapshot's index (docs/ha.md, the keys).
 *
 * A value is the log's digest after the entry (8 bytes, big-endian,
 * store/repl.h), the length of its changes (4 bytes, big-endian), then
 * the changes as one zlib stream: compressed (level 1) from 2 KiB, where
 * a group commit's changes shrink about 4 times (etcd's work and store
 * grow with the bytes it writes and serves), stored (level 0) below,
 * where compressing costs the leader more than it saves (entry.c).
 */
#ifndef SLUICE_CTL_HA_ENTRY_H
#define SLUICE_CTL_HA_ENTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ha/etcdg.h"

/* The leader's compressors, made at its first entries. */
typedef struct ctl_ha_packer ctl_ha_packer_t;

/* The value of an entry of changes (len bytes) and digest as a new
 * buffer (sl_free) of *n bytes; NULL when it cannot be made (over 256
 * MiB). *pk is the compressor (made when NULL). */
unsigned char *ctl_ha_entry_pack(ctl_ha_packer_t **pk, const void *changes, size_t len,
                                 uint64_t digest, size_t *n);
void ctl_ha_packer_free(ctl_ha_packer_t *pk);
/* The digest of value v (n bytes). false: it is not an entry's. */
bool ctl_ha_entry_digest(const unsigned char *v, size_t n, uint64_t *digest);
/* The changes of value v (n bytes) as a new buffer (sl_free) of *len
 * bytes, with its digest; NULL when it is not an entry's. */
void *ctl_ha_entry_unpack(const unsigned char *v, size_t n, uint64_t *digest, size_t *len);

/* One read of the log from an index and of the snapshot's meta, in one
 * etcd transaction (one revision, so the two agree), serializable, over
 * gRPC: the entries point into the answer (buf). */
typedef struct ctl_ha_log_read {
    void *buf;
    ctl_etcdg_txnr_t t;
    const ctl_etcdg_range_t *log; /* the entries read, at most 256 */
    bool has_snap;                /* the meta key exists and names an index */
    uint64_t snap;                /* its index */
} ctl_ha_log_read_t;
/* Reads the entries of the log under prefix from index from, and the
 * snapshot's meta, within timeout_ms. 0, or -1 with err. */
int ctl_ha_log_read(ctl_etcdg_t *g, const char *prefix, uint64_t from, int timeout_ms,
                    ctl_ha_log_read_t *r, char *err, size_t errlen);
void ctl_ha_log_read_free(ctl_ha_log_read_t *r);

#endif
