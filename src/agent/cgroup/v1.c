/*
 * v1.c - the cgroup v1 backend (backend.h): one hierarchy per
 * controller, found in /proc/self/mountinfo.
 *
 * Layout: the agent's root ROOT (default /sluice/NODE, or --cgroup-root) in
 * the hierarchy of each controller (memory, cpu, cpuacct, pids, devices; a
 * hierarchy holding several, cpu,cpuacct, is set up once), each task at
 * ROOT/JOB.TASK. v1 lets processes live in any cgroup, so the agent and the
 * monitors stay where they were started.
 *
 * A task's files, in the order written (limits before the task joins):
 *   memory.limit_in_bytes       hard limit (110%)
 *   memory.memsw.limit_in_bytes the same (no swap), where swap accounting exists;
 *                               written after limit_in_bytes, which it may not undercut
 *   memory.soft_limit_in_bytes  soft limit (90%)
 *   cpu.cfs_period_us           100000
 *   cpu.cfs_quota_us            CPUs x period
 *   pids.max                    --pids-max
 *   devices.deny "a", then devices.allow per allowed device
 *
 * The pool (cgroup.h). A spare ROOT/pool.N gets, in each hierarchy, the
 * files above that every task shares - cpu.cfs_period_us, pids.max,
 * devices.deny "a" and an allow rule per standard device - its tasks files
 * opened and its OOM eventfd registered. A launch renames it to JOB.TASK in
 * each hierarchy (v1 renames a cgroup within its parent; the open tasks
 * files and the eventfd follow the cgroup, not its name), then writes the
 * memory limits, cfs_quota_us and an allow rule per GPU control file and
 * GPU of the task. A fresh cgroup has no memory or CPU limit, so a task
 * without a request of either gets none, as when its cgroup is made anew.
 *
 * OOM. v1 has no memory.oom.group: the kernel kills one process of the
 * cgroup. An eventfd registered on memory.oom_control through
 * cgroup.event_control becomes readable then, and the agent kills every
 * process left in the task's cgroup (agent_cgroup_task_kill), so the whole
 * task goes. The count comes from memory.oom_control's oom_kill (kernel
 * 4.13+), else from memory.failcnt > 0 with the usage at the limit.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup/backend.h"
#include "osutil.h"

static const char *const v1_ctl[CG1_N] = {"memory", "cpu", "cpuacct", "pids", "devices"};

static void v1_dir(const agent_cgroup_t *cg, int c, const char *name, char *out, size_t len) {
    snprintf(out, len, "%s/%s", cg->dirs[c], name);
}

/* Removes name in every hierarchy (directories that are missing are fine). */
static int v1_rmdir(agent_cgroup_t *cg, const char *name) {
    int rc = 0;
    for (int c = 0; c < CG1_N; c++) {
        if (cg->hier[c] != c) continue;
        char dir[PATH_MAX];
        v1_dir(cg, c, name, dir, sizeof dir);
        if (rmdir(dir) != 0 && errno != ENOENT) rc = -errno;
    }
    return rc;
}

static int v1_watch(agent_cgroup_t *cg, const char *name) {
    char dir[PATH_MAX], path[PATH_MAX + 32], line[64];
    v1_dir(cg, CG1_MEMORY, name, dir, sizeof dir);
    snprintf(path, sizeof path, "%s/memory.oom_control", dir);
    int ofd = open(path, O_RDONLY | O_CLOEXEC);
    if (ofd < 0) return -errno;
    int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (efd < 0) {
        int e = errno;
        close(ofd);
        return -e;
    }
    snprintf(line, sizeof line, "%d %d", efd, ofd);
    int rc = cg_write(&cg->fs, dir, "cgroup.event_control", line);
    /* The registration holds the eventfd, not the control file. */
    close(ofd);
    if (rc != 0) {
        close(efd);
        return rc;
    }
    return efd;
}

/* Writes the task's limits into its cgroup's directories: memory (hard,
 * memsw where swap is accounted, soft) and the CPU quota, and into a
 * cgroup made now (fresh) also what a spare has already (the CPU period
 * before the quota, pids.max). 0, or the errno with *bad and *file naming
 * the controller and file that refused. */
