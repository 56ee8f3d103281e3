/*
 * queue_priority.c - strict priority: the highest priority goes first, then
 * the earliest submit, then the lower id. Within a tenant this is exactly the
 * framework's per-tenant queue order, so comparing tenant heads yields the
 * global priority order. O(1) per comparison.
 */
#include "sched_internal.h"

static bool priority_less(const sl_sched_t *s, const sl_job_t *a, const sl_job_t *b,
                          int64_t now_us) {
    (void)s;
    (void)now_us;
    if (a->spec.priority != b->spec.priority) return a->spec.priority > b->spec.priority;
    return sl__job_submit_less(a, b);
}

const sl_queue_policy_t sl__queue_priority = {
    .name = "priority",
    .help = "highest priority first, then submit time, then id",
    .less = priority_less,
};
