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
 * The index. Every node that is up belongs to exactly one equivalence class:
 * the nodes whose whole placement-relevant state is identical, namely pool,
 * model, GPU count, CPU/memory/GPU-memory totals, free CPU and memory, and
 * the SORTED multiset of (free compute, free memory) pairs of its GPUs. The
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

/* ---- create / destroy ---- */

int sl_cluster_create(sl_cluster_t **out) {
    sl_cluster_t *cl = sl_xcalloc(1, sizeof *cl);
    sl_hash_init(&cl->names);
    sl_hash_init(&cl->classes);
    cl->free_slot = NO_SLOT;
    cl->pool_cap = 8;
    cl->pools = sl_xmalloc((size_t)cl->pool_cap * sizeof *cl->pools);
    cl->pool_refs = sl_xcalloc((size_t)cl->pool_cap, sizeof *cl->pool_refs);
    strcpy(cl->pools[0], "default");
    cl->pool_refs[0] = 1; /* the cluster's own: "default" always exists */
    cl->npools = 1;
    cl->pools_used = 1;
    *out = cl;
    return 0;
}

void sl_cluster_destroy(sl_cluster_t *cl) {
    if (!cl) return;
    for (uint32_t i = 0; i < cl->nnodes; i++) sl_free(cl->nodes[i].labels);
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
    sl_hash_fini(&cl->names);
    sl_free(cl->pools);
    sl_free(cl->pool_refs);
    sl_free(cl);
}

/* ---- pools and models ---- */

static int name_check(const char *name) {
    if (!name || !*name) return SL_EINVAL;
    if (strlen(name) >= SL_NAME_MAX) return SL_EINVAL;
    return 0;
}

int sl_cluster_pool_find(const sl_cluster_t *cl, const char *name) {
    if (!name || !*name) return SL_ENOENT;
    for (int32_t i = 0; i < cl->npools; i++)
        if (cl->pool_refs[i] > 0 && strcmp(cl->pools[i], name) == 0) return i;
    return SL_ENOENT;
}

int sl_cluster_model_find(const sl_cluster_t *cl, const char *name) {
    if (!name || !*name) return SL_ENOENT;
    for (int32_t i = 0; i < cl->nmodels; i++)
        if (cl->model_refs[i] > 0 && strcmp(cl->models[i], name) == 0) return i;
    return SL_ENOENT;
}

/* The lowest free slot below used (a released name's), or used itself. */
static int32_t free_slot(const int32_t *refs, int32_t used) {
    int32_t i = 0;
    while (i < used && refs[i] > 0) i++;
    return i;
}

int sl_cluster_pool_intern(sl_cluster_t *cl, const char *name) {
    int rc = name_check(name);
    if (rc) return rc;
    int id = sl_cluster_pool_find(cl, name);
    if (id >= 0) {
        cl->pool_refs[id]++;
        return id;
    }
    if (cl->pools_used >= SL_MAX_POOLS) return SL_ERANGE;
    id = free_slot(cl->pool_refs, cl->npools);
    if (id == cl->npools) {
        if (cl->npools == cl->pool_cap) {
            int32_t ncap = cl->pool_cap * 2;
            cl->pools = sl_xrealloc(cl->pools, (size_t)ncap * sizeof *cl->pools);
            cl->pool_refs = sl_xrealloc(cl->pool_refs, (size_t)ncap * sizeof *cl->pool_refs);
            memset(cl->pool_refs + cl->pool_cap, 0,
                   (size_t)(ncap - cl->pool_cap) * sizeof *cl->pool_refs);
            cl->pool_cap = ncap;
        }
        cl->npools++;
    }
    strcpy(cl->pools[id], name);
    cl->pool_refs[id] = 1;
    cl->pools_used++;
    return id;
}

int sl_cluster_model_intern(sl_cluster_t *cl, const char *name) {
    int rc = name_check(name);
    if (rc) return rc;
    int id = sl_cluster_model_find(cl, name);
    if (id >= 0) {
        cl->model_refs[id]++;
        return id;
    }
    if (cl->models_used >= SL_MAX_MODELS) return SL_ERANGE;
    id = free_slot(cl->model_refs, cl->nmodels);
    if (id == cl->nmodels) cl->nmodels++;
    strcpy(cl->models[id], name);
    cl->model_refs[id] = 1;
    cl->models_used++;
    return id;
}

int sl_cluster_pool_release(sl_cluster_t *cl, int32_t id) {
    /* Pool 0's first reference is the cluster's own: "default" stays. */
    if (id < 0 || id >= cl->npools || cl->pool_refs[id] <= (id == 0)) return SL_EINVAL;
    if (--cl->pool_refs[id] == 0) {
        cl->pools[id][0] = '\0';
        cl->pools_used--;
    }
    return 0;
}

