/*
 * test_cluster_names.c - the job share of the GPU model and pool tables
 * (issue 8, finding 4): names that jobs alone hold fill at most half of
 * each table, so that nodes always find the other half; a name a node
 * holds never counts; releasing a job's name gives its share back.
 *
 * Plain interning and releasing (node references) are in test_cluster.c.
 */
#include <stdio.h>
#include <string.h>

#include "testutil.h"

#define GIB (INT64_C(1) << 30)

static void name_of(char *buf, size_t len, const char *prefix, int i) {
    snprintf(buf, len, "%s%d", prefix, i);
}

/* A node with one GPU of model (NULL: no GPU) in pool. */
static int add_node(sl_cluster_t *cl, const char *name, const char *model, const char *pool,
                    uint32_t *id) {
    sl_node_spec_t sp = tu_node_spec(name, 1000, GIB, model ? 1 : 0, model, model ? GIB : 0, pool);
    return sl_cluster_add_node(cl, &sp, id, NULL, 0);
}

static void test_cluster_names_job_models_capped_at_half(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    char name[32];
    assert_int_equal(SL_MAX_JOB_MODELS, SL_MAX_MODELS / 2);
    for (int i = 0; i < SL_MAX_JOB_MODELS; i++) {
        name_of(name, sizeof name, "bogus", i);
        assert_int_equal(sl_cluster_model_intern_job(cl, name, false), i);
    }
    assert_int_equal(sl_cluster_model_job_only_count(cl), SL_MAX_JOB_MODELS);
    /* One more made-up model is refused and leaves nothing behind. */
    assert_int_equal(sl_cluster_model_intern_job(cl, "x42", false), SL_ENOSPC);
    assert_int_equal(sl_cluster_model_find(cl, "x42"), SL_ENOENT);
    assert_int_equal(sl_cluster_model_count(cl), SL_MAX_JOB_MODELS);
    /* A name jobs already hold takes no slot: another job may name it. */
    assert_int_equal(sl_cluster_model_intern_job(cl, "bogus3", false), 3);
    assert_int_equal(sl_cluster_model_job_only_count(cl), SL_MAX_JOB_MODELS);

    /* Nodes with new models register while the table has room: the whole
     * other half. */
    for (int i = 0; i < SL_MAX_MODELS - SL_MAX_JOB_MODELS; i++) {
        char node[32];
        name_of(node, sizeof node, "node", i);
        name_of(name, sizeof name, "real", i);
        uint32_t id;
        assert_int_equal(add_node(cl, node, name, NULL, &id), 0);
        assert_int_equal(sl_cluster_node(cl, id)->model, SL_MAX_JOB_MODELS + i);
    }
    assert_int_equal(sl_cluster_model_count(cl), SL_MAX_MODELS);
    assert_int_equal(add_node(cl, "one-more", "H200", NULL, NULL), SL_ERANGE);
    assert_int_equal(sl_cluster_model_intern(cl, "H200"), SL_ERANGE);
    /* A job may name a node's model whatever the share. */
    assert_int_equal(sl_cluster_model_intern_job(cl, "real0", false), SL_MAX_JOB_MODELS);
    assert_int_equal(sl_cluster_model_job_only_count(cl), SL_MAX_JOB_MODELS);
    assert_int_equal(sl_cluster_check(cl), 0);
    sl_cluster_destroy(cl);
}

