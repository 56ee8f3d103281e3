/*
 * main.c - sluiced: flags, start-up (config, core, recovery from SQLite,
 * listeners) and the one event loop.
 *
 * The loop's only scheduling trigger is ctl_kick: any handler that changes
 * something arms the flush event, which libevent runs after the I/O
 * callbacks already queued in the same iteration (Redis's beforeSleep). It
 * runs one scheduling cycle if needed, commits the iteration's transaction
 * and then releases replies and agent messages (see ctl.h), then drops
 * finished jobs past their retention from memory. A 500 ms timer checks
 * node liveness and time limits; it never schedules by itself.
 */
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl.h"
#include "log.h"

int64_t ctl_now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t ctl_mono_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void ctl_kick(ctl_t *c) {
    if (c->flush_armed || c->flush_ev == NULL)
        return;
    c->flush_armed = true;
    event_active(c->flush_ev, EV_TIMEOUT, 0);
}

static void flush_cb(evutil_socket_t fd, short what, void *ud) {
    ctl_t *c = ud;
    ctl_sched_run(c);
    if (c->txn_urgent)
        ctl_store_commit(c);
    ctl_http_flush(c);
    ctl_agent_flush(c);
    /* After the commit and the replies that may show them. */
    bool more = ctl_jobs_trim(c, ctl_now_us(), CTL_TRIM_PER_PASS) == CTL_TRIM_PER_PASS;
    c->flush_armed = false;
    if (more || c->sched_dirty || c->txn_urgent || c->nreplies || c->nflushq)
        ctl_kick(c);
}

static void lazy_cb(evutil_socket_t fd, short what, void *ud) {
    ctl_store_commit(ud);
}

static void sweep_cb(evutil_socket_t fd, short what, void *ud) {
    ctl_sweep(ud);
}

static void signal_cb(evutil_socket_t sig, short what, void *ud) {
    ctl_t *c = ud;
    sl_log(SL_LOG_INFO, "main", "signal=%d: shutting down", (int)sig);
    event_base_loopexit(c->base, NULL);
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: sluiced [--config FILE] [--listen HOST:PORT] [--agent-listen HOST:PORT]\n"
            "               [--state DB] [--help] [--version]\n"
            "\n"
            "The Sluice controller: HTTP/JSON API, agent protocol, SQLite state.\n"
            "\n"
            "  --config FILE          YAML configuration (docs/config.md)\n"
            "  --listen HOST:PORT     HTTP API address (default %s)\n"
            "  --agent-listen H:P     agent protocol address (default %s)\n"
            "  --state DB             SQLite database (default ./%s)\n"
            "\n"
            "Environment: SLUICE_LOG=error|warn|info|debug, SLUICE_LOG_FLAGS=sched,agent,...\n"
            "\nRoutes (Authorization: Bearer TOKEN):\n",
            CTL_DEFAULT_LISTEN, CTL_DEFAULT_AGENT_LISTEN, CTL_DEFAULT_STATE);
    if (f == stdout) {
        ctl_http_print_routes();
        printf("\nQueue policies:\n");
        for (const sl_queue_policy_t *const *q = sl_queue_policy_list(); q && *q; q++)
            printf("  %-10s %s\n", (*q)->name, (*q)->help ? (*q)->help : "");
        printf("\nPlacement policies:\n");
        for (const sl_place_policy_t *const *p = sl_place_policy_list(); p && *p; p++)
            printf("  %-10s %s\n", (*p)->name, (*p)->help ? (*p)->help : "");
        printf("\nBackfill: none, easy\n\nMetrics (GET /metrics):\n");
        ctl_metrics_print_help();
    }
}

