/*
 * queue_registry.c - the static registry of queue policies (no dlopen: a
 * policy is a const struct linked into libsluice).
 * Lookups are linear over a handful of names.
 */
#include <string.h>

#include "sched_internal.h"

static const sl_queue_policy_t *const queue_policies[] = {
    &sl__queue_fifo,
    &sl__queue_priority,
    &sl__queue_drf,
    &sl__queue_wfq,
    &sl__queue_las,
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
