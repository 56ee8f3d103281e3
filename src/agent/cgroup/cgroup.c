/*
 * cgroup.c - per-task enforcement: the choice of backend and what every
 * backend shares (cgroup.h).
 *
 * Choice (agent_cgroup_open). "auto" takes v2 when the --cgroup-mount is a
 * cgroup2 file system whose delegated root offers memory, cpu and pids,
 * else v1 when the v1 memory controller is mounted and its root writable,
 * else none, and says why; an explicit "v2" or "v1" that cannot be honoured
 * is an error, so an operator who asked for enforcement never silently runs
 * without it.
 *
 * Limits (docs/enforcement.md). From the launch's mem_bytes M: hard
 * 110% M, soft 90% M, each rounded down to a whole 4 KiB page, as the
 * kernel stores them (so that what the agent writes is what it reads back
 * and reports); from cpu_milli C: a quota of C x 100 us per 100 ms period
 * (C/1000 CPUs), at least the kernel's 1 ms; pids.max from the flag; 0
 * (M or C) means no limit of that kind. Devices: runc's defaults (null,
 * zero, full, random, urandom, tty, ptmx, pts, net/tun), plus for a task
 * with GPUs the shared NVIDIA control files present on the node
 * (nvidiactl, nvidia-uvm, nvidia-uvm-tools, nvidia-modeset) and the device
 * file of each of its GPUs: /dev/nvidiaI, or file I of --gpu-device-files.
 * Files are matched by major:minor, read once at start-up. Every other
 * device, another task's GPU above all, is denied.
 *
 * Names. A task's cgroup is named by the tasks layer ("JOB.TASK", or
 * "INSTANCE.JOB.TASK" under a cluster instance: task.h) under the root
 * (v1.c, v2.c), so a restarted agent finds it from state.json, and
 * leftovers are every name it does not claim.
 *
 * Housekeeping (agent_cgroup_housekeep), which the agent runs when it is
 * idle: the removal of ended tasks' cgroups (queued by
 * agent_cgroup_task_remove_later once their outcome is recorded), then the
 * pool's spares. Neither sits between one task's end and the next task's
 * start.
 *
 * The pool (cgroup.h). Spares "pool.N" (N counting up from 1 in each run
 * of the agent) are made by agent_cgroup_housekeep and taken oldest first
 * by agent_cgroup_task_create, which renames the spare to JOB.TASK; a
 * launch finding the pool empty (the first ones, or faster than the fills)
 * makes its cgroup anew. Each spare is used once. A spare holds no process
 * until its task joins it under its task's name, so a restarted agent's
 * clean-up, which removes every empty cgroup not named after a task it
 * re-adopted, removes a dead agent's spares too; the pool is refilled
 * after the clean-up.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cgroup/backend.h"
#include "log.h"
#include "sluice/error.h"

/* runc's default device allow list, less its "mknod anything" rules. */
static const cg_dev_rule_t std_devices[] = {
    {'c', 1, 3, "rwm"},   /* null */
    {'c', 1, 5, "rwm"},   /* zero */
    {'c', 1, 7, "rwm"},   /* full */
    {'c', 1, 8, "rwm"},   /* random */
    {'c', 1, 9, "rwm"},   /* urandom */
    {'c', 5, 0, "rwm"},   /* tty */
    {'c', 5, 2, "rwm"},   /* ptmx */
    {'c', 136, -1, "rwm"}, /* pts/N */
    {'c', 10, 200, "rwm"}, /* net/tun */
};

static const char *const gpu_ctl_files[] = {"/dev/nvidiactl", "/dev/nvidia-uvm",
                                            "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset"};

static const agent_cgroup_ops_t none_ops = {.name = "none"};

/* x * num / 10, rounded down to a page, without overflow for any x >= 0. */
static int64_t pct_pages(int64_t x, int64_t num) {
    int64_t v = x / 10 * num + x % 10 * num / 10;
    return v / 4096 * 4096;
}

/* Stats the GPU device files: --gpu-device-files or /dev/nvidiaI. A file
 * the flag names must be a device; a default one may be missing (declared
 * GPUs on a machine without them: nothing to allow). */
