/*
 * jobs.c - the life of a job in sluiced.
 *
 *   submit -> pending (core queue) -> running (the cycle placed it; tasks
 *   written, then launches pushed) -> succeeded | failed | cancelled
 *
 * A job is a gang: a task that fails fails the job and the others are
 * killed; the job's resources stay held in the core until every task has
 * reported its end (ctl_job_settle), so a GPU is never given away while a
 * process may still be using it. A node failure marks its tasks lost and,
 * per the job's on_node_failure, requeues the job (once the surviving tasks
 * have stopped, with its original submit time) or fails it.
 *
 * Every change is written into the iteration's transaction (store.c); the
 * messages it causes (launch, kill, ack) wait in the node's queue until
 * that transaction has committed (agent.c).
 *
 * Memory stays bounded on a controller that runs for months: jobs live in
 * a hash table by id, and a finished job, once settled (the core has
 * already forgotten it), joins a FIFO of finished jobs. The flush, after
 * the commit and the deferred replies, drops from the head of that FIFO
 * the jobs that ended more than job_retention ago or exceed
 * max_finished_jobs (Slurm's MinJobAge/MaxJobCount), at most
 * CTL_TRIM_PER_PASS per pass; SQLite keeps them, and the API reads a
 * forgotten job back by id (ctl_store_job_fetch).
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "log.h"

static const char *const job_states[CTL_JOB_NSTATES] = {"pending", "running", "succeeded", "failed",
                                                        "cancelled"};
static const char *const task_states[CTL_TASK_NSTATES] = {"launching", "running", "exited",
                                                          "failed", "lost"};

/* Index of s in names[0..n-1], or -1. */
static int name_index(const char *const *names, int n, const char *s) {
    for (int i = 0; s && i < n; i++)
        if (strcmp(s, names[i]) == 0) return i;
    return -1;
}

const char *ctl_job_state_name(ctl_job_state_t st) {
    return (unsigned)st < CTL_JOB_NSTATES ? job_states[st] : "?";
}

int ctl_job_state_parse(const char *s, ctl_job_state_t *out) {
    int i = name_index(job_states, CTL_JOB_NSTATES, s);
    if (i < 0) return -1;
    *out = (ctl_job_state_t)i;
    return 0;
}

const char *ctl_task_state_name(ctl_task_state_t st) {
    return (unsigned)st < CTL_TASK_NSTATES ? task_states[st] : "?";
}

int ctl_task_state_parse(const char *s, ctl_task_state_t *out) {
    int i = name_index(task_states, CTL_TASK_NSTATES, s);
    if (i < 0) return -1;
    *out = (ctl_task_state_t)i;
    return 0;
}

/* ---- the in-memory job table and the finished list ---- */

static size_t map_slot(uint64_t id, size_t cap) {
    uint64_t h = id * 0x9E3779B97F4A7C15ull; /* Fibonacci hashing: ids are dense */
    return (size_t)(h ^ (h >> 29)) & (cap - 1);
}

static void map_put(ctl_job_t **map, size_t cap, ctl_job_t *j) {
    size_t i = map_slot(j->id, cap);
    while (map[i] != NULL && map[i]->id != j->id)
        i = (i + 1) & (cap - 1);
    map[i] = j;
}

static void map_resize(ctl_t *c, size_t cap) {
    ctl_job_t **map = sl_xcalloc(cap, sizeof *map);
    for (size_t i = 0; i < c->jobmap_cap; i++)
        if (c->jobmap[i] != NULL)
            map_put(map, cap, c->jobmap[i]);
    sl_free(c->jobmap);
    c->jobmap = map;
    c->jobmap_cap = cap;
}

ctl_job_t *ctl_job_find(ctl_t *c, uint64_t id) {
    if (c->jobmap_cap == 0)
        return NULL;
    for (size_t i = map_slot(id, c->jobmap_cap);; i = (i + 1) & (c->jobmap_cap - 1)) {
        ctl_job_t *j = c->jobmap[i];
        if (j == NULL || j->id == id)
            return j;
    }
}

