/*
 * place_random.c - a node chosen uniformly at random among those that fit
 * (the FGD paper's Random baseline), and for a share a GPU chosen uniformly
 * among the GPUs it fits on (the simulator's "random" GPU selection); whole
 * GPUs take the lowest-numbered free ones. Uniform over NODES although the
 * framework sees classes: the score is a draw distributed as the maximum of
 * `weight` uniforms (policy/place.h). Reproducible from the cycle's seeded
 * RNG. O(gpus).
 */
#include "policy/place.h"

static int random_score(sl_cycle_t *cy, const sl_task_req_t *req, const sl_node_t *node,
                        uint32_t weight, int64_t *score, sl_place_t *pl) {
    if (sl_node_choose_gpus(node, req, pl) != SL_FIT) return SL_NOFIT;
    if (sl__req_share(req)) {
        uint64_t seen = 0;
        int pick = -1;
        for (int g = 0; g < node->ngpus; g++) {
            if (!sl__share_fits_gpu(node, g, req)) continue;
            if (sl_rng_below(cy->rng, ++seen) == 0) pick = g;
        }
        if (pick < 0) return SL_NOFIT;
        sl__place_share(node, req, pick, pl);
    }
    *score = sl__tiebreak(cy->rng, weight);
    return SL_FIT;
}

const sl_place_policy_t sl__place_random = {
    .name = "random",
    .help = "uniformly random node that fits (FGD paper's Random baseline)",
    .score = random_score,
};
