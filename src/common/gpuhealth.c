/*
 * gpuhealth.c - health state and reason names, and the XID catalogue
 * (gpuhealth.h). The table is sorted by XID and small (a binary search
 * would save nothing measurable at a few dozen rows; the agent looks one
 * up per XID event, which is rare).
 */
#include <string.h>

#include "gpuhealth.h"

static const char *const state_names[SL_HEALTH_NSTATES] = {"healthy", "degraded", "unhealthy"};
static const char *const reason_names[SL_HREASON_NREASONS] = {
    "none", "xid", "ecc_uncorrectable", "remap_pending", "gpu_lost",
    "thermal_slowdown", "power_slowdown", "health_check"};

static const struct {
    int32_t xid;
    sl_xid_action_t action;
    const char *what;
} xids[] = {
    {13, SL_XID_APP, "graphics engine exception"},
    {31, SL_XID_APP, "GPU memory page fault"},
    {43, SL_XID_APP, "GPU stopped processing"},
    {45, SL_XID_APP, "preemptive cleanup, due to previous errors"},
    {48, SL_XID_RESET, "double-bit ECC error"},
    {61, SL_XID_RESET, "internal micro-controller breakpoint"},
    {62, SL_XID_RESET, "internal micro-controller halt"},
    {63, SL_XID_WATCH, "row remapping recorded (applied at the next GPU reset)"},
    {64, SL_XID_RESET, "row remapping failure"},
    {68, SL_XID_APP, "video decoder exception"},
    {69, SL_XID_APP, "graphics engine class error"},
    {74, SL_XID_RESET, "NVLink error"},
    {79, SL_XID_REBOOT, "fell off the bus"},
    {92, SL_XID_WATCH, "high single-bit ECC error rate"},
    {94, SL_XID_RESET, "contained ECC error"},
    {95, SL_XID_RESET, "uncontained ECC error"},
    {119, SL_XID_RESET, "GSP RPC timeout"},
    {120, SL_XID_RESET, "GSP error"},
    {140, SL_XID_RESET, "unrecovered ECC error"},
};

const char *sl_health_state_name(sl_health_state_t s) {
    return s >= 0 && s < SL_HEALTH_NSTATES ? state_names[s] : "?";
}

int sl_health_state_parse(const char *s, sl_health_state_t *out) {
    for (int i = 0; s && i < SL_HEALTH_NSTATES; i++)
        if (strcmp(s, state_names[i]) == 0) {
            *out = (sl_health_state_t)i;
            return 0;
        }
    return -1;
}

const char *sl_health_reason_name(sl_health_reason_t r) {
    return r >= 0 && r < SL_HREASON_NREASONS ? reason_names[r] : "?";
}

int sl_health_reason_parse(const char *s, sl_health_reason_t *out) {
    for (int i = 0; s && i < SL_HREASON_NREASONS; i++)
        if (strcmp(s, reason_names[i]) == 0) {
            *out = (sl_health_reason_t)i;
            return 0;
        }
    return -1;
}

sl_xid_info_t sl_xid_classify(int32_t xid) {
    for (size_t i = 0; i < sizeof xids / sizeof xids[0]; i++)
        if (xids[i].xid == xid)
            return (sl_xid_info_t){xids[i].action, xids[i].what};
    return (sl_xid_info_t){SL_XID_WATCH, "unknown XID"};
}

const char *sl_xid_action_name(sl_xid_action_t a) {
    switch (a) {
    case SL_XID_WATCH: return "watch";
    case SL_XID_APP: return "application";
    case SL_XID_RESET: return "gpu_reset";
    case SL_XID_REBOOT: return "node_reboot";
    }
    return "?";
}

sl_health_state_t sl_xid_health(int32_t xid) {
    switch (sl_xid_classify(xid).action) {
    case SL_XID_APP: return SL_HEALTH_HEALTHY;
    case SL_XID_WATCH: return SL_HEALTH_DEGRADED;
    default: return SL_HEALTH_UNHEALTHY;
    }
}
