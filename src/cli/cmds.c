/*
 * cmds.c - the `sluice` commands that talk to the controller: submit,
 * queue, show, cancel, nodes, tenants, logs.
 *
 * Each one makes one or a few HTTP requests and prints either a table for
 * people or, with --json, the server's own JSON objects unchanged (so a
 * script sees exactly the fields docs/api.md promises).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "quantity.h"

#include "cli.h"
#include "jobspec.h"

/* ---- small helpers ---- */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void fmt_dur(double secs, char *buf, size_t len) {
    if (secs < 0) secs = 0;
    long s = (long)secs;
    if (s < 60) snprintf(buf, len, "%lds", s);
    else if (s < 3600) snprintf(buf, len, "%ldm%02lds", s / 60, s % 60);
    else if (s < 86400) snprintf(buf, len, "%ldh%02ldm", s / 3600, (s % 3600) / 60);
    else snprintf(buf, len, "%ldd%02ldh", s / 86400, (s % 86400) / 3600);
}

/* A JSON scalar as text ("16", "128Gi", "-" for null/absent). */
static const char *val_str(json_t *v, char *buf, size_t len) {
    if (json_is_string(v)) return json_string_value(v);
    if (json_is_integer(v)) {
        snprintf(buf, len, "%lld", (long long)json_integer_value(v));
        return buf;
    }
    if (json_is_real(v)) {
        snprintf(buf, len, "%g", json_real_value(v));
        return buf;
    }
    if (json_is_true(v)) return "true";
    if (json_is_false(v)) return "false";
    return "-";
}

static int parse_id(cli_t *c, const char *s, long long *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v <= 0) {
        cli_usage_error(c, "\"%s\" is not a job id (a positive whole number)", s);
        return -1;
    }
    *out = v;
    return 0;
}

/* A job named as the API names it: "123", or "123_4" for element 4 of
 * array 123 (docs/arrays.md); copied into ref. 0, or -1 after a usage error. */
static int parse_ref(cli_t *c, const char *s, char *ref, size_t len) {
    long long id;
    const char *us = strchr(s, '_');
    char head[32];
    if (us == NULL)
        return parse_id(c, s, &id) ? -1 : (snprintf(ref, len, "%lld", id), 0);
    snprintf(head, sizeof head, "%.*s", (int)(us - s < 31 ? us - s : 31), s);
    const char *p = us + 1;
    while (*p >= '0' && *p <= '9') p++;
    if (us - s > 20 || us[1] == '\0' || *p != '\0' || p - us > 11 || parse_id(c, head, &id) < 0) {
        if (us - s <= 20)
            cli_usage_error(c, "\"%s\" is not a job id (123, or 123_4 for element 4 of array 123)", s);
        return -1;
    }
    snprintf(ref, len, "%lld_%s", id, us + 1);
    return 0;
}

/* The numeric id of a job named "123" or "123_4" (asking the server for an
 * array's element). 0, or a CLI_E* code. */
static int resolve_ref(cli_t *c, const char *s, long long *out) {
    char ref[48], path[80];
    if (parse_ref(c, s, ref, sizeof ref) < 0) return CLI_EUSAGE;
    if (strchr(ref, '_') == NULL) {
        *out = strtoll(ref, NULL, 10);
        return CLI_OK;
    }
    snprintf(path, sizeof path, "/v1/jobs/%s", ref);
    json_t *j = NULL;
    int rc = cli_call(c, "GET", path, NULL, &j);
    if (rc == CLI_OK) *out = (long long)json_integer_value(json_object_get(j, "id"));
    json_decref(j);
    return rc;
}

static int parse_num(cli_t *c, const char *flag, long long lo, long long hi, long long *out) {
    const char *s = cli_get(c, flag);
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        cli_usage_error(c, "--%s: \"%s\" is not a whole number from %lld to %lld", flag, s, lo, hi);
        return -1;
    }
    *out = v;
    return 0;
}

/* A simple table: rows of cells, printed with columns padded to width. */
typedef struct table {
    int ncol;
    int nrow;
    char ***rows;
} table_t;

static void tbl_row(table_t *t, ...) __attribute__((sentinel));
static void tbl_row(table_t *t, ...) {
    va_list ap;
    char **row = calloc((size_t)t->ncol, sizeof *row);
    va_start(ap, t);
    for (int i = 0; i < t->ncol; i++) {
        const char *s = va_arg(ap, const char *);
        row[i] = strdup(s ? s : "");
    }
    va_end(ap);
    t->rows = realloc(t->rows, sizeof *t->rows * (size_t)(t->nrow + 1));
    t->rows[t->nrow++] = row;
}

static void tbl_print(table_t *t) {
    int w[32] = {0};
    for (int r = 0; r < t->nrow; r++)
        for (int i = 0; i < t->ncol; i++) {
            int l = (int)strlen(t->rows[r][i]);
            if (l > w[i]) w[i] = l;
        }
    for (int r = 0; r < t->nrow; r++) {
        for (int i = 0; i < t->ncol; i++) {
            if (i == t->ncol - 1) printf("%s", t->rows[r][i]);
            else printf("%-*s  ", w[i], t->rows[r][i]);
        }
        printf("\n");
    }
    for (int r = 0; r < t->nrow; r++) {
        for (int i = 0; i < t->ncol; i++) free(t->rows[r][i]);
        free(t->rows[r]);
    }
    free(t->rows);
}

