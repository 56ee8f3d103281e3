/*
 * stepd.c - sluice-stepd, the process of each task of an allocation
 * (docs/slurm.md, "Allocations and steps").
 *
 *     sluice-stepd [--] [COMMAND ARG...]
 *
 * An allocation's tasks hold its resources on their nodes and run nothing
 * until a job step asks for them; this program is what each of them runs.
 * It is started like any task (as the tenant's user, inside the task's
 * cgroup, with the task's GPUs and environment) and, with COMMAND (the
 * batch step: the script's runner, on one task of the allocation), runs
 * COMMAND as its child and exits with COMMAND's status, which is then the
 * job's. Without COMMAND it holds until it is told to stop (SIGTERM, the
 * agent's kill when the allocation ends), then exits 0.
 *
 * Ranks. It listens on the Unix socket TMPDIR/.sluice-step.TASK (TMPDIR is
 * the job's directory on the node, mode 0700, the tenant's own; TASK is
 * SLUICE_TASK_INDEX). Only the node's agent connects there: a peer that is
 * neither root nor this user is refused (SO_PEERCRED), and the agent in
 * turn checks that the socket's listener is this task's process. A `run`
 * (proto_step.h) forks one rank: its own process group, killed should
 * this process die (PR_SET_PDEATHSIG), in the rank's working directory
 * (the job's directory when that is missing on this node, said on the
 * rank's stderr), stdin /dev/null, stdout and stderr to pipes (or to the
 * files of srun's -o/-e, their patterns expanded here; with srun --pty,
 * rank 0 instead leads a session on a pseudo-terminal whose master takes
 * the `stdin` lines and gives its output), this process's
 * environment overlaid with the run's. Being this process's child, the
 * rank is inside the task's cgroup and runs as its user with no
 * privilege to gain or lose. Output goes back as `out` lines, then one
 * `exit` once the rank has ended and its pipes are drained. `signal`
 * signals the process groups of a step's ranks.
 *
 * PyTorch's variables that the agent sets for every task (RANK, WORLD_SIZE,
 * LOCAL_RANK, MASTER_ADDR, MASTER_PORT) are removed first: an allocation's
 * batch step sees none of them, as under Slurm (a script that runs one
 * process there must not find itself rank 0 of a world of N), and each
 * step's ranks get RANK, LOCAL_RANK and WORLD_SIZE of their step from the
 * run, MASTER_ADDR only as the script exported it.
 *
 * A rank whose command cannot be executed exits 2, as slurmstepd's task
 * does ("execve(): CMD: No such file or directory"), so that srun exits
 * as Slurm's srun does.
 *
 * A single poll loop; signals arrive on a signalfd, so nothing runs in a
 * handler. Workload: a few ranks per task, output in 64 KiB reads.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <sys/ioctl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proto_step.h"
#include "sluice/alloc.h"
#include "sluice/error.h"

extern char **environ;

#define MAX_CONNS 8
#define MAX_RANKS 256

typedef struct conn {
    int fd;
    char *in;
    size_t len, cap;
} conn_t;

typedef struct rank {
    bool used;
    uint32_t step;
    int32_t rank;
    pid_t pid;
    int out, err;       /* pipe read ends (out: the pty's master with --pty), -1 when closed */
    int ptm;            /* --pty: the master, for its input; -1: none */
    bool ended;
    int status;
    int conn;           /* index into conns */
} rank_t;

static conn_t conns[MAX_CONNS];
static rank_t ranks[MAX_RANKS];
static char sock_path[4096];
static sigset_t orig_mask;

static void die(const char *what) {
    fprintf(stderr, "sluice-stepd: %s: %s\n", what, strerror(errno));
    exit(127);
}

