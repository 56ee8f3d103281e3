/*
 * health.c - GPU and node faults acted on (health.h).
 *
 * Each heartbeat's report is compared with what the node's record held:
 * an increase of a GPU's XID count is a new fault (counted by XID for
 * /metrics, and acted on when the catalogue says it is the application's);
 * a GPU reported unhealthy (or degraded, with degraded: fence) that is not
 * fenced yet is fenced and the jobs on it are stopped; a node-level fault
 * drains the node. GPUs a present report does not list are healthy. A
 * report never un-fences by itself: the sweep does, for clear: check,
 * once the GPU has been healthy for clear_after and is not pinned.
 *
 * Stopping goes through the core (sl_sched_evict_gpus, or
 * sl_sched_evict_node for a node-level fault) and ctl_job_preempt, as a
 * drain's deadline does, so a gang loses all its tasks at once, each with
 * its class's signal and grace, and is requeued whole with its submit time
 * and id; a job whose on_node_failure is fail is failed instead, with the
 * same reason.
 */
#include <stdio.h>
#include <string.h>

#include "domain/health.h"
#include "domain/preempt.h"
#include "log.h"
#include "store/store.h"

static ctl_health_t *hs(ctl_t *c) {
    if (c->health == NULL) c->health = sl_xcalloc(1, sizeof *c->health);
    return c->health;
}

static ctl_node_health_t *rec(ctl_t *c, uint32_t id) {
    ctl_health_t *h = hs(c);
    if (id >= h->n) {
        size_t n = id + 1 > 2 * h->n ? id + 1 : 2 * h->n;
        h->nodes = sl_xrealloc(h->nodes, n * sizeof *h->nodes);
        memset(h->nodes + h->n, 0, (n - h->n) * sizeof *h->nodes);
        h->n = n;
    }
    if (h->nodes[id] == NULL) h->nodes[id] = sl_xcalloc(1, sizeof *h->nodes[id]);
    return h->nodes[id];
}

const ctl_node_health_t *ctl_health_node(const ctl_t *c, uint32_t id) {
    return c->health && id < c->health->n ? c->health->nodes[id] : NULL;
}

void ctl_health_fini(ctl_t *c) {
    if (c->health == NULL) return;
    for (size_t i = 0; i < c->health->n; i++) sl_free(c->health->nodes[i]);
    sl_free(c->health->nodes);
    sl_free(c->health);
    c->health = NULL;
}

/* ---- stopping the jobs on a GPU or node ---- */

/* The ids of the jobs with a live task on node on a GPU of mask (all:
 * any task there), and, with before_us > 0, started by then, at most max,
 * into ids; their count. */
static size_t jobs_on(ctl_t *c, uint32_t node, uint32_t mask, bool all, int64_t before_us,
                      uint64_t *ids, size_t max) {
    ctl_node_t *n = ctl_node_get(c, node);
    size_t k = 0;
    if (n == NULL) return 0;
    sl_list_t *it;
    SL_LIST_FOREACH(it, &n->tasks) {
        ctl_task_t *t = SL_LIST_ENTRY(it, ctl_task_t, node_link);
        if (!ctl_task_is_live(t) || !(all || (t->gpu_mask & mask))) continue;
        if (before_us > 0 && (t->start_us < 0 || t->start_us > before_us)) continue;
        bool seen = false;
        for (size_t i = 0; i < k && !seen; i++) seen = ids[i] == t->job->id;
        if (!seen && k < max) ids[k++] = t->job->id;
    }
    return k;
}

/* Stops the jobs on node's GPUs of mask (all: every job there): fails
 * those that ask so (on_node_failure: fail, or fail_all), preempts and
 * requeues the others. Returns the jobs stopped. */
