/*
 * test_cluster.c - nodes, interning, fitting, allocation and the
 * free-capacity class index.
 *
 * The index against a naive reference is in test_cluster_index.c.
 */
#include <stdio.h>
#include <string.h>

#include "cluster_index.h"
#include "testutil.h"

#define GIB (INT64_C(1) << 30)

static sl_task_req_t share(int32_t milli, int64_t mem) {
    sl_task_req_t r;
    sl_task_req_init(&r);
    r.gpu_milli = milli;
    r.gpu_mem_bytes = mem;
    return r;
}

static sl_task_req_t whole(int32_t gpus) {
    sl_task_req_t r;
    sl_task_req_init(&r);
    r.gpus = gpus;
    return r;
}

/* ---- adding, finding, interning ---- */

static void test_cluster_add_and_find(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    sl_node_spec_t a = tu_node_spec("gpu-a", 64000, 256 * GIB, 8, "A100", 80 * GIB, NULL);
    a.labels = "rack=r1,zone=z";
    uint32_t ia = tu_node_add(cl, a);
    uint32_t ib = tu_node_add(cl, tu_node_spec("cpu-b", 32000, 128 * GIB, 0, NULL, 0, "batch"));
    uint32_t ic = tu_node_add(cl, tu_node_spec("gpu-c", 16000, 64 * GIB, 2, "T4", 16 * GIB, ""));
    assert_int_equal(ia, 0);
    assert_int_equal(ib, 1);
    assert_int_equal(ic, 2);
    assert_int_equal(sl_cluster_node_count(cl), 3);

    const sl_node_t *n = sl_cluster_find_node(cl, "gpu-a");
    assert_non_null(n);
    assert_ptr_equal(n, sl_cluster_node(cl, 0));
    assert_string_equal(n->name, "gpu-a");
    assert_int_equal(n->pool, 0);
    assert_string_equal(sl_cluster_pool_name(cl, n->pool), "default");
    assert_string_equal(sl_cluster_model_name(cl, n->model), "A100");
    assert_int_equal(n->state, SL_NODE_UP);
    assert_int_equal(n->ngpus, 8);
    assert_int_equal(n->cpu_free, 64000);
    assert_int_equal(n->mem_free, 256 * GIB);
    for (int g = 0; g < 8; g++) {
        assert_int_equal(n->gpu_free[g], 1000);
        assert_int_equal(n->gpu_mem_free[g], 80 * GIB);
    }
    assert_string_equal(n->labels, "rack=r1,zone=z");
    assert_ptr_not_equal(n->labels, a.labels); /* copied */

    const sl_node_t *b = sl_cluster_find_node(cl, "cpu-b");
    assert_int_equal(b->model, -1);
    assert_int_equal(b->pool, sl_cluster_pool_find(cl, "batch"));
    assert_null(b->labels);
    assert_int_equal(sl_cluster_find_node(cl, "gpu-c")->pool, 0); /* "" is default */
    assert_null(sl_cluster_find_node(cl, "nope"));
    assert_null(sl_cluster_find_node(cl, NULL));
    assert_null(sl_cluster_node(cl, 3));
    assert_int_equal(sl_cluster_model_count(cl), 2);
    sl_cluster_destroy(cl);
    sl_cluster_destroy(NULL);
}

static void test_cluster_add_many_names_stay_findable(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    tu_add_nodes(cl, "n", 5000, "8", "32Gi", 1, "T4", "16Gi", NULL);
    assert_int_equal(sl_cluster_node_count(cl), 5000);
    for (int i = 0; i < 5000; i++) {
        char name[32];
        snprintf(name, sizeof name, "n-%d", i);
        const sl_node_t *n = sl_cluster_find_node(cl, name);
        assert_non_null(n);
        assert_int_equal(n->id, (uint32_t)i);
    }
    assert_int_equal(sl_cluster_check(cl), 0);
    sl_cluster_destroy(cl);
}

static void test_cluster_add_duplicate_name(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    tu_node_add(cl, tu_node_spec("x", 1000, GIB, 0, NULL, 0, NULL));
    sl_node_spec_t sp = tu_node_spec("x", 2000, GIB, 1, "A100", GIB, "other");
    char err[128] = "";
    uint32_t id = 77;
    assert_int_equal(sl_cluster_add_node(cl, &sp, &id, err, sizeof err), SL_EEXIST);
    assert_int_equal(id, 77);
    assert_non_null(strstr(err, "\"x\""));
    assert_int_equal(sl_cluster_node_count(cl), 1);
    assert_int_equal(sl_cluster_pool_find(cl, "other"), SL_ENOENT); /* nothing interned */
    assert_int_equal(sl_cluster_model_find(cl, "A100"), SL_ENOENT);
    sl_cluster_destroy(cl);
}

