/*
 * health.c - GPU and node health on the agent (health.h).
 *
 * GPUs: every poll_ms the loop takes the XID events NVML has pending
 * (without waiting: nvmlEventSetWait_v2 with a timeout of 0) and reads
 * each GPU's lost state, volatile uncorrectable ECC count, pending or
 * failed row remapping and clock slowdowns (gpu.c). An XID leaves its GPU
 * in the state the catalogue gives (gpuhealth.h) for xid_hold_ms, as XIDs
 * are events and the GPU may look fine right after one; the readings are
 * levels, true while they last. The GPU's state is the worst of the two.
 *
 * The health command: started every interval_ms with /bin/sh -c in its
 * own process group, stdout and stderr into a non-blocking pipe. The
 * tasks' SIGCHLD handler reaps every child of the agent (waitpid(-1)), so
 * the command is not the agent's child: a small waiter process forks it,
 * writes its pid and then its wait status into a second pipe, and exits.
 * A 100 ms timer reads both pipes. At timeout_ms the command's whole group
 * gets SIGKILL and the run counts as failed (NHC's watchdog does the
 * same), while heartbeats go on: nothing here blocks the loop.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpu.h"
#include "health.h"
#include "log.h"
#include "loop.h"

#define MAX_GPUS 1024
#define OUT_MAX 512
#define CMD_TICK_MS 100

typedef struct gpu_state {
    int32_t xid;            /* the latest */
    int64_t xids;           /* events since start */
    int64_t xid_mono_us;    /* when the latest came */
    double xid_time;        /* and on the wall clock */
    sl_health_state_t state;
    sl_health_reason_t reason;
    char message[SL_PROTO_HEALTH_MSG_MAX];
} gpu_state_t;

struct agent_health {
    struct event_base *base;
    agent_health_config_t cfg;
    agent_nvml_t *nv;
    int ngpus;
    gpu_state_t *gpu;
    sl_proto_gpu_health_t *out; /* ngpus, the report's entries */
    struct event *poll_ev, *cmd_ev, *tick_ev;
    /* The node's own state: the command's last result. */
    sl_health_state_t state;
    sl_health_reason_t reason;
    char message[SL_PROTO_HEALTH_MSG_MAX];
    /* A command run: waiter > 0 while it runs; pid the command's once the
     * waiter said it; fd its output, sfd the waiter's status pipe. */
    pid_t waiter, pid;
    int fd, sfd;
    char sbuf[64];
    size_t slen;
    int64_t started_mono_us;
    bool killed;
    char buf[OUT_MAX];
    size_t blen;
    uint64_t sig;           /* of the last state, to see changes */
    int recent;             /* reports still to send after a change */
    unsigned calls;
};

/* A hash of every state, to see a change. */
static uint64_t signature(const agent_health_t *h) {
    uint64_t x = 1469598103934665603ULL;
#define MIX(v) (x = (x ^ (uint64_t)(v)) * 1099511628211ULL)
    MIX(h->state);
    MIX(h->reason);
    for (int i = 0; i < h->ngpus; i++) {
        MIX(h->gpu[i].state);
        MIX(h->gpu[i].reason);
        MIX(h->gpu[i].xids);
    }
#undef MIX
    return x;
}

static void check_changed(agent_health_t *h) {
    uint64_t s = signature(h);
    if (s == h->sig) return;
    h->sig = s;
    h->recent = 3;
    if (h->cfg.changed) h->cfg.changed(h->cfg.changed_ud);
}

/* Sets *st, *r and msg to the worse of what they hold and (s, r2, m). */
static void worse(gpu_state_t *g, sl_health_state_t s, sl_health_reason_t r, const char *m) {
    if (s <= g->state) return;
    g->state = s;
    g->reason = r;
    snprintf(g->message, sizeof g->message, "%s", m);
}

