/*
 * task.h - the tasks this node runs (task.c): launch, stop, reap, report,
 * and their record in WORKDIR/state.json.
 *
 * Each task runs in a cgroup of its own with its limits (cgroup.h), made
 * before the task starts; when it ends, its outcome (OOM kills, memory
 * peak) is read from the cgroup and kept with its exit status, then the
 * cgroup is removed.
 *
 * Task life: launch -> running (started reported) -> exited/failed
 * (reported, kept until the controller's `ack`) -> forgotten. Running and
 * unacknowledged tasks are written to WORKDIR/state.json after every change,
 * so that a restarted agent re-adopts still-running processes and still
 * reports exit codes the controller has not recorded. Each task runs under
 * a monitor (sluice-monitor, monitor.h) that records its exit status in
 * WORKDIR/status/JOB.TASK, so a restarted agent also learns how tasks that
 * ended while it was away (or after it re-adopted them) ended.
 *
 * The tasks layer knows nothing of the connection above it: it reports
 * (started, exited, failed, logs replies) through the sender that the
 * connection registers with agent_tasks_set_sender at start-up, and is
 * told what to do through the calls below, with messages the connection has
 * already decoded.
 */
#ifndef SLUICE_AGENT_TASK_H
#define SLUICE_AGENT_TASK_H

#include <stdbool.h>
#include <stdint.h>

#include <event2/event.h>

#include "cgroup/cgroup.h"
#include "container.h"
#include "proto.h"

typedef struct agent_tasks agent_tasks_t;

typedef struct agent_tasks_config {
    const char *workdir;    /* absolute; state.json and logs/ live here */
    const char *node;       /* this node's name, for reasons and SLUICE_NODE */
    const char *launcher;   /* --launcher template, or NULL */
    const agent_container_config_t *containers; /* images through a runtime, or NULL */
    int grace_s;            /* SIGTERM-to-SIGKILL grace when a kill names none */
    agent_cgroup_t *cgroup; /* enforcement (cgroup.h), borrowed; outlives the tasks */
    int oom_score_adj_floor;    /* the agent's own oom_score_adj: a task's is raised to it
                                 * (lowering it further needs CAP_SYS_RESOURCE) */
} agent_tasks_config_t;

/* oom_score_adj of a task whose launch names none: the kernel's OOM killer
 * picks a task after ordinary processes (0) but before the agent (its
 * --oom-score-adj, -900 by default). An agent that could not lower its own
 * score (no CAP_SYS_RESOURCE) gives its tasks no lower one than its own. */
#define AGENT_TASK_OOM_SCORE_ADJ (-500)

/* Hands one message to the controller (or drops it while disconnected:
 * the next hello reports the whole state). m is only borrowed. */
typedef void (*agent_tasks_send_fn)(void *ud, const sl_proto_msg_t *m);

/*
 * Creates the tasks of base: creates WORKDIR/logs, WORKDIR/jobs,
 * WORKDIR/status and WORKDIR/tmp, finds sluice-monitor beside the agent's
 * binary, handles SIGCHLD, and loads state.json (re-adopting monitors that
 * still run,
 * reading the recorded status of tasks that ended meanwhile, and their
 * cgroup's outcome), then removes the cgroups of tasks it does not know
 * (agent_cgroup_cleanup; never one holding a live process). cfg's strings
 * are borrowed and must outlive the tasks. Returns 0 with *out set, or -1
 * (logged) when a directory cannot be created or the monitor is missing.
 */
int agent_tasks_create(struct event_base *base, const agent_tasks_config_t *cfg,
                       agent_tasks_t **out);

/* Writes state.json a last time and frees everything; processes keep
 * running (the next agent re-adopts them). Accepts NULL. */
void agent_tasks_destroy(agent_tasks_t *ts);

/* Registers (or, with NULL, removes) the sender of reports. Reports made
 * while none is registered are dropped. */
void agent_tasks_set_sender(agent_tasks_t *ts, agent_tasks_send_fn send, void *ud);

