/*
 * step.h - job steps on this node (step.c): the controller's step_run and
 * step_signal handed to the step daemons (sluice-stepd) of the
 * allocation's tasks here, and their ranks' starts, output and ends sent
 * back up (proto_step.h, docs/protocol.md "Job steps").
 *
 * The steps layer knows nothing of the connection above it: it sends
 * through the sender that conn.c registers (agent_steps_set_sender), as
 * the tasks layer does, and reads the tasks (their pids) below it.
 */
#ifndef SLUICE_AGENT_STEP_H
#define SLUICE_AGENT_STEP_H

#include <stdbool.h>
#include <stddef.h>

#include <event2/event.h>

#include "task.h"

typedef struct agent_steps agent_steps_t;

/* Hands one encoded line (newline included) to the controller, or drops
 * it while disconnected. line is borrowed. */
typedef void (*agent_steps_send_fn)(void *ud, const char *line, size_t len);

/* Creates the steps of this node: workdir is the agent's (jobs/JOB under
 * it), ts the tasks whose step daemons it reaches (both borrowed, and must
 * outlive the steps). Can't fail (out-of-memory aborts). */
agent_steps_t *agent_steps_create(struct event_base *base, const char *workdir, agent_tasks_t *ts);
/* Closes every step daemon connection. Accepts NULL. */
void agent_steps_destroy(agent_steps_t *s);
void agent_steps_set_sender(agent_steps_t *s, agent_steps_send_fn send, void *ud);
/*
 * Handles line[0..len) (no newline) when it is a step message from the
 * controller (step_run, step_signal): returns true, having started what it asks (a rank that
 * cannot be handed to its step daemon is reported as a step_exit with the
 * reason). Returns false, doing nothing, for any other message.
 */
bool agent_steps_handle_line(agent_steps_t *s, const char *line, size_t len);

#endif
