/*
 * secrets.c - a task's secret files and variables (secrets.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "seal.h"
#include "secrets.h"
#include "sluice/alloc.h"

void agent_secrets_dir(const char *jobdir, int32_t task, char *buf, size_t len) {
    snprintf(buf, len, "%s/secrets/%d", jobdir, (int)task);
}

/* Removes name below dirfd: a file, or a directory and what it holds
 * (made writable first, for an agent that is not root). */
static void rm_tree(int dirfd, const char *name, int depth) {
    if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT || depth > 16)
        return;
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return;
    fchmod(fd, 0700);
    DIR *d = fdopendir(fd);
    if (d == NULL) {
        close(fd);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            rm_tree(fd, e->d_name, depth + 1);
    closedir(d);
    if (unlinkat(dirfd, name, AT_REMOVEDIR) != 0 && errno != ENOENT)
        sl_log(SL_LOG_WARN, "agent", "cannot remove a secrets directory %s: %s", name,
               strerror(errno));
}

void agent_secrets_remove(const char *workdir, const char *name, int32_t task) {
    char path[4200], t[16];
    snprintf(path, sizeof path, "%s/jobs/%s/secrets", workdir, name);
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return;
    snprintf(t, sizeof t, "%d", (int)task);
    rm_tree(fd, t, 0);
    close(fd);
}

/* The directories made, made read-only (0500) once their files are in. */
typedef struct made {
    int fd[256];
    size_t n;
} made_t;

/* Opens (making it when missing, mode 0700) directory name below dirfd,
 * never through a link; -1 with errno. */
static int sub_dir(int dirfd, const char *name, bool own, uid_t uid, gid_t gid, made_t *m) {
    if (mkdirat(dirfd, name, 0700) != 0 && errno != EEXIST)
        return -1;
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    if ((own && fchown(fd, uid, gid) != 0) || m->n == sizeof m->fd / sizeof m->fd[0]) {
        int e = errno ? errno : EMFILE;
        close(fd);
        errno = e;
        return -1;
    }
    m->fd[m->n++] = fd;
    return fd;
}

int agent_secrets_write(int jobfd, int32_t task, const sl_proto_secrets_t *s, bool own,
                        uid_t uid, gid_t gid, char *reason, size_t rlen) {
    if (s->ndirs == 0)
        return 0;
    made_t m = {.n = 0};
    int rc = -1, top = -1;
    char t[16], what[600] = "secrets";
    snprintf(t, sizeof t, "%d", (int)task);
    errno = 0;
    if ((mkdirat(jobfd, "secrets", 0711) != 0 && errno != EEXIST) ||
        (top = openat(jobfd, "secrets", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
        goto out;
    rm_tree(top, t, 0); /* an earlier attempt's */
    snprintf(what, sizeof what, "secrets/%s", t);
    int tfd = sub_dir(top, t, own, uid, gid, &m);
    if (tfd < 0)
        goto out;
    for (size_t i = 0; i < s->ndirs; i++) {
        const sl_proto_secret_dir_t *d = &s->dirs[i];
        snprintf(what, sizeof what, "secrets/%s/%s", t, d->dir);
        int dfd = sub_dir(tfd, d->dir, own, uid, gid, &m);
        if (dfd < 0)
            goto out;
        for (size_t k = 0; k < d->nfiles; k++) {
            const sl_proto_secret_file_t *f = &d->files[k];
            snprintf(what, sizeof what, "secrets/%s/%s/%s", t, d->dir, f->rel);
            char rel[1100];
            snprintf(rel, sizeof rel, "%s", f->rel);
            int at = dfd;
            char *p = rel, *slash;
            while ((slash = strchr(p, '/')) != NULL) {
                *slash = '\0';
                if ((at = sub_dir(at, p, own, uid, gid, &m)) < 0)
                    goto out;
                p = slash + 1;
            }
            unsigned char *val = NULL;
            size_t len = 0;
            if (sl_base64_decode(f->value, &val, &len) != 0) {
                errno = EINVAL;
                goto out;
            }
            int fd = openat(at, p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
            bool ok = fd >= 0 && write(fd, val, len) == (ssize_t)len &&
                      fchmod(fd, (mode_t)d->mode) == 0 && (!own || fchown(fd, uid, gid) == 0);
            int e = errno;
            sl_wipe(val, len);
            sl_free(val);
            if (fd >= 0) close(fd);
            if (!ok) {
                errno = e ? e : EIO;
                goto out;
            }
        }
    }
    rc = 0;
out:
    if (rc != 0)
        snprintf(reason, rlen, "cannot write the task's secret file %s in its job directory: %s",
                 what, strerror(errno ? errno : EIO));
    for (size_t i = m.n; i-- > 0;) {
        if (rc == 0) fchmod(m.fd[i], 0500);
        close(m.fd[i]);
    }
    if (top >= 0) {
        if (rc != 0) rm_tree(top, t, 0);
        close(top);
    }
    return rc;
}

int agent_secrets_env(const sl_proto_secrets_t *s, void (*set)(void *ud, const char *k,
                      const char *v), void *ud, char *reason, size_t rlen) {
    for (size_t i = 0; i < s->nenv; i++) {
        unsigned char *v = NULL;
        size_t len = 0;
        if (sl_base64_decode(s->env_values[i], &v, &len) != 0 || memchr(v, 0, len)) {
            snprintf(reason, rlen, "the secret variable %s is not base64 text without NUL bytes",
                     s->env_keys[i]);
            sl_free(v);
            return -1;
        }
        set(ud, s->env_keys[i], (const char *)v);
        sl_wipe(v, len);
        sl_free(v);
    }
    return 0;
}
