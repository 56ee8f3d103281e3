/*
 * preempt.c - carrying out the core's preemptions and resizes (preempt.h).
 *
 * Order of events for a whole-job preemption: the core marks the victim
 * stopping (its resources stay held) -> on_preempt here: kill with the
 * class's signal, grace and preempt flag to each live task, the job is
 * pending again with requeue_wait -> the agents report each end -> the
 * last one settles the job (jobs.c), which calls sl_sched_stop_done: the
 * core requeues it and tries its preemptor first in the next run. For a
 * shrink, only the ranks above the new size stop; the job keeps running,
 * and their ends are not failures (ctl_task_t.stopping).
 */
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "store/store.h"
#include "domain/jobnotify.h"
#include "domain/preempt.h"

static void kick(ctl_t *c) {
    ctl_loop_kick(c->loop);
}

void ctl_job_stop_opts(ctl_t *c, const ctl_job_t *j, sl_proto_kill_t *k) {
    const char *cls = json_string_value(json_object_get(j->spec, "priority_class"));
    const ctl_prio_class_t *pc = ctl_config_prio_class(&c->cfg, cls);
    *k = (sl_proto_kill_t){.grace_ms = ctl_config_prio_grace_ms(&c->cfg, pc),
                           .signal = pc ? pc->signal : 0, .preempt = true};
}

double ctl_task_gpu_seconds(const ctl_job_t *j, const ctl_task_t *t, int64_t now_us) {
    if (t->start_us < 0 || now_us <= t->start_us)
        return 0;
    const sl_task_req_t *r = &j->core.task;
    double gpus = r->gpus > 0 ? r->gpus : r->gpu_milli / 1000.0;
    return gpus * (double)(now_us - t->start_us) / 1e6;
}

void ctl_preempt_count(ctl_t *c, int32_t tenant, ctl_preempt_cause_t cause) {
    if (tenant < 0 || cause < 0 || cause >= CTL_PREEMPT_NCAUSES)
        return;
    size_t need = ((size_t)tenant + 1) * CTL_PREEMPT_NCAUSES;
    if (need > c->npreempt_counts) {
        c->preempt_counts = sl_xrealloc(c->preempt_counts, need * sizeof *c->preempt_counts);
        memset(c->preempt_counts + c->npreempt_counts, 0,
               (need - c->npreempt_counts) * sizeof *c->preempt_counts);
        c->npreempt_counts = need;
    }
    c->preempt_counts[(size_t)tenant * CTL_PREEMPT_NCAUSES + cause]++;
}

/* Records p for j: its row, j's history if it was read already, the count. */
static void preempt_record(ctl_t *c, ctl_job_t *j, const ctl_preempt_t *p, ctl_preempt_cause_t cause) {
    ctl_store_preempt_add(c->store, j->id, p);
    if (j->x.loaded) {
        j->x.preempts = sl_xrealloc(j->x.preempts, (j->x.npreempts + 1) * sizeof *j->x.preempts);
        j->x.preempts[j->x.npreempts++] = *p;
    }
    ctl_preempt_count(c, j->tenant, cause);
    sl_log(SL_LOG_INFO, "sched", "job=%llu %s: tasks=%d gpu_seconds=%.1f by_job=%llu reason=\"%s\"",
           (unsigned long long)j->id, p->kind, p->tasks, p->gpu_seconds,
           (unsigned long long)p->by_job, p->reason);
}

int ctl_job_preempt(ctl_t *c, ctl_job_t *j, ctl_preempt_t *p, ctl_preempt_cause_t cause) {
    if (j->state != CTL_JOB_RUNNING || !j->in_core)
        return SL_ESTATE;
    int64_t now = ctl_now_us();
    sl_proto_kill_t k;
    ctl_job_stop_opts(c, j, &k);
    p->at_us = now;
    p->tasks = 0;
    p->gpu_seconds = 0;
    snprintf(p->cause, sizeof p->cause, "%s", ctl_preempt_cause_name(cause));
    for (int32_t i = 0; i < j->ntasks; i++) {
        ctl_task_t *t = &j->tasks[i];
        if (!ctl_task_is_live(t))
            continue;
        p->tasks++;
        p->gpu_seconds += ctl_task_gpu_seconds(j, t, now);
        if (t->node >= 0)
            c->out.stop(c->out.ud, (uint32_t)t->node, j->id, i, t->attempt, &k);
    }
    /* As a node failure's requeue, but with no fence to wait for: the
     * agents are alive and stop the tasks themselves (requeue_after 1: at
     * once, once the last task has reported its end). A node that fails
     * meanwhile extends it (ctl_job_lose). */
    j->state = CTL_JOB_PENDING;
    j->requeue_wait = true;
    if (j->requeue_after_mono_us == 0)
        j->requeue_after_mono_us = 1;
    j->requeues++;
    c->n.requeues++;
    snprintf(j->reason, sizeof j->reason, "requeued: %s", p->reason);
    preempt_record(c, j, p, cause);
    ctl_notify_job(c, j, CTL_NOTIFY_REQUEUE, NULL);
    ctl_watch_job(c, j, "job.preempted");
    if (j->live == 0)
        ctl_job_settle(c, j);
    else
        ctl_store_job_update(c->store, j);
    kick(c);
    return 0;
}

