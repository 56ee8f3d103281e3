/*
 * mailtype.c - sbatch's --mail-type words (mailtype.h).
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "mailtype.h"

static const struct {
    const char *word;
    uint32_t bits;
    const char *refused; /* non-NULL: Slurm's word that Sluice refuses, and why */
} words[] = {
    {"BEGIN", SL_MAIL_BEGIN, NULL},
    {"END", SL_MAIL_END, NULL},
    {"FAIL", SL_MAIL_FAIL, NULL},
    {"REQUEUE", SL_MAIL_REQUEUE, NULL},
    {"TIME_LIMIT", SL_MAIL_TIME_LIMIT, NULL},
    {"INVALID_DEPEND", SL_MAIL_INVALID_DEPEND, NULL},
    {"ALL", SL_MAIL_ALL, NULL},
    {"NONE", 0, NULL},
    {"ARRAY_TASKS", 0, NULL},
    {"TIME_LIMIT_50", 0, "Sluice reports no share of a time limit; use TIME_LIMIT"},
    {"TIME_LIMIT_80", 0, "Sluice reports no share of a time limit; use TIME_LIMIT"},
    {"TIME_LIMIT_90", 0, "Sluice reports no share of a time limit; use TIME_LIMIT"},
    {"STAGE_OUT", 0, "Sluice has no burst buffers"},
};

int sl_mail_types_parse(const char *text, uint32_t *mask, char *err, size_t errlen) {
    uint32_t m = 0;
    int nwords = 0;
    bool none = false;
    const char *p = text ? text : "";
    if (*p == '\0') {
        snprintf(err, errlen, "needs event types such as BEGIN,END,FAIL (or ALL)");
        return -1;
    }
    for (;;) {
        size_t n = strcspn(p, ",");
        size_t k, nw = sizeof words / sizeof words[0];
        for (k = 0; k < nw; k++)
            if (strlen(words[k].word) == n && strncasecmp(words[k].word, p, n) == 0)
                break;
        if (n == 0) {
            snprintf(err, errlen, "an empty event type in \"%s\"", text);
            return -1;
        }
        if (k == nw) {
            snprintf(err, errlen, "\"%.*s\" is not an event type (BEGIN, END, FAIL, REQUEUE, "
                     "TIME_LIMIT, INVALID_DEPEND, ALL, NONE, ARRAY_TASKS)", (int)n, p);
            return -1;
        }
        if (words[k].refused) {
            snprintf(err, errlen, "\"%s\" is not supported: %s", words[k].word, words[k].refused);
            return -1;
        }
        none |= strcmp(words[k].word, "NONE") == 0;
        m |= words[k].bits;
        nwords++;
        if (p[n] == '\0')
            break;
        p += n + 1;
    }
    if (none && nwords > 1) {
        snprintf(err, errlen, "NONE goes alone, not with other event types");
        return -1;
    }
    *mask = m;
    return 0;
}

const char *sl_mail_type_name(uint32_t bit) {
    switch (bit) {
    case SL_MAIL_BEGIN: return "BEGIN";
    case SL_MAIL_END: return "END";
    case SL_MAIL_FAIL: return "FAIL";
    case SL_MAIL_REQUEUE: return "REQUEUE";
    case SL_MAIL_TIME_LIMIT: return "TIME_LIMIT";
    case SL_MAIL_INVALID_DEPEND: return "INVALID_DEPEND";
    default: return NULL;
    }
}
