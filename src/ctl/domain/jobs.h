/*
 * jobs.h - the domain of sluiced: the life of jobs and tasks on nodes.
 *
 * The only layer that changes the core (libsluice) and writes the store.
 * It knows neither HTTP nor sockets: what must reach an agent goes through
 * c->out (ctl.h), which the agent port sets at start-up.
 *
 *   submit -> pending (core queue) -> running (the cycle placed it; tasks
 *   written, then launches pushed) -> succeeded | failed | cancelled
 */
#ifndef SLUICE_CTL_JOBS_H
#define SLUICE_CTL_JOBS_H

#include "domain/ctl.h"
#include "domain/jobtab.h"
#include "domain/nodes.h"

/* Opens the store (c->cfg.state, on c->loop) and creates the cluster and
 * the scheduler from c->cfg (policies, tenants, pools). 0, or -1 with a
 * message in err (close the domain anyway). */
int ctl_domain_open(ctl_t *c, char *err, size_t errlen);
/* Commits and closes the store, frees jobs, nodes, scheduler and cluster;
 * accepts a domain never opened. */
void ctl_domain_close(ctl_t *c);

/* Submits a validated job (ctl_job_from_spec): interns its GPU models and
 * pool (ctl_job_core_spec), gives it an id, puts it into the core, the
 * table and the iteration's transaction. O(the core's submit).
 * Ownership: on success (0) the job table owns j and the caller must not
 * free it. On failure nothing holds j (not the table, the core or the
 * store) and the caller still owns it and frees it; its id fields may have
 * been set. Fails with a negative error and a message in err: SL_EIO when
 * the database refused the row (the id is then burnt; answer 5xx), SL_EBUSY
 * when the tenant already has its max_pending_jobs pending (answer 429),
 * any other when the core spec or the core refused the job (answer 4xx). */
int ctl_job_submit(ctl_t *c, ctl_job_t *j, char *err, size_t errlen);
/* The pending limit of tenant t: its own max_pending_jobs, else the
 * limits: default. O(tenants). */
int64_t ctl_tenant_max_pending(const ctl_t *c, int32_t t);
/* Cancels a pending or running job. 0, or SL_ESTATE if it has finished. */
int ctl_job_cancel(ctl_t *c, ctl_job_t *j);
/* Fails a pending or running job with reason (no-op otherwise). */
void ctl_job_fail(ctl_t *c, ctl_job_t *j, const char *reason);
/* Called when a job's last live task has ended: requeues it (node failure)
 * or finishes it, releasing its resources in the core. A requeue waits (the
 * job pending, its resources held) until its lost tasks are fenced, then
 * the sweep calls this again. */
void ctl_job_settle(ctl_t *c, ctl_job_t *j);
/* Marks j's live tasks on node (all, or only task when >= 0) lost and
 * applies the job's on_node_failure: requeue once the others stopped, or fail. */
void ctl_job_lose(ctl_t *c, ctl_job_t *j, uint32_t node, int32_t task, const char *why);
/* Task i of j reported started (pid, start time). */
void ctl_task_started(ctl_t *c, ctl_job_t *j, int32_t i, int32_t pid, int64_t t_us);
/* Task i of j ended in state st (EXITED, FAILED or LOST). */
void ctl_task_ended(ctl_t *c, ctl_job_t *j, int32_t i, ctl_task_state_t st, int32_t exit_code,
                    int32_t sig, bool has_exit, const char *reason, int64_t t_us);

/* Reads task rows of j from the store into j->tasks (node names resolved
 * to core ids, -1 for nodes no longer known). 0, or -1 when the store
 * failed or a row is not one sluiced writes (ctl_store_errmsg says why). */
int ctl_job_load_tasks(ctl_t *c, ctl_job_t *j);
/* A job dropped from memory, read back from the store with its tasks: a
 * new record the caller frees (ctl_job_free); tenant -1 when its tenant is
 * no longer configured; NULL if there is no such job or its rows are
 * unreadable (logged). */
ctl_job_t *ctl_job_fetch(ctl_t *c, uint64_t id);

/* ---- what agents report (the agent port translates its messages) ---- */

/* The job of task (job, task) when that task is live on node, with its
 * index in *idx; NULL otherwise. O(1) expected. */
ctl_job_t *ctl_task_find_live(ctl_t *c, uint32_t node, uint64_t job, int64_t task, int32_t *idx);
/* As ctl_task_find_live for a report (`what`, for the log) of attempt
 * `attempt` (< 0: the report named none): NULL also when the report is of
 * another attempt than the task's (both known), which is logged and sets
 * *stale (a late report of an earlier run, never to be taken for this
 * one's). O(1) expected. */
ctl_job_t *ctl_task_find_report(ctl_t *c, uint32_t node, uint64_t job, int64_t task,
                                int64_t attempt, const char *what, int32_t *idx, bool *stale);
