/*
 * logstream.h - GET /v1/jobs/{id}/logs/stream: a task's output as
 * Server-Sent Events (docs/api.md "Log stream"), for the console's live
 * tail and `sluice logs -f`.
 *
 * A task's output stays on its node (the agent's task log); the
 * controller reads it for each open stream from where that stream is,
 * through the same agent request as GET /v1/jobs/{id}/logs, again as soon
 * as an answer was full and otherwise every CTL_LOGSTREAM_POLL_MS, and
 * writes each new piece as one event:
 *
 *   event: log
 *   data: {"job":12,"task":0,"offset":0,"data":"epoch 1 ...\n"}
 *
 * then `event: eof` once the task has ended and everything was sent (and
 * the stream ends), or `event: error` with a message (the agent has no
 * such log) and the end. Ownership: ctl_logstream_t is the HTTP adapter's;
 * each streaming request stays evhttp's, this module only writes to it.
 *
 * Bounds: at most CTL_LOGSTREAM_MAX streams (one more is a 503); a stream
 * whose client has CTL_LOGSTREAM_CLIENT_BYTES unread is not read for
 * until it drains (its output waits on the node, not in the controller),
 * so each stream costs at most that much memory and one agent request in
 * flight. Who sees what is the caller's check (the job's tenant or the
 * admin), made once at the start.
 */
#ifndef SLUICE_CTL_LOGSTREAM_H
#define SLUICE_CTL_LOGSTREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "domain/ctl.h"
#include "net/hconn.h"

struct evhttp_request;

#define CTL_LOGSTREAM_MAX 256
#define CTL_LOGSTREAM_CLIENT_BYTES (256 << 10)
#define CTL_LOGSTREAM_POLL_MS 250
/* Bytes asked of the agent at a time. */
#define CTL_LOGSTREAM_CHUNK 65536
/* Request ids of this module have this bit set (the HTTP adapter's own
 * log requests, counted from 1, never reach it; a JSON integer of the
 * protocol holds it exactly): an agent's answer goes to the one that asked. */
#define CTL_LOGSTREAM_REQ_BIT (UINT64_C(1) << 48)

/* Sends one log request to node's agent: 0, or < 0 when it is not
 * connected (the signature of the adapter's ctl_logs_send_fn). */
typedef int (*ctl_logstream_send_fn)(void *ud, uint32_t node, uint64_t req, uint64_t job,
                                     int32_t task, int64_t offset, int64_t limit);

typedef struct ctl_logstream ctl_logstream_t;

/* Creates the streams of c, whose replies go out through conns. Can't
 * fail (aborts on out-of-memory). */
ctl_logstream_t *ctl_logstream_create(ctl_t *c, ctl_hconns_t *conns);
/* Frees ls and its records, not their requests (the server frees them).
 * Accepts NULL. */
void ctl_logstream_destroy(ctl_logstream_t *ls);
/* Starts the stream of req: job's task (which has run, on node), from
 * byte offset, read through send(ud, ...). The caller checked the token
 * and the task. Too many streams: a 503 answered here. */
void ctl_logstream_open(ctl_logstream_t *ls, struct evhttp_request *req, uint64_t job, int32_t task,
                        uint32_t node, int64_t offset, ctl_logstream_send_fn send, void *ud);
/* An agent's answer to request req (the arguments as ctl_http_logs_answer).
 * False when req is not one of this module's (nothing done). */
bool ctl_logstream_answer(ctl_logstream_t *ls, uint64_t req, const char *error, const char *data,
                          size_t len, int64_t offset, bool eof);
/* node's agent went away: the streams waiting on it ask again later. */
void ctl_logstream_gone(ctl_logstream_t *ls, uint32_t node);
/* Streams open now. */
size_t ctl_logstream_count(const ctl_logstream_t *ls);

#endif
