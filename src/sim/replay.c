/*
 * replay.c - discrete-event replay of a trace through the scheduling core.
 *
 * Events (a job arrives, a job ends) sit in a binary min-heap ordered by
 * (time, sequence number), so events at the same time keep the order they
 * were created in. The loop pops every event of the earliest time, applies
 * it to the scheduler (sl_sched_submit or sl_sched_finish), then runs one
 * scheduling round at that time; each job the cycle starts schedules its end
 * event at start + run time. Run time = the trace's duration, cut at the
 * job's time limit when it has one (a job is killed at its limit, as Slurm
 * does). The limit handed to the core (the runtime estimate EASY backfill
 * plans with) is the time_limit column, or, with --estimate exact (the
 * default) and no limit given, the job's real duration.
 *
 * Jobs that cannot run on this cluster even when it is empty (too many
 * GPUs for any node, an unknown GPU model) are found up front by placing
 * their gang on an empty copy of the cluster, counted as rejected and never
 * submitted, so that a strict queue is not blocked forever by them.
 *
 * Metrics are sampled after each cycle and weighted by the time until the
 * next event: GPU allocation (allocated / total GPU milli), GPU memory idle
 * (GPU memory of GPUs holding at least one task that no task asked for),
 * FGD fragmentation (sl_frag_cluster over the trace's task shapes, as a
 * fraction of GPU capacity), and the DRF fairness ratio and Jain's index
 * over backlogged tenants from sl_sched_fairness (sluice/fair.h: what each
 * holds against its weighted max-min fair share given every tenant's
 * demand; the controller's /metrics reads the same function), averaged
 * over the time some tenant is backlogged. Scheduling latency is the wall time of each sl_sched_cycle
 * call that had pending jobs to consider, apart from queueing delay.
 *
 * Every run goes through sl_sched_run (the cycle, and with cfg->preempt
 * also preemption, fair-share reclaim and elastic growth; without it
 * exactly sl_sched_cycle's decisions). A job's work is its run time times
 * its ntasks, done at one unit per task, so its end is rescheduled when its
 * size changes; a finish event carries the generation of the run and size
 * it was scheduled for and is dropped once stale. Stops (preemptions,
 * shrinks) are carried out right after the run that decided them (grace
 * 0), with the lost work (since the last checkpoint, or the whole run)
 * added back to the victim's work, and a further run at the same time
 * starts the jobs they were made for.
 *
 * Cost: O(events log events) for the heap plus the core's cycles.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sim.h"

/* ------------------------------------------------------------ event heap */

enum { EV_FINISH = 0, EV_ARRIVE = 1 };

typedef struct ev {
    int64_t t;
    uint64_t seq;
    uint32_t job;
    uint32_t gen;  /* EV_FINISH: the job's run it ends (stale if the job moved on) */
    uint8_t kind;
} ev_t;

/* The events in the core's heap (sluice/heap.h), by time, then by the
 * order they were pushed in (seq), so ties keep arrival order. */
typedef struct evheap {
    sl_heap_t h;
    uint64_t seq;
} evheap_t;

static bool ev_less(void *ctx, const void *a, const void *b) {
    const ev_t *x = a, *y = b;
    return x->t < y->t || (x->t == y->t && x->seq < y->seq);
}

static const sl_heap_type_t ev_heap = {sizeof(ev_t), ev_less, NULL};

static void heap_push(evheap_t *h, int64_t t, uint32_t job, uint32_t gen, uint8_t kind) {
    ev_t e = {t, h->seq++, job, gen, kind};
    sl_heap_push(&h->h, &ev_heap, NULL, &e);
}

static ev_t heap_pop(evheap_t *h) {
    ev_t top;
    sl_heap_pop(&h->h, &ev_heap, NULL, &top);
    return top;
}

static size_t heap_count(const evheap_t *h) {
    return sl_heap_count(&h->h);
}

/* The earliest event's time; the heap must not be empty. */
static int64_t heap_next_t(const evheap_t *h) {
    return ((const ev_t *)sl_heap_top(&h->h))->t;
}

/* ------------------------------------------------------------ state */

typedef struct shape {
    sl_task_req_t req;
    int32_t ntasks;
    bool fits;
} shape_t;

