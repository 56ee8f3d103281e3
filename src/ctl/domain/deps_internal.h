/*
 * deps_internal.h - what deps.c shares with deps_recover.c: the records of
 * arrays, waiters and names, and the few steps recovery repeats. Nothing
 * outside those two files includes it (deps.h is the layer's contract).
 */
#ifndef SLUICE_CTL_DEPS_INT_H
#define SLUICE_CTL_DEPS_INT_H

#include "arraydep.h"
#include "domain/deps.h"
#include "store/store.h"

#define WHOLE (1ull << 63) /* an index key naming all elements of an array */

enum { T_WAIT = 0, T_MET, T_NEVER };
enum { EV_START = 0, EV_END };
/* ctl_job_t.dep_seen */
enum { SEEN_START = 1, SEEN_END = 2, SEEN_BEGUN = 4, SEEN_COUNTED = 8, SEEN_RELEASED = 16 };

typedef struct term {
    uint64_t key;      /* a job id, or an array's id | WHOLE */
    uint8_t kind;      /* sl_dep_kind_t, never SL_DEP_SINGLETON */
    uint8_t st;        /* T_* */
} term_t;

typedef struct waiter {
    uint64_t id;       /* the held job, or the array (its first element's id) */
    bool is_array, any, singleton, queued;
    int32_t nterms, nmet, nnever;
    term_t *terms;
} waiter_t;

typedef struct arr {
    uint64_t id;
    int32_t n, limit;
    int32_t *idx;      /* n indexes, ascending */
    int32_t next;      /* elements before it have been considered for release */
    int32_t active;    /* released and not ended */
    int32_t begun, ended, notok;
    bool gated;        /* its dependencies are not met yet */
    bool stopping;     /* being cancelled or failed: release nothing more */
} arr_t;

typedef struct idvec {
    uint64_t *v;
    size_t n, cap, head;
} idvec_t;

typedef struct namerec {
    int32_t tenant;
    char *name;
    int32_t active;    /* jobs of this name and tenant in the core */
    idvec_t queue;     /* ready singleton waiters, oldest first from head */
} namerec_t;

typedef struct event {
    uint64_t id;
    uint8_t ev;
} event_t;

struct ctl_deps {
    sl_hash_t waiters; /* id -> waiter_t */
    sl_hash_t index;   /* target key -> idvec_t of waiter ids */
    sl_hash_t arrays;  /* id -> arr_t, while the array has an element not ended */
    sl_hash_t names;   /* hash of (tenant, name) -> namerec_t (keys may repeat) */
    event_t *q;
    size_t qn, qcap, qhead;
    bool running;
    int64_t *held;     /* held jobs per tenant (max_pending_jobs counts them) */
    size_t nheld;
};

/* Marks and counts a job in the core under its (tenant, name) once. */
void ctl__deps_count_in(ctl_t *c, ctl_job_t *j);
/* Holds j (CTL_HOLD_*), counting it against its tenant's pending limit. */
void ctl__deps_hold(ctl_t *c, ctl_job_t *j, uint8_t why);
/* Releases what array a's limit allows now (nothing while gated). */
void ctl__deps_array_fill(ctl_t *c, arr_t *a);
/* Every element of a has ended: marks it done, wakes its dependents, frees a. */
void ctl__deps_array_done(ctl_t *c, arr_t *a);
/* Releases, queues (singleton) or fails w by the state of its terms. */
void ctl__deps_check(ctl_t *c, waiter_t *w);
/* Drains the queued events unless a caller up the stack is draining them. */
void ctl__deps_run(ctl_t *c);
/* A new array record for id (taking as->idx), in c->deps->arrays. */
arr_t *ctl__deps_array_new(ctl_t *c, uint64_t id, sl_array_spec_t *as);
/* A waiter for id from its dependency text, judged and indexed; NULL
 * with *rc and err for a bad term. */
waiter_t *ctl__deps_waiter_new(ctl_t *c, uint64_t id, bool is_array, int32_t tenant,
                               const char *text, int *rc, char *err, size_t errlen);
/* The stored array with exactly this id: 1 (its indexes in *as unless as
 * is NULL), 0 when none. */
int ctl__deps_stored_array(ctl_t *c, uint64_t id, ctl_store_array_t *row, sl_array_spec_t *as);

#endif
