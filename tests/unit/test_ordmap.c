/*
 * test_ordmap.c - values by ascending key (sluice/ordmap.h).
 *
 * The map is checked against a naive reference, an unordered array of
 * (key, value) pairs, on seeded random operations shaped like a
 * controller's jobs: ids that mostly ascend (a counter), bursts of ids
 * out of order (a start-up reading rows in any order), removals of the
 * oldest and of random entries (holes, then compaction), removals of
 * absent pairs, and walks from a random `after` compared with the
 * reference's keys above it, sorted.
 */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define NVALS 3000

typedef struct ref {
    uint64_t key[NVALS];
    int val[NVALS]; /* index into vals */
    size_t n;
} ref_t;

static int vals[NVALS]; /* values are addresses of these (never dereferenced) */

static bool ref_has(const ref_t *r, uint64_t key, int v) {
    for (size_t i = 0; i < r->n; i++)
        if (r->key[i] == key && r->val[i] == v) return true;
    return false;
}

static void ref_remove_at(ref_t *r, size_t i) {
    r->key[i] = r->key[--r->n];
    r->val[i] = r->val[r->n];
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The walk from `after` gives the reference's keys above it, ascending,
 * each with its own value. */
static void check_walk(sl_ordmap_t *m, const ref_t *r, uint64_t after, size_t max) {
    uint64_t *want = malloc((r->n + 1) * sizeof *want);
    assert_non_null(want);
    size_t nw = 0;
    for (size_t i = 0; i < r->n; i++)
        if (r->key[i] > after) want[nw++] = r->key[i];
    qsort(want, nw, sizeof *want, cmp_u64);
    size_t it = sl_ordmap_seek(m, after), got = 0;
    for (int *v; got < max && (v = sl_ordmap_next(m, &it)) != NULL; got++) {
        assert_true(got < nw);
        assert_true(ref_has(r, want[got], (int)(v - vals)));
    }
    assert_int_equal(got, nw < max ? nw : max);
    free(want);
    assert_int_equal(sl_ordmap_count(m), r->n);
}

static void run_seed(uint64_t seed) {
    sl_rng_t rng;
    sl_rng_seed(&rng, seed);
    ref_t *r = calloc(1, sizeof *r);
    assert_non_null(r);
    bool *used = calloc(NVALS, sizeof *used);
    assert_non_null(used);
    sl_ordmap_t m;
    sl_ordmap_init(&m);
    uint64_t next_id = 1 + sl_rng_below(&rng, 3);
    for (int step = 0; step < 8000; step++) {
        bool growing = (step / 2000) % 2 == 0;
        uint64_t op = sl_rng_below(&rng, 100);
        int v = (int)sl_rng_below(&rng, NVALS);
        if (op < (growing ? 60u : 25u) && r->n < NVALS && !used[v]) {
            /* Mostly the counter's next id; 1 in 10 an id from the past
             * that is not in the map (a row read back at start-up). */
            uint64_t key = next_id++;
            if (sl_rng_below(&rng, 10) == 0) {
                key = 1 + sl_rng_below(&rng, next_id);
                for (size_t i = 0; i < r->n; i++)
                    if (r->key[i] == key) key = 0;
                if (key == 0) continue;
            }
            sl_ordmap_add(&m, key, &vals[v]);
            used[v] = true;
            r->key[r->n] = key;
            r->val[r->n++] = v;
        } else if (op < 85 && r->n > 0) {
            /* The oldest (smallest key) half of the time, else any. */
            size_t i = (size_t)sl_rng_below(&rng, r->n);
            if (sl_rng_below(&rng, 2) == 0)
                for (size_t k = 0; k < r->n; k++)
                    if (r->key[k] < r->key[i]) i = k;
            uint64_t key = r->key[i];
            int w = r->val[i];
            assert_true(sl_ordmap_remove(&m, key, &vals[w]));
            assert_false(sl_ordmap_remove(&m, key, &vals[w])); /* gone: nothing changes */
            ref_remove_at(r, i);
            used[w] = false;
        } else if (op < 92) {
            /* Absent pairs: an unknown key, and a present key with another value. */
            uint64_t key = next_id + sl_rng_below(&rng, 5);
            assert_false(sl_ordmap_remove(&m, key, &vals[v]));
            if (r->n > 0) {
                size_t i = (size_t)sl_rng_below(&rng, r->n);
                if (r->val[i] != v) assert_false(sl_ordmap_remove(&m, r->key[i], &vals[v]));
            }
        }
        if (step % 16 == 0) {
            uint64_t after = sl_rng_below(&rng, 4) == 0 ? 0 : sl_rng_below(&rng, next_id + 2);
            check_walk(&m, r, after, 1 + (size_t)sl_rng_below(&rng, 200));
        }
        /* Holes never outnumber the values by more than the floor. */
        assert_true(m.holes <= sl_ordmap_count(&m) + 64);
    }
    check_walk(&m, r, 0, SIZE_MAX);
    check_walk(&m, r, UINT64_MAX, SIZE_MAX);
    while (r->n > 0) {
        assert_true(sl_ordmap_remove(&m, r->key[r->n - 1], &vals[r->val[r->n - 1]]));
        r->n--;
    }
    assert_int_equal(sl_ordmap_count(&m), 0);
    size_t it = sl_ordmap_seek(&m, 0);
    assert_null(sl_ordmap_next(&m, &it));
    sl_ordmap_fini(&m);
    assert_null(m.v);
    free(used);
    free(r);
}

static void test_ordmap_matches_naive_on_random_ops(void **state) {
    (void)state;
    for (uint64_t seed = 1; seed <= 40; seed++) run_seed(seed);
}

/* The controller's case: ids 1..N in order, a page from each `after`, the
 * first half removed, the rest still found from any id. */
static void test_ordmap_pages_of_ascending_ids(void **state) {
    (void)state;
    sl_ordmap_t m;
    sl_ordmap_init(&m);
    for (uint64_t id = 1; id <= 5000; id++) sl_ordmap_add(&m, id, &vals[id % NVALS]);
    assert_false(m.unsorted);
    size_t it = sl_ordmap_seek(&m, 4990);
    for (uint64_t id = 4991; id <= 5000; id++) assert_ptr_equal(sl_ordmap_next(&m, &it), &vals[id % NVALS]);
    assert_null(sl_ordmap_next(&m, &it));
    for (uint64_t id = 1; id <= 2500; id++) assert_true(sl_ordmap_remove(&m, id, &vals[id % NVALS]));
    assert_int_equal(sl_ordmap_count(&m), 2500);
    it = sl_ordmap_seek(&m, 7);
    assert_ptr_equal(sl_ordmap_next(&m, &it), &vals[2501 % NVALS]);
    sl_ordmap_fini(&m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_ordmap_matches_naive_on_random_ops, tu_teardown),
        cmocka_unit_test_teardown(test_ordmap_pages_of_ascending_ids, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
