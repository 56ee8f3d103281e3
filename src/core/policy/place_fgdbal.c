/*
 * place_fgdbal.c - fragmentation gradient descent with resource balance
 * (Sluice's own placement policy; evidence in docs/placement.md).
 *
 * FGD (Weng et al., USENIX ATC'23; place_fgd.c) places a task where the
 * workload's expected GPU fragmentation F grows least. F looks at one task
 * at a time: a node with 8 free GPUs and 12 free CPUs counts as fully usable
 * for a 1-GPU task asking for 11 CPUs, although only one such task fits and
 * the 7 other GPUs are stranded for want of CPU. On the Alibaba trace that is
 * where FGD loses: a greedy, exact FGD leaves ~1% of the cluster's GPUs on
 * nodes whose CPU is gone at 100% arrived, and the paper's FGD avoids only
 * part of it through the coarse quantisation of its score (trunc(100 *
 * sigmoid)) and random tie-breaks among the many resulting ties.
 *
 * fgdbal scores, in GPU milli, exactly (no sigmoid, no truncation):
 *
 *     v = D - [S(after) - S(before)] + pack - gpu * scarcity(model)
 *
 *  - S, the stranded GPU: the workload's GPU tasks need on average r_cpu
 *    CPU milli and r_mem bytes per GPU milli (sums over its typical shapes,
 *    weighted by count); the GPU milli of a node that its remaining CPU or
 *    memory cannot feed at those rates is stranded:
 *        S = max(0, gpu_free - cpu_free / r_cpu, gpu_free - mem_free / r_mem)
 *  - D, FGD's fragmentation decrease F(before) - F(after), except that
 *    shapes asking for g >= 2 whole GPUs weigh g times their count instead
 *    of once. With count weights alone the stranding term happily spends the
 *    few CPU-rich nodes that big multi-GPU tasks can use at all (measured:
 *    +1.3 points on a synthetic mix whose 8-GPU tasks fit only 60 nodes);
 *    weighting those shapes by the GPUs they need restores the balance. D is
 *    FGD's memoised F plus a correction over the multi-GPU shapes only:
 *        D = [T d + sum_m c_m (g_m - 1) (f_m(before) - f_m(after))] / (T + y)
 *    (d the memoised decrease, T the workload's count, c_m, g_m, f_m a
 *    multi-GPU shape's count, GPUs and fragmentation, y = sum c_m (g_m - 1)).
 *  - pack = 10 milli if the node already runs something: a mild preference
 *    for used nodes that keeps empty ones whole.
 *  - scarcity, when some shapes are constrained to GPU models: for model m,
 *    the share of the GPU demand that can only run on m (a constrained
 *    shape's demand split evenly over the models it allows) divided by m's
 *    share of the up GPUs, capped at 1; gpu is the GPU milli the task takes.
 *    A GPU of a model that constrained tasks need is, with about that
 *    probability, one they will miss; F and S see fragmentation, not such
 *    consumption. (Measured: 33% of GPU tasks constrained to a model drawn
 *    by node count, FGD leaves 14.05% unallocated, fgdbal 5.30%.) The term
 *    is the same for every node a task constrained to one model may use.
 *
 * A share is tried on every GPU it fits on (each distinct GPU state once)
 * and goes where v is highest (lowest index among equals); whole GPUs take
 * the lowest-numbered free ones; a CPU-only task only consumes CPU and
 * memory (and is steered away from nodes whose GPUs need them). Exact ties
 * between nodes are broken uniformly at random over nodes (policy/place.h).
 *
 * Workload assumption: the typical shapes (cy->workload) describe the tasks
 * to come, as for FGD. Without GPU shapes S is zero; without multi-GPU
 * shapes D is FGD's decrease; without constrained shapes there is no
 * scarcity term.
 *
 * Cost. The framework's fast path (place.c) computes the rates and y once
 * per search (O(shapes); the scarcities, only with constrained shapes, in
 * O(classes + shapes)) and takes F(before) of each class from the
 * workload's class memo; each class that fits then costs one F (memoised,
 * O(gpus) on a hit) and one S (O(gpus)) per distinct GPU state of its
 * representative, plus a scan of the shapes for the multi-GPU correction
 * only on nodes with at least 2 entirely free GPUs (elsewhere no multi-GPU
 * shape fits before or after and the correction is y times the GPU taken).
 * A class never changes state while it lives, so that primary (all but the
 * scarcity term, which depends on the cluster's capacity by model and is
 * added from the class summary) is cached per (class, request shape) in the
 * workload's class memo, as FGD caches its own (24 bits, tagged; see
 * fgdbal_primary): a repeated shape then costs a few loads per class.
 * Measured 1.1x FGD's per-decision time (fill protocol and 10,000 nodes).
 * The generic path (score) pays the rates (and scarcities) on every call.
 */
