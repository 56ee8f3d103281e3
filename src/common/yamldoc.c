/*
 * yamldoc.c - loads a YAML document with libyaml's document API and copies
 * it into an owned tree of sl_yaml_node_t with line and column numbers.
 * Recursion depth is bounded (64) so that a hostile document cannot blow the
 * stack; aliases are copied (a bounded node budget stops "billion laughs").
 *
 * libyaml 0.2.5 has no nesting limit of its own, and its scanner walks the
 * simple-key slot of every open flow level on each token, so "[[[[..." of n
 * levels costs O(n^2) (100,000 levels: minutes). sl_yaml_depth_check first
 * runs the scanner alone over the tokens and stops at MAX_DEPTH + 1 open
 * collections, before the document API sees the text; a file is therefore
 * read into memory and loaded as a string.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "sluice/alloc.h"
#include "sluice/error.h"
#include "yamldoc.h"

#define MAX_DEPTH 64
#define MAX_NODES 1000000

typedef struct conv {
    yaml_document_t *doc;
    size_t budget;
    char *err;
    size_t errlen;
} conv_t;

typedef struct keyref {
    const char *key;
    size_t i; /* pair index */
} keyref_t;

static int keyref_cmp(const void *a, const void *b) {
    const keyref_t *x = a, *y = b;
    int d = strcmp(x->key, y->key);
    return d ? d : (x->i > y->i) - (x->i < y->i);
}

/* Duplicate keys of a map, found by sorting (key, index) in O(n log n): the
 * reported one is the earliest key in the document that repeats an earlier
 * key, as a pairwise scan would report it. */
static int dup_check(conv_t *c, const sl_yaml_node_t *n) {
    if (n->n < 2)
        return 0;
    keyref_t *v = sl_xmalloc(n->n * sizeof *v);
    for (size_t i = 0; i < n->n; i++)
        v[i] = (keyref_t){n->items[2 * i]->value, i};
    qsort(v, n->n, sizeof *v, keyref_cmp);
    size_t first = SIZE_MAX;
    for (size_t i = 1; i < n->n; i++)
        if (strcmp(v[i - 1].key, v[i].key) == 0 && v[i].i < first)
            first = v[i].i;
    sl_free(v);
    if (first == SIZE_MAX)
        return 0;
    const sl_yaml_node_t *k = n->items[2 * first];
    snprintf(c->err, c->errlen, "%d:%d: duplicate key \"%s\"", k->line, k->col, k->value);
    return SL_EINVAL;
}

static int convert(conv_t *c, yaml_node_t *yn, int depth, sl_yaml_node_t **out) {
    if (depth > MAX_DEPTH || c->budget == 0) {
        snprintf(c->err, c->errlen, "%zu:%zu: document too deep or too large",
                 yn->start_mark.line + 1, yn->start_mark.column + 1);
        return SL_ERANGE;
    }
    c->budget--;
    sl_yaml_node_t *n = sl_xcalloc(1, sizeof *n);
    n->line = (int)yn->start_mark.line + 1;
    n->col = (int)yn->start_mark.column + 1;
    int rc = 0;
    if (yn->type == YAML_SCALAR_NODE) {
        n->kind = SL_YAML_SCALAR;
        n->value = sl_xmalloc(yn->data.scalar.length + 1);
        memcpy(n->value, yn->data.scalar.value, yn->data.scalar.length);
        n->value[yn->data.scalar.length] = '\0';
        n->quoted = yn->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
    } else if (yn->type == YAML_SEQUENCE_NODE) {
        n->kind = SL_YAML_SEQ;
        size_t cnt = (size_t)(yn->data.sequence.items.top - yn->data.sequence.items.start);
        n->items = sl_xcalloc(cnt ? cnt : 1, sizeof *n->items);
        for (size_t i = 0; i < cnt; i++) {
            yaml_node_t *child = yaml_document_get_node(c->doc, yn->data.sequence.items.start[i]);
            rc = convert(c, child, depth + 1, &n->items[i]);
            if (rc < 0)
                goto out;
            n->n++;
        }
    } else {
        n->kind = SL_YAML_MAP;
        size_t cnt = (size_t)(yn->data.mapping.pairs.top - yn->data.mapping.pairs.start);
        n->items = sl_xcalloc(cnt ? 2 * cnt : 1, sizeof *n->items);
        for (size_t i = 0; i < cnt; i++) {
            yaml_node_pair_t *p = &yn->data.mapping.pairs.start[i];
            yaml_node_t *k = yaml_document_get_node(c->doc, p->key);
            yaml_node_t *v = yaml_document_get_node(c->doc, p->value);
            if (k->type != YAML_SCALAR_NODE) {
                snprintf(c->err, c->errlen, "%zu:%zu: mapping keys must be scalars",
                         k->start_mark.line + 1, k->start_mark.column + 1);
                rc = SL_EINVAL;
                goto out;
            }
            rc = convert(c, k, depth + 1, &n->items[2 * i]);
            if (rc < 0)
                goto out;
            rc = convert(c, v, depth + 1, &n->items[2 * i + 1]);
            if (rc < 0) {
                sl_yaml_free(n->items[2 * i]);
                n->items[2 * i] = NULL;
                goto out;
            }
            n->n++;
        }
        rc = dup_check(c, n);
    }
out:
    if (rc < 0) {
        sl_yaml_free(n);
        return rc;
    }
    *out = n;
    return 0;
}

