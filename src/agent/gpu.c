/*
 * gpu.c - GPU discovery through NVML loaded at run time.
 *
 * dlopen("libnvidia-ml.so.1") keeps the agent free of any build-time NVIDIA
 * dependency: the same binary runs on GPU nodes and on CPU-only machines
 * (where GPUs, if any, are declared with --gpus). Only the handful of NVML
 * entry points used here are declared, with the types of nvml.h (stable ABI
 * since the _v2 suffixes of CUDA 5.5).
 *
 * Sampling (agent_nvml_*) keeps the library loaded and one handle per
 * GPU. Each reading asks for utilisation, memory, power, temperature and
 * UUID; a call that fails (NVML_ERROR_NOT_SUPPORTED on many boards for
 * power or temperature) leaves that value absent rather than 0. On GPUs
 * where nvmlGpmQueryDeviceSupport says so (Hopper and later), GPM metrics
 * come from two GPM samples: each reading takes a new one and computes
 * graphics-engine activity and SM occupancy over the interval since the
 * previous reading, then keeps the new sample for the next. The GPM entry
 * points are optional: an older driver without them just has no GPM.
 *
 * The model name is shortened the way users write it in job specs:
 * "NVIDIA H100 80GB HBM3" -> "H100", "NVIDIA A100-SXM4-80GB" -> "A100"
 * (vendor words dropped, first word kept, cut at the first '-').
 * --gpu-model overrides it.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
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

typedef struct nvml_utilization {
    unsigned int gpu;
    unsigned int memory;
} nvml_utilization_t;

/* GPM (nvml.h, NVML_GPM_SUPPORT_VERSION and NVML_GPM_METRICS_GET_VERSION
 * 1). The library reads metrics[0..numMetrics), so an array of the two we
 * ask for is enough. */
typedef void *nvml_gpm_sample_t;
typedef struct nvml_gpm_support {
    unsigned int version;
    unsigned int isSupportedDevice;
} nvml_gpm_support_t;
typedef struct nvml_gpm_metric {
    unsigned int metricId;
    int nvmlReturn;
    double value;
    struct {
        char *shortName, *longName, *unit;
    } metricInfo;
} nvml_gpm_metric_t;
#define GPM_GRAPHICS_UTIL 1 /* NVML_GPM_METRIC_GRAPHICS_UTIL, percent */
#define GPM_SM_OCCUPANCY 3  /* NVML_GPM_METRIC_SM_OCCUPANCY, percent */
typedef struct nvml_gpm_get {
    unsigned int version;
    unsigned int numMetrics;
    nvml_gpm_sample_t sample1;
    nvml_gpm_sample_t sample2;
    nvml_gpm_metric_t metrics[2];
} nvml_gpm_get_t;

/* nvmlEventData_t, and the one event type asked for. */
typedef struct nvml_event_data {
    nvml_device_t device;
    unsigned long long type;
    unsigned long long data;    /* the XID, for an XID critical error */
    unsigned int gpu_instance, compute_instance;
} nvml_event_data_t;
#define NVML_EVENT_XID 0x8ULL   /* nvmlEventTypeXidCriticalError */
#define NVML_GPU_IS_LOST 15     /* NVML_ERROR_GPU_IS_LOST */

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

/* The NVML entry points both discovery and sampling need, and the GPU
 * count, from a library loaded and initialised by nvml_start. */
typedef struct nvml_core {
    void *lib;
    nvml_shutdown_fn shutdown;
    nvml_handle_fn gethandle;
    nvml_name_fn getname;
    nvml_mem_fn getmem;
    unsigned int n;
} nvml_core_t;

/* Loads libnvidia-ml.so.1, initialises it and counts its GPUs (1..1024).
 * 0, or -1 with why said and nothing left loaded. */
