/*
 * agentport.c - the controller's side of the agent protocol
 * (docs/protocol.md): newline-delimited JSON over one TCP connection per
 * agent, on libevent bufferevents with TCP_NODELAY (OpenSSL bufferevents
 * when main.c sets ap->tls; with certs_bind_name, a hello must name the
 * node of the peer's verified client certificate: peer_may_be). Plain TCP
 * is read by an event of its own with one recv(2) per readable socket
 * (read_raw_cb) and written with a send(2) of its own when nothing waits
 * (conn_write): an idle controller's work is its agents' heartbeats.
 *
 * Every wire message the controller writes is encoded in this file (the
 * "encode" section) and every one it reads is decoded here (on_message and
 * its helpers); the domain sees only calls with plain values.
 *
 * Messages that depend on durable state (launch, kill, ack) go into the
 * node's queue and leave only once the iteration's COMMIT is durable (the
 * loop's AGENTS hook, ctl_agentport_flush, the output gate): outside HA
 * mode that is when the COMMIT returns, and the queues are written at
 * once; in HA mode, while any commit is not yet durable in the replicated
 * store, each queue moves at the flush into a chunk tagged with the
 * store's seq, at the tail of one FIFO for every node, and chunks leave
 * from its head as durable reaches their tag, only on the connection they
 * were queued for (a generation per node tells it from a later one at
 * the same address). A queue, or a chunk, is dropped when its connection
 * goes, because the agent's next hello lets the controller rebuild
 * exactly what it still needs: launches it never got are resent, kills
 * are repeated for tasks that should not run, exits it reports again are
 * recorded (idempotently) and acknowledged. The FIFO holds what a round
 * trip or two to the replicated store produce; a node whose share passes
 * CTL_AGENT_HELD_BYTES loses its connection, as if it had broken.
 * welcome, error, heartbeat answers, log requests and job steps' lines
 * are written at once.
 *
 * Credentials (docs/protocol.md, Hello): a hello carries the node token of
 * the name it claims, HMAC-SHA256(cluster_token, "sluice-node:" + name)
 * (config.c), or the cluster token itself, an operator's credential that no
 * node is given; names in revoked_nodes are refused whatever the token. A
 * connection has hello_timeout to say a valid hello, then it is closed.
 * A hello for a name whose agent is connected is refused, unless that
 * connection is closed by its peer (TCP no longer ESTABLISHED: an agent that
 * restarted, whose old connection's end the loop has not read yet) or has
 * said nothing for two heartbeat intervals (its agent is stopped or gone);
 * then the new one takes over, and tasks lost by the takeover are requeued
 * only after the old agent has fenced them (jobs.c).
 *
 * Every heartbeat that carries a seq is answered at once with a heartbeat
 * of the same seq: the agent counts the controller as in contact from the
 * time it sent what the controller answered (welcome answers hello), and
 * stops the tasks to requeue once that is older than node_timeout, which
 * the welcome tells it (Fencing in docs/protocol.md).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/util.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "net/agentport.h"
#include "views/batch.h"
#include "base/buf.h"
#include "domain/eff.h"
#include "domain/health.h"
#include "domain/jobs.h"
#include "domain/launch.h"
#include "domain/secrets.h"
#include "log.h"
#include "proto.h"
#include "proto_hb.h"
#include "seal.h"
#include "tls.h"

struct ctl_conn {
    ctl_agentport_t *ap;
    struct bufferevent *bev;
    ctl_lconn_t *slot;  /* the port's count of this connection (listen.h) */
    int32_t node;   /* -1 until a successful hello */
    char addr[64];
    bool in_cb;
    bool dead;      /* free once the current callback returns */
    bool closing;   /* free once the output has drained */
    struct event *hello_ev;     /* closes the connection without a hello in time */
    struct event *read_ev;      /* plain TCP: read by recv(2), not the bufferevent */
    struct evbuffer *partial;   /* plain TCP: a line not yet whole; NULL when none */
    int64_t last_read_mono_us;  /* when it last sent anything */
};

struct ctl_apnode {
    ctl_conn_t *conn;      /* NULL while the agent is not connected */
    uint64_t gen;          /* bumped whenever conn changes: which connection bytes were for */
    struct evbuffer *outq; /* messages waiting for the next flush */
    size_t held_bytes;     /* held by the gate for this connection (held_t) */
};

/* The output gate's unit: the bytes queued for node's connection of
 * generation gen before a flush whose seq was tag. They leave once
 * ctl_store_durable reaches tag, and only on that same connection. */
typedef struct held {
    sl_list_t link;        /* in ap->held, oldest first */
    uint64_t tag;
    uint32_t node;
    uint64_t gen;
    struct evbuffer *bytes;
} held_t;

/* The agent port's record of node id; created when create is set. */
static ctl_apnode_t *apnode(ctl_agentport_t *ap, uint32_t id, bool create) {
    if (id >= ap->nnodes) {
        if (!create)
            return NULL;
        size_t n = ap->nnodes ? 2 * ap->nnodes : 64;
        while (n <= id)
            n *= 2;
        ap->nodes = sl_xrealloc(ap->nodes, n * sizeof *ap->nodes);
        memset(ap->nodes + ap->nnodes, 0, (n - ap->nnodes) * sizeof *ap->nodes);
        ap->nnodes = n;
    }
    if (ap->nodes[id] == NULL && create) {
        ap->nodes[id] = sl_xcalloc(1, sizeof *ap->nodes[id]);
        ap->nodes[id]->outq = evbuffer_new();
    }
    return ap->nodes[id];
}

