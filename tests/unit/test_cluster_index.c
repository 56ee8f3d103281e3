/*
 * test_cluster_index.c - the cluster's free-capacity class index.
 *
 * The index is an optimisation, so it is checked the SQLite bitvec way: a
 * seeded random sequence of allocations, releases and state changes runs
 * against the cluster and against a naive reference kept here in plain
 * arrays; after every step the two must agree on every node, on what fits,
 * on capacity, on the partition of up nodes into classes (free state and
 * the kinds of the tasks they run), on each class's
 * summary and bucket (cluster_index.h) and on which classes a bucketed
 * search finds for a request, and sl_cluster_check() must pass.
 */
#include <stdio.h>
#include <string.h>

#include "cluster_index.h"
#include "testutil.h"

#define GIB (INT64_C(1) << 30)

#define RN 48 /* nodes */

typedef struct shape {
    int64_t cpu, mem, gpu_mem;
    int32_t gpus;
    const char *model, *pool;
} shape_t;

static const shape_t shapes[] = {
    {64000, 512 * GIB, 80 * GIB, 8, "A100", NULL},
    {32000, 256 * GIB, 16 * GIB, 4, "V100", "v"},
    {16000, 64 * GIB, 16 * GIB, 2, "T4", NULL},
    {96000, 384 * GIB, 0, 0, NULL, NULL},
    {128000, 1024 * GIB, 24 * GIB, 16, "A10", "v"},
    {8000, 32 * GIB, 40 * GIB, 1, "A100", NULL},
};
#define NSHAPES (sizeof shapes / sizeof shapes[0])

typedef struct ref {
    const shape_t *sh;
    int32_t pool, model;
    sl_node_state_t st;
    int64_t cpu_free, mem_free;
    int32_t gf[SL_MAX_GPUS_PER_NODE];
    int64_t gm[SL_MAX_GPUS_PER_NODE];
    uint32_t kc[SL_KINDS]; /* tasks of each kind: a share (0), k whole GPUs (k) */
} ref_t;

/* The kinds the node runs, as a mask of sl_task_kind_bit's bits. */
static uint32_t ref_kinds(const ref_t *r) {
    uint32_t m = 0;
    for (int k = 0; k < SL_KINDS; k++)
        if (r->kc[k]) m |= 1u << k;
    return m;
}

typedef struct live {
    sl_task_req_t req;
    sl_place_t pl;
} live_t;

static bool ref_full(const ref_t *r, int g) {
    return r->gf[g] == 1000 && r->gm[g] == r->sh->gpu_mem;
}

static bool ref_fits(const ref_t *r, const sl_task_req_t *q) {
    if (r->st != SL_NODE_UP) return false;
    if (q->pool != -1 && q->pool != r->pool) return false;
    if (q->model_mask && (r->model < 0 || !((q->model_mask >> r->model) & 1))) return false;
    bool wants = q->gpus > 0 || q->gpu_milli > 0;
    if (wants && r->sh->gpus == 0) return false;
    if (r->cpu_free < q->cpu_milli || r->mem_free < q->mem_bytes) return false;
    int full = 0, fit = 0;
    for (int g = 0; g < r->sh->gpus; g++) {
        full += ref_full(r, g);
        fit += r->gf[g] >= q->gpu_milli && r->gm[g] >= q->gpu_mem_bytes;
    }
    if (q->gpus > 0) return full >= q->gpus;
    if (q->gpu_milli > 0) return fit > 0;
    return true;
}

/* The reference choice, written from the rule rather than from the code. */
static uint32_t ref_choose(const ref_t *r, const sl_task_req_t *q) {
    uint32_t mask = 0;
    if (q->gpus > 0) {
        for (int g = 0, need = q->gpus; g < r->sh->gpus && need; g++)
            if (ref_full(r, g)) mask |= 1u << g, need--;
    } else if (q->gpu_milli > 0) {
        int best = -1;
        for (int g = 0; g < r->sh->gpus; g++) {
            if (r->gf[g] < q->gpu_milli || r->gm[g] < q->gpu_mem_bytes) continue;
            if (best < 0 || r->gf[g] < r->gf[best]) best = g;
        }
        mask = 1u << best;
    }
    return mask;
}

