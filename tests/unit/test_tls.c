/*
 * test_tls.c - the small CA of `sluice up` (certgen.c) and the TLS helpers
 * (tls.c): certificates made with OpenSSL's C API verify against their CA,
 * name what they should (IP and DNS SANs, a client's node name, exactly),
 * keys are mode 0600, a certificate of another CA is not usable, and the
 * SHA-256 of hashed tokens matches the FIPS 180-2 test vectors. Each test
 * works in its own temporary directory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include "certgen.h"
#include "testutil.h"
#include "tls.h"

typedef struct pki {
    char dir[64];
    char ca_crt[128], ca_key[128], srv_crt[128], srv_key[128], cli_crt[128], cli_key[128];
} pki_t;

static void pki_make(pki_t *p) {
    char err[512];
    snprintf(p->dir, sizeof p->dir, "/tmp/sluice-test-tls.XXXXXX");
    assert_non_null(mkdtemp(p->dir));
    snprintf(p->ca_crt, sizeof p->ca_crt, "%s/ca.crt", p->dir);
    snprintf(p->ca_key, sizeof p->ca_key, "%s/ca.key", p->dir);
    snprintf(p->srv_crt, sizeof p->srv_crt, "%s/server.crt", p->dir);
    snprintf(p->srv_key, sizeof p->srv_key, "%s/server.key", p->dir);
    snprintf(p->cli_crt, sizeof p->cli_crt, "%s/n1.crt", p->dir);
    snprintf(p->cli_key, sizeof p->cli_key, "%s/n1.key", p->dir);
    int rc = sl_certgen_ca("test CA", 30, p->ca_key, p->ca_crt, err, sizeof err);
    if (rc != 0)
        fail_msg("%s", err);
    rc = sl_certgen_leaf(p->ca_key, p->ca_crt, SL_CERT_SERVER, "sluiced",
                         "DNS:localhost,IP:127.0.0.1", 30, p->srv_key, p->srv_crt, err, sizeof err);
    if (rc != 0)
        fail_msg("%s", err);
    rc = sl_certgen_leaf(p->ca_key, p->ca_crt, SL_CERT_CLIENT, "n1", "DNS:n1", 30, p->cli_key,
                         p->cli_crt, err, sizeof err);
    if (rc != 0)
        fail_msg("%s", err);
}

static void pki_remove(pki_t *p) {
    const char *files[] = {p->ca_crt, p->ca_key, p->srv_crt, p->srv_key, p->cli_crt, p->cli_key};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        unlink(files[i]);
    rmdir(p->dir);
}

static X509 *read_cert(const char *path) {
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    X509 *x = PEM_read_X509(f, NULL, NULL, NULL);
    fclose(f);
    assert_non_null(x);
    return x;
}

static void test_tls_certgen_makes_a_usable_pki(void **state) {
    pki_t p;
    pki_make(&p);
    struct stat st;
    const char *keys[] = {p.ca_key, p.srv_key, p.cli_key};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(stat(keys[i], &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);
    }
    assert_true(sl_certgen_usable(p.ca_crt, p.ca_crt, NULL));
    assert_true(sl_certgen_usable(p.ca_crt, p.srv_crt, "localhost"));
    assert_true(sl_certgen_usable(p.ca_crt, p.cli_crt, "n1"));
    /* The node name binds exactly. */
    assert_false(sl_certgen_usable(p.ca_crt, p.cli_crt, "n2"));
    assert_false(sl_certgen_usable(p.ca_crt, p.cli_crt, "n"));
    assert_false(sl_certgen_usable(p.ca_crt, p.cli_crt, "n10"));
    X509 *srv = read_cert(p.srv_crt);
    assert_int_equal(X509_check_ip_asc(srv, "127.0.0.1", 0), 1);
    assert_int_equal(X509_check_ip_asc(srv, "127.0.0.2", 0), 0);
    assert_int_equal(X509_check_purpose(srv, X509_PURPOSE_SSL_SERVER, 0), 1);
    assert_int_equal(X509_check_ca(srv), 0);
    X509_free(srv);
    X509 *ca = read_cert(p.ca_crt);
    assert_true(X509_check_ca(ca) >= 1);
    X509_free(ca);
    /* A certificate of another CA is not usable: `sluice up` remakes it. */
    pki_t q;
    pki_make(&q);
    assert_false(sl_certgen_usable(q.ca_crt, p.srv_crt, "localhost"));
    assert_false(sl_certgen_usable(p.ca_crt, "/nonexistent/x.crt", NULL));
    pki_remove(&q);
    pki_remove(&p);
}

static void test_tls_contexts_load_and_refuse_bad_files(void **state) {
    pki_t p;
    pki_make(&p);
    char err[512];
    SSL_CTX *s = sl_tls_server_ctx(p.srv_crt, p.srv_key, p.ca_crt, SL_TLS_PEER_REQUIRE, err, sizeof err);
    assert_non_null(s);
    assert_int_equal(SSL_CTX_get_min_proto_version(s), TLS1_2_VERSION);
    SSL_CTX_free(s);
    SSL_CTX *c = sl_tls_client_ctx(p.ca_crt, p.cli_crt, p.cli_key, err, sizeof err);
    assert_non_null(c);
    SSL *ssl = SSL_new(c);
    assert_int_equal(sl_tls_set_host(ssl, "127.0.0.1"), 0);
    assert_int_equal(sl_tls_set_host(ssl, "localhost"), 0);
    assert_false(sl_tls_peer_is(ssl, "n1")); /* no handshake, no peer */
    SSL_free(ssl);
    SSL_CTX_free(c);
    /* A key that does not match, a missing file: refused, the file named. */
    assert_null(sl_tls_server_ctx(p.srv_crt, p.cli_key, NULL, SL_TLS_PEER_NONE, err, sizeof err));
    assert_non_null(strstr(err, p.cli_key));
    assert_null(sl_tls_server_ctx("/nonexistent.crt", p.srv_key, NULL, SL_TLS_PEER_NONE, err, sizeof err));
    assert_non_null(strstr(err, "/nonexistent.crt"));
    assert_null(sl_tls_client_ctx(p.ca_crt, p.cli_crt, NULL, err, sizeof err));
    pki_remove(&p);
}

static void test_tls_sha256_vectors(void **state) {
    char hex[65];
    sl_sha256_hex("abc", 3, hex);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    sl_sha256_hex("", 0, hex);
    assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_tls_certgen_makes_a_usable_pki, tu_teardown),
        cmocka_unit_test_teardown(test_tls_contexts_load_and_refuse_bad_files, tu_teardown),
        cmocka_unit_test_teardown(test_tls_sha256_vectors, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
