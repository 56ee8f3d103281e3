/*
 * k8s_pod.c - metadata and pod templates (k8s_pod.h).
 *
 * A pod template becomes the fields every task of the job shares: its one
 * container (k8s_container.c), where it may run (nodeSelector, required
 * node affinity, tolerations, nodeName), its priority class, volumes and
 * security context. Fields about Kubernetes' own machinery (service
 * accounts, image pull secrets, DNS, tolerations of the taints Kubernetes
 * puts on its nodes) are accepted with a warning that they mean nothing
 * here; what Sluice would not honour is refused with its path.
 *
 * Kueue's topology annotations (podset-required-topology and
 * ...-preferred-topology) name a node label key that stands for a level,
 * mapped by what it names: a hostname is one host; a rack or a sub-block
 * (GKE's gce-topology-subblock) a rack; a block a block.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s_pod.h"

/* Labels and annotations that ask for a gang (all pods start together). */
static bool gang_key(const char *k) {
    return !strcmp(k, "scheduling.k8s.io/group-name") ||        /* Volcano */
           !strcmp(k, "scheduling.x-k8s.io/pod-group") ||       /* coscheduling plugin */
           !strcmp(k, "pod-group.scheduling.sigs.k8s.io") ||    /* its older name */
           !strcmp(k, "kueue.x-k8s.io/pod-group-name") ||       /* Kueue's pod groups */
           !strcmp(k, "sluice.io/gang");
}

static int labels(cli_k8s_t *k, const char *path, yaml_node_t *v, bool annotations) {
    static const char req_key[] = "kueue.x-k8s.io/podset-required-topology";
    static const char pref_key[] = "kueue.x-k8s.io/podset-preferred-topology";
    cli_spec_t *s = k->s;
    if (cli_spec_want(s, path, v, YAML_MAPPING_NODE)) return -1;
    int rc = 0;
    yaml_node_pair_t *pr = NULL;
    const char *key, *str;
    yaml_node_t *val;
    char p[320];
    while (cli_spec_next(s, v, path, &pr, &key, &val, p, sizeof p)) {
        if (cli_spec_string(s, p, val, &str)) {
            rc = -1;
            continue;
        }
        if (!strcmp(key, "kueue.x-k8s.io/queue-name")) k->kueue = true;
        if (gang_key(key)) {
            if (strcmp(key, "sluice.io/gang") || !strcmp(str, "true")) k->gang = 1;
            else if (!strcmp(str, "false")) k->gang = 0;
            else rc = cli_spec_fail(s, p, "\"%s\" is not \"true\" or \"false\"", str);
            continue;
        }
        if (!annotations || (strcmp(key, req_key) && strcmp(key, pref_key))) continue;
        const char *level = strstr(str, "hostname") || strstr(str, "-host") ? "host"
                            : strstr(str, "rack") || strstr(str, "subblock") ? "rack"
                            : strstr(str, "block")                             ? "block"
                                                                               : NULL;
        if (!level) {
            rc = cli_spec_fail(s, p, "label key \"%s\" names no topology level Sluice knows (a key "
                               "naming a hostname, rack, subblock or block; docs/placement.md)", str);
            continue;
        }
        json_object_set_new(k->job, strcmp(key, req_key) ? "topology_preferred" : "topology_required",
                            json_string(level));
    }
    return rc;
}

int cli_k8s_meta(cli_k8s_t *k, const char *path, yaml_node_t *meta, bool top) {
    cli_spec_t *s = k->s;
    if (cli_spec_want(s, path, meta, YAML_MAPPING_NODE)) return -1;
    int rc = 0;
    const char *gen = NULL;
    yaml_node_pair_t *pr = NULL;
    const char *f, *str;
    yaml_node_t *v;
    char p[256];
    while (cli_spec_next(s, meta, path, &pr, &f, &v, p, sizeof p)) {
        json_t *x;
        if (!strcmp(f, "name")) {
            if (cli_spec_field(s, p, v, &sl_jobspec_fields[SL_JS_NAME], &x)) rc = -1;
            else if (top) json_object_set_new(k->job, "name", x);
            else json_decref(x);
        } else if (!strcmp(f, "generateName")) {
            rc |= cli_spec_string(s, p, v, &gen);
        } else if (!strcmp(f, "namespace")) {
            if (cli_spec_field(s, p, v, &sl_jobspec_fields[SL_JS_NAME], &x)) {
                rc = -1;
            } else if (top) {
                json_object_set_new(k->job, "namespace", x);
            } else {
                const char *ns = json_string_value(json_object_get(k->job, "namespace"));
                if (!ns || strcmp(ns, json_string_value(x)))
                    rc = cli_spec_fail(s, p, "\"%s\" differs from the job's metadata.namespace",
                                       json_string_value(x));
                json_decref(x);
            }
        } else if (!strcmp(f, "labels")) {
            rc |= labels(k, p, v, false);
        } else if (!strcmp(f, "annotations")) {
            rc |= labels(k, p, v, true);
        } else if (!strcmp(f, "creationTimestamp") || !strcmp(f, "uid") || !strcmp(f, "resourceVersion")) {
            /* What `kubectl get -o yaml` writes back: the server's, not the user's. */
            rc |= cli_spec_string(s, p, v, &str);
        } else {
            rc = cli_spec_fail(s, p, "not supported");
        }
    }
    if (gen && top && !json_object_get(k->job, "name")) {
        /* Kubernetes adds five random characters; a Sluice job has its id. */
        char name[64];
        snprintf(name, sizeof name, "%s", gen);
        size_t n = strlen(name);
        while (n > 1 && name[n - 1] == '-') name[--n] = '\0';
        json_t *x;
        char pg[280];
        snprintf(pg, sizeof pg, "%s.generateName", path);
        char err[200];
        if ((x = sl_jobspec_from_text(&sl_jobspec_fields[SL_JS_NAME], name, err, sizeof err)) == NULL)
            rc = cli_spec_fail(s, pg, "%s", err);
        else json_object_set_new(k->job, "name", x);
    }
    return rc;
}

