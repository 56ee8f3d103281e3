/*
 * emulate.c - the node emulator (emulate.h): N virtual nodes on one event
 * loop, each a real connection (conn.c) whose tasks below are emulated.
 *
 * The point is that the controller cannot tell: every node is its own TCP
 * connection that sends the hello, heartbeats, started/exited/failed and
 * logs replies through the one protocol codec, reconnects with the
 * connection's jittered back-off, and fences like a real agent. Only the
 * layer under the connection differs: instead of the tasks of task.c (a
 * process under a monitor in a cgroup), conn.c calls the ops of this file
 * through the table agent_conn_config_t.ops, so none of the connection's
 * code is copied.
 *
 * An emulated task is a record on its node's list and, when its job sets
 * SLUICE_EMULATED_RUNTIME, a timer: launch reports started at once, the
 * timer reports exited (code 0); a kill or a fence reports exited with
 * signal 15 at once. Ended tasks stay on the list, and in every hello,
 * until the controller acknowledges them, as task.c keeps them; the last
 * few acknowledged ones stay for their logs. A node
 * holds a handful of tasks (one per GPU or so), so the list is walked;
 * the emulator's cost is O(1) per message and O(tasks of the node) per
 * hello.
 *
 * Workload: up to 10,000 nodes (bench/scale/), so 10,000 sockets in this
 * process: the open-file limit is raised first, or the run refused.
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emulate.h"
#include "log.h"
#include "loop.h"
#include "osutil.h"
#include "sluice/alloc.h"

typedef struct emu_node emu_node_t;

typedef struct emu_task {
    struct emu_task *next;
    emu_node_t *node;
    uint64_t job;
    int32_t task;
    int32_t pid;            /* made up, unique in this process */
    sl_proto_task_state_t state;
    bool requeue;           /* on_node_failure "requeue": fenced when contact is lost */
    bool fenced;
    bool acked;             /* the controller recorded its end: kept only for its log */
    int64_t attempt;        /* its launch's attempt, reported back; -1: none */
    double runtime_s;       /* < 0: until cancelled */
    double start_time, end_time;
    int64_t exit_code, signal;
    const char *reason;     /* failed: a static or node-owned string */
    char why[160];
    struct event *timer;    /* the end of its run; NULL: none */
} emu_task_t;

struct emu_node {
    struct event_base *base;
    char name[64];
    agent_conn_t *cn;
    emu_task_t *tasks;
    agent_tasks_send_fn send;
    void *send_ud;
};

static int32_t next_pid = 100000;

static emu_task_t *task_find(emu_node_t *n, uint64_t job, int32_t task) {
    for (emu_task_t *t = n->tasks; t; t = t->next)
        if (t->job == job && t->task == task) return t;
    return NULL;
}

static emu_task_t *task_new(emu_node_t *n, uint64_t job, int32_t task) {
    emu_task_t *t = sl_xcalloc(1, sizeof *t);
    t->node = n;
    t->job = job;
    t->task = task;
    t->pid = next_pid++;
    t->runtime_s = -1;
    t->attempt = -1;
    t->next = n->tasks;
    n->tasks = t;
    return t;
}

static void task_free(emu_task_t *t) {
    if (t->timer) event_free(t->timer);
    sl_free(t);
}

static void task_remove(emu_node_t *n, emu_task_t *t) {
    for (emu_task_t **p = &n->tasks; *p; p = &(*p)->next) {
        if (*p == t) {
            *p = t->next;
            task_free(t);
            return;
        }
    }
}

static void node_send(emu_node_t *n, const sl_proto_msg_t *m) {
    if (n->send) n->send(n->send_ud, m);
}

static void send_started(emu_task_t *t) {
    sl_proto_msg_t m = {.type = SL_PROTO_STARTED, .job = t->job, .task = t->task,
                        .has_attempt = t->attempt >= 0, .attempt = (uint32_t)t->attempt,
                        .time = t->start_time, .u.started.pid = t->pid};
    node_send(t->node, &m);
}

