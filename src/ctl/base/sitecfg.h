/*
 * sitecfg.h - what a site configures for the scripts it already has
 * (docs/config.md): the names its scripts use for pools, accounts and
 * QoS (aliases), the retries jobs get unless they say, and where job
 * notifications (sbatch --mail-type) are delivered.
 *
 * Read from the same YAML file as config.h's keys, after them
 * (ctl_sitecfg_load), so that config.c keeps the scheduler's own keys and
 * this file the site's.
 */
#ifndef SLUICE_CTL_SITECFG_H
#define SLUICE_CTL_SITECFG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/config.h"
#include "base/volcfg.h"

/* What an alias names. */
typedef enum ctl_alias_kind {
    CTL_ALIAS_POOL = 0,   /* pools[].aliases: Slurm partitions (-p) */
    CTL_ALIAS_TENANT,     /* tenants[].accounts: Slurm accounts (-A) */
    CTL_ALIAS_CLASS,      /* priority_classes[].aliases: Slurm QoS (-q) */
    CTL_ALIAS_NAMESPACE,  /* tenants[].namespaces: Kubernetes namespaces (metadata.namespace) */
    CTL_ALIAS_GPU_RESOURCE, /* gpu_resources: a Kubernetes extended resource -> a GPU model */
    CTL_ALIAS_NKINDS
} ctl_alias_kind_t;

typedef struct ctl_alias {
    ctl_alias_kind_t kind;
    char *alias;          /* the name a script gives */
    char *name;           /* the configured name it stands for */
} ctl_alias_t;

/* Defaults of the retries (docs/jobspec.md, "Retries"). */
#define CTL_DEFAULT_RETRY_BACKOFF_MS 10000          /* the first back-off, doubled per retry */
#define CTL_DEFAULT_RETRY_BACKOFF_MAX_MS (360 * 1000) /* its cap, as Kubernetes' 6 minutes */
#define CTL_MAX_RETRIES 1000
/* Notifications: events queued for delivery at most, and how long one
 * delivery (the command, or the webhook's request) may take. */
#define CTL_DEFAULT_NOTIFY_QUEUE 1000
#define CTL_DEFAULT_NOTIFY_TIMEOUT_MS 10000

/* Owns every string it holds. */
typedef struct ctl_site_cfg {
    ctl_alias_t *aliases;
    size_t naliases;
    /* scheduler.default_retries and scheduler.retry_backoff_max */
    int32_t default_retries;
    int64_t retry_backoff_max_ms;
    /* scheduler.unknown_pools: false ("reject", the default): a pool that
     * is neither configured nor any registered node's is refused at
     * submission; true ("accept"): such a job waits for a node of it. */
    bool accept_unknown_pools;
    /* notify: the command run with each event as JSON on its stdin
     * (/bin/sh -c), and/or the http:// URL POSTed the same JSON. */
    char *notify_command;
    char *notify_webhook;
    int64_t notify_queue;       /* events waiting at most; more are dropped (counted) */
    int64_t notify_timeout_ms;  /* one delivery at most */
    /* volumes: the node paths jobs' volumes may name (volcfg.h). */
    ctl_vol_cfg_t volumes;
} ctl_site_cfg_t;

void ctl_sitecfg_init(ctl_site_cfg_t *s);
void ctl_sitecfg_fini(ctl_site_cfg_t *s);
/* Reads the site's keys of the config file at path (already read by
 * ctl_config_load into cfg, whose names the aliases must name). 0, or -1
 * with "FILE:LINE: message" in err: an alias that names nothing, or is
 * itself a configured name or another alias of its kind; a notify.webhook
 * that is not http://HOST:PORT/PATH. */
int ctl_sitecfg_load(ctl_site_cfg_t *s, const ctl_config_t *cfg, const char *path, char *err,
                     size_t errlen);

/* The configured name that alias stands for (pools and classes exactly,
 * accounts without regard to case, as Slurm keeps them in lower case), or
 * NULL. The pointer is s's. O(aliases). */
const char *ctl_sitecfg_resolve(const ctl_site_cfg_t *s, ctl_alias_kind_t kind, const char *alias);
/* The aliases of name (kind) joined by ", " into buf ("" when none).
 * Returns buf. Can't fail (truncates). */
const char *ctl_sitecfg_aliases_of(const ctl_site_cfg_t *s, ctl_alias_kind_t kind,
                                   const char *name, char *buf, size_t len);

#endif