static int nvml_start(nvml_core_t *nc, char *why, size_t whylen) {
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(why, whylen, "libnvidia-ml.so.1 not found");
        return -1;
    }
    nvml_init_fn init = (nvml_init_fn)dlsym(lib, "nvmlInit_v2");
    nvml_count_fn getcount = (nvml_count_fn)dlsym(lib, "nvmlDeviceGetCount_v2");
    *nc = (nvml_core_t){
        .lib = lib,
        .shutdown = (nvml_shutdown_fn)dlsym(lib, "nvmlShutdown"),
        .gethandle = (nvml_handle_fn)dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"),
        .getname = (nvml_name_fn)dlsym(lib, "nvmlDeviceGetName"),
        .getmem = (nvml_mem_fn)dlsym(lib, "nvmlDeviceGetMemoryInfo"),
    };
    int e;
    if (!init || !getcount || !nc->shutdown || !nc->gethandle || !nc->getname || !nc->getmem) {
        snprintf(why, whylen, "libnvidia-ml.so.1 lacks an NVML entry point");
    } else if ((e = init()) != 0) {
        snprintf(why, whylen, "nvmlInit_v2 failed (NVML error %d)", e);
    } else if ((e = getcount(&nc->n)) != 0 || nc->n == 0 || nc->n > 1024) {
        snprintf(why, whylen, e ? "nvmlDeviceGetCount_v2 failed (NVML error %d)" : "NVML reports no GPU", e);
        nc->shutdown();
    } else {
        return 0;
    }
    dlclose(lib);
    return -1;
}

static void nvml_stop(nvml_core_t *nc) {
    nc->shutdown();
    dlclose(nc->lib);
}

int agent_gpu_detect(int *count, char *model, size_t modellen, uint64_t *mem_bytes,
                     char *why, size_t whylen) {
    nvml_core_t nc;
    if (nvml_start(&nc, why, whylen) < 0) return -1;
    uint64_t minmem = 0;
    char name[96] = "";
    for (unsigned int i = 0; i < nc.n; i++) {
        nvml_device_t dev;
        nvml_memory_t mem;
        int e;
        if ((e = nc.gethandle(i, &dev)) != 0 || (e = nc.getmem(dev, &mem)) != 0) {
            snprintf(why, whylen, "NVML query of GPU %u failed (NVML error %d)", i, e);
            nvml_stop(&nc);
            return -1;
        }
        if (i == 0 && nc.getname(dev, name, sizeof name) != 0) name[0] = '\0';
        if (i == 0 || mem.total < minmem) minmem = mem.total;
    }
    nvml_stop(&nc);
    *count = (int)nc.n;
    *mem_bytes = minmem;
    short_model(name[0] ? name : "unknown", model, modellen);
    return 0;
}

/* ---- sampling ---- */

struct agent_nvml {
    nvml_core_t core;
    int (*getutil)(nvml_device_t, nvml_utilization_t *);
    int (*getpower)(nvml_device_t, unsigned int *);
    int (*gettemp)(nvml_device_t, int, unsigned int *);
    int (*getuuid)(nvml_device_t, char *, unsigned int);
    int (*gpm_query)(nvml_device_t, nvml_gpm_support_t *);
    int (*gpm_alloc)(nvml_gpm_sample_t *);
    int (*gpm_free)(nvml_gpm_sample_t);
    int (*gpm_get)(nvml_device_t, nvml_gpm_sample_t);
    int (*gpm_metrics)(nvml_gpm_get_t *);
    /* Health (agent_nvml_health, the XID events): each optional. */
    int (*ecc)(nvml_device_t, int, int, unsigned long long *);
    int (*remapped)(nvml_device_t, unsigned int *, unsigned int *, unsigned int *, unsigned int *);
    int (*retired_pending)(nvml_device_t, int *);
    int (*throttle)(nvml_device_t, unsigned long long *);
    int (*ev_create)(void **);
    int (*ev_free)(void *);
    int (*ev_register)(nvml_device_t, unsigned long long, void *);
    int (*ev_wait)(void *, nvml_event_data_t *, unsigned int);
    void *evset;                /* NULL: no events */
    int count;
    struct {
        nvml_device_t dev;
        bool gpm;
        bool have_prev;             /* prev holds a sample */
        nvml_gpm_sample_t prev, cur;
    } gpu[];
};

