/*
 * preempt.c - the preempt file of a task (preempt.h).
 *
 * Written before the signal is sent, so a training loop that checks the
 * file on the signal (or each step) always finds the deadline that goes
 * with it.
 *
 * The file's name is in the job's directory, which the task's user owns:
 * whatever the task put there (a FIFO, which an open(2) would block on
 * until someone reads it, hanging the agent's loop; a hard link to a file
 * elsewhere, which a write would go through; a symbolic link) must never
 * be opened by the agent. So nothing in the job directory is opened: the
 * line is written into a new file (O_CREAT | O_EXCL, never blocking) in
 * WORKDIR/tmp, the agent's own 0700 directory on the same file system,
 * where no tenant can create, link or swap anything, and that file is
 * renamed over the name in the job directory. rename(2) replaces the
 * directory entry, whatever it was, without opening or following it, and
 * makes the write atomic for a reader. A tenant can only make the rename
 * fail (a directory at the name): the agent logs it and sends the signal
 * all the same. The job directory itself cannot be swapped: WORKDIR/jobs
 * is root's (spawn.c).
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
    char path[4096], tmp[4200], line[64];
    agent_preempt_path(workdir, name, task, path, sizeof path);
    snprintf(tmp, sizeof tmp, "%s/%s/preempt.%s.%d", workdir, AGENT_PREEMPT_TMP_DIR, name, (int)task);
    int n = snprintf(line, sizeof line, "SLUICE_PREEMPT_DEADLINE=%.3f\n", deadline_s);
    unlink(tmp); /* left by an agent killed half-way; the directory is the agent's */
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC,
                  0644);
    if (fd < 0) return -errno;
    ssize_t w = write(fd, line, (size_t)n);
    int e = w == n ? 0 : (w < 0 ? errno : EIO);
    if (fchmod(fd, 0644) != 0 && e == 0) e = errno;
    close(fd);
    if (e == 0 && rename(tmp, path) != 0) e = errno;
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
