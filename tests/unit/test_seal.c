/*
 * test_seal.c - AES-256-GCM sealing and base64 (src/common/seal.h), the
 * secret store's names and the job spec's references
 * (src/common/secretref.h), and a launch's secrets on the wire
 * (src/common/proto_secret.h).
 *
 * Sealing: round trips of empty, short and binary values; a value sealed
 * twice differs (a new nonce each time); every single changed byte of a
 * sealed value, another key, another associated data and a cut value fail
 * to open, leaving nothing of the plain value in the output. Base64 against
 * RFC 4648's vectors, and refusals. References: table cases, each refusal
 * naming the item's place. The launch: a round trip through the codec, and
 * rejections naming the field.
 */
#include <stdio.h>
#include <string.h>

#include "proto.h"
#include "seal.h"
#include "secretref.h"
#include "testutil.h"

static const unsigned char KEY[SL_SEAL_KEY_BYTES] = "0123456789abcdef0123456789abcdef";

static void test_seal_round_trip_and_fresh_nonce(void **state) {
    (void)state;
    static const char *const vals[] = {"", "x", "pw-123", "a longer value over one block of AES"};
    for (size_t i = 0; i < 4; i++) {
        size_t n = strlen(vals[i]), got = 99;
        unsigned char a[128], b[128], out[128];
        assert_int_equal(sl_seal(KEY, "t\0n\0k", 5, vals[i], n, a), 0);
        assert_int_equal(sl_seal(KEY, "t\0n\0k", 5, vals[i], n, b), 0);
        assert_memory_not_equal(a, b, SL_SEAL_NONCE_BYTES); /* a new nonce each time */
        if (n >= 4) assert_null(memmem(a, n + SL_SEAL_OVERHEAD, vals[i], 4));
        assert_int_equal(sl_unseal(KEY, "t\0n\0k", 5, a, n + SL_SEAL_OVERHEAD, out, &got), 0);
        assert_int_equal(got, n);
        assert_memory_equal(out, vals[i], n);
    }
    unsigned char bin[3] = {0, 0xff, 0}, s[3 + SL_SEAL_OVERHEAD], o[3];
    size_t got;
    assert_int_equal(sl_seal(KEY, NULL, 0, bin, 3, s), 0);
    assert_int_equal(sl_unseal(KEY, NULL, 0, s, sizeof s, o, &got), 0);
    assert_memory_equal(o, bin, 3);
    SL_ASSERT_NO_LEAKS();
}

static void test_seal_tamper_key_and_aad_are_detected(void **state) {
    (void)state;
    const char *v = "the-plain-value";
    size_t n = strlen(v), len = n + SL_SEAL_OVERHEAD, got;
    unsigned char s[64], t[64], out[64];
    assert_int_equal(sl_seal(KEY, "alice\0db\0pw", 11, v, n, s), 0);
    for (size_t i = 0; i < len; i++) {
        for (int bit = 0; bit < 8; bit += 7) {
            memcpy(t, s, len);
            t[i] ^= (unsigned char)(1u << bit);
            memset(out, 'Z', sizeof out);
            assert_int_equal(sl_unseal(KEY, "alice\0db\0pw", 11, t, len, out, &got), -1);
            assert_int_equal(got, 0);
            assert_null(memmem(out, sizeof out, "plain", 5)); /* wiped */
        }
    }
    unsigned char other[SL_SEAL_KEY_BYTES];
    memcpy(other, KEY, sizeof other);
    other[31] ^= 1;
    assert_int_equal(sl_unseal(other, "alice\0db\0pw", 11, s, len, out, &got), -1);
    /* Another tenant's row, another name or key: the same bytes do not open. */
    assert_int_equal(sl_unseal(KEY, "bob\0db\0pw", 9, s, len, out, &got), -1);
    assert_int_equal(sl_unseal(KEY, "alice\0db\0px", 11, s, len, out, &got), -1);
    assert_int_equal(sl_unseal(KEY, "alice\0db\0pw", 11, s, len - 1, out, &got), -1);
    assert_int_equal(sl_unseal(KEY, "alice\0db\0pw", 11, s, SL_SEAL_OVERHEAD - 1, out, &got), -1);
    assert_int_equal(sl_unseal(KEY, "alice\0db\0pw", 11, s, len, out, &got), 0);
    SL_ASSERT_NO_LEAKS();
}