static void read_gpus(agent_health_t *h) {
    int64_t now = agent_mono_us();
    int gi;
    int32_t xid;
    for (int k = 0; k < 256 && agent_nvml_event_next(h->nv, &gi, &xid) == 1; k++) {
        if (gi < 0 || gi >= h->ngpus) continue;
        gpu_state_t *g = &h->gpu[gi];
        g->xid = xid;
        g->xids++;
        g->xid_mono_us = now;
        g->xid_time = agent_now();
        sl_xid_info_t x = sl_xid_classify(xid);
        sl_log(x.action == SL_XID_APP ? SL_LOG_INFO : SL_LOG_WARN, "health",
               "gpu=%d xid=%d action=%s \"%s\"", gi, (int)xid, sl_xid_action_name(x.action), x.what);
    }
    for (int i = 0; i < h->ngpus; i++) {
        gpu_state_t *g = &h->gpu[i];
        g->state = SL_HEALTH_HEALTHY;
        g->reason = SL_HREASON_NONE;
        g->message[0] = '\0';
        char m[SL_PROTO_HEALTH_MSG_MAX];
        if (g->xids > 0 && now - g->xid_mono_us < h->cfg.xid_hold_ms * 1000) {
            snprintf(m, sizeof m, "XID %d, %s", (int)g->xid, sl_xid_classify(g->xid).what);
            worse(g, sl_xid_health(g->xid), SL_HREASON_XID, m);
        }
        agent_gpu_health_reading_t r;
        agent_nvml_health(h->nv, i, &r);
        if (r.lost) worse(g, SL_HEALTH_UNHEALTHY, SL_HREASON_LOST, "GPU is lost (NVML)");
        if (r.ecc_uncorrected > 0) {
            snprintf(m, sizeof m, "%llu uncorrectable ECC errors since the driver loaded",
                     (unsigned long long)r.ecc_uncorrected);
            worse(g, SL_HEALTH_UNHEALTHY, SL_HREASON_ECC, m);
        }
        if (r.remap_failed) worse(g, SL_HEALTH_UNHEALTHY, SL_HREASON_REMAP, "row remapping failed");
        if (r.remap_pending)
            worse(g, SL_HEALTH_DEGRADED, SL_HREASON_REMAP, "row remapping pending (a GPU reset applies it)");
        if (r.thermal) worse(g, SL_HEALTH_DEGRADED, SL_HREASON_THERMAL, "clocks slowed for temperature");
        if (r.power) worse(g, SL_HEALTH_DEGRADED, SL_HREASON_POWER, "clocks slowed by the power brake");
    }
}

static void poll_cb(evutil_socket_t fd, short ev, void *arg) {
    agent_health_t *h = arg;
    read_gpus(h);
    check_changed(h);
    struct timeval tv = agent_tv_ms(h->cfg.poll_ms);
    evtimer_add(h->poll_ev, &tv);
}

/* ---- the health command ---- */

static void drain_pipe(agent_health_t *h) {
    char tmp[1024];
    ssize_t n;
    while (h->fd >= 0 && (n = read(h->fd, tmp, sizeof tmp)) > 0) {
        size_t room = sizeof h->buf - 1 - h->blen, k = (size_t)n < room ? (size_t)n : room;
        memcpy(h->buf + h->blen, tmp, k);
        h->blen += k;
    }
    h->buf[h->blen] = '\0';
}

/* The first non-empty line of the output, trimmed, into m. */
static void first_line(const char *b, char *m, size_t len) {
    while (*b == '\n' || *b == '\r' || *b == ' ' || *b == '\t') b++;
    size_t n = strcspn(b, "\r\n");
    while (n > 0 && (b[n - 1] == ' ' || b[n - 1] == '\t')) n--;
    snprintf(m, len, "%.*s", (int)n, b);
}

static void cmd_done(agent_health_t *h, int st) {
    char line[SL_PROTO_HEALTH_MSG_MAX];
    first_line(h->buf, line, sizeof line);
    sl_health_state_t was = h->state;
    if (h->killed) {
        h->state = SL_HEALTH_UNHEALTHY;
        snprintf(h->message, sizeof h->message, "health command timed out after %lld s and was killed",
                 (long long)(h->cfg.timeout_ms / 1000));
    } else if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
        h->state = SL_HEALTH_HEALTHY;
        h->message[0] = '\0';
    } else {
        h->state = SL_HEALTH_UNHEALTHY;
        char how[48];
        if (WIFSIGNALED(st))
            snprintf(how, sizeof how, "was killed by signal %d", WTERMSIG(st));
        else
            snprintf(how, sizeof how, "exited with status %d", WEXITSTATUS(st));
        snprintf(h->message, sizeof h->message, "health command %s%s%.100s", how, line[0] ? ": " : "", line);
    }
    h->reason = h->state == SL_HEALTH_HEALTHY ? SL_HREASON_NONE : SL_HREASON_CHECK;
    if (h->state != was)
        sl_log(h->state == SL_HEALTH_HEALTHY ? SL_LOG_INFO : SL_LOG_WARN, "health", "node %s%s%s",
               sl_health_state_name(h->state), h->message[0] ? ": " : "", h->message);
    check_changed(h);
}

