/*
 * proto_epoch.h - the controller's epoch on the agent protocol
 * (docs/protocol.md, "Controllers and epochs"), and the rule by which an
 * agent accepts or refuses a message for it.
 *
 * An epoch is a number that only grows: a single controller's counter,
 * kept in its store and bumped at every start; in HA mode the leader's
 * term. Every message a controller sends to an agent carries it
 * ("epoch":N, additive). An agent remembers the highest epoch it has
 * accepted (its mark, kept in its work directory across its restarts) and
 * refuses a message of a lower one: that controller was deposed or
 * restarted since, and whatever it decides (a launch, a kill) may already
 * have been decided otherwise by its successor.
 *
 * The mark belongs to a cluster instance (proto_run.h): a database made
 * anew counts its epochs from 1 again, so a welcome naming another
 * instance than the mark's starts the mark over. A message without an
 * epoch (a controller from before epochs) counts as epoch 0: accepted
 * while the mark is 0, refused once any epoch was accepted.
 *
 * proto.c calls the codec; the agent (conn.c, epoch.c) applies the rule.
 * All of it is pure: no I/O.
 */
#ifndef SLUICE_COMMON_PROTO_EPOCH_H
#define SLUICE_COMMON_PROTO_EPOCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "proto_run.h" /* SL_PROTO_INSTANCE_MAX */

/* The largest epoch on the wire (a JSON integer jansson reads). */
#define SL_PROTO_EPOCH_MAX INT64_MAX

/* Writes `,"epoch":N` when epoch > 0 into buf (cap bytes, snprintf
 * semantics: returns the length needed, writes what fits, no NUL).
 * Allocates nothing. Can't fail. */
size_t sl__proto_epoch_encode(uint64_t epoch, char *buf, size_t cap);

/* Reads "epoch" of the message object o into *epoch (absent or null: 0).
 * 0, or -1 with "WHAT: epoch: must be ..." in err (errlen > 0) when it is
 * not a whole number from 0 to SL_PROTO_EPOCH_MAX. */
int sl__proto_epoch_decode(json_t *o, const char *what, uint64_t *epoch, char *err, size_t errlen);

/* An agent's mark: the highest epoch it accepted, and the cluster instance
 * it was accepted from ("" when none was named). Zeroed: nothing accepted. */
typedef struct sl_epoch_mark {
    uint64_t highest;
    char instance[SL_PROTO_INSTANCE_MAX + 1];
} sl_epoch_mark_t;

/* What sl_epoch_admit decided. */
typedef enum sl_epoch_verdict {
    SL_EPOCH_REFUSED = -1,  /* epoch < mark's highest: act on nothing */
    SL_EPOCH_SAME = 0,      /* accepted; the mark is unchanged */
    SL_EPOCH_RAISED = 1     /* accepted; the mark changed (save it before acting) */
} sl_epoch_verdict_t;

/*
 * The rule: is a message of epoch `epoch` from a controller of instance
 * `instance` (the connection's welcome's; NULL or "" when none) accepted
 * under *mk? A valid instance other than a non-empty mark's starts the
 * mark over at this epoch (a database made anew); otherwise the message
 * is refused when epoch < mk->highest, and raises the mark when higher.
 * Changes *mk only when it returns SL_EPOCH_RAISED. O(1); can't fail.
 */
sl_epoch_verdict_t sl_epoch_admit(sl_epoch_mark_t *mk, const char *instance, uint64_t epoch);

/* The mark as one line, "EPOCH INSTANCE\n" (INSTANCE "-" when none), into
 * buf (cap bytes, snprintf semantics). Returns the length needed. */
size_t sl_epoch_mark_format(const sl_epoch_mark_t *mk, char *buf, size_t cap);

/* Parses what sl_epoch_mark_format wrote (s, NUL-terminated; the newline
 * optional) into *mk. 0, or SL_EINVAL with *mk zeroed when s is not such
 * a line. O(len). */
int sl_epoch_mark_parse(const char *s, sl_epoch_mark_t *mk);

#endif
