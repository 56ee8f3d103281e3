/*
 * cluster_internal.h - the cluster's private state, shared by cluster.c
 * (nodes, pools, models, fitting, alloc/release) and cluster_class.c (the
 * free-capacity index: classes, their table, dense order, buckets and node
 * order heaps). Not installed; placement code reads the index through
 * cluster_index.h instead.
 */
#ifndef SLUICE_CLUSTER_INTERNAL_H
#define SLUICE_CLUSTER_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "cluster_index.h"
#include "constraint_internal.h"
#include "sluice/cluster.h"
#include "sluice/hash.h"
#include "sluice/heap.h"

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

/*
 * A table of interned names (cluster.c): pools or GPU models. Slot i is
 * free, and its name empty, while refs[i] is 0; held[i] is the part of its
 * references that are not a job's (a node's, the configuration's), and a
 * name in use with held[i] == 0 is held by jobs alone. Those number
 * job_only, which a job's new name may raise only up to job_max (the job
 * share, SL_MAX_JOB_MODELS / SL_MAX_JOB_POOLS), so that nodes always find
 * max - job_max slots. n is the slots ever used (ids are below it), cap
 * the slots allocated (at most max), used the names in use.
 */
typedef struct sl_names {
    char (*name)[SL_NAME_MAX];
    int32_t *refs;
    int32_t *held;
    int32_t n, cap, used, job_only;
    int32_t max, job_max;
} sl_names_t;

struct sl_cluster {
    sl__ltab_t ltab; /* label sets and constraints (constraint.c) */
    sl_node_t *nodes;
    uint32_t nnodes, node_cap;
    int32_t *node_class;    /* class slot of each node, -1 if not up */
    uint32_t *node_pos;     /* position in its class's member array */
    uint32_t *node_hpos;    /* position in its class's heap */
    uint32_t (*node_kinds)[SL_KINDS + 1]; /* tasks of each kind per node, then of exclusive requests (nodes[i].kinds: the nonzero ones) */
    /* The real free compute and memory of each node's fenced GPUs
     * (sl_node_t.gpu_fenced), which read as taken in the node itself
     * (cluster_fence.c). */
    struct sl__fence { int32_t milli[SL_MAX_GPUS_PER_NODE]; int64_t mem[SL_MAX_GPUS_PER_NODE]; } *node_fence;
    uint64_t order_key;     /* of the node order the heaps follow */

    sl_hash_t names;        /* sl_hash_str(name) -> node id + 1 */

    sl_names_t pools;       /* SL_MAX_POOLS; "default" is id 0 for good */
    sl_names_t models;      /* SL_MAX_MODELS, as a model is a bit of a mask */

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
    uint32_t ntopo;         /* nodes with a topology path (sluice/topology.h) */
};


static inline bool gpu_full_free(const sl_node_t *n, int g) {
    return n->gpu_free[g] == SL_GPU_MILLI && n->gpu_mem_free[g] == n->gpu_mem_total;
}

static inline int32_t node_full_free(const sl_node_t *n) {
    int32_t c = 0;
    for (int g = 0; g < n->ngpus; g++) c += gpu_full_free(n, g);
    return c;
}

/* Hash table values for a small index i (class slot, node id): i + 1, as a
 * value must not be NULL. */
static inline void *slot_val(uint32_t i) {
    return (void *)(uintptr_t)(i + 1);
}

/* ---- cluster_fence.c: fenced GPUs ---- */

/* Node id's fenced GPUs show their real free state (unhide) or read as
 * taken again, what changed kept as their real state (hide): around an
 * alloc or release, so that a task on a GPU fenced under it still gives
 * back exactly what it took. O(gpus). */
void sl__fence_unhide(sl_cluster_t *cl, uint32_t id);
void sl__fence_hide(sl_cluster_t *cl, uint32_t id);
/* The real free compute and memory of GPU g of node id (fenced or not),
 * for the checks. */
void sl__fence_real(const sl_cluster_t *cl, uint32_t id, int g, int32_t *milli, int64_t *mem);

/* ---- cluster_class.c: the index ---- */

/* Adds up node id to the class of its state / takes it out / re-keys it
 * after its free state changed. O(gpus + log class size) expected. */
void sl__index_insert(sl_cluster_t *cl, uint32_t id);
void sl__index_remove(sl_cluster_t *cl, uint32_t id);
void sl__index_update(sl_cluster_t *cl, uint32_t id);
/* Checks for sl_cluster_check: 0 or SL_ESTATE. */
int sl__index_check_node(const sl_cluster_t *cl, const sl_node_t *n, const cls_t *c);
int sl__index_check(const sl_cluster_t *cl, uint64_t members);

#endif
