/*
 * cgroup.h - per-task enforcement (cgroup.c and its backends): each task in
 * a cgroup of its own with its memory, CPU, process-count and device
 * limits, written before the task starts; its outcome (CPU time, memory
 * peak, OOM kills) read after it ends; the cgroup removed then.
 *
 * Three backends sit behind one struct of function pointers
 * (backend.h), chosen once at start-up (agent_cgroup_open):
 *
 *   v2    the unified hierarchy (v2.c): memory.max, memory.low,
 *         memory.swap.max, memory.oom.group, cpu.max, pids.max, and a
 *         BPF_PROG_TYPE_CGROUP_DEVICE program for device access
 *         (bpf.c), in a delegated subtree ROOT where the agent
 *         lives in the leaf ROOT/agent and tasks in ROOT/tasks/JOB.TASK.
 *   v1    one hierarchy per controller (v1.c): memory.limit_in_bytes,
 *         memory.soft_limit_in_bytes, memory.memsw.limit_in_bytes,
 *         cpu.cfs_quota_us, pids.max, devices.deny/allow, with the task's
 *         cgroup at ROOT/JOB.TASK in each hierarchy.
 *   none  nothing is enforced (the agent says so at start-up).
 *
 * Limits of a task with memory request M bytes and CPU request C milli-CPUs
 * (docs/enforcement.md): hard memory limit 110% of M and soft 90% of M,
 * each rounded down to a whole page (4 KiB, as the kernel stores them),
 * no swap; a CPU quota of C/1000 CPUs per 100 ms period; the agent's
 * pids.max; access to the standard device files and the task's own GPU
 * device files only. M = 0 or C = 0 means no limit of that kind.
 *
 * The pool (v1): the set-up every task shares - five mkdir, the CPU
 * period, pids.max, devices deny-all and a dozen allow rules, the tasks
 * files opened, the OOM eventfd - is done ahead of time in a few spare
 * cgroups "pool.N" (agent_cgroup_housekeep, in the agent's idle time), so
 * that a launch renames a spare to JOB.TASK in each
 * hierarchy (rename(2) within the parent, which v1 allows) and writes only
 * the task's own values: its memory and CPU limits and its GPUs' allow
 * rules. A spare is used once (its task's cgroup is removed when the task
 * ends), so it never carries another task's limits, rules or processes;
 * it holds no process before it is renamed, and a restarted agent removes
 * leftover spares with every other empty cgroup it does not know. v2 keeps
 * no pool: a cgroup2 directory cannot be renamed, and a task cgroup named
 * by its slot would need its name recorded for a restarted agent.
 *
 * Membership: agent_cgroup_task_create leaves the task's cgroup.procs files
 * open (one per hierarchy); the task's child writes "0" to each before it
 * execs (spawn.c), so that the task (and not its monitor, which stays in
 * the agent's cgroup) is what the limits hold. An OOM kill of the whole
 * group (memory.oom.group on v2, the agent's SIGKILL sweep on v1) never
 * takes the monitor and the status it records.
 *
 * All calls run on the agent's event-loop thread; none is reentrant.
 */
#ifndef SLUICE_AGENT_CGROUP_H
#define SLUICE_AGENT_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The most hierarchies a task joins (v1: memory, cpu, cpuacct, pids,
 * devices, when each is mounted on its own). */
#define AGENT_CGROUP_MAX_HIER 8

/* The most spare task cgroups the pool keeps (--cgroup-pool). */
#define AGENT_CGROUP_POOL_MAX 8

/* A task's cgroup is named by the tasks layer ("JOB.TASK", or
 * "INSTANCE.JOB.TASK" for a task of a cluster instance: task.h); a name
 * is shorter than this. */
#define AGENT_CGROUP_NAME_MAX 64

/* Period of the CPU quota, microseconds (v2 cpu.max, v1 cpu.cfs_period_us). */
#define AGENT_CGROUP_CPU_PERIOD_US 100000

typedef struct agent_cgroup agent_cgroup_t;

/* What a write to a cgroup file did, for tests: every write the backends
 * make is passed to the config's trace hook (NULL in the agent). */
typedef void (*agent_cgroup_trace_fn)(void *ud, const char *path, const char *value);

