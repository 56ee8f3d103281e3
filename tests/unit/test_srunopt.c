/*
 * test_srunopt.c - srun's and salloc's command line (src/common/srunopt.h)
 * and Slurm's host lists read back into names (src/common/hostlist.h):
 * tables of accepted command lines with what each sets, of refused ones
 * with the message naming the option, of time texts, and of host lists
 * with their names and the refused ones with why.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostlist.h"
#include "srunopt.h"
#include "sluice/error.h"
#include "testutil.h"

#define MAXW 24

static int split(const char *line, char **w) {
    static char buf[MAXW][128];
    int n = 0;
    for (const char *p = line; *p && n < MAXW;) {
        while (*p == ' ')
            p++;
        size_t l = strcspn(p, " ");
        if (l == 0)
            break;
        snprintf(buf[n], sizeof buf[n], "%.*s", (int)l, p);
        w[n] = buf[n];
        n++;
        p += l;
    }
    return n;
}

static void test_srunopt_accepts_slurms_forms(void **state) {
    (void)state;
    char *w[MAXW], err[256];
    sl_srun_opts_t o;
    int n = split("-n4 -N 2 --ntasks-per-node=2 -c 3 --gpus-per-task=a100:1 -l -K hostname -n 9", w);
    assert_int_equal(sl_srun_opts_parse("srun", n, w, &o, err, sizeof err), 0);
    assert_int_equal(o.ntasks, 4);
    assert_int_equal(o.nodes, 2);
    assert_int_equal(o.per_node, 2);
    assert_int_equal(o.cpus, 3);
    assert_int_equal(o.gpus, 1);
    assert_true(o.label && o.kill_bad && !o.overlap);
    assert_int_equal(o.argc, 3); /* options after the command are the command's */
    assert_string_equal(o.argv[0], "hostname");
    assert_string_equal(o.argv[2], "9");
    n = split("--export=NONE -o out-%t -e err --overlap --exact --mpi=none --cpu-bind=none "
              "-w n[1-2] --jobid 12 -t 1-02:03 --kill-on-bad-exit=0 true", w);
    assert_int_equal(sl_srun_opts_parse("srun", n, w, &o, err, sizeof err), 0);
    assert_string_equal(o.export_, "NONE");
    assert_string_equal(o.output, "out-%t");
    assert_string_equal(o.error, "err");
    assert_string_equal(o.nodelist, "n[1-2]");
    assert_true(o.overlap && !o.kill_bad);
    assert_int_equal(o.jobid, 12);
    assert_int_equal(o.time_s, 86400 + 2 * 3600 + 3 * 60);
    assert_int_equal(o.argc, 1);
    n = split("--help", w);
    assert_int_equal(sl_srun_opts_parse("salloc", n, w, &o, err, sizeof err), 0);
    assert_true(o.help);
    assert_int_equal(o.argc, 0);
}

static void test_srunopt_refuses_naming_the_option(void **state) {
    (void)state;
    static const struct { const char *line, *err; } cases[] = {
        {"--bogus x", "--bogus is not supported (see srun --help)"},
        {"-X x", "-X is not supported (see srun --help)"},
        {"-n 0 x", "--ntasks=0: must be a whole number from 1 to 100000"},
        {"-n two x", "--ntasks=two: must be a whole number from 1 to 100000"},
        {"-N 2-4 x", "--nodes=2-4: a range of nodes is not supported; give one number"},
        {"--ntasks", "--ntasks needs a value"},
        {"--label=yes x", "--label takes no value"},
        {"--mpi=pmi2 x", "--mpi=pmi2 is not supported: none (the default) or pmix"},
        {"-t soon x", "--time=soon: not a time (M, M:S, H:M:S, D-H, D-H:M, D-H:M:S)"},
        {"--kill-on-bad-exit=2 x", "--kill-on-bad-exit=2: 0 or 1"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *w[MAXW], err[256] = "";
        sl_srun_opts_t o;
        int n = split(cases[i].line, w);
        int rc = sl_srun_opts_parse("srun", n, w, &o, err, sizeof err);
        if (rc != SL_EINVAL || strncmp(err, cases[i].err, strlen(cases[i].err)) != 0)
            fail_msg("%s: %d %s", cases[i].line, rc, err);
    }
}

static void test_srunopt_time_forms(void **state) {
    (void)state;
    static const struct { const char *t; long long s; } ok[] = {
        {"5", 300}, {"5:30", 330}, {"1:02:03", 3723}, {"2-3", 2 * 86400 + 3 * 3600},
        {"2-3:04", 2 * 86400 + 3 * 3600 + 240}, {"0-0:0:7", 7}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        long long s = -1;
        assert_int_equal(sl_srun_time_parse(ok[i].t, &s), 0);
        assert_int_equal(s, ok[i].s);
    }
    static const char *const bad[] = {"", "x", "1:", "-3", "1:2:3:4", "1-x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        long long s;
        if (sl_srun_time_parse(bad[i], &s) != SL_EINVAL)
            fail_msg("%s accepted", bad[i]);
    }
}

static void test_hostlist_expands_slurms_lists(void **state) {
    (void)state;
    static const struct { const char *list, *names; } cases[] = {
        {"n1", "n1"},
        {"n1,n2", "n1 n2"},
        {"n[1-3,5]", "n1 n2 n3 n5"},
        {"gpu[07-08,10],login", "gpu07 gpu08 gpu10 login"},
        {"a[1-2]-ib,b", "a1-ib a2-ib b"},
        {"x[009-011]", "x009 x010 x011"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char **names, err[200], got[256] = "";
        size_t n;
        assert_int_equal(sl_hostlist_expand(cases[i].list, &names, &n, err, sizeof err), 0);
        for (size_t k = 0; k < n; k++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", k ? " " : "", names[k]);
        assert_string_equal(got, cases[i].names);
        sl_hostlist_free(names, n);
    }
    static const struct { const char *list, *err; } bad[] = {
        {"n[1-3", "n[1-3: a [ without its ]"},
        {"n[3-1]", "n[3-1]: a range must not go down"},
        {"n[a]", "n[a]: [a] is not a number or a range A-B"},
        {"n1,,n2", "an empty name"},
        {"n[0-70000]", "more than 65536 names"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char **names = (char **)1, err[200] = "";
        size_t n = 7;
        int rc = sl_hostlist_expand(bad[i].list, &names, &n, err, sizeof err);
        if (rc != SL_EINVAL || strcmp(err, bad[i].err) != 0 || names != NULL || n != 0)
            fail_msg("%s: %d %s", bad[i].list, rc, err);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_srunopt_accepts_slurms_forms, tu_teardown),
        cmocka_unit_test_teardown(test_srunopt_refuses_naming_the_option, tu_teardown),
        cmocka_unit_test_teardown(test_srunopt_time_forms, tu_teardown),
        cmocka_unit_test_teardown(test_hostlist_expands_slurms_lists, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