static void test_seal_base64_vectors_and_refusals(void **state) {
    (void)state;
    static const char *const rfc[][2] = {{"", ""}, {"f", "Zg=="}, {"fo", "Zm8="},
                                         {"foo", "Zm9v"}, {"foob", "Zm9vYg=="},
                                         {"fooba", "Zm9vYmE="}, {"foobar", "Zm9vYmFy"}};
    for (size_t i = 0; i < 7; i++) {
        char *e = sl_base64_encode(rfc[i][0], strlen(rfc[i][0]));
        assert_string_equal(e, rfc[i][1]);
        sl_free(e);
        unsigned char *d;
        size_t n;
        assert_int_equal(sl_base64_decode(rfc[i][1], &d, &n), 0);
        assert_int_equal(n, strlen(rfc[i][0]));
        assert_memory_equal(d, rfc[i][0], n);
        sl_free(d);
    }
    static const char *const bad[] = {"Zg=", "Z", "Zm9v!", "Zm 9v", "====", "Zg==Zg=="};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        unsigned char *d = (unsigned char *)"x";
        size_t n;
        if (sl_base64_decode(bad[i], &d, &n) == 0) {
            sl_free(d);
            fail_msg("accepted \"%s\"", bad[i]);
        }
        assert_null(d);
    }
    SL_ASSERT_NO_LEAKS();
}

static void test_seal_names_keys_and_paths(void **state) {
    (void)state;
    assert_true(sl_secret_name_ok("db-pass.v2"));
    assert_true(sl_secret_name_ok("a"));
    static const char *const badn[] = {"", "Db", "-a", "a-", "a_b", "a/b", "a b", NULL};
    for (int i = 0; badn[i]; i++) assert_false(sl_secret_name_ok(badn[i]));
    char longn[300];
    memset(longn, 'a', 254);
    longn[254] = '\0';
    assert_false(sl_secret_name_ok(longn));
    longn[253] = '\0';
    assert_true(sl_secret_name_ok(longn));
    assert_true(sl_secret_key_ok("tls.crt"));
    assert_true(sl_secret_key_ok("_A-b.9"));
    static const char *const badk[] = {"", ".", "..", "a/b", "a b", "a=b", NULL};
    for (int i = 0; badk[i]; i++) assert_false(sl_secret_key_ok(badk[i]));
    assert_true(sl_secret_relpath_ok("conf/app.yaml"));
    static const char *const badp[] = {"", "/abs", "a//b", "a/../b", "a/", "..", NULL};
    for (int i = 0; badp[i]; i++) assert_false(sl_secret_relpath_ok(badp[i]));
}

