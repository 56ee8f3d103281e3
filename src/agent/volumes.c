/*
 * volumes.c - a task's volumes opened and checked on its node, and a
 * job's empty_dirs made and removed (volumes.h).
 *
 * Everything a tenant can write is handled through descriptors: the walk
 * below a base opens each part with openat(O_PATH | O_NOFOLLOW) and looks
 * at what it got (a symbolic link opened that way is the link itself,
 * refused); an empty_dir's sub_path is made part by part with mkdirat in
 * the directory just opened, and owned by the tenant; removal walks with
 * openat(O_NOFOLLOW) and unlinkat, so a link planted in an empty_dir is
 * removed, never followed. The real path of the opened source
 * (/proc/self/fd/N read back) is checked once more against the base's
 * real path and the agent's work directory.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "sluice/alloc.h"
#include "volumes.h"

/* Whether real path p lies under (or is) directory d, at '/' boundaries. */
static bool under(const char *p, const char *d) {
    size_t n = strlen(d);
    if (n == 1 && d[0] == '/')
        return true;
    return strncmp(p, d, n) == 0 && (p[n] == '\0' || p[n] == '/');
}

/* The real path of fd into buf. 0 or -1. */
static int fd_path(int fd, char *buf, size_t len) {
    char link[40];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, buf, len - 1);
    if (n <= 0 || (size_t)n >= len - 1)
        return -1;
    buf[n] = '\0';
    return 0;
}

/*
 * Walks rel below the directory dirfd (consumed: closed on every path),
 * one part at a time, never following a link. make: a missing part is
 * made (0700, chowned to uid/gid when chown). Returns an O_PATH
 * descriptor of the last part, or -1 with why (whylen) naming the part.
 */
