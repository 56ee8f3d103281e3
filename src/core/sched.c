/*
 * sched.c - the scheduler's front door and the lifecycle of a job
 * (include/sluice/sched.h): configuration, create and destroy, submit,
 * cancel, finish, requeue, adopt and forget, a job's start and stop, the
 * tenant quota check and the placement of an elastic job (between its
 * minimum and full task count). The data structures are in sched_queue.c,
 * the cycle in sched_cycle.c, the checks in sched_check.c
 * (sched_internal.h says which file owns what).
 *
 * Elastic placement: sl_place_gang with the full task count; if that does
 * not fit, an upper bound of the tasks that fit (sum over free-capacity
 * classes of sl_node_fit_count) gives the first count to try; we then step
 * down linearly (at most ELASTIC_STEPS tries) and finally try min_tasks.
 * The bound is exact when the placer is complete, so this costs one or two
 * gang attempts in practice.
 *
 * in (sl__cluster_set_order_key, set at creation and checked, O(1), at each
 * cycle), so gpupacking and gpuclustering shuffle the nodes per seed.
 *
 * Pure: no I/O, no clock; time comes in as now_us.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h> /* snprintf only: formats reasons and errors, no I/O */
#include <stdlib.h>
#include <string.h>

#include "cluster_index.h"
#include "sched_internal.h"
#include "units.h"
#include "sluice/alloc.h"
#include "sluice/error.h"

/* Marks a pending job (already allocated at pls[0..n-1]) running. */
void sl__start_job(sl_sched_t *s, sl_job_t *j, const sl_place_t *pls, int32_t n, int64_t now_us) {
    tenant_t *t = tenant_of(s, j);
    sl__dequeue(s, j);
    j->pls = sl_xmalloc((size_t)n * sizeof *pls);
    memcpy(j->pls, pls, (size_t)n * sizeof *pls);
    j->nplaced = n;
    j->state = SL_JOB_RUNNING;
    j->status = SL_FIT;
    j->reason[0] = '\0';
    j->start_us = now_us;
    j->att_mark_us = now_us;
    sl__hist_push(j, now_us, n);
    t->usage = sl_res_add(t->usage, job_total(j, n));
    if (s->cap_valid) t->share = sl__share_of(t, s->cap);
    sl__wfq_charge(s, j, job_total(j, n));
    t->nrunning++;
    s->nrunning++;
    sl__run_insert(s, j);
}

void sl__hist_push(sl_job_t *j, int64_t at_us, int32_t n) {
    sl_size_change_t e = {at_us, n};
    if (!j->hist && j->nhist < 2) {
        j->h_in[j->nhist++] = e;
        return;
    }
    if (!j->hist) {
        j->hist = sl_xmalloc(SL_JOB_HISTORY_MAX * sizeof *j->hist);
        memcpy(j->hist, j->h_in, sizeof j->h_in);
    }
    if (j->nhist == SL_JOB_HISTORY_MAX) {
        memmove(j->hist, j->hist + 1, (SL_JOB_HISTORY_MAX - 1) * sizeof *j->hist);
        j->nhist--;
    }
    j->hist[j->nhist++] = e;
}

void sl__att_mark(sl_job_t *j, int64_t now_us) {
    j->att_gpu_s = job_attained(j, now_us);
    if (now_us > j->att_mark_us) j->att_mark_us = now_us;
}

void sl__stop_clear(sl_sched_t *s, sl_job_t *j) {
    if (j->stop_n == 0) return;
    sl_job_t *p = j->stop_for ? jobs_find(s, j->stop_for) : NULL;
    if (p && p->victims_left > 0) p->victims_left--;
    j->stop_n = 0;
    j->stop_whole = false;
    j->stop_for = 0;
}

/* Releases what a running job holds and takes it off the running list;
 * a stop the core asked for counts as done for its preemptor. */
