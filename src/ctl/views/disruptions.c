/*
 * disruptions.c - drains, preemptions and elastic sizes in the API's
 * objects, and the drain, resume and size requests (disruptions.h).
 *
 * A job's preemptions and size changes are rows of their own tables
 * (store/store.h); the job object shows them, so a job's owner sees who took
 * its GPUs, why and how much work it lost. They are read once per job in
 * memory (ctl_job_t.x), and only for a job that was ever requeued or is
 * elastic, so listing many jobs costs no extra query for the others.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "views/disruptions.h"
#include "views/fielderr.h"
#include "domain/health.h"
#include "store/store.h"

const char *ctl_node_state_view(ctl_t *c, uint32_t id) {
    const sl_node_t *nd = sl_cluster_node(c->cl, id);
    ctl_node_t *n = ctl_node_get(c, id);
    if (nd == NULL)
        return "?";
    if (n != NULL && n->draining && n->live_tasks == 0 && nd->state != SL_NODE_DOWN)
        return "drained";
    if (n != NULL && !n->draining && !n->connected && nd->state == SL_NODE_DRAINING)
        return "disconnected"; /* no new placements until its agent is back */
    return sl_node_state_name(nd->state);
}

static void time_or_null(ctl_buf_t *b, const char *key, int64_t us) {
    ctl_buf_printf(b, ",\"%s\":", key);
    if (us >= 0)
        ctl_buf_time(b, us);
    else
        ctl_buf_puts(b, "null");
}

void ctl_drain_write_json(ctl_t *c, ctl_buf_t *b, const ctl_node_t *n) {
    ctl_buf_puts(b, ",\"drain\":");
    if (n == NULL || !n->draining) {
        ctl_buf_puts(b, "null");
        return;
    }
    ctl_buf_puts(b, "{\"reason\":");
    ctl_buf_jstr(b, n->drain_reason);
    time_or_null(b, "since", n->drain_since_us);
    time_or_null(b, "deadline", n->drain_deadline_us);
    time_or_null(b, "drained_at", n->live_tasks == 0 ? (n->drained_us >= 0 ? n->drained_us
                                                                           : ctl_now_us())
                                                      : -1);
    ctl_buf_putc(b, '}');
}

static bool elastic(const ctl_job_t *j) {
    return j->core.min_tasks > 0 && j->core.min_tasks < j->core.ntasks;
}

/* j's history, read once (a failed read is fatal once sluiced runs). */
static void load_x(ctl_t *c, ctl_job_t *j) {
    if (j->x.loaded || (j->requeues == 0 && !elastic(j)))
        return;
    ctl_jobx_t x = {0};
    if (ctl_store_jobx_read(c->store, j->id, &x) == 0) {
        sl_free(j->x.preempts);
        sl_free(j->x.sizes);
        j->x = x;
    }
}

/* The tasks running now (launching included): an elastic job's size. */
static int32_t size_now(const ctl_job_t *j) {
    return j->state == CTL_JOB_RUNNING ? j->live : 0;
}

/* `,"attempt":K,"attempts":[...]` for a job with retries: the attempt
 * running, waiting or last run (1 first), and each failed one before it,
 * read from the store on first view. */