/* One matchExpression {key, operator, values} as a constraint requirement. */
static int match_expr(cli_spec_t *s, const char *path, yaml_node_t *e, char *out, size_t len) {
    if (cli_spec_want(s, path, e, YAML_MAPPING_NODE)) return -1;
    const char *key = NULL, *op = NULL;
    char vals[512] = "";
    size_t nv = 0, o = 0;
    int rc = 0;
    yaml_node_pair_t *pr = NULL;
    const char *f;
    yaml_node_t *v;
    char p[640];
    while (cli_spec_next(s, e, path, &pr, &f, &v, p, sizeof p)) {
        if (!strcmp(f, "key")) {
            rc |= cli_spec_string(s, p, v, &key);
        } else if (!strcmp(f, "operator")) {
            rc |= cli_spec_string(s, p, v, &op);
        } else if (!strcmp(f, "values")) {
            if (cli_spec_want(s, p, v, YAML_SEQUENCE_NODE)) {
                rc = -1;
                continue;
            }
            for (int i = 0; i < cli_spec_len(v); i++) {
                const char *x;
                if (cli_spec_string(s, p, cli_spec_item(s, v, i), &x)) rc = -1;
                else if (o < sizeof vals) o += (size_t)snprintf(vals + o, sizeof vals - o, "%s%s", nv++ ? "," : "", x);
            }
        } else {
            rc = cli_spec_fail(s, p, "not supported");
        }
    }
    if (rc) return -1;
    if (!key || !op) return cli_spec_fail(s, path, "needs key and operator");
    if (!strcmp(op, "In") || !strcmp(op, "NotIn")) {
        if (nv == 0) return cli_spec_fail(s, path, "operator %s needs values", op);
        snprintf(out, len, "%s %s (%s)", key, op[0] == 'I' ? "in" : "notin", vals);
    } else if (!strcmp(op, "Exists") || !strcmp(op, "DoesNotExist")) {
        if (nv) return cli_spec_fail(s, path, "operator %s takes no values", op);
        snprintf(out, len, "%s%s", op[0] == 'D' ? "!" : "", key);
    } else {
        return cli_spec_fail(s, path, "operator \"%s\" is not supported (In, NotIn, Exists, DoesNotExist)", op);
    }
    return 0;
}

/* nodeSelectorTerms: terms joined by |, expressions by &. */
static int selector_terms(cli_spec_t *s, const char *tp, yaml_node_t *terms, json_t *job) {
    if (cli_spec_want(s, tp, terms, YAML_SEQUENCE_NODE)) return -1;
    char expr[1024] = "";
    size_t o = 0;
    int rc = 0;
    for (int i = 0; i < cli_spec_len(terms); i++) {
        yaml_node_t *term = cli_spec_item(s, terms, i);
        char ip[520];
        snprintf(ip, sizeof ip, "%s[%d]", tp, i);
        if (cli_spec_want(s, ip, term, YAML_MAPPING_NODE)) {
            rc = -1;
            continue;
        }
        int nreq = 0;
        yaml_node_pair_t *pr = NULL;
        const char *mk;
        yaml_node_t *exprs;
        char mp[600];
        while (cli_spec_next(s, term, ip, &pr, &mk, &exprs, mp, sizeof mp)) {
            if (strcmp(mk, "matchExpressions") != 0) {
                rc = cli_spec_fail(s, mp, "not supported");
                continue;
            }
            if (cli_spec_want(s, mp, exprs, YAML_SEQUENCE_NODE)) {
                rc = -1;
                continue;
            }
            for (int j = 0; j < cli_spec_len(exprs); j++) {
                char ep[640], r[600];
                snprintf(ep, sizeof ep, "%s[%d]", mp, j);
                if (match_expr(s, ep, cli_spec_item(s, exprs, j), r, sizeof r)) {
                    rc = -1;
                    continue;
                }
                if (o < sizeof expr)
                    o += (size_t)snprintf(expr + o, sizeof expr - o, "%s%s", nreq++ ? " & " : (i ? " | " : ""), r);
            }
        }
        if (nreq == 0 && !rc) rc = cli_spec_fail(s, ip, "needs matchExpressions");
    }
    if (o > 0 && !rc) cli_spec_append_text(job, "constraint", " & ", expr);
    return rc;
}

