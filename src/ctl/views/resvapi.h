/*
 * resvapi.h - advance reservations in the API (docs/api.md):
 * POST /v1/reservations, GET /v1/reservations[/{name}],
 * DELETE /v1/reservations/{name}, and the `reservation` of node objects.
 */
#ifndef SLUICE_CTL_RESVAPI_H
#define SLUICE_CTL_RESVAPI_H

#include <stdbool.h>

#include "base/buf.h"
#include "domain/reservations.h"

/* `,"reservation":null`, or the reservation that holds node id now or
 * next: `,"reservation":{"name":..,"start":T,"end":T,"active":bool}`
 * (seconds since the epoch). Can't fail. O(reservations). */
void ctl_resv_write_node_json(ctl_t *c, ctl_buf_t *b, uint32_t id);

/* A request on /v1/reservations (name NULL) or /v1/reservations/{name}:
 * method "GET", "POST" or "DELETE"; body the parsed JSON (NULL when
 * none). Writes the reply into out and returns its HTTP status; 400 and
 * above with fe filled (code, field, message) and nothing in out. Creating
 * and deleting take the admin token (403 otherwise); reading any API
 * token. */
int ctl_api_resv(ctl_t *c, const char *method, const char *name, bool admin, json_t *body,
                 ctl_buf_t *out, ctl_field_err_t *fe);

#endif
