/*
 * http.c - the HTTP/JSON API of sluiced on libevent's evhttp.
 *
 * One route table (method, path pattern, handler, auth kind, summary)
 * drives dispatch, the 404/405 answers, `sluiced --help` and the table in
 * docs/api.md. Handlers that change state (submit, cancel) defer their
 * reply until the commit of the iteration's transaction is durable, so a
 * 201 means the job is on disk, and in HA mode in the replicated store
 * too: the loop's REPLIES hook, after COMMIT, tags each deferred reply
 * with the store's seq and sends it once ctl_store_durable reaches that
 * (the output gate, ctl_http_flush). Reads answer at once. GET .../logs is the one request answered by an
 * agent: it goes out through logs_send (the agent port's, wired by
 * main.c) and waits, at most 10 s, for ctl_http_logs_answer; the HTTP
 * adapter knows nothing of the agent protocol.
 *
 * Connections (limits per port and peer, header and idle timeouts, the
 * bound on unread replies, JSON for the errors libevent answers itself)
 * are hconn.c's; every reply leaves through send_body, which answers HEAD
 * with the GET's Content-Length and no body. GET /v1/jobs is paged by id
 * (api.c, ctl_jobs_list).
 *
 * Auth (auth.h): "Authorization: Bearer TOKEN". The admin token sees
 * everything; a tenant token sees its own jobs (403 for others') and its
 * own tenant's figures; the monitoring token reads /metrics and /v1/report
 * for every tenant and nothing else; the cluster token is for agents only
 * (403 here); a missing or unknown token is 401.
 *
 * TLS: when main.c sets h->tls, evhttp gets its bufferevents from tls_bev,
 * which wraps each accepted socket in OpenSSL (docs/security.md); the
 * rest of this file does not know whether a request came over TLS.
 */
#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "net/hgate.h"
#include "net/hreply.h"
#include "net/hroute.h"
#include "views/api.h"
#include "views/batch.h"
#include "domain/deps.h"
#include "net/auth.h"
#include "net/hconn.h"
#include "net/http.h"
#include "domain/jobs.h"
#include "log.h"
#include "views/metrics.h"
#include "views/disruptions.h"
#include "views/resvapi.h"
#include "views/secretapi.h"
#include "quantity.h"
#include "views/report.h"
#include "views/history.h"
#include "net/steps.h"
#include "views/controllers.h"
#include "net/events.h"
#include "net/console.h"
#include "net/logstream.h"

#define AUTH_NONE CTL_AUTH_NONE
#define AUTH_API CTL_AUTH_API
#define AUTH_READ CTL_AUTH_READ
#define AUTH_STEP CTL_AUTH_STEP

/* A reply deferred by a handler that changed state. At the first flush
 * after it (past the COMMIT) it is tagged with the store's seq and its body
 * rendered, the job as that commit left it; it leaves once that seq is
 * durable. */
struct ctl_logreq {
    uint64_t req;
    struct evhttp_request *http;
    uint64_t job;
    int32_t task;
    uint32_t node;
    int64_t deadline_mono_us;
    struct ctl_logreq *next;
};

typedef struct hreq {
    ctl_http_t *hs;
    ctl_t *c;
    struct evhttp_request *req;
    struct evkeyvalq query;
    bool admin;
    bool all;        /* reads every tenant's figures: the admin or the monitoring token */
    int32_t tenant;  /* the token's tenant, -1 for the admin and the monitoring token */
    uint64_t id;     /* {id} in the path */
    const char *name; /* {name} in the path (the reservation's), or NULL */
    int64_t aidx;    /* {id} was A_I: I (the element's id is resolved in job_access); else -1 */
    const char *step_token; /* AUTH_STEP: a token of the step form, not yet checked */
} hreq_t;

typedef void (*handler_fn)(hreq_t *h);

typedef struct route {
    enum evhttp_cmd_type method;
    const char *pattern;
    handler_fn fn;
    ctl_route_auth_t auth;
    const char *summary;
} route_t;

static void h_healthz(hreq_t *h);
static void h_submit(hreq_t *h);
static void h_list(hreq_t *h);
static void h_get(hreq_t *h);
static void h_cancel(hreq_t *h);
static void h_logs(hreq_t *h);
static void h_logstream(hreq_t *h);
static void h_nodes(hreq_t *h);
static void h_tenants(hreq_t *h);
static void h_metrics(hreq_t *h);
static void h_report(hreq_t *h);
static void h_history(hreq_t *h);
static void h_drain(hreq_t *h);  /* views/disruptions.c */
static void h_resume(hreq_t *h);
static void h_size(hreq_t *h);
static void named_call(hreq_t *h, bool secret); /* views/secretapi.c, else views/resvapi.c */
static void h_resv(hreq_t *h) { named_call(h, false); }
static void h_secret(hreq_t *h) { named_call(h, true); }
static void h_steps(hreq_t *h) { ctl_steps_http(h->hs->steps, h->req, h->id, h->admin, h->tenant, h->step_token); }
static void h_events(hreq_t *h) { ctl_events_http(h->hs->events, h->req, &h->query, h->admin, h->tenant); }
static void h_ui(hreq_t *h) { ctl_console_http(&h->hs->conns, h->req, evhttp_uri_get_path(evhttp_request_get_evhttp_uri(h->req))); }
static void h_events_stats(hreq_t *h) { ctl_events_http_stats(h->hs->events, h->req, h->admin); }
static void h_controllers(hreq_t *h);
static void h_step_signal(hreq_t *h) { ctl_steps_http_signal(h->hs->steps, h->req, h->id, h->admin, h->tenant, h->step_token); }

