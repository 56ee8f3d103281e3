/*
 * workload.c - typical task shapes and the FGD fragmentation measure
 * (Weng et al., "Beware of Fragmentation: Scheduling GPU-Sharing Workloads
 * with Fragmentation Gradient Descent", USENIX ATC'23, Sec. 4).
 *
 * Definitions, as in the paper's simulator (pkg/utils/frag.go of
 * hkust-adsl/kubernetes-scheduler-simulator), for a node and a task shape m:
 *
 *   - m asks for no GPU: every free GPU milli of the node is fragmented (a
 *     CPU-only task can use none of it);
 *   - m asks for a GPU model the node does not have: all are fragmented;
 *   - the node lacks the CPU (or memory) for m: all are fragmented;
 *   - the node has fewer usable GPUs than m needs (a share needs one GPU
 *     with at least m's milli and GPU memory free; whole GPUs need that many
 *     entirely free GPUs): all are fragmented;
 *   - otherwise m fits, and only the free milli of the GPUs that m cannot
 *     use (free below its share, or partially used for whole-GPU shapes)
 *     is fragmented.
 *
 * The simulator ignores host memory; Sluice also counts a node that lacks
 * the memory for m as fully fragmented for m. On the Alibaba trace memory
 * never binds first, so the two agree there.
 *
 * The node's expected fragmentation is the popularity-weighted sum over the
 * workload's shapes (popularity = count / total), in GPU milli.
 *
 * Typical shapes (sl_workload_set_typical). By default every shape counts,
 * memory included: what sluiced measures. The FGD artifact's experiments
 * measure over "typical pods" instead (GetTypicalPods with its
 * typicalPodsConfig: podPopularityThreshold 95, podIncreaseStep 1): its
 * shapes are keyed by CPU, GPU count, GPU milli and GPU model only (host
 * memory is no part of them nor of its fragmentation test), sorted by
 * count, most popular first, and only the first ones that together make
 * at least 95% of the pods are kept, their popularity renormalised over
 * what is kept. The view F is computed over is built lazily after every
 * change (in the memo: the shapes as they are, or merged and cut as
 * above; equal counts keep the order the shapes were first added in).
 *
 * Workload: tens to ~100 shapes, evaluated millions of times by FGD on node
 * states that repeat, hence the memo below: a hash table keyed by the part of
 * the state the measure depends on (which shapes' CPU and memory demands the
 * node meets, its model, and its sorted free GPU milli). It is flushed
 * whenever the workload changes, and when it is half full, in O(1): entries
 * carry the generation they were made in, and a flush starts a new one (so
 * a scheduler that adds every submitted job's shape pays nothing per add).
 *
 * FGD's fast path adds a per-class memo (sl__class_memo_*): a class of the
 * cluster's index never changes state while it lives, so its F and the FGD
 * primary of each request shape placed there are kept in arrays indexed by
 * the class's stable slot. A slot entry is valid while the class's uid and
 * state hash match it; each fill gets a fresh version (never reused), and a
 * cached primary counts only if it carries its slot's current version, so a
 * reused slot is invalidated at once, and a changed workload (every version
 * so far dies: min_ver) in O(1).
 * Request shapes are interned through a small hash table (up to
 * RQ_MAX, fewer when the cluster has so many class slots that the rows
 * would pass 64 MiB; past that the memo starts over). One cluster at a time: another
 * cluster flushes it.
 */
#include <stdlib.h>
#include <string.h>

#include "sluice/alloc.h"
#include "sluice/error.h"
#include "sluice/hash.h"
#include "sluice/workload.h"

#include "policy/place.h"

#define MEMO_BITS 18
#define MEMO_SLOTS (1u << MEMO_BITS)

typedef struct memo_key {
    uint16_t cpu_rank, mem_rank; /* how many distinct shape demands the free amount meets */
    int16_t model;
    uint16_t ngpus;
    uint16_t gfree[SL_MAX_GPUS_PER_NODE]; /* ascending */
} memo_key_t;

typedef struct memo_slot {
    memo_key_t key;
    uint32_t gen; /* valid only when equal to the memo's generation */
    double val;
} memo_slot_t;