/* Reads the waiter's pipe: the command's pid, then its wait status.
 * True once the status is in (*st). */
static bool read_status(agent_health_t *h, int *st) {
    ssize_t n = -1;
    while (h->slen < sizeof h->sbuf - 1 &&
           (n = read(h->sfd, h->sbuf + h->slen, sizeof h->sbuf - 1 - h->slen)) > 0)
        h->slen += (size_t)n;
    h->sbuf[h->slen] = '\0';
    char *nl = strchr(h->sbuf, '\n');
    if (nl && h->pid <= 0) h->pid = (pid_t)atoi(h->sbuf);
    if (nl && strchr(nl + 1, '\n')) {
        *st = atoi(nl + 1);
        return true;
    }
    if (n == 0) { /* end of file without a status: the waiter died first */
        *st = 0x7f00;
        return true;
    }
    return false;
}

static void run_end(agent_health_t *h) {
    if (h->fd >= 0) close(h->fd);
    if (h->sfd >= 0) close(h->sfd);
    h->fd = h->sfd = -1;
    /* The waiter has written its last and exits: reaped here or by the
     * tasks' handler, whichever comes first. */
    waitpid(h->waiter, NULL, WNOHANG);
    h->waiter = h->pid = 0;
}

static void tick_cb(evutil_socket_t fd, short ev, void *arg) {
    agent_health_t *h = arg;
    if (h->waiter <= 0) return;
    drain_pipe(h);
    int st = 0;
    if (read_status(h, &st)) {
        drain_pipe(h);
        run_end(h);
        cmd_done(h, st);
        return;
    }
    if (!h->killed && agent_mono_us() - h->started_mono_us >= h->cfg.timeout_ms * 1000) {
        sl_log(SL_LOG_WARN, "health", "health command pid=%d still running after %lld ms: SIGKILL",
               (int)h->pid, (long long)h->cfg.timeout_ms);
        if (h->pid > 0) kill(-h->pid, SIGKILL);
        h->killed = true;
    }
    struct timeval tv = agent_tv_ms(CMD_TICK_MS);
    evtimer_add(h->tick_ev, &tv);
}

/* The waiter: forks the command in its own group, says its pid, waits,
 * says its status. Never returns. */
static void waiter_main(const char *command, int out, int status) {
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        int nul = open("/dev/null", O_RDONLY);
        if (nul >= 0) dup2(nul, 0);
        dup2(out, 1);
        dup2(out, 2);
        execl("/bin/sh", "sh", "-c", command, (char *)NULL);
        _exit(127);
    }
    close(out);
    char line[32];
    int n = snprintf(line, sizeof line, "%d\n", (int)pid);
    if (pid < 0 || write(status, line, (size_t)n) != n) _exit(1);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    n = snprintf(line, sizeof line, "%d\n", st);
    if (write(status, line, (size_t)n) != n) _exit(1);
    _exit(0);
}

static void cmd_cb(evutil_socket_t fd, short ev, void *arg) {
    agent_health_t *h = arg;
    struct timeval tv = agent_tv_ms(h->cfg.interval_ms);
    evtimer_add(h->cmd_ev, &tv);
    if (h->waiter > 0) return; /* the last run is still being killed */
    int p[2], q[2];
    if (pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) {
        sl_log(SL_LOG_WARN, "health", "health command not run: pipe: %s", strerror(errno));
        return;
    }
    if (pipe2(q, O_CLOEXEC | O_NONBLOCK) != 0) {
        sl_log(SL_LOG_WARN, "health", "health command not run: pipe: %s", strerror(errno));
        close(p[0]);
        close(p[1]);
        return;
    }
    pid_t w = fork();
    if (w == 0) {
        close(p[0]);
        close(q[0]);
        int fl = fcntl(q[1], F_GETFL); /* the waiter's writes may block: they are tiny */
        fcntl(q[1], F_SETFL, fl & ~O_NONBLOCK);
        fl = fcntl(p[1], F_GETFL);
        fcntl(p[1], F_SETFL, fl & ~O_NONBLOCK);
        waiter_main(h->cfg.command, p[1], q[1]);
    }
    close(p[1]);
    close(q[1]);
    if (w < 0) {
        close(p[0]);
        close(q[0]);
        sl_log(SL_LOG_WARN, "health", "health command not run: fork: %s", strerror(errno));
        return;
    }
    h->waiter = w;
    h->pid = 0;
    h->fd = p[0];
    h->sfd = q[0];
    h->blen = h->slen = 0;
    h->buf[0] = '\0';
    h->killed = false;
    h->started_mono_us = agent_mono_us();
    struct timeval t = agent_tv_ms(CMD_TICK_MS);
    evtimer_add(h->tick_ev, &t);
}

