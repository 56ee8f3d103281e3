/*
 * deps_recover.c - arrays and dependencies at start-up (deps.h).
 *
 * Nothing about a waiter is stored: each pending job's dependency text is
 * evaluated again against the durable states of the jobs it names, so the
 * waiters and the index are rebuilt exactly. Arrays come back from their
 * rows (store/store.h) with their counts read from their elements' rows;
 * every pending element is held, and the release that follows the
 * restore fills each array's limit again, counting its running elements.
 * Singleton counts are taken from the jobs in the core once the restore
 * has put them there.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "domain/deps_internal.h"
#include "log.h"

typedef struct rec {
    ctl_t *c;
    uint64_t *ids; /* pending jobs (and arrays) with a dependency, for the release */
    size_t n, cap;
} rec_t;

static int recover_array(void *ud, const ctl_store_array_t *row) {
    rec_t *r = ud;
    ctl_t *c = r->c;
    sl_array_spec_t as;
    char why[200];
    if (sl_array_parse(row->text, SL_ARRAY_SIZE_CEILING, &as, why, sizeof why) < 0 ||
        as.n != row->n) {
        ctl_store_set_error(c->store, "array %llu: its stored text \"%s\" is not what sluiced writes",
                            (unsigned long long)row->id, row->text);
        sl_array_spec_fini(&as);
        return -1;
    }
    for (int32_t k = 0; k < as.n; k++) {
        ctl_job_t *e = ctl_job_find(c, row->id + (uint64_t)k);
        if (e != NULL) {
            e->array_id = row->id;
            e->array_index = as.idx[k];
        }
    }
    if (row->done) {
        sl_array_spec_fini(&as);
        return 0;
    }
    arr_t *a = ctl__deps_array_new(c, row->id, &as);
    if (ctl_store_array_counts(c->store, a->id, a->n, &a->begun, &a->ended, &a->notok) < 0)
        return -1;
    for (int32_t k = 0; k < a->n; k++) {
        ctl_job_t *e = ctl_job_find(c, a->id + (uint64_t)k);
        if (e == NULL)
            continue;
        bool fin = e->state != CTL_JOB_PENDING && e->state != CTL_JOB_RUNNING;
        if (fin || e->start_us >= 0)
            e->dep_seen |= SEEN_BEGUN | SEEN_START; /* counted in begun */
        if (fin) {
            e->dep_seen |= SEEN_END;
        } else if (e->state == CTL_JOB_RUNNING || e->requeue_wait) {
            e->dep_seen |= SEEN_RELEASED;
            a->active++;
        } else {
            ctl__deps_hold(c, e, CTL_HOLD_ARRAY);
        }
    }
    ctl_job_t *first = ctl_job_find(c, a->id);
    if (first != NULL && json_object_get(first->spec, "dependency") != NULL && a->begun == 0) {
        a->gated = true;
        if (r->n == r->cap) {
            r->cap = r->cap ? 2 * r->cap : 64;
            r->ids = sl_xrealloc(r->ids, r->cap * sizeof *r->ids);
        }
        r->ids[r->n++] = a->id;
    }
    return 0;
}

static int cmp_u64(const void *x, const void *y) {
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return (a > b) - (a < b);
}

int ctl_deps_recover_hold(ctl_t *c) {
    rec_t r = {c, NULL, 0, 0};
    uint64_t min_id = c->next_id;
    size_t it = 0;
    for (const sl_hash_entry_t *e; (e = sl_hash_next(&c->jobs, &it)) != NULL;) {
        const ctl_job_t *j = e->val;
        if (j->id < min_id)
            min_id = j->id;
        if (j->state == CTL_JOB_PENDING && !j->requeue_wait && j->array_id == 0 &&
            json_object_get(j->spec, "dependency") != NULL &&
            json_object_get(j->spec, "array") == NULL) {
            if (r.n == r.cap) {
                r.cap = r.cap ? 2 * r.cap : 64;
                r.ids = sl_xrealloc(r.ids, r.cap * sizeof *r.ids);
            }
            r.ids[r.n++] = j->id;
        }
    }
    if (ctl_store_arrays_read(c->store, min_id, recover_array, &r) < 0) {
        sl_free(r.ids);
        return -1;
    }
    /* Waiters in id order (submission order), which the release keeps. */
    if (r.n > 1)
        qsort(r.ids, r.n, sizeof *r.ids, cmp_u64);
    for (size_t i = 0; i < r.n; i++) {
        ctl_job_t *j = ctl_job_find(c, r.ids[i]);
        if (j == NULL)
            continue;
        const char *text = json_string_value(json_object_get(j->spec, "dependency"));
        char err[256];
        int rc;
        bool is_array = j->array_id == j->id;
        waiter_t *w = ctl__deps_waiter_new(c, j->id, is_array, j->tenant, text ? text : "", &rc, err,
                                 sizeof err);
        if (w == NULL) {
            /* Its target went (another tenant's now, say): it can never run. */
            sl_log(SL_LOG_WARN, "store", "job=%llu dependency no longer valid: %s",
                   (unsigned long long)j->id, err);
            w = sl_xcalloc(1, sizeof *w);
            w->id = j->id;
            w->is_array = is_array;
            w->terms = sl_xcalloc(1, sizeof *w->terms);
            w->terms[0] = (term_t){0, SL_DEP_AFTEROK, T_NEVER};
            w->nterms = w->nnever = 1;
            sl_hash_add(&c->deps->waiters, j->id, w);
        }
        if (!is_array)
            ctl__deps_hold(c, j, CTL_HOLD_DEPS);
    }
    sl_free(r.ids);
    return 0;
}

void ctl_deps_recover_release(ctl_t *c) {
    struct ctl_deps *d = c->deps;
    size_t n = 0, cap = 64, it = 0;
    uint64_t *ids = sl_xmalloc(cap * sizeof *ids);
    for (const sl_hash_entry_t *e; (e = sl_hash_next(&c->jobs, &it)) != NULL;) {
        ctl_job_t *j = e->val;
        if (j->in_core)
            ctl__deps_count_in(c, j);
    }
    it = 0;
    for (const sl_hash_entry_t *e; (e = sl_hash_next(&d->waiters, &it)) != NULL;) {
        if (n == cap)
            ids = sl_xrealloc(ids, (cap *= 2) * sizeof *ids);
        ids[n++] = e->key;
    }
    qsort(ids, n, sizeof *ids, cmp_u64);
    d->running = true;
    for (size_t i = 0; i < n; i++) {
        waiter_t *w = sl_hash_find(&d->waiters, ids[i]);
        if (w != NULL)
            ctl__deps_check(c, w);
    }
    n = 0;
    it = 0;
    for (const sl_hash_entry_t *e; (e = sl_hash_next(&d->arrays, &it)) != NULL;) {
        if (n == cap)
            ids = sl_xrealloc(ids, (cap *= 2) * sizeof *ids);
        ids[n++] = e->key;
    }
    qsort(ids, n, sizeof *ids, cmp_u64);
    for (size_t i = 0; i < n; i++) {
        arr_t *a = sl_hash_find(&d->arrays, ids[i]);
        if (a != NULL && a->ended >= a->n)
            ctl__deps_array_done(c, a);
        else if (a != NULL)
            ctl__deps_array_fill(c, a);
    }
    d->running = false;
    ctl__deps_run(c);
    sl_free(ids);
}