static void test_cluster_add_bad_specs(void **state) {
    (void)state;
    static const char long_name[] = "0123456789012345678901234567890123456789012345678901234567890123";
    struct {
        sl_node_spec_t sp;
        const char *msg;
    } bad[] = {
        {tu_node_spec("", 1000, GIB, 0, NULL, 0, NULL), "empty"},
        {tu_node_spec(NULL, 1000, GIB, 0, NULL, 0, NULL), "empty"},
        {tu_node_spec(long_name, 1000, GIB, 0, NULL, 0, NULL), "63"},
        {tu_node_spec("n", -1, GIB, 0, NULL, 0, NULL), "cpu_milli"},
        {tu_node_spec("n", 1000, -1, 0, NULL, 0, NULL), "mem_bytes"},
        {tu_node_spec("n", 1000, GIB, 17, "A100", GIB, NULL), "gpus"},
        {tu_node_spec("n", 1000, GIB, -1, "A100", GIB, NULL), "gpus"},
        {tu_node_spec("n", 1000, GIB, 2, NULL, GIB, NULL), "gpu_model"},
        {tu_node_spec("n", 1000, GIB, 2, "", GIB, NULL), "gpu_model"},
        {tu_node_spec("n", 1000, GIB, 2, long_name, GIB, NULL), "gpu_model"},
        {tu_node_spec("n", 1000, GIB, 2, "A100", -1, NULL), "gpu_mem_bytes"},
        {tu_node_spec("n", 1000, GIB, 0, NULL, 0, long_name), "pool"},
    };
    sl_cluster_t *cl = tu_cluster();
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char err[160] = "";
        int rc = sl_cluster_add_node(cl, &bad[i].sp, NULL, err, sizeof err);
        if (rc != SL_EINVAL) fail_msg("row %zu: rc %d", i, rc);
        if (!strstr(err, bad[i].msg)) fail_msg("row %zu: \"%s\" lacks \"%s\"", i, err, bad[i].msg);
    }
    assert_int_equal(sl_cluster_add_node(cl, NULL, NULL, NULL, 0), SL_EINVAL);
    assert_int_equal(sl_cluster_node_count(cl), 0);
    assert_int_equal(sl_cluster_model_count(cl), 0);
    assert_int_equal(sl_cluster_class_count(cl), 0);
    sl_cluster_destroy(cl);
}

static void test_cluster_pools_and_models_intern(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    assert_int_equal(sl_cluster_pool_find(cl, "default"), 0);
    assert_int_equal(sl_cluster_pool_intern(cl, "default"), 0);
    int a = sl_cluster_pool_intern(cl, "a");
    assert_int_equal(a, 1);
    assert_int_equal(sl_cluster_pool_intern(cl, "a"), 1);
    assert_int_equal(sl_cluster_pool_find(cl, "a"), 1);
    assert_int_equal(sl_cluster_pool_find(cl, "b"), SL_ENOENT);
    assert_string_equal(sl_cluster_pool_name(cl, 1), "a");
    assert_null(sl_cluster_pool_name(cl, 2));
    assert_null(sl_cluster_pool_name(cl, -1));
    assert_int_equal(sl_cluster_pool_intern(cl, ""), SL_EINVAL);
    assert_int_equal(sl_cluster_pool_intern(cl, NULL), SL_EINVAL);

    /* Models may be interned before any node has them (jobs name them). */
    assert_int_equal(sl_cluster_model_find(cl, "H100"), SL_ENOENT);
    assert_int_equal(sl_cluster_model_intern(cl, "H100"), 0);
    assert_int_equal(sl_cluster_model_count(cl), 1);
    uint32_t id = tu_node_add(cl, tu_node_spec("h", 1000, GIB, 1, "H100", GIB, NULL));
    assert_int_equal(sl_cluster_node(cl, id)->model, 0);
    for (int i = 1; i < SL_MAX_MODELS; i++) {
        char name[16];
        snprintf(name, sizeof name, "m%d", i);
        assert_int_equal(sl_cluster_model_intern(cl, name), i);
    }
    assert_int_equal(sl_cluster_model_intern(cl, "one-too-many"), SL_ERANGE);
    assert_int_equal(sl_cluster_model_intern(cl, "m5"), 5); /* existing still found */
    sl_node_spec_t sp = tu_node_spec("z", 1000, GIB, 1, "new-model", GIB, "new-pool");
    assert_int_equal(sl_cluster_add_node(cl, &sp, NULL, NULL, 0), SL_ERANGE);
    assert_int_equal(sl_cluster_pool_find(cl, "new-pool"), SL_ENOENT); /* nothing changed */
    assert_null(sl_cluster_model_name(cl, SL_MAX_MODELS));

    for (int i = 2; i < SL_MAX_POOLS; i++) {
        char name[16];
        snprintf(name, sizeof name, "p%d", i);
        assert_int_equal(sl_cluster_pool_intern(cl, name), i);
    }
    assert_int_equal(sl_cluster_pool_intern(cl, "p-extra"), SL_ERANGE);
    assert_string_equal(sl_cluster_pool_name(cl, SL_MAX_POOLS - 1), "p1023");
    sl_cluster_destroy(cl);
}

/* Finding 4 of issue 8: names a job took must come back when it goes, or
 * 64 bogus model names lock every real GPU model out of the cluster. */