static int setup_core(ctl_t *c, char *err, size_t errlen) {
    sl_cluster_create(&c->cl);
    sl_sched_config_t sc;
    sl_sched_config_init(&sc);
    sc.queue = c->cfg.queue;
    sc.placement = c->cfg.placement;
    sc.backfill = c->cfg.backfill;
    sc.seed = 1;
    sc.default_time_limit_us = c->cfg.default_time_limit_s * 1000000;
    sc.max_starts_per_cycle = c->cfg.max_starts_per_cycle;
    /* The typical task shapes come from what is submitted: the fragmentation-
     * aware placements (fgd, fgdbal) score against them. Cheap for the others. */
    sc.track_workload = true;
    char serr[256];
    if (sl_sched_create(&sc, c->cl, &c->sched, serr, sizeof serr) < 0) {
        snprintf(err, errlen, "scheduler: %s", serr);
        return -1;
    }
    for (size_t i = 0; i < c->cfg.ntenants; i++) {
        ctl_tenant_cfg_t *t = &c->cfg.tenants[i];
        sl_tenant_spec_t ts = {t->name, t->weight, t->has_quota ? t->quota : (sl_res_t){0, 0, 0}};
        int rc = sl_sched_add_tenant(c->sched, &ts);
        if (rc < 0) {
            snprintf(err, errlen, "tenant \"%s\": %s", t->name, sl_strerror(rc));
            return -1;
        }
    }
    for (size_t i = 0; i < c->cfg.npools; i++) {
        int rc = sl_cluster_pool_intern(c->cl, c->cfg.pools[i]);
        if (rc < 0) {
            snprintf(err, errlen, "pool \"%s\": %s", c->cfg.pools[i], sl_strerror(rc));
            return -1;
        }
    }
    return 0;
}

static void teardown(ctl_t *c) {
    ctl_store_close(c);
    for (size_t i = 0; i < c->jobmap_cap; i++)
        ctl_job_free(c->jobmap[i]);
    sl_free(c->jobmap);
    sl_free(c->fin);
    for (size_t i = 0; i < c->nnodes; i++) {
        ctl_node_t *n = c->nodes[i];
        if (n == NULL)
            continue;
        ctl_agent_close_node(c, (uint32_t)i);
        evbuffer_free(n->outq);
        sl_free(n->spec_json);
        sl_free(n);
    }
    sl_free(c->nodes);
    while (c->logreqs) {
        ctl_logreq_t *lr = c->logreqs;
        c->logreqs = lr->next;
        sl_free(lr); /* its HTTP request is freed with the server below */
    }
    sl_free(c->flushq);
    sl_free(c->replies);
    sl_sched_destroy(c->sched);
    sl_cluster_destroy(c->cl);
    if (c->agent_lst)
        evconnlistener_free(c->agent_lst);
    if (c->http)
        evhttp_free(c->http);
    if (c->flush_ev)
        event_free(c->flush_ev);
    if (c->lazy_ev)
        event_free(c->lazy_ev);
    if (c->sweep_ev)
        event_free(c->sweep_ev);
    for (int i = 0; i < 2; i++)
        if (c->sig_ev[i])
            event_free(c->sig_ev[i]);
    if (c->base)
        event_base_free(c->base);
    ctl_config_fini(&c->cfg);
}

