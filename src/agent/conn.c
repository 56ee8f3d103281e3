/*
 * conn.c - the agent's one connection to the controller (conn.h,
 * docs/protocol.md).
 *
 * A bufferevent over a non-blocking TCP socket (TCP_NODELAY) carries
 * newline-delimited JSON both ways, encoded and decoded by the protocol
 * codec (src/common/proto.h). Launches arrive pushed and are handed to the
 * tasks in the read callback itself, so a launch is spawned within the same
 * loop pass as its bytes arrived.
 *
 * Outgoing messages collect in `pending` while a read callback runs (so the
 * replies to one read leave in one send(2)) and are handed to the socket
 * when it returns; a message sent from anywhere else is handed over at
 * once. A direct send(2) skips the bufferevent's copy when nothing is queued
 * ahead of it.
 *
 * With TLS (--ca), the TCP connection is wrapped, once connected, in an
 * OpenSSL filter bufferevent that checks the controller's certificate
 * against the CA and the --controller host (and presents --cert/--key);
 * hello goes out when the handshake completes. The direct send(2) is then
 * skipped: every byte must pass through the TLS layer.
 *
 * When the connection fails or drops, the agent keeps its tasks running and
 * reconnects after 100 ms, doubling to at most 2 s; a `welcome` resets the
 * delay. Each delay is drawn at random from its upper half, so that the
 * thousands of agents a controller restart drops do not all come back in
 * the same instant (and retry in step while its backlog is full). Messages produced while disconnected are not queued: the next
 * `hello` lists every running task and every exit not yet acknowledged,
 * which is the whole state the controller needs.
 *
 * Several controllers (--controller A,B,C: docs/protocol.md, "Controllers
 * and epochs"): each drop moves on to the next in the list, with the same
 * back-off; a controller that does not lead answers the hello with a
 * redirect naming the leader, which is tried next at once (at most
 * REDIRECT_HOPS in a row without a welcome); with more than one
 * controller, one that gives no welcome within WELCOME_WAIT_MS of the
 * connect (stopped, hung: its kernel still accepts) is left for the next,
 * and so is a welcomed one that leaves a heartbeat unanswered for longer
 * than half of node_timeout plus one heartbeat interval (the agent asks in
 * time to have the answer by half of node_timeout: proto_hb.h), so that
 * the agent finds a new leader before its contact is old enough to fence. Every message's epoch is checked first
 * (proto_epoch.h): one older than the highest accepted is refused (logged
 * with both epochs, answered with an error, nothing in it acted on) and
 * the connection dropped; a higher one is written to the epoch file
 * before anything in it is acted on.
 *
 * Fencing (docs/protocol.md): the controller answers the hello with its
 * welcome and each heartbeat that carries a seq with a heartbeat of the
 * same seq. Heartbeats are numbered, but only those whose answer the agent
 * needs to keep its contact within half of node_timeout carry their number
 * (proto_hb.h): at the defaults every second one. The agent is in contact
 * as of the time it SENT the latest message so answered: the controller
 * heard from it at that time or later, so the controller's own timeout
 * (from the last message it heard) never ends before the agent's. When the contact is older than the node_timeout that
 * the welcome gave, the agent stops the tasks whose jobs the controller
 * will requeue (agent_tasks_fence) and drops the connection, whose unread
 * messages are stale. Every callback here checks this first, so an agent
 * resumed after SIGSTOP (or a suspend: the clock is CLOCK_BOOTTIME, which
 * counts it) fences before it reads, sends or reconnects. Each contact
 * also renews the node's lease file with the same deadline (lease.h), by
 * which every requeue-able task's monitor stops its task when the agent is
 * stopped, hung or dead and so cannot.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "conn.h"
#include "epoch.h"
#include "lease.h"
#include "log.h"
#include "loop.h"
#include "proto_hb.h"
#include "sluice/alloc.h"
#include "sluice/error.h"
#include "sluice/sluice.h"
#include "step.h"
#include "tls.h"

#define BACKOFF_FIRST_MS 100
#define BACKOFF_MAX_MS 2000
#define HB_RING 64  /* send times kept for the last heartbeats' answers */
#define WELCOME_WAIT_MS 5000 /* the controller's default hello_timeout */
#define REDIRECT_HOPS 3