typedef struct replay {
    const sim_trace_t *t;
    const sim_replay_cfg_t *cfg;
    sl_cluster_t *cl;
    sl_sched_t *s;
    evheap_t heap;
    sl_task_req_t *reqs;     /* per trace job */
    int32_t *tenant_ids;     /* trace tenant -> scheduler tenant */
    sim_job_rec_t *recs;
    int64_t cap_gpu;         /* total GPU milli */
    int64_t alloc_gpu;       /* allocated GPU milli */
    int32_t *gpu_tasks;      /* per node * 16 GPUs: tasks on the GPU */
    int64_t mem_on;          /* GPU memory of GPUs holding a task */
    double mem_need;         /* GPU memory the tasks on them asked for */
    bool mem_known;
    size_t started, completed;
    int64_t now;
    /* Job arrays (arrays.c): per trace index of an array's first element,
     * its elements submitted and not ended, and where the search for the
     * next held one resumes; per job, whether it waits at its array's limit. */
    int32_t *arr_active;
    uint32_t *arr_next;
    bool *arr_held;
    /* Work, for preemption and elastic sizes: a job's work is its run time
     * times its ntasks (task-microseconds), done at one unit per task, so
     * an elastic job at k of n tasks runs n/k times as long (linear
     * scaling). Per job: work left, since when its current tasks worked
     * (mark), how many, when its current run started, and the generation
     * its finish event must carry. */
    int64_t *work_left, *mark_us, *run_start;
    int64_t *used;            /* task-microseconds held, over all its runs */
    int32_t *cur_tasks;
    uint32_t *gen;
    /* Stops the last run asked for (grace 0: applied right after it). */
    uint64_t *stops;
    size_t nstops, stops_cap;
    size_t preemptions, shrinks, grows;
    double lost_gpu_s;
    /* Topology: gangs started (more than one task) on a cluster with
     * topology, and the racks and blocks they spanned, summed. */
    bool topo;               /* the trace has topology (sim_topo_present) */
    size_t topo_gangs;
    double topo_racks, topo_blocks;
} replay_t;

static int64_t run_us(const sim_job_t *j) {
    if (j->time_limit_us > 0 && j->time_limit_us < j->duration_us) return j->time_limit_us;
    return j->duration_us;
}

/* GPU memory one task of job j asks for on a GPU of node nd (what the
 * memory-idle measure counts as used). */
static double task_mem_need(const replay_t *rp, const sim_job_t *j, const sl_node_t *nd) {
    if (j->gpus > 0) return (double)nd->gpu_mem_total;
    if (j->gpu_mem_bytes > 0)
        return (double)(j->gpu_mem_bytes < nd->gpu_mem_total ? j->gpu_mem_bytes : nd->gpu_mem_total);
    return (double)nd->gpu_mem_total * j->gpu_milli / SL_GPU_MILLI;
    (void)rp;
}

/* Adds (sign 1) or removes (sign -1) the GPU memory accounting of tasks
 * [lo, hi) of a job. */
static void mem_account(replay_t *rp, const sl_job_t *job, const sim_job_t *j, int32_t lo,
                        int32_t hi, int sign) {
    for (int32_t i = lo; i < hi; i++) {
        const sl_place_t *pl = sl_job_place(job, i);
        const sl_node_t *nd = sl_cluster_node(rp->cl, pl->node);
        if (nd->gpu_mem_total <= 0) continue;
        double need = task_mem_need(rp, j, nd);
        for (int g = 0; g < SL_MAX_GPUS_PER_NODE; g++) {
            if (!(pl->gpu_mask & (1u << g))) continue;
            int32_t *cnt = &rp->gpu_tasks[(size_t)pl->node * SL_MAX_GPUS_PER_NODE + (size_t)g];
            if (sign > 0) {
                if ((*cnt)++ == 0) rp->mem_on += nd->gpu_mem_total;
                rp->mem_need += need;
            } else {
                if (--(*cnt) == 0) rp->mem_on -= nd->gpu_mem_total;
                rp->mem_need -= need;
            }
        }
    }
}

/* GPU milli of one task of trace job idx. */
static int64_t task_gpu(const replay_t *rp, uint32_t idx) {
    return rp->reqs[idx].gpus > 0 ? (int64_t)rp->reqs[idx].gpus * SL_GPU_MILLI : rp->reqs[idx].gpu_milli;
}

/* Counts the work job idx's current tasks did since the mark. */
static void work_mark(replay_t *rp, uint32_t idx) {
    rp->used[idx] += (int64_t)rp->cur_tasks[idx] * (rp->now - rp->mark_us[idx]);
    rp->work_left[idx] -= (int64_t)rp->cur_tasks[idx] * (rp->now - rp->mark_us[idx]);
    if (rp->work_left[idx] < 0) rp->work_left[idx] = 0;
    rp->mark_us[idx] = rp->now;
}

/* Schedules job idx's end at its current size (a new generation: the
 * finish events of earlier sizes or runs become stale). */
static void arm_finish(replay_t *rp, uint32_t idx) {
    int64_t k = rp->cur_tasks[idx];
    rp->gen[idx]++;
    heap_push(&rp->heap, rp->now + (rp->work_left[idx] + k - 1) / k, idx, rp->gen[idx], EV_FINISH);
}

