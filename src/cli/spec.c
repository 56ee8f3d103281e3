/*
 * spec.c - job spec files for `sluice submit -f`: Sluice's own YAML (or
 * JSON, which YAML reads too) and Kubernetes manifests (a batch/v1 Job,
 * a Kubeflow PyTorchJob: k8s.c, k8s_kubeflow.c), each document of the
 * file turned into one JSON submission of docs/api.md (docs/jobspec.md).
 *
 * The file is loaded with libyaml's document API, one document at a time,
 * and walked field by field against what Sluice understands. Anything
 * else is an error naming the field's path ("spec.template.spec.foo: not
 * supported"), never ignored in silence: a manifest that asks for
 * something Sluice would not do must not run as if it had not asked. Every
 * problem of every document is collected (specdoc.h), so that one answer
 * lists them all; a file with any problem submits nothing. A manifest's
 * apiVersion and kind are checked before anything else: the fields of an
 * object Sluice does not take are not worth listing.
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
#include "k8s.h"
#include "yamldoc.h"

/* ---- Sluice's own spec: the fields of the JSON submission ---- */

/* `topology: {required: rack, preferred: block}`: the fields
 * topology_required and topology_preferred written as one mapping. */
static int topology_map(cli_spec_t *s, yaml_node_t *v, json_t *job) {
    if (cli_spec_want(s, "topology", v, YAML_MAPPING_NODE)) return -1;
    int rc = 0;
    yaml_node_pair_t *pr = NULL;
    const char *ek;
    yaml_node_t *ev;
    char p[256];
    while (cli_spec_next(s, v, "topology", &pr, &ek, &ev, p, sizeof p)) {
        sl_jobspec_id_t id;
        if (!strcmp(ek, "required")) id = SL_JS_TOPOLOGY_REQUIRED;
        else if (!strcmp(ek, "preferred")) id = SL_JS_TOPOLOGY_PREFERRED;
        else {
            rc = cli_spec_fail(s, p, "unknown key (required or preferred)");
            continue;
        }
        json_t *val;
        if (cli_spec_field(s, p, ev, &sl_jobspec_fields[id], &val)) rc = -1;
        else json_object_set_new(job, sl_jobspec_fields[id].name, val);
    }
    return rc;
}

/* A YAML value as JSON, for the fields whose shape the server checks
 * (volumes, secrets: lists of objects): a mapping becomes an object, a
 * sequence an array, a plain scalar true/false a boolean, a plain whole
 * number an integer, a null (~, null, empty) JSON null, and any other
 * scalar a string. Depth is bounded by the YAML loader. */
static int yaml_json(cli_spec_t *s, const char *path, yaml_node_t *n, json_t **out) {
    int rc = 0;
    char p[256];
    if (n == NULL) return cli_spec_fail(s, path, "missing value");
    if (n->type == YAML_MAPPING_NODE) {
        json_t *o = json_object();
        yaml_node_pair_t *pr = NULL;
        const char *k;
        yaml_node_t *v;
        *out = o;
        while (cli_spec_next(s, n, path, &pr, &k, &v, p, sizeof p)) {
            json_t *e;
            if (yaml_json(s, p, v, &e)) rc = -1;
            else json_object_set_new(o, k, e);
        }
        return rc;
    }
    if (n->type == YAML_SEQUENCE_NODE) {
        json_t *a = json_array();
        *out = a;
        for (int i = 0; i < cli_spec_len(n); i++) {
            json_t *e;
            snprintf(p, sizeof p, "%s[%d]", path, i);
            if (yaml_json(s, p, cli_spec_item(s, n, i), &e)) rc = -1;
            else json_array_append_new(a, e);
        }
        return rc;
    }
    const char *t = cli_spec_scalar(n);
    if (cli_spec_is_null(n)) {
        *out = json_null();
    } else if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) {
        *out = json_string(t);
    } else if (!strcmp(t, "true") || !strcmp(t, "false")) {
        *out = json_boolean(t[0] == 't');
    } else {
        char *end;
        errno = 0;
        long long v = strtoll(t, &end, 0);
        *out = *t && !*end && !errno ? json_integer(v) : json_string(t);
    }
    if (*out == NULL) return cli_spec_fail(s, path, "not valid UTF-8");
    return 0;
}

