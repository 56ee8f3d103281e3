/* testutil.h - shared fixtures for the cmocka unit tests. */
#ifndef SLUICE_TESTUTIL_H
#define SLUICE_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
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

/* Path of a file under ../shared/traces (SLUICE_TRACES overrides the root). */
const char *tu_trace_path(const char *rel, char *buf, size_t len);

#endif
