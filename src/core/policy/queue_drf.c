/*
 * queue_drf.c - weighted Dominant Resource Fairness (Ghodsi et al., "Dominant
 * Resource Fairness: Fair Allocation of Multiple Resource Types", NSDI'11).
 *
 * A tenant's dominant share is the largest of its CPU, memory and GPU usage,
 * each divided by the cluster's capacity of that resource; with weights it
 * is further divided by the tenant's weight (sl_sched_tenant_share). DRF's
 * progressive filling repeatedly serves the tenant with the lowest weighted
 * dominant share; the scheduling cycle does exactly that because it picks
 * the least tenant head under this order again after every start, and a
 * start raises the starter's share. Equal shares (idle tenants, or exact
 * ties) fall back to submit time, then id. O(1) per comparison: the
 * scheduler caches the cluster capacity during a cycle.
 */
#include "sched_internal.h"

static bool drf_less(const sl_sched_t *s, const sl_job_t *a, const sl_job_t *b, int64_t now_us) {
    (void)now_us;
    if (a->spec.tenant != b->spec.tenant) {
        double sa = sl_sched_tenant_share(s, a->spec.tenant);
        double sb = sl_sched_tenant_share(s, b->spec.tenant);
        if (sa != sb) return sa < sb;
    }
    return sl__job_submit_less(a, b);
}

const sl_queue_policy_t sl__queue_drf = {
    .name = "drf",
    .help = "weighted dominant resource fairness across tenants (lowest share first)",
    .less = drf_less,
};
