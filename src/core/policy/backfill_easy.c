/*
 * backfill_easy.c - EASY backfill's reservation (Lifka, "The ANL/IBM SP
 * scheduling system", JSSPP'95; Mu'alem & Feitelson, TPDS 2001).
 *
 * When the first job of the queue (in policy order) cannot start, EASY gives
 * it a reservation: the earliest time at which it will fit if every running
 * job ends when its estimate says (its time limit, else its own default,
 * else the scheduler's; a job with none never ends), and the nodes it
 * would use then. Later jobs may start now only if they cannot delay it:
 * they end by that
 * "shadow" time, or they use none of the reserved nodes. The cycle in
 * sched_cycle.c enforces that rule; this file computes the reservation.
 * It is the backfill policy "easy" (policy.h): it reads the scheduler only
 * through the sl_backfill_view_t it is given (the cluster, and the running
 * jobs in order of expected end), and calls nothing of the scheduler.
 *
 * Algorithm. The blocked job needs `count` identical tasks of one shape.
 * Tasks on different nodes do not interact, so the job fits iff the sum over
 * nodes of "how many tasks of the shape this node holds" (sl_node_fit_count,
 * capped at count) reaches count. Start from that sum over the cluster as it
 * is (one evaluation per free-capacity class). Then walk the running jobs in
 * order of expected end (ties: start order) and release each one's tasks on
 * private COPIES of the nodes it occupies (Slurm's node_space_map_t idea,
 * restricted to the nodes that change), updating the sum by the difference
 * of the touched nodes' counts. The first expected end at which the sum
 * reaches count is the shadow time. The reserved nodes are then the nodes
 * of that released state that hold the most tasks (ties: lower id), taken
 * until they hold count tasks: as few nodes as possible, so that as many
 * others as possible stay open to long backfill jobs. Reservations are
 * node-granular, as in Slurm: a long job may use no reserved node at all,
 * even one with room beyond what the reserved job needs.
 *
 * A job that requires a topology level (topology.h: one host, rack or
 * block) fits only inside one group of that level, which one sum over the
 * cluster cannot see (it would promise a time at which the tasks fit only
 * spread). Such a job gets a sum per group instead (easy_reserve_topo):
 * the up nodes are grouped by their paths, each group's sum is kept as the
 * running jobs are released on the same copies, the shadow time is the
 * first expected end at which ONE group's sum reaches count, and the
 * reserved nodes are that group's nodes that hold the most tasks then.
 * Later jobs pass by the same rule: they end by the shadow time, or they
 * use none of the reserved nodes (which lie in that one group).
 *
 * Why the reservation holds: at the shadow time the reserved nodes are in
 * the copied state or better provided (a) running jobs end by their
 * estimate, (b) jobs started later either end by the shadow time or avoid
 * the reserved nodes. The gang placer finds a placement whenever the sum of
 * per-node counts reaches the gang size, so the job starts by then; for a
 * required level, whenever one group's sum does (topology.c takes a rack
 * or block whose count reaches the gang's; one node that holds it all).
 *
 * Held across cycles (sched_cycle.c, docs/scheduling.md). The scheduler
 * asks for a reservation for the job that HOLDS it, not for whichever job is
 * first blocked in this cycle's order: the first blocked job of a cycle
 * without a hold takes the hold, and keeps it until it starts, leaves the
 * queue (cancelled), is held back by its tenant's quota or can never fit,
 * or, under the "priority" order only, a pending job of a higher priority
 * exists. Each cycle tries the held job first, then calls easy_reserve
 * afresh for it, and every other job, whatever its tenant and place in the
 * order, backfills against it. Under drf the order moves with the tenants'
 * shares; without the hold another tenant's short job came first each time
 * a GPU freed, and a wide gang never got its nodes.
 *
 * The bound. If the hold is given at t0 with shadow time S0, then S0 is at
 * most the latest expected end of the jobs running at t0 (so S0 - t0 is at
 * most the longest time limit, or default limit, among them), and the held
 * job starts in the first cycle at or after S0, provided (a) running jobs
 * end by their estimates, (b) the cluster does not shrink, (c) the hold is
 * not released or superseded. Each cycle's reservation releases every
 * running job at its expected end; a job started under the hold ended by
 * the shadow time then in force or avoided the reserved nodes, so at that
 * time the reserved nodes hold the job again and the next shadow time is
 * no later (S_k+1 <= S_k). Jobs with a default limit only (not enforced by
 * sluiced) that run past it count as ending now: the reservation stays at
 * the present on their nodes and the held job waits for their real end.
 * Jobs with no estimate at all never end here: if the held job needs
 * their nodes, no reservation exists, and the job then holds nothing back
 * (sched_cycle.c): its start time is unknown, and the others go on. The
 * controller gives every job an estimate (its pool's default time limit,
 * sl_job_spec_t.default_limit_us), so there a reservation is missing only
 * while a node the job needs is down.
 *
 * Workload: R running jobs (thousands), tens of thousands of nodes; one
 * reservation per cycle. The scheduler keeps the running jobs ordered by
 * expected end (a treap, sched_queue.c), so the walk visits only the K jobs that
 * end up to the shadow time: O(K + T * gpus + classes + C log C) for T
 * tasks released and C candidate nodes, not O(R log R) per cycle. The
 * cluster is never modified.
 */
