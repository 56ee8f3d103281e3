/*
 * gpuhealth.h - the words of GPU and node health that the agent, the
 * controller and the wire share (docs/health.md): health states, the fixed
 * set of reasons (a label of /metrics, so it never grows with the input),
 * and NVIDIA's XID catalogue reduced to what a scheduler does about each
 * XID.
 *
 * The catalogue (NVIDIA's "XID Errors" document, r555) says for each XID
 * what recovers it. Four actions come out of it:
 *
 *   SL_XID_APP     the application's fault (13 graphics engine exception,
 *                  31 memory page fault, 43 GPU stopped processing, 45
 *                  preemptive cleanup, 68/69 engine exceptions): fail the
 *                  job that caused it; the GPU is fine.
 *   SL_XID_RESET   the GPU needs a reset (48 double-bit ECC, 61/62 micro-
 *                  controller halt, 64 remapping failure, 74 NVLink, 94/95
 *                  contained/uncontained ECC, 119/120 GSP, 140 unrecovered
 *                  ECC): the GPU is unhealthy, its job is stopped.
 *   SL_XID_REBOOT  the node needs a reboot (79 fell off the bus): the GPU
 *                  is unhealthy and the fault is the node's.
 *   SL_XID_WATCH   recorded, the GPU degraded but usable (63 row remap
 *                  recorded, applied at the next reset; 92 high single-bit
 *                  ECC rate), and any XID the table does not know.
 */
#ifndef SLUICE_COMMON_GPUHEALTH_H
#define SLUICE_COMMON_GPUHEALTH_H

#include <stdbool.h>
#include <stdint.h>

typedef enum sl_health_state {
    SL_HEALTH_HEALTHY = 0,
    SL_HEALTH_DEGRADED = 1,  /* usable; an operator should look */
    SL_HEALTH_UNHEALTHY = 2, /* must not run work */
    SL_HEALTH_NSTATES
} sl_health_state_t;

/* Why a GPU or node is not healthy: a fixed set, /metrics' reason label. */
typedef enum sl_health_reason {
    SL_HREASON_NONE = 0,    /* "none" */
    SL_HREASON_XID,         /* "xid": an XID event (its number beside) */
    SL_HREASON_ECC,         /* "ecc_uncorrectable": volatile uncorrectable ECC errors */
    SL_HREASON_REMAP,       /* "remap_pending": row remapping or page retirement pending */
    SL_HREASON_LOST,        /* "gpu_lost": NVML says GPU is lost */
    SL_HREASON_THERMAL,     /* "thermal_slowdown" */
    SL_HREASON_POWER,       /* "power_slowdown" */
    SL_HREASON_CHECK,       /* "health_check": the operator's health command failed */
    SL_HREASON_NREASONS
} sl_health_reason_t;

typedef enum sl_xid_action {
    SL_XID_WATCH = 0,
    SL_XID_APP,
    SL_XID_RESET,
    SL_XID_REBOOT
} sl_xid_action_t;

typedef struct sl_xid_info {
    sl_xid_action_t action;
    const char *what;       /* "fell off the bus"; static */
} sl_xid_info_t;

/* "healthy", "degraded", "unhealthy"; "?" out of range. Can't fail. */
const char *sl_health_state_name(sl_health_state_t s);
/* The state of a name; -1 for an unknown one (*out unchanged). */
int sl_health_state_parse(const char *s, sl_health_state_t *out);
/* The reason's label ("xid", "gpu_lost", ...); "?" out of range. */
const char *sl_health_reason_name(sl_health_reason_t r);
/* The reason of a label; -1 for an unknown one (*out unchanged). */
int sl_health_reason_parse(const char *s, sl_health_reason_t *out);

/* What the catalogue says of XID xid: its action and words ("unknown XID"
 * and SL_XID_WATCH for one it does not list). Pure; O(table); can't fail. */
sl_xid_info_t sl_xid_classify(int32_t xid);
/* "watch", "application", "gpu_reset", "node_reboot". Can't fail. */
const char *sl_xid_action_name(sl_xid_action_t a);
/* The health an XID leaves its GPU in: healthy for an application's fault,
 * degraded for one to watch, unhealthy otherwise. Can't fail. */
sl_health_state_t sl_xid_health(int32_t xid);

#endif
