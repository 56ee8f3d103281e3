/*
 * jobs.c - the life of a job in sluiced.
 *
 *   submit -> pending (core queue) -> running (the cycle placed it; tasks
 *   written, then launches pushed) -> succeeded | failed | cancelled
 *
 * A job is a gang: a task that fails fails the job and the others are
 * killed; the job's resources stay held in the core until every task has
 * reported its end (ctl_job_settle), so a GPU is never given away while a
 * process may still be using it. A node failure marks its tasks lost and,
 * per the job's on_node_failure, requeues the job (once the surviving tasks
 * have stopped, with its original submit time) or fails it.
 *
 * Every change is written into the iteration's transaction (store.c); the
 * messages it causes (launch, kill, ack) wait in the node's queue until
 * that transaction has committed (agent.c).
 *
 * Memory stays bounded on a controller that runs for months: jobs live in
 * a hash table by id, and a finished job, once settled (the core has
 * already forgotten it), joins a FIFO of finished jobs. The flush, after
 * the commit and the deferred replies, drops from the head of that FIFO
 * the jobs that ended more than job_retention ago or exceed
 * max_finished_jobs (Slurm's MinJobAge/MaxJobCount), at most
 * CTL_TRIM_PER_PASS per pass; SQLite keeps them, and the API reads a
 * forgotten job back by id (ctl_store_job_fetch).
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "log.h"

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

/* ---- the in-memory job table and the finished list ---- */

static size_t map_slot(uint64_t id, size_t cap) {
    uint64_t h = id * 0x9E3779B97F4A7C15ull; /* Fibonacci hashing: ids are dense */
    return (size_t)(h ^ (h >> 29)) & (cap - 1);
}

static void map_put(ctl_job_t **map, size_t cap, ctl_job_t *j) {
    size_t i = map_slot(j->id, cap);
    while (map[i] != NULL && map[i]->id != j->id)
        i = (i + 1) & (cap - 1);
    map[i] = j;
}

static void map_resize(ctl_t *c, size_t cap) {
    ctl_job_t **map = sl_xcalloc(cap, sizeof *map);
    for (size_t i = 0; i < c->jobmap_cap; i++)
        if (c->jobmap[i] != NULL)
            map_put(map, cap, c->jobmap[i]);
    sl_free(c->jobmap);
    c->jobmap = map;
    c->jobmap_cap = cap;
}

ctl_job_t *ctl_job_find(ctl_t *c, uint64_t id) {
    if (c->jobmap_cap == 0)
        return NULL;
    for (size_t i = map_slot(id, c->jobmap_cap);; i = (i + 1) & (c->jobmap_cap - 1)) {
        ctl_job_t *j = c->jobmap[i];
        if (j == NULL || j->id == id)
            return j;
    }
}

void ctl_job_register(ctl_t *c, ctl_job_t *j) {
    if (2 * (c->njobs + 1) > c->jobmap_cap)
        map_resize(c, c->jobmap_cap ? 2 * c->jobmap_cap : 1024);
    if (ctl_job_find(c, j->id) == NULL)
        c->njobs++;
    map_put(c->jobmap, c->jobmap_cap, j);
}

ctl_job_t *ctl_job_unregister(ctl_t *c, uint64_t id) {
    if (c->jobmap_cap == 0)
        return NULL;
    size_t m = c->jobmap_cap - 1, hole = map_slot(id, c->jobmap_cap);
    while (c->jobmap[hole] != NULL && c->jobmap[hole]->id != id)
        hole = (hole + 1) & m;
    ctl_job_t *j = c->jobmap[hole];
    if (j == NULL)
        return NULL;
    c->jobmap[hole] = NULL;
    c->njobs--;
    /* Backward shift: move later members of the probe run into the hole
     * when the hole lies between their home slot and where they sit. */
    for (size_t k = (hole + 1) & m; c->jobmap[k] != NULL; k = (k + 1) & m) {
        size_t home = map_slot(c->jobmap[k]->id, c->jobmap_cap);
        if (((k - home) & m) >= ((k - hole) & m)) {
            c->jobmap[hole] = c->jobmap[k];
            c->jobmap[k] = NULL;
            hole = k;
        }
    }
    if (c->jobmap_cap > 1024 && 8 * c->njobs < c->jobmap_cap)
        map_resize(c, c->jobmap_cap / 2);
    return j;
}