static void stop_job(sl_sched_t *s, sl_job_t *j, int64_t now_us) {
    tenant_t *t = tenant_of(s, j);
    sl__stop_clear(s, j);
    sl__att_mark(j, now_us);
    sl__hist_push(j, now_us, 0);
    for (int32_t i = j->nplaced - 1; i >= 0; i--)
        sl__invariant(sl_cluster_release(s->cl, &j->spec.task, &j->pls[i]) == 0);
    t->usage = sl_res_sub(t->usage, job_total(j, j->nplaced));
    t->nrunning--;
    s->nrunning--;
    sl__run_remove(s, j);
    sl_free(j->pls);
    j->pls = NULL;
    j->nplaced = 0;
}

void sl__release_pls(sl_sched_t *s, const sl_task_req_t *req, const sl_place_t *pls, int32_t n) {
    for (int32_t i = n - 1; i >= 0; i--) sl__invariant(sl_cluster_release(s->cl, req, &pls[i]) == 0);
}

/* ---- config, create, destroy ---- */

/* The node order key of a seed: splitmix64's first output for it (the
 * golden-ratio step, then the mixer), so neighbouring seeds give unrelated
 * orders. */
static uint64_t order_key_of(uint64_t seed) {
    return sl_mix64(seed + UINT64_C(0x9e3779b97f4a7c15));
}

void sl_sched_config_init(sl_sched_config_t *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->queue = "fifo";
    cfg->placement = NULL;
    cfg->backfill = "none";
    cfg->max_backfill_tries = SL_SCHED_MAX_BACKFILL_TRIES_DEFAULT;
}

static void list_names(char *buf, size_t len, const char *const *names, size_t n) {
    size_t off = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && off < len; i++) {
        int w = snprintf(buf + off, len - off, "%s%s", i ? ", " : "", names[i]);
        if (w < 0) break;
        off += (size_t)w;
    }
}

