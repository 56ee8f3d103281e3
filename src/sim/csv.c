/*
 * csv.c - a small CSV reader for trace files.
 *
 * The whole file is read into memory (traces are megabytes, not gigabytes)
 * and parsed one record at a time, RFC 4180 style: fields separated by
 * commas, records by LF or CRLF, a field may be quoted with '"' and then
 * hold commas, newlines and doubled quotes. A UTF-8 byte order mark at the
 * start is skipped. Each field remembers the line and column (1-based, in
 * bytes) where it starts, so that loaders can name the exact place of a bad
 * value. Unquoted fields are trimmed of spaces and tabs (hand-written files
 * such as Philly's machine list put a space after each comma). Completely
 * empty lines are not records.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

typedef struct csv_field {
    size_t off; /* into out */
    long line, col;
} csv_field_t;

struct sim_csv {
    char *name;
    char *text;
    size_t len, pos;
    long line;       /* line of text[pos] */
    size_t line_off; /* offset where that line starts */
    char *out;       /* unescaped fields of the current record, NUL-separated */
    size_t outcap, outlen;
    csv_field_t *fields;
    size_t nfields, fieldcap;
    long rec_line;
};

static int csv_new(const char *name, char *text, size_t len, sim_csv_t **out) {
    sim_csv_t *c = sl_xcalloc(1, sizeof *c);
    c->name = sl_xstrdup(name);
    c->text = text;
    c->len = len;
    c->line = 1;
    if (len >= 3 && (unsigned char)text[0] == 0xEF && (unsigned char)text[1] == 0xBB &&
        (unsigned char)text[2] == 0xBF) {
        c->pos = 3;
        c->line_off = 3;
    }
    c->outcap = 256;
    c->out = sl_xmalloc(c->outcap);
    *out = c;
    return 0;
}

int sim_csv_open(const char *path, sim_csv_t **out, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t cap = 0, len = 0;
    int rc = 0;
    if (!f) {
        rc = -errno;
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return rc;
    }
    for (;;) {
        if (cap - len < 65536) {
            cap = cap ? cap * 2 : 262144;
            buf = sl_xrealloc(buf, cap + 1);
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) break;
    }
    if (ferror(f)) {
        rc = SL_EIO;
        snprintf(err, errlen, "%s: read error", path);
        sl_free(buf);
        goto out;
    }
    buf[len] = '\0';
    csv_new(path, buf, len, out);
out:
    fclose(f);
    return rc;
}

int sim_csv_open_text(const char *name, const char *text, size_t len, sim_csv_t **out) {
    char *buf = sl_xmalloc(len + 1);
    memcpy(buf, text, len);
    buf[len] = '\0';
    return csv_new(name, buf, len, out);
}

void sim_csv_close(sim_csv_t *c) {
    if (!c) return;
    sl_free(c->name);
    sl_free(c->text);
    sl_free(c->out);
    sl_free(c->fields);
    sl_free(c);
}

static void out_put(sim_csv_t *c, char ch) {
    if (c->outlen + 1 >= c->outcap) {
        c->outcap *= 2;
        c->out = sl_xrealloc(c->out, c->outcap);
    }
    c->out[c->outlen++] = ch;
}

static void field_begin(sim_csv_t *c) {
    if (c->nfields == c->fieldcap) {
        c->fieldcap = c->fieldcap ? c->fieldcap * 2 : 16;
        c->fields = sl_xrealloc(c->fields, c->fieldcap * sizeof *c->fields);
    }
    csv_field_t *f = &c->fields[c->nfields++];
    f->off = c->outlen;
    f->line = c->line;
    f->col = (long)(c->pos - c->line_off) + 1;
}

/* Advances over a line break at pos (LF or CRLF); true if there was one. */
static bool eat_newline(sim_csv_t *c) {
    if (c->pos < c->len && c->text[c->pos] == '\n') {
        c->pos++;
    } else if (c->pos + 1 < c->len && c->text[c->pos] == '\r' && c->text[c->pos + 1] == '\n') {
        c->pos += 2;
    } else if (c->pos + 1 == c->len && c->text[c->pos] == '\r') {
        c->pos++;
    } else {
        return false;
    }
    c->line++;
    c->line_off = c->pos;
    return true;
}

static bool at_eol(const sim_csv_t *c) {
    if (c->pos >= c->len) return true;
    char ch = c->text[c->pos];
    return ch == '\n' || (ch == '\r' && (c->pos + 1 == c->len || c->text[c->pos + 1] == '\n'));
}

