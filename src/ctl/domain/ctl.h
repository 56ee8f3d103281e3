/*
 * ctl.h - the state of sluiced's domain: configuration, the core, the
 * store, the jobs and nodes in memory, and the outbound interface through
 * which the domain's decisions reach agents. Data only: the functions that
 * change it are declared in nodes.h, jobs.h and recover.h.
 *
 * Where it sits: src/ctl is in folders by concept, lowest first base/,
 * store/, domain/ (this), views/, net/, then main.c; each folder's LAYERS
 * orders its files, and docs/architecture.md draws them. The domain's
 * files change this state; views/ and net/ read it through the getters.
 */
#ifndef SLUICE_CTL_CTL_H
#define SLUICE_CTL_CTL_H

#include <stdbool.h>
#include <stdint.h>

#include "base/config.h"
#include "base/listen.h"
#include "base/loop.h"
#include "base/model.h"
#include "base/obs.h"
#include "base/sitecfg.h"
#include "proto_kill.h"
#include "sluice/hash.h"
#include "sluice/ordmap.h"
#include "sluice/sluice.h"
#include "store/store.h"

/* What the domain asks of the agent port. Set at start-up (main.c); every
 * message leaves only after the iteration's COMMIT, in the order decided.
 * A message for a node whose agent is not connected is dropped: the agent's
 * next hello rebuilds what it still needs. */
typedef struct ctl_outbound {
    void *ud;
    /* Launch task i of j on its node (j->tasks[i].node), as attempt
     * j->tasks[i].attempt. 0, or SL_EOVERFLOW when its message would not
     * fit in a line of the protocol (nothing is sent; the caller fails the
     * job). */
    int (*launch)(void *ud, const ctl_job_t *j, int32_t i);
    /* Stop task `task` of job `job` on node (SIGTERM, then SIGKILL after
     * the configured grace), if it runs attempt `attempt` there (< 0: any). */
    void (*kill)(void *ud, uint32_t node, uint64_t job, int32_t task, int64_t attempt);
    /* Stop task `task` (attempt `attempt`, < 0: any) of job `job` on node as
     * k says: its signal, SIGKILL grace_ms later, and whether it is
     * preempted (preemption, shrink and a drain's deadline; the agent then
     * writes the SIGKILL time into the task's SLUICE_PREEMPT_FILE first). */
    void (*stop)(void *ud, uint32_t node, uint64_t job, int32_t task, int64_t attempt,
                 const sl_proto_kill_t *k);
    /* The node was declared down: drop its connection and what waits on it. */
    void (*node_down)(void *ud, uint32_t node, const char *why);
} ctl_outbound_t;

/* What the domain tells the layer of arrays and dependencies (deps.c),
 * which registers these at start-up (ctl_deps_init): a job's first start,
 * and its end for good (succeeded, failed or cancelled; called once the
 * job's final state is set, before it joins the finished list). NULL
 * members: no one listens. */
typedef struct ctl_job_events {
    void *ud;
    void (*started)(void *ud, ctl_job_t *j);
    void (*ended)(void *ud, ctl_job_t *j);
} ctl_job_events_t;

/* Who watches jobs and nodes change (the event stream, net/events.c, which
 * registers these at start-up): one call per change, with a static name
 * of what happened ("job.started", "node.down"), after the change is made.
 * A watcher only notes the change: it renders and sends once the
 * iteration has committed. NULL members: no one watches. */
typedef struct ctl_watch {
    void *ud;
    void (*job)(void *ud, const ctl_job_t *j, const char *what);
    void (*node)(void *ud, uint32_t node, const char *what);
} ctl_watch_t;

struct ctl_deps;
/* What the preemption layer (preempt.c, above the jobs)
 * registers at start-up, so that the domain's cycle and task ends reach
 * it without calling upward. Each may be NULL (no preemption: the cycle
 * then still starts jobs). on_preempt and on_resize get the ctl_t as ud. */
struct ctl;
typedef struct ctl_preempt_hooks {
    sl_preempt_fn on_preempt;
    sl_resize_fn on_resize;
    /* Task i of j, which a shrink was stopping, has ended (ctl_task_ended). */
    void (*task_stopped)(struct ctl *c, struct ctl_job *j, int32_t i);
} ctl_preempt_hooks_t;

/* Counters for /metrics; each is written by the one layer named. */
typedef struct ctl_counters {
    uint64_t http_requests;  /* http */
    uint64_t http_errors;    /* http */
    uint64_t agent_messages; /* agentport */
    uint64_t tasks_launched; /* agentport: launch messages sent */
    uint64_t submissions;    /* the rest: the domain */
    uint64_t cycles;
    uint64_t cycle_us;
    uint64_t jobs_started;
    uint64_t tasks_exited;
    uint64_t node_failures;
    uint64_t requeues;
    uint64_t retries;        /* failed attempts put back for another (retry.c) */
    uint64_t jobs_forgotten; /* finished jobs dropped from memory (kept in SQLite) */
    ctl_port_counters_t api_port;   /* http: connections of the API port */
    ctl_port_counters_t agent_port; /* agentport: connections of the agent port */
    uint64_t replies_refused;       /* http: 503 for limits.reply_buffer */
} ctl_counters_t;

#define CTL_NAME_ROW (SL_MAX_MODELS + SL_MAX_POOLS) /* ctl_t.name_refs per tenant */

