/*
 * agentport.h - the agent port: sluiced's side of the agent protocol
 * (docs/protocol.md), an adapter between TCP connections and the domain.
 *
 * It decodes each agent message into a domain call (hello, started,
 * exited, failed, heartbeat) and encodes the domain's decisions (c->out:
 * launch, kill) and its own replies (welcome, error, ack) as wire
 * messages. Decisions and acks leave only once the commit that explains
 * them is durable (ctl_agentport_flush); welcome, error, heartbeat
 * answers, log requests and job steps' lines are written at once. Log requests pass through it for the HTTP adapter, which it
 * knows only as the callbacks set by main.c.
 */
#ifndef SLUICE_CTL_AGENTPORT_H
#define SLUICE_CTL_AGENTPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "domain/ctl.h"
#include "sluice/list.h"

struct evconnlistener;
struct ssl_ctx_st;
typedef struct ctl_conn ctl_conn_t;
typedef struct ctl_apnode ctl_apnode_t;

/* An agent's answer to a log request: error (non-NULL when the agent could
 * not read the log) or len bytes of data from offset, eof at the end. The
 * strings are valid during the call only. */
typedef void (*ctl_logs_answer_fn)(void *ud, uint64_t req, const char *error, const char *data,
                                   size_t len, int64_t offset, bool eof);
/* The log requests waiting on node can no longer be answered (why). */
typedef void (*ctl_logs_gone_fn)(void *ud, uint32_t node, const char *why);

typedef struct ctl_agentport {
    ctl_t *c;
    ctl_lport_t port;      /* the listener, its limits and back-off (listen.h) */
    ctl_apnode_t **nodes;  /* by core node id: connection and output queue */
    size_t nnodes;
    uint32_t *flushq;      /* nodes with queued output */
    size_t nflushq, flushq_cap;
    sl_list_t held;        /* the gate's FIFO: output waiting for a durable commit */
    size_t held_bytes;     /* the bytes in it */
    /* An agent message of a type the codec does not know, offered to the
     * job steps (steps.h, set by main.c): true when it was theirs. */
    bool (*step_msg)(void *ud, uint32_t node, json_t *o);
    void *step_ud;
    ctl_logs_answer_fn logs_answer;
    ctl_logs_gone_fn logs_gone;
    void *logs_ud;
    /* Set by main.c before listening: TLS on the agent port (NULL: plain
     * TCP); with certs_bind_name, an agent whose verified client
     * certificate does not name the node it claims in hello is refused. */
    struct ssl_ctx_st *tls;
    bool certs_bind_name;
    char last_reject[320]; /* the last refusal, logged once while it repeats */
} ctl_agentport_t;

/* Sets up ap in caller storage for c and points c->out at it. Can't fail. */
void ctl_agentport_init(ctl_agentport_t *ap, ctl_t *c);
/* Listens on c->cfg.agent_listen. 0, or -1 with a message in err. */
int ctl_agentport_listen(ctl_agentport_t *ap, char *err, size_t errlen);
/* Closes every connection and the listener (no callbacks run). */
void ctl_agentport_fini(ctl_agentport_t *ap);
/* The output a node's connection may have held by the gate; past it the
 * connection is closed, as if it had broken (its agent reconnects, and its
 * hello rebuilds what it needs). */
#define CTL_AGENT_HELD_BYTES (16u << 20)

/* The loop's AGENTS hook (ud is the agent port), run after COMMIT: the
 * output gate. The messages queued for each node since the last flush
 * (launch, kill, ack) are tagged with ctl_store_seq and leave, in the
 * order they were queued, once ctl_store_durable reaches that tag, on
 * the connection they were queued for: when it has closed meanwhile
 * they are dropped, as queue() drops a message for an unconnected node.
 * Outside HA mode durable equals seq and nothing is ever held: they are
 * written at once. Returns false (held messages wait for the kick that
 * the HA layer makes when durable advances). O(nodes queued + chunks
 * released). */
bool ctl_agentport_flush(void *ud);
/* The RELEASE hook's half for the agents: writes the held chunks whose
 * tag is durable (nothing is tagged here). Returns false. */
bool ctl_agentport_release(void *ud);
/* Sends a log request to node's agent at once (ud is the agent port). 0,
 * SL_ENOENT when its agent is not connected, SL_EIO when it cannot be
 * written. The answer comes through logs_answer. */
int ctl_agentport_logs(void *ud, uint32_t node, uint64_t req, uint64_t job, int32_t task,
                       int64_t offset, int64_t limit);

/* Sends one encoded line to node's agent at once (ud is the agent port;
 * a job step's message, steps.h). 0, or SL_ENOENT when its agent is not
 * connected. */
int ctl_agentport_send_line(void *ud, uint32_t node, const char *line, size_t len);

#endif
