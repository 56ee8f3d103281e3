/*
 * tls.h - the OpenSSL set-up that sluiced, sluice-agent and sluice share
 * (docs/security.md): TLS contexts limited to TLS 1.2 and later, the
 * check of a peer's host name or address, the name a verified client
 * certificate binds, and SHA-256 for hashed tokens.
 *
 * The contexts are built once at start-up and shared by every connection
 * of a process; the programs own them (SSL_CTX_free).
 */
#ifndef SLUICE_COMMON_TLS_H
#define SLUICE_COMMON_TLS_H

#include <stdbool.h>
#include <stddef.h>

#include <openssl/ssl.h>

/* How a server treats client certificates. */
typedef enum sl_tls_peer_mode {
    SL_TLS_PEER_NONE = 0,     /* none asked for */
    SL_TLS_PEER_OPTIONAL = 1, /* asked for; one presented must verify against the CA */
    SL_TLS_PEER_REQUIRE = 2,  /* a handshake without a verified certificate fails */
} sl_tls_peer_mode_t;

/*
 * A server context from the PEM files cert (the chain, leaf first) and key;
 * with ca (may be NULL) client certificates are verified against it as
 * peer says. Returns the context, or NULL with a message naming the file
 * in err. The caller frees it with SSL_CTX_free.
 */
SSL_CTX *sl_tls_server_ctx(const char *cert, const char *key, const char *ca,
                           sl_tls_peer_mode_t peer, char *err, size_t errlen);

/*
 * A client context that verifies the server against the PEM file ca (NULL:
 * the system's trust store) and, with cert and key (both or neither),
 * presents that client certificate. Returns the context, or NULL with a
 * message naming the file in err. The caller frees it with SSL_CTX_free.
 */
SSL_CTX *sl_tls_client_ctx(const char *ca, const char *cert, const char *key, char *err,
                           size_t errlen);

/* Makes the handshake of the client connection ssl check that the server's
 * certificate names host: an IP address must be one of its IP SANs, a name
 * one of its DNS SANs (sent as SNI too). 0, or -1 when host cannot be set. */
int sl_tls_set_host(SSL *ssl, const char *host);

/* True when the peer of ssl presented a certificate that verified against
 * the CA and whose DNS SAN (or CN when it has no DNS SAN) is name. */
bool sl_tls_peer_is(SSL *ssl, const char *name);

/* The first OpenSSL error queued on this thread as text in buf (the queue
 * is cleared); "unknown error" if none. Returns buf. */
const char *sl_tls_error(char *buf, size_t len);

/* out = the SHA-256 of p[0..n) in lower-case hex, NUL-terminated. */
void sl_sha256_hex(const void *p, size_t n, char out[65]);

#endif