int sl_sched_create(const sl_sched_config_t *cfg, sl_cluster_t *cl, sl_sched_t **out, char *err,
                    size_t errlen) {
    sl_sched_config_t def;
    if (!cfg) {
        sl_sched_config_init(&def);
        cfg = &def;
    }
    if (!cl || !out) {
        sl__setf(err, errlen, "missing cluster or output");
        return SL_EINVAL;
    }
    const char *names[16];
    char known[256];

    const char *qname = cfg->queue ? cfg->queue : "fifo";
    const sl_queue_policy_t *q = sl_queue_policy_find(qname);
    if (!q) {
        const sl_queue_policy_t *const *l = sl_queue_policy_list();
        size_t n = 0;
        for (; l[n] && n < 16; n++) names[n] = l[n]->name;
        list_names(known, sizeof known, names, n);
        sl__setf(err, errlen, "unknown queue \"%s\" (known: %s)", qname, known);
        return SL_EINVAL;
    }
    const char *pname = cfg->placement ? cfg->placement : sl_place_policy_default();
    const sl_place_policy_t *p = sl_place_policy_find(pname);
    if (!p) {
        const sl_place_policy_t *const *l = sl_place_policy_list();
        size_t n = 0;
        for (; l[n] && n < 16; n++) names[n] = l[n]->name;
        list_names(known, sizeof known, names, n);
        sl__setf(err, errlen, "unknown placement \"%s\" (known: %s)", pname, known);
        return SL_EINVAL;
    }
    const char *bname = cfg->backfill ? cfg->backfill : "none";
    const sl_backfill_policy_t *bf = sl_backfill_policy_find(bname);
    if (!bf) {
        const sl_backfill_policy_t *const *l = sl_backfill_policy_list();
        size_t n = 0;
        for (; l[n] && n < 16; n++) names[n] = l[n]->name;
        list_names(known, sizeof known, names, n);
        sl__setf(err, errlen, "unknown backfill \"%s\" (known: %s)", bname, known);
        return SL_EINVAL;
    }
    if (cfg->default_time_limit_us < 0) {
        sl__setf(err, errlen, "default_time_limit_us is negative");
        return SL_EINVAL;
    }
    if (cfg->max_starts_per_cycle < 0) {
        sl__setf(err, errlen, "max_starts_per_cycle is negative");
        return SL_EINVAL;
    }
    if (cfg->max_backfill_tries < 0) {
        sl__setf(err, errlen, "max_backfill_tries is negative");
        return SL_EINVAL;
    }
    if (cfg->preempt.max_per_minute < 0 || cfg->preempt.protect_after < 0 ||
        cfg->preempt.protect_us < 0 || cfg->preempt.max_preemptors < 0) {
        sl__setf(err, errlen, "preempt: %s is negative",
                 cfg->preempt.max_per_minute < 0  ? "max_per_minute"
                 : cfg->preempt.protect_after < 0 ? "protect_after"
                 : cfg->preempt.protect_us < 0    ? "protect_us"
                                                  : "max_preemptors");
        return SL_EINVAL;
    }
    for (int i = 0; i < 4; i++) {
        if (cfg->las_thresholds_gpu_s[i] < 0 ||
            (i > 0 && cfg->las_thresholds_gpu_s[i] > 0 &&
             cfg->las_thresholds_gpu_s[i] <= cfg->las_thresholds_gpu_s[i - 1])) {
            sl__setf(err, errlen, "las_thresholds_gpu_s: must be positive and ascending "
                     "(entry %d)", i);
            return SL_EINVAL;
        }
    }

    sl_sched_t *s = sl_xcalloc(1, sizeof *s);
    s->cl = cl;
    sl_workload_create(&s->wl);
    s->place = p;
    s->resv_place = *p;
    s->resv_place.filter = sl__resv_filter;
    s->queue = q;
    s->backfill = bf;
    sl_rng_seed(&s->rng, cfg->seed);
    s->order_key = order_key_of(cfg->seed);
    sl__cluster_set_order_key(cl, s->order_key);
    s->default_limit_us = cfg->default_time_limit_us;
    s->max_starts = cfg->max_starts_per_cycle;
    s->max_bf_tries = cfg->max_backfill_tries;
    s->group_skip = true;
    s->track_workload = cfg->track_workload;
    sl_hash_init(&s->jobs);
    s->pls = sl_xmalloc(SL_MAX_TASKS * sizeof *s->pls);
    s->fcache = sl_xcalloc(FCACHE_SIZE, sizeof *s->fcache);
    s->epoch = 1;
    s->clock_us = INT64_MIN;
    s->hold_since_us = -1;
    s->bf_state = bf->init ? bf->init() : NULL;
    s->pc = cfg->preempt;
    s->classes[0] = (sl_prio_class_spec_t){"default", 0, cfg->preempt.default_may_preempt, true};
    s->nclasses = 1;
    s->las = q == &sl__queue_las;
    for (int i = 0; i < 4 && cfg->las_thresholds_gpu_s[i] > 0; i++)
        s->las_thr[s->nlas++] = cfg->las_thresholds_gpu_s[i];
    if (s->nlas == 0) {
        static const int64_t las_def[4] = SL_LAS_THRESHOLDS_DEFAULT;
        for (int i = 0; i < 4 && las_def[i] > 0; i++) s->las_thr[s->nlas++] = las_def[i];
    }
    *out = s;
    return 0;
}

void sl_sched_destroy(sl_sched_t *s) {
    if (!s) return;
    size_t it = 0;
    for (const sl_hash_entry_t *e; (e = sl_hash_next(&s->jobs, &it));) {
        sl_job_t *j = e->val;
        sl_free(j->pls);
        sl_free(j->hist);
        sl_free(j);
    }
    sl_hash_fini(&s->jobs);
    sl__resv_fini(s);
    sl_free(s->nom);
    sl_free(s->pr_times);
    for (size_t i = 0; i < s->gbuckets; i++) {
        for (group_t *g = s->gtab[i], *nx; g; g = nx) {
            nx = g->h_next;
            sl_free(g);
        }
    }
    sl_free(s->gtab);
    sl_free(s->gdefer);
    for (size_t i = 0; i < s->ntenants; i++) {
        sl_heap_fini(&s->tenants[i].gh);
        sl_free(s->tenants[i].dl);
    }
    sl_free(s->tenants);
    sl_free(s->pls);
    sl_free(s->fcache);
    sl_heap_fini(&s->act);
    sl_free(s->started);
    sl_free(s->drained);
    if (s->backfill->fini) s->backfill->fini(s->bf_state);
    sl_workload_destroy(s->wl);
    sl_free(s);
}

