/*
 * history.c - `sluice history` (`sluice sacct`): finished jobs, as sacct
 * shows them, from GET /v1/history a page at a time.
 *
 * The window is given in Slurm's time formats (sacct -S/-E, local time),
 * the default since midnight as sacct's; states in Slurm's names, which
 * the server's three finished states and the job's reason decide
 * (COMPLETED = succeeded; TIMEOUT, OUT_OF_MEMORY, NODE_FAIL and FAILED
 * are failed jobs told apart by their reason; CANCELLED). Columns are
 * chosen with --format as in sacct (NAME or NAME%WIDTH); --json prints the
 * server's job objects.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "cli.h"

/* ---- Slurm's time formats ---- */

/* mktime of tm, or -1 when its month or day is out of range (mktime
 * would roll 20/26 over into a later year without a word). */
static long long checked(struct tm *tm) {
    if (tm->tm_mon < 0 || tm->tm_mon > 11 || tm->tm_mday < 1 || tm->tm_mday > 31)
        return -1;
    return mktime(tm);
}

/* Seconds since the epoch of s in local time, or -1. Formats (sacct):
 * YYYY-MM-DD[THH:MM[:SS]], MM/DD[/YY], MMDD[YY], HH:MM[:SS] (today),
 * now[{+|-}N[seconds|minutes|hours|days|weeks]], today, midnight, noon,
 * elevenses, fika, teatime. */
static long long slurm_when(const char *s, time_t now) {
    struct tm tm;
    localtime_r(&now, &tm);
    tm.tm_isdst = -1;
    int a, b, c, d, e, f, n = 0;
    char unit[16] = "";
    if (strncasecmp(s, "now", 3) == 0) {
        if (s[3] == '\0')
            return now;
        long long k;
        if (sscanf(s + 3, "%lld%15[a-z]%n", &k, unit, &n) < 1)
            return -1;
        if (n == 0) /* no unit */
            sscanf(s + 3, "%lld%n", &k, &n);
        if (s[3 + n] != '\0' || (s[3] != '+' && s[3] != '-'))
            return -1;
        long long mul = 1;
        if (unit[0] == '\0' || strncmp(unit, "seconds", strlen(unit)) == 0) mul = 1;
        else if (strncmp(unit, "minutes", strlen(unit)) == 0) mul = 60;
        else if (strncmp(unit, "hours", strlen(unit)) == 0) mul = 3600;
        else if (strncmp(unit, "days", strlen(unit)) == 0) mul = 86400;
        else if (strncmp(unit, "weeks", strlen(unit)) == 0) mul = 7 * 86400;
        else return -1;
        return now + k * mul;
    }
    static const struct { const char *w; int h, m; } words[] = {
        {"today", 0, 0}, {"midnight", 0, 0}, {"noon", 12, 0}, {"elevenses", 11, 0},
        {"fika", 15, 0}, {"teatime", 16, 0}};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strcasecmp(s, words[i].w) == 0) {
            tm.tm_hour = words[i].h;
            tm.tm_min = words[i].m;
            tm.tm_sec = 0;
            return mktime(&tm);
        }
    tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
    if (sscanf(s, "%4d-%2d-%2d%n", &a, &b, &c, &n) == 3 && n == 10) {
        tm.tm_year = a - 1900;
        tm.tm_mon = b - 1;
        tm.tm_mday = c;
        s += n;
        if (*s == '\0')
            return checked(&tm);
        if (*s != 'T')
            return -1;
        s++;
    } else if (sscanf(s, "%2d/%2d%n", &a, &b, &n) == 2 && (s[n] == '\0' || s[n] == '/')) {
        tm.tm_mon = a - 1;
        tm.tm_mday = b;
        if (s[n] == '/') {
            int m = 0;
            if (sscanf(s + n + 1, "%2d%n", &c, &m) != 1 || s[n + 1 + m] != '\0')
                return -1;
            tm.tm_year = 100 + c;
        }
        return checked(&tm);
    } else if ((strlen(s) == 4 || strlen(s) == 6) && strspn(s, "0123456789") == strlen(s)) {
        sscanf(s, "%2d%2d", &a, &b);
        tm.tm_mon = a - 1;
        tm.tm_mday = b;
        if (strlen(s) == 6 && sscanf(s + 4, "%2d", &c) == 1)
            tm.tm_year = 100 + c;
        return checked(&tm);
    }
    /* HH:MM[:SS], alone (today) or after the date's T. */
    n = 0;
    if (sscanf(s, "%2d:%2d%n", &d, &e, &n) != 2)
        return -1;
    f = 0;
    if (s[n] == ':') {
        int m = 0;
        if (sscanf(s + n + 1, "%2d%n", &f, &m) != 1)
            return -1;
        n += 1 + m;
    }
    if (s[n] != '\0' || d > 23 || e > 59 || f > 60)
        return -1;
    tm.tm_hour = d;
    tm.tm_min = e;
    tm.tm_sec = f;
    return checked(&tm);
}

