/*
 * v2.c - the cgroup v2 backend (backend.h): the unified
 * hierarchy, in a subtree delegated to the agent.
 *
 * Layout. ROOT is --cgroup-root (relative to the cgroup2 mount) or the
 * agent's own cgroup from /proc/self/cgroup, which systemd hands over with
 * Delegate=yes. v2 lets processes live only in leaves once a cgroup
 * distributes controllers to children ("no internal processes"), so:
 *
 *     ROOT                 subtree_control +memory +cpu +pids; no process
 *     ROOT/agent           the agent and its monitors (moved here at start-up)
 *     ROOT/tasks           subtree_control +memory +cpu +pids; no process
 *     ROOT/tasks/JOB.TASK  one task (it writes itself in before exec)
 *
 * At start-up every process of ROOT moves into ROOT/agent (the agent first;
 * a wrapper started with it may be there too), then ROOT's controllers are
 * enabled for its children, then ROOT/tasks is made and enabled: no
 * process is ever written into an internal node, and subtree_control is
 * set before any child is used. An agent restarted by systemd lands in ROOT
 * again and repeats this; one started by hand inside ROOT/agent finds ROOT
 * as the parent of its cgroup.
 *
 * A task's files, in the order written (limits before the task joins):
 *   memory.max        hard limit (110%)
 *   memory.low        soft limit (90%): protected from reclaim up to it
 *   memory.swap.max   0 (no swap), where swap accounting exists
 *   memory.oom.group  1: an OOM kill takes every process of the task
 *   cpu.max           "QUOTA 100000"
 *   pids.max          --pids-max
 *   a device program  (bpf.c) allowing the standard devices and the task's GPUs
 *
 * The outcome at a task's end is memory.events (oom_kill counts processes
 * the kernel killed; `oom` counts events where the limit was hit, which a
 * task may survive: containerd reported OOM kills from it wrongly) and
 * memory.peak (kernel 5.19+); the exporter's stats add memory.current and
 * cpu.stat usage_usec.
 *
 * No pool (cgroup.h): a cgroup2 directory cannot be renamed (the kernel
 * gives cgroup2 no rename operation), so each launch makes its cgroup. A straggler that keeps rmdir at
 * EBUSY is killed with cgroup.kill (kernel 5.14+; else each listed pid).
 *
 * Tests point --cgroup-mount at a plain directory laid out like cgroupfs
 * (cgroup.controllers, cgroup.procs, cgroup.subtree_control as files): a
 * mount that is not cgroup2 but has cgroup.controllers is taken as such a
 * fake tree, whose files the writes create and append to, and where no
 * device program can be attached.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup/backend.h"
#include "cgroup/bpf.h"

#define V2_CONTROLLERS "+memory +cpu +pids"

static int v2_dir(const agent_cgroup_t *cg, const char *name, char *out, size_t len) {
    return snprintf(out, len, "%s/%s", cg->tasks, name) >= (int)len ? -ENAMETOOLONG : 0;
}

static int v2_rmdir(agent_cgroup_t *cg, const char *name) {
    char dir[PATH_MAX];
    if (v2_dir(cg, name, dir, sizeof dir) != 0) return -ENAMETOOLONG;
    if (cg->fs.fake) {
        /* A fake tree's files are plain files: remove them first. */
        DIR *d = opendir(dir);
        struct dirent *e;
        while (d && (e = readdir(d)))
            if (e->d_name[0] != '.') unlinkat(dirfd(d), e->d_name, 0);
        if (d) closedir(d);
    }
    return rmdir(dir) == 0 || errno == ENOENT ? 0 : -errno;
}

