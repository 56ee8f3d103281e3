/*
 * k8s_container.c - a pod's one container and its volumes (k8s_container.h).
 *
 * What becomes what is the table of docs/jobspec.md, "Kubernetes". Three
 * kinds of field: those with a meaning here (image, command, resources,
 * env, mounts), read into the submission; those Kubernetes needs and
 * Sluice has no use for (a container's name, terminationMessagePath),
 * accepted; and those that ask for something Sluice would not do
 * (a probe, a privileged container), refused with their path. Fields that
 * change nothing here but that a user may believe do (ports, stdin) are
 * accepted with a warning saying so.
 *
 * Secrets and config maps are references: env[].valueFrom.secretKeyRef
 * and configMapKeyRef, envFrom, and secret/configMap volumes become the
 * submission's `secrets`, resolved on the controller at launch; their
 * values never pass through here.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_container.h"

/* ---- resources ---- */

/* A whole number in lo..hi from text, else -1. */
static long whole(const char *text, long lo, long hi) {
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    return errno || end == text || *end || v < lo || v > hi ? -1 : v;
}

/* HAMi's share of one GPU (h: gpumem-percentage, gpucores, gpumem in MiB)
 * beside nvidia.com/gpu g (path: the last of them given): the fraction of
 * one GPU it leaves to others is Sluice's gpu_share (the larger of the
 * memory and compute percentages; 100 is the whole GPU), and gpumem is
 * gpu_memory. HAMi gives each of several vGPUs the share; Sluice shares
 * one GPU per task, so g must be 1. 0, or -1 with the field named. */
static int hami_share(cli_k8s_t *k, const char *path, const char *g, const char *const h[3]) {
    cli_spec_t *s = k->s;
    if (!g || strcmp(g, "1"))
        return cli_spec_fail(s, path, "a HAMi share of a GPU needs nvidia.com/gpu: 1 (Sluice shares "
                             "one GPU per task; it is given %s)", g ? g : "none");
    long pct = 0;
    for (int i = 0; i < 2; i++) {
        if (!h[i]) continue;
        long v = whole(h[i], 1, 100);
        if (v < 0)
            return cli_spec_fail(s, path, "nvidia.com/%s: \"%s\" must be a whole percentage, 1 to 100",
                                 i ? "gpucores" : "gpumem-percentage", h[i]);
        if (v > pct) pct = v;
    }
    long mib = h[2] ? whole(h[2], 1, 1L << 30) : 0;
    if (mib < 0)
        return cli_spec_fail(s, path, "nvidia.com/gpumem: \"%s\" must be a whole number of MiB", h[2]);
    if (pct == 0)
        return cli_spec_fail(s, path, "nvidia.com/gpumem alone does not say what fraction of the GPU "
                             "the task takes: give nvidia.com/gpumem-percentage or nvidia.com/gpucores "
                             "beside it");
    if (pct == 100)
        return 0; /* the whole GPU: gpus 1, as given */
    char share[16], mem[32];
    snprintf(share, sizeof share, "0.%02ld", pct);
    json_object_del(k->job, "gpus");
    json_object_set_new(k->job, "gpu_share", json_string(share));
    if (mib) {
        snprintf(mem, sizeof mem, "%ldMi", mib);
        json_object_set_new(k->job, "gpu_memory", json_string(mem));
    }
    return 0;
}

