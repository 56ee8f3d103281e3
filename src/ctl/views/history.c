/*
 * history.c - GET /v1/history: finished jobs from the database, in the
 * order they ended, a page at a time (history.h).
 *
 * The read is the store's history walk (store.h, ctl_store_history_walk):
 * one page in (end time, id) order from the page's start, the filters
 * decided on the cheap columns, at most CTL_HISTORY_SCAN_MAX rows read, so
 * one request costs O(limit + scan bound) row reads, whatever the
 * history's length.
 *
 * Threads, as report.c: the read runs on a thread with its own read-only
 * connection and fills a page of malloc'd rows; the loop's thread joins it
 * and writes the JSON. The thread touches nothing else of the controller.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/http.h>

#include "views/history.h"
#include "log.h"
#include "store/store.h"

typedef struct hrow {
    uint64_t id;
    char *name, *tenant, *state, *reason, *pool;
    int64_t submit_us, start_us, end_us;
    bool has_exit;
    int64_t exit_code;
    int64_t gpu_milli;     /* GPUs its tasks held, summed */
    int64_t tasks;         /* tasks it ran (task rows), or its spec's count */
    int64_t time_limit;    /* seconds, 0: none */
} hrow_t;

typedef struct names {
    char *buf;
    const char *v[CTL_HISTORY_MAX_NAMES];
    size_t n;
} names_t;

struct ctl_history {
    ctl_history_done_fn done;
    void *ud;
    struct evhttp_request *req;
    ctl_history_t *next, **list;
    pthread_t thread;
    int pipe[2];
    struct event *ev;
    char *path;
    /* the query */
    int64_t since_us, until_us, after_end, after_id, limit;
    names_t tenants, states, jobnames;
    /* the answer */
    int rc;
    char err[320];
    hrow_t *rows;
    size_t nrows;
    int64_t scanned;
    bool more;             /* the walk stopped before the window's end */
    int64_t next_end, next_id;
};

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (p == NULL)
        abort();
    return p;
}

static char *xstrdup(const char *s) {
    if (s == NULL)
        return NULL;
    char *d = strdup(s);
    if (d == NULL)
        abort();
    return d;
}

/* ---- the query ---- */

