/*
 * logw.c - the leader's log writer (logw.h): entries waiting in index
 * order, connections each with one transaction in flight, the durable
 * mark that only moves over a run of entries without a hole.
 *
 * Workload: one append per group commit (a few thousand a second under
 * load), each transaction a protobuf TxnRequest on etcd's gRPC port
 * (etcdg.h: no JSON or base64, no second hop inside etcd); the tick looks
 * at depth connections.
 */
#include <event2/event.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ha/logw.h"
#include "ha/etcd.h"
#include "ha/etcdg.h"

#include "base/loop.h"
#include "sluice/alloc.h"

typedef struct entry {
    unsigned char *v; /* the value */
    size_t len;
} entry_t;

typedef enum { SLOT_IDLE = 0, SLOT_SENT, SLOT_DONE } slot_state_t;

typedef struct slot {
    ctl_logw_t *w;
    ctl_etcdg_t *g;
    struct event *ev;      /* EV_READ|EV_PERSIST on its connection, ev_fd */
    int ev_fd;
    slot_state_t state;
    uint64_t first, last;  /* the entries of its transaction */
    ctl_pb_t req;          /* the TxnRequest, kept for a retry */
    int64_t sent_us;
} slot_t;

struct ctl_logw {
    struct event_base *base;
    ctl_logw_hooks_t hooks;
    char leader[600];      /* PREFIX "leader" */
    size_t leader_len;
    char prefix[512];
    uint64_t epoch;
    uint64_t durable;      /* every entry up to it is in etcd */
    uint64_t last;         /* the last appended */
    uint64_t next;         /* the first not yet in a transaction */
    entry_t *q;            /* entries durable + 1 .. last */
    size_t qcap;
    int depth;
    slot_t slots[CTL_LOGW_DEPTH_MAX];
    ctl_logw_stats_t stats;
    bool answered;         /* a blocking retry found a member that answers: */
    size_t answered_cur;   /* that member, where the next retry starts */
};

static entry_t *entry_at(ctl_logw_t *w, uint64_t index) {
    return &w->q[index - w->durable - 1];
}

/* ---- the request ---- */

static size_t log_key(const ctl_logw_t *w, uint64_t index, char *out, size_t n) {
    return (size_t)snprintf(out, n, "%slog/%020" PRIu64, w->prefix, index);
}

/* Compare{key, target CREATE, result EQUAL, create_revision rev}. */
static void put_compare(ctl_pb_t *txn, const char *key, size_t klen, uint64_t rev) {
    ctl_pb_t c = {0};
    ctl_pb_varint(&c, CTL_PB_CMP_RESULT, CTL_PB_CMP_EQUAL);
    ctl_pb_varint(&c, CTL_PB_CMP_TARGET, CTL_PB_CMP_TARGET_CREATE);
    ctl_pb_bytes(&c, CTL_PB_CMP_KEY, key, klen);
    ctl_pb_varint(&c, CTL_PB_CMP_CREATE_REVISION, rev);
    ctl_pb_msg(txn, CTL_PB_TXN_COMPARE, &c);
    ctl_pb_free(&c);
}

/* RequestOp{request_range{key}} as a failure op. */
static void put_range(ctl_pb_t *txn, const char *key, size_t klen) {
    ctl_pb_t r = {0}, op = {0};
    ctl_pb_bytes(&r, CTL_PB_RANGE_KEY, key, klen);
    ctl_pb_msg(&op, CTL_PB_OP_RANGE, &r);
    ctl_pb_msg(txn, CTL_PB_TXN_FAILURE, &op);
    ctl_pb_free(&r);
    ctl_pb_free(&op);
}

