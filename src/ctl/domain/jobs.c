/*
 * jobs.c - the life of a job in sluiced (see jobs.h).
 *
 * A job is a gang: a task that fails fails the job and the others are
 * killed; the job's resources stay held in the core until every task has
 * reported its end (ctl_job_settle), so a GPU is never given away while a
 * process may still be using it. A node failure marks its tasks lost and,
 * per the job's on_node_failure, requeues the job (once the surviving tasks
 * have stopped, with its original submit time) or fails it.
 *
 * Fencing (docs/protocol.md): a task lost with its node may still run, since
 * only its agent can stop it, and the agent does so (SIGTERM, SIGKILL after
 * kill_grace) once it has had no answer from the controller for node_timeout.
 * So a requeue caused by a lost task waits until the node's fence time, its
 * last message + node_timeout + kill_grace + a margin (ctl_fence_wait_us), in
 * c->fenced; the sweep requeues it then. A job whose loss this process did
 * not see (recovered from the store) waits as long from the start-up.
 *
 * Every change is written into the iteration's transaction (store/store.h); the
 * messages it causes (launch, kill) go to c->out, whose queue the agent
 * port releases only after that transaction has committed.
 *
 * Each node lists its live tasks (nodes.c), so a node failure and the
 * reconciliation of an agent's hello cost O(tasks on that node): a hello
 * stamps each task it lists (ctl_task_t.seen) and then walks the node's
 * list once for the tasks it did not list.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "domain/eff.h"
#include "domain/jobnotify.h"
#include "domain/jobs.h"
#include "domain/secrets.h"
#include "domain/retry.h"
#include "domain/whole.h"
#include "log.h"
#include "store/store.h"
#include "quantity.h"

static void put_task(ctl_t *c, const ctl_job_t *j, int32_t i) {
    ctl_store_task_put(c->store, j, i, ctl_node_name(c, j->tasks[i].node));
}

void ctl_task_place(ctl_t *c, ctl_job_t *j, int32_t i, const sl_place_t *pl) {
    ctl_task_t *t = &j->tasks[i];
    memset(t, 0, sizeof *t);
    t->node = (int32_t)pl->node;
    t->gpu_mask = pl->gpu_mask;
    t->gpu_milli = pl->gpu_milli;
    t->gpu_mem_bytes = pl->gpu_mem_bytes;
    t->state = CTL_TASK_LAUNCHING;
    t->start_us = t->end_us = -1;
    t->attempt = j->requeues; /* the job's requeues so far name this run of it */
    ctl_node_link(c, j, i);
    put_task(c, j, i);
}

int ctl_task_launch(ctl_t *c, ctl_job_t *j, int32_t i) {
    j->tasks[i].launch_mono_us = ctl_mono_us();
    /* Its secrets must still be there (secrets.h); the agent port opens them. */
    json_t *refs = json_object_get(j->spec, "secrets");
    char why[256];
    int rc = refs ? ctl_secrets_check(c, json_string_value(json_object_get(j->spec, "tenant")),
                                      refs, NULL, why, sizeof why) : 0;
    c->launch_why[0] = '\0';
    if (rc == 0)
        rc = c->out.launch(c->out.ud, j, i);
    else
        snprintf(j->reason, sizeof j->reason, "task %d cannot be launched: %.200s", i, why);
    if (rc == SL_EOVERFLOW)
        snprintf(j->reason, sizeof j->reason, "task %d cannot be launched: its launch message is "
                 "over the agent protocol's limit of 1 MiB (docs/protocol.md)", i);
    else if (rc == SL_EIO)
        snprintf(j->reason, sizeof j->reason, "task %d cannot be launched: %.200s", i,
                 c->launch_why[0] ? c->launch_why : "its secrets cannot be opened");
    return rc;
}

static void kick(ctl_t *c) {
    ctl_loop_kick(c->loop);
}

/* ---- set-up ---- */

int ctl_domain_open(ctl_t *c, char *err, size_t errlen) {
    ctl_jobs_init(c);
    sl_cluster_create(&c->cl);
    sl_sched_config_t sc;
    sl_sched_config_init(&sc);
    sc.queue = c->cfg.queue;
    sc.placement = c->cfg.placement;
    sc.backfill = c->cfg.backfill;
    sc.seed = 1;
    sc.default_time_limit_us = c->cfg.default_time_limit_s * 1000000;
    sc.max_starts_per_cycle = c->cfg.max_starts_per_cycle;
    /* The typical task shapes come from what is submitted: the fragmentation-
     * aware placements (fgd, fgdbal) score against them. Cheap for the others. */
    sc.track_workload = true;
    /* Preemption, reclaim and elastic growth (sluice/preempt.h). */
    sc.preempt = (sl_preempt_config_t){
        .priority = c->cfg.preempt_priority, .reclaim = c->cfg.preempt_reclaim,
        .grow = c->cfg.preempt_grow, .default_may_preempt = c->cfg.default_may_preempt,
        .max_per_minute = (int32_t)c->cfg.preempt_max_per_minute,
        .protect_after = (int32_t)c->cfg.preempt_protect_after,
        .protect_us = c->cfg.preempt_protect_ms * 1000};
    char serr[256];
    if (sl_sched_create(&sc, c->cl, &c->sched, serr, sizeof serr) < 0) {
        snprintf(err, errlen, "scheduler: %s", serr);
        return -1;
    }
    for (size_t i = 0; i < c->cfg.ntenants; i++) {
        ctl_tenant_cfg_t *t = &c->cfg.tenants[i];
        sl_tenant_spec_t ts = {t->name, t->weight, t->has_quota ? t->quota : (sl_res_t){0, 0, 0}};
        int rc = sl_sched_add_tenant(c->sched, &ts);
        if (rc < 0) {
            snprintf(err, errlen, "tenant \"%s\": %s", t->name, sl_strerror(rc));
            return -1;
        }
    }
    for (size_t i = 0; i < c->cfg.nprio_classes; i++) {
        const ctl_prio_class_t *pc = &c->cfg.prio_classes[i];
        sl_prio_class_spec_t cs = {pc->name, pc->value, pc->may_preempt, pc->preemptible};
        int rc = sl_sched_add_class(c->sched, &cs);
        if (rc < 0) {
            snprintf(err, errlen, "priority class \"%s\": %s", pc->name, sl_strerror(rc));
            return -1;
        }
    }
    ctl_obs_init(&c->obs, sl_sched_tenant_count(c->sched));
    for (size_t i = 0; i < c->cfg.npools; i++) {
        int rc = sl_cluster_pool_intern(c->cl, c->cfg.pools[i]);
        if (rc < 0) {
            snprintf(err, errlen, "pool \"%s\": %s", c->cfg.pools[i], sl_strerror(rc));
            return -1;
        }
    }
    if (ctl_notify_open(c, err, errlen) < 0)
        return -1;
    /* Last, so that a configuration error is reported before the state
     * file is opened (or created, with --init). */
    if (ctl_store_open(&c->store, c->loop, c->cfg.state, c->cfg.init, err, errlen) < 0)
        return -1;
    /* The secrets' key (secrets.h): an HA group's members share one. */
    return ctl_secrets_open(c, c->ha != NULL, err, errlen);
}