/* ---- columns ---- */

/* Slurm's state of a finished job: its Sluice state, and for a failed one
 * its reason. */
static const char *slurm_state(json_t *j) {
    const char *st = json_string_value(json_object_get(j, "state"));
    const char *why = json_string_value(json_object_get(j, "reason"));
    if (st == NULL) return "UNKNOWN";
    if (strcmp(st, "succeeded") == 0) return "COMPLETED";
    if (strcmp(st, "cancelled") == 0) return "CANCELLED";
    if (why && strncmp(why, "time limit", 10) == 0) return "TIMEOUT";
    if (why && strncmp(why, "OOMKilled", 9) == 0) return "OUT_OF_MEMORY";
    if (why && strstr(why, "lost with node")) return "NODE_FAIL";
    return "FAILED";
}

static void fmt_time(json_t *v, char *buf, size_t len) {
    if (!json_is_number(v)) {
        snprintf(buf, len, "Unknown");
        return;
    }
    time_t t = (time_t)json_number_value(v);
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
}

/* [D-]HH:MM:SS as Slurm writes durations. */
static void fmt_dur(long long s, char *buf, size_t len) {
    if (s >= 86400)
        snprintf(buf, len, "%lld-%02lld:%02lld:%02lld", s / 86400, s % 86400 / 3600, s % 3600 / 60,
                 s % 60);
    else
        snprintf(buf, len, "%02lld:%02lld:%02lld", s / 3600, s % 3600 / 60, s % 60);
}

static void fmt_gpus(json_t *v, char *buf, size_t len) {
    double g = json_number_value(v);
    if (g == (double)(long long)g)
        snprintf(buf, len, "%lld", (long long)g);
    else
        snprintf(buf, len, "%.3g", g);
}

typedef enum col_id {
    C_JOBID, C_JOBNAME, C_TENANT, C_STATE, C_EXITCODE, C_REASON, C_SUBMIT, C_START, C_END,
    C_ELAPSED, C_ELAPSEDRAW, C_NTASKS, C_ALLOCGPUS, C_ALLOCTRES, C_GPUHOURS, C_PARTITION,
    C_TIMELIMIT
} col_id_t;

static const struct { const char *name; const char *alias; col_id_t id; int width; } cols[] = {
    {"JobID", NULL, C_JOBID, 12},       {"JobName", NULL, C_JOBNAME, 10},
    {"Tenant", "Account", C_TENANT, 10}, {"State", NULL, C_STATE, 10},
    {"ExitCode", NULL, C_EXITCODE, 8},  {"Reason", NULL, C_REASON, 30},
    {"Submit", NULL, C_SUBMIT, 19},     {"Start", NULL, C_START, 19},
    {"End", NULL, C_END, 19},           {"Elapsed", NULL, C_ELAPSED, 10},
    {"ElapsedRaw", NULL, C_ELAPSEDRAW, 10}, {"NTasks", NULL, C_NTASKS, 8},
    {"AllocGPUs", "GPUs", C_ALLOCGPUS, 9}, {"AllocTRES", NULL, C_ALLOCTRES, 12},
    {"GPUHours", NULL, C_GPUHOURS, 9},  {"Partition", "Pool", C_PARTITION, 10},
    {"Timelimit", NULL, C_TIMELIMIT, 10},
};
#define NCOLS (sizeof cols / sizeof cols[0])
#define MAX_FMT 32

