/*
 * test_hroute.c - the API's path patterns (src/ctl/net/hroute.h).
 *
 * Each route of the table's kinds: a fixed path, "{id}" (a job id, or an
 * array's element A_I), "{name}" (one segment), a trailing slash; and the
 * paths that must not match: a prefix, a longer path, a missing or
 * non-decimal id, an id or element past its type, a name with '%' or '?',
 * a name spanning two segments.
 */
#include <stdint.h>
#include <string.h>

#include "testutil.h"

#include "net/hroute.h"

static bool match(const char *pattern, const char *path, uint64_t *id, int64_t *aidx, const char **name) {
    *id = 777;
    *aidx = 555;
    *name = NULL;
    return ctl_route_match(pattern, path, id, aidx, name);
}

static void test_route_fixed_paths(void **state) {
    (void)state;
    uint64_t id;
    int64_t ai;
    const char *nm;
    assert_true(match("/v1/jobs", "/v1/jobs", &id, &ai, &nm));
    assert_int_equal(ai, -1);
    assert_int_equal(id, 777); /* no {id}: untouched */
    assert_true(match("/v1/jobs", "/v1/jobs/", &id, &ai, &nm));
    assert_false(match("/v1/jobs", "/v1/jobs//", &id, &ai, &nm));
    assert_false(match("/v1/jobs", "/v1/job", &id, &ai, &nm));
    assert_false(match("/v1/jobs", "/v1/jobsX", &id, &ai, &nm));
    assert_false(match("/v1/jobs", "/v1/jobs/1", &id, &ai, &nm));
    assert_false(match("/v1/jobs", "", &id, &ai, &nm));
    assert_false(match("/v1/nodes/drain", "/v1/nodes/resume", &id, &ai, &nm));
    assert_true(match("/v1/nodes/drain", "/v1/nodes/drain", &id, &ai, &nm));
}

static void test_route_job_ids(void **state) {
    (void)state;
    uint64_t id;
    int64_t ai;
    const char *nm;
    assert_true(match("/v1/jobs/{id}", "/v1/jobs/12", &id, &ai, &nm));
    assert_int_equal(id, 12);
    assert_int_equal(ai, -1);
    assert_true(match("/v1/jobs/{id}", "/v1/jobs/12/", &id, &ai, &nm));
    assert_int_equal(id, 12);
    assert_true(match("/v1/jobs/{id}/logs", "/v1/jobs/4096/logs", &id, &ai, &nm));
    assert_int_equal(id, 4096);
    assert_true(match("/v1/jobs/{id}/logs/stream", "/v1/jobs/3/logs/stream", &id, &ai, &nm));
    assert_int_equal(id, 3);
    /* One route's path is not another's. */
    assert_false(match("/v1/jobs/{id}", "/v1/jobs/12/logs", &id, &ai, &nm));
    assert_false(match("/v1/jobs/{id}/logs", "/v1/jobs/12/logs/stream", &id, &ai, &nm));
    assert_false(match("/v1/jobs/{id}/logs/stream", "/v1/jobs/12/logs", &id, &ai, &nm));
    assert_false(match("/v1/jobs/{id}/size", "/v1/jobs/12/sizes", &id, &ai, &nm));
    /* Not an id. */
    assert_false(match("/v1/jobs/{id}", "/v1/jobs/", &id, &ai, &nm));
    assert_false(match("/v1/jobs/{id}", "/v1/jobs", &id, &ai, &nm));
    assert_false(match("/v1/jobs/{id}", "/v1/jobs/abc", &id, &ai, &nm));
    assert_false(match("/v1/jobs/{id}", "/v1/jobs/-1", &id, &ai, &nm));
    assert_false(match("/v1/jobs/{id}", "/v1/jobs/0", &id, &ai, &nm)); /* ids are positive */
    assert_false(match("/v1/jobs/{id}", "/v1/jobs/000", &id, &ai, &nm));
    assert_false(match("/v1/jobs/{id}", "/v1/jobs/0_1", &id, &ai, &nm));
    assert_true(match("/v1/jobs/{id}", "/v1/jobs/010", &id, &ai, &nm));
    assert_int_equal(id, 10);
    assert_false(match("/v1/jobs/{id}", "/v1/jobs/+1", &id, &ai, &nm));
    assert_false(match("/v1/jobs/{id}", "/v1/jobs/12a", &id, &ai, &nm));
    assert_false(match("/v1/jobs/{id}", "/v1/jobs/1.5", &id, &ai, &nm));
    assert_false(match("/v1/jobs/{id}", "/v1/jobs/%31", &id, &ai, &nm));
    assert_false(match("/v1/jobs/{id}", "/v1/jobs/12?x=1", &id, &ai, &nm));
    assert_false(match("/v1/jobs/{id}/logs", "/v1/jobs/logs", &id, &ai, &nm));
    /* Past 64 bits: refused, never wrapped. */
    assert_true(match("/v1/jobs/{id}", "/v1/jobs/18446744073709551609", &id, &ai, &nm));
    assert_true(id == 18446744073709551609ULL);
    assert_false(match("/v1/jobs/{id}", "/v1/jobs/18446744073709551616", &id, &ai, &nm));
    assert_false(match("/v1/jobs/{id}", "/v1/jobs/99999999999999999999999", &id, &ai, &nm));
}

