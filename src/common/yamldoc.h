/*
 * yamldoc.h - a YAML document loaded into a small tree that keeps line
 * numbers, so that config and spec readers can say "sluiced.yaml:12: unknown
 * key \"foo\"" (libyaml does the parsing; this only owns the result).
 *
 *   sl_yaml_node_t *root;
 *   if (sl_yaml_load_file(path, &root, err, sizeof err) < 0) ...
 *   const sl_yaml_node_t *v = sl_yaml_map_get(root, "listen");
 *   sl_yaml_free(root);
 *
 * Scalars keep their text and whether they were quoted (so that a plain
 * `null` or `~` can be told from the string "null"). Aliases are resolved by
 * libyaml into shared nodes and copied here. A map keeps key order; duplicate
 * keys are an error. Only the first document of a stream is read.
 *
 * Programs link libyaml (-lyaml) when they use this file.
 */
#ifndef SLUICE_COMMON_YAMLDOC_H
#define SLUICE_COMMON_YAMLDOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum sl_yaml_kind {
    SL_YAML_SCALAR = 0,
    SL_YAML_SEQ = 1,
    SL_YAML_MAP = 2
} sl_yaml_kind_t;

typedef struct sl_yaml_node sl_yaml_node_t;
struct sl_yaml_node {
    sl_yaml_kind_t kind;
    int line;            /* 1-based */
    int col;             /* 1-based */
    char *value;         /* scalar text (NUL-terminated); NULL otherwise */
    bool quoted;         /* scalar written with quotes or as a block */
    size_t n;            /* seq: items; map: pairs */
    sl_yaml_node_t **items; /* seq: items[i]; map: keys items[2i], values items[2i+1] */
};

/*
 * Loads text (len bytes) or a file. Returns 0 and a tree in *out (an empty
 * document gives a NULL tree), or a negative error with "LINE:COL: message"
 * in err (file errors: "path: strerror"). The caller frees with sl_yaml_free.
 */
int sl_yaml_load_string(const char *text, size_t len, sl_yaml_node_t **out, char *err,
                        size_t errlen);
int sl_yaml_load_file(const char *path, sl_yaml_node_t **out, char *err, size_t errlen);

/* Scans text's tokens only and fails with SL_ERANGE ("LINE:COL: document
 * too deep or too large" in err) at the first collection opened more than
 * max_depth levels deep; 0 otherwise (syntax errors are left to the parse).
 * Cheap where libyaml's full parse of deep flow nesting is quadratic; the
 * load functions call it first. */
int sl_yaml_depth_check(const char *text, size_t len, int max_depth, char *err, size_t errlen);
void sl_yaml_free(sl_yaml_node_t *node); /* accepts NULL */

/* Value for key in a map; NULL if absent or node is not a map. O(n). */
const sl_yaml_node_t *sl_yaml_map_get(const sl_yaml_node_t *map, const char *key);
/* True for a plain scalar null, ~, Null, NULL or empty. */
bool sl_yaml_is_null(const sl_yaml_node_t *node);
/* Parses a plain scalar as an integer (decimal). Returns 0 or -1. */
int sl_yaml_int(const sl_yaml_node_t *node, int64_t *out);
/* Parses a plain scalar true/false/yes/no. Returns 0 or -1. */
int sl_yaml_bool(const sl_yaml_node_t *node, bool *out);
/* "scalar", "sequence" or "mapping". */
const char *sl_yaml_kind_name(sl_yaml_kind_t k);

#endif
