/*
 * agentport.c - the controller's side of the agent protocol
 * (docs/protocol.md): newline-delimited JSON over one TCP connection per
 * agent, on libevent bufferevents with TCP_NODELAY.
 *
 * Every wire message the controller writes is encoded in this file (the
 * "encode" section) and every one it reads is decoded here (on_message and
 * its helpers); the domain sees only calls with plain values.
 *
 * Messages that depend on durable state (launch, kill, ack) go into the
 * node's queue and leave only after the iteration's COMMIT (the loop's
 * AGENTS hook, ctl_agentport_flush); a queue is dropped when its
 * connection goes, because the agent's next hello lets the controller
 * rebuild exactly what it still needs: launches it never got are resent,
 * kills are repeated for tasks that should not run, exits it reports again
 * are recorded (idempotently) and acknowledged. welcome, error and log
 * requests are written at once.
 */
#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/util.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "agentport.h"
#include "buf.h"
#include "jobs.h"
#include "log.h"

struct ctl_conn {
    ctl_agentport_t *ap;
    struct bufferevent *bev;
    int32_t node;   /* -1 until a successful hello */
    char addr[64];
    bool in_cb;
    bool dead;      /* free once the current callback returns */
    bool closing;   /* free once the output has drained */
};

struct ctl_apnode {
    ctl_conn_t *conn;      /* NULL while the agent is not connected */
    struct evbuffer *outq; /* messages waiting for the next commit */
};

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
        }
    }
    bufferevent_free(cn->bev);
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

/* Queues msg for node until the next commit; dropped when the agent is not
 * connected (its next hello rebuilds what it needs). */
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

bool ctl_agentport_flush(void *ud) {
    ctl_agentport_t *ap = ud;
    for (size_t i = 0; i < ap->nflushq; i++) {
        ctl_apnode_t *an = apnode(ap, ap->flushq[i], false);
        if (an == NULL)
            continue;
        if (an->conn)
            bufferevent_write_buffer(an->conn->bev, an->outq);
        else
            evbuffer_drain(an->outq, evbuffer_get_length(an->outq));
    }
    ap->nflushq = 0;
    return false;
}

/* ---- encode: every message the controller writes ---- */

static void out_launch(void *ud, const ctl_job_t *j, int32_t i) {
    ctl_agentport_t *ap = ud;
    ctl_t *c = ap->c;
    const ctl_task_t *t = &j->tasks[i];
    ctl_node_t *mn = ctl_node_get(c, j->master_node);
    int32_t local = 0;
    for (int32_t k = 0; k < i; k++)
        local += j->tasks[k].node == t->node;
    ctl_buf_t b;
    ctl_buf_init(&b);
    ctl_buf_puts(&b, "{\"type\":\"launch\",\"job\":");
    ctl_buf_u64(&b, j->id);
    ctl_buf_puts(&b, ",\"task\":");
    ctl_buf_i64(&b, i);
    ctl_buf_puts(&b, ",\"name\":");
    ctl_buf_jstr(&b, json_string_value(json_object_get(j->spec, "name")));
    ctl_buf_puts(&b, ",\"tenant\":");
    ctl_buf_jstr(&b, json_string_value(json_object_get(j->spec, "tenant")));
    char *argv = json_dumps(json_object_get(j->spec, "command"), JSON_COMPACT | JSON_ENCODE_ANY);
    char *env = json_dumps(json_object_get(j->spec, "env"), JSON_COMPACT | JSON_PRESERVE_ORDER);
    ctl_buf_puts(&b, ",\"argv\":");
    ctl_buf_puts(&b, argv ? argv : "null");
    ctl_buf_puts(&b, ",\"image\":");
    ctl_buf_jstr(&b, json_string_value(json_object_get(j->spec, "image")));
    ctl_buf_puts(&b, ",\"env\":");
    ctl_buf_puts(&b, env ? env : "{}");
    free(argv);
    free(env);
    ctl_buf_puts(&b, ",\"gpus\":[");
    bool first = true;
    for (int g = 0; g < SL_MAX_GPUS_PER_NODE; g++) {
        if (t->gpu_mask & (1u << g)) {
            if (!first)
                ctl_buf_putc(&b, ',');
            ctl_buf_i64(&b, g);
            first = false;
        }
    }
    ctl_buf_puts(&b, "],\"gpu_milli\":");
    ctl_buf_i64(&b, t->gpu_mask ? t->gpu_milli : 0);
    ctl_buf_puts(&b, ",\"gpu_memory\":");
    ctl_buf_i64(&b, j->core.task.gpus ? 0 : j->core.task.gpu_mem_bytes);
    ctl_buf_puts(&b, ",\"cpu_milli\":");
    ctl_buf_i64(&b, j->core.task.cpu_milli);
    ctl_buf_puts(&b, ",\"mem_bytes\":");
    ctl_buf_i64(&b, j->core.task.mem_bytes);
    ctl_buf_puts(&b, ",\"rank\":");
    ctl_buf_i64(&b, i);
    ctl_buf_puts(&b, ",\"world_size\":");
    ctl_buf_i64(&b, j->ntasks);
    ctl_buf_puts(&b, ",\"local_rank\":");
    ctl_buf_i64(&b, local);
    ctl_buf_puts(&b, ",\"master_addr\":");
    ctl_buf_jstr(&b, mn && mn->addr[0] ? mn->addr : "127.0.0.1");
    ctl_buf_puts(&b, ",\"master_port\":");
    ctl_buf_i64(&b, CTL_MASTER_PORT_BASE + (int64_t)(j->id % 1000));
    ctl_buf_puts(&b, ",\"time_limit\":");
    ctl_buf_i64(&b, j->core.time_limit_us / 1000000);
    ctl_buf_puts(&b, "}\n");
    queue(ap, (uint32_t)t->node, b.p, b.len);
    ctl_buf_fini(&b);
    c->n.tasks_launched++;
}

