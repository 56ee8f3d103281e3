/*
 * hash.h - the one hash table and the one 64-bit mixer of Sluice.
 *
 * sl_mix64 is splitmix64's output function (Stafford's "Mix13" variant of
 * the murmur3 finaliser): a bijection of 64 bits in which every input bit
 * flips each output bit with probability about 1/2. Everything that needs
 * a well-spread 64-bit value (table homes, treap priorities, the node order
 * key, the RNG's seeding) uses it. sl_hash_str is 64-bit FNV-1a of a string.
 *
 * sl_hash_t maps 64-bit keys to non-NULL pointers: open addressing with
 * linear probing from the home slot sl_mix64(key) & (cap - 1), entries of
 * (key, value) side by side so a probe never dereferences a value. The load
 * factor stays at most 1/2 (the table doubles before an add would pass it)
 * and at least 1/8 once it has grown past SL_HASH_MIN_CAP (it halves after
 * a remove would go under); deletion shifts later entries of the probe run
 * back (Knuth 6.4, Algorithm R), so there are no tombstones and lookups
 * never slow down with churn. Expected cost: find O(1), add and remove O(1)
 * amortised; a resize is O(cap). Everything is a function of the sequence
 * of calls (no addresses or randomness feed the homes), so iteration order
 * is reproducible.
 *
 * Keys may repeat: sl_hash_add never looks for an equal key, and
 * sl_hash_find_next walks every entry of one key. A map with unique keys
 * (jobs by id) calls sl_hash_find before sl_hash_add; a table keyed by a
 * hash of something larger (a string, a node state) stores the hash as the
 * key and compares the real thing on each candidate.
 *
 * Ownership: the table owns its array only. Values are borrowed: the table
 * never frees, copies or dereferences them, and a value must stay valid (or
 * be removed) for as long as the caller uses what find returns.
 * Out-of-memory aborts (sl_xcalloc), so no function here fails.
 */
#ifndef SLUICE_HASH_H
#define SLUICE_HASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Stafford's Mix13 (splitmix64's finaliser). A bijection. O(1). */
static inline uint64_t sl_mix64(uint64_t x) {
    x ^= x >> 30;
    x *= UINT64_C(0xbf58476d1ce4e5b9);
    x ^= x >> 27;
    x *= UINT64_C(0x94d049bb133111eb);
    x ^= x >> 31;
    return x;
}

/* 64-bit FNV-1a of a NUL-terminated string. O(length). */
static inline uint64_t sl_hash_str(const char *s) {
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (; *s; s++) h = (h ^ (unsigned char)*s) * UINT64_C(0x100000001b3);
    return h;
}

#define SL_HASH_MIN_CAP 64 /* slots once the table holds anything */

typedef struct sl_hash_entry {
    uint64_t key;
    void *val; /* NULL: the slot is empty */
} sl_hash_entry_t;

typedef struct sl_hash {
    sl_hash_entry_t *tab; /* cap slots (a power of two), or NULL while cap is 0 */
    size_t cap, n;
} sl_hash_t;

/* An empty table; allocates nothing. Can't fail. */
void sl_hash_init(sl_hash_t *h);

/* Frees the table's array (never the values); h is then empty, as after
 * sl_hash_init. */
void sl_hash_fini(sl_hash_t *h);

/* Adds (key, val); val must not be NULL. An entry with an equal key is
 * kept (see above). O(1) amortised expected. */
void sl_hash_add(sl_hash_t *h, uint64_t key, void *val);

/* Removes the entry (key, val): the value compared by address. Returns
 * false, changing nothing, if there is none. O(1) amortised expected. */
bool sl_hash_remove(sl_hash_t *h, uint64_t key, const void *val);

/* Number of entries. O(1). */
static inline size_t sl_hash_count(const sl_hash_t *h) {
    return h->n;
}

/*
 * The entries of one key: *it starts at 0; each call returns the next value
 * stored under key, or NULL after the last. Any add or remove invalidates
 * the walk. O(1) expected per call.
 */
static inline void *sl_hash_find_next(const sl_hash_t *h, uint64_t key, size_t *it) {
    if (h->n == 0) return NULL;
    size_t mask = h->cap - 1;
    /* *it counts the slots already probed, so that 0 means "from home". */
    for (size_t i = (size_t)(sl_mix64(key) + *it) & mask;; i = (i + 1) & mask) {
        const sl_hash_entry_t *e = &h->tab[i];
        if (!e->val) return NULL;
        ++*it;
        if (e->key == key) return e->val;
    }
}

/* The first value stored under key, or NULL. O(1) expected. */
static inline void *sl_hash_find(const sl_hash_t *h, uint64_t key) {
    size_t it = 0;
    return sl_hash_find_next(h, key, &it);
}

/*
 * Iteration over every entry in slot order: *it starts at 0; returns the
 * next entry or NULL at the end. The table must not change during the
 * walk. O(cap) for a whole walk.
 */
static inline const sl_hash_entry_t *sl_hash_next(const sl_hash_t *h, size_t *it) {
    while (*it < h->cap) {
        const sl_hash_entry_t *e = &h->tab[(*it)++];
        if (e->val) return e;
    }
    return NULL;
}

#endif