static const route_t routes[] = {
    {EVHTTP_REQ_GET, "/healthz", h_healthz, AUTH_NONE, "liveness: {\"status\":\"ok\",\"version\":...}"},
    {EVHTTP_REQ_GET, "/v1/controllers", h_controllers, AUTH_NONE,
     "the controllers: members, leader, epoch, applied log index and lag (docs/ha.md)"},
    {EVHTTP_REQ_POST, "/v1/jobs", h_submit, AUTH_API, "submit a job; 201 once it is durable"},
    {EVHTTP_REQ_GET, "/v1/jobs", h_list, AUTH_API,
     "list jobs by id, a page at a time (?state= ?tenant= ?limit= ?after= ?view=table)"},
    {EVHTTP_REQ_GET, "/v1/jobs/{id}", h_get, AUTH_API, "one job with its placement"},
    {EVHTTP_REQ_DELETE, "/v1/jobs/{id}", h_cancel, AUTH_API, "cancel a job"},
    {EVHTTP_REQ_GET, "/v1/jobs/{id}/logs", h_logs, AUTH_API,
     "a task's output, fetched from its agent (?task= ?offset= ?limit=)"},
    {EVHTTP_REQ_GET, "/v1/jobs/{id}/logs/stream", h_logstream, AUTH_API,
     "a task's output as Server-Sent Events, live until it ends (?task= ?offset=)"},
    {EVHTTP_REQ_GET, "/v1/nodes", h_nodes, AUTH_API,
     "nodes with capacity and free resources (?limit= ?after=: a page by name)"},
    {EVHTTP_REQ_GET, "/v1/tenants", h_tenants, AUTH_API, "tenants with usage and DRF share"},
    {EVHTTP_REQ_GET, "/metrics", h_metrics, AUTH_READ,
     "Prometheus text format (a tenant token: its own tenant's series)"},
    {EVHTTP_REQ_GET, "/v1/report", h_report, AUTH_READ,
     "the seed's figures for a window from the database (?since=SECONDS ?tenant= ?buckets=N)"},
    {EVHTTP_REQ_GET, "/v1/history", h_history, AUTH_API,
     "finished jobs by end time (?since= ?until= ?tenant= ?state= ?name= ?limit= ?after=)"},
    {EVHTTP_REQ_POST, "/v1/nodes/drain", h_drain, AUTH_API,
     "drain a node (admin): {\"node\":N,\"deadline\":T,\"reason\":R}"},
    {EVHTTP_REQ_POST, "/v1/nodes/resume", h_resume, AUTH_API, "end a node's drain (admin): {\"node\":N}"},
    {EVHTTP_REQ_GET, "/v1/jobs/{id}/size", h_size, AUTH_API, "an elastic job's size now"},
    {EVHTTP_REQ_POST, "/v1/reservations", h_resv, AUTH_API,
     "create an advance reservation (admin): {\"name\",\"start\",\"duration\",\"nodes\"|"
     "\"node_count\"|\"gpus\",\"tenants\"}"},
    {EVHTTP_REQ_GET, "/v1/reservations", h_resv, AUTH_API, "advance reservations"},
    {EVHTTP_REQ_GET, "/v1/reservations/{name}", h_resv, AUTH_API, "one advance reservation"},
    {EVHTTP_REQ_DELETE, "/v1/reservations/{name}", h_resv, AUTH_API,
     "end an advance reservation now (admin): its jobs stop"},
    {EVHTTP_REQ_POST, "/v1/secrets", h_secret, AUTH_API, "create a secret or config map (?tenant=)"},
    {EVHTTP_REQ_GET, "/v1/secrets", h_secret, AUTH_API, "the tenant's secrets: names, keys, sizes"},
    {EVHTTP_REQ_GET, "/v1/secrets/{name}", h_secret, AUTH_API, "one secret's keys (never values)"},
    {EVHTTP_REQ_DELETE, "/v1/secrets/{name}", h_secret, AUTH_API, "delete a secret"},
    {EVHTTP_REQ_POST, "/v1/jobs/{id}/steps", h_steps, AUTH_STEP, "start a job step (srun); its output streams back"},
    {EVHTTP_REQ_POST, "/v1/jobs/{id}/steps/control", h_step_signal, AUTH_STEP, "signal a step, or its --pty input"},
    {EVHTTP_REQ_GET, "/v1/events", h_events, AUTH_API,
     "jobs' and nodes' changes as Server-Sent Events (Last-Event-ID, ?heartbeat=)"},
    {EVHTTP_REQ_GET, "/v1/events/stats", h_events_stats, AUTH_API, "the event stream's counters (admin)"},
    {EVHTTP_REQ_GET, "/ui", h_ui, AUTH_NONE, "the web console (docs/console.md; it asks for a token)"},
    {EVHTTP_REQ_GET, "/ui/{name}", h_ui, AUTH_NONE,
     "the console's files (index.html, its scripts, style sheet and icon)"},
};
#define NROUTES (sizeof routes / sizeof routes[0])

