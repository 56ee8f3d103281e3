/*
 * api.c - JSON views of jobs and nodes for the HTTP API (docs/api.md).
 *
 * A job's immutable part (id, normalised spec, submit time) is formatted
 * once, the first time it is shown, into j->head; a view appends only the parts that
 * change (state, times, reason, placement), so listing 10,000 jobs is
 * mostly memcpy.
 *
 * The text table of GET /v1/jobs?view=table (what `sluice queue` prints,
 * the way a Kubernetes API server prints a Table for `kubectl get`) works
 * the same way: the cells that never change (id, name, tenant, tasks,
 * per-task resources) are formatted once (first listing) into j->row; a listing formats
 * only state, nodes, time and reason, in a first pass that also finds each
 * column's width, and a second pass writes the padded rows.
 *
 * GET /v1/nodes pages by name (keyset): the node ids in name order are
 * kept sorted (nodes.c, re-sorted only after a node registers), and a page
 * is a binary search for `after` in them, then the page's nodes.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "views/api.h"
#include "arraydep.h"
#include "domain/deps.h"
#include "views/disruptions.h"
#include "views/resvapi.h"
#include "domain/eff.h"
#include "domain/jobtab.h"
#include "domain/nodes.h"
#include "domain/whole.h"
#include "views/health_view.h"
#include "quantity.h"

static void gpu_list(ctl_buf_t *b, uint32_t mask) {
    ctl_buf_putc(b, '[');
    bool first = true;
    for (int g = 0; g < SL_MAX_GPUS_PER_NODE; g++) {
        if (mask & (1u << g)) {
            if (!first)
                ctl_buf_putc(b, ',');
            ctl_buf_i64(b, g);
            first = false;
        }
    }
    ctl_buf_putc(b, ']');
}

/* Formats the job's immutable part once: `{"id":N,<spec fields>,"submit_time":T`. */
static void make_head(ctl_job_t *j) {
    ctl_buf_t b;
    ctl_buf_init(&b);
    char *spec = json_dumps(j->spec, JSON_COMPACT | JSON_PRESERVE_ORDER);
    size_t sl = strlen(spec);
    ctl_buf_puts(&b, "{\"id\":");
    ctl_buf_u64(&b, j->id);
    if (sl > 2) {
        ctl_buf_putc(&b, ',');
        ctl_buf_add(&b, spec + 1, sl - 2);
    }
    if (j->array_id != 0) { /* an array's element (docs/arrays.md) */
        ctl_buf_puts(&b, ",\"array_id\":");
        ctl_buf_u64(&b, j->array_id);
        ctl_buf_puts(&b, ",\"array_index\":");
        ctl_buf_i64(&b, j->array_index);
    }
    ctl_buf_puts(&b, ",\"submit_time\":");
    ctl_buf_time(&b, j->submit_us);
    free(spec);
    sl_free(j->head);
    j->head = ctl_buf_steal(&b, &j->head_len);
}

/* The job's reason: for a pending job, why it waits now (from the core) and
 * why it was requeued if it was; else j->reason. May point into both. */
static const char *job_reason(ctl_t *c, const ctl_job_t *j, char *both, size_t len) {
    const char *reason = j->reason;
    if (j->state == CTL_JOB_PENDING && j->hold != CTL_HOLD_NONE)
        return ctl_hold_reason(c, j, both, len); /* dependencies, array limit (deps.c) */
    if (j->state == CTL_JOB_PENDING && !j->requeue_wait && j->in_core) {
        const sl_job_t *cj = sl_sched_job(c->sched, j->id);
        const char *r = cj ? sl_job_reason(cj) : NULL;
        if (r && r[0] && j->reason[0]) {
            snprintf(both, len, "%s (%s)", r, j->reason);
            reason = both;
        } else if (r && r[0]) {
            reason = r;
        }
    }
    return reason;
}

/* A placement entry's memory end (docs/api.md): oom_killed, and the sizes
 * the agent reported, null when not known. */
static void mem_end(ctl_buf_t *b, const ctl_task_t *t) {
    static const char *const keys[] = {",\"mem_peak_bytes\":", ",\"mem_limit_bytes\":",
                                       ",\"mem_request_bytes\":"};
    const int64_t v[] = {t->mem_peak, t->mem_limit, t->mem_request};
    ctl_buf_puts(b, t->oom_killed ? ",\"oom_killed\":true" : ",\"oom_killed\":false");
    for (int k = 0; k < 3; k++) {
        ctl_buf_puts(b, keys[k]);
        if (v[k] > 0)
            ctl_buf_i64(b, v[k]);
        else
            ctl_buf_puts(b, "null");
    }
}

