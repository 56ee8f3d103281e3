/*
 * sched_resv.c - advance reservations (sluice/resv.h): whole nodes kept
 * for some tenants during a window, and how placement honours them.
 *
 * The rule, for a job j tried at now with runtime estimate L (its time
 * limit, else its default, else the scheduler's; none: it never ends) and
 * a reservation r = (nodes N, window [S, E)):
 *  - j names r: it may use only N, and only while S <= now < E;
 *  - j does not name r: it may not use N if now < E and now + L > S, i.e.
 *    if it would still run at the window's start. A running job that grows
 *    (elastic) is judged by its expected end.
 * Placement enforces the rule for a job of no reservation by taking the
 * reserved nodes it may not use out of the cluster's index for the one
 * attempt (draining them, as the cycle drains an EASY reservation's nodes
 * for long backfill jobs) and putting them back at once: the placement
 * policies, gangs and topology see a smaller cluster and need nothing
 * else. A job of a reservation is placed through the scheduler's policy
 * with a node filter on top (sl__resv_filter: the reservation's nodes),
 * which the framework applies node by node and also to the empty cluster,
 * so a job its reservation can never hold is SL_NOFIT_EVER; taking every
 * other node out instead cost O(nodes) index moves per attempt. The nodes taken out depend on the job's
 * estimate, so the failed-shape cache keys its answers by them
 * (sl__resv_sig) and, while reservations exist, the cycle examines jobs
 * one by one instead of skipping shape groups.
 *
 * Why a job of r starts at S: every job that runs on N inside [S, E) is a
 * job of r; a job that started on N before S did so with now + L <= S, so
 * if jobs end by their estimates N is empty at S but for jobs of r, which
 * start only from S. A job of r is never the EASY head that holds a
 * reservation, and never kept off EASY's reserved nodes (sched_cycle.c):
 * those nodes are the head job's only after E for as long as r lasts, and
 * a job of r ends by E (sluiced stops it there). So a pending job of r that
 * fits on N's empty nodes starts in the first cycle that examines it at or
 * after S; test_resv.c checks it on random workloads.
 *
 * Picking nodes (node_count or gpus): up nodes in no reservation whose
 * window overlaps and running no job expected past S; by id for a node
 * count, most GPUs first (then id) for a GPU count, so that as few nodes
 * as possible are taken.
 */
#include <stdlib.h>
#include <string.h>

#include "sched_internal.h"
#include "units.h"
#include "sluice/alloc.h"
#include "sluice/error.h"

static sl__resv_t *resv_by_id(const sl_sched_t *s, int32_t id) {
    for (size_t i = 0; i < s->nresv; i++)
        if (s->resvs[i].id == id) return (sl__resv_t *)&s->resvs[i];
    return NULL;
}

/* When j would end if it started at at_us. */
static int64_t end_if_start(const sl_sched_t *s, const sl_job_t *j, int64_t at_us) {
    if (j->state == SL_JOB_RUNNING) return j->end_us;
    int64_t lim = sl__job_limit(j, s->default_limit_us);
    int64_t e;
    if (lim <= 0 || __builtin_add_overflow(at_us, lim, &e)) return INT64_MAX;
    return e;
}

/* Whether j (not of r), started at any time in [now, horizon], could still
 * run at r's start while r lasts. */
static bool keeps_off(const sl_sched_t *s, const sl__resv_t *r, const sl_job_t *j, int64_t now_us,
                      int64_t horizon_us) {
    if (r->end_us <= now_us) return false;
    return end_if_start(s, j, horizon_us > now_us ? horizon_us : now_us) > r->start_us;
}

uint64_t sl__resv_sig(const sl_sched_t *s, const sl_job_t *j, int64_t now_us) {
    if (j->spec.resv) return (UINT64_C(1) << 63) | (uint32_t)j->spec.resv;
    uint64_t m = 0;
    for (size_t i = 0; i < s->nresv; i++)
        if (keeps_off(s, &s->resvs[i], j, now_us, now_us)) m |= UINT64_C(1) << i;
    return m;
}

static void take_out(sl_sched_t *s, uint32_t id) {
    const sl_node_t *n = sl_cluster_node(s->cl, id);
    if (!n || n->state != SL_NODE_UP) return;
    if (s->nxdrained == s->xdrained_cap) {
        s->xdrained_cap = s->xdrained_cap ? s->xdrained_cap * 2 : 16;
        s->xdrained = sl_xrealloc(s->xdrained, s->xdrained_cap * sizeof *s->xdrained);
    }
    sl__invariant(sl_cluster_set_state(s->cl, id, SL_NODE_DRAINING) == 0);
    s->xdrained[s->nxdrained++] = id;
}

void sl__resv_restore(sl_sched_t *s) {
    while (s->nxdrained > 0)
        sl__invariant(sl_cluster_set_state(s->cl, s->xdrained[--s->nxdrained], SL_NODE_UP) == 0);
}

