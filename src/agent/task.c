/*
 * task.c - launching, killing, reaping and remembering tasks.
 *
 * Launch is one posix_spawnp() (glibc: clone(CLONE_VM|CLONE_VFORK), so its
 * cost does not grow with the agent's memory) with POSIX_SPAWN_SETSID: each
 * task leads its own session and process group, which is what `kill` signals
 * (SIGTERM, then SIGKILL after the grace period) and what is swept with
 * SIGKILL once the leader exits, so no stray child of a finished task keeps a
 * GPU. posix_spawnp reports exec failure synchronously, so a bad command is
 * reported `failed` (with the reason, also written to the task's log) and
 * never `started`. `started` is handed to the socket at the end of the
 * callback that read the launch (conn.c, agent_flush); the exit is seen
 * through SIGCHLD, which libevent turns into a loop event, and `exited`
 * leaves from that callback the same way.
 *
 * state.json is rewritten (write, rename; no fsync: a machine crash takes
 * the tasks with it) once per loop pass that changed a task.
 *
 * Environment: the agent's own, then the job's `env`, then Sluice's
 * variables, which win: CUDA_VISIBLE_DEVICES (assigned GPU indices, empty
 * for a task without GPUs), CUDA_DEVICE_ORDER=PCI_BUS_ID (so CUDA numbers
 * GPUs as NVML does; the job may override it), SLUICE_JOB_ID,
 * SLUICE_JOB_NAME, SLUICE_TASK_INDEX, SLUICE_NODE, SLUICE_GPU_MILLI, RANK,
 * WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT. stdin is /dev/null,
 * stdout and stderr go (appended) to WORKDIR/logs/JOB/TASK.log, and the
 * working directory is WORKDIR.
 *
 * A task with an `image` runs through the --launcher template: the template
 * is split at blanks into words, placeholders in each word are replaced
 * ({image} {workdir} {job} {task} {name} {node} {gpus} {log}) and the task's
 * argv is appended. No shell is involved.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "log.h"
#include "osutil.h"

extern char **environ;

/* ---- task list ---- */

static agent_task_t *task_find(agent_t *a, uint64_t job, int task) {
    for (agent_task_t *t = a->tasks; t; t = t->next)
        if (t->job == job && t->task == task) return t;
    return NULL;
}

static agent_task_t *task_find_pid(agent_t *a, pid_t pid) {
    for (agent_task_t *t = a->tasks; t; t = t->next)
        if (t->state == AGENT_TASK_RUNNING && t->pid == pid && t->pidfd < 0) return t;
    return NULL;
}

static agent_task_t *task_new(agent_t *a, uint64_t job, int task) {
    agent_task_t *t = calloc(1, sizeof *t);
    if (!t) abort();
    t->agent = a;
    t->job = job;
    t->task = task;
    t->pidfd = -1;
    t->next = a->tasks;
    a->tasks = t;
    return t;
}

static void task_free(agent_task_t *t) {
    if (!t) return;
    if (t->kill_ev) event_free(t->kill_ev);
    if (t->pidfd_ev) event_free(t->pidfd_ev);
    if (t->pidfd >= 0) close(t->pidfd);
    free(t->reason);
    free(t);
}

static void task_remove(agent_t *a, agent_task_t *t) {
    for (agent_task_t **pp = &a->tasks; *pp; pp = &(*pp)->next) {
        if (*pp == t) {
            *pp = t->next;
            break;
        }
    }
    if (t->state == AGENT_TASK_RUNNING) a->nrunning--;
    task_free(t);
}

/* Start time of pid in clock ticks since boot (field 22 of /proc/PID/stat),
 * or 0 if the process is gone. */
static unsigned long long proc_start_time(pid_t pid) {
    char buf[1024];
    if (sl_proc_read(pid, "stat", buf, sizeof buf) == 0) return 0;
    char *p = strrchr(buf, ')');
    if (!p) return 0;
    p++;
    /* p is at the blank before field 3 (state); starttime is field 22. */
    for (int field = 3; field < 22 && p; field++) {
        p = strchr(p + 1, ' ');
    }
    return p ? strtoull(p + 1, NULL, 10) : 0;
}