void ctl_job_register(ctl_t *c, ctl_job_t *j) {
    if (2 * (c->njobs + 1) > c->jobmap_cap)
        map_resize(c, c->jobmap_cap ? 2 * c->jobmap_cap : 1024);
    if (ctl_job_find(c, j->id) == NULL)
        c->njobs++;
    map_put(c->jobmap, c->jobmap_cap, j);
}

ctl_job_t *ctl_job_unregister(ctl_t *c, uint64_t id) {
    if (c->jobmap_cap == 0)
        return NULL;
    size_t m = c->jobmap_cap - 1, hole = map_slot(id, c->jobmap_cap);
    while (c->jobmap[hole] != NULL && c->jobmap[hole]->id != id)
        hole = (hole + 1) & m;
    ctl_job_t *j = c->jobmap[hole];
    if (j == NULL)
        return NULL;
    c->jobmap[hole] = NULL;
    c->njobs--;
    /* Backward shift: move later members of the probe run into the hole
     * when the hole lies between their home slot and where they sit. */
    for (size_t k = (hole + 1) & m; c->jobmap[k] != NULL; k = (k + 1) & m) {
        size_t home = map_slot(c->jobmap[k]->id, c->jobmap_cap);
        if (((k - home) & m) >= ((k - hole) & m)) {
            c->jobmap[hole] = c->jobmap[k];
            c->jobmap[k] = NULL;
            hole = k;
        }
    }
    if (c->jobmap_cap > 1024 && 8 * c->njobs < c->jobmap_cap)
        map_resize(c, c->jobmap_cap / 2);
    return j;
}

void ctl_job_retain(ctl_t *c, ctl_job_t *j) {
    if (j->retained)
        return;
    j->retained = true;
    if (c->fin_len == c->fin_cap) {
        size_t cap = c->fin_cap ? 2 * c->fin_cap : 1024;
        uint64_t *fin = sl_xmalloc(cap * sizeof *fin);
        for (size_t i = 0; i < c->fin_len; i++)
            fin[i] = c->fin[(c->fin_head + i) % c->fin_cap];
        sl_free(c->fin);
        c->fin = fin;
        c->fin_cap = cap;
        c->fin_head = 0;
    }
    c->fin[(c->fin_head + c->fin_len) % c->fin_cap] = j->id;
    c->fin_len++;
}

size_t ctl_jobs_trim(ctl_t *c, int64_t now_us, size_t max) {
    int64_t cut = now_us - c->cfg.job_retention_ms * 1000;
    size_t n = 0;
    while (c->fin_len > 0 && n < max) {
        ctl_job_t *j = ctl_job_find(c, c->fin[c->fin_head]);
        if (j != NULL) {
            /* End times come in (nearly) finishing order, so the head is
             * the oldest; retention 0 forgets even an end time reported
             * slightly ahead of this clock. */
            bool drop = (int64_t)c->fin_len > c->cfg.max_finished_jobs ||
                        c->cfg.job_retention_ms == 0 || j->end_us <= cut;
            if (!drop)
                break;
            ctl_job_free(ctl_job_unregister(c, j->id));
            c->n.jobs_forgotten++;
        }
        c->fin_head = (c->fin_head + 1) % c->fin_cap;
        c->fin_len--;
        n++;
    }
    return n;
}

void ctl_job_free(ctl_job_t *j) {
    if (j == NULL)
        return;
    json_decref(j->spec);
    sl_free(j->head);
    sl_free(j->row);
    sl_free(j->tasks);
    sl_free(j);
}

void ctl_job_make_head(ctl_job_t *j) {
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
    ctl_buf_puts(&b, ",\"submit_time\":");
    ctl_buf_time(&b, j->submit_us);
    free(spec);
    sl_free(j->head);
    j->head = ctl_buf_steal(&b, &j->head_len);
    ctl_job_make_row(j);
}

