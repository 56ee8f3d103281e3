/*
 * main.c - sluice-agent: flags, node inventory, and the wiring of the
 * layers (LAYERS): the loop, then the tasks, then the connection on top of
 * them, which registers itself as the tasks' sender.
 *
 * Inventory: CPUs from the scheduler affinity mask (what this process may
 * use, so a cpuset is respected), memory from /proc/meminfo MemTotal
 * (rounded down to a whole MiB), GPUs from NVML (gpu.c) unless --gpus
 * declares them; every value can be overridden by a flag, which is how
 * several agents share one machine in tests.
 *
 * Secrets: the token (the node token that `sluiced node-token NAME` prints,
 * or the cluster token) is best read from --token-file, a file that only
 * its owner may read. --token shows in `ps` until this process overwrites
 * its copy of argv, and SLUICE_CLUSTER_TOKEN is removed from the
 * environment before anything else happens, so that no task inherits it.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sluice/sluice.h>

#include "cgroup/cgroup.h"
#include "conn.h"
#include "emulate.h"
#include "gpu.h"
#include "epoch.h"
#include "hostport.h"
#include "lease.h"
#include "log.h"
#include "loop.h"
#include "health.h"
#include "metrics.h"
#include "osutil.h"
#include "quantity.h"
#include "spawn.h"
#include "task.h"
#include "tls.h"

extern char **environ;

static const char usage[] =
    "usage: sluice-agent --controller HOST:PORT[,HOST:PORT...] --token-file FILE --workdir DIR\n"
    "                    [options]\n"
    "\n"
    "Runs the tasks that the Sluice controller places on this node.\n"
    "\n"
    "  --controller HOST:PORT  the controller's agent port (sluiced agent_listen); with\n"
    "                          several, comma-separated, each is tried in turn and a\n"
    "                          standby's redirect to the leader is followed\n"
    "  --token-file FILE       the node's token (`sluiced node-token NAME`), in a file\n"
    "                          that group and others cannot read (chmod 600)\n"
    "  --token TOKEN           the token on the command line (briefly visible in ps),\n"
    "                          or env SLUICE_CLUSTER_TOKEN (removed from the environment\n"
    "                          at start-up, so tasks do not inherit it)\n"
    "  --name NAME             node name (default: the short host name)\n"
    "  --workdir DIR           state.json, logs/JOB/TASK.log; each task runs in\n"
    "                          DIR/jobs/JOB (mode 0700, its tenant's user when root)\n"
    "  --gpus N                declare N GPUs instead of asking NVML\n"
    "  --gpu-model M           GPU model (default: from NVML, e.g. H100)\n"
    "  --gpu-memory Q          memory per GPU, e.g. 80Gi (default: from NVML)\n"
    "  --cpus Q                CPUs offered (default: CPUs this process may use)\n"
    "  --memory Q              memory offered (default: MemTotal)\n"
    "  --pool P                node pool\n"
    "  --labels k=v,...        node labels\n"
    "  --taints k=v:EFFECT,... node taints (EFFECT NoSchedule, PreferNoSchedule or\n"
    "                          NoExecute): only jobs that tolerate them run here\n"
    "  --topology BLOCK/RACK   where the node sits, outermost group first (sent as\n"
    "                          the label topology=BLOCK/RACK; gangs span few racks)\n"
    "  --heartbeat SECONDS     heartbeat interval (default 2)\n"
    "  --launcher TEMPLATE     container launcher for tasks with an image, e.g.\n"
    "                          '/usr/bin/enroot start {image} --'; placeholders:\n"
    "                          {image} {workdir} {job} {task} {name} {node} {gpus} {log};\n"
    "                          the task's command is appended\n"
    "  --runtime PATH          run tasks with an image in a container through this\n"
    "                          OCI runtime (runc), in the task's cgroup, as its\n"
    "                          tenant's user (docs/containers.md); instead of --launcher\n"
    "  --image-store DIR       podman's storage root holding the node's images\n"
    "                          (default: podman's own, /var/lib/containers/storage)\n"
    "  --image-pull POLICY     never, if-not-present (default) or always\n"
    "  --cdi-dirs DIR:..       where the NVIDIA toolkit's CDI spec is (default\n"
    "                          /etc/cdi:/var/run/cdi); none: the GPUs' device files\n"
    "  --grace SECONDS         SIGTERM-to-SIGKILL grace when stopping (default 10)\n"
    "  --cgroup v2|v1|none|auto  per-task enforcement (docs/enforcement.md): memory\n"
    "                          hard 110% (or the job's memory_limit) / soft 90% of\n"
    "                          the request, no swap, CPU quota (or cpu_limit),\n"
    "                          pids.max, only the task's GPU device files;\n"
    "                          auto (default): v2 if delegated, else v1, else none\n"
    "  --cgroup-root PATH      the agent's cgroup, relative to the mount (default:\n"
    "                          v2 the agent's own, v1 /sluice/NODE); must exist\n"
    "  --cgroup-mount DIR      the cgroup2 mount (default /sys/fs/cgroup)\n"
    "  --pids-max N            pids.max of each task (default 4096; 0: no limit)\n"
    "  --cgroup-pool N         v1: task cgroups made ahead of launches, 0 to 8\n"
    "                          (default: one per GPU, at least 2; 0: none)\n"
    "  --gpu-device-files P,.. device file of each GPU, file i is GPU i (default\n"
    "                          /dev/nvidiaI, plus /dev/nvidiactl, -uvm, -modeset)\n"
    "  --oom-score-adj N       the agent's own oom_score_adj (default -900; tasks\n"
    "                          get -500), so the OOM killer picks neither first\n"
    "  --ca FILE               speak TLS to the controller, whose certificate must be\n"
    "                          signed by this CA (PEM) and name the --controller host\n"
    "  --cert FILE, --key FILE this node's client certificate and key (PEM), for a\n"
    "                          controller that requires them (docs/security.md)\n"
    "  --metrics-listen HOST:PORT  serve GET /metrics (Prometheus) there, e.g.\n"
    "                          127.0.0.1:9100 (default: off; docs/metrics-agent.md)\n"
    "  --metrics-interval SECONDS  GPU sampling interval (default 2; 0.1 to 60)\n"
    "  --hpc-job-mapping-dir DIR  keep DIR/INDEX listing the job ids on each GPU, as\n"
    "                          dcgm-exporter's --hpc-job-mapping-dir reads them\n"
    "  --health-command CMD    run CMD (/bin/sh -c) as the node's health check, as\n"
    "                          Slurm's HealthCheckProgram: exit 0 healthy, else\n"
    "                          unhealthy, its first output line says why\n"
    "  --health-interval SECONDS  between health command runs (default 300)\n"
    "  --health-timeout SECONDS   a run still going this long is killed and counts\n"
    "                          as failed (default 60)\n"
    "  --health-poll SECONDS   NVML health readings and XID events (default 1; 0.1\n"
    "                          to 60); 0 turns GPU health off\n"
    "  --health-xid-hold SECONDS  an XID keeps its GPU unhealthy this long\n"
    "                          (default 600; docs/health.md)\n"
    "  --emulate N             run N emulated nodes named NAME00000.. (NAME: --name,\n"
    "                          default e), each with its own connection and the\n"
    "                          resources of the flags above; a task runs for its\n"
    "                          job's SLUICE_EMULATED_RUNTIME seconds (default: until\n"
    "                          cancelled); no --workdir (docs/scale.md)\n"
    "  --help                  this text\n"
    "  --version               print the version\n";

/* A health change: the connection (once created) sends a heartbeat now. */
static void health_changed(void *ud) {
    agent_conn_heartbeat_now(*(agent_conn_t **)ud);
}

