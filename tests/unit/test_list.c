/*
 * test_list.c - the intrusive doubly linked list (sluice/list.h), checked
 * against a naive reference on seeded random operations.
 *
 * The reference is one array of item ids per list, in list order, that
 * every operation edits by shifting (O(n), obviously right). Items move
 * between two lists by every operation the users make: insert at the head
 * (a node's live tasks), insert at the tail and move to the tail (a port's
 * connections as they become idle), remove, and a walk that removes some of
 * the items it visits (a node failure, an eviction, a sweep). After every
 * step both lists are walked forwards and backwards and compared with the
 * reference, with first, last, next and empty. Then the edge cases: an
 * empty list, removing every item during a walk, and an element whose node
 * is not its first member (container-of).
 */
#include <string.h>

#include "testutil.h"

#define NITEMS 64
#define NLISTS 2

typedef struct item {
    uint32_t id;
    uint64_t pad;   /* so that the node is not at offset 0 */
    sl_list_t link;
    int on;         /* the list it is on, or -1 */
} item_t;

typedef struct world {
    item_t items[NITEMS];
    sl_list_t lists[NLISTS];
    uint32_t ref[NLISTS][NITEMS]; /* the reference: ids in list order */
    size_t nref[NLISTS];
} world_t;

static item_t *item_of(sl_list_t *e) {
    return SL_LIST_ENTRY(e, item_t, link);
}

/* Every list against its reference, walked both ways and by next. */
static void check(world_t *w) {
    for (int l = 0; l < NLISTS; l++) {
        sl_list_t *head = &w->lists[l], *it;
        size_t n = w->nref[l], k = 0;
        assert_int_equal(sl_list_empty(head), n == 0);
        SL_LIST_FOREACH(it, head) {
            assert_true(k < n);
            assert_int_equal(item_of(it)->id, w->ref[l][k]);
            assert_int_equal(item_of(it)->on, l);
            assert_ptr_equal(it->next->prev, it);
            k++;
        }
        assert_int_equal(k, n);
        k = n;
        for (it = head->prev; it != head; it = it->prev) {
            assert_true(k > 0);
            assert_int_equal(item_of(it)->id, w->ref[l][--k]);
        }
        assert_int_equal(k, 0);
        if (n == 0) {
            assert_null(sl_list_first(head));
            assert_null(sl_list_last(head));
            continue;
        }
        assert_int_equal(item_of(sl_list_first(head))->id, w->ref[l][0]);
        assert_int_equal(item_of(sl_list_last(head))->id, w->ref[l][n - 1]);
        k = 0;
        for (it = sl_list_first(head); it != NULL; it = sl_list_next(head, it))
            assert_int_equal(item_of(it)->id, w->ref[l][k++]);
        assert_int_equal(k, n);
    }
}

static void ref_insert(world_t *w, int l, size_t at, uint32_t id) {
    memmove(&w->ref[l][at + 1], &w->ref[l][at], (w->nref[l] - at) * sizeof w->ref[l][0]);
    w->ref[l][at] = id;
    w->nref[l]++;
}

static void ref_remove(world_t *w, int l, uint32_t id) {
    size_t at = 0;
    while (w->ref[l][at] != id)
        at++;
    memmove(&w->ref[l][at], &w->ref[l][at + 1], (w->nref[l] - at - 1) * sizeof w->ref[l][0]);
    w->nref[l]--;
}

static void world_init(world_t *w) {
    memset(w, 0, sizeof *w);
    for (uint32_t i = 0; i < NITEMS; i++) {
        w->items[i].id = i;
        w->items[i].on = -1;
    }
    for (int l = 0; l < NLISTS; l++)
        sl_list_init(&w->lists[l]);
}

static void take_off(world_t *w, item_t *x) {
    ref_remove(w, x->on, x->id);
    sl_list_remove(&x->link);
    x->on = -1;
}

static void run_seed(uint64_t seed) {
    sl_rng_t r;
    sl_rng_seed(&r, seed);
    world_t w;
    world_init(&w);
    for (int step = 0; step < 3000; step++) {
        item_t *x = &w.items[sl_rng_below(&r, NITEMS)];
        int l = (int)sl_rng_below(&r, NLISTS);
        uint64_t op = sl_rng_below(&r, 100);
        if (op < 30) { /* insert at the head, off its list first */
            if (x->on >= 0) take_off(&w, x);
            sl_list_insert_head(&w.lists[l], &x->link);
            ref_insert(&w, l, 0, x->id);
            x->on = l;
        } else if (op < 60) { /* insert at the tail */
            if (x->on >= 0) take_off(&w, x);
            sl_list_insert_tail(&w.lists[l], &x->link);
            ref_insert(&w, l, w.nref[l], x->id);
            x->on = l;
        } else if (op < 80) { /* remove, and remove again: the second does nothing */
            if (x->on < 0) continue;
            take_off(&w, x);
            if (sl_rng_below(&r, 4) == 0)
                sl_list_remove(&x->link);
        } else if (op < 90) { /* to the tail of its own list, as a connection going idle */
            if (x->on < 0) continue;
            int on = x->on;
            take_off(&w, x);
            sl_list_insert_tail(&w.lists[on], &x->link);
            ref_insert(&w, on, w.nref[on], x->id);
            x->on = on;
        } else { /* a walk that removes the items whose id has a random bit */
            uint32_t bit = 1u << sl_rng_below(&r, 6);
            sl_list_t *it, *nx;
            size_t seen = 0, want = w.nref[l];
            SL_LIST_FOREACH_SAFE(it, nx, &w.lists[l]) {
                seen++;
                if (item_of(it)->id & bit)
                    take_off(&w, item_of(it));
            }
            assert_int_equal(seen, want);
        }
        check(&w);
    }
    /* Draining from the head empties both lists. */
    for (int l = 0; l < NLISTS; l++) {
        for (sl_list_t *first; (first = sl_list_first(&w.lists[l])) != NULL;)
            take_off(&w, item_of(first));
        assert_true(sl_list_empty(&w.lists[l]));
    }
    check(&w);
}