static void on_start(void *ud, const sl_job_t *job) {
    replay_t *rp = ud;
    uint32_t idx = (uint32_t)(sl_job_id(job) - 1);
    const sim_job_t *j = &rp->t->jobs[idx];
    sim_job_rec_t *rec = &rp->recs[idx];
    if (rec->start_us < 0) rec->start_us = rp->now; /* a restart keeps the first start */
    sl_free(rec->nodes);
    rec->tasks = sl_job_ntasks_placed(job);
    rp->cur_tasks[idx] = rec->tasks;
    rp->mark_us[idx] = rp->now;
    rp->run_start[idx] = rp->now;
    /* Distinct node names, in task order. */
    size_t len = 0, cap = 64;
    char *buf = sl_xmalloc(cap);
    buf[0] = '\0';
    for (int32_t i = 0; i < rec->tasks; i++) {
        const sl_place_t *pl = sl_job_place(job, i);
        bool seen = false;
        for (int32_t k = 0; k < i && !seen; k++) seen = sl_job_place(job, k)->node == pl->node;
        if (seen) continue;
        const char *nm = sl_cluster_node(rp->cl, pl->node)->name;
        size_t need = len + strlen(nm) + 2;
        if (need > cap) {
            while (cap < need) cap *= 2;
            buf = sl_xrealloc(buf, cap);
        }
        len += (size_t)snprintf(buf + len, cap - len, "%s%s", len ? ";" : "", nm);
    }
    rec->nodes = buf;
    int64_t per = rp->reqs[idx].gpus > 0 ? (int64_t)rp->reqs[idx].gpus * SL_GPU_MILLI
                                         : rp->reqs[idx].gpu_milli;
    rp->alloc_gpu += per * rec->tasks;
    mem_account(rp, job, j, 0, rec->tasks, 1);
    if (rec->tasks > 1 && rp->topo) {
        rp->topo_gangs++;
        rp->topo_racks += sim_topo_spanned(rp->t, job, SL_TOPO_RACK);
        rp->topo_blocks += sim_topo_spanned(rp->t, job, SL_TOPO_BLOCK);
    }
    rp->started++;
    arm_finish(rp, idx);
}

static void note_stop(replay_t *rp, uint64_t id) {
    if (rp->nstops == rp->stops_cap) {
        rp->stops_cap = rp->stops_cap ? rp->stops_cap * 2 : 16;
        rp->stops = sl_xrealloc(rp->stops, rp->stops_cap * sizeof *rp->stops);
    }
    rp->stops[rp->nstops++] = id;
}

static void on_preempt(void *ud, const sl_preemption_t *p) {
    note_stop(ud, p->victim);
}

/* A grow is placed already: its tasks start working now. A shrink's tasks
 * stop after the run, with the preemptions. */
static void on_resize(void *ud, const sl_resize_t *r) {
    replay_t *rp = ud;
    if (r->to < r->from) {
        note_stop(rp, r->job);
        return;
    }
    uint32_t idx = (uint32_t)(r->job - 1);
    const sl_job_t *job = sl_sched_job(rp->s, r->job);
    work_mark(rp, idx);
    rp->cur_tasks[idx] = r->to;
    rp->alloc_gpu += task_gpu(rp, idx) * (r->to - r->from);
    mem_account(rp, job, &rp->t->jobs[idx], r->from, r->to, 1);
    rp->grows++;
    arm_finish(rp, idx);
}

/*
 * Carries out the stops the last run asked for, at once (grace 0): a
 * shrunk job goes on with fewer tasks; a preempted one loses the work
 * since its last checkpoint (all of this run's without checkpoints) and
 * is requeued by the core with its submit time.
 */
static int apply_stops(replay_t *rp, char *err, size_t errlen) {
    for (size_t i = 0; i < rp->nstops; i++) {
        uint64_t id = rp->stops[i];
        uint32_t idx = (uint32_t)(id - 1);
        const sl_job_t *job = sl_sched_job(rp->s, id);
        if (!job || !sl_job_stopping(job)) continue;
        const sim_job_t *j = &rp->t->jobs[idx];
        int32_t placed = sl_job_ntasks_placed(job), to = sl_job_target_tasks(job);
        work_mark(rp, idx);
        mem_account(rp, job, j, to, placed, -1);
        rp->alloc_gpu -= task_gpu(rp, idx) * (placed - to);
        if (to == 0) {
            int64_t ran = rp->now - rp->run_start[idx];
            int64_t kept = rp->cfg->checkpoint_us > 0 ? ran / rp->cfg->checkpoint_us * rp->cfg->checkpoint_us : 0;
            int64_t lost = (int64_t)placed * (ran - kept); /* task-us, at the last size */
            int64_t full = run_us(j) * j->ntasks;
            rp->work_left[idx] += lost;
            if (rp->work_left[idx] > full) rp->work_left[idx] = full;
            rp->lost_gpu_s += (double)task_gpu(rp, idx) / SL_GPU_MILLI * (double)lost / 1e6;
            rp->preemptions++;
            rp->recs[idx].preempted++;
            rp->cur_tasks[idx] = 0;
            rp->gen[idx]++; /* its finish event is stale */
        } else {
            rp->cur_tasks[idx] = to;
            rp->shrinks++;
        }
        int rc = sl_sched_stop_done(rp->s, id, rp->now);
        if (rc < 0) {
            snprintf(err, errlen, "job %s: sl_sched_stop_done: %s", j->name, sl_strerror(rc));
            return rc;
        }
        if (to > 0) arm_finish(rp, idx);
    }
    rp->nstops = 0;
    return 0;
}

