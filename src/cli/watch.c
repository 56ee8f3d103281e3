/*
 * watch.c - `sluice queue --watch` and `sluice show --watch`: waits on the
 * controller's event stream (GET /v1/events, docs/api.md "Events") for
 * the next change worth a reprint.
 *
 * Each wait is one request: the stream is read until a relevant event
 * arrives, then dropped (the sink stops it with ECANCELED, which the
 * client keeps quiet), and the next wait resumes after the last id seen
 * (?last_event_id=), so nothing that happened while the command printed
 * is missed. The first wait returns at the stream's hello, which gives
 * the id to resume from: print, then wait. A "reset" (the id is no longer
 * kept) counts as a change: the caller lists again.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"

typedef struct wstate {
    cli_sse_t sse;
    unsigned long long last;
    long long job;         /* > 0: only this job's events count */
    bool first;            /* return at the hello */
    bool matched;
    char what[48];         /* the matching event's name */
} wstate_t;

/* One frame ("id:", "event:", "data:" lines; comments ignored). */
static void frame(void *ud, char *f) {
    wstate_t *w = ud;
    char ev[48] = "message";
    const char *data = NULL;
    unsigned long long id = 0;
    bool has_id = false;
    for (char *line = strtok(f, "\n"); line; line = strtok(NULL, "\n")) {
        if (strncmp(line, "id: ", 4) == 0) {
            id = strtoull(line + 4, NULL, 10);
            has_id = true;
        } else if (strncmp(line, "event: ", 7) == 0) {
            snprintf(ev, sizeof ev, "%s", line + 7);
        } else if (strncmp(line, "data: ", 6) == 0) {
            data = line + 6;
        }
    }
    if (has_id)
        w->last = id;
    bool hit = false;
    if (strcmp(ev, "hello") == 0) {
        hit = w->first;
    } else if (strcmp(ev, "reset") == 0) {
        hit = true;
    } else if (strncmp(ev, "job.", 4) == 0) {
        hit = w->job <= 0;
        if (!hit && data) {
            json_t *o = json_loads(data, 0, NULL);
            json_t *j = json_object_get(o, "job");
            hit = json_integer_value(json_object_get(j, "id")) == w->job ||
                  json_integer_value(json_object_get(j, "array_id")) == w->job;
            json_decref(o);
        }
    }
    if (hit && !w->matched) {
        w->matched = true;
        snprintf(w->what, sizeof w->what, "%s", ev);
    }
}

void cli_sse_feed(cli_sse_t *s, const char *p, size_t n, void (*on_frame)(void *ud, char *f), void *ud) {
    if (s->len + n + 1 > s->cap) {
        size_t cap = s->cap ? s->cap : 4096;
        while (cap < s->len + n + 1)
            cap *= 2;
        char *nb = realloc(s->buf, cap);
        if (nb == NULL)
            abort();
        s->buf = nb;
        s->cap = cap;
    }
    memcpy(s->buf + s->len, p, n);
    s->len += n;
    s->buf[s->len] = '\0';
    char *end;
    while ((end = strstr(s->buf, "\n\n")) != NULL) {
        *end = '\0';
        on_frame(ud, s->buf);
        size_t used = (size_t)(end + 2 - s->buf);
        memmove(s->buf, end + 2, s->len - used + 1);
        s->len -= used;
    }
}

void cli_sse_fini(cli_sse_t *s) {
    free(s->buf);
    *s = (cli_sse_t){0};
}

static int sink(void *arg, const char *p, size_t n) {
    wstate_t *w = arg;
    cli_sse_feed(&w->sse, p, n, frame, w);
    if (w->matched) {
        errno = ECANCELED; /* enough: the caller reprints */
        return -1;
    }
    return 0;
}

int cli_watch_wait(cli_t *c, unsigned long long *last, long long job, char *what, size_t whatlen) {
    wstate_t w = {.last = *last, .job = job, .first = *last == 0};
    char path[96] = "/v1/events?heartbeat=10";
    if (*last)
        snprintf(path, sizeof path, "/v1/events?heartbeat=10&last_event_id=%llu", *last);
    int idle = c->stream_idle_ms;
    c->stream_idle_ms = 35000; /* three heartbeats missed: the controller is gone */
    cli_reply_t r;
    int rc = cli_http_raw(c, "GET", path, NULL, 0, &r, sink, &w);
    c->stream_idle_ms = idle;
    cli_sse_fini(&w.sse);
    if (w.matched) {
        cli_reply_free(&r);
        *last = w.last;
        if (what)
            snprintf(what, whatlen, "%s", w.what);
        return CLI_OK;
    }
    if (rc == CLI_OK && (r.status < 200 || r.status > 299))
        rc = cli_reply_error(c, &r);
    else if (rc == CLI_OK) {
        fprintf(stderr, "sluice: the controller ended the event stream\n");
        rc = CLI_EUNREACHABLE;
    }
    cli_reply_free(&r);
    return rc;
}
