/*
 * deps.c - job arrays and job dependencies (deps.h, docs/arrays.md).
 *
 * Holding. A job that waits on dependencies, and an array element beyond
 * its array's concurrency limit, is pending but held outside the core
 * (ctl_job_t.hold), so that 10,000 waiting elements cost the scheduling
 * cycle nothing. Releasing one is what a submission does (the core spec,
 * sl_sched_submit); failing one is ctl_job_fail.
 *
 * Events, not walks. The domain reports each job's first start and its end
 * (c->ev). A waiter (a held job, or an array whose elements all wait on
 * the array's dependencies) lists its terms; an index maps each target
 * (a job id, or an array's id with the WHOLE bit: all its elements) to the
 * waiters that name it, so an end wakes only its dependents: O(dependents
 * x their terms), never a walk over the held jobs. A target's end is its
 * last event, so its index entry goes with it. Events are queued and
 * drained by one loop (run), so a chain of 1,000 jobs that fail one
 * another (DependencyNeverSatisfied) unwinds iteratively, not 1,000 calls
 * deep.
 *
 * Terms: after (the target started, or ended), afterany (ended), afterok
 * (succeeded; never if it ends otherwise), afternotok (ended otherwise;
 * never if it succeeded). An array target ends when all its elements have,
 * succeeding when all of them did, and starts when all have started or
 * ended. With ',' all terms must be met and one that never can be fails
 * the job; with '?' one met term suffices and all must fail to fail it.
 * singleton is a gate on top: a job is released only while no other job of
 * its name and tenant is in the core (pending there or running); each
 * (tenant, name) keeps that count and a FIFO of the ready singleton jobs.
 *
 * Arrays: element k of array A has id A+k and the k-th smallest index.
 * The array keeps a cursor `next` over its elements: released elements
 * are those before it; an element's end frees a slot of the limit and the
 * cursor moves on (elements cancelled while held are skipped), so filling
 * the limit is amortised O(1) per element over the array's life.
 *
 * Durability: the store has the array rows (store/store.h) and the jobs;
 * the dependency text stays in each job's spec, and every target's state
 * is durable, so recovery rebuilds the waiters by evaluating the texts
 * again and finds what was found before (ctl_deps_recover_hold, _release).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arraydep.h"
#include "domain/deps.h"
#include "domain/jobnotify.h"
#include "log.h"
#include "domain/deps_internal.h"
#include "store/store.h"

/* The types and marks of this layer are in deps_internal.h, which
 * deps_recover.c shares. */

static void idvec_push(idvec_t *v, uint64_t id) {
    if (v->n == v->cap) {
        v->cap = v->cap ? 2 * v->cap : 4;
        v->v = sl_xrealloc(v->v, v->cap * sizeof *v->v);
    }
    v->v[v->n++] = id;
}

/* ---- names (singleton) ---- */

static const char *job_name(const ctl_job_t *j) {
    const char *n = json_string_value(json_object_get(j->spec, "name"));
    return n ? n : "";
}

static uint64_t name_key(int32_t tenant, const char *name) {
    return sl_mix64(sl_hash_str(name) ^ (uint64_t)(uint32_t)tenant);
}

static namerec_t *name_find(struct ctl_deps *d, int32_t tenant, const char *name, bool create) {
    uint64_t key = name_key(tenant, name);
    size_t it = 0;
    for (namerec_t *r; (r = sl_hash_find_next(&d->names, key, &it)) != NULL;)
        if (r->tenant == tenant && strcmp(r->name, name) == 0)
            return r;
    if (!create)
        return NULL;
    namerec_t *r = sl_xcalloc(1, sizeof *r);
    r->tenant = tenant;
    r->name = sl_xstrdup(name);
    sl_hash_add(&d->names, key, r);
    return r;
}

static void name_maybe_free(struct ctl_deps *d, namerec_t *r) {
    if (r->active > 0 || r->queue.head < r->queue.n)
        return;
    sl_hash_remove(&d->names, name_key(r->tenant, r->name), r);
    sl_free(r->queue.v);
    sl_free(r->name);
    sl_free(r);
}

