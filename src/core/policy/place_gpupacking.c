/*
 * place_gpupacking.c - GPU packing, as the FGD paper's simulator defines it
 * (GpuPackingScore): prefer, in this order,
 *
 *   1. sharing GPUs already in use:   100 - (sum over used GPUs of
 *                                      trunc(free * 100 / 1000)) / 10, >= 50
 *   2. whole free GPUs of a node already in use:  50 - free GPUs taken, >= 33
 *   3. a node whose GPUs are all free:            max(33 - free GPUs, free GPUs)
 *
 * The GPUs considered are the ones the task would take: the fitting GPUs in
 * ascending order of free compute (stable), i.e. the best-fit choice, which
 * is also the GPUs it gets. A task without GPUs scores 0 everywhere. All
 * integer arithmetic as in the simulator.
 *
 * Equal scores go to the first node in a pseudo-random node order keyed by
 * cy->order_key (policy/place.h: the reference's kube-scheduler fork picks
 * the smallest node name, names carry a per-seed random permutation index),
 * not to a uniform draw: the same node keeps winning ties until it is full,
 * so tasks without GPUs (13% of the Alibaba pods) fill a few nodes' CPUs
 * first-fit instead of spreading over all of them and stranding their
 * GPUs. Deterministic for a key, no RNG draws. Score: primary * 2^32 +
 * sl__order_tiebreak(key, node). O(gpus^2) worst case (a stable sort of
 * <= 16); the fast path reads the class's first node in the order in O(1)
 * (O(class size) if the cluster keeps another key, place.h).
 */
#include "policy/place.h"

/* The primary score of a node the task fits on; SL_NOFIT if it does not. */
static int gpupacking_of(const sl_task_req_t *req, const sl_node_t *node, int64_t *out) {
    int64_t primary = 0;
    if (sl__req_gpu(req)) {
        int32_t ff = sl__node_full_free(node);
        if (ff == node->ngpus) {
            primary = 33 - ff;
            if (primary < ff) primary = ff;
        } else {
            /* Stable ascending order of free compute. */
            int idx[SL_MAX_GPUS_PER_NODE];
            for (int g = 0; g < node->ngpus; g++) {
                int j = g;
                while (j > 0 && node->gpu_free[idx[j - 1]] > node->gpu_free[g]) {
                    idx[j] = idx[j - 1];
                    j--;
                }
                idx[j] = g;
            }
            int32_t need = sl__req_whole(req) ? req->gpus : 1, full_used = 0;
            int64_t ratio = 0;
            for (int k = 0; k < node->ngpus && need > 0; k++) {
                int g = idx[k];
                bool ok = sl__req_whole(req) ? sl__gpu_full_free(node, g)
                                             : sl__share_fits_gpu(node, g, req);
                if (!ok) continue;
                need--;
                if (node->gpu_free[g] == SL_GPU_MILLI) full_used++;
                ratio += (int64_t)node->gpu_free[g] * 100 / SL_GPU_MILLI;
            }
            if (need > 0) return SL_NOFIT;
            if (full_used > 0) {
                primary = 50 - full_used;
                if (primary < 33) primary = 33;
            } else {
                primary = 100 - ratio / 10;
                if (primary < 50) primary = 50;
            }
        }
    }
    *out = primary;
    return SL_FIT;
}

static int gpupacking_score(sl_cycle_t *cy, const sl_task_req_t *req, const sl_node_t *node,
                            uint32_t weight, int64_t *score, sl_place_t *pl) {
    (void)weight;
    if (sl_node_choose_gpus(node, req, pl) != SL_FIT) return SL_NOFIT;
    int64_t primary;
    if (gpupacking_of(req, node, &primary) != SL_FIT) return SL_NOFIT;
    *score = sl__pack_score(primary, sl__order_tiebreak(cy->order_key, node->id));
    return SL_FIT;
}

const sl_place_policy_t sl__place_gpupacking = {
    .name = "gpupacking",
    .help = "share used GPUs first, then used nodes, then free nodes (FGD paper's GpuPacking)",
    .score = gpupacking_score,
};

/* Fast path: a node whose GPUs are all free (or a task without GPUs)
 * scores from the summary; the others need the representative's GPUs in
 * order. The whole score of the class's first node in the node order. */
static int gpupacking_primary(sl_cycle_t *cy, sl__fast_ctx_t *ctx, const sl_task_req_t *req,
                              const sl__class_t *c, const sl__class_id_t *id, int64_t *primary) {
    (void)ctx, (void)id;
    const sl_cluster_t *cl = cy->cluster;
    int64_t p = 0;
    if (!sl__req_gpu(req)) {
        p = 0;
    } else if (c->full_free == c->ngpus) {
        p = 33 - c->full_free;
        if (p < c->full_free) p = c->full_free;
    } else if (gpupacking_of(req, sl_cluster_node(cl, c->rep), &p) != SL_FIT) {
        return SL_NOFIT;
    }
    uint32_t first = sl__class_first_member(cy, cl, (uint32_t)(c - sl__cluster_classes(cl)));
    *primary = sl__pack_score(p, sl__order_tiebreak(cy->order_key, first));
    return SL_FIT;
}

const sl__place_fast_t sl__fast_gpupacking = {
    .policy = &sl__place_gpupacking,
    .primary = gpupacking_primary,
    .gpus = sl__gpus_default,
    .member = sl__class_first_member,
};
