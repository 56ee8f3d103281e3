/*
 * place.c - the placement framework: the policy registry, placing one task,
 * and placing a gang all-or-none.
 *
 * One task (sl_place_task). The cluster's free-capacity index groups the up
 * nodes whose placement-relevant state is identical into classes, keeps a
 * 32-byte summary of each in a dense array and orders that array in buckets
 * by free GPU (cluster_index.h). A search scans only the buckets that can
 * hold the task (a request for 4 whole GPUs never looks at a class with
 * fewer than 4 free; one that no bucket can hold is refused in O(1)), and
 * filters each class on its summary (state, pool, model, CPU, memory, GPUs;
 * only a share with GPU memory asks the node). Each class that fits is
 * evaluated once:
 *  - built-in policies (policy/place.h, "fast path") give a primary score
 *    from the summary (or a per-class cache, for FGD) without touching the
 *    node or the RNG; the highest primary wins and equal primaries are
 *    broken uniformly over NODES by a weighted reservoir draw (class i
 *    replaces the current pick with probability size_i / total size of the
 *    ties so far), which is the distribution the policies' own tie-break
 *    gives (a policy with a `member` hook folds its own node order
 *    into the primary instead, so nothing ties, and names the node of the
 *    winning class the task goes to). Only the winner's GPUs are chosen
 *    (on its representative, or that node). A
 *    policy with a bound skips whole buckets that cannot beat the best
 *    primary found so far (bestfit: a bucket's least free GPU);
 *  - other policies are asked for a score and a GPU choice through the
 *    representative, with the class size as the weight (policy/place.h); the
 *    highest score wins, the first in scan order among equals;
 *  - a policy with a `filter` (per node: may the task go there) is asked
 *    about each member of a class that fits, and scores each member that
 *    passes with weight 1 (no fast path): nodes of one class share their
 *    free capacity, not their labels. The filter is also applied to the
 *    empty cluster, so a task no node may take is SL_NOFIT_EVER.
 * A decision is a pure function of the cluster, the request and the RNG
 * state. Cost: O(classes in the buckets that can hold the task), a few
 * loads each, plus the cost of score for the classes that fit.
 *
 * A gang (sl_place_gang): n identical tasks, all or none, on as few nodes as
 * possible. Each round picks, among the classes, the node that can hold the
 * most of the remaining tasks (sl_node_fit_count capped at the remainder);
 * the policy's score breaks ties between nodes that hold the same number, so
 * for n == 1 a gang is placed exactly as sl_place_task would place it. All
 * the tasks that node can hold go there at once (the policy picks each
 * task's GPUs on the node as it fills up), then the next round starts. The
 * first round also sums what every node could hold; if that is less than n
 * the gang fails before allocating anything. Each round is one search as
 * above, with the count first and the score second. Greedy largest-first is optimal
 * for the node count when, as here, each node's capacity for the gang's
 * tasks is independent of the others. On failure everything taken is
 * released in reverse order, so the cluster is left exactly as it was.
 * Cost: O(rounds * classes * cost of score), rounds <= nodes used.
 *
 * Node fields (sl_task_req_t nodes_min, tasks_per_node, exclusive,
 * include, exclude): the gang goes to sl__place_gang_nodes (place_nodes.c).
 *
 * Topology: when the first round finds no node that holds the whole gang
 * and the cluster has topology (or the job requires a level), the gang goes
 * to sl__topo_place_gang (topology.c): fewest racks, then fewest blocks,
 * ranks laid out group by group.
 *
 * "Does not fit" comes with a reason for `sluice show`, and SL_NOFIT_EVER
 * when the request could not be placed even on the empty cluster (checked
 * against node totals, any node state, with an early exit).
 */
#include <stdarg.h>
#include <stdio.h> /* vsnprintf only: formats reasons, no I/O */
#include <string.h>

#include "sluice/cluster.h"
#include "sluice/constraint.h"
#include "sluice/error.h"
#include "sluice/policy.h"

#include "cluster_index.h"
#include "constraint_internal.h"
#include "place_nodes.h"
#include "policy/place.h"
#include "sluice/topology.h"
#include "topology_internal.h"
#include "units.h"

extern const sl_place_policy_t sl__place_fgdbal; /* policy/place_fgdbal.c */

static const sl_place_policy_t *const registry[] = {
    &sl__place_firstfit,   &sl__place_bestfit,       &sl__place_fgd,    &sl__place_dotprod,
    &sl__place_gpupacking, &sl__place_gpuclustering, &sl__place_random, &sl__place_fgdbal,
    NULL};

