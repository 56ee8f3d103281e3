/*
 * sched_check.c - walks over the scheduler's state: sl_sched_foreach and
 * the invariant checks of sl_sched_check (every link, order, count and
 * usage recomputed from scratch and compared; O(jobs + nodes * gpus)).
 *
 * come in table order.
 *
 * Randomness: one RNG seeded with the config's seed, and a node order key
 * derived from the same seed (splitmix64 of it) that every cycle carries
 *
 * Pure: no I/O, no clock.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h> /* snprintf only: formats reasons and errors, no I/O */
#include <stdlib.h>
#include <string.h>

#include "cluster_index.h"
#include "cluster_internal.h"
#include "sched_internal.h"
#include "sluice/alloc.h"
#include "sluice/error.h"

/* ---- iteration and checks ---- */

/* foreach's heap of tenant indices (size_t) by their cursors. */
typedef struct fe_ctx {
    const sl_sched_t *s;
    const sl_job_t **cur;
    int64_t now_us;
} fe_ctx_t;

static bool fe_less(void *ctx, const void *a, const void *b) {
    const fe_ctx_t *c = ctx;
    return c->s->queue->less(c->s, c->cur[*(const size_t *)a], c->cur[*(const size_t *)b], c->now_us);
}

static const sl_heap_type_t fe_heap = {sizeof(size_t), fe_less, NULL};

void sl_sched_foreach(const sl_sched_t *s, sl_job_state_t st, sl_job_fn fn, void *ud) {
    if (st == SL_JOB_RUNNING) {
        for (const sl_job_t *j = s->run_head; j;) {
            const sl_job_t *next = j->r_next;
            if (fn(ud, j)) return;
            j = next;
        }
        return;
    }
    if (st != SL_JOB_PENDING) {
        size_t it = 0;
        for (const sl_hash_entry_t *e; (e = sl_hash_next(&s->jobs, &it));) {
            const sl_job_t *j = e->val;
            if (j->state == st && fn(ud, j)) return;
        }
        return;
    }
    /* Merge the tenant queues under the policy, as a cycle would order them
     * with the shares as they are now: a heap of tenant cursors. */
    size_t cap = s->ntenants ? s->ntenants : 1;
    const sl_job_t **cur = sl_xcalloc(cap, sizeof *cur);
    fe_ctx_t fc = {s, cur, s->clock_us == INT64_MIN ? 0 : s->clock_us};
    sl_heap_t heap;
    sl_heap_init(&heap);
    for (size_t i = 0; i < s->ntenants; i++) {
        cur[i] = tq_job(sl__tn_first(s->tenants[i].root));
        if (cur[i]) sl_heap_append(&heap, &fe_heap, &i);
    }
    sl_heap_build(&heap, &fe_heap, &fc);
    while (sl_heap_count(&heap) > 0) {
        size_t ti = *(size_t *)sl_heap_top(&heap);
        const sl_job_t *j = cur[ti];
        cur[ti] = tq_job(sl__tn_next(&j->tq));
        if (!cur[ti]) sl_heap_pop(&heap, &fe_heap, &fc, NULL);
        else sl_heap_fix(&heap, &fe_heap, &fc, 0);
        if (fn(ud, j)) break;
    }
    sl_heap_fini(&heap);
    sl_free(cur);
}

/* Links and heap order of one treap; its in-order nodes go to fn. */
static int check_tn(const sl__tnode_t *root, size_t limit, int (*fn)(void *, const sl__tnode_t *),
                    void *ud) {
    size_t n = 0;
    if (root && root->up) return SL_ESTATE;
    for (const sl__tnode_t *x = sl__tn_first((sl__tnode_t *)(uintptr_t)root); x; x = sl__tn_next(x)) {
        if (x->l && (x->l->up != x || x->l->prio > x->prio)) return SL_ESTATE;
        if (x->r && (x->r->up != x || x->r->prio > x->prio)) return SL_ESTATE;
        if (++n > limit || fn(ud, x)) return SL_ESTATE;
    }
    return 0;
}

typedef struct check_ctx {
    const sl_sched_t *s;
    int32_t tid;
    const group_t *g;
    const sl_job_t *prev;
    const group_t *gprev;
    size_t n, ngroups;
} check_ctx_t;

static int check_tq_job(void *ud, const sl__tnode_t *x) {
    check_ctx_t *c = ud;
    const sl_job_t *j = tq_job(x);
    if (j->state != SL_JOB_PENDING || j->spec.tenant != c->tid || !j->grp) return SL_ESTATE;
    if (c->prev && !qless(c->prev, j)) return SL_ESTATE;
    if (jobs_find(c->s, j->spec.id) != j) return SL_ESTATE;
    c->prev = j;
    c->n++;
    return 0;
}