void ctl__deps_count_in(ctl_t *c, ctl_job_t *j) {
    if (j->dep_seen & SEEN_COUNTED)
        return;
    j->dep_seen |= SEEN_COUNTED;
    name_find(c->deps, j->tenant, job_name(j), true)->active++;
}

/* ---- holding and releasing ---- */

void ctl__deps_hold(ctl_t *c, ctl_job_t *j, uint8_t why) {
    struct ctl_deps *d = c->deps;
    if (j->hold == CTL_HOLD_NONE && j->tenant >= 0 && (size_t)j->tenant < d->nheld)
        d->held[j->tenant]++;
    j->hold = why;
}

static void hold_clear(ctl_t *c, ctl_job_t *j) {
    struct ctl_deps *d = c->deps;
    if (j->hold != CTL_HOLD_NONE && j->tenant >= 0 && (size_t)j->tenant < d->nheld)
        d->held[j->tenant]--;
    j->hold = CTL_HOLD_NONE;
}

/* Puts the held job j into the core, as a submission would; fails it when
 * its names or the core refuse it now. */
static void release_job(ctl_t *c, ctl_job_t *j) {
    char err[256];
    hold_clear(c, j);
    if (ctl_job_core_spec(c, j, err, sizeof err) < 0) {
        ctl_job_fail(c, j, err);
        return;
    }
    if (sl_sched_submit(c->sched, &j->core, err, sizeof err) < 0) {
        ctl_job_release_names(c, j);
        ctl_job_fail(c, j, err);
        return;
    }
    j->in_core = true;
    ctl__deps_count_in(c, j);
    c->sched_dirty = true;
    ctl_loop_kick(c->loop);
}

void ctl__deps_array_fill(ctl_t *c, arr_t *a) {
    while (!a->gated && !a->stopping && a->next < a->n && (a->limit == 0 || a->active < a->limit)) {
        ctl_job_t *e = ctl_job_find(c, a->id + (uint64_t)a->next++);
        if (e == NULL || e->state != CTL_JOB_PENDING || e->hold != CTL_HOLD_ARRAY)
            continue;
        e->dep_seen |= SEEN_RELEASED; /* counted now: a refusal ends it, which frees the slot */
        a->active++;
        release_job(c, e);
    }
}

/* ---- waiters ---- */

static void waiter_drop(struct ctl_deps *d, waiter_t *w) {
    sl_hash_remove(&d->waiters, w->id, w);
    sl_free(w->terms);
    sl_free(w);
}

static void release_waiter(ctl_t *c, waiter_t *w) {
    uint64_t id = w->id;
    bool is_array = w->is_array;
    waiter_drop(c->deps, w);
    if (is_array) {
        arr_t *a = sl_hash_find(&c->deps->arrays, id);
        if (a != NULL) {
            a->gated = false;
            ctl__deps_array_fill(c, a);
        }
        return;
    }
    ctl_job_t *j = ctl_job_find(c, id);
    if (j != NULL && j->state == CTL_JOB_PENDING && j->hold == CTL_HOLD_DEPS)
        release_job(c, j);
}

/* "job 12" or "array 12" for an index key. */
static void key_text(uint64_t key, char *buf, size_t len) {
    snprintf(buf, len, "%s %llu", key & WHOLE ? "array" : "job",
             (unsigned long long)(key & ~WHOLE));
}

static void fail_waiter(ctl_t *c, waiter_t *w) {
    char why[256] = "DependencyNeverSatisfied", what[48];
    for (int32_t i = 0; i < w->nterms; i++) {
        const term_t *t = &w->terms[i];
        if (t->st != T_NEVER)
            continue;
        key_text(t->key, what, sizeof what);
        snprintf(why, sizeof why, "DependencyNeverSatisfied: %s %s (%s)", what,
                 t->kind == SL_DEP_AFTEROK ? "did not succeed" : "succeeded",
                 sl_dep_kind_name(t->kind));
        break;
    }
    uint64_t id = w->id;
    bool is_array = w->is_array;
    waiter_drop(c->deps, w);
    if (!is_array) {
        ctl_job_t *j = ctl_job_find(c, id);
        if (j != NULL && j->state == CTL_JOB_PENDING) {
            ctl_notify_job(c, j, CTL_NOTIFY_INVALID_DEPEND, why);
            ctl_job_fail(c, j, why);
        }
        return;
    }
    arr_t *a = sl_hash_find(&c->deps->arrays, id);
    if (a == NULL)
        return;
    a->stopping = true;
    int32_t n = a->n; /* a may go with the last element's end */
    for (int32_t k = 0; k < n; k++) {
        ctl_job_t *e = ctl_job_find(c, id + (uint64_t)k);
        if (e != NULL && e->state == CTL_JOB_PENDING)
            ctl_job_fail(c, e, why);
    }
}

