/*
 * conn.c - the agent's one connection to the controller (docs/protocol.md).
 *
 * A bufferevent over a non-blocking TCP socket (TCP_NODELAY) carries
 * newline-delimited JSON both ways. Launches arrive pushed and are handled
 * in the read callback itself, so a launch is spawned and its `started`
 * queued within the same loop pass as its bytes arrived.
 *
 * When the connection fails or drops, the agent keeps its tasks running and
 * reconnects after 100 ms, doubling to at most 2 s; a `welcome` resets the
 * delay. Messages produced while disconnected are not queued: the next
 * `hello` lists every running task and every exit not yet acknowledged,
 * which is the whole state the controller needs.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "agent.h"
#include "log.h"

static void try_connect(agent_t *a);

static void schedule_reconnect(agent_t *a) {
    if (a->stopping) return;
    struct timeval tv = {a->backoff_ms / 1000, (a->backoff_ms % 1000) * 1000};
    evtimer_add(a->reconnect_ev, &tv);
    a->backoff_ms = a->backoff_ms * 2 > 2000 ? 2000 : a->backoff_ms * 2;
}

static void conn_drop(agent_t *a, const char *why) {
    if (evbuffer_get_length(a->pending) > 0) evbuffer_drain(a->pending, evbuffer_get_length(a->pending));
    if (a->bev) {
        if (a->welcomed)
            sl_log(SL_LOG_WARN, "agent", "lost controller %s:%s: %s; reconnecting", a->ctl_host,
                   a->ctl_port, why);
        else
            sl_log(SL_LOG_DEBUG, "agent", "controller %s:%s: %s", a->ctl_host, a->ctl_port, why);
        bufferevent_free(a->bev);
        a->bev = NULL;
    }
    a->connected = 0;
    a->welcomed = 0;
    schedule_reconnect(a);
}

void agent_flush(agent_t *a) {
    size_t n = evbuffer_get_length(a->pending);
    if (n == 0) return;
    if (!a->bev || !a->connected) {
        evbuffer_drain(a->pending, n);
        return;
    }
    struct evbuffer *out = bufferevent_get_output(a->bev);
    if (evbuffer_get_length(out) == 0) {
        /* Nothing queued ahead: write directly, keep only what did not fit. */
        ssize_t w = send(bufferevent_getfd(a->bev), evbuffer_pullup(a->pending, -1), n,
                         MSG_DONTWAIT | MSG_NOSIGNAL);
        if (w > 0) evbuffer_drain(a->pending, (size_t)w);
    }
    if (evbuffer_get_length(a->pending) > 0) evbuffer_add_buffer(out, a->pending);
}

void agent_send(agent_t *a, json_t *obj) {
    if (!obj) return;
    if (a->bev && a->connected) {
        char *s = json_dumps(obj, JSON_COMPACT);
        if (s) {
            evbuffer_add(a->pending, s, strlen(s));
            evbuffer_add(a->pending, "\n", 1);
            free(s);
        }
        if (a->batch == 0) agent_flush(a);
    }
    json_decref(obj);
}

static void send_hello(agent_t *a) {
    json_t *node = json_pack("{s:s,s:s,s:s,s:i}", "name", a->name, "cpus", a->cpus, "memory",
                             a->memory, "gpus", a->gpus);
    if (a->gpus > 0) {
        json_object_set_new(node, "gpu_model", json_string(a->gpu_model ? a->gpu_model : "unknown"));
        if (a->gpu_memory) json_object_set_new(node, "gpu_memory", json_string(a->gpu_memory));
    }
    if (a->pool) json_object_set_new(node, "pool", json_string(a->pool));
    if (a->labels) json_object_set_new(node, "labels", json_string(a->labels));
    agent_send(a, json_pack("{s:s,s:s,s:s,s:o,s:o}", "type", "hello", "token", a->token,
                            "version", AGENT_VERSION, "node", node, "tasks", agent_tasks_hello(a)));
}

static void handle(agent_t *a, json_t *m) {
    const char *type = json_string_value(json_object_get(m, "type"));
    if (!type) {
        sl_log(SL_LOG_WARN, "agent", "message without a type; ignored");
    } else if (strcmp(type, "launch") == 0) {
        agent_task_launch(a, m);
    } else if (strcmp(type, "kill") == 0) {
        agent_task_kill(a, m);
    } else if (strcmp(type, "ack") == 0) {
        agent_task_ack(a, m);
    } else if (strcmp(type, "logs") == 0) {
        agent_task_logs(a, m);
    } else if (strcmp(type, "welcome") == 0) {
        a->welcomed = 1;
        a->backoff_ms = 100;
        json_t *hb = json_object_get(m, "heartbeat");
        if (json_is_integer(hb) && json_integer_value(hb) > 0 &&
            json_integer_value(hb) < a->heartbeat_s) {
            a->heartbeat_s = (int)json_integer_value(hb);
            struct timeval tv = {a->heartbeat_s, 0};
            evtimer_del(a->heartbeat_ev);
            event_add(a->heartbeat_ev, &tv);
        }
        sl_log(SL_LOG_INFO, "agent", "node=%s registered with controller %s:%s", a->name,
               a->ctl_host, a->ctl_port);
    } else if (strcmp(type, "error") == 0) {
        const char *msg = json_string_value(json_object_get(m, "message"));
        sl_log(SL_LOG_ERROR, "agent", "controller refused node %s: %s", a->name, msg ? msg : "?");
    } else {
        sl_log(SL_LOG_DEBUG, "agent", "unknown message type %s; ignored", type);
    }
}

