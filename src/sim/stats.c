/*
 * stats.c - the statistics the simulator reports.
 *
 * Percentiles interpolate linearly between the two closest ranks of the
 * sorted sample (numpy's default, "type 7" of Hyndman and Fan), so p50 of
 * an even-sized sample is the mean of the middle two. Standard deviations
 * are sample ones (n - 1). The fairness figures (DRF ratio, Jain's index)
 * are the core's (sluice/fair.h), so that the controller reports the same.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

void sim_dvec_push(sim_dvec_t *d, double x) {
    if (d->n == d->cap) {
        d->cap = d->cap ? d->cap * 2 : 64;
        d->v = sl_xrealloc(d->v, d->cap * sizeof *d->v);
    }
    d->v[d->n++] = x;
}

void sim_dvec_free(sim_dvec_t *d) {
    sl_free(d->v);
    memset(d, 0, sizeof *d);
}

static int dcmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void sim_sort(double *v, size_t n) {
    if (n > 1) qsort(v, n, sizeof *v, dcmp);
}

double sim_percentile(const double *v, size_t n, double p) {
    if (n == 0) return 0.0;
    if (p <= 0) return v[0];
    if (p >= 100) return v[n - 1];
    double rank = p / 100.0 * (double)(n - 1);
    size_t lo = (size_t)floor(rank);
    size_t hi = lo + 1 < n ? lo + 1 : lo;
    double frac = rank - (double)lo;
    return v[lo] + (v[hi] - v[lo]) * frac;
}

double sim_mean(const double *v, size_t n) {
    if (n == 0) return 0.0;
    double s = 0;
    for (size_t i = 0; i < n; i++) s += v[i];
    return s / (double)n;
}

double sim_sd(const double *v, size_t n) {
    if (n < 2) return 0.0;
    double m = sim_mean(v, n), s = 0;
    for (size_t i = 0; i < n; i++) s += (v[i] - m) * (v[i] - m);
    return sqrt(s / (double)(n - 1));
}

void sim_summarize(sim_dvec_t *d, sim_summary_t *s) {
    sim_sort(d->v, d->n);
    s->n = d->n;
    s->mean = sim_mean(d->v, d->n);
    s->p50 = sim_percentile(d->v, d->n, 50);
    s->p95 = sim_percentile(d->v, d->n, 95);
    s->p99 = sim_percentile(d->v, d->n, 99);
}
