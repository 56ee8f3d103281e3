/*
 * gpu.h - the GPU backend: discovery and sampling through NVML loaded at
 * run time (gpu.c). Below the tasks and the connection: main asks it once,
 * at start-up, what the node offers; the exporter (metrics.c) samples it
 * on a timer.
 */
#ifndef SLUICE_AGENT_GPU_H
#define SLUICE_AGENT_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Fills count, model ("H100") and the smallest per-GPU memory in bytes.
 * Returns 0, or -1 when NVML is absent or reports no GPU (*why says which,
 * in words a user can act on). */
int agent_gpu_detect(int *count, char *model, size_t modellen, uint64_t *mem_bytes,
                     char *why, size_t whylen);

/* One reading of one GPU. Each has_* says whether NVML gave that value:
 * a value NVML does not have is absent, never 0. */
typedef struct agent_gpu_sample {
    char uuid[96];          /* "" when NVML did not say */
    bool has_util;
    double util;            /* nvmlDeviceGetUtilizationRates .gpu, as 0..1 */
    bool has_mem;
    uint64_t mem_used;      /* bytes */
    uint64_t mem_total;
    bool has_power;
    double power_w;
    bool has_temp;
    double temp_c;
    /* NVML GPM (Hopper and later), between this sample and the one before
     * (so absent on the first): graphics-engine activity and SM occupancy,
     * each 0..1. */
    bool has_gr_active;
    double gr_active;
    bool has_sm_occupancy;
    double sm_occupancy;
} agent_gpu_sample_t;

typedef struct agent_nvml agent_nvml_t;

/* Loads NVML and opens every GPU it reports for sampling. Returns 0 with
 * *out set, or -1 with *why set (as agent_gpu_detect's). */
int agent_nvml_open(agent_nvml_t **out, char *why, size_t whylen);

/* The number of GPUs NVML reports (fixed while open). Can't fail. */
int agent_nvml_count(const agent_nvml_t *nv);

/* Whether GPU i supports GPM (nvmlGpmQueryDeviceSupport). */
bool agent_nvml_gpm(const agent_nvml_t *nv, int i);

/* Reads GPU i (0 <= i < count) into *s. Values NVML refuses are left
 * absent. O(1) NVML calls; can't fail otherwise. */
void agent_nvml_sample(agent_nvml_t *nv, int i, agent_gpu_sample_t *s);

/* One GPU's health readings (agent_nvml_health); what NVML does not
 * support reads as fine. */
typedef struct agent_gpu_health_reading {
    bool lost;                /* a query failed with NVML_ERROR_GPU_IS_LOST */
    uint64_t ecc_uncorrected; /* volatile uncorrected ECC errors (since the driver loaded) */
    bool remap_pending;       /* row remapping (or page retirement) waits for a reset */
    bool remap_failed;        /* row remapping failed */
    bool thermal;             /* clocks slowed for temperature (HW or SW thermal) */
    bool power;               /* clocks slowed by the power brake or a HW slowdown */
} agent_gpu_health_reading_t;

/* Reads GPU i's health: lost, ECC, remapping, throttling. O(1) NVML
 * calls; can't fail. */
void agent_nvml_health(agent_nvml_t *nv, int i, agent_gpu_health_reading_t *r);

/* Registers for XID critical-error events on every GPU that takes them
 * (nvmlEventSetCreate, nvmlDeviceRegisterEvents). 0, or -1 when this NVML
 * has no event API (no XIDs then; the other readings still work). */
int agent_nvml_events_open(agent_nvml_t *nv);

/* The next XID event, without waiting (nvmlEventSetWait_v2 with a timeout
 * of 0, so the event loop never blocks): 1 with *gpu (its index, -1 when
 * NVML named a device not open here) and *xid, 0 when none is pending. */
int agent_nvml_event_next(agent_nvml_t *nv, int *gpu, int32_t *xid);

/* Shuts NVML down and unloads it. Accepts NULL. */
void agent_nvml_close(agent_nvml_t *nv);

#endif