void ctl_job_write(ctl_t *c, ctl_buf_t *b, ctl_job_t *j) {
    if (j->head == NULL)
        make_head(j);
    ctl_buf_add(b, j->head, j->head_len);
    ctl_buf_puts(b, ",\"state\":\"");
    ctl_buf_puts(b, ctl_job_state_name(j->state));
    ctl_buf_puts(b, "\",\"start_time\":");
    ctl_buf_time(b, j->start_us);
    ctl_buf_puts(b, ",\"end_time\":");
    ctl_buf_time(b, j->end_us);
    if (j->state == CTL_JOB_PENDING) { /* the scheduler's plan (squeue --start) */
        ctl_buf_puts(b, ",\"expected_start\":");
        ctl_buf_time(b, sl_sched_expected_start(c->sched, j->id));
    }
    ctl_buf_puts(b, ",\"reason\":");
    char both[512];
    ctl_buf_jstr(b, job_reason(c, j, both, sizeof both));
    if (j->warnings) { /* its submission's (secretapi.h) */
        ctl_buf_puts(b, ",\"warnings\":[");
        size_t wi;
        json_t *w;
        json_array_foreach(j->warnings, wi, w) {
            if (wi) ctl_buf_putc(b, ',');
            ctl_buf_jstr(b, json_string_value(w));
        }
        ctl_buf_putc(b, ']');
    }
    ctl_buf_puts(b, ",\"placement\":[");
    for (int32_t i = 0; i < j->ntasks; i++) {
        const ctl_task_t *t = &j->tasks[i];
        const sl_node_t *nd = t->node >= 0 ? sl_cluster_node(c->cl, (uint32_t)t->node) : NULL;
        if (i)
            ctl_buf_putc(b, ',');
        ctl_buf_puts(b, "{\"task\":");
        ctl_buf_i64(b, i);
        ctl_buf_puts(b, ",\"node\":");
        ctl_buf_jstr(b, nd ? nd->name : NULL);
        /* What the task holds: its request, or its share of a whole node. */
        ctl_task_res_t res;
        char q[64];
        ctl_task_res(c, j, i, &res);
        ctl_buf_puts(b, ",\"gpus\":");
        gpu_list(b, res.gpu_mask);
        ctl_buf_puts(b, ",\"cpus\":");
        sl_qty_format(res.cpu_milli, SL_QTY_CPU, q, sizeof q);
        ctl_buf_jstr(b, q);
        ctl_buf_puts(b, ",\"memory\":");
        sl_qty_format(res.mem_bytes, SL_QTY_MEM, q, sizeof q);
        ctl_buf_jstr(b, q);
        if (t->gpu_mask && t->gpu_milli < SL_GPU_MILLI) {
            ctl_buf_puts(b, ",\"gpu_milli\":");
            ctl_buf_i64(b, t->gpu_milli);
        }
        ctl_buf_puts(b, ",\"state\":\"");
        ctl_buf_puts(b, ctl_task_state_name(t->state));
        ctl_buf_puts(b, "\",\"pid\":");
        if (t->pid > 0)
            ctl_buf_i64(b, t->pid);
        else
            ctl_buf_puts(b, "null");
        ctl_buf_puts(b, ",\"exit_code\":");
        if (t->has_exit)
            ctl_buf_i64(b, t->exit_code);
        else
            ctl_buf_puts(b, "null");
        ctl_buf_puts(b, ",\"signal\":");
        if (t->has_exit && t->signal)
            ctl_buf_i64(b, t->signal);
        else
            ctl_buf_puts(b, "null");
        ctl_buf_puts(b, ",\"start_time\":");
        ctl_buf_time(b, t->start_us);
        ctl_buf_puts(b, ",\"end_time\":");
        ctl_buf_time(b, t->end_us);
        mem_end(b, t);
        ctl_buf_putc(b, '}');
    }
    ctl_buf_puts(b, "],\"exit_code\":");
    if (j->has_exit && j->state != CTL_JOB_PENDING && j->state != CTL_JOB_RUNNING)
        ctl_buf_i64(b, j->exit_code);
    else
        ctl_buf_puts(b, "null");
    ctl_buf_puts(b, ",\"requeues\":");
    ctl_buf_i64(b, j->requeues);
    ctl_eff_write_json(c, b, j);
    ctl_jobx_write_json(c, b, j); /* preemptions and elastic size (disruptions.c) */
    ctl_buf_putc(b, '}');
}