static int v1_write_limits(agent_cgroup_t *cg, char dir[CG1_N][PATH_MAX],
                           const agent_cgroup_limits_t *lim, bool fresh, int *bad,
                           const char **file) {
    struct {
        int ctl;
        const char *file;
        int64_t v;
        bool on;
    } w[] = {
        {CG1_MEMORY, "memory.limit_in_bytes", lim->mem_max, lim->mem_max > 0},
        {CG1_MEMORY, "memory.memsw.limit_in_bytes", lim->mem_max, lim->mem_max > 0 && cg->memsw},
        {CG1_MEMORY, "memory.soft_limit_in_bytes", lim->mem_low, lim->mem_max > 0},
        {CG1_CPU, "cpu.cfs_period_us", AGENT_CGROUP_CPU_PERIOD_US, fresh && lim->cpu_quota_us > 0},
        {CG1_CPU, "cpu.cfs_quota_us", lim->cpu_quota_us, lim->cpu_quota_us > 0},
        {CG1_PIDS, "pids.max", lim->pids_max > 0 ? lim->pids_max : -1, fresh},
    };
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
        if (!w[i].on) continue;
        int rc = cg_write_i64(&cg->fs, dir[w[i].ctl], w[i].file, w[i].v);
        if (rc != 0) {
            *bad = w[i].ctl;
            *file = w[i].file;
            return rc;
        }
    }
    return 0;
}

static int v1_create(agent_cgroup_t *cg, const char *name, const agent_cgroup_limits_t *lim,
                     agent_cgroup_task_t *ct, char *reason, size_t rlen) {
    char dir[CG1_N][PATH_MAX], line[64];
    const char *file = NULL;
    int c, rc = 0, bad = CG1_MEMORY;
    for (c = 0; c < CG1_N; c++) {
        v1_dir(cg, cg->hier[c], name, dir[c], sizeof dir[c]);
        if (cg->hier[c] != c) continue;
        if (mkdir(dir[c], 0755) != 0) {
            rc = -errno;
            bad = c;
            file = "";
            goto fail;
        }
    }
    if ((rc = v1_write_limits(cg, dir, lim, true, &bad, &file)) != 0) goto fail;
    bad = CG1_DEVICES;
    file = "devices.deny";
    if ((rc = cg_write(&cg->fs, dir[CG1_DEVICES], file, "a")) != 0) goto fail;
    file = "devices.allow";
    for (size_t i = 0; i < lim->ndev; i++) {
        cg_dev_format(&lim->dev[i], line, sizeof line);
        if ((rc = cg_write(&cg->fs, dir[CG1_DEVICES], file, line)) != 0) goto fail;
    }
    file = "cgroup.procs";
    for (c = 0; c < CG1_N; c++) {
        if (cg->hier[c] != c) continue;
        bad = c;
        /* "tasks", not cgroup.procs: the task's child writes "0" while it
         * is single-threaded (right after fork), so moving its one thread
         * moves the process; and a thread's own move does not take the
         * global cgroup_threadgroup_rwsem for writing, whose RCU grace
         * period made each cgroup.procs write cost 5-20 ms on these hosts
         * when launches are not back to back. */
        int fd = cg_open_procs(&cg->fs, dir[c], "tasks");
        if (fd < 0) {
            rc = fd;
            goto fail;
        }
        ct->procs[ct->nprocs++] = fd;
    }
    bad = CG1_MEMORY;
    file = "cgroup.event_control";
    if (lim->mem_max > 0) {
        if ((ct->oom_fd = v1_watch(cg, name)) < 0) {
            rc = ct->oom_fd;
            ct->oom_fd = -1;
            goto fail;
        }
    }
    return 0;
fail:
    snprintf(reason, rlen, "cgroup v1: cannot %s %s%s%s: %s", file[0] ? "write" : "create",
             dir[bad], file[0] ? "/" : "", file, strerror(-rc));
    for (size_t i = 0; i < ct->nprocs; i++) close(ct->procs[i]);
    ct->nprocs = 0;
    v1_rmdir(cg, name);
    return -1;
}

