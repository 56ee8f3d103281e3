/*
 * gpu.c - GPU discovery through NVML loaded at run time.
 *
 * dlopen("libnvidia-ml.so.1") keeps the agent free of any build-time NVIDIA
 * dependency: the same binary runs on GPU nodes and on CPU-only machines
 * (where GPUs, if any, are declared with --gpus). Only the handful of NVML
 * entry points used here are declared, with the types of nvml.h (stable ABI
 * since the _v2 suffixes of CUDA 5.5).
 *
 * The model name is shortened the way users write it in job specs:
 * "NVIDIA H100 80GB HBM3" -> "H100", "NVIDIA A100-SXM4-80GB" -> "A100"
 * (vendor words dropped, first word kept, cut at the first '-').
 * --gpu-model overrides it.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "gpu.h"

typedef struct nvml_memory {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
} nvml_memory_t;

typedef void *nvml_device_t;
typedef int (*nvml_init_fn)(void);
typedef int (*nvml_shutdown_fn)(void);
typedef int (*nvml_count_fn)(unsigned int *);
typedef int (*nvml_handle_fn)(unsigned int, nvml_device_t *);
typedef int (*nvml_name_fn)(nvml_device_t, char *, unsigned int);
typedef int (*nvml_mem_fn)(nvml_device_t, nvml_memory_t *);

static void short_model(const char *full, char *out, size_t len) {
    static const char *vendor[] = {"NVIDIA ", "Tesla ", "GeForce ", "Quadro "};
    const char *p = full;
    for (int again = 1; again;) {
        again = 0;
        for (size_t i = 0; i < sizeof vendor / sizeof vendor[0]; i++) {
            size_t n = strlen(vendor[i]);
            if (strncmp(p, vendor[i], n) == 0 && p[n] != '\0') {
                p += n;
                again = 1;
            }
        }
    }
    size_t n = strcspn(p, " -");
    if (n == 0) n = strlen(p);
    if (n >= len) n = len - 1;
    memcpy(out, p, n);
    out[n] = '\0';
}

int agent_gpu_detect(int *count, char *model, size_t modellen, uint64_t *mem_bytes,
                     char *why, size_t whylen) {
    int rc = -1;
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(why, whylen, "libnvidia-ml.so.1 not found");
        return -1;
    }
    nvml_init_fn init = (nvml_init_fn)dlsym(lib, "nvmlInit_v2");
    nvml_shutdown_fn shutdown = (nvml_shutdown_fn)dlsym(lib, "nvmlShutdown");
    nvml_count_fn getcount = (nvml_count_fn)dlsym(lib, "nvmlDeviceGetCount_v2");
    nvml_handle_fn gethandle = (nvml_handle_fn)dlsym(lib, "nvmlDeviceGetHandleByIndex_v2");
    nvml_name_fn getname = (nvml_name_fn)dlsym(lib, "nvmlDeviceGetName");
    nvml_mem_fn getmem = (nvml_mem_fn)dlsym(lib, "nvmlDeviceGetMemoryInfo");
    if (!init || !shutdown || !getcount || !gethandle || !getname || !getmem) {
        snprintf(why, whylen, "libnvidia-ml.so.1 lacks an NVML entry point");
        goto out;
    }
    int e = init();
    if (e != 0) {
        snprintf(why, whylen, "nvmlInit_v2 failed (NVML error %d)", e);
        goto out;
    }
    unsigned int n = 0;
    if ((e = getcount(&n)) != 0 || n == 0) {
        snprintf(why, whylen, e ? "nvmlDeviceGetCount_v2 failed (NVML error %d)" : "NVML reports no GPU", e);
        shutdown();
        goto out;
    }
    uint64_t minmem = 0;
    char name[96] = "";
    for (unsigned int i = 0; i < n; i++) {
        nvml_device_t dev;
        nvml_memory_t mem;
        if ((e = gethandle(i, &dev)) != 0 || (e = getmem(dev, &mem)) != 0) {
            snprintf(why, whylen, "NVML query of GPU %u failed (NVML error %d)", i, e);
            shutdown();
            goto out;
        }
        if (i == 0 && getname(dev, name, sizeof name) != 0) name[0] = '\0';
        if (i == 0 || mem.total < minmem) minmem = mem.total;
    }
    shutdown();
    *count = (int)n;
    *mem_bytes = minmem;
    short_model(name[0] ? name : "unknown", model, modellen);
    rc = 0;
out:
    dlclose(lib);
    return rc;
}
