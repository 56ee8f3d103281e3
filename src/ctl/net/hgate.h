/*
 * hgate.h - the API's deferred replies: the HTTP half of the output gate
 * (base/loop.h).
 *
 * A handler whose change the store commits with the iteration defers its
 * reply here (the job's object, or a body of its own). At the flush after
 * the COMMIT each reply not yet tagged is tagged with ctl_store_seq and
 * its body rendered (a job as GET /v1/jobs/{id} shows it then); replies
 * leave in the order they were deferred while their tag is at most
 * ctl_store_durable. Outside HA mode the two are equal after every COMMIT,
 * so every reply leaves at the flush after its handler, rendered once and
 * sent without a copy; in HA mode they wait for their log entry. libevent
 * keeps a request whose client left until it is answered, so a reply held
 * across iterations is always safe to send.
 */
#ifndef SLUICE_CTL_HGATE_H
#define SLUICE_CTL_HGATE_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "domain/ctl.h"
#include "net/hconn.h"

struct evhttp_request;
typedef struct ctl_hgate_reply ctl_hgate_reply_t;

typedef struct ctl_hgate {
    ctl_t *c;
    ctl_hconns_t *conns;       /* where replies leave (hreply.h) */
    ctl_hgate_reply_t *r;      /* deferred, in order */
    size_t n, cap;
} ctl_hgate_t;

/* Sets g up in caller storage. Can't fail. */
void ctl_hgate_init(ctl_hgate_t *g, ctl_t *c, ctl_hconns_t *conns);
/* Defers req's reply: job's object with status, or body (taken). */
void ctl_hgate_defer(ctl_hgate_t *g, struct evhttp_request *req, int status, uint64_t job);
void ctl_hgate_defer_body(ctl_hgate_t *g, struct evhttp_request *req, int status,
                          ctl_buf_t *body);
/* The flush after COMMIT: tags what is untagged, sends the durable prefix.
 * O(replies). */
void ctl_hgate_flush(ctl_hgate_t *g);
/* Before COMMIT (the RELEASE stage): sends the durable prefix of what is
 * already tagged, tagging nothing. O(replies released). */
void ctl_hgate_release(ctl_hgate_t *g);
/* At shutdown: answers every reply still held 503 (its change is not
 * known to be durable) and frees g's storage. */
void ctl_hgate_fini(ctl_hgate_t *g);

#endif