/* Prints a usage error and returns the exit status for one (2). */
static int die_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int die_usage(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "sluice-agent: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\nTry 'sluice-agent --help'.\n");
    va_end(ap);
    return 2;
}

static int parse_int(const char *s, int lo, int hi, int *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return -1;
    *out = (int)v;
    return 0;
}

static int check_qty(const char *flag, const char *text, sl_qty_kind_t kind) {
    int64_t v;
    char err[256];
    if (sl_qty_parse(text, kind, &v, err, sizeof err) != 0) {
        fprintf(stderr, "sluice-agent: %s: %s\nTry 'sluice-agent --help'.\n", flag, err);
        return -1;
    }
    return 0;
}

static char *detect_memory(void) {
    FILE *f = fopen("/proc/meminfo", "re");
    unsigned long long kb = 0;
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemTotal: %llu kB", &kb) == 1) break;
    if (f) fclose(f);
    int64_t bytes = (int64_t)(kb / 1024) * 1024 * 1024;
    char buf[64];
    sl_qty_format(bytes, SL_QTY_MEM, buf, sizeof buf);
    return strdup(buf);
}

static char *detect_cpus(void) {
    cpu_set_t set;
    long n = 0;
    if (sched_getaffinity(0, sizeof set, &set) == 0) n = CPU_COUNT(&set);
    if (n <= 0) n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n <= 0) n = 1;
    char buf[32];
    snprintf(buf, sizeof buf, "%ld", n);
    return strdup(buf);
}

/* What the flags say, after defaults and inventory. */
typedef struct flags {
    char *ctl_host;         /* the first of --controller */
    char *ctl_port;
    const sl_hostport_t *ctls; /* all of --controller */
    size_t nctls;
    const char *token;
    const char *name;
    char *workdir;          /* absolute */
    int gpus;               /* -1: ask NVML */
    const char *gpu_model;
    const char *gpu_memory;
    const char *cpus;
    const char *memory;
    const char *pool;
    const char *labels;
    const char *taints;
    const char *topology;   /* --topology: a path of group names */
    int heartbeat_s;
    const char *launcher;
    agent_container_config_t containers;    /* --runtime, --image-store, --image-pull */
    int grace_s;
    const char *metrics_listen;  /* --metrics-listen; NULL: no endpoint */
    const char *jobmap_dir;      /* --hpc-job-mapping-dir; NULL: none */
    int metrics_ms;              /* --metrics-interval */
    agent_health_config_t health; /* --health-* */
    agent_cgroup_config_t cgroup;
    int oom_score_adj;
} flags_t;

/* Reads the token from path into out (trailing blanks and newlines cut).
 * Refuses a file that group or others may read, or that is not a regular
 * file. 0, or -1 with the reason printed. */
