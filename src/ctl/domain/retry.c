/*
 * retry.c - retries of failed jobs (retry.h).
 *
 * Jobs in back-off are listed by id in c->retrying; the sweep walks the
 * list (jobs cancelled meanwhile drop out of it there), so a back-off
 * costs nothing per scheduling cycle and the cycle never sees such a job.
 */
#include <stdio.h>
#include <string.h>

#include "domain/jobnotify.h"
#include "domain/jobtab.h"
#include "domain/retry.h"
#include "log.h"
#include "backoff.h"
#include "store/store.h"

bool ctl_retry_due(const ctl_t *c, const ctl_job_t *j) {
    (void)c;
    return j->retry_failed && j->retries_used < j->retries;
}

static void list_add(ctl_t *c, uint64_t id) {
    if (c->nretrying == c->retrying_cap) {
        c->retrying_cap = c->retrying_cap ? 2 * c->retrying_cap : 16;
        c->retrying = sl_xrealloc(c->retrying, c->retrying_cap * sizeof *c->retrying);
    }
    c->retrying[c->nretrying++] = id;
}

/* "1m20s", "20s", "0s": a back-off as a person reads it. */
static void wait_text(int64_t ms, char *buf, size_t len) {
    int64_t s = (ms + 999) / 1000;
    if (s >= 60 && s % 60)
        snprintf(buf, len, "%lldm%llds", (long long)(s / 60), (long long)(s % 60));
    else if (s >= 60)
        snprintf(buf, len, "%lldm", (long long)(s / 60));
    else
        snprintf(buf, len, "%llds", (long long)s);
}

/* The attempt j is ending now, its back-off not yet known (-1). */
static ctl_attempt_t attempt_of(const ctl_job_t *j, int64_t now) {
    ctl_attempt_t a = {.attempt = j->retries_used + 1, .start_us = j->start_us,
                       .end_us = j->end_us >= 0 ? j->end_us : now, .has_exit = j->has_exit,
                       .exit_code = j->exit_code, .retry_at_us = -1};
    snprintf(a.reason, sizeof a.reason, "%s", j->reason);
    return a;
}

void ctl_retry_failed(ctl_t *c, ctl_job_t *j) {
    j->retry_failed = true;
    if (!ctl_retry_due(c, j))
        return;
    ctl_attempt_t a = attempt_of(j, ctl_now_us());
    ctl_store_attempt_add(c->store, j->id, &a);
}

void ctl_retry_begin(ctl_t *c, ctl_job_t *j) {
    int64_t now = ctl_now_us();
    ctl_attempt_t a = attempt_of(j, now);
    j->retries_used++;
    int64_t base_ms = json_integer_value(json_object_get(j->spec, "retry_backoff")) * 1000;
    int64_t wait_ms = sl_retry_backoff_ms(base_ms, c->site.retry_backoff_max_ms, j->retries_used);
    /* Tasks lost with their node may still run until it is fenced: the
     * next attempt never starts before then (a job never runs twice at
     * once; docs/protocol.md, Fencing). */
    int64_t fence_ms = (j->requeue_after_mono_us - ctl_mono_us() + 999) / 1000;
    if (j->requeue_after_mono_us > 0 && fence_ms > wait_ms)
        wait_ms = fence_ms;
    j->requeue_after_mono_us = 0;
    a.retry_at_us = now + wait_ms * 1000;
    ctl_store_attempt_add(c->store, j->id, &a);
    if (j->attempts_loaded) {
        j->attempts = sl_xrealloc(j->attempts, (j->nattempts + 1) * sizeof *j->attempts);
        j->attempts[j->nattempts++] = a;
    }

    /* Out of the core now, so that its GPUs serve others during the wait. */
    ctl_job_leave_core(c, j, now);
    sl_free(j->tasks);
    j->tasks = NULL;
    j->ntasks = 0;
    ctl_store_tasks_delete(c->store, j->id);

    j->requeues++; /* the next run's tasks are a new attempt (fencing, docs/protocol.md) */
    c->n.requeues++;
    c->n.retries++;
    j->state = CTL_JOB_PENDING;
    j->start_us = j->end_us = -1;
    j->has_exit = false;
    j->exit_code = 0;
    j->retry_failed = false;
    j->retry_wait = true;
    j->retry_at_us = a.retry_at_us;
    char w[32];
    wait_text(wait_ms, w, sizeof w);
    snprintf(j->reason, sizeof j->reason, "RetryBackoff: attempt %d of %d in %s; attempt %d: %.150s",
             j->retries_used + 1, j->retries + 1, w, a.attempt, a.reason);
    list_add(c, j->id);
    ctl_store_job_update(c->store, j);
    sl_log(SL_LOG_INFO, "sched", "job=%llu attempt=%d failed (%s); retry %d of %d in %s",
           (unsigned long long)j->id, a.attempt, a.reason, j->retries_used, j->retries, w);
    ctl_notify_job(c, j, CTL_NOTIFY_REQUEUE, a.reason);
    ctl_loop_kick(c->loop);
}

void ctl_retry_sweep(ctl_t *c, void (*fail)(ctl_t *c, ctl_job_t *j, const char *reason)) {
    if (c->nretrying == 0)
        return;
    int64_t now = ctl_now_us();
    size_t keep = 0, ndue = 0;
    uint64_t *due = sl_xmalloc(c->nretrying * sizeof *due);
    for (size_t i = 0; i < c->nretrying; i++) {
        ctl_job_t *j = ctl_job_find(c, c->retrying[i]);
        if (j == NULL || !j->retry_wait || j->state != CTL_JOB_PENDING)
            continue; /* cancelled during its back-off */
        if (now < j->retry_at_us)
            c->retrying[keep++] = c->retrying[i];
        else
            due[ndue++] = c->retrying[i];
    }
    c->nretrying = keep;
    for (size_t i = 0; i < ndue; i++) {
        ctl_job_t *j = ctl_job_find(c, due[i]);
        char err[256];
        j->retry_wait = false;
        if (sl_sched_submit(c->sched, &j->core, err, sizeof err) < 0) {
            fail(c, j, err);
            continue;
        }
        j->in_core = true;
        j->reason[0] = '\0';
        ctl_store_job_update(c->store, j);
        c->sched_dirty = true;
        ctl_loop_kick(c->loop);
    }
    sl_free(due);
}

static int attempts_row(void *ud, uint64_t id, int32_t n, int64_t retry_at_us) {
    ctl_t *c = ud;
    ctl_job_t *j = ctl_job_find(c, id);
    if (j == NULL)
        return 0; /* failed at load (its tenant went): final */
    if (retry_at_us < 0 && j->state == CTL_JOB_FAILED) {
        /* Its last attempt had failed and its other tasks were stopping:
         * their ends (or the settle of the restore) retry it. */
        j->retries_used = n - 1;
        j->retry_failed = true;
        return 0;
    }
    j->retries_used = retry_at_us < 0 ? n - 1 : n;
    if (j->state == CTL_JOB_PENDING && !j->in_core && j->hold == CTL_HOLD_NONE &&
        !j->requeue_wait && retry_at_us > ctl_now_us()) {
        j->retry_wait = true;
        j->retry_at_us = retry_at_us;
        list_add(c, id);
    }
    return 0;
}

int ctl_retry_recover(ctl_t *c) {
    return ctl_store_attempts_active(c->store, attempts_row, c);
}

void ctl_retry_fini(ctl_t *c) {
    sl_free(c->retrying);
    c->retrying = NULL;
    c->nretrying = c->retrying_cap = 0;
}
