/*
 * sched_preempt.c - taking back what was granted (include/sluice/preempt.h
 * states the contract, the order of victims and the no-cycle argument of
 * reclaim): priority classes, sl_sched_run (nominated preemptors, the
 * cycle, preemption and reclaim, elastic growth), sl_sched_stop_done and
 * sl_sched_evict_node.
 *
 * Simulate, then commit (KAI's way). For one waiting job P the candidate
 * victims become units (a task an elastic job holds beyond min_tasks, or
 * the rest of a job, never part of a gang), sorted cheapest first. The
 * units are released from the real cluster one by one (sl_cluster_release
 * is exact and O(gpus)) and P's gang is placed after each, once what is
 * free plus what was released could hold it at all; the placement found
 * is given back at once. If P never fits, every unit is allocated again
 * and nothing happened. If it fits, the reverse pass (Kueue's) allocates
 * each released unit again, last first, and leaves it out only if P no
 * longer fits without it; then the units still out are allocated again
 * too (the victims keep their resources until their tasks have ended,
 * sl_sched_stop_done) and become the decision. The cluster is therefore
 * exactly as before when this file returns; only jobs' marks change.
 *
 * Cost per examined preemptor: O(running jobs) to collect candidates,
 * O(u log u) to sort the u units, and one gang placement per unit once the
 * released capacity could suffice (at most MAX_UNITS units are tried).
 * Nothing here runs unless the caller asks for sl_sched_run with
 * preemption, reclaim or growth configured, so sl_sched_cycle's cost is
 * unchanged.
 *
 * Pure: no I/O, no clock; time comes in as now_us.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h> /* snprintf only: formats reasons, no I/O */
#include <stdlib.h>
#include <string.h>

#include "cluster_index.h"
#include "sched_internal.h"
#include "units.h"
#include "sluice/alloc.h"
#include "sluice/error.h"

#define MAX_UNITS 512      /* units one preemptor may try */
#define SCAN_MAX 256       /* waiting jobs one run looks at for preemption */
#define MINUTE_US INT64_C(60000000)
#define SHARE_EPS 1e-12    /* shares are ratios of integers: rounding slack */

const char *sl_preempt_reason_name(sl_preempt_reason_t r) {
    switch (r) {
    case SL_PREEMPT_PRIORITY: return "priority";
    case SL_PREEMPT_RECLAIM: return "reclaim";
    case SL_PREEMPT_DRAIN: return "drain";
    }
    return "unknown";
}

/* ---- priority classes ---- */

int sl_sched_add_class(sl_sched_t *s, const sl_prio_class_spec_t *spec) {
    if (!spec || !spec->name) return SL_EINVAL;
    size_t len = strlen(spec->name);
    if (len == 0 || len >= SL_NAME_MAX) return SL_EINVAL;
    if (sl_sched_class_find(s, spec->name) >= 0) return SL_EEXIST;
    if (s->nclasses >= SL_PRIO_CLASS_MAX) return SL_ERANGE;
    int32_t id = s->nclasses++;
    memcpy(s->class_names[id], spec->name, len + 1);
    s->classes[id] = *spec;
    s->classes[id].name = s->class_names[id];
    return id;
}

int sl_sched_class_find(const sl_sched_t *s, const char *name) {
    for (int32_t i = 0; i < s->nclasses; i++)
        if (strcmp(s->classes[i].name, name) == 0) return i;
    return SL_ENOENT;
}

const sl_prio_class_spec_t *sl_sched_class(const sl_sched_t *s, int32_t id) {
    return id >= 0 && id < s->nclasses ? &s->classes[id] : NULL;
}

/* ---- what a run decided, reported after all decisions ---- */

typedef struct run_ctx {
    sl_sched_t *s;
    int64_t now_us;
    sl_cycle_t cy;
    sl_preemption_t *pre;     /* preemptions, in decision order */
    size_t npre, pre_cap;
    sl_resize_t *rsz;         /* shrinks, then grows; grows own their pls */
    size_t nrsz, rsz_cap;
    uint64_t *starts;         /* jobs started (nominated, then the cycle's) */
    size_t nstarts, starts_cap;
    /* reclaim: fair shares and what each tenant is about to lose or gain */
    bool fair_valid;
    sl_fair_tenant_t *fair;
    sl_res_t *leaving, *coming;
} run_ctx_t;