struct agent_conn {
    struct event_base *base;
    agent_conn_config_t cfg;
    void *ts;
    const agent_conn_tasks_ops_t *ops;
    uint64_t rng;               /* xorshift state for the back-off's jitter */
    struct bufferevent *bev;
    int connected;              /* TCP up (and TLS handshake done) and hello sent */
    int handshaking;            /* TLS: TCP up, handshake under way */
    char tls_why[300];          /* the last TLS failure logged, so a retry loop logs it once */
    int welcomed;
    struct evbuffer *pending;   /* messages not yet handed to the socket */
    int batch;                  /* > 0: inside the read callback */
    int backoff_ms;
    int heartbeat_s;
    struct event *reconnect_ev;
    struct event *heartbeat_ev;
    /* Fencing: all times fence_clock_us(). */
    int64_t node_timeout_us;    /* from the welcome; 0: no fencing */
    int64_t kill_grace_ms;      /* from the welcome; -1: the agent's --grace */
    int64_t contact_us;         /* sent time of the latest answered message; 0: none */
    int64_t hello_sent_us;
    uint64_t hb_seq;            /* the last heartbeat's seq */
    bool health_first;          /* no heartbeat sent since the welcome yet */
    int64_t hb_sent_us[HB_RING]; /* by seq % HB_RING */
    int fenced;                 /* fenced since the last contact */
    struct event *fence_ev;     /* fires when the contact gets too old */
    int lease_failed;           /* the last lease write failed (logged) */
    struct event *drop_ev;      /* drops the connection once this loop pass's reports left */
    agent_steps_t *steps;       /* job steps (step.h), or NULL */
    /* Controllers: the one connected or tried now (host, port), its index
     * in the list, and a redirect's leader to try next. */
    const char *host, *port;
    size_t cur;
    sl_hostport_t redirect_to;
    bool redirect_pending;
    int redirects;              /* redirects followed since the last welcome */
    struct event *welcome_ev;   /* several controllers: no welcome in time */
    /* Epochs: the mark (highest accepted, proto_epoch.h), the instance of
     * this connection's welcome, and whether this connection was refused
     * (nothing more of it is read). */
    sl_epoch_mark_t mark;
    char instance[SL_PROTO_INSTANCE_MAX + 1];
    bool refused;
    const char *drop_why;       /* why drop_ev drops (a static string); NULL: a line over 1 MiB */
};

/* The fencing clock: CLOCK_BOOTTIME, monotonic and counting a suspend, so
 * that time the machine slept is never taken as time in contact. */
static int64_t fence_clock_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_BOOTTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void conn_drop(agent_conn_t *cn, const char *why);

/* Stops the tasks to requeue if the contact is older than node_timeout.
 * Returns 1 when it did (the connection is dropped: what it holds unread
 * is stale), else 0. */
static int fence_check(agent_conn_t *cn) {
    if (cn->node_timeout_us <= 0 || cn->contact_us <= 0 || cn->fenced) return 0;
    int64_t age = fence_clock_us() - cn->contact_us;
    if (age <= cn->node_timeout_us) return 0;
    cn->fenced = 1;
    int n = cn->ops->fence(cn->ts, cn->kill_grace_ms);
    char why[160];
    snprintf(why, sizeof why, "no answer from the controller for %.1f s (node_timeout %.1f s)",
             (double)age / 1e6, (double)cn->node_timeout_us / 1e6);
    sl_log(SL_LOG_WARN, "agent", "%s: stopped %d task(s) whose jobs will be requeued", why, n);
    if (cn->bev) conn_drop(cn, why);
    return 1;
}

static void fence_cb(evutil_socket_t fd, short ev, void *arg) {
    fence_check(arg);
}

/* Renews the lease file with the fence deadline (lease.h): the monitors
 * stop the tasks at the time fence_check would, should the agent not run
 * then. A failure is logged once per run of failures. */
static void lease_renew(agent_conn_t *cn) {
    if (!cn->cfg.lease) return;
    int64_t deadline = cn->node_timeout_us > 0 ? cn->contact_us + cn->node_timeout_us : 0;
    int64_t grace = cn->kill_grace_ms >= 0 ? cn->kill_grace_ms : cn->cfg.lease_grace_ms;
    int rc = agent_lease_write(cn->cfg.lease, deadline, grace);
    if (rc != 0 && !cn->lease_failed)
        sl_log(SL_LOG_WARN, "agent", "cannot write the fence lease %s: %s (removed: task monitors "
               "cannot stop their tasks should the agent stop)", cn->cfg.lease, strerror(-rc));
    cn->lease_failed = rc != 0;
}

/* The controller answered a message sent at sent_us. */
static void contact(agent_conn_t *cn, int64_t sent_us) {
    if (sent_us <= cn->contact_us) return;
    cn->contact_us = sent_us;
    cn->fenced = 0;
    lease_renew(cn);
    if (cn->node_timeout_us <= 0) return;
    int64_t wait_us = sent_us + cn->node_timeout_us - fence_clock_us();
    struct timeval tv = agent_tv_ms(wait_us > 0 ? wait_us / 1000 + 1 : 0);
    evtimer_add(cn->fence_ev, &tv);
}

static void try_connect(agent_conn_t *cn);

