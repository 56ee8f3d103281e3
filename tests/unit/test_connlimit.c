/*
 * test_connlimit.c - connection limits per port and per peer address with
 * eviction of the least recently idle (src/common/connlimit.h).
 *
 * Scenarios first (a flood from one address holds only its share; the
 * oldest idle goes, of the peer for the per-peer limit and of the port for
 * the other; a busy connection is never evicted; an IPv4-mapped IPv6
 * address is its IPv4 peer), then the limiter against a naive reference
 * (an array in admission-and-idle order) on seeded random admissions,
 * releases and idle changes over a handful of addresses.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "connlimit.h"
#include "testutil.h"

/* An owner's record: which connection, and whether it is still open. */
typedef struct rec {
    sl_connlimit_t *l;
    sl_connlimit_conn_t *c;
    int peer;
    bool open;
    bool keep;      /* the owner refuses to let it go (a reply still draining) */
} rec_t;

#define NREC 4096
static rec_t recs[NREC];
static int nrecs;
static int evictions;

static bool evict(void *arg, void *ud) {
    (void)arg;
    rec_t *r = ud;
    if (r->keep) return false;
    sl_connlimit_release(r->l, r->c);
    r->c = NULL;
    r->open = false;
    evictions++;
    return true;
}

static struct sockaddr_in v4(int i) {
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)(1000 + nrecs))};
    sa.sin_addr.s_addr = htonl(0x7f000001u + (uint32_t)i); /* 127.0.0.1 + i */
    return sa;
}

/* Admits a connection from peer i; its record, or NULL when refused. */
static rec_t *admit(sl_connlimit_t *l, int i, int64_t now) {
    assert_true(nrecs < NREC);
    rec_t *r = &recs[nrecs++];
    struct sockaddr_in sa = v4(i);
    *r = (rec_t){.l = l, .peer = i};
    r->c = sl_connlimit_admit(l, (struct sockaddr *)&sa, r, now);
    r->open = r->c != NULL;
    return r->open ? r : NULL;
}

static int peer_conns(const sl_connlimit_t *l, int i) {
    struct sockaddr_in sa = v4(i);
    return (int)sl_connlimit_peer_conns(l, (struct sockaddr *)&sa);
}

static void reset(void) {
    memset(recs, 0, sizeof recs);
    nrecs = 0;
    evictions = 0;
}

static void test_connlimit_flood_from_one_peer_leaves_room(void **state) {
    (void)state;
    reset();
    sl_connlimit_t l;
    sl_connlimit_init(&l, 64, 8, evict, NULL);
    /* 80 silent sockets from 127.0.0.1: each past the 8th evicts the oldest. */
    for (int k = 0; k < 80; k++) assert_non_null(admit(&l, 0, k));
    assert_int_equal(peer_conns(&l, 0), 8);
    assert_int_equal((int)l.n.evicted, 72);
    for (int k = 0; k < 72; k++) assert_false(recs[k].open);
    for (int k = 72; k < 80; k++) assert_true(recs[k].open);
    /* Another address finds room without evicting anything. */
    assert_non_null(admit(&l, 1, 100));
    assert_int_equal((int)l.n.evicted, 72);
    /* Busy connections are never evicted: the peer's next one is refused. */
    for (int k = 72; k < 80; k++) sl_connlimit_set_idle(&l, recs[k].c, false, 0);
    assert_null(admit(&l, 0, 101));
    assert_int_equal((int)l.n.refused, 1);
    assert_int_equal((int)l.n.conns, 9);
    sl_connlimit_fini(&l);
}

static void test_connlimit_port_limit_evicts_least_recently_idle(void **state) {
    (void)state;
    reset();
    sl_connlimit_t l;
    sl_connlimit_init(&l, 3, 8, evict, NULL);
    rec_t *a = admit(&l, 0, 1), *b = admit(&l, 1, 2), *c = admit(&l, 2, 3);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(c);
    /* a is busy and then idle again: now the most recently idle. */
    sl_connlimit_set_idle(&l, a->c, false, 0);
    sl_connlimit_set_idle(&l, a->c, true, 4);
    assert_non_null(admit(&l, 3, 5));
    assert_false(b->open);
    assert_true(a->open && c->open);
    /* An owner that keeps its connection is passed over. */
    c->keep = true;
    assert_non_null(admit(&l, 4, 6));
    assert_true(c->open);
    assert_false(a->open);
    /* Released connections free their peer's count. */
    assert_int_equal(peer_conns(&l, 2), 1);
    sl_connlimit_release(&l, c->c);
    c->open = false;
    assert_int_equal(peer_conns(&l, 2), 0);
    assert_int_equal((int)l.n.conns, 2);
    sl_connlimit_release(&l, NULL);
    sl_connlimit_fini(&l);
}

