/*
 * http.c - the CLI's HTTP/1.1 client: a TCP socket (with OpenSSL for
 * https:// URLs), no HTTP library.
 *
 * Why not libcurl: loading it (and the ~35 shared libraries it pulls in:
 * TLS, HTTP/2, IDN, LDAP, ...) cost more than the whole `sluice queue` of
 * 10,000 jobs should. sluiced speaks plain HTTP/1.1 on a trusted network,
 * so the client needs only this:
 *
 *   - URL: http[s]://HOST[:PORT][/PREFIX], HOST a name, an IPv4 address or
 *     an [IPv6] address; getaddrinfo, every address tried in turn.
 *   - https: TLS 1.2+ over the connected socket (OpenSSL, tls.h), the
 *     server's certificate verified against --cacert / SLUICE_CACERT /
 *     the cli.json of `sluice up` (else the system's trust store) and
 *     checked to name HOST (an IP SAN for an address); the handshake
 *     shares the connect's 5 s limit. A failed check is "cannot reach"
 *     (3) with OpenSSL's reason, never a fallback to plain HTTP.
 *   - connect with a 5 s limit (non-blocking connect + poll); each request
 *     then has 120 s in all (every wait is a poll on the remaining time).
 *   - request: one write of the request line, Host, User-Agent,
 *     Authorization: Bearer, and for a body Content-Type/Content-Length.
 *   - reply: status line and headers (at most 64 KiB), 1xx replies skipped;
 *     the body by Content-Length, chunked Transfer-Encoding, or until the
 *     server closes. A body either goes into one growing buffer (pre-sized
 *     from Content-Length) or, for a 2xx reply when the caller gives a sink,
 *     straight to the sink as it arrives (`sluice queue --json` streams the
 *     server's bytes to stdout).
 *   - keep-alive: one connection serves every request of a run (`logs -f`,
 *     `cancel A B C`) unless the server says close. A request on a reused
 *     connection that fails before any byte of the reply arrives (the
 *     server closed the idle connection) is retried once on a new one.
 *
 * Why not libevent's evhttp, which sluiced links: it costs only 0.2 ms of
 * start-up, but libevent 2.1 rejects chunk extensions and cannot say why a
 * reply is malformed (measured and tried: docs/cli-http.md).
 *
 * Several servers (--server A,B,C, or SLUICE_SERVER so): each is dialled
 * in turn until one connects (a refused or timed-out connection moves on;
 * a request once sent is never sent to another, so a submission cannot be
 * made twice), and the one that answered is tried first by the run's next
 * requests. A 307 or 308 with a Location (a controller that does not lead
 * names the leader's URL for the same path) is followed with the same
 * method and body, at most MAX_REDIRECTS times, to the same scheme only
 * (hostport.h: https stays https); the leader is then tried first.
 *
 * Every failure to get a complete reply (refused, timeout, name not found,
 * a reply that is not HTTP) is CLI_EUNREACHABLE (exit code 3), so a script
 * can tell "the server said no" (1) from "no server" (3).
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "cli.h"
#include "hostport.h"
#include "tls.h"

#define CONNECT_MS 5000
#define REQUEST_MS 120000
#define MAX_HEADER (64 * 1024)
#define READ_CHUNK (256 * 1024)
#define MAX_REDIRECTS 3

/* The kept-alive connection of this run (the CLI is one short process). */
static struct {
    int fd; /* -1 (after the first use) or 0 (never opened) are both "none" */
    bool open;
    SSL *ssl; /* https: the TLS session on fd; NULL for http */
    char server[512]; /* the URL it was opened for */
} conn;

/* The server that answered last (one of a list, or a redirect's leader,
 * without the request's path), tried first by the run's next requests;
 * "" until then. */
static char preferred[600];

/* The run's TLS client context, made on the first https request. */
static SSL_CTX *tls_ctx;

typedef struct url {
    char host[256];
    char port[8];
    char authority[300]; /* for the Host header */
    const char *prefix;  /* path prefix in the server URL, "" if none */
    bool tls;            /* https:// */
} url_t;

/* The receive side of one reply. */
typedef struct reader {
    int fd;
    SSL *ssl; /* NULL: plain TCP */
    int64_t deadline_ms;
    int64_t idle_ms;  /* > 0: a stream, whose deadline each arriving byte moves on */
    char *buf;
    size_t start, end, cap;
    bool got_any; /* a byte of the reply arrived */
    const char *err; /* what went wrong, for the message */
    int err_no;
} reader_t;

