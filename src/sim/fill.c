/*
 * fill.c - the FGD paper's fill protocol (Weng et al., USENIX ATC'23, Sec. 6).
 *
 * For each seed: the pod list is shuffled with the seed, then inflated to
 * 130% of the cluster's GPU capacity by sampling pods with replacement and
 * appending them after the originals (a list already above 130% loses
 * uniformly chosen pods until it is not). Pods then arrive one by one and
 * each is scheduled exactly once (sl_sched_try_start): it starts or is
 * dropped; nothing ever departs. After every pod we record
 *
 *   arrived %     = GPU requested by all pods so far / GPU capacity
 *   unallocated % = (GPU capacity - GPU allocated) / GPU capacity
 *
 * (GPU in milli, a share counting its fraction). The curve of one seed is
 * sampled on a grid of arrived % (0, 0.5, ..., 130) as a step function (the
 * state after the last pod whose arrival kept arrived % at or below the grid
 * point); seeds are averaged point by point. FGD scores against the
 * workload's typical shapes: as in the paper, the pod list's own shapes
 * weighted by how often they occur. For the paper's six baselines they
 * are the FGD artifact's "typical pods" (sl_workload_set_typical(w, 95,
 * false): the most popular shapes, host memory aside, making 95% of the
 * pods), which its FGD scores with and its fragmentation figures measure;
 * Sluice's own placements (fgdbal, firstfit) get every shape, memory
 * included, as sluiced gives them.
 *
 * With --dump-order PREFIX each seed's inputs are written to PREFIX.SEED:
 * one line "N <node name> <rank>" per node (sl_sched_node_rank: equal
 * scores go to the lowest rank) and one "P <pod name>" per pod in arrival
 * order, so that a reference of the FGD artifact (tools/fgd_reference.go
 * -replay) can decide the same run and be compared pod for pod.
 *
 * Cost: one placement decision per pod, O(classes) each in the core.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sim.h"

void sim_fill_order(const int64_t *req, size_t n, int64_t capacity_milli, int target_pct,
                    uint64_t seed, size_t **out, size_t *nout) {
    sl_rng_t rng;
    sl_rng_seed(&rng, seed);
    size_t cap = n ? n * 2 : 1, len = n;
    size_t *ord = sl_xmalloc(cap * sizeof *ord);
    for (size_t i = 0; i < n; i++) ord[i] = i;
    for (size_t i = n; i > 1; i--) {
        size_t k = (size_t)sl_rng_below(&rng, i);
        size_t tmp = ord[i - 1];
        ord[i - 1] = ord[k];
        ord[k] = tmp;
    }
    /* Integer target: capacity * pct / 100, rounded down. */
    int64_t target = capacity_milli / 100 * target_pct + capacity_milli % 100 * target_pct / 100;
    int64_t total = 0;
    bool any_gpu = false;
    for (size_t i = 0; i < n; i++) {
        total += req[i];
        if (req[i] > 0) any_gpu = true;
    }
    if (total < target && any_gpu) {
        while (total < target) {
            size_t k = (size_t)sl_rng_below(&rng, n);
            if (len == cap) {
                cap *= 2;
                ord = sl_xrealloc(ord, cap * sizeof *ord);
            }
            ord[len++] = k;
            total += req[k];
        }
    } else {
        while (total > target && len > 0) {
            size_t k = (size_t)sl_rng_below(&rng, len);
            total -= req[ord[k]];
            memmove(ord + k, ord + k + 1, (len - k - 1) * sizeof *ord);
            len--;
        }
    }
    *out = ord;
    *nout = len;
}

double sim_curve_at(const double *arrived, const double *y, size_t n, double y0, double x) {
    /* Binary search for the last sample with arrived <= x. */
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (arrived[mid] <= x + 1e-9) lo = mid + 1;
        else hi = mid;
    }
    return lo == 0 ? y0 : y[lo - 1];
}

void sim_fill_result_fini(sim_fill_result_t *r) {
    sl_free(r->seeds);
    sl_free(r->lat_us);
    memset(r, 0, sizeof *r);
}

/* Writes prefix.SEED (see the top). 0, or SL_EIO with err naming the file. */
static int dump_order(const char *prefix, uint64_t seed, const sl_sched_t *s,
                      const sl_cluster_t *cl, const sim_trace_t *t, const size_t *ord,
                      size_t nord, char *err, size_t errlen) {
    char path[4096];
    snprintf(path, sizeof path, "%s.%" PRIu64, prefix, seed);
    FILE *f = fopen(path, "w");
    if (!f) {
        snprintf(err, errlen, "--dump-order: cannot write %s: %s", path, strerror(errno));
        return SL_EIO;
    }
    const sl_node_t *n;
    for (uint32_t id = 0; (n = sl_cluster_node(cl, id)) != NULL; id++)
        fprintf(f, "N %s %" PRIu32 "\n", n->name, sl_sched_node_rank(s, id));
    for (size_t k = 0; k < nord; k++) fprintf(f, "P %s\n", t->jobs[ord[k]].name);
    if (fclose(f) != 0) {
        snprintf(err, errlen, "--dump-order: writing %s: %s", path, strerror(errno));
        return SL_EIO;
    }
    return 0;
}

