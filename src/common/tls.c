/*
 * tls.c - the OpenSSL contexts of Sluice's three programs (tls.h).
 *
 * Every context refuses anything older than TLS 1.2 and renegotiation; the
 * cipher lists are OpenSSL's defaults, which for 1.2 are forward-secret
 * AEAD suites first. A server that verifies client certificates sets a
 * session-id context, without which OpenSSL refuses to resume a session
 * whose peer was verified. Host checks go through the verify parameters
 * (X509_VERIFY_PARAM_set1_ip_asc for an address, SSL_set1_host for a
 * name), so a certificate for the wrong host fails the handshake itself.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509v3.h>

#include "tls.h"

const char *sl_tls_error(char *buf, size_t len) {
    unsigned long e = ERR_get_error();
    if (e == 0)
        snprintf(buf, len, "unknown error");
    else
        ERR_error_string_n(e, buf, len);
    ERR_clear_error();
    return buf;
}

static SSL_CTX *ctx_new(const SSL_METHOD *method, char *err, size_t errlen) {
    SSL_CTX *ctx = SSL_CTX_new(method);
    char why[256];
    if (ctx == NULL) {
        snprintf(err, errlen, "cannot create a TLS context: %s", sl_tls_error(why, sizeof why));
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
    return ctx;
}

/* Loads cert and key into ctx; 0, or -1 with a message naming the file. */
static int load_pair(SSL_CTX *ctx, const char *cert, const char *key, char *err, size_t errlen) {
    char why[256];
    if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) {
        snprintf(err, errlen, "%s: cannot load the certificate: %s", cert,
                 sl_tls_error(why, sizeof why));
        return -1;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1) {
        snprintf(err, errlen, "%s: cannot load the private key: %s", key,
                 sl_tls_error(why, sizeof why));
        return -1;
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        snprintf(err, errlen, "%s does not match the certificate %s", key, cert);
        ERR_clear_error();
        return -1;
    }
    return 0;
}

SSL_CTX *sl_tls_server_ctx(const char *cert, const char *key, const char *ca,
                           sl_tls_peer_mode_t peer, char *err, size_t errlen) {
    char why[256];
    SSL_CTX *ctx = ctx_new(TLS_server_method(), err, errlen);
    if (ctx == NULL)
        return NULL;
    if (load_pair(ctx, cert, key, err, errlen) < 0)
        goto fail;
    SSL_CTX_set_options(ctx, SSL_OP_CIPHER_SERVER_PREFERENCE);
    if (ca != NULL && peer != SL_TLS_PEER_NONE) {
        if (SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1) {
            snprintf(err, errlen, "%s: cannot load the CA: %s", ca, sl_tls_error(why, sizeof why));
            goto fail;
        }
        STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(ca);
        if (names != NULL)
            SSL_CTX_set_client_CA_list(ctx, names);
        static const unsigned char sid[] = "sluice";
        SSL_CTX_set_session_id_context(ctx, sid, sizeof sid - 1);
        int mode = SSL_VERIFY_PEER | SSL_VERIFY_CLIENT_ONCE;
        if (peer == SL_TLS_PEER_REQUIRE)
            mode |= SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
        SSL_CTX_set_verify(ctx, mode, NULL);
    }
    return ctx;
fail:
    SSL_CTX_free(ctx);
    return NULL;
}

SSL_CTX *sl_tls_client_ctx(const char *ca, const char *cert, const char *key, char *err,
                           size_t errlen) {
    char why[256];
    SSL_CTX *ctx = ctx_new(TLS_client_method(), err, errlen);
    if (ctx == NULL)
        return NULL;
    int ok = ca ? SSL_CTX_load_verify_locations(ctx, ca, NULL) : SSL_CTX_set_default_verify_paths(ctx);
    if (ok != 1) {
        snprintf(err, errlen, "%s: cannot load the CA: %s", ca ? ca : "the system's trust store",
                 sl_tls_error(why, sizeof why));
        goto fail;
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    if ((cert == NULL) != (key == NULL)) {
        snprintf(err, errlen, "a client certificate needs both its certificate and its key");
        goto fail;
    }
    if (cert && load_pair(ctx, cert, key, err, errlen) < 0)
        goto fail;
    return ctx;
fail:
    SSL_CTX_free(ctx);
    return NULL;
}

int sl_tls_set_host(SSL *ssl, const char *host) {
    unsigned char addr[16];
    bool ip = inet_pton(AF_INET, host, addr) == 1 || inet_pton(AF_INET6, host, addr) == 1;
    if (ip)
        return X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) == 1 ? 0 : -1;
    /* SNI is sent for names only (RFC 6066 forbids addresses). */
    if (SSL_set_tlsext_host_name(ssl, host) != 1 || SSL_set1_host(ssl, host) != 1)
        return -1;
    return 0;
}

bool sl_tls_peer_is(SSL *ssl, const char *name) {
    if (ssl == NULL || name == NULL || name[0] == '\0')
        return false;
#if OPENSSL_VERSION_NUMBER >= 0x30000000L
    X509 *cert = SSL_get1_peer_certificate(ssl);
#else
    X509 *cert = SSL_get_peer_certificate(ssl);
#endif
    if (cert == NULL)
        return false;
    bool ok = SSL_get_verify_result(ssl) == X509_V_OK &&
              X509_check_host(cert, name, strlen(name), X509_CHECK_FLAG_NO_WILDCARDS,
                              NULL) == 1;
    X509_free(cert);
    return ok;
}

void sl_sha256_hex(const void *p, size_t n, char out[65]) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (EVP_Digest(p, n, md, &len, EVP_sha256(), NULL) != 1 || len != 32)
        memset(md, 0, sizeof md); /* cannot happen with the default provider */
    for (unsigned i = 0; i < 32; i++)
        sprintf(out + 2 * i, "%02x", md[i]);
    out[64] = '\0';
}
