/*
 * step.c - job steps on this node (step.h).
 *
 * Each task of an allocation runs sluice-stepd, which listens on
 * WORKDIR/jobs/NAME/.sluice-step.TASK (NAME: the job's on the node,
 * names.h; stepd/stepd.c). For each rank of a step_run the agent
 * connects to the step daemon of the rank's task (one connection per
 * task, kept while the task lives), checks that the
 * socket's listener is that task's process (SO_PEERCRED pid: the job's
 * directory is the tenant's own, so a name there could be a link to some
 * other tenant's socket, and must never carry this job's step to it), and
 * writes the rank's `run`. The daemon's started/out/exit lines are sent on
 * to the controller with the job's id added: a daemon speaks for its own
 * job only, whatever it writes.
 *
 * The socket is reached as /proc/self/fd/DIRFD/.sluice-step.TASK so that
 * a long work directory never overflows sun_path. A daemon not yet
 * listening (the allocation's tasks start together, and a batch script's
 * first srun can be quicker than another node's daemon) is retried every
 * 20 ms for 10 s; then the rank ends with the reason.
 *
 * Commands. Tasks find sluice-stepd and Slurm's command names (srun,
 * salloc: the sluice binary, which answers to the name it is called by)
 * in WORKDIR/slurm-bin, links to the programs beside sluice-agent made at
 * start-up and put first on the agent's PATH, which every task inherits
 * (spawn.c). The table `commands` is the one list of those names.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "log.h"
#include "names.h"
#include "proto_step.h"
#include "slurmfmt.h"
#include "sluice/alloc.h"
#include "sluice/error.h"
#include "step.h"

#define RETRY_MS 20
#define RETRY_FOR_MS 10000

typedef struct pend {          /* a rank handed to (or waiting for) its daemon */
    uint32_t step;
    int32_t rank;
} pend_t;

typedef struct holder {
    struct holder *next;
    uint64_t job;
    int32_t task;
    struct bufferevent *bev;   /* NULL: not connected yet */
    agent_steps_t *s;
    char **queued;             /* run lines waiting for the connection */
    size_t *queued_len;
    size_t nqueued;
    pend_t *pend;
    size_t npend, pend_cap;
    int tries;
    struct event *retry;
} holder_t;

struct agent_steps {
    struct event_base *base;
    char *workdir;
    agent_tasks_t *ts;
    agent_steps_send_fn send;
    void *ud;
    holder_t *holders;
};

static void send_up(agent_steps_t *s, sl_step_msg_t *m, uint64_t job) {
    m->job = job;
    size_t len;
    char *line = sl_step_encode(m, SL_STEP_LINK_CTL, &len);
    if (line && s->send)
        s->send(s->ud, line, len);
    sl_free(line);
}

static void rank_lost(holder_t *h, uint32_t step, int32_t rank, const char *why) {
    sl_step_msg_t x = {.type = SL_STEP_EXIT, .step = step, .rank = rank, .exit_code = 255,
                       .reason = why};
    send_up(h->s, &x, h->job);
}

static void pend_drop(holder_t *h, uint32_t step, int32_t rank) {
    for (size_t i = 0; i < h->npend; i++)
        if (h->pend[i].step == step && h->pend[i].rank == rank) {
            h->pend[i] = h->pend[--h->npend];
            return;
        }
}

static void holder_free(agent_steps_t *s, holder_t *h, const char *why) {
    for (holder_t **pp = &s->holders; *pp; pp = &(*pp)->next)
        if (*pp == h) {
            *pp = h->next;
            break;
        }
    for (size_t i = 0; i < h->npend; i++)
        rank_lost(h, h->pend[i].step, h->pend[i].rank, why);
    for (size_t i = 0; i < h->nqueued; i++)
        sl_free(h->queued[i]);
    sl_free(h->queued);
    sl_free(h->queued_len);
    sl_free(h->pend);
    if (h->bev)
        bufferevent_free(h->bev);
    if (h->retry)
        event_free(h->retry);
    sl_free(h);
}

typedef struct pid_find {
    uint64_t job;
    int32_t task;
    int32_t pid;
    char name[AGENT_NAME_MAX]; /* the job's NAME on the node (names.h) */
} pid_find_t;

static void find_pid(void *ud, const agent_task_info_t *ti) {
    pid_find_t *f = ud;
    if (ti->job == f->job && ti->task == f->task && ti->running) {
        f->pid = ti->pid;
        snprintf(f->name, sizeof f->name, "%s", ti->name);
    }
}

static void holder_read_cb(struct bufferevent *bev, void *arg) {
    holder_t *h = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    char *line;
    size_t len;
    while ((line = evbuffer_readln(in, &len, EVBUFFER_EOL_LF)) != NULL) {
        sl_step_msg_t m;
        char err[256];
        if (sl_step_decode_line(line, len, SL_STEP_LINK_STEPD, &m, err, sizeof err) == 0 &&
            (m.type == SL_STEP_STARTED || m.type == SL_STEP_OUT || m.type == SL_STEP_EXIT)) {
            if (m.type == SL_STEP_EXIT)
                pend_drop(h, m.step, m.rank);
            send_up(h->s, &m, h->job);
        } else {
            sl_log(SL_LOG_WARN, "step", "job=%llu task=%d: bad line from its step daemon ignored",
                   (unsigned long long)h->job, h->task);
        }
        sl_step_msg_fini(&m);
        free(line);
    }
    if (evbuffer_get_length(in) > SL_PROTO_MAX_LINE)
        holder_free(h->s, h, "its step daemon wrote a line over 1 MiB");
}