int ctl_job_submit(ctl_t *c, ctl_job_t *j, char *err, size_t errlen) {
    j->id = c->next_id;
    j->submit_us = ctl_now_us();
    j->core.id = j->id;
    j->core.submit_us = j->submit_us;
    if (ctl_job_core_spec(c, j, err, errlen) < 0)
        return SL_EINVAL;
    int rc = sl_sched_submit(c->sched, &j->core, err, errlen);
    if (rc < 0)
        return rc;
    c->next_id++;
    j->in_core = true;
    ctl_job_make_head(j);
    ctl_job_register(c, j);
    rc = ctl_store_job_insert(c, j);
    if (rc < 0) {
        sl_sched_cancel(c->sched, j->id, j->submit_us);
        sl_sched_forget(c->sched, j->id);
        ctl_job_unregister(c, j->id);
        ctl_job_free(j);
        snprintf(err, errlen, "could not store the job");
        return rc;
    }
    c->n.submissions++;
    c->sched_dirty = true;
    ctl_kick(c);
    return 0;
}

/* ---- messages to agents ---- */

void ctl_send_launch(ctl_t *c, ctl_job_t *j, int32_t i) {
    const ctl_task_t *t = &j->tasks[i];
    ctl_node_t *mn = ctl_node_get(c, j->master_node);
    int32_t local = 0;
    for (int32_t k = 0; k < i; k++)
        local += j->tasks[k].node == t->node;
    ctl_buf_t b;
    ctl_buf_init(&b);
    ctl_buf_puts(&b, "{\"type\":\"launch\",\"job\":");
    ctl_buf_u64(&b, j->id);
    ctl_buf_puts(&b, ",\"task\":");
    ctl_buf_i64(&b, i);
    ctl_buf_puts(&b, ",\"name\":");
    ctl_buf_jstr(&b, json_string_value(json_object_get(j->spec, "name")));
    ctl_buf_puts(&b, ",\"tenant\":");
    ctl_buf_jstr(&b, sl_sched_tenant_name(c->sched, j->tenant));
    char *argv = json_dumps(json_object_get(j->spec, "command"), JSON_COMPACT | JSON_ENCODE_ANY);
    char *env = json_dumps(json_object_get(j->spec, "env"), JSON_COMPACT | JSON_PRESERVE_ORDER);
    ctl_buf_puts(&b, ",\"argv\":");
    ctl_buf_puts(&b, argv ? argv : "null");
    ctl_buf_puts(&b, ",\"image\":");
    ctl_buf_jstr(&b, json_string_value(json_object_get(j->spec, "image")));
    ctl_buf_puts(&b, ",\"env\":");
    ctl_buf_puts(&b, env ? env : "{}");
    free(argv);
    free(env);
    ctl_buf_puts(&b, ",\"gpus\":[");
    bool first = true;
    for (int g = 0; g < SL_MAX_GPUS_PER_NODE; g++) {
        if (t->gpu_mask & (1u << g)) {
            if (!first)
                ctl_buf_putc(&b, ',');
            ctl_buf_i64(&b, g);
            first = false;
        }
    }
    ctl_buf_puts(&b, "],\"gpu_milli\":");
    ctl_buf_i64(&b, t->gpu_mask ? t->gpu_milli : 0);
    ctl_buf_puts(&b, ",\"gpu_memory\":");
    ctl_buf_i64(&b, j->core.task.gpus ? 0 : j->core.task.gpu_mem_bytes);
    ctl_buf_puts(&b, ",\"cpu_milli\":");
    ctl_buf_i64(&b, j->core.task.cpu_milli);
    ctl_buf_puts(&b, ",\"mem_bytes\":");
    ctl_buf_i64(&b, j->core.task.mem_bytes);
    ctl_buf_puts(&b, ",\"rank\":");
    ctl_buf_i64(&b, i);
    ctl_buf_puts(&b, ",\"world_size\":");
    ctl_buf_i64(&b, j->ntasks);
    ctl_buf_puts(&b, ",\"local_rank\":");
    ctl_buf_i64(&b, local);
    ctl_buf_puts(&b, ",\"master_addr\":");
    ctl_buf_jstr(&b, mn && mn->addr[0] ? mn->addr : "127.0.0.1");
    ctl_buf_puts(&b, ",\"master_port\":");
    ctl_buf_i64(&b, CTL_MASTER_PORT_BASE + (int64_t)(j->id % 1000));
    ctl_buf_puts(&b, ",\"time_limit\":");
    ctl_buf_i64(&b, j->core.time_limit_us / 1000000);
    ctl_buf_puts(&b, "}\n");
    ctl_agent_send(c, (uint32_t)t->node, b.p, b.len);
    ctl_buf_fini(&b);
    c->n.tasks_launched++;
}