static void conn_send(int ci, const sl_step_msg_t *m) {
    if (ci < 0 || conns[ci].fd < 0)
        return;
    size_t len;
    char *line = sl_step_encode(m, SL_STEP_LINK_STEPD, &len);
    if (line == NULL)
        return;
    for (size_t off = 0; off < len;) {
        ssize_t w = write(conns[ci].fd, line + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    sl_free(line);
}

/* srun's -o/-e pattern for one rank: %t rank, %n node index, %N node, %j
 * job, %s step, %u user, %% (Slurm's letters), from the rank's variables. */
static char *expand(const char *pat, int32_t rank, char **env) {
    size_t cap = strlen(pat) + 256, n = 0;
    char *out = sl_xmalloc(cap);
    for (const char *p = pat; *p; p++) {
        char piece[256] = "";
        if (*p != '%' || p[1] == '\0') {
            piece[0] = *p;
            piece[1] = '\0';
        } else {
            const char *var = NULL;
            p++;
            switch (*p) {
            case 't': snprintf(piece, sizeof piece, "%d", rank); break;
            case 'n': var = "SLURM_NODEID="; break;
            case 'N': var = "SLURMD_NODENAME="; break;
            case 'j': var = "SLURM_JOB_ID="; break;
            case 's': var = "SLURM_STEP_ID="; break;
            case 'u': var = "USER="; break;
            case '%': snprintf(piece, sizeof piece, "%%"); break;
            default: snprintf(piece, sizeof piece, "%%%c", *p); break;
            }
            for (char **e = env; var && *e; e++)
                if (strncmp(*e, var, strlen(var)) == 0)
                    snprintf(piece, sizeof piece, "%s", *e + strlen(var));
        }
        size_t pl = strlen(piece);
        if (n + pl + 1 > cap) {
            cap = 2 * (n + pl + 1);
            out = sl_xrealloc(out, cap);
        }
        memcpy(out + n, piece, pl);
        n += pl;
    }
    out[n] = '\0';
    return out;
}

/* This process's environment overlaid with the run's variables. */
static char **rank_env(const sl_step_msg_t *m) {
    size_t n = 0;
    while (environ[n])
        n++;
    char **env = sl_xmalloc((n + m->nenv + 1) * sizeof *env);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        bool over = false;
        size_t kl = strcspn(environ[i], "=");
        for (size_t j = 0; j < m->nenv && !over; j++)
            over = strlen(m->env[j].key) == kl && strncmp(m->env[j].key, environ[i], kl) == 0;
        if (!over)
            env[k++] = strdup(environ[i]);
    }
    /* The node's Slurm commands stay first on a PATH srun sent (its own
     * node's may not be this one's): the first entry of this process's
     * PATH when it is the agent's slurm-bin. */
    const char *own = getenv("PATH");
    size_t ol = own ? strcspn(own, ":") : 0;
    bool keep_bin = ol > 9 && strncmp(own + ol - 9, "slurm-bin", 9) == 0;
    for (size_t j = 0; j < m->nenv; j++) {
        bool path = keep_bin && strcmp(m->env[j].key, "PATH") == 0;
        size_t l = strlen(m->env[j].key) + strlen(m->env[j].value) + ol + 3;
        env[k] = sl_xmalloc(l);
        if (path)
            snprintf(env[k++], l, "PATH=%.*s:%s", (int)ol, own, m->env[j].value);
        else
            snprintf(env[k++], l, "%s=%s", m->env[j].key, m->env[j].value);
    }
    env[k] = NULL;
    return env;
}

static void free_env(char **env) {
    for (char **e = env; *e; e++)
        free(*e);
    sl_free(env);
}

/* A relative name is the rank's working directory's, as srun's. */
static int open_out(const char *pat, int32_t rank, char **env, const char *cwd) {
    char *path = expand(pat, rank, env);
    if (path[0] != '/' && cwd) {
        char *full = sl_xmalloc(strlen(cwd) + strlen(path) + 2);
        sprintf(full, "%s/%s", cwd, path);
        sl_free(path);
        path = full;
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    sl_free(path);
    return fd;
}

static void start_rank(int ci, const sl_step_msg_t *m) {
    int slot = -1;
    for (int i = 0; i < MAX_RANKS && slot < 0; i++)
        if (!ranks[i].used)
            slot = i;
    sl_step_msg_t x = {.type = SL_STEP_EXIT, .step = m->step, .rank = m->rank, .exit_code = 255};
    if (slot < 0) {
        x.reason = "too many ranks on one task (256)";
        conn_send(ci, &x);
        return;
    }
    char **env = rank_env(m);
    int po[2] = {-1, -1}, pe[2] = {-1, -1}, fo = -1, fe = -1, ptm = -1, pts = -1;
    if (m->pty_rows > 0 && m->rank == 0) { /* srun --pty: rank 0 on a terminal */
        struct winsize ws = {.ws_row = (unsigned short)m->pty_rows, .ws_col = (unsigned short)m->pty_cols};
        if (openpty(&ptm, &pts, NULL, NULL, &ws) != 0) {
            x.reason = "cannot open a pseudo-terminal (--pty)";
            goto fail;
        }
        fcntl(ptm, F_SETFD, FD_CLOEXEC);
        fcntl(pts, F_SETFD, FD_CLOEXEC);
    }
    if (m->output && (fo = open_out(m->output, m->rank, env, m->cwd)) < 0) {
        x.reason = "cannot open the output file (-o)";
        goto fail;
    }
    if (m->error && (fe = open_out(m->error, m->rank, env, m->cwd)) < 0) {
        x.reason = "cannot open the error file (-e)";
        goto fail;
    }
    if (ptm < 0 && ((fo < 0 && pipe2(po, O_CLOEXEC) != 0) ||
                    (fe < 0 && fo < 0 && pipe2(pe, O_CLOEXEC) != 0))) {
        x.reason = "cannot make a pipe";
        goto fail;
    }
    pid_t pid = fork();
    if (pid < 0) {
        x.reason = "cannot fork";
        goto fail;
    }
    if (pid == 0) {
        sigprocmask(SIG_SETMASK, &orig_mask, NULL);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (pts >= 0) { /* a session of its own, the terminal its controlling one */
            setsid();
            ioctl(pts, TIOCSCTTY, 0);
            dup2(pts, 0);
            dup2(pts, 1);
            dup2(pts, 2);
        } else {
            setpgid(0, 0);
            int null = open("/dev/null", O_RDONLY);
            int o = fo >= 0 ? fo : po[1];
            int e = fe >= 0 ? fe : (fo >= 0 ? fo : pe[1]);
            dup2(null, 0);
            dup2(o, 1);
            dup2(e, 2);
        }
        if (m->cwd && chdir(m->cwd) != 0) {
            const char *tmp = getenv("TMPDIR");
            fprintf(stderr, "sluice-stepd: rank %d: cannot enter %s (%s); running in %s\n", m->rank,
                    m->cwd, strerror(errno), tmp ? tmp : ".");
            if (tmp && chdir(tmp) != 0) {}
        }
        environ = env;
        execvp(m->argv[0], (char *const *)m->argv);
        fprintf(stderr, "sluice-stepd: rank %d: execve(): %s: %s\n", m->rank, m->argv[0],
                strerror(errno));
        _exit(2);
    }
    if (pts < 0)
        setpgid(pid, pid);
    else
        close(pts);
    if (po[1] >= 0)
        close(po[1]);
    if (pe[1] >= 0)
        close(pe[1]);
    if (fo >= 0)
        close(fo);
    if (fe >= 0)
        close(fe);
    ranks[slot] = (rank_t){.used = true, .step = m->step, .rank = m->rank, .pid = pid,
                           .out = ptm >= 0 ? ptm : po[0], .err = pe[0], .ptm = ptm, .conn = ci};
    free_env(env);
    sl_step_msg_t s = {.type = SL_STEP_STARTED, .step = m->step, .rank = m->rank, .pid = pid};
    conn_send(ci, &s);
    return;
fail:
    for (int i = 0; i < 2; i++) {
        if (po[i] >= 0) close(po[i]);
        if (pe[i] >= 0) close(pe[i]);
    }
    if (fo >= 0) close(fo);
    if (fe >= 0) close(fe);
    if (ptm >= 0) close(ptm);
    if (pts >= 0) close(pts);
    free_env(env);
    conn_send(ci, &x);
}

static void rank_maybe_done(rank_t *r) {
    if (!r->used || !r->ended || r->out >= 0 || r->err >= 0)
        return;
    sl_step_msg_t x = {.type = SL_STEP_EXIT, .step = r->step, .rank = r->rank};
    if (WIFSIGNALED(r->status)) {
        x.signal = WTERMSIG(r->status);
        x.exit_code = 128 + x.signal;
    } else {
        x.exit_code = WEXITSTATUS(r->status);
    }
    conn_send(r->conn, &x);
    r->used = false;
}

static void signal_ranks(int sig, int only_conn, bool all_steps, uint32_t step) {
    for (int i = 0; i < MAX_RANKS; i++)
        if (ranks[i].used && !ranks[i].ended && (only_conn < 0 || ranks[i].conn == only_conn) &&
            (all_steps || ranks[i].step == step))
            kill(-ranks[i].pid, sig);
}

static void conn_close(int ci) {
    close(conns[ci].fd);
    conns[ci].fd = -1;
    sl_free(conns[ci].in);
    conns[ci].in = NULL;
    conns[ci].len = conns[ci].cap = 0;
    /* Its ranks can no longer be reported: they go. */
    signal_ranks(SIGKILL, ci, true, 0);
    for (int i = 0; i < MAX_RANKS; i++)
        if (ranks[i].used && ranks[i].conn == ci)
            ranks[i].conn = -1;
}

static void on_line(int ci, const char *line, size_t len) {
    sl_step_msg_t m;
    char err[256];
    int rc = sl_step_decode_line(line, len, SL_STEP_LINK_STEPD, &m, err, sizeof err);
    if (rc != 0) {
        if (rc != SL_ENOENT)
            fprintf(stderr, "sluice-stepd: bad message from the agent: %s\n", err);
    } else if (m.type == SL_STEP_RUN) {
        start_rank(ci, &m);
    } else if (m.type == SL_STEP_SIGNAL) {
        signal_ranks(m.sig, -1, false, m.step);
    } else if (m.type == SL_STEP_STDIN) {
        for (int i = 0; i < MAX_RANKS; i++)
            if (ranks[i].used && ranks[i].step == m.step && ranks[i].rank == m.rank && ranks[i].ptm >= 0)
                for (size_t off = 0; off < m.data_len;) {
                    ssize_t w = write(ranks[i].ptm, m.data + off, m.data_len - off);
                    if (w < 0 && errno == EINTR)
                        continue;
                    if (w <= 0)
                        break;
                    off += (size_t)w;
                }
    }
    sl_step_msg_fini(&m);
}

static void conn_read(int ci) {
    conn_t *c = &conns[ci];
    if (c->cap - c->len < 65536) {
        c->cap = c->cap ? 2 * c->cap : 131072;
        if (c->cap > 2 * (size_t)SL_PROTO_MAX_LINE + 131072) {
            conn_close(ci);
            return;
        }
        c->in = sl_xrealloc(c->in, c->cap);
    }
    ssize_t n = read(c->fd, c->in + c->len, c->cap - c->len);
    if (n < 0 && errno == EINTR)
        return;
    if (n <= 0) {
        conn_close(ci);
        return;
    }
    c->len += (size_t)n;
    size_t start = 0;
    for (size_t i = 0; i < c->len; i++) {
        if (c->in[i] != '\n')
            continue;
        on_line(ci, c->in + start, i - start);
        if (c->fd < 0)
            return;
        start = i + 1;
    }
    memmove(c->in, c->in + start, c->len - start);
    c->len -= start;
}

static void accept_conn(int lfd) {
    int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0)
        return;
    struct ucred cr;
    socklen_t cl = sizeof cr;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) != 0 || (cr.uid != 0 && cr.uid != getuid())) {
        close(fd);
        return;
    }
    for (int i = 0; i < MAX_CONNS; i++) {
        if (conns[i].fd < 0) {
            conns[i].fd = fd;
            return;
        }
    }
    close(fd);
}

