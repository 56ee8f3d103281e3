/*
 * hconn.c - the HTTP API's connections (see hconn.h).
 *
 * libevent 2.1's evhttp accepts on its own and offers no hook between
 * accept() and the first read, so admission works from the bufferevent it
 * asks us to create (evhttp_set_bevcb): that callback runs inside evhttp's
 * accept, before the socket is attached, and schedules an immediate event
 * (event_base_once without a timeout) that runs in the same loop iteration
 * once evhttp has set up the connection. By then the bufferevent has its
 * socket and its callbacks' argument is the evhttp_connection, so the
 * peer can be counted (ctl_lport_admit) and a refused connection freed
 * before it has read a byte. We hold a reference on the bufferevent in
 * between, so that its memory outlives a connection evhttp already gave up.
 *
 * Each admitted connection is idle (it may be evicted by a newcomer when
 * the port is full) from its accept or its last reply until a request is
 * dispatched. A sweep closes a connection whose request line and headers
 * have not all arrived header_timeout after it became idle (however slowly
 * they trickle in; this is also how long a kept-alive connection may wait
 * for its next request), or whose body has not arrived body_timeout after
 * its headers ended (the input buffer's callback spots the blank line).
 * Reads and writes that make no progress for idle_timeout are evhttp's own
 * timeout (a client that does not read its reply).
 *
 * Unread replies: evhttp writes one reply at a time per connection and
 * reads the next request only when it has gone, so a connection holds at
 * most one reply; ctl_hconns_room bounds all of them together (limits.
 * reply_buffer): a reply that would pass it is refused with 503.
 *
 * Errors libevent answers itself (a malformed request line, headers over
 * max_header_bytes, a body over 1 MiB, an unknown method) come out as an
 * HTML page that no public hook replaces. Every write into a connection's
 * output buffer passes the buffer's callback: a write that is not one of
 * our replies (the `sending` flag) and whose status line is an error is
 * libevent's, and the callback replaces everything libevent writes for it
 * (status line, headers, body, in several writes) by the same status with
 * a JSON body. libevent writes synchronously and nothing else is queued on
 * a connection that has just been read, so the buffer then holds only that
 * answer.
 */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "base/buf.h"
#include "net/hconn.h"
#include "log.h"

#define MAX_SINGLE_WRITE (4u << 20) /* bytes a connection writes in one call at most */

typedef struct hconn {
    ctl_hconns_t *h;
    struct evhttp_connection *evcon;
    struct bufferevent *bev;
    ctl_lconn_t *lc;
    struct evbuffer_cb_entry *out_cb, *in_cb;
    int64_t body_mono_us; /* when the request's headers ended; 0: not yet */
    uint8_t eol;     /* the end-of-headers scan: 1 after "\n", 2 after "\n\r" */
    int status;      /* libevent's error being rewritten; 0: none */
    bool rewriting;  /* inside our own rewrite */
} hconn_t;

typedef struct pending {
    ctl_hconns_t *h;
    struct bufferevent *bev;
} pending_t;

#define SMALL_REPLY (64 * 1024)

/* Connections are keyed by address: evhttp gives them no other identity,
 * and nothing here depends on the table's iteration order. */
static uint64_t key_of(const struct evhttp_connection *evcon) {
    return (uint64_t)(uintptr_t)evcon;
}

static hconn_t *find(ctl_hconns_t *h, const struct evhttp_connection *evcon) {
    size_t it = 0;
    hconn_t *hc;
    while ((hc = sl_hash_find_next(&h->by_evcon, key_of(evcon), &it)) != NULL)
        if (hc->evcon == evcon)
            return hc;
    return NULL;
}

static size_t out_len(const hconn_t *hc) {
    return evbuffer_get_length(bufferevent_get_output(hc->bev));
}

/* ---- libevent's own error pages, as JSON ---- */

static const char *error_code(int status, const char **reason) {
    switch (status) {
    case 400: *reason = "Bad Request"; return "bad_request";
    case 413: *reason = "Payload Too Large"; return "too_large";
    case 414: *reason = "URI Too Long"; return "too_large";
    case 501: *reason = "Not Implemented"; return "not_implemented";
    case 503: *reason = "Service Unavailable"; return "unavailable";
    default: *reason = "Error"; return "bad_request";
    }
}