typedef struct memo {
    memo_slot_t *slots; /* MEMO_SLOTS, allocated on first use */
    uint32_t count;
    uint32_t gen;       /* current generation of slots (>= 1): flushing is O(1) */
    bool usable;        /* false when shapes ask for GPU memory (not in the key) */
    int64_t *cpu_levels, *mem_levels; /* sorted distinct demands */
    uint32_t ncpu, nmem;
    /* Distinct GPU demands (whole count, or share milli as a negative
     * number) and, per shape, the index of its demand: on a miss each
     * demand's GPU test is done once per node, not once per shape. */
    int32_t *demand;
    uint32_t *shape_demand;
    uint32_t ndemand;
    bool built;

    /* The per-class memo. */
    const sl_cluster_t *ccl; /* the cluster it describes */
    struct cslot *cs;        /* per class slot */
    uint32_t ncs;            /* slots (and row length) */
    uint64_t next_ver;
    uint64_t min_ver;        /* slot entries with ver <= min_ver are dead */
    sl_task_req_t *rq;       /* interned request shapes, RQ_MAX */
    uint32_t nrq;
    uint16_t *rq_tab;        /* rid + 1, RQ_TAB slots */
    uint64_t **rows;         /* rows[rid][slot] = version << 8 | primary */

    /* The shapes F is computed over (see the top): the workload's own, or
     * the typical view, built on first use after a change. */
    bool vbuilt;
    const sl_task_req_t *vs;
    const int64_t *vc;
    size_t vn;
    int64_t vtotal;
    sl_task_req_t *vs_own; /* the typical view's storage */
    int64_t *vc_own;
} memo_t;

typedef struct cslot {
    uint64_t uid, hash, ver; /* ver 0: empty */
    double before;
} cslot_t;

#define RQ_MAX 512
#define RQ_TAB 1024
#define ROWS_MAX_ENTRIES (UINT32_C(1) << 23) /* 64 MiB of cached primaries at most */

/* Request shapes interned at once: RQ_MAX, fewer when rows are long. */
static uint32_t rq_cap(const memo_t *m) {
    uint32_t c = m->ncs ? ROWS_MAX_ENTRIES / m->ncs : RQ_MAX;
    return c < 16 ? 16 : c > RQ_MAX ? RQ_MAX : c;
}

struct sl_workload {
    sl_task_req_t *shapes;
    int64_t *counts;
    size_t n, cap;
    int64_t total;
    int typical_pct; /* 1..100: keep the most popular shapes making this % of tasks */
    bool count_mem;  /* a node short of memory for a shape is fragmented for it */
    memo_t *memo; /* the pointee is mutable through a const workload */
};

int sl_workload_create(sl_workload_t **out) {
    sl_workload_t *w = sl_xcalloc(1, sizeof *w);
    w->memo = sl_xcalloc(1, sizeof *w->memo);
    w->memo->gen = 1;
    w->typical_pct = 100;
    w->count_mem = true;
    *out = w;
    return 0;
}

/* Forgets every class entry (all versions so far die, in O(1)) and every
 * request. */
static void class_memo_clear(memo_t *m) {
    m->min_ver = m->next_ver;
    if (m->rq_tab && m->nrq) memset(m->rq_tab, 0, RQ_TAB * sizeof *m->rq_tab);
    m->nrq = 0;
}

/* Empties the memo's slots: a new generation (memset only on wrap-around). */
static void memo_flush(memo_t *m) {
    m->count = 0;
    if (++m->gen == 0) {
        if (m->slots) memset(m->slots, 0, MEMO_SLOTS * sizeof *m->slots);
        m->gen = 1;
    }
}

static void memo_reset(memo_t *m) {
    class_memo_clear(m);
    m->vbuilt = false;
    sl_free(m->cpu_levels);
    sl_free(m->mem_levels);
    sl_free(m->demand);
    sl_free(m->shape_demand);
    m->cpu_levels = m->mem_levels = NULL;
    m->demand = NULL;
    m->shape_demand = NULL;
    m->ncpu = m->nmem = m->ndemand = 0;
    m->built = false;
    if (m->count) memo_flush(m);
}

void sl_workload_destroy(sl_workload_t *w) {
    if (!w) return;
    memo_t *m = w->memo;
    memo_reset(m);
    sl_free(m->slots);
    sl_free(m->cs);
    sl_free(m->rq);
    sl_free(m->rq_tab);
    if (m->rows)
        for (uint32_t i = 0; i < RQ_MAX; i++) sl_free(m->rows[i]);
    sl_free(m->rows);
    sl_free(m->vs_own);
    sl_free(m->vc_own);
    sl_free(m);
    sl_free(w->shapes);
    sl_free(w->counts);
    sl_free(w);
}

