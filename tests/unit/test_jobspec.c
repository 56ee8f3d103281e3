/*
 * test_jobspec.c - the job-spec table (src/common/jobspec.c).
 *
 * Table-driven (SQLite style): each row is a JSON spec and what
 * sl_jobspec_parse must say of it (accepted, or the field it names and a
 * fragment of the message), so that every field is tried at both ends of
 * its range and one step outside, with the wrong JSON type, and with the
 * rules between fields. A second table gives the same values as text (a
 * flag or a YAML scalar) to sl_jobspec_from_text, which must agree. The
 * teardown asserts that nothing jansson allocated is left (its allocator
 * is counted) besides the core's own hook.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobspec.h"
#include "testutil.h"

/* ---- jansson's allocations, counted ---- */

static long json_live;

static void *count_malloc(size_t n) {
    void *p = malloc(n);
    if (p)
        json_live++;
    return p;
}

static void count_free(void *p) {
    if (p)
        json_live--;
    free(p);
}

static int teardown(void **state) {
    assert_int_equal(json_live, 0);
    return tu_teardown(state);
}

/* ---- whole specs ---- */

typedef struct spec_row {
    const char *json;
    int rc;            /* 0, SL_EINVAL or SL_ENOENT */
    const char *field; /* when rc != 0 (NULL: the spec as a whole) */
    const char *msg;   /* when rc != 0: a fragment of the message */
} spec_row_t;

#define OK(j) {j, 0, NULL, NULL}
#define BAD(j, f, m) {j, SL_EINVAL, f, m}

