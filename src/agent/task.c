/*
 * task.c - launching, killing, reaping and remembering tasks (task.h).
 *
 * Tasks are kept in a singly linked list: a node runs at most a few hundred
 * tasks, and each message touches one task, so a list beats a hash on size
 * and clarity.
 *
 * A launch is spawned (spawn.c) in the callback that read it, under a
 * monitor (sluice-monitor, monitor/monitor.c) that is the agent's child and the
 * task's parent. Each task leads its own process group, which is what
 * `kill` and fencing signal (SIGTERM, then SIGKILL after the grace period)
 * and what the monitor sweeps with SIGKILL once the leader exits, so no
 * stray child of a finished task keeps a GPU. The monitor writes the task's
 * exit status to WORKDIR/status/JOB.TASK and exits; the agent learns of the
 * end from the monitor's exit and reads the status there. The exit is seen
 * through SIGCHLD, which libevent turns into a loop event; monitors
 * re-adopted after an agent restart are not our children, and are watched
 * through a pidfd instead, and a monitor that ended while no agent ran
 * left its status file for the restarted agent to read. So an agent
 * restart loses no exit status. The status directory is the agent's own
 * (0700, beside state.json, on the same file system so the monitor's
 * rename is atomic): a tenant's task, running as another user, can neither
 * forge nor remove a status there, which its job directory would allow.
 * The monitor of a task whose job is requeued when its node fails is also
 * handed the node's fence lease (lease.h), by which it stops the task when
 * the agent cannot (monitor.h); a status it marks fenced makes the task's
 * end a fenced one, as if the agent had fenced it.
 * One file per task needs no lock between monitors, nor between a monitor
 * and the agent's state.json writes. A status file is removed once the
 * controller acknowledges the end (state.json keeps the end until then).
 *
 * A task's start or end is reported to the controller only once state.json
 * records it, so an agent killed in between never leaves the controller
 * believing in a task the restarted agent does not know (it would launch it
 * again) or has forgotten it ended. state.json is rewritten (write, rename;
 * no fsync: a machine crash takes the tasks with it) once per loop pass that
 * changed a task, and the reports queued in that pass leave right after.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "log.h"
#include "lease.h"
#include "loop.h"
#include "monitor.h"
#include "names.h"
#include "osutil.h"
#include "preempt.h"
#include "secrets.h"
#include "spawn.h"
#include "task.h"
#include "task_record.h"
#include "tasklog.h"
#include "volumes.h"

struct agent_tasks {
    struct event_base *base;
    agent_tasks_config_t cfg;
    char *state_path;
    char *monitor_path;         /* sluice-monitor, beside the agent's binary */
    char lease_path[4096];      /* the node's fence lease (lease.h), for the monitors */
    task_t *tasks;
    int nrunning;
    struct event *sigchld_ev;
    struct event *save_ev;      /* deferred state.json write, once per loop pass */
    struct event *house_ev;     /* cgroup housekeeping, when the agent is idle */
    int64_t house_due_us;       /* since when it has been due (agent_mono_us) */
    struct event *stop_ev;
    int stopping;
    agent_tasks_send_fn send;
    void *send_ud;
    void (*watch)(void *ud);    /* agent_tasks_set_watcher */
    void *watch_ud;
    char instance[SL_PROTO_INSTANCE_MAX + 1]; /* the controller's (its welcome); "": none */
};

/* ---- task list ---- */

/* Whether t is of the controller's cluster instance: launched under it,
 * or where either side has none (a controller or a record from before
 * instances). */
static bool of_instance(const agent_tasks_t *ts, const task_t *t) {
    return !t->foreign && (t->instance[0] == '\0' || ts->instance[0] == '\0' ||
                           strcmp(t->instance, ts->instance) == 0);
}

/* The task (job, task) of the controller's cluster instance. What the
 * controller says names only those. */
static task_t *task_find(agent_tasks_t *ts, uint64_t job, int32_t task) {
    for (task_t *t = ts->tasks; t; t = t->next)
        if (t->job == job && t->task == task && of_instance(ts, t)) return t;
    return NULL;
}

/* Whether a message's attempt (< 0: none) names another run than t's:
 * both known and different. */
static bool other_attempt(const task_t *t, int64_t attempt) {
    return attempt >= 0 && t->has_attempt && (uint32_t)attempt != t->attempt;
}

/* t's NAME and KEY (names.h). */
static void t_name(const task_t *t, char *buf, size_t len) {
    agent_job_name(t->instance, t->job, buf, len);
}
static void t_key(const task_t *t, char *buf, size_t len) {
    agent_task_key(t->instance, t->job, t->task, buf, len);
}

static task_t *task_find_pid(agent_tasks_t *ts, pid_t pid) {
    for (task_t *t = ts->tasks; t; t = t->next)
        if (t->state == TASK_RUNNING && t->monitor == pid && t->pidfd < 0) return t;
    return NULL;
}

static task_t *task_new(agent_tasks_t *ts, uint64_t job, int32_t task) {
    task_t *t = calloc(1, sizeof *t);
    if (!t) abort();
    t->ts = ts;
    t->job = job;
    t->task = task;
    t->pidfd = -1;
    t->oom_fd = -1;
    t->mem_peak = -1;
    t->next = ts->tasks;
    ts->tasks = t;
    return t;
}

