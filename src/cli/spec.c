/*
 * spec.c - job spec files for `sluice submit -f`: Sluice's own YAML (or
 * JSON, which YAML reads too) and Kubernetes batch/v1 Job manifests, both
 * turned into the JSON submission of docs/api.md (docs/jobspec.md).
 *
 * The file is loaded with libyaml's document API and walked field by field
 * against what Sluice understands. Anything else is an error naming the
 * field's path ("spec.template.spec.volumes: not supported"), never ignored
 * in silence: a manifest that asks for something Sluice would not do must
 * not run as if it had not asked. The only fields accepted and ignored are
 * informational ones (metadata labels and annotations, container name,
 * imagePullPolicy, ttlSecondsAfterFinished, completionMode); of the
 * annotations, Kueue's topology ones are read (kueue_annotations).
 *
 * A key given twice in one mapping is an error too ("job.yaml:7:1: duplicate
 * key \"gpus\""), not a silent override.
 *
 * The file is read into memory first and its tokens scanned for nesting
 * deeper than any spec needs (sl_yaml_depth_check): libyaml's own parse of
 * deep flow nesting ("[[[[...") is quadratic.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "cli.h"
#include "jobspec.h"
#include "yamldoc.h"

typedef struct spec {
    yaml_document_t doc;
    json_t *job;       /* the submission being built (Kueue annotations) */
    char *err;
    size_t errlen;
} spec_t;

static int fail(spec_t *s, const char *path, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(spec_t *s, const char *path, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(s->err, s->errlen, "%s%s%s", path ? path : "", path && *path ? ": " : "", msg);
    return -1;
}

static yaml_node_t *node_at(spec_t *s, int id) {
    return yaml_document_get_node(&s->doc, id);
}

static const char *kind_name(yaml_node_t *n) {
    switch (n->type) {
    case YAML_MAPPING_NODE: return "a mapping";
    case YAML_SEQUENCE_NODE: return "a list";
    default: return "a scalar";
    }
}

static int want(spec_t *s, const char *path, yaml_node_t *n, yaml_node_type_t t) {
    if (n->type == t) return 0;
    return fail(s, path, "must be %s, not %s",
                t == YAML_MAPPING_NODE ? "a mapping" : t == YAML_SEQUENCE_NODE ? "a list" : "a scalar",
                kind_name(n));
}

static const char *scalar(yaml_node_t *n) {
    return n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

static int get_string(spec_t *s, const char *path, yaml_node_t *n, const char **out) {
    if (want(s, path, n, YAML_SCALAR_NODE)) return -1;
    *out = scalar(n);
    return 0;
}

static int get_int(spec_t *s, const char *path, yaml_node_t *n, long long lo, long long hi,
                   long long *out) {
    if (want(s, path, n, YAML_SCALAR_NODE)) return -1;
    const char *v = scalar(n);
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi)
        return fail(s, path, "\"%s\" is not a whole number from %lld to %lld", v, lo, hi);
    *out = x;
    return 0;
}

static int get_strings(spec_t *s, const char *path, yaml_node_t *n, json_t *arr) {
    if (want(s, path, n, YAML_SEQUENCE_NODE)) return -1;
    int i = 0;
    for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++, i++) {
        yaml_node_t *v = node_at(s, *it);
        char p[256];
        snprintf(p, sizeof p, "%s[%d]", path, i);
        if (want(s, p, v, YAML_SCALAR_NODE)) return -1;
        json_array_append_new(arr, json_string(scalar(v)));
    }
    return 0;
}

/* A scalar as the JSON value of field f, checked by the job-spec table. */
static int get_field(spec_t *s, const char *path, yaml_node_t *n, const sl_jobspec_field_t *f,
                     json_t **out) {
    const char *str;
    char err[256];
    if (get_string(s, path, n, &str)) return -1;
    *out = sl_jobspec_from_text(f, str, err, sizeof err);
    if (*out == NULL) return fail(s, path, "%s", err);
    return 0;
}

/* A scalar as a whole number in field f's range. */
static int get_field_int(spec_t *s, const char *path, yaml_node_t *n, sl_jobspec_id_t id,
                         long long *out) {
    json_t *v;
    if (get_field(s, path, n, &sl_jobspec_fields[id], &v)) return -1;
    *out = json_integer_value(v);
    json_decref(v);
    return 0;
}

/* ---- Sluice's own spec: the fields of the JSON submission ---- */

/* `topology: {required: rack, preferred: block}`: the fields
 * topology_required and topology_preferred written as one mapping. */
static int topology_map(spec_t *s, yaml_node_t *v, json_t *job) {
    if (want(s, "topology", v, YAML_MAPPING_NODE)) return -1;
    for (yaml_node_pair_t *e = v->data.mapping.pairs.start; e < v->data.mapping.pairs.top; e++) {
        const char *ek = scalar(node_at(s, e->key));
        char p[256];
        snprintf(p, sizeof p, "topology.%s", ek ? ek : "?");
        sl_jobspec_id_t id;
        if (ek && !strcmp(ek, "required")) id = SL_JS_TOPOLOGY_REQUIRED;
        else if (ek && !strcmp(ek, "preferred")) id = SL_JS_TOPOLOGY_PREFERRED;
        else return fail(s, p, "unknown key (required or preferred)");
        json_t *val;
        if (get_field(s, p, node_at(s, e->value), &sl_jobspec_fields[id], &val)) return -1;
        json_object_set_new(job, sl_jobspec_fields[id].name, val);
    }
    return 0;
}

