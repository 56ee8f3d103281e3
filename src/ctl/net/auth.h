/*
 * auth.h - who presents a bearer token on the HTTP API, and what the route
 * lets that role do (docs/api.md, "Tokens"; docs/security.md).
 *
 * Roles: the admin token sees and changes everything; a tenant token sees
 * its own tenant's jobs and figures; the monitoring token (monitoring_token
 * in the config) only reads the cluster's figures, /metrics and
 * /v1/report, all tenants' included; the cluster token is for agents.
 */
#ifndef SLUICE_CTL_AUTH_H
#define SLUICE_CTL_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "domain/ctl.h"

typedef enum ctl_role {
    CTL_ROLE_ADMIN = 1,
    CTL_ROLE_MONITOR, /* reads every tenant's figures, changes nothing */
    CTL_ROLE_TENANT,
    CTL_ROLE_STEP,    /* a token of the step form, which the step's route checks */
} ctl_role_t;

typedef struct ctl_auth {
    ctl_role_t role;
    int32_t tenant; /* the token's tenant (CTL_ROLE_TENANT), else -1 */
    const char *step_token; /* CTL_ROLE_STEP: the token, in the header; else NULL */
} ctl_auth_t;

/* Which roles a route admits beside the admin's and tenants'. */
typedef enum ctl_route_auth {
    CTL_AUTH_NONE = 0, /* no token needed */
    CTL_AUTH_API,      /* a tenant or the admin token */
    CTL_AUTH_READ,     /* also the monitoring token: the cluster's figures */
    CTL_AUTH_STEP,     /* also a job's step token (net/steps.c checks it against the job) */
} ctl_route_auth_t;

/*
 * The role of the bearer token in header (the Authorization header's
 * value; NULL when absent) on a route of kind kind (not CTL_AUTH_NONE).
 * Returns 0 with *a filled, or the HTTP status to answer, 401 (no or an
 * unknown token: the caller adds WWW-Authenticate) or 403 (a token this
 * route does not take), with the message in msg. Each stored token is
 * compared in constant time (token.h), the presented one hashed at most
 * once. O(tenants).
 */
int ctl_auth_check(const ctl_t *c, const char *header, ctl_route_auth_t kind, ctl_auth_t *a,
                   char *msg, size_t msglen);

#endif
