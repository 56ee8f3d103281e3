/*
 * jobtab.c - jobs in memory by id, in the core's hash table (sluice/hash.h:
 * open addressing, at most half full, no tombstones) for finding one, and
 * in the core's ordered map (sluice/ordmap.h) for walking them in id order;
 * plus the ring of retained finished jobs that trimming pops (see
 * jobtab.h). Ids come from a counter, so a submission appends to the
 * order; only a start-up registers out of order, and the first walk after
 * it sorts once.
 */
#include "domain/jobtab.h"

/* One job of the ttl heap: it leaves memory at `at` (microseconds). */
struct ctl_ttl {
    uint64_t id;
    int64_t at;
};

static void ttl_swap(struct ctl_ttl *h, size_t a, size_t b) {
    struct ctl_ttl t = h[a];
    h[a] = h[b];
    h[b] = t;
}

static void ttl_push(ctl_t *c, uint64_t id, int64_t at) {
    if (c->ttl_len == c->ttl_cap) {
        c->ttl_cap = c->ttl_cap ? 2 * c->ttl_cap : 64;
        c->ttl = sl_xrealloc(c->ttl, c->ttl_cap * sizeof *c->ttl);
    }
    size_t i = c->ttl_len++;
    c->ttl[i] = (struct ctl_ttl){id, at};
    while (i > 0 && c->ttl[(i - 1) / 2].at > c->ttl[i].at) {
        ttl_swap(c->ttl, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static void ttl_pop(ctl_t *c) {
    c->ttl[0] = c->ttl[--c->ttl_len];
    for (size_t i = 0;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < c->ttl_len && c->ttl[l].at < c->ttl[m].at)
            m = l;
        if (r < c->ttl_len && c->ttl[r].at < c->ttl[m].at)
            m = r;
        if (m == i)
            break;
        ttl_swap(c->ttl, i, m);
        i = m;
    }
}

void ctl_jobs_init(ctl_t *c) {
    sl_hash_init(&c->jobs);
    sl_ordmap_init(&c->jobs_by_id);
}

ctl_job_t *ctl_job_find(ctl_t *c, uint64_t id) {
    return sl_hash_find(&c->jobs, id);
}

void ctl_job_register(ctl_t *c, ctl_job_t *j) {
    ctl_job_t *old = sl_hash_find(&c->jobs, j->id);
    if (old != NULL) {
        sl_hash_remove(&c->jobs, j->id, old);
        sl_ordmap_remove(&c->jobs_by_id, j->id, old);
    }
    sl_hash_add(&c->jobs, j->id, j);
    sl_ordmap_add(&c->jobs_by_id, j->id, j);
}

ctl_job_t *ctl_job_unregister(ctl_t *c, uint64_t id) {
    ctl_job_t *j = sl_hash_find(&c->jobs, id);
    if (j != NULL) {
        sl_hash_remove(&c->jobs, id, j);
        sl_ordmap_remove(&c->jobs_by_id, id, j);
    }
    return j;
}

size_t ctl_jobs_seek(ctl_t *c, uint64_t after) {
    return sl_ordmap_seek(&c->jobs_by_id, after);
}

ctl_job_t *ctl_jobs_next(ctl_t *c, size_t *it) {
    return sl_ordmap_next(&c->jobs_by_id, it);
}

void ctl_job_retain(ctl_t *c, ctl_job_t *j) {
    if (j->retained)
        return;
    j->retained = true;
    if (c->fin_len == c->fin_cap) {
        size_t cap = c->fin_cap ? 2 * c->fin_cap : 1024;
        uint64_t *fin = sl_xmalloc(cap * sizeof *fin);
        for (size_t i = 0; i < c->fin_len; i++)
            fin[i] = c->fin[(c->fin_head + i) % c->fin_cap];
        sl_free(c->fin);
        c->fin = fin;
        c->fin_cap = cap;
        c->fin_head = 0;
    }
    c->fin[(c->fin_head + c->fin_len) % c->fin_cap] = j->id;
    c->fin_len++;
    json_t *ttl = json_object_get(j->spec, "ttl_after_finished");
    if (json_is_integer(ttl) && json_integer_value(ttl) >= 0)
        ttl_push(c, j->id, (j->end_us > 0 ? j->end_us : ctl_now_us()) +
                               json_integer_value(ttl) * 1000000);
}

size_t ctl_jobs_trim(ctl_t *c, int64_t now_us, size_t max) {
    int64_t cut = now_us - c->cfg.job_retention_ms * 1000;
    size_t n = 0;
    /* Their entries in the finished list stay, found no more below. */
    while (c->ttl_len > 0 && c->ttl[0].at <= now_us && n < max) {
        ctl_job_t *j = ctl_job_find(c, c->ttl[0].id);
        if (j != NULL && j->retained) {
            ctl_job_free(ctl_job_unregister(c, j->id));
            c->n.jobs_forgotten++;
            c->fin_gone++;
        }
        ttl_pop(c);
        n++;
    }
    while (c->fin_len > 0 && n < max) {
        ctl_job_t *j = ctl_job_find(c, c->fin[c->fin_head]);
        if (j != NULL) {
            /* End times come in (nearly) finishing order, so the head is
             * the oldest; retention 0 forgets even an end time reported
             * slightly ahead of this clock. */
            bool drop = (int64_t)(c->fin_len - c->fin_gone) > c->cfg.max_finished_jobs ||
                        c->cfg.job_retention_ms == 0 || j->end_us <= cut;
            if (!drop)
                break;
            ctl_job_free(ctl_job_unregister(c, j->id));
            c->n.jobs_forgotten++;
        } else if (c->fin_gone > 0) {
            c->fin_gone--; /* one the ttl dropped */
        }
        c->fin_head = (c->fin_head + 1) % c->fin_cap;
        c->fin_len--;
        n++;
    }
    return n;
}

bool ctl_jobs_trim_hook(void *ud) {
    return ctl_jobs_trim(ud, ctl_now_us(), CTL_TRIM_PER_PASS) == CTL_TRIM_PER_PASS;
}

void ctl_jobs_fini(ctl_t *c) {
    size_t it = 0;
    for (const sl_hash_entry_t *e; (e = sl_hash_next(&c->jobs, &it)) != NULL;)
        ctl_job_free(e->val);
    sl_hash_fini(&c->jobs);
    sl_ordmap_fini(&c->jobs_by_id);
    sl_free(c->fin);
    c->fin = NULL;
    c->fin_len = c->fin_cap = c->fin_head = c->fin_gone = 0;
    sl_free(c->ttl);
    c->ttl = NULL;
    c->ttl_len = c->ttl_cap = 0;
}

void ctl_job_leave_core(ctl_t *c, ctl_job_t *j, int64_t now_us) {
    if (!j->in_core)
        return;
    const sl_job_t *cj = sl_sched_job(c->sched, j->id);
    if (cj && sl_job_state(cj) == SL_JOB_RUNNING)
        sl_sched_finish(c->sched, j->id, now_us);
    else if (cj && sl_job_state(cj) == SL_JOB_PENDING)
        sl_sched_cancel(c->sched, j->id, now_us);
    sl_sched_forget(c->sched, j->id);
    j->in_core = false;
    c->sched_dirty = true;
}