static void set_connected(ctl_agentport_t *ap, uint32_t id, ctl_conn_t *cn) {
    ctl_apnode_t *an = apnode(ap, id, true);
    an->conn = cn;
    an->gen++; /* what is held for the previous connection is dropped */
    an->held_bytes = 0;
    evbuffer_drain(an->outq, evbuffer_get_length(an->outq));
    ctl_node_t *n = ctl_node_get(ap->c, id);
    if (n)
        n->connected = cn != NULL;
}

static void conn_free(ctl_conn_t *cn) {
    ctl_agentport_t *ap = cn->ap;
    if (cn->node >= 0) {
        ctl_apnode_t *an = apnode(ap, (uint32_t)cn->node, false);
        if (an && an->conn == cn) {
            set_connected(ap, (uint32_t)cn->node, NULL);
            ap->logs_gone(ap->logs_ud, (uint32_t)cn->node, "the agent disconnected");
            sl_log(SL_LOG_INFO, "agent", "node=%s disconnected",
                   ctl_node_name(ap->c, cn->node));
            /* No new placements there, and what it never acknowledged
             * goes elsewhere (jobs.h). */
            ctl_node_disconnected(ap->c, (uint32_t)cn->node);
        }
    }
    if (cn->hello_ev)
        event_free(cn->hello_ev);
    if (cn->read_ev)
        event_free(cn->read_ev);
    if (cn->partial)
        evbuffer_free(cn->partial);
    bufferevent_free(cn->bev);
    ctl_lport_release(&ap->port, cn->slot);
    sl_free(cn);
}

static void conn_close(ctl_conn_t *cn) {
    if (cn->in_cb)
        cn->dead = true;
    else
        conn_free(cn);
}

/* Drops node's connection without telling anyone (its caller does). */
static void close_node(ctl_agentport_t *ap, uint32_t node) {
    ctl_apnode_t *an = apnode(ap, node, false);
    if (an && an->conn) {
        ctl_conn_t *cn = an->conn;
        set_connected(ap, node, NULL);
        cn->node = -1;
        conn_close(cn);
    }
}

/* Hands len bytes to cn's socket. With plain TCP and nothing queued ahead
 * of them, by a send(2) of their own: a short message (a heartbeat's answer,
 * a commit's launches) then costs no epoll_ctl to arm the bufferevent's write
 * event and another to disarm it, which was the largest cost of an idle
 * controller of 10,000 agents (bench/scale/, docs/scale.md). What the socket
 * does not take, and every byte under TLS or of a closing connection (whose
 * write callback must see the output drain), goes through the bufferevent. */