/* ---- the core's decisions ---- */

static ctl_preempt_cause_t cause_of(sl_preempt_reason_t r) {
    return r == SL_PREEMPT_RECLAIM ? CTL_PREEMPT_RECLAIM
           : r == SL_PREEMPT_DRAIN ? CTL_PREEMPT_DRAIN
                                   : CTL_PREEMPT_PRIORITY;
}

/* Fills p's by_job, by_tenant and reason for a decision of the core. */
static void describe(ctl_t *c, const ctl_job_t *victim, uint64_t by, sl_preempt_reason_t why,
                     ctl_preempt_t *p) {
    ctl_job_t *pj = by ? ctl_job_find(c, by) : NULL;
    const char *bt = pj ? sl_sched_tenant_name(c->sched, pj->tenant) : NULL;
    p->by_job = by;
    snprintf(p->by_tenant, sizeof p->by_tenant, "%s", bt ? bt : "");
    if (why == SL_PREEMPT_RECLAIM)
        snprintf(p->reason, sizeof p->reason,
                 "reclaimed for job %llu of tenant %.60s, below its fair share",
                 (unsigned long long)by, bt ? bt : "?");
    else
        snprintf(p->reason, sizeof p->reason, "preempted for job %llu of tenant %.60s (priority %d over %d)",
                 (unsigned long long)by, bt ? bt : "?", pj ? (int)pj->core.priority : 0,
                 (int)victim->core.priority);
}

static void on_preempt(void *ud, const sl_preemption_t *sp) {
    ctl_t *c = ud;
    ctl_job_t *j = ctl_job_find(c, sp->victim);
    if (j == NULL)
        return;
    ctl_preempt_t p = {.kind = "preempt"};
    describe(c, j, sp->preemptor, sp->reason, &p);
    ctl_job_preempt(c, j, &p, cause_of(sp->reason));
}

typedef struct evict_ctx {
    ctl_t *c;
    const char *kind, *reason;
    ctl_preempt_cause_t cause;
} evict_ctx_t;

static void on_evict(void *ud, const sl_preemption_t *sp) {
    evict_ctx_t *x = ud;
    ctl_job_t *j = ctl_job_find(x->c, sp->victim);
    if (j == NULL)
        return;
    ctl_preempt_t p = {0};
    snprintf(p.kind, sizeof p.kind, "%s", x->kind);
    snprintf(p.reason, sizeof p.reason, "%s", x->reason);
    ctl_job_preempt(x->c, j, &p, x->cause);
}

int ctl_preempt_evict(ctl_t *c, uint32_t node, bool all, uint32_t gpu_mask, const char *kind,
                      ctl_preempt_cause_t cause, const char *reason) {
    evict_ctx_t x = {c, kind, reason, cause};
    sl_cycle_ops_t ops = {NULL, on_evict, NULL};
    return all ? sl_sched_evict_node(c->sched, node, ctl_now_us(), &ops, &x)
               : sl_sched_evict_gpus(c->sched, node, gpu_mask, ctl_now_us(), &ops, &x);
}

/* Records j's new size (job_size, and j->x when it was read) and tells the
 * event stream. */
static void size_record(ctl_t *c, ctl_job_t *j, int32_t size, const char *why) {
    ctl_size_change_t z = {.at_us = ctl_now_us(), .size = size};
    snprintf(z.why, sizeof z.why, "%s", why);
    ctl_store_size_add(c->store, j->id, &z);
    if (j->x.loaded) {
        j->x.sizes = sl_xrealloc(j->x.sizes, (j->x.nsizes + 1) * sizeof *j->x.sizes);
        j->x.sizes[j->x.nsizes++] = z;
    }
    ctl_watch_job(c, j, "job.resized"); /* the console's job page, show --watch */
}

/* New ranks from..to-1 at pls: allocated by the core, launched now. The
 * job's task array has room for all its ntasks (jobs.c, on_start), so the
 * node lists threaded through it stay valid. */