static int sluice_spec(spec_t *s, yaml_node_t *root, json_t *job) {
    for (yaml_node_pair_t *pr = root->data.mapping.pairs.start; pr < root->data.mapping.pairs.top; pr++) {
        yaml_node_t *kn = node_at(s, pr->key), *v = node_at(s, pr->value);
        const char *k = scalar(kn);
        if (!k) return fail(s, "", "a key is not a scalar");
        if (!strcmp(k, "topology")) {
            if (topology_map(s, v, job)) return -1;
            continue;
        }
        const sl_jobspec_field_t *f = sl_jobspec_find(k);
        if (f == NULL) {
            char known[400];
            size_t n = 0;
            for (int i = 0; i < SL_JS_NFIELDS && n < sizeof known; i++)
                n += (size_t)snprintf(known + n, sizeof known - n, " %s", sl_jobspec_fields[i].name);
            return fail(s, k, "unknown field (see docs/jobspec.md:%s)", known);
        }
        json_t *val;
        switch (f->type) {
        case SL_FT_NAMES:
            if (v->type == YAML_SCALAR_NODE) {
                if (get_field(s, k, v, f, &val)) return -1;
                json_object_set_new(job, k, json_pack("[o]", val));
                break;
            }
            if (want(s, k, v, YAML_SEQUENCE_NODE)) return -1;
            val = json_array();
            json_object_set_new(job, k, val);
            int i = 0;
            for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++, i++) {
                char p[256];
                json_t *name;
                snprintf(p, sizeof p, "%s[%d]", k, i);
                if (get_field(s, p, node_at(s, *it), f, &name)) return -1;
                json_array_append_new(val, name);
            }
            break;
        case SL_FT_ARGV:
            val = json_array();
            json_object_set_new(job, k, val);
            if (v->type == YAML_SCALAR_NODE) {
                json_array_append_new(val, json_string("/bin/sh"));
                json_array_append_new(val, json_string("-c"));
                json_array_append_new(val, json_string(scalar(v)));
            } else if (get_strings(s, k, v, val)) {
                return -1;
            }
            break;
        case SL_FT_ENV:
            if (want(s, k, v, YAML_MAPPING_NODE)) return -1;
            val = json_object();
            json_object_set_new(job, k, val);
            for (yaml_node_pair_t *e = v->data.mapping.pairs.start; e < v->data.mapping.pairs.top; e++) {
                const char *ek = scalar(node_at(s, e->key)), *str;
                char p[256];
                snprintf(p, sizeof p, "%s.%s", k, ek ? ek : "?");
                if (!ek) return fail(s, k, "a key is not a scalar");
                if (!sl_jobspec_env_name_ok(ek)) return fail(s, p, "not a valid variable name");
                if (get_string(s, p, node_at(s, e->value), &str)) return -1;
                json_object_set_new(val, ek, json_string(str));
            }
            break;
        default:
            if (get_field(s, k, v, f, &val)) return -1;
            json_object_set_new(job, k, val);
            break;
        }
    }
    return 0;
}

/* ---- Kubernetes batch/v1 Job ---- */

/*
 * Kueue's topology annotations (on the Job's or its pod template's
 * metadata): kueue.x-k8s.io/podset-required-topology and
 * ...-preferred-topology name a node label key that stands for a level.
 * The key is mapped onto Sluice's levels by what it names: a hostname is
 * one host; a rack or a sub-block (GKE's gce-topology-subblock) a rack; a
 * block a block. Other annotations are informational and ignored.
 */
static int kueue_annotations(spec_t *s, const char *path, yaml_node_t *v, json_t *job) {
    static const char req_key[] = "kueue.x-k8s.io/podset-required-topology";
    static const char pref_key[] = "kueue.x-k8s.io/podset-preferred-topology";
    if (want(s, path, v, YAML_MAPPING_NODE)) return -1;
    for (yaml_node_pair_t *e = v->data.mapping.pairs.start; e < v->data.mapping.pairs.top; e++) {
        const char *ek = scalar(node_at(s, e->key)), *str;
        if (!ek || (strcmp(ek, req_key) && strcmp(ek, pref_key))) continue;
        char p[256];
        snprintf(p, sizeof p, "%s.%s", path, ek);
        if (get_string(s, p, node_at(s, e->value), &str)) return -1;
        const char *level = strstr(str, "hostname") || strstr(str, "-host") ? "host"
                            : strstr(str, "rack") || strstr(str, "subblock") ? "rack"
                            : strstr(str, "block")                             ? "block"
                                                                               : NULL;
        if (!level || !job)
            return fail(s, p, "label key \"%s\" names no topology level Sluice knows (a key "
                        "naming a hostname, rack, subblock or block; docs/placement.md)", str);
        json_object_set_new(job, strcmp(ek, req_key) ? "topology_preferred" : "topology_required",
                            json_string(level));
    }
    return 0;
}

