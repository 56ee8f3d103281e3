/*
 * fair.c - weighted max-min fair shares by DRF's progressive filling, and
 * the fairness figures built on them (definitions in sluice/fair.h).
 *
 * Algorithm. Let c_r be the capacity of resource r and d_i the demand of
 * tenant i. In units of the cluster, i's demand is u_ir = d_ir / c_r, its
 * demand's dominant share D_i = max_r u_ir, and its direction v_ir = u_ir
 * / D_i (the resources one unit of dominant share takes, largest 1). At
 * water level L every running tenant holds dominant share w_i * L, so
 * resource r is used at
 *
 *     used_r + L * rate_r,  rate_r = sum over running i of w_i * v_ir,
 *
 * where used_r is what stopped tenants took. Two kinds of events stop
 * tenants as L rises: tenant i's demand is met at L = D_i / w_i (the
 * tenants are sorted once by that level), and resource r runs out at L =
 * (1 - used_r) / rate_r, which stops every running tenant with v_ir > 0.
 * The loop takes the earlier event each time; a resource runs out at most
 * once, so there are at most n + 3 events, each O(1) but the three
 * run-outs, which walk the tenants: O(n log n) in all.
 *
 * Floating point: rates are sums and differences of doubles, so a
 * resource whose users have all stopped may keep a rate of 1e-17 rather
 * than 0. The loop ends when no tenant runs, whatever the rates say, and
 * each run-out recomputes the rates from the running tenants, so such a
 * residue can at worst mark an unused resource as run out.
 */
#include <math.h>
#include <stdlib.h> /* qsort */

#include "sluice/alloc.h"
#include "sluice/error.h"
#include "sluice/fair.h"

enum { NRES = 3 };

typedef struct ent {
    double level; /* L at which the tenant's demand is met */
    size_t i;
} ent_t;

static int cmp_ent(const void *a, const void *b) {
    const ent_t *x = a, *y = b;
    if (x->level != y->level) return x->level < y->level ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i; /* deterministic ties */
}

static void res_vec(sl_res_t r, double out[NRES]) {
    out[0] = (double)r.cpu_milli;
    out[1] = (double)r.mem_bytes;
    out[2] = (double)r.gpu_milli;
}

static bool res_neg(sl_res_t r) {
    return r.cpu_milli < 0 || r.mem_bytes < 0 || r.gpu_milli < 0;
}

static double dominant(const double x[NRES], const double c[NRES]) {
    double m = 0;
    for (int r = 0; r < NRES; r++)
        if (c[r] > 0 && x[r] / c[r] > m) m = x[r] / c[r];
    return m;
}

static double weight_of(const sl_fair_tenant_t *t) {
    return t->weight > 0 ? (double)t->weight : 1.0;
}

/* Stops tenant i at dominant share share: it no longer takes part in the
 * filling, and what it takes is added to used. */
static void stop(sl_fair_tenant_t *t, size_t i, double share, const double *v, bool *running,
                 double used[NRES], double rate[NRES]) {
    double w = weight_of(&t[i]);
    t[i].fair_share = share;
    running[i] = false;
    for (int r = 0; r < NRES; r++) {
        used[r] += share * v[i * NRES + r];
        rate[r] -= w * v[i * NRES + r];
    }
}

/* The progressive filling itself (see the file header). */
static void fill(const double c[NRES], sl_fair_tenant_t *t, size_t n) {
    double *v = sl_xcalloc(n ? n * NRES : 1, sizeof *v);
    bool *running = sl_xcalloc(n ? n : 1, sizeof *running);
    ent_t *ord = sl_xmalloc((n ? n : 1) * sizeof *ord);
    double used[NRES] = {0}, rate[NRES] = {0};
    bool out[NRES] = {false};
    size_t nord = 0, nrun = 0;
    for (size_t i = 0; i < n; i++) {
        double d[NRES], h[NRES], u[NRES] = {0};
        res_vec(sl_res_add(t[i].held, t[i].pending), d);
        res_vec(t[i].held, h);
        t[i].held_share = dominant(h, c);
        t[i].fair_share = 0;
        double dm = dominant(d, c);
        if (dm <= 0) continue; /* asks for nothing the cluster has: owed nothing */
        for (int r = 0; r < NRES; r++) {
            u[r] = c[r] > 0 ? d[r] / c[r] : 0;
            v[i * NRES + r] = u[r] / dm;
            rate[r] += weight_of(&t[i]) * v[i * NRES + r];
        }
        running[i] = true;
        nrun++;
        ord[nord++] = (ent_t){dm / weight_of(&t[i]), i};
    }
    qsort(ord, nord, sizeof *ord, cmp_ent);
    size_t k = 0;
    double level = 0;
    while (nrun > 0) {
        while (k < nord && !running[ord[k].i]) k++;
        double l_dem = k < nord ? ord[k].level : INFINITY;
        int rr = -1;
        double l_out = INFINITY;
        for (int r = 0; r < NRES; r++) {
            if (out[r] || rate[r] <= 0) continue;
            double l = (1.0 - used[r]) / rate[r];
            if (l < l_out) {
                l_out = l;
                rr = r;
            }
        }
        if (rr >= 0 && l_out <= l_dem) {
            /* Resource rr runs out: every running tenant that uses it stops. */
            level = l_out > level ? l_out : level;
            out[rr] = true;
            for (size_t i = 0; i < n; i++) {
                if (!running[i] || v[i * NRES + rr] <= 0) continue;
                stop(t, i, weight_of(&t[i]) * level, v, running, used, rate);
                nrun--;
            }
            for (int r = 0; r < NRES; r++) rate[r] = 0;
            for (size_t i = 0; i < n; i++)
                if (running[i])
                    for (int r = 0; r < NRES; r++) rate[r] += weight_of(&t[i]) * v[i * NRES + r];
        } else {
            /* The next tenant's demand is met; its surplus goes on to the rest. */
            size_t i = ord[k].i;
            level = l_dem > level ? l_dem : level;
            double d[NRES];
            res_vec(sl_res_add(t[i].held, t[i].pending), d);
            stop(t, i, dominant(d, c), v, running, used, rate);
            nrun--;
            k++;
        }
    }
    sl_free(ord);
    sl_free(running);
    sl_free(v);
}

int sl_fair_compute(sl_res_t cap, sl_fair_tenant_t *t, size_t n, sl_fair_summary_t *sum) {
    if (n > 0 && !t) return SL_EINVAL;
    if (res_neg(cap)) return SL_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (t[i].weight < 0 || res_neg(t[i].held) || res_neg(t[i].pending)) return SL_EINVAL;
    double c[NRES];
    res_vec(cap, c);
    fill(c, t, n);
    size_t m = 0;
    double worst = 1.0, s = 0, s2 = 0;
    for (size_t i = 0; i < n; i++) {
        t[i].deficit = t[i].fair_share - t[i].held_share;
        if (!t[i].backlogged || t[i].fair_share <= 0) continue;
        double x = t[i].held_share / t[i].fair_share;
        if (x < worst) worst = x;
        s += x;
        s2 += x * x;
        m++;
    }
    if (sum) {
        sum->counted = m;
        sum->drf_ratio = worst;
        sum->jain = m == 0 || s2 == 0 ? 1.0 : s * s / ((double)m * s2);
    }
    return 0;
}