int main(int argc, char **argv) {
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'},  {"listen", required_argument, NULL, 'l'},
        {"agent-listen", required_argument, NULL, 'a'}, {"state", required_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},          {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0}};
    const char *config = NULL, *listen = NULL, *agent_listen = NULL, *state = NULL;
    int o;
    while ((o = getopt_long(argc, argv, "c:l:a:s:hV", opts, NULL)) != -1) {
        switch (o) {
        case 'c': config = optarg; break;
        case 'l': listen = optarg; break;
        case 'a': agent_listen = optarg; break;
        case 's': state = optarg; break;
        case 'h': usage(stdout); return 0;
        case 'V': printf("sluiced %s\n", SLUICE_VERSION); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "sluiced: unexpected argument \"%s\"\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    sl_log_init_from_env();
    static ctl_t ctl; /* one per process; zeroed */
    ctl_t *c = &ctl;
    char err[512];
    ctl_config_init(&c->cfg);
    if (config && ctl_config_load(&c->cfg, config, err, sizeof err) < 0) {
        fprintf(stderr, "sluiced: %s\n", err);
        ctl_config_fini(&c->cfg);
        return 2;
    }
    if (c->cfg.log_level && getenv("SLUICE_LOG") == NULL) {
        sl_log_level_t lv;
        if (sl_log_parse_level(c->cfg.log_level, &lv) == 0)
            sl_log_set_level(lv);
    }
#define OVERRIDE(field, val)            \
    if (val) {                          \
        sl_free(c->cfg.field);          \
        c->cfg.field = sl_xstrdup(val); \
    }
    OVERRIDE(listen, listen)
    OVERRIDE(agent_listen, agent_listen)
    OVERRIDE(state, state)
#undef OVERRIDE
    ctl_config_finish(&c->cfg);
    if (ctl_config_check(&c->cfg, err, sizeof err) < 0) {
        fprintf(stderr, "sluiced: %s%s%s\n", config ? config : "", config ? ": " : "", err);
        ctl_config_fini(&c->cfg);
        return 2;
    }
    if ((int64_t)c->cfg.heartbeat_s * 3000 > c->cfg.node_timeout_ms) {
        /* Agents must say something several times per node_timeout. */
        int32_t hb = (int32_t)(c->cfg.node_timeout_ms / 3000);
        c->cfg.heartbeat_s = hb < 1 ? 1 : hb;
        if (c->cfg.node_timeout_ms < 3000)
            sl_log(SL_LOG_WARN, "config",
                   "node_timeout=%lldms is below 3 heartbeats of 1 s; agents may be declared down",
                   (long long)c->cfg.node_timeout_ms);
    }
    c->next_id = 1;
    c->first_active = 1;
    c->started_us = ctl_now_us();
    c->started_mono_us = ctl_mono_us();
    c->base = event_base_new();
    if (c->base == NULL) {
        fprintf(stderr, "sluiced: cannot create the event loop\n");
        return 1;
    }
    int rc = 1;
    if (setup_core(c, err, sizeof err) < 0 || ctl_store_open(c, err, sizeof err) < 0) {
        fprintf(stderr, "sluiced: %s\n", err);
        rc = 2;
        goto out;
    }
    c->flush_ev = event_new(c->base, -1, 0, flush_cb, c);
    c->lazy_ev = evtimer_new(c->base, lazy_cb, c);
    if (ctl_store_load(c) < 0) {
        fprintf(stderr, "sluiced: %s: cannot load state: %s\n", c->cfg.state, sqlite3_errmsg(c->db));
        goto out;
    }
    if (ctl_http_listen(c, err, sizeof err) < 0 || ctl_agent_listen(c, err, sizeof err) < 0) {
        fprintf(stderr, "sluiced: %s\n", err);
        goto out;
    }
    c->sweep_ev = event_new(c->base, -1, EV_PERSIST, sweep_cb, c);
    int64_t sweep_ms = c->cfg.node_timeout_ms / 4;
    if (sweep_ms > 500)
        sweep_ms = 500;
    if (sweep_ms < 20)
        sweep_ms = 20;
    struct timeval tv = {(time_t)(sweep_ms / 1000), (suseconds_t)(sweep_ms % 1000) * 1000};
    event_add(c->sweep_ev, &tv);
    c->sig_ev[0] = evsignal_new(c->base, SIGINT, signal_cb, c);
    c->sig_ev[1] = evsignal_new(c->base, SIGTERM, signal_cb, c);
    event_add(c->sig_ev[0], NULL);
    event_add(c->sig_ev[1], NULL);
    sl_log(SL_LOG_INFO, "main", "sluiced %s listen=%s agent_listen=%s state=%s queue=%s placement=%s "
           "backfill=%s tenants=%zu",
           SLUICE_VERSION, c->cfg.listen, c->cfg.agent_listen, c->cfg.state, c->cfg.queue,
           c->cfg.placement, c->cfg.backfill, c->cfg.ntenants);
    ctl_kick(c);
    event_base_dispatch(c->base);
    rc = 0;
out:
    teardown(c);
    return rc;
}