/* Whether a topology key names a zone or a region, which a Sluice cluster
 * is one of. */
static bool zone_key(const char *k) {
    return !strcmp(k, "topology.kubernetes.io/zone") || !strcmp(k, "topology.kubernetes.io/region") ||
           !strcmp(k, "failure-domain.beta.kubernetes.io/zone") ||
           !strcmp(k, "failure-domain.beta.kubernetes.io/region");
}

/* podAffinity / podAntiAffinity: preferences are not honoured (a
 * warning: placement packs a job's tasks anyway); a requirement is taken
 * only when its topologyKey is a zone or a region, which the whole cluster
 * is (a warning says so); any other requirement is an error. */
static int pod_affinity(cli_spec_t *s, const char *path, yaml_node_t *v) {
    if (cli_spec_want(s, path, v, YAML_MAPPING_NODE)) return -1;
    int rc = 0;
    yaml_node_pair_t *pr = NULL;
    const char *f;
    yaml_node_t *w;
    char p[400];
    while (cli_spec_next(s, v, path, &pr, &f, &w, p, sizeof p)) {
        if (!strcmp(f, "preferredDuringSchedulingIgnoredDuringExecution")) {
            cli_spec_warn(s, p, "not honoured: Sluice places a job's tasks by its own packing and "
                          "topology (docs/placement.md)");
            continue;
        }
        if (strcmp(f, "requiredDuringSchedulingIgnoredDuringExecution") ||
            cli_spec_want(s, p, w, YAML_SEQUENCE_NODE)) {
            rc = cli_spec_fail(s, p, "not supported");
            continue;
        }
        for (int i = 0; i < cli_spec_len(w); i++) {
            yaml_node_t *term = cli_spec_item(s, w, i);
            const char *key = NULL;
            char tp[440];
            snprintf(tp, sizeof tp, "%s[%d]", p, i);
            if (term->type == YAML_MAPPING_NODE)
                for (yaml_node_pair_t *q = term->data.mapping.pairs.start; q < term->data.mapping.pairs.top; q++) {
                    const char *tk = cli_spec_scalar(cli_spec_node(s, q->key));
                    if (tk && !strcmp(tk, "topologyKey")) key = cli_spec_scalar(cli_spec_node(s, q->value));
                }
            if (key && zone_key(key))
                cli_spec_warn(s, tp, "no meaning here: a Sluice cluster is one %s", strstr(key, "region") ? "region" : "zone");
            else
                rc = cli_spec_fail(s, tp, "topologyKey \"%s\" is not supported (a zone or a region: the "
                                   "cluster is one)", key ? key : "");
        }
    }
    return rc;
}

/* affinity: only nodeAffinity's required terms, as the job's constraint.
 * Node preferences are not honoured, so they are errors, not dropped; pod
 * (anti-)affinity is as pod_affinity says. */
static int affinity(cli_spec_t *s, const char *path, yaml_node_t *a, json_t *job) {
    if (cli_spec_want(s, path, a, YAML_MAPPING_NODE)) return -1;
    int rc = 0;
    yaml_node_pair_t *pr = NULL;
    const char *f;
    yaml_node_t *v;
    char p[320];
    while (cli_spec_next(s, a, path, &pr, &f, &v, p, sizeof p)) {
        if (!strcmp(f, "podAffinity") || !strcmp(f, "podAntiAffinity")) {
            rc |= pod_affinity(s, p, v);
            continue;
        }
        if (strcmp(f, "nodeAffinity") != 0) {
            rc = cli_spec_fail(s, p, "not supported");
            continue;
        }
        if (cli_spec_want(s, p, v, YAML_MAPPING_NODE)) {
            rc = -1;
            continue;
        }
        yaml_node_pair_t *q = NULL;
        const char *nk;
        yaml_node_t *req;
        char np[400];
        while (cli_spec_next(s, v, p, &q, &nk, &req, np, sizeof np)) {
            if (strcmp(nk, "requiredDuringSchedulingIgnoredDuringExecution") != 0) {
                rc = cli_spec_fail(s, np, "not supported (Sluice honours required node affinity only)");
                continue;
            }
            if (cli_spec_want(s, np, req, YAML_MAPPING_NODE)) {
                rc = -1;
                continue;
            }
            yaml_node_pair_t *t = NULL;
            const char *tk;
            yaml_node_t *terms;
            char tp[480];
            while (cli_spec_next(s, req, np, &t, &tk, &terms, tp, sizeof tp)) {
                if (strcmp(tk, "nodeSelectorTerms") != 0) rc = cli_spec_fail(s, tp, "not supported");
                else rc |= selector_terms(s, tp, terms, job);
            }
        }
    }
    return rc;
}