/* ---- messages ---- */

static json_t *task_json(const agent_task_t *t, int for_state) {
    json_t *o = json_pack("{s:I,s:i}", "job", (json_int_t)t->job, "task", t->task);
    switch (t->state) {
    case AGENT_TASK_RUNNING:
        json_object_set_new(o, "state", json_string("running"));
        json_object_set_new(o, "pid", json_integer(t->pid));
        json_object_set_new(o, "start_time", json_real(t->start_time));
        if (for_state) json_object_set_new(o, "pstart", json_integer((json_int_t)t->pstart));
        break;
    case AGENT_TASK_EXITED:
        json_object_set_new(o, "state", json_string("exited"));
        json_object_set_new(o, "exit_code", json_integer(t->exit_code));
        json_object_set_new(o, "signal", json_integer(t->sig));
        json_object_set_new(o, "end_time", json_real(t->end_time));
        break;
    case AGENT_TASK_FAILED:
        json_object_set_new(o, "state", json_string("failed"));
        json_object_set_new(o, "reason", json_string(t->reason ? t->reason : ""));
        json_object_set_new(o, "end_time", json_real(t->end_time));
        break;
    }
    return o;
}

static void send_started(agent_task_t *t) {
    agent_send(t->agent, json_pack("{s:s,s:I,s:i,s:i,s:f}", "type", "started", "job",
                                   (json_int_t)t->job, "task", t->task, "pid", (int)t->pid,
                                   "time", t->start_time));
}

static void send_end(agent_task_t *t) {
    if (t->state == AGENT_TASK_EXITED)
        agent_send(t->agent, json_pack("{s:s,s:I,s:i,s:i,s:i,s:f}", "type", "exited", "job",
                                       (json_int_t)t->job, "task", t->task, "exit_code",
                                       t->exit_code, "signal", t->sig, "time", t->end_time));
    else if (t->state == AGENT_TASK_FAILED)
        agent_send(t->agent, json_pack("{s:s,s:I,s:i,s:s,s:f}", "type", "failed", "job",
                                       (json_int_t)t->job, "task", t->task, "reason",
                                       t->reason ? t->reason : "", "time", t->end_time));
}

json_t *agent_tasks_hello(agent_t *a) {
    json_t *arr = json_array();
    for (agent_task_t *t = a->tasks; t; t = t->next) json_array_append_new(arr, task_json(t, 0));
    return arr;
}

/* ---- state.json ---- */

/* Queues a report of t's start or end for right after the state.json write
 * of this loop pass (save_cb). */
static void report_after_save(agent_task_t *t, int what) {
    t->report |= what;
    agent_state_dirty(t->agent);
}

static void save_cb(evutil_socket_t fd, short ev, void *arg) {
    agent_t *a = arg;
    json_t *arr = json_array();
    for (agent_task_t *t = a->tasks; t; t = t->next) {
        if (t->state == AGENT_TASK_RUNNING && t->pstart == 0) t->pstart = proc_start_time(t->pid);
        json_array_append_new(arr, task_json(t, 1));
    }
    json_t *root = json_pack("{s:s,s:o}", "node", a->name, "tasks", arr);
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", a->state_path);
    if (json_dump_file(root, tmp, JSON_COMPACT) != 0 || rename(tmp, a->state_path) != 0)
        sl_log(SL_LOG_WARN, "agent", "cannot write %s: %s", a->state_path, strerror(errno));
    json_decref(root);
    for (agent_task_t *t = a->tasks; t; t = t->next) {
        if (t->report & AGENT_REPORT_STARTED) send_started(t);
        if (t->report & AGENT_REPORT_END) send_end(t);
        t->report = 0;
    }
}

void agent_state_dirty(agent_t *a) {
    if (a->save_ev && !event_pending(a->save_ev, EV_TIMEOUT, NULL))
        event_active(a->save_ev, EV_TIMEOUT, 0);
}

/* ---- ending ---- */