#include <stdlib.h>
#include <string.h>

#include "cluster_index.h"
#include "place_nodes.h"
#include "policy/backfill.h"
#include "sluice/alloc.h"
#include "sluice/topology.h"

typedef struct easy_cand {
    uint32_t node;
    int32_t fit;
} easy_cand_t;

/*
 * The reservation state and its scratch buffers, one per scheduler, reused
 * from cycle to cycle (steady state allocates nothing). Fields after the
 * scratch are the result of easy_reserve.
 */
typedef struct easy {
    /* scratch */
    sl_node_t *copies;              /* copies of the nodes a release touched */
    int32_t *copy_fit;              /* tasks of the blocked job each copy holds */
    size_t copies_cap;
    int32_t *copy_of;               /* node id -> index in copies, or -1 */
    uint8_t *reserved;              /* node id -> 1 if reserved */
    size_t nodes_cap;               /* entries of copy_of and reserved */
    easy_cand_t *cands;             /* candidate nodes at the shadow time */
    size_t cands_cap;
    /* scratch of a job that requires a topology level (easy_reserve_topo) */
    struct easy_key *keys;          /* every node, by group (kept across calls) */
    size_t nkeys;                   /* entries of keys in use (0: none yet) */
    int keys_level;                 /* the level keys are sorted for */
    uint32_t ngroups;               /* groups of that level */
    uint32_t *group_of;             /* node id -> group */
    uint32_t *gfirst;               /* group -> first index in keys (+ end) */
    int64_t *gsum;                  /* group -> tasks its nodes hold */
    size_t topo_cap;                /* entries of each */
    /* result */
    bool active;
    int64_t shadow_us;              /* the reserved start time */
    uint32_t *rnodes;               /* the reserved nodes */
    size_t nrnodes, rnodes_cap;
} easy_t;

static void *easy_init(void) {
    easy_t *e = sl_xcalloc(1, sizeof *e);
    e->shadow_us = -1;
    return e;
}

static void easy_fini(void *st) {
    easy_t *e = st;
    if (!e) return;
    sl_free(e->copies);
    sl_free(e->copy_fit);
    sl_free(e->copy_of);
    sl_free(e->reserved);
    sl_free(e->cands);
    sl_free(e->keys);
    sl_free(e->group_of);
    sl_free(e->gfirst);
    sl_free(e->gsum);
    sl_free(e->rnodes);
    sl_free(e);
}

/* Grows *p to hold at least n elements of size sz (capacity in *cap). */
static void grow(void **p, size_t *cap, size_t n, size_t sz) {
    if (n <= *cap) return;
    size_t c = *cap ? *cap : 16;
    while (c < n) c *= 2;
    *p = sl_xrealloc(*p, c * sz);
    *cap = c;
}