void ctl_send_kill(ctl_t *c, ctl_job_t *j, int32_t i) {
    char msg[160];
    int n = snprintf(msg, sizeof msg, "{\"type\":\"kill\",\"job\":%llu,\"task\":%d,\"grace_ms\":%lld}\n",
                     (unsigned long long)j->id, i, (long long)c->cfg.kill_grace_ms);
    ctl_agent_send(c, (uint32_t)j->tasks[i].node, msg, (size_t)n);
}

static void kill_live(ctl_t *c, ctl_job_t *j, int32_t except_node) {
    for (int32_t i = 0; i < j->ntasks; i++) {
        ctl_task_t *t = &j->tasks[i];
        if ((t->state == CTL_TASK_LAUNCHING || t->state == CTL_TASK_RUNNING) && t->node != except_node)
            ctl_send_kill(c, j, i);
    }
}

/* ---- the scheduling cycle ---- */

static void on_start(void *ud, const sl_job_t *cj) {
    ctl_t *c = ud;
    ctl_job_t *j = ctl_job_find(c, sl_job_id(cj));
    if (j == NULL) {
        sl_log(SL_LOG_ERROR, "sched", "job=%llu started but unknown", (unsigned long long)sl_job_id(cj));
        return;
    }
    int32_t n = sl_job_ntasks_placed(cj);
    sl_free(j->tasks);
    j->tasks = sl_xcalloc((size_t)(n ? n : 1), sizeof *j->tasks);
    j->ntasks = n;
    j->state = CTL_JOB_RUNNING;
    j->start_us = sl_job_start_us(cj);
    j->reason[0] = '\0';
    for (int32_t i = 0; i < n; i++) {
        const sl_place_t *pl = sl_job_place(cj, i);
        ctl_task_t *t = &j->tasks[i];
        t->node = (int32_t)pl->node;
        t->gpu_mask = pl->gpu_mask;
        t->gpu_milli = pl->gpu_milli;
        t->gpu_mem_bytes = pl->gpu_mem_bytes;
        t->state = CTL_TASK_LAUNCHING;
        t->start_us = t->end_us = -1;
        ctl_node_get(c, pl->node)->live_tasks++;
        ctl_store_task_put(c, j, i);
    }
    j->live = n;
    j->master_node = n ? (uint32_t)j->tasks[0].node : 0;
    ctl_store_job_update(c, j);
    for (int32_t i = 0; i < n; i++)
        ctl_send_launch(c, j, i);
    c->n.jobs_started++;
    if (sl_log_enabled(SL_LOG_DEBUG, "sched"))
        sl_log(SL_LOG_DEBUG, "sched", "job=%llu started tasks=%d", (unsigned long long)j->id, n);
}

