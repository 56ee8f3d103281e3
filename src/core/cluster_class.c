/*
 * cluster_class.c - the cluster's free-capacity index: equivalence classes
 * of up nodes, the table from a class's state key to its slot, the dense
 * class order grouped in buckets by free GPU, each class's node-order heap,
 * and the accessors placement reads them through (cluster_index.h). The
 * algorithm, its costs and its workload are stated in cluster.c's header;
 * cluster.c calls sl__index_insert/remove/update whenever a node's free
 * state or up state changes, and nothing here calls cluster.c.
 */
#include <stdlib.h> /* qsort */
#include <string.h>

#include "cluster_internal.h"
#include "sluice/alloc.h"
#include "sluice/error.h"

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

static void node_key(const sl_node_t *n, state_key_t *k) {
    k->w[0] = (uint64_t)(uint32_t)n->pool | ((uint64_t)(uint32_t)n->model << 32);
    /* The label set joins the key: the nodes of a class share labels and
     * taints, so constraints are evaluated once per class. So do the kinds
     * of the tasks they run (sl_node_t.kinds: 18 bits, SL_KIND_EXCL the last, above the GPU count,
     * which is at most 16), which gpuclustering scores by. */
    k->w[1] = (uint64_t)(uint32_t)n->ngpus | (uint64_t)n->kinds << 8 | ((uint64_t)n->lset->id << 32);
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
    }
    if (n->lset->hard) s->used |= SL__TAINTED;
    if (n->kinds & SL_KIND_EXCL) s->used |= SL__EXCL;
    s->gpu_free = sum;
    s->share_max = (int16_t)smax;
    s->full_free = (uint8_t)node_full_free(n);
}

static int summary_bucket(const sl__class_t *s) {
    return sl__bucket_of(s->full_free, s->share_max);
}

/* ---- the class table ---- */

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
    cl->ids[d] = (sl__class_id_t){.uid = c->uid, .hash = h, .size = 0, .slot = slot, .first = n->id,
                                  .lset = n->lset->id};
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

void sl__index_remove(sl_cluster_t *cl, uint32_t id) {
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

void sl__index_insert(sl_cluster_t *cl, uint32_t id) {
    state_key_t k;
    node_key(&cl->nodes[id], &k);
    index_insert_key(cl, id, &k);
}

/*
 * Re-keys one up node after its free state changed. A node whose key did not
 * change stays where it is, so its position (and a representative) is kept.
 */
void sl__index_update(sl_cluster_t *cl, uint32_t id) {
    int32_t slot = cl->node_class[id];
    if (slot < 0) return;
    state_key_t k;
    node_key(&cl->nodes[id], &k);
    if (key_eq(&k, &cl->slots[slot].key)) return;
    sl__index_remove(cl, id);
    index_insert_key(cl, id, &k);
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


/* The class of up node n (c) holds n's key, hash and fully free GPUs. */
int sl__index_check_node(const sl_cluster_t *cl, const sl_node_t *n, const cls_t *c) {
    state_key_t k;
    node_key(n, &k);
    if (!key_eq(&k, &c->key) || hash_key(&k) != c->hash) return SL_ESTATE;
    if (node_full_free(n) != c->full_free) return SL_ESTATE;
    return 0;
}

/* The classes against the table, the free list, the summaries, and the
 * count of up nodes (members). */
int sl__index_check(const sl_cluster_t *cl, uint64_t members) {
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
