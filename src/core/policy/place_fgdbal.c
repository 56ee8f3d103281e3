/*
 * place_fgdbal.c - fragmentation gradient descent with resource balance
 * (Sluice's own placement policy).
 *
 * FGD (Weng et al., USENIX ATC'23; place_fgd.c) places a task where the
 * workload's expected GPU fragmentation F grows least. F looks at one task
 * at a time: a node with 8 free GPUs and 12 free CPUs counts as fully usable
 * for a 1-GPU task asking for 11 CPUs, although only one such task fits and
 * the 7 other GPUs are stranded for want of CPU. Measured on the Alibaba
 * trace (docs/placement.md), this is where FGD loses: at 100% arrived a
 * greedy, exact FGD leaves ~1% of the cluster's GPUs on nodes whose CPU is
 * gone, and the paper's FGD only avoids part of it through the coarse
 * quantisation of its score (trunc(100 * sigmoid)) and random tie-breaks.
 *
 * fgdbal adds the missing term. The workload's GPU tasks need, on average,
 * r_cpu CPU milli and r_mem bytes per GPU milli (popularity-weighted over its
 * typical shapes). The GPU milli of a node that its remaining CPU or memory
 * cannot feed at those rates is stranded:
 *
 *     S(node) = max(0, gpu_free - cpu_free / r_cpu, gpu_free - mem_free / r_mem)
 *
 * and the value of placing the task is, in GPU milli,
 *
 *     v = [F(before) - F(after)] - [S(after) - S(before)] + pack
 *
 * where pack = 10 milli if the node already runs something (a mild
 * preference for used nodes that keeps empty ones whole for gangs). The
 * value is used exactly, without FGD's sigmoid and its truncation: the
 * stranding term is what FGD's random tie-breaks were compensating for.
 * A share is tried on every GPU it fits on (each distinct GPU state once)
 * and goes where v is highest (lowest index among equals); whole GPUs take
 * the lowest-numbered free ones; a CPU-only task only consumes CPU and
 * memory (and is steered away from nodes whose GPUs need them). Exact ties
 * between nodes are broken uniformly at random over nodes (policy/place.h).
 *
 * Workload assumption: the typical shapes (cy->workload) describe the tasks
 * to come, as for FGD. With no GPU shapes in the workload the stranding term
 * is zero and fgdbal is exact FGD plus the packing preference.
 *
 * Cost per node class: O(shapes) for the two rates (simple sums), plus per
 * distinct GPU state one F (memoised in the workload: O(gpus) on a hit) and
 * one S (O(gpus)). Within a small factor of FGD's.
 */
#include "policy/place.h"

/* Preference, in GPU milli, for a node that already runs something. */
#define FGDBAL_PACK_MILLI 10.0
/* Score resolution: 1/64 of a GPU milli. */
#define FGDBAL_SCALE 64.0

typedef struct rates {
    double cpu_per_milli; /* CPU milli per GPU milli; 0 = no GPU shapes */
    double mem_per_milli; /* bytes per GPU milli */
} rates_t;

/* Popularity-weighted CPU and memory per GPU milli of the workload's GPU
 * shapes. O(shapes). */