/* Taints Kubernetes itself puts on nodes (not-ready, unreachable,
 * memory-pressure, the control plane's): Sluice's nodes have none of them. */
static bool own_taint(const char *key) {
    return !strncmp(key, "node.kubernetes.io/", 19) || !strncmp(key, "node-role.kubernetes.io/", 24) ||
           !strncmp(key, "node.cloudprovider.kubernetes.io/", 33) || !strncmp(key, "kubernetes.azure.com/", 21) ||
           !strncmp(key, "cloud.google.com/", 17);
}

/* tolerations: [{key, operator, value, effect}] as key[=value][:effect]. */
static int tolerations(cli_spec_t *s, const char *path, yaml_node_t *l, json_t *job) {
    if (cli_spec_want(s, path, l, YAML_SEQUENCE_NODE)) return -1;
    int rc = 0;
    for (int i = 0; i < cli_spec_len(l); i++) {
        yaml_node_t *t = cli_spec_item(s, l, i);
        char p[320];
        snprintf(p, sizeof p, "%s[%d]", path, i);
        if (cli_spec_want(s, p, t, YAML_MAPPING_NODE)) {
            rc = -1;
            continue;
        }
        const char *key = "", *op = "Equal", *value = NULL, *effect = NULL, *secs = NULL;
        char secs_path[400] = "";
        int bad = 0;
        yaml_node_pair_t *pr = NULL;
        const char *f;
        yaml_node_t *v;
        char fp[400];
        while (cli_spec_next(s, t, p, &pr, &f, &v, fp, sizeof fp)) {
            const char **dst = !strcmp(f, "key") ? &key : !strcmp(f, "operator") ? &op
                             : !strcmp(f, "value") ? &value : !strcmp(f, "effect") ? &effect
                             : !strcmp(f, "tolerationSeconds") ? &secs : NULL;
            if (!dst) bad = cli_spec_fail(s, fp, "not supported");
            else bad |= cli_spec_string(s, fp, v, dst);
            if (dst == &secs) snprintf(secs_path, sizeof secs_path, "%s", fp);
        }
        if (bad) {
            rc = -1;
            continue;
        }
        if (*key && own_taint(key)) {
            cli_spec_warn(s, p, "no meaning here: \"%s\" is a taint of Kubernetes' own nodes, which "
                          "Sluice's nodes do not have", key);
            continue;
        }
        if (secs) {
            rc = cli_spec_fail(s, secs_path, "not supported");
            continue;
        }
        if (effect && *effect && strcmp(effect, "NoSchedule") && strcmp(effect, "PreferNoSchedule") &&
            strcmp(effect, "NoExecute")) {
            rc = cli_spec_fail(s, p, "effect \"%s\" is not NoSchedule, PreferNoSchedule or NoExecute", effect);
            continue;
        }
        char item[400];
        if (strcmp(op, "Exists") == 0) {
            if (value && *value) {
                rc = cli_spec_fail(s, p, "operator Exists takes no value");
                continue;
            }
            if (!*key && effect && *effect) {
                rc = cli_spec_fail(s, p, "an empty key with an effect is not supported");
                continue;
            }
            snprintf(item, sizeof item, "%s%s%s", *key ? key : "*", effect && *effect && *key ? ":" : "",
                     effect && *key ? effect : "");
        } else if (strcmp(op, "Equal") == 0) {
            if (!*key) {
                rc = cli_spec_fail(s, p, "operator Equal needs a key");
                continue;
            }
            snprintf(item, sizeof item, "%s=%s%s%s", key, value ? value : "", effect && *effect ? ":" : "",
                     effect ? effect : "");
        } else {
            rc = cli_spec_fail(s, p, "operator \"%s\" is not supported (Equal, Exists)", op);
            continue;
        }
        char err[256];
        json_t *chk = sl_jobspec_from_text(&sl_jobspec_fields[SL_JS_TOLERATIONS], item, err, sizeof err);
        if (!chk) {
            rc = cli_spec_fail(s, p, "%s", err);
            continue;
        }
        json_decref(chk);
        cli_spec_append(job, "tolerations", json_string(item));
    }
    return rc;
}

