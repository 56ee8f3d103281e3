/*
 * certgen.h - a small certificate authority for `sluice up` (certgen.c):
 * EC P-256 keys and X.509 v3 certificates made with OpenSSL's C API, for
 * the embedded default cluster on one machine (docs/security.md).
 */
#ifndef SLUICE_COMMON_CERTGEN_H
#define SLUICE_COMMON_CERTGEN_H

#include <stdbool.h>
#include <stddef.h>

/* What a leaf certificate is for. */
typedef enum sl_cert_kind {
    SL_CERT_SERVER, /* extendedKeyUsage serverAuth */
    SL_CERT_CLIENT, /* extendedKeyUsage clientAuth */
} sl_cert_kind_t;

/*
 * Writes a new self-signed CA named cn: its key to key_path (mode 0600)
 * and its certificate to cert_path (0644), valid for days. Each file is
 * written to a temporary name and renamed, so a reader sees the old file
 * or the new one. Returns 0, or -1 with a message naming the file in err.
 */
int sl_certgen_ca(const char *cn, int days, const char *key_path, const char *cert_path, char *err,
                  size_t errlen);

/*
 * Writes a new key (key_path, 0600) and a certificate (cert_path) for cn,
 * signed by the CA in ca_key/ca_cert, valid for days, with the subject
 * alternative names san: a comma-separated list in OpenSSL's form
 * ("DNS:localhost,IP:127.0.0.1"; NULL for none). Returns 0, or -1 with a
 * message in err.
 */
int sl_certgen_leaf(const char *ca_key, const char *ca_cert, sl_cert_kind_t kind, const char *cn,
                    const char *san, int days, const char *key_path, const char *cert_path,
                    char *err, size_t errlen);

/*
 * True when cert_path holds a certificate that verifies against the CA in
 * ca_cert, is valid now and for at least another day, and (when name is
 * not NULL) names name (DNS SAN, or CN without one): `sluice up` then
 * reuses it rather than making a new one.
 */
bool sl_certgen_usable(const char *ca_cert, const char *cert_path, const char *name);

#endif