sl_cluster_t *sl_sched_cluster(sl_sched_t *s) {
    return s->cl;
}
uint32_t sl_sched_node_rank(const sl_sched_t *s, uint32_t node) {
    return sl__node_rank(s->order_key, node);
}

sl_workload_t *sl_sched_workload(sl_sched_t *s) {
    return s->wl;
}
const sl_place_policy_t *sl_sched_place_policy(const sl_sched_t *s) {
    return s->place;
}
const sl_queue_policy_t *sl_sched_queue_policy(const sl_sched_t *s) {
    return s->queue;
}
sl_backfill_kind_t sl_sched_backfill(const sl_sched_t *s) {
    sl_backfill_kind_t k = SL_BACKFILL_NONE;
    sl_backfill_parse(s->backfill->name, &k);
    return k;
}
sl_rng_t *sl_sched_rng(sl_sched_t *s) {
    return &s->rng;
}

/* ---- jobs ---- */

static int spec_check(const sl_sched_t *s, const sl_job_spec_t *spec, char *err, size_t errlen) {
    if (!spec) {
        sl__setf(err, errlen, "job spec is missing");
        return SL_EINVAL;
    }
    if (!tenant_ok(s, spec->tenant)) {
        sl__setf(err, errlen, "tenant: no tenant with id %d", (int)spec->tenant);
        return SL_ENOENT;
    }
    if (jobs_find(s, spec->id)) {
        sl__setf(err, errlen, "id: job %llu already exists", (unsigned long long)spec->id);
        return SL_EEXIST;
    }
    if (spec->ntasks < 1 || spec->ntasks > SL_MAX_TASKS) {
        sl__setf(err, errlen, "ntasks: %d is outside 1..%d", (int)spec->ntasks, SL_MAX_TASKS);
        return SL_EINVAL;
    }
    if (spec->min_tasks < 0 || spec->min_tasks > spec->ntasks) {
        sl__setf(err, errlen, "min_tasks: %d is outside 0..ntasks (%d)", (int)spec->min_tasks,
             (int)spec->ntasks);
        return SL_EINVAL;
    }
    if (spec->prio_class < 0 || spec->prio_class >= s->nclasses) {
        sl__setf(err, errlen, "prio_class: no priority class with id %d", (int)spec->prio_class);
        return SL_EINVAL;
    }
    if (spec->time_limit_us < 0 || spec->default_limit_us < 0) {
        char v[SL__UNIT_BUF];
        bool own = spec->time_limit_us < 0;
        sl__setf(err, errlen, "%s: %s is negative", own ? "time_limit_us" : "default_limit_us",
                 sl__fmt_secs(v, sizeof v, own ? spec->time_limit_us : spec->default_limit_us));
        return SL_EINVAL;
    }
    char rerr[128];
    if (sl_task_req_check(&spec->task, rerr, sizeof rerr) != 0) {
        sl__setf(err, errlen, "task: %s", rerr);
        return SL_EINVAL;
    }
    const sl_task_req_t *t = &spec->task;
    bool nodes = t->nodes_min > 0 || t->nodes_max > 0 || t->tasks_per_node > 0 || t->exclusive ||
                 (t->include && t->include[0]) || (t->exclude && t->exclude[0]);
    if (nodes && spec->min_tasks > 0 && spec->min_tasks < spec->ntasks) {
        sl__setf(err, errlen, "min_tasks: an elastic job cannot also ask for its nodes "
                 "(nodes, tasks_per_node, exclusive, nodelist, exclude)");
        return SL_EINVAL;
    }
    if (t->tasks_per_node > 0 && spec->ntasks % t->tasks_per_node) {
        sl__setf(err, errlen, "tasks_per_node: %d tasks do not divide into %d per node",
                 (int)spec->ntasks, (int)t->tasks_per_node);
        return SL_EINVAL;
    }
    if (t->nodes_min > spec->ntasks) {
        sl__setf(err, errlen, "nodes: %d nodes need at least %d tasks, the job has %d",
                 (int)t->nodes_min, (int)t->nodes_min, (int)spec->ntasks);
        return SL_EINVAL;
    }
    if (t->tasks_per_node > 0 && t->nodes_min > 0) {
        int32_t N = spec->ntasks / t->tasks_per_node;
        int32_t hi = t->nodes_max > 0 ? t->nodes_max : t->nodes_min;
        if (N < t->nodes_min || N > hi) {
            sl__setf(err, errlen, "tasks_per_node: %d tasks at %d per node need %d nodes, "
                     "outside nodes %d..%d", (int)spec->ntasks, (int)t->tasks_per_node, (int)N,
                     (int)t->nodes_min, (int)hi);
            return SL_EINVAL;
        }
    }
    return 0;
}