int sim_csv_next(sim_csv_t *c, char *err, size_t errlen) {
    /* Skip completely empty lines. */
    while (c->pos < c->len && at_eol(c)) eat_newline(c);
    if (c->pos >= c->len) return 0;
    c->nfields = 0;
    c->outlen = 0;
    c->rec_line = c->line;
    for (;;) {
        /* One field. */
        while (c->pos < c->len && (c->text[c->pos] == ' ' || c->text[c->pos] == '\t')) c->pos++;
        field_begin(c);
        if (c->pos < c->len && c->text[c->pos] == '"') {
            long qline = c->line, qcol = (long)(c->pos - c->line_off) + 1;
            c->pos++;
            for (;;) {
                if (c->pos >= c->len) {
                    snprintf(err, errlen, "%s:%ld:%ld: unterminated quoted field", c->name, qline,
                             qcol);
                    return SL_EINVAL;
                }
                char ch = c->text[c->pos];
                if (ch == '"') {
                    if (c->pos + 1 < c->len && c->text[c->pos + 1] == '"') {
                        out_put(c, '"');
                        c->pos += 2;
                        continue;
                    }
                    c->pos++;
                    break;
                }
                if (ch == '\n' || ch == '\r') {
                    if (ch == '\r' && c->pos + 1 < c->len && c->text[c->pos + 1] == '\n') {
                        out_put(c, '\n');
                        eat_newline(c);
                        continue;
                    }
                    out_put(c, ch);
                    if (ch == '\n') {
                        c->pos++;
                        c->line++;
                        c->line_off = c->pos;
                    } else {
                        c->pos++;
                    }
                    continue;
                }
                out_put(c, ch);
                c->pos++;
            }
            while (c->pos < c->len && (c->text[c->pos] == ' ' || c->text[c->pos] == '\t')) c->pos++;
            if (!at_eol(c) && c->text[c->pos] != ',') {
                snprintf(err, errlen, "%s:%ld:%ld: unexpected '%c' after closing quote", c->name,
                         c->line, (long)(c->pos - c->line_off) + 1, c->text[c->pos]);
                return SL_EINVAL;
            }
        } else {
            size_t start = c->outlen;
            while (!at_eol(c) && c->text[c->pos] != ',') {
                char ch = c->text[c->pos++];
                if (ch == '"') {
                    snprintf(err, errlen, "%s:%ld:%ld: quote inside an unquoted field", c->name,
                             c->line, (long)(c->pos - c->line_off));
                    return SL_EINVAL;
                }
                out_put(c, ch);
            }
            while (c->outlen > start && (c->out[c->outlen - 1] == ' ' || c->out[c->outlen - 1] == '\t'))
                c->outlen--;
        }
        out_put(c, '\0');
        if (at_eol(c)) {
            eat_newline(c);
            return 1;
        }
        c->pos++; /* the comma */
    }
}

size_t sim_csv_nfields(const sim_csv_t *c) {
    return c->nfields;
}

const char *sim_csv_field(const sim_csv_t *c, size_t i) {
    return i < c->nfields ? c->out + c->fields[i].off : "";
}

long sim_csv_line(const sim_csv_t *c, size_t i) {
    if (i < c->nfields) return c->fields[i].line;
    return c->nfields ? c->fields[c->nfields - 1].line : c->rec_line;
}

long sim_csv_col(const sim_csv_t *c, size_t i) {
    if (i < c->nfields) return c->fields[i].col;
    /* Past the end: the column just after the last field. */
    if (c->nfields == 0) return 1;
    const csv_field_t *f = &c->fields[c->nfields - 1];
    return f->col + (long)strlen(c->out + f->off);
}

long sim_csv_record_line(const sim_csv_t *c) {
    return c->rec_line;
}

const char *sim_csv_name(const sim_csv_t *c) {
    return c->name;
}

int sim_csv_error(const sim_csv_t *c, size_t i, const char *fname, char *err, size_t errlen,
                  const char *fmt, ...) {
    char msg[SIM_ERR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (fname)
        snprintf(err, errlen, "%s:%ld:%ld: field \"%s\": %s", c->name, sim_csv_line(c, i),
                 sim_csv_col(c, i), fname, msg);
    else
        snprintf(err, errlen, "%s:%ld:%ld: %s", c->name, sim_csv_line(c, i), sim_csv_col(c, i),
                 msg);
    return SL_EINVAL;
}