/* Where body bytes go. */
typedef struct body_out {
    cli_sink_fn sink; /* NULL: into buf */
    void *arg;
    char *buf;
    size_t len, cap;
    bool sink_failed;
    int err_no;
} body_out_t;

static int64_t mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int parse_url(const char *server, url_t *u, const char **why) {
    const char *p = server;
    u->tls = strncasecmp(p, "https://", 8) == 0;
    if (!u->tls && strncasecmp(p, "http://", 7) != 0) {
        *why = strstr(p, "://") ? "only http:// and https:// URLs are supported"
                                : "not an http:// or https:// URL";
        return -1;
    }
    p += u->tls ? 8 : 7;
    size_t alen = strcspn(p, "/?#");
    if (alen == 0 || alen >= sizeof u->authority || memchr(p, '@', alen)) {
        *why = "cannot parse the host in the URL";
        return -1;
    }
    memcpy(u->authority, p, alen);
    u->authority[alen] = '\0';
    u->prefix = p + alen;
    if (strpbrk(u->prefix, "?#")) {
        *why = "the server URL may not have a query";
        return -1;
    }
    const char *hs = u->authority, *he, *colon;
    if (hs[0] == '[') {
        he = strchr(hs, ']');
        if (he == NULL) {
            *why = "unterminated [IPv6] address in the URL";
            return -1;
        }
        hs++;
        colon = he[1] == ':' ? he + 1 : NULL;
        if (he[1] != '\0' && colon == NULL) {
            *why = "cannot parse the host in the URL";
            return -1;
        }
    } else {
        colon = strrchr(hs, ':');
        he = colon ? colon : hs + strlen(hs);
    }
    if (he == hs || (size_t)(he - hs) >= sizeof u->host) {
        *why = "cannot parse the host in the URL";
        return -1;
    }
    memcpy(u->host, hs, (size_t)(he - hs));
    u->host[he - hs] = '\0';
    const char *port = colon ? colon + 1 : (u->tls ? "443" : "80");
    size_t pl = strlen(port);
    if (pl == 0 || pl > 5 || strspn(port, "0123456789") != pl || atoi(port) < 1 || atoi(port) > 65535) {
        *why = "bad port in the URL";
        return -1;
    }
    memcpy(u->port, port, pl + 1);
    return 0;
}

/* Waits until fd is ready for ev or the deadline; 1 ready, 0 timeout, -1 error. */
static int wait_fd(int fd, short ev, int64_t deadline_ms) {
    for (;;) {
        int64_t left = deadline_ms - mono_ms();
        if (left <= 0)
            return 0;
        struct pollfd pfd = {fd, ev, 0};
        int n = poll(&pfd, 1, left > 1000000 ? 1000000 : (int)left);
        if (n > 0)
            return 1;
        if (n == 0)
            continue; /* re-check the clock */
        if (errno != EINTR)
            return -1;
    }
}

/* A connected non-blocking socket, or -1 with errno-like detail in *why. */
static int dial(const url_t *u, char *why, size_t whylen) {
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    int g = getaddrinfo(u->host, u->port, &hints, &res);
    if (g != 0) {
        snprintf(why, whylen, "cannot resolve %s: %s", u->host,
                 g == EAI_SYSTEM ? strerror(errno) : gai_strerror(g));
        return -1;
    }
    int fd = -1;
    int64_t deadline = mono_ms() + CONNECT_MS;
    snprintf(why, whylen, "no address for %s", u->host);
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) {
            snprintf(why, whylen, "socket: %s", strerror(errno));
            continue;
        }
        int rc = connect(fd, ai->ai_addr, ai->ai_addrlen);
        int e = rc == 0 ? 0 : errno;
        if (e == EINPROGRESS) {
            int w = wait_fd(fd, POLLOUT, deadline);
            if (w == 0) {
                e = ETIMEDOUT;
            } else if (w < 0) {
                e = errno;
            } else {
                socklen_t el = sizeof e;
                if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) < 0)
                    e = errno;
            }
        }
        if (e == 0) {
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            break;
        }
        snprintf(why, whylen, "%s", e == ETIMEDOUT ? "connection timed out" : strerror(e));
        close(fd);
        fd = -1;
        if (mono_ms() >= deadline)
            break;
    }
    freeaddrinfo(res);
    return fd;
}

