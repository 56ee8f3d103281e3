/*
 * workload.h - the typical task shapes of a workload and the fragmentation
 * measure of the FGD paper (Weng et al., "Beware of Fragmentation:
 * Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent",
 * USENIX ATC'23).
 *
 * A workload is a list of task shapes with counts (popularity). The
 * fragmentation of a node for one shape is the free GPU compute of that node
 * that a task of that shape cannot use; the node's expected fragmentation is
 * the popularity-weighted sum over shapes, and the cluster's is the sum over
 * nodes. FGD places a task where this expected fragmentation grows least.
 */
#ifndef SLUICE_WORKLOAD_H
#define SLUICE_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice/cluster.h"
#include "sluice/resources.h"

typedef struct sl_workload sl_workload_t;

int sl_workload_create(sl_workload_t **out);   /* aborts on OOM; returns 0 */
void sl_workload_destroy(sl_workload_t *w);    /* accepts NULL */

/* Adds count tasks of shape req (pool is ignored). Identical shapes merge.
 * O(shapes). Returns 0 or SL_EINVAL for count <= 0. */
int sl_workload_add(sl_workload_t *w, const sl_task_req_t *req, int64_t count);
void sl_workload_clear(sl_workload_t *w);
size_t sl_workload_shape_count(const sl_workload_t *w);
const sl_task_req_t *sl_workload_shape(const sl_workload_t *w, size_t i, int64_t *count);
int64_t sl_workload_total(const sl_workload_t *w); /* sum of counts */

/*
 * Which shapes the measure below counts (the shapes and counts above are
 * kept as added). Default (100, true): every shape, a node short of host
 * memory for a shape counting as fragmented for it. The FGD artifact's
 * experiments use (95, false): its "typical pods" are the most popular
 * shapes, keyed without host memory, that together make at least
 * popularity_pct % of the tasks (the one crossing the threshold kept,
 * equal counts in the order first added), their popularity renormalised
 * over those kept; memory plays no part. Returns 0, or SL_EINVAL for a
 * popularity_pct outside 1..100.
 */
int sl_workload_set_typical(sl_workload_t *w, int popularity_pct, bool count_mem);

/*
 * Fragmentation of node for one task shape, in GPU milli (FGD paper, Sec. 4:
 * free GPU compute that the shape cannot use). O(gpus).
 */
int64_t sl_frag_node_shape(const sl_node_t *node, const sl_task_req_t *shape);

/*
 * Expected fragmentation of node under workload w: sum over shapes of
 * popularity * sl_frag_node_shape, in GPU milli (popularity = count/total;
 * the shapes and counts sl_workload_set_typical selects).
 * O(shapes * gpus).
 */
double sl_frag_node(const sl_node_t *node, const sl_workload_t *w);

/* Sum of sl_frag_node over up nodes of the cluster (O(classes * shapes)). */
double sl_frag_cluster(const sl_cluster_t *cl, const sl_workload_t *w);

#endif