static void write_error(hconn_t *hc, struct evbuffer *out) {
    const ctl_config_t *cfg = &hc->h->c->cfg;
    const char *reason;
    const char *code = error_code(hc->status, &reason);
    char msg[256];
    if (hc->status == 413)
        snprintf(msg, sizeof msg,
                 "request too large: the request line and headers may take %lld bytes, the body %d bytes",
                 (long long)cfg->max_header_bytes, CTL_MAX_MSG);
    else if (hc->status == 501)
        snprintf(msg, sizeof msg, "unknown method: the API takes GET, HEAD, POST and DELETE");
    else
        snprintf(msg, sizeof msg,
                 "malformed HTTP request: a bad request line or header, or a request line or "
                 "headers over %lld bytes",
                 (long long)cfg->max_header_bytes);
    ctl_buf_t b;
    ctl_buf_init(&b);
    ctl_buf_puts(&b, "{\"error\":{\"code\":");
    ctl_buf_jstr(&b, code);
    ctl_buf_puts(&b, ",\"message\":");
    ctl_buf_jstr(&b, msg);
    ctl_buf_puts(&b, "}}\n");
    evbuffer_add_printf(out,
                        "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                        "Connection: close\r\n\r\n",
                        hc->status, reason, b.len);
    evbuffer_add(out, b.p, b.len);
    ctl_buf_fini(&b);
}

static void out_cb(struct evbuffer *out, const struct evbuffer_cb_info *info, void *arg) {
    hconn_t *hc = arg;
    if (info->n_added == 0 || hc->rewriting || hc->h->sending)
        return;
    if (hc->status == 0) {
        char line[32] = "";
        evbuffer_copyout(out, line, sizeof line - 1);
        int major, minor, status;
        if (sscanf(line, "HTTP/%d.%d %d", &major, &minor, &status) != 3 || status < 400)
            return; /* "100 Continue" and the like pass */
        hc->status = status;
        hc->h->c->n.http_errors++;
    }
    hc->rewriting = true;
    evbuffer_drain(out, evbuffer_get_length(out));
    write_error(hc, out);
    hc->rewriting = false;
}

/* ---- the end of a request's headers, for body_timeout ---- */

/* Scans the bytes just read for the blank line that ends the headers
 * ("\r\n\r\n" or "\n\n"), carrying the state across reads because evhttp
 * drains each header line as soon as it has it. The callback runs inside
 * the read, before evhttp parses, so the new bytes are the buffer's last
 * n_added. Only while no request is in progress and its headers have not
 * ended: a connection scans each request's headers once. */
static void in_cb(struct evbuffer *in, const struct evbuffer_cb_info *info, void *arg) {
    hconn_t *hc = arg;
    if (info->n_added == 0 || hc->body_mono_us != 0 || !hc->lc->idle)
        return;
    size_t len = evbuffer_get_length(in), n = info->n_added < len ? info->n_added : len;
    struct evbuffer_ptr pos;
    if (evbuffer_ptr_set(in, &pos, len - n, EVBUFFER_PTR_SET) < 0)
        return;
    char chunk[512];
    while (n > 0) {
        size_t k = n < sizeof chunk ? n : sizeof chunk;
        ev_ssize_t got = evbuffer_copyout_from(in, &pos, chunk, k);
        if (got <= 0)
            return;
        for (ev_ssize_t i = 0; i < got; i++) {
            char ch = chunk[i];
            if (ch == '\n' && hc->eol != 0) {
                hc->body_mono_us = ctl_mono_us();
                return;
            }
            hc->eol = ch == '\n' ? 1 : ch == '\r' && hc->eol == 1 ? 2 : 0;
        }
        evbuffer_ptr_set(in, &pos, (size_t)got, EVBUFFER_PTR_ADD);
        n -= (size_t)got;
    }
}

/* ---- admission ---- */

static void close_cb(struct evhttp_connection *evcon, void *arg) {
    hconn_t *hc = arg;
    ctl_hconns_t *h = hc->h;
    sl_hash_remove(&h->by_evcon, key_of(evcon), hc);
    if (hc->out_cb)
        evbuffer_remove_cb_entry(bufferevent_get_output(hc->bev), hc->out_cb);
    if (hc->in_cb)
        evbuffer_remove_cb_entry(bufferevent_get_input(hc->bev), hc->in_cb);
    ctl_lport_release(&h->port, hc->lc);
    sl_free(hc);
}

/* The port's eviction: only a connection with nothing left to write. */
static bool evict(void *arg, void *ud) {
    hconn_t *hc = ud;
    if (out_len(hc) > 0)
        return false;
    evhttp_connection_free(hc->evcon); /* close_cb releases it */
    return true;
}