typedef struct fmt_col {
    size_t col;
    int width;
} fmt_col_t;

static void cell(json_t *j, col_id_t id, char *buf, size_t len) {
    json_t *v;
    double el = json_number_value(json_object_get(j, "elapsed"));
    switch (id) {
    case C_JOBID: snprintf(buf, len, "%lld", (long long)json_integer_value(json_object_get(j, "id"))); break;
    case C_JOBNAME: snprintf(buf, len, "%s", json_string_value(json_object_get(j, "name"))); break;
    case C_TENANT: snprintf(buf, len, "%s", json_string_value(json_object_get(j, "tenant"))); break;
    case C_STATE: snprintf(buf, len, "%s", slurm_state(j)); break;
    case C_EXITCODE: {
        /* code:signal, as sacct */
        const char *why = json_string_value(json_object_get(j, "reason"));
        int sig = 0;
        const char *k = why ? strstr(why, "killed by signal ") : NULL;
        if (k)
            sig = atoi(k + 17);
        v = json_object_get(j, "exit_code");
        snprintf(buf, len, "%lld:%d", json_is_integer(v) ? (long long)json_integer_value(v) : 0, sig);
        break;
    }
    case C_REASON: snprintf(buf, len, "%s", json_string_value(json_object_get(j, "reason"))); break;
    case C_SUBMIT: fmt_time(json_object_get(j, "submit_time"), buf, len); break;
    case C_START: fmt_time(json_object_get(j, "start_time"), buf, len); break;
    case C_END: fmt_time(json_object_get(j, "end_time"), buf, len); break;
    case C_ELAPSED: fmt_dur((long long)el, buf, len); break;
    case C_ELAPSEDRAW: snprintf(buf, len, "%lld", (long long)el); break;
    case C_NTASKS: snprintf(buf, len, "%lld", (long long)json_integer_value(json_object_get(j, "tasks"))); break;
    case C_ALLOCGPUS: fmt_gpus(json_object_get(j, "gpus"), buf, len); break;
    case C_ALLOCTRES: {
        char g[32];
        fmt_gpus(json_object_get(j, "gpus"), g, sizeof g);
        snprintf(buf, len, "gres/gpu=%s", g);
        break;
    }
    case C_GPUHOURS: snprintf(buf, len, "%.2f", json_number_value(json_object_get(j, "gpu_hours"))); break;
    case C_PARTITION:
        v = json_object_get(j, "pool");
        snprintf(buf, len, "%s", json_is_string(v) ? json_string_value(v) : "");
        break;
    case C_TIMELIMIT: {
        long long t = (long long)json_integer_value(json_object_get(j, "time_limit"));
        if (t == 0)
            snprintf(buf, len, "UNLIMITED");
        else
            fmt_dur(t, buf, len);
        break;
    }
    }
}

static int parse_format(cli_t *c, const char *s, fmt_col_t *out, int *n) {
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", s);
    char *save = NULL;
    *n = 0;
    for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        char *pct = strchr(w, '%');
        int width = -1;
        if (pct) {
            *pct = '\0';
            char *end;
            long v = strtol(pct + 1, &end, 10);
            if (end == pct + 1 || *end || v < -1000 || v > 1000)
                return cli_usage_error(c, "--format: \"%s%%%s\": the width after %% must be a "
                                       "whole number", w, pct + 1);
            width = (int)(v < 0 ? -v : v);
        }
        size_t k = 0;
        while (k < NCOLS && strcasecmp(cols[k].name, w) != 0 &&
               !(cols[k].alias && strcasecmp(cols[k].alias, w) == 0))
            k++;
        if (k == NCOLS)
            return cli_usage_error(c, "--format: no column \"%s\" (see sluice help history)", w);
        if (*n == MAX_FMT)
            return cli_usage_error(c, "--format: at most %d columns", MAX_FMT);
        out[(*n)++] = (fmt_col_t){k, width >= 0 ? width : cols[k].width};
    }
    if (*n == 0)
        return cli_usage_error(c, "--format: give one or more columns");
    return CLI_OK;
}