static void conn_write(ctl_conn_t *cn, const char *data, size_t len) {
    if (!cn->ap->tls && !cn->closing && evbuffer_get_length(bufferevent_get_output(cn->bev)) == 0) {
        ssize_t w = send(bufferevent_getfd(cn->bev), data, len, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (w > 0) {
            data += w;
            len -= (size_t)w;
        }
    }
    if (len > 0)
        bufferevent_write(cn->bev, data, len);
}

/* Queues msg for node until the next flush, which sends it once that
 * flush's commit is durable; dropped when the agent is not connected (its
 * next hello rebuilds what it needs). */
static void queue(ctl_agentport_t *ap, uint32_t node, const char *msg, size_t len) {
    ctl_apnode_t *an = apnode(ap, node, false);
    if (an == NULL || an->conn == NULL)
        return;
    if (evbuffer_get_length(an->outq) == 0) {
        if (ap->nflushq == ap->flushq_cap) {
            ap->flushq_cap = ap->flushq_cap ? 2 * ap->flushq_cap : 64;
            ap->flushq = sl_xrealloc(ap->flushq, ap->flushq_cap * sizeof *ap->flushq);
        }
        ap->flushq[ap->nflushq++] = node;
    }
    evbuffer_add(an->outq, msg, len);
    ctl_loop_kick(ap->c->loop);
}

/* Writes each queued node's messages to its connection: the flush
 * without the gate (nothing held, every commit durable). */
static void write_queued(ctl_agentport_t *ap) {
    for (size_t i = 0; i < ap->nflushq; i++) {
        ctl_apnode_t *an = apnode(ap, ap->flushq[i], false);
        if (an == NULL)
            continue;
        size_t len = evbuffer_get_length(an->outq);
        if (an->conn && len > 0)
            conn_write(an->conn, (const char *)evbuffer_pullup(an->outq, -1), len);
        evbuffer_drain(an->outq, len);
    }
    ap->nflushq = 0;
}

/* Moves each queued node's messages into a chunk tagged with seq at the
 * tail of the gate's FIFO (the bytes move, they are not copied). */
static void hold_queued(ctl_agentport_t *ap, uint64_t seq) {
    for (size_t i = 0; i < ap->nflushq; i++) {
        ctl_apnode_t *an = apnode(ap, ap->flushq[i], false);
        if (an == NULL)
            continue;
        size_t len = evbuffer_get_length(an->outq);
        if (an->conn && len > 0) {
            held_t *h = sl_xmalloc(sizeof *h);
            *h = (held_t){.tag = seq, .node = ap->flushq[i], .gen = an->gen,
                          .bytes = evbuffer_new()};
            if (h->bytes == NULL || evbuffer_add_buffer(h->bytes, an->outq) != 0)
                abort(); /* out of memory */
            sl_list_insert_tail(&ap->held, &h->link);
            an->held_bytes += len;
            ap->held_bytes += len;
        }
        evbuffer_drain(an->outq, evbuffer_get_length(an->outq));
    }
    ap->nflushq = 0;
}

/* Frees chunk h, written to its node's connection first when write is set
 * and that is still the connection it was queued for. */
static void held_free(ctl_agentport_t *ap, held_t *h, bool write) {
    ctl_apnode_t *an = apnode(ap, h->node, false);
    size_t len = evbuffer_get_length(h->bytes);
    if (an != NULL && an->gen == h->gen) {
        if (write && an->conn != NULL)
            conn_write(an->conn, (const char *)evbuffer_pullup(h->bytes, -1), len);
        an->held_bytes -= len;
    }
    ap->held_bytes -= len;
    sl_list_remove(&h->link);
    evbuffer_free(h->bytes);
    sl_free(h);
}

/* The chunks at the head of the FIFO whose tag is durable (agentport.h). */
bool ctl_agentport_release(void *ud) {
    ctl_agentport_t *ap = ud;
    uint64_t durable = ctl_store_durable(ap->c->store);
    while (!sl_list_empty(&ap->held)) {
        held_t *h = SL_LIST_ENTRY(sl_list_first(&ap->held), held_t, link);
        if (h->tag > durable)
            break;
        held_free(ap, h, true);
    }
    return false;
}

/* The gate's bound: a node whose held output passed CTL_AGENT_HELD_BYTES
 * loses its connection, as if it had broken (its held bytes are then
 * dropped and its agent's next hello rebuilds what it needs). Only looked
 * at while everything held passes the bound. O(nodes) then. */
static void bound_held(ctl_agentport_t *ap) {
    if (ap->held_bytes <= CTL_AGENT_HELD_BYTES)
        return;
    for (size_t i = 0; i < ap->nnodes; i++) {
        ctl_apnode_t *an = ap->nodes[i];
        if (an == NULL || an->conn == NULL || an->held_bytes <= CTL_AGENT_HELD_BYTES)
            continue;
        sl_log(SL_LOG_WARN, "agent", "node=%s: %zu bytes wait for a durable commit; its "
               "connection is closed", ctl_node_name(ap->c, (int32_t)i), an->held_bytes);
        conn_close(an->conn); /* tells the domain, as a dropped connection does */
    }
}

/* The output gate. Outside HA mode every commit is durable when the COMMIT
 * hook returns (durable == seq) and nothing is ever held: the messages are
 * written at once, as before the gate. Otherwise they join the FIFO behind
 * what is held, and the FIFO's durable head is written out. */
bool ctl_agentport_flush(void *ud) {
    ctl_agentport_t *ap = ud;
    uint64_t seq = ctl_store_seq(ap->c->store), durable = ctl_store_durable(ap->c->store);
    if (durable >= seq && sl_list_empty(&ap->held)) {
        write_queued(ap);
        return false;
    }
    hold_queued(ap, seq);
    ctl_agentport_release(ap);
    bound_held(ap);
    return false;
}

/* ---- encode: every message the controller writes (through proto.h) ---- */

/* Encodes m, stamped with the controller's epoch (every message to an
 * agent carries it: docs/protocol.md, "Controllers and epochs"), into a
 * line: into small when it fits, else into a new block that *big holds
 * (the caller frees it). NULL when m cannot be encoded, which only a bug
 * can cause (logged). */
static const char *encode(const ctl_t *c, const sl_proto_msg_t *msg, char *small, size_t cap,
                          char **big, size_t *len) {
    sl_proto_msg_t stamped = *msg;
    const sl_proto_msg_t *m = &stamped;
    stamped.epoch = c->epoch;
    *big = NULL;
    if (sl_proto_encode(m, small, cap, len) != 0) {
        sl_log(SL_LOG_ERROR, "agent", "cannot encode a %s message", sl_proto_type_name(m->type));
        return NULL;
    }
    if (*len < cap)
        return small;
    *big = sl_proto_encode_alloc(m, len);
    return *big;
}

/* Queues m for node (see queue). */
static void queue_msg(ctl_agentport_t *ap, uint32_t node, const sl_proto_msg_t *m) {
    char small[1024], *big;
    size_t len;
    const char *line = encode(ap->c, m, small, sizeof small, &big, &len);
    if (line)
        queue(ap, node, line, len);
    sl_free(big);
}

/* Writes m on cn at once (welcome, error, a heartbeat's answer). */
static void send_now(ctl_conn_t *cn, const sl_proto_msg_t *m) {
    char small[1024], *big;
    size_t len;
    const char *line = encode(cn->ap->c, m, small, sizeof small, &big, &len);
    if (line)
        conn_write(cn, line, len);
    sl_free(big);
}

/* A launch (batch.h builds it: the spec's argv and env or a batch
 * script's runner, the placement, the Unix identity, the attempt). One
 * that would not fit in a line of the protocol is not sent: the agent
 * would refuse it and the task would never start. */
static int out_launch(void *ud, const ctl_job_t *j, int32_t i) {
    ctl_agentport_t *ap = ud;
    ctl_t *c = ap->c;
    ctl_launch_cmd_t lc;
    int32_t gpus[SL_MAX_GPUS_PER_NODE];
    sl_proto_msg_t m;
    ctl_launch_msg_init(c, j, i, &lc, gpus, &m);
    /* The task's secrets, opened for this message only (never logged). */
    ctl_secrets_res_t sr;
    char why[256];
    if (ctl_secrets_resolve(c, j, &sr, why, sizeof why) != 0) {
        sl_log(SL_LOG_ERROR, "agent", "job=%llu task=%d: not launched: %s",
               (unsigned long long)j->id, i, why);
        snprintf(c->launch_why, sizeof c->launch_why, "%.190s", why);
        ctl_secrets_res_fini(&sr);
        ctl_launch_cmd_fini(&lc);
        return SL_EIO;
    }
    m.u.launch.secrets = sr.out;
    char small[1024], *big;
    size_t len;
    const char *line = encode(c, &m, small, sizeof small, &big, &len);
    int rc = line == NULL ? SL_EINVAL : len > (size_t)SL_PROTO_MAX_LINE + 1 ? SL_EOVERFLOW : 0;
    if (rc == 0) {
        queue(ap, (uint32_t)j->tasks[i].node, line, len);
        c->n.tasks_launched++;
    } else {
        sl_log(SL_LOG_ERROR, "agent", "job=%llu task=%d: its launch of %zu bytes is not sent: over "
               "the protocol's %d bytes", (unsigned long long)j->id, i, len, SL_PROTO_MAX_LINE);
    }
    /* The queue has copied the line: wipe the values from these copies. */
    if (big) sl_wipe(big, len);
    sl_wipe(small, sizeof small);
    sl_free(big);
    ctl_secrets_res_fini(&sr);
    ctl_launch_cmd_fini(&lc);
    return rc;
}

static void out_kill(void *ud, uint32_t node, uint64_t job, int32_t task, int64_t attempt) {
    ctl_agentport_t *ap = ud;
    sl_proto_msg_t m = {.type = SL_PROTO_KILL, .job = job, .task = task,
                        .has_attempt = attempt >= 0, .attempt = attempt >= 0 ? (uint32_t)attempt : 0,
                        .u.kill.grace_ms = ap->c->cfg.kill_grace_ms};
    queue_msg(ap, node, &m);
}

static void out_stop(void *ud, uint32_t node, uint64_t job, int32_t task, int64_t attempt,
                     const sl_proto_kill_t *k) {
    sl_proto_msg_t m = {.type = SL_PROTO_KILL, .job = job, .task = task,
                        .has_attempt = attempt >= 0, .attempt = attempt >= 0 ? (uint32_t)attempt : 0,
                        .u.kill = *k};
    queue_msg(ud, node, &m);
}

static void out_node_down(void *ud, uint32_t node, const char *why) {
    ctl_agentport_t *ap = ud;
    close_node(ap, node);
    ap->logs_gone(ap->logs_ud, node, "the node failed");
}

/* The ack of an end report, naming the report's attempt (< 0: none). */
static void send_ack(ctl_agentport_t *ap, uint32_t node, uint64_t job, int32_t task,
                     int64_t attempt) {
    sl_proto_msg_t m = {.type = SL_PROTO_ACK, .job = job, .task = task,
                        .has_attempt = attempt >= 0, .attempt = attempt >= 0 ? (uint32_t)attempt : 0};
    queue_msg(ap, node, &m);
}

/* Sends an error and closes the connection once it has drained. Logged as
 * a warning, except a repeat of the previous refusal (an agent retrying with
 * backoff), which is logged at debug level. */
static void reject(ctl_conn_t *cn, const char *msg) {
    ctl_agentport_t *ap = cn->ap;
    sl_proto_msg_t m = {.type = SL_PROTO_ERROR, .u.error.message = msg};
    cn->closing = true; /* first: the error then goes through the bufferevent,
                         * whose write callback closes once it has drained */
    send_now(cn, &m);
    bufferevent_disable(cn->bev, EV_READ);
    if (cn->read_ev)
        event_del(cn->read_ev);
    bool again = strncmp(ap->last_reject, msg, sizeof ap->last_reject - 1) == 0;
    sl_log(again ? SL_LOG_DEBUG : SL_LOG_WARN, "agent", "addr=%s rejected: %s", cn->addr, msg);
    snprintf(ap->last_reject, sizeof ap->last_reject, "%s", msg);
}

int ctl_agentport_send_line(void *ud, uint32_t node, const char *line, size_t len) {
    ctl_agentport_t *ap = ud;
    ctl_apnode_t *an = apnode(ap, node, false);
    if (an == NULL || an->conn == NULL)
        return SL_ENOENT;
    conn_write(an->conn, line, len);
    return 0;
}

int ctl_agentport_logs(void *ud, uint32_t node, uint64_t req, uint64_t job, int32_t task,
                       int64_t offset, int64_t limit) {
    ctl_agentport_t *ap = ud;
    ctl_apnode_t *an = apnode(ap, node, false);
    if (an == NULL || an->conn == NULL)
        return SL_ENOENT;
    sl_proto_msg_t m = {.type = SL_PROTO_LOGS_REQ, .req = req, .job = job, .task = task,
                        .epoch = ap->c->epoch, .u.logs_req = {.offset = offset, .limit = limit}};
    char line[256];
    size_t len;
    if (sl_proto_encode(&m, line, sizeof line, &len) != 0 || len >= sizeof line)
        return SL_EINVAL;
    return bufferevent_write(an->conn->bev, line, len) == 0 ? 0 : SL_EIO;
}

/* ---- decode: every message the controller reads (through proto.h) ---- */

/* A message's time (seconds since the epoch) in microseconds; now when the
 * message had none. */
static int64_t time_us(double t) {
    return t > 0 ? (int64_t)llround(t * 1e6) : ctl_now_us();
}

/* An exit status the codec flagged as impossible for a process comes from
 * a broken agent: it is logged and recorded as exit code 255, a failure,
 * rather than wrapped into int32 (2^32 would read as 0, a success;
 * 128+INT32_MAX overflows). */
static void wait_status(ctl_t *c, uint32_t node, uint64_t job, int32_t task, int64_t code,
                        int64_t sig, bool bad, int32_t *code_out, int32_t *sig_out) {
    if (bad) {
        sl_log(SL_LOG_WARN, "agent",
               "node=%s job=%llu task=%d: exit_code=%lld signal=%lld out of range; "
               "recorded as exit code 255",
               ctl_node_name(c, (int32_t)node), (unsigned long long)job, task, (long long)code,
               (long long)sig);
        sig = 0;
        code = 255;
    }
    *code_out = (int32_t)code;
    *sig_out = (int32_t)sig;
}

/* How an exit's memory ended (docs/protocol.md, Enforcement); zeroed for
 * a `failed` report. */
typedef struct mem_end {
    bool oom_killed;
    int64_t peak, limit;
} mem_end_t;

/* An `exited` or `failed` report of attempt `attempt` (< 0: none) (a
 * message, or an entry of a hello's tasks): recorded by the domain unless
 * it is of another attempt than the task's, then acknowledged after the
 * commit. */
static void on_end(ctl_agentport_t *ap, uint32_t node, uint64_t job, int32_t task, int64_t attempt,
                   bool failed, const char *reason, int64_t code, int64_t sig, bool bad,
                   bool fenced, double t, mem_end_t mem) {
    ctl_t *c = ap->c;
    int32_t i;
    bool stale;
    ctl_job_t *j = ctl_task_find_report(c, node, job, task, attempt, failed ? "failed" : "exited",
                                        &i, &stale);
    if (j != NULL && fenced) {
        /* Its agent stopped it for lack of contact: lost with its node, so
         * its job is requeued or failed per on_node_failure. */
        char why[160];
        snprintf(why, sizeof why, "the agent on %s stopped task %d after losing contact with "
                 "the controller for longer than node_timeout", ctl_node_name(c, (int32_t)node), i);
        ctl_job_lose(c, j, node, i, why);
    } else if (j != NULL) {
        if (failed) {
            ctl_node_task_end(c, node, job, i, CTL_TASK_FAILED, 0, 0, reason, time_us(t));
        } else {
            int32_t code32, sig32;
            wait_status(c, node, job, i, code, sig, bad, &code32, &sig32);
            ctl_node_task_mem(c, node, job, i, mem.oom_killed, mem.peak, mem.limit);
            ctl_node_task_end(c, node, job, i, CTL_TASK_EXITED, code32, sig32, NULL, time_us(t));
        }
    }
    send_ack(ap, node, job, task, attempt); /* leaves after the commit that recorded the exit */
}

/* May this connection speak for node name? Always without TLS name
 * binding; with it, only when the peer's verified client certificate
 * names that node (docs/security.md), so a certificate for n1 cannot
 * hello as n2. */
static bool peer_may_be(ctl_conn_t *cn, const char *name) {
    if (!cn->ap->certs_bind_name)
        return true;
    return sl_tls_peer_is(bufferevent_openssl_get_ssl(cn->bev), name);
}

/* True when the peer of cn has closed or reset its end (TCP is no longer
 * ESTABLISHED), also while unread bytes still precede that end. */
static bool peer_gone(ctl_conn_t *cn) {
    struct tcp_info ti;
    socklen_t len = sizeof ti;
    if (getsockopt(bufferevent_getfd(cn->bev), IPPROTO_TCP, TCP_INFO, &ti, &len) != 0)
        return true;
    return ti.tcpi_state != TCP_ESTABLISHED;
}

/* Whether a hello for node `name` on cn may take the node over from the
 * agent connected under that name, if any: true when none is, or when its
 * connection is gone or silent for two heartbeat intervals (that one is
 * then closed, and its tasks fenced from its last message). False, with
 * the refusal sent, otherwise. */
static bool take_over(ctl_conn_t *cn, const char *name) {
    ctl_agentport_t *ap = cn->ap;
    ctl_t *c = ap->c;
    const sl_node_t *nd = sl_cluster_find_node(c->cl, name);
    ctl_apnode_t *an = nd ? apnode(ap, nd->id, false) : NULL;
    if (an == NULL || an->conn == NULL || an->conn == cn)
        return true;
    ctl_conn_t *old = an->conn;
    int64_t silent_us = ctl_mono_us() - old->last_read_mono_us;
    bool gone = peer_gone(old);
    if (!gone && silent_us <= 2 * INT64_C(1000000) * c->cfg.heartbeat_s) {
        char msg[SL_NAME_MAX + 120];
        snprintf(msg, sizeof msg, "node %s is already connected from %s", name, old->addr);
        reject(cn, msg);
        return false;
    }
    sl_log(SL_LOG_INFO, "agent", "node=%s: new connection from %s replaces the one from %s (%s)",
           name, cn->addr, old->addr, gone ? "closed by its peer" : "silent");
    if (!gone) /* its agent may still run tasks: fenced from its last word */
        ctl_node_fence(c, nd->id, old->last_read_mono_us + ctl_fence_wait_us(c));
    close_node(ap, nd->id);
    return true;
}

static void on_hello(ctl_conn_t *cn, const sl_proto_msg_t *m, int rc, const char *derr) {
    ctl_agentport_t *ap = cn->ap;
    ctl_t *c = ap->c;
    const sl_proto_hello_t *h = &m->u.hello;
    const char *name = h->node.name;
    /* The token first, whatever else is wrong: an unknown peer learns
     * nothing more. Both compares always run, in constant time. */
    char ntok[CTL_NODE_TOKEN_LEN + 1] = "";
    if (name != NULL)
        ctl_node_token(c->cfg.cluster_token, name, ntok, sizeof ntok);
    bool cluster_ok = ctl_token_eq(h->token, c->cfg.cluster_token);
    bool node_ok = ctl_token_eq(h->token, ntok);
    if (!cluster_ok && !node_ok) {
        char msg[SL_NAME_MAX + 80];
        snprintf(msg, sizeof msg, "bad token: neither the node token of %s nor the cluster token",
                 name && strlen(name) < SL_NAME_MAX ? name : "this node");
        reject(cn, msg);
        return;
    }
    if (rc != 0) {
        reject(cn, derr);
        return;
    }
    if (!peer_may_be(cn, h->node.name)) {
        sl_log(SL_LOG_WARN, "agent", "addr=%s: hello as node=%s refused: the client certificate "
               "does not name that node", cn->addr, h->node.name ? h->node.name : "");
        reject(cn, "the client certificate does not name this node");
        return;
    }
    if (ctl_node_revoked(&c->cfg, name)) {
        char msg[SL_NAME_MAX + 80];
        snprintf(msg, sizeof msg, "node %s is revoked (revoked_nodes in the configuration)", name);
        reject(cn, msg);
        return;
    }
    if (!take_over(cn, name))
        return;
    const sl_proto_node_t *pn = &h->node;
    sl_node_spec_t ns = {.name = pn->name, .cpu_milli = pn->cpu_milli, .mem_bytes = pn->mem_bytes,
                         .gpus = pn->gpus, .gpu_model = pn->gpu_model,
                         .gpu_mem_bytes = pn->gpu_mem_bytes, .pool = pn->pool,
                         .labels = pn->labels, .taints = pn->taints};
    uint32_t id;
    char err[256];
    if (ctl_node_hello(c, &ns, pn->addr && pn->addr[0] ? pn->addr : cn->addr, &id, err,
                       sizeof err) < 0) {
        char msg[300];
        snprintf(msg, sizeof msg, "hello: %s", err);
        reject(cn, msg);
        return;
    }
    set_connected(ap, id, cn);
    cn->node = (int32_t)id;
    event_del(cn->hello_ev);
    sl_proto_msg_t w = {.type = SL_PROTO_WELCOME,
                        .u.welcome = {.node = ctl_node_name(c, (int32_t)id),
                                      .heartbeat = c->cfg.heartbeat_s,
                                      .node_timeout_ms = c->cfg.node_timeout_ms,
                                      .kill_grace_ms = c->cfg.kill_grace_ms,
                                      .instance = ctl_store_instance(c->store)}};
    send_now(cn, &w);

    /* Reconcile what the agent runs with what the controller recorded. A
     * task of another cluster instance (launched before this database was
     * made anew) is not one of ours, whatever its job id says: its agent
     * stops it on our welcome and never reports it again. */
    const char *self = ctl_store_instance(c->store);
    for (size_t k = 0; k < h->ntasks; k++) {
        const sl_proto_task_t *t = &h->tasks[k];
        int64_t attempt = t->has_attempt ? (int64_t)t->attempt : -1;
        if (t->instance != NULL && strcmp(t->instance, self) != 0) {
            sl_log(SL_LOG_INFO, "agent", "node=%s job=%llu task=%d is of cluster instance %s, not "
                   "this one (%s): left to its agent, which stops it", name,
                   (unsigned long long)t->job, t->task, t->instance, self);
            continue;
        }
        ctl_job_id_reported(c, id, t->job);
        if (t->state == SL_PROTO_TASK_RUNNING)
            ctl_node_hello_running(c, id, t->job, t->task, attempt, t->pid, time_us(t->start_time));
        else
            on_end(ap, id, t->job, t->task, attempt, t->state == SL_PROTO_TASK_FAILED, t->reason,
                   t->exit_code, t->signal, t->status_out_of_range, t->fenced, t->end_time,
                   (mem_end_t){t->oom_killed, t->mem_peak, t->mem_limit});
    }
    ctl_node_hello_end(c, id);
    ctl_node_t *n = ctl_node_get(c, id);
    sl_log(SL_LOG_INFO, "agent", "node=%s up addr=%s gpus=%d tasks=%zu", ctl_node_name(c, (int32_t)id),
           n->addr, sl_cluster_node(c->cl, id)->ngpus, h->ntasks);
}

/* A heartbeat with a seq is answered at once (not after a commit): the
 * agent's fencing clock. One without asks for no answer (proto_hb.h). */
static void answer_heartbeat(ctl_conn_t *cn, uint64_t seq) {
    if (seq > 0) {
        sl_proto_msg_t e = {.type = SL_PROTO_HEARTBEAT_ECHO, .u.heartbeat.seq = seq};
        send_now(cn, &e);
    }
}

static void on_message(ctl_conn_t *cn, json_t *o) {
    ctl_agentport_t *ap = cn->ap;
    ctl_t *c = ap->c;
    sl_proto_msg_t m;
    char err[300];
    int rc = sl_proto_decode(o, SL_PROTO_TO_CTL, &m, err, sizeof err);
    c->n.agent_messages++;
    if (rc != 0 && m.type == SL_PROTO_NONE && rc != SL_ENOENT) {
        sl_log(SL_LOG_WARN, "agent", "addr=%s message without type ignored", cn->addr);
        goto out;
    }
    if (cn->node < 0) {
        if (m.type == SL_PROTO_HELLO)
            on_hello(cn, &m, rc, err);
        else
            reject(cn, "the first message must be hello");
        goto out;
    }
    uint32_t node = (uint32_t)cn->node;
    ctl_node_heard(c, node, m.type == SL_PROTO_HEARTBEAT);
    if (rc != 0 && !(m.type == SL_PROTO_LOGS_REPLY || m.has_ids)) {
        if (rc == SL_ENOENT && ap->step_msg && ap->step_msg(ap->step_ud, node, o))
            goto out; /* a job step's (steps.c) */
        const char *type = json_string_value(json_object_get(o, "type"));
        const char *said = json_string_value(json_object_get(o, "message"));
        if (rc == SL_ENOENT && type && strcmp(type, "error") == 0 && said) /* the agent refused us */
            sl_log(SL_LOG_WARN, "agent", "node=%s refused this controller (epoch %llu): %.300s",
                   ctl_node_name(c, (int32_t)node), (unsigned long long)c->epoch, said);
        else if (rc == SL_ENOENT)
            sl_log(SL_LOG_DEBUG, "agent", "node=%s %s; ignored", ctl_node_name(c, (int32_t)node), err);
        else
            sl_log(SL_LOG_WARN, "agent", "node=%s: %s; ignored", ctl_node_name(c, (int32_t)node), err);
        goto out;
    }
    if (rc != 0)
        sl_log(SL_LOG_WARN, "agent", "node=%s: %s", ctl_node_name(c, (int32_t)node), err);
    /* From here on rc != 0 means a readable job and task (has_ids) with a
     * bad field: the report still counts, with what could be read. */
    int64_t attempt = m.has_attempt ? (int64_t)m.attempt : -1;
    switch (m.type) {
    case SL_PROTO_HEARTBEAT:
        answer_heartbeat(cn, m.u.heartbeat.seq);
        ctl_eff_report(c, node, m.u.heartbeat.usage, m.u.heartbeat.nusage);
        if (m.u.heartbeat.health.present)
            ctl_health_report(c, node, &m.u.heartbeat.health);
        break;
    case SL_PROTO_STARTED:
        ctl_node_task_started(c, node, m.job, m.task, attempt, m.u.started.pid, time_us(m.time));
        break;
    case SL_PROTO_EXITED:
        on_end(ap, node, m.job, m.task, attempt, false, NULL, m.u.exited.exit_code, m.u.exited.signal,
               m.u.exited.status_out_of_range || rc != 0, m.u.exited.fenced, m.time,
               (mem_end_t){m.u.exited.oom_killed, m.u.exited.mem_peak, m.u.exited.mem_limit});
        break;
    case SL_PROTO_FAILED:
        on_end(ap, node, m.job, m.task, attempt, true, m.u.failed.reason, 0, 0, false, false,
               m.time, (mem_end_t){0});
        break;
    case SL_PROTO_LOGS_REPLY:
        ap->logs_answer(ap->logs_ud, m.req, rc != 0 ? err : m.u.logs_reply.error,
                        m.u.logs_reply.data, m.u.logs_reply.data_len, m.u.logs_reply.offset,
                        m.u.logs_reply.eof);
        break;
    case SL_PROTO_HELLO:
        reject(cn, "hello sent twice");
        break;
    default:
        break;
    }
out:
    sl_proto_msg_fini(&m);
}

/* ---- connections ---- */

/* One line from cn, without its newline: parsed and handled (a line that
 * is not a JSON object rejects the connection). */
static void on_line(ctl_conn_t *cn, const char *line, size_t len) {
    if (len == 0)
        return;
    uint64_t seq;
    if (cn->node >= 0 && sl_proto_heartbeat_scan(line, len, &seq)) {
        /* A plain heartbeat, as on_message would handle it (no usage to
         * report), without building and freeing its JSON tree. */
        cn->ap->c->n.agent_messages++;
        ctl_node_heard(cn->ap->c, (uint32_t)cn->node, true);
        answer_heartbeat(cn, seq);
        return;
    }
    json_error_t jerr;
    json_t *m = json_loadb(line, len, 0, &jerr);
    if (m == NULL || !json_is_object(m)) {
        char msg[300];
        snprintf(msg, sizeof msg, "bad JSON at position %d: %s", jerr.position, jerr.text);
        json_decref(m);
        reject(cn, msg);
        return;
    }
    on_message(cn, m);
    json_decref(m);
}

/* Handles the whole lines in in (cn's), leaving a partial one; a partial
 * line over 1 MiB rejects the connection. */
static void read_lines(ctl_conn_t *cn, struct evbuffer *in) {
    while (!cn->dead && !cn->closing) {
        size_t len;
        char *line = evbuffer_readln(in, &len, EVBUFFER_EOL_LF);
        if (line == NULL) {
            if (evbuffer_get_length(in) > CTL_MAX_MSG)
                reject(cn, "message longer than 1 MiB");
            break;
        }
        on_line(cn, line, len);
        free(line);
    }
}

/* The bufferevent's read callback (TLS connections). */
static void read_cb(struct bufferevent *bev, void *ud) {
    ctl_conn_t *cn = ud;
    cn->in_cb = true;
    cn->last_read_mono_us = ctl_mono_us();
    read_lines(cn, bufferevent_get_input(bev));
    cn->in_cb = false;
    if (cn->dead)
        conn_free(cn);
}

/* Plain TCP's read callback: one recv(2) into a buffer on the stack, its
 * whole lines handled from there, only a partial line copied into a buffer
 * of the connection's own (not the bufferevent's input, whose end the
 * bufferevent keeps frozen to all but itself). The bufferevent's own read
 * asks the socket how much it holds (an ioctl FIONREAD) before each read,
 * and evbuffer_readln copies each line into a new block: at 10,000 agents,
 * 5,000 heartbeats a second, the ioctl alone was 5% of an idle
 * controller's samples (docs/scale.md). The bufferevent still writes
 * (conn_write) and reports write errors (event_cb). */
static void read_raw_cb(evutil_socket_t fd, short what, void *ud) {
    ctl_conn_t *cn = ud;
    char buf[65536];
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) {
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            return;
        conn_close(cn); /* the peer's end (0) or a reset: as the bufferevent's event_cb */
        return;
    }
    cn->in_cb = true;
    cn->last_read_mono_us = ctl_mono_us();
    const char *p = buf, *end = buf + n;
    if (cn->partial == NULL || evbuffer_get_length(cn->partial) == 0) {
        const char *nl;
        while (!cn->dead && !cn->closing && (nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
            on_line(cn, p, (size_t)(nl - p));
            p = nl + 1;
        }
    }
    if (p < end && !cn->dead && !cn->closing) {
        if (cn->partial == NULL && (cn->partial = evbuffer_new()) == NULL)
            abort(); /* out of memory */
        if (evbuffer_add(cn->partial, p, (size_t)(end - p)) != 0)
            abort();
        read_lines(cn, cn->partial);
    }
    cn->in_cb = false;
    if (cn->dead)
        conn_free(cn);
}

static void write_cb(struct bufferevent *bev, void *ud) {
    ctl_conn_t *cn = ud;
    if (cn->closing && evbuffer_get_length(bufferevent_get_output(bev)) == 0)
        conn_close(cn);
}

static void event_cb(struct bufferevent *bev, short what, void *ud) {
    ctl_conn_t *cn = ud;
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
        conn_close(cn);
}

/* The port's eviction when it is full: a connection that has not said
 * hello (and is not being read right now) makes room for a new one. */
static bool evict_silent(void *arg, void *ud) {
    ctl_conn_t *cn = ud;
    if (cn->node >= 0 || cn->in_cb || cn->dead || cn->closing)
        return false;
    conn_free(cn);
    return true;
}

/* A connection that has not said a valid hello by now is closed (also one
 * refused and still draining its error to a peer that does not read). */
static void hello_timeout_cb(evutil_socket_t fd, short what, void *ud) {
    ctl_conn_t *cn = ud;
    if (cn->node >= 0)
        return;
    sl_log(SL_LOG_DEBUG, "agent", "addr=%s closed: no hello within %.1f s", cn->addr,
           (double)cn->ap->c->cfg.hello_timeout_ms / 1000);
    conn_close(cn);
}

/* Arms cn's hello deadline (accept_cb). */
static void conn_hello_deadline(ctl_conn_t *cn) {
    int64_t ms = cn->ap->c->cfg.hello_timeout_ms;
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};
    cn->last_read_mono_us = ctl_mono_us();
    cn->hello_ev = evtimer_new(cn->ap->c->loop->base, hello_timeout_cb, cn);
    evtimer_add(cn->hello_ev, &tv);
}