static void task_finish(agent_task_t *t, int exit_code, int sig, const char *reason) {
    agent_t *a = t->agent;
    if (t->kill_ev) event_del(t->kill_ev);
    if (t->pidfd_ev) event_del(t->pidfd_ev);
    if (t->pidfd >= 0) {
        close(t->pidfd);
        t->pidfd = -1;
    }
    /* Sweep whatever the task left behind in its process group. */
    kill(-t->pid, SIGKILL);
    t->end_time = agent_now();
    if (reason) {
        t->state = AGENT_TASK_FAILED;
        t->reason = strdup(reason);
    } else {
        t->state = AGENT_TASK_EXITED;
        t->exit_code = exit_code;
        t->sig = sig;
    }
    a->nrunning--;
    sl_log(SL_LOG_INFO, "agent", "job=%llu task=%d pid=%d %s exit_code=%d signal=%d",
           (unsigned long long)t->job, t->task, (int)t->pid, reason ? "lost" : "exited",
           exit_code, sig);
    report_after_save(t, AGENT_REPORT_END);
    if (a->stopping && a->nrunning == 0) event_base_loopexit(a->base, NULL);
}

static void sigchld_cb(evutil_socket_t fd, short ev, void *arg) {
    agent_t *a = arg;
    int st;
    pid_t pid;
    a->batch++;
    while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
        agent_task_t *t = task_find_pid(a, pid);
        if (!t) continue;
        if (WIFSIGNALED(st))
            task_finish(t, 128 + WTERMSIG(st), WTERMSIG(st), NULL);
        else
            task_finish(t, WEXITSTATUS(st), 0, NULL);
    }
    a->batch--;
    agent_flush(a);
}

static void pidfd_cb(evutil_socket_t fd, short ev, void *arg) {
    agent_task_t *t = arg;
    task_finish(t, -1, 0,
                "exit status unknown: sluice-agent restarted while the task ran");
}

static void kill_cb(evutil_socket_t fd, short ev, void *arg) {
    agent_task_t *t = arg;
    if (t->state != AGENT_TASK_RUNNING) return;
    sl_log(SL_LOG_INFO, "agent", "job=%llu task=%d pid=%d grace over, SIGKILL",
           (unsigned long long)t->job, t->task, (int)t->pid);
    kill(-t->pid, SIGKILL);
}

static void adopt(agent_t *a, agent_task_t *t) {
    int fd = (int)syscall(SYS_pidfd_open, t->pid, 0);
    if (fd < 0) {
        /* Kernels before 5.3: no pidfd; treat as gone once it is. */
        sl_log(SL_LOG_WARN, "agent", "pidfd_open(%d): %s", (int)t->pid, strerror(errno));
        return;
    }
    t->pidfd = fd;
    t->pidfd_ev = event_new(a->base, fd, EV_READ, pidfd_cb, t);
    event_add(t->pidfd_ev, NULL);
}

/* ---- launch ---- */

typedef struct strvec {
    char **v;
    size_t n, cap;
} strvec_t;

static void sv_push(strvec_t *s, char *str) {
    if (s->n + 2 > s->cap) {
        s->cap = s->cap ? s->cap * 2 : 32;
        s->v = realloc(s->v, s->cap * sizeof *s->v);
        if (!s->v) abort();
    }
    s->v[s->n++] = str;
    s->v[s->n] = NULL;
}

static void sv_free(strvec_t *s) {
    for (size_t i = 0; i < s->n; i++) free(s->v[i]);
    free(s->v);
    s->v = NULL;
    s->n = s->cap = 0;
}

/* Sets KEY=VAL in an environment vector, replacing an existing KEY. */
static void env_set(strvec_t *env, const char *key, const char *val) {
    size_t kl = strlen(key);
    char *kv;
    if (asprintf(&kv, "%s=%s", key, val) < 0) abort();
    for (size_t i = 0; i < env->n; i++) {
        if (strncmp(env->v[i], key, kl) == 0 && env->v[i][kl] == '=') {
            free(env->v[i]);
            env->v[i] = kv;
            return;
        }
    }
    sv_push(env, kv);
}