static void task_free(task_t *t) {
    if (!t) return;
    if (t->kill_ev) event_free(t->kill_ev);
    if (t->pidfd_ev) event_free(t->pidfd_ev);
    if (t->pidfd >= 0) close(t->pidfd);
    if (t->oom_ev) event_free(t->oom_ev);
    if (t->oom_fd >= 0) close(t->oom_fd);
    free(t->reason);
    free(t->tenant);
    free(t->gpus);
    free(t);
}

/* WORKDIR/status/KEY, where t's monitor writes its exit status. */
static void status_path(const task_t *t, char *buf, size_t len) {
    char key[AGENT_NAME_MAX];
    t_key(t, key, sizeof key);
    snprintf(buf, len, "%s/status/%s", t->ts->cfg.workdir, key);
}

/*
 * Reads the exit status t's monitor recorded (monitor.h). Returns 1 with
 * *exit_code, *sig and *end_time set (and t->fenced when the monitor
 * stopped the task for its lease), 0 when there is none, -1 (logged) when
 * the file cannot be read or parsed.
 */
static int status_read(task_t *t, int *exit_code, int *sig, double *end_time) {
    char path[4096];
    status_path(t, path, sizeof path);
    json_error_t err;
    json_t *o = json_load_file(path, 0, &err);
    if (!o) {
        if (access(path, F_OK) != 0 && errno == ENOENT) return 0;
        sl_log(SL_LOG_WARN, "agent", "cannot read the exit status in %s: %s", path, err.text);
        return -1;
    }
    json_t *c = json_object_get(o, "exit_code"), *s = json_object_get(o, "signal");
    int rc = json_is_integer(c) && json_is_integer(s) ? 1 : -1;
    if (rc == 1) {
        *exit_code = (int)json_integer_value(c);
        *sig = (int)json_integer_value(s);
        *end_time = json_number_value(json_object_get(o, "end_time"));
        if (json_is_true(json_object_get(o, "fenced"))) t->fenced = 1;
    } else {
        sl_log(SL_LOG_WARN, "agent", "%s lacks exit_code or signal", path);
    }
    json_decref(o);
    return rc;
}

static void task_remove(agent_tasks_t *ts, task_t *t) {
    for (task_t **pp = &ts->tasks; *pp; pp = &(*pp)->next) {
        if (*pp == t) {
            *pp = t->next;
            break;
        }
    }
    if (t->state == TASK_RUNNING) ts->nrunning--;
    char path[4096];
    status_path(t, path, sizeof path);
    unlink(path);
    t_name(t, path, sizeof path);
    agent_secrets_remove(ts->cfg.workdir, path, t->task); /* a failed launch's, if any */
    task_free(t);
}

/* ---- reports ---- */

static void send_msg(agent_tasks_t *ts, const sl_proto_msg_t *m) {
    if (ts->send) ts->send(ts->send_ud, m);
}

/* Reports carry the attempt of their task's launch; a foreign task's are
 * not the controller's business and are never sent. */
static void send_started(task_t *t) {
    sl_proto_msg_t m = {.type = SL_PROTO_STARTED, .job = t->job, .task = t->task,
                        .has_attempt = t->has_attempt, .attempt = t->attempt,
                        .time = t->start_time, .u.started.pid = (int32_t)t->pid};
    if (!t->foreign) send_msg(t->ts, &m);
}

static void send_end(task_t *t) {
    sl_proto_msg_t m = {.job = t->job, .task = t->task, .has_attempt = t->has_attempt,
                        .attempt = t->attempt, .time = t->end_time};
    if (t->foreign) return;
    if (t->state == TASK_EXITED) {
        m.type = SL_PROTO_EXITED;
        m.u.exited.exit_code = t->exit_code;
        m.u.exited.signal = t->sig;
        m.u.exited.fenced = t->fenced != 0;
        m.u.exited.oom_killed = t->oom_killed != 0;
        m.u.exited.mem_peak = t->mem_peak > 0 ? t->mem_peak : 0;
        m.u.exited.mem_limit = t->mem_limit > 0 ? t->mem_limit : 0;
    } else if (t->state == TASK_FAILED) {
        m.type = SL_PROTO_FAILED;
        m.u.failed.reason = t->reason ? t->reason : "";
    } else {
        return;
    }
    send_msg(t->ts, &m);
}

static sl_proto_task_t task_entry(const task_t *t) {
    sl_proto_task_t e = {.job = t->job, .task = t->task, .has_attempt = t->has_attempt,
                         .attempt = t->attempt, .instance = t->instance[0] ? t->instance : NULL};
    switch (t->state) {
    case TASK_RUNNING:
        e.state = SL_PROTO_TASK_RUNNING;
        e.pid = (int32_t)t->pid;
        e.start_time = t->start_time;
        break;
    case TASK_EXITED:
        e.state = SL_PROTO_TASK_EXITED;
        e.exit_code = t->exit_code;
        e.signal = t->sig;
        e.fenced = t->fenced != 0;
        e.oom_killed = t->oom_killed != 0;
        e.mem_peak = t->mem_peak > 0 ? t->mem_peak : 0;
        e.mem_limit = t->mem_limit > 0 ? t->mem_limit : 0;
        e.end_time = t->end_time;
        break;
    case TASK_FAILED:
        e.state = SL_PROTO_TASK_FAILED;
        e.reason = t->reason ? t->reason : "";
        e.end_time = t->end_time;
        break;
    }
    return e;
}

