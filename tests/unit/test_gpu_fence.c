/*
 * test_gpu_fence.c - GPUs taken out of placement for a health fault
 * (sl_cluster_fence_gpu) and the eviction of the jobs on them
 * (sl_sched_evict_gpus): the node keeps serving its other GPUs, a task on
 * the fenced GPU gives back exactly what it took, the cluster's free
 * capacity and index stay exact (sl_cluster_check, sl_sched_check), and
 * a gang loses every task, not only the one on the GPU.
 */
#include <string.h>

#include "testutil.h"

#define SEC INT64_C(1000000)
#define GIB (INT64_C(1) << 30)

typedef struct seen {
    sl_preemption_t pre[16];
    size_t npre;
    tu_ids_t starts;
} seen_t;

static void on_pre(void *ud, const sl_preemption_t *p) {
    seen_t *s = ud;
    if (s->npre < 16) s->pre[s->npre++] = *p;
}

static void on_st(void *ud, const sl_job_t *j) {
    tu_ids_on_start(&((seen_t *)ud)->starts, j);
}

static const sl_cycle_ops_t OPS = {on_st, on_pre, NULL};

static seen_t run(sl_sched_t *s, int64_t now) {
    seen_t r;
    memset(&r, 0, sizeof r);
    sl_sched_run(s, now, &OPS, &r, NULL);
    assert_int_equal(sl_sched_check(s), 0);
    return r;
}

static void test_gpu_fence_takes_one_gpu_out_of_placement(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    uint32_t id = tu_node_add(cl, tu_node_spec("n0", 16000, 64 * GIB, 4, "H100", 80 * GIB, NULL));
    sl_res_t tot, fr;
    sl_cluster_capacity(cl, &tot, &fr);
    assert_int_equal(fr.gpu_milli, 4000);
    assert_int_equal(sl_cluster_fence_gpu(cl, 9, 0, true), SL_ENOENT);
    assert_int_equal(sl_cluster_fence_gpu(cl, id, 4, true), SL_EINVAL);
    assert_int_equal(sl_cluster_fence_gpu(cl, id, -1, true), SL_EINVAL);
    assert_int_equal(sl_cluster_fence_gpu(cl, id, 0, true), 0);
    assert_int_equal(sl_cluster_fence_gpu(cl, id, 0, true), 0); /* idempotent */
    const sl_node_t *n = sl_cluster_node(cl, id);
    assert_int_equal(n->gpu_fenced, 1u);
    assert_int_equal(n->gpu_free[0], 0);
    assert_int_equal(n->gpu_mem_free[0], 0);
    sl_cluster_capacity(cl, &tot, &fr);
    assert_int_equal(tot.gpu_milli, 4000);
    assert_int_equal(fr.gpu_milli, 3000);
    assert_int_equal(sl_cluster_check(cl), 0);
    /* The node serves its 3 other GPUs: 4 whole GPUs no longer fit, 3 do,
     * and the default choice skips GPU 0. */
    sl_task_req_t four = tu_req("1", "1Gi", 4, ""), three = tu_req("1", "1Gi", 3, "");
    assert_false(sl_node_fits(n, &four));
    assert_true(sl_node_fits(n, &three));
    sl_place_t pl;
    assert_int_equal(sl_node_choose_gpus(n, &three, &pl), SL_FIT);
    assert_int_equal(pl.gpu_mask, 0xeu);
    /* A share never lands on the fenced GPU either. */
    sl_task_req_t sh = tu_req("1", "1Gi", 0, "0.5");
    assert_int_equal(sl_node_choose_gpus(n, &sh, &pl), SL_FIT);
    assert_true((pl.gpu_mask & 1u) == 0);
    /* Returned: all four again. */
    assert_int_equal(sl_cluster_fence_gpu(cl, id, 0, false), 0);
    assert_int_equal(n->gpu_fenced, 0u);
    assert_int_equal(n->gpu_free[0], 1000);
    assert_int_equal(n->gpu_mem_free[0], 80 * GIB);
    assert_true(sl_node_fits(n, &four));
    sl_cluster_capacity(cl, &tot, &fr);
    assert_int_equal(fr.gpu_milli, 4000);
    assert_int_equal(sl_cluster_check(cl), 0);
    sl_cluster_destroy(cl);
}

/* A task on the GPU when it is fenced keeps it; its release goes to the
 * hidden state, and the GPU shows free only once returned. */