void ctl_domain_close(ctl_t *c) {
    ctl_secrets_close(c);
    ctl_notify_close(c);
    ctl_retry_fini(c);
    ctl_store_close(c->store); /* commits what is open */
    c->store = NULL;
    sl_free(c->fenced);
    sl_free(c->preempt_counts);
    c->preempt_counts = NULL;
    c->npreempt_counts = 0;
    c->fenced = NULL;
    c->nfenced = c->fenced_cap = 0;
    ctl_jobs_fini(c);
    sl_free(c->name_refs); /* after the jobs, whose names it counts */
    c->name_refs = NULL;
    c->nname_refs = 0;
    ctl_nodes_fini(c);
    ctl_obs_fini(&c->obs);
    sl_sched_destroy(c->sched);
    sl_cluster_destroy(c->cl);
    c->sched = NULL;
    c->cl = NULL;
}

/* ---- submission ---- */

int64_t ctl_tenant_max_pending(const ctl_t *c, int32_t t) {
    const char *name = sl_sched_tenant_name(c->sched, t);
    for (size_t i = 0; name && i < c->cfg.ntenants; i++)
        if (c->cfg.tenants[i].max_pending_jobs > 0 && strcmp(c->cfg.tenants[i].name, name) == 0)
            return c->cfg.tenants[i].max_pending_jobs;
    return c->cfg.max_pending_jobs;
}

int ctl_job_submit(ctl_t *c, ctl_job_t *j, char *err, size_t errlen) {
    /* Checked first, so that a refused job interns nothing. */
    size_t pending = 0, running = 0;
    if (j->tenant >= 0) {
        sl_sched_tenant_jobs(c->sched, j->tenant, &pending, &running);
        int64_t limit = ctl_tenant_max_pending(c, j->tenant);
        if ((int64_t)pending >= limit) {
            snprintf(err, errlen,
                     "tenant \"%s\" already has %zu pending jobs, its limit (max_pending_jobs: %lld); "
                     "submit again when some have started",
                     sl_sched_tenant_name(c->sched, j->tenant), pending, (long long)limit);
            return SL_EBUSY;
        }
    }
    j->id = c->next_id;
    j->submit_us = ctl_now_us();
    /* Validation interned nothing; names enter the cluster only here, for
     * a job about to be queued. */
    if (ctl_job_core_spec(c, j, err, errlen) < 0)
        return SL_EINVAL;
    j->core.id = j->id;
    j->core.submit_us = j->submit_us;
    int rc = sl_sched_submit(c->sched, &j->core, err, errlen);
    if (rc < 0) {
        ctl_job_release_names(c, j); /* a refused job leaves no name behind */
        return rc;
    }
    rc = ctl_store_job_insert(c->store, j, sl_sched_tenant_name(c->sched, j->tenant));
    if (rc < 0) {
        /* Undo the queueing; the id is burnt, so the next job never
         * collides with whatever holds this one's row. */
        sl_sched_cancel(c->sched, j->id, j->submit_us);
        sl_sched_forget(c->sched, j->id);
        ctl_job_release_names(c, j);
        c->next_id++;
        snprintf(err, errlen, "could not store the job");
        return SL_EIO;
    }
    c->next_id++;
    j->in_core = true;
    ctl_job_register(c, j);
    c->n.submissions++;
    ctl_watch_job(c, j, "job.submitted");
    c->sched_dirty = true;
    kick(c);
    return 0;
}

/* ---- messages to agents ---- */

static void send_kill(ctl_t *c, ctl_job_t *j, int32_t i) {
    if (j->tasks[i].node >= 0)
        c->out.kill(c->out.ud, (uint32_t)j->tasks[i].node, j->id, i, j->tasks[i].attempt);
}

static void kill_live(ctl_t *c, ctl_job_t *j, int32_t except_node) {
    for (int32_t i = 0; i < j->ntasks; i++) {
        ctl_task_t *t = &j->tasks[i];
        if (ctl_task_is_live(t) && t->node != except_node)
            send_kill(c, j, i);
    }
}

/* ---- the scheduling cycle ---- */