/* "4 GPU, 16 CPU, 128Gi" for one task of job j. */
static void per_task(json_t *j, char *buf, size_t len) {
    char b1[32], b2[32], b3[32];
    json_t *share = json_object_get(j, "gpu_share");
    long long gpus = json_integer_value(json_object_get(j, "gpus"));
    if (share && !json_is_null(share))
        snprintf(buf, len, "%s GPU, %s CPU, %s", val_str(share, b1, sizeof b1),
                 val_str(json_object_get(j, "cpus"), b2, sizeof b2),
                 val_str(json_object_get(j, "memory"), b3, sizeof b3));
    else
        snprintf(buf, len, "%lld GPU, %s CPU, %s", gpus, val_str(json_object_get(j, "cpus"), b2, sizeof b2),
                 val_str(json_object_get(j, "memory"), b3, sizeof b3));
}

/* ---- submit ---- */

/* A GPU model flag's names: repeated, or comma-separated. */
static int flag_names(cli_t *c, const sl_jobspec_field_t *f, json_t *job) {
    const char **vals;
    int n = cli_multi(c, f->flag, &vals);
    json_t *names = json_array();
    json_object_set_new(job, f->name, names);
    for (int i = 0; i < n; i++) {
        char *copy = strdup(vals[i]), *save = NULL;
        for (char *m = strtok_r(copy, ",", &save); m; m = strtok_r(NULL, ",", &save)) {
            char err[256];
            json_t *v = sl_jobspec_from_text(f, m, err, sizeof err);
            if (v == NULL) {
                cli_usage_error(c, "--%s: %s", f->flag, err);
                free(copy);
                return -1;
            }
            json_array_append_new(names, v);
        }
        free(copy);
    }
    return 0;
}

/* --env K=V, repeated; merged into the env a spec file gave. */
static int flag_env(cli_t *c, const sl_jobspec_field_t *f, json_t *job) {
    const char **vals;
    int n = cli_multi(c, f->flag, &vals);
    json_t *env = json_object_get(job, f->name);
    if (!json_is_object(env)) {
        env = json_object();
        json_object_set_new(job, f->name, env);
    }
    for (int i = 0; i < n; i++) {
        const char *eq = strchr(vals[i], '=');
        if (!eq || eq == vals[i]) {
            cli_usage_error(c, "--%s: \"%s\" is not K=V", f->flag, vals[i]);
            return -1;
        }
        char *k = strndup(vals[i], (size_t)(eq - vals[i]));
        if (!sl_jobspec_env_name_ok(k)) {
            cli_usage_error(c, "--%s: \"%s\" is not a valid variable name", f->flag, k);
            free(k);
            return -1;
        }
        json_object_set_new(env, k, json_string(eq + 1));
        free(k);
    }
    return 0;
}

/* The flags of the job-spec table into job (over what a spec file gave):
 * every value checked against the field's type and range, as the server
 * will check it. 0, or -1 after a usage error. */
static int submit_flags(cli_t *c, json_t *job) {
    const sl_jobspec_field_t *gpus = &sl_jobspec_fields[SL_JS_GPUS];
    const sl_jobspec_field_t *share = &sl_jobspec_fields[SL_JS_GPU_SHARE];
    if (cli_has(c, gpus->flag) && cli_has(c, share->flag)) {
        cli_usage_error(c, "--%s and --%s exclude each other", gpus->flag, share->flag);
        return -1;
    }
    for (int i = 0; i < SL_JS_NFIELDS; i++) {
        const sl_jobspec_field_t *f = &sl_jobspec_fields[i];
        if (f->flag == NULL || !cli_has(c, f->flag))
            continue;
        if (f->type == SL_FT_NAMES) {
            if (flag_names(c, f, job) < 0)
                return -1;
            continue;
        }
        if (f->type == SL_FT_ENV) {
            if (flag_env(c, f, job) < 0)
                return -1;
            continue;
        }
        char err[256];
        json_t *v = sl_jobspec_from_text(f, cli_get(c, f->flag), err, sizeof err);
        if (v == NULL) {
            cli_usage_error(c, "--%s: %s", f->flag, err);
            return -1;
        }
        json_object_set_new(job, f->name, v);
        /* Whole GPUs on the command line replace a spec file's share, and
         * the other way round. */
        if (i == SL_JS_GPUS)
            json_object_del(job, share->name);
        else if (i == SL_JS_GPU_SHARE)
            json_object_del(job, gpus->name);
    }
    return 0;
}

/* A batch script given as the command: its directives make the spec, which
 * the flags then override as they override a spec file's fields. */
static json_t *script_spec(cli_t *c) {
    char *text = NULL;
    if (cli_sbatch_read(c->command[0], &text) != CLI_OK)
        return NULL;
    cli_sbatch_t *sb = cli_sbatch_new(cli_has(c, "ignore-unsupported"));
    json_t *job = NULL;
    if (cli_sbatch_script(sb, c->command[0], text) == CLI_OK)
        job = cli_sbatch_spec(sb, c->command[0], text, c->command + 1, c->ncommand - 1);
    if (job)
        cli_sbatch_slurm_request(sb, job);
    cli_sbatch_free(sb);
    free(text);
    return job;
}

/* One submission (a spec file's document, a script's, the flags'): the
 * flags over it, then POST /v1/jobs (or printed with --dry-run, into
 * dry when there are several). */