/* Expected result of alloc (sign +1) or release (-1) on the reference; applies it on success. */
static int ref_apply(ref_t *r, const sl_task_req_t *q, const sl_place_t *pl, int sign) {
    int pc = __builtin_popcount(pl->gpu_mask);
    if (pl->gpu_mask >> r->sh->gpus) return SL_EINVAL;
    if (q->gpus > 0 && (pc != q->gpus || pl->gpu_milli != 1000)) return SL_EINVAL;
    if (q->gpus == 0 && q->gpu_milli > 0 && (pc != 1 || pl->gpu_milli != q->gpu_milli)) return SL_EINVAL;
    if (q->gpus == 0 && q->gpu_milli == 0 && pc != 0) return SL_EINVAL;
    int64_t dm = q->gpus > 0 ? 1000 : q->gpu_milli;
    for (int g = 0; g < r->sh->gpus; g++) {
        if (!((pl->gpu_mask >> g) & 1)) continue;
        int64_t dmem = q->gpus > 0 ? r->sh->gpu_mem : q->gpu_mem_bytes;
        if (sign > 0) {
            if (q->gpus > 0 ? !ref_full(r, g) : (r->gf[g] < dm || r->gm[g] < dmem)) return SL_ENOSPC;
        } else {
            if (r->gf[g] + dm > 1000 || r->gm[g] + dmem > r->sh->gpu_mem) return SL_EINVAL;
        }
    }
    if (sign > 0 && (r->cpu_free < q->cpu_milli || r->mem_free < q->mem_bytes)) return SL_ENOSPC;
    if (sign < 0 && (r->cpu_free + q->cpu_milli > r->sh->cpu || r->mem_free + q->mem_bytes > r->sh->mem))
        return SL_EINVAL;
    /* The task's kind: none without GPUs; a release needs one of its kind. */
    int kind = q->gpus > 0 ? q->gpus : q->gpu_milli > 0 ? 0 : -1;
    if (sign < 0 && kind >= 0 && r->kc[kind] == 0) return SL_EINVAL;
    if (kind >= 0) r->kc[kind] += sign > 0 ? 1u : (uint32_t)-1;
    r->cpu_free -= sign * q->cpu_milli;
    r->mem_free -= sign * q->mem_bytes;
    for (int g = 0; g < r->sh->gpus; g++) {
        if (!((pl->gpu_mask >> g) & 1)) continue;
        r->gf[g] -= (int32_t)(sign * dm);
        r->gm[g] -= sign * (q->gpus > 0 ? r->sh->gpu_mem : q->gpu_mem_bytes);
    }
    return 0;
}

static bool ref_same_state(const ref_t *a, const ref_t *b) {
    if (a->sh->gpus != b->sh->gpus || a->sh->cpu != b->sh->cpu || a->sh->mem != b->sh->mem ||
        a->sh->gpu_mem != b->sh->gpu_mem || a->pool != b->pool || a->model != b->model ||
        a->cpu_free != b->cpu_free || a->mem_free != b->mem_free || ref_kinds(a) != ref_kinds(b))
        return false;
    /* Multisets of (free milli, free memory): match each of a to an unused equal one of b. */
    bool used[SL_MAX_GPUS_PER_NODE] = {false};
    for (int i = 0; i < a->sh->gpus; i++) {
        int j = 0;
        while (j < b->sh->gpus && (used[j] || b->gf[j] != a->gf[i] || b->gm[j] != a->gm[i])) j++;
        if (j == b->sh->gpus) return false;
        used[j] = true;
    }
    return true;
}

