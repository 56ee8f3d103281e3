/*
 * epoch.c - the agent's epoch mark file (epoch.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "epoch.h"

void agent_epoch_path(const char *workdir, char *buf, size_t len) {
    snprintf(buf, len, "%s/epoch", workdir);
}

int agent_epoch_load(const char *path, sl_epoch_mark_t *mk, char *err, size_t errlen) {
    memset(mk, 0, sizeof *mk);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) return 0;
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot be read: %s", path, strerror(errno));
        return -1;
    }
    char buf[128];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    int e = errno;
    close(fd);
    if (n < 0) {
        snprintf(err, errlen, "%s: cannot be read: %s", path, strerror(e));
        return -1;
    }
    buf[n] = '\0';
    if (sl_epoch_mark_parse(buf, mk) != 0) {
        snprintf(err, errlen, "%s: not an epoch mark (\"EPOCH INSTANCE\"); remove it only if no "
                 "deposed controller can reach this agent", path);
        return -1;
    }
    return 0;
}

int agent_epoch_save(const char *path, const sl_epoch_mark_t *mk) {
    char tmp[PATH_MAX + 8], line[96];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    size_t n = sl_epoch_mark_format(mk, line, sizeof line);
    int e = 0, fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) return -errno;
    ssize_t w = write(fd, line, n);
    if (w != (ssize_t)n) e = w < 0 ? errno : EIO;
    if (e == 0 && fsync(fd) != 0) e = errno;
    close(fd);
    if (e == 0 && rename(tmp, path) != 0) e = errno;
    if (e != 0) {
        unlink(tmp);
        return -e;
    }
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    int dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        if (fsync(dfd) != 0) e = errno;
        close(dfd);
    }
    return -e;
}
