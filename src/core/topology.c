/*
 * topology.c - placing a gang that needs more than one node so that it
 * spans the fewest racks that can hold it, then the fewest blocks.
 *
 * Workload: a Megatron-style gang (8 tasks x 4 GPUs, 32 x 8) on a cluster
 * of blocks of racks of nodes, where traffic inside a rack crosses one
 * switch and traffic between blocks crosses the spine. sl_place_gang
 * (place.c) comes here only when the gang fits on no single node (one node
 * is one group at every level, and the ordinary search already finds it)
 * and the cluster has topology or the job names a level, so a cluster
 * without topology pays one counter test per multi-node gang.
 *
 * The algorithm, O(N log N) in the up nodes N that can hold a task:
 *  1. Every up node that can hold at least one task (sl_node_fit_count,
 *     the policy's filter) becomes an entry with its count (capped at n),
 *     sorted by (block, rack, count descending, node id): racks and blocks
 *     are then runs of the array. A node without topology is a rack and a
 *     block of its own, sorted last.
 *  2. The racks, with their summed counts, are sorted by (block, count
 *     descending), and the blocks get their sums.
 *  3. Choice, fewest racks first, then fewest blocks: if some rack holds
 *     the whole gang, the one that holds it most tightly (least count >= n;
 *     best fit keeps the roomy racks for larger gangs). Else, unless the
 *     job requires a rack, the best by (racks, blocks) of: the block whose
 *     racks, largest first, cover the gang in the fewest racks (tightest
 *     block among equals); if no block holds it, blocks largest first with
 *     their racks largest first; and, unless the job requires a block, the
 *     racks largest first over the whole cluster. The last is the fewest
 *     racks of all (largest-first is optimal for a count when capacities
 *     are independent, as here), so the rack count is always the least.
 *     When the best of these spans more blocks than a lower bound (the
 *     blocks largest first), an exact search (fewest_blocks: a grouped
 *     knapsack over the blocks, each giving its largest racks) finds the
 *     fewest blocks that hold the gang in that many racks; its table is
 *     bounded (FEWEST_BLOCKS_BUDGET, far beyond clusters of thousands of
 *     nodes in racks of several), past which the heuristic's blocks stand.
 *     The differential test against brute force (tests/unit/test_topology.c)
 *     asserts the exact rack and block counts.
 *     A job that prefers a level (topo_preferred, Kueue's
 *     podset-preferred-topology: "one domain of this level if it fits, else
 *     the next level up, else spread") is placed inside the block that
 *     holds it in the fewest racks whenever one block can hold it, even if
 *     a spread over blocks needs fewer racks; one node and one rack are
 *     tried first anyway, so every preferred level means this here.
 *  4. Tasks are laid out in that order, rack by rack and node by node
 *     (most tasks first), so that ranks that are neighbours share a node,
 *     then a rack, then a block; rank 0's node is MASTER_ADDR's. Each
 *     task's GPUs on its node are the policy's choice (its score hook).
 * A job that requires a level and finds no single group of it with room
 * waits (SL_NOFIT), with a reason that names the level and the roomiest
 * group's count; SL_NOFIT_EVER when no group could hold it even empty.
 * On failure nothing is allocated and the cluster is left as it was.
 */
#include <stdio.h> /* snprintf only: formats reasons, no I/O */
#include <stdlib.h>
#include <string.h>

#include "sluice/alloc.h"
#include "sluice/cluster.h"
#include "sluice/error.h"
#include "sluice/policy.h"
#include "sluice/topology.h"

#include "topology_internal.h"

typedef struct entry {
    uint32_t node;
    int32_t cnt;          /* tasks it holds now, capped at n */
    const char *path;     /* NULL: no topology */
    uint32_t len, blen;   /* path length; block part's length */
} entry_t;

/* The entry of node id (NULL: no node) holding cnt tasks, with its
 * topology path (none: path NULL) and the path's block part. */
