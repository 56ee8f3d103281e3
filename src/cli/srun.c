/*
 * srun.c - `srun` and `salloc` (the sluice binary answers to both names,
 * as `sluice srun` and `sluice salloc`): Slurm's job steps and interactive
 * allocations (docs/slurm.md, "Allocations and steps").
 *
 * srun inside an allocation (SLURM_JOB_ID set: a batch script's, salloc's
 * shell, or a rank's) starts a job step there: POST /v1/jobs/ID/steps with
 * the step token of the allocation's tasks (SLUICE_STEP_TOKEN), or else
 * the CLI's own token; the reply streams the ranks' output, which goes to
 * srun's stdout and stderr (each line prefixed "RANK: " with -l), and
 * srun exits with the highest exit code of the ranks. SIGINT, SIGTERM,
 * SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 are forwarded to the ranks (a child
 * process posts each, since the stream holds the connection).
 *
 * srun outside any allocation first makes one of its own (its -n, -N,
 * --ntasks-per-node, -c, --gpus-per-task, -t, -J, -p, -A), waits for it to
 * run, runs the step, and ends the allocation; salloc makes the allocation
 * and runs a command (default: $SHELL) here with SLURM_JOB_ID and its
 * companions set, so that srun inside reaches it; the allocation ends when
 * the command exits, and salloc exits with its status.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <termios.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "slurmenv.h"
#include "srunopt.h"

extern char **environ;

typedef sl_srun_opts_t srun_opts_t;

static int bad(const char *prog, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(const char *prog, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: error: ", prog);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return CLI_EUSAGE;
}

static const char *env_get(const char *name, void *ud) {
    (void)ud;
    return getenv(name);
}

/* srun's input variables as option words before the command line's
 * (slurmenv.h), and the words together, which the options borrow from:
 * kept until the process exits. */
static char **env_words, **all_words;
static int nenv_words;

static void free_words(void) {
    sl_slurmenv_argv_free(env_words, nenv_words);
    free(all_words);
    env_words = all_words = NULL;
    nenv_words = 0;
}

/* srun's and salloc's options (srunopt.h): srun's input variables
 * (SLURM_LABELIO, SRUN_CPUS_PER_TASK, ...) first, so that the command
 * line wins; the job from SLURM_JOB_ID. */
static int parse(const char *prog, int argc, char **argv, srun_opts_t *o, bool *help) {
    char err[300];
    if (strcmp(prog, "srun") == 0 && env_words == NULL) {
        nenv_words = sl_slurmenv_inputs(sl_slurmenv_srun_inputs, env_get, NULL, &env_words, NULL);
        all_words = malloc(((size_t)(nenv_words + argc) + 1) * sizeof *all_words);
        if (all_words == NULL)
            abort();
        memcpy(all_words, env_words, (size_t)nenv_words * sizeof *all_words);
        memcpy(all_words + nenv_words, argv, (size_t)argc * sizeof *all_words);
        all_words[nenv_words + argc] = NULL;
        argv = all_words;
        argc += nenv_words;
        atexit(free_words);
    }
    if (sl_srun_opts_parse(prog, argc, argv, o, err, sizeof err) != 0)
        return bad(prog, "%s", err);
    *help = o->help;
    if (o->jobid == 0) {
        const char *env = getenv("SLURM_JOB_ID");
        if (env == NULL)
            env = getenv("SLUICE_JOB_ID");
        if (env)
            o->jobid = strtoll(env, NULL, 10);
    }
    return 0;
}

/* ---- the step's stream ---- */

typedef struct stream {
    srun_opts_t *o;
    char *buf;
    size_t len, cap;
    int ntasks, width;
    char **nodes;          /* by rank, from "started" */
    char **partial[2];     /* -l: each rank's unfinished line, by fd */
    long long job;
    int step;              /* -1 until "step" */
    int exit_code;
    bool ended;
    int pipe_fd;           /* writes the step id to the parent */
} stream_t;

static volatile sig_atomic_t pending_sig;

static void on_signal(int sig) {
    pending_sig = sig;
}

static void write_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        p += w;
        n -= (size_t)w;
    }
}

