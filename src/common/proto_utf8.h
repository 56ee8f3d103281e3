/*
 * proto_utf8.h - UTF-8 as the wire carries it (docs/protocol.md: every
 * line is JSON, so every string in it is UTF-8): whether bytes are a valid
 * sequence, for the encoder, and a chunk of a task's log made valid
 * without changing its length, for an agent answering a logs request.
 * proto.h includes this header.
 */
#ifndef SLUICE_COMMON_PROTO_UTF8_H
#define SLUICE_COMMON_PROTO_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/* The length of the valid UTF-8 sequence at s[0..n) (n > 0, s[0] >= 0x80),
 * or 0 if it is not one (RFC 3629: no overlongs, surrogates or code points
 * past U+10FFFF). When it returns 0 because s[0..n) is the valid start of
 * a sequence that n cuts short, *cut is set (cut may be NULL); otherwise
 * *cut is cleared. Can't fail; O(1). */
size_t sl_proto_utf8_seq(const unsigned char *s, size_t n, bool *cut);

/* Makes b[0..n) valid UTF-8 for JSON without changing its length in bytes
 * (so that offsets into a log stay file offsets): invalid bytes and NUL
 * become '?'. A multi-byte sequence cut short by the end of the chunk is
 * left out (it is read again next time) unless final, when it becomes '?'
 * too. Returns the new length (n, or less by such a cut sequence). Can't
 * fail; O(n). */
size_t sl_proto_utf8_clean(unsigned char *b, size_t n, bool final);

#endif