/* A random number below n (n > 0), from the connection's xorshift64. */
static int64_t jitter(agent_conn_t *cn, int64_t n) {
    cn->rng ^= cn->rng << 13;
    cn->rng ^= cn->rng >> 7;
    cn->rng ^= cn->rng << 17;
    return (int64_t)(cn->rng % (uint64_t)n);
}

static void schedule_reconnect(agent_conn_t *cn) {
    struct timeval tv = agent_tv_ms(cn->backoff_ms / 2 + jitter(cn, cn->backoff_ms / 2 + 1));
    evtimer_add(cn->reconnect_ev, &tv);
    cn->backoff_ms = cn->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : cn->backoff_ms * 2;
}

static void conn_drop(agent_conn_t *cn, const char *why) {
    evtimer_del(cn->drop_ev);
    if (evbuffer_get_length(cn->pending) > 0) evbuffer_drain(cn->pending, evbuffer_get_length(cn->pending));
    if (cn->bev) {
        if (cn->welcomed)
            sl_log(SL_LOG_WARN, "agent", "lost controller %s:%s: %s; reconnecting", cn->host,
                   cn->port, why);
        else
            sl_log(SL_LOG_DEBUG, "agent", "controller %s:%s: %s", cn->host, cn->port, why);
        bufferevent_free(cn->bev);
        cn->bev = NULL;
    }
    cn->connected = 0;
    cn->handshaking = 0;
    cn->welcomed = 0;
    cn->refused = false;
    cn->drop_why = NULL;
    cn->instance[0] = '\0';
    evtimer_del(cn->welcome_ev);
    if (cn->redirect_pending) {
        /* The leader a standby named: at once, not after the back-off. */
        cn->redirect_pending = false;
        cn->host = cn->redirect_to.host;
        cn->port = cn->redirect_to.port;
        struct timeval now = {0, 0};
        evtimer_add(cn->reconnect_ev, &now);
        return;
    }
    if (cn->cfg.ncontrollers > 0) {
        cn->cur = (cn->cur + 1) % cn->cfg.ncontrollers;
        cn->host = cn->cfg.controllers[cn->cur].host;
        cn->port = cn->cfg.controllers[cn->cur].port;
    }
    schedule_reconnect(cn);
}

/* Hands pending messages to the socket now. */
static void flush(agent_conn_t *cn) {
    size_t n = evbuffer_get_length(cn->pending);
    if (n == 0) return;
    if (!cn->bev || !cn->connected) {
        evbuffer_drain(cn->pending, n);
        return;
    }
    struct evbuffer *out = bufferevent_get_output(cn->bev);
    if (evbuffer_get_length(out) == 0 && cn->cfg.tls == NULL) {
        /* Nothing queued ahead: write directly, keep only what did not fit. */
        ssize_t w = send(bufferevent_getfd(cn->bev), evbuffer_pullup(cn->pending, -1), n,
                         MSG_DONTWAIT | MSG_NOSIGNAL);
        if (w > 0) evbuffer_drain(cn->pending, (size_t)w);
    }
    if (evbuffer_get_length(cn->pending) > 0) evbuffer_add_buffer(out, cn->pending);
}

/* Queues one message; dropped, with a debug line, when not connected
 * (hello re-sends every unacknowledged state on reconnect). */
static void send_msg(agent_conn_t *cn, const sl_proto_msg_t *m) {
    if (!cn->bev || !cn->connected) {
        sl_log(SL_LOG_DEBUG, "agent", "not connected: %s dropped", sl_proto_type_name(m->type));
        return;
    }
    char small[4096];
    size_t len;
    if (sl_proto_encode(m, small, sizeof small, &len) != 0) {
        sl_log(SL_LOG_ERROR, "agent", "cannot encode a %s message", sl_proto_type_name(m->type));
        return;
    }
    if (len < sizeof small) {
        evbuffer_add(cn->pending, small, len);
    } else {
        char *big = sl_xmalloc(len + 1);
        sl_proto_encode(m, big, len + 1, &len);
        evbuffer_add(cn->pending, big, len);
        sl_free(big);
    }
    if (cn->batch == 0) flush(cn);
}

/* The steps' sender (agent_steps_set_sender): a line already encoded. */
static void steps_send(void *ud, const char *line, size_t len) {
    agent_conn_t *cn = ud;
    if (!cn->bev || !cn->connected)
        return;
    evbuffer_add(cn->pending, line, len);
    if (cn->batch == 0) flush(cn);
}

void agent_conn_set_steps(agent_conn_t *cn, agent_steps_t *steps) {
    cn->steps = steps;
    agent_steps_set_sender(steps, steps_send, cn);
}

/* The tasks' sender (agent_tasks_set_sender). */
static void tasks_send(void *ud, const sl_proto_msg_t *m) {
    send_msg(ud, m);
}

