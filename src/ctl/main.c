/*
 * main.c - sluiced: flags, configuration, and the start-up wiring of the
 * layers (src/ctl/LAYERS): the loop at the bottom, the store and the
 * domain on it, recovery from SQLite, then the adapters (agent port and
 * HTTP API) on top, each registering its hook with the loop.
 *
 * Besides the flush (loop.h), two kinds of timer run: the store's lazy
 * commit, and the sweep here, every node_timeout / 4 clamped to 20..500 ms,
 * which checks node liveness, time limits and log-request deadlines; it
 * never schedules by itself.
 */
#include <event2/event.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "net/agentport.h"
#include "domain/deps.h"
#include "net/http.h"
#include "domain/drain.h"
#include "domain/health.h"
#include "domain/preempt.h"
#include "domain/jobs.h"
#include "domain/launch.h"
#include "log.h"
#include "views/metrics.h"
#include "domain/recover.h"
#include "domain/reservations.h"
#include "domain/secrets.h"
#include "tls.h"
#include "net/steps.h"
#include "ha/ha.h"

/* Everything one sluiced process holds (one per process: main's static). */
typedef struct sluiced {
    ctl_loop_t loop;
    ctl_t c;
    ctl_agentport_t ap;
    ctl_http_t http;
    ctl_steps_t steps;
    struct event *sweep_ev;
    struct event *sig_ev[2];
    ctl_ha_t ha;           /* --ha: this member of the controllers' group */
} sluiced_t;

/* In HA mode nothing leaves the leader once its lease may have expired:
 * the replies and the agents' messages pass the fence first (ha.h). */
static bool replies_hook(void *ud) {
    sluiced_t *d = ud;
    if (d->c.ha)
        ctl_ha_check(d->c.ha);
    return ctl_http_flush(&d->http);
}

/* Before the flush's own work: what became durable since the last one. */
static bool release_hook(void *ud) {
    sluiced_t *d = ud;
    if (d->c.ha == NULL)
        return false; /* everything left in the flush that queued it */
    ctl_ha_check(d->c.ha);
    ctl_http_release(&d->http);
    return ctl_agentport_release(&d->ap);
}

static bool agents_hook(void *ud) {
    sluiced_t *d = ud;
    if (d->c.ha)
        ctl_ha_check(d->c.ha);
    return ctl_agentport_flush(&d->ap);
}

static void sweep_cb(evutil_socket_t fd, short what, void *ud) {
    sluiced_t *d = ud;
    ctl_sweep(&d->c);
    ctl_drain_sweep(&d->c); /* drains whose deadline passed */
    ctl_health_sweep(&d->c); /* fenced GPUs a passing check clears */
    ctl_resv_sweep(&d->c); /* reservations whose window began or ended */
    ctl_launch_sweep(&d->c); /* launches never acknowledged */
    ctl_http_logs_expire(&d->http);
}