void ctl_job_retain(ctl_t *c, ctl_job_t *j) {
    if (j->retained)
        return;
    j->retained = true;
    if (c->fin_len == c->fin_cap) {
        size_t cap = c->fin_cap ? 2 * c->fin_cap : 1024;
        uint64_t *fin = sl_xmalloc(cap * sizeof *fin);
        for (size_t i = 0; i < c->fin_len; i++)
            fin[i] = c->fin[(c->fin_head + i) % c->fin_cap];
        sl_free(c->fin);
        c->fin = fin;
        c->fin_cap = cap;
        c->fin_head = 0;
    }
    c->fin[(c->fin_head + c->fin_len) % c->fin_cap] = j->id;
    c->fin_len++;
}

size_t ctl_jobs_trim(ctl_t *c, int64_t now_us, size_t max) {
    int64_t cut = now_us - c->cfg.job_retention_ms * 1000;
    size_t n = 0;
    while (c->fin_len > 0 && n < max) {
        ctl_job_t *j = ctl_job_find(c, c->fin[c->fin_head]);
        if (j != NULL) {
            /* End times come in (nearly) finishing order, so the head is
             * the oldest; retention 0 forgets even an end time reported
             * slightly ahead of this clock. */
            bool drop = (int64_t)c->fin_len > c->cfg.max_finished_jobs ||
                        c->cfg.job_retention_ms == 0 || j->end_us <= cut;
            if (!drop)
                break;
            ctl_job_free(ctl_job_unregister(c, j->id));
            c->n.jobs_forgotten++;
        }
        c->fin_head = (c->fin_head + 1) % c->fin_cap;
        c->fin_len--;
        n++;
    }
    return n;
}

void ctl_job_free(ctl_job_t *j) {
    if (j == NULL)
        return;
    json_decref(j->spec);
    sl_free(j->head);
    sl_free(j->row);
    sl_free(j->tasks);
    sl_free(j);
}

void ctl_job_make_head(ctl_job_t *j) {
    ctl_buf_t b;
    ctl_buf_init(&b);
    char *spec = json_dumps(j->spec, JSON_COMPACT | JSON_PRESERVE_ORDER);
    size_t sl = strlen(spec);
    ctl_buf_puts(&b, "{\"id\":");
    ctl_buf_u64(&b, j->id);
    if (sl > 2) {
        ctl_buf_putc(&b, ',');
        ctl_buf_add(&b, spec + 1, sl - 2);
    }
    ctl_buf_puts(&b, ",\"submit_time\":");
    ctl_buf_time(&b, j->submit_us);
    free(spec);
    sl_free(j->head);
    j->head = ctl_buf_steal(&b, &j->head_len);
    ctl_job_make_row(j);
}

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

int ctl_job_submit(ctl_t *c, ctl_job_t *j, char *err, size_t errlen) {
    j->id = c->next_id;
    j->submit_us = ctl_now_us();
    j->core.id = j->id;
    j->core.submit_us = j->submit_us;
    int rc = sl_sched_submit(c->sched, &j->core, err, errlen);
    if (rc < 0)
        return rc;
    c->next_id++;
    j->in_core = true;
    ctl_job_make_head(j);
    ctl_job_register(c, j);
    rc = ctl_store_job_insert(c, j);
    if (rc < 0) {
        sl_sched_cancel(c->sched, j->id, j->submit_us);
        sl_sched_forget(c->sched, j->id);
        ctl_job_unregister(c, j->id);
        ctl_job_free(j);
        snprintf(err, errlen, "could not store the job");
        return rc;
    }
    c->n.submissions++;
    c->sched_dirty = true;
    ctl_kick(c);
    return 0;
}

/* ---- messages to agents ---- */

