/*
 * tasklog.h - reading a task's log for a logs request (tasklog.c): the
 * chunk one logs reply carries (docs/protocol.md, "logs").
 */
#ifndef SLUICE_AGENT_TASKLOG_H
#define SLUICE_AGENT_TASKLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"

/* Largest logs reply: JSON escaping keeps the line under 1 MiB. */
#define AGENT_LOG_CHUNK (128 * 1024)

/*
 * Reads up to limit bytes (at most AGENT_LOG_CHUNK; < 0: that much) of
 * WORKDIR/logs/NAME/TASK.log (NAME: the job's name on this node, names.h)
 * from offset into r: data, offset, size and eof
 * (only once the task no longer runs), the data made valid UTF-8 without
 * changing its length (a sequence cut at the chunk's end is left for the
 * next read). On failure r->error says why in words (no log; not a regular
 * file; cannot read), in err (errlen bytes). The log is its task's user's
 * file: it is opened without following a link or blocking (O_NOFOLLOW,
 * O_NONBLOCK) and read only when it is a regular file. *buf is malloc'd
 * (r->data points into it) or NULL; the caller frees it. Can't fail
 * otherwise (out-of-memory aborts).
 */
void agent_tasklog_read(const char *workdir, const char *node, const char *name, uint64_t job,
                        int32_t task,
                        int64_t offset, int64_t limit, bool running, sl_proto_logs_reply_t *r,
                        unsigned char **buf, char *err, size_t errlen);

#endif
