/*
 * simtest.h - fixtures shared by the simulator's unit tests: a scratch
 * directory made for the whole group and removed after it, and a writer for
 * small input files in it. Include after <cmocka.h>'s prerequisites.
 */
#ifndef SLUICE_SIMTEST_H
#define SLUICE_SIMTEST_H

#include <stddef.h>

/* Group setup for cmocka_run_group_tests: makes a fresh directory under
 * /tmp; a failure fails the group. */
int simtest_setup(void **state);

/* Group teardown: removes the directory and asserts that every block the
 * core allocated has been freed. */
int simtest_teardown(void **state);

/* Writes text to <scratch dir>/name and returns its path, which it builds
 * in the caller's path[len]; asserts the file could be written. */
const char *simtest_put(const char *name, const char *text, char *path, size_t len);

#endif