/* ---- the report ---- */

bool agent_health_report(void *ud, bool first, sl_proto_health_t *out) {
    agent_health_t *h = ud;
    memset(out, 0, sizeof *out);
    if (h->nv == NULL && h->cmd_ev == NULL) return false; /* nothing watched: nothing to say */
    size_t n = 0;
    bool bad = h->state != SL_HEALTH_HEALTHY;
    for (int i = 0; i < h->ngpus; i++) {
        const gpu_state_t *g = &h->gpu[i];
        if (g->state == SL_HEALTH_HEALTHY && g->xids == 0) continue;
        bad |= g->state != SL_HEALTH_HEALTHY;
        h->out[n++] = (sl_proto_gpu_health_t){.gpu = i, .state = g->state, .reason = g->reason,
                                              .xid = g->xid, .xids = g->xids, .xid_time = g->xid_time,
                                              .message = g->message[0] ? g->message : NULL};
    }
    bool send = bad || first || h->recent > 0 || ++h->calls % 5 == 0;
    if (h->recent > 0) h->recent--;
    if (!send) return false;
    *out = (sl_proto_health_t){.present = true, .state = h->state, .reason = h->reason,
                               .message = h->message[0] ? h->message : NULL, .gpus = h->out,
                               .ngpus = n};
    return true;
}

int agent_health_create(struct event_base *base, const agent_health_config_t *cfg,
                        agent_health_t **out, char *err, size_t errlen) {
    agent_health_t *h = calloc(1, sizeof *h);
    if (!h) abort();
    h->base = base;
    h->cfg = *cfg;
    h->fd = h->sfd = -1;
    if (h->cfg.poll_ms <= 0) h->cfg.poll_ms = 1000;
    char why[256];
    if (cfg->nvml && agent_nvml_open(&h->nv, why, sizeof why) == 0) {
        h->ngpus = agent_nvml_count(h->nv);
        if (h->ngpus > MAX_GPUS) h->ngpus = MAX_GPUS;
        h->gpu = calloc((size_t)h->ngpus, sizeof *h->gpu);
        h->out = calloc((size_t)h->ngpus, sizeof *h->out);
        if (!h->gpu || !h->out) abort();
        bool ev = agent_nvml_events_open(h->nv) == 0;
        sl_log(SL_LOG_INFO, "health", "watching %d GPU(s) every %lld ms (XID events: %s)", h->ngpus,
               (long long)h->cfg.poll_ms, ev ? "yes" : "not in this NVML");
        h->poll_ev = evtimer_new(base, poll_cb, h);
        struct timeval tv = agent_tv_ms(h->cfg.poll_ms);
        evtimer_add(h->poll_ev, &tv);
    } else if (cfg->nvml) {
        h->nv = NULL;
        sl_log(SL_LOG_INFO, "health", "GPUs not watched: %s", why);
    }
    if (cfg->command && *cfg->command) {
        if (cfg->interval_ms <= 0 || cfg->timeout_ms <= 0) {
            snprintf(err, errlen, "health command: interval and timeout must be positive");
            agent_health_destroy(h);
            return -1;
        }
        h->cmd_ev = evtimer_new(base, cmd_cb, h);
        h->tick_ev = evtimer_new(base, tick_cb, h);
        struct timeval now = {0, 0};
        evtimer_add(h->cmd_ev, &now);
    }
    h->sig = signature(h);
    *out = h;
    return 0;
}

void agent_health_destroy(agent_health_t *h) {
    if (!h) return;
    if (h->waiter > 0) {
        int st;
        for (int k = 0; k < 50 && h->pid <= 0 && !read_status(h, &st); k++) usleep(10000);
        if (h->pid > 0) kill(-h->pid, SIGKILL);
        while (waitpid(h->waiter, NULL, 0) < 0 && errno == EINTR) {}
    }
    if (h->fd >= 0) close(h->fd);
    if (h->sfd >= 0) close(h->sfd);
    if (h->poll_ev) event_free(h->poll_ev);
    if (h->cmd_ev) event_free(h->cmd_ev);
    if (h->tick_ev) event_free(h->tick_ev);
    agent_nvml_close(h->nv);
    free(h->gpu);
    free(h->out);
    free(h);
}
