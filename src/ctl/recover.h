/*
 * recover.h - start-up: sluiced's state rebuilt from the store.
 */
#ifndef SLUICE_CTL_RECOVER_H
#define SLUICE_CTL_RECOVER_H

#include "ctl.h"

/* Loads nodes, active jobs and the finished jobs within job_retention and
 * max_finished_jobs into memory and the core (c->out must be set: kills
 * for tasks that cannot be re-adopted go through it). 0, or -1 when the
 * database cannot be read, with SQLite's message in err. */
int ctl_recover(ctl_t *c, char *err, size_t errlen);

#endif
