/*
 * health.h - what sluiced does about GPU and node faults that agents
 * report in their heartbeats (docs/health.md), by the health: policy of
 * the configuration (base/health_config.h).
 *
 *   an unhealthy GPU   fenced at once (sl_cluster_fence_gpu: no new task
 *                      there, the node serves its other GPUs), or its node
 *                      drained (gpu_fault: drain); the jobs with a task on
 *                      it are stopped with their preemption signal and
 *                      grace and requeued, or failed when their
 *                      on_node_failure says fail, with a reason a person
 *                      reads ("GPU 3 of n7: XID 79, fell off the bus");
 *   a node-level fault an XID the catalogue says needs a reboot, or the
 *                      node's health command failing: the node is drained
 *                      at once (node_fault: drain);
 *   an application XID (13, 31, 43 ...): the job on that GPU fails; the
 *                      GPU is not fenced.
 *
 * A fenced GPU is durable (the gpu_fence table) and stays out until the
 * operator resumes its node (`sluice resume`) or, with clear: check, its
 * agent has reported it healthy for clear_after; a GPU fenced flap_limit
 * times within flap_window is pinned: only resume returns it.
 */
#ifndef SLUICE_CTL_HEALTH_H
#define SLUICE_CTL_HEALTH_H

#include "domain/drain.h"
#include "gpuhealth.h"
#include "proto.h"

#define CTL_HEALTH_MSG 160
#define CTL_HEALTH_XIDS 256 /* XIDs counted one by one for /metrics; higher ones as "other" */

typedef struct ctl_gpu_health {
    sl_health_state_t state;     /* as last reported */
    sl_health_reason_t reason;
    int32_t xid;                 /* the latest XID reported */
    int64_t xids;                /* the agent's count, last seen */
    char message[CTL_HEALTH_MSG];
    bool fenced;
    bool pinned;                 /* flapping: only resume returns it */
    char fence_reason[224];
    int64_t fenced_us;
    int32_t faults;              /* fences within the flap window */
    int64_t window_start_us;
    int64_t healthy_since_mono_us; /* 0: not healthy since the fence */
} ctl_gpu_health_t;

typedef struct ctl_node_health {
    sl_health_state_t state;
    sl_health_reason_t reason;
    char message[CTL_HEALTH_MSG];
    bool drained_by_health;      /* this layer drained it */
    int64_t healthy_since_mono_us;
    ctl_gpu_health_t gpu[SL_MAX_GPUS_PER_NODE];
} ctl_node_health_t;

typedef struct ctl_health {
    ctl_node_health_t **nodes;   /* by core node id; NULL: nothing known */
    size_t n;
    uint64_t faults[CTL_HEALTH_XIDS + 1]; /* XID events by XID; [CTL_HEALTH_XIDS]: higher */
    uint64_t fences;             /* GPUs fenced */
} ctl_health_t;

/* A heartbeat of node carried health report h: acts on it by the policy.
 * O(GPUs reported + tasks on the node). */
void ctl_health_report(ctl_t *c, uint32_t node, const sl_proto_health_t *h);
/* The operator resumes node name: every fenced GPU of it returns to
 * service and its flap count starts again. Returns the number of GPUs
 * returned (durable when it returns), or SL_ENOENT for an unknown node. */
int ctl_health_resume(ctl_t *c, const char *name);
/* Start-up, after the nodes (recover.c): the stored fences back onto their
 * GPUs. 0, or -1 (ctl_store_errmsg says why). */
int ctl_health_restore(ctl_t *c);
/* The sweep's part: GPUs and nodes that a passing check clears (clear:
 * check). O(nodes with health records). */
void ctl_health_sweep(ctl_t *c);
/* What is known of node id's health; NULL when nothing. */
const ctl_node_health_t *ctl_health_node(const ctl_t *c, uint32_t id);
/* Frees the records. Accepts a ctl_t with none. */
void ctl_health_fini(ctl_t *c);

#endif
