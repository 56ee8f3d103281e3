/*
 * quantity.h - resource quantities as users write them.
 *
 *   CPU:    "16" -> 16000 milli, "500m" -> 500, "1.5" -> 1500
 *   memory: "128Gi", "64G", "2Ti", "512Mi", "1.5Gi", "1000" (bytes), "100k"
 *           (binary suffixes Ki Mi Gi Ti Pi Ei; decimal k M G T P E)
 *   GPU:    "2" -> 2000 milli, "0.25" -> 250, "500m" -> 500
 *
 * Values are integers inside; parsing is exact (decimal arithmetic, no
 * floating point). A value finer than the unit (0.0001 CPU, 0.5 byte) is an
 * error, never silently rounded.
 */
#ifndef SLUICE_COMMON_QUANTITY_H
#define SLUICE_COMMON_QUANTITY_H

#include <stddef.h>
#include <stdint.h>

typedef enum sl_qty_kind {
    SL_QTY_CPU = 0, /* result in milli-CPUs */
    SL_QTY_MEM = 1, /* result in bytes */
    SL_QTY_GPU = 2  /* result in milli-GPUs */
} sl_qty_kind_t;

/*
 * Parses text (whole string, no surrounding space) as a quantity of the
 * given kind into *out. On failure returns SL_EINVAL (bad syntax, bad unit,
 * negative, finer than the unit) or SL_EOVERFLOW, leaves *out unchanged, and
 * writes into err (if errlen > 0) a message naming the text and the reason,
 * e.g. "\"12Qi\": unknown unit \"Qi\"". O(strlen(text)).
 */
int sl_qty_parse(const char *text, sl_qty_kind_t kind, int64_t *out, char *err, size_t errlen);

/*
 * Formats v the way a user would write it ("16", "500m", "128Gi", "0.25"),
 * choosing the largest exact unit. Writes at most len bytes including the
 * NUL; returns the length that the full text needs (snprintf semantics).
 */
int sl_qty_format(int64_t v, sl_qty_kind_t kind, char *buf, size_t len);

/*
 * Formats a number of bytes for a person to read, rounded to three
 * significant digits in the largest binary unit it reaches: "141Mi" (for
 * 147639500), "1.5Gi", "12.3Gi", "128Mi", "900" (under 1Ki: bytes). Not for
 * parsing back (sl_qty_format is exact): for messages such as "used 141Mi of
 * its 141Mi hard limit". A negative v gets a '-'. snprintf semantics as
 * sl_qty_format. O(1).
 */
int sl_qty_format_mem_round(int64_t v, char *buf, size_t len);

#endif