static int load_gpu_devices(agent_cgroup_t *cg, const agent_cgroup_config_t *cfg, char *err,
                            size_t errlen) {
    int n = cfg->ngpus > 0 ? cfg->ngpus : 0;
    char *list = cfg->gpu_files ? strdup(cfg->gpu_files) : NULL, *save = NULL;
    char *tok = list ? strtok_r(list, ",", &save) : NULL;
    cg->gpu_dev = calloc(n ? (size_t)n : 1, sizeof *cg->gpu_dev);
    if (!cg->gpu_dev || (cfg->gpu_files && !list)) abort();
    cg->ngpu_dev = (size_t)n;
    for (int i = 0; i < n; i++) cg->gpu_dev[i].major = -1;   /* no file (yet) */
    int rc = 0;
    for (int i = 0; i < n; i++) {
        char path[64];
        if (list && !tok) break;    /* fewer files than GPUs: the rest have none */
        if (!list) snprintf(path, sizeof path, "/dev/nvidia%d", i);
        int r = cg_dev_rule(list ? tok : path, &cg->gpu_dev[i]);
        if (r != 0) {
            cg->gpu_dev[i].major = -1;
            if (list) {
                snprintf(err, errlen, "--gpu-device-files: %s (GPU %d): %s", tok, i,
                         r == -ENODEV ? "not a device file" : strerror(-r));
                rc = -1;
                break;
            }
        }
        if (list) tok = strtok_r(NULL, ",", &save);
    }
    free(list);
    for (size_t i = 0; i < sizeof gpu_ctl_files / sizeof gpu_ctl_files[0]; i++)
        if (cg_dev_rule(gpu_ctl_files[i], &cg->ctl_dev[cg->nctl_dev]) == 0) cg->nctl_dev++;
    memcpy(cg->std_dev, std_devices, sizeof std_devices);
    cg->nstd_dev = sizeof std_devices / sizeof std_devices[0];
    return rc;
}

int agent_cgroup_open(const agent_cgroup_config_t *cfg, agent_cgroup_t **out, char *err,
                      size_t errlen) {
    agent_cgroup_t *cg = calloc(1, sizeof *cg);
    if (!cg) abort();
    const char *mode = cfg->mode ? cfg->mode : "auto";
    const char *mount = cfg->mount ? cfg->mount : "/sys/fs/cgroup";
    cg->fs.trace = cfg->trace;
    cg->fs.trace_ud = cfg->trace_ud;
    cg->pids_max = cfg->pids_max;
    cg->ops = &none_ops;
    cg->lock_fd = -1;
    int rc = -1;
    if (strcmp(mode, "auto") != 0 && strcmp(mode, "v2") != 0 && strcmp(mode, "v1") != 0 &&
        strcmp(mode, "none") != 0) {
        snprintf(err, errlen, "--cgroup: \"%s\" is not one of v2, v1, none, auto", mode);
        goto fail;
    }
    if (strcmp(mode, "none") != 0 && load_gpu_devices(cg, cfg, err, errlen) != 0) goto fail;
    char why2[512] = "", why1[512] = "";
    if (strcmp(mode, "v2") == 0 || (strcmp(mode, "auto") == 0 && cg_is_cgroup2(mount))) {
        int r2 = agent__cgroup_v2_open(cg, mount, cfg->root, why2, sizeof why2);
        if (r2 == 0) {
            cg->ops = &agent__cgroup_v2_ops;
            goto done;
        }
        if (strcmp(mode, "v2") == 0 || r2 == -EBUSY) { /* another agent's root: never "none" */
            rc = r2 == -EBUSY ? SL_EBUSY : -1;
            snprintf(err, errlen, "%s", why2);
            goto fail;
        }
        if (cg->lock_fd >= 0) close(cg->lock_fd); /* auto goes on to v1 */
        cg->lock_fd = -1;
    } else if (strcmp(mode, "auto") == 0) {
        snprintf(why2, sizeof why2, "cgroup v2: %s is not a cgroup2 file system", mount);
    }
    if (strcmp(mode, "v1") == 0 || strcmp(mode, "auto") == 0) {
        cg->fs.fake = false;
        int r1 = agent__cgroup_v1_open(cg, cfg->root, cfg->node, why1, sizeof why1);
        if (r1 == 0) {
            cg->ops = &agent__cgroup_v1_ops;
            cg->own_root = cfg->root == NULL;
            goto done;
        }
        if (strcmp(mode, "v1") == 0 || r1 == -EBUSY) {
            rc = r1 == -EBUSY ? SL_EBUSY : -1;
            snprintf(err, errlen, "%s", why1);
            goto fail;
        }
    }
    if (strcmp(mode, "auto") == 0)
        snprintf(cg->describe, sizeof cg->describe,
                 "cgroup none: tasks run WITHOUT memory, CPU or device limits (%s; %s)", why2,
                 why1);
    else
        snprintf(cg->describe, sizeof cg->describe,
                 "cgroup none: tasks run without memory, CPU or device limits (--cgroup none)");
done:
    /* By default one spare a GPU (a wave of GPU tasks ending together is
     * followed by as many launches), at least 2. */
    int pool = cfg->pool >= 0 ? cfg->pool : cfg->ngpus > 2 ? cfg->ngpus : 2;
    if (cg->ops->spare_make && pool > 0) {
        cg->pool_size = pool < AGENT_CGROUP_POOL_MAX ? pool : AGENT_CGROUP_POOL_MAX;
        size_t n = strlen(cg->describe);
        snprintf(cg->describe + n, sizeof cg->describe - n, "; %d spare task cgroup%s made ahead",
                 cg->pool_size, cg->pool_size == 1 ? "" : "s");
    }
    *out = cg;
    return 0;
fail:
    if (cg->lock_fd >= 0) close(cg->lock_fd);
    free(cg->gpu_dev);
    free(cg);
    return rc;
}