/*
 * The delays of a job the cycle started (obs.h). Scheduling delay: the
 * core decides a whole cycle in one sl_sched_cycle call and reports the
 * jobs it started only after its last decision, so the decision time of
 * every job of the cycle is the time from the cycle's start to its first
 * report: what the job waited for the scheduler to decide, once resources
 * were there (an upper bound on the work spent on that job alone, which a
 * batch does not separate). The launches and database writes that follow
 * are not in it, nor are the cycles that found no room for the job (that
 * wait is queueing). Queueing delay: submit to the job's first start (a
 * restart after a requeue is not a second observation).
 */
static void observe_start(ctl_t *c, const ctl_job_t *j) {
    ctl_tenant_obs_t *t = ctl_obs_tenant(&c->obs, j->tenant);
    if (t == NULL)
        return;
    ctl_hist_observe(&t->scheduling, c->obs.cycle_decided_us);
    if (j->requeues == 0)
        ctl_hist_observe(&t->queueing, j->start_us - j->submit_us);
}

static void on_start(void *ud, const sl_job_t *cj) {
    ctl_t *c = ud;
    if (c->obs.cycle_decided_us < 0) /* the cycle's first report: its decisions are done */
        c->obs.cycle_decided_us = ctl_mono_us() - c->obs.cycle_t0_mono_us;
    ctl_job_t *j = ctl_job_find(c, sl_job_id(cj));
    if (j == NULL) {
        sl_log(SL_LOG_ERROR, "sched", "job=%llu started but unknown", (unsigned long long)sl_job_id(cj));
        return;
    }
    int32_t n = sl_job_ntasks_placed(cj);
    sl_free(j->tasks);
    /* Room for every task an elastic job may grow to (preempt.c), so that
     * the node lists threaded through the array never move. */
    int32_t cap = j->core.ntasks > n ? j->core.ntasks : n;
    j->tasks = sl_xcalloc((size_t)(cap ? cap : 1), sizeof *j->tasks);
    j->ntasks = n;
    j->state = CTL_JOB_RUNNING;
    j->start_us = sl_job_start_us(cj);
    j->reason[0] = '\0';
    j->retry_failed = false;
    for (int32_t i = 0; i < n; i++)
        ctl_task_place(c, j, i, sl_job_place(cj, i));
    j->live = n;
    j->master_node = n ? (uint32_t)j->tasks[0].node : 0;
    ctl_store_job_update(c->store, j);
    ctl_store_job_sched_put(c->store, j->id, c->obs.cycle_decided_us); /* `sluice report` */
    int32_t unsent = -1;
    for (int32_t i = 0; i < n; i++)
        if (ctl_task_launch(c, j, i) < 0 && unsent < 0)
            unsent = i;
    c->n.jobs_started++;
    observe_start(c, j);
    ctl_notify_job(c, j, CTL_NOTIFY_BEGIN, NULL);
    if (c->ev.started)
        c->ev.started(c->ev.ud, j); /* dependencies on its start (deps.c) */
    ctl_watch_job(c, j, "job.started");
    if (sl_log_enabled(SL_LOG_DEBUG, "sched"))
        sl_log(SL_LOG_DEBUG, "sched", "job=%llu started tasks=%d", (unsigned long long)j->id, n);
    if (unsent >= 0) {
        char why[sizeof j->reason];
        snprintf(why, sizeof why, "%s", j->reason);
        ctl_job_fail(c, j, why); /* it could never start: its others are stopped */
    }
}

bool ctl_jobs_cycle(void *ud) {
    ctl_t *c = ud;
    if (!c->sched_dirty)
        return false;
    c->sched_dirty = false;
    int64_t t0 = ctl_mono_us();
    c->obs.cycle_t0_mono_us = t0;
    c->obs.cycle_decided_us = -1;
    sl_cycle_stats_t st;
    /* sl_sched_run: the cycle, then preemption, reclaim and elastic growth
     * as configured (sluice/preempt.h); their decisions go to preempt.c. */
    sl_cycle_ops_t ops = {on_start, c->preempt.on_preempt, c->preempt.on_resize};
    sl_sched_run(c->sched, ctl_now_us(), &ops, c, &st);
    c->n.cycles++;
    c->n.cycle_us += (uint64_t)(ctl_mono_us() - t0);
    return false;
}

/* ---- task and job ends ---- */

void ctl_task_started(ctl_t *c, ctl_job_t *j, int32_t i, int32_t pid, int64_t t_us) {
    ctl_task_t *t = &j->tasks[i];
    if (!ctl_task_is_live(t))
        return;
    t->state = CTL_TASK_RUNNING;
    t->pid = pid;
    if (t->start_us < 0)
        t->start_us = t_us;
    ctl_store_task_put_lazy(c->store, j, i, ctl_node_name(c, t->node));
}

int64_t ctl_fence_wait_us(const ctl_t *c) {
    int64_t w = (c->cfg.node_timeout_ms + c->cfg.kill_grace_ms) * 1000;
    return w + CTL_FENCE_MARGIN_US + w / 100;
}

void ctl_node_fence(ctl_t *c, uint32_t node, int64_t until_mono_us) {
    ctl_node_t *n = ctl_node_get(c, node);
    if (n != NULL && until_mono_us > n->fence_until_mono_us)
        n->fence_until_mono_us = until_mono_us;
}

/* True (and j kept in c->fenced for the sweep) while j's requeue must wait
 * for its lost tasks to be fenced. */
static bool fence_pending(ctl_t *c, ctl_job_t *j) {
    int64_t until = j->requeue_after_mono_us;
    if (until == 0) /* lost before this process started: assume at the start */
        until = j->requeue_after_mono_us = c->started_mono_us + ctl_fence_wait_us(c);
    if (ctl_mono_us() >= until)
        return false;
    for (size_t i = 0; i < c->nfenced; i++)
        if (c->fenced[i] == j->id)
            return true;
    if (c->nfenced == c->fenced_cap) {
        c->fenced_cap = c->fenced_cap ? 2 * c->fenced_cap : 16;
        c->fenced = sl_xrealloc(c->fenced, c->fenced_cap * sizeof *c->fenced);
    }
    c->fenced[c->nfenced++] = j->id;
    sl_log(SL_LOG_INFO, "sched", "job=%llu requeue waits %.1f s for its lost tasks to be fenced",
           (unsigned long long)j->id, (double)(until - ctl_mono_us()) / 1e6);
    return true;
}

