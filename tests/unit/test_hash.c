/*
 * test_hash.c - the core's hash table and mixer (sluice/hash.h).
 *
 * The table is checked against a naive reference, an unordered array of
 * (key, value) pairs, on seeded random operations: adds (with repeated keys
 * and keys that collide in the low bits), removals of present and absent
 * pairs, finds of every entry of a key, and whole-table iteration. Key
 * ranges are small so that probe runs are long and backward-shift deletion
 * meets every case, and the table grows and shrinks on the way. The mixer
 * and the string hash are pinned to published values (splitmix64's first
 * output for seed 0, FNV-1a's test vectors), so the order they give every
 * user is the same across changes.
 */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define NVALS 4096

typedef struct ref {
    uint64_t key[NVALS];
    int val[NVALS];   /* index into vals */
    size_t n;
} ref_t;

static int vals[NVALS]; /* values are addresses of these (never dereferenced) */

static size_t ref_count_of(const ref_t *r, uint64_t key) {
    size_t c = 0;
    for (size_t i = 0; i < r->n; i++) c += r->key[i] == key;
    return c;
}

static bool ref_has(const ref_t *r, uint64_t key, int v) {
    for (size_t i = 0; i < r->n; i++)
        if (r->key[i] == key && r->val[i] == v) return true;
    return false;
}

static void ref_remove(ref_t *r, uint64_t key, int v) {
    for (size_t i = 0; i < r->n; i++) {
        if (r->key[i] == key && r->val[i] == v) {
            r->key[i] = r->key[--r->n];
            r->val[i] = r->val[r->n];
            return;
        }
    }
    fail();
}

static uint64_t random_key(sl_rng_t *rng, uint64_t range) {
    uint64_t k = sl_rng_below(rng, range);
    /* Some keys differ only in high bits: equal homes before mixing. */
    return sl_rng_below(rng, 4) == 0 ? k << 40 : k;
}

/* Every entry of key, through find_next, against the reference. */
static void check_key(const sl_hash_t *h, const ref_t *r, uint64_t key) {
    size_t it = 0, found = 0;
    for (int *v; (v = sl_hash_find_next(h, key, &it));) {
        assert_true(ref_has(r, key, (int)(v - vals)));
        found++;
    }
    assert_int_equal(found, ref_count_of(r, key));
    void *first = sl_hash_find(h, key);
    assert_true((first != NULL) == (found > 0));
}

/* Whole-table iteration visits each reference pair exactly once. */
static void check_all(const sl_hash_t *h, const ref_t *r) {
    assert_int_equal(sl_hash_count(h), r->n);
    assert_true(h->cap == 0 || (h->cap & (h->cap - 1)) == 0);
    assert_true(2 * r->n <= h->cap || h->cap == 0);
    size_t it = 0, seen = 0;
    for (const sl_hash_entry_t *e; (e = sl_hash_next(h, &it));) {
        assert_true(ref_has(r, e->key, (int)((int *)e->val - vals)));
        seen++;
    }
    assert_int_equal(seen, r->n);
}