int agent_nvml_open(agent_nvml_t **out, char *why, size_t whylen) {
    nvml_core_t nc;
    if (nvml_start(&nc, why, whylen) < 0) return -1;
    unsigned int n = nc.n;
    agent_nvml_t *nv = calloc(1, sizeof *nv + n * sizeof nv->gpu[0]);
    if (!nv) abort();
    nv->core = nc;
    nv->count = (int)n;
    /* Optional entry points: a NULL one leaves its value absent. */
    void *lib = nc.lib;
    *(void **)&nv->getutil = dlsym(lib, "nvmlDeviceGetUtilizationRates");
    *(void **)&nv->getpower = dlsym(lib, "nvmlDeviceGetPowerUsage");
    *(void **)&nv->gettemp = dlsym(lib, "nvmlDeviceGetTemperature");
    *(void **)&nv->getuuid = dlsym(lib, "nvmlDeviceGetUUID");
    *(void **)&nv->gpm_query = dlsym(lib, "nvmlGpmQueryDeviceSupport");
    *(void **)&nv->gpm_alloc = dlsym(lib, "nvmlGpmSampleAlloc");
    *(void **)&nv->gpm_free = dlsym(lib, "nvmlGpmSampleFree");
    *(void **)&nv->gpm_get = dlsym(lib, "nvmlGpmSampleGet");
    *(void **)&nv->gpm_metrics = dlsym(lib, "nvmlGpmMetricsGet");
    *(void **)&nv->ecc = dlsym(lib, "nvmlDeviceGetTotalEccErrors");
    *(void **)&nv->remapped = dlsym(lib, "nvmlDeviceGetRemappedRows");
    *(void **)&nv->retired_pending = dlsym(lib, "nvmlDeviceGetRetiredPagesPendingStatus");
    *(void **)&nv->throttle = dlsym(lib, "nvmlDeviceGetCurrentClocksThrottleReasons");
    *(void **)&nv->ev_create = dlsym(lib, "nvmlEventSetCreate");
    *(void **)&nv->ev_free = dlsym(lib, "nvmlEventSetFree");
    *(void **)&nv->ev_register = dlsym(lib, "nvmlDeviceRegisterEvents");
    *(void **)&nv->ev_wait = dlsym(lib, "nvmlEventSetWait_v2");
    bool gpm_api = nv->gpm_query && nv->gpm_alloc && nv->gpm_free && nv->gpm_get && nv->gpm_metrics;
    for (unsigned int i = 0; i < n; i++) {
        if (nc.gethandle(i, &nv->gpu[i].dev) != 0) nv->gpu[i].dev = NULL;
        nvml_gpm_support_t sup = {.version = 1};
        if (gpm_api && nv->gpu[i].dev && nv->gpm_query(nv->gpu[i].dev, &sup) == 0 &&
            sup.isSupportedDevice && nv->gpm_alloc(&nv->gpu[i].prev) == 0) {
            if (nv->gpm_alloc(&nv->gpu[i].cur) == 0)
                nv->gpu[i].gpm = true;
            else
                nv->gpm_free(nv->gpu[i].prev);
        }
    }
    *out = nv;
    return 0;
}

int agent_nvml_count(const agent_nvml_t *nv) {
    return nv->count;
}

bool agent_nvml_gpm(const agent_nvml_t *nv, int i) {
    return i >= 0 && i < nv->count && nv->gpu[i].gpm;
}

/* GPM over the interval since the previous reading of GPU i. */
static void gpm_sample(agent_nvml_t *nv, int i, agent_gpu_sample_t *s) {
    if (nv->gpm_get(nv->gpu[i].dev, nv->gpu[i].cur) != 0) return;
    if (nv->gpu[i].have_prev) {
        nvml_gpm_get_t g = {.version = 1, .numMetrics = 2, .sample1 = nv->gpu[i].prev,
                            .sample2 = nv->gpu[i].cur};
        g.metrics[0].metricId = GPM_GRAPHICS_UTIL;
        g.metrics[1].metricId = GPM_SM_OCCUPANCY;
        if (nv->gpm_metrics(&g) == 0) {
            if (g.metrics[0].nvmlReturn == 0 && g.metrics[0].value >= 0) {
                s->has_gr_active = true;
                s->gr_active = g.metrics[0].value > 100 ? 1.0 : g.metrics[0].value / 100.0;
            }
            if (g.metrics[1].nvmlReturn == 0 && g.metrics[1].value >= 0) {
                s->has_sm_occupancy = true;
                s->sm_occupancy = g.metrics[1].value > 100 ? 1.0 : g.metrics[1].value / 100.0;
            }
        }
    }
    nvml_gpm_sample_t t = nv->gpu[i].prev;
    nv->gpu[i].prev = nv->gpu[i].cur;
    nv->gpu[i].cur = t;
    nv->gpu[i].have_prev = true;
}