typedef struct ctl {
    ctl_config_t cfg;
    ctl_site_cfg_t site;       /* aliases, retries' defaults, notifications (sitecfg.h) */
    ctl_loop_t *loop;
    ctl_store_t *store;        /* the store (store/store.h), opened by ctl_domain_open */

    sl_cluster_t *cl;
    sl_sched_t *sched;
    bool sched_dirty;

    /* Jobs in memory, by id (jobtab.c), in the core's one hash table, so
     * memory follows the jobs held, not every id ever issued. Pending and
     * running jobs are always here; finished ones only while retained. */
    sl_hash_t jobs;
    /* The same jobs in id order (jobtab.c), so that a page of GET /v1/jobs
     * is a binary search and a walk, not a sort of every job. */
    sl_ordmap_t jobs_by_id;
    /* Ids of the retained finished jobs in the order they finished: a ring
     * (fin[fin_head], ... fin_len of them); trimming pops from the head. */
    uint64_t *fin;
    size_t fin_head, fin_len, fin_cap;
    /* The retained jobs whose spec has ttl_after_finished: a min-heap by
     * the time each leaves memory (jobtab.c), before job_retention. */
    struct ctl_ttl *ttl;
    size_t ttl_len, ttl_cap;
    size_t fin_gone;       /* entries of fin whose job the ttl dropped */
    uint64_t next_id;

    ctl_node_t **nodes;    /* by core node id (nodes.c) */
    size_t nnodes, nodes_cap;
    /* The node ids in name order for GET /v1/nodes' pages (nodes.c,
     * ctl_nodes_by_name), rebuilt when nodes were added since. */
    uint32_t *by_name;
    size_t nby_name;
    uint32_t hello_stamp;  /* the last reconciliation's stamp (ctl_task_t.seen) */
    /* Ids of jobs whose requeue waits for their lost tasks to be fenced
     * (jobs.c, ctl_job_t.requeue_after_mono_us); the sweep requeues them. */
    uint64_t *fenced;
    size_t nfenced, fenced_cap;

    /* Ids of the jobs in a retry's back-off (retry.c); the sweep queues
     * them again once it is over. */
    uint64_t *retrying;
    size_t nretrying, retrying_cap;
    struct ctl_notifier *notifier; /* notifications' queue and worker (base/notify.h); NULL: none */

    ctl_outbound_t out;
    ctl_job_events_t ev;      /* deps.c's listeners (above) */
    ctl_watch_t watch;        /* the event stream's (above) */
    struct ctl_deps *deps;    /* arrays and dependencies (deps.c); NULL before ctl_deps_init */
    ctl_preempt_hooks_t preempt; /* preempt.c's, set by ctl_preempt_init */
    struct ctl_health *health; /* GPU and node health (health.c); NULL until a report */
    ctl_counters_t n;
    ctl_obs_t obs; /* per-tenant completions and delay histograms (obs.h) */
    /* Preemptions by tenant and cause: the domain counts,
     * /metrics reads; [tenant * CTL_PREEMPT_NCAUSES + cause], grown on use. */
    uint64_t *preempt_counts;
    size_t npreempt_counts;
    /* Each tenant's jobs' references to each GPU model and pool id, for
     * the job share per tenant (spec.c): [tenant * CTL_NAME_ROW + id] for
     * models, [tenant * CTL_NAME_ROW + SL_MAX_MODELS + id] for pools,
     * grown on use; spec.c alone changes it. */
    int32_t *name_refs;
    size_t nname_refs;
    int64_t started_us;
    int64_t started_mono_us;
    int64_t resv_swept_us; /* the last reservations sweep (reservations.c) */
    /* The key that seals secrets' values (secrets.c, src/common/seal.h):
     * read from or made in the key file at start-up, wiped at the end. */
    unsigned char secret_key[32];
    bool has_secret_key;
    /* Why the last c->out.launch failed, when its adapter says (its
     * secrets could not be opened): the job's reason. "" otherwise. */
    char launch_why[200];
    /* The controller's epoch (docs/protocol.md, "Controllers and epochs"),
     * in every message to agents; only grows. Set through ctl_set_epoch. */
    uint64_t epoch;
    struct ctl_ha *ha;     /* HA mode's member (ha/ha.h); NULL: one controller */
} ctl_t;

/*
 * Sets the controller's epoch, which every message to agents carries from
 * now on (the agent port reads c->epoch as it encodes). A single
 * controller's comes from its store, bumped at every start
 * (ctl_store_epoch_bump, in ctl_recover once the state has loaded); in HA mode the election sets
 * the leader's term here. The epoch only grows: a lower one than the
 * current is refused (SL_EINVAL, nothing changed); the same one is 0.
 * O(1). (epoch.c)
 */
int ctl_set_epoch(struct ctl *c, uint64_t epoch);

/* Tell the watcher (ctl_watch_t) that j or node changed. O(1). */
static inline void ctl_watch_job(struct ctl *c, const ctl_job_t *j, const char *what) {
    if (c->watch.job)
        c->watch.job(c->watch.ud, j, what);
}
static inline void ctl_watch_node(struct ctl *c, uint32_t node, const char *what) {
    if (c->watch.node)
        c->watch.node(c->watch.ud, node, what);
}

#include "domain/spec.h" /* the validator's contract, on this header's layer */

#endif
