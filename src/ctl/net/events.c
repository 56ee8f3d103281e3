/*
 * events.c - GET /v1/events, Server-Sent Events of jobs' and nodes'
 * changes (events.h; docs/api.md "Events").
 *
 * The domain calls the watcher (ctl_watch_t) once per change; that only
 * appends (kind, id, name) to the list of changes not yet published. The
 * REPLIES hook, after the COMMIT, is the output gate: it marks the
 * changes made since the last mark with the store's seq (ctl_store_seq),
 * then publishes the oldest changes, up to the last mark whose seq is
 * durable (ctl_store_durable), and keeps the rest, in order, for a later
 * flush (in HA mode the one the HA layer kicks when durable advances;
 * outside it durable is seq after every COMMIT, so every change is
 * published at the flush after it, as before the gate, with no mark made).
 * Publishing renders each change once, with the job's or node's object as
 * GET /v1/jobs/{id} or /v1/nodes shows it then (so a job submitted and
 * placed in one iteration carries the cycle's reason; a change published
 * late may show a later one too, itself still held), into one frame:
 *
 *   id: 1764630000000123
 *   event: job.started
 *   data: {"id":...,"type":"job.started","time":"...","job":{...}}
 *
 * Ids increase by one per change, across every tenant (a tenant sees
 * gaps), and start at the controller's start time in microseconds, so an
 * id from before a restart is older than every new one and a reconnecting
 * client never takes the new life's events for ones it saw.
 *
 * The ring: the last CTL_EVENTS_RING frames (at most CTL_EVENTS_RING_BYTES)
 * hold every id from ring_from on. A client that comes back with
 * Last-Event-ID L gets the frames after L it may see, when L + 1 >=
 * ring_from; an older or unknown L gets "event: reset" instead (list
 * again, then follow). While no client is connected, for longer than
 * CTL_EVENTS_LINGER_S, changes are not rendered at all (an idle console
 * costs nothing): their ids are used up and the ring restarts after them.
 *
 * Bounds: a client's frames go straight into its connection's output
 * buffer; one that would pass CTL_EVENTS_CLIENT_BYTES unsent drops the
 * client (its connection is closed, it may reconnect and resume), so the
 * controller's memory is bounded by the ring and clients x that bound.
 * A heartbeat comment (": hb") goes to a client that had nothing for
 * ?heartbeat= seconds; it also keeps evhttp's idle_timeout from closing
 * a quiet stream. A client that went away (evhttp cleared its request's
 * connection) is noticed by the one-second tick, which frees its request.
 *
 * Who sees what: a tenant's token only its own tenant's jobs' events, the
 * admin's every job's; every token sees the nodes' (GET /v1/nodes shows
 * them to all).
 */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "domain/deps.h"
#include "domain/jobs.h"
#include "domain/jobtab.h"
#include "log.h"
#include "net/events.h"
#include "views/api.h"

#define VIS_ALL (-1)   /* a frame every token sees */
#define VIS_ADMIN (-2) /* a frame only the admin sees (a job of no tenant) */

typedef struct change {
    bool node;        /* a node's change, else a job's */
    uint64_t id;      /* the job's id or the node's core id */
    const char *what; /* static */
} change_t;

/* The gate's mark: the changes chg[0..end) not covered by an earlier mark
 * were made before a flush whose seq was tag; they are published once
 * ctl_store_durable reaches it. Ends and tags never decrease. */
typedef struct mark {
    uint64_t tag;
    size_t end;
} mark_t;

typedef struct slot {
    uint64_t id;
    int32_t vis;      /* VIS_ALL, VIS_ADMIN or the job's tenant */
    char *frame;
    size_t len;
} slot_t;

typedef struct client {
    struct evhttp_request *req;
    bool admin;
    int32_t tenant;
    int64_t heartbeat_us;
    int64_t last_write_mono_us;
    struct evbuffer *pend; /* this flush's frames, sent at its end */
} client_t;