sl_proto_task_t *agent_tasks_report(agent_tasks_t *ts, size_t *n) {
    size_t count = 0;
    for (task_t *t = ts->tasks; t; t = t->next) count++;
    sl_proto_task_t *out = calloc(count ? count : 1, sizeof *out);
    if (!out) abort();
    count = 0;
    for (task_t *t = ts->tasks; t; t = t->next) out[count++] = task_entry(t);
    *n = count;
    return out;
}

static void house_later(agent_tasks_t *ts);

static void state_dirty(agent_tasks_t *ts) {
    if (ts->save_ev && !event_pending(ts->save_ev, EV_TIMEOUT, NULL))
        event_active(ts->save_ev, EV_TIMEOUT, 0);
}

/* Queues a report of t's start or end for right after the state.json write
 * of this loop pass (save_cb). */
static void report_after_save(task_t *t, int what) {
    t->report |= what;
    state_dirty(t->ts);
}

static void save_cb(evutil_socket_t fd, short ev, void *arg) {
    agent_tasks_t *ts = arg;
    json_t *arr = json_array();
    for (task_t *t = ts->tasks; t; t = t->next) {
        if (t->state == TASK_RUNNING && t->pstart == 0) t->pstart = sl_proc_start_time(t->monitor);
        json_array_append_new(arr, agent__task_record(t));
    }
    json_t *root = json_pack("{s:s,s:o}", "node", ts->cfg.node, "tasks", arr);
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", ts->state_path);
    if (json_dump_file(root, tmp, JSON_COMPACT) != 0 || rename(tmp, ts->state_path) != 0)
        sl_log(SL_LOG_WARN, "agent", "cannot write %s: %s", ts->state_path, strerror(errno));
    json_decref(root);
    for (task_t *t = ts->tasks, *next; t; t = next) {
        next = t->next;
        char key[AGENT_NAME_MAX];
        t_key(t, key, sizeof key);
        if (t->report & REPORT_STARTED) send_started(t);
        if (t->report & REPORT_END) send_end(t);
        t->report = 0;
        if (t->cgroup_done) /* state.json now records the outcome */
            agent_cgroup_task_remove_later(ts->cfg.cgroup, key);
        t->cgroup_done = 0;
        if (t->foreign && t->state != TASK_RUNNING) {
            /* No controller will acknowledge it: forgotten at the next write. */
            task_remove(ts, t);
            state_dirty(ts);
        }
    }
    house_later(ts);
    if (ts->watch) ts->watch(ts->watch_ud);
}

/* Cgroup housekeeping (cgroup.h: removing ended tasks' cgroups, making the
 * pool's spares) waits until no launch or end has come for HOUSE_IDLE_MS,
 * so that in a wave of ends and launches none waits for it; when it has
 * been due for HOUSE_MAX_MS it runs anyway. One piece a loop pass. */
#define HOUSE_IDLE_MS 10
#define HOUSE_MAX_MS 200

static void house_later(agent_tasks_t *ts) {
    if (!ts->house_ev || !agent_cgroup_housekeeping_due(ts->cfg.cgroup)) return;
    int64_t now = agent_mono_us();
    if (!evtimer_pending(ts->house_ev, NULL)) ts->house_due_us = now;
    int64_t late_ms = (now - ts->house_due_us) / 1000;
    struct timeval tv = agent_tv_ms(late_ms >= HOUSE_MAX_MS ? 0 : HOUSE_IDLE_MS);
    evtimer_add(ts->house_ev, &tv);
}

static void house_cb(evutil_socket_t fd, short ev, void *arg) {
    agent_tasks_t *ts = arg;
    struct timeval now = {0, 0};
    if (agent_cgroup_housekeep(ts->cfg.cgroup, 1) > 0 &&
        agent_cgroup_housekeeping_due(ts->cfg.cgroup))
        evtimer_add(ts->house_ev, &now);
}

/* ---- enforcement ---- */

static void oom_cb(evutil_socket_t fd, short ev, void *arg) {
    task_t *t = arg;
    uint64_t n;
    if (read(fd, &n, sizeof n) != (ssize_t)sizeof n || t->state != TASK_RUNNING) return;
    /* v1 killed one process of the task; the whole task goes (v2 does
     * this itself: memory.oom.group). */
    t->oom_seen = 1;
    sl_log(SL_LOG_WARN, "agent", "job=%llu task=%d pid=%d out of memory: killing the whole task",
           (unsigned long long)t->job, t->task, (int)t->pid);
    char key[AGENT_NAME_MAX];
    t_key(t, key, sizeof key);
    agent_cgroup_task_kill(t->ts->cfg.cgroup, key);
}

/* Watches fd, t's v1 OOM eventfd (taken over); -1 watches nothing. */
static void oom_watch(task_t *t, int fd) {
    t->oom_fd = fd;
    if (fd < 0) return;
    t->oom_ev = event_new(t->ts->base, fd, EV_READ | EV_PERSIST, oom_cb, t);
    event_add(t->oom_ev, NULL);
}