static void push_pre(run_ctx_t *c, const sl_preemption_t *p) {
    if (c->npre == c->pre_cap) {
        c->pre_cap = c->pre_cap ? c->pre_cap * 2 : 8;
        c->pre = sl_xrealloc(c->pre, c->pre_cap * sizeof *c->pre);
    }
    c->pre[c->npre++] = *p;
}

static void push_rsz(run_ctx_t *c, const sl_resize_t *r) {
    if (c->nrsz == c->rsz_cap) {
        c->rsz_cap = c->rsz_cap ? c->rsz_cap * 2 : 8;
        c->rsz = sl_xrealloc(c->rsz, c->rsz_cap * sizeof *c->rsz);
    }
    c->rsz[c->nrsz++] = *r;
}

static void push_start(run_ctx_t *c, uint64_t id) {
    if (c->nstarts == c->starts_cap) {
        c->starts_cap = c->starts_cap ? c->starts_cap * 2 : 16;
        c->starts = sl_xrealloc(c->starts, c->starts_cap * sizeof *c->starts);
    }
    c->starts[c->nstarts++] = id;
}

static void on_cycle_start(void *ud, const sl_job_t *job) {
    push_start(ud, job->spec.id);
}

/* ---- limits: the rate bound and the protection of often-preempted jobs ---- */

/* How many more victims the rate bound allows at now_us. */
static size_t rate_room(sl_sched_t *s, int64_t now_us) {
    size_t max = (size_t)s->pc.max_per_minute;
    if (max == 0) return SIZE_MAX;
    while (s->pr_count > 0 && s->pr_times[s->pr_head] <= now_us - MINUTE_US) {
        s->pr_head = (s->pr_head + 1) % max;
        s->pr_count--;
    }
    return max - s->pr_count;
}

static void rate_note(sl_sched_t *s, int64_t now_us) {
    size_t max = (size_t)s->pc.max_per_minute;
    if (max == 0) return;
    if (!s->pr_times) s->pr_times = sl_xmalloc(max * sizeof *s->pr_times);
    sl__invariant(s->pr_count < max);
    s->pr_times[(s->pr_head + s->pr_count) % max] = now_us;
    s->pr_count++;
}

static bool protected_now(const sl_sched_t *s, const sl_job_t *j, int64_t now_us) {
    return s->pc.protect_after > 0 && j->npreempt >= s->pc.protect_after &&
           now_us - j->last_preempt_us < s->pc.protect_us;
}

/* The priority a job preempts and is preempted at: its own, or under
 * "las" minus its attained-service queue now (a running job ages). */
static int64_t prio_of(const sl_sched_t *s, const sl_job_t *j, int64_t now_us) {
    return s->las ? -(int64_t)las_level(s, job_attained(j, now_us)) : j->spec.priority;
}

static const sl_prio_class_spec_t *class_of(const sl_sched_t *s, const sl_job_t *j) {
    return &s->classes[j->spec.prio_class];
}

/* ---- reclaim: fair shares ---- */

static double dom_share(sl_res_t r, sl_res_t cap) {
    double d = 0;
    if (cap.cpu_milli > 0 && (double)r.cpu_milli / (double)cap.cpu_milli > d)
        d = (double)r.cpu_milli / (double)cap.cpu_milli;
    if (cap.mem_bytes > 0 && (double)r.mem_bytes / (double)cap.mem_bytes > d)
        d = (double)r.mem_bytes / (double)cap.mem_bytes;
    if (cap.gpu_milli > 0 && (double)r.gpu_milli / (double)cap.gpu_milli > d)
        d = (double)r.gpu_milli / (double)cap.gpu_milli;
    return d;
}

/* Fair shares of every tenant, and what stopping victims will take away
 * from (leaving) and waiting preemptors will bring to (coming) each. */
static void fair_prepare(run_ctx_t *c) {
    sl_sched_t *s = c->s;
    if (c->fair_valid) return;
    size_t n = s->ntenants ? s->ntenants : 1;
    c->fair = sl_xcalloc(n, sizeof *c->fair);
    c->leaving = sl_xcalloc(n, sizeof *c->leaving);
    c->coming = sl_xcalloc(n, sizeof *c->coming);
    sl__invariant(sl_sched_fairness(s, c->fair, s->ntenants, NULL) == 0);
    for (const sl_job_t *j = s->run_head; j; j = j->r_next)
        if (j->stop_n > 0)
            c->leaving[j->spec.tenant] = sl_res_add(c->leaving[j->spec.tenant], job_total(j, j->stop_n));
    for (size_t i = 0; i < s->nnom; i++) {
        const sl_job_t *p = jobs_find(s, s->nom[i]);
        if (p && p->state == SL_JOB_PENDING)
            c->coming[p->spec.tenant] = sl_res_add(c->coming[p->spec.tenant], job_total(p, job_min(p)));
    }
    c->fair_valid = true;
}

