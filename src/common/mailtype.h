/*
 * mailtype.h - sbatch's --mail-type words: which events of a job its
 * notifications report (docs/slurm.md, "Notifications"), shared by the
 * job-spec table (the field mail_type), the CLI and the controller.
 *
 * Words (case-insensitive, comma-separated): BEGIN (the job started; again
 * after each retry), END (it ended, whatever the outcome), FAIL (it ended
 * failed), REQUEUE (it went back to the queue: a retry after a failure, a
 * node's loss, a preemption), TIME_LIMIT (it was stopped at its time
 * limit), INVALID_DEPEND (it can never run: a dependency that will never
 * be met), ALL (all of these), NONE (none; alone), ARRAY_TASKS (accepted:
 * every element of an array notifies for itself anyway). Slurm's
 * TIME_LIMIT_50/80/90 and STAGE_OUT are refused with the reason.
 */
#ifndef SLUICE_COMMON_MAILTYPE_H
#define SLUICE_COMMON_MAILTYPE_H

#include <stddef.h>
#include <stdint.h>

enum {
    SL_MAIL_BEGIN = 1u << 0,
    SL_MAIL_END = 1u << 1,
    SL_MAIL_FAIL = 1u << 2,
    SL_MAIL_REQUEUE = 1u << 3,
    SL_MAIL_TIME_LIMIT = 1u << 4,
    SL_MAIL_INVALID_DEPEND = 1u << 5,
    SL_MAIL_ALL = (1u << 6) - 1
};

/* Parses text ("BEGIN,END", "all") into *mask. 0, or -1 with a message
 * in err naming the word ("\"TIME_LIMIT_90\": not supported: ..."). An
 * empty text, an empty word or NONE beside another word is an error.
 * Reads only; O(length). */
int sl_mail_types_parse(const char *text, uint32_t *mask, char *err, size_t errlen);
/* The name of one event bit ("BEGIN"), or NULL for anything else. */
const char *sl_mail_type_name(uint32_t bit);

#endif
