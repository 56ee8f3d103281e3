/*
 * agent.c - the controller's side of the agent protocol (docs/protocol.md):
 * newline-delimited JSON over one TCP connection per agent, on libevent
 * bufferevents with TCP_NODELAY.
 *
 * Messages to an agent that depend on durable state (launch, kill, ack) go
 * into the node's queue and leave only after the iteration's COMMIT
 * (ctl_agent_flush); a queue is dropped when its connection goes, because
 * the agent's next hello lets the controller rebuild exactly what it still
 * needs: launches it never got are resent, kills are repeated for tasks
 * that should not run, exits it reports again are recorded (idempotently)
 * and acknowledged.
 */
#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/util.h>
#include <math.h>
#include <stdarg.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "ctl.h"
#include "log.h"
#include "quantity.h"

struct ctl_conn {
    ctl_t *c;
    struct bufferevent *bev;
    int32_t node;   /* -1 until a successful hello */
    char addr[64];
    bool in_cb;
    bool dead;      /* free once the current callback returns */
    bool closing;   /* free once the output has drained */
};

ctl_node_t *ctl_node_get(ctl_t *c, uint32_t id) {
    return id < c->nnodes ? c->nodes[id] : NULL;
}

ctl_node_t *ctl_node_new(ctl_t *c, uint32_t id) {
    if (id >= c->nodes_cap) {
        size_t cap = c->nodes_cap ? c->nodes_cap * 2 : 64;
        while (cap <= id)
            cap *= 2;
        c->nodes = sl_xrealloc(c->nodes, cap * sizeof *c->nodes);
        memset(c->nodes + c->nodes_cap, 0, (cap - c->nodes_cap) * sizeof *c->nodes);
        c->nodes_cap = cap;
    }
    ctl_node_t *n = sl_xcalloc(1, sizeof *n);
    n->id = id;
    n->outq = evbuffer_new();
    n->last_seen_us = -1;
    n->last_seen_mono_us = ctl_mono_us();
    c->nodes[id] = n;
    if (id >= c->nnodes)
        c->nnodes = id + 1;
    return n;
}