static sl_job_t *job_new(sl_sched_t *s, const sl_job_spec_t *spec) {
    sl_job_t *j = sl_xcalloc(1, sizeof *j);
    j->spec = *spec;
    if (spec->prio_class > 0) j->spec.priority = s->classes[spec->prio_class].value;
    j->owner = s;
    j->start_us = -1;
    j->last_preempt_us = -1;
    j->status = SL_SKIP;
    j->tq.prio = j->gq.prio = j->eq.prio = sl_mix64(spec->id ^ UINT64_C(0x5851f42d4c957f2d));
    sl_hash_add(&s->jobs, spec->id, j);
    if (s->track_workload)
        sl_workload_add(s->wl, &spec->task, spec->ntasks);
    return j;
}

int sl_sched_submit(sl_sched_t *s, const sl_job_spec_t *spec, char *err, size_t errlen) {
    int rc = spec_check(s, spec, err, errlen);
    if (rc) return rc;
    if (spec->resv != 0) {
        sl_resv_info_t ri;
        if (sl_sched_resv_get(s, spec->resv, &ri) != 0) {
            sl__setf(err, errlen, "reservation: no reservation with id %d", (int)spec->resv);
            return SL_ENOENT;
        }
        if (!sl_sched_resv_admits(s, spec->resv, spec->tenant)) {
            sl__setf(err, errlen, "reservation: %s does not admit tenant %s", ri.name,
                     s->tenants[spec->tenant].name);
            return SL_EPERM;
        }
    }
    sl__enqueue(s, job_new(s, spec));
    return 0;
}

const sl_job_t *sl_sched_job(const sl_sched_t *s, uint64_t id) {
    return jobs_find(s, id);
}

int sl_sched_cancel(sl_sched_t *s, uint64_t id, int64_t now_us) {
    sl_job_t *j = jobs_find(s, id);
    if (!j) return SL_ENOENT;
    see_time(s, now_us);
    if (j->state == SL_JOB_PENDING) sl__dequeue(s, j);
    else if (j->state == SL_JOB_RUNNING) stop_job(s, j, now_us);
    else return SL_ESTATE;
    j->state = SL_JOB_CANCELLED;
    if (s->hold_id == id) { /* a cancelled job releases its held reservation */
        s->hold_id = 0;
        s->hold_since_us = -1;
    }
    char at[SL__UNIT_BUF];
    sl__setf(j->reason, sizeof j->reason, "cancelled at t=%s", sl__fmt_secs(at, sizeof at, now_us));
    return 0;
}

int sl_sched_finish(sl_sched_t *s, uint64_t id, int64_t now_us) {
    sl_job_t *j = jobs_find(s, id);
    if (!j) return SL_ENOENT;
    if (j->state != SL_JOB_RUNNING) return SL_ESTATE;
    see_time(s, now_us);
    stop_job(s, j, now_us);
    j->state = SL_JOB_DONE;
    j->reason[0] = '\0';
    return 0;
}

int sl_sched_requeue(sl_sched_t *s, uint64_t id, int64_t now_us) {
    sl_job_t *j = jobs_find(s, id);
    if (!j) return SL_ENOENT;
    if (j->state != SL_JOB_RUNNING) return SL_ESTATE;
    see_time(s, now_us);
    stop_job(s, j, now_us);
    j->start_us = -1;
    j->status = SL_SKIP;
    char at[SL__UNIT_BUF];
    sl__setf(j->reason, sizeof j->reason, "requeued at t=%s", sl__fmt_secs(at, sizeof at, now_us));
    j->reason_epoch = s->epoch;
    sl__enqueue(s, j);
    return 0;
}