static const char *method_name(enum evhttp_cmd_type m) {
    static const struct { enum evhttp_cmd_type m; const char *name; } t[] = {
        {EVHTTP_REQ_GET, "GET"}, {EVHTTP_REQ_POST, "POST"}, {EVHTTP_REQ_DELETE, "DELETE"},
        {EVHTTP_REQ_PUT, "PUT"}, {EVHTTP_REQ_HEAD, "HEAD"}, {EVHTTP_REQ_PATCH, "PATCH"},
        {EVHTTP_REQ_OPTIONS, "OPTIONS"}, {EVHTTP_REQ_TRACE, "TRACE"}, {EVHTTP_REQ_CONNECT, "CONNECT"}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (t[i].m == m)
            return t[i].name;
    return "OTHER";
}

void ctl_http_print_routes(void) {
    for (size_t i = 0; i < NROUTES; i++)
        printf("  %-6s %-22s %s%s\n", method_name(routes[i].method), routes[i].pattern,
               routes[i].summary, routes[i].auth == AUTH_NONE   ? " (no token)"
                                  : routes[i].auth == AUTH_STEP ? " (or the job's step token)" : "");
}

/* ---- replies ---- */

/* Every reply leaves through net/hreply.c (HEAD, limits.reply_buffer). */
static void send_body(ctl_http_t *hs, struct evhttp_request *req, int status, const char *ctype,
                      ctl_buf_t *body) {
    ctl_reply_body(&hs->conns, req, status, ctype, body);
}

static void send_json(ctl_http_t *hs, struct evhttp_request *req, int status, ctl_buf_t *body) {
    ctl_reply_body(&hs->conns, req, status, "application/json", body);
}

static void verror(ctl_http_t *hs, struct evhttp_request *req, int status, const char *code,
                   const char *field, long position, const char *fmt, va_list ap) {
    ctl_reply_verror(&hs->conns, req, status, code, field, position, fmt, ap);
}

static void http_error(ctl_http_t *hs, struct evhttp_request *req, int status, const char *code,
                       const char *field, const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static void http_error(ctl_http_t *hs, struct evhttp_request *req, int status, const char *code,
                       const char *field, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    verror(hs, req, status, code, field, -1, fmt, ap);
    va_end(ap);
}

static void error_at(ctl_http_t *hs, struct evhttp_request *req, long position, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void error_at(ctl_http_t *hs, struct evhttp_request *req, long position, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    verror(hs, req, 400, "bad_json", NULL, position, fmt, ap);
    va_end(ap);
}

/* The output gate (hgate.h), then the event stream's, gated the same way
 * (events.h). */
bool ctl_http_flush(void *ud) {
    ctl_http_t *hs = ud;
    ctl_hgate_flush(&hs->gate);
    ctl_events_flush(hs->events);
    return false;
}

bool ctl_http_release(void *ud) {
    ctl_http_t *hs = ud;
    ctl_hgate_release(&hs->gate);
    ctl_events_release(hs->events);
    return false;
}

/* ---- dispatch ---- */

static void dispatch(struct evhttp_request *req, void *ud) {
    ctl_http_t *hs = ud;
    ctl_t *c = hs->c;
    c->n.http_requests++;
    ctl_hconns_busy(&hs->conns, req);
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
    if (path == NULL || path[0] == '\0')
        path = "/";
    enum evhttp_cmd_type method = evhttp_request_get_command(req);
    const route_t *rt = NULL;
    uint64_t id = 0;
    int64_t aidx = -1;
    const char *pname = NULL;
    char allow[64] = "";
    for (size_t i = 0; i < NROUTES; i++) {
        uint64_t v = 0;
        int64_t ai;
        const char *nm = NULL;
        if (!ctl_route_match(routes[i].pattern, path, &v, &ai, &nm))
            continue;
        if (routes[i].method == method || (method == EVHTTP_REQ_HEAD && routes[i].method == EVHTTP_REQ_GET)) {
            rt = &routes[i];
            id = v;
            aidx = ai;
            pname = nm;
            break;
        }
        if (allow[0])
            strncat(allow, ", ", sizeof allow - strlen(allow) - 1);
        strncat(allow, method_name(routes[i].method), sizeof allow - strlen(allow) - 1);
    }
    if (rt == NULL) {
        if (allow[0]) {
            evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", allow);
            http_error(hs, req, 405, "method_not_allowed", NULL, "%s %s: allowed methods: %s",
                           method_name(method), path, allow);
        } else {
            http_error(hs, req, 404, "not_found", NULL, "no route for %s", path);
        }
        return;
    }
    hreq_t h = {.hs = hs, .c = c, .req = req, .tenant = -1, .id = id, .aidx = aidx};
    char nbuf[SL_NAME_MAX];
    if (pname) {
        size_t n = strcspn(pname, "/");
        snprintf(nbuf, sizeof nbuf, "%.*s", (int)(n < sizeof nbuf ? n : sizeof nbuf - 1), pname);
        h.name = nbuf;
    }
    h.query.tqh_first = NULL;
    h.query.tqh_last = &h.query.tqh_first;
    if (rt->auth != AUTH_NONE) {
        ctl_auth_t a;
        char msg[160];
        int st = ctl_auth_check(c, evhttp_find_header(evhttp_request_get_input_headers(req),
                                                      "Authorization"), rt->auth, &a, msg, sizeof msg);
        if (st != 0) {
            if (st == 401)
                evhttp_add_header(evhttp_request_get_output_headers(req), "WWW-Authenticate", "Bearer");
            http_error(hs, req, st, st == 401 ? "unauthorized" : "forbidden", NULL, "%s", msg);
            return;
        }
        h.admin = a.role == CTL_ROLE_ADMIN;
        h.all = a.role == CTL_ROLE_ADMIN || a.role == CTL_ROLE_MONITOR;
        h.tenant = a.tenant;
        h.step_token = a.step_token;
    }
    const char *q = uri ? evhttp_uri_get_query(uri) : NULL;
    if (q && evhttp_parse_query_str(q, &h.query) < 0) {
        http_error(hs, req, 400, "invalid_field", NULL, "malformed query string");
        return;
    }
    rt->fn(&h);
    evhttp_clear_headers(&h.query);
}

void ctl_http_init(ctl_http_t *hs, ctl_t *c) {
    *hs = (ctl_http_t){.c = c};
    ctl_hgate_init(&hs->gate, c, &hs->conns);
    hs->events = ctl_events_create(c, &hs->conns);
    hs->logstream = ctl_logstream_create(c, &hs->conns);
}

void ctl_http_fini(ctl_http_t *hs) {
    ctl_hgate_fini(&hs->gate); /* before the server frees their connections */
    ctl_report_abandon(hs->report); /* its request is freed with the server below */
    ctl_history_abandon_all(&hs->history); /* so are theirs */
    while (hs->logreqs) {
        ctl_logreq_t *lr = hs->logreqs;
        hs->logreqs = lr->next;
        sl_free(lr); /* its HTTP request is freed with the server below */
    }
    ctl_events_destroy(hs->events); /* its requests are freed with the server below */
    ctl_logstream_destroy(hs->logstream); /* so are its */
    if (hs->http)
        evhttp_free(hs->http);
    ctl_hconns_fini(&hs->conns); /* after evhttp_free, which closes the connections */
    *hs = (ctl_http_t){0};
}

/* evhttp's bufferevent factory when the API speaks TLS: each accepted
 * socket gets a server-side OpenSSL bufferevent, so the handshake runs in
 * the loop like any read; a peer that fails it (plain HTTP, a wrong CA,
 * garbage) is closed by evhttp without a reply. */
static struct bufferevent *tls_bev(struct event_base *base, void *ud) {
    ctl_http_t *hs = ud;
    SSL *ssl = SSL_new(hs->tls);
    if (ssl == NULL)
        abort(); /* out of memory */
    struct bufferevent *bev = bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_ACCEPTING,
                                                             BEV_OPT_CLOSE_ON_FREE);
    if (bev != NULL)
        bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
    return bev;
}

int ctl_http_listen(ctl_http_t *hs, char *err, size_t errlen) {
    ctl_t *c = hs->c;
    hs->http = evhttp_new(c->loop->base);
    /* Every method reaches dispatch, which answers 405 or 404 in JSON;
     * libevent would answer a method it was not told of with HTML. */
    evhttp_set_allowed_methods(hs->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_DELETE |
                                            EVHTTP_REQ_PUT | EVHTTP_REQ_HEAD | EVHTTP_REQ_PATCH |
                                            EVHTTP_REQ_OPTIONS | EVHTTP_REQ_TRACE | EVHTTP_REQ_CONNECT);
    evhttp_set_gencb(hs->http, dispatch, hs);
    if (hs->tls) {
        hs->conns.make_bev = tls_bev;
        hs->conns.make_bev_ud = hs;
    }
    if (ctl_hconns_open(&hs->conns, c, hs->http, err, errlen) < 0)
        return -1;
    /* Accepted sockets inherit TCP_NODELAY from the listener on Linux: without
     * it a kept-alive client's next large reply can wait ~40 ms on Nagle and
     * delayed ACKs. */
    int one = 1;
    if (setsockopt(evconnlistener_get_fd(hs->conns.port.lst), IPPROTO_TCP, TCP_NODELAY, &one,
                   sizeof one) != 0)
        sl_log(SL_LOG_WARN, "http", "setsockopt TCP_NODELAY on %s failed", c->cfg.listen);
    return 0;
}

/* ---- handlers ---- */

static void h_healthz(hreq_t *h) {
    ctl_buf_t b;
    ctl_buf_init(&b);
    ctl_buf_puts(&b, "{\"status\":\"ok\",\"version\":\"" SLUICE_VERSION "\"}\n");
    send_json(h->hs, h->req, 200, &b);
}

static void h_controllers(hreq_t *h) {
    ctl_buf_t b;
    ctl_buf_init(&b);
    ctl_controllers_view(h->c, &b);
    send_json(h->hs, h->req, 200, &b);
}

static void h_submit(hreq_t *h) {
    ctl_t *c = h->c;
    struct evbuffer *in = evhttp_request_get_input_buffer(h->req);
    size_t len = evbuffer_get_length(in);
    if (len == 0) {
        error_at(h->hs, h->req, 0, "empty body: expected a JSON job spec");
        return;
    }
    const char *data = (const char *)evbuffer_pullup(in, -1);
    json_error_t jerr;
    json_t *spec = json_loadb(data, len, JSON_REJECT_DUPLICATES, &jerr);
    if (spec == NULL) {
        error_at(h->hs, h->req, jerr.position, "malformed JSON at line %d column %d (position %d): %s",
                 jerr.line, jerr.column, jerr.position, jerr.text);
        return;
    }
    ctl_field_err_t fe;
    ctl_job_t *j = ctl_job_from_spec(c, spec, h->tenant, h->admin, &fe);
    json_decref(spec);
    if (j == NULL) {
        http_error(h->hs, h->req, fe.status, fe.code, fe.field, "%s", fe.message);
        return;
    }
    char err[320];
    const char *field;
    int rc = ctl_launch_check_size(c, j, err, sizeof err, &field); /* its launches fit a line */
    if (rc == 0)
        rc = ctl_submit(c, j, err, sizeof err, &field); /* arrays, dependencies (deps.h) */
    if (rc < 0) {
        if (rc == SL_EIO)
            http_error(h->hs, h->req, 500, "internal", NULL, "%s", err);
        else if (rc == SL_EBUSY)
            http_error(h->hs, h->req, 429, "limit", "max_pending_jobs", "%s", err);
        else if (rc == SL_EPERM)
            http_error(h->hs, h->req, 403, "forbidden", field, "%s", err);
        else
            http_error(h->hs, h->req, 400, "invalid_field", field, "%s", err);
        ctl_job_free(j); /* a refused job stays the caller's (jobs.h) */
        return;
    }
    ctl_secret_warnings(c, j); /* in the answer: an envFrom key left out */
    ctl_hgate_defer(&h->hs->gate, h->req, 201, j->id);
}

#define ALL_STATES ((1u << CTL_JOB_NSTATES) - 1)

/* "pending,running" -> bits; false (with the bad word in bad) if a word
 * is not a state. */
static bool parse_states(const char *v, unsigned *out, char *bad, size_t badlen) {
    unsigned m = 0;
    for (;;) {
        const char *e = strchr(v, ',');
        size_t n = e ? (size_t)(e - v) : strlen(v);
        char word[32];
        ctl_job_state_t st;
        snprintf(word, sizeof word, "%.*s", (int)(n < sizeof word ? n : sizeof word - 1), v);
        if (n >= sizeof word || ctl_job_state_parse(word, &st) < 0) {
            snprintf(bad, badlen, "%.*s", (int)n, v);
            return false;
        }
        m |= 1u << st;
        if (!e)
            break;
        v = e + 1;
    }
    *out = m;
    return true;
}

/* A non-negative decimal integer that fits in an int64_t (no sign, no
 * blanks, nothing after it). */
static bool parse_count(const char *s, int64_t *out) {
    char *end;
    if (s == NULL || *s < '0' || *s > '9')
        return false;
    long long v = strtoll(s, &end, 10);
    if (*end != '\0' || v < 0)
        return false;
    *out = v;
    return true;
}

/* The job of {id} if this token may see it, else answers 404 or 403 and
 * returns NULL. A finished job no longer in memory is read from the
 * database: *owned is then true and the caller frees it. */
static ctl_job_t *job_access(hreq_t *h, bool *owned) {
    *owned = false;
    if (h->aidx >= 0) { /* A_I: element I of array A */
        uint64_t e = ctl_array_element(h->c, h->id, h->aidx);
        if (e == 0) {
            http_error(h->hs, h->req, 404, "not_found", "id", "no job %llu_%lld (%s)",
                       (unsigned long long)h->id, (long long)h->aidx,
                       ctl_array_is(h->c, h->id) ? "the array has no element of this index"
                                                 : "no array with this id");
            return NULL;
        }
        h->id = e;
    }
    ctl_job_t *j = ctl_job_find(h->c, h->id);
    if (j == NULL && h->id > 0 && h->id < h->c->next_id) {
        j = ctl_job_fetch(h->c, h->id);
        *owned = j != NULL;
        if (j != NULL)
            ctl_array_fill(h->c, j);
    }
    if (j == NULL) {
        http_error(h->hs, h->req, 404, "not_found", "id", "no job %llu", (unsigned long long)h->id);
        return NULL;
    }
    if (!h->admin && (j->tenant < 0 || j->tenant != h->tenant)) {
        http_error(h->hs, h->req, 403, "forbidden", NULL, "job %llu belongs to another tenant",
                       (unsigned long long)h->id);
        if (*owned)
            ctl_job_free(j);
        return NULL;
    }
    return j;
}

static void h_list(hreq_t *h) {
    ctl_t *c = h->c;
    int64_t t0 = ctl_mono_us();
    ctl_list_query_t lq = {h->admin ? -1 : h->tenant, ALL_STATES, 0, CTL_LIST_DEFAULT_LIMIT, false};
    const char *v;
    if ((v = evhttp_find_header(&h->query, "state")) != NULL) {
        char badword[200];
        if (!parse_states(v, &lq.states, badword, sizeof badword)) {
            http_error(h->hs, h->req, 400, "invalid_field", "state",
                           "state: \"%s\" is not one of pending, running, succeeded, failed, cancelled",
                           badword);
            return;
        }
    }
    if ((v = evhttp_find_header(&h->query, "view")) != NULL) {
        if (strcmp(v, "table") != 0) {
            http_error(h->hs, h->req, 400, "invalid_field", "view",
                           "view: \"%s\" is not table (leave view out for the job objects)", v);
            return;
        }
        lq.table = true;
    }
    if ((v = evhttp_find_header(&h->query, "tenant")) != NULL) {
        int t = sl_sched_tenant_find(c->sched, v);
        if (t < 0) {
            http_error(h->hs, h->req, 400, "invalid_field", "tenant", "tenant: unknown tenant \"%s\"", v);
            return;
        }
        if (!h->admin && t != h->tenant) {
            http_error(h->hs, h->req, 403, "forbidden", "tenant", "tenant: this token sees only its own jobs");
            return;
        }
        lq.tenant = t;
    }
    if ((v = evhttp_find_header(&h->query, "limit")) != NULL &&
        (!parse_count(v, &lq.limit) || lq.limit < 1 || lq.limit > CTL_LIST_MAX_LIMIT)) {
        http_error(h->hs, h->req, 400, "invalid_field", "limit", "limit: must be a whole number from 1 to %d",
                   CTL_LIST_MAX_LIMIT);
        return;
    }
    int64_t after = 0;
    if ((v = evhttp_find_header(&h->query, "after")) != NULL && !parse_count(v, &after)) {
        http_error(h->hs, h->req, 400, "invalid_field", "after",
                   "after: must be a job id (the next_after of the previous page)");
        return;
    }
    lq.after = (uint64_t)after;
    ctl_buf_t b;
    ctl_buf_init(&b);
    uint64_t next_after;
    int64_t n;
    ctl_jobs_list(c, &lq, &b, &next_after, &n);
    if (next_after) {
        char nb[24];
        snprintf(nb, sizeof nb, "%llu", (unsigned long long)next_after);
        evhttp_add_header(evhttp_request_get_output_headers(h->req), "Sluice-Next-After", nb);
    }
    size_t bytes = b.len;
    int64_t t1 = ctl_mono_us();
    if (lq.table)
        send_body(h->hs, h->req, 200, "text/plain; charset=utf-8", &b);
    else
        send_json(h->hs, h->req, 200, &b);
    if (sl_log_enabled(SL_LOG_DEBUG, "http"))
        sl_log(SL_LOG_DEBUG, "http", "list jobs=%lld view=%s bytes=%zu build_us=%lld send_us=%lld",
               (long long)n, lq.table ? "table" : "json", bytes, (long long)(t1 - t0),
               (long long)(ctl_mono_us() - t1));
}

static void h_get(hreq_t *h) {
    bool owned;
    ctl_job_t *j = job_access(h, &owned);
    if (j == NULL)
        return;
    ctl_buf_t b;
    ctl_buf_init(&b);
    ctl_job_write(h->c, &b, j);
    ctl_buf_putc(&b, '\n');
    send_json(h->hs, h->req, 200, &b);
    if (owned)
        ctl_job_free(j);
}

static void h_cancel(hreq_t *h) {
    bool owned;
    bool whole = h->aidx < 0 && ctl_array_is(h->c, h->id); /* A: the whole array */
    ctl_job_t *j = job_access(h, &owned);
    if (j == NULL)
        return;
    if (whole) { /* element A itself may have ended, even be forgotten */
        uint64_t id = j->id;
        if (owned)
            ctl_job_free(j);
        if (ctl_array_cancel(h->c, id) == 0) {
            http_error(h->hs, h->req, 409, "conflict", NULL,
                       "array %llu has no pending or running element", (unsigned long long)id);
            return;
        }
        ctl_hgate_defer(&h->hs->gate, h->req, 200, id);
        return;
    }
    /* A job read back from the database has finished: it is never cancelled. */
    if (owned || ctl_job_cancel(h->c, j) < 0) {
        http_error(h->hs, h->req, 409, "conflict", NULL, "job %llu already %s",
                       (unsigned long long)j->id, ctl_job_state_name(j->state));
        if (owned)
            ctl_job_free(j);
        return;
    }
    ctl_hgate_defer(&h->hs->gate, h->req, 200, j->id);
}

static void logs_request(hreq_t *h, ctl_job_t *j);

static void h_logs(hreq_t *h) {
    bool owned;
    ctl_job_t *j = job_access(h, &owned);
    if (j == NULL)
        return;
    logs_request(h, j);
    if (owned)
        ctl_job_free(j);
}

/* ?task= ?offset= ?limit= of a log request for j, checked against it (the
 * task has run); false once the error is answered. */
static bool logs_query(hreq_t *h, ctl_job_t *j, int64_t *taskp, int64_t *offsetp, int64_t *limitp) {
    int64_t task = 0, offset = 0, limit = 65536;
    const char *v;
    if ((v = evhttp_find_header(&h->query, "task")) != NULL && !parse_count(v, &task)) {
        http_error(h->hs, h->req, 400, "invalid_field", "task", "task: must be a task index");
        return false;
    }
    if ((v = evhttp_find_header(&h->query, "offset")) != NULL && !parse_count(v, &offset)) {
        http_error(h->hs, h->req, 400, "invalid_field", "offset", "offset: must be a byte offset");
        return false;
    }
    if ((v = evhttp_find_header(&h->query, "limit")) != NULL &&
        (!parse_count(v, &limit) || limit > CTL_MAX_MSG / 2)) {
        http_error(h->hs, h->req, 400, "invalid_field", "limit", "limit: must be from 0 to %d bytes",
                       CTL_MAX_MSG / 2);
        return false;
    }
    if (task >= j->core.ntasks) {
        http_error(h->hs, h->req, 400, "invalid_field", "task", "task: job %llu has tasks 0..%d",
                       (unsigned long long)j->id, j->core.ntasks - 1);
        return false;
    }
    if (task >= j->ntasks || j->tasks[task].node < 0) {
        http_error(h->hs, h->req, 409, "conflict", "task", "task %lld of job %llu has not run yet",
                       (long long)task, (unsigned long long)j->id);
        return false;
    }
    *taskp = task;
    *offsetp = offset;
    *limitp = limit;
    return true;
}

static void h_logstream(hreq_t *h) {
    bool owned;
    ctl_job_t *j = job_access(h, &owned);
    if (j == NULL)
        return;
    int64_t task, offset, limit;
    if (logs_query(h, j, &task, &offset, &limit))
        ctl_logstream_open(h->hs->logstream, h->req, j->id, (int32_t)task,
                           (uint32_t)j->tasks[task].node, offset, h->hs->logs_send, h->hs->logs_ud);
    if (owned)
        ctl_job_free(j);
}

static void logs_request(hreq_t *h, ctl_job_t *j) {
    ctl_t *c = h->c;
    int64_t task, offset, limit;
    if (!logs_query(h, j, &task, &offset, &limit))
        return;
    uint32_t node = (uint32_t)j->tasks[task].node;
    ctl_node_t *n = ctl_node_get(c, node);
    ctl_http_t *hs = h->hs;
    uint64_t req = hs->next_logreq + 1;
    if (n == NULL || !n->connected || hs->logs_send == NULL ||
        hs->logs_send(hs->logs_ud, node, req, j->id, (int32_t)task, offset, limit) < 0) {
        http_error(h->hs, h->req, 503, "unavailable", NULL, "node %s, which ran task %lld, is not connected",
                   ctl_node_name(c, (int32_t)node), (long long)task);
        return;
    }
    ctl_logreq_t *lr = sl_xcalloc(1, sizeof *lr);
    lr->req = ++hs->next_logreq;
    lr->http = h->req;
    lr->job = j->id;
    lr->task = (int32_t)task;
    lr->node = node;
    lr->deadline_mono_us = ctl_mono_us() + 10 * 1000000;
    lr->next = hs->logreqs;
    hs->logreqs = lr;
}

static ctl_logreq_t *logreq_take(ctl_http_t *hs, bool (*pred)(ctl_logreq_t *, const void *),
                                 const void *arg) {
    for (ctl_logreq_t **pp = &hs->logreqs; *pp; pp = &(*pp)->next) {
        if (pred(*pp, arg)) {
            ctl_logreq_t *lr = *pp;
            *pp = lr->next;
            return lr;
        }
    }
    return NULL;
}

static bool by_req(ctl_logreq_t *lr, const void *arg) {
    return lr->req == *(const uint64_t *)arg;
}

static bool by_node(ctl_logreq_t *lr, const void *arg) {
    return lr->node == *(const uint32_t *)arg;
}

static bool expired(ctl_logreq_t *lr, const void *arg) {
    return lr->deadline_mono_us <= *(const int64_t *)arg;
}

void ctl_http_logs_answer(void *ud, uint64_t req, const char *error, const char *data, size_t len,
                          int64_t offset, bool eof) {
    ctl_http_t *hs = ud;
    if (ctl_logstream_answer(hs->logstream, req, error, data, len, offset, eof))
        return;
    ctl_logreq_t *lr = logreq_take(hs, by_req, &req);
    if (lr == NULL)
        return; /* expired or its client went away */
    if (error != NULL) {
        http_error(hs, lr->http, 404, "not_found", "task", "%s", error);
    } else {
        ctl_buf_t b;
        ctl_buf_init(&b);
        ctl_buf_puts(&b, "{\"job\":");
        ctl_buf_u64(&b, lr->job);
        ctl_buf_puts(&b, ",\"task\":");
        ctl_buf_i64(&b, lr->task);
        ctl_buf_puts(&b, ",\"offset\":");
        ctl_buf_i64(&b, offset);
        ctl_buf_puts(&b, ",\"data\":");
        ctl_buf_jstrn(&b, data ? data : "", data ? len : 0);
        ctl_buf_puts(&b, ",\"eof\":");
        ctl_buf_puts(&b, eof ? "true" : "false");
        ctl_buf_puts(&b, "}\n");
        send_json(hs, lr->http, 200, &b);
    }
    sl_free(lr);
}

void ctl_http_logs_gone(void *ud, uint32_t node, const char *why) {
    ctl_http_t *hs = ud;
    ctl_logreq_t *lr;
    ctl_logstream_gone(hs->logstream, node);
    while ((lr = logreq_take(hs, by_node, &node)) != NULL) {
        http_error(hs, lr->http, 502, "unavailable", NULL, "logs of job %llu task %d: %s",
                   (unsigned long long)lr->job, lr->task, why);
        sl_free(lr);
    }
}

void ctl_http_logs_expire(ctl_http_t *hs) {
    int64_t now = ctl_mono_us();
    ctl_logreq_t *lr;
    while ((lr = logreq_take(hs, expired, &now)) != NULL) {
        http_error(hs, lr->http, 504, "unavailable", NULL,
                   "logs of job %llu task %d: the agent did not answer in time",
                   (unsigned long long)lr->job, lr->task);
        sl_free(lr);
    }
}

static void h_nodes(hreq_t *h) {
    ctl_buf_t b;
    ctl_buf_init(&b);
    const char *field = NULL, *limit = evhttp_find_header(&h->query, "limit");
    char err[200];
    if (ctl_api_nodes(h->c, limit, evhttp_find_header(&h->query, "after"), &b, &field, err, sizeof err) < 0) {
        ctl_buf_fini(&b);
        http_error(h->hs, h->req, 400, "invalid_field", field, "%s", err);
        return;
    }
    send_json(h->hs, h->req, 200, &b);
}

static void h_tenants(hreq_t *h) {
    ctl_buf_t b;
    ctl_buf_init(&b);
    ctl_api_tenants(h->c, h->admin, h->tenant, &b);
    send_json(h->hs, h->req, 200, &b);
}

static void h_metrics(hreq_t *h) {
    ctl_buf_t b;
    ctl_buf_init(&b);
    ctl_metrics_write(h->c, &b, h->all ? -1 : h->tenant);
    send_body(h->hs, h->req, 200, "text/plain; version=0.0.4; charset=utf-8", &b);
}

static void report_done(void *ud, int status, ctl_buf_t *body) {
    ctl_http_t *hs = ud;
    struct evhttp_request *req = hs->report_req;
    hs->report = NULL;
    hs->report_req = NULL;
    if (status == 200) {
        send_json(hs, req, 200, body);
        return;
    }
    http_error(hs, req, 500, "internal", NULL, "reading the database: %.*s", (int)body->len,
               body->p ? body->p : "");
    ctl_buf_fini(body);
}

/* GET /v1/report: since (seconds, default a day) and tenant; a tenant's
 * token reports on its own jobs and the cluster's capacity only. The report runs on its own thread
 * (report.h); one at a time, and a second request meanwhile gets 503. */
static void h_report(hreq_t *h) {
    int64_t since;
    const char *tenant;
    char field[16], msg[200];
    int st = ctl_report_query(h->c, evhttp_find_header(&h->query, "since"),
                              evhttp_find_header(&h->query, "tenant"), h->all, h->tenant, &since,
                              &tenant, field, sizeof field, msg, sizeof msg);
    int buckets;
    if (st == 0 && (st = ctl_report_buckets_query(evhttp_find_header(&h->query, "buckets"), &buckets,
                                                  msg, sizeof msg)) != 0)
        snprintf(field, sizeof field, "buckets");
    if (st != 0) {
        http_error(h->hs, h->req, st, st == 403 ? "forbidden" : "invalid_field", field, "%s", msg);
        return;
    }
    if (h->hs->report != NULL) {
        evhttp_add_header(evhttp_request_get_output_headers(h->req), "Retry-After", "1");
        http_error(h->hs, h->req, 503, "unavailable", NULL,
                   "another report is being computed; retry in a second");
        return;
    }
    if (ctl_report_start_series(h->c, since, tenant, !h->all, buckets, report_done, h->hs,
                                &h->hs->report) < 0) {
        http_error(h->hs, h->req, 500, "internal", NULL, "cannot start the report (see the log)");
        return;
    }
    h->hs->report_req = h->req;
}

static void history_done(void *ud, struct evhttp_request *req, int status, ctl_buf_t *body) {
    ctl_http_t *hs = ud;
    if (status == 200) {
        send_json(hs, req, 200, body);
        return;
    }
    http_error(hs, req, 500, "internal", NULL, "%.*s", (int)body->len, body->p ? body->p : "");
    ctl_buf_fini(body);
}

/* GET /v1/history (history.h): the query is checked and the read started there. */
static void h_history(hreq_t *h) {
    char field[32], msg[300];
    int st = ctl_history_start(h->c, &h->query, h->admin, h->tenant, history_done, h->hs, h->req,
                               &h->hs->history, field, sizeof field, msg, sizeof msg);
    if (st == 503)
        evhttp_add_header(evhttp_request_get_output_headers(h->req), "Retry-After", "1");
    if (st != 0)
        http_error(h->hs, h->req, st, st == 403 ? "forbidden" : st == 400 ? "invalid_field"
                                                : st == 503 ? "unavailable" : "internal",
                   field[0] ? field : NULL, "%s", msg);
}

/* ---- drain, resume and size: the handlers of views/disruptions.c's requests ---- */

/* The request's optional JSON object body into *body (NULL when empty);
 * false once it answered a body that is not one. */
static bool read_body(hreq_t *h, json_t **body) {
    struct evbuffer *in = evhttp_request_get_input_buffer(h->req);
    size_t len = evbuffer_get_length(in);
    json_error_t jerr;
    *body = len ? json_loadb((const char *)evbuffer_pullup(in, -1), len, 0, &jerr) : NULL;
    if (len && !json_is_object(*body)) {
        error_at(h->hs, h->req, *body ? 0 : jerr.position, "the body must be a JSON object");
        json_decref(*body);
        return false;
    }
    return true;
}

/* An admin request with an optional JSON body, answered by fn. */
static void op_call(hreq_t *h, int (*fn)(ctl_t *, json_t *, ctl_buf_t *, ctl_field_err_t *)) {
    if (!h->admin) {
        http_error(h->hs, h->req, 403, "forbidden", NULL, "only the admin token may drain or resume nodes");
        return;
    }
    json_t *body;
    if (!read_body(h, &body))
        return;
    ctl_buf_t b;
    ctl_buf_init(&b);
    ctl_field_err_t fe = {0};
    int status = fn(h->c, body, &b, &fe);
    json_decref(body);
    if (status >= 400) {
        ctl_buf_fini(&b);
        http_error(h->hs, h->req, status, fe.code, fe.field, "%s", fe.message);
        return;
    }
    send_json(h->hs, h->req, status, &b);
}

static void h_drain(hreq_t *h) { op_call(h, ctl_api_drain); }
static void h_resume(hreq_t *h) { op_call(h, ctl_api_resume); }

static void h_size(hreq_t *h) {
    bool owned;
    ctl_job_t *j = job_access(h, &owned);
    if (j == NULL)
        return;
    ctl_buf_t b;
    ctl_buf_init(&b);
    int status = ctl_api_job_size(h->c, j, &b);
    if (owned)
        ctl_job_free(j);
    send_json(h->hs, h->req, status, &b);
}

static void named_call(hreq_t *h, bool secret) {
    json_t *body;
    if (!read_body(h, &body))
        return;
    ctl_buf_t b;
    ctl_buf_init(&b);
    ctl_field_err_t fe = {0};
    enum evhttp_cmd_type m = evhttp_request_get_command(h->req);
    const char *mn = method_name(m == EVHTTP_REQ_HEAD ? EVHTTP_REQ_GET : m);
    int status = secret ? ctl_api_secret(h->c, mn, h->name, h->admin, h->tenant,
                                         evhttp_find_header(&h->query, "tenant"), body, &b, &fe)
                        : ctl_api_resv(h->c, mn, h->name, h->admin, body, &b, &fe);
    json_decref(body);
    if (status >= 400) {
        ctl_buf_fini(&b);
        http_error(h->hs, h->req, status, fe.code, fe.field[0] ? fe.field : NULL, "%s", fe.message);
        return;
    }
    /* A secret created or deleted is committed with the iteration (a
     * reservation's change commits before its answer: reservations.c). */
    if (secret && (m == EVHTTP_REQ_POST || m == EVHTTP_REQ_DELETE))
        ctl_hgate_defer_body(&h->hs->gate, h->req, status, &b);
    else
        send_json(h->hs, h->req, status, &b);
}
