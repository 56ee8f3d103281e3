/*
 * eff.c - each job's efficiency from its agents' usage reports (eff.h).
 *
 * An agent's heartbeat carries, per task, its usage since that agent began
 * watching it (docs/protocol.md): cumulative, so the latest report of a
 * task replaces the one before. An agent that restarts starts counting
 * again; a report with fewer samples (or less CPU time) than the last one
 * therefore means a new count, and the last one is folded into
 * use_before first, so nothing measured is lost or counted twice.
 *
 * A job's figures over its tasks: GPU utilisation is the mean of every
 * reading of every task weighted by readings (sum of util_sum / sum of
 * samples), its peak the highest any task saw; GPU memory peak the most
 * any of its GPUs used, against the memory of each GPU; CPU seconds the
 * sum over tasks; memory peak the highest of any one task (tasks ask for
 * memory each). Nothing is guessed: a figure no task reported is unknown.
 *
 * Writes: a running job's job_eff row at most every CTL_EFF_WRITE_S (so a
 * cluster of J running jobs costs J/30 row writes a second, each joining
 * the group commit as a lazy write), at its end, and at each report that
 * arrives after its end (one per task at most: its agent stops reporting
 * once the end is acknowledged).
 */
#include <math.h>
#include <string.h>

#include "domain/eff.h"
#include "domain/jobtab.h"
#include "domain/nodes.h"

/* a then b: what two counts of one task add up to. */
static void fold(ctl_usage_t *a, const ctl_usage_t *b) {
    if (!b->known) return;
    a->known = true;
    a->samples += b->samples;
    a->util_sum += b->util_sum;
    if (b->util_peak > a->util_peak) a->util_peak = b->util_peak;
    if (b->has_gpu_mem) {
        if (!a->has_gpu_mem || b->gpu_mem_peak > a->gpu_mem_peak) a->gpu_mem_peak = b->gpu_mem_peak;
        if (!a->has_gpu_mem || b->gpu_mem_total > a->gpu_mem_total) a->gpu_mem_total = b->gpu_mem_total;
        a->has_gpu_mem = true;
    }
    if (b->has_cpu) {
        a->cpu_seconds += b->cpu_seconds;
        a->has_cpu = true;
    }
    if (b->has_mem) {
        if (!a->has_mem || b->mem_peak > a->mem_peak) a->mem_peak = b->mem_peak;
        a->has_mem = true;
    }
    a->no_nvml = a->no_nvml || b->no_nvml;
}

static void write_row(ctl_t *c, ctl_job_t *j) {
    ctl_eff_t e;
    if (!ctl_eff_job(j, &e)) return;
    ctl_store_eff_put(c->store, j->id, &e);
    j->eff_dirty = false;
    j->eff_written_mono_us = ctl_mono_us();
}

void ctl_eff_report(ctl_t *c, uint32_t node, const sl_proto_usage_t *u, size_t n) {
    for (size_t k = 0; k < n; k++) {
        ctl_job_t *j = ctl_job_find(c, u[k].job);
        if (!j || u[k].task < 0 || u[k].task >= j->ntasks) continue;
        ctl_task_t *t = &j->tasks[u[k].task];
        if (t->node != (int32_t)node)
            continue;
        if (u[k].has_attempt && t->attempt >= 0 && u[k].attempt != (uint32_t)t->attempt)
            continue; /* an earlier run's usage, not this one's */
        ctl_usage_t r = {.known = true, .samples = u[k].samples,
                         .util_sum = u[k].gpu_util_mean * (double)u[k].samples,
                         .util_peak = u[k].gpu_util_peak, .has_gpu_mem = u[k].gpu_mem_peak >= 0,
                         .gpu_mem_peak = u[k].gpu_mem_peak, .gpu_mem_total = u[k].gpu_mem_total,
                         .has_cpu = u[k].cpu_seconds >= 0, .cpu_seconds = u[k].cpu_seconds,
                         .has_mem = u[k].mem_peak >= 0, .mem_peak = u[k].mem_peak,
                         .no_nvml = u[k].no_nvml};
        if (t->use.known && (r.samples < t->use.samples ||
                             (r.has_cpu && t->use.has_cpu && r.cpu_seconds < t->use.cpu_seconds)))
            fold(&t->use_before, &t->use); /* its agent restarted: a new count */
        if (r.samples > 0 && t->use.known && r.samples > t->use.samples) {
            t->util_now = (r.util_sum - t->use.util_sum) / (double)(r.samples - t->use.samples);
            t->has_util_now = true;
        } else if (r.samples > 0 && (!t->use.known || r.samples < t->use.samples)) {
            t->util_now = r.util_sum / (double)r.samples; /* a first count */
            t->has_util_now = true;
        } /* the same count again: what it said stands */
        t->use = r;
        j->eff_dirty = true;
        bool finished = j->state != CTL_JOB_PENDING && j->state != CTL_JOB_RUNNING;
        if (finished || ctl_mono_us() - j->eff_written_mono_us >= CTL_EFF_WRITE_S * INT64_C(1000000))
            write_row(c, j);
    }
}

