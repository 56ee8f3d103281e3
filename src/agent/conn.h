/*
 * conn.h - the agent's one connection to the controller (conn.c): hello and
 * welcome, reconnection with backoff, heartbeats, and the dispatch of each
 * decoded message to the tasks below.
 */
#ifndef SLUICE_AGENT_CONN_H
#define SLUICE_AGENT_CONN_H

#include <event2/event.h>

#include "proto.h"
#include "task.h"

typedef struct agent_conn agent_conn_t;
struct ssl_ctx_st;

typedef struct agent_conn_config {
    const char *host;       /* the controller's agent port */
    const char *port;
    const char *token;      /* the cluster token */
    sl_proto_node_t node;   /* this node's spec, sent in every hello */
    int heartbeat_s;        /* at most this; the welcome may lower it */
    struct ssl_ctx_st *tls; /* NULL: plain TCP; else TLS with this client context, the
                             * server's certificate checked against host */
    /* The usage summary each heartbeat carries (agent_metrics_usage): an
     * array the connection frees; NULL: heartbeats carry none. */
    size_t (*usage)(void *ud, sl_proto_usage_t **out);
    void *usage_ud;
} agent_conn_config_t;

/*
 * Creates the connection, registers it as the sender of ts's reports and
 * starts connecting (in the loop; failures are retried, never returned).
 * cfg's strings are borrowed and must outlive the connection. Returns 0
 * with *out set. Can't fail otherwise (out-of-memory aborts).
 */
int agent_conn_create(struct event_base *base, const agent_conn_config_t *cfg, agent_tasks_t *ts,
                      agent_conn_t **out);

/* Writes what is still queued (best effort: the last exits before the
 * process ends), closes the connection, unregisters from the tasks and
 * frees. Accepts NULL. */
void agent_conn_destroy(agent_conn_t *cn);

#endif
