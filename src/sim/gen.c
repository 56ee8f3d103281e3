/*
 * gen.c - seeded workload generators for the seed article's scenarios,
 * written in Sluice's jobs CSV (or nodes CSV for "cluster").
 *
 *   sweep     a hyper-parameter search: many short single-task trials, each
 *             asking for a share of one GPU and the GPU memory it needs
 *             (8..48Gi, uniform over 8 sizes); the share is that memory as a
 *             fraction of an 80Gi GPU rounded up to 0.05. Durations are
 *             exponential (mean 20 min, 1 min..4 h). Tenants hpo-a..hpo-d.
 *   megatron  Megatron-style training: gangs of 8 tasks x 4 whole GPUs,
 *             exponential durations (mean 8 h, at least 30 min). Tenants
 *             llm-a, llm-b.
 *   mix       70% sweep trials, 20% fine-tuning jobs (one task of 1, 2, 4
 *             or 8 GPUs, mean 2 h, tenant ft), 10% Megatron gangs.
 *   cluster   a nodes CSV of identical GPU nodes; with --blocks B --racks R
 *             a topology column puts them in B blocks of R racks, node i
 *             in rack floor(i * B * R / nodes) ("b0/r0", "b0/r1", ... with
 *             racks numbered across the cluster), so racks differ in size
 *             by at most one node.
 *
 * With --topology-required LEVEL (jobs) every row gets a topology_required
 * column of that level (a one-task job meets any level).
 *
 * With --array TEXT (sweep only) each row is a job array of that Slurm
 * text ("0-99%8"): one search whose trials share the row's GPU share and
 * duration, as a user's `sbatch --array` sweep of one model does.
 *
 * Arrivals are a Poisson process (exponential gaps with the given mean).
 * Each job's time_limit is what a user would write: its duration with 50%
 * (sweep, fine-tune) or 25% (Megatron) headroom, rounded up to 10 minutes.
 * Everything comes from one sl_rng_t seeded with --seed: the same seed gives
 * the same file.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "quantity.h"
#include "sim.h"

void sim_gen_opts_init(sim_gen_opts_t *o) {
    memset(o, 0, sizeof *o);
    o->kind = "sweep";
    o->seed = 42;
    o->jobs = 1000;
    o->nodes = 16;
    o->gpus = 8;
    o->gpu_model = "A100";
    o->gpu_memory = "80Gi";
    o->cpu = "128";
    o->memory = "1Ti";
}

static double expo(sl_rng_t *r, double mean) {
    return -mean * log(1.0 - sl_rng_unit(r));
}

static double clampd(double x, double lo, double hi) {
    return x < lo ? lo : x > hi ? hi : x;
}

static double limit_for(double dur, double headroom) {
    return ceil(dur * headroom / 600.0) * 600.0;
}

static void row(FILE *f, int id, const char *tenant, double submit, double dur, int tasks,
                const char *cpu, const char *mem, int gpus, const char *share, const char *gmem,
                double limit) {
    fprintf(f, "j%d,%s,%.3f,%.0f,%d,%s,%s,%d,%s,,,0,%.0f,%s", id, tenant, submit, dur, tasks,
            cpu, mem, gpus, share, limit, gmem); /* sim_gen ends the line */
}

static void gen_sweep(sl_rng_t *r, FILE *f, int id, double submit) {
    static const char *const tenants[] = {"hpo-a", "hpo-b", "hpo-c", "hpo-d"};
    static const int mem_gi[] = {8, 12, 16, 20, 24, 32, 40, 48};
    int m = mem_gi[sl_rng_below(r, 8)];
    int twentieths = (int)ceil((double)m / 80.0 * 20.0 - 1e-9);
    char share[16], gmem[16];
    snprintf(share, sizeof share, "%.2f", twentieths / 20.0);
    snprintf(gmem, sizeof gmem, "%dGi", m);
    double dur = round(clampd(expo(r, 1200), 60, 14400));
    row(f, id, tenants[sl_rng_below(r, 4)], submit, dur, 1, "4", "16Gi", 0, share, gmem,
        limit_for(dur, 1.5));
}

static void gen_megatron(sl_rng_t *r, FILE *f, int id, double submit) {
    static const char *const tenants[] = {"llm-a", "llm-b"};
    double dur = round(fmax(expo(r, 8 * 3600.0), 1800));
    row(f, id, tenants[sl_rng_below(r, 2)], submit, dur, 8, "48", "400Gi", 4, "", "",
        limit_for(dur, 1.25));
}

