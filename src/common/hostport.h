/*
 * hostport.h - lists of network addresses as people write them:
 * "HOST:PORT" joined by commas ("ctl1:7071,ctl2:7071,[::1]:7071"), as an
 * agent's --controller takes them (and a redirect's "leader" is one of).
 * Pure: no I/O, no name resolution.
 */
#ifndef SLUICE_COMMON_HOSTPORT_H
#define SLUICE_COMMON_HOSTPORT_H

#include <stddef.h>

/* The most addresses one list may name. */
#define SL_HOSTPORT_MAX 16

typedef struct sl_hostport {
    char host[256]; /* without the brackets of an IPv6 literal */
    char port[16];  /* digits, 1..65535 */
} sl_hostport_t;

/*
 * Parses one "HOST:PORT" (s[0..len); an IPv6 host in brackets) into *out.
 * 0, or SL_EINVAL with the reason in err ("\"ctl1\" is not HOST:PORT",
 * "port \"0\" of \"ctl1:0\" is not a number from 1 to 65535"). O(len).
 */
int sl_hostport_parse(const char *s, size_t len, sl_hostport_t *out, char *err, size_t errlen);

/*
 * Parses a comma-separated list of HOST:PORT into out[0..cap), setting *n.
 * Blanks around each entry are skipped. 0, or SL_EINVAL with the reason
 * in err: an empty list or entry, a bad entry (as sl_hostport_parse says),
 * more than cap entries. On failure *n is 0. O(len).
 */
int sl_hostport_list_parse(const char *s, sl_hostport_t *out, size_t cap, size_t *n, char *err,
                           size_t errlen);

/*
 * Normalises a comma-separated list of server URLs as the CLI takes them
 * (--server A,B,C): each entry trimmed of blanks and trailing '/', and
 * given "http://" when it names no scheme ("ctl1:7070" is
 * "http://ctl1:7070"). Writes the entries joined by ',' into out (cap
 * bytes, NUL-terminated). Returns the number of entries (1 or more), or
 * SL_EINVAL with the reason in err for an empty list or entry, more than
 * SL_HOSTPORT_MAX entries, or an out too short. O(len).
 */
int sl_url_list_normalize(const char *s, char *out, size_t cap, char *err, size_t errlen);

/*
 * The URL a redirect's Location (loc) names, for a request that went to
 * the server from ("http[s]://AUTHORITY[/PREFIX]"), split into the server
 * to ask ("SCHEME://AUTHORITY", into base) and the path to ask there (into
 * target, "/" when loc names none). A path alone ("/v1/jobs") keeps from's
 * scheme and authority. 0, or SL_EINVAL with the reason in err when loc
 * has another scheme than from (https never becomes http, http never
 * https; nothing else is followed) or names no host. O(len).
 */
int sl_url_redirect_target(const char *from, const char *loc, char *base, size_t baselen,
                           char *target, size_t targetlen, char *err, size_t errlen);

#endif
