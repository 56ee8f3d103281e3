/* proto_hb.c - which heartbeats ask for an answer (see proto_hb.h). */
#include "proto_hb.h"

bool sl_proto_heartbeat_asks(int64_t contact_age_us, int64_t heartbeat_us,
                             int64_t node_timeout_us) {
    if (node_timeout_us <= 0 || contact_age_us < 0)
        return true;
    return contact_age_us + heartbeat_us > node_timeout_us / 2;
}
