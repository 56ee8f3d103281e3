/*
 * proto_encode.c - the encoder of the controller <-> agent protocol
 * (proto.h, docs/protocol.md); proto.c decodes.
 *
 * Encoding writes the line directly, field by field in the order
 * docs/protocol.md shows, into the caller's buffer through a writer that
 * keeps counting past the end of the buffer (snprintf semantics), so the
 * caller learns the length a short buffer would have needed and nothing is
 * allocated. Integers are converted by hand and strings escaped by the one
 * escaper (jsonesc.h), which copies runs of plain bytes with memcpy: a
 * launch is a few hundred bytes and the controller writes one per task it
 * starts.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonesc.h"
#include "proto.h"
#include "sluice/alloc.h"
#include "sluice/error.h"
#include "quantity.h"
#include "sluice/resources.h"

/* ---- encoding ---- */

typedef struct writer {
    char *buf;
    size_t cap;
    size_t len; /* bytes the whole line needs so far; may exceed cap */
} writer_t;

static void put(writer_t *w, const void *p, size_t n) {
    if (w->len < w->cap) {
        size_t room = w->cap - w->len;
        memcpy(w->buf + w->len, p, n < room ? n : room);
    }
    w->len += n;
}

static void puts_(writer_t *w, const char *s) {
    put(w, s, strlen(s));
}

static void put_u64(writer_t *w, uint64_t v) {
    char tmp[24];
    size_t i = sizeof tmp;
    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    put(w, tmp + i, sizeof tmp - i);
}

static void put_i64(writer_t *w, int64_t v) {
    if (v < 0) {
        put(w, "-", 1);
        put_u64(w, (uint64_t)0 - (uint64_t)v);
    } else {
        put_u64(w, (uint64_t)v);
    }
}

/* A JSON string literal of s[0..n) (jsonesc.h); NULL writes null. The
 * escaper has the writer's semantics: it writes what fits and counts all. */
static void put_strn(writer_t *w, const char *s, size_t n) {
    if (s == NULL) {
        puts_(w, "null");
        return;
    }
    size_t room = w->len < w->cap ? w->cap - w->len : 0;
    w->len += sl_json_quote(room ? w->buf + w->len : NULL, room, s, n);
}

static void put_str(writer_t *w, const char *s) {
    put_strn(w, s, s ? strlen(s) : 0);
}

/* ,"key": */
static void key(writer_t *w, const char *k) {
    put(w, ",\"", 2);
    puts_(w, k);
    put(w, "\":", 2);
}

/* Seconds with microseconds, the precision the controller records. */
static int put_time(writer_t *w, double t) {
    if (!isfinite(t)) return SL_EINVAL;
    char tmp[64];
    int n = snprintf(tmp, sizeof tmp, "%.6f", t);
    if (n < 0 || (size_t)n >= sizeof tmp) return SL_EINVAL;
    put(w, tmp, (size_t)n);
    return 0;
}

/* A task's attempt and instance (proto_run.c), each when it is there. */
static void put_run(writer_t *w, bool has_attempt, uint32_t attempt, const char *instance) {
    w->len += sl__proto_run_encode(has_attempt, attempt, instance,
                                   w->len < w->cap ? w->buf + w->len : NULL,
                                   w->len < w->cap ? w->cap - w->len : 0);
}

/* job and task, then the attempt of the messages that carry one. */
static void put_ids(writer_t *w, const sl_proto_msg_t *m) {
    key(w, "job");
    put_u64(w, m->job);
    key(w, "task");
    put_i64(w, m->task);
    put_run(w, m->has_attempt, m->attempt, NULL);
}

/* The enforcement fields of an exit: each only when it says something. */
static void put_mem_end(writer_t *w, bool oom_killed, int64_t peak, int64_t limit) {
    if (oom_killed) puts_(w, ",\"oom_killed\":true");
    if (peak > 0) {
        key(w, "mem_peak");
        put_i64(w, peak);
    }
    if (limit > 0) {
        key(w, "mem_limit");
        put_i64(w, limit);
    }
}

