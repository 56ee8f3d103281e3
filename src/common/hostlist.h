/*
 * hostlist.h - Slurm's host lists read back into names (hostlist.c): the
 * text of SLURM_JOB_NODELIST, srun -w and `scontrol show hostnames`
 * ("n[1-3,5]", "gpu[07-08],login", "a,b"), and names compressed back into
 * one (SLURM_JOB_NODELIST, `scontrol show hostlist`).
 */
#ifndef SLUICE_COMMON_HOSTLIST_H
#define SLUICE_COMMON_HOSTLIST_H

#include <stddef.h>

/* The most names one list may expand to. */
#define SL_HOSTLIST_MAX 65536

/*
 * Expands list into *names (an array of *n strings, each and the array
 * allocated with sl_xmalloc; free with sl_hostlist_free), in the list's
 * order: comma-separated words, each a name or PREFIX[RANGES]SUFFIX with
 * RANGES comma-separated numbers and A-B ranges, whose numbers keep the
 * width written ("07-08" gives 07 and 08). Returns 0, or SL_EINVAL with
 * err saying what is wrong ("n[3-1]: a range must not go down") and
 * *names NULL: an unclosed bracket, a range that goes down, more than
 * SL_HOSTLIST_MAX names, an empty word. O(names).
 */
int sl_hostlist_expand(const char *list, char ***names, size_t *n, char *err, size_t errlen);

/*
 * Writes names (n of them, in any order, duplicates allowed) as Slurm's
 * compressed host list into buf (snprintf semantics): sorted, each run of
 * names that differ only in a trailing number of the same width folded
 * into a range, "n[1-3,5],gpu07". Returns the length it needed.
 * O(n log n). Can't fail.
 */
size_t sl_hostlist_format(const char *const *names, size_t n, char *buf, size_t len);

/* Frees what sl_hostlist_expand made. Accepts NULL. */
void sl_hostlist_free(char **names, size_t n);

#endif