static int ignore_meta(spec_t *s, const char *path, yaml_node_t *meta, json_t *job) {
    if (want(s, path, meta, YAML_MAPPING_NODE)) return -1;
    for (yaml_node_pair_t *pr = meta->data.mapping.pairs.start; pr < meta->data.mapping.pairs.top; pr++) {
        const char *k = scalar(node_at(s, pr->key));
        yaml_node_t *v = node_at(s, pr->value);
        char p[256];
        snprintf(p, sizeof p, "%s.%s", path, k ? k : "?");
        if (k && job && !strcmp(k, "name")) {
            json_t *name;
            if (get_field(s, p, v, &sl_jobspec_fields[SL_JS_NAME], &name)) return -1;
            json_object_set_new(job, "name", name);
        } else if (k && !strcmp(k, "annotations")) {
            if (kueue_annotations(s, p, v, s->job)) return -1;
        } else if (k && !strcmp(k, "labels")) {
            continue;
        } else if (k && !strcmp(k, "namespace")) {
            return fail(s, p, "not supported: a job's tenant comes from the token (or --tenant)");
        } else {
            return fail(s, p, "not supported");
        }
    }
    return 0;
}

static int k8s_resources(spec_t *s, const char *path, yaml_node_t *res, json_t *job) {
    if (want(s, path, res, YAML_MAPPING_NODE)) return -1;
    const char *gpu[2] = {NULL, NULL}, *cpu[2] = {NULL, NULL}, *mem[2] = {NULL, NULL};
    char gpath[2][256];
    for (yaml_node_pair_t *pr = res->data.mapping.pairs.start; pr < res->data.mapping.pairs.top; pr++) {
        const char *k = scalar(node_at(s, pr->key));
        yaml_node_t *v = node_at(s, pr->value);
        char p[256];
        snprintf(p, sizeof p, "%s.%s", path, k ? k : "?");
        int which;
        if (k && !strcmp(k, "limits")) which = 0;
        else if (k && !strcmp(k, "requests")) which = 1;
        else return fail(s, p, "not supported");
        if (want(s, p, v, YAML_MAPPING_NODE)) return -1;
        for (yaml_node_pair_t *q = v->data.mapping.pairs.start; q < v->data.mapping.pairs.top; q++) {
            const char *r = scalar(node_at(s, q->key));
            yaml_node_t *rv = node_at(s, q->value);
            char rp[320];
            snprintf(rp, sizeof rp, "%s.%s", p, r ? r : "?");
            const char *val;
            if (!r) return fail(s, p, "a key is not a scalar");
            if (get_string(s, rp, rv, &val)) return -1;
            if (!strcmp(r, "nvidia.com/gpu")) {
                gpu[which] = val;
                snprintf(gpath[which], sizeof gpath[which], "%s", rp);
            } else if (!strcmp(r, "cpu") || !strcmp(r, "memory")) {
                char err[256];
                json_t *ok = sl_jobspec_from_text(&sl_jobspec_fields[*r == 'c' ? SL_JS_CPUS : SL_JS_MEMORY],
                                                  val, err, sizeof err);
                if (!ok) return fail(s, rp, "%s", err);
                json_decref(ok);
                if (*r == 'c') cpu[which] = val;
                else mem[which] = val;
            } else {
                return fail(s, rp, "not supported (Sluice schedules nvidia.com/gpu, cpu and memory)");
            }
        }
    }
    if (gpu[0] && gpu[1] && strcmp(gpu[0], gpu[1]) != 0)
        return fail(s, gpath[1], "\"%s\" differs from the limit \"%s\" (GPU requests must equal limits)",
                    gpu[1], gpu[0]);
    const char *g = gpu[0] ? gpu[0] : gpu[1];
    char err[256];
    json_t *v;
    if (g) {
        if ((v = sl_jobspec_from_text(&sl_jobspec_fields[SL_JS_GPUS], g, err, sizeof err)) == NULL)
            return fail(s, gpath[gpu[0] ? 0 : 1], "%s", err);
        json_object_set_new(job, "gpus", v);
    }
    /* Requests are what Kubernetes schedules by; limits stand in for them. */
    if (cpu[1] || cpu[0]) json_object_set_new(job, "cpus", json_string(cpu[1] ? cpu[1] : cpu[0]));
    if (mem[1] || mem[0]) json_object_set_new(job, "memory", json_string(mem[1] ? mem[1] : mem[0]));
    return 0;
}