static double now_us(void) {
    return sim_now_s() * 1e6;
}

/* The FGD paper's six baselines, which run with the artifact's typical
 * pods (see the top). */
static bool paper_baseline(const char *placement) {
    static const char *const names[] = {"random", "dotprod", "gpuclustering", "gpupacking",
                                        "bestfit", "fgd"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(placement, names[i]) == 0) return true;
    return false;
}

/* One seed. Fills grid[] with unallocated % and adds to the counters. */
static int fill_one(const sim_trace_t *t, const char *placement, uint64_t seed,
                    const sim_run_opts_t *o, double *grid, double *frag100, sim_dvec_t *lat,
                    size_t *pods, size_t *failed, char *err, size_t errlen) {
    sl_cluster_t *cl = NULL;
    sl_sched_t *s = NULL;
    sl_task_req_t *reqs = NULL;
    int64_t *gpu = NULL;
    size_t *ord = NULL, nord = 0;
    double *arr = NULL, *una = NULL;
    int rc = sim_cluster_build(t, &cl, err, errlen);
    if (rc < 0) return rc;
    sl_sched_config_t cfg;
    sl_sched_config_init(&cfg);
    cfg.placement = placement;
    cfg.seed = seed;
    char msg[256] = "";
    if ((rc = sl_sched_create(&cfg, cl, &s, msg, sizeof msg)) < 0) {
        snprintf(err, errlen, "%s", msg);
        goto out;
    }
    sl_tenant_spec_t ts = {.name = "fill", .weight = 1};
    int tenant = sl_sched_add_tenant(s, &ts);
    if (tenant < 0) {
        snprintf(err, errlen, "adding the tenant: %s", sl_strerror(tenant));
        rc = tenant;
        goto out;
    }
    reqs = sl_xmalloc((t->njobs ? t->njobs : 1) * sizeof *reqs);
    gpu = sl_xmalloc((t->njobs ? t->njobs : 1) * sizeof *gpu);
    sl_workload_t *w = sl_sched_workload(s);
    for (size_t i = 0; i < t->njobs; i++) {
        if ((rc = sim_job_req(&t->jobs[i], cl, true, &reqs[i], err, errlen)) < 0) goto out;
        gpu[i] = sim_job_gpu_milli(&t->jobs[i]);
        sl_workload_add(w, &reqs[i], t->jobs[i].ntasks);
    }
    if (paper_baseline(placement)) sl_workload_set_typical(w, SIM_FILL_TYPICAL_PCT, false);
    sl_res_t total, freec;
    sl_cluster_capacity(cl, &total, &freec);
    int64_t cap = total.gpu_milli;
    if (cap <= 0) {
        snprintf(err, errlen, "the cluster has no GPUs: the fill protocol measures GPUs");
        rc = SL_EINVAL;
        goto out;
    }
    sim_fill_order(gpu, t->njobs, cap, SIM_FILL_TARGET_PCT, seed, &ord, &nord);
    if (o->dump_order &&
        (rc = dump_order(o->dump_order, seed, s, cl, t, ord, nord, err, errlen)) < 0)
        goto out;
    arr = sl_xmalloc((nord ? nord : 1) * sizeof *arr);
    una = sl_xmalloc((nord ? nord : 1) * sizeof *una);
    int64_t arrived = 0, alloc = 0;
    bool frag_done = false;
    for (size_t k = 0; k < nord; k++) {
        const sim_job_t *j = &t->jobs[ord[k]];
        sl_job_spec_t sp = {.id = k + 1,
                            .tenant = tenant,
                            .priority = 0,
                            .submit_us = 0,
                            .ntasks = j->ntasks,
                            .min_tasks = 0,
                            .task = reqs[ord[k]],
                            .time_limit_us = 0};
        /* The 100% point is reached before this pod arrives: record the
         * fragmentation of the state that the grid reports at 100. */
        if (!frag_done && (double)(arrived + gpu[ord[k]]) * 100.0 / (double)cap > 100.0) {
            *frag100 = sl_frag_cluster(cl, w) * 100.0 / (double)cap;
            frag_done = true;
        }
        arrived += gpu[ord[k]];
        if ((rc = sl_sched_submit(s, &sp, msg, sizeof msg)) < 0) {
            snprintf(err, errlen, "pod %s: %s", j->name, msg);
            goto out;
        }
        double t0 = now_us();
        int st = sl_sched_try_start(s, sp.id, 0);
        sim_dvec_push(lat, now_us() - t0);
        if (st < 0) {
            snprintf(err, errlen, "pod %s: sl_sched_try_start: %s", j->name, sl_strerror(st));
            rc = st;
            goto out;
        }
        if (st == SL_FIT) {
            alloc += gpu[ord[k]];
        } else {
            (*failed)++;
            sl_sched_cancel(s, sp.id, 0);
            sl_sched_forget(s, sp.id);
        }
        (*pods)++;
        arr[k] = (double)arrived * 100.0 / (double)cap;
        una[k] = (double)(cap - alloc) * 100.0 / (double)cap;
        if (o->check) {
            sl_cluster_capacity(cl, &total, &freec);
            if (total.gpu_milli - freec.gpu_milli != alloc) {
                snprintf(err, errlen, "pod %s: cluster reports %" PRId64 " GPU milli allocated, "
                         "started pods hold %" PRId64, j->name, total.gpu_milli - freec.gpu_milli,
                         alloc);
                rc = SL_ESTATE;
                goto out;
            }
            if ((rc = sim_check(s, err, errlen)) < 0) goto out;
        }
    }
    if (!frag_done) *frag100 = sl_frag_cluster(cl, w) * 100.0 / (double)cap;
    for (int g = 0; g < SIM_FILL_GRID_N; g++)
        grid[g] = sim_curve_at(arr, una, nord, 100.0, g * SIM_FILL_GRID_STEP);
    rc = 0;
out:
    sl_free(arr);
    sl_free(una);
    sl_free(ord);
    sl_free(gpu);
    sl_free(reqs);
    sl_sched_destroy(s);
    sl_cluster_destroy(cl);
    return rc;
}