static int cmp_cand(const void *pa, const void *pb) {
    const easy_cand_t *a = pa, *b = pb;
    if (a->fit != b->fit) return a->fit > b->fit ? -1 : 1;
    return a->node < b->node ? -1 : a->node > b->node;
}

/* Reserves the roomiest of the nc candidates in e->cands until they hold
 * count tasks, and makes that the active reservation at shadow. */
static void reserve_cands(easy_t *e, size_t nc, int64_t count, int64_t shadow,
                          sl_reservation_t *out) {
    if (nc > 1) qsort(e->cands, nc, sizeof *e->cands, cmp_cand);
    int64_t have = 0;
    for (size_t i = 0; i < nc && have < count; i++) {
        grow((void **)&e->rnodes, &e->rnodes_cap, e->nrnodes + 1, sizeof *e->rnodes);
        e->rnodes[e->nrnodes++] = e->cands[i].node;
        e->reserved[e->cands[i].node] = 1;
        have += e->cands[i].fit;
    }
    e->active = true;
    e->shadow_us = shadow;
    *out = (sl_reservation_t){shadow, e->rnodes, e->nrnodes};
}

/* Drops the reservation (clears the marks). O(reserved nodes). */
static void easy_clear(void *st) {
    easy_t *e = st;
    for (size_t i = 0; i < e->nrnodes; i++)
        if (e->rnodes[i] < e->nodes_cap) e->reserved[e->rnodes[i]] = 0;
    e->nrnodes = 0;
    e->active = false;
    e->shadow_us = -1;
}

/* True if any of the n placements uses a reserved node. O(n). */
static bool easy_touches(const void *st, const sl_place_t *pls, int32_t n) {
    const easy_t *e = st;
    if (!e->active) return false;
    for (int32_t i = 0; i < n; i++)
        if (pls[i].node < e->nodes_cap && e->reserved[pls[i].node]) return true;
    return false;
}

/*
 * Releases a running task at pl on the private copy of its node (made on
 * first touch, with the blocked job's count there), as sl_cluster_release
 * would. Returns the copy's index; *delta is the change in the tasks of
 * req (capped at count) the node holds. O(gpus).
 */
static int32_t release_on_copy(easy_t *e, const sl_cluster_t *cl, const sl_task_req_t *jreq,
                               const sl_place_t *pl, const sl_task_req_t *req, int32_t count,
                               size_t *ncopies, int32_t *delta) {
    int32_t ci = e->copy_of[pl->node];
    if (ci < 0) {
        size_t cap0 = e->copies_cap;
        grow((void **)&e->copies, &e->copies_cap, *ncopies + 1, sizeof *e->copies);
        if (e->copies_cap != cap0) /* copy_fit has the same capacity */
            e->copy_fit = sl_xrealloc(e->copy_fit, e->copies_cap * sizeof *e->copy_fit);
        ci = (int32_t)(*ncopies)++;
        e->copies[ci] = *sl_cluster_node(cl, pl->node);
        e->copy_fit[ci] = sl_node_fit_count(&e->copies[ci], req, count);
        e->copy_of[pl->node] = ci;
    }
    sl__node_give_back(&e->copies[ci], jreq, pl); /* as sl_cluster_release */
    int32_t f = sl_node_fit_count(&e->copies[ci], req, count);
    *delta = f - e->copy_fit[ci];
    e->copy_fit[ci] = f;
    return ci;
}

/* ---- a job that requires a topology level ---- */

/* A node's group key: its path, cut to the level's part (NULL: no path,
 * a group of its own). */
typedef struct easy_key {
    const char *labels; /* the node's, when the key was read */
    const char *key;
    uint32_t len;
    uint32_t node;
} easy_key_t;

static int cmp_key(const void *pa, const void *pb) {
    const easy_key_t *a = pa, *b = pb;
    if (!a->key != !b->key) return a->key ? -1 : 1;
    if (a->key) {
        size_t m = a->len < b->len ? a->len : b->len;
        int c = memcmp(a->key, b->key, m);
        if (c == 0 && a->len != b->len) c = a->len < b->len ? -1 : 1;
        if (c != 0) return c;
    }
    return a->node < b->node ? -1 : a->node > b->node;
}