void agent_nvml_sample(agent_nvml_t *nv, int i, agent_gpu_sample_t *s) {
    memset(s, 0, sizeof *s);
    if (i < 0 || i >= nv->count || !nv->gpu[i].dev) return;
    nvml_device_t dev = nv->gpu[i].dev;
    nvml_utilization_t u;
    if (nv->getutil && nv->getutil(dev, &u) == 0 && u.gpu <= 100) {
        s->has_util = true;
        s->util = u.gpu / 100.0;
    }
    nvml_memory_t m;
    if (nv->core.getmem(dev, &m) == 0) {
        s->has_mem = true;
        s->mem_used = m.used;
        s->mem_total = m.total;
    }
    unsigned int v;
    if (nv->getpower && nv->getpower(dev, &v) == 0) {
        s->has_power = true;
        s->power_w = v / 1000.0;
    }
    if (nv->gettemp && nv->gettemp(dev, 0 /* NVML_TEMPERATURE_GPU */, &v) == 0) {
        s->has_temp = true;
        s->temp_c = v;
    }
    if (!nv->getuuid || nv->getuuid(dev, s->uuid, sizeof s->uuid) != 0) s->uuid[0] = '\0';
    s->uuid[sizeof s->uuid - 1] = '\0';
    if (nv->gpu[i].gpm) gpm_sample(nv, i, s);
}

void agent_nvml_health(agent_nvml_t *nv, int i, agent_gpu_health_reading_t *r) {
    memset(r, 0, sizeof *r);
    if (i < 0 || i >= nv->count || !nv->gpu[i].dev) {
        r->lost = true; /* NVML gave no handle for it */
        return;
    }
    nvml_device_t dev = nv->gpu[i].dev;
    nvml_memory_t m;
    if (nv->core.getmem(dev, &m) == NVML_GPU_IS_LOST) {
        r->lost = true;
        return;
    }
    unsigned long long n;
    /* NVML_MEMORY_ERROR_TYPE_UNCORRECTED (1), NVML_VOLATILE_ECC (0). */
    if (nv->ecc && nv->ecc(dev, 1, 0, &n) == 0) r->ecc_uncorrected = n;
    unsigned int corr, unc, pend, failed;
    if (nv->remapped && nv->remapped(dev, &corr, &unc, &pend, &failed) == 0) {
        r->remap_pending = pend != 0;
        r->remap_failed = failed != 0;
    }
    int rp;
    if (nv->retired_pending && nv->retired_pending(dev, &rp) == 0 && rp) r->remap_pending = true;
    /* nvmlClocksThrottleReason*: SwThermal 0x20, HwThermal 0x40;
     * HwSlowdown 0x8, HwPowerBrake 0x80. */
    if (nv->throttle && nv->throttle(dev, &n) == 0) {
        r->thermal = (n & 0x60ULL) != 0;
        r->power = (n & 0x88ULL) != 0;
    }
}

int agent_nvml_events_open(agent_nvml_t *nv) {
    if (nv->evset) return 0;
    if (!nv->ev_create || !nv->ev_free || !nv->ev_register || !nv->ev_wait ||
        nv->ev_create(&nv->evset) != 0) {
        nv->evset = NULL;
        return -1;
    }
    for (int i = 0; i < nv->count; i++)
        if (nv->gpu[i].dev) nv->ev_register(nv->gpu[i].dev, NVML_EVENT_XID, nv->evset);
    return 0;
}

int agent_nvml_event_next(agent_nvml_t *nv, int *gpu, int32_t *xid) {
    nvml_event_data_t d;
    if (!nv->evset) return 0;
    for (int k = 0; k < 64; k++) { /* other event types are skipped, a bounded few */
        memset(&d, 0, sizeof d);
        if (nv->ev_wait(nv->evset, &d, 0) != 0) return 0;
        if (d.type != NVML_EVENT_XID) continue;
        *gpu = -1;
        for (int i = 0; i < nv->count; i++)
            if (nv->gpu[i].dev == d.device) *gpu = i;
        *xid = d.data > 0x7fffffffULL ? 0x7fffffff : (int32_t)d.data;
        return 1;
    }
    return 0;
}

void agent_nvml_close(agent_nvml_t *nv) {
    if (!nv) return;
    if (nv->evset) nv->ev_free(nv->evset);
    for (int i = 0; i < nv->count; i++) {
        if (!nv->gpu[i].gpm) continue;
        nv->gpm_free(nv->gpu[i].prev);
        nv->gpm_free(nv->gpu[i].cur);
    }
    nvml_stop(&nv->core);
    free(nv);
}