static void test_cluster_names_job_pools_capped_at_half(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    char name[32];
    assert_int_equal(SL_MAX_JOB_POOLS, SL_MAX_POOLS / 2);
    /* "default" is the cluster's own, so it is no job's: all of the share
     * is left for jobs' pools. */
    assert_int_equal(sl_cluster_pool_job_only_count(cl), 0);
    assert_int_equal(sl_cluster_pool_intern_job(cl, "default", false), 0);
    for (int i = 0; i < SL_MAX_JOB_POOLS; i++) {
        name_of(name, sizeof name, "ghost", i);
        assert_int_equal(sl_cluster_pool_intern_job(cl, name, false), i + 1);
    }
    assert_int_equal(sl_cluster_pool_intern_job(cl, "ghost-more", false), SL_ENOSPC);
    assert_int_equal(sl_cluster_pool_find(cl, "ghost-more"), SL_ENOENT);
    assert_int_equal(sl_cluster_pool_count(cl), SL_MAX_JOB_POOLS + 1);
    /* Nodes (and the configuration) fill the rest of the table. */
    for (int i = 0; i < SL_MAX_POOLS - SL_MAX_JOB_POOLS - 2; i++) {
        name_of(name, sizeof name, "conf", i);
        assert_int_equal(sl_cluster_pool_intern(cl, name), SL_MAX_JOB_POOLS + 1 + i);
    }
    assert_int_equal(add_node(cl, "n", NULL, "train", NULL), 0);
    assert_int_equal(sl_cluster_pool_count(cl), SL_MAX_POOLS);
    assert_int_equal(sl_cluster_pool_find(cl, "train"), SL_MAX_POOLS - 1);
    assert_int_equal(add_node(cl, "m", NULL, "infer", NULL), SL_ERANGE);
    assert_int_equal(sl_cluster_check(cl), 0);
    sl_cluster_destroy(cl);
}

static void test_cluster_names_node_registering_a_job_name_stops_counting(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    char name[32];
    for (int i = 0; i < SL_MAX_JOB_MODELS; i++) {
        name_of(name, sizeof name, "m", i);
        assert_int_equal(sl_cluster_model_intern_job(cl, name, false), i);
    }
    assert_int_equal(sl_cluster_model_intern_job(cl, "A100", false), SL_ENOSPC);
    /* A node brings model m5, which a pending job named: it keeps its id
     * (the job's mask stays valid) and no longer counts toward the share. */
    uint32_t id;
    assert_int_equal(add_node(cl, "n5", "m5", "p", &id), 0);
    assert_int_equal(sl_cluster_node(cl, id)->model, 5);
    assert_int_equal(sl_cluster_model_job_only_count(cl), SL_MAX_JOB_MODELS - 1);
    assert_false(sl_cluster_model_job_only(cl, 5)); /* per name, as the count says */
    assert_true(sl_cluster_model_job_only(cl, 4));
    assert_false(sl_cluster_model_job_only(cl, SL_MAX_MODELS - 1)); /* a free slot */
    assert_false(sl_cluster_model_job_only(cl, -1));
    assert_int_equal(sl_cluster_model_intern_job(cl, "A100", false), SL_MAX_JOB_MODELS);
    assert_int_equal(sl_cluster_model_intern_job(cl, "B200", false), SL_ENOSPC);
    /* The job ends: the node keeps the name, and it still does not count. */
    assert_int_equal(sl_cluster_model_release_job(cl, 5), 0);
    assert_int_equal(sl_cluster_model_release_job(cl, 5), SL_EINVAL); /* no job holds it now */
    assert_string_equal(sl_cluster_model_name(cl, 5), "m5");
    assert_int_equal(sl_cluster_model_job_only_count(cl), SL_MAX_JOB_MODELS);

    /* The same for a pool. A configuration's reference is a node's kind
     * too; when the last such reference goes and a job still holds the
     * name, it counts again. */
    assert_int_equal(sl_cluster_pool_intern_job(cl, "q", false), 2);
    assert_int_equal(sl_cluster_pool_job_only_count(cl), 1);
    assert_true(sl_cluster_pool_job_only(cl, 2));
    assert_int_equal(sl_cluster_pool_intern(cl, "q"), 2);
    assert_int_equal(sl_cluster_pool_job_only_count(cl), 0);
    assert_false(sl_cluster_pool_job_only(cl, 2));
    assert_int_equal(sl_cluster_pool_release(cl, 2), 0);
    assert_int_equal(sl_cluster_pool_job_only_count(cl), 1);
    assert_int_equal(sl_cluster_pool_release(cl, 2), SL_EINVAL); /* no such reference left */
    assert_int_equal(sl_cluster_pool_release_job(cl, 2), 0);
    assert_null(sl_cluster_pool_name(cl, 2));
    assert_int_equal(sl_cluster_pool_job_only_count(cl), 0);
    assert_int_equal(sl_cluster_check(cl), 0);
    sl_cluster_destroy(cl);
}

