/*
 * specdoc.c - reading the nodes of one spec document, with every problem
 * collected under its path (specdoc.h).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "specdoc.h"

static void add(json_t *list, const char *path, const char *fmt, va_list ap) {
    char msg[600], line[900];
    vsnprintf(msg, sizeof msg, fmt, ap);
    snprintf(line, sizeof line, "%s%s%s", path ? path : "", path && *path ? ": " : "", msg);
    json_array_append_new(list, json_string(line));
}

int cli_spec_fail(cli_spec_t *s, const char *path, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    add(s->errors, path, fmt, ap);
    va_end(ap);
    return -1;
}

void cli_spec_warn(cli_spec_t *s, const char *path, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    add(s->warnings, path, fmt, ap);
    va_end(ap);
}

yaml_node_t *cli_spec_node(cli_spec_t *s, int id) {
    return yaml_document_get_node(&s->doc, id);
}

const char *cli_spec_scalar(yaml_node_t *n) {
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

bool cli_spec_is_null(yaml_node_t *n) {
    if (n == NULL || n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return false;
    const char *v = (const char *)n->data.scalar.value;
    return !*v || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") || !strcmp(v, "NULL");
}

const char *cli_spec_kind(yaml_node_t *n) {
    switch (n->type) {
    case YAML_MAPPING_NODE: return "a mapping";
    case YAML_SEQUENCE_NODE: return "a list";
    default: return "a scalar";
    }
}

int cli_spec_want(cli_spec_t *s, const char *path, yaml_node_t *n, yaml_node_type_t t) {
    if (n->type == t) return 0;
    return cli_spec_fail(s, path, "must be %s, not %s",
                         t == YAML_MAPPING_NODE ? "a mapping" : t == YAML_SEQUENCE_NODE ? "a list" : "a scalar",
                         cli_spec_kind(n));
}

int cli_spec_next(cli_spec_t *s, yaml_node_t *map, const char *parent, yaml_node_pair_t **pr,
                  const char **key, yaml_node_t **val, char *path, size_t len) {
    if (map->type != YAML_MAPPING_NODE) return 0;
    yaml_node_pair_t *p = *pr ? *pr + 1 : map->data.mapping.pairs.start;
    for (; p < map->data.mapping.pairs.top; p++) {
        const char *k = cli_spec_scalar(cli_spec_node(s, p->key));
        yaml_node_t *v = cli_spec_node(s, p->value);
        if (k == NULL) {
            cli_spec_fail(s, parent, "a key is not a scalar");
            continue;
        }
        if (cli_spec_is_null(v)) continue;
        snprintf(path, len, "%s%s%s", parent, *parent ? "." : "", k);
        *pr = p;
        *key = k;
        *val = v;
        return 1;
    }
    *pr = p;
    return 0;
}

int cli_spec_len(yaml_node_t *n) {
    return n->type == YAML_SEQUENCE_NODE ? (int)(n->data.sequence.items.top - n->data.sequence.items.start) : 0;
}

yaml_node_t *cli_spec_item(cli_spec_t *s, yaml_node_t *n, int i) {
    return cli_spec_node(s, n->data.sequence.items.start[i]);
}

int cli_spec_string(cli_spec_t *s, const char *path, yaml_node_t *n, const char **out) {
    if (cli_spec_want(s, path, n, YAML_SCALAR_NODE)) return -1;
    *out = cli_spec_scalar(n);
    return 0;
}

int cli_spec_int(cli_spec_t *s, const char *path, yaml_node_t *n, long long lo, long long hi,
                 long long *out) {
    if (cli_spec_want(s, path, n, YAML_SCALAR_NODE)) return -1;
    const char *v = cli_spec_scalar(n);
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi)
        return cli_spec_fail(s, path, "\"%s\" is not a whole number from %lld to %lld", v, lo, hi);
    *out = x;
    return 0;
}

int cli_spec_bool(cli_spec_t *s, const char *path, yaml_node_t *n, bool *out) {
    const char *v;
    if (cli_spec_string(s, path, n, &v)) return -1;
    if (!strcmp(v, "true") || !strcmp(v, "True") || !strcmp(v, "TRUE")) *out = true;
    else if (!strcmp(v, "false") || !strcmp(v, "False") || !strcmp(v, "FALSE")) *out = false;
    else return cli_spec_fail(s, path, "\"%s\" is not true or false", v);
    return 0;
}

int cli_spec_strings(cli_spec_t *s, const char *path, yaml_node_t *n, json_t *arr) {
    if (cli_spec_want(s, path, n, YAML_SEQUENCE_NODE)) return -1;
    int rc = 0;
    for (int i = 0; i < cli_spec_len(n); i++) {
        yaml_node_t *v = cli_spec_item(s, n, i);
        char p[320];
        snprintf(p, sizeof p, "%s[%d]", path, i);
        if (cli_spec_want(s, p, v, YAML_SCALAR_NODE)) rc = -1;
        else json_array_append_new(arr, json_string(cli_spec_scalar(v)));
    }
    return rc;
}

int cli_spec_field(cli_spec_t *s, const char *path, yaml_node_t *n, const sl_jobspec_field_t *f,
                   json_t **out) {
    const char *str;
    char err[256];
    if (cli_spec_string(s, path, n, &str)) return -1;
    *out = sl_jobspec_from_text(f, str, err, sizeof err);
    if (*out == NULL) return cli_spec_fail(s, path, "%s", err);
    return 0;
}

int cli_spec_field_int(cli_spec_t *s, const char *path, yaml_node_t *n, sl_jobspec_id_t id,
                       long long *out) {
    json_t *v;
    if (cli_spec_field(s, path, n, &sl_jobspec_fields[id], &v)) return -1;
    *out = json_integer_value(v);
    json_decref(v);
    return 0;
}

void cli_spec_append(json_t *job, const char *k, json_t *item) {
    json_t *l = json_object_get(job, k);
    if (!l) json_object_set_new(job, k, l = json_array());
    json_array_append_new(l, item);
}

void cli_spec_append_text(json_t *job, const char *k, const char *sep, const char *text) {
    const char *old = json_string_value(json_object_get(job, k));
    if (!old) {
        json_object_set_new(job, k, json_string(text));
        return;
    }
    size_t n = strlen(old) + strlen(sep) + strlen(text) + 1;
    char *b = malloc(n);
    if (b == NULL) abort();
    snprintf(b, n, "%s%s%s", old, sep, text);
    json_object_set_new(job, k, json_string(b));
    free(b);
}