static void send_hello(agent_conn_t *cn) {
    size_t ntasks;
    sl_proto_task_t *tasks = cn->ops->report(cn->ts, &ntasks);
    sl_proto_msg_t m = {.type = SL_PROTO_HELLO,
                        .u.hello = {.token = cn->cfg.token, .version = SLUICE_VERSION,
                                    .node = cn->cfg.node, .tasks = tasks, .ntasks = ntasks}};
    cn->hello_sent_us = fence_clock_us();
    send_msg(cn, &m);
    free(tasks);
}

static void on_welcome(agent_conn_t *cn, const sl_proto_welcome_t *w) {
    cn->health_first = true; /* this connection's first heartbeat carries the health report */
    cn->welcomed = 1;
    cn->redirects = 0;
    evtimer_del(cn->welcome_ev);
    snprintf(cn->instance, sizeof cn->instance, "%s",
             w->instance && sl_proto_instance_valid(w->instance) ? w->instance : "");
    cn->tls_why[0] = '\0';
    cn->backoff_ms = BACKOFF_FIRST_MS;
    cn->node_timeout_us = w->node_timeout_ms * 1000;
    cn->kill_grace_ms = w->kill_grace_ms;
    contact(cn, cn->hello_sent_us);
    cn->ops->welcome(cn->ts, w->instance); /* before any launch of this connection */
    if (w->heartbeat > 0 && w->heartbeat < cn->heartbeat_s) {
        cn->heartbeat_s = w->heartbeat;
        struct timeval tv = agent_tv_ms(cn->heartbeat_s * INT64_C(1000));
        evtimer_del(cn->heartbeat_ev);
        event_add(cn->heartbeat_ev, &tv);
    }
    sl_log(SL_LOG_INFO, "agent", "node=%s registered with controller %s:%s epoch=%llu",
           cn->cfg.node.name, cn->host, cn->port, (unsigned long long)cn->mark.highest);
}

/* Ends the connection once this loop pass's replies have left (drop_cb). */
static void drop_soon(agent_conn_t *cn, const char *why) {
    cn->drop_why = why;
    bufferevent_disable(cn->bev, EV_READ);
    struct timeval now = {0, 0};
    evtimer_add(cn->drop_ev, &now);
}

/* The epoch rule (proto_epoch.h) for message m (decoded with result rc):
 * true when it may be acted on, with a raised mark saved first; false when
 * it is refused: logged with both epochs, answered with an error, and the
 * connection dropped (what else it holds is as stale). */
static bool epoch_admit(agent_conn_t *cn, const sl_proto_msg_t *m, int rc) {
    const char *instance = m->type == SL_PROTO_WELCOME && rc == 0 ? m->u.welcome.instance
                                                                   : cn->instance;
    sl_epoch_mark_t mk = cn->mark;
    sl_epoch_verdict_t v = sl_epoch_admit(&mk, instance, m->epoch);
    if (v == SL_EPOCH_RAISED) {
        int e = cn->cfg.epoch_path ? agent_epoch_save(cn->cfg.epoch_path, &mk) : 0;
        if (e != 0)
            sl_log(SL_LOG_ERROR, "agent", "cannot write the epoch mark %s: %s (epoch %llu is "
                   "remembered until this agent stops)", cn->cfg.epoch_path, strerror(-e),
                   (unsigned long long)mk.highest);
        cn->mark = mk;
    }
    if (v != SL_EPOCH_REFUSED) return true;
    char msg[256];
    snprintf(msg, sizeof msg, "%s of epoch %llu refused: this agent has accepted epoch %llu from "
             "a newer controller; nothing in it was acted on",
             m->type != SL_PROTO_NONE ? sl_proto_type_name(m->type) : "message",
             (unsigned long long)m->epoch, (unsigned long long)cn->mark.highest);
    sl_log(SL_LOG_WARN, "agent", "controller %s:%s: %s", cn->host, cn->port, msg);
    if (!cn->refused) {
        sl_proto_msg_t e = {.type = SL_PROTO_ERROR, .u.error.message = msg};
        send_msg(cn, &e);
        cn->refused = true;
        drop_soon(cn, "refused: an older epoch than one accepted");
    }
    return false;
}

/* A controller that does not lead named the one that does (or none):
 * that one is tried next, at once, unless REDIRECT_HOPS redirects came in
 * a row without a welcome (then the list goes on, with the back-off). */