static void out_kill(void *ud, uint32_t node, uint64_t job, int32_t task) {
    ctl_agentport_t *ap = ud;
    char msg[160];
    int n = snprintf(msg, sizeof msg, "{\"type\":\"kill\",\"job\":%llu,\"task\":%d,\"grace_ms\":%lld}\n",
                     (unsigned long long)job, task, (long long)ap->c->cfg.kill_grace_ms);
    queue(ap, node, msg, (size_t)n);
}

static void out_node_down(void *ud, uint32_t node, const char *why) {
    ctl_agentport_t *ap = ud;
    close_node(ap, node);
    ap->logs_gone(ap->logs_ud, node, "the node failed");
}

static void send_ack(ctl_agentport_t *ap, uint32_t node, json_int_t job, json_int_t task) {
    char msg[128];
    int n = snprintf(msg, sizeof msg, "{\"type\":\"ack\",\"job\":%lld,\"task\":%lld}\n",
                     (long long)job, (long long)task);
    queue(ap, node, msg, (size_t)n);
}

static void send_welcome(ctl_conn_t *cn, const char *node, int32_t heartbeat_s) {
    ctl_buf_t b;
    ctl_buf_init(&b);
    ctl_buf_puts(&b, "{\"type\":\"welcome\",\"node\":\"");
    ctl_buf_puts(&b, node); /* a node name has no character JSON must escape */
    ctl_buf_puts(&b, "\",\"heartbeat\":");
    ctl_buf_i64(&b, heartbeat_s);
    ctl_buf_puts(&b, "}\n");
    bufferevent_write(cn->bev, b.p, b.len);
    ctl_buf_fini(&b);
}

/* Sends an error and closes the connection once it has drained. */
static void reject(ctl_conn_t *cn, const char *msg) {
    ctl_buf_t b;
    ctl_buf_init(&b);
    ctl_buf_puts(&b, "{\"type\":\"error\",\"message\":");
    ctl_buf_jstr(&b, msg);
    ctl_buf_puts(&b, "}\n");
    bufferevent_write(cn->bev, b.p, b.len);
    ctl_buf_fini(&b);
    bufferevent_disable(cn->bev, EV_READ);
    cn->closing = true;
    sl_log(SL_LOG_WARN, "agent", "addr=%s rejected: %s", cn->addr, msg);
}

int ctl_agentport_logs(void *ud, uint32_t node, uint64_t req, uint64_t job, int32_t task,
                       int64_t offset, int64_t limit) {
    ctl_agentport_t *ap = ud;
    ctl_apnode_t *an = apnode(ap, node, false);
    if (an == NULL || an->conn == NULL)
        return SL_ENOENT;
    char msg[200];
    int len = snprintf(msg, sizeof msg,
                       "{\"type\":\"logs\",\"req\":%llu,\"job\":%llu,\"task\":%d,\"offset\":%lld,"
                       "\"limit\":%lld}\n",
                       (unsigned long long)req, (unsigned long long)job, task, (long long)offset,
                       (long long)limit);
    return bufferevent_write(an->conn->bev, msg, (size_t)len) == 0 ? 0 : SL_EIO;
}