void ctl__deps_check(ctl_t *c, waiter_t *w) {
    bool never = w->any ? w->nterms > 0 && w->nnever == w->nterms : w->nnever > 0;
    if (never) {
        fail_waiter(c, w);
        return;
    }
    bool ready = w->any ? w->nterms == 0 || w->nmet > 0 : w->nmet == w->nterms;
    if (!ready)
        return;
    if (w->singleton) {
        ctl_job_t *j = ctl_job_find(c, w->id);
        if (j == NULL)
            return;
        namerec_t *r = name_find(c->deps, j->tenant, job_name(j), true);
        if (r->active > 0 || (!w->queued && r->queue.head < r->queue.n)) {
            if (!w->queued) {
                idvec_push(&r->queue, w->id);
                w->queued = true;
            }
            return;
        }
    }
    release_waiter(c, w);
}

/* What an event does to a term of kind k. */
static uint8_t judge(uint8_t k, int ev, bool ok) {
    if (k == SL_DEP_AFTER)
        return T_MET;
    if (ev == EV_START)
        return T_WAIT;
    if (k == SL_DEP_AFTERANY)
        return T_MET;
    if (k == SL_DEP_AFTEROK)
        return ok ? T_MET : T_NEVER;
    return ok ? T_NEVER : T_MET; /* afternotok */
}

/* The target key had event ev: its dependents' terms on it are judged. */
static void wake(ctl_t *c, uint64_t key, int ev, bool ok) {
    struct ctl_deps *d = c->deps;
    idvec_t *v = sl_hash_find(&d->index, key);
    if (v == NULL)
        return;
    if (ev == EV_END)
        sl_hash_remove(&d->index, key, v); /* its last event */
    for (size_t i = 0; i < v->n; i++) {
        waiter_t *w = sl_hash_find(&d->waiters, v->v[i]);
        if (w == NULL)
            continue;
        bool changed = false;
        for (int32_t k = 0; k < w->nterms; k++) {
            term_t *t = &w->terms[k];
            if (t->key != key || t->st != T_WAIT)
                continue;
            t->st = judge(t->kind, ev, ok);
            if (t->st != T_WAIT) {
                changed = true;
                if (t->st == T_MET)
                    w->nmet++;
                else
                    w->nnever++;
            }
        }
        if (changed)
            ctl__deps_check(c, w); /* may drop w; the next id is looked up afresh */
    }
    if (ev == EV_END) {
        sl_free(v->v);
        sl_free(v);
    }
}

/* ---- events from the domain ---- */

static void begun(ctl_t *c, ctl_job_t *j, arr_t *a) {
    if (j->dep_seen & SEEN_BEGUN)
        return;
    j->dep_seen |= SEEN_BEGUN;
    if (++a->begun == a->n)
        wake(c, a->id | WHOLE, EV_START, true);
}

void ctl__deps_array_done(ctl_t *c, arr_t *a) {
    struct ctl_deps *d = c->deps;
    ctl_store_array_done(c->store, a->id);
    waiter_t *w = sl_hash_find(&d->waiters, a->id);
    if (w != NULL && w->is_array)
        waiter_drop(d, w);
    sl_hash_remove(&d->arrays, a->id, a);
    uint64_t key = a->id | WHOLE;
    bool ok = a->notok == 0;
    sl_free(a->idx);
    sl_free(a);
    wake(c, key, EV_END, ok);
}