static int resources(cli_k8s_t *k, const char *path, yaml_node_t *res) {
    cli_spec_t *s = k->s;
    if (cli_spec_want(s, path, res, YAML_MAPPING_NODE)) return -1;
    const char *gpu[2] = {NULL, NULL}, *cpu[2] = {NULL, NULL}, *mem[2] = {NULL, NULL};
    const char *gpu_res = NULL; /* an extended GPU resource: nvidia.com/a100 */
    /* HAMi's shares of one GPU: memory and compute in percent, memory in MiB. */
    const char *hami[3] = {NULL, NULL, NULL};
    char gpath[2][320], hpath[320] = "";
    int rc = 0;
    yaml_node_pair_t *pr = NULL;
    const char *key;
    yaml_node_t *v;
    char p[256];
    while (cli_spec_next(s, res, path, &pr, &key, &v, p, sizeof p)) {
        int which;
        if (!strcmp(key, "limits")) which = 0;
        else if (!strcmp(key, "requests")) which = 1;
        else {
            rc = cli_spec_fail(s, p, "not supported (limits and requests)");
            continue;
        }
        if (cli_spec_want(s, p, v, YAML_MAPPING_NODE)) {
            rc = -1;
            continue;
        }
        yaml_node_pair_t *q = NULL;
        const char *r, *val;
        yaml_node_t *rv;
        char rp[320];
        while (cli_spec_next(s, v, p, &q, &r, &rv, rp, sizeof rp)) {
            int h = !strcmp(r, "nvidia.com/gpumem-percentage") ? 0 : !strcmp(r, "nvidia.com/gpucores") ? 1
                  : !strcmp(r, "nvidia.com/gpumem") ? 2 : -1;
            if (cli_spec_string(s, rp, rv, &val)) {
                rc = -1;
            } else if (h >= 0) {
                /* HAMi (Project-HAMi): requests and limits alike; a limit wins. */
                if (!hami[h] || which == 0) hami[h] = val;
                snprintf(hpath, sizeof hpath, "%s", rp);
            } else if (!strcmp(r, "nvidia.com/gpu") ||
                       (!strncmp(r, "nvidia.com/", 11) && strncmp(r + 11, "mig-", 4))) {
                /* nvidia.com/a100 and the like: whole GPUs of the model the
                 * controller's gpu_resources maps the name to. */
                if (strcmp(r, "nvidia.com/gpu")) {
                    if (gpu_res && strcmp(gpu_res, r)) {
                        rc = cli_spec_fail(s, rp, "a second GPU resource (%s is given): one per task", gpu_res);
                        continue;
                    }
                    gpu_res = r;
                }
                if (gpu[which] && strcmp(gpu[which], val)) {
                    rc = cli_spec_fail(s, rp, "a second GPU count beside %s", gpath[which]);
                    continue;
                }
                gpu[which] = val;
                snprintf(gpath[which], sizeof gpath[which], "%s", rp);
            } else if (!strcmp(r, "cpu") || !strcmp(r, "memory")) {
                char err[256];
                json_t *ok = sl_jobspec_from_text(&sl_jobspec_fields[*r == 'c' ? SL_JS_CPUS : SL_JS_MEMORY],
                                                  val, err, sizeof err);
                if (!ok) {
                    rc = cli_spec_fail(s, rp, "%s", err);
                    continue;
                }
                json_decref(ok);
                if (*r == 'c') cpu[which] = val;
                else mem[which] = val;
            } else if (!strcmp(r, "ephemeral-storage")) {
                cli_spec_warn(s, rp, "not enforced: a task's files go to its job directory on the "
                              "node, limited by that file system only");
            } else {
                rc = cli_spec_fail(s, rp, "not supported (Sluice schedules nvidia.com/gpu, cpu and "
                                   "memory)");
            }
        }
    }
    if (gpu[0] && gpu[1] && strcmp(gpu[0], gpu[1]) != 0)
        return cli_spec_fail(s, gpath[1], "\"%s\" differs from the limit \"%s\" (GPU requests must "
                             "equal limits)", gpu[1], gpu[0]);
    const char *g = gpu[0] ? gpu[0] : gpu[1];
    char err[256];
    json_t *x;
    if (g) {
        if ((x = sl_jobspec_from_text(&sl_jobspec_fields[SL_JS_GPUS], g, err, sizeof err)) == NULL)
            return cli_spec_fail(s, gpath[gpu[0] ? 0 : 1], "%s", err);
        json_object_set_new(k->job, "gpus", x);
        if (gpu_res) json_object_set_new(k->job, "gpu_resource", json_string(gpu_res));
    }
    if ((hami[0] || hami[1] || hami[2]) && hami_share(k, hpath, g, hami) < 0)
        rc = -1;
    /* Requests are what Kubernetes schedules by; a limit alone is both. */
    if (cpu[1] || cpu[0]) json_object_set_new(k->job, "cpus", json_string(cpu[1] ? cpu[1] : cpu[0]));
    if (mem[1] || mem[0]) json_object_set_new(k->job, "memory", json_string(mem[1] ? mem[1] : mem[0]));
    /* A limit above its request bounds the task (the cgroup's): the job's
     * memory_limit and cpu_limit; one below it Kubernetes refuses too. */
    for (int c = 0; c < 2; c++) {
        const char **q = c ? mem : cpu;
        sl_jobspec_id_t req = c ? SL_JS_MEMORY : SL_JS_CPUS, lim = c ? SL_JS_MEMORY_LIMIT : SL_JS_CPU_LIMIT;
        int64_t nl, nr;
        if (!q[0] || !q[1] || sl_qty_parse(q[0], sl_jobspec_fields[req].qty, &nl, err, sizeof err) < 0 ||
            sl_qty_parse(q[1], sl_jobspec_fields[req].qty, &nr, err, sizeof err) < 0)
            continue;
        char lp[300];
        snprintf(lp, sizeof lp, "%s.limits.%s", path, c ? "memory" : "cpu");
        if (nl < nr)
            rc = cli_spec_fail(s, lp, "\"%s\" is below the request \"%s\"", q[0], q[1]);
        else if (nl > nr)
            json_object_set_new(k->job, sl_jobspec_fields[lim].name, json_string(q[0]));
    }
    return rc;
}

/* ---- env, envFrom ---- */

/* {name, key, optional} of a secretKeyRef or configMapKeyRef as a
 * `secrets` entry setting var. */
