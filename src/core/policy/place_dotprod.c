/*
 * place_dotprod.c - dot product, as configured in the FGD paper's
 * experiments (DotProductScore with dimExtMethod "merge", normMethod "max",
 * GPU selection "best"). Node and task become 2-vectors normalised by the
 * largest node spec:
 *
 *     node = (cpu_free / 128000, gpu_free / 8000)   (before placing)
 *     task = (cpu / 128000,      gpu / 8000)
 *     score = trunc(100 * (1 - (node . task) / 2))  (higher is better)
 *
 * so, as in the simulator, the node whose free vector is LEAST aligned with
 * the task wins. Equal scores: the first node in the run's node order
 * (cy->order_key), as in the reference's runs (policy/place.h). GPUs:
 * the cluster's default (best-fit) rule. O(gpus).
 */
#include "policy/place.h"

static int64_t dotprod_of(const sl_task_req_t *req, int64_t cpu_free, int64_t gpu_free) {
    double n0 = (double)cpu_free / SL__MAX_SPEC_CPU_MILLI;
    double n1 = (double)gpu_free / SL__MAX_SPEC_GPU_MILLI;
    double p0 = (double)req->cpu_milli / SL__MAX_SPEC_CPU_MILLI;
    double p1 = (double)sl__req_gpu_milli(req) / SL__MAX_SPEC_GPU_MILLI;
    double dot = (n0 * p0 + n1 * p1) / 2.0;
    return (int64_t)(100.0 * (1.0 - dot));
}

static int dotprod_score(sl_cycle_t *cy, const sl_task_req_t *req, const sl_node_t *node,
                         uint32_t weight, int64_t *score, sl_place_t *pl) {
    if (sl_node_choose_gpus(node, req, pl) != SL_FIT) return SL_NOFIT;
    int64_t primary = dotprod_of(req, node->cpu_free, sl__node_gpu_free(node));
    (void)weight; /* ties follow the node order, not a draw */
    *score = sl__pack_score(primary, sl__order_tiebreak(cy->order_key, node->id));
    return SL_FIT;
}

const sl_place_policy_t sl__place_dotprod = {
    .name = "dotprod",
    .help = "dot product of free and requested CPU/GPU (FGD paper's DotProd baseline)",
    .score = dotprod_score,
};

/* Fast path: free CPU and the free GPU sum are in the class summary; the
 * whole score of the class's first node in the node order. */
static int dotprod_primary(sl_cycle_t *cy, sl__fast_ctx_t *ctx, const sl_task_req_t *req,
                           const sl__class_t *c, const sl__class_id_t *id, int64_t *primary) {
    *primary = sl__class_order_score(cy, ctx, c, id, dotprod_of(req, c->cpu_free, c->gpu_free));
    return SL_FIT;
}

const sl__place_fast_t sl__fast_dotprod = {
    .policy = &sl__place_dotprod,
    .begin = sl__order_begin,
    .primary = dotprod_primary,
    .gpus = sl__gpus_default,
    .member = sl__class_first_member,
};
