/*
 * test_slurmenv.c - Slurm's variables (src/common/slurmenv.h): an
 * allocation's task's, checked against what a Slurm 22.05 slurmd set for
 * the same request (recorded from the peer Slurm: `sbatch -N1 -n4
 * --ntasks-per-node=4 -c2 --gres=gpu:2 --mem=8G`, an array 3-7:2, a job
 * over several nodes), the count lists' "2(x3),1" form, and the input
 * variables of sbatch and srun as options.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slurmenv.h"
#include "sluice/error.h"
#include "testutil.h"

static void expect(const sl_slurmenv_t *e, const char *key, const char *value) {
    const char *got = sl_slurmenv_get(e, key);
    if (value == NULL) {
        if (got != NULL)
            fail_msg("%s is set (%s) and should not be", key, got);
        return;
    }
    if (got == NULL)
        fail_msg("%s is not set (expected %s)", key, value);
    assert_string_equal(got, value);
}

/* The peer's job "a": four tasks on one node, two CPUs each, GPUs 0 and 1. */
static void test_slurmenv_one_node_as_slurmd(void **state) {
    (void)state;
    const char *nodes[4] = {"localhost", "localhost", "localhost", "localhost"};
    const uint32_t gpus[4] = {1, 1, 2, 2};
    sl_slurmenv_alloc_t a = {.job_id = 2, .job_name = "a", .user = "root", .partition = "main",
                             .cluster = "anchor", .submit_host = "vm", .submit_dir = "/tmp/s",
                             .ntasks = 4, .task_node = nodes, .task_gpus = gpus,
                             .cpus_per_task = 2, .ntasks_per_node = "4", .mem_per_node = "8192"};
    sl_slurmenv_t e = {0};
    assert_int_equal(sl_slurmenv_alloc(&a, 0, &e), 0);
    static const char *const want[][2] = {
        {"SLURM_JOB_ID", "2"}, {"SLURM_JOBID", "2"}, {"SLURM_JOB_NAME", "a"},
        {"SLURM_NTASKS", "4"}, {"SLURM_NPROCS", "4"}, {"SLURM_PROCID", "0"},
        {"SLURM_LOCALID", "0"}, {"SLURM_NODEID", "0"}, {"SLURM_JOB_NODELIST", "localhost"},
        {"SLURM_NODELIST", "localhost"}, {"SLURM_JOB_NUM_NODES", "1"}, {"SLURM_NNODES", "1"},
        {"SLURM_TASKS_PER_NODE", "4"}, {"SLURM_JOB_CPUS_PER_NODE", "8"},
        {"SLURM_CPUS_ON_NODE", "8"}, {"SLURM_CPUS_PER_TASK", "2"},
        {"SLURM_NTASKS_PER_NODE", "4"}, {"SLURM_MEM_PER_NODE", "8192"},
        {"SLURM_JOB_GPUS", "0,1"}, {"SLURM_GPUS_ON_NODE", "2"}, {"SLURMD_NODENAME", "localhost"},
        {"SLURM_TOPOLOGY_ADDR", "localhost"}, {"SLURM_TOPOLOGY_ADDR_PATTERN", "node"},
        {"SLURM_JOB_USER", "root"}, {"SLURM_JOB_PARTITION", "main"},
        {"SLURM_CLUSTER_NAME", "anchor"}, {"SLURM_SUBMIT_HOST", "vm"},
        {"SLURM_SUBMIT_DIR", "/tmp/s"}};
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++)
        expect(&e, want[k][0], want[k][1]);
    /* Asked for neither way: Slurm leaves these unset. */
    expect(&e, "SLURM_MEM_PER_CPU", NULL);
    expect(&e, "SLURM_GPUS_PER_NODE", NULL);
    expect(&e, "SLURM_ARRAY_JOB_ID", NULL);
    expect(&e, "SLURM_JOB_ACCOUNT", NULL);
    sl_slurmenv_fini(&e);
    assert_int_equal(sl_slurmenv_alloc(&a, 3, &e), 0);
    expect(&e, "SLURM_PROCID", "3");
    expect(&e, "SLURM_LOCALID", "3");
    sl_slurmenv_fini(&e);
}

