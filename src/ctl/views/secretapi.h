/*
 * secretapi.h - the tenants' secrets and config maps in the API
 * (docs/api.md, docs/secrets.md): POST /v1/secrets, GET /v1/secrets[/{name}],
 * DELETE /v1/secrets/{name}. No answer ever holds a value: a listing gives
 * names, types, keys with their sizes and the creation time.
 */
#ifndef SLUICE_CTL_SECRETAPI_H
#define SLUICE_CTL_SECRETAPI_H

#include <stdbool.h>

#include "base/buf.h"
#include "domain/secrets.h"

/* A request on /v1/secrets (name NULL) or /v1/secrets/{name}: method
 * "GET", "POST" or "DELETE"; body the parsed JSON (NULL when none). The
 * tenant is the token's (tenant >= 0), or for the admin token the one
 * qtenant (?tenant=) names; a tenant token may not name another. Another
 * tenant's object answers 404 as an absent one does. Writes the reply into
 * out and returns its HTTP status; 400 and above with fe filled and
 * nothing in out. */
int ctl_api_secret(ctl_t *c, const char *method, const char *name, bool admin, int32_t tenant,
                   const char *qtenant, json_t *body, ctl_buf_t *out, ctl_field_err_t *fe);

/* What a submitted job j's tenant is told of its secret references
 * (ctl_secrets_check's warnings: an envFrom key that is not a variable
 * name, and so is left out) into j->warnings, a new list, or NULL when
 * there is nothing to say; the 201 answer (ctl_job_write) holds them.
 * Reads the store; can't fail (a store that cannot be read says nothing
 * here: the submission's own check has just read it). */
void ctl_secret_warnings(ctl_t *c, ctl_job_t *j);

#endif