/* t has ended: reads its cgroup's outcome into t (a task with no cgroup,
 * under --cgroup none, has none); the cgroup goes after the next state.json
 * write (save_cb). */
static void cgroup_outcome(task_t *t) {
    agent_cgroup_t *cg = t->ts->cfg.cgroup;
    if (t->oom_ev) {
        event_free(t->oom_ev);
        t->oom_ev = NULL;
    }
    if (t->oom_fd >= 0) {
        close(t->oom_fd);
        t->oom_fd = -1;
    }
    if (!cg) return;
    /* Only what the exit report needs; the limit is the launch's when known. */
    agent_cgroup_stats_t st = {.mem_limit = t->mem_limit};
    t->cgroup_done = 1;
    int64_t t0 = agent_mono_us();
    char key[AGENT_NAME_MAX];
    t_key(t, key, sizeof key);
    if (agent_cgroup_task_outcome(cg, key, &st) != 0) return;
    t->oom_killed = st.oom_kills > 0 || t->oom_seen;
    t->mem_peak = st.mem_peak;
    t->mem_limit = st.mem_limit;
    sl_log(SL_LOG_INFO, "agent", "job=%llu task=%d cgroup: oom_killed=%d oom_kills=%lld "
           "mem_peak=%lld mem_limit=%lld read_us=%lld", (unsigned long long)t->job, t->task,
           t->oom_killed, (long long)st.oom_kills, (long long)st.mem_peak,
           (long long)st.mem_limit, (long long)(agent_mono_us() - t0));
}

/* ---- ending ---- */

/* The job's empty_dirs (volumes.h) go when its last task here has ended. */
static void volumes_after(task_t *t) {
    for (const task_t *o = t->ts->tasks; o; o = o->next)
        if (o != t && o->job == t->job && strcmp(o->instance, t->instance) == 0 &&
            o->state == TASK_RUNNING)
            return;
    char name[AGENT_NAME_MAX];
    t_name(t, name, sizeof name);
    agent_volumes_remove(t->ts->cfg.workdir, name);
}

/* Records t's end: exit_code and sig, or failed with reason when it is
 * not NULL; end_time 0 means now. */
static void task_finish(task_t *t, int exit_code, int sig, double end_time, const char *reason) {
    agent_tasks_t *ts = t->ts;
    if (t->kill_ev) event_del(t->kill_ev);
    if (t->pidfd_ev) event_del(t->pidfd_ev);
    if (t->pidfd >= 0) {
        close(t->pidfd);
        t->pidfd = -1;
    }
    t->end_time = end_time > 0 ? end_time : agent_now();
    cgroup_outcome(t);
    if (reason) {
        /* The monitor did not sweep the task's process group (it did when
         * it recorded a status): whatever the task left there goes now. */
        kill(-t->pid, SIGKILL);
        t->state = TASK_FAILED;
        t->reason = strdup(reason);
    } else {
        t->state = TASK_EXITED;
        t->exit_code = exit_code;
        t->sig = sig;
    }
    ts->nrunning--;
    volumes_after(t);
    char name[AGENT_NAME_MAX];
    t_name(t, name, sizeof name);
    agent_secrets_remove(ts->cfg.workdir, name, t->task); /* its secrets end with it */
    sl_log(SL_LOG_INFO, "agent", "job=%llu task=%d pid=%d %s exit_code=%d signal=%d",
           (unsigned long long)t->job, t->task, (int)t->pid, reason ? "lost" : "exited",
           exit_code, sig);
    report_after_save(t, REPORT_END);
    if (ts->stopping && ts->nrunning == 0) event_base_loopexit(ts->base, NULL);
}

/* t's monitor has ended (how, in words, when known: "exited with status
 * 1"): the task's end is what the monitor recorded. */
static void monitor_ended(task_t *t, const char *how) {
    int code = -1, sig = 0;
    double end = 0;
    if (status_read(t, &code, &sig, &end) == 1) {
        /* A container that never ran says why (container.h). */
        char name[AGENT_NAME_MAX], why[1024];
        t_name(t, name, sizeof name);
        bool failed = code == AGENT_CONTAINER_FAILED_EXIT && sig == 0 &&
                      agent_container_failure(t->ts->cfg.workdir, name, t->task, why, sizeof why);
        task_finish(t, code, sig, end, failed ? why : NULL);
        return;
    }
    char reason[256];
    snprintf(reason, sizeof reason,
             "exit status unknown: the task's monitor (pid %d) %s without recording it", (int)t->monitor,
             how ? how : "ended");
    task_finish(t, -1, 0, 0, reason);
}

static void sigchld_cb(evutil_socket_t fd, short ev, void *arg) {
    agent_tasks_t *ts = arg;
    int st;
    pid_t pid;
    while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
        task_t *t = task_find_pid(ts, pid);
        if (!t) continue;
        char how[64];
        if (WIFSIGNALED(st))
            snprintf(how, sizeof how, "was killed by signal %d", WTERMSIG(st));
        else
            snprintf(how, sizeof how, "exited with status %d", WEXITSTATUS(st));
        monitor_ended(t, how);
    }
}

static void pidfd_cb(evutil_socket_t fd, short ev, void *arg) {
    monitor_ended(arg, NULL);
}

