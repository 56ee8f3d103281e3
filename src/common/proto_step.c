/*
 * proto_step.c - the job steps' messages (proto_step.h): encoded with
 * jansson (a step message is sent once per rank event, not per scheduling
 * decision, so the hand formatting of proto.c buys nothing here) and
 * decoded with every field checked and named.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sluice/alloc.h"
#include "sluice/error.h"
#include "jsonesc.h"
#include "proto_step.h"

static const char *const names[2][SL_STEP_NTYPES] = {
    {[SL_STEP_RUN] = "step_run", [SL_STEP_SIGNAL] = "step_signal",
     [SL_STEP_STARTED] = "step_started", [SL_STEP_OUT] = "step_out", [SL_STEP_EXIT] = "step_exit",
     [SL_STEP_STDIN] = "step_stdin"},
    {[SL_STEP_RUN] = "run", [SL_STEP_SIGNAL] = "signal", [SL_STEP_STARTED] = "started",
     [SL_STEP_OUT] = "out", [SL_STEP_EXIT] = "exit", [SL_STEP_STDIN] = "stdin"},
};

const char *sl_step_type_name(sl_step_type_t type, sl_step_link_t link) {
    if (type <= SL_STEP_NONE || type >= SL_STEP_NTYPES || (link != SL_STEP_LINK_CTL && link != SL_STEP_LINK_STEPD))
        return "?";
    return names[link][type];
}

static sl_step_type_t type_of(const char *s, sl_step_link_t link) {
    for (int t = SL_STEP_RUN; s && t < SL_STEP_NTYPES; t++)
        if (strcmp(names[link][t], s) == 0)
            return (sl_step_type_t)t;
    return SL_STEP_NONE;
}

bool sl_step_is_step(json_t *o, sl_step_link_t link) {
    return type_of(json_string_value(json_object_get(o, "type")), link) != SL_STEP_NONE;
}

/* ---- encode ---- */

/* s[0..n) with each byte that is not valid UTF-8, and each NUL, replaced
 * by '?': every reader of the line (the agent port among them, which takes
 * no NUL) then parses it. */
static json_t *utf8_string(const char *s, size_t n) {
    char *t = sl_xmalloc(n + 1);
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        unsigned char ch = (unsigned char)s[i];
        if (ch < 0x80) {
            t[k++] = ch ? (char)ch : '?';
            i++;
            continue;
        }
        size_t q = sl_utf8_seq((const unsigned char *)s + i, n - i, NULL);
        if (q == 0) {
            t[k++] = '?';
            i++;
        } else {
            memcpy(t + k, s + i, q);
            k += q;
            i += q;
        }
    }
    json_t *v = json_stringn(t, k);
    sl_free(t);
    return v ? v : json_string("");
}

static json_t *str_or_null(const char *s) {
    return s ? utf8_string(s, strlen(s)) : json_null();
}

static json_t *env_obj(const sl_proto_kv_t *env, size_t n) {
    json_t *o = json_object();
    for (size_t i = 0; i < n; i++)
        if (env[i].key && env[i].value)
            json_object_set_new(o, env[i].key, utf8_string(env[i].value, strlen(env[i].value)));
    return o;
}

