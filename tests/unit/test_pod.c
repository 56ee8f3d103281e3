/*
 * test_pod.c - a job's containers (src/common/pod.h): the spec's shape,
 * every problem said at once with its place; their agreement with the
 * job's volumes and GPUs, also through the job-spec table; which volumes
 * and GPUs each container sees; the job's args (an image's entrypoint's);
 * and the launch's containers and image_args on the wire.
 * Teardown checks that nothing is left allocated.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobspec.h"
#include "pod.h"
#include "proto.h"
#include "testutil.h"

static json_t *j(const char *text) {
    json_error_t je;
    json_t *v = json_loads(text, 0, &je);
    if (v == NULL)
        fail_msg("bad test JSON %s: %s", text, je.text);
    return v;
}

static void test_pod_check_accepts_and_names_every_problem(void **state) {
    (void)state;
    char err[1024];
    json_t *v = j("[{\"name\": \"server\", \"image\": \"vllm\", \"command\": [\"serve\"], "
                  "\"env\": {\"A\": \"1\"}, \"workdir\": \"/srv\", \"volumes\": [\"/r\"], \"gpus\": 1},"
                  "{\"name\": \"c-2\", \"image\": \"cli\", \"args\": [\"--x\"]}]");
    assert_int_equal(sl_pod_check(v, err, sizeof err), 0);
    json_decref(v);
    v = j("[{\"name\": \"i\", \"image\": \"i\", \"role\": \"init\"}, {\"name\": \"s\", \"image\": \"i\","
          " \"role\": \"sidecar\"}, {\"name\": \"m\", \"image\": \"i\"}]");
    assert_int_equal(sl_pod_check(v, err, sizeof err), 0);
    json_decref(v);
    static const struct {
        const char *json, *want;
    } bad[] = {
        {"[]", "must be a list of containers"},
        {"{}", "must be a list of containers"},
        {"[1]", "containers[0]: must be an object"},
        {"[{\"image\": \"i\"}]", "containers[0].name: required"},
        {"[{\"name\": \"a\"}]", "containers[0].image: required"},
        {"[{\"name\": \"A_b\", \"image\": \"i\"}]", "containers[0].name: must be 1 to 63 of a-z"},
        {"[{\"name\": \"-a\", \"image\": \"i\"}]", "containers[0].name: must be"},
        {"[{\"name\": \"a\", \"image\": \"i\"}, {\"name\": \"a\", \"image\": \"i\"}]",
         "containers[1].name: \"a\" is also container [0]'s"},
        {"[{\"name\": \"a\", \"image\": \"i\", \"command\": []}]",
         "containers[0].command: must be a list of one or more strings"},
        {"[{\"name\": \"a\", \"image\": \"i\", \"command\": [\"x\"], \"args\": [\"y\"]}]",
         "containers[0].args: cannot be combined with command"},
        {"[{\"name\": \"a\", \"image\": \"i\", \"env\": {\"1X\": \"v\"}}]",
         "containers[0].env: \"1X\" is not a valid variable name"},
        {"[{\"name\": \"a\", \"image\": \"i\", \"env\": {\"X\": 1}}]",
         "containers[0].env: value of X must be a string"},
        {"[{\"name\": \"a\", \"image\": \"i\", \"workdir\": \"rel\"}]",
         "containers[0].workdir: must be an absolute path"},
        {"[{\"name\": \"a\", \"image\": \"i\", \"volumes\": [\"/a/../b\"]}]",
         "containers[0].volumes: [0] must be an absolute path"},
        {"[{\"name\": \"a\", \"image\": \"i\", \"volumes\": [\"/a\", \"/a\"]}]",
         "containers[0].volumes: /a is listed twice"},
        {"[{\"name\": \"a\", \"image\": \"i\", \"gpus\": -1}]",
         "containers[0].gpus: must be a whole number from 0 to 64"},
        {"[{\"name\": \"a\", \"image\": \"i\", \"ports\": [1]}]", "containers[0].ports: unknown field"},
        {"[{\"name\": \"a\", \"image\": \"i\", \"role\": \"helper\"}, {\"name\": \"b\", \"image\": \"i\"}]",
         "containers[0].role: must be init or sidecar"},
        {"[{\"name\": \"a\", \"image\": \"i\"}, {\"name\": \"b\", \"image\": \"i\", \"role\": \"init\"}]",
         "containers[1].role: an init container or sidecar must come before the pod's containers"},
        {"[{\"name\": \"a\", \"image\": \"i\", \"role\": \"sidecar\"}]",
         "only init containers and sidecars: at least one container without a role"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        v = j(bad[i].json);
        int rc = sl_pod_check(v, err, sizeof err);
        json_decref(v);
        if (rc == 0 || strstr(err, bad[i].want) == NULL)
            fail_msg("%s: rc %d, \"%s\" lacks \"%s\"", bad[i].json, rc, rc ? err : "", bad[i].want);
    }
    /* Every problem at once. */
    v = j("[{\"name\": \"a\"}, {\"image\": \"i\", \"bogus\": 1}]");
    assert_int_equal(sl_pod_check(v, err, sizeof err), SL_EINVAL);
    json_decref(v);
    assert_non_null(strstr(err, "containers[0].image: required; "));
    assert_non_null(strstr(err, "containers[1].bogus: unknown field"));
    assert_non_null(strstr(err, "containers[1].name: required"));
    /* More than the most. */
    json_t *many = json_array();
    for (int i = 0; i <= SL_POD_CONTAINERS_MAX; i++) {
        char n[16];
        snprintf(n, sizeof n, "c%d", i);
        json_array_append_new(many, json_pack("{ss ss}", "name", n, "image", "i"));
    }
    assert_int_equal(sl_pod_check(many, err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, "17 containers: at most 16"));
    json_decref(many);
}