static int read_token_file(const char *path, char *out, size_t cap) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        fprintf(stderr, "sluice-agent: --token-file %s: %s\n", path, strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode) || (st.st_mode & 077) != 0) {
        if (!S_ISREG(st.st_mode))
            fprintf(stderr, "sluice-agent: --token-file %s: not a regular file\n", path);
        else
            fprintf(stderr, "sluice-agent: --token-file %s: mode %04o lets group or others read "
                    "the token; refusing it (chmod 600 %s)\n", path,
                    (unsigned)(st.st_mode & 07777), path);
        close(fd);
        return -1;
    }
    ssize_t n = read(fd, out, cap - 1);
    close(fd);
    if (n < 0) {
        fprintf(stderr, "sluice-agent: --token-file %s: %s\n", path, strerror(errno));
        return -1;
    }
    out[n] = '\0';
    while (n > 0 && strchr(" \t\r\n", out[n - 1])) out[--n] = '\0';
    if (n == 0 || (size_t)n == cap - 1 || strpbrk(out, "\r\n")) {
        fprintf(stderr, "sluice-agent: --token-file %s: %s\n", path,
                n == 0 ? "empty" : "not one line of at most 4 KiB");
        return -1;
    }
    return 0;
}

/* Protects the agent from the OOM killer more than its tasks (-500): a
 * node under memory pressure loses a task before the agent that reports
 * it. Lowering the score takes CAP_SYS_RESOURCE (or a privileged parent,
 * systemd's OOMScoreAdjust=, having set it that low already); without it
 * the agent says so once and keeps its score, which is then the lowest its
 * tasks can get. Returns the agent's score after the attempt. */
static int set_oom_score_adj(int v) {
    int fd = open("/proc/self/oom_score_adj", O_RDWR | O_CLOEXEC);
    char num[16];
    int len = snprintf(num, sizeof num, "%d", v), now = 0;
    if (fd < 0 || write(fd, num, (size_t)len) != len) {
        ssize_t n = fd >= 0 ? pread(fd, num, sizeof num - 1, 0) : -1;
        now = n > 0 ? (num[n] = '\0', atoi(num)) : 0;
        sl_log(SL_LOG_WARN, "agent", "cannot lower the agent's oom_score_adj to %d: %s (no "
               "CAP_SYS_RESOURCE): it stays %d, and tasks get no lower a score than that (set "
               "OOMScoreAdjust=%d in the agent's systemd unit)", v, strerror(errno), now, v);
    } else {
        now = v;
    }
    if (fd >= 0) close(fd);
    return now;
}

/* Locks WORKDIR/agent.lock (flock) and writes this process's pid into it;
 * the holder is told from /proc/locks, else from that pid. Returns the
 * lock's descriptor; -2 when another process holds it (exit status 2), -1
 * when the file cannot be opened or locked; both said on stderr. */
static int lock_workdir(const char *workdir) {
    char path[PATH_MAX + 16], name[64];
    snprintf(path, sizeof path, "%s/agent.lock", workdir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK, 0644);
    pid_t holder = 0;
    int rc = fd < 0 ? -errno : sl_flock_take(fd, &holder);
    if (rc == -EWOULDBLOCK) {
        char num[24] = "";
        ssize_t n = holder > 0 ? 0 : pread(fd, num, sizeof num - 1, 0);
        if (n > 0) holder = (pid_t)atoi(num); /* no /proc/locks: the pid it wrote */
        sl_proc_name(holder, name, sizeof name);
        if (holder > 0)
            fprintf(stderr, "sluice-agent: --workdir: %s is in use by process %d (%s), which "
                    "holds %s: stop that agent first, or give this one another --workdir\n",
                    workdir, (int)holder, name[0] ? name : "gone", path);
        else
            fprintf(stderr, "sluice-agent: --workdir: %s is in use by another process, which "
                    "holds %s: stop that agent first, or give this one another --workdir\n",
                    workdir, path);
        close(fd);
        return -2;
    }
    if (rc != 0) {
        fprintf(stderr, "sluice-agent: --workdir: cannot lock %s: %s\n", path, strerror(-rc));
        if (fd >= 0) close(fd);
        return -1;
    }
    char pid[24];
    int n = snprintf(pid, sizeof pid, "%d\n", (int)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != n)
        sl_log(SL_LOG_WARN, "agent", "cannot write the pid into %s: %s", path, strerror(errno));
    return fd;
}

static void stop_cb(evutil_socket_t sig, short ev, void *arg) {
    agent_tasks_t *ts = arg;
    sl_log(SL_LOG_INFO, "agent", "SIG%s: stopping", sigabbrev_np((int)sig));
    agent_tasks_stop_all(ts);
}

/* --emulate N: the flags' node N times over (emulate.h), no workdir,
 * no enforcement, no NVML. Returns the exit status. */
