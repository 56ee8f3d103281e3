/*
 * gpu.h - GPU discovery (NVML loaded at run time; see gpu.c). Below the
 * tasks and the connection: main asks it once, at start-up, what the node
 * offers.
 */
#ifndef SLUICE_AGENT_GPU_H
#define SLUICE_AGENT_GPU_H

#include <stddef.h>
#include <stdint.h>

/* Fills count, model ("H100") and the smallest per-GPU memory in bytes.
 * Returns 0, or -1 when NVML is absent or reports no GPU (*why says which,
 * in words a user can act on). */
int agent_gpu_detect(int *count, char *model, size_t modellen, uint64_t *mem_bytes,
                     char *why, size_t whylen);

#endif