int sl__resv_allow(const sl_sched_t *s, const sl_job_t *j, sl_cycle_t *cy, char *reason,
                   size_t rlen) {
    char at[SL__UNIT_BUF];
    const sl__resv_t *r = resv_by_id(s, j->spec.resv);
    if (!r) {
        sl__setf(reason, rlen, "its reservation (id %d) no longer exists", (int)j->spec.resv);
        return SL_NOFIT_EVER;
    }
    if (cy->now_us < r->start_us) {
        sl__setf(reason, rlen, "waiting for reservation %s, which starts at t=%s", r->name,
                 sl__fmt_secs(at, sizeof at, r->start_us));
        return SL_NOFIT;
    }
    if (cy->now_us >= r->end_us) {
        sl__setf(reason, rlen, "reservation %s ended at t=%s", r->name,
                 sl__fmt_secs(at, sizeof at, r->end_us));
        return SL_NOFIT_EVER;
    }
    cy->allow = r->member;
    cy->allow_n = r->nmember;
    cy->allow_base = s->place;
    return SL_FIT;
}

bool sl__resv_filter(const sl_cycle_t *cy, const sl_task_req_t *req, const sl_node_t *node) {
    if (!cy->allow || node->id >= cy->allow_n || !cy->allow[node->id]) return false;
    const sl_place_policy_t *b = cy->allow_base;
    return !b || !b->filter || b->filter(cy, req, node);
}

int sl__resv_exclude(sl_sched_t *s, const sl_job_t *j, int64_t now_us, int64_t horizon_us,
                     char *reason, size_t rlen) {
    (void)reason;
    (void)rlen;
    if (j->spec.resv) return SL_NOFIT;
    for (size_t i = 0; i < s->nresv; i++) {
        const sl__resv_t *r = &s->resvs[i];
        if (!keeps_off(s, r, j, now_us, horizon_us)) continue;
        for (size_t k = 0; k < r->nnodes; k++) take_out(s, r->nodes[k]);
    }
    return SL_FIT;
}

void sl__resv_fini(sl_sched_t *s) {
    for (size_t i = 0; i < s->nresv; i++) {
        sl_free(s->resvs[i].nodes);
        sl_free(s->resvs[i].member);
        sl_free(s->resvs[i].pend);
    }
    s->nresv = 0;
    sl_free(s->xdrained);
    sl_free(s->rtry);
}

/* Pending jobs in queue order (qless), for the cycle's first tries. */
static int cmp_pend(const void *pa, const void *pb) {
    const sl_job_t *a = *(sl_job_t *const *)pa, *b = *(sl_job_t *const *)pb;
    return qless(a, b) ? -1 : qless(b, a) ? 1 : 0;
}

size_t sl__resv_window_jobs(sl_sched_t *s, int64_t now_us, sl_job_t ***out) {
    size_t n = 0;
    for (size_t i = 0; i < s->nresv; i++) {
        const sl__resv_t *r = &s->resvs[i];
        if (r->npend == 0 || now_us < r->start_us || now_us >= r->end_us) continue;
        if (n + r->npend > s->rtry_cap) {
            s->rtry_cap = (n + r->npend) * 2;
            s->rtry = sl_xrealloc(s->rtry, s->rtry_cap * sizeof *s->rtry);
        }
        memcpy(s->rtry + n, r->pend, r->npend * sizeof *r->pend);
        n += r->npend;
    }
    if (n > 1) qsort(s->rtry, n, sizeof *s->rtry, cmp_pend);
    *out = s->rtry;
    return n;
}

/* ---- the public interface ---- */

typedef struct gcand {
    uint32_t node;
    int32_t gpus;
} gcand_t;

static int cmp_gcand(const void *pa, const void *pb) {
    const gcand_t *a = pa, *b = pb;
    if (a->gpus != b->gpus) return a->gpus > b->gpus ? -1 : 1;
    return a->node < b->node ? -1 : a->node > b->node;
}

static bool windows_overlap(int64_t s1, int64_t e1, int64_t s2, int64_t e2) {
    return s1 < e2 && s2 < e1;
}