static int submit_one(cli_t *c, json_t *job, bool script, json_t *dry, json_t *answers) {
    json_t *out = NULL;
    if (submit_flags(c, job) < 0)
        return CLI_EUSAGE;
    if (c->ncommand > 0 && !script) {
        json_t *cmd = json_array();
        for (int i = 0; i < c->ncommand; i++) json_array_append_new(cmd, json_string(c->command[i]));
        json_object_set_new(job, "command", cmd);
    }
    if (!json_object_get(job, "command") && !json_object_get(job, "image") && !json_object_get(job, "containers"))
        return cli_usage_error(c, "nothing to run: give a command after --, an --image, or -f FILE");
    if (!json_object_get(job, "tenant") && c->tenant)
        json_object_set_new(job, "tenant", json_string(c->tenant));
    if (cli_has(c, "dry-run")) {
        if (dry) json_array_append(dry, job);
        else cli_print_json(job);
        return CLI_OK;
    }
    int rc = cli_call(c, "POST", "/v1/jobs", job, &out);
    if (rc != CLI_OK) return rc;
    size_t wi; /* the controller's word on it (an envFrom key left out) */
    json_t *w;
    json_array_foreach(json_object_get(out, "warnings"), wi, w)
        fprintf(stderr, "sluice submit: warning: job %lld: %s\n",
                (long long)json_integer_value(json_object_get(out, "id")), json_string_value(w));
    if (c->json) {
        if (answers) json_array_append(answers, out);
        else cli_print_json(out);
    } else if (cli_has(c, "quiet")) {
        printf("%lld\n", (long long)json_integer_value(json_object_get(out, "id")));
    } else {
        const char *name = json_string_value(json_object_get(out, "name"));
        const char *st = json_string_value(json_object_get(out, "state"));
        const char *reason = json_string_value(json_object_get(out, "reason"));
        const char *arr = json_string_value(json_object_get(out, "array"));
        printf("submitted %sjob %lld%s%s%s%s%s: %s%s%s\n", arr ? "array " : "",
               (long long)json_integer_value(json_object_get(out, "id")),
               name && *name ? " (" : "", name && *name ? name : "", name && *name ? ")" : "",
               arr ? ", indexes " : "", arr ? arr : "",
               st ? st : "?", reason && *reason ? ", " : "", reason && *reason ? reason : "");
    }
    fflush(stdout);
    json_decref(out);
    return CLI_OK;
}

int cli_cmd_submit(cli_t *c) {
    json_t *jobs = NULL;
    int rc = CLI_EUSAGE;
    const char *file = cli_get(c, "file");
    bool script = !file && c->ncommand > 0 && !c->command_after_dashes &&
                  cli_sbatch_is_script(c->command[0]);
    if (script) {
        json_t *job = script_spec(c);
        if (job == NULL)
            return CLI_EUSAGE;
        jobs = json_pack("[o]", job);
    } else if (file) {
        /* Every problem of every document at once, and nothing submitted
         * unless the whole file is right; warnings either way. */
        json_t *errors = json_array(), *warnings = json_array();
        jobs = cli_spec_load(file, c->tenant, errors, warnings);
        size_t i;
        json_t *m;
        json_array_foreach(warnings, i, m)
            fprintf(stderr, "sluice submit: warning: %s\n", json_string_value(m));
        json_array_foreach(errors, i, m)
            fprintf(stderr, "sluice submit: %s\n", json_string_value(m));
        json_decref(errors);
        json_decref(warnings);
        if (!jobs)
            return CLI_EUSAGE;
    } else {
        jobs = json_pack("[{}]");
    }
    /* Several documents: --dry-run and --json print one array. */
    bool several = json_array_size(jobs) > 1;
    json_t *dry = several && cli_has(c, "dry-run") ? json_array() : NULL;
    json_t *answers = several && c->json ? json_array() : NULL;
    size_t i;
    json_t *job;
    json_array_foreach(jobs, i, job) {
        if ((rc = submit_one(c, job, script, dry, answers)) != CLI_OK) {
            if (several)
                fprintf(stderr, "sluice submit: document %zu of %s not submitted%s\n", i + 1, file,
                        i ? "; the ones before it were" : "");
            break;
        }
    }
    if (dry && rc == CLI_OK) cli_print_json(dry);
    if (answers && json_array_size(answers)) cli_print_json(answers);
    json_decref(dry);
    json_decref(answers);
    json_decref(jobs);
    return rc;
}

/* ---- queue ---- */

static void url_append(char *q, size_t len, const char *key, const char *val) {
    size_t l = strlen(q);
    snprintf(q + l, len - l, "%c%s=", l ? '&' : '?', key);
    l = strlen(q);
    for (const unsigned char *p = (const unsigned char *)val; *p && l + 4 < len; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            *p == '-' || *p == '_' || *p == '.' || *p == ',')
            q[l++] = (char)*p;
        else
            l += (size_t)snprintf(q + l, len - l, "%%%02X", *p);
    }
    q[l] = '\0';
}

/* The id in the first column of the table's last row: the next page
 * starts after it. 0 when the text has no row. */
static unsigned long long last_row_id(const char *text, size_t len) {
    size_t e = len;
    while (e > 0 && text[e - 1] == '\n')
        e--;
    size_t b = e;
    while (b > 0 && text[b - 1] != '\n')
        b--;
    if (b == 0)
        return 0; /* only the header line */
    return strtoull(text + b, NULL, 10);
}

/* GET /v1/jobs with the filters, a page at a time (the API pages by job id,
 * at most 10,000 jobs a page): the server formats the table (?view=table)
 * for people, and the first page's header line is printed once; with
 * --json the pages' jobs stream to stdout as one {"jobs":[...],
 * "next_after":...} document, the server's bytes (one page unchanged;
 * opts.c, cli_pages_t). --limit caps the jobs printed in all. */
