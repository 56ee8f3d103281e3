/*
 * cstart.c - sluice-cstart BUNDLE: starts one image task's container
 * (docs/containers.md; the bundle's spec.json is container.h's).
 *
 * The agent starts it as the task itself: in the task's cgroup (every
 * hierarchy), session and process group, under the task's monitor, still
 * root, with no_new_privs. In order:
 *
 *  1. The image, from the node's store (podman's): `podman image inspect`
 *     gives its id and its config (entrypoint, command, env, working
 *     directory), kept per name while the store's list of images is the
 *     same file (inspect). Pull policy never: a missing image fails the
 *     start; if-not-present: pulled then; always: pulled first.
 *  2. Its root file system, unpacked once per image id into
 *     WORKDIR/images/ID/rootfs (podman image mount, copied, unmounted),
 *     under a lock, shared read-only by every container of that image: a
 *     start after the first costs nothing here. The points the container's
 *     mounts need are made in it (never through a symbolic link of the
 *     image's: such a path fails the start).
 *  3. BUNDLE/config.json, the OCI runtime spec: user, PID, mount, IPC and
 *     UTS namespaces (the host's network, as NCCL and torchrun want), the
 *     one user of the namespace (0) mapped to the tenant's uid and gid and
 *     nothing else, no capabilities, no_new_privs; the image's root read
 *     only, a tmpfs /tmp, /dev/shm of the spec's size, the job directory
 *     at its own path (read-write, the working directory unless the spec or
 *     the image names one), the spec's mounts (binds; a "tmpfs" one is a
 *     tmpfs of that many bytes), the task's GPU device files
 *     (and nothing else of the host's /dev), sluice-init as PID 1.
 *     The volumes' sources are bound, as the inodes the agent checked, onto
 *     BUNDLE/vol (stage_volumes), where runc binds them from.
 *  4. The tenant's user (setgroups(0), setgid, setuid): runc runs as that
 *     user, rootless. A rootless runc cannot move a process between
 *     cgroups (the task's cgroup is root's) and, given no cgroupsPath,
 *     does not try: the container's processes stay in the task's cgroup,
 *     under its limits and its OOM killer, as a plain task's do.
 *  5. runc run (foreground: runc passes every signal the agent sends the
 *     process group on to sluice-init, which passes it to the task), waited
 *     for here, and its end mirrored: 128 + N from runc is the task killed
 *     by signal N, so this process dies of N too and the monitor records
 *     exactly what it records for a plain task.
 *
 * A pod's task (spec.json's "containers", container.h) does 1 and 2 for
 * each of its containers, the volumes' staging once, 3 for each (its
 * bundle BUNDLE/c.NAME, its own image, command, env, devices and the
 * mounts it asked for), then 5 for all of them at once, and waits for
 * every one: the task ends when the last container has, failing as the
 * first container that failed (named in the log), as a Kubernetes Job's
 * pod does.
 *
 * A failure before runc runs is written, one line, to BUNDLE/failed (the
 * directory is still root's then), and on the log, and ends this process
 * with status 125 (AGENT_CONTAINER_FAILED_EXIT); the agent reports the task
 * failed with that reason.
 */
#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "container.h"

static const char *bundle;
static json_t *spec;

static const char *sget(const char *key) {
    return json_string_value(json_object_get(spec, key));
}

/* Ends the start: reason to BUNDLE/failed and the log, status 125. */
static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...) {
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "sluice-cstart: %s\n", msg);
    char path[4200];
    snprintf(path, sizeof path, "%s/failed", bundle);
    /* A new file only: never one already there (the bundle is the tenant's
     * once handed over, and the agent trusts only a file of root's). */
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd >= 0) {
        dprintf(fd, "%s\n", msg);
        close(fd);
    }
    exit(AGENT_CONTAINER_FAILED_EXIT);
}

/* Runs argv and waits; its stdout into out (cap bytes, NUL-terminated)
 * when out is not NULL, else nowhere (the task's log is the task's own);
 * stderr to the log. Returns its exit status, or -1. */