/* The sweep's part: requeues the jobs whose fence time has passed. */
static void requeue_fenced(ctl_t *c) {
    int64_t now = ctl_mono_us();
    size_t keep = 0, ndue = 0;
    uint64_t *due = sl_xmalloc((c->nfenced ? c->nfenced : 1) * sizeof *due);
    for (size_t i = 0; i < c->nfenced; i++) {
        ctl_job_t *j = ctl_job_find(c, c->fenced[i]);
        if (j == NULL || !j->requeue_wait)
            continue; /* cancelled or failed meanwhile: settled without a requeue */
        if (now < j->requeue_after_mono_us)
            c->fenced[keep++] = c->fenced[i];
        else
            due[ndue++] = c->fenced[i];
    }
    c->nfenced = keep;
    for (size_t i = 0; i < ndue; i++) {
        ctl_job_t *j = ctl_job_find(c, due[i]);
        if (j != NULL && j->requeue_wait && j->live == 0)
            ctl_job_settle(c, j);
    }
    sl_free(due);
}

void ctl_job_settle(ctl_t *c, ctl_job_t *j) {
    int64_t now = ctl_now_us();
    if (j->requeue_wait && j->in_core && fence_pending(c, j))
        return;
    if (j->requeue_wait && j->in_core) {
        /* A job the core asked to stop (a preemption, a drain) is requeued
         * by stop_done, which also frees its preemptor's wait. */
        const sl_job_t *sj = sl_sched_job(c->sched, j->id);
        int rc = sj && sl_job_stopping(sj) ? sl_sched_stop_done(c->sched, j->id, now)
                                           : sl_sched_requeue(c->sched, j->id, now);
        if (rc < 0)
            sl_log(SL_LOG_ERROR, "sched", "job=%llu requeue: %s", (unsigned long long)j->id,
                   sl_strerror(rc));
        sl_free(j->tasks);
        j->tasks = NULL;
        j->ntasks = 0;
        j->requeue_wait = false;
        j->state = CTL_JOB_PENDING;
        j->start_us = -1;
        j->requeue_after_mono_us = 0;
        ctl_store_tasks_delete(c->store, j->id);
        ctl_store_job_update(c->store, j);
        ctl_watch_job(c, j, "job.requeued");
        c->sched_dirty = true;
        kick(c);
        return;
    }
    j->requeue_wait = false;
    if (j->state == CTL_JOB_FAILED && j->in_core && ctl_retry_due(c, j)) {
        ctl_retry_begin(c, j); /* another attempt after its back-off (retry.h) */
        return;
    }
    if (j->state == CTL_JOB_RUNNING || j->state == CTL_JOB_PENDING) {
        /* Every task ended and none failed (a failure would have failed the job). */
        j->state = CTL_JOB_SUCCEEDED;
        j->has_exit = true;
        j->exit_code = 0;
        j->end_us = -1;
        for (int32_t i = 0; i < j->ntasks; i++)
            if (j->tasks[i].end_us > j->end_us)
                j->end_us = j->tasks[i].end_us;
    }
    if (j->end_us < 0)
        j->end_us = now;
    ctl_job_leave_core(c, j, now);
    /* Finished for good: the names it held may now go (a requeued job
     * above keeps them, as it waits in the queue again). */
    ctl_job_release_names(c, j);
    ctl_store_job_update(c->store, j);
    if (!j->retained)
        ctl_obs_completed(&c->obs, j->tenant, j->state);
    ctl_eff_job_end(c, j); /* its efficiency row, in the same transaction */
    ctl_notify_end(c, j);
    if (c->ev.ended)
        c->ev.ended(c->ev.ud, j); /* its dependents and its array (deps.c) */
    ctl_watch_job(c, j, "job.finished");
    ctl_job_retain(c, j);
    kick(c); /* the flush trims the finished list once this is committed */
}

/* "OOMKilled: task 0 used 141Mi of its 141Mi hard limit (110% of 128Mi)":
 * the job's reason when the kernel killed task i for memory. OOMKilled
 * first, as Kubernetes names it, so that a listing's REASON column says
 * what happened before it is cut. */
static void oom_reason(const ctl_task_t *t, int32_t i, char *buf, size_t len) {
    char peak[24], limit[24], req[24];
    sl_qty_format_mem_round(t->mem_peak, peak, sizeof peak);
    sl_qty_format_mem_round(t->mem_limit, limit, sizeof limit);
    sl_qty_format_mem_round(t->mem_request, req, sizeof req);
    if (t->mem_peak > 0 && t->mem_limit > 0 && t->mem_request > 0)
        snprintf(buf, len, "OOMKilled: task %d used %s of its %s hard limit (%.0f%% of %s)", i, peak,
                 limit, 100.0 * (double)t->mem_limit / (double)t->mem_request, req);
    else if (t->mem_peak > 0 && t->mem_limit > 0)
        snprintf(buf, len, "OOMKilled: task %d used %s of its %s hard limit", i, peak, limit);
    else if (t->mem_limit > 0)
        snprintf(buf, len, "OOMKilled: task %d was killed for memory at its %s hard limit", i, limit);
    else
        snprintf(buf, len, "OOMKilled: task %d was killed for memory", i);
}