static void test_pod_rules_volumes_and_gpus_through_the_table(void **state) {
    (void)state;
    static const struct {
        const char *spec, *field, *want; /* want NULL: accepted */
    } cases[] = {
        {"{\"containers\": [{\"name\": \"a\", \"image\": \"i\"}]}", NULL, NULL},
        {"{\"gpus\": 3, \"volumes\": [{\"path\": \"/r\", \"empty_dir\": {}}], \"containers\": "
         "[{\"name\": \"a\", \"image\": \"i\", \"gpus\": 2, \"volumes\": [\"/r\"]}, "
         "{\"name\": \"b\", \"image\": \"i\", \"gpus\": 1}], \"shm_size\": \"1Gi\"}", NULL, NULL},
        {"{\"gpus\": 2, \"containers\": [{\"name\": \"a\", \"image\": \"i\", \"gpus\": 1}]}",
         "containers", "containers: their gpus add up to 1, the job asks for 2"},
        {"{\"containers\": [{\"name\": \"a\", \"image\": \"i\", \"volumes\": [\"/x\"]}]}",
         "containers", "containers[0].volumes: /x is not the path of one of the job's volumes"},
        {"{\"image\": \"i\", \"containers\": [{\"name\": \"a\", \"image\": \"i\"}]}", "image",
         "cannot be combined with containers"},
        {"{\"command\": [\"x\"], \"containers\": [{\"name\": \"a\", \"image\": \"i\"}]}", "command",
         "cannot be combined with containers"},
        {"{\"allocation\": true, \"containers\": [{\"name\": \"a\", \"image\": \"i\"}]}",
         "allocation", "cannot be combined with image"},
        {"{\"containers\": [{\"name\": \"a\"}]}", "containers", "containers[0].image: required"},
        {"{\"image\": \"i\", \"args\": [\"--x\"]}", NULL, NULL},
        {"{\"args\": [\"--x\"], \"command\": [\"y\"]}", "args", "cannot be combined with command"},
        {"{\"args\": [\"--x\"], \"containers\": [{\"name\": \"a\", \"image\": \"i\"}]}", "args",
         "only allowed with image"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *s = j(cases[i].spec);
        sl_jobspec_t js;
        const char *field;
        char err[512];
        int rc = sl_jobspec_parse(s, &js, &field, err, sizeof err);
        if (!cases[i].want && rc != 0)
            fail_msg("%s: refused: %s: %s", cases[i].spec, field ? field : "", err);
        if (cases[i].want && (rc == 0 || !field || strcmp(field, cases[i].field) ||
                              !strstr(err, cases[i].want)))
            fail_msg("%s: rc %d field %s \"%s\", wanted %s \"%s\"", cases[i].spec, rc,
                     field ? field : "-", rc ? err : "", cases[i].field, cases[i].want);
        json_decref(s);
    }
}

static void test_pod_sees_and_gpu_shares(void **state) {
    (void)state;
    json_t *cs = j("[{\"name\": \"a\", \"image\": \"i\", \"gpus\": 2, \"volumes\": [\"/r\"]},"
                   "{\"name\": \"b\", \"image\": \"i\"}, {\"name\": \"c\", \"image\": \"i\", \"gpus\": 1,"
                   " \"volumes\": []}]");
    assert_true(sl_pod_sees(json_array_get(cs, 0), "/r"));
    assert_false(sl_pod_sees(json_array_get(cs, 0), "/s"));
    assert_true(sl_pod_sees(json_array_get(cs, 1), "/s")); /* no list: all */
    assert_false(sl_pod_sees(json_array_get(cs, 2), "/r")); /* an empty list: none */
    size_t first, n;
    sl_pod_gpus(cs, 0, 3, &first, &n);
    assert_int_equal(first, 0);
    assert_int_equal(n, 2);
    sl_pod_gpus(cs, 1, 3, &first, &n); /* none of its own once others have some */
    assert_int_equal(n, 0);
    sl_pod_gpus(cs, 2, 3, &first, &n);
    assert_int_equal(first, 2);
    assert_int_equal(n, 1);
    sl_pod_gpus(cs, 2, 2, &first, &n); /* fewer than asked: cut, never past the task's */
    assert_int_equal(first, 2);
    assert_int_equal(n, 0);
    json_decref(cs);
    cs = j("[{\"name\": \"a\", \"image\": \"i\"}, {\"name\": \"b\", \"image\": \"i\"}]");
    sl_pod_gpus(cs, 1, 4, &first, &n); /* no shares: each sees all */
    assert_int_equal(first, 0);
    assert_int_equal(n, 4);
    json_decref(cs);
}

static void test_pod_launch_round_trip_and_rejection(void **state) {
    (void)state;
    json_t *cs = j("[{\"name\":\"a\",\"image\":\"i\",\"gpus\":1},{\"name\":\"b\",\"image\":\"k\"}]");
    sl_proto_msg_t m = {.type = SL_PROTO_LAUNCH, .job = 5, .task = 0};
    const char *ia[] = {"--epochs", "3"};
    m.u.launch = (sl_proto_launch_t){.world_size = 1, .master_port = 29500, .image = "i",
                                     .containers = cs, .image_args = ia, .nimage_args = 2};
    size_t len, len2;
    char *line = sl_proto_encode_alloc(&m, &len);
    assert_non_null(line);
    assert_non_null(strstr(line, ",\"containers\":[{\"name\":\"a\",\"image\":\"i\",\"gpus\":1},"));
    sl_proto_msg_t d;
    char err[256];
    if (sl_proto_decode_line(line, len - 1, SL_PROTO_TO_AGENT, &d, err, sizeof err) != 0)
        fail_msg("%s: %s", line, err);
    assert_non_null(d.u.launch.containers);
    assert_true(json_equal(d.u.launch.containers, cs));
    assert_int_equal(d.u.launch.nimage_args, 2);
    assert_string_equal(d.u.launch.image_args[1], "3");
    char *again = sl_proto_encode_alloc(&d, &len2);
    assert_string_equal(again, line);
    sl_free(again);
    sl_free(line);
    sl_proto_msg_fini(&d);
    /* None: nothing written. */
    m.u.launch.containers = NULL;
    m.u.launch.nimage_args = 0;
    line = sl_proto_encode_alloc(&m, &len);
    assert_null(strstr(line, "containers"));
    assert_null(strstr(line, "image_args"));
    sl_free(line);
    json_decref(cs);
    /* A bad list from the wire is refused, naming the field. */
    const char *bad = "{\"type\":\"launch\",\"job\":5,\"task\":0,\"name\":\"x\",\"argv\":null,"
                      "\"image\":\"i\",\"env\":{},\"gpus\":[],\"world_size\":1,\"master_port\":1,"
                      "\"containers\":[{\"name\":\"a\"}]}";
    assert_int_not_equal(sl_proto_decode_line(bad, strlen(bad), SL_PROTO_TO_AGENT, &d, err, sizeof err), 0);
    sl_proto_msg_fini(&d);
    assert_non_null(strstr(err, "containers"));
    assert_non_null(strstr(err, "containers[0].image: required"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_pod_check_accepts_and_names_every_problem, tu_teardown),
        cmocka_unit_test_teardown(test_pod_rules_volumes_and_gpus_through_the_table, tu_teardown),
        cmocka_unit_test_teardown(test_pod_sees_and_gpu_shares, tu_teardown),
        cmocka_unit_test_teardown(test_pod_launch_round_trip_and_rejection, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