/*
 * EASY's promise to the job holding the reservation: with every job ending
 * by its time limit (the simulator kills it there), its reserved start time
 * never moves later while it keeps the reservation, and it starts no later
 * than that time. job and at carry the reservation between cycles.
 */
/* Submits trace job idx to the core (at its arrival, or when its array's
 * limit lets it go). 0, or the core's error with err. */
static int submit_job(replay_t *rp, uint32_t idx, char *err, size_t errlen) {
    const sim_job_t *j = &rp->t->jobs[idx];
    char msg[256];
    sl_job_spec_t sp = {.id = (uint64_t)idx + 1,
                        .tenant = rp->tenant_ids[j->tenant],
                        .priority = j->priority,
                        .submit_us = j->submit_us,
                        .ntasks = j->ntasks,
                        .min_tasks = j->min_tasks,
                        .task = rp->reqs[idx],
                        .time_limit_us = j->time_limit_us > 0 ? j->time_limit_us
                                         : rp->cfg->estimate_exact ? j->duration_us
                                                                   : 0};
    int rc = sl_sched_submit(rp->s, &sp, msg, sizeof msg);
    if (rc < 0)
        snprintf(err, errlen, "job %s: %s", j->name, msg);
    return rc;
}

/* An element of a limited array arrives: true when it must wait (its
 * array has limit elements in the core), else it counts as active. */
static bool array_hold(replay_t *rp, uint32_t idx) {
    const sim_job_t *j = &rp->t->jobs[idx];
    if (!j->in_array || j->array_limit <= 0)
        return false;
    if (rp->arr_active[j->array_first] >= j->array_limit) {
        rp->arr_held[idx] = true;
        return true;
    }
    rp->arr_active[j->array_first]++;
    return false;
}

/* An element of a limited array ended: the next held element of its array
 * (in index order) is submitted. Amortised O(1) per element. */
static int array_release(replay_t *rp, uint32_t idx, char *err, size_t errlen) {
    const sim_job_t *j = &rp->t->jobs[idx];
    if (!j->in_array || j->array_limit <= 0)
        return 0;
    uint32_t g = j->array_first;
    rp->arr_active[g]--;
    uint32_t k = rp->arr_next[g] > g ? rp->arr_next[g] : g;
    for (; k < rp->t->njobs && rp->t->jobs[k].in_array && rp->t->jobs[k].array_first == g; k++) {
        if (!rp->arr_held[k])
            continue;
        rp->arr_held[k] = false;
        rp->arr_active[g]++;
        rp->arr_next[g] = k + 1;
        return submit_job(rp, k, err, errlen);
    }
    rp->arr_next[g] = k;
    return 0;
}

static int check_reservation(const replay_t *rp, const sl_cycle_stats_t *cst, int64_t *job,
                             int64_t *at, char *err, size_t errlen) {
    if (*job >= 0) {
        const sim_job_rec_t *rec = &rp->recs[*job - 1];
        if (rec->start_us >= 0) {
            if (rec->start_us > *at) {
                snprintf(err, errlen, "job %s started at %.3fs, after its reservation at %.3fs",
                         rp->t->jobs[*job - 1].name, (double)rec->start_us / 1e6,
                         (double)*at / 1e6);
                return SL_ESTATE;
            }
        } else if (cst->reserved_job == *job && cst->reserved_at_us > *at) {
            snprintf(err, errlen, "the reservation of job %s moved later, from %.3fs to %.3fs",
                     rp->t->jobs[*job - 1].name, (double)*at / 1e6,
                     (double)cst->reserved_at_us / 1e6);
            return SL_ESTATE;
        }
    }
    if (cst->reserved_job >= 0 && cst->reserved_at_us >= 0) {
        if (cst->reserved_job != *job || cst->reserved_at_us < *at || *at < 0) *at = cst->reserved_at_us;
        *job = cst->reserved_job;
    } else if (*job >= 0 && rp->recs[*job - 1].start_us >= 0) {
        *job = -1;
        *at = -1;
    }
    return 0;
}

