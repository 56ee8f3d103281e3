/*
 * http.h - the HTTP adapter: sluiced's JSON API on libevent's evhttp
 * (routes, auth, replies; the views are in api.c).
 */
#ifndef SLUICE_CTL_HTTP_H
#define SLUICE_CTL_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "domain/ctl.h"
#include "net/hconn.h"
#include "net/hgate.h"

struct evhttp;
struct evhttp_request;
struct ssl_ctx_st;

/* Sends a log request to node's agent at once: 0, or a negative error when
 * its agent is not connected. Set by main.c (the agent port's). */
typedef int (*ctl_logs_send_fn)(void *ud, uint32_t node, uint64_t req, uint64_t job, int32_t task,
                                int64_t offset, int64_t limit);

typedef struct ctl_logreq ctl_logreq_t;

typedef struct ctl_http {
    ctl_t *c;
    struct evhttp *http;
    ctl_hconns_t conns;    /* limits, timeouts, unread replies (hconn.h) */
    ctl_hgate_t gate;      /* replies deferred until their commit is durable (hgate.h) */
    ctl_logreq_t *logreqs; /* log requests waiting for their agent */
    uint64_t next_logreq;
    ctl_logs_send_fn logs_send;
    void *logs_ud;
    struct ssl_ctx_st *tls; /* set by main.c before listening: HTTPS; NULL: plain HTTP */
    struct ctl_report *report;           /* the report being computed (report.h), or NULL */
    struct evhttp_request *report_req;   /* and the request it answers */
    struct ctl_history *history;         /* history reads in flight (history.h) */
    struct ctl_steps *steps;             /* job steps (steps.h), set by main.c */
    struct ctl_events *events;           /* GET /v1/events (events.h) */
    struct ctl_logstream *logstream;     /* GET /v1/jobs/{id}/logs/stream (logstream.h) */
} ctl_http_t;

/* Sets up h in caller storage for c. Can't fail. */
void ctl_http_init(ctl_http_t *h, ctl_t *c);
/* Listens on c->cfg.listen. 0, or -1 with a message in err. */
int ctl_http_listen(ctl_http_t *h, char *err, size_t errlen);
/* Answers the replies still held by the gate with 503 (their change is
 * not known to be durable), then frees the server (answering nothing
 * more), the pending log requests and the reply queue. */
void ctl_http_fini(ctl_http_t *h);
/* Prints the route table for `sluiced --help`. */
void ctl_http_print_routes(void);
/* The loop's REPLIES hook (ud is the ctl_http_t), run after COMMIT: the
 * output gate. Each deferred reply not yet tagged is tagged with
 * ctl_store_seq and rendered; the replies leave in the order they were
 * deferred while their tag is at most ctl_store_durable, and the rest
 * stay for a later flush (in HA mode the one the HA layer kicks when
 * durable advances). Then the event stream's flush, gated the same way
 * (events.h). Outside HA mode durable equals seq, so every reply leaves
 * here, as before the gate. Returns false (held replies wait for a kick,
 * not for the next iteration). O(replies). */
bool ctl_http_flush(void *ud);
/* The loop's RELEASE hook's half for the API (run first in a flush,
 * before COMMIT): sends the replies already tagged whose tag is durable,
 * and publishes the event stream's changes likewise, tagging nothing.
 * Returns false. O(replies released). */
bool ctl_http_release(void *ud);
/* An agent answered log request req (ud is the ctl_http_t; the arguments
 * as ctl_logs_answer_fn in agentport.h). Unknown req: ignored. */
void ctl_http_logs_answer(void *ud, uint64_t req, const char *error, const char *data, size_t len,
                          int64_t offset, bool eof);
/* The log requests waiting on node fail with 502 (why). */
void ctl_http_logs_gone(void *ud, uint32_t node, const char *why);
/* The log requests past their 10 s deadline fail with 504. */
void ctl_http_logs_expire(ctl_http_t *h);

#endif
