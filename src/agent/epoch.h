/*
 * epoch.h - the agent's epoch mark on disk (epoch.c): the highest
 * controller epoch it has accepted and the cluster instance it came from
 * (proto_epoch.h has the rule), in WORKDIR/epoch, so that an agent that
 * restarts still refuses a controller older than one it obeyed before
 * (docs/protocol.md, "Controllers and epochs").
 */
#ifndef SLUICE_AGENT_EPOCH_H
#define SLUICE_AGENT_EPOCH_H

#include <stddef.h>

#include "proto_epoch.h"

/* The mark's file of the agent whose work directory is workdir,
 * WORKDIR/epoch, into buf. */
void agent_epoch_path(const char *workdir, char *buf, size_t len);

/* Reads the mark at path into *mk. A missing file is a zeroed mark
 * (nothing accepted yet): 0. A file that cannot be read or is not a mark
 * (sl_epoch_mark_format's line): -1 with "PATH: why" in err, *mk zeroed;
 * the agent then does not start, since it cannot tell which controllers
 * are deposed. */
int agent_epoch_load(const char *path, sl_epoch_mark_t *mk, char *err, size_t errlen);

/* Writes *mk to path durably: a temporary file, fsync, rename(2), fsync of
 * the directory, so that the file holds the old mark or the new one,
 * never half, also across a crash. 0, or -errno (the old file is left as
 * it was); the caller logs it. */
int agent_epoch_save(const char *path, const sl_epoch_mark_t *mk);

#endif
