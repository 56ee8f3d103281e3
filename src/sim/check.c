/*
 * check.c - invariants the simulator asserts after every event (--check).
 *
 * The core checks its own bookkeeping (sl_sched_check, sl_cluster_check);
 * this file checks it from the outside, as a differential test: it rebuilds
 * every node's usage from the placements of the running jobs alone and
 * compares it with the node's free capacity and the kinds of GPU tasks it
 * says it runs (sl_node_t.kinds). It also checks that each
 * running job holds all of its tasks (a rigid gang never runs partly) and
 * that nothing is over-allocated (free never negative, never above total).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "sim.h"

typedef struct use {
    int64_t cpu, mem;
    int64_t gpu_milli[SL_MAX_GPUS_PER_NODE];
    int64_t gpu_mem[SL_MAX_GPUS_PER_NODE];
    uint32_t kinds; /* sl_task_kind_bit of every task placed here */
} use_t;

typedef struct check_ctx {
    const sl_cluster_t *cl;
    use_t *use;
    size_t nnodes;
    char *err;
    size_t errlen;
    int rc;
} check_ctx_t;

static int check_job(void *ud, const sl_job_t *job) {
    check_ctx_t *cx = ud;
    const sl_job_spec_t *sp = sl_job_spec(job);
    int32_t n = sl_job_ntasks_placed(job);
    int32_t min = sp->min_tasks > 0 ? sp->min_tasks : sp->ntasks;
    if (n < min || n > sp->ntasks) {
        snprintf(cx->err, cx->errlen, "job %" PRIu64 " runs %d of %d tasks (gang all-or-none)",
                 sl_job_id(job), n, sp->ntasks);
        cx->rc = SL_ESTATE;
        return 1;
    }
    for (int32_t i = 0; i < n; i++) {
        const sl_place_t *pl = sl_job_place(job, i);
        if (!pl || pl->node >= cx->nnodes) {
            snprintf(cx->err, cx->errlen, "job %" PRIu64 " task %d has no valid place",
                     sl_job_id(job), i);
            cx->rc = SL_ESTATE;
            return 1;
        }
        const sl_node_t *nd = sl_cluster_node(cx->cl, pl->node);
        use_t *u = &cx->use[pl->node];
        u->cpu += sp->task.cpu_milli;
        u->mem += sp->task.mem_bytes;
        u->kinds |= sl_task_kind_bit(&sp->task) | (sp->task.exclusive ? SL_KIND_EXCL : 0);
        int bits = __builtin_popcount(pl->gpu_mask);
        int want = sp->task.gpus > 0 ? sp->task.gpus : (sp->task.gpu_milli > 0 ? 1 : 0);
        if (bits != want) {
            snprintf(cx->err, cx->errlen, "job %" PRIu64 " task %d holds %d GPUs, asked %d",
                     sl_job_id(job), i, bits, want);
            cx->rc = SL_ESTATE;
            return 1;
        }
        for (int g = 0; g < SL_MAX_GPUS_PER_NODE; g++) {
            if (!(pl->gpu_mask & (1u << g))) continue;
            if (g >= nd->ngpus) {
                snprintf(cx->err, cx->errlen, "job %" PRIu64 " uses GPU %d of node %s (%d GPUs)",
                         sl_job_id(job), g, nd->name, nd->ngpus);
                cx->rc = SL_ESTATE;
                return 1;
            }
            if (sp->task.gpus > 0) {
                u->gpu_milli[g] += SL_GPU_MILLI;
                u->gpu_mem[g] += nd->gpu_mem_total;
            } else {
                u->gpu_milli[g] += sp->task.gpu_milli;
                u->gpu_mem[g] += pl->gpu_mem_bytes;
            }
        }
    }
    return 0;
}

int sim_check(sl_sched_t *s, char *err, size_t errlen) {
    const sl_cluster_t *cl = sl_sched_cluster(s);
    int rc = sl_sched_check(s);
    if (rc < 0) {
        snprintf(err, errlen, "sl_sched_check failed: %s", sl_strerror(rc));
        return SL_ESTATE;
    }
    if ((rc = sl_cluster_check(cl)) < 0) {
        snprintf(err, errlen, "sl_cluster_check failed: %s", sl_strerror(rc));
        return SL_ESTATE;
    }
    check_ctx_t cx = {cl, NULL, sl_cluster_node_count(cl), err, errlen, 0};
    cx.use = sl_xcalloc(cx.nnodes ? cx.nnodes : 1, sizeof *cx.use);
    sl_sched_foreach(s, SL_JOB_RUNNING, check_job, &cx);
    for (size_t i = 0; i < cx.nnodes && cx.rc == 0; i++) {
        const sl_node_t *nd = sl_cluster_node(cl, (uint32_t)i);
        const use_t *u = &cx.use[i];
        if (nd->cpu_free < 0 || nd->mem_free < 0 || nd->cpu_total - nd->cpu_free != u->cpu ||
            nd->mem_total - nd->mem_free != u->mem) {
            snprintf(err, errlen,
                     "node %s: cpu free %" PRId64 "/%" PRId64 " mem free %" PRId64 "/%" PRId64
                     " but running jobs hold cpu %" PRId64 " mem %" PRId64,
                     nd->name, nd->cpu_free, nd->cpu_total, nd->mem_free, nd->mem_total, u->cpu,
                     u->mem);
            cx.rc = SL_ESTATE;
            break;
        }
        if (nd->kinds != u->kinds) {
            snprintf(err, errlen,
                     "node %s: runs GPU task kinds 0x%x, but its running jobs' tasks are of "
                     "kinds 0x%x",
                     nd->name, nd->kinds, u->kinds);
            cx.rc = SL_ESTATE;
            break;
        }
        for (int g = 0; g < nd->ngpus; g++) {
            if (nd->gpu_free[g] < 0 || SL_GPU_MILLI - nd->gpu_free[g] != u->gpu_milli[g] ||
                nd->gpu_mem_free[g] < 0 || nd->gpu_mem_total - nd->gpu_mem_free[g] != u->gpu_mem[g]) {
                snprintf(err, errlen,
                         "node %s GPU %d: free %d milli, %" PRId64 " memory, but running jobs "
                         "hold %" PRId64 " milli, %" PRId64 " memory (of %" PRId64 ")",
                         nd->name, g, nd->gpu_free[g], nd->gpu_mem_free[g], u->gpu_milli[g],
                         u->gpu_mem[g], nd->gpu_mem_total);
                cx.rc = SL_ESTATE;
                break;
            }
        }
    }
    sl_free(cx.use);
    return cx.rc;
}
