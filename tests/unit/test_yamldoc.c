/*
 * test_yamldoc.c - the YAML helpers of src/common/yamldoc.c.
 *
 * Table-driven: each row is a document and what sl_yaml_load_string must
 * say of it (a tree, or an error code and a message fragment that starts
 * with the line and column). Then the depth check on its own (deep flow and
 * block nesting, stopped at the limit without the quadratic parse), the
 * line numbers kept in the tree, aliases copied, and the scalar helpers.
 * The teardown asserts that every block the tree took is freed (yamldoc
 * allocates through the core's counted allocator).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "yamldoc.h"

typedef struct load_row {
    const char *text;
    int rc;          /* 0, SL_EINVAL or SL_ERANGE */
    const char *msg; /* when rc != 0: a fragment of the message */
} load_row_t;

static const load_row_t load_rows[] = {
    {"a: 1\nb: [x, y]\nc: {d: e}\n", 0, NULL},
    {"", 0, NULL},
    {"# only a comment\n", 0, NULL},
    {"- 1\n- 2\n", 0, NULL},
    {"a: 1\nb: 2\na: 3\n", SL_EINVAL, "3:1: duplicate key \"a\""},
    {"x:\n  k: 1\n  j: 2\n  k: 3\n", SL_EINVAL, "4:3: duplicate key \"k\""},
    {"{a: 1, a: 2}", SL_EINVAL, "1:8: duplicate key \"a\""},
    {"a: 1\nb: [1, 2\n", SL_EINVAL, "3:1: "},
    {"a: 1\n  b: 2\n", SL_EINVAL, "2:4: "},
    {"a: \"unterminated\n", SL_EINVAL, "2:1: "},
    {"? [a, b]\n: c\n", SL_EINVAL, "1:3: mapping keys must be scalars"},
    {"a: *nothing\n", SL_EINVAL, "1:4: "},
};

static void test_yamldoc_load_table(void **state) {
    for (size_t i = 0; i < sizeof load_rows / sizeof load_rows[0]; i++) {
        const load_row_t *r = &load_rows[i];
        sl_yaml_node_t *root = (sl_yaml_node_t *)1;
        char err[200] = "";
        int rc = sl_yaml_load_string(r->text, strlen(r->text), &root, err, sizeof err);
        if (rc != r->rc)
            fail_msg("row %zu: rc %d, want %d (%s)", i, rc, r->rc, err);
        if (rc != 0) {
            if (strstr(err, r->msg) == NULL)
                fail_msg("row %zu: message \"%s\" lacks \"%s\"", i, err, r->msg);
            continue;
        }
        sl_yaml_free(root);
    }
}

/* The depth check alone: a collection nested one level past the limit is
 * refused where it opens; at the limit it passes. */
static void test_yamldoc_depth_check(void **state) {
    char err[200];
    for (int depth = 1; depth <= 70; depth++) {
        char *text = malloc((size_t)depth * 2 + 1);
        memset(text, '[', (size_t)depth);
        memset(text + depth, ']', (size_t)depth);
        text[2 * depth] = '\0';
        int rc = sl_yaml_depth_check(text, strlen(text), 64, err, sizeof err);
        assert_int_equal(rc, depth <= 64 ? 0 : SL_ERANGE);
        if (rc < 0)
            assert_non_null(strstr(err, "1:65: document too deep"));
        free(text);
    }
    /* Block nesting counts the same way, and the message names the line. */
    char block[4096] = "";
    size_t n = 0;
    for (int d = 0; d < 5; d++)
        n += (size_t)snprintf(block + n, sizeof block - n, "%*sk%d:\n", 2 * d, "", d);
    n += (size_t)snprintf(block + n, sizeof block - n, "%*sv: 1\n", 10, "");
    assert_int_equal(sl_yaml_depth_check(block, n, 6, err, sizeof err), 0);
    assert_int_equal(sl_yaml_depth_check(block, n, 4, err, sizeof err), SL_ERANGE);
    assert_non_null(strstr(err, "5:9: document too deep"));
    /* A million open brackets cost a scan, not minutes, and the loaders
     * refuse them too. */
    size_t big = 1000000;
    char *deep = malloc(big + 1);
    memset(deep, '[', big);
    deep[big] = '\0';
    assert_int_equal(sl_yaml_depth_check(deep, big, 64, err, sizeof err), SL_ERANGE);
    sl_yaml_node_t *root = NULL;
    assert_int_equal(sl_yaml_load_string(deep, big, &root, err, sizeof err), SL_ERANGE);
    assert_null(root);
    free(deep);
    /* A syntax error is left to the parse. */
    assert_int_equal(sl_yaml_depth_check("a: [1\n", 6, 64, err, sizeof err), 0);
}

