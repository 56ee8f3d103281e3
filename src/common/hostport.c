/*
 * hostport.c - "HOST:PORT" and comma-separated lists of them (hostport.h).
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "hostport.h"
#include "sluice/error.h"

int sl_hostport_parse(const char *s, size_t len, sl_hostport_t *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    const char *colon = NULL;
    for (size_t i = len; i > 0; i--)
        if (s[i - 1] == ':') {
            colon = s + i - 1;
            break;
        }
    size_t hlen = colon ? (size_t)(colon - s) : 0;
    const char *host = s;
    if (hlen >= 2 && host[0] == '[' && host[hlen - 1] == ']') {
        host++;
        hlen -= 2;
    }
    if (!colon || hlen == 0 || colon + 1 == s + len) {
        snprintf(err, errlen, "\"%.*s\" is not HOST:PORT", (int)(len > 300 ? 300 : len), s);
        return SL_EINVAL;
    }
    if (hlen >= sizeof out->host || (memchr(host, ':', hlen) && host == s)) {
        snprintf(err, errlen, "\"%.*s\" is not HOST:PORT (an IPv6 address goes in brackets: "
                 "[::1]:7071)", (int)(len > 300 ? 300 : len), s);
        return SL_EINVAL;
    }
    const char *p = colon + 1;
    size_t plen = (size_t)(s + len - p);
    unsigned long port = 0;
    for (size_t i = 0; i < plen; i++) {
        if (p[i] < '0' || p[i] > '9' || port > 65535) {
            port = 0;
            break;
        }
        port = port * 10 + (unsigned long)(p[i] - '0');
    }
    if (port < 1 || port > 65535) {
        snprintf(err, errlen, "port \"%.*s\" of \"%.*s\" is not a number from 1 to 65535",
                 (int)(plen > 20 ? 20 : plen), p, (int)(len > 300 ? 300 : len), s);
        return SL_EINVAL;
    }
    memcpy(out->host, host, hlen);
    snprintf(out->port, sizeof out->port, "%lu", port);
    return 0;
}

int sl_hostport_list_parse(const char *s, sl_hostport_t *out, size_t cap, size_t *n, char *err,
                           size_t errlen) {
    *n = 0;
    size_t k = 0;
    const char *p = s;
    for (;;) {
        size_t len = strcspn(p, ",");
        const char *a = p, *b = p + len;
        while (a < b && (*a == ' ' || *a == '\t')) a++;
        while (b > a && (b[-1] == ' ' || b[-1] == '\t')) b--;
        if (a == b) {
            snprintf(err, errlen, "\"%.300s\" has an empty entry", s);
            return SL_EINVAL;
        }
        if (k == cap) {
            snprintf(err, errlen, "\"%.300s\" names more than %zu addresses", s, cap);
            return SL_EINVAL;
        }
        if (sl_hostport_parse(a, (size_t)(b - a), &out[k], err, errlen) != 0) return SL_EINVAL;
        k++;
        if (p[len] == '\0') break;
        p += len + 1;
    }
    *n = k;
    return 0;
}

int sl_url_list_normalize(const char *s, char *out, size_t cap, char *err, size_t errlen) {
    size_t used = 0;
    int k = 0;
    const char *p = s;
    if (cap > 0) out[0] = '\0';
    for (;;) {
        size_t len = strcspn(p, ",");
        const char *a = p, *b = p + len;
        while (a < b && (*a == ' ' || *a == '\t')) a++;
        while (b > a && (b[-1] == ' ' || b[-1] == '\t' || b[-1] == '/')) b--;
        if (a == b) {
            snprintf(err, errlen, "\"%.300s\" has an empty entry", s);
            return SL_EINVAL;
        }
        if (k == SL_HOSTPORT_MAX) {
            snprintf(err, errlen, "\"%.300s\" names more than %d servers", s, SL_HOSTPORT_MAX);
            return SL_EINVAL;
        }
        bool scheme = false;
        for (const char *q = a; q + 3 <= b; q++)
            if (q[0] == ':' && q[1] == '/' && q[2] == '/') scheme = true;
        int n = snprintf(out + used, cap > used ? cap - used : 0, "%s%s%.*s", k ? "," : "",
                         scheme ? "" : "http://", (int)(b - a), a);
        if (n < 0 || used + (size_t)n >= cap) {
            snprintf(err, errlen, "\"%.300s\" is too long", s);
            return SL_EINVAL;
        }
        used += (size_t)n;
        k++;
        if (p[len] == '\0') break;
        p += len + 1;
    }
    return k;
}

int sl_url_redirect_target(const char *from, const char *loc, char *base, size_t baselen,
                           char *target, size_t targetlen, char *err, size_t errlen) {
    size_t slen = strncasecmp(from, "https://", 8) == 0 ? 8 : 7;
    if (loc[0] == '/') {
        size_t alen = strcspn(from + slen, "/");
        snprintf(base, baselen, "%.*s", (int)(slen + alen), from);
        snprintf(target, targetlen, "%s", loc);
        return 0;
    }
    if (strncasecmp(loc, from, slen) != 0 || strncasecmp(from, "http", 4) != 0) {
        snprintf(err, errlen, "the redirect to %.300s is not followed: not the scheme of %.200s",
                 loc, from);
        return SL_EINVAL;
    }
    size_t alen = strcspn(loc + slen, "/?#");
    if (alen == 0) {
        snprintf(err, errlen, "the redirect to %.300s names no host", loc);
        return SL_EINVAL;
    }
    snprintf(base, baselen, "%.*s", (int)(slen + alen), loc);
    snprintf(target, targetlen, "%s", loc[slen + alen] ? loc + slen + alen : "/");
    return 0;
}
