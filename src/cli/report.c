/*
 * report.c - `sluice report [--since 24h] [--tenant T] [--json]`.
 *
 * Asks sluiced for GET /v1/report?since=SECONDS[&tenant=T] and prints it
 * for a person: rates per hour, delays in the largest unit that reads well
 * (ms, s, min, h), shares in %, GPU-hours, and the window's ends as local
 * dates in ISO form. The figures are the server's; how each is computed
 * is in docs/observability.md and src/ctl/views/report.c. --json prints the
 * server's JSON as it came.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "jobspec.h"

static double num(json_t *o, const char *k) {
    json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* A delay in seconds as "0.25 ms", "840 ms", "12.4 s", "3.5 min", "2.1 h". */
static void fmt_delay(double s, char *buf, size_t len) {
    if (isnan(s)) snprintf(buf, len, "-");
    else if (s < 0.001) snprintf(buf, len, "%.3g ms", s * 1000);
    else if (s < 1) snprintf(buf, len, "%.0f ms", s * 1000);
    else if (s < 60) snprintf(buf, len, "%.1f s", s);
    else if (s < 3600) snprintf(buf, len, "%.1f min", s / 60);
    else snprintf(buf, len, "%.1f h", s / 3600);
}

/* Epoch seconds as a local date in ISO form, "2026-12-01 04:28:30 UTC". */
static void fmt_date(double t, char *buf, size_t len) {
    time_t tt = (time_t)t;
    struct tm tm;
    localtime_r(&tt, &tm);
    strftime(buf, len, "%Y-%m-%d %H:%M:%S %Z", &tm);
}

static void fmt_pct(double r, char *buf, size_t len) {
    if (isnan(r)) snprintf(buf, len, "-");
    else snprintf(buf, len, "%.1f%%", r * 100);
}

static void print_delays(const char *label, json_t *d, const char *what, const char *none) {
    long long n = (long long)num(d, "jobs");
    if (n <= 0) {
        printf("%-18s %s\n", label, none);
        return;
    }
    char p50[32], p90[32], p99[32], mean[32], max[32];
    fmt_delay(num(d, "p50_seconds"), p50, sizeof p50);
    fmt_delay(num(d, "p90_seconds"), p90, sizeof p90);
    fmt_delay(num(d, "p99_seconds"), p99, sizeof p99);
    fmt_delay(num(d, "mean_seconds"), mean, sizeof mean);
    fmt_delay(num(d, "max_seconds"), max, sizeof max);
    printf("%-18s p50 %s, p90 %s, p99 %s (mean %s, max %s; %lld job%s, %s)\n", label, p50, p90,
           p99, mean, max, n, n == 1 ? "" : "s", what);
}

