/*
 * http.c - the exporter's HTTP/1.1 responder (http.h).
 *
 * Each accepted connection gets a bufferevent. Its request (line and
 * headers) must end, with an empty line, within AGENT_HTTP_MAX_REQUEST
 * bytes; it is answered at once from the loop with "Connection: close",
 * and the connection is freed once the kernel has taken the whole reply.
 * A body, if any, is never read.
 *
 * The agent runs tenants' tasks, so the port faces hostile clients (a
 * task reaches 127.0.0.1). None can stall the loop, which never blocks on
 * a socket: a client that never reads leaves its reply in its own output
 * buffer, and a client that trickles its request keeps only its own
 * connection. What each costs is bounded: one reply (a few KB a GPU) and
 * AGENT_HTTP_MAX_REQUEST bytes per connection, and AGENT_HTTP_DEADLINE_MS
 * per connection from accept to the last byte of its reply, whatever the
 * client does meanwhile (a deadline, not an idle timeout, so that a byte
 * every few seconds does not keep a connection forever).
 *
 * Nor can one client take every connection: the port admits at most
 * AGENT_HTTP_MAX_CONNS, and at most AGENT_HTTP_MAX_PER_PEER from one peer
 * address, with the controller's rule (src/common/connlimit.h): over a
 * limit, the oldest connection whose request is not complete yet is
 * evicted to make room, and a connection is closed at accept only when
 * every one it would displace is being answered. A client holding many
 * silent sockets, however fast it reopens those closed, so holds a few of
 * them, scrapers from other addresses find room, and one from its own
 * address gets in by evicting one of its sockets. A request already in the
 * socket when it is accepted is answered at once, before the next
 * connection is admitted, so that a stream of such evictions does not
 * close it before it is read.
 */
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include <event2/bufferevent.h>
#include <event2/listener.h>

#include "connlimit.h"
#include "http.h"
#include "log.h"
#include "loop.h"
#include "sluice/list.h"

/* Refusals and evictions are logged at most this often, with their counts. */
#define LOG_INTERVAL_US (10 * 1000000)

typedef struct hconn {
    sl_list_t link;            /* on the responder's conns */
    agent_http_t *h;
    struct bufferevent *bev;
    struct event *deadline;
    sl_connlimit_conn_t *lc;    /* its place in the limits */
    int replied;
} hconn_t;

struct agent_http {
    struct event_base *base;
    struct evconnlistener *lis;
    agent_http_fn fn;
    void *ud;
    sl_list_t conns;           /* hconn_t by link, the newest first */
    sl_connlimit_t lim;
    sl_connlimit_counters_t logged; /* the counts at the last log line */
    int64_t log_mono_us;
    int port;
};

static void conn_free(hconn_t *c) {
    agent_http_t *h = c->h;
    sl_list_remove(&c->link);
    sl_connlimit_release(&h->lim, c->lc);
    bufferevent_free(c->bev);
    event_free(c->deadline);
    free(c);
}

/* The limits' eviction: a connection whose request is incomplete goes. */
static bool evict_cb(void *arg, void *ud) {
    hconn_t *c = ud;
    if (c->replied) return false;
    conn_free(c);
    return true;
}

/* One line per LOG_INTERVAL_US at most, with what happened since the last. */
static void log_limits(agent_http_t *h) {
    int64_t now = agent_mono_us();
    const sl_connlimit_counters_t *n = &h->lim.n;
    if ((n->refused == h->logged.refused && n->evicted == h->logged.evicted) ||
        (h->log_mono_us != 0 && now - h->log_mono_us < LOG_INTERVAL_US))
        return;
    sl_log(SL_LOG_WARN, "metrics", "refused=%llu evicted=%llu metrics connections since the last "
           "such line (limits: %d connections, %d per peer address; open now: %llu)",
           (unsigned long long)(n->refused - h->logged.refused),
           (unsigned long long)(n->evicted - h->logged.evicted), AGENT_HTTP_MAX_CONNS,
           AGENT_HTTP_MAX_PER_PEER, (unsigned long long)n->conns);
    h->logged = *n;
    h->log_mono_us = now;
}

static void reply(hconn_t *c, int status, const char *ctype, struct evbuffer *body) {
    const char *text = status == 200 ? "OK" : status == 404 ? "Not Found" :
                       status == 405 ? "Method Not Allowed" : status == 431 ?
                       "Request Header Fields Too Large" : "Bad Request";
    struct evbuffer *out = bufferevent_get_output(c->bev);
    evbuffer_add_printf(out, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                        "Connection: close\r\n\r\n", status, text, ctype,
                        body ? evbuffer_get_length(body) : 0);
    if (body) evbuffer_add_buffer(out, body);
    c->replied = 1;
    sl_connlimit_set_idle(&c->h->lim, c->lc, false, 0); /* being answered: never evicted */
    bufferevent_disable(c->bev, EV_READ);
}

static void error_reply(hconn_t *c, int status, const char *msg) {
    struct evbuffer *b = evbuffer_new();
    evbuffer_add_printf(b, "%s\n", msg);
    reply(c, status, "text/plain; charset=utf-8", b);
    evbuffer_free(b);
}