static void run_seed(uint64_t seed) {
    sl_rng_t rng;
    sl_rng_seed(&rng, seed);
    ref_t *r = calloc(1, sizeof *r);
    assert_non_null(r);
    sl_hash_t h;
    sl_hash_init(&h);
    uint64_t range = 1 + sl_rng_below(&rng, seed % 2 ? 50 : 5000);
    int next_val = 0;
    for (int step = 0; step < 6000; step++) {
        /* Phases: mostly adds, then mostly removes, so the table grows and shrinks. */
        bool growing = (step / 1500) % 2 == 0;
        uint64_t op = sl_rng_below(&rng, 100);
        if (op < (growing ? 55u : 20u) && r->n < NVALS && next_val < NVALS) {
            uint64_t key = random_key(&rng, range);
            int v = next_val++;
            sl_hash_add(&h, key, &vals[v]);
            r->key[r->n] = key;
            r->val[r->n++] = v;
        } else if (op < 85 && r->n > 0) {
            size_t i = (size_t)sl_rng_below(&rng, r->n);
            uint64_t key = r->key[i];
            int v = r->val[i];
            assert_true(sl_hash_remove(&h, key, &vals[v]));
            ref_remove(r, key, v);
            assert_false(sl_hash_remove(&h, key, &vals[v])); /* gone: nothing changes */
        } else if (op < 90) {
            /* A pair that is not there: a present key with another value. */
            uint64_t key = random_key(&rng, range);
            int v = (int)sl_rng_below(&rng, NVALS);
            if (!ref_has(r, key, v)) assert_false(sl_hash_remove(&h, key, &vals[v]));
        }
        check_key(&h, r, random_key(&rng, range));
        if (r->n > 0) check_key(&h, r, r->key[sl_rng_below(&rng, r->n)]);
        if (step % 64 == 0) check_all(&h, r);
        if (next_val == NVALS && r->n == 0) next_val = 0; /* values may be reused once free */
    }
    check_all(&h, r);
    /* Shrinking: emptied below 1/8, the table is back near its floor. */
    while (r->n > 0) {
        assert_true(sl_hash_remove(&h, r->key[r->n - 1], &vals[r->val[r->n - 1]]));
        r->n--;
    }
    assert_int_equal(sl_hash_count(&h), 0);
    assert_true(h.cap <= SL_HASH_MIN_CAP);
    sl_hash_fini(&h);
    assert_null(h.tab);
    free(r);
}

static void test_hash_matches_naive_on_random_ops(void **state) {
    (void)state;
    for (uint64_t seed = 1; seed <= 24; seed++) run_seed(seed);
}

/* A unique-key map, as the scheduler and the controller use it: ids in,
 * found, removed, found no more; an empty table answers without a table. */
static void test_hash_unique_map(void **state) {
    (void)state;
    sl_hash_t h;
    sl_hash_init(&h);
    assert_null(sl_hash_find(&h, 1));
    assert_false(sl_hash_remove(&h, 1, &vals[1]));
    for (uint64_t id = 1; id <= 3000; id++) {
        assert_null(sl_hash_find(&h, id));
        sl_hash_add(&h, id, &vals[id]);
    }
    for (uint64_t id = 1; id <= 3000; id++) assert_ptr_equal(sl_hash_find(&h, id), &vals[id]);
    for (uint64_t id = 2; id <= 3000; id += 2) assert_true(sl_hash_remove(&h, id, &vals[id]));
    for (uint64_t id = 1; id <= 3000; id++)
        assert_ptr_equal(sl_hash_find(&h, id), id % 2 ? (void *)&vals[id] : NULL);
    assert_int_equal(sl_hash_count(&h), 1500);
    sl_hash_fini(&h);
}

static void test_hash_mixer_and_string_hash_pinned(void **state) {
    (void)state;
    /* splitmix64 seeded with 0: first output is mix(0 + golden gamma). */
    assert_true(sl_mix64(UINT64_C(0x9e3779b97f4a7c15)) == UINT64_C(0xe220a8397b1dcdaf));
    assert_true(sl_mix64(0) == 0); /* a bijection fixing 0 */
    /* FNV-1a 64 test vectors. */
    assert_true(sl_hash_str("") == UINT64_C(0xcbf29ce484222325));
    assert_true(sl_hash_str("a") == UINT64_C(0xaf63dc4c8601ec8c));
    assert_true(sl_hash_str("foobar") == UINT64_C(0x85944171f73967e8));
    /* The RNG is seeded through the same mixer (rng.h). */
    sl_rng_t r;
    sl_rng_seed(&r, 0);
    assert_true(r.s[0] == UINT64_C(0xe220a8397b1dcdaf));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_hash_matches_naive_on_random_ops, tu_teardown),
        cmocka_unit_test_teardown(test_hash_unique_map, tu_teardown),
        cmocka_unit_test_teardown(test_hash_mixer_and_string_hash_pinned, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