static int key_ref(cli_k8s_t *k, const char *path, yaml_node_t *ref, const char *kind,
                   const char *var) {
    cli_spec_t *s = k->s;
    if (cli_spec_want(s, path, ref, YAML_MAPPING_NODE)) return -1;
    const char *name = NULL, *key = NULL;
    bool optional = false;
    int rc = 0;
    yaml_node_pair_t *pr = NULL;
    const char *f;
    yaml_node_t *v;
    char p[400];
    while (cli_spec_next(s, ref, path, &pr, &f, &v, p, sizeof p)) {
        if (!strcmp(f, "name")) rc |= cli_spec_string(s, p, v, &name);
        else if (!strcmp(f, "key")) rc |= cli_spec_string(s, p, v, &key);
        else if (!strcmp(f, "optional")) rc |= cli_spec_bool(s, p, v, &optional);
        else rc = cli_spec_fail(s, p, "not supported (name, key, optional)");
    }
    if (!name || !*name) rc = cli_spec_fail(s, path, "needs a name");
    if (!key || !*key) rc = cli_spec_fail(s, path, "needs a key");
    if (rc) return -1;
    json_t *e = json_pack("{ss ss ss}", kind, name, "key", key, "env", var);
    if (optional) json_object_set_new(e, "optional", json_true());
    cli_spec_append(k->job, "secrets", e);
    return 0;
}

static int field_ref(cli_k8s_t *k, const char *path, yaml_node_t *ref, const char *var) {
    cli_spec_t *s = k->s;
    if (cli_spec_want(s, path, ref, YAML_MAPPING_NODE)) return -1;
    const char *fp = NULL;
    int rc = 0;
    yaml_node_pair_t *pr = NULL;
    const char *f;
    yaml_node_t *v;
    char p[400];
    while (cli_spec_next(s, ref, path, &pr, &f, &v, p, sizeof p)) {
        if (!strcmp(f, "fieldPath")) rc |= cli_spec_string(s, p, v, &fp);
        else if (!strcmp(f, "apiVersion")) continue;
        else rc = cli_spec_fail(s, p, "not supported (fieldPath)");
    }
    if (rc) return -1;
    if (!fp || (strcmp(fp, "metadata.name") && strcmp(fp, "metadata.namespace")))
        return cli_spec_fail(s, path, "fieldPath \"%s\" is not supported (metadata.name, the job's "
                             "name; metadata.namespace)", fp ? fp : "");
    json_object_set_new(k->fieldrefs, var, json_string(fp));
    return 0;
}

static int env_list(cli_k8s_t *k, const char *path, yaml_node_t *l) {
    cli_spec_t *s = k->s;
    if (cli_spec_want(s, path, l, YAML_SEQUENCE_NODE)) return -1;
    json_t *env = json_object_get(k->job, "env");
    if (!env) json_object_set_new(k->job, "env", env = json_object());
    int rc = 0;
    for (int i = 0; i < cli_spec_len(l); i++) {
        yaml_node_t *e = cli_spec_item(s, l, i);
        char ep[300];
        snprintf(ep, sizeof ep, "%s[%d]", path, i);
        if (cli_spec_want(s, ep, e, YAML_MAPPING_NODE)) {
            rc = -1;
            continue;
        }
        const char *name = NULL, *value = "";
        yaml_node_t *from = NULL;
        char fromp[340] = "";
        yaml_node_pair_t *pr = NULL;
        const char *f;
        yaml_node_t *v;
        char p[340];
        int bad = 0;
        while (cli_spec_next(s, e, ep, &pr, &f, &v, p, sizeof p)) {
            if (!strcmp(f, "name")) bad |= cli_spec_string(s, p, v, &name);
            else if (!strcmp(f, "value")) bad |= cli_spec_string(s, p, v, &value);
            else if (!strcmp(f, "valueFrom")) {
                from = v;
                snprintf(fromp, sizeof fromp, "%s", p);
            } else bad = cli_spec_fail(s, p, "not supported (name, value, valueFrom)");
        }
        if (!name) bad = cli_spec_fail(s, ep, "needs a name");
        else if (!sl_jobspec_env_name_ok(name)) bad = cli_spec_fail(s, ep, "\"%s\" is not a valid variable name", name);
        if (bad) {
            rc = -1;
            continue;
        }
        if (!from) {
            json_object_set_new(env, name, json_string(value));
            continue;
        }
        if (cli_spec_want(s, fromp, from, YAML_MAPPING_NODE)) {
            rc = -1;
            continue;
        }
        int n = 0;
        pr = NULL;
        while (cli_spec_next(s, from, fromp, &pr, &f, &v, p, sizeof p)) {
            n++;
            if (!strcmp(f, "secretKeyRef")) rc |= key_ref(k, p, v, "secret", name);
            else if (!strcmp(f, "configMapKeyRef")) rc |= key_ref(k, p, v, "config_map", name);
            else if (!strcmp(f, "fieldRef")) rc |= field_ref(k, p, v, name);
            else rc = cli_spec_fail(s, p, "not supported (secretKeyRef, configMapKeyRef, fieldRef)");
        }
        if (n != 1) rc = cli_spec_fail(s, fromp, "needs exactly one of secretKeyRef, configMapKeyRef, fieldRef");
    }
    return rc;
}