/* Two shapes are the same if every field but the pool matches. */
static bool same_shape(const sl_task_req_t *a, const sl_task_req_t *b) {
    return a->cpu_milli == b->cpu_milli && a->mem_bytes == b->mem_bytes && a->gpus == b->gpus &&
           a->gpu_milli == b->gpu_milli && a->gpu_mem_bytes == b->gpu_mem_bytes &&
           a->model_mask == b->model_mask;
}

int sl_workload_add(sl_workload_t *w, const sl_task_req_t *req, int64_t count) {
    if (!w || !req || count <= 0) return SL_EINVAL;
    sl_task_req_t s = *req;
    s.pool = -1;
    s.cons = NULL; /* a shape, not where it may run: and the constraint may be freed */
    memo_reset(w->memo);
    w->total += count;
    for (size_t i = 0; i < w->n; i++) {
        if (same_shape(&w->shapes[i], &s)) {
            w->counts[i] += count;
            return 0;
        }
    }
    if (w->n == w->cap) {
        w->cap = w->cap ? 2 * w->cap : 16;
        w->shapes = sl_xrealloc(w->shapes, w->cap * sizeof *w->shapes);
        w->counts = sl_xrealloc(w->counts, w->cap * sizeof *w->counts);
    }
    w->shapes[w->n] = s;
    w->counts[w->n] = count;
    w->n++;
    return 0;
}

void sl_workload_clear(sl_workload_t *w) {
    if (!w) return;
    memo_reset(w->memo);
    w->n = 0;
    w->total = 0;
}

size_t sl_workload_shape_count(const sl_workload_t *w) {
    return w ? w->n : 0;
}

const sl_task_req_t *sl_workload_shape(const sl_workload_t *w, size_t i, int64_t *count) {
    if (!w || i >= w->n) return NULL;
    if (count) *count = w->counts[i];
    return &w->shapes[i];
}

int64_t sl_workload_total(const sl_workload_t *w) {
    return w ? w->total : 0;
}

int sl_workload_set_typical(sl_workload_t *w, int popularity_pct, bool count_mem) {
    if (!w || popularity_pct < 1 || popularity_pct > 100) return SL_EINVAL;
    w->typical_pct = popularity_pct;
    w->count_mem = count_mem;
    memo_reset(w->memo);
    return 0;
}

/* ---- the shapes F is computed over ---- */

typedef struct vkey {
    int64_t count;
    size_t first; /* position of first addition: ties keep it */
} vkey_t;

static int cmp_vkey(const void *a, const void *b) {
    const vkey_t *x = a, *y = b;
    if (x->count != y->count) return x->count > y->count ? -1 : 1;
    return (x->first > y->first) - (x->first < y->first);
}

/* Builds m's view of w (see the top). O(shapes^2) for the merge (tens to
 * hundreds of shapes), once per change of the workload. */
static void view_build(const sl_workload_t *w, memo_t *m) {
    m->vbuilt = true;
    if (w->typical_pct >= 100 && w->count_mem) {
        m->vs = w->shapes;
        m->vc = w->counts;
        m->vn = w->n;
        m->vtotal = w->total;
        return;
    }
    size_t n = 0, cap = w->n ? w->n : 1;
    sl_task_req_t *sh = sl_xmalloc(cap * sizeof *sh);
    vkey_t *key = sl_xmalloc(cap * sizeof *key);
    for (size_t i = 0; i < w->n; i++) {
        sl_task_req_t s = w->shapes[i];
        if (!w->count_mem) s.mem_bytes = 0;
        size_t k = 0;
        while (k < n && !same_shape(&sh[k], &s)) k++;
        if (k == n) {
            sh[n] = s;
            key[n] = (vkey_t){0, n};
            n++;
        }
        key[k].count += w->counts[i];
    }
    qsort(key, n, sizeof *key, cmp_vkey);
    sl_free(m->vs_own);
    sl_free(m->vc_own);
    m->vs_own = sl_xmalloc(cap * sizeof *m->vs_own);
    m->vc_own = sl_xmalloc(cap * sizeof *m->vc_own);
    int64_t cum = 0;
    size_t kept = 0;
    /* As the reference: add shapes while the kept ones make less than the
     * threshold (so the one that crosses it is kept). */
    while (kept < n && cum * 100 < (int64_t)w->typical_pct * w->total) {
        m->vs_own[kept] = sh[key[kept].first];
        m->vc_own[kept] = key[kept].count;
        cum += key[kept].count;
        kept++;
    }
    m->vs = m->vs_own;
    m->vc = m->vc_own;
    m->vn = kept;
    m->vtotal = cum;
    sl_free(sh);
    sl_free(key);
}