static int run(char *const *argv, char *out, size_t cap) {
    int p[2] = {-1, -1};
    if (out && pipe2(p, O_CLOEXEC) != 0) return -1;
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        int null = out ? -1 : open("/dev/null", O_WRONLY);
        dup2(out ? p[1] : null, 1);
        static char *const env[] = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                                    "HOME=/root", NULL};
        execve(argv[0], argv, env);
        fprintf(stderr, "sluice-cstart: cannot execute %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    size_t n = 0;
    if (out) {
        close(p[1]);
        for (;;) {
            ssize_t r = read(p[0], out + n, cap - 1 - n);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) break;
            n += (size_t)r;
            if (n + 1 >= cap) {
                /* Too much: drain the rest. */
                char sink[4096];
                while (read(p[0], sink, sizeof sink) > 0) {}
                break;
            }
        }
        out[n] = '\0';
        close(p[0]);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* podman with the node's store, then the words given (NULL-ended). */
static int podman(char *out, size_t cap, ...) {
    char *argv[32];
    int n = 0;
    char root[4200], runroot[4200];
    argv[n++] = "/usr/bin/podman";
    const char *store = sget("store");
    if (store) {
        snprintf(root, sizeof root, "--root=%s", store);
        snprintf(runroot, sizeof runroot, "--runroot=%s/run", store);
        argv[n++] = root;
        argv[n++] = runroot;
    }
    argv[n++] = "--events-backend=none";
    va_list ap;
    va_start(ap, cap);
    for (char *w; n < 31 && (w = va_arg(ap, char *)) != NULL;) argv[n++] = w;
    va_end(ap);
    argv[n] = NULL;
    return run(argv, out, cap);
}

/* ---- the image ---- */

/* The image's inspect record (a new reference), or NULL when the store
 * does not have it. */
static json_t *inspect_podman(const char *image) {
    static char out[1 << 20];
    if (podman(out, sizeof out, "image", "inspect", "--", (char *)image, (char *)NULL) != 0)
        return NULL;
    json_t *a = json_loads(out, 0, NULL);
    json_t *r = json_incref(json_array_get(a, 0));
    json_decref(a);
    return r;
}

/* The store's list of images: podman rewrites it (a new file, renamed in)
 * whenever an image is added, tagged or removed. Its device, inode, size
 * and time as text into key; false when there is none to go by. */
static bool store_key(char *key, size_t len) {
    const char *store = sget("store");
    static const char *const lists[] = {"overlay-images/images.json", "vfs-images/images.json"};
    for (size_t i = 0; i < 2; i++) {
        char path[4200];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", store ? store : "/var/lib/containers/storage",
                 lists[i]);
        if (stat(path, &st) == 0) {
            snprintf(key, len, "%llu.%llu.%lld.%lld.%ld", (unsigned long long)st.st_dev,
                     (unsigned long long)st.st_ino, (long long)st.st_size,
                     (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
            return true;
        }
    }
    return false;
}

/* The image's inspect record (a new reference), or NULL when the store
 * does not have it. The record of a name is kept in WORKDIR/images/names
 * with the store's key (store_key) and reused while the store's list is
 * unchanged: one podman process less (40-60 ms) on every start after the
 * first. */
static json_t *inspect(const char *image) {
    char key[128], dir[4200], path[4300], tmp[4400];
    bool keyed = store_key(key, sizeof key);
    snprintf(dir, sizeof dir, "%s/names", sget("images"));
    /* The file's name: the image's name, '/' and ':' escaped. */
    char name[1100];
    size_t n = 0;
    for (const char *p = image; *p && n + 4 < sizeof name; p++) {
        if (*p == '/' || *p == ':' || *p == '%' || *p == '@') {
            n += (size_t)snprintf(name + n, sizeof name - n, "%%%02x", (unsigned char)*p);
        } else {
            name[n++] = *p;
        }
    }
    name[n] = '\0';
    snprintf(path, sizeof path, "%s/%s.json", dir, name);
    if (keyed) {
        json_t *c = json_load_file(path, 0, NULL);
        const char *k = json_string_value(json_object_get(c, "store"));
        json_t *rec = json_object_get(c, "image");
        if (k && strcmp(k, key) == 0 && json_is_object(rec)) {
            json_incref(rec);
            json_decref(c);
            return rec;
        }
        json_decref(c);
    }
    json_t *rec = inspect_podman(image);
    if (rec && keyed && (mkdir(sget("images"), 0711) == 0 || errno == EEXIST) &&
        (mkdir(dir, 0700) == 0 || errno == EEXIST)) {
        snprintf(tmp, sizeof tmp, "%s.%d", path, (int)getpid());
        json_t *c = json_pack("{s:s, s:O}", "store", key, "image", rec);
        if (c && json_dump_file(c, tmp, JSON_COMPACT) == 0) rename(tmp, path);
        unlink(tmp);
        json_decref(c);
    }
    return rec;
}

static json_t *find_image(const char *image, const char *pull) {
    json_t *img = NULL;
    if (strcmp(pull, "always") == 0) {
        if (podman(NULL, 0, "pull", "--quiet", "--", (char *)image, (char *)NULL) != 0)
            die("cannot pull image %s onto node %s (pull policy always); podman's message is "
                "in the log above", image, sget("hostname"));
    } else if ((img = inspect(image)) != NULL) {
        return img;
    } else if (strcmp(pull, "never") == 0) {
        die("image %s is not in node %s's image store and the pull policy is never", image,
            sget("hostname"));
    } else if (podman(NULL, 0, "pull", "--quiet", "--", (char *)image, (char *)NULL) != 0) {
        die("image %s is not in node %s's image store and cannot be pulled (pull policy "
            "if-not-present); podman's message is in the log above", image, sget("hostname"));
    }
    if ((img = inspect(image)) == NULL)
        die("image %s cannot be read from node %s's image store", image, sget("hostname"));
    return img;
}

/* Makes path (absolute, inside the image) under rootfs: each missing
 * directory 0755, the last part a directory or (file) an empty file. A
 * symbolic link on the way, or an existing part of the wrong kind, fails
 * the start: the image's own links must never lead a root process out. */
static void mount_point(int rootfd, const char *path, bool file) {
    char buf[4200];
    snprintf(buf, sizeof buf, "%s", path);
    int dir = dup(rootfd);
    char *save = NULL;
    char *part = strtok_r(buf, "/", &save);
    while (part) {
        char *next = strtok_r(NULL, "/", &save);
        bool last = next == NULL;
        struct stat st;
        if (fstatat(dir, part, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            if (errno != ENOENT) die("cannot make %s in image %s: %s", path, sget("image"), strerror(errno));
            if (last && file) {
                int fd = openat(dir, part, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
                if (fd < 0 && errno != EEXIST)
                    die("cannot make %s in image %s: %s", path, sget("image"), strerror(errno));
                if (fd >= 0) close(fd);
                break;
            }
            if (mkdirat(dir, part, 0755) != 0 && errno != EEXIST)
                die("cannot make %s in image %s: %s", path, sget("image"), strerror(errno));
        } else if (S_ISLNK(st.st_mode)) {
            die("%s passes through a symbolic link (%s) in image %s: mount it elsewhere", path,
                part, sget("image"));
        } else if (last) {
            break;  /* there already; runc checks its kind */
        } else if (!S_ISDIR(st.st_mode)) {
            die("%s: %s is not a directory in image %s", path, part, sget("image"));
        }
        int nd = openat(dir, part, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (nd < 0) die("cannot open %s in image %s: %s", path, sget("image"), strerror(errno));
        close(dir);
        dir = nd;
        part = next;
    }
    close(dir);
}

/* WORKDIR/images/ID/rootfs, unpacked now unless there already, with the
 * mount points this container needs; under the image's lock. */
static void rootfs(const char *id, char *out, size_t len) {
    const char *images = sget("images");
    char path[4200], tmp[4200], lock[4200];
    if (mkdir(images, 0711) != 0 && errno != EEXIST) die("cannot create %s: %s", images, strerror(errno));
    snprintf(lock, sizeof lock, "%s/%s.lock", images, id);
    int lk = open(lock, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (lk < 0 || flock(lk, LOCK_EX) != 0) die("cannot lock %s: %s", lock, strerror(errno));
    snprintf(path, sizeof path, "%s/%s", images, id);
    if (mkdir(path, 0755) != 0 && errno != EEXIST) die("cannot create %s: %s", path, strerror(errno));
    snprintf(out, len, "%s/%s/rootfs", images, id);
    struct stat st;
    if (stat(out, &st) != 0) {
        char mnt[8192];
        if (podman(mnt, sizeof mnt, "image", "mount", (char *)id, (char *)NULL) != 0)
            die("cannot mount image %s on node %s", sget("image"), sget("hostname"));
        mnt[strcspn(mnt, "\n")] = '\0';
        snprintf(tmp, sizeof tmp, "%s/%s/rootfs.tmp", images, id);
        char rm[4300];
        snprintf(rm, sizeof rm, "%s", tmp);
        char *rmv[] = {"/bin/rm", "-rf", "--", rm, NULL};
        run(rmv, NULL, 0);
        char src[8200];
        snprintf(src, sizeof src, "%s/.", mnt);
        char *cpv[] = {"/bin/cp", "-a", "--", src, tmp, NULL};
        int rc = mkdir(tmp, 0755) == 0 ? run(cpv, NULL, 0) : -1;
        podman(NULL, 0, "image", "unmount", (char *)id, (char *)NULL);
        if (rc != 0 || chmod(tmp, 0755) != 0 || rename(tmp, out) != 0)
            die("cannot unpack image %s into %s", sget("image"), out);
    }
    int rootfd = open(out, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (rootfd < 0) die("cannot open %s: %s", out, strerror(errno));
    static const char *const dirs[] = {"/proc", "/sys", "/dev", "/tmp"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) mount_point(rootfd, dirs[i], false);
    mount_point(rootfd, "/.sluice-init", true);
    mount_point(rootfd, sget("jobdir"), false);
    if (sget("cwd")) mount_point(rootfd, sget("cwd"), false);
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(spec, "mounts"), i, m) {
        const char *src = json_string_value(json_object_get(m, "source"));
        if (src == NULL) { /* a tmpfs volume: a directory */
            mount_point(rootfd, json_string_value(json_object_get(m, "destination")), false);
            continue;
        }
        if (stat(src, &st) != 0) die("mount %s: %s on node %s", src, strerror(errno), sget("hostname"));
        mount_point(rootfd, json_string_value(json_object_get(m, "destination")), !S_ISDIR(st.st_mode));
    }
    close(rootfd);
    close(lk); /* the lock goes with it */
}

/* ---- volumes ---- */

/* Each volume's source (a mount with "dev" and "ino": the inode the agent
 * checked, container.h) bound onto BUNDLE/vol/I, in a mount namespace of
 * this process's own (which runc inherits and which ends with the
 * container): BUNDLE/vol is a tmpfs, root's, so the tenant, whose the
 * bundle becomes, can neither rename it nor plant anything in it; a source
 * that is no longer the checked inode fails the start; read-only ones are
 * bound read-only here already, which the container cannot undo. The
 * mount's source becomes the staged path. Root only (else runc binds the
 * node paths as they are). */
static void stage_volumes(void) {
    size_t i, n = 0;
    json_t *m;
    json_array_foreach(json_object_get(spec, "mounts"), i, m) n += json_object_get(m, "ino") != NULL;
    if (n == 0 || getuid() != 0) return;
    char dir[4200], dst[4300], fdp[40];
    snprintf(dir, sizeof dir, "%s/vol", bundle);
    if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
        (mkdir(dir, 0711) != 0 && errno != EEXIST) ||
        mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0711,size=64k") != 0)
        die("cannot make the volumes' mount points in %s: %s", dir, strerror(errno));
    json_array_foreach(json_object_get(spec, "mounts"), i, m) {
        json_t *ino = json_object_get(m, "ino");
        const char *src = json_string_value(json_object_get(m, "source"));
        if (!ino || !src) continue;
        struct stat st;
        int fd = open(src, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) != 0 || (json_int_t)st.st_ino != json_integer_value(ino) ||
            (json_int_t)st.st_dev != json_integer_value(json_object_get(m, "dev")))
            die("volume %s: %s is no longer what the agent checked on node %s",
                json_string_value(json_object_get(m, "destination")), src, sget("hostname"));
        snprintf(dst, sizeof dst, "%s/%zu", dir, i);
        snprintf(fdp, sizeof fdp, "/proc/self/fd/%d", fd);
        int made = S_ISDIR(st.st_mode) ? mkdir(dst, 0700) : mknod(dst, S_IFREG | 0600, 0);
        unsigned long ro = json_is_true(json_object_get(m, "ro")) ? MS_RDONLY : 0;
        if (made != 0 || mount(fdp, dst, NULL, MS_BIND | MS_REC, NULL) != 0 ||
            mount(NULL, dst, NULL, MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV | ro, NULL) != 0)
            die("volume %s: cannot bind %s: %s", json_string_value(json_object_get(m, "destination")),
                src, strerror(errno));
        close(fd);
        json_object_set_new(m, "source", json_string(dst));
    }
}

/* ---- the runtime spec ---- */

static json_t *mnt(const char *dst, const char *type, const char *src, const char *opts) {
    json_t *o = json_array();
    char buf[256];
    snprintf(buf, sizeof buf, "%s", opts);
    char *save = NULL;
    for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save))
        json_array_append_new(o, json_string(w));
    return json_pack("{s:s, s:s, s:s, s:o}", "destination", dst, "type", type, "source", src,
                     "options", o);
}

/* K=V strings: the image's, then the task's, which win, by name. */
static json_t *merged_env(json_t *img_env) {
    json_t *out = json_array(), *v;
    size_t i, j;
    json_t *lists[2] = {img_env, json_object_get(spec, "env")};
    for (int l = 0; l < 2; l++) {
        json_array_foreach(lists[l], i, v) {
            const char *kv = json_string_value(v);
            const char *eq = kv ? strchr(kv, '=') : NULL;
            if (!eq) continue;
            size_t kl = (size_t)(eq - kv) + 1;
            json_t *old;
            bool done = false;
            json_array_foreach(out, j, old) {
                if (strncmp(json_string_value(old), kv, kl) == 0) {
                    json_array_set_new(out, j, json_string(kv));
                    done = true;
                    break;
                }
            }
            if (!done) json_array_append_new(out, json_string(kv));
        }
    }
    json_array_foreach(out, i, v)
        if (strncmp(json_string_value(v), "PATH=", 5) == 0) return out;
    json_array_append_new(out, json_string("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"));
    return out;
}

static json_t *runtime_spec(json_t *img, const char *root) {
    json_t *cfg = json_object_get(img, "Config");
    json_t *args = json_array(), *v;
    size_t i;
    json_array_append_new(args, json_string("/.sluice-init"));
    json_array_append_new(args, json_string("--"));
    json_t *cmd = json_object_get(spec, "args");
    if (!json_is_array(cmd)) {
        json_array_foreach(json_object_get(cfg, "Entrypoint"), i, v) json_array_append(args, v);
        cmd = json_object_get(spec, "image_args"); /* Kubernetes' args without a command */
        if (!json_is_array(cmd)) cmd = json_object_get(cfg, "Cmd");
    }
    json_array_foreach(cmd, i, v) json_array_append(args, v);
    if (json_array_size(args) == 2)
        die("image %s has no entrypoint or command, and the job gives no command", sget("image"));
    const char *wd = sget("cwd");
    const char *iwd = json_string_value(json_object_get(cfg, "WorkingDir"));
    if (!wd) wd = iwd && iwd[0] ? iwd : sget("jobdir");
    char shm[64];
    snprintf(shm, sizeof shm, "nosuid,nodev,noexec,mode=1777,size=%lld",
             (long long)json_integer_value(json_object_get(spec, "shm_size")));
    json_t *mounts = json_array();
    json_array_append_new(mounts, mnt("/proc", "proc", "proc", "nosuid,noexec,nodev"));
    json_array_append_new(mounts, mnt("/dev", "tmpfs", "tmpfs", "nosuid,strictatime,mode=755,size=65536k"));
    json_array_append_new(mounts, mnt("/dev/pts", "devpts", "devpts",
                                      "nosuid,noexec,newinstance,ptmxmode=0666,mode=0620"));
    json_array_append_new(mounts, mnt("/dev/shm", "tmpfs", "shm", shm));
    json_array_append_new(mounts, mnt("/dev/mqueue", "mqueue", "mqueue", "nosuid,noexec,nodev"));
    json_array_append_new(mounts, mnt("/sys", "none", "/sys", "rbind,nosuid,noexec,nodev,ro"));
    json_array_append_new(mounts, mnt("/tmp", "tmpfs", "tmpfs", "nosuid,nodev,mode=1777"));
    json_array_append_new(mounts, mnt(sget("jobdir"), "bind", sget("jobdir"), "rbind,nosuid,nodev,rw"));
    json_array_append_new(mounts, mnt("/.sluice-init", "bind", sget("init"), "bind,nosuid,nodev,ro"));
    json_array_foreach(json_object_get(spec, "mounts"), i, v) {
        bool ro = json_is_true(json_object_get(v, "ro"));
        json_t *tmpfs = json_object_get(v, "tmpfs");
        if (tmpfs) { /* a medium Memory volume: a tmpfs of its size */
            char opt[96];
            snprintf(opt, sizeof opt, "nosuid,nodev,mode=1777,size=%lld",
                     (long long)json_integer_value(tmpfs));
            json_array_append_new(mounts, mnt(json_string_value(json_object_get(v, "destination")),
                                              "tmpfs", "tmpfs", opt));
            continue;
        }
        json_array_append_new(mounts, mnt(json_string_value(json_object_get(v, "destination")),
                                          "bind", json_string_value(json_object_get(v, "source")),
                                          ro ? "rbind,nosuid,nodev,ro" : "rbind,nosuid,nodev,rw"));
    }
    json_array_foreach(json_object_get(spec, "devices"), i, v)
        json_array_append_new(mounts, mnt(json_string_value(json_object_get(v, "destination")),
                                          "bind", json_string_value(json_object_get(v, "source")),
                                          "bind,nosuid,rw"));
    json_int_t uid = json_integer_value(json_object_get(spec, "uid"));
    json_int_t gid = json_integer_value(json_object_get(spec, "gid"));
    return json_pack(
        "{s:s, s:{s:b, s:{s:i, s:i}, s:o, s:o, s:s, s:{}, s:b}, s:{s:s, s:b}, s:s, s:o,"
        " s:{s:[{s:s},{s:s},{s:s},{s:s},{s:s}], s:[{s:i, s:I, s:i}], s:[{s:i, s:I, s:i}],"
        " s:[s,s,s,s,s,s,s,s,s,s], s:[s,s,s,s,s]}}",
        "ociVersion", "1.0.2",
        "process", "terminal", 0, "user", "uid", 0, "gid", 0, "args", args, "env",
        merged_env(json_object_get(cfg, "Env")), "cwd", wd, "capabilities",
        "noNewPrivileges", 1,
        "root", "path", root, "readonly", 1,
        "hostname", sget("hostname"),
        "mounts", mounts,
        "linux", "namespaces", "type", "pid", "type", "ipc", "type", "uts", "type", "mount",
        "type", "user",
        "uidMappings", "containerID", 0, "hostID", uid, "size", 1,
        "gidMappings", "containerID", 0, "hostID", gid, "size", 1,
        "maskedPaths", "/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys",
        "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug",
        "/sys/firmware", "/proc/scsi",
        "readonlyPaths", "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger");
}

/* The cgroup this process is in, in the memory hierarchy (v1) or the
 * unified one: the task's, relative to the hierarchy's root; "" if none. */
static void own_cgroup(char *out, size_t len) {
    out[0] = '\0';
    FILE *f = fopen("/proc/self/cgroup", "r");
    char line[4300];
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2) continue;
        *c2 = '\0';
        bool memory = strstr(c1 + 1, "memory") != NULL;
        if (memory || (c1[1] == '\0' && !out[0])) snprintf(out, len, "%s", c2 + 1);
        if (memory) break;
    }
    if (f) fclose(f);
}

/* ---- running it ---- */

static void ignore(int sig) {
    (void)sig; /* runc, in the same process group, got it too */
}

/* Ends this process as the container ended: runc's 128 + N is signal N. */
static void mirror(int st) {
    int sig = 0;
    if (WIFSIGNALED(st))
        sig = WTERMSIG(st);
    else if (WEXITSTATUS(st) > 128 && WEXITSTATUS(st) < 128 + 32)
        sig = WEXITSTATUS(st) - 128;
    if (sig && sig != SIGCHLD && sig != SIGURG && sig != SIGWINCH && sig != SIGCONT &&
        sig != SIGSTOP && sig != SIGTSTP && sig != SIGTTIN && sig != SIGTTOU) {
        struct rlimit none = {0, 0};
        setrlimit(RLIMIT_CORE, &none);
        signal(sig, SIG_DFL);
        sigset_t s;
        sigemptyset(&s);
        sigaddset(&s, sig);
        sigprocmask(SIG_UNBLOCK, &s, NULL);
        kill(getpid(), sig);
    }
    exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + sig);
}