char *agent_launcher_expand(const char *word, const char *image, const char *workdir,
                            const char *job, const char *task, const char *name,
                            const char *node, const char *gpus, const char *log,
                            const char **bad) {
    static const char *keys[] = {"image", "workdir", "job", "task", "name", "node", "gpus", "log"};
    const char *vals[] = {image, workdir, job, task, name, node, gpus, log};
    size_t cap = strlen(word) + 1, len = 0;
    for (size_t i = 0; i < 8; i++) cap += strlen(vals[i] ? vals[i] : "");
    char *out = malloc(cap * 4 + 1);
    if (!out) abort();
    cap = cap * 4;
    for (const char *p = word; *p;) {
        if (*p == '{') {
            const char *end = strchr(p, '}');
            size_t k;
            for (k = 0; end && k < 8; k++)
                if ((size_t)(end - p - 1) == strlen(keys[k]) && strncmp(p + 1, keys[k], end - p - 1) == 0)
                    break;
            if (!end || k == 8) {
                *bad = p;
                free(out);
                return NULL;
            }
            const char *v = vals[k] ? vals[k] : "";
            size_t vl = strlen(v);
            if (len + vl >= cap) {
                cap = (len + vl) * 2 + 1;
                out = realloc(out, cap + 1);
                if (!out) abort();
            }
            memcpy(out + len, v, vl);
            len += vl;
            p = end + 1;
        } else {
            if (len + 1 >= cap) {
                cap = cap * 2 + 2;
                out = realloc(out, cap + 1);
                if (!out) abort();
            }
            out[len++] = *p++;
        }
    }
    out[len] = '\0';
    return out;
}

static int int_field(json_t *msg, const char *key, long long dflt) {
    json_t *v = json_object_get(msg, key);
    return json_is_integer(v) ? (int)json_integer_value(v) : (int)dflt;
}

