/*
 * standby.h - what a controller that is not the leader answers on the
 * leader's ports (docs/ha.md): HTTP requests get 307 Temporary Redirect to
 * the leader's URL for the same path and query, with a JSON body (503
 * while no leader is known); GET /healthz, GET /v1/controllers and GET
 * /metrics (the HA series: a follower's lag) are answered here. An agent's first line gets
 * {"type":"redirect","leader":"HOST:PORT","epoch":N} (no "leader" while
 * none is known) and the connection is closed (docs/protocol.md).
 */
#ifndef SLUICE_CTL_HA_STANDBY_H
#define SLUICE_CTL_HA_STANDBY_H

#include <stdint.h>

struct event_base;
struct evhttp;
struct evconnlistener;

/* What the answers say; the owner keeps it current. */
typedef struct ctl_standby_info {
    char leader_api[256];     /* "http://HOST:PORT", "" while unknown */
    char leader_agent[256];   /* "HOST:PORT", "" while unknown */
    uint64_t epoch;
    /* GET /v1/controllers' body (a new string, free()d by the caller). */
    char *(*view)(void *ud);
    /* GET /metrics' body: the HA series of a follower (a new string). */
    char *(*metrics)(void *ud);
    void *view_ud;
} ctl_standby_info_t;

typedef struct ctl_standby {
    struct evhttp *http;
    struct evconnlistener *agents;
    const ctl_standby_info_t *info;
} ctl_standby_t;

/* Listens on listen (HTTP) and agent_listen ("HOST:PORT" each) on base.
 * 0, or -1 with err naming the address; what was opened is closed by
 * ctl_standby_close either way. */
int ctl_standby_open(ctl_standby_t *s, struct event_base *base, const char *listen,
                     const char *agent_listen, const ctl_standby_info_t *info, char *err,
                     size_t errlen);
/* Closes both ports (their connections end); accepts a zeroed s. */
void ctl_standby_close(ctl_standby_t *s);

#endif
