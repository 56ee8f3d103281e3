/*
 * proto_hb.c - which heartbeats ask for an answer, and the controller's
 * scan of a plain heartbeat (see proto_hb.h). The scan matches the agent's
 * own encoding (proto.c) byte for byte and nothing else, so that whatever
 * it accepts the full decoder would accept with the same meaning: a
 * narrower grammar than JSON, never a wider one.
 */
#include <string.h>

#include "proto_hb.h"

bool sl_proto_heartbeat_asks(int64_t contact_age_us, int64_t heartbeat_us,
                             int64_t node_timeout_us) {
    if (node_timeout_us <= 0 || contact_age_us < 0)
        return true;
    return contact_age_us + heartbeat_us > node_timeout_us / 2;
}

/* Skips the literal lit at *p (within end); false when it is not there. */
static bool lit(const char **p, const char *end, const char *lit) {
    size_t n = strlen(lit);
    if ((size_t)(end - *p) < n || memcmp(*p, lit, n) != 0)
        return false;
    *p += n;
    return true;
}

/* Skips a JSON integer of 1 to max digits without a leading zero (but
 * "0"); its value into *v if v. False when there is none. */
static bool digits(const char **p, const char *end, int max, uint64_t *v) {
    const char *s = *p;
    uint64_t x = 0;
    while (*p < end && **p >= '0' && **p <= '9' && *p - s < max)
        x = x * 10 + (uint64_t)(*(*p)++ - '0');
    if (*p == s || (*p < end && **p >= '0' && **p <= '9') || (s[0] == '0' && *p - s > 1))
        return false;
    if (v)
        *v = x;
    return true;
}

bool sl_proto_heartbeat_scan(const char *line, size_t len, uint64_t *seq) {
    const char *p = line, *end = line + len;
    uint64_t v = 0;
    if (!lit(&p, end, "{\"type\":\"heartbeat\","))
        return false;
    /* 18 digits stay below INT64_MAX, the decoder's bound. */
    if (lit(&p, end, "\"seq\":") && !(digits(&p, end, 18, &v) && lit(&p, end, ",")))
        return false;
    /* The time: 1 to 11 integer digits stay below 1e11, the decoder's
     * bound; a fraction of 1 to 18 digits. */
    if (!lit(&p, end, "\"time\":") || !digits(&p, end, 11, NULL))
        return false;
    if (p < end && *p == '.') {
        p++;
        const char *f = p;
        while (p < end && *p >= '0' && *p <= '9' && p - f < 18)
            p++;
        if (p == f)
            return false;
    }
    if (!lit(&p, end, "}") || p != end)
        return false;
    *seq = v;
    return true;
}