static void on_redirect(agent_conn_t *cn, const sl_proto_msg_t *m) {
    const char *leader = m->u.redirect.leader;
    char err[320];
    sl_hostport_t to;
    if (leader == NULL) {
        sl_log(SL_LOG_INFO, "agent", "controller %s:%s does not lead and knows no leader (epoch "
               "%llu); trying the next", cn->host, cn->port, (unsigned long long)m->epoch);
    } else if (sl_hostport_parse(leader, strlen(leader), &to, err, sizeof err) != 0) {
        sl_log(SL_LOG_WARN, "agent", "controller %s:%s: redirect: leader: %s; trying the next",
               cn->host, cn->port, err);
    } else if (cn->redirects >= REDIRECT_HOPS) {
        sl_log(SL_LOG_WARN, "agent", "controller %s:%s redirects to %s, the %dth redirect without "
               "a welcome; trying the next", cn->host, cn->port, leader, cn->redirects + 1);
        cn->redirects = 0;
    } else {
        sl_log(SL_LOG_INFO, "agent", "controller %s:%s does not lead: following its redirect to "
               "%s (epoch %llu)", cn->host, cn->port, leader, (unsigned long long)m->epoch);
        cn->redirects++;
        cn->redirect_to = to;
        cn->redirect_pending = true;
    }
    drop_soon(cn, cn->redirect_pending ? "redirected to the leader" : "not the leader");
}

/* Decodes one line and hands it to the tasks. A launch or logs request that
 * does not decode is still answered when its job and task could be read:
 * the controller waits for one or the other. */
static void dispatch(agent_conn_t *cn, const char *line, size_t len) {
    sl_proto_msg_t m;
    char err[512];
    int rc = sl_proto_decode_line(line, len, SL_PROTO_TO_AGENT, &m, err, sizeof err);
    int64_t attempt = m.has_attempt ? (int64_t)m.attempt : -1; /* of launch, kill, ack */
    /* A follower that knows no leader names none and sends epoch 0: a
     * redirect to nowhere orders nothing, so the epoch rule has nothing to
     * refuse in it (on_redirect tries the next controller). */
    bool leaderless = rc == 0 && m.type == SL_PROTO_REDIRECT && m.u.redirect.leader == NULL;
    if ((rc == 0 || rc == SL_ENOENT || m.type != SL_PROTO_NONE) && !leaderless &&
        !epoch_admit(cn, &m, rc)) {
        /* refused: nothing in it is acted on */
    } else if (rc == SL_ENOENT && cn->steps && agent_steps_handle_line(cn->steps, line, len)) {
        /* a job step's message (step.c) */
    } else if (rc == SL_ENOENT) {
        sl_log(SL_LOG_DEBUG, "agent", "%s; ignored", err);
    } else if (rc != 0 && m.type == SL_PROTO_LAUNCH && m.has_ids) {
        cn->ops->launch(cn->ts, m.job, m.task, attempt, NULL, err);
    } else if (rc != 0 && m.type == SL_PROTO_LOGS_REQ && m.has_ids) {
        sl_proto_msg_t r = {.type = SL_PROTO_LOGS_REPLY, .req = m.req, .job = m.job, .task = m.task,
                            .u.logs_reply.error = err};
        send_msg(cn, &r);
    } else if (rc != 0) {
        sl_log(SL_LOG_WARN, "agent", "bad message from controller: %s", err);
    } else {
        switch (m.type) {
        case SL_PROTO_LAUNCH:
            /* The record a fencing check reads: who sent it, of which epoch. */
            sl_log(SL_LOG_INFO, "agent", "job=%llu task=%d attempt=%lld launch accepted from "
                   "%s:%s epoch=%llu highest=%llu", (unsigned long long)m.job, (int)m.task,
                   (long long)attempt, cn->host, cn->port, (unsigned long long)m.epoch,
                   (unsigned long long)cn->mark.highest);
            cn->ops->launch(cn->ts, m.job, m.task, attempt, &m.u.launch, NULL);
            break;
        case SL_PROTO_KILL:
            cn->ops->kill(cn->ts, m.job, m.task, attempt, &m.u.kill);
            break;
        case SL_PROTO_ACK:
            cn->ops->ack(cn->ts, m.job, m.task, attempt);
            break;
        case SL_PROTO_LOGS_REQ:
            cn->ops->logs(cn->ts, m.req, m.job, m.task, m.u.logs_req.offset, m.u.logs_req.limit);
            break;
        case SL_PROTO_WELCOME:
            on_welcome(cn, &m.u.welcome);
            break;
        case SL_PROTO_HEARTBEAT_ECHO:
            if (m.u.heartbeat.seq > 0 && m.u.heartbeat.seq <= cn->hb_seq &&
                cn->hb_seq - m.u.heartbeat.seq < HB_RING)
                contact(cn, cn->hb_sent_us[m.u.heartbeat.seq % HB_RING]);
            break;
        case SL_PROTO_ERROR:
            sl_log(SL_LOG_ERROR, "agent", "controller refused node %s: %s", cn->cfg.node.name,
                   m.u.error.message);
            break;
        case SL_PROTO_REDIRECT:
            on_redirect(cn, &m);
            break;
        default:
            break;
        }
    }
    sl_proto_msg_fini(&m);
}

