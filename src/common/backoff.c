/*
 * backoff.c - the back-off between a job's attempts (backoff.h).
 */
#include "backoff.h"

int64_t sl_retry_backoff_ms(int64_t base_ms, int64_t cap_ms, int32_t failure) {
    if (base_ms < 0)
        base_ms = 0;
    if (cap_ms < 0)
        cap_ms = 0;
    int64_t w = base_ms;
    for (int32_t k = 1; k < failure && w < cap_ms; k++)
        w = w > INT64_MAX / 2 ? INT64_MAX : 2 * w;
    return w < cap_ms ? w : cap_ms;
}
