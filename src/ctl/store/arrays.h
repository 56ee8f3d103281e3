/*
 * store_deps.h - the rows of job arrays (store_deps.c), beside store.h.
 *
 * An array of n elements is one row of job_arrays(id, n, text, done) and
 * n ordinary rows of jobs with the ids id..id+n-1, all written in one
 * SAVEPOINT of the iteration's transaction, so that an array is on disk
 * whole or not at all. Dependencies need no table: a job's spec keeps its
 * dependency text, and the states of the jobs it names are durable, so
 * recovery evaluates it again and finds what was found before.
 */
#ifndef SLUICE_CTL_STORE_DEPS_H
#define SLUICE_CTL_STORE_DEPS_H

#include "store/store.h"

/* Inserts the array row (id jobs[0]->id, n, text) and the rows of its n
 * elements jobs[0..n), which share one spec (jobs[0]->spec) and tenant.
 * 0, or SL_EIO when SQLite refused a row (logged; nothing of the array is
 * left in the transaction). O(n). */
int ctl_store_array_insert(ctl_store_t *s, ctl_job_t *const *jobs, size_t n, const char *text,
                           const char *tenant);
/* Marks the array done (every element ended). */
void ctl_store_array_done(ctl_store_t *s, uint64_t id);

/* An array row. */
typedef struct ctl_store_array {
    uint64_t id;
    int32_t n;
    bool done;
    char text[260];
} ctl_store_array_t;

/* The array whose elements include job id (the row with the largest id at
 * most id, if id is below its end): 1 with *out, 0 when none, -1 on a
 * failed read. O(log arrays). */
int ctl_store_array_of(ctl_store_t *s, uint64_t id, ctl_store_array_t *out);
/* Every array that is not done, or that has elements at or above min_id,
 * by id. fn returns 0, or -1 to stop (its reason in s->errbuf). */
typedef int (*ctl_store_array_fn)(void *ud, const ctl_store_array_t *a);
int ctl_store_arrays_read(ctl_store_t *s, uint64_t min_id, ctl_store_array_fn fn, void *ud);
/* The elements of array id (n of them) that started (or ended), ended,
 * and ended without succeeding, from their rows. 0 or -1. O(n). */
int ctl_store_array_counts(ctl_store_t *s, uint64_t id, int32_t n, int32_t *begun,
                           int32_t *ended, int32_t *notok);

#endif