static int queue_once(cli_t *c) {
    if (c->npos > 0) return cli_usage_error(c, "unexpected argument \"%s\"", c->pos[0]);
    char q[600] = "";
    long long lim = -1;
    if (cli_has(c, "tenant")) url_append(q, sizeof q, "tenant", cli_get(c, "tenant"));
    if (cli_has(c, "limit") && parse_num(c, "limit", 1, 1000000000LL, &lim)) return CLI_EUSAGE;
    char filters[600] = "";
    if (cli_has(c, "state")) {
        const char *st = cli_get(c, "state");
        static const char *states[] = {"pending", "running", "succeeded", "failed", "cancelled"};
        int ok = 0;
        for (int i = 0; i < 5; i++) ok |= !strcmp(st, states[i]);
        if (!ok)
            return cli_usage_error(c, "--state: \"%s\" is not pending, running, succeeded, failed or cancelled", st);
        url_append(filters, sizeof filters, "state", st);
    } else if (!cli_has(c, "all")) {
        url_append(filters, sizeof filters, "state", "pending,running");
    }
    if (!c->json) url_append(filters, sizeof filters, "view", "table");
    const long long page_max = 10000;
    long long left = lim;
    unsigned long long after = 0;
    cli_pages_t pages; /* --json */
    cli_pages_init(&pages, stdout);
    int rc = CLI_OK;
    for (int page = 0;; page++) {
        long long want = left >= 0 && left < page_max ? left : page_max;
        char path[800], num[32];
        snprintf(path, sizeof path, "%s", q);
        /* Every page asks for its size (at most the server's largest), so
         * that up to 10,000 jobs come in one reply. */
        snprintf(num, sizeof num, "%lld", want);
        url_append(path, sizeof path, "limit", num);
        if (after) {
            snprintf(num, sizeof num, "%llu", after);
            url_append(path, sizeof path, "after", num);
        }
        if (filters[0]) snprintf(path + strlen(path), sizeof path - strlen(path), "%c%s",
                                 path[0] ? '&' : '?', filters + 1);
        char full[840];
        snprintf(full, sizeof full, "/v1/jobs%s", path);
        cli_reply_t r;
        if (c->json) cli_pages_begin(&pages);
        rc = cli_http_raw(c, "GET", full, NULL, 0, &r, c->json ? cli_pages_sink : NULL, &pages);
        if (rc != CLI_OK) break;
        if (r.status < 200 || r.status >= 300) {
            /* After a page has gone to stdout, the error goes to stderr
             * (stdout holds a cut document, ended by cli_pages_close). */
            int json = c->json;
            c->json = json && page == 0;
            rc = cli_reply_error(c, &r);
            c->json = json;
            cli_reply_free(&r);
            break;
        }
        bool more = false;
        if (c->json) {
            /* A page that says where the next one starts is full: it holds
             * `want` jobs (docs/api.md). */
            unsigned long long next = r.next_after ? r.next_after : cli_pages_next_after(&pages);
            more = next != 0 && (left < 0 || left > want);
            after = next;
            if (left >= 0) left -= want;
        } else {
            if (strncmp(r.ctype, "text/plain", 10) != 0) {
                fprintf(stderr, "sluice queue: the server did not send a table (Content-Type \"%s\"); "
                                "is sluiced older than this sluice?\n", r.ctype);
                rc = CLI_ESERVER;
                cli_reply_free(&r);
                break;
            }
            const char *body = r.body;
            size_t len = r.len;
            const char *nl = memchr(body, '\n', len);
            long long rows = 0;
            for (const char *p = nl; p && p + 1 < body + len; p = memchr(p + 1, '\n', (size_t)(body + len - p - 1)))
                rows++;
            if (page == 0 && rows == 0) {
                if (!cli_has(c, "all"))
                    printf("no pending or running jobs (sluice queue --all shows finished ones)\n");
                else
                    fwrite(body, 1, len, stdout);
            } else if (page == 0) {
                fwrite(body, 1, len, stdout);
            } else if (nl) { /* later pages: their rows, not the header again */
                fwrite(nl + 1, 1, (size_t)(body + len - nl - 1), stdout);
            }
            if (left >= 0) left -= rows;
            /* The server says where the next page starts (an array's folded
             * row holds many jobs, and its first cell is no job id); a full
             * page from a server that does not say goes on as before. */
            more = (r.next_after != 0 || rows == want) && (left < 0 || left > 0);
            after = r.next_after ? r.next_after : last_row_id(body, len);
        }
        cli_reply_free(&r);
        if (!more || after == 0) break;
    }
    if (c->json && cli_pages_close(&pages, rc == CLI_OK) < 0 && rc == CLI_OK) {
        fprintf(stderr, "sluice queue: cannot write the output: %s\n", strerror(errno));
        rc = CLI_ESERVER;
    }
    return rc;
}

/* ---- show ---- */

static void print_time_field(const char *label, json_t *v) {
    if (!json_is_number(v)) return;
    double t = json_number_value(v);
    time_t tt = (time_t)t;
    struct tm tm;
    char buf[64], ago[32];
    localtime_r(&tt, &tm);
    strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
    fmt_dur(now_s() - t, ago, sizeof ago);
    printf("%-11s %s (%s ago)\n", label, buf, ago);
}

/* "killed:     used 141Mi of its 141Mi hard limit (110% of 128Mi)" for each
 * task the kernel killed for memory ("task 2 used ..." in a gang). */
