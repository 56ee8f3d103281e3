/*
 * reservations.h - advance reservations in sluiced (docs/scheduling.md,
 * `sluice reservation`, `scontrol create reservation`).
 *
 * The core keeps a reservation's nodes for its window (sluice/resv.h);
 * sluiced makes it durable (the reservations table), gives it back to the
 * core at start-up, and ends it: at the window's end (or when an admin
 * deletes it) the jobs that name it are stopped if running and failed if
 * pending, with a reason naming the reservation, and the row is deleted.
 * Slurm, by default, also ends a reservation at its end time; it lets the
 * jobs run on as ordinary jobs, which here could delay the next
 * reservation of the same nodes, so they stop as a time limit would stop
 * them.
 */
#ifndef SLUICE_CTL_RESERVATIONS_H
#define SLUICE_CTL_RESERVATIONS_H

#include <stddef.h>
#include <stdint.h>

#include "domain/ctl.h"

/* A request to create one; the strings are the caller's. */
typedef struct ctl_resv_req {
    const char *name;              /* NULL or "": "resv-<id>" */
    int64_t start_us, end_us;      /* wall clock */
    const char *const *nodes;      /* node names, or NULL */
    size_t nnodes;
    int32_t node_count, gpus;      /* or a count of nodes or GPUs to pick */
    const char *const *tenants;    /* tenant names */
    size_t ntenants;
} ctl_resv_req_t;

/* Creates a reservation and makes it durable. 0 with *id, or the core's
 * SL_E* code (SL_EINVAL, SL_EEXIST, SL_EBUSY, SL_ENOSPC, SL_ERANGE) or
 * SL_ENOENT for an unknown node or tenant, with the field in field and
 * the message in err. O(nodes + running tasks). */
int ctl_resv_create(ctl_t *c, const ctl_resv_req_t *rq, int32_t *id, char *field,
                    size_t fieldlen, char *err, size_t errlen);
/* Ends the reservation now (as at its window's end, reason "deleted"):
 * its jobs stop or fail, its row goes. 0 with *njobs (jobs ended), or
 * SL_ENOENT. */
int ctl_resv_delete(ctl_t *c, const char *name, int32_t *njobs);
/* Start-up (recover.c, after the nodes, before the jobs): the stored
 * reservations back into the core; one whose window ended meanwhile is
 * deleted, an unknown node or tenant dropped from it (logged). 0, or -1
 * (ctl_store_errmsg says why). */
int ctl_resvs_restore(ctl_t *c);
/* The sweep's part: ends reservations whose window is over, and asks for
 * a scheduling cycle when a window has begun since the last sweep (its
 * jobs may start). O(reservations). */
void ctl_resv_sweep(ctl_t *c);

#endif