static void holder_event_cb(struct bufferevent *bev, short what, void *arg) {
    (void)bev;
    holder_t *h = arg;
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
        holder_free(h->s, h, "the allocation's task ended");
}

/* Connects to the daemon of (h->job, h->task): 0, or -errno (ENOENT and
 * ECONNREFUSED: not listening yet), or -EPERM for a listener that is not
 * the task. */
static int holder_connect(holder_t *h) {
    pid_find_t f = {h->job, h->task, -1, ""};
    agent_tasks_foreach(h->s->ts, find_pid, &f);
    if (f.pid <= 0)
        return -ESRCH;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/jobs/%s", h->s->workdir, f.name);
    int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (dfd < 0)
        return -errno;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "/proc/self/fd/%d/.sluice-step.%d", dfd, h->task);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        close(dfd);
        return -errno;
    }
    int rc = connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0 ? 0 : -errno;
    close(dfd);
    struct ucred cr;
    socklen_t cl = sizeof cr;
    if (rc == 0 && (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) != 0 || cr.pid != f.pid)) {
        sl_log(SL_LOG_WARN, "step", "job=%llu task=%d: the step socket is not the task's (pid %d, not %d)",
               (unsigned long long)h->job, h->task, (int)cr.pid, f.pid);
        rc = -EPERM;
    }
    if (rc != 0) {
        close(fd);
        return rc;
    }
    evutil_make_socket_nonblocking(fd);
    h->bev = bufferevent_socket_new(h->s->base, fd, BEV_OPT_CLOSE_ON_FREE);
    bufferevent_setcb(h->bev, holder_read_cb, NULL, holder_event_cb, h);
    bufferevent_enable(h->bev, EV_READ);
    for (size_t i = 0; i < h->nqueued; i++) {
        bufferevent_write(h->bev, h->queued[i], h->queued_len[i]);
        sl_free(h->queued[i]);
    }
    h->nqueued = 0;
    return 0;
}

static void retry_cb(evutil_socket_t fd, short ev, void *arg) {
    (void)fd;
    (void)ev;
    holder_t *h = arg;
    int rc = holder_connect(h);
    if (rc == 0)
        return;
    if ((rc == -ENOENT || rc == -ECONNREFUSED || rc == -ESRCH) && ++h->tries * RETRY_MS < RETRY_FOR_MS) {
        struct timeval tv = {0, RETRY_MS * 1000};
        evtimer_add(h->retry, &tv);
        return;
    }
    char why[160];
    snprintf(why, sizeof why, "cannot reach the step daemon of task %d: %s", h->task,
             rc == -ESRCH ? "the task does not run on this node" : strerror(-rc));
    holder_free(h->s, h, why);
}

static holder_t *holder_get(agent_steps_t *s, uint64_t job, int32_t task) {
    for (holder_t *h = s->holders; h; h = h->next)
        if (h->job == job && h->task == task)
            return h;
    holder_t *h = sl_xmalloc(sizeof *h);
    *h = (holder_t){.job = job, .task = task, .s = s, .next = s->holders};
    s->holders = h;
    h->retry = evtimer_new(s->base, retry_cb, h);
    struct timeval now = {0, 0};
    evtimer_add(h->retry, &now);
    return h;
}

static void holder_write(holder_t *h, char *line, size_t len) {
    if (h->bev) {
        bufferevent_write(h->bev, line, len);
        sl_free(line);
        return;
    }
    h->queued = sl_xrealloc(h->queued, (h->nqueued + 1) * sizeof *h->queued);
    h->queued_len = sl_xrealloc(h->queued_len, (h->nqueued + 1) * sizeof *h->queued_len);
    h->queued[h->nqueued] = line;
    h->queued_len[h->nqueued++] = len;
}

static void on_run(agent_steps_t *s, const sl_step_msg_t *m) {
    for (size_t i = 0; i < m->nranks; i++) {
        const sl_step_rank_t *r = &m->ranks[i];
        sl_proto_kv_t *env = sl_xmalloc((m->nenv + r->nenv + 1) * sizeof *env);
        size_t n = 0;
        for (size_t k = 0; k < m->nenv; k++) {
            bool mine = false;
            for (size_t q = 0; q < r->nenv && !mine; q++)
                mine = strcmp(r->env[q].key, m->env[k].key) == 0;
            if (!mine)
                env[n++] = m->env[k];
        }
        memcpy(env + n, r->env, r->nenv * sizeof *env);
        n += r->nenv;
        sl_step_msg_t run = {.type = SL_STEP_RUN, .step = m->step, .rank = r->rank, .argv = m->argv,
                             .argc = m->argc, .env = env, .nenv = n, .cwd = m->cwd,
                             .output = m->output, .error = m->error, .pty_rows = m->pty_rows,
                             .pty_cols = m->pty_cols};
        size_t len;
        char *line = sl_step_encode(&run, SL_STEP_LINK_STEPD, &len);
        sl_free(env);
        holder_t *h = holder_get(s, m->job, r->task);
        if (h->npend == h->pend_cap) {
            h->pend_cap = h->pend_cap ? 2 * h->pend_cap : 8;
            h->pend = sl_xrealloc(h->pend, h->pend_cap * sizeof *h->pend);
        }
        h->pend[h->npend++] = (pend_t){m->step, r->rank};
        if (line)
            holder_write(h, line, len);
    }
}