int sl_sched_adopt(sl_sched_t *s, const sl_job_spec_t *spec, const sl_place_t *pls, int32_t n,
                   int64_t start_us, char *err, size_t errlen) {
    int rc = spec_check(s, spec, err, errlen);
    if (rc) return rc;
    int32_t m = spec->min_tasks > 0 ? spec->min_tasks : spec->ntasks;
    if (!pls || n < m || n > spec->ntasks) {
        sl__setf(err, errlen, "placed tasks: %d is outside %d..%d", (int)n, (int)m, (int)spec->ntasks);
        return SL_EINVAL;
    }
    if (start_us < 0) {
        char v[SL__UNIT_BUF];
        sl__setf(err, errlen, "start_us: %s is negative", sl__fmt_secs(v, sizeof v, start_us));
        return SL_EINVAL;
    }
    for (int32_t i = 0; i < n; i++) {
        rc = sl_cluster_alloc(s->cl, &spec->task, &pls[i]);
        if (rc == 0) continue;
        sl__release_pls(s, &spec->task, pls, i);
        if (rc == SL_ENOSPC) {
            sl__setf(err, errlen, "task %d: node %u lacks free capacity", (int)i, (unsigned)pls[i].node);
            return SL_ENOSPC;
        }
        sl__setf(err, errlen, "task %d: placement does not match the node or request (%s)", (int)i,
             sl_strerror(rc));
        return SL_EINVAL;
    }
    sl_job_t *j = job_new(s, spec);
    tenant_t *t = tenant_of(s, j);
    j->pls = sl_xmalloc((size_t)n * sizeof *pls);
    memcpy(j->pls, pls, (size_t)n * sizeof *pls);
    j->nplaced = n;
    j->state = SL_JOB_RUNNING;
    j->status = SL_FIT;
    j->start_us = start_us;
    j->att_mark_us = start_us;
    sl__hist_push(j, start_us, n);
    t->usage = sl_res_add(t->usage, job_total(j, n));
    t->nrunning++;
    s->nrunning++;
    sl__run_insert(s, j);
    return 0;
}

int sl_sched_forget(sl_sched_t *s, uint64_t id) {
    sl_job_t *j = jobs_find(s, id);
    if (!j) return SL_ENOENT;
    if (j->state == SL_JOB_PENDING || j->state == SL_JOB_RUNNING) return SL_ESTATE;
    sl_hash_remove(&s->jobs, id, j);
    sl_free(j->pls);
    sl_free(j->hist);
    sl_free(j);
    return 0;
}

size_t sl_sched_pending_count(const sl_sched_t *s) {
    return s->npending;
}

size_t sl_sched_running_count(const sl_sched_t *s) {
    return s->nrunning;
}

/* ---- placement of one job ---- */

/* Tasks of req that fit now, summed over classes; stops at cap. */
static int32_t fit_bound(const sl_sched_t *s, const sl_task_req_t *req, int32_t cap) {
    int64_t sum = 0;
    size_t nc = sl_cluster_class_count(s->cl);
    for (size_t i = 0; i < nc && sum < cap; i++)
        sum += (int64_t)sl_cluster_class_size(s->cl, i) *
               sl_node_fit_count(sl_cluster_class_rep(s->cl, i), req, cap);
    return sum < cap ? (int32_t)sum : cap;
}

/*
 * Places between m and n tasks of j (the most that fit); on SL_FIT the
 * resources are allocated at s->pls[0..*k-1]. Otherwise the reason goes to
 * reason and the status of the attempt at m tasks is returned.
 */
