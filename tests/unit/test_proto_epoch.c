/*
 * test_proto_epoch.c - the controller's epoch on the agent protocol
 * (src/common/proto_epoch.h, docs/protocol.md "Controllers and epochs"):
 * the field on every controller -> agent message (written right after the
 * type when set, absent when 0, decoded also for a type the agent does not
 * know), the redirect message, rejections naming the field, the agent's
 * rule of acceptance (table-driven) and its mark's file line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "proto_step.h"
#include "testutil.h"

static void test_proto_epoch_on_every_controller_message(void **state) {
    (void)state;
    static const sl_proto_type_t types[] = {SL_PROTO_WELCOME, SL_PROTO_ERROR, SL_PROTO_LAUNCH,
                                            SL_PROTO_KILL, SL_PROTO_ACK, SL_PROTO_LOGS_REQ,
                                            SL_PROTO_HEARTBEAT_ECHO, SL_PROTO_REDIRECT};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        for (uint64_t epoch = 0; epoch < 2; epoch++) {
            sl_proto_msg_t m = {.type = types[i], .job = 4, .task = 1, .req = 2,
                                .epoch = epoch ? 9007199254740993ULL : 0};
            if (m.type == SL_PROTO_ERROR) m.u.error.message = "no";
            if (m.type == SL_PROTO_KILL) m.u.kill.grace_ms = -1;
            if (m.type == SL_PROTO_HEARTBEAT_ECHO) m.u.heartbeat.seq = 3;
            if (m.type == SL_PROTO_LAUNCH)
                m.u.launch = (sl_proto_launch_t){.world_size = 1, .master_port = 29500};
            size_t len;
            char *line = sl_proto_encode_alloc(&m, &len);
            assert_non_null(line);
            char want[96];
            snprintf(want, sizeof want, "{\"type\":\"%s\"%s", sl_proto_type_name(m.type),
                     epoch ? ",\"epoch\":9007199254740993" : "");
            if (strncmp(line, want, strlen(want)) != 0) fail_msg("%s lacks %s", line, want);
            if (!epoch && strstr(line, "epoch")) fail_msg("%s: an epoch of 0 is written", line);
            sl_proto_msg_t d;
            char err[256];
            if (sl_proto_decode_line(line, len - 1, SL_PROTO_TO_AGENT, &d, err, sizeof err) != 0)
                fail_msg("%s: %s", line, err);
            assert_int_equal(d.type, m.type);
            assert_true(d.epoch == m.epoch);
            sl_proto_msg_fini(&d);
            sl_free(line);
        }
    }
}

static void test_proto_epoch_redirect_and_unknown_types(void **state) {
    (void)state;
    sl_proto_msg_t m = {.type = SL_PROTO_REDIRECT, .epoch = 5, .u.redirect.leader = "ctl2:7071"};
    size_t len;
    char *line = sl_proto_encode_alloc(&m, &len);
    assert_string_equal(line, "{\"type\":\"redirect\",\"epoch\":5,\"leader\":\"ctl2:7071\"}\n");
    sl_proto_msg_t d;
    char err[256];
    assert_int_equal(sl_proto_decode_line(line, len - 1, SL_PROTO_TO_AGENT, &d, err, sizeof err), 0);
    assert_string_equal(d.u.redirect.leader, "ctl2:7071");
    sl_proto_msg_fini(&d);
    sl_free(line);
    /* Leader not known: no leader. */
    const char *none = "{\"type\":\"redirect\",\"epoch\":5}";
    assert_int_equal(sl_proto_decode_line(none, strlen(none), SL_PROTO_TO_AGENT, &d, err, sizeof err), 0);
    assert_null(d.u.redirect.leader);
    sl_proto_msg_fini(&d);
    /* A controller never reads a redirect. */
    assert_int_equal(sl_proto_decode_line(none, strlen(none), SL_PROTO_TO_CTL, &d, err, sizeof err),
                     SL_ENOENT);
    sl_proto_msg_fini(&d);
    /* A type the codec does not know (a job step's) still has its epoch
     * read, so that the agent can refuse it. */
    const char *step = "{\"type\":\"step_run\",\"epoch\":3,\"job\":1}";
    assert_int_equal(sl_proto_decode_line(step, strlen(step), SL_PROTO_TO_AGENT, &d, err, sizeof err),
                     SL_ENOENT);
    assert_true(d.epoch == 3);
    sl_proto_msg_fini(&d);
    /* A launch whose body is bad still has its epoch. */
    const char *bad = "{\"type\":\"launch\",\"epoch\":2,\"job\":1,\"task\":0,\"gpus\":\"x\"}";
    assert_int_equal(sl_proto_decode_line(bad, strlen(bad), SL_PROTO_TO_AGENT, &d, err, sizeof err),
                     SL_EINVAL);
    assert_true(d.epoch == 2);
    sl_proto_msg_fini(&d);
    /* The job steps' encoder writes it too. */
    sl_step_msg_t sm = {.type = SL_STEP_SIGNAL, .job = 3, .step = 0, .sig = 15, .epoch = 8};
    char *sl = sl_step_encode(&sm, SL_STEP_LINK_CTL, &len);
    assert_non_null(sl);
    assert_non_null(strstr(sl, "\"epoch\":8"));
    sl_free(sl);
}