/* The most containers of a pod's task (pod.h's SL_POD_CONTAINERS_MAX). */
#define POD_MAX 16

/* A pod's containers while they run: each one's runc (0 once ended), its
 * role, its name; the first that failed (a main or init one) and how. */
enum { ROLE_MAIN, ROLE_INIT, ROLE_SIDECAR };
static pid_t pids[POD_MAX];
static int role[POD_MAX];
static char name[POD_MAX][80];
static bool is_pod;
static int first = -1, st = 0;

static pid_t start_runc(char *runc, char *state, char *dir, char *cid, bool as_root) {
    pid_t pid = fork();
    if (pid != 0) return pid;
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    char rootless[] = "--rootless=true";
    char *rargv[] = {runc, "--root", state, "run", "--bundle", dir, cid, NULL, NULL};
    if (as_root) {
        memmove(rargv + 2, rargv + 1, 7 * sizeof *rargv);
        rargv[1] = rootless;
    }
    static char *const env[] = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                                NULL};
    execve(runc, rargv, env);
    fprintf(stderr, "sluice-cstart: cannot execute %s: %s\n", runc, strerror(errno));
    _exit(AGENT_CONTAINER_FAILED_EXIT);
}

static volatile sig_atomic_t alarmed;

static void on_alarm(int sig) {
    (void)sig;
    alarmed = 1;
}

