/*
 * reservations.c - advance reservations in sluiced (reservations.h): the
 * core's reservations (sluice/resv.h) made durable, restored and ended.
 *
 * Names are the durable identity: the row holds node and tenant names,
 * which the core's ids are found from again at start-up. Ending one walks
 * the jobs in memory (every pending and running job is there): a window
 * ends a few times a day, so O(jobs) then is nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "domain/reservations.h"
#include "domain/jobs.h"
#include "domain/jobtab.h"
#include "log.h"

/* "a,b,c" from n names (truncated names never happen: each < SL_NAME_MAX). */
static char *join(const char *const *v, size_t n) {
    size_t len = 1;
    for (size_t i = 0; i < n; i++) len += strlen(v[i]) + 1;
    char *s = sl_xmalloc(len), *p = s;
    *p = '\0';
    for (size_t i = 0; i < n; i++) p += sprintf(p, "%s%s", i ? "," : "", v[i]);
    return s;
}

static void put_row(ctl_t *c, int32_t id, int64_t created_us) {
    sl_resv_info_t ri;
    if (sl_sched_resv_get(c->sched, id, &ri) != 0) return;
    const char **nn = sl_xmalloc((ri.nnodes + 1) * sizeof *nn);
    const char *tn[SL_RESV_TENANTS_MAX];
    for (size_t i = 0; i < ri.nnodes; i++) nn[i] = sl_cluster_node(c->cl, ri.nodes[i])->name;
    for (size_t i = 0; i < ri.ntenants; i++) tn[i] = sl_sched_tenant_name(c->sched, ri.tenants[i]);
    char *nodes = join(nn, ri.nnodes), *tenants = join(tn, ri.ntenants);
    ctl_store_resv_t row = {ri.name, ri.start_us, ri.end_us, nodes, tenants, created_us};
    ctl_store_resv_put(c->store, &row);
    sl_free(nodes);
    sl_free(tenants);
    sl_free(nn);
}

int ctl_resv_create(ctl_t *c, const ctl_resv_req_t *rq, int32_t *id, char *field,
                    size_t fieldlen, char *err, size_t errlen) {
    int32_t tids[SL_RESV_TENANTS_MAX];
    if (rq->ntenants > SL_RESV_TENANTS_MAX) {
        snprintf(field, fieldlen, "tenants");
        snprintf(err, errlen, "tenants: at most %d", SL_RESV_TENANTS_MAX);
        return SL_EINVAL;
    }
    for (size_t i = 0; i < rq->ntenants; i++) {
        int t = sl_sched_tenant_find(c->sched, rq->tenants[i]);
        if (t < 0) {
            snprintf(field, fieldlen, "tenants");
            snprintf(err, errlen, "tenants: unknown tenant \"%.63s\"", rq->tenants[i]);
            return SL_ENOENT;
        }
        tids[i] = t;
    }
    uint32_t *nids = rq->nnodes ? sl_xmalloc(rq->nnodes * sizeof *nids) : NULL;
    for (size_t i = 0; i < rq->nnodes; i++) {
        const sl_node_t *n = sl_cluster_find_node(c->cl, rq->nodes[i]);
        if (n == NULL) {
            sl_free(nids);
            snprintf(field, fieldlen, "nodes");
            snprintf(err, errlen, "nodes: unknown node \"%.63s\"", rq->nodes[i]);
            return SL_ENOENT;
        }
        nids[i] = n->id;
    }
    char dflt[SL_NAME_MAX];
    const char *name = rq->name;
    if (name == NULL || name[0] == '\0') {
        /* The next free "resv-N". */
        for (int k = 1; k < 100000; k++) {
            snprintf(dflt, sizeof dflt, "resv-%d", k);
            if (sl_sched_resv_find(c->sched, dflt) < 0) break;
        }
        name = dflt;
    }
    sl_resv_spec_t sp = {.name = name, .start_us = rq->start_us, .end_us = rq->end_us,
                         .nodes = nids, .nnodes = rq->nnodes, .node_count = rq->node_count,
                         .gpus = rq->gpus, .tenants = tids, .ntenants = rq->ntenants};
    char msg[300];
    int rc = sl_sched_resv_add(c->sched, &sp, ctl_now_us(), id, msg, sizeof msg);
    sl_free(nids);
    if (rc != 0) {
        const char *colon = strstr(msg, ": ");
        snprintf(field, fieldlen, "%.*s", colon ? (int)(colon - msg) : 0, msg);
        snprintf(err, errlen, "%s", msg);
        return rc;
    }
    put_row(c, *id, ctl_now_us());
    ctl_store_commit(c->store); /* durable before the answer */
    sl_log(SL_LOG_INFO, "resv", "reservation=%s created", name);
    c->sched_dirty = true;
    ctl_loop_kick(c->loop);
    return 0;
}