static int k8s_container(spec_t *s, const char *path, yaml_node_t *c, json_t *job) {
    if (want(s, path, c, YAML_MAPPING_NODE)) return -1;
    json_t *cmd = json_array(), *args = json_array();
    int rc = -1;
    for (yaml_node_pair_t *pr = c->data.mapping.pairs.start; pr < c->data.mapping.pairs.top; pr++) {
        const char *k = scalar(node_at(s, pr->key));
        yaml_node_t *v = node_at(s, pr->value);
        char p[256];
        snprintf(p, sizeof p, "%s.%s", path, k ? k : "?");
        const char *str;
        if (!k) {
            fail(s, path, "a key is not a scalar");
            goto out;
        } else if (!strcmp(k, "name") || !strcmp(k, "imagePullPolicy")) {
            if (get_string(s, p, v, &str)) goto out;
        } else if (!strcmp(k, "image")) {
            json_t *image;
            if (get_field(s, p, v, &sl_jobspec_fields[SL_JS_IMAGE], &image)) goto out;
            json_object_set_new(job, "image", image);
        } else if (!strcmp(k, "command")) {
            if (get_strings(s, p, v, cmd)) goto out;
        } else if (!strcmp(k, "args")) {
            if (get_strings(s, p, v, args)) goto out;
        } else if (!strcmp(k, "resources")) {
            if (k8s_resources(s, p, v, job)) goto out;
        } else if (!strcmp(k, "env")) {
            if (want(s, p, v, YAML_SEQUENCE_NODE)) goto out;
            json_t *env = json_object();
            json_object_set_new(job, "env", env);
            int i = 0;
            for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++, i++) {
                yaml_node_t *e = node_at(s, *it);
                char ep[300];
                snprintf(ep, sizeof ep, "%s[%d]", p, i);
                if (want(s, ep, e, YAML_MAPPING_NODE)) goto out;
                const char *name = NULL, *value = "";
                for (yaml_node_pair_t *q = e->data.mapping.pairs.start; q < e->data.mapping.pairs.top; q++) {
                    const char *ek = scalar(node_at(s, q->key));
                    char fp[340];
                    snprintf(fp, sizeof fp, "%s.%s", ep, ek ? ek : "?");
                    if (ek && !strcmp(ek, "name")) {
                        if (get_string(s, fp, node_at(s, q->value), &name)) goto out;
                    } else if (ek && !strcmp(ek, "value")) {
                        if (get_string(s, fp, node_at(s, q->value), &value)) goto out;
                    } else {
                        fail(s, fp, "not supported (only name and value)");
                        goto out;
                    }
                }
                if (!name) {
                    fail(s, ep, "needs a name");
                    goto out;
                }
                if (!sl_jobspec_env_name_ok(name)) {
                    fail(s, ep, "\"%s\" is not a valid variable name", name);
                    goto out;
                }
                json_object_set_new(env, name, json_string(value));
            }
        } else {
            fail(s, p, "not supported");
            goto out;
        }
    }
    json_array_extend(cmd, args);
    if (json_array_size(cmd) > 0) json_object_set(job, "command", cmd);
    rc = 0;
out:
    json_decref(cmd);
    json_decref(args);
    return rc;
}

/* Appends text to the string field k of job (joined by sep). */
static void append_text(json_t *job, const char *k, const char *sep, const char *text) {
    const char *old = json_string_value(json_object_get(job, k));
    if (!old) {
        json_object_set_new(job, k, json_string(text));
        return;
    }
    size_t n = strlen(old) + strlen(sep) + strlen(text) + 1;
    char *b = malloc(n);
    snprintf(b, n, "%s%s%s", old, sep, text);
    json_object_set_new(job, k, json_string(b));
    free(b);
}

/* Appends "k=v" (or a toleration) to the list field k of job. */
static void append_item(json_t *job, const char *k, const char *item) {
    json_t *l = json_object_get(job, k);
    if (!l) json_object_set_new(job, k, l = json_array());
    json_array_append_new(l, json_string(item));
}

/* One matchExpression {key, operator, values} as a constraint requirement. */
static int k8s_match_expr(spec_t *s, const char *path, yaml_node_t *e, char *out, size_t len) {
    if (want(s, path, e, YAML_MAPPING_NODE)) return -1;
    const char *key = NULL, *op = NULL;
    char vals[512] = "";
    size_t nv = 0, o = 0;
    for (yaml_node_pair_t *pr = e->data.mapping.pairs.start; pr < e->data.mapping.pairs.top; pr++) {
        const char *k = scalar(node_at(s, pr->key));
        yaml_node_t *v = node_at(s, pr->value);
        char p[320];
        snprintf(p, sizeof p, "%s.%s", path, k ? k : "?");
        if (k && !strcmp(k, "key")) {
            if (get_string(s, p, v, &key)) return -1;
        } else if (k && !strcmp(k, "operator")) {
            if (get_string(s, p, v, &op)) return -1;
        } else if (k && !strcmp(k, "values")) {
            if (want(s, p, v, YAML_SEQUENCE_NODE)) return -1;
            for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++) {
                const char *x;
                if (get_string(s, p, node_at(s, *it), &x)) return -1;
                if (o < sizeof vals) o += (size_t)snprintf(vals + o, sizeof vals - o, "%s%s", nv++ ? "," : "", x);
            }
        } else {
            return fail(s, p, "not supported");
        }
    }
    if (!key || !op) return fail(s, path, "needs key and operator");
    if (!strcmp(op, "In") || !strcmp(op, "NotIn")) {
        if (nv == 0) return fail(s, path, "operator %s needs values", op);
        snprintf(out, len, "%s %s (%s)", key, op[0] == 'I' ? "in" : "notin", vals);
    } else if (!strcmp(op, "Exists") || !strcmp(op, "DoesNotExist")) {
        if (nv) return fail(s, path, "operator %s takes no values", op);
        snprintf(out, len, "%s%s", op[0] == 'D' ? "!" : "", key);
    } else {
        return fail(s, path, "operator \"%s\" is not supported (In, NotIn, Exists, DoesNotExist)", op);
    }
    return 0;
}

