/*
 * obs.c - per-tenant job counters and delay histograms for /metrics (see
 * obs.h). A histogram keeps one count per bucket and adds them up when
 * written (metrics.c), so an observation costs a short scan of 19 bounds.
 */
#include "base/obs.h"

#include "sluice/alloc.h"

const int64_t ctl_hist_le_us[CTL_HIST_NB] = {
    100,         250,         1000,        2500,         10000,        25000,     100000,
    250000,      1000000,     2500000,     10000000,     30000000,     120000000, 300000000,
    900000000,   3600000000,  10800000000, 28800000000,  86400000000,
};

const char *const ctl_hist_le_text[CTL_HIST_NB] = {
    "0.0001", "0.00025", "0.001", "0.0025", "0.01", "0.025", "0.1", "0.25", "1",     "2.5",
    "10",     "30",      "120",   "300",    "900",  "3600",  "10800", "28800", "86400",
};

void ctl_hist_observe(ctl_hist_t *h, int64_t us) {
    if (us < 0)
        us = 0;
    int i = 0;
    while (i < CTL_HIST_NB && us > ctl_hist_le_us[i])
        i++;
    h->bucket[i]++;
    h->count++;
    h->sum_us += us;
}

void ctl_obs_init(ctl_obs_t *o, size_t ntenants) {
    o->tenants = sl_xcalloc(ntenants ? ntenants : 1, sizeof *o->tenants);
    o->ntenants = ntenants;
    o->cycle_t0_mono_us = 0;
    o->cycle_decided_us = -1;
    o->frag_wl = NULL;
    o->node_failure = (ctl_hist_t){{0}, 0, 0};
}

void ctl_obs_fini(ctl_obs_t *o) {
    sl_workload_destroy(o->frag_wl);
    o->frag_wl = NULL;
    sl_free(o->tenants);
    o->tenants = NULL;
    o->ntenants = 0;
}

ctl_tenant_obs_t *ctl_obs_tenant(ctl_obs_t *o, int32_t tenant) {
    return tenant >= 0 && (size_t)tenant < o->ntenants ? &o->tenants[tenant] : NULL;
}

void ctl_obs_completed(ctl_obs_t *o, int32_t tenant, ctl_job_state_t st) {
    ctl_tenant_obs_t *t = ctl_obs_tenant(o, tenant);
    if (t == NULL)
        return;
    if (st == CTL_JOB_SUCCEEDED)
        t->completed[CTL_OBS_SUCCEEDED]++;
    else if (st == CTL_JOB_FAILED)
        t->completed[CTL_OBS_FAILED]++;
    else if (st == CTL_JOB_CANCELLED)
        t->completed[CTL_OBS_CANCELLED]++;
}

const char *ctl_obs_final_name(int i) {
    static const char *const names[CTL_OBS_NFINAL] = {"succeeded", "failed", "cancelled"};
    return i >= 0 && i < CTL_OBS_NFINAL ? names[i] : "?";
}
