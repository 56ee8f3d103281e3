/*
 * constraint_internal.h - label sets and compiled constraints
 * (constraint.c), private to src/core. The cluster owns one table of each
 * (sl__ltab_t); cluster.c gives every node a label set at add time and
 * keys its class on the set's id, so the nodes of one class share labels
 * and taints. Placement reads sl__cons_admits, a cached byte per
 * (constraint, label set) after the first evaluation.
 */
#ifndef SLUICE_CONSTRAINT_INTERNAL_H
#define SLUICE_CONSTRAINT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "sluice/cluster.h"
#include "sluice/constraint.h"
#include "sluice/hash.h"

typedef struct sl__kv {
    char *k, *v; /* v "" for a bare feature; for a toleration NULL = any value */
    uint8_t effect; /* taints and tolerations: SL__EFF_* */
} sl__kv_t;

#define SL__EFF_ANY 0u /* tolerations only */
#define SL__EFF_NOSCHED 1u
#define SL__EFF_PREFER 2u
#define SL__EFF_NOEXEC 3u

/* A set of labels and taints, shared by the nodes that have both alike. */
struct sl_lset {
    uint32_t id;     /* dense, never reused within a cluster */
    bool hard;       /* has a NoSchedule or NoExecute taint */
    uint32_t nl, nt;
    sl__kv_t *l, *t;
    char *key;       /* labels '\n' taints, as given: the interning key */
};

enum { SL__OP_IN, SL__OP_NOTIN, SL__OP_EXISTS, SL__OP_DNE };

typedef struct sl__req {
    uint8_t op;
    char *key;
    char **vals;
    uint32_t nvals;
} sl__req_t;

typedef struct sl__term {
    sl__req_t *r;
    uint32_t n;
} sl__term_t;

struct sl_constraint {
    uint32_t refs;
    uint64_t hash;
    char *key;       /* selector \x1f expr \x1f tolerations: the interning key */
    sl__term_t *terms; /* any may hold; 0 terms: no label requirement */
    uint32_t nterms;
    sl__kv_t *tol;
    uint32_t ntol;
    bool tol_all;
    /* Cache by label set id: 0 unknown, 1 refused, 2 admitted. Written
     * through const pointers: a memo, not state (the core is
     * single-threaded per cluster). */
    uint8_t *memo;
    uint32_t nmemo;
};

typedef struct sl__ltab {
    struct sl_lset **sets; /* by id */
    uint32_t nsets, cap;
    sl_hash_t by_key;      /* label sets by hash of key */
    sl_hash_t cons;        /* constraints by hash of key */
} sl__ltab_t;

void sl__ltab_init(sl__ltab_t *t);
void sl__ltab_fini(sl__ltab_t *t);
/* The label set of labels and taints (NULL = none), interned. 0, or
 * SL_EINVAL with a message naming "taints" (labels are lenient: items that
 * are not key or key=value are kept verbatim as features). */
int sl__ltab_lset(sl__ltab_t *t, const char *labels, const char *taints,
                  const struct sl_lset **out, char *err, size_t errlen);
int sl__ltab_cons_intern(sl__ltab_t *t, const sl_constraint_spec_t *spec,
                         const sl_constraint_t **out, char *err, size_t errlen);
void sl__ltab_cons_release(sl__ltab_t *t, const sl_constraint_t *c);

/* Evaluates c on ls without the memo. */
bool sl__cons_eval(const sl_constraint_t *c, const struct sl_lset *ls);

/* For reasons (constraint_explain.c): whether ls's labels satisfy c, and
 * the first NoSchedule/NoExecute taint of ls that c does not tolerate. */
bool sl__cons_labels_hold(const sl_constraint_t *c, const struct sl_lset *ls);
const sl__kv_t *sl__cons_untolerated(const sl_constraint_t *c, const struct sl_lset *ls);

/* Whether a node of label set ls admits a task of a job with constraint c
 * (NULL: none). O(1) after the first call per pair. */
static inline bool sl__cons_admits(const sl_constraint_t *c, const struct sl_lset *ls) {
    if (!c) return !ls || !ls->hard;
    if (ls && ls->id < c->nmemo && c->memo[ls->id]) return c->memo[ls->id] == 2;
    return sl__cons_eval(c, ls);
}

#endif
