/*
 * conn.h - the agent's one connection to the controller (conn.c): hello and
 * welcome, reconnection with backoff, heartbeats, and the dispatch of each
 * decoded message to the tasks below.
 */
#ifndef SLUICE_AGENT_CONN_H
#define SLUICE_AGENT_CONN_H

#include <event2/event.h>

#include "hostport.h"
#include "proto.h"
#include "step.h"
#include "task.h"

typedef struct agent_conn agent_conn_t;
struct ssl_ctx_st;

/* What the connection calls below it: the tasks (task.h) by default, or,
 * for the node emulator (emulate.c), the emulated tasks of one virtual
 * node. Each function has the contract of its agent_tasks_ namesake, with
 * ts the pointer given to agent_conn_create. */
typedef struct agent_conn_tasks_ops {
    void (*set_sender)(void *ts, agent_tasks_send_fn send, void *ud);
    void (*welcome)(void *ts, const char *instance);
    void (*launch)(void *ts, uint64_t job, int32_t task, int64_t attempt,
                   const sl_proto_launch_t *l, const char *why);
    void (*kill)(void *ts, uint64_t job, int32_t task, int64_t attempt, const sl_proto_kill_t *k);
    int (*fence)(void *ts, int64_t grace_ms);
    void (*ack)(void *ts, uint64_t job, int32_t task, int64_t attempt);
    void (*logs)(void *ts, uint64_t req, uint64_t job, int32_t task, int64_t offset,
                 int64_t limit);
    sl_proto_task_t *(*report)(void *ts, size_t *n);
} agent_conn_tasks_ops_t;

typedef struct agent_conn_config {
    const char *host;       /* the controller's agent port, when controllers is NULL */
    const char *port;
    /* The controllers' agent ports (--controller A,B,C), tried in turn
     * with the back-off; a redirect names the next one to try. ncontrollers
     * 0: just host and port. The array is borrowed. */
    const sl_hostport_t *controllers;
    size_t ncontrollers;
    /* The file of the highest controller epoch accepted (epoch.h), read
     * by the caller into epoch_mark and rewritten here when it rises;
     * NULL: kept in memory only (the emulator). */
    const char *epoch_path;
    sl_epoch_mark_t epoch_mark;
    const char *token;      /* the cluster token */
    sl_proto_node_t node;   /* this node's spec, sent in every hello */
    int heartbeat_s;        /* at most this; the welcome may lower it */
    struct ssl_ctx_st *tls; /* NULL: plain TCP; else TLS with this client context, the
                             * server's certificate checked against host */
    /* The usage summary each heartbeat carries (agent_metrics_usage): an
     * array the connection frees; NULL: heartbeats carry none. */
    size_t (*usage)(void *ud, sl_proto_usage_t **out);
    void *usage_ud;
    /* The health report each heartbeat may carry (agent_health_report):
     * false sends none; NULL: never. first: the connection's first
     * heartbeat since its welcome (the report then always goes, so that
     * the controller knows where the XID counts stand). */
    bool (*health)(void *ud, bool first, sl_proto_health_t *out);
    void *health_ud;
    /* NULL: ts is an agent_tasks_t (task.h); else the ops ts is given to. */
    const agent_conn_tasks_ops_t *ops;
    /* The node's fence lease (lease.h), rewritten with each contact so that
     * the tasks' monitors stop them when the agent cannot (monitor.h);
     * NULL: none (the emulator). lease_grace_ms: the SIGTERM-to-SIGKILL
     * grace it carries when the welcome names none (the agent's --grace). */
    const char *lease;
    int64_t lease_grace_ms;
    /* Heartbeats: 0, the first comes one interval after creation (a real
     * agent); 1, after a random part of one, so that many connections
     * created together (the emulator's) spread their heartbeats. */
    int heartbeat_spread;
} agent_conn_config_t;

/*
 * Creates the connection, registers it as the sender of ts's reports (ts is
 * an agent_tasks_t unless cfg->ops says otherwise) and
 * starts connecting (in the loop; failures are retried, never returned).
 * cfg's strings are borrowed and must outlive the connection. Returns 0
 * with *out set. Can't fail otherwise (out-of-memory aborts).
 */
int agent_conn_create(struct event_base *base, const agent_conn_config_t *cfg, void *ts,
                      agent_conn_t **out);

/* Hands the controller's job-step messages to steps and sends theirs
 * (step.h). steps is borrowed and must outlive cn. */
void agent_conn_set_steps(agent_conn_t *cn, agent_steps_t *steps);

/* Sends a heartbeat now (a health change), then every interval from
 * now. Nothing while not connected. */
void agent_conn_heartbeat_now(agent_conn_t *cn);

/* Writes what is still queued (best effort: the last exits before the
 * process ends), closes the connection, unregisters from the tasks and
 * frees. Accepts NULL. */
void agent_conn_destroy(agent_conn_t *cn);

#endif