/* Builds argv and envp and spawns. Returns 0, or -1 with reason filled. */
static int spawn_task(agent_t *a, agent_task_t *t, json_t *msg, char *reason, size_t rlen) {
    int rc = -1, logfd = -1;
    strvec_t argv = {0}, env = {0};
    char path[4096], gpus[512] = "", num[32];
    const char *image = json_string_value(json_object_get(msg, "image"));
    const char *name = json_string_value(json_object_get(msg, "name"));
    json_t *jargv = json_object_get(msg, "argv");
    if (image && !*image) image = NULL;

    json_t *jg = json_object_get(msg, "gpus");
    size_t gi;
    json_t *gv;
    json_array_foreach(jg, gi, gv) {
        size_t l = strlen(gpus);
        snprintf(gpus + l, sizeof gpus - l, "%s%lld", gi ? "," : "", (long long)json_integer_value(gv));
    }

    snprintf(path, sizeof path, "%s/logs/%llu", a->workdir, (unsigned long long)t->job);
    if (mkdir(path, 0755) != 0 && errno != EEXIST) {
        snprintf(reason, rlen, "cannot create %s on node %s: %s", path, a->name, strerror(errno));
        goto out;
    }
    snprintf(path, sizeof path, "%s/logs/%llu/%d.log", a->workdir, (unsigned long long)t->job, t->task);

    if (image) {
        if (!a->launcher) {
            snprintf(reason, rlen,
                     "image %s needs a container launcher; none is configured on node %s (--launcher)",
                     image, a->name);
            goto out;
        }
        char jobs[24], tasks[16];
        snprintf(jobs, sizeof jobs, "%llu", (unsigned long long)t->job);
        snprintf(tasks, sizeof tasks, "%d", t->task);
        char *tmpl = strdup(a->launcher), *save = NULL;
        for (char *w = strtok_r(tmpl, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
            const char *bad = NULL;
            char *x = agent_launcher_expand(w, image, a->workdir, jobs, tasks, name ? name : "",
                                            a->name, gpus, path, &bad);
            if (!x) {
                snprintf(reason, rlen, "--launcher: unknown placeholder at \"%s\"", bad);
                free(tmpl);
                goto out;
            }
            sv_push(&argv, x);
        }
        free(tmpl);
    }
    size_t ai;
    json_t *av;
    json_array_foreach(jargv, ai, av) {
        if (!json_is_string(av)) {
            snprintf(reason, rlen, "argv[%zu] is not a string", ai);
            goto out;
        }
        sv_push(&argv, strdup(json_string_value(av)));
    }
    if (argv.n == 0) {
        snprintf(reason, rlen, "the task has no command");
        goto out;
    }

    for (char **e = environ; *e; e++) sv_push(&env, strdup(*e));
    json_t *jenv = json_object_get(msg, "env");
    const char *k;
    json_t *ev;
    json_object_foreach(jenv, k, ev) {
        if (json_is_string(ev)) env_set(&env, k, json_string_value(ev));
    }
    if (json_object_get(jenv, "CUDA_DEVICE_ORDER") == NULL)
        env_set(&env, "CUDA_DEVICE_ORDER", "PCI_BUS_ID");
    env_set(&env, "CUDA_VISIBLE_DEVICES", gpus);
    snprintf(num, sizeof num, "%llu", (unsigned long long)t->job);
    env_set(&env, "SLUICE_JOB_ID", num);
    if (name) env_set(&env, "SLUICE_JOB_NAME", name);
    snprintf(num, sizeof num, "%d", t->task);
    env_set(&env, "SLUICE_TASK_INDEX", num);
    env_set(&env, "SLUICE_NODE", a->name);
    if (gpus[0]) {
        snprintf(num, sizeof num, "%d", int_field(msg, "gpu_milli", 1000));
        env_set(&env, "SLUICE_GPU_MILLI", num);
    }
    snprintf(num, sizeof num, "%d", int_field(msg, "rank", t->task));
    env_set(&env, "RANK", num);
    snprintf(num, sizeof num, "%d", int_field(msg, "world_size", 1));
    env_set(&env, "WORLD_SIZE", num);
    snprintf(num, sizeof num, "%d", int_field(msg, "local_rank", 0));
    env_set(&env, "LOCAL_RANK", num);
    const char *maddr = json_string_value(json_object_get(msg, "master_addr"));
    env_set(&env, "MASTER_ADDR", maddr ? maddr : "127.0.0.1");
    snprintf(num, sizeof num, "%d", int_field(msg, "master_port", 29500));
    env_set(&env, "MASTER_PORT", num);

    logfd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (logfd < 0) {
        snprintf(reason, rlen, "cannot open log %s on node %s: %s", path, a->name, strerror(errno));
        goto out;
    }
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    sigset_t none, dflt;
    sigemptyset(&none);
    sigemptyset(&dflt);
    int sigs[] = {SIGPIPE, SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) sigaddset(&dflt, sigs[i]);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, logfd, 1);
    posix_spawn_file_actions_adddup2(&fa, logfd, 2);
    posix_spawn_file_actions_addchdir_np(&fa, a->workdir);
    posix_spawn_file_actions_addclosefrom_np(&fa, 3);
    posix_spawnattr_init(&at);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &dflt);
    pid_t pid;
    int e = posix_spawnp(&pid, argv.v[0], &fa, &at, argv.v, env.v);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (e != 0) {
        snprintf(reason, rlen, "cannot execute %s on node %s: %s", argv.v[0], a->name, strerror(e));
        dprintf(logfd, "sluice-agent: %s\n", reason);
        goto out;
    }
    t->pid = pid;
    rc = 0;
out:
    if (logfd >= 0) close(logfd);
    sv_free(&argv);
    sv_free(&env);
    return rc;
}

