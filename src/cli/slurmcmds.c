/*
 * slurmcmds.c - Slurm's query and control commands over Sluice's API, as
 * thin entry points (the sluice binary answers to each name by argv[0];
 * docs/slurm.md, "Slurm's command names"): squeue, scancel, sinfo,
 * scontrol show hostnames|hostlist|job|node (`sluice slurm-commands
 * install DIR`, which links every name to this binary, is slurminstall.c).
 *
 * Each takes Slurm's own option letters (squeue -h is --noheader, not
 * help) and prints what tools parse: squeue's and sinfo's -o formats
 * (src/common/slurmfmt.h) and scontrol's key=value lines. squeue reads
 * GET /v1/jobs a page at a time (10,000 jobs) and prints each page's rows
 * before asking for the next, so its memory is one page's; sinfo reads
 * every node once (GET /v1/nodes) and folds nodes whose printed fields
 * are the same into one line, as sinfo does, in O(nodes x lines).
 *
 * What Sluice calls a tenant is Slurm's user and account here; a pool is a
 * partition. Errors name the option and exit 2 (Slurm's tools exit 1; the
 * CLI's usage code is kept so that scripts see a bad option as one).
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "hostlist.h"
#include "quantity.h"
#include "slurmfmt.h"

static int bad(const char *prog, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(const char *prog, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: error: ", prog);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\nTry \"%s --help\" for more information\n", prog);
    va_end(ap);
    return CLI_EUSAGE;
}

/* ---- options, in Slurm's forms: -x V, -xV, --long=V, --long V ---- */

/* Whether argv[*i] is option -s/--name; with a value (want_val), *val is
 * it and *i moves past it. Returns 1 matched, 0 not, -1 a missing value
 * (reported). */
static int opt(const char *prog, int argc, char **argv, int *i, const char *name, char s,
               bool want_val, const char **val) {
    const char *a = argv[*i];
    size_t nl = strlen(name);
    const char *v = NULL;
    if (a[0] == '-' && a[1] == '-' && strncmp(a + 2, name, nl) == 0 &&
        (a[2 + nl] == '\0' || a[2 + nl] == '=')) {
        if (a[2 + nl] == '=') {
            if (!want_val) {
                bad(prog, "--%s takes no value", name);
                return -1;
            }
            v = a + 3 + nl;
        }
    } else if (s && a[0] == '-' && a[1] == s) {
        if (a[2] != '\0') {
            if (!want_val)
                return 0;
            v = a + 2;
        }
    } else {
        return 0;
    }
    if (want_val && v == NULL) {
        if (*i + 1 >= argc) {
            bad(prog, "%s needs a value", a);
            return -1;
        }
        v = argv[++*i];
    }
    if (val)
        *val = v;
    return 1;
}

/* A failed call: rc as it is (-1: the usage error was printed). */
#define OPT(name, s, want, val)                                                         \
    ((r = opt(prog, argc, argv, &i, name, s, want, val)) < 0 ? (rc = CLI_EUSAGE, true) \
                                                              : r > 0)

/* ---- the API's jobs and nodes as Slurm shows them ---- */

static const struct { const char *sluice, *lng, *shrt; } job_states[] = {
    {"pending", "PENDING", "PD"},     {"running", "RUNNING", "R"}, {"succeeded", "COMPLETED", "CD"},
    {"failed", "FAILED", "F"},        {"cancelled", "CANCELLED", "CA"},
};
#define NJOB_STATES (sizeof job_states / sizeof job_states[0])

static int job_state_index(json_t *j) {
    const char *s = json_string_value(json_object_get(j, "state"));
    for (size_t k = 0; s && k < NJOB_STATES; k++)
        if (strcmp(job_states[k].sluice, s) == 0)
            return (int)k;
    return 0;
}

static const char *jstr(json_t *o, const char *key, const char *dflt) {
    const char *s = json_string_value(json_object_get(o, key));
    return s && *s ? s : dflt;
}

/* A quantity of the API (a number or a text such as "500m", "16Gi") in
 * units of kind: CPUs (rounded up), bytes; 0 when absent. */
static long long qty(json_t *v, sl_qty_kind_t kind) {
    int64_t x = 0;
    if (json_is_integer(v))
        return (long long)json_integer_value(v);
    if (json_is_string(v) && sl_qty_parse(json_string_value(v), kind, &x, NULL, 0) == 0)
        return kind == SL_QTY_CPU ? (long long)((x + 999) / 1000) : (long long)x;
    if (json_is_real(v))
        return (long long)json_number_value(v);
    return 0;
}

