/*
 * spec.c - validation of a job submission (POST /v1/jobs) and the core's
 * view of a stored spec.
 *
 * ctl_job_from_spec checks every field of the JSON body, names the field
 * it rejects, and normalises the spec into what is stored and shown
 * (quantities re-formatted, defaults filled in); ctl_job_core_spec turns a
 * normalised spec into the core's sl_job_spec_t.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "log.h"
#include "quantity.h"

/* ---- validation of a submission ---- */

static const char *const spec_fields[] = {
    "name", "tenant", "tasks", "min_tasks", "cpus", "memory", "gpus", "gpu_share", "gpu_memory",
    "gpu_models", "pool", "priority", "time_limit", "command", "image", "env", "on_node_failure",
    NULL};

static ctl_job_t *bad(ctl_field_err_t *fe, int status, const char *code, const char *field,
                      const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static ctl_job_t *bad(ctl_field_err_t *fe, int status, const char *code, const char *field,
                      const char *fmt, ...) {
    fe->status = status;
    fe->code = code;
    snprintf(fe->field, sizeof fe->field, "%s", field ? field : "");
    char msg[280];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (field)
        snprintf(fe->message, sizeof fe->message, "%s: %s", field, msg);
    else
        snprintf(fe->message, sizeof fe->message, "%s", msg);
    return NULL;
}

static bool present(json_t *spec, const char *key, json_t **v) {
    *v = json_object_get(spec, key);
    return *v != NULL && !json_is_null(*v);
}

/* A quantity given as a string or a JSON number, parsed and re-formatted. */
static int qty_field(json_t *v, sl_qty_kind_t kind, int64_t *out, char *err, size_t errlen) {
    char text[64];
    if (json_is_string(v)) {
        snprintf(text, sizeof text, "%s", json_string_value(v));
    } else if (json_is_integer(v)) {
        snprintf(text, sizeof text, "%lld", (long long)json_integer_value(v));
    } else if (json_is_real(v)) {
        snprintf(text, sizeof text, "%.9f", json_real_value(v));
        char *e = text + strlen(text) - 1;
        while (e > text && *e == '0')
            *e-- = '\0';
        if (*e == '.')
            *e = '\0';
    } else {
        snprintf(err, errlen, "must be a quantity (a string like \"16\", \"500m\", \"128Gi\")");
        return -1;
    }
    if (sl_qty_parse(text, kind, out, err, errlen) < 0)
        return -1;
    return 0;
}

static json_t *qty_json(int64_t v, sl_qty_kind_t kind) {
    char s[64];
    sl_qty_format(v, kind, s, sizeof s);
    return json_string(s);
}

static bool name_ok(const char *s, size_t maxlen) {
    size_t n = strlen(s);
    if (n == 0 || n > maxlen)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return false;
    return true;
}

static bool env_key_ok(const char *k) {
    if (!(isalpha((unsigned char)k[0]) || k[0] == '_'))
        return false;
    for (const char *p = k; *p; p++)
        if (!(isalnum((unsigned char)*p) || *p == '_'))
            return false;
    return strlen(k) < 256;
}

ctl_job_t *ctl_job_from_spec(ctl_t *c, json_t *spec, int32_t tenant, bool admin,
                             ctl_field_err_t *fe) {
    if (!json_is_object(spec))
        return bad(fe, 400, "invalid_field", NULL, "the body must be a JSON object (a job spec)");
    const char *key;
    json_t *v;
    json_object_foreach(spec, key, v) {
        bool known = false;
        for (size_t i = 0; spec_fields[i]; i++)
            known = known || strcmp(key, spec_fields[i]) == 0;
        if (!known)
            return bad(fe, 400, "unknown_field", key,
                       "unknown field (known: name, tenant, tasks, min_tasks, cpus, memory, gpus, "
                       "gpu_share, gpu_memory, gpu_models, pool, priority, time_limit, command, "
                       "image, env, on_node_failure)");
    }
    char qerr[200];

    /* tenant */
    if (present(spec, "tenant", &v)) {
        if (!json_is_string(v))
            return bad(fe, 400, "invalid_field", "tenant", "must be a string");
        int t = sl_sched_tenant_find(c->sched, json_string_value(v));
        if (!admin && (t < 0 || t != tenant))
            return bad(fe, 403, "forbidden", "tenant",
                       "this token may only submit for tenant \"%s\"",
                       sl_sched_tenant_name(c->sched, tenant));
        if (t < 0)
            return bad(fe, 400, "invalid_field", "tenant", "unknown tenant \"%s\"",
                       json_string_value(v));
        tenant = t;
    } else if (admin) {
        if (sl_sched_tenant_count(c->sched) != 1)
            return bad(fe, 400, "invalid_field", "tenant",
                       "required when submitting with the admin token");
        tenant = 0;
    }

    int64_t tasks = 1, min_tasks, gpus = 0, priority = 0, time_limit = 0;
    if (present(spec, "tasks", &v)) {
        if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > SL_MAX_TASKS)
            return bad(fe, 400, "invalid_field", "tasks", "must be a whole number from 1 to %d",
                       SL_MAX_TASKS);
        tasks = json_integer_value(v);
    }
    min_tasks = tasks;
    if (present(spec, "min_tasks", &v)) {
        if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > tasks)
            return bad(fe, 400, "invalid_field", "min_tasks",
                       "must be a whole number from 1 to tasks (%lld)", (long long)tasks);
        min_tasks = json_integer_value(v);
    }
    int64_t cpu_milli = 1000, mem_bytes = 1024LL * 1024 * 1024, gpu_milli = 0, gpu_mem = 0;
    if (present(spec, "cpus", &v) && qty_field(v, SL_QTY_CPU, &cpu_milli, qerr, sizeof qerr) < 0)
        return bad(fe, 400, "invalid_field", "cpus", "%s", qerr);
    if (present(spec, "memory", &v) && qty_field(v, SL_QTY_MEM, &mem_bytes, qerr, sizeof qerr) < 0)
        return bad(fe, 400, "invalid_field", "memory", "%s", qerr);
    if (present(spec, "gpus", &v)) {
        if (!json_is_integer(v) || json_integer_value(v) < 0 ||
            json_integer_value(v) > SL_MAX_GPUS_PER_NODE)
            return bad(fe, 400, "invalid_field", "gpus", "must be a whole number from 0 to %d",
                       SL_MAX_GPUS_PER_NODE);
        gpus = json_integer_value(v);
    }
    bool share = present(spec, "gpu_share", &v);
    if (share) {
        if (qty_field(v, SL_QTY_GPU, &gpu_milli, qerr, sizeof qerr) < 0)
            return bad(fe, 400, "invalid_field", "gpu_share", "%s", qerr);
        if (gpu_milli <= 0 || gpu_milli >= SL_GPU_MILLI)
            return bad(fe, 400, "invalid_field", "gpu_share",
                       "must be a fraction of one GPU between 0 and 1 (e.g. \"0.25\")");
        if (gpus > 0)
            return bad(fe, 400, "invalid_field", "gpu_share",
                       "cannot be combined with gpus (ask for whole GPUs or a share)");
    }
    if (present(spec, "gpu_memory", &v)) {
        if (!share)
            return bad(fe, 400, "invalid_field", "gpu_memory", "only allowed with gpu_share");
        if (qty_field(v, SL_QTY_MEM, &gpu_mem, qerr, sizeof qerr) < 0)
            return bad(fe, 400, "invalid_field", "gpu_memory", "%s", qerr);
    }
    json_t *models = json_array();
    if (present(spec, "gpu_models", &v)) {
        if (json_is_string(v)) {
            json_array_append(models, v);
        } else if (json_is_array(v)) {
            size_t i;
            json_t *m;
            json_array_foreach(v, i, m) {
                if (!json_is_string(m) || !name_ok(json_string_value(m), SL_NAME_MAX - 1)) {
                    json_decref(models);
                    return bad(fe, 400, "invalid_field", "gpu_models",
                               "must be a list of GPU model names (1..63 characters)");
                }
                json_array_append(models, m);
            }
        } else {
            json_decref(models);
            return bad(fe, 400, "invalid_field", "gpu_models", "must be a list of GPU model names");
        }
        if (json_array_size(models) > 0 && gpus == 0 && !share) {
            json_decref(models);
            return bad(fe, 400, "invalid_field", "gpu_models", "only allowed with gpus or gpu_share");
        }
    }
    json_t *pool = json_null();
    if (present(spec, "pool", &v)) {
        if (!json_is_string(v) || !name_ok(json_string_value(v), SL_NAME_MAX - 1)) {
            json_decref(models);
            return bad(fe, 400, "invalid_field", "pool", "must be a pool name (1..63 characters)");
        }
        if (c->cfg.npools > 0) {
            bool ok = false;
            for (size_t i = 0; i < c->cfg.npools; i++)
                ok = ok || strcmp(c->cfg.pools[i], json_string_value(v)) == 0;
            if (!ok) {
                json_decref(models);
                return bad(fe, 400, "invalid_field", "pool", "unknown pool \"%s\"",
                           json_string_value(v));
            }
        }
        pool = json_incref(v);
    }
