/*
 * nodes.h - the node table of sluiced and each node's index of the live
 * tasks placed on it.
 *
 * The index is the intrusive list of sluice/list.h through ctl_task_t, so
 * that a node failure or an agent's hello visits only that node's tasks
 * (O(its tasks), not every job since the oldest active one), and linking or
 * unlinking a task allocates nothing.
 */
#ifndef SLUICE_CTL_NODES_H
#define SLUICE_CTL_NODES_H

#include "domain/ctl.h"

/* The node with this core id, or NULL. O(1). */
ctl_node_t *ctl_node_get(ctl_t *c, uint32_t id);
/* A new node record for core id `id` (replacing none: the caller checked
 * ctl_node_get). Can't fail. */
ctl_node_t *ctl_node_new(ctl_t *c, uint32_t id);
/* The node's name in the cluster, or "" for an unknown id (-1 included). */
const char *ctl_node_name(ctl_t *c, int32_t id);
/* The core state of node id when it is up: draining (no new placements)
 * while a drain holds it (drain.c) or while its agent is not connected
 * (launch.c), else up. O(1). */
sl_node_state_t ctl_node_up_state(ctl_t *c, uint32_t id);
/* The ids of every node (0..nnodes-1) sorted by name, bytewise (strcmp),
 * their count in *n: the order GET /v1/nodes pages in. Nodes are only ever
 * added, never renamed or removed, so the order is rebuilt, O(N log N),
 * only on the first call after one was added, and is O(1) otherwise. The
 * array is c's, valid until the next call. */
const uint32_t *ctl_nodes_by_name(ctl_t *c, size_t *n);
/* Frees every node record (their tasks' links are not touched: they point
 * into the freed records, so no task may be unlinked afterwards). */
void ctl_nodes_fini(ctl_t *c);

/* Adds task i of j to the head of its node's live list (once; nothing for
 * a task without a known node) and counts it in the node's live_tasks.
 * O(1). */
void ctl_node_link(ctl_t *c, ctl_job_t *j, int32_t i);
/* Takes task t off its node's list, if it is on one. O(1). */
void ctl_node_unlink(ctl_t *c, ctl_task_t *t);

#endif