static void gen_finetune(sl_rng_t *r, FILE *f, int id, double submit) {
    static const int gpus[] = {1, 2, 4, 8};
    int g = gpus[sl_rng_below(r, 4)];
    char cpu[16], mem[16];
    snprintf(cpu, sizeof cpu, "%d", 8 * g);
    snprintf(mem, sizeof mem, "%dGi", 64 * g);
    double dur = round(clampd(expo(r, 7200), 300, 48 * 3600.0));
    row(f, id, "ft", submit, dur, 1, cpu, mem, g, "", "", limit_for(dur, 1.5));
}

int sim_gen(const sim_gen_opts_t *o, FILE *f, char *err, size_t errlen) {
    sl_rng_t r;
    sl_rng_seed(&r, o->seed);
    if (strcmp(o->kind, "cluster") == 0) {
        int64_t v;
        char msg[256];
        if (o->nodes < 1 || o->nodes > 100000 || o->gpus < 0 || o->gpus > SL_MAX_GPUS_PER_NODE) {
            snprintf(err, errlen, "--nodes must be 1..100000 and --gpus 0..16");
            return SL_EINVAL;
        }
        if (sl_qty_parse(o->cpu, SL_QTY_CPU, &v, msg, sizeof msg) < 0 ||
            sl_qty_parse(o->memory, SL_QTY_MEM, &v, msg, sizeof msg) < 0 ||
            sl_qty_parse(o->gpu_memory, SL_QTY_MEM, &v, msg, sizeof msg) < 0) {
            snprintf(err, errlen, "%s", msg);
            return SL_EINVAL;
        }
        int64_t nracks = (int64_t)(o->racks > 0 ? o->racks : 0) * (o->blocks > 0 ? o->blocks : 1);
        if (o->racks < 0 || o->blocks < 0 || nracks > o->nodes) {
            snprintf(err, errlen, "--blocks x --racks must be at most --nodes");
            return SL_EINVAL;
        }
        fprintf(f, "name,cpu,memory,gpus,gpu_model,gpu_memory,pool%s\n", nracks ? ",topology" : "");
        for (int i = 0; i < o->nodes; i++) {
            fprintf(f, "node-%04d,%s,%s,%d,%s,%s,", i, o->cpu, o->memory, o->gpus,
                    o->gpus ? o->gpu_model : "", o->gpus ? o->gpu_memory : "");
            if (nracks) {
                int64_t rack = (int64_t)i * nracks / o->nodes;
                fprintf(f, ",b%" PRId64 "/r%" PRId64, rack / o->racks, rack);
            }
            fputc('\n', f);
        }
        return 0;
    }
    int kind = strcmp(o->kind, "sweep") == 0 ? 0 : strcmp(o->kind, "megatron") == 0 ? 1
             : strcmp(o->kind, "mix") == 0   ? 2 : -1;
    if (kind < 0) {
        snprintf(err, errlen, "unknown workload \"%s\" (known: sweep, megatron, mix, cluster)", o->kind);
        return SL_EINVAL;
    }
    if (o->jobs < 1 || o->jobs > 10000000) {
        snprintf(err, errlen, "--jobs must be 1..10000000");
        return SL_EINVAL;
    }
    double gap = o->interarrival_s > 0 ? o->interarrival_s : kind == 0 ? 20 : kind == 1 ? 14400 : 1800;
    if (o->array != NULL && kind != 0) {
        snprintf(err, errlen, "--array goes with the sweep workload only");
        return SL_EINVAL;
    }
    int lv = 0;
    if (o->topology_required &&
        (sl_topo_level_parse(o->topology_required, &lv) < 0 || lv == SL_TOPO_ANY)) {
        snprintf(err, errlen, "--topology-required: \"%s\" is not host, rack or block",
                 o->topology_required);
        return SL_EINVAL;
    }
    fprintf(f, "id,tenant,submit,duration,tasks,cpu,memory,gpus,gpu_share,gpu_models,pool,"
               "priority,time_limit,gpu_memory%s%s\n", o->array ? ",array" : "",
            o->topology_required ? ",topology_required" : "");
    double t = 0;
    for (int i = 1; i <= o->jobs; i++) {
        if (i > 1) t += expo(&r, gap);
        if (kind == 0) {
            gen_sweep(&r, f, i, t);
        } else if (kind == 1) {
            gen_megatron(&r, f, i, t);
        } else {
            double u = sl_rng_unit(&r);
            if (u < 0.7) gen_sweep(&r, f, i, t);
            else if (u < 0.9) gen_finetune(&r, f, i, t);
            else gen_megatron(&r, f, i, t);
        }
        /* A sweep as an array: the row is one search whose trials share
         * its shape (docs/sim.md). */
        if (o->array) fprintf(f, ",%s", o->array);
        fprintf(f, o->topology_required ? ",%s\n" : "\n", sl_topo_level_name(lv));
    }
    return 0;
}