static void attempts_write(ctl_t *c, ctl_buf_t *b, ctl_job_t *j) {
    if (j->retries <= 0)
        return;
    if (!j->attempts_loaded) {
        ctl_attempt_t *v;
        size_t n;
        if (ctl_store_attempts_read(c->store, j->id, &v, &n) == 0) {
            /* An attempt whose back-off is not known yet is the one now
             * ending (retry.h), not a past one. */
            while (n > 0 && v[n - 1].retry_at_us < 0)
                n--;
            sl_free(j->attempts);
            j->attempts = v;
            j->nattempts = n;
            j->attempts_loaded = true;
        }
    }
    ctl_buf_puts(b, ",\"attempt\":");
    ctl_buf_i64(b, (int64_t)j->nattempts + 1);
    ctl_buf_puts(b, ",\"attempts\":[");
    for (size_t i = 0; i < j->nattempts; i++) {
        const ctl_attempt_t *a = &j->attempts[i];
        ctl_buf_puts(b, i ? ",{\"attempt\":" : "{\"attempt\":");
        ctl_buf_i64(b, a->attempt);
        ctl_buf_puts(b, ",\"start_time\":");
        if (a->start_us >= 0)
            ctl_buf_time(b, a->start_us);
        else
            ctl_buf_puts(b, "null");
        ctl_buf_puts(b, ",\"end_time\":");
        if (a->end_us >= 0)
            ctl_buf_time(b, a->end_us);
        else
            ctl_buf_puts(b, "null");
        ctl_buf_puts(b, ",\"exit_code\":");
        if (a->has_exit)
            ctl_buf_i64(b, a->exit_code);
        else
            ctl_buf_puts(b, "null");
        ctl_buf_puts(b, ",\"reason\":");
        ctl_buf_jstr(b, a->reason);
        ctl_buf_puts(b, ",\"retry_at\":");
        ctl_buf_time(b, a->retry_at_us);
        ctl_buf_putc(b, '}');
    }
    ctl_buf_putc(b, ']');
    if (j->retry_wait) {
        ctl_buf_puts(b, ",\"retry_at\":");
        ctl_buf_time(b, j->retry_at_us);
    }
}

void ctl_jobx_write_json(ctl_t *c, ctl_buf_t *b, ctl_job_t *j) {
    attempts_write(c, b, j);
    load_x(c, j);
    ctl_buf_puts(b, ",\"preemptions\":[");
    for (size_t i = 0; i < j->x.npreempts; i++) {
        const ctl_preempt_t *p = &j->x.preempts[i];
        ctl_buf_puts(b, i ? ",{\"time\":" : "{\"time\":");
        ctl_buf_time(b, p->at_us);
        ctl_buf_puts(b, ",\"kind\":");
        ctl_buf_jstr(b, p->kind);
        ctl_buf_puts(b, ",\"cause\":");
        ctl_buf_jstr(b, p->cause);
        ctl_buf_puts(b, ",\"by_job\":");
        if (p->by_job)
            ctl_buf_u64(b, p->by_job);
        else
            ctl_buf_puts(b, "null");
        ctl_buf_puts(b, ",\"by_tenant\":");
        ctl_buf_jstr(b, p->by_tenant[0] ? p->by_tenant : NULL);
        ctl_buf_puts(b, ",\"reason\":");
        ctl_buf_jstr(b, p->reason);
        ctl_buf_puts(b, ",\"tasks\":");
        ctl_buf_i64(b, p->tasks);
        ctl_buf_printf(b, ",\"gpu_seconds_lost\":%.1f}", isfinite(p->gpu_seconds) ? p->gpu_seconds : 0);
    }
    ctl_buf_putc(b, ']');
    if (!elastic(j))
        return;
    ctl_buf_puts(b, ",\"size\":");
    ctl_buf_i64(b, size_now(j));
    ctl_buf_puts(b, ",\"size_history\":[");
    for (size_t i = 0; i < j->x.nsizes; i++) {
        const ctl_size_change_t *z = &j->x.sizes[i];
        ctl_buf_puts(b, i ? ",{\"time\":" : "{\"time\":");
        ctl_buf_time(b, z->at_us);
        ctl_buf_puts(b, ",\"size\":");
        ctl_buf_i64(b, z->size);
        ctl_buf_puts(b, ",\"why\":");
        ctl_buf_jstr(b, z->why);
        ctl_buf_putc(b, '}');
    }
    ctl_buf_putc(b, ']');
}

/* ---- requests ---- */

/* body's "node": a string, else 400 naming the field. */
static const char *body_node(json_t *body, ctl_field_err_t *fe) {
    json_t *v = body ? json_object_get(body, "node") : NULL;
    if (!json_is_string(v) || json_string_length(v) == 0) {
        ctl_field_errf(fe, 400, "invalid_field", "node", "node: required, the name of a node");
        return NULL;
    }
    return json_string_value(v);
}