static int node_selector(cli_spec_t *s, const char *p, yaml_node_t *v, json_t *job) {
    if (cli_spec_want(s, p, v, YAML_MAPPING_NODE)) return -1;
    int rc = 0;
    yaml_node_pair_t *q = NULL;
    const char *sk, *sv;
    yaml_node_t *w;
    char sp[320];
    while (cli_spec_next(s, v, p, &q, &sk, &w, sp, sizeof sp)) {
        json_t *val;
        if (!strcmp(sk, "sluice.io/pool")) {
            if (cli_spec_field(s, sp, w, &sl_jobspec_fields[SL_JS_POOL], &val)) rc = -1;
            else json_object_set_new(job, "pool", val);
        } else if (!strcmp(sk, "nvidia.com/gpu.product")) {
            if (cli_spec_field(s, sp, w, &sl_jobspec_fields[SL_JS_GPU_MODELS], &val)) rc = -1;
            else json_object_set_new(job, "gpu_models", json_pack("[o]", val));
        } else if (cli_spec_string(s, sp, w, &sv)) {
            rc = -1;
        } else {
            char kv[300], e[256];
            snprintf(kv, sizeof kv, "%s=%s", sk, sv);
            val = sl_jobspec_from_text(&sl_jobspec_fields[SL_JS_NODE_SELECTOR], kv, e, sizeof e);
            if (!val) {
                rc = cli_spec_fail(s, sp, "%s", e);
                continue;
            }
            json_decref(val);
            cli_spec_append(job, "node_selector", json_string(kv));
        }
    }
    return rc;
}

/* ---- several containers in one pod ---- */

/* The kind of the pod's volume called name in vols (its source's key:
 * "emptyDir", "secret", ...), and in *memory whether it is an emptyDir of
 * medium Memory; NULL when vols has none of that name. */
static const char *vol_kind(cli_spec_t *s, yaml_node_t *vols, const char *name, bool *memory) {
    *memory = false;
    for (int i = 0; vols && vols->type == YAML_SEQUENCE_NODE && i < cli_spec_len(vols); i++) {
        yaml_node_t *v = cli_spec_item(s, vols, i);
        if (!v || v->type != YAML_MAPPING_NODE) continue;
        const char *nm = NULL, *kind = NULL;
        yaml_node_t *src = NULL;
        for (yaml_node_pair_t *q = v->data.mapping.pairs.start; q < v->data.mapping.pairs.top; q++) {
            const char *key = cli_spec_scalar(cli_spec_node(s, q->key));
            if (!key) continue;
            if (!strcmp(key, "name")) nm = cli_spec_scalar(cli_spec_node(s, q->value));
            else {
                kind = key;
                src = cli_spec_node(s, q->value);
            }
        }
        if (!nm || strcmp(nm, name)) continue;
        if (kind && !strcmp(kind, "emptyDir") && src && src->type == YAML_MAPPING_NODE)
            for (yaml_node_pair_t *q = src->data.mapping.pairs.start; q < src->data.mapping.pairs.top; q++) {
                const char *key = cli_spec_scalar(cli_spec_node(s, q->key));
                const char *val = cli_spec_scalar(cli_spec_node(s, q->value));
                *memory = *memory || (key && val && !strcmp(key, "medium") && !strcmp(val, "Memory"));
            }
        return kind;
    }
    return NULL;
}

/* Adds the quantity text q (of kind) to the job's field key (a sum). */
static void qty_add(json_t *job, const char *key, const char *q, sl_qty_kind_t kind) {
    int64_t a = 0, b = 0;
    char err[128], out[64];
    const char *old = json_string_value(json_object_get(job, key));
    if (!q || sl_qty_parse(q, kind, &b, err, sizeof err) < 0) return;
    if (old && sl_qty_parse(old, kind, &a, err, sizeof err) < 0) a = 0;
    sl_qty_format(a + b, kind, out, sizeof out);
    json_object_set_new(job, key, json_string(out));
}

/* The pod's init containers (inits at ipath, NULL when none; each "init"
 * or, of restartPolicy Always, "sidecar") then its containers (l at path)
 * into the submission's `containers` (pod.h), its resources added up into the
 * job's (a pod asks for the sum of its containers'); each container's
 * mounts into *mounts (its entries carrying "_c", the container's index),
 * which pod_mounts sorts out once the pod's volumes are known. */