/* The transaction of entries first..last (see logw.h for its compares). */
static void build(ctl_logw_t *w, slot_t *sl, uint64_t first, uint64_t last) {
    ctl_pb_t *b = &sl->req;
    b->len = 0;
    char fk[600], k[600];
    size_t fkn = log_key(w, first, fk, sizeof fk);
    put_compare(b, w->leader, w->leader_len, w->epoch);
    put_compare(b, fk, fkn, 0);
    ctl_pb_t put = {0}, op = {0};
    for (uint64_t i = first; i <= last; i++) {
        entry_t *e = entry_at(w, i);
        put.len = op.len = 0;
        ctl_pb_bytes(&put, CTL_PB_PUT_KEY, k, log_key(w, i, k, sizeof k));
        ctl_pb_bytes(&put, CTL_PB_PUT_VALUE, e->v, e->len);
        ctl_pb_msg(&op, CTL_PB_OP_PUT, &put);
        ctl_pb_msg(b, CTL_PB_TXN_SUCCESS, &op);
    }
    ctl_pb_free(&put);
    ctl_pb_free(&op);
    put_range(b, fk, fkn);
    put_range(b, w->leader, w->leader_len);
    sl->first = first;
    sl->last = last;
}

/* ---- answers ---- */

static void fail(ctl_logw_t *w, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static void fail(ctl_logw_t *w, const char *fmt, ...) {
    char why[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    w->hooks.fail(w->hooks.ud, why);
    abort(); /* the hook does not return */
}

/* Judges a TxnResponse to sl's transaction: the slot becomes DONE, or the
 * leader steps down. */
static void judge(ctl_logw_t *w, slot_t *sl, const void *resp, size_t len) {
    ctl_etcdg_txnr_t t;
    if (ctl_etcdg_txnr_read(resp, len, &t) < 0)
        fail(w, "log entries %" PRIu64 "..%" PRIu64 ": etcd's answer is not a TxnResponse",
             sl->first, sl->last);
    if (t.succeeded) {
        ctl_etcdg_txnr_free(&t);
        sl->state = SLOT_DONE;
        return;
    }
    /* Refused: the failure's ranges, log/F then the leader key. */
    const ctl_etcdg_kv_t *entry = t.nranges == 2 && t.ranges[0].nkvs ? &t.ranges[0].kvs[0] : NULL;
    const ctl_etcdg_kv_t *leader = t.nranges == 2 && t.ranges[1].nkvs ? &t.ranges[1].kvs[0] : NULL;
    bool ours = leader && leader->create_revision == w->epoch;
    const entry_t *e = entry_at(w, sl->first);
    bool landed = ours && entry && entry->vlen == e->len && memcmp(entry->value, e->v, e->len) == 0;
    ctl_etcdg_txnr_free(&t);
    if (landed) {
        sl->state = SLOT_DONE; /* an earlier try landed */
        return;
    }
    if (!ours)
        fail(w, "log entries %" PRIu64 "..%" PRIu64 " refused by etcd: the leader key is not "
             "ours (epoch %" PRIu64 ")", sl->first, sl->last, w->epoch);
    if (entry)
        fail(w, "log entry %" PRIu64 " refused by etcd: another writer filled it", sl->first);
    fail(w, "log entries %" PRIu64 "..%" PRIu64 " refused by etcd for no reason it shows",
         sl->first, sl->last);
}

/* The blocking retry of sl's transaction on every member in turn (the
 * lease's time left); then the others use the member that answered. */
/* The connection's read event goes with it. */
static void close_conn(slot_t *sl) {
    if (sl->ev)
        event_free(sl->ev);
    sl->ev = NULL;
    ctl_etcdg_close(sl->g);
}

static void retry(ctl_logw_t *w, slot_t *sl) {
    w->stats.retries++;
    /* The member that did not answer is tried last: the retry starts at
     * the member the last retry found answering (the other transactions
     * that were in flight on the silent one time out one after the
     * other), else at the next one. */
    size_t bad = ctl_etcdg_cur(sl->g);
    close_conn(sl);
    ctl_etcdg_use(sl->g, w->answered && w->answered_cur != bad
                             ? w->answered_cur
                             : (bad + 1) % ctl_etcdg_members(sl->g));
    int64_t left = w->hooks.left_ms(w->hooks.ud);
    void *resp = NULL;
    size_t rlen = 0;
    if (ctl_etcdg_call(sl->g, sl->req.p, sl->req.len, &resp, &rlen, left < 1 ? 1 : (int)left) < 0)
        fail(w, "log entries %" PRIu64 "..%" PRIu64 " not written: %s", sl->first, sl->last,
             ctl_etcdg_err(sl->g));
    judge(w, sl, resp, rlen);
    sl_free(resp);
    size_t cur = ctl_etcdg_cur(sl->g);
    w->answered = true;
    w->answered_cur = cur;
    for (int i = 0; i < w->depth; i++)
        if (w->slots[i].state != SLOT_SENT && ctl_etcdg_cur(w->slots[i].g) != cur) {
            close_conn(&w->slots[i]);
            ctl_etcdg_use(w->slots[i].g, cur);
        }
}

/* Moves the durable mark over the transactions done in a row. */
static void advance(ctl_logw_t *w) {
    uint64_t was = w->durable;
    for (bool moved = true; moved;) {
        moved = false;
        for (int i = 0; i < w->depth; i++) {
            slot_t *sl = &w->slots[i];
            if (sl->state != SLOT_DONE || sl->first != w->durable + 1)
                continue;
            size_t n = (size_t)(sl->last - sl->first + 1);
            for (size_t k = 0; k < n; k++)
                sl_free(w->q[k].v);
            memmove(w->q, w->q + n, (size_t)(w->last - sl->last) * sizeof *w->q);
            w->durable = sl->last;
            w->stats.txns++;
            w->stats.entries += n;
            sl->state = SLOT_IDLE;
            moved = true;
        }
    }
    if (w->durable != was)
        w->hooks.durable(w->hooks.ud, w->durable);
}

static void on_answer(evutil_socket_t fd, short what, void *ud);

/* Starts sl's transaction (built) on its connection; a failed send is
 * retried at once. */
static void start(ctl_logw_t *w, slot_t *sl) {
    sl->sent_us = ctl_mono_us();
    sl->state = SLOT_SENT;
    if (ctl_etcdg_send(sl->g, sl->req.p, sl->req.len, 1000) < 0) {
        retry(w, sl);
        return;
    }
    /* One event for the connection's life: no epoll_ctl per transaction. */
    int fd = ctl_etcdg_fd(sl->g);
    /* Every path that closes the connection frees the event first
     * (close_conn), so a connection made since has none. */
    if (sl->ev == NULL || sl->ev_fd != fd) {
        if (sl->ev)
            event_free(sl->ev);
        sl->ev = event_new(w->base, fd, EV_READ | EV_PERSIST, on_answer, sl);
        sl->ev_fd = fd;
        event_add(sl->ev, NULL);
    }
}

/* Sends the entries waiting on the idle connections. A start may finish
 * at once (a blocking retry), which frees its connection: bounded rounds. */
static void dispatch(ctl_logw_t *w) {
    for (int round = 0; round < 4 * CTL_LOGW_DEPTH_MAX; round++) {
        advance(w);
        bool started = false;
        for (int i = 0; i < w->depth && w->next <= w->last; i++) {
            slot_t *sl = &w->slots[i];
            if (sl->state != SLOT_IDLE)
                continue;
            uint64_t last = w->next;
            size_t bytes = entry_at(w, last)->len;
            while (last < w->last && last - w->next + 1 < CTL_LOGW_BATCH &&
                   bytes + entry_at(w, last + 1)->len <= CTL_LOGW_BATCH_BYTES)
                bytes += entry_at(w, ++last)->len;
            build(w, sl, w->next, last);
            w->next = last + 1;
            start(w, sl);
            started = true;
        }
        if (!started)
            break;
    }
    advance(w);
}

/* sl's answer, waited for timeout_ms; with 0, what its readable
 * connection holds, and the event armed again when that is not yet the
 * answer (etcd sends frames of its own: a PING on receiving data). */
static void receive(ctl_logw_t *w, slot_t *sl, int timeout_ms) {
    void *resp = NULL;
    size_t rlen = 0;
    int rc = ctl_etcdg_recv(sl->g, &resp, &rlen, timeout_ms);
    if (rc == 1)
        return; /* the persistent event brings the rest */
    if (rc == 0) {
        w->hooks.observe(w->hooks.ud, ctl_mono_us() - sl->sent_us);
        judge(w, sl, resp, rlen);
        sl_free(resp);
        return;
    }
    retry(w, sl); /* no answer, or an error answer: every member in turn */
}

static void on_answer(evutil_socket_t fd, short what, void *ud) {
    (void)fd;
    (void)what;
    slot_t *sl = ud;
    ctl_logw_t *w = sl->w;
    if (sl->state != SLOT_SENT) {
        /* Between transactions: etcd's own frames, or its close. */
        if (ctl_etcdg_drain(sl->g) < 0)
            close_conn(sl);
        return;
    }
    receive(w, sl, 0);
    dispatch(w);
}

/* ---- the interface ---- */

int ctl_logw_open(ctl_logw_t **out, struct event_base *base, const char *endpoints,
                  const char *prefix, uint64_t epoch, int depth, uint64_t durable,
                  const ctl_logw_hooks_t *hooks, char *err, size_t errlen) {
    *out = NULL;
    if (depth < 1 || depth > CTL_LOGW_DEPTH_MAX) {
        snprintf(err, errlen, "commit pipeline: %d transactions in flight is not 1 to %d", depth,
                 CTL_LOGW_DEPTH_MAX);
        return -1;
    }
    ctl_logw_t *w = sl_xcalloc(1, sizeof *w);
    w->base = base;
    w->hooks = *hooks;
    w->depth = depth;
    w->durable = w->last = durable;
    w->next = durable + 1;
    snprintf(w->prefix, sizeof w->prefix, "%s", prefix);
    w->epoch = epoch;
    w->leader_len = (size_t)snprintf(w->leader, sizeof w->leader, "%sleader", prefix);
    for (int i = 0; i < depth; i++) {
        w->slots[i].w = w;
        if (ctl_etcdg_open(&w->slots[i].g, endpoints, err, errlen) < 0) {
            ctl_logw_close(w);
            return -1;
        }
    }
    *out = w;
    return 0;
}

void ctl_logw_close(ctl_logw_t *w) {
    if (w == NULL)
        return;
    for (int i = 0; i < CTL_LOGW_DEPTH_MAX; i++) {
        slot_t *sl = &w->slots[i];
        if (sl->ev)
            event_free(sl->ev);
        ctl_etcdg_free(sl->g);
        ctl_pb_free(&sl->req);
    }
    for (uint64_t i = w->durable + 1; i <= w->last; i++)
        sl_free(entry_at(w, i)->v);
    sl_free(w->q);
    sl_free(w);
}

void ctl_logw_append(ctl_logw_t *w, uint64_t index, void *val, size_t len) {
    if (index != w->last + 1)
        fail(w, "log entry %" PRIu64 " appended after %" PRIu64, index, w->last);
    size_t n = (size_t)(index - w->durable);
    if (n > w->qcap) {
        w->qcap = w->qcap ? 2 * w->qcap : 64;
        w->q = sl_xrealloc(w->q, w->qcap * sizeof *w->q);
    }
    entry_t *e = &w->q[n - 1];
    e->v = val;
    e->len = len;
    w->last = index;
    dispatch(w);
}

void ctl_logw_sync(ctl_logw_t *w, uint64_t index) {
    while (w->durable < index) {
        dispatch(w);
        if (w->durable >= index)
            break;
        /* The transaction of the next entry to become durable. */
        slot_t *sl = NULL;
        for (int i = 0; i < w->depth; i++)
            if (w->slots[i].state == SLOT_SENT && (sl == NULL || w->slots[i].first < sl->first))
                sl = &w->slots[i];
        if (sl == NULL)
            fail(w, "log entry %" PRIu64 " waited for with none in flight (durable %" PRIu64
                 ", last %" PRIu64 ")", index, w->durable, w->last);
        int64_t left = w->hooks.left_ms(w->hooks.ud);
        receive(w, sl, left > CTL_ETCD_MIN_TRY_MS ? CTL_ETCD_MIN_TRY_MS : left < 1 ? 1 : (int)left);
    }
}

void ctl_logw_tick(ctl_logw_t *w) {
    int64_t now = ctl_mono_us();
    for (int i = 0; i < w->depth; i++) {
        slot_t *sl = &w->slots[i];
        if (sl->state == SLOT_SENT && now - sl->sent_us >= (int64_t)CTL_ETCD_MIN_TRY_MS * 1000)
            retry(w, sl);
    }
    dispatch(w);
}

uint64_t ctl_logw_durable(const ctl_logw_t *w) {
    return w->durable;
}

void ctl_logw_stats(const ctl_logw_t *w, ctl_logw_stats_t *out) {
    *out = w->stats;
}
