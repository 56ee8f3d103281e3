/* testutil.h - shared fixtures for the cmocka unit tests. */
#ifndef SLUICE_TESTUTIL_H
#define SLUICE_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "sluice/sluice.h"

/* Asserts that every block the core allocated has been freed. */
#define SL_ASSERT_NO_LEAKS() assert_int_equal(sl_alloc_live(), 0)

/* The teardown of every unit test: nothing the core allocated is left. */
int tu_teardown(void **state);

/* Adds n identical nodes named prefix-<i>; returns the id of the first. */
uint32_t tu_add_nodes(sl_cluster_t *cl, const char *prefix, int n, const char *cpus,
                      const char *mem, int gpus, const char *model, const char *gpu_mem,
                      const char *pool);

/* A new empty cluster; asserts it was created. The caller destroys it. */
sl_cluster_t *tu_cluster(void);

/* A node spec from raw values (CPU in milli, bytes). */
sl_node_spec_t tu_node_spec(const char *name, int64_t cpu, int64_t mem, int32_t gpus,
                            const char *model, int64_t gpu_mem, const char *pool);

/* Adds the node and fails the test (with the error) if it is refused. */
uint32_t tu_node_add(sl_cluster_t *cl, sl_node_spec_t sp);

/* A task request from user-style quantities; gpu_share is "" or e.g. "0.25". */
sl_task_req_t tu_req(const char *cpus, const char *mem, int gpus, const char *gpu_share);

/* No quota: tenants made with it may use the whole cluster. */
#define TU_NO_QUOTA ((sl_res_t){0, 0, 0})

/* Job ids in the order a callback saw them; ids past the 1024th are dropped. */
typedef struct tu_ids {
    uint64_t v[1024];
    size_t n;
} tu_ids_t;

/* Appends the job's id to the tu_ids_t ud: an sl_sched_cycle start callback. */
void tu_ids_on_start(void *ud, const sl_job_t *job);

/* The same as an sl_sched_foreach callback; returns 0 (go on). */
int tu_ids_each(void *ud, const sl_job_t *job);

/* A scheduler over cl with the named queue and backfill policies and the
 * other defaults; asserts that sl_sched_create succeeds. The caller destroys it. */
sl_sched_t *tu_sched_create(sl_cluster_t *cl, const char *queue, const char *backfill);

/* A job spec of ntasks tasks of task for tenant tn, submitted at time id
 * (so ids give submit order); other fields zero. */
sl_job_spec_t tu_spec(uint64_t id, int tn, int32_t ntasks, sl_task_req_t task);

/* Submits sp and asserts it was accepted (printing the error if not). */
void tu_submit(sl_sched_t *s, sl_job_spec_t sp);

/* Adopts job id (tenant 0) as running since 0: one task of `gpus` whole
 * GPUs (0..gpus-1) on node, with time limit `limit`; asserts it was taken. */
void tu_adopt_one(sl_sched_t *s, uint64_t id, uint32_t node, int gpus, int64_t limit);

/* The state of job id in s. */
sl_job_state_t tu_state(const sl_sched_t *s, uint64_t id);

/* Adds a tenant and asserts it was accepted; returns its id. */
int tu_tenant_add(sl_sched_t *s, const char *name, int32_t weight, sl_res_t quota);

/* A random request over the shapes placement meets: CPU-only, shares with
 * and without GPU memory, whole GPUs, some with a model of cl (T4 or V100);
 * with_pool, also some bound to the "cpu" or "default" pool. Draws from rng
 * only, so a seed fixes the sequence (with_pool draws once more per call). */
sl_task_req_t tu_random_req(sl_rng_t *rng, const sl_cluster_t *cl, bool with_pool);

/* Places one task of r with pol (sl_place_task) and checks the choice
 * against a naive scan that scores every node that fits: SL_FIT exactly when
 * some node fits, and then the chosen node's primary score (score >> 32)
 * equals the best primary of the scan; with same_gpus, score on the chosen
 * node also picks the GPUs the placement chose. Returns whether it placed,
 * with the placement in *pl; allocates nothing. O(nodes * cost of score). */
bool tu_place_check_naive(const sl_place_policy_t *pol, sl_cycle_t *cy, const sl_task_req_t *r,
                          bool same_gpus, sl_place_t *pl);

/* Path of a file under ../shared/traces (SLUICE_TRACES overrides the root). */
const char *tu_trace_path(const char *rel, char *buf, size_t len);

#endif