static sl_task_req_t random_req(sl_rng_t *rng, sl_cluster_t *cl) {
    static const int64_t cpus[] = {0, 1000, 4000, 16000, 40000};
    static const int64_t mems[] = {0, GIB, 16 * GIB, 100 * GIB};
    static const int32_t millis[] = {100, 250, 300, 500, 700, 999};
    static const int64_t gmems[] = {0, GIB, 8 * GIB, 20 * GIB};
    sl_task_req_t q;
    sl_task_req_init(&q);
    q.cpu_milli = cpus[sl_rng_below(rng, 5)];
    q.mem_bytes = mems[sl_rng_below(rng, 4)];
    switch (sl_rng_below(rng, 3)) {
    case 0: break;
    case 1: q.gpus = 1 + (int32_t)sl_rng_below(rng, 8); break;
    default:
        q.gpu_milli = millis[sl_rng_below(rng, 6)];
        q.gpu_mem_bytes = gmems[sl_rng_below(rng, 4)];
    }
    if (sl_rng_below(rng, 5) == 0)
        q.model_mask = UINT64_C(1) << sl_rng_below(rng, sl_cluster_model_count(cl));
    if (sl_rng_below(rng, 5) == 0) q.pool = (int32_t)sl_rng_below(rng, 2);
    return q;
}

static void compare_all(sl_cluster_t *cl, ref_t *refs, sl_rng_t *rng) {
    assert_int_equal(sl_cluster_check(cl), 0);
    sl_res_t tot = {0, 0, 0}, fr = {0, 0, 0};
    int up = 0;
    for (int i = 0; i < RN; i++) {
        const sl_node_t *n = sl_cluster_node(cl, (uint32_t)i);
        const ref_t *r = &refs[i];
        assert_int_equal(n->state, r->st);
        assert_int_equal(n->cpu_free, r->cpu_free);
        assert_int_equal(n->mem_free, r->mem_free);
        for (int g = 0; g < r->sh->gpus; g++) {
            assert_int_equal(n->gpu_free[g], r->gf[g]);
            assert_int_equal(n->gpu_mem_free[g], r->gm[g]);
        }
        if (r->st != SL_NODE_DOWN) {
            tot = sl_res_add(tot, (sl_res_t){r->sh->cpu, r->sh->mem, r->sh->gpus * 1000});
            int64_t gsum = 0;
            for (int g = 0; g < r->sh->gpus; g++) gsum += r->gf[g];
            fr = sl_res_add(fr, (sl_res_t){r->cpu_free, r->mem_free, gsum});
        }
        up += r->st == SL_NODE_UP;
    }
    sl_res_t t2, f2;
    sl_cluster_capacity(cl, &t2, &f2);
    assert_memory_equal(&tot, &t2, sizeof tot);
    assert_memory_equal(&fr, &f2, sizeof fr);

    /* The classes partition the up nodes by exactly the reference's notion of state. */
    int seen = 0;
    size_t nc = sl_cluster_class_count(cl);
    for (size_t c = 0; c < nc; c++) {
        const sl_node_t *rep = sl_cluster_class_rep(cl, c);
        assert_int_equal(rep->id, sl_cluster_class_node(cl, c, 0));
        for (uint32_t k = 0; k < sl_cluster_class_size(cl, c); k++) {
            uint32_t id = sl_cluster_class_node(cl, c, k);
            assert_true(id < RN);
            assert_int_equal(refs[id].st, SL_NODE_UP);
            assert_true(ref_same_state(&refs[id], &refs[rep->id]));
            seen++;
        }
        for (size_t d = c + 1; d < nc; d++)
            assert_false(ref_same_state(&refs[rep->id], &refs[sl_cluster_class_rep(cl, d)->id]));
    }
    assert_int_equal(seen, up);

    /* Summaries and buckets, recomputed from the reference. */
    const sl__class_t *sum = sl__cluster_classes(cl);
    const sl__class_id_t *ids = sl__cluster_class_ids(cl);
    const uint32_t *bs = sl__cluster_buckets(cl);
    assert_int_equal(bs[0], 0);
    assert_int_equal(bs[SL__NBUCKETS], nc);
    for (size_t c = 0; c < nc; c++) {
        const ref_t *r = &refs[sl_cluster_class_rep(cl, c)->id];
        int full = 0, smax = 0, gsum = 0;
        for (int g = 0; g < r->sh->gpus; g++) {
            full += ref_full(r, g);
            if (r->gf[g] > smax) smax = r->gf[g];
            gsum += r->gf[g];
        }
        assert_int_equal(sum[c].rep, sl_cluster_class_rep(cl, c)->id);
        assert_int_equal(ids[c].size, sl_cluster_class_size(cl, c));
        assert_int_equal(sum[c].cpu_free, r->cpu_free);
        assert_int_equal(sum[c].mem_free, r->mem_free);
        assert_int_equal(sum[c].full_free, full);
        assert_int_equal(sum[c].share_max, smax);
        assert_int_equal(sum[c].gpu_free, gsum);
        assert_int_equal(sum[c].pool, r->pool);
        assert_int_equal(sum[c].model, r->model);
        int b = full > 0 ? 9 + full : (smax / 100 < 9 ? smax / 100 : 9);
        assert_true(bs[b] <= c && c < bs[b + 1]);
        for (size_t d = 0; d < c; d++) assert_true(ids[d].uid != ids[c].uid);
    }
    /* A bucketed search (first bucket on, summary filter, node check for
     * shares with GPU memory) finds exactly the classes whose nodes fit. */
    for (int k = 0; k < 2; k++) {
        sl_task_req_t q = random_req(rng, cl);
        bool hit[RN] = {false};
        for (uint32_t c = bs[sl__first_bucket(&q) < SL__NBUCKETS ? sl__first_bucket(&q) : SL__NBUCKETS];
             c < nc; c++) {
            if (!sl__class_fits(&sum[c], &q)) continue;
            if (q.gpu_mem_bytes > 0 && !sl_node_fits(sl_cluster_class_rep(cl, c), &q)) continue;
            for (uint32_t m = 0; m < sl_cluster_class_size(cl, c); m++) hit[sl_cluster_class_node(cl, c, m)] = true;
        }
        for (int i = 0; i < RN; i++) assert_int_equal(hit[i], ref_fits(&refs[i], &q));
    }

    /* Fitting agrees with the reference for a few random requests on every node. */
    for (int k = 0; k < 2; k++) {
        sl_task_req_t q = random_req(rng, cl);
        for (int i = 0; i < RN; i++) {
            const sl_node_t *n = sl_cluster_node(cl, (uint32_t)i);
            bool fits = ref_fits(&refs[i], &q);
            assert_int_equal(sl_node_fits(n, &q), fits);
            assert_int_equal(sl_node_fit_count(n, &q, 1000) > 0, fits);
            sl_place_t pl;
            int st = sl_node_choose_gpus(n, &q, &pl);
            assert_int_equal(st, fits ? SL_FIT : SL_NOFIT);
            if (fits) {
                assert_int_equal(pl.node, (uint32_t)i);
                assert_int_equal(pl.gpu_mask, ref_choose(&refs[i], &q));
            }
        }
    }
    for (int i = 0; i < RN; i++) assert_int_equal(sl_cluster_node(cl, (uint32_t)i)->kinds, ref_kinds(&refs[i]));
}

