/*
 * snapshot.h - snapshots of the record in etcd, so that etcd holds
 * bounded data and a member with no usable file can start (docs/ha.md).
 *
 * A snapshot is the leader's whole SQLite file at log index I, in chunks
 * of 768 KiB under PREFIX snap/%020u/%06u, each put in its own
 * transaction guarded by the leader key's create_revision; then PREFIX
 * snapshot = {"index":I,"chunks":N,"bytes":B,"digest":"16 hex digits"}
 * (the log's digest at I, repl.h; guarded the same way)
 * makes it the current one; then the previous snapshot's chunks and the
 * log entries up to I are deleted and etcd's history compacted. A reader
 * that finds the chunks of a snapshot gone (replaced meanwhile) reads the
 * meta again.
 */
#ifndef SLUICE_CTL_HA_SNAPSHOT_H
#define SLUICE_CTL_HA_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ha/etcd.h"

#define CTL_HA_CHUNK_BYTES (768 * 1024)

typedef struct ctl_ha_snapmeta {
    uint64_t index;
    uint64_t chunks;
    uint64_t bytes;
    uint64_t digest;   /* the log's digest at index (repl.h) */
    bool has_digest;   /* false: a snapshot written before digests */
} ctl_ha_snapmeta_t;

/* The current snapshot's meta: 1 with *m, 0 when there is none, -1 (the
 * reason in e->err). */
int ctl_ha_snapshot_meta(ctl_etcd_t *e, const char *prefix, ctl_ha_snapmeta_t *m);
/* Reads snapshot m's chunks and installs them at path (repl.h's
 * ctl_replica_install). 0, or -1 with err. O(snapshot size). */
int ctl_ha_snapshot_fetch(ctl_etcd_t *e, const char *prefix, const ctl_ha_snapmeta_t *m,
                          const char *path, char *err, size_t errlen);
/* Writes img (len bytes, the file at log index index, whose digest is
 * digest) as the current
 * snapshot, guarded by epoch, then drops the snapshot of old_index (when
 * old_valid) and the log entries up to index, and compacts etcd's
 * history. 0, or -1 with err (the previous snapshot stays current). */
int ctl_ha_snapshot_write(ctl_etcd_t *e, const char *prefix, uint64_t epoch, const void *img,
                          size_t len, uint64_t index, uint64_t digest, bool old_valid,
                          uint64_t old_index, char *err, size_t errlen);

#endif
