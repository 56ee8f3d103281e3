/*
 * cluster.c - nodes, pools, GPU models and the free-capacity index. This
 * file holds the nodes, pools, models, fitting and alloc/release; the index
 * (classes, their table, buckets and node order heaps) is cluster_class.c,
 * which this file calls and which calls nothing here (cluster_internal.h).
 *
 * Storage. Nodes live in one dense array indexed by id (ids are handed out in
 * order and never reused: the cluster has no node removal). Names map to ids
 * through the core's hash table (sluice/hash.h) keyed by the name's FNV-1a
 * hash, each candidate compared by name. Pools
 * and GPU models are interned into small arrays; they number in the tens, so
 * a linear lookup is cheaper than a hash.
 *
 * Names are reference counted, because the tables are small and fixed
 * (SL_MAX_MODELS, as a model is a bit of a request's mask) and whoever can
 * submit a job can name any model or pool. A node holds a reference to its
 * model and pool for the cluster's life (nodes are never removed), a job
 * from its submission until it is forgotten, the caller's configuration to
 * its pools; pool "default" holds one of its own. A name whose last
 * reference goes frees its slot, which the next new name takes (the lowest
 * free id, so that ids stay a function of the call sequence); an id never
 * changes while the name is referenced, so the masks of pending jobs stay
 * valid. (The workload statistics, sl_workload, keep the masks of past jobs'
 * shapes; after an id is reused they count toward its new name: an input of
 * the fragmentation score, never of whether a placement fits.)
 *
 * The job share. One pending job could otherwise name every free model
 * and pool slot and, while it waits, keep a real node with a new model or
 * pool from registering. So each name counts its references in two kinds,
 * a job's and any other (a node's, the configuration's), and the names
 * held by jobs alone may fill at most half of each table (SL_MAX_JOB_MODELS,
 * SL_MAX_JOB_POOLS): nodes always find the other half. A name stops
 * counting toward the share as soon as a node holds it too (registered
 * before or after the job), and counts again only if every non-job
 * reference goes while jobs still hold it. Only a job's new name is
 * checked against the share; recovery may take names past it (jobs
 * acknowledged before the share existed are kept, not dropped), so the
 * count may exceed the share until those jobs end. The count of names
 * jobs alone hold is kept as references come and go (a name changes side
 * only with its first node reference or its last), so checking the share
 * costs O(1) on top of the lookup.
 *
 * The index. Every node that is up belongs to exactly one equivalence class:
 * the nodes whose whole placement-relevant state is identical, namely pool,
 * model, GPU count, CPU/memory/GPU-memory totals, free CPU and memory, the
 * kinds of GPU tasks it runs (sl_node_t.kinds: which of "a share", "k whole
 * GPUs" it has at least one task of; each node counts its tasks per kind,
 * SL_KINDS counters, so that a release knows when a kind is gone), and the
 * SORTED multiset of (free compute, free memory) pairs of its GPUs. The
 * state is packed into a key of 7 + 2*ngpus 64-bit words. A class lives in a
 * stable slot (slots are recycled through a free list, so a node's class
 * handle never changes while it is a member); a dense array of slot numbers
 * gives the public order (so class i and its representative are O(1)), and
 * the core's hash table (sluice/hash.h: backward-shift deletion, so churn
 * leaves no tombstones; the key hash is stored in the entry, so misses never
 * touch the classes) maps a key's hash to the slot. Each class
 * keeps its members in an array, and each node remembers its slot and its
 * position there, so a node leaves a class by swap-remove in O(1).
 *
 * Allocating, releasing or changing the state of a node re-keys that one
 * node: build the key (insertion sort of <= 16 pairs), hash it, look it up,
 * move the node. That is O(gpus) expected, never O(nodes). An emptied class
 * is swap-removed from the dense array in O(1) (only the moved class's dense
 * position changes, never its members' handles); its slot and member buffer
 * go to the free list and are reused by the next new class, so steady-state
 * churn allocates nothing.
 *
 * The representative of a class is its member at index 0. Everything here is
 * a function of the call sequence alone (no addresses or randomness feed the
 * hashes), so the same calls give the same class order and representatives.
 *
 * The node order (cluster_index.h). Next to its member array each class
 * keeps the same members in a binary min-heap (sluice/heap.h) of
 * (sl__node_rank(order_key, id) << 32 | id), and each node remembers its
 * heap position too (the heap reports moves), so the
 * member first in the order is heap[0] (mirrored in the class's identity as
 * `first`), a join is a sift-up and a leave a swap with the last entry and
 * one sift: O(log class size). Changing the key rebuilds every heap
 * (Floyd's heapify, O(up nodes)). The heap decides nothing else: the member
 * array, and with it the representative, is kept exactly as without it.
 *
 * Summaries and buckets (cluster_index.h). Next to the dense order, two
 * parallel dense arrays hold each class's 32-byte summary (what placement
 * filters read: free CPU and memory, pool, model, fully free GPUs, largest
 * free share, free GPU sum, representative) and its identity (a uid that is
 * never reused, the key hash, size, slot). The dense order is grouped into
 * SL__NBUCKETS contiguous buckets by free GPU (fully free count, else the
 * largest free share in tenths of a GPU), ascending, with the start of each
 * bucket kept in bstart[]. A new class goes at the end of its bucket and a
 * dropped one is replaced by its bucket's last class; either way one class
 * per later bucket moves by one position (its first or last element rotates
 * across the boundary), so both cost O(buckets), and a request scans only
 * the buckets that can hold it. A class's summary changes only when its
 * representative or size does (O(1) on each member move).
 *
 * Workload: 10^4..10^5 nodes, tens to low thousands of classes, millions of
 * alloc/release calls from the simulator. Capacity totals are maintained
 * incrementally so sl_cluster_capacity() is O(1).
 */