static void conn_close(void) {
    SSL_free(conn.ssl);
    conn.ssl = NULL;
    if (conn.open)
        close(conn.fd);
    conn.open = false;
    conn.fd = -1;
}

/* Waits for what an OpenSSL call that returned rc asks (SSL_get_error):
 * 1 try again, 0 timeout, -1 a real failure. */
static int tls_wait(SSL *ssl, int fd, int rc, int64_t deadline_ms) {
    int e = SSL_get_error(ssl, rc);
    if (e == SSL_ERROR_WANT_READ)
        return wait_fd(fd, POLLIN, deadline_ms);
    if (e == SSL_ERROR_WANT_WRITE)
        return wait_fd(fd, POLLOUT, deadline_ms);
    return -1;
}

/* The TLS handshake on the connected fd for u (the connect's deadline).
 * Returns the session, or NULL with the cause in why. */
static SSL *tls_handshake(cli_t *c, const url_t *u, int fd, int64_t deadline, char *why,
                          size_t whylen) {
    char e[512];
    if (tls_ctx == NULL) {
        tls_ctx = sl_tls_client_ctx(c->cacert, NULL, NULL, e, sizeof e);
        if (tls_ctx == NULL) {
            snprintf(why, whylen, "%s", e);
            return NULL;
        }
    }
    SSL *ssl = SSL_new(tls_ctx);
    if (ssl == NULL || SSL_set_fd(ssl, fd) != 1 || sl_tls_set_host(ssl, u->host) < 0) {
        snprintf(why, whylen, "cannot set up TLS: %s", sl_tls_error(e, sizeof e));
        SSL_free(ssl);
        return NULL;
    }
    for (;;) {
        int rc = SSL_connect(ssl);
        if (rc == 1)
            return ssl;
        int w = tls_wait(ssl, fd, rc, deadline);
        if (w > 0)
            continue;
        long v = SSL_get_verify_result(ssl);
        if (w == 0)
            snprintf(why, whylen, "TLS handshake timed out");
        else if (v != X509_V_OK)
            snprintf(why, whylen, "the server's certificate was refused: %s%s",
                     X509_verify_cert_error_string(v),
                     c->cacert ? "" : " (pass the CA with --cacert or SLUICE_CACERT)");
        else if (ERR_peek_error() != 0)
            snprintf(why, whylen, "TLS handshake failed: %s", sl_tls_error(e, sizeof e));
        else
            snprintf(why, whylen, "TLS handshake failed (is the server speaking TLS?)");
        ERR_clear_error();
        SSL_free(ssl);
        return NULL;
    }
}

/* Writes all of p; 0, or -1 with r->err set. */
static int send_all(reader_t *r, const char *p, size_t n) {
    while (n > 0 && r->ssl) {
        int w = SSL_write(r->ssl, p, n > INT32_MAX ? INT32_MAX : (int)n);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
            continue;
        }
        int rc = tls_wait(r->ssl, r->fd, w, r->deadline_ms);
        if (rc > 0)
            continue;
        r->err = rc == 0 ? "timed out sending the request" : "TLS write failed";
        ERR_clear_error();
        return -1;
    }
    while (n > 0) {
        ssize_t w = send(r->fd, p, n, MSG_NOSIGNAL);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int rc = wait_fd(r->fd, POLLOUT, r->deadline_ms);
            if (rc > 0)
                continue;
            r->err = rc == 0 ? "timed out sending the request" : NULL;
            r->err_no = errno;
            return -1;
        }
        r->err = NULL;
        r->err_no = errno;
        return -1;
    }
    return 0;
}

/* Reads at most max bytes into dst, waiting up to the deadline; >0 bytes
 * read, 0 at EOF, -1 error (r->err set). */