void agent_cgroup_close(agent_cgroup_t *cg) {
    if (!cg) return;
    for (int i = 0; i < cg->npool; i++) cg->ops->spare_drop(cg, &cg->pool[i]);
    cg->npool = 0;
    agent_cgroup_housekeep(cg, cg->nremoving);
    if (cg->own_root) {
        /* The default /sluice/NODE goes once it holds no task (rmdir
         * fails harmlessly while one runs), and /sluice with it when no
         * other agent's root is left there. */
        for (int c = 0; c < CG1_N; c++) {
            if (cg->hier[c] != c) continue;
            if (rmdir(cg->dirs[c]) == 0) {
                char *slash = strrchr(cg->dirs[c], '/');
                if (slash) *slash = '\0';
                rmdir(cg->dirs[c]);
            }
        }
    }
    if (cg->lock_fd >= 0) close(cg->lock_fd);
    free(cg->gpu_dev);
    free(cg);
}

const char *agent_cgroup_kind(const agent_cgroup_t *cg) {
    return cg->ops->name;
}

const char *agent_cgroup_describe(const agent_cgroup_t *cg) {
    return cg->describe;
}

static void remove_logged(agent_cgroup_t *cg, const char *name);
static int remove_name(agent_cgroup_t *cg, const char *name);

int agent_cgroup_task_create(agent_cgroup_t *cg, const char *name, int64_t mem_bytes,
                             int64_t cpu_milli, const int32_t *gpus, size_t ngpus,
                             agent_cgroup_task_t *ct, char *reason, size_t rlen) {
    return agent_cgroup_task_create_limits(cg, name, mem_bytes, 0, cpu_milli, 0, gpus, ngpus, ct,
                                           reason, rlen);
}