/* ---- the command ---- */

static const struct { const char *a, *b, *server; } states[] = {
    {"CD", "COMPLETED", "succeeded"},  {"F", "FAILED", "failed"},
    {"TO", "TIMEOUT", "failed"},       {"OOM", "OUT_OF_MEMORY", "failed"},
    {"NF", "NODE_FAIL", "failed"},     {"CA", "CANCELLED", "cancelled"},
};
#define NSTATES (sizeof states / sizeof states[0])

static void url_add(char *q, size_t len, const char *key, const char *val) {
    size_t l = strlen(q);
    snprintf(q + l, len - l, "%c%s=", l ? '&' : '?', key);
    l = strlen(q);
    for (const unsigned char *p = (const unsigned char *)val; *p && l + 4 < len; p++) {
        if (isalnum(*p) || *p == '-' || *p == '_' || *p == '.' || *p == ',' || *p == ':')
            q[l++] = (char)*p;
        else
            l += (size_t)snprintf(q + l, len - l, "%%%02X", *p);
    }
    q[l] = '\0';
}

/* Whether id is in list (comma-separated ids). */
static bool id_listed(const char *list, long long id) {
    for (const char *p = list; *p;) {
        char *end;
        long long v = strtoll(p, &end, 10);
        if (end != p && v == id)
            return true;
        p = *end ? end + 1 : end; /* the list holds only digits and commas */
    }
    return false;
}