/* Waits for one of the n containers to end and records it (the log says
 * how, for a pod; the first main or init one to fail is the task's end).
 * Returns its index (n for another child), -2 when a signal came first
 * (a cancel's, passed on by each runc; the grace's alarm), -1 when no
 * child is left. */
static int reap(size_t n) {
    int one;
    pid_t pid = waitpid(-1, &one, 0);
    if (pid < 0) return errno == EINTR ? -2 : -1;
    size_t i = 0;
    while (i < n && pids[i] != pid) i++;
    if (i == n) return (int)n;
    pids[i] = 0;
    bool bad = !WIFEXITED(one) || WEXITSTATUS(one) != 0;
    if (is_pod) {
        if (WIFEXITED(one))
            fprintf(stderr, "sluice-cstart: container %s exited with status %d\n", name[i],
                    WEXITSTATUS(one));
        else
            fprintf(stderr, "sluice-cstart: container %s was killed by signal %d\n", name[i],
                    WTERMSIG(one));
    }
    if (first < 0 && role[i] != ROLE_SIDECAR && (bad || !is_pod)) {
        first = (int)i;
        st = one;
        if (is_pod && bad)
            fprintf(stderr, "sluice-cstart: the pod fails as container %s did (its first "
                    "failure)\n", name[i]);
    }
    return (int)i;
}

