/*
 * cluster.h - nodes, their GPUs and the index over free capacity.
 *
 * A cluster owns its nodes. Each node has CPUs, memory and up to 16 GPUs of
 * one model; each GPU has 1000 milli of compute and gpu_mem_bytes of memory,
 * tracked free per GPU so that shares of one GPU can be packed.
 *
 * The index: nodes that are up and whose whole state relevant to placement
 * is identical (pool, model, totals, free CPU and memory, and the multiset of
 * per-GPU free compute and memory) form one equivalence class. Placement
 * evaluates each class once through a representative node instead of
 * scanning every node, so a decision costs O(classes), not O(nodes); on real
 * clusters the classes number in the tens to low thousands while the nodes
 * number in the tens of thousands. Allocating or releasing moves one node
 * between classes in O(1) expected (hash of the state).
 *
 * Ownership: sl_cluster_node() and class accessors return pointers owned by
 * the cluster, valid until the next call that adds a node, allocates,
 * releases or changes a node's state. Nothing changes on failure.
 */
#ifndef SLUICE_CLUSTER_H
#define SLUICE_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include "sluice/resources.h"

typedef enum sl_node_state {
    SL_NODE_UP = 0,
    SL_NODE_DRAINING = 1, /* runs what it has, takes nothing new */
    SL_NODE_DOWN = 2
} sl_node_state_t;

const char *sl_node_state_name(sl_node_state_t st); /* "up", "draining", "down" */
int sl_node_state_parse(const char *s, sl_node_state_t *out); /* SL_EINVAL if unknown */

/* What a caller declares to add a node. Strings are copied. */
typedef struct sl_node_spec {
    const char *name;      /* unique, 1..63 bytes */
    int64_t cpu_milli;
    int64_t mem_bytes;
    int32_t gpus;          /* 0..16 */
    const char *gpu_model; /* NULL or "" when gpus == 0 */
    int64_t gpu_mem_bytes; /* per GPU; may be 0 when unknown */
    const char *pool;      /* NULL or "" means "default" */
    const char *labels;    /* "k=v,k=v" or NULL; kept verbatim (sluice/constraint.h) */
    const char *taints;    /* "k=v:NoSchedule,..." or NULL (sluice/constraint.h) */
} sl_node_spec_t;

/* A node, read-only for callers (fields are public for policies' speed). */
typedef struct sl_node {
    uint32_t id;                 /* dense: 0..sl_cluster_node_count()-1 */
    char name[SL_NAME_MAX];
    int32_t pool;
    int32_t model;               /* -1 when the node has no GPU */
    sl_node_state_t state;
    int32_t ngpus;
    int64_t cpu_total, cpu_free;
    int64_t mem_total, mem_free;
    int64_t gpu_mem_total;       /* per GPU */
    int32_t gpu_free[SL_MAX_GPUS_PER_NODE];     /* milli, 0..1000 */
    int64_t gpu_mem_free[SL_MAX_GPUS_PER_NODE]; /* bytes */
    char *labels;                /* owned by the cluster; may be NULL */
    char *taints;                /* owned by the cluster; may be NULL */
    const struct sl_lset *lset;  /* labels and taints, interned (constraint.h); never NULL */
    uint32_t kinds;              /* SL_KIND_* bits of the GPU tasks running here (below) */
    uint32_t gpu_fenced;         /* bit i: GPU i is fenced (sl_cluster_fence_gpu) */
} sl_node_t;

/*
 * The kind of a GPU task, as the FGD paper's simulator tags its pods
 * ("share-gpu", or "<k>-gpu" for k whole GPUs): bit 0 for a share of one
 * GPU, bit k for a task of k whole GPUs; a task without GPUs has no kind.
 * A node's `kinds` has the bit of every kind it runs at least one task of
 * (the cluster counts them per node; sl_cluster_alloc and
 * sl_cluster_release keep the bits), so that a policy can keep tasks of one
 * kind together (gpuclustering). Kinds join the class key: the nodes of a
 * class run the same kinds.
 */
#define SL_KINDS (SL_MAX_GPUS_PER_NODE + 1)
#define SL_KIND_SHARE 1u
/* Also in kinds: a task of an exclusive request (sl_task_req_t.exclusive)
 * runs on the node, which then takes no other task (sl_node_fits and
 * sl_node_fit_count say 0, the index's summaries refuse it). */
#define SL_KIND_EXCL (1u << SL_KINDS)
static inline uint32_t sl_task_kind_bit(const sl_task_req_t *r) {
    if (r->gpus > 0) return r->gpus < SL_KINDS ? 1u << r->gpus : 0;
    return r->gpu_milli > 0 ? SL_KIND_SHARE : 0;
}

/*
 * Where one task of a job runs: a node, the GPUs it uses (bit i = GPU i) and
 * how much of each it takes (1000 for whole GPUs, the share otherwise).
 */
