/*
 * test_cluster.c - nodes, interning, fitting, allocation and the
 * free-capacity class index.
 *
 * The index is an optimisation, so it is checked the SQLite bitvec way: a
 * seeded random sequence of allocations, releases and state changes runs
 * against the cluster and against a naive reference kept here in plain
 * arrays; after every step the two must agree on every node, on what fits,
 * on capacity, on the partition of up nodes into classes, on each class's
 * summary and bucket (cluster_index.h) and on which classes a bucketed
 * search finds for a request, and sl_cluster_check() must pass.
 */
#include <stdio.h>
#include <string.h>

#include "cluster_index.h"
#include "testutil.h"

#define GIB (INT64_C(1) << 30)

static sl_cluster_t *mk(void) {
    sl_cluster_t *cl = NULL;
    assert_int_equal(sl_cluster_create(&cl), 0);
    assert_non_null(cl);
    return cl;
}

static sl_node_spec_t spec(const char *name, int64_t cpu, int64_t mem, int32_t gpus,
                           const char *model, int64_t gpu_mem, const char *pool) {
    return (sl_node_spec_t){.name = name, .cpu_milli = cpu, .mem_bytes = mem, .gpus = gpus,
                            .gpu_model = model, .gpu_mem_bytes = gpu_mem, .pool = pool};
}

static uint32_t add(sl_cluster_t *cl, sl_node_spec_t sp) {
    uint32_t id = UINT32_MAX;
    char err[128] = "";
    int rc = sl_cluster_add_node(cl, &sp, &id, err, sizeof err);
    if (rc) fail_msg("add %s: %s", sp.name, err);
    return id;
}

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
    sl_cluster_t *cl = mk();
    sl_node_spec_t a = spec("gpu-a", 64000, 256 * GIB, 8, "A100", 80 * GIB, NULL);
    a.labels = "rack=r1,zone=z";
    uint32_t ia = add(cl, a);
    uint32_t ib = add(cl, spec("cpu-b", 32000, 128 * GIB, 0, NULL, 0, "batch"));
    uint32_t ic = add(cl, spec("gpu-c", 16000, 64 * GIB, 2, "T4", 16 * GIB, ""));
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
    sl_cluster_t *cl = mk();
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
    sl_cluster_t *cl = mk();
    add(cl, spec("x", 1000, GIB, 0, NULL, 0, NULL));
    sl_node_spec_t sp = spec("x", 2000, GIB, 1, "A100", GIB, "other");
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
        {spec("", 1000, GIB, 0, NULL, 0, NULL), "empty"},
        {spec(NULL, 1000, GIB, 0, NULL, 0, NULL), "empty"},
        {spec(long_name, 1000, GIB, 0, NULL, 0, NULL), "63"},
        {spec("n", -1, GIB, 0, NULL, 0, NULL), "cpu_milli"},
        {spec("n", 1000, -1, 0, NULL, 0, NULL), "mem_bytes"},
        {spec("n", 1000, GIB, 17, "A100", GIB, NULL), "gpus"},
        {spec("n", 1000, GIB, -1, "A100", GIB, NULL), "gpus"},
        {spec("n", 1000, GIB, 2, NULL, GIB, NULL), "gpu_model"},
        {spec("n", 1000, GIB, 2, "", GIB, NULL), "gpu_model"},
        {spec("n", 1000, GIB, 2, long_name, GIB, NULL), "gpu_model"},
        {spec("n", 1000, GIB, 2, "A100", -1, NULL), "gpu_mem_bytes"},
        {spec("n", 1000, GIB, 0, NULL, 0, long_name), "pool"},
    };
    sl_cluster_t *cl = mk();
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
    sl_cluster_t *cl = mk();
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
    uint32_t id = add(cl, spec("h", 1000, GIB, 1, "H100", GIB, NULL));
    assert_int_equal(sl_cluster_node(cl, id)->model, 0);
    for (int i = 1; i < SL_MAX_MODELS; i++) {
        char name[16];
        snprintf(name, sizeof name, "m%d", i);
        assert_int_equal(sl_cluster_model_intern(cl, name), i);
    }
    assert_int_equal(sl_cluster_model_intern(cl, "one-too-many"), SL_ERANGE);
    assert_int_equal(sl_cluster_model_intern(cl, "m5"), 5); /* existing still found */
    sl_node_spec_t sp = spec("z", 1000, GIB, 1, "new-model", GIB, "new-pool");
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
    sl_cluster_t *cl = mk();
    uint32_t g = add(cl, spec("g", 16000, 64 * GIB, 4, "A100", 40 * GIB, "train"));
    uint32_t c = add(cl, spec("c", 16000, 64 * GIB, 0, NULL, 0, NULL));
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
    sl_cluster_t *cl = mk();
    uint32_t id = add(cl, spec("g", 16000, 64 * GIB, 1, "A100", 40 * GIB, NULL));
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

