/*
 * container.c - an image task's bundle (container.h): spec.json for
 * sluice-cstart, and the reason a start that failed left behind.
 *
 * Everything here runs in the agent before the task's fork, as root: a few
 * small files, no process. The image itself (its look-up in the node's
 * store, a pull, its root file system unpacked once per image id) is
 * cstart's, in the task's own process, so that a slow pull never holds the
 * agent's event loop.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "cdi.h"
#include "container.h"
#include "volumes.h"
#include "jobspec.h"
#include "log.h"

/* The control devices of the NVIDIA driver, beside each GPU's own. */
static const char *const nvidia_ctl[] = {"/dev/nvidiactl", "/dev/nvidia-uvm",
                                         "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset"};

static void dev_dest(const char *src, char *dst) {
    const char *base = strrchr(src, '/');
    if (strncmp(src, "/dev/", 5) == 0)
        snprintf(dst, 256, "%s", src);
    else
        snprintf(dst, 256, "/dev/%s", base ? base + 1 : src);
}

size_t agent_container_gpu_devices(const char *files, const int32_t *gpus, size_t n,
                                   char (*src)[256], char (*dst)[256], size_t max) {
    size_t k = 0;
    struct stat st;
    for (size_t i = 0; i < n && k < max; i++) {
        char path[256] = "";
        if (files) {
            /* File gpus[i] of the comma-separated list. */
            const char *p = files;
            for (int32_t g = 0; p && g < gpus[i]; g++) {
                p = strchr(p, ',');
                if (p) p++;
            }
            if (!p) continue;
            size_t len = strcspn(p, ",");
            if (len == 0 || len >= sizeof path) continue;
            memcpy(path, p, len);
            path[len] = '\0';
        } else {
            snprintf(path, sizeof path, "/dev/nvidia%d", (int)gpus[i]);
        }
        if (stat(path, &st) != 0 || !S_ISCHR(st.st_mode)) continue;
        snprintf(src[k], 256, "%s", path);
        dev_dest(path, dst[k]);
        k++;
    }
    for (size_t c = 0; n > 0 && c < sizeof nvidia_ctl / sizeof nvidia_ctl[0] && k < max; c++) {
        if (stat(nvidia_ctl[c], &st) != 0 || !S_ISCHR(st.st_mode)) continue;
        snprintf(src[k], 256, "%s", nvidia_ctl[c]);
        snprintf(dst[k], 256, "%s", nvidia_ctl[c]);
        k++;
    }
    return k;
}

/* Renames path, left by an earlier start, to path~N (the first N free). */
static int set_aside(const char *path) {
    char old[4200];
    for (int n = 1; n < 1000; n++) {
        snprintf(old, sizeof old, "%s~%d", path, n);
        if (renameat2(AT_FDCWD, path, AT_FDCWD, old, RENAME_NOREPLACE) == 0) return 0;
        if (errno != EEXIST) return -1;
    }
    errno = EEXIST;
    return -1;
}

static json_t *str_or_null(const char *s) {
    return s ? json_string(s) : json_null();
}

/* spec.json's mounts: the launch's "SRC:DST[:ro]" as objects. */
static json_t *mounts_json(const agent_container_task_t *t) {
    json_t *a = json_array();
    for (size_t i = 0; i < t->nmounts; i++) {
        char src[SL_JOBSPEC_PATH_MAX], dst[SL_JOBSPEC_PATH_MAX], err[64];
        bool ro = false;
        if (sl_jobspec_mount_parse(t->mounts[i], src, dst, &ro, err, sizeof err) != 0) continue;
        json_array_append_new(a, json_pack("{s:s, s:s, s:b}", "source", src, "destination", dst,
                                           "ro", ro));
    }
    for (size_t i = 0; i < t->nvolumes; i++) {
        const agent_volume_t *v = &t->volumes[i];
        if (v->kind == SL_VOLUME_TMPFS && strcmp(v->path, "/dev/shm") == 0)
            continue; /* the container's /dev/shm, of shm_size */
        if (v->kind == SL_VOLUME_TMPFS)
            json_array_append_new(a, json_pack("{s:s, s:I}", "destination", v->path, "tmpfs",
                                               (json_int_t)v->size));
        else
            json_array_append_new(a, json_pack("{s:s, s:s, s:b, s:I, s:I}", "source",
                                               v->node_path, "destination", v->path, "ro",
                                               v->read_only, "dev", (json_int_t)v->dev, "ino",
                                               (json_int_t)v->ino));
    }
    return a;
}