static bool same_key(const easy_key_t *a, const easy_key_t *b) {
    return a->key && b->key && a->len == b->len && memcmp(a->key, b->key, a->len) == 0;
}

/*
 * The reservation of a job that requires one group of a topology level
 * (host, rack or block; topology.h): the earliest expected end after which
 * ONE group's nodes hold all `count` tasks (a sum per group, kept as the
 * running jobs are released on copies, exactly as easy_reserve keeps one
 * sum for the cluster), and the nodes of that group that hold the most
 * tasks then. At that time the gang placer (topology.c) finds that group
 * (a rack or block whose count reaches the gang's; for a host, a node that
 * holds it all), so the promise holds under the same conditions as
 * easy_reserve's. O(N) pointer compares to check the grouping of the N
 * nodes by their paths kept from the last call (O(N log N) to rebuild it
 * when nodes were added), O(classes + nodes with room) for the sums now,
 * plus easy_reserve's walk; only for such jobs, so other jobs pay
 * nothing.
 */
static bool easy_reserve_topo(easy_t *e, const sl_backfill_view_t *v, const sl_task_req_t *req,
                              int32_t count, int64_t now_us, sl_reservation_t *out) {
    const sl_cluster_t *cl = v->cluster;
    size_t nnodes = sl_cluster_node_count(cl);
    int level = req->topo_required;
    if (nnodes == 0) return false; /* no group at all */
    if (nnodes > e->topo_cap) {
        e->keys = sl_xrealloc(e->keys, nnodes * sizeof *e->keys);
        e->group_of = sl_xrealloc(e->group_of, nnodes * sizeof *e->group_of);
        e->gfirst = sl_xrealloc(e->gfirst, (nnodes + 1) * sizeof *e->gfirst);
        e->gsum = sl_xrealloc(e->gsum, nnodes * sizeof *e->gsum);
        e->topo_cap = nnodes;
    }
    /* Every node by its key, sorted, and grouped (nodes in any state: one
     * that is not up holds nothing). A node's labels are fixed when it is
     * added, so the grouping of the last call is kept while the nodes and
     * their labels (by pointer) are the same and the level is: O(N)
     * pointer compares; otherwise it is rebuilt, O(N log N). */
    bool same = e->nkeys == nnodes && e->keys_level == level;
    for (size_t i = 0; i < nnodes && same; i++)
        same = sl_cluster_node(cl, e->keys[i].node)->labels == e->keys[i].labels;
    if (!same) {
        for (uint32_t id = 0; id < nnodes; id++) {
            easy_key_t k = {.node = id, .labels = sl_cluster_node(cl, id)->labels};
            size_t len;
            if (level != SL_TOPO_HOST && sl_topo_path(k.labels, &k.key, &len))
                k.len = (uint32_t)(level == SL_TOPO_BLOCK ? sl_topo_block_len(k.key, len) : len);
            e->keys[id] = k;
        }
        if (nnodes > 1) qsort(e->keys, nnodes, sizeof *e->keys, cmp_key);
        uint32_t ng = 0;
        for (size_t i = 0; i < nnodes; i++) {
            if (i == 0 || !same_key(&e->keys[i - 1], &e->keys[i])) e->gfirst[ng++] = (uint32_t)i;
            e->group_of[e->keys[i].node] = ng - 1;
        }
        e->gfirst[ng] = (uint32_t)nnodes;
        e->ngroups = ng;
        e->nkeys = nnodes;
        e->keys_level = level;
    }

    /* Tasks each group holds now: over the free-capacity classes that can
     * take a task, so nodes with no room cost nothing. */
    uint32_t found_g = UINT32_MAX;
    memset(e->gsum, 0, e->ngroups * sizeof *e->gsum);
    size_t nclasses = sl_cluster_class_count(cl);
    for (size_t c = 0; c < nclasses; c++) {
        int32_t f = sl_node_fit_count(sl_cluster_class_rep(cl, c), req, count);
        if (f <= 0) continue;
        uint32_t sz = sl_cluster_class_size(cl, c);
        for (uint32_t m = 0; m < sz; m++) {
            uint32_t g = e->group_of[sl_cluster_class_node(cl, c, m)];
            e->gsum[g] += f;
            if (e->gsum[g] >= count && found_g == UINT32_MAX) found_g = g;
        }
    }

    /* The running jobs by expected end, released on copies. */
    size_t ncopies = 0;
    int64_t shadow = now_us;
    const void *cur = NULL;
    sl_running_view_t j;
    while (found_g == UINT32_MAX && v->next_end(v->ctx, &cur, &j)) {
        for (int32_t t = 0; t < j.n; t++) {
            const sl_place_t *pl = &j.pls[t];
            if (pl->node >= nnodes) continue;
            int32_t d;
            release_on_copy(e, cl, j.req, pl, req, count, &ncopies, &d);
            uint32_t g = e->group_of[pl->node];
            e->gsum[g] += d;
            if (e->gsum[g] >= count && found_g == UINT32_MAX) found_g = g;
        }
        if (found_g != UINT32_MAX) shadow = j.end_us > now_us ? j.end_us : now_us;
    }

    bool found = found_g != UINT32_MAX;
    if (found) {
        /* Candidates: the group's nodes, as released. */
        size_t nc = 0;
        for (uint32_t i = e->gfirst[found_g]; i < e->gfirst[found_g + 1]; i++) {
            uint32_t id = e->keys[i].node;
            int32_t ci = e->copy_of[id];
            int32_t f = ci >= 0 ? e->copy_fit[ci]
                                : sl_node_fit_count(sl_cluster_node(cl, id), req, count);
            if (f <= 0) continue;
            grow((void **)&e->cands, &e->cands_cap, nc + 1, sizeof *e->cands);
            e->cands[nc++] = (easy_cand_t){id, f};
        }
        reserve_cands(e, nc, count, shadow, out);
    }
    for (size_t ci = 0; ci < ncopies; ci++) e->copy_of[e->copies[ci].id] = -1;
    return found;
}

