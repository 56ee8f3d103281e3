/*
 * constraint_explain.c - why no node admits a job's constraint, in words
 * for `sluice show` (sl_constraint_explain in constraint.h).
 *
 * Over every node of the cluster, in any state (a constraint that a node
 * which is down would satisfy is not "never"): if some node's labels
 * satisfy the constraint and it tolerates that node's taints, there is
 * nothing to explain. If labels match somewhere but every such node has a
 * taint the job does not tolerate, the reason names the first such node's
 * pool and taint. Otherwise the labels match nowhere: with one term the
 * reason names the first requirement no node meets, else the whole
 * expression. O(nodes) with one memoised evaluation per label set.
 */
#include <stdio.h>
#include <string.h>

#include "constraint_internal.h"
#include "sluice/cluster.h"

static const char *eff_name(uint8_t e) {
    return e == SL__EFF_NOEXEC ? "NoExecute" : e == SL__EFF_PREFER ? "PreferNoSchedule" : "NoSchedule";
}

/* Writes requirement r as the user wrote it ("k=v", "k in (a, b)"). */
static void req_text(const sl__req_t *r, char *buf, size_t len) {
    switch (r->op) {
    case SL__OP_EXISTS: snprintf(buf, len, "%s", r->key); return;
    case SL__OP_DNE: snprintf(buf, len, "!%s", r->key); return;
    default: break;
    }
    if (r->nvals == 1) {
        snprintf(buf, len, "%s%s%s", r->key, r->op == SL__OP_IN ? "=" : "!=", r->vals[0]);
        return;
    }
    size_t o = (size_t)snprintf(buf, len, "%s %s (", r->key, r->op == SL__OP_IN ? "in" : "notin");
    for (uint32_t i = 0; i < r->nvals && o < len; i++)
        o += (size_t)snprintf(buf + o, len - o, "%s%s", i ? ", " : "", r->vals[i]);
    if (o < len) snprintf(buf + o, len - o, ")");
}

static bool req_anywhere(const sl__req_t *r, const sl_cluster_t *cl) {
    sl__term_t tm = {(sl__req_t *)r, 1};
    sl_constraint_t one = {.terms = &tm, .nterms = 1};
    size_t nn = sl_cluster_node_count(cl);
    for (uint32_t id = 0; id < nn; id++)
        if (sl__cons_labels_hold(&one, sl_cluster_node(cl, id)->lset)) return true;
    return false;
}

bool sl_constraint_explain(const sl_constraint_t *c, const sl_cluster_t *cl, char *buf,
                           size_t len) {
    size_t nn = sl_cluster_node_count(cl);
    const sl_node_t *tainted = NULL;
    for (uint32_t id = 0; id < nn; id++) {
        const sl_node_t *n = sl_cluster_node(cl, id);
        if (sl__cons_admits(c, n->lset)) return false;
        if (!tainted && (!c || sl__cons_labels_hold(c, n->lset))) tainted = n;
    }
    if (!buf || !len) return true;
    if (nn == 0) {
        snprintf(buf, len, "no node has registered");
        return true;
    }
    if (tainted) {
        const sl__kv_t *t = NULL;
        static const sl_constraint_t none = {0};
        t = sl__cons_untolerated(c ? c : &none, tainted->lset);
        const char *pool = sl_cluster_pool_name(cl, tainted->pool);
        if (t)
            snprintf(buf, len, "tolerates no taint of pool %s (%s%s%s:%s)", pool ? pool : "?", t->k,
                     *t->v ? "=" : "", t->v, eff_name(t->effect));
        else
            snprintf(buf, len, "tolerates no taint of pool %s", pool ? pool : "?");
        return true;
    }
    char rt[128];
    if (c->nterms == 1) {
        for (uint32_t i = 0; i < c->terms[0].n; i++) {
            const sl__req_t *r = &c->terms[0].r[i];
            if (req_anywhere(r, cl)) continue;
            req_text(r, rt, sizeof rt);
            if (r->op == SL__OP_DNE) snprintf(buf, len, "every node has label %s", r->key);
            else snprintf(buf, len, "no node has label %s", rt);
            return true;
        }
    }
    /* Each requirement is met somewhere, or several terms: the whole. */
    size_t o = (size_t)snprintf(buf, len, "no node has labels matching ");
    for (uint32_t t = 0; t < c->nterms && o < len; t++) {
        if (t) o += (size_t)snprintf(buf + o, len - o, " | ");
        for (uint32_t i = 0; i < c->terms[t].n && o < len; i++) {
            req_text(&c->terms[t].r[i], rt, sizeof rt);
            o += (size_t)snprintf(buf + o, len - o, "%s%s", i ? " & " : "", rt);
        }
    }
    return true;
}