static int stop_jobs(ctl_t *c, uint32_t node, uint32_t mask, bool all, bool fail_all,
                     int64_t before_us, const char *reason) {
    uint64_t ids[256];
    size_t k = jobs_on(c, node, mask, all, before_us, ids, 256);
    int n = 0;
    for (size_t i = 0; i < k; i++) {
        ctl_job_t *j = ctl_job_find(c, ids[i]);
        if (j && j->state == CTL_JOB_RUNNING && (fail_all || !j->requeue_on_node_failure)) {
            ctl_job_fail(c, j, reason);
            n++;
        }
    }
    if (fail_all) return n;
    int e = ctl_preempt_evict(c, node, all, mask, "health", CTL_PREEMPT_HEALTH, reason);
    return n + (e > 0 ? e : 0);
}

/* ---- fences ---- */

static void fence(ctl_t *c, uint32_t node, int g, const char *reason) {
    ctl_node_health_t *r = rec(c, node);
    ctl_gpu_health_t *gh = &r->gpu[g];
    const char *name = ctl_node_name(c, (int32_t)node);
    if (!gh->fenced) {
        int64_t now = ctl_now_us();
        if (now - gh->window_start_us > c->cfg.health.flap_window_ms * 1000) {
            gh->window_start_us = now;
            gh->faults = 0;
        }
        gh->faults++;
        gh->pinned = gh->pinned || gh->faults >= c->cfg.health.flap_limit;
        gh->fenced = true;
        gh->fenced_us = now;
        gh->healthy_since_mono_us = 0;
        snprintf(gh->fence_reason, sizeof gh->fence_reason, "%s", reason);
        sl_cluster_fence_gpu(c->cl, node, g, true);
        hs(c)->fences++;
        ctl_store_gpu_fence_put(c->store, name, g, gh->fence_reason, gh->fenced_us, gh->faults, gh->pinned);
        sl_log(SL_LOG_WARN, "health", "node=%s gpu=%d fenced faults=%d%s reason=\"%s\"", name, g,
               (int)gh->faults, gh->pinned ? " pinned (flapping: only resume returns it)" : "", reason);
        c->sched_dirty = true;
    }
    int k = stop_jobs(c, node, 1u << g, false, false, 0, reason);
    if (k > 0) sl_log(SL_LOG_INFO, "health", "node=%s gpu=%d jobs stopped=%d", name, g, k);
}

static void unfence(ctl_t *c, uint32_t node, int g, const char *why) {
    ctl_gpu_health_t *gh = &rec(c, node)->gpu[g];
    if (!gh->fenced) return;
    gh->fenced = false;
    gh->fence_reason[0] = '\0';
    sl_cluster_fence_gpu(c->cl, node, g, false);
    const char *name = ctl_node_name(c, (int32_t)node);
    ctl_store_gpu_fence_delete(c->store, name, g);
    sl_log(SL_LOG_INFO, "health", "node=%s gpu=%d returned to service (%s)", name, g, why);
    c->sched_dirty = true;
}

/* A node-level fault: its jobs stopped with reason, the node drained. */
static void node_fault(ctl_t *c, uint32_t node, const char *reason) {
    ctl_node_health_t *r = rec(c, node);
    ctl_node_t *n = ctl_node_get(c, node);
    r->healthy_since_mono_us = 0;
    if (!c->cfg.health.node_drain || (n && n->draining)) return;
    stop_jobs(c, node, 0, true, false, 0, reason);
    char err[160];
    char dr[120];
    snprintf(dr, sizeof dr, "health: %.110s", reason);
    if (ctl_node_drain(c, ctl_node_name(c, (int32_t)node), -1, dr, err, sizeof err) == 0)
        r->drained_by_health = true;
}

/* ---- reports ---- */

static bool acts_on(const ctl_t *c, sl_health_state_t s) {
    return s == SL_HEALTH_UNHEALTHY || (s == SL_HEALTH_DEGRADED && c->cfg.health.fence_degraded);
}