static const spec_row_t spec_rows[] = {
    OK("{\"command\": [\"x\"]}"),
    OK("{\"image\": \"img\"}"),
    BAD("[1, 2]", NULL, "JSON object"),
    BAD("{}", "command", "required (or give an image, containers or a script)"),
    /* a batch script (docs/slurm.md): its command is optional, its
     * directory and files only go with it; it may run in a container */
    OK("{\"script\": \"#!/bin/sh\\ntrue\\n\"}"),
    OK("{\"script\": \"#!/bin/sh\", \"command\": [\"a.sh\", \"x\"], \"chdir\": \"/tmp\", "
       "\"output\": \"o-%j\", \"error\": \"e-%j\", \"submit_dir\": \"/home/u\"}"),
    BAD("{\"command\": [\"x\"], \"chdir\": \"/tmp\"}", "chdir", "only allowed with script"),
    BAD("{\"command\": [\"x\"], \"output\": \"o\"}", "output", "only allowed with script"),
    OK("{\"script\": \"#!/bin/sh\", \"image\": \"img\"}"),
    /* a container's options (docs/containers.md): only with an image */
    OK("{\"image\": \"img\", \"mounts\": [\"/data:/data:ro\", \"/s:/t\"], "
       "\"shm_size\": \"8Gi\", \"workdir\": \"/w\"}"),
    OK("{\"image\": \"img\", \"mounts\": \"/data:/d:rw\"}"),
    BAD("{\"command\": [\"x\"], \"mounts\": [\"/a:/b\"]}", "mounts", "only allowed with image"),
    BAD("{\"command\": [\"x\"], \"shm_size\": \"1Gi\"}", "shm_size", "only allowed with image"),
    BAD("{\"command\": [\"x\"], \"workdir\": \"/w\"}", "workdir", "only allowed with image"),
    BAD("{\"image\": \"i\", \"workdir\": \"w\"}", "workdir", "absolute path inside"),
    BAD("{\"image\": \"i\", \"mounts\": [\"data:/d\"]}", "mounts", "must be absolute paths"),
    BAD("{\"image\": \"i\", \"mounts\": [\"/a\"]}", "mounts", "is not SRC:DST"),
    BAD("{\"image\": \"i\", \"mounts\": [\"/a:/b:rx\"]}", "mounts", "must be ro or rw"),
    BAD("{\"image\": \"i\", \"mounts\": [\"/a/../etc:/b\"]}", "mounts", "no .. in"),
    BAD("{\"image\": \"i\", \"shm_size\": \"1Ki\"}", "shm_size", "out of range"),
    BAD("{\"image\": \"i\", \"allocation\": true}", "allocation", "cannot be combined with image"),
    BAD("{\"script\": \"\"}", "script", "string of 1 to 65536"),
    {"{\"command\": [\"x\"], \"foo\": 1}", SL_ENOENT, "foo", "unknown field (known: name, tenant"},
    /* null is absent */
    OK("{\"command\": [\"x\"], \"gpus\": null, \"pool\": null, \"gpu_share\": null}"),
    /* name, tenant, pool: names */
    OK("{\"command\": [\"x\"], \"name\": \"n\"}"),
    BAD("{\"command\": [\"x\"], \"name\": \"\"}", "name", "1 to 63 characters"),
    BAD("{\"command\": [\"x\"], \"name\": 3}", "name", "must be a name"),
    BAD("{\"command\": [\"x\"], \"name\": \"a\\tb\"}", "name", "control characters"),
    OK("{\"command\": [\"x\"], \"tenant\": \"alice\"}"),
    BAD("{\"command\": [\"x\"], \"tenant\": [\"alice\"]}", "tenant", "must be a name"),
    BAD("{\"command\": [\"x\"], \"pool\": \"\"}", "pool", "must be a name"),
    /* tasks 1..4096 */
    OK("{\"command\": [\"x\"], \"tasks\": 1}"),
    OK("{\"command\": [\"x\"], \"tasks\": 4096}"),
    BAD("{\"command\": [\"x\"], \"tasks\": 0}", "tasks", "from 1 to 4096 tasks"),
    BAD("{\"command\": [\"x\"], \"tasks\": 4097}", "tasks", "from 1 to 4096 tasks"),
    BAD("{\"command\": [\"x\"], \"tasks\": \"2\"}", "tasks", "whole number"),
    BAD("{\"command\": [\"x\"], \"tasks\": 1.5}", "tasks", "whole number"),
    /* min_tasks 1..tasks */
    OK("{\"command\": [\"x\"], \"tasks\": 4, \"min_tasks\": 1}"),
    OK("{\"command\": [\"x\"], \"tasks\": 4, \"min_tasks\": 4}"),
    BAD("{\"command\": [\"x\"], \"tasks\": 4, \"min_tasks\": 5}", "min_tasks", "1 to tasks (4)"),
    BAD("{\"command\": [\"x\"], \"min_tasks\": 0}", "min_tasks", "from 1 to 4096"),
    /* gpus 0..16: the server's range, which the CLI shares */
    OK("{\"command\": [\"x\"], \"gpus\": 0}"),
    OK("{\"command\": [\"x\"], \"gpus\": 16}"),
    BAD("{\"command\": [\"x\"], \"gpus\": -1}", "gpus", "from 0 to 16 GPUs"),
    BAD("{\"command\": [\"x\"], \"gpus\": 17}", "gpus", "from 0 to 16 GPUs"),
    BAD("{\"command\": [\"x\"], \"gpus\": \"2\"}", "gpus", "whole number"),
    /* gpu_share: a fraction of one GPU, said in GPUs */
    OK("{\"command\": [\"x\"], \"gpu_share\": \"0.001\"}"),
    OK("{\"command\": [\"x\"], \"gpu_share\": \"0.999\"}"),
    OK("{\"command\": [\"x\"], \"gpu_share\": 0.25}"),
    OK("{\"command\": [\"x\"], \"gpu_share\": \"250m\", \"gpus\": 0}"),
    BAD("{\"command\": [\"x\"], \"gpu_share\": \"0\"}", "gpu_share", "(0.001 to 0.999 GPU)"),
    BAD("{\"command\": [\"x\"], \"gpu_share\": \"1\"}", "gpu_share", "(0.001 to 0.999 GPU)"),
    BAD("{\"command\": [\"x\"], \"gpu_share\": \"0.0001\"}", "gpu_share", "finer than"),
    BAD("{\"command\": [\"x\"], \"gpu_share\": true}", "gpu_share", "must be a quantity"),
    BAD("{\"command\": [\"x\"], \"gpus\": 1, \"gpu_share\": \"0.5\"}", "gpu_share",
        "cannot be combined with gpus"),
    /* gpu_memory: only with a share */
    OK("{\"command\": [\"x\"], \"gpu_share\": \"0.5\", \"gpu_memory\": \"10Gi\"}"),
    BAD("{\"command\": [\"x\"], \"gpu_memory\": \"10Gi\"}", "gpu_memory", "only allowed with gpu_share"),
    BAD("{\"command\": [\"x\"], \"gpu_share\": \"0.5\", \"gpu_memory\": \"12Qi\"}", "gpu_memory",
        "unknown unit"),
    /* cpus, memory: quantities from 0 */
    OK("{\"command\": [\"x\"], \"cpus\": \"0\"}"),
    OK("{\"command\": [\"x\"], \"cpus\": 16}"),
    OK("{\"command\": [\"x\"], \"cpus\": \"500m\"}"),
    BAD("{\"command\": [\"x\"], \"cpus\": \"-1\"}", "cpus", "negative"),
    BAD("{\"command\": [\"x\"], \"cpus\": \"abc\"}", "cpus", "not a number"),
    BAD("{\"command\": [\"x\"], \"cpus\": [1]}", "cpus", "must be a quantity"),
    OK("{\"command\": [\"x\"], \"memory\": \"1.5Gi\"}"),
    BAD("{\"command\": [\"x\"], \"memory\": \"0.5\"}", "memory", "finer than"),
    BAD("{\"command\": [\"x\"], \"memory\": \"12Qi\"}", "memory", "unknown unit"),
    /* gpu_models: names, only with GPUs */
    OK("{\"command\": [\"x\"], \"gpus\": 1, \"gpu_models\": [\"H100\", \"A100\"]}"),
    OK("{\"command\": [\"x\"], \"gpus\": 1, \"gpu_models\": \"H100\"}"),
    OK("{\"command\": [\"x\"], \"gpu_share\": \"0.5\", \"gpu_models\": [\"H100\"]}"),
    OK("{\"command\": [\"x\"], \"gpu_models\": []}"),
    BAD("{\"command\": [\"x\"], \"gpu_models\": [\"H100\"]}", "gpu_models",
        "only allowed with gpus or gpu_share"),
    BAD("{\"command\": [\"x\"], \"gpu_models\": \"H100\"}", "gpu_models",
        "only allowed with gpus or gpu_share"),
    BAD("{\"command\": [\"x\"], \"gpus\": 1, \"gpu_models\": [3]}", "gpu_models", "item 0"),
    BAD("{\"command\": [\"x\"], \"gpus\": 1, \"gpu_models\": [\"A\", \"\"]}", "gpu_models", "item 1"),
    BAD("{\"command\": [\"x\"], \"gpus\": 1, \"gpu_models\": {}}", "gpu_models", "list of names"),
    /* priority: the server's +-1e6 */
    OK("{\"command\": [\"x\"], \"priority\": -1000000}"),
    OK("{\"command\": [\"x\"], \"priority\": 1000000}"),
    BAD("{\"command\": [\"x\"], \"priority\": -1000001}", "priority", "-1000000 to 1000000"),
    BAD("{\"command\": [\"x\"], \"priority\": 1000001}", "priority", "-1000000 to 1000000"),
    BAD("{\"command\": [\"x\"], \"priority\": \"high\"}", "priority", "whole number"),
    /* time_limit: seconds, up to 3660 days */
    OK("{\"command\": [\"x\"], \"time_limit\": 0}"),
    OK("{\"command\": [\"x\"], \"time_limit\": 316224000}"),
    BAD("{\"command\": [\"x\"], \"time_limit\": 316224001}", "time_limit", "(3660d)"),
    BAD("{\"command\": [\"x\"], \"time_limit\": -5}", "time_limit", "seconds"),
    BAD("{\"command\": [\"x\"], \"time_limit\": \"2h\"}", "time_limit", "seconds"),
    /* command, image */
    OK("{\"command\": [\"a\", \"b\"]}"),
    BAD("{\"command\": []}", "command", "non-empty list of strings"),
    BAD("{\"command\": \"echo hi\"}", "command", "non-empty list of strings"),
    BAD("{\"command\": [\"echo\", 3]}", "command", "item 1 must be a string"),
    BAD("{\"command\": [\"x\"], \"image\": \"\"}", "image", "1 to 1024 characters"),
    BAD("{\"command\": [\"x\"], \"image\": 7}", "image", "must be a string"),
    /* env */
    OK("{\"command\": [\"x\"], \"env\": {\"A\": \"1\", \"_b2\": \"\"}}"),
    BAD("{\"command\": [\"x\"], \"env\": {\"1BAD\": \"v\"}}", "env", "not a valid variable name"),
    BAD("{\"command\": [\"x\"], \"env\": {\"K\": 1}}", "env", "value of K must be a string"),
    BAD("{\"command\": [\"x\"], \"env\": [\"K=1\"]}", "env", "object of string values"),
    /* on_node_failure */
    OK("{\"command\": [\"x\"], \"on_node_failure\": \"requeue\"}"),
    OK("{\"command\": [\"x\"], \"on_node_failure\": \"fail\"}"),
    BAD("{\"command\": [\"x\"], \"on_node_failure\": \"retry\"}", "on_node_failure",
        "requeue or fail"),
    BAD("{\"command\": [\"x\"], \"on_node_failure\": \"\"}", "on_node_failure", "requeue or fail"),
};

