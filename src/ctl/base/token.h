/*
 * token.h - the one comparison of secrets (API tokens, the cluster token)
 * that every adapter uses, tokens stored hashed, and node tokens
 * (docs/security.md, "Tokens"; docs/config.md, "Node credentials").
 */
#ifndef SLUICE_CTL_TOKEN_H
#define SLUICE_CTL_TOKEN_H

#include <stdbool.h>
#include <stddef.h>

/* A node token: HMAC-SHA256(cluster_token, CTL_NODE_TOKEN_CONTEXT + name)
 * in lower-case hex (docs/config.md, Node credentials). */
#define CTL_NODE_TOKEN_CONTEXT "sluice-node:"
#define CTL_NODE_TOKEN_LEN 64

/* True when the secret `given` equals `want` (non-empty), in time that
 * depends only on the length of `given`, so that a client cannot learn a
 * token's bytes by timing (for API tokens and the cluster token alike).
 * A `want` of the form "sha256:<64 hex digits>" (a hashed token,
 * docs/security.md) matches the given token whose SHA-256 that is.
 * NULL given is false. O(strlen(given) + strlen(want)). */
bool ctl_token_eq(const char *given, const char *want);

/* A presented token held against several stored ones (an API request
 * against the admin's, every tenant's and the cluster's): its SHA-256 is
 * computed at most once, on the first hashed stored token. given is
 * borrowed; init can't fail. */
typedef struct ctl_token {
    const char *plain;
    char hashed[72]; /* "sha256:<hex>", or "" until needed */
} ctl_token_t;
void ctl_token_init(ctl_token_t *t, const char *given);
/* ctl_token_eq(t's token, want), reusing t's hash. */
bool ctl_token_matches(ctl_token_t *t, const char *want);

/* True when token is stored hashed ("sha256:" and 64 hex digits). */
bool ctl_token_is_hashed(const char *token);
/* The node token of node `name`: HMAC-SHA256 keyed with cluster_token over
 * "sluice-node:" + name, as CTL_NODE_TOKEN_LEN lower-case hex digits and a
 * NUL in out (outlen > CTL_NODE_TOKEN_LEN). Only the controller and whoever
 * holds the cluster token can make it; it proves the name it was made for
 * and no other. 0, SL_EINVAL for an empty token or a name that is not
 * 1..SL_NAME_MAX-1 bytes (out untouched), SL_EPERM for a cluster token
 * stored hashed (sha256:, which is no secret: derivation is off), SL_EIO if
 * libcrypto fails.
 * O(length of both). */
int ctl_node_token(const char *cluster_token, const char *name, char *out, size_t outlen);

#endif
