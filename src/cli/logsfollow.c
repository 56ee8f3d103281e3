/*
 * logsfollow.c - `sluice logs -f`: a task's output from the controller's
 * log stream (GET /v1/jobs/{id}/logs/stream, docs/api.md "Log stream"),
 * printed as each piece arrives, until the task has ended and all of it
 * is out.
 *
 * A task that has not run yet (409) is waited for while its job is
 * pending. A stream that ends without its `eof` event (the controller
 * restarted, or went quiet for three heartbeats) is opened again from the
 * offset printed so far, so nothing is printed twice or lost.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"

typedef struct lstate {
    cli_sse_t sse;
    long long off;         /* printed up to here */
    bool eof;
    char error[256];       /* the stream's `error` event */
} lstate_t;

static void frame(void *ud, char *f) {
    lstate_t *w = ud;
    char ev[32] = "message";
    const char *data = NULL;
    for (char *line = strtok(f, "\n"); line; line = strtok(NULL, "\n")) {
        if (strncmp(line, "event: ", 7) == 0)
            snprintf(ev, sizeof ev, "%s", line + 7);
        else if (strncmp(line, "data: ", 6) == 0)
            data = line + 6;
    }
    if (data == NULL)
        return;
    json_t *o = json_loads(data, 0, NULL);
    if (strcmp(ev, "log") == 0) {
        json_t *d = json_object_get(o, "data");
        long long at = json_integer_value(json_object_get(o, "offset"));
        size_t n = json_string_length(d);
        const char *p = json_string_value(d);
        if (p && at + (long long)n > w->off) { /* what this run has not printed */
            size_t skip = at < w->off ? (size_t)(w->off - at) : 0;
            fwrite(p + skip, 1, n - skip, stdout);
            fflush(stdout);
            w->off = at + (long long)n;
        }
    } else if (strcmp(ev, "eof") == 0) {
        w->eof = true;
    } else if (strcmp(ev, "error") == 0) {
        snprintf(w->error, sizeof w->error, "%s",
                 json_string_value(json_object_get(o, "message")) ?: "the log stream failed");
    }
    json_decref(o);
}

static int sink(void *arg, const char *p, size_t n) {
    lstate_t *w = arg;
    cli_sse_feed(&w->sse, p, n, frame, w);
    return 0;
}

/* The job's state into st ("" when it cannot be read). */
static void state_of(cli_t *c, long long id, char *st, size_t len) {
    char path[64];
    snprintf(path, sizeof path, "/v1/jobs/%lld", id);
    json_t *j = NULL;
    long status = 0;
    st[0] = '\0';
    if (cli_http(c, "GET", path, NULL, &status, &j, NULL) == CLI_OK && status == 200)
        snprintf(st, len, "%s", json_string_value(json_object_get(j, "state")) ?: "");
    json_decref(j);
}

int cli_logs_follow(cli_t *c, long long id, long long task) {
    lstate_t w = {0};
    int rc = CLI_OK, broken = 0;
    while (!w.eof && !w.error[0]) {
        char path[128];
        snprintf(path, sizeof path, "/v1/jobs/%lld/logs/stream?task=%lld&offset=%lld", id, task, w.off);
        int idle = c->stream_idle_ms;
        c->stream_idle_ms = 50000; /* three heartbeats (15 s) missed: the controller is gone */
        cli_reply_t r;
        w.sse.len = 0; /* a frame cut by the last break is asked for again */
        long long before = w.off;
        rc = cli_http_raw(c, "GET", path, NULL, 0, &r, sink, &w);
        c->stream_idle_ms = idle;
        if (rc == CLI_OK && r.status == 409) {
            char st[32];
            state_of(c, id, st, sizeof st);
            if (strcmp(st, "pending") == 0) { /* not started yet: wait for it */
                cli_reply_free(&r);
                usleep(300000);
                continue;
            }
        }
        if (rc == CLI_OK && (r.status < 200 || r.status > 299)) {
            rc = cli_reply_error(c, &r);
            cli_reply_free(&r);
            break;
        }
        cli_reply_free(&r);
        if (w.eof || w.error[0])
            break;
        /* Ended without its eof: open it again from here; give up after
         * five breaks in a row that brought nothing new. */
        broken = w.off > before ? 0 : broken + 1;
        if (broken >= 5) {
            fprintf(stderr, "sluice logs: the log stream of job %lld task %lld keeps ending; "
                    "stopped at byte %lld\n", id, task, w.off);
            rc = rc == CLI_OK ? CLI_EUNREACHABLE : rc;
            break;
        }
        usleep(500000);
        rc = CLI_OK;
    }
    if (w.error[0]) {
        fprintf(stderr, "sluice logs: job %lld task %lld: %s\n", id, task, w.error);
        rc = CLI_ESERVER;
    }
    cli_sse_fini(&w.sse);
    return rc;
}
