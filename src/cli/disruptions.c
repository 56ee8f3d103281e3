/*
 * disruptions.c - what `sluice show` and `sluice nodes` print of what
 * interrupts work: a job's preemptions and elastic size, and the nodes' drains. Times are
 * the viewer's local time, with the zone, as the rest of `sluice show`.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli.h"

void cli_local_time(double t, char *buf, size_t len) {
    time_t tt = (time_t)t;
    struct tm tm;
    if (localtime_r(&tt, &tm) == NULL || strftime(buf, len, "%Y-%m-%d %H:%M:%S %Z", &tm) == 0)
        snprintf(buf, len, "%.0f", t);
}

void cli_show_preemptions(json_t *j) {
    json_t *ps = json_object_get(j, "preemptions");
    if (json_array_size(ps) == 0) return;
    printf("preempted:\n");
    size_t i;
    json_t *p;
    json_array_foreach(ps, i, p) {
        char when[64];
        cli_local_time(json_number_value(json_object_get(p, "time")), when, sizeof when);
        json_t *by = json_object_get(p, "by_job");
        char who[96] = "";
        if (json_is_integer(by))
            snprintf(who, sizeof who, " for job %lld (tenant %s)", (long long)json_integer_value(by),
                     json_is_string(json_object_get(p, "by_tenant"))
                         ? json_string_value(json_object_get(p, "by_tenant")) : "?");
        printf("  %s  %s (%s)%s: %lld task(s), %.0f GPU-seconds lost; %s\n", when,
               json_string_value(json_object_get(p, "kind")),
               json_string_value(json_object_get(p, "cause")), who,
               (long long)json_integer_value(json_object_get(p, "tasks")),
               json_number_value(json_object_get(p, "gpu_seconds_lost")),
               json_string_value(json_object_get(p, "reason")));
    }
}

void cli_show_attempts(json_t *j) {
    json_t *at = json_object_get(j, "attempt");
    if (!json_is_integer(at)) return;
    printf("%-11s %lld of %lld\n", "attempt:", (long long)json_integer_value(at),
           (long long)json_integer_value(json_object_get(j, "retries")) + 1);
    json_t *ra = json_object_get(j, "retry_at");
    if (json_is_number(ra)) {
        char when[64];
        cli_local_time(json_number_value(ra), when, sizeof when);
        printf("%-11s %s\n", "retry at:", when);
    }
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(j, "attempts"), i, a) {
        char when[64] = "?";
        json_t *end = json_object_get(a, "end_time");
        if (json_is_number(end))
            cli_local_time(json_number_value(end), when, sizeof when);
        json_t *ex = json_object_get(a, "exit_code");
        char code[32] = "-";
        if (json_is_integer(ex))
            snprintf(code, sizeof code, "%lld", (long long)json_integer_value(ex));
        printf("  attempt %lld ended %s, exit %s: %s\n",
               (long long)json_integer_value(json_object_get(a, "attempt")), when, code,
               json_string_value(json_object_get(a, "reason")));
    }
}

void cli_show_size(json_t *j) {
    json_t *sz = json_object_get(j, "size");
    if (!json_is_integer(sz)) return;
    printf("%-11s %lld of %lld..%lld tasks\n", "size:", (long long)json_integer_value(sz),
           (long long)json_integer_value(json_object_get(j, "min_tasks")),
           (long long)json_integer_value(json_object_get(j, "tasks")));
    json_t *h = json_object_get(j, "size_history");
    size_t i;
    json_t *z;
    json_array_foreach(h, i, z) {
        char when[64];
        cli_local_time(json_number_value(json_object_get(z, "time")), when, sizeof when);
        printf("  %s  size %lld: %s\n", when, (long long)json_integer_value(json_object_get(z, "size")),
               json_string_value(json_object_get(z, "why")));
    }
}

void cli_print_drains(json_t *nodes) {
    size_t i;
    json_t *n;
    int first = 1;
    json_array_foreach(nodes, i, n) {
        json_t *d = json_object_get(n, "drain");
        if (!json_is_object(d)) continue;
        if (first) printf("\ndrains:\n");
        first = 0;
        char since[64], dl[80] = "none (waits for its tasks to end)";
        cli_local_time(json_number_value(json_object_get(d, "since")), since, sizeof since);
        if (json_is_number(json_object_get(d, "deadline")))
            cli_local_time(json_number_value(json_object_get(d, "deadline")), dl, sizeof dl);
        const char *r = json_string_value(json_object_get(d, "reason"));
        printf("  %s: %s since %s, deadline %s%s%s\n", json_string_value(json_object_get(n, "name")),
               json_string_value(json_object_get(n, "state")), since, dl, r && *r ? "; reason: " : "",
               r && *r ? r : "");
    }
}

void cli_print_gpu_health(json_t *nodes) {
    size_t i, k;
    json_t *n, *g;
    int first = 1;
    json_array_foreach(nodes, i, n) {
        json_t *h = json_object_get(n, "health");
        if (!json_is_object(h)) continue;
        const char *name = json_string_value(json_object_get(n, "name"));
        const char *st = json_string_value(json_object_get(h, "state"));
        const char *msg = json_string_value(json_object_get(h, "message"));
        if (st && strcmp(st, "healthy") != 0) {
            if (first) printf("\nhealth:\n");
            first = 0;
            printf("  %s: %s (%s)%s%s\n", name, st, json_string_value(json_object_get(h, "reason")),
                   msg && *msg ? ": " : "", msg && *msg ? msg : "");
        }
        json_array_foreach(json_object_get(h, "gpus"), k, g) {
            if (first) printf("\nhealth:\n");
            first = 0;
            bool fenced = json_is_true(json_object_get(g, "fenced"));
            const char *m = json_string_value(json_object_get(g, fenced ? "fence_reason" : "message"));
            printf("  %s GPU %lld: %s%s%s (%s)%s%s\n", name,
                   (long long)json_integer_value(json_object_get(g, "gpu")),
                   json_string_value(json_object_get(g, "state")), fenced ? ", fenced" : "",
                   json_is_true(json_object_get(g, "pinned")) ? " until resumed (flapping)" : "",
                   json_string_value(json_object_get(g, "reason")), m && *m ? ": " : "", m && *m ? m : "");
        }
    }
}