static ssize_t recv_wait(reader_t *r, char *dst, size_t max) {
    while (r->ssl) {
        int n = SSL_read(r->ssl, dst, max > INT32_MAX ? INT32_MAX : (int)max);
        if (n > 0) {
            r->got_any = true;
            if (r->idle_ms > 0)
                r->deadline_ms = mono_ms() + r->idle_ms;
            return n;
        }
        int e = SSL_get_error(r->ssl, n);
        if (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0 &&
                                           (n == 0 || errno == ECONNRESET))) {
            /* close_notify, or a close without it (sluiced closes its
             * connections so; the body's length guards against truncation). */
            ERR_clear_error();
            return 0;
        }
        int rc = tls_wait(r->ssl, r->fd, n, r->deadline_ms);
        if (rc > 0)
            continue;
        r->err = rc == 0 ? "timed out waiting for the reply" : "TLS read failed";
        ERR_clear_error();
        return -1;
    }
    for (;;) {
        ssize_t n = recv(r->fd, dst, max, 0);
        if (n > 0) {
            r->got_any = true;
            if (r->idle_ms > 0)
                r->deadline_ms = mono_ms() + r->idle_ms;
            return n;
        }
        if (n == 0)
            return 0;
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            int rc = wait_fd(r->fd, POLLIN, r->deadline_ms);
            if (rc > 0)
                continue;
            r->err = rc == 0 ? "timed out waiting for the reply" : NULL;
            r->err_no = errno;
            return -1;
        }
        r->err = NULL;
        r->err_no = errno;
        return -1;
    }
}

/* Reads more into r->buf; >0 bytes read, 0 at EOF, -1 error (r->err set). */
static ssize_t fill(reader_t *r) {
    if (r->start > 0 && r->start == r->end)
        r->start = r->end = 0;
    if (r->end == r->cap) {
        if (r->start > 0) {
            memmove(r->buf, r->buf + r->start, r->end - r->start);
            r->end -= r->start;
            r->start = 0;
        } else {
            r->cap = r->cap ? 2 * r->cap : READ_CHUNK;
            char *nb = realloc(r->buf, r->cap);
            if (nb == NULL) {
                r->err = "out of memory";
                return -1;
            }
            r->buf = nb;
        }
    }
    ssize_t n = recv_wait(r, r->buf + r->end, r->cap - r->end);
    if (n > 0)
        r->end += (size_t)n;
    return n;
}

static int deliver(body_out_t *o, const char *p, size_t n) {
    if (n == 0)
        return 0;
    if (o->sink) {
        if (o->sink(o->arg, p, n) != 0) {
            o->sink_failed = true;
            o->err_no = errno;
            return -1;
        }
        return 0;
    }
    if (o->len + n + 1 > o->cap) {
        size_t cap = o->cap ? o->cap : 4096;
        while (cap < o->len + n + 1)
            cap *= 2;
        char *nb = realloc(o->buf, cap);
        if (nb == NULL)
            return -1;
        o->buf = nb;
        o->cap = cap;
    }
    memcpy(o->buf + o->len, p, n);
    o->len += n;
    o->buf[o->len] = '\0';
    return 0;
}

/* Passes n body bytes (or, with n == SIZE_MAX, everything until EOF) from
 * the connection to o. 0 ok, -1 error. */
static int copy_body(reader_t *r, body_out_t *o, size_t n) {
    bool to_eof = n == SIZE_MAX;
    for (;;) {
        size_t have = r->end - r->start;
        size_t take = have < n ? have : n;
        if (take > 0) {
            if (deliver(o, r->buf + r->start, take) != 0) {
                r->err = "cannot keep the reply";
                return -1;
            }
            r->start += take;
            if (!to_eof)
                n -= take;
        }
        if (!to_eof && n == 0)
            return 0;
        ssize_t got;
        if (!o->sink && !to_eof && o->cap >= o->len + n + 1) {
            /* A buffer sized from Content-Length: read straight into it. */
            got = recv_wait(r, o->buf + o->len, n);
            if (got > 0) {
                o->len += (size_t)got;
                o->buf[o->len] = '\0';
                n -= (size_t)got;
                continue;
            }
        } else {
            got = fill(r);
        }
        if (got == 0) {
            if (to_eof)
                return 0;
            r->err = "the server closed the connection in the middle of the reply";
            return -1;
        }
        if (got < 0)
            return -1;
    }
}

/* One CRLF-terminated line from r into *line (NUL-terminated in place). */
static int read_line(reader_t *r, char **line, size_t max) {
    for (;;) {
        char *s = r->end > r->start ? r->buf + r->start : NULL;
        char *nl = s ? memchr(s, '\n', r->end - r->start) : NULL;
        if (nl) {
            *nl = '\0';
            if (nl > s && nl[-1] == '\r')
                nl[-1] = '\0';
            *line = s;
            r->start = (size_t)(nl + 1 - r->buf);
            return 0;
        }
        if (r->end - r->start > max) {
            r->err = "malformed reply (a line too long)";
            return -1;
        }
        ssize_t got = fill(r);
        if (got == 0) {
            r->err = r->got_any ? "the server closed the connection in the middle of the reply"
                                : "the server closed the connection without replying";
            return -1;
        }
        if (got < 0)
            return -1;
    }
}

