/*
 * ctl.h - internals of sluiced, the controller daemon.
 *
 * One thread, one libevent loop (Redis's model). Every event handler only
 * mutates in-memory state, appends SQL to the iteration's open transaction
 * and marks work pending; the flush event (ctl_kick) then runs, once per
 * loop iteration, after the I/O callbacks of that iteration:
 *
 *   1. one scheduling cycle if anything changed (submission, task end,
 *      node join) - never on a fixed tick;
 *   2. COMMIT of the iteration's transaction (group commit: every
 *      submission, start, exit and cancel of the iteration in one fsync);
 *   3. only then the deferred HTTP replies (201 for submissions) and the
 *      queued agent messages (launch, kill, ack) go out.
 *
 * So nothing is acknowledged, and no task is launched, before the state
 * that explains it is durable. A failed COMMIT is fatal (fail-stop): the
 * process exits and a restart recovers from the database, which is the
 * truth.
 *
 * Files: main.c (flags, start-up, loop), config.c (YAML), store.c (SQLite),
 * http.c (routes, auth, replies), api.c (route handlers and JSON views),
 * jobs.c (job lifecycle), agent.c (agent protocol), metrics.c, buf.c.
 */
#ifndef SLUICE_CTL_H
#define SLUICE_CTL_H

#include <jansson.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>

#include "buf.h"
#include "sluice/sluice.h"

struct event_base;
struct event;
struct evhttp;
struct evhttp_request;
struct evconnlistener;
struct bufferevent;
struct evbuffer;

#define CTL_DEFAULT_LISTEN "127.0.0.1:7070"
#define CTL_DEFAULT_AGENT_LISTEN "127.0.0.1:7071"
#define CTL_DEFAULT_STATE "sluiced.db"
#define CTL_MAX_MSG (1024 * 1024)
#define CTL_MASTER_PORT_BASE 29500
#define CTL_LAZY_COMMIT_MS 100
#define CTL_DEFAULT_JOB_RETENTION_MS (3600 * 1000)
#define CTL_DEFAULT_MAX_FINISHED_JOBS 10000
#define CTL_TRIM_PER_PASS 1000  /* finished jobs dropped from memory per pass at most */

/* ---- configuration (config.c) ---- */

typedef struct ctl_tenant_cfg {
    char *name;
    int32_t weight;
    char *token;     /* may be NULL: only the admin can submit for it */
    bool has_quota;
    sl_res_t quota;
} ctl_tenant_cfg_t;

typedef struct ctl_config {
    char *listen;
    char *agent_listen;
    char *state;
    char *admin_token;
    char *cluster_token;
    int64_t node_timeout_ms;
    int32_t heartbeat_s;
    int64_t kill_grace_ms;
    char *queue;
    char *placement;
    char *backfill;
    int64_t default_time_limit_s;
    int32_t max_starts_per_cycle;
    int64_t job_retention_ms;   /* finished jobs stay in memory this long (by end time) */
    int64_t max_finished_jobs;  /* and at most this many of them (the newest) */
    ctl_tenant_cfg_t *tenants;
    size_t ntenants;
    char **pools;
    size_t npools;
    char *log_level;
} ctl_config_t;

void ctl_config_init(ctl_config_t *cfg);
void ctl_config_fini(ctl_config_t *cfg);
/* Loads path into cfg (keys absent keep their defaults). Returns 0, or -1
 * with "FILE:LINE: message" in err. */
int ctl_config_load(ctl_config_t *cfg, const char *path, char *err, size_t errlen);
/* Fills what is still missing (tokens, a default tenant). */
void ctl_config_finish(ctl_config_t *cfg);
/* Checks that tokens are non-empty and distinct. 0, or -1 with a message. */
int ctl_config_check(const ctl_config_t *cfg, char *err, size_t errlen);

/* ---- jobs and tasks ---- */

typedef enum ctl_job_state {
    CTL_JOB_PENDING = 0,
    CTL_JOB_RUNNING,
    CTL_JOB_SUCCEEDED,
    CTL_JOB_FAILED,
    CTL_JOB_CANCELLED,
    CTL_JOB_NSTATES
} ctl_job_state_t;

typedef enum ctl_task_state {
    CTL_TASK_LAUNCHING = 0, /* launch queued or sent, no `started` yet */
    CTL_TASK_RUNNING,
    CTL_TASK_EXITED,
    CTL_TASK_FAILED,        /* could not be launched */
    CTL_TASK_LOST,          /* its node failed */
    CTL_TASK_NSTATES
} ctl_task_state_t;

