/*
 * slurmfmt.h - Slurm's output format strings, as squeue -o and sinfo -o
 * read them (slurmfmt.c): "%.18i %.9P %.8j %R", each field a '%', an
 * optional '.' (right-justified) or '-' (left, the default), an optional
 * width, and one letter; any other text is copied; "%%" is one '%'. A
 * field with a width is padded to it and cut to it, as Slurm does; one
 * without is printed whole.
 */
#ifndef SLUICE_COMMON_SLURMFMT_H
#define SLUICE_COMMON_SLURMFMT_H

#include <stdbool.h>
#include <stddef.h>

/* The most items (fields and runs of text) one format may hold. */
#define SL_SLURMFMT_MAX 64

typedef struct sl_slurmfmt_item {
    char field;        /* the field's letter; 0: literal text */
    bool right;        /* '.': right-justified */
    int width;         /* 0: no width (the value whole) */
    const char *text;  /* literal: its bytes in the format string (not NUL-ended) */
    size_t text_len;
} sl_slurmfmt_item_t;

/*
 * Parses fmt into items (at most max; *n set), the letters allowed in
 * `fields` (e.g. "ijutTMDRNPCb"). A literal item points into fmt, which
 * must outlive the items. Returns 0, or SL_EINVAL with err naming the
 * problem ("%q: no such field (fields: ...)", "a % at the end", "width
 * 9999 of %i is over 1000", "more than 64 fields"). O(len(fmt)).
 */
int sl_slurmfmt_parse(const char *fmt, const char *fields, sl_slurmfmt_item_t *items, size_t max,
                      size_t *n, char *err, size_t errlen);

/*
 * Writes one item into buf (snprintf semantics): literal text as it is, a
 * field's value padded and cut to its width. Returns the length needed.
 * Can't fail.
 */
size_t sl_slurmfmt_cell(const sl_slurmfmt_item_t *it, const char *value, char *buf, size_t len);

/* A field of the long formats (squeue -O): its name and the letter of
 * the short one that prints it. */
typedef struct sl_slurmfmt_name {
    const char *name;  /* "JobID", matched without regard to case */
    char field;
} sl_slurmfmt_name_t;

/*
 * Turns a long format (squeue -O/--Format: "JobID,Name:30,State:.10 ,..."
 * where each field is NAME[:[.][WIDTH][SUFFIX]], default width 20, '.'
 * right-justified, SUFFIX text after it) into the short format that prints
 * the same ("%-20i%-30j%.10T ") into out (outlen bytes), the names those
 * of names (n of them). Returns 0, or SL_EINVAL with err naming the
 * problem ("Bogus: no such field (fields: JobID, ...)", "width 5000 of
 * Name is over 1000"). O(len(spec) * n).
 */
int sl_slurmfmt_from_long(const char *spec, const sl_slurmfmt_name_t *names, size_t n, char *out,
                          size_t outlen, char *err, size_t errlen);

/*
 * Slurm's elapsed-time text of secs (squeue %M, sacct Elapsed): "M:SS"
 * under an hour, "H:MM:SS" under a day, "D-HH:MM:SS" beyond; negative as
 * 0. Can't fail.
 */
void sl_slurmfmt_elapsed(long long secs, char *buf, size_t len);

/*
 * Slurm's command names that the sluice binary answers to (by argv[0], as
 * busybox's applets), NULL-ended: what each agent links into the tasks'
 * slurm-bin and what `sluice slurm-commands install` links.
 */
extern const char *const sl_slurm_commands[];

#endif