/* affinity: only nodeAffinity's required terms, as the job's constraint
 * (terms joined by |, expressions by &). Preferences are not honoured, so
 * they are errors rather than silently dropped. */
static int k8s_affinity(spec_t *s, const char *path, yaml_node_t *a, json_t *job) {
    if (want(s, path, a, YAML_MAPPING_NODE)) return -1;
    for (yaml_node_pair_t *pr = a->data.mapping.pairs.start; pr < a->data.mapping.pairs.top; pr++) {
        const char *k = scalar(node_at(s, pr->key));
        yaml_node_t *v = node_at(s, pr->value);
        char p[320];
        snprintf(p, sizeof p, "%s.%s", path, k ? k : "?");
        if (!k || strcmp(k, "nodeAffinity") != 0) return fail(s, p, "not supported");
        if (want(s, p, v, YAML_MAPPING_NODE)) return -1;
        for (yaml_node_pair_t *q = v->data.mapping.pairs.start; q < v->data.mapping.pairs.top; q++) {
            const char *nk = scalar(node_at(s, q->key));
            yaml_node_t *req = node_at(s, q->value);
            char np[400];
            snprintf(np, sizeof np, "%s.%s", p, nk ? nk : "?");
            if (!nk || strcmp(nk, "requiredDuringSchedulingIgnoredDuringExecution") != 0)
                return fail(s, np, "not supported (Sluice honours required node affinity only)");
            if (want(s, np, req, YAML_MAPPING_NODE)) return -1;
            for (yaml_node_pair_t *t = req->data.mapping.pairs.start; t < req->data.mapping.pairs.top; t++) {
                const char *tk = scalar(node_at(s, t->key));
                yaml_node_t *terms = node_at(s, t->value);
                char tp[480];
                snprintf(tp, sizeof tp, "%s.%s", np, tk ? tk : "?");
                if (!tk || strcmp(tk, "nodeSelectorTerms") != 0) return fail(s, tp, "not supported");
                if (want(s, tp, terms, YAML_SEQUENCE_NODE)) return -1;
                char expr[1024] = "";
                size_t o = 0;
                int i = 0;
                for (yaml_node_item_t *it = terms->data.sequence.items.start; it < terms->data.sequence.items.top; it++, i++) {
                    yaml_node_t *term = node_at(s, *it);
                    char ip[520];
                    snprintf(ip, sizeof ip, "%s[%d]", tp, i);
                    if (want(s, ip, term, YAML_MAPPING_NODE)) return -1;
                    int nreq = 0;
                    for (yaml_node_pair_t *m = term->data.mapping.pairs.start; m < term->data.mapping.pairs.top; m++) {
                        const char *mk = scalar(node_at(s, m->key));
                        yaml_node_t *exprs = node_at(s, m->value);
                        char mp[600];
                        snprintf(mp, sizeof mp, "%s.%s", ip, mk ? mk : "?");
                        if (!mk || strcmp(mk, "matchExpressions") != 0) return fail(s, mp, "not supported");
                        if (want(s, mp, exprs, YAML_SEQUENCE_NODE)) return -1;
                        int j = 0;
                        for (yaml_node_item_t *e = exprs->data.sequence.items.start; e < exprs->data.sequence.items.top; e++, j++) {
                            char ep[640], r[600];
                            snprintf(ep, sizeof ep, "%s[%d]", mp, j);
                            if (k8s_match_expr(s, ep, node_at(s, *e), r, sizeof r)) return -1;
                            if (o < sizeof expr)
                                o += (size_t)snprintf(expr + o, sizeof expr - o, "%s%s",
                                                      nreq++ ? " & " : (i ? " | " : ""), r);
                        }
                    }
                    if (nreq == 0) return fail(s, ip, "needs matchExpressions");
                }
                if (o > 0) append_text(job, "constraint", " & ", expr);
            }
        }
    }
    return 0;
}

