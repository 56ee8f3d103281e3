/*
 * proto_run.c - the codec of a message's attempt and cluster instance
 * (proto_run.h, docs/protocol.md "Attempts and the cluster instance").
 *
 * Both are optional fields of several messages (a launch and every report
 * carry the attempt; a welcome and a hello's task entries the instance), so
 * the one codec here serves each of them and proto.c calls it where the
 * field belongs. An instance id is restricted to lower-case letters and
 * digits: it goes into file and cgroup names unchanged and needs no
 * escaping on the wire.
 */
#include <stdio.h>
#include <string.h>

#include "proto_run.h"

bool sl_proto_instance_valid(const char *s) {
    if (s == NULL || s[0] == '\0')
        return false;
    size_t n = 0;
    for (; s[n]; n++)
        if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'z')) ||
            n >= SL_PROTO_INSTANCE_MAX)
            return false;
    return true;
}

size_t sl__proto_run_encode(bool has_attempt, uint32_t attempt, const char *instance, char *buf,
                            size_t cap) {
    char tmp[96 + SL_PROTO_INSTANCE_MAX];
    int n = 0;
    if (has_attempt)
        n += snprintf(tmp, sizeof tmp, ",\"attempt\":%u", (unsigned)attempt);
    if (sl_proto_instance_valid(instance))
        n += snprintf(tmp + n, sizeof tmp - (size_t)n, ",\"instance\":\"%s\"", instance);
    if (buf != NULL && cap > 0)
        memcpy(buf, tmp, (size_t)n < cap ? (size_t)n : cap);
    return (size_t)n;
}

int sl__proto_run_decode(json_t *o, const char *what, const char *prefix, bool *has_attempt,
                         uint32_t *attempt, const char **instance, char *err, size_t errlen) {
    if (has_attempt != NULL) {
        json_t *v = json_object_get(o, "attempt");
        *has_attempt = false;
        *attempt = 0;
        if (v != NULL && !json_is_null(v)) {
            if (!json_is_integer(v) || json_integer_value(v) < 0 ||
                json_integer_value(v) > SL_PROTO_ATTEMPT_MAX) {
                snprintf(err, errlen, "%s: %sattempt: must be a whole number from 0 to %d", what,
                         prefix, SL_PROTO_ATTEMPT_MAX);
                return -1;
            }
            *has_attempt = true;
            *attempt = (uint32_t)json_integer_value(v);
        }
    }
    if (instance != NULL) {
        json_t *v = json_object_get(o, "instance");
        *instance = NULL;
        if (v != NULL && !json_is_null(v)) {
            if (!sl_proto_instance_valid(json_string_value(v))) {
                snprintf(err, errlen,
                         "%s: %sinstance: must be 1 to %d lower-case letters and digits", what,
                         prefix, SL_PROTO_INSTANCE_MAX);
                return -1;
            }
            *instance = json_string_value(v);
        }
    }
    return 0;
}