static void on_end(ctl_t *c, ctl_job_t *j) {
    struct ctl_deps *d = c->deps;
    if (j->dep_seen & SEEN_END)
        return;
    j->dep_seen |= SEEN_END;
    bool ok = j->state == CTL_JOB_SUCCEEDED;
    hold_clear(c, j);
    if (j->array_id == 0) {
        waiter_t *w = sl_hash_find(&d->waiters, j->id); /* ended while held */
        if (w != NULL)
            waiter_drop(d, w);
    }
    if (j->dep_seen & SEEN_COUNTED) {
        j->dep_seen &= (uint8_t)~SEEN_COUNTED;
        namerec_t *r = name_find(d, j->tenant, job_name(j), false);
        if (r != NULL && --r->active == 0) {
            while (r->active == 0 && r->queue.head < r->queue.n) {
                waiter_t *w = sl_hash_find(&d->waiters, r->queue.v[r->queue.head++]);
                if (w != NULL) {
                    w->queued = false;
                    release_waiter(c, w);
                }
            }
            if (r->queue.head == r->queue.n)
                r->queue.head = r->queue.n = 0;
            name_maybe_free(d, r);
        }
    }
    wake(c, j->id, EV_END, ok);
    arr_t *a = j->array_id ? sl_hash_find(&d->arrays, j->array_id) : NULL;
    if (a == NULL)
        return;
    begun(c, j, a);
    a->ended++;
    a->notok += !ok;
    if (j->dep_seen & SEEN_RELEASED)
        a->active--;
    if (a->ended >= a->n)
        ctl__deps_array_done(c, a);
    else
        ctl__deps_array_fill(c, a);
}

static void process(ctl_t *c, event_t e) {
    ctl_job_t *j = ctl_job_find(c, e.id);
    if (j == NULL)
        return;
    if (e.ev == EV_END) {
        on_end(c, j);
        return;
    }
    if (j->dep_seen & SEEN_START)
        return;
    j->dep_seen |= SEEN_START;
    wake(c, j->id, EV_START, true);
    arr_t *a = j->array_id ? sl_hash_find(&c->deps->arrays, j->array_id) : NULL;
    if (a != NULL)
        begun(c, j, a);
}

/* Drains the event queue, unless a caller up the stack is draining it. */
void ctl__deps_run(ctl_t *c) {
    struct ctl_deps *d = c->deps;
    if (d->running)
        return;
    d->running = true;
    while (d->qhead < d->qn)
        process(c, d->q[d->qhead++]);
    d->qn = d->qhead = 0;
    d->running = false;
}

static void push(ctl_t *c, uint64_t id, uint8_t ev) {
    struct ctl_deps *d = c->deps;
    if (d->qn == d->qcap) {
        d->qcap = d->qcap ? 2 * d->qcap : 64;
        d->q = sl_xrealloc(d->q, d->qcap * sizeof *d->q);
    }
    d->q[d->qn++] = (event_t){id, ev};
}

static void ev_started(void *ud, ctl_job_t *j) {
    push(ud, j->id, EV_START);
    ctl__deps_run(ud);
}

static void ev_ended(void *ud, ctl_job_t *j) {
    push(ud, j->id, EV_END);
    ctl__deps_run(ud);
}

void ctl_deps_init(ctl_t *c) {
    struct ctl_deps *d = sl_xcalloc(1, sizeof *d);
    sl_hash_init(&d->waiters);
    sl_hash_init(&d->index);
    sl_hash_init(&d->arrays);
    sl_hash_init(&d->names);
    d->nheld = sl_sched_tenant_count(c->sched);
    d->held = sl_xcalloc(d->nheld ? d->nheld : 1, sizeof *d->held);
    c->deps = d;
    c->ev = (ctl_job_events_t){c, ev_started, ev_ended};
}

