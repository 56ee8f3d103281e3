/*
 * cluster_index.h - the free-capacity index as the placement framework sees
 * it. Private to src/core (place.c, workload.c, the placement policies);
 * include/sluice/cluster.h is the public view of the same index.
 *
 * Each class of identical up nodes (cluster.c) has a compact summary: the
 * fields every placement filter reads, 32 bytes, so a scan over thousands of
 * classes streams through contiguous memory and touches a representative
 * node only for the classes that pass. Summaries are kept in dense arrays in
 * the public class order (class i of sl_cluster_class_rep), and that order
 * is grouped into buckets by how much GPU a class has free:
 *
 *   bucket b < 10:   no fully free GPU, largest free share in [100b, 100b+99]
 *   bucket 9 + f:    f >= 1 fully free GPUs (f = 1..16)
 *
 * Buckets are contiguous and in ascending order, so a request only scans the
 * suffix of buckets that can hold it (sl__first_bucket): a whole-GPU request
 * for g GPUs starts at bucket 9 + g, a share of m milli at bucket m / 100, a
 * task without GPUs at bucket 0. A request that no bucket can hold is refused
 * in O(1). Within that suffix every class still goes through the exact filter
 * (sl__class_fits and, for shares with GPU memory, the node itself).
 *
 * Each class also has an identity: a uid never reused within its cluster
 * (a class's state never changes while it lives, so anything computed from
 * it may be cached under the uid), the hash of its full state key, its size
 * and its stable storage slot (< sl__cluster_slot_count, reused only after
 * the class dies, so per-class caches may be arrays indexed by slot and
 * validated by uid), and the member that comes first in the cluster's node
 * order.
 *
 * The node order. gpupacking and gpuclustering send a task that ties on
 * score to the first node of a keyed pseudo-random order of node ids, as
 * the FGD paper's simulator does (policy/place.h): node id ranks
 * sl__node_rank(key, id), lowest first, a bijection of the 32-bit id for
 * every key, so no two nodes tie and each key gives its own order. The
 * cluster keeps each class's members in a binary min-heap by rank under
 * one key (sl__cluster_order_key, 0 on a new cluster; the scheduler sets
 * its own with sl__cluster_set_order_key), so the first member of a class
 * is read in O(1) and a node joining or leaving costs O(log class size).
 *
 * Pointers returned here are owned by the cluster and valid until the next
 * call that adds a node, allocates, releases or changes a node's state.
 */
#ifndef SLUICE_CLUSTER_INDEX_H
#define SLUICE_CLUSTER_INDEX_H

#include <stdbool.h>
#include <stdint.h>

#include "sluice/cluster.h"
#include "sluice/resources.h"

#define SL__SHARE_BUCKETS 10
#define SL__NBUCKETS (SL__SHARE_BUCKETS + SL_MAX_GPUS_PER_NODE)

/* What the filters read, one per class (32 bytes, no padding). */
typedef struct sl__class {
    int64_t cpu_free;
    int64_t mem_free;
    int32_t gpu_free;   /* free milli summed over the GPUs */
    uint32_t rep;       /* node id of the representative (the class's member 0) */
    int16_t pool;
    int8_t model;       /* -1 when the nodes have no GPU */
    uint8_t ngpus;
    uint8_t full_free;  /* GPUs with all compute and memory free */
    uint8_t used;       /* SL__TAINTED, or 0 */
    int16_t share_max;  /* largest free milli of one GPU (0 without GPUs) */
} sl__class_t;

#define SL__TAINTED 4u /* the nodes have a NoSchedule or NoExecute taint (constraint.h) */
#define SL__EXCL 8u    /* a task of an exclusive request runs on the nodes: they take no other */

/* Identity of a class, parallel to the summaries. */
typedef struct sl__class_id {
    uint64_t uid;  /* never reused within one cluster */
    uint64_t hash; /* of the full state key */
    uint32_t size; /* member nodes */
    uint32_t slot; /* stable while the class lives */
    uint32_t first; /* the member lowest in sl__node_rank(sl__cluster_order_key(cl), .) */
    uint32_t lset;  /* id of the members' label set (fills the padding: 32 bytes) */
} sl__class_id_t;

/* murmur3's 32-bit finaliser: a bijection on 32 bits. */
static inline uint32_t sl__fmix32(uint32_t x) {
    x ^= x >> 16;
    x *= 0x85ebca6bu;
    x ^= x >> 13;
    x *= 0xc2b2ae35u;
    x ^= x >> 16;
    return x;
}

/* The rank of node id in the node order of key (lowest first): two keyed
 * rounds of fmix32, a bijection of the id for every key. O(1). */
static inline uint32_t sl__node_rank(uint64_t key, uint32_t id) {
    return sl__fmix32(sl__fmix32(id ^ (uint32_t)key) ^ (uint32_t)(key >> 32));
}