#define FAIL(...)                   \
    do {                            \
        json_decref(models);        \
        json_decref(pool);          \
        return bad(fe, __VA_ARGS__); \
    } while (0)
    if (present(spec, "priority", &v)) {
        if (!json_is_integer(v) || json_integer_value(v) < -1000000 || json_integer_value(v) > 1000000)
            FAIL(400, "invalid_field", "priority", "must be a whole number from -1000000 to 1000000");
        priority = json_integer_value(v);
    }
    if (present(spec, "time_limit", &v)) {
        if (!json_is_integer(v) || json_integer_value(v) < 0 ||
            json_integer_value(v) > 366LL * 24 * 3600 * 10)
            FAIL(400, "invalid_field", "time_limit", "must be a whole number of seconds (0 = none)");
        time_limit = json_integer_value(v);
    }
    json_t *command = json_null();
    if (present(spec, "command", &v)) {
        size_t i;
        json_t *a;
        if (!json_is_array(v) || json_array_size(v) == 0)
            FAIL(400, "invalid_field", "command", "must be a non-empty list of strings");
        json_array_foreach(v, i, a) {
            if (!json_is_string(a))
                FAIL(400, "invalid_field", "command", "item %zu must be a string", i);
        }
        command = json_incref(v);
    }
    json_t *image = json_null();
    if (present(spec, "image", &v)) {
        if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) > 1024) {
            json_decref(command);
            FAIL(400, "invalid_field", "image", "must be a container image reference");
        }
        image = json_incref(v);
    }
    if (json_is_null(command) && json_is_null(image))
        FAIL(400, "invalid_field", "command", "required (or give an image)");