static int chunked_body(reader_t *r, body_out_t *o) {
    for (;;) {
        char *line;
        if (read_line(r, &line, 1024) < 0)
            return -1;
        char *end;
        errno = 0;
        unsigned long long n = strtoull(line, &end, 16);
        if (end == line || errno || (*end && *end != ';' && *end != ' ' && *end != '\t')) {
            r->err = "malformed reply (bad chunk size)";
            return -1;
        }
        if (n == 0)
            break;
        if (n > SIZE_MAX / 2) {
            r->err = "malformed reply (chunk too large)";
            return -1;
        }
        if (copy_body(r, o, (size_t)n) < 0)
            return -1;
        if (read_line(r, &line, 16) < 0)
            return -1;
        if (line[0] != '\0') {
            r->err = "malformed reply (no CRLF after a chunk)";
            return -1;
        }
    }
    for (;;) { /* trailers, up to the empty line */
        char *line;
        if (read_line(r, &line, MAX_HEADER) < 0)
            return -1;
        if (line[0] == '\0')
            return 0;
    }
}

/* Parses the status line and headers. Returns 0, or -1 with r->err. */
static int read_head(reader_t *r, long *status, int *minor, long long *clen, bool *chunked,
                     bool *close_after, char *ctype, size_t ctlen, unsigned long long *next_after,
                     char *location, size_t loclen) {
    size_t used = 0;
    char *line;
    if (read_line(r, &line, MAX_HEADER) < 0)
        return -1;
    int st = 0, mi = 0;
    if (sscanf(line, "HTTP/1.%d %3d", &mi, &st) != 2 || st < 100 || st > 999) {
        r->err = "the reply is not HTTP/1.x";
        return -1;
    }
    *status = st;
    *minor = mi;
    *clen = -1;
    *chunked = false;
    *close_after = mi == 0; /* HTTP/1.0: close unless keep-alive */
    ctype[0] = '\0';
    location[0] = '\0';
    *next_after = 0;
    for (;;) {
        if (read_line(r, &line, MAX_HEADER) < 0)
            return -1;
        size_t ll = strlen(line);
        used += ll + 2;
        if (used > MAX_HEADER) {
            r->err = "malformed reply (headers too long)";
            return -1;
        }
        if (ll == 0)
            return 0;
        char *colon = strchr(line, ':');
        if (colon == NULL)
            continue;
        *colon = '\0';
        char *v = colon + 1;
        while (*v == ' ' || *v == '\t')
            v++;
        char *e = v + strlen(v);
        while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
            *--e = '\0';
        if (strcasecmp(line, "Content-Length") == 0) {
            char *end;
            errno = 0;
            long long n = strtoll(v, &end, 10);
            if (end == v || *end || errno || n < 0) {
                r->err = "malformed reply (bad Content-Length)";
                return -1;
            }
            *clen = n;
        } else if (strcasecmp(line, "Transfer-Encoding") == 0) {
            *chunked = strcasestr(v, "chunked") != NULL;
        } else if (strcasecmp(line, "Connection") == 0) {
            if (strcasestr(v, "close"))
                *close_after = true;
            else if (strcasestr(v, "keep-alive"))
                *close_after = false;
        } else if (strcasecmp(line, "Content-Type") == 0) {
            snprintf(ctype, ctlen, "%s", v);
        } else if (strcasecmp(line, "Location") == 0) {
            snprintf(location, loclen, "%s", v);
        } else if (strcasecmp(line, "Sluice-Next-After") == 0) {
            *next_after = strtoull(v, NULL, 10);
        }
    }
}

/* One attempt on the kept-alive connection, or a new one. Returns 0 with
 * *out filled, or -1 with the cause in why; *retry says the failure came
 * before any byte of the reply on a reused connection (the server had
 * closed it), so the request can be sent again. */