static int enc_task(writer_t *w, const sl_proto_task_t *t) {
    puts_(w, "{\"job\":");
    put_u64(w, t->job);
    key(w, "task");
    put_i64(w, t->task);
    put_run(w, t->has_attempt, t->attempt, t->instance);
    key(w, "state");
    int rc = 0;
    switch (t->state) {
    case SL_PROTO_TASK_RUNNING:
        puts_(w, "\"running\"");
        key(w, "pid");
        put_i64(w, t->pid);
        key(w, "start_time");
        rc = put_time(w, t->start_time);
        break;
    case SL_PROTO_TASK_EXITED:
        puts_(w, "\"exited\"");
        key(w, "exit_code");
        put_i64(w, t->exit_code);
        key(w, "signal");
        put_i64(w, t->signal);
        if (t->fenced)
            puts_(w, ",\"fenced\":true");
        put_mem_end(w, t->oom_killed, t->mem_peak, t->mem_limit);
        key(w, "end_time");
        rc = put_time(w, t->end_time);
        break;
    case SL_PROTO_TASK_FAILED:
        puts_(w, "\"failed\"");
        key(w, "reason");
        put_str(w, t->reason ? t->reason : "");
        key(w, "end_time");
        rc = put_time(w, t->end_time);
        break;
    default:
        return SL_EINVAL;
    }
    put(w, "}", 1);
    return rc;
}

static int enc_hello(writer_t *w, const sl_proto_hello_t *h) {
    const sl_proto_node_t *n = &h->node;
    if (h->token == NULL || n->name == NULL || (h->ntasks > 0 && h->tasks == NULL)) return SL_EINVAL;
    key(w, "token");
    put_str(w, h->token);
    if (h->version) {
        key(w, "version");
        put_str(w, h->version);
    }
    puts_(w, ",\"node\":{\"name\":");
    put_str(w, n->name);
    const char *const qk[] = {"cpus", "memory"};
    const char *const qv[] = {n->cpus, n->memory};
    for (int i = 0; i < 2; i++) {
        if (qv[i]) {
            key(w, qk[i]);
            put_str(w, qv[i]);
        }
    }
    key(w, "gpus");
    put_i64(w, n->gpus);
    const char *const sk[] = {"gpu_model", "gpu_memory", "pool", "labels", "addr", "taints"};
    const char *const sv[] = {n->gpu_model, n->gpu_memory, n->pool, n->labels, n->addr, n->taints};
    for (int i = 0; i < 6; i++) {
        if (sv[i]) {
            key(w, sk[i]);
            put_str(w, sv[i]);
        }
    }
    puts_(w, "},\"tasks\":[");
    for (size_t i = 0; i < h->ntasks; i++) {
        if (i) put(w, ",", 1);
        if (enc_task(w, &h->tasks[i]) != 0) return SL_EINVAL;
    }
    put(w, "]", 1);
    return 0;
}

