/*
 * whole.h - what a task holds on its node: its request, or for a job that
 * asked for whole nodes (exclusive) the node's share of the job: the
 * node's CPUs and memory divided among the job's tasks there and, when
 * the job asked for no GPUs per task, every GPU of the node (Slurm's
 * --exclusive: the job is given all of each node). What the launch
 * enforces (views/batch.c) and `sluice show` prints (views/api.c).
 */
#ifndef SLUICE_CTL_WHOLE_H
#define SLUICE_CTL_WHOLE_H

#include <stdint.h>

#include "domain/ctl.h"

typedef struct ctl_task_res {
    int64_t cpu_milli;
    int64_t mem_bytes;
    uint32_t gpu_mask;
} ctl_task_res_t;

/* Task i of j (placed). Can't fail; O(tasks of j). */
void ctl_task_res(const ctl_t *c, const ctl_job_t *j, int32_t i, ctl_task_res_t *out);

#endif
