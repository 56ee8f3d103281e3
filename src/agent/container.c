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
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "cdi.h"
#include "pod.h"
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

/* Whether K=V's name is one of Sluice's variables, which a container's
 * env never replaces (spawn.c sets them; they win over the job's). */
static bool sluice_var(const char *kv) {
    static const char *const exact[] = {"CUDA_VISIBLE_DEVICES=", "RANK=", "WORLD_SIZE=",
                                        "LOCAL_RANK=", "MASTER_ADDR=", "MASTER_PORT=", NULL};
    for (int i = 0; exact[i]; i++)
        if (strncmp(kv, exact[i], strlen(exact[i])) == 0) return true;
    return strncmp(kv, "SLUICE_", 7) == 0 || strncmp(kv, "CUDA_MPS_", 9) == 0;
}

/* Sets K=V in env (a list of "K=V"), replacing K's entry if there is one. */
static void env_put(json_t *env, const char *k, const char *v) {
    size_t i, kl = strlen(k);
    json_t *e;
    char *kv;
    if (asprintf(&kv, "%s=%s", k, v) < 0) abort();
    json_array_foreach(env, i, e) {
        const char *x = json_string_value(e);
        if (x && strncmp(x, k, kl) == 0 && x[kl] == '=') {
            json_array_set_new(env, i, json_string(kv));
            free(kv);
            return;
        }
    }
    json_array_append_new(env, json_string(kv));
    free(kv);
}

/* The pod's containers for spec.json (container.h): each one's env (CDI's
 * for its GPUs, the task's, its own over the job's but never over
 * Sluice's variables, and CUDA_VISIBLE_DEVICES of its own GPUs), its
 * devices, and its mounts as indices into mounts (to which a CDI spec's
 * mounts for its GPUs are appended). NULL with reason on a CDI failure. */
static json_t *pod_json(const agent_container_config_t *cc, const agent_container_task_t *t,
                        json_t *mounts, char *reason, size_t rlen) {
    json_t *out = json_array(), *c;
    size_t ci, nbase = json_array_size(mounts);
    json_array_foreach(t->containers, ci, c) {
        size_t first, n;
        sl_pod_gpus(t->containers, ci, t->ngpus, &first, &n);
        json_t *env = json_array(), *devs = json_array(), *idx = json_array(), *more = json_array();
        char cdi[4200] = "";
        int rc = n ? agent_cdi_edits(cc->cdi_dirs, t->gpus + first, n, devs, more, env, cdi,
                                     sizeof cdi, reason, rlen)
                   : 0;
        if (rc < 0) {
            json_decref(env);
            json_decref(devs);
            json_decref(idx);
            json_decref(more);
            json_decref(out);
            return NULL;
        }
        if (rc == 0) {
            char src[16 + 4][256], dst[16 + 4][256];
            size_t nd = agent_container_gpu_devices(cc->gpu_files, t->gpus + first, n, src, dst, 20);
            for (size_t i = 0; i < nd; i++)
                json_array_append_new(devs, json_pack("{s:s, s:s}", "source", src[i], "destination",
                                                      dst[i]));
        }
        for (char *const *e = t->env; e && *e; e++) json_array_append_new(env, json_string(*e));
        const char *k;
        json_t *v;
        json_object_foreach(json_object_get(c, "env"), k, v) {
            char probe[300];
            snprintf(probe, sizeof probe, "%s=", k);
            if (!sluice_var(probe)) env_put(env, k, json_string_value(v));
        }
        char vis[512] = "";
        for (size_t g = 0; g < n; g++) {
            size_t l = strlen(vis);
            snprintf(vis + l, sizeof vis - l, "%s%d", g ? "," : "", (int)t->gpus[first + g]);
        }
        env_put(env, "CUDA_VISIBLE_DEVICES", vis);
        /* The host mounts and secret directories (no inode, no tmpfs) are
         * every container's; a volume only the containers that see it. */
        for (size_t i = 0; i < nbase; i++) {
            json_t *m = json_array_get(mounts, i);
            bool vol = json_object_get(m, "ino") || json_object_get(m, "tmpfs");
            if (!vol || sl_pod_sees(c, json_string_value(json_object_get(m, "destination"))))
                json_array_append_new(idx, json_integer((json_int_t)i));
        }
        size_t mi;
        json_t *m;
        json_array_foreach(more, mi, m) {
            json_array_append_new(idx, json_integer((json_int_t)json_array_size(mounts)));
            json_array_append(mounts, m);
        }
        json_decref(more);
        json_t *cmd = json_object_get(c, "command"), *wd = json_object_get(c, "workdir");
        json_t *ia = json_object_get(c, "args");
        json_t *role = json_object_get(c, "role");
        json_array_append_new(out, json_pack("{s:O, s:O, s:O, s:O, s:O, s:o, s:o, s:o, s:o}", "name",
                                             json_object_get(c, "name"), "image",
                                             json_object_get(c, "image"), "args",
                                             cmd ? cmd : json_null(), "image_args",
                                             ia ? ia : json_null(), "cwd", wd ? wd : json_null(),
                                             "env", env, "mounts", idx, "devices", devs, "cdi",
                                             cdi[0] ? json_string(cdi) : json_null()));
        if (role) json_object_set(json_array_get(out, json_array_size(out) - 1), "role", role);
    }
    return out;
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
    json_t *pod = t->containers ? pod_json(cc, t, mounts, reason, rlen) : NULL;
    if (t->containers && !pod) {
        json_decref(env);
        json_decref(devs);
        json_decref(mounts);
        return -1;
    }
    /* GPUs: the toolkit's CDI spec where there is one (its env first, so
     * that the task's and Sluice's win), else the device files. */
    char cdi[4200] = "";
    int rc = t->ngpus && !pod ? agent_cdi_edits(cc->cdi_dirs, t->gpus, t->ngpus, devs, mounts, env, cdi,
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
    if (spec && t->nimage_args && !t->argv) {
        json_t *ia = json_array();
        for (size_t i = 0; i < t->nimage_args; i++) json_array_append_new(ia, json_string(t->image_args[i]));
        json_object_set_new(spec, "image_args", ia);
    }
    if (spec && pod) json_object_set_new(spec, "containers", pod);
    else json_decref(pod);
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
