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

/* Adds n identical nodes named prefix-<i>; returns the id of the first. */
uint32_t tu_add_nodes(sl_cluster_t *cl, const char *prefix, int n, const char *cpus,
                      const char *mem, int gpus, const char *model, const char *gpu_mem,
                      const char *pool);

/* A task request from user-style quantities; gpu_share is "" or e.g. "0.25". */
sl_task_req_t tu_req(const char *cpus, const char *mem, int gpus, const char *gpu_share);

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
