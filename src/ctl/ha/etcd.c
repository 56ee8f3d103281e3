/*
 * etcd.c - the etcd v3 JSON gateway client (etcd.h): HTTP/1.1 over one
 * persistent TCP connection, requests with Content-Length, answers with
 * Content-Length or chunked (the gateway streams keepalive answers in
 * chunks), every wait bounded by the call's deadline.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/evp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "ha/etcd.h"

#include "sluice/alloc.h"

static int64_t mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int ctl_etcd_init(ctl_etcd_t *e, const char *endpoints, char *err, size_t errlen) {
    *e = (ctl_etcd_t){.fd = -1};
    const char *p = endpoints;
    while (p && *p) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        char one[300];
        if (n == 0 || n >= sizeof one) {
            snprintf(err, errlen, "etcd endpoints: \"%.*s\" is not HOST:PORT", (int)n, p);
            return -1;
        }
        memcpy(one, p, n);
        one[n] = '\0';
        const char *hp = one;
        if (strncmp(hp, "https://", 8) == 0) {
            snprintf(err, errlen, "etcd endpoints: %s: https is not supported; reach etcd over "
                     "http on a private network or loopback (docs/ha.md)", one);
            return -1;
        }
        if (strncmp(hp, "http://", 7) == 0)
            hp += 7;
        const char *colon = strrchr(hp, ':');
        char *tail = NULL;
        long port = colon ? strtol(colon + 1, &tail, 10) : 0;
        if (colon == NULL || colon == hp || (size_t)(colon - hp) >= sizeof e->host[0] ||
            port < 1 || port > 65535 || (tail && *tail != '\0' && *tail != '/')) {
            snprintf(err, errlen, "etcd endpoints: \"%s\" is not http://HOST:PORT", one);
            return -1;
        }
        if (e->n == CTL_ETCD_MAX_ENDPOINTS) {
            snprintf(err, errlen, "etcd endpoints: at most %d", CTL_ETCD_MAX_ENDPOINTS);
            return -1;
        }
        memcpy(e->host[e->n], hp, (size_t)(colon - hp));
        e->host[e->n][colon - hp] = '\0';
        e->port[e->n++] = (int)port;
        p = end ? end + 1 : NULL;
    }
    if (e->n == 0) {
        snprintf(err, errlen, "etcd endpoints: none given");
        return -1;
    }
    return 0;
}

static void disconnect(ctl_etcd_t *e) {
    if (e->fd >= 0)
        close(e->fd);
    e->fd = -1;
}

void ctl_etcd_fini(ctl_etcd_t *e) {
    disconnect(e);
    sl_free(e->buf);
    e->buf = NULL;
}

/* Waits for fd to be ready for events until the deadline. 0 or -1. */
static int wait_fd(ctl_etcd_t *e, short events, int64_t deadline_ms) {
    for (;;) {
        int64_t left = deadline_ms - mono_ms();
        if (left <= 0) {
            snprintf(e->err, sizeof e->err, "etcd %s:%d: no answer within the timeout",
                     e->host[e->cur], e->port[e->cur]);
            return -1;
        }
        struct pollfd pfd = {.fd = e->fd, .events = events};
        int r = poll(&pfd, 1, (int)left);
        if (r > 0)
            return 0;
        if (r < 0 && errno != EINTR) {
            snprintf(e->err, sizeof e->err, "etcd: poll: %s", strerror(errno));
            return -1;
        }
    }
}

