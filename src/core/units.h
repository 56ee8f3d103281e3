/*
 * units.h - how the core writes amounts in the reasons and errors a user
 * reads: in the user's units, never in the core's integers (milli-CPUs,
 * milli-GPUs, bytes, microseconds). Amounts read as a quantity would be
 * written ("32 GPUs", "0.5 CPUs", "128Gi", "1.5Gi") and times as seconds
 * ("t=3600s", "90.5s"). Private to src/core: the quantity parser and
 * formatter of the programs (src/common) is not part of the pure core.
 *
 * Every function writes a NUL-terminated string into buf (truncating to
 * len, which must be > 0) and returns buf, so calls nest in a printf
 * argument list. Can't fail; O(1).
 */
#ifndef SLUICE_UNITS_H
#define SLUICE_UNITS_H

#include <stddef.h>
#include <stdint.h>

#define SL__UNIT_BUF 32 /* enough for any value below */

/* A thousandth-based amount as a decimal: 32000 -> "32", 500 -> "0.5". */
char *sl__fmt_milli(char *buf, size_t len, int64_t milli);
/* "32 GPUs", "1 GPU", "0.25 GPUs" from milli-GPUs. */
char *sl__fmt_gpus(char *buf, size_t len, int64_t gpu_milli);
/* "96 CPUs", "1 CPU", "0.5 CPUs" from milli-CPUs. */
char *sl__fmt_cpus(char *buf, size_t len, int64_t cpu_milli);
/* Bytes with a binary suffix: bare below 1Ki ("1000"), else in the largest
 * unit they reach, exact when they are a whole number of it ("128Gi",
 * "512Mi"), otherwise rounded to two decimals at most ("1.5Gi", "9.31Gi"). */
char *sl__fmt_bytes(char *buf, size_t len, int64_t bytes);
/* Microseconds as seconds: 3600000000 -> "3600s", 1500 -> "0.0015s". */
char *sl__fmt_secs(char *buf, size_t len, int64_t us);

#endif