static void test_jobspec_parse_table(void **state) {
    for (size_t i = 0; i < sizeof spec_rows / sizeof spec_rows[0]; i++) {
        const spec_row_t *r = &spec_rows[i];
        json_error_t jerr;
        json_t *spec = json_loads(r->json, 0, &jerr);
        if (spec == NULL)
            fail_msg("row %zu: bad JSON in the test: %s", i, jerr.text);
        sl_jobspec_t js;
        const char *field = "unset";
        char err[400] = "";
        int rc = sl_jobspec_parse(spec, &js, &field, err, sizeof err);
        if (rc != r->rc)
            fail_msg("row %zu %s: rc %d, want %d (%s)", i, r->json, rc, r->rc, err);
        if (rc != 0) {
            if ((r->field == NULL) != (field == NULL) ||
                (r->field && strcmp(r->field, field) != 0))
                fail_msg("row %zu %s: field %s, want %s", i, r->json, field ? field : "NULL",
                         r->field ? r->field : "NULL");
            if (strstr(err, r->msg) == NULL)
                fail_msg("row %zu %s: message \"%s\" lacks \"%s\"", i, r->json, err, r->msg);
            if (strstr(err, "milli") || strstr(err, "bytes"))
                fail_msg("row %zu: message \"%s\" is not in the user's units", i, err);
        } else {
            assert_null(field);
        }
        json_decref(spec);
    }
}