void agent_task_launch(agent_t *a, json_t *msg) {
    json_t *jj = json_object_get(msg, "job"), *jt = json_object_get(msg, "task");
    if (!json_is_integer(jj) || !json_is_integer(jt) || json_integer_value(jj) < 0 ||
        json_integer_value(jt) < 0) {
        sl_log(SL_LOG_WARN, "agent", "launch without a valid job and task; ignored");
        return;
    }
    uint64_t job = (uint64_t)json_integer_value(jj);
    int task = (int)json_integer_value(jt);
    agent_task_t *t = task_find(a, job, task);
    if (t && t->state == AGENT_TASK_RUNNING) {
        /* A repeated launch (e.g. after a reconnect): report what runs. */
        send_started(t);
        return;
    }
    if (t) task_remove(a, t);  /* an older, finished attempt */
    if (a->stopping) return;
    t = task_new(a, job, task);
    t->start_time = agent_now();
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    char reason[8192];
    if (spawn_task(a, t, msg, reason, sizeof reason) != 0) {
        t->state = AGENT_TASK_FAILED;
        t->reason = strdup(reason);
        t->end_time = agent_now();
        sl_log(SL_LOG_WARN, "agent", "job=%llu task=%d failed: %s", (unsigned long long)job, task, reason);
        report_after_save(t, AGENT_REPORT_END);
    } else {
        t->state = AGENT_TASK_RUNNING;
        a->nrunning++;
        report_after_save(t, AGENT_REPORT_STARTED);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        sl_log(SL_LOG_INFO, "agent", "job=%llu task=%d pid=%d started spawn_us=%ld", (unsigned long long)job,
               task, (int)t->pid, (long)((t1.tv_sec - t0.tv_sec) * 1000000L + (t1.tv_nsec - t0.tv_nsec) / 1000));
    }
    agent_state_dirty(a);
}

/* ---- kill, ack ---- */

static void arm_kill(agent_task_t *t, long grace_ms) {
    if (grace_ms <= 0) {
        kill(-t->pid, SIGKILL);
        return;
    }
    if (!t->kill_ev) t->kill_ev = evtimer_new(t->agent->base, kill_cb, t);
    struct timeval tv = {grace_ms / 1000, (grace_ms % 1000) * 1000};
    if (!evtimer_pending(t->kill_ev, NULL)) evtimer_add(t->kill_ev, &tv);
}

void agent_task_kill(agent_t *a, json_t *msg) {
    uint64_t job = (uint64_t)json_integer_value(json_object_get(msg, "job"));
    int task = (int)json_integer_value(json_object_get(msg, "task"));
    json_t *g = json_object_get(msg, "grace_ms");
    long grace_ms = json_is_integer(g) ? (long)json_integer_value(g) : a->grace_s * 1000L;
    agent_task_t *t = task_find(a, job, task);
    if (!t) {
        /* The controller believes it runs here; tell it the truth. */
        t = task_new(a, job, task);
        t->state = AGENT_TASK_FAILED;
        t->end_time = agent_now();
        char r[256];
        snprintf(r, sizeof r, "no such task on node %s", a->name);
        t->reason = strdup(r);
        report_after_save(t, AGENT_REPORT_END);
        return;
    }
    if (t->state != AGENT_TASK_RUNNING) {
        send_end(t);
        return;
    }
    sl_log(SL_LOG_INFO, "agent", "job=%llu task=%d pid=%d SIGTERM grace_ms=%ld",
           (unsigned long long)job, task, (int)t->pid, grace_ms);
    kill(-t->pid, SIGTERM);
    arm_kill(t, grace_ms);
}

void agent_task_ack(agent_t *a, json_t *msg) {
    uint64_t job = (uint64_t)json_integer_value(json_object_get(msg, "job"));
    int task = (int)json_integer_value(json_object_get(msg, "task"));
    agent_task_t *t = task_find(a, job, task);
    if (t && t->state != AGENT_TASK_RUNNING) {
        task_remove(a, t);
        agent_state_dirty(a);
    }
}

/* ---- logs ---- */

/*
 * Makes buf[0..n) valid UTF-8 for JSON without changing its length in
 * bytes (so offsets stay file offsets): invalid bytes and NUL become '?'.
 * A multi-byte sequence cut by the end of the chunk is dropped (it is read
 * again next time) unless final. Returns the new length.
 */