void ctl_deps_fini(ctl_t *c) {
    struct ctl_deps *d = c->deps;
    if (d == NULL)
        return;
    size_t it = 0;
    for (const sl_hash_entry_t *e; (e = sl_hash_next(&d->waiters, &it)) != NULL;) {
        waiter_t *w = e->val;
        sl_free(w->terms);
        sl_free(w);
    }
    it = 0;
    for (const sl_hash_entry_t *e; (e = sl_hash_next(&d->index, &it)) != NULL;) {
        idvec_t *v = e->val;
        sl_free(v->v);
        sl_free(v);
    }
    it = 0;
    for (const sl_hash_entry_t *e; (e = sl_hash_next(&d->arrays, &it)) != NULL;) {
        arr_t *a = e->val;
        sl_free(a->idx);
        sl_free(a);
    }
    it = 0;
    for (const sl_hash_entry_t *e; (e = sl_hash_next(&d->names, &it)) != NULL;) {
        namerec_t *r = e->val;
        sl_free(r->queue.v);
        sl_free(r->name);
        sl_free(r);
    }
    sl_hash_fini(&d->waiters);
    sl_hash_fini(&d->index);
    sl_hash_fini(&d->arrays);
    sl_hash_fini(&d->names);
    sl_free(d->q);
    sl_free(d->held);
    sl_free(d);
    c->deps = NULL;
    c->ev = (ctl_job_events_t){0};
}

/* ---- arrays by id ---- */

static int cmp_i32(const void *k, const void *m) {
    int32_t a = *(const int32_t *)k, b = *(const int32_t *)m;
    return (a > b) - (a < b);
}

/* The position of index in idx[0..n), or -1. */
static int64_t position(const int32_t *idx, int32_t n, int64_t index) {
    if (index < 0 || index > INT32_MAX)
        return -1;
    int32_t key = (int32_t)index;
    const int32_t *p = bsearch(&key, idx, (size_t)n, sizeof *idx, cmp_i32);
    return p ? p - idx : -1;
}

/* The stored array with exactly this id: 1 with its indexes parsed into
 * *as, 0 when there is none. */
int ctl__deps_stored_array(ctl_t *c, uint64_t id, ctl_store_array_t *row, sl_array_spec_t *as) {
    char err[256];
    if (ctl_store_array_of(c->store, id, row) != 1 || row->id != id)
        return 0;
    if (as && sl_array_parse(row->text, SL_ARRAY_SIZE_CEILING, as, err, sizeof err) < 0) {
        sl_log(SL_LOG_ERROR, "store", "array=%llu: its stored text \"%s\": %s",
               (unsigned long long)id, row->text, err);
        return 0;
    }
    return 1;
}

bool ctl_array_is(ctl_t *c, uint64_t id) {
    if (sl_hash_find(&c->deps->arrays, id) != NULL)
        return true;
    ctl_job_t *j = ctl_job_find(c, id);
    if (j != NULL)
        return j->array_id == id;
    ctl_store_array_t row;
    return id < c->next_id && ctl__deps_stored_array(c, id, &row, NULL) == 1;
}

uint64_t ctl_array_element(ctl_t *c, uint64_t array, int64_t index) {
    arr_t *a = sl_hash_find(&c->deps->arrays, array);
    if (a != NULL) {
        int64_t k = position(a->idx, a->n, index);
        return k < 0 ? 0 : array + (uint64_t)k;
    }
    ctl_store_array_t row;
    sl_array_spec_t as;
    if (array >= c->next_id || ctl__deps_stored_array(c, array, &row, &as) != 1)
        return 0;
    int64_t k = position(as.idx, as.n, index);
    sl_array_spec_fini(&as);
    return k < 0 ? 0 : array + (uint64_t)k;
}

int32_t ctl_array_limit(ctl_t *c, uint64_t id) {
    arr_t *a = sl_hash_find(&c->deps->arrays, id);
    return a ? a->limit : 0;
}

void ctl_array_fill(ctl_t *c, ctl_job_t *j) {
    if (j->array_id != 0 || json_object_get(j->spec, "array") == NULL)
        return;
    ctl_store_array_t row;
    sl_array_spec_t as;
    if (ctl_store_array_of(c->store, j->id, &row) != 1 ||
        ctl__deps_stored_array(c, row.id, &row, &as) != 1)
        return;
    if (j->id - row.id < (uint64_t)as.n) {
        j->array_id = row.id;
        j->array_index = as.idx[j->id - row.id];
    }
    sl_array_spec_fini(&as);
}