/* ---- units ---- */

typedef struct unit {
    sl_job_t *j;
    int32_t rank;     /* a shrink unit's task; -1 for the job's base [0, base) */
    int32_t base;     /* tasks of the whole unit: min_tasks if it has shrink units */
    int64_t gpu;      /* milli-GPUs the unit holds */
    double lost;      /* GPU-seconds lost if it is preempted (0 for a shrink) */
    int64_t prio;
    bool out;         /* released in the simulation */
} unit_t;

static int unit_cmp(const void *pa, const void *pb) {
    const unit_t *a = pa, *b = pb;
    bool sa = a->rank >= 0, sb = b->rank >= 0;
    if (sa != sb) return sa ? -1 : 1; /* shrinks before whole jobs */
    if (a->prio != b->prio) return a->prio < b->prio ? -1 : 1;
    if (sa) {
        if (a->j != b->j) {
            if (a->j->start_us != b->j->start_us) return a->j->start_us > b->j->start_us ? -1 : 1;
            return a->j->spec.id < b->j->spec.id ? -1 : 1;
        }
        return a->rank > b->rank ? -1 : 1; /* highest rank first */
    }
    if (a->gpu != b->gpu) return a->gpu < b->gpu ? -1 : 1;
    if (a->lost != b->lost) return a->lost < b->lost ? -1 : 1;
    if (a->j->start_us != b->j->start_us) return a->j->start_us > b->j->start_us ? -1 : 1;
    return a->j->spec.id < b->j->spec.id ? -1 : (a->j->spec.id > b->j->spec.id);
}

static void unit_release(sl_sched_t *s, unit_t *u) {
    const sl_task_req_t *req = &u->j->spec.task;
    if (u->rank >= 0) sl__invariant(sl_cluster_release(s->cl, req, &u->j->pls[u->rank]) == 0);
    else sl__release_pls(s, req, u->j->pls, u->base);
    u->out = true;
}

static void unit_restore(sl_sched_t *s, unit_t *u) {
    const sl_task_req_t *req = &u->j->spec.task;
    if (u->rank >= 0) {
        sl__invariant(sl_cluster_alloc(s->cl, req, &u->j->pls[u->rank]) == 0);
    } else {
        for (int32_t i = 0; i < u->base; i++)
            sl__invariant(sl_cluster_alloc(s->cl, req, &u->j->pls[i]) == 0);
    }
    u->out = false;
}

static sl_res_t unit_res(const unit_t *u) {
    return job_total(u->j, u->rank >= 0 ? 1 : u->base);
}

/* Could a task of req ever run on node n (pool and GPU model)? */
static bool node_relevant(const sl_node_t *n, const sl_task_req_t *req) {
    if (n->state == SL_NODE_DOWN) return false;
    if (req->pool != -1 && n->pool != req->pool) return false;
    if (req->gpus > 0 || req->gpu_milli > 0) {
        if (n->ngpus == 0) return false;
        if (req->model_mask && !(req->model_mask & (UINT64_C(1) << n->model))) return false;
    }
    return true;
}

static bool job_relevant(const sl_sched_t *s, const sl_job_t *v, const sl_task_req_t *req) {
    for (int32_t i = 0; i < v->nplaced; i++)
        if (node_relevant(sl_cluster_node(s->cl, v->pls[i].node), req)) return true;
    return false;
}

/* Whether m tasks of p fit now; gives the placement back at once. */
static bool fits(run_ctx_t *c, const sl_job_t *p, int32_t m) {
    sl_sched_t *s = c->s;
    int32_t k;
    if (sl__place_range(s, &c->cy, p, m, m, &k, NULL, 0) != SL_FIT) return false;
    sl__release_pls(s, &p->spec.task, s->pls, m);
    return true;
}

/*
 * Collects the units that may be taken for p under reason r. For reclaim
 * only tenants above their fair share give (the per-unit condition is
 * checked as units are taken, see choose).
 */