struct ctl_events {
    ctl_t *c;
    ctl_hconns_t *conns;
    change_t *chg;      /* the changes not yet published, oldest first */
    size_t nchg, chg_cap;
    mark_t *mark;       /* the gate's marks over chg, oldest first */
    size_t nmark, mark_cap;
    slot_t *ring;       /* CTL_EVENTS_RING slots, ring_head the oldest */
    size_t ring_head, ring_len, ring_bytes;
    uint64_t next_id;
    uint64_t ring_from; /* every id from here to next_id - 1 is in the ring */
    client_t **cl;
    size_t ncl, cl_cap;
    struct event *tick;
    int64_t last_client_mono_us; /* when the last client left; 0: never had one */
    uint64_t dropped, sent;
};

/* ---- the watcher ---- */

static void note(ctl_events_t *ev, bool node, uint64_t id, const char *what) {
    if (ev->nchg == ev->chg_cap) {
        ev->chg_cap = ev->chg_cap ? 2 * ev->chg_cap : 64;
        ev->chg = sl_xrealloc(ev->chg, ev->chg_cap * sizeof *ev->chg);
    }
    ev->chg[ev->nchg++] = (change_t){node, id, what};
}

static void watch_job(void *ud, const ctl_job_t *j, const char *what) {
    note(ud, false, j->id, what);
}

static void watch_node(void *ud, uint32_t node, const char *what) {
    note(ud, true, node, what);
}

/* ---- the ring ---- */

static void ring_pop(ctl_events_t *ev) {
    slot_t *s = &ev->ring[ev->ring_head];
    ev->ring_from = s->id + 1;
    ev->ring_bytes -= s->len;
    sl_free(s->frame);
    s->frame = NULL;
    ev->ring_head = (ev->ring_head + 1) % CTL_EVENTS_RING;
    ev->ring_len--;
}

static void ring_clear(ctl_events_t *ev) {
    while (ev->ring_len > 0)
        ring_pop(ev);
    ev->ring_from = ev->next_id;
}

static const slot_t *ring_push(ctl_events_t *ev, uint64_t id, int32_t vis, char *frame, size_t len) {
    while (ev->ring_len > 0 &&
           (ev->ring_len == CTL_EVENTS_RING || ev->ring_bytes + len > CTL_EVENTS_RING_BYTES))
        ring_pop(ev);
    if (ev->ring_len == 0)
        ev->ring_from = id;
    slot_t *s = &ev->ring[(ev->ring_head + ev->ring_len) % CTL_EVENTS_RING];
    *s = (slot_t){id, vis, frame, len};
    ev->ring_len++;
    ev->ring_bytes += len;
    return s;
}

/* ---- clients ---- */

static bool may_see(const client_t *k, int32_t vis) {
    return vis == VIS_ALL || k->admin || (vis >= 0 && vis == k->tenant);
}

static size_t unsent(struct evhttp_connection *evcon) {
    return evbuffer_get_length(bufferevent_get_output(evhttp_connection_get_bufferevent(evcon)));
}

static void client_remove(ctl_events_t *ev, size_t i) {
    client_t *k = ev->cl[i];
    if (k->pend)
        evbuffer_free(k->pend);
    sl_free(k);
    ev->cl[i] = ev->cl[--ev->ncl];
    if (ev->ncl == 0) {
        ev->last_client_mono_us = ctl_mono_us();
        event_del(ev->tick);
    }
}

/* Client i's connection is gone: its request is freed. */
static void client_gone(ctl_events_t *ev, size_t i) {
    evhttp_send_reply_end(ev->cl[i]->req); /* frees a request whose connection is gone */
    client_remove(ev, i);
}

/* Client i did not read: its connection is closed (which frees its
 * request: nothing of it may be touched after). */