int ctl_array_cancel(ctl_t *c, uint64_t id) {
    struct ctl_deps *d = c->deps;
    arr_t *a = sl_hash_find(&d->arrays, id);
    if (a == NULL)
        return 0; /* every element has ended */
    a->stopping = true;
    int32_t n = a->n, done = 0; /* a goes with the last element's end */
    bool was = d->running;
    d->running = true;
    for (int32_t k = 0; k < n; k++) {
        ctl_job_t *e = ctl_job_find(c, id + (uint64_t)k);
        if (e != NULL && ctl_job_cancel(c, e) == 0)
            done++;
    }
    d->running = was;
    ctl__deps_run(c);
    return done;
}

/* ---- reasons ---- */

static const char *waiter_reason(ctl_t *c, const waiter_t *w, char *buf, size_t len) {
    int32_t waiting = 0;
    const term_t *first = NULL;
    for (int32_t i = 0; i < w->nterms; i++) {
        if (w->terms[i].st == T_WAIT) {
            waiting++;
            if (first == NULL)
                first = &w->terms[i];
        }
    }
    if (first == NULL) {
        ctl_job_t *j = ctl_job_find(c, w->id);
        snprintf(buf, len, "Dependency: singleton: another job named \"%s\" of this tenant is "
                 "queued or running", j ? job_name(j) : "");
        return buf;
    }
    char what[48];
    key_text(first->key, what, sizeof what);
    const char *word = what + (first->key & WHOLE ? 0 : 4); /* a job's id alone */
    if (waiting > 1)
        snprintf(buf, len, "Dependency: waits for %s (%s) %s %d more", word,
                 sl_dep_kind_name(first->kind), w->any ? "or" : "and", waiting - 1);
    else
        snprintf(buf, len, "Dependency: waits for %s (%s)", word, sl_dep_kind_name(first->kind));
    return buf;
}

const char *ctl_hold_reason(ctl_t *c, const ctl_job_t *j, char *buf, size_t len) {
    struct ctl_deps *d = c->deps;
    buf[0] = '\0';
    if (j->hold == CTL_HOLD_DEPS) {
        waiter_t *w = sl_hash_find(&d->waiters, j->id);
        return w ? waiter_reason(c, w, buf, len) : buf;
    }
    if (j->hold != CTL_HOLD_ARRAY)
        return buf;
    arr_t *a = sl_hash_find(&d->arrays, j->array_id);
    if (a == NULL)
        return buf;
    if (a->gated) {
        waiter_t *w = sl_hash_find(&d->waiters, a->id);
        return w ? waiter_reason(c, w, buf, len) : buf;
    }
    snprintf(buf, len, "JobArrayTaskLimit: at most %d elements of array %llu run at once",
             a->limit, (unsigned long long)a->id);
    return buf;
}

/* ---- submission ---- */

/* The target of a dependency term as an index key, checked: it exists and
 * is the tenant's; *started and *ended say what happened to it already. */
static int target(ctl_t *c, const sl_dep_term_t *t, int32_t tenant, uint64_t *key, bool *started,
                  bool *ended, bool *ok, char *err, size_t errlen) {
    uint64_t id = t->job;
    *started = *ended = *ok = false;
    if (t->index >= 0) {
        id = ctl_array_element(c, t->job, t->index);
        if (id == 0) {
            snprintf(err, errlen, "dependency: %llu_%d: %s", (unsigned long long)t->job, t->index,
                     ctl_array_is(c, t->job) ? "the array has no element of this index"
                                             : "no array with this id");
            return SL_EINVAL;
        }
        *key = id;
    } else {
        *key = ctl_array_is(c, id) ? id | WHOLE : id;
    }
    ctl_job_t *j = ctl_job_find(c, id);
    bool owned = false;
    if (j == NULL && id > 0 && id < c->next_id) {
        j = ctl_job_fetch(c, id);
        owned = j != NULL;
    }
    int rc = 0;
    if (j == NULL) {
        snprintf(err, errlen, "dependency: no job %llu", (unsigned long long)id);
        rc = SL_EINVAL;
    } else if (j->tenant != tenant) {
        snprintf(err, errlen, "dependency: job %llu belongs to another tenant",
                 (unsigned long long)id);
        rc = SL_EPERM;
    } else if (*key & WHOLE) {
        arr_t *a = sl_hash_find(&c->deps->arrays, id);
        ctl_store_array_t row;
        int32_t b = 0, e = 0, bad = 0;
        if (a != NULL) {
            *started = a->begun == a->n;
        } else if (ctl__deps_stored_array(c, id, &row, NULL) == 1 &&
                   ctl_store_array_counts(c->store, id, row.n, &b, &e, &bad) == 0) {
            *ended = *started = e == row.n; /* not in memory: every element has ended */
            *ok = bad == 0;
        }
    } else {
        *ended = j->state == CTL_JOB_SUCCEEDED || j->state == CTL_JOB_FAILED ||
                 j->state == CTL_JOB_CANCELLED;
        *started = *ended || j->state == CTL_JOB_RUNNING || j->start_us >= 0 ||
                   (j->dep_seen & SEEN_START);
        *ok = j->state == CTL_JOB_SUCCEEDED;
    }
    if (owned)
        ctl_job_free(j);
    return rc;
}