static void run_random(sl_cluster_t *cl, ref_t *refs, uint64_t seed, int steps, bool compare) {
    sl_rng_t rng;
    sl_rng_seed(&rng, seed);
    for (int i = 0; i < RN; i++) {
        const shape_t *sh = &shapes[i % NSHAPES];
        char name[32];
        snprintf(name, sizeof name, "node-%02d", i);
        tu_node_add(cl, tu_node_spec(name, sh->cpu, sh->mem, sh->gpus, sh->model, sh->gpu_mem, sh->pool));
        ref_t *r = &refs[i];
        memset(r, 0, sizeof *r);
        r->sh = sh;
        r->pool = sh->pool ? sl_cluster_pool_find(cl, sh->pool) : 0;
        r->model = sh->model ? sl_cluster_model_find(cl, sh->model) : -1;
        r->st = SL_NODE_UP;
        r->cpu_free = sh->cpu;
        r->mem_free = sh->mem;
        for (int g = 0; g < sh->gpus; g++) r->gf[g] = 1000, r->gm[g] = sh->gpu_mem;
    }
    live_t *lv = sl_xmalloc(sizeof *lv * 4096);
    int nlive = 0;
    for (int step = 0; step < steps; step++) {
        uint64_t op = sl_rng_below(&rng, 100);
        uint32_t id = (uint32_t)sl_rng_below(&rng, RN);
        ref_t *r = &refs[id];
        if (op < 45) { /* place one task where the default rule says */
            sl_task_req_t q = random_req(&rng, cl);
            sl_place_t pl;
            if (sl_node_choose_gpus(sl_cluster_node(cl, id), &q, &pl) == SL_FIT) {
                int want = ref_apply(r, &q, &pl, +1);
                assert_int_equal(want, 0);
                assert_int_equal(sl_cluster_alloc(cl, &q, &pl), 0);
                if (nlive < 4096) lv[nlive++] = (live_t){q, pl};
            }
        } else if (op < 55) { /* a forced placement, often over-allocating or malformed */
            sl_task_req_t q = random_req(&rng, cl);
            uint32_t ng = (uint32_t)r->sh->gpus + 1;
            sl_place_t pl = {.node = id, .gpu_mask = (uint32_t)sl_rng_below(&rng, 1u << ng)};
            pl.gpu_milli = q.gpus > 0 ? 1000 : q.gpu_milli;
            if (q.gpus > 0 && sl_rng_below(&rng, 2) == 0) {
                pl.gpu_mask = 0; /* a well-formed mask of the right size at random */
                for (int g = 0; g < r->sh->gpus && __builtin_popcount(pl.gpu_mask) < q.gpus; g++)
                    if (sl_rng_below(&rng, 2)) pl.gpu_mask |= 1u << g;
            } else if (q.gpu_milli > 0 && r->sh->gpus > 0) {
                pl.gpu_mask = 1u << sl_rng_below(&rng, (uint64_t)r->sh->gpus);
            } else if (q.gpus == 0 && q.gpu_milli == 0) {
                pl.gpu_mask = 0;
            }
            int want = ref_apply(r, &q, &pl, +1);
            assert_int_equal(sl_cluster_alloc(cl, &q, &pl), want);
            if (want == 0 && nlive < 4096) lv[nlive++] = (live_t){q, pl};
        } else if (op < 90) { /* finish a task */
            if (nlive == 0) continue;
            uint32_t k = (uint32_t)sl_rng_below(&rng, (uint64_t)nlive);
            live_t l = lv[k];
            lv[k] = lv[--nlive];
            assert_int_equal(ref_apply(&refs[l.pl.node], &l.req, &l.pl, -1), 0);
            assert_int_equal(sl_cluster_release(cl, &l.req, &l.pl), 0);
            if (sl_rng_below(&rng, 8) == 0) { /* releasing it again may not free more than taken */
                int want = ref_apply(&refs[l.pl.node], &l.req, &l.pl, -1);
                assert_int_equal(sl_cluster_release(cl, &l.req, &l.pl), want);
                if (want == 0) { /* it freed another task's equal share: take it back */
                    assert_int_equal(ref_apply(&refs[l.pl.node], &l.req, &l.pl, +1), 0);
                    assert_int_equal(sl_cluster_alloc(cl, &l.req, &l.pl), 0);
                }
            }
        } else { /* change a node's state */
            sl_node_state_t st = (sl_node_state_t)sl_rng_below(&rng, 3);
            if (st != SL_NODE_UP && sl_rng_below(&rng, 2)) st = SL_NODE_UP; /* mostly up */
            assert_int_equal(sl_cluster_set_state(cl, id, st), 0);
            r->st = st;
        }
        if (compare) compare_all(cl, refs, &rng);
    }
    /* Drain everything: the cluster must come back to empty, one class per shape. */
    while (nlive > 0) {
        live_t l = lv[--nlive];
        assert_int_equal(ref_apply(&refs[l.pl.node], &l.req, &l.pl, -1), 0);
        assert_int_equal(sl_cluster_release(cl, &l.req, &l.pl), 0);
    }
    for (uint32_t i = 0; i < RN; i++) assert_int_equal(sl_cluster_set_state(cl, i, SL_NODE_UP), 0);
    if (compare) {
        assert_int_equal(sl_cluster_class_count(cl), NSHAPES);
        sl_res_t t, f;
        sl_cluster_capacity(cl, &t, &f);
        assert_memory_equal(&t, &f, sizeof t);
    }
    sl_free(lv);
}