void ctl_task_ended(ctl_t *c, ctl_job_t *j, int32_t i, ctl_task_state_t st, int32_t exit_code,
                    int32_t sig, bool has_exit, const char *reason, int64_t t_us) {
    ctl_task_t *t = &j->tasks[i];
    if (!ctl_task_is_live(t))
        return;
    t->state = st;
    t->has_exit = has_exit;
    t->exit_code = exit_code;
    t->signal = sig;
    t->end_us = t_us > 0 ? t_us : ctl_now_us();
    j->live--;
    ctl_node_unlink(c, t);
    put_task(c, j, i);
    c->n.tasks_exited++;
    bool failed = st != CTL_TASK_EXITED || exit_code != 0 || sig != 0;
    if (t->stopping) {
        /* Stopped by an elastic shrink: its end is what was asked. */
        failed = false;
        if (c->preempt.task_stopped)
            c->preempt.task_stopped(c, j, i);
    }
    if (failed && j->state == CTL_JOB_RUNNING) {
        if (st == CTL_TASK_FAILED)
            snprintf(j->reason, sizeof j->reason, "task %d could not be launched: %s", i,
                     reason ? reason : "unknown reason");
        else if (st == CTL_TASK_EXITED && t->oom_killed)
            oom_reason(t, i, j->reason, sizeof j->reason);
        else if (st == CTL_TASK_LOST)
            snprintf(j->reason, sizeof j->reason, "task %d lost with node %s", i,
                     t->node >= 0 ? ctl_node_name(c, t->node) : "?");
        else if (sig != 0)
            snprintf(j->reason, sizeof j->reason, "task %d killed by signal %d", i, sig);
        else
            snprintf(j->reason, sizeof j->reason, "task %d exited with code %d", i, exit_code);
        j->state = CTL_JOB_FAILED;
        j->end_us = t->end_us;
        j->has_exit = has_exit;
        j->exit_code = sig ? 128 + sig : exit_code;
        ctl_retry_failed(c, j); /* a failure a retry may answer (retry.h) */
        kill_live(c, j, -1);
    }
    /* An allocation's task ended by itself with 0: its batch step did
     * (the others only hold resources until killed; views/alloc.h), so
     * they go too, and their ends (0 on SIGTERM) leave the outcome as is. */
    if (!failed && j->live > 0 && j->state == CTL_JOB_RUNNING && st == CTL_TASK_EXITED &&
        json_is_true(json_object_get(j->spec, "allocation")))
        kill_live(c, j, -1);
    if (j->live == 0)
        ctl_job_settle(c, j);
    else
        ctl_store_job_update(c->store, j);
}

/* Ends j as `state` with reason (fail or cancel): out of the queue if it
 * waits there, its live tasks killed. */
static void job_end(ctl_t *c, ctl_job_t *j, ctl_job_state_t state, const char *reason) {
    int64_t now = ctl_now_us();
    if (j->in_core && j->state == CTL_JOB_PENDING && !j->requeue_wait) {
        sl_sched_cancel(c->sched, j->id, now);
        sl_sched_forget(c->sched, j->id);
        j->in_core = false;
        c->sched_dirty = true;
    }
    j->state = state;
    j->requeue_wait = false;
    j->end_us = now;
    snprintf(j->reason, sizeof j->reason, "%s", reason);
    ctl_watch_job(c, j, state == CTL_JOB_CANCELLED ? "job.cancelled" : "job.failed");
    kill_live(c, j, -1);
    if (j->live == 0)
        ctl_job_settle(c, j);
    else
        ctl_store_job_update(c->store, j);
    kick(c);
}

void ctl_job_fail(ctl_t *c, ctl_job_t *j, const char *reason) {
    if (j->state != CTL_JOB_PENDING && j->state != CTL_JOB_RUNNING)
        return;
    job_end(c, j, CTL_JOB_FAILED, reason);
}

int ctl_job_cancel(ctl_t *c, ctl_job_t *j) {
    if (j->state != CTL_JOB_PENDING && j->state != CTL_JOB_RUNNING)
        return SL_ESTATE;
    job_end(c, j, CTL_JOB_CANCELLED, "cancelled");
    return 0;
}

static bool lost_here(const ctl_task_t *t, int32_t i, uint32_t node, int32_t task) {
    return t->node == (int32_t)node && (task < 0 || i == task) && ctl_task_is_live(t);
}

void ctl_job_lose(ctl_t *c, ctl_job_t *j, uint32_t node, int32_t task, const char *why) {
    bool here = false;
    for (int32_t i = 0; i < j->ntasks && !here; i++)
        here = lost_here(&j->tasks[i], i, node, task);
    if (!here)
        return;
    if (j->state == CTL_JOB_RUNNING) {
        if (j->requeue_on_node_failure) {
            j->state = CTL_JOB_PENDING;
            j->requeue_wait = true;
            /* Counted when decided, although the requeue itself may wait
             * for the fence (ctl_job_settle). */
            j->requeues++;
            c->n.requeues++;
            snprintf(j->reason, sizeof j->reason, "requeued: %s", why);
            ctl_notify_job(c, j, CTL_NOTIFY_REQUEUE, NULL);
        } else {
            j->state = CTL_JOB_FAILED;
            j->end_us = ctl_now_us();
            snprintf(j->reason, sizeof j->reason, "%s", why);
            ctl_retry_failed(c, j);
        }
        ctl_watch_job(c, j, j->requeue_wait ? "job.requeued" : "job.failed");
        /* Its other live tasks are asked to stop, not the lost ones: their
         * agent no longer runs them (it reported them fenced, or its hello
         * left them out), and a kill for an ended task makes the agent
         * report that end again, which would then be taken for the task
         * of the job's next copy on the node and end it too. */
        for (int32_t i = 0; i < j->ntasks; i++)
            if (ctl_task_is_live(&j->tasks[i]) && !lost_here(&j->tasks[i], i, node, task))
                send_kill(c, j, i);
    }
    if (j->requeue_wait || j->retry_failed) {
        /* Its tasks here may run until the node's fence time (1: now, so
         * that 0 keeps meaning "lost before this process started"); a
         * retry's back-off lasts at least as long (retry.c). */
        ctl_node_t *n = ctl_node_get(c, node);
        int64_t until = n && n->fence_until_mono_us > 0 ? n->fence_until_mono_us : 1;
        if (until > j->requeue_after_mono_us)
            j->requeue_after_mono_us = until;
    }
    int64_t now = ctl_now_us();
    for (int32_t i = 0; i < j->ntasks; i++)
        if (lost_here(&j->tasks[i], i, node, task))
            ctl_task_ended(c, j, i, CTL_TASK_LOST, 0, 0, false, NULL, now);
}