void ctl_send_launch(ctl_t *c, ctl_job_t *j, int32_t i) {
    const ctl_task_t *t = &j->tasks[i];
    ctl_node_t *mn = ctl_node_get(c, j->master_node);
    int32_t local = 0;
    for (int32_t k = 0; k < i; k++)
        local += j->tasks[k].node == t->node;
    ctl_buf_t b;
    ctl_buf_init(&b);
    ctl_buf_puts(&b, "{\"type\":\"launch\",\"job\":");
    ctl_buf_u64(&b, j->id);
    ctl_buf_puts(&b, ",\"task\":");
    ctl_buf_i64(&b, i);
    ctl_buf_puts(&b, ",\"name\":");
    ctl_buf_jstr(&b, json_string_value(json_object_get(j->spec, "name")));
    ctl_buf_puts(&b, ",\"tenant\":");
    ctl_buf_jstr(&b, sl_sched_tenant_name(c->sched, j->tenant));
    char *argv = json_dumps(json_object_get(j->spec, "command"), JSON_COMPACT | JSON_ENCODE_ANY);
    char *env = json_dumps(json_object_get(j->spec, "env"), JSON_COMPACT | JSON_PRESERVE_ORDER);
    ctl_buf_puts(&b, ",\"argv\":");
    ctl_buf_puts(&b, argv ? argv : "null");
    ctl_buf_puts(&b, ",\"image\":");
    ctl_buf_jstr(&b, json_string_value(json_object_get(j->spec, "image")));
    ctl_buf_puts(&b, ",\"env\":");
    ctl_buf_puts(&b, env ? env : "{}");
    free(argv);
    free(env);
    ctl_buf_puts(&b, ",\"gpus\":[");
    bool first = true;
    for (int g = 0; g < SL_MAX_GPUS_PER_NODE; g++) {
        if (t->gpu_mask & (1u << g)) {
            if (!first)
                ctl_buf_putc(&b, ',');
            ctl_buf_i64(&b, g);
            first = false;
        }
    }
    ctl_buf_puts(&b, "],\"gpu_milli\":");
    ctl_buf_i64(&b, t->gpu_mask ? t->gpu_milli : 0);
    ctl_buf_puts(&b, ",\"gpu_memory\":");
    ctl_buf_i64(&b, j->core.task.gpus ? 0 : j->core.task.gpu_mem_bytes);
    ctl_buf_puts(&b, ",\"cpu_milli\":");
    ctl_buf_i64(&b, j->core.task.cpu_milli);
    ctl_buf_puts(&b, ",\"mem_bytes\":");
    ctl_buf_i64(&b, j->core.task.mem_bytes);
    ctl_buf_puts(&b, ",\"rank\":");
    ctl_buf_i64(&b, i);
    ctl_buf_puts(&b, ",\"world_size\":");
    ctl_buf_i64(&b, j->ntasks);
    ctl_buf_puts(&b, ",\"local_rank\":");
    ctl_buf_i64(&b, local);
    ctl_buf_puts(&b, ",\"master_addr\":");
    ctl_buf_jstr(&b, mn && mn->addr[0] ? mn->addr : "127.0.0.1");
    ctl_buf_puts(&b, ",\"master_port\":");
    ctl_buf_i64(&b, CTL_MASTER_PORT_BASE + (int64_t)(j->id % 1000));
    ctl_buf_puts(&b, ",\"time_limit\":");
    ctl_buf_i64(&b, j->core.time_limit_us / 1000000);
    ctl_buf_puts(&b, "}\n");
    ctl_agent_send(c, (uint32_t)t->node, b.p, b.len);
    ctl_buf_fini(&b);
    c->n.tasks_launched++;
}

void ctl_send_kill(ctl_t *c, ctl_job_t *j, int32_t i) {
    char msg[160];
    int n = snprintf(msg, sizeof msg, "{\"type\":\"kill\",\"job\":%llu,\"task\":%d,\"grace_ms\":%lld}\n",
                     (unsigned long long)j->id, i, (long long)c->cfg.kill_grace_ms);
    ctl_agent_send(c, (uint32_t)j->tasks[i].node, msg, (size_t)n);
}

static void kill_live(ctl_t *c, ctl_job_t *j, int32_t except_node) {
    for (int32_t i = 0; i < j->ntasks; i++) {
        ctl_task_t *t = &j->tasks[i];
        if ((t->state == CTL_TASK_LAUNCHING || t->state == CTL_TASK_RUNNING) && t->node != except_node)
            ctl_send_kill(c, j, i);
    }
}

/* ---- the scheduling cycle ---- */