#include "cluster_index.h"
#include "policy/place.h"

/* Preference, in GPU milli, for a node that already runs something. */
#define FGDBAL_PACK_MILLI 10.0
/* Score resolution: 1/64 of a GPU milli. */
#define FGDBAL_SCALE 64.0

typedef struct rates {
    double cpu_per_milli; /* CPU milli per GPU milli; 0 = no GPU shapes */
    double mem_per_milli; /* bytes per GPU milli */
    double multi;         /* sum over multi-GPU shapes of count * (GPUs - 1) */
    bool constrained;     /* some GPU shape names the models it may use */
} rates_t;

/* Popularity-weighted CPU and memory per GPU milli of the workload's GPU
 * shapes. O(shapes). */
static rates_t workload_rates(const sl_workload_t *w) {
    rates_t r = {0.0, 0.0, 0.0, false};
    double cpu = 0.0, mem = 0.0, gpu = 0.0, multi = 0.0;
    size_t ns = sl_workload_shape_count(w);
    for (size_t i = 0; i < ns; i++) {
        int64_t c;
        const sl_task_req_t *s = sl_workload_shape(w, i, &c);
        if (!sl__req_gpu(s)) continue;
        if (s->model_mask) r.constrained = true;
        if (s->gpus >= 2) multi += (double)c * (double)(s->gpus - 1);
        cpu += (double)c * (double)s->cpu_milli;
        mem += (double)c * (double)s->mem_bytes;
        gpu += (double)c * (double)sl__req_gpu_milli(s);
    }
    r.multi = multi;
    if (gpu > 0.0) {
        r.cpu_per_milli = cpu / gpu;
        r.mem_per_milli = mem / gpu;
    }
    return r;
}

/*
 * Scarcity of each GPU model m: the share of the workload's GPU demand that
 * can only run on m (a constrained shape's demand split evenly over the
 * models it allows that the cluster has), divided by m's share of the up
 * GPUs, capped at 1. A GPU of model m taken by a task that could have gone
 * elsewhere is, with about that probability, one a task constrained to m
 * will miss. Fills scarce[0..SL_MAX_MODELS-1]. O(classes + shapes).
 */
