/*
 * sched_fair.c - the scheduler's tenants seen through sluice/fair.h: what
 * each holds and has pending, weighed by the fair shares of DRF's
 * progressive filling over the cluster's capacity. The simulator and the
 * controller both call this, so their fairness figures are the same.
 * O(tenants log tenants): the per-tenant sums are kept as jobs start,
 * end and queue.
 */
#include "sched_internal.h"
#include "sluice/fair.h"

int sl_sched_fairness(const sl_sched_t *s, sl_fair_tenant_t *out, size_t n,
                      sl_fair_summary_t *sum) {
    if (n != s->ntenants || (n > 0 && !out)) return SL_EINVAL;
    for (size_t i = 0; i < n; i++) {
        const tenant_t *t = &s->tenants[i];
        out[i] = (sl_fair_tenant_t){.weight = t->weight,
                                    .held = t->usage,
                                    .pending = t->pend,
                                    .backlogged = t->npending > 0};
    }
    sl_res_t cap;
    sl_cluster_capacity(s->cl, &cap, NULL);
    return sl_fair_compute(cap, out, n, sum);
}
