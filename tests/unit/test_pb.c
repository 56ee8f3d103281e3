/*
 * test_pb.c - the protobuf writer and reader of the HA gRPC client
 * (src/ctl/ha/pb.h), against the wire format's own examples and the byte
 * layout of an etcd message.
 *
 * Known bytes: field 1 = 150 is 08 96 01 (the encoding guide's example);
 * field 2 = "testing" is 12 07 then the bytes; a nested message is its
 * field's tag, its length, its bytes. The reader walks the same bytes
 * back, skips fixed-width fields, and refuses truncated or overlong ones.
 */
#include <string.h>

#include "testutil.h"

#include "ha/pb.h"

static void test_pb_varint_and_bytes_as_the_guide_writes_them(void **state) {
    (void)state;
    ctl_pb_t b = {0};
    ctl_pb_varint(&b, 1, 150);
    ctl_pb_bytes(&b, 2, "testing", 7);
    static const unsigned char want[] = {0x08, 0x96, 0x01, 0x12, 0x07, 't', 'e', 's', 't',
                                         'i',  'n',  'g'};
    assert_int_equal(b.len, sizeof want);
    assert_memory_equal(b.p, want, sizeof want);
    ctl_pb_free(&b);
    assert_null(b.p);
    SL_ASSERT_NO_LEAKS();
}

static void test_pb_large_values_and_fields(void **state) {
    (void)state;
    ctl_pb_t b = {0};
    ctl_pb_varint(&b, 5, UINT64_MAX); /* ten bytes */
    ctl_pb_varint(&b, 64, 0);         /* a two-byte tag: (64 << 3) = 512 */
    static const unsigned char want[] = {0x28, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                         0xff, 0xff, 0x01, 0x80, 0x04, 0x00};
    assert_int_equal(b.len, sizeof want);
    assert_memory_equal(b.p, want, sizeof want);
    ctl_pbr_t r;
    ctl_pbf_t f;
    ctl_pbr_init(&r, b.p, b.len);
    assert_true(ctl_pbr_next(&r, &f));
    assert_int_equal(f.num, 5);
    assert_true(f.v == UINT64_MAX);
    assert_null(f.data);
    assert_true(ctl_pbr_next(&r, &f));
    assert_int_equal(f.num, 64);
    assert_int_equal(f.v, 0);
    assert_false(ctl_pbr_next(&r, &f));
    assert_false(r.bad);
    ctl_pb_free(&b);
    SL_ASSERT_NO_LEAKS();
}

/* An etcd Compare{result EQUAL, target CREATE, key "k", create_revision 7}
 * nested as TxnRequest field 1, read back field by field. */
static void test_pb_nested_message_round_trip(void **state) {
    (void)state;
    ctl_pb_t cmp = {0}, txn = {0};
    ctl_pb_varint(&cmp, 1, 0);
    ctl_pb_varint(&cmp, 2, 1);
    ctl_pb_bytes(&cmp, 3, "k", 1);
    ctl_pb_varint(&cmp, 5, 7);
    ctl_pb_msg(&txn, 1, &cmp);
    static const unsigned char want[] = {0x0a, 0x09, 0x08, 0x00, 0x10, 0x01,
                                         0x1a, 0x01, 'k',  0x28, 0x07};
    assert_int_equal(txn.len, sizeof want);
    assert_memory_equal(txn.p, want, sizeof want);
    ctl_pbr_t r, in;
    ctl_pbf_t f, g[4];
    ctl_pbr_init(&r, txn.p, txn.len);
    assert_true(ctl_pbr_next(&r, &f));
    assert_int_equal(f.num, 1);
    assert_int_equal(f.len, 9);
    ctl_pbr_init(&in, f.data, f.len);
    int k = 0;
    while (k < 4 && ctl_pbr_next(&in, &g[k]))
        k++;
    assert_int_equal(k, 4);
    assert_false(in.bad);
    assert_int_equal(g[0].num, 1);
    assert_int_equal(g[0].v, 0);
    assert_int_equal(g[1].num, 2);
    assert_int_equal(g[1].v, 1);
    assert_int_equal(g[2].num, 3);
    assert_int_equal(g[2].len, 1);
    assert_memory_equal(g[2].data, "k", 1);
    assert_int_equal(g[3].num, 5);
    assert_int_equal(g[3].v, 7);
    assert_false(ctl_pbr_next(&r, &f));
    ctl_pb_free(&cmp);
    ctl_pb_free(&txn);
    SL_ASSERT_NO_LEAKS();
}

/* Fixed-width fields (wire types 1 and 5) are stepped over. */
static void test_pb_reader_skips_fixed_width(void **state) {
    (void)state;
    static const unsigned char msg[] = {0x09, 1, 2, 3, 4, 5, 6, 7, 8, /* field 1, 64-bit */
                                        0x15, 1, 2, 3, 4,             /* field 2, 32-bit */
                                        0x18, 0x2a};                  /* field 3 = 42 */
    ctl_pbr_t r;
    ctl_pbf_t f;
    ctl_pbr_init(&r, msg, sizeof msg);
    assert_true(ctl_pbr_next(&r, &f));
    assert_int_equal(f.num, 3);
    assert_int_equal(f.v, 42);
    assert_false(ctl_pbr_next(&r, &f));
    assert_false(r.bad);
}

/* What is not protobuf ends the walk with bad set, never reads past the
 * end: a length beyond the message, a varint cut off, a fixed field cut
 * off, an unknown wire type (3, a group). */
static void test_pb_reader_refuses_what_is_not_protobuf(void **state) {
    (void)state;
    static const unsigned char overlong[] = {0x12, 0x05, 'a', 'b'};
    static const unsigned char cut[] = {0x08, 0x96};
    static const unsigned char cutfixed[] = {0x09, 1, 2, 3};
    static const unsigned char group[] = {0x0b, 0x00};
    const unsigned char *cases[] = {overlong, cut, cutfixed, group};
    size_t lens[] = {sizeof overlong, sizeof cut, sizeof cutfixed, sizeof group};
    ctl_pbr_t r;
    ctl_pbf_t f;
    for (size_t i = 0; i < 4; i++) {
        ctl_pbr_init(&r, cases[i], lens[i]);
        assert_false(ctl_pbr_next(&r, &f));
        assert_true(r.bad);
    }
    ctl_pbr_init(&r, "", 0); /* empty: the end, not an error */
    assert_false(ctl_pbr_next(&r, &f));
    assert_false(r.bad);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_pb_varint_and_bytes_as_the_guide_writes_them, tu_teardown),
        cmocka_unit_test_teardown(test_pb_large_values_and_fields, tu_teardown),
        cmocka_unit_test_teardown(test_pb_nested_message_round_trip, tu_teardown),
        cmocka_unit_test_teardown(test_pb_reader_skips_fixed_width, tu_teardown),
        cmocka_unit_test_teardown(test_pb_reader_refuses_what_is_not_protobuf, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