static int v1_stats(agent_cgroup_t *cg, const char *name, agent_cgroup_stats_t *out) {
    char dir[PATH_MAX];
    int64_t v;
    v1_dir(cg, CG1_MEMORY, name, dir, sizeof dir);
    int rc = cg_read_i64(dir, "memory.usage_in_bytes", &out->mem_current);
    if (rc != 0) return rc;
    if (cg_read_i64(dir, "memory.max_usage_in_bytes", &out->mem_peak) != 0) out->mem_peak = -1;
    if (cg_read_i64(dir, "memory.limit_in_bytes", &v) == 0)
        /* An unlimited v1 cgroup reads as a huge page-rounded number. */
        out->mem_limit = v > 0 && v < INT64_C(1) << 62 ? v : 0;
    if (cg_read_key(dir, "memory.oom_control", "oom_kill", &out->oom_kills) != 0) {
        int64_t fail = 0;
        out->oom_kills = cg_read_i64(dir, "memory.failcnt", &fail) == 0 && fail > 0 &&
                         out->mem_limit > 0 && out->mem_peak >= out->mem_limit;
    }
    v1_dir(cg, CG1_CPUACCT, name, dir, sizeof dir);
    if (cg_read_i64(dir, "cpuacct.usage", &v) == 0) out->cpu_usec = v / 1000;
    return 0;
}

/* Closes sp's descriptors. */
static void v1_spare_close(agent_cgroup_spare_t *sp) {
    for (size_t i = 0; i < sp->nprocs; i++) close(sp->procs[i]);
    sp->nprocs = 0;
    if (sp->oom_fd >= 0) close(sp->oom_fd);
    sp->oom_fd = -1;
}

static void v1_spare_drop(agent_cgroup_t *cg, agent_cgroup_spare_t *sp) {
    v1_spare_close(sp);
    v1_rmdir(cg, sp->name);
}

static int v1_spare_make(agent_cgroup_t *cg, agent_cgroup_spare_t *sp) {
    char dir[CG1_N][PATH_MAX], line[64];
    int c, rc = 0;
    sp->nprocs = 0;
    sp->oom_fd = -1;
    for (c = 0; c < CG1_N; c++) {
        v1_dir(cg, cg->hier[c], sp->name, dir[c], sizeof dir[c]);
        if (cg->hier[c] == c && mkdir(dir[c], 0755) != 0) {
            rc = -errno;
            goto fail;
        }
    }
    if ((rc = cg_write_i64(&cg->fs, dir[CG1_CPU], "cpu.cfs_period_us",
                           AGENT_CGROUP_CPU_PERIOD_US)) != 0 ||
        (rc = cg_write_i64(&cg->fs, dir[CG1_PIDS], "pids.max",
                           cg->pids_max > 0 ? cg->pids_max : -1)) != 0 ||
        (rc = cg_write(&cg->fs, dir[CG1_DEVICES], "devices.deny", "a")) != 0)
        goto fail;
    for (size_t i = 0; i < cg->nstd_dev; i++) {
        cg_dev_format(&cg->std_dev[i], line, sizeof line);
        if ((rc = cg_write(&cg->fs, dir[CG1_DEVICES], "devices.allow", line)) != 0) goto fail;
    }
    for (c = 0; c < CG1_N; c++) {
        if (cg->hier[c] != c) continue;
        int fd = cg_open_procs(&cg->fs, dir[c], "tasks");  /* "tasks": see v1_create */
        if (fd < 0) {
            rc = fd;
            goto fail;
        }
        sp->procs[sp->nprocs++] = fd;
    }
    if ((sp->oom_fd = v1_watch(cg, sp->name)) < 0) {
        rc = sp->oom_fd;
        sp->oom_fd = -1;
        goto fail;
    }
    return 0;
fail:
    v1_spare_drop(cg, sp);
    return rc;
}

