/*
 * cdi.h - the NVIDIA container toolkit's CDI spec (Container Device
 * Interface, kind nvidia.com/gpu), read for an image task's GPUs (cdi.c;
 * docs/containers.md, "GPUs").
 */
#ifndef SLUICE_AGENT_CDI_H
#define SLUICE_AGENT_CDI_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* Where the toolkit writes its specs (nvidia-ctk cdi generate). */
#define AGENT_CDI_DIRS "/etc/cdi:/var/run/cdi"

/*
 * Finds the first spec of kind nvidia.com/gpu in dirs (colon-separated;
 * files *.yaml, *.yml, *.json, in name order) and appends the edits of its
 * devices named gpus[0..n) (nvidia-ctk names them by index: "0", "1") and
 * its own top-level edits: deviceNodes to devs as {"source": hostPath or
 * path, "destination": path}, mounts to mounts as {"source", "destination",
 * "ro"}, env to env ("K=V"). Hooks are not run. Returns 1 with the spec's
 * path in path (plen bytes), 0 when no spec is there (nothing appended), or
 * -1 with reason filled (rlen bytes) when the spec cannot be read or lacks
 * one of the GPUs. Reads files only.
 */
int agent_cdi_edits(const char *dirs, const int32_t *gpus, size_t n, json_t *devs,
                    json_t *mounts, json_t *env, char *path, size_t plen, char *reason,
                    size_t rlen);

#endif