static entry_t entry_of(const sl_node_t *node, uint32_t id, int32_t cnt) {
    entry_t x = {.node = id, .cnt = cnt};
    size_t len;
    if (node && sl_topo_path(node->labels, &x.path, &len)) {
        x.len = (uint32_t)len;
        x.blen = (uint32_t)sl_topo_block_len(x.path, len);
    }
    return x;
}

typedef struct group {
    uint32_t first, end;  /* entries [first, end) */
    uint32_t block;       /* block index (racks only) */
    int64_t cnt;
} group_t;

/* Orders by block, then rack, then most tasks first, then node id. */
static int cmp_entry(const void *pa, const void *pb) {
    const entry_t *a = pa, *b = pb;
    if (!a->path != !b->path) return a->path ? -1 : 1;
    if (a->path) {
        size_t m = a->blen < b->blen ? a->blen : b->blen;
        int c = memcmp(a->path, b->path, m);
        if (c == 0 && a->blen != b->blen) c = a->blen < b->blen ? -1 : 1;
        if (c != 0) return c;
        m = a->len < b->len ? a->len : b->len;
        c = memcmp(a->path, b->path, m);
        if (c == 0 && a->len != b->len) c = a->len < b->len ? -1 : 1;
        if (c != 0) return c;
    }
    if (a->cnt != b->cnt) return a->cnt > b->cnt ? -1 : 1;
    return a->node < b->node ? -1 : a->node > b->node;
}

static bool same_block(const entry_t *a, const entry_t *b) {
    return a->path && b->path && a->blen == b->blen && memcmp(a->path, b->path, a->blen) == 0;
}

static bool same_rack(const entry_t *a, const entry_t *b) {
    return a->path && b->path && a->len == b->len && memcmp(a->path, b->path, a->len) == 0;
}

/* Racks by block, then most tasks first (stable on index). */
static int cmp_rack(const void *pa, const void *pb) {
    const group_t *a = pa, *b = pb;
    if (a->block != b->block) return a->block < b->block ? -1 : 1;
    if (a->cnt != b->cnt) return a->cnt > b->cnt ? -1 : 1;
    return a->first < b->first ? -1 : 1;
}

/* A group's index with its count, for largest-first orders. */
typedef struct rank {
    int64_t cnt;
    uint32_t idx;
} rank_t;

