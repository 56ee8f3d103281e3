/*
 * task_record.h - one task as the tasks layer keeps it (task.c), and its
 * record in WORKDIR/state.json (task_record.c): what a restarted agent
 * reads to re-adopt a running task or report an end the controller has
 * not acknowledged. Internal to the tasks layer: nothing else includes it.
 *
 * A record is a JSON object: the hello entry of the task (job, task,
 * state and the fields of that state, docs/protocol.md), plus what only
 * the agent needs (the monitor's pid and start time, fencing, the launch's
 * tenant and GPUs for the exporter, the cluster instance and attempt its
 * names and reports carry). Fields a record lacks (one from an older
 * agent) take the values an older agent meant.
 */
#ifndef SLUICE_AGENT_TASK_RECORD_H
#define SLUICE_AGENT_TASK_RECORD_H

#include <stdint.h>
#include <sys/types.h>

#include <event2/event.h>
#include <jansson.h>

#include "proto.h"

struct agent_tasks;

typedef enum task_state { TASK_RUNNING = 0, TASK_EXITED = 1, TASK_FAILED = 2 } task_state_t;

/* Reports waiting for the next state.json write (report bits). */
#define REPORT_STARTED 1
#define REPORT_END 2

typedef struct task {
    struct task *next;
    struct agent_tasks *ts;
    uint64_t job;
    int32_t task;
    task_state_t state;
    pid_t pid;                  /* the task: session and process group leader */
    pid_t monitor;              /* its monitor (the agent's child unless adopted) */
    unsigned long long pstart;  /* the monitor's /proc/PID/stat start time, guards against pid reuse */
    int exit_code;
    int sig;
    double start_time;
    double end_time;
    char *reason;               /* failed: why */
    struct event *kill_ev;      /* SIGKILL after the grace period */
    int pidfd;                  /* adopted monitors (not our children): exit watch */
    struct event *pidfd_ev;
    int report;                 /* REPORT_* bits */
    int fence;                  /* its job is requeued if this node fails: fence it */
    int fenced;                 /* stopped by agent_tasks_fence */
    char *tenant;               /* the launch's tenant (NULL: none), for the exporter */
    int32_t *gpus;              /* the launch's GPU indices, for the exporter */
    size_t ngpus;
    int oom_fd;                 /* v1: its cgroup's OOM eventfd (cgroup.h), or -1 */
    struct event *oom_ev;
    int oom_seen;               /* the OOM eventfd fired */
    /* The outcome its cgroup recorded, read when it ended. */
    int oom_killed;             /* the kernel killed it (a process of it) for memory */
    int64_t mem_peak;           /* bytes; -1: unknown */
    int64_t mem_limit;          /* its hard limit, bytes; 0: none */
    int cgroup_done;            /* outcome read: its cgroup goes once state.json has it */
    /* Which run it is (docs/protocol.md): the cluster instance its launch
     * came under ("": none), which its names carry (names.h), and its
     * launch's attempt (has_attempt 0: the launch had none). */
    char instance[SL_PROTO_INSTANCE_MAX + 1];
    int has_attempt;
    uint32_t attempt;
    int foreign;                /* of another cluster instance than the controller's: being
                                 * stopped, its end never reported, forgotten once ended */
} task_t;

/* Records what t's launch holds (tenant, GPUs), for the exporter: copies
 * of both. Can't fail (allocation aborts). */
void agent__task_holds(task_t *t, const char *tenant, const int32_t *gpus, size_t ngpus);

/* t's record (a new reference). Can't fail. */
json_t *agent__task_record(const task_t *t);

/* Fills t, made by the caller for the record's job and task, from the
 * record o: state (running, exited or failed as recorded: a running one
 * is still to be checked against its monitor), times, exit status or
 * reason, monitor, instance, attempt, fencing, tenant and GPUs. Can't fail
 * (a field of the wrong type reads as absent). */
void agent__task_record_read(json_t *o, task_t *t);

#endif
