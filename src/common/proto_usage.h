/*
 * proto_usage.h - the usage summary a heartbeat may carry (docs/protocol.md,
 * "heartbeat"): per task, what the agent measured of it since it started.
 * proto.h includes this header and proto.c calls its codec; nothing else
 * should (use proto.h).
 */
#ifndef SLUICE_COMMON_PROTO_USAGE_H
#define SLUICE_COMMON_PROTO_USAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* One task's usage, cumulative since the agent began watching it (so a
 * heartbeat that is lost loses nothing). Absent values are not guessed. */
typedef struct sl_proto_usage {
    uint64_t job;
    int32_t task;
    /* GPU utilisation samples taken (NVML); 0: no GPU data, and then the
     * gpu_util fields are absent. */
    int64_t samples;
    double gpu_util_mean;   /* 0..1: the mean over samples of the mean over its GPUs */
    double gpu_util_peak;   /* 0..1: the highest of any of its GPUs in any sample */
    int64_t gpu_mem_peak;   /* bytes, the most any of its GPUs used; -1: absent */
    int64_t gpu_mem_total;  /* bytes, the memory of each of its GPUs; -1: absent */
    double cpu_seconds;     /* CPU time of its cgroup; < 0: absent */
    int64_t mem_peak;       /* bytes, its cgroup's memory peak; -1: absent */
    bool no_nvml;           /* its GPUs cannot be measured: the node has no NVML
                             * (wire "nvml":false; absent: false) */
    bool has_attempt;       /* the attempt of the task's launch (proto_run.h); */
    uint32_t attempt;       /* absent: has_attempt false */
} sl_proto_usage_t;

/* Writes `,"usage":[...]` for the n entries of u into buf (cap bytes,
 * snprintf semantics: returns the length the text needs, writes what fits,
 * no NUL). n 0 writes nothing. Allocates nothing. */
size_t sl__proto_usage_encode(const sl_proto_usage_t *u, size_t n, char *buf, size_t cap);

/* Decodes a heartbeat's "usage" (v: the array, or NULL/null for none) into
 * an array that alloc(ud, count, size) returns; 0 with *out and *n set, or
 * -1 with "heartbeat: usage[I].FIELD: must be ..." in err. */
int sl__proto_usage_decode(json_t *v, void *(*alloc)(void *ud, size_t n, size_t size), void *ud,
                           const sl_proto_usage_t **out, size_t *n, char *err, size_t errlen);

#endif