static int str_cmp(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The job's nodes (its placement's, in Slurm's compressed form) and how
 * many; "" and 0 before it is placed. O(t log t) for t tasks. */
static size_t job_nodes(json_t *j, char *buf, size_t len) {
    json_t *pl = json_object_get(j, "placement"), *t;
    size_t n = json_array_size(pl), i, k = 0, distinct = 0;
    const char **names = calloc(n ? n : 1, sizeof *names);
    if (!names)
        abort();
    json_array_foreach(pl, i, t) {
        const char *nd = json_string_value(json_object_get(t, "node"));
        if (nd)
            names[k++] = nd;
    }
    sl_hostlist_format(names, k, buf, len);
    qsort(names, k, sizeof *names, str_cmp);
    for (size_t a = 0; a < k; a++)
        distinct += a == 0 || strcmp(names[a], names[a - 1]) != 0;
    free(names);
    return distinct;
}

/* A pending job's reason as Slurm's one word: "Dependency: waits ..." is
 * (Dependency); a reason without such a word is (Resources). */
static void job_reason(json_t *j, char *buf, size_t len) {
    const char *r = jstr(j, "reason", "");
    size_t w = strspn(r, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz");
    if (*r == '\0')
        snprintf(buf, len, "None");
    else if (w > 0 && r[w] == ':')
        snprintf(buf, len, "%.*s", (int)w, r);
    else
        snprintf(buf, len, "Resources");
}

static void job_id(json_t *j, char *buf, size_t len) {
    json_t *a = json_object_get(j, "array_id");
    if (json_is_integer(a))
        snprintf(buf, len, "%lld_%lld", (long long)json_integer_value(a),
                 (long long)json_integer_value(json_object_get(j, "array_index")));
    else
        snprintf(buf, len, "%lld", (long long)json_integer_value(json_object_get(j, "id")));
}

static long long job_elapsed(json_t *j) {
    json_t *st = json_object_get(j, "start_time"), *en = json_object_get(j, "end_time");
    if (!json_is_number(st))
        return 0;
    double end = json_is_number(en) ? json_number_value(en) : (double)time(NULL);
    return (long long)(end - json_number_value(st));
}

static void time_limit(json_t *j, char *buf, size_t len) {
    long long t = json_integer_value(json_object_get(j, "time_limit"));
    if (t <= 0)
        snprintf(buf, len, "UNLIMITED");
    else
        sl_slurmfmt_elapsed(t, buf, len);
}

/* One squeue field of job ctx (a json_t). */
static void job_field(const void *ctx, char f, char *buf, size_t len) {
    json_t *j = (json_t *)ctx;
    char nodes[4096];
    long long tasks = json_integer_value(json_object_get(j, "tasks"));
    int st = job_state_index(j);
    switch (f) {
    case 'i': case 'A': job_id(j, buf, len); break;
    case 'j': snprintf(buf, len, "%s", jstr(j, "name", "")); break;
    case 'u': case 'a': snprintf(buf, len, "%s", jstr(j, "tenant", "")); break;
    case 't': snprintf(buf, len, "%s", job_states[st].shrt); break;
    case 'T': snprintf(buf, len, "%s", job_states[st].lng); break;
    case 'M': sl_slurmfmt_elapsed(job_elapsed(j), buf, len); break;
    case 'l': time_limit(j, buf, len); break;
    case 'D': {
        size_t n = job_nodes(j, nodes, sizeof nodes);
        snprintf(buf, len, "%zu", n ? n : 1);
        break;
    }
    case 'N': job_nodes(j, buf, len); break;
    case 'R':
        if (st == 0) {
            char r[64];
            job_reason(j, r, sizeof r);
            snprintf(buf, len, "(%s)", r);
        } else {
            job_nodes(j, buf, len);
        }
        break;
    case 'P': snprintf(buf, len, "%s", jstr(j, "pool", "default")); break;
    case 'S': { /* started, or the scheduler's expected start: local time as Slurm's */
        json_t *t = json_object_get(j, st == 0 ? "expected_start" : "start_time");
        time_t at = (time_t)json_number_value(t);
        struct tm tm;
        if (!json_is_number(t) || localtime_r(&at, &tm) == NULL)
            snprintf(buf, len, "N/A");
        else
            strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
        break;
    }
    case 'Y': snprintf(buf, len, "(null)"); break;
    case 'C': snprintf(buf, len, "%lld", tasks * qty(json_object_get(j, "cpus"), SL_QTY_CPU)); break;
    case 'b': {
        long long g = json_integer_value(json_object_get(j, "gpus"));
        size_t n = job_nodes(j, nodes, sizeof nodes);
        if (g <= 0)
            snprintf(buf, len, "N/A");
        else
            snprintf(buf, len, "gres:gpu:%lld", g * tasks / (long long)(n ? n : 1));
        break;
    }
    default: buf[0] = '\0';
    }
}

static const struct { char f; const char *head; } job_heads[] = {
    {'i', "JOBID"}, {'A', "JOBID"}, {'j', "NAME"}, {'u', "USER"}, {'a', "ACCOUNT"}, {'t', "ST"},
    {'T', "STATE"}, {'M', "TIME"}, {'l', "TIME_LIMIT"}, {'D', "NODES"}, {'N', "NODELIST"},
    {'R', "NODELIST(REASON)"}, {'P', "PARTITION"}, {'C', "CPUS"}, {'b', "TRES_PER_NODE"},
    {'S', "START_TIME"}, {'Y', "SCHEDNODES"},
};
#define SQUEUE_FIELDS "iAjuatTMlDNRPCbSY"

/* squeue -O's names of those fields. */
static const sl_slurmfmt_name_t squeue_long[] = {
    {"JobID", 'i'},       {"JobArrayID", 'i'}, {"ArrayJobID", 'A'},   {"Name", 'j'},
    {"UserName", 'u'},    {"User", 'u'},       {"Account", 'a'},      {"StateCompact", 't'},
    {"State", 'T'},       {"TimeUsed", 'M'},   {"TimeLimit", 'l'},    {"NumNodes", 'D'},
    {"NodeList", 'N'},    {"ReasonList", 'R'}, {"Partition", 'P'},    {"NumCPUs", 'C'},
    {"tres-per-node", 'b'}, {"StartTime", 'S'},  {"SchedNodes", 'Y'},
};

/* A line of items: the header (ctx NULL, each field's head) or the row of
 * ctx (a job, or one of sinfo's lines), each field's value from field. */
static void print_items(const sl_slurmfmt_item_t *it, size_t n, const void *ctx,
                        void (*field)(const void *, char, char *, size_t), const char *(*head)(char)) {
    char line[16384];
    size_t at = 0;
    for (size_t k = 0; k < n; k++) {
        char v[4096] = "";
        if (it[k].field)
            ctx ? field(ctx, it[k].field, v, sizeof v) : (void)snprintf(v, sizeof v, "%s", head(it[k].field));
        at += sl_slurmfmt_cell(&it[k], v, line + (at < sizeof line ? at : sizeof line),
                               at < sizeof line ? sizeof line - at : 0);
    }
    fwrite(line, 1, at < sizeof line ? at : sizeof line - 1, stdout);
    putchar('\n');
}

static const char *job_head(char f) {
    for (size_t k = 0; k < sizeof job_heads / sizeof job_heads[0]; k++)
        if (job_heads[k].f == f)
            return job_heads[k].head;
    return "";
}


/* ---- squeue ---- */

typedef struct squeue {
    sl_slurmfmt_item_t it[SL_SLURMFMT_MAX];
    size_t n;
    const char *users, *states, *parts; /* comma-separated, or NULL */
} squeue_t;

static bool squeue_keep(const squeue_t *q, json_t *j) {
    if (q->users && !cli_listed(q->users, jstr(j, "tenant", "")))
        return false;
    if (q->parts && !cli_listed(q->parts, jstr(j, "pool", "default")))
        return false;
    if (q->states && !cli_listed(q->states, "all")) {
        int k = job_state_index(j);
        if (!cli_listed(q->states, job_states[k].lng) && !cli_listed(q->states, job_states[k].shrt))
            return false;
    }
    return true;
}

static const char squeue_usage[] =
    "usage: squeue [-h] [-o FORMAT | -O FIELDS] [-j IDS] [-u USERS] [--me] [-t STATES] [-p PARTITIONS]\n"
    "\n"
    "Pending and running jobs, as Slurm's squeue prints them (docs/slurm.md).\n"
    "  -h, --noheader         no header line\n"
    "  -o, --format FORMAT    fields: %i job id, %j name, %u user (tenant), %a account,\n"
    "                         %t state (PD, R, CD, F, CA), %T state (PENDING, ...),\n"
    "                         %M time used, %l time limit, %D nodes, %N nodes' names,\n"
    "                         %R nodes or (reason), %P partition (pool), %C CPUs,\n"
    "                         %b GPUs a node (gres:gpu:N), %S start (expected when\n"
    "                         pending), %Y scheduled nodes; %.N right-justified in N,\n"
    "                         %N... left (default \"%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R\")\n"
    "  -O, --Format FIELDS    long fields, NAME[:[.][WIDTH][SUFFIX]] comma-separated\n"
    "                         (width 20 by default): JobID, JobArrayID, ArrayJobID,\n"
    "                         Name, UserName, Account, State, StateCompact, TimeUsed,\n"
    "                         TimeLimit, NumNodes, NodeList, ReasonList, Partition,\n"
    "                         NumCPUs, tres-per-node\n"
    "  -j, --jobs IDS         only these jobs (comma-separated; finished ones too)\n"
    "  -u, --user USERS       only these tenants' jobs\n"
    "      --me               only the jobs of this CLI's tenant (SLURM_JOB_ACCOUNT\n"
    "                         in a task, else $USER)\n"
    "  -t, --states STATES    PENDING (PD), RUNNING (R), COMPLETED (CD), FAILED (F),\n"
    "                         CANCELLED (CA), all; comma-separated\n"
    "  -p, --partition POOLS  only these pools' jobs\n"
    "      --start            pending jobs with the start the scheduler's plan expects\n"
    "                         (%S; N/A where it holds none: only the first blocked\n"
    "                         job's backfill reservation, with backfill: easy)\n"
    "  -a, --all, -l, --long  accepted; no effect\n"
    "      --help             this help\n"
    "Sluice's global options come from SLUICE_SERVER, SLUICE_TOKEN, SLUICE_CACERT\n"
    "or .sluice/cli.json (`sluice --server URL squeue ...` also works).\n";

/* The server's state filter for STATES: its names, or "" for every state. */
static int squeue_server_states(const char *prog, const char *states, char *out, size_t len) {
    out[0] = '\0';
    if (!states) {
        snprintf(out, len, "pending,running");
        return 0;
    }
    for (const char *p = states; *p;) {
        size_t l = strcspn(p, ",");
        size_t k = 0;
        if (l == 3 && strncasecmp(p, "all", 3) == 0) {
            out[0] = '\0';
            return 0;
        }
        while (k < NJOB_STATES && !((strlen(job_states[k].lng) == l && !strncasecmp(p, job_states[k].lng, l)) ||
                                    (strlen(job_states[k].shrt) == l && !strncasecmp(p, job_states[k].shrt, l))))
            k++;
        if (k == NJOB_STATES)
            return bad(prog, "-t/--states: \"%.*s\" is not PENDING (PD), RUNNING (R), COMPLETED (CD), "
                             "FAILED (F), CANCELLED (CA) or all", (int)l, p);
        size_t o = strlen(out);
        snprintf(out + o, len - o, "%s%s", o ? "," : "", job_states[k].sluice);
        p += l + (p[l] == ',');
    }
    return 0;
}

int cli_cmd_squeue(cli_t *c) {
    const char *prog = "squeue", *fmt = "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R", *jobs = NULL, *v;
    squeue_t q = {0};
    bool header = true;
    char me[128], longfmt[2048];
    bool start = false, fmt_given = false;
    int argc = c->ncommand, r, rc = CLI_OK;
    char **argv = c->command;
    for (int i = 0; i < argc; i++) {
        if (OPT("help", 0, false, NULL)) {
            if (rc) return rc;
            fputs(squeue_usage, stdout);
            return CLI_OK;
        } else if (OPT("noheader", 'h', false, NULL)) {
            header = false;
        } else if (OPT("format", 'o', true, &v)) {
            fmt = v;
            fmt_given = true;
        } else if (OPT("Format", 'O', true, &v)) {
            fmt_given = true;
            char err[400];
            if (sl_slurmfmt_from_long(v, squeue_long, sizeof squeue_long / sizeof squeue_long[0],
                                      longfmt, sizeof longfmt, err, sizeof err) != 0)
                return bad(prog, "-O/--Format: %s", err);
            fmt = longfmt;
        } else if (OPT("jobs", 'j', true, &v)) {
            jobs = v;
        } else if (OPT("user", 'u', true, &v)) {
            q.users = v;
        } else if (OPT("states", 't', true, &v)) {
            q.states = v;
        } else if (OPT("partition", 'p', true, &v)) {
            q.parts = v;
        } else if (OPT("me", 0, false, NULL)) {
            const char *t = c->tenant ? c->tenant : getenv("SLURM_JOB_ACCOUNT");
            if (!t || !*t) t = getenv("USER");
            snprintf(me, sizeof me, "%s", t ? t : "");
            q.users = me;
        } else if (OPT("start", 0, false, NULL)) {
            start = true; /* pending jobs and their expected start, as Slurm's */
        } else if (OPT("all", 'a', false, NULL) || OPT("long", 'l', false, NULL)) {
        } else if (argv[i][0] == '-') {
            return bad(prog, "unrecognized option '%s'", argv[i]);
        } else {
            return bad(prog, "unexpected argument \"%s\"", argv[i]);
        }
        if (rc) return rc;
    }
    char err[300], server_states[80];
    if (start && !fmt_given)
        fmt = "%.18i %.9P %.8j %.8u %.2t %.19S %.6D %20Y %R";
    if (start && !q.states)
        q.states = "PENDING";
    if (sl_slurmfmt_parse(fmt, SQUEUE_FIELDS, q.it, SL_SLURMFMT_MAX, &q.n, err, sizeof err) != 0)
        return bad(prog, "-o/--format: %s", err);
    if (squeue_server_states(prog, q.states, server_states, sizeof server_states) != 0)
        return CLI_EUSAGE;
    if (header)
        print_items(q.it, q.n, NULL, job_field, job_head);
    if (jobs) {
        /* Each job by id: one small request each, finished jobs too. */
        char list[4096];
        snprintf(list, sizeof list, "%s", jobs);
        for (char *s = NULL, *w = strtok_r(list, ",", &s); w; w = strtok_r(NULL, ",", &s)) {
            if (strspn(w, "0123456789_") != strlen(w))
                return bad(prog, "-j/--jobs: \"%s\" is not a job id", w);
            char path[96];
            snprintf(path, sizeof path, "/v1/jobs/%s", w);
            json_t *j = NULL;
            long st;
            if ((rc = cli_http(c, "GET", path, NULL, &st, &j, NULL)) != CLI_OK)
                return rc;
            if (st == 404) {
                fprintf(stderr, "slurm_load_jobs error: Invalid job id specified\n");
                json_decref(j);
                return CLI_ESERVER;
            }
            if (st < 200 || st >= 300) {
                fprintf(stderr, "squeue: error: %s\n", jstr(j, "message", "the server refused"));
                json_decref(j);
                return CLI_ESERVER;
            }
            if (squeue_keep(&q, j))
                print_items(q.it, q.n, j, job_field, NULL);
            json_decref(j);
        }
        return CLI_OK;
    }
    unsigned long long after = 0;
    for (;;) {
        char path[256];
        int at = snprintf(path, sizeof path, "/v1/jobs?limit=10000");
        if (after)
            at += snprintf(path + at, sizeof path - (size_t)at, "&after=%llu", after);
        if (server_states[0])
            snprintf(path + at, sizeof path - (size_t)at, "&state=%s", server_states);
        json_t *page = NULL;
        if ((rc = cli_call(c, "GET", path, NULL, &page)) != CLI_OK)
            return rc;
        size_t i;
        json_t *j;
        json_array_foreach(json_object_get(page, "jobs"), i, j)
            if (squeue_keep(&q, j))
                print_items(q.it, q.n, j, job_field, NULL);
        json_t *next = json_object_get(page, "next_after");
        unsigned long long nx = json_is_integer(next) ? (unsigned long long)json_integer_value(next) : 0;
        json_decref(page);
        fflush(stdout);
        if (nx == 0 || nx <= after)
            break;
        after = nx;
    }
    return CLI_OK;
}

/* ---- scancel ---- */

static const char scancel_usage[] =
    "usage: scancel [-Q] [-u USERS] [-n NAMES] [-t STATES] [-p PARTITIONS] [JOBID[_INDEX]...]\n"
    "\n"
    "Cancels jobs (running tasks get SIGTERM, then SIGKILL after the controller's\n"
    "kill_grace), as `sluice cancel`; prints nothing on success.\n"
    "  -Q, --quiet            no message for a job that is already finished\n"
    "  -u, --user USERS       only these tenants' jobs\n"
    "  -n, --name, --jobname NAMES  only jobs of these names\n"
    "  -t, --state STATES     only jobs in these states: PENDING (PD), RUNNING (R)\n"
    "  -p, --partition POOLS  only these pools' jobs\n"
    "                         (with filters: every pending and running job that\n"
    "                         passes them, of the ids given when there are some)\n"
    "      --help             this help\n"
    "-s/--signal is not supported: the API signals a job's steps only (srun\n"
    "forwards signals to its ranks).\n";

int cli_cmd_scancel(cli_t *c) {
    const char *prog = "scancel", *v;
    int argc = c->ncommand, r, rc = CLI_OK, nids = 0;
    char **argv = c->command, **ids = calloc((size_t)argc + 1, sizeof *ids);
    bool quiet = false;
    cli_scancel_filter_t f = {0};
    if (ids == NULL)
        abort();
    for (int i = 0; i < argc; i++) {
        if (OPT("help", 0, false, NULL)) {
            free(ids);
            if (rc) return rc;
            fputs(scancel_usage, stdout);
            return CLI_OK;
        } else if (OPT("quiet", 'Q', false, NULL)) {
            quiet = true;
        } else if (OPT("user", 'u', true, &f.users) || OPT("name", 'n', true, &f.names) ||
                   OPT("jobname", 0, true, &f.names) || OPT("partition", 'p', true, &f.parts)) {
        } else if (OPT("state", 't', true, &f.states)) {
            if (!rc)
                rc = cli_scancel_check_states(f.states);
        } else if (OPT("signal", 's', true, &v)) {
            free(ids);
            if (rc) return rc;
            return bad(prog, "--signal (%s) is not supported: Sluice signals only a job's steps "
                             "(srun forwards signals to its ranks)", v);
        } else if (argv[i][0] == '-') {
            free(ids);
            return bad(prog, "unrecognized option '%s'", argv[i]);
        } else if (strspn(argv[i], "0123456789_") != strlen(argv[i]) || argv[i][0] == '_') {
            free(ids);
            return bad(prog, "Invalid job id %s", argv[i]);
        } else {
            ids[nids++] = argv[i];
        }
        if (rc) {
            free(ids);
            return rc;
        }
    }
    if (f.users || f.names || f.states || f.parts) {
        rc = cli_scancel_filtered(c, &f, ids, nids);
        free(ids);
        return rc;
    }
    free(ids);
    if (nids == 0)
        return bad(prog, "No job identification provided");
    int out = CLI_OK;
    for (int i = 0; i < argc; i++) {
        if (argv[i][0] == '-')
            continue;
        char path[96];
        snprintf(path, sizeof path, "/v1/jobs/%s", argv[i]);
        json_t *j = NULL;
        long st;
        if ((rc = cli_http(c, "DELETE", path, NULL, &st, &j, NULL)) != CLI_OK)
            return rc;
        if (st == 409) {
            if (!quiet)
                fprintf(stderr, "scancel: error: Kill job error on job id %s: Job/step already "
                                "completing or completed\n", argv[i]);
        } else if (st == 404) {
            fprintf(stderr, "scancel: error: Kill job error on job id %s: Invalid job id specified\n",
                    argv[i]);
            out = CLI_ESERVER;
        } else if (st < 200 || st >= 300) {
            fprintf(stderr, "scancel: error: Kill job error on job id %s: %s\n", argv[i],
                    jstr(j, "message", "the server refused"));
            out = CLI_ESERVER;
        }
        json_decref(j);
    }
    return out;
}

/* ---- nodes: sinfo and scontrol show node ---- */

/* A node's state as Slurm's, long (sinfo %T, scontrol State=) or short. */
static const char *node_state(json_t *n, bool shrt) {
    const char *s = jstr(n, "state", "down");
    long long tasks = json_integer_value(json_object_get(n, "tasks"));
    json_t *fr = json_object_get(n, "free");
    bool full = qty(json_object_get(fr, "cpus"), SL_QTY_CPU) == 0 ||
                (json_integer_value(json_object_get(n, "gpus")) > 0 &&
                 json_integer_value(json_object_get(fr, "gpus")) == 0);
    if (strcmp(s, "draining") == 0)
        return shrt ? "drng" : "draining";
    if (strcmp(s, "drained") == 0)
        return shrt ? "drain" : "drained";
    if (strcmp(s, "up") != 0)
        return shrt ? "down" : "down";
    if (tasks == 0)
        return "idle";
    return full ? (shrt ? "alloc" : "allocated") : (shrt ? "mix" : "mixed");
}

static void node_gres(json_t *n, char *buf, size_t len) {
    long long g = json_integer_value(json_object_get(n, "gpus"));
    const char *m = jstr(n, "gpu_model", NULL);
    if (g <= 0)
        snprintf(buf, len, "(null)");
    else if (m)
        snprintf(buf, len, "gpu:%s:%lld", m, g);
    else
        snprintf(buf, len, "gpu:%lld", g);
}

/* sinfo's lines: nodes whose printed fields (all but %D, %N, %C) agree. */
typedef struct sinfo_line {
    json_t *first;              /* a node of the line, for its fields */
    const char **names;
    size_t n, cap;
    long long cpu_alloc, cpu_idle, cpu_other, cpu_total;
} sinfo_line_t;

static void node_field(json_t *n, char f, char *buf, size_t len) {
    switch (f) {
    case 'P': case 'R': snprintf(buf, len, "%s", jstr(n, "pool", "default")); break;
    case 'a': snprintf(buf, len, "up"); break;
    case 'l': snprintf(buf, len, "infinite"); break;
    case 'T': snprintf(buf, len, "%s", node_state(n, false)); break;
    case 't': snprintf(buf, len, "%s", node_state(n, true)); break;
    case 'G': node_gres(n, buf, len); break;
    case 'c': snprintf(buf, len, "%lld", qty(json_object_get(n, "cpus"), SL_QTY_CPU)); break;
    case 'm':
        snprintf(buf, len, "%lld", qty(json_object_get(n, "memory"), SL_QTY_MEM) >> 20);
        break;
    default: buf[0] = '\0';
    }
}

/* One sinfo field of line ctx (a sinfo_line_t). */
static void sinfo_field(const void *ctx, char f, char *buf, size_t len) {
    const sinfo_line_t *l = ctx;
    if (f == 'D')
        snprintf(buf, len, "%zu", l->n);
    else if (f == 'N')
        sl_hostlist_format(l->names, l->n, buf, len);
    else if (f == 'C')
        snprintf(buf, len, "%lld/%lld/%lld/%lld", l->cpu_alloc, l->cpu_idle, l->cpu_other, l->cpu_total);
    else
        node_field(l->first, f, buf, len);
}

static const char *node_head(char f) {
    static const struct { char f; const char *h; } h[] = {
        {'P', "PARTITION"}, {'R', "PARTITION"}, {'a', "AVAIL"}, {'l', "TIMELIMIT"}, {'D', "NODES"},
        {'T', "STATE"}, {'t', "STATE"}, {'N', "NODELIST"}, {'G', "GRES"}, {'c', "CPUS"},
        {'m', "MEMORY"}, {'C', "CPUS(A/I/O/T)"},
    };
    for (size_t k = 0; k < sizeof h / sizeof h[0]; k++)
        if (h[k].f == f)
            return h[k].h;
    return "";
}

static const char sinfo_usage[] =
    "usage: sinfo [-h] [-o FORMAT] [-p PARTITIONS] [-N]\n"
    "\n"
    "Nodes by pool (Slurm's partition) and state, as Slurm's sinfo prints them:\n"
    "one line for the nodes whose printed fields agree (docs/slurm.md).\n"
    "  -h, --noheader         no header line\n"
    "  -o, --format FORMAT    fields: %P partition (pool), %a availability (up),\n"
    "                         %l time limit (infinite), %D nodes, %T state (idle,\n"
    "                         mixed, allocated, draining, drained, down), %t state\n"
    "                         short, %N nodes' names, %G GPUs (gpu:MODEL:N), %c CPUs\n"
    "                         a node, %m memory a node (MB), %C CPUs allocated/idle/\n"
    "                         other/total (default \"%9P %5a %.10l %.6D %.6t %N\")\n"
    "  -p, --partition POOLS  only these pools' nodes\n"
    "  -N, --Node             one line a node\n"
    "      --help             this help\n";

int cli_cmd_sinfo(cli_t *c) {
    const char *prog = "sinfo", *fmt = "%9P %5a %.10l %.6D %.6t %N", *parts = NULL, *v;
    bool header = true, per_node = false;
    int argc = c->ncommand, r, rc = CLI_OK;
    char **argv = c->command;
    for (int i = 0; i < argc; i++) {
        if (OPT("help", 0, false, NULL)) {
            if (rc) return rc;
            fputs(sinfo_usage, stdout);
            return CLI_OK;
        } else if (OPT("noheader", 'h', false, NULL)) {
            header = false;
        } else if (OPT("format", 'o', true, &v)) {
            fmt = v;
        } else if (OPT("partition", 'p', true, &v)) {
            parts = v;
        } else if (OPT("Node", 'N', false, NULL)) {
            per_node = true;
        } else if (argv[i][0] == '-') {
            return bad(prog, "unrecognized option '%s'", argv[i]);
        } else {
            return bad(prog, "unexpected argument \"%s\"", argv[i]);
        }
        if (rc) return rc;
    }
    sl_slurmfmt_item_t it[SL_SLURMFMT_MAX];
    size_t nit;
    char err[300];
    if (sl_slurmfmt_parse(fmt, "PRalDTtNGcmC", it, SL_SLURMFMT_MAX, &nit, err, sizeof err) != 0)
        return bad(prog, "-o/--format: %s", err);
    json_t *out = NULL;
    if ((rc = cli_call(c, "GET", "/v1/nodes", NULL, &out)) != CLI_OK)
        return rc;
    json_t *nodes = json_object_get(out, "nodes"), *n;
    size_t nn = json_array_size(nodes), i, nl = 0;
    sinfo_line_t *lines = calloc(nn ? nn : 1, sizeof *lines);
    if (!lines)
        abort();
    json_array_foreach(nodes, i, n) {
        if (parts && !cli_listed(parts, jstr(n, "pool", "default")))
            continue;
        size_t l = 0;
        for (; !per_node && l < nl; l++) {
            bool same = true;
            for (size_t k = 0; same && k < nit; k++) {
                char a[256], b[256];
                if (!it[k].field || strchr("DNC", it[k].field))
                    continue;
                node_field(n, it[k].field, a, sizeof a);
                node_field(lines[l].first, it[k].field, b, sizeof b);
                same = strcmp(a, b) == 0;
            }
            if (same)
                break;
        }
        if (l == nl)
            lines[nl++].first = n;
        sinfo_line_t *ln = &lines[l];
        if (ln->n == ln->cap) {
            ln->cap = ln->cap ? 2 * ln->cap : 8;
            ln->names = realloc(ln->names, ln->cap * sizeof *ln->names);
            if (!ln->names) abort();
        }
        ln->names[ln->n++] = jstr(n, "name", "?");
        long long tot = qty(json_object_get(n, "cpus"), SL_QTY_CPU);
        long long fr = qty(json_object_get(json_object_get(n, "free"), "cpus"), SL_QTY_CPU);
        bool usable = strcmp(jstr(n, "state", ""), "up") == 0 || strcmp(jstr(n, "state", ""), "draining") == 0;
        ln->cpu_total += tot;
        ln->cpu_alloc += tot - fr;
        if (usable) ln->cpu_idle += fr;
        else ln->cpu_other += fr;
    }
    if (header)
        print_items(it, nit, NULL, sinfo_field, node_head);
    for (size_t l = 0; l < nl; l++) {
        print_items(it, nit, &lines[l], sinfo_field, NULL);
        free(lines[l].names);
    }
    free(lines);
    json_decref(out);
    return CLI_OK;
}

/* ---- scontrol ---- */

static const char scontrol_usage[] =
    "usage: scontrol show hostnames [LIST]   names of a host list, one a line\n"
    "                                        (default $SLURM_JOB_NODELIST)\n"
    "       scontrol show hostlist NAMES     names (comma-separated, or a list)\n"
    "                                        compressed: n[1-3,5]\n"
    "       scontrol show job ID             a job, Slurm's key=value lines\n"
    "       scontrol show node NAME          a node, Slurm's key=value lines\n"
    "       scontrol show reservation [NAME] advance reservations\n"
    "       scontrol create reservation ReservationName=R StartTime=T Duration=D\n"
    "                Nodes=A,B|NodeCnt=N|TRES=gres/gpu:N Accounts=T[,..]|Users=T[,..]\n"
    "       scontrol delete ReservationName=R\n"
    "Nothing else of scontrol is supported (docs/slurm.md).\n";

static void iso_time(json_t *v, char *buf, size_t len) {
    if (!json_is_number(v)) {
        snprintf(buf, len, "Unknown");
        return;
    }
    time_t t = (time_t)json_number_value(v);
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
}

static void show_job(json_t *j) {
    char id[64], nodes[4096], reason[64], rt[32], tl[32], sub[32], st[32], en[32];
    job_id(j, id, sizeof id);
    size_t nn = job_nodes(j, nodes, sizeof nodes);
    job_reason(j, reason, sizeof reason);
    int k = job_state_index(j);
    sl_slurmfmt_elapsed(job_elapsed(j), rt, sizeof rt);
    time_limit(j, tl, sizeof tl);
    iso_time(json_object_get(j, "submit_time"), sub, sizeof sub);
    iso_time(json_object_get(j, "start_time"), st, sizeof st);
    iso_time(json_object_get(j, "end_time"), en, sizeof en);
    long long tasks = json_integer_value(json_object_get(j, "tasks"));
    long long cpt = qty(json_object_get(j, "cpus"), SL_QTY_CPU);
    long long mem = qty(json_object_get(j, "memory"), SL_QTY_MEM) >> 20;
    long long gpus = json_integer_value(json_object_get(j, "gpus")) * tasks;
    json_t *ec = json_object_get(j, "exit_code");
    printf("JobId=%lld JobName=%s\n", (long long)json_integer_value(json_object_get(j, "id")),
           jstr(j, "name", ""));
    if (strchr(id, '_'))
        printf("   ArrayJobId=%lld ArrayTaskId=%lld\n",
               (long long)json_integer_value(json_object_get(j, "array_id")),
               (long long)json_integer_value(json_object_get(j, "array_index")));
    printf("   UserId=%s Account=%s\n", jstr(j, "tenant", ""), jstr(j, "tenant", ""));
    printf("   Priority=%lld\n", (long long)json_integer_value(json_object_get(j, "priority")));
    printf("   JobState=%s Reason=%s\n", job_states[k].lng, k == 0 ? reason : "None");
    printf("   Requeue=1 Restarts=%lld ExitCode=%lld:0\n",
           (long long)json_integer_value(json_object_get(j, "requeues")),
           json_is_integer(ec) ? (long long)json_integer_value(ec) : 0LL);
    printf("   RunTime=%s TimeLimit=%s\n", rt, tl);
    printf("   SubmitTime=%s\n   StartTime=%s EndTime=%s\n", sub, st, en);
    printf("   Partition=%s\n", jstr(j, "pool", "default"));
    printf("   NodeList=%s\n", nn ? nodes : "(null)");
    printf("   NumNodes=%zu NumCPUs=%lld NumTasks=%lld CPUs/Task=%lld\n", nn ? nn : 1, tasks * cpt,
           tasks, cpt);
    printf("   TRES=cpu=%lld,mem=%lldM,node=%zu", tasks * cpt, mem * tasks, nn ? nn : 1);
    if (gpus > 0)
        printf(",gres/gpu=%lld", gpus);
    putchar('\n');
    json_t *cmd = json_object_get(j, "command"), *w;
    size_t i;
    printf("   Command=");
    json_array_foreach(cmd, i, w) printf("%s%s", i ? " " : "", json_string_value(w));
    printf("%s\n", json_array_size(cmd) ? "" : "(null)");
    printf("   WorkDir=%s\n", jstr(j, "chdir", jstr(j, "submit_dir", "(null)")));
    printf("   StdOut=%s\n   StdErr=%s\n\n", jstr(j, "output", "(null)"),
           jstr(j, "error", jstr(j, "output", "(null)")));
}

static void show_node(json_t *n) {
    char gres[128], state[32];
    node_gres(n, gres, sizeof gres);
    snprintf(state, sizeof state, "%s", node_state(n, false));
    for (char *p = state; *p; p++)
        *p = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
    json_t *fr = json_object_get(n, "free");
    long long cpus = qty(json_object_get(n, "cpus"), SL_QTY_CPU);
    long long mem = qty(json_object_get(n, "memory"), SL_QTY_MEM) >> 20;
    long long gpus = json_integer_value(json_object_get(n, "gpus"));
    printf("NodeName=%s State=%s\n", jstr(n, "name", ""), state);
    printf("   CPUAlloc=%lld CPUTot=%lld\n", cpus - qty(json_object_get(fr, "cpus"), SL_QTY_CPU), cpus);
    printf("   Gres=%s\n", gres);
    printf("   NodeAddr=%s\n", jstr(n, "addr", jstr(n, "name", "")));
    printf("   RealMemory=%lld AllocMem=%lld FreeMem=N/A\n", mem,
           mem - (qty(json_object_get(fr, "memory"), SL_QTY_MEM) >> 20));
    printf("   Partitions=%s\n", jstr(n, "pool", "default"));
    printf("   CfgTRES=cpu=%lld,mem=%lldM", cpus, mem);
    if (gpus > 0)
        printf(",gres/gpu=%lld", gpus);
    printf("\n   AllocTRES=cpu=%lld", cpus - qty(json_object_get(fr, "cpus"), SL_QTY_CPU));
    if (gpus > 0)
        printf(",gres/gpu=%lld", gpus - (long long)json_integer_value(json_object_get(fr, "gpus")));
    printf("\n   Reason=%s\n\n", jstr(n, "reason", "(null)"));
}

int cli_cmd_scontrol(cli_t *c) {
    const char *prog = "scontrol";
    int argc = c->ncommand;
    char **argv = c->command;
    if (argc >= 1 && (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0 ||
                      strcmp(argv[0], "help") == 0)) {
        fputs(scontrol_usage, stdout);
        return CLI_OK;
    }
    if (argc >= 1 && argv[0][0] == '-')
        return bad(prog, "unrecognized option '%s'", argv[0]);
    /* Reservations (reservation.c): create and delete, and show's. */
    if (argc >= 2 && strcmp(argv[0], "create") == 0 && strcasecmp(argv[1], "reservation") == 0)
        return cli_scontrol_create_resv(c, argc - 2, argv + 2);
    if (argc >= 2 && strcmp(argv[0], "delete") == 0)
        return cli_scontrol_delete_resv(c, argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[0], "show") == 0 && (strcasecmp(argv[1], "reservation") == 0 ||
                                                      strcasecmp(argv[1], "reservations") == 0))
        return argc > 3 ? bad(prog, "unexpected argument \"%s\"", argv[3])
                        : cli_scontrol_show_resv(c, argc > 2 ? argv[2] : NULL);
    if (argc < 2 || strcmp(argv[0], "show") != 0)
        return bad(prog, "only `scontrol show hostnames|hostlist|job|node|reservation`, `create reservation` and "
                   "`delete ReservationName=` are supported%s%s",
                   argc ? ", not " : "", argc ? argv[0] : "");
    const char *what = argv[1], *arg = argc > 2 ? argv[2] : NULL;
    if (argc > 3)
        return bad(prog, "unexpected argument \"%s\"", argv[3]);
    char err[300];
    if (strcmp(what, "hostnames") == 0 || strcmp(what, "hostname") == 0 ||
        strcmp(what, "hostlist") == 0) {
        if (!arg)
            arg = getenv("SLURM_JOB_NODELIST");
        if (!arg || !*arg)
            return bad(prog, "show %s: no list given and SLURM_JOB_NODELIST is not set", what);
        char **names;
        size_t n;
        if (sl_hostlist_expand(arg, &names, &n, err, sizeof err) != 0)
            return bad(prog, "show %s: %s", what, err);
        if (strcmp(what, "hostlist") == 0) {
            size_t need = sl_hostlist_format((const char *const *)names, n, NULL, 0);
            char *buf = malloc(need + 1);
            if (!buf) abort();
            sl_hostlist_format((const char *const *)names, n, buf, need + 1);
            puts(buf);
            free(buf);
        } else {
            for (size_t i = 0; i < n; i++)
                puts(names[i]);
        }
        sl_hostlist_free(names, n);
        return CLI_OK;
    }
    if (strcmp(what, "job") == 0 || strcmp(what, "jobid") == 0) {
        if (!arg)
            arg = getenv("SLURM_JOB_ID");
        if (!arg || !*arg || strspn(arg, "0123456789_") != strlen(arg))
            return bad(prog, "show job: \"%s\" is not a job id", arg ? arg : "");
        char path[96];
        snprintf(path, sizeof path, "/v1/jobs/%s", arg);
        json_t *j = NULL;
        long st;
        int rc = cli_http(c, "GET", path, NULL, &st, &j, NULL);
        if (rc != CLI_OK)
            return rc;
        if (st < 200 || st >= 300) {
            fprintf(stderr, "slurm_load_jobs error: %s\n",
                    st == 404 ? "Invalid job id specified" : jstr(j, "message", "the server refused"));
            json_decref(j);
            return CLI_ESERVER;
        }
        show_job(j);
        json_decref(j);
        return CLI_OK;
    }
    if (strcmp(what, "node") == 0 || strcmp(what, "nodes") == 0) {
        json_t *out = NULL, *n;
        int rc = cli_call(c, "GET", "/v1/nodes", NULL, &out);
        if (rc != CLI_OK)
            return rc;
        size_t i, shown = 0;
        json_array_foreach(json_object_get(out, "nodes"), i, n) {
            if (arg && strcmp(jstr(n, "name", ""), arg) != 0)
                continue;
            show_node(n);
            shown++;
        }
        json_decref(out);
        if (arg && shown == 0) {
            fprintf(stderr, "Node %s not found\n", arg);
            return CLI_ESERVER;
        }
        return CLI_OK;
    }
    return bad(prog, "show %s: not supported (hostnames, hostlist, job, node)", what);
}