/* One field of Sluice's spec: k's value v into job. */
static int sluice_field(cli_spec_t *s, const char *k, yaml_node_t *v, json_t *job) {
    const sl_jobspec_field_t *f = sl_jobspec_find(k);
    if (f == NULL) {
        char known[400];
        size_t n = 0;
        for (int i = 0; i < SL_JS_NFIELDS && n < sizeof known; i++)
            n += (size_t)snprintf(known + n, sizeof known - n, " %s", sl_jobspec_fields[i].name);
        return cli_spec_fail(s, k, "unknown field (see docs/jobspec.md:%s)", known);
    }
    json_t *val;
    int rc = 0;
    switch (f->type) {
    case SL_FT_NAMES:
        if (v->type == YAML_SCALAR_NODE) {
            if (cli_spec_field(s, k, v, f, &val)) return -1;
            json_object_set_new(job, k, json_pack("[o]", val));
            return 0;
        }
        if (cli_spec_want(s, k, v, YAML_SEQUENCE_NODE)) return -1;
        val = json_array();
        json_object_set_new(job, k, val);
        for (int i = 0; i < cli_spec_len(v); i++) {
            char p[256];
            json_t *name;
            snprintf(p, sizeof p, "%s[%d]", k, i);
            if (cli_spec_field(s, p, cli_spec_item(s, v, i), f, &name)) rc = -1;
            else json_array_append_new(val, name);
        }
        return rc;
    case SL_FT_ARGV:
        val = json_array();
        json_object_set_new(job, k, val);
        if (v->type == YAML_SCALAR_NODE) {
            json_array_append_new(val, json_string("/bin/sh"));
            json_array_append_new(val, json_string("-c"));
            json_array_append_new(val, json_string(cli_spec_scalar(v)));
            return 0;
        }
        return cli_spec_strings(s, k, v, val);
    case SL_FT_ENV: {
        if (cli_spec_want(s, k, v, YAML_MAPPING_NODE)) return -1;
        val = json_object();
        json_object_set_new(job, k, val);
        yaml_node_pair_t *pr = NULL;
        const char *ek, *str;
        yaml_node_t *ev;
        char p[256];
        while (cli_spec_next(s, v, k, &pr, &ek, &ev, p, sizeof p)) {
            if (!sl_jobspec_env_name_ok(ek)) rc = cli_spec_fail(s, p, "not a valid variable name");
            else if (cli_spec_string(s, p, ev, &str)) rc = -1;
            else json_object_set_new(val, ek, json_string(str));
        }
        return rc;
    }
    case SL_FT_VOLUMES:
    case SL_FT_SECRETS: /* lists of objects, whose shape the server checks */
        if (cli_spec_want(s, k, v, YAML_SEQUENCE_NODE)) return -1;
        if (yaml_json(s, k, v, &val)) {
            json_decref(val);
            return -1;
        }
        json_object_set_new(job, k, val);
        return 0;
    default:
        if (cli_spec_field(s, k, v, f, &val)) return -1;
        json_object_set_new(job, k, val);
        return 0;
    }
}

static int sluice_spec(cli_spec_t *s, yaml_node_t *root, json_t *job) {
    int rc = 0;
    yaml_node_pair_t *pr = NULL;
    const char *k;
    yaml_node_t *v;
    char p[256];
    while (cli_spec_next(s, root, "", &pr, &k, &v, p, sizeof p)) {
        if (!strcmp(k, "topology")) rc |= topology_map(s, v, job);
        else rc |= sluice_field(s, k, v, job);
    }
    return rc;
}

/* ---- Kubernetes: the kind first ---- */

static const struct {
    const char *kind, *api;
    int (*convert)(cli_k8s_t *k, yaml_node_t *root);
} kinds[] = {
    {"Job", "batch/v1", cli_k8s_job},
    {"PyTorchJob", "kubeflow.org/v1", cli_k8s_pytorchjob},
    {"MPIJob", "kubeflow.org/v2beta1", cli_k8s_mpijob},
    {"MPIJob", "kubeflow.org/v1", cli_k8s_mpijob},
    /* Beside a job, a (headless) Service names its pods for each other:
     * a gang's tasks get MASTER_ADDR instead, so it is skipped. */
    {"Service", "v1", NULL},
};