static size_t collect(run_ctx_t *c, const sl_job_t *p, sl_preempt_reason_t r, unit_t **out,
                      size_t *cap) {
    sl_sched_t *s = c->s;
    int64_t pp = prio_of(s, p, c->now_us);
    size_t n = 0;
    for (sl_job_t *v = s->run_head; v; v = v->r_next) {
        /* A job started by this run is not yet launched: the caller hears
         * of its start after the preemptions, so it is left alone. */
        if (v->stop_n > 0 || v->start_us == c->now_us || !class_of(s, v)->preemptible) continue;
        if (v->last_preemptor == p->spec.id || protected_now(s, v, c->now_us)) continue;
        int64_t vp = prio_of(s, v, c->now_us);
        if (r == SL_PREEMPT_PRIORITY && vp >= pp) continue;
        if (r == SL_PREEMPT_RECLAIM) {
            if (v->spec.tenant == p->spec.tenant || vp > pp) continue;
            const sl_fair_tenant_t *f = &c->fair[v->spec.tenant];
            if (f->held_share <= f->fair_share + SHARE_EPS) continue;
        }
        if (!job_relevant(s, v, &p->spec.task)) continue;
        int32_t m = job_min(v);
        int32_t need = 1 + (v->nplaced > m ? v->nplaced - m : 0);
        if (n + (size_t)need > *cap) {
            *cap = (n + (size_t)need) * 2;
            *out = sl_xrealloc(*out, *cap * sizeof **out);
        }
        double secs = (double)(c->now_us - v->start_us) / 1e6;
        for (int32_t k = v->nplaced - 1; k >= m; k--)
            (*out)[n++] = (unit_t){v, k, 0, job_gpu_milli(v, 1), 0, vp, false};
        int32_t base = v->nplaced > m ? m : v->nplaced;
        (*out)[n++] = (unit_t){v, -1, base, job_gpu_milli(v, v->nplaced),
                               (double)job_gpu_milli(v, v->nplaced) / 1000.0 * secs, vp, false};
    }
    if (n > 1) qsort(*out, n, sizeof **out, unit_cmp); /* *out is NULL when n == 0 */
    return n;
}

/*
 * Reclaim's per-unit condition (sluice/preempt.h): the victim's tenant
 * stays at or above its fair share after losing what it already loses
 * plus this unit. gone[] holds what this decision has taken so far.
 */
static bool reclaim_ok(run_ctx_t *c, const unit_t *u, const sl_res_t *gone) {
    const sl_sched_t *s = c->s;
    int32_t t = u->j->spec.tenant;
    sl_res_t after = sl_res_sub(sl_res_sub(sl_res_sub(s->tenants[t].usage, c->leaving[t]), gone[t]),
                                unit_res(u));
    return dom_share(after, s->cap) + SHARE_EPS >= c->fair[t].fair_share;
}

/*
 * Finds the victim set of p under reason r and commits it. Returns the
 * number of victims (jobs stopped or shrunk), 0 if none would let p fit
 * (nothing changed).
 */
