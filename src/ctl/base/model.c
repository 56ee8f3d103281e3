/*
 * model.c - state names of jobs and tasks (one table each, looked up both
 * ways) and the life of a job record in memory.
 */
#include <string.h>

#include "base/model.h"

static const char *const job_states[CTL_JOB_NSTATES] = {"pending", "running", "succeeded", "failed",
                                                        "cancelled"};
static const char *const task_states[CTL_TASK_NSTATES] = {"launching", "running", "exited",
                                                          "failed", "lost"};

/* Index of s in names[0..n-1], or -1. */
static int name_index(const char *const *names, int n, const char *s) {
    for (int i = 0; s && i < n; i++)
        if (strcmp(s, names[i]) == 0) return i;
    return -1;
}

const char *ctl_job_state_name(ctl_job_state_t st) {
    return (unsigned)st < CTL_JOB_NSTATES ? job_states[st] : "?";
}

int ctl_job_state_parse(const char *s, ctl_job_state_t *out) {
    int i = name_index(job_states, CTL_JOB_NSTATES, s);
    if (i < 0) return -1;
    *out = (ctl_job_state_t)i;
    return 0;
}

const char *ctl_task_state_name(ctl_task_state_t st) {
    return (unsigned)st < CTL_TASK_NSTATES ? task_states[st] : "?";
}

int ctl_task_state_parse(const char *s, ctl_task_state_t *out) {
    int i = name_index(task_states, CTL_TASK_NSTATES, s);
    if (i < 0) return -1;
    *out = (ctl_task_state_t)i;
    return 0;
}

bool ctl_task_is_live(const ctl_task_t *t) {
    return t->state == CTL_TASK_LAUNCHING || t->state == CTL_TASK_RUNNING;
}

ctl_job_t *ctl_job_new(void) {
    ctl_job_t *j = sl_xcalloc(1, sizeof *j);
    j->start_us = j->end_us = -1;
    return j;
}

void ctl_job_free(ctl_job_t *j) {
    if (j == NULL)
        return;
    json_decref(j->spec);
    json_decref(j->warnings);
    sl_free(j->node_incl);
    sl_free(j->node_excl);
    sl_free(j->head);
    sl_free(j->row);
    sl_free(j->tasks);
    sl_free(j->x.preempts);
    sl_free(j->x.sizes);
    sl_free(j->attempts);
    sl_free(j);
}

const char *ctl_preempt_cause_name(ctl_preempt_cause_t c) {
    static const char *const names[CTL_PREEMPT_NCAUSES] = {"priority", "reclaim", "drain", "health"};
    return c >= 0 && c < CTL_PREEMPT_NCAUSES ? names[c] : "?";
}
