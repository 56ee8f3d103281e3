/*
 * topo.c - how many racks and blocks a gang spans, from the trace's
 * topology column (sim_node_t.topology), for the replay report.
 *
 * Read from the trace rather than from the nodes' labels, so that a replay
 * with --topology off (a cluster built without the labels: placement blind
 * to topology) is measured with the same yardstick as one with it. The
 * cluster's node ids are the trace's node indexes (sim_cluster_build adds
 * them in order). A node without a path is a rack and a block of its own.
 * O(n^2) in the gang's tasks, with no allocation: gangs are small next to
 * the cost of placing them.
 */
#include <string.h>

#include "sim.h"

bool sim_topo_present(const sim_trace_t *t) {
    for (size_t i = 0; i < t->nnodes; i++)
        if (t->nodes[i].topology) return true;
    return false;
}

/* Whether nodes a and b share a group of level (SL_TOPO_RACK or _BLOCK). */
static bool same_group(const sim_trace_t *t, uint32_t a, uint32_t b, int level) {
    if (a == b) return true;
    const char *pa = t->nodes[a].topology, *pb = t->nodes[b].topology;
    if (!pa || !pb) return false;
    size_t la = strlen(pa), lb = strlen(pb);
    if (level == SL_TOPO_BLOCK) {
        la = sl_topo_block_len(pa, la);
        lb = sl_topo_block_len(pb, lb);
    }
    return la == lb && memcmp(pa, pb, la) == 0;
}

int32_t sim_topo_spanned(const sim_trace_t *t, const sl_job_t *job, int level) {
    int32_t n = sl_job_ntasks_placed(job), groups = 0;
    for (int32_t i = 0; i < n; i++) {
        uint32_t a = sl_job_place(job, i)->node;
        bool seen = false;
        for (int32_t k = 0; k < i && !seen; k++)
            seen = same_group(t, a, sl_job_place(job, k)->node, level);
        groups += !seen;
    }
    return groups;
}