static void grow(ctl_t *c, ctl_job_t *j, const sl_resize_t *r) {
    for (int32_t i = r->from; i < r->to; i++)
        ctl_task_place(c, j, i, &r->pls[i - r->from]);
    j->ntasks = r->to;
    j->live += r->to - r->from;
    ctl_store_job_update(c->store, j);
    char why[96];
    snprintf(why, sizeof why, "grew from %d to %d tasks into free capacity", (int)r->from, (int)r->to);
    size_record(c, j, r->to, why);
    bool unsent = false;
    for (int32_t i = r->from; i < r->to; i++)
        unsent |= ctl_task_launch(c, j, i) < 0;
    if (unsent) { /* the job's launches no longer fit in a protocol line */
        char reason[sizeof j->reason];
        snprintf(reason, sizeof reason, "%s", j->reason);
        ctl_job_fail(c, j, reason);
    }
    sl_log(SL_LOG_INFO, "sched", "job=%llu grew tasks=%d->%d", (unsigned long long)j->id,
           (int)r->from, (int)r->to);
}

/* The ranks a shrink stopped have all ended: the core releases them. */
static void shrink_done(ctl_t *c, ctl_job_t *j) {
    int32_t n = j->ntasks;
    for (int32_t i = 0; i < j->ntasks; i++) {
        if (j->tasks[i].stopping && ctl_task_is_live(&j->tasks[i]))
            return; /* still waiting for one */
        if (j->tasks[i].stopping && i < n)
            n = i;
    }
    const sl_job_t *sj = sl_sched_job(c->sched, j->id);
    if (sj && sl_job_stopping(sj))
        sl_sched_stop_done(c->sched, j->id, ctl_now_us());
    for (int32_t i = n; i < j->ntasks; i++)
        j->tasks[i].stopping = false;
    if (n < j->ntasks && j->state == CTL_JOB_RUNNING) {
        j->ntasks = n;
        ctl_store_tasks_trim(c->store, j->id, n);
        ctl_watch_job(c, j, "job.resized"); /* its size now: the ranks left */
    }
    c->sched_dirty = true; /* the freed capacity goes to whoever waits for it */
    kick(c);
}

static void task_stopped(ctl_t *c, ctl_job_t *j, int32_t i) {
    shrink_done(c, j);
}

static void shrink(ctl_t *c, ctl_job_t *j, const sl_resize_t *r) {
    sl_proto_kill_t k;
    ctl_job_stop_opts(c, j, &k);
    int64_t now = ctl_now_us();
    ctl_preempt_t p = {.kind = "shrink", .at_us = now};
    describe(c, j, r->preemptor, r->reason, &p);
    snprintf(p.cause, sizeof p.cause, "%s", ctl_preempt_cause_name(cause_of(r->reason)));
    for (int32_t i = r->to; i < r->from && i < j->ntasks; i++) {
        ctl_task_t *t = &j->tasks[i];
        if (!ctl_task_is_live(t))
            continue;
        t->stopping = true;
        p.tasks++;
        p.gpu_seconds += ctl_task_gpu_seconds(j, t, now);
        if (t->node >= 0)
            c->out.stop(c->out.ud, (uint32_t)t->node, j->id, i, t->attempt, &k);
    }
    preempt_record(c, j, &p, cause_of(r->reason));
    char why[96];
    snprintf(why, sizeof why, "shrunk from %d to %d tasks for job %llu", (int)r->from, (int)r->to,
             (unsigned long long)r->preemptor);
    size_record(c, j, r->to, why);
    if (p.tasks == 0)
        shrink_done(c, j);
    kick(c);
}

void ctl_job_resume_shrink(ctl_t *c, ctl_job_t *j, int32_t size) {
    int rc = sl_sched_resume_shrink(c->sched, j->id, size, ctl_now_us());
    if (rc < 0) {
        sl_log(SL_LOG_WARN, "store", "job=%llu cannot resume its shrink to %d tasks: %s",
               (unsigned long long)j->id, (int)size, sl_strerror(rc));
        return;
    }
    for (int32_t i = size; i < j->ntasks; i++)
        j->tasks[i].stopping = true;
    sl_log(SL_LOG_INFO, "store", "job=%llu resumes its shrink %d->%d tasks",
           (unsigned long long)j->id, (int)j->ntasks, (int)size);
    shrink_done(c, j);
}

static void on_resize(void *ud, const sl_resize_t *r) {
    ctl_t *c = ud;
    ctl_job_t *j = ctl_job_find(c, r->job);
    if (j == NULL || j->state != CTL_JOB_RUNNING || j->tasks == NULL)
        return;
    if (r->to > r->from)
        grow(c, j, r);
    else if (r->to < r->from)
        shrink(c, j, r);
}

void ctl_preempt_init(ctl_t *c) {
    c->preempt = (ctl_preempt_hooks_t){on_preempt, on_resize, task_stopped};
}