typedef struct agent_cgroup_config {
    const char *mode;       /* "auto", "v2", "v1" or "none" */
    const char *mount;      /* the cgroup2 mount v2 uses (default /sys/fs/cgroup);
                             * v1 finds its controllers in /proc/self/mountinfo */
    const char *root;       /* --cgroup-root, relative to the mount(s); NULL: v2 the
                             * agent's own cgroup, v1 /sluice/NODE */
    const char *node;       /* this node's name (v1's default root) */
    int64_t pids_max;       /* pids.max of each task; 0: no limit ("max") */
    int ngpus;              /* GPUs this node offers: indices 0..ngpus-1 */
    const char *gpu_files;  /* --gpu-device-files "PATH,PATH,...": file i is GPU i;
                             * NULL: /dev/nvidiaI where present */
    int pool;               /* spare task cgroups to keep made (v1), 0..AGENT_CGROUP_POOL_MAX
                             * (8; more is 8); 0: each launch makes its cgroup; -1: one per
                             * GPU, at least 2 */
    agent_cgroup_trace_fn trace;    /* tests only; NULL */
    void *trace_ud;
} agent_cgroup_config_t;

/* One task's cgroup while it is being started. */
typedef struct agent_cgroup_task {
    int procs[AGENT_CGROUP_MAX_HIER];   /* cgroup.procs of each hierarchy, open for
                                         * writing (O_CLOEXEC) until released */
    size_t nprocs;
    int oom_fd;                 /* v1: an eventfd that becomes readable on the task's
                                 * OOM (the caller then calls agent_cgroup_task_kill);
                                 * -1 on v2 (the kernel kills the group) and none */
    int64_t mem_limit;          /* the hard memory limit written, bytes; 0: none */
} agent_cgroup_task_t;

/* What a task's cgroup says about it. Fields the backend cannot read stay
 * as agent_cgroup_task_stats documents. */
typedef struct agent_cgroup_stats {
    int64_t cpu_usec;           /* CPU time used (v2 cpu.stat usage_usec, v1 cpuacct.usage) */
    int64_t mem_current;        /* bytes in use now */
    int64_t mem_peak;           /* highest use, bytes; -1: unknown (v2 without memory.peak) */
    int64_t mem_limit;          /* hard limit, bytes; 0: none */
    int64_t oom_kills;          /* processes the kernel killed for memory (v2 memory.events
                                 * oom_kill, not oom; v1 memory.oom_control oom_kill) */
} agent_cgroup_stats_t;

/*
 * Chooses and opens the backend cfg->mode names ("auto": v2 when
 * cfg->mount is a cgroup2 file system whose root offers the memory, cpu
 * and pids controllers, else v1 when the v1 memory controller is mounted
 * and writable, else none). For v2 it moves the agent (and every process
 * of ROOT) into ROOT/agent and enables +memory +cpu +pids in the
 * subtree_control of ROOT and ROOT/tasks; for both it stats the device
 * files (GPU files by major:minor). The root is locked (an flock on its
 * directory, held until agent_cgroup_close) before anything under it
 * changes, so that a second agent on the same root stops here. cfg's
 * strings are copied. Returns 0 with *out set; SL_EBUSY when another
 * process holds the root (auto does not fall back then), with err naming
 * its pid; or -1 with err (errlen bytes) one line that names the file and
 * what to do ("cgroup v2: memory controller not delegated to
 * /sys/fs/cgroup/x (cgroup.controllers lacks memory): ..."); an explicit v1
 * or v2 that cannot be honoured fails, auto falls back (and
 * agent_cgroup_describe then says why). Nothing is left changed on failure
 * but the agent's own move into ROOT/agent.
 */
int agent_cgroup_open(const agent_cgroup_config_t *cfg, agent_cgroup_t **out, char *err,
                      size_t errlen);

/* Frees cg, removes the pool's spares and the cgroups queued for removal;
 * cgroups of running tasks stay (a restarted agent re-adopts them).
 * Accepts NULL. */
void agent_cgroup_close(agent_cgroup_t *cg);

/* The backend's name: "v2", "v1" or "none". Can't fail. */
const char *agent_cgroup_kind(const agent_cgroup_t *cg);

/* One line for the start-up log saying what is enforced, e.g. "cgroup v1:
 * memory (hard 110%, soft 90%, no swap), cpu quota, pids.max 4096,
 * devices; root /sluice/n1", or for none why not. Valid while cg lives. */
const char *agent_cgroup_describe(const agent_cgroup_t *cg);

/*
 * Creates the cgroup `name` (of one task: AGENT_CGROUP_NAME_MAX above) -
 * from a spare of the pool when there is one, else anew (an empty leftover
 * of the same name is removed first) -
 * and writes every limit for a task with mem_bytes of
 * memory, cpu_milli of CPU and the GPUs gpus[0..ngpus) (indices), then
 * opens what the task's child writes itself into (ct->procs) and, on v1,
 * the OOM eventfd. Returns 0 with *ct filled (release it with
 * agent_cgroup_task_release once the task started or failed to), or -1
 * with reason naming the file that could not be written; nothing is left
 * then (no task starts half-limited). On none: 0, nothing opened.
 */
