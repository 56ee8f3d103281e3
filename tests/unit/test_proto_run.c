/*
 * test_proto_run.c - the attempt and the cluster instance in the codec
 * (src/common/proto_run.h, docs/protocol.md "Attempts and the cluster
 * instance").
 *
 * Round trips of every message that carries them (launch, started, exited,
 * failed, kill, ack, a hello's task entries, a welcome, a heartbeat's
 * usage entries), their absence (a peer from before them: nothing
 * written, nothing set), and table-driven rejections naming the field.
 * Teardown checks that the decoder's arrays were all freed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "testutil.h"

/* Encodes m, decodes the line (dir) into *out, checks that re-encoding
 * gives the same line; returns the line (sl_free it). */
static char *round_trip(const sl_proto_msg_t *m, sl_proto_dir_t dir, sl_proto_msg_t *out) {
    size_t len, len2;
    char *line = sl_proto_encode_alloc(m, &len);
    assert_non_null(line);
    char err[256];
    if (sl_proto_decode_line(line, len - 1, dir, out, err, sizeof err) != 0)
        fail_msg("%s: %s", line, err);
    char *again = sl_proto_encode_alloc(out, &len2);
    assert_non_null(again);
    assert_string_equal(again, line);
    sl_free(again);
    return line;
}

static void test_proto_run_attempt_in_launch_reports_kill_and_ack(void **state) {
    (void)state;
    static const struct {
        sl_proto_type_t type;
        sl_proto_dir_t dir;
    } cases[] = {
        {SL_PROTO_LAUNCH, SL_PROTO_TO_AGENT}, {SL_PROTO_KILL, SL_PROTO_TO_AGENT},
        {SL_PROTO_ACK, SL_PROTO_TO_AGENT},    {SL_PROTO_STARTED, SL_PROTO_TO_CTL},
        {SL_PROTO_EXITED, SL_PROTO_TO_CTL},   {SL_PROTO_FAILED, SL_PROTO_TO_CTL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (int with = 0; with < 2; with++) {
            sl_proto_msg_t m = {.type = cases[i].type, .job = 12, .task = 3, .time = 5,
                                .has_attempt = with, .attempt = with ? 7 : 0};
            if (m.type == SL_PROTO_FAILED)
                m.u.failed.reason = "no";
            if (m.type == SL_PROTO_KILL)
                m.u.kill.grace_ms = -1;
            if (m.type == SL_PROTO_STARTED)
                m.u.started.pid = 99;
            if (m.type == SL_PROTO_LAUNCH)
                m.u.launch = (sl_proto_launch_t){.rank = 3, .world_size = 4, .master_port = 29500};
            sl_proto_msg_t d;
            char *line = round_trip(&m, cases[i].dir, &d);
            /* Right after the ids, and only when there is one (so a zeroed
             * message, as every sender wrote before, sends none). */
            assert_true((strstr(line, "\"task\":3,\"attempt\":7") != NULL) == with);
            assert_true((strstr(line, "attempt") != NULL) == with);
            assert_int_equal(d.has_attempt, with);
            assert_int_equal(d.attempt, with ? 7 : 0);
            sl_proto_msg_fini(&d);
            sl_free(line);
        }
    }
}

static void test_proto_run_hello_entries_and_welcome(void **state) {
    (void)state;
    sl_proto_task_t tasks[] = {
        {.job = 1, .task = 0, .state = SL_PROTO_TASK_RUNNING, .pid = 10, .start_time = 1,
         .has_attempt = true, .attempt = 2, .instance = "3f9a2c1d7e6b5a40"},
        {.job = 1, .task = 1, .state = SL_PROTO_TASK_EXITED, .end_time = 2},
        /* An instance that is not one is left out, never written as is. */
        {.job = 2, .task = 0, .state = SL_PROTO_TASK_FAILED, .reason = "x", .end_time = 3,
         .instance = "Not/One"},
    };
    sl_proto_msg_t m = {.type = SL_PROTO_HELLO,
                        .u.hello = {.token = "t", .node = {.name = "n1"}, .tasks = tasks,
                                    .ntasks = 3}};
    sl_proto_msg_t d;
    char *line = round_trip(&m, SL_PROTO_TO_CTL, &d);
    assert_int_equal(d.u.hello.ntasks, 3);
    const sl_proto_task_t *t = d.u.hello.tasks;
    assert_true(t[0].has_attempt);
    assert_int_equal(t[0].attempt, 2);
    assert_string_equal(t[0].instance, "3f9a2c1d7e6b5a40");
    assert_false(t[1].has_attempt);
    assert_null(t[1].instance);
    assert_null(t[2].instance);
    assert_null(strstr(line, "Not/One"));
    sl_proto_msg_fini(&d);
    sl_free(line);

    sl_proto_msg_t w = {.type = SL_PROTO_WELCOME,
                        .u.welcome = {.node = "n1", .heartbeat = 2, .node_timeout_ms = 10000,
                                      .kill_grace_ms = 0, .instance = "c0ffee"}};
    line = round_trip(&w, SL_PROTO_TO_AGENT, &d);
    assert_string_equal(d.u.welcome.instance, "c0ffee");
    sl_proto_msg_fini(&d);
    sl_free(line);
    w.u.welcome.instance = NULL;
    line = round_trip(&w, SL_PROTO_TO_AGENT, &d);
    assert_null(d.u.welcome.instance);
    assert_null(strstr(line, "instance"));
    sl_proto_msg_fini(&d);
    sl_free(line);
}

static void test_proto_run_usage_entries(void **state) {
    (void)state;
    sl_proto_usage_t u[] = {
        {.job = 4, .task = 0, .has_attempt = true, .attempt = 1, .gpu_mem_peak = -1,
         .gpu_mem_total = -1, .cpu_seconds = -1, .mem_peak = -1},
        {.job = 4, .task = 1, .gpu_mem_peak = -1, .gpu_mem_total = -1, .cpu_seconds = -1,
         .mem_peak = -1},
    };
    sl_proto_msg_t m = {.type = SL_PROTO_HEARTBEAT, .time = 1,
                        .u.heartbeat = {.seq = 3, .usage = u, .nusage = 2}};
    sl_proto_msg_t d;
    char *line = round_trip(&m, SL_PROTO_TO_CTL, &d);
    assert_int_equal(d.u.heartbeat.nusage, 2);
    assert_true(d.u.heartbeat.usage[0].has_attempt);
    assert_int_equal(d.u.heartbeat.usage[0].attempt, 1);
    assert_false(d.u.heartbeat.usage[1].has_attempt);
    sl_proto_msg_fini(&d);
    sl_free(line);
}

static void test_proto_run_rejects_bad_fields(void **state) {
    (void)state;
    static const struct {
        sl_proto_dir_t dir;
        const char *line;
        const char *err;
    } bad[] = {
        {SL_PROTO_TO_CTL, "{\"type\":\"exited\",\"job\":1,\"task\":0,\"attempt\":-1}",
         "exited: attempt: must be a whole number from 0 to 2147483647"},
        {SL_PROTO_TO_CTL, "{\"type\":\"started\",\"job\":1,\"task\":0,\"attempt\":\"1\",\"pid\":1}",
         "started: attempt: must be"},
        {SL_PROTO_TO_AGENT, "{\"type\":\"kill\",\"job\":1,\"task\":0,\"attempt\":2147483648}",
         "kill: attempt: must be"},
        {SL_PROTO_TO_AGENT, "{\"type\":\"ack\",\"job\":1,\"task\":0,\"attempt\":1.5}",
         "ack: attempt: must be"},
        {SL_PROTO_TO_AGENT, "{\"type\":\"welcome\",\"instance\":\"ABC\"}",
         "welcome: instance: must be 1 to 32 lower-case letters and digits"},
        {SL_PROTO_TO_AGENT, "{\"type\":\"welcome\",\"instance\":\"\"}", "welcome: instance:"},
        {SL_PROTO_TO_AGENT, "{\"type\":\"welcome\",\"instance\":\"a/b\"}", "welcome: instance:"},
        {SL_PROTO_TO_AGENT,
         "{\"type\":\"welcome\",\"instance\":\"0123456789abcdef0123456789abcdef0\"}",
         "welcome: instance:"},
        {SL_PROTO_TO_CTL,
         "{\"type\":\"hello\",\"token\":\"t\",\"node\":{\"name\":\"n\"},"
         "\"tasks\":[{\"job\":1,\"task\":0,\"instance\":7}]}",
         "hello: tasks[0].instance: must be"},
        {SL_PROTO_TO_CTL,
         "{\"type\":\"hello\",\"token\":\"t\",\"node\":{\"name\":\"n\"},"
         "\"tasks\":[{\"job\":1,\"task\":0,\"attempt\":true}]}",
         "hello: tasks[0].attempt: must be"},
        {SL_PROTO_TO_CTL, "{\"type\":\"heartbeat\",\"usage\":[{\"job\":1,\"task\":0,\"attempt\":-2}]}",
         "heartbeat: usage[0].attempt: must be"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sl_proto_msg_t d;
        char err[256];
        int rc = sl_proto_decode_line(bad[i].line, strlen(bad[i].line), bad[i].dir, &d, err,
                                      sizeof err);
        if (rc != SL_EINVAL || strstr(err, bad[i].err) == NULL)
            fail_msg("%s: rc %d, \"%s\" lacks \"%s\"", bad[i].line, rc, err, bad[i].err);
        sl_proto_msg_fini(&d);
    }
    /* The longest instance is 32 characters. */
    const char *ok = "{\"type\":\"welcome\",\"instance\":\"0123456789abcdef0123456789abcdef\"}";
    sl_proto_msg_t d;
    char err[256];
    assert_int_equal(sl_proto_decode_line(ok, strlen(ok), SL_PROTO_TO_AGENT, &d, err, sizeof err), 0);
    assert_int_equal(strlen(d.u.welcome.instance), SL_PROTO_INSTANCE_MAX);
    sl_proto_msg_fini(&d);
    assert_true(sl_proto_instance_valid("3f9a2c1d7e6b5a40"));
    assert_false(sl_proto_instance_valid(NULL));
    assert_false(sl_proto_instance_valid("a.b"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_proto_run_attempt_in_launch_reports_kill_and_ack, tu_teardown),
        cmocka_unit_test_teardown(test_proto_run_hello_entries_and_welcome, tu_teardown),
        cmocka_unit_test_teardown(test_proto_run_usage_entries, tu_teardown),
        cmocka_unit_test_teardown(test_proto_run_rejects_bad_fields, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
