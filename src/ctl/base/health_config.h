/*
 * health_config.h - the health: section of sluiced's configuration
 * (docs/config.md "Health", docs/health.md): what the controller does
 * about a GPU or node its agent reports unhealthy.
 */
#ifndef SLUICE_CTL_HEALTH_CONFIG_H
#define SLUICE_CTL_HEALTH_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "yamldoc.h"

typedef enum { CTL_GPU_FAULT_FENCE = 0, CTL_GPU_FAULT_DRAIN, CTL_GPU_FAULT_NONE } ctl_gpu_fault_t;
typedef enum { CTL_CLEAR_RESUME = 0, CTL_CLEAR_CHECK } ctl_health_clear_t;

typedef struct ctl_health_cfg {
    ctl_gpu_fault_t gpu_fault;  /* an unhealthy GPU: fence it (default), drain its node, nothing */
    bool node_drain;            /* a node-level fault drains the node (default true) */
    bool fence_degraded;        /* a degraded GPU is fenced too (default false) */
    bool fail_app_xid;          /* an application's XID fails its job (default true) */
    ctl_health_clear_t clear;   /* resume only (default), or also a passing check */
    int64_t clear_after_ms;     /* healthy this long before a check clears (default 300 s) */
    int32_t flap_limit;         /* fences within flap_window after which only resume clears (3) */
    int64_t flap_window_ms;     /* default 3600 s */
} ctl_health_cfg_t;

/* The defaults. Can't fail. */
void ctl_health_cfg_init(ctl_health_cfg_t *h);

/* Reads the health: mapping m of the file path into h (keys absent keep
 * their value). 0, or -1 with "PATH:LINE: health.KEY: ..." in err. */
int ctl_health_cfg_load(ctl_health_cfg_t *h, const sl_yaml_node_t *m, const char *path, char *err,
                        size_t errlen);

#endif
