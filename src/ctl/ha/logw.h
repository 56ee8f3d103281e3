/*
 * logw.h - the leader's log writer: the group commits' log entries written
 * to etcd in index order, with several transactions in flight (a
 * pipelined commit, docs/ha.md "Throughput").
 *
 * The loop does not wait for etcd: a group commit's entry is appended
 * here and the loop goes on; what the entry explains (replies, launches,
 * events) waits for the durable callback (store.h, ctl_store_durable).
 * Entries appended while every connection has a transaction in flight go
 * together in the next transaction that starts (up to CTL_LOGW_BATCH).
 *
 * Every transaction of entries F..L compares the leader key's
 * create_revision with our epoch (a deposed leader's write fails in etcd
 * itself) and that log/F does not exist (two writers never fill one
 * index). Transactions on different connections may land in etcd out of
 * order, so the log can have a gap for a moment (F+1 written, F still on
 * its way): the durable mark only moves over entries without a gap
 * before them, so nothing of F+1 leaves before F is in etcd; followers
 * apply up to a gap and wait (ha.c); and a new leader deletes what lies
 * after a gap that its predecessor left for good (those entries were
 * never acknowledged). A refusal that shows log/F holding exactly our
 * entry is an earlier try that landed (a member that answered too
 * late): written.
 *
 * A transaction not answered within CTL_ETCD_MIN_TRY_MS, or whose
 * connection fails, is retried by a blocking call that tries every member
 * within the lease's time left; when that fails too, or etcd refuses the
 * entry, the fail callback steps down (it does not return).
 */
#ifndef SLUICE_CTL_HA_LOGW_H
#define SLUICE_CTL_HA_LOGW_H

#include <stddef.h>
#include <stdint.h>

struct event_base;

/* Connections, each with one transaction in flight at most. */
#define CTL_LOGW_DEPTH_MAX 8
/* Entries in one transaction at most (etcd's --max-txn-ops is 128), and
 * their base64 bytes (its request limit is 1.5 MiB); a single larger
 * entry goes alone. */
#define CTL_LOGW_BATCH 64
#define CTL_LOGW_BATCH_BYTES (1024 * 1024)

typedef struct ctl_logw ctl_logw_t;

typedef struct ctl_logw_hooks {
    void (*durable)(void *ud, uint64_t index);  /* every entry up to index is in etcd */
    void (*fail)(void *ud, const char *why);    /* steps down: must not return */
    int64_t (*left_ms)(void *ud);               /* time left before the lease's deadline */
    void (*observe)(void *ud, int64_t us);      /* one transaction's time, sent to answered */
    void *ud;
} ctl_logw_hooks_t;

typedef struct ctl_logw_stats {
    uint64_t txns;       /* transactions that succeeded */
    uint64_t entries;    /* entries they wrote */
    uint64_t retries;    /* blocking retries (no answer in time, a failed connection) */
} ctl_logw_stats_t;

/* A writer of the log under prefix for the leader of epoch, with depth
 * connections (1..CTL_LOGW_DEPTH_MAX) to endpoints (etcd.h's form), on
 * base; durable is the last entry already in etcd, the next appended is
 * durable + 1. *out NULL on failure: -1 with err (the endpoints). */
int ctl_logw_open(ctl_logw_t **out, struct event_base *base, const char *endpoints,
                  const char *prefix, uint64_t epoch, int depth, uint64_t durable,
                  const ctl_logw_hooks_t *hooks, char *err, size_t errlen);
/* Closes the connections and frees; entries not yet durable are dropped
 * (never acknowledged). Accepts NULL. */
void ctl_logw_close(ctl_logw_t *w);
/* Appends entry index (the last appended + 1) of len bytes at val, an
 * sl_xmalloc'd buffer the writer takes (and frees once the entry is
 * durable), and sends what waits when a connection is free. */
void ctl_logw_append(ctl_logw_t *w, uint64_t index, void *val, size_t len);
/* Returns once every entry up to index is durable (the durable callback
 * called), blocking on etcd's answers; or steps down. */
void ctl_logw_sync(ctl_logw_t *w, uint64_t index);
/* The leader's tick (every 100 ms): a transaction unanswered for
 * CTL_ETCD_MIN_TRY_MS is retried on the next member. */
void ctl_logw_tick(ctl_logw_t *w);
/* The last entry known to be in etcd. */
uint64_t ctl_logw_durable(const ctl_logw_t *w);
void ctl_logw_stats(const ctl_logw_t *w, ctl_logw_stats_t *out);

#endif