/* The node's state and drain, as the reply of drain and resume. */
static void node_reply(ctl_t *c, ctl_buf_t *out, const char *name) {
    const sl_node_t *nd = sl_cluster_find_node(c->cl, name);
    ctl_buf_puts(out, "{\"node\":");
    ctl_buf_jstr(out, name);
    ctl_buf_puts(out, ",\"state\":");
    ctl_buf_jstr(out, ctl_node_state_view(c, nd->id));
    ctl_buf_puts(out, ",\"tasks\":");
    ctl_node_t *n = ctl_node_get(c, nd->id);
    ctl_buf_i64(out, n ? n->live_tasks : 0);
    ctl_drain_write_json(c, out, n);
    ctl_buf_puts(out, "}\n");
}

int ctl_api_drain(ctl_t *c, json_t *body, ctl_buf_t *out, ctl_field_err_t *fe) {
    const char *name = body_node(body, fe);
    if (name == NULL)
        return fe->status;
    static const char *const keys[] = {"node", "deadline", "reason", NULL};
    const char *k;
    json_t *v;
    json_object_foreach(body, k, v) {
        bool ok = false;
        for (size_t i = 0; keys[i]; i++)
            ok = ok || strcmp(k, keys[i]) == 0;
        if (!ok) {
            return ctl_field_errf(fe, 400, "unknown_field", k,
                                  "%.60s: unknown field (known: node, deadline, reason)", k);
        }
    }
    int64_t deadline_us = -1;
    v = json_object_get(body, "deadline");
    if (v != NULL && !json_is_null(v)) {
        if (!json_is_number(v) || json_number_value(v) < 0 || json_number_value(v) > 1e11)
            return ctl_field_errf(fe, 400, "invalid_field", "deadline",
                                  "deadline: must be a time in seconds since the epoch, or null for none");
        deadline_us = (int64_t)(json_number_value(v) * 1e6);
    }
    v = json_object_get(body, "reason");
    if (v != NULL && !json_is_null(v) && (!json_is_string(v) || json_string_length(v) > 120))
        return ctl_field_errf(fe, 400, "invalid_field", "reason",
                              "reason: must be a string of at most 120 bytes");
    char err[200];
    int rc = ctl_node_drain(c, name, deadline_us, json_string_value(v), err, sizeof err);
    if (rc < 0)
        return ctl_field_errf(fe, 404, "not_found", "node", "%s", err);
    node_reply(c, out, name);
    return 200;
}

int ctl_api_resume(ctl_t *c, json_t *body, ctl_buf_t *out, ctl_field_err_t *fe) {
    const char *name = body_node(body, fe);
    if (name == NULL)
        return fe->status;
    char err[200];
    /* Its fenced GPUs return too; a node that was not draining but had
     * some resumes them alone. */
    int gpus = ctl_health_resume(c, name);
    int rc = ctl_node_resume(c, name, err, sizeof err);
    if (rc == SL_ESTATE && gpus > 0)
        rc = 0;
    if (rc == SL_ENOENT)
        return ctl_field_errf(fe, 404, "not_found", "node", "%s", err);
    if (rc < 0)
        return ctl_field_errf(fe, 409, "conflict", "node", "%s", err);
    node_reply(c, out, name);
    return 200;
}

int ctl_api_job_size(ctl_t *c, ctl_job_t *j, ctl_buf_t *out) {
    load_x(c, j);
    ctl_buf_puts(out, "{\"job\":");
    ctl_buf_u64(out, j->id);
    ctl_buf_puts(out, ",\"state\":\"");
    ctl_buf_puts(out, ctl_job_state_name(j->state));
    ctl_buf_puts(out, "\",\"size\":");
    ctl_buf_i64(out, size_now(j));
    ctl_buf_puts(out, ",\"min_tasks\":");
    ctl_buf_i64(out, j->core.min_tasks > 0 ? j->core.min_tasks : j->core.ntasks);
    ctl_buf_puts(out, ",\"tasks\":");
    ctl_buf_i64(out, j->core.ntasks);
    ctl_buf_puts(out, ",\"generation\":");
    ctl_buf_u64(out, (uint64_t)j->x.nsizes);
    ctl_buf_puts(out, "}\n");
    return 200;
}