static void print_report(json_t *r) {
    json_t *w = json_object_get(r, "window");
    char from[64], to[64];
    fmt_date(num(w, "since"), from, sizeof from);
    fmt_date(num(w, "until"), to, sizeof to);
    const char *tenant = json_string_value(json_object_get(r, "tenant"));
    double hours = num(w, "seconds") / 3600;
    printf("Report from %s to %s (%.4g hours), %s%s\n\n", from, to, hours,
           tenant ? "tenant " : "all tenants", tenant ? tenant : "");

    json_t *t = json_object_get(r, "throughput");
    printf("%-18s %.4g jobs per hour (%lld jobs ran and ended: %lld succeeded, %lld failed, "
           "%lld cancelled)\n", "Throughput", num(t, "jobs_per_hour"), (long long)num(t, "jobs_ran"),
           (long long)num(t, "succeeded"), (long long)num(t, "failed"), (long long)num(t, "cancelled"));
    print_delays("Queueing delay", json_object_get(r, "queueing_delay"), "submit to start",
                 "no job ran and ended in the window");
    print_delays("Scheduling delay", json_object_get(r, "scheduling_delay"),
                 "the scheduler's decision time", "no scheduling delay recorded for these jobs");

    /* A tenant's token gets its own figures and the cluster's capacity
     * (scope "tenant"): nothing computed from the other tenants' use. */
    const char *scope = json_string_value(json_object_get(r, "scope"));
    bool own = scope && strcmp(scope, "tenant") == 0;
    char a[32], b[32];
    json_t *al = json_object_get(r, "gpu_allocation");
    fmt_pct(num(al, "ratio"), a, sizeof a);
    printf("%-18s %s of the cluster%s (%.1f of %.1f GPU-hours; %g GPUs now, taken for the whole "
           "window)\n", "GPU allocation", a, own ? " held by this tenant" : "",
           num(al, "gpu_hours_allocated"), num(al, "gpu_hours_available"),
           num(al, "capacity_gpus"));
    json_t *u = json_object_get(r, "gpu_utilization");
    if (num(u, "jobs_with_data") > 0) {
        fmt_pct(num(u, "mean_ratio"), a, sizeof a);
        fmt_pct(num(u, "idle_memory_ratio"), b, sizeof b);
        long long nj = (long long)num(u, "jobs_with_data");
        printf("%-18s %s mean of the allocated GPUs (%lld job%s with agent summaries, %.1f of "
               "%.1f GPU-hours)\n", "GPU utilisation", a, nj, nj == 1 ? "" : "s",
               num(u, "gpu_hours_with_data"), num(u, "gpu_hours"));
        printf("%-18s %s of the allocated GPUs' memory never used (1 - peak / total per GPU)\n",
               "Idle GPU memory", b);
    } else {
        printf("%-18s no utilisation data (no agent summaries for jobs in the window)\n",
               "GPU utilisation");
        printf("%-18s no utilisation data\n", "Idle GPU memory");
    }
    printf("%-18s a live gauge only: sluice_gpu_fragmentation_ratio in /metrics (Prometheus "
           "keeps its history)\n", "Fragmentation");
    json_t *f = json_object_get(r, "fairness");
    if (own)
        printf("%-18s not shown to a tenant's token: it is computed from every tenant's use "
               "(the admin or the monitoring token sees it)\n", "Fairness");
    else if (num(f, "tenants") > 0)
        printf("%-18s min/max of usage to fair share %.2f, Jain's index %.2f, over %lld tenants "
               "with demand\n", "Fairness", num(f, "min_over_max"), num(f, "jain_index"),
               (long long)num(f, "tenants"));
    else
        printf("%-18s no GPU-hours used in the window\n", "Fairness");

    printf("\n%-16s %6s %8s %10s %7s %10s %10s\n", "TENANT", "WEIGHT", "JOBS", "GPU-HOURS", "USAGE",
           "FAIR SHARE", "USAGE/FAIR");
    size_t i;
    json_t *te;
    json_array_foreach(json_object_get(r, "tenants"), i, te) {
        char wt[16], us[16], fs[16], q[16];
        double wv = num(te, "weight"), qv = num(te, "usage_to_fair");
        snprintf(wt, sizeof wt, isnan(wv) ? "-" : "%g", wv);
        fmt_pct(num(te, "usage_share"), us, sizeof us);
        fmt_pct(num(te, "fair_share"), fs, sizeof fs);
        snprintf(q, sizeof q, isnan(qv) ? "-" : "%.2f", qv);
        printf("%-16s %6s %8lld %10.1f %7s %10s %10s\n",
               json_string_value(json_object_get(te, "name")), wt, (long long)num(te, "jobs"),
               num(te, "gpu_hours"), us, fs, q);
    }
}

int cli_cmd_report(cli_t *c) {
    if (c->npos > 0) return cli_usage_error(c, "unexpected argument \"%s\"", c->pos[0]);
    int64_t since = 86400;
    const char *v = cli_get(c, "since");
    if (v && (sl_jobspec_parse_duration(v, &since) != 0 || since < 1))
        return cli_usage_error(c, "--since: \"%s\" is not a duration (e.g. 90m, 24h, 30d, 1h30m)", v);
    char path[320];
    int n = snprintf(path, sizeof path, "/v1/report?since=%lld", (long long)since);
    if ((v = cli_get(c, "tenant")) != NULL) {
        /* Percent-encoded: a tenant's name may hold any character. */
        size_t k = (size_t)n;
        k += (size_t)snprintf(path + k, sizeof path - k, "&tenant=");
        for (const unsigned char *p = (const unsigned char *)v; *p && k + 4 < sizeof path; p++) {
            if ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                *p == '-' || *p == '_' || *p == '.')
                path[k++] = (char)*p;
            else
                k += (size_t)snprintf(path + k, sizeof path - k, "%%%02X", *p);
        }
        path[k] = '\0';
    }
    json_t *out = NULL;
    int rc = cli_call(c, "GET", path, NULL, &out);
    if (rc != CLI_OK) return rc;
    if (c->json) cli_print_json(out);
    else print_report(out);
    json_decref(out);
    return CLI_OK;
}
