/*
 * ordmap.c - sl_ordmap_t (include/sluice/ordmap.h, which states the
 * algorithm): appends, the one sort after adds out of order, removal by
 * binary search into a hole, and compaction once holes are the majority.
 */
#include "sluice/ordmap.h"

#include <stdlib.h>

#include "sluice/alloc.h"

#define MIN_CAP 64 /* slots once the map holds anything */

void sl_ordmap_init(sl_ordmap_t *m) {
    m->v = NULL;
    m->n = m->cap = m->holes = 0;
    m->unsorted = false;
}

void sl_ordmap_fini(sl_ordmap_t *m) {
    sl_free(m->v);
    sl_ordmap_init(m);
}

/* Drops the holes, keeping the order of the rest. O(n). */
static void compact(sl_ordmap_t *m) {
    size_t k = 0;
    for (size_t i = 0; i < m->n; i++)
        if (m->v[i].val) m->v[k++] = m->v[i];
    m->n = k;
    m->holes = 0;
}

static int cmp_slot(const void *a, const void *b) {
    uint64_t x = ((const sl_ordmap_slot_t *)a)->key, y = ((const sl_ordmap_slot_t *)b)->key;
    return x < y ? -1 : x > y;
}

static void sort_if_needed(sl_ordmap_t *m) {
    if (!m->unsorted) return;
    compact(m);
    qsort(m->v, m->n, sizeof *m->v, cmp_slot);
    m->unsorted = false;
}

void sl_ordmap_add(sl_ordmap_t *m, uint64_t key, void *val) {
    if (m->n == m->cap) {
        if (m->holes * 2 > m->n) {
            compact(m); /* reuse the holes' room before growing */
        } else {
            m->cap = m->cap ? 2 * m->cap : MIN_CAP;
            m->v = sl_xrealloc(m->v, m->cap * sizeof *m->v);
        }
    }
    if (m->n > 0 && key < m->v[m->n - 1].key) m->unsorted = true;
    m->v[m->n].key = key;
    m->v[m->n].val = val;
    m->n++;
}

/* The first slot whose key is >= key (n if none); the keys are sorted. */
static size_t lower_bound(const sl_ordmap_t *m, uint64_t key) {
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->v[mid].key < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

bool sl_ordmap_remove(sl_ordmap_t *m, uint64_t key, const void *val) {
    sort_if_needed(m);
    size_t i = lower_bound(m, key);
    while (i < m->n && m->v[i].key == key && m->v[i].val != val) i++;
    if (i == m->n || m->v[i].key != key) return false;
    m->v[i].val = NULL;
    m->holes++;
    if (m->holes == m->n)
        m->n = m->holes = 0;
    else if (m->n >= MIN_CAP && m->holes * 2 > m->n)
        compact(m);
    return true;
}

size_t sl_ordmap_seek(sl_ordmap_t *m, uint64_t after) {
    sort_if_needed(m);
    return after == UINT64_MAX ? m->n : lower_bound(m, after + 1);
}
