/* osutil.c - mkdir -p, one-shot /proc reads and lock files for the agent and the CLI. */
#include "osutil.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/sysmacros.h>
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

/* The pid /proc/locks names as the holder of a FLOCK on the file st
 * describes, or 0. Lines read "1: FLOCK  ADVISORY  WRITE 1234 00:20:5678 0
 * EOF" (the device in hex); "->" lines are waiters, not holders. */
static pid_t flock_holder(const struct stat *st) {
    FILE *f = fopen("/proc/locks", "re");
    if (!f) return 0;
    char line[256], want[64];
    snprintf(want, sizeof want, "%02x:%02x:%llu", major(st->st_dev), minor(st->st_dev),
             (unsigned long long)st->st_ino);
    pid_t pid = 0;
    while (pid == 0 && fgets(line, sizeof line, f)) {
        char kind[16], dev[64];
        int who;
        if (strstr(line, "->") == NULL &&
            sscanf(line, "%*d: %15s %*s %*s %d %63s", kind, &who, dev) == 3 &&
            strcmp(kind, "FLOCK") == 0 && strcmp(dev, want) == 0)
            pid = (pid_t)who;
    }
    fclose(f);
    return pid;
}

int sl_flock_take(int fd, pid_t *holder) {
    *holder = 0;
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) return 0;
    int e = errno;
    struct stat st;
    if (e == EWOULDBLOCK && fstat(fd, &st) == 0) *holder = flock_holder(&st);
    return -e;
}

void sl_proc_name(pid_t pid, char *buf, size_t len) {
    if (sl_proc_read(pid, "comm", buf, len) == 0) {
        buf[0] = '\0';
        return;
    }
    buf[strcspn(buf, "\n")] = '\0';
}