static void client_drop(ctl_events_t *ev, size_t i, struct evhttp_connection *evcon) {
    sl_log(SL_LOG_INFO, "http", "events: a client %s did not read %zu bytes; dropped",
           ev->cl[i]->admin ? "(admin)" : "of a tenant", unsent(evcon));
    ev->dropped++;
    client_remove(ev, i);
    evhttp_connection_free(evcon);
}

/* Sends b to client i, or drops it when that would pass its bound.
 * False when client i is no more (the caller does not advance). */
static bool client_send(ctl_events_t *ev, size_t i, struct evbuffer *b) {
    client_t *k = ev->cl[i];
    struct evhttp_connection *evcon = evhttp_request_get_connection(k->req);
    if (evcon == NULL) {
        client_gone(ev, i);
        return false;
    }
    if (unsent(evcon) + evbuffer_get_length(b) > CTL_EVENTS_CLIENT_BYTES) {
        client_drop(ev, i, evcon);
        return false;
    }
    evhttp_send_reply_chunk(k->req, b);
    k->last_write_mono_us = ctl_mono_us();
    return true;
}

static void tick_cb(evutil_socket_t fd, short what, void *arg) {
    (void)fd;
    (void)what;
    ctl_events_t *ev = arg;
    int64_t now = ctl_mono_us();
    for (size_t i = 0; i < ev->ncl;) {
        client_t *k = ev->cl[i];
        if (evhttp_request_get_connection(k->req) == NULL) {
            client_gone(ev, i);
            continue;
        }
        if (now - k->last_write_mono_us >= k->heartbeat_us) {
            struct evbuffer *b = evbuffer_new();
            evbuffer_add(b, ": hb\n\n", 6);
            bool kept = client_send(ev, i, b);
            evbuffer_free(b);
            if (!kept)
                continue;
        }
        i++;
    }
}

/* ---- rendering ---- */

/* The frame of change ch as id: the job's or node's object now. NULL when
 * the job is nowhere (never: a job's row outlives it in memory). */
static char *render(ctl_events_t *ev, const change_t *ch, uint64_t id, int32_t *vis, size_t *len) {
    ctl_t *c = ev->c;
    ctl_buf_t d; /* the data line's JSON */
    ctl_buf_init(&d);
    ctl_buf_printf(&d, "{\"id\":%llu,\"type\":", (unsigned long long)id);
    ctl_buf_jstr(&d, ch->what);
    ctl_buf_puts(&d, ",\"time\":");
    ctl_buf_time(&d, ctl_now_us());
    if (ch->node) {
        if (ch->id >= c->nnodes || c->nodes[ch->id] == NULL) {
            ctl_buf_fini(&d);
            return NULL;
        }
        *vis = VIS_ALL;
        ctl_buf_puts(&d, ",\"node\":");
        ctl_node_write(c, &d, (uint32_t)ch->id);
    } else {
        ctl_job_t *j = ctl_job_find(c, ch->id);
        bool owned = false;
        if (j == NULL && (j = ctl_job_fetch(c, ch->id)) != NULL) { /* already forgotten */
            owned = true;
            ctl_array_fill(c, j);
        }
        if (j == NULL) {
            ctl_buf_fini(&d);
            return NULL;
        }
        *vis = j->tenant >= 0 ? j->tenant : VIS_ADMIN;
        ctl_buf_puts(&d, ",\"job\":");
        ctl_job_write(c, &d, j);
        if (owned)
            ctl_job_free(j);
    }
    ctl_buf_putc(&d, '}');
    /* A data line ends at a newline: the JSON's own (whitespace between
     * tokens; its strings escape theirs) become blanks. */
    for (size_t i = 0; i < d.len; i++)
        if (d.p[i] == '\n' || d.p[i] == '\r')
            d.p[i] = ' ';
    ctl_buf_t b;
    ctl_buf_init(&b);
    ctl_buf_printf(&b, "id: %llu\nevent: %s\ndata: ", (unsigned long long)id, ch->what);
    ctl_buf_add(&b, d.p, d.len);
    ctl_buf_puts(&b, "\n\n");
    ctl_buf_fini(&d);
    return ctl_buf_steal(&b, len);
}

