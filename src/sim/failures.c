/*
 * failures.c - `sluice-sim failures`: GPU failures replayed from a rate per
 * GPU-hour with a seed, and the effective training time of one large gang
 * under three ways of handling them (docs/sim.md, "failures").
 *
 * The workload is the Llama 3 paper's: one gang job training for days on
 * G GPUs (whole nodes of 8), checkpointing every C seconds; each restart
 * costs R seconds (reload the checkpoint, re-form the communicators) before
 * training goes on. Faults arrive as a Poisson process of rate lambda per
 * GPU-hour over the job's GPUs (the paper: 419 interruptions in 54 days on
 * 16,384 GPUs, 1.97e-5 per GPU-hour); each hits one GPU of the job, and a
 * fraction p of them leave the GPU bad until it is repaired (a faulty GPU
 * or HBM, as 47% of the paper's were), the rest are transient.
 *
 * The placement and the fences are the scheduling core's, unchanged: a
 * cluster of the job's nodes plus spares, the gang placed by the
 * scheduler, a fenced GPU taken out with sl_cluster_fence_gpu and the gang
 * evicted with sl_sched_evict_gpus, so the simulator lands a restarted
 * job exactly where sluiced would. The three policies:
 *
 *   sluice  the agent sees the fault within D seconds (its poll and a
 *           heartbeat), the GPU is fenced, the gang requeued and started
 *           again on healthy GPUs at once; a transient fault's GPU comes
 *           back after clear_after, a bad one after its repair.
 *   nhc     Slurm with NHC: the job crashes when its collective times out
 *           (T seconds), Slurm requeues it at once; NHC drains the node of
 *           a bad GPU at its next check (uniform within the interval I), so
 *           a requeue before that may land on the bad GPU and crash again.
 *   none    no automatic handling (Sluice before health): the job crashes
 *           after T, a person requeues it after an exponential delay of
 *           mean H, and a bad GPU stays in placement until it is repaired.
 *
 * Effective training time = the training kept (up to each fault's last
 * checkpoint, and to the end of the horizon) / the horizon. Pure
 * arithmetic over the core's decisions; deterministic for a seed.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "sluice/sluice.h"

#define GPN 8
#define MAX_BAD 4096

typedef enum { P_SLUICE = 0, P_NHC, P_NONE, P_N } policy_t;
static const char *const pname[P_N] = {"sluice", "nhc", "none"};

typedef struct bad {
    uint32_t node;
    int gpu;
    double until;     /* repaired (or, sluice, cleared) at */
    double drain_at;  /* nhc: its node drained from then on */
    bool drained;
} bad_t;

typedef struct run {
    sl_cluster_t *cl;
    sl_sched_t *sched;
    sl_rng_t rng;
    const sim_fail_opts_t *o;
    policy_t pol;
    uint64_t next_id, job;
    bad_t bad[MAX_BAD];
    size_t nbad;
    int64_t faults, restarts;
} run_t;

static double expo(sl_rng_t *r, double mean) {
    return -mean * log(1.0 - sl_rng_unit(r));
}

static void noop_start(void *ud, const sl_job_t *j) {
    (void)ud;
    (void)j;
}

static int64_t us(double s) {
    return (int64_t)(s * 1e6);
}

/* Submits the gang (again, for nhc and none: a new job) and starts it. */
static bool start(run_t *r, double t) {
    const sl_job_t *cur = r->job ? sl_sched_job(r->sched, r->job) : NULL;
    if (cur == NULL || sl_job_state(cur) == SL_JOB_DONE || sl_job_state(cur) == SL_JOB_CANCELLED) {
        sl_job_spec_t sp = {.id = ++r->next_id, .tenant = 0, .submit_us = us(t),
                            .ntasks = r->o->gpus / GPN};
        sl_task_req_init(&sp.task);
        sp.task.gpus = GPN;
        sp.task.cpu_milli = 1000;
        char err[256];
        if (sl_sched_submit(r->sched, &sp, err, sizeof err) != 0) return false;
        r->job = sp.id;
    }
    sl_sched_cycle(r->sched, us(t), noop_start, NULL, NULL);
    const sl_job_t *j = sl_sched_job(r->sched, r->job);
    return j && sl_job_state(j) == SL_JOB_RUNNING;
}

