/*
 * logw.c - the leader's log writer (logw.h): entries waiting in index
 * order, connections each with one transaction in flight, the durable
 * mark that only moves over a run of entries without a hole.
 *
 * Workload: one append per group commit (a few thousand a second under
 * load), each transaction's request built by hand (no JSON tree: it is
 * the hot path of a durable submission) and its answer parsed by
 * jansson; the tick looks at depth connections.
 */
#include <event2/event.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ha/logw.h"
#include "ha/etcd.h"

#include "sluice/alloc.h"

#define TXN_PATH "/v3/kv/txn"

typedef struct entry {
    char *b64;  /* the value, base64 */
    size_t len;
} entry_t;

typedef enum { SLOT_IDLE = 0, SLOT_SENT, SLOT_DONE } slot_state_t;

typedef struct slot {
    ctl_logw_t *w;
    ctl_etcd_t etcd;
    struct event *ev;      /* EV_READ on etcd.fd while SENT */
    slot_state_t state;
    uint64_t first, last;  /* the entries of its transaction */
    char *req;             /* the request, kept for a retry */
    size_t reqlen;
    int64_t sent_us;
} slot_t;

struct ctl_logw {
    struct event_base *base;
    ctl_logw_hooks_t hooks;
    char leader_b64[700];  /* base64 of PREFIX "leader" */
    char prefix[512];
    char epoch[32];
    uint64_t durable;      /* every entry up to it is in etcd */
    uint64_t last;         /* the last appended */
    uint64_t next;         /* the first not yet in a transaction */
    entry_t *q;            /* entries durable + 1 .. last */
    size_t qcap;
    int depth;
    slot_t slots[CTL_LOGW_DEPTH_MAX];
    ctl_logw_stats_t stats;
};

static int64_t mono_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static entry_t *entry_at(ctl_logw_t *w, uint64_t index) {
    return &w->q[index - w->durable - 1];
}

/* ---- the request ---- */

typedef struct sbuf {
    char *p;
    size_t len, cap;
} sbuf_t;