void ctl_node_write(ctl_t *c, ctl_buf_t *b, uint32_t id) {
    const sl_node_t *nd = sl_cluster_node(c->cl, id);
    ctl_node_t *n = ctl_node_get(c, id);
    char q[64];
    ctl_buf_puts(b, "{\"name\":");
    ctl_buf_jstr(b, nd->name);
    ctl_buf_puts(b, ",\"state\":\"");
    ctl_buf_puts(b, ctl_node_state_view(c, id));
    ctl_buf_puts(b, "\",\"pool\":");
    ctl_buf_jstr(b, sl_cluster_pool_name(c->cl, nd->pool));
    ctl_buf_puts(b, ",\"labels\":");
    ctl_buf_jstr(b, nd->labels ? nd->labels : "");
    ctl_buf_puts(b, ",\"taints\":");
    ctl_buf_jstr(b, nd->taints ? nd->taints : "");
    {
        /* The topology path from the labels (sluice/topology.h), or null. */
        const char *tp;
        size_t tlen;
        ctl_buf_puts(b, ",\"topology\":");
        if (sl_topo_path(nd->labels, &tp, &tlen) && tlen < sizeof q) {
            memcpy(q, tp, tlen);
            q[tlen] = '\0';
            ctl_buf_jstr(b, q);
        } else {
            ctl_buf_puts(b, "null");
        }
    }
    ctl_buf_puts(b, ",\"cpus\":");
    sl_qty_format(nd->cpu_total, SL_QTY_CPU, q, sizeof q);
    ctl_buf_jstr(b, q);
    ctl_buf_puts(b, ",\"memory\":");
    sl_qty_format(nd->mem_total, SL_QTY_MEM, q, sizeof q);
    ctl_buf_jstr(b, q);
    ctl_buf_puts(b, ",\"gpus\":");
    ctl_buf_i64(b, nd->ngpus);
    ctl_buf_puts(b, ",\"gpu_model\":");
    ctl_buf_jstr(b, nd->model >= 0 ? sl_cluster_model_name(c->cl, nd->model) : NULL);
    ctl_buf_puts(b, ",\"gpu_memory\":");
    if (nd->ngpus > 0) {
        sl_qty_format(nd->gpu_mem_total, SL_QTY_MEM, q, sizeof q);
        ctl_buf_jstr(b, q);
    } else {
        ctl_buf_puts(b, "null");
    }
    /* Free for other jobs: nothing while an exclusive job holds the node. */
    bool held = (nd->kinds & SL_KIND_EXCL) != 0;
    ctl_buf_puts(b, held ? ",\"exclusive\":true" : ",\"exclusive\":false");
    ctl_buf_puts(b, ",\"free\":{\"cpus\":");
    sl_qty_format(held ? 0 : nd->cpu_free, SL_QTY_CPU, q, sizeof q);
    ctl_buf_jstr(b, q);
    ctl_buf_puts(b, ",\"memory\":");
    sl_qty_format(held ? 0 : nd->mem_free, SL_QTY_MEM, q, sizeof q);
    ctl_buf_jstr(b, q);
    int whole = 0;
    for (int g = 0; g < nd->ngpus; g++)
        whole += !held && nd->gpu_free[g] == SL_GPU_MILLI;
    ctl_buf_puts(b, ",\"gpus\":");
    ctl_buf_i64(b, whole);
    ctl_buf_puts(b, ",\"gpu_milli\":[");
    for (int g = 0; g < nd->ngpus; g++) {
        if (g)
            ctl_buf_putc(b, ',');
        ctl_buf_i64(b, held ? 0 : nd->gpu_free[g]);
    }
    ctl_buf_puts(b, "]},\"last_seen\":");
    ctl_buf_time(b, n ? n->last_seen_us : -1);
    ctl_buf_puts(b, ",\"tasks\":");
    ctl_buf_i64(b, n ? n->live_tasks : 0);
    ctl_buf_puts(b, ",\"connected\":");
    ctl_buf_puts(b, n && n->connected ? "true" : "false");
    ctl_buf_puts(b, ",\"addr\":");
    ctl_buf_jstr(b, n ? n->addr : "");
    ctl_drain_write_json(c, b, n);
    ctl_health_write_json(c, b, nd->id);
    ctl_eff_write_node_json(c, b, nd->id);
    ctl_resv_write_node_json(c, b, id);
    ctl_buf_putc(b, '}');
}

/* ---- the text table (GET /v1/jobs?view=table) ---- */

enum { JT_ID, JT_NAME, JT_TENANT, JT_TASKS, JT_EACH, JT_NSTATIC };
enum { JT_STATE = JT_NSTATIC, JT_NODES, JT_TIME, JT_REASON, JT_NCOL };
#define JT_CELL_MAX 1000 /* bytes of one cell at most (a reason is < 520) */

