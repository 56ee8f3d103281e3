/*
 * recover.c - sluiced's start-up from the database, which is the truth.
 *
 * Nodes are re-created in the core as down (their agents must say hello
 * again, within node_timeout); pending jobs return to the queue with their
 * original submit times; jobs that hold tasks are re-adopted at their
 * stored placement (sl_sched_adopt), so nothing is restarted, and the
 * agents' hello reports then confirm, end or resend each task. A job whose
 * tenant or spec is no longer acceptable, or whose placement no longer
 * fits, is failed (its tasks told to stop). Of the finished jobs only those
 * within job_retention and max_finished_jobs are read; the rest stay on
 * disk and ctl_job_fetch reads one back by id.
 */
#include <stdio.h>
#include <string.h>

#include "domain/deps.h"
#include "domain/drain.h"
#include "domain/health.h"
#include "domain/jobs.h"
#include "log.h"
#include "store/store.h"
#include "domain/preempt.h"
#include "domain/recover.h"
#include "domain/retry.h"
#include "domain/reservations.h"

static int node_row(void *ud, const char *name, const char *spec, const char *addr,
                    int64_t last_seen_us) {
    ctl_t *c = ud;
    json_t *js = json_loads(spec, 0, NULL);
    if (js == NULL || !json_is_object(js)) {
        json_decref(js);
        ctl_store_set_error(c->store, "node %.63s: its stored spec is not a JSON object", name);
        return -1;
    }
    sl_node_spec_t ns = {
        .name = name,
        .cpu_milli = json_integer_value(json_object_get(js, "cpu_milli")),
        .mem_bytes = json_integer_value(json_object_get(js, "mem_bytes")),
        .gpus = (int32_t)json_integer_value(json_object_get(js, "gpus")),
        .gpu_model = json_string_value(json_object_get(js, "gpu_model")),
        .gpu_mem_bytes = json_integer_value(json_object_get(js, "gpu_mem_bytes")),
        .pool = json_string_value(json_object_get(js, "pool")),
        .labels = json_string_value(json_object_get(js, "labels")),
        .taints = json_string_value(json_object_get(js, "taints")),
    };
    char tb[1024]; /* a dedicated pool's nodes carry its taint (config.h) */
    ns.taints = ctl_node_taints(&c->cfg, ns.pool, ns.taints, tb, sizeof tb);
    uint32_t id;
    char err[200];
    if (sl_cluster_add_node(c->cl, &ns, &id, err, sizeof err) < 0) {
        sl_log(SL_LOG_WARN, "store", "node=%s not restored: %s", name, err);
        json_decref(js);
        return 0; /* its agent may register it again */
    }
    sl_cluster_set_state(c->cl, id, SL_NODE_DOWN);
    ctl_node_t *n = ctl_node_new(c, id);
    n->spec_json = sl_xstrdup(spec);
    snprintf(n->addr, sizeof n->addr, "%s", addr ? addr : "");
    n->last_seen_us = last_seen_us;
    n->last_seen_mono_us = c->started_mono_us; /* its agent has node_timeout to return */
    if (ns.gpu_model)
        snprintf(n->gpu_model, sizeof n->gpu_model, "%s", ns.gpu_model);
    json_decref(js);
    return 0;
}

/* Jobs read from the store, in the order read. */
typedef struct jobvec {
    ctl_t *c;
    ctl_job_t **v;
    size_t n, cap;
} jobvec_t;

static int job_row(void *ud, ctl_job_t *j, const char *tenant) {
    jobvec_t *jv = ud;
    if (ctl_job_find(jv->c, j->id) != NULL) {
        ctl_job_free(j); /* already loaded as active: its tasks were still stopping */
        return 0;
    }
    j->tenant = sl_sched_tenant_find(jv->c->sched, tenant);
    if (jv->n == jv->cap) {
        jv->cap = jv->cap ? 2 * jv->cap : 256;
        jv->v = sl_xrealloc(jv->v, jv->cap * sizeof *jv->v);
    }
    jv->v[jv->n++] = j;
    return 0;
}

/* Fails every live task of j that could not be re-adopted (why) and j. */
static void drop_tasks(ctl_t *c, ctl_job_t *j, const char *why) {
    for (int32_t i = 0; i < j->ntasks; i++) {
        ctl_task_t *t = &j->tasks[i];
        if (!ctl_task_is_live(t))
            continue;
        ctl_node_unlink(c, t);
        if (t->node >= 0)
            c->out.kill(c->out.ud, (uint32_t)t->node, j->id, i, t->attempt);
        t->state = CTL_TASK_LOST;
        ctl_store_task_put(c->store, j, i, ctl_node_name(c, t->node));
    }
    j->live = 0;
    j->requeue_wait = false;
    if (j->state == CTL_JOB_RUNNING || j->state == CTL_JOB_PENDING)
        ctl_job_fail(c, j, why);
}

