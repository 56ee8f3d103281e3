/*
 * config.h - sluiced's configuration (docs/config.md). The comparison of
 * secrets (tokens) that every adapter uses is base/token.h's.
 */
#ifndef SLUICE_CTL_CONFIG_H
#define SLUICE_CTL_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/cfgread.h"
#include "base/health_config.h"
#include "base/token.h"
#include "sluice/sluice.h"

#define CTL_DEFAULT_LISTEN "127.0.0.1:7070"
#define CTL_DEFAULT_AGENT_LISTEN "127.0.0.1:7071"
#define CTL_DEFAULT_STATE "sluiced.db"
#define CTL_MAX_MSG (1024 * 1024)
#define CTL_MASTER_PORT_BASE 29500
#define CTL_DEFAULT_JOB_RETENTION_MS (3600 * 1000)
#define CTL_DEFAULT_MAX_FINISHED_JOBS 10000
#define CTL_TRIM_PER_PASS 1000  /* finished jobs dropped from memory per pass at most */
/* limits: (docs/config.md); the defaults */
#define CTL_DEFAULT_MAX_CONNECTIONS 4096      /* per port */
#define CTL_DEFAULT_MAX_CONNECTIONS_PER_PEER 256
#define CTL_DEFAULT_HEADER_TIMEOUT_MS 10000
#define CTL_DEFAULT_BODY_TIMEOUT_MS 30000
#define CTL_DEFAULT_IDLE_TIMEOUT_MS 60000
#define CTL_DEFAULT_MAX_HEADER_BYTES 16384
#define CTL_DEFAULT_REPLY_BUFFER_BYTES (256LL << 20)
#define CTL_DEFAULT_MAX_PENDING_JOBS 100000   /* per tenant */
#define CTL_DEFAULT_MAX_ARRAY_SIZE 10001      /* elements and indexes 0..10000, as Slurm's MaxArraySize */
/* The runtime backfill assumes for a job without a time limit, unless its
 * pool says otherwise (scheduler.default_time_limit; docs/config.md): with
 * an estimate for every running job, a blocked job always gets a
 * reservation while its nodes are up, and holds back only those nodes. */
#define CTL_DEFAULT_TIME_LIMIT_S 86400
/* An agent-port connection that has not said a valid hello this long after
 * it was accepted is closed (config hello_timeout). */
#define CTL_DEFAULT_HELLO_TIMEOUT_MS 5000
/* A launch its agent has not acknowledged (reported started or failed)
 * this long after it was sent goes back to the queue (config
 * launch_timeout; 0: never). */
#define CTL_DEFAULT_LAUNCH_TIMEOUT_MS 30000

typedef struct ctl_tenant_cfg {
    char *name;
    int32_t weight;
    char *token;     /* may be NULL: only the admin can submit for it */
    bool has_quota;
    sl_res_t quota;
    char *user;      /* Unix user its tasks run as on the nodes; NULL: default_user */
    char *group;     /* and group; NULL: the user's primary group on the node */
    int64_t max_pending_jobs; /* 0: limits.max_pending_jobs */
} ctl_tenant_cfg_t;

/* A rule of oom_score_adj_by_priority: jobs of priority min_priority or
 * higher get value (docs/config.md, "Task OOM score"). */
typedef struct ctl_oom_rule {
    int32_t min_priority;
    int32_t value;
} ctl_oom_rule_t;

/* The oom_score_adj of tasks: the config's default, and the range a task's
 * may take. -1000 is left out because it makes a process unkillable by the
 * OOM killer: a task that leaks would then have the kernel kill everything
 * else on the node (the agent included) and finally panic or hang. The
 * lower end stays above CTL_AGENT_OOM_SCORE_ADJ, the agent's own default,
 * so that the agent is protected more strongly than any task: under memory
 * pressure the kernel picks a task, never the agent that reports it. */
#define CTL_DEFAULT_OOM_SCORE_ADJ (-500)
#define CTL_AGENT_OOM_SCORE_ADJ (-900)
#define CTL_OOM_SCORE_ADJ_MIN (CTL_AGENT_OOM_SCORE_ADJ + 1)
#define CTL_OOM_SCORE_ADJ_MAX 1000

/* preemption: (docs/config.md) bounds that hold unless the config says
 * otherwise: at most this many victims a minute, and a job preempted this
 * many times is left alone for protect seconds, so that no submit-and-
 * cancel loop can preempt another tenant's job again and again. */
#define CTL_DEFAULT_PREEMPT_MAX_PER_MINUTE 10
#define CTL_DEFAULT_PREEMPT_PROTECT_AFTER 3
#define CTL_DEFAULT_PREEMPT_PROTECT_MS (600 * 1000)

