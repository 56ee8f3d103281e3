/*
 * drain.c - node drains (drain.h).
 *
 * State lives on the node record (ctl_node_t.draining and the rest) and in
 * the node_drain table; the core only knows the node as draining, which
 * keeps every placement off it. The deadline is checked by the sweep (at
 * most every 500 ms), so tasks are stopped within a sweep period of it.
 * Stopping goes through the core's eviction and ctl_job_preempt: a gang
 * with one task on the node is stopped and requeued whole (Sluice never
 * runs part of a gang), and each stop is recorded as a preemption of kind
 * "drain".
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "domain/drain.h"
#include "log.h"
#include "store/store.h"

static ctl_node_t *find(ctl_t *c, const char *name, char *err, size_t errlen) {
    const sl_node_t *nd = name ? sl_cluster_find_node(c->cl, name) : NULL;
    if (nd == NULL) {
        snprintf(err, errlen, "node: no node called \"%s\" has registered", name ? name : "");
        return NULL;
    }
    ctl_node_t *n = ctl_node_get(c, nd->id);
    return n ? n : ctl_node_new(c, nd->id);
}

/* "2026-12-01 06:30:00 UTC" in local time, for logs and reasons. */
static void local_time(int64_t us, char *buf, size_t len) {
    time_t t = (time_t)(us / 1000000);
    struct tm tm;
    if (localtime_r(&t, &tm) == NULL || strftime(buf, len, "%Y-%m-%d %H:%M:%S %Z", &tm) == 0)
        snprintf(buf, len, "%lld s since the epoch", (long long)(us / 1000000));
}

/* Preempts every job with a live task on n (the deadline passed), through
 * the core (sl_sched_evict_node), which marks them stopping and counts the
 * preemption; a job already stopping is left to finish its stop. */
static void stop_tasks(ctl_t *c, ctl_node_t *n) {
    char when[64], reason[224];
    local_time(n->drain_deadline_us, when, sizeof when);
    snprintf(reason, sizeof reason, "node %.40s drained at its deadline (%.40s)%s%.100s",
             ctl_node_name(c, (int32_t)n->id), when, n->drain_reason[0] ? ": " : "", n->drain_reason);
    int k = ctl_preempt_evict(c, n->id, true, 0, "drain", CTL_PREEMPT_DRAIN, reason);
    if (!n->drain_stopped)
        sl_log(SL_LOG_INFO, "node", "node=%s drain deadline passed: %d job(s) preempted",
               ctl_node_name(c, (int32_t)n->id), k);
    n->drain_stopped = true;
}

/* What a drain does now: the deadline's stop, then drained. */
static void check(ctl_t *c, ctl_node_t *n, int64_t now_us) {
    if (!n->draining)
        return;
    /* Each sweep past the deadline, so that a job that was stopping for
     * another reason (a shrink) is preempted once that is over. */
    if (n->drain_deadline_us >= 0 && now_us >= n->drain_deadline_us && n->live_tasks > 0)
        stop_tasks(c, n);
    if (!n->drained && n->live_tasks == 0) {
        n->drained = true;
        n->drained_us = now_us;
        ctl_store_drain_put(c->store, ctl_node_name(c, (int32_t)n->id), n);
        sl_log(SL_LOG_INFO, "node", "node=%s drained", ctl_node_name(c, (int32_t)n->id));
    }
}

int ctl_node_drain(ctl_t *c, const char *name, int64_t deadline_us, const char *reason, char *err,
                   size_t errlen) {
    ctl_node_t *n = find(c, name, err, errlen);
    if (n == NULL)
        return SL_ENOENT;
    int64_t now = ctl_now_us();
    if (!n->draining) {
        n->drain_since_us = now;
        n->drained = false;
        n->drained_us = -1;
    }
    n->draining = true;
    n->drain_stopped = false;
    n->drain_deadline_us = deadline_us;
    snprintf(n->drain_reason, sizeof n->drain_reason, "%s", reason ? reason : "");
    if (sl_cluster_node(c->cl, n->id)->state != SL_NODE_DOWN)
        sl_cluster_set_state(c->cl, n->id, SL_NODE_DRAINING);
    ctl_store_drain_put(c->store, name, n);
    char when[64] = "none";
    if (deadline_us >= 0)
        local_time(deadline_us, when, sizeof when);
    sl_log(SL_LOG_INFO, "node", "node=%s draining: tasks=%d deadline=\"%s\" reason=\"%s\"", name,
           n->live_tasks, when, n->drain_reason);
    check(c, n, now);
    ctl_watch_node(c, n->id, "node.draining");
    ctl_store_commit(c->store); /* durable before the caller answers */
    c->sched_dirty = true;
    ctl_loop_kick(c->loop);
    return 0;
}

int ctl_node_resume(ctl_t *c, const char *name, char *err, size_t errlen) {
    ctl_node_t *n = find(c, name, err, errlen);
    if (n == NULL)
        return SL_ENOENT;
    if (!n->draining) {
        snprintf(err, errlen, "node: %s is not draining", name);
        return SL_ESTATE;
    }
    n->draining = n->drained = n->drain_stopped = false;
    n->drain_deadline_us = n->drained_us = -1;
    n->drain_reason[0] = '\0';
    if (sl_cluster_node(c->cl, n->id)->state == SL_NODE_DRAINING)
        sl_cluster_set_state(c->cl, n->id, ctl_node_up_state(c, n->id)); /* up if connected */
    ctl_store_drain_delete(c->store, name);
    ctl_store_commit(c->store);
    sl_log(SL_LOG_INFO, "node", "node=%s resumed", name);
    ctl_watch_node(c, n->id, "node.resumed");
    c->sched_dirty = true; /* its capacity is there again for waiting work */
    ctl_loop_kick(c->loop);
    return 0;
}

static int drain_row(void *ud, const char *name, const char *reason, int64_t deadline_us,
                     int64_t since_us, int64_t drained_us) {
    ctl_t *c = ud;
    const sl_node_t *nd = sl_cluster_find_node(c->cl, name);
    ctl_node_t *n = nd ? ctl_node_get(c, nd->id) : NULL;
    if (n == NULL) {
        sl_log(SL_LOG_WARN, "store", "node=%s drain not restored: the node is not known", name);
        return 0;
    }
    n->draining = true;
    n->drain_since_us = since_us;
    n->drain_deadline_us = deadline_us;
    n->drained_us = drained_us;
    n->drained = drained_us >= 0;
    snprintf(n->drain_reason, sizeof n->drain_reason, "%s", reason);
    if (nd->state != SL_NODE_DOWN)
        sl_cluster_set_state(c->cl, nd->id, SL_NODE_DRAINING);
    return 0;
}

int ctl_drains_restore(ctl_t *c) {
    return ctl_store_drains_read(c->store, drain_row, c);
}

void ctl_drain_sweep(ctl_t *c) {
    int64_t now = ctl_now_us();
    for (size_t i = 0; i < c->nnodes; i++)
        if (c->nodes[i] != NULL && c->nodes[i]->draining)
            check(c, c->nodes[i], now);
}
