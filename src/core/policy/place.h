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
 *
 * The paper's runs did not use that rule: the simulator is built against a
 * kube-scheduler fork (mental2008/kubernetes v1.20.5-minor) whose selectHost
 * picks the lexicographically smallest node name among the best, and the
 * simulator prefixes every node name with its position in a random
 * permutation drawn afresh for each seed. Ties therefore go to a node order
 * fixed for the run, i.e. first fit over a shuffled node list, the same node
 * winning every tie until it no longer fits. The paper's baselines whose
 * scores tie and whose results depend on it (gpupacking, gpuclustering,
 * dotprod, fgd) use that rule, as primary *
 * 2^32 + sl__order_tiebreak(key, node id) (below), where key =
 * cy->order_key (the scheduler derives it from its seed, so each seed
 * shuffles the nodes its own way, as the reference does). It matters
 * wherever scores tie massively: FGD's score is quantised to 0..100, so
 * with the uniform draw a share that ties on many nodes was spread over
 * them; the node order packs it onto the first (with every GPU pod a share,
 * 19.0% of GPUs unallocated at 100% arrived under the draw, 13.4% under the
 * order, as the paper's 13.4). bestfit keeps the uniform draw: its
 * results are the same under both within 0.25 points on every published
 * workload, and its fast path then needs no node order (bench-core's
 * bestfit rows); random draws a node itself; Sluice's own policies keep
 * the draw.
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

#include "cluster_index.h"

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

/* The node order of key (see the top): node id -> its rank
 * sl__node_rank(key, id) (cluster_index.h, a bijection of the id, so two
 * nodes never tie); the lowest rank wins, so the tie-break term is its
 * complement, 0 .. 2^32-1. */
static inline int64_t sl__order_tiebreak(uint64_t key, uint32_t id) {
    return (int64_t)(UINT32_MAX - sl__node_rank(key, id));
}
/* The node of class cls of cl (its public index, = its dense position) that
 * comes first in the order of cy->order_key: what a fast path's `member`
 * returns. O(1) from the class's heap when the cluster keeps its classes in
 * that order (sl__cluster_order_key, which the scheduler sets to its own
 * key), else O(class size). */
static inline uint32_t sl__class_first_member(const sl_cycle_t *cy, const sl_cluster_t *cl, uint32_t cls) {
    uint64_t key = cy->order_key;
    if (sl__cluster_order_key(cl) == key) return sl__cluster_class_ids(cl)[cls].first;
    uint32_t n = sl_cluster_class_size(cl, cls), best = sl_cluster_class_node(cl, cls, 0);
    for (uint32_t k = 1; k < n; k++) {
        uint32_t id = sl_cluster_class_node(cl, cls, k);
        if (sl__node_rank(key, id) < sl__node_rank(key, best)) best = id;
    }
    return best;
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
 * The GPU choice FGD and fgdbal share: one task of req goes on node, and
 * value(ctx, after) rates the node as it would be after it. A share tries
 * each GPU it fits, one per distinct GPU state (the lowest index), and
 * keeps the highest value, the lowest index on ties; whole GPUs are those
 * sl_node_choose_gpus picks. Sets *pl and *out; SL_NOFIT (nothing set but
 * *pl) if the task does not fit. O(gpus^2 + gpus * cost of value).
 */
static inline int sl__place_best_after(const sl_node_t *node, const sl_task_req_t *req,
                                       double (*value)(void *ctx, const sl_node_t *after),
                                       void *ctx, sl_place_t *pl, double *out) {
    if (sl_node_choose_gpus(node, req, pl) != SL_FIT) return SL_NOFIT;
    sl_node_t t = *node;
    t.cpu_free -= req->cpu_milli;
    t.mem_free -= req->mem_bytes;
    if (sl__req_share(req)) {
        int best_g = -1;
        double best = 0.0;
        for (int g = 0; g < node->ngpus; g++) {
            if (!sl__share_fits_gpu(node, g, req)) continue;
            bool dup = false;
            for (int h = 0; h < g && !dup; h++)
                dup = sl__share_fits_gpu(node, h, req) && node->gpu_free[h] == node->gpu_free[g] &&
                      node->gpu_mem_free[h] == node->gpu_mem_free[g];
            if (dup) continue; /* same state as an earlier GPU: same value, earlier index wins */
            t.gpu_free[g] -= req->gpu_milli;
            t.gpu_mem_free[g] -= req->gpu_mem_bytes;
            double q = value(ctx, &t);
            t.gpu_free[g] = node->gpu_free[g];
            t.gpu_mem_free[g] = node->gpu_mem_free[g];
            if (best_g < 0 || q > best) {
                best_g = g;
                best = q;
            }
        }
        if (best_g < 0) return SL_NOFIT;
        sl__place_share(node, req, best_g, pl);
        *out = best;
        return SL_FIT;
    }
    for (int g = 0; g < node->ngpus; g++) {
        if (!(pl->gpu_mask & (1u << g))) continue;
        t.gpu_free[g] = 0;
        t.gpu_mem_free[g] = 0;
    }
    *out = value(ctx, &t);
    return SL_FIT;
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

/*
 * The fast path (place.c). A built-in policy whose GPU choice on a node is
 * deterministic also exposes its primary score alone, as a function of the
 * class (most read only the 32-byte summary and never touch the node), and
 * its GPU choice. The framework then takes the highest primary over the
 * classes that fit and breaks ties uniformly over NODES with one weighted
 * reservoir draw per tie instead of one tie-break draw per class: the same
 * distribution as `score`, fewer draws. The framework calls `begin` (may be
 * NULL) once per search over the classes, with scratch for the policy.
 * `bound` (may be NULL) gives an upper bound of the primary over classes
 * whose free GPU milli is at least gpu_free_min, so whole buckets can be
 * skipped (of the whole score, with a `member` hook); it must be
 * non-increasing in gpu_free_min.
 *
 * The contracts: for a class c whose nodes fit req, primary() returns SL_FIT
 * and exactly score(...) >> 32 of its representative; gpus() fills pl
 * exactly as score() would on that node.
 *
 * `member` (may be NULL: the task goes to the class representative) is for
 * a policy that breaks ties by the node order of cy->order_key instead of
 * the draw: its score() is then deterministic, primary * 2^32 +
 * sl__order_tiebreak, and its primary() returns the whole score of the
 * class's first node in that order (not >> 32), so no two classes tie;
 * member() names that node (sl__class_first_member), and the task goes there. All nodes of a class
 * have the same state, so only which one is used differs: the one the
 * reference would use, which keeps winning ties until it is full.
 */
typedef struct sl__fast_ctx {
    int32_t rid;      /* fgd: the request's id in the workload's class memo, or -1 */
    uint64_t *row;    /* fgd: that request's row of cached primaries */
    double aux[4 + SL_MAX_MODELS]; /* fgdbal: the workload's rates, then each model's scarcity */
    bool keyed;       /* sl__order_begin: the cluster keeps its classes in cy->order_key's order */
} sl__fast_ctx_t;

typedef struct sl__place_fast {
    const sl_place_policy_t *policy;
    void (*begin)(sl_cycle_t *cy, const sl_task_req_t *req, sl__fast_ctx_t *ctx);
    int (*primary)(sl_cycle_t *cy, sl__fast_ctx_t *ctx, const sl_task_req_t *req, const sl__class_t *c,
                   const sl__class_id_t *id, int64_t *primary);
    int (*gpus)(sl_cycle_t *cy, const sl_task_req_t *req, const sl_node_t *node, sl_place_t *pl);
    int64_t (*bound)(const sl_task_req_t *req, int32_t gpu_free_min);
    uint32_t (*member)(const sl_cycle_t *cy, const sl_cluster_t *cl, uint32_t cls);
} sl__place_fast_t;

/* For a fast path whose ties follow the node order: notes once per search
 * whether each class's first member in that order is at hand (id->first). */
static inline void sl__order_begin(sl_cycle_t *cy, const sl_task_req_t *req, sl__fast_ctx_t *ctx) {
    (void)req;
    ctx->keyed = sl__cluster_order_key(cy->cluster) == cy->order_key;
}

/* A fast path's whole score of class c (id: its identity) under the order
 * of cy->order_key: primary and the tie-break of the class's first member
 * in that order, which is what score() gives that node (the primary() of a
 * policy with a `member` hook). O(1) after sl__order_begin found the
 * cluster keyed so, else O(class size). */
static inline int64_t sl__class_order_score(const sl_cycle_t *cy, const sl__fast_ctx_t *ctx,
                                            const sl__class_t *c, const sl__class_id_t *id,
                                            int64_t primary) {
    const sl_cluster_t *cl = cy->cluster;
    uint32_t first = ctx->keyed ? id->first
                                : sl__class_first_member(cy, cl, (uint32_t)(c - sl__cluster_classes(cl)));
    return sl__pack_score(primary, sl__order_tiebreak(cy->order_key, first));
}

/* sl_node_choose_gpus as a fast-path gpus() (the default best-fit rule). */
static inline int sl__gpus_default(sl_cycle_t *cy, const sl_task_req_t *req, const sl_node_t *node,
                                   sl_place_t *pl) {
    (void)cy;
    return sl_node_choose_gpus(node, req, pl);
}

/*
 * The workload's per-class memo for FGD (workload.c). A class's state never
 * changes while it lives, so F(before) of class (slot, uid) and the primary
 * of placing a given request shape there are computed once per class.
 * sl__class_memo_begin interns req (pool ignored) and returns its id and
 * row (slots up to sl__cluster_slot_count(cl)), or -1 and NULL when the
 * memo cannot hold it; sl__class_memo_before returns F of the class
 * (computing it from its representative on a miss) and its version, which
 * a row entry must carry to be valid. Row entries are (version << 8) |
 * primary, primary in 0..255. All logically const, as sl__frag_node_cached.
 */
int32_t sl__class_memo_begin(const sl_workload_t *w, const sl_cluster_t *cl, const sl_task_req_t *req,
                             uint64_t **row);
double sl__class_memo_before(const sl_workload_t *w, const sl_cluster_t *cl, const sl__class_t *c,
                             const sl__class_id_t *id, uint64_t *version);

/* Fast paths of the built-in policies (NULL-terminated, place.c looks a
 * policy up here by pointer; a policy without one uses `score`). */
extern const sl__place_fast_t sl__fast_firstfit, sl__fast_bestfit, sl__fast_fgd, sl__fast_dotprod,
    sl__fast_gpupacking, sl__fast_gpuclustering;

/* The registered policies (policy/place_*.c). */
extern const sl_place_policy_t sl__place_firstfit;
extern const sl_place_policy_t sl__place_bestfit;
extern const sl_place_policy_t sl__place_fgd;
extern const sl_place_policy_t sl__place_dotprod;
extern const sl_place_policy_t sl__place_gpupacking;
extern const sl_place_policy_t sl__place_gpuclustering;
extern const sl_place_policy_t sl__place_random;

#endif