static int pod_containers(cli_k8s_t *k, const char *ipath, yaml_node_t *inits, const char *path,
                          yaml_node_t *l, json_t **mounts) {
    cli_spec_t *s = k->s;
    json_t *cs = json_array(), *job = k->job;
    int rc = 0, ni = inits ? cli_spec_len(inits) : 0;
    bool split = false;
    *mounts = json_array();
    for (int i = 0; i < ni + cli_spec_len(l); i++) {
        char cp[300];
        bool init = i < ni;
        snprintf(cp, sizeof cp, "%s[%d]", init ? ipath : path, init ? i : i - ni);
        yaml_node_t *c = cli_spec_item(s, init ? inits : l, init ? i : i - ni);
        json_t *cj = json_pack("{sb sb}", "_pod", 1, "_init", init), *m = NULL, *x;
        k->job = cj;
        rc |= cli_k8s_container(k, cp, c, &m);
        k->job = job;
        const char *name = NULL;
        if (c && c->type == YAML_MAPPING_NODE)
            for (yaml_node_pair_t *q = c->data.mapping.pairs.start; q < c->data.mapping.pairs.top; q++) {
                const char *key = cli_spec_scalar(cli_spec_node(s, q->key));
                if (key && !strcmp(key, "name")) name = cli_spec_scalar(cli_spec_node(s, q->value));
            }
        if (!name || !*name) rc = cli_spec_fail(s, cp, "needs a name (a pod of several containers)");
        if (!json_object_get(cj, "image")) rc = cli_spec_fail(s, cp, "needs an image");
        json_t *e = json_pack("{ss}", "name", name ? name : "");
        if (init) /* restartPolicy Always: a native sidecar (cli_k8s_container) */
            json_object_set_new(e, "role", json_string(json_object_get(cj, "_sidecar") ? "sidecar" : "init"));
        static const char *const own[] = {"image", "command", "args", "env", "workdir"};
        for (size_t f = 0; f < sizeof own / sizeof own[0]; f++)
            if ((x = json_object_get(cj, own[f]))) json_object_set(e, own[f], x);
        if ((x = json_object_get(cj, "gpus"))) {
            split = true;
            json_object_set(e, "gpus", x);
            json_object_set_new(job, "gpus", json_integer(json_integer_value(json_object_get(job, "gpus")) +
                                                          json_integer_value(x)));
        }
        if ((x = json_object_get(cj, "gpu_share"))) {
            /* A share of one GPU (HAMi): the task's one GPU, which every
             * container of the pod sees (the pod's containers split whole
             * GPUs only). */
            if (json_object_get(job, "gpu_share"))
                rc = cli_spec_fail(s, cp, "a second container sharing a GPU: one container of a "
                                   "pod may take a share of a GPU");
            json_object_set(job, "gpu_share", x);
            if ((x = json_object_get(cj, "gpu_memory"))) json_object_set(job, "gpu_memory", x);
            cli_spec_warn(s, cp, "its share of a GPU is seen by every container of the pod");
        }
        if ((x = json_object_get(cj, "gpu_resource"))) {
            json_t *had = json_object_get(job, "gpu_resource");
            if (had && !json_equal(had, x))
                rc = cli_spec_fail(s, cp, "asks for %s, another container for %s: one GPU resource "
                                   "per pod", json_string_value(x), json_string_value(had));
            json_object_set(job, "gpu_resource", x);
        }
        /* A pod's request is the sum of its containers'; so is its limit,
         * a container without one counting its request. */
        qty_add(job, "cpus", json_string_value(json_object_get(cj, "cpus")), SL_QTY_CPU);
        qty_add(job, "memory", json_string_value(json_object_get(cj, "memory")), SL_QTY_MEM);
        for (int lim = 0; lim < 2; lim++) {
            const char *lk = lim ? "memory_limit" : "cpu_limit", *rk = lim ? "memory" : "cpus";
            json_t *lv = json_object_get(cj, lk);
            qty_add(cj, "_lim", json_string_value(lv ? lv : json_object_get(cj, rk)),
                    lim ? SL_QTY_MEM : SL_QTY_CPU);
            json_object_set(cj, lim ? "_mlim" : "_clim", json_object_get(cj, "_lim"));
            json_object_del(cj, "_lim");
        }
        json_object_set(e, "_clim", json_object_get(cj, "_clim"));
        json_object_set(e, "_mlim", json_object_get(cj, "_mlim"));
        json_object_set(e, "_haslim", json_boolean(json_object_get(cj, "memory_limit") ||
                                                   json_object_get(cj, "cpu_limit")));
        static const char *const pod_wide[] = {"run_as_user", "run_as_group"};
        for (size_t f = 0; f < 2; f++)
            if ((x = json_object_get(cj, pod_wide[f]))) json_object_set(job, pod_wide[f], x);
        size_t j;
        json_array_foreach(json_object_get(cj, "secrets"), j, x) {
            if (json_object_get(x, "env") || json_object_get(x, "env_prefix"))
                cli_spec_warn(s, cp, "a secret's or config map's variables are given to every "
                              "container of the pod");
            cli_spec_append(job, "secrets", json_incref(x));
        }
        json_array_foreach(m, j, x) {
            json_object_set_new(x, "_c", json_integer(i));
            json_array_append(*mounts, x);
        }
        json_decref(m);
        json_decref(cj);
        json_array_append_new(cs, e);
    }
    if (split && json_object_get(job, "gpu_share"))
        rc = cli_spec_fail(s, path, "a container shares a GPU and another asks for whole GPUs: a "
                           "pod's task has either a share of one GPU or whole GPUs");
    /* Limits: only where some container has one (else the pod has none). */
    bool lim = false;
    size_t i;
    json_t *e;
    json_array_foreach(cs, i, e) lim = lim || json_is_true(json_object_get(e, "_haslim"));
    json_array_foreach(cs, i, e) {
        if (lim) {
            qty_add(job, "cpu_limit", json_string_value(json_object_get(e, "_clim")), SL_QTY_CPU);
            qty_add(job, "memory_limit", json_string_value(json_object_get(e, "_mlim")), SL_QTY_MEM);
        }
        json_object_del(e, "_clim");
        json_object_del(e, "_mlim");
        json_object_del(e, "_haslim");
        /* A container without a GPU request sees none once another has one. */
        if (split && !json_object_get(e, "gpus")) json_object_set_new(e, "gpus", json_integer(0));
    }
    json_object_set_new(job, "containers", cs);
    return rc;
}

