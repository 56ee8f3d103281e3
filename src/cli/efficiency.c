/*
 * efficiency.c - the efficiency block of `sluice show` (docs/metrics-agent.md,
 * "Efficiency in sluice show"), from the job JSON's "efficiency" object and
 * its placement, in words a researcher reads at a glance:
 *
 *   efficiency:
 *     GPUs:        2 GPUs at 41% mean utilisation (peak 97%), 150 readings
 *     GPU memory:  peak 23 of 80 GiB each: consider --gpu-share 0.5
 *     CPU:         30% of 4 CPUs x 2 tasks busy (2.4 CPU-hours in 1h)
 *     memory:      peak 3.1 of 16 GiB per task (19%)
 *
 * Nothing is invented: a figure the agents did not measure is said to be
 * missing, with the reason when the controller knows it (a node without
 * NVML). CPU efficiency is CPU seconds / (CPUs per task x tasks x seconds
 * the job ran); memory is the highest any one task used against what each
 * task asked for.
 *
 * The advice (whole-GPU jobs with at least CLI_EFF_MIN_READINGS readings):
 * the smallest share s of 0.25 and 0.5 such that the peak GPU memory fits
 * in s of a GPU's memory and the mean utilisation is at most s is
 * suggested as --gpu-share s. Peak utilisation does not count against it
 * (short bursts are what sharing absorbs).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "quantity.h"

#define CLI_EFF_MIN_READINGS 10

static double num(json_t *o, const char *k) {
    json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* A quantity field of the job ("4", "500m", "16Gi"): its value in units
 * (CPUs or bytes), NAN when absent. */
static double qty(json_t *j, const char *k, sl_qty_kind_t kind) {
    json_t *v = json_object_get(j, k);
    int64_t out;
    char err[128];
    if (json_is_number(v)) return json_number_value(v);
    if (!json_is_string(v) || sl_qty_parse(json_string_value(v), kind, &out, err, sizeof err) != 0)
        return NAN;
    return kind == SL_QTY_MEM ? (double)out : (double)out / 1000.0;
}

/* Bytes in GiB (MiB under 1 GiB), to two significant figures or whole. */
static void bytes_str(double v, char *buf, size_t len) {
    double g = v / 1073741824.0;
    if (g >= 10)
        snprintf(buf, len, "%.0f GiB", g);
    else if (g >= 1)
        snprintf(buf, len, "%.1f GiB", g);
    else
        snprintf(buf, len, "%.0f MiB", v / 1048576.0);
}

/* "23 of 80 GiB": peak in the unit of the total. */
static void of_str(double peak, double total, char *buf, size_t len) {
    char t[32];
    bytes_str(total, t, sizeof t);
    const char *unit = strchr(t, ' ');
    double scale = strcmp(unit, " MiB") == 0 ? 1048576.0 : 1073741824.0;
    double p = peak / scale;
    snprintf(buf, len, p >= 10 || p == 0 ? "%.0f of %s" : "%.1f of %s", p, t);
}

static void dur_str(double s, char *buf, size_t len) {
    if (s < 120)
        snprintf(buf, len, "%.0f s", s);
    else if (s < 7200)
        snprintf(buf, len, "%.0f min", s / 60);
    else
        snprintf(buf, len, "%.1f h", s / 3600);
}