static void labelled(stream_t *s, int rank, int fd, const char *p, size_t n) {
    char **part = &s->partial[fd - 1][rank];
    char pre[32];
    int pl = snprintf(pre, sizeof pre, "%*d: ", s->width, rank);
    while (n > 0) {
        const char *nl = memchr(p, '\n', n);
        size_t take = nl ? (size_t)(nl - p) + 1 : n;
        if (nl == NULL) { /* keep the rest until its newline */
            size_t have = *part ? strlen(*part) : 0;
            *part = realloc(*part, have + take + 1);
            memcpy(*part + have, p, take);
            (*part)[have + take] = '\0';
            return;
        }
        write_all(fd, pre, (size_t)pl);
        if (*part) {
            write_all(fd, *part, strlen(*part));
            free(*part);
            *part = NULL;
        }
        write_all(fd, p, take);
        p += take;
        n -= take;
    }
}

static void on_event(stream_t *s, json_t *e) {
    const char *t = json_string_value(json_object_get(e, "type"));
    int rank = (int)json_integer_value(json_object_get(e, "rank"));
    if (t == NULL)
        return;
    if (!strcmp(t, "step")) {
        s->step = (int)json_integer_value(json_object_get(e, "step"));
        s->ntasks = (int)json_integer_value(json_object_get(e, "ntasks"));
        s->width = snprintf(NULL, 0, "%d", s->ntasks > 0 ? s->ntasks - 1 : 0);
        s->nodes = calloc((size_t)s->ntasks + 1, sizeof *s->nodes);
        s->partial[0] = calloc((size_t)s->ntasks + 1, sizeof(char *));
        s->partial[1] = calloc((size_t)s->ntasks + 1, sizeof(char *));
        if (s->pipe_fd >= 0) {
            char b[32];
            int n = snprintf(b, sizeof b, "%d\n", s->step);
            write_all(s->pipe_fd, b, (size_t)n);
        }
    } else if (!strcmp(t, "started") && rank >= 0 && rank < s->ntasks) {
        free(s->nodes[rank]);
        s->nodes[rank] = strdup(json_string_value(json_object_get(e, "node")) ?: "?");
    } else if (!strcmp(t, "out") && rank >= 0 && rank < s->ntasks) {
        json_t *d = json_object_get(e, "data");
        int fd = json_integer_value(json_object_get(e, "fd")) == 2 ? 2 : 1;
        if (s->o->label)
            labelled(s, rank, fd, json_string_value(d), json_string_length(d));
        else
            write_all(fd, json_string_value(d), json_string_length(d));
    } else if (!strcmp(t, "exit") && rank >= 0 && rank < s->ntasks) {
        int code = (int)json_integer_value(json_object_get(e, "exit_code"));
        int sig = (int)json_integer_value(json_object_get(e, "signal"));
        const char *why = json_string_value(json_object_get(e, "reason"));
        for (int fd = 1; fd <= 2 && s->o->label; fd++)
            if (s->partial[fd - 1][rank])
                labelled(s, rank, fd, "\n", 1);
        const char *node = s->nodes[rank] ? s->nodes[rank] : "?";
        if (why)
            fprintf(stderr, "srun: error: %s: task %d: %s\n", node, rank, why);
        else if (sig)
            fprintf(stderr, "srun: error: %s: task %d: %s\n", node, rank, strsignal(sig));
        else if (code)
            fprintf(stderr, "srun: error: %s: task %d: Exited with exit code %d\n", node, rank, code);
    } else if (!strcmp(t, "end")) {
        s->exit_code = (int)json_integer_value(json_object_get(e, "exit_code"));
        s->ended = true;
    }
}

static int sink(void *arg, const char *p, size_t n) {
    stream_t *s = arg;
    if (s->len + n + 1 > s->cap) {
        s->cap = 2 * (s->len + n + 1);
        s->buf = realloc(s->buf, s->cap);
        if (s->buf == NULL)
            abort();
    }
    memcpy(s->buf + s->len, p, n);
    s->len += n;
    size_t start = 0;
    for (size_t i = 0; i < s->len; i++) {
        if (s->buf[i] != '\n')
            continue;
        json_t *e = json_loadb(s->buf + start, i - start, 0, NULL);
        if (e)
            on_event(s, e);
        json_decref(e);
        start = i + 1;
    }
    memmove(s->buf, s->buf + start, s->len - start);
    s->len -= start;
    return 0;
}

/* srun's environment for the ranks, as --export says: ALL (the default)
 * less what belongs to the node or to Sluice (the node and the allocation
 * set those); NONE; or a list, each VAR copied and VAR=val set, on top of
 * all with ALL in the list. */
