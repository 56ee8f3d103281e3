/*
 * api.c - JSON views of jobs and nodes for the HTTP API (docs/api.md).
 *
 * A job's immutable part (id, normalised spec, submit time) is formatted
 * once at submission into j->head; a view appends only the parts that
 * change (state, times, reason, placement), so listing 10,000 jobs is
 * mostly memcpy.
 */
#include <stdio.h>
#include <string.h>

#include "ctl.h"

static void gpu_list(ctl_buf_t *b, uint32_t mask) {
    ctl_buf_putc(b, '[');
    bool first = true;
    for (int g = 0; g < SL_MAX_GPUS_PER_NODE; g++) {
        if (mask & (1u << g)) {
            if (!first)
                ctl_buf_putc(b, ',');
            ctl_buf_i64(b, g);
            first = false;
        }
    }
    ctl_buf_putc(b, ']');
}

void ctl_job_write(ctl_t *c, ctl_buf_t *b, const ctl_job_t *j) {
    ctl_job_write_core(c, b, j, NULL);
}

void ctl_job_write_core(ctl_t *c, ctl_buf_t *b, const ctl_job_t *j, const sl_job_t *cj) {
    ctl_buf_add(b, j->head, j->head_len);
    ctl_buf_puts(b, ",\"state\":\"");
    ctl_buf_puts(b, ctl_job_state_name(j->state));
    ctl_buf_puts(b, "\",\"start_time\":");
    ctl_buf_time(b, j->start_us);
    ctl_buf_puts(b, ",\"end_time\":");
    ctl_buf_time(b, j->end_us);
    ctl_buf_puts(b, ",\"reason\":");
    const char *reason = j->reason;
    char both[512];
    if (j->state == CTL_JOB_PENDING && !j->requeue_wait && j->in_core) {
        /* Why it waits now (from the core), and why it was requeued if it was. */
        if (cj == NULL)
            cj = sl_sched_job(c->sched, j->id);
        const char *r = cj ? sl_job_reason(cj) : NULL;
        if (r && r[0] && j->reason[0]) {
            snprintf(both, sizeof both, "%s (%s)", r, j->reason);
            reason = both;
        } else if (r && r[0]) {
            reason = r;
        }
    }
    ctl_buf_jstr(b, reason);
    ctl_buf_puts(b, ",\"placement\":[");
    for (int32_t i = 0; i < j->ntasks; i++) {
        const ctl_task_t *t = &j->tasks[i];
        const sl_node_t *nd = t->node >= 0 ? sl_cluster_node(c->cl, (uint32_t)t->node) : NULL;
        if (i)
            ctl_buf_putc(b, ',');
        ctl_buf_puts(b, "{\"task\":");
        ctl_buf_i64(b, i);
        ctl_buf_puts(b, ",\"node\":");
        ctl_buf_jstr(b, nd ? nd->name : NULL);
        ctl_buf_puts(b, ",\"gpus\":");
        gpu_list(b, t->gpu_mask);
        if (t->gpu_mask && t->gpu_milli < SL_GPU_MILLI) {
            ctl_buf_puts(b, ",\"gpu_milli\":");
            ctl_buf_i64(b, t->gpu_milli);
        }
        ctl_buf_puts(b, ",\"state\":\"");
        ctl_buf_puts(b, ctl_task_state_name(t->state));
        ctl_buf_puts(b, "\",\"pid\":");
        if (t->pid > 0)
            ctl_buf_i64(b, t->pid);
        else
            ctl_buf_puts(b, "null");
        ctl_buf_puts(b, ",\"exit_code\":");
        if (t->has_exit)
            ctl_buf_i64(b, t->exit_code);
        else
            ctl_buf_puts(b, "null");
        ctl_buf_puts(b, ",\"signal\":");
        if (t->has_exit && t->signal)
            ctl_buf_i64(b, t->signal);
        else
            ctl_buf_puts(b, "null");
        ctl_buf_puts(b, ",\"start_time\":");
        ctl_buf_time(b, t->start_us);
        ctl_buf_puts(b, ",\"end_time\":");
        ctl_buf_time(b, t->end_us);
        ctl_buf_putc(b, '}');
    }
    ctl_buf_puts(b, "],\"exit_code\":");
    if (j->has_exit && j->state != CTL_JOB_PENDING && j->state != CTL_JOB_RUNNING)
        ctl_buf_i64(b, j->exit_code);
    else
        ctl_buf_puts(b, "null");
    ctl_buf_puts(b, ",\"requeues\":");
    ctl_buf_i64(b, j->requeues);
    ctl_buf_putc(b, '}');
}

