/*
 * cli.h - internals of `sluice`, the command line.
 *
 * One table of commands (main.c) drives dispatch, option parsing and every
 * --help text. Each command is a function taking the parsed options; it
 * talks to sluiced over HTTP/JSON (http.c, a small HTTP/1.1 client on a
 * plain socket, so that start-up loads no HTTP library; docs/cli-http.md
 * says why not libevent's) and prints a table
 * for people or the server's JSON for scripts (--json).
 *
 * Exit codes (docs/cli.md): 0 ok, 1 the server refused or failed the
 * request (or a waited-for job failed), 2 usage error (bad flag, bad spec
 * file), 3 cannot reach the server.
 */
#ifndef SLUICE_CLI_H
#define SLUICE_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "sluice/version.h"

enum { CLI_OK = 0, CLI_ESERVER = 1, CLI_EUSAGE = 2, CLI_EUNREACHABLE = 3 };

#define CLI_MAX_OPTS 96
#define CLI_RAW_ARGS 2
/* As CLI_RAW_ARGS, and -h is the command's own too (squeue -h: no header):
 * only the command itself prints its help. */
#define CLI_RAW_ALL 3

typedef struct cli_opt {
    const char *name;     /* long name without "--" */
    char shortname;       /* 0 if none */
    const char *metavar;  /* NULL: a flag without a value */
    int repeat;           /* may be given several times (values kept in order) */
    const char *help;
} cli_opt_t;

typedef struct cli cli_t;

typedef struct cli_cmd {
    const char *name;
    const char *args;     /* positional synopsis, e.g. "JOB" */
    const char *summary;
    const char *details;  /* extra --help paragraphs, or NULL */
    int (*run)(cli_t *c);
    const cli_opt_t *opts; /* terminated by {0} */
    int rest_is_command;  /* submit: the first positional starts the command;
                           * CLI_RAW_ARGS (sbatch): every word is the command's own */
} cli_cmd_t;

struct cli {
    const cli_cmd_t *cmd;
    /* option values by index into cmd->opts; repeatable ones in vals */
    const char *val[CLI_MAX_OPTS];
    int set[CLI_MAX_OPTS];
    const char **multi[CLI_MAX_OPTS];
    int nmulti[CLI_MAX_OPTS];
    char **pos;           /* positionals */
    int npos;
    char **command;       /* submit: after "--" */
    int ncommand;
    int command_after_dashes; /* the command followed "--" (so it is never a batch script) */
    /* globals */
    int json;
    char *server;         /* base URL, no trailing slash; several joined by ',' (--server
                           * A,B,C), which cli_http tries in turn (http.c) */
    char *token;
    char *cacert;         /* CA (PEM) that signs an https server's certificate, or NULL */
    char *tenant;         /* default tenant from the `sluice up` config, or NULL */
    char *config_path;    /* the cli.json used, or NULL */
    int quiet_unreachable; /* cli_http: do not print connection failures */
    int stream_idle_ms;   /* > 0: replies are streams, given up after this long without a byte */
};

/* opts.c: the index of an option of cmd by long name, or by short name
 * when name is NULL; -1 if it has none such. */
int cli_opt_index(const cli_cmd_t *cmd, const char *name, char shortname);
/* opts.c: option lookup by long name (the name must be in cmd->opts). */
const char *cli_get(cli_t *c, const char *name);
int cli_has(cli_t *c, const char *name);
/* Whether word w is in the comma-separated list (case-insensitive), as
 * Slurm's tools read -u, -n, -t, -p lists. */
bool cli_listed(const char *list, const char *w);
int cli_multi(cli_t *c, const char *name, const char ***vals);

