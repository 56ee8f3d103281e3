/*
 * standby.c - a follower's answers on the leader's ports (standby.h):
 * libevent's evhttp for the API (it reads the request and its body, so
 * the redirect never races an unread body into a reset), and a bare
 * listener for the agent port whose connections get one redirect line.
 */
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <jansson.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "ha/standby.h"

#include "log.h"
#include "sluice/version.h"

static void reply(struct evhttp_request *req, int code, const char *reason, const char *body) {
    struct evkeyvalq *out = evhttp_request_get_output_headers(req);
    evhttp_add_header(out, "Content-Type", "application/json");
    evhttp_add_header(out, "Cache-Control", "no-store");
    struct evbuffer *b = evbuffer_new();
    evbuffer_add(b, body, strlen(body));
    evhttp_send_reply(req, code, reason, b);
    evbuffer_free(b);
}

static void http_cb(struct evhttp_request *req, void *ud) {
    const ctl_standby_t *s = ud;
    const ctl_standby_info_t *in = s->info;
    const char *uri = evhttp_request_get_uri(req);
    const char *path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
    bool get = evhttp_request_get_command(req) == EVHTTP_REQ_GET;
    char body[1024];
    if (get && path && strcmp(path, "/healthz") == 0) {
        snprintf(body, sizeof body,
                 "{\"status\":\"ok\",\"version\":\"%s\",\"role\":\"follower\",\"leader\":\"%s\","
                 "\"epoch\":%llu}\n",
                 SLUICE_VERSION, in->leader_api, (unsigned long long)in->epoch);
        reply(req, 200, "OK", body);
        return;
    }
    if (get && path && strcmp(path, "/v1/controllers") == 0 && in->view) {
        char *v = in->view(in->view_ud);
        reply(req, 200, "OK", v ? v : "{}");
        free(v);
        return;
    }
    if (get && path && strcmp(path, "/metrics") == 0 && in->metrics) {
        char *v = in->metrics(in->view_ud);
        evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                          "text/plain; version=0.0.4");
        struct evbuffer *mb = evbuffer_new();
        evbuffer_add(mb, v ? v : "", v ? strlen(v) : 0);
        evhttp_send_reply(req, 200, "OK", mb);
        evbuffer_free(mb);
        free(v);
        return;
    }
    if (in->leader_api[0] == '\0') {
        struct evkeyvalq *out = evhttp_request_get_output_headers(req);
        evhttp_add_header(out, "Retry-After", "1");
        reply(req, 503, "Service Unavailable",
              "{\"error\":\"this controller is a follower and no leader is elected yet; retry "
              "in a second\",\"role\":\"follower\"}\n");
        return;
    }
    char loc[2048];
    snprintf(loc, sizeof loc, "%s%s", in->leader_api, uri ? uri : "/");
    evhttp_add_header(evhttp_request_get_output_headers(req), "Location", loc);
    json_t *j = json_pack("{s:s,s:s,s:s,s:I}", "error",
                          "this controller is a follower: send it to the leader", "leader",
                          in->leader_api, "location", loc, "epoch", (json_int_t)in->epoch);
    char *txt = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    reply(req, 307, "Temporary Redirect", txt ? txt : "{}");
    free(txt);
}

/* ---- the agent port: one redirect line per connection ---- */

static void agent_done(struct bufferevent *bev, void *ud) {
    (void)ud;
    if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
        bufferevent_free(bev);
}

static void agent_event(struct bufferevent *bev, short what, void *ud) {
    (void)what;
    (void)ud;
    bufferevent_free(bev);
}