/* ---- a gang that names its nodes (place_nodes.c) ---- */

/* The state a node-aware reservation keeps while releases go on: each
 * node's capacity for the gang (sl__gang_node_cap on its copy, or on the
 * node), the named (include) nodes' sum and how many of them cannot take
 * their part, and a histogram of the other nodes by capacity, so that each
 * check is O(capacity), not O(nodes). */
typedef struct gang_state {
    const sl_task_req_t *req;
    int32_t count, top;  /* the gang's tasks; the largest capacity a node counts with */
    const uint8_t *marks;
    int32_t *cap;        /* by node id */
    int64_t *hist;       /* [0..top]: non-named nodes by capacity */
    int64_t must_sum;
    int32_t must_n, must_bad;
} gang_state_t;

static void gang_set(gang_state_t *g, const sl_node_t *n, int sign) {
    int32_t c = g->cap[n->id];
    if (SL__GANG_MUST(g->marks, n->id)) {
        g->must_sum += sign * (int64_t)c;
        g->must_n += sign;
        g->must_bad += sign * (c == 0);
    } else {
        g->hist[c] += sign;
    }
}

static void gang_update(gang_state_t *g, const sl_node_t *n) {
    int32_t c = 0;
    if (n->state == SL_NODE_UP && sl_constraint_admits(g->req->cons, n))
        c = sl__gang_node_cap(g->req, g->count, n, g->marks);
    if (c > g->top) c = g->top;
    gang_set(g, n, -1);
    g->cap[n->id] = c;
    gang_set(g, n, +1);
}

/* Whether the gang fits on the state now: the named nodes, then the
 * roomiest others (fewest nodes first), in [lo, hi]. O(top). */
static bool gang_fits(const gang_state_t *g, int32_t lo, int32_t hi) {
    return g->must_bad == 0 &&
           sl__gang_hist_fits(g->must_n, g->must_sum, g->hist, g->top, g->count, lo, hi);
}