static void test_cluster_random_ops_match_reference(void **state) {
    (void)state;
    for (uint64_t seed = 1; seed <= 4; seed++) {
        sl_cluster_t *cl = tu_cluster();
        ref_t refs[RN];
        run_random(cl, refs, seed, 5000, true);
        sl_cluster_destroy(cl);
    }
}

static void test_cluster_same_calls_same_index(void **state) {
    (void)state;
    sl_cluster_t *a = tu_cluster(), *b = tu_cluster();
    ref_t ra[RN], rb[RN];
    run_random(a, ra, 99, 3000, false);
    run_random(b, rb, 99, 3000, false);
    /* Midway state is compared through a second run that stops early. */
    sl_cluster_t *c = tu_cluster(), *d = tu_cluster();
    run_random(c, ra, 5, 1234, false);
    run_random(d, rb, 5, 1234, false);
    sl_cluster_t *pairs[2][2] = {{a, b}, {c, d}};
    for (int p = 0; p < 2; p++) {
        sl_cluster_t *x = pairs[p][0], *y = pairs[p][1];
        assert_int_equal(sl_cluster_class_count(x), sl_cluster_class_count(y));
        for (size_t i = 0; i < sl_cluster_class_count(x); i++) {
            assert_int_equal(sl_cluster_class_size(x, i), sl_cluster_class_size(y, i));
            for (uint32_t k = 0; k < sl_cluster_class_size(x, i); k++)
                assert_int_equal(sl_cluster_class_node(x, i, k), sl_cluster_class_node(y, i, k));
        }
    }
    sl_cluster_destroy(a);
    sl_cluster_destroy(b);
    sl_cluster_destroy(c);
    sl_cluster_destroy(d);
}

