/*
 * up.c - `sluice up` and `sluice down`: a one-node cluster in one command.
 *
 * `up` keeps everything in a state directory (default ./.sluice):
 * sluiced.yaml (written once with random tokens read from /dev/urandom,
 * then only read, so edits stick), sluiced.db, agent/ (the agent's workdir
 * with task logs), agent.token (the agent's node token, mode 0600, made by
 * `sluiced node-token` for its --token-file), cli.json (server URL, admin
 * token and default tenant, which every later `sluice` command here picks
 * up) and pids.
 *
 * TLS: a new sluiced.yaml turns TLS on for both ports, with certificates in
 * DIR/tls made by a small CA of `up`'s own (certgen.h, EC P-256): ca.crt
 * and ca.key, server.crt for 127.0.0.1 and localhost, agent.crt naming the
 * local node (the controller requires it: agent_client_cert: require).
 * Keys are mode 0600. Certificates that still verify, name the right host
 * or node and have more than a day left are reused; any other is made
 * anew (a new CA re-issues the others). cli.json then holds the https://
 * URL and the CA, so later commands here verify the controller with no
 * flag. A sluiced.yaml without tls_cert (written before, or edited) keeps
 * plain HTTP on loopback.
 *
 * Both daemons are started with posix_spawn in their own process group, so
 * that Ctrl-C reaches only `sluice up`, which then stops them in order: the
 * agent first (its tasks get SIGTERM and their exits are reported while the
 * controller still listens), then the controller. With --detach they get
 * their own session, log to DIR/sluiced.log and DIR/agent.log, and `sluice
 * down` stops them by the pids recorded in DIR/pids, after checking that
 * each pid still runs the same program.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "certgen.h"
#include "cli.h"
#include "osutil.h"
#include "quantity.h"
#include "yamldoc.h"

extern char **environ;

typedef struct up_paths {
    char dir[PATH_MAX];
    char cfg[PATH_MAX + 32];
    char cli[PATH_MAX + 32];
    char pids[PATH_MAX + 32];
    char db[PATH_MAX + 32];
    char agentdir[PATH_MAX + 32];
    char ctl_log[PATH_MAX + 32];
    char agent_log[PATH_MAX + 32];
    char tlsdir[PATH_MAX + 32];
    char ca_crt[PATH_MAX + 48], ca_key[PATH_MAX + 48];
    char srv_crt[PATH_MAX + 48], srv_key[PATH_MAX + 48];
    char agent_crt[PATH_MAX + 48], agent_key[PATH_MAX + 48];
} up_paths_t;

static int paths_init(cli_t *c, up_paths_t *p) {
    const char *d = cli_get(c, "dir");
    if (!d) d = ".sluice";
    if (sl_fs_mkdirs(d) != 0) {
        fprintf(stderr, "sluice %s: cannot create %s: %s\n", c->cmd->name, d, strerror(errno));
        return -1;
    }
    if (!realpath(d, p->dir)) {
        fprintf(stderr, "sluice %s: %s: %s\n", c->cmd->name, d, strerror(errno));
        return -1;
    }
    snprintf(p->cfg, sizeof p->cfg, "%s/sluiced.yaml", p->dir);
    snprintf(p->cli, sizeof p->cli, "%s/cli.json", p->dir);
    snprintf(p->pids, sizeof p->pids, "%s/pids", p->dir);
    snprintf(p->db, sizeof p->db, "%s/sluiced.db", p->dir);
    snprintf(p->agentdir, sizeof p->agentdir, "%s/agent", p->dir);
    snprintf(p->ctl_log, sizeof p->ctl_log, "%s/sluiced.log", p->dir);
    snprintf(p->agent_log, sizeof p->agent_log, "%s/agent.log", p->dir);
    snprintf(p->tlsdir, sizeof p->tlsdir, "%s/tls", p->dir);
    snprintf(p->ca_crt, sizeof p->ca_crt, "%s/ca.crt", p->tlsdir);
    snprintf(p->ca_key, sizeof p->ca_key, "%s/ca.key", p->tlsdir);
    snprintf(p->srv_crt, sizeof p->srv_crt, "%s/server.crt", p->tlsdir);
    snprintf(p->srv_key, sizeof p->srv_key, "%s/server.key", p->tlsdir);
    snprintf(p->agent_crt, sizeof p->agent_crt, "%s/agent.crt", p->tlsdir);
    snprintf(p->agent_key, sizeof p->agent_key, "%s/agent.key", p->tlsdir);
    return 0;
}

static int random_hex(char *out, size_t nbytes) {
    unsigned char raw[64];
    if (nbytes > sizeof raw) return -1;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, raw, nbytes);
    close(fd);
    if (n != (ssize_t)nbytes) return -1;
    for (size_t i = 0; i < nbytes; i++) sprintf(out + 2 * i, "%02x", raw[i]);
    return 0;
}

static int port_of(const char *listen) {
    const char *colon = listen ? strrchr(listen, ':') : NULL;
    return colon ? atoi(colon + 1) : 0;
}

/* Does pid still run the program named prog (basename of argv[0])? */
static int pid_is(pid_t pid, const char *prog) {
    char buf[4096];
    if (sl_proc_read(pid, "cmdline", buf, sizeof buf) == 0) return 0;
    const char *base = strrchr(buf, '/');
    base = base ? base + 1 : buf;
    return strcmp(base, prog) == 0;
}

