/*
 * report.h - `sluice report`: the seed's analysis of a time window, from
 * the controller's own database (GET /v1/report).
 *
 * A report reads every job of its window: at 1,000,000 jobs in 30 days
 * that is seconds of SQLite (bench/report_scale.py), which the event loop
 * must not spend. So the read and the sums run on a thread of their own,
 * with a read-only connection of their own (store/store.h's reader), from a snapshot
 * of what they need from memory (tenants, weights, pending work, capacity)
 * taken when the report starts; the loop is told through a pipe when the
 * thread is done, writes the JSON and calls the caller back. One report
 * runs at a time.
 */
#ifndef SLUICE_CTL_REPORT_H
#define SLUICE_CTL_REPORT_H

#include <stdint.h>

#include "base/buf.h"
#include "domain/ctl.h"
#include "views/reportq.h"

/* The longest window a report may cover: ten years, in seconds. */
#define CTL_REPORT_MAX_SINCE_S (10LL * 366 * 86400)

typedef struct ctl_report ctl_report_t;

/* The report's end, on the loop's thread: status 200 with the JSON report
 * (docs/api.md, GET /v1/report) in body, or 500 with the reason in body as
 * plain text. body is the callee's to consume (ctl_buf_fini). */
typedef void (*ctl_report_done_fn)(void *ud, int status, ctl_buf_t *body);

/* Checks GET /v1/report's parameters (since_text, tenant_text: NULL when
 * absent): since in whole seconds, 1..CTL_REPORT_MAX_SINCE_S (default a
 * day); tenant a configured one the caller may see (all: the admin or the
 * monitoring token, any; a tenant token: its own, also by default).
 * Returns 0 with *since and *tenant (NULL: all) set, or the HTTP status
 * (400, 403) with the field and a message naming it. */
int ctl_report_query(ctl_t *c, const char *since_text, const char *tenant_text, bool all,
                     int32_t token_tenant, int64_t *since, const char **tenant, char *field,
                     size_t flen, char *msg, size_t mlen);

/*
 * Starts the report of the window [now - since_s, now], for the jobs of
 * tenant only when tenant is not NULL (a configured tenant's name; the
 * per-tenant usage then lists that tenant only). With own_only (a tenant
 * token asks, for its own tenant) the report holds that tenant's figures
 * and the cluster's capacity, and nothing computed from the other
 * tenants' use: the usage and fair shares and the fairness summary are
 * null, and the allocation counts the tenant's own GPU-hours (scope
 * "tenant"). Without it (the admin or the monitoring token) the fairness
 * figures and the allocation weigh every tenant (scope "cluster"). done is
 * called once, later, from the loop, unless ctl_report_abandon comes first.
 * 0 with the handle in *out, or SL_EIO when no thread or pipe could be made
 * (errno's reason logged). The thread's work: O(jobs in the window *
 * log(jobs in the window)): one indexed read of the window's rows,
 * per-tenant sums in one pass, and a sort of the window's delays for exact
 * percentiles.
 */
int ctl_report_start(ctl_t *c, int64_t since_s, const char *tenant, bool own_only,
                     ctl_report_done_fn done, void *ud, ctl_report_t **out);

/* As ctl_report_start, and with buckets (1..CTL_REPORT_MAX_BUCKETS; 0:
 * none) the report also holds "series": the window cut into that many
 * equal parts, each with its queueing and scheduling delay percentiles
 * (of the jobs that ended in it), GPU allocation ratio, utilisation of
 * the allocated GPUs, idle GPU memory and GPU-hours per listed tenant
 * (docs/api.md). O(jobs x buckets their runs span) more work. */
int ctl_report_start_series(ctl_t *c, int64_t since_s, const char *tenant, bool own_only,
                            int buckets, ctl_report_done_fn done, void *ud, ctl_report_t **out);

/* Waits for r's thread and frees r without calling done (at shutdown).
 * Accepts NULL. */
void ctl_report_abandon(ctl_report_t *r);

#endif