typedef struct ctl_task {
    int32_t node;          /* core node id */
    uint32_t gpu_mask;
    int32_t gpu_milli;
    int64_t gpu_mem_bytes;
    ctl_task_state_t state;
    int32_t pid;
    int32_t exit_code;     /* valid when has_exit */
    int32_t signal;
    bool has_exit;
    int64_t start_us;      /* reported by the agent; -1 until started */
    int64_t end_us;
} ctl_task_t;

typedef struct ctl_job {
    uint64_t id;
    int32_t tenant;
    ctl_job_state_t state;
    json_t *spec;          /* the normalised submission (owned) */
    char *head;            /* cached `{"id":N,<spec fields>,"submit_time":T` */
    size_t head_len;
    char *row;             /* cached text-table cells that never change (api.c):
                            * id, name, tenant, tasks, per-task resources */
    uint16_t row_len[5];   /* their lengths, stored back to back in row */
    sl_job_spec_t core;    /* what the core was given */
    bool requeue_on_node_failure;
    int64_t submit_us, start_us, end_us;
    char reason[256];      /* for finished jobs and the requeue wait */
    int32_t exit_code;
    bool has_exit;
    int32_t ntasks;        /* placed tasks (0 while pending) */
    ctl_task_t *tasks;
    int32_t live;          /* tasks launching or running */
    bool in_core;          /* the core holds it (pending or running) */
    bool requeue_wait;     /* requeue once the surviving tasks have stopped */
    int32_t requeues;
    uint32_t master_node;
    bool retained;         /* finished and settled: in the finished list (c->fin) */
} ctl_job_t;

/* ---- nodes and agent connections ---- */

typedef struct ctl_conn ctl_conn_t;

typedef struct ctl_node {
    uint32_t id;           /* core node id */
    ctl_conn_t *conn;      /* NULL while the agent is not connected */
    struct evbuffer *outq; /* messages waiting for the next commit */
    int64_t last_seen_mono_us;
    int64_t last_seen_us;  /* wall clock, for the API; -1 never */
    char addr[64];         /* address the agent connected from */
    int32_t live_tasks;
    char gpu_model[SL_NAME_MAX];
    char *spec_json;       /* as stored in the nodes table */
} ctl_node_t;

/* ---- deferred work ---- */

typedef struct ctl_reply {
    struct evhttp_request *req;
    int status;
    uint64_t job;          /* the body is this job's object */
} ctl_reply_t;

typedef struct ctl_logreq {
    uint64_t req;
    struct evhttp_request *http;
    uint64_t job;
    int32_t task;
    uint32_t node;
    int64_t deadline_mono_us;
    struct ctl_logreq *next;
} ctl_logreq_t;

/* ---- metrics counters (metrics.c reads them) ---- */

typedef struct ctl_counters {
    uint64_t http_requests;
    uint64_t http_errors;
    uint64_t submissions;
    uint64_t commits;
    uint64_t commit_us;
    uint64_t cycles;
    uint64_t cycle_us;
    uint64_t jobs_started;
    uint64_t tasks_launched;
    uint64_t tasks_exited;
    uint64_t node_failures;
    uint64_t requeues;
    uint64_t agent_messages;
    uint64_t jobs_forgotten; /* finished jobs dropped from memory (kept in SQLite) */
} ctl_counters_t;

/* ---- the server ---- */

typedef struct ctl {
    ctl_config_t cfg;
    struct event_base *base;
    struct evhttp *http;
    struct evconnlistener *agent_lst;
    struct event *flush_ev;
    struct event *sweep_ev;
    struct event *sig_ev[2];
    bool flush_armed;

    sqlite3 *db;
    bool in_txn;
    bool txn_urgent;       /* the open transaction must commit this iteration */
    struct event *lazy_ev; /* commits a transaction holding only lazy writes */
    sqlite3_stmt *st[16];

    sl_cluster_t *cl;
    sl_sched_t *sched;
    bool sched_dirty;
    int32_t *pool_ok;      /* configured pools (NULL: any) */

    /* Jobs in memory, by id: an open-addressing hash table (linear probing,
     * a power-of-two size at most half full), so memory follows the jobs
     * held, not every id ever issued. Pending and running jobs are always
     * here; finished ones only while retained (ctl_jobs_trim). */
    ctl_job_t **jobmap;
    size_t jobmap_cap, njobs;
    /* Ids of the retained finished jobs in the order they finished: a ring
     * (fin[fin_head], ... fin_len of them); trimming pops from the head. */
    uint64_t *fin;
    size_t fin_head, fin_len, fin_cap;
    uint64_t next_id;
    uint64_t first_active; /* lowest id that may still be pending or hold tasks */

    ctl_node_t **nodes;    /* by core node id */
    size_t nnodes, nodes_cap;

    uint32_t *flushq;      /* nodes with queued agent output */
    size_t nflushq, flushq_cap;

    ctl_reply_t *replies;
    size_t nreplies, replies_cap;
    ctl_logreq_t *logreqs;
    uint64_t next_logreq;

    size_t last_list_len;  /* size of the last job list, to pre-size the next */
    ctl_counters_t n;
    int64_t started_us;
    int64_t started_mono_us;
    int exit_code;
} ctl_t;