static void read_cb(struct bufferevent *bev, void *arg) {
    agent_conn_t *cn = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    char *line;
    size_t len;
    if (fence_check(cn)) return;
    cn->batch++;
    while (cn->bev == bev && !cn->refused &&
           (line = evbuffer_readln(in, &len, EVBUFFER_EOL_LF)) != NULL) {
        if (len > 0) dispatch(cn, line, len);
        free(line);
    }
    cn->batch--;
    flush(cn);
    if (cn->bev == bev && evbuffer_get_length(in) > SL_PROTO_MAX_LINE) {
        /* Dropped in the next loop pass, not now: the launches read above
         * are reported (started or failed) after this pass's state.json
         * write (task.c), and the controller takes a launch that was never
         * acknowledged when the connection closed for one that never
         * started. */
        bufferevent_disable(bev, EV_READ);
        struct timeval now = {0, 0};
        evtimer_add(cn->drop_ev, &now);
    }
}

static void drop_cb(evutil_socket_t fd, short ev, void *arg) {
    agent_conn_t *cn = arg;
    if (cn->bev) conn_drop(cn, cn->drop_why ? cn->drop_why : "message over 1 MiB");
}

static void event_cb(struct bufferevent *bev, short what, void *arg);

/* TLS: wraps the connected TCP bufferevent in an OpenSSL filter that
 * starts the handshake; 0, or -1 with the connection dropped. */
static int start_tls(agent_conn_t *cn) {
    SSL *ssl = SSL_new(cn->cfg.tls);
    if (ssl == NULL || sl_tls_set_host(ssl, cn->host) < 0) {
        SSL_free(ssl);
        conn_drop(cn, "cannot set up TLS");
        return -1;
    }
    struct bufferevent *f = bufferevent_openssl_filter_new(cn->base, cn->bev, ssl,
                                                           BUFFEREVENT_SSL_CONNECTING,
                                                           BEV_OPT_CLOSE_ON_FREE);
    if (f == NULL) {
        conn_drop(cn, "cannot set up TLS");
        return -1;
    }
    bufferevent_openssl_set_allow_dirty_shutdown(f, 1);
    cn->bev = f;
    cn->handshaking = 1;
    bufferevent_setcb(f, read_cb, NULL, event_cb, cn);
    bufferevent_enable(f, EV_READ | EV_WRITE);
    return 0;
}

/* Why a TLS connection failed, from OpenSSL's error queue (a certificate
 * that does not verify or name the host shows here). */
static void tls_drop(agent_conn_t *cn, struct bufferevent *bev) {
    char why[300] = "TLS handshake failed";
    unsigned long e = bufferevent_get_openssl_error(bev);
    if (e != 0 && ERR_GET_LIB(e) == 0) {
        /* Not OpenSSL's error but the socket's: the controller hung up,
         * which after a handshake it does when it wants a certificate. */
        snprintf(why, sizeof why, "TLS: the controller closed the connection (does it require "
                                  "a client certificate? see --cert and --key)");
    } else if (e != 0) {
        char buf[256];
        ERR_error_string_n(e, buf, sizeof buf);
        snprintf(why, sizeof why, "TLS: %s", buf);
    }
    while (bufferevent_get_openssl_error(bev) != 0) {
    }
    if (!cn->welcomed && strcmp(why, cn->tls_why) != 0) {
        sl_log(SL_LOG_WARN, "agent", "controller %s:%s: %s", cn->host, cn->port, why);
        snprintf(cn->tls_why, sizeof cn->tls_why, "%s", why);
    }
    conn_drop(cn, why);
}

static void event_cb(struct bufferevent *bev, short what, void *arg) {
    agent_conn_t *cn = arg;
    if (fence_check(cn)) return;
    if (what & BEV_EVENT_CONNECTED) {
        if (cn->cfg.tls && !cn->handshaking) {
            start_tls(cn);
            return;
        }
        cn->handshaking = 0;
        cn->connected = 1;
        send_hello(cn);
        return;
    }
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
        int e = EVUTIL_SOCKET_ERROR();
        if (cn->cfg.tls && (what & BEV_EVENT_ERROR) && cn->handshaking && e == 0) {
            tls_drop(cn, bev);
            return;
        }
        if (cn->cfg.tls && (what & BEV_EVENT_ERROR) && bufferevent_get_openssl_error(bev) != 0) {
            tls_drop(cn, bev);
            return;
        }
        conn_drop(cn, (what & BEV_EVENT_EOF) ? "connection closed" : strerror(e));
    }
}

