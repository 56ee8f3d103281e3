/*
 * test_proto_hb.c - which heartbeats an agent asks the controller to answer
 * (src/common/proto_hb.h), and the codec of a heartbeat that does not ask
 * (no seq) both ways: an old controller, which answers only heartbeats with
 * a seq, and a new one read it alike.
 */
#include <string.h>

#include "proto.h"
#include "proto_hb.h"
#include "testutil.h"

#define S INT64_C(1000000)

static void test_proto_hb_asks_to_keep_contact_within_half_node_timeout(void **state) {
    (void)state;
    /* Defaults: heartbeat 2 s, node_timeout 10 s. After an answer the
     * contact is fresh; the heartbeat at 2 s does not ask (4 s <= 5 s), the
     * one at 4 s does (6 s > 5 s): every second heartbeat. */
    assert_false(sl_proto_heartbeat_asks(0, 2 * S, 10 * S));
    assert_false(sl_proto_heartbeat_asks(2 * S, 2 * S, 10 * S));
    assert_false(sl_proto_heartbeat_asks(3 * S, 2 * S, 10 * S));
    assert_true(sl_proto_heartbeat_asks(3 * S + 1, 2 * S, 10 * S));
    assert_true(sl_proto_heartbeat_asks(4 * S, 2 * S, 10 * S));
    /* Once the contact is old (no answer came: a stalled controller),
     * every heartbeat asks. */
    for (int64_t age = 4; age < 30; age++)
        assert_true(sl_proto_heartbeat_asks(age * S, 2 * S, 10 * S));
    /* An interval of half node_timeout or more: every heartbeat asks (its
     * contact is one interval old when it goes), as before the rule (the
     * fencing tests' heartbeat 1 s, node_timeout 2 s). */
    assert_true(sl_proto_heartbeat_asks(1 * S - 1000, 1 * S, 2 * S));
    assert_true(sl_proto_heartbeat_asks(5 * S - 1000, 5 * S, 10 * S));
    /* A long node_timeout: fewer asks (60 s: every 15th of 2 s). */
    assert_false(sl_proto_heartbeat_asks(28 * S, 2 * S, 60 * S));
    assert_true(sl_proto_heartbeat_asks(30 * S, 2 * S, 60 * S));
    /* No fencing (a controller that sent no node_timeout_ms) or no contact
     * yet: every heartbeat asks. */
    assert_true(sl_proto_heartbeat_asks(0, 2 * S, 0));
    assert_true(sl_proto_heartbeat_asks(-1, 2 * S, 10 * S));
}

static void test_proto_hb_without_seq_is_a_heartbeat_without_answer(void **state) {
    (void)state;
    sl_proto_msg_t hb = {.type = SL_PROTO_HEARTBEAT, .time = 1764428400.5};
    char line[256], err[256];
    size_t len;
    assert_int_equal(sl_proto_encode(&hb, line, sizeof line, &len), 0);
    assert_string_equal(line, "{\"type\":\"heartbeat\",\"time\":1764428400.500000}\n");
    sl_proto_msg_t d;
    assert_int_equal(sl_proto_decode_line(line, len - 1, SL_PROTO_TO_CTL, &d, err, sizeof err), 0);
    assert_int_equal(d.type, SL_PROTO_HEARTBEAT);
    assert_int_equal(d.u.heartbeat.seq, 0); /* the controller answers only seq > 0 */
    assert_int_equal(d.u.heartbeat.nusage, 0);
    sl_proto_msg_fini(&d);
    /* And one that asks keeps its seq. */
    hb.u.heartbeat.seq = 42;
    assert_int_equal(sl_proto_encode(&hb, line, sizeof line, &len), 0);
    assert_string_equal(line, "{\"type\":\"heartbeat\",\"seq\":42,\"time\":1764428400.500000}\n");
    assert_int_equal(sl_proto_decode_line(line, len - 1, SL_PROTO_TO_CTL, &d, err, sizeof err), 0);
    assert_int_equal(d.u.heartbeat.seq, 42);
    sl_proto_msg_fini(&d);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_proto_hb_asks_to_keep_contact_within_half_node_timeout,
                                  tu_teardown),
        cmocka_unit_test_teardown(test_proto_hb_without_seq_is_a_heartbeat_without_answer,
                                  tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
