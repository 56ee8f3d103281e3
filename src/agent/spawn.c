/*
 * spawn.c - one task's process: identity, directory, environment, command,
 * log (spawn.h).
 *
 * Identity. Tenants do not trust each other's code, so each task runs as
 * the Unix user its tenant maps to (the launch's `user` and `group`, names
 * resolved here with getpwnam/getgrnam; an absent user is "nobody"), as
 * Slurm runs each job as its submitter. An agent running as root switches
 * to that user in the task's child: supplementary groups cleared
 * (setgroups(0): the config names the one group a tenant's tasks hold, and
 * a node's /etc/group must not add, say, `docker` or `disk` behind its
 * back), then setgid, setuid, and PR_SET_NO_NEW_PRIVS so that no setuid
 * binary or file capability hands privileges back. uid or gid 0 is refused
 * unless the launch says allow_root (the controller's explicit opt-in). An
 * agent that is not root cannot switch: its tasks run as itself (task.c
 * says so once at start-up); it does not refuse such launches, because a
 * single-user agent (`sluice up` as a developer) has no other identity to
 * offer and refusing would only stop it from working.
 *
 * Directory. Each job gets WORKDIR/jobs/NAME (NAME: names.h, the cluster
 * instance and the job id), mode 0700, owned by the task's user: the
 * task's working directory and TMPDIR. WORKDIR/jobs is root's (0711), so a
 * tenant cannot rename or replace its job directory with a link that the
 * agent would then follow. The directory is made anew for each run of the
 * job on the node (the first of its tasks here to start, fresh): one that
 * is already there (an earlier attempt's, or an earlier job's of the same
 * id from a restored database) holds what another run, maybe another
 * tenant, left, planted links included, and is renamed to NAME~N rather
 * than reused. The log, WORKDIR/logs/NAME/TASK.log (its directory root's
 * too, for the same reason), is always a new file (O_EXCL; one left from
 * before is renamed to TASK.log~N, so `sluice logs` never shows another
 * run's output), mode 0600 and owned by the task's user: the agent reads it
 * for `sluice logs`, no other tenant can.
 *
 * Launch. Each task runs under a monitor, sluice-monitor (monitor.h,
 * monitor/monitor.c), its parent, which records its exit status for the
 * agent. The agent clones a first child (clone(CLONE_VM | CLONE_VFORK) onto
 * a stack of its own, as glibc's posix_spawn does: no copy of the agent's
 * page tables, so the cost does not grow with the agent); that child leads
 * a session of its own, sets up the task's descriptors and directory,
 * clones the task the same way (the task leads another session and process
 * group, which the tasks layer signals to stop it, takes the tenant's user
 * and dies with SIGKILL should its parent die) and, once the task has
 * exec'd, execs the monitor with the task's pid. The agent waits for both
 * execs (one more than a bare task, nothing else on the launch path), so a
 * bad command is known (and reported `failed` with the reason, also written
 * to the task's log) before anything says `started`; should the monitor
 * fail to exec, its task is killed, as nothing would record its end. Both
 * children make system calls only (setsid, dup2, fchdir, clone, write,
 * open, setgroups, setgid, setuid, prctl, close_range, execve): everything
 * that allocates or reads files (user lookup, argv, environment, the PATH
 * candidates for the command) is done before. A child that fails records which step and errno
 * in the memory it shares with the agent. Signals are blocked across the
 * clone so that none of the agent's handlers runs in the children; the
 * first resets every disposition to the default, and both unblock all
 * before exec. Measured with bench/live/spawncost.py: the monitor's exec
 * adds about 0.5 ms to a launch on the 2-core CI machine (median 1.07 ms
 * against 0.33-0.58 ms without a monitor, in one sitting).
 *
 * Enforcement. The tasks layer has made the task's cgroup and written its
 * limits (cgroup.h) before the launch; the task's child, right after
 * setsid and while still root, writes "0" to each cgroup.procs descriptor
 * it is handed (the task joins its cgroup in every hierarchy before it runs
 * a single instruction of its own, and everything it forks is born there)
 * and its oom_score_adj (-500 by default) to /proc/self/oom_score_adj. The
 * monitor stays in the agent's cgroup, so the kernel's group OOM kill of a
 * task never takes the process that records the task's end.
 *
 * Environment, scrubbed: the task sees none of the agent's variables (the
 * cluster token, whatever the agent inherited), only PATH (the agent's),
 * LANG, LC_* and TZ from it, HOME, USER and LOGNAME of the task's user,
 * TMPDIR (the job directory); then the job's `env`; then Sluice's
 * variables, which win: CUDA_VISIBLE_DEVICES (assigned GPU indices, empty
 * for a task without GPUs), CUDA_DEVICE_ORDER=PCI_BUS_ID (so CUDA numbers
 * GPUs as NVML does; the job may override it), SLUICE_JOB_ID,
 * SLUICE_JOB_NAME, SLUICE_TASK_INDEX, SLUICE_NODE, SLUICE_GPU_MILLI, RANK,
 * WORLD_SIZE (and SLUICE_JOB_SIZE, the same: the job's size at launch),
 * SLUICE_PREEMPT_FILE (preempt.h), LOCAL_RANK, MASTER_ADDR, MASTER_PORT, and for a GPU-share
 * task the MPS limits of its share (mps_env, docs/mps.md). The command is looked
 * up in the task's PATH. stdin is /dev/null, stdout and stderr go
 * (appended) to the log.
 *
 * A task with an `image` runs in a container through the node's OCI
 * runtime when the agent has one (--runtime, container.h): the agent
 * writes the task's bundle and the task is sluice-cstart BUNDLE, started
 * as above but without the identity change (cstart takes the tenant's
 * user once the image is ready, then runs runc). Its environment is the
 * one above less what the agent's own carried (PATH, LANG, LC_*, TZ: the
 * image's come first inside), with HOME the job directory. Without a
 * runtime, it runs through the --launcher template: the template
 * is split at blanks into words, placeholders in each word are replaced
 * ({image} {workdir} {job} {task} {name} {node} {gpus} {log}) and the task's
 * argv is appended. No shell is involved.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "monitor.h"
#include "preempt.h"
#include "secrets.h"
#include "spawn.h"
#include "volumes.h"

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
    /* An image's entrypoint's arguments follow the launcher's words, as
     * `podman run IMAGE ARGS` gives them to the entrypoint. */
    for (size_t i = 0; image && !l->argv && i < l->nimage_args; i++) {
        char *a = strdup(l->image_args[i]);
        if (!a) abort();
        sv_push(argv, a);
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

/* Who the task runs as, resolved before the fork. */
typedef struct ident {
    bool change;                /* switch to uid/gid in the child (the agent is root) */
    uid_t uid;
    gid_t gid;
    char user[256];             /* USER, LOGNAME */
    char home[1024];            /* HOME */
} ident_t;

/* Resolves the launch's user and group on this node into id. Returns 0, or
 * -1 with reason filled. */
static int resolve_ident(const agent_spawn_t *sp, ident_t *id, char *reason, size_t rlen) {
    const sl_proto_launch_t *l = sp->launch;
    memset(id, 0, sizeof *id);
    if (geteuid() != 0) {
        /* Not root: no other identity to take; the task runs as the agent. */
        struct passwd *pw = getpwuid(geteuid());
        const char *home = getenv("HOME");
        id->uid = geteuid();
        id->gid = getegid();
        snprintf(id->user, sizeof id->user, "%s", pw ? pw->pw_name : "");
        snprintf(id->home, sizeof id->home, "%s", pw ? pw->pw_dir : home ? home : "/");
        return 0;
    }
    const char *user = l->user ? l->user : SL_PROTO_DEFAULT_USER;
    errno = 0;
    struct passwd *pw = getpwnam(user);
    if (!pw) {
        if (errno == 0 || errno == ENOENT || errno == ESRCH)
            snprintf(reason, rlen, "user %s does not exist on node %s", user, sp->node);
        else
            snprintf(reason, rlen, "cannot look up user %s on node %s: %s", user, sp->node,
                     strerror(errno));
        return -1;
    }
    id->change = true;
    id->uid = pw->pw_uid;
    id->gid = pw->pw_gid;
    snprintf(id->user, sizeof id->user, "%s", pw->pw_name);
    snprintf(id->home, sizeof id->home, "%s", pw->pw_dir && pw->pw_dir[0] ? pw->pw_dir : "/");
    if (l->group) {
        errno = 0;
        struct group *gr = getgrnam(l->group);
        if (!gr) {
            if (errno == 0 || errno == ENOENT || errno == ESRCH)
                snprintf(reason, rlen, "group %s does not exist on node %s", l->group, sp->node);
            else
                snprintf(reason, rlen, "cannot look up group %s on node %s: %s", l->group,
                         sp->node, strerror(errno));
            return -1;
        }
        id->gid = gr->gr_gid;
    }
    if ((id->uid == 0 || id->gid == 0) && !l->allow_root) {
        char who[300];
        if (id->uid == 0)
            snprintf(who, sizeof who, "user %s is root (uid 0)", user);
        else if (l->group)
            snprintf(who, sizeof who, "group %s is root (gid 0)", l->group);
        else
            snprintf(who, sizeof who, "the primary group of user %s is root (gid 0)", user);
        snprintf(reason, rlen,
                 "%s on node %s, and the controller's config does not allow tasks to run as root "
                 "(allow_root)", who, sp->node);
        return -1;
    }
    return 0;
}

/* Renames path, which another run left, to path~N (the first N free,
 * never replacing anything), within its directory: the agent's own, so
 * that what a tenant put inside is moved whole and never opened. 0, or -1
 * with errno set. */
static int set_aside(const char *path) {
    char old[4200];
    for (int n = 1; n < 1000; n++) {
        snprintf(old, sizeof old, "%s~%d", path, n);
        if (renameat2(AT_FDCWD, path, AT_FDCWD, old, RENAME_NOREPLACE) == 0) {
            sl_log(SL_LOG_INFO, "agent", "%s is from an earlier run: renamed to %s", path, old);
            return 0;
        }
        if (errno != EEXIST) return -1;
    }
    errno = EEXIST;
    return -1;
}

/* Opens the job's directory WORKDIR/jobs/NAME, owned by the task's user,
 * mode 0700: made anew when sp->fresh (one already there is set aside),
 * else made or reused (another task of the same run made it). Returns the
 * directory's fd, or -1 with reason filled. O_NOFOLLOW: a link there is
 * refused, never followed. */
static int open_job_dir(const agent_spawn_t *sp, const ident_t *id, char *path, size_t plen,
                        char *reason, size_t rlen) {
    snprintf(path, plen, "%s/jobs", sp->workdir);
    if (mkdir(path, 0711) != 0 && errno != EEXIST) goto fail;
    snprintf(path, plen, "%s/jobs/%s", sp->workdir, sp->name);
    if (mkdir(path, 0700) != 0) {
        if (errno != EEXIST || (sp->fresh && (set_aside(path) != 0 || mkdir(path, 0700) != 0)))
            goto fail;
    }
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0) goto fail;
    if (fstat(fd, &st) != 0 ||
        (id->change && (st.st_uid != id->uid || st.st_gid != id->gid) &&
         fchown(fd, id->uid, id->gid) != 0) ||
        ((st.st_mode & 07777) != 0700 && fchmod(fd, 0700) != 0)) {
        int e = errno;
        close(fd);
        errno = e;
        goto fail;
    }
    return fd;
fail:
    snprintf(reason, rlen, "cannot create the job directory %s on node %s: %s", path, sp->node,
             strerror(errno));
    return -1;
}

