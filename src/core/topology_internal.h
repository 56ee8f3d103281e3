/*
 * topology_internal.h - the topology-aware gang placement that
 * sl_place_gang (place.c) calls; topology.c explains the algorithm.
 */
#ifndef SLUICE_TOPOLOGY_INTERNAL_H
#define SLUICE_TOPOLOGY_INTERNAL_H

#include "sluice/policy.h"

typedef struct sl__topo_ctx {
    const sl_place_policy_t *pol; /* its filter (may be NULL) and score */
    sl_cycle_t *cy;
} sl__topo_ctx_t;

/*
 * Places n tasks of req on up nodes, spanning the fewest racks, then
 * blocks, honouring req->topo_required. On SL_FIT pls[0..n-1] are filled
 * in rank order and allocated in cl, and *nodes_used (may be NULL) holds
 * the number of distinct nodes. Otherwise nothing is allocated; SL_NOFIT
 * (or SL_NOFIT_EVER when no group of the required level could hold the
 * gang even on the empty cluster) with a reason. The caller has checked
 * that the up nodes hold n tasks in all. O(N log N) in the up nodes.
 */
int sl__topo_place_gang(const sl__topo_ctx_t *tx, sl_cluster_t *cl, const sl_task_req_t *req,
                        int32_t n, sl_place_t *pls, int32_t *nodes_used, char *reason,
                        size_t reasonlen);

#endif
