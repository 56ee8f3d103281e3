/*
 * hgate.c - deferred replies held until their commit is durable (hgate.h).
 */
#include <stdarg.h>
#include <stdbool.h>
#include <string.h>

#include "net/hgate.h"
#include "net/hreply.h"

#include "base/loop.h"
#include "domain/deps.h"
#include "domain/jobs.h"
#include "sluice/alloc.h"
#include "views/api.h"

struct ctl_hgate_reply {
    struct evhttp_request *req;
    int status;
    uint64_t job;          /* the body is this job's object (0: given with the reply) */
    bool tagged;           /* tag and body are set */
    uint64_t tag;          /* leaves once ctl_store_durable reaches it */
    ctl_buf_t body;
};

void ctl_hgate_init(ctl_hgate_t *g, ctl_t *c, ctl_hconns_t *conns) {
    *g = (ctl_hgate_t){.c = c, .conns = conns};
}

void ctl_hgate_defer(ctl_hgate_t *g, struct evhttp_request *req, int status, uint64_t job) {
    if (g->n == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 64;
        g->r = sl_xrealloc(g->r, g->cap * sizeof *g->r);
    }
    g->r[g->n++] = (ctl_hgate_reply_t){.req = req, .status = status, .job = job};
    ctl_loop_kick(g->c->loop);
}

void ctl_hgate_defer_body(ctl_hgate_t *g, struct evhttp_request *req, int status,
                          ctl_buf_t *body) {
    ctl_hgate_defer(g, req, status, 0);
    ctl_hgate_reply_t *r = &g->r[g->n - 1];
    r->body = *body;
    ctl_buf_init(body);
}

/* Tags r with seq and renders its body: its job as GET /v1/jobs/{id}
 * shows it now, read back from the database when already forgotten. */
static void tag(ctl_hgate_t *g, ctl_hgate_reply_t *r, uint64_t seq) {
    ctl_t *c = g->c;
    r->tagged = true;
    r->tag = seq;
    if (r->job == 0)
        return; /* its body came with it */
    ctl_buf_init(&r->body);
    ctl_job_t *j = ctl_job_find(c, r->job);
    if (j) {
        ctl_job_write(c, &r->body, j);
    } else if ((j = ctl_job_fetch(c, r->job)) != NULL) { /* already forgotten */
        ctl_array_fill(c, j);
        ctl_job_write(c, &r->body, j);
        ctl_job_free(j);
    }
    ctl_buf_putc(&r->body, '\n');
}

static void send_one(ctl_hgate_t *g, ctl_hgate_reply_t *r) {
    ctl_reply_body(g->conns, r->req, r->status, "application/json", &r->body); /* takes it */
}

/* Tags never decrease along the array, so the replies released are
 * always a prefix, and the rest stay in order. */
void ctl_hgate_flush(ctl_hgate_t *g) {
    uint64_t seq = ctl_store_seq(g->c->store);
    for (size_t i = 0; i < g->n; i++)
        if (!g->r[i].tagged)
            tag(g, &g->r[i], seq);
    ctl_hgate_release(g);
}

void ctl_hgate_release(ctl_hgate_t *g) {
    uint64_t durable = ctl_store_durable(g->c->store);
    size_t n = 0;
    while (n < g->n && g->r[n].tagged && g->r[n].tag <= durable)
        send_one(g, &g->r[n++]);
    if (n > 0) {
        memmove(g->r, g->r + n, (g->n - n) * sizeof *g->r);
        g->n -= n;
    }
}

static void reply_error(ctl_hgate_t *g, struct evhttp_request *req, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void reply_error(ctl_hgate_t *g, struct evhttp_request *req, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    ctl_reply_verror(g->conns, req, 503, "unavailable", NULL, -1, fmt, ap);
    va_end(ap);
}

/* Sending also frees a request whose client already left. */
void ctl_hgate_fini(ctl_hgate_t *g) {
    for (size_t i = 0; i < g->n; i++) {
        ctl_buf_fini(&g->r[i].body);
        reply_error(g, g->r[i].req, "the controller stopped before the change was durable: it "
                    "may not have taken effect; look it up before retrying");
    }
    sl_free(g->r);
    *g = (ctl_hgate_t){0};
}