char *sl_step_encode(const sl_step_msg_t *m, sl_step_link_t link, size_t *len) {
    const char *name = sl_step_type_name(m->type, link);
    if (name[0] == '?')
        return NULL;
    if (m->type == SL_STEP_RUN && (m->argc == 0 || m->argv == NULL))
        return NULL;
    if (m->type == SL_STEP_SIGNAL && (m->sig < 1 || m->sig > 64))
        return NULL;
    json_t *o = json_object();
    json_object_set_new(o, "type", json_string(name));
    if (link == SL_STEP_LINK_CTL && m->epoch > 0 && m->epoch <= (uint64_t)SL_PROTO_EPOCH_MAX)
        json_object_set_new(o, "epoch", json_integer((json_int_t)m->epoch));
    if (link == SL_STEP_LINK_CTL)
        json_object_set_new(o, "job", json_integer((json_int_t)m->job));
    json_object_set_new(o, "step", json_integer(m->step));
    if (m->type != SL_STEP_SIGNAL && !(m->type == SL_STEP_RUN && link == SL_STEP_LINK_CTL))
        json_object_set_new(o, "rank", json_integer(m->rank));
    switch (m->type) {
    case SL_STEP_RUN: {
        json_t *a = json_array();
        for (size_t i = 0; i < m->argc; i++)
            json_array_append_new(a, str_or_null(m->argv[i] ? m->argv[i] : ""));
        json_object_set_new(o, "argv", a);
        json_object_set_new(o, "env", env_obj(m->env, m->nenv));
        json_object_set_new(o, "cwd", str_or_null(m->cwd));
        json_object_set_new(o, "output", str_or_null(m->output));
        json_object_set_new(o, "error", str_or_null(m->error));
        if (m->pty_rows > 0 && m->pty_cols > 0)
            json_object_set_new(o, "pty", json_pack("{s:i,s:i}", "rows", m->pty_rows, "cols", m->pty_cols));
        if (link == SL_STEP_LINK_CTL) {
            json_t *r = json_array();
            for (size_t i = 0; i < m->nranks; i++) {
                json_t *e = json_object();
                json_object_set_new(e, "rank", json_integer(m->ranks[i].rank));
                json_object_set_new(e, "task", json_integer(m->ranks[i].task));
                json_object_set_new(e, "env", env_obj(m->ranks[i].env, m->ranks[i].nenv));
                json_array_append_new(r, e);
            }
            json_object_set_new(o, "ranks", r);
        }
        break;
    }
    case SL_STEP_SIGNAL:
        json_object_set_new(o, "signal", json_integer(m->sig));
        break;
    case SL_STEP_STARTED:
        json_object_set_new(o, "pid", json_integer(m->pid));
        break;
    case SL_STEP_OUT:
        json_object_set_new(o, "fd", json_integer(m->fd == 2 ? 2 : 1));
        json_object_set_new(o, "data", utf8_string(m->data ? m->data : "", m->data ? m->data_len : 0));
        break;
    case SL_STEP_STDIN:
        json_object_set_new(o, "data", utf8_string(m->data ? m->data : "", m->data ? m->data_len : 0));
        break;
    case SL_STEP_EXIT:
        json_object_set_new(o, "exit_code", json_integer(m->exit_code));
        json_object_set_new(o, "signal", json_integer(m->signal));
        if (m->reason)
            json_object_set_new(o, "reason", str_or_null(m->reason));
        break;
    default:
        break;
    }
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (s == NULL)
        return NULL;
    size_t n = strlen(s);
    char *line = sl_xmalloc(n + 2);
    memcpy(line, s, n);
    line[n] = '\n';
    line[n + 1] = '\0';
    free(s);
    *len = n + 1;
    return line;
}

/* ---- decode ---- */

typedef struct dec {
    const char *msg;
    char *err;
    size_t errlen;
    void **blocks;
    size_t nblocks;
} dec_t;

static int bad(dec_t *d, const char *field, const char *what) {
    snprintf(d->err, d->errlen, "%s: %s: %s", d->msg, field, what);
    return SL_EINVAL;
}

static void *dalloc(dec_t *d, size_t n) {
    void *p = sl_xmalloc(n ? n : 1);
    d->blocks = sl_xrealloc(d->blocks, (d->nblocks + 1) * sizeof *d->blocks);
    d->blocks[d->nblocks++] = p;
    return p;
}

static int get_int(dec_t *d, json_t *o, const char *k, int64_t lo, int64_t hi, bool required,
                   int64_t *out) {
    json_t *v = json_object_get(o, k);
    if (v == NULL || json_is_null(v)) {
        if (required)
            return bad(d, k, "missing");
        return 0;
    }
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
        char what[96];
        snprintf(what, sizeof what, "must be an integer from %lld to %lld", (long long)lo, (long long)hi);
        return bad(d, k, what);
    }
    *out = json_integer_value(v);
    return 0;
}