static size_t utf8_clean(unsigned char *b, size_t n, int final) {
    size_t i = 0;
    while (i < n) {
        unsigned c = b[i];
        size_t k;
        unsigned lo = 0x80, hi = 0xBF;
        if (c == 0) {
            b[i++] = '?';
            continue;
        }
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF) k = 2;
        else if (c >= 0xE0 && c <= 0xEF) {
            k = 3;
            if (c == 0xE0) lo = 0xA0;
            if (c == 0xED) hi = 0x9F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            k = 4;
            if (c == 0xF0) lo = 0x90;
            if (c == 0xF4) hi = 0x8F;
        } else {
            b[i++] = '?';
            continue;
        }
        size_t j = 1;
        for (; j < k && i + j < n; j++) {
            unsigned d = b[i + j];
            if (j == 1 ? (d < lo || d > hi) : (d < 0x80 || d > 0xBF)) break;
        }
        if (j == k) {
            i += k;
        } else if (i + j == n && !final) {
            return i;  /* incomplete at the end: leave for the next read */
        } else {
            b[i++] = '?';
        }
    }
    return n;
}

void agent_task_logs(agent_t *a, json_t *msg) {
    json_t *req = json_object_get(msg, "req");
    uint64_t job = (uint64_t)json_integer_value(json_object_get(msg, "job"));
    int task = (int)json_integer_value(json_object_get(msg, "task"));
    json_t *jo = json_object_get(msg, "offset"), *jl = json_object_get(msg, "limit");
    long long off = json_is_integer(jo) ? json_integer_value(jo) : 0;
    long long lim = json_is_integer(jl) ? json_integer_value(jl) : 65536;
    if (off < 0) off = 0;
    if (lim < 0 || lim > AGENT_LOG_CHUNK) lim = AGENT_LOG_CHUNK;
    char path[4096];
    snprintf(path, sizeof path, "%s/logs/%llu/%d.log", a->workdir, (unsigned long long)job, task);
    json_t *reply = json_pack("{s:s,s:O,s:I,s:i}", "type", "logs", "req", req ? req : json_null(),
                              "job", (json_int_t)job, "task", task);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        char err[512];
        if (errno == ENOENT)
            snprintf(err, sizeof err, "no log for job %llu task %d on node %s",
                     (unsigned long long)job, task, a->name);
        else
            snprintf(err, sizeof err, "cannot read log of job %llu task %d on node %s: %s",
                     (unsigned long long)job, task, a->name, strerror(errno));
        json_object_set_new(reply, "error", json_string(err));
        if (fd >= 0) close(fd);
        agent_send(a, reply);
        return;
    }
    long long size = st.st_size;
    unsigned char *buf = malloc((size_t)lim + 1);
    if (!buf) abort();
    ssize_t n = 0;
    if (off < size && lim > 0) n = pread(fd, buf, (size_t)lim, off);
    close(fd);
    if (n < 0) n = 0;
    agent_task_t *t = task_find(a, job, task);
    int running = t && t->state == AGENT_TASK_RUNNING;
    int at_end = off + n >= size;
    size_t len = utf8_clean(buf, (size_t)n, at_end && !running);
    json_object_set_new(reply, "offset", json_integer(off));
    json_object_set_new(reply, "data", json_stringn((const char *)buf, len));
    json_object_set_new(reply, "size", json_integer(size));
    json_object_set_new(reply, "eof", json_boolean(off + (long long)len >= size && !running));
    free(buf);
    agent_send(a, reply);
}

/* ---- start-up and shutdown ---- */

