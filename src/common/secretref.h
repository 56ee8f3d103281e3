/*
 * secretref.h - the names of the secret store and the job spec's
 * `secrets` field (docs/secrets.md): what a secret's name, a key and a
 * file's relative path may be, and the check of a spec's references.
 *
 * Names and keys follow Kubernetes, so that manifests carry over: a name
 * is a DNS subdomain (lower-case letters, digits, '-' and '.', starting
 * and ending with a letter or digit, at most 253 characters); a key is
 * [-._a-zA-Z0-9]+ of at most 253, and neither "." nor "..".
 */
#ifndef SLUICE_COMMON_SECRETREF_H
#define SLUICE_COMMON_SECRETREF_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#define SL_SECRET_NAME_MAX 253
#define SL_SECRET_KEY_MAX 253
/* The most references one job spec may hold. */
#define SL_SECRET_REFS_MAX 64
/* The mode of a secret's files when the reference gives none: 0400. */
#define SL_SECRET_DEFAULT_MODE 0400

bool sl_secret_name_ok(const char *s);
bool sl_secret_key_ok(const char *s);
/* A file's place below its reference's directory: components that are
 * keys (as sl_secret_key_ok), joined by '/', at most 1024 bytes; no
 * leading '/', no empty component. */
bool sl_secret_relpath_ok(const char *s);

/*
 * Checks the spec's `secrets` value v (not null): a list of at most
 * SL_SECRET_REFS_MAX objects, each with exactly one of "secret" or
 * "config_map" (a name) and exactly one form: "key" and "env" (a key and a
 * variable's name, "optional" a boolean), "env_prefix" (a prefix of
 * variable names, "" allowed), or "path" (an absolute directory without
 * "..", "items" an object of keys to relative paths, "mode" 0 to 0777).
 * Returns 0, or -1 with a message in err that starts with the item's
 * place ("[1].env: ..."), for the caller to prefix with the field's name.
 * Reads only; O(size of v).
 */
int sl_secretref_check(json_t *v, char *err, size_t errlen);

#endif