static int check_gq_job(void *ud, const sl__tnode_t *x) {
    check_ctx_t *c = ud;
    const sl_job_t *j = gq_job(x);
    const group_t *g = c->g;
    if (j->state != SL_JOB_PENDING || j->grp != g || !group_matches(g, g->hash, j)) return SL_ESTATE;
    if (c->prev ? !qless(c->prev, j) : g->head != j) return SL_ESTATE;
    int64_t lim = sl__job_limit(j, c->s->default_limit_us);
    if (j->lim != (lim > 0 ? lim : INT64_MAX)) return SL_ESTATE;
    int64_t m = j->lim;
    if (x->l && gq_job(x->l)->minlim < m) m = gq_job(x->l)->minlim;
    if (x->r && gq_job(x->r)->minlim < m) m = gq_job(x->r)->minlim;
    if (j->minlim != m) return SL_ESTATE;
    c->prev = j;
    c->n++;
    return 0;
}

static int check_group(void *ud, const sl__tnode_t *x) {
    check_ctx_t *c = ud;
    const group_t *g = ix_group(x);
    if (g->tenant != c->tid || !g->head || g->npending == 0) return SL_ESTATE;
    if (c->gprev && !qless(c->gprev->head, g->head)) return SL_ESTATE;
    if (g->hash != group_hash(g->head)) return SL_ESTATE;
    check_ctx_t gc = {.s = c->s, .tid = c->tid, .g = g};
    if (check_tn(g->root, g->npending, check_gq_job, &gc) || gc.n != g->npending) return SL_ESTATE;
    c->gprev = g;
    c->n += g->npending;
    c->ngroups++;
    return 0;
}

static int check_end_job(void *ud, const sl__tnode_t *x) {
    check_ctx_t *c = ud;
    const sl_job_t *j = sl__end_job(x);
    if (j->state != SL_JOB_RUNNING || j->end_us == INT64_MAX ||
        j->end_us != sl__job_expected_end(j, c->s->default_limit_us))
        return SL_ESTATE;
    if (c->prev && !eq_less(&c->prev->eq, x)) return SL_ESTATE;
    c->prev = j;
    c->n++;
    return 0;
}

static int check_treap(const sl_sched_t *s, const tenant_t *t, int32_t tid, size_t *ngroups) {
    check_ctx_t c = {.s = s, .tid = tid};
    if (check_tn(t->root, sl_hash_count(&s->jobs), check_tq_job, &c) || c.n != t->npending) return SL_ESTATE;
    check_ctx_t gc = {.s = s, .tid = tid};
    if (check_tn(t->groot, sl_hash_count(&s->jobs), check_group, &gc) || gc.n != t->npending) return SL_ESTATE;
    *ngroups += gc.ngroups;
    return 0;
}

/* Per-node usage recomputed from the running jobs, against the cluster. */
static int check_nodes(const sl_sched_t *s) {
    size_t nn = sl_cluster_node_count(s->cl);
    typedef struct {
        int64_t cpu, mem;
        int32_t milli[SL_MAX_GPUS_PER_NODE];
        int64_t gmem[SL_MAX_GPUS_PER_NODE];
        uint32_t whole;
    } use_t;
    use_t *u = sl_xcalloc(nn ? nn : 1, sizeof *u);
    int rc = SL_ESTATE;
    for (const sl_job_t *j = s->run_head; j; j = j->r_next) {
        const sl_task_req_t *r = &j->spec.task;
        for (int32_t i = 0; i < j->nplaced; i++) {
            const sl_place_t *pl = &j->pls[i];
            if (pl->node >= nn) goto out;
            use_t *x = &u[pl->node];
            x->cpu += r->cpu_milli;
            x->mem += r->mem_bytes;
            for (int g = 0; g < SL_MAX_GPUS_PER_NODE; g++) {
                if (!(pl->gpu_mask & (1u << g))) continue;
                if (r->gpus > 0) {
                    if (x->whole & (1u << g)) goto out;
                    x->whole |= 1u << g;
                } else {
                    x->milli[g] += r->gpu_milli;
                    x->gmem[g] += r->gpu_mem_bytes;
                }
            }
        }
    }
    for (uint32_t id = 0; id < nn; id++) {
        const sl_node_t *n = sl_cluster_node(s->cl, id);
        const use_t *x = &u[id];
        if (n->cpu_free != n->cpu_total - x->cpu || n->mem_free != n->mem_total - x->mem) goto out;
        if (x->whole >> n->ngpus) goto out;
        for (int g = 0; g < n->ngpus; g++) {
            int32_t fm; /* a fenced GPU's real free state (cluster_fence.c) */
            int64_t fb;
            sl__fence_real(s->cl, id, g, &fm, &fb);
            if (x->whole & (1u << g)) {
                if (x->milli[g] || x->gmem[g] || fm != 0 || fb != 0)
                    goto out;
            } else if (fm != SL_GPU_MILLI - x->milli[g] || fb != n->gpu_mem_total - x->gmem[g]) {
                goto out;
            }
        }
    }
    rc = 0;
out:
    sl_free(u);
    return rc;
}

/*
 * A job's preemption state (sched_preempt.c): a stop only while running,
 * never below min_tasks unless whole; the size history within bounds.
 * *owed sums what preemptors wait for, *stopping counts the stopping jobs
 * whose preemptor is still known: the two must agree.
 */
