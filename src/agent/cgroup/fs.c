/*
 * fs.c - file operations on cgroup file systems (fs.h).
 *
 * cgroupfs takes one value per write(2) and reports a refused value as the
 * write's errno (EINVAL for a bad number, EBUSY, EACCES), so every write
 * here is one open, one write and one close, and the errno goes back to
 * the caller, which names the file. Reads are small (a few hundred bytes:
 * a number or some "key value" lines) and go through one read(2) into a
 * buffer on the stack. A write interrupted by a signal is tried again.
 *
 * The mount table is /proc/self/mountinfo (proc(5)): field 5 is the mount
 * point, then optional fields up to "-", then fstype, source and the super
 * options, where a v1 hierarchy lists its controllers ("rw,cpu,cpuacct").
 * Names are not guessed from /sys/fs/cgroup/<controller>: cpu and cpuacct
 * are mounted apart on some machines and together on others.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "cgroup/fs.h"
#include "osutil.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

int cg_write(const cg_fs_t *fs, const char *dir, const char *file, const char *value) {
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", dir, file) >= (int)sizeof path) return -ENAMETOOLONG;
    if (fs && fs->trace) fs->trace(fs->trace_ud, path, value);
    int flags = O_WRONLY | O_CLOEXEC;
    if (fs && fs->fake) flags |= O_CREAT | O_APPEND;
    int fd = open(path, flags, 0644);
    if (fd < 0) return -errno;
    size_t len = strlen(value);
    /* v1's memory limit writes fail with EINTR whenever a signal is
     * pending, even with nothing to reclaim (the kernel checks before
     * each try): the agent's SIGCHLDs must not fail a launch. Bounded,
     * as a write that keeps being interrupted is a real failure. */
    ssize_t n;
    int tries = 0;
    do
        n = write(fd, value, len);
    while (n < 0 && errno == EINTR && ++tries < 100);
    int err = n < 0 ? errno : (size_t)n != len ? EIO : 0;
    /* A fake tree keeps one value a line, so a test reads every write. */
    if (!err && fs && fs->fake && write(fd, "\n", 1) != 1) err = errno ? errno : EIO;
    close(fd);
    return -err;
}

int cg_write_i64(const cg_fs_t *fs, const char *dir, const char *file, int64_t v) {
    char num[24];
    if (v < 0)
        snprintf(num, sizeof num, "max");
    else
        snprintf(num, sizeof num, "%lld", (long long)v);
    return cg_write(fs, dir, file, num);
}

ssize_t cg_read(const char *dir, const char *file, char *buf, size_t len) {
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", dir, file) >= (int)sizeof path) return -ENAMETOOLONG;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -errno;
    ssize_t n = read(fd, buf, len - 1);
    int err = errno;
    close(fd);
    if (n < 0) return -err;
    buf[n] = '\0';
    return n;
}

int cg_read_i64(const char *dir, const char *file, int64_t *out) {
    char buf[64], *end;
    ssize_t n = cg_read(dir, file, buf, sizeof buf);
    if (n < 0) return (int)n;
    if (strncmp(buf, "max", 3) == 0) {
        *out = -1;
        return 0;
    }
    errno = 0;
    long long v = strtoll(buf, &end, 10);
    if (errno || end == buf) return -EINVAL;
    *out = v;
    return 0;
}

int cg_read_key(const char *dir, const char *file, const char *key, int64_t *out) {
    char buf[4096];
    ssize_t n = cg_read(dir, file, buf, sizeof buf);
    if (n < 0) return (int)n;
    size_t kl = strlen(key);
    for (char *line = buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (strncmp(line, key, kl) == 0 && line[kl] == ' ') {
            *out = strtoll(line + kl + 1, NULL, 10);
            return 0;
        }
    }
    return -ENOENT;
}

bool cg_exists(const char *dir, const char *file) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    return access(path, F_OK) == 0;
}

int cg_open_procs(const cg_fs_t *fs, const char *dir, const char *file) {
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", dir, file) >= (int)sizeof path) return -ENAMETOOLONG;
    int flags = O_WRONLY | O_CLOEXEC;
    if (fs && fs->fake) flags |= O_CREAT | O_APPEND;
    int fd = open(path, flags, 0644);
    return fd < 0 ? -errno : fd;
}

int cg_procs(const char *dir, pid_t *pids, int n) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/cgroup.procs", dir);
    FILE *f = fopen(path, "re");
    if (!f) return -errno;
    int count = 0;
    long v;
    while (fscanf(f, "%ld", &v) == 1) {
        if (count < n) pids[count] = (pid_t)v;
        count++;
    }
    fclose(f);
    return count;
}

int cg_kill_procs(const char *dir) {
    pid_t pids[256];
    int n = cg_procs(dir, pids, 256);
    if (n < 0) return n;
    for (int i = 0; i < n && i < 256; i++) kill(pids[i], SIGKILL);
    return n;
}

