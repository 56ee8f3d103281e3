/*
 * proto_health.h - the health report a heartbeat may carry
 * (docs/protocol.md, "heartbeat"; docs/health.md): the node's own state
 * (its health command, node-level faults) and each GPU that is not
 * healthy or has seen an XID. proto.h includes this header and proto.c
 * calls its codec; nothing else should (use proto.h).
 *
 * Additive: a controller that does not know "health" ignores it, and a
 * heartbeat without it says nothing new (the controller keeps what it
 * knew). XIDs are events but travel as a per-GPU count since the agent
 * started (xids) with the latest one (xid), so that a heartbeat that is
 * lost loses no fault: the controller acts on every increase.
 */
#ifndef SLUICE_COMMON_PROTO_HEALTH_H
#define SLUICE_COMMON_PROTO_HEALTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "gpuhealth.h"

#define SL_PROTO_HEALTH_MSG_MAX 160 /* bytes of a message the encoder writes at most */

typedef struct sl_proto_gpu_health {
    int32_t gpu;                /* index, 0..1023 */
    sl_health_state_t state;
    sl_health_reason_t reason;  /* SL_HREASON_NONE when healthy */
    int32_t xid;                /* the latest XID; 0: none seen */
    int64_t xids;               /* XID events on it since the agent started */
    double xid_time;            /* when the latest came, seconds since the epoch; 0: absent */
    const char *message;        /* words; NULL: none */
} sl_proto_gpu_health_t;

typedef struct sl_proto_health {
    bool present;               /* false: the heartbeat carries none */
    sl_health_state_t state;    /* the node's own */
    sl_health_reason_t reason;
    const char *message;        /* NULL: none */
    const sl_proto_gpu_health_t *gpus;
    size_t ngpus;
} sl_proto_health_t;

/* Writes `,"health":{...}` for h into buf (cap bytes, snprintf semantics:
 * returns the length the text needs, writes what fits, no NUL); nothing
 * when !h->present. Messages are cut at SL_PROTO_HEALTH_MSG_MAX bytes.
 * Allocates nothing. */
size_t sl__proto_health_encode(const sl_proto_health_t *h, char *buf, size_t cap);

/* Decodes a heartbeat's "health" (v: the object, or NULL/null for none)
 * into *h, its GPU entries in an array alloc(ud, count, size) returns and
 * its strings borrowed from v. 0, or -1 with "heartbeat: health.FIELD:
 * must be ..." in err. */
int sl__proto_health_decode(json_t *v, void *(*alloc)(void *ud, size_t n, size_t size), void *ud,
                            sl_proto_health_t *h, char *err, size_t errlen);

#endif
