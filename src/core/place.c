/*
 * place.c - the placement framework: the policy registry, placing one task,
 * and placing a gang all-or-none.
 *
 * One task (sl_place_task). The cluster's free-capacity index groups the up
 * nodes whose placement-relevant state is identical into classes. Every
 * class is evaluated once, through its representative node: the framework
 * filters it (sl_node_fits: state, pool, model, CPU, memory, GPUs) and asks
 * the policy for a score and a GPU choice, passing the class size as the
 * weight so that randomised policies can stay uniform over nodes (see
 * policy/place.h). The highest score wins; on equal scores the lower class
 * index wins, so a decision is a pure function of the cluster, the request
 * and the RNG state. Cost: O(classes * cost of score).
 *
 * A gang (sl_place_gang): n identical tasks, all or none, on as few nodes as
 * possible. Each round picks, among the classes, the node that can hold the
 * most of the remaining tasks (sl_node_fit_count capped at the remainder);
 * the policy's score breaks ties between nodes that hold the same number, so
 * for n == 1 a gang is placed exactly as sl_place_task would place it. All
 * the tasks that node can hold go there at once (the policy picks each
 * task's GPUs on the node as it fills up), then the next round starts. The
 * first round also sums what every node could hold; if that is less than n
 * the gang fails before allocating anything. Greedy largest-first is optimal
 * for the node count when, as here, each node's capacity for the gang's
 * tasks is independent of the others. On failure everything taken is
 * released in reverse order, so the cluster is left exactly as it was.
 * Cost: O(rounds * classes * cost of score), rounds <= nodes used.
 *
 * "Does not fit" comes with a reason for `sluice show`, and SL_NOFIT_EVER
 * when the request could not be placed even on the empty cluster (checked
 * against node totals, any node state, with an early exit).
 */
#include <stdarg.h>
#include <stdio.h> /* vsnprintf only: formats reasons, no I/O */
#include <string.h>

#include "sluice/cluster.h"
#include "sluice/error.h"
#include "sluice/policy.h"

#include "policy/place.h"

static const sl_place_policy_t *const registry[] = {
    &sl__place_firstfit,   &sl__place_bestfit,       &sl__place_fgd,    &sl__place_dotprod,
    &sl__place_gpupacking, &sl__place_gpuclustering, &sl__place_random, NULL};

const sl_place_policy_t *sl_place_policy_find(const char *name) {
    if (!name) return NULL;
    for (size_t i = 0; registry[i]; i++)
        if (strcmp(registry[i]->name, name) == 0) return registry[i];
    return NULL;
}

const sl_place_policy_t *const *sl_place_policy_list(void) {
    return registry;
}

const char *sl_place_policy_default(void) {
    return "bestfit";
}

/* ---- capacity of the empty cluster ---- */

/* How many tasks of req node could hold if it were empty and up. */
static int32_t empty_fit_count(const sl_node_t *node, const sl_task_req_t *req, int32_t limit) {
    sl_node_t e = *node;
    e.state = SL_NODE_UP;
    e.cpu_free = e.cpu_total;
    e.mem_free = e.mem_total;
    for (int g = 0; g < e.ngpus; g++) {
        e.gpu_free[g] = SL_GPU_MILLI;
        e.gpu_mem_free[g] = e.gpu_mem_total;
    }
    return sl_node_fit_count(&e, req, limit);
}

/* Tasks of req the empty cluster could hold, counting up to n (early exit). */
static int32_t empty_capacity(const sl_cluster_t *cl, const sl_task_req_t *req, int32_t n) {
    int32_t sum = 0;
    size_t nn = sl_cluster_node_count(cl);
    for (uint32_t id = 0; id < nn && sum < n; id++)
        sum += empty_fit_count(sl_cluster_node(cl, id), req, n - sum);
    return sum;
}

/*
 * sl_node_fits for a class representative (up by construction), with the
 * cheapest and most selective tests first: this runs once per class per
 * decision and is the framework's hot loop.
 */