static int choose(run_ctx_t *c, sl_job_t *p, int32_t m, sl_preempt_reason_t r, size_t room,
                  unit_t **ubuf, size_t *ucap) {
    sl_sched_t *s = c->s;
    size_t n = collect(c, p, r, ubuf, ucap);
    unit_t *u = *ubuf;
    if (n == 0) return 0;
    if (n > MAX_UNITS) n = MAX_UNITS;
    sl_res_t need = job_total(p, m), freed, fr;
    sl_cluster_capacity(s->cl, NULL, &fr);
    freed = fr;
    sl_res_t *gone = NULL;
    if (r == SL_PREEMPT_RECLAIM) gone = sl_xcalloc(s->ntenants, sizeof *gone);
    size_t last = n; /* index of the unit after which p fit */
    for (size_t i = 0; i < n; i++) {
        /* A shrink unit needs the units above it in its job out first;
         * a base unit of an elastic job needs all its shrink units out. */
        if (u[i].rank >= 0 && u[i].rank + 1 < u[i].j->nplaced) {
            bool above_out = i > 0 && u[i - 1].j == u[i].j && u[i - 1].out;
            if (!above_out) continue;
        }
        if (u[i].rank < 0 && u[i].base < u[i].j->nplaced) {
            bool all_out = true;
            for (size_t k = 0; k < i; k++)
                if (u[k].j == u[i].j && !u[k].out) all_out = false;
            if (!all_out) continue;
        }
        if (gone && !reclaim_ok(c, &u[i], gone)) continue;
        unit_release(s, &u[i]);
        if (gone) gone[u[i].j->spec.tenant] = sl_res_add(gone[u[i].j->spec.tenant], unit_res(&u[i]));
        freed = sl_res_add(freed, unit_res(&u[i]));
        if (sl_res_le(need, freed) && fits(c, p, m)) {
            last = i;
            break;
        }
    }
    int nv = 0;
    bool back = false; /* every released unit is allocated again */
    if (last < n) {
        /* The reverse pass: put each unit back, last first, and keep it
         * back if p still fits. A shrink unit goes back only if the unit
         * below it in its job is back (removal stays a top-rank suffix),
         * and none while the job's base unit stays out. */
        for (size_t i = last + 1; i-- > 0;) {
            if (!u[i].out) continue;
            if (u[i].rank >= 0) {
                bool blocked = false;
                for (size_t k = 0; k < n; k++) {
                    if (u[k].j != u[i].j || !u[k].out || k == i) continue;
                    if (u[k].rank < 0 || u[k].rank < u[i].rank) blocked = true;
                }
                if (blocked) continue;
            }
            unit_restore(s, &u[i]);
            if (!fits(c, p, m)) unit_release(s, &u[i]);
        }
        /* Every unit back in the cluster (victims hold until they end). */
        size_t njobs = 0;
        for (size_t i = 0; i <= last; i++) {
            if (!u[i].out) continue;
            bool first = true;
            for (size_t k = 0; k < i && first; k++) first = !(u[k].out && u[k].j == u[i].j);
            njobs += first;
            unit_restore(s, &u[i]);
            u[i].out = true; /* still chosen; only the resources are back */
        }
        back = true;
        /* The rate bound counts victim jobs: a set larger than what it
         * allows now is not made at all (a gang needs the whole set). */
        if (njobs > room) last = n;
    }
    if (last < n) {
        /* Commit: the jobs with units out are marked stopping. */
        for (size_t i = 0; i <= last; i++) {
            if (!u[i].out) continue;
            sl_job_t *v = u[i].j;
            if (v->stop_n > 0) continue; /* already marked through another unit */
            bool whole = false;
            int32_t low = v->nplaced;
            for (size_t k = 0; k <= last; k++) {
                if (u[k].j != v || !u[k].out) continue;
                if (u[k].rank < 0) whole = true;
                else if (u[k].rank < low) low = u[k].rank;
            }
            v->stop_whole = whole;
            v->stop_n = whole ? v->nplaced : v->nplaced - low;
            v->stop_for = p->spec.id;
            v->stop_reason = r;
            v->last_preemptor = p->spec.id;
            p->victims_left++;
            rate_note(s, c->now_us);
            nv++;
            sl__hist_push(v, c->now_us, whole ? 0 : low);
            if (gone) c->leaving[v->spec.tenant] = sl_res_add(c->leaving[v->spec.tenant],
                                                             job_total(v, v->stop_n));
            if (whole) {
                double secs = (double)(c->now_us - v->start_us) / 1e6;
                sl_preemption_t pr = {v->spec.id, p->spec.id, r, v->nplaced,
                                      job_gpu_milli(v, v->nplaced),
                                      (double)job_gpu_milli(v, v->nplaced) / 1000.0 * secs, c->now_us};
                push_pre(c, &pr);
            } else {
                sl_resize_t rz = {v->spec.id, v->nplaced, low, NULL, p->spec.id, r, c->now_us};
                push_rsz(c, &rz);
            }
        }
    } else {
        for (size_t i = 0; i < n; i++)
            if (u[i].out && !back) unit_restore(s, &u[i]);
    }
    sl_free(gone);
    return nv;
}

/* Adds p to the preemptors tried first once their victims are gone. */
static void nominate(sl_sched_t *s, uint64_t id) {
    for (size_t i = 0; i < s->nnom; i++)
        if (s->nom[i] == id) return;
    if (s->nnom == s->nom_cap) {
        s->nom_cap = s->nom_cap ? s->nom_cap * 2 : 8;
        s->nom = sl_xrealloc(s->nom, s->nom_cap * sizeof *s->nom);
    }
    s->nom[s->nnom++] = id;
}

/* Tries to preempt for waiting job p. Returns the victims chosen; adds to
 * *tries each victim search made (the cost max_preemptors bounds). */