/* Nodes keep their line and column; maps keep key order. */
static void test_yamldoc_lines_and_order(void **state) {
    const char *text = "listen: 127.0.0.1:7070\n"
                       "tenants:\n"
                       "  - name: alice\n"
                       "    weight: 2\n"
                       "zeta: z\n";
    sl_yaml_node_t *root;
    char err[200];
    assert_int_equal(sl_yaml_load_string(text, strlen(text), &root, err, sizeof err), 0);
    assert_int_equal(root->kind, SL_YAML_MAP);
    assert_int_equal(root->n, 3);
    assert_string_equal(root->items[0]->value, "listen");
    assert_string_equal(root->items[2]->value, "tenants");
    assert_string_equal(root->items[4]->value, "zeta");
    const sl_yaml_node_t *tenants = sl_yaml_map_get(root, "tenants");
    assert_int_equal(tenants->kind, SL_YAML_SEQ);
    const sl_yaml_node_t *w = sl_yaml_map_get(tenants->items[0], "weight");
    assert_int_equal(w->line, 4);
    assert_int_equal(w->col, 13);
    int64_t v;
    assert_int_equal(sl_yaml_int(w, &v), 0);
    assert_int_equal(v, 2);
    assert_null(sl_yaml_map_get(root, "missing"));
    assert_null(sl_yaml_map_get(tenants, "name")); /* not a map */
    assert_null(sl_yaml_map_get(NULL, "x"));
    sl_yaml_free(root);
    sl_yaml_free(NULL);
}

/* Aliases are copied, so the tree owns every node once. */
static void test_yamldoc_alias_copied(void **state) {
    const char *text = "base: &b {cpus: 4}\nother: *b\n";
    sl_yaml_node_t *root;
    char err[200];
    assert_int_equal(sl_yaml_load_string(text, strlen(text), &root, err, sizeof err), 0);
    const sl_yaml_node_t *a = sl_yaml_map_get(root, "base"), *b = sl_yaml_map_get(root, "other");
    assert_ptr_not_equal(a, b);
    assert_string_equal(sl_yaml_map_get(b, "cpus")->value, "4");
    sl_yaml_free(root);
}

typedef struct scalar_row {
    const char *text; /* "v: TEXT" is loaded */
    int is_null;
    int int_rc;
    int64_t int_val;
    int bool_rc;
    int bool_val;
} scalar_row_t;

static const scalar_row_t scalar_rows[] = {
    {"~", 1, -1, 0, -1, 0},
    {"null", 1, -1, 0, -1, 0},
    {"NULL", 1, -1, 0, -1, 0},
    {"\"null\"", 0, -1, 0, -1, 0},
    {"''", 0, -1, 0, -1, 0},
    {"42", 0, 0, 42, -1, 0},
    {"-7", 0, 0, -7, -1, 0},
    {"\"42\"", 0, -1, 0, -1, 0},
    {"4x", 0, -1, 0, -1, 0},
    {"99999999999999999999", 0, -1, 0, -1, 0},
    {"true", 0, -1, 0, 0, 1},
    {"yes", 0, -1, 0, 0, 1},
    {"Off", 0, -1, 0, 0, 0},
    {"\"true\"", 0, -1, 0, -1, 0},
    {"maybe", 0, -1, 0, -1, 0},
};

static void test_yamldoc_scalar_helpers(void **state) {
    for (size_t i = 0; i < sizeof scalar_rows / sizeof scalar_rows[0]; i++) {
        const scalar_row_t *r = &scalar_rows[i];
        char text[64], err[200];
        snprintf(text, sizeof text, "v: %s\n", r->text);
        sl_yaml_node_t *root;
        assert_int_equal(sl_yaml_load_string(text, strlen(text), &root, err, sizeof err), 0);
        const sl_yaml_node_t *v = sl_yaml_map_get(root, "v");
        if (sl_yaml_is_null(v) != (bool)r->is_null)
            fail_msg("row %zu (%s): is_null", i, r->text);
        int64_t x = 0;
        if (sl_yaml_int(v, &x) != r->int_rc || (r->int_rc == 0 && x != r->int_val))
            fail_msg("row %zu (%s): int", i, r->text);
        bool b = false;
        if (sl_yaml_bool(v, &b) != r->bool_rc || (r->bool_rc == 0 && b != (bool)r->bool_val))
            fail_msg("row %zu (%s): bool", i, r->text);
        sl_yaml_free(root);
    }
    /* An absent value reads as null. */
    assert_true(sl_yaml_is_null(NULL));
    assert_string_equal(sl_yaml_kind_name(SL_YAML_SCALAR), "scalar");
    assert_string_equal(sl_yaml_kind_name(SL_YAML_SEQ), "sequence");
    assert_string_equal(sl_yaml_kind_name(SL_YAML_MAP), "mapping");
}

static void test_yamldoc_load_file(void **state) {
    char err[300];
    sl_yaml_node_t *root = NULL;
    int rc = sl_yaml_load_file("/nonexistent/sluice.yaml", &root, err, sizeof err);
    assert_true(rc < 0);
    assert_non_null(strstr(err, "/nonexistent/sluice.yaml: "));
    char path[] = "/tmp/test_yamldoc_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *text = "a: 1\nb: 2\nb: 3\n";
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    assert_int_equal(sl_yaml_load_file(path, &root, err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, "3:1: duplicate key \"b\""));
    unlink(path);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_yamldoc_load_table, tu_teardown),
        cmocka_unit_test_teardown(test_yamldoc_depth_check, tu_teardown),
        cmocka_unit_test_teardown(test_yamldoc_lines_and_order, tu_teardown),
        cmocka_unit_test_teardown(test_yamldoc_alias_copied, tu_teardown),
        cmocka_unit_test_teardown(test_yamldoc_scalar_helpers, tu_teardown),
        cmocka_unit_test_teardown(test_yamldoc_load_file, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
