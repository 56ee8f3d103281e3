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

/* WORKDIR/tmp: the agent's own directory (0700, made by the tasks at
 * start-up) where the file is written before it is renamed into place. */
#define AGENT_PREEMPT_TMP_DIR "tmp"

/* The file's path, WORKDIR/jobs/NAME/.sluice-preempt.TASK (NAME: the job's
 * name on this node, names.h), into buf. */
void agent_preempt_path(const char *workdir, const char *name, int32_t task, char *buf, size_t len);
/* Writes the deadline (seconds since the epoch) into a new file in
 * WORKDIR/tmp and renames it over the file's name, so that a reader sees
 * the whole line or no file, and nothing the task left at that name (a
 * FIFO, a link) is ever opened; mode 0644, so a task running as another
 * user reads it. Never blocks. 0, or a negative errno (the job directory
 * is gone, a directory at the name, a full disk). */
int agent_preempt_note(const char *workdir, const char *name, int32_t task, double deadline_s);
/* Removes the file, if any: a new attempt of the task is not preempted. */
void agent_preempt_clear(const char *workdir, const char *name, int32_t task);

#endif
