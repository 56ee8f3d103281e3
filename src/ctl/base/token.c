/*
 * token.c - secrets compared in constant time, tokens stored as their
 * SHA-256, and node tokens (HMAC-SHA256 keyed with the cluster token).
 */
#include <stdio.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "base/token.h"
#include "sluice/sluice.h"
#include "tls.h"

bool ctl_token_is_hashed(const char *token) {
    return token != NULL && strncmp(token, "sha256:", 7) == 0 && strlen(token) == 7 + 64 &&
           strspn(token + 7, "0123456789abcdef") == 64;
}

void ctl_token_init(ctl_token_t *t, const char *given) {
    t->plain = given;
    t->hashed[0] = '\0';
}

bool ctl_token_matches(ctl_token_t *t, const char *want) {
    const char *given = t->plain;
    if (given == NULL || want == NULL)
        return false;
    if (ctl_token_is_hashed(want)) {
        /* The hash of given is compared with the stored one, so the
         * stored form itself never serves as a password. Hashed once per
         * presented token, however many stored tokens it is held against. */
        if (t->hashed[0] == '\0') {
            memcpy(t->hashed, "sha256:", 7);
            sl_sha256_hex(given, strlen(given), t->hashed + 7);
        }
        given = t->hashed;
    }
    size_t lg = strlen(given), lw = strlen(want);
    /* Every byte of given is compared (with want repeated), whatever the
     * first difference; the lengths are compared the same way. */
    unsigned char d = (unsigned char)(lg != lw);
    for (size_t i = 0; i < lg; i++)
        d |= (unsigned char)(given[i] ^ want[i % (lw ? lw : 1)]);
    return d == 0 && lw > 0;
}

bool ctl_token_eq(const char *given, const char *want) {
    ctl_token_t t;
    ctl_token_init(&t, given);
    return ctl_token_matches(&t, want);
}

int ctl_node_token(const char *cluster_token, const char *name, char *out, size_t outlen) {
    /* A hashed cluster token is not the secret: keyed with the stored
     * hash, node tokens could be made by anyone who reads the config. */
    if (ctl_token_is_hashed(cluster_token))
        return SL_EPERM;
    if (cluster_token == NULL || cluster_token[0] == '\0' || name == NULL || name[0] == '\0' ||
        strlen(name) >= SL_NAME_MAX || outlen < CTL_NODE_TOKEN_LEN + 1)
        return SL_EINVAL;
    char msg[sizeof CTL_NODE_TOKEN_CONTEXT + SL_NAME_MAX];
    int n = snprintf(msg, sizeof msg, "%s%s", CTL_NODE_TOKEN_CONTEXT, name);
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int maclen = 0;
    if (HMAC(EVP_sha256(), cluster_token, (int)strlen(cluster_token), (const unsigned char *)msg,
             (size_t)n, mac, &maclen) == NULL || maclen * 2 != CTL_NODE_TOKEN_LEN)
        return SL_EIO;
    static const char hex[] = "0123456789abcdef";
    for (unsigned int i = 0; i < maclen; i++) {
        out[2 * i] = hex[mac[i] >> 4];
        out[2 * i + 1] = hex[mac[i] & 15];
    }
    out[CTL_NODE_TOKEN_LEN] = '\0';
    return 0;
}