/* ---- decode: every message the controller reads ---- */

/* A message's time (seconds since the epoch, fractional) in microseconds;
 * now when absent or not positive. */
static int64_t msg_time(json_t *m, const char *key) {
    json_t *t = json_object_get(m, key);
    if (json_is_number(t) && json_number_value(t) > 0)
        return (int64_t)llround(json_number_value(t) * 1e6);
    return ctl_now_us();
}

/* A quantity given as a string or an integer; absent or null is 0. */
static int qty(json_t *v, sl_qty_kind_t kind, int64_t *out, char *err, size_t errlen) {
    char text[64];
    if (json_is_string(v))
        snprintf(text, sizeof text, "%s", json_string_value(v));
    else if (json_is_integer(v))
        snprintf(text, sizeof text, "%lld", (long long)json_integer_value(v));
    else if (v == NULL || json_is_null(v)) {
        *out = 0;
        return 0;
    } else {
        snprintf(err, errlen, "must be a quantity string");
        return -1;
    }
    return sl_qty_parse(text, kind, out, err, errlen);
}

static json_int_t int_field(json_t *m, const char *key) {
    return json_integer_value(json_object_get(m, key));
}

/* An `exited` or `failed` report (a message, or an entry of a hello's
 * tasks): recorded by the domain, then acknowledged after the commit. */
static void on_exited(ctl_agentport_t *ap, uint32_t node, json_t *m, bool launch_failed) {
    ctl_t *c = ap->c;
    json_t *jv = json_object_get(m, "job"), *tv = json_object_get(m, "task");
    int32_t i;
    if (json_is_integer(jv) && json_is_integer(tv) &&
        ctl_task_find_live(c, node, (uint64_t)json_integer_value(jv), json_integer_value(tv), &i)) {
        uint64_t job = (uint64_t)json_integer_value(jv);
        if (launch_failed) {
            ctl_node_task_end(c, node, job, i, CTL_TASK_FAILED, 0, 0,
                              json_string_value(json_object_get(m, "reason")), msg_time(m, "time"));
        } else {
            /* A wait status: exit_code 0..255, signal 0..127 (exit_code is
             * 128+signal when signal is non-zero). Anything else comes from a
             * broken agent: it is logged and recorded as exit code 255, a
             * failure, rather than wrapped into int32 (2^32 would read as 0,
             * a success; 128+INT32_MAX overflows). */
            json_t *ec = json_object_get(m, "exit_code");
            json_int_t sig = int_field(m, "signal");
            json_int_t code = json_is_integer(ec) ? json_integer_value(ec)
                                                  : (sig > 0 && sig < 128 ? 128 + sig : 0);
            if (sig < 0 || sig > 127 || code < 0 || code > 255) {
                sl_log(SL_LOG_WARN, "agent",
                       "node=%s job=%llu task=%d: exit_code=%lld signal=%lld out of range; "
                       "recorded as exit code 255",
                       ctl_node_name(c, (int32_t)node), (unsigned long long)job, i,
                       (long long)code, (long long)sig);
                sig = 0;
                code = 255;
            }
            int64_t t = msg_time(m, json_object_get(m, "end_time") ? "end_time" : "time");
            ctl_node_task_end(c, node, job, i, CTL_TASK_EXITED, (int32_t)code, (int32_t)sig, NULL,
                              t);
        }
    }
    send_ack(ap, node, int_field(m, "job"), int_field(m, "task"));
}

