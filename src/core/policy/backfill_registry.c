/*
 * backfill_registry.c - the static registry of backfill policies (no
 * dlopen: a policy is a const struct linked into libsluice), and "none",
 * the policy without a reservation: strict order, the cycle stops at the
 * first job that cannot start, so nothing ever passes it (no starvation).
 * Lookups are linear over a handful of names.
 */
#include <string.h>

#include "policy/backfill.h"
#include "sluice/error.h"

const sl_backfill_policy_t sl__backfill_none = {
    .name = "none",
    .help = "strict order: the cycle stops at the first job that cannot start",
};

static const sl_backfill_policy_t *const backfill_policies[] = {
    &sl__backfill_none,
    &sl__backfill_easy,
    NULL,
};

const sl_backfill_policy_t *sl_backfill_policy_find(const char *name) {
    if (!name) return NULL;
    for (size_t i = 0; backfill_policies[i]; i++)
        if (strcmp(backfill_policies[i]->name, name) == 0) return backfill_policies[i];
    return NULL;
}

const sl_backfill_policy_t *const *sl_backfill_policy_list(void) {
    return backfill_policies;
}

/* The kinds number the registry's entries. */
int sl_backfill_parse(const char *name, sl_backfill_kind_t *out) {
    if (!name) return SL_EINVAL;
    for (size_t i = 0; backfill_policies[i]; i++) {
        if (strcmp(backfill_policies[i]->name, name) == 0) {
            *out = (sl_backfill_kind_t)i;
            return 0;
        }
    }
    return SL_EINVAL;
}

const char *sl_backfill_name(sl_backfill_kind_t k) {
    if ((unsigned)k < sizeof backfill_policies / sizeof backfill_policies[0] - 1)
        return backfill_policies[k]->name;
    return "unknown";
}
