/*
 * cluster.c - nodes, pools, GPU models and the free-capacity index.
 *
 * Storage. Nodes live in one dense array indexed by id (ids are handed out in
 * order and never reused: the cluster has no node removal). Names map to ids
 * through the core's hash table (sluice/hash.h) keyed by the name's FNV-1a
 * hash, each candidate compared by name. Pools
 * and GPU models are interned into small arrays; they number in the tens, so
 * a linear lookup is cheaper than a hash.
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
#include <stdlib.h> /* qsort */
#include <string.h>

#include "sluice/alloc.h"
#include "sluice/cluster.h"
#include "sluice/error.h"
#include "sluice/hash.h"
#include "sluice/heap.h"

#include "cluster_index.h"

#include <stdio.h> /* vsnprintf only: formats error messages, no I/O */

#define KEY_HDR 7
#define KEY_MAX (KEY_HDR + 2 * SL_MAX_GPUS_PER_NODE)

typedef struct key {
    uint32_t len;           /* words used */
    uint64_t w[KEY_MAX];
} state_key_t;

typedef struct cls {
    uint64_t hash;
    uint32_t *members;      /* node ids; members[0] is the representative */
    sl_heap_t heap;         /* the members as rank << 32 | id (uint64_t), a min-heap */
    uint32_t n, cap;        /* of members */
    uint32_t dense;         /* position in cl->order while in use */
    uint32_t next_free;     /* free-list link while unused */
    int32_t full_free;      /* GPUs with all compute and memory free */
    uint64_t uid;           /* never reused */
    state_key_t key;
} cls_t;

#define NO_SLOT UINT32_MAX

struct sl_cluster {
    sl_node_t *nodes;
    uint32_t nnodes, node_cap;
    int32_t *node_class;    /* class slot of each node, -1 if not up */
    uint32_t *node_pos;     /* position in its class's member array */
    uint32_t *node_hpos;    /* position in its class's heap */
    uint64_t order_key;     /* of the node order the heaps follow */

    sl_hash_t names;        /* sl_hash_str(name) -> node id + 1 */

    char (*pools)[SL_NAME_MAX];
    int32_t npools, pool_cap;
    char models[SL_MAX_MODELS][SL_NAME_MAX];
    int32_t nmodels;

    cls_t *slots;           /* classes, stable while in use; may hold parked buffers */
    uint32_t nslots, slot_cap, free_slot;
    uint32_t *order;        /* dense: class i is slots[order[i]] */
    sl__class_t *sum;       /* dense: summary of class i */
    sl__class_id_t *ids;    /* dense: identity of class i */
    uint32_t nclasses, order_cap;
    uint32_t bstart[SL__NBUCKETS + 1]; /* bucket b is [bstart[b], bstart[b + 1]) */
    uint64_t next_uid;
    sl_hash_t classes;      /* key hash -> slot + 1 */

    sl_res_t cap_total, cap_free; /* over up and draining nodes */
};

/* ---- small helpers ---- */

