/*
 * proto.c - the decoder of the controller <-> agent protocol and its
 * message names (proto.h, docs/protocol.md); proto_encode.c encodes.
 *
 * Decoding reads a jansson document. Each message has one function that
 * walks its fields in wire order through small typed getters (integer in a
 * range, number, string, boolean); a getter that fails writes "<message>:
 * <field>: <what it must be>" and the walk stops. The identifying fields
 * (job, task, req) are read first so that a reader can answer a message
 * that fails later (has_ids). Decoded strings point into the document, of
 * which the message holds a reference; arrays come from one list of blocks
 * freed by sl_proto_msg_fini.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "jsonesc.h"
#include "pod.h"
#include "proto.h"
#include "sluice/alloc.h"
#include "sluice/error.h"
#include "quantity.h"
#include "sluice/resources.h"

static const char *const type_names[SL_PROTO_NTYPES] = {
    [SL_PROTO_NONE] = "?",
    [SL_PROTO_HELLO] = "hello",
    [SL_PROTO_STARTED] = "started",
    [SL_PROTO_EXITED] = "exited",
    [SL_PROTO_FAILED] = "failed",
    [SL_PROTO_HEARTBEAT] = "heartbeat",
    [SL_PROTO_LOGS_REPLY] = "logs",
    [SL_PROTO_WELCOME] = "welcome",
    [SL_PROTO_ERROR] = "error",
    [SL_PROTO_LAUNCH] = "launch",
    [SL_PROTO_KILL] = "kill",
    [SL_PROTO_ACK] = "ack",
    [SL_PROTO_LOGS_REQ] = "logs",
    [SL_PROTO_HEARTBEAT_ECHO] = "heartbeat",
    [SL_PROTO_REDIRECT] = "redirect",
};

const char *sl_proto_type_name(sl_proto_type_t type) {
    return type > SL_PROTO_NONE && type < SL_PROTO_NTYPES ? type_names[type] : "?";
}

/* ---- decoding ---- */

typedef struct dec {
    sl_proto_msg_t *m;
    const char *what;   /* the message's name for errors */
    const char *prefix; /* "node." or "tasks[3]." or "" */
    char *err;
    size_t errlen;
} dec_t;

