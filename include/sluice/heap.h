/*
 * heap.h - the one binary heap of Sluice: an array min-heap of fixed-size
 * elements, header-only so that the hot users (the scheduler's tenant heads,
 * the cluster's per-class node order) compile to straight code.
 *
 * The heap is ordered by a `less` the caller passes with every call, in a
 * `const sl_heap_type_t` (element size, less, moved) and a context pointer,
 * as libuv's heap-inl.h passes its comparator. Because the type is a
 * constant at each call site and every function is static inline, the
 * compiler folds the element size and inlines `less` and `moved`: the heap
 * costs what a hand-written one costs.
 *
 * Position tracking. An element that must be found again (to remove it, or
 * to restore the order after its key changed) tells its owner where it is:
 * `moved`, when not NULL, is called with every element the heap stores and
 * the position it lands at, so the owner can keep the position inside the
 * element's object (intrusively: nothing is allocated per element beyond
 * the array). Positions change on every push, pop, remove and fix.
 *
 * Storage. The heap owns one array that grows by doubling (sl_xrealloc,
 * which aborts on out-of-memory), so no function here can fail. Elements
 * are copied in and out by value and must be at most SL_HEAP_ESIZE_MAX
 * bytes. Ties: `less` must be a strict weak order; elements that tie come
 * out in an order that depends on the operation sequence (use a total
 * order, such as one ending in a sequence number or id, where the order of
 * ties matters).
 *
 * Complexity: push, pop, remove and fix O(log n) calls of less; build O(n);
 * top, count and at O(1).
 */
#ifndef SLUICE_HEAP_H
#define SLUICE_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "sluice/alloc.h"

#define SL_HEAP_ESIZE_MAX 32

typedef struct sl_heap_type {
    size_t esize;                                             /* bytes per element */
    bool (*less)(void *ctx, const void *a, const void *b);    /* a before b */
    void (*moved)(void *ctx, const void *elem, size_t pos);   /* NULL: no tracking */
} sl_heap_type_t;

typedef struct sl_heap {
    unsigned char *v; /* n elements of esize bytes; owned */
    size_t n, cap;
} sl_heap_t;

/* An empty heap; allocates nothing. Can't fail. */
static inline void sl_heap_init(sl_heap_t *h) {
    h->v = NULL;
    h->n = h->cap = 0;
}

/* Frees the array (not anything the elements point to). Accepts a heap that
 * was only initialised. The heap is empty and usable again afterwards. */
static inline void sl_heap_fini(sl_heap_t *h) {
    sl_free(h->v);
    sl_heap_init(h);
}

/* Empties the heap, keeping its array for reuse. O(1). */
static inline void sl_heap_clear(sl_heap_t *h) {
    h->n = 0;
}

static inline size_t sl_heap_count(const sl_heap_t *h) {
    return h->n;
}

/* Element i (0 is the top). Valid until the next call that changes h. */
static inline void *sl_heap_at(const sl_heap_t *h, const sl_heap_type_t *ty, size_t i) {
    return h->v + i * ty->esize;
}

/* The least element, or NULL when empty. Valid until h changes. O(1). */
static inline void *sl_heap_top(const sl_heap_t *h) {
    return h->n ? h->v : NULL;
}

/* Makes room for at least n elements. Can't fail (aborts on OOM). */
static inline void sl_heap_reserve(sl_heap_t *h, const sl_heap_type_t *ty, size_t n) {
    if (n <= h->cap) return;
    size_t cap = h->cap ? h->cap : 8;
    while (cap < n) cap *= 2;
    h->v = (unsigned char *)sl_xrealloc(h->v, cap * ty->esize);
    h->cap = cap;
}

/* Stores e at position i and reports it. */
static inline void sl__heap_put(sl_heap_t *h, const sl_heap_type_t *ty, void *ctx, size_t i,
                                const void *e) {
    memcpy(h->v + i * ty->esize, e, ty->esize);
    if (ty->moved) ty->moved(ctx, h->v + i * ty->esize, i);
}

