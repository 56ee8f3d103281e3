/* test_resources.c - task request defaults, validation (table-driven) and totals. */
#include <string.h>

#include "testutil.h"

static void test_resources_init_is_empty_any(void **state) {
    (void)state;
    sl_task_req_t r;
    memset(&r, 0x5a, sizeof r);
    sl_task_req_init(&r);
    assert_int_equal(r.cpu_milli, 0);
    assert_int_equal(r.mem_bytes, 0);
    assert_int_equal(r.gpus, 0);
    assert_int_equal(r.gpu_milli, 0);
    assert_int_equal(r.gpu_mem_bytes, 0);
    assert_int_equal(r.model_mask, 0);
    assert_int_equal(r.pool, -1);
    assert_int_equal(sl_task_req_check(&r, NULL, 0), 0);
    assert_false(sl_task_req_has_gpu(&r));
}

typedef struct crow {
    int64_t cpu, mem;
    int32_t gpus, gpu_milli;
    int64_t gpu_mem;
    int32_t pool;
    const char *field; /* NULL: valid; else a fragment of the message */
} crow_t;

static const crow_t crows[] = {
    {1000, 1 << 20, 0, 0, 0, -1, NULL},
    {0, 0, 1, 0, 0, 0, NULL},
    {0, 0, 16, 0, 0, 3, NULL},
    {500, 0, 0, 250, 0, -1, NULL},
    {500, 0, 0, 999, INT64_C(8) << 30, -1, NULL},
    {500, 0, 0, 1, 1, -1, NULL},
    {-1, 0, 0, 0, 0, -1, "cpu_milli"},
    {0, -1, 0, 0, 0, -1, "mem_bytes"},
    {0, 0, -1, 0, 0, -1, "gpus"},
    {0, 0, 17, 0, 0, -1, "gpus"},
    {0, 0, 0, -5, 0, -1, "gpu_milli"},
    {0, 0, 0, 1000, 0, -1, "gpu_milli"},
    {0, 0, 1, 500, 0, -1, "gpu_milli"},
    {0, 0, 0, 500, -1, -1, "gpu_mem_bytes"},
    {0, 0, 0, 0, 1024, -1, "gpu_mem_bytes"},
    {0, 0, 2, 0, 1024, -1, "gpu_mem_bytes"},
    {0, 0, 0, 0, 0, -2, "pool"},
};

static void test_resources_check_table(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof crows / sizeof crows[0]; i++) {
        const crow_t *c = &crows[i];
        sl_task_req_t r;
        sl_task_req_init(&r);
        r.cpu_milli = c->cpu;
        r.mem_bytes = c->mem;
        r.gpus = c->gpus;
        r.gpu_milli = c->gpu_milli;
        r.gpu_mem_bytes = c->gpu_mem;
        r.pool = c->pool;
        char err[128] = "";
        int rc = sl_task_req_check(&r, err, sizeof err);
        if (!c->field) {
            if (rc != 0) fail_msg("row %zu: unexpected error %s", i, err);
        } else {
            if (rc != SL_EINVAL) fail_msg("row %zu: rc %d, want SL_EINVAL", i, rc);
            if (!strstr(err, c->field)) fail_msg("row %zu: \"%s\" lacks \"%s\"", i, err, c->field);
        }
    }
    assert_int_equal(sl_task_req_check(NULL, NULL, 0), SL_EINVAL);
}

static void test_resources_total_counts_whole_gpus_as_1000(void **state) {
    (void)state;
    sl_task_req_t r = tu_req("2.5", "1Gi", 4, "");
    sl_res_t t = sl_task_req_total(&r);
    assert_int_equal(t.cpu_milli, 2500);
    assert_int_equal(t.mem_bytes, INT64_C(1) << 30);
    assert_int_equal(t.gpu_milli, 4000);
    assert_true(sl_task_req_has_gpu(&r));

    sl_task_req_t s = tu_req("1", "", 0, "0.25");
    t = sl_task_req_total(&s);
    assert_int_equal(t.gpu_milli, 250);
    assert_true(sl_task_req_has_gpu(&s));

    sl_task_req_t n = tu_req("1", "", 0, "");
    assert_false(sl_task_req_has_gpu(&n));
    assert_int_equal(sl_task_req_total(&n).gpu_milli, 0);
}

static void test_resources_vector_ops(void **state) {
    (void)state;
    sl_res_t a = {1000, 2048, 500}, b = {500, 1024, 250};
    sl_res_t s = sl_res_add(a, b);
    assert_int_equal(s.cpu_milli, 1500);
    assert_int_equal(s.mem_bytes, 3072);
    assert_int_equal(s.gpu_milli, 750);
    sl_res_t d = sl_res_sub(a, b);
    assert_int_equal(d.cpu_milli, 500);
    assert_int_equal(d.gpu_milli, 250);
    sl_res_t k = sl_res_scale(b, 3);
    assert_int_equal(k.mem_bytes, 3072);
    assert_true(sl_res_le(b, a));
    assert_false(sl_res_le(a, b));
    assert_true(sl_res_le(a, a));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_resources_init_is_empty_any, tu_teardown),
        cmocka_unit_test_teardown(test_resources_check_table, tu_teardown),
        cmocka_unit_test_teardown(test_resources_total_counts_whole_gpus_as_1000, tu_teardown),
        cmocka_unit_test_teardown(test_resources_vector_ops, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