static int v1_spare_claim(agent_cgroup_t *cg, agent_cgroup_spare_t *sp, const char *name,
                          const agent_cgroup_limits_t *lim, agent_cgroup_task_t *ct,
                          char *reason, size_t rlen) {
    char from[PATH_MAX], dir[CG1_N][PATH_MAX], line[64];
    const char *file = "";
    int c, rc = 0, bad = CG1_MEMORY;
    for (c = 0; c < CG1_N; c++) {
        v1_dir(cg, cg->hier[c], name, dir[c], sizeof dir[c]);
        if (cg->hier[c] != c) continue;
        v1_dir(cg, c, sp->name, from, sizeof from);
        /* A leftover JOB.TASK of an earlier attempt (an agent killed before
         * removing it) refuses the rename with EEXIST: remove it, retry. */
        if (rename(from, dir[c]) != 0 &&
            (errno != EEXIST || rmdir(dir[c]) != 0 || rename(from, dir[c]) != 0)) {
            rc = -errno;
            bad = c;
            goto fail;
        }
    }
    if ((rc = v1_write_limits(cg, dir, lim, false, &bad, &file)) != 0) goto fail;
    bad = CG1_DEVICES;
    file = "devices.allow";
    for (size_t i = cg->nstd_dev; i < lim->ndev; i++) {
        cg_dev_format(&lim->dev[i], line, sizeof line);
        if ((rc = cg_write(&cg->fs, dir[CG1_DEVICES], file, line)) != 0) goto fail;
    }
    /* The kernel notifies every cgroup below one that hit its memory limit,
     * so an OOM of the root while this was a spare may have counted on its
     * eventfd: drop that count (a read of the non-blocking eventfd). */
    uint64_t stale;
    if (lim->mem_max > 0 && read(sp->oom_fd, &stale, sizeof stale) < 0 && errno != EAGAIN) {
        rc = -errno;
        bad = CG1_MEMORY;
        file = "cgroup.event_control";
        goto fail;
    }
    memcpy(ct->procs, sp->procs, sp->nprocs * sizeof sp->procs[0]);
    ct->nprocs = sp->nprocs;
    sp->nprocs = 0;
    /* Without a limit of its own the task is not watched (v1_create): an
     * OOM its ancestors' limit causes is theirs to handle. */
    if (lim->mem_max > 0) {
        ct->oom_fd = sp->oom_fd;
        sp->oom_fd = -1;
    }
    v1_spare_close(sp);
    return 0;
fail:
    snprintf(reason, rlen, "cgroup v1: cannot %s %s%s%s: %s",
             file[0] ? "write" : "rename a spare cgroup to", dir[bad], file[0] ? "/" : "", file,
             strerror(-rc));
    v1_spare_drop(cg, sp);
    v1_rmdir(cg, name);
    return -1;
}

static int v1_outcome(agent_cgroup_t *cg, const char *name, agent_cgroup_stats_t *out) {
    char dir[PATH_MAX];
    int64_t v;
    v1_dir(cg, CG1_MEMORY, name, dir, sizeof dir);
    int rc = cg_read_i64(dir, "memory.max_usage_in_bytes", &out->mem_peak);
    if (rc != 0) return rc;
    if (out->mem_limit <= 0 && cg_read_i64(dir, "memory.limit_in_bytes", &v) == 0)
        out->mem_limit = v > 0 && v < INT64_C(1) << 62 ? v : 0;
    if (cg_read_key(dir, "memory.oom_control", "oom_kill", &out->oom_kills) != 0) {
        /* Before kernel 4.13: no oom_kill line. */
        int64_t fail = 0;
        out->oom_kills = cg_read_i64(dir, "memory.failcnt", &fail) == 0 && fail > 0 &&
                         out->mem_limit > 0 && out->mem_peak >= out->mem_limit;
    }
    return 0;
}

static int v1_kill(agent_cgroup_t *cg, const char *name) {
    char dir[PATH_MAX];
    int rc = -ENOENT;
    /* Every hierarchy: a process that left one (it cannot, unprivileged)
     * is still caught in another. */
    for (int c = 0; c < CG1_N; c++) {
        if (cg->hier[c] != c) continue;
        v1_dir(cg, c, name, dir, sizeof dir);
        int n = cg_kill_procs(dir);
        if (n >= 0) rc = 0;
    }
    return rc;
}

static bool v1_busy(agent_cgroup_t *cg, const char *name) {
    char dir[PATH_MAX];
    pid_t p;
    for (int c = 0; c < CG1_N; c++) {
        if (cg->hier[c] != c) continue;
        v1_dir(cg, c, name, dir, sizeof dir);
        if (cg_procs(dir, &p, 1) > 0) return true;
    }
    return false;
}