static void test_cluster_names_release_and_reuse(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    /* Fill the model table (node references, which the job share does
     * not bound; test_cluster_names.c has the jobs' side). */
    for (int i = 0; i < SL_MAX_MODELS; i++) {
        char name[16];
        snprintf(name, sizeof name, "bogus%d", i);
        assert_int_equal(sl_cluster_model_intern(cl, name), i);
    }
    assert_int_equal(sl_cluster_model_count(cl), SL_MAX_MODELS);
    assert_int_equal(sl_cluster_model_intern(cl, "A100"), SL_ERANGE);
    sl_node_spec_t sp = tu_node_spec("a", 1000, GIB, 1, "A100", GIB, NULL);
    assert_int_equal(sl_cluster_add_node(cl, &sp, NULL, NULL, 0), SL_ERANGE);

    /* A second reference keeps the name and its id through one release. */
    assert_int_equal(sl_cluster_model_intern(cl, "bogus7"), 7);
    assert_int_equal(sl_cluster_model_release(cl, 7), 0);
    assert_string_equal(sl_cluster_model_name(cl, 7), "bogus7");
    assert_int_equal(sl_cluster_model_find(cl, "bogus7"), 7);
    assert_int_equal(sl_cluster_model_intern(cl, "A100"), SL_ERANGE);

    /* The last release frees the slot: the name is gone, the id is free. */
    assert_int_equal(sl_cluster_model_release(cl, 7), 0);
    assert_null(sl_cluster_model_name(cl, 7));
    assert_int_equal(sl_cluster_model_find(cl, "bogus7"), SL_ENOENT);
    assert_int_equal(sl_cluster_model_count(cl), SL_MAX_MODELS - 1);
    assert_int_equal(sl_cluster_model_release(cl, 7), SL_EINVAL); /* no reference left */
    assert_int_equal(sl_cluster_model_release(cl, -1), SL_EINVAL);
    assert_int_equal(sl_cluster_model_release(cl, SL_MAX_MODELS), SL_EINVAL);

    /* A real node takes the freed id; the other ids never moved. */
    uint32_t id = tu_node_add(cl, sp);
    assert_int_equal(sl_cluster_node(cl, id)->model, 7);
    assert_string_equal(sl_cluster_model_name(cl, 7), "A100");
    assert_string_equal(sl_cluster_model_name(cl, 8), "bogus8");
    for (int i = 0; i < SL_MAX_MODELS; i++)
        if (i != 7) assert_int_equal(sl_cluster_model_release(cl, i), 0);
    /* The node's own reference keeps its model. */
    assert_int_equal(sl_cluster_model_count(cl), 1);
    assert_int_equal(sl_cluster_model_find(cl, "A100"), 7);
    /* New names take the lowest free ids. */
    assert_int_equal(sl_cluster_model_intern(cl, "H100"), 0);
    assert_int_equal(sl_cluster_model_intern(cl, "L4"), 1);

    assert_int_equal(sl_cluster_check(cl), 0);
    sl_cluster_destroy(cl);

    /* Pools: "default" is never freed; a released pool's slot is reused. */
    cl = tu_cluster();
    assert_int_equal(sl_cluster_pool_release(cl, 0), SL_EINVAL); /* only its own reference */
    assert_int_equal(sl_cluster_pool_intern(cl, "default"), 0);
    assert_int_equal(sl_cluster_pool_release(cl, 0), 0);
    assert_string_equal(sl_cluster_pool_name(cl, 0), "default");
    for (int i = 1; i < SL_MAX_POOLS; i++) {
        char name[16];
        snprintf(name, sizeof name, "p%d", i);
        assert_int_equal(sl_cluster_pool_intern(cl, name), i);
    }
    assert_int_equal(sl_cluster_pool_count(cl), SL_MAX_POOLS);
    assert_int_equal(sl_cluster_pool_intern(cl, "gpu"), SL_ERANGE);
    assert_int_equal(sl_cluster_pool_release(cl, 500), 0);
    assert_int_equal(sl_cluster_pool_find(cl, "p500"), SL_ENOENT);
    assert_int_equal(sl_cluster_pool_intern(cl, "gpu"), 500);
    assert_int_equal(sl_cluster_pool_intern(cl, "p500"), SL_ERANGE);
    assert_int_equal(sl_cluster_check(cl), 0);
    sl_cluster_destroy(cl);
}

/* Interning and releasing in a seeded random order agrees with a naive
 * table of (name, count) pairs: every referenced name keeps its id, and a
 * full table refuses exactly when the reference table is full. */
static void test_cluster_names_random_vs_reference(void **state) {
    (void)state;
    for (uint64_t seed = 1; seed <= 20; seed++) {
        sl_cluster_t *cl = tu_cluster();
        sl_rng_t rng;
        sl_rng_seed(&rng, seed);
        int32_t refs[SL_MAX_MODELS] = {0};
        char names[SL_MAX_MODELS][16];
        int32_t used = 0;
        for (int step = 0; step < 2000; step++) {
            char name[16];
            snprintf(name, sizeof name, "m%u", (unsigned)sl_rng_below(&rng, 96));
            if (sl_rng_below(&rng, 2) == 0) {
                int32_t have = -1;
                for (int32_t i = 0; i < SL_MAX_MODELS; i++)
                    if (refs[i] > 0 && strcmp(names[i], name) == 0) have = i;
                int id = sl_cluster_model_intern(cl, name);
                if (have >= 0) {
                    assert_int_equal(id, have);
                    refs[id]++;
                } else if (used == SL_MAX_MODELS) {
                    assert_int_equal(id, SL_ERANGE);
                } else {
                    assert_true(id >= 0 && id < SL_MAX_MODELS);
                    assert_int_equal(refs[id], 0);
                    for (int32_t i = 0; i < id; i++) assert_true(refs[i] > 0); /* lowest free */
                    refs[id] = 1;
                    strcpy(names[id], name);
                    used++;
                }
            } else {
                int32_t id = (int32_t)sl_rng_below(&rng, SL_MAX_MODELS);
                int rc = sl_cluster_model_release(cl, id);
                assert_int_equal(rc, refs[id] > 0 ? 0 : SL_EINVAL);
                if (refs[id] > 0 && --refs[id] == 0) used--;
            }
            assert_int_equal(sl_cluster_model_count(cl), used);
        }
        for (int32_t i = 0; i < SL_MAX_MODELS; i++) {
            if (refs[i] > 0) assert_string_equal(sl_cluster_model_name(cl, i), names[i]);
            else assert_null(sl_cluster_model_name(cl, i));
        }
        sl_cluster_destroy(cl);
    }
}

static void test_cluster_node_state_names(void **state) {
    (void)state;
    sl_node_state_t st;
    static const sl_node_state_t all[] = {SL_NODE_UP, SL_NODE_DRAINING, SL_NODE_DOWN};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(sl_node_state_parse(sl_node_state_name(all[i]), &st), 0);
        assert_int_equal(st, all[i]);
    }
    assert_string_equal(sl_node_state_name(SL_NODE_DRAINING), "draining");
    assert_int_equal(sl_node_state_parse("UP", &st), SL_EINVAL);
    assert_int_equal(sl_node_state_parse(NULL, &st), SL_EINVAL);
}

