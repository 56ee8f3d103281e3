/*
 * arraydep.h - the Slurm texts of a job array (`--array`) and of job
 * dependencies (`--dependency`), parsed once for everyone.
 *
 * The job spec carries both as Slurm writes them (fields `array` and
 * `dependency`, docs/jobspec.md), so that `sluice submit --array`, a YAML
 * spec, an #SBATCH line and the API all accept the same text. The CLI
 * checks the syntax (sl_jobspec_check); the server parses it again to act
 * on it (src/ctl/domain/deps.c), with its configured bound on an array's size.
 *
 * Array: "0-99", "1,3,5-9:2", "0-15%4": indexes, ranges and ranges with a
 * step, separated by commas, and an optional concurrency limit after '%'
 * (at most that many elements run at once). Indexes are 0..max_size-1, the
 * list is sorted and duplicates merge (as sbatch does).
 *
 * Dependency: "afterok:123:124,afterany:7" (',': all must hold),
 * "afterok:1?afterok:2" (`?`: any one suffices; the two separators do not
 * mix), "singleton". Kinds: after (the job started, or ended), afterany
 * (ended), afterok (succeeded), afternotok (ended without succeeding),
 * singleton (no other job of this name and tenant is queued or running).
 * A job is a number, or A_I for element I of array A.
 */
#ifndef SLUICE_COMMON_ARRAYDEP_H
#define SLUICE_COMMON_ARRAYDEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The largest array the syntax allows (Slurm's own ceiling of MaxArraySize
 * is 4,000,001); a server bounds it further (max_array_size). */
#define SL_ARRAY_SIZE_CEILING 4000001
/* The most terms (job references) one dependency may list. */
#define SL_DEP_MAX_TERMS 1024

typedef struct sl_array_spec {
    int32_t *idx;   /* n indexes, ascending, unique (owned; sl_array_spec_fini) */
    int32_t n;
    int32_t limit;  /* 0: no concurrency limit */
} sl_array_spec_t;

/*
 * Parses an array text. Every index must be below max_size and the list
 * must hold at most max_size indexes (counted before duplicates merge, so
 * that a text cannot make this allocate more than max_size of them). With
 * out NULL only the syntax and bounds are checked and nothing is allocated.
 * Returns 0, or SL_EINVAL with a message in err (not naming the field).
 * O(len + max_size / 64).
 */
int sl_array_parse(const char *text, int32_t max_size, sl_array_spec_t *out, char *err,
                   size_t errlen);
/* Frees what sl_array_parse allocated; accepts a zeroed struct. */
void sl_array_spec_fini(sl_array_spec_t *a);
/* Writes the indexes idx[0..n) (ascending) as Slurm lists them: runs of
 * consecutive indexes as "4-99", separated by commas ("1,3,5-9"); cut
 * with "..." before it would pass len - 1 bytes. snprintf semantics for
 * the return (bytes written, not counting the NUL). */
size_t sl_array_format(const int32_t *idx, size_t n, char *buf, size_t len);

typedef enum sl_dep_kind {
    SL_DEP_AFTER = 0,
    SL_DEP_AFTERANY,
    SL_DEP_AFTEROK,
    SL_DEP_AFTERNOTOK,
    SL_DEP_SINGLETON,
    SL_DEP_NKINDS
} sl_dep_kind_t;

typedef struct sl_dep_term {
    uint8_t kind;     /* sl_dep_kind_t */
    uint64_t job;     /* 0 for singleton */
    int32_t index;    /* A_I: I; -1 for a plain job id */
} sl_dep_term_t;

typedef struct sl_dep_spec {
    sl_dep_term_t *t; /* n terms, in the order written (owned; sl_dep_spec_fini) */
    size_t n;
    bool any;         /* '?': any one term suffices; else all must hold */
} sl_dep_spec_t;

/* Parses a dependency text; with out NULL only checks it. 0, or SL_EINVAL
 * with a message in err (not naming the field). O(len). */
int sl_dep_parse(const char *text, sl_dep_spec_t *out, char *err, size_t errlen);
void sl_dep_spec_fini(sl_dep_spec_t *d);
/* "afterok", ...; "?" out of range. Can't fail. */
const char *sl_dep_kind_name(sl_dep_kind_t k);

#endif