/* An agent said hello for the node described by ns (its address addr):
 * registers the node (a known name keeps its registered spec), records it
 * and marks it up. *id is its core id. 0, or -1 with a message in err.
 * Then report every task the hello lists (ctl_node_hello_running,
 * ctl_node_task_end) and finish with ctl_node_hello_end. */
int ctl_node_hello(ctl_t *c, const sl_node_spec_t *ns, const char *addr, uint32_t *id, char *err,
                   size_t errlen);
/* A hello lists task (job, task), attempt `attempt` (< 0: none), as
 * running with pid: re-adopted if the controller has it live there, of
 * that attempt, for a running job; else killed (that attempt). */
void ctl_node_hello_running(ctl_t *c, uint32_t node, uint64_t job, int64_t task, int64_t attempt,
                            int32_t pid, int64_t start_us);
/* A hello from node lists a task of job, of this cluster instance: an id
 * this database has not issued yet (it was restored from an earlier copy)
 * makes the ids issued from now on start after it, so that no new job
 * takes the id of one an agent still knows. Logged. O(1). */
void ctl_job_id_reported(ctl_t *c, uint32_t node, uint64_t job);
/* The tasks live on node that the hello did not list: a launch that never
 * arrived is sent again, a task that ran is lost. O(tasks on the node). */
void ctl_node_hello_end(ctl_t *c, uint32_t node);
/* Task (job, task) on node ended: EXITED with a wait status, or FAILED to
 * launch with reason. Ignored unless the task is live there. */
void ctl_node_task_end(ctl_t *c, uint32_t node, uint64_t job, int64_t task, ctl_task_state_t st,
                       int32_t exit_code, int32_t sig, const char *reason, int64_t t_us);
/* Task (job, task) on node reported how its memory ended (the agent's
 * enforcement, docs/protocol.md): killed by the kernel for memory, its
 * peak and its hard limit in bytes (0: not known). Recorded on the live
 * task with its memory request (task_mem); call before ctl_node_task_end
 * for the same exit, which then fails its job with reason OOMKilled.
 * Ignored unless the task is live there. */
void ctl_node_task_mem(ctl_t *c, uint32_t node, uint64_t job, int64_t task, bool oom_killed,
                       int64_t mem_peak, int64_t mem_limit);
/* Task (job, task) on node reported started, as attempt `attempt` (< 0:
 * none). A start of another attempt than the task's is an earlier run
 * that started late: it is killed. */
void ctl_node_task_started(ctl_t *c, uint32_t node, uint64_t job, int64_t task, int64_t attempt,
                           int32_t pid, int64_t t_us);
/* Any message from node's agent is a sign of life; a heartbeat from a node
 * declared down (a long stall) brings it back up. */
void ctl_node_heard(ctl_t *c, uint32_t node, bool heartbeat);
/* Declares node down: its connection goes (c->out.node_down) and its live
 * tasks are lost (their jobs requeued or failed); the node's fence time
 * becomes its last message + ctl_fence_wait_us. O(tasks on the node). */
void ctl_node_failed(ctl_t *c, uint32_t node, const char *why);

/* ---- fencing (docs/protocol.md): a job never runs twice at once ---- */

/* Added to node_timeout + kill_grace (with 1% of both) before a lost task
 * is taken as stopped: the agent's timers and signals take some time, and
 * the two monotonic clocks may drift apart by a little. */
#define CTL_FENCE_MARGIN_US 1000000
/* How long after a node's last message its tasks may still run: its agent
 * stops the tasks to requeue node_timeout after its last answer from the
 * controller, SIGKILL kill_grace later. Can't fail. */
int64_t ctl_fence_wait_us(const ctl_t *c);
/* Tasks lost on node from now on may run until until_mono_us (ctl_mono_us
 * time); a later time only extends it. Their jobs' requeues wait for it. */
void ctl_node_fence(ctl_t *c, uint32_t node, int64_t until_mono_us);

/* ---- the loop's work ---- */

/* The loop's CYCLE hook (ud is the ctl_t): one scheduling cycle if
 * anything changed. Returns false. */
bool ctl_jobs_cycle(void *ud);
/* Node liveness, time limits and the requeues that waited for a fence; run
 * every node_timeout / 4 (clamped to 20..500 ms) by main.c's sweep timer. */
void ctl_sweep(ctl_t *c);

/* Task i of j takes placement pl: its fields from pl (the rest zeroed),
 * launching, of attempt j->requeues, linked to its node, its row written.
 * The caller then sends the launch (ctl_task_launch). */
void ctl_task_place(ctl_t *c, ctl_job_t *j, int32_t i, const sl_place_t *pl);
/* Sends the launch of task i of j (c->out.launch) and notes when, for the
 * launch timeout (domain/launch.c). 0, or SL_EOVERFLOW when the launch
 * does not fit in a protocol line: nothing was sent, j->reason says so,
 * and the caller fails the job. */
int ctl_task_launch(ctl_t *c, ctl_job_t *j, int32_t i);

#endif