#undef FAIL
    json_t *norm = json_object();
    json_t *env = json_object();
    /* From here on everything is owned by norm, so one exit path frees it. */
    const char *name = NULL;
    char dflt[SL_NAME_MAX];
    if (present(spec, "name", &v)) {
        if (!json_is_string(v) || !name_ok(json_string_value(v), SL_NAME_MAX - 1)) {
            bad(fe, 400, "invalid_field", "name", "must be a string of 1 to 63 printable characters");
            goto fail;
        }
        name = json_string_value(v);
    } else {
        const char *src = json_is_string(image) ? json_string_value(image)
                                                : json_string_value(json_array_get(command, 0));
        const char *slash = strrchr(src, '/');
        snprintf(dflt, sizeof dflt, "%s", slash && slash[1] ? slash + 1 : src);
        if (!name_ok(dflt, SL_NAME_MAX - 1))
            snprintf(dflt, sizeof dflt, "job");
        name = dflt;
    }
    if (present(spec, "env", &v)) {
        const char *k;
        json_t *ev;
        if (!json_is_object(v)) {
            bad(fe, 400, "invalid_field", "env", "must be an object of string values");
            goto fail;
        }
        json_object_foreach(v, k, ev) {
            if (!env_key_ok(k)) {
                bad(fe, 400, "invalid_field", "env", "\"%s\" is not a valid variable name", k);
                goto fail;
            }
            if (!json_is_string(ev)) {
                bad(fe, 400, "invalid_field", "env", "value of %s must be a string", k);
                goto fail;
            }
            json_object_set(env, k, ev);
        }
    }
    bool requeue = true;
    if (present(spec, "on_node_failure", &v)) {
        const char *s = json_string_value(v);
        if (s == NULL || (strcmp(s, "requeue") != 0 && strcmp(s, "fail") != 0)) {
            bad(fe, 400, "invalid_field", "on_node_failure", "must be \"requeue\" or \"fail\"");
            goto fail;
        }
        requeue = strcmp(s, "requeue") == 0;
    }
    json_object_set_new(norm, "name", json_string(name));
    json_object_set_new(norm, "tenant", json_string(sl_sched_tenant_name(c->sched, tenant)));
    json_object_set_new(norm, "tasks", json_integer(tasks));
    json_object_set_new(norm, "min_tasks", json_integer(min_tasks));
    json_object_set_new(norm, "cpus", qty_json(cpu_milli, SL_QTY_CPU));
    json_object_set_new(norm, "memory", qty_json(mem_bytes, SL_QTY_MEM));
    json_object_set_new(norm, "gpus", json_integer(gpus));
    json_object_set_new(norm, "gpu_share", share ? qty_json(gpu_milli, SL_QTY_GPU) : json_null());
    json_object_set_new(norm, "gpu_memory", gpu_mem ? qty_json(gpu_mem, SL_QTY_MEM) : json_null());
    json_object_set(norm, "gpu_models", models);
    json_object_set(norm, "pool", pool);
    json_object_set_new(norm, "priority", json_integer(priority));
    json_object_set_new(norm, "time_limit", json_integer(time_limit));
    json_object_set(norm, "command", command);
    json_object_set(norm, "image", image);
    json_object_set(norm, "env", env);
    json_object_set_new(norm, "on_node_failure", json_string(requeue ? "requeue" : "fail"));
    json_decref(models);
    json_decref(pool);
    json_decref(command);
    json_decref(image);
    json_decref(env);

    ctl_job_t *j = sl_xcalloc(1, sizeof *j);
    j->spec = norm;
    j->tenant = tenant;
    j->state = CTL_JOB_PENDING;
    j->start_us = j->end_us = -1;
    char err[256];
    if (ctl_job_core_spec(c, j, err, sizeof err) < 0) {
        ctl_job_free(j);
        return bad(fe, 400, "invalid_field", NULL, "%s", err);
    }
    return j;
