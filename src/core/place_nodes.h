/*
 * place_nodes.h - gangs whose request names their nodes (place_nodes.c):
 * distinct nodes (nodes_min..nodes_max), tasks_per_node, exclusive whole
 * nodes, include and exclude lists. Private to src/core.
 */
#ifndef SLUICE_PLACE_NODES_H
#define SLUICE_PLACE_NODES_H

#include <stdbool.h>
#include <stddef.h>

#include "sluice/policy.h"

/* Whether r sets any of the node fields (then sl_place_gang comes here). */
bool sl__req_names_nodes(const sl_task_req_t *r);

/* sl_place_gang for such a request: same contract (all or none, pls and
 * the allocation on SL_FIT, a reason and nothing taken otherwise). */
int sl__place_gang_nodes(const sl_place_policy_t *pol, sl_cycle_t *cy, sl_cluster_t *cl,
                         const sl_task_req_t *r, int32_t n, sl_place_t *pls, char *reason,
                         size_t rlen);

#endif