static void model_scarcity(const sl_workload_t *w, const sl_cluster_t *cl, double *scarce) {
    double cap[SL_MAX_MODELS] = {0}, dem[SL_MAX_MODELS] = {0}, cap_all = 0.0, dem_all = 0.0;
    const sl__class_t *cs = sl__cluster_classes(cl);
    const sl__class_id_t *ids = sl__cluster_class_ids(cl);
    size_t nc = sl_cluster_class_count(cl);
    for (size_t i = 0; i < nc; i++) {
        if (cs[i].model < 0 || cs[i].model >= SL_MAX_MODELS) continue;
        double g = (double)cs[i].ngpus * (double)ids[i].size;
        cap[cs[i].model] += g;
        cap_all += g;
    }
    uint64_t present = 0;
    for (int m = 0; m < SL_MAX_MODELS; m++)
        if (cap[m] > 0.0) present |= UINT64_C(1) << m;
    size_t ns = sl_workload_shape_count(w);
    for (size_t i = 0; i < ns; i++) {
        int64_t c;
        const sl_task_req_t *s = sl_workload_shape(w, i, &c);
        if (!sl__req_gpu(s)) continue;
        double d = (double)c * (double)sl__req_gpu_milli(s);
        dem_all += d;
        uint64_t mk = s->model_mask & present;
        if (s->model_mask == 0 || mk == 0) continue;
        double each = d / (double)__builtin_popcountll(mk);
        for (int m = 0; m < SL_MAX_MODELS; m++)
            if ((mk >> m) & 1u) dem[m] += each;
    }
    for (int m = 0; m < SL_MAX_MODELS; m++) {
        double x = 0.0;
        if (cap[m] > 0.0 && dem_all > 0.0) x = (dem[m] / dem_all) / (cap[m] / cap_all);
        scarce[m] = x < 1.0 ? x : 1.0;
    }
}

/* GPU milli of node that its free CPU and memory cannot feed. O(gpus). */
static double stranded(const sl_node_t *n, const rates_t *r) {
    double fg = (double)sl__node_gpu_free(n), s = 0.0;
    if (fg <= 0.0) return 0.0;
    if (r->cpu_per_milli > 0.0) {
        double x = fg - (double)n->cpu_free / r->cpu_per_milli;
        if (x > s) s = x;
    }
    if (r->mem_per_milli > 0.0) {
        double x = fg - (double)n->mem_free / r->mem_per_milli;
        if (x > s) s = x;
    }
    return s;
}

static bool node_in_use(const sl_node_t *n) {
    if (n->cpu_free != n->cpu_total || n->mem_free != n->mem_total) return true;
    for (int g = 0; g < n->ngpus; g++)
        if (n->gpu_free[g] != SL_GPU_MILLI) return true;
    return false;
}

/* What the fragmentation of a multi-GPU shape depends on (O(gpus) to get). */
typedef struct nsum {
    int64_t total, partial; /* free milli: all GPUs, GPUs not entirely free */
    int64_t cpu, mem;
    int32_t full, model;
} nsum_t;

static nsum_t summary_of(const sl_node_t *n) {
    nsum_t s = {0, 0, n->cpu_free, n->mem_free, 0, n->model};
    for (int g = 0; g < n->ngpus; g++) {
        s.total += n->gpu_free[g];
        if (sl__gpu_full_free(n, g))
            s.full++;
        else
            s.partial += n->gpu_free[g];
    }
    return s;
}

/* sl_frag_node_shape for a whole-GPU shape, from the summary. O(1). */
static int64_t frag_whole(const nsum_t *n, const sl_task_req_t *m) {
    bool model = m->model_mask == 0 ||
                 (n->model >= 0 && n->model < SL_MAX_MODELS && (m->model_mask >> n->model) & 1u);
    if (!model || n->cpu < m->cpu_milli || n->mem < m->mem_bytes || n->full < m->gpus) return n->total;
    return n->partial;
}

/*
 * FGD's fragmentation delta with multi-GPU shapes weighted by their GPU
 * count: [T * d + sum_m c_m (g_m - 1) (frag_m(b) - frag_m(a))] / (T + y),
 * over the shapes m asking for g_m >= 2 whole GPUs (c_m their count, T the
 * workload's total, y = rates_t.multi, d = F(b) - F(a) from the memo). When
 * b has fewer than 2 entirely free GPUs, no multi-GPU shape fits before or
 * after, every frag_m is the total free and the sum is y * (total(b) -
 * total(a)) without a scan. O(shapes) otherwise.
 */