static void pipe_read(rank_t *r, int *fdp, int which) {
    char buf[SL_STEP_OUT_CHUNK];
    ssize_t n = read(*fdp, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
        return;
    if (n <= 0) { /* EOF, or EIO from a pty whose rank is gone */
        if (*fdp == r->ptm)
            r->ptm = -1;
        close(*fdp);
        *fdp = -1;
        rank_maybe_done(r);
        return;
    }
    sl_step_msg_t o = {.type = SL_STEP_OUT, .step = r->step, .rank = r->rank, .fd = which,
                       .data = buf, .data_len = (size_t)n};
    conn_send(r->conn, &o);
}

static int bind_socket(void) {
    const char *dir = getenv("TMPDIR"), *task = getenv("SLUICE_TASK_INDEX");
    if (dir == NULL || task == NULL) {
        fprintf(stderr, "sluice-stepd: TMPDIR and SLUICE_TASK_INDEX must be set (run by sluice-agent)\n");
        exit(127);
    }
    snprintf(sock_path, sizeof sock_path, "%s/.sluice-step.%s", dir, task);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        die("socket");
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    char rel[64];
    snprintf(rel, sizeof rel, ".sluice-step.%s", task);
    bool relative = strlen(sock_path) >= sizeof sa.sun_path;
    int cwd = open(".", O_PATH | O_CLOEXEC);
    if (relative && chdir(dir) != 0)
        die("chdir TMPDIR");
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", relative ? rel : sock_path);
    unlink(sa.sun_path);
    mode_t old = umask(077);
    int rc = bind(fd, (struct sockaddr *)&sa, sizeof sa);
    umask(old);
    if (rc != 0)
        die("bind");
    if (relative && cwd >= 0 && fchdir(cwd) != 0)
        die("fchdir");
    if (cwd >= 0)
        close(cwd);
    if (listen(fd, 16) != 0)
        die("listen");
    return fd;
}

static void stop_all(void) {
    signal_ranks(SIGTERM, -1, true, 0);
    for (int tries = 0; tries < 20; tries++) {
        bool live = false;
        for (int i = 0; i < MAX_RANKS; i++)
            if (ranks[i].used && !ranks[i].ended) {
                if (waitpid(ranks[i].pid, NULL, WNOHANG) == ranks[i].pid)
                    ranks[i].ended = true;
                else
                    live = true;
            }
        if (!live)
            break;
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    signal_ranks(SIGKILL, -1, true, 0);
    unlink(sock_path);
}

int main(int argc, char **argv) {
    int first = 1;
    static const char *const torch_vars[] = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR",
                                             "MASTER_PORT", NULL};
    for (int i = 0; torch_vars[i]; i++)
        unsetenv(torch_vars[i]);
    if (first < argc && strcmp(argv[first], "--") == 0)
        first++;
    for (int i = 0; i < MAX_CONNS; i++)
        conns[i].fd = -1;
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGCHLD);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    sigprocmask(SIG_BLOCK, &mask, &orig_mask);
    signal(SIGPIPE, SIG_IGN);
    int sfd = signalfd(-1, &mask, SFD_CLOEXEC);
    if (sfd < 0)
        die("signalfd");
    int lfd = bind_socket();
    pid_t cmd = -1;
    if (first < argc) {
        cmd = fork();
        if (cmd < 0)
            die("fork");
        if (cmd == 0) {
            close(lfd);
            close(sfd);
            sigprocmask(SIG_SETMASK, &orig_mask, NULL);
            signal(SIGPIPE, SIG_DFL);
            execvp(argv[first], argv + first);
            fprintf(stderr, "sluice-stepd: cannot execute %s: %s\n", argv[first], strerror(errno));
            _exit(127);
        }
    }
    for (;;) {
        struct pollfd pf[2 + MAX_CONNS + 2 * MAX_RANKS];
        struct { int kind, idx; } who[2 + MAX_CONNS + 2 * MAX_RANKS];
        nfds_t n = 0;
        pf[n] = (struct pollfd){.fd = sfd, .events = POLLIN};
        who[n++].kind = 0;
        pf[n] = (struct pollfd){.fd = lfd, .events = POLLIN};
        who[n++].kind = 1;
        for (int i = 0; i < MAX_CONNS; i++)
            if (conns[i].fd >= 0) {
                pf[n] = (struct pollfd){.fd = conns[i].fd, .events = POLLIN};
                who[n].kind = 2;
                who[n++].idx = i;
            }
        for (int i = 0; i < MAX_RANKS; i++) {
            if (!ranks[i].used)
                continue;
            if (ranks[i].out >= 0) {
                pf[n] = (struct pollfd){.fd = ranks[i].out, .events = POLLIN};
                who[n].kind = 3;
                who[n++].idx = i;
            }
            if (ranks[i].err >= 0) {
                pf[n] = (struct pollfd){.fd = ranks[i].err, .events = POLLIN};
                who[n].kind = 4;
                who[n++].idx = i;
            }
        }
        if (poll(pf, n, -1) < 0) {
            if (errno == EINTR)
                continue;
            die("poll");
        }
        for (nfds_t i = 0; i < n; i++) {
            if (pf[i].revents == 0)
                continue;
            switch (who[i].kind) {
            case 0: {
                struct signalfd_siginfo si;
                if (read(sfd, &si, sizeof si) != sizeof si)
                    break;
                if (si.ssi_signo != SIGCHLD) {
                    if (cmd < 0) { /* the allocation ends */
                        stop_all();
                        return 0;
                    }
                    signal_ranks((int)si.ssi_signo, -1, true, 0);
                    break;
                }
                int st;
                pid_t p;
                while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
                    if (p == cmd) {
                        stop_all();
                        if (WIFSIGNALED(st))
                            return 128 + WTERMSIG(st);
                        return WEXITSTATUS(st);
                    }
                    for (int k = 0; k < MAX_RANKS; k++)
                        if (ranks[k].used && ranks[k].pid == p && !ranks[k].ended) {
                            ranks[k].ended = true;
                            ranks[k].status = st;
                            rank_maybe_done(&ranks[k]);
                        }
                }
                break;
            }
            case 1:
                accept_conn(lfd);
                break;
            case 2:
                if (conns[who[i].idx].fd >= 0)
                    conn_read(who[i].idx);
                break;
            case 3:
                if (ranks[who[i].idx].used && ranks[who[i].idx].out >= 0)
                    pipe_read(&ranks[who[i].idx], &ranks[who[i].idx].out, 1);
                break;
            case 4:
                if (ranks[who[i].idx].used && ranks[who[i].idx].err >= 0)
                    pipe_read(&ranks[who[i].idx], &ranks[who[i].idx].err, 2);
                break;
            }
        }
    }
}
