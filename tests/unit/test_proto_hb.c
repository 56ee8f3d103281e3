/*
 * test_proto_hb.c - which heartbeats an agent asks the controller to answer
 * (src/common/proto_hb.h), and the codec of a heartbeat that does not ask
 * (no seq) both ways: an old controller, which answers only heartbeats with
 * a seq, and a new one read it alike. Then the controller's scan of a plain
 * heartbeat: every line it accepts, the full decoder decodes to a valid
 * heartbeat of the same seq and no usage (a table of near misses, then
 * random mutations of valid lines).
 */
#include <stdio.h>
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

/* The scan accepts line only if the decoder agrees: a valid heartbeat of
 * the same seq without usage. Returns whether the scan accepted. */
static bool scan_agrees(const char *line, size_t len) {
    uint64_t seq = 99;
    if (!sl_proto_heartbeat_scan(line, len, &seq))
        return false;
    sl_proto_msg_t d;
    char err[256];
    int rc = sl_proto_decode_line(line, len, SL_PROTO_TO_CTL, &d, err, sizeof err);
    if (rc != 0 || d.type != SL_PROTO_HEARTBEAT || d.u.heartbeat.seq != seq ||
        d.u.heartbeat.nusage != 0)
        fail_msg("scan accepted %.*s (seq %llu), the decoder: rc %d type %d seq %llu: %s", (int)len,
                 line, (unsigned long long)seq, rc, (int)d.type,
                 (unsigned long long)d.u.heartbeat.seq, rc ? err : "");
    sl_proto_msg_fini(&d);
    return true;
}

static void test_proto_hb_scan_takes_only_what_the_decoder_reads_alike(void **state) {
    (void)state;
    static const struct {
        const char *line;
        bool takes;
        uint64_t seq;
    } cases[] = {
        {"{\"type\":\"heartbeat\",\"seq\":41,\"time\":1764428400.123456}", true, 41},
        {"{\"type\":\"heartbeat\",\"time\":1764428400.123456}", true, 0},
        {"{\"type\":\"heartbeat\",\"seq\":1,\"time\":0}", true, 1},
        {"{\"type\":\"heartbeat\",\"seq\":0,\"time\":0.5}", true, 0},
        {"{\"type\":\"heartbeat\",\"seq\":999999999999999999,\"time\":99999999999.9}", true,
         UINT64_C(999999999999999999)},
        /* Near misses: the full decoder takes over. */
        {"{\"type\":\"heartbeat\",\"seq\":1000000000000000000,\"time\":1}", false, 0},
        {"{\"type\":\"heartbeat\",\"seq\":01,\"time\":1}", false, 0},
        {"{\"type\":\"heartbeat\",\"seq\":-1,\"time\":1}", false, 0},
        {"{\"type\":\"heartbeat\",\"seq\":1.0,\"time\":1}", false, 0},
        {"{\"type\":\"heartbeat\",\"seq\":,\"time\":1}", false, 0},
        {"{\"type\":\"heartbeat\",\"seq\":1,\"time\":100000000000}", false, 0},
        {"{\"type\":\"heartbeat\",\"seq\":1,\"time\":1e5}", false, 0},
        {"{\"type\":\"heartbeat\",\"seq\":1,\"time\":-1}", false, 0},
        {"{\"type\":\"heartbeat\",\"seq\":1,\"time\":1.}", false, 0},
        {"{\"type\":\"heartbeat\",\"seq\":1,\"time\":00}", false, 0},
        {"{\"type\":\"heartbeat\",\"seq\":1,\"time\":\"1\"}", false, 0},
        {"{\"type\":\"heartbeat\",\"seq\":1,\"time\":1} ", false, 0},
        {"{\"type\":\"heartbeat\",\"seq\":1,\"time\":1,\"usage\":[]}", false, 0},
        {"{\"type\":\"heartbeat\",\"seq\":1,\"usage\":[],\"time\":1}", false, 0},
        {"{\"type\":\"heartbeat\",\"time\":1,\"seq\":1}", false, 0},
        {"{\"type\":\"heartbeat\"}", false, 0},
        {"{\"type\":\"heartbeats\",\"time\":1}", false, 0},
        {"{\"type\": \"heartbeat\",\"time\":1}", false, 0},
        {"{\"seq\":1,\"type\":\"heartbeat\",\"time\":1}", false, 0},
        {"{\"type\":\"heartbeat\",\"seq\":1,\"time\":1}}", false, 0},
        {"", false, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint64_t seq = 12345;
        bool took = sl_proto_heartbeat_scan(cases[i].line, strlen(cases[i].line), &seq);
        if (took != cases[i].takes)
            fail_msg("%s: scan %s", cases[i].line, took ? "took it" : "did not take it");
        if (took) {
            assert_int_equal(seq, cases[i].seq);
            assert_true(scan_agrees(cases[i].line, strlen(cases[i].line)));
        }
    }
    /* Random mutations of valid lines (a byte changed, dropped or
     * doubled; a prefix): whatever the scan takes, the decoder reads alike. */
    static const char *const seeds[] = {
        "{\"type\":\"heartbeat\",\"seq\":41,\"time\":1764428400.123456}",
        "{\"type\":\"heartbeat\",\"time\":1764428400.5}",
    };
    static const char alphabet[] = "0123456789.-+eE,:{}\" ast";
    uint64_t r = 88172645463325252u;
    int took = 0;
    for (int k = 0; k < 200000; k++) {
        r ^= r << 13;
        r ^= r >> 7;
        r ^= r << 17;
        const char *seed = seeds[r % 2];
        char buf[128];
        size_t n = strlen(seed), at = (size_t)(r >> 8) % n;
        memcpy(buf, seed, n);
        switch ((r >> 40) % 4) {
        case 0: buf[at] = alphabet[(r >> 20) % (sizeof alphabet - 1)]; break;
        case 1: memmove(buf + at, buf + at + 1, n - at - 1); n--; break;
        case 2: memmove(buf + at + 1, buf + at, n - at); n++; break;
        default: n = at; break;
        }
        took += scan_agrees(buf, n);
    }
    assert_true(took > 0); /* some mutations are still plain heartbeats */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_proto_hb_asks_to_keep_contact_within_half_node_timeout,
                                  tu_teardown),
        cmocka_unit_test_teardown(test_proto_hb_without_seq_is_a_heartbeat_without_answer,
                                  tu_teardown),
        cmocka_unit_test_teardown(test_proto_hb_scan_takes_only_what_the_decoder_reads_alike,
                                  tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
