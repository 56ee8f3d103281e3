/*
 * proto_usage.c - the codec of a heartbeat's usage summary
 * (proto_usage.h, docs/protocol.md "heartbeat").
 *
 * Each entry is one task's usage since its agent began watching it:
 * cumulative, so the controller keeps only the latest entry of each task
 * and a lost heartbeat costs nothing. Fractions are written with four
 * decimals and seconds with three (the precision the efficiency report
 * shows); a value the agent does not have is left out, never sent as 0.
 * Lines stay short: ~200 bytes a task, so a node's few hundred tasks fit
 * well within a protocol line.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "proto_usage.h"

typedef struct out {
    char *buf;
    size_t cap, len;
} out_t;

static void add(out_t *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(out_t *o, const char *fmt, ...) {
    char tmp[96];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if (o->len < o->cap) {
        size_t room = o->cap - o->len;
        memcpy(o->buf + o->len, tmp, (size_t)n < room ? (size_t)n : room);
    }
    o->len += (size_t)n;
}

/* A fraction clamped to 0..1 (NaN reads as 0): the decoder refuses others. */
static double frac(double v) {
    return v > 0 ? (v < 1 ? v : 1) : 0;
}

size_t sl__proto_usage_encode(const sl_proto_usage_t *u, size_t n, char *buf, size_t cap) {
    out_t o = {buf, cap, 0};
    if (n == 0 || u == NULL) return 0;
    add(&o, ",\"usage\":[");
    for (size_t i = 0; i < n; i++) {
        const sl_proto_usage_t *e = &u[i];
        add(&o, "%s{\"job\":%llu,\"task\":%d", i ? "," : "", (unsigned long long)e->job,
            (int)e->task);
        if (e->has_attempt) add(&o, ",\"attempt\":%u", (unsigned)e->attempt);
        if (e->samples > 0)
            add(&o, ",\"samples\":%lld,\"gpu_util_mean\":%.4f,\"gpu_util_peak\":%.4f",
                (long long)e->samples, frac(e->gpu_util_mean), frac(e->gpu_util_peak));
        if (e->gpu_mem_peak >= 0) add(&o, ",\"gpu_mem_peak\":%lld", (long long)e->gpu_mem_peak);
        if (e->gpu_mem_total >= 0) add(&o, ",\"gpu_mem_total\":%lld", (long long)e->gpu_mem_total);
        if (e->cpu_seconds >= 0 && isfinite(e->cpu_seconds))
            add(&o, ",\"cpu_seconds\":%.3f", e->cpu_seconds);
        if (e->mem_peak >= 0) add(&o, ",\"mem_peak\":%lld", (long long)e->mem_peak);
        if (e->no_nvml) add(&o, ",\"nvml\":false");
        add(&o, "}");
    }
    add(&o, "]");
    return o.len;
}

/* Field k of entry o: an integer in lo..hi (absent: dflt). 0 or -1. */
static int int_field(json_t *o, const char *k, int64_t lo, int64_t hi, int64_t dflt, int64_t *out) {
    json_t *v = json_object_get(o, k);
    if (v == NULL || json_is_null(v)) {
        *out = dflt;
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) return -1;
    *out = json_integer_value(v);
    return 0;
}

/* A number in lo..hi (absent: dflt). 0 or -1. */
static int num_field(json_t *o, const char *k, double lo, double hi, double dflt, double *out) {
    json_t *v = json_object_get(o, k);
    if (v == NULL || json_is_null(v)) {
        *out = dflt;
        return 0;
    }
    double x = json_number_value(v);
    if (!json_is_number(v) || !(x >= lo && x <= hi)) return -1;
    *out = x;
    return 0;
}

int sl__proto_usage_decode(json_t *v, void *(*alloc)(void *ud, size_t n, size_t size), void *ud,
                           const sl_proto_usage_t **out, size_t *n, char *err, size_t errlen) {
    *out = NULL;
    *n = 0;
    if (v == NULL || json_is_null(v)) return 0;
    if (!json_is_array(v)) {
        snprintf(err, errlen, "heartbeat: usage: must be an array of task usages");
        return -1;
    }
    size_t count = json_array_size(v);
    sl_proto_usage_t *u = count ? alloc(ud, count, sizeof *u) : NULL;
    for (size_t i = 0; i < count; i++) {
        json_t *o = json_array_get(v, i);
        sl_proto_usage_t *e = &u[i];
        const char *bad = NULL, *must = NULL;
        int64_t job = 0, task = 0, attempt = -1;
        if (!json_is_object(o)) {
            snprintf(err, errlen, "heartbeat: usage[%zu]: must be an object", i);
            return -1;
        }
        if (json_object_get(o, "job") == NULL || int_field(o, "job", 0, INT64_MAX, 0, &job))
            bad = "job", must = "a job id (a whole number, 0 or more)";
        else if (json_object_get(o, "task") == NULL || int_field(o, "task", 0, INT32_MAX, 0, &task))
            bad = "task", must = "a task index (a whole number, 0 or more)";
        else if (int_field(o, "attempt", 0, INT32_MAX, -1, &attempt))
            bad = "attempt", must = "a whole number from 0 to 2147483647";
        else if (int_field(o, "samples", 0, INT64_MAX, 0, &e->samples))
            bad = "samples", must = "a whole number, 0 or more";
        else if (num_field(o, "gpu_util_mean", 0, 1, 0, &e->gpu_util_mean))
            bad = "gpu_util_mean", must = "a fraction from 0 to 1";
        else if (num_field(o, "gpu_util_peak", 0, 1, 0, &e->gpu_util_peak))
            bad = "gpu_util_peak", must = "a fraction from 0 to 1";
        else if (int_field(o, "gpu_mem_peak", 0, INT64_MAX, -1, &e->gpu_mem_peak))
            bad = "gpu_mem_peak", must = "a number of bytes";
        else if (int_field(o, "gpu_mem_total", 0, INT64_MAX, -1, &e->gpu_mem_total))
            bad = "gpu_mem_total", must = "a number of bytes";
        else if (num_field(o, "cpu_seconds", 0, 1e15, -1, &e->cpu_seconds))
            bad = "cpu_seconds", must = "a number of seconds, 0 or more";
        else if (int_field(o, "mem_peak", 0, INT64_MAX, -1, &e->mem_peak))
            bad = "mem_peak", must = "a number of bytes";
        else if (json_object_get(o, "nvml") && !json_is_null(json_object_get(o, "nvml")) &&
                 !json_is_boolean(json_object_get(o, "nvml")))
            bad = "nvml", must = "true or false";
        e->no_nvml = json_is_false(json_object_get(o, "nvml"));
        if (bad) {
            snprintf(err, errlen, "heartbeat: usage[%zu].%s: must be %s", i, bad, must);
            return -1;
        }
        e->job = (uint64_t)job;
        e->task = (int32_t)task;
        e->has_attempt = attempt >= 0;
        e->attempt = attempt >= 0 ? (uint32_t)attempt : 0;
        if (e->samples == 0) e->gpu_util_mean = e->gpu_util_peak = 0;
    }
    *out = u;
    *n = count;
    return 0;
}
