/*
 * logstream.c - a task's output as Server-Sent Events (logstream.h).
 *
 * Each stream is a record: the job and task, the node its output is on,
 * the offset it has sent up to, and the one agent request it may have in
 * flight. One timer, every CTL_LOGSTREAM_POLL_MS while a stream is open,
 * visits them all: a stream whose client went away is freed; one whose
 * client has too much unread is left alone (no read for it until it
 * drains); one that waited its interval asks its agent for what follows
 * its offset. An answer that filled its chunk asks again at once, so a
 * task that prints a lot streams at the connection's pace, not the
 * timer's. A request unanswered after 10 s (an agent that went quiet) is
 * forgotten and asked again. The node is looked up again on each ask
 * from the job in memory, so a requeued job's stream follows its task to
 * the node it runs on now (from the offset it had reached).
 */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <string.h>

#include "base/buf.h"
#include "domain/jobs.h"
#include "domain/jobtab.h"
#include "net/logstream.h"

#define HEARTBEAT_US (15 * 1000000LL)
#define ANSWER_US (10 * 1000000LL)

typedef struct stream {
    struct evhttp_request *req;
    uint64_t job;
    int32_t task;
    uint32_t node;
    int64_t offset;
    uint64_t asked;              /* the request in flight (0: none) */
    int64_t asked_mono_us;
    int64_t next_mono_us;        /* ask again from this time on */
    int64_t last_write_mono_us;
} stream_t;

struct ctl_logstream {
    ctl_t *c;
    ctl_hconns_t *conns;
    ctl_logstream_send_fn send;
    void *ud;
    stream_t **s;
    size_t n, cap;
    uint64_t next_req;
    struct event *tick;
};

static size_t unsent(struct evhttp_connection *evcon) {
    return evbuffer_get_length(bufferevent_get_output(evhttp_connection_get_bufferevent(evcon)));
}

static void remove_at(ctl_logstream_t *ls, size_t i) {
    sl_free(ls->s[i]);
    ls->s[i] = ls->s[--ls->n];
    if (ls->n == 0)
        event_del(ls->tick);
}

/* Ends stream i with its last frame (len bytes). */
static void finish(ctl_logstream_t *ls, size_t i, const char *frame, size_t len) {
    stream_t *k = ls->s[i];
    if (evhttp_request_get_connection(k->req) != NULL && len > 0) {
        struct evbuffer *b = evbuffer_new();
        evbuffer_add(b, frame, len);
        evhttp_send_reply_chunk(k->req, b);
        evbuffer_free(b);
    }
    evhttp_send_reply_end(k->req);
    remove_at(ls, i);
}

/* Asks stream i's agent for what follows its offset. */
static void ask(ctl_logstream_t *ls, stream_t *k, int64_t now) {
    ctl_job_t *j = ctl_job_find(ls->c, k->job);
    if (j != NULL && k->task < j->ntasks && j->tasks[k->task].node >= 0)
        k->node = (uint32_t)j->tasks[k->task].node;
    ctl_node_t *n = ctl_node_get(ls->c, k->node);
    k->next_mono_us = now + CTL_LOGSTREAM_POLL_MS * 1000LL;
    if (n == NULL || !n->connected || ls->send == NULL)
        return; /* not now: asked again at the next interval */
    uint64_t req = CTL_LOGSTREAM_REQ_BIT | ++ls->next_req;
    if (ls->send(ls->ud, k->node, req, k->job, k->task, k->offset, CTL_LOGSTREAM_CHUNK) < 0)
        return;
    k->asked = req;
    k->asked_mono_us = now;
}

static void tick_cb(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    ctl_logstream_t *ls = arg;
    int64_t now = ctl_mono_us();
    for (size_t i = 0; i < ls->n;) {
        stream_t *k = ls->s[i];
        struct evhttp_connection *evcon = evhttp_request_get_connection(k->req);
        if (evcon == NULL) { /* its client went away */
            evhttp_send_reply_end(k->req);
            remove_at(ls, i);
            continue;
        }
        if (k->asked && now - k->asked_mono_us > ANSWER_US)
            k->asked = 0; /* unanswered: ask again */
        bool full = unsent(evcon) >= CTL_LOGSTREAM_CLIENT_BYTES;
        if (!k->asked && !full && now >= k->next_mono_us)
            ask(ls, k, now);
        if (now - k->last_write_mono_us >= HEARTBEAT_US && !full) {
            struct evbuffer *b = evbuffer_new();
            evbuffer_add(b, ": hb\n\n", 6);
            evhttp_send_reply_chunk(k->req, b);
            evbuffer_free(b);
            k->last_write_mono_us = now;
        }
        i++;
    }
}

