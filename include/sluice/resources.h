/*
 * resources.h - resource vectors and per-task requests.
 *
 * Resources are integers: milli-CPUs, bytes of memory, milli-GPUs (one GPU is
 * 1000 milli of compute). A task asks either for whole GPUs (gpus >= 1, each
 * taken entirely) or for a share of one GPU (gpus == 0, 0 < gpu_milli < 1000,
 * optionally with gpu_mem_bytes of that GPU's memory), or for no GPU.
 */
#ifndef SLUICE_RESOURCES_H
#define SLUICE_RESOURCES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SL_MAX_GPUS_PER_NODE 16
#define SL_GPU_MILLI 1000
#define SL_MAX_MODELS 64   /* GPU models are bits of a uint64_t mask */
#define SL_MAX_POOLS 1024
#define SL_NAME_MAX 64     /* names include the NUL */

typedef struct sl_res {
    int64_t cpu_milli;
    int64_t mem_bytes;
    int64_t gpu_milli; /* summed over GPUs */
} sl_res_t;

typedef struct sl_constraint sl_constraint_t; /* sluice/constraint.h */

typedef struct sl_task_req {
    int64_t cpu_milli;
    int64_t mem_bytes;
    int32_t gpus;          /* whole GPUs per task; 0 for a share or no GPU */
    int32_t gpu_milli;     /* with gpus == 0: share of one GPU, 0..999 (0 = no GPU) */
    int64_t gpu_mem_bytes; /* with a share: GPU memory needed on that GPU (0 = any) */
    uint64_t model_mask;   /* allowed GPU models (bits from sl_cluster_model_intern); 0 = any */
    int32_t pool;          /* pool id from sl_cluster_pool_intern; -1 = any pool */
    /* The gang's nodes (sl_place_gang; zero = any number, packed on as few
     * as fit): its tasks spread over N distinct nodes, nodes_min <= N <=
     * nodes_max (0 = nodes_min), the fewest that fit. In what was padding. */
    int16_t nodes_min;
    int16_t nodes_max;
    /* labels and tolerations (sl_cluster_constraint_intern); NULL = none:
     * then only nodes without NoSchedule/NoExecute taints */
    const sl_constraint_t *cons;
    /* The gang's topology (sluice/topology.h levels; 0 = none): the level
     * inside one group of which all its tasks must run, or should. They
     * sit in what was the struct's padding, so its size is unchanged. */
    int16_t topo_required;
    int16_t topo_preferred;
    /* Exactly this many tasks on each node of the gang (0 = any). */
    int16_t tasks_per_node;
    /* Whole nodes: only idle nodes, and while a task of the job runs on a
     * node no other task may be placed there (its GPUs, CPUs and memory
     * are the job's). */
    uint8_t exclusive;
    uint8_t reserved_;     /* zero */
    /* Node names, comma-separated: every node of include must be among the
     * gang's nodes (Slurm's --nodelist; more may be added), no node of
     * exclude may be (--exclude). NULL or "" = none. Owned by the caller,
     * which keeps them alive as long as the request is in use (a job's,
     * while the scheduler knows the job). */
    const char *include;
    const char *exclude;
} sl_task_req_t;

/* A request for nothing: all zero, any model, any pool. Can't fail. */
void sl_task_req_init(sl_task_req_t *req);

/*
 * Checks a request for consistency: non-negative values, gpus <= 16,
 * gpu_milli in 0..999 and only with gpus == 0, gpu_mem_bytes only with a share.
 * Returns 0 or SL_EINVAL with a message naming the field in err.
 */
int sl_task_req_check(const sl_task_req_t *req, char *err, size_t errlen);

/* Total demand of one task as a vector (whole GPUs count 1000 milli each). */
sl_res_t sl_task_req_total(const sl_task_req_t *req);

/* True if the task uses any GPU. */
bool sl_task_req_has_gpu(const sl_task_req_t *req);

static inline sl_res_t sl_res_add(sl_res_t a, sl_res_t b) {
    return (sl_res_t){a.cpu_milli + b.cpu_milli, a.mem_bytes + b.mem_bytes, a.gpu_milli + b.gpu_milli};
}
static inline sl_res_t sl_res_sub(sl_res_t a, sl_res_t b) {
    return (sl_res_t){a.cpu_milli - b.cpu_milli, a.mem_bytes - b.mem_bytes, a.gpu_milli - b.gpu_milli};
}
static inline sl_res_t sl_res_scale(sl_res_t a, int64_t k) {
    return (sl_res_t){a.cpu_milli * k, a.mem_bytes * k, a.gpu_milli * k};
}
static inline bool sl_res_le(sl_res_t a, sl_res_t b) {
    return a.cpu_milli <= b.cpu_milli && a.mem_bytes <= b.mem_bytes && a.gpu_milli <= b.gpu_milli;
}

#endif