/* A priority class (docs/config.md, "Priority classes"): a job
 * that names it (priority_class) gets its value as its priority; may_preempt
 * lets such a job preempt strictly lower-priority ones; signal and grace
 * are what the class's own jobs get when they are preempted, shrunk or
 * stopped by a drain's deadline: the signal first, SIGKILL grace later. */
typedef struct ctl_prio_class {
    char *name;
    int32_t value;          /* -1,000,000..1,000,000, as a job's priority */
    bool may_preempt;       /* false unless the config says true */
    bool preemptible;       /* its jobs may be preempted or shrunk (true unless the config says false) */
    int32_t signal;         /* SIGTERM unless the config names another */
    int64_t grace_ms;       /* -1: kill_grace */
    /* The tenants whose jobs may name the class. None listed: every tenant
     * for a class without may_preempt, no tenant for one with it. */
    char **tenants;
    size_t ntenants;
} ctl_prio_class_t;

typedef struct ctl_config {
    char *listen;
    char *agent_listen;
    char *state;
    char *admin_token;
    char *cluster_token;
    char *monitoring_token;     /* reads /metrics and /v1/report for every tenant; NULL: none */
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
    /* pools[i]'s `dedicated` and `tenants` (docs/config.md, "pools"):
     * a dedicated pool runs only jobs that name it; with tenants, only
     * those tenants may name it. Parallel to pools. */
    struct ctl_pool_cfg {
        bool dedicated;
        char **tenants;
        size_t ntenants;
        int64_t default_time_limit_ms; /* 0: scheduler.default_time_limit */
        /* Memory of a job that asks for none (docs/config.md): per GPU of
         * a task with GPUs, else per CPU; 0: the scheduler's. */
        int64_t default_mem_per_gpu, default_mem_per_cpu;
        bool default_mem_node; /* default_memory_per_node: node: whole nodes */
    } *pool_cfg;
    int64_t default_mem_per_gpu, default_mem_per_cpu; /* scheduler.*; 0: the spec's 1Gi */
    char *log_level;
    bool init;                  /* create a missing or empty state database (--init) */
    char *default_user;         /* tenants without `user` run as this ("nobody") */
    bool allow_root;            /* may a tenant's user or group be root? (false) */
    /* Host paths an image job's `mounts` may bind into its container
     * (docs/containers.md): absolute prefixes; none: no mounts at all. */
    char **container_mounts;
    size_t ncontainer_mounts;
    /* limits: (docs/config.md, "Limits") */
    int64_t max_connections;          /* per port (API, agent) */
    int64_t max_connections_per_peer; /* per port and peer address */
    int64_t max_agent_connections;    /* the agent port's own limit; 0: max_connections */
    int64_t header_timeout_ms;        /* request line and headers, from open or the last reply */
    int64_t body_timeout_ms;          /* the body, from the end of the headers */
    int64_t idle_timeout_ms;          /* reads or writes without progress */
    int64_t max_header_bytes;         /* request line and headers */
    int64_t reply_buffer_bytes;       /* replies queued for all clients together */
    int64_t max_pending_jobs;         /* per tenant, unless the tenant says */
    int64_t max_array_size;           /* a job array's elements, and 1 + its largest index */
    /* TLS (docs/security.md): with tls_cert and tls_key both ports speak
     * TLS 1.2+; with tls_ca too, agents' client certificates are verified
     * as agent_client_cert says ("none", "optional" or "require"). */
    char *tls_cert;
    char *tls_key;
    char *tls_ca;
    char *agent_client_cert;
    /* Node credentials (agentport.c): names whose hellos are refused, and
     * how long a new agent-port connection may take to say hello. */
    char **revoked_nodes;
    size_t nrevoked;
    int64_t hello_timeout_ms;
    int64_t launch_timeout_ms; /* domain/launch.c; 0: launches never time out */
    /* oom_score_adj sent in every launch (docs/config.md, "Task OOM
     * score"): the rule of the highest min_priority at or below the job's
     * priority, else oom_score_adj. Rules sorted by min_priority, highest
     * first, each min_priority once. */
    int32_t oom_score_adj;
    ctl_oom_rule_t *oom_rules;
    size_t noom_rules;
    /* priority_classes, in the file's order, names unique. */
    ctl_prio_class_t *prio_classes;
    size_t nprio_classes;
    /* preemption (docs/config.md "Preemption"): the core's
     * sl_preempt_config_t, limits in the config's units. */
    bool preempt_priority;       /* true: classes that may preempt do */
    bool preempt_reclaim;        /* false: no fair-share reclaim */
    bool preempt_grow;           /* true: elastic jobs grow into free capacity */
    int64_t preempt_max_per_minute;  /* CTL_DEFAULT_PREEMPT_MAX_PER_MINUTE; 0: unbounded */
    int64_t preempt_protect_after;   /* CTL_DEFAULT_PREEMPT_PROTECT_AFTER; 0: never protected */
    int64_t preempt_protect_ms;
    bool default_may_preempt;    /* jobs without a class may preempt (false) */
    ctl_health_cfg_t health;     /* health: (docs/config.md "Health") */
    /* secrets: (docs/secrets.md): the sealing key's file (NULL: secrets.key
     * beside the state database), secrets per tenant, a secret's bytes. */
    char *secrets_key_file;
    int64_t secrets_max_per_tenant;
    int64_t secrets_max_bytes;
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

/* The Unix user and group the tasks of tenant run as (names, resolved on
 * each node by its agent): the tenant's own `user`, else default_user;
 * *group is the tenant's `group` or NULL (the user's primary group). An
 * unknown tenant gets default_user. Pointers are borrowed from cfg. Can't
 * fail; O(tenants). */
const char *ctl_config_task_user(const ctl_config_t *cfg, const char *tenant, const char **group);

/* The oom_score_adj of a task of a job of this priority (see
 * ctl_config_t.oom_rules). Can't fail; O(rules). */
int32_t ctl_config_oom_score_adj(const ctl_config_t *cfg, int32_t priority);

/* The priority class called name, or NULL. O(classes). */
const ctl_prio_class_t *ctl_config_prio_class(const ctl_config_t *cfg, const char *name);
/* Whether tenant's jobs may name class pc (see ctl_prio_class_t.tenants):
 * 0, or -1 with a message for the "priority_class" field in err
 * ("priority class \"urgent\" is for tenants a, b; tenant \"c\" may not use
 * it"). O(listed tenants). */
int ctl_prio_class_tenant_ok(const ctl_prio_class_t *pc, const char *tenant, char *err,
                             size_t errlen);
/* The grace of a job of class pc (NULL: a job without a class), in ms:
 * the class's own, else kill_grace. Can't fail. */
int64_t ctl_config_prio_grace_ms(const ctl_config_t *cfg, const ctl_prio_class_t *pc);

/* True when name is in the config's revoked_nodes. O(revoked names). */
bool ctl_node_revoked(const ctl_config_t *cfg, const char *name);

/* The taint of a dedicated pool's nodes, which the jobs naming the pool
 * tolerate: "sluice.io/dedicated=POOL:NoSchedule". */
#define CTL_DEDICATED_TAINT_KEY "sluice.io/dedicated"
/* The runtime estimate, in seconds, of a job without a time limit in pool
 * (NULL: a job naming none): the pool's default_time_limit, else the
 * scheduler's (0: none). Can't fail; O(pools). */
int64_t ctl_config_default_limit_s(const ctl_config_t *cfg, const char *pool);
/* The memory per task of a job in pool (NULL: the "default" pool's
 * entry, if any) that asks for none, with gpus whole GPUs and cpu_milli
 * CPUs per task: the pool's default_memory_per_gpu (tasks with GPUs) or
 * default_memory_per_cpu, else the scheduler's, else 0 (none set: the
 * spec's default stands). */
int64_t ctl_config_default_mem(const ctl_config_t *cfg, const char *pool, int64_t gpus,
                               int64_t cpu_milli);
/* Whether pool (NULL: "default") gives a job that asks for no memory the
 * whole node (pools[].default_memory_per_node: node, Slurm's --mem=0). */
bool ctl_config_default_mem_node(const ctl_config_t *cfg, const char *pool);
/* The configuration of pool (NULL: no pool configured by that name). O(pools). */
const struct ctl_pool_cfg *ctl_pool_cfg(const ctl_config_t *cfg, const char *pool);
/* A node's taints as the core sees them: taints (may be NULL) plus, for a
 * node of a dedicated pool, the pool's taint, written into buf. Returns buf,
 * or taints itself when there is nothing to add. Can't fail (truncates at
 * len). */
const char *ctl_node_taints(const ctl_config_t *cfg, const char *pool, const char *taints,
                            char *buf, size_t len);
/* Whether tenant may name pool: 0, or -1 with a message for the "pool"
 * field in err ("pool \"secure\" is dedicated to tenants a, b"). */
int ctl_pool_tenant_ok(const ctl_config_t *cfg, const char *pool, const char *tenant, char *err,
                       size_t errlen);

#endif