typedef struct pidrec {
    pid_t ctl, agent;
} pidrec_t;

static int read_pids(const up_paths_t *p, pidrec_t *r) {
    r->ctl = r->agent = 0;
    FILE *f = fopen(p->pids, "re");
    if (!f) return -1;
    char name[64];
    int pid;
    while (fscanf(f, "%63s %d", name, &pid) == 2) {
        if (!strcmp(name, "sluiced")) r->ctl = pid;
        else if (!strcmp(name, "sluice-agent")) r->agent = pid;
    }
    fclose(f);
    return 0;
}

/* Path of a sibling program (next to this sluice binary), else its bare
 * name for a PATH search. */
static void sibling(const char *prog, char *out, size_t len) {
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        if (slash) {
            *slash = '\0';
            snprintf(out, len, "%s/%s", self, prog);
            if (access(out, X_OK) == 0) return;
        }
    }
    snprintf(out, len, "%s", prog);
}

static pid_t spawn(char *const argv[], char *const envp[], int detach, const char *logpath) {
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    sigset_t none, dflt;
    sigemptyset(&none);
    sigemptyset(&dflt);
    sigaddset(&dflt, SIGINT);
    sigaddset(&dflt, SIGTERM);
    sigaddset(&dflt, SIGCHLD);
    sigaddset(&dflt, SIGHUP);
    sigaddset(&dflt, SIGPIPE);
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&at);
    short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
    if (detach) {
        flags |= POSIX_SPAWN_SETSID;
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&fa, 1, logpath, O_WRONLY | O_CREAT | O_APPEND, 0644);
        posix_spawn_file_actions_adddup2(&fa, 1, 2);
    } else {
        flags |= POSIX_SPAWN_SETPGROUP;
        posix_spawnattr_setpgroup(&at, 0);
    }
    posix_spawnattr_setflags(&at, flags);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &dflt);
    pid_t pid = 0;
    int e = posix_spawnp(&pid, argv[0], &fa, &at, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (e != 0) {
        fprintf(stderr, "sluice up: cannot start %s: %s\n", argv[0], strerror(e));
        return -1;
    }
    return pid;
}

/* Writes node `name`'s token, as `sluiced node-token` derives it from the
 * configuration's cluster token, into path (mode 0600) for the agent's
 * --token-file: the agent holds a credential for its own name only, and
 * no token shows in ps or in any environment. 0, or -1 (said why). */
