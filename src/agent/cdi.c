/*
 * cdi.c - the NVIDIA CDI spec's edits for a container's GPUs (cdi.h).
 *
 * CDI (github.com/cncf-tags/container-device-interface) is the form in
 * which the NVIDIA container toolkit says what a container needs for a GPU:
 * its device nodes, the driver's libraries and binaries to mount, the
 * environment. podman, containerd and CRI-O apply it; runc does not know
 * it, so the agent applies it here, before the fork, into the bundle. The
 * YAML reader (common/yamldoc.h) reads the JSON form too.
 */
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdi.h"
#include "yamldoc.h"

static const char *scalar(const sl_yaml_node_t *map, const char *key) {
    const sl_yaml_node_t *v = sl_yaml_map_get(map, key);
    return v && v->kind == SL_YAML_SCALAR ? v->value : NULL;
}

/* One containerEdits map into the three lists. */
static void apply(const sl_yaml_node_t *edits, json_t *devs, json_t *mounts, json_t *env) {
    const sl_yaml_node_t *l = sl_yaml_map_get(edits, "deviceNodes");
    for (size_t i = 0; l && l->kind == SL_YAML_SEQ && i < l->n; i++) {
        const char *path = scalar(l->items[i], "path"), *host = scalar(l->items[i], "hostPath");
        if (path && path[0] == '/')
            json_array_append_new(devs, json_pack("{s:s, s:s}", "source", host ? host : path,
                                                  "destination", path));
    }
    l = sl_yaml_map_get(edits, "mounts");
    for (size_t i = 0; l && l->kind == SL_YAML_SEQ && i < l->n; i++) {
        const char *host = scalar(l->items[i], "hostPath");
        const char *dst = scalar(l->items[i], "containerPath");
        const sl_yaml_node_t *o = sl_yaml_map_get(l->items[i], "options");
        bool ro = false;
        for (size_t k = 0; o && o->kind == SL_YAML_SEQ && k < o->n; k++)
            ro |= o->items[k]->kind == SL_YAML_SCALAR && strcmp(o->items[k]->value, "ro") == 0;
        if (host && dst && host[0] == '/' && dst[0] == '/')
            json_array_append_new(mounts, json_pack("{s:s, s:s, s:b}", "source", host,
                                                    "destination", dst, "ro", ro));
    }
    l = sl_yaml_map_get(edits, "env");
    for (size_t i = 0; l && l->kind == SL_YAML_SEQ && i < l->n; i++)
        if (l->items[i]->kind == SL_YAML_SCALAR && strchr(l->items[i]->value, '='))
            json_array_append_new(env, json_string(l->items[i]->value));
}

static bool spec_file(const char *name) {
    size_t n = strlen(name);
    return (n > 5 && strcmp(name + n - 5, ".yaml") == 0) ||
           (n > 4 && strcmp(name + n - 4, ".yml") == 0) ||
           (n > 5 && strcmp(name + n - 5, ".json") == 0);
}

/* The first nvidia.com/gpu spec in dir, loaded; NULL when none. */
static sl_yaml_node_t *find_in(const char *dir, char *path, size_t plen) {
    struct dirent **names = NULL;
    int n = scandir(dir, &names, NULL, alphasort);
    sl_yaml_node_t *found = NULL;
    for (int i = 0; i < n; i++) {
        if (!found && spec_file(names[i]->d_name)) {
            char err[256];
            sl_yaml_node_t *root = NULL;
            snprintf(path, plen, "%s/%s", dir, names[i]->d_name);
            if (sl_yaml_load_file(path, &root, err, sizeof err) == 0 && root) {
                const char *kind = scalar(root, "kind");
                if (kind && strcmp(kind, "nvidia.com/gpu") == 0)
                    found = root;
                else
                    sl_yaml_free(root);
            }
        }
        free(names[i]);
    }
    free(names);
    return found;
}

int agent_cdi_edits(const char *dirs, const int32_t *gpus, size_t n, json_t *devs,
                    json_t *mounts, json_t *env, char *path, size_t plen, char *reason,
                    size_t rlen) {
    sl_yaml_node_t *spec = NULL;
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", dirs ? dirs : AGENT_CDI_DIRS);
    char *save = NULL;
    for (char *d = strtok_r(buf, ":", &save); d && !spec; d = strtok_r(NULL, ":", &save))
        spec = find_in(d, path, plen);
    if (!spec) return 0;
    const sl_yaml_node_t *list = sl_yaml_map_get(spec, "devices");
    for (size_t g = 0; g < n; g++) {
        char want[16];
        snprintf(want, sizeof want, "%d", (int)gpus[g]);
        const sl_yaml_node_t *dev = NULL;
        for (size_t i = 0; list && list->kind == SL_YAML_SEQ && i < list->n && !dev; i++) {
            const char *name = scalar(list->items[i], "name");
            if (name && strcmp(name, want) == 0) dev = list->items[i];
        }
        if (!dev) {
            snprintf(reason, rlen, "the CDI spec %s has no device nvidia.com/gpu=%s", path, want);
            sl_yaml_free(spec);
            return -1;
        }
        apply(sl_yaml_map_get(dev, "containerEdits"), devs, mounts, env);
    }
    apply(sl_yaml_map_get(spec, "containerEdits"), devs, mounts, env);
    sl_yaml_free(spec);
    return 1;
}