static size_t mains_left(void) {
    size_t k = 0;
    for (size_t i = 0; i < POD_MAX; i++) k += pids[i] > 0 && role[i] == ROLE_MAIN;
    return k;
}

/* The grace a sidecar gets after its SIGTERM, as Kubernetes' default
 * terminationGracePeriodSeconds, before its runc is killed. */
#define SIDECAR_GRACE_S 30

/* SIGTERM to each sidecar still running (its runc passes it on), again
 * each second (a runc still starting its container drops a signal), then
 * waits for them, SIGKILL after the grace. */
static void stop_sidecars(size_t n) {
    size_t left = 0;
    for (size_t i = 0; i < n; i++)
        if (pids[i] > 0) {
            fprintf(stderr, "sluice-cstart: stopping sidecar %s (SIGTERM)\n", name[i]);
            kill(pids[i], SIGTERM);
            left++;
        }
    if (left == 0) return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    alarm(1);
    for (int waited = 0;;) {
        size_t k = 0;
        for (size_t i = 0; i < n; i++) k += pids[i] > 0;
        if (k == 0 || reap(n) == -1) break;
        if (!alarmed) continue;
        alarmed = 0;
        int sig = ++waited < SIDECAR_GRACE_S ? SIGTERM : SIGKILL;
        for (size_t i = 0; i < n; i++)
            if (pids[i] > 0) kill(pids[i], sig);
        alarm(1);
    }
    alarm(0);
}

