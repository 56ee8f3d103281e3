/*
 * queue_wfq.c - the seed's weighted fair queue across tenants.
 *
 * The seed orders tasks by wait_time / normalised tenant weight, where
 * wait_time = now - submit and the normalised weight of a tenant is its
 * weight divided by the sum of the weights of the tenants competing (here:
 * those with pending jobs). The job with the LARGEST key goes first: it has
 * waited longest relative to its tenant's entitlement. (The seed's Python
 * sketch sorts ascending, which would serve the job that waited least and
 * starve old jobs; we build what it means, as SEED.md asks.) Ties: earlier
 * submit, then lower id.
 *
 * Exactness: key_a > key_b  <=>  wait_a / (w_a / W) > wait_b / (w_b / W)
 * <=> wait_a * w_b > wait_b * w_a, because the sum W > 0 is common to both
 * sides. We compare the cross products in 128-bit integers, so the order is
 * exact (floating-point division would break ties arbitrarily) and does not
 * depend on W, which therefore need not be maintained. A job submitted in
 * the future of now_us counts as having waited 0. O(1) per comparison.
 */
#include "sched_internal.h"

__extension__ typedef unsigned __int128 u128;

static bool wfq_less(const sl_sched_t *s, const sl_job_t *a, const sl_job_t *b, int64_t now_us) {
    int64_t wa = now_us - a->spec.submit_us;
    int64_t wb = now_us - b->spec.submit_us;
    if (wa < 0) wa = 0;
    if (wb < 0) wb = 0;
    u128 ka = (u128)(uint64_t)wa * (uint64_t)sl_sched_tenant_weight(s, b->spec.tenant);
    u128 kb = (u128)(uint64_t)wb * (uint64_t)sl_sched_tenant_weight(s, a->spec.tenant);
    if (ka != kb) return ka > kb;
    return sl__job_submit_less(a, b);
}

const sl_queue_policy_t sl__queue_wfq = {
    .name = "wfq",
    .help = "weighted fair queueing: largest wait_time / normalised tenant weight first",
    .less = wfq_less,
};