/* Names at 63 and 64 characters, the length a cluster keeps. */
static void test_jobspec_name_lengths(void **state) {
    char name[80];
    memset(name, 'n', sizeof name);
    for (int len = 62; len <= 65; len++) {
        name[len] = '\0';
        static const char *const keys[] = {"name", "tenant", "pool"};
        for (size_t k = 0; k < 3; k++) {
            json_t *spec = json_pack("{s:[s],s:s}", "command", "x", keys[k], name);
            sl_jobspec_t js;
            const char *field;
            char err[300];
            int rc = sl_jobspec_parse(spec, &js, &field, err, sizeof err);
            assert_int_equal(rc, len <= 63 ? 0 : SL_EINVAL);
            json_decref(spec);
        }
        json_t *spec = json_pack("{s:[s],s:i,s:[s]}", "command", "x", "gpus", 1, "gpu_models", name);
        sl_jobspec_t js;
        const char *field;
        char err[300];
        assert_int_equal(sl_jobspec_parse(spec, &js, &field, err, sizeof err),
                         len <= 63 ? 0 : SL_EINVAL);
        json_decref(spec);
        name[len] = 'n';
    }
    char image[1100];
    memset(image, 'i', sizeof image);
    for (int len = 1023; len <= 1025; len++) {
        image[len] = '\0';
        json_t *spec = json_pack("{s:s}", "image", image);
        sl_jobspec_t js;
        const char *field;
        char err[300];
        assert_int_equal(sl_jobspec_parse(spec, &js, &field, err, sizeof err),
                         len <= 1024 ? 0 : SL_EINVAL);
        json_decref(spec);
        image[len] = 'i';
    }
}