/* ---- reading jobs back ---- */

static int task_row(void *ud, ctl_job_t *j, int32_t idx, const char *node, const ctl_task_t *t) {
    ctl_t *c = ud;
    if (idx < 0 || idx >= j->core.ntasks) {
        ctl_store_set_error(c->store, "job %llu: a stored task has index %d, outside its %d tasks",
                 (unsigned long long)j->id, idx, j->core.ntasks);
        return -1;
    }
    if (j->tasks == NULL)
        j->tasks = sl_xcalloc((size_t)j->core.ntasks, sizeof *j->tasks);
    if (idx + 1 > j->ntasks)
        j->ntasks = idx + 1;
    const sl_node_t *nd = node ? sl_cluster_find_node(c->cl, node) : NULL;
    j->tasks[idx] = *t;
    j->tasks[idx].node = nd ? (int32_t)nd->id : -1;
    j->tasks[idx].job = j;
    return 0;
}

int ctl_job_load_tasks(ctl_t *c, ctl_job_t *j) {
    if (j->core.ntasks <= 0) {
        json_int_t n = json_integer_value(json_object_get(j->spec, "tasks"));
        j->core.ntasks = n >= 1 && n <= SL_MAX_TASKS ? (int32_t)n : 1;
    }
    if (ctl_store_tasks_read(c->store, j, task_row, c) < 0)
        return -1;
    return ctl_store_task_mem_read(c->store, j);
}

ctl_job_t *ctl_job_fetch(ctl_t *c, uint64_t id) {
    char tenant[SL_NAME_MAX + 1];
    ctl_job_t *j = ctl_store_job_get(c->store, id, tenant, sizeof tenant);
    if (j == NULL)
        return NULL;
    j->tenant = sl_sched_tenant_find(c->sched, tenant);
    if (ctl_job_load_tasks(c, j) < 0) {
        sl_log(SL_LOG_ERROR, "store", "job=%llu unreadable: %s", (unsigned long long)id,
               ctl_store_errmsg(c->store));
        ctl_job_free(j);
        return NULL;
    }
    return j;
}

/* ---- what agents report ---- */

ctl_job_t *ctl_task_find_live(ctl_t *c, uint32_t node, uint64_t job, int64_t task, int32_t *idx) {
    ctl_job_t *j = ctl_job_find(c, job);
    if (j == NULL || task < 0 || task >= j->ntasks || j->tasks[task].node != (int32_t)node ||
        !ctl_task_is_live(&j->tasks[task]))
        return NULL;
    *idx = (int32_t)task;
    return j;
}

ctl_job_t *ctl_task_find_report(ctl_t *c, uint32_t node, uint64_t job, int64_t task,
                                int64_t attempt, const char *what, int32_t *idx, bool *stale) {
    ctl_job_t *j = ctl_task_find_live(c, node, job, task, idx);
    *stale = false;
    if (j == NULL || attempt < 0 || j->tasks[*idx].attempt < 0 ||
        attempt == j->tasks[*idx].attempt)
        return j;
    /* A late report of an earlier run of the task (or of one that is not
     * this run: its attempt is the task's when it was placed). */
    sl_log(SL_LOG_INFO, "agent", "node=%s job=%llu task=%d: %s of attempt %lld ignored: the task "
           "runs attempt %d", ctl_node_name(c, (int32_t)node), (unsigned long long)job, *idx, what,
           (long long)attempt, (int)j->tasks[*idx].attempt);
    *stale = true;
    return NULL;
}

int ctl_node_hello(ctl_t *c, const sl_node_spec_t *ns, const char *addr, uint32_t *idp, char *err,
                   size_t errlen) {
    const sl_node_t *known = sl_cluster_find_node(c->cl, ns->name);
    uint32_t id;
    if (known) {
        id = known->id;
        int32_t pool = sl_cluster_pool_find(c->cl, ns->pool && ns->pool[0] ? ns->pool : "default");
        if (known->ngpus != ns->gpus || known->cpu_total != ns->cpu_milli ||
            known->mem_total != ns->mem_bytes || known->pool != pool)
            sl_log(SL_LOG_WARN, "agent",
                   "node=%s reconnected with a different spec; keeping the registered one",
                   ns->name);
    } else {
        /* A dedicated pool's nodes carry its taint (config.h). */
        char tb[1024];
        sl_node_spec_t ts = *ns;
        ts.taints = ctl_node_taints(&c->cfg, ns->pool, ns->taints, tb, sizeof tb);
        if (sl_cluster_add_node(c->cl, &ts, &id, err, errlen) < 0)
            return -1;
    }
    ctl_node_t *n = ctl_node_get(c, id);
    if (n == NULL)
        n = ctl_node_new(c, id);
    snprintf(n->addr, sizeof n->addr, "%s", addr);
    n->last_seen_mono_us = ctl_mono_us();
    n->last_seen_us = ctl_now_us();
    if (known == NULL || n->spec_json == NULL) {
        json_t *sj = json_pack("{s:I,s:I,s:i,s:s?,s:I,s:s?,s:s?,s:s?}", "cpu_milli",
                               (json_int_t)ns->cpu_milli, "mem_bytes", (json_int_t)ns->mem_bytes,
                               "gpus", ns->gpus, "gpu_model", ns->gpu_model, "gpu_mem_bytes",
                               (json_int_t)ns->gpu_mem_bytes, "pool", ns->pool, "labels",
                               ns->labels, "taints", ns->taints);
        sl_free(n->spec_json);
        char *s = json_dumps(sj, JSON_COMPACT);
        n->spec_json = sl_xstrdup(s);
        free(s);
        json_decref(sj);
        if (ns->gpu_model)
            snprintf(n->gpu_model, sizeof n->gpu_model, "%s", ns->gpu_model);
    }
    ctl_store_node_put(c->store, n, ns->name);
    n->connected = true; /* the agent port records the connection right after */
    ctl_watch_node(c, id, "node.up");
    if (sl_cluster_node(c->cl, id)->state != ctl_node_up_state(c, id))
        sl_cluster_set_state(c->cl, id, ctl_node_up_state(c, id)); /* a drain outlives a failure */
    c->hello_stamp++;
    c->sched_dirty = true;
    kick(c);
    *idp = id;
    return 0;
}

