/*
 * backfill.h - the backfill policies of the registry (backfill_registry.c
 * lists them; policy.h states the interface). Private to src/core.
 */
#ifndef SLUICE_POLICY_BACKFILL_H
#define SLUICE_POLICY_BACKFILL_H

#include "sluice/policy.h"

extern const sl_backfill_policy_t sl__backfill_none; /* backfill_registry.c */
extern const sl_backfill_policy_t sl__backfill_easy; /* backfill_easy.c */

#endif