/* The numbers a parse hands on: parsed once, defaults filled in. */
static void test_jobspec_parse_values(void **state) {
    json_t *spec = json_loads("{\"command\": [\"x\"]}", 0, NULL);
    sl_jobspec_t js;
    const char *field;
    char err[300];
    assert_int_equal(sl_jobspec_parse(spec, &js, &field, err, sizeof err), 0);
    assert_int_equal(js.num[SL_JS_TASKS], 1);
    assert_int_equal(js.num[SL_JS_MIN_TASKS], 1);
    assert_int_equal(js.num[SL_JS_CPUS], 1000);
    assert_int_equal(js.num[SL_JS_MEMORY], 1024LL * 1024 * 1024);
    assert_int_equal(js.num[SL_JS_GPUS], 0);
    assert_null(js.val[SL_JS_GPU_SHARE]);
    assert_non_null(js.val[SL_JS_COMMAND]);
    json_decref(spec);

    spec = json_loads("{\"image\": \"i\", \"tasks\": 8, \"cpus\": \"500m\", \"memory\": \"1.5Gi\","
                      " \"gpu_share\": 0.25, \"gpu_memory\": \"10Gi\", \"priority\": -3,"
                      " \"time_limit\": 5400}", 0, NULL);
    assert_int_equal(sl_jobspec_parse(spec, &js, &field, err, sizeof err), 0);
    assert_int_equal(js.num[SL_JS_TASKS], 8);
    assert_int_equal(js.num[SL_JS_MIN_TASKS], 8);
    assert_int_equal(js.num[SL_JS_CPUS], 500);
    assert_int_equal(js.num[SL_JS_MEMORY], 3LL * 512 * 1024 * 1024);
    assert_int_equal(js.num[SL_JS_GPU_SHARE], 250);
    assert_int_equal(js.num[SL_JS_GPU_MEMORY], 10LL * 1024 * 1024 * 1024);
    assert_int_equal(js.num[SL_JS_PRIORITY], -3);
    assert_int_equal(js.num[SL_JS_TIME_LIMIT], 5400);
    json_decref(spec);
}

/* ---- the same values as text (flags, YAML scalars) ---- */

typedef struct text_row {
    sl_jobspec_id_t id;
    const char *text;
    const char *want; /* the JSON value (compact), or NULL for an error */
    const char *msg;  /* when want is NULL: a fragment of the message */
} text_row_t;

static const text_row_t text_rows[] = {
    {SL_JS_TASKS, "1", "1", NULL},
    {SL_JS_TASKS, "4096", "4096", NULL},
    {SL_JS_TASKS, "0", NULL, "\"0\" is not a whole number from 1 to 4096 tasks"},
    {SL_JS_TASKS, "many", NULL, "\"many\" is not a whole number"},
    {SL_JS_TASKS, "2x", NULL, "whole number"},
    {SL_JS_TASKS, "", NULL, "whole number"},
    {SL_JS_GPUS, "16", "16", NULL},
    {SL_JS_GPUS, "17", NULL, "from 0 to 16 GPUs"},
    {SL_JS_GPUS, "1024", NULL, "from 0 to 16 GPUs"},
    {SL_JS_GPUS, "0.5", NULL, "\"0.5\" is not a whole number"},
    {SL_JS_PRIORITY, "-1000000", "-1000000", NULL},
    {SL_JS_PRIORITY, "1000000000", NULL, "-1000000 to 1000000"},
    {SL_JS_TIME_LIMIT, "90", "90", NULL},
    {SL_JS_TIME_LIMIT, "1h30m", "5400", NULL},
    {SL_JS_TIME_LIMIT, "1d", "86400", NULL},
    {SL_JS_TIME_LIMIT, "3660d", "316224000", NULL},
    {SL_JS_TIME_LIMIT, "3661d", NULL, "not a duration from 0 to 3660d"},
    {SL_JS_TIME_LIMIT, "soon", NULL, "not a duration"},
    {SL_JS_TIME_LIMIT, "99999999999999999999d", NULL, "not a duration"},
    {SL_JS_CPUS, "500m", "\"500m\"", NULL},
    {SL_JS_CPUS, "12Qi", NULL, "unknown unit"},
    {SL_JS_MEMORY, "128Gi", "\"128Gi\"", NULL},
    {SL_JS_MEMORY, "lots", NULL, "not a number"},
    {SL_JS_GPU_SHARE, "0.25", "\"0.25\"", NULL},
    {SL_JS_GPU_SHARE, "1.5", NULL, "\"1.5\" is out of range (0.001 to 0.999 GPU)"},
    {SL_JS_NAME, "sweep", "\"sweep\"", NULL},
    {SL_JS_NAME, "", NULL, "1 to 63 characters"},
    {SL_JS_GPU_MODELS, "H100", "\"H100\"", NULL},
    {SL_JS_GPU_MODELS, "", NULL, "1 to 63 characters"},
    {SL_JS_IMAGE, "img", "\"img\"", NULL},
    {SL_JS_IMAGE, "", NULL, "1 to 1024 characters"},
    {SL_JS_ON_NODE_FAILURE, "fail", "\"fail\"", NULL},
    {SL_JS_ON_NODE_FAILURE, "panic", NULL, "\"panic\" is not requeue or fail"},
    {SL_JS_ON_NODE_FAILURE, "requeue|fail", NULL, "not requeue or fail"},
    {SL_JS_ON_NODE_FAILURE, "req", NULL, "not requeue or fail"},
    {SL_JS_COMMAND, "echo", NULL, "no text form"},
    {SL_JS_ENV, "A=1", NULL, "no text form"},
};

