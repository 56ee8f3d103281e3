/*
 * benchcycle.h - what the scheduling-cycle benchmarks (bench_sched.c,
 * bench_resv.c) share: the monotonic clock in seconds, a qsort order for
 * the samples, and the scan for the running job that ends first (its
 * start plus its time limit; ties by id), which each loop finishes to make
 * room. Static, so that each benchmark stays one translation unit.
 */
#ifndef SLUICE_BENCH_CYCLE_H
#define SLUICE_BENCH_CYCLE_H

#include <stdint.h>
#include <time.h>

#include "sluice/sluice.h"

static inline double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct end_scan {
    int64_t end;
    uint64_t id;
} end_scan_t;

static inline int find_first_end(void *ud, const sl_job_t *j) {
    end_scan_t *e = ud;
    int64_t end = sl_job_start_us(j) + sl_job_spec(j)->time_limit_us;
    if (end < e->end || (end == e->end && sl_job_id(j) < e->id)) {
        e->end = end;
        e->id = sl_job_id(j);
    }
    return 0;
}

#endif