bool ctl_eff_job(const ctl_job_t *j, ctl_eff_t *e) {
    ctl_usage_t sum = {0};
    int32_t no_nvml_node = -1;
    double cpu = 0;
    bool has_cpu = false;
    for (int32_t i = 0; i < j->ntasks; i++) {
        ctl_usage_t t = j->tasks[i].use_before;
        fold(&t, &j->tasks[i].use);
        if (!t.known) continue;
        if (t.has_cpu) {
            cpu += t.cpu_seconds;
            has_cpu = true;
        }
        t.has_cpu = false; /* summed above, not folded as one task's */
        if (t.no_nvml && no_nvml_node < 0) no_nvml_node = j->tasks[i].node;
        fold(&sum, &t);
    }
    *e = (ctl_eff_t){.samples = sum.samples,
                     .gpu_util_mean = sum.samples > 0 ? sum.util_sum / (double)sum.samples : NAN,
                     .gpu_util_peak = sum.samples > 0 ? sum.util_peak : NAN,
                     .gpu_mem_peak = sum.has_gpu_mem ? sum.gpu_mem_peak : -1,
                     .gpu_mem_total = sum.has_gpu_mem ? sum.gpu_mem_total : -1,
                     .cpu_seconds = has_cpu ? cpu : NAN,
                     .mem_peak = sum.has_mem ? sum.mem_peak : -1,
                     .no_nvml_node = no_nvml_node};
    return sum.known;
}

void ctl_eff_job_end(ctl_t *c, ctl_job_t *j) {
    write_row(c, j);
}

/* ,"k":v with fmt, or null when v is unknown (NAN). */
static void real_or_null(ctl_buf_t *b, const char *k, const char *fmt, double v) {
    ctl_buf_printf(b, ",\"%s\":", k);
    if (isnan(v))
        ctl_buf_puts(b, "null");
    else
        ctl_buf_printf(b, fmt, v);
}

/* ,"k":v, or null when v is unknown (< 0). */
static void int_or_null(ctl_buf_t *b, const char *k, int64_t v) {
    ctl_buf_printf(b, ",\"%s\":", k);
    if (v < 0)
        ctl_buf_puts(b, "null");
    else
        ctl_buf_i64(b, v);
}

void ctl_eff_write_json(ctl_t *c, ctl_buf_t *b, ctl_job_t *j) {
    ctl_eff_t e;
    bool known = ctl_eff_job(j, &e);
    bool finished = j->state != CTL_JOB_PENDING && j->state != CTL_JOB_RUNNING;
    if (!known && finished) {
        if (j->eff_db == 0) {
            int rc = ctl_store_eff_get(c->store, j->id, &j->eff_row);
            j->eff_db = rc == 1 ? 2 : 1;
        }
        if (j->eff_db == 2) {
            e = j->eff_row;
            known = true;
        }
    }
    ctl_buf_puts(b, ",\"efficiency\":");
    if (!known) {
        ctl_buf_puts(b, "null");
        return;
    }
    ctl_buf_puts(b, "{\"samples\":");
    ctl_buf_i64(b, e.samples);
    real_or_null(b, "gpu_util_mean", "%.4f", e.gpu_util_mean);
    real_or_null(b, "gpu_util_peak", "%.4f", e.gpu_util_peak);
    int_or_null(b, "gpu_mem_peak", e.gpu_mem_peak);
    int_or_null(b, "gpu_mem_total", e.gpu_mem_total);
    real_or_null(b, "cpu_seconds", "%.3f", e.cpu_seconds);
    int_or_null(b, "mem_peak", e.mem_peak);
    ctl_buf_puts(b, ",\"no_nvml_node\":");
    ctl_buf_jstr(b, e.no_nvml_node >= 0 ? ctl_node_name(c, e.no_nvml_node) : NULL);
    ctl_buf_putc(b, '}');
}

void ctl_eff_write_node_json(ctl_t *c, ctl_buf_t *b, uint32_t id) {
    const sl_node_t *nd = sl_cluster_node(c->cl, id);
    ctl_node_t *n = ctl_node_get(c, id);
    double util[SL_MAX_GPUS_PER_NODE] = {0};
    bool has[SL_MAX_GPUS_PER_NODE] = {false};
    int ng = nd && nd->ngpus <= SL_MAX_GPUS_PER_NODE ? nd->ngpus : 0;
    sl_list_t *it;
    if (n != NULL)
        SL_LIST_FOREACH(it, &n->tasks) {
            const ctl_task_t *t = SL_LIST_ENTRY(it, ctl_task_t, node_link);
            if (!t->has_util_now || t->state != CTL_TASK_RUNNING)
                continue;
            double v = t->util_now < 0 ? 0 : t->util_now > 1 ? 1 : t->util_now;
            for (int g = 0; g < ng; g++)
                if ((t->gpu_mask >> g) & 1u) { /* a shared GPU: the busiest reading */
                    if (!has[g] || v > util[g]) util[g] = v;
                    has[g] = true;
                }
        }
    ctl_buf_puts(b, ",\"gpu_util\":[");
    for (int g = 0; g < ng; g++) {
        if (g) ctl_buf_putc(b, ',');
        if (has[g])
            ctl_buf_printf(b, "%.3f", util[g]);
        else
            ctl_buf_puts(b, "null");
    }
    ctl_buf_putc(b, ']');
}
