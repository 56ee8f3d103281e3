/*
 * etcdg.h - etcd's KV.Txn through its gRPC port (HTTP/2 over plain TCP
 * with prior knowledge, protobuf messages; Debian's libnghttp2), for the
 * leader's log writes (logw.h).
 *
 * Why not the JSON gateway (etcd.h) there: the gateway turns each request
 * into a gRPC call to etcd itself over loopback (JSON and base64 both
 * ways, a second connection), which costs etcd about twice the CPU of a
 * gRPC caller's transaction (bench/RESULTS.md, "etcd by itself"); on
 * machines that etcd shares, that CPU is the leader's. Every other call
 * (lease, election, the followers' reads, snapshots) stays on the
 * gateway: one a second or one per 100 ms.
 *
 * One connection, one call in flight at a time, every wait bounded by the
 * call's time (poll on a non-blocking socket), as etcd.h. The messages
 * are written and read with pb.h.
 */
#ifndef SLUICE_CTL_HA_ETCDG_H
#define SLUICE_CTL_HA_ETCDG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ha/pb.h"

typedef struct ctl_etcdg ctl_etcdg_t;

/* A client of the members at endpoints (etcd.h's form), unconnected.
 * *out NULL on failure: -1 with err naming the bad endpoint. */
int ctl_etcdg_open(ctl_etcdg_t **out, const char *endpoints, char *err, size_t errlen);
/* Closes the connection and frees; accepts NULL. */
void ctl_etcdg_free(ctl_etcdg_t *g);
/* The connection's descriptor (-1: none), why the last call failed, the
 * member it talks to, and a member to use next (closing the connection
 * when it is another). */
int ctl_etcdg_fd(const ctl_etcdg_t *g);
const char *ctl_etcdg_err(const ctl_etcdg_t *g);
size_t ctl_etcdg_cur(const ctl_etcdg_t *g);
size_t ctl_etcdg_members(const ctl_etcdg_t *g);
void ctl_etcdg_use(ctl_etcdg_t *g, size_t cur);
/* Closes the connection; a call in flight is forgotten. */
void ctl_etcdg_close(ctl_etcdg_t *g);

/* Starts a KV.Txn call of the TxnRequest msg (len bytes) on the current
 * member, connecting first when needed: returns once it is written. 0,
 * or -1 with the reason (the connection closed). */
int ctl_etcdg_send(ctl_etcdg_t *g, const void *msg, size_t len, int timeout_ms);
/* Reads the answer of the call in flight within timeout_ms: 0 with the
 * TxnResponse in *resp (a new buffer, sl_free) of *rlen bytes; -2 when
 * etcd answered with an error (grpc-status, quoted in ctl_etcdg_err); -1
 * when it did not answer (the connection closed). With timeout_ms 0 it
 * does not wait (the descriptor was readable): 1 when what came was not
 * the whole answer (etcd's PING or SETTINGS frames come on their own). */
int ctl_etcdg_recv(ctl_etcdg_t *g, void **resp, size_t *rlen, int timeout_ms);
/* Reads and handles what an idle connection holds (etcd's PING or
 * SETTINGS frames), without waiting. 0, or -1 when the connection closed
 * (it is closed here too). */
int ctl_etcdg_drain(ctl_etcdg_t *g);
/* Both, trying each member in turn within timeout_ms, as ctl_etcd_post:
 * a member that does not answer gets its share of the time (at least
 * CTL_ETCD_MIN_TRY_MS). 0, or -1 with the reason. */
int ctl_etcdg_call(ctl_etcdg_t *g, const void *msg, size_t len, void **resp, size_t *rlen,
                   int timeout_ms);

/* ---- protobuf ---- */

/* etcdserverpb's field numbers and enums (etcd 3.4's rpc.proto and
 * kv.proto) for the messages of a Txn. */
enum {
    CTL_PB_TXN_COMPARE = 1, CTL_PB_TXN_SUCCESS = 2, CTL_PB_TXN_FAILURE = 3,
    CTL_PB_CMP_RESULT = 1, CTL_PB_CMP_TARGET = 2, CTL_PB_CMP_KEY = 3,
    CTL_PB_CMP_CREATE_REVISION = 5,
    CTL_PB_CMP_EQUAL = 0, CTL_PB_CMP_TARGET_CREATE = 1,
    CTL_PB_OP_RANGE = 1, CTL_PB_OP_PUT = 2,
    CTL_PB_PUT_KEY = 1, CTL_PB_PUT_VALUE = 2,
    CTL_PB_RANGE_KEY = 1, CTL_PB_RANGE_END = 2, CTL_PB_RANGE_LIMIT = 3,
    CTL_PB_RANGE_SERIALIZABLE = 7,
    CTL_PB_TXNR_SUCCEEDED = 2, CTL_PB_TXNR_RESPONSES = 3, CTL_PB_OPR_RANGE = 1,
    CTL_PB_RANGER_KVS = 2, CTL_PB_RANGER_MORE = 3, CTL_PB_RANGER_COUNT = 4,
    CTL_PB_KV_KEY = 1, CTL_PB_KV_CREATE_REVISION = 2, CTL_PB_KV_VALUE = 5,
};

/* A TxnResponse read: whether it succeeded and, for each of its
 * responses, the range it holds (none for a put), each key-value
 * pointing into the answer's bytes. */
typedef struct ctl_etcdg_kv {
    const unsigned char *key, *value;
    size_t klen, vlen;
    uint64_t create_revision;
} ctl_etcdg_kv_t;
typedef struct ctl_etcdg_range {
    ctl_etcdg_kv_t *kvs;
    size_t nkvs;
    bool more;
    int64_t count;
} ctl_etcdg_range_t;
typedef struct ctl_etcdg_txnr {
    bool succeeded;
    ctl_etcdg_range_t *ranges;  /* one per response, in order */
    size_t nranges;
} ctl_etcdg_txnr_t;
/* Reads the TxnResponse resp (len bytes) into *t, which points into resp
 * (free with ctl_etcdg_txnr_free, resp after). 0, or -1 when it is not
 * one (*t then empty). */
int ctl_etcdg_txnr_read(const void *resp, size_t len, ctl_etcdg_txnr_t *t);
void ctl_etcdg_txnr_free(ctl_etcdg_txnr_t *t);

#endif
