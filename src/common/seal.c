/*
 * seal.c - AES-256-GCM sealing and base64 (seal.h), on OpenSSL's EVP.
 *
 * GCM with a random 96-bit nonce per value: the store seals a value at
 * each create, a few per second at most, so the birthday bound on random
 * nonces (2^32 values under one key for a 2^-32 collision chance) is far
 * away. The tag is GCM's full 16 bytes.
 */
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "sluice/alloc.h"
#include "seal.h"

void sl_wipe(void *p, size_t n) {
    if (p && n)
        OPENSSL_cleanse(p, n);
}

int sl_seal(const unsigned char key[SL_SEAL_KEY_BYTES], const void *aad, size_t aadlen,
            const void *pt, size_t n, unsigned char *out) {
    if (n > (size_t)INT32_MAX || aadlen > (size_t)INT32_MAX)
        return -1;
    EVP_CIPHER_CTX *cx = EVP_CIPHER_CTX_new();
    int rc = -1, len = 0;
    unsigned char *nonce = out, *ct = out + SL_SEAL_NONCE_BYTES;
    if (cx == NULL || RAND_bytes(nonce, SL_SEAL_NONCE_BYTES) != 1 ||
        EVP_EncryptInit_ex(cx, EVP_aes_256_gcm(), NULL, NULL, NULL) != 1 ||
        EVP_CIPHER_CTX_ctrl(cx, EVP_CTRL_GCM_SET_IVLEN, SL_SEAL_NONCE_BYTES, NULL) != 1 ||
        EVP_EncryptInit_ex(cx, NULL, NULL, key, nonce) != 1)
        goto out;
    if (aadlen > 0 && EVP_EncryptUpdate(cx, NULL, &len, aad, (int)aadlen) != 1)
        goto out;
    if (n > 0 && EVP_EncryptUpdate(cx, ct, &len, pt, (int)n) != 1)
        goto out;
    if (EVP_EncryptFinal_ex(cx, ct + n, &len) != 1 ||
        EVP_CIPHER_CTX_ctrl(cx, EVP_CTRL_GCM_GET_TAG, SL_SEAL_TAG_BYTES, ct + n) != 1)
        goto out;
    rc = 0;
out:
    EVP_CIPHER_CTX_free(cx);
    return rc;
}

int sl_unseal(const unsigned char key[SL_SEAL_KEY_BYTES], const void *aad, size_t aadlen,
              const unsigned char *in, size_t inlen, unsigned char *out, size_t *outlen) {
    *outlen = 0;
    if (inlen < SL_SEAL_OVERHEAD || inlen > (size_t)INT32_MAX || aadlen > (size_t)INT32_MAX)
        return -1;
    size_t n = inlen - SL_SEAL_OVERHEAD;
    const unsigned char *nonce = in, *ct = in + SL_SEAL_NONCE_BYTES, *tag = ct + n;
    EVP_CIPHER_CTX *cx = EVP_CIPHER_CTX_new();
    int rc = -1, len = 0;
    if (cx == NULL || EVP_DecryptInit_ex(cx, EVP_aes_256_gcm(), NULL, NULL, NULL) != 1 ||
        EVP_CIPHER_CTX_ctrl(cx, EVP_CTRL_GCM_SET_IVLEN, SL_SEAL_NONCE_BYTES, NULL) != 1 ||
        EVP_DecryptInit_ex(cx, NULL, NULL, key, nonce) != 1)
        goto out;
    if (aadlen > 0 && EVP_DecryptUpdate(cx, NULL, &len, aad, (int)aadlen) != 1)
        goto out;
    if (n > 0 && EVP_DecryptUpdate(cx, out, &len, ct, (int)n) != 1)
        goto out;
    if (EVP_CIPHER_CTX_ctrl(cx, EVP_CTRL_GCM_SET_TAG, SL_SEAL_TAG_BYTES, (void *)tag) != 1 ||
        EVP_DecryptFinal_ex(cx, out + n, &len) != 1)
        goto out;
    *outlen = n;
    rc = 0;
out:
    if (rc != 0)
        sl_wipe(out, n);
    EVP_CIPHER_CTX_free(cx);
    return rc;
}

char *sl_base64_encode(const void *p, size_t n) {
    char *s = sl_xmalloc(4 * ((n + 2) / 3) + 1);
    int w = EVP_EncodeBlock((unsigned char *)s, p, (int)n);
    s[w < 0 ? 0 : w] = '\0';
    return s;
}

int sl_base64_decode(const char *s, unsigned char **out, size_t *n) {
    *out = NULL;
    *n = 0;
    size_t len = strlen(s);
    if (len % 4 != 0 || len > (size_t)INT32_MAX)
        return -1;
    size_t pad = len >= 1 && s[len - 1] == '=' ? (len >= 2 && s[len - 2] == '=' ? 2 : 1) : 0;
    /* Strict: the alphabet only, '=' only as the last one or two. */
    for (size_t i = 0; i < len - pad; i++) {
        char c = s[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '+' || c == '/'))
            return -1;
    }
    unsigned char *b = sl_xmalloc(len / 4 * 3 + 1);
    int w = len ? EVP_DecodeBlock(b, (const unsigned char *)s, (int)len) : 0;
    if (w < 0 || (size_t)w < pad) {
        sl_free(b);
        return -1;
    }
    *n = (size_t)w - pad;
    b[*n] = '\0';
    *out = b;
    return 0;
}