/* Checks everything but the nodes. */
static int spec_check(const sl_sched_t *s, const sl_resv_spec_t *sp, int64_t now_us, char *err,
                      size_t errlen) {
    char a[SL__UNIT_BUF];
    size_t nl = sp->name ? strlen(sp->name) : 0;
    if (nl == 0 || nl >= SL_NAME_MAX) {
        sl__setf(err, errlen, "name: must be 1..%d bytes", SL_NAME_MAX - 1);
        return SL_EINVAL;
    }
    if (sl_sched_resv_find(s, sp->name) >= 0) {
        sl__setf(err, errlen, "name: reservation %s already exists", sp->name);
        return SL_EEXIST;
    }
    if (sp->end_us <= sp->start_us) {
        sl__setf(err, errlen, "duration: the window must end after its start");
        return SL_EINVAL;
    }
    if (sp->end_us <= now_us) {
        sl__setf(err, errlen, "end: the window ended at t=%s, in the past",
                 sl__fmt_secs(a, sizeof a, sp->end_us));
        return SL_EINVAL;
    }
    int given = (sp->nnodes > 0) + (sp->node_count != 0) + (sp->gpus != 0);
    if (given != 1 || sp->node_count < 0 || sp->gpus < 0 || (sp->nnodes > 0 && !sp->nodes)) {
        sl__setf(err, errlen, "nodes: give exactly one of a node list, a node count or a GPU "
                 "count (each positive)");
        return SL_EINVAL;
    }
    if (sp->ntenants < 1 || sp->ntenants > SL_RESV_TENANTS_MAX || !sp->tenants) {
        sl__setf(err, errlen, "tenants: give 1..%d tenants", SL_RESV_TENANTS_MAX);
        return SL_EINVAL;
    }
    for (size_t i = 0; i < sp->ntenants; i++) {
        if (!tenant_ok(s, sp->tenants[i])) {
            sl__setf(err, errlen, "tenants: no tenant with id %d", (int)sp->tenants[i]);
            return SL_EINVAL;
        }
    }
    if (s->nresv >= SL_RESV_MAX) {
        sl__setf(err, errlen, "reservations: at most %d may exist at once", SL_RESV_MAX);
        return SL_ERANGE;
    }
    return 0;
}

int sl_sched_resv_add(sl_sched_t *s, const sl_resv_spec_t *sp, int64_t now_us,
                      int32_t *id_out, char *err, size_t errlen) {
    if (!sp) {
        sl__setf(err, errlen, "reservation spec is missing");
        return SL_EINVAL;
    }
    int rc = spec_check(s, sp, now_us, err, errlen);
    if (rc) return rc;
    size_t nn = sl_cluster_node_count(s->cl);
    /* What holds each node: the latest expected end of its running jobs,
     * and the reservation (index + 1) whose window overlaps. */
    int64_t *busy = sl_xmalloc((nn ? nn : 1) * sizeof *busy);
    uint8_t *taken = sl_xcalloc(nn ? nn : 1, 1);
    uint8_t *mine = sl_xcalloc(nn ? nn : 1, 1);
    uint32_t *nodes = NULL;
    gcand_t *gc = NULL;
    size_t k = 0;
    char a[SL__UNIT_BUF], b[SL__UNIT_BUF];
    for (size_t i = 0; i < nn; i++) busy[i] = INT64_MIN;
    for (const sl_job_t *j = s->run_head; j; j = j->r_next)
        for (int32_t t = 0; t < j->nplaced; t++)
            if (j->pls[t].node < nn && j->end_us > busy[j->pls[t].node])
                busy[j->pls[t].node] = j->end_us;
    for (size_t i = 0; i < s->nresv; i++) {
        const sl__resv_t *r = &s->resvs[i];
        if (!windows_overlap(r->start_us, r->end_us, sp->start_us, sp->end_us)) continue;
        for (size_t x = 0; x < r->nnodes; x++)
            if (r->nodes[x] < nn) taken[r->nodes[x]] = (uint8_t)(i + 1);
    }
    int32_t gpus = 0;
    if (sp->nnodes > 0) {
        nodes = sl_xmalloc(sp->nnodes * sizeof *nodes);
        for (size_t i = 0; i < sp->nnodes; i++) {
            uint32_t id = sp->nodes[i];
            if (id >= nn) {
                sl__setf(err, errlen, "nodes: no node with id %u", id);
                rc = SL_EINVAL;
                goto out;
            }
            const sl_node_t *n = sl_cluster_node(s->cl, id);
            if (mine[id]) {
                sl__setf(err, errlen, "nodes: node %s is named twice", n->name);
                rc = SL_EINVAL;
                goto out;
            }
            if (taken[id]) {
                const sl__resv_t *r = &s->resvs[taken[id] - 1];
                sl__setf(err, errlen, "nodes: node %s is in reservation %s from t=%s to t=%s",
                         n->name, r->name, sl__fmt_secs(a, sizeof a, r->start_us),
                         sl__fmt_secs(b, sizeof b, r->end_us));
                rc = SL_EBUSY;
                goto out;
            }
            if (busy[id] > sp->start_us && !sp->ignore_jobs) {
                sl__setf(err, errlen, "nodes: node %s runs a job expected to end at t=%s, after "
                         "the start (t=%s)", n->name,
                         busy[id] == INT64_MAX ? "never (no time limit)"
                                               : sl__fmt_secs(a, sizeof a, busy[id]),
                         sl__fmt_secs(b, sizeof b, sp->start_us));
                rc = SL_EBUSY;
                goto out;
            }
            mine[id] = 1;
            nodes[k++] = id;
            gpus += n->ngpus;
        }
    } else {
        gc = sl_xmalloc((nn ? nn : 1) * sizeof *gc);
        size_t nc = 0;
        int64_t have = 0;
        for (uint32_t id = 0; id < nn; id++) {
            const sl_node_t *n = sl_cluster_node(s->cl, id);
            if (n->state != SL_NODE_UP || taken[id] || busy[id] > sp->start_us) continue;
            if (sp->gpus > 0 && n->ngpus == 0) continue;
            gc[nc++] = (gcand_t){id, n->ngpus};
            have += n->ngpus;
        }
        if (sp->node_count > 0 && nc < (size_t)sp->node_count) {
            sl__setf(err, errlen, "node_count: %d nodes asked, %zu are up, in no other "
                     "reservation then and free of jobs by the start", (int)sp->node_count, nc);
            rc = SL_ENOSPC;
            goto out;
        }
        if (sp->gpus > 0 && have < sp->gpus) {
            sl__setf(err, errlen, "gpus: %d GPUs asked, %lld are on nodes up, in no other "
                     "reservation then and free of jobs by the start", (int)sp->gpus,
                     (long long)have);
            rc = SL_ENOSPC;
            goto out;
        }
        if (sp->gpus > 0 && nc > 1) qsort(gc, nc, sizeof *gc, cmp_gcand);
        nodes = sl_xmalloc((nc ? nc : 1) * sizeof *nodes);
        for (size_t i = 0; i < nc; i++) {
            if (sp->node_count > 0 && k == (size_t)sp->node_count) break;
            if (sp->gpus > 0 && gpus >= sp->gpus) break;
            nodes[k++] = gc[i].node;
            gpus += gc[i].gpus;
        }
        for (size_t i = 0; i < k; i++) mine[nodes[i]] = 1;
    }

    sl__resv_t *r = &s->resvs[s->nresv++];
    memset(r, 0, sizeof *r);
    r->id = ++s->resv_next_id;
    memcpy(r->name, sp->name, strlen(sp->name) + 1);
    r->start_us = sp->start_us;
    r->end_us = sp->end_us;
    r->nodes = nodes;
    r->nnodes = k;
    r->gpus = gpus;
    r->member = mine;
    r->nmember = nn;
    memcpy(r->tenants, sp->tenants, sp->ntenants * sizeof *sp->tenants);
    r->ntenants = sp->ntenants;
    nodes = NULL;
    mine = NULL;
    if (id_out) *id_out = r->id;
    rc = 0;
out:
    sl_free(busy);
    sl_free(taken);
    sl_free(mine);
    sl_free(nodes);
    sl_free(gc);
    return rc;
}

