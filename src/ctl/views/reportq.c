/*
 * reportq.c - the report's query parameters that need no controller
 * (reportq.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "views/reportq.h"

int ctl_report_buckets_query(const char *text, int *buckets, char *msg, size_t mlen) {
    *buckets = 0;
    if (text == NULL)
        return 0;
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno != 0 || text[0] < '0' || text[0] > '9' || *end != '\0' || v < 1 ||
        v > CTL_REPORT_MAX_BUCKETS) {
        snprintf(msg, mlen, "buckets: must be a whole number of parts of the window, from 1 to %d",
                 CTL_REPORT_MAX_BUCKETS);
        return 400;
    }
    *buckets = (int)v;
    return 0;
}