static void test_connlimit_mapped_ipv6_is_its_ipv4_peer(void **state) {
    (void)state;
    reset();
    sl_connlimit_t l;
    sl_connlimit_init(&l, 64, 1, NULL, NULL);
    assert_non_null(admit(&l, 0, 1));
    struct sockaddr_in6 s6 = {.sin6_family = AF_INET6};
    assert_int_equal(inet_pton(AF_INET6, "::ffff:127.0.0.1", &s6.sin6_addr), 1);
    rec_t r = {.l = &l};
    assert_null(sl_connlimit_admit(&l, (struct sockaddr *)&s6, &r, 2)); /* no evict callback */
    assert_int_equal(inet_pton(AF_INET6, "::1", &s6.sin6_addr), 1);
    sl_connlimit_conn_t *c = sl_connlimit_admit(&l, (struct sockaddr *)&s6, &r, 3);
    assert_non_null(c);
    assert_int_equal(sl_connlimit_peer_conns(&l, (struct sockaddr *)&s6), 1);
    /* No address at all: one "unknown" peer. */
    assert_non_null(sl_connlimit_admit(&l, NULL, &r, 4));
    assert_null(sl_connlimit_admit(&l, NULL, &r, 5));
    sl_connlimit_fini(&l);
}

/* The reference: open records in eviction order (least recently idle first). */
typedef struct ref {
    int order[NREC];
    int n;
} ref_t;

static void ref_remove(ref_t *r, int idx) {
    for (int k = 0; k < r->n; k++)
        if (r->order[k] == idx) {
            memmove(&r->order[k], &r->order[k + 1], (size_t)(r->n - k - 1) * sizeof r->order[0]);
            r->n--;
            return;
        }
    fail();
}

/* What the limiter should evict for a new connection of peer (-1: any). */
static int ref_victim(const ref_t *r, int peer) {
    for (int k = 0; k < r->n; k++) {
        const rec_t *x = &recs[r->order[k]];
        if (x->c->idle && !x->keep && (peer < 0 || x->peer == peer)) return r->order[k];
    }
    return -1;
}

static void test_connlimit_matches_naive_on_random_ops(void **state) {
    (void)state;
    for (uint64_t seed = 1; seed <= 40; seed++) {
        reset();
        sl_rng_t rng;
        sl_rng_seed(&rng, seed);
        sl_connlimit_t l;
        int max = 2 + (int)sl_rng_below(&rng, 10), per = 1 + (int)sl_rng_below(&rng, 6);
        sl_connlimit_init(&l, max, per, evict, NULL);
        ref_t ref = {.n = 0};
        for (int64_t step = 0; step < 600 && nrecs < NREC - 1; step++) {
            uint64_t op = sl_rng_below(&rng, 10);
            if (op < 5) {
                int peer = (int)sl_rng_below(&rng, 5);
                int pc = 0;
                for (int k = 0; k < ref.n; k++) pc += recs[ref.order[k]].peer == peer;
                /* The naive rule: the peer's oldest idle, then the port's. */
                int v1 = pc >= per ? ref_victim(&ref, peer) : -2;
                bool ok = v1 != -1;
                if (v1 >= 0) ref_remove(&ref, v1);
                int v2 = ok && ref.n >= max ? ref_victim(&ref, -1) : -2;
                ok = ok && v2 != -1;
                if (v2 >= 0) ref_remove(&ref, v2);
                int idx = nrecs;
                rec_t *got = admit(&l, peer, step);
                assert_int_equal(got != NULL, ok);
                if (v1 >= 0) assert_false(recs[v1].open);
                if (v2 >= 0) assert_false(recs[v2].open);
                if (ok) ref.order[ref.n++] = idx;
            } else if (ref.n > 0) {
                int k = (int)sl_rng_below(&rng, (uint64_t)ref.n), idx = ref.order[k];
                rec_t *x = &recs[idx];
                if (op < 7) {
                    sl_connlimit_release(&l, x->c);
                    x->open = false;
                    ref_remove(&ref, idx);
                } else if (op < 9) {
                    bool idle = sl_rng_below(&rng, 2) == 0;
                    sl_connlimit_set_idle(&l, x->c, idle, step);
                    if (idle) {
                        ref_remove(&ref, idx);
                        ref.order[ref.n++] = idx;
                    }
                } else {
                    x->keep = !x->keep;
                }
            }
            assert_int_equal((int)l.n.conns, ref.n);
            for (int k = 0; k < ref.n; k++) assert_true(recs[ref.order[k]].open);
        }
        sl_connlimit_fini(&l);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_connlimit_flood_from_one_peer_leaves_room, tu_teardown),
        cmocka_unit_test_teardown(test_connlimit_port_limit_evicts_least_recently_idle,
                                  tu_teardown),
        cmocka_unit_test_teardown(test_connlimit_mapped_ipv6_is_its_ipv4_peer, tu_teardown),
        cmocka_unit_test_teardown(test_connlimit_matches_naive_on_random_ops, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