static int v2_create(agent_cgroup_t *cg, const char *name, const agent_cgroup_limits_t *lim,
                     agent_cgroup_task_t *ct, char *reason, size_t rlen) {
    char dir[PATH_MAX], val[64];
    const char *file = "";
    int rc;
    if ((rc = v2_dir(cg, name, dir, sizeof dir)) != 0) goto fail;
    if (mkdir(dir, 0755) != 0) {
        rc = -errno;
        snprintf(reason, rlen, "cgroup v2: cannot create %s: %s", dir, strerror(errno));
        return -1;
    }
#define W(f, v)                                                                                    \
    do {                                                                                           \
        file = f;                                                                                  \
        if ((rc = cg_write_i64(&cg->fs, dir, f, v)) != 0) goto fail;                               \
    } while (0)
    if (lim->mem_max > 0) {
        W("memory.max", lim->mem_max);
        W("memory.low", lim->mem_low);
        if (cg->swap) W("memory.swap.max", 0);
    }
    W("memory.oom.group", 1);
    if (lim->cpu_quota_us > 0) {
        file = "cpu.max";
        snprintf(val, sizeof val, "%lld %d", (long long)lim->cpu_quota_us,
                 AGENT_CGROUP_CPU_PERIOD_US);
        if ((rc = cg_write(&cg->fs, dir, file, val)) != 0) goto fail;
    }
    W("pids.max", lim->pids_max > 0 ? lim->pids_max : -1);
#undef W
    if (cg->bpf) {
        file = "(BPF device program)";
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0) {
            rc = -errno;
            goto fail;
        }
        rc = cg_bpf_attach_devices(dfd, lim->dev, lim->ndev);
        close(dfd);
        if (rc != 0) goto fail;
    }
    file = "cgroup.procs";
    int fd = cg_open_procs(&cg->fs, dir, "cgroup.procs");
    if (fd < 0) {
        rc = fd;
        goto fail;
    }
    ct->procs[ct->nprocs++] = fd;
    return 0;
fail:
    snprintf(reason, rlen, "cgroup v2: cannot write %s/%s: %s", dir, file, strerror(-rc));
    v2_rmdir(cg, name);
    return -1;
}

static int v2_stats(agent_cgroup_t *cg, const char *name, agent_cgroup_stats_t *out) {
    char dir[PATH_MAX];
    if (v2_dir(cg, name, dir, sizeof dir) != 0) return -ENAMETOOLONG;
    int rc = cg_read_i64(dir, "memory.current", &out->mem_current);
    if (rc != 0) return rc;
    if (!cg->peak || cg_read_i64(dir, "memory.peak", &out->mem_peak) != 0) out->mem_peak = -1;
    int64_t v;
    if (cg_read_i64(dir, "memory.max", &v) == 0) out->mem_limit = v > 0 ? v : 0;
    if (cg_read_key(dir, "memory.events", "oom_kill", &out->oom_kills) != 0) out->oom_kills = 0;
    if (cg_read_key(dir, "cpu.stat", "usage_usec", &v) == 0) out->cpu_usec = v;
    return 0;
}

static int v2_outcome(agent_cgroup_t *cg, const char *name, agent_cgroup_stats_t *out) {
    char dir[PATH_MAX];
    int64_t v;
    if (v2_dir(cg, name, dir, sizeof dir) != 0) return -ENAMETOOLONG;
    int rc = cg_read_key(dir, "memory.events", "oom_kill", &out->oom_kills);
    if (rc == -ENOENT && access(dir, F_OK) != 0) return -ENOENT;
    if (rc != 0) out->oom_kills = 0;
    if (!cg->peak || cg_read_i64(dir, "memory.peak", &out->mem_peak) != 0) out->mem_peak = -1;
    if (out->mem_limit <= 0 && cg_read_i64(dir, "memory.max", &v) == 0)
        out->mem_limit = v > 0 ? v : 0;
    return 0;
}

static int v2_kill(agent_cgroup_t *cg, const char *name) {
    char dir[PATH_MAX];
    if (v2_dir(cg, name, dir, sizeof dir) != 0) return -ENAMETOOLONG;
    int rc = cg_write(&cg->fs, dir, "cgroup.kill", "1");
    if (rc == -ENOENT && access(dir, F_OK) == 0) {
        /* Before kernel 5.14: no cgroup.kill. */
        rc = cg_kill_procs(dir);
        return rc < 0 ? rc : 0;
    }
    return rc;
}

static int v2_watch(agent_cgroup_t *cg, const char *name) {
    return -ENOTSUP;
}

static bool v2_busy(agent_cgroup_t *cg, const char *name) {
    char dir[PATH_MAX];
    int64_t populated = 0;
    pid_t p;
    if (v2_dir(cg, name, dir, sizeof dir) != 0) return false;
    if (!cg->fs.fake && cg_read_key(dir, "cgroup.events", "populated", &populated) == 0)
        return populated != 0;
    return !cg->fs.fake && cg_procs(dir, &p, 1) > 0;
}

