/*
 * whole.c - a task's resources on its node (whole.h): the request, or for
 * an exclusive job the node's own totals shared by the job's tasks there.
 */
#include "domain/whole.h"

void ctl_task_res(const ctl_t *c, const ctl_job_t *j, int32_t i, ctl_task_res_t *out) {
    const ctl_task_t *t = &j->tasks[i];
    const sl_task_req_t *r = &j->core.task;
    *out = (ctl_task_res_t){r->cpu_milli, r->mem_bytes, t->gpu_mask};
    const sl_node_t *n = t->node >= 0 ? sl_cluster_node(c->cl, (uint32_t)t->node) : NULL;
    if (!r->exclusive || n == NULL)
        return;
    int32_t here = 0;
    for (int32_t k = 0; k < j->ntasks; k++)
        here += j->tasks[k].node == t->node;
    if (here < 1)
        here = 1;
    out->cpu_milli = n->cpu_total / here;
    out->mem_bytes = n->mem_total / here;
    if (r->gpus == 0 && r->gpu_milli == 0 && n->ngpus > 0)
        out->gpu_mask = n->ngpus >= 32 ? UINT32_MAX : (1u << n->ngpus) - 1;
}