static void accept_cb(struct evconnlistener *lst, evutil_socket_t fd, struct sockaddr *sa, int salen,
                      void *ud) {
    ctl_agentport_t *ap = ud;
    ctl_conn_t *cn = sl_xcalloc(1, sizeof *cn);
    cn->slot = ctl_lport_admit(&ap->port, sa, cn);
    if (cn->slot == NULL) { /* over a limit: counted, logged once per interval */
        sl_free(cn);
        evutil_closesocket(fd);
        return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    cn->ap = ap;
    cn->node = -1;
    if (sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((struct sockaddr_in *)sa)->sin_addr, cn->addr, sizeof cn->addr);
    else if (sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)sa)->sin6_addr, cn->addr, sizeof cn->addr);
    if (ap->tls) {
        /* The handshake runs in the loop; a peer that fails it (no or a
         * wrong certificate, plain TCP, garbage) gets an error event and
         * is closed like any dropped connection. */
        SSL *ssl = SSL_new(ap->tls);
        if (ssl == NULL)
            abort(); /* out of memory */
        cn->bev = bufferevent_openssl_socket_new(ap->c->loop->base, fd, ssl,
                                                 BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
        bufferevent_openssl_set_allow_dirty_shutdown(cn->bev, 1);
    } else {
        cn->bev = bufferevent_socket_new(ap->c->loop->base, fd, BEV_OPT_CLOSE_ON_FREE);
        cn->read_ev = event_new(ap->c->loop->base, fd, EV_READ | EV_PERSIST, read_raw_cb, cn);
        if (cn->bev == NULL || cn->read_ev == NULL)
            abort(); /* out of memory */
    }
    bufferevent_setcb(cn->bev, read_cb, write_cb, event_cb, cn);
    if (cn->read_ev) {
        bufferevent_enable(cn->bev, EV_WRITE);
        event_add(cn->read_ev, NULL);
    } else {
        bufferevent_enable(cn->bev, EV_READ | EV_WRITE);
    }
    conn_hello_deadline(cn);
}

