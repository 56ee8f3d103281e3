/*
 * reportq.h - the query parameters of GET /v1/report that are checked
 * without the controller (report.h uses them; a unit test calls them).
 */
#ifndef SLUICE_CTL_REPORTQ_H
#define SLUICE_CTL_REPORTQ_H

#include <stddef.h>

/* The most parts a report's window may be cut into (?buckets=). */
#define CTL_REPORT_MAX_BUCKETS 240

/* Checks ?buckets= (NULL: absent, *buckets = 0): 0 with *buckets set
 * (1..CTL_REPORT_MAX_BUCKETS), or 400 with a message naming the field in
 * msg (mlen bytes) and *buckets = 0. Pure. */
int ctl_report_buckets_query(const char *text, int *buckets, char *msg, size_t mlen);

#endif