static void kill_cb(evutil_socket_t fd, short ev, void *arg) {
    task_t *t = arg;
    if (t->state != TASK_RUNNING) return;
    sl_log(SL_LOG_INFO, "agent", "job=%llu task=%d pid=%d grace over, SIGKILL",
           (unsigned long long)t->job, t->task, (int)t->pid);
    kill(-t->pid, SIGKILL);
}

static void adopt(agent_tasks_t *ts, task_t *t) {
    int fd = (int)syscall(SYS_pidfd_open, t->monitor, 0);
    if (fd < 0) {
        /* Kernels before 5.3: no pidfd; treat as gone once it is. */
        sl_log(SL_LOG_WARN, "agent", "pidfd_open(%d): %s", (int)t->monitor, strerror(errno));
        return;
    }
    t->pidfd = fd;
    t->pidfd_ev = event_new(ts->base, fd, EV_READ, pidfd_cb, t);
    event_add(t->pidfd_ev, NULL);
}

/* ---- launch, kill, ack ---- */

/* A new record of (job, task) under the controller's instance, of attempt
 * (< 0: none). */
static task_t *task_run_new(agent_tasks_t *ts, uint64_t job, int32_t task, int64_t attempt) {
    task_t *t = task_new(ts, job, task);
    snprintf(t->instance, sizeof t->instance, "%s", ts->instance);
    t->has_attempt = attempt >= 0;
    t->attempt = attempt >= 0 ? (uint32_t)attempt : 0;
    return t;
}

/* Whether another task of t's run of its job (its instance, job and
 * attempt) is known here: it made the job's directory, which t shares. */
static bool run_has_sibling(const agent_tasks_t *ts, const task_t *t) {
    for (const task_t *o = ts->tasks; o; o = o->next)
        if (o != t && o->job == t->job && strcmp(o->instance, t->instance) == 0 &&
            o->has_attempt == t->has_attempt && o->attempt == t->attempt)
            return true;
    return false;
}

static void fail_task(task_t *t, const char *reason) {
    t->state = TASK_FAILED;
    t->reason = strdup(reason);
    t->end_time = agent_now();
    volumes_after(t);
    report_after_save(t, REPORT_END);
}

/* The oom_score_adj of l's task: the launch's (its decoder's default is
 * AGENT_TASK_OOM_SCORE_ADJ), no lower than the agent's own (task.h). */
static int task_oom_score_adj(const agent_tasks_t *ts, const sl_proto_launch_t *l) {
    int v = l ? l->oom_score_adj : AGENT_TASK_OOM_SCORE_ADJ;
    return v < ts->cfg.oom_score_adj_floor ? ts->cfg.oom_score_adj_floor : v;
}

void agent_tasks_launch(agent_tasks_t *ts, uint64_t job, int32_t task, int64_t attempt,
                        const sl_proto_launch_t *l, const char *why) {
    task_t *t = task_find(ts, job, task);
    if (t && t->state == TASK_RUNNING) {
        /* A repeated launch (e.g. after a reconnect): report what runs,
         * with its own attempt, which the controller tells from the one it
         * launched and stops if it is an earlier one. */
        if (other_attempt(t, attempt))
            sl_log(SL_LOG_WARN, "agent", "job=%llu task=%d launch of attempt %lld while attempt "
                   "%u still runs: reported as it is", (unsigned long long)job, task,
                   (long long)attempt, t->attempt);
        send_started(t);
        return;
    }
    if (t) task_remove(ts, t);  /* an older, finished attempt */
    if (ts->stopping) return;
    t = task_run_new(ts, job, task, attempt);
    t->fence = l && l->on_node_failure && strcmp(l->on_node_failure, "requeue") == 0;
    char name[AGENT_NAME_MAX], key[AGENT_NAME_MAX];
    t_name(t, name, sizeof name);
    t_key(t, key, sizeof key);
    if (l) agent__task_holds(t, l->tenant, l->gpus, l->ngpus);
    t->start_time = agent_now();
    int64_t t0 = agent_mono_us();
    char reason[8192];
    agent_cgroup_task_t ct = {.oom_fd = -1};
    agent_spawn_t sp = {.workdir = ts->cfg.workdir, .node = ts->cfg.node,
                        .launcher = ts->cfg.launcher, .containers = ts->cfg.containers,
                        .monitor = ts->monitor_path, .job = job,
                        .task = task, .name = name, .fresh = !run_has_sibling(ts, t),
                        .launch = l, .cgroup = &ct, .set_oom_score_adj = true,
                        .oom_score_adj = task_oom_score_adj(ts, l),
                        .lease = t->fence ? ts->lease_path : NULL};
    /* The cgroup first, with every limit written: no task runs
     * half-limited (cgroup_us: what its set-up took of spawn_us). */
    int ok = l != NULL;
    if (!ok)
        snprintf(reason, sizeof reason, "%s", why ? why : "invalid launch");
    else if (ts->cfg.cgroup)
        ok = agent_cgroup_task_create_limits(ts->cfg.cgroup, key, l->mem_bytes, l->mem_limit,
                                             l->cpu_milli, l->cpu_limit_milli, l->gpus, l->ngpus,
                                             &ct, reason, sizeof reason) == 0;
    int64_t t_cg = agent_mono_us();
    if (ok && agent_spawn(&sp, &t->pid, &t->monitor, reason, sizeof reason) != 0) {
        ok = 0;
        if (ct.oom_fd >= 0) close(ct.oom_fd);
        if (ts->cfg.cgroup) agent_cgroup_task_remove(ts->cfg.cgroup, key);
    }
    agent_cgroup_task_release(&ct);
    if (!ok) {
        sl_log(SL_LOG_WARN, "agent", "job=%llu task=%d failed: %s", (unsigned long long)job, task, reason);
        fail_task(t, reason);
    } else {
        oom_watch(t, ct.oom_fd);
        t->mem_limit = ct.mem_limit;
        t->state = TASK_RUNNING;
        ts->nrunning++;
        report_after_save(t, REPORT_STARTED);
        sl_log(SL_LOG_INFO, "agent",
               "job=%llu task=%d pid=%d monitor=%d started spawn_us=%lld cgroup_us=%lld",
               (unsigned long long)job, task, (int)t->pid, (int)t->monitor,
               (long long)(agent_mono_us() - t0), (long long)(t_cg - t0));
    }
    state_dirty(ts);
}