static void welcome_cb(evutil_socket_t fd, short ev, void *arg) {
    agent_conn_t *cn = arg;
    if (fence_check(cn)) return;
    if (cn->bev && !cn->welcomed) conn_drop(cn, "no welcome within 5 s; trying the next");
}

static void try_connect(agent_conn_t *cn) {
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int e = getaddrinfo(cn->host, cn->port, &hints, &res);
    if (e != 0 || !res) {
        sl_log(SL_LOG_WARN, "agent", "cannot resolve %s: %s", cn->host, gai_strerror(e));
        schedule_reconnect(cn);
        return;
    }
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        sl_log(SL_LOG_WARN, "agent", "socket: %s", strerror(errno));
        freeaddrinfo(res);
        schedule_reconnect(cn);
        return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
    cn->bev = bufferevent_socket_new(cn->base, fd, BEV_OPT_CLOSE_ON_FREE);
    if (cn->cfg.ncontrollers > 1) { /* connect, TLS handshake, hello: a stopped one never ends */
        struct timeval tv = agent_tv_ms(WELCOME_WAIT_MS);
        evtimer_add(cn->welcome_ev, &tv);
    }
    bufferevent_setcb(cn->bev, read_cb, NULL, event_cb, cn);
    bufferevent_enable(cn->bev, EV_READ | EV_WRITE);
    if (bufferevent_socket_connect(cn->bev, res->ai_addr, (int)res->ai_addrlen) != 0) {
        freeaddrinfo(res);
        conn_drop(cn, "connect failed");
        return;
    }
    freeaddrinfo(res);
}

static void reconnect_cb(evutil_socket_t fd, short ev, void *arg) {
    agent_conn_t *cn = arg;
    fence_check(cn); /* nothing to drop: not connected */
    try_connect(cn);
}

static void heartbeat_cb(evutil_socket_t fd, short ev, void *arg) {
    agent_conn_t *cn = arg;
    struct timeval next = agent_tv_ms(cn->heartbeat_s * INT64_C(1000));
    evtimer_add(cn->heartbeat_ev, &next);
    if (fence_check(cn) || !cn->connected) return;
    int64_t now = fence_clock_us();
    if (cn->cfg.ncontrollers > 1 && cn->welcomed && cn->node_timeout_us > 0 &&
        now - cn->contact_us > cn->node_timeout_us / 2 + cn->heartbeat_s * INT64_C(1000000)) {
        /* The answer asked for in time did not come: this controller is
         * stopped or cut off. Another may lead by now, and its welcome
         * would be a contact before the fence comes (which this does not
         * delay: it counts from the last answer, whoever gives the next). */
        char why[160];
        snprintf(why, sizeof why, "no answer for %.1f s (half of node_timeout is %.1f s); trying "
                 "the next controller", (double)(now - cn->contact_us) / 1e6,
                 (double)cn->node_timeout_us / 2e6);
        conn_drop(cn, why);
        return;
    }
    cn->hb_seq++;
    cn->hb_sent_us[cn->hb_seq % HB_RING] = now;
    /* A seq asks for an answer: only when the contact needs one to stay
     * within half of node_timeout (proto_hb.h); the others are signs of
     * life that cost the controller no answer. */
    bool ask = sl_proto_heartbeat_asks(cn->contact_us > 0 ? now - cn->contact_us : -1,
                                       cn->heartbeat_s * INT64_C(1000000), cn->node_timeout_us);
    sl_proto_msg_t m = {.type = SL_PROTO_HEARTBEAT, .time = agent_now(),
                        .u.heartbeat.seq = ask ? cn->hb_seq : 0};
    sl_proto_usage_t *usage = NULL;
    if (cn->cfg.usage) m.u.heartbeat.nusage = cn->cfg.usage(cn->cfg.usage_ud, &usage);
    m.u.heartbeat.usage = usage;
    if (cn->cfg.health) cn->cfg.health(cn->cfg.health_ud, cn->health_first, &m.u.heartbeat.health);
    cn->health_first = false;
    send_msg(cn, &m);
    free(usage);
}

void agent_conn_heartbeat_now(agent_conn_t *cn) {
    if (cn && cn->connected) event_active(cn->heartbeat_ev, EV_TIMEOUT, 0);
}