int agent_cgroup_task_create_limits(agent_cgroup_t *cg, const char *name, int64_t mem_bytes,
                                    int64_t mem_limit, int64_t cpu_milli, int64_t cpu_limit,
                                    const int32_t *gpus, size_t ngpus, agent_cgroup_task_t *ct,
                                    char *reason, size_t rlen) {
    memset(ct, 0, sizeof *ct);
    ct->oom_fd = -1;
    if (!cg->ops->create) return 0;
    if (strlen(name) >= CG_NAME_MAX) {
        snprintf(reason, rlen, "cgroup name %s is too long", name);
        return -1;
    }
    cg_dev_rule_t dev[16 + 8 + 64];
    size_t ndev = 0;
    for (size_t i = 0; i < cg->nstd_dev; i++) dev[ndev++] = cg->std_dev[i];
    for (size_t i = 0; ngpus > 0 && i < cg->nctl_dev; i++) dev[ndev++] = cg->ctl_dev[i];
    for (size_t i = 0; i < ngpus && ndev < sizeof dev / sizeof dev[0]; i++)
        if (gpus[i] >= 0 && (size_t)gpus[i] < cg->ngpu_dev && cg->gpu_dev[gpus[i]].major >= 0)
            dev[ndev++] = cg->gpu_dev[gpus[i]];
    agent_cgroup_limits_t lim = {
        .mem_max = mem_limit > mem_bytes ? pct_pages(mem_limit, 10)
                   : mem_bytes > 0           ? pct_pages(mem_bytes, 11)
                                             : 0,
        .mem_low = mem_bytes > 0 ? pct_pages(mem_bytes, 9) : 0,
        .cpu_quota_us = cpu_limit > cpu_milli ? cpu_limit * (AGENT_CGROUP_CPU_PERIOD_US / 1000)
                        : cpu_milli > 0       ? cpu_milli * (AGENT_CGROUP_CPU_PERIOD_US / 1000)
                                              : 0,
        .pids_max = cg->pids_max, .dev = dev, .ndev = ndev};
    /* A request below one page still gets a limit, not "none". */
    if (mem_bytes > 0 && lim.mem_max == 0) lim.mem_max = 4096;
    if (lim.cpu_quota_us > 0 && lim.cpu_quota_us < 1000) lim.cpu_quota_us = 1000;
    /* The cgroup of an earlier attempt of this task may still wait for its
     * removal: it goes now, before the new one takes its name. */
    for (int i = 0; i < cg->nremoving; i++) {
        if (strcmp(cg->removing[i], name) != 0) continue;
        memmove(cg->removing[i], cg->removing[i + 1],
                (size_t)(--cg->nremoving - i) * sizeof cg->removing[0]);
        remove_logged(cg, name);
        break;
    }
    /* A leftover of an earlier attempt (an agent killed before removing
     * it) would refuse mkdir and the spare's rename. */
    cg->ops->rmdir(cg, name);
    if (cg->npool > 0) {
        /* The oldest spare; the claim removes it whatever happens. */
        agent_cgroup_spare_t sp = cg->pool[0];
        memmove(&cg->pool[0], &cg->pool[1], (size_t)--cg->npool * sizeof cg->pool[0]);
        if (cg->ops->spare_claim(cg, &sp, name, &lim, ct, reason, rlen) != 0) return -1;
    } else {
        if (cg->ops->create(cg, name, &lim, ct, reason, rlen) != 0) return -1;
    }
    ct->mem_limit = lim.mem_max;
    return 0;
}

/* Makes one spare for the pool; 0 or -errno (logged once). */
static int pool_add(agent_cgroup_t *cg) {
    agent_cgroup_spare_t *sp = &cg->pool[cg->npool];
    snprintf(sp->name, sizeof sp->name, "pool.%u", ++cg->pool_seq);
    int rc = cg->ops->spare_make(cg, sp);
    if (rc != 0) {
        if (!cg->pool_warned)
            sl_log(SL_LOG_WARN, "agent", "cannot make the spare task cgroup %s: %s (launches "
                   "make their cgroups themselves)", sp->name, strerror(-rc));
        cg->pool_warned = true;
        return rc;
    }
    cg->npool++;
    return 0;
}

/* Removes name now, logging a failure. */
static void remove_logged(agent_cgroup_t *cg, const char *name) {
    int rc = remove_name(cg, name);
    if (rc != 0)
        sl_log(SL_LOG_WARN, "agent", "cgroup %s of an ended task cannot be removed: %s", name,
               strerror(-rc));
}

void agent_cgroup_task_remove_later(agent_cgroup_t *cg, const char *name) {
    if (!cg || !cg->ops->rmdir || strlen(name) >= CG_NAME_MAX) return;
    for (int i = 0; i < cg->nremoving; i++)
        if (strcmp(cg->removing[i], name) == 0) return;
    if (cg->nremoving == (int)(sizeof cg->removing / sizeof cg->removing[0])) {
        remove_logged(cg, name);
        return;
    }
    snprintf(cg->removing[cg->nremoving++], CG_NAME_MAX, "%s", name);
}

