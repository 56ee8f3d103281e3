/*
 * proto_epoch.c - the epoch field's codec and the agent's rule of
 * acceptance (proto_epoch.h, docs/protocol.md "Controllers and epochs").
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto_epoch.h"
#include "sluice/error.h"

size_t sl__proto_epoch_encode(uint64_t epoch, char *buf, size_t cap) {
    if (epoch == 0) return 0;
    char tmp[40];
    int n = snprintf(tmp, sizeof tmp, ",\"epoch\":%" PRIu64, epoch);
    if (buf && cap > 0) memcpy(buf, tmp, (size_t)n < cap ? (size_t)n : cap);
    return (size_t)n;
}

int sl__proto_epoch_decode(json_t *o, const char *what, uint64_t *epoch, char *err, size_t errlen) {
    *epoch = 0;
    json_t *v = json_object_get(o, "epoch");
    if (v == NULL || json_is_null(v)) return 0;
    if (!json_is_integer(v) || json_integer_value(v) < 0) {
        if (errlen > 0)
            snprintf(err, errlen, "%s: epoch: must be a whole number from 0 to %" PRId64, what,
                     (int64_t)SL_PROTO_EPOCH_MAX);
        return -1;
    }
    *epoch = (uint64_t)json_integer_value(v);
    return 0;
}

sl_epoch_verdict_t sl_epoch_admit(sl_epoch_mark_t *mk, const char *instance, uint64_t epoch) {
    bool named = instance != NULL && sl_proto_instance_valid(instance);
    if (named && mk->instance[0] != '\0' && strcmp(mk->instance, instance) != 0) {
        /* Another cluster instance: its epochs are counted apart. */
        mk->highest = epoch;
        snprintf(mk->instance, sizeof mk->instance, "%s", instance);
        return SL_EPOCH_RAISED;
    }
    if (epoch < mk->highest) return SL_EPOCH_REFUSED;
    if (epoch == mk->highest && (!named || mk->instance[0] != '\0')) return SL_EPOCH_SAME;
    mk->highest = epoch;
    if (named) snprintf(mk->instance, sizeof mk->instance, "%s", instance);
    return SL_EPOCH_RAISED;
}

size_t sl_epoch_mark_format(const sl_epoch_mark_t *mk, char *buf, size_t cap) {
    int n = snprintf(buf, cap, "%" PRIu64 " %s\n", mk->highest,
                     mk->instance[0] ? mk->instance : "-");
    return n < 0 ? 0 : (size_t)n;
}

int sl_epoch_mark_parse(const char *s, sl_epoch_mark_t *mk) {
    memset(mk, 0, sizeof *mk);
    if (s[0] < '0' || s[0] > '9') return SL_EINVAL;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end != ' ' || v > (unsigned long long)SL_PROTO_EPOCH_MAX) return SL_EINVAL;
    const char *inst = end + 1;
    size_t len = strcspn(inst, "\n");
    if (inst[len] == '\n' && inst[len + 1] != '\0') return SL_EINVAL;
    char tmp[SL_PROTO_INSTANCE_MAX + 1];
    if (len == 0 || len > SL_PROTO_INSTANCE_MAX) return SL_EINVAL;
    memcpy(tmp, inst, len);
    tmp[len] = '\0';
    if (strcmp(tmp, "-") != 0 && !sl_proto_instance_valid(tmp)) return SL_EINVAL;
    mk->highest = (uint64_t)v;
    if (strcmp(tmp, "-") != 0) memcpy(mk->instance, tmp, len + 1);
    return 0;
}