/* Points the spec's per-container keys (image, args, cwd, env, devices,
 * mounts) at the pod's container c (container.h): its mounts are those of
 * all (the top-level list) that its indices name. */
static void select_container(json_t *c, json_t *all) {
    static const char *const keys[] = {"image", "args", "image_args", "cwd", "env", "devices"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        json_t *v = json_object_get(c, keys[k]);
        json_object_set(spec, keys[k], v ? v : json_null());
    }
    json_t *ms = json_array(), *x;
    size_t i;
    json_array_foreach(json_object_get(c, "mounts"), i, x) {
        json_t *m = json_array_get(all, (size_t)json_integer_value(x));
        if (m) json_array_append(ms, m);
    }
    json_object_set_new(spec, "mounts", ms);
}

/* Writes the runtime spec of the selected container (image img, root
 * file system root) into dir/config.json, the tenant's when it is to run
 * as the tenant. */
static void write_config(json_t *img, const char *root, const char *dir, bool as_root, uid_t uid,
                         gid_t gid) {
    char path[4200];
    json_t *rs = runtime_spec(img, root);
    if (!rs) die("cannot write the runtime spec of image %s", sget("image"));
    /* A root task (the config's allow_root) runs runc as root, which would
     * make cgroups of its own: it is given the task's own (joined, no
     * resource written) and --rootless true, under which runc also leaves
     * the devices cgroup to the agent. */
    if (as_root) {
        char cg[4200];
        own_cgroup(cg, sizeof cg);
        if (cg[0]) json_object_set_new(json_object_get(rs, "linux"), "cgroupsPath", json_string(cg));
    }
    /* The bundle becomes the tenant's: runc, as that user, reads the spec
     * and keeps its state there. */
    snprintf(path, sizeof path, "%s/config.json", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    char *text = json_dumps(rs, JSON_COMPACT);
    if (fd < 0 || !text || write(fd, text, strlen(text)) != (ssize_t)strlen(text) ||
        (getuid() == 0 && (fchown(fd, uid, gid) != 0 || chown(dir, uid, gid) != 0)))
        die("cannot write %s: %s", path, strerror(errno));
    close(fd);
    free(text);
    json_decref(rs);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: sluice-cstart BUNDLE (the agent starts it; docs/containers.md)\n");
        return 2;
    }
    bundle = argv[1];
    char path[4200];
    json_error_t je;
    snprintf(path, sizeof path, "%s/spec.json", bundle);
    if (!(spec = json_load_file(path, 0, &je))) die("cannot read %s: %s", path, je.text);
    /* One container, or each of a pod's (container.h), in order. */
    json_t *pod = json_incref(json_object_get(spec, "containers"));
    json_t *all = json_incref(json_object_get(spec, "mounts"));
    size_t n = pod ? json_array_size(pod) : 1;
    if (n == 0 || n > POD_MAX) die("a pod of %zu containers: 1 to %d", n, POD_MAX);
    const char *pull = sget("pull");
    json_t *img[POD_MAX];
    char root[POD_MAX][4200], dir[POD_MAX][4200], cid[POD_MAX][300];
    is_pod = pod != NULL;
    for (size_t i = 0; i < n; i++) {
        json_t *c = pod ? json_array_get(pod, i) : NULL;
        if (c) select_container(c, all);
        snprintf(name[i], sizeof name[i], "%s", c ? json_string_value(json_object_get(c, "name")) : "");
        const char *r = c ? json_string_value(json_object_get(c, "role")) : NULL;
        role[i] = !r ? ROLE_MAIN : !strcmp(r, "init") ? ROLE_INIT : ROLE_SIDECAR;
        const char *image = sget("image");
        img[i] = find_image(image, pull ? pull : "if-not-present");
        const char *id = json_string_value(json_object_get(img[i], "Id"));
        if (!id || strchr(id, '/') || id[0] == '.') die("image %s has no id in the store", image);
        rootfs(id, root[i], sizeof root[i]);
    }
    if (pod) json_object_set(spec, "mounts", all);
    stage_volumes();
    uid_t uid = (uid_t)json_integer_value(json_object_get(spec, "uid"));
    gid_t gid = (gid_t)json_integer_value(json_object_get(spec, "gid"));
    bool as_root = uid == 0 && getuid() == 0;
    for (size_t i = 0; i < n; i++) {
        snprintf(cid[i], sizeof cid[i], "%s%s%s", sget("id"), pod ? "." : "", name[i]);
        snprintf(dir[i], sizeof dir[i], "%s%s%s", bundle, pod ? "/c." : "", name[i]);
        if (pod) {
            select_container(json_array_get(pod, i), all);
            if (mkdir(dir[i], 0700) != 0) die("cannot create %s: %s", dir[i], strerror(errno));
        }
        write_config(img[i], root[i], dir[i], as_root, uid, gid);
        json_decref(img[i]);
    }
    if (pod && getuid() == 0 && chown(bundle, uid, gid) != 0)
        die("cannot hand %s over: %s", bundle, strerror(errno));
    json_decref(all);
    json_decref(pod);
    char runc[4200], state[4200];
    snprintf(runc, sizeof runc, "%s", sget("runtime"));
    snprintf(state, sizeof state, "%s/state", bundle);
    pid_t parent = getppid();
    if (getuid() == 0 && (syscall(SYS_setgroups, 0, NULL) != 0 || syscall(SYS_setgid, gid) != 0 ||
                          syscall(SYS_setuid, uid) != 0))
        die("cannot switch to uid %u gid %u: %s", (unsigned)uid, (unsigned)gid, strerror(errno));
    /* Dies with the monitor, as a plain task (the identity change cleared it). */
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (getppid() != parent) return 137;
    json_decref(spec);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = ignore;
    static const int passed[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM};
    for (size_t i = 0; i < sizeof passed / sizeof passed[0]; i++) sigaction(passed[i], &sa, NULL);
    /* Each container its own runc in the foreground, all in this process
     * group (a cancel's signal reaches each runc, which passes it to its
     * sluice-init): an init container to its end before the next starts,
     * a sidecar and every other container at once; the task ends when
     * every main container has, the sidecars then stopped. */
    for (size_t i = 0; i < n; i++) {
        pids[i] = start_runc(runc, state, dir[i], cid[i], as_root);
        if (pids[i] < 0) return AGENT_CONTAINER_FAILED_EXIT;
        while (role[i] == ROLE_INIT && pids[i] > 0 && reap(n) != -1) continue;
        if (role[i] == ROLE_INIT && first >= 0) break; /* it failed: no more start */
    }
    while (mains_left() > 0 && reap(n) != -1) continue;
    stop_sidecars(n);
    mirror(st);
    return 0;
}