static void send_end(emu_task_t *t) {
    sl_proto_msg_t m = {.job = t->job, .task = t->task, .has_attempt = t->attempt >= 0,
                        .attempt = (uint32_t)t->attempt, .time = t->end_time};
    if (t->state == SL_PROTO_TASK_FAILED) {
        m.type = SL_PROTO_FAILED;
        m.u.failed.reason = t->reason;
    } else {
        m.type = SL_PROTO_EXITED;
        m.u.exited = (sl_proto_exited_t){.exit_code = t->exit_code, .signal = t->signal,
                                         .fenced = t->fenced};
    }
    node_send(t->node, &m);
}

/* Ends a running task now: with signal 0, its run is over (code 0). */
static void task_end(emu_task_t *t, int sig) {
    if (t->timer) evtimer_del(t->timer);
    t->state = SL_PROTO_TASK_EXITED;
    t->end_time = agent_now();
    t->signal = sig;
    t->exit_code = sig ? 128 + sig : 0;
    send_end(t);
}

static void task_fail(emu_task_t *t, const char *why) {
    snprintf(t->why, sizeof t->why, "%s", why);
    t->reason = t->why;
    t->state = SL_PROTO_TASK_FAILED;
    t->end_time = agent_now();
    sl_log(SL_LOG_WARN, "emulate", "node=%s job=%llu task=%d failed: %s", t->node->name,
           (unsigned long long)t->job, t->task, why);
    send_end(t);
}

static void timer_cb(evutil_socket_t fd, short ev, void *arg) {
    task_end(arg, 0);
}

/* ---- the ops conn.c calls (agent_conn_tasks_ops_t) ---- */

static void emu_set_sender(void *ud, agent_tasks_send_fn fn, void *send_ud) {
    emu_node_t *n = ud;
    n->send = fn;
    n->send_ud = send_ud;
}

/* The run time the launch's environment asks for: 0 with *out set (-1:
 * until cancelled), or -1 with why filled. */
static int runtime_of(const sl_proto_launch_t *l, double *out, char *why, size_t cap) {
    *out = -1;
    for (size_t i = 0; i < l->nenv; i++) {
        if (strcmp(l->env[i].key, AGENT_EMULATED_RUNTIME_ENV) != 0) continue;
        char *end;
        errno = 0;
        double s = strtod(l->env[i].value, &end);
        if (errno || end == l->env[i].value || *end || !isfinite(s) || s < 0 || s > 1e9) {
            snprintf(why, cap, "%s: \"%.40s\" is not a number of seconds from 0 to 1e9",
                     AGENT_EMULATED_RUNTIME_ENV, l->env[i].value);
            return -1;
        }
        *out = s;
    }
    return 0;
}

/* Whether a message's attempt (< 0: none) names another run than t's. */
static bool other_attempt(const emu_task_t *t, int64_t attempt) {
    return attempt >= 0 && t->attempt >= 0 && attempt != t->attempt;
}

/* Emulated tasks have no files: the cluster instance names nothing here. */
static void emu_welcome(void *ud, const char *instance) {
}

static void emu_launch(void *ud, uint64_t job, int32_t task, int64_t attempt,
                       const sl_proto_launch_t *l, const char *why) {
    emu_node_t *n = ud;
    emu_task_t *t = task_find(n, job, task);
    if (t && t->state == SL_PROTO_TASK_RUNNING) {
        send_started(t); /* a repeated launch: report what runs */
        return;
    }
    if (t) task_remove(n, t); /* an older, finished attempt */
    t = task_new(n, job, task);
    t->attempt = attempt;
    t->start_time = agent_now();
    char bad[160];
    if (l == NULL) {
        task_fail(t, why ? why : "invalid launch");
        return;
    }
    if (runtime_of(l, &t->runtime_s, bad, sizeof bad) != 0) {
        task_fail(t, bad);
        return;
    }
    t->requeue = l->on_node_failure && strcmp(l->on_node_failure, "requeue") == 0;
    send_started(t);
    if (t->runtime_s >= 0) {
        t->timer = evtimer_new(n->base, timer_cb, t);
        if (!t->timer) abort();
        struct timeval tv = agent_tv_ms((int64_t)llround(t->runtime_s * 1000));
        evtimer_add(t->timer, &tv);
    }
}

