/*
 * alloc.c - allocation that aborts on out-of-memory, with a live-block
 * counter that tests assert to be zero at teardown (libuv's
 * MAKE_VALGRIND_HAPPY, Redis sdsalloc.h). The counter is the core's only
 * process-wide state; it is a statistic, never an input to a decision.
 */
#include <stdlib.h>
#include <string.h>

#include "sluice/alloc.h"

static long live_blocks;

static void *oom(void) {
    abort(); /* a scheduler that cannot allocate cannot decide safely */
}

void *sl_xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) return oom();
    live_blocks++;
    return p;
}

void *sl_xcalloc(size_t nmemb, size_t size) {
    void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);
    if (!p) return oom();
    live_blocks++;
    return p;
}

void *sl_xrealloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (!q) return oom();
    if (!p) live_blocks++;
    return q;
}

char *sl_xstrdup(const char *s) {
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    char *d = sl_xmalloc(n);
    memcpy(d, s, n);
    return d;
}

void sl_free(void *p) {
    if (!p) return;
    live_blocks--;
    free(p);
}

long sl_alloc_live(void) {
    return live_blocks;
}