static int cmp_rank(const void *pa, const void *pb) {
    const rank_t *a = pa, *b = pb;
    if (a->cnt != b->cnt) return a->cnt > b->cnt ? -1 : 1;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

static int cmp_u32(const void *pa, const void *pb) {
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    return a < b ? -1 : a > b;
}


/* The most tasks one group of `level` could hold on the empty cluster
 * (capped at n): whether a required level can ever be met. O(N log N). */
static int64_t empty_group_max(const sl_cluster_t *cl, const sl_task_req_t *req, int32_t n,
                               int level, const sl__topo_ctx_t *tx) {
    size_t nn = sl_cluster_node_count(cl);
    entry_t *e = sl_xmalloc((nn ? nn : 1) * sizeof *e);
    uint32_t k = 0;
    for (uint32_t id = 0; id < nn; id++) {
        const sl_node_t *node = sl_cluster_node(cl, id);
        if (tx->pol->filter && !tx->pol->filter(tx->cy, req, node)) continue;
        int64_t c = sl_node_empty_fit_count(node, req, n);
        if (c <= 0) continue;
        e[k++] = entry_of(node, id, (int32_t)c);
    }
    qsort(e, k, sizeof *e, cmp_entry);
    int64_t best = 0, run = 0;
    for (uint32_t i = 0; i < k; i++) {
        bool cont = i > 0 && (level == SL_TOPO_RACK ? same_rack(&e[i - 1], &e[i])
                                                    : same_block(&e[i - 1], &e[i]));
        run = (cont ? run : 0) + e[i].cnt;
        if (level == SL_TOPO_HOST) run = e[i].cnt;
        if (run > best) best = run;
    }
    sl_free(e);
    return best < n ? best : n;
}

/* Appends a group's racks (largest first, as sorted) until `need` is met. */
static int32_t take_racks(const group_t *racks, uint32_t r0, uint32_t r1, int64_t need,
                          uint32_t *chosen, uint32_t *nch) {
    int32_t used = 0;
    for (uint32_t r = r0; r < r1 && need > 0; r++) {
        chosen[(*nch)++] = r;
        need -= racks[r].cnt;
        used++;
    }
    return used;
}

/* The bound on fewest_blocks' table (entries x racks tried per entry),
 * about 4 ms of work: beyond it the heuristic's blocks stand. */
#define FEWEST_BLOCKS_BUDGET (UINT64_C(1) << 22)

/*
 * The fewest blocks whose racks hold n tasks in exactly nr racks, nr being
 * the fewest racks of all, if fewer than kmax: a block that gives t racks
 * gives its t largest (any other t of its racks hold less), so this is a
 * grouped knapsack over the blocks, dp[j][k] = the most tasks j racks of k
 * blocks hold, each block taking 0..nr of its racks. Blocks of one rack
 * are interchangeable but for their counts, so only the nr largest of them
 * are tried. Fills out[0..*nout) with the racks (block by block, largest
 * first) and returns the block count; 0 when kmax blocks is already the
 * least, or when the table would exceed FEWEST_BLOCKS_BUDGET (then the
 * caller keeps its heuristic's choice). O(nb log nb + budget).
 */
static uint32_t fewest_blocks(const group_t *racks, const group_t *blocks, uint32_t nb, int32_t n,
                              uint32_t nr, uint32_t kmax, uint32_t *out, uint32_t *nout) {
    if (kmax < 2 || nr > 255) return 0;
    uint32_t kk = kmax - 1; /* blocks to try: 1..kk */
    rank_t *single = sl_xmalloc(nb * sizeof *single);
    uint32_t *use = sl_xmalloc(nb * sizeof *use);
    uint32_t nu = 0, ns = 0;
    uint64_t cost = 0;
    for (uint32_t b = 0; b < nb; b++) {
        uint32_t nrb = blocks[b].end - blocks[b].first;
        if (nrb == 1) single[ns++] = (rank_t){blocks[b].cnt, b};
        else use[nu++] = b, cost += nrb < nr ? nrb : nr;
    }
    qsort(single, ns, sizeof *single, cmp_rank);
    for (uint32_t q = 0; q < ns && q < nr; q++) use[nu++] = single[q].idx, cost++;
    qsort(use, nu, sizeof *use, cmp_u32); /* block order, as racks[] */
    size_t w = (size_t)(nr + 1) * (kk + 1);
    uint32_t found = 0;
    if (cost * w > FEWEST_BLOCKS_BUDGET) goto done;
    int64_t *dp = sl_xmalloc(w * sizeof *dp);
    uint8_t *ch = sl_xcalloc(nu * w, 1); /* racks block u took at (j, k) */
    for (size_t i = 0; i < w; i++) dp[i] = -1;
    dp[0] = 0;
    for (uint32_t u = 0; u < nu; u++) {
        const group_t *g = &blocks[use[u]];
        uint32_t tmax = g->end - g->first < nr ? g->end - g->first : nr;
        for (uint32_t j = nr; j >= 1; j--)
            for (uint32_t k = kk; k >= 1; k--) {
                int64_t add = 0;
                for (uint32_t t = 1; t <= tmax && t <= j; t++) {
                    add += racks[g->first + t - 1].cnt;
                    int64_t from = dp[(size_t)(j - t) * (kk + 1) + k - 1];
                    if (from < 0 || from + add <= dp[(size_t)j * (kk + 1) + k]) continue;
                    dp[(size_t)j * (kk + 1) + k] = from + add;
                    ch[u * w + (size_t)j * (kk + 1) + k] = (uint8_t)t;
                }
            }
    }
    uint32_t kbest = 0;
    for (uint32_t k = 1; k <= kk && !kbest; k++)
        if (dp[(size_t)nr * (kk + 1) + k] >= n) kbest = k;
    if (kbest) {
        /* Walk back: the last block that changed (j, k) took ch racks. */
        uint32_t j = nr, k = kbest, m = 0;
        for (uint32_t u = nu; u-- > 0 && j > 0;) {
            uint32_t t = ch[u * w + (size_t)j * (kk + 1) + k];
            if (!t) continue;
            for (uint32_t i = 0; i < t; i++) out[m++] = blocks[use[u]].first + i;
            j -= t;
            k--;
        }
        qsort(out, m, sizeof *out, cmp_u32); /* block by block, largest first */
        *nout = m;
        found = kbest;
    }
    sl_free(ch);
    sl_free(dp);
done:
    sl_free(use);
    sl_free(single);
    return found;
}

static void why(char *reason, size_t len, const sl_task_req_t *req, int32_t n, int level,
                int64_t now, bool ever) {
    if (!reason || len == 0) return;
    const char *lv = sl_topo_level_name(level);
    if (ever)
        snprintf(reason, len,
                 "topology: needs %d tasks in one %s (required); no %s could hold more than %lld "
                 "even when empty",
                 (int)n, lv, lv, (long long)now);
    else
        snprintf(reason, len,
                 "topology: waits for one %s to hold all %d tasks (required: %s, rather than "
                 "spread); the roomiest %s holds %lld now",
                 lv, (int)n, lv, lv, (long long)now);
    (void)req;
}

int sl__topo_place_gang(const sl__topo_ctx_t *tx, sl_cluster_t *cl, const sl_task_req_t *req,
                        int32_t n, sl_place_t *pls, int32_t *nodes_used, char *reason,
                        size_t reasonlen) {
    size_t nn = sl_cluster_node_count(cl);
    entry_t *e = sl_xmalloc((nn ? nn : 1) * sizeof *e);
    group_t *racks = sl_xmalloc((nn ? nn : 1) * sizeof *racks);
    group_t *blocks = sl_xmalloc((nn ? nn : 1) * sizeof *blocks);
    uint32_t *chosen = sl_xmalloc((nn ? nn : 1) * sizeof *chosen);
    uint32_t *alt = sl_xmalloc((nn ? nn : 1) * sizeof *alt);
    rank_t *order = sl_xmalloc((nn ? nn : 1) * sizeof *order);
    uint32_t k = 0, nr = 0, nb = 0, nch = 0;
    int32_t placed = 0;
    int rc = SL_NOFIT;

    for (uint32_t id = 0; id < nn; id++) {
        const sl_node_t *node = sl_cluster_node(cl, id);
        if (node->state != SL_NODE_UP) continue;
        if (tx->pol->filter && !tx->pol->filter(tx->cy, req, node)) continue;
        int32_t c = sl_node_fit_count(node, req, n);
        if (c <= 0) continue;
        e[k++] = entry_of(node, id, c);
    }
    qsort(e, k, sizeof *e, cmp_entry);

    /* Runs of the sorted entries: racks, each with its block's index. */
    for (uint32_t i = 0; i < k; i++) {
        bool new_block = i == 0 || !same_block(&e[i - 1], &e[i]);
        bool new_rack = new_block || !same_rack(&e[i - 1], &e[i]);
        if (new_block) blocks[nb++] = (group_t){.first = nr, .end = nr, .block = nb, .cnt = 0};
        if (new_rack) racks[nr++] = (group_t){.first = i, .end = i, .block = nb - 1, .cnt = 0};
        racks[nr - 1].end = i + 1;
        racks[nr - 1].cnt += e[i].cnt;
        blocks[nb - 1].end = nr;
        blocks[nb - 1].cnt += e[i].cnt;
    }
    qsort(racks, nr, sizeof *racks, cmp_rack); /* block order kept: blocks stay runs */

    int64_t best_rack = 0, best_block = 0;
    int32_t fit_rack = -1;
    for (uint32_t r = 0; r < nr; r++) {
        if (racks[r].cnt > best_rack) best_rack = racks[r].cnt;
        if (racks[r].cnt >= n && (fit_rack < 0 || racks[r].cnt < racks[fit_rack].cnt))
            fit_rack = (int32_t)r;
    }
    for (uint32_t b = 0; b < nb; b++)
        if (blocks[b].cnt > best_block) best_block = blocks[b].cnt;

    int level = req->topo_required;
    if (level == SL_TOPO_HOST) { /* place.c found no node that holds it all */
        int64_t best_node = 0;
        for (uint32_t i = 0; i < k; i++)
            if (e[i].cnt > best_node) best_node = e[i].cnt;
        int64_t ev = empty_group_max(cl, req, n, level, tx);
        why(reason, reasonlen, req, n, level, best_node, ev < n);
        rc = ev < n ? SL_NOFIT_EVER : SL_NOFIT;
        goto out;
    }
    if (fit_rack >= 0) {
        chosen[nch++] = (uint32_t)fit_rack;
    } else if (level == SL_TOPO_RACK) {
        int64_t ev = empty_group_max(cl, req, n, level, tx);
        why(reason, reasonlen, req, n, level, best_rack, ev < n);
        rc = ev < n ? SL_NOFIT_EVER : SL_NOFIT;
        goto out;
    } else {
        int32_t best_b = -1, best_used = 0;
        for (uint32_t b = 0; b < nb; b++) {
            if (blocks[b].cnt < n) continue;
            uint32_t tmp = 0;
            int32_t used = take_racks(racks, blocks[b].first, blocks[b].end, n, alt, &tmp);
            if (best_b < 0 || used < best_used ||
                (used == best_used && blocks[b].cnt < blocks[best_b].cnt)) {
                best_b = (int32_t)b;
                best_used = used;
            }
        }
        if (best_b < 0 && level == SL_TOPO_BLOCK) {
            int64_t ev = empty_group_max(cl, req, n, level, tx);
            why(reason, reasonlen, req, n, level, best_block, ev < n);
            rc = ev < n ? SL_NOFIT_EVER : SL_NOFIT;
            goto out;
        }
        /* Candidates, the best by (racks, blocks): the block that holds
         * the gang in the fewest of its racks; blocks largest first with
         * their racks largest first; and, unless a block is required, the
         * racks largest first over the whole cluster, which are the fewest
         * racks of all (but may cross more blocks). */
        uint32_t nblk = 0;
        if (best_b >= 0) {
            take_racks(racks, blocks[best_b].first, blocks[best_b].end, n, chosen, &nch);
            nblk = 1;
        } else {
            uint32_t na = 0;
            int64_t need = n;
            for (uint32_t b = 0; b < nb; b++) order[b] = (rank_t){blocks[b].cnt, b};
            qsort(order, nb, sizeof *order, cmp_rank);
            for (uint32_t q = 0; q < nb && need > 0; q++, nblk++) {
                const group_t *g = &blocks[order[q].idx];
                uint32_t before = na;
                take_racks(racks, g->first, g->end, need, alt, &na);
                for (uint32_t i = before; i < na; i++) need -= racks[alt[i]].cnt;
            }
            if (need > 0) goto out; /* place.c checked the total: cannot happen */
            memcpy(chosen, alt, na * sizeof *alt);
            nch = na;
        }
        /* The fewest blocks any set of the fewest racks can span: 2 when
         * a block holds the gang but only in more racks than the fewest;
         * else the blocks largest first (the fewest blocks of all). */
        uint32_t lb = best_b >= 0 ? 2 : nblk;
        /* A preferred level (Kueue's meaning): one block when one can hold
         * the gang, whatever the racks it then needs. */
        bool stay = best_b >= 0 && req->topo_preferred != SL_TOPO_ANY;
        if (level != SL_TOPO_BLOCK && !stay) {
            uint32_t na = 0;
            int64_t need = n;
            for (uint32_t r = 0; r < nr; r++) order[r] = (rank_t){racks[r].cnt, r};
            qsort(order, nr, sizeof *order, cmp_rank);
            for (uint32_t q = 0; q < nr && need > 0; q++) {
                alt[na++] = order[q].idx;
                need -= order[q].cnt;
            }
            qsort(alt, na, sizeof *alt, cmp_u32); /* block by block, as racks[] */
            uint32_t ab = 0;
            for (uint32_t i = 0; i < na; i++)
                ab += i == 0 || racks[alt[i]].block != racks[alt[i - 1]].block;
            if (need <= 0 && (na < nch || (na == nch && ab < nblk))) {
                memcpy(chosen, alt, na * sizeof *alt);
                nch = na;
                nblk = ab;
            }
            /* nch is now the fewest racks; make the blocks the fewest too. */
            if (nblk > lb && nblk > 1) {
                uint32_t nx = 0;
                if (fewest_blocks(racks, blocks, nb, n, nch, nblk, alt, &nx) > 0) {
                    memcpy(chosen, alt, nx * sizeof *alt);
                    nch = nx;
                }
            }
        }
    }

    /* Lay the tasks out rack by rack, node by node. */
    int32_t nused = 0;
    for (uint32_t c = 0; c < nch && placed < n; c++) {
        const group_t *g = &racks[chosen[c]];
        for (uint32_t i = g->first; i < g->end && placed < n; i++) {
            const sl_node_t *node = sl_cluster_node(cl, e[i].node);
            int32_t took = 0;
            for (int32_t j = 0; j < e[i].cnt && placed < n; j++) {
                sl_place_t p;
                int64_t sc;
                if (tx->pol->score(tx->cy, req, node, 1, &sc, &p) != SL_FIT) break;
                p.node = e[i].node;
                if (sl_cluster_alloc(cl, req, &p) != 0) break;
                pls[placed++] = p;
                took++;
            }
            if (took) nused++;
        }
    }
    if (placed < n) {
        for (int32_t i = placed - 1; i >= 0; i--) sl_cluster_release(cl, req, &pls[i]);
        placed = 0;
        if (reason && reasonlen > 0)
            snprintf(reason, reasonlen, "topology: the chosen nodes could not hold all %d tasks",
                     (int)n);
        goto out;
    }
    if (nodes_used) *nodes_used = nused;
    rc = SL_FIT;
out:
    sl_free(order);
    sl_free(alt);
    sl_free(chosen);
    sl_free(blocks);
    sl_free(racks);
    sl_free(e);
    return rc;
}

int32_t sl_topo_groups_spanned(const sl_cluster_t *cl, const sl_place_t *pls, int32_t n,
                               int level) {
    /* Distinct groups among n placements: O(n^2) on the gang, which is small
     * next to placing it; no allocation. */
    int32_t groups = 0;
    for (int32_t i = 0; i < n; i++) {
        entry_t ea = entry_of(sl_cluster_node(cl, pls[i].node), pls[i].node, 0);
        bool seen = false;
        for (int32_t j = 0; j < i && !seen; j++) {
            entry_t eb = entry_of(sl_cluster_node(cl, pls[j].node), pls[j].node, 0);
            if (ea.node == eb.node) seen = true;
            else if (level == SL_TOPO_RACK) seen = same_rack(&ea, &eb);
            else if (level == SL_TOPO_BLOCK) seen = same_block(&ea, &eb);
        }
        if (!seen) groups++;
    }
    return groups;
}