/* Renders chg[0..n) into the ring and the clients' pending frames, and
 * sends each client's: the changes whose commit is durable. */
static void publish(ctl_events_t *ev, size_t n) {
    int64_t now = ctl_mono_us();
    bool keep = ev->ncl > 0 || (ev->last_client_mono_us > 0 &&
                                now - ev->last_client_mono_us < CTL_EVENTS_LINGER_S * 1000000LL);
    if (!keep) { /* no one listens: the ids are used, nothing is rendered */
        ev->next_id += n;
        ring_clear(ev);
        return;
    }
    /* More changes than the ring holds (an array of 100,000 submitted):
     * only the last CTL_EVENTS_RING could be resumed from, and a client
     * could not take them all in its bound, so the earlier ones are not
     * rendered at all (the flush's work stays bounded) and every client is
     * told to list again, from after them. */
    size_t skip = n > CTL_EVENTS_RING ? n - CTL_EVENTS_RING : 0;
    if (skip > 0) {
        ev->next_id += skip;
        ring_clear(ev);
        for (size_t k = 0; k < ev->ncl; k++) {
            client_t *cl = ev->cl[k];
            if (cl->pend == NULL)
                cl->pend = evbuffer_new();
            evbuffer_add_printf(cl->pend, "id: %llu\nevent: reset\ndata: {\"id\":%llu,\"reason\":"
                                "\"%zu changes at once: list again, then follow\"}\n\n",
                                (unsigned long long)(ev->next_id - 1),
                                (unsigned long long)(ev->next_id - 1), n);
        }
    }
    for (size_t i = skip; i < n; i++) {
        int32_t vis;
        size_t len;
        uint64_t id = ev->next_id;
        char *frame = render(ev, &ev->chg[i], id, &vis, &len);
        if (frame == NULL)
            continue; /* nothing to show: no id used */
        ev->next_id++;
        const slot_t *s = ring_push(ev, id, vis, frame, len);
        for (size_t k = 0; k < ev->ncl; k++) {
            client_t *cl = ev->cl[k];
            if (!may_see(cl, vis))
                continue;
            if (cl->pend == NULL)
                cl->pend = evbuffer_new();
            evbuffer_add(cl->pend, s->frame, s->len);
            ev->sent++;
        }
    }
    for (size_t k = 0; k < ev->ncl;) {
        client_t *cl = ev->cl[k];
        if (cl->pend == NULL) {
            k++;
            continue;
        }
        struct evbuffer *b = cl->pend;
        cl->pend = NULL;
        struct evhttp_connection *evcon = evhttp_request_get_connection(cl->req);
        if (evcon != NULL && evbuffer_get_length(b) > CTL_EVENTS_CLIENT_BYTES / 2 &&
            unsent(evcon) < CTL_EVENTS_CLIENT_BYTES / 2) {
            /* A client that reads, but this flush alone is more than half
             * its bound: a reset instead (it lists again), not a drop. */
            evbuffer_drain(b, evbuffer_get_length(b));
            evbuffer_add_printf(b, "id: %llu\nevent: reset\ndata: {\"id\":%llu,\"reason\":\"too many "
                                "changes at once: list again, then follow\"}\n\n",
                                (unsigned long long)(ev->next_id - 1),
                                (unsigned long long)(ev->next_id - 1));
        }
        bool kept = client_send(ev, k, b);
        evbuffer_free(b);
        if (kept)
            k++;
    }
}

