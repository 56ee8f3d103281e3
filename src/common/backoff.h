/*
 * backoff.h - the back-off between a failed job's attempts (docs/jobspec.md,
 * "Retries"), the one rule that sluiced applies and docs state.
 *
 * A job of retries N runs at most N + 1 times. After its k-th failure
 * (k = 1, 2, ...) it waits base x 2^(k-1), at most cap, before it goes
 * back to the queue: Kubernetes' pod back-off (10 s doubling to 6 min),
 * with the base and the cap configurable.
 */
#ifndef SLUICE_COMMON_BACKOFF_H
#define SLUICE_COMMON_BACKOFF_H

#include <stdint.h>

/* The wait after the failure-th failure (1 or more; below 1 counts as 1),
 * in ms: base_ms x 2^(failure-1), at most cap_ms (never below 0, never an
 * overflow). Can't fail; O(1). */
int64_t sl_retry_backoff_ms(int64_t base_ms, int64_t cap_ms, int32_t failure);

#endif