static int env_from(cli_k8s_t *k, const char *path, yaml_node_t *l) {
    cli_spec_t *s = k->s;
    if (cli_spec_want(s, path, l, YAML_SEQUENCE_NODE)) return -1;
    int rc = 0;
    for (int i = 0; i < cli_spec_len(l); i++) {
        yaml_node_t *e = cli_spec_item(s, l, i);
        char ep[300];
        snprintf(ep, sizeof ep, "%s[%d]", path, i);
        if (cli_spec_want(s, ep, e, YAML_MAPPING_NODE)) {
            rc = -1;
            continue;
        }
        const char *prefix = "", *kind = NULL, *name = NULL;
        bool optional = false;
        yaml_node_pair_t *pr = NULL;
        const char *f;
        yaml_node_t *v;
        char p[340];
        int bad = 0;
        while (cli_spec_next(s, e, ep, &pr, &f, &v, p, sizeof p)) {
            if (!strcmp(f, "prefix")) {
                bad |= cli_spec_string(s, p, v, &prefix);
                continue;
            }
            if (strcmp(f, "secretRef") && strcmp(f, "configMapRef")) {
                bad = cli_spec_fail(s, p, "not supported (secretRef, configMapRef, prefix)");
                continue;
            }
            if (kind) bad = cli_spec_fail(s, p, "give one of secretRef and configMapRef per item");
            kind = f[0] == 's' ? "secret" : "config_map";
            if (cli_spec_want(s, p, v, YAML_MAPPING_NODE)) {
                bad = -1;
                continue;
            }
            yaml_node_pair_t *q = NULL;
            const char *g;
            yaml_node_t *w;
            char gp[400];
            while (cli_spec_next(s, v, p, &q, &g, &w, gp, sizeof gp)) {
                if (!strcmp(g, "name")) bad |= cli_spec_string(s, gp, w, &name);
                else if (!strcmp(g, "optional")) bad |= cli_spec_bool(s, gp, w, &optional);
                else bad = cli_spec_fail(s, gp, "not supported (name, optional)");
            }
        }
        if (!kind) bad = cli_spec_fail(s, ep, "needs secretRef or configMapRef");
        else if (!name || !*name) bad = cli_spec_fail(s, ep, "needs a name");
        if (bad) {
            rc = -1;
            continue;
        }
        /* optional: an absent object gives nothing (the controller's). */
        json_t *ref = json_pack("{ss ss}", kind, name, "env_prefix", prefix);
        if (optional) json_object_set_new(ref, "optional", json_true());
        cli_spec_append(k->job, "secrets", ref);
    }
    return rc;
}

/* ---- securityContext ---- */

int cli_k8s_security(cli_k8s_t *k, const char *path, yaml_node_t *sc, bool container) {
    cli_spec_t *s = k->s;
    if (cli_spec_want(s, path, sc, YAML_MAPPING_NODE)) return -1;
    int rc = 0;
    yaml_node_pair_t *pr = NULL;
    const char *f;
    yaml_node_t *v;
    char p[320];
    while (cli_spec_next(s, sc, path, &pr, &f, &v, p, sizeof p)) {
        bool b;
        long long id;
        if (!strcmp(f, "runAsUser") || !strcmp(f, "runAsGroup")) {
            /* The controller knows the tenant's user and group: it refuses
             * any other (docs/jobspec.md). */
            if (cli_spec_int(s, p, v, 0, 4294967294LL, &id)) rc = -1;
            else json_object_set_new(k->job, f[5] == 'U' ? "run_as_user" : "run_as_group", json_integer(id));
        } else if (!strcmp(f, "runAsNonRoot") || !strcmp(f, "allowPrivilegeEscalation") ||
                   !strcmp(f, "readOnlyRootFilesystem")) {
            /* Tasks run as the tenant's user, without new privileges; an
             * image's root file system is read-only. */
            rc |= cli_spec_bool(s, p, v, &b);
        } else if (!strcmp(f, "privileged")) {
            if (cli_spec_bool(s, p, v, &b)) rc = -1;
            else if (b) rc = cli_spec_fail(s, p, "not supported: a task has no privileges beyond its tenant's user");
        } else if (!container && (!strcmp(f, "fsGroup") || !strcmp(f, "supplementalGroups") ||
                                  !strcmp(f, "fsGroupChangePolicy"))) {
            cli_spec_warn(s, p, "no meaning here: files are the tenant's user's and group's");
        } else if (!strcmp(f, "seccompProfile") || !strcmp(f, "seLinuxOptions") ||
                   !strcmp(f, "appArmorProfile")) {
            cli_spec_warn(s, p, "no meaning here: the node's runtime applies its own profile");
        } else if (!strcmp(f, "capabilities")) {
            yaml_node_t *add = NULL;
            if (v->type == YAML_MAPPING_NODE)
                for (yaml_node_pair_t *q = v->data.mapping.pairs.start; q < v->data.mapping.pairs.top; q++) {
                    const char *ck = cli_spec_scalar(cli_spec_node(s, q->key));
                    if (ck && !strcmp(ck, "add")) add = cli_spec_node(s, q->value);
                }
            if (add && !cli_spec_is_null(add) && cli_spec_len(add) > 0)
                rc = cli_spec_fail(s, p, "capabilities.add is not supported: a task has no capabilities");
        } else {
            rc = cli_spec_fail(s, p, "not supported");
        }
    }
    return rc;
}

/* ---- the container ---- */

