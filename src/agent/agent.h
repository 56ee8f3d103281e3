/*
 * agent.h - sluice-agent internals: one node's launcher.
 *
 * The agent is one libevent loop that owns every piece of state (no
 * threads): the connection to the controller (conn.c), the tasks it runs
 * (task.c), GPU discovery (gpu.c) and start-up (main.c). Tasks are kept in a
 * singly linked list: a node runs at most a few hundred tasks, and each
 * message touches one task, so a list beats a hash on size and clarity.
 *
 * Task life: launch -> running (started sent) -> exited/failed (sent, kept
 * until the controller's `ack`) -> forgotten. Running and unacked tasks are
 * written to WORKDIR/state.json (atomically, via rename) after every change,
 * so that a restarted agent re-adopts still-running processes and still
 * reports exit codes the controller has not recorded.
 */
#ifndef SLUICE_AGENT_H
#define SLUICE_AGENT_H

#include <stdint.h>
#include <sys/types.h>

#include <event2/event.h>
#include <event2/bufferevent.h>
#include <jansson.h>

#define AGENT_VERSION "0.1.0"
#define AGENT_MAX_LINE (1024 * 1024)  /* protocol.md: messages are at most 1 MiB */
#define AGENT_LOG_CHUNK (128 * 1024)  /* largest logs reply; JSON escaping stays < 1 MiB */

typedef enum agent_task_state {
    AGENT_TASK_RUNNING = 0,
    AGENT_TASK_EXITED = 1,
    AGENT_TASK_FAILED = 2
} agent_task_state_t;

typedef struct agent agent_t;

typedef struct agent_task {
    struct agent_task *next;
    agent_t *agent;
    uint64_t job;
    int task;
    agent_task_state_t state;
    pid_t pid;                  /* session and process group leader */
    unsigned long long pstart;  /* /proc/PID/stat start time, guards against pid reuse */
    int exit_code;
    int sig;
    double start_time;
    double end_time;
    char *reason;               /* failed: why */
    struct event *kill_ev;      /* SIGKILL after the grace period */
    int pidfd;                  /* adopted tasks (not our children): exit watch */
    struct event *pidfd_ev;
    int report;                 /* AGENT_REPORT_* bits: sent after the next state.json write */
} agent_task_t;

/* A task's start or end is reported to the controller only once state.json
 * records it, so an agent killed in between never leaves the controller
 * believing in a task the restarted agent does not know (it would launch it
 * again) or has forgotten it ended. */
#define AGENT_REPORT_STARTED 1
#define AGENT_REPORT_END 2

struct agent {
    struct event_base *base;
    /* configuration (flags) */
    char *ctl_host;
    char *ctl_port;
    char *token;
    char *name;
    char *workdir;
    char *state_path;
    int gpus;
    char *gpu_model;
    char *gpu_memory;
    char *cpus;
    char *memory;
    char *pool;
    char *labels;
    int heartbeat_s;
    char *launcher;
    int grace_s;
    /* connection */
    struct bufferevent *bev;
    int connected;              /* TCP up and hello sent */
    struct evbuffer *pending;   /* messages not yet handed to the socket */
    int batch;                  /* > 0: inside a callback that may send several */
    int welcomed;
    int backoff_ms;
    struct event *reconnect_ev;
    struct event *heartbeat_ev;
    /* tasks */
    agent_task_t *tasks;
    int nrunning;
    struct event *sigchld_ev;
    struct event *save_ev;      /* deferred state.json write, once per loop pass */
    /* shutdown */
    int stopping;
    struct event *stop_ev;
};

/* Current wall-clock time in seconds, as protocol.md's "time" fields. */
double agent_now(void);

/* conn.c */
int agent_conn_start(agent_t *a);
/* Sends one message (steals obj). Dropped, with a debug line, when not
 * connected: hello re-sends every unacked state on reconnect. */
void agent_send(agent_t *a, json_t *obj);
void agent_conn_fini(agent_t *a);
/* Hands pending messages to the socket now (one send(2) when nothing is
 * queued before them), so a `started` leaves in the callback that spawned
 * the task rather than on the next loop pass. */
void agent_flush(agent_t *a);

/* task.c */
int agent_tasks_init(agent_t *a);      /* sets up SIGCHLD and loads state.json */
void agent_tasks_fini(agent_t *a);
void agent_task_launch(agent_t *a, json_t *msg);
void agent_task_kill(agent_t *a, json_t *msg);
void agent_task_ack(agent_t *a, json_t *msg);
void agent_task_logs(agent_t *a, json_t *msg);
json_t *agent_tasks_hello(agent_t *a);  /* the hello message's "tasks" array */
void agent_tasks_stop_all(agent_t *a);  /* SIGTERM all, SIGKILL after grace */
void agent_state_dirty(agent_t *a);

/* Expands the {placeholders} of one --launcher template word (see task.c).
 * Returns a malloc'd string, or NULL with *bad pointing at the unknown
 * placeholder. */
char *agent_launcher_expand(const char *word, const char *image, const char *workdir,
                            const char *job, const char *task, const char *name,
                            const char *node, const char *gpus, const char *log,
                            const char **bad);

/* gpu.c: NVML loaded at run time. Fills count, model ("H100") and the
 * smallest per-GPU memory in bytes. Returns 0, or -1 when NVML is absent or
 * reports no GPU (*why says which). */
int agent_gpu_detect(int *count, char *model, size_t modellen, uint64_t *mem_bytes,
                     char *why, size_t whylen);

#endif