int cli_cmd_history(cli_t *c) {
    if (c->npos > 0)
        return cli_usage_error(c, "unexpected argument \"%s\"", c->pos[0]);
    time_t now = time(NULL);
    long long since, until = now, limit = -1;
    const char *v;
    if ((v = cli_get(c, "starttime"))) {
        if ((since = slurm_when(v, now)) < 0)
            return cli_usage_error(c, "--starttime: \"%s\" is not a time (YYYY-MM-DD[THH:MM[:SS]], "
                                   "MM/DD[/YY], HH:MM[:SS], now-2hours, today, midnight)", v);
    } else {
        /* sacct -j: the job whenever it ended. */
        since = cli_get(c, "jobs") ? 0 : slurm_when("midnight", now);
    }
    const char *jobs = cli_get(c, "jobs");
    if (jobs && strspn(jobs, "0123456789,") != strlen(jobs))
        return cli_usage_error(c, "--jobs: \"%s\" is not a comma-separated list of job ids", jobs);
    if ((v = cli_get(c, "endtime")) && (until = slurm_when(v, now)) < 0)
        return cli_usage_error(c, "--endtime: \"%s\" is not a time (YYYY-MM-DD[THH:MM[:SS]], "
                               "MM/DD[/YY], HH:MM[:SS], now, now-1days)", v);
    if (until < since)
        return cli_usage_error(c, "--endtime is before --starttime");
    if ((v = cli_get(c, "limit"))) {
        char *end;
        limit = strtoll(v, &end, 10);
        if (end == v || *end || limit < 1 || limit > 1000000000LL)
            return cli_usage_error(c, "--limit: \"%s\" is not a whole number from 1 to 1000000000", v);
    }
    /* States: Slurm's names to the server's three, and which Slurm names to keep. */
    bool want[NSTATES] = {0}, any_state = false;
    char server_states[64] = "";
    if ((v = cli_get(c, "state"))) {
        char buf[256];
        snprintf(buf, sizeof buf, "%s", v);
        char *save = NULL;
        for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
            size_t k = 0;
            while (k < NSTATES && strcasecmp(states[k].a, w) && strcasecmp(states[k].b, w))
                k++;
            if (k == NSTATES)
                return cli_usage_error(c, "--state: \"%s\" is not COMPLETED (CD), FAILED (F), "
                                       "TIMEOUT (TO), OUT_OF_MEMORY (OOM), NODE_FAIL (NF) or "
                                       "CANCELLED (CA)", w);
            want[k] = any_state = true;
            if (!strstr(server_states, states[k].server)) {
                size_t l = strlen(server_states);
                snprintf(server_states + l, sizeof server_states - l, "%s%s", l ? "," : "",
                         states[k].server);
            }
        }
    }
    fmt_col_t fmt[MAX_FMT];
    int nfmt;
    const char *format = cli_get(c, "format");
    if (parse_format(c, format ? format : "JobID,JobName,Tenant,State,ExitCode,Elapsed,AllocGPUs,GPUHours",
                     fmt, &nfmt) != CLI_OK)
        return CLI_EUSAGE;

    char base[1024] = "", num[32];
    snprintf(num, sizeof num, "%lld", since);
    url_add(base, sizeof base, "since", num);
    snprintf(num, sizeof num, "%lld", until);
    url_add(base, sizeof base, "until", num);
    if ((v = cli_get(c, "tenant"))) url_add(base, sizeof base, "tenant", v);
    if ((v = cli_get(c, "name"))) url_add(base, sizeof base, "name", v);
    if (any_state) url_add(base, sizeof base, "state", server_states);

    json_t *all = json_array();
    char after[64] = "";
    int rc = CLI_OK;
    long long printed = 0;
    bool header = !cli_has(c, "noheader") && !c->json, parsable = cli_has(c, "parsable2");
    if (header) {
        for (int k = 0; k < nfmt; k++) {
            const char *h = cols[fmt[k].col].name;
            if (parsable)
                printf("%s%s", k ? "|" : "", h);
            else
                printf("%s%*.*s", k ? " " : "", fmt[k].width, fmt[k].width, h);
        }
        putchar('\n');
        if (!parsable) {
            for (int k = 0; k < nfmt; k++) {
                printf("%s", k ? " " : "");
                for (int w = 0; w < fmt[k].width; w++)
                    putchar('-');
            }
            putchar('\n');
        }
        header = false;
    }
    for (;;) {
        char path[1400];
        long long page = 10000;
        if (limit > 0 && limit - printed < page)
            page = limit - printed;
        snprintf(path, sizeof path, "/v1/history%s&limit=%lld", base, page);
        if (after[0]) {
            size_t l = strlen(path);
            snprintf(path + l, sizeof path - l, "&after=%s", after);
        }
        json_t *out = NULL;
        if ((rc = cli_call(c, "GET", path, NULL, &out)) != CLI_OK)
            break;
        size_t i;
        json_t *j;
        json_array_foreach(json_object_get(out, "jobs"), i, j) {
            if (limit > 0 && printed >= limit)
                break;
            if (jobs && !id_listed(jobs, json_integer_value(json_object_get(j, "id"))))
                continue;
            if (any_state) {
                const char *ss = slurm_state(j);
                bool keep = false;
                for (size_t k = 0; k < NSTATES; k++)
                    keep |= want[k] && strcmp(states[k].b, ss) == 0;
                if (!keep)
                    continue;
            }
            printed++;
            if (c->json) {
                json_array_append(all, j);
                continue;
            }
            for (int k = 0; k < nfmt; k++) {
                char buf[512];
                cell(j, cols[fmt[k].col].id, buf, sizeof buf);
                if (parsable)
                    printf("%s%s", k ? "|" : "", buf);
                else
                    printf("%s%*.*s", k ? " " : "", fmt[k].width, fmt[k].width, buf);
            }
            putchar('\n');
        }
        const char *next = json_string_value(json_object_get(out, "next_after"));
        snprintf(after, sizeof after, "%s", next ? next : "");
        json_decref(out);
        if (!next || (limit > 0 && printed >= limit))
            break;
    }
    if (rc == CLI_OK && c->json) {
        json_t *o = json_pack("{s:O}", "jobs", all);
        cli_print_json(o);
        json_decref(o);
    }
    json_decref(all);
    return rc;
}
