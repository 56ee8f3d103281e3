/*
 * metrics.h - GET /metrics in the Prometheus text format (metrics.c).
 */
#ifndef SLUICE_CTL_METRICS_H
#define SLUICE_CTL_METRICS_H

#include "base/buf.h"
#include "domain/ctl.h"

/* Appends every metric (HELP, TYPE and samples) to b. */
void ctl_metrics_write(ctl_t *c, ctl_buf_t *b);
/* Prints the metric table for `sluiced --help`. */
void ctl_metrics_print_help(void);

#endif