typedef struct sl_place {
    uint32_t node;
    uint32_t gpu_mask;
    int32_t gpu_milli;     /* per GPU in the mask */
    int64_t gpu_mem_bytes; /* per GPU in the mask (share tasks; whole GPUs take all) */
} sl_place_t;

typedef struct sl_cluster sl_cluster_t;

int sl_cluster_create(sl_cluster_t **out);   /* SL_ENOMEM never returned: aborts */
void sl_cluster_destroy(sl_cluster_t *cl);   /* accepts NULL */

/*
 * Adds a node, up and empty. Returns 0 and its id in *id_out (may be NULL),
 * SL_EEXIST if the name is taken, SL_EINVAL with a message in err for a bad
 * spec (empty or long name, negative values, gpus > 16, GPUs without model).
 * Amortised O(1).
 */
int sl_cluster_add_node(sl_cluster_t *cl, const sl_node_spec_t *spec, uint32_t *id_out,
                        char *err, size_t errlen);

size_t sl_cluster_node_count(const sl_cluster_t *cl);
/* Nodes that declared a topology path (sluice/topology.h). Can't fail; O(1). */
size_t sl_cluster_topo_count(const sl_cluster_t *cl);
const sl_node_t *sl_cluster_node(const sl_cluster_t *cl, uint32_t id); /* NULL if out of range */
const sl_node_t *sl_cluster_find_node(const sl_cluster_t *cl, const char *name); /* NULL if absent; O(1) */

/* Sets a node's state; down and draining nodes leave the index. SL_ENOENT for a bad id. */
int sl_cluster_set_state(sl_cluster_t *cl, uint32_t id, sl_node_state_t st);

/*
 * The job share: names that only jobs hold (no node has them, nor the
 * configuration) may fill at most half of each table, so that one pending
 * job (or a few) naming made-up models or pools cannot keep a real node
 * with a new model or pool from registering while they wait. Nodes always
 * find the other half. The one place these numbers are defined.
 */
#define SL_MAX_JOB_MODELS (SL_MAX_MODELS / 2) /* 32 */
#define SL_MAX_JOB_POOLS (SL_MAX_POOLS / 2)   /* 512 */

/*
 * Interns a pool or GPU model name and returns its id (>= 0), creating it if
 * needed. Each call takes one node reference, which the caller gives back
 * with the matching release: what a node holds to its model and pool
 * (sl_cluster_add_node takes them itself), the configuration to its pools,
 * or any caller that trusts the name (the simulator, for its traces). Such
 * a name never counts toward the job share, and a name jobs alone held
 * stops counting from this call on. Returns SL_ERANGE when SL_MAX_POOLS /
 * SL_MAX_MODELS names are in use, SL_EINVAL for an empty or long name
 * (nothing taken then). Pool "default" always exists with id 0. O(names in
 * the table).
 */
int sl_cluster_pool_intern(sl_cluster_t *cl, const char *name);
int sl_cluster_model_intern(sl_cluster_t *cl, const char *name);
/*
 * Interns a name a job names: as above, but the reference is a job's, so
 * jobs may name models no node has yet. A name the table already holds is
 * always taken (it adds no slot). A new name becomes one that jobs alone
 * hold, and is refused with SL_ENOSPC (nothing taken) when SL_MAX_JOB_MODELS
 * / SL_MAX_JOB_POOLS such names are in use, unless past_share: the caller
 * says so for a job it acknowledged before (recovery at start-up, which
 * must not drop a job stored before the share existed), and the count may
 * then exceed the share. SL_ERANGE and SL_EINVAL as above. O(names in the
 * table).
 */
int sl_cluster_pool_intern_job(sl_cluster_t *cl, const char *name, bool past_share);
int sl_cluster_model_intern_job(sl_cluster_t *cl, const char *name, bool past_share);
/*
 * Drops one reference taken by an intern (release) or a job intern
 * (release_job). The name stays, with its id, while any reference does;
 * with the last one its slot becomes free and the next new name may take
 * that id. When the last node reference goes while jobs still hold the
 * name, it counts toward the job share again. 0, or SL_EINVAL (nothing
 * changed) for an id that holds no reference of that kind ("default"
 * keeps the cluster's own reference). O(1).
 */
int sl_cluster_pool_release(sl_cluster_t *cl, int32_t id);
int sl_cluster_model_release(sl_cluster_t *cl, int32_t id);
int sl_cluster_pool_release_job(sl_cluster_t *cl, int32_t id);
int sl_cluster_model_release_job(sl_cluster_t *cl, int32_t id);
int sl_cluster_pool_find(const sl_cluster_t *cl, const char *name);  /* SL_ENOENT if absent */
int sl_cluster_model_find(const sl_cluster_t *cl, const char *name); /* SL_ENOENT if absent */
/* The name with this id; NULL for a bad id or a free slot. */
const char *sl_cluster_pool_name(const sl_cluster_t *cl, int32_t id);
const char *sl_cluster_model_name(const sl_cluster_t *cl, int32_t id);
/* Names in use (ids may be sparse once a name was released; every id is
 * below SL_MAX_MODELS / SL_MAX_POOLS). */