void ctl_sched_run(ctl_t *c) {
    if (!c->sched_dirty)
        return;
    c->sched_dirty = false;
    int64_t t0 = ctl_mono_us();
    sl_cycle_stats_t st;
    sl_sched_cycle(c->sched, ctl_now_us(), on_start, c, &st);
    c->n.cycles++;
    c->n.cycle_us += (uint64_t)(ctl_mono_us() - t0);
}

/* ---- task and job ends ---- */

void ctl_task_started(ctl_t *c, ctl_job_t *j, int32_t i, int32_t pid, int64_t t_us) {
    ctl_task_t *t = &j->tasks[i];
    if (t->state != CTL_TASK_LAUNCHING && t->state != CTL_TASK_RUNNING)
        return;
    t->state = CTL_TASK_RUNNING;
    t->pid = pid;
    if (t->start_us < 0)
        t->start_us = t_us;
    ctl_store_task_put_lazy(c, j, i);
}

void ctl_job_settle(ctl_t *c, ctl_job_t *j) {
    int64_t now = ctl_now_us();
    if (j->requeue_wait && j->in_core) {
        int rc = sl_sched_requeue(c->sched, j->id, now);
        if (rc < 0)
            sl_log(SL_LOG_ERROR, "sched", "job=%llu requeue: %s", (unsigned long long)j->id,
                   sl_strerror(rc));
        sl_free(j->tasks);
        j->tasks = NULL;
        j->ntasks = 0;
        j->requeue_wait = false;
        j->state = CTL_JOB_PENDING;
        j->start_us = -1;
        j->requeues++;
        c->n.requeues++;
        ctl_store_tasks_delete(c, j->id);
        ctl_store_job_update(c, j);
        c->sched_dirty = true;
        ctl_kick(c);
        return;
    }
    j->requeue_wait = false;
    if (j->state == CTL_JOB_RUNNING || j->state == CTL_JOB_PENDING) {
        /* Every task ended and none failed (a failure would have failed the job). */
        j->state = CTL_JOB_SUCCEEDED;
        j->has_exit = true;
        j->exit_code = 0;
        j->end_us = -1;
        for (int32_t i = 0; i < j->ntasks; i++)
            if (j->tasks[i].end_us > j->end_us)
                j->end_us = j->tasks[i].end_us;
    }
    if (j->end_us < 0)
        j->end_us = now;
    if (j->in_core) {
        const sl_job_t *cj = sl_sched_job(c->sched, j->id);
        if (cj && sl_job_state(cj) == SL_JOB_RUNNING)
            sl_sched_finish(c->sched, j->id, now);
        else if (cj && sl_job_state(cj) == SL_JOB_PENDING)
            sl_sched_cancel(c->sched, j->id, now);
        sl_sched_forget(c->sched, j->id);
        j->in_core = false;
        c->sched_dirty = true;
        ctl_kick(c);
    }
    ctl_store_job_update(c, j);
    ctl_job_retain(c, j);
    ctl_kick(c); /* the flush trims the finished list once this is committed */
}