/* Ends reservation id (its jobs stop or fail with why) and deletes it. */
static int32_t end_resv(ctl_t *c, int32_t id, const char *why) {
    sl_resv_info_t ri;
    if (sl_sched_resv_get(c->sched, id, &ri) != 0) return 0;
    char name[SL_NAME_MAX];
    snprintf(name, sizeof name, "%s", ri.name);
    uint64_t *ids = NULL;
    size_t n = 0, cap = 0;
    size_t it = 0;
    for (const sl_hash_entry_t *e; (e = sl_hash_next(&c->jobs, &it)) != NULL;) {
        const ctl_job_t *j = e->val;
        if (j->core.resv != id ||
            (j->state != CTL_JOB_PENDING && j->state != CTL_JOB_RUNNING))
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            ids = sl_xrealloc(ids, cap * sizeof *ids);
        }
        ids[n++] = j->id;
    }
    for (size_t i = 0; i < n; i++) {
        ctl_job_t *j = ctl_job_find(c, ids[i]);
        if (j) ctl_job_fail(c, j, why);
    }
    sl_free(ids);
    sl_sched_resv_remove(c->sched, id);
    ctl_store_resv_delete(c->store, name);
    sl_log(SL_LOG_INFO, "resv", "reservation=%s ended jobs=%zu: %s", name, n, why);
    c->sched_dirty = true;
    ctl_loop_kick(c->loop);
    return (int32_t)n;
}

int ctl_resv_delete(ctl_t *c, const char *name, int32_t *njobs) {
    int id = sl_sched_resv_find(c->sched, name);
    if (id < 0) return SL_ENOENT;
    char why[SL_NAME_MAX + 40];
    snprintf(why, sizeof why, "reservation %s was deleted", name);
    *njobs = end_resv(c, id, why);
    ctl_store_commit(c->store);
    return 0;
}

void ctl_resv_sweep(ctl_t *c) {
    int64_t now = ctl_now_us();
    for (size_t i = 0; i < sl_sched_resv_count(c->sched);) {
        sl_resv_info_t ri;
        sl_sched_resv_at(c->sched, i, &ri);
        if (ri.end_us <= now) {
            char why[SL_NAME_MAX + 60];
            snprintf(why, sizeof why, "reservation %s ended (its window is over)", ri.name);
            end_resv(c, ri.id, why); /* removes entry i */
            continue;
        }
        if (ri.start_us <= now && ri.start_us > c->resv_swept_us) {
            c->sched_dirty = true; /* its jobs may start now */
            ctl_loop_kick(c->loop);
        }
        i++;
    }
    c->resv_swept_us = now;
}

/* Splits "a,b,c" into v (up to max names, each a pointer into buf). */
static size_t split(const char *s, char *buf, size_t buflen, const char **v, size_t max) {
    snprintf(buf, buflen, "%s", s);
    size_t n = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t && n < max;
         t = strtok_r(NULL, ",", &save))
        v[n++] = t;
    return n;
}

static int resv_row(void *ud, const ctl_store_resv_t *r) {
    ctl_t *c = ud;
    if (r->end_us <= ctl_now_us()) {
        sl_log(SL_LOG_INFO, "resv", "reservation=%s ended while sluiced was down", r->name);
        ctl_store_resv_delete(c->store, r->name);
        return 0;
    }
    size_t len = strlen(r->nodes) + 1;
    char *nbuf = sl_xmalloc(len);
    const char **names = sl_xmalloc(len * sizeof *names);
    size_t nn = split(r->nodes, nbuf, len, names, len);
    uint32_t *ids = sl_xmalloc((nn ? nn : 1) * sizeof *ids);
    size_t k = 0;
    for (size_t i = 0; i < nn; i++) {
        const sl_node_t *n = sl_cluster_find_node(c->cl, names[i]);
        if (n) ids[k++] = n->id;
        else sl_log(SL_LOG_WARN, "resv", "reservation=%s node=%s no longer known: dropped from it",
                    r->name, names[i]);
    }
    char tbuf[SL_RESV_TENANTS_MAX * SL_NAME_MAX];
    const char *tn[SL_RESV_TENANTS_MAX];
    size_t nt = split(r->tenants, tbuf, sizeof tbuf, tn, SL_RESV_TENANTS_MAX);
    int32_t tids[SL_RESV_TENANTS_MAX];
    size_t m = 0;
    for (size_t i = 0; i < nt; i++) {
        int t = sl_sched_tenant_find(c->sched, tn[i]);
        if (t >= 0) tids[m++] = t;
        else sl_log(SL_LOG_WARN, "resv", "reservation=%s tenant=%s no longer configured",
                    r->name, tn[i]);
    }
    /* Named nodes only, as they were picked; jobs are not loaded yet. */
    sl_resv_spec_t sp = {.name = r->name, .start_us = r->start_us, .end_us = r->end_us,
                         .nodes = ids, .nnodes = k, .tenants = tids, .ntenants = m,
                         .ignore_jobs = true};
    char err[300];
    int32_t id;
    if (k == 0 || m == 0 || sl_sched_resv_add(c->sched, &sp, ctl_now_us(), &id, err, sizeof err)) {
        sl_log(SL_LOG_WARN, "resv", "reservation=%s not restored: %s", r->name,
               k == 0 ? "none of its nodes is known" : m == 0 ? "none of its tenants is configured"
                                                       : err);
        ctl_store_resv_delete(c->store, r->name);
    }
    sl_free(ids);
    sl_free(names);
    sl_free(nbuf);
    return 0;
}

int ctl_resvs_restore(ctl_t *c) {
    c->resv_swept_us = ctl_now_us();
    return ctl_store_resvs_read(c->store, resv_row, c);
}
