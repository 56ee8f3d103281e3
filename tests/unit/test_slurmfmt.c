/*
 * test_slurmfmt.c - Slurm's output formats (src/common/slurmfmt.h) and
 * host lists compressed (sl_hostlist_format in src/common/hostlist.h):
 * tables of formats with the line they give, of refused formats with the
 * message, of elapsed times, and of name sets with their compressed list,
 * each read back by sl_hostlist_expand to the same sorted names.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostlist.h"
#include "slurmfmt.h"
#include "sluice/error.h"
#include "testutil.h"

/* The value of each field letter in the table below: the letter twice. */
static void render(const char *fmt, char *out, size_t len) {
    sl_slurmfmt_item_t it[SL_SLURMFMT_MAX];
    size_t n;
    char err[200];
    assert_int_equal(sl_slurmfmt_parse(fmt, "ijTMRN", it, SL_SLURMFMT_MAX, &n, err, sizeof err), 0);
    out[0] = '\0';
    for (size_t k = 0; k < n; k++) {
        char v[8] = {it[k].field, it[k].field, 0}, cell[1100];
        if (it[k].field == 'j')
            snprintf(v, sizeof v, "train");
        sl_slurmfmt_cell(&it[k], v, cell, sizeof cell);
        snprintf(out + strlen(out), len - strlen(out), "%s", cell);
    }
}

static void test_slurmfmt_formats_fields(void **state) {
    (void)state;
    static const struct { const char *fmt, *line; } cases[] = {
        {"%i %T", "ii TT"},
        {"%.5i|%-5i|%5i", "   ii|ii   |ii   "},
        {"%.3j %2j", "tra tr"},
        {"JOB=%i 100%% %N", "JOB=ii 100% NN"},
        {"%j", "train"},
        {"", ""},
        {"plain", "plain"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char got[256];
        render(cases[i].fmt, got, sizeof got);
        if (strcmp(got, cases[i].line) != 0)
            fail_msg("%s: \"%s\", not \"%s\"", cases[i].fmt, got, cases[i].line);
    }
}

static void test_slurmfmt_refuses_naming_the_field(void **state) {
    (void)state;
    static const struct { const char *fmt, *err; } bad[] = {
        {"%i %q", "%q: not a field Sluice has (fields: ijTMRN)"},
        {"%i %", "\"%\": a % without its field letter at the end"},
        {"%.12", "\"%.12\": a % without its field letter at the end"},
        {"%5000i", "%5000...: a width over 1000"},
        {"%.5!", "%!: not a field Sluice has (fields: ijTMRN)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sl_slurmfmt_item_t it[SL_SLURMFMT_MAX];
        size_t n = 9;
        char err[200] = "";
        int rc = sl_slurmfmt_parse(bad[i].fmt, "ijTMRN", it, SL_SLURMFMT_MAX, &n, err, sizeof err);
        if (rc != SL_EINVAL || strcmp(err, bad[i].err) != 0 || n != 0)
            fail_msg("%s: %d \"%s\"", bad[i].fmt, rc, err);
    }
    sl_slurmfmt_item_t it[2];
    size_t n;
    char err[200];
    assert_int_equal(sl_slurmfmt_parse("%i %i", "i", it, 2, &n, err, sizeof err), SL_EINVAL);
    assert_string_equal(err, "more than 2 fields");
}

static void test_slurmfmt_elapsed_as_slurm(void **state) {
    (void)state;
    static const struct { long long s; const char *text; } cases[] = {
        {0, "0:00"}, {-5, "0:00"}, {59, "0:59"}, {61, "1:01"}, {3599, "59:59"},
        {3600, "1:00:00"}, {86399, "23:59:59"}, {86400, "1-00:00:00"}, {90061, "1-01:01:01"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[32];
        sl_slurmfmt_elapsed(cases[i].s, buf, sizeof buf);
        assert_string_equal(buf, cases[i].text);
    }
}

static void test_hostlist_compresses_and_reads_back(void **state) {
    (void)state;
    static const struct { const char *names, *list; } cases[] = {
        {"n1", "n1"},
        {"n2 n1 n3 n5", "n[1-3,5]"},
        {"gpu08 login gpu07 gpu10", "gpu[07-08,10],login"},
        {"b a", "a,b"},
        {"n1 n1 n2", "n[1-2]"},
        {"x9 x10 x011", "x9,x10,x011"},
        {"node", "node"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[256], words[256], *v[16];
        size_t n = 0;
        snprintf(words, sizeof words, "%s", cases[i].names);
        for (char *s = NULL, *w = strtok_r(words, " ", &s); w; w = strtok_r(NULL, " ", &s))
            v[n++] = w;
        size_t need = sl_hostlist_format((const char *const *)v, n, buf, sizeof buf);
        assert_int_equal(need, strlen(cases[i].list));
        assert_string_equal(buf, cases[i].list);
        /* Cut short, it still says what it needed. */
        char small[3];
        assert_int_equal(sl_hostlist_format((const char *const *)v, n, small, sizeof small), need);
        char **back, err[200];
        size_t nb;
        assert_int_equal(sl_hostlist_expand(buf, &back, &nb, err, sizeof err), 0);
        char again[256];
        sl_hostlist_format((const char *const *)back, nb, again, sizeof again);
        assert_string_equal(again, buf);
        sl_hostlist_free(back, nb);
    }
}

/* squeue -O's long fields into the short format that prints the same. */
static void test_slurmfmt_long_formats(void **state) {
    (void)state;
    static const sl_slurmfmt_name_t names[] = {{"JobID", 'i'}, {"Name", 'j'}, {"State", 'T'},
                                               {"StateCompact", 't'}};
    static const struct { const char *spec, *fmt; } cases[] = {
        {"JobID,Name", "%-20i%-20j"},
        {"jobid:10,name:.30,state", "%-10i%.30j%-20T"},
        {"JobID:8|,StateCompact:.3 100%", "%-8i|%.3t 100%%"},
        {"State:", "%-20T"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char out[200], err[200];
        assert_int_equal(sl_slurmfmt_from_long(cases[k].spec, names, 4, out, sizeof out, err,
                                               sizeof err), 0);
        assert_string_equal(out, cases[k].fmt);
    }
    char out[200], err[300];
    assert_int_equal(sl_slurmfmt_from_long("JobID,Bogus", names, 4, out, sizeof out, err,
                                           sizeof err), SL_EINVAL);
    assert_string_equal(err, "Bogus: no such field (fields: JobID, Name, State, StateCompact)");
    assert_int_equal(sl_slurmfmt_from_long("Name:5000", names, 4, out, sizeof out, err,
                                           sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, "over 1000"));
    assert_int_equal(sl_slurmfmt_from_long("", names, 4, out, sizeof out, err, sizeof err),
                     SL_EINVAL);
    char small[6];
    assert_int_equal(sl_slurmfmt_from_long("JobID,Name", names, 4, small, sizeof small, err,
                                           sizeof err), SL_EINVAL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_slurmfmt_formats_fields, tu_teardown),
        cmocka_unit_test_teardown(test_slurmfmt_refuses_naming_the_field, tu_teardown),
        cmocka_unit_test_teardown(test_slurmfmt_elapsed_as_slurm, tu_teardown),
        cmocka_unit_test_teardown(test_slurmfmt_long_formats, tu_teardown),
        cmocka_unit_test_teardown(test_hostlist_compresses_and_reads_back, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