static int mounts_list(cli_k8s_t *k, const char *path, yaml_node_t *l, json_t *out) {
    cli_spec_t *s = k->s;
    if (cli_spec_want(s, path, l, YAML_SEQUENCE_NODE)) return -1;
    int rc = 0;
    for (int i = 0; i < cli_spec_len(l); i++) {
        yaml_node_t *m = cli_spec_item(s, l, i);
        char mp[300];
        snprintf(mp, sizeof mp, "%s[%d]", path, i);
        if (cli_spec_want(s, mp, m, YAML_MAPPING_NODE)) {
            rc = -1;
            continue;
        }
        const char *name = NULL, *at = NULL, *sub = NULL;
        bool ro = false;
        int bad = 0;
        yaml_node_pair_t *pr = NULL;
        const char *f;
        yaml_node_t *v;
        char p[340];
        while (cli_spec_next(s, m, mp, &pr, &f, &v, p, sizeof p)) {
            if (!strcmp(f, "name")) bad |= cli_spec_string(s, p, v, &name);
            else if (!strcmp(f, "mountPath")) bad |= cli_spec_string(s, p, v, &at);
            else if (!strcmp(f, "subPath")) bad |= cli_spec_string(s, p, v, &sub);
            else if (!strcmp(f, "readOnly")) bad |= cli_spec_bool(s, p, v, &ro);
            else if (!strcmp(f, "mountPropagation")) {
                const char *mode;
                if (cli_spec_string(s, p, v, &mode)) bad = -1;
                else if (strcmp(mode, "None")) bad = cli_spec_fail(s, p, "\"%s\" is not supported (None)", mode);
            } else bad = cli_spec_fail(s, p, "not supported (name, mountPath, subPath, readOnly)");
        }
        if (!name) bad = cli_spec_fail(s, mp, "needs a name");
        if (!at || at[0] != '/') bad = cli_spec_fail(s, mp, "needs an absolute mountPath");
        if (sub && (sub[0] == '/' || strstr(sub, "..")))
            bad = cli_spec_fail(s, mp, "subPath \"%s\" must be a relative path without \"..\"", sub);
        if (bad) {
            rc = -1;
            continue;
        }
        json_t *e = json_pack("{ss ss sb ss}", "name", name, "path", at, "read_only", ro, "where", mp);
        if (sub && *sub) json_object_set_new(e, "sub_path", json_string(sub));
        json_array_append_new(out, e);
    }
    return rc;
}

int cli_k8s_container(cli_k8s_t *k, const char *path, yaml_node_t *c, json_t **mounts) {
    cli_spec_t *s = k->s;
    *mounts = json_array();
    if (cli_spec_want(s, path, c, YAML_MAPPING_NODE)) return -1;
    json_t *cmd = json_array(), *args = json_array();
    int rc = 0;
    yaml_node_pair_t *pr = NULL;
    const char *f, *str;
    yaml_node_t *v;
    char p[256];
    while (cli_spec_next(s, c, path, &pr, &f, &v, p, sizeof p)) {
        if (!strcmp(f, "name") || !strcmp(f, "imagePullPolicy") || !strcmp(f, "terminationMessagePath") ||
            !strcmp(f, "terminationMessagePolicy")) {
            rc |= cli_spec_string(s, p, v, &str);
        } else if (!strcmp(f, "image")) {
            json_t *image;
            if (cli_spec_field(s, p, v, &sl_jobspec_fields[SL_JS_IMAGE], &image)) rc = -1;
            else json_object_set_new(k->job, "image", image);
        } else if (!strcmp(f, "command")) {
            rc |= cli_spec_strings(s, p, v, cmd);
        } else if (!strcmp(f, "args")) {
            rc |= cli_spec_strings(s, p, v, args);
        } else if (!strcmp(f, "resources")) {
            rc |= resources(k, p, v);
        } else if (!strcmp(f, "env")) {
            rc |= env_list(k, p, v);
        } else if (!strcmp(f, "envFrom")) {
            rc |= env_from(k, p, v);
        } else if (!strcmp(f, "volumeMounts")) {
            rc |= mounts_list(k, p, v, *mounts);
        } else if (!strcmp(f, "workingDir")) {
            json_t *w;
            if (cli_spec_field(s, p, v, &sl_jobspec_fields[SL_JS_WORKDIR], &w)) rc = -1;
            else json_object_set_new(k->job, "workdir", w);
        } else if (!strcmp(f, "securityContext")) {
            rc |= cli_k8s_security(k, p, v, true);
        } else if (!strcmp(f, "ports")) {
            cli_spec_warn(s, p, "no meaning here: tasks use their node's network, so a port is "
                          "the node's (MASTER_ADDR and MASTER_PORT are set for gangs)");
        } else if (!strcmp(f, "restartPolicy") && json_is_true(json_object_get(k->job, "_init"))) {
            /* An init container's: Always makes it a native sidecar. */
            if (cli_spec_string(s, p, v, &str)) rc = -1;
            else if (!strcmp(str, "Always")) json_object_set_new(k->job, "_sidecar", json_true());
            else rc = cli_spec_fail(s, p, "\"%s\" is not supported (Always: a native sidecar)", str);
        } else if (!strcmp(f, "stdin") || !strcmp(f, "tty") || !strcmp(f, "stdinOnce")) {
            bool b;
            if (cli_spec_bool(s, p, v, &b)) rc = -1;
            else if (b) cli_spec_warn(s, p, "no meaning here: a task has no terminal; its output "
                                      "goes to its log (sluice logs)");
        } else {
            rc = cli_spec_fail(s, p, "not supported");
        }
    }
    /* A pod's container keeps args alone apart: the image's entrypoint,
     * then them (Kubernetes' meaning of args without command). */
    bool pod = json_object_get(k->job, "_pod") != NULL;
    json_object_del(k->job, "_pod");
    if ((pod || json_object_get(k->job, "image")) && json_array_size(cmd) == 0 && json_array_size(args) > 0)
        json_object_set(k->job, "args", args);
    else json_array_extend(cmd, args);
    if (json_array_size(cmd) > 0) json_object_set(k->job, "command", cmd);
    json_decref(cmd);
    json_decref(args);
    return rc;
}