const sl_place_policy_t *sl_place_policy_find(const char *name) {
    if (!name) return NULL;
    for (size_t i = 0; registry[i]; i++)
        if (strcmp(registry[i]->name, name) == 0) return registry[i];
    return NULL;
}

const sl_place_policy_t *const *sl_place_policy_list(void) {
    return registry;
}

/* fgdbal: Sluice's own policy. On the FGD paper's fill protocol it leaves
 * 4.17% of the GPUs unallocated against FGD's 4.84 and BestFit's 7.07, wins
 * or ties on the workloads in docs/placement.md, and decides as fast as FGD. */
const char *sl_place_policy_default(void) {
    return "fgdbal";
}

/* ---- capacity of the empty cluster ---- */

/* min(cur, have / need), need <= 0 meaning no limit. */
static int64_t cap_div(int64_t have, int64_t need, int64_t cur) {
    if (need <= 0) return cur;
    int64_t q = have / need;
    return q < cur ? q : cur;
}

/* How many tasks of req node could hold if it were empty and up
 * (sl_node_fit_count on the node's totals), under pol's filter. */
static int32_t empty_fit_count(const sl_place_policy_t *pol, const sl_cycle_t *cy,
                               const sl_node_t *node, const sl_task_req_t *req, int32_t limit) {
    if (limit <= 0 || (pol->filter && !pol->filter(cy, req, node))) return 0;
    return sl_node_empty_fit_count(node, req, limit);
}

/* Tasks of req the empty cluster could hold, counting up to n (early exit). */
static int32_t empty_capacity(const sl_place_policy_t *pol, const sl_cycle_t *cy,
                              const sl_cluster_t *cl, const sl_task_req_t *req, int32_t n) {
    int32_t sum = 0;
    size_t nn = sl_cluster_node_count(cl);
    for (uint32_t id = 0; id < nn && sum < n; id++)
        sum += empty_fit_count(pol, cy, sl_cluster_node(cl, id), req, n - sum);
    return sum;
}

/* Whether any node at all passes pol's filter for req. O(nodes). */
static bool any_node_passes(const sl_place_policy_t *pol, const sl_cycle_t *cy,
                            const sl_cluster_t *cl, const sl_task_req_t *req) {
    if (!pol->filter) return true;
    size_t nn = sl_cluster_node_count(cl);
    for (uint32_t id = 0; id < nn; id++)
        if (pol->filter(cy, req, sl_cluster_node(cl, id))) return true;
    return false;
}

/* ---- searching the classes ---- */

/* The constraint filter of a class: its members share a label set, so one
 * memoised byte per (constraint, set) after the first evaluation. */
static inline bool class_admits(const sl_cluster_t *cl, const sl_constraint_t *c, uint32_t lset) {
    if (lset < c->nmemo && c->memo[lset]) return c->memo[lset] == 2;
    return sl__cons_eval(c, sl__cluster_lset(cl, lset));
}

extern const sl__place_fast_t sl__fast_fgdbal; /* policy/place_fgdbal.c */

static const sl__place_fast_t *const fast_paths[] = {
    &sl__fast_firstfit, &sl__fast_bestfit, &sl__fast_fgd, &sl__fast_dotprod,
    &sl__fast_gpupacking, &sl__fast_gpuclustering, &sl__fast_fgdbal, NULL};

static const sl__place_fast_t *fast_of(const sl_place_policy_t *pol) {
    for (size_t i = 0; fast_paths[i]; i++)
        if (fast_paths[i]->policy == pol) return fast_paths[i];
    return NULL;
}

/* sl_node_fit_count for a class that fits, from its summary where it can. */
static int32_t class_fit_count(const sl_cluster_t *cl, const sl__class_t *c, const sl_node_t *rep,
                               const sl_task_req_t *r, int32_t limit) {
    if (r->gpus == 0 && r->gpu_milli > 0)
        return sl_node_fit_count(rep ? rep : sl_cluster_node(cl, c->rep), r, limit);
    int64_t k = limit;
    k = cap_div(c->cpu_free, r->cpu_milli, k);
    k = cap_div(c->mem_free, r->mem_bytes, k);
    if (r->gpus > 0) k = cap_div(c->full_free, r->gpus, k);
    return k < 0 ? 0 : (int32_t)k;
}

/* One search over the classes for the node that holds the most of
 * `remaining` tasks (1 for a single task), best score among equals. */