static void test_jobspec_from_text_table(void **state) {
    for (size_t i = 0; i < sizeof text_rows / sizeof text_rows[0]; i++) {
        const text_row_t *r = &text_rows[i];
        const sl_jobspec_field_t *f = &sl_jobspec_fields[r->id];
        char err[300] = "";
        json_t *v = sl_jobspec_from_text(f, r->text, err, sizeof err);
        if (r->want == NULL) {
            if (v != NULL)
                fail_msg("row %zu %s=%s: accepted", i, f->name, r->text);
            if (strstr(err, r->msg) == NULL)
                fail_msg("row %zu %s=%s: message \"%s\" lacks \"%s\"", i, f->name, r->text, err,
                         r->msg);
            continue;
        }
        if (v == NULL)
            fail_msg("row %zu %s=%s: %s", i, f->name, r->text, err);
        char *got = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
        if (strcmp(got, r->want) != 0)
            fail_msg("row %zu %s=%s: %s, want %s", i, f->name, r->text, got, r->want);
        /* What the text gives, the JSON check accepts. */
        int64_t num;
        if (sl_jobspec_check(f, v, &num, err, sizeof err) != 0)
            fail_msg("row %zu %s=%s: the JSON check refuses it: %s", i, f->name, r->text, err);
        count_free(got); /* json_dumps allocated it through the hook */
        json_decref(v);
    }
}

/* Every number field's bounds, from the table itself: text and JSON agree
 * at both ends and one step outside. */
static void test_jobspec_bounds_agree(void **state) {
    for (int i = 0; i < SL_JS_NFIELDS; i++) {
        const sl_jobspec_field_t *f = &sl_jobspec_fields[i];
        if (f->type != SL_FT_INT && f->type != SL_FT_DURATION)
            continue;
        const int64_t vals[4] = {f->min, f->max, f->min - 1, f->max + 1};
        for (int k = 0; k < 4; k++) {
            char text[32], err[300];
            snprintf(text, sizeof text, "%lld", (long long)vals[k]);
            json_t *tv = sl_jobspec_from_text(f, text, err, sizeof err);
            json_t *jv = json_integer(vals[k]);
            int64_t num = 0;
            int rc = sl_jobspec_check(f, jv, &num, err, sizeof err);
            assert_int_equal(tv != NULL, k < 2);
            assert_int_equal(rc == 0, k < 2);
            if (k < 2)
                assert_int_equal(num, vals[k]);
            json_decref(tv);
            json_decref(jv);
        }
    }
}

static void test_jobspec_find_and_env_names(void **state) {
    for (int i = 0; i < SL_JS_NFIELDS; i++)
        assert_ptr_equal(sl_jobspec_find(sl_jobspec_fields[i].name), &sl_jobspec_fields[i]);
    assert_null(sl_jobspec_find("foo"));
    assert_null(sl_jobspec_find("min-tasks"));
    assert_true(sl_jobspec_env_name_ok("PATH"));
    assert_true(sl_jobspec_env_name_ok("_x9"));
    assert_false(sl_jobspec_env_name_ok("9x"));
    assert_false(sl_jobspec_env_name_ok("A-B"));
    assert_false(sl_jobspec_env_name_ok(""));
    char longname[300];
    memset(longname, 'A', sizeof longname);
    longname[255] = '\0';
    assert_true(sl_jobspec_env_name_ok(longname));
    longname[255] = 'A';
    longname[256] = '\0';
    assert_false(sl_jobspec_env_name_ok(longname));
}