static void on_hello(ctl_conn_t *cn, json_t *m) {
    ctl_agentport_t *ap = cn->ap;
    ctl_t *c = ap->c;
    if (!ctl_token_eq(json_string_value(json_object_get(m, "token")), c->cfg.cluster_token)) {
        reject(cn, "bad cluster token");
        return;
    }
    json_t *nd = json_object_get(m, "node");
    const char *name = json_string_value(json_object_get(nd, "name"));
    char err[256], qe[160];
    if (!json_is_object(nd) || name == NULL || name[0] == '\0' || strlen(name) >= SL_NAME_MAX) {
        reject(cn, "hello: node.name is required (1..63 characters)");
        return;
    }
    sl_node_spec_t ns = {.name = name};
    int64_t gpus = 0;
    json_t *gv = json_object_get(nd, "gpus");
    if (json_is_integer(gv))
        gpus = json_integer_value(gv);
    else if (gv != NULL && !json_is_null(gv)) {
        reject(cn, "hello: node.gpus must be a whole number");
        return;
    }
    ns.gpus = (int32_t)gpus;
    if (qty(json_object_get(nd, "cpus"), SL_QTY_CPU, &ns.cpu_milli, qe, sizeof qe) < 0 ||
        qty(json_object_get(nd, "memory"), SL_QTY_MEM, &ns.mem_bytes, qe, sizeof qe) < 0 ||
        qty(json_object_get(nd, "gpu_memory"), SL_QTY_MEM, &ns.gpu_mem_bytes, qe, sizeof qe) < 0) {
        snprintf(err, sizeof err, "hello: node: %s", qe);
        reject(cn, err);
        return;
    }
    ns.gpu_model = json_string_value(json_object_get(nd, "gpu_model"));
    ns.pool = json_string_value(json_object_get(nd, "pool"));
    ns.labels = json_string_value(json_object_get(nd, "labels"));
    const char *addr = json_string_value(json_object_get(nd, "addr"));
    uint32_t id;
    if (ctl_node_hello(c, &ns, addr && addr[0] ? addr : cn->addr, &id, err, sizeof err) < 0) {
        char msg[300];
        snprintf(msg, sizeof msg, "hello: %s", err);
        reject(cn, msg);
        return;
    }
    ctl_apnode_t *an = apnode(ap, id, true);
    if (an->conn && an->conn != cn) {
        sl_log(SL_LOG_INFO, "agent", "node=%s: new connection replaces the old one", name);
        close_node(ap, id);
    }
    set_connected(ap, id, cn);
    cn->node = (int32_t)id;
    send_welcome(cn, ctl_node_name(c, (int32_t)id), c->cfg.heartbeat_s);

    /* Reconcile what the agent runs with what the controller recorded. */
    json_t *tasks = json_object_get(m, "tasks");
    size_t ti;
    json_t *t;
    json_array_foreach(tasks, ti, t) {
        const char *st = json_string_value(json_object_get(t, "state"));
        if (st == NULL || strcmp(st, "running") == 0)
            ctl_node_hello_running(c, id, (uint64_t)int_field(t, "job"), int_field(t, "task"),
                                   (int32_t)int_field(t, "pid"), msg_time(t, "start_time"));
        else
            on_exited(ap, id, t, strcmp(st, "failed") == 0);
    }
    ctl_node_hello_end(c, id);
    ctl_node_t *n = ctl_node_get(c, id);
    sl_log(SL_LOG_INFO, "agent", "node=%s up addr=%s gpus=%d tasks=%zu", ctl_node_name(c, (int32_t)id),
           n->addr, sl_cluster_node(c->cl, id)->ngpus, json_array_size(tasks));
}

static void on_message(ctl_conn_t *cn, json_t *m) {
    ctl_agentport_t *ap = cn->ap;
    ctl_t *c = ap->c;
    const char *type = json_string_value(json_object_get(m, "type"));
    c->n.agent_messages++;
    if (type == NULL) {
        sl_log(SL_LOG_WARN, "agent", "addr=%s message without type ignored", cn->addr);
        return;
    }
    if (cn->node < 0) {
        if (strcmp(type, "hello") == 0)
            on_hello(cn, m);
        else
            reject(cn, "the first message must be hello");
        return;
    }
    uint32_t node = (uint32_t)cn->node;
    ctl_node_heard(c, node, strcmp(type, "heartbeat") == 0);
    if (strcmp(type, "heartbeat") == 0) {
        /* a sign of life only */
    } else if (strcmp(type, "started") == 0) {
        json_t *jv = json_object_get(m, "job"), *tv = json_object_get(m, "task");
        if (json_is_integer(jv) && json_is_integer(tv))
            ctl_node_task_started(c, node, (uint64_t)json_integer_value(jv), json_integer_value(tv),
                                  (int32_t)int_field(m, "pid"), msg_time(m, "time"));
    } else if (strcmp(type, "exited") == 0) {
        on_exited(ap, node, m, false);
    } else if (strcmp(type, "failed") == 0) {
        on_exited(ap, node, m, true);
    } else if (strcmp(type, "logs") == 0) {
        json_t *d = json_object_get(m, "data");
        ap->logs_answer(ap->logs_ud, (uint64_t)int_field(m, "req"),
                        json_string_value(json_object_get(m, "error")),
                        json_string_value(d) ? json_string_value(d) : "", json_string_length(d),
                        int_field(m, "offset"), json_is_true(json_object_get(m, "eof")));
    } else if (strcmp(type, "hello") == 0) {
        reject(cn, "hello sent twice");
    } else {
        sl_log(SL_LOG_DEBUG, "agent", "node=%s unknown message type=%s ignored",
               ctl_node_name(c, (int32_t)node), type);
    }
}

