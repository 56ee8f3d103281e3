/*
 * hash.c - the growing, shrinking and deleting half of sl_hash_t
 * (include/sluice/hash.h, which states the algorithm; lookups are inline
 * there). Linear probing keeps every probe run contiguous, which is what
 * backward-shift deletion relies on: after the hole is made, each later
 * entry of the run moves back into it unless its home lies cyclically in
 * (hole, its slot], where moving it would put it before its home.
 */
#include "sluice/hash.h"

#include "sluice/alloc.h"

static size_t home_of(const sl_hash_t *h, uint64_t key) {
    return (size_t)sl_mix64(key) & (h->cap - 1);
}

static void put_raw(sl_hash_t *h, uint64_t key, void *val) {
    size_t mask = h->cap - 1, i = home_of(h, key);
    while (h->tab[i].val) i = (i + 1) & mask;
    h->tab[i].key = key;
    h->tab[i].val = val;
}

/* Moves every entry to a table of cap slots, in the old slot order (so the
 * result depends on the call sequence only). O(old cap + new cap). */
static void resize(sl_hash_t *h, size_t cap) {
    sl_hash_entry_t *old = h->tab;
    size_t ocap = h->cap;
    h->tab = sl_xcalloc(cap, sizeof *h->tab);
    h->cap = cap;
    for (size_t i = 0; i < ocap; i++)
        if (old[i].val) put_raw(h, old[i].key, old[i].val);
    sl_free(old);
}

void sl_hash_init(sl_hash_t *h) {
    h->tab = NULL;
    h->cap = h->n = 0;
}

void sl_hash_fini(sl_hash_t *h) {
    sl_free(h->tab);
    sl_hash_init(h);
}

void sl_hash_add(sl_hash_t *h, uint64_t key, void *val) {
    if ((h->n + 1) * 2 > h->cap) resize(h, h->cap ? h->cap * 2 : SL_HASH_MIN_CAP);
    put_raw(h, key, val);
    h->n++;
}

bool sl_hash_remove(sl_hash_t *h, uint64_t key, const void *val) {
    if (h->n == 0) return false;
    size_t mask = h->cap - 1, hole = home_of(h, key);
    for (;; hole = (hole + 1) & mask) {
        if (!h->tab[hole].val) return false;
        if (h->tab[hole].val == val && h->tab[hole].key == key) break;
    }
    for (size_t k = (hole + 1) & mask; h->tab[k].val; k = (k + 1) & mask) {
        size_t home = home_of(h, h->tab[k].key);
        bool stays = hole <= k ? (home > hole && home <= k) : (home > hole || home <= k);
        if (!stays) {
            h->tab[hole] = h->tab[k];
            hole = k;
        }
    }
    h->tab[hole].val = NULL;
    h->tab[hole].key = 0;
    h->n--;
    if (h->cap > SL_HASH_MIN_CAP && h->n * 8 < h->cap) resize(h, h->cap / 2);
    return true;
}
