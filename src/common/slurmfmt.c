/*
 * slurmfmt.c - Slurm's output format strings (slurmfmt.h): one pass over
 * the format, each '%' item split off with its justification and width.
 * Formats are short (a command line's), so items live in the caller's
 * array and nothing is allocated.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "slurmfmt.h"
#include "sluice/error.h"

const char *const sl_slurm_commands[] = {"sbatch", "srun",  "salloc", "squeue", "scancel",
                                         "sacct",  "sinfo", "scontrol", NULL};

int sl_slurmfmt_parse(const char *fmt, const char *fields, sl_slurmfmt_item_t *items, size_t max,
                      size_t *n, char *err, size_t errlen) {
    size_t k = 0;
    *n = 0;
    for (const char *p = fmt; *p;) {
        if (k == max) {
            snprintf(err, errlen, "more than %zu fields", max);
            return SL_EINVAL;
        }
        sl_slurmfmt_item_t *it = &items[k];
        *it = (sl_slurmfmt_item_t){0};
        if (*p != '%' || p[1] == '%') {
            /* Text up to the next field; "%%" is one '%' of text. */
            it->text = p;
            if (*p == '%') {
                it->text_len = 1;
                p += 2;
            } else {
                it->text_len = strcspn(p, "%");
                p += it->text_len;
            }
            k++;
            continue;
        }
        const char *start = p++;
        if (*p == '.' || *p == '-')
            it->right = *p++ == '.';
        while (*p >= '0' && *p <= '9') {
            it->width = it->width * 10 + (*p++ - '0');
            if (it->width > 1000) {
                snprintf(err, errlen, "%.*s...: a width over 1000", (int)(p - start), start);
                return SL_EINVAL;
            }
        }
        if (*p == '\0') {
            snprintf(err, errlen, "\"%s\": a %% without its field letter at the end", start);
            return SL_EINVAL;
        }
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')) || !strchr(fields, *p)) {
            snprintf(err, errlen, "%%%c: not a field Sluice has (fields: %s)", *p, fields);
            return SL_EINVAL;
        }
        it->field = *p++;
        k++;
    }
    *n = k;
    return 0;
}

size_t sl_slurmfmt_cell(const sl_slurmfmt_item_t *it, const char *value, char *buf, size_t len) {
    if (it->field == 0)
        return (size_t)snprintf(buf, len, "%.*s", (int)it->text_len, it->text);
    if (it->width == 0)
        return (size_t)snprintf(buf, len, "%s", value);
    return (size_t)snprintf(buf, len, it->right ? "%*.*s" : "%-*.*s", it->width, it->width, value);
}

void sl_slurmfmt_elapsed(long long s, char *buf, size_t len) {
    if (s < 0)
        s = 0;
    long long d = s / 86400, h = s / 3600 % 24, m = s / 60 % 60, sec = s % 60;
    if (d > 0)
        snprintf(buf, len, "%lld-%02lld:%02lld:%02lld", d, h, m, sec);
    else if (h > 0)
        snprintf(buf, len, "%lld:%02lld:%02lld", h, m, sec);
    else
        snprintf(buf, len, "%lld:%02lld", m, sec);
}

int sl_slurmfmt_from_long(const char *spec, const sl_slurmfmt_name_t *names, size_t n, char *out,
                          size_t outlen, char *err, size_t errlen) {
    size_t at = 0;
    if (outlen)
        out[0] = '\0';
    if (spec[0] == '\0') {
        snprintf(err, errlen, "give one or more fields");
        return SL_EINVAL;
    }
    for (const char *p = spec; *p;) {
        size_t l = strcspn(p, ","), nl = strcspn(p, ":,");
        const sl_slurmfmt_name_t *f = NULL;
        for (size_t k = 0; k < n && !f; k++)
            if (strlen(names[k].name) == nl && strncasecmp(names[k].name, p, nl) == 0)
                f = &names[k];
        if (f == NULL) {
            size_t el = (size_t)snprintf(err, errlen, "%.*s: no such field (fields:",
                                         (int)(nl < 100 ? nl : 100), p);
            for (size_t k = 0; k < n && el < errlen; k++)
                el += (size_t)snprintf(err + el, errlen - el, "%s %s", k ? "," : "", names[k].name);
            if (el < errlen)
                snprintf(err + el, errlen - el, ")");
            return SL_EINVAL;
        }
        bool right = false;
        long width = 20;
        const char *suffix = p + l, *q = p + nl;
        if (*q == ':') {
            q++;
            if (*q == '.') {
                right = true;
                q++;
            }
            if (*q >= '0' && *q <= '9') {
                width = 0;
                while (*q >= '0' && *q <= '9' && width <= 1000)
                    width = width * 10 + (*q++ - '0');
                if (width > 1000) {
                    snprintf(err, errlen, "width of %s is over 1000", f->name);
                    return SL_EINVAL;
                }
            }
            suffix = q;
        }
        char piece[64];
        int pl = snprintf(piece, sizeof piece, "%%%s%ld%c", right ? "." : "-", width, f->field);
        if (at + (size_t)pl + 1 > outlen)
            goto long_;
        memcpy(out + at, piece, (size_t)pl + 1);
        at += (size_t)pl;
        for (const char *s = suffix; s < p + l; s++) { /* text; '%' doubled */
            if (at + 3 > outlen)
                goto long_;
            if (*s == '%')
                out[at++] = '%';
            out[at++] = *s;
            out[at] = '\0';
        }
        p += l + (p[l] == ',');
    }
    return 0;
long_:
    snprintf(err, errlen, "the format is too long");
    return SL_EINVAL;
}