fail:
    json_decref(models);
    json_decref(pool);
    json_decref(command);
    json_decref(image);
    json_decref(env);
    json_decref(norm);
    return NULL;
}

int ctl_job_core_spec(ctl_t *c, ctl_job_t *j, char *err, size_t errlen) {
    json_t *s = j->spec;
    sl_job_spec_t *cs = &j->core;
    memset(cs, 0, sizeof *cs);
    cs->id = j->id;
    cs->tenant = j->tenant;
    cs->priority = (int32_t)json_integer_value(json_object_get(s, "priority"));
    cs->submit_us = j->submit_us;
    cs->ntasks = (int32_t)json_integer_value(json_object_get(s, "tasks"));
    int32_t mt = (int32_t)json_integer_value(json_object_get(s, "min_tasks"));
    cs->min_tasks = mt == cs->ntasks ? 0 : mt;
    cs->time_limit_us = json_integer_value(json_object_get(s, "time_limit")) * 1000000;
    const char *onf = json_string_value(json_object_get(s, "on_node_failure"));
    j->requeue_on_node_failure = onf == NULL || strcmp(onf, "fail") != 0;
    sl_task_req_t *r = &cs->task;
    sl_task_req_init(r);
    const char *q;
    if ((q = json_string_value(json_object_get(s, "cpus"))) &&
        sl_qty_parse(q, SL_QTY_CPU, &r->cpu_milli, err, errlen) < 0)
        return -1;
    if ((q = json_string_value(json_object_get(s, "memory"))) &&
        sl_qty_parse(q, SL_QTY_MEM, &r->mem_bytes, err, errlen) < 0)
        return -1;
    r->gpus = (int32_t)json_integer_value(json_object_get(s, "gpus"));
    int64_t milli = 0;
    if ((q = json_string_value(json_object_get(s, "gpu_share"))) &&
        sl_qty_parse(q, SL_QTY_GPU, &milli, err, errlen) < 0)
        return -1;
    r->gpu_milli = (int32_t)milli;
    if ((q = json_string_value(json_object_get(s, "gpu_memory"))) &&
        sl_qty_parse(q, SL_QTY_MEM, &r->gpu_mem_bytes, err, errlen) < 0)
        return -1;
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(s, "gpu_models"), i, m) {
        int id = sl_cluster_model_intern(c->cl, json_string_value(m));
        if (id < 0) {
            snprintf(err, errlen, "gpu_models: cannot add model \"%s\": %s", json_string_value(m),
                     sl_strerror(id));
            return -1;
        }
        r->model_mask |= 1ull << id;
    }
    r->pool = -1;
    if ((q = json_string_value(json_object_get(s, "pool")))) {
        int id = sl_cluster_pool_intern(c->cl, q);
        if (id < 0) {
            snprintf(err, errlen, "pool: cannot add pool \"%s\": %s", q, sl_strerror(id));
            return -1;
        }
        r->pool = id;
    }
    return sl_task_req_check(r, err, errlen) < 0 ? -1 : 0;
}
