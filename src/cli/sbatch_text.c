/*
 * sbatch_text.c - the texts of Slurm's values, for sbatch.c: a directive's
 * words, times ("1-12:00:00"), memory sizes ("32G"), host lists
 * ("gpu[01-04]") and bracketed feature lists ("[a100|h100]").
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli.h"
#include "hostlist.h"

/* Splits a directive's text into words as sbatch does. Returns the count,
 * the words in a buffer of the caller's; -1 for more than max words. */
int cli_sbatch_split_words(const char *s, char *buf, size_t buflen, char **words, int max) {
    int n = 0;
    size_t b = 0;
    while (*s && n < max) {
        while (*s && isspace((unsigned char)*s))
            s++;
        if (*s == '\0' || *s == '#')
            break;
        char q = 0;
        words[n++] = buf + b;
        while (*s && (q || !isspace((unsigned char)*s)) && b + 1 < buflen) {
            if (*s == '\\' && s[1]) {
                buf[b++] = s[1];
                s += 2;
            } else if (q && *s == q) {
                q = 0;
                s++;
            } else if (!q && (*s == '"' || *s == '\'')) {
                q = *s++;
            } else if (!q && *s == '#') {
                break;
            } else {
                buf[b++] = *s++;
            }
        }
        buf[b++] = '\0';
        if (*s == '#' && !q)
            break;
    }
    while (*s && isspace((unsigned char)*s))
        s++;
    return *s && *s != '#' ? -1 : n;
}

/*
 * Slurm's time formats: "M", "M:S", "H:M:S", "D-H", "D-H:M", "D-H:M:S";
 * "UNLIMITED", "INFINITE" and 0 mean none. Seconds, rounded up to whole
 * minutes as Slurm keeps them. 0 for none; -1 for bad syntax.
 */
long long cli_slurm_time(const char *s) {
    if (strcasecmp(s, "UNLIMITED") == 0 || strcasecmp(s, "INFINITE") == 0)
        return 0;
    long long f[4] = {0};
    int nf = 0;
    long long days = -1;
    const char *p = s;
    const char *dash = strchr(s, '-');
    if (dash) {
        char *end;
        days = strtoll(s, &end, 10);
        if (end != dash || dash == s)
            return -1;
        p = dash + 1;
    }
    while (*p) {
        if (!isdigit((unsigned char)*p) || nf == 3)
            return -1;
        char *end;
        errno = 0;
        f[nf++] = strtoll(p, &end, 10);
        if (errno || f[nf - 1] > 100000000)
            return -1;
        p = end;
        if (*p == ':') {
            p++;
            if (*p == '\0')
                return -1;
        } else if (*p) {
            return -1;
        }
    }
    if (nf == 0)
        return -1;
    long long sec;
    if (days >= 0) { /* D-H, D-H:M, D-H:M:S */
        long long h = f[0], m = nf > 1 ? f[1] : 0, sc = nf > 2 ? f[2] : 0;
        sec = ((days * 24 + h) * 60 + m) * 60 + sc;
    } else if (nf == 1) { /* M */
        sec = f[0] * 60;
    } else if (nf == 2) { /* M:S */
        sec = f[0] * 60 + f[1];
    } else { /* H:M:S */
        sec = (f[0] * 60 + f[1]) * 60 + f[2];
    }
    return (sec + 59) / 60 * 60;
}

/* Slurm's memory size: a number with an optional K, M, G or T (binary
 * units; M when none). Bytes, or -1. */
long long cli_slurm_mem(const char *s) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || v < 0)
        return -1;
    long long mul = 1LL << 20;
    switch (toupper((unsigned char)*end)) {
    case '\0': break;
    case 'K': mul = 1LL << 10; end++; break;
    case 'M': mul = 1LL << 20; end++; break;
    case 'G': mul = 1LL << 30; end++; break;
    case 'T': mul = 1LL << 40; end++; break;
    default: return -1;
    }
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end || v > LLONG_MAX / mul)
        return -1;
    return v * mul;
}

/* Bytes as a Sluice memory quantity in the largest exact binary unit. */
json_t *cli_mem_json(long long b) {
    static const char *units[] = {"Ti", "Gi", "Mi", "Ki"};
    for (int i = 0; i < 4; i++) {
        long long u = 1LL << (10 * (4 - i));
        if (b >= u && b % u == 0) {
            char s[48];
            snprintf(s, sizeof s, "%lld%s", b / u, units[i]);
            return json_string(s);
        }
    }
    char s[32];
    snprintf(s, sizeof s, "%lld", b);
    return json_string(s);
}


int cli_slurm_hosts(const char *text, json_t **out, char *err, size_t errlen) {
    if (strchr(text, '/')) {
        snprintf(err, errlen, "\"%s\": a file of node names is not supported; list the names",
                 text);
        return -1;
    }
    char **names = NULL;
    size_t n = 0;
    if (sl_hostlist_expand(text, &names, &n, err, errlen) < 0)
        return -1;
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_string(names[i]));
    sl_hostlist_free(names, n);
    *out = a;
    return 0;
}

int cli_slurm_features(const char *text, char *out, size_t len, char *err, size_t errlen) {
    size_t n = strlen(text);
    if (n >= 2 && text[0] == '[' && text[n - 1] == ']') {
        if (strpbrk(text, "*&") != NULL) {
            snprintf(err, errlen, "\"%s\": counts (a*2) and & inside brackets are not supported",
                     text);
            return -1;
        }
        snprintf(out, len, "%.*s", (int)(n - 2), text + 1);
        return 1;
    }
    if (strpbrk(text, "[]") != NULL) {
        snprintf(err, errlen, "\"%s\": brackets only around the whole list ([a|b])", text);
        return -1;
    }
    snprintf(out, len, "%s", text);
    return 0;
}