/* A file mode as Kubernetes' YAML reads it: 0400 and 0o400 are octal
 * (YAML 1.1), 256 decimal; 0 to 0777. */
static int file_mode(cli_spec_t *s, const char *path, yaml_node_t *n, long long *out) {
    const char *v;
    if (cli_spec_string(s, path, n, &v)) return -1;
    const char *d = v[0] == '0' && v[1] == 'o' ? v + 2 : v;
    int base = d != v || (v[0] == '0' && v[1]) ? 8 : 10;
    char *end;
    long long x = *d ? strtoll(d, &end, base) : -1;
    if (x < 0 || *end || x > 0777)
        return cli_spec_fail(s, path, "\"%s\" is not a file mode from 0 to 0777", v);
    *out = x;
    return 0;
}

/* ---- volumes ---- */

/* items [{key, path, mode}] of a secret or configMap volume as
 * {"KEY": "rel/path"}. */
static int key_items(cli_spec_t *s, const char *path, yaml_node_t *l, json_t *items) {
    if (cli_spec_want(s, path, l, YAML_SEQUENCE_NODE)) return -1;
    int rc = 0;
    for (int i = 0; i < cli_spec_len(l); i++) {
        yaml_node_t *it = cli_spec_item(s, l, i);
        char ip[420];
        snprintf(ip, sizeof ip, "%s[%d]", path, i);
        if (cli_spec_want(s, ip, it, YAML_MAPPING_NODE)) {
            rc = -1;
            continue;
        }
        const char *key = NULL, *rel = NULL;
        yaml_node_pair_t *pr = NULL;
        const char *f;
        yaml_node_t *v;
        char p[460];
        while (cli_spec_next(s, it, ip, &pr, &f, &v, p, sizeof p)) {
            long long mode;
            if (!strcmp(f, "key")) rc |= cli_spec_string(s, p, v, &key);
            else if (!strcmp(f, "path")) rc |= cli_spec_string(s, p, v, &rel);
            else if (!strcmp(f, "mode")) {
                if (file_mode(s, p, v, &mode)) rc = -1;
                else cli_spec_warn(s, p, "not honoured: every file has the volume's mode");
            } else rc = cli_spec_fail(s, p, "not supported (key, path, mode)");
        }
        if (!key || !rel || !*rel || rel[0] == '/' || strstr(rel, ".."))
            rc = cli_spec_fail(s, ip, "needs a key and a relative path without \"..\"");
        else json_object_set_new(items, key, json_string(rel));
    }
    return rc;
}

/* A secret or configMap volume's source at path into e (kind: "secret"
 * or "config_map"; name key: secretName or name). */
static int key_volume(cli_spec_t *s, const char *path, yaml_node_t *src, const char *kind, json_t *e) {
    if (cli_spec_want(s, path, src, YAML_MAPPING_NODE)) return -1;
    const char *namekey = kind[0] == 's' ? "secretName" : "name";
    const char *name = NULL;
    int rc = 0;
    yaml_node_pair_t *pr = NULL;
    const char *f;
    yaml_node_t *v;
    char p[400];
    while (cli_spec_next(s, src, path, &pr, &f, &v, p, sizeof p)) {
        long long mode;
        bool opt;
        if (!strcmp(f, namekey)) rc |= cli_spec_string(s, p, v, &name);
        else if (!strcmp(f, "defaultMode")) {
            if (file_mode(s, p, v, &mode)) rc = -1;
            else json_object_set_new(e, "mode", json_integer(mode));
        } else if (!strcmp(f, "items")) {
            json_t *items = json_object();
            json_object_set_new(e, "items", items);
            rc |= key_items(s, p, v, items);
        } else if (!strcmp(f, "optional")) {
            /* An absent object: no files, an empty directory (the controller's). */
            if (cli_spec_bool(s, p, v, &opt)) rc = -1;
            else if (opt) json_object_set_new(e, "optional", json_true());
        } else rc = cli_spec_fail(s, p, "not supported (%s, items, defaultMode, optional)", namekey);
    }
    if (!name || !*name) return cli_spec_fail(s, path, "needs %s", namekey);
    json_object_set_new(e, kind, json_string(name));
    return rc;
}