/* GPU g of node reported as e (NULL: not listed, so healthy and no XIDs). */
static void gpu_report(ctl_t *c, uint32_t node, int g, const sl_proto_gpu_health_t *e) {
    ctl_node_health_t *r = rec(c, node);
    ctl_gpu_health_t *gh = &r->gpu[g];
    const char *name = ctl_node_name(c, (int32_t)node);
    int64_t xids = e ? e->xids : 0;
    int32_t xid = e ? e->xid : 0;
    if (xids < gh->xids) gh->xids = 0; /* the agent restarted: its count did too */
    /* An XID is new when the count grew, and it came after sluiced started
     * (a restarted controller sees the agent's count from zero: the XIDs
     * before it were acted on already, or missed). */
    int64_t xid_us = e ? (int64_t)(e->xid_time * 1e6) : 0;
    bool new_xid = xids > gh->xids && xid > 0 && (xid_us == 0 || xid_us >= c->started_us);
    if (new_xid) hs(c)->faults[xid < CTL_HEALTH_XIDS ? xid : CTL_HEALTH_XIDS] += (uint64_t)(xids - gh->xids);
    gh->xids = xids;
    gh->xid = xid;
    gh->state = e ? e->state : SL_HEALTH_HEALTHY;
    gh->reason = e ? e->reason : SL_HREASON_NONE;
    snprintf(gh->message, sizeof gh->message, "%s", e && e->message ? e->message : "");
    char reason[224];
    snprintf(reason, sizeof reason, "GPU %d of %.63s: %.140s", g, name,
             gh->message[0] ? gh->message : sl_health_reason_name(gh->reason));
    sl_xid_info_t x = sl_xid_classify(xid);
    if (new_xid && x.action == SL_XID_APP) {
        char app[224];
        snprintf(app, sizeof app, "GPU %d of %.63s: XID %d, %s (the application's fault)", g, name,
                 (int)xid, x.what);
        sl_log(SL_LOG_INFO, "health", "node=%s gpu=%d xid=%d application fault", name, g, (int)xid);
        /* The job that ran there when the XID came (a job started since is
         * not its cause). */
        if (c->cfg.health.fail_app_xid)
            stop_jobs(c, node, 1u << g, false, true, xid_us > 0 ? xid_us : ctl_now_us(), app);
    }
    if (acts_on(c, gh->state)) {
        gh->healthy_since_mono_us = 0;
        if (c->cfg.health.gpu_fault == CTL_GPU_FAULT_FENCE) fence(c, node, g, reason);
        bool reboot = gh->reason == SL_HREASON_XID && x.action == SL_XID_REBOOT;
        if (reboot || c->cfg.health.gpu_fault == CTL_GPU_FAULT_DRAIN) node_fault(c, node, reason);
    } else if (gh->healthy_since_mono_us == 0) {
        gh->healthy_since_mono_us = ctl_mono_us();
    }
}

void ctl_health_report(ctl_t *c, uint32_t node, const sl_proto_health_t *h) {
    const sl_node_t *nd = sl_cluster_node(c->cl, node);
    if (nd == NULL || !h->present) return;
    ctl_node_health_t *r = rec(c, node);
    const sl_proto_gpu_health_t *by[SL_MAX_GPUS_PER_NODE] = {0};
    for (size_t i = 0; i < h->ngpus; i++)
        if (h->gpus[i].gpu < nd->ngpus) by[h->gpus[i].gpu] = &h->gpus[i];
    for (int g = 0; g < nd->ngpus; g++) gpu_report(c, node, g, by[g]);
    r->state = h->state;
    r->reason = h->reason;
    snprintf(r->message, sizeof r->message, "%s", h->message ? h->message : "");
    if (h->state == SL_HEALTH_UNHEALTHY) {
        char reason[224];
        snprintf(reason, sizeof reason, "node %.63s: %.140s", nd->name,
                 r->message[0] ? r->message : sl_health_reason_name(r->reason));
        node_fault(c, node, reason);
    } else if (r->healthy_since_mono_us == 0) {
        r->healthy_since_mono_us = ctl_mono_us();
    }
    ctl_loop_kick(c->loop);
}

