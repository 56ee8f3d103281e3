/*
 * reservation.c - advance reservations on the command line (docs/cli.md,
 * docs/slurm.md): `sluice reservation create|list|show|delete`, the shape
 * of `scontrol create|show|delete reservation`, and the reservations
 * section of `sluice nodes`.
 *
 * Times are the user's: "now", "now+1hour" (Slurm's now[+COUNT[UNIT]],
 * UNIT seconds (the default), minutes, hours, days or weeks), a local date
 * and time (2026-12-01T10:00[:00], 2026-12-01 10:00, 2026-12-01) or a
 * local time of day (10:00: today, or tomorrow once past). Durations as
 * Slurm's reservations take them (a bare number is minutes; MM:SS,
 * HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS) or as Sluice's (90m, 2h, 1d,
 * 1h30m, 45s). The server gets seconds since the epoch.
 */
#define _XOPEN_SOURCE 700
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <time.h>

#include "cli.h"
#include "hostlist.h"
#include "jobspec.h"

static double now_s(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + tv.tv_usec / 1e6;
}

int cli_resv_parse_time(const char *s, double *out) {
    double now = now_s();
    if (strncasecmp(s, "now", 3) == 0) {
        const char *p = s + 3;
        if (*p == '\0') {
            *out = now;
            return 0;
        }
        if (*p != '+' || !isdigit((unsigned char)p[1])) return -1;
        char *end;
        long long n = strtoll(p + 1, &end, 10);
        static const struct { const char *unit; long long secs; } units[] = {
            {"", 1}, {"s", 1}, {"sec", 1}, {"secs", 1}, {"second", 1}, {"seconds", 1},
            {"m", 60}, {"min", 60}, {"mins", 60}, {"minute", 60}, {"minutes", 60},
            {"h", 3600}, {"hour", 3600}, {"hours", 3600}, {"d", 86400}, {"day", 86400},
            {"days", 86400}, {"week", 604800}, {"weeks", 604800}};
        for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
            if (strcasecmp(end, units[i].unit) == 0 && n >= 0 && n < 100LL * 365 * 86400) {
                *out = now + (double)(n * units[i].secs);
                return 0;
            }
        }
        return -1;
    }
    static const char *const fmts[] = {"%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M",
                                       "%Y-%m-%d %H:%M", "%Y-%m-%d", NULL};
    struct tm tm;
    for (int i = 0; fmts[i]; i++) {
        memset(&tm, 0, sizeof tm); /* what is not given is 0 */
        const char *end = strptime(s, fmts[i], &tm);
        if (end != NULL && *end == '\0') {
            tm.tm_isdst = -1;
            *out = (double)mktime(&tm);
            return 0;
        }
    }
    time_t t = (time_t)now;
    localtime_r(&t, &tm);
    const char *end = strptime(s, "%H:%M", &tm);
    if (end != NULL && (*end == '\0' || (*end == ':' && strptime(end + 1, "%S", &tm) &&
                                         strlen(end) == 3))) {
        if (*end == '\0') tm.tm_sec = 0;
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

/* Whole numbers separated as in fmt ("d-h:m:s"): 0 when s is all of it. */
static int fields(const char *s, long long *v, int n, char sep1) {
    const char *p = s;
    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)*p)) return -1;
        char *end;
        v[i] = strtoll(p, &end, 10);
        p = end;
        if (i + 1 < n) {
            char want = i == 0 && sep1 ? sep1 : ':';
            if (*p != want) return -1;
            p++;
        }
    }
    return *p == '\0' ? 0 : -1;
}

int cli_resv_parse_duration(const char *s, long long *secs) {
    long long v[4];
    if (fields(s, v, 1, 0) == 0) { *secs = v[0] * 60; return 0; }            /* minutes */
    if (fields(s, v, 2, 0) == 0) { *secs = v[0] * 60 + v[1]; return 0; }     /* MM:SS */
    if (fields(s, v, 3, 0) == 0) { *secs = v[0] * 3600 + v[1] * 60 + v[2]; return 0; }
    if (fields(s, v, 2, '-') == 0) { *secs = v[0] * 86400 + v[1] * 3600; return 0; }
    if (fields(s, v, 3, '-') == 0) {
        *secs = v[0] * 86400 + v[1] * 3600 + v[2] * 60;
        return 0;
    }
    if (fields(s, v, 4, '-') == 0) {
        *secs = v[0] * 86400 + v[1] * 3600 + v[2] * 60 + v[3];
        return 0;
    }
    int64_t x;
    if (sl_jobspec_parse_duration(s, &x) == 0) {
        *secs = x;
        return 0;
    }
    return -1;
}