/* main.c */
int64_t ctl_now_us(void);       /* wall clock, microseconds since the epoch */
int64_t ctl_mono_us(void);      /* monotonic clock */
void ctl_kick(ctl_t *c);        /* arms the flush event for this iteration */

/* store.c: every ctl_store_* write joins the iteration's transaction. */
int ctl_store_open(ctl_t *c, char *err, size_t errlen);
void ctl_store_close(ctl_t *c);
/* Nodes, active jobs and the finished jobs within job_retention and
 * max_finished_jobs into memory and the core. */
int ctl_store_load(ctl_t *c);
/* Reads one job (with its tasks) from the database into a new ctl_job_t
 * that is not registered (the caller frees it with ctl_job_free); NULL if
 * there is no such job. j->tenant is -1 when its tenant is no longer
 * configured. For jobs dropped from memory (ctl_jobs_trim). */
ctl_job_t *ctl_store_job_fetch(ctl_t *c, uint64_t id);
void ctl_store_begin(ctl_t *c);
void ctl_store_begin_lazy(ctl_t *c);
/* A task row whose loss in a crash is harmless (see store.c). */
void ctl_store_task_put_lazy(ctl_t *c, const ctl_job_t *j, int32_t i);
int ctl_store_commit(ctl_t *c);
int ctl_store_job_insert(ctl_t *c, const ctl_job_t *j);
void ctl_store_job_update(ctl_t *c, const ctl_job_t *j);
void ctl_store_task_put(ctl_t *c, const ctl_job_t *j, int32_t i);
void ctl_store_tasks_delete(ctl_t *c, uint64_t job);
void ctl_store_node_put(ctl_t *c, const ctl_node_t *n, const char *name);

/* jobs.c */
const char *ctl_job_state_name(ctl_job_state_t st);
int ctl_job_state_parse(const char *s, ctl_job_state_t *out);
const char *ctl_task_state_name(ctl_task_state_t st);
int ctl_task_state_parse(const char *s, ctl_task_state_t *out);
/* The job with this id if it is in memory (pending, running, or finished
 * and still retained), else NULL; a forgotten job is read back with
 * ctl_store_job_fetch. O(1) expected. */
ctl_job_t *ctl_job_find(ctl_t *c, uint64_t id);
/* Validates a submission for tenant and normalises it into a new job (id 0,
 * not registered). On error returns NULL with the field and message. */
typedef struct ctl_field_err {
    int status;            /* 400 or 403 */
    const char *code;      /* "invalid_field", "unknown_field", "forbidden" */
    char field[64];
    char message[320];
} ctl_field_err_t;
ctl_job_t *ctl_job_from_spec(ctl_t *c, json_t *spec, int32_t tenant, bool admin,
                             ctl_field_err_t *fe);
/* Fills j->core from j->spec (interning pool and models). 0 or -1. */
int ctl_job_core_spec(ctl_t *c, ctl_job_t *j, char *err, size_t errlen);
void ctl_job_make_head(ctl_job_t *j);
void ctl_job_free(ctl_job_t *j);
/* Puts j into the in-memory table (replacing a job with its id). */
void ctl_job_register(ctl_t *c, ctl_job_t *j);
/* Takes the job with this id out of the table and returns it (NULL if
 * absent); the caller frees it. */
ctl_job_t *ctl_job_unregister(ctl_t *c, uint64_t id);
/* Appends a finished, settled job to the finished list (once). */
void ctl_job_retain(ctl_t *c, ctl_job_t *j);
/* Drops from memory, oldest first, the retained finished jobs that ended
 * more than job_retention ago or exceed max_finished_jobs, at most max of
 * them. They stay in SQLite (the API reads them back by id). Returns how
 * many list entries it consumed: max means there may be more to drop. */