static int attempt(cli_t *c, const char *base, const url_t *u, const char *req, size_t reqlen,
                   const char *method, cli_reply_t *out, cli_sink_fn sink, void *arg, bool *retry,
                   bool *dial_failed, char *why, size_t whylen) {
    *retry = false;
    *dial_failed = false;
    bool reused = conn.open && strcmp(conn.server, base) == 0;
    if (!reused) {
        conn_close();
        int fd = dial(u, why, whylen);
        if (fd < 0) {
            *dial_failed = true; /* nothing was sent: another server may be tried */
            return -1;
        }
        conn.fd = fd;
        conn.open = true;
        if (u->tls) {
            conn.ssl = tls_handshake(c, u, fd, mono_ms() + CONNECT_MS, why, whylen);
            if (conn.ssl == NULL) {
                conn_close();
                return -1;
            }
        }
        snprintf(conn.server, sizeof conn.server, "%s", base);
    }
    reader_t r = {.fd = conn.fd, .ssl = conn.ssl, .idle_ms = c->stream_idle_ms,
                  .deadline_ms = mono_ms() + (c->stream_idle_ms > 0 ? c->stream_idle_ms : REQUEST_MS)};
    body_out_t o = {0};
    int rc = -1;
    if (send_all(&r, req, reqlen) < 0)
        goto fail;
    long status;
    int minor;
    long long clen;
    bool chunked, close_after;
    do {
        if (read_head(&r, &status, &minor, &clen, &chunked, &close_after, out->ctype,
                      sizeof out->ctype, &out->next_after, out->location, sizeof out->location) < 0)
            goto fail;
    } while (status >= 100 && status < 200);
    out->status = status;
    if (sink && status >= 200 && status < 300) {
        o.sink = sink;
        o.arg = arg;
    } else if (clen >= 0 && !chunked) {
        o.cap = (size_t)clen + 1;
        o.buf = malloc(o.cap);
        if (o.buf == NULL) {
            r.err = "out of memory";
            goto fail;
        }
        o.buf[0] = '\0';
    }
    if (strcmp(method, "HEAD") == 0 || status == 204 || status == 304) {
        /* no body */
    } else if (chunked) {
        if (chunked_body(&r, &o) < 0)
            goto fail;
    } else if (clen >= 0) {
        if (copy_body(&r, &o, (size_t)clen) < 0)
            goto fail;
    } else {
        if (copy_body(&r, &o, SIZE_MAX) < 0)
            goto fail;
        close_after = true;
    }
    if (close_after || r.start != r.end)
        conn_close();
    out->body = o.buf;
    out->len = o.len;
    if (o.buf == NULL && !o.sink) {
        out->body = calloc(1, 1);
        if (out->body == NULL)
            abort();
    }
    free(r.buf);
    return 0;
fail:
    if (o.sink_failed) {
        snprintf(why, whylen, "cannot write the output: %s", strerror(o.err_no));
        out->status = -1;
    } else if (r.err) {
        snprintf(why, whylen, "%s", r.err);
    } else {
        snprintf(why, whylen, "%s", strerror(r.err_no));
    }
    *retry = reused && !r.got_any && !o.sink_failed;
    if (o.sink_failed && o.err_no == ECANCELED)
        why[0] = '\0'; /* the sink stopped on purpose (watch.c): nothing to say */
    conn_close();
    free(o.buf);
    free(r.buf);
    return rc;
}

/* One request to the server at base (a URL: scheme, authority, path
 * prefix) for target (the path after the prefix), retried once on a reused
 * connection the server had closed. 0 with *out filled, or -1 with the
 * cause in why; *dial_failed says nothing was sent (the server could not
 * be reached), out->status -1 that the sink failed. */
static int request(cli_t *c, const char *base, const char *method, const char *target,
                   const char *body, size_t len, cli_reply_t *out, cli_sink_fn sink, void *arg,
                   bool *dial_failed, char *why, size_t whylen) {
    url_t u;
    const char *bad;
    *dial_failed = true;
    if (parse_url(base, &u, &bad) < 0) {
        snprintf(why, whylen, "%s", bad);
        return -1;
    }
    char *req = NULL;
    int n = asprintf(&req,
                     "%s %s%s HTTP/1.1\r\nHost: %s\r\nUser-Agent: sluice/" SLUICE_VERSION
                     "\r\nAccept: */*\r\n%s%s%s",
                     method, u.prefix, target, u.authority, c->token && *c->token ? "Authorization: Bearer " : "",
                     c->token && *c->token ? c->token : "", c->token && *c->token ? "\r\n" : "");
    if (n < 0)
        abort();
    size_t reqlen = (size_t)n;
    char extra[96];
    int el = body ? snprintf(extra, sizeof extra,
                             "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n", len)
                  : snprintf(extra, sizeof extra, "\r\n");
    char *full = realloc(req, reqlen + (size_t)el + (body ? len : 0) + 1);
    if (full == NULL)
        abort();
    memcpy(full + reqlen, extra, (size_t)el);
    reqlen += (size_t)el;
    if (body) {
        memcpy(full + reqlen, body, len);
        reqlen += len;
    }
    full[reqlen] = '\0';
    bool retry;
    int rc = attempt(c, base, &u, full, reqlen, method, out, sink, arg, &retry, dial_failed, why,
                     whylen);
    if (rc < 0 && retry)
        rc = attempt(c, base, &u, full, reqlen, method, out, sink, arg, &retry, dial_failed, why,
                     whylen);
    free(full);
    return rc;
}