static const memo_t *view_of(const sl_workload_t *w) {
    if (!w->memo->vbuilt) view_build(w, w->memo);
    return w->memo;
}

int64_t sl_frag_node_shape(const sl_node_t *node, const sl_task_req_t *shape) {
    int64_t total = sl__node_gpu_free(node);
    if (!sl__req_gpu(shape)) return total;               /* CPU-only: no GPU is usable */
    if (!sl__model_ok(node, shape->model_mask)) return total;
    if (node->cpu_free < shape->cpu_milli || node->mem_free < shape->mem_bytes) return total;
    int32_t need = sl__req_whole(shape) ? shape->gpus : 1;
    int32_t usable = 0;
    int64_t frag = 0;
    for (int g = 0; g < node->ngpus; g++) {
        bool ok = sl__req_whole(shape) ? sl__gpu_full_free(node, g)
                                       : sl__share_fits_gpu(node, g, shape);
        if (ok)
            usable++;
        else
            frag += node->gpu_free[g];
    }
    return usable >= need ? frag : total;
}

double sl_frag_node(const sl_node_t *node, const sl_workload_t *w) {
    if (!w || w->total <= 0) return 0.0;
    const memo_t *v = view_of(w);
    double sum = 0.0, total = (double)v->vtotal;
    for (size_t i = 0; i < v->vn; i++) {
        int64_t f = sl_frag_node_shape(node, &v->vs[i]);
        if (f) sum += ((double)v->vc[i] / total) * (double)f;
    }
    return sum;
}

double sl_frag_cluster(const sl_cluster_t *cl, const sl_workload_t *w) {
    double sum = 0.0;
    size_t nc = sl_cluster_class_count(cl);
    for (size_t i = 0; i < nc; i++) {
        const sl_node_t *rep = sl_cluster_class_rep(cl, i);
        double f = sl__frag_node_cached(w, rep);
        sum += (double)sl_cluster_class_size(cl, i) * f;
    }
    return sum;
}

/* ---- the memo ---- */

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static uint32_t uniq_sorted(int64_t *v, uint32_t n) {
    qsort(v, n, sizeof *v, cmp_i64);
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++)
        if (k == 0 || v[k - 1] != v[i]) v[k++] = v[i];
    return k;
}

static void memo_build(const sl_workload_t *w, memo_t *m) {
    view_of(w);
    size_t n = m->vn;
    m->cpu_levels = sl_xmalloc((n + 1) * sizeof(int64_t));
    m->mem_levels = sl_xmalloc((n + 1) * sizeof(int64_t));
    m->usable = n < 65535;
    for (size_t i = 0; i < n; i++) {
        m->cpu_levels[i] = m->vs[i].cpu_milli;
        m->mem_levels[i] = m->vs[i].mem_bytes;
        if (m->vs[i].gpu_mem_bytes > 0) m->usable = false;
    }
    m->ncpu = uniq_sorted(m->cpu_levels, (uint32_t)n);
    m->nmem = uniq_sorted(m->mem_levels, (uint32_t)n);
    m->demand = sl_xmalloc((n + 1) * sizeof *m->demand);
    m->shape_demand = sl_xmalloc((n + 1) * sizeof *m->shape_demand);
    for (size_t i = 0; i < n; i++) {
        const sl_task_req_t *sh = &m->vs[i];
        int32_t d = sh->gpus > 0 ? sh->gpus : -sh->gpu_milli; /* 0: CPU only */
        uint32_t k = 0;
        while (k < m->ndemand && m->demand[k] != d) k++;
        if (k == m->ndemand) m->demand[m->ndemand++] = d;
        m->shape_demand[i] = k;
    }
    if (m->usable && !m->slots) m->slots = sl_xcalloc(MEMO_SLOTS, sizeof *m->slots);
    m->built = true;
}

