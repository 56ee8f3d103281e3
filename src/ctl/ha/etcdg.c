/*
 * etcdg.c - KV.Txn over etcd's gRPC port (etcdg.h): an nghttp2 client
 * session on one non-blocking socket, driven by hand (we write what it
 * has to send, and hand it what we read), one stream at a time.
 *
 * A gRPC call is a POST to /etcdserverpb.KV/Txn with content-type
 * application/grpc; its body and its answer's are one message each,
 * framed as a byte (0: not compressed), a 4-byte big-endian length, then
 * the protobuf. The status comes in the trailers (grpc-status, 0 for OK;
 * grpc-message), or in the headers alone when the call failed at once.
 */
#include <errno.h>
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ha/etcdg.h"
#include "ha/etcd.h"

#include "base/loop.h"

#include "sluice/alloc.h"

#define TXN_PATH "/etcdserverpb.KV/Txn"

struct ctl_etcdg {
    ctl_etcd_t e;            /* the endpoints, the socket, err */
    nghttp2_session *h2;     /* NULL: not connected */
    int32_t stream;          /* the call in flight (0: none) */
    bool closed;             /* its stream ended */
    uint32_t h2_error;       /* the stream's RST_STREAM code */
    int http_status, grpc_status;
    char grpc_message[200];
    unsigned char head[5];   /* the request's gRPC frame head */
    size_t head_off;         /* its bytes already given to nghttp2 */
    const unsigned char *out; /* the message's bytes not yet given to nghttp2 */
    size_t out_len;
    ctl_buf_t body;          /* the answer's bytes so far */
    ctl_buf_t w;             /* the frames nghttp2 made, written in one send */
};

static int64_t mono_ms(void) {
    return ctl_mono_us() / 1000;
}

static void seterr(ctl_etcdg_t *g, const char *fmt, const char *detail) {
    int n = snprintf(g->e.err, sizeof g->e.err, "etcd %s:%d (gRPC): ", g->e.host[g->e.cur],
                     g->e.port[g->e.cur]);
    if (n >= 0 && (size_t)n < sizeof g->e.err)
        snprintf(g->e.err + n, sizeof g->e.err - (size_t)n, fmt, detail);
}

/* ---- nghttp2's callbacks ---- */

/* nghttp2's frames are gathered and written together after
 * nghttp2_session_send (write_out): a request's HEADERS and DATA, and
 * the acknowledgements, leave in one segment and one system call. */
static ssize_t send_cb(nghttp2_session *s, const uint8_t *data, size_t len, int flags, void *ud) {
    (void)s;
    (void)flags;
    ctl_etcdg_t *g = ud;
    ctl_buf_add(&g->w, data, len);
    return (ssize_t)len;
}

/* Writes what send_cb gathered, within the deadline. 0 or -1 with err. */
static int write_out(ctl_etcdg_t *g, int64_t deadline_ms) {
    size_t off = 0;
    while (off < g->w.len) {
        ssize_t w = send(g->e.fd, g->w.p + off, g->w.len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) {
            off += (size_t)w;
            continue;
        }
        if (w < 0 && errno != EAGAIN && errno != EINTR) {
            seterr(g, "send: %s", strerror(errno));
            return -1;
        }
        int64_t left = deadline_ms - mono_ms();
        struct pollfd pfd = {.fd = g->e.fd, .events = POLLOUT};
        if (left <= 0 || (poll(&pfd, 1, (int)left) < 0 && errno != EINTR)) {
            seterr(g, "%s", "send: no room within the timeout");
            return -1;
        }
    }
    g->w.len = 0;
    return 0;
}

/* The request's body: the frame head, then the message, without a copy
 * of the message beside nghttp2's own. */