/* ---- fitting ---- */

static void test_cluster_fits_each_dimension(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    uint32_t g = tu_node_add(cl, tu_node_spec("g", 16000, 64 * GIB, 4, "A100", 40 * GIB, "train"));
    uint32_t c = tu_node_add(cl, tu_node_spec("c", 16000, 64 * GIB, 0, NULL, 0, NULL));
    int train = sl_cluster_pool_find(cl, "train");
    int a100 = sl_cluster_model_find(cl, "A100");
    int v100 = sl_cluster_model_intern(cl, "V100");
    const sl_node_t *ng = sl_cluster_node(cl, g), *nc = sl_cluster_node(cl, c);

    sl_task_req_t r = tu_req("16", "64Gi", 0, "");
    assert_true(sl_node_fits(ng, &r));
    assert_true(sl_node_fits(nc, &r));
    r.cpu_milli = 16001;
    assert_false(sl_node_fits(ng, &r));
    r = tu_req("1", "64Gi", 0, "");
    r.mem_bytes += 1;
    assert_false(sl_node_fits(ng, &r));

    r = whole(4);
    assert_true(sl_node_fits(ng, &r));
    assert_false(sl_node_fits(nc, &r)); /* GPU request on a CPU node */
    r.gpus = 5;
    assert_false(sl_node_fits(ng, &r));
    r = share(999, 40 * GIB);
    assert_true(sl_node_fits(ng, &r));
    assert_false(sl_node_fits(nc, &r));
    r.gpu_mem_bytes = 40 * GIB + 1;
    assert_false(sl_node_fits(ng, &r));

    /* Model mask. */
    r = whole(1);
    r.model_mask = UINT64_C(1) << a100;
    assert_true(sl_node_fits(ng, &r));
    r.model_mask = UINT64_C(1) << v100;
    assert_false(sl_node_fits(ng, &r));
    r.model_mask = (UINT64_C(1) << v100) | (UINT64_C(1) << a100);
    assert_true(sl_node_fits(ng, &r));

    /* Pool. */
    r = tu_req("1", "", 0, "");
    r.pool = train;
    assert_true(sl_node_fits(ng, &r));
    assert_false(sl_node_fits(nc, &r));
    r.pool = 0;
    assert_false(sl_node_fits(ng, &r));
    assert_true(sl_node_fits(nc, &r));
    r.pool = -1;
    assert_true(sl_node_fits(ng, &r));

    /* State: only up nodes take work. */
    assert_int_equal(sl_cluster_set_state(cl, g, SL_NODE_DRAINING), 0);
    assert_false(sl_node_fits(ng, &r));
    assert_int_equal(sl_node_fit_count(ng, &r, 10), 0);
    assert_int_equal(sl_cluster_set_state(cl, g, SL_NODE_DOWN), 0);
    assert_false(sl_node_fits(ng, &r));
    assert_int_equal(sl_cluster_set_state(cl, g, SL_NODE_UP), 0);
    assert_true(sl_node_fits(ng, &r));
    assert_int_equal(sl_cluster_set_state(cl, 99, SL_NODE_UP), SL_ENOENT);
    sl_cluster_destroy(cl);
}

static void test_cluster_whole_gpu_needs_full_memory_free(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    uint32_t id = tu_node_add(cl, tu_node_spec("g", 16000, 64 * GIB, 1, "A100", 40 * GIB, NULL));
    sl_task_req_t s = share(1, GIB); /* tiny compute, some memory */
    sl_place_t pl;
    assert_int_equal(sl_node_choose_gpus(sl_cluster_node(cl, id), &s, &pl), SL_FIT);
    assert_int_equal(sl_cluster_alloc(cl, &s, &pl), 0);
    sl_task_req_t w = whole(1);
    assert_false(sl_node_fits(sl_cluster_node(cl, id), &w));
    assert_int_equal(sl_cluster_largest_gpu_block(cl, -1, 0), 0);
    sl_place_t wp = {.node = id, .gpu_mask = 1, .gpu_milli = 1000};
    assert_int_equal(sl_cluster_alloc(cl, &w, &wp), SL_ENOSPC);
    assert_int_equal(sl_cluster_release(cl, &s, &pl), 0);
    assert_true(sl_node_fits(sl_cluster_node(cl, id), &w));
    assert_int_equal(sl_cluster_largest_gpu_block(cl, -1, 0), 1);
    sl_cluster_destroy(cl);
}

/* The capacity of an empty node: its totals, whatever is allocated now,
 * under the same pool and GPU rules. */
static void test_cluster_empty_fit_count_uses_totals(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    uint32_t id = tu_node_add(cl, tu_node_spec("g", 64000, 256 * GIB, 2, "T4", 16 * GIB, NULL));
    uint32_t cpu = tu_node_add(cl, tu_node_spec("c", 64000, 256 * GIB, 0, NULL, 0, NULL));
    const sl_node_t *n = sl_cluster_node(cl, id);
    sl_task_req_t w = whole(1), r = share(300, 0);
    assert_int_equal(sl_node_empty_fit_count(n, &w, 100), 2);
    assert_int_equal(sl_node_empty_fit_count(n, &r, 100), 6);
    assert_int_equal(sl_node_empty_fit_count(n, &r, 5), 5);
    assert_int_equal(sl_node_empty_fit_count(n, &r, 0), 0);
    r.gpu_mem_bytes = 7 * GIB;
    assert_int_equal(sl_node_empty_fit_count(n, &r, 100), 4); /* GPU memory: 2 per GPU */
    /* Both GPUs taken: no task fits now, two would on the empty node. */
    sl_task_req_t both = whole(2);
    sl_place_t pl;
    assert_int_equal(sl_node_choose_gpus(n, &both, &pl), SL_FIT);
    assert_int_equal(sl_cluster_alloc(cl, &both, &pl), 0);
    assert_int_equal(sl_node_fit_count(n, &w, 100), 0);
    assert_int_equal(sl_node_empty_fit_count(n, &w, 100), 2);
    /* A node without GPUs holds no GPU task, empty or not; another pool none. */
    assert_int_equal(sl_node_empty_fit_count(sl_cluster_node(cl, cpu), &w, 100), 0);
    w.pool = n->pool + 1;
    assert_int_equal(sl_node_empty_fit_count(n, &w, 100), 0);
    sl_cluster_destroy(cl);
}

