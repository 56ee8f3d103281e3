/*
 * queue_registry.c - the static registries of queue policies and backfill
 * kinds (no dlopen: a policy is a const struct linked into libsluice).
 * Lookups are linear over a handful of names.
 */
#include <string.h>

#include "sched_internal.h"
#include "sluice/error.h"

static const sl_queue_policy_t *const queue_policies[] = {
    &sl__queue_fifo,
    &sl__queue_priority,
    &sl__queue_drf,
    &sl__queue_wfq,
    NULL,
};

const sl_queue_policy_t *sl_queue_policy_find(const char *name) {
    if (!name) return NULL;
    for (size_t i = 0; queue_policies[i]; i++)
        if (strcmp(queue_policies[i]->name, name) == 0) return queue_policies[i];
    return NULL;
}

const sl_queue_policy_t *const *sl_queue_policy_list(void) {
    return queue_policies;
}

int sl_backfill_parse(const char *name, sl_backfill_kind_t *out) {
    if (!name) return SL_EINVAL;
    if (strcmp(name, "none") == 0) {
        *out = SL_BACKFILL_NONE;
        return 0;
    }
    if (strcmp(name, "easy") == 0) {
        *out = SL_BACKFILL_EASY;
        return 0;
    }
    return SL_EINVAL;
}

const char *sl_backfill_name(sl_backfill_kind_t k) {
    switch (k) {
    case SL_BACKFILL_NONE: return "none";
    case SL_BACKFILL_EASY: return "easy";
    }
    return "unknown";
}