/* ---- connections ---- */

static void read_cb(struct bufferevent *bev, void *ud) {
    ctl_conn_t *cn = ud;
    struct evbuffer *in = bufferevent_get_input(bev);
    cn->in_cb = true;
    while (!cn->dead && !cn->closing) {
        size_t len;
        char *line = evbuffer_readln(in, &len, EVBUFFER_EOL_LF);
        if (line == NULL) {
            if (evbuffer_get_length(in) > CTL_MAX_MSG)
                reject(cn, "message longer than 1 MiB");
            break;
        }
        if (len == 0) {
            free(line);
            continue;
        }
        json_error_t jerr;
        json_t *m = json_loadb(line, len, 0, &jerr);
        free(line);
        if (m == NULL || !json_is_object(m)) {
            char msg[300];
            snprintf(msg, sizeof msg, "bad JSON at position %d: %s", jerr.position, jerr.text);
            json_decref(m);
            reject(cn, msg);
            break;
        }
        on_message(cn, m);
        json_decref(m);
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

static void accept_cb(struct evconnlistener *lst, evutil_socket_t fd, struct sockaddr *sa, int salen,
                      void *ud) {
    ctl_agentport_t *ap = ud;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ctl_conn_t *cn = sl_xcalloc(1, sizeof *cn);
    cn->ap = ap;
    cn->node = -1;
    if (sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((struct sockaddr_in *)sa)->sin_addr, cn->addr, sizeof cn->addr);
    else if (sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)sa)->sin6_addr, cn->addr, sizeof cn->addr);
    cn->bev = bufferevent_socket_new(ap->c->loop->base, fd, BEV_OPT_CLOSE_ON_FREE);
    bufferevent_setcb(cn->bev, read_cb, write_cb, event_cb, cn);
    bufferevent_enable(cn->bev, EV_READ | EV_WRITE);
}

static void no_logs_answer(void *ud, uint64_t req, const char *error, const char *data, size_t len,
                           int64_t offset, bool eof) {
}

static void no_logs_gone(void *ud, uint32_t node, const char *why) {
}

void ctl_agentport_init(ctl_agentport_t *ap, ctl_t *c) {
    *ap = (ctl_agentport_t){.c = c, .logs_answer = no_logs_answer, .logs_gone = no_logs_gone};
    c->out = (ctl_outbound_t){.ud = ap, .launch = out_launch, .kill = out_kill,
                              .node_down = out_node_down};
}

int ctl_agentport_listen(ctl_agentport_t *ap, char *err, size_t errlen) {
    ctl_t *c = ap->c;
    struct sockaddr_storage ss;
    int sslen = sizeof ss;
    if (evutil_parse_sockaddr_port(c->cfg.agent_listen, (struct sockaddr *)&ss, &sslen) < 0) {
        snprintf(err, errlen, "agent_listen: cannot parse \"%s\" (want HOST:PORT)", c->cfg.agent_listen);
        return -1;
    }
    ap->lst = evconnlistener_new_bind(c->loop->base, accept_cb, ap,
                                      LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, 512,
                                      (struct sockaddr *)&ss, sslen);
    if (ap->lst == NULL) {
        snprintf(err, errlen, "agent_listen: cannot listen on %s: %s", c->cfg.agent_listen,
                 evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
        return -1;
    }
    return 0;
}

void ctl_agentport_fini(ctl_agentport_t *ap) {
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
    if (ap->lst)
        evconnlistener_free(ap->lst);
    *ap = (ctl_agentport_t){0};
}