static ssize_t body_cb(nghttp2_session *s, int32_t stream, uint8_t *buf, size_t len,
                       uint32_t *flags, nghttp2_data_source *src, void *ud) {
    (void)s;
    (void)stream;
    (void)src;
    ctl_etcdg_t *g = ud;
    size_t h = sizeof g->head - g->head_off < len ? sizeof g->head - g->head_off : len;
    memcpy(buf, g->head + g->head_off, h);
    g->head_off += h;
    size_t n = g->out_len < len - h ? g->out_len : len - h;
    memcpy(buf + h, g->out, n);
    g->out += n;
    g->out_len -= n;
    if (g->head_off == sizeof g->head && g->out_len == 0)
        *flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)(h + n);
}

static int header_cb(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *ud) {
    (void)s;
    (void)flags;
    ctl_etcdg_t *g = ud;
    if (f->hd.stream_id != g->stream)
        return 0;
    if (namelen == 7 && memcmp(name, ":status", 7) == 0)
        g->http_status = atoi((const char *)value);
    else if (namelen == 11 && memcmp(name, "grpc-status", 11) == 0)
        g->grpc_status = atoi((const char *)value);
    else if (namelen == 12 && memcmp(name, "grpc-message", 12) == 0)
        snprintf(g->grpc_message, sizeof g->grpc_message, "%.*s", (int)valuelen,
                 (const char *)value);
    return 0;
}

static int data_cb(nghttp2_session *s, uint8_t flags, int32_t stream, const uint8_t *data,
                   size_t len, void *ud) {
    (void)s;
    (void)flags;
    ctl_etcdg_t *g = ud;
    if (stream != g->stream)
        return 0;
    ctl_buf_add(&g->body, data, len);
    return 0;
}

static int close_cb(nghttp2_session *s, int32_t stream, uint32_t code, void *ud) {
    (void)s;
    ctl_etcdg_t *g = ud;
    if (stream == g->stream) {
        g->closed = true;
        g->h2_error = code;
    }
    return 0;
}

/* ---- the connection ---- */

void ctl_etcdg_close(ctl_etcdg_t *g) {
    if (g->h2)
        nghttp2_session_del(g->h2);
    g->h2 = NULL;
    g->stream = 0;
    g->w.len = 0;
    ctl_etcd_close(&g->e);
}

/* A session on a new connection to the current member, its SETTINGS
 * queued (sent with the first request). 0 or -1. */
static int connect_h2(ctl_etcdg_t *g, int timeout_ms) {
    if (ctl_etcd_connect(&g->e, timeout_ms) < 0)
        return -1;
    nghttp2_session_callbacks *cb;
    if (nghttp2_session_callbacks_new(&cb) != 0) {
        seterr(g, "%s", "out of memory");
        ctl_etcdg_close(g);
        return -1;
    }
    nghttp2_session_callbacks_set_send_callback(cb, send_cb);
    nghttp2_session_callbacks_set_on_header_callback(cb, header_cb);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, data_cb);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, close_cb);
    int rc = nghttp2_session_client_new(&g->h2, cb, g);
    nghttp2_session_callbacks_del(cb);
    if (rc != 0) {
        g->h2 = NULL;
        seterr(g, "%s", nghttp2_strerror(rc));
        ctl_etcdg_close(g);
        return -1;
    }
    /* No push; answers of up to 16 MiB without waiting for our window
     * updates (a snapshot-sized answer never comes: these are txns). */
    nghttp2_settings_entry iv[2] = {{NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
                                    {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 16 << 20}};
    nghttp2_submit_settings(g->h2, NGHTTP2_FLAG_NONE, iv, 2);
    nghttp2_session_set_local_window_size(g->h2, NGHTTP2_FLAG_NONE, 0, 16 << 20);
    return 0;
}

/* Runs the session until done(g) or the deadline: writes what it has,
 * reads what comes. 0, or -1 with err (the connection closed). With no
 * deadline (-1) it does not wait: it reads what the socket holds and
 * returns 1 when that was not enough. */