/* Whether the running job holds a GPU that is bad at t. */
static bool on_bad(run_t *r, double t) {
    const sl_job_t *j = sl_sched_job(r->sched, r->job);
    for (int32_t i = 0; j && i < sl_job_ntasks_placed(j); i++) {
        const sl_place_t *p = sl_job_place(j, i);
        for (size_t k = 0; k < r->nbad; k++)
            if (r->bad[k].until > t && r->bad[k].node == p->node && (p->gpu_mask >> r->bad[k].gpu) & 1u)
                return true;
    }
    return false;
}

/* Returns to service what is repaired (or cleared) by t; nhc drains the
 * nodes whose check has come. */
static void maintain(run_t *r, double t) {
    for (size_t k = 0; k < r->nbad; k++) {
        bad_t *b = &r->bad[k];
        if (r->pol == P_NHC && !b->drained && b->until > t && t >= b->drain_at) {
            sl_cluster_set_state(r->cl, b->node, SL_NODE_DRAINING);
            b->drained = true;
        }
        if (b->until <= t && b->until > 0) {
            if (r->pol == P_SLUICE) sl_cluster_fence_gpu(r->cl, b->node, b->gpu, false);
            if (r->pol == P_NHC && b->drained) sl_cluster_set_state(r->cl, b->node, SL_NODE_UP);
            b->until = 0;
        }
    }
}

static void noop_pre(void *ud, const sl_preemption_t *p) {
    (void)ud;
    (void)p;
}

/* One run over the horizon: the training kept, in seconds. */
static double run_one(const sim_fail_opts_t *o, policy_t pol, uint64_t seed, int64_t *faults,
                      int64_t *restarts) {
    run_t *r = calloc(1, sizeof *r);
    r->o = o;
    r->pol = pol;
    sl_rng_seed(&r->rng, seed);
    sl_cluster_create(&r->cl);
    int nodes = o->gpus / GPN + o->spare_nodes;
    for (int i = 0; i < nodes; i++) {
        char name[32];
        snprintf(name, sizeof name, "n%05d", i);
        sl_node_spec_t ns = {.name = name, .cpu_milli = 128000, .mem_bytes = INT64_C(1) << 40,
                             .gpus = GPN, .gpu_model = "H100", .gpu_mem_bytes = INT64_C(80) << 30};
        sl_cluster_add_node(r->cl, &ns, NULL, NULL, 0);
    }
    sl_sched_config_t cfg;
    sl_sched_config_init(&cfg);
    cfg.queue = "fifo";
    cfg.placement = "bestfit";
    cfg.seed = seed;
    char err[256];
    sl_sched_create(&cfg, r->cl, &r->sched, err, sizeof err);
    sl_tenant_spec_t ts = {.name = "train", .weight = 1};
    sl_sched_add_tenant(r->sched, &ts);
    double T = o->days * 86400, t = 0, kept = 0;
    double lam = o->rate_per_gpu_hour * o->gpus / 3600.0; /* per second */
    while (t < T) {
        maintain(r, t);
        if (!start(r, t)) { /* not enough healthy GPUs: wait for a repair */
            double next = T;
            for (size_t k = 0; k < r->nbad; k++)
                if (r->bad[k].until > t && r->bad[k].until < next) next = r->bad[k].until;
            for (size_t k = 0; k < r->nbad; k++)
                if (pol == P_NHC && !r->bad[k].drained && r->bad[k].drain_at > t && r->bad[k].drain_at < next)
                    next = r->bad[k].drain_at;
            t = next;
            continue;
        }
        r->restarts++;
        double seg = t;
        /* A job placed on a GPU that is still bad fails as it starts. */
        double tf = on_bad(r, t) ? t + o->restart_s * 0.5 : t + expo(&r->rng, 1.0 / lam);
        if (tf >= T) {
            kept += fmax(0, T - seg - o->restart_s);
            break;
        }
        double trained = fmax(0, tf - seg - o->restart_s);
        kept += floor(trained / o->ckpt_s) * o->ckpt_s;
        bool fresh = !on_bad(r, t);
        const sl_job_t *j = sl_sched_job(r->sched, r->job);
        int32_t ti = (int32_t)sl_rng_below(&r->rng, (uint64_t)sl_job_ntasks_placed(j));
        const sl_place_t *p = sl_job_place(j, ti);
        uint32_t node = p->node;
        int gpu = 0;
        for (int g = 0, k = (int)sl_rng_below(&r->rng, GPN); g < GPN; g++)
            if ((p->gpu_mask >> g) & 1u && k-- == 0) gpu = g;
        r->faults++;
        bool persist = fresh ? sl_rng_unit(&r->rng) < o->persist : true;
        if (fresh && r->nbad < MAX_BAD) {
            double until = persist ? tf + o->repair_s : (pol == P_SLUICE ? tf + o->clear_after_s : tf);
            r->bad[r->nbad++] = (bad_t){node, gpu, persist ? until : (pol == P_SLUICE ? until : 0),
                                        tf + sl_rng_unit(&r->rng) * o->nhc_interval_s, false};
        }
        if (pol == P_SLUICE) {
            double td = tf + o->detect_s;
            sl_cluster_fence_gpu(r->cl, node, gpu, true);
            sl_cycle_ops_t ops = {NULL, noop_pre, NULL};
            sl_sched_evict_gpus(r->sched, node, 1u << gpu, us(td), &ops, NULL);
            sl_sched_stop_done(r->sched, r->job, us(td));
            t = td;
        } else {
            double tc = tf + o->crash_s;
            sl_sched_finish(r->sched, r->job, us(tc));
            t = pol == P_NHC ? tc : tc + expo(&r->rng, o->human_s);
        }
    }
    *faults += r->faults;
    *restarts += r->restarts;
    sl_sched_destroy(r->sched);
    sl_cluster_destroy(r->cl);
    free(r);
    return kept;
}

