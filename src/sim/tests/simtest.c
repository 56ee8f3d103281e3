/* simtest.c - the scratch directory and file writer the sim tests share. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "sim.h"
#include "simtest.h"

/* One per test binary: the tests of a group run one after another. */
static char tmpdir[64];

int simtest_setup(void **state) {
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/test_sim.XXXXXX");
    assert_non_null(mkdtemp(tmpdir));
    return 0;
}

int simtest_teardown(void **state) {
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(sl_alloc_live(), 0);
    return 0;
}

const char *simtest_put(const char *name, const char *text, char *path, size_t len) {
    snprintf(path, len, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}
