/*
 * tasklog.c - one chunk of a task's log for a logs reply (tasklog.h).
 *
 * Offsets are file offsets, so the controller can page through a log that
 * still grows; the chunk is cleaned to valid UTF-8 in place (invalid bytes
 * and NUL become '?') so that the reply is JSON and its length in bytes is
 * the file's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jsonesc.h"
#include "tasklog.h"

void agent_tasklog_read(const char *workdir, const char *node, const char *name, uint64_t job,
                        int32_t task,
                        int64_t offset, int64_t limit, bool running, sl_proto_logs_reply_t *r,
                        unsigned char **buf, char *err, size_t errlen) {
    if (offset < 0) offset = 0;
    if (limit < 0 || limit > AGENT_LOG_CHUNK) limit = AGENT_LOG_CHUNK;
    *buf = NULL;
    char path[4096];
    snprintf(path, sizeof path, "%s/logs/%s/%d.log", workdir, name, task);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        if (errno == ENOENT)
            snprintf(err, errlen, "no log for job %llu task %d on node %s",
                     (unsigned long long)job, task, node);
        else
            snprintf(err, errlen, "cannot read log of job %llu task %d on node %s: %s",
                     (unsigned long long)job, task, node, strerror(errno));
        if (fd >= 0) close(fd);
        r->error = err;
        return;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "cannot read log of job %llu task %d on node %s: not a regular file",
                 (unsigned long long)job, task, node);
        close(fd);
        r->error = err;
        return;
    }
    int64_t size = st.st_size;
    *buf = malloc((size_t)limit + 1);
    if (!*buf) abort();
    ssize_t n = 0;
    if (offset < size && limit > 0) n = pread(fd, *buf, (size_t)limit, offset);
    close(fd);
    if (n < 0) n = 0;
    int at_end = offset + n >= size;
    size_t len = sl_utf8_clean(*buf, (size_t)n, at_end && !running);
    *r = (sl_proto_logs_reply_t){.data = (const char *)*buf, .data_len = len, .offset = offset,
                                 .size = size, .eof = offset + (int64_t)len >= size && !running};
}