__attribute__((format(printf, 3, 4)))
static void seterr(char *err, size_t errlen, const char *fmt, ...) {
    if (!err || errlen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* wyhash-style folded 128-bit multiply: two key words per multiplication. */
static inline uint64_t mum(uint64_t a, uint64_t b) {
    unsigned __int128 r = (unsigned __int128)a * b;
    return (uint64_t)r ^ (uint64_t)(r >> 64);
}

static uint64_t hash_key(const state_key_t *k) {
    const uint64_t p0 = 0xa0761d6478bd642fULL, p1 = 0xe7037ed1a0b428dbULL;
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ k->len;
    uint32_t i = 0;
    for (; i + 1 < k->len; i += 2) h = mum(k->w[i] ^ h ^ p0, k->w[i + 1] ^ p1);
    if (i < k->len) h = mum(k->w[i] ^ h ^ p0, p1 ^ k->len);
    return sl_mix64(h);
}

static bool key_eq(const state_key_t *a, const state_key_t *b) {
    return a->len == b->len && memcmp(a->w, b->w, a->len * sizeof a->w[0]) == 0;
}

static bool gpu_full_free(const sl_node_t *n, int g) {
    return n->gpu_free[g] == SL_GPU_MILLI && n->gpu_mem_free[g] == n->gpu_mem_total;
}

static void node_key(const sl_node_t *n, state_key_t *k) {
    k->w[0] = (uint64_t)(uint32_t)n->pool | ((uint64_t)(uint32_t)n->model << 32);
    k->w[1] = (uint64_t)(uint32_t)n->ngpus;
    k->w[2] = (uint64_t)n->cpu_total;
    k->w[3] = (uint64_t)n->mem_total;
    k->w[4] = (uint64_t)n->gpu_mem_total;
    k->w[5] = (uint64_t)n->cpu_free;
    k->w[6] = (uint64_t)n->mem_free;
    /* Insertion sort of (free milli, free memory) pairs: <= 16 elements. */
    uint64_t a[SL_MAX_GPUS_PER_NODE], b[SL_MAX_GPUS_PER_NODE];
    int g = n->ngpus;
    for (int i = 0; i < g; i++) {
        uint64_t x = (uint64_t)(uint32_t)n->gpu_free[i], y = (uint64_t)n->gpu_mem_free[i];
        int j = i;
        while (j > 0 && (a[j - 1] > x || (a[j - 1] == x && b[j - 1] > y))) {
            a[j] = a[j - 1];
            b[j] = b[j - 1];
            j--;
        }
        a[j] = x;
        b[j] = y;
    }
    for (int i = 0; i < g; i++) {
        k->w[KEY_HDR + 2 * i] = a[i];
        k->w[KEY_HDR + 2 * i + 1] = b[i];
    }
    k->len = KEY_HDR + 2 * (uint32_t)g;
}

static int32_t node_full_free(const sl_node_t *n) {
    int32_t c = 0;
    for (int g = 0; g < n->ngpus; g++) c += gpu_full_free(n, g);
    return c;
}

/* The summary of a node's class (rep = the node itself). */
static void node_summary(const sl_node_t *n, sl__class_t *s) {
    memset(s, 0, sizeof *s);
    s->cpu_free = n->cpu_free;
    s->mem_free = n->mem_free;
    s->rep = n->id;
    s->pool = (int16_t)n->pool;
    s->model = (int8_t)n->model;
    s->ngpus = (uint8_t)n->ngpus;
    int32_t sum = 0, smax = 0;
    for (int g = 0; g < n->ngpus; g++) {
        int32_t f = n->gpu_free[g];
        sum += f;
        if (f > smax) smax = f;
        if (f == 0) s->used |= SL__USED_WHOLE;
        else if (f < SL_GPU_MILLI) s->used |= SL__USED_SHARE;
    }
    s->gpu_free = sum;
    s->share_max = (int16_t)smax;
    s->full_free = (uint8_t)node_full_free(n);
}

static int summary_bucket(const sl__class_t *s) {
    return sl__bucket_of(s->full_free, s->share_max);
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

/* ---- the class table ---- */

/* Table values are slot + 1 (a value must not be NULL). */
static inline void *slot_val(uint32_t slot) {
    return (void *)(uintptr_t)(slot + 1);
}

static uint32_t ctab_find(const sl_cluster_t *cl, const state_key_t *k, uint64_t h) {
    size_t it = 0;
    for (void *v; (v = sl_hash_find_next(&cl->classes, h, &it));) {
        uint32_t slot = (uint32_t)(uintptr_t)v - 1;
        if (key_eq(&cl->slots[slot].key, k)) return slot;
    }
    return NO_SLOT;
}

/* Moves the class at dense position from to position to (a hole). */
static void dense_move(sl_cluster_t *cl, uint32_t from, uint32_t to) {
    cl->order[to] = cl->order[from];
    cl->sum[to] = cl->sum[from];
    cl->ids[to] = cl->ids[from];
    cl->slots[cl->order[to]].dense = to;
}

/* Opens a hole at the end of bucket b (every later bucket rotates by one)
 * and returns its position. The caller fills it. O(buckets). */
static uint32_t dense_open(sl_cluster_t *cl, int b) {
    uint32_t hole = cl->nclasses++;
    for (int k = SL__NBUCKETS - 1; k > b; k--) {
        if (cl->bstart[k] < hole) dense_move(cl, cl->bstart[k], hole); /* hole: old end of k */
        hole = cl->bstart[k];
        cl->bstart[k]++;
    }
    cl->bstart[SL__NBUCKETS] = cl->nclasses;
    return hole;
}

/* Closes the hole at position d of bucket b (the bucket's last class fills
 * it, every later bucket rotates back by one). O(buckets). */
static void dense_close(sl_cluster_t *cl, int b, uint32_t d) {
    uint32_t last = cl->bstart[b + 1] - 1;
    if (last != d) dense_move(cl, last, d);
    uint32_t hole = last;
    for (int k = b + 1; k < SL__NBUCKETS; k++) {
        uint32_t end = cl->bstart[k + 1];
        if (cl->bstart[k] < end) dense_move(cl, end - 1, hole);
        hole = end - 1;
        cl->bstart[k]--;
    }
    cl->nclasses--;
    cl->bstart[SL__NBUCKETS] = cl->nclasses;
}

static uint32_t class_new(sl_cluster_t *cl, const state_key_t *k, uint64_t h, const sl_node_t *n) {
    uint32_t slot = cl->free_slot;
    if (slot != NO_SLOT) {
        cl->free_slot = cl->slots[slot].next_free; /* reuses its parked member buffer */
    } else {
        if (cl->nslots == cl->slot_cap) {
            uint32_t ncap = cl->slot_cap ? cl->slot_cap * 2 : 16;
            cl->slots = sl_xrealloc(cl->slots, (size_t)ncap * sizeof *cl->slots);
            cl->slot_cap = ncap;
        }
        slot = cl->nslots++;
        cl->slots[slot].members = NULL;
        sl_heap_init(&cl->slots[slot].heap);
        cl->slots[slot].cap = 0;
    }
    if (cl->nclasses == cl->order_cap) {
        cl->order_cap = cl->order_cap ? cl->order_cap * 2 : 16;
        cl->order = sl_xrealloc(cl->order, (size_t)cl->order_cap * sizeof *cl->order);
        cl->sum = sl_xrealloc(cl->sum, (size_t)cl->order_cap * sizeof *cl->sum);
        cl->ids = sl_xrealloc(cl->ids, (size_t)cl->order_cap * sizeof *cl->ids);
    }
    cls_t *c = &cl->slots[slot];
    c->hash = h;
    c->n = 0;
    c->next_free = NO_SLOT;
    c->full_free = node_full_free(n);
    c->uid = cl->next_uid++;
    c->key.len = k->len;
    memcpy(c->key.w, k->w, k->len * sizeof k->w[0]);
    sl__class_t s;
    node_summary(n, &s);
    uint32_t d = dense_open(cl, summary_bucket(&s));
    cl->order[d] = slot;
    cl->sum[d] = s;
    cl->ids[d] = (sl__class_id_t){.uid = c->uid, .hash = h, .size = 0, .slot = slot, .first = n->id};
    c->dense = d;
    sl_hash_add(&cl->classes, h, slot_val(slot));
    return slot;
}

static void class_drop(sl_cluster_t *cl, uint32_t slot) {
    sl_hash_remove(&cl->classes, cl->slots[slot].hash, slot_val(slot));
    uint32_t d = cl->slots[slot].dense;
    dense_close(cl, summary_bucket(&cl->sum[d]), d);
    cl->slots[slot].next_free = cl->free_slot;
    cl->free_slot = slot;
}

/* ---- the node order heaps ---- */

static inline uint64_t order_entry(uint64_t key, uint32_t id) {
    return (uint64_t)sl__node_rank(key, id) << 32 | id;
}

static bool order_less(void *ctx, const void *a, const void *b) {
    return *(const uint64_t *)a < *(const uint64_t *)b;
}

/* Each node remembers its position in its class's heap. */
static void order_moved(void *ctx, const void *e, size_t pos) {
    sl_cluster_t *cl = ctx;
    cl->node_hpos[(uint32_t)*(const uint64_t *)e] = (uint32_t)pos;
}

static const sl_heap_type_t order_heap = {sizeof(uint64_t), order_less, order_moved};

/* The member first in the node order (the class must not be empty). */
static inline uint32_t order_first(const cls_t *c) {
    return (uint32_t)*(const uint64_t *)sl_heap_top(&c->heap);
}

static void index_remove(sl_cluster_t *cl, uint32_t id) {
    int32_t slot = cl->node_class[id];
    if (slot < 0) return;
    cls_t *c = &cl->slots[slot];
    uint32_t pos = cl->node_pos[id], hpos = cl->node_hpos[id];
    uint32_t moved = c->members[--c->n];
    c->members[pos] = moved;
    cl->node_pos[moved] = pos;
    cl->node_class[id] = -1;
    sl_heap_remove(&c->heap, &order_heap, cl, hpos, NULL);
    if (c->n == 0) {
        class_drop(cl, (uint32_t)slot);
        return;
    }
    cl->ids[c->dense].size = c->n;
    cl->ids[c->dense].first = order_first(c);
    if (pos == 0) cl->sum[c->dense].rep = moved; /* same state, new representative */
}

/* Adds up node id, whose current key is k, to its class. */
static void index_insert_key(sl_cluster_t *cl, uint32_t id, const state_key_t *k) {
    uint64_t h = hash_key(k);
    uint32_t slot = ctab_find(cl, k, h);
    if (slot == NO_SLOT) slot = class_new(cl, k, h, &cl->nodes[id]);
    cls_t *c = &cl->slots[slot];
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 4;
        c->members = sl_xrealloc(c->members, (size_t)c->cap * sizeof *c->members);
    }
    cl->node_pos[id] = c->n;
    c->members[c->n] = id;
    c->n++;
    uint64_t e = order_entry(cl->order_key, id);
    sl_heap_push(&c->heap, &order_heap, cl, &e);
    cl->node_class[id] = (int32_t)slot;
    cl->ids[c->dense].size = c->n;
    cl->ids[c->dense].first = order_first(c);
    if (c->n == 1) cl->sum[c->dense].rep = id;
}

static void index_insert(sl_cluster_t *cl, uint32_t id) {
    state_key_t k;
    node_key(&cl->nodes[id], &k);
    index_insert_key(cl, id, &k);
}

/*
 * Re-keys one up node after its free state changed. A node whose key did not
 * change stays where it is, so its position (and a representative) is kept.
 */
static void index_update(sl_cluster_t *cl, uint32_t id) {
    int32_t slot = cl->node_class[id];
    if (slot < 0) return;
    state_key_t k;
    node_key(&cl->nodes[id], &k);
    if (key_eq(&k, &cl->slots[slot].key)) return;
    index_remove(cl, id);
    index_insert_key(cl, id, &k);
}

/* ---- create / destroy ---- */

int sl_cluster_create(sl_cluster_t **out) {
    sl_cluster_t *cl = sl_xcalloc(1, sizeof *cl);
    sl_hash_init(&cl->names);
    sl_hash_init(&cl->classes);
    cl->free_slot = NO_SLOT;
    cl->pool_cap = 8;
    cl->pools = sl_xmalloc((size_t)cl->pool_cap * sizeof *cl->pools);
    strcpy(cl->pools[0], "default");
    cl->npools = 1;
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
    sl_free(cl);
}

/* ---- pools and models ---- */

static int name_check(const char *name) {
    if (!name || !*name) return SL_EINVAL;
    if (strlen(name) >= SL_NAME_MAX) return SL_EINVAL;
    return 0;
}

int sl_cluster_pool_find(const sl_cluster_t *cl, const char *name) {
    if (!name) return SL_ENOENT;
    for (int32_t i = 0; i < cl->npools; i++)
        if (strcmp(cl->pools[i], name) == 0) return i;
    return SL_ENOENT;
}

int sl_cluster_model_find(const sl_cluster_t *cl, const char *name) {
    if (!name) return SL_ENOENT;
    for (int32_t i = 0; i < cl->nmodels; i++)
        if (strcmp(cl->models[i], name) == 0) return i;
    return SL_ENOENT;
}

int sl_cluster_pool_intern(sl_cluster_t *cl, const char *name) {
    int rc = name_check(name);
    if (rc) return rc;
    int id = sl_cluster_pool_find(cl, name);
    if (id >= 0) return id;
    if (cl->npools >= SL_MAX_POOLS) return SL_ERANGE;
    if (cl->npools == cl->pool_cap) {
        cl->pool_cap *= 2;
        cl->pools = sl_xrealloc(cl->pools, (size_t)cl->pool_cap * sizeof *cl->pools);
    }
    strcpy(cl->pools[cl->npools], name);
    return cl->npools++;
}

int sl_cluster_model_intern(sl_cluster_t *cl, const char *name) {
    int rc = name_check(name);
    if (rc) return rc;
    int id = sl_cluster_model_find(cl, name);
    if (id >= 0) return id;
    if (cl->nmodels >= SL_MAX_MODELS) return SL_ERANGE;
    strcpy(cl->models[cl->nmodels], name);
    return cl->nmodels++;
}

const char *sl_cluster_pool_name(const sl_cluster_t *cl, int32_t id) {
    return (id >= 0 && id < cl->npools) ? cl->pools[id] : NULL;
}

const char *sl_cluster_model_name(const sl_cluster_t *cl, int32_t id) {
    return (id >= 0 && id < cl->nmodels) ? cl->models[id] : NULL;
}

size_t sl_cluster_model_count(const sl_cluster_t *cl) {
    return (size_t)cl->nmodels;
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
    if (sl_cluster_pool_find(cl, pool) < 0 && cl->npools >= SL_MAX_POOLS) {
        seterr(err, errlen, "node \"%s\": too many pools", nm);
        return SL_ERANGE;
    }
    if (has_model && sl_cluster_model_find(cl, spec->gpu_model) < 0 && cl->nmodels >= SL_MAX_MODELS) {
        seterr(err, errlen, "node \"%s\": too many GPU models", nm);
        return SL_ERANGE;
    }
    if (cl->nnodes == UINT32_MAX - 1) {
        seterr(err, errlen, "node \"%s\": too many nodes", nm);
        return SL_ERANGE;
    }

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
    index_insert(cl, id);
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
    if (old == SL_NODE_UP) index_remove(cl, id);
    n->state = st;
    if (st == SL_NODE_UP) index_insert(cl, id);
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
    index_update(cl, pl->node);
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
    index_update(cl, pl->node);
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

/* ---- index accessors ---- */

size_t sl_cluster_class_count(const sl_cluster_t *cl) {
    return cl->nclasses;
}

const sl_node_t *sl_cluster_class_rep(const sl_cluster_t *cl, size_t i) {
    if (i >= cl->nclasses) return NULL;
    return &cl->nodes[cl->sum[i].rep];
}

uint32_t sl_cluster_class_size(const sl_cluster_t *cl, size_t i) {
    return i < cl->nclasses ? cl->ids[i].size : 0;
}

const sl__class_t *sl__cluster_classes(const sl_cluster_t *cl) {
    return cl->sum;
}

const sl__class_id_t *sl__cluster_class_ids(const sl_cluster_t *cl) {
    return cl->ids;
}

const uint32_t *sl__cluster_buckets(const sl_cluster_t *cl) {
    return cl->bstart;
}

uint32_t sl__cluster_slot_count(const sl_cluster_t *cl) {
    return cl->nslots;
}

uint64_t sl__cluster_order_key(const sl_cluster_t *cl) {
    return cl->order_key;
}

void sl__cluster_set_order_key(sl_cluster_t *cl, uint64_t key) {
    if (key == cl->order_key) return;
    cl->order_key = key;
    for (uint32_t i = 0; i < cl->nclasses; i++) {
        cls_t *c = &cl->slots[cl->order[i]];
        for (size_t k = 0; k < sl_heap_count(&c->heap); k++) {
            uint64_t *e = sl_heap_at(&c->heap, &order_heap, k);
            *e = order_entry(key, (uint32_t)*e);
        }
        sl_heap_build(&c->heap, &order_heap, cl); /* Floyd */
        cl->ids[i].first = order_first(c);
    }
}

/* The class's heap: the heap property, every entry's rank under the key,
 * each member's position, and `first`. O(class size). */
static int check_heap(const sl_cluster_t *cl, const cls_t *c, const sl__class_id_t *id) {
    if (sl_heap_count(&c->heap) != c->n) return SL_ESTATE;
    const uint64_t *h = sl_heap_at(&c->heap, &order_heap, 0);
    for (uint32_t k = 0; k < c->n; k++) {
        uint32_t nid = (uint32_t)h[k];
        if (nid >= cl->nnodes || h[k] != order_entry(cl->order_key, nid)) return SL_ESTATE;
        if (cl->node_hpos[nid] != k || cl->node_class[nid] != (int32_t)id->slot) return SL_ESTATE;
        if (k > 0 && h[(k - 1) / 2] >= h[k]) return SL_ESTATE;
    }
    if (c->n > 0 && id->first != order_first(c)) return SL_ESTATE;
    return 0;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The summaries, identities and buckets against the classes themselves. */
static int check_summaries(const sl_cluster_t *cl) {
    if (cl->bstart[0] != 0 || cl->bstart[SL__NBUCKETS] != cl->nclasses) return SL_ESTATE;
    int b = 0;
    for (uint32_t i = 0; i < cl->nclasses; i++) {
        const cls_t *c = &cl->slots[cl->order[i]];
        sl__class_t want;
        node_summary(&cl->nodes[c->members[0]], &want);
        if (memcmp(&want, &cl->sum[i], sizeof want) != 0) return SL_ESTATE;
        const sl__class_id_t *id = &cl->ids[i];
        if (id->uid != c->uid || id->uid >= cl->next_uid || id->hash != c->hash || id->size != c->n ||
            id->slot != cl->order[i])
            return SL_ESTATE;
        if (check_heap(cl, c, id) != 0) return SL_ESTATE;
        while (b < SL__NBUCKETS && cl->bstart[b + 1] <= i) b++;
        if (b >= SL__NBUCKETS || cl->bstart[b] > i || summary_bucket(&want) != b) return SL_ESTATE;
    }
    for (int k = 0; k < SL__NBUCKETS; k++)
        if (cl->bstart[k] > cl->bstart[k + 1]) return SL_ESTATE;
    if (cl->nclasses == 0) return 0;
    uint64_t *u = sl_xmalloc(cl->nclasses * sizeof *u);
    for (uint32_t i = 0; i < cl->nclasses; i++) u[i] = cl->ids[i].uid;
    qsort(u, cl->nclasses, sizeof *u, cmp_u64);
    int rc = 0;
    for (uint32_t i = 1; i < cl->nclasses; i++)
        if (u[i] == u[i - 1]) rc = SL_ESTATE;
    sl_free(u);
    return rc;
}

uint32_t sl_cluster_class_node(const sl_cluster_t *cl, size_t i, uint32_t k) {
    if (i >= cl->nclasses) return UINT32_MAX;
    const cls_t *c = &cl->slots[cl->order[i]];
    return k < c->n ? c->members[k] : UINT32_MAX;
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
            state_key_t k;
            node_key(n, &k);
            if (!key_eq(&k, &c->key) || hash_key(&k) != c->hash) return SL_ESTATE;
            if (node_full_free(n) != c->full_free) return SL_ESTATE;
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
    uint64_t sum = 0, used = 0;
    for (uint32_t i = 0; i < cl->nclasses; i++) {
        uint32_t slot = cl->order[i];
        if (slot >= cl->nslots) return SL_ESTATE;
        const cls_t *c = &cl->slots[slot];
        if (c->n == 0 || c->dense != i) return SL_ESTATE;
        sum += c->n;
        if (ctab_find(cl, &c->key, c->hash) != slot) return SL_ESTATE;
    }
    uint32_t nfree = 0;
    for (uint32_t s = cl->free_slot; s != NO_SLOT; s = cl->slots[s].next_free)
        if (++nfree > cl->nslots) return SL_ESTATE;
    used = sl_hash_count(&cl->classes);
    if (sum != members || used != cl->nclasses || nfree + cl->nclasses != cl->nslots)
        return SL_ESTATE;
    return check_summaries(cl);
}
