/*
 * drain.c - `sluice drain` and `sluice resume` (docs/cli.md).
 *
 * A deadline is given as a duration from now ("30m", "2h", "90s", "0") or
 * as a local time ("2026-12-01 06:30", "2026-12-01T06:30:00", or "06:30",
 * today or, once past, tomorrow); the server gets seconds since the epoch.
 */
#define _XOPEN_SOURCE 700
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "cli.h"
#include "jobspec.h"

/* D as seconds since the epoch. 0, or -1 (nothing printed). */
static int parse_deadline(const char *d, double *out) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    double now = (double)tv.tv_sec + tv.tv_usec / 1e6;
    char err[160];
    json_t *v = sl_jobspec_from_text(&sl_jobspec_fields[SL_JS_TIME_LIMIT], d, err, sizeof err);
    if (v != NULL) {
        *out = now + (double)json_integer_value(v);
        json_decref(v);
        return 0;
    }
    static const char *const fmts[] = {"%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M",
                                       "%Y-%m-%dT%H:%M", NULL};
    time_t t = (time_t)tv.tv_sec;
    struct tm tm;
    for (int i = 0; fmts[i]; i++) {
        memset(&tm, 0, sizeof tm); /* seconds not given are 0 */
        const char *end = strptime(d, fmts[i], &tm);
        if (end != NULL && *end == '\0') {
            tm.tm_isdst = -1;
            *out = (double)mktime(&tm);
            return 0;
        }
    }
    localtime_r(&t, &tm);
    const char *end = strptime(d, "%H:%M", &tm);
    if (end != NULL && *end == '\0') {
        tm.tm_sec = 0;
        tm.tm_isdst = -1;
        time_t at = mktime(&tm);
        if (at <= t) {
            tm.tm_mday++;
            tm.tm_isdst = -1;
            at = mktime(&tm);
        }
        *out = (double)at;
        return 0;
    }
    return -1;
}

/* Prints the node's new state, or the JSON. */
static int node_done(cli_t *c, json_t *out) {
    if (c->json) {
        cli_print_json(out);
        return CLI_OK;
    }
    json_t *d = json_object_get(out, "drain");
    char dl[80] = "none: it waits for its tasks to end";
    if (json_is_number(json_object_get(d, "deadline")))
        cli_local_time(json_number_value(json_object_get(d, "deadline")), dl, sizeof dl);
    printf("node %s: %s, %lld task(s)", json_string_value(json_object_get(out, "node")),
           json_string_value(json_object_get(out, "state")),
           (long long)json_integer_value(json_object_get(out, "tasks")));
    if (json_is_object(d)) printf("; deadline %s", dl);
    printf("\n");
    return CLI_OK;
}

/* POSTs body (taken) to path and prints the node it answers with. */
static int node_op(cli_t *c, const char *path, json_t *body) {
    json_t *out = NULL;
    int rc = cli_call(c, "POST", path, body, &out);
    json_decref(body);
    if (rc == CLI_OK) rc = node_done(c, out);
    json_decref(out);
    return rc;
}

int cli_cmd_drain(cli_t *c) {
    if (c->npos != 1) return cli_usage_error(c, "give one node name");
    json_t *body = json_pack("{s:s}", "node", c->pos[0]);
    const char *d = cli_get(c, "deadline");
    if (d != NULL) {
        double at;
        if (parse_deadline(d, &at) < 0) {
            json_decref(body);
            return cli_usage_error(c, "--deadline: \"%s\" is neither a duration (30m, 2h, 90s, 0) nor a "
                                      "local time (2026-12-01 06:30, 06:30)", d);
        }
        json_object_set_new(body, "deadline", json_real(at));
    }
    const char *r = cli_get(c, "reason");
    if (r != NULL) json_object_set_new(body, "reason", json_string(r));
    return node_op(c, "/v1/nodes/drain", body);
}

int cli_cmd_resume(cli_t *c) {
    if (c->npos != 1) return cli_usage_error(c, "give one node name");
    json_t *body = json_pack("{s:s}", "node", c->pos[0]);
    return node_op(c, "/v1/nodes/resume", body);
}