static json_t *export_env(const char *spec) {
    static const char *const local[] = {"TMPDIR", "HOME", "USER", "LOGNAME", "PWD", "OLDPWD",
                                        "SHLVL", "_", "SLURMD_NODENAME", "SLURM_PROCID",
                                        "SLURM_LOCALID", "SLURM_NODEID", "RANK", "LOCAL_RANK",
                                        "CUDA_VISIBLE_DEVICES", "SLURM_TOPOLOGY_ADDR", NULL};
    json_t *env = json_object();
    bool all = spec == NULL || strncmp(spec, "ALL", 3) == 0 || strstr(spec, ",ALL");
    if (spec && strcmp(spec, "NONE") == 0)
        return env;
    for (char **e = environ; all && *e; e++) {
        size_t kl = strcspn(*e, "=");
        char key[256];
        if (kl >= sizeof key || (*e)[kl] != '=')
            continue;
        memcpy(key, *e, kl);
        key[kl] = '\0';
        bool skip = strncmp(key, "SLUICE_", 7) == 0;
        for (int k = 0; local[k] && !skip; k++)
            skip = strcmp(local[k], key) == 0;
        for (int k = 0; sl_slurmenv_node_vars[k] && !skip; k++)
            skip = strcmp(sl_slurmenv_node_vars[k], key) == 0;
        if (!skip)
            json_object_set_new(env, key, json_string(*e + kl + 1));
    }
    if (spec && strcmp(spec, "ALL") != 0) {
        char *copy = strdup(spec), *save = NULL;
        for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
            char *eq = strchr(w, '=');
            if (strcmp(w, "ALL") == 0 || strcmp(w, "NONE") == 0)
                continue;
            if (eq) {
                *eq = '\0';
                json_object_set_new(env, w, json_string(eq + 1));
            } else if (getenv(w)) {
                json_object_set_new(env, w, json_string(getenv(w)));
            }
        }
        free(copy);
    }
    return env;
}

/* A child that posts the signal (or, sig 0, the --pty input data[0..n)):
 * the stream holds the parent's connection. */
static void forward(cli_t *c, long long job, int step, int sig, const char *data, size_t n) {
    pid_t p = fork();
    if (p != 0) {
        if (p > 0)
            while (waitpid(p, NULL, 0) < 0 && errno == EINTR) {}
        return;
    }
    cli_http_forget();
    c->stream_idle_ms = 0;
    c->quiet_unreachable = 1;
    char path[96];
    snprintf(path, sizeof path, "/v1/jobs/%lld/steps/control", job);
    json_t *b = sig ? json_pack("{s:i,s:i}", "step", step, "signal", sig)
                    : json_pack("{s:i,s:s%}", "step", step, "stdin", data, n), *out = NULL;
    cli_call(c, "POST", path, b, &out);
    json_decref(b);
    json_decref(out);
    _exit(0);
}

