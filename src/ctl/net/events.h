/*
 * events.h - GET /v1/events: jobs' and nodes' changes as Server-Sent
 * Events (docs/api.md "Events"), for the console and `sluice queue
 * --watch`.
 *
 * Who owns what: ctl_events_t is the HTTP adapter's (created by
 * ctl_http_init, destroyed by ctl_http_fini before the server is freed);
 * each streaming request stays evhttp's, this module only writes to it.
 */
#ifndef SLUICE_CTL_EVENTS_H
#define SLUICE_CTL_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "domain/ctl.h"
#include "net/hconn.h"

struct evhttp_request;
struct evkeyvalq;

/* Events kept for Last-Event-ID, at most this many and this many bytes;
 * an older id is answered with a "reset" event (the client lists again). */
#define CTL_EVENTS_RING 4096
#define CTL_EVENTS_RING_BYTES (8 << 20)
/* A client's unsent bytes may reach this; one more event and it is
 * dropped (its connection closed), so that a client that does not read
 * costs the controller at most this much. */
#define CTL_EVENTS_CLIENT_BYTES (256 << 10)
/* Streams at once; one more is answered 503. */
#define CTL_EVENTS_MAX_CLIENTS 1024
/* Seconds between heartbeat comments by default (?heartbeat= 1..300). */
#define CTL_EVENTS_HEARTBEAT_S 15
/* Events are still kept this long after the last client left, so that
 * a client that reconnects resumes where it was. */
#define CTL_EVENTS_LINGER_S 120

typedef struct ctl_events ctl_events_t;

/* Counters (GET /v1/events/stats, the admin's). */
typedef struct ctl_events_stats {
    uint64_t next_id;     /* the id the next event gets */
    uint64_t clients;     /* streams open now */
    uint64_t dropped;     /* clients dropped for not reading */
    uint64_t sent;        /* events written to clients */
    size_t ring_len, ring_bytes;
} ctl_events_stats_t;

/* Creates the event stream of c, whose replies go out through conns, and
 * registers it as c's watcher (ctl_watch_t). Can't fail (aborts on
 * out-of-memory). */
ctl_events_t *ctl_events_create(ctl_t *c, ctl_hconns_t *conns);
/* Unregisters and frees ev, its ring and its clients' records, without
 * touching their requests (the server frees them). Accepts NULL. */
void ctl_events_destroy(ctl_events_t *ev);
/* The output gate of the event stream, called by the REPLIES hook (after
 * COMMIT): marks the changes noted since the last flush with
 * ctl_store_seq, then renders into the ring and the streams of the
 * clients allowed to see them the oldest changes whose mark is at most
 * ctl_store_durable, in the order they were noted; later ones wait for a
 * later flush. Outside HA mode durable equals seq: every change is
 * published at once. O(changes published x clients + changes held). */
void ctl_events_flush(ctl_events_t *ev);
/* Publishes the changes already marked whose mark is durable, marking
 * nothing (the RELEASE hook, before COMMIT). */
void ctl_events_release(ctl_events_t *ev);
/* Answers GET /v1/events: starts the stream of req for the caller (admin:
 * every job; else only tenant's jobs; every token sees the nodes), from
 * the Last-Event-ID header or ?last_event_id=, with ?heartbeat=SECONDS.
 * A bad parameter or too many clients: answered with the error here. */
void ctl_events_http(ctl_events_t *ev, struct evhttp_request *req, const struct evkeyvalq *query,
                     bool admin, int32_t tenant);
/* The counters now. Can't fail. */
void ctl_events_stats(const ctl_events_t *ev, ctl_events_stats_t *out);
/* Answers GET /v1/events/stats: the counters as JSON to the admin, 403
 * to any other token. */
void ctl_events_http_stats(ctl_events_t *ev, struct evhttp_request *req, bool admin);

#endif