/* A waiter for the job or array id from its dependency text, its terms
 * judged by what has happened already and the waiting ones indexed.
 * NULL with err on a bad term (nothing indexed). */
waiter_t *ctl__deps_waiter_new(ctl_t *c, uint64_t id, bool is_array, int32_t tenant,
                            const char *text, int *rc, char *err, size_t errlen) {
    sl_dep_spec_t dep;
    *rc = sl_dep_parse(text, &dep, err, errlen);
    if (*rc < 0)
        return NULL;
    waiter_t *w = sl_xcalloc(1, sizeof *w);
    w->id = id;
    w->is_array = is_array;
    w->any = dep.any;
    w->terms = sl_xcalloc(dep.n ? dep.n : 1, sizeof *w->terms);
    for (size_t i = 0; i < dep.n; i++) {
        const sl_dep_term_t *t = &dep.t[i];
        if (t->kind == SL_DEP_SINGLETON) {
            w->singleton = true;
            continue;
        }
        bool started, ended, ok;
        term_t *wt = &w->terms[w->nterms];
        *rc = target(c, t, tenant, &wt->key, &started, &ended, &ok, err, errlen);
        if (*rc < 0) {
            sl_dep_spec_fini(&dep);
            sl_free(w->terms);
            sl_free(w);
            return NULL;
        }
        wt->kind = t->kind;
        wt->st = ended ? judge(t->kind, EV_END, ok)
                       : started ? judge(t->kind, EV_START, true) : T_WAIT;
        w->nmet += wt->st == T_MET;
        w->nnever += wt->st == T_NEVER;
        w->nterms++;
    }
    sl_dep_spec_fini(&dep);
    for (int32_t i = 0; i < w->nterms; i++) {
        if (w->terms[i].st != T_WAIT)
            continue;
        idvec_t *v = sl_hash_find(&c->deps->index, w->terms[i].key);
        if (v == NULL) {
            v = sl_xcalloc(1, sizeof *v);
            sl_hash_add(&c->deps->index, w->terms[i].key, v);
        }
        idvec_push(v, id);
    }
    sl_hash_add(&c->deps->waiters, id, w);
    return w;
}

arr_t *ctl__deps_array_new(ctl_t *c, uint64_t id, sl_array_spec_t *as) {
    arr_t *a = sl_xcalloc(1, sizeof *a);
    a->id = id;
    a->n = as->n;
    a->limit = as->limit;
    a->idx = as->idx; /* taken */
    as->idx = NULL;
    as->n = 0;
    sl_hash_add(&c->deps->arrays, id, a);
    return a;
}