/* An elastic job whose last size change (this run's, committed with its
 * task rows: store/store.h) is below its task rows was being shrunk when the
 * controller stopped: the ranks above the size carry on stopping, and their
 * ends are not failures. */
static void resume_shrink(ctl_t *c, ctl_job_t *j) {
    const sl_job_spec_t *sp = &j->core;
    if (j->state != CTL_JOB_RUNNING || sp->min_tasks <= 0 || sp->min_tasks >= sp->ntasks)
        return;
    ctl_size_change_t z;
    int rc = ctl_store_size_last(c->store, j->id, &z);
    if (rc < 0)
        sl_log(SL_LOG_ERROR, "store", "job=%llu: %s", (unsigned long long)j->id,
               ctl_store_errmsg(c->store));
    if (rc == 1 && z.at_us >= j->start_us && z.size < j->ntasks)
        ctl_job_resume_shrink(c, j, z.size);
}

/* Puts a loaded job back into the core: pending jobs into the queue, jobs
 * with live tasks re-adopted at their stored placement. */
static void restore_job(ctl_t *c, ctl_job_t *j) {
    char err[256];
    if (j->state == CTL_JOB_PENDING && !j->requeue_wait) {
        j->ntasks = 0;
        sl_free(j->tasks);
        j->tasks = NULL;
        if (sl_sched_submit(c->sched, &j->core, err, sizeof err) < 0) {
            ctl_job_fail(c, j, err);
            return;
        }
        j->in_core = true;
        return;
    }
    for (int32_t i = 0; i < j->ntasks; i++) {
        if (ctl_task_is_live(&j->tasks[i])) {
            j->live++;
            ctl_node_link(c, j, i);
        }
    }
    if (j->live == 0 && j->state != CTL_JOB_RUNNING && !j->requeue_wait)
        return; /* finished and settled */
    sl_place_t *pls = sl_xcalloc((size_t)(j->ntasks ? j->ntasks : 1), sizeof *pls);
    bool ok = j->ntasks > 0;
    for (int32_t i = 0; i < j->ntasks; i++) {
        if (j->tasks[i].node < 0)
            ok = false;
        pls[i] = (sl_place_t){(uint32_t)(j->tasks[i].node < 0 ? 0 : j->tasks[i].node),
                              j->tasks[i].gpu_mask, j->tasks[i].gpu_milli,
                              j->tasks[i].gpu_mem_bytes};
    }
    int rc = ok ? sl_sched_adopt(c->sched, &j->core, pls, j->ntasks, j->start_us, err, sizeof err)
                : SL_EINVAL;
    sl_free(pls);
    if (rc < 0) {
        if (!ok)
            snprintf(err, sizeof err, "placement lost");
        sl_log(SL_LOG_ERROR, "store", "job=%llu cannot be re-adopted: %s",
               (unsigned long long)j->id, err);
        char why[300];
        snprintf(why, sizeof why, "could not be re-adopted after restart: %s", err);
        drop_tasks(c, j, why);
        return;
    }
    j->in_core = true;
    j->master_node = (uint32_t)j->tasks[0].node;
    resume_shrink(c, j);
    if (j->live == 0)
        ctl_job_settle(c, j); /* every task ended and was recorded before the crash */
}

/* Registers a job read at start-up that is (or was, before the crash)
 * pending or running. False if it could not be kept as such: its tenant
 * or spec is no longer acceptable, and it was failed; *bad is then set
 * when its task rows could not be read. */
static bool load_active(ctl_t *c, ctl_job_t *j, bool *bad) {
    char err[256];
    if (j->tenant < 0) {
        const char *tenant = json_string_value(json_object_get(j->spec, "tenant"));
        snprintf(err, sizeof err, "tenant \"%s\" is no longer configured", tenant ? tenant : "");
        j->tenant = 0;
        char ignored[256];
        ctl_job_core_spec(c, j, ignored, sizeof ignored); /* for the task count only */
    } else if (ctl_job_core_spec(c, j, err, sizeof err) == 0) {
        j->core.submit_us = j->submit_us;
        ctl_job_register(c, j);
        return true;
    }
    ctl_job_register(c, j);
    ctl_job_release_names(c, j); /* it will not be scheduled */
    if (j->state == CTL_JOB_PENDING || j->state == CTL_JOB_RUNNING)
        ctl_job_fail(c, j, err);
    else
        ctl_job_retain(c, j);
    /* After the failure: none of them is re-adopted. */
    *bad = ctl_job_load_tasks(c, j) < 0;
    return false;
}

