/*
 * health_view.h - GPU and node health as the API and /metrics show it
 * (docs/health.md, docs/api.md, docs/metrics.md): read only.
 */
#ifndef SLUICE_CTL_HEALTH_VIEW_H
#define SLUICE_CTL_HEALTH_VIEW_H

#include "base/buf.h"
#include "domain/health.h"

/* Writes `,"health":{...}` for node id: its state, reason and message,
 * and each GPU that is not healthy or is fenced. */
void ctl_health_write_json(ctl_t *c, ctl_buf_t *b, uint32_t id);
/* /metrics: sluice_gpu_health (each GPU that is not healthy or is
 * fenced: 0 healthy, 1 degraded, 2 unhealthy, reason label),
 * sluice_gpu_fenced (each fenced GPU, 1), and sluice_gpu_faults_total by
 * XID. name is the metric's. */
void ctl_health_metric_gpu(ctl_t *c, ctl_buf_t *b, const char *name, int32_t only);
void ctl_health_metric_fenced(ctl_t *c, ctl_buf_t *b, const char *name, int32_t only);
void ctl_health_metric_faults(ctl_t *c, ctl_buf_t *b, const char *name, int32_t only);

#endif
