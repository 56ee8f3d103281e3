/*
 * report.h - `sluice report`: the seed's analysis of a time window, from
 * the controller's own database (GET /v1/report).
 */
#ifndef SLUICE_CTL_REPORT_H
#define SLUICE_CTL_REPORT_H

#include <stdint.h>

#include "buf.h"
#include "ctl.h"

/* The longest window a report may cover: ten years, in seconds. */
#define CTL_REPORT_MAX_SINCE_S (10LL * 366 * 86400)

/*
 * Writes into b the JSON report (docs/api.md, GET /v1/report) of the
 * window [now - since_s, now], for the jobs of tenant only when tenant is
 * not NULL (a configured tenant's name; the per-tenant usage then lists
 * that tenant only, while the fairness figures still weigh every tenant).
 * 0, or -1 when the store could not be read (ctl_store_errmsg says why;
 * b holds nothing). O(jobs in the window * log(jobs in the window)): one
 * indexed read of the window's rows (storerep.h), per-tenant sums in one
 * pass, and a sort of the window's delays for exact percentiles.
 */
int ctl_report_write(ctl_t *c, int64_t since_s, const char *tenant, ctl_buf_t *b);

#endif
