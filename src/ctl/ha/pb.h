/*
 * pb.h - the few pieces of protobuf's wire format that etcd's messages
 * need (varints and length-delimited fields; fixed-width fields are only
 * skipped when read), for the gRPC client (etcdg.h).
 *
 * A message is written field after field into a growing buffer; a nested
 * message is written into a buffer of its own first, then added as one
 * length-delimited field. A reader walks a message's fields in order.
 */
#ifndef SLUICE_CTL_HA_PB_H
#define SLUICE_CTL_HA_PB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

/* A message being written: the project's byte buffer. */
typedef ctl_buf_t ctl_pb_t;

/* Appends field (wire type 0) of value v; field (wire type 2) of n bytes
 * at p; field holding the message m (its bytes). Can't fail. */
void ctl_pb_varint(ctl_pb_t *b, uint32_t field, uint64_t v);
void ctl_pb_bytes(ctl_pb_t *b, uint32_t field, const void *p, size_t n);
void ctl_pb_msg(ctl_pb_t *b, uint32_t field, const ctl_pb_t *m);
void ctl_pb_free(ctl_pb_t *b);

/* A reader over n bytes at p: ctl_pbr_next gives the next field in *f,
 * its value (a varint) or its bytes (length delimited, pointing into the
 * message); false at the end or on bytes that are not protobuf (r->bad
 * then set). Fixed-width fields are skipped. */
typedef struct ctl_pbr {
    const unsigned char *p, *end;
    bool bad;
} ctl_pbr_t;
typedef struct ctl_pbf {
    uint32_t num;               /* the field's number */
    uint64_t v;                 /* a varint's value; a length-delimited field's length */
    const unsigned char *data;  /* a length-delimited field's bytes (NULL for a varint) */
    size_t len;
} ctl_pbf_t;
void ctl_pbr_init(ctl_pbr_t *r, const void *p, size_t n);
bool ctl_pbr_next(ctl_pbr_t *r, ctl_pbf_t *f);

#endif