void ctl_node_hello_running(ctl_t *c, uint32_t node, uint64_t job, int64_t task, int64_t attempt,
                            int32_t pid, int64_t start_us) {
    int32_t i;
    bool stale;
    ctl_job_t *j = ctl_task_find_report(c, node, job, task, attempt, "running", &i, &stale);
    if (j != NULL)
        j->tasks[i].seen = c->hello_stamp;
    if (j != NULL && j->state == CTL_JOB_RUNNING) {
        ctl_task_started(c, j, i, pid, start_us);
        /* A shrink's stop may not have left before a restart: again (a
         * task already stopping keeps its first deadline on the agent). */
        if (j->tasks[i].stopping)
            c->out.kill(c->out.ud, node, job, i, j->tasks[i].attempt);
    } else if (task >= 0 && task <= INT32_MAX) {
        /* Not a task of ours there (an earlier run, a cancelled job): the
         * kill names the attempt the agent has, so a current run of the
         * same task is never the one stopped. */
        c->out.kill(c->out.ud, node, job, (int32_t)task, attempt);
    }
}

void ctl_job_id_reported(ctl_t *c, uint32_t node, uint64_t job) {
    if (job < c->next_id || job >= (uint64_t)INT64_MAX)
        return;
    sl_log(SL_LOG_WARN, "store", "node=%s reports job %llu, an id this database has not issued "
           "(restored from an earlier copy?): new jobs get ids after it", ctl_node_name(c, (int32_t)node),
           (unsigned long long)job);
    c->next_id = job + 1;
}

typedef struct unlisted {
    uint64_t job;
    int32_t task;
} unlisted_t;

void ctl_node_hello_end(ctl_t *c, uint32_t node) {
    ctl_node_t *n = ctl_node_get(c, node);
    if (n == NULL)
        return;
    /* Collect first: losing a task unlinks it (and may end its job). */
    size_t cnt = 0, cap = (size_t)n->live_tasks;
    unlisted_t *missing = sl_xmalloc((cap ? cap : 1) * sizeof *missing);
    sl_list_t *it;
    SL_LIST_FOREACH(it, &n->tasks) {
        if (cnt == cap)
            break;
        ctl_task_t *t = SL_LIST_ENTRY(it, ctl_task_t, node_link);
        if (t->seen != c->hello_stamp)
            missing[cnt++] = (unlisted_t){t->job->id, (int32_t)(t - t->job->tasks)};
    }
    for (size_t k = 0; k < cnt; k++) {
        int32_t i;
        ctl_job_t *j = ctl_task_find_live(c, node, missing[k].job, missing[k].task, &i);
        if (j == NULL)
            continue;
        if (j->tasks[i].state == CTL_TASK_LAUNCHING && j->state == CTL_JOB_RUNNING) {
            if (ctl_task_launch(c, j, i) < 0) { /* the launch never reached the agent */
                char why[sizeof j->reason];
                snprintf(why, sizeof why, "%s", j->reason);
                ctl_job_fail(c, j, why);
            }
        } else {
            char why[128];
            snprintf(why, sizeof why, "agent on %s no longer has task %d", ctl_node_name(c, (int32_t)node), i);
            ctl_job_lose(c, j, node, i, why);
        }
    }
    sl_free(missing);
}

void ctl_node_task_end(ctl_t *c, uint32_t node, uint64_t job, int64_t task, ctl_task_state_t st,
                       int32_t exit_code, int32_t sig, const char *reason, int64_t t_us) {
    int32_t i;
    ctl_job_t *j = ctl_task_find_live(c, node, job, task, &i);
    if (j == NULL)
        return;
    j->tasks[i].seen = c->hello_stamp;
    if (st == CTL_TASK_FAILED)
        ctl_task_ended(c, j, i, CTL_TASK_FAILED, 0, 0, false, reason, t_us);
    else
        ctl_task_ended(c, j, i, CTL_TASK_EXITED, exit_code, sig, true, NULL, t_us);
}

