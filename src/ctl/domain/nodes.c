/*
 * nodes.c - the node table (by core node id, grown by doubling), the
 * per-node lists of live tasks, and the node ids in name order for the
 * API's pages (see nodes.h).
 */
#include <stdlib.h>
#include <string.h>

#include "domain/nodes.h"

ctl_node_t *ctl_node_get(ctl_t *c, uint32_t id) {
    return id < c->nnodes ? c->nodes[id] : NULL;
}

ctl_node_t *ctl_node_new(ctl_t *c, uint32_t id) {
    if (id >= c->nodes_cap) {
        size_t cap = c->nodes_cap ? c->nodes_cap * 2 : 64;
        while (cap <= id)
            cap *= 2;
        c->nodes = sl_xrealloc(c->nodes, cap * sizeof *c->nodes);
        memset(c->nodes + c->nodes_cap, 0, (cap - c->nodes_cap) * sizeof *c->nodes);
        c->nodes_cap = cap;
    }
    ctl_node_t *n = sl_xcalloc(1, sizeof *n);
    n->id = id;
    n->last_seen_us = -1;
    n->last_seen_mono_us = ctl_mono_us();
    n->drain_deadline_us = n->drained_us = -1;
    sl_list_init(&n->tasks);
    c->nodes[id] = n;
    if (id >= c->nnodes)
        c->nnodes = id + 1;
    return n;
}

const char *ctl_node_name(ctl_t *c, int32_t id) {
    const sl_node_t *nd = id >= 0 ? sl_cluster_node(c->cl, (uint32_t)id) : NULL;
    return nd ? nd->name : "";
}

void ctl_nodes_fini(ctl_t *c) {
    for (size_t i = 0; i < c->nnodes; i++) {
        if (c->nodes[i] == NULL)
            continue;
        sl_free(c->nodes[i]->spec_json);
        sl_free(c->nodes[i]);
    }
    sl_free(c->nodes);
    c->nodes = NULL;
    c->nnodes = c->nodes_cap = 0;
    sl_free(c->by_name);
    c->by_name = NULL;
    c->nby_name = 0;
}

typedef struct named {
    const char *name;
    uint32_t id;
} named_t;

static int cmp_named(const void *a, const void *b) {
    return strcmp(((const named_t *)a)->name, ((const named_t *)b)->name);
}

const uint32_t *ctl_nodes_by_name(ctl_t *c, size_t *n) {
    if (c->nby_name != c->nnodes) {
        /* The names are copied out with their ids first so that the sort
         * compares strings without a context argument (no qsort_r). */
        size_t k = c->nnodes;
        named_t *v = sl_xmalloc((k ? k : 1) * sizeof *v);
        for (size_t i = 0; i < k; i++)
            v[i] = (named_t){ctl_node_name(c, (int32_t)i), (uint32_t)i};
        qsort(v, k, sizeof *v, cmp_named);
        c->by_name = sl_xrealloc(c->by_name, (k ? k : 1) * sizeof *c->by_name);
        for (size_t i = 0; i < k; i++)
            c->by_name[i] = v[i].id;
        sl_free(v);
        c->nby_name = k;
    }
    *n = c->nby_name;
    return c->by_name;
}

void ctl_node_link(ctl_t *c, ctl_job_t *j, int32_t i) {
    ctl_task_t *t = &j->tasks[i];
    t->job = j;
    ctl_node_t *n = t->node >= 0 ? ctl_node_get(c, (uint32_t)t->node) : NULL;
    if (n == NULL || t->linked)
        return;
    /* At the head, as the walks of a node failure and a hello have always
     * visited them: the most recently linked first. */
    sl_list_insert_head(&n->tasks, &t->node_link);
    t->linked = true;
    n->live_tasks++;
}

void ctl_node_unlink(ctl_t *c, ctl_task_t *t) {
    if (!t->linked)
        return;
    ctl_node_t *n = ctl_node_get(c, (uint32_t)t->node);
    sl_list_remove(&t->node_link);
    t->linked = false;
    n->live_tasks--;
}

sl_node_state_t ctl_node_up_state(ctl_t *c, uint32_t id) {
    ctl_node_t *n = ctl_node_get(c, id);
    return n != NULL && (n->draining || !n->connected) ? SL_NODE_DRAINING : SL_NODE_UP;
}
