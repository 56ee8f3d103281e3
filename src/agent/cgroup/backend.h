/*
 * backend.h - what cgroup.c and its backends (v1.c,
 * v2.c) share: the opened enforcement (struct agent_cgroup) and the
 * struct of function pointers each backend fills (Slurm's *_ops_t, SQLite's
 * sqlite3_io_methods). cgroup.c chooses a backend, computes what every
 * backend needs alike (limits in bytes, the device allow list) and calls
 * through the ops; the backends know only the files of their hierarchy.
 */
#ifndef SLUICE_AGENT_CGROUP_BACKEND_H
#define SLUICE_AGENT_CGROUP_BACKEND_H

#include <limits.h>

#include "cgroup/cgroup.h"
#include "cgroup/fs.h"

/* The v1 controllers a task joins, in the order they are set up. */
enum { CG1_MEMORY, CG1_CPU, CG1_CPUACCT, CG1_PIDS, CG1_DEVICES, CG1_N };

/* Limits of one task, in the units the files take. */
typedef struct agent_cgroup_limits {
    int64_t mem_max;            /* hard, bytes; 0: none */
    int64_t mem_low;            /* soft, bytes; 0: none */
    int64_t cpu_quota_us;       /* per AGENT_CGROUP_CPU_PERIOD_US; 0: none */
    int64_t pids_max;           /* 0: none */
    const cg_dev_rule_t *dev;   /* allowed devices: the agent's standard ones (std_dev,
                                 * first), then the GPU control files and GPUs of a task
                                 * that holds GPUs */
    size_t ndev;
} agent_cgroup_limits_t;

/* A task cgroup made ahead of time (the pool, cgroup.h): what every task
 * gets alike is written (the CPU period, pids.max, devices deny-all and
 * the standard devices), its tasks files are open and its OOM eventfd is
 * registered; a launch renames it to JOB.TASK and writes the rest (the
 * memory and CPU limits, the GPU control files and the task's GPUs). */
typedef struct agent_cgroup_spare {
    char name[CG_NAME_MAX];     /* "pool.N" under the root */
    int procs[AGENT_CGROUP_MAX_HIER];
    size_t nprocs;
    int oom_fd;                 /* v1 OOM eventfd, or -1 */
} agent_cgroup_spare_t;

typedef struct agent_cgroup_ops {
    const char *name;           /* "v2", "v1", "none" */
    /* Makes cgroup `name` with lim written and fills ct; -1 with reason
     * (naming the file) and nothing left on failure. */
    int (*create)(agent_cgroup_t *cg, const char *name, const agent_cgroup_limits_t *lim,
                  agent_cgroup_task_t *ct, char *reason, size_t rlen);
    int (*stats)(agent_cgroup_t *cg, const char *name, agent_cgroup_stats_t *out);
    int (*kill)(agent_cgroup_t *cg, const char *name);
    int (*watch)(agent_cgroup_t *cg, const char *name);
    /* rmdir of every directory of `name`; -EBUSY while a process is in it. */
    int (*rmdir)(agent_cgroup_t *cg, const char *name);
    /* Whether `name` holds a live process. */
    bool (*busy)(agent_cgroup_t *cg, const char *name);
    /* Calls each(ud, name) for every task cgroup under the root. */
    void (*list)(agent_cgroup_t *cg, void (*each)(void *ud, const char *name), void *ud);
    /* The pool; NULL where the backend keeps none (v2: a cgroup2 directory
     * cannot be renamed). spare_make makes sp->name with what every task
     * gets alike (0, or -errno with nothing left); spare_claim renames sp
     * to `name`, writes the rest of lim and hands sp's descriptors to ct
     * (-1 with reason, and neither name left, on failure); spare_drop
     * closes sp's descriptors and removes it. */
    int (*spare_make)(agent_cgroup_t *cg, agent_cgroup_spare_t *sp);
    int (*spare_claim)(agent_cgroup_t *cg, agent_cgroup_spare_t *sp, const char *name,
                       const agent_cgroup_limits_t *lim, agent_cgroup_task_t *ct, char *reason,
                       size_t rlen);
    void (*spare_drop)(agent_cgroup_t *cg, agent_cgroup_spare_t *sp);
    /* What the exit report needs of `name`: OOM kills, peak and, when
     * out->mem_limit <= 0 on entry, the limit (cgroup.h). */
    int (*outcome)(agent_cgroup_t *cg, const char *name, agent_cgroup_stats_t *out);
} agent_cgroup_ops_t;

struct agent_cgroup {
    const agent_cgroup_ops_t *ops;
    cg_fs_t fs;                 /* writes, with the trace hook */
    char root[PATH_MAX];        /* v2: the delegated root, absolute; v1: relative to each mount */
    char tasks[PATH_MAX];       /* v2: ROOT/tasks */
    char dirs[CG1_N][PATH_MAX]; /* v1: ROOT in each controller's hierarchy, absolute */
    int hier[CG1_N];            /* v1: index of the first controller sharing its mount, or itself */
    bool memsw;                 /* v1: memory.memsw.limit_in_bytes exists */
    bool peak;                  /* v2: memory.peak exists (kernel 5.19+) */
    bool swap;                  /* v2: memory.swap.max exists */
    bool bpf;                   /* v2: device programs are attached (a real cgroup2 mount) */
    int64_t pids_max;
    cg_dev_rule_t std_dev[16];  /* standard devices, every task's */
    size_t nstd_dev;
    cg_dev_rule_t ctl_dev[8];   /* shared GPU control files, a task with GPUs gets them */
    size_t nctl_dev;
    cg_dev_rule_t *gpu_dev;     /* GPU i's device, or major -1 when it has no file */
    size_t ngpu_dev;
    bool own_root;              /* v1: the default root, made by the agent (removed when empty) */
    int lock_fd;                /* the root's lock (cg_lock_dir), held while open; -1: none */
    agent_cgroup_spare_t pool[AGENT_CGROUP_POOL_MAX];   /* spares, oldest first */
    int npool;
    int pool_size;              /* spares to keep (--cgroup-pool); 0 where the backend has none */
    unsigned pool_seq;          /* the next spare's number */
    bool pool_warned;           /* a failed spare was logged */
    char removing[64][CG_NAME_MAX];     /* ended tasks' cgroups to remove (housekeeping) */
    int nremoving;
    char describe[1024];
};

extern const agent_cgroup_ops_t agent__cgroup_v1_ops;
extern const agent_cgroup_ops_t agent__cgroup_v2_ops;

/* Opens v1 into cg (cg->fs, root and pids_max set), locking the root
 * (cg->lock_fd) before anything under it changes. 0, -EBUSY when another
 * process holds the root's lock, or -1; err one line naming the file (or
 * the holder) and what to do. */
int agent__cgroup_v1_open(agent_cgroup_t *cg, const char *root, const char *node, char *err,
                          size_t errlen);

/* Opens v2 at mount into cg: checks the delegated root, locks it
 * (cg->lock_fd), moves the agent into ROOT/agent, enables the
 * controllers. 0, -EBUSY (as v1), or -1 with err. */
int agent__cgroup_v2_open(agent_cgroup_t *cg, const char *mount, const char *root, char *err,
                          size_t errlen);

#endif