static void arm_kill(task_t *t, int64_t grace_ms) {
    if (grace_ms <= 0) {
        kill(-t->pid, SIGKILL);
        return;
    }
    if (!t->kill_ev) t->kill_ev = evtimer_new(t->ts->base, kill_cb, t);
    struct timeval tv = agent_tv_ms(grace_ms);
    if (!evtimer_pending(t->kill_ev, NULL)) evtimer_add(t->kill_ev, &tv);
}

void agent_tasks_kill(agent_tasks_t *ts, uint64_t job, int32_t task, int64_t attempt,
                      const sl_proto_kill_t *k) {
    int64_t grace_ms = k->grace_ms >= 0 ? k->grace_ms : ts->cfg.grace_s * INT64_C(1000);
    int sig = k->signal > 0 ? k->signal : SIGTERM;
    task_t *t = task_find(ts, job, task);
    if (!t) {
        /* The controller believes it runs here; tell it the truth. */
        char r[256];
        snprintf(r, sizeof r, "no such task on node %s", ts->cfg.node);
        fail_task(task_run_new(ts, job, task, attempt), r);
        return;
    }
    if (other_attempt(t, attempt)) {
        /* Meant for another run of the task than the one here. */
        sl_log(SL_LOG_INFO, "agent", "job=%llu task=%d kill of attempt %lld ignored: attempt %u "
               "runs here", (unsigned long long)job, task, (long long)attempt, t->attempt);
        return;
    }
    char jname[AGENT_NAME_MAX];
    t_name(t, jname, sizeof jname);
    if (t->state != TASK_RUNNING) {
        send_end(t);
        return;
    }
    /* A preempted task finds its deadline in its preempt file when the
     * signal wakes it (preempt.h); a second kill keeps the first deadline. */
    int prc = 0;
    if (k->preempt && !(t->kill_ev && evtimer_pending(t->kill_ev, NULL)))
        prc = agent_preempt_note(ts->cfg.workdir, jname, task, agent_now() + (double)grace_ms / 1e3);
    if (prc < 0)
        sl_log(SL_LOG_WARN, "agent", "job=%llu task=%d preempt file: %s", (unsigned long long)job,
               task, strerror(-prc));
    const char *name = sl_proto_signal_name(sig);
    sl_log(SL_LOG_INFO, "agent", "job=%llu task=%d pid=%d %s%s, SIGKILL in %lld ms",
           (unsigned long long)job, task, (int)t->pid, name ? name : "SIGTERM",
           k->preempt ? " (preempted)" : "", (long long)grace_ms);
    kill(-t->pid, sig);
    arm_kill(t, grace_ms);
}

int agent_tasks_fence(agent_tasks_t *ts, int64_t grace_ms) {
    if (grace_ms < 0) grace_ms = ts->cfg.grace_s * INT64_C(1000);
    int n = 0;
    for (task_t *t = ts->tasks; t; t = t->next) {
        if (t->state != TASK_RUNNING || !t->fence || t->fenced) continue;
        t->fenced = 1;
        n++;
        sl_log(SL_LOG_WARN, "agent", "job=%llu task=%d pid=%d fenced: SIGTERM, SIGKILL in %lld ms",
               (unsigned long long)t->job, t->task, (int)t->pid, (long long)grace_ms);
        kill(-t->pid, SIGTERM);
        arm_kill(t, grace_ms);
    }
    if (n > 0) state_dirty(ts);
    return n;
}

void agent_tasks_ack(agent_tasks_t *ts, uint64_t job, int32_t task, int64_t attempt) {
    task_t *t = task_find(ts, job, task);
    if (t && t->state != TASK_RUNNING && !other_attempt(t, attempt)) {
        char key[AGENT_NAME_MAX];
        t_key(t, key, sizeof key);
        if (t->cgroup_done) /* the controller has the outcome */
            agent_cgroup_task_remove_later(ts->cfg.cgroup, key);
        task_remove(ts, t);
        state_dirty(ts);
    }
}

