/*
 * drain.h - node drains in sluiced (docs/cli.md `sluice drain`).
 *
 * A draining node takes no new placements (its core state is draining, so
 * it leaves the cluster's index) and keeps running what it has. Without a
 * deadline the drain waits for those tasks to end; at a deadline the tasks
 * left are preempted (their class's signal, SIGKILL after its grace) and
 * their jobs requeued with their original submit time and id, as a node
 * failure's requeue does (jobs.h, ctl_job_preempt). Once no task is left
 * the node is drained. A drain is durable (the node_drain table) and
 * outlives the node's failures and sluiced's restarts; resume ends it.
 */
#ifndef SLUICE_CTL_DRAIN_H
#define SLUICE_CTL_DRAIN_H

#include "domain/preempt.h"

/* Drains the node called name: deadline_us (wall clock; -1: none) and
 * reason (may be NULL). Draining a draining node replaces its deadline
 * and reason and keeps its start. Durable when it returns (the store is
 * committed). 0, SL_ENOENT for an unknown node (message in err). A
 * deadline already past stops the node's tasks at once. O(its tasks). */
int ctl_node_drain(ctl_t *c, const char *name, int64_t deadline_us, const char *reason, char *err,
                   size_t errlen);
/* Ends the drain of node name: it takes placements again. Durable when it
 * returns. 0, SL_ENOENT (unknown node) or SL_ESTATE (not draining), with a
 * message in err. */
int ctl_node_resume(ctl_t *c, const char *name, char *err, size_t errlen);
/* Start-up (recover.c, after the nodes): the stored drains back onto their
 * nodes; a drain of a node no longer known is dropped with a warning.
 * 0, or -1 (ctl_store_errmsg says why). */
int ctl_drains_restore(ctl_t *c);
/* The sweep's part: stops the tasks of drains whose deadline has passed
 * and marks drains with no task left drained. O(nodes). */
void ctl_drain_sweep(ctl_t *c);

#endif
