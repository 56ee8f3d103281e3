/*
 * api.h - JSON and text views of jobs and nodes for the HTTP API
 * (docs/api.md). Views fill the job's view caches (head, row) on first
 * use, which is why they take a non-const job.
 */
#ifndef SLUICE_CTL_API_H
#define SLUICE_CTL_API_H

#include "base/buf.h"
#include "domain/ctl.h"

/* Appends the job object of j to b. */
void ctl_job_write(ctl_t *c, ctl_buf_t *b, ctl_job_t *j);
/* Appends the node object of core node id. */
void ctl_node_write(ctl_t *c, ctl_buf_t *b, uint32_t id);

/* GET /v1/jobs is paged by job id (docs/api.md): a page holds the jobs
 * with ids above `after`, in id order, at most `limit` of them. */
#define CTL_LIST_DEFAULT_LIMIT 1000
#define CTL_LIST_MAX_LIMIT 10000
typedef struct ctl_list_query {
    int32_t tenant;     /* -1: every tenant */
    unsigned states;    /* bit (1 << state) per listed state */
    uint64_t after;     /* ids above this one */
    int64_t limit;      /* 1..CTL_LIST_MAX_LIMIT */
    bool table;         /* the text table, not JSON */
} ctl_list_query_t;
/* Appends one page to b: {"jobs":[...],"next_after":ID or null}, or the
 * text table. *next_after is the id to pass as `after` for the next page
 * (0 on the last page); *count the jobs listed. O(m + k log k) for m jobs
 * in memory, k of them matching. */
void ctl_jobs_list(ctl_t *c, const ctl_list_query_t *q, ctl_buf_t *b, uint64_t *next_after,
                   int64_t *count);

/* GET /v1/nodes' body from its query parameters (NULL when absent;
 * docs/api.md). Without `limit` and `after`: {"nodes":[...]} with every
 * node in registration order (ctl_node_write), as before paging, O(N).
 * With either: one page in name order (bytewise), the nodes whose names
 * sort after `after` (all without it), at most `limit` of them (1 to
 * CTL_LIST_MAX_LIMIT; no cap without it), then "next_after": the last
 * listed name when more follow, else null. O(log N + page), plus
 * O(N log N) once after nodes were added (ctl_nodes_by_name). 0, or -1 for
 * a bad value with nothing appended: *field is the parameter's name and
 * err says why (the caller answers 400). */
int ctl_api_nodes(ctl_t *c, const char *limit, const char *after, ctl_buf_t *b, const char **field,
                  char *err, size_t errlen);

/* GET /v1/tenants' body: the configured tenants the caller may see (the
 * admin all, a tenant token its own): weight, quota, pending and running
 * jobs, usage and dominant share. */
void ctl_api_tenants(ctl_t *c, bool admin, int32_t tenant, ctl_buf_t *b);

#endif
