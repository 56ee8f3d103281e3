/*
 * proto_health.c - the codec of a heartbeat's health report
 * (proto_health.h, docs/protocol.md "heartbeat").
 *
 *   "health":{"state":"unhealthy","reason":"health_check","message":"...",
 *             "gpus":[{"gpu":3,"state":"unhealthy","reason":"xid","xid":79,
 *                      "xids":1,"xid_time":1764428400.125,
 *                      "message":"XID 79, fell off the bus"}]}
 *
 * Only GPUs with something to say are listed; reason and message are left
 * out when there are none. States and reasons are names from the fixed
 * sets of gpuhealth.h, so an unknown one is an error rather than a label
 * that grows /metrics.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "jsonesc.h"
#include "proto_health.h"

typedef struct out {
    char *buf;
    size_t cap, len;
} out_t;

static void raw(out_t *o, const char *s, size_t n) {
    if (o->len < o->cap) {
        size_t room = o->cap - o->len;
        memcpy(o->buf + o->len, s, n < room ? n : room);
    }
    o->len += n;
}

static void add(out_t *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(out_t *o, const char *fmt, ...) {
    char tmp[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0) raw(o, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

static void str(out_t *o, const char *key, const char *s) {
    if (s == NULL) return;
    size_t n = strnlen(s, SL_PROTO_HEALTH_MSG_MAX);
    char tmp[SL_JSON_QUOTE_MAX(SL_PROTO_HEALTH_MSG_MAX)];
    add(o, ",\"%s\":", key);
    raw(o, tmp, sl_json_quote(tmp, sizeof tmp, s, n));
}

static void state_reason(out_t *o, sl_health_state_t st, sl_health_reason_t r) {
    add(o, "\"state\":\"%s\"", sl_health_state_name(st));
    if (r != SL_HREASON_NONE) add(o, ",\"reason\":\"%s\"", sl_health_reason_name(r));
}

size_t sl__proto_health_encode(const sl_proto_health_t *h, char *buf, size_t cap) {
    out_t o = {buf, cap, 0};
    if (h == NULL || !h->present) return 0;
    add(&o, ",\"health\":{");
    state_reason(&o, h->state, h->reason);
    str(&o, "message", h->message);
    if (h->ngpus > 0) {
        add(&o, ",\"gpus\":[");
        for (size_t i = 0; i < h->ngpus; i++) {
            const sl_proto_gpu_health_t *g = &h->gpus[i];
            add(&o, "%s{\"gpu\":%d,", i ? "," : "", (int)g->gpu);
            state_reason(&o, g->state, g->reason);
            if (g->xid > 0) add(&o, ",\"xid\":%d", (int)g->xid);
            if (g->xids > 0) add(&o, ",\"xids\":%lld", (long long)g->xids);
            if (g->xid_time > 0 && g->xid_time < 1e11) add(&o, ",\"xid_time\":%.3f", g->xid_time);
            str(&o, "message", g->message);
            add(&o, "}");
        }
        add(&o, "]");
    }
    add(&o, "}");
    return o.len;
}

/* state and reason of o into *st and *r; a message naming the bad field. */
static const char *get_state_reason(json_t *o, sl_health_state_t *st, sl_health_reason_t *r,
                                    const char **msg) {
    json_t *s = json_object_get(o, "state"), *rs = json_object_get(o, "reason");
    json_t *m = json_object_get(o, "message");
    *r = SL_HREASON_NONE;
    *msg = NULL;
    if (!json_is_string(s) || sl_health_state_parse(json_string_value(s), st) < 0)
        return "state: must be one of healthy, degraded, unhealthy";
    if (rs && !json_is_null(rs) &&
        (!json_is_string(rs) || sl_health_reason_parse(json_string_value(rs), r) < 0))
        return "reason: must be one of none, xid, ecc_uncorrectable, remap_pending, gpu_lost, "
               "thermal_slowdown, power_slowdown, health_check";
    if (m && !json_is_null(m)) {
        if (!json_is_string(m)) return "message: must be a string";
        *msg = json_string_value(m);
    }
    return NULL;
}

/* An integer member k of o in lo..hi (absent: 0). */
static int int_member(json_t *o, const char *k, int64_t lo, int64_t hi, int64_t *out) {
    json_t *v = json_object_get(o, k);
    *out = 0;
    if (v == NULL || json_is_null(v)) return 0;
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) return -1;
    *out = json_integer_value(v);
    return 0;
}

int sl__proto_health_decode(json_t *v, void *(*alloc)(void *ud, size_t n, size_t size), void *ud,
                            sl_proto_health_t *h, char *err, size_t errlen) {
    memset(h, 0, sizeof *h);
    if (v == NULL || json_is_null(v)) return 0;
    if (!json_is_object(v)) {
        snprintf(err, errlen, "heartbeat: health: must be an object");
        return -1;
    }
    const char *bad = get_state_reason(v, &h->state, &h->reason, &h->message);
    if (bad) {
        snprintf(err, errlen, "heartbeat: health.%s", bad);
        return -1;
    }
    json_t *gs = json_object_get(v, "gpus");
    if (gs && !json_is_null(gs)) {
        if (!json_is_array(gs) || json_array_size(gs) > 1024) {
            snprintf(err, errlen, "heartbeat: health.gpus: must be an array of at most 1024 GPUs");
            return -1;
        }
        size_t n = json_array_size(gs);
        sl_proto_gpu_health_t *g = n ? alloc(ud, n, sizeof *g) : NULL;
        for (size_t i = 0; i < n; i++) {
            json_t *o = json_array_get(gs, i);
            int64_t idx, xid, xids;
            if (!json_is_object(o)) {
                bad = "gpu: must be an object with a GPU index";
            } else if (json_object_get(o, "gpu") == NULL || int_member(o, "gpu", 0, 1023, &idx)) {
                bad = "gpu: must be a GPU index from 0 to 1023";
            } else if (int_member(o, "xid", 0, INT32_MAX, &xid)) {
                bad = "xid: must be a whole number, 0 or more";
            } else if (int_member(o, "xids", 0, INT64_MAX, &xids)) {
                bad = "xids: must be a whole number, 0 or more";
            } else if (json_object_get(o, "xid_time") && !json_is_null(json_object_get(o, "xid_time")) &&
                       !(json_is_number(json_object_get(o, "xid_time")) &&
                         json_number_value(json_object_get(o, "xid_time")) >= 0 &&
                         json_number_value(json_object_get(o, "xid_time")) < 1e11)) {
                bad = "xid_time: must be a time in seconds since the epoch";
            } else {
                g[i].xid_time = json_number_value(json_object_get(o, "xid_time"));
                bad = get_state_reason(o, &g[i].state, &g[i].reason, &g[i].message);
                g[i].gpu = (int32_t)idx;
                g[i].xid = (int32_t)xid;
                g[i].xids = xids;
            }
            if (bad) {
                snprintf(err, errlen, "heartbeat: health.gpus[%zu].%s", i, bad);
                return -1;
            }
        }
        h->gpus = g;
        h->ngpus = n;
    }
    h->present = true;
    return 0;
}