static void v1_list(agent_cgroup_t *cg, void (*each)(void *ud, const char *name), void *ud) {
    /* Names from every hierarchy: a leftover may exist in some only. */
    char seen[256][CG_NAME_MAX];
    int n = 0;
    for (int c = 0; c < CG1_N; c++)
        if (cg->hier[c] == c) n = cg_subdirs(cg->dirs[c], seen, n, 256);
    for (int i = 0; i < n; i++) each(ud, seen[i]);
}

const agent_cgroup_ops_t agent__cgroup_v1_ops = {
    .name = "v1", .create = v1_create, .stats = v1_stats, .kill = v1_kill, .watch = v1_watch,
    .rmdir = v1_rmdir, .busy = v1_busy, .list = v1_list, .spare_make = v1_spare_make,
    .spare_claim = v1_spare_claim, .spare_drop = v1_spare_drop, .outcome = v1_outcome};

int agent__cgroup_v1_open(agent_cgroup_t *cg, const char *root, const char *node, char *err,
                          size_t errlen) {
    char mnt[CG1_N][PATH_MAX];
    if (root)
        snprintf(cg->root, sizeof cg->root, "%s%s", root[0] == '/' ? "" : "/", root);
    else
        snprintf(cg->root, sizeof cg->root, "/sluice/%s", node);
    for (int c = 0; c < CG1_N; c++) {
        if (cg_find_mount("cgroup", v1_ctl[c], mnt[c], sizeof mnt[c]) != 0) {
            snprintf(err, errlen,
                     "cgroup v1: the %s controller is not mounted (no cgroup file system with "
                     "option %s in /proc/self/mountinfo): mount it, or start the agent with "
                     "--cgroup v2 or --cgroup none", v1_ctl[c], v1_ctl[c]);
            return -1;
        }
        cg->hier[c] = c;
        for (int p = 0; p < c; p++)
            if (strcmp(mnt[p], mnt[c]) == 0) {
                cg->hier[c] = p;
                break;
            }
        snprintf(cg->dirs[c], sizeof cg->dirs[c], "%s%s", mnt[c], cg->root);
    }
    for (int c = 0; c < CG1_N; c++) {
        if (cg->hier[c] != c) continue;
        /* An explicit root must exist (the operator made and owns it); the
         * default one is the agent's to make. */
        struct stat st;
        if (root && stat(cg->dirs[c], &st) != 0) {
            snprintf(err, errlen,
                     "cgroup v1: --cgroup-root %s: %s: %s (create it in every controller's "
                     "hierarchy, or leave --cgroup-root out for /sluice/NODE)", root, cg->dirs[c],
                     strerror(errno));
            return -1;
        }
        if (!root && sl_fs_mkdirs(cg->dirs[c]) != 0) {
            snprintf(err, errlen, "cgroup v1: cannot create %s: %s (run the agent as root, or "
                     "pass --cgroup-root a cgroup it may write, or --cgroup none)", cg->dirs[c],
                     strerror(errno));
            return -1;
        }
        if (access(cg->dirs[c], W_OK) != 0) {
            snprintf(err, errlen, "cgroup v1: cannot write %s: %s (run the agent as root, or "
                     "pass --cgroup-root a cgroup it may write, or --cgroup none)", cg->dirs[c],
                     strerror(errno));
            return -1;
        }
    }
    /* One agent per root, before anything under it is touched (the
     * restart clean-up and the pool come later): the root of the memory
     * hierarchy stands for every hierarchy's. */
    int rc = cg_lock_dir(cg->dirs[CG1_MEMORY], "cgroup v1", &cg->lock_fd, err, errlen);
    if (rc != 0) return rc == -EBUSY ? -EBUSY : -1;
    cg->memsw = cg_exists(cg->dirs[CG1_MEMORY], "memory.memsw.limit_in_bytes");
    char pids[32];
    if (cg->pids_max > 0)
        snprintf(pids, sizeof pids, "%lld", (long long)cg->pids_max);
    else
        snprintf(pids, sizeof pids, "max");
    snprintf(cg->describe, sizeof cg->describe,
             "cgroup v1: memory (hard 110%%, soft 90%%, %s), cpu quota, pids.max %s, devices "
             "(standard and the task's GPUs), whole-task OOM kill; root %s",
             cg->memsw ? "no swap" : "swap not limited: no memory.memsw", pids, cg->root);
    return 0;
}
