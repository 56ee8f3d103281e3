/*
 * metrics.h - the agent's exporter (metrics.c, docs/metrics-agent.md): GPU
 * readings sampled on a timer, attributed to the tasks that hold each GPU;
 * GET /metrics in the Prometheus text format on --metrics-listen; the
 * dcgm-exporter job mapping files of --hpc-job-mapping-dir; and each
 * task's usage summary, which the connection adds to its heartbeats.
 *
 * Above the tasks (it reads who holds which GPU through agent_tasks_foreach
 * and is told of changes through agent_tasks_set_watcher) and below the
 * connection, which asks it for the summary through the function pointer
 * that main puts in the connection's config.
 */
#ifndef SLUICE_AGENT_METRICS_H
#define SLUICE_AGENT_METRICS_H

#include <event2/event.h>

#include "cgroup/cgroup.h"
#include "proto.h"
#include "task.h"

typedef struct agent_metrics agent_metrics_t;

typedef struct agent_metrics_config {
    const char *node;        /* the node's name: the "node" label */
    const char *gpu_model;   /* the "model" label ("H100"); NULL: "unknown" */
    int gpus;                /* GPUs the node offers (declared or found) */
    const char *listen;      /* HOST:PORT of GET /metrics; NULL: no endpoint */
    const char *jobmap_dir;  /* dcgm-exporter job mapping directory; NULL: none */
    int sample_ms;           /* NVML sampling interval, >= 100 */
    agent_cgroup_t *cgroup;  /* the tasks' cgroups, for their CPU and memory; NULL: none */
} agent_metrics_config_t;

/*
 * Loads NVML for sampling (absent NVML is not an error: there are then no
 * GPU readings at all), binds the endpoint, creates the mapping directory
 * and writes its files, starts the sampling timer and watches ts. cfg's
 * strings are borrowed and must outlive the exporter. Returns 0 with *out
 * set, or -1 with the reason in err (a listen address that is not
 * HOST:PORT or cannot be bound, a mapping directory that cannot be
 * created).
 */
int agent_metrics_create(struct event_base *base, const agent_metrics_config_t *cfg,
                         agent_tasks_t *ts, agent_metrics_t **out, char *err, size_t errlen);

/* Closes the endpoint and its connections, stops watching the tasks and
 * frees. The mapping files stay (a restarted agent rewrites them). Accepts
 * NULL. */
void agent_metrics_destroy(agent_metrics_t *m);

/* The usage of every task the agent knows, for a heartbeat: an array
 * (malloc'd; the caller frees it) of the returned count of entries, NULL
 * when 0. ud is the exporter (the connection's usage hook). O(tasks). */
size_t agent_metrics_usage(void *ud, sl_proto_usage_t **out);

#endif