/* Creates the task's log (a new file: one already at path is set aside),
 * mode 0600, owned by the task's user, for appending. Its directory is
 * root's, so the name is the agent's; all the same, nothing but a regular
 * file of one link is written to (never a FIFO, which would block the
 * open, nor a hard link to another file). Returns the fd, or -1 with
 * reason filled. */
static int open_log(const agent_spawn_t *sp, const ident_t *id, const char *path, char *reason,
                    size_t rlen) {
    const int flags =
        O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY;
    int fd = open(path, flags, 0600);
    if (fd < 0 && errno == EEXIST && set_aside(path) == 0)
        fd = open(path, flags, 0600);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0) {
        if (!S_ISREG(st.st_mode) || st.st_nlink != 1) {
            snprintf(reason, rlen, "cannot open log %s on node %s: not a regular file of one "
                     "link", path, sp->node);
            close(fd);
            return -1;
        }
        if ((!id->change || (st.st_uid == id->uid && st.st_gid == id->gid) ||
             fchown(fd, id->uid, id->gid) == 0) &&
            ((st.st_mode & 07777) == 0600 || fchmod(fd, 0600) == 0) &&
            fcntl(fd, F_SETFL, O_APPEND) == 0) /* the task's writes block as usual */
            return fd;
    }
    snprintf(reason, rlen, "cannot open log %s on node %s: %s", path, sp->node, strerror(errno));
    if (fd >= 0) close(fd);
    return -1;
}