/* Drops chg[0..n) and the marks that covered only them (marks[0..m)). */
static void drop_prefix(ctl_events_t *ev, size_t n, size_t m) {
    if (n > 0) {
        memmove(ev->chg, ev->chg + n, (ev->nchg - n) * sizeof *ev->chg);
        ev->nchg -= n;
    }
    if (m > 0) {
        memmove(ev->mark, ev->mark + m, (ev->nmark - m) * sizeof *ev->mark);
        ev->nmark -= m;
    }
    for (size_t i = 0; i < ev->nmark; i++)
        ev->mark[i].end -= n;
    if (ev->nchg == 0 && ev->chg_cap > 4096) { /* a burst (an array of 100,000) leaves no large list behind */
        sl_free(ev->chg);
        ev->chg = NULL;
        ev->chg_cap = 0;
    }
}

void ctl_events_flush(ctl_events_t *ev) {
    uint64_t seq = ctl_store_seq(ev->c->store), durable = ctl_store_durable(ev->c->store);
    if (ev->nmark == 0 && durable >= seq) { /* nothing held (always outside HA mode) */
        if (ev->nchg > 0) {
            publish(ev, ev->nchg);
            drop_prefix(ev, ev->nchg, 0);
        }
        return;
    }
    size_t marked = ev->nmark > 0 ? ev->mark[ev->nmark - 1].end : 0;
    if (ev->nchg > marked) { /* the changes made before this flush's COMMIT */
        if (ev->nmark == ev->mark_cap) {
            ev->mark_cap = ev->mark_cap ? 2 * ev->mark_cap : 16;
            ev->mark = sl_xrealloc(ev->mark, ev->mark_cap * sizeof *ev->mark);
        }
        ev->mark[ev->nmark++] = (mark_t){seq, ev->nchg};
    }
    ctl_events_release(ev);
}

void ctl_events_release(ctl_events_t *ev) {
    uint64_t durable = ctl_store_durable(ev->c->store);
    size_t ready = 0, m = 0;
    while (m < ev->nmark && ev->mark[m].tag <= durable)
        ready = ev->mark[m++].end;
    if (ready > 0) {
        publish(ev, ready);
        drop_prefix(ev, ready, m);
    }
}

/* ---- GET /v1/events ---- */

static void reply_error(ctl_events_t *ev, struct evhttp_request *req, int status, const char *field,
                        const char *msg) {
    ctl_buf_t b;
    ctl_buf_init(&b);
    ctl_buf_puts(&b, "{\"error\":{\"code\":");
    ctl_buf_jstr(&b, status == 503 ? "unavailable" : status == 403 ? "forbidden" : "invalid_field");
    if (field) {
        ctl_buf_puts(&b, ",\"field\":");
        ctl_buf_jstr(&b, field);
    }
    ctl_buf_puts(&b, ",\"message\":");
    ctl_buf_jstr(&b, msg);
    ctl_buf_puts(&b, "}}\n");
    struct evbuffer *out = evbuffer_new();
    evbuffer_add(out, b.p, b.len);
    ctl_buf_fini(&b);
    struct evkeyvalq *oh = evhttp_request_get_output_headers(req);
    evhttp_add_header(oh, "Content-Type", "application/json");
    if (status == 503)
        evhttp_add_header(oh, "Retry-After", "1");
    ev->c->n.http_errors++;
    ctl_hconns_send(ev->conns, req, status, status == 503   ? "Service Unavailable"
                                            : status == 403 ? "Forbidden"
                                                            : "Bad Request", out);
    evbuffer_free(out);
}

static bool parse_u64(const char *s, uint64_t *out) {
    char *end;
    if (s == NULL || *s < '0' || *s > '9')
        return false;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end != '\0')
        return false;
    *out = v;
    return true;
}

