/*
 * eff.h - each job's efficiency (eff.c, docs/metrics-agent.md): the usage
 * its agents report with their heartbeats, kept per task and summed per
 * job, shown by the API and `sluice show`, exported while the job runs,
 * and kept in the store's job_eff table (which this layer writes, and only
 * that table) for running and finished jobs.
 */
#ifndef SLUICE_CTL_EFF_H
#define SLUICE_CTL_EFF_H

#include "base/buf.h"
#include "domain/ctl.h"
#include "proto.h"

/* A running job's job_eff row is rewritten at most this often (seconds);
 * a finished job's at its end and at each later report. */
#define CTL_EFF_WRITE_S 30

/* The usage entries of a heartbeat from node: each for a task placed on
 * that node of a job in memory is kept (others are ignored: a task placed
 * elsewhere since, a job forgotten). O(n x tasks of each job). */
void ctl_eff_report(ctl_t *c, uint32_t node, const sl_proto_usage_t *u, size_t n);

/* The efficiency of j over its tasks in memory. Returns false (and *e
 * all unknown) when none of its tasks reported. O(tasks of j). */
bool ctl_eff_job(const ctl_job_t *j, ctl_eff_t *e);

/* j has ended: its row is written now (in the iteration's transaction),
 * if any of its tasks reported. */
void ctl_eff_job_end(ctl_t *c, ctl_job_t *j);

/* Appends `,"efficiency":{...}` (or null) for j: from its tasks, else,
 * once j has finished, from its job_eff row (read once and cached in j). */
void ctl_eff_write_json(ctl_t *c, ctl_buf_t *b, ctl_job_t *j);

/* Appends `,"gpu_util":[U|null, ...]` for node id: each GPU's utilisation
 * (0..1) between the last two usage reports of the running task holding
 * it (a shared GPU: the highest of its tasks'), null where no running
 * task reported one (free, or not measured). O(tasks on the node). */
void ctl_eff_write_node_json(ctl_t *c, ctl_buf_t *b, uint32_t id);

#endif