void ctl_task_ended(ctl_t *c, ctl_job_t *j, int32_t i, ctl_task_state_t st, int32_t exit_code,
                    int32_t sig, bool has_exit, const char *reason, int64_t t_us) {
    ctl_task_t *t = &j->tasks[i];
    if (t->state != CTL_TASK_LAUNCHING && t->state != CTL_TASK_RUNNING)
        return;
    t->state = st;
    t->has_exit = has_exit;
    t->exit_code = exit_code;
    t->signal = sig;
    t->end_us = t_us > 0 ? t_us : ctl_now_us();
    j->live--;
    if (t->node >= 0)
        ctl_node_get(c, (uint32_t)t->node)->live_tasks--;
    ctl_store_task_put(c, j, i);
    c->n.tasks_exited++;
    bool failed = st != CTL_TASK_EXITED || exit_code != 0 || sig != 0;
    if (failed && j->state == CTL_JOB_RUNNING) {
        const sl_node_t *nd = sl_cluster_node(c->cl, (uint32_t)t->node);
        if (st == CTL_TASK_FAILED)
            snprintf(j->reason, sizeof j->reason, "task %d could not be launched: %s", i,
                     reason ? reason : "unknown reason");
        else if (st == CTL_TASK_LOST)
            snprintf(j->reason, sizeof j->reason, "task %d lost with node %s", i,
                     nd ? nd->name : "?");
        else if (sig != 0)
            snprintf(j->reason, sizeof j->reason, "task %d killed by signal %d", i, sig);
        else
            snprintf(j->reason, sizeof j->reason, "task %d exited with code %d", i, exit_code);
        j->state = CTL_JOB_FAILED;
        j->end_us = t->end_us;
        j->has_exit = has_exit;
        j->exit_code = sig ? 128 + sig : exit_code;
        kill_live(c, j, -1);
    }
    if (j->live == 0)
        ctl_job_settle(c, j);
    else
        ctl_store_job_update(c, j);
}

void ctl_job_fail(ctl_t *c, ctl_job_t *j, const char *reason) {
    if (j->state != CTL_JOB_PENDING && j->state != CTL_JOB_RUNNING)
        return;
    int64_t now = ctl_now_us();
    if (j->in_core && j->state == CTL_JOB_PENDING && !j->requeue_wait) {
        sl_sched_cancel(c->sched, j->id, now);
        sl_sched_forget(c->sched, j->id);
        j->in_core = false;
        c->sched_dirty = true;
    }
    j->state = CTL_JOB_FAILED;
    j->requeue_wait = false;
    j->end_us = now;
    snprintf(j->reason, sizeof j->reason, "%s", reason);
    kill_live(c, j, -1);
    if (j->live == 0)
        ctl_job_settle(c, j);
    else
        ctl_store_job_update(c, j);
    ctl_kick(c);
}

int ctl_job_cancel(ctl_t *c, ctl_job_t *j) {
    if (j->state != CTL_JOB_PENDING && j->state != CTL_JOB_RUNNING)
        return SL_ESTATE;
    int64_t now = ctl_now_us();
    if (j->in_core && j->state == CTL_JOB_PENDING && !j->requeue_wait) {
        sl_sched_cancel(c->sched, j->id, now);
        sl_sched_forget(c->sched, j->id);
        j->in_core = false;
        c->sched_dirty = true;
    }
    j->state = CTL_JOB_CANCELLED;
    j->requeue_wait = false;
    j->end_us = now;
    snprintf(j->reason, sizeof j->reason, "cancelled");
    kill_live(c, j, -1);
    if (j->live == 0)
        ctl_job_settle(c, j);
    else
        ctl_store_job_update(c, j);
    ctl_kick(c);
    return 0;
}

void ctl_job_lose(ctl_t *c, ctl_job_t *j, uint32_t node, int32_t task, const char *why) {
    bool here = false;
    for (int32_t i = 0; i < j->ntasks && !here; i++)
        here = j->tasks[i].node == (int32_t)node && (task < 0 || i == task) &&
               (j->tasks[i].state == CTL_TASK_LAUNCHING || j->tasks[i].state == CTL_TASK_RUNNING);
    if (!here)
        return;
    if (j->state == CTL_JOB_RUNNING) {
        if (j->requeue_on_node_failure) {
            j->state = CTL_JOB_PENDING;
            j->requeue_wait = true;
            snprintf(j->reason, sizeof j->reason, "requeued: %s", why);
        } else {
            j->state = CTL_JOB_FAILED;
            j->end_us = ctl_now_us();
            snprintf(j->reason, sizeof j->reason, "%s", why);
        }
        kill_live(c, j, task < 0 ? (int32_t)node : -1);
    }
    int64_t now = ctl_now_us();
    for (int32_t i = 0; i < j->ntasks; i++) {
        if (j->tasks[i].node == (int32_t)node && (task < 0 || i == task) &&
            (j->tasks[i].state == CTL_TASK_LAUNCHING || j->tasks[i].state == CTL_TASK_RUNNING))
            ctl_task_ended(c, j, i, CTL_TASK_LOST, 0, 0, false, NULL, now);
    }
}