static void admit_cb(evutil_socket_t unused, short what, void *arg) {
    pending_t *pd = arg;
    ctl_hconns_t *h = pd->h;
    struct bufferevent *bev = pd->bev;
    sl_free(pd);
    void *cbarg = NULL;
    bufferevent_getcb(bev, NULL, NULL, NULL, &cbarg);
    struct evhttp_connection *evcon = cbarg;
    evutil_socket_t fd = bufferevent_getfd(bev);
    if (evcon == NULL || fd < 0 || evhttp_connection_get_bufferevent(evcon) != bev) {
        bufferevent_decref(bev); /* evhttp already gave the connection up */
        return;
    }
    struct sockaddr_storage ss;
    socklen_t sslen = sizeof ss;
    if (getpeername(fd, (struct sockaddr *)&ss, &sslen) != 0)
        memset(&ss, 0, sizeof ss);
    hconn_t *hc = sl_xcalloc(1, sizeof *hc);
    hc->h = h;
    hc->evcon = evcon;
    hc->bev = bev;
    hc->lc = ctl_lport_admit(&h->port, (struct sockaddr *)&ss, hc);
    if (hc->lc == NULL) {
        sl_free(hc);
        evhttp_connection_free(evcon);
        bufferevent_decref(bev);
        return;
    }
    sl_hash_add(&h->by_evcon, key_of(evcon), hc);
    evhttp_connection_set_closecb(evcon, close_cb, hc);
    hc->out_cb = evbuffer_add_cb(bufferevent_get_output(bev), out_cb, hc);
    hc->in_cb = evbuffer_add_cb(bufferevent_get_input(bev), in_cb, hc);
    bufferevent_decref(bev);
}

static struct bufferevent *bev_cb(struct event_base *base, void *arg) {
    ctl_hconns_t *h = arg;
    struct bufferevent *bev = h->make_bev ? h->make_bev(base, h->make_bev_ud)
                                          : bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    if (bev == NULL)
        return NULL;
    /* A reply leaves in writes as large as the socket takes: at
     * libevent's default of 16 KiB a write, a page of 10,000 jobs (5 MB)
     * took 300 loop iterations, each with its epoll_wait and flush hooks. */
    bufferevent_set_max_single_write(bev, MAX_SINGLE_WRITE);
    pending_t *pd = sl_xcalloc(1, sizeof *pd);
    pd->h = h;
    pd->bev = bev;
    bufferevent_incref(bev);
    if (event_base_once(base, -1, EV_TIMEOUT, admit_cb, pd, NULL) < 0) {
        bufferevent_decref(bev);
        sl_free(pd);
    }
    return bev;
}

/* ---- the sweep: header_timeout ---- */

static void sweep_cb(evutil_socket_t unused, short what, void *arg) {
    ctl_hconns_t *h = arg;
    const ctl_config_t *cfg = &h->c->cfg;
    int64_t now = ctl_mono_us();
    /* Every connection: the deadlines differ by phase, so the list's order
     * (by idle time) does not order them; a few thousand a second is
     * cheap. */
    sl_list_t *it, *nx;
    SL_LIST_FOREACH_SAFE(it, nx, &h->port.conns) { /* freeing evcon releases lc */
        ctl_lconn_t *lc = SL_LIST_ENTRY(it, ctl_lconn_t, link);
        hconn_t *hc = lc->ud;
        if (!lc->idle || out_len(hc) > 0)
            continue; /* a request in progress, or a reply still draining */
        int64_t deadline = hc->body_mono_us ? hc->body_mono_us + cfg->body_timeout_ms * 1000
                                            : lc->idle_mono_us + cfg->header_timeout_ms * 1000;
        if (now >= deadline)
            evhttp_connection_free(hc->evcon);
    }
}

/* ---- the adapter's calls ---- */

