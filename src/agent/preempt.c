/*
 * preempt.c - the preempt file of a task (preempt.h).
 *
 * Written before the signal is sent, so a training loop that checks the
 * file on the signal (or each step) always finds the deadline that goes
 * with it. rename(2) makes the write atomic; the file lives in the job's
 * directory, which the task's user owns, beside what the task writes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "preempt.h"

void agent_preempt_path(const char *workdir, const char *name, int32_t task, char *buf, size_t len) {
    snprintf(buf, len, "%s/jobs/%s/.sluice-preempt.%d", workdir, name, (int)task);
}

int agent_preempt_note(const char *workdir, const char *name, int32_t task, double deadline_s) {
    char path[4096], tmp[4120], line[64];
    agent_preempt_path(workdir, name, task, path, sizeof path);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int n = snprintf(line, sizeof line, "SLUICE_PREEMPT_DEADLINE=%.3f\n", deadline_s);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    ssize_t w = write(fd, line, (size_t)n);
    int e = w == n ? 0 : (w < 0 ? errno : EIO);
    if (fchmod(fd, 0644) != 0 && e == 0)
        e = errno;
    close(fd);
    if (e == 0 && rename(tmp, path) != 0)
        e = errno;
    if (e != 0) {
        unlink(tmp);
        return -e;
    }
    return 0;
}

void agent_preempt_clear(const char *workdir, const char *name, int32_t task) {
    char path[4096];
    agent_preempt_path(workdir, name, task, path, sizeof path);
    unlink(path);
}