/* Marks shapes that can never run: their gang does not fit the empty cluster. */
static int find_rejects(replay_t *rp, bool *reject, char *err, size_t errlen) {
    const sim_trace_t *t = rp->t;
    sl_cluster_t *probe = NULL;
    sl_workload_t *w = NULL;
    shape_t *shapes = NULL;
    size_t nshapes = 0, capshapes = 0;
    sl_place_t *pls = NULL;
    int rc = sim_cluster_build(t, &probe, err, errlen);
    if (rc < 0) return rc;
    sl_workload_create(&w);
    /* Intern the same names in the same order so ids agree with rp->cl. */
    for (size_t i = 0; i < sl_cluster_model_count(rp->cl); i++)
        sl_cluster_model_intern(probe, sl_cluster_model_name(rp->cl, (int32_t)i));
    for (int32_t p = 1;; p++) {
        const char *pn = sl_cluster_pool_name(rp->cl, p);
        if (!pn) break;
        sl_cluster_pool_intern(probe, pn);
    }
    const sl_place_policy_t *pol = sl_sched_place_policy(rp->s);
    sl_rng_t rng;
    sl_rng_seed(&rng, 1);
    sl_cycle_t cy = {.cluster = probe, .workload = w, .rng = &rng, .now_us = 0};
    for (size_t i = 0; i < t->njobs; i++) {
        const sl_task_req_t *rq = &rp->reqs[i];
        int32_t nt = t->jobs[i].ntasks;
        size_t k;
        for (k = 0; k < nshapes; k++)
            if (shapes[k].ntasks == nt && memcmp(&shapes[k].req, rq, sizeof *rq) == 0) break;
        if (k == nshapes) {
            if (nshapes == capshapes) {
                capshapes = capshapes ? capshapes * 2 : 64;
                shapes = sl_xrealloc(shapes, capshapes * sizeof *shapes);
            }
            shapes[k].req = *rq;
            shapes[k].ntasks = nt;
            pls = sl_xrealloc(pls, (size_t)nt * sizeof *pls);
            char reason[SL_REASON_MAX];
            int st = sl_place_gang(pol, &cy, probe, rq, nt, pls, reason, sizeof reason);
            shapes[k].fits = st == SL_FIT;
            if (st == SL_FIT)
                for (int32_t q = 0; q < nt; q++) sl_cluster_release(probe, rq, &pls[q]);
            nshapes++;
        }
        reject[i] = !shapes[k].fits;
    }
    sl_free(pls);
    sl_free(shapes);
    sl_workload_destroy(w);
    sl_cluster_destroy(probe);
    return 0;
}

void sim_replay_result_fini(sim_replay_result_t *r) {
    for (size_t i = 0; i < r->nrecs; i++) sl_free(r->recs[i].nodes);
    sl_free(r->recs);
    sl_free(r->tenants);
    sl_free(r->qdelay_sorted);
    sl_free(r->alloc.t_h);
    sl_free(r->alloc.v);
    memset(r, 0, sizeof *r);
}

/* Time-weighted downsampling of a step function into at most nb buckets. */
static void downsample(const sim_dvec_t *ts, const sim_dvec_t *vs, double t_end, size_t nb,
                       sim_series_t *out) {
    out->n = 0;
    if (ts->n == 0 || t_end <= ts->v[0]) return;
    double t0 = ts->v[0], width = (t_end - t0) / (double)nb;
    out->t_h = sl_xmalloc(nb * sizeof *out->t_h);
    out->v = sl_xmalloc(nb * sizeof *out->v);
    size_t k = 0;
    for (size_t b = 0; b < nb; b++) {
        double lo = t0 + width * (double)b, hi = lo + width, acc = 0, wsum = 0;
        while (k + 1 < ts->n && ts->v[k + 1] <= lo) k++;
        for (size_t q = k; q < ts->n && ts->v[q] < hi; q++) {
            double a = ts->v[q] > lo ? ts->v[q] : lo;
            double e = q + 1 < ts->n ? ts->v[q + 1] : t_end;
            if (e > hi) e = hi;
            if (e > a) {
                acc += vs->v[q] * (e - a);
                wsum += e - a;
            }
        }
        out->t_h[out->n] = (lo + width / 2 - t0) / 3600.0;
        out->v[out->n] = wsum > 0 ? acc / wsum : (out->n ? out->v[out->n - 1] : 0);
        out->n++;
    }
}