void agent_tasks_welcome(agent_tasks_t *ts, const char *instance) {
    snprintf(ts->instance, sizeof ts->instance, "%s", instance ? instance : "");
    if (ts->instance[0] == '\0') return;
    for (task_t *t = ts->tasks, *next; t; t = next) {
        next = t->next;
        if (t->foreign || t->instance[0] == '\0' || strcmp(t->instance, ts->instance) == 0)
            continue;
        /* Launched by the controller of an earlier cluster instance (its
         * database made anew since): not this controller's to adopt. */
        t->foreign = 1;
        state_dirty(ts);
        if (t->state != TASK_RUNNING) {
            sl_log(SL_LOG_INFO, "agent", "job=%llu task=%d of cluster instance %s forgotten: the "
                   "controller is of instance %s", (unsigned long long)t->job, t->task,
                   t->instance, ts->instance);
            continue; /* forgotten at the next state.json write (save_cb) */
        }
        sl_log(SL_LOG_WARN, "agent", "job=%llu task=%d pid=%d of cluster instance %s stopped: the "
               "controller is of instance %s; SIGTERM, SIGKILL in %d s", (unsigned long long)t->job,
               t->task, (int)t->pid, t->instance, ts->instance, ts->cfg.grace_s);
        kill(-t->pid, SIGTERM);
        arm_kill(t, ts->cfg.grace_s * INT64_C(1000));
    }
}

/* ---- logs ---- */

void agent_tasks_logs(agent_tasks_t *ts, uint64_t req, uint64_t job, int32_t task, int64_t offset,
                      int64_t limit) {
    /* The log of the task here, or of the controller's instance once the
     * task is forgotten: never an earlier cluster's job of that id. */
    task_t *t = task_find(ts, job, task);
    char name[AGENT_NAME_MAX];
    agent_job_name(t ? t->instance : ts->instance, job, name, sizeof name);
    sl_proto_msg_t reply = {.type = SL_PROTO_LOGS_REPLY, .req = req, .job = job, .task = task};
    unsigned char *buf;
    char err[512];
    agent_tasklog_read(ts->cfg.workdir, ts->cfg.node, name, job, task, offset, limit,
                       t && t->state == TASK_RUNNING, &reply.u.logs_reply, &buf, err, sizeof err);
    send_msg(ts, &reply);
    free(buf);
}

/* ---- start-up and shutdown ---- */

static void load_state(agent_tasks_t *ts) {
    json_error_t err;
    json_t *root = json_load_file(ts->state_path, 0, &err);
    if (!root) {
        if (access(ts->state_path, F_OK) == 0)
            sl_log(SL_LOG_WARN, "agent", "ignoring unreadable %s: %s", ts->state_path, err.text);
        return;
    }
    size_t i;
    json_t *o;
    json_array_foreach(json_object_get(root, "tasks"), i, o) {
        const char *state = json_string_value(json_object_get(o, "state"));
        json_t *jj = json_object_get(o, "job"), *jt = json_object_get(o, "task");
        if (!state || !json_is_integer(jj) || !json_is_integer(jt)) continue;
        task_t *t = task_new(ts, (uint64_t)json_integer_value(jj), (int32_t)json_integer_value(jt));
        agent__task_record_read(o, t);
        if (t->state == TASK_RUNNING) {
            /* Still running if its monitor is the process recorded. */
            unsigned long long now_start = t->monitor > 0 ? sl_proc_start_time(t->monitor) : 0;
            int code = -1, sig = 0;
            double end = 0;
            if (t->monitor > 0 && now_start != 0 && now_start == t->pstart) {
                t->state = TASK_RUNNING;
                ts->nrunning++;
                adopt(ts, t);
                if (ts->cfg.cgroup) {
                    char key[AGENT_NAME_MAX];
                    t_key(t, key, sizeof key);
                    int fd = agent_cgroup_task_watch(ts->cfg.cgroup, key);
                    oom_watch(t, fd >= 0 ? fd : -1);
                }
                sl_log(SL_LOG_INFO, "agent", "job=%llu task=%d pid=%d re-adopted (monitor %d)",
                       (unsigned long long)t->job, t->task, (int)t->pid, (int)t->monitor);
            } else if (status_read(t, &code, &sig, &end) == 1) {
                /* It ended while no agent ran; its monitor recorded how,
                 * its cgroup (kept until read) what it used. */
                cgroup_outcome(t);
                t->state = TASK_EXITED;
                t->exit_code = code;
                t->sig = sig;
                t->end_time = end > 0 ? end : agent_now();
                sl_log(SL_LOG_INFO, "agent",
                       "job=%llu task=%d pid=%d ended while the agent was down exit_code=%d signal=%d",
                       (unsigned long long)t->job, t->task, (int)t->pid, code, sig);
            } else {
                cgroup_outcome(t);
                t->state = TASK_FAILED;
                t->end_time = agent_now();
                t->reason = strdup("exit status unknown: the task ended while sluice-agent was not "
                                   "running and its monitor left no record of it");
            }
        }
    }
    json_decref(root);
}

/* Whether the cgroup `name` is one to keep after a restart: that of a
 * running (re-adopted) task, of whichever instance. */
static bool keep_cgroup(void *ud, const char *name) {
    agent_tasks_t *ts = ud;
    for (task_t *t = ts->tasks; t; t = t->next) {
        char key[AGENT_NAME_MAX];
        t_key(t, key, sizeof key);
        if (t->state == TASK_RUNNING && strcmp(key, name) == 0) return true;
    }
    return false;
}

