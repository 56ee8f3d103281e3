/*
 * certgen.c - the small CA of `sluice up` (certgen.h).
 *
 * Keys are EC P-256 (fast to make: a fresh set of three costs about a
 * millisecond, so `sluice up` stays quick), signatures ECDSA with SHA-256,
 * serial numbers 128 random bits. The CA certificate says CA:TRUE and may
 * sign certificates only; a leaf says CA:FALSE, digitalSignature, and
 * serverAuth or clientAuth, with its names in subjectAltName (a client's
 * CN is its node name, which the agent port checks against the name an
 * agent claims in hello). Validity starts an hour in the past so that a
 * clock a little behind does not refuse a certificate just made.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include "certgen.h"

static void ssl_why(char *err, size_t errlen, const char *what) {
    unsigned long e = ERR_get_error();
    char buf[256] = "unknown error";
    if (e)
        ERR_error_string_n(e, buf, sizeof buf);
    ERR_clear_error();
    snprintf(err, errlen, "%s: %s", what, buf);
}

static EVP_PKEY *new_key(void) {
    EVP_PKEY *key = NULL;
    EVP_PKEY_CTX *kc = EVP_PKEY_CTX_new_id(EVP_PKEY_EC, NULL);
    if (kc && EVP_PKEY_keygen_init(kc) == 1 &&
        EVP_PKEY_CTX_set_ec_paramgen_curve_nid(kc, NID_X9_62_prime256v1) == 1)
        EVP_PKEY_keygen(kc, &key);
    EVP_PKEY_CTX_free(kc);
    return key;
}

/* Writes PEM through write() to path via path.tmp, with mode. */
static int write_pem(const char *path, mode_t mode, EVP_PKEY *key, X509 *cert, char *err,
                     size_t errlen) {
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (f == NULL) {
        snprintf(err, errlen, "cannot write %s: %m", tmp);
        if (fd >= 0)
            close(fd);
        return -1;
    }
    int ok = key ? PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL)
                 : PEM_write_X509(f, cert);
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        snprintf(err, errlen, "cannot write %s", path);
        unlink(tmp);
        ERR_clear_error();
        return -1;
    }
    return 0;
}

static EVP_PKEY *read_key(const char *path) {
    FILE *f = fopen(path, "re");
    EVP_PKEY *k = f ? PEM_read_PrivateKey(f, NULL, NULL, NULL) : NULL;
    if (f)
        fclose(f);
    return k;
}

static X509 *read_cert(const char *path) {
    FILE *f = fopen(path, "re");
    X509 *x = f ? PEM_read_X509(f, NULL, NULL, NULL) : NULL;
    if (f)
        fclose(f);
    return x;
}

static int add_ext(X509 *cert, X509 *issuer, int nid, const char *value) {
    X509V3_CTX v3;
    X509V3_set_ctx(&v3, issuer, cert, NULL, NULL, 0);
    X509_EXTENSION *ext = X509V3_EXT_nconf_nid(NULL, &v3, nid, value);
    if (ext == NULL)
        return -1;
    int ok = X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
    return ok == 1 ? 0 : -1;
}

/* A certificate for key named cn, issued by issuer_name, unsigned. */
static X509 *new_cert(EVP_PKEY *key, const char *cn, int days) {
    X509 *x = X509_new();
    unsigned char raw[16];
    if (x == NULL || RAND_bytes(raw, sizeof raw) != 1)
        goto fail;
    raw[0] &= 0x7f; /* a positive serial */
    BIGNUM *bn = BN_bin2bn(raw, sizeof raw, NULL);
    int ok = bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL;
    BN_free(bn);
    if (!ok || X509_set_version(x, 2) != 1 || X509_gmtime_adj(X509_getm_notBefore(x), -3600) == NULL ||
        X509_gmtime_adj(X509_getm_notAfter(x), (long)days * 86400) == NULL ||
        X509_set_pubkey(x, key) != 1)
        goto fail;
    X509_NAME *name = X509_get_subject_name(x);
    if (X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, (const unsigned char *)"Sluice", -1, -1, 0) != 1 ||
        X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1, 0) != 1)
        goto fail;
    return x;
fail:
    X509_free(x);
    return NULL;
}