static int check_stop(const sl_sched_t *s, const sl_job_t *j, size_t *owed, size_t *stopping) {
    if (j->stop_n < 0 || j->stop_n > j->nplaced || j->victims_left < 0) return SL_ESTATE;
    if (j->stop_n > 0) {
        if (j->state != SL_JOB_RUNNING) return SL_ESTATE;
        if (j->stop_whole ? j->stop_n != j->nplaced : j->nplaced - j->stop_n < job_min(j))
            return SL_ESTATE;
        if (j->stop_for && jobs_find(s, j->stop_for)) (*stopping)++;
    } else if (j->stop_whole || j->stop_for) {
        return SL_ESTATE;
    }
    *owed += (size_t)j->victims_left;
    if (j->nhist < 0 || j->nhist > SL_JOB_HISTORY_MAX || (!j->hist && j->nhist > 2)) return SL_ESTATE;
    return 0;
}

int sl_sched_check(const sl_sched_t *s) {
    size_t count = 0, npend = 0, nrun = 0, owed = 0, stopping = 0;
    size_t it = 0;
    for (const sl_hash_entry_t *e; (e = sl_hash_next(&s->jobs, &it));) {
        const sl_job_t *j = e->val;
        count++;
        if (jobs_find(s, j->spec.id) != j || j->owner != s) return SL_ESTATE;
        if (!tenant_ok(s, j->spec.tenant)) return SL_ESTATE;
        if (j->state == SL_JOB_PENDING) npend++;
        if (j->state == SL_JOB_RUNNING) nrun++;
        if (j->state != SL_JOB_RUNNING && (j->nplaced != 0 || j->pls)) return SL_ESTATE;
        if (check_stop(s, j, &owed, &stopping)) return SL_ESTATE;
    }
    if (count != sl_hash_count(&s->jobs) || npend != s->npending || nrun != s->nrunning) return SL_ESTATE;
    if (owed != stopping) return SL_ESTATE;

    size_t tp = 0, ng = 0, nh = 0;
    for (size_t i = 0; i < s->ntenants; i++) {
        if (check_treap(s, &s->tenants[i], (int32_t)i, &ng)) return SL_ESTATE;
        tp += s->tenants[i].npending;
    }
    if (tp != s->npending) return SL_ESTATE;
    /* Every hashed group is indexed (and so non-empty), in its bucket. */
    for (size_t i = 0; i < s->gbuckets; i++)
        for (const group_t *g = s->gtab[i]; g; g = g->h_next, nh++)
            if ((g->hash & (s->gbuckets - 1)) != i || nh >= s->ngroups) return SL_ESTATE;
    if (ng != s->ngroups || nh != s->ngroups) return SL_ESTATE;

    /* Running list: order, links, and usage per tenant. */
    sl_res_t *use = sl_xcalloc(s->ntenants ? s->ntenants : 1, sizeof *use);
    size_t *cnt = sl_xcalloc(s->ntenants ? s->ntenants : 1, sizeof *cnt);
    sl_res_t *pend = sl_xcalloc(s->ntenants ? s->ntenants : 1, sizeof *pend);
    int rc = SL_ESTATE;
    size_t r = 0;
    const sl_job_t *prev = NULL;
    for (const sl_job_t *j = s->run_head; j; prev = j, j = j->r_next) {
        if (j->state != SL_JOB_RUNNING || j->r_prev != prev || ++r > nrun) goto out;
        if (prev && prev->start_us > j->start_us) goto out;
        int32_t m = job_min(j);
        if (j->nplaced < m || j->nplaced > j->spec.ntasks || !j->pls) goto out;
        use[j->spec.tenant] = sl_res_add(use[j->spec.tenant], job_total(j, j->nplaced));
        cnt[j->spec.tenant]++;
    }
    if (r != nrun || s->run_tail != prev) goto out;
    size_t nfinite = 0;
    for (const sl_job_t *j = s->run_head; j; j = j->r_next) nfinite += j->end_us != INT64_MAX;
    check_ctx_t ec = {.s = s};
    if (check_tn(s->ends_root, nrun, check_end_job, &ec) || ec.n != nfinite) goto out;
    /* What each tenant's pending jobs ask for (sl_sched_tenant_pending). */
    it = 0;
    for (const sl_hash_entry_t *e; (e = sl_hash_next(&s->jobs, &it));) {
        const sl_job_t *j = e->val;
        if (j->state == SL_JOB_PENDING)
            pend[j->spec.tenant] = sl_res_add(pend[j->spec.tenant], job_total(j, j->spec.ntasks));
    }
    for (size_t i = 0; i < s->ntenants; i++) {
        const tenant_t *t = &s->tenants[i];
        if (memcmp(&use[i], &t->usage, sizeof use[i]) != 0 || cnt[i] != t->nrunning) goto out;
        if (memcmp(&pend[i], &t->pend, sizeof pend[i]) != 0) goto out;
    }
    if (sl_cluster_check(s->cl) != 0) goto out;
    if (check_nodes(s) != 0) goto out;
    rc = 0;
out:
    sl_free(use);
    sl_free(cnt);
    sl_free(pend);
    return rc;
}

