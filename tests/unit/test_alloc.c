/*
 * test_alloc.c - the core's allocator (alloc.h): every block counts in
 * sl_alloc_live until sl_free, zero-size requests give unique pointers,
 * sl_xcalloc zeroes, sl_xrealloc keeps contents and counts a block only when
 * it starts from NULL, sl_xstrdup copies (NULL in, NULL out), and sl_free
 * accepts NULL.
 */
#include <string.h>

#include "testutil.h"

static void test_alloc_counts_live_blocks(void **state) {
    (void)state;
    long base = sl_alloc_live();
    void *a = sl_xmalloc(16);
    void *b = sl_xmalloc(0);
    void *c = sl_xmalloc(0);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c);
    assert_ptr_not_equal(b, c); /* n == 0 gives a unique pointer */
    assert_int_equal(sl_alloc_live(), base + 3);
    sl_free(a);
    sl_free(b);
    sl_free(NULL); /* accepted, counts nothing */
    assert_int_equal(sl_alloc_live(), base + 1);
    sl_free(c);
    assert_int_equal(sl_alloc_live(), base);
}

static void test_alloc_calloc_zeroes(void **state) {
    (void)state;
    uint64_t *v = sl_xcalloc(100, sizeof *v);
    for (int i = 0; i < 100; i++) assert_true(v[i] == 0);
    assert_int_equal(sl_alloc_live(), 1);
    void *z = sl_xcalloc(0, 8);
    void *z2 = sl_xcalloc(8, 0);
    assert_non_null(z);
    assert_non_null(z2);
    assert_int_equal(sl_alloc_live(), 3);
    sl_free(z2);
    sl_free(z);
    sl_free(v);
}

static void test_alloc_realloc_keeps_contents(void **state) {
    (void)state;
    char *p = sl_xrealloc(NULL, 4); /* from NULL: a new block */
    assert_int_equal(sl_alloc_live(), 1);
    memcpy(p, "abc", 4);
    p = sl_xrealloc(p, 1 << 16); /* growing keeps the count and the bytes */
    assert_int_equal(sl_alloc_live(), 1);
    assert_string_equal(p, "abc");
    p = sl_xrealloc(p, 2);
    assert_int_equal(sl_alloc_live(), 1);
    assert_memory_equal(p, "ab", 2);
    p = sl_xrealloc(p, 0); /* n == 0 keeps a valid block */
    assert_non_null(p);
    assert_int_equal(sl_alloc_live(), 1);
    sl_free(p);
}

static void test_alloc_strdup(void **state) {
    (void)state;
    assert_null(sl_xstrdup(NULL));
    assert_int_equal(sl_alloc_live(), 0);
    const char *src = "node-17";
    char *d = sl_xstrdup(src);
    assert_ptr_not_equal(d, src);
    assert_string_equal(d, src);
    char *e = sl_xstrdup("");
    assert_string_equal(e, "");
    assert_int_equal(sl_alloc_live(), 2);
    sl_free(d);
    sl_free(e);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_alloc_counts_live_blocks, tu_teardown),
        cmocka_unit_test_teardown(test_alloc_calloc_zeroes, tu_teardown),
        cmocka_unit_test_teardown(test_alloc_realloc_keeps_contents, tu_teardown),
        cmocka_unit_test_teardown(test_alloc_strdup, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