/* easy_reserve for a gang that names its nodes (place_nodes.c): running
 * jobs are released in order of end on copies, the capacities of the
 * nodes they touch kept up to date, until the node-aware check (distinct
 * nodes, tasks per node, idle nodes for a whole-node gang, node lists)
 * passes; the nodes the placement would then choose are reserved.
 * O(nodes log nodes + K x (tasks + capacity)) for the K jobs released. */
static bool easy_reserve_nodes(easy_t *e, const sl_backfill_view_t *v, const sl_task_req_t *req,
                               int32_t count, int64_t now_us, sl_reservation_t *out) {
    const sl_cluster_t *cl = v->cluster;
    size_t nn = sl_cluster_node_count(cl), ncopies = 0;
    int32_t nincl, lo, hi, N = 0;
    uint8_t *marks = sl__gang_marks(cl, req, &nincl);
    if (!sl__gang_range(req, count, nincl, &lo, &hi)) {
        sl_free(marks);
        return false;
    }
    gang_state_t g = {.req = req, .count = count, .marks = marks,
                      .top = req->tasks_per_node > 0 ? req->tasks_per_node : count};
    g.cap = sl_xcalloc(nn ? nn : 1, sizeof *g.cap);
    g.hist = sl_xcalloc((size_t)g.top + 1, sizeof *g.hist);
    for (uint32_t id = 0; id < nn; id++) {
        gang_set(&g, sl_cluster_node(cl, id), +1); /* as capacity 0 */
        gang_update(&g, sl_cluster_node(cl, id));
    }
    bool found = gang_fits(&g, lo, hi);
    int64_t shadow = now_us;
    const void *cur = NULL;
    sl_running_view_t j;
    while (!found && v->next_end(v->ctx, &cur, &j)) {
        for (int32_t t = 0; t < j.n; t++) {
            int32_t d;
            if (j.pls[t].node >= nn) continue;
            int32_t ci = release_on_copy(e, cl, j.req, &j.pls[t], req, count, &ncopies, &d);
            gang_update(&g, &e->copies[ci]);
        }
        if ((found = gang_fits(&g, lo, hi))) shadow = j.end_us > now_us ? j.end_us : now_us;
    }
    if (found) {
        /* The nodes the placement would choose then (place_nodes.c's order). */
        sl__gang_cand_t *c = sl_xmalloc((nn ? nn : 1) * sizeof *c);
        int32_t nc = 0;
        for (uint32_t id = 0; id < nn; id++)
            if (g.cap[id] > 0)
                c[nc++] = (sl__gang_cand_t){.id = id, .cap = g.cap[id], .must = SL__GANG_MUST(marks, id)};
        N = sl__gang_pick(req, count, nincl, c, nc);
        grow((void **)&e->cands, &e->cands_cap, (size_t)(N ? N : 1), sizeof *e->cands);
        for (int32_t i = 0; i < N; i++) e->cands[i] = (easy_cand_t){c[i].id, c[i].cap};
        if (N > 0) reserve_cands(e, (size_t)N, INT64_MAX, shadow, out); /* all N of them */
        sl_free(c);
    }
    for (size_t ci = 0; ci < ncopies; ci++) e->copy_of[e->copies[ci].id] = -1;
    sl_free(marks);
    sl_free(g.cap);
    sl_free(g.hist);
    return N > 0;
}

/*
 * Computes the reservation of a job that needs `count` tasks of req and
 * cannot start now: its shadow time (the earliest expected end of running
 * jobs, walked in order through v->next_end, after which `count` tasks fit
 * on the released state) and the nodes it would use then. Works on copies
 * of the nodes involved; the cluster is not changed. Returns true and fills
 * *out; false if the job does not fit even after every running job with a
 * finite expected end has ended. O(K + touched nodes * gpus + classes +
 * C log C) for the K running jobs that end up to the shadow time (all of
 * them when it fails) and C candidate nodes.
 */