static void v2_list(agent_cgroup_t *cg, void (*each)(void *ud, const char *name), void *ud) {
    char names[256][CG_NAME_MAX];
    int n = cg_subdirs(cg->tasks, names, 0, 256);
    for (int i = 0; i < n; i++) each(ud, names[i]);
}

const agent_cgroup_ops_t agent__cgroup_v2_ops = {
    .name = "v2", .create = v2_create, .stats = v2_stats, .kill = v2_kill, .watch = v2_watch,
    .rmdir = v2_rmdir, .busy = v2_busy, .list = v2_list, .outcome = v2_outcome};

/* Moves every process of ROOT into ROOT/agent, the agent first; repeats
 * while ROOT still lists one (a process may fork meanwhile), a bounded
 * number of times. 0, or -errno of the write that failed. */
static int v2_move_all(agent_cgroup_t *cg, const char *agentdir) {
    int rc = cg_write(&cg->fs, agentdir, "cgroup.procs", "0");
    if (rc != 0) return rc;
    for (int pass = 0; pass < 100; pass++) {
        pid_t pids[256];
        int n = cg_procs(cg->root, pids, 256);
        if (n <= 0) return n < 0 && n != -ENOENT ? n : 0;
        for (int i = 0; i < n && i < 256; i++) {
            char num[24];
            snprintf(num, sizeof num, "%d", (int)pids[i]);
            rc = cg_write(&cg->fs, agentdir, "cgroup.procs", num);
            if (rc != 0 && rc != -ESRCH) return rc;
        }
        if (cg->fs.fake) return 0;  /* a plain file never empties */
    }
    return -EBUSY;
}