static double frag_delta(const sl_workload_t *w, const rates_t *r, double d, const nsum_t *b,
                         const nsum_t *a) {
    double y = r->multi, x = 0.0;
    if (y <= 0.0) return d;
    if (b->full < 2) {
        x = y * (double)(b->total - a->total);
    } else {
        size_t ns = sl_workload_shape_count(w);
        for (size_t i = 0; i < ns; i++) {
            int64_t c;
            const sl_task_req_t *m = sl_workload_shape(w, i, &c);
            if (m->gpus < 2) continue;
            x += (double)c * (double)(m->gpus - 1) * (double)(frag_whole(b, m) - frag_whole(a, m));
        }
    }
    double t = (double)sl_workload_total(w);
    return (t * d + x) / (t + y);
}

/* v for the node state t after placing, relative to node before. */
static double value(const sl_workload_t *w, const rates_t *r, double f_before, double s_before,
                    const nsum_t *b, const sl_node_t *t) {
    nsum_t a = summary_of(t);
    double d = frag_delta(w, r, f_before - sl__frag_node_cached(w, t), b, &a);
    return d - (stranded(t, r) - s_before);
}

/* What sl__place_best_after rates a node state by: value() with the
 * workload's rates and the node's state before the task. */
typedef struct fgdbal_ctx {
    const sl_workload_t *w;
    const rates_t *r;
    double f_before, s_before;
    const nsum_t *b;
} fgdbal_ctx_t;

static double fgdbal_value(void *ctx, const sl_node_t *after) {
    const fgdbal_ctx_t *c = ctx;
    return value(c->w, c->r, c->f_before, c->s_before, c->b, after);
}

/*
 * Evaluates placing one task of req on node: fills *pl with the GPUs and *v
 * with the value without the scarcity term. SL_NOFIT if the node cannot
 * hold it.
 */
static int fgdbal_eval(const sl_workload_t *w, const rates_t *r, const sl_task_req_t *req, const sl_node_t *node, double f_before, double *v,
                       sl_place_t *pl) {
    nsum_t b = summary_of(node);
    fgdbal_ctx_t c = {w, r, f_before, stranded(node, r), &b};
    if (sl__place_best_after(node, req, fgdbal_value, &c, pl, v) != SL_FIT) return SL_NOFIT;
    if (node_in_use(node)) *v += FGDBAL_PACK_MILLI;
    return SL_FIT;
}

static int64_t primary_of(double v) {
    return llround(v * FGDBAL_SCALE);
}

/* The scarcity term, scaled like the primary: gpu * scarcity(model). It is
 * rounded on its own so that the fast path can cache the rest per class
 * (the rest depends only on the class's state; this term on the cluster's
 * capacity by model). */
static int64_t scarcity_of(const double *scarce, const sl_task_req_t *req, int32_t model) {
    if (!scarce || !sl__req_gpu(req) || model < 0 || model >= SL_MAX_MODELS) return 0;
    return llround((double)sl__req_gpu_milli(req) * scarce[model] * FGDBAL_SCALE);
}

static int fgdbal_score(sl_cycle_t *cy, const sl_task_req_t *req, const sl_node_t *node,
                        uint32_t weight, int64_t *score, sl_place_t *pl) {
    const sl_workload_t *w = cy->workload;
    rates_t r = workload_rates(w);
    double scarce[SL_MAX_MODELS], v;
    if (r.constrained) model_scarcity(w, cy->cluster, scarce);
    if (fgdbal_eval(w, &r, req, node, sl__frag_node_cached(w, node), &v, pl) != SL_FIT)
        return SL_NOFIT;
    int64_t p = primary_of(v) - scarcity_of(r.constrained ? scarce : NULL, req, node->model);
    *score = sl__pack_score(p, sl__tiebreak(cy->rng, weight));
    return SL_FIT;
}

const sl_place_policy_t sl__place_fgdbal = {
    .name = "fgdbal",
    .help = "FGD's fragmentation delta plus GPUs stranded by CPU/memory, exact, packing (Sluice)",
    .score = fgdbal_score,
};