static void signal_cb(evutil_socket_t sig, short what, void *ud) {
    sluiced_t *d = ud;
    sl_log(SL_LOG_INFO, "main", "signal=%d: shutting down", (int)sig);
    event_base_loopexit(d->loop.base, NULL);
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: sluiced [--config FILE] [--listen HOST:PORT] [--agent-listen HOST:PORT]\n"
            "               [--state DB] [--init] [--insecure] [--help] [--version]\n"
            "               [--ha --etcd URLS --name NAME --advertise-api URL\n"
            "                --advertise-agent HOST:PORT --lease-ttl S --ha-prefix P\n"
            "                --snapshot-every N --commit-pipeline N]\n"
            "       sluiced backup FILE [--state DB | --config FILE]\n"
            "       sluiced hash-token < TOKEN\n"
            "       sluiced node-token NAME [--config FILE]\n"
            "\n"
            "The Sluice controller: HTTP/JSON API, agent protocol, SQLite state.\n"
            "\n"
            "  --config FILE          YAML configuration (docs/config.md)\n"
            "  --listen HOST:PORT     HTTP API address (default %s)\n"
            "  --agent-listen H:P     agent protocol address (default %s)\n"
            "  --state DB             SQLite database (default ./%s)\n"
            "  --init                 create the database if it is missing or empty\n"
            "                         (without it sluiced refuses such a file)\n"
            "  --insecure             allow plain TCP on an address other than loopback\n"
            "  --ha                   one member of a group of controllers on etcd (docs/ha.md):\n"
            "                         the leader serves, the others stand by with a warm copy\n"
            "  --etcd URLS            etcd endpoints, http://HOST:PORT,... (default\n"
            "                         http://127.0.0.1:2379)\n"
            "  --name NAME            this member's name (default: the host name)\n"
            "  --advertise-api URL    the API URL followers redirect to (default http://LISTEN)\n"
            "  --advertise-agent H:P  the agent address followers redirect to (default\n"
            "                         the agent listen address)\n"
            "  --lease-ttl S          the leader's lease in seconds, 2..60 (default 3)\n"
            "  --ha-prefix P          etcd key prefix (default /sluice/)\n"
            "  --snapshot-every N     log entries between snapshots (default 10000)\n"
            "  --commit-pipeline N    log transactions in flight to etcd, 1..8 (default %d)\n"
            "\n"
            "backup FILE writes a consistent copy of the database to the new file FILE\n"
            "while sluiced runs (SQLite's online backup API), then checks it.\n"
            "hash-token reads a token on stdin and prints its sha256: form, which the\n"
            "config accepts in place of the token (docs/security.md).\n"
            "\n"
            "Environment: SLUICE_LOG=error|warn|info|debug, SLUICE_LOG_FLAGS=sched,agent,...\n"
            "\nRoutes (Authorization: Bearer TOKEN):\n",
            CTL_DEFAULT_LISTEN, CTL_DEFAULT_AGENT_LISTEN, CTL_DEFAULT_STATE,
            CTL_HA_PIPELINE_DEFAULT);
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

/* `sluiced node-token NAME [--config FILE]`: prints the node token of NAME
 * (config.h, ctl_node_token), derived from the configuration's
 * cluster_token, for that node's `sluice-agent --token-file`. */