void sim_fail_opts_init(sim_fail_opts_t *o) {
    *o = (sim_fail_opts_t){.gpus = 1024, .spare_nodes = 8, .days = 54,
                           .rate_per_gpu_hour = 419.0 / (16384.0 * 54 * 24), .persist = 0.47,
                           .ckpt_s = 1800, .restart_s = 600, .detect_s = 3, .crash_s = 600,
                           .nhc_interval_s = 300, .human_s = 3600, .repair_s = 86400,
                           .clear_after_s = 300, .seed = 1, .nseeds = 20};
}

int sim_failures_eval(const sim_fail_opts_t *o, sim_fail_result_t res[SIM_FAIL_NPOLICIES]) {
    if (o->gpus < GPN || o->gpus % GPN || o->gpus / GPN > SL_MAX_TASKS || o->days <= 0 ||
        o->rate_per_gpu_hour < 0 || o->ckpt_s <= 0 || o->nseeds < 1)
        return -1;
    for (int p = 0; p < P_N; p++) {
        double kept = 0;
        int64_t faults = 0, restarts = 0;
        for (int s = 0; s < o->nseeds; s++)
            kept += run_one(o, (policy_t)p, o->seed + (uint64_t)s, &faults, &restarts);
        res[p] = (sim_fail_result_t){.policy = pname[p],
                                     .effective = kept / (o->nseeds * o->days * 86400),
                                     .faults = (double)faults / o->nseeds,
                                     .starts = (double)restarts / o->nseeds};
    }
    return 0;
}

int sim_failures_run(const sim_fail_opts_t *o, FILE *out) {
    sim_fail_result_t res[SIM_FAIL_NPOLICIES];
    if (sim_failures_eval(o, res) < 0) {
        fprintf(stderr, "sluice-sim failures: --gpus must be a multiple of 8 (at most %d nodes), "
                        "--days, --checkpoint and --seeds more than 0\n", SL_MAX_TASKS);
        return 2;
    }
    fprintf(out, "| policy | faults per GPU-hour | interruptions / run | starts / run | "
                 "effective training time |\n|---|---|---|---|---|\n");
    for (int p = 0; p < P_N; p++)
        fprintf(out, "| %s | %.3g | %.1f | %.1f | %.1f%% |\n", res[p].policy, o->rate_per_gpu_hour,
                res[p].faults, res[p].starts, 100 * res[p].effective);
    return 0;
}