static rates_t workload_rates(const sl_workload_t *w) {
    double cpu = 0.0, mem = 0.0, gpu = 0.0;
    size_t ns = sl_workload_shape_count(w);
    for (size_t i = 0; i < ns; i++) {
        int64_t c;
        const sl_task_req_t *s = sl_workload_shape(w, i, &c);
        if (!sl__req_gpu(s)) continue;
        cpu += (double)c * (double)s->cpu_milli;
        mem += (double)c * (double)s->mem_bytes;
        gpu += (double)c * (double)sl__req_gpu_milli(s);
    }
    rates_t r = {0.0, 0.0};
    if (gpu > 0.0) {
        r.cpu_per_milli = cpu / gpu;
        r.mem_per_milli = mem / gpu;
    }
    return r;
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

/* v for the node state t after placing, relative to node before. */
static double value(const sl_workload_t *w, const rates_t *r, double f_before, double s_before,
                    const sl_node_t *t) {
    return (f_before - sl__frag_node_cached(w, t)) - (stranded(t, r) - s_before);
}

/*
 * Evaluates placing one task of req on node: fills *pl with the GPUs and *v
 * with the value. SL_NOFIT if the node cannot hold it.
 */
static int fgdbal_eval(const sl_workload_t *w, const rates_t *r, const sl_task_req_t *req,
                       const sl_node_t *node, double f_before, double *v, sl_place_t *pl) {
    if (sl_node_choose_gpus(node, req, pl) != SL_FIT) return SL_NOFIT;
    double s_before = stranded(node, r);
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
            double q = value(w, r, f_before, s_before, &t);
            t.gpu_free[g] = node->gpu_free[g];
            t.gpu_mem_free[g] = node->gpu_mem_free[g];
            if (best_g < 0 || q > best) {
                best_g = g;
                best = q;
            }
        }
        if (best_g < 0) return SL_NOFIT;
        sl__place_share(node, req, best_g, pl);
        *v = best;
    } else {
        for (int g = 0; g < node->ngpus; g++) {
            if (!(pl->gpu_mask & (1u << g))) continue;
            t.gpu_free[g] = 0;
            t.gpu_mem_free[g] = 0;
        }
        *v = value(w, r, f_before, s_before, &t);
    }
    if (node_in_use(node)) *v += FGDBAL_PACK_MILLI;
    return SL_FIT;
}

static int64_t primary_of(double v) {
    return llround(v * FGDBAL_SCALE);
}

static int fgdbal_score(sl_cycle_t *cy, const sl_task_req_t *req, const sl_node_t *node,
                        uint32_t weight, int64_t *score, sl_place_t *pl) {
    const sl_workload_t *w = cy->workload;
    rates_t r = workload_rates(w);
    double v;
    if (fgdbal_eval(w, &r, req, node, sl__frag_node_cached(w, node), &v, pl) != SL_FIT)
        return SL_NOFIT;
    *score = sl__pack_score(primary_of(v), sl__tiebreak(cy->rng, weight));
    return SL_FIT;
}

const sl_place_policy_t sl__place_fgdbal = {
    .name = "fgdbal",
    .help = "FGD's fragmentation delta plus GPUs stranded by CPU/memory, exact, packing (Sluice)",
    .score = fgdbal_score,
};

/* ---- the framework's fast path (policy/place.h) ---- */

/* Once per search: the rates (O(shapes)) and the workload's per-class memo
 * of F(before), shared with FGD. */
static void fgdbal_begin(sl_cycle_t *cy, const sl_task_req_t *req, sl__fast_ctx_t *ctx) {
    rates_t r = workload_rates(cy->workload);
    ctx->aux[0] = r.cpu_per_milli;
    ctx->aux[1] = r.mem_per_milli;
    ctx->rid = sl__class_memo_begin(cy->workload, cy->cluster, req, &ctx->row);
}

static int fgdbal_primary(sl_cycle_t *cy, sl__fast_ctx_t *ctx, const sl_task_req_t *req,
                          const sl__class_t *c, const sl__class_id_t *id, int64_t *primary) {
    uint64_t ver;
    double before = sl__class_memo_before(cy->workload, cy->cluster, c, id, &ver);
    rates_t r = {ctx->aux[0], ctx->aux[1]};
    sl_place_t pl;
    double v;
    if (fgdbal_eval(cy->workload, &r, req, sl_cluster_node(cy->cluster, c->rep), before, &v, &pl) !=
        SL_FIT)
        return SL_NOFIT;
    *primary = primary_of(v);
    return SL_FIT;
}

static int fgdbal_gpus(sl_cycle_t *cy, const sl_task_req_t *req, const sl_node_t *node,
                       sl_place_t *pl) {
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