/* Copies the allowed variables of the agent's environment: PATH, LANG,
 * LC_*, TZ. Nothing else the agent holds (the cluster token above all)
 * reaches a task. */
static bool env_allowed(const char *kv) {
    static const char *const keep[] = {"PATH=", "LANG=", "TZ=", "LC_"};
    for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++)
        if (strncmp(kv, keep[i], strlen(keep[i])) == 0) return true;
    return false;
}

/*
 * MPS limits of a GPU-share task (docs/mps.md): a task with a share
 * (gpu_milli 1..999) of its one GPU gets CUDA_MPS_ACTIVE_THREAD_PERCENTAGE,
 * its share in whole percent rounded down (250 milli -> 25; at least 1), so
 * that its kernels use at most that part of the GPU's SMs and leave the
 * rest to the tasks that share it; and, when it asked for GPU memory,
 * CUDA_MPS_PINNED_DEVICE_MEM_LIMIT "0=<limit>", device 0 because
 * CUDA_VISIBLE_DEVICES shows the task only its GPU, renumbered from 0, and
 * the limit in whole GiB ("G") when exact, else in MiB ("M") rounded down
 * (at least 1M): the units MPS reads, binary, and never more than was
 * granted. Set after the job's env, so a job cannot raise its own. A
 * whole-GPU task gets neither: it owns its GPUs. Both only take effect
 * where an MPS control daemon runs for the task's user; without one CUDA
 * ignores them.
 */