void ctl_events_http(ctl_events_t *ev, struct evhttp_request *req, const struct evkeyvalq *query,
                     bool admin, int32_t tenant) {
    const char *v = evhttp_find_header(query, "heartbeat");
    uint64_t hb = CTL_EVENTS_HEARTBEAT_S;
    if (v != NULL && (!parse_u64(v, &hb) || hb < 1 || hb > 300)) {
        reply_error(ev, req, 400, "heartbeat", "heartbeat: must be a whole number of seconds from 1 to 300");
        return;
    }
    /* The stream must say something before evhttp's idle_timeout. */
    int64_t hb_us = (int64_t)hb * 1000000;
    if (hb_us > ev->c->cfg.idle_timeout_ms * 1000 / 2)
        hb_us = ev->c->cfg.idle_timeout_ms * 1000 / 2;
    const char *last_s = evhttp_find_header(evhttp_request_get_input_headers(req), "Last-Event-ID");
    const char *field = "Last-Event-ID";
    if (last_s == NULL || last_s[0] == '\0') {
        last_s = evhttp_find_header(query, "last_event_id");
        field = "last_event_id";
    }
    uint64_t last = 0;
    bool resume = last_s != NULL && last_s[0] != '\0';
    if (resume && !parse_u64(last_s, &last)) {
        char msg[160];
        snprintf(msg, sizeof msg, "%s: must be an event id (the id: of the last event received)", field);
        reply_error(ev, req, 400, field, msg);
        return;
    }
    if (ev->ncl >= CTL_EVENTS_MAX_CLIENTS) {
        char msg[160];
        snprintf(msg, sizeof msg, "too many event streams are open (%d); retry later",
                 CTL_EVENTS_MAX_CLIENTS);
        reply_error(ev, req, 503, NULL, msg);
        return;
    }
    struct evkeyvalq *oh = evhttp_request_get_output_headers(req);
    evhttp_add_header(oh, "Content-Type", "text/event-stream; charset=utf-8");
    evhttp_add_header(oh, "Cache-Control", "no-store");
    evhttp_add_header(oh, "X-Accel-Buffering", "no");
    if (evhttp_request_get_command(req) == EVHTTP_REQ_HEAD) {
        ctl_hconns_send(ev->conns, req, 200, "OK", NULL);
        return;
    }
    client_t *k = sl_xcalloc(1, sizeof *k);
    k->req = req;
    k->admin = admin;
    k->tenant = tenant;
    k->heartbeat_us = hb_us;
    k->last_write_mono_us = ctl_mono_us();
    struct evbuffer *b = evbuffer_new();
    uint64_t seen = ev->next_id - 1;
    /* The hello says whose stream this is (the console shows the admin's
     * buttons from it). */
    char who[128] = "\"role\":\"admin\"";
    if (!admin) {
        ctl_buf_t tb;
        ctl_buf_init(&tb);
        ctl_buf_jstr(&tb, sl_sched_tenant_name(ev->c->sched, tenant));
        snprintf(who, sizeof who, "\"role\":\"tenant\",\"tenant\":%.*s", (int)tb.len, tb.p);
        ctl_buf_fini(&tb);
    }
    evbuffer_add_printf(b, "retry: 3000\n\n");
    bool resumed = false;
    if (resume && last < ev->next_id && last + 1 >= ev->ring_from) {
        size_t bytes = 0;
        for (size_t i = 0; i < ev->ring_len; i++) {
            const slot_t *s = &ev->ring[(ev->ring_head + i) % CTL_EVENTS_RING];
            if (s->id > last && may_see(k, s->vis))
                bytes += s->len;
        }
        resumed = bytes + 512 <= CTL_EVENTS_CLIENT_BYTES; /* else a reset: list again */
        if (resumed) {
            evbuffer_add_printf(b, "event: hello\ndata: {\"resumed\":true,\"after\":%llu,%s}\n\n",
                                (unsigned long long)last, who);
            for (size_t i = 0; i < ev->ring_len; i++) {
                const slot_t *s = &ev->ring[(ev->ring_head + i) % CTL_EVENTS_RING];
                if (s->id > last && may_see(k, s->vis)) {
                    evbuffer_add(b, s->frame, s->len);
                    ev->sent++;
                }
            }
        }
    }
    if (resume && !resumed)
        evbuffer_add_printf(b, "id: %llu\nevent: reset\ndata: {\"id\":%llu,\"reason\":\"events after "
                            "%llu are no longer kept: list again, then follow\",%s}\n\n",
                            (unsigned long long)seen, (unsigned long long)seen,
                            (unsigned long long)last, who);
    else if (!resume)
        evbuffer_add_printf(b, "id: %llu\nevent: hello\ndata: {\"id\":%llu,\"resumed\":false,%s}\n\n",
                            (unsigned long long)seen, (unsigned long long)seen, who);
    evhttp_send_reply_start(req, 200, "OK");
    evhttp_send_reply_chunk(req, b);
    evbuffer_free(b);
    if (ev->ncl == ev->cl_cap) {
        ev->cl_cap = ev->cl_cap ? 2 * ev->cl_cap : 16;
        ev->cl = sl_xrealloc(ev->cl, ev->cl_cap * sizeof *ev->cl);
    }
    ev->cl[ev->ncl++] = k;
    if (!event_pending(ev->tick, EV_TIMEOUT, NULL)) {
        struct timeval tv = {1, 0};
        event_add(ev->tick, &tv);
    }
}

