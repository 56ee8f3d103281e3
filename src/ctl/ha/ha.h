/*
 * ha.h - a controller as one member of a highly available group on etcd
 * (docs/ha.md): the election, the replicated log of group commits, the
 * standby's warm copy, and the leader's self-fencing.
 *
 * Keys, under the prefix (default "/sluice/"):
 *   leader             {"name","api","agent"} with the leader's lease; its
 *                      create_revision is the epoch (only grows)
 *   members/NAME       each member's {"name","api","agent","role","applied"},
 *                      with its lease, rewritten every second
 *   log/%020u          the changes of one group commit (store/changes.h)
 *   snapshot           {"index","chunks","bytes"}: the last snapshot
 *   snap/%020u/%06u    its chunks (768 KiB each)
 *
 * Log entries are written by etcd transactions whose compare is "leader's
 * create_revision == my epoch" and "this log key does not exist": a
 * deposed leader's write fails in etcd itself, and two writers can never
 * fill one index. An entry's value is the log's digest after it (8 bytes,
 * big-endian, repl.h) then its changes. The loop does not wait for the
 * transaction (logw.h: several in flight); a reply or launch of a group
 * commit leaves only after it succeeded (store.h, ctl_store_durable).
 * The leader's file may so hold entries that never reached etcd when it
 * dies or steps down: at its next start the digest shows it (the file's
 * against the record's at the same index) and the file is replaced by
 * the snapshot, then the log.
 *
 * Fencing by time: the leader's lease was renewed at the send time t of
 * its last successful keepalive, so etcd cannot expire it before t + TTL
 * (its clock starts later). The leader stops at t + TTL - margin on its
 * own CLOCK_BOOTTIME (which counts a suspend); this assumes the clocks of the leader and of
 * etcd's leader run at rates that differ by less than margin / TTL (the
 * same assumption as the agents' fence lease, docs/protocol.md). Stopping
 * means: no commit, reply or agent message leaves; the process re-executes
 * itself and comes back as a follower.
 */
#ifndef SLUICE_CTL_HA_HA_H
#define SLUICE_CTL_HA_HA_H

#include <stdbool.h>
#include <stdint.h>

#include "base/obs.h"
#include "ha/etcd.h"
#include "ha/etcdg.h"
#include "ha/logw.h"
#include "ha/standby.h"
#include "store/repl.h"

struct event_base;
struct event;
struct ctl_loop;

/* Log transactions in flight by default (--commit-pipeline). */
#define CTL_HA_PIPELINE_DEFAULT 4

typedef struct ctl_ha_config {
    const char *endpoints;    /* etcd: "http://H:P,..." */
    const char *name;         /* this member's name */
    const char *api_url;      /* its advertised API URL, "http://H:P" */
    const char *agent_addr;   /* its advertised agent address, "H:P" */
    const char *prefix;       /* key prefix, "/sluice/" */
    const char *state;        /* the local SQLite file */
    const char *listen, *agent_listen; /* the ports a follower answers on */
    int ttl_s;                /* lease TTL, 2..60 */
    uint64_t snapshot_every;  /* log entries between snapshots */
    int pipeline;             /* log transactions in flight, 1..CTL_LOGW_DEPTH_MAX */
    char **argv;              /* to re-execute on stepping down */
} ctl_ha_config_t;

typedef struct ctl_ha {
    ctl_ha_config_t cfg;
    ctl_etcd_t etcd;           /* the JSON gateway: lease, election, snapshots */
    ctl_etcdg_t *grpc;         /* gRPC: a follower's reads of the log */
    struct event_base *base;
    struct event *tick_ev;
    int64_t lease_id;
    int64_t prev_lease;        /* held before stepping down, not yet revoked (0: none) */
    int64_t prev_lease_until;  /* given up then: it has expired by itself */
    int64_t renewed_us;   /* CLOCK_BOOTTIME, as every time here: send time of the last successful keepalive */
    int64_t deadline_us;  /* stop by then (renewed + TTL - margin) */
    int64_t last_keepalive_us; /* when the last keepalive was tried */
    int64_t last_member_us;    /* when members/NAME was last written */
    bool leader;
    uint64_t epoch;
    char leader_name[128];
    uint64_t applied;          /* the local file's log index */
    uint64_t behind;           /* a follower: entries in etcd not yet applied */
    uint64_t fallbacks;        /* a follower: snapshots installed for a compacted entry */
    uint64_t snap_index;       /* the last snapshot's index (0: none) */
    bool have_snapshot;
    bool based;                /* the file was brought to a state of the record once */
    ctl_replica_t *rep;        /* a follower's copy (NULL on the leader) */
    ctl_store_t *store;        /* the leader's store */
    ctl_logw_t *logw;          /* the leader's log writer */
    struct ctl_ha_packer *packer; /* its entries' compressor (entry.h) */
    struct ctl_loop *loop;     /* kicked when entries become durable */
    uint64_t discards;         /* files found to hold entries the record does not */
    ctl_standby_t standby;
    ctl_standby_info_t info;
    /* /metrics */
    uint64_t leader_changes;   /* leaders seen by this member */
    ctl_hist_t commit;         /* etcd transaction time of each group commit */
    uint64_t ship_failures;
} ctl_ha_t;

/* Connects to etcd and takes this member's lease; first revokes the one
 * this process held before it stepped down (ctl_ha_step_down passes it
 * on). etcd out of reach is not an error: the lease is then taken by the
 * standby's tick, and no campaign is made without one. 0, or -1 with err
 * (the endpoints, or SQLite without the pre-update hook). */
int ctl_ha_init(ctl_ha_t *h, struct event_base *base, const ctl_ha_config_t *cfg, char *err,
                size_t errlen);
/* Frees what init made; the lease is revoked (a clean stop hands the
 * leadership over at once). Accepts a zeroed h. */
void ctl_ha_fini(ctl_ha_t *h);
/* Stands by until this member leads: the local file is brought up to
 * date (a snapshot installed when it is missing, never synced or too
 * old; then the log applied as it grows), the follower's ports answer
 * (standby.h), and every 100 ms the leadership is tried. Runs base's
 * loop; returns 0 once leader with the file at the log's end (the
 * follower's ports closed), or -1 with err. */
int ctl_ha_standby(ctl_ha_t *h, char *err, size_t errlen);
/* The leader's start on its opened store s: a snapshot into etcd if there
 * is none (the first leader), shipping on through the log writer (loop is
 * kicked as entries become durable), the keepalive and fence timer. 0 or
 * -1 with err. */
int ctl_ha_lead(ctl_ha_t *h, ctl_store_t *s, struct ctl_loop *loop, char *err, size_t errlen);
/* The gate before anything leaves the leader: returns when the lease is
 * surely held; else steps down (does not return). O(1). */
void ctl_ha_check(ctl_ha_t *h);
/* Stops at once and comes back as a follower: nothing more is written or
 * sent (every descriptor closed), then the program re-executes itself. */
void ctl_ha_step_down(ctl_ha_t *h, const char *why) __attribute__((noreturn));
/* GET /v1/controllers' body: members, leader, epoch, applied index and
 * lag (one etcd read). A new string (free()). */
char *ctl_ha_view(ctl_ha_t *h);

#endif
