/*
 * launch.h - launches that were never acknowledged (launch.c): a task
 * whose agent has not reported it started (or failed) since its launch was
 * sent.
 *
 * Such a task never ran, so its job goes back to the queue whatever its
 * on_node_failure, with a reason a person can read, rather than holding
 * its resources while it waits for an answer that will not come:
 *
 *   - its agent closed the connection (it stopped, or restarted): the
 *     node takes no new placements from then on (until its agent says
 *     hello again), and the job is placed again at once;
 *   - launch_timeout passed (docs/config.md): the agent is connected but
 *     does not answer (stopped, hung, or it refused the message). The
 *     launch may still be read by that agent, so the job's next copy waits
 *     for the node's fence time, as a node failure's requeue does, and a
 *     kill for that attempt follows the launch on the connection.
 *
 * Either way the job's attempt moves on (its requeue count), so a late
 * start or end of the abandoned launch is told from the next copy's.
 */
#ifndef SLUICE_CTL_LAUNCH_H
#define SLUICE_CTL_LAUNCH_H

#include "domain/ctl.h"

/* The agent of node closed its connection (the agent port calls this once
 * it has marked the node not connected): no new placements there, and its
 * tasks still launching are requeued at once. O(tasks on the node). */
void ctl_node_disconnected(ctl_t *c, uint32_t node);

/* Requeues the jobs of launches older than launch_timeout (0: none);
 * main.c's sweep timer calls it. O(live tasks on connected nodes). */
void ctl_launch_sweep(ctl_t *c);

#endif