int sl_yaml_depth_check(const char *text, size_t len, int max_depth, char *err, size_t errlen) {
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser))
        return SL_ENOMEM;
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    int depth = 0, rc = 0;
    for (;;) {
        yaml_token_t tok;
        if (!yaml_parser_scan(&parser, &tok))
            break; /* a syntax error: the real parse reports it */
        yaml_token_type_t type = tok.type;
        yaml_mark_t mark = tok.start_mark;
        yaml_token_delete(&tok);
        if (type == YAML_STREAM_END_TOKEN)
            break;
        if (type == YAML_FLOW_SEQUENCE_START_TOKEN || type == YAML_FLOW_MAPPING_START_TOKEN ||
            type == YAML_BLOCK_SEQUENCE_START_TOKEN || type == YAML_BLOCK_MAPPING_START_TOKEN) {
            if (++depth > max_depth) {
                snprintf(err, errlen, "%zu:%zu: document too deep or too large", mark.line + 1,
                         mark.column + 1);
                rc = SL_ERANGE;
                break;
            }
        } else if (type == YAML_FLOW_SEQUENCE_END_TOKEN || type == YAML_FLOW_MAPPING_END_TOKEN ||
                   type == YAML_BLOCK_END_TOKEN) {
            depth--;
        }
    }
    yaml_parser_delete(&parser);
    return rc;
}

static int load(yaml_parser_t *parser, sl_yaml_node_t **out, char *err, size_t errlen) {
    yaml_document_t doc;
    if (!yaml_parser_load(parser, &doc)) {
        snprintf(err, errlen, "%zu:%zu: %s%s%s", parser->problem_mark.line + 1,
                 parser->problem_mark.column + 1, parser->problem ? parser->problem : "syntax error",
                 parser->context ? " " : "", parser->context ? parser->context : "");
        return SL_EINVAL;
    }
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    int rc = 0;
    *out = NULL;
    if (root != NULL) {
        conv_t c = {&doc, MAX_NODES, err, errlen};
        rc = convert(&c, root, 0, out);
    }
    yaml_document_delete(&doc);
    return rc;
}

int sl_yaml_load_string(const char *text, size_t len, sl_yaml_node_t **out, char *err,
                        size_t errlen) {
    /* A collection at token depth d holds nodes at depth d, which convert()
     * accepts up to MAX_DEPTH: anything deeper fails there anyway. */
    int rc = sl_yaml_depth_check(text, len, MAX_DEPTH + 1, err, errlen);
    if (rc < 0)
        return rc;
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser))
        return SL_ENOMEM;
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    rc = load(&parser, out, err, errlen);
    yaml_parser_delete(&parser);
    return rc;
}

int sl_yaml_load_file(const char *path, sl_yaml_node_t **out, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        int e = errno;
        snprintf(err, errlen, "%s: %s", path, strerror(e));
        return -e;
    }
    size_t len = 0, cap = 4096;
    char *text = sl_xmalloc(cap);
    size_t got;
    while ((got = fread(text + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            cap *= 2;
            text = sl_xrealloc(text, cap);
        }
    }
    int rc;
    if (ferror(f)) {
        int e = errno ? errno : EIO;
        snprintf(err, errlen, "%s: %s", path, strerror(e));
        rc = -e;
    } else {
        rc = sl_yaml_load_string(text, len, out, err, errlen);
    }
    sl_free(text);
    fclose(f);
    return rc;
}

void sl_yaml_free(sl_yaml_node_t *node) {
    if (node == NULL)
        return;
    size_t cnt = node->kind == SL_YAML_MAP ? 2 * node->n : node->n;
    for (size_t i = 0; i < cnt; i++)
        sl_yaml_free(node->items[i]);
    sl_free(node->items);
    sl_free(node->value);
    sl_free(node);
}

const sl_yaml_node_t *sl_yaml_map_get(const sl_yaml_node_t *map, const char *key) {
    if (map == NULL || map->kind != SL_YAML_MAP)
        return NULL;
    for (size_t i = 0; i < map->n; i++)
        if (strcmp(map->items[2 * i]->value, key) == 0)
            return map->items[2 * i + 1];
    return NULL;
}

bool sl_yaml_is_null(const sl_yaml_node_t *node) {
    if (node == NULL)
        return true;
    if (node->kind != SL_YAML_SCALAR || node->quoted)
        return false;
    const char *v = node->value;
    return v[0] == '\0' || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 ||
           strcmp(v, "Null") == 0 || strcmp(v, "NULL") == 0;
}

int sl_yaml_int(const sl_yaml_node_t *node, int64_t *out) {
    if (node == NULL || node->kind != SL_YAML_SCALAR || node->quoted || node->value[0] == '\0')
        return -1;
    char *end;
    errno = 0;
    long long v = strtoll(node->value, &end, 10);
    if (errno != 0 || *end != '\0')
        return -1;
    *out = v;
    return 0;
}

int sl_yaml_bool(const sl_yaml_node_t *node, bool *out) {
    if (node == NULL || node->kind != SL_YAML_SCALAR || node->quoted)
        return -1;
    static const char *t[] = {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"};
    static const char *f[] = {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        if (strcmp(node->value, t[i]) == 0) {
            *out = true;
            return 0;
        }
        if (strcmp(node->value, f[i]) == 0) {
            *out = false;
            return 0;
        }
    }
    return -1;
}

const char *sl_yaml_kind_name(sl_yaml_kind_t k) {
    switch (k) {
    case SL_YAML_SCALAR: return "scalar";
    case SL_YAML_SEQ: return "sequence";
    case SL_YAML_MAP: return "mapping";
    }
    return "?";
}
