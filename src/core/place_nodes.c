/*
 * place_nodes.c - a gang whose request names its nodes (sluice/resources.h:
 * nodes_min/nodes_max, tasks_per_node, exclusive, include, exclude), as a
 * Slurm job's -N, --ntasks-per-node, --exclusive, --nodelist and --exclude
 * ask. sl_place_gang (place.c) comes here when any of them is set.
 *
 * A node is a candidate when it is up, passes the request's pool, model,
 * labels and taints and the policy's filter, is not excluded, is idle when
 * the request is exclusive (nothing allocated on it at all), and can hold
 * at least one task now (tasks_per_node of them when that is set); its
 * capacity c is what it holds now (sl_node_fit_count), capped at the gang.
 * Every node of include must be a candidate; they are always taken.
 *
 * The node count N: n / tasks_per_node when that is set; otherwise the
 * fewest nodes in [max(nodes_min, 1, |include|), nodes_max] (nodes_max 0:
 * nodes_min, or n when neither is set) for which the include nodes and the
 * others of largest capacity hold n with at least one task each (N <= n <=
 * the sum of their capacities: exact, because nodes are independent). The
 * nodes beyond include are then the candidates in order of capacity capped
 * at what one node may take (n - N + 1, or tasks_per_node), then the
 * policy's score for one task (fragmentation: fgd's, bestfit's), then id:
 * the packing order of sl_place_gang. Each node gets one task, then the
 * rest fill them in that order up to their capacity (tasks_per_node each
 * when set). All or none: on failure everything taken is released.
 *
 * GPUs for each task: the policy's choice on the node as it fills (an
 * exclusive request takes the lowest free GPUs, sl_node_choose_gpus, on a
 * copy of the idle node: after its first task the real node refuses every
 * other). "Does not fit" names why and is SL_NOFIT_EVER when the same
 * search fails on the empty cluster (node totals, any state).
 *
 * Cost: without node lists or a policy filter the nodes of a class share
 * their free state and labels, so each class is fit-counted and scored
 * once and its members taken in order (by_class): O(classes log classes +
 * N); otherwise O(nodes) fit counts and scores and a sort. The empty-
 * cluster check is O(nodes) at worst (a histogram of capacities, no sort,
 * stopping once the nodes seen hold the gang).
 */
#include <stdio.h> /* snprintf only: formats reasons, no I/O */
#include <stdlib.h>
#include <string.h>

#include "sluice/alloc.h"
#include "sluice/cluster.h"
#include "sluice/constraint.h"
#include "sluice/error.h"
#include "sluice/policy.h"

#include "cluster_index.h"
#include "place_nodes.h"

bool sl__req_names_nodes(const sl_task_req_t *r) {
    return r->nodes_min > 0 || r->nodes_max > 0 || r->tasks_per_node > 0 || r->exclusive ||
           (r->include && r->include[0]) || (r->exclude && r->exclude[0]);
}

typedef sl__gang_cand_t cand_t;