/* A csi volume's volumeAttributes (a mapping of scalars: Kubernetes'
 * strings) into obj's "attributes". */
static int csi_attributes(cli_spec_t *s, const char *path, yaml_node_t *v, json_t *obj) {
    if (cli_spec_want(s, path, v, YAML_MAPPING_NODE)) return -1;
    int rc = 0;
    yaml_node_pair_t *pr = NULL;
    const char *f, *str;
    yaml_node_t *w;
    char p[400];
    json_t *at = json_object();
    while (cli_spec_next(s, v, path, &pr, &f, &w, p, sizeof p)) {
        if (cli_spec_string(s, p, w, &str)) rc = -1;
        else json_object_set_new(at, f, json_string(str));
    }
    json_object_set_new(obj, "attributes", at);
    return rc;
}

/* One volume source (not secret/configMap) at path into src. */
static int volume_source(cli_spec_t *s, const char *path, const char *type, yaml_node_t *v, json_t *e,
                         bool *ro) {
    if (cli_spec_want(s, path, v, YAML_MAPPING_NODE)) return -1;
    int rc = 0;
    yaml_node_pair_t *pr = NULL;
    const char *f, *str;
    yaml_node_t *w;
    char p[400];
    json_t *obj = json_object();
    const char *single = NULL; /* the source's one string: host path, claim */
    while (cli_spec_next(s, v, path, &pr, &f, &w, p, sizeof p)) {
        bool b;
        if (!strcmp(type, "emptyDir") && !strcmp(f, "medium")) {
            if (cli_spec_string(s, p, w, &str)) rc = -1;
            else if (*str && strcmp(str, "Memory")) rc = cli_spec_fail(s, p, "\"%s\" is not \"\" or Memory", str);
            else json_object_set_new(obj, "medium", json_string(str));
        } else if (!strcmp(type, "emptyDir") && !strcmp(f, "sizeLimit")) {
            json_t *q;
            if (cli_spec_field(s, p, w, &sl_jobspec_fields[SL_JS_MEMORY], &q)) rc = -1;
            else json_object_set_new(obj, "size_limit", q);
        } else if (!strcmp(type, "hostPath") && !strcmp(f, "path")) {
            rc |= cli_spec_string(s, p, w, &single);
        } else if (!strcmp(type, "hostPath") && !strcmp(f, "type")) {
            if (cli_spec_string(s, p, w, &str)) rc = -1;
            else if (*str && strcmp(str, "Directory") && strcmp(str, "File"))
                rc = cli_spec_fail(s, p, "\"%s\" is not supported (\"\", Directory, File: the path must exist)", str);
        } else if (!strcmp(type, "persistentVolumeClaim") && !strcmp(f, "claimName")) {
            rc |= cli_spec_string(s, p, w, &single);
        } else if (!strcmp(type, "nfs") && (!strcmp(f, "server") || !strcmp(f, "path"))) {
            if (cli_spec_string(s, p, w, &str)) rc = -1;
            else json_object_set_new(obj, f, json_string(str));
        } else if (!strcmp(type, "csi") && !strcmp(f, "driver")) {
            if (cli_spec_string(s, p, w, &str)) rc = -1;
            else json_object_set_new(obj, "driver", json_string(str));
        } else if (!strcmp(type, "csi") && !strcmp(f, "volumeAttributes")) {
            rc |= csi_attributes(s, p, w, obj);
        } else if (!strcmp(type, "csi") && !strcmp(f, "fsType")) {
            if (cli_spec_string(s, p, w, &str)) rc = -1;
            else if (*str) cli_spec_warn(s, p, "no meaning here: the volume is the node's mount "
                                         "of it, as it is");
        } else if (strcmp(type, "emptyDir") && strcmp(type, "hostPath") && !strcmp(f, "readOnly")) {
            if (cli_spec_bool(s, p, w, &b)) rc = -1;
            else *ro = *ro || b;
        } else {
            rc = cli_spec_fail(s, p, "not supported");
        }
    }
    if (!strcmp(type, "emptyDir")) {
        json_object_set_new(e, "empty_dir", obj);
        return rc;
    }
    if (!strcmp(type, "nfs")) {
        if (!json_object_get(obj, "server") || !json_object_get(obj, "path"))
            rc = cli_spec_fail(s, path, "needs server and path");
        json_object_set_new(e, "nfs", obj);
        return rc;
    }
    if (!strcmp(type, "csi")) {
        if (!json_object_get(obj, "driver")) rc = cli_spec_fail(s, path, "needs driver");
        json_object_set_new(e, "csi", obj);
        return rc;
    }
    json_decref(obj);
    if (!single || !*single)
        return cli_spec_fail(s, path, "needs %s", !strcmp(type, "hostPath") ? "path" : "claimName");
    if (!strcmp(type, "hostPath") && single[0] != '/')
        return cli_spec_fail(s, path, "path \"%s\" is not absolute", single);
    json_object_set_new(e, !strcmp(type, "hostPath") ? "host_path" : "pvc", json_string(single));
    return rc;
}