static void no_logs_answer(void *ud, uint64_t req, const char *error, const char *data, size_t len,
                           int64_t offset, bool eof) {
}

static void no_logs_gone(void *ud, uint32_t node, const char *why) {
}

void ctl_agentport_init(ctl_agentport_t *ap, ctl_t *c) {
    *ap = (ctl_agentport_t){.c = c, .logs_answer = no_logs_answer, .logs_gone = no_logs_gone};
    sl_list_init(&ap->held);
    c->out = (ctl_outbound_t){.ud = ap, .launch = out_launch, .kill = out_kill,
                              .stop = out_stop, .node_down = out_node_down};
}

int ctl_agentport_listen(ctl_agentport_t *ap, char *err, size_t errlen) {
    ctl_t *c = ap->c;
    /* The limits are c->cfg's after the HTTP adapter fitted both ports
     * under the open-file limit (hconn.h). */
    if (ctl_lport_open(&ap->port, c->loop->base, "agent_listen", c->cfg.agent_listen,
                       c->cfg.max_agent_connections > 0 ? c->cfg.max_agent_connections
                                                        : c->cfg.max_connections,
                       c->cfg.max_connections_per_peer, &c->n.agent_port,
                       accept_cb, ap, true, err, errlen) < 0)
        return -1;
    ap->port.name = "agent";
    ap->port.evict = evict_silent;
    ap->port.evict_arg = ap;
    return 0;
}

void ctl_agentport_fini(ctl_agentport_t *ap) {
    while (ap->held.next != NULL && !sl_list_empty(&ap->held)) /* not durable: never sent */
        held_free(ap, SL_LIST_ENTRY(sl_list_first(&ap->held), held_t, link), false);
    for (size_t i = 0; i < ap->nnodes; i++) {
        ctl_apnode_t *an = ap->nodes[i];
        if (an == NULL)
            continue;
        close_node(ap, (uint32_t)i);
        evbuffer_free(an->outq);
        sl_free(an);
    }
    sl_free(ap->nodes);
    sl_free(ap->flushq);
    ctl_lport_fini(&ap->port);
    *ap = (ctl_agentport_t){0};
}