typedef struct search {
    const sl_place_policy_t *pol;
    const sl__place_fast_t *fast; /* NULL: through pol->score */
    sl_cycle_t *cy;
    const sl_cluster_t *cl;
    const sl_task_req_t *req;
    int32_t remaining;
    int32_t count_to;   /* > 0: sum what every class holds into total, up to this */
    int64_t total;
    bool found;
    int32_t best_cnt;
    int64_t best;
    uint32_t win;       /* dense class position */
    sl_place_t win_pl;  /* without a fast path: the winner's GPUs */
    uint32_t win_node;  /* with a filter: the winning node */
} search_t;

/*
 * The search for a policy with a filter: each class that can hold the task
 * is looked at member by member (nodes of one class share their free state,
 * not their labels); each member the filter lets through is scored as the
 * slow path scores a representative, with weight 1, and the first best node
 * in scan order wins. Kept apart from search_run so that the unfiltered
 * search, the hot one, pays nothing for it.
 */
__attribute__((noinline)) static void search_filtered(search_t *s) {
    const sl_cluster_t *cl = s->cl;
    const sl_task_req_t *r = s->req;
    const sl__class_t *sum = sl__cluster_classes(cl);
    const sl__class_id_t *ids = sl__cluster_class_ids(cl);
    const uint32_t *bs = sl__cluster_buckets(cl);
    bool mem_check = r->gpus == 0 && r->gpu_milli > 0 && r->gpu_mem_bytes > 0;
    s->found = false;
    s->best_cnt = 0;
    s->best = 0;
    for (int b = sl__first_bucket(r); b < SL__NBUCKETS; b++) {
        for (uint32_t i = bs[b]; i < bs[b + 1]; i++) {
            const sl__class_t *c = &sum[i];
            if (!sl__class_fits(c, r)) continue;
            if (r->cons && !class_admits(cl, r->cons, ids[i].lset)) continue;
            const sl_node_t *rep = sl_cluster_node(cl, c->rep);
            if (mem_check && !sl_node_fits(rep, r)) continue;
            int32_t cnt = s->remaining > 1 ? sl_node_fit_count(rep, r, s->remaining) : 1;
            if (cnt <= 0) continue;
            for (uint32_t m = 0; m < ids[i].size; m++) {
                uint32_t id = sl_cluster_class_node(cl, i, m);
                const sl_node_t *node = sl_cluster_node(cl, id);
                if (!s->pol->filter(s->cy, r, node)) continue;
                if (s->count_to > 0 && s->total < s->count_to) s->total += cnt;
                if (cnt < s->best_cnt) continue;
                int64_t p;
                sl_place_t pl;
                if (s->pol->score(s->cy, r, node, 1, &p, &pl) != SL_FIT) continue;
                if (!s->found || cnt > s->best_cnt || p > s->best) {
                    s->found = true;
                    s->best_cnt = cnt;
                    s->best = p;
                    s->win = i;
                    s->win_node = id;
                    s->win_pl = pl;
                }
            }
        }
    }
}

static void search_run(search_t *s) {
    const sl_cluster_t *cl = s->cl;
    const sl_task_req_t *r = s->req;
    const sl__class_t *sum = sl__cluster_classes(cl);
    const sl__class_id_t *ids = sl__cluster_class_ids(cl);
    const uint32_t *bs = sl__cluster_buckets(cl);
    const sl__place_fast_t *fast = s->fast;
    bool mem_check = r->gpus == 0 && r->gpu_milli > 0 && r->gpu_mem_bytes > 0;
    uint64_t ties = 0; /* total size of the classes tied at the best so far */
    sl__fast_ctx_t ctx = {.rid = -1, .row = NULL};
    s->found = false;
    s->best_cnt = 0;
    s->best = 0;
    if (fast && fast->begin) fast->begin(s->cy, r, &ctx);
    for (int b = sl__first_bucket(r); b < SL__NBUCKETS; b++) {
        if (bs[b] == bs[b + 1]) continue;
        if (s->found && fast && fast->bound && s->best_cnt == s->remaining &&
            (s->count_to <= 0 || s->total >= s->count_to) &&
            fast->bound(r, sl__bucket_min_gpu_free(b)) < s->best)
            continue; /* nothing here can win or tie */
        for (uint32_t i = bs[b]; i < bs[b + 1]; i++) {
            const sl__class_t *c = &sum[i];
            if (!sl__class_fits(c, r)) continue;
            const sl_node_t *rep = NULL;
            if (r->cons && !class_admits(cl, r->cons, ids[i].lset)) continue;
            if (mem_check) {
                rep = sl_cluster_node(cl, c->rep);
                if (!sl_node_fits(rep, r)) continue;
            }
            int32_t cnt = 1;
            if (s->remaining > 1) {
                cnt = class_fit_count(cl, c, rep, r, s->remaining);
                if (cnt <= 0) continue;
            }
            uint32_t size = ids[i].size;
            if (s->count_to > 0 && s->total < s->count_to) s->total += (int64_t)cnt * size;
            if (cnt < s->best_cnt) continue;
            int64_t p;
            if (fast) {
                if (fast->primary(s->cy, &ctx, r, c, &ids[i], &p) != SL_FIT) continue;
                if (!s->found || cnt > s->best_cnt || p > s->best) {
                    s->found = true;
                    s->best_cnt = cnt;
                    s->best = p;
                    s->win = i;
                    ties = size;
                } else if (p == s->best) {
                    ties += size;
                    if (sl_rng_below(s->cy->rng, ties) < size) s->win = i;
                }
            } else {
                sl_place_t pl;
                if (!rep) rep = sl_cluster_node(cl, c->rep);
                if (s->pol->score(s->cy, r, rep, size, &p, &pl) != SL_FIT) continue;
                if (!s->found || cnt > s->best_cnt || p > s->best) {
                    s->found = true;
                    s->best_cnt = cnt;
                    s->best = p;
                    s->win = i;
                    s->win_pl = pl;
                }
            }
        }
    }
}