static int cand_cmp(const void *pa, const void *pb) {
    const cand_t *a = pa, *b = pb;
    if (a->must != b->must) return a->must ? -1 : 1;
    if (a->key != b->key) return a->key > b->key ? -1 : 1;
    if (a->score != b->score) return a->score > b->score ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

static int cap_cmp(const void *pa, const void *pb) {
    const cand_t *a = pa, *b = pb;
    if (a->must != b->must) return a->must ? -1 : 1;
    if (a->cap != b->cap) return a->cap > b->cap ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

/* Calls fn(ctx, name, len) for each comma-separated name of list. */
static bool each_name(const char *list, bool (*fn)(void *, const char *, size_t), void *ctx) {
    if (!list) return true;
    const char *p = list;
    while (*p) {
        while (*p == ',' || *p == ' ') p++;
        const char *e = p;
        while (*e && *e != ',' && *e != ' ') e++;
        if (e > p && !fn(ctx, p, (size_t)(e - p))) return false;
        p = e;
    }
    return true;
}

typedef struct mark_ctx {
    const sl_cluster_t *cl;
    uint8_t *marks;
    uint8_t bit;
    char missing[SL_NAME_MAX]; /* the first name no node has */
    int32_t count;             /* distinct nodes marked */
} mark_ctx_t;

static bool mark_one(void *vc, const char *name, size_t len) {
    mark_ctx_t *c = vc;
    char nm[SL_NAME_MAX];
    if (len >= sizeof nm) len = sizeof nm - 1;
    memcpy(nm, name, len);
    nm[len] = '\0';
    const sl_node_t *n = sl_cluster_find_node(c->cl, nm);
    if (!n) {
        if (!c->missing[0]) memcpy(c->missing, nm, len + 1);
        return true;
    }
    if (!(c->marks[n->id] & c->bit)) c->count++;
    c->marks[n->id] |= c->bit;
    return true;
}

#define M_INCL 1u
#define M_EXCL 2u

static bool node_idle(const sl_node_t *n) {
    if (n->cpu_free != n->cpu_total || n->mem_free != n->mem_total) return false;
    for (int g = 0; g < n->ngpus; g++)
        if (n->gpu_free[g] != SL_GPU_MILLI || n->gpu_mem_free[g] != n->gpu_mem_total) return false;
    return true;
}

/* The node counts the gang may use: [*lo, *hi]; false if none. */
static bool node_range(const sl_task_req_t *r, int32_t n, int32_t nincl, int32_t *lo, int32_t *hi) {
    if (r->tasks_per_node > 0) {
        if (n % r->tasks_per_node) return false;
        *lo = *hi = n / r->tasks_per_node;
        if (r->nodes_min > 0 && *lo < r->nodes_min) return false;
        if (r->nodes_min > 0 && *lo > (r->nodes_max > 0 ? r->nodes_max : r->nodes_min)) return false;
    } else {
        *lo = r->nodes_min > 0 ? r->nodes_min : 1;
        *hi = r->nodes_max > 0 ? r->nodes_max : r->nodes_min > 0 ? r->nodes_min : n;
        if (*hi > n) *hi = n;
    }
    if (*lo < nincl) *lo = nincl;
    return *lo <= *hi;
}

/*
 * The fewest nodes in [lo, hi] that hold n tasks, candidates sorted by
 * cap_cmp (include first): 0 if none. k = tasks_per_node (0 = any).
 */
static int32_t fewest_nodes(const cand_t *c, int32_t nc, int32_t n, int32_t k, int32_t lo,
                            int32_t hi) {
    int64_t sum = 0;
    for (int32_t i = 0; i < nc && i < hi; i++) {
        sum += k > 0 ? k : c[i].cap;
        if (i + 1 >= lo && sum >= n && i + 1 <= n) return i + 1;
    }
    return 0;
}

static bool eligible(const sl_place_policy_t *pol, const sl_cycle_t *cy, const sl_task_req_t *r,
                     const sl_node_t *node, const uint8_t *marks) {
    if (marks && (marks[node->id] & M_EXCL)) return false;
    if (!sl_constraint_admits(r->cons, node)) return false;
    return !pol->filter || pol->filter(cy, r, node);
}

/* Whether the gang could be placed on the empty cluster (totals, any state). */
bool sl__gang_hist_fits(int32_t must_n, int64_t must_sum, const int64_t *hist, int32_t top,
                        int32_t n, int32_t lo, int32_t hi) {
    int64_t cnt = must_n, sum = must_sum;
    if (cnt >= lo && cnt <= hi && sum >= n) return true;
    for (int32_t c = top; c >= 1 && cnt < hi; c--) {
        if (hist[c] == 0) continue;
        int64_t by_sum = sum >= n ? 0 : (n - sum + c - 1) / c;
        int64_t need = lo - cnt > by_sum ? lo - cnt : by_sum;
        if (need <= hist[c]) return cnt + need <= hi;
        cnt += hist[c];
        sum += hist[c] * c;
    }
    return false;
}

/* Whether the gang could be placed on the empty cluster (totals, any
 * state): the named nodes and a histogram of the others by capacity, no
 * sort. O(nodes + n), less when it fits early. */
static bool fits_empty(const sl_place_policy_t *pol, const sl_cycle_t *cy, const sl_cluster_t *cl,
                       const sl_task_req_t *r, int32_t n, const uint8_t *marks, int32_t nincl) {
    int32_t k = r->tasks_per_node, lo, hi, top = k > 0 ? k : n, must_n = 0;
    int64_t must_sum = 0;
    if (!node_range(r, n, nincl, &lo, &hi)) return false;
    int64_t *hist = sl_xcalloc((size_t)top + 1, sizeof *hist);
    bool ok = true;
    size_t nn = sl_cluster_node_count(cl);
    for (uint32_t id = 0; id < nn && ok; id++) {
        const sl_node_t *node = sl_cluster_node(cl, id);
        bool must = marks && (marks[id] & M_INCL);
        int32_t cap = eligible(pol, cy, r, node, marks) ? sl_node_empty_fit_count(node, r, top) : 0;
        if (cap < (k > 0 ? k : 1)) {
            ok = !must;
            continue;
        }
        if (must) {
            must_n++;
            must_sum += cap;
        } else {
            hist[cap]++;
        }
        /* Without named nodes the answer is known once some nodes hold it:
         * a look every 32 nodes (the empty cluster usually holds it soon). */
        if (nincl == 0 && (id & 31) == 31 && sl__gang_hist_fits(0, 0, hist, top, n, lo, hi))
            break;
    }
    ok = ok && must_n == nincl && sl__gang_hist_fits(must_n, must_sum, hist, top, n, lo, hi);
    sl_free(hist);
    return ok;
}

/* Takes one task of r at pl off a copy of a node (as sl_cluster_alloc). */
static void take_copy(sl_node_t *n, const sl_task_req_t *r, const sl_place_t *pl) {
    n->cpu_free -= r->cpu_milli;
    n->mem_free -= r->mem_bytes;
    for (int g = 0; g < n->ngpus; g++) {
        if (!(pl->gpu_mask & (1u << g))) continue;
        if (r->gpus > 0) {
            n->gpu_free[g] = 0;
            n->gpu_mem_free[g] = 0;
        } else {
            n->gpu_free[g] -= r->gpu_milli;
            n->gpu_mem_free[g] -= r->gpu_mem_bytes;
        }
    }
}

/* "needs 8 tasks on 2 distinct idle nodes; 3 nodes can take some now, 5 in all". */
static void no_set_reason(const sl_task_req_t *r, int32_t n, int32_t lo, int32_t hi, int64_t nodes,
                          int64_t sum, char *reason, size_t rlen) {
    int32_t k = r->tasks_per_node;
    const char *idle = r->exclusive ? "idle " : "";
    char want[64];
    if (lo == hi)
        snprintf(want, sizeof want, "%d distinct %snode%s", (int)lo, idle, lo == 1 ? "" : "s");
    else
        snprintf(want, sizeof want, "%d to %d distinct %snodes", (int)lo, (int)hi, idle);
    if (k > 0)
        snprintf(reason, rlen, "needs %s with room for %d task%s each; %lld %s it now", want, (int)k,
                 k == 1 ? "" : "s", (long long)nodes, nodes == 1 ? "has" : "have");
    else
        snprintf(reason, rlen, "needs %d task%s on %s; %lld node%s can take some now, %lld in all",
                 (int)n, n == 1 ? "" : "s", want, (long long)nodes, nodes == 1 ? "" : "s",
                 (long long)sum);
}

/*
 * The nodes of a gang without node lists or a policy filter, class by
 * class: the nodes of one class share their free state and labels, so each
 * class is fit-counted and scored once (through its representative, with
 * its size as the weight) and its members are taken in the class's order.
 * Fills c[0..N-1] with the chosen nodes in packing order and returns N, or
 * 0 with the reason. O(classes log classes + N).
 */
static int32_t by_class(const sl_place_policy_t *pol, sl_cycle_t *cy, const sl_cluster_t *cl,
                        const sl_task_req_t *r, int32_t n, int32_t lo, int32_t hi, cand_t *c,
                        char *reason, size_t rlen) {
    int32_t k = r->tasks_per_node, need = k > 0 ? k : 1, ncls = 0, N = 0, cnt = 0;
    size_t ncl = sl_cluster_class_count(cl);
    cand_t *cls = sl_xmalloc((ncl ? ncl : 1) * sizeof *cls);
    int64_t nodes = 0, sum = 0;
    for (size_t i = 0; i < ncl; i++) {
        const sl_node_t *rep = sl_cluster_class_rep(cl, i);
        uint32_t size = sl_cluster_class_size(cl, i);
        if (!sl_constraint_admits(r->cons, rep) || (r->exclusive && !node_idle(rep))) continue;
        int32_t cap = sl_node_fit_count(rep, r, k > 0 ? k : n);
        int64_t score = 0;
        sl_place_t pl;
        if (cap < need || pol->score(cy, r, rep, size, &score, &pl) != SL_FIT) continue;
        cls[ncls++] = (cand_t){.id = (uint32_t)i, .cap = cap, .score = score, .size = size};
        nodes += size;
    }
    qsort(cls, (size_t)ncls, sizeof *cls, cap_cmp);
    for (int32_t i = 0; i < ncls && N == 0 && cnt < hi; i++) {
        for (uint32_t m = 0; m < cls[i].size && cnt < hi; m++) {
            sum += k > 0 ? k : cls[i].cap;
            if (++cnt >= lo && sum >= n) {
                N = cnt;
                break;
            }
        }
    }
    if (N == 0) {
        no_set_reason(r, n, lo, hi, nodes, sum, reason, rlen);
    } else {
        int32_t most = k > 0 ? k : n - N + 1, nc = 0;
        for (int32_t i = 0; i < ncls; i++) cls[i].key = cls[i].cap < most ? cls[i].cap : most;
        qsort(cls, (size_t)ncls, sizeof *cls, cand_cmp);
        for (int32_t i = 0; i < ncls && nc < N; i++)
            for (uint32_t m = 0; m < cls[i].size && nc < N; m++)
                c[nc++] = (cand_t){.id = sl_cluster_class_node(cl, cls[i].id, m), .cap = cls[i].cap};
    }
    sl_free(cls);
    return N;
}

int sl__place_gang_nodes(const sl_place_policy_t *pol, sl_cycle_t *cy, sl_cluster_t *cl,
                         const sl_task_req_t *r, int32_t n, sl_place_t *pls, char *reason,
                         size_t rlen) {
    size_t nn = sl_cluster_node_count(cl);
    int32_t k = r->tasks_per_node;
    int rc = SL_NOFIT;
    int32_t placed = 0;
    uint8_t *marks = NULL;
    cand_t *c = sl_xmalloc((nn ? nn : 1) * sizeof *c);
    mark_ctx_t incl = {.cl = cl, .bit = M_INCL}, excl = {.cl = cl, .bit = M_EXCL};
    if ((r->include && r->include[0]) || (r->exclude && r->exclude[0])) {
        marks = sl_xcalloc(nn ? nn : 1, 1);
        incl.marks = excl.marks = marks;
        each_name(r->include, mark_one, &incl);
        each_name(r->exclude, mark_one, &excl);
    }
    int32_t lo, hi;
    if (!node_range(r, n, incl.count, &lo, &hi)) {
        if (k > 0 && n % k)
            snprintf(reason, rlen, "%d tasks do not divide into %d per node", (int)n, (int)k);
        else
            snprintf(reason, rlen, "%d tasks cannot spread over the nodes asked (%d..%d, %d named)",
                     (int)n, (int)r->nodes_min, (int)(r->nodes_max ? r->nodes_max : r->nodes_min),
                     (int)incl.count);
        rc = SL_NOFIT_EVER;
        goto out;
    }
    if (incl.missing[0]) {
        snprintf(reason, rlen, "nodelist names %s, which is not a node of the cluster", incl.missing);
        goto out;
    }
    int32_t nc = 0, N = 0;
    if (!marks && !pol->filter) {
        if ((N = by_class(pol, cy, cl, r, n, lo, hi, c, reason, rlen)) == 0) goto out;
    } else {
        int32_t blocked_must = -1;
        for (uint32_t id = 0; id < nn; id++) {
            const sl_node_t *node = sl_cluster_node(cl, id);
            bool must = marks && (marks[id] & M_INCL);
            int32_t cap = 0;
            if (node->state == SL_NODE_UP && eligible(pol, cy, r, node, marks) &&
                (!r->exclusive || node_idle(node)))
                cap = sl_node_fit_count(node, r, k > 0 ? k : n);
            int64_t score = 0;
            sl_place_t pl;
            if (cap >= (k > 0 ? k : 1) && pol->score(cy, r, node, 1, &score, &pl) != SL_FIT) cap = 0;
            if (cap < (k > 0 ? k : 1)) {
                if (must && blocked_must < 0) blocked_must = (int32_t)id;
                continue;
            }
            c[nc++] = (cand_t){.id = id, .cap = cap, .score = score, .must = must};
        }
        if (blocked_must >= 0) {
            const sl_node_t *b = sl_cluster_node(cl, (uint32_t)blocked_must);
            snprintf(reason, rlen, "nodelist names %s, which %s", b->name,
                     marks[b->id] & M_EXCL          ? "is also excluded"
                     : b->state != SL_NODE_UP       ? "is not up"
                     : r->exclusive && !node_idle(b) ? "is not idle (exclusive job)"
                                                     : "cannot take its tasks now");
            goto out;
        }
        qsort(c, (size_t)nc, sizeof *c, cap_cmp);
        N = fewest_nodes(c, nc, n, k, lo, hi);
        if (N == 0) {
            int64_t sum = 0;
            for (int32_t i = 0; i < nc && i < hi; i++) sum += k > 0 ? k : c[i].cap;
            no_set_reason(r, n, lo, hi, nc, sum, reason, rlen);
            goto out;
        }
        /* The packing order for N nodes; the include nodes stay first. */
        for (int32_t i = 0; i < nc; i++) {
            int32_t most = k > 0 ? k : n - N + 1;
            c[i].key = c[i].cap < most ? c[i].cap : most;
        }
        qsort(c, (size_t)nc, sizeof *c, cand_cmp);
    }
    int32_t left = n - N;
    for (int32_t i = 0; i < N; i++) {
        int32_t t = k > 0 ? k : 1;
        if (k == 0) {
            int32_t more = c[i].cap - 1 < left ? c[i].cap - 1 : left;
            t += more;
            left -= more;
        }
        const sl_node_t *node = sl_cluster_node(cl, c[i].id);
        sl_node_t copy;
        if (r->exclusive) copy = *node;
        for (int32_t j = 0; j < t; j++) {
            sl_place_t p;
            int64_t sc;
            int got = r->exclusive ? sl_node_choose_gpus(&copy, r, &p)
                                   : pol->score(cy, r, sl_cluster_node(cl, c[i].id), 1, &sc, &p);
            if (got != SL_FIT && !r->exclusive)
                got = sl_node_choose_gpus(sl_cluster_node(cl, c[i].id), r, &p);
            if (got != SL_FIT) goto nofit_late;
            p.node = c[i].id;
            if (r->exclusive) take_copy(&copy, r, &p);
            if (sl_cluster_alloc(cl, r, &p) != 0) goto nofit_late;
            pls[placed++] = p;
        }
    }
    rc = SL_FIT;
    goto out;

nofit_late: /* a fit count promised more than the GPUs could give: not expected */
    snprintf(reason, rlen, "needs %d tasks on %d distinct nodes; the chosen nodes could not take "
             "them", (int)n, (int)N);
out:
    if (rc != SL_FIT) {
        for (int32_t i = placed - 1; i >= 0; i--) sl_cluster_release(cl, r, &pls[i]);
        if (rc == SL_NOFIT && !fits_empty(pol, cy, cl, r, n, marks, incl.count)) {
            rc = SL_NOFIT_EVER;
            size_t off = reason ? strlen(reason) : 0;
            if (reason && off + 1 < rlen)
                snprintf(reason + off, rlen - off, "; not even on the empty cluster");
        }
    }
    sl_free(marks);
    sl_free(c);
    return rc;
}

/* ---- for the EASY reservation (policy/backfill_easy.c) ---- */

uint8_t *sl__gang_marks(const sl_cluster_t *cl, const sl_task_req_t *r, int32_t *nincl) {
    *nincl = 0;
    if (!((r->include && r->include[0]) || (r->exclude && r->exclude[0]))) return NULL;
    size_t nn = sl_cluster_node_count(cl);
    uint8_t *marks = sl_xcalloc(nn ? nn : 1, 1);
    mark_ctx_t incl = {.cl = cl, .marks = marks, .bit = M_INCL};
    mark_ctx_t excl = {.cl = cl, .marks = marks, .bit = M_EXCL};
    each_name(r->include, mark_one, &incl);
    each_name(r->exclude, mark_one, &excl);
    *nincl = incl.missing[0] ? -1 : incl.count;
    return marks;
}

int32_t sl__gang_node_cap(const sl_task_req_t *r, int32_t n, const sl_node_t *node,
                          const uint8_t *marks) {
    if ((marks && (marks[node->id] & M_EXCL)) || (r->exclusive && !node_idle(node))) return 0;
    int32_t k = r->tasks_per_node;
    int32_t cap = sl_node_fit_count(node, r, k > 0 ? k : n);
    return cap >= (k > 0 ? k : 1) ? cap : 0;
}

int32_t sl__gang_pick(const sl_task_req_t *r, int32_t n, int32_t nincl, sl__gang_cand_t *c,
                      int32_t nc) {
    int32_t lo, hi, must = 0;
    if (nincl < 0 || !node_range(r, n, nincl, &lo, &hi)) return 0;
    for (int32_t i = 0; i < nc; i++) must += c[i].must;
    if (must < nincl) return 0; /* a named node cannot take its tasks */
    qsort(c, (size_t)nc, sizeof *c, cap_cmp);
    return fewest_nodes(c, nc, n, r->tasks_per_node, lo, hi);
}

bool sl__gang_range(const sl_task_req_t *r, int32_t n, int32_t nincl, int32_t *lo, int32_t *hi) {
    return nincl >= 0 && node_range(r, n, nincl, lo, hi);
}