static void load_state(agent_t *a) {
    json_error_t err;
    json_t *root = json_load_file(a->state_path, 0, &err);
    if (!root) {
        if (access(a->state_path, F_OK) == 0)
            sl_log(SL_LOG_WARN, "agent", "ignoring unreadable %s: %s", a->state_path, err.text);
        return;
    }
    size_t i;
    json_t *o;
    json_array_foreach(json_object_get(root, "tasks"), i, o) {
        const char *state = json_string_value(json_object_get(o, "state"));
        json_t *jj = json_object_get(o, "job"), *jt = json_object_get(o, "task");
        if (!state || !json_is_integer(jj) || !json_is_integer(jt)) continue;
        agent_task_t *t = task_new(a, (uint64_t)json_integer_value(jj), (int)json_integer_value(jt));
        t->start_time = json_number_value(json_object_get(o, "start_time"));
        t->end_time = json_number_value(json_object_get(o, "end_time"));
        if (strcmp(state, "running") == 0) {
            t->pid = (pid_t)json_integer_value(json_object_get(o, "pid"));
            t->pstart = (unsigned long long)json_integer_value(json_object_get(o, "pstart"));
            unsigned long long now_start = t->pid > 0 ? proc_start_time(t->pid) : 0;
            if (t->pid > 0 && now_start != 0 && now_start == t->pstart) {
                t->state = AGENT_TASK_RUNNING;
                a->nrunning++;
                adopt(a, t);
                sl_log(SL_LOG_INFO, "agent", "job=%llu task=%d pid=%d re-adopted",
                       (unsigned long long)t->job, t->task, (int)t->pid);
            } else {
                t->state = AGENT_TASK_FAILED;
                t->end_time = agent_now();
                t->reason = strdup("exit status unknown: the task ended while sluice-agent was not running");
            }
        } else if (strcmp(state, "exited") == 0) {
            t->state = AGENT_TASK_EXITED;
            t->exit_code = (int)json_integer_value(json_object_get(o, "exit_code"));
            t->sig = (int)json_integer_value(json_object_get(o, "signal"));
        } else {
            t->state = AGENT_TASK_FAILED;
            const char *r = json_string_value(json_object_get(o, "reason"));
            t->reason = strdup(r ? r : "");
        }
    }
    json_decref(root);
}

int agent_tasks_init(agent_t *a) {
    char path[4096];
    snprintf(path, sizeof path, "%s/logs", a->workdir);
    if (mkdir(path, 0755) != 0 && errno != EEXIST) {
        sl_log(SL_LOG_ERROR, "agent", "cannot create %s: %s", path, strerror(errno));
        return -1;
    }
    a->sigchld_ev = evsignal_new(a->base, SIGCHLD, sigchld_cb, a);
    event_add(a->sigchld_ev, NULL);
    a->save_ev = event_new(a->base, -1, 0, save_cb, a);
    load_state(a);
    agent_state_dirty(a);
    return 0;
}

static void stop_kill_cb(evutil_socket_t fd, short ev, void *arg) {
    agent_t *a = arg;
    for (agent_task_t *t = a->tasks; t; t = t->next)
        if (t->state == AGENT_TASK_RUNNING) kill(-t->pid, SIGKILL);
}

void agent_tasks_stop_all(agent_t *a) {
    if (a->stopping) {
        stop_kill_cb(-1, 0, a);  /* second signal: no more grace */
        return;
    }
    a->stopping = 1;
    if (a->nrunning == 0) {
        event_base_loopexit(a->base, NULL);
        return;
    }
    sl_log(SL_LOG_INFO, "agent", "stopping %d task(s): SIGTERM, SIGKILL after %d s", a->nrunning,
           a->grace_s);
    for (agent_task_t *t = a->tasks; t; t = t->next)
        if (t->state == AGENT_TASK_RUNNING) kill(-t->pid, SIGTERM);
    a->stop_ev = evtimer_new(a->base, stop_kill_cb, a);
    struct timeval tv = {a->grace_s, 0};
    evtimer_add(a->stop_ev, &tv);
}

void agent_tasks_fini(agent_t *a) {
    if (a->save_ev) {
        save_cb(-1, 0, a);
        event_free(a->save_ev);
        a->save_ev = NULL;
    }
    while (a->tasks) {
        agent_task_t *t = a->tasks;
        a->tasks = t->next;
        task_free(t);
    }
    if (a->sigchld_ev) event_free(a->sigchld_ev);
    a->sigchld_ev = NULL;
    if (a->stop_ev) event_free(a->stop_ev);
}
