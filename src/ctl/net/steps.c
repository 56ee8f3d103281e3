/*
 * steps.c - job steps inside allocations (steps.h; docs/slurm.md).
 *
 * A step is srun's: N ranks of one command, placed on the allocation's
 * nodes and tasks, started by each node's agent through the step daemon
 * (sluice-stepd) of the task a rank is given, so that the rank runs in
 * that task's cgroup, as its user, with GPUs the allocation holds there.
 *
 * Placement (Slurm's block distribution over the allocation's nodes in
 * SLURM_JOB_NODELIST order): without -n and -N the step has the
 * allocation's own shape (its tasks per node); -N K takes the first K
 * nodes; -n spreads ranks as evenly as the nodes allow (the first nodes one
 * more), or, without -N, fills each node up to its tasks before the next;
 * --ntasks-per-node caps each node. More ranks on a node than it has
 * tasks is an error unless --overlap (then they share tasks round robin).
 * Local rank l of c ranks on a node with s tasks runs in task l*s/c (so
 * ranks spread over the tasks) and sees the GPUs of tasks
 * [l*s/c, (l+1)*s/c) (a rank that takes two tasks' GPUs still runs in the
 * first one's cgroup: docs/slurm.md says where that falls short); with
 * --gpus-per-task G it sees GPUs [l*G, (l+1)*G) of the node's, and runs in
 * the task that holds the first of them.
 *
 * The reply is a stream of JSON lines (chunked), one per event: "step"
 * (its id and nodes), "started", "out", "exit", then "end" with the step's
 * exit code (the highest of its ranks', as Slurm's srun). A "tick" line
 * each second (a timer armed only while steps run) keeps idle streams
 * alive and tells a stream whose srun went away: its ranks are then
 * killed. When the allocation ends, its steps end
 * with it (each rank that had not ended is reported lost).
 */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "base/loop.h"
#include "domain/jobtab.h"
#include "domain/nodes.h"
#include "domain/whole.h"
#include "hostlist.h"
#include "log.h"
#include "net/steps.h"
#include "proto_step.h"
#include "sluice/alloc.h"
#include "sluice/error.h"
#include "views/alloc.h"
#include "views/batch.h"

/* A step none of whose ranks started or ended by then is given up. */
#define STEP_START_TIMEOUT_S 30

struct ctl_step_ids {
    struct ctl_step_ids *next;
    uint64_t job;
    uint32_t next_id;
};

struct ctl_step {
    ctl_step_t *next;
    uint64_t job;
    uint32_t id;
    struct evhttp_request *req; /* NULL once srun went away */
    int32_t nranks, nended, nstarted, exit_code;
    int ticks;                  /* seconds since it was sent out */
    uint8_t *ended;             /* by rank */
    uint32_t *nodes;            /* the step's nodes, for signals */
    int32_t pty_node;           /* --pty: rank 0's node (its input goes there); -1: none */
    size_t nnodes;
    bool kill_on_bad_exit, killed;
    int64_t dropped;            /* output bytes not sent: srun did not keep up */
};

/* The most output a step's stream may have waiting to be written to srun:
 * past it the ranks' output is dropped (and counted, and said) rather than
 * held in sluiced's memory for an srun that reads slowly or not at all. */
#define STEP_STREAM_MAX_BYTES (8 * 1024 * 1024)

/* ---- replies ---- */