/* Column order on the wire. */
static const int jt_order[JT_NCOL] = {JT_ID,    JT_NAME,  JT_TENANT, JT_STATE, JT_TASKS,
                                      JT_EACH,  JT_NODES, JT_TIME,   JT_REASON};
static const char *const jt_head[JT_NCOL] = {"ID",   "NAME", "TENANT", "TASKS", "EACH",
                                             "STATE", "NODES", "TIME", "REASON"};

/* A row as the second pass writes it, without going back to its job: the
 * job's fixed cells (row, back to back), its state, and the cells made for
 * this listing (nodes, time, reason and, for a folded array, the id, back
 * to back in the table's cells from off). */
typedef struct jt_row {
    const char *row;
    size_t off;
    uint16_t len[JT_NCOL]; /* each cell's bytes (the id's: the folded one's) */
    uint16_t w[JT_NCOL];   /* each cell's width on a terminal */
    uint16_t row_id_len;   /* the bytes of the job's own id in row */
    bool folded;           /* the id cell is in cells, after the reason */
    ctl_job_state_t state;
} jt_row_t;

typedef struct jtable {
    ctl_t *c;
    int64_t now_us;
    jt_row_t *rows;
    size_t n, cap;
    ctl_buf_t cells;
    size_t w[JT_NCOL];
} jtable_t;

/* Whether one of the 8 bytes of x is a control character (below 0x20, or
 * 0x7f): "Bit Twiddling Hacks" has-less-than and has-zero-byte, exact for
 * whether any byte matches. */
static bool word_has_control(uint64_t x) {
    const uint64_t ones = UINT64_C(0x0101010101010101), highs = UINT64_C(0x8080808080808080);
    uint64_t del = x ^ (ones * 0x7f);
    return ((((x - ones * 0x20) & ~x) | ((del - ones) & ~del)) & highs) != 0;
}

/* Appends s (at most JT_CELL_MAX bytes, cut at a UTF-8 character boundary)
 * with control characters as '?', so that a cell stays on its line, and
 * returns the columns it takes on a terminal (jt_width). A cell without a
 * control character (all but a hostile name) is one copy; its ASCII words
 * count no continuation bytes. */
static size_t cell_put(ctl_buf_t *b, const char *s) {
    size_t n = s ? strlen(s) : 0;
    if (n > JT_CELL_MAX) {
        n = JT_CELL_MAX;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
            n--;
    }
    size_t i = 0, w = n;
    for (uint64_t x; i + 8 <= n; i += 8) {
        memcpy(&x, s + i, 8);
        if (word_has_control(x))
            break;
        if (x & 0x8080808080808080ull)
            w -= (size_t)__builtin_popcountll(x & ~(x << 1) & 0x8080808080808080ull);
    }
    ctl_buf_add(b, s, i);
    ctl_buf_reserve(b, n - i);
    char *d = b->p + b->len;
    for (size_t k = i; k < n; k++) {
        unsigned char ch = (unsigned char)s[k];
        d[k - i] = ch < 0x20 || ch == 0x7f ? '?' : (char)ch;
        w -= (ch & 0xC0) == 0x80;
    }
    b->len += n - i;
    return w;
}

/* Columns a cell takes on a terminal: its UTF-8 characters (continuation
 * bytes do not count). ASCII, 8 bytes at a time, counts nothing. */
static size_t jt_width(const char *s, size_t n) {
    size_t w = n, i = 0;
    for (; i + 8 <= n; i += 8) { /* continuation bytes: bit 7 set, bit 6 clear */
        uint64_t x;
        memcpy(&x, s + i, 8);
        if (x & 0x8080808080808080ull)
            w -= (size_t)__builtin_popcountll(x & ~(x << 1) & 0x8080808080808080ull);
    }
    for (; i < n; i++)
        w -= ((unsigned char)s[i] & 0xC0) == 0x80;
    return w;
}

