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

static int bestfit_score(sl_cycle_t *cy, const sl_task_req_t *req, const sl_node_t *node,
                         uint32_t weight, int64_t *score, sl_place_t *pl) {
    if (sl_node_choose_gpus(node, req, pl) != SL_FIT) return SL_NOFIT;
    double s = 0.0;
    s += ((double)(node->cpu_free - req->cpu_milli)) / SL__MAX_SPEC_CPU_MILLI * 0.5;
    s += ((double)(sl__node_gpu_free(node) - sl__req_gpu_milli(req))) / SL__MAX_SPEC_GPU_MILLI * 0.5;
    int64_t primary = (int64_t)((1.0 - s) * 100.0);
    *score = sl__pack_score(primary, sl__tiebreak(cy->rng, weight));
    return SL_FIT;
}

const sl_place_policy_t sl__place_bestfit = {
    .name = "bestfit",
    .help = "node with the least CPU and GPU left after placing (FGD paper's BestFit)",
    .score = bestfit_score,
};