static int write_node_token(const char *ctl_bin, const char *cfg, const char *name,
                            const char *path) {
    unlink(path); /* a new file gets mode 0600, whatever the old one had */
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        fprintf(stderr, "sluice up: cannot create %s: %s\n", path, strerror(errno));
        return -1;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fd, 1);
    char *argv[] = {(char *)ctl_bin, "node-token", (char *)name, "--config", (char *)cfg, NULL};
    pid_t pid = 0;
    int st = 0, e = posix_spawnp(&pid, ctl_bin, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fd);
    if (e == 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0) return 0;
    fprintf(stderr, "sluice up: %s node-token %s failed%s%s\n", ctl_bin, name, e ? ": " : "",
            e ? strerror(e) : "");
    unlink(path);
    return -1;
}

/* Stops pid (ours or not): SIGTERM, then SIGKILL after timeout_ms. */
static void stop_pid(pid_t pid, int ours, int timeout_ms) {
    if (pid <= 0) return;
    if (kill(pid, SIGTERM) != 0) {
        if (ours) waitpid(pid, NULL, 0);
        return;
    }
    for (int waited = 0;; waited += 20) {
        if (ours) {
            if (waitpid(pid, NULL, WNOHANG) == pid) return;
        } else if (kill(pid, 0) != 0) {
            return;
        }
        if (waited >= timeout_ms) {
            kill(pid, SIGKILL);
            if (ours) waitpid(pid, NULL, 0);
            return;
        }
        usleep(20000);
    }
}