static void emu_kill(void *ud, uint64_t job, int32_t task, int64_t attempt,
                     const sl_proto_kill_t *k) {
    emu_node_t *n = ud;
    emu_task_t *t = task_find(n, job, task);
    if (t && other_attempt(t, attempt))
        return; /* meant for another run of the task */
    if (t && t->acked) {
        task_remove(n, t); /* forgotten, as a real agent forgets it */
        t = NULL;
    }
    if (!t) {
        char r[128];
        snprintf(r, sizeof r, "no such task on node %s", n->name);
        t = task_new(n, job, task);
        t->attempt = attempt;
        task_fail(t, r);
        return;
    }
    if (t->state != SL_PROTO_TASK_RUNNING) {
        if (!t->acked) send_end(t);
        return;
    }
    task_end(t, SIGTERM);
}

static int emu_fence(void *ud, int64_t grace_ms) {
    emu_node_t *n = ud;
    int count = 0;
    for (emu_task_t *t = n->tasks; t; t = t->next) {
        if (t->state != SL_PROTO_TASK_RUNNING || !t->requeue) continue;
        t->fenced = true;
        task_end(t, SIGTERM);
        count++;
    }
    return count;
}

/* An acknowledged task leaves every hello but keeps its log, as a real
 * agent's log file stays; a node keeps the logs of its last
 * ACKED_LOGS_KEPT acknowledged tasks (a list is new-first, so the oldest
 * are at its end). */
#define ACKED_LOGS_KEPT 16

static void emu_ack(void *ud, uint64_t job, int32_t task, int64_t attempt) {
    emu_node_t *n = ud;
    emu_task_t *t = task_find(n, job, task);
    if (!t || t->state == SL_PROTO_TASK_RUNNING || other_attempt(t, attempt)) return;
    t->acked = true;
    int kept = 0;
    for (emu_task_t **p = &n->tasks; *p;) {
        if ((*p)->acked && ++kept > ACKED_LOGS_KEPT) {
            emu_task_t *old = *p;
            *p = old->next;
            task_free(old);
        } else {
            p = &(*p)->next;
        }
    }
}

/* The log of an emulated task: what happened to it, made up on demand. */
static void emu_logs(void *ud, uint64_t req, uint64_t job, int32_t task, int64_t offset,
                     int64_t limit) {
    emu_node_t *n = ud;
    emu_task_t *t = task_find(n, job, task);
    sl_proto_msg_t m = {.type = SL_PROTO_LOGS_REPLY, .req = req, .job = job, .task = task};
    if (!t) {
        m.u.logs_reply.error = "no log for this task on this node";
        node_send(n, &m);
        return;
    }
    char text[512];
    int len = snprintf(text, sizeof text, "emulated task %llu.%d on node %s: started at %.3f\n",
                       (unsigned long long)job, task, n->name, t->start_time);
    if (t->state == SL_PROTO_TASK_EXITED)
        len += snprintf(text + len, sizeof text - (size_t)len,
                        "emulated task %llu.%d: exited with code %lld at %.3f\n",
                        (unsigned long long)job, task, (long long)t->exit_code, t->end_time);
    else if (t->state == SL_PROTO_TASK_FAILED)
        len += snprintf(text + len, sizeof text - (size_t)len, "emulated task %llu.%d: failed: %s\n",
                        (unsigned long long)job, task, t->reason);
    if (len >= (int)sizeof text) len = (int)sizeof text - 1;
    int64_t off = offset < len ? offset : len;
    int64_t take = len - off;
    if (limit >= 0 && take > limit) take = limit;
    m.u.logs_reply = (sl_proto_logs_reply_t){.data = text + off, .data_len = (size_t)take,
                                             .offset = off, .size = len,
                                             .eof = off + take >= len};
    node_send(n, &m);
}