void ctl_node_task_mem(ctl_t *c, uint32_t node, uint64_t job, int64_t task, bool oom_killed,
                       int64_t mem_peak, int64_t mem_limit) {
    int32_t i;
    ctl_job_t *j = ctl_task_find_live(c, node, job, task, &i);
    if (j == NULL || (!oom_killed && mem_peak <= 0 && mem_limit <= 0))
        return;
    ctl_task_t *t = &j->tasks[i];
    t->oom_killed = oom_killed;
    t->mem_peak = mem_peak > 0 ? mem_peak : 0;
    t->mem_limit = mem_limit > 0 ? mem_limit : 0;
    ctl_task_res_t res;
    ctl_task_res(c, j, i, &res); /* an exclusive job's task holds its share of the node */
    t->mem_request = res.mem_bytes;
    ctl_store_task_mem_put(c->store, j, i);
    if (oom_killed)
        sl_log(SL_LOG_INFO, "job", "job=%llu task=%d killed for memory on node=%s: peak=%lld "
               "limit=%lld request=%lld bytes", (unsigned long long)job, i, ctl_node_name(c, (int32_t)node),
               (long long)t->mem_peak, (long long)t->mem_limit, (long long)t->mem_request);
}

void ctl_node_task_started(ctl_t *c, uint32_t node, uint64_t job, int64_t task, int64_t attempt,
                           int32_t pid, int64_t t_us) {
    int32_t i;
    bool stale;
    ctl_job_t *j = ctl_task_find_report(c, node, job, task, attempt, "started", &i, &stale);
    if (j != NULL)
        ctl_task_started(c, j, i, pid, t_us);
    else if (stale) /* an earlier run started late: it must not run beside this one */
        c->out.kill(c->out.ud, node, job, (int32_t)task, attempt);
}

void ctl_node_heard(ctl_t *c, uint32_t node, bool heartbeat) {
    ctl_node_t *n = ctl_node_get(c, node);
    if (n == NULL)
        return;
    n->last_seen_mono_us = ctl_mono_us();
    n->last_seen_us = ctl_now_us();
    if (heartbeat && sl_cluster_node(c->cl, node)->state == SL_NODE_DOWN) {
        /* Declared down while still connected (e.g. a long stall): it is
         * back; tasks it had were already handled as lost. */
        sl_cluster_set_state(c->cl, node, ctl_node_up_state(c, node));
        ctl_watch_node(c, node, "node.up");
        c->sched_dirty = true;
        kick(c);
    }
}

void ctl_node_failed(ctl_t *c, uint32_t node, const char *why) {
    const char *name = ctl_node_name(c, (int32_t)node);
    if (name[0] == '\0')
        name = "?";
    sl_log(SL_LOG_WARN, "node", "node=%s down: %s", name, why);
    int64_t t0 = ctl_mono_us(); /* the handling, for /metrics (obs.h) */
    c->n.node_failures++;
    ctl_node_t *fn = ctl_node_get(c, node);
    if (fn != NULL)
        ctl_node_fence(c, node, fn->last_seen_mono_us + ctl_fence_wait_us(c));
    sl_cluster_set_state(c->cl, node, SL_NODE_DOWN);
    ctl_watch_node(c, node, "node.down");
    c->out.node_down(c->out.ud, node, why);
    char why2[200];
    snprintf(why2, sizeof why2, "node %s failed (%s)", name, why);
    /* Losing the head task ends every live task of its job on this node,
     * so the list shrinks by at least one each time. */
    ctl_node_t *n = ctl_node_get(c, node);
    for (sl_list_t *head; n != NULL && (head = sl_list_first(&n->tasks)) != NULL;)
        ctl_job_lose(c, SL_LIST_ENTRY(head, ctl_task_t, node_link)->job, node, -1, why2);
    c->sched_dirty = true;
    kick(c);
    ctl_hist_observe(&c->obs.node_failure, ctl_mono_us() - t0);
}

/* ---- the sweep ---- */

typedef struct collect {
    uint64_t *ids;
    size_t n, cap;
    int64_t now;
} collect_t;

static int over_limit(void *ud, const sl_job_t *cj) {
    collect_t *col = ud;
    const sl_job_spec_t *sp = sl_job_spec(cj);
    if (sp->time_limit_us > 0 && sl_job_start_us(cj) >= 0 &&
        col->now - sl_job_start_us(cj) > sp->time_limit_us) {
        if (col->n == col->cap) {
            col->cap = col->cap ? 2 * col->cap : 16;
            col->ids = sl_xrealloc(col->ids, col->cap * sizeof *col->ids);
        }
        col->ids[col->n++] = sl_job_id(cj);
    }
    return 0;
}

void ctl_sweep(ctl_t *c) {
    int64_t mono = ctl_mono_us();
    int64_t timeout_us = c->cfg.node_timeout_ms * 1000;
    for (size_t i = 0; i < c->nnodes; i++) {
        ctl_node_t *n = c->nodes[i];
        const sl_node_t *nd = sl_cluster_node(c->cl, (uint32_t)i);
        if (n == NULL || nd == NULL)
            continue;
        if ((nd->state != SL_NODE_DOWN || n->live_tasks > 0) &&
            mono - n->last_seen_mono_us > timeout_us) {
            char why[96];
            snprintf(why, sizeof why, "no message for %.1f s",
                     (double)(mono - n->last_seen_mono_us) / 1e6);
            ctl_node_failed(c, (uint32_t)i, why);
        }
    }
    collect_t col = {NULL, 0, 0, ctl_now_us()};
    sl_sched_foreach(c->sched, SL_JOB_RUNNING, over_limit, &col);
    for (size_t i = 0; i < col.n; i++) {
        ctl_job_t *j = ctl_job_find(c, col.ids[i]);
        if (j && j->state == CTL_JOB_RUNNING) {
            char why[96];
            snprintf(why, sizeof why, "time limit of %lld s exceeded",
                     (long long)(j->core.time_limit_us / 1000000));
            ctl_notify_job(c, j, CTL_NOTIFY_TIME_LIMIT, why);
            ctl_job_fail(c, j, why);
        }
    }
    sl_free(col.ids);
    if (c->nfenced > 0)
        requeue_fenced(c);
    ctl_retry_sweep(c, ctl_job_fail);
    if (c->fin_len > 0)
        kick(c); /* the flush drops finished jobs past job_retention */
}