static void test_cluster_fit_count_packs_shares(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    uint32_t id = tu_node_add(cl, tu_node_spec("g", 64000, 256 * GIB, 2, "T4", 16 * GIB, NULL));
    const sl_node_t *n = sl_cluster_node(cl, id);
    sl_task_req_t r = share(300, 0);
    assert_int_equal(sl_node_fit_count(n, &r, 100), 6); /* 3 per GPU */
    assert_int_equal(sl_node_fit_count(n, &r, 4), 4);
    assert_int_equal(sl_node_fit_count(n, &r, 0), 0);
    r.gpu_mem_bytes = 7 * GIB;
    assert_int_equal(sl_node_fit_count(n, &r, 100), 4); /* memory: 2 per GPU */
    r = share(300, 0);
    r.cpu_milli = 16000;
    assert_int_equal(sl_node_fit_count(n, &r, 100), 4); /* CPU bound */
    r = whole(1);
    assert_int_equal(sl_node_fit_count(n, &r, 100), 2);
    r = whole(3);
    assert_int_equal(sl_node_fit_count(n, &r, 100), 0);
    r = tu_req("1", "", 0, "");
    assert_int_equal(sl_node_fit_count(n, &r, 1000), 64);
    r = tu_req("", "", 0, "");
    assert_int_equal(sl_node_fit_count(n, &r, 17), 17); /* empty request: the limit */

    /* Counting must agree with placing one by one. */
    r = share(400, 5 * GIB);
    int32_t predicted = sl_node_fit_count(n, &r, 100);
    int32_t placed = 0;
    sl_place_t pl;
    while (sl_node_choose_gpus(n, &r, &pl) == SL_FIT) {
        assert_int_equal(sl_cluster_alloc(cl, &r, &pl), 0);
        n = sl_cluster_node(cl, id);
        placed++;
    }
    assert_int_equal(predicted, placed);
    assert_int_equal(placed, 4);
    sl_cluster_destroy(cl);
}

static void test_cluster_choose_gpus_rules(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    uint32_t id = tu_node_add(cl, tu_node_spec("g", 64000, 256 * GIB, 4, "A100", 40 * GIB, NULL));
    sl_place_t pl;
    /* Whole GPUs: the lowest-numbered fully free ones. */
    sl_task_req_t s = share(200, GIB);
    sl_place_t sp = {.node = id, .gpu_mask = 1u << 1, .gpu_milli = 200, .gpu_mem_bytes = GIB};
    assert_int_equal(sl_cluster_alloc(cl, &s, &sp), 0);
    sl_task_req_t w = whole(2);
    assert_int_equal(sl_node_choose_gpus(sl_cluster_node(cl, id), &w, &pl), SL_FIT);
    assert_int_equal(pl.node, id);
    assert_int_equal(pl.gpu_mask, (1u << 0) | (1u << 2));
    assert_int_equal(pl.gpu_milli, 1000);

    /* Shares: best fit (least free compute that fits), lowest index on ties. */
    sl_task_req_t s2 = share(500, 0);
    sl_place_t p3 = {.node = id, .gpu_mask = 1u << 3, .gpu_milli = 500};
    assert_int_equal(sl_cluster_alloc(cl, &s2, &p3), 0); /* GPU 3: 500 free; GPU 1: 800 free */
    sl_task_req_t s3 = share(400, 0);
    assert_int_equal(sl_node_choose_gpus(sl_cluster_node(cl, id), &s3, &pl), SL_FIT);
    assert_int_equal(pl.gpu_mask, 1u << 3);
    assert_int_equal(pl.gpu_milli, 400);
    sl_task_req_t s4 = share(600, 0);
    assert_int_equal(sl_node_choose_gpus(sl_cluster_node(cl, id), &s4, &pl), SL_FIT);
    assert_int_equal(pl.gpu_mask, 1u << 1);
    sl_task_req_t s5 = share(900, 0); /* only fully free GPUs 0 and 2: lowest wins */
    assert_int_equal(sl_node_choose_gpus(sl_cluster_node(cl, id), &s5, &pl), SL_FIT);
    assert_int_equal(pl.gpu_mask, 1u << 0);
    sl_task_req_t s6 = share(500, 39 * GIB); /* GPU 1 has 39Gi free, GPU 3 has 40Gi */
    assert_int_equal(sl_node_choose_gpus(sl_cluster_node(cl, id), &s6, &pl), SL_FIT);
    assert_int_equal(pl.gpu_mask, 1u << 3);
    assert_int_equal(pl.gpu_mem_bytes, 39 * GIB);
    sl_task_req_t none = tu_req("1", "1Gi", 0, "");
    assert_int_equal(sl_node_choose_gpus(sl_cluster_node(cl, id), &none, &pl), SL_FIT);
    assert_int_equal(pl.gpu_mask, 0);
    sl_task_req_t big = whole(3);
    assert_int_equal(sl_node_choose_gpus(sl_cluster_node(cl, id), &big, &pl), SL_NOFIT);
    sl_cluster_destroy(cl);
}

