/*
 * pyxis.c - pyxis' container options onto the job spec (pyxis.h).
 *
 * Each value goes through the spec table's own checks (jobspec.h), so
 * `#SBATCH --container-mounts=data:/d` fails as `--mount data:/d` would,
 * with the same words.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobspec.h"
#include "pyxis.h"

static int fail(int which, int *bad, char *err, size_t errlen, const char *msg) {
    *bad = which;
    snprintf(err, errlen, "%s", msg);
    return -1;
}

static int set_text(json_t *spec, const char *field, const char *text, int which, int *bad,
                    char *err, size_t errlen) {
    char e[512];
    json_t *v = sl_jobspec_from_text(sl_jobspec_find(field), text, e, sizeof e);
    if (!v) return fail(which, bad, err, errlen, e);
    json_object_set_new(spec, field, v);
    return 0;
}

/* One pyxis mount, SRC, SRC:DST or SRC:DST:FLAGS, as the spec's. */
static int add_mount(json_t *list, const char *m, size_t len, int *bad, char *err, size_t errlen) {
    char one[2 * SL_JOBSPEC_PATH_MAX + 8], e[512];
    if (len == 0 || len >= SL_JOBSPEC_PATH_MAX)
        return fail(CLI_PYXIS_MOUNTS, bad, err, errlen, "an empty or too long mount");
    snprintf(one, sizeof one, "%.*s", (int)len, m);
    if (!memchr(m, ':', len)) snprintf(one, sizeof one, "%.*s:%.*s", (int)len, m, (int)len, m);
    if (sl_jobspec_mount_parse(one, NULL, NULL, NULL, e, sizeof e) != 0)
        return fail(CLI_PYXIS_MOUNTS, bad, err, errlen, e);
    json_array_append_new(list, json_string(one));
    return 0;
}

int cli_pyxis_apply(json_t *spec, const char *const vals[CLI_PYXIS_N], int *bad, char *err,
                    size_t errlen) {
    const char *img = vals[CLI_PYXIS_IMAGE];
    if (img) {
        size_t n = strlen(img);
        if (img[0] == '/' || img[0] == '.' || (n > 5 && strcmp(img + n - 5, ".sqsh") == 0))
            return fail(CLI_PYXIS_IMAGE, bad, err, errlen,
                        "a squashfs file is enroot's; Sluice runs images of the node's image "
                        "store (podman import or load it there; docs/containers.md)");
        char *copy = strdup(img);
        if (!copy) abort();
        char *hash = strchr(copy, '#');
        if (hash) *hash = '/'; /* enroot's nvcr.io#nvidia/pytorch */
        int rc = set_text(spec, "image", copy, CLI_PYXIS_IMAGE, bad, err, errlen);
        free(copy);
        if (rc) return rc;
    }
    if (vals[CLI_PYXIS_MOUNTS]) {
        json_t *list = json_array();
        for (const char *p = vals[CLI_PYXIS_MOUNTS];;) {
            size_t len = strcspn(p, ",");
            if (add_mount(list, p, len, bad, err, errlen) != 0) {
                json_decref(list);
                return -1;
            }
            if (!p[len]) break;
            p += len + 1;
        }
        json_object_set_new(spec, "mounts", list);
    }
    if (vals[CLI_PYXIS_WORKDIR] &&
        set_text(spec, "workdir", vals[CLI_PYXIS_WORKDIR], CLI_PYXIS_WORKDIR, bad, err, errlen))
        return -1;
    if (vals[CLI_PYXIS_NAME] && !json_object_get(spec, "name") &&
        set_text(spec, "name", vals[CLI_PYXIS_NAME], CLI_PYXIS_NAME, bad, err, errlen))
        return -1;
    return 0;
}