/* Many classes: every node in its own state, then all back to one. */
static void test_cluster_many_classes_grow_and_shrink(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    tu_add_nodes(cl, "n", 2000, "1000", "1Ti", 0, NULL, NULL, NULL);
    sl_task_req_t q = tu_req("", "", 0, "");
    for (uint32_t i = 0; i < 2000; i++) {
        q.cpu_milli = i; /* node i keeps i milli-CPUs busy */
        sl_place_t pl = {.node = i};
        assert_int_equal(sl_cluster_alloc(cl, &q, &pl), 0);
    }
    assert_int_equal(sl_cluster_class_count(cl), 2000);
    assert_int_equal(sl_cluster_check(cl), 0);
    for (uint32_t i = 0; i < 2000; i += 2) assert_int_equal(sl_cluster_set_state(cl, i, SL_NODE_DOWN), 0);
    assert_int_equal(sl_cluster_class_count(cl), 1000);
    assert_int_equal(sl_cluster_check(cl), 0);
    for (uint32_t i = 0; i < 2000; i++) {
        q.cpu_milli = i;
        sl_place_t pl = {.node = i};
        assert_int_equal(sl_cluster_release(cl, &q, &pl), 0);
        if (i % 97 == 0) assert_int_equal(sl_cluster_check(cl), 0);
    }
    assert_int_equal(sl_cluster_class_count(cl), 1);
    assert_int_equal(sl_cluster_class_size(cl, 0), 1000);
    for (uint32_t i = 0; i < 2000; i += 2) assert_int_equal(sl_cluster_set_state(cl, i, SL_NODE_UP), 0);
    assert_int_equal(sl_cluster_class_size(cl, 0), 2000);
    assert_int_equal(sl_cluster_check(cl), 0);
    sl_cluster_destroy(cl);
}