int sim_replay_run(const sim_trace_t *t, const sim_replay_cfg_t *cfg, const sim_run_opts_t *o,
                   sim_replay_result_t *res, char *err, size_t errlen) {
    replay_t rp = {.t = t, .cfg = cfg};
    bool *reject = NULL;
    sl_fair_tenant_t *fair = NULL;
    sim_dvec_t lat = {0}, qd = {0}, jct = {0}, ser_t = {0}, ser_v = {0};
    sim_dvec_t *tq = NULL, *tj = NULL;
    sim_twmean_t m_alloc = {0}, m_mem = {0}, m_frag = {0}, m_drf = {0}, m_jain = {0};
    char msg[SIM_ERR_MAX] = "";
    size_t ntn = t->ntenants;
    int rc;
    memset(res, 0, sizeof *res);
    res->cfg = *cfg;
    if (!t->timed) {
        snprintf(err, errlen, "replay needs submit times and durations; this %s job list has "
                 "none (use fill, or a pod list with creation_time and deletion_time)",
                 sim_format_name(t->format));
        return SL_EINVAL;
    }
    double wall0 = sim_now_s();
    if ((rc = sim_cluster_build(t, &rp.cl, err, errlen)) < 0) return rc;
    rp.topo = sim_topo_present(t);
    sl_sched_config_t sc;
    sl_sched_config_init(&sc);
    sc.queue = cfg->queue;
    sc.placement = cfg->placement;
    sc.backfill = cfg->backfill;
    sc.seed = cfg->seed;
    if (cfg->preempt)
        sc.preempt = (sl_preempt_config_t){.priority = true, .reclaim = true, .grow = true,
                                           .default_may_preempt = true};
    const sl_cycle_ops_t ops = {on_start, on_preempt, on_resize};
    if ((rc = sl_sched_create(&sc, rp.cl, &rp.s, msg, sizeof msg)) < 0) {
        snprintf(err, errlen, "%s", msg);
        goto out;
    }
    snprintf(res->queue, sizeof res->queue, "%s", sl_sched_queue_policy(rp.s)->name);
    snprintf(res->placement, sizeof res->placement, "%s", sl_sched_place_policy(rp.s)->name);
    snprintf(res->backfill, sizeof res->backfill, "%s", sl_backfill_name(sl_sched_backfill(rp.s)));

    rp.tenant_ids = sl_xmalloc((t->ntenants ? t->ntenants : 1) * sizeof *rp.tenant_ids);
    for (size_t i = 0; i < t->ntenants; i++) {
        sl_tenant_spec_t ts = {.name = t->tenants[i], .weight = t->weights[i]};
        int id = sl_sched_add_tenant(rp.s, &ts);
        if (id < 0) {
            snprintf(err, errlen, "tenant %s: %s", t->tenants[i], sl_strerror(id));
            rc = id;
            goto out;
        }
        rp.tenant_ids[i] = id;
    }
    size_t nj = t->njobs;
    rp.reqs = sl_xmalloc((nj ? nj : 1) * sizeof *rp.reqs);
    rp.recs = sl_xcalloc(nj ? nj : 1, sizeof *rp.recs);
    rp.work_left = sl_xmalloc((nj ? nj : 1) * sizeof *rp.work_left);
    rp.mark_us = sl_xcalloc(nj ? nj : 1, sizeof *rp.mark_us);
    rp.run_start = sl_xcalloc(nj ? nj : 1, sizeof *rp.run_start);
    rp.cur_tasks = sl_xcalloc(nj ? nj : 1, sizeof *rp.cur_tasks);
    rp.gen = sl_xcalloc(nj ? nj : 1, sizeof *rp.gen);
    rp.used = sl_xcalloc(nj ? nj : 1, sizeof *rp.used);
    for (size_t i = 0; i < nj; i++) rp.work_left[i] = run_us(&t->jobs[i]) * t->jobs[i].ntasks;
    reject = sl_xcalloc(nj ? nj : 1, sizeof *reject);
    rp.arr_active = sl_xcalloc(nj ? nj : 1, sizeof *rp.arr_active);
    rp.arr_next = sl_xcalloc(nj ? nj : 1, sizeof *rp.arr_next);
    rp.arr_held = sl_xcalloc(nj ? nj : 1, sizeof *rp.arr_held);
    sl_workload_t *w = sl_sched_workload(rp.s);
    for (size_t i = 0; i < nj; i++) {
        if ((rc = sim_job_req(&t->jobs[i], rp.cl, cfg->sharing, &rp.reqs[i], err, errlen)) < 0)
            goto out;
        if (t->nodes_off) sim_nodes_clear(&rp.reqs[i]);
        sl_workload_add(w, &rp.reqs[i], t->jobs[i].ntasks);
        rp.recs[i].start_us = -1;
        rp.recs[i].end_us = -1;
    }
    if ((rc = find_rejects(&rp, reject, err, errlen)) < 0) goto out;
    size_t nnodes = sl_cluster_node_count(rp.cl);
    rp.gpu_tasks = sl_xcalloc((nnodes ? nnodes : 1) * SL_MAX_GPUS_PER_NODE, sizeof *rp.gpu_tasks);
    for (size_t i = 0; i < nnodes; i++) {
        const sl_node_t *nd = sl_cluster_node(rp.cl, (uint32_t)i);
        if (nd->ngpus > 0 && nd->gpu_mem_total > 0) rp.mem_known = true;
    }
    sl_res_t total, freec;
    sl_cluster_capacity(rp.cl, &total, &freec);
    rp.cap_gpu = total.gpu_milli;
    for (size_t i = 0; i < nj; i++) {
        if (reject[i]) {
            rp.recs[i].rejected = true;
            res->rejected++;
            continue;
        }
        heap_push(&rp.heap, t->jobs[i].submit_us, (uint32_t)i, 0, EV_ARRIVE);
    }
    fair = sl_xmalloc((ntn ? ntn : 1) * sizeof *fair);
    size_t nevents = heap_count(&rp.heap) * 2, done_events = 0;
    int64_t t_first = heap_count(&rp.heap) ? heap_next_t(&rp.heap) : 0, t_prev = t_first,
            t_last = t_first;
    double v_alloc = 0, v_mem = 0, v_frag = 0, v_drf = 1, v_jain = 1;
    /* The reserved head job is never delayed: it keeps its reservation
     * across cycles whichever tenant the order puts first (sl_sched_cycle),
     * so this holds under every order but "priority", where a job of a
     * higher priority legitimately takes the reservation over. */
    bool resv_strict = strcmp(res->queue, "priority") != 0 &&
                       sl_sched_backfill(rp.s) == SL_BACKFILL_EASY;
    int64_t resv_job = -1, resv_at = -1;
    bool have_fair = false;
    while (heap_count(&rp.heap) > 0) {
        int64_t now = heap_next_t(&rp.heap);
        /* The state sampled after the previous cycle held until now. */
        double dt = (double)(now - t_prev);
        sim_tw_add(&m_alloc, v_alloc, dt);
        if (rp.mem_known && v_mem >= 0) sim_tw_add(&m_mem, v_mem, dt);
        sim_tw_add(&m_frag, v_frag, dt);
        if (have_fair) {
            sim_tw_add(&m_drf, v_drf, dt);
            sim_tw_add(&m_jain, v_jain, dt);
        }
        rp.now = now;
        while (heap_count(&rp.heap) > 0 && heap_next_t(&rp.heap) == now) {
            ev_t e = heap_pop(&rp.heap);
            const sim_job_t *j = &t->jobs[e.job];
            done_events++;
            if (e.kind == EV_FINISH && e.gen != rp.gen[e.job]) continue; /* preempted or resized */
            if (e.kind == EV_FINISH) {
                const sl_job_t *job = sl_sched_job(rp.s, (uint64_t)e.job + 1);
                work_mark(&rp, e.job);
                if (job) {
                    mem_account(&rp, job, j, 0, sl_job_ntasks_placed(job), -1);
                    int64_t per = rp.reqs[e.job].gpus > 0
                                      ? (int64_t)rp.reqs[e.job].gpus * SL_GPU_MILLI
                                      : rp.reqs[e.job].gpu_milli;
                    rp.alloc_gpu -= per * sl_job_ntasks_placed(job);
                }
                if ((rc = sl_sched_finish(rp.s, (uint64_t)e.job + 1, now)) < 0) {
                    snprintf(err, errlen, "job %s: sl_sched_finish: %s", j->name, sl_strerror(rc));
                    goto out;
                }
                sl_sched_forget(rp.s, (uint64_t)e.job + 1);
                rp.recs[e.job].end_us = now;
                rp.completed++;
                if ((rc = array_release(&rp, e.job, err, errlen)) < 0) goto out;
            } else if (!array_hold(&rp, e.job)) {
                if ((rc = submit_job(&rp, e.job, err, errlen)) < 0) goto out;
            }
        }
        size_t pending = sl_sched_pending_count(rp.s);
        sl_cycle_stats_t cst = {.reserved_job = -1, .reserved_at_us = -1};
        if (pending > 0 || cfg->preempt) { /* with preemption, elastic jobs may grow */
            /* Stopped victims free their resources at once (grace 0), so
             * the jobs they were preempted for start at this same time, in
             * a further run (a few at most: each run's stops are bounded). */
            for (int round = 0; round < 8; round++) {
                double c0 = sim_now_s();
                sl_sched_run(rp.s, now, &ops, &rp, &cst);
                sim_dvec_push(&lat, (sim_now_s() - c0) * 1e6);
                res->cycles++;
                if (rp.nstops == 0) break;
                if ((rc = apply_stops(&rp, err, errlen)) < 0) goto out;
            }
            if ((rc = apply_stops(&rp, err, errlen)) < 0) goto out;
        }
        if (o->check) {
            if ((rc = sim_check(rp.s, msg, sizeof msg)) < 0) {
                snprintf(err, errlen, "t=%.3fs: invariant broken: %s", (double)now / 1e6, msg);
                goto out;
            }
            if (resv_strict && (rc = check_reservation(&rp, &cst, &resv_job, &resv_at, msg,
                                                       sizeof msg)) < 0) {
                snprintf(err, errlen, "t=%.3fs: invariant broken: %s", (double)now / 1e6, msg);
                goto out;
            }
            res->checks++;
        }
        /* Sample the state that holds until the next event. */
        v_alloc = rp.cap_gpu > 0 ? (double)rp.alloc_gpu / (double)rp.cap_gpu : 0;
        v_mem = rp.mem_on > 0 ? 1.0 - rp.mem_need / (double)rp.mem_on : -1;
        v_frag = rp.cap_gpu > 0 ? sl_frag_cluster(rp.cl, w) / (double)rp.cap_gpu : 0;
        sl_fair_summary_t fs;
        if ((rc = sl_sched_fairness(rp.s, fair, ntn, &fs)) < 0) {
            snprintf(err, errlen, "sl_sched_fairness: %s", sl_strerror(rc));
            goto out;
        }
        have_fair = fs.counted > 0;
        v_drf = fs.drf_ratio;
        v_jain = fs.jain;
        sim_dvec_push(&ser_t, (double)now / 1e6);
        sim_dvec_push(&ser_v, v_alloc * 100.0);
        t_prev = now;
        t_last = now;
        if (o->progress && (done_events & 1023) == 0)
            sim_progress(true, "replay", nevents ? (double)done_events / (double)nevents : 1);
        if (heap_count(&rp.heap) == 0 && sl_sched_pending_count(rp.s) > 0) {
            snprintf(err, errlen, "%zu jobs still pending with nothing running at t=%.0fs "
                     "(the queue is blocked)", sl_sched_pending_count(rp.s), (double)now / 1e6);
            rc = SL_ESTATE;
            goto out;
        }
    }
    sim_progress_done(o->progress);

    /* Results. */
    res->jobs = nj;
    res->completed = rp.completed;
    res->makespan_s = (double)(t_last - t_first) / 1e6;
    res->throughput_jobs_per_hour =
        res->makespan_s > 0 ? (double)rp.completed / (res->makespan_s / 3600.0) : 0;
    res->gpu_allocation_ratio_mean = sim_tw_mean(&m_alloc);
    res->gpu_memory_known = rp.mem_known;
    res->gpu_memory_idle_ratio_mean = sim_tw_mean(&m_mem);
    res->fragmentation_ratio_mean = sim_tw_mean(&m_frag);
    res->topo_gangs = rp.topo_gangs;
    res->topo_racks_mean = rp.topo_gangs ? rp.topo_racks / (double)rp.topo_gangs : 0;
    res->topo_blocks_mean = rp.topo_gangs ? rp.topo_blocks / (double)rp.topo_gangs : 0;
    res->drf_fairness_ratio_mean = m_drf.weight > 0 ? sim_tw_mean(&m_drf) : 1;
    res->jain_index_mean = m_jain.weight > 0 ? sim_tw_mean(&m_jain) : 1;
    for (size_t i = 0; i < lat.n; i++) res->sched_wall_s += lat.v[i] / 1e6;
    sim_sort(lat.v, lat.n);
    res->lat_p50_us = sim_percentile(lat.v, lat.n, 50);
    res->lat_p99_us = sim_percentile(lat.v, lat.n, 99);
    res->ntenants = ntn;
    res->tenants = sl_xcalloc(ntn ? ntn : 1, sizeof *res->tenants);
    tq = sl_xcalloc(ntn ? ntn : 1, sizeof *tq);
    tj = sl_xcalloc(ntn ? ntn : 1, sizeof *tj);
    for (size_t i = 0; i < nj; i++) {
        const sim_job_t *j = &t->jobs[i];
        const sim_job_rec_t *r = &rp.recs[i];
        sim_tenant_res_t *tr = &res->tenants[j->tenant];
        tr->jobs++;
        if (r->start_us < 0) continue;
        double q = (double)(r->start_us - j->submit_us) / 1e6;
        sim_dvec_push(&qd, q);
        sim_dvec_push(&tq[j->tenant], q);
        if (r->end_us < 0) continue;
        double c = (double)(r->end_us - j->submit_us) / 1e6;
        sim_dvec_push(&jct, c);
        sim_dvec_push(&tj[j->tenant], c);
        tr->completed++;
        int64_t per = rp.reqs[i].gpus > 0 ? (int64_t)rp.reqs[i].gpus * SL_GPU_MILLI : rp.reqs[i].gpu_milli;
        tr->gpu_hours += (double)per / SL_GPU_MILLI * (double)rp.used[i] / 3.6e9;
    }
    for (size_t k = 0; k < ntn; k++) {
        sim_summarize(&tq[k], &res->tenants[k].queue_delay_s);
        sim_summarize(&tj[k], &res->tenants[k].jct_s);
    }
    sim_summarize(&qd, &res->queue_delay_s);
    sim_summarize(&jct, &res->jct_s);
    res->qdelay_sorted = qd.v;
    res->nqdelay = qd.n;
    qd.v = NULL;
    downsample(&ser_t, &ser_v, (double)t_last / 1e6, 600, &res->alloc);
    res->recs = rp.recs;
    res->nrecs = nj;
    rp.recs = NULL;
    res->wall_s = sim_now_s() - wall0;
    res->preemptions = rp.preemptions;
    res->shrinks = rp.shrinks;
    res->grows = rp.grows;
    res->lost_gpu_h = rp.lost_gpu_s / 3600.0;
    rc = 0;
out:
    sim_progress_done(o->progress);
    if (rp.recs) {
        for (size_t i = 0; i < t->njobs; i++) sl_free(rp.recs[i].nodes);
        sl_free(rp.recs);
    }
    if (tq)
        for (size_t k = 0; k < ntn; k++) sim_dvec_free(&tq[k]);
    if (tj)
        for (size_t k = 0; k < ntn; k++) sim_dvec_free(&tj[k]);
    sl_free(tq);
    sl_free(tj);
    sim_dvec_free(&lat);
    sim_dvec_free(&qd);
    sim_dvec_free(&jct);
    sim_dvec_free(&ser_t);
    sim_dvec_free(&ser_v);
    sl_free(fair);
    sl_free(reject);
    sl_heap_fini(&rp.heap.h);
    sl_free(rp.reqs);
    sl_free(rp.tenant_ids);
    sl_free(rp.gpu_tasks);
    sl_free(rp.arr_active);
    sl_free(rp.arr_next);
    sl_free(rp.arr_held);
    sl_free(rp.work_left);
    sl_free(rp.mark_us);
    sl_free(rp.run_start);
    sl_free(rp.cur_tasks);
    sl_free(rp.gen);
    sl_free(rp.used);
    sl_free(rp.stops);
    sl_sched_destroy(rp.s);
    sl_cluster_destroy(rp.cl);
    return rc;
}