/* Prints "sluice CMD: message" to stderr; returns CLI_EUSAGE. */
int cli_usage_error(cli_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* http.c: one reply. */
typedef struct cli_reply {
    long status;
    char *body;        /* malloc'd and NUL-terminated; NULL when it went to a sink */
    size_t len;
    char ctype[128];   /* Content-Type, "" if none */
    unsigned long long next_after; /* Sluice-Next-After (a paged list), 0 if none */
    char location[1024]; /* Location (of a redirect not followed), "" if none */
} cli_reply_t;

/* Receives body bytes as they arrive; returns 0, or -1 (errno set) to stop. */
typedef int (*cli_sink_fn)(void *arg, const char *p, size_t n);

/* One request on the run's kept-alive connection. body (len bytes of JSON)
 * may be NULL. On an HTTP answer fills *r and returns CLI_OK; the body of a
 * 2xx answer goes to sink when one is given (r->body stays NULL), any other
 * body into r->body. Returns CLI_EUNREACHABLE with a message printed
 * (unless c->quiet_unreachable) when no complete answer came; CLI_ESERVER
 * when the sink failed; CLI_EUSAGE for a token that cannot be sent. */
int cli_http_raw(cli_t *c, const char *method, const char *path, const char *body, size_t len,
                 cli_reply_t *r, cli_sink_fn sink, void *arg);
void cli_reply_free(cli_reply_t *r);
/* Prints the server's error for a non-2xx reply as cli_call does; returns
 * CLI_ESERVER. */
int cli_reply_error(cli_t *c, const cli_reply_t *r);

/* http.c: one request with a JSON body and answer. body may be NULL (steals nothing). On an HTTP
 * answer, *status is set and *out holds the parsed JSON (or NULL if the
 * body was not JSON; then *text holds it if text != NULL). Returns CLI_OK,
 * or CLI_EUNREACHABLE with a message printed. */
int cli_http(cli_t *c, const char *method, const char *path, json_t *body, long *status,
             json_t **out, char **text);
/* The request, mapped to exit codes: 2xx -> CLI_OK with *out; else prints
 * the server's error message and returns CLI_ESERVER. */
int cli_call(cli_t *c, const char *method, const char *path, json_t *body, json_t **out);
void cli_http_cleanup(void);
/* Forgets the kept-alive connection without closing it: for a child
 * process, whose parent still uses it. */
void cli_http_forget(void);

/* efficiency.c: prints `sluice show`'s efficiency block for job j (the
 * API's job object) at time now (seconds since the epoch); nothing for a
 * job that never started. */
void cli_show_efficiency(json_t *j, double now);

/* disruptions.c: t (seconds since the epoch) as local time with
 * its zone; `sluice show`'s preemptions and elastic size of job j (nothing
 * when it has none); `sluice nodes`' drains, after the table, for the
 * nodes array of GET /v1/nodes. */
/* reservation.c (docs/cli.md, docs/slurm.md): `sluice reservation`; the
 * user's times (now, now+1hour, 2026-12-01T10:00, 10:00) as seconds since
 * the epoch and durations (a bare number is minutes, as Slurm's
 * reservations take it; HH:MM:SS, D-HH:MM:SS, 90m, 2h) as seconds, each 0
 * or -1; scontrol's create, show and delete of reservations (argv after
 * the word "reservation"); `sluice nodes`' reservations after the table. */
int cli_cmd_reservation(cli_t *c);
/* secret.c: `sluice secret create|list|show|delete`. */
int cli_cmd_secret(cli_t *c);
int cli_resv_parse_time(const char *s, double *out);
int cli_resv_parse_duration(const char *s, long long *secs);
int cli_scontrol_create_resv(cli_t *c, int argc, char **argv);
int cli_scontrol_show_resv(cli_t *c, const char *name);
int cli_scontrol_delete_resv(cli_t *c, int argc, char **argv);
void cli_print_reservations(json_t *nodes);

void cli_local_time(double t, char *buf, size_t len);
void cli_show_preemptions(json_t *j);
/* A job with retries: its attempt now and each failed one (`attempts`). */
void cli_show_attempts(json_t *j);
void cli_show_size(json_t *j);
/* shownodes.c: show's node count, per-node tasks, whole nodes, node lists, comment. */
void cli_show_nodes(json_t *j);
void cli_print_drains(json_t *nodes);
/* `sluice nodes`: the nodes and GPUs that are not healthy or are fenced. */
void cli_print_gpu_health(json_t *nodes);

/* spec.c: reads a job spec file (Sluice YAML/JSON, or Kubernetes
 * manifests: a batch/v1 Job, a kubeflow.org/v1 PyTorchJob; "-" is stdin),
 * each YAML document one submission of docs/api.md. Returns a new JSON
 * array of the submissions in the file's order; or NULL when any document
 * has a problem, then every problem is appended to errors as a string
 * naming the file, the document (when there are several) and the field's
 * path. Warnings (fields accepted with no meaning here) are appended to
 * warnings either way. tenant (--tenant, may be NULL) stands for a
 * manifest's namespace where it names none. */
json_t *cli_spec_load(const char *path, const char *tenant, json_t *errors, json_t *warnings);

/* sbatch.c: Slurm batch scripts (docs/slurm.md). A cli_sbatch_t holds
 * sbatch's options as given: the command line's first (cli_sbatch_args),
 * then the script's #SBATCH directives (cli_sbatch_script), which never
 * override the command line. Errors are printed ("train.sh:4: --mail-type
 * is not supported") and return CLI_EUSAGE; with ignore_unsupported (or
 * --ignore-unsupported among the flags) unsupported options are warnings. */
typedef struct cli_sbatch cli_sbatch_t;
cli_sbatch_t *cli_sbatch_new(bool ignore_unsupported);
void cli_sbatch_free(cli_sbatch_t *sb);
/* Parses sbatch's flags up to the script's path: *script_at is its index
 * in argv (argc when there is none). */
int cli_sbatch_args(cli_sbatch_t *sb, int argc, char **argv, int *script_at);
/* One option word ("--partition=gpu") from `where` (for messages), over
 * the directives but never over the command line's own: what sbatchenv.c
 * takes from SBATCH_* variables. */
int cli_sbatch_opt(cli_sbatch_t *sb, char *word, const char *where);
/* Reads the directives of text (the script at path, for messages). */
int cli_sbatch_script(cli_sbatch_t *sb, const char *path, const char *text);
/* Whether option `name` (a long name: "parsable", "dry-run", "wrap") was given. */
bool cli_sbatch_flag(const cli_sbatch_t *sb, const char *name);
/* The value of a command-line-only option ("wrap"), or NULL. */
const char *cli_sbatch_value(const cli_sbatch_t *sb, const char *name);
/* The job spec (POST /v1/jobs) of the script at path with its text and
 * arguments, or NULL after a message. */
json_t *cli_sbatch_spec(cli_sbatch_t *sb, const char *path, const char *text, char **args,
                        int nargs);
/* scancelf.c: scancel's filters (NULL: not given; comma-separated lists). */
typedef struct cli_scancel_filter {
    const char *users, *names, *states, *parts;
} cli_scancel_filter_t;
/* CLI_OK, or CLI_EUSAGE after a message for a state scancel does not take. */
int cli_scancel_check_states(const char *states);
/* Cancels the pending and running jobs that pass every filter of f (and,
 * with nids > 0, are among ids: "12", "12_3", or an array's id for all of
 * its elements). Nothing printed for no match, as Slurm's. */
int cli_scancel_filtered(cli_t *c, const cli_scancel_filter_t *f, char **ids, int nids);

/* sbatchenv.c: sbatch's input variables (SBATCH_PARTITION, ...), read
 * after the command line and before the directives: its flags win over
 * them and they over the directives, as sbatch 22.05 orders them. CLI_OK, or CLI_EUSAGE after
 * a message naming the variable. */
int cli_sbatch_env(cli_sbatch_t *sb);
/* The spec's slurm object (docs/slurm.md): the request as sbatch read it
 * (--ntasks-per-node, --mem in MB, --gpus-per-node, ...) and the host
 * of submission, for the tasks' SLURM_* variables. */
void cli_sbatch_slurm_request(const cli_sbatch_t *sb, json_t *spec);
/* Reads a script ("-": stdin) of at most SL_JOBSPEC_SCRIPT_MAX bytes into
 * *text (malloc'd). CLI_OK, or CLI_EUSAGE after a message. */
int cli_sbatch_read(const char *path, char **text);
/* Whether path is a readable file that begins with "#!". */
bool cli_sbatch_is_script(const char *path);
/* Slurm's time formats in seconds, rounded up to whole minutes; 0: no
 * limit; -1: not a time. */
long long cli_slurm_time(const char *s);
/* sbatch_text.c: Slurm's value texts. A directive's words as sbatch splits
 * them (the count, the words in buf; -1 for more than max); a memory size
 * with K, M, G or T (M when none) in bytes, or -1; bytes as a Sluice
 * quantity ("32Gi"); a host list ("gpu[01-04],x") as a JSON list of
 * names (0, or -1 with err); a feature list, Slurm's brackets ([a|b])
 * dropped (1 when there were some, 0 if none, -1 with err). */
int cli_sbatch_split_words(const char *s, char *buf, size_t buflen, char **words, int max);
long long cli_slurm_mem(const char *s);
json_t *cli_mem_json(long long b);
int cli_slurm_hosts(const char *text, json_t **out, char *err, size_t errlen);
int cli_slurm_features(const char *text, char *out, size_t len, char *err, size_t errlen);

/* cmds.c and up.c */
/* watch.c: waits on GET /v1/events for the next change: a job's event
 * (only job's, or its array's, when job > 0) or a reset, resuming after
 * *last (0: the first wait, which returns at the stream's hello). Updates
 * *last and copies the event's name into what (may be NULL). CLI_OK, or
 * the client's error with its message printed. */
int cli_watch_wait(cli_t *c, unsigned long long *last, long long job, char *what, size_t whatlen);

/* Server-Sent Events as they arrive (watch.c): the bytes of a frame not
 * yet complete. Zero-initialised; cli_sse_fini frees it. */
typedef struct cli_sse {
    char *buf;
    size_t len, cap;
} cli_sse_t;
/* Appends p[0..n) and hands each complete frame (the text before a blank
 * line, NUL-terminated, writable) to on_frame(ud, f), in order; what follows
 * the last blank line waits for the next call. Can't fail (out of memory
 * aborts). O(n) plus the frames'. */
void cli_sse_feed(cli_sse_t *s, const char *p, size_t n, void (*on_frame)(void *ud, char *f),
                  void *ud);
void cli_sse_fini(cli_sse_t *s); /* frees the buffer; s is empty again */
/* logsfollow.c: `sluice logs -f`: prints task's output of job id from the
 * controller's log stream as it arrives, until the task has ended and all
 * of it is printed (waiting while the job is pending). CLI_OK, or an
 * error printed. */
int cli_logs_follow(cli_t *c, long long id, long long task);

int cli_cmd_submit(cli_t *c);
int cli_cmd_queue(cli_t *c);
int cli_cmd_show(cli_t *c);
int cli_cmd_cancel(cli_t *c);
int cli_cmd_nodes(cli_t *c);
int cli_cmd_tenants(cli_t *c);
/* `sluice controllers` (controllers.c): the group of controllers, GET /v1/controllers. */
int cli_cmd_controllers(cli_t *c);
int cli_cmd_logs(cli_t *c);
int cli_cmd_sbatch(cli_t *c);
/* srun.c: `srun` (a job step) and `salloc` (an allocation around a command). */
int cli_cmd_srun(cli_t *c);
int cli_cmd_salloc(cli_t *c);
int cli_cmd_history(cli_t *c);
/* slurmcmds.c: Slurm's squeue, scancel, sinfo and scontrol (each reads
 * Slurm's options itself, CLI_RAW_ALL), and `sluice slurm-commands
 * install DIR`. */
int cli_cmd_squeue(cli_t *c);
int cli_cmd_scancel(cli_t *c);
int cli_cmd_sinfo(cli_t *c);
int cli_cmd_scontrol(cli_t *c);
int cli_cmd_slurm_commands(cli_t *c);
int cli_cmd_up(cli_t *c);
int cli_cmd_down(cli_t *c);
/* report.c */
int cli_cmd_report(cli_t *c);
/* drain.c: `sluice drain` and `sluice resume` */
int cli_cmd_drain(cli_t *c);
int cli_cmd_resume(cli_t *c);

/* Prints a JSON value to stdout, indented, with a newline. */
void cli_print_json(json_t *v);

/* opts.c: the pages of a paged list (GET /v1/jobs) written to out as one
 * JSON document while they arrive, the jobs' bytes as the server sent
 * them: the first page's head, every page's jobs, the last page's tail.
 * For each page: cli_pages_begin, then cli_http_raw with cli_pages_sink
 * and the cli_pages_t as its sink, then cli_pages_next_after; at the end
 * cli_pages_close. */
typedef struct cli_pages {
    FILE *out;
    int pages;       /* pages begun */
    int state;       /* where the current page's bytes are (opts.c) */
    bool jobs;       /* a job has been written: later ones follow a comma */
    bool written;    /* anything has been written */
    char *hold;      /* the current page's bytes from its last ']' on */
    size_t hold_len, hold_cap;
} cli_pages_t;
void cli_pages_init(cli_pages_t *p, FILE *out);
/* A page's body follows; the previous page's tail is dropped. */
void cli_pages_begin(cli_pages_t *p);
/* A cli_sink_fn: the page's bytes; -1 (errno set) when out fails. */
int cli_pages_sink(void *arg, const char *s, size_t n);
/* The next_after in the tail of the page just read; 0 for null or none. */
unsigned long long cli_pages_next_after(const cli_pages_t *p);
/* complete: writes the last page's tail (the document's end); else ends
 * a document cut short by a failed page with a newline. Frees p's buffer;
 * 0, or -1 when out could not be written. */
int cli_pages_close(cli_pages_t *p, bool complete);

/* Locates the `sluice up` state directory's cli.json: $SLUICE_DIR/cli.json,
 * else .sluice/cli.json in the current directory or the nearest parent.
 * Returns a malloc'd path or NULL. */
char *cli_find_config(void);

#endif