/* tolerations: [{key, operator, value, effect}] as key[=value][:effect]. */
static int k8s_tolerations(spec_t *s, const char *path, yaml_node_t *l, json_t *job) {
    if (want(s, path, l, YAML_SEQUENCE_NODE)) return -1;
    int i = 0;
    for (yaml_node_item_t *it = l->data.sequence.items.start; it < l->data.sequence.items.top; it++, i++) {
        yaml_node_t *t = node_at(s, *it);
        char p[320];
        snprintf(p, sizeof p, "%s[%d]", path, i);
        if (want(s, p, t, YAML_MAPPING_NODE)) return -1;
        const char *key = "", *op = "Equal", *value = NULL, *effect = NULL;
        for (yaml_node_pair_t *pr = t->data.mapping.pairs.start; pr < t->data.mapping.pairs.top; pr++) {
            const char *k = scalar(node_at(s, pr->key));
            char fp[400];
            snprintf(fp, sizeof fp, "%s.%s", p, k ? k : "?");
            const char **dst = !k ? NULL : !strcmp(k, "key") ? &key : !strcmp(k, "operator") ? &op
                             : !strcmp(k, "value") ? &value : !strcmp(k, "effect") ? &effect : NULL;
            if (!dst) return fail(s, fp, "not supported");
            if (get_string(s, fp, node_at(s, pr->value), dst)) return -1;
        }
        if (effect && *effect && strcmp(effect, "NoSchedule") && strcmp(effect, "PreferNoSchedule") &&
            strcmp(effect, "NoExecute"))
            return fail(s, p, "effect \"%s\" is not NoSchedule, PreferNoSchedule or NoExecute", effect);
        char item[400];
        if (strcmp(op, "Exists") == 0) {
            if (value && *value) return fail(s, p, "operator Exists takes no value");
            if (!*key && effect && *effect) return fail(s, p, "an empty key with an effect is not supported");
            snprintf(item, sizeof item, "%s%s%s", *key ? key : "*", effect && *effect && *key ? ":" : "",
                     effect && *key ? effect : "");
        } else if (strcmp(op, "Equal") == 0) {
            if (!*key) return fail(s, p, "operator Equal needs a key");
            snprintf(item, sizeof item, "%s=%s%s%s", key, value ? value : "", effect && *effect ? ":" : "",
                     effect ? effect : "");
        } else {
            return fail(s, p, "operator \"%s\" is not supported (Equal, Exists)", op);
        }
        json_t *chk = sl_jobspec_from_text(&sl_jobspec_fields[SL_JS_TOLERATIONS], item, p, sizeof p);
        if (!chk) return fail(s, path, "%s", p);
        json_decref(chk);
        append_item(job, "tolerations", item);
    }
    return 0;
}

static int k8s_pod_spec(spec_t *s, const char *path, yaml_node_t *ps, json_t *job) {
    if (want(s, path, ps, YAML_MAPPING_NODE)) return -1;
    int have_containers = 0;
    for (yaml_node_pair_t *pr = ps->data.mapping.pairs.start; pr < ps->data.mapping.pairs.top; pr++) {
        const char *k = scalar(node_at(s, pr->key));
        yaml_node_t *v = node_at(s, pr->value);
        char p[256];
        snprintf(p, sizeof p, "%s.%s", path, k ? k : "?");
        const char *str;
        if (k && !strcmp(k, "containers")) {
            if (want(s, p, v, YAML_SEQUENCE_NODE)) return -1;
            int n = (int)(v->data.sequence.items.top - v->data.sequence.items.start);
            if (n != 1)
                return fail(s, p, "%d containers: not supported (Sluice runs exactly one per task)", n);
            char cp[300];
            snprintf(cp, sizeof cp, "%s[0]", p);
            if (k8s_container(s, cp, node_at(s, v->data.sequence.items.start[0]), job)) return -1;
            have_containers = 1;
        } else if (k && !strcmp(k, "restartPolicy")) {
            if (get_string(s, p, v, &str)) return -1;
            /* Both retry the failed job up to backoffLimit times (retries):
             * Sluice starts its gang again, on whatever nodes are free, for
             * OnFailure as for Never (docs/jobspec.md). */
            if (strcmp(str, "Never") != 0 && strcmp(str, "OnFailure") != 0)
                return fail(s, p, "\"%s\" is not supported (a Job's pods use Never or OnFailure)", str);
        } else if (k && !strcmp(k, "priorityClassName")) { /* a priority class */
            json_t *val;
            if (get_field(s, p, v, &sl_jobspec_fields[SL_JS_PRIORITY_CLASS], &val)) return -1;
            json_object_set_new(job, "priority_class", val);
        } else if (k && !strcmp(k, "nodeSelector")) {
            if (want(s, p, v, YAML_MAPPING_NODE)) return -1;
            for (yaml_node_pair_t *q = v->data.mapping.pairs.start; q < v->data.mapping.pairs.top; q++) {
                const char *sk = scalar(node_at(s, q->key));
                char sp[320];
                snprintf(sp, sizeof sp, "%s.%s", p, sk ? sk : "?");
                json_t *val;
                if (sk && !strcmp(sk, "sluice.io/pool")) {
                    if (get_field(s, sp, node_at(s, q->value), &sl_jobspec_fields[SL_JS_POOL], &val))
                        return -1;
                    json_object_set_new(job, "pool", val);
                } else if (sk && !strcmp(sk, "nvidia.com/gpu.product")) {
                    if (get_field(s, sp, node_at(s, q->value), &sl_jobspec_fields[SL_JS_GPU_MODELS],
                                  &val))
                        return -1;
                    json_object_set_new(job, "gpu_models", json_pack("[o]", val));
                } else {
                    const char *sv;
                    if (!sk || get_string(s, sp, node_at(s, q->value), &sv)) return -1;
                    char kv[300];
                    snprintf(kv, sizeof kv, "%s=%s", sk, sv);
                    char e[256];
                    val = sl_jobspec_from_text(&sl_jobspec_fields[SL_JS_NODE_SELECTOR], kv, e, sizeof e);
                    if (!val) return fail(s, sp, "%s", e);
                    json_decref(val);
                    append_item(job, "node_selector", kv);
                }
            }
        } else if (k && !strcmp(k, "affinity")) {
            if (k8s_affinity(s, p, v, job)) return -1;
        } else if (k && !strcmp(k, "tolerations")) {
            if (k8s_tolerations(s, p, v, job)) return -1;
        } else {
            return fail(s, p, "not supported");
        }
    }
    if (!have_containers) return fail(s, path, "needs containers");
    return 0;
}

