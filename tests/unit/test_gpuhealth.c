/*
 * test_gpuhealth.c - the XID catalogue (src/common/gpuhealth.h) as a
 * table of the cases a scheduler must get right, the names of states and
 * reasons both ways, and the heartbeat's health report through the wire
 * codec: encoded, decoded back to the same values, and refused with the
 * field named when it is wrong; a heartbeat without it decodes as before.
 */
#include <stdio.h>
#include <string.h>

#include "gpuhealth.h"
#include "proto.h"
#include "proto_hb.h"
#include "testutil.h"

static void test_gpuhealth_xid_catalogue(void **state) {
    (void)state;
    static const struct {
        int32_t xid;
        sl_xid_action_t action;
        sl_health_state_t health;
        const char *what;
    } cases[] = {
        {13, SL_XID_APP, SL_HEALTH_HEALTHY, "graphics engine exception"},
        {31, SL_XID_APP, SL_HEALTH_HEALTHY, "GPU memory page fault"},
        {43, SL_XID_APP, SL_HEALTH_HEALTHY, "GPU stopped processing"},
        {48, SL_XID_RESET, SL_HEALTH_UNHEALTHY, "double-bit ECC error"},
        {63, SL_XID_WATCH, SL_HEALTH_DEGRADED, NULL},
        {64, SL_XID_RESET, SL_HEALTH_UNHEALTHY, "row remapping failure"},
        {74, SL_XID_RESET, SL_HEALTH_UNHEALTHY, "NVLink error"},
        {79, SL_XID_REBOOT, SL_HEALTH_UNHEALTHY, "fell off the bus"},
        {92, SL_XID_WATCH, SL_HEALTH_DEGRADED, "high single-bit ECC error rate"},
        {94, SL_XID_RESET, SL_HEALTH_UNHEALTHY, "contained ECC error"},
        {95, SL_XID_RESET, SL_HEALTH_UNHEALTHY, "uncontained ECC error"},
        {1, SL_XID_WATCH, SL_HEALTH_DEGRADED, "unknown XID"},
        {-5, SL_XID_WATCH, SL_HEALTH_DEGRADED, "unknown XID"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sl_xid_info_t x = sl_xid_classify(cases[i].xid);
        assert_int_equal(x.action, cases[i].action);
        assert_int_equal(sl_xid_health(cases[i].xid), cases[i].health);
        assert_non_null(x.what);
        if (cases[i].what) assert_string_equal(x.what, cases[i].what);
    }
    assert_string_equal(sl_xid_action_name(SL_XID_REBOOT), "node_reboot");
    assert_string_equal(sl_xid_action_name(SL_XID_APP), "application");
    assert_string_equal(sl_xid_action_name((sl_xid_action_t)42), "?");
}

static void test_gpuhealth_names_both_ways(void **state) {
    (void)state;
    for (int i = 0; i < SL_HEALTH_NSTATES; i++) {
        sl_health_state_t s = SL_HEALTH_NSTATES;
        assert_int_equal(sl_health_state_parse(sl_health_state_name((sl_health_state_t)i), &s), 0);
        assert_int_equal(s, i);
    }
    for (int i = 0; i < SL_HREASON_NREASONS; i++) {
        sl_health_reason_t r = SL_HREASON_NREASONS;
        assert_int_equal(sl_health_reason_parse(sl_health_reason_name((sl_health_reason_t)i), &r), 0);
        assert_int_equal(r, i);
    }
    sl_health_state_t s = SL_HEALTH_DEGRADED;
    assert_int_equal(sl_health_state_parse("sick", &s), -1);
    assert_int_equal(s, SL_HEALTH_DEGRADED);
    assert_int_equal(sl_health_state_parse(NULL, &s), -1);
    assert_string_equal(sl_health_state_name((sl_health_state_t)7), "?");
    assert_string_equal(sl_health_reason_name(SL_HREASON_LOST), "gpu_lost");
}

static void test_gpuhealth_heartbeat_round_trip(void **state) {
    (void)state;
    sl_proto_gpu_health_t g[2] = {
        {.gpu = 3, .state = SL_HEALTH_UNHEALTHY, .reason = SL_HREASON_XID, .xid = 79, .xids = 2,
         .xid_time = 1764428399.25, .message = "XID 79, fell off the bus"},
        {.gpu = 5, .state = SL_HEALTH_DEGRADED, .reason = SL_HREASON_THERMAL,
         .message = "quote \" and\nnewline"},
    };
    sl_proto_msg_t m = {.type = SL_PROTO_HEARTBEAT, .time = 1764428400.5, .u.heartbeat.seq = 7};
    m.u.heartbeat.health = (sl_proto_health_t){.present = true, .state = SL_HEALTH_UNHEALTHY,
                                               .reason = SL_HREASON_CHECK,
                                               .message = "NHC: disk /scratch full",
                                               .gpus = g, .ngpus = 2};
    char line[2048], err[256];
    size_t len;
    assert_int_equal(sl_proto_encode(&m, line, sizeof line, &len), 0);
    assert_true(len < sizeof line);
    uint64_t seq;
    assert_false(sl_proto_heartbeat_scan(line, len - 1, &seq)); /* never the fast path */
    sl_proto_msg_t d;
    assert_int_equal(sl_proto_decode_line(line, len - 1, SL_PROTO_TO_CTL, &d, err, sizeof err), 0);
    const sl_proto_health_t *h = &d.u.heartbeat.health;
    assert_true(h->present);
    assert_int_equal(h->state, SL_HEALTH_UNHEALTHY);
    assert_int_equal(h->reason, SL_HREASON_CHECK);
    assert_string_equal(h->message, "NHC: disk /scratch full");
    assert_int_equal(h->ngpus, 2);
    assert_int_equal(h->gpus[0].gpu, 3);
    assert_int_equal(h->gpus[0].xid, 79);
    assert_int_equal(h->gpus[0].xids, 2);
    assert_true(h->gpus[0].xid_time == 1764428399.25);
    assert_true(h->gpus[1].xid_time == 0);
    assert_int_equal(h->gpus[0].reason, SL_HREASON_XID);
    assert_string_equal(h->gpus[0].message, "XID 79, fell off the bus");
    assert_int_equal(h->gpus[1].state, SL_HEALTH_DEGRADED);
    assert_int_equal(h->gpus[1].xid, 0);
    assert_string_equal(h->gpus[1].message, "quote \" and\nnewline");
    assert_int_equal(d.u.heartbeat.seq, 7);
    sl_proto_msg_fini(&d);
    /* Without a report: absent, as before. */
    sl_proto_msg_t plain = {.type = SL_PROTO_HEARTBEAT, .time = 5};
    assert_int_equal(sl_proto_encode(&plain, line, sizeof line, &len), 0);
    assert_null(strstr(line, "health"));
    assert_int_equal(sl_proto_decode_line(line, len - 1, SL_PROTO_TO_CTL, &d, err, sizeof err), 0);
    assert_false(d.u.heartbeat.health.present);
    sl_proto_msg_fini(&d);
}

static void test_gpuhealth_heartbeat_bad_fields_named(void **state) {
    (void)state;
    static const struct {
        const char *health;
        const char *err;
    } cases[] = {
        {"3", "heartbeat: health: must be an object"},
        {"{}", "heartbeat: health.state: must be one of healthy, degraded, unhealthy"},
        {"{\"state\":\"sick\"}", "heartbeat: health.state: must be one of"},
        {"{\"state\":\"healthy\",\"reason\":\"gremlins\"}", "heartbeat: health.reason: must be one of"},
        {"{\"state\":\"healthy\",\"message\":4}", "heartbeat: health.message: must be a string"},
        {"{\"state\":\"healthy\",\"gpus\":{}}", "heartbeat: health.gpus: must be an array"},
        {"{\"state\":\"healthy\",\"gpus\":[{\"state\":\"healthy\"}]}",
         "heartbeat: health.gpus[0].gpu: must be"},
        {"{\"state\":\"healthy\",\"gpus\":[{\"gpu\":1024,\"state\":\"healthy\"}]}",
         "heartbeat: health.gpus[0].gpu: must be a GPU index from 0 to 1023"},
        {"{\"state\":\"healthy\",\"gpus\":[{\"gpu\":1,\"state\":\"healthy\",\"xid\":-1}]}",
         "heartbeat: health.gpus[0].xid: must be"},
        {"{\"state\":\"healthy\",\"gpus\":[{\"gpu\":1,\"state\":\"healthy\",\"xids\":\"x\"}]}",
         "heartbeat: health.gpus[0].xids: must be"},
        {"{\"state\":\"healthy\",\"gpus\":[{\"gpu\":1,\"state\":\"healthy\",\"xid_time\":-2}]}",
         "heartbeat: health.gpus[0].xid_time: must be a time in seconds since the epoch"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char line[512], err[256] = "";
        int n = snprintf(line, sizeof line, "{\"type\":\"heartbeat\",\"seq\":3,\"health\":%s,\"time\":1}",
                         cases[i].health);
        sl_proto_msg_t d;
        assert_int_equal(sl_proto_decode_line(line, (size_t)n, SL_PROTO_TO_CTL, &d, err, sizeof err),
                         SL_EINVAL);
        if (strncmp(err, cases[i].err, strlen(cases[i].err)) != 0) fail_msg("%s: %s", line, err);
        assert_true(d.has_ids); /* still answered */
        assert_int_equal(d.u.heartbeat.seq, 3);
        sl_proto_msg_fini(&d);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_gpuhealth_xid_catalogue, tu_teardown),
        cmocka_unit_test_teardown(test_gpuhealth_names_both_ways, tu_teardown),
        cmocka_unit_test_teardown(test_gpuhealth_heartbeat_round_trip, tu_teardown),
        cmocka_unit_test_teardown(test_gpuhealth_heartbeat_bad_fields_named, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