int sim_fill_run(const sim_trace_t *t, const char *placement, const uint64_t *seeds,
                 size_t nseeds, const sim_run_opts_t *o, sim_fill_result_t *res, char *err,
                 size_t errlen) {
    memset(res, 0, sizeof *res);
    snprintf(res->placement, sizeof res->placement, "%s", placement);
    res->nseeds = nseeds;
    res->seeds = sl_xmalloc((nseeds ? nseeds : 1) * sizeof *res->seeds);
    memcpy(res->seeds, seeds, nseeds * sizeof *seeds);
    double *grids = sl_xcalloc((nseeds ? nseeds : 1) * SIM_FILL_GRID_N, sizeof *grids);
    double *frag = sl_xcalloc(nseeds ? nseeds : 1, sizeof *frag);
    double col[1024];
    sim_dvec_t lat = {0};
    int rc = 0;
    double t0 = sim_now_s();
    for (size_t i = 0; i < nseeds; i++) {
        char label[96];
        snprintf(label, sizeof label, "fill %s seed %" PRIu64, placement, seeds[i]);
        sim_progress(o->progress, label, (double)i / (double)nseeds);
        rc = fill_one(t, placement, seeds[i], o, grids + i * SIM_FILL_GRID_N, &frag[i], &lat,
                      &res->pods_total, &res->pods_failed, err, errlen);
        if (rc < 0) goto out;
    }
    sim_progress_done(o->progress);
    res->wall_s = sim_now_s() - t0;
    size_t ns = nseeds < 1024 ? nseeds : 1024;
    for (int g = 0; g < SIM_FILL_GRID_N; g++) {
        for (size_t i = 0; i < ns; i++) col[i] = grids[i * SIM_FILL_GRID_N + g];
        res->mean[g] = sim_mean(col, ns);
        res->sd[g] = sim_sd(col, ns);
    }
    int g100 = (int)lround(100.0 / SIM_FILL_GRID_STEP), g130 = SIM_FILL_GRID_N - 1;
    res->u100_mean = res->mean[g100];
    res->u100_sd = res->sd[g100];
    res->u130_mean = res->mean[g130];
    res->u130_sd = res->sd[g130];
    res->frag100_mean = sim_mean(frag, nseeds);
    sim_sort(lat.v, lat.n);
    res->lat_p50 = sim_percentile(lat.v, lat.n, 50);
    res->lat_p99 = sim_percentile(lat.v, lat.n, 99);
    res->lat_us = lat.v;
    res->nlat = lat.n;
    lat.v = NULL;
out:
    sim_progress_done(o->progress);
    sim_dvec_free(&lat);
    sl_free(grids);
    sl_free(frag);
    return rc;
}