int sl_sched_resv_remove(sl_sched_t *s, int32_t id) {
    for (size_t i = 0; i < s->nresv; i++) {
        if (s->resvs[i].id != id) continue;
        sl_free(s->resvs[i].nodes);
        sl_free(s->resvs[i].member);
        sl_free(s->resvs[i].pend);
        memmove(&s->resvs[i], &s->resvs[i + 1], (s->nresv - i - 1) * sizeof s->resvs[0]);
        s->nresv--;
        return 0;
    }
    return SL_ENOENT;
}

int sl_sched_resv_find(const sl_sched_t *s, const char *name) {
    if (!name) return SL_ENOENT;
    for (size_t i = 0; i < s->nresv; i++)
        if (strcmp(s->resvs[i].name, name) == 0) return s->resvs[i].id;
    return SL_ENOENT;
}

size_t sl_sched_resv_count(const sl_sched_t *s) {
    return s->nresv;
}

static void info_of(const sl__resv_t *r, sl_resv_info_t *out) {
    *out = (sl_resv_info_t){r->id, r->name, r->start_us, r->end_us, r->nodes, r->nnodes,
                            r->tenants, r->ntenants, r->gpus};
}

int sl_sched_resv_at(const sl_sched_t *s, size_t i, sl_resv_info_t *out) {
    if (i >= s->nresv) return SL_ENOENT;
    info_of(&s->resvs[i], out);
    return 0;
}

int sl_sched_resv_get(const sl_sched_t *s, int32_t id, sl_resv_info_t *out) {
    const sl__resv_t *r = resv_by_id(s, id);
    if (!r) return SL_ENOENT;
    info_of(r, out);
    return 0;
}

bool sl_sched_resv_admits(const sl_sched_t *s, int32_t id, int32_t tenant) {
    const sl__resv_t *r = resv_by_id(s, id);
    if (!r) return false;
    for (size_t i = 0; i < r->ntenants; i++)
        if (r->tenants[i] == tenant) return true;
    return false;
}
