/*
 * queue_fifo.c - first come, first served: the job submitted earliest goes
 * first, lower id on equal submit times. Priorities and tenants play no part
 * across tenants (within a tenant the framework's queue already puts higher
 * priorities first). O(1) per comparison.
 */
#include "sched_internal.h"

static bool fifo_less(const sl_sched_t *s, const sl_job_t *a, const sl_job_t *b, int64_t now_us) {
    (void)s;
    (void)now_us;
    return sl__job_submit_less(a, b);
}

const sl_queue_policy_t sl__queue_fifo = {
    .name = "fifo",
    .help = "first come, first served (submit time, then id)",
    .less = fifo_less,
};