static int k8s_job(spec_t *s, yaml_node_t *root, json_t *job) {
    const char *api = NULL, *kind = NULL;
    long long completions = -1, tasks = 1;
    int have_template = 0;
    for (yaml_node_pair_t *pr = root->data.mapping.pairs.start; pr < root->data.mapping.pairs.top; pr++) {
        const char *k = scalar(node_at(s, pr->key));
        yaml_node_t *v = node_at(s, pr->value);
        if (!k) return fail(s, "", "a key is not a scalar");
        if (!strcmp(k, "apiVersion")) {
            if (get_string(s, k, v, &api)) return -1;
        } else if (!strcmp(k, "kind")) {
            if (get_string(s, k, v, &kind)) return -1;
        } else if (!strcmp(k, "metadata")) {
            if (ignore_meta(s, "metadata", v, job)) return -1;
        } else if (!strcmp(k, "spec")) {
            if (want(s, "spec", v, YAML_MAPPING_NODE)) return -1;
            for (yaml_node_pair_t *q = v->data.mapping.pairs.start; q < v->data.mapping.pairs.top; q++) {
                const char *sk = scalar(node_at(s, q->key));
                yaml_node_t *sv = node_at(s, q->value);
                char p[256];
                snprintf(p, sizeof p, "spec.%s", sk ? sk : "?");
                long long x;
                const char *str;
                if (!sk) return fail(s, "spec", "a key is not a scalar");
                if (!strcmp(sk, "parallelism")) {
                    if (get_field_int(s, p, sv, SL_JS_TASKS, &tasks)) return -1;
                } else if (!strcmp(sk, "completions")) {
                    if (get_field_int(s, p, sv, SL_JS_TASKS, &completions)) return -1;
                } else if (!strcmp(sk, "completionMode")) {
                    if (get_string(s, p, sv, &str)) return -1;
                    if (strcmp(str, "Indexed") && strcmp(str, "NonIndexed"))
                        return fail(s, p, "\"%s\" is not Indexed or NonIndexed", str);
                } else if (!strcmp(sk, "backoffLimit")) {
                    if (get_field_int(s, p, sv, SL_JS_RETRIES, &x)) return -1;
                    json_object_set_new(job, "retries", json_integer(x));
                } else if (!strcmp(sk, "activeDeadlineSeconds")) {
                    if (get_int(s, p, sv, 1, sl_jobspec_fields[SL_JS_TIME_LIMIT].max, &x)) return -1;
                    json_object_set_new(job, "time_limit", json_integer(x));
                } else if (!strcmp(sk, "ttlSecondsAfterFinished")) {
                    if (get_int(s, p, sv, 0, 1LL << 40, &x)) return -1;
                } else if (!strcmp(sk, "template")) {
                    if (want(s, p, sv, YAML_MAPPING_NODE)) return -1;
                    for (yaml_node_pair_t *t = sv->data.mapping.pairs.start; t < sv->data.mapping.pairs.top; t++) {
                        const char *tk = scalar(node_at(s, t->key));
                        yaml_node_t *tv = node_at(s, t->value);
                        if (tk && !strcmp(tk, "metadata")) {
                            if (ignore_meta(s, "spec.template.metadata", tv, NULL)) return -1;
                        } else if (tk && !strcmp(tk, "spec")) {
                            if (k8s_pod_spec(s, "spec.template.spec", tv, job)) return -1;
                            have_template = 1;
                        } else {
                            char tp[256];
                            snprintf(tp, sizeof tp, "spec.template.%s", tk ? tk : "?");
                            return fail(s, tp, "not supported");
                        }
                    }
                } else {
                    return fail(s, p, "not supported");
                }
            }
        } else {
            return fail(s, k, "not supported in a batch/v1 Job manifest");
        }
    }
    if (!api || strcmp(api, "batch/v1") != 0)
        return fail(s, "apiVersion", "%s%s%s is not supported (only batch/v1 Job)", api ? "\"" : "",
                    api ? api : "missing", api ? "\"" : "");
    if (!kind || strcmp(kind, "Job") != 0)
        return fail(s, "kind", "%s%s%s is not supported (only Job)", kind ? "\"" : "",
                    kind ? kind : "missing", kind ? "\"" : "");
    if (!have_template) return fail(s, "spec.template.spec", "missing");
    if (completions >= 0 && completions != tasks)
        return fail(s, "spec.completions", "%lld differs from spec.parallelism %lld: not supported "
                    "(Sluice runs a job's tasks as one gang, all at once)", completions, tasks);
    json_object_set_new(job, "tasks", json_integer(tasks));
    return 0;
}