/* Number of levels <= v (levels ascending). */
static uint16_t rank_of(const int64_t *lv, uint32_t n, int64_t v) {
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (lv[mid] <= v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (uint16_t)lo;
}

/*
 * sl_frag_node with the GPU test done once per distinct demand. It computes
 * the same per-shape values and adds them in the same order with the same
 * expression, so the result is bit-identical (the memo test checks this).
 * Valid only when no shape asks for GPU memory (m->usable).
 */
static double frag_fast(const sl_workload_t *w, const memo_t *m, const sl_node_t *node) {
    int64_t total = sl__node_gpu_free(node);
    int64_t dfrag[64];
    int64_t *df = m->ndemand <= 64 ? dfrag : sl_xmalloc(m->ndemand * sizeof *df);
    for (uint32_t k = 0; k < m->ndemand; k++) {
        int32_t d = m->demand[k];
        if (d == 0) {
            df[k] = total;
            continue;
        }
        int32_t need = d > 0 ? d : 1, usable = 0;
        int64_t frag = 0;
        for (int g = 0; g < node->ngpus; g++) {
            bool ok = d > 0 ? sl__gpu_full_free(node, g) : node->gpu_free[g] >= -d;
            if (ok)
                usable++;
            else
                frag += node->gpu_free[g];
        }
        df[k] = usable >= need ? frag : total;
    }
    double sum = 0.0, tot = (double)m->vtotal;
    for (size_t i = 0; i < m->vn; i++) {
        const sl_task_req_t *sh = &m->vs[i];
        int64_t f;
        if (!sl__req_gpu(sh) || !sl__model_ok(node, sh->model_mask) ||
            node->cpu_free < sh->cpu_milli || node->mem_free < sh->mem_bytes)
            f = total;
        else
            f = df[m->shape_demand[i]];
        if (f) sum += ((double)m->vc[i] / tot) * (double)f;
    }
    if (df != dfrag) sl_free(df);
    return sum;
}

static uint64_t key_hash(const memo_key_t *k) {
    uint64_t words[sizeof *k / 8 + 1];
    memset(words, 0, sizeof words);
    memcpy(words, k, sizeof *k);
    uint64_t h = 0x9e3779b97f4a7c15ULL;
    for (size_t i = 0; i < sizeof words / 8; i++) {
        h = (h ^ words[i]) * 0x9fb21c651e98df25ULL;
        h ^= h >> 29;
    }
    return sl_mix64(h);
}

double sl__frag_node_cached(const sl_workload_t *w, const sl_node_t *node) {
    if (!w || w->total <= 0) return 0.0;
    memo_t *m = w->memo;
    if (!m->built) memo_build(w, m);
    if (!m->usable) return sl_frag_node(node, w);

    memo_key_t k;
    memset(&k, 0, sizeof k);
    k.cpu_rank = rank_of(m->cpu_levels, m->ncpu, node->cpu_free);
    k.mem_rank = rank_of(m->mem_levels, m->nmem, node->mem_free);
    k.model = (int16_t)node->model;
    k.ngpus = (uint16_t)node->ngpus;
    for (int i = 0; i < node->ngpus; i++) {
        /* A whole GPU counts as free only with all its memory free; keep that
         * distinction in the key by mapping "1000 milli, memory in use" to 1001. */
        uint16_t x = (uint16_t)node->gpu_free[i];
        if (x == SL_GPU_MILLI && node->gpu_mem_free[i] != node->gpu_mem_total) x = SL_GPU_MILLI + 1;
        int j = i;
        while (j > 0 && k.gfree[j - 1] > x) {
            k.gfree[j] = k.gfree[j - 1];
            j--;
        }
        k.gfree[j] = x;
    }
    uint64_t h = key_hash(&k);
    uint32_t mask = MEMO_SLOTS - 1, i = (uint32_t)h & mask;
    for (;;) {
        memo_slot_t *s = &m->slots[i];
        if (s->gen != m->gen) break;
        if (memcmp(&s->key, &k, sizeof k) == 0) return s->val;
        i = (i + 1) & mask;
    }
    double v = frag_fast(w, m, node);
    if (m->count >= MEMO_SLOTS / 2) {
        memo_flush(m);
        i = (uint32_t)h & mask;
    }
    m->slots[i].key = k;
    m->slots[i].gen = m->gen;
    m->slots[i].val = v;
    m->count++;
    return v;
}

/* ---- the per-class memo ---- */

static uint64_t req_hash(const sl_task_req_t *r) {
    uint64_t v[6] = {(uint64_t)r->cpu_milli, (uint64_t)r->mem_bytes, (uint64_t)(uint32_t)r->gpus,
                     (uint64_t)(uint32_t)r->gpu_milli, (uint64_t)r->gpu_mem_bytes, r->model_mask};
    uint64_t h = 0x9e3779b97f4a7c15ULL;
    for (int i = 0; i < 6; i++) {
        h = (h ^ v[i]) * 0x9fb21c651e98df25ULL;
        h ^= h >> 29;
    }
    return h;
}

/* The request's id, interning it; -1 when the table is full. */
static int32_t rq_intern(memo_t *m, const sl_task_req_t *req) {
    uint32_t i = (uint32_t)req_hash(req) & (RQ_TAB - 1);
    for (;;) {
        uint16_t e = m->rq_tab[i];
        if (!e) break;
        if (same_shape(&m->rq[e - 1], req)) return e - 1;
        i = (i + 1) & (RQ_TAB - 1);
    }
    if (m->nrq >= rq_cap(m)) return -1;
    m->rq[m->nrq] = *req;
    m->rq_tab[i] = (uint16_t)(m->nrq + 1);
    return (int32_t)m->nrq++;
}

int32_t sl__class_memo_begin(const sl_workload_t *w, const sl_cluster_t *cl, const sl_task_req_t *req,
                             uint64_t **row) {
    *row = NULL;
    if (!w || !cl || !req) return -1;
    memo_t *m = w->memo;
    if (!m->rq) {
        m->rq = sl_xmalloc(RQ_MAX * sizeof *m->rq);
        m->rq_tab = sl_xcalloc(RQ_TAB, sizeof *m->rq_tab);
        m->rows = sl_xcalloc(RQ_MAX, sizeof *m->rows);
    }
    if (m->ccl != cl) {
        class_memo_clear(m);
        m->ccl = cl;
    }
    uint32_t need = sl__cluster_slot_count(cl);
    if (need > m->ncs) {
        uint32_t n = m->ncs ? m->ncs : 64;
        while (n < need) n *= 2;
        m->cs = sl_xrealloc(m->cs, n * sizeof *m->cs);
        memset(m->cs + m->ncs, 0, (n - m->ncs) * sizeof *m->cs);
        uint32_t old = m->ncs;
        m->ncs = n;
        uint32_t cap = rq_cap(m);
        if (m->nrq > cap) class_memo_clear(m);
        for (uint32_t r = 0; r < RQ_MAX; r++) {
            if (!m->rows[r]) continue;
            if (r >= cap) { /* longer rows, fewer of them: stay within ROWS_MAX_ENTRIES */
                sl_free(m->rows[r]);
                m->rows[r] = NULL;
                continue;
            }
            m->rows[r] = sl_xrealloc(m->rows[r], n * sizeof *m->rows[r]);
            memset(m->rows[r] + old, 0, (n - old) * sizeof *m->rows[r]);
        }
    }
    int32_t rid = rq_intern(m, req);
    if (rid < 0) { /* full: start over (rows stay, their versions are dead) */
        class_memo_clear(m);
        rid = rq_intern(m, req);
    }
    if (!m->rows[rid]) m->rows[rid] = sl_xcalloc(m->ncs, sizeof *m->rows[rid]);
    *row = m->rows[rid];
    return rid;
}

double sl__class_memo_before(const sl_workload_t *w, const sl_cluster_t *cl, const sl__class_t *c,
                             const sl__class_id_t *id, uint64_t *version) {
    memo_t *m = w->memo;
    if (m->ccl != cl || id->slot >= m->ncs) { /* no begin for this cluster: no memo */
        *version = 0;
        return sl__frag_node_cached(w, sl_cluster_node(cl, c->rep));
    }
    cslot_t *e = &m->cs[id->slot];
    if (e->ver <= m->min_ver || e->uid != id->uid || e->hash != id->hash) {
        e->uid = id->uid;
        e->hash = id->hash;
        e->ver = ++m->next_ver;
        e->before = sl__frag_node_cached(w, sl_cluster_node(cl, c->rep));
    }
    *version = e->ver;
    return e->before;
}