static int preempt_for(run_ctx_t *c, sl_job_t *p, unit_t **ubuf, size_t *ucap, int32_t *tries) {
    sl_sched_t *s = c->s;
    char scratch[SL_REASON_MAX];
    int32_t m = job_min(p);
    if (sl__quota_cap(s, p, p->spec.ntasks, m, scratch, sizeof scratch) < 0) return 0;
    if (fits(c, p, m)) return 0; /* it waits for its turn, not for room */
    size_t room = rate_room(s, c->now_us);
    if (room == 0) return 0;
    int nv = 0;
    if (s->pc.priority && class_of(s, p)->may_preempt) {
        (*tries)++;
        nv = choose(c, p, m, SL_PREEMPT_PRIORITY, room, ubuf, ucap);
    }
    if (nv == 0 && s->pc.reclaim) {
        fair_prepare(c);
        int32_t t = p->spec.tenant;
        sl_res_t after = sl_res_add(sl_res_add(s->tenants[t].usage, c->coming[t]), job_total(p, m));
        if (dom_share(after, s->cap) <= c->fair[t].fair_share + SHARE_EPS) {
            (*tries)++;
            nv = choose(c, p, m, SL_PREEMPT_RECLAIM, room, ubuf, ucap);
            if (nv > 0) c->coming[t] = sl_res_add(c->coming[t], job_total(p, m));
        }
    }
    if (nv > 0) {
        nominate(s, p->spec.id);
        char at[SL__UNIT_BUF];
        sl__setf(p->reason, sizeof p->reason, "waiting for %d preempted job(s) to stop (since t=%s)",
                 (int)p->victims_left, sl__fmt_secs(at, sizeof at, c->now_us));
        p->status = SL_WAIT;
        p->reason_epoch = s->epoch;
    }
    return nv;
}

/* ---- the run ---- */

typedef struct scan_ctx {
    uint64_t *ids;
    size_t n, max, seen, max_seen;
    bool blocked;
} scan_ctx_t;

/* Pending jobs in queue order: the first few that may need room. */
static int scan_pending(void *ud, const sl_job_t *j) {
    scan_ctx_t *sc = ud;
    if (++sc->seen > sc->max_seen) return 1;
    if (sl_job_status(j) == SL_NOFIT_EVER) return 0;
    sc->blocked = true;
    if (sc->max == 0) return 1; /* only whether some job waits for room */
    if (j->victims_left == 0) sc->ids[sc->n++] = j->spec.id;
    return sc->n >= sc->max;
}

/* Starts the preemptors whose victims are all gone, before the cycle. */
static void start_nominated(run_ctx_t *c) {
    sl_sched_t *s = c->s;
    char reason[SL_REASON_MAX];
    size_t keep = 0;
    for (size_t i = 0; i < s->nnom; i++) {
        sl_job_t *p = jobs_find(s, s->nom[i]);
        if (!p || p->state != SL_JOB_PENDING) continue;
        if (p->victims_left > 0) {
            s->nom[keep++] = s->nom[i];
            continue;
        }
        int32_t m = job_min(p), k = 0;
        int32_t qn = sl__quota_cap(s, p, p->spec.ntasks, m, reason, sizeof reason);
        if (qn < 0) continue;
        if (sl__place_range(s, &c->cy, p, qn, m, &k, reason, sizeof reason) != SL_FIT) continue;
        sl__start_job(s, p, s->pls, k, c->now_us);
        push_start(c, p->spec.id);
    }
    s->nnom = keep;
}

/* Grows running elastic jobs into free capacity, in start order. */
static int grow(run_ctx_t *c) {
    sl_sched_t *s = c->s;
    char scratch[SL_REASON_MAX];
    int grown = 0;
    for (sl_job_t *j = s->run_head; j; j = j->r_next) {
        if (j->stop_n > 0 || job_min(j) >= j->spec.ntasks || j->nplaced >= j->spec.ntasks) continue;
        if (j->start_us == c->now_us) continue; /* its start is reported at this size */
        int32_t want = j->spec.ntasks - j->nplaced, k = 0;
        int32_t qn = sl__quota_cap(s, j, want, 1, scratch, sizeof scratch);
        if (qn < 1) continue;
        if (sl__place_range(s, &c->cy, j, qn, 1, &k, NULL, 0) != SL_FIT) continue;
        tenant_t *t = tenant_of(s, j);
        sl__att_mark(j, c->now_us);
        j->pls = sl_xrealloc(j->pls, (size_t)(j->nplaced + k) * sizeof *j->pls);
        memcpy(j->pls + j->nplaced, s->pls, (size_t)k * sizeof *j->pls);
        sl_place_t *copy = sl_xmalloc((size_t)k * sizeof *copy);
        memcpy(copy, s->pls, (size_t)k * sizeof *copy);
        sl_resize_t rz = {j->spec.id, j->nplaced, j->nplaced + k, copy, 0, SL_PREEMPT_PRIORITY,
                          c->now_us};
        j->nplaced += k;
        t->usage = sl_res_add(t->usage, job_total(j, k));
        sl__hist_push(j, c->now_us, j->nplaced);
        push_rsz(c, &rz);
        grown++;
    }
    return grown;
}

