/* testutil.c - builders for unit-test fixtures. */
#include <stdio.h>
#include <stdlib.h>

#include "testutil.h"

static int64_t qty(const char *s, sl_qty_kind_t k) {
    int64_t v = 0;
    char err[128];
    if (s && *s && sl_qty_parse(s, k, &v, err, sizeof err) != 0) {
        fprintf(stderr, "testutil: %s\n", err);
        abort();
    }
    return v;
}

uint32_t tu_add_nodes(sl_cluster_t *cl, const char *prefix, int n, const char *cpus,
                      const char *mem, int gpus, const char *model, const char *gpu_mem,
                      const char *pool) {
    uint32_t first = UINT32_MAX;
    for (int i = 0; i < n; i++) {
        char name[SL_NAME_MAX], err[128];
        snprintf(name, sizeof name, "%s-%d", prefix, i);
        sl_node_spec_t sp = {.name = name, .cpu_milli = qty(cpus, SL_QTY_CPU),
                             .mem_bytes = qty(mem, SL_QTY_MEM), .gpus = gpus,
                             .gpu_model = model, .gpu_mem_bytes = qty(gpu_mem, SL_QTY_MEM),
                             .pool = pool};
        uint32_t id;
        if (sl_cluster_add_node(cl, &sp, &id, err, sizeof err) != 0) {
            fprintf(stderr, "testutil: add node %s: %s\n", name, err);
            abort();
        }
        if (i == 0) first = id;
    }
    return first;
}

sl_task_req_t tu_req(const char *cpus, const char *mem, int gpus, const char *gpu_share) {
    sl_task_req_t r;
    sl_task_req_init(&r);
    r.cpu_milli = qty(cpus, SL_QTY_CPU);
    r.mem_bytes = qty(mem, SL_QTY_MEM);
    r.gpus = gpus;
    if (gpu_share && *gpu_share) r.gpu_milli = (int32_t)qty(gpu_share, SL_QTY_GPU);
    return r;
}

const char *tu_trace_path(const char *rel, char *buf, size_t len) {
    const char *root = getenv("SLUICE_TRACES");
    snprintf(buf, len, "%s/%s", root ? root : "../shared/traces", rel);
    return buf;
}