static int run_step(cli_t *c, srun_opts_t *o, long long job) {
    json_t *body = json_object();
    json_t *argv = json_array();
    for (int i = 0; i < o->argc; i++)
        json_array_append_new(argv, json_string(o->argv[i]));
    json_object_set_new(body, "argv", argv);
    json_object_set_new(body, "env", export_env(o->export_));
    char cwd[4096];
    if (o->chdir)
        json_object_set_new(body, "cwd", json_string(o->chdir));
    else if (getcwd(cwd, sizeof cwd))
        json_object_set_new(body, "cwd", json_string(cwd));
    const struct { const char *k; long long v; } nums[] = {
        {"ntasks", o->ntasks}, {"nodes", o->nodes}, {"ntasks_per_node", o->per_node},
        {"cpus_per_task", o->cpus}, {"gpus_per_task", o->gpus}};
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++)
        if (nums[i].v > 0)
            json_object_set_new(body, nums[i].k, json_integer(nums[i].v));
    if (o->output)
        json_object_set_new(body, "output", json_string(o->output));
    if (o->error)
        json_object_set_new(body, "error", json_string(o->error));
    if (o->nodelist)
        json_object_set_new(body, "nodelist", json_string(o->nodelist));
    json_object_set_new(body, "kill_on_bad_exit", json_boolean(o->kill_bad));
    struct winsize ws = {.ws_row = 24, .ws_col = 80};
    if (o->pty && (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) != 0 || ws.ws_row == 0 || ws.ws_col == 0))
        ws = (struct winsize){.ws_row = 24, .ws_col = 80};
    if (o->pty)
        json_object_set_new(body, "pty", json_pack("{s:i,s:i}", "rows", ws.ws_row, "cols", ws.ws_col));
    json_object_set_new(body, "overlap", json_boolean(o->overlap));
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    /* The step id reaches the parent through a pipe; the parent keeps
     * signals for the ranks while the child reads the stream. */
    int pfd[2];
    if (pipe(pfd) != 0)
        abort();
    pid_t child = fork();
    if (child == 0) {
        close(pfd[0]);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        signal(SIGINT, SIG_IGN);
        signal(SIGTERM, SIG_IGN);
        signal(SIGHUP, SIG_IGN);
        signal(SIGQUIT, SIG_IGN);
        stream_t s = {.o = o, .job = job, .step = -1, .exit_code = 1, .pipe_fd = pfd[1]};
        char path[64];
        snprintf(path, sizeof path, "/v1/jobs/%lld/steps", job);
        c->stream_idle_ms = 30000;
        cli_reply_t r;
        int rc = cli_http_raw(c, "POST", path, text, strlen(text), &r, sink, &s);
        if (rc == CLI_OK && (r.status < 200 || r.status > 299)) {
            json_t *e = r.body ? json_loads(r.body, 0, NULL) : NULL;
            const char *msg = json_string_value(json_object_get(json_object_get(e, "error"), "message"));
            fprintf(stderr, "srun: error: %s\n", msg ? msg : r.body ? r.body : "the step was refused");
            json_decref(e);
            rc = CLI_ESERVER;
        }
        cli_reply_free(&r);
        if (rc == CLI_OK && !s.ended) {
            fprintf(stderr, "srun: error: the step's stream ended before the step did\n");
            rc = CLI_ESERVER;
        }
        _exit(rc == CLI_OK ? s.exit_code : rc);
    }
    close(pfd[1]);
    free(text);
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaction(sigs[i], &sa, NULL);
    int step = -1, st = 0;
    char idbuf[32];
    size_t idlen = 0;
    /* --pty: this terminal raw, so that every key (^C too) is the rank's. */
    struct termios saved, raw;
    bool is_raw = o->pty && isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved) == 0;
    if (is_raw) {
        raw = saved;
        cfmakeraw(&raw);
        tcsetattr(STDIN_FILENO, TCSANOW, &raw);
    }
    bool in_open = o->pty;
    for (;;) {
        struct pollfd pf[2];
        nfds_t n = 0;
        if (pfd[0] >= 0)
            pf[n++] = (struct pollfd){.fd = pfd[0], .events = POLLIN};
        if (in_open && step >= 0)
            pf[n++] = (struct pollfd){.fd = STDIN_FILENO, .events = POLLIN};
        /* The pipe's end wakes this loop when the child exits; a signal
         * interrupts it. */
        int r = pfd[0] >= 0 ? poll(pf, n, -1) : 0;
        for (nfds_t i = 0; r > 0 && i < n; i++) {
            if (pf[i].revents == 0)
                continue;
            if (pf[i].fd == pfd[0]) {
                ssize_t k = read(pfd[0], idbuf + idlen, sizeof idbuf - 1 - idlen);
                if (k > 0) {
                    idlen += (size_t)k;
                    idbuf[idlen] = '\0';
                    if (strchr(idbuf, '\n') && step < 0)
                        step = atoi(idbuf);
                }
                if (k > 0 && idlen >= sizeof idbuf - 1)
                    idlen = 0; /* (nothing but the id comes) */
                if (k <= 0) { /* the child is gone: its end of the pipe closed */
                    close(pfd[0]);
                    pfd[0] = -1;
                }
            } else {
                char buf[4096];
                ssize_t k = read(STDIN_FILENO, buf, sizeof buf);
                if (k > 0)
                    forward(c, job, step, 0, buf, (size_t)k);
                else if (k == 0 || errno != EINTR) {
                    in_open = false;
                    forward(c, job, step, 0, "\x04", 1); /* end of input: ^D to the terminal */
                }
            }
        }
        int sig = pending_sig;
        pending_sig = 0;
        if (sig && step >= 0)
            forward(c, job, step, sig, NULL, 0);
        /* Once the pipe closed the child is exiting: wait for it. */
        pid_t w = waitpid(child, &st, pfd[0] >= 0 ? WNOHANG : 0);
        if (w == child)
            break;
    }
    if (is_raw)
        tcsetattr(STDIN_FILENO, TCSANOW, &saved);
    if (pfd[0] >= 0)
        close(pfd[0]);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* ---- an allocation of our own ---- */