/* The checker itself: a node changed behind the index's back is reported. */
static void test_cluster_check_detects_stale_index(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    tu_add_nodes(cl, "n", 4, "8", "32Gi", 2, "T4", "16Gi", NULL);
    assert_int_equal(sl_cluster_check(cl), 0);
    sl_node_t *n = (sl_node_t *)sl_cluster_node(cl, 2); /* deliberate corruption */
    n->gpu_free[1] = 400;
    assert_int_equal(sl_cluster_check(cl), SL_ESTATE);
    n->gpu_free[1] = 1000;
    n->cpu_free = n->cpu_total + 1;
    assert_int_equal(sl_cluster_check(cl), SL_ESTATE);
    n->cpu_free = n->cpu_total;
    assert_int_equal(sl_cluster_check(cl), 0);
    /* A stale summary or a class in the wrong bucket is reported too. */
    sl__class_t *s = (sl__class_t *)sl__cluster_classes(cl); /* deliberate corruption */
    s[0].share_max = 500;
    assert_int_equal(sl_cluster_check(cl), SL_ESTATE);
    s[0].share_max = 1000;
    s[0].full_free = 1;
    assert_int_equal(sl_cluster_check(cl), SL_ESTATE);
    s[0].full_free = 2;
    assert_int_equal(sl_cluster_check(cl), 0);
    sl_cluster_destroy(cl);
}

/* Each node counts its GPU tasks by kind (a share; k whole GPUs): the bit
 * of a kind stays while one task of it runs; two nodes with the same free
 * GPUs but other kinds are two classes; a release of a kind the node does
 * not run is refused and changes nothing, even when its GPUs are in use
 * (by tasks of another kind). */
static void test_cluster_kinds_follow_tasks(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    uint32_t a = tu_add_nodes(cl, "a", 1, "96", "384Gi", 8, "V100", "", "");
    uint32_t b = tu_add_nodes(cl, "b", 1, "96", "384Gi", 8, "V100", "", "");
    sl_task_req_t two = tu_req("1", "1Gi", 2, ""), one = tu_req("1", "1Gi", 1, "");
    sl_task_req_t share = tu_req("1", "1Gi", 0, "0.3"), cpu = tu_req("1", "1Gi", 0, "");
    sl_place_t p01 = {.node = a, .gpu_mask = 0x3, .gpu_milli = 1000};
    sl_place_t p23 = {.node = a, .gpu_mask = 0xc, .gpu_milli = 1000};
    assert_int_equal(sl_cluster_alloc(cl, &two, &p01), 0);
    assert_int_equal(sl_cluster_alloc(cl, &two, &p23), 0);
    assert_int_equal(sl_cluster_node(cl, a)->kinds, 1u << 2);
    assert_int_equal(sl_cluster_release(cl, &two, &p01), 0);
    assert_int_equal(sl_cluster_node(cl, a)->kinds, 1u << 2);
    /* b: two 1-GPU tasks, a's free state again but another kind. */
    sl_place_t b0 = {.node = b, .gpu_mask = 0x1, .gpu_milli = 1000};
    sl_place_t b1 = {.node = b, .gpu_mask = 0x2, .gpu_milli = 1000};
    assert_int_equal(sl_cluster_alloc(cl, &one, &b0), 0);
    assert_int_equal(sl_cluster_alloc(cl, &one, &b1), 0);
    assert_int_equal(sl_cluster_node(cl, b)->kinds, 1u << 1);
    assert_int_equal(sl_cluster_class_count(cl), 2);
    /* A 2-GPU release over b's two 1-GPU tasks: the GPUs are in use, the kind is not. */
    sl_place_t bb = {.node = b, .gpu_mask = 0x3, .gpu_milli = 1000};
    sl_node_t before = *sl_cluster_node(cl, b);
    assert_int_equal(sl_cluster_release(cl, &two, &bb), SL_EINVAL);
    assert_memory_equal(&before, sl_cluster_node(cl, b), sizeof before);
    /* Shares are one kind; tasks without GPUs none. */
    sl_place_t s4 = {.node = a, .gpu_mask = 0x10, .gpu_milli = 300};
    sl_place_t pc = {.node = a};
    assert_int_equal(sl_cluster_alloc(cl, &share, &s4), 0);
    assert_int_equal(sl_cluster_alloc(cl, &cpu, &pc), 0);
    assert_int_equal(sl_cluster_node(cl, a)->kinds, (1u << 2) | SL_KIND_SHARE);
    assert_int_equal(sl_cluster_release(cl, &two, &p23), 0);
    assert_int_equal(sl_cluster_release(cl, &share, &s4), 0);
    assert_int_equal(sl_cluster_node(cl, a)->kinds, 0);
    assert_int_equal(sl_cluster_release(cl, &cpu, &pc), 0);
    assert_int_equal(sl_cluster_release(cl, &one, &b0), 0);
    assert_int_equal(sl_cluster_release(cl, &one, &b1), 0);
    assert_int_equal(sl_cluster_class_count(cl), 1);
    assert_int_equal(sl_cluster_check(cl), 0);
    sl_cluster_destroy(cl);
}