static void test_cluster_names_release_frees_job_share(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    char name[32];
    for (int i = 0; i < SL_MAX_JOB_MODELS; i++) {
        name_of(name, sizeof name, "m", i);
        assert_int_equal(sl_cluster_model_intern_job(cl, name, false), i);
    }
    assert_int_equal(sl_cluster_model_intern_job(cl, "m7", false), 7); /* a second job */
    assert_int_equal(sl_cluster_model_release_job(cl, 7), 0);
    assert_int_equal(sl_cluster_model_intern_job(cl, "new", false), SL_ENOSPC);
    /* Its last job ends: the slot and the share come back, and the next
     * new name takes the lowest free id; the other ids never moved. */
    assert_int_equal(sl_cluster_model_release_job(cl, 7), 0);
    assert_null(sl_cluster_model_name(cl, 7));
    assert_int_equal(sl_cluster_model_job_only_count(cl), SL_MAX_JOB_MODELS - 1);
    assert_int_equal(sl_cluster_model_intern_job(cl, "new", false), 7);
    assert_string_equal(sl_cluster_model_name(cl, 8), "m8");
    /* A node's reference is not a job's, nor the other way round. */
    assert_int_equal(sl_cluster_model_release(cl, 8), SL_EINVAL);
    assert_int_equal(add_node(cl, "n", "real", NULL, NULL), 0);
    assert_int_equal(sl_cluster_model_release_job(cl, SL_MAX_JOB_MODELS), SL_EINVAL);
    assert_int_equal(sl_cluster_model_release_job(cl, -1), SL_EINVAL);
    assert_int_equal(sl_cluster_model_release_job(cl, SL_MAX_MODELS), SL_EINVAL);
    for (int i = 0; i < SL_MAX_JOB_MODELS; i++) assert_int_equal(sl_cluster_model_release_job(cl, i), 0);
    assert_int_equal(sl_cluster_model_job_only_count(cl), 0);
    assert_int_equal(sl_cluster_model_count(cl), 1);
    assert_int_equal(sl_cluster_check(cl), 0);
    sl_cluster_destroy(cl);
}

/* Recovery takes a stored job's names past the share (past_share): the
 * count then exceeds it, and new names wait until it is below again. */
static void test_cluster_names_past_share_for_recovered_jobs(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    char name[32];
    const int over = SL_MAX_JOB_MODELS + 8;
    for (int i = 0; i < over; i++) {
        name_of(name, sizeof name, "old", i);
        assert_int_equal(sl_cluster_model_intern_job(cl, name, true), i);
    }
    assert_int_equal(sl_cluster_model_job_only_count(cl), over);
    assert_int_equal(sl_cluster_model_intern_job(cl, "new", false), SL_ENOSPC);
    /* Even past the share, the table keeps its bound, and nodes their room. */
    for (int i = over; i < SL_MAX_MODELS; i++) {
        char node[32];
        name_of(node, sizeof node, "n", i);
        name_of(name, sizeof name, "real", i);
        assert_int_equal(add_node(cl, node, name, NULL, NULL), 0);
    }
    assert_int_equal(sl_cluster_model_intern_job(cl, "late", true), SL_ERANGE);
    for (int i = 0; i < 9; i++) assert_int_equal(sl_cluster_model_release_job(cl, i), 0);
    assert_int_equal(sl_cluster_model_job_only_count(cl), SL_MAX_JOB_MODELS - 1);
    assert_int_equal(sl_cluster_model_intern_job(cl, "new", false), 0);
    assert_int_equal(sl_cluster_model_intern_job(cl, "newer", false), SL_ENOSPC);
    assert_int_equal(sl_cluster_check(cl), 0);
    sl_cluster_destroy(cl);
}