int agent_cgroup_task_create(agent_cgroup_t *cg, const char *name, int64_t mem_bytes,
                             int64_t cpu_milli, const int32_t *gpus, size_t ngpus,
                             agent_cgroup_task_t *ct, char *reason, size_t rlen);
/* The same with limits above the requests (Kubernetes' limits): a
 * mem_limit above mem_bytes is the hard memory limit itself (rounded down
 * to a page) instead of 110% of mem_bytes, a cpu_limit (milli-CPUs) above
 * cpu_milli the CPU quota; the soft limit stays 90% of the request. 0 or
 * not above the request: as agent_cgroup_task_create. */
int agent_cgroup_task_create_limits(agent_cgroup_t *cg, const char *name, int64_t mem_bytes,
                                    int64_t mem_limit, int64_t cpu_milli, int64_t cpu_limit,
                                    const int32_t *gpus, size_t ngpus, agent_cgroup_task_t *ct,
                                    char *reason, size_t rlen);

/* Closes ct's cgroup.procs descriptors (the oom_fd stays the caller's).
 * Can't fail. */
void agent_cgroup_task_release(agent_cgroup_task_t *ct);

/*
 * What the exit report needs of the task cgroup `name`, read when the task
 * ended and nothing more: oom_kills, mem_peak and, when out->mem_limit <= 0
 * on entry (unknown: a re-adopted task), mem_limit; out->mem_limit > 0 is
 * kept as the limit the launch wrote. cpu_usec and mem_current are left 0.
 * v1: memory.oom_control and memory.max_usage_in_bytes (two reads); v2:
 * memory.events and memory.peak. Returns 0, -ENOENT (no cgroup) or -errno.
 */
int agent_cgroup_task_outcome(agent_cgroup_t *cg, const char *name, agent_cgroup_stats_t *out);

/*
 * Queues the removal of the task cgroup `name`, whose task has ended and
 * whose outcome has been recorded, for agent_cgroup_housekeep (removed at
 * once when 64 are queued already). A later agent_cgroup_task_create of
 * the same name takes it off the queue first. cg may be NULL.
 */
void agent_cgroup_task_remove_later(agent_cgroup_t *cg, const char *name);

/*
 * Does up to max pieces of housekeeping, meant for the agent's idle time,
 * off the path from a task's end to the next task's start: first the
 * queued removals (agent_cgroup_task_remove: one each), then spare task
 * cgroups for the pool (one each) until it holds the configured number
 * (none on v2 and none, or with --cgroup-pool 0). Returns how many pieces
 * it did. At start-up, after agent_cgroup_cleanup (which would remove the
 * spares), a call with max AGENT_CGROUP_POOL_MAX fills the pool. A spare
 * that cannot be made is logged once; launches then make their cgroups
 * themselves. cg may be NULL (0). Each piece is about a dozen cgroup file
 * operations (a removal of a cgroup a straggler keeps busy: up to ~100 ms).
 */
int agent_cgroup_housekeep(agent_cgroup_t *cg, int max);

/* Whether agent_cgroup_housekeep has work: a queued removal or a pool
 * short of spares. cg may be NULL (false). */
bool agent_cgroup_housekeeping_due(const agent_cgroup_t *cg);

/*
 * Reads the stats of the task cgroup `name` into *out, for a running task
 * (the exporter) or one that ended (its outcome). Returns 0, -ENOENT when
 * the task has no cgroup (none, or removed), or another -errno. O(1) file
 * reads.
 */
int agent_cgroup_task_stats(agent_cgroup_t *cg, const char *name, agent_cgroup_stats_t *out);

/* SIGKILL to every process in the task cgroup `name` (v2 cgroup.kill, v1
 * each listed pid until none is left). Returns 0 or -errno. */
int agent_cgroup_task_kill(agent_cgroup_t *cg, const char *name);

/* v1: a new OOM eventfd for the existing task cgroup `name` (a re-adopted
 * task). Returns the fd (the caller's), or -errno; -ENOTSUP on v2 and none. */
int agent_cgroup_task_watch(agent_cgroup_t *cg, const char *name);

/*
 * Removes the task cgroup `name`; a straggler that keeps rmdir at EBUSY is
 * killed (v2 cgroup.kill, v1 SIGKILL to each listed pid) and rmdir retried
 * for up to about 100 ms. Returns 0 (also when there is none), or -errno.
 */
int agent_cgroup_task_remove(agent_cgroup_t *cg, const char *name);

/*
 * After a restart: removes every task cgroup under ROOT that keep(ud, name)
 * does not claim and that holds no live process (one that does is left,
 * with a warning: it is never the agent's to kill). Returns how many were
 * removed. O(cgroups).
 */
int agent_cgroup_cleanup(agent_cgroup_t *cg, bool (*keep)(void *ud, const char *name), void *ud);

#endif
