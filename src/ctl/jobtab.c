/*
 * jobtab.c - jobs in memory by id: an open-addressing hash table (linear
 * probing with backward-shift deletion, Fibonacci hashing of the dense
 * ids, a power-of-two size kept at most half full and shrunk below one
 * eighth), plus the ring of retained finished jobs that trimming pops
 * (see jobtab.h).
 */
#include "jobtab.h"

static size_t map_slot(uint64_t id, size_t cap) {
    uint64_t h = id * 0x9E3779B97F4A7C15ull; /* Fibonacci hashing: ids are dense */
    return (size_t)(h ^ (h >> 29)) & (cap - 1);
}

static void map_put(ctl_job_t **map, size_t cap, ctl_job_t *j) {
    size_t i = map_slot(j->id, cap);
    while (map[i] != NULL && map[i]->id != j->id)
        i = (i + 1) & (cap - 1);
    map[i] = j;
}

static void map_resize(ctl_t *c, size_t cap) {
    ctl_job_t **map = sl_xcalloc(cap, sizeof *map);
    for (size_t i = 0; i < c->jobmap_cap; i++)
        if (c->jobmap[i] != NULL)
            map_put(map, cap, c->jobmap[i]);
    sl_free(c->jobmap);
    c->jobmap = map;
    c->jobmap_cap = cap;
}

ctl_job_t *ctl_job_find(ctl_t *c, uint64_t id) {
    if (c->jobmap_cap == 0)
        return NULL;
    for (size_t i = map_slot(id, c->jobmap_cap);; i = (i + 1) & (c->jobmap_cap - 1)) {
        ctl_job_t *j = c->jobmap[i];
        if (j == NULL || j->id == id)
            return j;
    }
}

void ctl_job_register(ctl_t *c, ctl_job_t *j) {
    if (2 * (c->njobs + 1) > c->jobmap_cap)
        map_resize(c, c->jobmap_cap ? 2 * c->jobmap_cap : 1024);
    if (ctl_job_find(c, j->id) == NULL)
        c->njobs++;
    map_put(c->jobmap, c->jobmap_cap, j);
}

ctl_job_t *ctl_job_unregister(ctl_t *c, uint64_t id) {
    if (c->jobmap_cap == 0)
        return NULL;
    size_t m = c->jobmap_cap - 1, hole = map_slot(id, c->jobmap_cap);
    while (c->jobmap[hole] != NULL && c->jobmap[hole]->id != id)
        hole = (hole + 1) & m;
    ctl_job_t *j = c->jobmap[hole];
    if (j == NULL)
        return NULL;
    c->jobmap[hole] = NULL;
    c->njobs--;
    /* Backward shift: move later members of the probe run into the hole
     * when the hole lies between their home slot and where they sit. */
    for (size_t k = (hole + 1) & m; c->jobmap[k] != NULL; k = (k + 1) & m) {
        size_t home = map_slot(c->jobmap[k]->id, c->jobmap_cap);
        if (((k - home) & m) >= ((k - hole) & m)) {
            c->jobmap[hole] = c->jobmap[k];
            c->jobmap[k] = NULL;
            hole = k;
        }
    }
    if (c->jobmap_cap > 1024 && 8 * c->njobs < c->jobmap_cap)
        map_resize(c, c->jobmap_cap / 2);
    return j;
}

void ctl_job_retain(ctl_t *c, ctl_job_t *j) {
    if (j->retained)
        return;
    j->retained = true;
    if (c->fin_len == c->fin_cap) {
        size_t cap = c->fin_cap ? 2 * c->fin_cap : 1024;
        uint64_t *fin = sl_xmalloc(cap * sizeof *fin);
        for (size_t i = 0; i < c->fin_len; i++)
            fin[i] = c->fin[(c->fin_head + i) % c->fin_cap];
        sl_free(c->fin);
        c->fin = fin;
        c->fin_cap = cap;
        c->fin_head = 0;
    }
    c->fin[(c->fin_head + c->fin_len) % c->fin_cap] = j->id;
    c->fin_len++;
}

size_t ctl_jobs_trim(ctl_t *c, int64_t now_us, size_t max) {
    int64_t cut = now_us - c->cfg.job_retention_ms * 1000;
    size_t n = 0;
    while (c->fin_len > 0 && n < max) {
        ctl_job_t *j = ctl_job_find(c, c->fin[c->fin_head]);
        if (j != NULL) {
            /* End times come in (nearly) finishing order, so the head is
             * the oldest; retention 0 forgets even an end time reported
             * slightly ahead of this clock. */
            bool drop = (int64_t)c->fin_len > c->cfg.max_finished_jobs ||
                        c->cfg.job_retention_ms == 0 || j->end_us <= cut;
            if (!drop)
                break;
            ctl_job_free(ctl_job_unregister(c, j->id));
            c->n.jobs_forgotten++;
        }
        c->fin_head = (c->fin_head + 1) % c->fin_cap;
        c->fin_len--;
        n++;
    }
    return n;
}

bool ctl_jobs_trim_hook(void *ud) {
    return ctl_jobs_trim(ud, ctl_now_us(), CTL_TRIM_PER_PASS) == CTL_TRIM_PER_PASS;
}

void ctl_jobs_fini(ctl_t *c) {
    for (size_t i = 0; i < c->jobmap_cap; i++)
        ctl_job_free(c->jobmap[i]);
    sl_free(c->jobmap);
    sl_free(c->fin);
    c->jobmap = NULL;
    c->fin = NULL;
    c->jobmap_cap = c->njobs = c->fin_len = c->fin_cap = c->fin_head = 0;
}
