/*
 * place_firstfit.c - first fit: the lowest-numbered node that can hold the
 * task, GPUs by the cluster's default rule (whole GPUs: the lowest-numbered
 * free ones; a share: the fitting GPU with the least free compute).
 *
 * The framework sees classes of identical nodes, so "lowest-numbered" is
 * over class representatives: the winner is the class whose representative
 * has the smallest id. Deterministic, no randomness. (The FGD simulator's
 * FirstFit gives every node the same score and so, through the Kubernetes
 * tie rule, is random; Sluice's is a true first fit.) O(gpus).
 */
#include "policy/place.h"

static int firstfit_score(sl_cycle_t *cy, const sl_task_req_t *req, const sl_node_t *node,
                          uint32_t weight, int64_t *score, sl_place_t *pl) {
    (void)cy;
    (void)weight;
    if (sl_node_choose_gpus(node, req, pl) != SL_FIT) return SL_NOFIT;
    *score = -(int64_t)node->id;
    return SL_FIT;
}

const sl_place_policy_t sl__place_firstfit = {
    .name = "firstfit",
    .help = "lowest-numbered node that fits (deterministic)",
    .score = firstfit_score,
};

/* Fast path: the representative's id is in the class summary. */
static int firstfit_primary(sl_cycle_t *cy, sl__fast_ctx_t *ctx, const sl_task_req_t *req,
                            const sl__class_t *c, const sl__class_id_t *id, int64_t *primary) {
    (void)cy, (void)ctx, (void)req, (void)id;
    *primary = -(int64_t)c->rep;
    return SL_FIT;
}

const sl__place_fast_t sl__fast_firstfit = {
    .policy = &sl__place_firstfit,
    .primary = firstfit_primary,
    .gpus = sl__gpus_default,
};
