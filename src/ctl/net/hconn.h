/*
 * hconn.h - the HTTP API's connections: limits, timeouts, the bytes of
 * unread replies, and JSON for the errors libevent answers by itself
 * (docs/api.md "Limits"; docs/config.md "Limits").
 */
#ifndef SLUICE_CTL_HCONN_H
#define SLUICE_CTL_HCONN_H

#include <stdbool.h>
#include <stddef.h>

#include "domain/ctl.h"
#include "base/listen.h"

struct evhttp;
struct evhttp_request;
struct bufferevent;
struct event_base;
struct evbuffer;

typedef struct ctl_hconns {
    ctl_t *c;
    struct evhttp *http;   /* borrowed: the HTTP adapter's */
    ctl_lport_t port;
    sl_hash_t by_evcon;    /* hconn by its evhttp_connection's address */
    struct event *sweep_ev;
    bool sending;          /* one of our own replies is being written */
    /* Makes the bufferevent of an accepted connection (the HTTP adapter's
     * TLS one); NULL: a plain socket bufferevent. Set before ctl_hconns_open. */
    struct bufferevent *(*make_bev)(struct event_base *base, void *ud);
    void *make_bev_ud;
} ctl_hconns_t;

/* Raises RLIMIT_NOFILE, fits both ports' connection limits under it
 * (lowering c->cfg.max_connections, with a warning, when they do not fit),
 * sets http's limits and timeouts and binds it to c->cfg.listen through a
 * port of ctl_lport. 0, or -1 with a message in err. */
int ctl_hconns_open(ctl_hconns_t *h, ctl_t *c, struct evhttp *http, char *err, size_t errlen);
/* Frees the connection records; call after evhttp_free (which closes the
 * connections and frees the listener). Accepts an h never opened. */
void ctl_hconns_fini(ctl_hconns_t *h);
/* req's connection has a request in progress: it is not idle until its
 * reply goes out. O(1). */
void ctl_hconns_busy(ctl_hconns_t *h, struct evhttp_request *req);
/* True when a reply of len bytes fits under limits.reply_buffer with what
 * every connection still has to write. O(1) below 64 KiB, else
 * O(connections). */
bool ctl_hconns_room(ctl_hconns_t *h, size_t len);
/* Sends our reply (evhttp_send_reply) and marks its connection idle. */
void ctl_hconns_send(ctl_hconns_t *h, struct evhttp_request *req, int status, const char *reason,
                     struct evbuffer *body);

#endif