static void make_row(ctl_job_t *j) {
    ctl_buf_t b;
    ctl_buf_init(&b);
    size_t start = 0;
    const char *name = json_string_value(json_object_get(j->spec, "name"));
    const char *tenant = json_string_value(json_object_get(j->spec, "tenant"));
    for (int col = 0; col < JT_NSTATIC; col++) {
        switch (col) {
        case JT_ID: /* A_I for an array's element, as Slurm lists it */
            ctl_buf_u64(&b, j->array_id ? j->array_id : j->id);
            if (j->array_id) {
                ctl_buf_putc(&b, '_');
                ctl_buf_i64(&b, j->array_index);
            }
            break;
        case JT_NAME:
            cell_put(&b, name && name[0] ? name : "-");
            break;
        case JT_TENANT:
            cell_put(&b, tenant ? tenant : "-");
            break;
        case JT_TASKS:
            ctl_buf_i64(&b, json_integer_value(json_object_get(j->spec, "tasks")));
            break;
        default: { /* "4 GPU, 16 CPU, 128Gi", or "0.25 GPU, ..." with a GPU share */
            json_t *share = json_object_get(j->spec, "gpu_share");
            if (json_is_string(share))
                cell_put(&b, json_string_value(share));
            else
                ctl_buf_i64(&b, json_integer_value(json_object_get(j->spec, "gpus")));
            ctl_buf_puts(&b, " GPU, ");
            cell_put(&b, json_string_value(json_object_get(j->spec, "cpus")));
            ctl_buf_puts(&b, " CPU, ");
            cell_put(&b, json_string_value(json_object_get(j->spec, "memory")));
            break;
        }
        }
        j->row_len[col] = (uint16_t)(b.len - start);
        j->row_w[col] = (uint16_t)jt_width(b.p + start, b.len - start);
        start = b.len;
    }
    sl_free(j->row);
    j->row = ctl_buf_steal(&b, NULL);
}

/* A table for about n rows (it grows past them). */
static jtable_t *jtable_new(ctl_t *c, size_t n) {
    jtable_t *t = sl_xcalloc(1, sizeof *t);
    t->c = c;
    t->now_us = ctl_now_us();
    t->cap = n ? n : 1;
    t->rows = sl_xmalloc(t->cap * sizeof *t->rows);
    ctl_buf_init(&t->cells);
    ctl_buf_reserve(&t->cells, 64 * n); /* nodes, time and reason: most rows need less */
    for (int i = 0; i < JT_NCOL; i++)
        t->w[i] = strlen(jt_head[i]);
    return t;
}

/* v unit, then lo as two digits with lo_unit (none when lo_unit is 0). */
static void jt_dur2(ctl_buf_t *b, int64_t v, char unit, int64_t lo, char lo_unit) {
    ctl_buf_i64(b, v);
    ctl_buf_putc(b, unit);
    if (lo_unit) {
        ctl_buf_putc(b, (char)('0' + lo / 10));
        ctl_buf_putc(b, (char)('0' + lo % 10));
        ctl_buf_putc(b, lo_unit);
    }
}

/* "45s", "3m07s", "2h05m", "1d03h" (as `sluice` formats durations). */
static void jt_dur(ctl_buf_t *b, int64_t us) {
    int64_t s = us > 0 ? us / 1000000 : 0;
    if (s < 60)
        jt_dur2(b, s, 's', 0, 0);
    else if (s < 3600)
        jt_dur2(b, s / 60, 'm', s % 60, 's');
    else if (s < 86400)
        jt_dur2(b, s / 3600, 'h', (s % 3600) / 60, 'm');
    else
        jt_dur2(b, s / 86400, 'd', (s % 86400) / 3600, 'h');
}

/* The nodes of the job's tasks, each once, in task order; ",..." after
 * about 40 characters; "-" when none. Returns the cell's width. */
static size_t jt_nodes(ctl_t *c, ctl_buf_t *b, const ctl_job_t *j) {
    char buf[128];
    size_t l = 0;
    buf[0] = '\0';
    for (int32_t i = 0; i < j->ntasks; i++) {
        const sl_node_t *nd =
            j->tasks[i].node >= 0 ? sl_cluster_node(c->cl, (uint32_t)j->tasks[i].node) : NULL;
        if (nd == NULL)
            continue;
        size_t nl = strlen(nd->name);
        bool seen = false;
        for (const char *p = buf; *p && !seen;) {
            const char *e = strchr(p, ',');
            size_t tl = e ? (size_t)(e - p) : strlen(p);
            seen = tl == nl && memcmp(p, nd->name, nl) == 0;
            p = e ? e + 1 : p + tl;
        }
        if (seen)
            continue;
        if (l + nl + 2 >= sizeof buf || l > 40) {
            if (l + 4 < sizeof buf)
                memcpy(buf + l, ",...", 5);
            break;
        }
        l += (size_t)snprintf(buf + l, sizeof buf - l, "%s%s", l ? "," : "", nd->name);
    }
    if (buf[0] == '\0') { /* a pending job's */
        ctl_buf_putc(b, '-');
        return 1;
    }
    return cell_put(b, buf);
}

/* Adds j's row; with id (not NULL) in its ID cell instead of j's own (an
 * array's pending elements folded into one row, "123_[4-99%8]"). */
