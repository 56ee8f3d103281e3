/*
 * seal.h - values sealed for storage: AES-256-GCM through OpenSSL's EVP,
 * and base64 (the text form of binary values in the API and on the wire).
 *
 * A sealed value is NONCE (12 random bytes, new for every value) ||
 * CIPHERTEXT (as long as the plaintext) || TAG (16 bytes). The associated
 * data (for the secret store: tenant, name and key) is authenticated but
 * not stored: a sealed value moved to another row, or any byte changed,
 * fails to open. Without the key the sealed bytes say nothing of the
 * value but its length.
 */
#ifndef SLUICE_COMMON_SEAL_H
#define SLUICE_COMMON_SEAL_H

#include <stdbool.h>
#include <stddef.h>

#define SL_SEAL_KEY_BYTES 32
#define SL_SEAL_NONCE_BYTES 12
#define SL_SEAL_TAG_BYTES 16
#define SL_SEAL_OVERHEAD (SL_SEAL_NONCE_BYTES + SL_SEAL_TAG_BYTES)

/* Seals n bytes of pt under key with aad (aadlen bytes, may be 0) into out,
 * which has room for n + SL_SEAL_OVERHEAD bytes. 0, or -1 when OpenSSL
 * fails (no random bytes, no cipher). O(n). */
int sl_seal(const unsigned char key[SL_SEAL_KEY_BYTES], const void *aad, size_t aadlen,
            const void *pt, size_t n, unsigned char *out);

/* Opens inlen sealed bytes into out (room for inlen - SL_SEAL_OVERHEAD
 * bytes), setting *outlen. 0, or -1 when the value is too short, was made
 * under another key or associated data, or was changed (tag mismatch):
 * out then holds nothing of use (it is wiped). O(inlen). */
int sl_unseal(const unsigned char key[SL_SEAL_KEY_BYTES], const void *aad, size_t aadlen,
              const unsigned char *in, size_t inlen, unsigned char *out, size_t *outlen);

/* n bytes as standard base64 with padding, a new NUL-terminated string
 * (the caller frees it with sl_free). Can't fail (aborts on no memory). */
char *sl_base64_encode(const void *p, size_t n);

/* Decodes standard base64 text s (with its padding: a length that is a
 * multiple of 4) into a new buffer *out of
 * *n bytes (sl_free it; a NUL follows the bytes). 0, or -1 for text that
 * is not base64 (*out NULL). */
int sl_base64_decode(const char *s, unsigned char **out, size_t *n);

/* Wipes n bytes at p so that the compiler cannot drop it. */
void sl_wipe(void *p, size_t n);

#endif