static void report(run_ctx_t *c, const sl_cycle_ops_t *ops, void *ud) {
    sl_sched_t *s = c->s;
    for (size_t i = 0; i < c->npre; i++)
        if (ops && ops->on_preempt) ops->on_preempt(ud, &c->pre[i]);
    for (size_t i = 0; i < c->nrsz; i++)
        if (!c->rsz[i].pls && ops && ops->on_resize) ops->on_resize(ud, &c->rsz[i]);
    for (size_t i = 0; i < c->nstarts; i++) {
        const sl_job_t *j = jobs_find(s, c->starts[i]);
        if (j && j->state == SL_JOB_RUNNING && j->start_us == c->now_us && ops && ops->on_start)
            ops->on_start(ud, j);
    }
    for (size_t i = 0; i < c->nrsz; i++)
        if (c->rsz[i].pls && ops && ops->on_resize) ops->on_resize(ud, &c->rsz[i]);
}

static void run_fini(run_ctx_t *c) {
    for (size_t i = 0; i < c->nrsz; i++) sl_free((void *)(uintptr_t)c->rsz[i].pls);
    sl_free(c->pre);
    sl_free(c->rsz);
    sl_free(c->starts);
    sl_free(c->fair);
    sl_free(c->leaving);
    sl_free(c->coming);
}

int sl_sched_run(sl_sched_t *s, int64_t now_us, const sl_cycle_ops_t *ops, void *ud,
                 sl_cycle_stats_t *stats) {
    run_ctx_t c = {.s = s, .now_us = now_us};
    sl__cluster_set_order_key(s->cl, s->order_key);
    c.cy = (sl_cycle_t){.cluster = s->cl, .workload = s->wl, .rng = &s->rng, .now_us = now_us,
                        .order_key = s->order_key};
    start_nominated(&c);
    int nom_started = (int)c.nstarts;
    sl_cycle_stats_t st;
    int started = sl_sched_cycle(s, now_us, on_cycle_start, &c, &st) + nom_started;
    st.started += nom_started;
    bool any = s->pc.priority || s->pc.reclaim || s->pc.grow;
    if (any && s->npending > 0) {
        sl_cluster_capacity(s->cl, &s->cap, NULL);
        int32_t maxp = s->pc.max_preemptors > 0 ? s->pc.max_preemptors
                                                : SL_PREEMPT_MAX_PREEMPTORS_DEFAULT;
        if (!s->pc.priority && !s->pc.reclaim) maxp = 0;
        /* The first SCAN_MAX waiting jobs in queue order are looked at;
         * victim searches (the costly part) stop after maxp of them. A
         * job that may not preempt or reclaim costs O(1) and does not
         * count, so one tenant's many jobs cannot hide another's. */
        uint64_t ids[SCAN_MAX];
        scan_ctx_t sc = {ids, 0, maxp > 0 ? SCAN_MAX : 0, 0, SCAN_MAX, false};
        sl_sched_foreach(s, SL_JOB_PENDING, scan_pending, &sc);
        unit_t *ubuf = NULL;
        size_t ucap = 0;
        int32_t tries = 0;
        for (size_t i = 0; i < sc.n && tries < maxp; i++) {
            sl_job_t *p = jobs_find(s, ids[i]);
            if (p && p->state == SL_JOB_PENDING) preempt_for(&c, p, &ubuf, &ucap, &tries);
        }
        sl_free(ubuf);
        if (s->pc.grow && !sc.blocked) st.grown = grow(&c);
    } else if (s->pc.grow) {
        st.grown = grow(&c);
    }
    st.preempted = (int32_t)c.npre;
    st.shrunk = (int32_t)(c.nrsz - (size_t)st.grown);
    report(&c, ops, ud);
    run_fini(&c);
    if (stats) *stats = st;
    return started;
}

/* ---- the caller's side of a stop ---- */