static void on_signal(agent_steps_t *s, const sl_step_msg_t *m) {
    for (holder_t *h = s->holders; h; h = h->next) {
        if (h->job != m->job)
            continue;
        sl_step_msg_t sig = {.type = SL_STEP_SIGNAL, .step = m->step, .sig = m->sig};
        size_t len;
        char *line = sl_step_encode(&sig, SL_STEP_LINK_STEPD, &len);
        if (line)
            holder_write(h, line, len);
    }
}

/* srun --pty's input, to the daemon running the rank. */
static void on_stdin(agent_steps_t *s, const sl_step_msg_t *m) {
    for (holder_t *h = s->holders; h; h = h->next) {
        bool here = false;
        for (size_t i = 0; i < h->npend && !here; i++)
            here = h->pend[i].step == m->step && h->pend[i].rank == m->rank;
        if (h->job != m->job || !here)
            continue;
        sl_step_msg_t in = {.type = SL_STEP_STDIN, .step = m->step, .rank = m->rank, .data = m->data,
                            .data_len = m->data_len};
        size_t len;
        char *line = sl_step_encode(&in, SL_STEP_LINK_STEPD, &len);
        if (line)
            holder_write(h, line, len);
    }
}

bool agent_steps_handle_line(agent_steps_t *s, const char *line, size_t len) {
    sl_step_msg_t m;
    char err[300];
    int rc = sl_step_decode_line(line, len, SL_STEP_LINK_CTL, &m, err, sizeof err);
    if (rc == SL_ENOENT || (rc != 0 && m.type == SL_STEP_NONE)) {
        sl_step_msg_fini(&m);
        return false;
    }
    if (rc != 0)
        sl_log(SL_LOG_WARN, "step", "bad message from controller: %s", err);
    else if (m.type == SL_STEP_RUN)
        on_run(s, &m);
    else if (m.type == SL_STEP_SIGNAL)
        on_signal(s, &m);
    else if (m.type == SL_STEP_STDIN)
        on_stdin(s, &m);
    sl_step_msg_fini(&m);
    return true;
}

/* The link of name in dir to target beside the agent (self). */
static void command_link(const char *dir, const char *self, const char *name, const char *target) {
    char link[4200], path[4200];
    snprintf(link, sizeof link, "%s/%s", dir, name);
    snprintf(path, sizeof path, "%s/%s", self, target);
    unlink(link);
    if (access(path, X_OK) != 0 || symlink(path, link) != 0)
        sl_log(SL_LOG_WARN, "step", "%s: cannot link %s (%s): tasks will not find it", link, path,
               strerror(errno));
}

/* The names a task finds first on its PATH: sluice-stepd, and every Slurm
 * command's name as the sluice binary (sl_slurm_commands), so that a task
 * never reaches another Slurm's squeue or scontrol on the node. */

static void commands_link(const char *workdir) {
    char self[4096], dir[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return;
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash)
        *slash = '\0';
    snprintf(dir, sizeof dir, "%s/slurm-bin", workdir);
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        sl_log(SL_LOG_WARN, "step", "cannot make %s: %s (tasks find no srun)", dir, strerror(errno));
        return;
    }
    command_link(dir, self, "sluice-stepd", "sluice-stepd");
    for (size_t i = 0; sl_slurm_commands[i]; i++)
        command_link(dir, self, sl_slurm_commands[i], "sluice");
    const char *path = getenv("PATH");
    char *np = NULL;
    if (asprintf(&np, "%s:%s", dir, path && *path ? path : "/usr/local/bin:/usr/bin:/bin") < 0)
        abort();
    setenv("PATH", np, 1);
    free(np);
}

agent_steps_t *agent_steps_create(struct event_base *base, const char *workdir, agent_tasks_t *ts) {
    commands_link(workdir);
    agent_steps_t *s = sl_xmalloc(sizeof *s);
    *s = (agent_steps_t){.base = base, .workdir = strdup(workdir), .ts = ts};
    if (s->workdir == NULL)
        abort();
    return s;
}

void agent_steps_destroy(agent_steps_t *s) {
    if (s == NULL)
        return;
    s->send = NULL;
    while (s->holders)
        holder_free(s, s->holders, "the agent stopped");
    free(s->workdir);
    sl_free(s);
}

void agent_steps_set_sender(agent_steps_t *s, agent_steps_send_fn send, void *ud) {
    s->send = send;
    s->ud = ud;
}
