/* osutil.c - mkdir -p and one-shot /proc reads for the agent and the CLI. */
#include "osutil.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

int sl_fs_mkdirs(const char *path) {
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
            *p = '/';
        }
    }
    return (mkdir(tmp, 0755) != 0 && errno != EEXIST) ? -1 : 0;
}

size_t sl_proc_read(pid_t pid, const char *file, char *buf, size_t len) {
    char path[96];
    snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, file);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buf, len - 1);
    close(fd);
    if (n <= 0) return 0;
    buf[n] = '\0';
    return (size_t)n;
}

unsigned long long sl_proc_start_time(pid_t pid) {
    char buf[1024];
    if (sl_proc_read(pid, "stat", buf, sizeof buf) == 0) return 0;
    char *p = strrchr(buf, ')');
    if (!p || p[1] != ' ' || p[2] == 'Z') return 0;
    p++;
    /* p is at the blank before field 3 (state); starttime is field 22. */
    for (int field = 3; field < 22 && p; field++)
        p = strchr(p + 1, ' ');
    return p ? strtoull(p + 1, NULL, 10) : 0;
}

int64_t sl_nofile_raise(int64_t want) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return 1024;
    if (rl.rlim_cur != RLIM_INFINITY && (int64_t)rl.rlim_cur < want) {
        struct rlimit up = rl;
        up.rlim_cur = (rlim_t)want;
        if (rl.rlim_max != RLIM_INFINITY && (int64_t)rl.rlim_max < want) up.rlim_max = (rlim_t)want;
        /* Past the hard limit only a privileged process may go; else take
         * what the hard limit allows. */
        if (setrlimit(RLIMIT_NOFILE, &up) != 0) {
            up = rl;
            up.rlim_cur = rl.rlim_max;
            if (setrlimit(RLIMIT_NOFILE, &up) != 0) up = rl;
        }
        rl = up;
    }
    return rl.rlim_cur == RLIM_INFINITY ? INT64_MAX : (int64_t)rl.rlim_cur;
}
