/*
 * steps.h - job steps (steps.c): srun's POST /v1/jobs/{id}/steps, whose
 * reply streams the step's ranks' output and ends, and POST
 * /v1/jobs/{id}/steps/control (signals, srun --pty's input); the ranks placed on the allocation's tasks
 * and started through the agents (proto_step.h, docs/slurm.md).
 *
 * The HTTP adapter hands it the requests it routes there; the agent port
 * hands it the agents' step messages (ctl_steps_agent_msg, through the
 * callback main.c wires) and sends its step_run and step_signal through
 * the sender main.c wires the other way (ctl_steps_t.send).
 */
#ifndef SLUICE_CTL_STEPS_H
#define SLUICE_CTL_STEPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "domain/ctl.h"
#include "net/hconn.h"

struct evhttp_request;
struct event;
typedef struct ctl_step ctl_step_t;

/* Sends one encoded line to node's agent at once: 0, or a negative error
 * when it is not connected. */
typedef int (*ctl_steps_send_fn)(void *ud, uint32_t node, const char *line, size_t len);

typedef struct ctl_steps {
    ctl_t *c;
    ctl_hconns_t *conns;   /* the API's connections, for the replies that are not streams */
    ctl_steps_send_fn send;
    void *send_ud;
    ctl_step_t *steps;     /* running steps, newest first */
    struct ctl_step_ids *ids; /* each allocation's next step id */
    struct event *tick;    /* every second: a keep-alive line, and streams whose srun left */
} ctl_steps_t;

/* Sets up s for c (conns borrowed). Can't fail. */
void ctl_steps_init(ctl_steps_t *s, ctl_t *c, ctl_hconns_t *conns);
/* Ends every stream (their requests are freed with the HTTP server). */
void ctl_steps_fini(ctl_steps_t *s);

/*
 * POST /v1/jobs/{job}/steps. Who asks: admin, or tenant (a core tenant id,
 * -1 for none) whose token it was, or step_token (non-NULL: a token of the
 * step form, checked here against the job's own). Answers 4xx with a JSON
 * error naming the srun option at fault, or 200 with a stream of JSON
 * lines (docs/api.md) that ends with {"type":"end","exit_code":N}.
 */
void ctl_steps_http(ctl_steps_t *s, struct evhttp_request *req, uint64_t job, bool admin,
                    int32_t tenant, const char *step_token);
/* POST /v1/jobs/{job}/steps/control: {"step":S,"signal":N} signals every
 * rank, {"step":S,"stdin":"..."} is input for a --pty step's rank 0: 202,
 * or 4xx naming the field. */
void ctl_steps_http_signal(ctl_steps_t *s, struct evhttp_request *req, uint64_t job, bool admin,
                           int32_t tenant, const char *step_token);

/* An agent's message o from node: true when it was a step message (handled),
 * false otherwise (the agent port goes on with it). ud is the ctl_steps_t. */
bool ctl_steps_agent_msg(void *ud, uint32_t node, json_t *o);

#endif
