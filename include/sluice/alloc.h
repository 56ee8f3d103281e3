/*
 * alloc.h - the core's allocator.
 *
 * sl_xmalloc and friends abort on out-of-memory (as Redis, Slurm and h2o do):
 * a scheduler that cannot allocate cannot make a safe decision. All core
 * allocations go through a hook so that tests can count live blocks and
 * assert zero at teardown (sdsalloc.h). The hook is process state owned by
 * the program, not by the core: the core itself keeps no globals other than
 * this one counter, which tests read.
 */
#ifndef SLUICE_ALLOC_H
#define SLUICE_ALLOC_H

#include <stddef.h>

void *sl_xmalloc(size_t n);             /* aborts on failure; n == 0 gives a unique pointer */
void *sl_xcalloc(size_t nmemb, size_t size); /* zeroed; aborts on failure or overflow */
void *sl_xrealloc(void *p, size_t n);   /* aborts on failure */
char *sl_xstrdup(const char *s);        /* aborts on failure; NULL in gives NULL out */
void sl_free(void *p);                  /* accepts NULL */

/* Number of blocks currently allocated through the functions above. */
long sl_alloc_live(void);

#endif