static void jtable_add(jtable_t *t, ctl_job_t *j, const char *id) {
    if (j->row == NULL)
        make_row(j);
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 1024;
        t->rows = sl_xrealloc(t->rows, t->cap * sizeof *t->rows);
    }
    jt_row_t *r = &t->rows[t->n++];
    r->row = j->row;
    r->state = j->state;
    r->off = t->cells.len;
    memcpy(r->len, j->row_len, sizeof j->row_len);
    memcpy(r->w, j->row_w, sizeof j->row_w);
    r->row_id_len = j->row_len[JT_ID];
    size_t mark = t->cells.len;
    r->w[JT_NODES] = (uint16_t)jt_nodes(t->c, &t->cells, j);
    r->len[JT_NODES] = (uint16_t)(t->cells.len - mark);
    mark = t->cells.len;
    if (j->state == CTL_JOB_PENDING)
        jt_dur(&t->cells, t->now_us - j->submit_us);
    else if (j->start_us >= 0 && j->end_us >= 0)
        jt_dur(&t->cells, j->end_us - j->start_us);
    else if (j->start_us >= 0)
        jt_dur(&t->cells, t->now_us - j->start_us);
    else
        ctl_buf_putc(&t->cells, '-');
    r->len[JT_TIME] = (uint16_t)(t->cells.len - mark);
    r->w[JT_TIME] = r->len[JT_TIME]; /* ASCII */
    mark = t->cells.len;
    char both[512];
    r->w[JT_REASON] = (uint16_t)cell_put(&t->cells, job_reason(t->c, j, both, sizeof both));
    r->len[JT_REASON] = (uint16_t)(t->cells.len - mark);
    r->folded = id != NULL;
    if (id != NULL) {
        mark = t->cells.len;
        cell_put(&t->cells, id);
        r->len[JT_ID] = r->w[JT_ID] = (uint16_t)(t->cells.len - mark);
    }
    const char *sn = ctl_job_state_name(j->state);
    r->len[JT_STATE] = r->w[JT_STATE] = (uint16_t)strlen(sn);
    for (int i = 0; i < JT_NCOL; i++)
        if (r->w[i] > t->w[i])
            t->w[i] = r->w[i];
}

/* One cell at d, then blanks up to the column's width and two more (none
 * after the last column); returns the end. The blanks go 8 at a time and
 * may run up to 7 bytes past the end, into room the caller reserved. */
static char *jt_cell(char *d, const char *s, size_t n, size_t cw, size_t w, bool last) {
    memcpy(d, s, n);
    d += n;
    if (last)
        return d;
    size_t pad = w - cw + 2;
    for (size_t i = 0; i < pad; i += 8)
        memcpy(d + i, "        ", 8);
    return d + pad;
}

static void jtable_write(jtable_t *t, ctl_buf_t *b) {
    size_t line = 1;
    for (int i = 0; i < JT_NCOL - 1; i++)
        line += t->w[i] + 2;
    ctl_buf_reserve(b, (t->n + 1) * line + t->cells.len);
    const char *head[JT_NCOL];
    size_t head_len[JT_NCOL];
    for (int i = 0; i < JT_NCOL; i++) {
        head[i] = jt_head[i];
        head_len[i] = strlen(jt_head[i]);
    }
    for (size_t r = 0; r <= t->n; r++) {
        const char *cell[JT_NCOL];
        size_t len[JT_NCOL], cw[JT_NCOL], bytes = 0;
        if (r == 0) { /* the header line */
            memcpy(cell, head, sizeof cell);
            memcpy(len, head_len, sizeof len);
            memcpy(cw, head_len, sizeof cw);
        } else {
            const jt_row_t *row = &t->rows[r - 1];
            const char *p = row->row;
            for (int i = 0; i < JT_NSTATIC; i++) {
                cell[i] = p;
                p += i == JT_ID ? row->row_id_len : row->len[i];
            }
            cell[JT_STATE] = ctl_job_state_name(row->state);
            p = t->cells.p + row->off;
            for (int i = JT_NODES; i <= JT_REASON; i++) {
                cell[i] = p;
                p += row->len[i];
            }
            if (row->folded)
                cell[JT_ID] = p;
            for (int i = 0; i < JT_NCOL; i++) {
                len[i] = row->len[i];
                cw[i] = row->w[i];
            }
        }
        for (int i = 0; i < JT_NCOL; i++)
            bytes += len[i];
        /* The padded line is at most line + its bytes; 8 more for the
         * blanks' overrun. */
        ctl_buf_reserve(b, line + bytes + 8);
        char *d = b->p + b->len;
        for (int k = 0; k < JT_NCOL; k++) {
            int col = jt_order[k];
            d = jt_cell(d, cell[col], len[col], cw[col], t->w[col], k == JT_NCOL - 1);
        }
        *d++ = '\n';
        b->len = (size_t)(d - b->p);
    }
    ctl_buf_fini(&t->cells);
    sl_free(t->rows);
    sl_free(t);
}