static void read_cb(struct bufferevent *bev, void *arg) {
    agent_t *a = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    char *line;
    size_t len;
    a->batch++;
    while (a->bev == bev && (line = evbuffer_readln(in, &len, EVBUFFER_EOL_LF)) != NULL) {
        if (len == 0) {
            free(line);
            continue;
        }
        json_error_t err;
        json_t *m = json_loadb(line, len, 0, &err);
        free(line);
        if (!json_is_object(m)) {
            sl_log(SL_LOG_WARN, "agent", "bad message from controller: %s", m ? "not an object" : err.text);
            json_decref(m);
            continue;
        }
        handle(a, m);
        json_decref(m);
    }
    a->batch--;
    agent_flush(a);
    if (a->bev == bev && evbuffer_get_length(in) > AGENT_MAX_LINE) conn_drop(a, "message over 1 MiB");
}

static void event_cb(struct bufferevent *bev, short what, void *arg) {
    agent_t *a = arg;
    if (what & BEV_EVENT_CONNECTED) {
        a->connected = 1;
        send_hello(a);
        return;
    }
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
        int e = EVUTIL_SOCKET_ERROR();
        conn_drop(a, (what & BEV_EVENT_EOF) ? "connection closed" : strerror(e));
    }
}

static void try_connect(agent_t *a) {
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int e = getaddrinfo(a->ctl_host, a->ctl_port, &hints, &res);
    if (e != 0 || !res) {
        sl_log(SL_LOG_WARN, "agent", "cannot resolve %s: %s", a->ctl_host, gai_strerror(e));
        schedule_reconnect(a);
        return;
    }
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        sl_log(SL_LOG_WARN, "agent", "socket: %s", strerror(errno));
        freeaddrinfo(res);
        schedule_reconnect(a);
        return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
    a->bev = bufferevent_socket_new(a->base, fd, BEV_OPT_CLOSE_ON_FREE);
    bufferevent_setcb(a->bev, read_cb, NULL, event_cb, a);
    bufferevent_enable(a->bev, EV_READ | EV_WRITE);
    if (bufferevent_socket_connect(a->bev, res->ai_addr, (int)res->ai_addrlen) != 0) {
        freeaddrinfo(res);
        conn_drop(a, "connect failed");
        return;
    }
    freeaddrinfo(res);
}

static void reconnect_cb(evutil_socket_t fd, short ev, void *arg) {
    try_connect(arg);
}

static void heartbeat_cb(evutil_socket_t fd, short ev, void *arg) {
    agent_t *a = arg;
    if (a->connected) agent_send(a, json_pack("{s:s,s:f}", "type", "heartbeat", "time", agent_now()));
}

int agent_conn_start(agent_t *a) {
    a->backoff_ms = 100;
    a->pending = evbuffer_new();
    a->reconnect_ev = evtimer_new(a->base, reconnect_cb, a);
    a->heartbeat_ev = event_new(a->base, -1, EV_PERSIST, heartbeat_cb, a);
    struct timeval tv = {a->heartbeat_s, 0};
    event_add(a->heartbeat_ev, &tv);
    try_connect(a);
    return 0;
}

void agent_conn_fini(agent_t *a) {
    if (a->pending) agent_flush(a);
    if (a->bev) {
        /* Best effort: push out the last exits before the process ends. */
        struct evbuffer *out = bufferevent_get_output(a->bev);
        size_t n = evbuffer_get_length(out);
        /* The output buffer's front is frozen for outside callers: write a
         * copy of it rather than draining it. */
        if (a->connected && n > 0) {
            unsigned char *p = evbuffer_pullup(out, -1);
            if (p && write(bufferevent_getfd(a->bev), p, n) < 0)
                sl_log(SL_LOG_DEBUG, "agent", "final write: %s", strerror(errno));
        }
        bufferevent_free(a->bev);
        a->bev = NULL;
    }
    if (a->reconnect_ev) event_free(a->reconnect_ev);
    if (a->heartbeat_ev) event_free(a->heartbeat_ev);
    a->reconnect_ev = a->heartbeat_ev = NULL;
    if (a->pending) evbuffer_free(a->pending);
    a->pending = NULL;
}