static int k8s_manifest(cli_spec_t *s, yaml_node_t *root, json_t *job, const char *tenant) {
    const char *api = NULL, *kind = NULL;
    yaml_node_pair_t *pr = NULL;
    const char *k;
    yaml_node_t *v;
    char p[256];
    while (cli_spec_next(s, root, "", &pr, &k, &v, p, sizeof p)) {
        if (!strcmp(k, "apiVersion") && cli_spec_string(s, k, v, &api)) return -1;
        if (!strcmp(k, "kind") && cli_spec_string(s, k, v, &kind)) return -1;
    }
    size_t n = sizeof kinds / sizeof kinds[0], i;
    for (i = 0; kind && i < n && strcmp(kinds[i].kind, kind); i++)
        ;
    for (size_t j = i; api && j < n; j++) /* a kind of several versions: the one given */
        if (!strcmp(kinds[j].kind, kinds[i].kind) && !strcmp(kinds[j].api, api)) i = j;
    if (!kind || i == n)
        return cli_spec_fail(s, "kind", "%s%s%s is not supported (batch/v1 Job, kubeflow.org/v1 "
                             "PyTorchJob, kubeflow.org/v2beta1 or v1 MPIJob; a v1 Service beside "
                             "them is skipped)",
                             kind ? "\"" : "", kind ? kind : "missing", kind ? "\"" : "");
    if (!api || strcmp(api, kinds[i].api))
        return cli_spec_fail(s, "apiVersion", "%s%s%s is not supported (a %s is %s)", api ? "\"" : "",
                             api ? api : "missing", api ? "\"" : "", kinds[i].kind, kinds[i].api);
    if (kinds[i].convert == NULL) {
        cli_spec_warn(s, "kind", "a %s has no meaning here (a gang's tasks get MASTER_ADDR and "
                      "MASTER_PORT; a task has its node's network): skipped", kinds[i].kind);
        return 1;
    }
    cli_k8s_t kc = {.s = s, .job = job, .fieldrefs = json_object(), .tenant = tenant,
                    .gang = -1};
    int rc = kinds[i].convert(&kc, root);
    rc |= cli_k8s_finish(&kc);
    json_decref(kc.fieldrefs);
    return rc;
}

/* The first key of any mapping under n that repeats an earlier key of its
 * mapping, as "LINE:COL: duplicate key" in err: a second value for a field
 * must not silently replace the first. Recursion is bounded by the depth
 * check; O(keys^2) per mapping, which a spec keeps small. */