static void test_cluster_fit_count_packs_shares(void **state) {
    (void)state;
    sl_cluster_t *cl = mk();
    uint32_t id = add(cl, spec("g", 64000, 256 * GIB, 2, "T4", 16 * GIB, NULL));
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
    sl_cluster_t *cl = mk();
    uint32_t id = add(cl, spec("g", 64000, 256 * GIB, 4, "A100", 40 * GIB, NULL));
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
    sl_cluster_t *cl = mk();
    uint32_t id = add(cl, spec("g", 1000000, 1024 * GIB, 3, "A100", 80 * GIB, NULL));
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
    sl_cluster_t *cl = mk();
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
    sl_cluster_t *cl = mk();
    uint32_t id = add(cl, spec("g", 8000, 32 * GIB, 2, "T4", 16 * GIB, NULL));
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
    sl_cluster_t *cl = mk();
    uint32_t id = add(cl, spec("g", 8000, 32 * GIB, 2, "T4", 16 * GIB, NULL));
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
    sl_cluster_t *cl = mk();
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
    sl_cluster_t *cl = mk();
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
    sl_cluster_t *cl = mk();
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

#define RN 48 /* nodes */

typedef struct shape {
    int64_t cpu, mem, gpu_mem;
    int32_t gpus;
    const char *model, *pool;
} shape_t;

static const shape_t shapes[] = {
    {64000, 512 * GIB, 80 * GIB, 8, "A100", NULL},
    {32000, 256 * GIB, 16 * GIB, 4, "V100", "v"},
    {16000, 64 * GIB, 16 * GIB, 2, "T4", NULL},
    {96000, 384 * GIB, 0, 0, NULL, NULL},
    {128000, 1024 * GIB, 24 * GIB, 16, "A10", "v"},
    {8000, 32 * GIB, 40 * GIB, 1, "A100", NULL},
};
#define NSHAPES (sizeof shapes / sizeof shapes[0])

typedef struct ref {
    const shape_t *sh;
    int32_t pool, model;
    sl_node_state_t st;
    int64_t cpu_free, mem_free;
    int32_t gf[SL_MAX_GPUS_PER_NODE];
    int64_t gm[SL_MAX_GPUS_PER_NODE];
} ref_t;

typedef struct live {
    sl_task_req_t req;
    sl_place_t pl;
} live_t;

static bool ref_full(const ref_t *r, int g) {
    return r->gf[g] == 1000 && r->gm[g] == r->sh->gpu_mem;
}

static bool ref_fits(const ref_t *r, const sl_task_req_t *q) {
    if (r->st != SL_NODE_UP) return false;
    if (q->pool != -1 && q->pool != r->pool) return false;
    if (q->model_mask && (r->model < 0 || !((q->model_mask >> r->model) & 1))) return false;
    bool wants = q->gpus > 0 || q->gpu_milli > 0;
    if (wants && r->sh->gpus == 0) return false;
    if (r->cpu_free < q->cpu_milli || r->mem_free < q->mem_bytes) return false;
    int full = 0, fit = 0;
    for (int g = 0; g < r->sh->gpus; g++) {
        full += ref_full(r, g);
        fit += r->gf[g] >= q->gpu_milli && r->gm[g] >= q->gpu_mem_bytes;
    }
    if (q->gpus > 0) return full >= q->gpus;
    if (q->gpu_milli > 0) return fit > 0;
    return true;
}

/* The reference choice, written from the rule rather than from the code. */
static uint32_t ref_choose(const ref_t *r, const sl_task_req_t *q) {
    uint32_t mask = 0;
    if (q->gpus > 0) {
        for (int g = 0, need = q->gpus; g < r->sh->gpus && need; g++)
            if (ref_full(r, g)) mask |= 1u << g, need--;
    } else if (q->gpu_milli > 0) {
        int best = -1;
        for (int g = 0; g < r->sh->gpus; g++) {
            if (r->gf[g] < q->gpu_milli || r->gm[g] < q->gpu_mem_bytes) continue;
            if (best < 0 || r->gf[g] < r->gf[best]) best = g;
        }
        mask = 1u << best;
    }
    return mask;
}

/* Expected result of alloc (sign +1) or release (-1) on the reference; applies it on success. */
static int ref_apply(ref_t *r, const sl_task_req_t *q, const sl_place_t *pl, int sign) {
    int pc = __builtin_popcount(pl->gpu_mask);
    if (pl->gpu_mask >> r->sh->gpus) return SL_EINVAL;
    if (q->gpus > 0 && (pc != q->gpus || pl->gpu_milli != 1000)) return SL_EINVAL;
    if (q->gpus == 0 && q->gpu_milli > 0 && (pc != 1 || pl->gpu_milli != q->gpu_milli)) return SL_EINVAL;
    if (q->gpus == 0 && q->gpu_milli == 0 && pc != 0) return SL_EINVAL;
    int64_t dm = q->gpus > 0 ? 1000 : q->gpu_milli;
    for (int g = 0; g < r->sh->gpus; g++) {
        if (!((pl->gpu_mask >> g) & 1)) continue;
        int64_t dmem = q->gpus > 0 ? r->sh->gpu_mem : q->gpu_mem_bytes;
        if (sign > 0) {
            if (q->gpus > 0 ? !ref_full(r, g) : (r->gf[g] < dm || r->gm[g] < dmem)) return SL_ENOSPC;
        } else {
            if (r->gf[g] + dm > 1000 || r->gm[g] + dmem > r->sh->gpu_mem) return SL_EINVAL;
        }
    }
    if (sign > 0 && (r->cpu_free < q->cpu_milli || r->mem_free < q->mem_bytes)) return SL_ENOSPC;
    if (sign < 0 && (r->cpu_free + q->cpu_milli > r->sh->cpu || r->mem_free + q->mem_bytes > r->sh->mem))
        return SL_EINVAL;
    r->cpu_free -= sign * q->cpu_milli;
    r->mem_free -= sign * q->mem_bytes;
    for (int g = 0; g < r->sh->gpus; g++) {
        if (!((pl->gpu_mask >> g) & 1)) continue;
        r->gf[g] -= (int32_t)(sign * dm);
        r->gm[g] -= sign * (q->gpus > 0 ? r->sh->gpu_mem : q->gpu_mem_bytes);
    }
    return 0;
}

static bool ref_same_state(const ref_t *a, const ref_t *b) {
    if (a->sh->gpus != b->sh->gpus || a->sh->cpu != b->sh->cpu || a->sh->mem != b->sh->mem ||
        a->sh->gpu_mem != b->sh->gpu_mem || a->pool != b->pool || a->model != b->model ||
        a->cpu_free != b->cpu_free || a->mem_free != b->mem_free)
        return false;
    /* Multisets of (free milli, free memory): match each of a to an unused equal one of b. */
    bool used[SL_MAX_GPUS_PER_NODE] = {false};
    for (int i = 0; i < a->sh->gpus; i++) {
        int j = 0;
        while (j < b->sh->gpus && (used[j] || b->gf[j] != a->gf[i] || b->gm[j] != a->gm[i])) j++;
        if (j == b->sh->gpus) return false;
        used[j] = true;
    }
    return true;
}

static sl_task_req_t random_req(sl_rng_t *rng, sl_cluster_t *cl) {
    static const int64_t cpus[] = {0, 1000, 4000, 16000, 40000};
    static const int64_t mems[] = {0, GIB, 16 * GIB, 100 * GIB};
    static const int32_t millis[] = {100, 250, 300, 500, 700, 999};
    static const int64_t gmems[] = {0, GIB, 8 * GIB, 20 * GIB};
    sl_task_req_t q;
    sl_task_req_init(&q);
    q.cpu_milli = cpus[sl_rng_below(rng, 5)];
    q.mem_bytes = mems[sl_rng_below(rng, 4)];
    switch (sl_rng_below(rng, 3)) {
    case 0: break;
    case 1: q.gpus = 1 + (int32_t)sl_rng_below(rng, 8); break;
    default:
        q.gpu_milli = millis[sl_rng_below(rng, 6)];
        q.gpu_mem_bytes = gmems[sl_rng_below(rng, 4)];
    }
    if (sl_rng_below(rng, 5) == 0)
        q.model_mask = UINT64_C(1) << sl_rng_below(rng, sl_cluster_model_count(cl));
    if (sl_rng_below(rng, 5) == 0) q.pool = (int32_t)sl_rng_below(rng, 2);
    return q;
}

static void compare_all(sl_cluster_t *cl, ref_t *refs, sl_rng_t *rng) {
    assert_int_equal(sl_cluster_check(cl), 0);
    sl_res_t tot = {0, 0, 0}, fr = {0, 0, 0};
    int up = 0;
    for (int i = 0; i < RN; i++) {
        const sl_node_t *n = sl_cluster_node(cl, (uint32_t)i);
        const ref_t *r = &refs[i];
        assert_int_equal(n->state, r->st);
        assert_int_equal(n->cpu_free, r->cpu_free);
        assert_int_equal(n->mem_free, r->mem_free);
        for (int g = 0; g < r->sh->gpus; g++) {
            assert_int_equal(n->gpu_free[g], r->gf[g]);
            assert_int_equal(n->gpu_mem_free[g], r->gm[g]);
        }
        if (r->st != SL_NODE_DOWN) {
            tot = sl_res_add(tot, (sl_res_t){r->sh->cpu, r->sh->mem, r->sh->gpus * 1000});
            int64_t gsum = 0;
            for (int g = 0; g < r->sh->gpus; g++) gsum += r->gf[g];
            fr = sl_res_add(fr, (sl_res_t){r->cpu_free, r->mem_free, gsum});
        }
        up += r->st == SL_NODE_UP;
    }
    sl_res_t t2, f2;
    sl_cluster_capacity(cl, &t2, &f2);
    assert_memory_equal(&tot, &t2, sizeof tot);
    assert_memory_equal(&fr, &f2, sizeof fr);

    /* The classes partition the up nodes by exactly the reference's notion of state. */
    int seen = 0;
    size_t nc = sl_cluster_class_count(cl);
    for (size_t c = 0; c < nc; c++) {
        const sl_node_t *rep = sl_cluster_class_rep(cl, c);
        assert_int_equal(rep->id, sl_cluster_class_node(cl, c, 0));
        for (uint32_t k = 0; k < sl_cluster_class_size(cl, c); k++) {
            uint32_t id = sl_cluster_class_node(cl, c, k);
            assert_true(id < RN);
            assert_int_equal(refs[id].st, SL_NODE_UP);
            assert_true(ref_same_state(&refs[id], &refs[rep->id]));
            seen++;
        }
        for (size_t d = c + 1; d < nc; d++)
            assert_false(ref_same_state(&refs[rep->id], &refs[sl_cluster_class_rep(cl, d)->id]));
    }
    assert_int_equal(seen, up);

    /* Summaries and buckets, recomputed from the reference. */
    const sl__class_t *sum = sl__cluster_classes(cl);
    const sl__class_id_t *ids = sl__cluster_class_ids(cl);
    const uint32_t *bs = sl__cluster_buckets(cl);
    assert_int_equal(bs[0], 0);
    assert_int_equal(bs[SL__NBUCKETS], nc);
    for (size_t c = 0; c < nc; c++) {
        const ref_t *r = &refs[sl_cluster_class_rep(cl, c)->id];
        int full = 0, smax = 0, gsum = 0;
        for (int g = 0; g < r->sh->gpus; g++) {
            full += ref_full(r, g);
            if (r->gf[g] > smax) smax = r->gf[g];
            gsum += r->gf[g];
        }
        assert_int_equal(sum[c].rep, sl_cluster_class_rep(cl, c)->id);
        assert_int_equal(ids[c].size, sl_cluster_class_size(cl, c));
        assert_int_equal(sum[c].cpu_free, r->cpu_free);
        assert_int_equal(sum[c].mem_free, r->mem_free);
        assert_int_equal(sum[c].full_free, full);
        assert_int_equal(sum[c].share_max, smax);
        assert_int_equal(sum[c].gpu_free, gsum);
        assert_int_equal(sum[c].pool, r->pool);
        assert_int_equal(sum[c].model, r->model);
        int b = full > 0 ? 9 + full : (smax / 100 < 9 ? smax / 100 : 9);
        assert_true(bs[b] <= c && c < bs[b + 1]);
        for (size_t d = 0; d < c; d++) assert_true(ids[d].uid != ids[c].uid);
    }
    /* A bucketed search (first bucket on, summary filter, node check for
     * shares with GPU memory) finds exactly the classes whose nodes fit. */
    for (int k = 0; k < 2; k++) {
        sl_task_req_t q = random_req(rng, cl);
        bool hit[RN] = {false};
        for (uint32_t c = bs[sl__first_bucket(&q) < SL__NBUCKETS ? sl__first_bucket(&q) : SL__NBUCKETS];
             c < nc; c++) {
            if (!sl__class_fits(&sum[c], &q)) continue;
            if (q.gpu_mem_bytes > 0 && !sl_node_fits(sl_cluster_class_rep(cl, c), &q)) continue;
            for (uint32_t m = 0; m < sl_cluster_class_size(cl, c); m++) hit[sl_cluster_class_node(cl, c, m)] = true;
        }
        for (int i = 0; i < RN; i++) assert_int_equal(hit[i], ref_fits(&refs[i], &q));
    }

    /* Fitting agrees with the reference for a few random requests on every node. */
    for (int k = 0; k < 2; k++) {
        sl_task_req_t q = random_req(rng, cl);
        for (int i = 0; i < RN; i++) {
            const sl_node_t *n = sl_cluster_node(cl, (uint32_t)i);
            bool fits = ref_fits(&refs[i], &q);
            assert_int_equal(sl_node_fits(n, &q), fits);
            assert_int_equal(sl_node_fit_count(n, &q, 1000) > 0, fits);
            sl_place_t pl;
            int st = sl_node_choose_gpus(n, &q, &pl);
            assert_int_equal(st, fits ? SL_FIT : SL_NOFIT);
            if (fits) {
                assert_int_equal(pl.node, (uint32_t)i);
                assert_int_equal(pl.gpu_mask, ref_choose(&refs[i], &q));
            }
        }
    }
}

static void run_random(sl_cluster_t *cl, ref_t *refs, uint64_t seed, int steps, bool compare) {
    sl_rng_t rng;
    sl_rng_seed(&rng, seed);
    for (int i = 0; i < RN; i++) {
        const shape_t *sh = &shapes[i % NSHAPES];
        char name[32];
        snprintf(name, sizeof name, "node-%02d", i);
        add(cl, spec(name, sh->cpu, sh->mem, sh->gpus, sh->model, sh->gpu_mem, sh->pool));
        ref_t *r = &refs[i];
        memset(r, 0, sizeof *r);
        r->sh = sh;
        r->pool = sh->pool ? sl_cluster_pool_find(cl, sh->pool) : 0;
        r->model = sh->model ? sl_cluster_model_find(cl, sh->model) : -1;
        r->st = SL_NODE_UP;
        r->cpu_free = sh->cpu;
        r->mem_free = sh->mem;
        for (int g = 0; g < sh->gpus; g++) r->gf[g] = 1000, r->gm[g] = sh->gpu_mem;
    }
    live_t *lv = sl_xmalloc(sizeof *lv * 4096);
    int nlive = 0;
    for (int step = 0; step < steps; step++) {
        uint64_t op = sl_rng_below(&rng, 100);
        uint32_t id = (uint32_t)sl_rng_below(&rng, RN);
        ref_t *r = &refs[id];
        if (op < 45) { /* place one task where the default rule says */
            sl_task_req_t q = random_req(&rng, cl);
            sl_place_t pl;
            if (sl_node_choose_gpus(sl_cluster_node(cl, id), &q, &pl) == SL_FIT) {
                int want = ref_apply(r, &q, &pl, +1);
                assert_int_equal(want, 0);
                assert_int_equal(sl_cluster_alloc(cl, &q, &pl), 0);
                if (nlive < 4096) lv[nlive++] = (live_t){q, pl};
            }
        } else if (op < 55) { /* a forced placement, often over-allocating or malformed */
            sl_task_req_t q = random_req(&rng, cl);
            uint32_t ng = (uint32_t)r->sh->gpus + 1;
            sl_place_t pl = {.node = id, .gpu_mask = (uint32_t)sl_rng_below(&rng, 1u << ng)};
            pl.gpu_milli = q.gpus > 0 ? 1000 : q.gpu_milli;
            if (q.gpus > 0 && sl_rng_below(&rng, 2) == 0) {
                pl.gpu_mask = 0; /* a well-formed mask of the right size at random */
                for (int g = 0; g < r->sh->gpus && __builtin_popcount(pl.gpu_mask) < q.gpus; g++)
                    if (sl_rng_below(&rng, 2)) pl.gpu_mask |= 1u << g;
            } else if (q.gpu_milli > 0 && r->sh->gpus > 0) {
                pl.gpu_mask = 1u << sl_rng_below(&rng, (uint64_t)r->sh->gpus);
            } else if (q.gpus == 0 && q.gpu_milli == 0) {
                pl.gpu_mask = 0;
            }
            int want = ref_apply(r, &q, &pl, +1);
            assert_int_equal(sl_cluster_alloc(cl, &q, &pl), want);
            if (want == 0 && nlive < 4096) lv[nlive++] = (live_t){q, pl};
        } else if (op < 90) { /* finish a task */
            if (nlive == 0) continue;
            uint32_t k = (uint32_t)sl_rng_below(&rng, (uint64_t)nlive);
            live_t l = lv[k];
            lv[k] = lv[--nlive];
            assert_int_equal(ref_apply(&refs[l.pl.node], &l.req, &l.pl, -1), 0);
            assert_int_equal(sl_cluster_release(cl, &l.req, &l.pl), 0);
            if (sl_rng_below(&rng, 8) == 0) { /* releasing it again may not free more than taken */
                int want = ref_apply(&refs[l.pl.node], &l.req, &l.pl, -1);
                assert_int_equal(sl_cluster_release(cl, &l.req, &l.pl), want);
                if (want == 0) { /* it freed another task's equal share: take it back */
                    assert_int_equal(ref_apply(&refs[l.pl.node], &l.req, &l.pl, +1), 0);
                    assert_int_equal(sl_cluster_alloc(cl, &l.req, &l.pl), 0);
                }
            }
        } else { /* change a node's state */
            sl_node_state_t st = (sl_node_state_t)sl_rng_below(&rng, 3);
            if (st != SL_NODE_UP && sl_rng_below(&rng, 2)) st = SL_NODE_UP; /* mostly up */
            assert_int_equal(sl_cluster_set_state(cl, id, st), 0);
            r->st = st;
        }
        if (compare) compare_all(cl, refs, &rng);
    }
    /* Drain everything: the cluster must come back to empty, one class per shape. */
    while (nlive > 0) {
        live_t l = lv[--nlive];
        assert_int_equal(ref_apply(&refs[l.pl.node], &l.req, &l.pl, -1), 0);
        assert_int_equal(sl_cluster_release(cl, &l.req, &l.pl), 0);
    }
    for (uint32_t i = 0; i < RN; i++) assert_int_equal(sl_cluster_set_state(cl, i, SL_NODE_UP), 0);
    if (compare) {
        assert_int_equal(sl_cluster_class_count(cl), NSHAPES);
        sl_res_t t, f;
        sl_cluster_capacity(cl, &t, &f);
        assert_memory_equal(&t, &f, sizeof t);
    }
    sl_free(lv);
}

static void test_cluster_random_ops_match_reference(void **state) {
    (void)state;
    for (uint64_t seed = 1; seed <= 4; seed++) {
        sl_cluster_t *cl = mk();
        ref_t refs[RN];
        run_random(cl, refs, seed, 5000, true);
        sl_cluster_destroy(cl);
    }
}

static void test_cluster_same_calls_same_index(void **state) {
    (void)state;
    sl_cluster_t *a = mk(), *b = mk();
    ref_t ra[RN], rb[RN];
    run_random(a, ra, 99, 3000, false);
    run_random(b, rb, 99, 3000, false);
    /* Midway state is compared through a second run that stops early. */
    sl_cluster_t *c = mk(), *d = mk();
    run_random(c, ra, 5, 1234, false);
    run_random(d, rb, 5, 1234, false);
    sl_cluster_t *pairs[2][2] = {{a, b}, {c, d}};
    for (int p = 0; p < 2; p++) {
        sl_cluster_t *x = pairs[p][0], *y = pairs[p][1];
        assert_int_equal(sl_cluster_class_count(x), sl_cluster_class_count(y));
        for (size_t i = 0; i < sl_cluster_class_count(x); i++) {
            assert_int_equal(sl_cluster_class_size(x, i), sl_cluster_class_size(y, i));
            for (uint32_t k = 0; k < sl_cluster_class_size(x, i); k++)
                assert_int_equal(sl_cluster_class_node(x, i, k), sl_cluster_class_node(y, i, k));
        }
    }
    sl_cluster_destroy(a);
    sl_cluster_destroy(b);
    sl_cluster_destroy(c);
    sl_cluster_destroy(d);
}

/* Many classes: every node in its own state, then all back to one. */
static void test_cluster_many_classes_grow_and_shrink(void **state) {
    (void)state;
    sl_cluster_t *cl = mk();
    tu_add_nodes(cl, "n", 2000, "1000", "1Ti", 0, NULL, NULL, NULL);
    sl_task_req_t q = tu_req("", "", 0, "");
    for (uint32_t i = 0; i < 2000; i++) {
        q.cpu_milli = i; /* node i keeps i milli-CPUs busy */
        sl_place_t pl = {.node = i};
        assert_int_equal(sl_cluster_alloc(cl, &q, &pl), 0);
    }
    assert_int_equal(sl_cluster_class_count(cl), 2000);
    assert_int_equal(sl_cluster_check(cl), 0);
    for (uint32_t i = 0; i < 2000; i += 2) assert_int_equal(sl_cluster_set_state(cl, i, SL_NODE_DOWN), 0);
    assert_int_equal(sl_cluster_class_count(cl), 1000);
    assert_int_equal(sl_cluster_check(cl), 0);
    for (uint32_t i = 0; i < 2000; i++) {
        q.cpu_milli = i;
        sl_place_t pl = {.node = i};
        assert_int_equal(sl_cluster_release(cl, &q, &pl), 0);
        if (i % 97 == 0) assert_int_equal(sl_cluster_check(cl), 0);
    }
    assert_int_equal(sl_cluster_class_count(cl), 1);
    assert_int_equal(sl_cluster_class_size(cl, 0), 1000);
    for (uint32_t i = 0; i < 2000; i += 2) assert_int_equal(sl_cluster_set_state(cl, i, SL_NODE_UP), 0);
    assert_int_equal(sl_cluster_class_size(cl, 0), 2000);
    assert_int_equal(sl_cluster_check(cl), 0);
    sl_cluster_destroy(cl);
}

/* The checker itself: a node changed behind the index's back is reported. */
static void test_cluster_check_detects_stale_index(void **state) {
    (void)state;
    sl_cluster_t *cl = mk();
    tu_add_nodes(cl, "n", 4, "8", "32Gi", 2, "T4", "16Gi", NULL);
    assert_int_equal(sl_cluster_check(cl), 0);
    sl_node_t *n = (sl_node_t *)sl_cluster_node(cl, 2); /* deliberate corruption */
    n->gpu_free[1] = 400;
    assert_int_equal(sl_cluster_check(cl), SL_ESTATE);
    n->gpu_free[1] = 1000;
    n->cpu_free = n->cpu_total + 1;
    assert_int_equal(sl_cluster_check(cl), SL_ESTATE);
    n->cpu_free = n->cpu_total;
    assert_int_equal(sl_cluster_check(cl), 0);
    /* A stale summary or a class in the wrong bucket is reported too. */
    sl__class_t *s = (sl__class_t *)sl__cluster_classes(cl); /* deliberate corruption */
    s[0].share_max = 500;
    assert_int_equal(sl_cluster_check(cl), SL_ESTATE);
    s[0].share_max = 1000;
    s[0].full_free = 1;
    assert_int_equal(sl_cluster_check(cl), SL_ESTATE);
    s[0].full_free = 2;
    assert_int_equal(sl_cluster_check(cl), 0);
    sl_cluster_destroy(cl);
}

/* 10,000 nodes, 200,000 operations: the index ends consistent and drains back. */
static void test_cluster_index_at_10000_nodes(void **state) {
    (void)state;
    sl_cluster_t *cl = mk();
    tu_add_nodes(cl, "a", 4000, "96", "768Gi", 8, "G2", "32Gi", NULL);
    tu_add_nodes(cl, "t", 3000, "96", "512Gi", 2, "T4", "16Gi", NULL);
    tu_add_nodes(cl, "v", 2000, "64", "256Gi", 4, "V100", "32Gi", "v");
    tu_add_nodes(cl, "c", 1000, "64", "256Gi", 0, NULL, NULL, NULL);
    assert_int_equal(sl_cluster_class_count(cl), 4);
    enum { CAP = 65536 };
    live_t *lv = sl_xmalloc(sizeof *lv * CAP);
    int nlive = 0;
    size_t max_classes = 0;
    sl_rng_t rng;
    sl_rng_seed(&rng, 10000);
    for (int step = 0; step < 200000; step++) {
        if (nlive < CAP && (nlive == 0 || sl_rng_below(&rng, 100) < 80)) {
            sl_task_req_t q = random_req(&rng, cl);
            uint32_t id = (uint32_t)sl_rng_below(&rng, 10000);
            sl_place_t pl;
            if (sl_node_choose_gpus(sl_cluster_node(cl, id), &q, &pl) != SL_FIT) continue;
            assert_int_equal(sl_cluster_alloc(cl, &q, &pl), 0);
            lv[nlive++] = (live_t){q, pl};
        } else {
            uint32_t k = (uint32_t)sl_rng_below(&rng, (uint64_t)nlive);
            assert_int_equal(sl_cluster_release(cl, &lv[k].req, &lv[k].pl), 0);
            lv[k] = lv[--nlive];
        }
        if (sl_cluster_class_count(cl) > max_classes) max_classes = sl_cluster_class_count(cl);
        if (step % 20000 == 0) assert_int_equal(sl_cluster_check(cl), 0);
    }
    assert_true(max_classes > 100); /* the run really spread nodes over many classes */
    assert_int_equal(sl_cluster_check(cl), 0);
    while (nlive > 0) {
        nlive--;
        assert_int_equal(sl_cluster_release(cl, &lv[nlive].req, &lv[nlive].pl), 0);
    }
    assert_int_equal(sl_cluster_class_count(cl), 4);
    assert_int_equal(sl_cluster_check(cl), 0);
    sl_free(lv);
    sl_cluster_destroy(cl);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_cluster_add_and_find, tu_teardown),
        cmocka_unit_test_teardown(test_cluster_add_many_names_stay_findable, tu_teardown),
        cmocka_unit_test_teardown(test_cluster_add_duplicate_name, tu_teardown),
        cmocka_unit_test_teardown(test_cluster_add_bad_specs, tu_teardown),
        cmocka_unit_test_teardown(test_cluster_pools_and_models_intern, tu_teardown),
        cmocka_unit_test_teardown(test_cluster_node_state_names, tu_teardown),
        cmocka_unit_test_teardown(test_cluster_fits_each_dimension, tu_teardown),
        cmocka_unit_test_teardown(test_cluster_whole_gpu_needs_full_memory_free, tu_teardown),
        cmocka_unit_test_teardown(test_cluster_fit_count_packs_shares, tu_teardown),
        cmocka_unit_test_teardown(test_cluster_choose_gpus_rules, tu_teardown),
        cmocka_unit_test_teardown(test_cluster_shares_never_exceed_1000, tu_teardown),
        cmocka_unit_test_teardown(test_cluster_alloc_more_than_free_changes_nothing, tu_teardown),
        cmocka_unit_test_teardown(test_cluster_release_more_than_taken_fails, tu_teardown),
        cmocka_unit_test_teardown(test_cluster_alloc_works_on_down_nodes, tu_teardown),
        cmocka_unit_test_teardown(test_cluster_capacity_counts_up_and_draining, tu_teardown),
        cmocka_unit_test_teardown(test_cluster_identical_nodes_form_one_class, tu_teardown),
        cmocka_unit_test_teardown(test_cluster_largest_gpu_block, tu_teardown),
        cmocka_unit_test_teardown(test_cluster_random_ops_match_reference, tu_teardown),
        cmocka_unit_test_teardown(test_cluster_same_calls_same_index, tu_teardown),
        cmocka_unit_test_teardown(test_cluster_many_classes_grow_and_shrink, tu_teardown),
        cmocka_unit_test_teardown(test_cluster_check_detects_stale_index, tu_teardown),
        cmocka_unit_test_teardown(test_cluster_index_at_10000_nodes, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