static void reply_error(ctl_steps_t *s, struct evhttp_request *req, int status, const char *code,
                        const char *field, const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static void reply_error(ctl_steps_t *s, struct evhttp_request *req, int status, const char *code,
                        const char *field, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_t *e = json_pack("{s:s,s:s}", "code", code, "message", msg);
    if (field)
        json_object_set_new(e, "field", json_string(field));
    json_t *o = json_pack("{s:o}", "error", e);
    char *txt = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    struct evbuffer *b = evbuffer_new();
    evbuffer_add_printf(b, "%s\n", txt ? txt : "{}");
    free(txt);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
    s->c->n.http_errors++;
    ctl_hconns_send(s->conns, req, status, status == 404   ? "Not Found"
                                           : status == 401 ? "Unauthorized"
                                           : status == 409 ? "Conflict"
                                           : status == 503 ? "Service Unavailable"
                                                           : "Bad Request", b);
    evbuffer_free(b);
}

static void stream_line(ctl_step_t *st, json_t *o) {
    if (st->req == NULL) {
        json_decref(o);
        return;
    }
    char *txt = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (evhttp_request_get_connection(st->req) != NULL && txt) {
        struct evbuffer *b = evbuffer_new();
        evbuffer_add_printf(b, "%s\n", txt);
        evhttp_send_reply_chunk(st->req, b);
        evbuffer_free(b);
    }
    free(txt);
}

/* ---- the steps ---- */

static ctl_step_t *step_find(ctl_steps_t *s, uint64_t job, uint32_t id) {
    for (ctl_step_t *st = s->steps; st; st = st->next)
        if (st->job == job && st->id == id)
            return st;
    return NULL;
}

static void step_signal(ctl_steps_t *s, ctl_step_t *st, int sig) {
    sl_step_msg_t m = {.type = SL_STEP_SIGNAL, .job = st->job, .step = st->id, .sig = sig,
                       .epoch = s->c->epoch};
    size_t len;
    char *line = sl_step_encode(&m, SL_STEP_LINK_CTL, &len);
    for (size_t i = 0; line && i < st->nnodes; i++)
        if (s->send)
            s->send(s->send_ud, st->nodes[i], line, len);
    sl_free(line);
}

/* Says, on rank's stderr, how much output was dropped since it last said. */
static void drop_note(ctl_step_t *st, int32_t rank) {
    if (st->dropped <= 0)
        return;
    char note[160];
    snprintf(note, sizeof note, "srun: %lld bytes of the ranks' output dropped: srun read them "
             "slower than they were written\n", (long long)st->dropped);
    stream_line(st, json_pack("{s:s,s:i,s:i,s:s}", "type", "out", "rank", rank, "fd", 2, "data", note));
    sl_log(SL_LOG_INFO, "step", "job=%llu step=%u: %lld bytes of output dropped (srun is slow)",
           (unsigned long long)st->job, st->id, (long long)st->dropped);
    st->dropped = 0;
}

static void step_free(ctl_steps_t *s, ctl_step_t *st) {
    for (ctl_step_t **pp = &s->steps; *pp; pp = &(*pp)->next)
        if (*pp == st) {
            *pp = st->next;
            break;
        }
    if (st->req) {
        drop_note(st, 0);
        stream_line(st, json_pack("{s:s,s:i}", "type", "end", "exit_code", st->exit_code));
        evhttp_send_reply_end(st->req); /* frees a request whose connection is gone */
    }
    sl_free(st->ended);
    sl_free(st->nodes);
    sl_free(st);
}

static void rank_ended(ctl_steps_t *s, ctl_step_t *st, int32_t rank, int32_t code, int32_t sig,
                       const char *reason) {
    if (rank < 0 || rank >= st->nranks || st->ended[rank])
        return;
    st->ended[rank] = 1;
    st->nended++;
    if (code > st->exit_code)
        st->exit_code = code;
    json_t *o = json_pack("{s:s,s:i,s:i,s:i}", "type", "exit", "rank", rank, "exit_code", code,
                          "signal", sig);
    if (reason)
        json_object_set_new(o, "reason", json_string(reason));
    stream_line(st, o);
    if (code != 0 && st->kill_on_bad_exit && !st->killed) {
        st->killed = true;
        step_signal(s, st, SIGKILL);
    }
    if (st->nended == st->nranks)
        step_free(s, st);
}

/* Ends every rank of st not yet ended, and so st (freed with its last). */
static void step_lost(ctl_steps_t *s, ctl_step_t *st, const char *why) {
    uint64_t job = st->job;
    uint32_t id = st->id;
    int32_t n = st->nranks;
    for (int32_t r = 0; r < n && step_find(s, job, id) == st; r++)
        if (!st->ended[r])
            rank_ended(s, st, r, 255, 0, why);
}

static void tick_cb(evutil_socket_t fd, short ev, void *arg) {
    (void)fd;
    (void)ev;
    ctl_steps_t *s = arg;
    for (ctl_step_t *st = s->steps, *next; st; st = next) {
        next = st->next;
        ctl_job_t *j = ctl_job_find(s->c, st->job);
        if (j == NULL || j->state != CTL_JOB_RUNNING) {
            step_lost(s, st, "the allocation ended");
            continue;
        }
        /* An agent that ignores step_run (one without job steps) never
         * answers; one that has them answers every rank within its 10 s of
         * retries. */
        if (++st->ticks >= STEP_START_TIMEOUT_S && st->nstarted + st->nended == 0) {
            step_lost(s, st, "no agent started the step's ranks: do its nodes' agents run job steps?");
            continue;
        }
        /* An agent that went away took its ranks with it (its step
         * daemons kill the ranks of a connection that closes). */
        const char *gone = NULL;
        for (size_t i = 0; i < st->nnodes && !gone; i++) {
            ctl_node_t *nd = ctl_node_get(s->c, st->nodes[i]);
            if (nd == NULL || !nd->connected)
                gone = ctl_node_name(s->c, (int32_t)st->nodes[i]);
        }
        if (gone) {
            char why[160];
            snprintf(why, sizeof why, "the agent of node %s went away", gone);
            step_signal(s, st, SIGKILL); /* the ranks elsewhere go too */
            step_lost(s, st, why);
            continue;
        }
        if (st->req && evhttp_request_get_connection(st->req) == NULL) {
            sl_log(SL_LOG_INFO, "step", "job=%llu step=%u: srun went away; its ranks are killed",
                   (unsigned long long)st->job, st->id);
            evhttp_send_reply_end(st->req); /* frees it */
            st->req = NULL;
            if (!st->killed) {
                st->killed = true;
                step_signal(s, st, SIGKILL);
            }
            continue;
        }
        stream_line(st, json_pack("{s:s}", "type", "tick"));
    }
    if (s->steps == NULL && s->ids == NULL)
        event_del(s->tick); /* an idle controller wakes for nothing; start() re-arms it */
    for (struct ctl_step_ids **pp = &s->ids; *pp;) {
        ctl_job_t *j = ctl_job_find(s->c, (*pp)->job);
        if (j == NULL || j->state != CTL_JOB_RUNNING) {
            struct ctl_step_ids *d = *pp;
            *pp = d->next;
            sl_free(d);
        } else {
            pp = &(*pp)->next;
        }
    }
}

void ctl_steps_init(ctl_steps_t *s, ctl_t *c, ctl_hconns_t *conns) {
    *s = (ctl_steps_t){.c = c, .conns = conns};
    s->tick = event_new(c->loop->base, -1, EV_PERSIST, tick_cb, s);
}

void ctl_steps_fini(ctl_steps_t *s) {
    while (s->steps) {
        ctl_step_t *st = s->steps;
        st->req = NULL; /* freed with the HTTP server */
        step_free(s, st);
    }
    while (s->ids) {
        struct ctl_step_ids *d = s->ids;
        s->ids = d->next;
        sl_free(d);
    }
    if (s->tick)
        event_free(s->tick);
    *s = (ctl_steps_t){0};
}

/* ---- who may ---- */

static ctl_job_t *authorize(ctl_steps_t *s, struct evhttp_request *req, uint64_t job, bool admin,
                            int32_t tenant, const char *step_token) {
    ctl_job_t *j = ctl_job_find(s->c, job);
    if (step_token) {
        char want[CTL_STEP_TOKEN_LEN + 1];
        if (j == NULL || j->state != CTL_JOB_RUNNING || ctl_step_token(s->c, j, want, sizeof want) != 0 ||
            !ctl_token_eq(step_token, want)) {
            reply_error(s, req, 401, "unauthorized", NULL,
                        "this step token is not job %llu's, or the job is not running",
                        (unsigned long long)job);
            return NULL;
        }
        return j;
    }
    if (j == NULL || (!admin && j->tenant != tenant)) {
        reply_error(s, req, 404, "not_found", NULL, "no job %llu", (unsigned long long)job);
        return NULL;
    }
    if (!ctl_job_is_allocation(j)) {
        reply_error(s, req, 409, "not_an_allocation", NULL,
                    "job %llu is not an allocation (sbatch, salloc, or the spec's allocation: true)",
                    (unsigned long long)job);
        return NULL;
    }
    if (j->state != CTL_JOB_RUNNING) {
        reply_error(s, req, 409, "not_running", NULL, "job %llu is not running",
                    (unsigned long long)job);
        return NULL;
    }
    return j;
}

static json_t *read_body(ctl_steps_t *s, struct evhttp_request *req) {
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t n = evbuffer_get_length(in);
    json_error_t je;
    json_t *o = json_loadb((const char *)evbuffer_pullup(in, (ssize_t)n), n, 0, &je);
    if (!json_is_object(o)) {
        reply_error(s, req, 400, "bad_json", NULL, "the body must be a JSON object: %s",
                    o ? "not an object" : je.text);
        json_decref(o);
        return NULL;
    }
    return o;
}

/* ---- placement ---- */

typedef struct anode {
    int32_t node;          /* core node id */
    const char *name;
    int32_t *tasks;        /* the allocation's tasks here, in task order */
    int32_t ntasks;
    int32_t count;         /* the step's ranks here */
    int32_t first;         /* the first of them */
} anode_t;

static int anode_cmp(const void *a, const void *b) {
    const anode_t *x = a, *y = b;
    return strcmp(x->name ? x->name : "", y->name ? y->name : "");
}

/* The GPUs task holds: its own, or its whole node's (domain/whole.h). */
static int gpus_of(const ctl_t *c, const ctl_job_t *j, int32_t task, int32_t *out, int n) {
    ctl_task_res_t res;
    ctl_task_res(c, j, task, &res);
    uint32_t m = res.gpu_mask;
    for (int g = 0; g < 32; g++)
        if (m & (1u << g))
            out[n++] = g;
    return n;
}

typedef struct req_shape {
    int64_t ntasks, nodes, per_node, cpus, gpus;
    bool overlap;
} req_shape_t;

static int64_t num(json_t *o, const char *k) {
    json_t *v = json_object_get(o, k);
    return json_is_integer(v) ? json_integer_value(v) : 0;
}

/* Places the ranks: fills an[i].count and .first; 0, or -1 with the
 * message (naming the srun option) in err. */
static int place(const ctl_t *c, const ctl_job_t *j, anode_t *an, int32_t nn, const req_shape_t *r, int32_t *total,
                 const char **opt, char *err, size_t errlen) {
    int64_t n = r->ntasks, N = r->nodes, p = r->per_node;
    int32_t alloc_tasks = 0;
    for (int32_t i = 0; i < nn; i++)
        alloc_tasks += an[i].ntasks;
    if (N > nn) {
        *opt = "nodes";
        snprintf(err, errlen, "-N %lld: the allocation has %d node%s", (long long)N, nn, nn == 1 ? "" : "s");
        return -1;
    }
    if (p > 0 && N == 0)
        N = n > 0 ? (n + p - 1) / p : nn;
    if (N > nn) {
        *opt = "ntasks-per-node";
        snprintf(err, errlen, "-n %lld with --ntasks-per-node=%lld needs %lld nodes; the allocation has %d",
                 (long long)n, (long long)p, (long long)N, nn);
        return -1;
    }
    if (n == 0 && p > 0)
        n = p * N;
    if (n == 0 && N == 0) {
        for (int32_t i = 0; i < nn; i++)
            an[i].count = an[i].ntasks;
    } else if (n == 0) {
        for (int32_t i = 0; i < N; i++)
            an[i].count = an[i].ntasks;
    } else if (N == 0) {
        int64_t left = n;
        for (int32_t i = 0; i < nn && left > 0; i++) {
            an[i].count = (int32_t)(left < an[i].ntasks ? left : an[i].ntasks);
            left -= an[i].count;
        }
        for (int32_t i = 0; left > 0 && r->overlap; i = (i + 1) % nn, left--)
            an[i].count++;
        if (left > 0) {
            *opt = "ntasks";
            snprintf(err, errlen, "-n %lld: the allocation has %d task%s (--overlap runs more ranks "
                     "than it has tasks)", (long long)n, alloc_tasks, alloc_tasks == 1 ? "" : "s");
            return -1;
        }
    } else {
        if (n < N) {
            *opt = "ntasks";
            snprintf(err, errlen, "-n %lld is fewer ranks than -N %lld nodes", (long long)n, (long long)N);
            return -1;
        }
        for (int32_t i = 0; i < N; i++)
            an[i].count = (int32_t)(n / N + (i < n % N));
    }
    int32_t t = 0;
    for (int32_t i = 0; i < nn; i++) {
        if (p > 0 && an[i].count > p) {
            *opt = "ntasks-per-node";
            snprintf(err, errlen, "-n %lld over %lld nodes puts %d ranks on %s, more than "
                     "--ntasks-per-node=%lld", (long long)n, (long long)N, an[i].count, an[i].name,
                     (long long)p);
            return -1;
        }
        if (an[i].count > an[i].ntasks && !r->overlap) {
            *opt = "ntasks";
            snprintf(err, errlen, "%d ranks on %s, where the allocation has %d task%s (--overlap "
                     "runs more ranks than it has tasks)", an[i].count, an[i].name, an[i].ntasks,
                     an[i].ntasks == 1 ? "" : "s");
            return -1;
        }
        int64_t cpus_here = (int64_t)an[i].ntasks * j->core.task.cpu_milli;
        if (r->cpus > 0 && !r->overlap && r->cpus * 1000 * an[i].count > cpus_here) {
            *opt = "cpus-per-task";
            snprintf(err, errlen, "-c %lld: %d ranks on %s need %lld CPUs; the allocation has %lld there",
                     (long long)r->cpus, an[i].count, an[i].name, (long long)(r->cpus * an[i].count),
                     (long long)(cpus_here / 1000));
            return -1;
        }
        if (r->gpus > 0) {
            int32_t g[1024];
            int ng = 0;
            for (int32_t k = 0; k < an[i].ntasks && ng < 992; k++)
                ng = gpus_of(c, j, an[i].tasks[k], g, ng);
            if (r->gpus * an[i].count > ng) {
                *opt = "gpus-per-task";
                snprintf(err, errlen, "--gpus-per-task=%lld: %d ranks on %s need %lld GPUs; the "
                         "allocation has %d there", (long long)r->gpus, an[i].count, an[i].name,
                         (long long)(r->gpus * an[i].count), ng);
                return -1;
            }
        }
        an[i].first = t;
        t += an[i].count;
    }
    *total = t;
    if (t <= 0 || t > SL_STEP_MAX_RANKS) {
        *opt = "ntasks";
        snprintf(err, errlen, "a step has 1 to %d ranks", SL_STEP_MAX_RANKS);
        return -1;
    }
    return 0;
}

/* Slurm's tasks-per-node text: "2(x3),1". */
static void tasks_per_node(const anode_t *an, int32_t nn, char *buf, size_t len) {
    size_t n = 0;
    buf[0] = '\0';
    for (int32_t i = 0; i < nn && n < len;) {
        int32_t k = i;
        while (k + 1 < nn && an[k + 1].count == an[i].count && an[k + 1].count > 0)
            k++;
        if (an[i].count == 0) {
            i++;
            continue;
        }
        n += (size_t)snprintf(buf + n, len - n, k > i ? "%s%d(x%d)" : "%s%d", n ? "," : "",
                              an[i].count, k - i + 1);
        i = k + 1;
    }
}

/* -w/--nodelist: keeps the nodes named in list (names, or Slurm's
 * prefix[1-3,5] ranges: hostlist.h), in the allocation's order; 0, or -1
 * with err naming one that is not the allocation's. */
static int restrict_nodes(anode_t *an, int32_t *nn, const char *list, char *err, size_t errlen) {
    char **names = NULL, why[200];
    size_t n = 0;
    if (sl_hostlist_expand(list, &names, &n, why, sizeof why) != 0) {
        snprintf(err, errlen, "-w %.64s: %s", list, why);
        return -1;
    }
    bool *keep = sl_xcalloc((size_t)*nn + 1, sizeof *keep);
    int rc = 0;
    for (size_t q = 0; q < n && rc == 0; q++) {
        bool found = false;
        for (int32_t i = 0; i < *nn; i++)
            if (an[i].name && strcmp(an[i].name, names[q]) == 0)
                found = keep[i] = true;
        if (!found) {
            snprintf(err, errlen, "-w %.64s: %.64s is not a node of the allocation", list, names[q]);
            rc = -1;
        }
    }
    int32_t m = 0;
    for (int32_t i = 0; i < *nn; i++) {
        if (keep[i] || rc != 0)
            an[m++] = an[i];
        else
            sl_free(an[i].tasks);
    }
    *nn = m;
    sl_free(keep);
    sl_hostlist_free(names, n);
    return rc;
}

/* ---- start ---- */

typedef struct kvs {
    sl_proto_kv_t *v;
    size_t n, cap;
    char **owned;
    size_t nowned;
} kvs_t;

static void kv_put(kvs_t *k, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void kv_put(kvs_t *k, const char *key, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *v = NULL;
    if (vasprintf(&v, fmt, ap) < 0)
        abort();
    va_end(ap);
    k->owned = sl_xrealloc(k->owned, (k->nowned + 1) * sizeof *k->owned);
    k->owned[k->nowned++] = v;
    for (size_t i = 0; i < k->n; i++)
        if (strcmp(k->v[i].key, key) == 0) {
            k->v[i].value = v;
            return;
        }
    if (k->n == k->cap) {
        k->cap = k->cap ? 2 * k->cap : 32;
        k->v = sl_xrealloc(k->v, k->cap * sizeof *k->v);
    }
    k->v[k->n++] = (sl_proto_kv_t){key, v};
}

static void kv_fini(kvs_t *k) {
    for (size_t i = 0; i < k->nowned; i++)
        free(k->owned[i]);
    sl_free(k->owned);
    sl_free(k->v);
}

static uint32_t next_id(ctl_steps_t *s, uint64_t job) {
    struct ctl_step_ids *d;
    for (d = s->ids; d; d = d->next)
        if (d->job == job)
            return d->next_id++;
    d = sl_xmalloc(sizeof *d);
    *d = (struct ctl_step_ids){.next = s->ids, .job = job, .next_id = 1};
    s->ids = d;
    return 0;
}

/* The step's variables common to its ranks, after srun's own (env). */
static void step_env(kvs_t *k, json_t *env, uint32_t id, int32_t total, int32_t nused,
                     const char *nodelist, const char *tpn, int64_t cpus, int64_t per_node) {
    const char *key;
    json_t *v;
    json_object_foreach(env, key, v)
        if (json_is_string(v))
            kv_put(k, key, "%s", json_string_value(v));
    kv_put(k, "SLURM_STEP_ID", "%u", id);
    kv_put(k, "SLURM_STEPID", "%u", id);
    kv_put(k, "SLURM_STEP_NODELIST", "%s", nodelist);
    kv_put(k, "SLURM_STEP_NUM_NODES", "%d", nused);
    kv_put(k, "SLURM_STEP_NUM_TASKS", "%d", total);
    kv_put(k, "SLURM_STEP_TASKS_PER_NODE", "%s", tpn);
    kv_put(k, "SLURM_NODELIST", "%s", nodelist);
    kv_put(k, "SLURM_NNODES", "%d", nused);
    kv_put(k, "SLURM_NTASKS", "%d", total);
    kv_put(k, "SLURM_NPROCS", "%d", total);
    kv_put(k, "SLURM_TASKS_PER_NODE", "%s", tpn);
    kv_put(k, "WORLD_SIZE", "%d", total);
    if (cpus > 0)
        kv_put(k, "SLURM_CPUS_PER_TASK", "%lld", (long long)cpus);
    if (per_node > 0) /* srun's own, as Slurm's step has it */
        kv_put(k, "SLURM_NTASKS_PER_NODE", "%lld", (long long)per_node);
}

static int start(ctl_steps_t *s, struct evhttp_request *req, ctl_job_t *j, json_t *body) {
    req_shape_t r = {num(body, "ntasks"), num(body, "nodes"), num(body, "ntasks_per_node"),
                     num(body, "cpus_per_task"), num(body, "gpus_per_task"),
                     json_is_true(json_object_get(body, "overlap"))};
    json_t *argv = json_object_get(body, "argv");
    if (!json_is_array(argv) || json_array_size(argv) == 0) {
        reply_error(s, req, 400, "invalid_field", "argv", "srun needs a command to run");
        return -1;
    }
    for (size_t i = 0; i < json_array_size(argv); i++)
        if (!json_is_string(json_array_get(argv, i))) {
            reply_error(s, req, 400, "invalid_field", "argv", "argv[%zu] must be a string", i);
            return -1;
        }
    /* The allocation's nodes in Slurm's order, each with its tasks. */
    anode_t *an = sl_xcalloc((size_t)j->ntasks, sizeof *an);
    int32_t nn = 0;
    for (int32_t k = 0; k < j->ntasks; k++) {
        int32_t at = -1;
        for (int32_t i = 0; i < nn && at < 0; i++)
            if (an[i].node == j->tasks[k].node)
                at = i;
        if (at < 0) {
            at = nn++;
            an[at] = (anode_t){.node = j->tasks[k].node, .name = ctl_node_name(s->c, j->tasks[k].node),
                               .tasks = sl_xmalloc((size_t)j->ntasks * sizeof(int32_t))};
        }
        an[at].tasks[an[at].ntasks++] = k;
    }
    qsort(an, (size_t)nn, sizeof *an, anode_cmp);
    int32_t total = 0;
    const char *opt = NULL;
    char err[300];
    int rc = -1;
    kvs_t common = {0};
    ctl_step_t *st = NULL;
    const char *wl = json_string_value(json_object_get(body, "nodelist"));
    if (wl && restrict_nodes(an, &nn, wl, err, sizeof err) != 0) {
        reply_error(s, req, 400, "invalid_field", "nodelist", "%s", err);
        goto out;
    }
    if (place(s->c, j, an, nn, &r, &total, &opt, err, sizeof err) != 0) {
        reply_error(s, req, 400, "invalid_field", opt, "%s", err);
        goto out;
    }
    int32_t nused = 0;
    const char **names = sl_xmalloc((size_t)nn * sizeof *names);
    for (int32_t i = 0; i < nn; i++)
        if (an[i].count > 0)
            names[nused++] = an[i].name;
    char nodelist[4096], tpn[1024];
    sl_hostlist_format(names, (size_t)nused, nodelist, sizeof nodelist);
    sl_free(names);
    tasks_per_node(an, nn, tpn, sizeof tpn);
    for (int32_t i = 0; i < nn; i++)
        if (an[i].count > 0 && !ctl_node_get(s->c, (uint32_t)an[i].node)->connected) {
            reply_error(s, req, 503, "node_unreachable", NULL, "the agent of node %s is not connected",
                        an[i].name);
            goto out;
        }
    uint32_t id = next_id(s, j->id);
    json_t *env = json_object_get(body, "env");
    step_env(&common, json_is_object(env) ? env : NULL, id, total, nused, nodelist, tpn, r.cpus,
             r.per_node);
    st = sl_xmalloc(sizeof *st);
    json_t *pty = json_object_get(body, "pty");
    int32_t rows = (int32_t)num(pty, "rows"), cols = (int32_t)num(pty, "cols");
    if (json_is_object(pty) && (rows < 1 || rows > 10000 || cols < 1 || cols > 10000))
        rows = 24, cols = 80;
    *st = (ctl_step_t){.job = j->id, .id = id, .req = req, .nranks = total, .pty_node = -1,
                       .kill_on_bad_exit = json_is_true(json_object_get(body, "kill_on_bad_exit"))};
    st->ended = sl_xcalloc((size_t)total, 1);
    st->nodes = sl_xmalloc((size_t)nn * sizeof *st->nodes);
    const char **av = sl_xmalloc((json_array_size(argv) + 1) * sizeof *av);
    for (size_t i = 0; i < json_array_size(argv); i++)
        av[i] = json_string_value(json_array_get(argv, i));
    int32_t nodeid = 0;
    for (int32_t i = 0; i < nn; i++) {
        if (an[i].count == 0)
            continue;
        st->nodes[st->nnodes++] = (uint32_t)an[i].node;
        int32_t c = an[i].count, sl = an[i].ntasks;
        sl_step_rank_t *ranks = sl_xmalloc((size_t)c * sizeof *ranks);
        kvs_t *renv = sl_xcalloc((size_t)c, sizeof *renv);
        int32_t g[1024];
        int ng = 0;
        for (int32_t k = 0; k < sl && ng < 992; k++)
            ng = gpus_of(s->c, j, an[i].tasks[k], g, ng);
        for (int32_t l = 0; l < c; l++) {
            int32_t task, g0 = 0, g1 = 0;
            if (r.gpus > 0) {
                g0 = (int32_t)(l * r.gpus);
                g1 = (int32_t)((l + 1) * r.gpus);
                task = an[i].tasks[0];
                for (int32_t k = 0, seen = 0; k < sl; k++) {
                    int32_t mine[32];
                    int nm = gpus_of(s->c, j, an[i].tasks[k], mine, 0);
                    if (g0 >= seen && g0 < seen + nm)
                        task = an[i].tasks[k];
                    seen += nm;
                }
            } else if (c <= sl) {
                int32_t a = l * sl / c, b = (l + 1) * sl / c;
                task = an[i].tasks[a];
                int seen = 0;
                for (int32_t k = 0; k < sl; k++) {
                    int32_t mine[32];
                    int nm = gpus_of(s->c, j, an[i].tasks[k], mine, 0);
                    if (k == a)
                        g0 = seen;
                    if (k == b - 1)
                        g1 = seen + nm;
                    seen += nm;
                }
            } else {
                task = an[i].tasks[l % sl];
                int seen = 0;
                for (int32_t k = 0; k < l % sl; k++) {
                    int32_t mine[32];
                    seen += gpus_of(s->c, j, an[i].tasks[k], mine, 0);
                }
                int32_t mine[32];
                g0 = seen;
                g1 = seen + gpus_of(s->c, j, task, mine, 0);
            }
            char cvd[4096] = "";
            size_t cl = 0;
            for (int32_t x = g0; x < g1 && x < ng && cl < sizeof cvd - 8; x++)
                cl += (size_t)snprintf(cvd + cl, sizeof cvd - cl, "%s%d", cl ? "," : "", g[x]);
            int32_t rank = an[i].first + l;
            kv_put(&renv[l], "SLURM_PROCID", "%d", rank);
            kv_put(&renv[l], "SLURM_LOCALID", "%d", l);
            kv_put(&renv[l], "SLURM_NODEID", "%d", nodeid);
            kv_put(&renv[l], "RANK", "%d", rank);
            kv_put(&renv[l], "LOCAL_RANK", "%d", l);
            kv_put(&renv[l], "CUDA_VISIBLE_DEVICES", "%s", cvd);
            ranks[l] = (sl_step_rank_t){.rank = rank, .task = task, .env = renv[l].v, .nenv = renv[l].n};
        }
        sl_step_msg_t m = {.type = SL_STEP_RUN, .job = j->id, .step = id, .epoch = s->c->epoch, .argv = av,
                           .argc = json_array_size(argv), .env = common.v, .nenv = common.n,
                           .cwd = json_string_value(json_object_get(body, "cwd")),
                           .output = json_string_value(json_object_get(body, "output")),
                           .error = json_string_value(json_object_get(body, "error")),
                           .ranks = ranks, .nranks = (size_t)c,
                           .pty_rows = json_is_object(pty) ? rows : 0, .pty_cols = json_is_object(pty) ? cols : 0};
        if (an[i].first == 0 && json_is_object(pty))
            st->pty_node = an[i].node;
        size_t len;
        char *line = sl_step_encode(&m, SL_STEP_LINK_CTL, &len);
        if (line && s->send)
            s->send(s->send_ud, (uint32_t)an[i].node, line, len);
        sl_free(line);
        for (int32_t l = 0; l < c; l++)
            kv_fini(&renv[l]);
        sl_free(renv);
        sl_free(ranks);
        nodeid++;
    }
    sl_free(av);
    st->next = s->steps;
    s->steps = st;
    if (!event_pending(s->tick, EV_TIMEOUT, NULL)) {
        struct timeval tv = {1, 0};
        event_add(s->tick, &tv);
    }
    sl_log(SL_LOG_INFO, "step", "job=%llu step=%u ranks=%d nodes=%s", (unsigned long long)j->id, id,
           total, nodelist);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/x-ndjson");
    evhttp_send_reply_start(req, 200, "OK");
    stream_line(st, json_pack("{s:s,s:I,s:i,s:i,s:i,s:s}", "type", "step", "job", (json_int_t)j->id,
                              "step", (int)id, "ntasks", total, "nodes", nused, "nodelist", nodelist));
    rc = 0;
out:
    for (int32_t i = 0; i < nn; i++)
        sl_free(an[i].tasks);
    sl_free(an);
    kv_fini(&common);
    return rc;
}

void ctl_steps_http(ctl_steps_t *s, struct evhttp_request *req, uint64_t job, bool admin,
                    int32_t tenant, const char *step_token) {
    ctl_job_t *j = authorize(s, req, job, admin, tenant, step_token);
    if (j == NULL)
        return;
    json_t *body = read_body(s, req);
    if (body == NULL)
        return;
    start(s, req, j, body);
    json_decref(body);
}

void ctl_steps_http_signal(ctl_steps_t *s, struct evhttp_request *req, uint64_t job, bool admin,
                           int32_t tenant, const char *step_token) {
    ctl_job_t *j = authorize(s, req, job, admin, tenant, step_token);
    if (j == NULL)
        return;
    json_t *body = read_body(s, req);
    if (body == NULL)
        return;
    int64_t sig = num(body, "signal");
    ctl_step_t *st = step_find(s, j->id, (uint32_t)num(body, "step"));
    json_t *in = json_object_get(body, "stdin");
    if (json_is_string(in) && st && st->pty_node >= 0) { /* srun --pty's input, to rank 0 */
        sl_step_msg_t m = {.type = SL_STEP_STDIN, .job = j->id, .step = st->id, .epoch = s->c->epoch, .rank = 0,
                           .data = json_string_value(in), .data_len = json_string_length(in)};
        size_t len;
        char *line = sl_step_encode(&m, SL_STEP_LINK_CTL, &len);
        if (line && s->send)
            s->send(s->send_ud, (uint32_t)st->pty_node, line, len);
        sl_free(line);
        struct evbuffer *b = evbuffer_new();
        evbuffer_add_printf(b, "{\"job\":%llu,\"step\":%u}\n", (unsigned long long)j->id, st->id);
        evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
        ctl_hconns_send(s->conns, req, 202, "Accepted", b);
        evbuffer_free(b);
    } else if (json_is_string(in) && st) {
        reply_error(s, req, 409, "no_pty", "stdin",
                    "step %u takes no input (srun --pty gives its rank 0 a terminal)", st->id);
    } else if (st == NULL) {
        reply_error(s, req, 404, "not_found", "step", "job %llu has no step %lld running",
                    (unsigned long long)j->id, (long long)num(body, "step"));
    } else if (sig < 1 || sig > 64) {
        reply_error(s, req, 400, "invalid_field", "signal",
                    "give signal, a number from 1 to 64, or stdin, a string");
    } else {
        step_signal(s, st, (int)sig);
        struct evbuffer *b = evbuffer_new();
        evbuffer_add_printf(b, "{\"job\":%llu,\"step\":%u,\"signal\":%d}\n", (unsigned long long)j->id,
                            st->id, (int)sig);
        evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
        ctl_hconns_send(s->conns, req, 202, "Accepted", b);
        evbuffer_free(b);
    }
    json_decref(body);
}

/* ---- from the agents ---- */

bool ctl_steps_agent_msg(void *ud, uint32_t node, json_t *o) {
    ctl_steps_t *s = ud;
    if (!sl_step_is_step(o, SL_STEP_LINK_CTL))
        return false;
    sl_step_msg_t m;
    char err[300];
    if (sl_step_decode(o, SL_STEP_LINK_CTL, &m, err, sizeof err) != 0) {
        sl_log(SL_LOG_WARN, "step", "node=%s: %s; ignored", ctl_node_name(s->c, (int32_t)node), err);
        sl_step_msg_fini(&m);
        return true;
    }
    ctl_step_t *st = step_find(s, m.job, m.step);
    bool here = false;
    for (size_t i = 0; st && i < st->nnodes; i++)
        here |= st->nodes[i] == node;
    if (st && here) {
        switch (m.type) {
        case SL_STEP_STARTED:
            st->nstarted++;
            stream_line(st, json_pack("{s:s,s:i,s:s}", "type", "started", "rank", m.rank, "node",
                                      ctl_node_name(s->c, (int32_t)node)));
            break;
        case SL_STEP_OUT: {
            struct evhttp_connection *evc = st->req ? evhttp_request_get_connection(st->req) : NULL;
            size_t waiting = evc ? evbuffer_get_length(bufferevent_get_output(
                                       evhttp_connection_get_bufferevent(evc))) : 0;
            if (waiting + m.data_len > STEP_STREAM_MAX_BYTES) {
                st->dropped += (int64_t)m.data_len;
                break;
            }
            if (waiting < STEP_STREAM_MAX_BYTES / 2)
                drop_note(st, m.rank);
            stream_line(st, json_pack("{s:s,s:i,s:i,s:s%}", "type", "out", "rank", m.rank, "fd", m.fd,
                                      "data", m.data, m.data_len));
            break;
        }
        case SL_STEP_EXIT:
            rank_ended(s, st, m.rank, m.exit_code, m.signal, m.reason);
            break;
        default:
            break;
        }
    }
    sl_step_msg_fini(&m);
    return true;
}