static void on_start(void *ud, const sl_job_t *cj) {
    ctl_t *c = ud;
    ctl_job_t *j = ctl_job_find(c, sl_job_id(cj));
    if (j == NULL) {
        sl_log(SL_LOG_ERROR, "sched", "job=%llu started but unknown", (unsigned long long)sl_job_id(cj));
        return;
    }
    int32_t n = sl_job_ntasks_placed(cj);
    sl_free(j->tasks);
    j->tasks = sl_xcalloc((size_t)(n ? n : 1), sizeof *j->tasks);
    j->ntasks = n;
    j->state = CTL_JOB_RUNNING;
    j->start_us = sl_job_start_us(cj);
    j->reason[0] = '\0';
    for (int32_t i = 0; i < n; i++) {
        const sl_place_t *pl = sl_job_place(cj, i);
        ctl_task_t *t = &j->tasks[i];
        t->node = (int32_t)pl->node;
        t->gpu_mask = pl->gpu_mask;
        t->gpu_milli = pl->gpu_milli;
        t->gpu_mem_bytes = pl->gpu_mem_bytes;
        t->state = CTL_TASK_LAUNCHING;
        t->start_us = t->end_us = -1;
        ctl_node_get(c, pl->node)->live_tasks++;
        ctl_store_task_put(c, j, i);
    }
    j->live = n;
    j->master_node = n ? (uint32_t)j->tasks[0].node : 0;
    ctl_store_job_update(c, j);
    for (int32_t i = 0; i < n; i++)
        ctl_send_launch(c, j, i);
    c->n.jobs_started++;
    if (sl_log_enabled(SL_LOG_DEBUG, "sched"))
        sl_log(SL_LOG_DEBUG, "sched", "job=%llu started tasks=%d", (unsigned long long)j->id, n);
}

void ctl_sched_run(ctl_t *c) {
    if (!c->sched_dirty)
        return;
    c->sched_dirty = false;
    int64_t t0 = ctl_mono_us();
    sl_cycle_stats_t st;
    sl_sched_cycle(c->sched, ctl_now_us(), on_start, c, &st);
    c->n.cycles++;
    c->n.cycle_us += (uint64_t)(ctl_mono_us() - t0);
}

/* ---- task and job ends ---- */

void ctl_task_started(ctl_t *c, ctl_job_t *j, int32_t i, int32_t pid, int64_t t_us) {
    ctl_task_t *t = &j->tasks[i];
    if (t->state != CTL_TASK_LAUNCHING && t->state != CTL_TASK_RUNNING)
        return;
    t->state = CTL_TASK_RUNNING;
    t->pid = pid;
    if (t->start_us < 0)
        t->start_us = t_us;
    ctl_store_task_put_lazy(c, j, i);
}

void ctl_job_settle(ctl_t *c, ctl_job_t *j) {
    int64_t now = ctl_now_us();
    if (j->requeue_wait && j->in_core) {
        int rc = sl_sched_requeue(c->sched, j->id, now);
        if (rc < 0)
            sl_log(SL_LOG_ERROR, "sched", "job=%llu requeue: %s", (unsigned long long)j->id,
                   sl_strerror(rc));
        sl_free(j->tasks);
        j->tasks = NULL;
        j->ntasks = 0;
        j->requeue_wait = false;
        j->state = CTL_JOB_PENDING;
        j->start_us = -1;
        j->requeues++;
        c->n.requeues++;
        ctl_store_tasks_delete(c, j->id);
        ctl_store_job_update(c, j);
        c->sched_dirty = true;
        ctl_kick(c);
        return;
    }
    j->requeue_wait = false;
    if (j->state == CTL_JOB_RUNNING || j->state == CTL_JOB_PENDING) {
        /* Every task ended and none failed (a failure would have failed the job). */
        j->state = CTL_JOB_SUCCEEDED;
        j->has_exit = true;
        j->exit_code = 0;
        j->end_us = -1;
        for (int32_t i = 0; i < j->ntasks; i++)
            if (j->tasks[i].end_us > j->end_us)
                j->end_us = j->tasks[i].end_us;
    }
    if (j->end_us < 0)
        j->end_us = now;
    if (j->in_core) {
        const sl_job_t *cj = sl_sched_job(c->sched, j->id);
        if (cj && sl_job_state(cj) == SL_JOB_RUNNING)
            sl_sched_finish(c->sched, j->id, now);
        else if (cj && sl_job_state(cj) == SL_JOB_PENDING)
            sl_sched_cancel(c->sched, j->id, now);
        sl_sched_forget(c->sched, j->id);
        j->in_core = false;
        c->sched_dirty = true;
        ctl_kick(c);
    }
    ctl_store_job_update(c, j);
    ctl_job_retain(c, j);
    ctl_kick(c); /* the flush trims the finished list once this is committed */
}