static void print_oom(json_t *j) {
    json_t *pl = json_object_get(j, "placement"), *p;
    size_t i;
    json_array_foreach(pl, i, p) {
        if (!json_is_true(json_object_get(p, "oom_killed"))) continue;
        long long peak = json_integer_value(json_object_get(p, "mem_peak_bytes"));
        long long lim = json_integer_value(json_object_get(p, "mem_limit_bytes"));
        long long req = json_integer_value(json_object_get(p, "mem_request_bytes"));
        char who[32] = "", a[24], b[24], r[24], pct[48] = "";
        if (json_array_size(pl) > 1) snprintf(who, sizeof who, "task %zu ", i);
        sl_qty_format_mem_round(peak, a, sizeof a);
        sl_qty_format_mem_round(lim, b, sizeof b);
        sl_qty_format_mem_round(req, r, sizeof r);
        if (lim > 0 && req > 0) snprintf(pct, sizeof pct, " (%.0f%% of %s)", 100.0 * (double)lim / (double)req, r);
        if (peak > 0 && lim > 0)
            printf("%-11s %sused %s of its %s hard limit%s\n", "killed:", who, a, b, pct);
        else if (lim > 0)
            printf("%-11s %sfor memory at its %s hard limit%s\n", "killed:", who, b, pct);
        else
            printf("%-11s %sfor memory\n", "killed:", who);
    }
}

static const char *dash(const char *s) {
    return s && s[0] ? s : "-";
}

/* "LABEL: a, b" for a non-empty list of strings. */
static void print_list(const char *label, json_t *l) {
    if (json_array_size(l) == 0) return;
    printf("%-11s", label);
    size_t i;
    json_t *v;
    json_array_foreach(l, i, v) printf("%s %s", i ? "," : "", json_string_value(v));
    printf("\n");
}

static int show_once(cli_t *c) {
    char ref[48];
    if (c->npos != 1) return cli_usage_error(c, "give one job id");
    if (parse_ref(c, c->pos[0], ref, sizeof ref)) return CLI_EUSAGE;
    char path[80];
    snprintf(path, sizeof path, "/v1/jobs/%s", ref);
    json_t *j = NULL;
    int rc = cli_call(c, "GET", path, NULL, &j);
    if (rc != CLI_OK) return rc;
    if (c->json) {
        cli_print_json(j);
        json_decref(j);
        return CLI_OK;
    }
    char b[128], each[96];
    const char *name = json_string_value(json_object_get(j, "name"));
    const char *state = json_string_value(json_object_get(j, "state"));
    const char *reason = json_string_value(json_object_get(j, "reason"));
    long long id = (long long)json_integer_value(json_object_get(j, "id"));
    json_t *aid = json_object_get(j, "array_id");
    if (json_is_integer(aid))
        printf("job %lld_%lld (id %lld)%s%s\n", (long long)json_integer_value(aid),
               (long long)json_integer_value(json_object_get(j, "array_index")), id,
               name && *name ? " " : "", name && *name ? name : "");
    else
        printf("job %lld%s%s\n", id, name && *name ? " " : "", name && *name ? name : "");
    printf("%-11s %s\n", "tenant:", json_string_value(json_object_get(j, "tenant")));
    printf("%-11s %s\n", "state:", state ? state : "?");
    if (reason && *reason)
        printf("%-11s %s\n", state && !strcmp(state, "pending") ? "waiting:" : "reason:", reason);
    json_t *ec = json_object_get(j, "exit_code");
    if (json_is_integer(ec)) printf("%-11s %lld\n", "exit code:", (long long)json_integer_value(ec));
    print_oom(j);
    per_task(j, each, sizeof each);
    printf("%-11s %s x (%s)", "tasks:", val_str(json_object_get(j, "tasks"), b, sizeof b), each);
    json_t *mt = json_object_get(j, "min_tasks");
    if (json_is_integer(mt) && json_integer_value(mt) != json_integer_value(json_object_get(j, "tasks")))
        printf(", at least %lld", (long long)json_integer_value(mt));
    printf("\n");
    json_t *gm = json_object_get(j, "gpu_models");
    if (json_array_size(gm) > 0) {
        printf("%-11s", "gpu models:");
        size_t i;
        json_t *v;
        json_array_foreach(gm, i, v) printf(" %s", json_string_value(v));
        printf("\n");
    }
    json_t *gmem = json_object_get(j, "gpu_memory");
    if (json_is_string(gmem)) printf("%-11s %s\n", "gpu memory:", json_string_value(gmem));
    if (json_is_string(json_object_get(j, "pool")))
        printf("%-11s %s\n", "pool:", json_string_value(json_object_get(j, "pool")));
    if (json_is_string(json_object_get(j, "reservation")))
        printf("%-11s %s\n", "reservation:", json_string_value(json_object_get(j, "reservation")));
    printf("%-11s %s", "priority:", val_str(json_object_get(j, "priority"), b, sizeof b));
    json_t *pcl = json_object_get(j, "priority_class");
    printf(json_is_string(pcl) ? " (class %s)\n" : "\n", json_string_value(pcl));
    long long tl = json_integer_value(json_object_get(j, "time_limit"));
    if (tl > 0) {
        fmt_dur((double)tl, b, sizeof b);
        printf("%-11s %s\n", "time limit:", b);
    }
    if (json_is_string(json_object_get(j, "image")))
        printf("%-11s %s\n", "image:", json_string_value(json_object_get(j, "image")));
    json_t *cmd = json_object_get(j, "command");
    if (json_array_size(cmd) > 0) {
        printf("%-11s", "command:");
        size_t i;
        json_t *v;
        json_array_foreach(cmd, i, v) {
            const char *s = json_string_value(v);
            printf(strpbrk(s ? s : "", " \t'\"$") ? " '%s'" : " %s", s ? s : "");
        }
        printf("\n");
    }
    if (json_is_string(json_object_get(j, "array")))
        printf("%-11s %s\n", "array:", json_string_value(json_object_get(j, "array")));
    if (json_is_string(json_object_get(j, "dependency")))
        printf("%-11s %s\n", "depends on:", json_string_value(json_object_get(j, "dependency")));
    cli_show_size(j);
    cli_show_nodes(j);
    print_list("nodes with:", json_object_get(j, "node_selector"));
    if (json_is_string(json_object_get(j, "constraint")))
        printf("%-11s %s\n", "constraint:", json_string_value(json_object_get(j, "constraint")));
    print_list("tolerates:", json_object_get(j, "tolerations"));
    print_time_field("submitted:", json_object_get(j, "submit_time"));
    print_time_field("started:", json_object_get(j, "start_time"));
    print_time_field("ended:", json_object_get(j, "end_time"));
    json_t *pl = json_object_get(j, "placement");
    if (json_array_size(pl) > 0) {
        printf("placement:\n");
        table_t t = {.ncol = 6};
        tbl_row(&t, "  TASK", "NODE", "GPUS", "STATE", "PID", "EXIT", NULL);
        size_t i;
        json_t *p;
        json_array_foreach(pl, i, p) {
            char task[24], gpus[256] = "", pid[24], ex[48], nb[32];
            snprintf(task, sizeof task, "  %s", val_str(json_object_get(p, "task"), nb, sizeof nb));
            size_t gi;
            json_t *g;
            json_array_foreach(json_object_get(p, "gpus"), gi, g) {
                size_t l = strlen(gpus);
                snprintf(gpus + l, sizeof gpus - l, "%s%lld", gi ? "," : "", (long long)json_integer_value(g));
            }
            snprintf(pid, sizeof pid, "%s", val_str(json_object_get(p, "pid"), nb, sizeof nb));
            json_t *sig = json_object_get(p, "signal"), *pex = json_object_get(p, "exit_code");
            if (json_is_integer(sig) && json_integer_value(sig) > 0)
                snprintf(ex, sizeof ex, "signal %lld", (long long)json_integer_value(sig));
            else
                snprintf(ex, sizeof ex, "%s", val_str(pex, nb, sizeof nb));
            if (json_is_true(json_object_get(p, "oom_killed")))
                snprintf(ex + strlen(ex), sizeof ex - strlen(ex), " (OOM)");
            tbl_row(&t, task, json_string_value(json_object_get(p, "node")), gpus[0] ? gpus : "-",
                    json_string_value(json_object_get(p, "state")), pid, ex, NULL);
        }
        tbl_print(&t);
    }
    cli_show_preemptions(j);
    cli_show_attempts(j);
    cli_show_efficiency(j, now_s());
    json_decref(j);
    return CLI_OK;
}

