/*
 * obs.h - what sluiced observes about jobs for /metrics (obs.c): per
 * tenant, jobs completed by final state, and histograms of queueing delay
 * (submit to start) and scheduling delay (the scheduler's decision time).
 *
 * The domain (jobs.c) records; the metrics view (metrics.c) reads. All of
 * it lives in memory and starts from zero when sluiced starts, as every
 * counter of /metrics does: Prometheus treats a counter or histogram that
 * goes down as a reset, so rate() and histogram_quantile() over a window
 * stay right across a restart. Memory: O(tenants), fixed at start-up, so
 * the tenant label takes only configured tenants' names.
 */
#ifndef SLUICE_CTL_OBS_H
#define SLUICE_CTL_OBS_H

#include <stddef.h>
#include <stdint.h>

#include "base/model.h"
#include "sluice/workload.h"

/*
 * Histogram buckets, in seconds: 100 us to one day in steps of x2.5 to x4
 * (0.0001, 0.00025, 0.001, 0.0025, 0.01, 0.025, 0.1, 0.25, 1, 2.5, 10, 30,
 * 120, 300, 900, 3600, 10800, 28800, 86400, then +Inf), so that one table
 * resolves a scheduling decision of a fraction of a millisecond and a
 * queueing delay of hours. Bounds are kept in microseconds (integers, so
 * that "le" is exact) next to their text form.
 */
#define CTL_HIST_NB 19
extern const int64_t ctl_hist_le_us[CTL_HIST_NB];
extern const char *const ctl_hist_le_text[CTL_HIST_NB];

typedef struct ctl_hist {
    uint64_t bucket[CTL_HIST_NB + 1]; /* per bucket, not cumulative; last = above every bound */
    uint64_t count;
    int64_t sum_us;
} ctl_hist_t;

/* Adds one observation of us microseconds (negative counts as 0). O(buckets). */
void ctl_hist_observe(ctl_hist_t *h, int64_t us);

/* The final states a job completes in (sluice_jobs_completed_total's state label). */
enum { CTL_OBS_SUCCEEDED = 0, CTL_OBS_FAILED, CTL_OBS_CANCELLED, CTL_OBS_NFINAL };

typedef struct ctl_tenant_obs {
    uint64_t completed[CTL_OBS_NFINAL];
    ctl_hist_t queueing;   /* submit to first start */
    ctl_hist_t scheduling; /* decision time of the cycle that started the job */
} ctl_tenant_obs_t;

typedef struct ctl_obs {
    ctl_tenant_obs_t *tenants; /* by core tenant id */
    size_t ntenants;
    /* The cycle being run (jobs.c): its start on the monotonic clock, and
     * how long its decisions took once its first start is reported (-1
     * until then). */
    int64_t cycle_t0_mono_us;
    int64_t cycle_decided_us;
    /* Scratch of the fragmentation gauge (metrics.c): the pending tasks'
     * shapes, kept across scrapes so that its memo is allocated once.
     * NULL until the first scrape with pending jobs; owned. */
    sl_workload_t *frag_wl;
    /* How long each node failure took to handle (jobs.c, ctl_node_failed:
     * the node marked down, each of its tasks lost and its job requeued or
     * failed), so that its cost can be seen to follow the node's tasks,
     * not the jobs ever submitted (docs/scale.md). */
    ctl_hist_t node_failure;
} ctl_obs_t;

/* Sizes o for ntenants tenants, all zero. Can't fail (aborts on OOM). */
void ctl_obs_init(ctl_obs_t *o, size_t ntenants);
/* Frees what ctl_obs_init allocated; accepts an o never initialised (zeroed). */
void ctl_obs_fini(ctl_obs_t *o);
/* The tenant's record, or NULL for a tenant id that is not configured (-1). */
ctl_tenant_obs_t *ctl_obs_tenant(ctl_obs_t *o, int32_t tenant);
/* Counts a job of tenant that completed in st (SUCCEEDED, FAILED or
 * CANCELLED; others and unknown tenants are ignored). O(1). */
void ctl_obs_completed(ctl_obs_t *o, int32_t tenant, ctl_job_state_t st);
/* The state label of final state i (CTL_OBS_*). */
const char *ctl_obs_final_name(int i);

#endif