#include <stdarg.h>
#include <string.h>

#include "cluster_internal.h"
#include "sluice/alloc.h"
#include "sluice/error.h"
#include "sluice/topology.h"

#include <stdio.h> /* vsnprintf only: formats error messages, no I/O */

/* ---- small helpers ---- */

__attribute__((format(printf, 3, 4)))
static void seterr(char *err, size_t errlen, const char *fmt, ...) {
    if (!err || errlen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static sl_res_t node_total(const sl_node_t *n) {
    return (sl_res_t){n->cpu_total, n->mem_total, (int64_t)n->ngpus * SL_GPU_MILLI};
}

static sl_res_t node_free(const sl_node_t *n) {
    int64_t g = 0;
    for (int i = 0; i < n->ngpus; i++) g += n->gpu_free[i];
    return (sl_res_t){n->cpu_free, n->mem_free, g};
}

/* ---- node state names ---- */

const char *sl_node_state_name(sl_node_state_t st) {
    switch (st) {
    case SL_NODE_UP: return "up";
    case SL_NODE_DRAINING: return "draining";
    case SL_NODE_DOWN: return "down";
    }
    return "unknown";
}

int sl_node_state_parse(const char *s, sl_node_state_t *out) {
    if (!s) return SL_EINVAL;
    if (strcmp(s, "up") == 0) *out = SL_NODE_UP;
    else if (strcmp(s, "draining") == 0) *out = SL_NODE_DRAINING;
    else if (strcmp(s, "down") == 0) *out = SL_NODE_DOWN;
    else return SL_EINVAL;
    return 0;
}

/* ---- pools and models ---- */

/* A table of interned names (cluster_internal.h), for pools or GPU models:
 * max slots in all, of which names held by jobs alone may use job_max. */
static void names_init(sl_names_t *t, int32_t max, int32_t job_max) {
    memset(t, 0, sizeof *t);
    t->max = max;
    t->job_max = job_max;
}

static void names_fini(sl_names_t *t) {
    sl_free(t->name);
    sl_free(t->refs);
    sl_free(t->held);
}

static int name_check(const char *name) {
    if (!name || !*name) return SL_EINVAL;
    if (strlen(name) >= SL_NAME_MAX) return SL_EINVAL;
    return 0;
}

static int names_find(const sl_names_t *t, const char *name) {
    if (!name || !*name) return SL_ENOENT;
    for (int32_t i = 0; i < t->n; i++)
        if (t->refs[i] > 0 && strcmp(t->name[i], name) == 0) return i;
    return SL_ENOENT;
}

/* The lowest free slot below n (a released name's), or n itself, which it
 * makes room for. */
static int32_t names_free_slot(sl_names_t *t) {
    int32_t i = 0;
    while (i < t->n && t->refs[i] > 0) i++;
    if (i < t->n) return i;
    if (t->n == t->cap) {
        int32_t ncap = t->cap ? t->cap * 2 : 8;
        if (ncap > t->max) ncap = t->max;
        t->name = sl_xrealloc(t->name, (size_t)ncap * sizeof *t->name);
        t->refs = sl_xrealloc(t->refs, (size_t)ncap * sizeof *t->refs);
        t->held = sl_xrealloc(t->held, (size_t)ncap * sizeof *t->held);
        memset(t->refs + t->cap, 0, (size_t)(ncap - t->cap) * sizeof *t->refs);
        memset(t->held + t->cap, 0, (size_t)(ncap - t->cap) * sizeof *t->held);
        t->cap = ncap;
    }
    t->n++;
    return i;
}

/* Takes one reference to name, a job's (job) or a node's, creating the
 * name if needed: see the contract of the interns in cluster.h. */
static int names_take(sl_names_t *t, const char *name, bool job, bool past_share) {
    int rc = name_check(name);
    if (rc) return rc;
    int id = names_find(t, name);
    if (id >= 0) {
        t->refs[id]++;
        if (!job && t->held[id]++ == 0) t->job_only--; /* a node has it now */
        return id;
    }
    if (t->used >= t->max) return SL_ERANGE;
    if (job && !past_share && t->job_only >= t->job_max) return SL_ENOSPC;
    id = names_free_slot(t);
    strcpy(t->name[id], name);
    t->refs[id] = 1;
    t->held[id] = job ? 0 : 1;
    t->used++;
    t->job_only += job;
    return id;
}

/* Drops one reference of the kind taken (job or not); keep is how many
 * node references the slot keeps for good (pool "default": 1). */
static int names_drop(sl_names_t *t, int32_t id, bool job, int32_t keep) {
    if (id < 0 || id >= t->n || t->refs[id] <= 0) return SL_EINVAL;
    if (job ? t->refs[id] - t->held[id] <= 0 : t->held[id] <= keep) return SL_EINVAL;
    t->refs[id]--;
    if (!job && --t->held[id] == 0 && t->refs[id] > 0) t->job_only++; /* jobs alone hold it */
    if (t->refs[id] == 0) {
        t->name[id][0] = '\0';
        t->used--;
        t->job_only -= job;
    }
    return 0;
}

static const char *names_name(const sl_names_t *t, int32_t id) {
    return (id >= 0 && id < t->n && t->refs[id] > 0) ? t->name[id] : NULL;
}

/* For sl_cluster_check: the counts agree with the slots. */
static int names_check(const sl_names_t *t) {
    int32_t used = 0, job_only = 0;
    for (int32_t i = 0; i < t->n; i++) {
        if (t->refs[i] < 0 || t->held[i] < 0 || t->held[i] > t->refs[i]) return SL_ESTATE;
        if ((t->refs[i] == 0) != (t->name[i][0] == '\0')) return SL_ESTATE;
        used += t->refs[i] > 0;
        job_only += t->refs[i] > 0 && t->held[i] == 0;
    }
    if (used != t->used || job_only != t->job_only || used > t->max) return SL_ESTATE;
    return 0;
}

int sl_cluster_pool_find(const sl_cluster_t *cl, const char *name) {
    return names_find(&cl->pools, name);
}

int sl_cluster_model_find(const sl_cluster_t *cl, const char *name) {
    return names_find(&cl->models, name);
}

int sl_cluster_pool_intern(sl_cluster_t *cl, const char *name) {
    return names_take(&cl->pools, name, false, false);
}

int sl_cluster_model_intern(sl_cluster_t *cl, const char *name) {
    return names_take(&cl->models, name, false, false);
}

int sl_cluster_pool_intern_job(sl_cluster_t *cl, const char *name, bool past_share) {
    return names_take(&cl->pools, name, true, past_share);
}

int sl_cluster_model_intern_job(sl_cluster_t *cl, const char *name, bool past_share) {
    return names_take(&cl->models, name, true, past_share);
}

int sl_cluster_pool_release(sl_cluster_t *cl, int32_t id) {
    /* Pool 0's first reference is the cluster's own: "default" stays. */
    return names_drop(&cl->pools, id, false, id == 0);
}

int sl_cluster_model_release(sl_cluster_t *cl, int32_t id) {
    return names_drop(&cl->models, id, false, 0);
}

int sl_cluster_pool_release_job(sl_cluster_t *cl, int32_t id) {
    return names_drop(&cl->pools, id, true, 0);
}

int sl_cluster_model_release_job(sl_cluster_t *cl, int32_t id) {
    return names_drop(&cl->models, id, true, 0);
}

const char *sl_cluster_pool_name(const sl_cluster_t *cl, int32_t id) {
    return names_name(&cl->pools, id);
}

const char *sl_cluster_model_name(const sl_cluster_t *cl, int32_t id) {
    return names_name(&cl->models, id);
}

size_t sl_cluster_model_count(const sl_cluster_t *cl) {
    return (size_t)cl->models.used;
}

size_t sl_cluster_pool_count(const sl_cluster_t *cl) {
    return (size_t)cl->pools.used;
}

size_t sl_cluster_model_job_only_count(const sl_cluster_t *cl) {
    return (size_t)cl->models.job_only;
}

size_t sl_cluster_pool_job_only_count(const sl_cluster_t *cl) {
    return (size_t)cl->pools.job_only;
}

static bool names_job_only(const sl_names_t *t, int32_t id) {
    return id >= 0 && id < t->n && t->refs[id] > 0 && t->held[id] == 0;
}

bool sl_cluster_model_job_only(const sl_cluster_t *cl, int32_t id) {
    return names_job_only(&cl->models, id);
}

bool sl_cluster_pool_job_only(const sl_cluster_t *cl, int32_t id) {
    return names_job_only(&cl->pools, id);
}

/* ---- create / destroy ---- */

int sl_cluster_create(sl_cluster_t **out) {
    sl_cluster_t *cl = sl_xcalloc(1, sizeof *cl);
    sl_hash_init(&cl->names);
    sl_hash_init(&cl->classes);
    cl->free_slot = NO_SLOT;
    names_init(&cl->pools, SL_MAX_POOLS, SL_MAX_JOB_POOLS);
    names_init(&cl->models, SL_MAX_MODELS, SL_MAX_JOB_MODELS);
    /* The cluster's own reference: "default" always exists, with id 0. */
    names_take(&cl->pools, "default", false, false);
    sl__ltab_init(&cl->ltab);
    *out = cl;
    return 0;
}

void sl_cluster_destroy(sl_cluster_t *cl) {
    if (!cl) return;
    for (uint32_t i = 0; i < cl->nnodes; i++) {
        sl_free(cl->nodes[i].labels);
        sl_free(cl->nodes[i].taints);
    }
    sl__ltab_fini(&cl->ltab);
    for (uint32_t i = 0; i < cl->nslots; i++) {
        sl_free(cl->slots[i].members);
        sl_heap_fini(&cl->slots[i].heap);
    }
    sl_free(cl->slots);
    sl_free(cl->order);
    sl_free(cl->sum);
    sl_free(cl->ids);
    sl_hash_fini(&cl->classes);
    sl_free(cl->nodes);
    sl_free(cl->node_class);
    sl_free(cl->node_pos);
    sl_free(cl->node_hpos);
    sl_free(cl->node_kinds);
    sl_free(cl->node_fence);
    sl_hash_fini(&cl->names);
    names_fini(&cl->pools);
    names_fini(&cl->models);
    sl_free(cl);
}

/* ---- nodes ---- */

const sl_node_t *sl_cluster_find_node(const sl_cluster_t *cl, const char *name) {
    if (!name) return NULL;
    size_t it = 0;
    for (void *v; (v = sl_hash_find_next(&cl->names, sl_hash_str(name), &it));) {
        const sl_node_t *n = &cl->nodes[(uint32_t)(uintptr_t)v - 1];
        if (strcmp(n->name, name) == 0) return n;
    }
    return NULL;
}

int sl_cluster_add_node(sl_cluster_t *cl, const sl_node_spec_t *spec, uint32_t *id_out,
                        char *err, size_t errlen) {
    if (!spec || !spec->name || !*spec->name) {
        seterr(err, errlen, "node name is empty");
        return SL_EINVAL;
    }
    const char *nm = spec->name;
    if (strlen(nm) >= SL_NAME_MAX) {
        seterr(err, errlen, "node name \"%.40s...\" is longer than 63 bytes", nm);
        return SL_EINVAL;
    }
    if (spec->cpu_milli < 0) {
        seterr(err, errlen, "node \"%s\": cpu_milli is negative", nm);
        return SL_EINVAL;
    }
    if (spec->mem_bytes < 0) {
        seterr(err, errlen, "node \"%s\": mem_bytes is negative", nm);
        return SL_EINVAL;
    }
    if (spec->gpus < 0 || spec->gpus > SL_MAX_GPUS_PER_NODE) {
        seterr(err, errlen, "node \"%s\": gpus must be 0..16", nm);
        return SL_EINVAL;
    }
    if (spec->gpu_mem_bytes < 0) {
        seterr(err, errlen, "node \"%s\": gpu_mem_bytes is negative", nm);
        return SL_EINVAL;
    }
    bool has_model = spec->gpus > 0;
    if (has_model && (!spec->gpu_model || !*spec->gpu_model)) {
        seterr(err, errlen, "node \"%s\": gpu_model is required when gpus > 0", nm);
        return SL_EINVAL;
    }
    if (has_model && strlen(spec->gpu_model) >= SL_NAME_MAX) {
        seterr(err, errlen, "node \"%s\": gpu_model is longer than 63 bytes", nm);
        return SL_EINVAL;
    }
    const char *pool = (spec->pool && *spec->pool) ? spec->pool : "default";
    if (strlen(pool) >= SL_NAME_MAX) {
        seterr(err, errlen, "node \"%s\": pool name is longer than 63 bytes", nm);
        return SL_EINVAL;
    }
    if (sl_cluster_find_node(cl, nm)) {
        seterr(err, errlen, "node \"%s\" already exists", nm);
        return SL_EEXIST;
    }
    /* Check both interns can succeed before doing either (nothing changes on failure). */
    if (sl_cluster_pool_find(cl, pool) < 0 && cl->pools.used >= cl->pools.max) {
        seterr(err, errlen, "node \"%s\": too many pools", nm);
        return SL_ERANGE;
    }
    if (has_model && sl_cluster_model_find(cl, spec->gpu_model) < 0 &&
        cl->models.used >= cl->models.max) {
        seterr(err, errlen, "node \"%s\": too many GPU models", nm);
        return SL_ERANGE;
    }
    if (cl->nnodes == UINT32_MAX - 1) {
        seterr(err, errlen, "node \"%s\": too many nodes", nm);
        return SL_ERANGE;
    }

    /* Its label set, shared with the nodes declared alike; only taints can
     * be refused (checked last, so a set is interned only for a node that
     * is added). */
    const struct sl_lset *lset;
    char lerr[200];
    if (sl__ltab_lset(&cl->ltab, spec->labels, spec->taints, &lset, lerr, sizeof lerr) < 0) {
        seterr(err, errlen, "node \"%s\": %s", nm, lerr);
        return SL_EINVAL;
    }

    /* The node's references to its pool and model, held for good: node
     * references, so a name that only jobs held stops counting toward the
     * job share. */
    int32_t pool_id = sl_cluster_pool_intern(cl, pool);
    int32_t model_id = has_model ? sl_cluster_model_intern(cl, spec->gpu_model) : -1;

    if (cl->nnodes == cl->node_cap) {
        uint32_t ncap = cl->node_cap ? cl->node_cap * 2 : 64;
        cl->nodes = sl_xrealloc(cl->nodes, (size_t)ncap * sizeof *cl->nodes);
        cl->node_class = sl_xrealloc(cl->node_class, (size_t)ncap * sizeof *cl->node_class);
        cl->node_pos = sl_xrealloc(cl->node_pos, (size_t)ncap * sizeof *cl->node_pos);
        cl->node_hpos = sl_xrealloc(cl->node_hpos, (size_t)ncap * sizeof *cl->node_hpos);
        cl->node_kinds = sl_xrealloc(cl->node_kinds, (size_t)ncap * sizeof *cl->node_kinds);
        cl->node_fence = sl_xrealloc(cl->node_fence, (size_t)ncap * sizeof *cl->node_fence);
        cl->node_cap = ncap;
    }

    uint32_t id = cl->nnodes++;
    sl_node_t *n = &cl->nodes[id];
    memset(n, 0, sizeof *n);
    n->id = id;
    strcpy(n->name, nm);
    n->pool = pool_id;
    n->model = model_id;
    n->state = SL_NODE_UP;
    n->ngpus = spec->gpus;
    n->cpu_total = n->cpu_free = spec->cpu_milli;
    n->mem_total = n->mem_free = spec->mem_bytes;
    n->gpu_mem_total = spec->gpu_mem_bytes;
    for (int g = 0; g < n->ngpus; g++) {
        n->gpu_free[g] = SL_GPU_MILLI;
        n->gpu_mem_free[g] = spec->gpu_mem_bytes;
    }
    n->labels = sl_xstrdup(spec->labels);
    n->taints = sl_xstrdup(spec->taints);
    n->lset = lset;
    memset(cl->node_kinds[id], 0, sizeof cl->node_kinds[id]);
    memset(&cl->node_fence[id], 0, sizeof cl->node_fence[id]);
    const char *tp;
    size_t tlen;
    if (sl_topo_path(n->labels, &tp, &tlen)) cl->ntopo++;
    sl_hash_add(&cl->names, sl_hash_str(nm), slot_val(id));
    cl->node_class[id] = -1;
    sl__index_insert(cl, id);
    cl->cap_total = sl_res_add(cl->cap_total, node_total(n));
    cl->cap_free = sl_res_add(cl->cap_free, node_free(n));
    if (id_out) *id_out = id;
    return 0;
}

size_t sl_cluster_topo_count(const sl_cluster_t *cl) {
    return cl->ntopo;
}

size_t sl_cluster_node_count(const sl_cluster_t *cl) {
    return cl->nnodes;
}

const sl_node_t *sl_cluster_node(const sl_cluster_t *cl, uint32_t id) {
    return id < cl->nnodes ? &cl->nodes[id] : NULL;
}

int sl_cluster_set_state(sl_cluster_t *cl, uint32_t id, sl_node_state_t st) {
    if (id >= cl->nnodes) return SL_ENOENT;
    if (st != SL_NODE_UP && st != SL_NODE_DRAINING && st != SL_NODE_DOWN) return SL_EINVAL;
    sl_node_t *n = &cl->nodes[id];
    sl_node_state_t old = n->state;
    if (old == st) return 0;
    if (old != SL_NODE_DOWN) {
        cl->cap_total = sl_res_sub(cl->cap_total, node_total(n));
        cl->cap_free = sl_res_sub(cl->cap_free, node_free(n));
    }
    if (old == SL_NODE_UP) sl__index_remove(cl, id);
    n->state = st;
    if (st == SL_NODE_UP) sl__index_insert(cl, id);
    if (st != SL_NODE_DOWN) {
        cl->cap_total = sl_res_add(cl->cap_total, node_total(n));
        cl->cap_free = sl_res_add(cl->cap_free, node_free(n));
    }
    return 0;
}

/* ---- fitting ---- */

static bool req_wants_gpu(const sl_task_req_t *req) {
    return req->gpus > 0 || req->gpu_milli > 0;
}

/* Pool, model and state checks shared by fits and fit_count. */
static bool node_eligible(const sl_node_t *n, const sl_task_req_t *req) {
    if (n->state != SL_NODE_UP || (n->kinds & SL_KIND_EXCL)) return false;
    if (req->pool != -1 && req->pool != n->pool) return false;
    if (req->model_mask != 0) {
        if (n->model < 0 || n->model >= SL_MAX_MODELS) return false;
        if (!(req->model_mask & (UINT64_C(1) << n->model))) return false;
    }
    if (req_wants_gpu(req) && n->ngpus == 0) return false;
    return sl__cons_admits(req->cons, n->lset);
}

static bool share_fits_gpu(const sl_node_t *n, int g, const sl_task_req_t *req) {
    return n->gpu_free[g] >= req->gpu_milli && n->gpu_mem_free[g] >= req->gpu_mem_bytes;
}

bool sl_node_fits(const sl_node_t *node, const sl_task_req_t *req) {
    if (!node_eligible(node, req)) return false;
    if (node->cpu_free < req->cpu_milli || node->mem_free < req->mem_bytes) return false;
    if (req->gpus > 0) {
        int32_t c = 0;
        for (int g = 0; g < node->ngpus; g++) c += gpu_full_free(node, g);
        return c >= req->gpus;
    }
    if (req->gpu_milli > 0) {
        for (int g = 0; g < node->ngpus; g++)
            if (share_fits_gpu(node, g, req)) return true;
        return false;
    }
    return true;
}

static int64_t cap_div(int64_t have, int64_t need, int64_t cur) {
    if (need <= 0) return cur;
    int64_t q = have / need;
    return q < cur ? q : cur;
}

int32_t sl_node_fit_count(const sl_node_t *node, const sl_task_req_t *req, int32_t limit) {
    if (limit <= 0 || !node_eligible(node, req)) return 0;
    int64_t n = limit;
    n = cap_div(node->cpu_free, req->cpu_milli, n);
    n = cap_div(node->mem_free, req->mem_bytes, n);
    if (n <= 0) return 0;
    if (req->gpus > 0) {
        n = cap_div(node_full_free(node), req->gpus, n);
    } else if (req->gpu_milli > 0) {
        /* Shares pack: each GPU holds as many as its compute and memory allow. */
        int64_t s = 0;
        for (int g = 0; g < node->ngpus && s < n; g++) {
            int64_t k = node->gpu_free[g] / req->gpu_milli;
            if (req->gpu_mem_bytes > 0) {
                int64_t km = node->gpu_mem_free[g] / req->gpu_mem_bytes;
                if (km < k) k = km;
            }
            s += k;
        }
        if (s < n) n = s;
    }
    return n < 0 ? 0 : (int32_t)n;
}

int32_t sl_node_empty_fit_count(const sl_node_t *node, const sl_task_req_t *req, int32_t limit) {
    if (limit <= 0) return 0;
    if (req->pool != -1 && req->pool != node->pool) return 0;
    if (req->model_mask != 0 && (node->model < 0 || node->model >= SL_MAX_MODELS ||
                                 !(req->model_mask & (UINT64_C(1) << node->model))))
        return 0;
    if (req_wants_gpu(req) && node->ngpus == 0) return 0;
    if (!sl__cons_admits(req->cons, node->lset)) return 0;
    int64_t n = limit;
    n = cap_div(node->cpu_total, req->cpu_milli, n);
    n = cap_div(node->mem_total, req->mem_bytes, n);
    if (req->gpus > 0) {
        n = cap_div(node->ngpus, req->gpus, n);
    } else if (req->gpu_milli > 0) {
        int64_t k = SL_GPU_MILLI / req->gpu_milli;
        if (req->gpu_mem_bytes > 0) k = cap_div(node->gpu_mem_total, req->gpu_mem_bytes, k);
        n = cap_div(k * node->ngpus, 1, n);
    }
    return n < 0 ? 0 : (int32_t)n;
}

int sl_node_choose_gpus(const sl_node_t *node, const sl_task_req_t *req, sl_place_t *pl) {
    if (!sl_node_fits(node, req)) return SL_NOFIT;
    uint32_t mask = 0;
    int32_t milli = 0;
    int64_t mem = 0;
    if (req->gpus > 0) {
        int32_t need = req->gpus;
        for (int g = 0; g < node->ngpus && need > 0; g++) {
            if (gpu_full_free(node, g)) {
                mask |= 1u << g;
                need--;
            }
        }
        if (need > 0) return SL_NOFIT;
        milli = SL_GPU_MILLI;
        mem = node->gpu_mem_total;
    } else if (req->gpu_milli > 0) {
        int best = -1;
        for (int g = 0; g < node->ngpus; g++) {
            if (!share_fits_gpu(node, g, req)) continue;
            if (best < 0 || node->gpu_free[g] < node->gpu_free[best]) best = g;
        }
        if (best < 0) return SL_NOFIT;
        mask = 1u << best;
        milli = req->gpu_milli;
        mem = req->gpu_mem_bytes;
    }
    pl->node = node->id;
    pl->gpu_mask = mask;
    pl->gpu_milli = milli;
    pl->gpu_mem_bytes = mem;
    return SL_FIT;
}

/* ---- alloc / release ---- */

static int popcount32(uint32_t x) {
    return __builtin_popcount(x);
}

/* Validates req against pl and the node's shape; 0 or SL_EINVAL/SL_ENOENT. */
static int check_place(const sl_cluster_t *cl, const sl_task_req_t *req, const sl_place_t *pl) {
    if (!req || !pl) return SL_EINVAL;
    if (pl->node >= cl->nnodes) return SL_ENOENT;
    const sl_node_t *n = &cl->nodes[pl->node];
    if (req->cpu_milli < 0 || req->mem_bytes < 0 || req->gpus < 0 || req->gpu_milli < 0 ||
        req->gpu_mem_bytes < 0)
        return SL_EINVAL;
    if (req->gpus > SL_MAX_GPUS_PER_NODE || req->gpu_milli >= SL_GPU_MILLI) return SL_EINVAL;
    if (req->gpus > 0 && (req->gpu_milli != 0 || req->gpu_mem_bytes != 0)) return SL_EINVAL;
    if (req->gpu_milli == 0 && req->gpu_mem_bytes != 0) return SL_EINVAL;
    if ((pl->gpu_mask >> n->ngpus) != 0) return SL_EINVAL; /* ngpus <= 16 < 32 */
    if (req->gpus > 0) {
        if (popcount32(pl->gpu_mask) != req->gpus || pl->gpu_milli != SL_GPU_MILLI) return SL_EINVAL;
    } else if (req->gpu_milli > 0) {
        if (popcount32(pl->gpu_mask) != 1 || pl->gpu_milli != req->gpu_milli) return SL_EINVAL;
    } else {
        if (pl->gpu_mask != 0) return SL_EINVAL;
    }
    return 0;
}

/* Counts n's free part into the cluster's free capacity (sign > 0) or
 * out of it; fenced GPUs, hidden, count as taken. */
static void node_account(sl_cluster_t *cl, const sl_node_t *n, int sign) {
    if (n->state == SL_NODE_DOWN) return;
    sl_res_t f = node_free(n);
    cl->cap_free = sign > 0 ? sl_res_add(cl->cap_free, f) : sl_res_sub(cl->cap_free, f);
}

/* Takes req at pl on n, whose fenced GPUs show their real free state
 * (cluster_fence.c); the caller does the accounting and the index. */
static int alloc_on(sl_cluster_t *cl, sl_node_t *n, const sl_task_req_t *req, const sl_place_t *pl) {
    if (n->cpu_free < req->cpu_milli || n->mem_free < req->mem_bytes) return SL_ENOSPC;
    for (int g = 0; g < n->ngpus; g++) {
        if (!(pl->gpu_mask & (1u << g))) continue;
        if (req->gpus > 0) {
            if (!gpu_full_free(n, g)) return SL_ENOSPC;
        } else if (!share_fits_gpu(n, g, req)) {
            return SL_ENOSPC;
        }
    }
    n->cpu_free -= req->cpu_milli;
    n->mem_free -= req->mem_bytes;
    for (int g = 0; g < n->ngpus; g++) {
        if (!(pl->gpu_mask & (1u << g))) continue;
        if (req->gpus > 0) {
            n->gpu_free[g] = 0;
            n->gpu_mem_free[g] = 0;
        } else {
            n->gpu_free[g] -= req->gpu_milli;
            n->gpu_mem_free[g] -= req->gpu_mem_bytes;
        }
    }
    uint32_t kb = sl_task_kind_bit(req);
    if (kb) {
        cl->node_kinds[pl->node][__builtin_ctz(kb)]++;
        n->kinds |= kb;
    }
    if (req->exclusive) {
        cl->node_kinds[pl->node][SL_KINDS]++;
        n->kinds |= SL_KIND_EXCL;
    }
    return 0;
}

/* Gives back req at pl on n, as alloc_on. */
static int release_on(sl_cluster_t *cl, sl_node_t *n, const sl_task_req_t *req, const sl_place_t *pl) {
    if (req->cpu_milli > n->cpu_total - n->cpu_free || req->mem_bytes > n->mem_total - n->mem_free)
        return SL_EINVAL;
    for (int g = 0; g < n->ngpus; g++) {
        if (!(pl->gpu_mask & (1u << g))) continue;
        if (req->gpus > 0) {
            if (n->gpu_free[g] != 0 || n->gpu_mem_free[g] != 0) return SL_EINVAL;
        } else if (req->gpu_milli > SL_GPU_MILLI - n->gpu_free[g] ||
                   req->gpu_mem_bytes > n->gpu_mem_total - n->gpu_mem_free[g]) {
            return SL_EINVAL;
        }
    }
    uint32_t kb = sl_task_kind_bit(req);
    uint32_t *count = kb ? &cl->node_kinds[pl->node][__builtin_ctz(kb)] : NULL;
    if (count && *count == 0) return SL_EINVAL;
    uint32_t *excl = &cl->node_kinds[pl->node][SL_KINDS];
    if (req->exclusive && *excl == 0) return SL_EINVAL;
    sl__node_give_back(n, req, pl);
    if (count && --*count == 0) n->kinds &= ~kb;
    if (req->exclusive && --*excl > 0) n->kinds |= SL_KIND_EXCL;
    return 0;
}

/* alloc_on or release_on with the node's fenced GPUs unhidden for the
 * call, its capacity accounted around it and its class updated after. */
static int change(sl_cluster_t *cl, const sl_task_req_t *req, const sl_place_t *pl, bool take) {
    int rc = check_place(cl, req, pl);
    if (rc) return rc;
    sl_node_t *n = &cl->nodes[pl->node];
    node_account(cl, n, -1);
    sl__fence_unhide(cl, pl->node);
    rc = take ? alloc_on(cl, n, req, pl) : release_on(cl, n, req, pl);
    sl__fence_hide(cl, pl->node);
    node_account(cl, n, +1);
    if (rc == 0) sl__index_update(cl, pl->node);
    return rc;
}

int sl_cluster_alloc(sl_cluster_t *cl, const sl_task_req_t *req, const sl_place_t *pl) {
    return change(cl, req, pl, true);
}

int sl_cluster_release(sl_cluster_t *cl, const sl_task_req_t *req, const sl_place_t *pl) {
    return change(cl, req, pl, false);
}

void sl_cluster_capacity(const sl_cluster_t *cl, sl_res_t *total, sl_res_t *free_) {
    if (total) *total = cl->cap_total;
    if (free_) *free_ = cl->cap_free;
}

int32_t sl_cluster_largest_gpu_block(const sl_cluster_t *cl, int32_t pool, uint64_t model_mask) {
    /* From the bucket with the most fully free GPUs down: the first class
     * of the pool and model answers (bucket 9 + f holds exactly f). */
    for (int b = SL__NBUCKETS - 1; b >= SL__SHARE_BUCKETS; b--) {
        for (uint32_t i = cl->bstart[b]; i < cl->bstart[b + 1]; i++) {
            const sl__class_t *c = &cl->sum[i];
            if (pool != -1 && c->pool != pool) continue;
            if (!sl__class_model_ok(c, model_mask)) continue;
            return c->full_free;
        }
    }
    return 0;
}

int sl_cluster_check(const sl_cluster_t *cl) {
    uint64_t members = 0;
    sl_res_t tot = {0, 0, 0}, fr = {0, 0, 0};
    for (uint32_t id = 0; id < cl->nnodes; id++) {
        const sl_node_t *n = &cl->nodes[id];
        if (n->id != id) return SL_ESTATE;
        if (n->cpu_free < 0 || n->cpu_free > n->cpu_total) return SL_ESTATE;
        if (n->mem_free < 0 || n->mem_free > n->mem_total) return SL_ESTATE;
        for (int g = 0; g < n->ngpus; g++) {
            if (n->gpu_free[g] < 0 || n->gpu_free[g] > SL_GPU_MILLI) return SL_ESTATE;
            if (n->gpu_mem_free[g] < 0 || n->gpu_mem_free[g] > n->gpu_mem_total) return SL_ESTATE;
        }
        if (sl_cluster_find_node(cl, n->name) != n) return SL_ESTATE;
        uint32_t kinds = 0;
        for (int k = 0; k <= SL_KINDS; k++)
            if (cl->node_kinds[id][k] > 0) kinds |= 1u << k;
        if (kinds != n->kinds) return SL_ESTATE;
        int32_t ci = cl->node_class[id];
        if (n->state == SL_NODE_UP) {
            if (ci < 0 || (uint32_t)ci >= cl->nslots) return SL_ESTATE;
            const cls_t *c = &cl->slots[ci];
            if (c->dense >= cl->nclasses || cl->order[c->dense] != (uint32_t)ci) return SL_ESTATE;
            if (cl->node_pos[id] >= c->n || c->members[cl->node_pos[id]] != id) return SL_ESTATE;
            if (sl__index_check_node(cl, n, c) != 0) return SL_ESTATE;
            members++;
        } else if (ci != -1) {
            return SL_ESTATE;
        }
        if (n->state != SL_NODE_DOWN) {
            tot = sl_res_add(tot, node_total(n));
            fr = sl_res_add(fr, node_free(n));
        }
    }
    if (memcmp(&tot, &cl->cap_total, sizeof tot) != 0 || memcmp(&fr, &cl->cap_free, sizeof fr) != 0)
        return SL_ESTATE;
    if (names_check(&cl->pools) != 0 || names_check(&cl->models) != 0) return SL_ESTATE;
    return sl__index_check(cl, members);
}

/* ---- constraints (constraint.h): the cluster's table, in constraint.c ---- */

int sl_cluster_constraint_intern(sl_cluster_t *cl, const sl_constraint_spec_t *spec,
                                 const sl_constraint_t **out, char *err, size_t errlen) {
    return sl__ltab_cons_intern(&cl->ltab, spec, out, err, errlen);
}

void sl_cluster_constraint_release(sl_cluster_t *cl, const sl_constraint_t *c) {
    sl__ltab_cons_release(&cl->ltab, c);
}

size_t sl_cluster_constraint_count(const sl_cluster_t *cl) {
    return sl_hash_count(&cl->ltab.cons);
}

const struct sl_lset *sl__cluster_lset(const sl_cluster_t *cl, uint32_t lset) {
    return lset < cl->ltab.nsets ? cl->ltab.sets[lset] : NULL;
}