static void test_route_array_elements(void **state) {
    (void)state;
    uint64_t id;
    int64_t ai;
    const char *nm;
    assert_true(match("/v1/jobs/{id}", "/v1/jobs/7_3", &id, &ai, &nm));
    assert_int_equal(id, 7);
    assert_int_equal(ai, 3);
    assert_true(match("/v1/jobs/{id}/logs", "/v1/jobs/7_0/logs", &id, &ai, &nm));
    assert_int_equal(id, 7);
    assert_int_equal(ai, 0);
    assert_true(match("/v1/jobs/{id}", "/v1/jobs/7_2147483647", &id, &ai, &nm));
    assert_int_equal(ai, INT32_MAX);
    assert_false(match("/v1/jobs/{id}", "/v1/jobs/7_2147483648", &id, &ai, &nm));
    assert_false(match("/v1/jobs/{id}", "/v1/jobs/7_99999999999999999999999", &id, &ai, &nm));
    assert_false(match("/v1/jobs/{id}", "/v1/jobs/7_", &id, &ai, &nm));
    assert_false(match("/v1/jobs/{id}", "/v1/jobs/7_x", &id, &ai, &nm));
    assert_false(match("/v1/jobs/{id}", "/v1/jobs/7_3_4", &id, &ai, &nm));
    assert_false(match("/v1/jobs/{id}", "/v1/jobs/_3", &id, &ai, &nm));
    /* A failed match still leaves no element behind from an earlier call. */
    assert_false(match("/v1/nodes", "/v1/jobs/7_3", &id, &ai, &nm));
    assert_int_equal(ai, -1);
}

static void test_route_names(void **state) {
    (void)state;
    uint64_t id;
    int64_t ai;
    const char *nm;
    const char *path = "/v1/reservations/maint-1";
    assert_true(match("/v1/reservations/{name}", path, &id, &ai, &nm));
    assert_ptr_equal(nm, path + strlen("/v1/reservations/"));
    assert_string_equal(nm, "maint-1");
    assert_true(match("/v1/secrets/{name}", "/v1/secrets/db.pass/", &id, &ai, &nm));
    assert_int_equal(strncmp(nm, "db.pass/", 8), 0); /* the caller cuts at the '/' */
    assert_false(match("/v1/reservations/{name}", "/v1/reservations/", &id, &ai, &nm));
    assert_false(match("/v1/reservations/{name}", "/v1/reservations", &id, &ai, &nm));
    assert_false(match("/v1/reservations/{name}", "/v1/reservations/a/b", &id, &ai, &nm));
    assert_false(match("/v1/reservations/{name}", "/v1/reservations/a%2Fb", &id, &ai, &nm));
    assert_false(match("/v1/reservations/{name}", "/v1/reservations/a?b", &id, &ai, &nm));
    assert_false(match("/v1/reservations/{name}", "/v1/secrets/x", &id, &ai, &nm));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_route_fixed_paths, tu_teardown),
        cmocka_unit_test_teardown(test_route_job_ids, tu_teardown),
        cmocka_unit_test_teardown(test_route_array_elements, tu_teardown),
        cmocka_unit_test_teardown(test_route_names, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