static int walk(int dirfd, const char *rel, bool make, uid_t uid, gid_t gid, bool chown,
                char *why, size_t whylen) {
    char part[NAME_MAX + 1];
    const char *s = rel ? rel : "";
    int fd = dirfd;
    while (*s) {
        size_t n = strcspn(s, "/");
        if (n == 0) {
            s++;
            continue;
        }
        if (n > NAME_MAX) {
            snprintf(why, whylen, "a part of %s is too long", rel);
            close(fd);
            return -1;
        }
        memcpy(part, s, n);
        part[n] = '\0';
        s += n;
        if (strcmp(part, "..") == 0 || strcmp(part, ".") == 0) {
            snprintf(why, whylen, "%s has a %s part", rel, part);
            close(fd);
            return -1;
        }
        if (make && mkdirat(fd, part, 0700) == 0 && chown &&
            fchownat(fd, part, uid, gid, AT_SYMLINK_NOFOLLOW) != 0) {
            snprintf(why, whylen, "cannot give %s to uid %u: %s", part, (unsigned)uid,
                     strerror(errno));
            close(fd);
            return -1;
        }
        int next = openat(fd, part, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        int e = errno;
        close(fd);
        struct stat st;
        if (next < 0) {
            snprintf(why, whylen, "%s: %s", part, strerror(e));
            return -1;
        }
        if (fstat(next, &st) != 0 || S_ISLNK(st.st_mode)) {
            snprintf(why, whylen, "%s is a symbolic link (not followed)", part);
            close(next);
            return -1;
        }
        if (*s && !S_ISDIR(st.st_mode)) {
            snprintf(why, whylen, "%s is not a directory", part);
            close(next);
            return -1;
        }
        fd = next;
    }
    return fd;
}

/* mkdir at path (mode; chowned to root's own when it exists already and
 * is not a directory: refused), as root's. 0 or -1. */
static int root_dir(const char *path, mode_t mode) {
    if (mkdir(path, mode) != 0 && errno != EEXIST)
        return -1;
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

/* The job's directory of empty_dirs, WORKDIR/volumes/NAME, made (and, when
 * fresh, made anew), opened. fd or -1 with why. */
static int job_vol_dir(const char *workdir, const char *name, bool fresh, char *why,
                       size_t whylen) {
    char path[4200];
    snprintf(path, sizeof path, "%s/volumes", workdir);
    if (root_dir(path, 0711) != 0)
        goto fail;
    if (fresh)
        agent_volumes_remove(workdir, name);
    snprintf(path, sizeof path, "%s/volumes/%s", workdir, name);
    if (root_dir(path, 0711) != 0)
        goto fail;
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0)
        return fd;
fail:
    snprintf(why, whylen, "cannot make %s: %s", path, strerror(errno));
    return -1;
}

/* One volume; 0 or -1 with why. */
static int prepare_one(const char *workdir, const char *realwd, const char *name, bool *fresh,
                       uid_t uid, gid_t gid, bool chown, bool tmpfs_ok, const sl_proto_volume_t *lv,
                       agent_volume_t *v, char *why, size_t whylen) {
    v->path = lv->path;
    v->kind = lv->kind;
    v->read_only = lv->read_only;
    v->size = lv->size;
    v->is_dir = true;
    if (lv->error) {
        snprintf(why, whylen, "%s", lv->error);
        return -1;
    }
    if (v->kind == SL_VOLUME_TMPFS && tmpfs_ok)
        return 0;
    char base_real[PATH_MAX];
    int fd;
    if (v->kind == SL_VOLUME_BIND) {
        int bfd = open(lv->base, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (bfd < 0 || fd_path(bfd, base_real, sizeof base_real) != 0) {
            snprintf(why, whylen, "%s: %s", lv->base, strerror(errno));
            if (bfd >= 0)
                close(bfd);
            return -1;
        }
        fd = walk(bfd, lv->sub, false, uid, gid, chown, why, whylen);
    } else {
        /* An empty_dir (or a Memory one where no tmpfs can be had): the
         * job's directory I, the tenant's, and its sub_path made in it. */
        int jfd = job_vol_dir(workdir, name, *fresh, why, whylen);
        *fresh = false;
        if (jfd < 0)
            return -1;
        char idx[16];
        snprintf(idx, sizeof idx, "%d", (int)lv->index);
        if (fd_path(jfd, base_real, sizeof base_real) != 0) {
            close(jfd);
            snprintf(why, whylen, "cannot read the path of the job's volumes: %s", strerror(errno));
            return -1;
        }
        char rel[SL_VOLUME_PATH_MAX + 16];
        snprintf(rel, sizeof rel, "%s%s%s", idx, lv->sub ? "/" : "", lv->sub ? lv->sub : "");
        fd = walk(jfd, rel, true, uid, gid, chown, why, whylen);
        v->kind = SL_VOLUME_EMPTY_DIR;
    }
    if (fd < 0)
        return -1;
    v->fd = fd;
    snprintf(v->fdpath, sizeof v->fdpath, "/proc/self/fd/%d", fd);
    struct stat st;
    if (fd_path(fd, v->node_path, sizeof v->node_path) != 0 || fstat(fd, &st) != 0) {
        snprintf(why, whylen, "cannot read what was opened: %s", strerror(errno));
        return -1;
    }
    v->is_dir = S_ISDIR(st.st_mode);
    v->dev = st.st_dev;
    v->ino = st.st_ino;
    if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
        snprintf(why, whylen, "%s is neither a directory nor a regular file", v->node_path);
        return -1;
    }
    /* Once more on the real paths: under its base, and apart from the
     * agent's own files (every job's directory, log and bundle). */
    if (!under(v->node_path, base_real)) {
        snprintf(why, whylen, "%s is not under %s", v->node_path, base_real);
        return -1;
    }
    if (v->kind == SL_VOLUME_BIND && (under(v->node_path, realwd) || under(realwd, v->node_path))) {
        snprintf(why, whylen, "%s holds or is inside the agent's work directory %s (other jobs' "
                 "files): refused", v->node_path, realwd);
        return -1;
    }
    return 0;
}

int agent_volumes_prepare(const char *workdir, const char *name, const char *node, bool fresh,
                          uid_t uid, gid_t gid, bool chown, bool container, bool ns,
                          const sl_proto_volume_t *lv, size_t n, agent_volume_t **out,
                          char *reason, size_t rlen) {
    *out = NULL;
    if (n == 0)
        return 0;
    char realwd[PATH_MAX];
    if (realpath(workdir, realwd) == NULL) {
        snprintf(reason, rlen, "cannot resolve the work directory %s on node %s: %s", workdir,
                 node, strerror(errno));
        return -1;
    }
    agent_volume_t *v = sl_xcalloc(n, sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i].fd = -1;
    for (size_t i = 0; i < n; i++) {
        char why[4400];
        struct stat st;
        bool at = ns && stat(lv[i].path, &st) == 0, dir = at && S_ISDIR(st.st_mode);
        bool tmpfs_ok = container || dir;
        if (prepare_one(workdir, realwd, name, &fresh, uid, gid, chown, tmpfs_ok, &lv[i], &v[i],
                        why, sizeof why) != 0) {
            snprintf(reason, rlen, "volume %s: %s on node %s", lv[i].path, why, node);
            agent_volumes_release(v, n);
            return -1;
        }
        v[i].mount_here = at && (v[i].kind == SL_VOLUME_TMPFS || dir == v[i].is_dir);
    }
    *out = v;
    return 0;
}

int agent_volumes_mount(const agent_volume_t *v, size_t n, const char *const *opts,
                        size_t *failed) {
    *failed = 0;
    if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        *failed = i;
        if (!v[i].mount_here)
            continue;
        unsigned long ro = v[i].read_only ? MS_RDONLY : 0;
        if (v[i].kind == SL_VOLUME_TMPFS) {
            if (mount("tmpfs", v[i].path, "tmpfs", MS_NOSUID | MS_NODEV | ro, opts[i]) != 0)
                return -1;
            continue;
        }
        struct stat st;
        int fd = open(v[i].node_path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
            return -1;
        if (fstat(fd, &st) != 0 || st.st_dev != v[i].dev || st.st_ino != v[i].ino) {
            close(fd);
            errno = ESTALE;
            return -1;
        }
        /* "/proc/self/fd/N" by hand: no stdio in the child. */
        char src[32] = "/proc/self/fd/", digits[12];
        int nd = 0, o = 14;
        for (unsigned x = (unsigned)fd; x || nd == 0; x /= 10)
            digits[nd++] = (char)('0' + x % 10);
        while (nd)
            src[o++] = digits[--nd];
        src[o] = '\0';
        int rc = mount(src, v[i].path, NULL, MS_BIND | MS_REC, NULL) != 0 ||
                         mount(NULL, v[i].path, NULL, MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV | ro,
                               NULL) != 0
                     ? -1
                     : 0;
        int e = errno;
        close(fd);
        errno = e;
        if (rc != 0)
            return -1;
    }
    return 0;
}

void agent_volumes_release(agent_volume_t *v, size_t n) {
    if (v == NULL)
        return;
    for (size_t i = 0; i < n; i++)
        if (v[i].fd >= 0)
            close(v[i].fd);
    sl_free(v);
}

/* Empties the directory dfd (consumed) without following a link; depth
 * bounds the recursion. 0, or -1 when something stayed. */
static int empty_dir(int dfd, int depth) {
    DIR *d = fdopendir(dfd);
    if (d == NULL) {
        close(dfd);
        return -1;
    }
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (unlinkat(dirfd(d), e->d_name, 0) == 0)
            continue;
        if (errno != EISDIR && errno != EPERM) {
            rc = -1;
            continue;
        }
        int sub = depth > 0 ? openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
                                                             O_CLOEXEC)
                            : -1;
        if (sub < 0 || empty_dir(sub, depth - 1) != 0 ||
            unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR) != 0)
            rc = -1;
    }
    closedir(d);
    return rc;
}

void agent_volumes_remove(const char *workdir, const char *name) {
    char path[4200];
    snprintf(path, sizeof path, "%s/volumes/%s", workdir, name);
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return; /* none: the job had no empty_dir here */
    if (empty_dir(fd, 64) != 0 || rmdir(path) != 0)
        sl_log(SL_LOG_WARN, "agent", "cannot remove all of %s: %s", path, strerror(errno));
}