static bool easy_reserve(void *st, const sl_backfill_view_t *v, const sl_task_req_t *req,
                         int32_t count, int64_t now_us, sl_reservation_t *out) {
    easy_t *e = st;
    const sl_cluster_t *cl = v->cluster;
    easy_clear(e);
    if (count <= 0) return false;

    size_t nnodes = sl_cluster_node_count(cl);
    if (nnodes > e->nodes_cap) {
        size_t old = e->nodes_cap;
        e->copy_of = sl_xrealloc(e->copy_of, nnodes * sizeof *e->copy_of);
        e->reserved = sl_xrealloc(e->reserved, nnodes);
        for (size_t i = old; i < nnodes; i++) {
            e->copy_of[i] = -1;
            e->reserved[i] = 0;
        }
        e->nodes_cap = nnodes;
    }
    /* A job that requires a topology level fits only inside one group,
     * which one sum over the cluster does not see: a sum per group. */
    if (req->topo_required != SL_TOPO_ANY)
        return easy_reserve_topo(e, v, req, count, now_us, out);
    /* Distinct nodes, tasks per node, whole nodes, node lists: a sum of
     * tasks does not see them either. */
    if (sl__req_names_nodes(req))
        return easy_reserve_nodes(e, v, req, count, now_us, out);

    /* Tasks that fit now, over the free-capacity classes. */
    int64_t sum = 0;
    size_t nclasses = sl_cluster_class_count(cl);
    for (size_t i = 0; i < nclasses; i++) {
        const sl_node_t *rep = sl_cluster_class_rep(cl, i);
        sum += (int64_t)sl_cluster_class_size(cl, i) * sl_node_fit_count(rep, req, count);
    }

    /* Running jobs with a finite expected end, by end then start order:
     * the scheduler keeps them in that order, so only the prefix up to the
     * shadow time is visited. */
    size_t ncopies = 0;
    bool found = sum >= count;
    int64_t shadow = now_us;
    const void *cur = NULL;
    sl_running_view_t j;
    while (!found && v->next_end(v->ctx, &cur, &j)) {
        for (int32_t t = 0; t < j.n; t++) {
            const sl_place_t *pl = &j.pls[t];
            if (pl->node >= nnodes) continue;
            int32_t d;
            release_on_copy(e, cl, j.req, pl, req, count, &ncopies, &d);
            sum += d;
        }
        if (sum >= count) {
            found = true;
            shadow = j.end_us > now_us ? j.end_us : now_us;
        }
    }

    if (found) {
        /* Candidates: released copies, then untouched up nodes. */
        size_t nc = 0;
        for (size_t ci = 0; ci < ncopies; ci++) {
            if (e->copy_fit[ci] <= 0) continue;
            grow((void **)&e->cands, &e->cands_cap, nc + 1, sizeof *e->cands);
            e->cands[nc++] = (easy_cand_t){e->copies[ci].id, e->copy_fit[ci]};
        }
        for (size_t i = 0; i < nclasses; i++) {
            int32_t f = sl_node_fit_count(sl_cluster_class_rep(cl, i), req, count);
            if (f <= 0) continue;
            uint32_t sz = sl_cluster_class_size(cl, i);
            for (uint32_t m = 0; m < sz; m++) {
                uint32_t id = sl_cluster_class_node(cl, i, m);
                if (id >= nnodes || e->copy_of[id] >= 0) continue;
                grow((void **)&e->cands, &e->cands_cap, nc + 1, sizeof *e->cands);
                e->cands[nc++] = (easy_cand_t){id, f};
            }
        }
        reserve_cands(e, nc, count, shadow, out);
    }

    /* Reset the copy map for the next call. */
    for (size_t ci = 0; ci < ncopies; ci++) e->copy_of[e->copies[ci].id] = -1;
    return found;
}

const sl_backfill_policy_t sl__backfill_easy = {
    .name = "easy",
    .help = "EASY: the first blocked job gets a reservation; later jobs pass only if they cannot delay it",
    .init = easy_init,
    .fini = easy_fini,
    .reserve = easy_reserve,
    .touches = easy_touches,
    .clear = easy_clear,
};