static int pump(ctl_etcdg_t *g, bool (*done)(const ctl_etcdg_t *), int64_t deadline_ms) {
    unsigned char buf[16384];
    bool nowait = deadline_ms < 0;
    for (;;) {
        int rc = nghttp2_session_send(g->h2);
        if (rc != 0) {
            seterr(g, "%s", nghttp2_strerror(rc));
            goto fail;
        }
        if (write_out(g, deadline_ms) < 0)
            goto fail;
        if (done(g))
            return 0;
        if (!nowait) {
            int64_t left = deadline_ms - mono_ms();
            if (left <= 0) {
                seterr(g, "%s", "no answer within the timeout");
                goto fail;
            }
            struct pollfd pfd = {.fd = g->e.fd, .events = POLLIN};
            int pr = poll(&pfd, 1, (int)left);
            if (pr < 0 && errno != EINTR) {
                seterr(g, "poll: %s", strerror(errno));
                goto fail;
            }
            if (pr <= 0 || !(pfd.revents & (POLLIN | POLLERR | POLLHUP)))
                continue;
        }
        ssize_t r = recv(g->e.fd, buf, sizeof buf, MSG_DONTWAIT);
        if (r == 0) {
            seterr(g, "%s", "closed the connection");
            goto fail;
        }
        if (r < 0) {
            if (errno == EAGAIN && nowait)
                return 1; /* a frame of its own (a PING, SETTINGS): the answer later */
            if (errno == EAGAIN || errno == EINTR)
                continue;
            seterr(g, "recv: %s", strerror(errno));
            goto fail;
        }
        ssize_t m = nghttp2_session_mem_recv(g->h2, buf, (size_t)r);
        if (m < 0) {
            seterr(g, "%s", nghttp2_strerror((int)m));
            goto fail;
        }
    }
fail:
    ctl_etcdg_close(g);
    return -1;
}

static bool request_written(const ctl_etcdg_t *g) {
    return g->head_off == sizeof g->head && g->out_len == 0 &&
           !nghttp2_session_want_write(g->h2);
}

static bool stream_closed(const ctl_etcdg_t *g) {
    return g->closed;
}

/* ---- the interface ---- */

int ctl_etcdg_open(ctl_etcdg_t **out, const char *endpoints, char *err, size_t errlen) {
    *out = NULL;
    ctl_etcdg_t *g = sl_xcalloc(1, sizeof *g);
    if (ctl_etcd_init(&g->e, endpoints, err, errlen) < 0) {
        sl_free(g);
        return -1;
    }
    *out = g;
    return 0;
}

void ctl_etcdg_free(ctl_etcdg_t *g) {
    if (g == NULL)
        return;
    ctl_etcdg_close(g);
    ctl_etcd_fini(&g->e);
    ctl_buf_fini(&g->body);
    ctl_buf_fini(&g->w);
    sl_free(g);
}

int ctl_etcdg_fd(const ctl_etcdg_t *g) {
    return g->h2 ? g->e.fd : -1;
}

const char *ctl_etcdg_err(const ctl_etcdg_t *g) {
    return g->e.err;
}

size_t ctl_etcdg_cur(const ctl_etcdg_t *g) {
    return g->e.cur;
}

size_t ctl_etcdg_members(const ctl_etcdg_t *g) {
    return g->e.n;
}

void ctl_etcdg_use(ctl_etcdg_t *g, size_t cur) {
    if (cur >= g->e.n || cur == g->e.cur)
        return;
    ctl_etcdg_close(g);
    g->e.cur = cur;
}