int agent_cgroup_housekeep(agent_cgroup_t *cg, int max) {
    int done = 0;
    while (cg && done < max && cg->nremoving > 0) {
        char name[CG_NAME_MAX];
        snprintf(name, sizeof name, "%s", cg->removing[--cg->nremoving]);
        remove_logged(cg, name);
        done++;
    }
    while (cg && done < max && cg->npool < cg->pool_size && pool_add(cg) == 0) done++;
    return done;
}

bool agent_cgroup_housekeeping_due(const agent_cgroup_t *cg) {
    return cg && (cg->nremoving > 0 || (cg->npool < cg->pool_size && !cg->pool_warned));
}

int agent_cgroup_task_outcome(agent_cgroup_t *cg, const char *name, agent_cgroup_stats_t *out) {
    int64_t limit = out->mem_limit > 0 ? out->mem_limit : 0;
    memset(out, 0, sizeof *out);
    out->mem_peak = -1;
    out->mem_limit = limit;
    if (!cg->ops->outcome) return -ENOENT;
    return cg->ops->outcome(cg, name, out);
}

void agent_cgroup_task_release(agent_cgroup_task_t *ct) {
    for (size_t i = 0; i < ct->nprocs; i++) close(ct->procs[i]);
    ct->nprocs = 0;
}

int agent_cgroup_task_stats(agent_cgroup_t *cg, const char *name, agent_cgroup_stats_t *out) {
    memset(out, 0, sizeof *out);
    out->mem_peak = -1;
    if (!cg->ops->stats) return -ENOENT;
    return cg->ops->stats(cg, name, out);
}

int agent_cgroup_task_kill(agent_cgroup_t *cg, const char *name) {
    if (!cg->ops->kill) return -ENOENT;
    return cg->ops->kill(cg, name);
}

int agent_cgroup_task_watch(agent_cgroup_t *cg, const char *name) {
    if (!cg->ops->watch) return -ENOTSUP;
    return cg->ops->watch(cg, name);
}

/* rmdir, and while a process keeps it busy, kill and retry: up to 50
 * tries 2 ms apart (a killed process leaves its cgroup once its parent,
 * the monitor or init, has reaped it). */
static int remove_name(agent_cgroup_t *cg, const char *name) {
    int rc = 0;
    for (int i = 0; i < 50; i++) {
        rc = cg->ops->rmdir(cg, name);
        if (rc != -EBUSY) return rc;
        cg->ops->kill(cg, name);
        struct timespec ts = {0, 2 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return rc;
}

int agent_cgroup_task_remove(agent_cgroup_t *cg, const char *name) {
    if (!cg->ops->rmdir) return 0;
    int rc = remove_name(cg, name);
    if (rc != 0)
        sl_log(SL_LOG_WARN, "agent", "cgroup %s cannot be removed: %s", name, strerror(-rc));
    return rc;
}

typedef struct cleanup_ctx {
    agent_cgroup_t *cg;
    bool (*keep)(void *ud, const char *name);
    void *ud;
    int removed;
} cleanup_ctx_t;

static void cleanup_one(void *arg, const char *name) {
    cleanup_ctx_t *c = arg;
    if (c->keep && c->keep(c->ud, name)) return;
    if (c->cg->ops->busy(c->cg, name)) {
        sl_log(SL_LOG_WARN, "agent", "cgroup %s of no task this agent knows still holds a live "
               "process: left in place", name);
        return;
    }
    if (c->cg->ops->rmdir(c->cg, name) == 0) {
        c->removed++;
        sl_log(SL_LOG_INFO, "agent", "removed leftover cgroup %s", name);
    }
}

int agent_cgroup_cleanup(agent_cgroup_t *cg, bool (*keep)(void *ud, const char *name), void *ud) {
    if (!cg->ops->list) return 0;
    cleanup_ctx_t c = {.cg = cg, .keep = keep, .ud = ud};
    cg->ops->list(cg, cleanup_one, &c);
    return c.removed;
}
