/*
 * recover.h - start-up: sluiced's state rebuilt from the store.
 */
#ifndef SLUICE_CTL_RECOVER_H
#define SLUICE_CTL_RECOVER_H

#include "domain/ctl.h"

/* Loads nodes, active jobs and the finished jobs within job_retention and
 * max_finished_jobs into memory and the core (c->out must be set: kills
 * for tasks that cannot be re-adopted go through it). 0, after which a
 * failed read of the store is fatal (ctl_store_t.fail_stop); or -1 when a
 * statement failed or a row is not one sluiced writes, with the reason in
 * err, nothing written to the database, and the domain only fit to be
 * closed. Never skips a row it cannot read. */
int ctl_recover(ctl_t *c, char *err, size_t errlen);

#endif