/* Moves e (not stored) up from hole i; returns its final position. */
static inline size_t sl__heap_up(sl_heap_t *h, const sl_heap_type_t *ty, void *ctx, size_t i,
                                 const void *e) {
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!ty->less(ctx, e, h->v + p * ty->esize)) break;
        sl__heap_put(h, ty, ctx, i, h->v + p * ty->esize);
        i = p;
    }
    sl__heap_put(h, ty, ctx, i, e);
    return i;
}

/* Moves e (not stored) down from hole i below its smaller children. */
static inline void sl__heap_down(sl_heap_t *h, const sl_heap_type_t *ty, void *ctx, size_t i,
                                 const void *e) {
    for (;;) {
        size_t m = 2 * i + 1;
        if (m >= h->n) break;
        if (m + 1 < h->n && ty->less(ctx, h->v + (m + 1) * ty->esize, h->v + m * ty->esize)) m++;
        if (!ty->less(ctx, h->v + m * ty->esize, e)) break;
        sl__heap_put(h, ty, ctx, i, h->v + m * ty->esize);
        i = m;
    }
    sl__heap_put(h, ty, ctx, i, e);
}

/* Adds a copy of e. O(log n); amortised O(1) allocation. */
static inline void sl_heap_push(sl_heap_t *h, const sl_heap_type_t *ty, void *ctx, const void *e) {
    if (h->n == h->cap) sl_heap_reserve(h, ty, h->n + 1);
    sl__heap_up(h, ty, ctx, h->n++, e);
}

/*
 * Restores the order around element i after its key changed (in place,
 * through sl_heap_at, or through what less reads). O(log n).
 */
static inline void sl_heap_fix(sl_heap_t *h, const sl_heap_type_t *ty, void *ctx, size_t i) {
    unsigned char e[SL_HEAP_ESIZE_MAX];
    memcpy(e, h->v + i * ty->esize, ty->esize);
    if (i > 0 && ty->less(ctx, e, h->v + (i - 1) / 2 * ty->esize)) sl__heap_up(h, ty, ctx, i, e);
    else sl__heap_down(h, ty, ctx, i, e);
}

/* Removes element i (copied to out unless out is NULL). O(log n). */
static inline void sl_heap_remove(sl_heap_t *h, const sl_heap_type_t *ty, void *ctx, size_t i,
                                  void *out) {
    if (out) memcpy(out, h->v + i * ty->esize, ty->esize);
    if (i == --h->n) return;
    unsigned char e[SL_HEAP_ESIZE_MAX];
    memcpy(e, h->v + h->n * ty->esize, ty->esize); /* the last element fills the hole */
    if (i > 0 && ty->less(ctx, e, h->v + (i - 1) / 2 * ty->esize)) sl__heap_up(h, ty, ctx, i, e);
    else sl__heap_down(h, ty, ctx, i, e);
}

/* Removes the least element into out (which may be NULL). The heap must not
 * be empty. O(log n). */
static inline void sl_heap_pop(sl_heap_t *h, const sl_heap_type_t *ty, void *ctx, void *out) {
    sl_heap_remove(h, ty, ctx, 0, out);
}

/* Adds a copy of e at the end without restoring the order: a batch of
 * appends is followed by sl_heap_build. Calls no moved. O(1) amortised. */
static inline void sl_heap_append(sl_heap_t *h, const sl_heap_type_t *ty, const void *e) {
    if (h->n == h->cap) sl_heap_reserve(h, ty, h->n + 1);
    memcpy(h->v + h->n++ * ty->esize, e, ty->esize);
}

/* Orders the whole array (Floyd's heap construction) and reports every
 * element's position. O(n). */
static inline void sl_heap_build(sl_heap_t *h, const sl_heap_type_t *ty, void *ctx) {
    unsigned char e[SL_HEAP_ESIZE_MAX];
    for (size_t i = h->n / 2; i-- > 0;) {
        memcpy(e, h->v + i * ty->esize, ty->esize);
        sl__heap_down(h, ty, ctx, i, e);
    }
    if (ty->moved)
        for (size_t i = h->n / 2; i < h->n; i++) ty->moved(ctx, h->v + i * ty->esize, i);
}

#endif
