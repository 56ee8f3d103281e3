/*
 * proto_run.h - which run of a task a message is about (docs/protocol.md,
 * "Attempts and the cluster instance"): the task's attempt, and the
 * cluster instance whose controller launched it. proto.h includes this
 * header and proto.c calls its codec; the agent and the controller use the
 * validity check and the bounds.
 *
 * A job's id names it only within one state database: `sluiced --init`
 * on an empty one, or a restored backup, issues the same ids again. The
 * instance id, made at random when a database is created and kept in it,
 * tells those apart: an agent names a task's files and cgroup after the
 * instance and the job. Within one job, a requeued copy runs the same
 * (job, task) again: the attempt, the job's requeue count when the task was
 * placed, tells a late report of an earlier copy from one of the current.
 * Both fields are additive: absent, a report is taken as before.
 */
#ifndef SLUICE_COMMON_PROTO_RUN_H
#define SLUICE_COMMON_PROTO_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* The largest attempt on the wire (a job's requeue count is an int32). */
#define SL_PROTO_ATTEMPT_MAX INT32_MAX
/* An instance id is 1..SL_PROTO_INSTANCE_MAX characters of [0-9a-z], so
 * that it can be part of a file or cgroup name as it is. */
#define SL_PROTO_INSTANCE_MAX 32

/* Whether s is a valid instance id (above). s may be NULL (false). O(len). */
bool sl_proto_instance_valid(const char *s);

/* Writes `,"attempt":N` when has_attempt and `,"instance":"ID"` when
 * instance is a valid id (an invalid one is left out) into buf (cap bytes,
 * snprintf semantics: returns the length needed, writes what fits, no
 * NUL). Allocates nothing. */
size_t sl__proto_run_encode(bool has_attempt, uint32_t attempt, const char *instance, char *buf,
                            size_t cap);

/* Reads "attempt" into *has_attempt and *attempt (when has_attempt is not
 * NULL; absent or null: false and 0) and "instance" into *instance (when
 * instance is not NULL; absent or null: NULL; the string is borrowed from
 * o) from the message object o. 0, or -1 with "WHAT: PREFIXattempt: must
 * be ..." in err. */
int sl__proto_run_decode(json_t *o, const char *what, const char *prefix, bool *has_attempt,
                         uint32_t *attempt, const char **instance, char *err, size_t errlen);

#endif