/* The elements of one array from v[i] on (an array's ids are
 * consecutive, so its elements on a page are too): its pending elements
 * fold into one row at the first one's place, "123_[4-99%8]", as squeue
 * lists them; the others get a row each. Returns the index after them.
 * O(elements on the page). */
static size_t jtable_add_array(jtable_t *t, ctl_job_t **v, size_t i, size_t k) {
    uint64_t a = v[i]->array_id;
    size_t e = i, npend = 0;
    while (e < k && v[e]->array_id == a)
        npend += v[e++]->state == CTL_JOB_PENDING;
    int32_t *idx = sl_xmalloc((npend ? npend : 1) * sizeof *idx);
    ctl_job_t *shown = NULL; /* whose reason the folded row gives: a held one if any */
    size_t m = 0;
    for (size_t x = i; x < e; x++) {
        if (v[x]->state != CTL_JOB_PENDING)
            continue;
        idx[m++] = v[x]->array_index;
        if (shown == NULL || (shown->hold == CTL_HOLD_NONE && v[x]->hold != CTL_HOLD_NONE))
            shown = v[x];
    }
    bool folded = false;
    for (size_t x = i; x < e; x++) {
        if (v[x]->state != CTL_JOB_PENDING || npend < 2) {
            jtable_add(t, v[x], NULL);
        } else if (!folded) {
            char id[320];
            size_t l = (size_t)snprintf(id, sizeof id, "%llu_[", (unsigned long long)a);
            l += sl_array_format(idx, m, id + l, sizeof id - l - 16);
            int32_t lim = ctl_array_limit(t->c, a);
            if (lim > 0)
                l += (size_t)snprintf(id + l, sizeof id - l, "%%%d", lim);
            snprintf(id + l, sizeof id - l, "]");
            jtable_add(t, shown, id);
            folded = true;
        }
    }
    sl_free(idx);
    return e;
}

/* ---- GET /v1/jobs, one page ---- */

void ctl_jobs_list(ctl_t *c, const ctl_list_query_t *q, ctl_buf_t *b, uint64_t *next_after,
                   int64_t *count) {
    /* The jobs in memory (pending, running and the retained finished ones)
     * in id order from the first above `after` (jobtab.c): a page costs
     * the jobs it walks, not a sort of all of them, and pages are disjoint
     * and complete however the queue reorders between requests. One job
     * beyond the page says whether another page follows. */
    size_t cap = sl_hash_count(&c->jobs);
    if (cap > (size_t)q->limit)
        cap = (size_t)q->limit;
    ctl_job_t **v = sl_xmalloc((cap ? cap : 1) * sizeof *v);
    size_t k = 0, it = ctl_jobs_seek(c, q->after);
    bool more = false;
    for (ctl_job_t *j; (j = ctl_jobs_next(c, &it)) != NULL;) {
        if (!(q->states & (1u << j->state)) || (q->tenant >= 0 && j->tenant != q->tenant))
            continue;
        if (k == cap) {
            more = k > 0;
            break;
        }
        v[k++] = j;
    }
    *next_after = more ? v[k - 1]->id : 0;
    *count = (int64_t)k;
    if (q->table) {
        jtable_t *t = jtable_new(c, k);
        for (size_t i = 0; i < k;) {
            if (v[i]->array_id == 0) {
                jtable_add(t, v[i++], NULL);
                continue;
            }
            i = jtable_add_array(t, v, i, k);
        }
        jtable_write(t, b);
    } else {
        ctl_buf_reserve(b, 600 * k + 64);
        ctl_buf_puts(b, "{\"jobs\":[");
        for (size_t i = 0; i < k; i++) {
            if (i)
                ctl_buf_putc(b, ',');
            ctl_job_write(c, b, v[i]);
        }
        ctl_buf_puts(b, "],\"next_after\":");
        if (*next_after)
            ctl_buf_u64(b, *next_after);
        else
            ctl_buf_puts(b, "null");
        ctl_buf_puts(b, "}\n");
    }
    sl_free(v);
}

/* ---- GET /v1/nodes and /v1/tenants ---- */