void ctl_task_ended(ctl_t *c, ctl_job_t *j, int32_t i, ctl_task_state_t st, int32_t exit_code,
                    int32_t sig, bool has_exit, const char *reason, int64_t t_us) {
    ctl_task_t *t = &j->tasks[i];
    if (t->state != CTL_TASK_LAUNCHING && t->state != CTL_TASK_RUNNING)
        return;
    t->state = st;
    t->has_exit = has_exit;
    t->exit_code = exit_code;
    t->signal = sig;
    t->end_us = t_us > 0 ? t_us : ctl_now_us();
    j->live--;
    if (t->node >= 0)
        ctl_node_get(c, (uint32_t)t->node)->live_tasks--;
    ctl_store_task_put(c, j, i);
    c->n.tasks_exited++;
    bool failed = st != CTL_TASK_EXITED || exit_code != 0 || sig != 0;
    if (failed && j->state == CTL_JOB_RUNNING) {
        const sl_node_t *nd = sl_cluster_node(c->cl, (uint32_t)t->node);
        if (st == CTL_TASK_FAILED)
            snprintf(j->reason, sizeof j->reason, "task %d could not be launched: %s", i,
                     reason ? reason : "unknown reason");
        else if (st == CTL_TASK_LOST)
            snprintf(j->reason, sizeof j->reason, "task %d lost with node %s", i,
                     nd ? nd->name : "?");
        else if (sig != 0)
            snprintf(j->reason, sizeof j->reason, "task %d killed by signal %d", i, sig);
        else
            snprintf(j->reason, sizeof j->reason, "task %d exited with code %d", i, exit_code);
        j->state = CTL_JOB_FAILED;
        j->end_us = t->end_us;
        j->has_exit = has_exit;
        j->exit_code = sig ? 128 + sig : exit_code;
        kill_live(c, j, -1);
    }
    if (j->live == 0)
        ctl_job_settle(c, j);
    else
        ctl_store_job_update(c, j);
}

void ctl_job_fail(ctl_t *c, ctl_job_t *j, const char *reason) {
    if (j->state != CTL_JOB_PENDING && j->state != CTL_JOB_RUNNING)
        return;
    int64_t now = ctl_now_us();
    if (j->in_core && j->state == CTL_JOB_PENDING && !j->requeue_wait) {
        sl_sched_cancel(c->sched, j->id, now);
        sl_sched_forget(c->sched, j->id);
        j->in_core = false;
        c->sched_dirty = true;
    }
    j->state = CTL_JOB_FAILED;
    j->requeue_wait = false;
    j->end_us = now;
    snprintf(j->reason, sizeof j->reason, "%s", reason);
    kill_live(c, j, -1);
    if (j->live == 0)
        ctl_job_settle(c, j);
    else
        ctl_store_job_update(c, j);
    ctl_kick(c);
}

int ctl_job_cancel(ctl_t *c, ctl_job_t *j) {
    if (j->state != CTL_JOB_PENDING && j->state != CTL_JOB_RUNNING)
        return SL_ESTATE;
    int64_t now = ctl_now_us();
    if (j->in_core && j->state == CTL_JOB_PENDING && !j->requeue_wait) {
        sl_sched_cancel(c->sched, j->id, now);
        sl_sched_forget(c->sched, j->id);
        j->in_core = false;
        c->sched_dirty = true;
    }
    j->state = CTL_JOB_CANCELLED;
    j->requeue_wait = false;
    j->end_us = now;
    snprintf(j->reason, sizeof j->reason, "cancelled");
    kill_live(c, j, -1);
    if (j->live == 0)
        ctl_job_settle(c, j);
    else
        ctl_store_job_update(c, j);
    ctl_kick(c);
    return 0;
}