/* ---- allocation ---- */

static void test_cluster_shares_never_exceed_1000(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    uint32_t id = tu_node_add(cl, tu_node_spec("g", 1000000, 1024 * GIB, 3, "A100", 80 * GIB, NULL));
    static const int32_t sizes[] = {300, 450, 100, 250, 999, 1, 700, 50};
    int32_t taken[3] = {0, 0, 0};
    for (int round = 0; round < 200; round++) {
        sl_task_req_t r = share(sizes[round % 8], 0);
        sl_place_t pl;
        if (sl_node_choose_gpus(sl_cluster_node(cl, id), &r, &pl) != SL_FIT) continue;
        assert_int_equal(sl_cluster_alloc(cl, &r, &pl), 0);
        taken[__builtin_ctz(pl.gpu_mask)] += r.gpu_milli;
    }
    const sl_node_t *n = sl_cluster_node(cl, id);
    for (int g = 0; g < 3; g++) {
        assert_true(taken[g] <= 1000);
        assert_int_equal(n->gpu_free[g], 1000 - taken[g]);
        /* Forcing one more milli than is free onto each GPU fails. */
        if (n->gpu_free[g] < 999) {
            sl_task_req_t r = share(n->gpu_free[g] + 1, 0);
            sl_place_t pl = {.node = id, .gpu_mask = 1u << g, .gpu_milli = r.gpu_milli};
            assert_int_equal(sl_cluster_alloc(cl, &r, &pl), SL_ENOSPC);
        }
    }
    assert_int_equal(sl_cluster_check(cl), 0);
    sl_cluster_destroy(cl);
}

static void test_cluster_alloc_more_than_free_changes_nothing(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    tu_add_nodes(cl, "n", 3, "8", "32Gi", 2, "T4", "16Gi", NULL);
    sl_task_req_t r = tu_req("6", "1Gi", 1, "");
    sl_place_t pl = {.node = 1, .gpu_mask = 1, .gpu_milli = 1000};
    assert_int_equal(sl_cluster_alloc(cl, &r, &pl), 0);
    sl_node_t before;
    memcpy(&before, sl_cluster_node(cl, 1), sizeof before);
    size_t classes = sl_cluster_class_count(cl);
    sl_res_t tot0, free0;
    sl_cluster_capacity(cl, &tot0, &free0);

    struct {
        sl_task_req_t req;
        sl_place_t pl;
        int rc;
    } cases[] = {
        {tu_req("3", "", 0, ""), {1, 0, 0, 0}, SL_ENOSPC},                 /* CPU */
        {tu_req("1", "32Gi", 0, ""), {1, 0, 0, 0}, SL_ENOSPC},             /* memory */
        {tu_req("1", "", 1, ""), {1, 1, 1000, 0}, SL_ENOSPC},              /* GPU taken */
        {tu_req("1", "", 2, ""), {1, 3, 1000, 0}, SL_ENOSPC},              /* one of two taken */
        {tu_req("1", "", 0, "0.5"), {1, 1, 500, 0}, SL_ENOSPC},            /* share on full GPU */
        {tu_req("1", "", 1, ""), {1, 2, 500, 0}, SL_EINVAL},               /* wrong milli */
        {tu_req("1", "", 2, ""), {1, 2, 1000, 0}, SL_EINVAL},              /* popcount */
        {tu_req("1", "", 1, ""), {1, 4, 1000, 0}, SL_EINVAL},              /* GPU 2 absent */
        {tu_req("1", "", 0, "0.5"), {1, 6, 500, 0}, SL_EINVAL},            /* share on 2 GPUs */
        {tu_req("1", "", 0, "0.5"), {1, 2, 400, 0}, SL_EINVAL},            /* share milli */
        {tu_req("1", "", 0, ""), {1, 2, 0, 0}, SL_EINVAL},                 /* mask, no GPU */
        {tu_req("1", "", 1, ""), {9, 2, 1000, 0}, SL_ENOENT},              /* node */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = sl_cluster_alloc(cl, &cases[i].req, &cases[i].pl);
        if (rc != cases[i].rc) fail_msg("case %zu: rc %d, want %d", i, rc, cases[i].rc);
        assert_memory_equal(&before, sl_cluster_node(cl, 1), sizeof before);
    }
    sl_task_req_t neg = tu_req("1", "", 0, "");
    neg.cpu_milli = -1000;
    sl_place_t p0 = {.node = 1};
    assert_int_equal(sl_cluster_alloc(cl, &neg, &p0), SL_EINVAL);
    assert_int_equal(sl_cluster_release(cl, &neg, &p0), SL_EINVAL);
    sl_task_req_t mixed = tu_req("1", "", 1, ""); /* whole GPUs and a share at once */
    mixed.gpu_milli = 500;
    sl_place_t p2 = {.node = 1, .gpu_mask = 2, .gpu_milli = 1000};
    assert_int_equal(sl_cluster_alloc(cl, &mixed, &p2), SL_EINVAL);
    assert_memory_equal(&before, sl_cluster_node(cl, 1), sizeof before);
    assert_int_equal(sl_cluster_class_count(cl), classes);
    sl_res_t tot1, free1;
    sl_cluster_capacity(cl, &tot1, &free1);
    assert_memory_equal(&tot0, &tot1, sizeof tot0);
    assert_memory_equal(&free0, &free1, sizeof free0);
    assert_int_equal(sl_cluster_check(cl), 0);
    sl_cluster_destroy(cl);
}