/* Follows out's 307 or 308 (Location set) from base for path, at most
 * MAX_REDIRECTS times, with the same method and body; out is replaced by
 * each reply. The leader is then preferred for the run's next requests.
 * CLI_OK with the last reply in *out, or an exit status (message
 * printed). */
static int follow(cli_t *c, const char *base, const char *method, const char *path,
                  const char *body, size_t len, cli_reply_t *out, cli_sink_fn sink, void *arg) {
    char from[600], nbase[600], target[2048], why[700];
    snprintf(from, sizeof from, "%s", base);
    for (int hop = 0; (out->status == 307 || out->status == 308) && out->location[0]; hop++) {
        if (hop == MAX_REDIRECTS) {
            fprintf(stderr, "sluice: %s: more than %d redirects (the last to %s)\n", c->server,
                    MAX_REDIRECTS, out->location);
            cli_reply_free(out);
            return CLI_ESERVER;
        }
        if (sl_url_redirect_target(from, out->location, nbase, sizeof nbase, target, sizeof target, why,
                            sizeof why) < 0) {
            fprintf(stderr, "sluice: %s\n", why);
            cli_reply_free(out);
            return CLI_ESERVER;
        }
        cli_reply_free(out);
        memset(out, 0, sizeof *out);
        bool dial_failed;
        if (request(c, nbase, method, target, body, len, out, sink, arg, &dial_failed, why,
                    sizeof why) < 0) {
            if (out->status == -1) {
                if (why[0])
                    fprintf(stderr, "sluice: %s\n", why);
                memset(out, 0, sizeof *out);
                return CLI_ESERVER;
            }
            if (!c->quiet_unreachable)
                fprintf(stderr, "sluice: cannot reach %s (the leader %s redirected to): %s\n",
                        nbase, from, why);
            memset(out, 0, sizeof *out);
            return CLI_EUNREACHABLE;
        }
        /* The leader's base for the next requests: the target less the
         * path asked, when it ends with it (the leader's path prefix). */
        size_t tl = strlen(target), pl = strlen(path);
        if (tl >= pl && strcmp(target + tl - pl, path) == 0)
            snprintf(preferred, sizeof preferred, "%s%.*s", nbase, (int)(tl - pl), target);
        snprintf(from, sizeof from, "%s", nbase);
    }
    return CLI_OK;
}

int cli_http_raw(cli_t *c, const char *method, const char *path, const char *body, size_t len,
                 cli_reply_t *out, cli_sink_fn sink, void *arg) {
    memset(out, 0, sizeof *out);
    if (c->token) {
        for (const char *p = c->token; *p; p++) {
            if ((unsigned char)*p < 0x20 || *p == 0x7f) {
                fprintf(stderr, "sluice: the token contains a control character\n");
                return CLI_EUSAGE;
            }
        }
    }
    /* The servers to try: the preferred one first (the last to answer),
     * then the list (--server A,B,C) in its order. */
    char list[SL_HOSTPORT_MAX * 520 + 600];
    snprintf(list, sizeof list, "%s%s%s", preferred, preferred[0] ? "," : "", c->server);
    char *bases[SL_HOSTPORT_MAX + 1], *save = NULL;
    size_t nb = 0;
    for (char *t = strtok_r(list, ",", &save); t && nb < SL_HOSTPORT_MAX + 1;
         t = strtok_r(NULL, ",", &save)) {
        bool dup = false;
        for (size_t k = 0; k < nb; k++)
            dup = dup || strcmp(bases[k], t) == 0;
        if (!dup)
            bases[nb++] = t;
    }
    if (nb == 0)
        bases[nb++] = c->server;
    char why[300] = "";
    for (size_t k = 0; k < nb; k++) {
        bool dial_failed;
        if (request(c, bases[k], method, path, body, len, out, sink, arg, &dial_failed, why,
                    sizeof why) == 0) {
            if (nb > 1)
                snprintf(preferred, sizeof preferred, "%s", bases[k]);
            return follow(c, bases[k], method, path, body, len, out, sink, arg);
        }
        if (out->status == -1) { /* the sink failed: we reached the server */
            if (why[0])
                fprintf(stderr, "sluice: %s\n", why);
            memset(out, 0, sizeof *out);
            return CLI_ESERVER;
        }
        if (!dial_failed || k + 1 == nb) {
            if (!c->quiet_unreachable && nb > 1 && dial_failed)
                fprintf(stderr, "sluice: cannot reach any of %s (the last, %s: %s)\n", c->server,
                        bases[k], why);
            else if (!c->quiet_unreachable)
                fprintf(stderr, "sluice: cannot reach %s: %s\n", nb > 1 ? bases[k] : c->server, why);
            memset(out, 0, sizeof *out);
            return CLI_EUNREACHABLE;
        }
        memset(out, 0, sizeof *out);
    }
    return CLI_EUNREACHABLE;
}

