/*
 * resv.h - advance reservations: whole nodes kept for some tenants during
 * a window of time (Slurm's `scontrol create reservation`).
 *
 * A reservation is a set of whole nodes (named, or picked by the scheduler
 * from a node count or a GPU count), a window [start_us, end_us) and the
 * tenants it admits. The scheduler keeps its nodes for it:
 *  - a job that does not name it never runs on its nodes inside the
 *    window: a job that would still be running at the window's start by
 *    its runtime estimate (its time limit, else its default, else the
 *    scheduler's; none at all means "never ends") does not start there,
 *    just as EASY backfill treats a reserved head job; jobs that end by the
 *    start are backfilled onto its nodes before it;
 *  - a job that names it (sl_job_spec_t.resv, admitted tenants only) runs
 *    only on its nodes, and starts only inside the window. The core does
 *    not stop it at the window's end: the caller does (sluiced stops them).
 * So, with jobs ending by their estimates, the nodes are empty of other
 * jobs at the window's start and a job of the reservation that fits on
 * them starts in the first cycle at or after it (docs/scheduling.md). Two
 * reservations never share a node in overlapping windows.
 *
 * Cost: each placement attempt of a job of no reservation takes the
 * reserved nodes it may not use out of the index for the attempt
 * (O(reserved nodes)); a job of a reservation is placed with a node filter
 * (its reservation's nodes), node by node over the free-capacity classes
 * that can hold it; while a reservation's window lies ahead, the cycle
 * examines pending jobs one by one instead of skipping shape groups (each
 * answered in O(1) by the failed-shape cache when it repeats), since the
 * nodes a job may use then depend on its estimate; once every window has
 * begun, no other job may use their nodes whatever its estimate and the
 * skipping is back. At most SL_RESV_MAX at once.
 */
#ifndef SLUICE_RESV_H
#define SLUICE_RESV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sluice/sched.h"

#define SL_RESV_MAX 32
#define SL_RESV_TENANTS_MAX 16

typedef struct sl_resv_spec {
    const char *name;         /* unique, 1..63 bytes */
    int64_t start_us, end_us; /* the window; end_us > start_us and > now */
    /* Exactly one of: the nodes by id, a count of whole nodes to pick, or a
     * count of GPUs (whole nodes are picked, most GPUs first, until they
     * hold at least that many). Picked nodes are up, in no reservation
     * whose window overlaps, and run no job expected past start_us. */
    const uint32_t *nodes;
    size_t nnodes;
    int32_t node_count;
    int32_t gpus;
    const int32_t *tenants;   /* ids from sl_sched_add_tenant; 1..SL_RESV_TENANTS_MAX */
    size_t ntenants;
    /* Nodes named in `nodes` may still run jobs expected past start_us
     * (start-up, re-adding a stored reservation); otherwise SL_EBUSY. */
    bool ignore_jobs;
} sl_resv_spec_t;

/* A reservation as the scheduler keeps it; pointers are the scheduler's,
 * valid until the next add or remove. */
typedef struct sl_resv_info {
    int32_t id;
    const char *name;
    int64_t start_us, end_us;
    const uint32_t *nodes;
    size_t nnodes;
    const int32_t *tenants;
    size_t ntenants;
    int32_t gpus;             /* GPUs its nodes hold */
} sl_resv_info_t;

/*
 * Adds a reservation at time now_us and returns its id (>= 1, never reused
 * by this scheduler) in *id_out (may be NULL). Errors, with a message in
 * err that names the field: SL_EINVAL (bad name, window, node id, tenant,
 * or not exactly one of nodes / node_count / gpus), SL_EEXIST (name
 * taken), SL_ERANGE (SL_RESV_MAX reservations exist), SL_EBUSY (a named
 * node is in another reservation whose window overlaps, or runs a job
 * expected past the start), SL_ENOSPC (not enough nodes or GPUs can be
 * picked). Nothing changes on failure. O(nodes + running tasks +
 * reservations * their nodes), plus O(nodes log nodes) to pick by GPUs.
 */
int sl_sched_resv_add(sl_sched_t *s, const sl_resv_spec_t *spec, int64_t now_us,
                      int32_t *id_out, char *err, size_t errlen);

/* Removes a reservation. Jobs that name it stay as they are: running ones
 * keep running, pending ones never start (their reason says why).
 * SL_ENOENT if unknown. O(SL_RESV_MAX). */
int sl_sched_resv_remove(sl_sched_t *s, int32_t id);

/* The reservation's id by name, or SL_ENOENT. O(SL_RESV_MAX). */
int sl_sched_resv_find(const sl_sched_t *s, const char *name);

/* Number of reservations; and the i-th (0 <= i < count, by id), or
 * SL_ENOENT for i out of range. O(1). */
size_t sl_sched_resv_count(const sl_sched_t *s);
int sl_sched_resv_at(const sl_sched_t *s, size_t i, sl_resv_info_t *out);

/* Fills *out with reservation id; SL_ENOENT if unknown. O(SL_RESV_MAX). */
int sl_sched_resv_get(const sl_sched_t *s, int32_t id, sl_resv_info_t *out);

/* Whether the reservation admits the tenant; false for unknown ids. */
bool sl_sched_resv_admits(const sl_sched_t *s, int32_t id, int32_t tenant);

#endif
