/*
 * resources.c - per-task requests: defaults, validation and totals.
 *
 * A request is a plain struct of integers; this file only gives it a neutral
 * value, checks it for consistency (so that the cluster and the policies can
 * trust it) and converts it to a resource vector. All O(1).
 */
#include <stdio.h> /* snprintf only: formats error messages, no I/O */
#include <string.h>

#include "sluice/error.h"
#include "sluice/resources.h"
#include "sluice/topology.h"

void sl_task_req_init(sl_task_req_t *req) {
    memset(req, 0, sizeof *req);
    req->model_mask = 0;
    req->pool = -1;
}

static int bad(char *err, size_t errlen, const char *msg) {
    if (err && errlen > 0) snprintf(err, errlen, "%s", msg);
    return SL_EINVAL;
}

int sl_task_req_check(const sl_task_req_t *req, char *err, size_t errlen) {
    if (!req) return bad(err, errlen, "request is missing");
    if (req->cpu_milli < 0) return bad(err, errlen, "cpu_milli is negative");
    if (req->mem_bytes < 0) return bad(err, errlen, "mem_bytes is negative");
    if (req->gpus < 0) return bad(err, errlen, "gpus is negative");
    if (req->gpus > SL_MAX_GPUS_PER_NODE) return bad(err, errlen, "gpus is more than 16");
    if (req->gpu_milli < 0) return bad(err, errlen, "gpu_milli is negative");
    if (req->gpu_milli >= SL_GPU_MILLI)
        return bad(err, errlen, "gpu_milli must be below 1000 (ask for whole gpus instead)");
    if (req->gpu_milli > 0 && req->gpus > 0)
        return bad(err, errlen, "gpu_milli (a share) and gpus (whole GPUs) are exclusive");
    if (req->gpu_mem_bytes < 0) return bad(err, errlen, "gpu_mem_bytes is negative");
    if (req->gpu_mem_bytes > 0 && req->gpu_milli == 0)
        return bad(err, errlen, "gpu_mem_bytes is only valid with a GPU share (gpu_milli)");
    if (req->pool < -1) return bad(err, errlen, "pool is not a pool id");
    if (req->topo_required < 0 || req->topo_required > SL_TOPO_BLOCK)
        return bad(err, errlen, "topo_required is not a topology level");
    if (req->topo_preferred < 0 || req->topo_preferred > SL_TOPO_BLOCK)
        return bad(err, errlen, "topo_preferred is not a topology level");
    if (req->nodes_min < 0) return bad(err, errlen, "nodes_min is negative");
    if (req->nodes_max < 0) return bad(err, errlen, "nodes_max is negative");
    if (req->nodes_max > 0 && req->nodes_max < req->nodes_min)
        return bad(err, errlen, "nodes_max is below nodes_min");
    if (req->tasks_per_node < 0) return bad(err, errlen, "tasks_per_node is negative");
    if (req->exclusive > 1) return bad(err, errlen, "exclusive is not 0 or 1");
    return 0;
}

sl_res_t sl_task_req_total(const sl_task_req_t *req) {
    return (sl_res_t){req->cpu_milli, req->mem_bytes,
                      (int64_t)req->gpus * SL_GPU_MILLI + req->gpu_milli};
}

bool sl_task_req_has_gpu(const sl_task_req_t *req) {
    return req->gpus > 0 || req->gpu_milli > 0;
}