static inline bool quick_fits(const sl_node_t *n, const sl_task_req_t *r) {
    if (n->cpu_free < r->cpu_milli || n->mem_free < r->mem_bytes) return false;
    if (r->pool != -1 && n->pool != r->pool) return false;
    if (!sl__model_ok(n, r->model_mask)) return false;
    if (r->gpus > 0) {
        int32_t need = r->gpus;
        for (int g = 0; g < n->ngpus; g++)
            if (sl__gpu_full_free(n, g) && --need == 0) return n->state == SL_NODE_UP;
        return false;
    }
    if (r->gpu_milli > 0) {
        for (int g = 0; g < n->ngpus; g++)
            if (sl__share_fits_gpu(n, g, r)) return n->state == SL_NODE_UP;
        return false;
    }
    return n->state == SL_NODE_UP;
}

/* ---- one task ---- */

int sl_place_task(const sl_place_policy_t *pol, sl_cycle_t *cy, const sl_task_req_t *req,
                  sl_place_t *pl) {
    if (!pol || !cy || !cy->cluster || !req || !pl) return SL_EINVAL;
    const sl_cluster_t *cl = cy->cluster;
    size_t nc = sl_cluster_class_count(cl);
    const sl_node_t *win = NULL;
    int64_t best = 0;
    sl_place_t bp = {0};
    for (size_t i = 0; i < nc; i++) {
        const sl_node_t *rep = sl_cluster_class_rep(cl, i);
        if (!quick_fits(rep, req)) continue;
        int64_t s;
        sl_place_t p;
        if (pol->score(cy, req, rep, sl_cluster_class_size(cl, i), &s, &p) != SL_FIT) continue;
        if (!win || s > best) {
            win = rep;
            best = s;
            bp = p;
        }
    }
    if (win) {
        *pl = bp;
        pl->node = win->id;
        return SL_FIT;
    }
    return empty_capacity(cl, req, 1) >= 1 ? SL_NOFIT : SL_NOFIT_EVER;
}

/* ---- reasons ---- */

typedef struct buf {
    char *p;
    size_t len, off;
} buf_t;