/* Six tasks over three nodes, placed out of name order: nodes sorted by
 * name, each task's node id and local id; GPUs only where the job has
 * some. */
static void test_slurmenv_nodes_sorted_counts_compressed(void **state) {
    (void)state;
    const char *nodes[6] = {"n3", "n1", "n2", "n1", "n3", "n2"};
    const uint32_t gpus[6] = {0, 4, 0, 8, 0, 0};
    sl_slurmenv_alloc_t a = {.job_id = 77, .ntasks = 6, .task_node = nodes, .task_gpus = gpus,
                             .cpus_per_task = 3, .account = "ml"};
    sl_slurmenv_t e = {0};
    assert_int_equal(sl_slurmenv_alloc(&a, 3, &e), 0);
    expect(&e, "SLURM_JOB_NODELIST", "n[1-3]");
    expect(&e, "SLURM_NNODES", "3");
    expect(&e, "SLURM_TASKS_PER_NODE", "2(x3)");
    expect(&e, "SLURM_JOB_CPUS_PER_NODE", "6(x3)");
    expect(&e, "SLURM_NODEID", "0");
    expect(&e, "SLURM_LOCALID", "1");
    expect(&e, "SLURMD_NODENAME", "n1");
    expect(&e, "SLURM_JOB_GPUS", "2,3");
    expect(&e, "SLURM_GPUS_ON_NODE", "2");
    expect(&e, "SLURM_JOB_ACCOUNT", "ml");
    expect(&e, "SLURM_JOB_NAME", NULL);
    sl_slurmenv_fini(&e);
    /* Neither -n nor --ntasks-per-node: no SLURM_NTASKS, as Slurm's. */
    a.ntasks_unasked = true;
    assert_int_equal(sl_slurmenv_alloc(&a, 3, &e), 0);
    expect(&e, "SLURM_NTASKS", NULL);
    expect(&e, "SLURM_NPROCS", NULL);
    expect(&e, "SLURM_TASKS_PER_NODE", "2(x3)");
    sl_slurmenv_fini(&e);
    assert_int_equal(sl_slurmenv_alloc(&a, 4, &e), 0);
    expect(&e, "SLURM_NODEID", "2");
    expect(&e, "SLURM_LOCALID", "1");
    expect(&e, "SLURM_JOB_GPUS", NULL);
    expect(&e, "SLURM_GPUS_ON_NODE", NULL);
    sl_slurmenv_fini(&e);
    assert_int_equal(sl_slurmenv_alloc(&a, 6, &e), SL_EINVAL);
    assert_int_equal(sl_slurmenv_alloc(&a, -1, &e), SL_EINVAL);
    sl_slurmenv_fini(&e);
}

/* The peer's array 3-7:2, its last element; and a list that steps
 * unevenly. */
static void test_slurmenv_array(void **state) {
    (void)state;
    const char *nodes[1] = {"localhost"};
    const int32_t idx[3] = {3, 5, 7};
    sl_slurmenv_alloc_t a = {.job_id = 6, .ntasks = 1, .task_node = nodes, .cpus_per_task = 1,
                             .gpus_per_task = "1", .array_job_id = 4, .array_index = 7,
                             .array_idx = idx, .array_n = 3};
    sl_slurmenv_t e = {0};
    assert_int_equal(sl_slurmenv_alloc(&a, 0, &e), 0);
    expect(&e, "SLURM_ARRAY_JOB_ID", "4");
    expect(&e, "SLURM_ARRAY_TASK_ID", "7");
    expect(&e, "SLURM_ARRAY_TASK_COUNT", "3");
    expect(&e, "SLURM_ARRAY_TASK_MIN", "3");
    expect(&e, "SLURM_ARRAY_TASK_MAX", "7");
    expect(&e, "SLURM_ARRAY_TASK_STEP", "2");
    expect(&e, "SLURM_GPUS_PER_TASK", "1");
    sl_slurmenv_fini(&e);
    const int32_t uneven[3] = {1, 2, 5};
    a.array_idx = uneven;
    assert_int_equal(sl_slurmenv_alloc(&a, 0, &e), 0);
    expect(&e, "SLURM_ARRAY_TASK_STEP", "1");
    sl_slurmenv_fini(&e);
}