static void put(sbuf_t *b, const char *s, size_t n) {
    if (b->len + n + 1 > b->cap) {
        while (b->len + n + 1 > b->cap)
            b->cap = b->cap ? 2 * b->cap : 4096;
        b->p = sl_xrealloc(b->p, b->cap);
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void puts_(sbuf_t *b, const char *s) {
    put(b, s, strlen(s));
}

/* base64 of PREFIX log/%020u into out. */
static void log_key(const ctl_logw_t *w, uint64_t index, char *out) {
    char k[600];
    int n = snprintf(k, sizeof k, "%slog/%020" PRIu64, w->prefix, index);
    char *b = ctl_etcd_b64(k, (size_t)n);
    strcpy(out, b);
    sl_free(b);
}

/* The transaction of entries first..last (see logw.h for its compares). */
static void build(ctl_logw_t *w, slot_t *sl, uint64_t first, uint64_t last) {
    sbuf_t b = {0};
    char fk[800];
    log_key(w, first, fk);
    puts_(&b, "{\"compare\":[{\"key\":\"");
    puts_(&b, w->leader_b64);
    puts_(&b, "\",\"target\":\"CREATE\",\"result\":\"EQUAL\",\"create_revision\":\"");
    puts_(&b, w->epoch);
    puts_(&b, "\"},{\"key\":\"");
    puts_(&b, fk);
    puts_(&b, "\",\"target\":\"CREATE\",\"result\":\"EQUAL\",\"create_revision\":\"0\"}");
    puts_(&b, "],\"success\":[");
    for (uint64_t i = first; i <= last; i++) {
        char k[800];
        log_key(w, i, k);
        entry_t *e = entry_at(w, i);
        puts_(&b, i == first ? "{\"request_put\":{\"key\":\"" : ",{\"request_put\":{\"key\":\"");
        puts_(&b, k);
        puts_(&b, "\",\"value\":\"");
        put(&b, e->b64, e->len);
        puts_(&b, "\"}}");
    }
    puts_(&b, "],\"failure\":[{\"request_range\":{\"key\":\"");
    puts_(&b, fk);
    puts_(&b, "\"}},{\"request_range\":{\"key\":\"");
    puts_(&b, w->leader_b64);
    puts_(&b, "\"}}]}");
    sl_free(sl->req);
    sl->req = b.p;
    sl->reqlen = b.len;
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

static json_t *range_kv(json_t *resp, size_t i) {
    json_t *r = json_array_get(json_object_get(resp, "responses"), i);
    return json_array_get(json_object_get(json_object_get(r, "response_range"), "kvs"), 0);
}

/* Judges a 200 answer to sl's transaction: the slot becomes DONE, or the
 * leader steps down. */
static void judge(ctl_logw_t *w, slot_t *sl, json_t *resp) {
    if (json_is_true(json_object_get(resp, "succeeded"))) {
        sl->state = SLOT_DONE;
        return;
    }
    json_t *lkv = range_kv(resp, 1);
    if (lkv == NULL || (uint64_t)ctl_etcd_int(lkv, "create_revision", 0) !=
                           strtoull(w->epoch, NULL, 10))
        fail(w, "log entries %" PRIu64 "..%" PRIu64 " refused by etcd: the leader key is not "
             "ours (epoch %s)", sl->first, sl->last, w->epoch);
    json_t *ekv = range_kv(resp, 0);
    if (ekv != NULL) {
        const char *v = json_string_value(json_object_get(ekv, "value"));
        entry_t *e = entry_at(w, sl->first);
        if (v && strlen(v) == e->len && memcmp(v, e->b64, e->len) == 0) {
            sl->state = SLOT_DONE; /* an earlier try landed */
            return;
        }
        fail(w, "log entry %" PRIu64 " refused by etcd: another writer filled it", sl->first);
    }
    fail(w, "log entries %" PRIu64 "..%" PRIu64 " refused by etcd for no reason it shows",
         sl->first, sl->last);
}

/* The blocking retry of sl's transaction on every member in turn (the
 * lease's time left); then the others use the member that answered. */
static void retry(ctl_logw_t *w, slot_t *sl) {
    w->stats.retries++;
    if (sl->ev)
        event_del(sl->ev);
    ctl_etcd_close(&sl->etcd);
    int64_t left = w->hooks.left_ms(w->hooks.ud);
    json_t *resp = NULL;
    if (ctl_etcd_post_text(&sl->etcd, TXN_PATH, sl->req, sl->reqlen, &resp,
                           left < 1 ? 1 : (int)left) < 0)
        fail(w, "log entries %" PRIu64 "..%" PRIu64 " not written: %s", sl->first, sl->last,
             sl->etcd.err);
    judge(w, sl, resp);
    json_decref(resp);
    for (int i = 0; i < w->depth; i++)
        if (w->slots[i].state != SLOT_SENT)
            ctl_etcd_use(&w->slots[i].etcd, sl->etcd.cur);
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
                sl_free(w->q[k].b64);
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
    sl->sent_us = mono_us();
    sl->state = SLOT_SENT;
    if (ctl_etcd_send(&sl->etcd, TXN_PATH, sl->req, sl->reqlen, 1000) < 0) {
        retry(w, sl);
        return;
    }
    if (sl->ev)
        event_free(sl->ev);
    sl->ev = event_new(w->base, sl->etcd.fd, EV_READ, on_answer, sl);
    event_add(sl->ev, NULL);
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

/* sl's answer, read within the time left (the answer's first bytes are
 * there: the rest follows at once). */
static void receive(ctl_logw_t *w, slot_t *sl, int timeout_ms) {
    json_t *resp = NULL;
    int rc = ctl_etcd_recv(&sl->etcd, TXN_PATH, &resp, timeout_ms);
    if (sl->ev)
        event_del(sl->ev);
    if (rc == 0) {
        w->hooks.observe(w->hooks.ud, mono_us() - sl->sent_us);
        judge(w, sl, resp);
        json_decref(resp);
        return;
    }
    retry(w, sl); /* no answer, or an error answer: every member in turn */
}

static void on_answer(evutil_socket_t fd, short what, void *ud) {
    (void)fd;
    (void)what;
    slot_t *sl = ud;
    ctl_logw_t *w = sl->w;
    if (sl->state != SLOT_SENT)
        return;
    receive(w, sl, 1000);
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
    snprintf(w->epoch, sizeof w->epoch, "%" PRIu64, epoch);
    char lk[600];
    int n = snprintf(lk, sizeof lk, "%sleader", prefix);
    char *b = ctl_etcd_b64(lk, (size_t)n);
    snprintf(w->leader_b64, sizeof w->leader_b64, "%s", b);
    sl_free(b);
    for (int i = 0; i < depth; i++) {
        w->slots[i].w = w;
        if (ctl_etcd_init(&w->slots[i].etcd, endpoints, err, errlen) < 0) {
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
        ctl_etcd_fini(&sl->etcd);
        sl_free(sl->req);
    }
    for (uint64_t i = w->durable + 1; i <= w->last; i++)
        sl_free(entry_at(w, i)->b64);
    sl_free(w->q);
    sl_free(w);
}

void ctl_logw_append(ctl_logw_t *w, uint64_t index, const void *val, size_t len) {
    if (index != w->last + 1)
        fail(w, "log entry %" PRIu64 " appended after %" PRIu64, index, w->last);
    size_t n = (size_t)(index - w->durable);
    if (n > w->qcap) {
        w->qcap = w->qcap ? 2 * w->qcap : 64;
        w->q = sl_xrealloc(w->q, w->qcap * sizeof *w->q);
    }
    entry_t *e = &w->q[n - 1];
    e->b64 = ctl_etcd_b64(val, len);
    e->len = strlen(e->b64);
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
    int64_t now = mono_us();
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