static int node_token_main(int argc, char **argv) {
    static const struct option opts[] = {{"config", required_argument, NULL, 'c'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *config = NULL;
    int o;
    optind = 1;
    while ((o = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
        switch (o) {
        case 'c': config = optarg; break;
        case 'h':
            printf("usage: sluiced node-token NAME [--config FILE]\n\n"
                   "Prints the credential of node NAME, derived from the configuration's\n"
                   "cluster_token; give it to that node's agent with --token-file (mode 0600).\n");
            return 0;
        default:
            fprintf(stderr, "usage: sluiced node-token NAME [--config FILE]\n");
            return 2;
        }
    }
    if (optind + 1 != argc) {
        fprintf(stderr, "usage: sluiced node-token NAME [--config FILE]\n");
        return 2;
    }
    const char *name = argv[optind];
    ctl_config_t cfg;
    char err[512], tok[CTL_NODE_TOKEN_LEN + 1];
    ctl_config_init(&cfg);
    int rc = 2;
    if (config && ctl_config_load(&cfg, config, err, sizeof err) < 0) {
        fprintf(stderr, "sluiced: %s\n", err);
    } else if (cfg.cluster_token == NULL || cfg.cluster_token[0] == '\0') {
        fprintf(stderr, "sluiced: node-token: %s has no cluster_token, from which node tokens "
                "derive\n", config ? config : "the default configuration");
    } else if (ctl_token_is_hashed(cfg.cluster_token)) {
        fprintf(stderr, "sluiced: node-token: %s stores cluster_token hashed (sha256:), from which "
                "no node token can be derived; give the plain cluster_token to derive node tokens "
                "(docs/security.md)\n", config ? config : "the configuration");
    } else if (ctl_node_token(cfg.cluster_token, name, tok, sizeof tok) != 0) {
        fprintf(stderr, "sluiced: node-token: \"%s\" is not a node name (1..%d characters)\n",
                name, SL_NAME_MAX - 1);
    } else {
        if (ctl_node_revoked(&cfg, name))
            fprintf(stderr, "sluiced: node-token: warning: node %s is in revoked_nodes\n", name);
        printf("%s\n", tok);
        rc = 0;
    }
    ctl_config_fini(&cfg);
    return rc;
}

static void teardown(sluiced_t *d) {
    SSL_CTX *tls[2] = {d->ap.tls, d->http.tls};
    if (d->c.store && d->c.ha) {
        /* The replies and launches still waiting for their log entries
         * leave once those are in etcd, rather than never. */
        ctl_store_commit(d->c.store);
        replies_hook(d);
        agents_hook(d);
    }
    ctl_agentport_fini(&d->ap);
    ctl_steps_fini(&d->steps);
    ctl_http_fini(&d->http);
    SSL_CTX_free(tls[0]);
    SSL_CTX_free(tls[1]);
    ctl_domain_close(&d->c);
    ctl_health_fini(&d->c);
    ctl_deps_fini(&d->c);
    if (d->sweep_ev)
        event_free(d->sweep_ev);
    for (int i = 0; i < 2; i++)
        if (d->sig_ev[i])
            event_free(d->sig_ev[i]);
    ctl_ha_fini(&d->ha);
    ctl_loop_fini(&d->loop);
    ctl_sitecfg_fini(&d->c.site);
    ctl_config_fini(&d->c.cfg);
}

/* ---- --ha ---- */

/* Joins the group and stands by until this member leads, with the state
 * file brought up to the record's last entry (ha.h). The first leader of
 * an empty record may create its file (as --init). 0, or -1 with err. */
static int ha_start(sluiced_t *d, ctl_ha_config_t *hc, char *err, size_t errlen) {
    static char host[256], api[300];
    ctl_config_t *cfg = &d->c.cfg;
    if (hc->name == NULL) {
        if (gethostname(host, sizeof host) != 0)
            snprintf(host, sizeof host, "sluiced");
        host[sizeof host - 1] = '\0';
        hc->name = host;
    }
    if (hc->api_url == NULL) {
        snprintf(api, sizeof api, "%s://%s", d->http.tls ? "https" : "http", cfg->listen);
        hc->api_url = api;
    }
    if (hc->agent_addr == NULL)
        hc->agent_addr = cfg->agent_listen;
    hc->state = cfg->state;
    hc->listen = cfg->listen;
    hc->agent_listen = cfg->agent_listen;
    if (ctl_ha_init(&d->ha, d->loop.base, hc, err, errlen) < 0 ||
        ctl_ha_standby(&d->ha, err, errlen) < 0)
        return -1;
    if (!d->ha.have_snapshot)
        cfg->init = true; /* the record is empty: this file starts it */
    return 0;
}

/* ---- sluiced backup ---- */

/* `sluiced backup FILE [--state DB | --config CONFIG]`: argv[0] is
 * "backup". Exit 0 with what was written, 2 for bad usage or a missing
 * source, 1 when the copy failed. */
static int cmd_backup(int argc, char **argv) {
    static const struct option opts[] = {{"state", required_argument, NULL, 's'},
                                         {"config", required_argument, NULL, 'c'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *state = NULL, *config = NULL;
    int o;
    optind = 1;
    while ((o = getopt_long(argc, argv, "s:c:h", opts, NULL)) != -1) {
        switch (o) {
        case 's': state = optarg; break;
        case 'c': config = optarg; break;
        case 'h':
            printf("usage: sluiced backup FILE [--state DB | --config FILE]\n\n"
                   "Copies the state database (--state, or the config's state, or ./%s)\n"
                   "to the new file FILE while sluiced may run, then checks the copy with\n"
                   "PRAGMA quick_check. To restore: stop sluiced, copy FILE over the\n"
                   "database, start sluiced.\n", CTL_DEFAULT_STATE);
            return 0;
        default: return 2;
        }
    }
    if (optind != argc - 1 || (state && config)) {
        fprintf(stderr, "usage: sluiced backup FILE [--state DB | --config FILE]\n");
        return 2;
    }
    const char *dst = argv[optind];
    ctl_config_t cfg;
    ctl_config_init(&cfg);
    char err[640];
    if (config && ctl_config_load(&cfg, config, err, sizeof err) < 0) {
        fprintf(stderr, "sluiced backup: %s\n", err);
        ctl_config_fini(&cfg);
        return 2;
    }
    const char *src = state ? state : cfg.state ? cfg.state : CTL_DEFAULT_STATE;
    ctl_store_backup_stats_t st;
    int rc = ctl_store_backup(src, dst, &st, err, sizeof err);
    if (rc < 0)
        fprintf(stderr, "sluiced backup: %s\n", err);
    else
        printf("sluiced backup: wrote %s from %s: %lld pages, %.1f MiB in %lld steps, %lld jobs "
               "(%lld pending or running); quick_check ok\n",
               dst, src, (long long)st.pages, (double)st.bytes / (1024.0 * 1024.0),
               (long long)st.steps, (long long)st.jobs, (long long)st.active);
    ctl_config_fini(&cfg);
    return rc < 0 ? 1 : 0;
}

/* ---- TLS and the --insecure rule (docs/security.md) ---- */

/* `sluiced hash-token`: the first line of stdin, without its line end, as
 * "sha256:<hex>". 0, or 2 when stdin has no token. */
static int hash_token(void) {
    char line[4096];
    if (fgets(line, sizeof line, stdin) == NULL) {
        fprintf(stderr, "sluiced hash-token: no token on stdin\n");
        return 2;
    }
    line[strcspn(line, "\r\n")] = '\0';
    if (line[0] == '\0') {
        fprintf(stderr, "sluiced hash-token: the token on stdin is empty\n");
        return 2;
    }
    char hex[65];
    sl_sha256_hex(line, strlen(line), hex);
    printf("sha256:%s\n", hex);
    return 0;
}

/* True when every address HOST of "HOST:PORT" resolves to is a loopback
 * address (127.0.0.0/8, ::1); a host that does not resolve is not. */
static bool listen_is_loopback(const char *hostport) {
    char host[256];
    const char *colon = strrchr(hostport, ':');
    size_t n = colon ? (size_t)(colon - hostport) : strlen(hostport);
    if (n >= sizeof host)
        return false;
    memcpy(host, hostport, n);
    host[n] = '\0';
    if (n >= 2 && host[0] == '[' && host[n - 1] == ']') {
        memmove(host, host + 1, n - 2);
        host[n - 2] = '\0';
    }
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
    if (host[0] == '\0' || getaddrinfo(host, NULL, &hints, &res) != 0)
        return false;
    bool lo = true;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        if (ai->ai_family == AF_INET)
            lo = lo && (ntohl(((struct sockaddr_in *)ai->ai_addr)->sin_addr.s_addr) >> 24) == 127;
        else if (ai->ai_family == AF_INET6)
            lo = lo && IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr);
        else
            lo = false;
    }
    freeaddrinfo(res);
    return lo;
}

/* Builds the TLS context of both ports from the config (none without
 * tls_cert) and refuses plain TCP on a non-loopback address unless
 * insecure. 0, or -1 with a message in err. */
static int tls_setup(sluiced_t *d, bool insecure, char *err, size_t errlen) {
    const ctl_config_t *cfg = &d->c.cfg;
    if (cfg->tls_cert == NULL) {
        const char *addrs[2] = {cfg->listen, cfg->agent_listen};
        const char *keys[2] = {"listen", "agent_listen"};
        for (int i = 0; i < 2 && !insecure; i++) {
            if (!listen_is_loopback(addrs[i])) {
                snprintf(err, errlen,
                         "%s: %s is not a loopback address and TLS is off: set tls_cert and "
                         "tls_key (docs/security.md), or pass --insecure to serve plain TCP there",
                         keys[i], addrs[i]);
                return -1;
            }
        }
        if (insecure)
            sl_log(SL_LOG_WARN, "main", "--insecure: tokens and jobs cross the network in clear text");
        return 0;
    }
    sl_tls_peer_mode_t mode = SL_TLS_PEER_NONE;
    if (cfg->agent_client_cert && strcmp(cfg->agent_client_cert, "require") == 0)
        mode = SL_TLS_PEER_REQUIRE;
    else if (cfg->agent_client_cert && strcmp(cfg->agent_client_cert, "optional") == 0)
        mode = SL_TLS_PEER_OPTIONAL;
    /* The API asks for no client certificate: its clients use tokens. */
    d->http.tls = sl_tls_server_ctx(cfg->tls_cert, cfg->tls_key, NULL, SL_TLS_PEER_NONE, err, errlen);
    if (d->http.tls == NULL)
        return -1;
    d->ap.tls = sl_tls_server_ctx(cfg->tls_cert, cfg->tls_key, cfg->tls_ca, mode, err, errlen);
    if (d->ap.tls == NULL)
        return -1;
    d->ap.certs_bind_name = mode == SL_TLS_PEER_REQUIRE;
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "backup") == 0)
        return cmd_backup(argc - 1, argv + 1);
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'},  {"listen", required_argument, NULL, 'l'},
        {"agent-listen", required_argument, NULL, 'a'}, {"state", required_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},          {"version", no_argument, NULL, 'V'},
        {"init", no_argument, NULL, 'I'},          {"insecure", no_argument, NULL, 'X'},
        {"ha", no_argument, NULL, 'H'},            {"etcd", required_argument, NULL, 'E'},
        {"name", required_argument, NULL, 'N'},    {"advertise-api", required_argument, NULL, 'A'},
        {"advertise-agent", required_argument, NULL, 'G'},
        {"lease-ttl", required_argument, NULL, 'T'}, {"ha-prefix", required_argument, NULL, 'P'},
        {"snapshot-every", required_argument, NULL, 'S'},
        {"commit-pipeline", required_argument, NULL, 'W'},
        {NULL, 0, NULL, 0}};
    bool ha = false;
    ctl_ha_config_t hc = {.endpoints = "http://127.0.0.1:2379", .prefix = "/sluice/", .ttl_s = 3,
                          .snapshot_every = 10000, .pipeline = CTL_HA_PIPELINE_DEFAULT,
                          .argv = argv};
    const char *config = NULL, *listen = NULL, *agent_listen = NULL, *state = NULL;
    bool init = false, insecure = false;
    if (argc == 2 && strcmp(argv[1], "hash-token") == 0)
        return hash_token();
    int o;
    if (argc > 1 && strcmp(argv[1], "node-token") == 0)
        return node_token_main(argc - 1, argv + 1);
    while ((o = getopt_long(argc, argv, "c:l:a:s:hV", opts, NULL)) != -1) {
        switch (o) {
        case 'c': config = optarg; break;
        case 'l': listen = optarg; break;
        case 'a': agent_listen = optarg; break;
        case 's': state = optarg; break;
        case 'X': insecure = true; break;
        case 'h': usage(stdout); return 0;
        case 'V': printf("sluiced %s\n", SLUICE_VERSION); return 0;
        case 'I': init = true; break;
        case 'H': ha = true; break;
        case 'E': hc.endpoints = optarg; break;
        case 'N': hc.name = optarg; break;
        case 'A': hc.api_url = optarg; break;
        case 'G': hc.agent_addr = optarg; break;
        case 'P': hc.prefix = optarg; break;
        case 'T':
            hc.ttl_s = atoi(optarg);
            if (hc.ttl_s < 2 || hc.ttl_s > 60) {
                fprintf(stderr, "sluiced: --lease-ttl: must be 2 to 60 seconds, not \"%s\"\n",
                        optarg);
                return 2;
            }
            break;
        case 'S': hc.snapshot_every = strtoull(optarg, NULL, 10); break;
        case 'W': {
            char *end = NULL;
            long n = strtol(optarg, &end, 10);
            if (end == optarg || *end != '\0' || n < 1 || n > CTL_LOGW_DEPTH_MAX) {
                fprintf(stderr, "sluiced: --commit-pipeline: must be 1 to %d log transactions "
                        "in flight, not \"%s\"\n", CTL_LOGW_DEPTH_MAX, optarg);
                return 2;
            }
            hc.pipeline = (int)n;
            break;
        }
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
    static sluiced_t sluiced; /* one per process; zeroed */
    sluiced_t *d = &sluiced;
    ctl_t *c = &d->c;
    char err[512];
    ctl_config_init(&c->cfg);
    ctl_sitecfg_init(&c->site);
    if (config && (ctl_config_load(&c->cfg, config, err, sizeof err) < 0 ||
                   ctl_sitecfg_load(&c->site, &c->cfg, config, err, sizeof err) < 0)) {
        fprintf(stderr, "sluiced: %s\n", err);
        ctl_sitecfg_fini(&c->site);
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
    c->cfg.init = c->cfg.init || init;
    ctl_config_finish(&c->cfg);
    if (ctl_config_check(&c->cfg, err, sizeof err) < 0) {
        fprintf(stderr, "sluiced: %s%s%s\n", config ? config : "", config ? ": " : "", err);
        ctl_sitecfg_fini(&c->site);
        ctl_config_fini(&c->cfg);
        return 2;
    }
    if ((int64_t)c->cfg.heartbeat_s * 3000 > c->cfg.node_timeout_ms) {
        /* Agents must say something several times per node_timeout. */
        int32_t hb = (int32_t)(c->cfg.node_timeout_ms / 3000);
        c->cfg.heartbeat_s = hb < 1 ? 1 : hb;
        if (c->cfg.node_timeout_ms < 3000)
            sl_log(SL_LOG_WARN, "config",
                   "node_timeout=%gs is below 3 heartbeats of 1 s; agents may be declared down",
                   (double)c->cfg.node_timeout_ms / 1000);
    }
    c->next_id = 1;
    c->started_us = ctl_now_us();
    c->started_mono_us = ctl_mono_us();
    if (ctl_loop_init(&d->loop) < 0) {
        fprintf(stderr, "sluiced: cannot create the event loop\n");
        ctl_sitecfg_fini(&c->site);
        ctl_config_fini(&c->cfg);
        return 1;
    }
    c->loop = &d->loop;
    ctl_agentport_init(&d->ap, c); /* sets c->out, which recovery may use */
    ctl_http_init(&d->http, c);
    d->ap.logs_answer = ctl_http_logs_answer;
    d->ap.logs_gone = ctl_http_logs_gone;
    d->ap.logs_ud = &d->http;
    d->http.logs_send = ctl_agentport_logs;
    d->http.logs_ud = &d->ap;
    /* Job steps: srun's requests come through the HTTP routes, the agents'
     * step messages through the agent port, and go out through it. */
    ctl_steps_init(&d->steps, c, &d->http.conns);
    d->http.steps = &d->steps;
    d->ap.step_msg = ctl_steps_agent_msg;
    d->ap.step_ud = &d->steps;
    d->steps.send = ctl_agentport_send_line;
    d->steps.send_ud = &d->ap;
    /* The flush's fixed order (loop.h): release, cycle, commit, replies,
     * agents, trim. */
    ctl_loop_hook(&d->loop, CTL_HOOK_RELEASE, release_hook, d);
    ctl_loop_hook(&d->loop, CTL_HOOK_CYCLE, ctl_jobs_cycle, c);
    /* CTL_HOOK_COMMIT: once the store is open, below. */
    ctl_loop_hook(&d->loop, CTL_HOOK_REPLIES, replies_hook, d);
    ctl_loop_hook(&d->loop, CTL_HOOK_AGENTS, agents_hook, d);
    ctl_loop_hook(&d->loop, CTL_HOOK_TRIM, ctl_jobs_trim_hook, c);
    int rc = 1;
    /* The TLS files and the --insecure rule are configuration: checked
     * before the state database is opened (or created). */
    if (tls_setup(d, insecure, err, sizeof err) < 0) {
        fprintf(stderr, "sluiced: %s\n", err);
        rc = 2;
        goto out;
    }
    /* A member without the group's sealing key could never lead: refused
     * before it stands by, not at its takeover. */
    if (ha && ctl_secrets_open(c, true, err, sizeof err) < 0) {
        fprintf(stderr, "sluiced: --ha: %s\n", err);
        rc = 2;
        goto out;
    }
    if (ha)
        ctl_secrets_close(c); /* opened again when it leads */
    if (ha && ha_start(d, &hc, err, sizeof err) < 0) {
        fprintf(stderr, "sluiced: --ha: %s\n", err);
        rc = 2;
        goto out;
    }
    if (ha) {
        c->ha = &d->ha; /* before the domain opens: the epoch comes from etcd */
        /* This controller starts when it leads, not when it began to stand
         * by: recovered nodes get node_timeout from now to come back. */
        c->started_us = ctl_now_us();
        c->started_mono_us = ctl_mono_us();
    }
    if (ctl_domain_open(c, err, sizeof err) < 0) {
        fprintf(stderr, "sluiced: %s\n", err);
        rc = 2;
        goto out;
    }
    if (ha) {
        /* Leader: every group commit from here on is in etcd before its
         * replies and launches leave. */
        if (ctl_ha_lead(&d->ha, c->store, &d->loop, err, sizeof err) < 0) {
            fprintf(stderr, "sluiced: --ha: %s\n", err);
            rc = 2;
            goto out;
        }
        if (ctl_set_epoch(c, d->ha.epoch) < 0) {
            fprintf(stderr, "sluiced: --ha: the leader's epoch %llu is below this controller's\n",
                    (unsigned long long)d->ha.epoch);
            rc = 2;
            goto out;
        }
    }
    ctl_loop_hook(&d->loop, CTL_HOOK_COMMIT, ctl_store_flush, c->store);
    ctl_deps_init(c); /* arrays and dependencies: before recovery, which rebuilds them */
    ctl_preempt_init(c); /* the core's preemptions and resizes, carried out */
    if (ctl_recover(c, err, sizeof err) < 0) {
        /* A row that cannot be read is damage quick_check did not see. */
        fprintf(stderr,
                "sluiced: %s: cannot load state: %s; sluiced will not start on a partly readable "
                "database. Restore the last copy made with `sluiced backup` (copy it over %s), "
                "or move the file away and start with --init for an empty cluster\n",
                c->cfg.state, err, c->cfg.state);
        rc = 2;
        goto out;
    }
    if (ctl_http_listen(&d->http, err, sizeof err) < 0 ||
        ctl_agentport_listen(&d->ap, err, sizeof err) < 0) {
        fprintf(stderr, "sluiced: %s\n", err);
        goto out;
    }
    d->sweep_ev = event_new(d->loop.base, -1, EV_PERSIST, sweep_cb, d);
    int64_t sweep_ms = c->cfg.node_timeout_ms / 4;
    if (sweep_ms > 500)
        sweep_ms = 500;
    if (sweep_ms < 20)
        sweep_ms = 20;
    struct timeval tv = {(time_t)(sweep_ms / 1000), (suseconds_t)(sweep_ms % 1000) * 1000};
    event_add(d->sweep_ev, &tv);
    d->sig_ev[0] = evsignal_new(d->loop.base, SIGINT, signal_cb, d);
    d->sig_ev[1] = evsignal_new(d->loop.base, SIGTERM, signal_cb, d);
    event_add(d->sig_ev[0], NULL);
    event_add(d->sig_ev[1], NULL);
    sl_log(SL_LOG_INFO, "main", "sluiced %s listen=%s agent_listen=%s state=%s queue=%s placement=%s "
           "backfill=%s tenants=%zu tls=%s",
           SLUICE_VERSION, c->cfg.listen, c->cfg.agent_listen, c->cfg.state, c->cfg.queue,
           c->cfg.placement, c->cfg.backfill, c->cfg.ntenants, d->http.tls ? "on" : "off");
    ctl_loop_kick(&d->loop);
    event_base_dispatch(d->loop.base);
    rc = 0;
out:
    teardown(d);
    return rc;
}
