/*
 * test_proto_step.c - the job steps' messages (src/common/proto_step.h):
 * each message round trips on both links (the agent port's, with the job,
 * and a step daemon's, without), output that is not UTF-8 arrives with '?'
 * for each bad byte and each NUL, and a table of bad lines is refused with the message
 * and field named. Unknown types are SL_ENOENT, so older peers ignore them.
 */
#include <stdio.h>
#include <string.h>

#include "proto_step.h"
#include "sluice/error.h"
#include "testutil.h"

static sl_step_msg_t round_trip(const sl_step_msg_t *m, sl_step_link_t link) {
    size_t len;
    char *line = sl_step_encode(m, link, &len);
    assert_non_null(line);
    assert_int_equal(line[len - 1], '\n');
    sl_step_msg_t d;
    char err[256];
    int rc = sl_step_decode_line(line, len - 1, link, &d, err, sizeof err);
    if (rc != 0)
        fail_msg("%s: %s", line, err);
    sl_free(line);
    return d;
}

static void test_proto_step_run_round_trips_with_its_ranks(void **state) {
    (void)state;
    const char *argv[] = {"bash", "-c", "echo $SLURM_PROCID"};
    sl_proto_kv_t env[] = {{"SLURM_STEP_ID", "3"}, {"A", "b c"}};
    sl_proto_kv_t r0[] = {{"SLURM_PROCID", "0"}, {"CUDA_VISIBLE_DEVICES", "0,1"}};
    sl_proto_kv_t r1[] = {{"SLURM_PROCID", "1"}};
    sl_step_rank_t ranks[] = {{.rank = 0, .task = 2, .env = r0, .nenv = 2},
                              {.rank = 1, .task = 3, .env = r1, .nenv = 1}};
    sl_step_msg_t m = {.type = SL_STEP_RUN, .job = 42, .step = 3, .argv = argv, .argc = 3,
                       .env = env, .nenv = 2, .cwd = "/home/a", .output = "o-%t",
                       .ranks = ranks, .nranks = 2};
    sl_step_msg_t d = round_trip(&m, SL_STEP_LINK_CTL);
    assert_int_equal(d.type, SL_STEP_RUN);
    assert_int_equal(d.job, 42);
    assert_int_equal(d.step, 3);
    assert_int_equal(d.argc, 3);
    assert_string_equal(d.argv[2], "echo $SLURM_PROCID");
    assert_null(d.argv[3]);
    assert_int_equal(d.nenv, 2);
    assert_string_equal(d.env[1].key, "A");
    assert_string_equal(d.env[1].value, "b c");
    assert_string_equal(d.cwd, "/home/a");
    assert_string_equal(d.output, "o-%t");
    assert_null(d.error);
    assert_int_equal(d.nranks, 2);
    assert_int_equal(d.ranks[1].rank, 1);
    assert_int_equal(d.ranks[1].task, 3);
    assert_int_equal(d.ranks[0].nenv, 2);
    assert_string_equal(d.ranks[0].env[1].value, "0,1");
    sl_step_msg_fini(&d);
    /* On a step daemon's link: one rank, no job, no ranks list; and a
     * terminal's size for srun --pty. */
    m.rank = 7;
    m.pty_rows = 40;
    m.pty_cols = 120;
    d = round_trip(&m, SL_STEP_LINK_STEPD);
    assert_int_equal(d.job, 0);
    assert_int_equal(d.rank, 7);
    assert_int_equal(d.nranks, 0);
    assert_string_equal(d.argv[0], "bash");
    assert_int_equal(d.pty_rows, 40);
    assert_int_equal(d.pty_cols, 120);
    sl_step_msg_fini(&d);
    sl_step_msg_t in = {.type = SL_STEP_STDIN, .job = 42, .step = 3, .rank = 0, .data = "ls\r",
                        .data_len = 3};
    d = round_trip(&in, SL_STEP_LINK_CTL);
    assert_int_equal(d.type, SL_STEP_STDIN);
    assert_int_equal(d.data_len, 3);
    assert_memory_equal(d.data, "ls\r", 3);
    sl_step_msg_fini(&d);
}

static void test_proto_step_events_round_trip_on_both_links(void **state) {
    (void)state;
    for (int link = 0; link < 2; link++) {
        sl_step_msg_t m = {.type = SL_STEP_STARTED, .job = 9, .step = 1, .rank = 4, .pid = 1234};
        sl_step_msg_t d = round_trip(&m, (sl_step_link_t)link);
        assert_int_equal(d.type, SL_STEP_STARTED);
        assert_int_equal(d.job, link == SL_STEP_LINK_CTL ? 9 : 0);
        assert_int_equal(d.rank, 4);
        assert_int_equal(d.pid, 1234);
        sl_step_msg_fini(&d);
        m = (sl_step_msg_t){.type = SL_STEP_EXIT, .job = 9, .step = 1, .rank = 4, .exit_code = 137,
                            .signal = 9, .reason = "lost"};
        d = round_trip(&m, (sl_step_link_t)link);
        assert_int_equal(d.exit_code, 137);
        assert_int_equal(d.signal, 9);
        assert_string_equal(d.reason, "lost");
        sl_step_msg_fini(&d);
        m = (sl_step_msg_t){.type = SL_STEP_SIGNAL, .job = 9, .step = 1, .sig = 15};
        d = round_trip(&m, (sl_step_link_t)link);
        assert_int_equal(d.sig, 15);
        sl_step_msg_fini(&d);
    }
}