int ctl_etcdg_send(ctl_etcdg_t *g, const void *msg, size_t len, int timeout_ms) {
    int64_t deadline = mono_ms() + timeout_ms;
    if (g->h2 == NULL && connect_h2(g, timeout_ms) < 0)
        return -1;
    g->head[0] = 0; /* not compressed */
    for (int i = 0; i < 4; i++)
        g->head[1 + i] = (unsigned char)(len >> (24 - 8 * i));
    char authority[300];
    snprintf(authority, sizeof authority, "%s:%d", g->e.host[g->e.cur], g->e.port[g->e.cur]);
#define NV(n, v) {(uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, strlen(v), NGHTTP2_NV_FLAG_NONE}
    nghttp2_nv hdrs[] = {NV(":method", "POST"), NV(":scheme", "http"), NV(":path", TXN_PATH),
                         NV(":authority", authority), NV("content-type", "application/grpc"),
                         NV("te", "trailers")};
#undef NV
    nghttp2_data_provider body = {.read_callback = body_cb};
    g->head_off = 0;
    g->out = msg;
    g->out_len = len;
    g->closed = false;
    g->h2_error = 0;
    g->http_status = 0;
    g->grpc_status = -1;
    g->grpc_message[0] = '\0';
    g->body.len = 0;
    int32_t id = nghttp2_submit_request(g->h2, NULL, hdrs, sizeof hdrs / sizeof hdrs[0], &body, g);
    if (id < 0) {
        seterr(g, "%s", nghttp2_strerror(id));
        ctl_etcdg_close(g);
        return -1;
    }
    g->stream = id;
    int rc = pump(g, request_written, deadline);
    g->out = NULL;
    g->out_len = 0;
    return rc;
}

int ctl_etcdg_recv(ctl_etcdg_t *g, void **resp, size_t *rlen, int timeout_ms) {
    *resp = NULL;
    *rlen = 0;
    if (g->h2 == NULL || g->stream == 0) {
        seterr(g, "%s", "no call in flight");
        return -1;
    }
    int pr = pump(g, stream_closed, timeout_ms > 0 ? mono_ms() + timeout_ms : -1);
    if (pr != 0)
        return pr;
    g->stream = 0;
    if (g->grpc_status != 0) {
        char what[260];
        if (g->grpc_status > 0)
            snprintf(what, sizeof what, "grpc-status %d: %s", g->grpc_status, g->grpc_message);
        else
            snprintf(what, sizeof what, "HTTP %d, stream error %u, no grpc-status",
                     g->http_status, g->h2_error);
        seterr(g, "%s", what);
        return g->grpc_status > 0 ? -2 : -1;
    }
    const unsigned char *b = (const unsigned char *)g->body.p;
    if (g->body.len < 5 || b[0] != 0) {
        seterr(g, "%s", g->body.len < 5 ? "an answer without its message"
                                        : "a compressed answer, which was not asked for");
        return -1;
    }
    size_t n = (size_t)b[1] << 24 | (size_t)b[2] << 16 | (size_t)b[3] << 8 | b[4];
    if (n != g->body.len - 5) {
        seterr(g, "%s", "an answer whose length is not its frame's");
        return -1;
    }
    *resp = sl_xmalloc(n ? n : 1);
    memcpy(*resp, b + 5, n);
    *rlen = n;
    return 0;
}

static bool never(const ctl_etcdg_t *g) {
    (void)g;
    return false;
}

int ctl_etcdg_drain(ctl_etcdg_t *g) {
    if (g->h2 == NULL)
        return -1;
    return pump(g, never, -1) == 1 ? 0 : -1;
}

int ctl_etcdg_call(ctl_etcdg_t *g, const void *msg, size_t len, void **resp, size_t *rlen,
                   int timeout_ms) {
    int64_t deadline = mono_ms() + timeout_ms;
    int rc = -1;
    for (size_t tries = 0; tries < g->e.n && mono_ms() < deadline; tries++) {
        /* Each member a share of the time left, as ctl_etcd_post. */
        int64_t now = mono_ms(), until = ctl_etcd_try_until(&g->e, tries, now, deadline);
        int ms = (int)(until - now);
        if (ctl_etcdg_send(g, msg, len, ms) == 0) {
            rc = ctl_etcdg_recv(g, resp, rlen, (int)(until - mono_ms() > 1 ? until - mono_ms() : 1));
            if (rc != -1)
                break;
        }
        ctl_etcdg_close(g);
        g->e.cur = (g->e.cur + 1) % g->e.n;
    }
    return rc == 0 ? 0 : -1;
}