static int connect_cur(ctl_etcd_t *e, int64_t deadline_ms) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    char port[16];
    snprintf(port, sizeof port, "%d", e->port[e->cur]);
    int g = getaddrinfo(e->host[e->cur], port, &hints, &res);
    if (g != 0) {
        snprintf(e->err, sizeof e->err, "etcd %s: %s", e->host[e->cur], gai_strerror(g));
        return -1;
    }
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        freeaddrinfo(res);
        snprintf(e->err, sizeof e->err, "etcd: socket: %s", strerror(errno));
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    int rc = connect(fd, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    e->fd = fd;
    if (rc < 0 && errno != EINPROGRESS) {
        snprintf(e->err, sizeof e->err, "etcd %s:%d: %s", e->host[e->cur], e->port[e->cur],
                 strerror(errno));
        disconnect(e);
        return -1;
    }
    if (rc < 0) {
        int soerr = 0;
        socklen_t sl = sizeof soerr;
        if (wait_fd(e, POLLOUT, deadline_ms) < 0 ||
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0 || soerr != 0) {
            if (soerr != 0)
                snprintf(e->err, sizeof e->err, "etcd %s:%d: %s", e->host[e->cur],
                         e->port[e->cur], strerror(soerr));
            disconnect(e);
            return -1;
        }
    }
    return 0;
}

