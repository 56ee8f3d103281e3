/*
 * etcd.h - a small client of etcd's v3 API through its JSON gateway
 * (HTTP/1.1 POST of a JSON object to /v3/kv/put, /v3/kv/range,
 * /v3/kv/txn, /v3/kv/deleterange, /v3/kv/compaction, /v3/lease/grant,
 * /v3/lease/keepalive; keys and values in base64, 64-bit numbers as
 * decimal strings).
 *
 * Calls block, each bounded by its own timeout (poll on a non-blocking
 * socket): the controller's calls are one per group commit and one
 * keepalive a second, about a millisecond each on a local member. One
 * persistent connection; an attempt that fails closes it and the call
 * tries the next endpoint of the list within its deadline, so a dead or
 * cut-off member costs a share of one call's time.
 */
#ifndef SLUICE_CTL_HA_ETCD_H
#define SLUICE_CTL_HA_ETCD_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define CTL_ETCD_MAX_ENDPOINTS 8

typedef struct ctl_etcd {
    char host[CTL_ETCD_MAX_ENDPOINTS][256];
    int port[CTL_ETCD_MAX_ENDPOINTS];
    size_t n, cur;
    int fd;                /* -1: not connected */
    char *buf;             /* the answer being read */
    size_t len, cap;
    char err[300];         /* why the last call failed */
} ctl_etcd_t;

/* Parses endpoints ("http://HOST:PORT,..." or "HOST:PORT,...", at most
 * CTL_ETCD_MAX_ENDPOINTS) into e. 0, or -1 with err naming the bad one
 * (https is refused: put a local member or a TLS proxy on loopback). */
int ctl_etcd_init(ctl_etcd_t *e, const char *endpoints, char *err, size_t errlen);
/* Closes the connection and frees; accepts a zeroed e. */
void ctl_etcd_fini(ctl_etcd_t *e);
/* The least time one member is given within a call before the next is
 * tried (a healthy member answers in about a millisecond). */
#define CTL_ETCD_MIN_TRY_MS 200

/* POSTs req (not stolen) to path and parses the answer into *resp (a new
 * reference the caller drops). 0 for a 200 answer; -1 with e->err for
 * anything else (a refused connection, a timeout, an error answer, which
 * e->err quotes). The whole call takes at most timeout_ms; a member that
 * does not answer is given its share of the time left (at least
 * CTL_ETCD_MIN_TRY_MS) and the next is tried, so a request may reach etcd
 * twice: a caller whose write is not idempotent checks, when the retry is
 * refused, whether the first one landed. */
int ctl_etcd_post(ctl_etcd_t *e, const char *path, json_t *req, json_t **resp, int timeout_ms);

/* The end of the try-th attempt of a call (0 first) that must end by
 * deadline_ms, on the monotonic clock in ms: the members not yet tried
 * each get a share of the time left, at least CTL_ETCD_MIN_TRY_MS; the
 * last one gets it all. For clients of etcd's other port (etcdg.h). */
int64_t ctl_etcd_try_until(const ctl_etcd_t *e, size_t tries, int64_t now_ms,
                           int64_t deadline_ms);
/* Closes the connection (an answer still on its way is not read). */
void ctl_etcd_close(ctl_etcd_t *e);
/* Connects e->fd (non-blocking, TCP_NODELAY) to the current member within
 * timeout_ms, for a client of another of its ports' protocols (etcdg.h).
 * 0, or -1 with e->err. */
int ctl_etcd_connect(ctl_etcd_t *e, int timeout_ms);
/* Base64 of n bytes as a new string (sl_free). Can't fail. */
char *ctl_etcd_b64(const void *p, size_t n);
/* The bytes of base64 text s as a new buffer (sl_free) of *n bytes, or
 * NULL when s is not base64. */
void *ctl_etcd_unb64(const char *s, size_t *n);
/* A JSON string value of base64(text). New reference. */
json_t *ctl_etcd_key(const char *text);
/* The integer of a field that the gateway writes as a decimal string (or
 * a number); dflt when absent. */
int64_t ctl_etcd_int(const json_t *obj, const char *field, int64_t dflt);

#endif