static void test_cluster_release_more_than_taken_fails(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    uint32_t id = tu_node_add(cl, tu_node_spec("g", 8000, 32 * GIB, 2, "T4", 16 * GIB, NULL));
    sl_task_req_t s = share(300, 2 * GIB);
    s.cpu_milli = 1000;
    sl_place_t pl;
    assert_int_equal(sl_node_choose_gpus(sl_cluster_node(cl, id), &s, &pl), SL_FIT);
    assert_int_equal(sl_cluster_alloc(cl, &s, &pl), 0);
    sl_node_t before;
    memcpy(&before, sl_cluster_node(cl, id), sizeof before);

    sl_task_req_t more = s;
    more.cpu_milli = 2000;
    assert_int_equal(sl_cluster_release(cl, &more, &pl), SL_EINVAL);
    more = s;
    more.gpu_milli = 301;
    sl_place_t p2 = pl;
    p2.gpu_milli = 301;
    assert_int_equal(sl_cluster_release(cl, &more, &p2), SL_EINVAL);
    sl_place_t other = pl;
    other.gpu_mask ^= 3; /* the untouched GPU */
    assert_int_equal(sl_cluster_release(cl, &s, &other), SL_EINVAL);
    sl_task_req_t w = whole(1);
    assert_int_equal(sl_cluster_release(cl, &w, &(sl_place_t){id, pl.gpu_mask, 1000, 0}), SL_EINVAL);
    assert_memory_equal(&before, sl_cluster_node(cl, id), sizeof before);

    assert_int_equal(sl_cluster_release(cl, &s, &pl), 0);
    assert_int_equal(sl_cluster_release(cl, &s, &pl), SL_EINVAL); /* twice */
    const sl_node_t *n = sl_cluster_node(cl, id);
    assert_int_equal(n->cpu_free, 8000);
    assert_int_equal(n->gpu_free[0], 1000);
    assert_int_equal(n->gpu_mem_free[0], 16 * GIB);
    assert_int_equal(sl_cluster_class_count(cl), 1);
    sl_cluster_destroy(cl);
}

static void test_cluster_alloc_works_on_down_nodes(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    uint32_t id = tu_node_add(cl, tu_node_spec("g", 8000, 32 * GIB, 2, "T4", 16 * GIB, NULL));
    assert_int_equal(sl_cluster_set_state(cl, id, SL_NODE_DOWN), 0);
    assert_int_equal(sl_cluster_class_count(cl), 0);
    sl_task_req_t w = whole(2);
    sl_place_t pl = {.node = id, .gpu_mask = 3, .gpu_milli = 1000};
    assert_int_equal(sl_cluster_alloc(cl, &w, &pl), 0); /* re-adopting a running task */
    assert_int_equal(sl_cluster_class_count(cl), 0);
    assert_int_equal(sl_cluster_check(cl), 0);
    assert_int_equal(sl_cluster_set_state(cl, id, SL_NODE_UP), 0);
    assert_int_equal(sl_cluster_class_count(cl), 1);
    assert_int_equal(sl_cluster_node(cl, id)->gpu_free[1], 0);
    assert_int_equal(sl_cluster_largest_gpu_block(cl, -1, 0), 0);
    assert_int_equal(sl_cluster_release(cl, &w, &pl), 0);
    assert_int_equal(sl_cluster_largest_gpu_block(cl, -1, 0), 2);
    assert_int_equal(sl_cluster_check(cl), 0);
    sl_cluster_destroy(cl);
}

/* ---- capacity and the index ---- */

static void test_cluster_capacity_counts_up_and_draining(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    tu_add_nodes(cl, "n", 3, "8", "32Gi", 2, "T4", "16Gi", NULL);
    sl_res_t t, f;
    sl_cluster_capacity(cl, &t, &f);
    assert_int_equal(t.cpu_milli, 24000);
    assert_int_equal(t.mem_bytes, 96 * GIB);
    assert_int_equal(t.gpu_milli, 6000);
    assert_memory_equal(&t, &f, sizeof t);
    sl_task_req_t r = tu_req("2", "4Gi", 0, "0.25");
    sl_place_t pl = {.node = 0, .gpu_mask = 2, .gpu_milli = 250};
    assert_int_equal(sl_cluster_alloc(cl, &r, &pl), 0);
    sl_cluster_capacity(cl, &t, &f);
    assert_int_equal(f.cpu_milli, 22000);
    assert_int_equal(f.mem_bytes, 92 * GIB);
    assert_int_equal(f.gpu_milli, 5750);
    assert_int_equal(sl_cluster_set_state(cl, 0, SL_NODE_DRAINING), 0);
    sl_cluster_capacity(cl, &t, &f);
    assert_int_equal(t.gpu_milli, 6000);
    assert_int_equal(f.gpu_milli, 5750);
    assert_int_equal(sl_cluster_set_state(cl, 1, SL_NODE_DOWN), 0);
    sl_cluster_capacity(cl, &t, &f);
    assert_int_equal(t.cpu_milli, 16000);
    assert_int_equal(f.gpu_milli, 3750);
    sl_cluster_capacity(cl, NULL, NULL);
    sl_cluster_destroy(cl);
}