static int dup_keys(cli_spec_t *s, yaml_node_t *n, char *err, size_t errlen) {
    if (n->type == YAML_SEQUENCE_NODE) {
        for (int i = 0; i < cli_spec_len(n); i++)
            if (dup_keys(s, cli_spec_item(s, n, i), err, errlen)) return -1;
        return 0;
    }
    if (n->type != YAML_MAPPING_NODE) return 0;
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = cli_spec_node(s, p->key);
        const char *key = cli_spec_scalar(k);
        for (yaml_node_pair_t *q = n->data.mapping.pairs.start; key && q < p; q++) {
            const char *prev = cli_spec_scalar(cli_spec_node(s, q->key));
            if (prev && strcmp(prev, key) == 0) {
                snprintf(err, errlen, "%zu:%zu: duplicate key \"%s\"", k->start_mark.line + 1,
                         k->start_mark.column + 1, key);
                return -1;
            }
        }
        if (dup_keys(s, cli_spec_node(s, p->value), err, errlen)) return -1;
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

/* Adds "PREFIX: line" to dst for each line of src. */
static void prefix_all(json_t *dst, const char *prefix, json_t *src) {
    size_t i;
    json_t *m;
    json_array_foreach(src, i, m) {
        char line[1200];
        const char *msg = json_string_value(m);
        /* "FILE:LINE:COL: ..." for a position, "FILE: PATH: ..." else. */
        snprintf(line, sizeof line, "%s%s%s", prefix, isdigit((unsigned char)msg[0]) ? ":" : ": ", msg);
        json_array_append_new(dst, json_string(line));
    }
}

/* One document (root) of the file into a new submission, its problems
 * and warnings into s. NULL when it has a problem. */
static json_t *one_document(cli_spec_t *s, yaml_node_t *root, const char *tenant) {
    char dmsg[200];
    if (dup_keys(s, root, dmsg, sizeof dmsg) < 0) {
        cli_spec_fail(s, NULL, "%s", dmsg);
        return NULL;
    }
    if (root->type != YAML_MAPPING_NODE) {
        cli_spec_fail(s, NULL, "the top level must be a mapping, not %s", cli_spec_kind(root));
        return NULL;
    }
    int is_k8s = 0;
    for (yaml_node_pair_t *pr = root->data.mapping.pairs.start; pr < root->data.mapping.pairs.top; pr++) {
        const char *k = cli_spec_scalar(cli_spec_node(s, pr->key));
        if (k && (!strcmp(k, "apiVersion") || !strcmp(k, "kind"))) is_k8s = 1;
    }
    json_t *job = json_object();
    int rc = is_k8s ? k8s_manifest(s, root, job, tenant) : sluice_spec(s, root, job);
    if (rc == 1 && !json_array_size(s->errors)) { /* a document that is no job */
        json_decref(job);
        return NULL;
    }
    if (rc != 0 || json_array_size(s->errors)) {
        json_decref(job);
        return NULL;
    }
    return job;
}

json_t *cli_spec_load(const char *path, const char *tenant, json_t *errors, json_t *warnings) {
    yaml_parser_t parser;
    json_t *jobs = json_array();
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    char line[1200];
    if (!f) {
        snprintf(line, sizeof line, "%s: %s", path, strerror(errno));
        json_array_append_new(errors, json_string(line));
        json_decref(jobs);
        return NULL;
    }
    size_t len;
    char *text = read_all(f, &len);
    if (f != stdin) fclose(f);
    if (!text) {
        snprintf(line, sizeof line, "%s: %s", path, strerror(errno ? errno : EIO));
        json_array_append_new(errors, json_string(line));
        json_decref(jobs);
        return NULL;
    }
    char derr[160];
    if (sl_yaml_depth_check(text, len, SPEC_MAX_DEPTH, derr, sizeof derr) < 0) {
        snprintf(line, sizeof line, "%s:%s", path, derr);
        json_array_append_new(errors, json_string(line));
        free(text);
        json_decref(jobs);
        return NULL;
    }
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    json_t *docs_err = json_array(), *docs_warn = json_array();
    int ndocs = 0;
    for (;;) {
        cli_spec_t s = {.errors = json_array(), .warnings = json_array()};
        if (!yaml_parser_load(&parser, &s.doc)) {
            snprintf(line, sizeof line, "%s:%zu:%zu: %s", path, parser.problem_mark.line + 1,
                     parser.problem_mark.column + 1, parser.problem ? parser.problem : "YAML error");
            json_array_append_new(errors, json_string(line));
            json_decref(s.errors);
            json_decref(s.warnings);
            break;
        }
        yaml_node_t *root = yaml_document_get_root_node(&s.doc);
        if (!root) { /* the end of the stream */
            yaml_document_delete(&s.doc);
            json_decref(s.errors);
            json_decref(s.warnings);
            break;
        }
        if (cli_spec_is_null(root)) { /* an empty document: "---" at the end */
            yaml_document_delete(&s.doc);
            json_decref(s.errors);
            json_decref(s.warnings);
            continue;
        }
        ndocs++;
        json_t *job = one_document(&s, root, tenant);
        if (job) json_array_append_new(jobs, job);
        /* A document's number only where the file has several (the
         * messages are prefixed once the count is known). */
        json_array_append_new(docs_err, s.errors);
        json_array_append_new(docs_warn, s.warnings);
        yaml_document_delete(&s.doc);
    }
    yaml_parser_delete(&parser);
    free(text);
    if (ndocs == 0 && json_array_size(errors) == 0) {
        snprintf(line, sizeof line, "%s: empty file", path);
        json_array_append_new(errors, json_string(line));
    }
    bool any_err = false;
    for (size_t d = 0; d < json_array_size(docs_err); d++)
        any_err |= json_array_size(json_array_get(docs_err, d)) > 0;
    if (ndocs > 0 && !any_err && json_array_size(jobs) == 0 && json_array_size(errors) == 0) {
        snprintf(line, sizeof line, "%s: no job in the file (a Job, a PyTorchJob or Sluice's spec)", path);
        json_array_append_new(errors, json_string(line));
    }
    for (size_t d = 0; d < json_array_size(docs_err); d++) {
        char prefix[600];
        if (ndocs > 1) snprintf(prefix, sizeof prefix, "%s: document %zu", path, d + 1);
        else snprintf(prefix, sizeof prefix, "%s", path);
        prefix_all(errors, prefix, json_array_get(docs_err, d));
        prefix_all(warnings, prefix, json_array_get(docs_warn, d));
    }
    json_decref(docs_err);
    json_decref(docs_warn);
    if (json_array_size(errors)) {
        json_decref(jobs);
        return NULL;
    }
    return jobs;
}