/* ---- cancel ---- */

int cli_cmd_cancel(cli_t *c) {
    if (c->npos < 1) return cli_usage_error(c, "give at least one job id");
    char ids[256][48];
    if (c->npos > 256) return cli_usage_error(c, "at most 256 job ids at once");
    for (int i = 0; i < c->npos; i++)
        if (parse_ref(c, c->pos[i], ids[i], sizeof ids[i])) return CLI_EUSAGE;
    int rc = CLI_OK;
    json_t *all = json_array();
    for (int i = 0; i < c->npos; i++) {
        char path[80];
        snprintf(path, sizeof path, "/v1/jobs/%s", ids[i]);
        json_t *j = NULL;
        int r = cli_call(c, "DELETE", path, NULL, &j);
        if (r == CLI_EUNREACHABLE) {
            rc = r;
            break;
        }
        if (r != CLI_OK) {
            rc = r;
            continue;
        }
        if (!c->json && strchr(ids[i], '_') == NULL &&
            json_integer_value(json_object_get(j, "array_id")) == strtoll(ids[i], NULL, 10))
            printf("cancelled array job %s (its pending and running elements)\n", ids[i]);
        else if (!c->json)
            printf("cancelled job %s\n", ids[i]);
        json_array_append_new(all, j);
    }
    if (c->json) {
        if (c->npos == 1 && json_array_size(all) == 1) cli_print_json(json_array_get(all, 0));
        else if (json_array_size(all) > 0) {
            json_t *o = json_pack("{s:O}", "jobs", all);
            cli_print_json(o);
            json_decref(o);
        }
    }
    json_decref(all);
    return rc;
}

/* ---- nodes, tenants ---- */

/* GET /v1/nodes a page at a time (by name, ?limit=&after=, docs/api.md)
 * into *out as one {"nodes":[...]} object, as the unpaged answer was: 1,000
 * nodes a page, or fewer so that --limit N takes at most N in all
 * (`--limit 100`: one page of 100). A sluiced older than paging answers
 * every node at once without next_after: that is the last page, cut to
 * --limit here. */