int ctl_submit(ctl_t *c, ctl_job_t *j, char *err, size_t errlen, const char **field) {
    struct ctl_deps *d = c->deps;
    const char *atext = json_string_value(json_object_get(j->spec, "array"));
    const char *dtext = json_string_value(json_object_get(j->spec, "dependency"));
    *field = NULL;
    sl_array_spec_t as = {0};
    int32_t n = 1;
    if (atext != NULL) {
        char msg[200];
        if (sl_array_parse(atext, (int32_t)c->cfg.max_array_size, &as, msg, sizeof msg) < 0) {
            *field = "array";
            snprintf(err, errlen, "array: %s (limits.max_array_size is %lld)", msg,
                     (long long)c->cfg.max_array_size);
            return SL_EINVAL;
        }
        n = as.n;
    }
    size_t pending = 0, running = 0;
    sl_sched_tenant_jobs(c->sched, j->tenant, &pending, &running);
    int64_t held = j->tenant >= 0 && (size_t)j->tenant < d->nheld ? d->held[j->tenant] : 0;
    int64_t limit = ctl_tenant_max_pending(c, j->tenant);
    if ((int64_t)pending + held + n > limit) {
        snprintf(err, errlen, "tenant \"%s\" already has %zu pending jobs (%lld of them held), and "
                 "%d more would pass its limit (max_pending_jobs: %lld)",
                 sl_sched_tenant_name(c->sched, j->tenant), pending + (size_t)held,
                 (long long)held, n, (long long)limit);
        sl_array_spec_fini(&as);
        return SL_EBUSY;
    }
    if (atext == NULL && dtext == NULL) { /* a plain job, counted by its name (singleton) */
        int rc = ctl_job_submit(c, j, err, errlen);
        if (rc == 0)
            ctl__deps_count_in(c, j);
        return rc;
    }
    uint64_t id = c->next_id;
    int64_t t0 = ctl_mono_us();
    j->id = id;
    j->submit_us = ctl_now_us();
    /* The dependencies first: a bad term refuses the job before any write. */
    waiter_t *w = NULL;
    if (dtext != NULL) {
        int rc;
        w = ctl__deps_waiter_new(c, id, atext != NULL, j->tenant, dtext, &rc, err, errlen);
        if (w == NULL) {
            *field = "dependency";
            sl_array_spec_fini(&as);
            return rc;
        }
    }
    ctl_job_t **v = sl_xmalloc((size_t)n * sizeof *v);
    v[0] = j;
    for (int32_t k = 1; k < n; k++) {
        ctl_job_t *e = ctl_job_new();
        e->id = id + (uint64_t)k;
        e->tenant = j->tenant;
        e->state = CTL_JOB_PENDING;
        e->spec = json_incref(j->spec);
        e->retries = j->retries;
        e->core = j->core;
        e->requeue_on_node_failure = j->requeue_on_node_failure;
        e->submit_us = j->submit_us;
        v[k] = e;
    }
    const char *tenant = sl_sched_tenant_name(c->sched, j->tenant);
    int rc = atext ? ctl_store_array_insert(c->store, v, (size_t)n, atext, tenant)
                   : ctl_store_job_insert(c->store, j, tenant);
    c->next_id += (uint64_t)n; /* on failure the ids are burnt (jobs.h) */
    if (rc < 0) {
        for (int32_t k = 1; k < n; k++)
            ctl_job_free(v[k]);
        sl_free(v);
        if (w != NULL) /* its index entries name an id no waiter has: skipped */
            waiter_drop(d, w);
        sl_array_spec_fini(&as);
        snprintf(err, errlen, "could not store the job");
        return SL_EIO;
    }
    for (int32_t k = 0; k < n; k++) {
        if (atext != NULL) {
            v[k]->array_id = id;
            v[k]->array_index = as.idx[k];
        }
        ctl__deps_hold(c, v[k], atext ? CTL_HOLD_ARRAY : CTL_HOLD_DEPS);
        ctl_job_register(c, v[k]);
        ctl_watch_job(c, v[k], "job.submitted");
    }
    sl_free(v);
    c->n.submissions += (uint64_t)n;
    bool was = d->running;
    d->running = true; /* releases and failures below queue their events */
    arr_t *a = atext ? ctl__deps_array_new(c, id, &as) : NULL;
    if (a != NULL)
        a->gated = w != NULL;
    if (w != NULL)
        ctl__deps_check(c, w);
    else
        ctl__deps_array_fill(c, a);
    d->running = was;
    ctl__deps_run(c);
    sl_array_spec_fini(&as);
    if (sl_log_enabled(SL_LOG_DEBUG, "sched"))
        sl_log(SL_LOG_DEBUG, "sched", "job=%llu submitted elements=%d held=%s us=%lld",
               (unsigned long long)id, n, j->hold ? "yes" : "no", (long long)(ctl_mono_us() - t0));
    return 0;
}