static void test_proto_step_output_keeps_bytes_and_replaces_bad_utf8(void **state) {
    (void)state;
    const char data[] = "a\n\xc3\xa9\x00z\xff\xc3";
    sl_step_msg_t m = {.type = SL_STEP_OUT, .job = 1, .step = 0, .rank = 2, .fd = 2, .data = data,
                       .data_len = sizeof data - 1};
    sl_step_msg_t d = round_trip(&m, SL_STEP_LINK_CTL);
    assert_int_equal(d.fd, 2);
    assert_int_equal(d.data_len, 8);
    assert_memory_equal(d.data, "a\n\xc3\xa9?z??", 8);
    sl_step_msg_fini(&d);
}

static void test_proto_step_refuses_bad_lines_naming_the_field(void **state) {
    (void)state;
    static const struct {
        sl_step_link_t link;
        const char *line;
        int rc;
        const char *err;
    } cases[] = {
        {SL_STEP_LINK_CTL, "{\"type\":\"step_run\",\"step\":0,\"argv\":[\"x\"],\"ranks\":[]}", SL_EINVAL,
         "step_run: job: missing"},
        {SL_STEP_LINK_CTL, "{\"type\":\"step_run\",\"job\":1,\"step\":0,\"argv\":[],\"ranks\":[]}", SL_EINVAL,
         "step_run: argv: must be a non-empty array of strings"},
        {SL_STEP_LINK_CTL, "{\"type\":\"step_run\",\"job\":1,\"step\":0,\"argv\":[\"x\"],\"ranks\":[{\"rank\":0,\"task\":-1}]}",
         SL_EINVAL, "step_run: ranks[0]: task: must be an integer from 0 to 2147483647"},
        {SL_STEP_LINK_CTL, "{\"type\":\"step_run\",\"job\":1,\"step\":0,\"argv\":[\"x\"],\"env\":{\"A=B\":\"c\"},\"ranks\":[]}",
         SL_EINVAL, "step_run: env: must be an object of strings with names without '='"},
        {SL_STEP_LINK_CTL, "{\"type\":\"step_exit\",\"job\":1,\"step\":0,\"rank\":0,\"exit_code\":256}", SL_EINVAL,
         "step_exit: exit_code: must be an integer from 0 to 255"},
        {SL_STEP_LINK_CTL, "{\"type\":\"step_out\",\"job\":1,\"step\":0,\"rank\":0,\"data\":3}", SL_EINVAL,
         "step_out: data: must be a string"},
        {SL_STEP_LINK_STEPD, "{\"type\":\"run\",\"step\":0,\"rank\":0,\"argv\":[\"x\"],\"pty\":{\"rows\":0,\"cols\":80}}",
         SL_EINVAL, "run: pty: rows: must be an integer from 1 to 10000"},
        {SL_STEP_LINK_STEPD, "{\"type\":\"signal\",\"step\":0,\"signal\":0}", SL_EINVAL,
         "signal: signal: must be an integer from 1 to 64"},
        {SL_STEP_LINK_STEPD, "{\"type\":\"step_run\"}", SL_ENOENT, "unknown message type step_run"},
        {SL_STEP_LINK_CTL, "{\"type\":\"launch\"}", SL_ENOENT, "unknown message type launch"},
        {SL_STEP_LINK_CTL, "[1]", SL_EINVAL, "step message: message: must be a JSON object"},
        {SL_STEP_LINK_CTL, "{\"type\":", SL_EINVAL, "bad JSON"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sl_step_msg_t d;
        char err[256];
        int rc = sl_step_decode_line(cases[i].line, strlen(cases[i].line), cases[i].link, &d, err, sizeof err);
        if (rc != cases[i].rc || strncmp(err, cases[i].err, strlen(cases[i].err)) != 0)
            fail_msg("case %zu: %d %s", i, rc, err);
        sl_step_msg_fini(&d);
    }
    /* What cannot be encoded. */
    size_t len;
    sl_step_msg_t m = {.type = SL_STEP_RUN, .job = 1};
    assert_null(sl_step_encode(&m, SL_STEP_LINK_CTL, &len));
    m = (sl_step_msg_t){.type = SL_STEP_SIGNAL, .job = 1, .sig = 65};
    assert_null(sl_step_encode(&m, SL_STEP_LINK_CTL, &len));
    m = (sl_step_msg_t){.type = SL_STEP_NONE};
    assert_null(sl_step_encode(&m, SL_STEP_LINK_CTL, &len));
    json_t *o = json_pack("{s:s}", "type", "step_out");
    assert_true(sl_step_is_step(o, SL_STEP_LINK_CTL));
    assert_false(sl_step_is_step(o, SL_STEP_LINK_STEPD));
    json_decref(o);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_proto_step_run_round_trips_with_its_ranks, tu_teardown),
        cmocka_unit_test_teardown(test_proto_step_events_round_trip_on_both_links, tu_teardown),
        cmocka_unit_test_teardown(test_proto_step_output_keeps_bytes_and_replaces_bad_utf8, tu_teardown),
        cmocka_unit_test_teardown(test_proto_step_refuses_bad_lines_naming_the_field, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