/* The default ops: the real tasks (task.h). */
static void real_set_sender(void *ts, agent_tasks_send_fn send, void *ud) {
    agent_tasks_set_sender(ts, send, ud);
}
static void real_welcome(void *ts, const char *instance) {
    agent_tasks_welcome(ts, instance);
}
static void real_launch(void *ts, uint64_t job, int32_t task, int64_t attempt,
                        const sl_proto_launch_t *l, const char *why) {
    agent_tasks_launch(ts, job, task, attempt, l, why);
}
static void real_kill(void *ts, uint64_t job, int32_t task, int64_t attempt,
                      const sl_proto_kill_t *k) {
    agent_tasks_kill(ts, job, task, attempt, k);
}
static int real_fence(void *ts, int64_t grace_ms) {
    return agent_tasks_fence(ts, grace_ms);
}
static void real_ack(void *ts, uint64_t job, int32_t task, int64_t attempt) {
    agent_tasks_ack(ts, job, task, attempt);
}
static void real_logs(void *ts, uint64_t req, uint64_t job, int32_t task, int64_t offset,
                      int64_t limit) {
    agent_tasks_logs(ts, req, job, task, offset, limit);
}
static sl_proto_task_t *real_report(void *ts, size_t *n) {
    return agent_tasks_report(ts, n);
}
static const agent_conn_tasks_ops_t real_ops = {real_set_sender, real_welcome, real_launch,
                                                real_kill, real_fence, real_ack, real_logs,
                                                real_report};

int agent_conn_create(struct event_base *base, const agent_conn_config_t *cfg, void *ts,
                      agent_conn_t **out) {
    agent_conn_t *cn = sl_xcalloc(1, sizeof *cn);
    cn->base = base;
    cn->cfg = *cfg;
    cn->ts = ts;
    cn->ops = cfg->ops ? cfg->ops : &real_ops;
    cn->rng = ((uint64_t)fence_clock_us() ^ (uint64_t)(uintptr_t)cn) | 1;
    cn->backoff_ms = BACKOFF_FIRST_MS;
    cn->heartbeat_s = cfg->heartbeat_s;
    cn->pending = evbuffer_new();
    cn->reconnect_ev = evtimer_new(base, reconnect_cb, cn);
    cn->heartbeat_ev = evtimer_new(base, heartbeat_cb, cn);
    cn->fence_ev = evtimer_new(base, fence_cb, cn);
    cn->drop_ev = evtimer_new(base, drop_cb, cn);
    cn->welcome_ev = evtimer_new(base, welcome_cb, cn);
    cn->kill_grace_ms = -1;
    if (!cn->pending || !cn->reconnect_ev || !cn->heartbeat_ev || !cn->fence_ev || !cn->drop_ev ||
        !cn->welcome_ev)
        abort();
    cn->mark = cfg->epoch_mark;
    cn->host = cfg->ncontrollers > 0 ? cfg->controllers[0].host : cfg->host;
    cn->port = cfg->ncontrollers > 0 ? cfg->controllers[0].port : cfg->port;
    int64_t first_ms = cn->heartbeat_s * INT64_C(1000);
    if (cfg->heartbeat_spread) first_ms = 1 + jitter(cn, first_ms);
    struct timeval tv = agent_tv_ms(first_ms);
    evtimer_add(cn->heartbeat_ev, &tv);
    cn->ops->set_sender(ts, tasks_send, cn);
    try_connect(cn);
    *out = cn;
    return 0;
}

void agent_conn_destroy(agent_conn_t *cn) {
    if (!cn) return;
    cn->ops->set_sender(cn->ts, NULL, NULL);
    flush(cn);
    if (cn->bev) {
        /* Best effort: push out the last exits before the process ends. */
        struct evbuffer *out = bufferevent_get_output(cn->bev);
        size_t n = evbuffer_get_length(out);
        /* The output buffer's front is frozen for outside callers: write a
         * copy of it rather than draining it. */
        if (cn->connected && cn->cfg.tls) {
            /* TLS: the plaintext goes through SSL_write, whose bytes the
             * filter's BIO appends to the TCP bufferevent's output, which
             * is then written below like the plain case's. */
            SSL *ssl = bufferevent_openssl_get_ssl(cn->bev);
            unsigned char *p = evbuffer_pullup(out, -1);
            if (ssl && p && n > 0 && n <= INT32_MAX && SSL_write(ssl, p, (int)n) <= 0)
                sl_log(SL_LOG_DEBUG, "agent", "final TLS write failed");
            struct bufferevent *low = bufferevent_get_underlying(cn->bev);
            out = low ? bufferevent_get_output(low) : out;
            n = low ? evbuffer_get_length(out) : 0;
        }
        if (cn->connected && n > 0) {
            unsigned char *p = evbuffer_pullup(out, -1);
            if (p && write(bufferevent_getfd(cn->bev), p, n) < 0)
                sl_log(SL_LOG_DEBUG, "agent", "final write: %s", strerror(errno));
        }
        bufferevent_free(cn->bev);
    }
    event_free(cn->reconnect_ev);
    event_free(cn->heartbeat_ev);
    event_free(cn->fence_ev);
    event_free(cn->drop_ev);
    event_free(cn->welcome_ev);
    evbuffer_free(cn->pending);
    sl_free(cn);
}