void cli_reply_free(cli_reply_t *r) {
    free(r->body);
    r->body = NULL;
    r->len = 0;
}

int cli_http(cli_t *c, const char *method, const char *path, json_t *body, long *status,
             json_t **out, char **text) {
    *out = NULL;
    if (text)
        *text = NULL;
    char *data = body ? json_dumps(body, JSON_COMPACT) : NULL;
    if (body && data == NULL) {
        fprintf(stderr, "sluice: cannot encode the request\n");
        return CLI_EUSAGE;
    }
    cli_reply_t r;
    int rc = cli_http_raw(c, method, path, data, data ? strlen(data) : 0, &r, NULL, NULL);
    free(data);
    if (rc != CLI_OK)
        return rc;
    *status = r.status;
    if (r.len > 0) {
        json_error_t jerr;
        *out = json_loadb(r.body, r.len, 0, &jerr);
    }
    if (!*out && text && r.len > 0) {
        *text = r.body;
        r.body = NULL;
    }
    cli_reply_free(&r);
    return CLI_OK;
}

/* Prints what the server said about a failed request (its error message,
 * or with --json its error object on stdout). */
static void report(cli_t *c, long status, json_t *out, const char *text) {
    const char *msg = NULL;
    json_t *err = json_object_get(out, "error");
    if (json_is_object(err))
        msg = json_string_value(json_object_get(err, "message"));
    else if (json_is_string(err))
        msg = json_string_value(err);
    if (c->json && out) {
        cli_print_json(out);
    } else if (msg) {
        fprintf(stderr, "sluice %s: %s (HTTP %ld)\n", c->cmd->name, msg, status);
    } else {
        fprintf(stderr, "sluice %s: server answered HTTP %ld%s%.200s\n", c->cmd->name, status,
                text ? ": " : "", text ? text : "");
    }
    if (status == 401 && !c->token)
        fprintf(stderr, "sluice: no token: pass --token, set SLUICE_TOKEN, or run `sluice up` here\n");
}

int cli_reply_error(cli_t *c, const cli_reply_t *r) {
    json_t *out = NULL;
    if (r->len > 0) {
        json_error_t jerr;
        out = json_loadb(r->body, r->len, 0, &jerr);
    }
    report(c, r->status, out, out ? NULL : (r->len > 0 ? r->body : NULL));
    json_decref(out);
    return CLI_ESERVER;
}

int cli_call(cli_t *c, const char *method, const char *path, json_t *body, json_t **out) {
    long status = 0;
    char *text = NULL;
    int rc = cli_http(c, method, path, body, &status, out, &text);
    if (rc != CLI_OK)
        return rc;
    if (status >= 200 && status < 300) {
        free(text);
        return CLI_OK;
    }
    report(c, status, *out, text);
    free(text);
    json_decref(*out);
    *out = NULL;
    return CLI_ESERVER;
}

void cli_http_forget(void) {
    conn.fd = -1;
    conn.ssl = NULL;
    conn.open = false;
}

void cli_http_cleanup(void) {
    conn_close();
    SSL_CTX_free(tls_ctx);
    tls_ctx = NULL;
}