/* The table for docs: a header, then one row per field in table order. */
static void test_jobspec_markdown_table(void **state) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    sl_jobspec_write_table(f, true);
    fclose(f);
    const char *p = buf;
    assert_true(strncmp(p, "| field |", 9) == 0);
    p = strchr(p, '\n') + 1;
    assert_true(strncmp(p, "|---|", 5) == 0);
    for (int i = 0; i < SL_JS_NFIELDS; i++) {
        p = strchr(p, '\n') + 1;
        char cell[80];
        snprintf(cell, sizeof cell, "| `%s` |", sl_jobspec_fields[i].name);
        if (strncmp(p, cell, strlen(cell)) != 0)
            fail_msg("row %d: %.60s", i, p);
        /* Six cells: a "|" inside one (requeue|fail) is escaped. */
        const char *eol = strchr(p, '\n');
        int bars = 0;
        for (const char *q = p; q < eol; q++)
            bars += *q == '|' && q[-1] != '\\';
        assert_int_equal(bars, 7);
    }
    assert_string_equal(strchr(p, '\n'), "\n");
    free(buf);
}

static void test_jobspec_range_text(void **state) {
    char buf[96];
    sl_jobspec_range_text(&sl_jobspec_fields[SL_JS_GPUS], buf, sizeof buf);
    assert_string_equal(buf, "0 to 16 GPUs");
    sl_jobspec_range_text(&sl_jobspec_fields[SL_JS_GPU_SHARE], buf, sizeof buf);
    assert_string_equal(buf, "0.001 to 0.999 GPU");
    sl_jobspec_range_text(&sl_jobspec_fields[SL_JS_CPUS], buf, sizeof buf);
    assert_string_equal(buf, "0 or more CPUs");
    sl_jobspec_range_text(&sl_jobspec_fields[SL_JS_TIME_LIMIT], buf, sizeof buf);
    assert_string_equal(buf, "0 to 3660d");
    sl_jobspec_range_text(&sl_jobspec_fields[SL_JS_ON_NODE_FAILURE], buf, sizeof buf);
    assert_string_equal(buf, "requeue or fail");
    sl_jobspec_range_text(&sl_jobspec_fields[SL_JS_POOL], buf, sizeof buf);
    assert_string_equal(buf, "1 to 63 characters");
}

static void test_jobspec_mount_parse_and_allowed(void **state) {
    (void)state;
    char src[SL_JOBSPEC_PATH_MAX], dst[SL_JOBSPEC_PATH_MAX], err[256];
    bool ro = true;
    assert_int_equal(sl_jobspec_mount_parse("/data/x:/d", src, dst, &ro, err, sizeof err), 0);
    assert_string_equal(src, "/data/x");
    assert_string_equal(dst, "/d");
    assert_false(ro);
    assert_int_equal(sl_jobspec_mount_parse("/a:/b:ro", src, dst, &ro, err, sizeof err), 0);
    assert_true(ro);
    assert_int_equal(sl_jobspec_mount_parse("/a:/b:x", NULL, NULL, NULL, err, sizeof err),
                     SL_EINVAL);
    assert_non_null(strstr(err, "\"/a:/b:x\""));
    assert_int_equal(sl_jobspec_mount_parse(":/b", NULL, NULL, NULL, err, sizeof err), SL_EINVAL);
    assert_int_equal(sl_jobspec_mount_parse("/a/..:/b", NULL, NULL, NULL, err, sizeof err),
                     SL_EINVAL);
    const char *const pre[] = {"/data", "/scratch/"};
    assert_true(sl_jobspec_mount_allowed("/data", pre, 2));
    assert_true(sl_jobspec_mount_allowed("/data/sets/a", pre, 2));
    assert_true(sl_jobspec_mount_allowed("/scratch/u", pre, 2));
    assert_false(sl_jobspec_mount_allowed("/database", pre, 2));
    assert_false(sl_jobspec_mount_allowed("/etc", pre, 2));
    assert_false(sl_jobspec_mount_allowed("/data", pre, 0));
    const char *const root[] = {"/"};
    assert_true(sl_jobspec_mount_allowed("/etc", root, 1));
}

int main(void) {
    json_set_alloc_funcs(count_malloc, count_free);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_jobspec_parse_table, teardown),
        cmocka_unit_test_teardown(test_jobspec_name_lengths, teardown),
        cmocka_unit_test_teardown(test_jobspec_parse_values, teardown),
        cmocka_unit_test_teardown(test_jobspec_from_text_table, teardown),
        cmocka_unit_test_teardown(test_jobspec_bounds_agree, teardown),
        cmocka_unit_test_teardown(test_jobspec_find_and_env_names, teardown),
        cmocka_unit_test_teardown(test_jobspec_markdown_table, teardown),
        cmocka_unit_test_teardown(test_jobspec_range_text, teardown),
        cmocka_unit_test_teardown(test_jobspec_mount_parse_and_allowed, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