static int run_emulator(flags_t *a, int nodes, SSL_CTX *tls) {
    char *cpus_alloc = NULL, *mem_alloc = NULL;
    if (!a->cpus) a->cpus = cpus_alloc = detect_cpus();
    if (!a->memory) a->memory = mem_alloc = detect_memory();
    if (a->gpus < 0) a->gpus = 0;
    if (!a->name) a->name = "e";
    int rc = 1;
    if (strlen(a->name) + 5 >= SL_NAME_MAX) {
        rc = die_usage("--name: \"%s\" is too long for a prefix of --emulate (at most %d "
                       "characters)", a->name, SL_NAME_MAX - 6);
        goto out;
    }
    signal(SIGPIPE, SIG_IGN);
    struct event_base *base = agent_loop_create();
    if (!base) {
        fprintf(stderr, "sluice-agent: cannot create the event loop\n");
        goto out;
    }
    agent_emulate_config_t ecfg = {
        .nodes = nodes, .prefix = a->name,
        .conn = {.host = a->ctl_host, .port = a->ctl_port, .controllers = a->ctls,
                 .ncontrollers = a->nctls, .token = a->token,
                 .heartbeat_s = a->heartbeat_s, .tls = tls,
                 .node = {.cpus = a->cpus, .memory = a->memory, .gpus = a->gpus,
                          .gpu_model = a->gpus > 0 ? (a->gpu_model ? a->gpu_model : "unknown") : NULL,
                          .gpu_memory = a->gpus > 0 ? a->gpu_memory : NULL, .pool = a->pool,
                          .labels = a->labels}}};
    rc = agent_emulate_run(base, &ecfg) == 0 ? 0 : 1;
    event_base_free(base);
out:
    SSL_CTX_free(tls);
    free(a->ctl_host);
    free(a->ctl_port);
    free(cpus_alloc);
    free(mem_alloc);
    return rc;
}