/* The pod's containers' mounts (pod_containers) checked against its
 * volumes vols: one directory per path, so an emptyDir two containers
 * share must be at one path, and one volume at a path; a medium Memory
 * emptyDir is one container's (each container's tmpfs is its own). Each
 * container's `volumes` gets the paths it mounts (a secret or config
 * map's directory is every container's); *mounts keeps one of each. */
static int pod_mounts(cli_k8s_t *k, yaml_node_t *vols, json_t *mounts, const char *volp) {
    cli_spec_t *s = k->s;
    json_t *cs = json_object_get(k->job, "containers"), *uniq = json_array(), *m, *u;
    int rc = 0;
    size_t i, j;
    json_array_foreach(cs, i, u) json_object_set_new(u, "volumes", json_array());
    json_array_foreach(mounts, i, m) {
        const char *name = json_string_value(json_object_get(m, "name"));
        const char *at = json_string_value(json_object_get(m, "path"));
        const char *where = json_string_value(json_object_get(m, "where"));
        json_t *c = json_array_get(cs, (size_t)json_integer_value(json_object_get(m, "_c")));
        bool memory, dup = false;
        const char *kind = vol_kind(s, vols, name, &memory);
        json_array_foreach(uniq, j, u) {
            const char *un = json_string_value(json_object_get(u, "name"));
            const char *ua = json_string_value(json_object_get(u, "path"));
            bool same_at = !strcmp(ua, at), same_vol = !strcmp(un, name);
            json_t *us = json_object_get(u, "sub_path"), *ms = json_object_get(m, "sub_path");
            bool same_sub = us == ms || (us && ms && json_equal(us, ms));
            if (same_at && (!same_vol || !same_sub ||
                            !json_equal(json_object_get(u, "read_only"), json_object_get(m, "read_only")))) {
                rc = cli_spec_fail(s, where, "%s is also where %s mounts volume \"%s\" otherwise: not "
                                   "supported (one volume, sub_path and readOnly at a path in a pod)",
                                   at, json_string_value(json_object_get(u, "where")), un);
            } else if (!same_at && same_vol && kind && !strcmp(kind, "emptyDir")) {
                rc = cli_spec_fail(s, where, "emptyDir \"%s\" is also mounted at %s: not supported "
                                   "(the containers share an emptyDir at one path)", name, ua);
            } else if (same_at && same_vol && memory) {
                rc = cli_spec_fail(s, where, "emptyDir \"%s\" of medium Memory mounted by two "
                                   "containers: not supported (each container's tmpfs is its own)",
                                   name);
            }
            dup = dup || same_at;
        }
        if (kind && strcmp(kind, "secret") && strcmp(kind, "configMap"))
            json_array_append_new(json_object_get(c, "volumes"), json_string(at));
        if (!dup) json_array_append(uniq, m);
    }
    json_array_foreach(uniq, i, m) json_object_del(m, "_c");
    rc |= cli_k8s_volumes(k, volp, vols, uniq);
    json_decref(uniq);
    return rc;
}

/* Pod fields that concern Kubernetes' own machinery: accepted, with a
 * warning that they mean nothing here. */
static const char *const no_meaning[] = {
    "serviceAccountName", "serviceAccount", "automountServiceAccountToken", "imagePullSecrets",
    "dnsPolicy", "dnsConfig", "enableServiceLinks", "schedulerName", "terminationGracePeriodSeconds",
    "runtimeClassName", "hostname", "subdomain", "preemptionPolicy", NULL};