size_t ctl_jobs_trim(ctl_t *c, int64_t now_us, size_t max);
/* Submits a validated job: id, core, store. 0 or a negative error. */
int ctl_job_submit(ctl_t *c, ctl_job_t *j, char *err, size_t errlen);
int ctl_job_cancel(ctl_t *c, ctl_job_t *j);
void ctl_sched_run(ctl_t *c);
void ctl_task_started(ctl_t *c, ctl_job_t *j, int32_t i, int32_t pid, int64_t t_us);
void ctl_task_ended(ctl_t *c, ctl_job_t *j, int32_t i, ctl_task_state_t st, int32_t exit_code,
                    int32_t sig, bool has_exit, const char *reason, int64_t t_us);
void ctl_job_fail(ctl_t *c, ctl_job_t *j, const char *reason);
/* Called when a job's last live task has ended: requeues it (node failure)
 * or finishes it, releasing its resources in the core. */
void ctl_job_settle(ctl_t *c, ctl_job_t *j);
void ctl_node_failed(ctl_t *c, uint32_t node, const char *why);
/* Marks j's live tasks on node (all, or only task when >= 0) lost and
 * applies the job's on_node_failure: requeue once the others stopped, or fail. */
void ctl_job_lose(ctl_t *c, ctl_job_t *j, uint32_t node, int32_t task, const char *why);
void ctl_send_launch(ctl_t *c, ctl_job_t *j, int32_t i);
void ctl_send_kill(ctl_t *c, ctl_job_t *j, int32_t i);
void ctl_sweep(ctl_t *c);       /* liveness and time limits, every second */

/* agent.c */
int ctl_agent_listen(ctl_t *c, char *err, size_t errlen);
void ctl_agent_send(ctl_t *c, uint32_t node, const char *msg, size_t len); /* after commit */
int ctl_agent_send_now(ctl_t *c, uint32_t node, const char *msg, size_t len);
void ctl_agent_flush(ctl_t *c);
void ctl_agent_close_node(ctl_t *c, uint32_t node);
ctl_node_t *ctl_node_get(ctl_t *c, uint32_t id);
ctl_node_t *ctl_node_new(ctl_t *c, uint32_t id);

/* http.c */
int ctl_http_listen(ctl_t *c, char *err, size_t errlen);
void ctl_http_print_routes(void);
void ctl_http_flush(ctl_t *c);  /* sends deferred replies */
void ctl_http_defer(ctl_t *c, struct evhttp_request *req, int status, uint64_t job);
void ctl_http_send_json(struct evhttp_request *req, int status, ctl_buf_t *body);
void ctl_http_error(ctl_t *c, struct evhttp_request *req, int status, const char *code,
                    const char *field, const char *fmt, ...) __attribute__((format(printf, 6, 7)));
void ctl_logreq_answer(ctl_t *c, uint64_t req, json_t *msg);
void ctl_logreq_fail_node(ctl_t *c, uint32_t node, const char *why);
void ctl_logreq_expire(ctl_t *c);

/* api.c */
void ctl_job_write(ctl_t *c, ctl_buf_t *b, const ctl_job_t *j);
/* The same, with the core's job when the caller has it (saves a lookup). */
void ctl_job_write_core(ctl_t *c, ctl_buf_t *b, const ctl_job_t *j, const sl_job_t *cj);
void ctl_node_write(ctl_t *c, ctl_buf_t *b, uint32_t id);
/* Formats j->row from j->id and j->spec (called by ctl_job_make_head). */
void ctl_job_make_row(ctl_job_t *j);
/* The text table of GET /v1/jobs?view=table (`sluice queue` prints it as
 * is): add the listed jobs in order, then write writes the header and the
 * padded rows into b and frees the table. */
typedef struct ctl_jtable ctl_jtable_t;
ctl_jtable_t *ctl_jtable_new(ctl_t *c);
void ctl_jtable_add(ctl_jtable_t *t, const ctl_job_t *j, const sl_job_t *cj);
void ctl_jtable_write(ctl_jtable_t *t, ctl_buf_t *b);

/* metrics.c */
void ctl_metrics_write(ctl_t *c, ctl_buf_t *b);
void ctl_metrics_print_help(void);

#endif
