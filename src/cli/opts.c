/*
 * opts.c - what every command reads of the parsed command line (option
 * values by long name), the usage-error message, and JSON output: a value
 * indented, or the pages of a list spliced into one document as they
 * arrive (cli_pages_t, below).
 *
 * The lowest layer of the CLI (src/cli/LAYERS): main.c parses argv into a
 * cli_t from the command table; the commands, the HTTP client and main.c
 * read it through these functions, so that no command calls up into
 * main.c.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"

int cli_usage_error(cli_t *c, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "sluice%s%s: ", c && c->cmd ? " " : "", c && c->cmd ? c->cmd->name : "");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry 'sluice %s%s--help'.\n", c && c->cmd ? c->cmd->name : "",
            c && c->cmd ? " " : "");
    return CLI_EUSAGE;
}

int cli_opt_index(const cli_cmd_t *cmd, const char *name, char shortname) {
    for (int i = 0; cmd->opts[i].name; i++) {
        if (name && strcmp(cmd->opts[i].name, name) == 0) return i;
        if (!name && shortname && cmd->opts[i].shortname == shortname) return i;
    }
    return -1;
}

const char *cli_get(cli_t *c, const char *name) {
    int i = cli_opt_index(c->cmd, name, 0);
    return i >= 0 && c->set[i] ? c->val[i] : NULL;
}

int cli_has(cli_t *c, const char *name) {
    int i = cli_opt_index(c->cmd, name, 0);
    return i >= 0 && c->set[i];
}

bool cli_listed(const char *list, const char *w) {
    size_t wl = strlen(w);
    for (const char *p = list; *p;) {
        size_t l = strcspn(p, ",");
        if (l == wl && strncasecmp(p, w, l) == 0)
            return true;
        p += l + (p[l] == ',');
    }
    return false;
}

int cli_multi(cli_t *c, const char *name, const char ***vals) {
    int i = cli_opt_index(c->cmd, name, 0);
    if (i < 0) return 0;
    *vals = c->multi[i];
    return c->nmulti[i];
}

void cli_print_json(json_t *v) {
    char *s = json_dumps(v, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (s) {
        fputs(s, stdout);
        fputc('\n', stdout);
        free(s);
    }
}

/* ---- the pages of a list as one document ----
 *
 * A page of GET /v1/jobs is `{"jobs":[JOB,...],"next_after":N}` (docs/
 * api.md). The document is the first page up to its array's last job,
 * then each later page's jobs after a comma, then the last page's tail
 * (`],"next_after":null}`): with one page, the server's bytes unchanged.
 * Nothing is parsed but the brackets around the array: a page's head is
 * everything up to its first '[', and its tail everything from its last
 * ']' on, which the writer holds back until it knows whether the page is
 * the last. A job is never split or re-formatted, so the cost is a copy of
 * the bytes (a jansson round trip of 10,000 jobs took 220 ms). */

enum { PAGE_HEAD, PAGE_FIRST, PAGE_BODY };

void cli_pages_init(cli_pages_t *p, FILE *out) {
    memset(p, 0, sizeof *p);
    p->out = out;
}

static int pages_emit(cli_pages_t *p, const char *s, size_t n) {
    p->written |= n > 0;
    return n == 0 || fwrite(s, 1, n, p->out) == n ? 0 : -1;
}

static int pages_hold(cli_pages_t *p, const char *s, size_t n) {
    if (p->hold_len + n > p->hold_cap) {
        size_t cap = p->hold_cap ? p->hold_cap : 256;
        while (cap < p->hold_len + n) cap *= 2;
        char *h = realloc(p->hold, cap);
        if (h == NULL) return -1;
        p->hold = h;
        p->hold_cap = cap;
    }
    memcpy(p->hold + p->hold_len, s, n);
    p->hold_len += n;
    return 0;
}

void cli_pages_begin(cli_pages_t *p) {
    p->pages++;
    p->state = PAGE_HEAD;
    p->hold_len = 0; /* the previous page's tail: not the last */
}

int cli_pages_sink(void *arg, const char *s, size_t n) {
    cli_pages_t *p = arg;
    const char *e = s + n;
    bool first = p->pages == 1;
    if (p->state == PAGE_HEAD) { /* up to the array's '[': the first page's only */
        const char *b = memchr(s, '[', n);
        const char *stop = b ? b + 1 : e;
        if (first && pages_emit(p, s, (size_t)(stop - s)) < 0) return -1;
        s = stop;
        if (b == NULL) return 0;
        p->state = PAGE_FIRST;
    }
    if (p->state == PAGE_FIRST) { /* blanks, then the first job or the ']' */
        const char *q = s;
        while (q < e && (*q == ' ' || *q == '\t' || *q == '\r' || *q == '\n')) q++;
        if (first && pages_emit(p, s, (size_t)(q - s)) < 0) return -1;
        s = q;
        if (s == e) return 0;
        if (*s != ']') {
            if (p->jobs && pages_emit(p, ",", 1) < 0) return -1;
            p->jobs = true;
        }
        p->state = PAGE_BODY;
    }
    const char *last = memrchr(s, ']', (size_t)(e - s));
    if (last == NULL) /* before the last ']' so far, or after it */
        return p->hold_len == 0 ? pages_emit(p, s, (size_t)(e - s)) : pages_hold(p, s, (size_t)(e - s));
    if (pages_emit(p, p->hold, p->hold_len) < 0 || pages_emit(p, s, (size_t)(last - s)) < 0) return -1;
    p->hold_len = 0;
    return pages_hold(p, last, (size_t)(e - last));
}

unsigned long long cli_pages_next_after(const cli_pages_t *p) {
    static const char key[] = "\"next_after\":";
    const size_t kl = sizeof key - 1;
    for (size_t i = 0; i + kl <= p->hold_len; i++) {
        if (memcmp(p->hold + i, key, kl) == 0) {
            const char *v = p->hold + i + kl, *e = p->hold + p->hold_len;
            while (v < e && *v == ' ') v++;
            unsigned long long n = 0;
            for (; v < e && *v >= '0' && *v <= '9'; v++) n = n * 10 + (unsigned long long)(*v - '0');
            return n;
        }
    }
    return 0;
}

int cli_pages_close(cli_pages_t *p, bool complete) {
    int rc = complete ? pages_emit(p, p->hold, p->hold_len) : 0;
    if (!complete && p->written) rc = pages_emit(p, "\n", 1); /* end the cut line */
    free(p->hold);
    p->hold = NULL;
    p->hold_len = p->hold_cap = 0;
    return rc == 0 && fflush(p->out) == 0 ? 0 : -1;
}