static int pod_spec(cli_k8s_t *k, const char *path, yaml_node_t *ps, const char **restart) {
    cli_spec_t *s = k->s;
    if (cli_spec_want(s, path, ps, YAML_MAPPING_NODE)) return -1;
    int have_containers = 0, rc = 0, npod = 1;
    yaml_node_t *vols = NULL, *mains = NULL, *inits = NULL;
    char mainp[300] = "", initp[300] = "";
    char volp[300] = "";
    json_t *mounts = NULL;
    yaml_node_pair_t *pr = NULL;
    const char *f, *str;
    yaml_node_t *v;
    char p[256];
    while (cli_spec_next(s, ps, path, &pr, &f, &v, p, sizeof p)) {
        bool b;
        int known = 0;
        for (int i = 0; no_meaning[i] && !known; i++) known = !strcmp(f, no_meaning[i]);
        if (known) {
            cli_spec_warn(s, p, "no meaning here (Sluice runs the task as its tenant's user, with "
                          "the node's runtime, network and images)");
        } else if (!strcmp(f, "containers")) {
            if (cli_spec_want(s, p, v, YAML_SEQUENCE_NODE)) {
                rc = -1;
                continue;
            }
            int n = cli_spec_len(v);
            have_containers = 1; /* no second "needs containers" */
            if (n == 0) {
                rc = cli_spec_fail(s, p, "needs a container");
                continue;
            }
            mains = v; /* read once the init containers are known too */
            snprintf(mainp, sizeof mainp, "%s", p);
        } else if (!strcmp(f, "volumes")) {
            vols = v;
            snprintf(volp, sizeof volp, "%s", p);
        } else if (!strcmp(f, "restartPolicy")) {
            rc |= cli_spec_string(s, p, v, restart);
        } else if (!strcmp(f, "priorityClassName")) {
            json_t *val;
            if (cli_spec_field(s, p, v, &sl_jobspec_fields[SL_JS_PRIORITY_CLASS], &val)) rc = -1;
            else json_object_set_new(k->job, "priority_class", val);
        } else if (!strcmp(f, "nodeSelector")) {
            rc |= node_selector(s, p, v, k->job);
        } else if (!strcmp(f, "nodeName")) {
            json_t *val;
            if (cli_spec_field(s, p, v, &sl_jobspec_fields[SL_JS_NODELIST], &val)) rc = -1;
            else json_object_set_new(k->job, "nodelist", json_pack("[o]", val));
        } else if (!strcmp(f, "affinity")) {
            rc |= affinity(s, p, v, k->job);
        } else if (!strcmp(f, "tolerations")) {
            rc |= tolerations(s, p, v, k->job);
        } else if (!strcmp(f, "securityContext")) {
            rc |= cli_k8s_security(k, p, v, false);
        } else if (!strcmp(f, "hostNetwork")) {
            /* A task has its node's network anyway (docs/containers.md). */
            rc |= cli_spec_bool(s, p, v, &b);
        } else if (!strcmp(f, "hostIPC")) {
            if (cli_spec_bool(s, p, v, &b)) rc = -1;
            else if (b) cli_spec_warn(s, p, "not honoured: a container has its own IPC namespace; a "
                                      "large /dev/shm is an emptyDir of medium Memory there");
        } else if (!strcmp(f, "initContainers")) {
            if (cli_spec_want(s, p, v, YAML_SEQUENCE_NODE)) rc = -1;
            else if (cli_spec_len(v) > 0) inits = v;
            snprintf(initp, sizeof initp, "%s", p);
        } else {
            (void)str;
            rc = cli_spec_fail(s, p, "not supported");
        }
    }
    if (mains && (inits || cli_spec_len(mains) > 1)) {
        npod = 2; /* a pod: init containers, sidecars, several containers */
        rc |= pod_containers(k, initp, inits, mainp, mains, &mounts);
    } else if (mains) {
        char cp[300];
        snprintf(cp, sizeof cp, "%s[0]", mainp);
        rc |= cli_k8s_container(k, cp, cli_spec_item(s, mains, 0), &mounts);
    }
    if (!have_containers) rc = cli_spec_fail(s, path, "needs containers");
    else if (mounts && npod > 1) rc |= pod_mounts(k, vols, mounts, volp);
    else if (mounts) rc |= cli_k8s_volumes(k, volp, vols, mounts);
    json_decref(mounts);
    return rc;
}

int cli_k8s_template(cli_k8s_t *k, const char *path, yaml_node_t *tpl, const char **restart) {
    cli_spec_t *s = k->s;
    if (cli_spec_want(s, path, tpl, YAML_MAPPING_NODE)) return -1;
    int rc = 0, have_spec = 0;
    *restart = NULL;
    yaml_node_pair_t *pr = NULL;
    const char *f;
    yaml_node_t *v;
    char p[256];
    while (cli_spec_next(s, tpl, path, &pr, &f, &v, p, sizeof p)) {
        if (!strcmp(f, "metadata")) {
            rc |= cli_k8s_meta(k, p, v, false);
        } else if (!strcmp(f, "spec")) {
            rc |= pod_spec(k, p, v, restart);
            have_spec = 1;
        } else {
            rc = cli_spec_fail(s, p, "not supported");
        }
    }
    if (!have_spec) {
        snprintf(p, sizeof p, "%s.spec", path);
        rc = cli_spec_fail(s, p, "missing");
    }
    return rc;
}

int cli_k8s_finish(cli_k8s_t *k) {
    const char *var;
    json_t *fp;
    int rc = 0;
    json_object_foreach(k->fieldrefs, var, fp) {
        const char *what = json_string_value(fp), *val;
        if (!strcmp(what, "metadata.name")) {
            val = json_string_value(json_object_get(k->job, "name"));
        } else {
            val = json_string_value(json_object_get(k->job, "namespace"));
            if (!val) val = k->tenant;
        }
        if (!val) {
            rc = cli_spec_fail(k->s, "env", "%s: fieldRef %s needs the manifest's %s%s", var, what, what,
                               strcmp(what, "metadata.name") ? " (or --tenant)" : " or generateName");
            continue;
        }
        json_t *env = json_object_get(k->job, "env");
        if (!env) json_object_set_new(k->job, "env", env = json_object());
        json_object_set_new(env, var, json_string(val));
    }
    return rc;
}
