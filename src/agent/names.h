/*
 * names.h - what a task's files and cgroup are called on its node
 * (names.c). NAME, a task's job on this node, is "INSTANCE.JOB" for a
 * task launched under a cluster instance (the controller's welcome says
 * which: docs/protocol.md, "Attempts and the cluster instance") and "JOB"
 * for one launched without (a controller from before instances, or a task
 * recorded before them); a task's KEY is "NAME.TASK". Then:
 *
 *     WORKDIR/jobs/NAME          the job's directory (its tasks' TMPDIR)
 *     WORKDIR/logs/NAME/TASK.log a task's log
 *     WORKDIR/status/KEY         a task's exit status (monitor.h)
 *     KEY                        a task's cgroup under the cgroup root
 *
 * Job ids repeat when a state database is made anew (`sluiced --init`) or
 * restored from a backup; the instance in every name keeps what an earlier
 * cluster left on the node (files, logs, a live task's cgroup) apart from a
 * new job that has the same id.
 */
#ifndef SLUICE_AGENT_NAMES_H
#define SLUICE_AGENT_NAMES_H

#include <stddef.h>
#include <stdint.h>

/* A NAME or KEY fits in this many bytes (with its NUL). */
#define AGENT_NAME_MAX 64

/* NAME of job under instance ("" or NULL: none) into buf. Can't fail. */
void agent_job_name(const char *instance, uint64_t job, char *buf, size_t len);

/* KEY of (job, task) under instance into buf. Can't fail. */
void agent_task_key(const char *instance, uint64_t job, int32_t task, char *buf, size_t len);

#endif