int cg_find_mount(const char *fstype, const char *opt, char *out, size_t len) {
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (!f) return -errno;
    char line[4096];
    int rc = -ENOENT;
    while (rc != 0 && fgets(line, sizeof line, f)) {
        char *save = NULL, *mnt = NULL, *tok;
        int field = 0;
        for (tok = strtok_r(line, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save)) {
            if (++field == 5) mnt = tok;
            if (field > 6 && strcmp(tok, "-") == 0) break;
        }
        char *type = strtok_r(NULL, " \n", &save);
        strtok_r(NULL, " \n", &save);   /* source */
        char *opts = strtok_r(NULL, " \n", &save);
        if (!mnt || !type || !opts || strcmp(type, fstype) != 0) continue;
        if (opt) {
            bool found = false;
            char *osave = NULL;
            for (char *o = strtok_r(opts, ",", &osave); o && !found; o = strtok_r(NULL, ",", &osave))
                found = strcmp(o, opt) == 0;
            if (!found) continue;
        }
        snprintf(out, len, "%s", mnt);
        rc = 0;
    }
    fclose(f);
    return rc;
}

int cg_self_path(const char *ctl, char *out, size_t len) {
    FILE *f = fopen("/proc/self/cgroup", "re");
    if (!f) return -errno;
    char line[4096];
    int rc = -ENOENT;
    while (rc != 0 && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2) continue;
        *c1 = *c2 = '\0';
        const char *ctls = c1 + 1;
        bool match = false;
        if (!ctl) {
            match = strcmp(line, "0") == 0 && ctls[0] == '\0';
        } else {
            char copy[256], *save = NULL;
            snprintf(copy, sizeof copy, "%s", ctls);
            for (char *c = strtok_r(copy, ",", &save); c && !match; c = strtok_r(NULL, ",", &save))
                match = strcmp(c, ctl) == 0;
        }
        if (match) {
            snprintf(out, len, "%s", c2 + 1);
            rc = 0;
        }
    }
    fclose(f);
    return rc;
}

bool cg_is_cgroup2(const char *path) {
    struct statfs sf;
    return statfs(path, &sf) == 0 && (unsigned long)sf.f_type == CGROUP2_SUPER_MAGIC;
}

int cg_dev_rule(const char *path, cg_dev_rule_t *out) {
    struct stat st;
    if (stat(path, &st) != 0) return -errno;
    if (!S_ISCHR(st.st_mode) && !S_ISBLK(st.st_mode)) return -ENODEV;
    out->type = S_ISCHR(st.st_mode) ? 'c' : 'b';
    out->major = major(st.st_rdev);
    out->minor = minor(st.st_rdev);
    snprintf(out->access, sizeof out->access, "rwm");
    return 0;
}

void cg_dev_format(const cg_dev_rule_t *r, char *buf, size_t len) {
    char minor[24];
    if (r->minor < 0)
        snprintf(minor, sizeof minor, "*");
    else
        snprintf(minor, sizeof minor, "%lld", (long long)r->minor);
    snprintf(buf, len, "%c %lld:%s %s", r->type, (long long)r->major, minor, r->access);
}

int cg_subdirs(const char *dir, char (*names)[CG_NAME_MAX], int n, int cap) {
    DIR *d = opendir(dir);
    if (!d) return n;
    struct dirent *e;
    while (n < cap && (e = readdir(d))) {
        if (e->d_type != DT_DIR || e->d_name[0] == '.' || strlen(e->d_name) >= CG_NAME_MAX)
            continue;
        int i;
        for (i = 0; i < n && strcmp(names[i], e->d_name) != 0; i++) {}
        if (i == n) snprintf(names[n++], CG_NAME_MAX, "%s", e->d_name);
    }
    closedir(d);
    return n;
}

int cg_lock_dir(const char *dir, const char *what, int *fd, char *err, size_t errlen) {
    *fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (*fd < 0) {
        int e = errno;
        snprintf(err, errlen, "%s: cannot open %s to lock it: %s", what, dir, strerror(e));
        return -e;
    }
    pid_t holder = 0;
    int rc = sl_flock_take(*fd, &holder);
    if (rc == 0) return 0;
    close(*fd);
    *fd = -1;
    if (rc != -EWOULDBLOCK) {
        snprintf(err, errlen, "%s: cannot lock %s: %s", what, dir, strerror(-rc));
        return rc;
    }
    char name[64] = "";
    if (holder > 0) sl_proc_name(holder, name, sizeof name);
    char who[96] = "another process";
    if (holder > 0) snprintf(who, sizeof who, "process %d (%s)", (int)holder, name[0] ? name : "gone");
    snprintf(err, errlen, "%s: the cgroup root %s is in use by %s, which holds a lock on it: two "
             "agents on one root would remove each other's cgroups; stop that agent first, or give "
             "this one another --name or --cgroup-root", what, dir, who);
    return -EBUSY;
}