size_t sl_cluster_model_count(const sl_cluster_t *cl);
size_t sl_cluster_pool_count(const sl_cluster_t *cl);
/* Names in use that jobs alone hold: what the job share bounds. Can't
 * fail; O(1). */
size_t sl_cluster_model_job_only_count(const sl_cluster_t *cl);
size_t sl_cluster_pool_job_only_count(const sl_cluster_t *cl);
/* Whether the name with this id is in use and held by jobs alone (it
 * counts toward the job share); false for a bad id or a free slot. For a
 * caller that divides the share further (the controller, per tenant).
 * Can't fail; O(1). */
bool sl_cluster_model_job_only(const sl_cluster_t *cl, int32_t id);
bool sl_cluster_pool_job_only(const sl_cluster_t *cl, int32_t id);

/*
 * Could one task of req be placed on node as it is now (state up, pool,
 * model, CPU, memory, GPUs)? Pure; O(gpus).
 */
bool sl_node_fits(const sl_node_t *node, const sl_task_req_t *req);

/*
 * How many tasks of req fit on node at once (0 if none), capped at limit.
 * O(gpus + result).
 */
int32_t sl_node_fit_count(const sl_node_t *node, const sl_task_req_t *req, int32_t limit);

/*
 * How many tasks of req node could hold if it were empty and up (its
 * totals instead of what is free; its pool, GPU models, labels and taints
 * still apply), capped at limit: whether a job can ever fit. O(1).
 */
int32_t sl_node_empty_fit_count(const sl_node_t *node, const sl_task_req_t *req, int32_t limit);

/*
 * Picks GPUs for one task of req on node with the default rule: whole GPUs
 * take the lowest-numbered fully free GPUs; a share takes the fitting GPU
 * with the least free compute (best fit), lowest index on ties. Fills *pl and
 * returns SL_FIT, or SL_NOFIT if the node cannot hold the task.
 */
int sl_node_choose_gpus(const sl_node_t *node, const sl_task_req_t *req, sl_place_t *pl);

/*
 * Takes the resources of one task of req at pl, and counts it among the
 * node's tasks of its kind (sl_task_kind_bit). Returns 0, or SL_ENOSPC
 * (nothing changed) if that would over-allocate anything, SL_ENOENT for a bad
 * node, SL_EINVAL if pl does not match req (mask popcount, milli). Works on
 * nodes in any state (used to re-adopt running tasks). O(gpus).
 */
int sl_cluster_alloc(sl_cluster_t *cl, const sl_task_req_t *req, const sl_place_t *pl);

/* Gives back what sl_cluster_alloc took, and uncounts the task. SL_EINVAL
 * (nothing changed) if it would free more than was taken, or the node runs
 * no task of req's kind. O(gpus). */
int sl_cluster_release(sl_cluster_t *cl, const sl_task_req_t *req, const sl_place_t *pl);

/*
 * Fences GPU gpu of node id (fenced true: a health fault) or returns it to
 * service (false). A fenced GPU takes no new task: it reads as fully taken
 * in the node's gpu_free and gpu_mem_free, so every filter, policy and the
 * index pass it by, and its free part leaves the cluster's free capacity
 * (its total stays). The node keeps serving its other GPUs. A task already
 * on the GPU keeps what it took; sl_cluster_alloc and sl_cluster_release
 * keep working on it (re-adoption, the task's end), and what the GPU has
 * free shows again when it is returned. Idempotent. 0, SL_ENOENT for a bad
 * node, SL_EINVAL for a GPU the node does not have. O(gpus).
 */
int sl_cluster_fence_gpu(sl_cluster_t *cl, uint32_t id, int32_t gpu, bool fenced);

/* Totals over nodes that are up or draining (capacity) and their free part. */
void sl_cluster_capacity(const sl_cluster_t *cl, sl_res_t *total, sl_res_t *free_);

/* Largest number of whole free GPUs on any up node that matches pool and
 * model_mask (for reasons like "largest free block is 2"). O(classes). */
int32_t sl_cluster_largest_gpu_block(const sl_cluster_t *cl, int32_t pool, uint64_t model_mask);

/* ---- The free-capacity index ---- */

size_t sl_cluster_class_count(const sl_cluster_t *cl);
/* Representative node of class i (0 <= i < class_count); every node of the
 * class has the same free state. NULL if out of range. */
const sl_node_t *sl_cluster_class_rep(const sl_cluster_t *cl, size_t i);
uint32_t sl_cluster_class_size(const sl_cluster_t *cl, size_t i);
/* The k-th node id of class i (0 <= k < size), order unspecified but
 * deterministic. */
uint32_t sl_cluster_class_node(const sl_cluster_t *cl, size_t i, uint32_t k);

/* Checks the index against a full scan (every up node in exactly one class
 * whose state equals its own; free never exceeds total). Returns 0 or
 * SL_ESTATE. O(nodes). For tests and debug builds. */
int sl_cluster_check(const sl_cluster_t *cl);

#endif