static int get_str(dec_t *d, json_t *o, const char *k, const char **out) {
    json_t *v = json_object_get(o, k);
    *out = NULL;
    if (v == NULL || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return bad(d, k, "must be a string");
    *out = json_string_value(v);
    return 0;
}

static int get_env(dec_t *d, json_t *o, const char *field, const sl_proto_kv_t **env, size_t *n) {
    json_t *e = json_object_get(o, "env");
    *env = NULL;
    *n = 0;
    if (e == NULL || json_is_null(e))
        return 0;
    if (!json_is_object(e))
        return bad(d, field, "must be an object of strings");
    sl_proto_kv_t *kv = dalloc(d, json_object_size(e) * sizeof *kv);
    const char *k;
    json_t *v;
    json_object_foreach(e, k, v) {
        if (!json_is_string(v) || k[0] == '\0' || strchr(k, '='))
            return bad(d, field, "must be an object of strings with names without '='");
        kv[(*n)++] = (sl_proto_kv_t){k, json_string_value(v)};
    }
    *env = kv;
    return 0;
}

static int decode_run(dec_t *d, json_t *o, sl_step_link_t link, sl_step_msg_t *m) {
    json_t *a = json_object_get(o, "argv");
    if (!json_is_array(a) || json_array_size(a) == 0)
        return bad(d, "argv", "must be a non-empty array of strings");
    const char **argv = dalloc(d, (json_array_size(a) + 1) * sizeof *argv);
    for (size_t i = 0; i < json_array_size(a); i++) {
        argv[i] = json_string_value(json_array_get(a, i));
        if (argv[i] == NULL)
            return bad(d, "argv", "must be a non-empty array of strings");
    }
    argv[json_array_size(a)] = NULL;
    m->argv = argv;
    m->argc = json_array_size(a);
    int rc;
    if ((rc = get_env(d, o, "env", &m->env, &m->nenv)) != 0 || (rc = get_str(d, o, "cwd", &m->cwd)) != 0 ||
        (rc = get_str(d, o, "output", &m->output)) != 0 || (rc = get_str(d, o, "error", &m->error)) != 0)
        return rc;
    json_t *pty = json_object_get(o, "pty");
    if (pty && !json_is_null(pty)) {
        int64_t rows = 0, cols = 0;
        const char *saved = d->msg;
        d->msg = link == SL_STEP_LINK_CTL ? "step_run: pty" : "run: pty";
        if (!json_is_object(pty))
            rc = bad(d, "pty", "must be an object {rows, cols}");
        if (rc == 0)
            rc = get_int(d, pty, "rows", 1, 10000, true, &rows);
        if (rc == 0)
            rc = get_int(d, pty, "cols", 1, 10000, true, &cols);
        d->msg = saved;
        if (rc != 0)
            return rc;
        m->pty_rows = (int32_t)rows;
        m->pty_cols = (int32_t)cols;
    }
    if (link == SL_STEP_LINK_STEPD)
        return 0;
    json_t *r = json_object_get(o, "ranks");
    if (!json_is_array(r) || json_array_size(r) > SL_STEP_MAX_RANKS)
        return bad(d, "ranks", "must be an array of at most 4096 ranks");
    sl_step_rank_t *ranks = dalloc(d, json_array_size(r) * sizeof *ranks);
    for (size_t i = 0; i < json_array_size(r); i++) {
        json_t *e = json_array_get(r, i);
        char field[48];
        int64_t rank = 0, task = 0;
        snprintf(field, sizeof field, "ranks[%zu]", i);
        if (!json_is_object(e))
            return bad(d, field, "must be an object");
        const char *saved = d->msg;
        char msg[96];
        snprintf(msg, sizeof msg, "%s: %s", saved, field);
        d->msg = msg;
        rc = get_int(d, e, "rank", 0, SL_STEP_MAX_RANKS - 1, true, &rank);
        if (rc == 0)
            rc = get_int(d, e, "task", 0, INT32_MAX, true, &task);
        if (rc == 0)
            rc = get_env(d, e, "env", &ranks[i].env, &ranks[i].nenv);
        d->msg = saved;
        if (rc != 0)
            return rc;
        ranks[i].rank = (int32_t)rank;
        ranks[i].task = (int32_t)task;
    }
    m->ranks = ranks;
    m->nranks = json_array_size(r);
    return 0;
}

int sl_step_decode(json_t *o, sl_step_link_t link, sl_step_msg_t *m, char *err, size_t errlen) {
    memset(m, 0, sizeof *m);
    if (errlen)
        err[0] = '\0';
    dec_t d = {.msg = "step message", .err = err, .errlen = errlen};
    if (!json_is_object(o))
        return bad(&d, "message", "must be a JSON object");
    const char *t = json_string_value(json_object_get(o, "type"));
    m->type = type_of(t, link);
    if (m->type == SL_STEP_NONE) {
        snprintf(err, errlen, "unknown message type %s", t ? t : "(none)");
        return SL_ENOENT;
    }
    m->root_ = json_incref(o);
    d.msg = names[link][m->type];
    int64_t v = 0;
    int rc = 0;
    if (link == SL_STEP_LINK_CTL && (rc = get_int(&d, o, "job", 1, INT64_MAX, true, &v)) == 0)
        m->job = (uint64_t)v;
    if (rc == 0 && (rc = get_int(&d, o, "step", 0, UINT32_MAX, true, &v)) == 0)
        m->step = (uint32_t)v;
    bool has_rank = m->type != SL_STEP_SIGNAL && !(m->type == SL_STEP_RUN && link == SL_STEP_LINK_CTL);
    if (rc == 0 && has_rank && (rc = get_int(&d, o, "rank", 0, SL_STEP_MAX_RANKS - 1, true, &v)) == 0)
        m->rank = (int32_t)v;
    if (rc != 0)
        goto out;
    switch (m->type) {
    case SL_STEP_RUN:
        rc = decode_run(&d, o, link, m);
        break;
    case SL_STEP_SIGNAL:
        if ((rc = get_int(&d, o, "signal", 1, 64, true, &v)) == 0)
            m->sig = (int32_t)v;
        break;
    case SL_STEP_STARTED:
        if ((rc = get_int(&d, o, "pid", 0, INT32_MAX, false, &v)) == 0)
            m->pid = (int32_t)v;
        break;
    case SL_STEP_STDIN:
    case SL_STEP_OUT: {
        v = 1;
        if ((rc = get_int(&d, o, "fd", 1, 2, false, &v)) != 0)
            break;
        m->fd = (int32_t)v;
        json_t *data = json_object_get(o, "data");
        if (!json_is_string(data)) {
            rc = bad(&d, "data", "must be a string");
            break;
        }
        m->data = json_string_value(data);
        m->data_len = json_string_length(data);
        break;
    }
    case SL_STEP_EXIT:
        if ((rc = get_int(&d, o, "exit_code", 0, 255, true, &v)) != 0)
            break;
        m->exit_code = (int32_t)v;
        v = 0;
        if ((rc = get_int(&d, o, "signal", 0, 127, false, &v)) != 0)
            break;
        m->signal = (int32_t)v;
        rc = get_str(&d, o, "reason", &m->reason);
        break;
    default:
        break;
    }
out:
    m->alloc_ = d.blocks ? sl_xmalloc(sizeof(size_t) + d.nblocks * sizeof(void *)) : NULL;
    if (m->alloc_) {
        *(size_t *)m->alloc_ = d.nblocks;
        memcpy((char *)m->alloc_ + sizeof(size_t), d.blocks, d.nblocks * sizeof(void *));
    }
    sl_free(d.blocks);
    return rc;
}

int sl_step_decode_line(const char *line, size_t len, sl_step_link_t link, sl_step_msg_t *m,
                        char *err, size_t errlen) {
    memset(m, 0, sizeof *m);
    if (len > SL_PROTO_MAX_LINE) {
        snprintf(err, errlen, "message longer than 1 MiB");
        return SL_EINVAL;
    }
    json_error_t je;
    json_t *o = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
    if (o == NULL) {
        snprintf(err, errlen, "bad JSON at position %d: %s", je.position, je.text);
        return SL_EINVAL;
    }
    int rc = sl_step_decode(o, link, m, err, errlen);
    json_decref(o);
    return rc;
}

void sl_step_msg_fini(sl_step_msg_t *m) {
    if (m->alloc_) {
        size_t n = *(size_t *)m->alloc_;
        void **b = (void **)((char *)m->alloc_ + sizeof(size_t));
        for (size_t i = 0; i < n; i++)
            sl_free(b[i]);
        sl_free(m->alloc_);
    }
    if (m->root_)
        json_decref(m->root_);
    memset(m, 0, sizeof *m);
}