/* ---- a TxnResponse ---- */

/* A KeyValue message into kv. false: not protobuf. */
static bool read_kv(ctl_etcdg_kv_t *kv, const ctl_pbf_t *m) {
    ctl_pbr_t r;
    ctl_pbf_t f;
    *kv = (ctl_etcdg_kv_t){.key = (const unsigned char *)"", .value = (const unsigned char *)""};
    ctl_pbr_init(&r, m->data, m->len);
    while (ctl_pbr_next(&r, &f)) {
        if (f.num == CTL_PB_KV_KEY && f.data) {
            kv->key = f.data;
            kv->klen = f.len;
        } else if (f.num == CTL_PB_KV_VALUE && f.data) {
            kv->value = f.data;
            kv->vlen = f.len;
        } else if (f.num == CTL_PB_KV_CREATE_REVISION) {
            kv->create_revision = f.v;
        }
    }
    return !r.bad;
}

/* A ResponseOp message: its RangeResponse (if any) into rg. */
static bool read_op(ctl_etcdg_range_t *rg, const ctl_pbf_t *m) {
    ctl_pbr_t op, rr;
    ctl_pbf_t f, g;
    size_t cap = 0;
    ctl_pbr_init(&op, m->data, m->len);
    while (ctl_pbr_next(&op, &f)) {
        if (f.num != CTL_PB_OPR_RANGE || f.data == NULL)
            continue;
        ctl_pbr_init(&rr, f.data, f.len);
        while (ctl_pbr_next(&rr, &g)) {
            if (g.num == CTL_PB_RANGER_MORE) {
                rg->more = g.v != 0;
            } else if (g.num == CTL_PB_RANGER_COUNT) {
                rg->count = (int64_t)g.v;
            } else if (g.num == CTL_PB_RANGER_KVS && g.data) {
                if (rg->nkvs == cap) {
                    cap = cap ? 2 * cap : 16;
                    rg->kvs = sl_xrealloc(rg->kvs, cap * sizeof *rg->kvs);
                }
                if (!read_kv(&rg->kvs[rg->nkvs++], &g))
                    return false;
            }
        }
        if (rr.bad)
            return false;
    }
    return !op.bad;
}

int ctl_etcdg_txnr_read(const void *resp, size_t len, ctl_etcdg_txnr_t *t) {
    *t = (ctl_etcdg_txnr_t){0};
    ctl_pbr_t r;
    ctl_pbf_t f;
    size_t cap = 0;
    ctl_pbr_init(&r, resp, len);
    while (ctl_pbr_next(&r, &f)) {
        if (f.num == CTL_PB_TXNR_SUCCEEDED) {
            t->succeeded = f.v != 0;
        } else if (f.num == CTL_PB_TXNR_RESPONSES && f.data) {
            if (t->nranges == cap) {
                cap = cap ? 2 * cap : 4;
                t->ranges = sl_xrealloc(t->ranges, cap * sizeof *t->ranges);
            }
            ctl_etcdg_range_t *rg = &t->ranges[t->nranges++];
            *rg = (ctl_etcdg_range_t){0};
            if (!read_op(rg, &f))
                goto bad;
        }
    }
    if (!r.bad)
        return 0;
bad:
    ctl_etcdg_txnr_free(t);
    return -1;
}

void ctl_etcdg_txnr_free(ctl_etcdg_txnr_t *t) {
    for (size_t i = 0; i < t->nranges; i++)
        sl_free(t->ranges[i].kvs);
    sl_free(t->ranges);
    *t = (ctl_etcdg_txnr_t){0};
}
