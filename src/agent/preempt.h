/*
 * preempt.h - the preempt file of a task (docs/elastic.md, "Preemption").
 *
 * A task learns that it is being preempted from the signal its priority
 * class names and learns when SIGKILL comes from the file that
 * SLUICE_PREEMPT_FILE (set at launch) names: the agent writes it, before
 * the signal, as one line `SLUICE_PREEMPT_DEADLINE=SECONDS` (seconds since
 * the epoch, three decimals), so a shell can source it and any language
 * can read the number after '='. The file does not exist until then, and
 * a new attempt of the task starts without it.
 */
#ifndef SLUICE_AGENT_PREEMPT_H
#define SLUICE_AGENT_PREEMPT_H

#include <stddef.h>
#include <stdint.h>

/* The file's path, WORKDIR/jobs/NAME/.sluice-preempt.TASK (NAME: the job's
 * name on this node, names.h), into buf. */
void agent_preempt_path(const char *workdir, const char *name, int32_t task, char *buf, size_t len);
/* Writes the deadline (seconds since the epoch) into the file, through a
 * temporary file and rename(2), so that a reader sees the whole line or
 * no file; mode 0644, so a task running as another user reads it. 0, or
 * a negative errno (the job directory is gone, a full disk). */
int agent_preempt_note(const char *workdir, const char *name, int32_t task, double deadline_s);
/* Removes the file, if any: a new attempt of the task is not preempted. */
void agent_preempt_clear(const char *workdir, const char *name, int32_t task);

#endif