static void conn_free(ctl_conn_t *cn) {
    ctl_t *c = cn->c;
    if (cn->node >= 0) {
        ctl_node_t *n = ctl_node_get(c, (uint32_t)cn->node);
        if (n && n->conn == cn) {
            n->conn = NULL;
            evbuffer_drain(n->outq, evbuffer_get_length(n->outq));
            ctl_logreq_fail_node(c, (uint32_t)cn->node, "the agent disconnected");
            sl_log(SL_LOG_INFO, "agent", "node=%s disconnected",
                   sl_cluster_node(c->cl, (uint32_t)cn->node)->name);
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

void ctl_agent_close_node(ctl_t *c, uint32_t node) {
    ctl_node_t *n = ctl_node_get(c, node);
    if (n && n->conn) {
        ctl_conn_t *cn = n->conn;
        n->conn = NULL;
        evbuffer_drain(n->outq, evbuffer_get_length(n->outq));
        cn->node = -1;
        conn_close(cn);
    }
}

void ctl_agent_send(ctl_t *c, uint32_t node, const char *msg, size_t len) {
    ctl_node_t *n = ctl_node_get(c, node);
    if (n == NULL || n->conn == NULL)
        return; /* rebuilt from the agent's next hello */
    if (evbuffer_get_length(n->outq) == 0) {
        if (c->nflushq == c->flushq_cap) {
            c->flushq_cap = c->flushq_cap ? 2 * c->flushq_cap : 64;
            c->flushq = sl_xrealloc(c->flushq, c->flushq_cap * sizeof *c->flushq);
        }
        c->flushq[c->nflushq++] = node;
    }
    evbuffer_add(n->outq, msg, len);
    ctl_kick(c);
}

int ctl_agent_send_now(ctl_t *c, uint32_t node, const char *msg, size_t len) {
    ctl_node_t *n = ctl_node_get(c, node);
    if (n == NULL || n->conn == NULL)
        return SL_ENOENT;
    return bufferevent_write(n->conn->bev, msg, len) == 0 ? 0 : SL_EIO;
}

void ctl_agent_flush(ctl_t *c) {
    for (size_t i = 0; i < c->nflushq; i++) {
        ctl_node_t *n = ctl_node_get(c, c->flushq[i]);
        if (n == NULL)
            continue;
        if (n->conn)
            bufferevent_write_buffer(n->conn->bev, n->outq);
        else
            evbuffer_drain(n->outq, evbuffer_get_length(n->outq));
    }
    c->nflushq = 0;
}

static void send_direct(ctl_conn_t *cn, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void send_direct(ctl_conn_t *cn, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    evbuffer_add_vprintf(bufferevent_get_output(cn->bev), fmt, ap);
    va_end(ap);
}

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

static int64_t msg_time(json_t *m, const char *key) {
    json_t *t = json_object_get(m, key);
    if (json_is_number(t) && json_number_value(t) > 0)
        return (int64_t)llround(json_number_value(t) * 1e6);
    return ctl_now_us();
}

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

/* Looks up (job, task) as a live task placed on node; NULL otherwise. */
static ctl_job_t *live_task(ctl_t *c, json_t *m, int32_t node, int32_t *idx) {
    json_t *jv = json_object_get(m, "job"), *tv = json_object_get(m, "task");
    if (!json_is_integer(jv) || !json_is_integer(tv))
        return NULL;
    ctl_job_t *j = ctl_job_find(c, (uint64_t)json_integer_value(jv));
    int64_t i = json_integer_value(tv);
    if (j == NULL || i < 0 || i >= j->ntasks || j->tasks[i].node != node)
        return NULL;
    if (j->tasks[i].state != CTL_TASK_LAUNCHING && j->tasks[i].state != CTL_TASK_RUNNING)
        return NULL;
    *idx = (int32_t)i;
    return j;
}

static void send_ack(ctl_t *c, uint32_t node, json_t *m) {
    char msg[128];
    int n = snprintf(msg, sizeof msg, "{\"type\":\"ack\",\"job\":%lld,\"task\":%lld}\n",
                     (long long)json_integer_value(json_object_get(m, "job")),
                     (long long)json_integer_value(json_object_get(m, "task")));
    ctl_agent_send(c, node, msg, (size_t)n);
}

static void on_exited(ctl_t *c, uint32_t node, json_t *m, bool launch_failed) {
    int32_t i;
    ctl_job_t *j = live_task(c, m, (int32_t)node, &i);
    if (j != NULL) {
        if (launch_failed) {
            ctl_task_ended(c, j, i, CTL_TASK_FAILED, 0, 0, false,
                           json_string_value(json_object_get(m, "reason")), msg_time(m, "time"));
        } else {
            /* A wait status: exit_code 0..255, signal 0..127 (exit_code is
             * 128+signal when signal is non-zero). Anything else comes from a
             * broken agent: it is logged and recorded as exit code 255, a
             * failure, rather than wrapped into int32 (2^32 would read as 0,
             * a success; 128+INT32_MAX overflows). */
            json_t *ec = json_object_get(m, "exit_code"), *sg = json_object_get(m, "signal");
            json_int_t sig = json_integer_value(sg);
            json_int_t code = json_is_integer(ec) ? json_integer_value(ec)
                                                  : (sig > 0 && sig < 128 ? 128 + sig : 0);
            if (sig < 0 || sig > 127 || code < 0 || code > 255) {
                sl_log(SL_LOG_WARN, "agent",
                       "node=%s job=%llu task=%d: exit_code=%lld signal=%lld out of range; "
                       "recorded as exit code 255",
                       sl_cluster_node(c->cl, node)->name, (unsigned long long)j->id, i,
                       (long long)code, (long long)sig);
                sig = 0;
                code = 255;
            }
            int64_t t = msg_time(m, json_object_get(m, "end_time") ? "end_time" : "time");
            ctl_task_ended(c, j, i, CTL_TASK_EXITED, (int32_t)code, (int32_t)sig, true, NULL, t);
        }
    }
    send_ack(c, node, m); /* leaves after the commit that recorded the exit */
}

static void on_hello(ctl_conn_t *cn, json_t *m) {
    ctl_t *c = cn->c;
    const char *tok = json_string_value(json_object_get(m, "token"));
    if (tok == NULL || strlen(tok) != strlen(c->cfg.cluster_token) ||
        memcmp(tok, c->cfg.cluster_token, strlen(tok)) != 0) {
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
    const sl_node_t *known = sl_cluster_find_node(c->cl, name);
    uint32_t id;
    bool fresh = known == NULL;
    if (known) {
        id = known->id;
        int32_t pool = sl_cluster_pool_find(c->cl, ns.pool && ns.pool[0] ? ns.pool : "default");
        if (known->ngpus != ns.gpus || known->cpu_total != ns.cpu_milli ||
            known->mem_total != ns.mem_bytes || known->pool != pool)
            sl_log(SL_LOG_WARN, "agent",
                   "node=%s reconnected with a different spec; keeping the registered one", name);
    } else if (sl_cluster_add_node(c->cl, &ns, &id, err, sizeof err) < 0) {
        char msg[300];
        snprintf(msg, sizeof msg, "hello: %s", err);
        reject(cn, msg);
        return;
    }
    ctl_node_t *n = fresh ? ctl_node_new(c, id) : ctl_node_get(c, id);
    if (n == NULL)
        n = ctl_node_new(c, id);
    if (n->conn && n->conn != cn) {
        sl_log(SL_LOG_INFO, "agent", "node=%s: new connection replaces the old one", name);
        ctl_agent_close_node(c, id);
    }
    n->conn = cn;
    cn->node = (int32_t)id;
    const char *addr = json_string_value(json_object_get(nd, "addr"));
    snprintf(n->addr, sizeof n->addr, "%s", addr && addr[0] ? addr : cn->addr);
    n->last_seen_mono_us = ctl_mono_us();
    n->last_seen_us = ctl_now_us();
    if (fresh || n->spec_json == NULL) {
        json_t *sj = json_pack("{s:I,s:I,s:i,s:s?,s:I,s:s?,s:s?}", "cpu_milli",
                               (json_int_t)ns.cpu_milli, "mem_bytes", (json_int_t)ns.mem_bytes,
                               "gpus", ns.gpus, "gpu_model", ns.gpu_model, "gpu_mem_bytes",
                               (json_int_t)ns.gpu_mem_bytes, "pool", ns.pool, "labels", ns.labels);
        sl_free(n->spec_json);
        char *s = json_dumps(sj, JSON_COMPACT);
        n->spec_json = sl_xstrdup(s);
        free(s);
        json_decref(sj);
        if (ns.gpu_model)
            snprintf(n->gpu_model, sizeof n->gpu_model, "%s", ns.gpu_model);
    }
    ctl_store_node_put(c, n, name);
    const sl_node_t *node = sl_cluster_node(c->cl, id);
    if (node->state == SL_NODE_DOWN)
        sl_cluster_set_state(c->cl, id, SL_NODE_UP);
    send_direct(cn, "{\"type\":\"welcome\",\"node\":\"%s\",\"heartbeat\":%d}\n", node->name,
                c->cfg.heartbeat_s);

    /* Reconcile what the agent runs with what the controller recorded. */
    json_t *tasks = json_object_get(m, "tasks");
    size_t ti;
    json_t *t;
    json_array_foreach(tasks, ti, t) {
        const char *st = json_string_value(json_object_get(t, "state"));
        bool running = st == NULL || strcmp(st, "running") == 0;
        int32_t i;
        ctl_job_t *j = live_task(c, t, (int32_t)id, &i);
        if (running) {
            if (j != NULL && j->state == CTL_JOB_RUNNING) {
                ctl_task_started(c, j, i, (int32_t)json_integer_value(json_object_get(t, "pid")),
                                 msg_time(t, "start_time"));
            } else {
                char msg[160];
                int len = snprintf(msg, sizeof msg,
                                   "{\"type\":\"kill\",\"job\":%lld,\"task\":%lld,\"grace_ms\":%lld}\n",
                                   (long long)json_integer_value(json_object_get(t, "job")),
                                   (long long)json_integer_value(json_object_get(t, "task")),
                                   (long long)c->cfg.kill_grace_ms);
                ctl_agent_send(c, id, msg, (size_t)len);
            }
        } else {
            on_exited(c, id, t, strcmp(st, "failed") == 0);
        }
    }
    /* Tasks recorded on this node that the agent did not list. */
    for (uint64_t jid = c->first_active; jid < c->next_id; jid++) {
        ctl_job_t *j = ctl_job_find(c, jid);
        if (j == NULL || j->live == 0)
            continue;
        for (int32_t i = 0; i < j->ntasks; i++) {
            ctl_task_t *tk = &j->tasks[i];
            if (tk->node != (int32_t)id ||
                (tk->state != CTL_TASK_LAUNCHING && tk->state != CTL_TASK_RUNNING))
                continue;
            bool listed = false;
            json_array_foreach(tasks, ti, t) {
                if (json_integer_value(json_object_get(t, "job")) == (json_int_t)jid &&
                    json_integer_value(json_object_get(t, "task")) == i)
                    listed = true;
            }
            if (listed)
                continue;
            if (tk->state == CTL_TASK_LAUNCHING && j->state == CTL_JOB_RUNNING) {
                ctl_send_launch(c, j, i); /* the launch never reached the agent */
            } else {
                char why[128];
                snprintf(why, sizeof why, "agent on %s no longer has task %d", node->name, i);
                ctl_job_lose(c, j, id, i, why);
            }
        }
    }
    sl_log(SL_LOG_INFO, "agent", "node=%s up addr=%s gpus=%d tasks=%zu", node->name, n->addr,
           node->ngpus, json_array_size(tasks));
    c->sched_dirty = true;
    ctl_kick(c);
}

static void on_message(ctl_conn_t *cn, json_t *m) {
    ctl_t *c = cn->c;
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
    ctl_node_t *n = ctl_node_get(c, node);
    n->last_seen_mono_us = ctl_mono_us();
    n->last_seen_us = ctl_now_us();
    if (strcmp(type, "heartbeat") == 0) {
        const sl_node_t *nd = sl_cluster_node(c->cl, node);
        if (nd->state == SL_NODE_DOWN) {
            /* Declared down while still connected (e.g. a long stall): it is
             * back; tasks it had were already handled as lost. */
            sl_cluster_set_state(c->cl, node, SL_NODE_UP);
            c->sched_dirty = true;
            ctl_kick(c);
        }
    } else if (strcmp(type, "started") == 0) {
        int32_t i;
        ctl_job_t *j = live_task(c, m, cn->node, &i);
        if (j)
            ctl_task_started(c, j, i, (int32_t)json_integer_value(json_object_get(m, "pid")),
                             msg_time(m, "time"));
    } else if (strcmp(type, "exited") == 0) {
        on_exited(c, node, m, false);
    } else if (strcmp(type, "failed") == 0) {
        on_exited(c, node, m, true);
    } else if (strcmp(type, "logs") == 0) {
        ctl_logreq_answer(c, (uint64_t)json_integer_value(json_object_get(m, "req")), m);
    } else if (strcmp(type, "hello") == 0) {
        reject(cn, "hello sent twice");
    } else {
        sl_log(SL_LOG_DEBUG, "agent", "node=%s unknown message type=%s ignored",
               sl_cluster_node(c->cl, node)->name, type);
    }
}

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
    ctl_t *c = ud;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ctl_conn_t *cn = sl_xcalloc(1, sizeof *cn);
    cn->c = c;
    cn->node = -1;
    if (sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((struct sockaddr_in *)sa)->sin_addr, cn->addr, sizeof cn->addr);
    else if (sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)sa)->sin6_addr, cn->addr, sizeof cn->addr);
    cn->bev = bufferevent_socket_new(c->base, fd, BEV_OPT_CLOSE_ON_FREE);
    bufferevent_setcb(cn->bev, read_cb, write_cb, event_cb, cn);
    bufferevent_enable(cn->bev, EV_READ | EV_WRITE);
}

int ctl_agent_listen(ctl_t *c, char *err, size_t errlen) {
    struct sockaddr_storage ss;
    int sslen = sizeof ss;
    if (evutil_parse_sockaddr_port(c->cfg.agent_listen, (struct sockaddr *)&ss, &sslen) < 0) {
        snprintf(err, errlen, "agent_listen: cannot parse \"%s\" (want HOST:PORT)", c->cfg.agent_listen);
        return -1;
    }
    c->agent_lst = evconnlistener_new_bind(c->base, accept_cb, c,
                                           LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, 512,
                                           (struct sockaddr *)&ss, sslen);
    if (c->agent_lst == NULL) {
        snprintf(err, errlen, "agent_listen: cannot listen on %s: %s", c->cfg.agent_listen,
                 evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
        return -1;
    }
    return 0;
}
