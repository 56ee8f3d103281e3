/*
 * jsonesc.h - the one JSON string escaper of Sluice, and the UTF-8 check it
 * rests on.
 *
 * Every JSON string the programs write by hand goes through sl_json_quote:
 * the wire codec's messages (proto.c) and the controller's replies
 * (ctl/base/buf.c), which writes one per job field in GET /v1/jobs. The
 * output is always valid JSON text in UTF-8 (RFC 8259), whatever the input:
 *
 *   '"' and '\' become \" and \\; newline, carriage return and tab become
 *   \n, \r and \t; every other byte below 0x20 (NUL included) becomes
 *   \u00XX in lower-case hex; a byte of 0x80 or more that begins a valid
 *   UTF-8 sequence (sl_utf8_seq) is copied with the rest of the sequence,
 *   and any other such byte (a stray continuation, an overlong or surrogate
 *   form, a sequence cut short) becomes one '?'. Everything else, 0x7f
 *   included, and '/' too, is copied as it is.
 *
 * Replacing bad bytes, rather than copying them, is what keeps a reply
 * parseable when a name or a log line is not UTF-8: a JSON reader rejects
 * the whole document over one bad byte. The bytes are checked in one pass
 * that copies each run of plain bytes with one memcpy.
 */
#ifndef SLUICE_JSONESC_H
#define SLUICE_JSONESC_H

#include <stdbool.h>
#include <stddef.h>

/* The most bytes sl_json_quote writes for n input bytes: every byte
 * escaped as \u00XX, and the quotes. */
#define SL_JSON_QUOTE_MAX(n) (6 * (size_t)(n) + 2)

/* The JSON string literal of s[0..n) (quotes included; s may hold NULs and
 * may be NULL when n is 0). Writes its first min(cap, length) bytes to dst
 * (which may be NULL when cap is 0), adds no NUL, and returns its whole
 * length, as snprintf does, so that a caller with a short buffer learns
 * what it needs. Can't fail. O(n). */
size_t sl_json_quote(char *dst, size_t cap, const char *s, size_t n);

/* Strings in JSON are UTF-8. The length of the valid UTF-8 sequence at
 * s[0..n) (n > 0, s[0] >= 0x80), or 0 if it is not one (RFC 3629: no
 * overlongs, surrogates or code points past U+10FFFF). When it returns 0
 * because s[0..n) is the valid start of a sequence that n cuts short, *cut
 * is set (cut may be NULL); otherwise *cut is cleared. For the escaper and
 * for an agent cleaning a log chunk it sends. Can't fail; O(1). */
size_t sl_utf8_seq(const unsigned char *s, size_t n, bool *cut);

/* Makes b[0..n) valid UTF-8 for JSON without changing its length in bytes
 * (so that offsets into a log stay file offsets): invalid bytes and NUL
 * become '?'. A multi-byte sequence cut short by the end of the chunk is
 * left out (it is read again next time) unless final, when it becomes '?'
 * too. Returns the new length (n, or less by such a cut sequence). For an
 * agent answering a logs request. Can't fail; O(n). */
size_t sl_utf8_clean(unsigned char *b, size_t n, bool final);

#endif
