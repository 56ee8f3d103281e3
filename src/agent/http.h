/*
 * http.h - a small HTTP/1.1 responder on the agent's loop (http.c), for
 * the exporter's GET /metrics. It answers GET only, one request per
 * connection, and bounds what a client can hold: the request's size, the
 * connections open (in all and from one peer address) and each
 * connection's lifetime.
 */
#ifndef SLUICE_AGENT_HTTP_H
#define SLUICE_AGENT_HTTP_H

#include <stddef.h>

#include <event2/buffer.h>
#include <event2/event.h>

#define AGENT_HTTP_MAX_REQUEST 8192  /* request line and headers, bytes */
#define AGENT_HTTP_MAX_CONNS 64      /* open at once (connlimit.h: the oldest unanswered
                                      * one is evicted to make room) */
#define AGENT_HTTP_MAX_PER_PEER 8    /* open at once from one peer address (the same) */
#define AGENT_HTTP_DEADLINE_MS 10000 /* a connection's whole life, reply included */
#define AGENT_HTTP_BACKLOG 1024      /* listen(2) backlog (the kernel may cap it) */

typedef struct agent_http agent_http_t;

/* Writes the reply to GET path into body and returns its status: 200
 * (with *ctype its content type) or 404. Runs in the loop. */
typedef int (*agent_http_fn)(void *ud, const char *path, struct evbuffer *body, const char **ctype);

/*
 * Listens on hostport ("127.0.0.1:9100", "[::1]:9100", ":9100" for every
 * address) and answers each GET through fn. Returns 0 with *out set, or
 * -1 with the reason in err (not HOST:PORT, cannot resolve, cannot bind).
 */
int agent_http_create(struct event_base *base, const char *hostport, agent_http_fn fn, void *ud,
                      agent_http_t **out, char *err, size_t errlen);

/* The port bound (for a hostport with port 0). Can't fail. */
int agent_http_port(const agent_http_t *h);

/* Closes the listener and every open connection; accepts NULL. */
void agent_http_destroy(agent_http_t *h);

#endif
