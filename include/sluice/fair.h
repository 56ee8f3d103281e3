/*
 * fair.h - how fair an allocation is: each tenant's weighted max-min fair
 * share by DRF's progressive filling (Ghodsi et al., "Dominant Resource
 * Fairness: Fair Allocation of Multiple Resource Types", NSDI'11), its
 * share deficit, the DRF fairness ratio and Jain's index. The simulator's
 * report and the controller's /metrics both come from this one function,
 * so a figure read off a replay means what the same figure means live.
 *
 * The resource vector is (CPU milli, memory bytes, GPU milli) of sl_res_t,
 * each divided by the cluster's capacity of that resource (the capacity
 * of up and draining nodes, sl_cluster_capacity's total): a resource the
 * cluster has none of is left out. The dominant share of a vector is its
 * largest such fraction.
 *
 * Demand. A tenant's demand is what it holds (its running tasks) plus what
 * its pending jobs ask for (every task of each, ntasks of an elastic job).
 *
 * Fair share. Progressive filling grows every tenant's allocation along
 * its own demand vector (the mix of resources its jobs ask for) so that
 * its dominant share rises at a rate proportional to its weight: at
 * "water level" L a tenant not yet stopped has dominant share weight * L,
 * so weights enter here and only here (a tenant of weight 2 gets twice the
 * dominant share of a tenant of weight 1 when both want more). A tenant
 * stops when it reaches its demand (its surplus then goes on to the
 * others), or when a resource it uses runs out (the sum of every
 * tenant's allocation of that resource reaches the capacity; DRF stops
 * all tenants that use it, and tenants that do not use it go on). Each
 * tenant's fair share is its dominant share when it stopped: its weighted
 * max-min fair share given every tenant's demand. It ignores where tasks
 * fit (nodes, GPU models, gangs): it is what the tenant is owed, not what
 * any placement can give it.
 *
 * Share deficit = fair share - held share (both unweighted dominant
 * shares, -1..1): positive when the tenant holds less than it is owed,
 * negative when it holds more. A tenant with nothing pending never has a
 * positive deficit (its demand is what it holds, and its fair share is at
 * most its demand).
 *
 * Backlogged tenants are those with pending jobs; the summary ranges over
 * those whose fair share is positive (a tenant asking only for a resource
 * the cluster lacks is owed nothing and cannot be starved of it). With x_i
 * = held share / fair share of such a tenant:
 *
 *  - DRF fairness ratio = min over them of min(1, x_i): 1 when every
 *    backlogged tenant holds at least its fair share, falling towards 0
 *    as the worst-served one is starved. Why not min/max of the weighted
 *    dominant shares (DESIGN.md's first wording, and the simulator's
 *    before the fair shares)? That compares what tenants hold without what they
 *    ask for: a tenant that wants two GPUs and holds one reads as starved
 *    next to one holding half the cluster, and a tenant whose demand is
 *    met counts like one that waits, so fifo and drf read alike on the
 *    Philly replay (0.42-0.43 at --load 8). Measuring against the fair
 *    share given demands reads 1 whenever DRF's own allocation is reached.
 *  - Jain's index (Jain, Chiu, Hawe 1984) of the x_i: (sum x)^2 / (m sum
 *    x^2) over the m tenants, from 1/m (one tenant holds everything
 *    relative to its share) to 1 (all hold the same fraction of what they
 *    are owed). x_i is not capped: holding more than one's share while
 *    others wait is the inequality the index is for.
 *
 * With no such tenant both read 1 (nothing waits that anyone owes), and
 * the caller may choose not to report them (the simulator leaves such
 * spans out of its time-weighted means).
 */
#ifndef SLUICE_FAIR_H
#define SLUICE_FAIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice/resources.h"

typedef struct sl_fair_tenant {
    /* in */
    int32_t weight;    /* >= 0; 0 is taken as 1 (as sl_tenant_spec_t) */
    sl_res_t held;     /* what its running tasks hold; components >= 0 */
    sl_res_t pending;  /* what its pending jobs ask for; components >= 0 */
    bool backlogged;   /* it has pending jobs (even ones asking for nothing) */
    /* out */
    double fair_share; /* weighted max-min fair dominant share, 0..1 */
    double held_share; /* dominant share of held, 0 (and more than 1 only if held > capacity) */
    double deficit;    /* fair_share - held_share */
} sl_fair_tenant_t;

typedef struct sl_fair_summary {
    size_t counted;    /* backlogged tenants with a positive fair share */
    double drf_ratio;  /* min over them of min(1, held/fair); 1 if counted == 0 */
    double jain;       /* Jain's index of held/fair over them; 1 if counted == 0 or all hold 0 */
} sl_fair_summary_t;

/*
 * Computes the fair share, held share and deficit of each of t[0..n-1]
 * (the "out" fields) over capacity cap, and the summary into *sum (may be
 * NULL). Returns 0, or SL_EINVAL (nothing written) if t is NULL with n > 0
 * or a weight, a capacity or a resource amount is negative. Allocates
 * O(n) scratch (aborts on OOM). O(n log n): the tenants are sorted once by
 * the level at which their demand is met, and each of the three resources
 * runs out at most once.
 */
int sl_fair_compute(sl_res_t cap, sl_fair_tenant_t *t, size_t n, sl_fair_summary_t *sum);

#endif