static void test_cluster_identical_nodes_form_one_class(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    tu_add_nodes(cl, "n", 1000, "64", "512Gi", 8, "A100", "80Gi", NULL);
    assert_int_equal(sl_cluster_class_count(cl), 1);
    assert_int_equal(sl_cluster_class_size(cl, 0), 1000);
    assert_int_equal(sl_cluster_class_rep(cl, 0)->id, 0);
    assert_null(sl_cluster_class_rep(cl, 1));
    assert_int_equal(sl_cluster_class_size(cl, 1), 0);

    /* One task on GPU 0 of node 5 and one on GPU 7 of node 6: same multiset. */
    sl_task_req_t r = share(500, 10 * GIB);
    sl_place_t a = {.node = 5, .gpu_mask = 1u << 0, .gpu_milli = 500, .gpu_mem_bytes = 10 * GIB};
    sl_place_t b = {.node = 6, .gpu_mask = 1u << 7, .gpu_milli = 500, .gpu_mem_bytes = 10 * GIB};
    assert_int_equal(sl_cluster_alloc(cl, &r, &a), 0);
    assert_int_equal(sl_cluster_class_count(cl), 2);
    assert_int_equal(sl_cluster_alloc(cl, &r, &b), 0);
    assert_int_equal(sl_cluster_class_count(cl), 2);
    size_t ci = sl_cluster_class_size(cl, 0) == 2 ? 0 : 1;
    assert_int_equal(sl_cluster_class_size(cl, ci), 2);
    assert_int_equal(sl_cluster_class_size(cl, 1 - ci), 998);
    uint32_t m0 = sl_cluster_class_node(cl, ci, 0), m1 = sl_cluster_class_node(cl, ci, 1);
    assert_true((m0 == 5 && m1 == 6) || (m0 == 6 && m1 == 5));
    assert_int_equal(sl_cluster_class_node(cl, ci, 2), UINT32_MAX);

    /* Different pools never share a class, even when otherwise identical. */
    tu_add_nodes(cl, "p", 10, "64", "512Gi", 8, "A100", "80Gi", "other");
    assert_int_equal(sl_cluster_class_count(cl), 3);
    assert_int_equal(sl_cluster_check(cl), 0);

    assert_int_equal(sl_cluster_release(cl, &r, &a), 0);
    assert_int_equal(sl_cluster_release(cl, &r, &b), 0);
    assert_int_equal(sl_cluster_class_count(cl), 2);
    assert_int_equal(sl_cluster_check(cl), 0);
    sl_cluster_destroy(cl);
}

static void test_cluster_largest_gpu_block(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    tu_add_nodes(cl, "a", 2, "64", "512Gi", 8, "A100", "80Gi", NULL);
    tu_add_nodes(cl, "v", 2, "64", "512Gi", 4, "V100", "32Gi", "v");
    int a100 = sl_cluster_model_find(cl, "A100"), v100 = sl_cluster_model_find(cl, "V100");
    int vp = sl_cluster_pool_find(cl, "v");
    assert_int_equal(sl_cluster_largest_gpu_block(cl, -1, 0), 8);
    assert_int_equal(sl_cluster_largest_gpu_block(cl, vp, 0), 4);
    assert_int_equal(sl_cluster_largest_gpu_block(cl, -1, UINT64_C(1) << v100), 4);
    assert_int_equal(sl_cluster_largest_gpu_block(cl, vp, UINT64_C(1) << a100), 0);
    sl_task_req_t w = whole(3);
    sl_place_t p0 = {.node = 0, .gpu_mask = 0x7, .gpu_milli = 1000};
    sl_place_t p1 = {.node = 1, .gpu_mask = 0x70, .gpu_milli = 1000};
    assert_int_equal(sl_cluster_alloc(cl, &w, &p0), 0);
    assert_int_equal(sl_cluster_largest_gpu_block(cl, 0, 0), 8);
    assert_int_equal(sl_cluster_alloc(cl, &w, &p1), 0);
    assert_int_equal(sl_cluster_largest_gpu_block(cl, 0, 0), 5);
    assert_int_equal(sl_cluster_set_state(cl, 0, SL_NODE_DOWN), 0);
    assert_int_equal(sl_cluster_set_state(cl, 1, SL_NODE_DRAINING), 0);
    assert_int_equal(sl_cluster_largest_gpu_block(cl, 0, 0), 0);
    assert_int_equal(sl_cluster_largest_gpu_block(cl, -1, 0), 4);
    sl_cluster_destroy(cl);
}

/* ---- differential test against a naive reference ---- */

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_cluster_add_and_find, tu_teardown),
        cmocka_unit_test_teardown(test_cluster_add_many_names_stay_findable, tu_teardown),
        cmocka_unit_test_teardown(test_cluster_add_duplicate_name, tu_teardown),
        cmocka_unit_test_teardown(test_cluster_add_bad_specs, tu_teardown),
        cmocka_unit_test_teardown(test_cluster_pools_and_models_intern, tu_teardown),
        cmocka_unit_test_teardown(test_cluster_names_release_and_reuse, tu_teardown),
        cmocka_unit_test_teardown(test_cluster_names_random_vs_reference, tu_teardown),
        cmocka_unit_test_teardown(test_cluster_node_state_names, tu_teardown),
        cmocka_unit_test_teardown(test_cluster_fits_each_dimension, tu_teardown),
        cmocka_unit_test_teardown(test_cluster_whole_gpu_needs_full_memory_free, tu_teardown),
        cmocka_unit_test_teardown(test_cluster_empty_fit_count_uses_totals, tu_teardown),
        cmocka_unit_test_teardown(test_cluster_fit_count_packs_shares, tu_teardown),
        cmocka_unit_test_teardown(test_cluster_choose_gpus_rules, tu_teardown),
        cmocka_unit_test_teardown(test_cluster_shares_never_exceed_1000, tu_teardown),
        cmocka_unit_test_teardown(test_cluster_alloc_more_than_free_changes_nothing, tu_teardown),
        cmocka_unit_test_teardown(test_cluster_release_more_than_taken_fails, tu_teardown),
        cmocka_unit_test_teardown(test_cluster_alloc_works_on_down_nodes, tu_teardown),
        cmocka_unit_test_teardown(test_cluster_capacity_counts_up_and_draining, tu_teardown),
        cmocka_unit_test_teardown(test_cluster_identical_nodes_form_one_class, tu_teardown),
        cmocka_unit_test_teardown(test_cluster_largest_gpu_block, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
