/*
 * pb.c - protobuf's varints and length-delimited fields (pb.h).
 */
#include <string.h>

#include "ha/pb.h"


static void pb_raw_varint(ctl_pb_t *b, uint64_t v) {
    unsigned char t[10];
    size_t n = 0;
    do {
        t[n] = (unsigned char)(v & 0x7f);
        v >>= 7;
        if (v)
            t[n] |= 0x80;
        n++;
    } while (v);
    ctl_buf_add(b, t, n);
}

void ctl_pb_varint(ctl_pb_t *b, uint32_t field, uint64_t v) {
    pb_raw_varint(b, (uint64_t)field << 3 | 0);
    pb_raw_varint(b, v);
}

void ctl_pb_bytes(ctl_pb_t *b, uint32_t field, const void *p, size_t n) {
    pb_raw_varint(b, (uint64_t)field << 3 | 2);
    pb_raw_varint(b, n);
    ctl_buf_add(b, p, n);
}

void ctl_pb_msg(ctl_pb_t *b, uint32_t field, const ctl_pb_t *m) {
    ctl_pb_bytes(b, field, m->p, m->len);
}

void ctl_pb_free(ctl_pb_t *b) {
    ctl_buf_fini(b);
}

void ctl_pbr_init(ctl_pbr_t *r, const void *p, size_t n) {
    r->p = p;
    r->end = r->p + n;
    r->bad = false;
}

static bool pbr_varint(ctl_pbr_t *r, uint64_t *v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (r->p >= r->end)
            return false;
        unsigned char c = *r->p++;
        *v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80))
            return true;
    }
    return false;
}

bool ctl_pbr_next(ctl_pbr_t *r, ctl_pbf_t *f) {
    for (;;) {
        if (r->p >= r->end)
            return false;
        uint64_t tag;
        if (!pbr_varint(r, &tag))
            goto bad;
        *f = (ctl_pbf_t){.num = (uint32_t)(tag >> 3)};
        switch (tag & 7) {
        case 0:
            if (!pbr_varint(r, &f->v))
                goto bad;
            return true;
        case 2:
            if (!pbr_varint(r, &f->v) || f->v > (uint64_t)(r->end - r->p))
                goto bad;
            f->data = r->p;
            f->len = (size_t)f->v;
            r->p += f->len;
            return true;
        case 1: /* 64-bit: skipped */
            if (r->end - r->p < 8)
                goto bad;
            r->p += 8;
            continue;
        case 5: /* 32-bit: skipped */
            if (r->end - r->p < 4)
                goto bad;
            r->p += 4;
            continue;
        default:
            goto bad;
        }
    }
bad:
    r->bad = true;
    return false;
}
