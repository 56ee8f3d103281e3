/*
 * nodes.c - Slurm's node semantics in traces: the Sluice CSV's `nodes`
 * ("N" or "min-max", as -N), `tasks_per_node` and `exclusive` columns,
 * turned into the request's node fields (sl_task_req_t), or dropped with
 * --node-fields off so that one trace replays both ways.
 */
#include <stdlib.h>

#include "sim.h"

static int num(const char *s, const char **end, int16_t *out) {
    char *e;
    if (*s < '0' || *s > '9') return -1;
    long v = strtol(s, &e, 10);
    if (v < 1 || v > SL_MAX_TASKS) return -1;
    *out = (int16_t)v;
    *end = e;
    return 0;
}

int sim_nodes_parse(const char *s, int16_t *min, int16_t *max) {
    *min = *max = 0;
    if (!s || !*s) return 0;
    const char *e;
    if (num(s, &e, min) < 0) return -1;
    if (*e == '\0') return 0;
    if (*e != '-' || num(e + 1, &e, max) < 0 || *e != '\0' || *max < *min) {
        *min = *max = 0;
        return -1;
    }
    return 0;
}

void sim_nodes_req(const sim_job_t *j, sl_task_req_t *req) {
    req->nodes_min = j->nodes_min;
    req->nodes_max = j->nodes_max;
    req->tasks_per_node = j->tasks_per_node;
    req->exclusive = j->exclusive ? 1 : 0;
}

void sim_nodes_clear(sl_task_req_t *req) {
    req->nodes_min = req->nodes_max = req->tasks_per_node = 0;
    req->exclusive = 0;
}