static int fail(dec_t *d, const char *field, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(dec_t *d, const char *field, const char *fmt, ...) {
    if (d->errlen > 0) {
        int n = snprintf(d->err, d->errlen, "%s: %s%s: ", d->what, d->prefix, field);
        if (n >= 0 && (size_t)n < d->errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(d->err + n, d->errlen - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return SL_EINVAL;
}

/* Arrays of a decoded message: blocks chained through their first word. */
typedef union blk {
    union blk *next;
    max_align_t align_;
} blk_t;

static void *dec_alloc(dec_t *d, size_t n, size_t size) {
    if (n == 0) return NULL;
    blk_t *b = sl_xcalloc(1, sizeof *b + n * size);
    b->next = d->m->alloc_;
    d->m->alloc_ = b;
    return b + 1;
}

/* dec_alloc for the usage decoder, which gets it as a pointer. */
static void *usage_alloc(void *ud, size_t n, size_t size) {
    return dec_alloc(ud, n, size);
}

static bool absent(const json_t *v) {
    return v == NULL || json_is_null(v);
}

/* An integer in lo..hi into *out; absent: dflt, or an error if required. */
static int get_int(dec_t *d, json_t *o, const char *k, bool required, int64_t lo, int64_t hi,
                   int64_t dflt, int64_t *out, const char *must) {
    json_t *v = json_object_get(o, k);
    if (absent(v)) {
        if (required) return fail(d, k, "is required (%s)", must);
        *out = dflt;
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return fail(d, k, "must be %s", must);
    *out = json_integer_value(v);
    return 0;
}

static int get_i32(dec_t *d, json_t *o, const char *k, bool required, int64_t lo, int64_t hi,
                   int64_t dflt, int32_t *out, const char *must) {
    int64_t v;
    int rc = get_int(d, o, k, required, lo, hi, dflt, &v, must);
    if (rc == 0) *out = (int32_t)v;
    return rc;
}

/* A string; absent: NULL, or an error if required. */
static int get_str(dec_t *d, json_t *o, const char *k, bool required, const char **out) {
    json_t *v = json_object_get(o, k);
    if (absent(v)) {
        if (required) return fail(d, k, "is required (a string)");
        *out = NULL;
        return 0;
    }
    if (!json_is_string(v)) return fail(d, k, "must be a string");
    *out = json_string_value(v);
    return 0;
}

/* Seconds since the epoch (a number); absent: 0. The bound keeps the
 * reader's conversion to microseconds within int64. */
static int get_time(dec_t *d, json_t *o, const char *k, double *out) {
    json_t *v = json_object_get(o, k);
    if (absent(v)) {
        *out = 0;
        return 0;
    }
    double t = json_number_value(v);
    if (!json_is_number(v) || !(t >= 0 && t <= 1e11))
        return fail(d, k, "must be a time in seconds since the epoch");
    *out = t;
    return 0;
}

static int get_bool(dec_t *d, json_t *o, const char *k, bool *out) {
    json_t *v = json_object_get(o, k);
    if (absent(v)) {
        *out = false;
        return 0;
    }
    if (!json_is_boolean(v)) return fail(d, k, "must be true or false");
    *out = json_is_true(v);
    return 0;
}

/* The attempt and, where instance is not NULL, the instance (proto_run.c). */
static int get_run(dec_t *d, json_t *o, bool *has_attempt, uint32_t *attempt, const char **instance) {
    return sl__proto_run_decode(o, d->what, d->prefix, has_attempt, attempt, instance, d->err,
                                d->errlen) < 0 ? SL_EINVAL : 0;
}

#define JOB_MUST "a job id (a whole number, 0 or more)"
#define TASK_MUST "a task index (a whole number, 0 or more)"

static int get_ids(dec_t *d, json_t *o, bool with_req) {
    sl_proto_msg_t *m = d->m;
    int64_t job, req = 0;
    if (with_req && get_int(d, o, "req", true, 0, INT64_MAX, 0, &req,
                            "a request id (a whole number, 0 or more)") != 0)
        return SL_EINVAL;
    m->req = (uint64_t)req;
    if (get_int(d, o, "job", true, 0, INT64_MAX, 0, &job, JOB_MUST) != 0 ||
        get_i32(d, o, "task", true, 0, INT32_MAX, 0, &m->task, TASK_MUST) != 0)
        return SL_EINVAL;
    m->job = (uint64_t)job;
    m->has_ids = true;
    return get_run(d, o, &m->has_attempt, &m->attempt, NULL);
}

/* The wait status of an exit (proto.h, sl_proto_exited_t). */
static int get_status(dec_t *d, json_t *o, int64_t *code, int64_t *sig, bool *bad) {
    const char *must = "a whole number";
    if (get_int(d, o, "signal", false, INT64_MIN, INT64_MAX, 0, sig, must) != 0 ||
        get_int(d, o, "exit_code", false, INT64_MIN, INT64_MAX, -1, code, must) != 0)
        return SL_EINVAL;
    if (absent(json_object_get(o, "exit_code"))) *code = *sig > 0 && *sig < 128 ? 128 + *sig : 0;
    *bad = *sig < 0 || *sig > 127 || *code < 0 || *code > 255;
    return 0;
}

/* The enforcement fields of an exit (proto.h, sl_proto_exited_t). */
static int get_mem_end(dec_t *d, json_t *o, bool *oom_killed, int64_t *peak, int64_t *limit) {
    return get_bool(d, o, "oom_killed", oom_killed) ||
           get_int(d, o, "mem_peak", false, 0, INT64_MAX, 0, peak, "a number of bytes, 0 or more") ||
           get_int(d, o, "mem_limit", false, 0, INT64_MAX, 0, limit, "a number of bytes, 0 or more");
}

/* A quantity: a string or an integer (as its decimal text); absent: 0. */
static int get_qty(dec_t *d, json_t *o, const char *k, sl_qty_kind_t kind, const char **text,
                   int64_t *out) {
    json_t *v = json_object_get(o, k);
    char num[32], qe[160];
    const char *s;
    *text = NULL;
    *out = 0;
    if (absent(v)) return 0;
    if (json_is_string(v)) {
        s = *text = json_string_value(v);
    } else if (json_is_integer(v)) {
        snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v));
        s = num;
    } else {
        return fail(d, k, "must be a quantity string");
    }
    if (sl_qty_parse(s, kind, out, qe, sizeof qe) != 0) return fail(d, k, "%s", qe);
    return 0;
}

static int dec_node(dec_t *d, json_t *nd, sl_proto_node_t *n) {
    d->prefix = "node.";
    n->name = json_string_value(json_object_get(nd, "name"));
    if (!json_is_object(nd) || n->name == NULL || n->name[0] == '\0' ||
        strlen(n->name) >= SL_NAME_MAX)
        return fail(d, "name", "is required (1..%d characters)", SL_NAME_MAX - 1);
    if (get_i32(d, nd, "gpus", false, 0, 1024, 0, &n->gpus, "a whole number of GPUs from 0 to 1024") ||
        get_qty(d, nd, "cpus", SL_QTY_CPU, &n->cpus, &n->cpu_milli) ||
        get_qty(d, nd, "memory", SL_QTY_MEM, &n->memory, &n->mem_bytes) ||
        get_qty(d, nd, "gpu_memory", SL_QTY_MEM, &n->gpu_memory, &n->gpu_mem_bytes) ||
        get_str(d, nd, "gpu_model", false, &n->gpu_model) ||
        get_str(d, nd, "pool", false, &n->pool) || get_str(d, nd, "labels", false, &n->labels) ||
        get_str(d, nd, "addr", false, &n->addr) || get_str(d, nd, "taints", false, &n->taints))
        return SL_EINVAL;
    d->prefix = "";
    return 0;
}

static int dec_task(dec_t *d, json_t *o, sl_proto_task_t *t) {
    const char *st;
    int64_t job;
    if (!json_is_object(o)) {
        char f[32];
        snprintf(f, sizeof f, "%.*s", (int)strlen(d->prefix) - 1, d->prefix);
        d->prefix = "";
        return fail(d, f, "must be an object");
    }
    if (get_int(d, o, "job", true, 0, INT64_MAX, 0, &job, JOB_MUST) ||
        get_i32(d, o, "task", true, 0, INT32_MAX, 0, &t->task, TASK_MUST) ||
        get_run(d, o, &t->has_attempt, &t->attempt, &t->instance) ||
        get_str(d, o, "state", false, &st))
        return SL_EINVAL;
    t->job = (uint64_t)job;
    if (st == NULL || strcmp(st, "running") == 0)
        t->state = SL_PROTO_TASK_RUNNING;
    else if (strcmp(st, "exited") == 0)
        t->state = SL_PROTO_TASK_EXITED;
    else if (strcmp(st, "failed") == 0)
        t->state = SL_PROTO_TASK_FAILED;
    else
        return fail(d, "state", "must be running, exited or failed");
    switch (t->state) {
    case SL_PROTO_TASK_RUNNING:
        return get_i32(d, o, "pid", false, 0, INT32_MAX, 0, &t->pid, "a process id") ||
               get_time(d, o, "start_time", &t->start_time);
    case SL_PROTO_TASK_EXITED:
        return get_status(d, o, &t->exit_code, &t->signal, &t->status_out_of_range) ||
               get_bool(d, o, "fenced", &t->fenced) ||
               get_mem_end(d, o, &t->oom_killed, &t->mem_peak, &t->mem_limit) ||
               get_time(d, o, "end_time", &t->end_time);
    default:
        return get_str(d, o, "reason", false, &t->reason) ||
               get_time(d, o, "end_time", &t->end_time);
    }
}

static int dec_hello(dec_t *d, json_t *o) {
    sl_proto_hello_t *h = &d->m->u.hello;
    if (get_str(d, o, "token", true, &h->token) || get_str(d, o, "version", false, &h->version) ||
        dec_node(d, json_object_get(o, "node"), &h->node))
        return SL_EINVAL;
    json_t *tasks = json_object_get(o, "tasks");
    if (absent(tasks)) return 0;
    if (!json_is_array(tasks)) return fail(d, "tasks", "must be an array");
    size_t n = json_array_size(tasks);
    sl_proto_task_t *t = dec_alloc(d, n, sizeof *t);
    h->tasks = t;
    h->ntasks = n;
    char prefix[48];
    for (size_t i = 0; i < n; i++) {
        snprintf(prefix, sizeof prefix, "tasks[%zu].", i);
        d->prefix = prefix;
        if (dec_task(d, json_array_get(tasks, i), &t[i]) != 0) {
            d->prefix = "";
            return SL_EINVAL;
        }
    }
    d->prefix = "";
    return 0;
}

static int dec_launch(dec_t *d, json_t *o) {
    sl_proto_launch_t *l = &d->m->u.launch;
    if (get_ids(d, o, false) || get_str(d, o, "name", false, &l->name) ||
        get_str(d, o, "tenant", false, &l->tenant))
        return SL_EINVAL;
    json_t *v = json_object_get(o, "argv");
    if (!absent(v)) {
        if (!json_is_array(v)) return fail(d, "argv", "must be an array of strings or null");
        size_t n = json_array_size(v);
        const char **argv = dec_alloc(d, n + 1, sizeof *argv);
        for (size_t i = 0; i < n; i++) {
            if (!json_is_string(json_array_get(v, i))) {
                char f[32];
                snprintf(f, sizeof f, "argv[%zu]", i);
                return fail(d, f, "must be a string");
            }
            argv[i] = json_string_value(json_array_get(v, i));
        }
        l->argv = argv;
        l->argc = n;
    }
    if (get_str(d, o, "image", false, &l->image)) return SL_EINVAL;
    v = json_object_get(o, "env");
    if (!absent(v)) {
        if (!json_is_object(v)) return fail(d, "env", "must be an object of strings");
        sl_proto_kv_t *env = dec_alloc(d, json_object_size(v), sizeof *env);
        size_t n = 0;
        const char *k;
        json_t *ev;
        json_object_foreach(v, k, ev) {
            if (!json_is_string(ev)) return fail(d, "env", "the value of %.64s must be a string", k);
            env[n].key = k;
            env[n++].value = json_string_value(ev);
        }
        l->env = env;
        l->nenv = n;
    }
    v = json_object_get(o, "gpus");
    if (!absent(v)) {
        if (!json_is_array(v)) return fail(d, "gpus", "must be an array of GPU indices");
        size_t n = json_array_size(v);
        int32_t *g = dec_alloc(d, n, sizeof *g);
        for (size_t i = 0; i < n; i++) {
            json_t *x = json_array_get(v, i);
            if (!json_is_integer(x) || json_integer_value(x) < 0 ||
                json_integer_value(x) > SL_PROTO_MAX_GPU_INDEX) {
                char f[32];
                snprintf(f, sizeof f, "gpus[%zu]", i);
                return fail(d, f, "must be a GPU index from 0 to %d", SL_PROTO_MAX_GPU_INDEX);
            }
            g[i] = (int32_t)json_integer_value(x);
        }
        l->gpus = g;
        l->ngpus = n;
    }
    const char *nonneg = "a whole number, 0 or more";
    if (get_int(d, o, "gpu_milli", false, 0, 1000, 1000, &l->gpu_milli,
                "a share of a GPU in thousandths, from 0 to 1000") ||
        get_int(d, o, "gpu_memory", false, 0, INT64_MAX, 0, &l->gpu_memory, "a number of bytes") ||
        get_int(d, o, "cpu_milli", false, 0, INT64_MAX, 0, &l->cpu_milli, "a number of milli-CPUs") ||
        get_int(d, o, "mem_bytes", false, 0, INT64_MAX, 0, &l->mem_bytes, "a number of bytes") ||
        get_i32(d, o, "rank", false, 0, INT32_MAX, d->m->task, &l->rank, nonneg) ||
        get_i32(d, o, "world_size", false, 1, INT32_MAX, 1, &l->world_size, "a whole number, 1 or more") ||
        get_i32(d, o, "local_rank", false, 0, INT32_MAX, 0, &l->local_rank, nonneg) ||
        get_str(d, o, "master_addr", false, &l->master_addr) ||
        get_i32(d, o, "master_port", false, 1, 65535, SL_PROTO_DEFAULT_MASTER_PORT, &l->master_port,
                "a TCP port from 1 to 65535") ||
        get_int(d, o, "time_limit", false, 0, INT64_MAX, 0, &l->time_limit, "a number of seconds, 0 or more") ||
        get_str(d, o, "user", false, &l->user) || get_str(d, o, "group", false, &l->group) ||
        get_bool(d, o, "allow_root", &l->allow_root) ||
        get_str(d, o, "on_node_failure", false, &l->on_node_failure) ||
        get_i32(d, o, "oom_score_adj", false, SL_PROTO_OOM_SCORE_ADJ_MIN, SL_PROTO_OOM_SCORE_ADJ_MAX,
                SL_PROTO_DEFAULT_OOM_SCORE_ADJ, &l->oom_score_adj,
                "a whole number from -1000 to 1000 (the kernel's oom_score_adj)"))
        return SL_EINVAL;
    l->has_oom_score_adj = !absent(json_object_get(o, "oom_score_adj"));
    if (get_int(d, o, "shm_size", false, 0, INT64_MAX, 0, &l->shm_size, "a number of bytes") ||
        get_str(d, o, "workdir", false, &l->workdir) ||
        get_int(d, o, "mem_limit", false, 0, INT64_MAX, 0, &l->mem_limit, "a number of bytes") ||
        get_int(d, o, "cpu_limit_milli", false, 0, INT64_MAX, 0, &l->cpu_limit_milli,
                "a number of milli-CPUs"))
        return SL_EINVAL;
    v = json_object_get(o, "mounts");
    if (!absent(v)) {
        if (!json_is_array(v)) return fail(d, "mounts", "must be a list of strings");
        size_t n = json_array_size(v);
        const char **ms = dec_alloc(d, n + 1, sizeof *ms);
        for (size_t i = 0; i < n; i++) {
            if (!json_is_string(json_array_get(v, i))) return fail(d, "mounts", "must be a list of strings");
            ms[i] = json_string_value(json_array_get(v, i));
        }
        l->mounts = ms;
        l->nmounts = n;
    }
    v = json_object_get(o, "volumes");
    l->nvolumes = sl__proto_volumes_count(v);
    l->volumes = l->nvolumes ? dec_alloc(d, l->nvolumes, sizeof *l->volumes) : NULL;
    if (sl__proto_volumes_decode(v, (sl_proto_volume_t *)l->volumes, l->nvolumes, d->what, d->err, d->errlen) < 0)
        return SL_EINVAL;
    v = json_object_get(o, "image_args");
    if (!absent(v)) {
        if (!json_is_array(v)) return fail(d, "image_args", "must be a list of strings");
        size_t n = json_array_size(v);
        const char **as = dec_alloc(d, n + 1, sizeof *as);
        for (size_t i = 0; i < n; i++) {
            if (!json_is_string(json_array_get(v, i))) return fail(d, "image_args", "must be a list of strings");
            as[i] = json_string_value(json_array_get(v, i));
        }
        l->image_args = as;
        l->nimage_args = n;
    }
    v = json_object_get(o, "containers");
    if (!absent(v)) {
        char cerr[512];
        if (sl_pod_check(v, cerr, sizeof cerr) != 0) return fail(d, "containers", "%s", cerr);
        l->containers = v;
    }
    if (l->on_node_failure && strcmp(l->on_node_failure, "requeue") != 0 &&
        strcmp(l->on_node_failure, "fail") != 0)
        return fail(d, "on_node_failure", "must be requeue or fail");
    if (l->master_addr == NULL) l->master_addr = SL_PROTO_DEFAULT_MASTER_ADDR;
    return sl__proto_secret_decode(o, usage_alloc, d, &l->secrets, d->err, d->errlen) < 0 ? SL_EINVAL : 0;
}

static int dec_body(dec_t *d, json_t *o) {
    sl_proto_msg_t *m = d->m;
    switch (m->type) {
    case SL_PROTO_HELLO:
        return dec_hello(d, o);
    case SL_PROTO_STARTED:
        return get_ids(d, o, false) ||
               get_i32(d, o, "pid", true, 0, INT32_MAX, 0, &m->u.started.pid, "a process id") ||
               get_time(d, o, "time", &m->time);
    case SL_PROTO_EXITED:
        return get_ids(d, o, false) ||
               get_status(d, o, &m->u.exited.exit_code, &m->u.exited.signal,
                          &m->u.exited.status_out_of_range) ||
               get_bool(d, o, "fenced", &m->u.exited.fenced) ||
               get_mem_end(d, o, &m->u.exited.oom_killed, &m->u.exited.mem_peak,
                           &m->u.exited.mem_limit) ||
               get_time(d, o, "time", &m->time);
    case SL_PROTO_FAILED:
        return get_ids(d, o, false) || get_str(d, o, "reason", true, &m->u.failed.reason) ||
               get_time(d, o, "time", &m->time);
    case SL_PROTO_HEARTBEAT: {
        int64_t seq = 0;
        int rc = get_int(d, o, "seq", false, 0, INT64_MAX, 0, &seq, "a whole number, 0 or more") ||
                 get_time(d, o, "time", &m->time);
        m->u.heartbeat.seq = (uint64_t)seq;
        m->has_ids = rc == 0; /* a bad usage summary still leaves a heartbeat to answer */
        if (rc == 0 && sl__proto_usage_decode(json_object_get(o, "usage"), usage_alloc, d,
                                              &m->u.heartbeat.usage, &m->u.heartbeat.nusage,
                                              d->err, d->errlen) != 0)
            rc = SL_EINVAL;
        if (rc == 0 && sl__proto_health_decode(json_object_get(o, "health"), usage_alloc, d,
                                               &m->u.heartbeat.health, d->err, d->errlen) != 0)
            rc = SL_EINVAL;
        return rc;
    }
    case SL_PROTO_HEARTBEAT_ECHO: {
        int64_t seq = 0;
        int rc = get_int(d, o, "seq", true, 0, INT64_MAX, 0, &seq, "a whole number, 0 or more");
        m->u.heartbeat.seq = (uint64_t)seq;
        return rc;
    }
    case SL_PROTO_LOGS_REPLY: {
        sl_proto_logs_reply_t *r = &m->u.logs_reply;
        /* A reply names its request; job and task are optional (the
         * request already says which log), read when the agent sends them. */
        if (absent(json_object_get(o, "job")) && absent(json_object_get(o, "task"))) {
            int64_t req = 0;
            if (get_int(d, o, "req", true, 0, INT64_MAX, 0, &req,
                        "a request id (a whole number, 0 or more)") != 0)
                return SL_EINVAL;
            m->req = (uint64_t)req;
        } else if (get_ids(d, o, true)) {
            return SL_EINVAL;
        }
        if (get_str(d, o, "error", false, &r->error)) return SL_EINVAL;
        r->size = -1;
        if (r->error) return 0;
        json_t *v = json_object_get(o, "data");
        if (!absent(v) && !json_is_string(v)) return fail(d, "data", "must be a string");
        r->data = absent(v) ? "" : json_string_value(v);
        r->data_len = absent(v) ? 0 : json_string_length(v);
        return get_int(d, o, "offset", false, 0, INT64_MAX, 0, &r->offset, "a byte offset, 0 or more") ||
               get_int(d, o, "size", false, 0, INT64_MAX, -1, &r->size, "a number of bytes") ||
               get_bool(d, o, "eof", &r->eof);
    }
    case SL_PROTO_WELCOME:
        return get_str(d, o, "node", false, &m->u.welcome.node) ||
               get_i32(d, o, "heartbeat", false, 1, 3600, 0, &m->u.welcome.heartbeat,
                       "a whole number of seconds from 1 to 3600") ||
               get_int(d, o, "node_timeout_ms", false, 1, INT64_MAX / 1000, 0,
                       &m->u.welcome.node_timeout_ms, "a number of milliseconds, 1 or more") ||
               get_int(d, o, "kill_grace_ms", false, 0, INT64_MAX / 1000, -1,
                       &m->u.welcome.kill_grace_ms, "a number of milliseconds, 0 or more") ||
               get_run(d, o, NULL, NULL, &m->u.welcome.instance);
    case SL_PROTO_ERROR:
        return get_str(d, o, "message", true, &m->u.error.message);
    case SL_PROTO_LAUNCH:
        return dec_launch(d, o);
    case SL_PROTO_KILL:
        return get_ids(d, o, false) ||
               sl__proto_kill_decode(o, &m->u.kill, d->err, d->errlen) < 0;
    case SL_PROTO_ACK:
        return get_ids(d, o, false);
    case SL_PROTO_REDIRECT:
        return get_str(d, o, "leader", false, &m->u.redirect.leader);
    case SL_PROTO_LOGS_REQ:
        return get_ids(d, o, true) ||
               get_int(d, o, "offset", false, 0, INT64_MAX, 0, &m->u.logs_req.offset,
                       "a byte offset, 0 or more") ||
               get_int(d, o, "limit", false, 0, INT64_MAX, SL_PROTO_DEFAULT_LOG_LIMIT,
                       &m->u.logs_req.limit, "a number of bytes, 0 or more");
    default:
        return SL_EINVAL;
    }
}

static sl_proto_type_t type_of(const char *name, sl_proto_dir_t dir) {
    sl_proto_type_t lo = dir == SL_PROTO_TO_CTL ? SL_PROTO_HELLO : SL_PROTO_WELCOME;
    sl_proto_type_t hi = dir == SL_PROTO_TO_CTL ? SL_PROTO_LOGS_REPLY : SL_PROTO_REDIRECT;
    for (sl_proto_type_t t = lo; t <= hi; t++)
        if (strcmp(type_names[t], name) == 0) return t;
    return SL_PROTO_NONE;
}

int sl_proto_decode(json_t *obj, sl_proto_dir_t dir, sl_proto_msg_t *m, char *err, size_t errlen) {
    memset(m, 0, sizeof *m);
    dec_t d = {m, "message", "", err, errlen};
    if (errlen > 0) err[0] = '\0';
    if (!json_is_object(obj)) {
        snprintf(err, errlen, "not a JSON object");
        return SL_EINVAL;
    }
    json_t *tv = json_object_get(obj, "type");
    if (!json_is_string(tv)) {
        snprintf(err, errlen, "message without a type");
        return SL_EINVAL;
    }
    m->type = type_of(json_string_value(tv), dir);
    const char *what = m->type ? type_names[m->type] : "message";
    if (dir == SL_PROTO_TO_AGENT && sl__proto_epoch_decode(obj, what, &m->epoch, err, errlen))
        return SL_EINVAL;
    if (m->type == SL_PROTO_NONE) {
        snprintf(err, errlen, "unknown message type \"%.64s\"", json_string_value(tv));
        return SL_ENOENT;
    }
    m->root_ = json_incref(obj);
    d.what = type_names[m->type];
    return dec_body(&d, obj) == 0 ? 0 : SL_EINVAL;
}

int sl_proto_decode_line(const char *line, size_t len, sl_proto_dir_t dir, sl_proto_msg_t *m,
                         char *err, size_t errlen) {
    memset(m, 0, sizeof *m);
    if (len > SL_PROTO_MAX_LINE) {
        snprintf(err, errlen, "message longer than 1 MiB");
        return SL_EINVAL;
    }
    json_error_t jerr;
    json_t *obj = json_loadb(line, len, 0, &jerr);
    if (obj == NULL) {
        snprintf(err, errlen, "bad JSON at position %d: %s", jerr.position, jerr.text);
        return SL_EINVAL;
    }
    int rc = sl_proto_decode(obj, dir, m, err, errlen);
    json_decref(obj);
    return rc;
}

void sl_proto_msg_fini(sl_proto_msg_t *m) {
    if (m == NULL) return;
    blk_t *b = m->alloc_;
    while (b) {
        blk_t *next = b->next;
        sl_free(b);
        b = next;
    }
    json_decref(m->root_);
    memset(m, 0, sizeof *m);
}