static int nodes_fetch(cli_t *c, json_t **out) {
    long long lim = -1;
    if (cli_has(c, "limit") && parse_num(c, "limit", 1, 1000000000LL, &lim)) return CLI_EUSAGE;
    const long long page_max = 1000;
    json_t *all = json_array();
    char *after = NULL;
    int rc = CLI_OK;
    for (;;) {
        long long left = lim < 0 ? page_max : lim - (long long)json_array_size(all);
        char path[512] = "", num[32], full[540];
        snprintf(num, sizeof num, "%lld", left < page_max ? left : page_max);
        url_append(path, sizeof path, "limit", num);
        if (after) url_append(path, sizeof path, "after", after);
        snprintf(full, sizeof full, "/v1/nodes%s", path);
        json_t *page = NULL;
        if ((rc = cli_call(c, "GET", full, NULL, &page)) != CLI_OK) break;
        json_t *nodes = json_object_get(page, "nodes"), *next = json_object_get(page, "next_after");
        size_t i;
        json_t *n;
        json_array_foreach(nodes, i, n) {
            if (lim >= 0 && (long long)json_array_size(all) >= lim) break;
            json_array_append(all, n);
        }
        /* Go on while the server says where, it moved forward (names
         * only grow along the pages) and --limit wants more. */
        bool more = json_is_string(next) && json_array_size(nodes) > 0 &&
                    (after == NULL || strcmp(json_string_value(next), after) > 0) &&
                    (lim < 0 || (long long)json_array_size(all) < lim);
        free(after);
        after = more ? strdup(json_string_value(next)) : NULL;
        json_decref(page);
        if (after == NULL) break;
    }
    free(after);
    if (rc != CLI_OK) {
        json_decref(all);
        return rc;
    }
    *out = json_pack("{s:o}", "nodes", all);
    return CLI_OK;
}

int cli_cmd_nodes(cli_t *c) {
    if (c->npos > 0) return cli_usage_error(c, "unexpected argument \"%s\"", c->pos[0]);
    json_t *out = NULL;
    int rc = nodes_fetch(c, &out);
    if (rc != CLI_OK) return rc;
    if (c->json) {
        cli_print_json(out);
        json_decref(out);
        return CLI_OK;
    }
    table_t t = {.ncol = 12};
    tbl_row(&t, "NAME", "STATE", "POOL", "GPU MODEL", "GPUS FREE", "CPUS FREE", "MEMORY FREE", "TASKS",
            "LAST SEEN", "LABELS", "TAINTS", "TOPOLOGY", NULL);
    size_t i;
    json_t *n;
    json_array_foreach(json_object_get(out, "nodes"), i, n) {
        char b1[32], b2[32], b3[32], b4[32], b5[32], b6[32], b7[32];
        char gpus[80], cpus[80], mem[80], seen[32];
        json_t *fr = json_object_get(n, "free");
        snprintf(gpus, sizeof gpus, "%s/%s", val_str(json_object_get(fr, "gpus"), b1, sizeof b1),
                 val_str(json_object_get(n, "gpus"), b2, sizeof b2));
        snprintf(cpus, sizeof cpus, "%s/%s", val_str(json_object_get(fr, "cpus"), b3, sizeof b3),
                 val_str(json_object_get(n, "cpus"), b4, sizeof b4));
        snprintf(mem, sizeof mem, "%s/%s", val_str(json_object_get(fr, "memory"), b5, sizeof b5),
                 val_str(json_object_get(n, "memory"), b6, sizeof b6));
        json_t *ls = json_object_get(n, "last_seen");
        if (json_is_number(ls)) {
            fmt_dur(now_s() - json_number_value(ls), seen, sizeof seen);
            strncat(seen, " ago", sizeof seen - strlen(seen) - 1);
        } else {
            snprintf(seen, sizeof seen, "-");
        }
        json_t *model = json_object_get(n, "gpu_model");
        json_t *topo = json_object_get(n, "topology");
        tbl_row(&t, json_string_value(json_object_get(n, "name")), json_string_value(json_object_get(n, "state")),
                val_str(json_object_get(n, "pool"), b7, sizeof b7),
                json_is_string(model) ? json_string_value(model) : "-", gpus, cpus, mem,
                val_str(json_object_get(n, "tasks"), b1, sizeof b1), seen,
                dash(json_string_value(json_object_get(n, "labels"))),
                dash(json_string_value(json_object_get(n, "taints"))),
                json_is_string(topo) ? json_string_value(topo) : "-", NULL);
    }
    tbl_print(&t);
    cli_print_drains(json_object_get(out, "nodes"));
    cli_print_gpu_health(json_object_get(out, "nodes"));
    cli_print_reservations(json_object_get(out, "nodes"));
    json_decref(out);
    return CLI_OK;
}

int cli_cmd_tenants(cli_t *c) {
    if (c->npos > 0) return cli_usage_error(c, "unexpected argument \"%s\"", c->pos[0]);
    json_t *out = NULL;
    int rc = cli_call(c, "GET", "/v1/tenants", NULL, &out);
    if (rc != CLI_OK) return rc;
    if (c->json) {
        cli_print_json(out);
        json_decref(out);
        return CLI_OK;
    }
    table_t t = {.ncol = 8};
    tbl_row(&t, "NAME", "WEIGHT", "PENDING", "RUNNING", "GPUS", "CPUS", "MEMORY", "DOMINANT SHARE", NULL);
    size_t i;
    json_t *n;
    json_array_foreach(json_object_get(out, "tenants"), i, n) {
        char b1[32], b2[32], b3[32], b4[32], b5[32], b6[32], share[32];
        json_t *u = json_object_get(n, "usage");
        json_t *ds = json_object_get(n, "dominant_share");
        snprintf(share, sizeof share, json_is_number(ds) ? "%.3f" : "-", json_number_value(ds));
        tbl_row(&t, json_string_value(json_object_get(n, "name")), val_str(json_object_get(n, "weight"), b1, sizeof b1),
                val_str(json_object_get(n, "pending"), b2, sizeof b2),
                val_str(json_object_get(n, "running"), b3, sizeof b3),
                val_str(json_object_get(u, "gpus"), b4, sizeof b4), val_str(json_object_get(u, "cpus"), b5, sizeof b5),
                val_str(json_object_get(u, "memory"), b6, sizeof b6), share, NULL);
    }
    tbl_print(&t);
    json_decref(out);
    return CLI_OK;
}