int ctl_health_resume(ctl_t *c, const char *name) {
    const sl_node_t *nd = name ? sl_cluster_find_node(c->cl, name) : NULL;
    if (nd == NULL) return SL_ENOENT;
    const ctl_node_health_t *known = ctl_health_node(c, nd->id);
    if (known == NULL) return 0;
    ctl_node_health_t *r = rec(c, nd->id);
    int k = 0;
    for (int g = 0; g < nd->ngpus; g++) {
        k += r->gpu[g].fenced;
        unfence(c, nd->id, g, "resumed");
        r->gpu[g].faults = 0;
        r->gpu[g].pinned = false;
    }
    r->drained_by_health = false;
    ctl_store_commit(c->store);
    ctl_loop_kick(c->loop);
    return k;
}

static int fence_row(void *ud, const char *node, int32_t gpu, const char *reason, int64_t since_us,
                     int32_t faults, bool pinned) {
    ctl_t *c = ud;
    const sl_node_t *nd = sl_cluster_find_node(c->cl, node);
    if (nd == NULL || gpu < 0 || gpu >= nd->ngpus) {
        sl_log(SL_LOG_WARN, "store", "node=%s gpu=%d fence not restored: no such GPU", node, (int)gpu);
        return 0;
    }
    ctl_gpu_health_t *gh = &rec(c, nd->id)->gpu[gpu];
    gh->fenced = true;
    gh->pinned = pinned;
    gh->faults = faults;
    gh->fenced_us = since_us;
    gh->window_start_us = since_us;
    gh->state = SL_HEALTH_UNHEALTHY; /* until its agent says otherwise */
    snprintf(gh->fence_reason, sizeof gh->fence_reason, "%s", reason);
    sl_cluster_fence_gpu(c->cl, nd->id, gpu, true);
    return 0;
}

int ctl_health_restore(ctl_t *c) {
    return ctl_store_gpu_fences_read(c->store, fence_row, c);
}

void ctl_health_sweep(ctl_t *c) {
    if (c->health == NULL || c->cfg.health.clear != CTL_CLEAR_CHECK) return;
    int64_t mono = ctl_mono_us(), after = c->cfg.health.clear_after_ms * 1000;
    for (size_t i = 0; i < c->health->n; i++) {
        ctl_node_health_t *r = c->health->nodes[i];
        const sl_node_t *nd = sl_cluster_node(c->cl, (uint32_t)i);
        if (r == NULL || nd == NULL) continue;
        for (int g = 0; g < nd->ngpus; g++) {
            ctl_gpu_health_t *gh = &r->gpu[g];
            if (gh->fenced && !gh->pinned && gh->healthy_since_mono_us > 0 &&
                mono - gh->healthy_since_mono_us >= after)
                unfence(c, (uint32_t)i, g, "its checks passed");
        }
        ctl_node_t *n = ctl_node_get(c, (uint32_t)i);
        bool any_fenced_reboot = false;
        for (int g = 0; g < nd->ngpus; g++) any_fenced_reboot |= r->gpu[g].fenced && r->gpu[g].pinned;
        if (r->drained_by_health && n && n->draining && r->healthy_since_mono_us > 0 &&
            mono - r->healthy_since_mono_us >= after && !any_fenced_reboot) {
            bool gpus_ok = true;
            for (int g = 0; g < nd->ngpus; g++) gpus_ok &= !acts_on(c, r->gpu[g].state);
            char err[160];
            if (gpus_ok && ctl_node_resume(c, nd->name, err, sizeof err) == 0) {
                r->drained_by_health = false;
                sl_log(SL_LOG_INFO, "health", "node=%s resumed: its checks passed", nd->name);
            }
        }
    }
}