static int place_range(sl_sched_t *s, const sl_place_policy_t *pol, sl_cycle_t *cy,
                       const sl_job_t *j, int32_t n, int32_t m, int32_t *k, char *reason,
                       size_t rlen) {
    const sl_task_req_t *req = &j->spec.task;
    int rc = sl_place_gang(pol, cy, s->cl, req, n, s->pls, reason, rlen);
    if (rc == SL_FIT) {
        *k = n;
        return SL_FIT;
    }
    if (m >= n) return rc;
    int32_t c = fit_bound(s, req, n - 1);
    for (int steps = 0; c > m && steps < ELASTIC_STEPS; c--, steps++) {
        if (sl_place_gang(pol, cy, s->cl, req, c, s->pls, NULL, 0) == SL_FIT) {
            *k = c;
            return SL_FIT;
        }
    }
    char r2[SL_REASON_MAX];
    rc = sl_place_gang(pol, cy, s->cl, req, m, s->pls, r2, sizeof r2);
    if (rc == SL_FIT) {
        *k = m;
        return SL_FIT;
    }
    sl__setf(reason, rlen, "elastic: not even %d of %d tasks fit: %s", (int)m, (int)n, r2);
    return rc;
}

/* Advance reservations (sched_resv.c): the nodes j may not use are out of
 * the index for the attempt; a failure says why they were. */
int sl__place_range(sl_sched_t *s, sl_cycle_t *cy, const sl_job_t *j, int32_t n, int32_t m,
                    int32_t *k, char *reason, size_t rlen) {
    if (s->nresv == 0 && j->spec.resv == 0)
        return place_range(s, s->place, cy, j, n, m, k, reason, rlen);
    char r[SL_REASON_MAX];
    int rc;
    bool kept = false;
    if (j->spec.resv) {
        /* Only its reservation's nodes: a filter on top of the policy's. */
        rc = sl__resv_allow(s, j, cy, reason, rlen);
        if (rc != SL_FIT) return rc;
        rc = place_range(s, &s->resv_place, cy, j, n, m, k, r, sizeof r);
        cy->allow = NULL;
        cy->allow_n = 0;
        cy->allow_base = NULL;
    } else {
        sl__resv_exclude(s, j, cy->now_us, cy->now_us, NULL, 0);
        kept = s->nxdrained > 0;
        rc = place_range(s, s->place, cy, j, n, m, k, r, sizeof r);
        sl__resv_restore(s);
    }
    if (rc != SL_FIT && reason) {
        if (j->spec.resv) sl__setf(reason, rlen, "in its reservation's nodes: %s", r);
        else if (kept) sl__setf(reason, rlen, "kept off reserved nodes (it would run into a "
                                "reservation's window): %s", r);
        else sl__setf(reason, rlen, "%s", r);
    }
    return rc;
}

/* The count the tenant's quota allows (<= n), or -1 with a reason if not even m. */
int32_t sl__quota_cap(const sl_sched_t *s, const sl_job_t *j, int32_t n, int32_t m, char *reason,
                         size_t rlen) {
    const tenant_t *t = tenant_of(s, j);
    sl_res_t per = sl_task_req_total(&j->spec.task);
    const int64_t q[3] = {t->quota.cpu_milli, t->quota.mem_bytes, t->quota.gpu_milli};
    const int64_t u[3] = {t->usage.cpu_milli, t->usage.mem_bytes, t->usage.gpu_milli};
    const int64_t d[3] = {per.cpu_milli, per.mem_bytes, per.gpu_milli};
    int32_t k = n;
    for (int i = 0; i < 3; i++) {
        if (q[i] <= 0 || d[i] <= 0) continue;
        int64_t room = q[i] - u[i];
        int64_t fit = room < 0 ? 0 : room / d[i];
        if (fit < m) {
            /* In the user's units: "8 GPUs in use + 32 GPUs for this job > 24 GPUs". */
            char a[SL__UNIT_BUF], b[SL__UNIT_BUF], c[SL__UNIT_BUF];
            const char *mem = i == 1 ? " memory" : "";
            char *(*fmt)(char *, size_t, int64_t) =
                i == 0 ? sl__fmt_cpus : i == 1 ? sl__fmt_bytes : sl__fmt_gpus;
            sl__setf(reason, rlen, "tenant %s quota: %s%s in use + %s%s for this job > %s%s",
                     t->name, fmt(a, sizeof a, u[i]), mem, fmt(b, sizeof b, d[i] * m), mem,
                     fmt(c, sizeof c, q[i]), mem);
            return -1;
        }
        if (fit < k) k = (int32_t)fit;
    }
    return k;
}

