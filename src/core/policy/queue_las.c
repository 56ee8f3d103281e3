/*
 * queue_las.c - least attained service, discretised (Tiresias' 2D-LAS: Gu
 * et al., "Tiresias: A GPU Cluster Manager for Distributed Deep
 * Learning", NSDI'19). A job's attained service is its GPUs times the time
 * it has run, over all its runs (two dimensions: width and time, so a wide
 * job ages faster). Jobs fall into queues by thresholds on it
 * (sl_sched_config_t.las_thresholds_gpu_s): queue 0 below the first
 * threshold, and so on. The lower queue goes first, FIFO (submit time,
 * then id) within a queue. Discretising is what keeps LAS from
 * round-robining among equals: jobs of one queue keep their FIFO order
 * instead of preempting each other as their attained service crosses.
 *
 * A pending job's attained service does not change, so its queue is fixed
 * from the time it is enqueued (sched_queue.c stores it in the job's
 * queue key, which orders each tenant's queue); comparing two tenants'
 * heads by the same key keeps the merge exact. With preemption on
 * (sl_sched_run), a waiting job of a lower queue preempts running jobs of
 * a higher one: a running job's queue is taken from its attained service
 * at that moment (sched_preempt.c), which is how Tiresias demotes a job
 * that has run long. Tiresias also promotes a job that starved (waited
 * longer than a multiple of its last run) to queue 0; we leave that out:
 * every requeued job keeps its submit time, so FIFO within a queue bounds
 * its wait behind later arrivals of the same queue. O(1) per comparison.
 */
#include "sched_internal.h"

static bool las_less(const sl_sched_t *s, const sl_job_t *a, const sl_job_t *b, int64_t now_us) {
    (void)s;
    (void)now_us;
    if (a->qkey != b->qkey) return a->qkey > b->qkey; /* minus the queue: lower queue first */
    return sl__job_submit_less(a, b);
}

const sl_queue_policy_t sl__queue_las = {
    .name = "las",
    .help = "least attained service (Tiresias' discretised 2D-LAS: GPU-time queues, FIFO within)",
    .less = las_less,
};
