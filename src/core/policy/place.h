/*
 * place.h - private helpers shared by the placement framework (place.c), the
 * fragmentation measure (workload.c) and the placement policies
 * (policy/place_*.c). Not part of the public API.
 *
 * Scores. Every policy reproduces the score of its counterpart in the FGD
 * paper's simulator (hkust-adsl/kubernetes-scheduler-simulator): an integer
 * "primary" score, usually 0..100 after the simulator's own truncation, and
 * the Kubernetes scheduler's rule for equal scores, which picks uniformly at
 * random among the best NODES. Because the framework sees a class of
 * `weight` identical nodes once, a policy packs its score as
 *
 *     primary * 2^32 + tiebreak,   tiebreak = floor(2^32 * u^(1/weight))
 *
 * where u is uniform in [0, 1): u^(1/w) is distributed as the maximum of w
 * independent uniforms, so among classes with the same primary score class i
 * wins with probability w_i / sum(w), i.e. uniformly over their nodes.
 */
#ifndef SLUICE_POLICY_PLACE_H
#define SLUICE_POLICY_PLACE_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "sluice/cluster.h"
#include "sluice/policy.h"
#include "sluice/resources.h"
#include "sluice/rng.h"
#include "sluice/workload.h"

/* The simulator's normalisers (largest node of the Alibaba cluster, the
 * paper's "MaxSpec"): BestFit, DotProd and GpuClustering divide by them. */
#define SL__MAX_SPEC_CPU_MILLI 128000.0
#define SL__MAX_SPEC_GPU_MILLI 8000.0

static inline bool sl__req_whole(const sl_task_req_t *r) {
    return r->gpus > 0;
}
static inline bool sl__req_share(const sl_task_req_t *r) {
    return r->gpus == 0 && r->gpu_milli > 0;
}
static inline bool sl__req_gpu(const sl_task_req_t *r) {
    return r->gpus > 0 || r->gpu_milli > 0;
}
/* Total GPU milli the task takes (the simulator's MilliGpu * GpuNumber). */
static inline int64_t sl__req_gpu_milli(const sl_task_req_t *r) {
    return r->gpus > 0 ? (int64_t)r->gpus * SL_GPU_MILLI : r->gpu_milli;
}

static inline bool sl__gpu_full_free(const sl_node_t *n, int g) {
    return n->gpu_free[g] == SL_GPU_MILLI && n->gpu_mem_free[g] == n->gpu_mem_total;
}
static inline int32_t sl__node_full_free(const sl_node_t *n) {
    int32_t c = 0;
    for (int g = 0; g < n->ngpus; g++) c += sl__gpu_full_free(n, g);
    return c;
}
static inline int64_t sl__node_gpu_free(const sl_node_t *n) {
    int64_t s = 0;
    for (int g = 0; g < n->ngpus; g++) s += n->gpu_free[g];
    return s;
}
static inline bool sl__share_fits_gpu(const sl_node_t *n, int g, const sl_task_req_t *r) {
    return n->gpu_free[g] >= r->gpu_milli && n->gpu_mem_free[g] >= r->gpu_mem_bytes;
}
static inline bool sl__model_ok(const sl_node_t *n, uint64_t mask) {
    if (mask == 0) return true;
    return n->model >= 0 && n->model < SL_MAX_MODELS && (mask & (UINT64_C(1) << n->model));
}

/* The tie-break described above: 0 .. 2^32-1. Consumes one draw. */
static inline int64_t sl__tiebreak(sl_rng_t *rng, uint32_t weight) {
    double u = sl_rng_unit(rng);
    if (weight > 1) u = pow(u, 1.0 / (double)weight);
    int64_t t = (int64_t)(u * 4294967296.0);
    return t > INT64_C(0xffffffff) ? INT64_C(0xffffffff) : t;
}
static inline int64_t sl__pack_score(int64_t primary, int64_t tiebreak) {
    return primary * INT64_C(4294967296) + tiebreak;
}

/* A share placed on GPU g of node (the caller sets pl->node). */
static inline void sl__place_share(const sl_node_t *n, const sl_task_req_t *r, int g,
                                   sl_place_t *pl) {
    pl->node = n->id;
    pl->gpu_mask = 1u << g;
    pl->gpu_milli = r->gpu_milli;
    pl->gpu_mem_bytes = r->gpu_mem_bytes;
}

/*
 * Expected fragmentation of a node state under w (sl_frag_node), memoised
 * inside the workload: the value depends only on which shapes' CPU and
 * memory demands the node meets, its model and the multiset of its GPUs'
 * free compute, so states are keyed by exactly that and repeat often. The
 * memo is a cache: results equal sl_frag_node() bit for bit. It is mutated
 * through a const workload (logically const, like a C++ `mutable`), so one
 * workload must not be used from two threads at once. O(gpus) on a hit,
 * O(shapes * gpus) on a miss.
 */
double sl__frag_node_cached(const sl_workload_t *w, const sl_node_t *node);

/* The registered policies (policy/place_*.c). */
extern const sl_place_policy_t sl__place_firstfit;
extern const sl_place_policy_t sl__place_bestfit;
extern const sl_place_policy_t sl__place_fgd;
extern const sl_place_policy_t sl__place_dotprod;
extern const sl_place_policy_t sl__place_gpupacking;
extern const sl_place_policy_t sl__place_gpuclustering;
extern const sl_place_policy_t sl__place_random;

#endif