static long long alloc_submit(cli_t *c, const char *prog, srun_opts_t *o) {
    long long tasks = o->ntasks;
    if (tasks == 0)
        tasks = (o->nodes ? o->nodes : 1) * (o->per_node ? o->per_node : 1);
    json_t *job = json_pack("{s:b,s:[s],s:I}", "allocation", 1, "command", "sluice-stepd", "tasks",
                            (json_int_t)tasks);
    const char *name = o->name ? o->name : o->argc > 0 ? o->argv[0] : prog;
    const char *slash = strrchr(name, '/');
    json_object_set_new(job, "name", json_string(slash ? slash + 1 : name));
    /* -N: distinct nodes, as Slurm's; --ntasks-per-node: exactly that many on each. */
    if (o->nodes > 0 && o->nodes <= tasks)
        json_object_set_new(job, "nodes", json_integer(o->nodes));
    if (o->per_node > 0 && tasks % o->per_node == 0)
        json_object_set_new(job, "tasks_per_node", json_integer(o->per_node));
    if (o->cpus)
        json_object_set_new(job, "cpus", json_integer(o->cpus));
    if (o->gpus)
        json_object_set_new(job, "gpus", json_integer(o->gpus));
    if (o->time_s)
        json_object_set_new(job, "time_limit", json_integer(o->time_s));
    if (o->pool)
        json_object_set_new(job, "pool", json_string(o->pool));
    if (o->account)
        json_object_set_new(job, "tenant", json_string(o->account));
    else if (c->tenant)
        json_object_set_new(job, "tenant", json_string(c->tenant));
    json_t *out = NULL;
    int rc = cli_call(c, "POST", "/v1/jobs", job, &out);
    json_decref(job);
    long long id = rc == CLI_OK ? (long long)json_integer_value(json_object_get(out, "id")) : -rc;
    json_decref(out);
    return rc == CLI_OK ? id : -rc;
}

/* Waits for job to run: 0 with *nodelist (malloc'd) set, or an exit code. */
static int alloc_wait(cli_t *c, const char *prog, long long job, bool quiet, char **nodelist) {
    char path[64];
    snprintf(path, sizeof path, "/v1/jobs/%lld", job);
    bool said = false;
    for (int k = 0;; k++) {
        json_t *j = NULL;
        if (pending_sig) {
            cli_call(c, "DELETE", path, NULL, NULL);
            fprintf(stderr, "%s: Job allocation %lld has been revoked\n", prog, job);
            return 128 + pending_sig;
        }
        int rc = cli_call(c, "GET", path, NULL, &j);
        if (rc != CLI_OK)
            return rc;
        const char *state = json_string_value(json_object_get(j, "state"));
        if (state && strcmp(state, "running") == 0) {
            json_t *tasks = json_object_get(j, "tasks");
            size_t n = 0, i;
            json_t *t;
            char *list = calloc(1, 1);
            json_array_foreach(tasks, i, t) {
                const char *node = json_string_value(json_object_get(t, "node"));
                if (node && !strstr(list, node)) {
                    size_t l = strlen(list);
                    list = realloc(list, l + strlen(node) + 2);
                    sprintf(list + l, "%s%s", l ? "," : "", node);
                    n++;
                }
            }
            *nodelist = list;
            json_decref(j);
            if (!quiet && said)
                fprintf(stderr, "%s: job %lld has been allocated resources\n", prog, job);
            return 0;
        }
        if (state && strcmp(state, "pending") != 0) {
            fprintf(stderr, "%s: error: job %lld is %s: %s\n", prog, job, state,
                    json_string_value(json_object_get(j, "reason")) ?: "");
            json_decref(j);
            return CLI_ESERVER;
        }
        json_decref(j);
        if (k == 20 && !quiet) {
            fprintf(stderr, "%s: job %lld queued and waiting for resources\n", prog, job);
            said = true;
        }
        struct timespec ts = {0, (k < 20 ? 25 : 250) * 1000000L};
        nanosleep(&ts, NULL);
    }
}

static void alloc_end(cli_t *c, long long job) {
    char path[64];
    snprintf(path, sizeof path, "/v1/jobs/%lld", job);
    json_t *out = NULL;
    cli_call(c, "DELETE", path, NULL, &out);
    json_decref(out);
}

static void step_token(cli_t *c) {
    const char *t = getenv("SLUICE_STEP_TOKEN");
    if (t && *t) {
        free(c->token);
        c->token = strdup(t);
    }
}