/* "1d 02:00:00" style, as sinfo and scontrol write durations. */
static void fmt_duration(long long s, char *buf, size_t len) {
    long long d = s / 86400;
    s %= 86400;
    if (d > 0)
        snprintf(buf, len, "%lld-%02lld:%02lld:%02lld", d, s / 3600, s / 60 % 60, s % 60);
    else
        snprintf(buf, len, "%02lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
}

/* t (seconds since the epoch) as scontrol writes it: 2026-12-01T10:00:00, local. */
static void fmt_slurm_time(double t, char *buf, size_t len) {
    time_t x = (time_t)t;
    struct tm tm;
    localtime_r(&x, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
}

static void join_names(json_t *arr, char *buf, size_t len) {
    size_t o = 0, i;
    json_t *e;
    buf[0] = '\0';
    json_array_foreach(arr, i, e) {
        if (o < len) o += (size_t)snprintf(buf + o, len - o, "%s%s", i ? "," : "",
                                           json_string_value(e));
    }
}

/* Posts the create request (body taken) and prints what it made. */
static int create_call(cli_t *c, json_t *body, bool slurm) {
    json_t *out = NULL;
    int rc = cli_call(c, "POST", "/v1/reservations", body, &out);
    json_decref(body);
    if (rc != CLI_OK) return rc;
    if (c->json) {
        cli_print_json(out);
    } else if (slurm) {
        printf("Reservation created: %s\n", json_string_value(json_object_get(out, "name")));
    } else {
        char nodes[2048], from[64], to[64];
        join_names(json_object_get(out, "nodes"), nodes, sizeof nodes);
        cli_local_time(json_number_value(json_object_get(out, "start")), from, sizeof from);
        cli_local_time(json_number_value(json_object_get(out, "end")), to, sizeof to);
        printf("reservation %s: %s (%lld GPUs) from %s to %s\n",
               json_string_value(json_object_get(out, "name")), nodes,
               (long long)json_integer_value(json_object_get(out, "gpus")), from, to);
    }
    json_decref(out);
    return CLI_OK;
}

/* ---- sluice reservation ---- */

static int sluice_create(cli_t *c) {
    json_t *body = json_object();
    const char *v;
    double t;
    if ((v = cli_get(c, "name")) != NULL) json_object_set_new(body, "name", json_string(v));
    if ((v = cli_get(c, "start")) != NULL) {
        if (cli_resv_parse_time(v, &t) < 0) {
            json_decref(body);
            return cli_usage_error(c, "--start: \"%s\" is not a time (now, now+1hour, "
                                      "2026-12-01T10:00, 10:00)", v);
        }
        json_object_set_new(body, "start", json_real(t));
    }
    long long secs;
    if ((v = cli_get(c, "duration")) != NULL) {
        if (cli_resv_parse_duration(v, &secs) < 0 || secs <= 0) {
            json_decref(body);
            return cli_usage_error(c, "--duration: \"%s\" is not a duration (2:00:00, 90m, 2h, "
                                      "1-00:00:00; a bare number is minutes)", v);
        }
        json_object_set_new(body, "duration", json_integer(secs));
    } else if ((v = cli_get(c, "end")) != NULL) {
        if (cli_resv_parse_time(v, &t) < 0) {
            json_decref(body);
            return cli_usage_error(c, "--end: \"%s\" is not a time", v);
        }
        json_object_set_new(body, "end", json_real(t));
    } else {
        json_decref(body);
        return cli_usage_error(c, "give --duration (or --end)");
    }
    const char *nodes = cli_get(c, "nodes"), *list = cli_get(c, "nodelist"),
               *gpus = cli_get(c, "gpus");
    if ((nodes != NULL) + (list != NULL) + (gpus != NULL) != 1) {
        json_decref(body);
        return cli_usage_error(c, "give one of --nodes N, --nodelist A,B or --gpus N");
    }
    char *end;
    if (nodes || gpus) {
        long long n = strtoll(nodes ? nodes : gpus, &end, 10);
        if (*end || n < 1) {
            json_decref(body);
            return cli_usage_error(c, "--%s: \"%s\" is not a positive whole number",
                                   nodes ? "nodes" : "gpus", nodes ? nodes : gpus);
        }
        json_object_set_new(body, nodes ? "node_count" : "gpus", json_integer(n));
    } else {
        char **names, err[200];
        size_t n;
        if (sl_hostlist_expand(list, &names, &n, err, sizeof err) != 0) {
            json_decref(body);
            return cli_usage_error(c, "--nodelist: %s", err);
        }
        json_t *a = json_array();
        for (size_t i = 0; i < n; i++) json_array_append_new(a, json_string(names[i]));
        sl_hostlist_free(names, n);
        json_object_set_new(body, "nodes", a);
    }
    if ((v = cli_get(c, "tenants")) == NULL) {
        json_decref(body);
        return cli_usage_error(c, "give --tenants NAME[,NAME...]");
    }
    json_object_set_new(body, "tenants", json_string(v));
    return create_call(c, body, false);
}

static int sluice_list(cli_t *c) {
    json_t *out = NULL;
    int rc = cli_call(c, "GET", "/v1/reservations", NULL, &out);
    if (rc != CLI_OK) return rc;
    if (c->json) {
        cli_print_json(out);
        json_decref(out);
        return CLI_OK;
    }
    json_t *a = json_object_get(out, "reservations");
    if (json_array_size(a) == 0) printf("no reservations\n");
    else printf("%-16s %-8s %-26s %-26s %5s  %-24s %s\n", "NAME", "STATE", "START", "END", "GPUS",
                "NODES", "TENANTS");
    size_t i;
    json_t *r;
    json_array_foreach(a, i, r) {
        char from[64], to[64], nodes[1024], tenants[512];
        cli_local_time(json_number_value(json_object_get(r, "start")), from, sizeof from);
        cli_local_time(json_number_value(json_object_get(r, "end")), to, sizeof to);
        join_names(json_object_get(r, "nodes"), nodes, sizeof nodes);
        join_names(json_object_get(r, "tenants"), tenants, sizeof tenants);
        printf("%-16s %-8s %-26s %-26s %5lld  %-24s %s\n",
               json_string_value(json_object_get(r, "name")),
               json_string_value(json_object_get(r, "state")), from, to,
               (long long)json_integer_value(json_object_get(r, "gpus")), nodes, tenants);
    }
    json_decref(out);
    return CLI_OK;
}

/* GET /v1/reservations/NAME into *out. */
static int get_one(cli_t *c, const char *name, json_t **out) {
    char path[160];
    snprintf(path, sizeof path, "/v1/reservations/%s", name);
    return cli_call(c, "GET", path, NULL, out);
}

static int sluice_show(cli_t *c, const char *name) {
    json_t *r = NULL;
    int rc = get_one(c, name, &r);
    if (rc != CLI_OK) return rc;
    if (c->json) {
        cli_print_json(r);
        json_decref(r);
        return CLI_OK;
    }
    char from[64], to[64], nodes[2048], tenants[512], dur[32];
    cli_local_time(json_number_value(json_object_get(r, "start")), from, sizeof from);
    cli_local_time(json_number_value(json_object_get(r, "end")), to, sizeof to);
    join_names(json_object_get(r, "nodes"), nodes, sizeof nodes);
    join_names(json_object_get(r, "tenants"), tenants, sizeof tenants);
    fmt_duration(json_integer_value(json_object_get(r, "duration")), dur, sizeof dur);
    printf("name:      %s\nstate:     %s\nstart:     %s\nend:       %s\nduration:  %s\n"
           "nodes:     %s\ngpus:      %lld\ntenants:   %s\n",
           json_string_value(json_object_get(r, "name")),
           json_string_value(json_object_get(r, "state")), from, to, dur, nodes,
           (long long)json_integer_value(json_object_get(r, "gpus")), tenants);
    json_decref(r);
    return CLI_OK;
}

static int delete_call(cli_t *c, const char *name, bool slurm) {
    char path[160];
    snprintf(path, sizeof path, "/v1/reservations/%s", name);
    json_t *out = NULL;
    int rc = cli_call(c, "DELETE", path, NULL, &out);
    if (rc == CLI_OK && c->json) cli_print_json(out);
    else if (rc == CLI_OK && !slurm)
        printf("reservation %s deleted; %lld job(s) of it ended\n", name,
               (long long)json_integer_value(json_object_get(out, "jobs_ended")));
    json_decref(out);
    return rc;
}

int cli_cmd_reservation(cli_t *c) {
    const char *sub = c->npos > 0 ? c->pos[0] : NULL;
    if (sub == NULL) return cli_usage_error(c, "give create, list, show NAME or delete NAME");
    if (strcmp(sub, "create") == 0) {
        if (c->npos > 1) return cli_usage_error(c, "unexpected argument \"%s\"", c->pos[1]);
        return sluice_create(c);
    }
    if (strcmp(sub, "list") == 0) {
        if (c->npos > 1) return cli_usage_error(c, "unexpected argument \"%s\"", c->pos[1]);
        return sluice_list(c);
    }
    if (strcmp(sub, "show") == 0 || strcmp(sub, "delete") == 0) {
        if (c->npos != 2) return cli_usage_error(c, "%s: give one reservation name", sub);
        return sub[0] == 's' ? sluice_show(c, c->pos[1]) : delete_call(c, c->pos[1], false);
    }
    return cli_usage_error(c, "unknown subcommand \"%s\" (create, list, show, delete)", sub);
}

/* ---- scontrol's shape ---- */

/* The value of KEY=value among argv (case-insensitive keys), or NULL. */
static const char *kv(int argc, char **argv, const char *key) {
    size_t kl = strlen(key);
    for (int i = 0; i < argc; i++)
        if (strncasecmp(argv[i], key, kl) == 0 && argv[i][kl] == '=') return argv[i] + kl + 1;
    return NULL;
}

static int sbad(const char *fmt, const char *a) {
    fprintf(stderr, "scontrol: error: ");
    fprintf(stderr, fmt, a);
    fputc('\n', stderr);
    return CLI_EUSAGE;
}

int cli_scontrol_create_resv(cli_t *c, int argc, char **argv) {
    static const char *const known[] = {"ReservationName", "Reservation", "StartTime", "EndTime",
                                        "Duration", "Nodes", "NodeList", "NodeCnt", "TRES",
                                        "Users", "Accounts", NULL};
    for (int i = 0; i < argc; i++) {
        const char *eq = strchr(argv[i], '=');
        bool ok = false;
        for (int k = 0; known[k] && eq; k++)
            ok = ok || (strlen(known[k]) == (size_t)(eq - argv[i]) &&
                        strncasecmp(argv[i], known[k], (size_t)(eq - argv[i])) == 0);
        if (!ok)
            return sbad("\"%s\" is not supported (known: ReservationName= StartTime= EndTime= "
                        "Duration= Nodes= NodeCnt= TRES=gres/gpu:N Users= Accounts=); "
                        "docs/slurm.md", argv[i]);
    }
    json_t *body = json_object();
    const char *v;
    double t;
    if ((v = kv(argc, argv, "ReservationName")) || (v = kv(argc, argv, "Reservation")))
        json_object_set_new(body, "name", json_string(v));
    if ((v = kv(argc, argv, "StartTime")) != NULL) {
        if (cli_resv_parse_time(v, &t) < 0) {
            json_decref(body);
            return sbad("StartTime=%s: not a time (now, now+1hour, 2026-12-01T10:00:00)", v);
        }
        json_object_set_new(body, "start", json_real(t));
    }
    long long secs;
    if ((v = kv(argc, argv, "Duration")) != NULL) {
        if (cli_resv_parse_duration(v, &secs) < 0 || secs <= 0) {
            json_decref(body);
            return sbad("Duration=%s: not a duration (minutes, HH:MM:SS, D-HH:MM:SS)", v);
        }
        json_object_set_new(body, "duration", json_integer(secs));
    } else if ((v = kv(argc, argv, "EndTime")) != NULL) {
        if (cli_resv_parse_time(v, &t) < 0) {
            json_decref(body);
            return sbad("EndTime=%s: not a time", v);
        }
        json_object_set_new(body, "end", json_real(t));
    }
    if ((v = kv(argc, argv, "Nodes")) || (v = kv(argc, argv, "NodeList"))) {
        char **names, err[200];
        size_t n;
        if (sl_hostlist_expand(v, &names, &n, err, sizeof err) != 0) {
            json_decref(body);
            return sbad("Nodes=: %s", err);
        }
        json_t *a = json_array();
        for (size_t i = 0; i < n; i++) json_array_append_new(a, json_string(names[i]));
        sl_hostlist_free(names, n);
        json_object_set_new(body, "nodes", a);
    }
    char *end;
    if ((v = kv(argc, argv, "NodeCnt")) != NULL) {
        long long n = strtoll(v, &end, 10);
        if (*end || n < 1) {
            json_decref(body);
            return sbad("NodeCnt=%s: not a positive whole number", v);
        }
        json_object_set_new(body, "node_count", json_integer(n));
    }
    if ((v = kv(argc, argv, "TRES")) != NULL) {
        const char *g = strncasecmp(v, "gres/gpu", 8) == 0 ? v + 8 : NULL;
        long long n = g && (*g == ':' || *g == '=') ? strtoll(g + 1, &end, 10) : -1;
        if (n < 1 || *end) {
            json_decref(body);
            return sbad("TRES=%s: only gres/gpu:N (a GPU count) is supported", v);
        }
        json_object_set_new(body, "gpus", json_integer(n));
    }
    /* Sluice's tenants are Slurm's accounts; a site whose tenants are
     * users names them with Users=. */
    const char *acc = kv(argc, argv, "Accounts"), *usr = kv(argc, argv, "Users");
    if (acc && usr) {
        json_decref(body);
        return sbad("%s", "give Accounts= or Users= (both name Sluice tenants)");
    }
    if (acc || usr) json_object_set_new(body, "tenants", json_string(acc ? acc : usr));
    return create_call(c, body, true);
}

static void slurm_show_one(json_t *r) {
    char from[32], to[32], dur[32], nodes[4096] = "", tenants[512];
    fmt_slurm_time(json_number_value(json_object_get(r, "start")), from, sizeof from);
    fmt_slurm_time(json_number_value(json_object_get(r, "end")), to, sizeof to);
    fmt_duration(json_integer_value(json_object_get(r, "duration")), dur, sizeof dur);
    json_t *na = json_object_get(r, "nodes");
    size_t nn = json_array_size(na);
    const char **names = malloc((nn ? nn : 1) * sizeof *names);
    if (!names) abort();
    for (size_t i = 0; i < nn; i++) names[i] = json_string_value(json_array_get(na, i));
    if (sl_hostlist_format(names, nn, NULL, 0) < sizeof nodes)
        sl_hostlist_format(names, nn, nodes, sizeof nodes);
    free(names);
    join_names(json_object_get(r, "tenants"), tenants, sizeof tenants);
    printf("ReservationName=%s StartTime=%s EndTime=%s Duration=%s\n",
           json_string_value(json_object_get(r, "name")), from, to, dur);
    printf("   Nodes=%s NodeCnt=%zu CoreCnt=0 Features=(null) PartitionName=(null) Flags=\n",
           nn ? nodes : "(null)", nn);
    printf("   TRES=gres/gpu=%lld\n", (long long)json_integer_value(json_object_get(r, "gpus")));
    printf("   Users=(null) Groups=(null) Accounts=%s Licenses=(null) State=%s "
           "BurstBuffer=(null)\n\n", tenants,
           strcmp(json_string_value(json_object_get(r, "state")), "active") == 0 ? "ACTIVE"
                                                                                 : "INACTIVE");
}

int cli_scontrol_show_resv(cli_t *c, const char *name) {
    json_t *out = NULL;
    int rc = name ? get_one(c, name, &out) : cli_call(c, "GET", "/v1/reservations", NULL, &out);
    if (rc != CLI_OK) return rc;
    if (name) {
        slurm_show_one(out);
    } else {
        json_t *a = json_object_get(out, "reservations");
        if (json_array_size(a) == 0) printf("No reservations in the system\n");
        size_t i;
        json_t *r;
        json_array_foreach(a, i, r) slurm_show_one(r);
    }
    json_decref(out);
    return CLI_OK;
}

int cli_scontrol_delete_resv(cli_t *c, int argc, char **argv) {
    const char *name = kv(argc, argv, "ReservationName");
    if (!name) name = kv(argc, argv, "Reservation");
    if (!name && argc == 2 && strcasecmp(argv[0], "reservation") == 0) name = argv[1];
    if (!name || !*name)
        return sbad("%s", "delete: give ReservationName=NAME");
    return delete_call(c, name, true);
}

/* ---- sluice nodes ---- */

void cli_print_reservations(json_t *nodes) {
    size_t i;
    json_t *n;
    int first = 1;
    json_array_foreach(nodes, i, n) {
        json_t *r = json_object_get(n, "reservation");
        if (!json_is_object(r)) continue;
        if (first) printf("\nreservations:\n");
        first = 0;
        char from[64], to[64];
        cli_local_time(json_number_value(json_object_get(r, "start")), from, sizeof from);
        cli_local_time(json_number_value(json_object_get(r, "end")), to, sizeof to);
        if (json_is_true(json_object_get(r, "active")))
            printf("  %s: reserved for %s until %s\n", json_string_value(json_object_get(n, "name")),
                   json_string_value(json_object_get(r, "name")), to);
        else
            printf("  %s: reserved for %s from %s to %s\n",
                   json_string_value(json_object_get(n, "name")),
                   json_string_value(json_object_get(r, "name")), from, to);
    }
}