bool ctl_logstream_answer(ctl_logstream_t *ls, uint64_t req, const char *error, const char *data,
                          size_t len, int64_t offset, bool eof) {
    if (!(req & CTL_LOGSTREAM_REQ_BIT))
        return false;
    size_t i = 0;
    while (i < ls->n && ls->s[i]->asked != req)
        i++;
    if (i == ls->n)
        return true; /* its stream has ended, or asked again since */
    stream_t *k = ls->s[i];
    k->asked = 0;
    if (evhttp_request_get_connection(k->req) == NULL) {
        evhttp_send_reply_end(k->req);
        remove_at(ls, i);
        return true;
    }
    ctl_buf_t b;
    ctl_buf_init(&b);
    if (error != NULL) {
        ctl_buf_puts(&b, "event: error\ndata: {\"message\":");
        ctl_buf_jstr(&b, error);
        ctl_buf_puts(&b, "}\n\n");
        finish(ls, i, b.p, b.len);
        ctl_buf_fini(&b);
        return true;
    }
    if (len > 0) {
        /* A JSON string escapes its newlines: the frame is one data line. */
        ctl_buf_puts(&b, "event: log\ndata: {\"job\":");
        ctl_buf_u64(&b, k->job);
        ctl_buf_puts(&b, ",\"task\":");
        ctl_buf_i64(&b, k->task);
        ctl_buf_puts(&b, ",\"offset\":");
        ctl_buf_i64(&b, offset);
        ctl_buf_puts(&b, ",\"data\":");
        ctl_buf_jstrn(&b, data, len);
        ctl_buf_puts(&b, "}\n\n");
        struct evbuffer *out = evbuffer_new();
        evbuffer_add(out, b.p, b.len);
        evhttp_send_reply_chunk(k->req, out);
        evbuffer_free(out);
        k->offset = offset + (int64_t)len;
        k->last_write_mono_us = ctl_mono_us();
        if (len >= CTL_LOGSTREAM_CHUNK)
            k->next_mono_us = 0; /* more is waiting: at the next tick */
    }
    if (eof) {
        b.len = 0;
        ctl_buf_puts(&b, "event: eof\ndata: {\"offset\":");
        ctl_buf_i64(&b, k->offset);
        ctl_buf_puts(&b, "}\n\n");
        finish(ls, i, b.p, b.len);
    }
    ctl_buf_fini(&b);
    return true;
}

void ctl_logstream_gone(ctl_logstream_t *ls, uint32_t node) {
    for (size_t i = 0; i < ls->n; i++)
        if (ls->s[i]->node == node)
            ls->s[i]->asked = 0;
}

void ctl_logstream_open(ctl_logstream_t *ls, struct evhttp_request *req, uint64_t job, int32_t task,
                        uint32_t node, int64_t offset, ctl_logstream_send_fn send, void *ud) {
    struct evkeyvalq *oh = evhttp_request_get_output_headers(req);
    if (ls->n >= CTL_LOGSTREAM_MAX) {
        char msg[128];
        snprintf(msg, sizeof msg, "{\"error\":{\"code\":\"unavailable\",\"message\":\"too many log "
                 "streams are open (%d); retry later\"}}\n", CTL_LOGSTREAM_MAX);
        struct evbuffer *out = evbuffer_new();
        evbuffer_add(out, msg, strlen(msg));
        evhttp_add_header(oh, "Content-Type", "application/json");
        evhttp_add_header(oh, "Retry-After", "1");
        ls->c->n.http_errors++;
        ctl_hconns_send(ls->conns, req, 503, "Service Unavailable", out);
        evbuffer_free(out);
        return;
    }
    evhttp_add_header(oh, "Content-Type", "text/event-stream; charset=utf-8");
    evhttp_add_header(oh, "Cache-Control", "no-store");
    evhttp_add_header(oh, "X-Accel-Buffering", "no");
    if (evhttp_request_get_command(req) == EVHTTP_REQ_HEAD) {
        ctl_hconns_send(ls->conns, req, 200, "OK", NULL);
        return;
    }
    ls->send = send;
    ls->ud = ud;
    stream_t *k = sl_xcalloc(1, sizeof *k);
    *k = (stream_t){.req = req, .job = job, .task = task, .node = node, .offset = offset,
                    .last_write_mono_us = ctl_mono_us()};
    struct evbuffer *b = evbuffer_new();
    evbuffer_add_printf(b, "retry: 3000\n\nevent: hello\ndata: {\"job\":%llu,\"task\":%d,\"offset\":%lld}\n\n",
                        (unsigned long long)job, (int)task, (long long)offset);
    evhttp_send_reply_start(req, 200, "OK");
    evhttp_send_reply_chunk(req, b);
    evbuffer_free(b);
    if (ls->n == ls->cap) {
        ls->cap = ls->cap ? 2 * ls->cap : 8;
        ls->s = sl_xrealloc(ls->s, ls->cap * sizeof *ls->s);
    }
    ls->s[ls->n++] = k;
    ask(ls, k, ctl_mono_us());
    if (!event_pending(ls->tick, EV_TIMEOUT, NULL)) {
        struct timeval tv = {0, CTL_LOGSTREAM_POLL_MS * 1000};
        event_add(ls->tick, &tv);
    }
}

size_t ctl_logstream_count(const ctl_logstream_t *ls) {
    return ls->n;
}

ctl_logstream_t *ctl_logstream_create(ctl_t *c, ctl_hconns_t *conns) {
    ctl_logstream_t *ls = sl_xcalloc(1, sizeof *ls);
    ls->c = c;
    ls->conns = conns;
    ls->tick = event_new(c->loop->base, -1, EV_PERSIST, tick_cb, ls);
    return ls;
}

void ctl_logstream_destroy(ctl_logstream_t *ls) {
    if (ls == NULL)
        return;
    if (ls->tick)
        event_free(ls->tick);
    for (size_t i = 0; i < ls->n; i++) {
        /* As events.c: a request whose client left since the last tick
         * is ours to free; the others go with the server. */
        if (evhttp_request_get_connection(ls->s[i]->req) == NULL)
            evhttp_send_reply_end(ls->s[i]->req);
        sl_free(ls->s[i]);
    }
    sl_free(ls->s);
    sl_free(ls);
}
