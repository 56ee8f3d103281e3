/*
 * metrics.h - GET /metrics in the Prometheus text format (metrics.c).
 */
#ifndef SLUICE_CTL_METRICS_H
#define SLUICE_CTL_METRICS_H

#include "base/buf.h"
#include "domain/ctl.h"

/* Appends the metrics a token sees (HELP, TYPE and samples) to b: with
 * tenant -1 (the admin or the monitoring token) every family and every
 * tenant's series; with a tenant id, that tenant's series of the
 * per-tenant families and the families that reveal nobody's use (the
 * nodes, the capacity, the uptime), none of the cluster-wide ones (totals
 * from which the other tenants' figures could be worked out). Can't fail;
 * the cost is in metrics.c's header. */
void ctl_metrics_write(ctl_t *c, ctl_buf_t *b, int32_t tenant);
/* Prints the metric table for `sluiced --help`, with who sees each family:
 * [tenant] (a tenant token, its own series), [all] (every token), [cluster]
 * (the admin and the monitoring token). */
void ctl_metrics_print_help(void);

#endif
