/*
 * proto_kill.c - the codec of a `kill` message's optional fields
 * (proto_kill.h, docs/protocol.md "kill").
 *
 * A preemption or a drain's deadline stops a task with the first signal its
 * priority class names (SIGTERM, or e.g. SIGUSR1 for a training loop that
 * checkpoints on it) and tells the agent to write when SIGKILL comes into
 * the task's preempt file first, so the task that wakes on the signal
 * already finds its deadline there. Both fields are additive: an old agent
 * ignores them (SIGTERM, no file) and an old controller sends neither.
 * Signals travel by name, not number, so that the two ends need not agree
 * on the numbering of a platform.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "proto_kill.h"

static const struct {
    const char *name;
    int32_t sig;
} sigs[] = {
    {"SIGHUP", SIGHUP},   {"SIGINT", SIGINT},   {"SIGQUIT", SIGQUIT},
    {"SIGUSR1", SIGUSR1}, {"SIGUSR2", SIGUSR2}, {"SIGTERM", SIGTERM},
    {"SIGKILL", SIGKILL}, {"SIGCONT", SIGCONT}, {"SIGWINCH", SIGWINCH},
};
#define NSIGS (sizeof sigs / sizeof sigs[0])

int sl_proto_signal_parse(const char *name, int32_t *sig) {
    if (name == NULL)
        return -1;
    for (size_t i = 0; i < NSIGS; i++) {
        if (strcmp(name, sigs[i].name) == 0 || strcmp(name, sigs[i].name + 3) == 0) {
            *sig = sigs[i].sig;
            return 0;
        }
    }
    return -1;
}

const char *sl_proto_signal_name(int32_t sig) {
    for (size_t i = 0; i < NSIGS; i++)
        if (sigs[i].sig == sig)
            return sigs[i].name;
    return NULL;
}

const char *sl_proto_signal_names(void) {
    return "SIGHUP, SIGINT, SIGQUIT, SIGUSR1, SIGUSR2, SIGTERM, SIGKILL, SIGCONT, SIGWINCH";
}

size_t sl__proto_kill_encode(const sl_proto_kill_t *k, char *buf, size_t cap) {
    char tmp[96], grace[40] = "";
    const char *name = k->signal ? sl_proto_signal_name(k->signal) : NULL;
    if (k->grace_ms >= 0)
        snprintf(grace, sizeof grace, ",\"grace_ms\":%lld", (long long)k->grace_ms);
    int n = snprintf(tmp, sizeof tmp, "%s%s%s%s%s", grace, name ? ",\"signal\":\"" : "",
                     name ? name : "", name ? "\"" : "", k->preempt ? ",\"preempt\":true" : "");
    if (n <= 0)
        return 0;
    if (buf != NULL && cap > 0)
        memcpy(buf, tmp, (size_t)n < cap ? (size_t)n : cap);
    return (size_t)n;
}

int sl__proto_kill_decode(json_t *o, sl_proto_kill_t *k, char *err, size_t errlen) {
    k->grace_ms = -1;
    k->signal = 0;
    k->preempt = false;
    json_t *v = json_object_get(o, "grace_ms");
    if (v != NULL && !json_is_null(v)) {
        if (!json_is_integer(v) || json_integer_value(v) < 0 ||
            json_integer_value(v) > INT64_MAX / 1000) {
            snprintf(err, errlen, "kill: grace_ms: must be a number of milliseconds, 0 or more");
            return -1;
        }
        k->grace_ms = json_integer_value(v);
    }
    v = json_object_get(o, "signal");
    if (v != NULL && !json_is_null(v) &&
        (!json_is_string(v) || sl_proto_signal_parse(json_string_value(v), &k->signal) < 0)) {
        snprintf(err, errlen, "kill: signal: must be one of %s", sl_proto_signal_names());
        return -1;
    }
    v = json_object_get(o, "preempt");
    if (v != NULL && !json_is_null(v)) {
        if (!json_is_boolean(v)) {
            snprintf(err, errlen, "kill: preempt: must be true or false");
            return -1;
        }
        k->preempt = json_is_true(v);
    }
    return 0;
}