static void bput(buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bput(buf_t *b, const char *fmt, ...) {
    if (!b->p || b->len == 0 || b->off >= b->len) return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(b->p + b->off, b->len - b->off, fmt, ap);
    va_end(ap);
    if (k > 0) b->off += (size_t)k;
    if (b->off >= b->len) b->off = b->len - 1;
}

static void put_cpu(buf_t *b, int64_t milli) {
    if (milli % 1000 == 0)
        bput(b, "%lld", (long long)(milli / 1000));
    else
        bput(b, "%lldm", (long long)milli);
}

static void put_mem(buf_t *b, int64_t bytes) {
    static const char *const unit[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi"};
    int u = 0;
    while (u < 5 && bytes != 0 && bytes % 1024 == 0) {
        bytes /= 1024;
        u++;
    }
    bput(b, "%lld%s", (long long)bytes, unit[u]);
}

static void put_models(buf_t *b, const sl_cluster_t *cl, uint64_t mask) {
    bool first = true;
    for (int m = 0; m < SL_MAX_MODELS; m++) {
        if (!(mask & (UINT64_C(1) << m))) continue;
        const char *nm = sl_cluster_model_name(cl, m);
        if (nm)
            bput(b, "%s%s", first ? "" : "|", nm);
        else
            bput(b, "%s#%d", first ? "" : "|", m);
        first = false;
    }
}

static void put_pool(buf_t *b, const sl_cluster_t *cl, int32_t pool) {
    const char *nm = sl_cluster_pool_name(cl, pool);
    if (nm)
        bput(b, "\"%s\"", nm);
    else
        bput(b, "#%d", pool);
}

/* "4 GPUs of model H100", "250m of one GPU", "" for CPU-only. */
static void put_gpu(buf_t *b, const sl_cluster_t *cl, const sl_task_req_t *r) {
    if (r->gpus > 0)
        bput(b, "%d GPU%s", r->gpus, r->gpus == 1 ? "" : "s");
    else if (r->gpu_milli > 0)
        bput(b, "%dm of one GPU", r->gpu_milli);
    else
        return;
    if (r->model_mask) {
        bput(b, " of model ");
        put_models(b, cl, r->model_mask);
    }
}

/* "cpu 4, mem 16Gi, 4 GPUs of model H100". */
static void put_task(buf_t *b, const sl_cluster_t *cl, const sl_task_req_t *r) {
    bput(b, "cpu ");
    put_cpu(b, r->cpu_milli);
    bput(b, ", mem ");
    put_mem(b, r->mem_bytes);
    if (sl__req_gpu(r)) {
        bput(b, ", ");
        put_gpu(b, cl, r);
    }
}

/* Whether some node (any state) is in req's pool / also has its model. */
static void scan_pool_model(const sl_cluster_t *cl, const sl_task_req_t *r, bool *pool_ok,
                            bool *model_ok, int32_t *max_gpus) {
    *pool_ok = *model_ok = false;
    *max_gpus = 0;
    size_t nn = sl_cluster_node_count(cl);
    for (uint32_t id = 0; id < nn; id++) {
        const sl_node_t *n = sl_cluster_node(cl, id);
        if (r->pool != -1 && n->pool != r->pool) continue;
        *pool_ok = true;
        if (!sl__model_ok(n, r->model_mask)) continue;
        *model_ok = true;
        if (n->ngpus > *max_gpus) *max_gpus = n->ngpus;
        if (*max_gpus >= r->gpus) return; /* all three answers are known */
    }
}

/* Which resources some eligible up node has enough of on its own right now
 * (gathered during the gang's first pass over the classes). */
typedef struct shortage {
    bool cpu, mem, gpu;
} shortage_t;

static inline void shortage_see(shortage_t *sh, const sl_node_t *n, const sl_task_req_t *r) {
    if (r->pool != -1 && n->pool != r->pool) return;
    if (!sl__model_ok(n, r->model_mask)) return;
    sh->cpu |= n->cpu_free >= r->cpu_milli;
    sh->mem |= n->mem_free >= r->mem_bytes;
    if (r->gpus > 0)
        sh->gpu |= sl__node_full_free(n) >= r->gpus;
    else if (r->gpu_milli > 0)
        for (int g = 0; g < n->ngpus && !sh->gpu; g++) sh->gpu |= sl__share_fits_gpu(n, g, r);
    else
        sh->gpu = true;
}

static void put_short(buf_t *b, const shortage_t *sh) {
    if (sh->cpu && sh->mem && sh->gpu) {
        bput(b, "no node has all of it free at once");
        return;
    }
    bput(b, "no node has enough free");
    bool first = true;
    if (!sh->cpu) bput(b, "%s CPU", first ? "" : ","), first = false;
    if (!sh->mem) bput(b, "%s memory", first ? "" : ","), first = false;
    if (!sh->gpu) bput(b, "%s GPU", first ? "" : ",");
}

static void explain(const sl_cluster_t *cl, const sl_task_req_t *r, int32_t n, int32_t fit_now,
                    int32_t fit_empty, bool ever, const shortage_t *sh, char *reason,
                    size_t reasonlen) {
    if (!reason || reasonlen == 0) return;
    buf_t b = {reason, reasonlen, 0};
    reason[0] = '\0';
    bool pool_ok, model_ok;
    int32_t max_gpus;
    scan_pool_model(cl, r, &pool_ok, &model_ok, &max_gpus);
    if (!pool_ok) {
        bput(&b, "no node in pool ");
        put_pool(&b, cl, r->pool);
        return;
    }
    if (!model_ok) {
        bput(&b, "no node%s has model ", r->pool != -1 ? " in the pool" : "");
        put_models(&b, cl, r->model_mask);
        return;
    }
    if (r->gpus > 0 && max_gpus < r->gpus) {
        bput(&b, "needs %d GPUs", r->gpus);
        if (r->model_mask) {
            bput(&b, " of model ");
            put_models(&b, cl, r->model_mask);
        }
        bput(&b, " on one node; the largest node has %d", max_gpus);
        return;
    }
    if (ever && n == 1) {
        bput(&b, "needs ");
        put_task(&b, cl, r);
        bput(&b, "; no node is that large even when empty");
        return;
    }
    if (ever) {
        bput(&b, "needs %d tasks x (", n);
        put_task(&b, cl, r);
        bput(&b, "); the whole cluster holds at most %d even when empty", fit_empty);
        return;
    }
    if (r->gpus > 0) {
        int32_t blk = sl_cluster_largest_gpu_block(cl, r->pool, r->model_mask);
        if (n == 1 && blk < r->gpus) {
            bput(&b, "needs ");
            put_gpu(&b, cl, r);
            bput(&b, " on one node; largest free block is %d", blk);
            return;
        }
        if (n > 1 && blk < r->gpus) {
            bput(&b, "needs %d tasks x ", n);
            put_gpu(&b, cl, r);
            bput(&b, "; largest free block is %d GPU%s on one node", blk, blk == 1 ? "" : "s");
            return;
        }
    }
    if (n == 1) {
        bput(&b, "needs ");
        put_task(&b, cl, r);
        bput(&b, "; ");
        put_short(&b, sh);
        return;
    }
    bput(&b, "needs %d tasks x (", n);
    put_task(&b, cl, r);
    bput(&b, "); only %d fit now", fit_now);
}

/* ---- a gang ---- */

int sl_place_gang(const sl_place_policy_t *pol, sl_cycle_t *cy, sl_cluster_t *cl,
                  const sl_task_req_t *req, int32_t n, sl_place_t *pls, char *reason,
                  size_t reasonlen) {
    if (reason && reasonlen > 0) reason[0] = '\0';
    if (!pol || !cy || !cl || !req || !pls || n < 1 || n > SL_MAX_TASKS) return SL_EINVAL;
    int32_t placed = 0, fit_now = 0;
    bool first_round = true;
    shortage_t sh = {false, false, false};
    while (placed < n) {
        int32_t remaining = n - placed, best_cnt = 0;
        int64_t best_score = 0, total = 0;
        const sl_node_t *win = NULL;
        sl_place_t win_pl = {0};
        size_t nc = sl_cluster_class_count(cl);
        for (size_t i = 0; i < nc; i++) {
            const sl_node_t *rep = sl_cluster_class_rep(cl, i);
            if (first_round && !(sh.cpu && sh.mem && sh.gpu)) shortage_see(&sh, rep, req);
            if (!quick_fits(rep, req)) continue;
            int32_t c = remaining == 1 ? 1 : sl_node_fit_count(rep, req, remaining);
            if (c <= 0) continue;
            uint32_t size = sl_cluster_class_size(cl, i);
            if (first_round && total < n) total += (int64_t)c * size;
            if (c < best_cnt) continue;
            int64_t s;
            sl_place_t p;
            if (pol->score(cy, req, rep, size, &s, &p) != SL_FIT) continue;
            if (!win || c > best_cnt || s > best_score) {
                win = rep;
                best_cnt = c;
                best_score = s;
                win_pl = p;
            }
        }
        if (first_round) {
            fit_now = total > n ? n : (int32_t)total;
            first_round = false;
            if (total < n) goto fail;
        }
        if (!win) goto fail;
        uint32_t id = win->id;
        for (int32_t j = 0; j < best_cnt; j++) {
            sl_place_t p = win_pl;
            if (j > 0) {
                int64_t s;
                if (pol->score(cy, req, sl_cluster_node(cl, id), 1, &s, &p) != SL_FIT) goto fail;
            }
            p.node = id;
            if (sl_cluster_alloc(cl, req, &p) != 0) goto fail;
            pls[placed++] = p;
        }
    }
    return SL_FIT;

fail:
    for (int32_t k = placed - 1; k >= 0; k--) sl_cluster_release(cl, req, &pls[k]);
    {
        int32_t fit_empty = empty_capacity(cl, req, n);
        bool ever = fit_empty < n;
        explain(cl, req, n, fit_now, fit_empty, ever, &sh, reason, reasonlen);
        return ever ? SL_NOFIT_EVER : SL_NOFIT;
    }
}