void ctl_node_failed(ctl_t *c, uint32_t node, const char *why) {
    const sl_node_t *nd = sl_cluster_node(c->cl, node);
    char name[SL_NAME_MAX];
    snprintf(name, sizeof name, "%s", nd ? nd->name : "?");
    sl_log(SL_LOG_WARN, "node", "node=%s down: %s", name, why);
    c->n.node_failures++;
    sl_cluster_set_state(c->cl, node, SL_NODE_DOWN);
    ctl_agent_close_node(c, node);
    ctl_logreq_fail_node(c, node, "the node failed");
    char why2[200];
    snprintf(why2, sizeof why2, "node %s failed (%s)", name, why);
    for (uint64_t id = c->first_active; id < c->next_id; id++) {
        ctl_job_t *j = ctl_job_find(c, id);
        if (j != NULL && j->live > 0)
            ctl_job_lose(c, j, node, -1, why2);
    }
    c->sched_dirty = true;
    ctl_kick(c);
}

typedef struct collect {
    uint64_t *ids;
    size_t n, cap;
    int64_t now;
    ctl_t *c;
} collect_t;

static int over_limit(void *ud, const sl_job_t *cj) {
    collect_t *col = ud;
    const sl_job_spec_t *sp = sl_job_spec(cj);
    if (sp->time_limit_us > 0 && sl_job_start_us(cj) >= 0 &&
        col->now - sl_job_start_us(cj) > sp->time_limit_us) {
        if (col->n == col->cap) {
            col->cap = col->cap ? 2 * col->cap : 16;
            col->ids = sl_xrealloc(col->ids, col->cap * sizeof *col->ids);
        }
        col->ids[col->n++] = sl_job_id(cj);
    }
    return 0;
}

void ctl_sweep(ctl_t *c) {
    int64_t mono = ctl_mono_us();
    int64_t timeout_us = c->cfg.node_timeout_ms * 1000;
    for (size_t i = 0; i < c->nnodes; i++) {
        ctl_node_t *n = c->nodes[i];
        const sl_node_t *nd = sl_cluster_node(c->cl, (uint32_t)i);
        if (n == NULL || nd == NULL)
            continue;
        if ((nd->state != SL_NODE_DOWN || n->live_tasks > 0) &&
            mono - n->last_seen_mono_us > timeout_us) {
            char why[96];
            snprintf(why, sizeof why, "no message for %lld ms",
                     (long long)((mono - n->last_seen_mono_us) / 1000));
            ctl_node_failed(c, (uint32_t)i, why);
        }
    }
    collect_t col = {NULL, 0, 0, ctl_now_us(), c};
    sl_sched_foreach(c->sched, SL_JOB_RUNNING, over_limit, &col);
    for (size_t i = 0; i < col.n; i++) {
        ctl_job_t *j = ctl_job_find(c, col.ids[i]);
        if (j && j->state == CTL_JOB_RUNNING) {
            char why[96];
            snprintf(why, sizeof why, "time limit of %lld s exceeded",
                     (long long)(j->core.time_limit_us / 1000000));
            ctl_job_fail(c, j, why);
        }
    }
    sl_free(col.ids);
    /* Advance the scan start past jobs that can no longer change. */
    while (c->first_active < c->next_id) {
        ctl_job_t *j = ctl_job_find(c, c->first_active);
        if (j != NULL && (j->in_core || j->live > 0))
            break;
        c->first_active++;
    }
    ctl_logreq_expire(c);
    if (c->fin_len > 0)
        ctl_kick(c); /* the flush drops finished jobs past job_retention */
}