static void test_slurmenv_counts(void **state) {
    (void)state;
    static const struct { int64_t c[6]; size_t n; const char *text; } cases[] = {
        {{4}, 1, "4"},
        {{2, 2, 2, 1}, 4, "2(x3),1"},
        {{1, 2, 2, 3}, 4, "1,2(x2),3"},
        {{8, 8}, 2, "8(x2)"},
        {{0}, 0, ""},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char buf[64];
        size_t need = sl_slurmenv_counts(cases[k].c, cases[k].n, buf, sizeof buf);
        assert_string_equal(buf, cases[k].text);
        assert_int_equal(need, strlen(cases[k].text));
    }
    /* Cut short, it still ends, and says what it needed. */
    const int64_t c[4] = {2, 2, 2, 1};
    char small[4];
    assert_int_equal(sl_slurmenv_counts(c, 4, small, sizeof small), 7);
    assert_true(strlen(small) < sizeof small);
}

static const char *fake_env(const char *name, void *ud) {
    const char *const *kv = ud;
    for (; kv[0]; kv += 2)
        if (strcmp(kv[0], name) == 0)
            return kv[1];
    return NULL;
}

static void test_slurmenv_inputs(void **state) {
    (void)state;
    const char *sb_env[] = {"SBATCH_PARTITION", "gpu", "SBATCH_TIMELIMIT", "1:00:00",
                            "SBATCH_ACCOUNT", "", "SBATCH_NO_REQUEUE", "1", "HOME", "/x", NULL};
    char **argv;
    const char **from;
    int n = sl_slurmenv_inputs(sl_slurmenv_sbatch_inputs, fake_env, sb_env, &argv, &from);
    assert_int_equal(n, 3);
    assert_string_equal(argv[0], "--partition=gpu");
    assert_string_equal(argv[1], "--time=1:00:00");
    assert_string_equal(argv[2], "--no-requeue");
    assert_string_equal(from[0], "SBATCH_PARTITION");
    assert_string_equal(from[2], "SBATCH_NO_REQUEUE");
    free(from);
    sl_slurmenv_argv_free(argv, n);

    const char *srun_env[] = {"SLURM_LABELIO", "1", "SLURM_OVERLAP", "0",
                              "SLURM_KILL_BAD_EXIT", "1", "SLURM_EXPORT_ENV", "NONE",
                              "SRUN_EXPORT_ENV", "ALL", "SLURM_NTASKS", "8", NULL};
    n = sl_slurmenv_inputs(sl_slurmenv_srun_inputs, fake_env, srun_env, &argv, NULL);
    assert_int_equal(n, 4);
    assert_string_equal(argv[0], "--label");
    assert_string_equal(argv[1], "--kill-on-bad-exit=1");
    assert_string_equal(argv[2], "--export=NONE");
    assert_string_equal(argv[3], "--export=ALL"); /* later wins */
    sl_slurmenv_argv_free(argv, n);

    /* Every node variable is one the allocation builder sets or the
     * node's own (the agent's CUDA_VISIBLE_DEVICES). */
    bool procid = false;
    for (const char *const *v = sl_slurmenv_node_vars; *v; v++)
        procid |= strcmp(*v, "SLURM_PROCID") == 0;
    assert_true(procid);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slurmenv_one_node_as_slurmd),
        cmocka_unit_test(test_slurmenv_nodes_sorted_counts_compressed),
        cmocka_unit_test(test_slurmenv_array),
        cmocka_unit_test(test_slurmenv_counts),
        cmocka_unit_test(test_slurmenv_inputs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