/* ---- logs ---- */

/* The job's state into st (empty if it cannot be read). */
static void job_state(cli_t *c, long long id, char *st, size_t len) {
    char path[64];
    snprintf(path, sizeof path, "/v1/jobs/%lld", id);
    json_t *j = NULL;
    long status = 0;
    st[0] = '\0';
    if (cli_http(c, "GET", path, NULL, &status, &j, NULL) == CLI_OK && status == 200) {
        const char *s = json_string_value(json_object_get(j, "state"));
        snprintf(st, len, "%s", s ? s : "");
    }
    json_decref(j);
}

int cli_cmd_logs(cli_t *c) {
    long long id, task = 0;
    if (c->npos != 1) return cli_usage_error(c, "give one job id");
    int rr = resolve_ref(c, c->pos[0], &id);
    if (rr != CLI_OK) return rr;
    if (cli_has(c, "task") && parse_num(c, "task", 0, 4095, &task)) return CLI_EUSAGE;
    int follow = cli_has(c, "follow");
    if (follow && !c->json)
        return cli_logs_follow(c, id, task); /* the log stream; --json polls below */
    long long off = 0;
    json_t *acc = c->json ? json_string("") : NULL;
    int rc = CLI_OK, eof = 0;
    for (;;) {
        char path[160];
        snprintf(path, sizeof path, "/v1/jobs/%lld/logs?task=%lld&offset=%lld&limit=65536", id, task, off);
        json_t *out = NULL;
        long status = 0;
        rc = cli_http(c, "GET", path, NULL, &status, &out, NULL);
        if (rc != CLI_OK) break;
        if (status != 200) {
            char st[32] = "";
            if (follow) job_state(c, id, st, sizeof st);
            if (!strcmp(st, "pending")) {
                /* Not started yet: wait for it. */
                json_decref(out);
                usleep(300000);
                continue;
            }
            json_decref(out);
            rc = cli_call(c, "GET", path, NULL, &out);
            json_decref(out);
            break;
        }
        json_t *data = json_object_get(out, "data");
        size_t len = json_string_length(data);
        if (len > 0) {
            if (acc) {
                size_t al = json_string_length(acc);
                char *joined = malloc(al + len + 1);
                memcpy(joined, json_string_value(acc), al);
                memcpy(joined + al, json_string_value(data), len);
                json_string_setn(acc, joined, al + len);
                free(joined);
            } else {
                fwrite(json_string_value(data), 1, len, stdout);
                fflush(stdout);
            }
        }
        json_t *jo = json_object_get(out, "offset");
        off = (json_is_integer(jo) ? json_integer_value(jo) : off) + (long long)len;
        eof = json_is_true(json_object_get(out, "eof"));
        json_decref(out);
        if (eof) break;
        if (len == 0) {
            if (!follow) break;
            usleep(200000);
        }
    }
    if (acc) {
        if (rc == CLI_OK) {
            json_t *o = json_pack("{s:I,s:I,s:O,s:I,s:b}", "job", (json_int_t)id, "task", (json_int_t)task,
                                  "data", acc, "offset", (json_int_t)off, "eof", eof);
            cli_print_json(o);
            json_decref(o);
        }
        json_decref(acc);
    }
    return rc;
}

/* --watch: prints, then again after each change the event stream reports
 * (watch.c), until interrupted; show's stops once its job has ended. */
static int watch(cli_t *c, int (*once)(cli_t *), long long job, const char *path) {
    unsigned long long last = 0;
    int rc = cli_watch_wait(c, &last, job, NULL, 0); /* the id to resume from */
    for (int n = 0; rc == CLI_OK; n++) {
        /* The state before the print: what is printed is at least as late. */
        json_t *j = NULL;
        if (path && (rc = cli_call(c, "GET", path, NULL, &j)) != CLI_OK)
            break;
        const char *st = json_string_value(json_object_get(j, "state"));
        bool ended = st && strcmp(st, "pending") != 0 && strcmp(st, "running") != 0;
        json_decref(j);
        if (isatty(STDOUT_FILENO))
            fputs("\033[H\033[2J", stdout);
        else if (n > 0)
            putchar('\n');
        rc = once(c);
        fflush(stdout);
        if (rc != CLI_OK || ended)
            break;
        rc = cli_watch_wait(c, &last, job, NULL, 0);
    }
    return rc;
}

int cli_cmd_queue(cli_t *c) {
    return cli_has(c, "watch") ? watch(c, queue_once, 0, NULL) : queue_once(c);
}

int cli_cmd_show(cli_t *c) {
    if (!cli_has(c, "watch") || c->npos != 1)
        return show_once(c);
    char ref[48], path[80];
    if (parse_ref(c, c->pos[0], ref, sizeof ref)) return CLI_EUSAGE;
    snprintf(path, sizeof path, "/v1/jobs/%s", ref);
    return watch(c, show_once, atoll(ref), path);
}
