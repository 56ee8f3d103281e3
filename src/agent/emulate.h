/*
 * emulate.h - `sluice-agent --emulate N` (emulate.c): N virtual nodes in one
 * process, each with its own connection to the controller speaking the real
 * agent protocol (conn.c), for measuring the controller at cluster sizes
 * that no test machine has (docs/scale.md), as Kubernetes' KWOK and Slurm's
 * multiple-slurmd mode do.
 */
#ifndef SLUICE_AGENT_EMULATE_H
#define SLUICE_AGENT_EMULATE_H

#include "conn.h"

/* The environment variable of a job that sets how long each of its
 * emulated tasks "runs", in seconds (a number >= 0); absent: until it is
 * cancelled. */
#define AGENT_EMULATED_RUNTIME_ENV "SLUICE_EMULATED_RUNTIME"

/* Most nodes one emulator runs (the five-digit index). */
#define AGENT_EMULATE_MAX 100000

typedef struct agent_emulate_config {
    int nodes;              /* 1..AGENT_EMULATE_MAX */
    const char *prefix;     /* node i is named prefix + "%05d" of i */
    /* The template of every node's connection: host, port, token,
     * heartbeat_s, tls and the node's resources (its name is replaced;
     * usage and ops are the emulator's). Borrowed for the run. */
    agent_conn_config_t conn;
} agent_emulate_config_t;

/*
 * Runs the emulated nodes in base until SIGTERM or SIGINT: creates the
 * nodes, each connecting at once (and reconnecting with the connection's
 * jittered back-off), then dispatches the loop. An emulated task starts
 * when launched (reported started, with a made-up pid) and ends when the
 * timer set by its job's SLUICE_EMULATED_RUNTIME fires (exit code 0) or
 * when killed or fenced (signal 15, at once: there is no process to wait
 * for); its log is a few lines that say so. Nothing survives the process.
 * Returns 0 when stopped by a signal, or -1 (logged) when the open-file
 * limit cannot hold N connections.
 */
int agent_emulate_run(struct event_base *base, const agent_emulate_config_t *cfg);

#endif