static sl_proto_task_t *emu_report(void *ud, size_t *count) {
    emu_node_t *n = ud;
    size_t k = 0;
    for (emu_task_t *t = n->tasks; t; t = t->next) k += !t->acked;
    sl_proto_task_t *out = calloc(k ? k : 1, sizeof *out);
    if (!out) abort();
    k = 0;
    for (emu_task_t *t = n->tasks; t; t = t->next) {
        if (t->acked) continue;
        out[k++] = (sl_proto_task_t){.job = t->job, .task = t->task, .state = t->state, .pid = t->pid,
                                   .start_time = t->start_time, .end_time = t->end_time,
                                   .exit_code = t->exit_code, .signal = t->signal,
                                   .fenced = t->fenced, .reason = t->reason,
                                   .has_attempt = t->attempt >= 0,
                                   .attempt = (uint32_t)t->attempt};
    }
    *count = k;
    return out;
}

static const agent_conn_tasks_ops_t emu_ops = {emu_set_sender, emu_welcome, emu_launch, emu_kill,
                                               emu_fence, emu_ack, emu_logs, emu_report};

static void stop_cb(evutil_socket_t sig, short ev, void *arg) {
    sl_log(SL_LOG_INFO, "emulate", "SIG%s: stopping", sigabbrev_np((int)sig));
    event_base_loopbreak(arg);
}

int agent_emulate_run(struct event_base *base, const agent_emulate_config_t *cfg) {
    /* One socket per node, plus the loop's own and some spare. */
    int64_t want = (int64_t)cfg->nodes + 64;
    int64_t have = sl_nofile_raise(want);
    if (have < want) {
        sl_log(SL_LOG_ERROR, "emulate", "--emulate %d needs %lld open files (one connection per "
               "node) but the limit is %lld and cannot be raised (ulimit -n; as root, or raise "
               "the hard limit: LimitNOFILE= in systemd)", cfg->nodes, (long long)want,
               (long long)have);
        return -1;
    }
    emu_node_t *nodes = sl_xcalloc((size_t)cfg->nodes, sizeof *nodes);
    struct event *sigterm = evsignal_new(base, SIGTERM, stop_cb, base);
    struct event *sigint = evsignal_new(base, SIGINT, stop_cb, base);
    event_add(sigterm, NULL);
    event_add(sigint, NULL);
    sl_log(SL_LOG_INFO, "emulate", "%d nodes %s00000..%s%05d: cpus=%s memory=%s gpus=%d, "
           "controller=%s:%s", cfg->nodes, cfg->prefix, cfg->prefix, cfg->nodes - 1,
           cfg->conn.node.cpus, cfg->conn.node.memory, cfg->conn.node.gpus, cfg->conn.host,
           cfg->conn.port);
    for (int i = 0; i < cfg->nodes; i++) {
        emu_node_t *n = &nodes[i];
        n->base = base;
        snprintf(n->name, sizeof n->name, "%s%05d", cfg->prefix, i);
        agent_conn_config_t cc = cfg->conn;
        cc.node.name = n->name;
        cc.usage = NULL;
        cc.usage_ud = NULL;
        cc.ops = &emu_ops;
        cc.heartbeat_spread = 1;
        agent_conn_create(base, &cc, n, &n->cn);
    }
    event_base_dispatch(base);
    for (int i = 0; i < cfg->nodes; i++) {
        agent_conn_destroy(nodes[i].cn);
        while (nodes[i].tasks) {
            emu_task_t *t = nodes[i].tasks;
            nodes[i].tasks = t->next;
            task_free(t);
        }
    }
    event_free(sigterm);
    event_free(sigint);
    sl_free(nodes);
    sl_log(SL_LOG_INFO, "emulate", "stopped");
    return 0;
}