/* The node of the winning class the task goes to. */
static uint32_t winner_node(const search_t *s) {
    if (s->pol->filter) return s->win_node;
    if (s->fast && s->fast->member) return s->fast->member(s->cy, s->cl, s->win);
    return sl__cluster_classes(s->cl)[s->win].rep;
}

/* GPUs for the next task on node: the fast path's choice, or the policy's
 * own (first = the search's winner, whose choice is already known). */
static int next_gpus(const search_t *s, const sl_node_t *node, bool first, sl_place_t *pl) {
    if (s->fast) return s->fast->gpus(s->cy, s->req, node, pl);
    if (first) {
        *pl = s->win_pl;
        return SL_FIT;
    }
    int64_t sc;
    return s->pol->score(s->cy, s->req, node, 1, &sc, pl);
}

/* ---- one task ---- */

int sl_place_task(const sl_place_policy_t *pol, sl_cycle_t *cy, const sl_task_req_t *req,
                  sl_place_t *pl) {
    if (!pol || !cy || !cy->cluster || !req || !pl) return SL_EINVAL;
    const sl_cluster_t *cl = cy->cluster;
    search_t s = {.pol = pol, .fast = pol->filter ? NULL : fast_of(pol), .cy = cy, .cl = cl,
                  .req = req, .remaining = 1};
    if (pol->filter) search_filtered(&s);
    else search_run(&s);
    if (s.found) {
        uint32_t id = winner_node(&s);
        sl_place_t p;
        if (next_gpus(&s, sl_cluster_node(cl, id), true, &p) == SL_FIT) {
            *pl = p;
            pl->node = id;
            return SL_FIT;
        }
    }
    return empty_capacity(pol, cy, cl, req, 1) >= 1 ? SL_NOFIT : SL_NOFIT_EVER;
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

/* Appends s as it is (no format to parse: reasons are written often). */
static void bputs(buf_t *b, const char *s) {
    while (*s && b->off + 1 < b->len) b->p[b->off++] = *s++;
    b->p[b->off] = '\0';
}

/* CPUs as a decimal ("4", "0.5"), memory with a binary suffix ("16Gi"). */
static void put_cpu(buf_t *b, int64_t milli) {
    char n[SL__UNIT_BUF];
    bputs(b, sl__fmt_milli(n, sizeof n, milli));
}

static void put_mem(buf_t *b, int64_t bytes) {
    char n[SL__UNIT_BUF];
    bputs(b, sl__fmt_bytes(n, sizeof n, bytes));
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

/* "4 GPUs of model H100", "0.25 of one GPU", "" for CPU-only. */
static void put_gpu(buf_t *b, const sl_cluster_t *cl, const sl_task_req_t *r) {
    char n[SL__UNIT_BUF];
    if (r->gpus > 0) {
        bput(b, "%d GPU%s", r->gpus, r->gpus == 1 ? "" : "s");
    } else if (r->gpu_milli > 0) {
        bputs(b, sl__fmt_milli(n, sizeof n, r->gpu_milli));
        bputs(b, " of one GPU");
    } else {
        return;
    }
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

/* Which resources some eligible up node has enough of on its own right now. */
typedef struct shortage {
    bool cpu, mem, gpu;
} shortage_t;

static bool eligible(const sl__class_t *c, const sl_task_req_t *r) {
    return (r->pool == -1 || c->pool == r->pool) && sl__class_model_ok(c, r->model_mask);
}

/* GPUs: only the buckets that can hold the task, first eligible class
 * answers (beyond the first share bucket every class has the share free).
 * CPU and memory: a scan that stops as soon as both are found. */
static shortage_t shortage_scan(const sl_cluster_t *cl, const sl_task_req_t *r) {
    shortage_t sh = {false, false, !sl__req_gpu(r)};
    const sl__class_t *sum = sl__cluster_classes(cl);
    const uint32_t *bs = sl__cluster_buckets(cl);
    int b0 = sl__first_bucket(r);
    for (uint32_t i = b0 < SL__NBUCKETS ? bs[b0] : bs[SL__NBUCKETS]; i < bs[SL__NBUCKETS] && !sh.gpu; i++) {
        const sl__class_t *c = &sum[i];
        if (!eligible(c, r)) continue;
        if (r->gpus > 0) {
            sh.gpu = c->full_free >= r->gpus;
        } else if (c->share_max >= r->gpu_milli) {
            const sl_node_t *n = sl_cluster_node(cl, c->rep);
            for (int g = 0; g < n->ngpus && !sh.gpu; g++) sh.gpu |= sl__share_fits_gpu(n, g, r);
        }
    }
    size_t nc = sl_cluster_class_count(cl);
    for (size_t i = 0; i < nc && !(sh.cpu && sh.mem); i++) {
        const sl__class_t *c = &sum[i];
        if (!eligible(c, r)) continue;
        sh.cpu |= c->cpu_free >= r->cpu_milli;
        sh.mem |= c->mem_free >= r->mem_bytes;
    }
    return sh;
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
                    int32_t fit_empty, bool ever, char *reason, size_t reasonlen) {
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
        shortage_t sh = shortage_scan(cl, r);
        put_short(&b, &sh);
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
    if (sl__req_names_nodes(req)) /* -N, tasks per node, whole nodes, node lists */
        return sl__place_gang_nodes(pol, cy, cl, req, n, pls, reason, reasonlen);
    int32_t placed = 0, fit_now = 0;
    bool first_round = true;
    search_t s = {.pol = pol, .fast = pol->filter ? NULL : fast_of(pol), .cy = cy, .cl = cl,
                  .req = req};
    while (placed < n) {
        s.remaining = n - placed;
        s.count_to = first_round ? n : 0;
        s.total = 0;
        if (pol->filter) search_filtered(&s);
        else search_run(&s);
        if (first_round) {
            fit_now = s.total > n ? n : (int32_t)s.total;
            first_round = false;
            if (s.total < n) goto fail;
            /* Topology (topology.c): a gang that needs more than one node,
             * on a cluster with topology or with a level required. */
            if (s.found && s.best_cnt < n &&
                (req->topo_required != SL_TOPO_ANY || sl_cluster_topo_count(cl) > 0)) {
                sl__topo_ctx_t tx = {.pol = pol, .cy = cy};
                return sl__topo_place_gang(&tx, cl, req, n, pls, NULL, reason, reasonlen);
            }
        }
        if (!s.found) goto fail;
        uint32_t id = winner_node(&s);
        for (int32_t j = 0; j < s.best_cnt; j++) {
            sl_place_t p;
            if (next_gpus(&s, sl_cluster_node(cl, id), j == 0, &p) != SL_FIT) goto fail;
            p.node = id;
            if (sl_cluster_alloc(cl, req, &p) != 0) goto fail;
            pls[placed++] = p;
        }
    }
    return SL_FIT;

fail:
    for (int32_t k = placed - 1; k >= 0; k--) sl_cluster_release(cl, req, &pls[k]);
    {
        int32_t fit_empty = empty_capacity(pol, cy, cl, req, n);
        bool ever = fit_empty < n;
        if (ever && sl_constraint_explain(req->cons, cl, reason, reasonlen)) {
            /* no node's labels and taints admit the job: say which */
        } else if (!any_node_passes(pol, cy, cl, req)) {
            if (reason && reasonlen > 0)
                snprintf(reason, reasonlen, "no node passes placement %s's filter", pol->name);
        } else {
            explain(cl, req, n, fit_now, fit_empty, ever, reason, reasonlen);
        }
        return ever ? SL_NOFIT_EVER : SL_NOFIT;
    }
}
