/*
 * queue_wfq.c - weighted fair queueing across tenants: start-time fair
 * queueing (Goyal, Vin and Cheng, "Start-Time Fair Queueing", SIGCOMM'96)
 * with jobs as packets and a job's cost as its length.
 *
 * Each tenant t has a virtual time F_t: the finish tag of the last job it
 * started, which is the start tag of its next one. The scheduler has a
 * system virtual time V: the largest start tag of any job started so far
 * (in SFQ, the start tag of the packet in service; it never decreases).
 *
 *  - Order: the tenant whose next job has the smallest start tag F_t goes
 *    first; equal tags fall back to submit time, then id.
 *  - Start: a job of tenant t that starts gets the start tag S = F_t, then
 *    F_t = S + cost / w_t and V = max(V, S) (sl__wfq_charge).
 *  - Catch-up: a tenant whose queue was empty and gets a job takes
 *    F_t = max(F_t, V) (sched_queue.c, sl__enqueue). A tenant that was idle
 *    therefore banks no credit: it rejoins at the system's virtual time
 *    instead of at the tag it left with, and does not starve the others
 *    for as long as it was away.
 *  - Cost: the job's dominant share (the largest of its CPU, memory and
 *    GPU over the cluster's capacity, for the tasks that start) times its
 *    time limit in seconds, or the scheduler's default limit, or
 *    SL__WFQ_DEFAULT_LIMIT_S when neither is set. A tenant of weight 2
 *    advances its tag half as fast per unit of work as one of weight 1, so
 *    while both are backlogged it starts twice the work.
 *
 * The seed's key, wait_time / normalised weight (largest first), served a
 * heavier tenant's jobs LATER: a large weight shrinks the key. It also had
 * no memory, so a tenant that had just run for a day ranked as one that
 * had not. docs/placement.md compares the two.
 *
 * Only the starting tenant's tag changes when a job starts, so the cycle's
 * heap of tenant heads stays valid after fixing its top. O(1) per
 * comparison and per start.
 */
#include "sched_internal.h"

static bool wfq_less(const sl_sched_t *s, const sl_job_t *a, const sl_job_t *b, int64_t now_us) {
    (void)now_us;
    if (a->spec.tenant != b->spec.tenant) {
        double fa = tenant_of(s, a)->vtag, fb = tenant_of(s, b)->vtag;
        if (fa != fb) return fa < fb;
    }
    return sl__job_submit_less(a, b);
}

static double ratio(int64_t used, int64_t cap) {
    return cap > 0 ? (double)used / (double)cap : 0.0;
}

void sl__wfq_charge(sl_sched_t *s, const sl_job_t *j, sl_res_t total) {
    tenant_t *t = tenant_of(s, j);
    sl_res_t cap = s->cap;
    if (!s->cap_valid) sl_cluster_capacity(s->cl, &cap, NULL);
    double share = ratio(total.cpu_milli, cap.cpu_milli);
    double r = ratio(total.mem_bytes, cap.mem_bytes);
    if (r > share) share = r;
    r = ratio(total.gpu_milli, cap.gpu_milli);
    if (r > share) share = r;
    int64_t lim = j->spec.time_limit_us > 0 ? j->spec.time_limit_us : s->default_limit_us;
    double secs = lim > 0 ? (double)lim / 1e6 : (double)SL__WFQ_DEFAULT_LIMIT_S;
    double start = t->vtag;
    if (start > s->vnow) s->vnow = start;
    t->vtag = start + share * secs / (double)(t->weight > 0 ? t->weight : 1);
}

const sl_queue_policy_t sl__queue_wfq = {
    .name = "wfq",
    .help = "weighted fair queueing (start-time fair queueing): the tenant whose next job has "
            "the smallest virtual start tag first; cost = dominant share x time limit / weight",
    .less = wfq_less,
};
