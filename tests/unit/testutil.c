/* testutil.c - builders for unit-test fixtures. */
#include <stdio.h>
#include <stdlib.h>

#include "quantity.h"
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

void tu_ids_on_start(void *ud, const sl_job_t *job) {
    tu_ids_t *o = ud;
    if (o->n < sizeof o->v / sizeof o->v[0]) o->v[o->n++] = sl_job_id(job);
}

int tu_ids_each(void *ud, const sl_job_t *job) {
    tu_ids_on_start(ud, job);
    return 0;
}

sl_sched_t *tu_sched_create(sl_cluster_t *cl, const char *queue, const char *backfill) {
    sl_sched_config_t cfg;
    sl_sched_config_init(&cfg);
    cfg.queue = queue;
    cfg.backfill = backfill;
    sl_sched_t *s = NULL;
    char err[256];
    assert_int_equal(sl_sched_create(&cfg, cl, &s, err, sizeof err), 0);
    return s;
}

int tu_tenant_add(sl_sched_t *s, const char *name, int32_t weight, sl_res_t quota) {
    sl_tenant_spec_t t = {.name = name, .weight = weight, .quota = quota};
    int id = sl_sched_add_tenant(s, &t);
    assert_true(id >= 0);
    return id;
}

sl_task_req_t tu_random_req(sl_rng_t *rng, const sl_cluster_t *cl, bool with_pool) {
    sl_task_req_t r;
    sl_task_req_init(&r);
    r.cpu_milli = 500 * (int64_t)(1 + sl_rng_below(rng, 40));
    r.mem_bytes = (INT64_C(1) << 30) * (int64_t)(1 + sl_rng_below(rng, 64));
    switch (sl_rng_below(rng, 4)) {
    case 0: break; /* CPU only */
    case 1: r.gpu_milli = 50 * (int32_t)(1 + sl_rng_below(rng, 19)); break;
    case 2: r.gpus = 1 + (int32_t)sl_rng_below(rng, 8); break;
    default:
        r.gpu_milli = 100 * (int32_t)(1 + sl_rng_below(rng, 9));
        if (sl_rng_below(rng, 2)) r.gpu_mem_bytes = (INT64_C(1) << 30) * (int64_t)(1 + sl_rng_below(rng, 8));
        break;
    }
    if (sl_rng_below(rng, 5) == 0 && sl_task_req_has_gpu(&r))
        r.model_mask = UINT64_C(1) << sl_cluster_model_find(cl, sl_rng_below(rng, 2) ? "T4" : "V100");
    if (with_pool && sl_rng_below(rng, 8) == 0)
        r.pool = sl_cluster_pool_find(cl, sl_rng_below(rng, 2) ? "cpu" : "default");
    return r;
}

bool tu_place_check_naive(const sl_place_policy_t *pol, sl_cycle_t *cy, const sl_task_req_t *r,
                          bool same_gpus, sl_place_t *pl) {
    const sl_cluster_t *cl = cy->cluster;
    bool found = false;
    int64_t best = 0;
    for (uint32_t id = 0; id < sl_cluster_node_count(cl); id++) {
        const sl_node_t *n = sl_cluster_node(cl, id);
        if (!sl_node_fits(n, r)) continue;
        int64_t s;
        sl_place_t p;
        assert_int_equal(pol->score(cy, r, n, 1, &s, &p), SL_FIT);
        if (!found || (s >> 32) > best) best = s >> 32;
        found = true;
    }
    int st = sl_place_task(pol, cy, r, pl);
    assert_int_equal(st == SL_FIT, found);
    if (!found) return false;
    int64_t s;
    sl_place_t p;
    assert_int_equal(pol->score(cy, r, sl_cluster_node(cl, pl->node), 1, &s, &p), SL_FIT);
    assert_int_equal(s >> 32, best);
    if (same_gpus) assert_int_equal(p.gpu_mask, pl->gpu_mask);
    return true;
}

const char *tu_trace_path(const char *rel, char *buf, size_t len) {
    const char *root = getenv("SLUICE_TRACES");
    snprintf(buf, len, "%s/%s", root ? root : "../shared/traces", rel);
    return buf;
}

int tu_teardown(void **state) {
    (void)state;
    SL_ASSERT_NO_LEAKS();
    return 0;
}

sl_job_spec_t tu_spec(uint64_t id, int tn, int32_t ntasks, sl_task_req_t task) {
    sl_job_spec_t sp = {.id = id, .tenant = tn, .submit_us = (int64_t)id, .ntasks = ntasks,
                        .task = task};
    return sp;
}

void tu_submit(sl_sched_t *s, sl_job_spec_t sp) {
    char err[256];
    int rc = sl_sched_submit(s, &sp, err, sizeof err);
    if (rc) fprintf(stderr, "submit %llu: %s\n", (unsigned long long)sp.id, err);
    assert_int_equal(rc, 0);
}

void tu_adopt_one(sl_sched_t *s, uint64_t id, uint32_t node, int gpus, int64_t limit) {
    sl_job_spec_t sp = {.id = id, .ntasks = 1, .task = tu_req("1", "1Gi", gpus, ""),
                        .time_limit_us = limit};
    sl_place_t pl = {.node = node, .gpu_mask = (1u << gpus) - 1, .gpu_milli = 1000};
    char err[256];
    assert_int_equal(sl_sched_adopt(s, &sp, &pl, 1, 0, err, sizeof err), 0);
}

sl_job_state_t tu_state(const sl_sched_t *s, uint64_t id) {
    return sl_job_state(sl_sched_job(s, id));
}

sl_cluster_t *tu_cluster(void) {
    sl_cluster_t *cl = NULL;
    assert_int_equal(sl_cluster_create(&cl), 0);
    assert_non_null(cl);
    return cl;
}

sl_node_spec_t tu_node_spec(const char *name, int64_t cpu, int64_t mem, int32_t gpus,
                            const char *model, int64_t gpu_mem, const char *pool) {
    return (sl_node_spec_t){.name = name, .cpu_milli = cpu, .mem_bytes = mem, .gpus = gpus,
                            .gpu_model = model, .gpu_mem_bytes = gpu_mem, .pool = pool};
}

uint32_t tu_node_add(sl_cluster_t *cl, sl_node_spec_t sp) {
    uint32_t id = UINT32_MAX;
    char err[128] = "";
    int rc = sl_cluster_add_node(cl, &sp, &id, err, sizeof err);
    if (rc) fail_msg("add %s: %s", sp.name, err);
    return id;
}