static int names_parse(const char *s, names_t *out) {
    out->buf = xstrdup(s);
    char *save = NULL;
    for (char *w = strtok_r(out->buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        if (out->n == CTL_HISTORY_MAX_NAMES)
            return -1;
        out->v[out->n++] = w;
    }
    return out->n > 0 ? 0 : -1;
}

static bool names_has(const names_t *n, const char *s) {
    if (n->n == 0)
        return true;
    for (size_t i = 0; i < n->n; i++)
        if (s && strcmp(n->v[i], s) == 0)
            return true;
    return false;
}

static bool seconds(const char *s, int64_t *out) {
    char *end;
    errno = 0;
    long long v = s ? strtoll(s, &end, 10) : 0;
    if (s == NULL || errno || end == s || *end || v < 0 || v > 253402300799LL) /* year 9999 */
        return false;
    *out = v;
    return true;
}

/* ---- the thread ---- */

static bool history_want(void *ud, const char *tenant, const char *state, const char *name) {
    ctl_history_t *h = ud;
    return names_has(&h->tenants, tenant) && names_has(&h->states, state) &&
           names_has(&h->jobnames, name);
}

static bool history_take(void *ud, const ctl_history_row_t *row) {
    ctl_history_t *h = ud;
    hrow_t *r = &h->rows[h->nrows++];
    *r = (hrow_t){.id = row->id, .end_us = row->end_us, .tenant = xstrdup(row->tenant),
                  .state = xstrdup(row->state), .name = xstrdup(row->name),
                  .pool = xstrdup(row->pool), .time_limit = row->time_limit, .tasks = row->tasks,
                  .submit_us = row->submit_us, .start_us = row->start_us,
                  .reason = xstrdup(row->reason), .has_exit = row->has_exit,
                  .exit_code = row->exit_code, .gpu_milli = row->gpu_milli};
    return h->nrows < (size_t)h->limit;
}

static void *history_main(void *arg) {
    ctl_history_t *h = arg;
    ctl_store_reader_t *reader = NULL;
    h->rc = ctl_store_reader_open(h->path, &reader, h->err, sizeof h->err);
    if (h->rc == 0) {
        h->rows = xmalloc((size_t)h->limit * sizeof *h->rows);
        ctl_history_walk_t w = {.until_us = h->until_us, .after_end_us = h->after_end,
                                .after_id = (uint64_t)h->after_id,
                                .need_name = h->jobnames.n > 0,
                                .scan_max = CTL_HISTORY_SCAN_MAX, .want = history_want,
                                .take = history_take, .ud = h};
        h->rc = ctl_store_history_walk(reader, &w, h->err, sizeof h->err);
        h->scanned = w.scanned;
        h->more = w.more;
        h->next_end = w.last_end_us;
        h->next_id = (int64_t)w.last_id;
    }
    ctl_store_reader_close(reader);
    ssize_t n;
    do
        n = write(h->pipe[1], "", 1);
    while (n < 0 && errno == EINTR);
    return NULL;
}

/* ---- the answer ---- */

static void history_write(ctl_history_t *h, ctl_buf_t *b) {
    ctl_buf_puts(b, "{\"jobs\":[");
    for (size_t i = 0; i < h->nrows; i++) {
        hrow_t *r = &h->rows[i];
        int64_t elapsed_us = r->start_us >= 0 && r->end_us >= r->start_us ? r->end_us - r->start_us : 0;
        ctl_buf_puts(b, i ? ",{\"id\":" : "{\"id\":");
        ctl_buf_u64(b, r->id);
        ctl_buf_puts(b, ",\"name\":");
        ctl_buf_jstr(b, r->name ? r->name : "");
        ctl_buf_puts(b, ",\"tenant\":");
        ctl_buf_jstr(b, r->tenant);
        ctl_buf_puts(b, ",\"state\":");
        ctl_buf_jstr(b, r->state);
        ctl_buf_puts(b, ",\"exit_code\":");
        if (r->has_exit)
            ctl_buf_i64(b, r->exit_code);
        else
            ctl_buf_puts(b, "null");
        ctl_buf_puts(b, ",\"reason\":");
        ctl_buf_jstr(b, r->reason ? r->reason : "");
        ctl_buf_puts(b, ",\"pool\":");
        if (r->pool)
            ctl_buf_jstr(b, r->pool);
        else
            ctl_buf_puts(b, "null");
        ctl_buf_puts(b, ",\"submit_time\":");
        ctl_buf_time(b, r->submit_us);
        ctl_buf_puts(b, ",\"start_time\":");
        ctl_buf_time(b, r->start_us);
        ctl_buf_puts(b, ",\"end_time\":");
        ctl_buf_time(b, r->end_us);
        ctl_buf_puts(b, ",\"elapsed\":");
        ctl_buf_time(b, elapsed_us);
        ctl_buf_printf(b, ",\"time_limit\":%lld,\"tasks\":%lld,\"gpus\":", (long long)r->time_limit,
                       (long long)r->tasks);
        ctl_buf_milli(b, r->gpu_milli);
        ctl_buf_puts(b, ",\"gpu_hours\":");
        ctl_buf_double(b, (double)r->gpu_milli / 1000.0 * (double)elapsed_us / 3.6e9);
        ctl_buf_putc(b, '}');
    }
    ctl_buf_printf(b, "],\"scanned\":%lld,\"next_after\":", (long long)h->scanned);
    if (h->more)
        ctl_buf_printf(b, "\"%lld:%lld\"}\n", (long long)h->next_end, (long long)h->next_id);
    else
        ctl_buf_puts(b, "null}\n");
}

static void history_free(ctl_history_t *h) {
    for (size_t i = 0; i < h->nrows; i++) {
        hrow_t *r = &h->rows[i];
        free(r->name);
        free(r->tenant);
        free(r->state);
        free(r->reason);
        free(r->pool);
    }
    free(h->rows);
    free(h->tenants.buf);
    free(h->states.buf);
    free(h->jobnames.buf);
    free(h->path);
    if (h->ev)
        event_free(h->ev);
    if (h->pipe[0] >= 0)
        close(h->pipe[0]);
    if (h->pipe[1] >= 0)
        close(h->pipe[1]);
    free(h);
}

static void unlink_from(ctl_history_t *h) {
    for (ctl_history_t **p = h->list; *p; p = &(*p)->next)
        if (*p == h) {
            *p = h->next;
            return;
        }
}

static void history_ready(evutil_socket_t fd, short what, void *arg) {
    ctl_history_t *h = arg;
    (void)fd;
    (void)what;
    pthread_join(h->thread, NULL);
    unlink_from(h);
    ctl_buf_t b;
    ctl_buf_init(&b);
    int status = 200;
    if (h->rc == 0) {
        history_write(h, &b);
    } else {
        status = 500;
        ctl_buf_puts(&b, h->err);
        sl_log(SL_LOG_ERROR, "history", "%s", h->err);
    }
    h->done(h->ud, h->req, status, &b);
    history_free(h);
}

#define BAD(st, f, ...)                                                                          \
    do {                                                                                         \
        snprintf(field, flen, "%s", f);                                                          \
        snprintf(msg, mlen, __VA_ARGS__);                                                        \
        history_free(h);                                                                         \
        return st;                                                                               \
    } while (0)

int ctl_history_start(ctl_t *c, const struct evkeyvalq *q, bool admin, int32_t tenant,
                      ctl_history_done_fn done, void *ud, struct evhttp_request *req,
                      ctl_history_t **list, char *field, size_t flen, char *msg, size_t mlen) {
    ctl_history_t *h = xmalloc(sizeof *h);
    int64_t now = ctl_now_us();
    *h = (ctl_history_t){.done = done, .ud = ud, .req = req, .list = list, .pipe = {-1, -1},
                         .until_us = now, .since_us = now - 86400LL * 1000000,
                         .after_end = INT64_MIN, .after_id = -1,
                         .limit = CTL_HISTORY_LIMIT_DEFAULT};
    const char *v;
    int64_t s;
    if ((v = evhttp_find_header(q, "since"))) {
        if (!seconds(v, &s))
            BAD(400, "since", "since: must be whole seconds since 1970-01-01 UTC");
        h->since_us = s * 1000000;
    }
    if ((v = evhttp_find_header(q, "until"))) {
        if (!seconds(v, &s))
            BAD(400, "until", "until: must be whole seconds since 1970-01-01 UTC");
        h->until_us = s * 1000000 + 999999;
    }
    if (h->until_us < h->since_us)
        BAD(400, "until", "until: must not be before since");
    if ((v = evhttp_find_header(q, "limit")) &&
        (!seconds(v, &h->limit) || h->limit < 1 || h->limit > CTL_HISTORY_LIMIT_MAX))
        BAD(400, "limit", "limit: must be a whole number from 1 to %d", CTL_HISTORY_LIMIT_MAX);
    if ((v = evhttp_find_header(q, "after"))) {
        long long e, id;
        char tail;
        if (sscanf(v, "%lld:%lld%c", &e, &id, &tail) != 2 || e < 0 || id < 0)
            BAD(400, "after", "after: must be the next_after of the page before (END:ID)");
        h->after_end = e;
        h->after_id = id;
    }
    /* The walk starts after (after_end, after_id): end_us >= after_end
     * bounds the index range, and (end_us > after_end OR id > after_id)
     * drops the rows of that end time up to after_id. (A row value
     * (end_us, id) > (a, b) gives the same rows, but SQLite 3.40 then walks
     * the index from the window's start: 40 ms a page half way through a
     * million rows instead of 0.3 ms.) Without a page before, the walk
     * starts at the window's start. */
    if (h->after_end < h->since_us) {
        h->after_end = h->since_us;
        h->after_id = -1;
    }
    if ((v = evhttp_find_header(q, "state"))) {
        if (names_parse(v, &h->states) < 0)
            BAD(400, "state", "state: one to %d of succeeded, failed, cancelled, comma-separated",
                CTL_HISTORY_MAX_NAMES);
        for (size_t i = 0; i < h->states.n; i++) {
            const char *st = h->states.v[i];
            if (strcmp(st, "succeeded") && strcmp(st, "failed") && strcmp(st, "cancelled"))
                BAD(400, "state", "state: \"%s\" is not a finished state (succeeded, failed, "
                    "cancelled)", st);
        }
    }
    if ((v = evhttp_find_header(q, "name")) && names_parse(v, &h->jobnames) < 0)
        BAD(400, "name", "name: one to %d job names, comma-separated", CTL_HISTORY_MAX_NAMES);
    if ((v = evhttp_find_header(q, "tenant"))) {
        if (names_parse(v, &h->tenants) < 0)
            BAD(400, "tenant", "tenant: one to %d tenants, comma-separated", CTL_HISTORY_MAX_NAMES);
        const char *own = admin ? NULL : sl_sched_tenant_name(c->sched, tenant);
        for (size_t i = 0; i < h->tenants.n && own; i++)
            if (strcmp(h->tenants.v[i], own) != 0)
                BAD(403, "tenant", "tenant: this token sees its own tenant's history only");
    } else if (!admin) {
        names_parse(sl_sched_tenant_name(c->sched, tenant), &h->tenants);
    }
    size_t inflight = 0;
    for (ctl_history_t *p = *list; p; p = p->next)
        inflight++;
    if (inflight >= CTL_HISTORY_MAX_INFLIGHT)
        BAD(503, "", "%zu history reads are running; retry in a second", inflight);
    h->path = xstrdup(c->cfg.state);
    int err;
    if (pipe2(h->pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
        err = errno;
        goto fail;
    }
    h->ev = event_new(c->loop->base, h->pipe[0], EV_READ, history_ready, h);
    if (h->ev == NULL || event_add(h->ev, NULL) != 0) {
        err = ENOMEM;
        goto fail;
    }
    if ((err = pthread_create(&h->thread, NULL, history_main, h)) != 0)
        goto fail;
    h->next = *list;
    *list = h;
    return 0;
fail:
    sl_log(SL_LOG_ERROR, "history", "cannot start a history read: %s", strerror(err));
    BAD(500, "", "cannot start the history read (see the log)");
}

void ctl_history_abandon_all(ctl_history_t **list) {
    while (*list) {
        ctl_history_t *h = *list;
        *list = h->next;
        pthread_join(h->thread, NULL);
        history_free(h);
    }
}