int ctl_hconns_open(ctl_hconns_t *h, ctl_t *c, struct evhttp *http, char *err, size_t errlen) {
    *h = (ctl_hconns_t){.c = c, .http = http, .make_bev = h->make_bev,
                        .make_bev_ud = h->make_bev_ud};
    sl_hash_init(&h->by_evcon);
    ctl_config_t *cfg = &c->cfg;
    if (cfg->max_agent_connections > 0) {
        /* Each port its own limit (a controller of 10,000 agents and a few
         * API clients): both must fit, or sluiced does not start. */
        int64_t want = cfg->max_connections + cfg->max_agent_connections + CTL_LISTEN_FD_RESERVE;
        int64_t nofile = ctl_listen_raise_nofile(want);
        if (nofile < want) {
            snprintf(err, errlen, "limits: max_connections=%lld plus max_agent_connections=%lld "
                     "(and %d spare) need %lld open files, but the limit is %lld and cannot be "
                     "raised (ulimit -n; LimitNOFILE= in the systemd unit)",
                     (long long)cfg->max_connections, (long long)cfg->max_agent_connections,
                     CTL_LISTEN_FD_RESERVE, (long long)want, (long long)nofile);
            return -1;
        }
    } else {
        int64_t nofile = ctl_listen_raise_nofile(2 * cfg->max_connections + CTL_LISTEN_FD_RESERVE);
        int64_t per_port = (nofile - CTL_LISTEN_FD_RESERVE) / 2;
        if (per_port < 16)
            per_port = 16;
        if (cfg->max_connections > per_port) {
            sl_log(SL_LOG_WARN, "listen",
                   "max_connections=%lld per port does not fit under the open-file limit of %lld "
                   "(2 ports and %d spare), which cannot be raised (ulimit -n, LimitNOFILE=); "
                   "using %lld",
                   (long long)cfg->max_connections, (long long)nofile, CTL_LISTEN_FD_RESERVE,
                   (long long)per_port);
            cfg->max_connections = per_port;
        }
        if (cfg->max_connections_per_peer > cfg->max_connections)
            cfg->max_connections_per_peer = cfg->max_connections;
    }
    evhttp_set_max_headers_size(http, cfg->max_header_bytes);
    evhttp_set_max_body_size(http, CTL_MAX_MSG);
    struct timeval tv = {(time_t)(cfg->idle_timeout_ms / 1000),
                         (suseconds_t)(cfg->idle_timeout_ms % 1000) * 1000};
    evhttp_set_timeout_tv(http, &tv);
    evhttp_set_bevcb(http, bev_cb, h);
    if (ctl_lport_open(&h->port, c->loop->base, "listen", cfg->listen, cfg->max_connections,
                       cfg->max_connections_per_peer, &c->n.api_port, NULL, NULL, false, err,
                       errlen) < 0)
        return -1;
    h->port.name = "api";
    h->port.evict = evict;
    h->port.evict_arg = h;
    if (evhttp_bind_listener(http, h->port.lst) == NULL) {
        snprintf(err, errlen, "listen: cannot serve HTTP on %s", cfg->listen);
        evconnlistener_free(h->port.lst);
        h->port.lst = NULL;
        return -1;
    }
    int64_t sweep_ms = (cfg->header_timeout_ms < cfg->body_timeout_ms ? cfg->header_timeout_ms
                                                                      : cfg->body_timeout_ms) / 4;
    if (sweep_ms > 1000)
        sweep_ms = 1000;
    h->sweep_ev = event_new(c->loop->base, -1, EV_PERSIST, sweep_cb, h);
    struct timeval stv = {(time_t)(sweep_ms / 1000), (suseconds_t)(sweep_ms % 1000) * 1000};
    event_add(h->sweep_ev, &stv);
    return 0;
}

void ctl_hconns_fini(ctl_hconns_t *h) {
    if (h->sweep_ev)
        event_free(h->sweep_ev);
    /* evhttp_free ran every close_cb; what is left was never admitted. */
    size_t it = 0;
    for (const sl_hash_entry_t *e; (e = sl_hash_next(&h->by_evcon, &it)) != NULL;)
        sl_free(e->val);
    sl_hash_fini(&h->by_evcon);
    if (h->c)
        ctl_lport_fini(&h->port);
    *h = (ctl_hconns_t){0};
}

void ctl_hconns_busy(ctl_hconns_t *h, struct evhttp_request *req) {
    struct evhttp_connection *evcon = evhttp_request_get_connection(req);
    hconn_t *hc = evcon ? find(h, evcon) : NULL;
    if (hc)
        ctl_lport_set_idle(&h->port, hc->lc, false, 0);
}

bool ctl_hconns_room(ctl_hconns_t *h, size_t len) {
    if (len < SMALL_REPLY)
        return true;
    size_t total = len, it = 0;
    for (const sl_hash_entry_t *e; (e = sl_hash_next(&h->by_evcon, &it)) != NULL;)
        total += out_len(e->val);
    return (int64_t)total <= h->c->cfg.reply_buffer_bytes;
}

void ctl_hconns_send(ctl_hconns_t *h, struct evhttp_request *req, int status, const char *reason,
                     struct evbuffer *body) {
    struct evhttp_connection *evcon = evhttp_request_get_connection(req);
    hconn_t *hc = evcon ? find(h, evcon) : NULL;
    if (hc) {
        ctl_lport_set_idle(&h->port, hc->lc, true, ctl_mono_us());
        hc->body_mono_us = 0; /* the next request's headers are due */
        hc->eol = 0;
    }
    h->sending = true;
    evhttp_send_reply(req, status, reason, body);
    h->sending = false;
}