static void read_cb(struct bufferevent *bev, void *arg) {
    hconn_t *c = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    if (c->replied) {
        evbuffer_drain(in, evbuffer_get_length(in));
        return;
    }
    struct evbuffer_ptr end = evbuffer_search(in, "\r\n\r\n", 4, NULL);
    if (end.pos < 0) end = evbuffer_search(in, "\n\n", 2, NULL);
    if (end.pos < 0) {
        if (evbuffer_get_length(in) > AGENT_HTTP_MAX_REQUEST)
            error_reply(c, 431, "request over 8 KiB");
        return;
    }
    if (end.pos > AGENT_HTTP_MAX_REQUEST) {
        error_reply(c, 431, "request over 8 KiB");
        return;
    }
    size_t len;
    char *line = evbuffer_readln(in, &len, EVBUFFER_EOL_CRLF);
    char method[16], path[256], version[16];
    if (!line || sscanf(line, "%15s %255s %15s", method, path, version) != 3 ||
        strncmp(version, "HTTP/1.", 7) != 0) {
        free(line);
        error_reply(c, 400, "not an HTTP/1.x request");
        return;
    }
    free(line);
    evbuffer_drain(in, evbuffer_get_length(in));
    if (strcmp(method, "GET") != 0) {
        error_reply(c, 405, "only GET");
        return;
    }
    path[strcspn(path, "?")] = '\0';
    struct evbuffer *body = evbuffer_new();
    const char *ctype = "text/plain; charset=utf-8";
    int status = c->h->fn(c->h->ud, path, body, &ctype);
    if (status == 200)
        reply(c, 200, ctype, body);
    else
        error_reply(c, 404, "not found: GET /metrics");
    evbuffer_free(body);
}

/* The whole reply has left: done. */
static void write_cb(struct bufferevent *bev, void *arg) {
    hconn_t *c = arg;
    if (c->replied && evbuffer_get_length(bufferevent_get_output(bev)) == 0) conn_free(c);
}

static void event_cb(struct bufferevent *bev, short what, void *arg) {
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) conn_free(arg);
}

static void deadline_cb(evutil_socket_t fd, short ev, void *arg) {
    hconn_t *c = arg;
    sl_log(SL_LOG_DEBUG, "metrics", "closing a metrics connection after %d ms",
           AGENT_HTTP_DEADLINE_MS);
    conn_free(c);
}

static void accept_cb(struct evconnlistener *lis, evutil_socket_t fd, struct sockaddr *sa, int salen,
                      void *arg) {
    agent_http_t *h = arg;
    hconn_t *c = calloc(1, sizeof *c);
    if (!c) abort();
    c->lc = sl_connlimit_admit(&h->lim, sa, c, agent_mono_us());
    log_limits(h);
    if (!c->lc) {
        evutil_closesocket(fd);
        free(c);
        return;
    }
    c->h = h;
    c->bev = bufferevent_socket_new(h->base, fd, BEV_OPT_CLOSE_ON_FREE);
    c->deadline = evtimer_new(h->base, deadline_cb, c);
    if (!c->bev || !c->deadline) abort();
    sl_list_insert_head(&h->conns, &c->link);
    bufferevent_setwatermark(c->bev, EV_READ, 0, AGENT_HTTP_MAX_REQUEST + 1);
    bufferevent_setcb(c->bev, read_cb, write_cb, event_cb, c);
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
    struct timeval tv = agent_tv_ms(AGENT_HTTP_DEADLINE_MS);
    evtimer_add(c->deadline, &tv);
    /* The request is most often there already: answer it now, so that the
     * connection is busy (not evictable) before the next one is admitted. */
    struct evbuffer *in = bufferevent_get_input(c->bev);
    if (evbuffer_read(in, fd, AGENT_HTTP_MAX_REQUEST + 1) > 0) read_cb(c->bev, c);
}

int agent_http_create(struct event_base *base, const char *hostport, agent_http_fn fn, void *ud,
                      agent_http_t **out, char *err, size_t errlen) {
    const char *colon = strrchr(hostport, ':');
    if (!colon || !colon[1]) {
        snprintf(err, errlen, "\"%s\" is not HOST:PORT", hostport);
        return -1;
    }
    char host[256];
    snprintf(host, sizeof host, "%.*s", (int)(colon - hostport), hostport);
    if (host[0] == '[' && host[strlen(host) - 1] == ']') {
        memmove(host, host + 1, strlen(host));
        host[strlen(host) - 1] = '\0';
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE}, *res = NULL;
    int e = getaddrinfo(host[0] ? host : NULL, colon + 1, &hints, &res);
    if (e != 0 || !res) {
        snprintf(err, errlen, "cannot resolve \"%s\": %s", hostport, gai_strerror(e));
        return -1;
    }
    agent_http_t *h = calloc(1, sizeof *h);
    if (!h) abort();
    h->base = base;
    h->fn = fn;
    h->ud = ud;
    sl_list_init(&h->conns);
    sl_connlimit_init(&h->lim, AGENT_HTTP_MAX_CONNS, AGENT_HTTP_MAX_PER_PEER, evict_cb, h);
    /* A backlog well above the limits: a flood's reconnections waiting to
     * be accepted (and evicted) leave room for a scraper's. */
    h->lis = evconnlistener_new_bind(base, accept_cb, h,
                                     LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC,
                                     AGENT_HTTP_BACKLOG, res->ai_addr, (int)res->ai_addrlen);
    freeaddrinfo(res);
    if (!h->lis) {
        snprintf(err, errlen, "cannot listen on %s: %s", hostport,
                 evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
        sl_connlimit_fini(&h->lim);
        free(h);
        return -1;
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getsockname(evconnlistener_get_fd(h->lis), (struct sockaddr *)&ss, &sl) == 0)
        h->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                  : ((struct sockaddr_in *)&ss)->sin_port);
    *out = h;
    return 0;
}

int agent_http_port(const agent_http_t *h) {
    return h->port;
}

void agent_http_destroy(agent_http_t *h) {
    if (!h) return;
    for (sl_list_t *first; (first = sl_list_first(&h->conns)) != NULL;)
        conn_free(SL_LIST_ENTRY(first, hconn_t, link));
    evconnlistener_free(h->lis);
    sl_connlimit_fini(&h->lim);
    free(h);
}
