/*
 * cluster_fence.c - GPUs taken out of placement (sl_cluster_fence_gpu).
 *
 * A fenced GPU must look taken to everything that places work: the
 * filters, each policy's score, the class key of the index and its
 * buckets all read sl_node_t.gpu_free and gpu_mem_free. Rather than teach
 * each of them a mask, the fence hides the GPU's real free state in the
 * cluster (node_fence) and shows zero in the node; sl_cluster_alloc and
 * sl_cluster_release unhide it for the duration of their change and hide
 * it again, so that a task that was on the GPU when it was fenced ends
 * and gives back exactly what it took. Returning the GPU shows its real
 * state again: a fully free GPU once its task has ended.
 */
#include "cluster_internal.h"
#include "sluice/error.h"

void sl__fence_unhide(sl_cluster_t *cl, uint32_t id) {
    sl_node_t *n = &cl->nodes[id];
    for (uint32_t m = n->gpu_fenced; m; m &= m - 1) {
        int g = __builtin_ctz(m);
        n->gpu_free[g] = cl->node_fence[id].milli[g];
        n->gpu_mem_free[g] = cl->node_fence[id].mem[g];
    }
}

void sl__fence_hide(sl_cluster_t *cl, uint32_t id) {
    sl_node_t *n = &cl->nodes[id];
    for (uint32_t m = n->gpu_fenced; m; m &= m - 1) {
        int g = __builtin_ctz(m);
        cl->node_fence[id].milli[g] = n->gpu_free[g];
        cl->node_fence[id].mem[g] = n->gpu_mem_free[g];
        n->gpu_free[g] = 0;
        n->gpu_mem_free[g] = 0;
    }
}

void sl__fence_real(const sl_cluster_t *cl, uint32_t id, int g, int32_t *milli, int64_t *mem) {
    const sl_node_t *n = &cl->nodes[id];
    bool f = (n->gpu_fenced >> g) & 1u;
    *milli = f ? cl->node_fence[id].milli[g] : n->gpu_free[g];
    *mem = f ? cl->node_fence[id].mem[g] : n->gpu_mem_free[g];
}

int sl_cluster_fence_gpu(sl_cluster_t *cl, uint32_t id, int32_t gpu, bool fenced) {
    if (id >= cl->nnodes) return SL_ENOENT;
    sl_node_t *n = &cl->nodes[id];
    if (gpu < 0 || gpu >= n->ngpus) return SL_EINVAL;
    uint32_t bit = 1u << gpu;
    if (((n->gpu_fenced & bit) != 0) == fenced) return 0;
    /* The GPU's free compute leaves (or rejoins) the free capacity. */
    int64_t shown = fenced ? n->gpu_free[gpu] : cl->node_fence[id].milli[gpu];
    if (fenced) {
        cl->node_fence[id].milli[gpu] = n->gpu_free[gpu];
        cl->node_fence[id].mem[gpu] = n->gpu_mem_free[gpu];
        n->gpu_free[gpu] = 0;
        n->gpu_mem_free[gpu] = 0;
        n->gpu_fenced |= bit;
    } else {
        n->gpu_free[gpu] = cl->node_fence[id].milli[gpu];
        n->gpu_mem_free[gpu] = cl->node_fence[id].mem[gpu];
        n->gpu_fenced &= ~bit;
    }
    if (n->state != SL_NODE_DOWN) cl->cap_free.gpu_milli += fenced ? -shown : shown;
    sl__index_update(cl, id); /* nothing for a node that is not up */
    return 0;
}