void ctl_job_lose(ctl_t *c, ctl_job_t *j, uint32_t node, int32_t task, const char *why) {
    bool here = false;
    for (int32_t i = 0; i < j->ntasks && !here; i++)
        here = j->tasks[i].node == (int32_t)node && (task < 0 || i == task) &&
               (j->tasks[i].state == CTL_TASK_LAUNCHING || j->tasks[i].state == CTL_TASK_RUNNING);
    if (!here)
        return;
    if (j->state == CTL_JOB_RUNNING) {
        if (j->requeue_on_node_failure) {
            j->state = CTL_JOB_PENDING;
            j->requeue_wait = true;
            snprintf(j->reason, sizeof j->reason, "requeued: %s", why);
        } else {
            j->state = CTL_JOB_FAILED;
            j->end_us = ctl_now_us();
            snprintf(j->reason, sizeof j->reason, "%s", why);
        }
        kill_live(c, j, task < 0 ? (int32_t)node : -1);
    }
    int64_t now = ctl_now_us();
    for (int32_t i = 0; i < j->ntasks; i++) {
        if (j->tasks[i].node == (int32_t)node && (task < 0 || i == task) &&
            (j->tasks[i].state == CTL_TASK_LAUNCHING || j->tasks[i].state == CTL_TASK_RUNNING))
            ctl_task_ended(c, j, i, CTL_TASK_LOST, 0, 0, false, NULL, now);
    }
}

void ctl_node_failed(ctl_t *c, uint32_t node, const char *why) {
    const sl_node_t *nd = sl_cluster_node(c->cl, node);
    char name[SL_NAME_MAX];
    snprintf(name, sizeof name, "%s", nd ? nd->name : "?");
    sl_log(SL_LOG_WARN, "node", "node=%s down: %s", name, why);
    c->n.node_failures++;
    sl_cluster_set_state(c->cl, node, SL_NODE_DOWN);
    ctl_agent_close_node(c, node);
    ctl_logreq_fail_node(c, node, "the node failed");
    char why2[200];
    snprintf(why2, sizeof why2, "node %s failed (%s)", name, why);
    for (uint64_t id = c->first_active; id < c->next_id; id++) {
        ctl_job_t *j = ctl_job_find(c, id);
        if (j != NULL && j->live > 0)
            ctl_job_lose(c, j, node, -1, why2);
    }
    c->sched_dirty = true;
    ctl_kick(c);
}

typedef struct collect {
    uint64_t *ids;
    size_t n, cap;
    int64_t now;
    ctl_t *c;
} collect_t;

static int over_limit(void *ud, const sl_job_t *cj) {
    collect_t *col = ud;
    const sl_job_spec_t *sp = sl_job_spec(cj);
    if (sp->time_limit_us > 0 && sl_job_start_us(cj) >= 0 &&
        col->now - sl_job_start_us(cj) > sp->time_limit_us) {
        if (col->n == col->cap) {
            col->cap = col->cap ? 2 * col->cap : 16;
            col->ids = sl_xrealloc(col->ids, col->cap * sizeof *col->ids);
        }
        col->ids[col->n++] = sl_job_id(cj);
    }
    return 0;
}

void ctl_sweep(ctl_t *c) {
    int64_t mono = ctl_mono_us();
    int64_t timeout_us = c->cfg.node_timeout_ms * 1000;
    for (size_t i = 0; i < c->nnodes; i++) {
        ctl_node_t *n = c->nodes[i];
        const sl_node_t *nd = sl_cluster_node(c->cl, (uint32_t)i);
        if (n == NULL || nd == NULL)
            continue;
        if ((nd->state != SL_NODE_DOWN || n->live_tasks > 0) &&
            mono - n->last_seen_mono_us > timeout_us) {
            char why[96];
            snprintf(why, sizeof why, "no message for %lld ms",
                     (long long)((mono - n->last_seen_mono_us) / 1000));
            ctl_node_failed(c, (uint32_t)i, why);
        }
    }
    collect_t col = {NULL, 0, 0, ctl_now_us(), c};
    sl_sched_foreach(c->sched, SL_JOB_RUNNING, over_limit, &col);
    for (size_t i = 0; i < col.n; i++) {
        ctl_job_t *j = ctl_job_find(c, col.ids[i]);
        if (j && j->state == CTL_JOB_RUNNING) {
            char why[96];
            snprintf(why, sizeof why, "time limit of %lld s exceeded",
                     (long long)(j->core.time_limit_us / 1000000));
            ctl_job_fail(c, j, why);
        }
    }
    sl_free(col.ids);
    /* Advance the scan start past jobs that can no longer change. */
    while (c->first_active < c->next_id) {
        ctl_job_t *j = ctl_job_find(c, c->first_active);
        if (j != NULL && (j->in_core || j->live > 0))
            break;
        c->first_active++;
    }
    ctl_logreq_expire(c);
    if (c->fin_len > 0)
        ctl_kick(c); /* the flush drops finished jobs past job_retention */
}
