/*
 * launch.c - launches that were never acknowledged (launch.h).
 *
 * A task is launching from its placement until its agent reports it
 * started (or failed, or ended). The two ways such a task can be stuck are
 * handled here, both by the one requeue below (unlaunched): its agent's
 * connection closes (the node also stops taking placements until the next
 * hello: nodes.c's up state counts the connection), or launch_timeout
 * passes without an answer (the sweep, every node_timeout / 4 at most 500
 * ms, walks the live tasks of connected nodes: a few hundred per node).
 *
 * Why the connection's case needs no fence: an agent that closed its side
 * reads nothing more from it, and one that read the launch reported the
 * start in the same loop pass (task.c), so a launch still unacknowledged
 * when the close arrives was never started. A timeout proves nothing of
 * the kind (the agent may be stopped and read it when resumed), so its
 * requeue waits for the node's fence time: by then the agent has either
 * answered (and the kill sent after the launch stops a late start) or
 * fenced itself and dropped what it held unread (docs/protocol.md).
 */
#include <stdio.h>

#include "domain/jobnotify.h"
#include "domain/jobs.h"
#include "domain/launch.h"
#include "log.h"

/* Task i of j was never acknowledged by its agent (why): the task
 * is lost, its job requeued (its other tasks stopped) no earlier than
 * until_mono_us (1: at once). A job already ending keeps its state. */
static void unlaunched(ctl_t *c, ctl_job_t *j, int32_t i, const char *why, int64_t until_mono_us) {
    if (j->state == CTL_JOB_RUNNING) {
        j->state = CTL_JOB_PENDING;
        j->requeue_wait = true;
        j->requeues++;
        c->n.requeues++;
        snprintf(j->reason, sizeof j->reason, "requeued: %s", why);
        sl_log(SL_LOG_WARN, "sched", "job=%llu requeued: %s", (unsigned long long)j->id, why);
        ctl_notify_job(c, j, CTL_NOTIFY_REQUEUE, NULL);
        ctl_watch_job(c, j, "job.requeued");
        for (int32_t k = 0; k < j->ntasks; k++)
            if (k != i && ctl_task_is_live(&j->tasks[k]) && j->tasks[k].node >= 0)
                c->out.kill(c->out.ud, (uint32_t)j->tasks[k].node, j->id, k, j->tasks[k].attempt);
    }
    if (j->requeue_wait && until_mono_us > j->requeue_after_mono_us)
        j->requeue_after_mono_us = until_mono_us;
    ctl_task_ended(c, j, i, CTL_TASK_LOST, 0, 0, false, NULL, ctl_now_us());
}

typedef struct pending {
    uint64_t job;
    int32_t task;
} pending_t;

/* The launching tasks of node n (all, or those sent before before_mono_us
 * when it is > 0), collected first: requeuing unlinks them. The caller
 * frees the array. */
static pending_t *collect(ctl_node_t *n, int64_t before_mono_us, size_t *count) {
    pending_t *p = NULL;
    size_t k = 0, cap = 0;
    sl_list_t *it;
    SL_LIST_FOREACH(it, &n->tasks) {
        ctl_task_t *t = SL_LIST_ENTRY(it, ctl_task_t, node_link);
        if (t->state != CTL_TASK_LAUNCHING ||
            (before_mono_us > 0 && (t->launch_mono_us == 0 || t->launch_mono_us >= before_mono_us)))
            continue;
        if (k == cap) {
            cap = cap ? 2 * cap : 8;
            p = sl_xrealloc(p, cap * sizeof *p);
        }
        p[k++] = (pending_t){t->job->id, (int32_t)(t - t->job->tasks)};
    }
    *count = k;
    return p;
}

void ctl_node_disconnected(ctl_t *c, uint32_t node) {
    ctl_node_t *n = ctl_node_get(c, node);
    const sl_node_t *nd = sl_cluster_node(c->cl, node);
    if (n == NULL || nd == NULL)
        return;
    if (nd->state == SL_NODE_UP) {
        sl_cluster_set_state(c->cl, node, ctl_node_up_state(c, node)); /* no new placements */
        c->sched_dirty = true;
        ctl_loop_kick(c->loop);
    }
    size_t cnt;
    pending_t *p = collect(n, 0, &cnt);
    for (size_t k = 0; k < cnt; k++) {
        int32_t i;
        ctl_job_t *j = ctl_task_find_live(c, node, p[k].job, p[k].task, &i);
        if (j == NULL || j->tasks[i].state != CTL_TASK_LAUNCHING)
            continue;
        char why[160];
        snprintf(why, sizeof why, "task %d never started: the agent on %s closed its connection "
                 "before it acknowledged the launch", i, ctl_node_name(c, (int32_t)node));
        unlaunched(c, j, i, why, 1);
    }
    sl_free(p);
}

void ctl_launch_sweep(ctl_t *c) {
    int64_t timeout_us = c->cfg.launch_timeout_ms * 1000, now = ctl_mono_us();
    if (timeout_us <= 0)
        return;
    for (size_t id = 0; id < c->nnodes; id++) {
        ctl_node_t *n = c->nodes[id];
        if (n == NULL || !n->connected || n->live_tasks == 0)
            continue;
        size_t cnt;
        pending_t *p = collect(n, now - timeout_us, &cnt);
        for (size_t k = 0; k < cnt; k++) {
            int32_t i;
            ctl_job_t *j = ctl_task_find_live(c, (uint32_t)id, p[k].job, p[k].task, &i);
            if (j == NULL || j->tasks[i].state != CTL_TASK_LAUNCHING)
                continue;
            char why[200];
            snprintf(why, sizeof why, "task %d was not acknowledged by node %s within %.1f s of "
                     "its launch (launch_timeout)", i, ctl_node_name(c, (int32_t)id),
                     (double)timeout_us / 1e6);
            /* Should the agent read the launch after all, this stops it. */
            c->out.kill(c->out.ud, (uint32_t)id, j->id, i, j->tasks[i].attempt);
            unlaunched(c, j, i, why, n->last_seen_mono_us + ctl_fence_wait_us(c));
        }
        sl_free(p);
    }
}
