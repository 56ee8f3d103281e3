/*
 * error.h - error codes and scheduling status codes of the Sluice core.
 *
 * Functions that can fail return int: 0 is success, a negative SL_E* code is
 * failure. The codes equal the negated errno values where one exists, so a
 * syscall failure in a program maps to -errno with no table (libuv style).
 * One X-macro declares every code; it also generates sl_strerror().
 *
 * "Does not fit" is not an error: placement and scheduling return an
 * sl_status_t and fill a human-readable reason.
 */
#ifndef SLUICE_ERROR_H
#define SLUICE_ERROR_H

#include <errno.h>

#define SL_ERRNO_MAP(X)                                   \
    X(INVAL, -EINVAL, "invalid argument")                 \
    X(NOMEM, -ENOMEM, "out of memory")                    \
    X(NOENT, -ENOENT, "no such object")                   \
    X(EXIST, -EEXIST, "already exists")                   \
    X(RANGE, -ERANGE, "value out of range")               \
    X(OVERFLOW, -EOVERFLOW, "value too large")            \
    X(NOSPC, -ENOSPC, "not enough free capacity")         \
    X(BUSY, -EBUSY, "object is in use")                   \
    X(PERM, -EPERM, "operation not permitted")            \
    X(STATE, -EALREADY, "invalid state for this operation") \
    X(IO, -EIO, "input/output error")

typedef enum sl_errno {
#define SL__ERR_ENUM(name, val, msg) SL_E##name = (val),
    SL_ERRNO_MAP(SL__ERR_ENUM)
#undef SL__ERR_ENUM
} sl_errno_t;

/* Returns a static, human-readable message for an SL_E* code or a negated
 * errno value; never NULL. Can't fail. */
const char *sl_strerror(int err);

/* Returns the symbolic name ("SL_EINVAL") of a code, or "SL_EUNKNOWN". */
const char *sl_errname(int err);

/*
 * Result of trying to place or start a job (Kubernetes framework codes).
 * SL_FIT: placed. SL_NOFIT: cannot be placed now, may fit later.
 * SL_NOFIT_EVER: cannot be placed on this cluster even when empty
 * (e.g. needs 16 GPUs on one node and no node has 16). SL_WAIT: held back by
 * policy (reservation, quota, strict order). SL_SKIP: not considered.
 */
typedef enum sl_status {
    SL_FIT = 0,
    SL_NOFIT = 1,
    SL_NOFIT_EVER = 2,
    SL_WAIT = 3,
    SL_SKIP = 4
} sl_status_t;

const char *sl_status_name(sl_status_t st);

#endif