void ctl_node_write(ctl_t *c, ctl_buf_t *b, uint32_t id) {
    const sl_node_t *nd = sl_cluster_node(c->cl, id);
    ctl_node_t *n = ctl_node_get(c, id);
    char q[64];
    ctl_buf_puts(b, "{\"name\":");
    ctl_buf_jstr(b, nd->name);
    ctl_buf_puts(b, ",\"state\":\"");
    ctl_buf_puts(b, sl_node_state_name(nd->state));
    ctl_buf_puts(b, "\",\"pool\":");
    ctl_buf_jstr(b, sl_cluster_pool_name(c->cl, nd->pool));
    ctl_buf_puts(b, ",\"labels\":");
    ctl_buf_jstr(b, nd->labels ? nd->labels : "");
    ctl_buf_puts(b, ",\"cpus\":");
    sl_qty_format(nd->cpu_total, SL_QTY_CPU, q, sizeof q);
    ctl_buf_jstr(b, q);
    ctl_buf_puts(b, ",\"memory\":");
    sl_qty_format(nd->mem_total, SL_QTY_MEM, q, sizeof q);
    ctl_buf_jstr(b, q);
    ctl_buf_puts(b, ",\"gpus\":");
    ctl_buf_i64(b, nd->ngpus);
    ctl_buf_puts(b, ",\"gpu_model\":");
    ctl_buf_jstr(b, nd->model >= 0 ? sl_cluster_model_name(c->cl, nd->model) : NULL);
    ctl_buf_puts(b, ",\"gpu_memory\":");
    if (nd->ngpus > 0) {
        sl_qty_format(nd->gpu_mem_total, SL_QTY_MEM, q, sizeof q);
        ctl_buf_jstr(b, q);
    } else {
        ctl_buf_puts(b, "null");
    }
    ctl_buf_puts(b, ",\"free\":{\"cpus\":");
    sl_qty_format(nd->cpu_free, SL_QTY_CPU, q, sizeof q);
    ctl_buf_jstr(b, q);
    ctl_buf_puts(b, ",\"memory\":");
    sl_qty_format(nd->mem_free, SL_QTY_MEM, q, sizeof q);
    ctl_buf_jstr(b, q);
    int whole = 0;
    for (int g = 0; g < nd->ngpus; g++)
        whole += nd->gpu_free[g] == SL_GPU_MILLI;
    ctl_buf_puts(b, ",\"gpus\":");
    ctl_buf_i64(b, whole);
    ctl_buf_puts(b, ",\"gpu_milli\":[");
    for (int g = 0; g < nd->ngpus; g++) {
        if (g)
            ctl_buf_putc(b, ',');
        ctl_buf_i64(b, nd->gpu_free[g]);
    }
    ctl_buf_puts(b, "]},\"last_seen\":");
    ctl_buf_time(b, n ? n->last_seen_us : -1);
    ctl_buf_puts(b, ",\"tasks\":");
    ctl_buf_i64(b, n ? n->live_tasks : 0);
    ctl_buf_puts(b, ",\"connected\":");
    ctl_buf_puts(b, n && n->conn ? "true" : "false");
    ctl_buf_puts(b, ",\"addr\":");
    ctl_buf_jstr(b, n ? n->addr : "");
    ctl_buf_putc(b, '}');
}
