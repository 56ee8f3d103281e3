/*
 * place_gpuclustering.c - GPU clustering, after the FGD paper's simulator
 * (GpuClusteringScore): keep tasks of one kind together. A task's kind is
 * "a share" or "k whole GPUs" (sl_task_kind_bit: the simulator's
 * "share-gpu" and "<k>-gpu" tags, one kind per GPU count), and a node knows
 * the kinds of the tasks it runs (sl_node_t.kinds). With left = the node's
 * free GPU milli and base = trunc(25 * (8000 - left) / 8000):
 *
 *   node runs tasks of the task's kind and no other kind   75 + base
 *   node runs the task's kind and others                   50 + base
 *   node runs no GPU task                                  25 + base
 *   node runs only other kinds                                  base
 *
 * A task without GPUs scores 0 everywhere (tasks without GPUs have no kind
 * and do not count). A 2-GPU task therefore prefers a node of 2-GPU tasks
 * to one of 1-GPU tasks, although both have whole GPUs in use. GPUs: the
 * default best-fit rule.
 *
 * Equal scores go to the first node in a pseudo-random node order keyed by
 * cy->order_key, as in the reference's runs (policy/place.h), not to a
 * uniform draw: the same node keeps winning ties until it is full, so tasks
 * without GPUs fill a few nodes first-fit instead of stranding GPUs
 * everywhere. Deterministic for a key, no RNG draws. Score: primary * 2^32
 * + sl__order_tiebreak(key, node). O(gpus); the fast path is O(1) (O(class
 * size) if the cluster keeps another key, place.h): the kinds join the
 * class key, so a class's representative has its members' kinds.
 */
#include "policy/place.h"

static int64_t gpuclustering_of(const sl_task_req_t *req, int64_t left, uint32_t kinds) {
    uint32_t mine = sl_task_kind_bit(req);
    if (!mine) return 0;
    int64_t base = 25 * ((int64_t)SL__MAX_SPEC_GPU_MILLI - left) / (int64_t)SL__MAX_SPEC_GPU_MILLI;
    if (kinds & mine) return base + (kinds == mine ? 75 : 50);
    return base + (kinds == 0 ? 25 : 0);
}

static int gpuclustering_score(sl_cycle_t *cy, const sl_task_req_t *req, const sl_node_t *node,
                               uint32_t weight, int64_t *score, sl_place_t *pl) {
    (void)weight;
    if (sl_node_choose_gpus(node, req, pl) != SL_FIT) return SL_NOFIT;
    int64_t primary = gpuclustering_of(req, sl__node_gpu_free(node), node->kinds);
    *score = sl__pack_score(primary, sl__order_tiebreak(cy->order_key, node->id));
    return SL_FIT;
}

const sl_place_policy_t sl__place_gpuclustering = {
    .name = "gpuclustering",
    .help = "keep tasks of the same GPU kind together (FGD paper's GpuClustering)",
    .score = gpuclustering_score,
};

/* Fast path: the free GPU sum is in the summary and the kinds in the
 * representative (one node read per class); the whole score of the
 * class's first node in the node order. */
static int gpuclustering_primary(sl_cycle_t *cy, sl__fast_ctx_t *ctx, const sl_task_req_t *req,
                                 const sl__class_t *c, const sl__class_id_t *id, int64_t *primary) {
    (void)ctx, (void)id;
    const sl_cluster_t *cl = cy->cluster;
    int64_t p = gpuclustering_of(req, c->gpu_free, sl_cluster_node(cl, c->rep)->kinds);
    uint32_t first = sl__class_first_member(cy, cl, (uint32_t)(c - sl__cluster_classes(cl)));
    *primary = sl__pack_score(p, sl__order_tiebreak(cy->order_key, first));
    return SL_FIT;
}

const sl__place_fast_t sl__fast_gpuclustering = {
    .policy = &sl__place_gpuclustering,
    .primary = gpuclustering_primary,
    .gpus = sl__gpus_default,
    .member = sl__class_first_member,
};
