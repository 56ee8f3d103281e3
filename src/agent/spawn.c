/*
 * spawn.c - one task's process: command, environment, log (spawn.h).
 *
 * Launch is one posix_spawnp() (glibc: clone(CLONE_VM|CLONE_VFORK), so its
 * cost does not grow with the agent's memory) with POSIX_SPAWN_SETSID: each
 * task leads its own session and process group, which is what the tasks
 * layer signals to stop it. posix_spawnp reports exec failure
 * synchronously, so a bad command is known (and reported `failed` with the
 * reason, also written to the task's log) before anything says `started`.
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
#include <unistd.h>

#include "spawn.h"

extern char **environ;

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

static void env_set_int(strvec_t *env, const char *key, long long v) {
    char num[24];
    snprintf(num, sizeof num, "%lld", v);
    env_set(env, key, num);
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

/* The launcher's words for an image, then the task's argv. Returns 0 or -1
 * with reason filled. */
static int build_argv(const agent_spawn_t *sp, const char *image, const char *gpus,
                      const char *log, strvec_t *argv, char *reason, size_t rlen) {
    const sl_proto_launch_t *l = sp->launch;
    if (image) {
        if (!sp->launcher) {
            snprintf(reason, rlen,
                     "image %s needs a container launcher; none is configured on node %s (--launcher)",
                     image, sp->node);
            return -1;
        }
        char jobs[24], tasks[16];
        snprintf(jobs, sizeof jobs, "%llu", (unsigned long long)sp->job);
        snprintf(tasks, sizeof tasks, "%d", sp->task);
        char *tmpl = strdup(sp->launcher), *save = NULL;
        if (!tmpl) abort();
        for (char *w = strtok_r(tmpl, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
            const char *bad = NULL;
            char *x = agent_launcher_expand(w, image, sp->workdir, jobs, tasks, l->name ? l->name : "",
                                            sp->node, gpus, log, &bad);
            if (!x) {
                snprintf(reason, rlen, "--launcher: unknown placeholder at \"%s\"", bad);
                free(tmpl);
                return -1;
            }
            sv_push(argv, x);
        }
        free(tmpl);
    }
    for (size_t i = 0; i < l->argc; i++) {
        char *a = strdup(l->argv[i]);
        if (!a) abort();
        sv_push(argv, a);
    }
    if (argv->n == 0) {
        snprintf(reason, rlen, "the task has no command");
        return -1;
    }
    return 0;
}

static void build_env(const agent_spawn_t *sp, const char *gpus, strvec_t *env) {
    const sl_proto_launch_t *l = sp->launch;
    bool order_set = false;
    for (char **e = environ; *e; e++) {
        char *kv = strdup(*e);
        if (!kv) abort();
        sv_push(env, kv);
    }
    for (size_t i = 0; i < l->nenv; i++) {
        env_set(env, l->env[i].key, l->env[i].value);
        order_set |= strcmp(l->env[i].key, "CUDA_DEVICE_ORDER") == 0;
    }
    if (!order_set) env_set(env, "CUDA_DEVICE_ORDER", "PCI_BUS_ID");
    env_set(env, "CUDA_VISIBLE_DEVICES", gpus);
    env_set_int(env, "SLUICE_JOB_ID", (long long)sp->job);
    if (l->name) env_set(env, "SLUICE_JOB_NAME", l->name);
    env_set_int(env, "SLUICE_TASK_INDEX", sp->task);
    env_set(env, "SLUICE_NODE", sp->node);
    if (gpus[0]) env_set_int(env, "SLUICE_GPU_MILLI", l->gpu_milli);
    env_set_int(env, "RANK", l->rank);
    env_set_int(env, "WORLD_SIZE", l->world_size);
    env_set_int(env, "LOCAL_RANK", l->local_rank);
    env_set(env, "MASTER_ADDR", l->master_addr ? l->master_addr : SL_PROTO_DEFAULT_MASTER_ADDR);
    env_set_int(env, "MASTER_PORT", l->master_port);
}

int agent_spawn(const agent_spawn_t *sp, pid_t *pid, char *reason, size_t rlen) {
    const sl_proto_launch_t *l = sp->launch;
    int rc = -1, logfd = -1;
    strvec_t argv = {0}, env = {0};
    char path[4096], gpus[512] = "";
    const char *image = l->image && l->image[0] ? l->image : NULL;

    for (size_t i = 0; i < l->ngpus; i++) {
        size_t n = strlen(gpus);
        snprintf(gpus + n, sizeof gpus - n, "%s%d", i ? "," : "", (int)l->gpus[i]);
    }
    snprintf(path, sizeof path, "%s/logs/%llu", sp->workdir, (unsigned long long)sp->job);
    if (mkdir(path, 0755) != 0 && errno != EEXIST) {
        snprintf(reason, rlen, "cannot create %s on node %s: %s", path, sp->node, strerror(errno));
        goto out;
    }
    snprintf(path, sizeof path, "%s/logs/%llu/%d.log", sp->workdir, (unsigned long long)sp->job,
             sp->task);
    if (build_argv(sp, image, gpus, path, &argv, reason, rlen) != 0) goto out;
    build_env(sp, gpus, &env);

    logfd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (logfd < 0) {
        snprintf(reason, rlen, "cannot open log %s on node %s: %s", path, sp->node, strerror(errno));
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
    posix_spawn_file_actions_addchdir_np(&fa, sp->workdir);
    posix_spawn_file_actions_addclosefrom_np(&fa, 3);
    posix_spawnattr_init(&at);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &dflt);
    int e = posix_spawnp(pid, argv.v[0], &fa, &at, argv.v, env.v);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (e != 0) {
        snprintf(reason, rlen, "cannot execute %s on node %s: %s", argv.v[0], sp->node, strerror(e));
        dprintf(logfd, "sluice-agent: %s\n", reason);
        goto out;
    }
    rc = 0;
out:
    if (logfd >= 0) close(logfd);
    sv_free(&argv);
    sv_free(&env);
    return rc;
}