static void test_list_matches_reference_on_random_ops(void **state) {
    (void)state;
    for (uint64_t seed = 1; seed <= 64; seed++)
        run_seed(seed);
}

static void test_list_empty(void **state) {
    (void)state;
    sl_list_t l, *it, *nx;
    sl_list_init(&l);
    assert_true(sl_list_empty(&l));
    assert_null(sl_list_first(&l));
    assert_null(sl_list_last(&l));
    int n = 0;
    SL_LIST_FOREACH(it, &l) n++;
    SL_LIST_FOREACH_SAFE(it, nx, &l) n++;
    assert_int_equal(n, 0);
    /* One item in and out leaves it empty again, with the head intact. */
    item_t x = {.id = 7};
    sl_list_insert_tail(&l, &x.link);
    assert_false(sl_list_empty(&l));
    assert_ptr_equal(sl_list_first(&l), &x.link);
    assert_ptr_equal(sl_list_last(&l), &x.link);
    assert_null(sl_list_next(&l, &x.link));
    sl_list_remove(&x.link);
    assert_true(sl_list_empty(&l));
    assert_ptr_equal(l.next, &l);
    assert_ptr_equal(l.prev, &l);
    /* A removed node is linked to itself, so a second remove is harmless. */
    assert_true(sl_list_empty(&x.link));
    sl_list_remove(&x.link);
    assert_true(sl_list_empty(&l));
}

/* A node failure loses every task it visits; a sweep frees the last. */
static void test_list_remove_while_iterating(void **state) {
    (void)state;
    world_t w;
    world_init(&w);
    for (uint32_t i = 0; i < 5; i++) {
        sl_list_insert_tail(&w.lists[0], &w.items[i].link);
        ref_insert(&w, 0, i, i);
        w.items[i].on = 0;
    }
    check(&w);
    /* Only the last. */
    sl_list_t *it, *nx;
    SL_LIST_FOREACH_SAFE(it, nx, &w.lists[0])
        if (item_of(it)->id == 4) take_off(&w, item_of(it));
    check(&w);
    /* Only the first. */
    SL_LIST_FOREACH_SAFE(it, nx, &w.lists[0])
        if (item_of(it)->id == 0) take_off(&w, item_of(it));
    check(&w);
    /* Every one, in the order visited. */
    uint32_t order[NITEMS];
    size_t k = 0;
    SL_LIST_FOREACH_SAFE(it, nx, &w.lists[0]) {
        order[k++] = item_of(it)->id;
        take_off(&w, item_of(it));
    }
    assert_int_equal(k, 3);
    assert_int_equal(order[0], 1);
    assert_int_equal(order[1], 2);
    assert_int_equal(order[2], 3);
    assert_true(sl_list_empty(&w.lists[0]));
    check(&w);
}

/* Head insertion gives the newest first, tail insertion the oldest. */
static void test_list_head_and_tail_order(void **state) {
    (void)state;
    item_t v[3] = {{.id = 0}, {.id = 1}, {.id = 2}};
    sl_list_t h, t, *it;
    sl_list_init(&h);
    sl_list_init(&t);
    item_t u[3] = {{.id = 0}, {.id = 1}, {.id = 2}};
    for (int i = 0; i < 3; i++) {
        sl_list_insert_head(&h, &v[i].link);
        sl_list_insert_tail(&t, &u[i].link);
    }
    uint32_t want = 2;
    SL_LIST_FOREACH(it, &h) assert_int_equal(item_of(it)->id, want--);
    want = 0;
    SL_LIST_FOREACH(it, &t) assert_int_equal(item_of(it)->id, want++);
    /* The entry macro undoes the node's offset inside its element. */
    assert_ptr_equal(item_of(&v[1].link), &v[1]);
    assert_true(offsetof(item_t, link) > 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_list_empty, tu_teardown),
        cmocka_unit_test_teardown(test_list_head_and_tail_order, tu_teardown),
        cmocka_unit_test_teardown(test_list_remove_while_iterating, tu_teardown),
        cmocka_unit_test_teardown(test_list_matches_reference_on_random_ops, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
