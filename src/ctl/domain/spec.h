/*
 * spec.h - validation of a job submission (spec.c).
 *
 * Included by ctl.h, so that spec.c needs no header of its own beyond it.
 */
#ifndef SLUICE_CTL_SPEC_H
#define SLUICE_CTL_SPEC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/model.h"

struct ctl;

/* Why a submission was refused. */
typedef struct ctl_field_err {
    int status;            /* 400 or 403 */
    const char *code;      /* "invalid_field", "unknown_field", "forbidden" */
    char field[64];
    char message[1100];
} ctl_field_err_t;

/* Validates a submission for tenant (admin: any tenant) and normalises it
 * into a new job (id 0, not registered), which the caller owns. On error
 * returns NULL with the field and message in fe. */
ctl_job_t *ctl_job_from_spec(struct ctl *c, json_t *spec, int32_t tenant, bool admin,
                             ctl_field_err_t *fe);
/* Fills j->core from j->spec, interning its GPU models and pool into the
 * cluster: j then holds one job's reference to each (j->names_held) until
 * ctl_job_release_names. A new job (from ctl_job_from_spec) keeps to the
 * jobs' share of the name tables; a job read back from the store may go
 * past it (it was acknowledged before), which is logged. 0, or -1 with a
 * message in err and no reference taken. */
int ctl_job_core_spec(struct ctl *c, ctl_job_t *j, char *err, size_t errlen);
/* Gives back the references ctl_job_core_spec took, so that a name no job
 * or node uses frees its slot in the cluster's fixed tables. Call it when
 * the job leaves the core for good (finished, cancelled, refused); a no-op
 * for a job that holds none. Can't fail. O(models named). */
void ctl_job_release_names(struct ctl *c, ctl_job_t *j);

#endif