int agent_tasks_create(struct event_base *base, const agent_tasks_config_t *cfg,
                       agent_tasks_t **out) {
    /* logs: root's (each log is its task user's, 0600). jobs: root's and
     * 0711, so a tenant reaches its own directory but neither lists nor
     * renames entries. status: exit statuses written by the monitors, and
     * tmp: files renamed into job directories (preempt.h); both the
     * agent's alone (0700), so that no tenant forges, removes or swaps
     * anything there. */
    static const struct { const char *name; mode_t mode; } dirs[] = {
        {"logs", 0755}, {"jobs", 0711}, {"status", 0700}, {AGENT_PREEMPT_TMP_DIR, 0700}};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", cfg->workdir, dirs[i].name);
        if ((mkdir(path, dirs[i].mode) != 0 && errno != EEXIST) || chmod(path, dirs[i].mode) != 0) {
            sl_log(SL_LOG_ERROR, "agent", "cannot create %s: %s", path, strerror(errno));
            return -1;
        }
    }
    char *monitor = agent_spawn_monitor_find();
    if (!monitor) return -1;
    agent_spawn_identity_notice(cfg->workdir);
    agent_tasks_t *ts = calloc(1, sizeof *ts);
    if (!ts) abort();
    ts->base = base;
    ts->cfg = *cfg;
    ts->monitor_path = monitor;
    if (asprintf(&ts->state_path, "%s/state.json", cfg->workdir) < 0) abort();
    agent_lease_path(cfg->workdir, ts->lease_path, sizeof ts->lease_path);
    ts->sigchld_ev = evsignal_new(base, SIGCHLD, sigchld_cb, ts);
    event_add(ts->sigchld_ev, NULL);
    ts->save_ev = event_new(base, -1, 0, save_cb, ts);
    ts->house_ev = evtimer_new(base, house_cb, ts);
    load_state(ts);
    if (cfg->cgroup) agent_cgroup_cleanup(cfg->cgroup, keep_cgroup, ts);
    agent_cgroup_housekeep(cfg->cgroup, AGENT_CGROUP_POOL_MAX); /* the pool, after the clean-up */
    state_dirty(ts);
    *out = ts;
    return 0;
}

void agent_tasks_set_sender(agent_tasks_t *ts, agent_tasks_send_fn send, void *ud) {
    ts->send = send;
    ts->send_ud = ud;
}

static void stop_kill_cb(evutil_socket_t fd, short ev, void *arg) {
    agent_tasks_t *ts = arg;
    for (task_t *t = ts->tasks; t; t = t->next)
        if (t->state == TASK_RUNNING) kill(-t->pid, SIGKILL);
}

void agent_tasks_stop_all(agent_tasks_t *ts) {
    if (ts->stopping) {
        stop_kill_cb(-1, 0, ts);  /* second signal: no more grace */
        return;
    }
    ts->stopping = 1;
    if (ts->nrunning == 0) {
        event_base_loopexit(ts->base, NULL);
        return;
    }
    sl_log(SL_LOG_INFO, "agent", "stopping %d task(s): SIGTERM, SIGKILL after %d s", ts->nrunning,
           ts->cfg.grace_s);
    for (task_t *t = ts->tasks; t; t = t->next)
        if (t->state == TASK_RUNNING) kill(-t->pid, SIGTERM);
    ts->stop_ev = evtimer_new(ts->base, stop_kill_cb, ts);
    struct timeval tv = agent_tv_ms(ts->cfg.grace_s * INT64_C(1000));
    evtimer_add(ts->stop_ev, &tv);
}

void agent_tasks_destroy(agent_tasks_t *ts) {
    if (!ts) return;
    if (ts->save_ev) {
        save_cb(-1, 0, ts);
        event_free(ts->save_ev);
    }
    if (ts->house_ev) event_free(ts->house_ev);  /* agent_cgroup_close removes what is queued */
    while (ts->tasks) {
        task_t *t = ts->tasks;
        ts->tasks = t->next;
        task_free(t);
    }
    if (ts->sigchld_ev) event_free(ts->sigchld_ev);
    if (ts->stop_ev) event_free(ts->stop_ev);
    free(ts->state_path);
    free(ts->monitor_path);
    free(ts);
}

void agent_tasks_foreach(agent_tasks_t *ts, void (*fn)(void *ud, const agent_task_info_t *ti),
                         void *ud) {
    for (task_t *t = ts->tasks; t; t = t->next) {
        if (t->foreign) continue;
        char key[AGENT_NAME_MAX], name[AGENT_NAME_MAX];
        t_key(t, key, sizeof key);
        t_name(t, name, sizeof name);
        agent_task_info_t ti = {.job = t->job, .task = t->task, .running = t->state == TASK_RUNNING,
                                .pid = (int32_t)t->pid, .tenant = t->tenant ? t->tenant : "",
                                .gpus = t->gpus, .ngpus = t->ngpus, .cgroup = key, .name = name,
                                .has_attempt = t->has_attempt != 0, .attempt = t->attempt};
        fn(ud, &ti);
    }
}

void agent_tasks_set_watcher(agent_tasks_t *ts, void (*fn)(void *ud), void *ud) {
    ts->watch = fn;
    ts->watch_ud = ud;
}