/* The bucket of a class with f fully free GPUs and largest free share s. */
static inline int sl__bucket_of(int f, int s) {
    if (f > 0) return SL__SHARE_BUCKETS - 1 + f;
    int b = s / 100;
    return b < SL__SHARE_BUCKETS - 1 ? b : SL__SHARE_BUCKETS - 1;
}

/* The first bucket that may hold one task of r (SL__NBUCKETS if none can). */
static inline int sl__first_bucket(const sl_task_req_t *r) {
    if (r->gpus > 0)
        return r->gpus > SL_MAX_GPUS_PER_NODE ? SL__NBUCKETS : SL__SHARE_BUCKETS - 1 + r->gpus;
    if (r->gpu_milli > 0) return sl__bucket_of(0, r->gpu_milli);
    return 0;
}

/* The least free GPU milli (sum) of any class in bucket b. */
static inline int32_t sl__bucket_min_gpu_free(int b) {
    return b < SL__SHARE_BUCKETS ? 100 * b : SL_GPU_MILLI * (b - (SL__SHARE_BUCKETS - 1));
}

static inline bool sl__class_model_ok(const sl__class_t *c, uint64_t mask) {
    return mask == 0 || (c->model >= 0 && ((mask >> c->model) & 1u));
}

/*
 * Whether one task of r fits a node of class c, from the summary alone:
 * exact except for a share with GPU memory (r->gpu_mem_bytes > 0), where
 * true only means "maybe" and the node must be asked (sl_node_fits). A
 * request with a constraint (r->cons) must also be admitted by the class's
 * label set (sl__cons_admits on the representative): the summary knows only
 * that a class is tainted, which refuses every request without one.
 */
static inline bool sl__class_fits(const sl__class_t *c, const sl_task_req_t *r) {
    if (c->cpu_free < r->cpu_milli || c->mem_free < r->mem_bytes) return false;
    if (r->pool != -1 && c->pool != r->pool) return false;
    if (!sl__class_model_ok(c, r->model_mask)) return false;
    if (r->gpus > 0) {
        if (c->full_free < r->gpus) return false;
    } else if (r->gpu_milli > 0) {
        if (c->share_max < r->gpu_milli) return false;
    }
    /* Last, so that only the classes that fit pay for it (most do not). */
    if (!c->used) return true;
    if (c->used & SL__EXCL) return false;
    return r->cons != NULL;
}

/*
 * Gives one task of req placed as pl back to node n: its CPU, memory and
 * GPUs (whole ones reset to fully free, a share returned to its GPU). Only
 * the node's free capacity: sl_cluster_release also uncounts the task's
 * kind (sl_node_t.kinds) and keeps the index in step; the EASY reservation
 * applies it to node copies, whose fit counts are all it reads. The caller has checked that
 * pl's resources are in use on n. Can't fail. O(gpus).
 */
static inline void sl__node_give_back(sl_node_t *n, const sl_task_req_t *req, const sl_place_t *pl) {
    n->cpu_free += req->cpu_milli;
    n->mem_free += req->mem_bytes;
    for (int g = 0; g < n->ngpus; g++) {
        if (!(pl->gpu_mask & (1u << g))) continue;
        if (req->gpus > 0) {
            n->gpu_free[g] = SL_GPU_MILLI;
            n->gpu_mem_free[g] = n->gpu_mem_total;
        } else {
            n->gpu_free[g] += req->gpu_milli;
            n->gpu_mem_free[g] += req->gpu_mem_bytes;
        }
    }
    /* A node runs the tasks of one exclusive job at most, all given back
     * together on a copy; sl_cluster_release counts them on the real one. */
    if (req->exclusive) n->kinds &= ~SL_KIND_EXCL;
}

/* The label set with id lset (sl__class_id_t.lset); NULL if none. O(1). */
const struct sl_lset *sl__cluster_lset(const sl_cluster_t *cl, uint32_t lset);

/* Dense arrays of sl_cluster_class_count() entries, in class order. */
const sl__class_t *sl__cluster_classes(const sl_cluster_t *cl);
const sl__class_id_t *sl__cluster_class_ids(const sl_cluster_t *cl);
/* SL__NBUCKETS + 1 positions: bucket b is [starts[b], starts[b + 1]). */
const uint32_t *sl__cluster_buckets(const sl_cluster_t *cl);
/* Upper bound of the slots of live classes. */
uint32_t sl__cluster_slot_count(const sl_cluster_t *cl);
/* The key of the node order that the classes' `first` members follow. */
uint64_t sl__cluster_order_key(const sl_cluster_t *cl);
/* Re-orders every class's members under key: O(up nodes) when the key
 * changes, O(1) when it does not. Changes nothing else (class order,
 * representatives, summaries). Can't fail. */
void sl__cluster_set_order_key(sl_cluster_t *cl, uint64_t key);

#endif
