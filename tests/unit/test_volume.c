/*
 * test_volume.c - a job's volumes: the spec's shape (src/common/volume.h),
 * every problem said at once with its place; the variable a task finds a
 * volume by; the launch's resolved volumes on the wire (round trip and
 * rejections); and the controller's config and resolution
 * (src/ctl/base/volcfg.h): prefixes, claims, exports, the refusals naming
 * what the config has. Teardown checks that nothing is left allocated.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/volcfg.h"
#include "jobspec.h"
#include "proto.h"
#include "testutil.h"
#include "volume.h"
#include "yamldoc.h"

static int check(const char *json, char *err, size_t len) {
    json_error_t je;
    json_t *v = json_loads(json, 0, &je);
    if (v == NULL)
        fail_msg("bad test JSON %s: %s", json, je.text);
    int rc = sl_volumes_check(v, err, len);
    json_decref(v);
    return rc;
}

static void test_volume_check_accepts_every_source(void **state) {
    (void)state;
    static const char *const ok[] = {
        "[]",
        "[{\"path\": \"/dev/shm\", \"empty_dir\": {\"medium\": \"Memory\", \"size_limit\": \"8Gi\"}}]",
        "[{\"path\": \"/scratch\", \"empty_dir\": {}, \"sub_path\": \"a/b\"}]",
        "[{\"path\": \"/data\", \"host_path\": \"/datasets/imagenet\", \"read_only\": true}]",
        "[{\"path\": \"/c\", \"pvc\": \"claim-1\", \"sub_path\": \"x\"}]",
        "[{\"path\": \"/n\", \"nfs\": {\"server\": \"nfs1\", \"path\": \"/export\"}}]",
        "[{\"path\": \"/a\", \"host_path\": \"/\", \"read_only\": null, \"sub_path\": null}]",
        "[{\"path\": \"/g\", \"csi\": {\"driver\": \"gcsfuse.csi.storage.gke.io\", "
        "\"attributes\": {\"bucketName\": \"b1\"}}, \"read_only\": true}]",
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        char err[512];
        if (check(ok[i], err, sizeof err) != 0)
            fail_msg("%s: %s", ok[i], err);
    }
}

static void test_volume_check_names_every_problem_with_its_place(void **state) {
    (void)state;
    static const struct {
        const char *json;
        const char *want;
    } bad[] = {
        {"{}", "must be a list of volumes"},
        {"[1]", "volumes[0]: must be an object"},
        {"[{\"host_path\": \"/d\"}]", "volumes[0].path: required"},
        {"[{\"path\": \"/\", \"pvc\": \"c\"}]", "volumes[0].path: must be an absolute path other than /"},
        {"[{\"path\": \"/a/../b\", \"pvc\": \"c\"}]", "volumes[0].path: must be an absolute path"},
        {"[{\"path\": \"rel\", \"pvc\": \"c\"}]", "volumes[0].path: must be an absolute path"},
        {"[{\"path\": \"/a\", \"host_path\": \"/d/../etc\"}]", "volumes[0].host_path: must be an absolute path without . or .. parts"},
        {"[{\"path\": \"/a\", \"host_path\": \"d\"}]", "volumes[0].host_path: must be an absolute path"},
        {"[{\"path\": \"/a\", \"pvc\": \"c\", \"sub_path\": \"../x\"}]", "volumes[0].sub_path: must be a relative path"},
        {"[{\"path\": \"/a\", \"pvc\": \"c\", \"sub_path\": \"/x\"}]", "volumes[0].sub_path: must be a relative path"},
        {"[{\"path\": \"/a\", \"pvc\": \"c\", \"read_only\": 1}]", "volumes[0].read_only: must be true or false"},
        {"[{\"path\": \"/a\"}]", "volumes[0]: has no source"},
        {"[{\"path\": \"/a\", \"pvc\": \"c\", \"empty_dir\": {}}]", "volumes[0]: has 2 sources"},
        {"[{\"path\": \"/a\", \"pvc\": \"c/d\"}]", "volumes[0].pvc: must be a claim's name"},
        {"[{\"path\": \"/a\", \"empty_dir\": {\"medium\": \"HugePages\"}}]", "volumes[0].empty_dir.medium: must be"},
        {"[{\"path\": \"/a\", \"empty_dir\": {\"size_limit\": \"8Gx\"}}]", "volumes[0].empty_dir.size_limit:"},
        {"[{\"path\": \"/a\", \"empty_dir\": {\"size_limit\": \"1Ki\"}}]", "is below 1Mi"},
        {"[{\"path\": \"/a\", \"empty_dir\": {\"sizeLimit\": \"1Gi\"}}]", "unknown key \"sizeLimit\""},
        {"[{\"path\": \"/a\", \"nfs\": {\"server\": \"\", \"path\": \"x\"}}]", "volumes[0].nfs.server"},
        {"[{\"path\": \"/a\", \"nfs\": {\"server\": \"s\", \"path\": \"x\"}}]", "volumes[0].nfs.path"},
        {"[{\"path\": \"/a\", \"pvc\": \"c\", \"mountPropagation\": \"x\"}]", "volumes[0].mountPropagation: unknown key"},
        {"[{\"path\": \"/a\", \"pvc\": \"c\"}, {\"path\": \"/a\", \"pvc\": \"d\"}]", "volumes[1].path: /a is also volume [0]'s"},
        {"[{\"path\": \"/a-b\", \"pvc\": \"c\"}, {\"path\": \"/a_b\", \"pvc\": \"d\"}]", "would both be named SLUICE_VOLUME_A_B"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char err[512];
        if (check(bad[i].json, err, sizeof err) != SL_EINVAL || strstr(err, bad[i].want) == NULL)
            fail_msg("%s: \"%s\" lacks \"%s\"", bad[i].json, err, bad[i].want);
    }
    /* Three bad volumes: three messages in one answer, in order. */
    char err[1024];
    assert_int_equal(check("[{\"path\": \"/a\", \"host_path\": \"x\"}, {\"path\": \"/b\", \"pvc\": \"c\"},"
                           " {\"path\": \"/c\"}, {\"path\": \"d\", \"pvc\": \"c\"}]", err, sizeof err),
                     SL_EINVAL);
    const char *a = strstr(err, "volumes[0].host_path"), *c = strstr(err, "volumes[2]: has no source"),
               *d = strstr(err, "volumes[3].path");
    assert_non_null(a);
    assert_non_null(c);
    assert_non_null(d);
    assert_true(a < c && c < d);
    assert_null(strstr(err, "volumes[1]"));
    /* Over the most. */
    char big[64 * 40 + 16] = "[";
    for (int i = 0; i <= SL_VOLUMES_MAX; i++)
        snprintf(big + strlen(big), sizeof big - strlen(big), "%s{\"path\":\"/v%d\",\"pvc\":\"c\"}",
                 i ? "," : "", i);
    strcat(big, "]");
    assert_int_equal(check(big, err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, "at most 64"));
}