static void agent_read(struct bufferevent *bev, void *ud) {
    const ctl_standby_t *s = ud;
    struct evbuffer *in = bufferevent_get_input(bev);
    size_t n = 0;
    char *line = evbuffer_readln(in, &n, EVBUFFER_EOL_LF);
    if (line == NULL) {
        if (evbuffer_get_length(in) > 65536)
            bufferevent_free(bev);
        return;
    }
    free(line);
    char msg[512];
    if (s->info->leader_agent[0])
        snprintf(msg, sizeof msg, "{\"type\":\"redirect\",\"leader\":\"%s\",\"epoch\":%llu}\n",
                 s->info->leader_agent, (unsigned long long)s->info->epoch);
    else
        snprintf(msg, sizeof msg, "{\"type\":\"redirect\",\"epoch\":%llu}\n",
                 (unsigned long long)s->info->epoch);
    bufferevent_disable(bev, EV_READ);
    bufferevent_setcb(bev, NULL, agent_done, agent_event, NULL);
    bufferevent_write(bev, msg, strlen(msg));
}

static void agent_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int len,
                         void *ud) {
    (void)sa;
    (void)len;
    struct bufferevent *bev =
        bufferevent_socket_new(evconnlistener_get_base(l), fd, BEV_OPT_CLOSE_ON_FREE);
    if (bev == NULL) {
        evutil_closesocket(fd);
        return;
    }
    bufferevent_setcb(bev, agent_read, NULL, agent_event, ud);
    bufferevent_enable(bev, EV_READ);
}

/* Resolves "HOST:PORT" into a passive address. 0 or -1. */
static int resolve(const char *hp, struct addrinfo **res) {
    char host[256];
    const char *colon = strrchr(hp, ':');
    if (colon == NULL || (size_t)(colon - hp) >= sizeof host)
        return -1;
    memcpy(host, hp, (size_t)(colon - hp));
    host[colon - hp] = '\0';
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
    return getaddrinfo(host[0] ? host : NULL, colon + 1, &hints, res) == 0 ? 0 : -1;
}

int ctl_standby_open(ctl_standby_t *s, struct event_base *base, const char *listen,
                     const char *agent_listen, const ctl_standby_info_t *info, char *err,
                     size_t errlen) {
    *s = (ctl_standby_t){.info = info};
    struct addrinfo *res = NULL;
    if (resolve(agent_listen, &res) < 0) {
        snprintf(err, errlen, "agent_listen: %s: cannot resolve", agent_listen);
        return -1;
    }
    s->agents = evconnlistener_new_bind(base, agent_accept, s,
                                        LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE |
                                            LEV_OPT_CLOSE_ON_EXEC,
                                        64, res->ai_addr, (int)res->ai_addrlen);
    freeaddrinfo(res);
    if (s->agents == NULL) {
        snprintf(err, errlen, "agent_listen: %s: cannot listen", agent_listen);
        return -1;
    }
    if (resolve(listen, &res) < 0) {
        snprintf(err, errlen, "listen: %s: cannot resolve", listen);
        return -1;
    }
    struct evconnlistener *l = evconnlistener_new_bind(
        base, NULL, NULL, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC, 128,
        res->ai_addr, (int)res->ai_addrlen);
    freeaddrinfo(res);
    s->http = evhttp_new(base);
    if (l == NULL || s->http == NULL || evhttp_bind_listener(s->http, l) == NULL) {
        if (l && (s->http == NULL))
            evconnlistener_free(l);
        snprintf(err, errlen, "listen: %s: cannot listen", listen);
        return -1;
    }
    evhttp_set_allowed_methods(s->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_DELETE |
                                            EVHTTP_REQ_PUT | EVHTTP_REQ_PATCH | EVHTTP_REQ_HEAD);
    evhttp_set_max_body_size(s->http, 64 << 20);
    evhttp_set_timeout(s->http, 30);
    evhttp_set_gencb(s->http, http_cb, s);
    return 0;
}

void ctl_standby_close(ctl_standby_t *s) {
    if (s->http)
        evhttp_free(s->http);
    if (s->agents)
        evconnlistener_free(s->agents);
    s->http = NULL;
    s->agents = NULL;
}