static double mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int write_file(const char *path, const char *text, mode_t mode) {
    char tmp[PATH_MAX + 40];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0) return -1;
    size_t n = strlen(text);
    int ok = write(fd, text, n) == (ssize_t)n;
    ok = (close(fd) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

typedef struct upcfg {
    char *listen, *agent_listen, *admin_token, *cluster_token, *tenant;
    char *tls_cert, *tls_ca; /* NULL: plain HTTP */
} upcfg_t;

static void upcfg_free(upcfg_t *u) {
    free(u->tls_cert);
    free(u->tls_ca);
    free(u->listen);
    free(u->agent_listen);
    free(u->admin_token);
    free(u->cluster_token);
    free(u->tenant);
}

static char *yget(const sl_yaml_node_t *root, const char *key) {
    const sl_yaml_node_t *v = sl_yaml_map_get(root, key);
    return v && v->kind == SL_YAML_SCALAR && v->value ? strdup(v->value) : NULL;
}

/* Reads the config `up` wrote before (or the user edited). */
static int read_cfg(const up_paths_t *p, upcfg_t *u) {
    sl_yaml_node_t *root = NULL;
    char err[512];
    if (sl_yaml_load_file(p->cfg, &root, err, sizeof err) < 0) {
        fprintf(stderr, "sluice up: %s: %s\n", p->cfg, err);
        return -1;
    }
    u->listen = yget(root, "listen");
    u->agent_listen = yget(root, "agent_listen");
    u->admin_token = yget(root, "admin_token");
    u->cluster_token = yget(root, "cluster_token");
    u->tls_cert = yget(root, "tls_cert");
    u->tls_ca = yget(root, "tls_ca");
    const sl_yaml_node_t *t = sl_yaml_map_get(root, "tenants");
    if (t && t->kind == SL_YAML_SEQ && t->n > 0) u->tenant = yget(t->items[0], "name");
    sl_yaml_free(root);
    if (!u->admin_token || !u->cluster_token) {
        fprintf(stderr, "sluice up: %s has no admin_token or cluster_token\n", p->cfg);
        return -1;
    }
    if (!u->listen) u->listen = strdup("127.0.0.1:7070");
    if (!u->agent_listen) u->agent_listen = strdup("127.0.0.1:7071");
    return 0;
}

static int parse_port(cli_t *c, const char *flag, int *out) {
    const char *v = cli_get(c, flag);
    char *end;
    long x = strtol(v, &end, 10);
    if (end == v || *end || x < 1 || x > 65535) {
        cli_usage_error(c, "--%s: \"%s\" is not a port from 1 to 65535", flag, v);
        return -1;
    }
    *out = (int)x;
    return 0;
}

static int wait_healthy(cli_t *c, pid_t ctl, double timeout) {
    double end = mono() + timeout;
    c->quiet_unreachable = 1;
    while (mono() < end) {
        json_t *out = NULL;
        long status = 0;
        int rc = cli_http(c, "GET", "/healthz", NULL, &status, &out, NULL);
        json_decref(out);
        if (rc == CLI_OK && status == 200) {
            c->quiet_unreachable = 0;
            return 0;
        }
        if (waitpid(ctl, NULL, WNOHANG) == ctl) {
            fprintf(stderr, "sluice up: sluiced exited during start-up\n");
            c->quiet_unreachable = 0;
            return -1;
        }
        usleep(20000);
    }
    c->quiet_unreachable = 0;
    fprintf(stderr, "sluice up: sluiced did not answer %s/healthz within %.0f s\n", c->server, timeout);
    return -1;
}

static int wait_node(cli_t *c, const char *name, pid_t agent, double timeout) {
    double end = mono() + timeout;
    while (mono() < end) {
        json_t *out = NULL;
        long status = 0;
        if (cli_http(c, "GET", "/v1/nodes", NULL, &status, &out, NULL) == CLI_OK && status == 200) {
            size_t i;
            json_t *n;
            json_array_foreach(json_object_get(out, "nodes"), i, n) {
                const char *nn = json_string_value(json_object_get(n, "name"));
                const char *st = json_string_value(json_object_get(n, "state"));
                if (nn && st && !strcmp(nn, name) && !strcmp(st, "up")) {
                    json_decref(out);
                    return 0;
                }
            }
        }
        json_decref(out);
        if (waitpid(agent, NULL, WNOHANG) == agent) {
            fprintf(stderr, "sluice up: sluice-agent exited during start-up\n");
            return -1;
        }
        usleep(20000);
    }
    fprintf(stderr, "sluice up: node %s did not register within %.0f s\n", name, timeout);
    return -1;
}

/* Days the certificates of `up` are valid: long, because the CA lives
 * only in this state directory and a cluster of one machine has nobody to
 * rotate them; delete DIR/tls to make new ones. */
#define UP_CERT_DAYS 3650

/* Makes (or keeps) the CA, the server certificate and the agent's for
 * node in DIR/tls. 0, or -1 with a message printed. */
static int ensure_certs(const up_paths_t *p, const char *node) {
    char err[512], san[400];
    if (sl_fs_mkdirs(p->tlsdir) != 0 || chmod(p->tlsdir, 0700) != 0) {
        fprintf(stderr, "sluice up: cannot create %s: %s\n", p->tlsdir, strerror(errno));
        return -1;
    }
    bool fresh = false;
    if (access(p->ca_key, R_OK) != 0 || !sl_certgen_usable(p->ca_crt, p->ca_crt, NULL)) {
        if (sl_certgen_ca("Sluice local CA", UP_CERT_DAYS, p->ca_key, p->ca_crt, err, sizeof err) < 0)
            goto fail;
        fresh = true;
    }
    if (fresh || access(p->srv_key, R_OK) != 0 ||
        !sl_certgen_usable(p->ca_crt, p->srv_crt, "localhost")) {
        if (sl_certgen_leaf(p->ca_key, p->ca_crt, SL_CERT_SERVER, "sluiced",
                            "DNS:localhost,IP:127.0.0.1,IP:::1", UP_CERT_DAYS, p->srv_key,
                            p->srv_crt, err, sizeof err) < 0)
            goto fail;
    }
    if (fresh || access(p->agent_key, R_OK) != 0 ||
        !sl_certgen_usable(p->ca_crt, p->agent_crt, node)) {
        snprintf(san, sizeof san, "DNS:%s", node);
        if (sl_certgen_leaf(p->ca_key, p->ca_crt, SL_CERT_CLIENT, node, san, UP_CERT_DAYS,
                            p->agent_key, p->agent_crt, err, sizeof err) < 0)
            goto fail;
    }
    return 0;
fail:
    fprintf(stderr, "sluice up: %s\n", err);
    return -1;
}

/*
 * The memory of a task that asks for none, as a site sets it for Slurm
 * (DefMemPerCPU = the node's memory over its CPUs; DefMemPerGPU = over its
 * GPUs): for this machine, from --memory, --cpus and --gpus where given,
 * else what it has. The scheduler: section of a new config, in MiB.
 */
static void up_mem_defaults(cli_t *c, char *buf, size_t len) {
    int64_t mem = (int64_t)sysconf(_SC_PHYS_PAGES) * (int64_t)sysconf(_SC_PAGESIZE), cpus = 0, v;
    char err[128];
    if (cli_has(c, "memory") && sl_qty_parse(cli_get(c, "memory"), SL_QTY_MEM, &v, err, sizeof err) == 0)
        mem = v;
    if (cli_has(c, "cpus") && sl_qty_parse(cli_get(c, "cpus"), SL_QTY_CPU, &v, err, sizeof err) == 0)
        cpus = v / 1000;
    if (cpus <= 0)
        cpus = sysconf(_SC_NPROCESSORS_ONLN);
    long gpus = cli_has(c, "gpus") ? strtol(cli_get(c, "gpus"), NULL, 10) : 0;
    buf[0] = '\0';
    if (mem <= 0 || cpus <= 0)
        return;
    int n = snprintf(buf, len, "# Memory of a task that asks for none: this machine's memory over its\n"
                     "# CPUs%s (docs/config.md, scheduler).\nscheduler:\n"
                     "  default_memory_per_cpu: %lldMi\n", gpus > 0 ? " and GPUs" : "",
                     (long long)(mem / cpus >> 20));
    if (gpus > 0 && n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, "  default_memory_per_gpu: %lldMi\n",
                 (long long)(mem / gpus >> 20));
}

int cli_cmd_up(cli_t *c) {
    up_paths_t p;
    upcfg_t u = {0};
    int rc = CLI_EUSAGE, port = 0, aport = 0;
    pid_t ctl = -1, agent = -1;
    char **envp = NULL;
    int detach = cli_has(c, "detach");
    if (c->npos > 0) return cli_usage_error(c, "unexpected argument \"%s\"", c->pos[0]);
    if (cli_has(c, "port") && parse_port(c, "port", &port)) return CLI_EUSAGE;
    if (cli_has(c, "agent-port") && parse_port(c, "agent-port", &aport)) return CLI_EUSAGE;
    if (!cli_has(c, "gpus") && (cli_has(c, "gpu-model") || cli_has(c, "gpu-memory")))
        return cli_usage_error(c, "--gpu-model and --gpu-memory go with --gpus");
    if (paths_init(c, &p) != 0) return CLI_ESERVER;

    pidrec_t old;
    if (read_pids(&p, &old) == 0 && ((old.ctl > 0 && pid_is(old.ctl, "sluiced")) ||
                                     (old.agent > 0 && pid_is(old.agent, "sluice-agent")))) {
        fprintf(stderr, "sluice up: already up in %s (sluiced pid %d); run `sluice down` first\n", p.dir,
                (int)old.ctl);
        return CLI_ESERVER;
    }

    if (access(p.cfg, F_OK) != 0) {
        char admin[33], cluster[33], tenant[33], text[2048 + 4 * PATH_MAX];
        if (random_hex(admin, 16) || random_hex(cluster, 16) || random_hex(tenant, 16)) {
            fprintf(stderr, "sluice up: cannot read /dev/urandom\n");
            return CLI_ESERVER;
        }
        /* A one-node cluster of one person: its tasks run as the user who
         * ran `sluice up` (they read that user's files), said explicitly in
         * the config; for root, with the allow_root that a shared cluster
         * must never set by default. Without a name, the default (nobody). */
        char who[300] = "";
        const struct passwd *pw = getpwuid(geteuid());
        if (pw != NULL && pw->pw_name[0] != '\0' && strlen(pw->pw_name) < 64 &&
            strspn(pw->pw_name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") ==
                strlen(pw->pw_name))
            snprintf(who, sizeof who,
                     "# Tasks run as the user who ran `sluice up` (docs/config.md, \"Tenants as Unix "
                     "users\").\ndefault_user: %s\n%s",
                     pw->pw_name, geteuid() == 0 ? "allow_root: true\n" : "");
        char mem[400];
        up_mem_defaults(c, mem, sizeof mem);
        snprintf(text, sizeof text,
                 "# Written by `sluice up`; edit freely: it is read, never rewritten, while it exists.\n"
                 "%s"
                 "listen: 127.0.0.1:%d\n"
                 "agent_listen: 127.0.0.1:%d\n"
                 "state: %s\n"
                 "admin_token: adm-%s\n"
                 "cluster_token: clu-%s\n"
                 "node_timeout: 10\n"
                 "%s"
                 "tenants:\n"
                 "  - name: default\n"
                 "    weight: 1\n"
                 "    token: tok-%s\n"
                 "# TLS on both ports with the certificates of `sluice up` (docs/security.md).\n"
                 "tls_cert: %s\n"
                 "tls_key: %s\n"
                 "tls_ca: %s\n"
                 "agent_client_cert: require\n",
                 mem, port ? port : 7070, aport ? aport : 7071, p.db, admin, cluster, who, tenant, p.srv_crt,
                 p.srv_key, p.ca_crt);
        if (write_file(p.cfg, text, 0600) != 0) {
            fprintf(stderr, "sluice up: cannot write %s: %s\n", p.cfg, strerror(errno));
            return CLI_ESERVER;
        }
    }
    if (read_cfg(&p, &u) != 0) {
        rc = CLI_ESERVER;
        goto out;
    }
    if ((port && port != port_of(u.listen)) || (aport && aport != port_of(u.agent_listen))) {
        fprintf(stderr, "sluice up: %s listens on %s and %s; edit it (or remove it) to change ports\n",
                p.cfg, u.listen, u.agent_listen);
        rc = CLI_EUSAGE;
        goto out;
    }
    /* The node's name, which its client certificate carries. */
    char host[256];
    const char *name = cli_get(c, "name");
    if (!name) {
        if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "local");
        host[sizeof host - 1] = '\0';
        host[strcspn(host, ".")] = '\0';
        name = host;
    }
    if (u.tls_cert && ensure_certs(&p, name) != 0) {
        rc = CLI_ESERVER;
        goto out;
    }
    /* The CLI here talks to this controller with the admin token (and, with
     * TLS, verifies it with the CA of the config). */
    free(c->server);
    if (asprintf(&c->server, "%s://127.0.0.1:%d", u.tls_cert ? "https" : "http",
                 port_of(u.listen)) < 0)
        abort();
    free(c->token);
    c->token = strdup(u.admin_token);
    free(c->cacert);
    c->cacert = u.tls_cert && u.tls_ca ? strdup(u.tls_ca) : NULL;
    json_t *clicfg = json_pack("{s:s,s:s}", "server", c->server, "token", u.admin_token);
    if (c->cacert) json_object_set_new(clicfg, "cacert", json_string(c->cacert));
    if (u.tenant) json_object_set_new(clicfg, "tenant", json_string(u.tenant));
    char *clitext = json_dumps(clicfg, JSON_INDENT(2));
    json_decref(clicfg);
    int werr = write_file(p.cli, clitext, 0600);
    free(clitext);
    if (werr != 0) {
        fprintf(stderr, "sluice up: cannot write %s: %s\n", p.cli, strerror(errno));
        rc = CLI_ESERVER;
        goto out;
    }
    if (sl_fs_mkdirs(p.agentdir) != 0) {
        fprintf(stderr, "sluice up: cannot create %s: %s\n", p.agentdir, strerror(errno));
        rc = CLI_ESERVER;
        goto out;
    }

    /* The controller, with signals blocked here so that none is lost
     * between spawning and waiting (the children get an empty mask). */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGCHLD);
    if (!detach) sigprocmask(SIG_BLOCK, &set, NULL);
    char ctl_bin[PATH_MAX], agent_bin[PATH_MAX];
    sibling("sluiced", ctl_bin, sizeof ctl_bin);
    sibling("sluice-agent", agent_bin, sizeof agent_bin);
    /* --init only while the state is new (no database yet, or an empty
     * one): a database that disappears or empties later is an error that
     * sluiced reports, not a reason to start an empty cluster. */
    struct stat dbst;
    bool new_state = stat(p.db, &dbst) != 0 || dbst.st_size == 0;
    char *ctl_argv[] = {ctl_bin, "--config", p.cfg, new_state ? "--init" : NULL, NULL};
    ctl = spawn(ctl_argv, environ, detach, p.ctl_log);
    if (ctl < 0) {
        rc = CLI_ESERVER;
        goto out;
    }
    if (wait_healthy(c, ctl, 20.0) != 0) {
        if (detach) fprintf(stderr, "sluice up: see %s\n", p.ctl_log);
        rc = CLI_ESERVER;
        goto out;
    }

    /* The agent: its own node token in a file of mode 0600 (--token-file),
     * never the cluster token, and nothing in argv or the environment that
     * a task could inherit or `ps` could show. */
    size_t ne = 0;
    while (environ[ne]) ne++;
    envp = calloc(ne + 1, sizeof *envp);
    size_t k = 0;
    for (size_t i = 0; i < ne; i++)
        if (strncmp(environ[i], "SLUICE_CLUSTER_TOKEN=", 21) != 0) envp[k++] = environ[i];
    char ctladdr[300], tokfile[PATH_MAX + 32];
    snprintf(tokfile, sizeof tokfile, "%s/agent.token", p.dir);
    if (write_node_token(ctl_bin, p.cfg, name, tokfile) != 0) {
        rc = CLI_ESERVER;
        goto out;
    }
    snprintf(ctladdr, sizeof ctladdr, "127.0.0.1:%d", port_of(u.agent_listen));
    char *aargv[32];
    int na = 0;
    aargv[na++] = agent_bin;
    aargv[na++] = "--controller";
    aargv[na++] = ctladdr;
    aargv[na++] = "--name";
    aargv[na++] = (char *)name;
    aargv[na++] = "--workdir";
    aargv[na++] = p.agentdir;
    aargv[na++] = "--token-file";
    aargv[na++] = tokfile;
    if (cli_has(c, "gpus")) {
        aargv[na++] = "--gpus";
        aargv[na++] = (char *)cli_get(c, "gpus");
        aargv[na++] = "--gpu-model";
        aargv[na++] = (char *)(cli_get(c, "gpu-model") ? cli_get(c, "gpu-model") : "H100");
        aargv[na++] = "--gpu-memory";
        aargv[na++] = (char *)(cli_get(c, "gpu-memory") ? cli_get(c, "gpu-memory") : "80Gi");
    }
    if (u.tls_cert) {
        /* TLS to the controller, with this node's certificate. */
        aargv[na++] = "--ca";
        aargv[na++] = u.tls_ca ? u.tls_ca : p.ca_crt;
        aargv[na++] = "--cert";
        aargv[na++] = p.agent_crt;
        aargv[na++] = "--key";
        aargv[na++] = p.agent_key;
    }
    static const char *pass[] = {"cpus", "memory", "launcher"};
    char flagbuf[3][32];
    for (int i = 0; i < 3; i++) {
        if (cli_has(c, pass[i])) {
            snprintf(flagbuf[i], sizeof flagbuf[i], "--%s", pass[i]);
            aargv[na++] = flagbuf[i];
            aargv[na++] = (char *)cli_get(c, pass[i]);
        }
    }
    aargv[na] = NULL;
    agent = spawn(aargv, envp, detach, p.agent_log);
    if (agent < 0 || wait_node(c, name, agent, 20.0) != 0) {
        if (detach) fprintf(stderr, "sluice up: see %s\n", p.agent_log);
        rc = CLI_ESERVER;
        goto out;
    }
    char pidtext[128];
    snprintf(pidtext, sizeof pidtext, "sluiced %d\nsluice-agent %d\n", (int)ctl, (int)agent);
    write_file(p.pids, pidtext, 0644);

    if (c->json) {
        json_t *o = json_pack("{s:s,s:s,s:s,s:i,s:i}", "server", c->server, "dir", p.dir, "node", name,
                              "controller_pid", (int)ctl, "agent_pid", (int)agent);
        cli_print_json(o);
        json_decref(o);
    } else {
        printf("Sluice is up: controller %s (pid %d), node %s (pid %d)\n"
               "state in %s (sluiced.yaml, sluiced.db, agent/logs)\n"
               "try:  sluice submit -- echo hello from sluice\n"
               "      sluice queue --all; sluice logs 1\n"
               "%s\n",
               c->server, (int)ctl, name, (int)agent, p.dir,
               detach ? "stop with: sluice down" : "Ctrl-C stops both.");
    }
    fflush(stdout);
    if (detach) {
        ctl = agent = -1; /* leave them running */
        rc = CLI_OK;
        goto out;
    }

    /* Foreground: wait for a signal or for a daemon to die. */
    rc = CLI_OK;
    for (;;) {
        siginfo_t si;
        int sig = sigwaitinfo(&set, &si);
        if (sig < 0) continue;
        if (sig == SIGCHLD) {
            int st;
            pid_t pid;
            int died = 0;
            while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
                if (pid == ctl || pid == agent) {
                    fprintf(stderr, "sluice up: %s exited (%s %d); stopping\n",
                            pid == ctl ? "sluiced" : "sluice-agent",
                            WIFSIGNALED(st) ? "signal" : "status",
                            WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
                    if (pid == ctl) ctl = -1;
                    else agent = -1;
                    died = 1;
                }
            }
            if (died) {
                rc = CLI_ESERVER;
                break;
            }
            continue;
        }
        fprintf(stderr, "\nsluice up: stopping the agent and the controller\n");
        break;
    }
out:
    if (!detach || rc != CLI_OK) {
        stop_pid(agent, 1, 15000);
        stop_pid(ctl, 1, 10000);
        if (ctl > 0 || agent > 0 || rc == CLI_OK) unlink(p.pids);
    }
    free(envp);
    upcfg_free(&u);
    return rc;
}

int cli_cmd_down(cli_t *c) {
    up_paths_t p;
    if (c->npos > 0) return cli_usage_error(c, "unexpected argument \"%s\"", c->pos[0]);
    if (paths_init(c, &p) != 0) return CLI_ESERVER;
    pidrec_t r;
    if (read_pids(&p, &r) != 0) {
        fprintf(stderr, "sluice down: nothing to stop (no %s)\n", p.pids);
        return CLI_ESERVER;
    }
    int stopped = 0;
    if (r.agent > 0 && pid_is(r.agent, "sluice-agent")) {
        stop_pid(r.agent, 0, 15000);
        if (!c->json) printf("stopped sluice-agent (pid %d)\n", (int)r.agent);
        stopped++;
    }
    if (r.ctl > 0 && pid_is(r.ctl, "sluiced")) {
        stop_pid(r.ctl, 0, 10000);
        if (!c->json) printf("stopped sluiced (pid %d)\n", (int)r.ctl);
        stopped++;
    }
    unlink(p.pids);
    if (c->json) printf("{\"stopped\": %d}\n", stopped);
    else if (!stopped) printf("nothing was running\n");
    return CLI_OK;
}