int cli_k8s_volumes(cli_k8s_t *k, const char *path, yaml_node_t *vols, json_t *mounts) {
    cli_spec_t *s = k->s;
    json_t *byname = json_object(); /* name -> {source..., "_ro": bool, "_kind": "volume"|"secret"} */
    int rc = 0;
    if (vols && cli_spec_want(s, path, vols, YAML_SEQUENCE_NODE) == 0) {
        for (int i = 0; i < cli_spec_len(vols); i++) {
            yaml_node_t *vol = cli_spec_item(s, vols, i);
            char vp[300];
            snprintf(vp, sizeof vp, "%s[%d]", path, i);
            if (cli_spec_want(s, vp, vol, YAML_MAPPING_NODE)) {
                rc = -1;
                continue;
            }
            const char *name = NULL;
            json_t *e = json_object();
            bool ro = false;
            int nsrc = 0, bad = 0;
            yaml_node_pair_t *pr = NULL;
            const char *f;
            yaml_node_t *v;
            char p[340];
            while (cli_spec_next(s, vol, vp, &pr, &f, &v, p, sizeof p)) {
                if (!strcmp(f, "name")) {
                    bad |= cli_spec_string(s, p, v, &name);
                } else if (!strcmp(f, "secret") || !strcmp(f, "configMap")) {
                    nsrc++;
                    json_object_set_new(e, "_secret", json_true());
                    bad |= key_volume(s, p, v, f[0] == 's' ? "secret" : "config_map", e);
                } else if (!strcmp(f, "emptyDir") || !strcmp(f, "hostPath") ||
                           !strcmp(f, "persistentVolumeClaim") || !strcmp(f, "nfs") ||
                           !strcmp(f, "csi")) {
                    nsrc++;
                    bad |= volume_source(s, p, f, v, e, &ro);
                } else {
                    bad = cli_spec_fail(s, p, "not supported (emptyDir, hostPath, persistentVolumeClaim, "
                                        "nfs, csi, secret, configMap)");
                }
            }
            if (!name) bad = cli_spec_fail(s, vp, "needs a name");
            else if (nsrc != 1 && !bad) bad = cli_spec_fail(s, vp, "needs exactly one source");
            if (bad || !name) {
                rc = -1;
                json_decref(e);
                /* Its mounts are not errors of their own. */
                if (name) json_object_set_new(byname, name, json_pack("{sb}", "_bad", 1));
                continue;
            }
            json_object_set_new(e, "_ro", json_boolean(ro));
            json_object_set_new(e, "_used", json_false());
            json_object_set_new(byname, name, e);
        }
    } else if (vols) {
        rc = -1;
    }
    size_t i;
    json_t *m;
    json_array_foreach(mounts, i, m) {
        const char *name = json_string_value(json_object_get(m, "name"));
        json_t *src = json_object_get(byname, name);
        const char *mp = json_string_value(json_object_get(m, "where"));
        if (!src) {
            if (vols || !rc) rc = cli_spec_fail(s, mp, "volume \"%s\" is not among the pod's volumes", name);
            continue;
        }
        json_object_set_new(src, "_used", json_true());
        if (json_object_get(src, "_bad")) continue;
        const char *at = json_string_value(json_object_get(m, "path"));
        json_t *sub = json_object_get(m, "sub_path");
        if (json_is_true(json_object_get(src, "_secret"))) {
            json_t *e = json_object();
            const char *kind = json_object_get(src, "secret") ? "secret" : "config_map";
            json_object_set(e, kind, json_object_get(src, kind));
            json_object_set_new(e, "path", json_string(at));
            if (sub) {
                /* The contract puts a secret's keys as files in a
                 * directory; one key's file at a path of its own is not. */
                json_decref(e);
                rc = cli_spec_fail(s, mp, "subPath of a %s volume is not supported (mount the "
                                   "volume at a directory; its keys are files there)",
                                   kind[0] == 's' ? "secret" : "configMap");
                continue;
            }
            if (json_object_get(src, "items")) json_object_set(e, "items", json_object_get(src, "items"));
            if (json_object_get(src, "mode")) json_object_set(e, "mode", json_object_get(src, "mode"));
            if (json_object_get(src, "optional")) json_object_set(e, "optional", json_true());
            cli_spec_append(k->job, "secrets", e);
            continue;
        }
        json_t *e = json_pack("{ss sb}", "path", at,
                              "read_only", json_is_true(json_object_get(m, "read_only")) ||
                                               json_is_true(json_object_get(src, "_ro")));
        if (sub) json_object_set(e, "sub_path", sub);
        const char *sk;
        json_t *sv;
        json_object_foreach(src, sk, sv)
            if (sk[0] != '_') json_object_set(e, sk, sv);
        cli_spec_append(k->job, "volumes", e);
    }
    const char *vk;
    json_t *vv;
    json_object_foreach(byname, vk, vv)
        if (!json_is_true(json_object_get(vv, "_used")) && !json_object_get(vv, "_bad"))
            cli_spec_warn(s, path, "volume \"%s\" is mounted by no container: not used", vk);
    json_decref(byname);
    return rc;
}
