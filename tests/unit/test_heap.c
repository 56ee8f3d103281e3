/*
 * test_heap.c - the core's binary heap (sluice/heap.h), checked against a
 * naive reference on seeded random operations: the reference is an
 * unordered array whose least element is found by a linear scan. Elements
 * are items with a key and an id (a total order), and each item tracks its
 * position through `moved`, so removing an arbitrary item and re-keying an
 * item in place are exercised as the cluster's node order uses them. After
 * every operation the heap property and every tracked position are checked.
 */
#include <string.h>

#include "testutil.h"

#define NITEMS 256

typedef struct item {
    uint32_t key;
    uint32_t id;
} item_t;

typedef struct world {
    size_t pos[NITEMS];  /* where the heap says item id is */
    bool in[NITEMS];     /* the reference: which ids are in */
    uint32_t key[NITEMS];
} world_t;

static bool item_less(void *ctx, const void *a, const void *b) {
    const item_t *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key;
    return x->id < y->id;
}

static void item_moved(void *ctx, const void *e, size_t pos) {
    world_t *w = ctx;
    w->pos[((const item_t *)e)->id] = pos;
}

static const sl_heap_type_t item_heap = {sizeof(item_t), item_less, item_moved};

/* The heap property, the positions, and the same set as the reference. */
static void check(const sl_heap_t *h, const world_t *w) {
    size_t n = sl_heap_count(h), want = 0;
    for (uint32_t id = 0; id < NITEMS; id++) want += w->in[id];
    assert_int_equal(n, want);
    for (size_t i = 0; i < n; i++) {
        const item_t *e = sl_heap_at(h, &item_heap, i);
        assert_true(e->id < NITEMS && w->in[e->id]);
        assert_int_equal(w->key[e->id], e->key);
        assert_int_equal(w->pos[e->id], i);
        if (i > 0) assert_false(item_less(NULL, e, sl_heap_at(h, &item_heap, (i - 1) / 2)));
    }
}

/* The reference's least item id, or NITEMS when empty. O(NITEMS). */
static uint32_t ref_min(const world_t *w) {
    uint32_t best = NITEMS;
    for (uint32_t id = 0; id < NITEMS; id++) {
        if (!w->in[id]) continue;
        if (best == NITEMS || w->key[id] < w->key[best] || (w->key[id] == w->key[best] && id < best))
            best = id;
    }
    return best;
}

static uint32_t random_id(sl_rng_t *r, const world_t *w, bool in) {
    for (;;) {
        uint32_t id = (uint32_t)sl_rng_below(r, NITEMS);
        if (w->in[id] == in) return id;
    }
}

static void run_seed(uint64_t seed) {
    sl_rng_t r;
    sl_rng_seed(&r, seed);
    world_t w;
    memset(&w, 0, sizeof w);
    sl_heap_t h;
    sl_heap_init(&h);
    /* Few distinct keys, so ties (broken by id) are common. */
    uint32_t nkeys = 1 + (uint32_t)sl_rng_below(&r, 64);
    size_t n = 0;
    for (int step = 0; step < 4000; step++) {
        uint64_t op = sl_rng_below(&r, 100);
        if (op < 40 && n < NITEMS) { /* push */
            uint32_t id = random_id(&r, &w, false);
            item_t e = {(uint32_t)sl_rng_below(&r, nkeys), id};
            w.in[id] = true;
            w.key[id] = e.key;
            sl_heap_push(&h, &item_heap, &w, &e);
            n++;
        } else if (op < 60 && n > 0) { /* pop: the reference's least */
            item_t e;
            uint32_t want = ref_min(&w);
            assert_int_equal(((item_t *)sl_heap_top(&h))->id, want);
            sl_heap_pop(&h, &item_heap, &w, &e);
            assert_int_equal(e.id, want);
            w.in[e.id] = false;
            n--;
        } else if (op < 75 && n > 0) { /* remove an arbitrary item by its position */
            uint32_t id = random_id(&r, &w, true);
            item_t e;
            sl_heap_remove(&h, &item_heap, &w, w.pos[id], &e);
            assert_int_equal(e.id, id);
            w.in[id] = false;
            n--;
        } else if (op < 95 && n > 0) { /* re-key an item in place, then fix */
            uint32_t id = random_id(&r, &w, true);
            item_t *e = sl_heap_at(&h, &item_heap, w.pos[id]);
            e->key = w.key[id] = (uint32_t)sl_rng_below(&r, nkeys);
            sl_heap_fix(&h, &item_heap, &w, w.pos[id]);
        } else if (op < 97) { /* rebuild from scratch through append + build */
            sl_heap_clear(&h);
            for (uint32_t id = 0; id < NITEMS; id++) {
                if (!w.in[id]) continue;
                item_t e = {w.key[id], id};
                sl_heap_append(&h, &item_heap, &e);
            }
            sl_heap_build(&h, &item_heap, &w);
        } else if (op < 98) { /* keys all change: rewrite every element, build */
            for (size_t i = 0; i < sl_heap_count(&h); i++) {
                item_t *e = sl_heap_at(&h, &item_heap, i);
                e->key = w.key[e->id] = (uint32_t)sl_rng_below(&r, nkeys);
            }
            sl_heap_build(&h, &item_heap, &w);
        }
        check(&h, &w);
    }
    /* Draining pops everything in the reference's order. */
    while (n > 0) {
        uint32_t want = ref_min(&w);
        item_t e;
        sl_heap_pop(&h, &item_heap, &w, &e);
        assert_int_equal(e.id, want);
        w.in[e.id] = false;
        n--;
    }
    assert_null(sl_heap_top(&h));
    sl_heap_fini(&h);
}

static void test_heap_matches_naive_on_random_ops(void **state) {
    (void)state;
    for (uint64_t seed = 1; seed <= 40; seed++) run_seed(seed);
}

/* Plain values without position tracking (moved NULL): a heap sort. */
static bool u64_less(void *ctx, const void *a, const void *b) {
    return *(const uint64_t *)a < *(const uint64_t *)b;
}

static const sl_heap_type_t u64_heap = {sizeof(uint64_t), u64_less, NULL};

static void test_heap_sorts_without_tracking(void **state) {
    (void)state;
    sl_rng_t r;
    sl_rng_seed(&r, 7);
    sl_heap_t h;
    sl_heap_init(&h);
    assert_int_equal(sl_heap_count(&h), 0);
    assert_null(sl_heap_top(&h));
    uint64_t v[1000];
    for (int i = 0; i < 1000; i++) {
        v[i] = sl_rng_below(&r, 500);
        sl_heap_push(&h, &u64_heap, NULL, &v[i]);
    }
    uint64_t prev = 0;
    for (int i = 0; i < 1000; i++) {
        uint64_t x;
        sl_heap_pop(&h, &u64_heap, NULL, &x);
        assert_true(x >= prev);
        prev = x;
    }
    assert_int_equal(sl_heap_count(&h), 0);
    sl_heap_fini(&h);
    sl_heap_fini(&h); /* fini leaves an empty heap: a second one is harmless */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_heap_matches_naive_on_random_ops, tu_teardown),
        cmocka_unit_test_teardown(test_heap_sorts_without_tracking, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