int sl_sched_stop_done(sl_sched_t *s, uint64_t id, int64_t now_us) {
    sl_job_t *j = jobs_find(s, id);
    if (!j) return SL_ENOENT;
    if (j->state != SL_JOB_RUNNING || j->stop_n == 0) return SL_ESTATE;
    see_time(s, now_us);
    if (j->stop_whole) {
        uint64_t pre = j->stop_for;
        sl_preempt_reason_t r = j->stop_reason;
        j->npreempt++;
        j->last_preempt_us = now_us;
        sl__invariant(sl_sched_requeue(s, id, now_us) == 0); /* clears the stop */
        char at[SL__UNIT_BUF];
        if (pre)
            sl__setf(j->reason, sizeof j->reason, "preempted at t=%s for job %llu (%s)",
                     sl__fmt_secs(at, sizeof at, now_us), (unsigned long long)pre,
                     sl_preempt_reason_name(r));
        else
            sl__setf(j->reason, sizeof j->reason, "preempted at t=%s (%s)",
                     sl__fmt_secs(at, sizeof at, now_us), sl_preempt_reason_name(r));
        return 0;
    }
    /* A shrink: the top stop_n ranks go. */
    tenant_t *t = tenant_of(s, j);
    int32_t k = j->nplaced - j->stop_n;
    sl__att_mark(j, now_us);
    sl__release_pls(s, &j->spec.task, j->pls + k, j->stop_n);
    t->usage = sl_res_sub(t->usage, job_total(j, j->stop_n));
    if (s->cap_valid) t->share = sl__share_of(t, s->cap);
    j->nplaced = k;
    sl__stop_clear(s, j);
    return 0;
}

int sl_sched_resume_shrink(sl_sched_t *s, uint64_t id, int32_t to, int64_t now_us) {
    sl_job_t *j = jobs_find(s, id);
    if (!j) return SL_ENOENT;
    if (j->state != SL_JOB_RUNNING || j->stop_n > 0) return SL_ESTATE;
    int32_t low = j->spec.min_tasks > 0 ? j->spec.min_tasks : j->spec.ntasks; /* rigid: none */
    if (low < 1) low = 1;
    if (to < low || to >= j->nplaced) return SL_EINVAL;
    see_time(s, now_us);
    j->stop_whole = false;
    j->stop_n = j->nplaced - to;
    j->stop_for = 0;
    j->stop_reason = SL_PREEMPT_PRIORITY;
    sl__hist_push(j, now_us, to);
    return 0;
}

/* Evicts the running jobs with a task on node (all: any task there; else
 * only one on a GPU of gpu_mask). */
static int evict(sl_sched_t *s, uint32_t node, bool all, uint32_t gpu_mask, int64_t now_us,
                 const sl_cycle_ops_t *ops, void *ud) {
    if (!sl_cluster_node(s->cl, node)) return SL_ENOENT;
    see_time(s, now_us);
    run_ctx_t c = {.s = s, .now_us = now_us};
    for (sl_job_t *j = s->run_head; j; j = j->r_next) {
        if (j->stop_whole) continue;
        bool here = false;
        for (int32_t i = 0; i < j->nplaced && !here; i++)
            here = j->pls[i].node == node && (all || (j->pls[i].gpu_mask & gpu_mask) != 0);
        if (!here) continue;
        sl__stop_clear(s, j); /* a shrink in progress becomes the whole job */
        j->stop_whole = true;
        j->stop_n = j->nplaced;
        j->stop_for = 0;
        j->stop_reason = SL_PREEMPT_DRAIN;
        sl__hist_push(j, now_us, 0);
        double secs = (double)(now_us - j->start_us) / 1e6;
        sl_preemption_t pr = {j->spec.id, 0, SL_PREEMPT_DRAIN, j->nplaced, job_gpu_milli(j, j->nplaced),
                              (double)job_gpu_milli(j, j->nplaced) / 1000.0 * secs, now_us};
        push_pre(&c, &pr);
    }
    int n = (int)c.npre;
    report(&c, ops, ud);
    run_fini(&c);
    return n;
}

int sl_sched_evict_node(sl_sched_t *s, uint32_t node, int64_t now_us, const sl_cycle_ops_t *ops,
                        void *ud) {
    return evict(s, node, true, 0, now_us, ops, ud);
}

int sl_sched_evict_gpus(sl_sched_t *s, uint32_t node, uint32_t gpu_mask, int64_t now_us,
                        const sl_cycle_ops_t *ops, void *ud) {
    return evict(s, node, false, gpu_mask, now_us, ops, ud);
}