static int send_all(ctl_etcd_t *e, const char *p, size_t n, int64_t deadline_ms) {
    while (n > 0) {
        ssize_t w = send(e->fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
            if (wait_fd(e, POLLOUT, deadline_ms) < 0)
                return -1;
            continue;
        }
        if (w <= 0) {
            snprintf(e->err, sizeof e->err, "etcd %s:%d: send: %s", e->host[e->cur],
                     e->port[e->cur], strerror(errno));
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Reads more of the answer into e->buf. 0, or -1 (closed, error, time). */
static int read_more(ctl_etcd_t *e, int64_t deadline_ms) {
    if (e->cap - e->len < 65536) {
        e->cap = e->cap ? e->cap * 2 : 262144;
        e->buf = sl_xrealloc(e->buf, e->cap);
    }
    for (;;) {
        ssize_t r = recv(e->fd, e->buf + e->len, e->cap - e->len - 1, 0);
        if (r > 0) {
            e->len += (size_t)r;
            e->buf[e->len] = '\0';
            return 0;
        }
        if (r == 0) {
            snprintf(e->err, sizeof e->err, "etcd %s:%d closed the connection", e->host[e->cur],
                     e->port[e->cur]);
            return -1;
        }
        if (errno != EAGAIN && errno != EINTR) {
            snprintf(e->err, sizeof e->err, "etcd %s:%d: recv: %s", e->host[e->cur],
                     e->port[e->cur], strerror(errno));
            return -1;
        }
        if (wait_fd(e, POLLIN, deadline_ms) < 0)
            return -1;
    }
}

/* Reads one answer: *status and the body (decoded from chunks) into a new
 * buffer *body of *blen. 0 or -1. */
static int read_answer(ctl_etcd_t *e, int *status, char **body, size_t *blen,
                       int64_t deadline_ms) {
    e->len = 0;
    if (e->buf)
        e->buf[0] = '\0';
    char *hend;
    for (;;) {
        if (e->buf && (hend = strstr(e->buf, "\r\n\r\n")) != NULL)
            break;
        if (read_more(e, deadline_ms) < 0)
            return -1;
    }
    size_t hlen = (size_t)(hend - e->buf) + 4;
    if (sscanf(e->buf, "HTTP/1.%*d %d", status) != 1) {
        snprintf(e->err, sizeof e->err, "etcd: not an HTTP answer");
        return -1;
    }
    long clen = -1;
    bool chunked = false;
    for (char *l = strstr(e->buf, "\r\n"); l && l + 2 < hend; l = strstr(l + 2, "\r\n")) {
        if (strncasecmp(l + 2, "Content-Length:", 15) == 0)
            clen = strtol(l + 17, NULL, 10);
        else if (strncasecmp(l + 2, "Transfer-Encoding:", 18) == 0 && strstr(l + 2, "chunked") &&
                 strstr(l + 2, "chunked") < strstr(l + 2, "\r\n"))
            chunked = true;
    }
    if (!chunked) {
        if (clen < 0) {
            snprintf(e->err, sizeof e->err, "etcd: an answer without Content-Length");
            return -1;
        }
        while (e->len < hlen + (size_t)clen)
            if (read_more(e, deadline_ms) < 0)
                return -1;
        *body = sl_xmalloc((size_t)clen + 1);
        memcpy(*body, e->buf + hlen, (size_t)clen);
        (*body)[clen] = '\0';
        *blen = (size_t)clen;
        return 0;
    }
    /* Chunks: SIZE\r\nDATA\r\n ... 0\r\n\r\n */
    size_t pos = hlen, out = 0, ocap = 4096;
    char *ob = sl_xmalloc(ocap);
    for (;;) {
        char *eol;
        while ((eol = memmem(e->buf + pos, e->len - pos, "\r\n", 2)) == NULL)
            if (read_more(e, deadline_ms) < 0)
                goto fail;
        size_t sz = strtoul(e->buf + pos, NULL, 16);
        size_t data = (size_t)(eol - e->buf) + 2;
        while (e->len < data + sz + 2)
            if (read_more(e, deadline_ms) < 0)
                goto fail;
        if (sz == 0)
            break;
        if (out + sz + 1 > ocap) {
            while (out + sz + 1 > ocap)
                ocap *= 2;
            ob = sl_xrealloc(ob, ocap);
        }
        memcpy(ob + out, e->buf + data, sz);
        out += sz;
        pos = data + sz + 2;
    }
    ob[out] = '\0';
    *body = ob;
    *blen = out;
    return 0;
fail:
    sl_free(ob);
    return -1;
}

/* Sends one request on the current member's connection (made first when
 * there is none). 0, or -1 (the connection closed). */
static int send_request(ctl_etcd_t *e, const char *path, const char *req, size_t rlen,
                        int64_t deadline_ms) {
    if (e->fd < 0 && connect_cur(e, deadline_ms) < 0)
        return -1;
    /* Head and body leave in one send: one segment for a small request
     * (TCP_NODELAY is on), one system call instead of two. */
    char head[512];
    int hn = snprintf(head, sizeof head,
                      "POST %s HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n"
                      "Content-Length: %zu\r\n\r\n",
                      path, e->host[e->cur], e->port[e->cur], rlen);
    char *wire = sl_xmalloc((size_t)hn + rlen);
    memcpy(wire, head, (size_t)hn);
    memcpy(wire + hn, req, rlen);
    int sent = send_all(e, wire, (size_t)hn + rlen, deadline_ms);
    sl_free(wire);
    if (sent < 0)
        disconnect(e);
    return sent;
}

/* Reads the answer to the request sent on the connection: 0 with *resp
 * (a 200 answer), -2 (an error answer, quoted in e->err) or -1 (none:
 * the connection closed). */
static int recv_answer(ctl_etcd_t *e, const char *path, json_t **resp, int64_t deadline_ms) {
    int status = 0;
    char *body = NULL;
    size_t blen = 0;
    /* The answer cannot be there yet: wait before the first read rather
     * than spend a recv on EAGAIN. */
    if (wait_fd(e, POLLIN, deadline_ms) < 0 ||
        read_answer(e, &status, &body, &blen, deadline_ms) < 0) {
        disconnect(e);
        return -1;
    }
    json_error_t jerr;
    json_t *j = json_loadb(body, blen, 0, &jerr);
    int rc = 0;
    if (status != 200 || j == NULL) {
        const char *msg = j ? json_string_value(json_object_get(j, "error")) : NULL;
        if (msg == NULL)
            msg = j ? json_string_value(json_object_get(j, "message")) : NULL;
        /* The message is cut to what err holds: its length is checked, not
         * guessed (a host name and path of any length come first). */
        int n = snprintf(e->err, sizeof e->err, "etcd %s:%d %s: HTTP %d: ", e->host[e->cur],
                         e->port[e->cur], path, status);
        if (n >= 0 && (size_t)n < sizeof e->err)
            snprintf(e->err + n, sizeof e->err - (size_t)n, "%.200s", msg ? msg : body);
        json_decref(j);
        rc = -2; /* an answer: the member works, the request does not */
    } else {
        *resp = j;
    }
    sl_free(body);
    return rc;
}

static int post_once(ctl_etcd_t *e, const char *path, const char *req, size_t rlen, json_t **resp,
                     int64_t deadline_ms) {
    if (send_request(e, path, req, rlen, deadline_ms) < 0)
        return -1;
    return recv_answer(e, path, resp, deadline_ms);
}

/* A member that does not answer (cut off, stopped) costs its share of
 * what is left, not the whole call: the others still get a turn within
 * the caller's deadline. */
int64_t ctl_etcd_try_until(const ctl_etcd_t *e, size_t tries, int64_t now_ms,
                           int64_t deadline_ms) {
    size_t others = tries + 1 < e->n ? e->n - 1 - tries : 0;
    int64_t left = deadline_ms - now_ms;
    if (others > 0 && left / (int64_t)(others + 1) >= CTL_ETCD_MIN_TRY_MS)
        return now_ms + left / (int64_t)(others + 1);
    if (others > 0 && left > CTL_ETCD_MIN_TRY_MS)
        return now_ms + CTL_ETCD_MIN_TRY_MS;
    return deadline_ms;
}

static int post_text(ctl_etcd_t *e, const char *path, const char *txt, size_t len,
                     json_t **resp, int timeout_ms) {
    *resp = NULL;
    int64_t deadline = mono_ms() + timeout_ms;
    int rc = -1;
    for (size_t tries = 0; tries < e->n && mono_ms() < deadline; tries++) {
        rc = post_once(e, path, txt, len, resp, ctl_etcd_try_until(e, tries, mono_ms(), deadline));
        if (rc != -1)
            break;
        /* The member is gone or slow: the next one, on a new connection. */
        e->cur = (e->cur + 1) % e->n;
    }
    return rc == 0 ? 0 : -1;
}

int ctl_etcd_post(ctl_etcd_t *e, const char *path, json_t *req, json_t **resp, int timeout_ms) {
    *resp = NULL;
    char *txt = json_dumps(req, JSON_COMPACT);
    if (txt == NULL) {
        snprintf(e->err, sizeof e->err, "etcd: cannot encode the request");
        return -1;
    }
    int rc = post_text(e, path, txt, strlen(txt), resp, timeout_ms);
    free(txt);
    return rc;
}

void ctl_etcd_close(ctl_etcd_t *e) {
    disconnect(e);
}

int ctl_etcd_connect(ctl_etcd_t *e, int timeout_ms) {
    disconnect(e);
    return connect_cur(e, mono_ms() + timeout_ms);
}

char *ctl_etcd_b64(const void *p, size_t n) {
    char *out = sl_xmalloc(4 * ((n + 2) / 3) + 1);
    EVP_EncodeBlock((unsigned char *)out, p, (int)n);
    return out;
}

void *ctl_etcd_unb64(const char *s, size_t *n) {
    size_t len = strlen(s);
    if (len % 4 != 0)
        return NULL;
    unsigned char *out = sl_xmalloc(len / 4 * 3 + 1);
    int r = len ? EVP_DecodeBlock(out, (const unsigned char *)s, (int)len) : 0;
    if (r < 0) {
        sl_free(out);
        return NULL;
    }
    size_t pad = (len && s[len - 1] == '=') + (len > 1 && s[len - 2] == '=');
    *n = (size_t)r - pad;
    return out;
}

json_t *ctl_etcd_key(const char *text) {
    char *b = ctl_etcd_b64(text, strlen(text));
    json_t *j = json_string(b);
    sl_free(b);
    return j;
}

int64_t ctl_etcd_int(const json_t *obj, const char *field, int64_t dflt) {
    json_t *v = json_object_get(obj, field);
    if (json_is_integer(v))
        return (int64_t)json_integer_value(v);
    if (json_is_string(v))
        return strtoll(json_string_value(v), NULL, 10);
    return dflt;
}