static int enc_launch(writer_t *w, const sl_proto_msg_t *m) {
    const sl_proto_launch_t *l = &m->u.launch;
    if ((l->argc > 0 && l->argv == NULL) || (l->nenv > 0 && l->env == NULL) ||
        (l->ngpus > 0 && l->gpus == NULL))
        return SL_EINVAL;
    put_ids(w, m);
    key(w, "name");
    put_str(w, l->name);
    key(w, "tenant");
    put_str(w, l->tenant);
    key(w, "argv");
    if (l->argv == NULL) {
        puts_(w, "null");
    } else {
        put(w, "[", 1);
        for (size_t i = 0; i < l->argc; i++) {
            if (l->argv[i] == NULL) return SL_EINVAL;
            if (i) put(w, ",", 1);
            put_str(w, l->argv[i]);
        }
        put(w, "]", 1);
    }
    key(w, "image");
    put_str(w, l->image);
    puts_(w, ",\"env\":{");
    for (size_t i = 0; i < l->nenv; i++) {
        if (l->env[i].key == NULL || l->env[i].value == NULL) return SL_EINVAL;
        if (i) put(w, ",", 1);
        put_str(w, l->env[i].key);
        put(w, ":", 1);
        put_str(w, l->env[i].value);
    }
    puts_(w, "},\"gpus\":[");
    for (size_t i = 0; i < l->ngpus; i++) {
        if (i) put(w, ",", 1);
        put_i64(w, l->gpus[i]);
    }
    put(w, "]", 1);
    key(w, "gpu_milli");
    put_i64(w, l->gpu_milli);
    key(w, "gpu_memory");
    put_i64(w, l->gpu_memory);
    key(w, "cpu_milli");
    put_i64(w, l->cpu_milli);
    key(w, "mem_bytes");
    put_i64(w, l->mem_bytes);
    key(w, "rank");
    put_i64(w, l->rank);
    key(w, "world_size");
    put_i64(w, l->world_size);
    key(w, "local_rank");
    put_i64(w, l->local_rank);
    key(w, "master_addr");
    put_str(w, l->master_addr ? l->master_addr : SL_PROTO_DEFAULT_MASTER_ADDR);
    key(w, "master_port");
    put_i64(w, l->master_port);
    key(w, "time_limit");
    put_i64(w, l->time_limit);
    if (l->user) {
        key(w, "user");
        put_str(w, l->user);
    }
    if (l->group) {
        key(w, "group");
        put_str(w, l->group);
    }
    if (l->allow_root) puts_(w, ",\"allow_root\":true");
    if (l->on_node_failure) {
        key(w, "on_node_failure");
        put_str(w, l->on_node_failure);
    }
    if (l->has_oom_score_adj) {
        if (l->oom_score_adj < SL_PROTO_OOM_SCORE_ADJ_MIN || l->oom_score_adj > SL_PROTO_OOM_SCORE_ADJ_MAX)
            return SL_EINVAL;
        key(w, "oom_score_adj");
        put_i64(w, l->oom_score_adj);
    }
    if (l->nmounts) {
        puts_(w, ",\"mounts\":[");
        for (size_t i = 0; i < l->nmounts; i++) {
            if (l->mounts[i] == NULL) return SL_EINVAL;
            if (i) put(w, ",", 1);
            put_str(w, l->mounts[i]);
        }
        put(w, "]", 1);
    }
    if (l->shm_size > 0) {
        key(w, "shm_size");
        put_i64(w, l->shm_size);
    }
    if (l->workdir) {
        key(w, "workdir");
        put_str(w, l->workdir);
    }
    if (l->mem_limit > 0) {
        key(w, "mem_limit");
        put_i64(w, l->mem_limit);
    }
    if (l->cpu_limit_milli > 0) {
        key(w, "cpu_limit_milli");
        put_i64(w, l->cpu_limit_milli);
    }
    if (l->nimage_args) {
        puts_(w, ",\"image_args\":[");
        for (size_t i = 0; i < l->nimage_args; i++) {
            if (l->image_args[i] == NULL) return SL_EINVAL;
            if (i) put(w, ",", 1);
            put_str(w, l->image_args[i]);
        }
        put(w, "]", 1);
    }
    if (l->containers) { /* the one field written by jansson: a pod's, rare and small */
        char *text = json_dumps(l->containers, JSON_COMPACT);
        if (!text) return SL_EINVAL;
        puts_(w, ",\"containers\":");
        puts_(w, text);
        free(text);
    }
    long vn = sl__proto_volumes_encode(l->volumes, l->nvolumes, w->len < w->cap ? w->buf + w->len : NULL,
                                       w->len < w->cap ? w->cap - w->len : 0);
    if (vn < 0) return SL_EINVAL;
    w->len += (size_t)vn;
    w->len += sl__proto_secret_encode(&l->secrets, w->len < w->cap ? w->buf + w->len : NULL,
                                      w->len < w->cap ? w->cap - w->len : 0);
    return 0;
}

