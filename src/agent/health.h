/*
 * health.h - the node's and its GPUs' health, as the agent sees it
 * (docs/health.md): NVML readings and XID events on a timer, and the
 * operator's health command (Slurm's HealthCheckProgram contract: exit 0
 * is healthy, anything else is not, the first line of its output says
 * why) run at an interval with a timeout, in a child process the loop
 * never waits on. Each heartbeat carries the report (conn.h's health).
 */
#ifndef SLUICE_AGENT_HEALTH_H
#define SLUICE_AGENT_HEALTH_H

#include <stdbool.h>
#include <stdint.h>

#include <event2/event.h>

#include "proto.h"

typedef struct agent_health agent_health_t;

typedef struct agent_health_config {
    bool nvml;               /* watch the GPUs through NVML (its own handle) */
    int64_t poll_ms;         /* NVML readings and XID events: every this often */
    int64_t xid_hold_ms;     /* an XID keeps its GPU at its state this long */
    const char *command;     /* run with /bin/sh -c; NULL: none */
    int64_t interval_ms;     /* between the command's starts */
    int64_t timeout_ms;      /* a run still going this long is killed (SIGKILL to its group) */
    /* Called (from the loop) when a state got worse or better, so that the
     * connection sends a heartbeat at once; may be NULL. */
    void (*changed)(void *ud);
    void *changed_ud;
} agent_health_config_t;

/* Starts watching: the first NVML reading and the first command run come
 * one poll_ms / at once after creation. 0 with *out; -1 with err (no NVML
 * when the config asks for it is not an error: the GPUs are then not
 * watched, and logged). cfg's strings are borrowed. */
int agent_health_create(struct event_base *base, const agent_health_config_t *cfg,
                        agent_health_t **out, char *err, size_t errlen);

/* The report for the heartbeat about to go, into *out (its arrays and
 * strings are h's, valid until the next call or tick). A report lists the
 * node's state and every GPU that is not healthy or has seen an XID;
 * GPUs it does not list are healthy. Returns false (send none) when all
 * is healthy, nothing changed for the last 3 reports, this is not every
 * 5th and not the first of a connection (first), and never when nothing
 * is watched (no NVML, no command): a
 * healthy node costs the controller a full decode only sometimes. Can't
 * fail. */
bool agent_health_report(void *h, bool first, sl_proto_health_t *out);

/* Kills a command still running (and reaps it), stops the timers, frees.
 * Accepts NULL. */
void agent_health_destroy(agent_health_t *h);

#endif