/* A new key (0600: only its owner may read it) and its certificate (0644). */
static int write_pair(EVP_PKEY *key, X509 *x, const char *key_path, const char *cert_path,
                      char *err, size_t errlen) {
    if (write_pem(key_path, 0600, key, NULL, err, errlen) < 0)
        return -1;
    return write_pem(cert_path, 0644, NULL, x, err, errlen);
}

int sl_certgen_ca(const char *cn, int days, const char *key_path, const char *cert_path, char *err,
                  size_t errlen) {
    int rc = -1;
    EVP_PKEY *key = new_key();
    X509 *x = key ? new_cert(key, cn, days) : NULL;
    if (x == NULL || X509_set_issuer_name(x, X509_get_subject_name(x)) != 1 ||
        add_ext(x, x, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") < 0 ||
        add_ext(x, x, NID_key_usage, "critical,keyCertSign,cRLSign") < 0 ||
        add_ext(x, x, NID_subject_key_identifier, "hash") < 0 ||
        X509_sign(x, key, EVP_sha256()) == 0) {
        ssl_why(err, errlen, "cannot make the CA certificate");
        goto out;
    }
    if (write_pair(key, x, key_path, cert_path, err, errlen) < 0)
        goto out;
    rc = 0;
out:
    X509_free(x);
    EVP_PKEY_free(key);
    return rc;
}

int sl_certgen_leaf(const char *ca_key, const char *ca_cert, sl_cert_kind_t kind, const char *cn,
                    const char *san, int days, const char *key_path, const char *cert_path,
                    char *err, size_t errlen) {
    int rc = -1;
    EVP_PKEY *cakey = read_key(ca_key), *key = NULL;
    X509 *ca = read_cert(ca_cert), *x = NULL;
    if (cakey == NULL || ca == NULL) {
        snprintf(err, errlen, "cannot read the CA from %s and %s", ca_cert, ca_key);
        ERR_clear_error();
        goto out;
    }
    key = new_key();
    x = key ? new_cert(key, cn, days) : NULL;
    if (x == NULL || X509_set_issuer_name(x, X509_get_subject_name(ca)) != 1 ||
        add_ext(x, ca, NID_basic_constraints, "critical,CA:FALSE") < 0 ||
        add_ext(x, ca, NID_key_usage, "critical,digitalSignature") < 0 ||
        add_ext(x, ca, NID_ext_key_usage, kind == SL_CERT_SERVER ? "serverAuth" : "clientAuth") < 0 ||
        add_ext(x, ca, NID_subject_key_identifier, "hash") < 0 ||
        add_ext(x, ca, NID_authority_key_identifier, "keyid:always") < 0 ||
        (san && add_ext(x, ca, NID_subject_alt_name, san) < 0) ||
        X509_sign(x, cakey, EVP_sha256()) == 0) {
        ssl_why(err, errlen, "cannot make the certificate");
        goto out;
    }
    if (write_pair(key, x, key_path, cert_path, err, errlen) < 0)
        goto out;
    rc = 0;
out:
    X509_free(x);
    X509_free(ca);
    EVP_PKEY_free(key);
    EVP_PKEY_free(cakey);
    return rc;
}

bool sl_certgen_usable(const char *ca_cert, const char *cert_path, const char *name) {
    X509 *ca = read_cert(ca_cert), *x = read_cert(cert_path);
    X509_STORE *st = X509_STORE_new();
    X509_STORE_CTX *vc = X509_STORE_CTX_new();
    bool ok = false;
    if (ca && x && st && vc && X509_STORE_add_cert(st, ca) == 1 &&
        X509_STORE_CTX_init(vc, st, x, NULL) == 1) {
        time_t day = time(NULL) + 86400;
        ok = X509_verify_cert(vc) == 1 && X509_cmp_time(X509_get0_notAfter(x), &day) > 0;
        if (ok && name)
            ok = X509_check_host(x, name, strlen(name), X509_CHECK_FLAG_NO_WILDCARDS, NULL) == 1;
    }
    ERR_clear_error();
    X509_STORE_CTX_free(vc);
    X509_STORE_free(st);
    X509_free(x);
    X509_free(ca);
    return ok;
}
