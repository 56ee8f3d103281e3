/*
 * etcdrpc.h - etcd's v3 KV.Txn over gRPC (HTTP/2 in clear text with prior
 * knowledge, libnghttp2), for the one call on the leader's commit path.
 *
 * Why beside the JSON gateway (etcd.h): etcd's gateway decodes the JSON,
 * then makes the same gRPC call to itself over loopback, which about
 * doubles etcd's CPU time per transaction (measured on this kind of
 * machine: 783 us against 420 us, bench/RESULTS.md). Everything else
 * (leases, ranges, snapshots) stays on the gateway: one call a second or
 * less.
 *
 * Protocol buffers are written and read by hand (etcd's rpc.proto,
 * etcdserverpb: TxnRequest fields compare=1, success=2, failure=3;
 * Compare result=1 target=2 key=3 create_revision=5; RequestOp
 * request_range=1 request_put=2; TxnResponse header=1 succeeded=2
 * responses=3; ResponseOp response_range=1; RangeResponse kvs=2; KeyValue
 * key=1 create_revision=2 mod_revision=3 value=5). Unknown fields of an
 * answer are skipped, as protobuf requires.
 *
 * Calls block, bounded by their timeout, like etcd.h: one persistent
 * HTTP/2 connection, one stream at a time; an attempt that fails (refused,
 * timed out, GOAWAY, a gRPC status other than 0) closes the connection and
 * the call tries the next endpoint with its share of the time left (at
 * least CTL_ETCD_MIN_TRY_MS), so a transaction may reach etcd twice: the
 * caller reads back what it wrote in the failure branch (ha.c does).
 * Not thread-safe: one caller per ctl_etcdrpc_t (each thread its own).
 */
#ifndef SLUICE_CTL_HA_ETCDRPC_H
#define SLUICE_CTL_HA_ETCDRPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ha/etcd.h"

/* A compare of a key's create_revision (the only target the controller
 * uses): result is one of these. */
typedef enum ctl_etcd_cmp_result {
    CTL_ETCD_EQUAL = 0,
    CTL_ETCD_GREATER = 1,
    CTL_ETCD_LESS = 2,
    CTL_ETCD_NOT_EQUAL = 3
} ctl_etcd_cmp_result_t;

typedef struct ctl_etcd_cmp {
    const char *key;        /* borrowed, NUL-terminated */
    ctl_etcd_cmp_result_t result;
    int64_t create_revision;
} ctl_etcd_cmp_t;

typedef enum ctl_etcd_op_type { CTL_ETCD_PUT = 0, CTL_ETCD_RANGE = 1 } ctl_etcd_op_type_t;

/* A put of val (vlen bytes, binary) at key, or a range read of key (and,
 * with range_end, of every key in [key, range_end)). */
typedef struct ctl_etcd_op {
    ctl_etcd_op_type_t type;
    const char *key;        /* borrowed, NUL-terminated */
    const char *range_end;  /* RANGE only; NULL: key alone */
    const void *val;        /* PUT only; borrowed */
    size_t vlen;
} ctl_etcd_op_t;

/* One key that a RANGE op of the branch that ran found. */
typedef struct ctl_etcd_kv {
    size_t op;              /* the index of its RANGE op in that branch */
    char *key;              /* owned by the result, NUL-terminated */
    int64_t create_revision, mod_revision;
    void *val;              /* owned by the result */
    size_t vlen;
} ctl_etcd_kv_t;

/* etcd's default --max-txn-ops is 128: compares and each branch's ops. */
#define CTL_ETCD_MAX_OPS 128

typedef struct ctl_etcd_txn_result {
    bool succeeded;         /* the compares held: the success ops ran */
    int64_t revision;       /* the header's revision after the txn */
    size_t nkvs;            /* the keys the RANGE ops of the branch that ran found */
    ctl_etcd_kv_t *kvs;     /* owned, in the order of their ops, each op's in key order */
} ctl_etcd_txn_result_t;

typedef struct ctl_etcdrpc {
    char host[CTL_ETCD_MAX_ENDPOINTS][256];
    int port[CTL_ETCD_MAX_ENDPOINTS];
    size_t n, cur;
    int fd;                 /* -1: not connected */
    void *session;          /* nghttp2_session *, NULL when not connected */
    char err[300];          /* why the last call failed */
} ctl_etcdrpc_t;

/* Parses endpoints as ctl_etcd_init does (the same "http://H:P,..." list:
 * etcd serves gRPC and the gateway on one port). 0, or -1 with err. */
int ctl_etcdrpc_init(ctl_etcdrpc_t *r, const char *endpoints, char *err, size_t errlen);
/* Closes the connection; accepts a zeroed r. */
void ctl_etcdrpc_fini(ctl_etcdrpc_t *r);
/* One KV.Txn: the compares (at most CTL_ETCD_MAX_OPS, all must hold), the
 * success ops and the failure ops (each at most CTL_ETCD_MAX_OPS). 0 with
 * *out filled (free with ctl_etcd_txn_result_free, also after -1), or -1
 * with r->err (nothing could be sent, no answer in timeout_ms, a bad
 * answer, a gRPC error, whose status and message r->err quotes). */
int ctl_etcdrpc_txn(ctl_etcdrpc_t *r, const ctl_etcd_cmp_t *cmp, size_t ncmp,
                    const ctl_etcd_op_t *success, size_t nsuccess, const ctl_etcd_op_t *failure,
                    size_t nfailure, ctl_etcd_txn_result_t *out, int timeout_ms);
/* Frees the values a result holds; accepts a zeroed one. */
void ctl_etcd_txn_result_free(ctl_etcd_txn_result_t *res);

#endif
