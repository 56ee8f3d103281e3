/*
 * place_gpuclustering.c - GPU clustering, after the FGD paper's simulator
 * (GpuClusteringScore): keep tasks of one kind together. With
 * left = the node's free GPU milli and base = trunc(25 * (8000 - left) / 8000):
 *
 *   node runs only tasks of the task's kind            75 + base
 *   node runs that kind and others                     50 + base
 *   node runs nothing on its GPUs                      25 + base
 *   node runs only other kinds                              base
 *
 * A task without GPUs scores 0 everywhere. The simulator knows which pods a
 * node runs and tags them "share-gpu" or "k-gpu"; Sluice's nodes record only
 * free capacity, so the kinds are inferred from it: a partially used GPU
 * (0 < free < 1000) means shares run there, a fully used GPU (free 0) means
 * whole-GPU tasks do, and whole-GPU tasks of any count form one kind. This
 * is the one policy that approximates its reference. GPUs: the default
 * best-fit rule.
 *
 * Equal scores go to the first node in a pseudo-random node order keyed by
 * cy->order_key, as in the reference's runs (policy/place.h), not to a
 * uniform draw: the same node keeps winning ties until it is full, so tasks
 * without GPUs fill a few nodes first-fit instead of stranding GPUs
 * everywhere. Deterministic for a key, no RNG draws. Score: primary * 2^32
 * + sl__order_tiebreak(key, node). O(gpus); the fast path is O(1) (O(class
 * size) if the cluster keeps another key, place.h).
 */
#include "policy/place.h"

static int64_t gpuclustering_of(const sl_task_req_t *req, int64_t left, bool has_share, bool has_whole) {
    if (!sl__req_gpu(req)) return 0;
    int64_t base = 25 * ((int64_t)SL__MAX_SPEC_GPU_MILLI - left) / (int64_t)SL__MAX_SPEC_GPU_MILLI;
    int kinds = (int)has_share + (int)has_whole;
    bool match = sl__req_share(req) ? has_share : has_whole;
    if (match) return base + (kinds == 1 ? 75 : 50);
    return base + (kinds == 0 ? 25 : 0);
}

static int gpuclustering_score(sl_cycle_t *cy, const sl_task_req_t *req, const sl_node_t *node,
                               uint32_t weight, int64_t *score, sl_place_t *pl) {
    (void)weight;
    if (sl_node_choose_gpus(node, req, pl) != SL_FIT) return SL_NOFIT;
    bool has_share = false, has_whole = false;
    int64_t left = 0;
    for (int g = 0; g < node->ngpus; g++) {
        left += node->gpu_free[g];
        if (node->gpu_free[g] > 0 && node->gpu_free[g] < SL_GPU_MILLI) has_share = true;
        if (node->gpu_free[g] == 0) has_whole = true;
    }
    int64_t primary = gpuclustering_of(req, left, has_share, has_whole);
    *score = sl__pack_score(primary, sl__order_tiebreak(cy->order_key, node->id));
    return SL_FIT;
}

const sl_place_policy_t sl__place_gpuclustering = {
    .name = "gpuclustering",
    .help = "keep tasks of the same GPU kind together (FGD paper's GpuClustering)",
    .score = gpuclustering_score,
};

/* Fast path: the free GPU sum and the kinds of use are in the summary; the
 * whole score of the class's first node in the node order. */
static int gpuclustering_primary(sl_cycle_t *cy, sl__fast_ctx_t *ctx, const sl_task_req_t *req,
                                 const sl__class_t *c, const sl__class_id_t *id, int64_t *primary) {
    (void)ctx, (void)id;
    const sl_cluster_t *cl = cy->cluster;
    int64_t p = gpuclustering_of(req, c->gpu_free, (c->used & SL__USED_SHARE) != 0,
                                 (c->used & SL__USED_WHOLE) != 0);
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