static void test_proto_epoch_rejects_bad_fields(void **state) {
    (void)state;
    static const struct {
        const char *line;
        const char *err;
    } bad[] = {
        {"{\"type\":\"launch\",\"epoch\":-1,\"job\":1,\"task\":0}", "launch: epoch: must be a whole number"},
        {"{\"type\":\"kill\",\"epoch\":\"3\",\"job\":1,\"task\":0}", "kill: epoch: must be"},
        {"{\"type\":\"welcome\",\"epoch\":1.5}", "welcome: epoch: must be"},
        {"{\"type\":\"redirect\",\"leader\":7}", "redirect: leader"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sl_proto_msg_t d;
        char err[256];
        int rc = sl_proto_decode_line(bad[i].line, strlen(bad[i].line), SL_PROTO_TO_AGENT, &d, err,
                                      sizeof err);
        if (rc != SL_EINVAL || strstr(err, bad[i].err) == NULL)
            fail_msg("%s: rc %d, \"%s\" lacks \"%s\"", bad[i].line, rc, err, bad[i].err);
        sl_proto_msg_fini(&d);
    }
    /* null is absent. */
    const char *ok = "{\"type\":\"ack\",\"epoch\":null,\"job\":1,\"task\":0}";
    sl_proto_msg_t d;
    char err[256];
    assert_int_equal(sl_proto_decode_line(ok, strlen(ok), SL_PROTO_TO_AGENT, &d, err, sizeof err), 0);
    assert_true(d.epoch == 0);
    sl_proto_msg_fini(&d);
}

static void test_proto_epoch_admit_rule(void **state) {
    (void)state;
    static const struct {
        uint64_t highest;
        const char *mark_instance;
        const char *instance;
        uint64_t epoch;
        sl_epoch_verdict_t want;
        uint64_t highest_after;
        const char *instance_after;
    } cases[] = {
        /* nothing accepted yet: everything is, an older controller's 0 too */
        {0, "", NULL, 0, SL_EPOCH_SAME, 0, ""},
        {0, "", "aa", 0, SL_EPOCH_RAISED, 0, "aa"},
        {0, "", "aa", 3, SL_EPOCH_RAISED, 3, "aa"},
        /* the same epoch again: accepted, nothing to save */
        {3, "aa", "aa", 3, SL_EPOCH_SAME, 3, "aa"},
        {3, "aa", NULL, 3, SL_EPOCH_SAME, 3, "aa"},
        /* a newer one raises the mark */
        {3, "aa", "aa", 4, SL_EPOCH_RAISED, 4, "aa"},
        /* an older one, or none at all, is refused once one was seen */
        {3, "aa", "aa", 2, SL_EPOCH_REFUSED, 3, "aa"},
        {3, "aa", NULL, 0, SL_EPOCH_REFUSED, 3, "aa"},
        {3, "", NULL, 1, SL_EPOCH_REFUSED, 3, ""},
        /* another cluster instance (a database made anew) starts over */
        {9, "aa", "bb", 1, SL_EPOCH_RAISED, 1, "bb"},
        /* an invalid instance counts as none */
        {9, "aa", "B.B", 1, SL_EPOCH_REFUSED, 9, "aa"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sl_epoch_mark_t mk = {.highest = cases[i].highest};
        snprintf(mk.instance, sizeof mk.instance, "%s", cases[i].mark_instance);
        sl_epoch_verdict_t v = sl_epoch_admit(&mk, cases[i].instance, cases[i].epoch);
        if (v != cases[i].want || mk.highest != cases[i].highest_after ||
            strcmp(mk.instance, cases[i].instance_after) != 0)
            fail_msg("case %zu: verdict %d mark %llu/%s, want %d %llu/%s", i, v,
                     (unsigned long long)mk.highest, mk.instance, cases[i].want,
                     (unsigned long long)cases[i].highest_after, cases[i].instance_after);
    }
}

static void test_proto_epoch_mark_line(void **state) {
    (void)state;
    sl_epoch_mark_t mk = {.highest = 42}, back;
    snprintf(mk.instance, sizeof mk.instance, "3f9a2c1d7e6b5a40");
    char buf[96];
    sl_epoch_mark_format(&mk, buf, sizeof buf);
    assert_string_equal(buf, "42 3f9a2c1d7e6b5a40\n");
    assert_int_equal(sl_epoch_mark_parse(buf, &back), 0);
    assert_true(back.highest == 42);
    assert_string_equal(back.instance, "3f9a2c1d7e6b5a40");
    sl_epoch_mark_t none = {.highest = 7};
    sl_epoch_mark_format(&none, buf, sizeof buf);
    assert_string_equal(buf, "7 -\n");
    assert_int_equal(sl_epoch_mark_parse("7 -", &back), 0);
    assert_true(back.highest == 7 && back.instance[0] == '\0');
    static const char *bad[] = {"", "x 1", "-1 -", "7", "7 ", "7 A.B", "7 aa\nmore",
                                "99999999999999999999 -"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (sl_epoch_mark_parse(bad[i], &back) != SL_EINVAL) fail_msg("\"%s\" parsed", bad[i]);
        assert_true(back.highest == 0);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_proto_epoch_on_every_controller_message, tu_teardown),
        cmocka_unit_test_teardown(test_proto_epoch_redirect_and_unknown_types, tu_teardown),
        cmocka_unit_test_teardown(test_proto_epoch_rejects_bad_fields, tu_teardown),
        cmocka_unit_test_teardown(test_proto_epoch_admit_rule, tu_teardown),
        cmocka_unit_test_teardown(test_proto_epoch_mark_line, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
