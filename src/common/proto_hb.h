/*
 * proto_hb.h - which of its heartbeats an agent asks the controller to
 * answer (docs/protocol.md, "heartbeat" and "Fencing").
 *
 * An agent that fences counts the controller as in contact as of the time
 * it sent the latest message the controller answered, and stops its tasks
 * once that is older than node_timeout. Answering every heartbeat keeps the
 * contact at most one interval old, at the price of one message (and, on a
 * loopback or a busy controller, most of the controller's idle CPU) per
 * heartbeat: 5,000 a second at 10,000 nodes. The agent instead asks (puts
 * a seq in the heartbeat) only when the contact would otherwise become
 * older than half of node_timeout by its next heartbeat, so that while the
 * controller answers, the contact is never older than node_timeout / 2 and
 * the agent still tolerates a stall of the controller of at least that
 * long before it fences; at the defaults (heartbeat 2 s, node_timeout
 * 10 s) every second heartbeat asks, and the stall it tolerates goes from
 * 8 s to 6 s. Once the contact is that old, every heartbeat asks, so the
 * first answer after a stall is that of the latest one. Fencing's safety
 * does not depend on the rule: the contact is always a time the controller
 * heard from the agent at or after.
 */
#ifndef SLUICE_COMMON_PROTO_HB_H
#define SLUICE_COMMON_PROTO_HB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whether a heartbeat sent now asks for an answer: contact_age_us is now
 * minus the agent's contact (< 0 or node_timeout_us <= 0: no contact yet,
 * or no fencing, and then every heartbeat asks, as before this rule),
 * heartbeat_us the agent's interval. True when contact_age_us +
 * heartbeat_us > node_timeout_us / 2. Pure; can't fail. */
bool sl_proto_heartbeat_asks(int64_t contact_age_us, int64_t heartbeat_us,
                             int64_t node_timeout_us);

/* The controller's fast path for the message it reads most (an idle
 * controller of N agents reads N / heartbeat of them a second): when
 * line[0..len) (no newline) is exactly a heartbeat as agents encode it
 * without usage, `{"type":"heartbeat","seq":N,"time":T}` or
 * `{"type":"heartbeat","time":T}` (N a whole number of 1 to 18 digits,
 * T a plain decimal 0 <= T < 1e11), sets *seq (0: no seq) and returns
 * true; then sl_proto_decode_line would decode the line to a valid
 * heartbeat of that seq and no usage. Any other line (other spacing or
 * key order, an exponent, usage, another type) returns false, and the
 * caller decodes it in full. O(len); allocates nothing. */
bool sl_proto_heartbeat_scan(const char *line, size_t len, uint64_t *seq);

#endif