int ctl_api_nodes(ctl_t *c, const char *limit, const char *after, ctl_buf_t *b, const char **field,
                  char *err, size_t errlen) {
    if (limit == NULL && after == NULL) { /* unpaged: the whole table in one answer */
        ctl_buf_puts(b, "{\"nodes\":[");
        for (size_t i = 0; i < c->nnodes; i++) {
            if (i)
                ctl_buf_putc(b, ',');
            ctl_node_write(c, b, (uint32_t)i);
        }
        ctl_buf_puts(b, "]}\n");
        return 0;
    }
    size_t lim = SIZE_MAX;
    if (limit != NULL) {
        char *end;
        long long v = *limit >= '0' && *limit <= '9' ? strtoll(limit, &end, 10) : -1;
        if (v < 1 || v > CTL_LIST_MAX_LIMIT || *end != '\0') {
            *field = "limit";
            snprintf(err, errlen, "limit: must be a whole number from 1 to %d", CTL_LIST_MAX_LIMIT);
            return -1;
        }
        lim = (size_t)v;
    }
    if (after != NULL && (after[0] == '\0' || strlen(after) >= SL_NAME_MAX)) {
        *field = "after";
        snprintf(err, errlen, "after: must be a node name of 1 to %d bytes (the next_after of the "
                              "previous page)", SL_NAME_MAX - 1);
        return -1;
    }
    /* Keyset paging: the first node whose name sorts after `after` is
     * found by binary search in the name order, so a page costs
     * O(log N + its nodes), and names never change, so walking the pages
     * lists every node exactly once whatever registers meanwhile (a node
     * that registers during the walk is listed if its name sorts after
     * the page being read). */
    size_t n;
    const uint32_t *ids = ctl_nodes_by_name(c, &n);
    size_t lo = 0, hi = n;
    while (after != NULL && lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(ctl_node_name(c, (int32_t)ids[mid]), after) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t k = n - lo < lim ? n - lo : lim;
    ctl_buf_reserve(b, 700 * k + 64);
    ctl_buf_puts(b, "{\"nodes\":[");
    for (size_t i = 0; i < k; i++) {
        if (i)
            ctl_buf_putc(b, ',');
        ctl_node_write(c, b, ids[lo + i]);
    }
    ctl_buf_puts(b, "],\"next_after\":");
    if (lo + k < n)
        ctl_buf_jstr(b, ctl_node_name(c, (int32_t)ids[lo + k - 1]));
    else
        ctl_buf_puts(b, "null");
    ctl_buf_puts(b, "}\n");
    return 0;
}

static void tenant_res_write(ctl_buf_t *b, sl_res_t r) {
    char q[64];
    ctl_buf_puts(b, "{\"cpus\":");
    sl_qty_format(r.cpu_milli, SL_QTY_CPU, q, sizeof q);
    ctl_buf_jstr(b, q);
    ctl_buf_puts(b, ",\"memory\":");
    sl_qty_format(r.mem_bytes, SL_QTY_MEM, q, sizeof q);
    ctl_buf_jstr(b, q);
    ctl_buf_puts(b, ",\"gpus\":");
    ctl_buf_milli(b, r.gpu_milli);
    ctl_buf_putc(b, '}');
}

void ctl_api_tenants(ctl_t *c, bool admin, int32_t tenant, ctl_buf_t *b) {
    ctl_buf_puts(b, "{\"tenants\":[");
    bool first = true;
    for (size_t i = 0; i < c->cfg.ntenants; i++) {
        int32_t t = sl_sched_tenant_find(c->sched, c->cfg.tenants[i].name);
        if (t < 0 || (!admin && t != tenant))
            continue;
        if (!first)
            ctl_buf_putc(b, ',');
        first = false;
        size_t pending, running;
        sl_sched_tenant_jobs(c->sched, t, &pending, &running);
        ctl_buf_puts(b, "{\"name\":");
        ctl_buf_jstr(b, c->cfg.tenants[i].name);
        ctl_buf_puts(b, ",\"weight\":");
        ctl_buf_i64(b, sl_sched_tenant_weight(c->sched, t));
        ctl_buf_puts(b, ",\"quota\":");
        if (c->cfg.tenants[i].has_quota)
            tenant_res_write(b, c->cfg.tenants[i].quota);
        else
            ctl_buf_puts(b, "null");
        ctl_buf_puts(b, ",\"pending\":");
        ctl_buf_u64(b, pending);
        ctl_buf_puts(b, ",\"running\":");
        ctl_buf_u64(b, running);
        ctl_buf_puts(b, ",\"usage\":");
        tenant_res_write(b, sl_sched_tenant_usage(c->sched, t));
        ctl_buf_puts(b, ",\"dominant_share\":");
        ctl_buf_double(b, sl_sched_tenant_share(c->sched, t));
        ctl_buf_putc(b, '}');
    }
    ctl_buf_puts(b, "]}\n");
}