/* Starts task (job, task), attempt `attempt` of it (< 0: the launch named
 * none), as l says, under the controller's cluster instance
 * (agent_tasks_welcome); with l NULL, reports it failed with `why` (a
 * launch that did not decode). A repeated launch of a running task reports
 * `started` again instead (with the attempt that runs). Ignored while
 * stopping. Reports of the task carry its attempt. */
void agent_tasks_launch(agent_tasks_t *ts, uint64_t job, int32_t task, int64_t attempt,
                        const sl_proto_launch_t *l, const char *why);

/* k's signal (0: SIGTERM) to the task's process group, SIGKILL after
 * k->grace_ms (< 0: the configured grace); with k->preempt, the time of
 * that SIGKILL is first written into the task's preempt file (preempt.h).
 * An unknown task is reported failed, an ended one's end reported again;
 * a kill naming another attempt (>= 0) than the task's is ignored. */
void agent_tasks_kill(agent_tasks_t *ts, uint64_t job, int32_t task, int64_t attempt,
                      const sl_proto_kill_t *k);

/* Fencing (docs/protocol.md): SIGTERM to every running task whose launch
 * said on_node_failure "requeue" and that is not fenced yet, SIGKILL after
 * grace_ms (< 0: the configured grace). Their exits are reported (and kept
 * in state.json) as fenced, so that the controller requeues their jobs
 * rather than failing them. Returns how many were signalled. O(tasks). */
int agent_tasks_fence(agent_tasks_t *ts, int64_t grace_ms);

/* The controller recorded the end of (job, task), of attempt `attempt`
 * (< 0: any): forget it (not when it is of another attempt). */
void agent_tasks_ack(agent_tasks_t *ts, uint64_t job, int32_t task, int64_t attempt);

/* The controller's welcome named its cluster instance (NULL or "": none).
 * Launches from now on are of that instance (names.h). A task of another
 * instance (launched before its database was made anew) is not the
 * controller's: a running one is stopped (SIGTERM, SIGKILL after the
 * grace) and forgotten once ended, an ended one forgotten; their ends are
 * never reported. Messages of the controller never name them. O(tasks). */
void agent_tasks_welcome(agent_tasks_t *ts, const char *instance);

/* Replies to logs request req with up to limit bytes (at most
 * AGENT_LOG_CHUNK, tasklog.h) of the task's log from offset. */
void agent_tasks_logs(agent_tasks_t *ts, uint64_t req, uint64_t job, int32_t task, int64_t offset,
                      int64_t limit);

/* Every task still running or not yet acknowledged, for a hello: an array
 * (malloc'd; the caller frees it) of *n entries whose strings stay valid
 * until the next call into the tasks. */
sl_proto_task_t *agent_tasks_report(agent_tasks_t *ts, size_t *n);

/* SIGTERM to every task, SIGKILL after the grace; the loop exits once none
 * runs. A second call sends SIGKILL at once. */
void agent_tasks_stop_all(agent_tasks_t *ts);

/* What the exporter (metrics.c) reads of a task: who holds which GPUs.
 * Pointers are valid during the callback only. */
typedef struct agent_task_info {
    uint64_t job;
    int32_t task;
    bool running;           /* else ended, not yet acknowledged */
    int32_t pid;            /* the task's process group (running) */
    const char *tenant;     /* "" when the launch named none */
    const int32_t *gpus;    /* the GPU indices of its launch */
    size_t ngpus;
    const char *cgroup;     /* its cgroup's name (names.h: its KEY) */
    const char *name;       /* its job's NAME (names.h): WORKDIR/jobs/NAME is its directory */
    bool has_attempt;       /* the attempt of its launch, when it had one */
    uint32_t attempt;
} agent_task_info_t;

/* Calls fn for every task of the controller's cluster instance the agent
 * knows (running or ended, not yet acknowledged). O(tasks). */
void agent_tasks_foreach(agent_tasks_t *ts, void (*fn)(void *ud, const agent_task_info_t *ti),
                         void *ud);

/* Registers (or, with NULL, removes) fn, called once per loop pass that
 * changed the tasks (a launch, an end, the re-adoption at start-up, an
 * acknowledged end forgotten), right after state.json records it. */
void agent_tasks_set_watcher(agent_tasks_t *ts, void (*fn)(void *ud), void *ud);

#endif
