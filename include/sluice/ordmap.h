/*
 * ordmap.h - values in ascending order of 64-bit keys, for keys that mostly
 * arrive in ascending order (ids handed out by a counter).
 *
 * Workload: a controller's jobs by id. Submissions append (each id is above
 * every earlier one); a start-up registers its rows in any order, once;
 * jobs leave in roughly the order they came (the oldest finished first);
 * and a listing walks a page of ids from some id on, which must cost the
 * page, not a sort of everything.
 *
 * Algorithm: one array of (key, value) slots. An add appends; a key below
 * the last slot's key marks the array unsorted, and the next seek or remove
 * sorts it (dropping the holes first), so a start-up in any order costs one
 * O(n log n) sort. A remove finds its slot by binary search and leaves a
 * hole: the value becomes NULL and the key stays, so the keys stay sorted
 * across holes and binary search needs no special case. Once holes are more
 * than half the slots the array is compacted, O(n), so removals cost O(1)
 * amortised besides their search and a walk skips at most as many holes as
 * it returns values (plus a constant).
 *
 * Keys are meant to be unique (a map); remove compares the value by address
 * among the slots of its key. Ownership: the map owns its array only;
 * values are borrowed, never freed or dereferenced. Out-of-memory aborts
 * (sl_xrealloc), so no function here fails.
 */
#ifndef SLUICE_ORDMAP_H
#define SLUICE_ORDMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sl_ordmap_slot {
    uint64_t key;
    void *val; /* NULL: a hole left by a remove */
} sl_ordmap_slot_t;

typedef struct sl_ordmap {
    sl_ordmap_slot_t *v; /* n slots in use of cap */
    size_t n, cap;
    size_t holes;        /* slots of v[0..n) whose val is NULL */
    bool unsorted;       /* an add came below the last slot's key */
} sl_ordmap_t;

/* An empty map; allocates nothing. Can't fail. */
void sl_ordmap_init(sl_ordmap_t *m);

/* Frees the array (never the values); m is then empty, as after init. */
void sl_ordmap_fini(sl_ordmap_t *m);

/* Adds (key, val); val must not be NULL. O(1) amortised; a key below the
 * last one makes the next seek or remove sort, O(n log n) once. */
void sl_ordmap_add(sl_ordmap_t *m, uint64_t key, void *val);

/* Removes the entry (key, val), the value compared by address. Returns
 * false, changing nothing but the order's internal layout, if there is
 * none. O(log n) amortised (after any pending sort). */
bool sl_ordmap_remove(sl_ordmap_t *m, uint64_t key, const void *val);

/* The position from which sl_ordmap_next returns the values whose keys are
 * above `after`, in ascending key order (after 0 gives every value but a
 * key 0's). Sorts first if an add came out of order. O(log n) otherwise.
 * Any add or remove invalidates the position. */
size_t sl_ordmap_seek(sl_ordmap_t *m, uint64_t after);

/* Number of values. O(1). */
static inline size_t sl_ordmap_count(const sl_ordmap_t *m) {
    return m->n - m->holes;
}

/* The next value from *it on (skipping holes), advancing *it past it; NULL
 * at the end. The map must not change during the walk. O(1) amortised. */
static inline void *sl_ordmap_next(const sl_ordmap_t *m, size_t *it) {
    while (*it < m->n) {
        void *v = m->v[(*it)++].val;
        if (v) return v;
    }
    return NULL;
}

#endif