int cli_cmd_srun(cli_t *c) {
    srun_opts_t o;
    bool help = false;
    int rc = parse("srun", c->ncommand, c->command, &o, &help);
    if (rc != 0)
        return rc;
    if (o.argc == 0)
        return bad("srun", "no command to run (usage: srun [OPTIONS] COMMAND [ARG...])");
    if (o.pty && o.ntasks == 0 && o.nodes == 0)
        o.ntasks = 1; /* an interactive step is one rank, as Slurm's */
    if (o.jobid > 0) {
        step_token(c);
        if (c->token == NULL || c->token[0] == '\0') {
            fprintf(stderr, "srun: error: job %lld gave this task no step token: it is not an "
                    "allocation (submit it with sluice sbatch, or allocation: true)\n", o.jobid);
            return CLI_ESERVER;
        }
        return run_step(c, &o, o.jobid);
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    long long job = alloc_submit(c, "srun", &o);
    if (job < 0)
        return (int)-job;
    char *nodes = NULL;
    if ((rc = alloc_wait(c, "srun", job, o.quiet, &nodes)) != 0)
        return rc;
    free(nodes);
    rc = run_step(c, &o, job);
    alloc_end(c, job);
    return rc;
}

int cli_cmd_salloc(cli_t *c) {
    srun_opts_t o;
    bool help = false;
    int rc = parse("salloc", c->ncommand, c->command, &o, &help);
    if (rc != 0)
        return rc;
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    long long job = alloc_submit(c, "salloc", &o);
    if (job < 0)
        return (int)-job;
    char *nodes = NULL;
    if ((rc = alloc_wait(c, "salloc", job, o.quiet, &nodes)) != 0)
        return rc;
    if (!o.quiet)
        fprintf(stderr, "salloc: Granted job allocation %lld\n", job);
    char id[32], nt[32];
    snprintf(id, sizeof id, "%lld", job);
    long long tasks = o.ntasks ? o.ntasks : (o.nodes ? o.nodes : 1) * (o.per_node ? o.per_node : 1);
    snprintf(nt, sizeof nt, "%lld", tasks);
    setenv("SLURM_JOB_ID", id, 1);
    setenv("SLURM_JOBID", id, 1);
    setenv("SLURM_NTASKS", nt, 1);
    setenv("SLURM_NPROCS", nt, 1);
    setenv("SLURM_JOB_NODELIST", nodes, 1);
    setenv("SLURM_NODELIST", nodes, 1);
    free(nodes);
    /* srun in the command is this program, not some other Slurm's: its
     * names first on the command's PATH, links in a directory of salloc's
     * own (removed at the end). */
    char bindir[] = "/tmp/sluice-salloc-XXXXXX", self[4096], link[sizeof bindir + 16];
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    bool linked = sl > 0 && mkdtemp(bindir) != NULL;
    static const char *const names[] = {"srun", "salloc"};
    if (linked) {
        self[sl] = '\0';
        for (size_t k = 0; k < 2; k++) {
            snprintf(link, sizeof link, "%s/%s", bindir, names[k]);
            if (symlink(self, link) != 0)
                linked = false;
        }
        const char *path = getenv("PATH");
        char *np = NULL;
        if (asprintf(&np, "%s:%s", bindir, path ? path : "/usr/bin:/bin") < 0)
            abort();
        setenv("PATH", np, 1);
        free(np);
    }
    /* The command runs in the foreground; salloc waits, deaf to the
     * terminal's signals, which are the command's. */
    signal(SIGINT, SIG_IGN);
    signal(SIGQUIT, SIG_IGN);
    pid_t p = fork();
    if (p == 0) {
        signal(SIGINT, SIG_DFL);
        signal(SIGQUIT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        if (o.argc > 0) {
            execvp(o.argv[0], o.argv);
            fprintf(stderr, "salloc: error: cannot run %s: %s\n", o.argv[0], strerror(errno));
            _exit(127);
        }
        const char *sh = getenv("SHELL");
        execl(sh && *sh ? sh : "/bin/sh", sh && *sh ? sh : "/bin/sh", (char *)NULL);
        _exit(127);
    }
    int st = 0;
    while (p > 0 && waitpid(p, &st, 0) < 0 && errno == EINTR) {}
    for (size_t k = 0; k < 2 && sl > 0; k++) {
        snprintf(link, sizeof link, "%s/%s", bindir, names[k]);
        unlink(link);
    }
    if (sl > 0)
        rmdir(bindir);
    if (!o.quiet)
        fprintf(stderr, "salloc: Relinquishing job allocation %lld\n", job);
    alloc_end(c, job);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