int agent__cgroup_v2_open(agent_cgroup_t *cg, const char *mount, const char *root, char *err,
                          size_t errlen) {
    char rel[PATH_MAX], buf[512], agentdir[PATH_MAX + 8];
    const char *fix = "start the agent with systemd Delegate=yes or pass --cgroup-root";
    int rc;
    if (!cg_is_cgroup2(mount)) {
        if (!cg_exists(mount, "cgroup.controllers")) {
            snprintf(err, errlen,
                     "cgroup v2: %s is not a cgroup2 file system: pass --cgroup-mount the "
                     "cgroup2 mount, or --cgroup v1 or --cgroup none", mount);
            return -1;
        }
        cg->fs.fake = true;     /* a tree laid out like cgroupfs (tests) */
    }
    cg->bpf = !cg->fs.fake;
    size_t ml = strlen(mount);
    if (root) {
        /* Relative to the mount; an absolute path under it is accepted too. */
        const char *r = strncmp(root, mount, ml) == 0 && root[ml] == '/' ? root + ml : root;
        snprintf(rel, sizeof rel, "%s%s", r[0] == '/' ? "" : "/", r);
    } else if (cg_self_path(NULL, rel, sizeof rel) != 0) {
        snprintf(err, errlen, "cgroup v2: /proc/self/cgroup names no cgroup2 path: %s", fix);
        return -1;
    } else {
        /* An agent started again inside ROOT/agent: ROOT is the parent. */
        char *slash = strrchr(rel, '/');
        char tasks[PATH_MAX * 2];
        if (slash && strcmp(slash, "/agent") == 0) {
            *slash = '\0';
            snprintf(tasks, sizeof tasks, "%s%s/tasks", mount, rel);
            if (access(tasks, F_OK) != 0) *slash = '/';
        }
    }
    while (strlen(rel) > 1 && rel[strlen(rel) - 1] == '/') rel[strlen(rel) - 1] = '\0';
    if (snprintf(cg->root, sizeof cg->root, "%s%s", mount, strcmp(rel, "/") == 0 ? "" : rel) >=
        (int)sizeof cg->root) {
        snprintf(err, errlen, "cgroup v2: --cgroup-root: path too long");
        return -1;
    }
    struct stat st;
    if (stat(cg->root, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "cgroup v2: %s: %s: create it and delegate it to the agent, or %s",
                 cg->root, errno ? strerror(errno) : "not a directory", fix);
        return -1;
    }
    ssize_t n = cg_read(cg->root, "cgroup.controllers", buf, sizeof buf);
    if (n < 0) {
        snprintf(err, errlen, "cgroup v2: cannot read %s/cgroup.controllers: %s: %s", cg->root,
                 strerror((int)-n), fix);
        return -1;
    }
    static const char *const need[] = {"memory", "cpu", "pids"};
    for (size_t i = 0; i < 3; i++) {
        bool found = false;
        char copy[512], *save = NULL;
        snprintf(copy, sizeof copy, "%s", buf);
        for (char *w = strtok_r(copy, " \n", &save); w && !found; w = strtok_r(NULL, " \n", &save))
            found = strcmp(w, need[i]) == 0;
        if (!found) {
            snprintf(err, errlen,
                     "cgroup v2: %s controller not delegated to %s (cgroup.controllers lacks %s): %s",
                     need[i], cg->root, need[i], fix);
            return -1;
        }
    }
    /* Writable: the directory (for ROOT/agent and ROOT/tasks), its
     * cgroup.procs and cgroup.subtree_control (systemd's delegation chowns
     * exactly these to the service's user). */
    static const char *const files[] = {".", "cgroup.procs", "cgroup.subtree_control"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(agentdir, sizeof agentdir, "%s/%s", cg->root, files[i]);
        if (access(agentdir, W_OK) != 0) {
            snprintf(err, errlen, "cgroup v2: cannot write %s: %s: run the agent as the owner "
                     "of the delegated cgroup, or %s", i ? agentdir : cg->root, strerror(errno),
                     fix);
            return -1;
        }
    }
    /* One agent per root, before any process is moved or cgroup made. */
    if ((rc = cg_lock_dir(cg->root, "cgroup v2", &cg->lock_fd, err, errlen)) != 0)
        return rc == -EBUSY ? -EBUSY : -1;
    snprintf(agentdir, sizeof agentdir, "%s/agent", cg->root);
    if (mkdir(agentdir, 0755) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "cgroup v2: cannot create %s: %s: %s", agentdir, strerror(errno), fix);
        return -1;
    }
    if ((rc = v2_move_all(cg, agentdir)) != 0) {
        snprintf(err, errlen, "cgroup v2: cannot move the processes of %s into %s/cgroup.procs: "
                 "%s: %s", cg->root, agentdir, strerror(-rc), fix);
        return -1;
    }
    if ((rc = cg_write(&cg->fs, cg->root, "cgroup.subtree_control", V2_CONTROLLERS)) != 0) {
        snprintf(err, errlen, "cgroup v2: cannot write \"%s\" to %s/cgroup.subtree_control: %s: %s",
                 V2_CONTROLLERS, cg->root, strerror(-rc), fix);
        return -1;
    }
    snprintf(cg->tasks, sizeof cg->tasks, "%s/tasks", cg->root);
    if ((mkdir(cg->tasks, 0755) != 0 && errno != EEXIST) ||
        (rc = cg_write(&cg->fs, cg->tasks, "cgroup.subtree_control", V2_CONTROLLERS)) != 0) {
        snprintf(err, errlen, "cgroup v2: cannot set up %s (subtree_control \"%s\"): %s: %s",
                 cg->tasks, V2_CONTROLLERS, strerror(errno), fix);
        return -1;
    }
    cg->peak = cg->fs.fake || cg_exists(cg->tasks, "memory.peak");
    cg->swap = cg->fs.fake || cg_exists(cg->tasks, "memory.swap.max");
    char pids[32];
    if (cg->pids_max > 0)
        snprintf(pids, sizeof pids, "%lld", (long long)cg->pids_max);
    else
        snprintf(pids, sizeof pids, "max");
    snprintf(cg->describe, sizeof cg->describe,
             "cgroup v2: memory (hard 110%%, soft 90%%, %s), cpu quota, pids.max %s, %s, "
             "whole-task OOM kill (memory.oom.group); root %s, agent in %s",
             cg->swap ? "no swap" : "swap not limited: no memory.swap.max", pids,
             cg->bpf ? "devices (BPF: standard and the task's GPUs)"
                     : "devices NOT enforced (not a real cgroup2 mount)",
             cg->root, agentdir);
    return 0;
}