int main(int argc, char **argv) {
    /* Before anything can start a process: the token never reaches a task
     * through the environment. */
    static char token[4096];
    const char *token_file = NULL;
    for (char **e = environ; *e; e++) {
        if (strncmp(*e, "SLUICE_CLUSTER_TOKEN=", 21) != 0) continue;
        snprintf(token, sizeof token, "%s", *e + 21);
        /* Blank the string itself too: /proc/PID/environ shows the memory
         * the environment was passed in, whatever unsetenv does. */
        memset(*e + 21, 'x', strlen(*e + 21));
    }
    unsetenv("SLUICE_CLUSTER_TOKEN");
    flags_t a = {0};
    a.heartbeat_s = 2;
    a.grace_s = 10;
    a.gpus = -1;
    a.cgroup.mode = "auto";
    a.cgroup.pids_max = 4096;
    a.cgroup.pool = -1;
    a.oom_score_adj = -900;
    a.metrics_ms = 2000;
    a.health = (agent_health_config_t){.nvml = true, .poll_ms = 1000, .xid_hold_ms = 600000,
                                       .interval_ms = 300000, .timeout_ms = 60000};
    const char *controller = NULL, *workdir = NULL;
    int emulate = 0;
    enum { O_CTL = 256, O_TOKEN, O_TOKEN_FILE, O_NAME, O_WORKDIR, O_GPUS, O_GPU_MODEL,
           O_GPU_MEMORY, O_CPUS, O_MEMORY, O_POOL, O_LABELS, O_HEARTBEAT, O_LAUNCHER, O_GRACE,
           O_HELP, O_VERSION, O_CA, O_CERT, O_KEY, O_CGROUP, O_CGROUP_ROOT, O_CGROUP_MOUNT,
           O_PIDS_MAX, O_CGROUP_POOL, O_GPU_DEVICE_FILES, O_OOM_SCORE_ADJ, O_METRICS_LISTEN,
           O_METRICS_INTERVAL, O_JOBMAP_DIR, O_TAINTS, O_TOPOLOGY, O_EMULATE, O_RUNTIME,
           O_IMAGE_STORE, O_IMAGE_PULL, O_CDI_DIRS,
           O_HEALTH_COMMAND, O_HEALTH_INTERVAL, O_HEALTH_TIMEOUT, O_HEALTH_POLL, O_HEALTH_XID_HOLD };
    const char *tls_ca = NULL, *tls_cert = NULL, *tls_key = NULL;
    static const struct option opts[] = {
        {"controller", required_argument, NULL, O_CTL},
        {"token", required_argument, NULL, O_TOKEN},
        {"token-file", required_argument, NULL, O_TOKEN_FILE},
        {"name", required_argument, NULL, O_NAME},
        {"workdir", required_argument, NULL, O_WORKDIR},
        {"gpus", required_argument, NULL, O_GPUS},
        {"gpu-model", required_argument, NULL, O_GPU_MODEL},
        {"gpu-memory", required_argument, NULL, O_GPU_MEMORY},
        {"cpus", required_argument, NULL, O_CPUS},
        {"memory", required_argument, NULL, O_MEMORY},
        {"pool", required_argument, NULL, O_POOL},
        {"labels", required_argument, NULL, O_LABELS},
        {"taints", required_argument, NULL, O_TAINTS},
        {"topology", required_argument, NULL, O_TOPOLOGY},
        {"heartbeat", required_argument, NULL, O_HEARTBEAT},
        {"launcher", required_argument, NULL, O_LAUNCHER},
        {"runtime", required_argument, NULL, O_RUNTIME},
        {"image-store", required_argument, NULL, O_IMAGE_STORE},
        {"image-pull", required_argument, NULL, O_IMAGE_PULL},
        {"cdi-dirs", required_argument, NULL, O_CDI_DIRS},
        {"grace", required_argument, NULL, O_GRACE},
        {"help", no_argument, NULL, O_HELP},
        {"version", no_argument, NULL, O_VERSION},
        {"ca", required_argument, NULL, O_CA},
        {"cert", required_argument, NULL, O_CERT},
        {"key", required_argument, NULL, O_KEY},
        {"metrics-listen", required_argument, NULL, O_METRICS_LISTEN},
        {"metrics-interval", required_argument, NULL, O_METRICS_INTERVAL},
        {"hpc-job-mapping-dir", required_argument, NULL, O_JOBMAP_DIR},
        {"cgroup", required_argument, NULL, O_CGROUP},
        {"cgroup-root", required_argument, NULL, O_CGROUP_ROOT},
        {"cgroup-mount", required_argument, NULL, O_CGROUP_MOUNT},
        {"pids-max", required_argument, NULL, O_PIDS_MAX},
        {"cgroup-pool", required_argument, NULL, O_CGROUP_POOL},
        {"gpu-device-files", required_argument, NULL, O_GPU_DEVICE_FILES},
        {"oom-score-adj", required_argument, NULL, O_OOM_SCORE_ADJ},
        {"emulate", required_argument, NULL, O_EMULATE},
        {"health-command", required_argument, NULL, O_HEALTH_COMMAND},
        {"health-interval", required_argument, NULL, O_HEALTH_INTERVAL},
        {"health-timeout", required_argument, NULL, O_HEALTH_TIMEOUT},
        {"health-poll", required_argument, NULL, O_HEALTH_POLL},
        {"health-xid-hold", required_argument, NULL, O_HEALTH_XID_HOLD},
        {0, 0, 0, 0}};
    sl_log_init_from_env();
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case O_CTL: controller = optarg; break;
        case O_TOKEN:
            /* Copied, then blanked in argv: ps shows it only until here. */
            snprintf(token, sizeof token, "%s", optarg);
            a.token = token;
            memset(optarg, 'x', strlen(optarg));
            break;
        case O_TOKEN_FILE: token_file = optarg; break;
        case O_NAME: a.name = optarg; break;
        case O_WORKDIR: workdir = optarg; break;
        case O_GPUS:
            if (parse_int(optarg, 0, 1024, &a.gpus) != 0)
                return die_usage("--gpus: \"%s\" is not a whole number of GPUs from 0 to 1024", optarg);
            break;
        case O_GPU_MODEL: a.gpu_model = optarg; break;
        case O_GPU_MEMORY:
            if (check_qty("--gpu-memory", optarg, SL_QTY_MEM)) return 2;
            a.gpu_memory = optarg;
            break;
        case O_CPUS:
            if (check_qty("--cpus", optarg, SL_QTY_CPU)) return 2;
            a.cpus = optarg;
            break;
        case O_MEMORY:
            if (check_qty("--memory", optarg, SL_QTY_MEM)) return 2;
            a.memory = optarg;
            break;
        case O_POOL: a.pool = optarg; break;
        case O_LABELS: a.labels = optarg; break;
        case O_TAINTS: {
            char terr[256];
            if (sl_node_labels_check(NULL, optarg, terr, sizeof terr) < 0)
                return die_usage("--%s", terr); /* "taints: \"x\" is not ..." */
            a.taints = optarg;
            break;
        }
        case O_TOPOLOGY: a.topology = optarg; break;
        case O_HEARTBEAT:
            if (parse_int(optarg, 1, 3600, &a.heartbeat_s) != 0)
                return die_usage("--heartbeat: \"%s\" is not a whole number of seconds from 1 to 3600", optarg);
            break;
        case O_LAUNCHER: a.launcher = optarg; break;
        case O_RUNTIME: a.containers.runtime = optarg; break;
        case O_IMAGE_STORE: a.containers.store = optarg; break;
        case O_CDI_DIRS: a.containers.cdi_dirs = optarg; break;
        case O_IMAGE_PULL:
            if (strcmp(optarg, "never") && strcmp(optarg, "if-not-present") && strcmp(optarg, "always"))
                return die_usage("--image-pull: \"%s\" is not never, if-not-present or always", optarg);
            a.containers.pull = optarg;
            break;
        case O_GRACE:
            if (parse_int(optarg, 0, 3600, &a.grace_s) != 0)
                return die_usage("--grace: \"%s\" is not a whole number of seconds from 0 to 3600", optarg);
            break;
        case O_CA: tls_ca = optarg; break;
        case O_CERT: tls_cert = optarg; break;
        case O_KEY: tls_key = optarg; break;
        case O_METRICS_LISTEN: a.metrics_listen = optarg; break;
        case O_JOBMAP_DIR: a.jobmap_dir = optarg; break;
        case O_METRICS_INTERVAL: {
            char *end;
            double s = strtod(optarg, &end);
            if (end == optarg || *end || !(s >= 0.1 && s <= 60))
                return die_usage("--metrics-interval: \"%s\" is not a number of seconds from 0.1 to 60",
                                 optarg);
            a.metrics_ms = (int)(s * 1000 + 0.5);
            break;
        }
        case O_HEALTH_COMMAND: a.health.command = optarg; break;
        case O_HEALTH_INTERVAL:
        case O_HEALTH_TIMEOUT:
        case O_HEALTH_POLL:
        case O_HEALTH_XID_HOLD: {
            static const char *const names[] = {"interval", "timeout", "poll", "xid-hold"};
            int k = c - O_HEALTH_INTERVAL;
            double lo = k == 2 ? 0 : k == 3 ? 0 : 0.1, hi = k == 2 ? 60 : 86400;
            char *end;
            double sec = strtod(optarg, &end);
            if (end == optarg || *end || !(sec >= lo && sec <= hi) || (k == 2 && sec > 0 && sec < 0.1))
                return die_usage("--health-%s: \"%s\" is not a number of seconds from %g to %g",
                                 names[k], optarg, k == 2 ? 0.1 : lo, hi);
            int64_t ms = (int64_t)(sec * 1000 + 0.5);
            if (k == 0) a.health.interval_ms = ms;
            else if (k == 1) a.health.timeout_ms = ms;
            else if (k == 2) a.health.poll_ms = ms, a.health.nvml = ms > 0;
            else a.health.xid_hold_ms = ms;
            break;
        }
        case O_CGROUP:
            if (strcmp(optarg, "v2") && strcmp(optarg, "v1") && strcmp(optarg, "none") &&
                strcmp(optarg, "auto"))
                return die_usage("--cgroup: \"%s\" is not one of v2, v1, none, auto", optarg);
            a.cgroup.mode = optarg;
            break;
        case O_CGROUP_ROOT: a.cgroup.root = optarg; break;
        case O_CGROUP_MOUNT: a.cgroup.mount = optarg; break;
        case O_PIDS_MAX: {
            int v;
            if (parse_int(optarg, 0, 4194304, &v) != 0)
                return die_usage("--pids-max: \"%s\" is not a whole number of processes from 0 "
                                 "(no limit) to 4194304", optarg);
            a.cgroup.pids_max = v;
            break;
        }
        case O_CGROUP_POOL:
            if (parse_int(optarg, 0, AGENT_CGROUP_POOL_MAX, &a.cgroup.pool) != 0)
                return die_usage("--cgroup-pool: \"%s\" is not a whole number of cgroups from 0 "
                                 "to %d", optarg, AGENT_CGROUP_POOL_MAX);
            break;
        case O_GPU_DEVICE_FILES: a.cgroup.gpu_files = optarg; break;
        case O_OOM_SCORE_ADJ:
            if (parse_int(optarg, -1000, 1000, &a.oom_score_adj) != 0)
                return die_usage("--oom-score-adj: \"%s\" is not a whole number from -1000 to 1000",
                                 optarg);
            break;
        case O_EMULATE:
            if (parse_int(optarg, 1, AGENT_EMULATE_MAX, &emulate) != 0)
                return die_usage("--emulate: \"%s\" is not a whole number of nodes from 1 to %d",
                                 optarg, AGENT_EMULATE_MAX);
            break;
        case O_HELP: fputs(usage, stdout); return 0;
        case O_VERSION: printf("sluice-agent %s\n", SLUICE_VERSION); return 0;
        case ':': return die_usage("%s needs a value", argv[optind - 1]);
        default: return die_usage("unknown option %s", argv[optind - 1]);
        }
    }
    if (optind < argc) return die_usage("unexpected argument \"%s\"", argv[optind]);
    if (!controller) return die_usage("--controller HOST:PORT is required");
    if (token_file && a.token) return die_usage("give --token or --token-file, not both");
    if (token_file && read_token_file(token_file, token, sizeof token) != 0) return 2;
    a.token = token;
    if (!*a.token) return die_usage("--token-file is required (or --token, or SLUICE_CLUSTER_TOKEN)");
    if (!workdir && !emulate) return die_usage("--workdir DIR is required");
    if ((tls_cert || tls_key) && !tls_ca) return die_usage("--cert and --key go with --ca");
    if ((tls_cert == NULL) != (tls_key == NULL)) return die_usage("--cert and --key go together");
    SSL_CTX *tls = NULL;
    if (tls_ca) {
        char terr[512];
        tls = sl_tls_client_ctx(tls_ca, tls_cert, tls_key, terr, sizeof terr);
        if (!tls) {
            fprintf(stderr, "sluice-agent: %s\n", terr);
            return 2;
        }
    }
    sl_hostport_t ctls[SL_HOSTPORT_MAX];
    size_t nctls = 0;
    char hperr[400];
    if (sl_hostport_list_parse(controller, ctls, SL_HOSTPORT_MAX, &nctls, hperr, sizeof hperr) != 0)
        return die_usage("--controller: %s", hperr);
    char *labels_own = NULL; /* --labels with the topology label added */
    if (a.topology) {
        const char *t = a.topology;
        if (!sl_topo_path_ok(t))
            return die_usage("--topology: \"%s\" is not a path of group names such as "
                             "block1/rack3 (letters, digits, '.', '_', '-', joined by '/')", t);
        if (a.labels && (strncmp(a.labels, "topology=", 9) == 0 || strstr(a.labels, ",topology=")))
            return die_usage("--labels: give the topology with --topology, not both");
        size_t len = strlen(t) + (a.labels ? strlen(a.labels) + 1 : 0) + sizeof "topology=";
        labels_own = malloc(len);
        if (!labels_own) return 1;
        snprintf(labels_own, len, "%s%stopology=%s", a.labels ? a.labels : "",
                 a.labels ? "," : "", t);
        a.labels = labels_own;
    }
    if (a.labels) {
        char *copy = strdup(a.labels), *save = NULL;
        for (char *kv = strtok_r(copy, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
            char *eq = strchr(kv, '=');
            if (!eq || eq == kv) {
                int r = die_usage("--labels: \"%s\" is not key=value", kv);
                free(copy);
                return r;
            }
        }
        free(copy);
    }
    if (a.containers.runtime && a.launcher)
        return die_usage("--runtime and --launcher: give one (both run tasks with an image)");
    if (a.containers.runtime && (a.containers.runtime[0] != '/' || access(a.containers.runtime, X_OK) != 0))
        return die_usage("--runtime: %s is not an executable given by its absolute path",
                         a.containers.runtime);
    if (a.containers.store && a.containers.store[0] != '/')
        return die_usage("--image-store: %s is not an absolute path", a.containers.store);
    if (a.launcher) {
        char *copy = strdup(a.launcher), *save = NULL;
        int words = 0;
        for (char *w = strtok_r(copy, " \t", &save); w; w = strtok_r(NULL, " \t", &save), words++) {
            const char *bad = NULL;
            char *x = agent_launcher_expand(w, "i", "w", "1", "0", "n", "n", "0", "l", &bad);
            if (!x) {
                int r = die_usage("--launcher: unknown placeholder at \"%s\" (known: {image} {workdir} {job} "
                                  "{task} {name} {node} {gpus} {log})", bad);
                free(copy);
                return r;
            }
            free(x);
        }
        free(copy);
        if (words == 0) return die_usage("--launcher: empty template");
    }
    a.ctl_host = strdup(ctls[0].host);
    a.ctl_port = strdup(ctls[0].port);
    a.ctls = ctls;
    a.nctls = nctls;
    if (emulate) return run_emulator(&a, emulate, tls);
    char host[256];
    if (!a.name) {
        if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "localhost");
        host[sizeof host - 1] = '\0';
        host[strcspn(host, ".")] = '\0';
        a.name = host;
    }
    if (sl_fs_mkdirs(workdir) != 0 || !(a.workdir = realpath(workdir, NULL))) {
        fprintf(stderr, "sluice-agent: --workdir: cannot create %s: %s\n", workdir, strerror(errno));
        free(a.ctl_host);
        free(a.ctl_port);
        return 1;
    }
    /* One agent per work directory: a second one would clobber state.json,
     * adopt the first one's tasks and remove their cgroups as leftovers.
     * The lock is taken before anything is cleaned up, goes with the
     * process (also on kill -9), and tasks do not inherit it (O_CLOEXEC). */
    int lockfd = lock_workdir(a.workdir);
    if (lockfd < 0) {
        free(a.ctl_host);
        free(a.ctl_port);
        free(a.workdir);
        return lockfd == -2 ? 2 : 1;
    }
    /* The highest controller epoch this node accepted, before any
     * controller is heard (docs/protocol.md, "Controllers and epochs"). */
    char epoch_path[PATH_MAX + 16], eperr[PATH_MAX + 200];
    sl_epoch_mark_t mark;
    agent_epoch_path(a.workdir, epoch_path, sizeof epoch_path);
    if (agent_epoch_load(epoch_path, &mark, eperr, sizeof eperr) != 0) {
        fprintf(stderr, "sluice-agent: %s\n", eperr);
        free(a.ctl_host);
        free(a.ctl_port);
        free(a.workdir);
        close(lockfd);
        return 1;
    }

    /* Inventory. */
    char *cpus_alloc = NULL, *mem_alloc = NULL, *gpumem_alloc = NULL;
    char model[96];
    if (!a.cpus) a.cpus = cpus_alloc = detect_cpus();
    if (!a.memory) a.memory = mem_alloc = detect_memory();
    if (a.gpus < 0) {
        int n = 0;
        uint64_t gmem = 0;
        char why[256];
        if (agent_gpu_detect(&n, model, sizeof model, &gmem, why, sizeof why) == 0) {
            a.gpus = n;
            if (!a.gpu_model) a.gpu_model = model;
            if (!a.gpu_memory) {
                char buf[64];
                sl_qty_format((int64_t)(gmem / (1024 * 1024)) * 1024 * 1024, SL_QTY_MEM, buf, sizeof buf);
                a.gpu_memory = gpumem_alloc = strdup(buf);
            }
            sl_log(SL_LOG_INFO, "agent", "NVML: %d GPU(s) model=%s memory=%s", n, a.gpu_model,
                   a.gpu_memory);
        } else {
            a.gpus = 0;
            sl_log(SL_LOG_INFO, "agent", "no GPUs: %s (declare them with --gpus)", why);
        }
    }

    /* Enforcement, before any task is re-adopted or started: an agent
     * asked for limits it cannot give does not start. */
    agent_cgroup_t *cg = NULL;
    char cgerr[1024];
    a.cgroup.node = a.name;
    a.cgroup.ngpus = a.gpus;
    int cgrc = agent_cgroup_open(&a.cgroup, &cg, cgerr, sizeof cgerr);
    if (cgrc != 0) {
        fprintf(stderr, "sluice-agent: %s\n", cgerr);
        free(a.ctl_host);
        free(a.ctl_port);
        free(a.workdir);
        free(cpus_alloc);
        free(mem_alloc);
        free(gpumem_alloc);
        close(lockfd);
        return cgrc == SL_EBUSY ? 2 : 1;
    }
    sl_log(strcmp(agent_cgroup_kind(cg), "none") == 0 ? SL_LOG_WARN : SL_LOG_INFO, "agent", "%s",
           agent_cgroup_describe(cg));
    int oom_floor = set_oom_score_adj(a.oom_score_adj);

    signal(SIGPIPE, SIG_IGN);
    struct event_base *base = agent_loop_create();
    if (!base) {
        fprintf(stderr, "sluice-agent: cannot create the event loop\n");
        return 1;
    }
    int rc = 1;
    agent_tasks_t *ts = NULL;
    agent_conn_t *cn = NULL;
    agent_metrics_t *mx = NULL;
    agent_steps_t *steps = NULL;
    agent_health_t *health = NULL;
    struct event *sigterm = NULL, *sigint = NULL;
    char *cstart = NULL, *cinit = NULL;
    if (a.containers.runtime) {
        a.containers.gpu_files = a.cgroup.gpu_files;
        if (!(cstart = agent_container_program(AGENT_CSTART_NAME)) ||
            !(cinit = agent_container_program(AGENT_CINIT_NAME)))
            goto out;
        a.containers.cstart = cstart;
        a.containers.init = cinit;
    }
    agent_tasks_config_t tcfg = {.workdir = a.workdir, .node = a.name, .launcher = a.launcher,
                                 .containers = a.containers.runtime ? &a.containers : NULL,
                                 .grace_s = a.grace_s, .cgroup = cg,
                                 .oom_score_adj_floor = oom_floor};
    if (agent_tasks_create(base, &tcfg, &ts) != 0) goto out;
    agent_metrics_config_t mcfg = {.node = a.name, .gpu_model = a.gpus > 0 ? a.gpu_model : NULL,
                                   .gpus = a.gpus, .listen = a.metrics_listen,
                                   .jobmap_dir = a.jobmap_dir, .sample_ms = a.metrics_ms,
                                   .cgroup = cg};
    char merr[512];
    if (agent_metrics_create(base, &mcfg, ts, &mx, merr, sizeof merr) != 0) {
        fprintf(stderr, "sluice-agent: %s\n", merr);
        goto out;
    }
    a.health.changed = health_changed;
    a.health.changed_ud = &cn;
    if (agent_health_create(base, &a.health, &health, merr, sizeof merr) != 0) {
        fprintf(stderr, "sluice-agent: %s\n", merr);
        goto out;
    }
    sigterm = evsignal_new(base, SIGTERM, stop_cb, ts);
    sigint = evsignal_new(base, SIGINT, stop_cb, ts);
    event_add(sigterm, NULL);
    event_add(sigint, NULL);
    sl_log(SL_LOG_INFO, "agent", "node=%s cpus=%s memory=%s gpus=%d workdir=%s controller=%s "
           "epoch=%llu", a.name, a.cpus, a.memory, a.gpus, a.workdir, controller,
           (unsigned long long)mark.highest);
    char lease[PATH_MAX + 16];
    agent_lease_path(a.workdir, lease, sizeof lease);
    agent_conn_config_t ccfg = {
        .host = a.ctl_host, .port = a.ctl_port, .controllers = a.ctls, .ncontrollers = a.nctls,
        .epoch_path = epoch_path, .epoch_mark = mark,
        .token = a.token, .heartbeat_s = a.heartbeat_s,
        .tls = tls, .usage = agent_metrics_usage, .usage_ud = mx, .lease = lease,
        .health = agent_health_report, .health_ud = health,
        .lease_grace_ms = a.grace_s * INT64_C(1000),
        .node = {.name = a.name, .cpus = a.cpus, .memory = a.memory, .gpus = a.gpus,
                 .gpu_model = a.gpus > 0 ? (a.gpu_model ? a.gpu_model : "unknown") : NULL,
                 .gpu_memory = a.gpus > 0 ? a.gpu_memory : NULL, .pool = a.pool, .labels = a.labels,
                 .taints = a.taints}};
    agent_conn_create(base, &ccfg, ts, &cn);
    steps = agent_steps_create(base, a.workdir, ts);
    agent_conn_set_steps(cn, steps);
    event_base_dispatch(base);
    rc = 0;
    sl_log(SL_LOG_INFO, "agent", "stopped");
out:
    agent_conn_destroy(cn);
    agent_health_destroy(health);
    agent_steps_destroy(steps);
    agent_metrics_destroy(mx);
    SSL_CTX_free(tls);
    agent_tasks_destroy(ts);
    agent_cgroup_close(cg);
    if (sigterm) event_free(sigterm);
    if (sigint) event_free(sigint);
    event_base_free(base);
    free(a.ctl_host);
    free(a.ctl_port);
    free(a.workdir);
    free(cpus_alloc);
    free(mem_alloc);
    free(gpumem_alloc);
    free(labels_own);
    free(cstart);
    free(cinit);
    close(lockfd);
    return rc;
}
