/*
 * place_nodes.h - gangs whose request names their nodes (place_nodes.c):
 * distinct nodes (nodes_min..nodes_max), tasks_per_node, exclusive whole
 * nodes, include and exclude lists. Private to src/core.
 */
#ifndef SLUICE_PLACE_NODES_H
#define SLUICE_PLACE_NODES_H

#include <stdbool.h>
#include <stddef.h>

#include "sluice/constraint.h"
#include "sluice/policy.h"

/* A node that may be one of a gang's: its id, the tasks it holds (capped),
 * its packing key and policy score, and whether include names it. */
typedef struct sl__gang_cand {
    uint32_t id;
    int32_t cap;
    int32_t key;
    int64_t score;
    bool must;
    uint32_t size; /* place_nodes.c's search by class: the class's members */
} sl__gang_cand_t;

/* Whether r sets any of the node fields (then sl_place_gang comes here). */
bool sl__req_names_nodes(const sl_task_req_t *r);

/* sl_place_gang for such a request: same contract (all or none, pls and
 * the allocation on SL_FIT, a reason and nothing taken otherwise). */
int sl__place_gang_nodes(const sl_place_policy_t *pol, sl_cycle_t *cy, sl_cluster_t *cl,
                         const sl_task_req_t *r, int32_t n, sl_place_t *pls, char *reason,
                         size_t rlen);

/*
 * For a reservation on copies of nodes (policy/backfill_easy.c): the
 * include/exclude marks of r over cl's node ids (NULL when r has no lists;
 * the caller frees them; *nincl the included nodes, -1 when one is not a
 * node); the tasks of r node may take as one of the gang's (0: it may
 * not: excluded, not idle for an exclusive gang, too full; its capacity
 * capped at tasks_per_node or n otherwise); and, over candidates c (cap
 * > 0, must from the marks), the fewest nodes that hold the n tasks: c's
 * first N entries after the call, N returned, 0 if none.
 */
uint8_t *sl__gang_marks(const sl_cluster_t *cl, const sl_task_req_t *r, int32_t *nincl);
int32_t sl__gang_node_cap(const sl_task_req_t *r, int32_t n, const sl_node_t *node,
                          const uint8_t *marks);
int32_t sl__gang_pick(const sl_task_req_t *r, int32_t n, int32_t nincl, sl__gang_cand_t *c,
                      int32_t nc);
/* The node counts the gang may use, [*lo, *hi], for nincl included nodes
 * (-1: one is not a node); false if none. */
bool sl__gang_range(const sl_task_req_t *r, int32_t n, int32_t nincl, int32_t *lo, int32_t *hi);
/* Whether must_n named nodes holding must_sum tasks, with hist[c] other
 * nodes of capacity c (1..top), hold n tasks on lo..hi distinct nodes
 * (the roomiest first: the fewest). O(top). */
bool sl__gang_hist_fits(int32_t must_n, int64_t must_sum, const int64_t *hist, int32_t top,
                        int32_t n, int32_t lo, int32_t hi);
#define SL__GANG_MUST(marks, id) ((marks) && ((marks)[id] & 1u))

#endif