int ctl_recover(ctl_t *c, char *err, size_t errlen) {
    uint64_t max_id;
    jobvec_t all = {c, NULL, 0, 0}, fin = {c, NULL, 0, 0};
    int rc = -1;
    if (ctl_store_nodes_read(c->store, node_row, c) < 0 || ctl_drains_restore(c) < 0 ||
        ctl_health_restore(c) < 0 || ctl_resvs_restore(c) < 0 ||
        ctl_store_max_id(c->store, &max_id) < 0)
        goto out;
    c->next_id = max_id + 1;

    /* Active jobs: pending or running, or finished with tasks that had
     * not yet reported their end. Any row that cannot be read stops the
     * load: a job silently left out would be lost for good. */
    if (ctl_store_jobs_active(c->store, job_row, &all) < 0)
        goto out;
    size_t nactive = 0;
    bool bad = false;
    for (size_t i = 0; i < all.n && !bad; i++)
        if (load_active(c, all.v[i], &bad))
            all.v[nactive++] = all.v[i];
    if (bad)
        goto out;

    /* The newest finished jobs within job_retention and max_finished_jobs,
     * retained oldest first as if they had just finished. */
    if (c->cfg.job_retention_ms > 0 && c->cfg.max_finished_jobs > 0) {
        if (ctl_store_jobs_finished(c->store, ctl_now_us() - c->cfg.job_retention_ms * 1000,
                                    c->cfg.max_finished_jobs, job_row, &fin) < 0)
            goto out;
        for (size_t i = fin.n; i-- > 0;) {
            ctl_job_t *j = fin.v[i];
            fin.v[i] = NULL; /* the table owns it from here */
            ctl_job_register(c, j);
            ctl_job_retain(c, j);
            if (ctl_job_load_tasks(c, j) < 0)
                goto out;
        }
    }

    for (size_t i = 0; i < nactive; i++)
        if (ctl_job_load_tasks(c, all.v[i]) < 0)
            goto out;
    /* Jobs that wait on dependencies or on their array stay out of the
     * core; deps.c releases them after the restore (docs/arrays.md). */
    if (ctl_deps_recover_hold(c) < 0)
        goto out;
    /* Jobs in a retry's back-off stay out of the core until it is over. */
    if (ctl_retry_recover(c) < 0)
        goto out;
    size_t pending = 0, adopted = 0;
    for (size_t i = 0; i < nactive; i++) {
        ctl_job_t *j = all.v[i];
        if (j->in_core || j->hold != CTL_HOLD_NONE || j->retry_wait)
            continue;
        bool is_pending = j->state == CTL_JOB_PENDING;
        restore_job(c, j);
        if (j->in_core && is_pending)
            pending++;
        else if (j->in_core)
            adopted++;
        else if (j->live == 0) {
            ctl_job_release_names(c, j);
            ctl_job_retain(c, j); /* finished and settled before the crash */
        }
    }
    ctl_deps_recover_release(c);
    sl_log(SL_LOG_INFO, "store", "loaded active=%zu pending=%zu adopted=%zu finished=%zu nodes=%zu",
           nactive, pending, adopted, fin.n, c->nnodes);
    ctl_store_commit(c->store);
    /* A new epoch for this run, durable before any agent hears of it (the
     * ports open after this), and only once the state has loaded: a
     * refused load leaves the file as it was. In HA mode the election
     * gives it (the leader key's etcd revision, ctl_set_epoch), not this
     * counter, which restarts could push past a later leader's revision. */
    if (c->ha == NULL) {
        char eerr[512];
        if (ctl_store_epoch_bump(c->store, &c->epoch, eerr, sizeof eerr) < 0) {
            ctl_store_set_error(c->store, "%s", eerr);
            goto out;
        }
        sl_log(SL_LOG_INFO, "store", "epoch=%llu", (unsigned long long)c->epoch);
    }
    c->sched_dirty = true;
    /* From here a failed read means the file went bad under a running
     * sluiced: stop, as for a failed write. */
    ctl_store_set_fail_stop(c->store);
    rc = 0;
out:
    if (rc < 0) {
        snprintf(err, errlen, "%s", ctl_store_errmsg(c->store));
        /* Jobs failed before the bad row was met stay as they were on disk. */
        ctl_store_discard(c->store);
        /* Rows read but not yet in the job table are the loader's. */
        for (size_t i = 0; i < all.n; i++)
            if (all.v[i] != NULL && ctl_job_find(c, all.v[i]->id) != all.v[i])
                ctl_job_free(all.v[i]);
        for (size_t i = 0; i < fin.n; i++)
            if (fin.v[i] != NULL)
                ctl_job_free(fin.v[i]);
    }
    sl_free(all.v);
    sl_free(fin.v);
    return rc;
}
