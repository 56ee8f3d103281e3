/*
 * constraint.h - where a job may run by node labels and taints: node
 * selectors, required label expressions (Kubernetes' In, NotIn, Exists,
 * DoesNotExist; Slurm's features joined by & and |) and tolerations.
 *
 * A node's labels ("k=v,k=v"; a bare "k" is a feature, a label with an
 * empty value) and taints ("k=v:NoSchedule,k:NoExecute") are interned by
 * the cluster into a label set shared by every node that has the same
 * ones, and a node's label set is part of its free-capacity class, so the
 * placement filter asks once per class, not once per node.
 *
 * A job's constraint is compiled once, when it is submitted, and interned
 * by the cluster (equal texts share one). It is a conjunction of the
 * selector's pairs with an expression in disjunctive normal form:
 *
 *   expr := term ('|' term)*          any term may hold
 *   term := req ('&' req)*            every requirement of the term holds
 *   req  := key                       Exists (a Slurm feature)
 *         | '!' key                   DoesNotExist
 *         | key '=' value             In (value)
 *         | key '!=' value            NotIn (value)
 *         | key 'in' '(' v, ... ')'   In
 *         | key 'notin' '(' v, ... ')' NotIn (true where the label is absent)
 *
 * Keys and values are 1..63 of [A-Za-z0-9._/-]. Tolerations are a comma
 * list of key[=value][:Effect] (no value: any value, as Kubernetes' Exists;
 * no effect: every effect) or "*" (every taint). A node admits a job when
 * its labels satisfy the constraint and the job tolerates each of its
 * NoSchedule and NoExecute taints (PreferNoSchedule is advice and does not
 * filter). A job without a constraint is admitted by nodes without such
 * taints.
 *
 * Cost: compiling is O(text); whether a node admits a job is one cached
 * byte per (constraint, label set) after the first evaluation, which is
 * O(requirements x labels).
 */
#ifndef SLUICE_CONSTRAINT_H
#define SLUICE_CONSTRAINT_H

#include <stdbool.h>
#include <stddef.h>

#include "sluice/cluster.h"

/* What a job asks; each field NULL or "" when absent. Strings are read. */
typedef struct sl_constraint_spec {
    const char *selector;    /* "k=v,k=v": every pair must hold */
    const char *expr;        /* the grammar above */
    const char *tolerations; /* "k=v:NoSchedule,k:NoExecute,k,*" */
} sl_constraint_spec_t;

/*
 * Compiles spec and interns it in cl, taking one reference. *out is NULL
 * (and nothing is taken) when spec is empty. Returns 0, or SL_EINVAL with a
 * message naming the field ("node_selector", "constraint", "tolerations")
 * and the offending text in err. O(text + constraints with the same hash).
 */
int sl_cluster_constraint_intern(sl_cluster_t *cl, const sl_constraint_spec_t *spec,
                                 const sl_constraint_t **out, char *err, size_t errlen);
/* Gives back one reference (NULL is ignored); the last frees it. O(1). */
void sl_cluster_constraint_release(sl_cluster_t *cl, const sl_constraint_t *c);
/* Constraints interned (for tests). */
size_t sl_cluster_constraint_count(const sl_cluster_t *cl);

/* Whether node admits a task of a job with constraint c (NULL: none). */
bool sl_constraint_admits(const sl_constraint_t *c, const sl_node_t *node);

/*
 * Why no node of cl (any state) admits c, for a job's reason: "no node has
 * label gpu.class=a100-80g", "tolerates no taint of pool secure
 * (dedicated=secure:NoSchedule)". Returns true and fills buf when no node
 * admits c, false (buf untouched) when some node does. O(nodes), but
 * O(label sets) evaluations.
 */
bool sl_constraint_explain(const sl_constraint_t *c, const sl_cluster_t *cl, char *buf,
                           size_t len);

/* Checks a node's labels or taints text as sl_cluster_add_node would:
 * 0, or SL_EINVAL with a message naming "labels" or "taints". */
int sl_node_labels_check(const char *labels, const char *taints, char *err, size_t errlen);

#endif