static int enc_body(writer_t *w, const sl_proto_msg_t *m) {
    switch (m->type) {
    case SL_PROTO_HELLO:
        return enc_hello(w, &m->u.hello);
    case SL_PROTO_STARTED:
        put_ids(w, m);
        key(w, "pid");
        put_i64(w, m->u.started.pid);
        key(w, "time");
        return put_time(w, m->time);
    case SL_PROTO_EXITED:
        put_ids(w, m);
        key(w, "exit_code");
        put_i64(w, m->u.exited.exit_code);
        key(w, "signal");
        put_i64(w, m->u.exited.signal);
        if (m->u.exited.fenced)
            puts_(w, ",\"fenced\":true");
        put_mem_end(w, m->u.exited.oom_killed, m->u.exited.mem_peak, m->u.exited.mem_limit);
        key(w, "time");
        return put_time(w, m->time);
    case SL_PROTO_FAILED:
        if (m->u.failed.reason == NULL) return SL_EINVAL;
        put_ids(w, m);
        key(w, "reason");
        put_str(w, m->u.failed.reason);
        key(w, "time");
        return put_time(w, m->time);
    case SL_PROTO_HEARTBEAT:
        if (m->u.heartbeat.seq > 0) {
            key(w, "seq");
            put_u64(w, m->u.heartbeat.seq);
        }
        /* The usage summary, if any (proto_usage.c; nothing when nusage is 0). */
        w->len += sl__proto_usage_encode(m->u.heartbeat.usage, m->u.heartbeat.nusage,
                                         w->len < w->cap ? w->buf + w->len : NULL,
                                         w->len < w->cap ? w->cap - w->len : 0);
        w->len += sl__proto_health_encode(&m->u.heartbeat.health,
                                          w->len < w->cap ? w->buf + w->len : NULL,
                                          w->len < w->cap ? w->cap - w->len : 0);
        key(w, "time");
        return put_time(w, m->time);
    case SL_PROTO_HEARTBEAT_ECHO:
        key(w, "seq");
        put_u64(w, m->u.heartbeat.seq);
        return 0;
    case SL_PROTO_LOGS_REPLY: {
        const sl_proto_logs_reply_t *r = &m->u.logs_reply;
        key(w, "req");
        put_u64(w, m->req);
        put_ids(w, m);
        if (r->error) {
            key(w, "error");
            put_str(w, r->error);
            return 0;
        }
        if (r->data == NULL && r->data_len > 0) return SL_EINVAL;
        key(w, "offset");
        put_i64(w, r->offset);
        key(w, "data");
        put_strn(w, r->data ? r->data : "", r->data_len);
        if (r->size >= 0) {
            key(w, "size");
            put_i64(w, r->size);
        }
        key(w, "eof");
        puts_(w, r->eof ? "true" : "false");
        return 0;
    }
    case SL_PROTO_WELCOME:
        if (m->u.welcome.node) {
            key(w, "node");
            put_str(w, m->u.welcome.node);
        }
        if (m->u.welcome.heartbeat > 0) {
            key(w, "heartbeat");
            put_i64(w, m->u.welcome.heartbeat);
        }
        if (m->u.welcome.node_timeout_ms > 0) {
            key(w, "node_timeout_ms");
            put_i64(w, m->u.welcome.node_timeout_ms);
            if (m->u.welcome.kill_grace_ms >= 0) {
                key(w, "kill_grace_ms");
                put_i64(w, m->u.welcome.kill_grace_ms);
            }
        }
        put_run(w, false, 0, m->u.welcome.instance);
        return 0;
    case SL_PROTO_ERROR:
        if (m->u.error.message == NULL) return SL_EINVAL;
        key(w, "message");
        put_str(w, m->u.error.message);
        return 0;
    case SL_PROTO_LAUNCH:
        return enc_launch(w, m);
    case SL_PROTO_KILL:
        put_ids(w, m);
        w->len += sl__proto_kill_encode(&m->u.kill, w->len < w->cap ? w->buf + w->len : NULL,
                                        w->len < w->cap ? w->cap - w->len : 0); /* proto_kill.c */
        return 0;
    case SL_PROTO_ACK:
        put_ids(w, m);
        return 0;
    case SL_PROTO_REDIRECT:
        if (m->u.redirect.leader) key(w, "leader"), put_str(w, m->u.redirect.leader);
        return 0;
    case SL_PROTO_LOGS_REQ:
        key(w, "req");
        put_u64(w, m->req);
        put_ids(w, m);
        key(w, "offset");
        put_i64(w, m->u.logs_req.offset);
        key(w, "limit");
        put_i64(w, m->u.logs_req.limit);
        return 0;
    default:
        return SL_EINVAL;
    }
}

int sl_proto_encode(const sl_proto_msg_t *m, char *buf, size_t cap, size_t *len) {
    writer_t w = {buf, cap, 0};
    if (m->type <= SL_PROTO_NONE || m->type >= SL_PROTO_NTYPES) return SL_EINVAL;
    puts_(&w, "{\"type\":\"");
    puts_(&w, sl_proto_type_name(m->type));
    put(&w, "\"", 1);
    w.len += sl__proto_epoch_encode(m->epoch, w.len < cap ? buf + w.len : NULL,
                                    w.len < cap ? cap - w.len : 0);
    int rc = enc_body(&w, m);
    if (rc != 0) {
        if (cap > 0) buf[0] = '\0';
        *len = 0;
        return rc;
    }
    put(&w, "}\n", 2);
    if (w.len < cap)
        buf[w.len] = '\0';
    else if (cap > 0)
        buf[cap - 1] = '\0';
    *len = w.len;
    return 0;
}

char *sl_proto_encode_alloc(const sl_proto_msg_t *m, size_t *len) {
    char small[512];
    size_t n;
    if (sl_proto_encode(m, small, sizeof small, &n) != 0) return NULL;
    char *out = sl_xmalloc(n + 1);
    if (n < sizeof small)
        memcpy(out, small, n + 1);
    else
        sl_proto_encode(m, out, n + 1, &n);
    *len = n;
    return out;
}

