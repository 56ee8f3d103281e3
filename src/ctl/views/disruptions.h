/*
 * disruptions.h - what interrupts work, in the API (docs/api.md):
 * drains on node objects, preemptions and elastic sizes on job objects,
 * and the bodies of POST /v1/nodes/drain, POST /v1/nodes/resume and
 * GET /v1/jobs/{id}/size. The HTTP adapter routes to these; api.c calls
 * the writers from its job and node objects.
 */
#ifndef SLUICE_CTL_OPSAPI_H
#define SLUICE_CTL_OPSAPI_H

#include "base/buf.h"
#include "domain/drain.h"

/* A node's state as the API shows it: "drained" for a draining node with
 * no task left, else the core's ("up", "draining", "down"). Can't fail. */
const char *ctl_node_state_view(ctl_t *c, uint32_t id);
/* `,"drain":null` or `,"drain":{"reason":..,"since":T,"deadline":T|null,
 * "drained_at":T|null}` (times in RFC 3339, UTC). n may be NULL. */
void ctl_drain_write_json(ctl_t *c, ctl_buf_t *b, const ctl_node_t *n);
/* `,"preemptions":[...]` (every preemption of j, oldest first; read from
 * the store on the first view of a job that was ever requeued) and, for an
 * elastic job, `,"size":N,"size_history":[...]`. */
void ctl_jobx_write_json(ctl_t *c, ctl_buf_t *b, ctl_job_t *j);

/* The requests. Each takes the parsed body (NULL when there is none),
 * writes the reply's JSON into out and returns its HTTP status; a status
 * of 400 or more comes with fe filled (code, field, message) and nothing
 * in out. The caller has checked the token (admin for drain and resume). */
int ctl_api_drain(ctl_t *c, json_t *body, ctl_buf_t *out, ctl_field_err_t *fe);
int ctl_api_resume(ctl_t *c, json_t *body, ctl_buf_t *out, ctl_field_err_t *fe);
/* GET /v1/jobs/{id}/size for job j (the caller checked access):
 * {"job":ID,"state":..,"size":N,"min_tasks":..,"tasks":..,"generation":G}
 * where generation counts j's size changes (an elastic launcher restarts
 * its rendezvous when it moves). */
int ctl_api_job_size(ctl_t *c, ctl_job_t *j, ctl_buf_t *out);

#endif
