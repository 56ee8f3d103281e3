/*
 * auth.c - the HTTP API's bearer tokens to roles (auth.h).
 *
 * Every stored token (admin, monitoring, each tenant's, the cluster's) is
 * held against the presented one through ctl_token_matches, so a hashed
 * stored token costs one SHA-256 of the presented token per request,
 * however many there are.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "net/auth.h"

int ctl_auth_check(const ctl_t *c, const char *header, ctl_route_auth_t kind, ctl_auth_t *a,
                   char *msg, size_t msglen) {
    *a = (ctl_auth_t){.tenant = -1};
    if (header == NULL || strncasecmp(header, "Bearer ", 7) != 0) {
        snprintf(msg, msglen, "missing \"Authorization: Bearer TOKEN\" header");
        return 401;
    }
    const char *tok = header + 7;
    while (*tok == ' ')
        tok++;
    ctl_token_t t;
    ctl_token_init(&t, tok);
    if (ctl_token_matches(&t, c->cfg.admin_token)) {
        a->role = CTL_ROLE_ADMIN;
        return 0;
    }
    if (c->cfg.monitoring_token && ctl_token_matches(&t, c->cfg.monitoring_token)) {
        if (kind != CTL_AUTH_READ) {
            snprintf(msg, msglen, "the monitoring token only reads /metrics and /v1/report; use "
                     "a tenant or the admin token");
            return 403;
        }
        a->role = CTL_ROLE_MONITOR;
        return 0;
    }
    for (size_t i = 0; i < c->cfg.ntenants; i++) {
        if (!c->cfg.tenants[i].token || !ctl_token_matches(&t, c->cfg.tenants[i].token))
            continue;
        a->role = CTL_ROLE_TENANT;
        a->tenant = sl_sched_tenant_find(c->sched, c->cfg.tenants[i].name);
        if (a->tenant < 0) {
            snprintf(msg, msglen, "tenant of this token is unknown");
            return 403;
        }
        return 0;
    }
    if (ctl_token_matches(&t, c->cfg.cluster_token)) {
        snprintf(msg, msglen, "the cluster token is for agents; use a tenant or the admin token");
        return 403;
    }
    if (kind == CTL_AUTH_STEP && strncmp(tok, "step-", 5) == 0) {
        a->role = CTL_ROLE_STEP;
        a->step_token = tok;
        return 0;
    }
    snprintf(msg, msglen, "unknown token");
    return 401;
}
