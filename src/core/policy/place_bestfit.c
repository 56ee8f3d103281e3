/*
 * place_bestfit.c - best fit, as the FGD paper's simulator defines it
 * (BestFitScore): the node whose free CPU and GPU left after the task are
 * smallest, each normalised by the largest node spec (128 CPUs, 8 GPUs) and
 * weighted 1/2:
 *
 *     s = 0.5 * (cpu_free - cpu) / 128000 + 0.5 * (gpu_free - gpu) / 8000
 *     score = trunc(100 * (1 - s))            (higher is better)
 *
 * gpu_free is the node's total free GPU milli, gpu the task's total milli.
 * Equal scores are broken uniformly at random over nodes (the Kubernetes
 * rule; see policy/place.h). GPUs: the simulator's "best" selection, which
 * is the cluster's default rule (a share goes to the fitting GPU with the
 * least free compute, lowest index first; whole GPUs to the lowest-numbered
 * free ones). O(gpus).
 */
#include "policy/place.h"

static int64_t bestfit_of(const sl_task_req_t *req, int64_t cpu_free, int64_t gpu_free) {
    double s = 0.0;
    s += ((double)(cpu_free - req->cpu_milli)) / SL__MAX_SPEC_CPU_MILLI * 0.5;
    s += ((double)(gpu_free - sl__req_gpu_milli(req))) / SL__MAX_SPEC_GPU_MILLI * 0.5;
    return (int64_t)((1.0 - s) * 100.0);
}

static int bestfit_score(sl_cycle_t *cy, const sl_task_req_t *req, const sl_node_t *node,
                         uint32_t weight, int64_t *score, sl_place_t *pl) {
    if (sl_node_choose_gpus(node, req, pl) != SL_FIT) return SL_NOFIT;
    int64_t primary = bestfit_of(req, node->cpu_free, sl__node_gpu_free(node));
    *score = sl__pack_score(primary, sl__tiebreak(cy->rng, weight));
    return SL_FIT;
}

const sl_place_policy_t sl__place_bestfit = {
    .name = "bestfit",
    .help = "node with the least CPU and GPU left after placing (FGD paper's BestFit)",
    .score = bestfit_score,
};

/* Fast path: free CPU and the free GPU sum are in the class summary. */
static int bestfit_primary(sl_cycle_t *cy, sl__fast_ctx_t *ctx, const sl_task_req_t *req,
                           const sl__class_t *c, const sl__class_id_t *id, int64_t *primary) {
    (void)cy, (void)ctx, (void)id;
    *primary = bestfit_of(req, c->cpu_free, c->gpu_free);
    return SL_FIT;
}

/* A fitting node has cpu_free >= the task's CPU, so its CPU term is >= 0
 * and s >= its GPU term alone; rounding is monotone, so the score with a
 * zero CPU term and the least GPU free bounds every class of the bucket. */
static int64_t bestfit_bound(const sl_task_req_t *req, int32_t gpu_free_min) {
    return bestfit_of(req, req->cpu_milli, gpu_free_min);
}

const sl__place_fast_t sl__fast_bestfit = {
    .policy = &sl__place_bestfit,
    .primary = bestfit_primary,
    .gpus = sl__gpus_default,
    .bound = bestfit_bound,
};