/* ---- the framework's fast path (policy/place.h) ---- */

/* Once per search: the rates (O(shapes)), the models' scarcity when some
 * shape is constrained (O(classes + shapes)), and the workload's per-class
 * memo of F(before), shared with FGD. */
static void fgdbal_begin(sl_cycle_t *cy, const sl_task_req_t *req, sl__fast_ctx_t *ctx) {
    rates_t r = workload_rates(cy->workload);
    ctx->aux[0] = r.cpu_per_milli;
    ctx->aux[1] = r.mem_per_milli;
    ctx->aux[2] = r.multi;
    ctx->aux[3] = r.constrained ? 1.0 : 0.0;
    if (r.constrained) model_scarcity(cy->workload, cy->cluster, ctx->aux + 4);
    ctx->rid = sl__class_memo_begin(cy->workload, cy->cluster, req, &ctx->row);
}

/*
 * The class memo's row entries (place.h) are FGD's (version << 8 | 8-bit
 * primary); fgdbal's primary is wider, so its entries are
 * CACHE_TAG | version << 24 | (primary + 2^23), 24 bits: the tag keeps the
 * two layouts from ever validating each other's entries should one
 * workload serve both policies (FGD's versions stay far below 2^55, fgdbal
 * accepts only tagged entries). Versions at or above 2^39 and primaries
 * outside 24 bits are simply not cached.
 */
#define CACHE_TAG (UINT64_C(1) << 63)
#define CACHE_BIAS (INT64_C(1) << 23)
#define CACHE_VER_MAX (UINT64_C(1) << 39)

static int fgdbal_primary(sl_cycle_t *cy, sl__fast_ctx_t *ctx, const sl_task_req_t *req,
                          const sl__class_t *c, const sl__class_id_t *id, int64_t *primary) {
    uint64_t ver;
    double before = sl__class_memo_before(cy->workload, cy->cluster, c, id, &ver);
    const double *scarce = ctx->aux[3] != 0.0 ? ctx->aux + 4 : NULL;
    bool cache = ctx->row && ver && ver < CACHE_VER_MAX;
    if (cache) {
        uint64_t e = ctx->row[id->slot];
        if ((e & CACHE_TAG) && ((e & ~CACHE_TAG) >> 24) == ver) {
            *primary = (int64_t)(e & 0xffffff) - CACHE_BIAS - scarcity_of(scarce, req, c->model);
            return SL_FIT;
        }
    }
    rates_t r = {ctx->aux[0], ctx->aux[1], ctx->aux[2], scarce != NULL};
    sl_place_t pl;
    double v;
    if (fgdbal_eval(cy->workload, &r, req, sl_cluster_node(cy->cluster, c->rep), before, &v, &pl) !=
        SL_FIT)
        return SL_NOFIT;
    int64_t p = primary_of(v);
    if (cache && p >= -CACHE_BIAS && p < CACHE_BIAS)
        ctx->row[id->slot] = CACHE_TAG | ver << 24 | (uint64_t)(p + CACHE_BIAS);
    *primary = p - scarcity_of(scarce, req, c->model);
    return SL_FIT;
}

static int fgdbal_gpus(sl_cycle_t *cy, const sl_task_req_t *req, const sl_node_t *node,
                       sl_place_t *pl) {
    /* The scarcity term is the same for every GPU of the node: not needed
     * to choose them. */
    rates_t r = workload_rates(cy->workload);
    double v;
    return fgdbal_eval(cy->workload, &r, req, node, sl__frag_node_cached(cy->workload, node), &v, pl);
}

const sl__place_fast_t sl__fast_fgdbal = {
    .policy = &sl__place_fgdbal,
    .begin = fgdbal_begin,
    .primary = fgdbal_primary,
    .gpus = fgdbal_gpus,
    .bound = NULL,
};