static void mps_env(const sl_proto_launch_t *l, strvec_t *env) {
    if (l->ngpus != 1 || l->gpu_milli <= 0 || l->gpu_milli >= 1000) return;
    env_set_int(env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", l->gpu_milli >= 10 ? l->gpu_milli / 10 : 1);
    if (l->gpu_memory <= 0) return;
    const int64_t mib = INT64_C(1) << 20, gib = INT64_C(1) << 30;
    char lim[40];
    if (l->gpu_memory % gib == 0)
        snprintf(lim, sizeof lim, "0=%lldG", (long long)(l->gpu_memory / gib));
    else
        snprintf(lim, sizeof lim, "0=%lldM", (long long)(l->gpu_memory >= mib ? l->gpu_memory / mib : 1));
    env_set(env, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", lim);
}

/* SLUICE_PREEMPT_FILE (preempt.h): where a preemption's deadline will be
 * written; a file an earlier attempt of the task left is not this one's. */
static void preempt_env(const agent_spawn_t *sp, strvec_t *env) {
    char path[4096];
    agent_preempt_path(sp->workdir, sp->name, sp->task, path, sizeof path);
    agent_preempt_clear(sp->workdir, sp->name, sp->task);
    env_set(env, "SLUICE_PREEMPT_FILE", path);
}

static void env_set_cb(void *ud, const char *key, const char *val) {
    env_set(ud, key, val);
}

static int build_env(const agent_spawn_t *sp, const ident_t *id, const char *jobdir,
                     const char *gpus, bool container, strvec_t *env, char *reason, size_t rlen) {
    const sl_proto_launch_t *l = sp->launch;
    bool order_set = false;
    for (char **e = environ; *e && !container; e++) {
        if (!env_allowed(*e)) continue;
        char *kv = strdup(*e);
        if (!kv) abort();
        sv_push(env, kv);
    }
    if (!getenv("PATH") && !container) env_set(env, "PATH", "/usr/local/bin:/usr/bin:/bin");
    env_set(env, "HOME", container ? jobdir : id->home);
    env_set(env, "USER", id->user);
    env_set(env, "LOGNAME", id->user);
    env_set(env, "TMPDIR", jobdir);
    for (size_t i = 0; i < l->nenv; i++) {
        env_set(env, l->env[i].key, l->env[i].value);
        order_set |= strcmp(l->env[i].key, "CUDA_DEVICE_ORDER") == 0;
    }
    /* Its secrets' variables (secrets.h), as the job's own env. */
    if (agent_secrets_env(&l->secrets, env_set_cb, env, reason, rlen) != 0) return -1;
    if (l->secrets.ndirs) {
        char dir[4200];
        agent_secrets_dir(jobdir, sp->task, dir, sizeof dir);
        env_set(env, "SLUICE_SECRETS_DIR", dir);
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
    env_set_int(env, "SLUICE_JOB_SIZE", l->world_size); /* an elastic job's size at launch */
    preempt_env(sp, env);
    env_set_int(env, "LOCAL_RANK", l->local_rank);
    env_set(env, "MASTER_ADDR", l->master_addr ? l->master_addr : SL_PROTO_DEFAULT_MASTER_ADDR);
    env_set_int(env, "MASTER_PORT", l->master_port);
    mps_env(l, env);
    return 0;
}

/* SLUICE_VOLUME_<PATH> (volume.h) of each volume: where the task finds it
 * (its path in a container or where it is mounted, else its node path),
 * after the job's env so that the job cannot point it elsewhere; and each
 * tmpfs's mount data into opts (one entry per volume, "" for others). */
static void volume_env(const agent_volume_t *v, size_t n, bool container, strvec_t *env,
                       strvec_t *opts) {
    for (size_t i = 0; v && i < n; i++) {
        char name[SL_VOLUME_PATH_MAX + 32], *o;
        sl_volume_env_name(v[i].path, name, sizeof name);
        env_set(env, name, container || v[i].mount_here ? v[i].path : v[i].node_path);
        if (asprintf(&o, "mode=1777,size=%lld", (long long)v[i].size) < 0) abort();
        sv_push(opts, o);
    }
}

/* An image task's bundle (container.h), and its command, cstart BUNDLE.
 * The task's child keeps root: cstart changes to id's user itself. */
static int container_argv(const agent_spawn_t *sp, const ident_t *id, const char *image,
                          const char *jobdir, const strvec_t *env, const agent_volume_t *vols,
                          strvec_t *argv, char *reason, size_t rlen) {
    const sl_proto_launch_t *l = sp->launch;
    char bundle[4200];
    /* The launch's mounts, then each secret directory read-only at its path. */
    strvec_t ms = {0};
    for (size_t i = 0; i < l->nmounts; i++) {
        char *m = strdup(l->mounts[i]);
        if (!m) abort();
        sv_push(&ms, m);
    }
    for (size_t i = 0; i < l->secrets.ndirs; i++) {
        char dir[4200], *m;
        if (!l->secrets.dirs[i].path) continue;
        agent_secrets_dir(jobdir, sp->task, dir, sizeof dir);
        if (asprintf(&m, "%s/%s:%s:ro", dir, l->secrets.dirs[i].dir, l->secrets.dirs[i].path) < 0)
            abort();
        sv_push(&ms, m);
    }
    agent_container_task_t ct = {
        .workdir = sp->workdir, .name = sp->name, .task = sp->task, .node = sp->node,
        .image = image, .argv = l->argv, .argc = l->argv ? l->argc : 0, .env = env->v,
        .uid = id->uid, .gid = id->gid, .jobdir = jobdir, .cwd = l->workdir,
        .shm_size = l->shm_size, .mounts = (const char *const *)ms.v, .nmounts = ms.n,
        .gpus = l->gpus, .ngpus = l->ngpus, .volumes = vols, .nvolumes = vols ? l->nvolumes : 0,
        .containers = l->containers, .image_args = l->image_args, .nimage_args = l->nimage_args};
    int rc = agent_container_bundle(sp->containers, &ct, bundle, sizeof bundle, reason, rlen);
    sv_free(&ms);
    if (rc != 0)
        return -1;
    char *a = strdup(sp->containers->cstart), *b = strdup(bundle);
    if (!a || !b) abort();
    sv_push(argv, a);
    sv_push(argv, b);
    return 0;
}

/* The paths execve tries for argv0, as execvp would: argv0 itself when it
 * names a path, else each directory of the task's PATH (an empty one is
 * the working directory). */
static void exec_candidates(const char *argv0, const strvec_t *env, strvec_t *out) {
    char *p;
    if (strchr(argv0, '/') || argv0[0] == '\0') {
        if (!(p = strdup(argv0))) abort();
        sv_push(out, p);
        return;
    }
    const char *path = "/usr/local/bin:/usr/bin:/bin";
    for (size_t i = 0; i < env->n; i++)
        if (strncmp(env->v[i], "PATH=", 5) == 0) path = env->v[i] + 5;
    for (const char *d = path;; d++) {
        const char *end = strchrnul(d, ':');
        if (asprintf(&p, "%.*s%s%s", (int)(end - d), d, end == d ? "" : "/", argv0) < 0) abort();
        sv_push(out, p);
        if (*end == '\0') break;
        d = end;
    }
}

/* The steps of a start, for the reason of one that failed. */
enum { STEP_FDS = 1, STEP_DIR, STEP_FORK, STEP_IDENT, STEP_NNP, STEP_EXEC, STEP_MONITOR,
       STEP_CGROUP, STEP_OOM, STEP_MOUNT };

/* What the two children do and, when one fails, which step failed and
 * why. They share the agent's memory (CLONE_VM), so they report here, and
 * the agent reads it once the monitor has exec'd or the first child has
 * exited. */
typedef struct child_args {
    int logfd, dirfd;
    const ident_t *id;
    const char *monitor;
    char *const *cands, *const *argv, *const *envp;    /* the task's */
    char *const *margv;         /* the monitor's; margv[2] is pidbuf, filled in */
    char *pidbuf;               /* 24 bytes */
    pid_t parent;               /* the first child, the task's parent (the monitor) */
    const int *cgroup_procs;    /* the task's cgroup.procs, written "0" */
    size_t ncgroup_procs;
    const char *oom_score_adj;  /* written to /proc/self/oom_score_adj, or NULL */
    const agent_volume_t *vols; /* mounted in a mount namespace of its own when nvols */
    size_t nvols;
    const char *const *tmpfs_opts; /* nvols: a TMPFS's mount data, else NULL */
    size_t vol;                 /* STEP_MOUNT: the volume that failed */
    pid_t task;                 /* the task, once it has exec'd */
    int step;                   /* the step it reached */
    int err;                    /* 0: both exec'd; else the errno of that step */
} child_args_t;

/* Moves fd above the standard descriptors (the agent may have been started
 * with some of them closed). */
static int above_std(int fd) {
    return fd > 2 ? fd : fcntl(fd, F_DUPFD_CLOEXEC, 3);
}

/* In a child just before it execs: nothing of the agent's (sockets,
 * state files) survives but stdin, stdout and stderr (the agent's
 * descriptors are close-on-exec, but a library's may not be), and no
 * signal stays blocked. Async-signal-safe. 0, or -1 with errno set. */
static int clean_slate(void) {
    if (close_range(3, ~0U, 0) != 0)
        return -1;
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    return 0;
}

/*
 * The task, between clone and exec: it runs on a stack of its own in the
 * agent's memory while the first child waits (CLONE_VFORK), so it uses
 * system calls only. The identity changes are raw system calls: glibc's
 * setuid() in a multi-threaded process (NVML may start threads) would also
 * change the credentials of the agent's other threads, which this child
 * shares memory with. Returns (exit status 127) only after a failure,
 * recorded in a.
 */
static int task_child(void *arg) {
    child_args_t *a = arg;
    a->step = STEP_FDS;
    /* Its own session and process group: what kill and fencing signal. */
    if (setsid() < 0) goto fail;
    /* Into its cgroup (the monitor stays in the agent's, so that an OOM
     * kill of the task's group never takes it), and its OOM score, before
     * the identity change: lowering a score takes CAP_SYS_RESOURCE, which
     * the tenant's user does not hold. */
    a->step = STEP_CGROUP;
    for (size_t i = 0; i < a->ncgroup_procs; i++)
        if (write(a->cgroup_procs[i], "0", 1) != 1) goto fail;
    a->step = STEP_OOM;
    if (a->oom_score_adj) {
        int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
        size_t len = strlen(a->oom_score_adj);
        if (fd < 0 || write(fd, a->oom_score_adj, len) != (ssize_t)len) goto fail;
        close(fd);
    }
    /* Its volumes (volumes.h), still root, in a mount namespace of its own. */
    a->step = STEP_MOUNT;
    if (a->nvols && agent_volumes_mount(a->vols, a->nvols, a->tmpfs_opts, &a->vol) != 0) goto fail;
    a->step = STEP_IDENT;
    /* Groups and gid while still root, uid last. */
    if (a->id->change && (syscall(SYS_setgroups, 0, NULL) != 0 ||
                          syscall(SYS_setgid, a->id->gid) != 0 ||
                          syscall(SYS_setuid, a->id->uid) != 0))
        goto fail;
    a->step = STEP_NNP;
    /* SIGKILL should the monitor die (it can record nothing then); set
     * after the identity change, which clears it. The parent cannot have
     * died yet unless killed: the check closes that race. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) goto fail;
    if ((pid_t)syscall(SYS_getppid) != a->parent) {
        a->err = ESRCH;
        return 127;
    }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) goto fail;
    a->step = STEP_FDS;
    if (clean_slate() != 0) goto fail;
    a->step = STEP_EXEC;
    int err = ENOENT;
    bool denied = false;
    for (size_t i = 0; a->cands[i]; i++) {
        execve(a->cands[i], a->argv, a->envp);
        /* As execvp: go on to the next directory unless another directory
         * cannot help; EACCES wins if nothing runs. */
        err = errno;
        denied |= err == EACCES;
        if (err != ENOENT && err != ENOTDIR && err != EACCES && err != ENODEV &&
            err != ETIMEDOUT && err != ESTALE) {
            denied = false;
            break;
        }
    }
    a->err = denied ? EACCES : err ? err : ENOEXEC;
    return 127;
fail:
    a->err = errno ? errno : EIO;
    return 127;
}

/* The second child's stack (the first's is child_stack, below): one per
 * agent, as launches are made one at a time on the event loop's thread. */
static char task_stack[64 * 1024] __attribute__((aligned(16)));

/*
 * The first child, which becomes the monitor: between clone and exec it
 * runs on its own stack in the agent's memory while the agent waits
 * (CLONE_VFORK), as glibc's posix_spawn does, so it uses system calls
 * only: no malloc, no stdio, no lock. It leads a session of its own (no
 * terminal's signal or process-group kill aimed at the agent reaches it),
 * sets up the task's descriptors and directory, starts the task the same
 * way (it waits until the task has exec'd) and execs the monitor, which
 * is thereby the task's parent. It keeps the agent's identity. Returns
 * (exit status 127) only after a failure, recorded in a; a task that
 * exec'd is then killed, as nothing would record its end.
 */
static int child(void *arg) {
    child_args_t *a = arg;
    int logfd = a->logfd, dirfd = a->dirfd;
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    /* Its own copy of the dispositions (no CLONE_SIGHAND): none of the
     * agent's handlers may run here; glibc's own signals answer EINVAL. */
    for (int s = 1; s < NSIG; s++)
        if (s != SIGKILL && s != SIGSTOP) sigaction(s, &dfl, NULL);
    a->step = STEP_FDS;
    if (setsid() < 0 || (logfd = above_std(logfd)) < 0 || (dirfd = above_std(dirfd)) < 0)
        goto fail;
    int nullfd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (nullfd < 0 || dup2(nullfd, 0) < 0 || dup2(logfd, 1) < 0 || dup2(logfd, 2) < 0) goto fail;
    a->step = STEP_DIR;
    if (fchdir(dirfd) != 0) goto fail;
    a->step = STEP_FORK;
    a->parent = (pid_t)syscall(SYS_getpid);
    pid_t task = clone(task_child, task_stack + sizeof task_stack,
                       CLONE_VM | CLONE_VFORK | SIGCHLD, a);
    if (task < 0) goto fail;
    if (a->err != 0) {
        /* It failed before exec and has exited. */
        while (waitpid(task, NULL, 0) < 0 && errno == EINTR) {}
        return 127;
    }
    a->task = task;
    /* The task's pid in decimal, the monitor's second argument. */
    char digits[24];
    int n = 0;
    for (unsigned v = (unsigned)task; v || n == 0; v /= 10) digits[n++] = (char)('0' + v % 10);
    for (int i = 0; i < n; i++) a->pidbuf[i] = digits[n - 1 - i];
    a->pidbuf[n] = '\0';
    a->step = STEP_FDS;
    if (clean_slate() != 0) goto fail_task;
    a->step = STEP_MONITOR;
    static char *const no_env[] = {NULL};
    execve(a->monitor, a->margv, no_env);
fail_task:
    a->err = errno ? errno : EIO;
    kill(-task, SIGKILL);
    while (waitpid(task, NULL, 0) < 0 && errno == EINTR) {}
    return 127;
fail:
    a->err = errno ? errno : EIO;
    return 127;
}

/* The first child's stack: one per agent, 64 KiB, far more than child()
 * needs. */
static char child_stack[64 * 1024] __attribute__((aligned(16)));

/* Why a start failed at step (STEP_*) with errno err, for the job's
 * owner. */
static void step_reason(const agent_spawn_t *sp, const ident_t *id, const char *jobdir,
                        const char *argv0, int step, int err, size_t vol, char *reason,
                        size_t rlen) {
    const char *e = strerror(err);
    switch (step) {
    case STEP_DIR:
        snprintf(reason, rlen, "cannot enter the job directory %s on node %s: %s", jobdir,
                 sp->node, e);
        break;
    case STEP_FORK:
        snprintf(reason, rlen, "cannot start a task on node %s: clone: %s", sp->node, e);
        break;
    case STEP_IDENT:
        snprintf(reason, rlen, "cannot switch to user %s (uid %u, gid %u) on node %s: %s",
                 id->user, (unsigned)id->uid, (unsigned)id->gid, sp->node, e);
        break;
    case STEP_NNP:
        snprintf(reason, rlen, "cannot set no_new_privs on node %s: %s", sp->node, e);
        break;
    case STEP_EXEC:
        snprintf(reason, rlen, "cannot execute %s on node %s: %s", argv0, sp->node, e);
        break;
    case STEP_CGROUP:
        snprintf(reason, rlen, "cannot move the task into its cgroup on node %s: %s", sp->node, e);
        break;
    case STEP_OOM:
        snprintf(reason, rlen, "cannot set the task's oom_score_adj to %d on node %s: %s",
                 sp->oom_score_adj, sp->node, e);
        break;
    case STEP_MONITOR:
        snprintf(reason, rlen, "cannot execute the task monitor %s on node %s: %s", sp->monitor,
                 sp->node, e);
        break;
    case STEP_MOUNT:
        snprintf(reason, rlen, "cannot mount volume %s on node %s: %s",
                 sp->launch->nvolumes ? sp->launch->volumes[vol < sp->launch->nvolumes ? vol : 0].path : "?",
                 sp->node, e);
        break;
    default:
        snprintf(reason, rlen, "cannot set up the task's files on node %s: %s", sp->node, e);
        break;
    }
}

int agent_spawn(const agent_spawn_t *sp, pid_t *pid, pid_t *monitor, char *reason, size_t rlen) {
    const sl_proto_launch_t *l = sp->launch;
    int rc = -1, logfd = -1, dirfd = -1;
    strvec_t argv = {0}, env = {0}, cands = {0}, tmpfs = {0};
    agent_volume_t *vols = NULL;
    char path[4096], jobdir[4096], gpus[512] = "", status[4096], pidbuf[24] = "";
    const char *image = l->image && l->image[0] ? l->image : NULL;
    ident_t id;

    for (size_t i = 0; i < l->ngpus; i++) {
        size_t n = strlen(gpus);
        snprintf(gpus + n, sizeof gpus - n, "%s%d", i ? "," : "", (int)l->gpus[i]);
    }
    if (resolve_ident(sp, &id, reason, rlen) != 0) goto out;
    if ((dirfd = open_job_dir(sp, &id, jobdir, sizeof jobdir, reason, rlen)) < 0) goto out;
    snprintf(path, sizeof path, "%s/logs/%s", sp->workdir, sp->name);
    if (mkdir(path, 0755) != 0 && errno != EEXIST) {
        snprintf(reason, rlen, "cannot create %s on node %s: %s", path, sp->node, strerror(errno));
        goto out;
    }
    snprintf(path, sizeof path, "%s/logs/%s/%d.log", sp->workdir, sp->name, sp->task);
    bool container = image && sp->containers && sp->containers->runtime;
    if (l->containers && !container) {
        /* A pod's containers share one cgroup, network and volumes: only
         * the OCI runtime runs them so (docs/containers.md "Pods"). */
        snprintf(reason, rlen, "a pod of %zu containers needs an OCI runtime on node %s "
                 "(sluice-agent --runtime); none is configured", json_array_size(l->containers),
                 sp->node);
        goto out;
    }
    bool ns = !container && geteuid() == 0 && l->nvolumes > 0;
    if (agent_volumes_prepare(sp->workdir, sp->name, sp->node, sp->fresh, id.uid, id.gid,
                              geteuid() == 0, container, ns, l->volumes, l->nvolumes, &vols,
                              reason, rlen) != 0)
        goto out;
    if (agent_secrets_write(dirfd, sp->task, &l->secrets, id.change, id.uid, id.gid, reason,
                            rlen) != 0 ||
        build_env(sp, &id, jobdir, gpus, container, &env, reason, rlen) != 0)
        goto out;
    volume_env(vols, l->nvolumes, container, &env, &tmpfs);
    if (container) {
        if (container_argv(sp, &id, image, jobdir, &env, vols, &argv, reason, rlen) != 0) goto out;
    } else if (build_argv(sp, image, gpus, path, &argv, reason, rlen) != 0) {
        goto out;
    }
    exec_candidates(argv.v[0], &env, &cands);
    if ((logfd = open_log(sp, &id, path, reason, rlen)) < 0) goto out;
    for (size_t i = 0; ns && i < l->nvolumes; i++)
        if (!vols[i].mount_here)
            dprintf(logfd, "sluice-agent: volume %s: no %s there on node %s, not mounted; the "
                    "task finds it at %s\n", vols[i].path, vols[i].is_dir ? "directory" : "file",
                    sp->node, vols[i].node_path);
    if (container) id.change = false; /* cstart changes identity itself */
    /* A status left by an earlier attempt of this task is not this one's. */
    snprintf(status, sizeof status, "%s/status/%s.%d", sp->workdir, sp->name, sp->task);
    unlink(status);

    char *const margv[] = {(char *)sp->monitor, status, pidbuf, (char *)sp->lease, NULL};
    char oom[16];
    snprintf(oom, sizeof oom, "%d", sp->oom_score_adj);
    child_args_t ca = {.logfd = logfd, .dirfd = dirfd, .id = &id, .monitor = sp->monitor,
                       .cands = cands.v, .argv = argv.v, .envp = env.v, .margv = margv,
                       .pidbuf = pidbuf, .cgroup_procs = sp->cgroup ? sp->cgroup->procs : NULL,
                       .ncgroup_procs = sp->cgroup ? sp->cgroup->nprocs : 0,
                       .oom_score_adj = sp->set_oom_score_adj ? oom : NULL,
                       .vols = vols, .nvols = ns ? l->nvolumes : 0,
                       .tmpfs_opts = (const char *const *)tmpfs.v};
    sigset_t all, old;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, &old);
    /* CLONE_VFORK: returns once the child has exec'd the monitor or exited,
     * so ca is final then; CLONE_VM: no copy of the agent's page tables, so
     * the cost does not grow with the agent (posix_spawn's way). */
    pid_t child_pid = clone(child, child_stack + sizeof child_stack,
                            CLONE_VM | CLONE_VFORK | SIGCHLD, &ca);
    int clone_errno = errno;
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (child_pid < 0) {
        snprintf(reason, rlen, "cannot start a task on node %s: clone: %s", sp->node,
                 strerror(clone_errno));
        goto out;
    }
    if (ca.err != 0) {
        /* The child failed (and killed a task that had exec'd) and has
         * exited: reap it here so that the SIGCHLD handler does not look
         * for it among the tasks. */
        while (waitpid(child_pid, NULL, 0) < 0 && errno == EINTR) {}
        step_reason(sp, &id, jobdir, argv.v[0], ca.step, ca.err, ca.vol, reason, rlen);
        dprintf(logfd, "sluice-agent: %s\n", reason);
        goto out;
    }
    *pid = ca.task;
    *monitor = child_pid;
    rc = 0;
out:
    if (logfd >= 0) close(logfd);
    if (dirfd >= 0) close(dirfd);
    sv_free(&argv);
    sv_free(&env);
    sv_free(&cands);
    sv_free(&tmpfs);
    agent_volumes_release(vols, l->nvolumes);
    return rc;
}

char *agent_spawn_monitor_find(void) {
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        sl_log(SL_LOG_ERROR, "agent", "cannot read /proc/self/exe to find %s: %s",
               AGENT_MONITOR_NAME, strerror(errno));
        return NULL;
    }
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash) *slash = '\0';
    char *path;
    if (asprintf(&path, "%s/%s", slash ? self : ".", AGENT_MONITOR_NAME) < 0) abort();
    if (access(path, X_OK) != 0) {
        sl_log(SL_LOG_ERROR, "agent",
               "cannot execute the task monitor %s: %s (it is built and installed beside "
               "sluice-agent)", path, strerror(errno));
        free(path);
        return NULL;
    }
    return path;
}

void agent_spawn_identity_notice(const char *workdir) {
    if (geteuid() != 0) {
        sl_log(SL_LOG_WARN, "agent",
               "running as uid %u, not root: every task runs as this user whatever user its "
               "tenant maps to (no isolation between tenants on this node)",
               (unsigned)geteuid());
        return;
    }
    /* The work directory and each directory above it, up to "/". */
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", workdir);
    for (;;) {
        struct stat st;
        if (stat(dir, &st) == 0 && !(st.st_mode & S_IXOTH)) {
            sl_log(SL_LOG_WARN, "agent",
                   "%s is not searchable by other users (mode %03o): tasks that run as their "
                   "tenant's user start in their job directory but cannot reach it by path "
                   "(TMPDIR); chmod o+x %s",
                   dir, (unsigned)(st.st_mode & 0777), dir);
            return;
        }
        char *slash = strrchr(dir, '/');
        if (!slash || slash == dir) return;  /* "/" is searchable */
        *slash = '\0';
    }
}