static void test_gpu_fence_under_a_running_task(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    uint32_t id = tu_node_add(cl, tu_node_spec("n0", 16000, 64 * GIB, 2, "H100", 80 * GIB, NULL));
    const sl_node_t *n = sl_cluster_node(cl, id);
    sl_task_req_t sh = tu_req("1", "1Gi", 0, "0.5");
    sl_place_t pl = {.node = id, .gpu_mask = 1u, .gpu_milli = 500, .gpu_mem_bytes = sh.gpu_mem_bytes};
    assert_int_equal(sl_cluster_alloc(cl, &sh, &pl), 0);
    assert_int_equal(sl_cluster_fence_gpu(cl, id, 0, true), 0);
    assert_int_equal(n->gpu_free[0], 0);
    sl_res_t fr;
    sl_cluster_capacity(cl, NULL, &fr);
    assert_int_equal(fr.gpu_milli, 1000);
    /* A second share cannot go there now, though half of it is free. */
    assert_int_equal(sl_cluster_alloc(cl, &sh, &pl), 0); /* re-adoption may still take it */
    assert_int_equal(sl_cluster_alloc(cl, &sh, &pl), SL_ENOSPC);
    assert_int_equal(sl_cluster_release(cl, &sh, &pl), 0);
    assert_int_equal(sl_cluster_release(cl, &sh, &pl), 0);
    assert_int_equal(sl_cluster_release(cl, &sh, &pl), SL_EINVAL); /* nothing more taken */
    assert_int_equal(n->gpu_free[0], 0);
    assert_int_equal(sl_cluster_check(cl), 0);
    assert_int_equal(sl_cluster_fence_gpu(cl, id, 0, false), 0);
    assert_int_equal(n->gpu_free[0], 1000);
    sl_cluster_capacity(cl, NULL, &fr);
    assert_int_equal(fr.gpu_milli, 2000);
    /* Fencing a node that is down changes no capacity (it counts none). */
    assert_int_equal(sl_cluster_set_state(cl, id, SL_NODE_DOWN), 0);
    assert_int_equal(sl_cluster_fence_gpu(cl, id, 1, true), 0);
    assert_int_equal(sl_cluster_set_state(cl, id, SL_NODE_UP), 0);
    sl_cluster_capacity(cl, NULL, &fr);
    assert_int_equal(fr.gpu_milli, 1000);
    assert_int_equal(sl_cluster_check(cl), 0);
    sl_cluster_destroy(cl);
}

/* A GPU fault evicts the gang with a task on it (all of its tasks, on
 * both nodes), not the job on the node's other GPUs; the fenced GPU takes
 * nothing new and the gang runs again where GPUs are healthy. */
static void test_gpu_fence_evicts_the_gang_on_the_gpu(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    tu_add_nodes(cl, "n", 3, "16", "64Gi", 2, "H100", "80Gi", NULL);
    sl_sched_t *s = tu_sched_create(cl, "fifo", NULL);
    int t = tu_tenant_add(s, "a", 1, TU_NO_QUOTA);
    tu_submit(s, tu_spec(1, t, 2, tu_req("1", "1Gi", 1, ""))); /* gang of 2 */
    seen_t r = run(s, 0);
    assert_int_equal(r.starts.n, 1);
    const sl_place_t *p0 = sl_job_place(sl_sched_job(s, 1), 0);
    uint32_t node = p0->node, mask = p0->gpu_mask;
    tu_submit(s, tu_spec(2, t, 1, tu_req("1", "1Gi", 1, "")));
    r = run(s, SEC);
    assert_int_equal(r.starts.n, 1);
    int g = __builtin_ctz(mask);
    assert_int_equal(sl_cluster_fence_gpu(cl, node, g, true), 0);
    memset(&r, 0, sizeof r);
    assert_int_equal(sl_sched_evict_gpus(s, 99, 1u, 2 * SEC, &OPS, &r), SL_ENOENT);
    assert_int_equal(sl_sched_evict_gpus(s, node, mask, 2 * SEC, &OPS, &r), 1);
    assert_int_equal(r.pre[0].victim, 1);
    assert_int_equal(r.pre[0].ntasks, 2);
    assert_int_equal(sl_sched_stop_done(s, 1, 3 * SEC), 0);
    assert_int_equal(sl_sched_check(s), 0);
    r = run(s, 4 * SEC);
    assert_int_equal(r.starts.n, 1);
    const sl_job_t *j = sl_sched_job(s, 1);
    for (int32_t i = 0; i < 2; i++) {
        const sl_place_t *p = sl_job_place(j, i);
        assert_false(p->node == node && (p->gpu_mask & (1u << g)));
    }
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_gpu_fence_takes_one_gpu_out_of_placement, tu_teardown),
        cmocka_unit_test_teardown(test_gpu_fence_under_a_running_task, tu_teardown),
        cmocka_unit_test_teardown(test_gpu_fence_evicts_the_gang_on_the_gpu, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