static void test_seal_references_table(void **state) {
    (void)state;
    static const struct {
        const char *json;
        const char *err; /* NULL: accepted; else the start of the message */
    } cases[] = {
        {"[]", NULL},
        {"[{\"secret\":\"db\",\"key\":\"pw\",\"env\":\"DB_PW\"}]", NULL},
        {"[{\"config_map\":\"c\",\"key\":\"k\",\"env\":\"K\",\"optional\":true}]", NULL},
        {"[{\"secret\":\"db\",\"env_prefix\":\"\"}]", NULL},
        {"[{\"secret\":\"db\",\"path\":\"/etc/db\",\"items\":{\"a\":\"x/y\"},\"mode\":256}]", NULL},
        {"{}", "must be a list"},
        {"[1]", "[0]: must be an object"},
        {"[{\"key\":\"k\",\"env\":\"K\"}]", "[0]: needs exactly one of secret and config_map"},
        {"[{\"secret\":\"a\",\"config_map\":\"b\",\"path\":\"/x\"}]", "[0]: needs exactly one"},
        {"[{\"secret\":\"Bad\",\"path\":\"/x\"}]", "[0].secret: must be a name"},
        {"[{\"secret\":\"a\"}]", "[0]: needs exactly one of key with env"},
        {"[{\"secret\":\"a\",\"key\":\"k\"}]", "[0].env: must be a variable name"},
        {"[{\"secret\":\"a\",\"key\":\"k\",\"env\":\"1X\"}]", "[0].env: must be a variable name"},
        {"[{\"secret\":\"a\",\"key\":\"k/1\",\"env\":\"X\"}]", "[0].key: must be a key"},
        {"[{\"secret\":\"a\",\"env_prefix\":\"A-\"}]", "[0].env_prefix:"},
        {"[{\"secret\":\"a\",\"path\":\"rel\"}]", "[0].path: must be an absolute"},
        {"[{\"secret\":\"a\",\"path\":\"/a/../b\"}]", "[0].path: must be an absolute"},
        {"[{\"secret\":\"a\",\"path\":\"/a:b\"}]", "[0].path: must be an absolute"},
        {"[{\"secret\":\"a\",\"path\":\"/a\",\"mode\":512}]", "[0].mode: must be a file mode"},
        {"[{\"secret\":\"a\",\"path\":\"/a\",\"items\":{\"k\":\"../x\"}}]", "[0].items.k:"},
        {"[{\"secret\":\"a\",\"env_prefix\":\"A\",\"mode\":256}]", "[0].mode: only with path"},
        {"[{\"secret\":\"a\",\"path\":\"/a\",\"colour\":1}]", "[0].colour: unknown field"},
        {"[{\"secret\":\"a\",\"path\":\"/a\"},{\"secret\":\"b\"}]", "[1]: needs exactly one"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *v = json_loads(cases[i].json, 0, NULL);
        assert_non_null(v);
        char err[256] = "";
        int rc = sl_secretref_check(v, err, sizeof err);
        json_decref(v);
        if (cases[i].err == NULL && rc != 0) fail_msg("%s: %s", cases[i].json, err);
        if (cases[i].err && (rc == 0 || strncmp(err, cases[i].err, strlen(cases[i].err)) != 0))
            fail_msg("%s: got \"%s\", want \"%s...\"", cases[i].json, err, cases[i].err);
    }
}

static void test_seal_launch_secrets_round_trip(void **state) {
    (void)state;
    const char *keys[] = {"DB_PW"}, *vals[] = {"cHc="};
    sl_proto_secret_file_t files[] = {{"pw", "cHc="}, {"conf/a.txt", ""}};
    sl_proto_secret_dir_t dirs[] = {{"db", "/etc/db", 0400, files, 2}, {"c", NULL, 0440, files, 1}};
    sl_proto_msg_t m = {.type = SL_PROTO_LAUNCH, .job = 7, .task = 0,
                        .u.launch = {.argv = (const char *const[]){"true"}, .argc = 1,
                                     .world_size = 1, .master_port = 29500,
                                     .secrets = {keys, vals, 1, dirs, 2}}};
    size_t len;
    char *line = sl_proto_encode_alloc(&m, &len);
    assert_non_null(line);
    assert_non_null(strstr(line, ",\"secret_env\":{\"DB_PW\":\"cHc=\"}"));
    sl_proto_msg_t d;
    char err[256];
    if (sl_proto_decode_line(line, len - 1, SL_PROTO_TO_AGENT, &d, err, sizeof err) != 0)
        fail_msg("%s: %s", line, err);
    const sl_proto_secrets_t *s = &d.u.launch.secrets;
    assert_int_equal(s->nenv, 1);
    assert_string_equal(s->env_keys[0], "DB_PW");
    assert_int_equal(s->ndirs, 2);
    assert_string_equal(s->dirs[0].path, "/etc/db");
    assert_null(s->dirs[1].path);
    assert_int_equal(s->dirs[1].mode, 0440);
    assert_int_equal(s->dirs[0].nfiles, 2);
    assert_string_equal(s->dirs[0].files[1].rel, "conf/a.txt");
    char *again = sl_proto_encode_alloc(&d, &len);
    assert_string_equal(again, line);
    sl_free(again);
    sl_free(line);
    sl_proto_msg_fini(&d);
    /* Rejections, naming the field. */
    static const struct {
        const char *extra;
        const char *err;
    } bad[] = {
        {"\"secret_env\":[]", "launch: secret_env: must be an object"},
        {"\"secret_env\":{\"A\":\"not b64!\"}", "launch: secret_env: the value of A"},
        {"\"secret_files\":{}", "launch: secret_files: must be a list"},
        {"\"secret_files\":[{\"dir\":\"../x\",\"mode\":256,\"files\":{}}]",
         "launch: secret_files[0].dir"},
        {"\"secret_files\":[{\"dir\":\"d\",\"mode\":1000,\"files\":{}}]",
         "launch: secret_files[0].mode"},
        {"\"secret_files\":[{\"dir\":\"d\",\"path\":\"rel\",\"mode\":256,\"files\":{}}]",
         "launch: secret_files[0].path"},
        {"\"secret_files\":[{\"dir\":\"d\",\"mode\":256,\"files\":{\"/etc/passwd\":\"\"}}]",
         "launch: secret_files[0].files"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char buf[512];
        snprintf(buf, sizeof buf, "{\"type\":\"launch\",\"job\":1,\"task\":0,\"argv\":[\"true\"],%s}",
                 bad[i].extra);
        sl_proto_msg_t x;
        int rc = sl_proto_decode_line(buf, strlen(buf), SL_PROTO_TO_AGENT, &x, err, sizeof err);
        if (rc == 0 || strncmp(err, bad[i].err, strlen(bad[i].err)) != 0)
            fail_msg("%s: got \"%s\", want \"%s...\"", buf, rc ? err : "ok", bad[i].err);
        sl_proto_msg_fini(&x);
    }
    SL_ASSERT_NO_LEAKS();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_seal_round_trip_and_fresh_nonce, tu_teardown),
        cmocka_unit_test_teardown(test_seal_tamper_key_and_aad_are_detected, tu_teardown),
        cmocka_unit_test_teardown(test_seal_base64_vectors_and_refusals, tu_teardown),
        cmocka_unit_test_teardown(test_seal_names_keys_and_paths, tu_teardown),
        cmocka_unit_test_teardown(test_seal_references_table, tu_teardown),
        cmocka_unit_test_teardown(test_seal_launch_secrets_round_trip, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