void cli_show_efficiency(json_t *j, double now) {
    double start = num(j, "start_time");
    if (isnan(start)) return; /* never started: nothing measured */
    double end = num(j, "end_time");
    double elapsed = (isnan(end) ? now : end) - start;
    if (elapsed < 0) elapsed = 0;
    const char *state = json_string_value(json_object_get(j, "state"));
    int running = state && strcmp(state, "running") == 0;
    json_t *e = json_object_get(j, "efficiency");
    if (!json_is_object(e)) e = NULL;
    json_t *pl = json_object_get(j, "placement");
    size_t ntasks = json_array_size(pl), ngpus = 0;
    for (size_t i = 0; i < ntasks; i++) ngpus += json_array_size(json_object_get(json_array_get(pl, i), "gpus"));
    double share = qty(j, "gpu_share", SL_QTY_GPU);
    printf("efficiency:\n");

    double mean = e ? num(e, "gpu_util_mean") : NAN, peak = e ? num(e, "gpu_util_peak") : NAN;
    double gpeak = e ? num(e, "gpu_mem_peak") : NAN, gtotal = e ? num(e, "gpu_mem_total") : NAN;
    double readings = e ? num(e, "samples") : NAN;
    if (ngpus > 0) {
        char what[64];
        if (!isnan(share) && share > 0 && share < 1)
            snprintf(what, sizeof what, "a %g share of %zu GPU%s", share, ngpus, ngpus == 1 ? "" : "s");
        else
            snprintf(what, sizeof what, "%zu GPU%s", ngpus, ngpus == 1 ? "" : "s");
        const char *nonvml = e ? json_string_value(json_object_get(e, "no_nvml_node")) : NULL;
        int shared = !isnan(share) && share > 0 && share < 1;
        if (!isnan(mean))
            printf("  %-12s %s at %.0f%% mean utilisation (peak %.0f%%%s), %.0f readings\n", "GPUs:",
                   what, mean * 100, peak * 100, shared ? ", the whole GPU's" : "", readings);
        else if (nonvml)
            printf("  %-12s %s: no GPU utilisation data (no NVML on node %s)\n", "GPUs:", what, nonvml);
        else
            printf("  %-12s %s: no GPU utilisation data%s\n", "GPUs:", what,
                   running ? " yet" : " (none reported)");
        if (!isnan(gpeak) && !isnan(gtotal) && gtotal > 0) {
            char of[64], advice[64] = "";
            of_str(gpeak, gtotal, of, sizeof of);
            int whole = isnan(share) || share <= 0 || share >= 1;
            if (whole && !isnan(mean) && readings >= CLI_EFF_MIN_READINGS) {
                static const double shares[] = {0.25, 0.5};
                for (size_t i = 0; i < 2 && !advice[0]; i++)
                    if (gpeak <= shares[i] * gtotal && mean <= shares[i])
                        snprintf(advice, sizeof advice, ": consider --gpu-share %g", shares[i]);
            }
            printf("  %-12s peak %s each%s\n", "GPU memory:", of, advice);
        }
    }

    double cpu_s = e ? num(e, "cpu_seconds") : NAN, mem_peak = e ? num(e, "mem_peak") : NAN;
    double cpus = qty(j, "cpus", SL_QTY_CPU), mem = qty(j, "memory", SL_QTY_MEM);
    if (isnan(cpu_s) && isnan(mem_peak)) {
        printf("  %-12s not measured (agents measure them where they enforce cgroups)\n",
               "CPU, memory:");
        return;
    }
    if (!isnan(cpu_s)) {
        char d[32];
        dur_str(elapsed, d, sizeof d);
        double avail = cpus * (double)ntasks * elapsed;
        if (!isnan(cpus) && cpus > 0 && avail > 0)
            printf("  %-12s %.0f%% of %g CPU%s x %zu task%s busy (%.0f CPU seconds in %s)\n", "CPU:",
                   100 * cpu_s / avail, cpus, cpus == 1 ? "" : "s", ntasks, ntasks == 1 ? "" : "s",
                   cpu_s, d);
        else
            printf("  %-12s %.0f CPU seconds in %s\n", "CPU:", cpu_s, d);
    }
    if (!isnan(mem_peak)) {
        char of[64];
        if (!isnan(mem) && mem > 0) {
            of_str(mem_peak, mem, of, sizeof of);
            printf("  %-12s peak %s per task (%.0f%%)\n", "memory:", of, 100 * mem_peak / mem);
        } else {
            bytes_str(mem_peak, of, sizeof of);
            printf("  %-12s peak %s per task\n", "memory:", of);
        }
    }
}