int sl_cluster_model_release(sl_cluster_t *cl, int32_t id) {
    if (id < 0 || id >= cl->nmodels || cl->model_refs[id] <= 0) return SL_EINVAL;
    if (--cl->model_refs[id] == 0) {
        cl->models[id][0] = '\0';
        cl->models_used--;
    }
    return 0;
}

const char *sl_cluster_pool_name(const sl_cluster_t *cl, int32_t id) {
    return (id >= 0 && id < cl->npools && cl->pool_refs[id] > 0) ? cl->pools[id] : NULL;
}

const char *sl_cluster_model_name(const sl_cluster_t *cl, int32_t id) {
    return (id >= 0 && id < cl->nmodels && cl->model_refs[id] > 0) ? cl->models[id] : NULL;
}

size_t sl_cluster_model_count(const sl_cluster_t *cl) {
    return (size_t)cl->models_used;
}

size_t sl_cluster_pool_count(const sl_cluster_t *cl) {
    return (size_t)cl->pools_used;
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
    if (sl_cluster_pool_find(cl, pool) < 0 && cl->pools_used >= SL_MAX_POOLS) {
        seterr(err, errlen, "node \"%s\": too many pools", nm);
        return SL_ERANGE;
    }
    if (has_model && sl_cluster_model_find(cl, spec->gpu_model) < 0 &&
        cl->models_used >= SL_MAX_MODELS) {
        seterr(err, errlen, "node \"%s\": too many GPU models", nm);
        return SL_ERANGE;
    }
    if (cl->nnodes == UINT32_MAX - 1) {
        seterr(err, errlen, "node \"%s\": too many nodes", nm);
        return SL_ERANGE;
    }

    /* The node's references to its pool and model, held for good. */
    int32_t pool_id = sl_cluster_pool_intern(cl, pool);
    int32_t model_id = has_model ? sl_cluster_model_intern(cl, spec->gpu_model) : -1;

    if (cl->nnodes == cl->node_cap) {
        uint32_t ncap = cl->node_cap ? cl->node_cap * 2 : 64;
        cl->nodes = sl_xrealloc(cl->nodes, (size_t)ncap * sizeof *cl->nodes);
        cl->node_class = sl_xrealloc(cl->node_class, (size_t)ncap * sizeof *cl->node_class);
        cl->node_pos = sl_xrealloc(cl->node_pos, (size_t)ncap * sizeof *cl->node_pos);
        cl->node_hpos = sl_xrealloc(cl->node_hpos, (size_t)ncap * sizeof *cl->node_hpos);
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
    sl_hash_add(&cl->names, sl_hash_str(nm), slot_val(id));
    cl->node_class[id] = -1;
    sl__index_insert(cl, id);
    cl->cap_total = sl_res_add(cl->cap_total, node_total(n));
    cl->cap_free = sl_res_add(cl->cap_free, node_free(n));
    if (id_out) *id_out = id;
    return 0;
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
    if (n->state != SL_NODE_UP) return false;
    if (req->pool != -1 && req->pool != n->pool) return false;
    if (req->model_mask != 0) {
        if (n->model < 0 || n->model >= SL_MAX_MODELS) return false;
        if (!(req->model_mask & (UINT64_C(1) << n->model))) return false;
    }
    if (req_wants_gpu(req) && n->ngpus == 0) return false;
    return true;
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

static void node_account(sl_cluster_t *cl, const sl_node_t *n, int sign) {
    if (n->state == SL_NODE_DOWN) return;
    sl_res_t f = node_free(n);
    cl->cap_free = sign > 0 ? sl_res_add(cl->cap_free, f) : sl_res_sub(cl->cap_free, f);
}

int sl_cluster_alloc(sl_cluster_t *cl, const sl_task_req_t *req, const sl_place_t *pl) {
    int rc = check_place(cl, req, pl);
    if (rc) return rc;
    sl_node_t *n = &cl->nodes[pl->node];
    if (n->cpu_free < req->cpu_milli || n->mem_free < req->mem_bytes) return SL_ENOSPC;
    for (int g = 0; g < n->ngpus; g++) {
        if (!(pl->gpu_mask & (1u << g))) continue;
        if (req->gpus > 0) {
            if (!gpu_full_free(n, g)) return SL_ENOSPC;
        } else if (!share_fits_gpu(n, g, req)) {
            return SL_ENOSPC;
        }
    }
    node_account(cl, n, -1);
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
    node_account(cl, n, +1);
    sl__index_update(cl, pl->node);
    return 0;
}

int sl_cluster_release(sl_cluster_t *cl, const sl_task_req_t *req, const sl_place_t *pl) {
    int rc = check_place(cl, req, pl);
    if (rc) return rc;
    sl_node_t *n = &cl->nodes[pl->node];
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
    node_account(cl, n, -1);
    sl__node_give_back(n, req, pl);
    node_account(cl, n, +1);
    sl__index_update(cl, pl->node);
    return 0;
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
    return sl__index_check(cl, members);
}

