/*
 * http.c - the exporter's HTTP/1.1 responder (http.h).
 *
 * Each accepted connection gets a bufferevent. Its request (line and
 * headers) must end, with an empty line, within AGENT_HTTP_MAX_REQUEST
 * bytes; it is answered at once from the loop with "Connection: close",
 * and the connection is freed once the kernel has taken the whole reply.
 * A body, if any, is never read.
 *
 * The agent runs tenants' tasks, so the port faces hostile clients. None
 * can stall the loop, which never blocks on a socket: a client that never
 * reads leaves its reply in its own output buffer, and a client that
 * trickles its request keeps only its own connection. What each costs is
 * bounded: one reply (a few KB a GPU) and AGENT_HTTP_MAX_REQUEST bytes per
 * connection, AGENT_HTTP_MAX_CONNS connections (more are closed at
 * accept), and AGENT_HTTP_DEADLINE_MS per connection from accept to the
 * last byte of its reply, whatever the client does meanwhile (a deadline,
 * not an idle timeout, so that a byte every few seconds does not keep a
 * connection forever).
 */
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include <event2/bufferevent.h>
#include <event2/listener.h>

#include "http.h"
#include "log.h"
#include "loop.h"
#include "sluice/list.h"

typedef struct hconn {
    sl_list_t link;            /* on the responder's conns */
    agent_http_t *h;
    struct bufferevent *bev;
    struct event *deadline;
    int replied;
} hconn_t;

struct agent_http {
    struct event_base *base;
    struct evconnlistener *lis;
    agent_http_fn fn;
    void *ud;
    sl_list_t conns;           /* hconn_t by link, the newest first */
    int nconns;
    int port;
};

static void conn_free(hconn_t *c) {
    agent_http_t *h = c->h;
    sl_list_remove(&c->link);
    h->nconns--;
    bufferevent_free(c->bev);
    event_free(c->deadline);
    free(c);
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
    if (h->nconns >= AGENT_HTTP_MAX_CONNS) {
        evutil_closesocket(fd);
        return;
    }
    hconn_t *c = calloc(1, sizeof *c);
    if (!c) abort();
    c->h = h;
    c->bev = bufferevent_socket_new(h->base, fd, BEV_OPT_CLOSE_ON_FREE);
    c->deadline = evtimer_new(h->base, deadline_cb, c);
    if (!c->bev || !c->deadline) abort();
    sl_list_insert_head(&h->conns, &c->link);
    h->nconns++;
    bufferevent_setwatermark(c->bev, EV_READ, 0, AGENT_HTTP_MAX_REQUEST + 1);
    bufferevent_setcb(c->bev, read_cb, write_cb, event_cb, c);
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
    struct timeval tv = agent_tv_ms(AGENT_HTTP_DEADLINE_MS);
    evtimer_add(c->deadline, &tv);
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
    h->lis = evconnlistener_new_bind(base, accept_cb, h,
                                     LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC,
                                     64, res->ai_addr, (int)res->ai_addrlen);
    freeaddrinfo(res);
    if (!h->lis) {
        snprintf(err, errlen, "cannot listen on %s: %s", hostport,
                 evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
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
    free(h);
}