/* 10,000 nodes, 200,000 operations: the index ends consistent and drains back. */
static void test_cluster_index_at_10000_nodes(void **state) {
    (void)state;
    sl_cluster_t *cl = tu_cluster();
    tu_add_nodes(cl, "a", 4000, "96", "768Gi", 8, "G2", "32Gi", NULL);
    tu_add_nodes(cl, "t", 3000, "96", "512Gi", 2, "T4", "16Gi", NULL);
    tu_add_nodes(cl, "v", 2000, "64", "256Gi", 4, "V100", "32Gi", "v");
    tu_add_nodes(cl, "c", 1000, "64", "256Gi", 0, NULL, NULL, NULL);
    assert_int_equal(sl_cluster_class_count(cl), 4);
    enum { CAP = 65536 };
    live_t *lv = sl_xmalloc(sizeof *lv * CAP);
    int nlive = 0;
    size_t max_classes = 0;
    sl_rng_t rng;
    sl_rng_seed(&rng, 10000);
    for (int step = 0; step < 200000; step++) {
        if (nlive < CAP && (nlive == 0 || sl_rng_below(&rng, 100) < 80)) {
            sl_task_req_t q = random_req(&rng, cl);
            uint32_t id = (uint32_t)sl_rng_below(&rng, 10000);
            sl_place_t pl;
            if (sl_node_choose_gpus(sl_cluster_node(cl, id), &q, &pl) != SL_FIT) continue;
            assert_int_equal(sl_cluster_alloc(cl, &q, &pl), 0);
            lv[nlive++] = (live_t){q, pl};
        } else {
            uint32_t k = (uint32_t)sl_rng_below(&rng, (uint64_t)nlive);
            assert_int_equal(sl_cluster_release(cl, &lv[k].req, &lv[k].pl), 0);
            lv[k] = lv[--nlive];
        }
        if (sl_cluster_class_count(cl) > max_classes) max_classes = sl_cluster_class_count(cl);
        if (step % 20000 == 0) assert_int_equal(sl_cluster_check(cl), 0);
    }
    assert_true(max_classes > 100); /* the run really spread nodes over many classes */
    assert_int_equal(sl_cluster_check(cl), 0);
    while (nlive > 0) {
        nlive--;
        assert_int_equal(sl_cluster_release(cl, &lv[nlive].req, &lv[nlive].pl), 0);
    }
    assert_int_equal(sl_cluster_class_count(cl), 4);
    assert_int_equal(sl_cluster_check(cl), 0);
    sl_free(lv);
    sl_cluster_destroy(cl);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_cluster_random_ops_match_reference, tu_teardown),
        cmocka_unit_test_teardown(test_cluster_same_calls_same_index, tu_teardown),
        cmocka_unit_test_teardown(test_cluster_many_classes_grow_and_shrink, tu_teardown),
        cmocka_unit_test_teardown(test_cluster_check_detects_stale_index, tu_teardown),
        cmocka_unit_test_teardown(test_cluster_kinds_follow_tasks, tu_teardown),
        cmocka_unit_test_teardown(test_cluster_index_at_10000_nodes, tu_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
