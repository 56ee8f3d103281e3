/*
 * task_record.c - a task's record in WORKDIR/state.json (task_record.h).
 *
 * Written for every task at each state.json write (task.c, save_cb) and
 * read once at start-up. The monitor's start time (pstart, field 22 of
 * /proc/PID/stat) is what tells a re-adopted monitor from a process that
 * reused its pid.
 */
#include <stdlib.h>
#include <string.h>

#include "task_record.h"

void agent__task_holds(task_t *t, const char *tenant, const int32_t *gpus, size_t ngpus) {
    t->tenant = tenant ? strdup(tenant) : NULL;
    if (ngpus > 0) {
        t->gpus = malloc(ngpus * sizeof *t->gpus);
        if (!t->gpus) abort();
        memcpy(t->gpus, gpus, ngpus * sizeof *t->gpus);
        t->ngpus = ngpus;
    }
}

json_t *agent__task_record(const task_t *t) {
    json_t *o = json_pack("{s:I,s:i}", "job", (json_int_t)t->job, "task", (int)t->task);
    if (t->instance[0]) json_object_set_new(o, "instance", json_string(t->instance));
    if (t->has_attempt) json_object_set_new(o, "attempt", json_integer(t->attempt));
    if (t->foreign) json_object_set_new(o, "foreign", json_true());
    if (t->fence) json_object_set_new(o, "fence", json_true());
    if (t->fenced) json_object_set_new(o, "fenced", json_true());
    if (t->tenant) json_object_set_new(o, "tenant", json_string(t->tenant));
    if (t->ngpus > 0) {
        json_t *g = json_array();
        for (size_t i = 0; i < t->ngpus; i++) json_array_append_new(g, json_integer(t->gpus[i]));
        json_object_set_new(o, "gpus", g);
    }
    switch (t->state) {
    case TASK_RUNNING:
        json_object_set_new(o, "state", json_string("running"));
        json_object_set_new(o, "pid", json_integer(t->pid));
        json_object_set_new(o, "monitor", json_integer(t->monitor));
        json_object_set_new(o, "start_time", json_real(t->start_time));
        json_object_set_new(o, "pstart", json_integer((json_int_t)t->pstart));
        break;
    case TASK_EXITED:
        json_object_set_new(o, "state", json_string("exited"));
        if (t->oom_killed) json_object_set_new(o, "oom_killed", json_true());
        if (t->mem_peak >= 0) json_object_set_new(o, "mem_peak", json_integer(t->mem_peak));
        if (t->mem_limit > 0) json_object_set_new(o, "mem_limit", json_integer(t->mem_limit));
        json_object_set_new(o, "exit_code", json_integer(t->exit_code));
        json_object_set_new(o, "signal", json_integer(t->sig));
        json_object_set_new(o, "end_time", json_real(t->end_time));
        break;
    case TASK_FAILED:
        json_object_set_new(o, "state", json_string("failed"));
        json_object_set_new(o, "reason", json_string(t->reason ? t->reason : ""));
        json_object_set_new(o, "end_time", json_real(t->end_time));
        break;
    }
    return o;
}

void agent__task_record_read(json_t *o, task_t *t) {
    const char *inst = json_string_value(json_object_get(o, "instance"));
    if (sl_proto_instance_valid(inst)) snprintf(t->instance, sizeof t->instance, "%s", inst);
    json_t *ja = json_object_get(o, "attempt");
    t->has_attempt = json_is_integer(ja) && json_integer_value(ja) >= 0 &&
                     json_integer_value(ja) <= SL_PROTO_ATTEMPT_MAX;
    t->attempt = t->has_attempt ? (uint32_t)json_integer_value(ja) : 0;
    t->foreign = json_is_true(json_object_get(o, "foreign"));
    t->start_time = json_number_value(json_object_get(o, "start_time"));
    t->end_time = json_number_value(json_object_get(o, "end_time"));
    t->fence = json_is_true(json_object_get(o, "fence"));
    t->fenced = json_is_true(json_object_get(o, "fenced"));
    json_t *jg = json_object_get(o, "gpus");
    int32_t g[SL_PROTO_MAX_GPU_INDEX + 1];
    size_t ng = 0;
    for (size_t k = 0; k < json_array_size(jg) && ng <= SL_PROTO_MAX_GPU_INDEX; k++)
        if (json_is_integer(json_array_get(jg, k)))
            g[ng++] = (int32_t)json_integer_value(json_array_get(jg, k));
    agent__task_holds(t, json_string_value(json_object_get(o, "tenant")), g, ng);
    const char *state = json_string_value(json_object_get(o, "state"));
    if (state && strcmp(state, "running") == 0) {
        t->state = TASK_RUNNING;
        t->pid = (pid_t)json_integer_value(json_object_get(o, "pid"));
        /* A record from before monitors watched the task itself. */
        json_t *jm = json_object_get(o, "monitor");
        t->monitor = json_is_integer(jm) ? (pid_t)json_integer_value(jm) : t->pid;
        t->pstart = (unsigned long long)json_integer_value(json_object_get(o, "pstart"));
    } else if (state && strcmp(state, "exited") == 0) {
        t->state = TASK_EXITED;
        t->oom_killed = json_is_true(json_object_get(o, "oom_killed"));
        json_t *jp = json_object_get(o, "mem_peak"), *jl = json_object_get(o, "mem_limit");
        if (json_is_integer(jp)) t->mem_peak = json_integer_value(jp);
        if (json_is_integer(jl)) t->mem_limit = json_integer_value(jl);
        t->exit_code = (int)json_integer_value(json_object_get(o, "exit_code"));
        t->sig = (int)json_integer_value(json_object_get(o, "signal"));
    } else {
        t->state = TASK_FAILED;
        const char *r = json_string_value(json_object_get(o, "reason"));
        t->reason = strdup(r ? r : "");
    }
}