int agent_container_bundle(const agent_container_config_t *cc, const agent_container_task_t *t,
                           char *bundle, size_t blen, char *reason, size_t rlen) {
    char path[4200];
    snprintf(path, sizeof path, "%s/containers", t->workdir);
    if (mkdir(path, 0711) != 0 && errno != EEXIST) goto fail;
    snprintf(bundle, blen, "%s/containers/%s.%d", t->workdir, t->name, (int)t->task);
    if (mkdir(bundle, 0700) != 0 && (errno != EEXIST || set_aside(bundle) != 0 ||
                                     mkdir(bundle, 0700) != 0)) {
        snprintf(path, sizeof path, "%s", bundle);
        goto fail;
    }
    json_t *env = json_array(), *args = json_null(), *devs = json_array(), *mounts = mounts_json(t);
    /* GPUs: the toolkit's CDI spec where there is one (its env first, so
     * that the task's and Sluice's win), else the device files. */
    char cdi[4200] = "";
    int rc = t->ngpus ? agent_cdi_edits(cc->cdi_dirs, t->gpus, t->ngpus, devs, mounts, env, cdi,
                                        sizeof cdi, reason, rlen)
                      : 0;
    if (rc < 0) {
        json_decref(env);
        json_decref(devs);
        json_decref(mounts);
        return -1;
    }
    if (rc == 0) {
        cdi[0] = '\0';
        char src[16 + 4][256], dst[16 + 4][256];
        size_t nd = agent_container_gpu_devices(cc->gpu_files, t->gpus, t->ngpus, src, dst, 20);
        for (size_t i = 0; i < nd; i++)
            json_array_append_new(devs, json_pack("{s:s, s:s}", "source", src[i], "destination",
                                                  dst[i]));
    }
    for (char *const *e = t->env; e && *e; e++) json_array_append_new(env, json_string(*e));
    if (t->argv) {
        args = json_array();
        for (size_t i = 0; i < t->argc; i++) json_array_append_new(args, json_string(t->argv[i]));
    }
    char id[300], images[4200], failed[4200];
    snprintf(id, sizeof id, "sluice-%s.%d", t->name, (int)t->task);
    snprintf(images, sizeof images, "%s/images", t->workdir);
    snprintf(failed, sizeof failed, "%s/failed", bundle);
    int64_t shm = t->shm_size > 0 ? t->shm_size : AGENT_CONTAINER_SHM_DEFAULT;
    for (size_t i = 0; i < t->nvolumes; i++)
        if (t->volumes[i].kind == SL_VOLUME_TMPFS && strcmp(t->volumes[i].path, "/dev/shm") == 0)
            shm = t->volumes[i].size;
    json_t *spec = json_pack(
        "{s:s, s:s, s:o, s:s, s:s, s:s, s:s, s:I, s:I, s:s, s:o, s:o, s:s, s:o, s:I, s:o, s:o,"
        " s:s, s:o}",
        "id", id, "image", t->image, "store", str_or_null(cc->store), "pull",
        cc->pull ? cc->pull : "if-not-present", "runtime", cc->runtime, "init", cc->init,
        "images", images, "uid", (json_int_t)t->uid, "gid", (json_int_t)t->gid, "hostname",
        t->node, "args", args, "cwd", str_or_null(t->cwd), "jobdir", t->jobdir, "env", env,
        "shm_size", (json_int_t)shm,
        "mounts", mounts, "devices", devs, "reason", failed, "cdi",
        cdi[0] ? json_string(cdi) : json_null());
    snprintf(path, sizeof path, "%s/spec.json", bundle);
    rc = spec ? json_dump_file(spec, path, JSON_COMPACT) : -1;
    json_decref(spec);
    if (rc != 0) goto fail;
    return 0;
fail:
    snprintf(reason, rlen, "cannot write the container bundle %s on node %s: %s", path, t->node,
             strerror(errno ? errno : EIO));
    return -1;
}

bool agent_container_failure(const char *workdir, const char *name, int32_t task, char *reason,
                             size_t rlen) {
    char path[4200];
    snprintf(path, sizeof path, "%s/containers/%s.%d/failed", workdir, name, (int)task);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0) return false;
    ssize_t n = -1;
    if (fstat(fd, &st) == 0 && st.st_uid == 0 && S_ISREG(st.st_mode) && rlen > 0)
        n = read(fd, reason, rlen - 1);
    close(fd);
    if (n <= 0) return false;
    reason[n] = '\0';
    reason[strcspn(reason, "\n")] = '\0';
    return reason[0] != '\0';
}

char *agent_container_program(const char *name) {
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        sl_log(SL_LOG_ERROR, "agent", "cannot read /proc/self/exe to find %s: %s", name,
               strerror(errno));
        return NULL;
    }
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash) *slash = '\0';
    char *path;
    if (asprintf(&path, "%s/%s", slash ? self : ".", name) < 0) abort();
    if (access(path, X_OK) != 0) {
        sl_log(SL_LOG_ERROR, "agent", "cannot execute %s: %s (it is built and installed beside "
               "sluice-agent; --runtime needs it)", path, strerror(errno));
        free(path);
        return NULL;
    }
    return path;
}