/* The first key of any mapping under n that repeats an earlier key of its
 * mapping, as "LINE:COL: duplicate key" in err: a second value for a field
 * must not silently replace the first. Recursion is bounded by the depth
 * check; O(keys^2) per mapping, which a spec keeps small. */
static int dup_keys(spec_t *s, yaml_node_t *n, char *err, size_t errlen) {
    if (n->type == YAML_SEQUENCE_NODE) {
        for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++)
            if (dup_keys(s, node_at(s, *it), err, errlen)) return -1;
        return 0;
    }
    if (n->type != YAML_MAPPING_NODE) return 0;
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = node_at(s, p->key);
        const char *key = scalar(k);
        for (yaml_node_pair_t *q = n->data.mapping.pairs.start; key && q < p; q++) {
            const char *prev = scalar(node_at(s, q->key));
            if (prev && strcmp(prev, key) == 0) {
                snprintf(err, errlen, "%zu:%zu: duplicate key \"%s\"", k->start_mark.line + 1,
                         k->start_mark.column + 1, key);
                return -1;
            }
        }
        if (dup_keys(s, node_at(s, p->value), err, errlen)) return -1;
    }
    return 0;
}

/* Deeper than any job spec or manifest nests (a Kubernetes Job: about 8). */
#define SPEC_MAX_DEPTH 64

/* The whole of f in a malloc'd buffer (*len bytes); NULL on a read error. */
static char *read_all(FILE *f, size_t *len) {
    size_t n = 0, cap = 4096;
    char *p = malloc(cap);
    size_t got;
    while (p && (got = fread(p + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            char *q = realloc(p, cap *= 2);
            if (!q)
                free(p);
            p = q;
        }
    }
    if (p && ferror(f)) {
        free(p);
        p = NULL;
    }
    *len = n;
    return p;
}

json_t *cli_spec_load(const char *path, char *err, size_t errlen) {
    spec_t s = {.err = err, .errlen = errlen};
    yaml_parser_t parser;
    json_t *job = NULL;
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    size_t len;
    char *text = read_all(f, &len);
    if (f != stdin) fclose(f);
    if (!text) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno ? errno : EIO));
        return NULL;
    }
    char derr[160];
    if (sl_yaml_depth_check(text, len, SPEC_MAX_DEPTH, derr, sizeof derr) < 0) {
        snprintf(err, errlen, "%s:%s", path, derr);
        free(text);
        return NULL;
    }
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &s.doc)) {
        snprintf(err, errlen, "%s:%zu:%zu: %s", path, parser.problem_mark.line + 1,
                 parser.problem_mark.column + 1, parser.problem ? parser.problem : "YAML error");
        goto out_parser;
    }
    yaml_node_t *root = yaml_document_get_root_node(&s.doc);
    if (!root) {
        snprintf(err, errlen, "%s: empty file", path);
        goto out_doc;
    }
    char dmsg[200];
    if (dup_keys(&s, root, dmsg, sizeof dmsg) < 0) {
        snprintf(err, errlen, "%s:%s", path, dmsg);
        goto out_doc;
    }
    if (root->type != YAML_MAPPING_NODE) {
        snprintf(err, errlen, "%s: the top level must be a mapping, not %s", path, kind_name(root));
        goto out_doc;
    }
    /* One job per file: a second document is an error, not ignored. */
    yaml_document_t next;
    if (yaml_parser_load(&parser, &next)) {
        int more = yaml_document_get_root_node(&next) != NULL;
        yaml_document_delete(&next);
        if (more) {
            snprintf(err, errlen, "%s: several YAML documents; give one job per file", path);
            goto out_doc;
        }
    }
    int is_k8s = 0;
    for (yaml_node_pair_t *pr = root->data.mapping.pairs.start; pr < root->data.mapping.pairs.top; pr++) {
        const char *k = scalar(node_at(&s, pr->key));
        if (k && (!strcmp(k, "apiVersion") || !strcmp(k, "kind"))) is_k8s = 1;
    }
    job = json_object();
    s.job = job;
    char msg[1024];
    s.err = msg;
    s.errlen = sizeof msg;
    int rc = is_k8s ? k8s_job(&s, root, job) : sluice_spec(&s, root, job);
    if (rc != 0) {
        snprintf(err, errlen, "%s: %s", path, msg);
        json_decref(job);
        job = NULL;
    }
out_doc:
    yaml_document_delete(&s.doc);
out_parser:
    yaml_parser_delete(&parser);
    free(text);
    return job;
}