static void test_volume_spec_field_and_its_messages_through_the_table(void **state) {
    (void)state;
    json_t *spec = json_pack("{s:[s], s:[{s:s, s:s}, {s:s}], s:s}", "command", "true", "volumes",
                             "path", "/a", "host_path", "x", "path", "/b", "priority", "high");
    sl_jobspec_t js;
    const char *field;
    char err[1024];
    assert_int_equal(sl_jobspec_parse(spec, &js, &field, err, sizeof err), SL_EINVAL);
    /* The first bad field is priority; the volumes' messages follow, each
     * with its own place, not "volumes: volumes[0]". */
    assert_string_equal(field, "priority");
    assert_non_null(strstr(err, "; also volumes[0].host_path: must be an absolute path"));
    assert_non_null(strstr(err, "; volumes[1]: has no source"));
    assert_null(strstr(err, "volumes: volumes"));
    json_decref(spec);
    const sl_jobspec_field_t *f = sl_jobspec_find("volumes");
    assert_non_null(f);
    char e2[128];
    assert_null(sl_jobspec_from_text(f, "/a", e2, sizeof e2));
}

static void test_volume_env_name(void **state) {
    (void)state;
    static const char *const cases[][2] = {
        {"/dev/shm", "SLUICE_VOLUME_DEV_SHM"}, {"/data", "SLUICE_VOLUME_DATA"},
        {"/a-b//c.d/", "SLUICE_VOLUME_A_B_C_D"}, {"/mnt/pvc-1", "SLUICE_VOLUME_MNT_PVC_1"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[128];
        sl_volume_env_name(cases[i][0], buf, sizeof buf);
        assert_string_equal(buf, cases[i][1]);
        assert_true(sl_jobspec_env_name_ok(buf));
    }
}

static void test_volume_launch_round_trip_and_rejections(void **state) {
    (void)state;
    sl_proto_volume_t vols[] = {
        {.path = "/data", .kind = SL_VOLUME_BIND, .base = "/datasets", .sub = "imagenet/train",
         .read_only = true, .index = 0},
        {.path = "/dev/shm", .kind = SL_VOLUME_TMPFS, .size = INT64_C(8) << 30, .index = 1},
        {.path = "/scratch", .kind = SL_VOLUME_EMPTY_DIR, .sub = "a", .index = 2},
        {.path = "/gone", .kind = SL_VOLUME_BIND, .error = "unknown claim \"x\"", .index = 3},
    };
    sl_proto_msg_t m = {.type = SL_PROTO_LAUNCH, .job = 5, .task = 0};
    m.u.launch = (sl_proto_launch_t){.world_size = 1, .master_port = 29500, .volumes = vols,
                                     .nvolumes = 4};
    size_t len, len2;
    char *line = sl_proto_encode_alloc(&m, &len);
    assert_non_null(line);
    assert_non_null(strstr(line, ",\"volumes\":[{\"path\":\"/data\",\"kind\":\"bind\",\"index\":0,"
                                 "\"base\":\"/datasets\",\"sub\":\"imagenet/train\",\"read_only\":true}"));
    sl_proto_msg_t d;
    char err[256];
    if (sl_proto_decode_line(line, len - 1, SL_PROTO_TO_AGENT, &d, err, sizeof err) != 0)
        fail_msg("%s: %s", line, err);
    assert_int_equal(d.u.launch.nvolumes, 4);
    assert_int_equal(d.u.launch.volumes[1].kind, SL_VOLUME_TMPFS);
    assert_int_equal(d.u.launch.volumes[1].size, INT64_C(8) << 30);
    assert_string_equal(d.u.launch.volumes[3].error, "unknown claim \"x\"");
    char *again = sl_proto_encode_alloc(&d, &len2);
    assert_string_equal(again, line);
    sl_free(again);
    sl_free(line);
    sl_proto_msg_fini(&d);
    /* None: nothing written (a controller from before volumes). */
    m.u.launch.nvolumes = 0;
    line = sl_proto_encode_alloc(&m, &len);
    assert_null(strstr(line, "volumes"));
    sl_free(line);
    /* What cannot be encoded. */
    sl_proto_volume_t nobase = {.path = "/x", .kind = SL_VOLUME_BIND};
    m.u.launch.volumes = &nobase;
    m.u.launch.nvolumes = 1;
    assert_null(sl_proto_encode_alloc(&m, &len));
    static const struct {
        const char *vol, *want;
    } bad[] = {
        {"{\"kind\":\"bind\",\"index\":0,\"base\":\"/d\"}", "volumes[0].path: must be an absolute path"},
        {"{\"path\":\"/a\",\"kind\":\"nfs\",\"index\":0}", "volumes[0].kind: must be bind, empty_dir or tmpfs"},
        {"{\"path\":\"/a\",\"kind\":\"bind\",\"index\":0}", "volumes[0].base"},
        {"{\"path\":\"/a\",\"kind\":\"bind\",\"index\":0,\"base\":\"/d\",\"sub\":\"../x\"}", "volumes[0].sub"},
        {"{\"path\":\"/a\",\"kind\":\"tmpfs\",\"index\":0}", "volumes[0].size"},
        {"{\"path\":\"/a\",\"kind\":\"empty_dir\",\"index\":99}", "volumes[0].index"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char l[512];
        snprintf(l, sizeof l, "{\"type\":\"launch\",\"job\":1,\"task\":0,\"volumes\":[%s]}", bad[i].vol);
        int rc = sl_proto_decode_line(l, strlen(l), SL_PROTO_TO_AGENT, &d, err, sizeof err);
        if (rc != SL_EINVAL || strstr(err, bad[i].want) == NULL)
            fail_msg("%s: rc %d, \"%s\" lacks \"%s\"", l, rc, err, bad[i].want);
        sl_proto_msg_fini(&d);
    }
}

/* A config from YAML text, through ctl_volcfg_load. */
static int load(const char *yaml, ctl_vol_cfg_t *v, char *err, size_t len) {
    sl_yaml_node_t *root = NULL;
    char yerr[256];
    if (sl_yaml_load_string(yaml, strlen(yaml), &root, yerr, sizeof yerr) < 0)
        fail_msg("bad test YAML: %s", yerr);
    memset(v, 0, sizeof *v);
    int rc = ctl_volcfg_load(v, sl_yaml_map_get(root, "volumes"), "c.yaml", err, len);
    sl_yaml_free(root);
    return rc;
}

static const char *const CFG =
    "volumes:\n"
    "  host_path_prefixes: [/datasets, /datasets/imagenet/, /scratch]\n"
    "  claims: {imagenet: /mnt/pvc/imagenet, logs: /mnt/pvc/logs}\n"
    "  nfs: {\"nfs1:/export\": /mnt/nfs1}\n";

static void test_volume_config_resolves_prefixes_claims_and_exports(void **state) {
    (void)state;
    ctl_vol_cfg_t v;
    char err[1024];
    if (load(CFG, &v, err, sizeof err) != 0)
        fail_msg("%s", err);
    assert_int_equal(v.nprefixes, 3);
    assert_string_equal(v.prefixes[1], "/datasets/imagenet"); /* trailing / dropped */
    json_t *vols = json_loads(
        "[{\"path\": \"/d\", \"host_path\": \"/datasets/imagenet/train\", \"sub_path\": \"x\"},"
        " {\"path\": \"/c\", \"pvc\": \"logs\", \"sub_path\": \"run1\", \"read_only\": true},"
        " {\"path\": \"/n\", \"nfs\": {\"server\": \"nfs1\", \"path\": \"/export/a/b\"}},"
        " {\"path\": \"/dev/shm\", \"empty_dir\": {\"medium\": \"Memory\"}},"
        " {\"path\": \"/e\", \"empty_dir\": {\"size_limit\": \"2Gi\"}},"
        " {\"path\": \"/s\", \"host_path\": \"/scratch\"}]", 0, NULL);
    sl_proto_volume_t out[6];
    char *owned[6] = {0};
    if (ctl_volcfg_resolve(&v, vols, INT64_C(1) << 30, out, owned, err, sizeof err) != 0)
        fail_msg("%s", err);
    /* The longest prefix that holds it. */
    assert_string_equal(out[0].base, "/datasets/imagenet");
    assert_string_equal(out[0].sub, "train/x");
    assert_string_equal(out[1].base, "/mnt/pvc/logs");
    assert_string_equal(out[1].sub, "run1");
    assert_true(out[1].read_only);
    assert_string_equal(out[2].base, "/mnt/nfs1");
    assert_string_equal(out[2].sub, "a/b");
    assert_int_equal(out[3].kind, SL_VOLUME_TMPFS);
    assert_int_equal(out[3].size, INT64_C(1) << 30); /* none given: the task's memory */
    assert_int_equal(out[4].kind, SL_VOLUME_EMPTY_DIR);
    assert_int_equal(out[4].size, INT64_C(2) << 30);
    assert_int_equal(out[4].index, 4);
    assert_null(out[5].sub);
    for (int i = 0; i < 6; i++)
        sl_free(owned[i]);
    json_decref(vols);
    /* Every refusal at once, naming what the config has. */
    vols = json_loads("[{\"path\": \"/a\", \"host_path\": \"/etc\"},"
                      " {\"path\": \"/b\", \"host_path\": \"/datasetsX\"},"
                      " {\"path\": \"/c\", \"pvc\": \"nope\"},"
                      " {\"path\": \"/d\", \"nfs\": {\"server\": \"nfs2\", \"path\": \"/export\"}},"
                      " {\"path\": \"/e\", \"nfs\": {\"server\": \"nfs1\", \"path\": \"/exports\"}}]",
                      0, NULL);
    assert_int_equal(ctl_volcfg_resolve(&v, vols, 0, NULL, NULL, err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, "volumes[0].host_path: /etc is not under a path the cluster allows "
                                "(volumes.host_path_prefixes: /datasets, /datasets/imagenet, /scratch)"));
    assert_non_null(strstr(err, "volumes[1].host_path: /datasetsX is not under"));
    assert_non_null(strstr(err, "volumes[2].pvc: unknown claim \"nope\" (volumes.claims: imagenet, logs)"));
    assert_non_null(strstr(err, "volumes[3].nfs: nfs2:/export is not an export"));
    assert_non_null(strstr(err, "volumes[4].nfs: nfs1:/exports is not an export"));
    json_decref(vols);
    /* A Memory empty_dir of a job that asks for no memory needs a size. */
    vols = json_loads("[{\"path\": \"/m\", \"empty_dir\": {\"medium\": \"Memory\"}}]", 0, NULL);
    assert_int_equal(ctl_volcfg_resolve(&v, vols, 0, NULL, NULL, err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, "volumes[0].empty_dir.size_limit: required"));
    json_decref(vols);
    ctl_volcfg_fini(&v);
    /* No config: only empty_dirs. */
    memset(&v, 0, sizeof v);
    vols = json_loads("[{\"path\": \"/e\", \"empty_dir\": {}}, {\"path\": \"/a\", \"host_path\": \"/x\"}]",
                      0, NULL);
    assert_int_equal(ctl_volcfg_resolve(&v, vols, 0, NULL, NULL, err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, "(volumes.host_path_prefixes: none)"));
    assert_null(strstr(err, "volumes[0]"));
    json_decref(vols);
}

/* CSI volumes: a driver and the attribute that names its volumes, each
 * value's node path; read_only and sub_path kept; every refusal names the
 * driver and the bucket it cannot map, and what the config has. */
static void test_volume_csi_shape_config_and_refusals(void **state) {
    (void)state;
    char err[1024];
    static const struct {
        const char *json, *want;
    } bad[] = {
        {"[{\"path\": \"/g\", \"csi\": \"gcs\"}]", "volumes[0].csi: must be an object"},
        {"[{\"path\": \"/g\", \"csi\": {\"attributes\": {}}}]", "volumes[0].csi.driver: must be"},
        {"[{\"path\": \"/g\", \"csi\": {\"driver\": \"d\", \"attributes\": {\"a\": 1}}}]",
         "volumes[0].csi.attributes: \"a\" must be a string"},
        {"[{\"path\": \"/g\", \"csi\": {\"driver\": \"d\", \"fsType\": \"ext4\"}}]",
         "volumes[0].csi: unknown key \"fsType\""},
        {"[{\"path\": \"/g\", \"pvc\": \"c\", \"csi\": {\"driver\": \"d\"}}]", "has 2 sources"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (check(bad[i].json, err, sizeof err) != SL_EINVAL || strstr(err, bad[i].want) == NULL)
            fail_msg("%s: \"%s\" lacks \"%s\"", bad[i].json, err, bad[i].want);
    ctl_vol_cfg_t v;
    if (load("volumes:\n"
             "  csi:\n"
             "    gcsfuse.csi.storage.gke.io:\n"
             "      attribute: bucketName\n"
             "      paths: {b1: /mnt/gcs/b1, b2: /mnt/gcs/b2/}\n",
             &v, err, sizeof err) != 0)
        fail_msg("%s", err);
    assert_int_equal(v.ncsi, 1);
    assert_int_equal(v.csi[0].npaths, 2);
    assert_string_equal(v.csi[0].paths[1].path, "/mnt/gcs/b2");
    json_t *vols = json_loads(
        "[{\"path\": \"/data\", \"read_only\": true, \"csi\": {\"driver\": "
        "\"gcsfuse.csi.storage.gke.io\", \"attributes\": {\"bucketName\": \"b2\", "
        "\"mountOptions\": \"implicit-dirs\"}}, \"sub_path\": \"ckpt\"},"
        " {\"path\": \"/b1\", \"csi\": {\"driver\": \"gcsfuse.csi.storage.gke.io\", "
        "\"attributes\": {\"bucketName\": \"b1\"}}}]", 0, NULL);
    sl_proto_volume_t out[2];
    char *owned[2] = {0};
    if (ctl_volcfg_resolve(&v, vols, 0, out, owned, err, sizeof err) != 0)
        fail_msg("%s", err);
    assert_int_equal(out[0].kind, SL_VOLUME_BIND);
    assert_string_equal(out[0].base, "/mnt/gcs/b2");
    assert_string_equal(out[0].sub, "ckpt");
    assert_true(out[0].read_only);
    assert_null(out[0].error);
    assert_string_equal(out[1].base, "/mnt/gcs/b1");
    assert_null(out[1].sub);
    assert_false(out[1].read_only);
    for (int i = 0; i < 2; i++)
        sl_free(owned[i]);
    json_decref(vols);
    vols = json_loads(
        "[{\"path\": \"/a\", \"csi\": {\"driver\": \"gcsfuse.csi.storage.gke.io\", "
        "\"attributes\": {\"bucketName\": \"nope\"}}},"
        " {\"path\": \"/b\", \"csi\": {\"driver\": \"efs.csi.aws.com\"}},"
        " {\"path\": \"/c\", \"csi\": {\"driver\": \"gcsfuse.csi.storage.gke.io\"}}]", 0, NULL);
    assert_int_equal(ctl_volcfg_resolve(&v, vols, 0, NULL, NULL, err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, "volumes[0].csi: gcsfuse.csi.storage.gke.io bucketName \"nope\" is "
                                "not mapped to a node path (volumes.csi.gcsfuse.csi.storage.gke.io."
                                "paths: b1, b2)"));
    assert_non_null(strstr(err, "volumes[1].csi.driver: CSI driver efs.csi.aws.com is not one the "
                                "cluster maps to its nodes (volumes.csi: gcsfuse.csi.storage.gke.io)"));
    assert_non_null(strstr(err, "volumes[2].csi.attributes: needs bucketName"));
    /* Unresolved, for the launch: the volume carries its error. */
    sl_proto_volume_t o3[3];
    char *ow3[3] = {0};
    assert_int_equal(ctl_volcfg_resolve(&v, vols, 0, o3, ow3, err, sizeof err), SL_EINVAL);
    assert_non_null(o3[0].error);
    for (int i = 0; i < 3; i++)
        sl_free(ow3[i]);
    json_decref(vols);
    ctl_volcfg_fini(&v);
    /* No csi section: the driver is refused. */
    memset(&v, 0, sizeof v);
    vols = json_loads("[{\"path\": \"/a\", \"csi\": {\"driver\": \"d\"}}]", 0, NULL);
    assert_int_equal(ctl_volcfg_resolve(&v, vols, 0, NULL, NULL, err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, "(volumes.csi: none)"));
    json_decref(vols);
}

static void test_volume_config_refuses_bad_entries(void **state) {
    (void)state;
    static const struct {
        const char *yaml, *want;
    } bad[] = {
        {"volumes: [a]\n", "c.yaml:1: volumes must be a mapping"},
        {"volumes:\n  hostpaths: [/a]\n", "c.yaml:2: volumes: unknown key \"hostpaths\""},
        {"volumes:\n  host_path_prefixes: [rel]\n", "host_path_prefixes[0]: must be an absolute path"},
        {"volumes:\n  host_path_prefixes: [/a/../b]\n", "host_path_prefixes[0]"},
        {"volumes:\n  claims: {a: rel}\n", "volumes.claims.a: must be an absolute node path"},
        {"volumes:\n  claims: {a/b: /x}\n", "is not a claim's name"},
        {"volumes:\n  nfs: {nfs1: /x}\n", "\"nfs1\" is not SERVER:/EXPORT"},
        {"volumes:\n  nfs: [x]\n", "volumes.nfs must be a mapping"},
        {"volumes:\n  csi: [x]\n", "volumes.csi must be a mapping"},
        {"volumes:\n  csi:\n    d: {paths: {b: /x}}\n", "volumes.csi.d: needs attribute"},
        {"volumes:\n  csi:\n    d: {attribute: a}\n", "volumes.csi.d.paths: required"},
        {"volumes:\n  csi:\n    d: {attribute: a, paths: {b: rel}}\n",
         "volumes.csi.d.paths.b: must be an absolute node path"},
        {"volumes:\n  csi:\n    d: {attribute: a, paths: {b: /x}, mode: rw}\n",
         "volumes.csi.d: unknown key \"mode\""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ctl_vol_cfg_t v;
        char err[512];
        int rc = load(bad[i].yaml, &v, err, sizeof err);
        ctl_volcfg_fini(&v);
        if (rc == 0 || strstr(err, bad[i].want) == NULL)
            fail_msg("%s: rc %d, \"%s\" lacks \"%s\"", bad[i].yaml, rc, rc ? err : "", bad[i].want);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_volume_check_accepts_every_source, tu_teardown),
        cmocka_unit_test_teardown(test_volume_check_names_every_problem_with_its_place, tu_teardown),
        cmocka_unit_test_teardown(test_volume_spec_field_and_its_messages_through_the_table,
                                  tu_teardown),
        cmocka_unit_test_teardown(test_volume_env_name, tu_teardown),
        cmocka_unit_test_teardown(test_volume_launch_round_trip_and_rejections, tu_teardown),
        cmocka_unit_test_teardown(test_volume_config_resolves_prefixes_claims_and_exports,
                                  tu_teardown),
        cmocka_unit_test_teardown(test_volume_csi_shape_config_and_refusals, tu_teardown),
        cmocka_unit_test_teardown(test_volume_config_refuses_bad_entries, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