/* ---- set-up ---- */

ctl_events_t *ctl_events_create(ctl_t *c, ctl_hconns_t *conns) {
    ctl_events_t *ev = sl_xcalloc(1, sizeof *ev);
    ev->c = c;
    ev->conns = conns;
    ev->ring = sl_xcalloc(CTL_EVENTS_RING, sizeof *ev->ring);
    ev->next_id = (uint64_t)ctl_now_us();
    ev->ring_from = ev->next_id;
    ev->tick = event_new(c->loop->base, -1, EV_PERSIST, tick_cb, ev);
    c->watch = (ctl_watch_t){ev, watch_job, watch_node};
    return ev;
}

void ctl_events_destroy(ctl_events_t *ev) {
    if (ev == NULL)
        return;
    if (ev->c->watch.ud == ev)
        ev->c->watch = (ctl_watch_t){0};
    if (ev->tick)
        event_free(ev->tick);
    for (size_t i = 0; i < ev->ncl; i++) {
        /* A request still on its connection is freed with the server; one
         * whose client went away since the last tick is ours to free. */
        if (evhttp_request_get_connection(ev->cl[i]->req) == NULL)
            evhttp_send_reply_end(ev->cl[i]->req);
        if (ev->cl[i]->pend)
            evbuffer_free(ev->cl[i]->pend);
        sl_free(ev->cl[i]);
    }
    sl_free(ev->cl);
    while (ev->ring_len > 0)
        ring_pop(ev);
    sl_free(ev->ring);
    sl_free(ev->chg);
    sl_free(ev->mark);
    sl_free(ev);
}

void ctl_events_stats(const ctl_events_t *ev, ctl_events_stats_t *out) {
    *out = (ctl_events_stats_t){ev->next_id, ev->ncl, ev->dropped, ev->sent, ev->ring_len,
                                ev->ring_bytes};
}

void ctl_events_http_stats(ctl_events_t *ev, struct evhttp_request *req, bool admin) {
    if (!admin) {
        reply_error(ev, req, 403, NULL, "only the admin token reads the event stream's counters");
        return;
    }
    ctl_events_stats_t s;
    ctl_events_stats(ev, &s);
    struct evbuffer *out = evbuffer_new();
    evbuffer_add_printf(out, "{\"next_id\":%llu,\"clients\":%llu,\"dropped\":%llu,\"sent\":%llu,"
                        "\"ring_events\":%zu,\"ring_bytes\":%zu,\"ring_from\":%llu}\n",
                        (unsigned long long)s.next_id, (unsigned long long)s.clients,
                        (unsigned long long)s.dropped, (unsigned long long)s.sent, s.ring_len,
                        s.ring_bytes, (unsigned long long)ev->ring_from);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
    ctl_hconns_send(ev->conns, req, 200, "OK", out);
    evbuffer_free(out);
}
