/*
 * lease.c - the node's fence lease file (lease.h; its format is in
 * monitor.h, which sluice-monitor reads it by).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "lease.h"
#include "monitor.h"

void agent_lease_path(const char *workdir, char *buf, size_t len) {
    snprintf(buf, len, "%s/%s", workdir, AGENT_LEASE_NAME);
}

int agent_lease_write(const char *path, int64_t deadline_us, int64_t grace_ms) {
    char tmp[4200], line[64];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int n = snprintf(line, sizeof line, "%lld %lld\n", (long long)deadline_us,
                     (long long)(grace_ms > 0 ? grace_ms : 0));
    int e = 0, fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
        e = errno;
    } else {
        ssize_t w = write(fd, line, (size_t)n);
        if (w != n) e = w < 0 ? errno : EIO;
        close(fd);
    }
    if (e == 0 && rename(tmp, path) != 0) e = errno;
    if (e == 0) return 0;
    unlink(tmp);
    unlink(path);
    return -e;
}