/* Node and job interns and releases in a seeded random order agree with a
 * naive table of (name, node count, job count): every referenced name
 * keeps its id, the job-only count is the names with jobs alone, and a new
 * name is refused exactly when the table or the job share is full. */
static void test_cluster_names_random_vs_reference(void **state) {
    (void)state;
    for (uint64_t seed = 1; seed <= 20; seed++) {
        sl_cluster_t *cl = tu_cluster();
        sl_rng_t rng;
        sl_rng_seed(&rng, seed);
        int32_t nref[SL_MAX_MODELS] = {0}, jref[SL_MAX_MODELS] = {0};
        char names[SL_MAX_MODELS][16];
        for (int step = 0; step < 4000; step++) {
            int32_t used = 0, job_only = 0;
            for (int32_t i = 0; i < SL_MAX_MODELS; i++) {
                used += nref[i] + jref[i] > 0;
                job_only += nref[i] == 0 && jref[i] > 0;
            }
            bool job = sl_rng_below(&rng, 4) != 0; /* mostly jobs, so the share fills */
            if (sl_rng_below(&rng, 2) == 0) {
                char name[16];
                snprintf(name, sizeof name, "m%u", (unsigned)sl_rng_below(&rng, 96));
                int32_t have = -1;
                for (int32_t i = 0; i < SL_MAX_MODELS; i++)
                    if (nref[i] + jref[i] > 0 && strcmp(names[i], name) == 0) have = i;
                int id = job ? sl_cluster_model_intern_job(cl, name, false)
                             : sl_cluster_model_intern(cl, name);
                if (have >= 0) {
                    assert_int_equal(id, have);
                } else if (used == SL_MAX_MODELS) {
                    assert_int_equal(id, SL_ERANGE);
                    continue;
                } else if (job && job_only >= SL_MAX_JOB_MODELS) {
                    assert_int_equal(id, SL_ENOSPC);
                    continue;
                } else {
                    assert_true(id >= 0 && id < SL_MAX_MODELS);
                    for (int32_t i = 0; i < id; i++) assert_true(nref[i] + jref[i] > 0);
                    strcpy(names[id], name);
                }
                (job ? jref : nref)[id]++;
            } else {
                int32_t id = (int32_t)sl_rng_below(&rng, SL_MAX_MODELS);
                int32_t *refs = job ? jref : nref;
                int rc = job ? sl_cluster_model_release_job(cl, id)
                             : sl_cluster_model_release(cl, id);
                assert_int_equal(rc, refs[id] > 0 ? 0 : SL_EINVAL);
                if (refs[id] > 0) refs[id]--;
            }
            used = job_only = 0;
            for (int32_t i = 0; i < SL_MAX_MODELS; i++) {
                used += nref[i] + jref[i] > 0;
                job_only += nref[i] == 0 && jref[i] > 0;
            }
            assert_int_equal(sl_cluster_model_count(cl), used);
            assert_int_equal(sl_cluster_model_job_only_count(cl), job_only);
        }
        for (int32_t i = 0; i < SL_MAX_MODELS; i++) {
            if (nref[i] + jref[i] > 0) assert_string_equal(sl_cluster_model_name(cl, i), names[i]);
            else assert_null(sl_cluster_model_name(cl, i));
        }
        assert_int_equal(sl_cluster_check(cl), 0);
        sl_cluster_destroy(cl);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_cluster_names_job_models_capped_at_half, tu_teardown),
        cmocka_unit_test_teardown(test_cluster_names_job_pools_capped_at_half, tu_teardown),
        cmocka_unit_test_teardown(test_cluster_names_node_registering_a_job_name_stops_counting,
                                  tu_teardown),
        cmocka_unit_test_teardown(test_cluster_names_release_frees_job_share, tu_teardown),
        cmocka_unit_test_teardown(test_cluster_names_past_share_for_recovered_jobs, tu_teardown),
        cmocka_unit_test_teardown(test_cluster_names_random_vs_reference, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
