/*
 * main.c - `sluice`: the command table, option parsing, configuration.
 *
 * The table below is the only list of commands and options: dispatch,
 * parsing and every --help text come from it (as Redis does with its
 * commands/NAME.json), so help cannot drift from what is accepted.
 *
 * Server and token come from, in order: --server/--token, SLUICE_SERVER /
 * SLUICE_TOKEN, the cli.json that `sluice up` writes in its state directory
 * ($SLUICE_DIR, else .sluice/ here or in the nearest parent directory), and
 * finally http://127.0.0.1:7070 with no token.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "hostport.h"
#include "jobspec.h"
#include "slurmfmt.h"

/* `sluice submit`'s options: -f, then one per field of the job-spec table
 * (src/common/jobspec.h, which the server and docs/jobspec.md share), then
 * --quiet and --dry-run. Filled from the table at start-up. */
static cli_opt_t submit_opts[SL_JS_NFIELDS + 5];
/* Every option of a command has its slot in cli_t (set, val, multi). */
_Static_assert(SL_JS_NFIELDS + 5 <= CLI_MAX_OPTS, "sluice submit has more options than CLI_MAX_OPTS");
static char submit_help[SL_JS_NFIELDS][200];

static void init_submit_opts(void) {
    size_t n = 0;
    submit_opts[n++] = (cli_opt_t){"file", 'f', "FILE", 0,
                                   "job spec: Sluice YAML/JSON or Kubernetes manifests (batch/v1 "
                                   "Job, kubeflow.org/v1 PyTorchJob, kubeflow.org MPIJob); each "
                                   "YAML document is "
                                   "a job (docs/jobspec.md)"};
    for (int i = 0; i < SL_JS_NFIELDS; i++) {
        const sl_jobspec_field_t *f = &sl_jobspec_fields[i];
        if (f->flag == NULL)
            continue;
        snprintf(submit_help[i], sizeof submit_help[i], "%s%s%s%s", f->help,
                 f->dflt_text ? " (default: " : "", f->dflt_text ? f->dflt_text : "",
                 f->dflt_text ? ")" : "");
        submit_opts[n++] = (cli_opt_t){f->flag, f->shortflag, f->metavar,
                                       f->type == SL_FT_NAMES || f->type == SL_FT_ENV,
                                       submit_help[i]};
    }
    submit_opts[n++] = (cli_opt_t){"quiet", 'q', NULL, 0, "print only the job id"};
    submit_opts[n++] = (cli_opt_t){"dry-run", 0, NULL, 0,
                                   "print the JSON submission instead of sending it"};
    submit_opts[n++] = (cli_opt_t){"ignore-unsupported", 0, NULL, 0,
                                   "batch script: warn about #SBATCH options Sluice does not "
                                   "support instead of refusing the script"};
    submit_opts[n] = (cli_opt_t){0};
}

static const cli_opt_t queue_opts[] = {
    {"all", 'a', NULL, 0, "include finished jobs"},
    {"state", 0, "STATE", 0, "only jobs in STATE (pending, running, succeeded, failed, cancelled)"},
    {"tenant", 0, "TENANT", 0, "only this tenant's jobs (admin token)"},
    {"limit", 0, "N", 0, "at most N jobs"},
    {"watch", 'w', NULL, 0, "print again after each change (GET /v1/events) until interrupted"},
    {0}};

static const cli_opt_t none_opts[] = {{0}};

static const cli_opt_t show_opts[] = {
    {"watch", 'w', NULL, 0, "print again after each change of the job, until it has ended"},
    {0}};

static const cli_opt_t nodes_opts[] = {
    {"limit", 0, "N", 0, "at most N nodes, the first by name (one request up to 1,000)"},
    {0}};

static const cli_opt_t report_opts[] = {
    {"since", 0, "DURATION", 0, "the window: the last DURATION (e.g. 90m, 24h, 30d; default 24h)"},
    {"tenant", 0, "TENANT", 0, "only this tenant's jobs (a tenant token: its own only)"},
    {0}};

static const cli_opt_t history_opts[] = {
    {"starttime", 'S', "TIME", 0, "jobs that ended at or after TIME (default: midnight)"},
    {"endtime", 'E', "TIME", 0, "jobs that ended at or before TIME (default: now)"},
    {"tenant", 'A', "TENANT", 0, "only this tenant's jobs (comma-separate several; admin token)"},
    {"state", 's', "STATES", 0, "only jobs that ended so (comma-separated; see above)"},
    {"name", 0, "NAMES", 0, "only jobs of these names (comma-separated)"},
    {"format", 'o', "COLUMNS", 0,
     "columns, comma-separated, each NAME or NAME%WIDTH (see above)"},
    {"jobs", 'j', "IDS", 0,
     "only these jobs (comma-separated ids); without -S, since the first job"},
    {"limit", 0, "N", 0, "at most N jobs"},
    {"noheader", 'n', NULL, 0, "no header line"},
    {"parsable2", 'P', NULL, 0, "columns separated by |, not padded"},
    {0}};

static const char history_details[] =
    "As sacct: TIME is local, 2026-12-01[T10:00[:00]], 12/01[/26], 1201[26],\n"
    "10:00[:00] (today), now, now-2hours (seconds, minutes, hours, days, weeks),\n"
    "today, midnight, noon. STATES: COMPLETED (CD), FAILED (F), TIMEOUT (TO),\n"
    "OUT_OF_MEMORY (OOM), NODE_FAIL (NF), CANCELLED (CA).\n"
    "Columns for --format (case-insensitive): JobID, JobName, Tenant (Account),\n"
    "State, ExitCode, Reason, Submit, Start, End, Elapsed, ElapsedRaw, NTasks,\n"
    "AllocGPUs (GPUs), AllocTRES, GPUHours, Partition (Pool), Timelimit.\n"
    "Default: JobID,JobName,Tenant,State,ExitCode,Elapsed,AllocGPUs,GPUHours.\n"
    "-j/--jobs IDS: only these jobs, whenever they ended (unless -S is given).";

static const cli_opt_t help_opts[] = {
    {"markdown", 0, NULL, 0, "with `help spec`: the table as Markdown (as in docs/jobspec.md)"},
    {0}};

static const cli_opt_t logs_opts[] = {
    {"task", 't', "N", 0, "task index (default 0)"},
    {"follow", 'f', NULL, 0, "keep printing new output until the task ends"},
    {0}};

static const cli_opt_t up_opts[] = {
    {"dir", 0, "DIR", 0, "state directory (default ./.sluice)"},
    {"port", 0, "PORT", 0, "HTTP API port on 127.0.0.1 (default 7070, or as before)"},
    {"agent-port", 0, "PORT", 0, "agent port on 127.0.0.1 (default 7071, or as before)"},
    {"name", 0, "NAME", 0, "node name of the local agent (default: short host name)"},
    {"gpus", 0, "N", 0, "declare N GPUs on the local node (default: NVML, else none)"},
    {"gpu-model", 0, "M", 0, "model of the declared GPUs (default H100 with --gpus)"},
    {"gpu-memory", 0, "Q", 0, "memory per declared GPU (default 80Gi with --gpus)"},
    {"cpus", 0, "Q", 0, "CPUs the local node offers (default: this machine's)"},
    {"memory", 0, "Q", 0, "memory the local node offers (default: this machine's)"},
    {"launcher", 0, "TEMPLATE", 0, "container launcher for jobs with an image (see sluice-agent --help)"},
    {"detach", 'd', NULL, 0, "start in the background and return; stop with `sluice down`"},
    {0}};

static const cli_opt_t drain_opts[] = {
    {"deadline", 0, "D", 0,
     "stop the tasks left at D: a duration from now (30m, 2h, 0) or a local time "
     "(2026-12-01 06:30, 06:30); default: wait for them to end"},
    {"reason", 0, "TEXT", 0, "why, shown in `sluice nodes`"},
    {0}};

static const cli_opt_t resv_opts[] = {
    {"nodes", 0, "N", 0, "create: reserve N whole nodes (picked: up, free by the start)"},
    {"nodelist", 0, "A,B", 0, "create: reserve these nodes (a list or a host list, n[1-4])"},
    {"gpus", 0, "N", 0, "create: reserve whole nodes holding at least N GPUs"},
    {"start", 0, "TIME", 0, "create: now (default), now+1hour, 2026-12-01T10:00, 10:00"},
    {"duration", 0, "DUR", 0, "create: 2:00:00, 90m, 2h, 1-00:00:00 (a bare number is minutes)"},
    {"end", 0, "TIME", 0, "create: instead of --duration, when the window ends"},
    {"tenants", 0, "A[,B]", 0, "create: the tenants whose jobs may use it (--reservation NAME)"},
    {"name", 0, "NAME", 0, "create: its name (default resv-N)"},
    {0}};

static const cli_opt_t secret_opts[] = {
    {"from-literal", 0, "KEY=VALUE", 1, "create: a key and its value (shown by ps: prefer --from-file)"},
    {"from-file", 0, "[KEY=]PATH", 1, "create: a key whose value is the file's bytes (KEY: its name)"},
    {"config-map", 0, NULL, 0, "create: a config map rather than a secret"},
    {"tenant", 0, "TENANT", 0, "the tenant whose secrets (the admin token must name one)"},
    {0}};

static const cli_opt_t down_opts[] = {
    {"dir", 0, "DIR", 0, "state directory (default ./.sluice)"},
    {0}};

static int cmd_version(cli_t *c);
static int cmd_help(cli_t *c);

static const cli_cmd_t commands[] = {
    {"submit", "[-- COMMAND [ARG...] | SCRIPT [ARG...]]", "submit a job",
     "The command runs on every task. Without -f, the flags describe the job; with\n"
     "-f, flags given as well override the file's fields. Prints the job id.\n"
     "A SCRIPT (a file that begins with #!, not after --) is a Slurm batch script:\n"
     "its #SBATCH directives describe the job, flags given here override them, and\n"
     "the script itself is copied into the job (see `sluice sbatch`, docs/slurm.md).",
     cli_cmd_submit, submit_opts, 1},
    {"queue", "", "list pending and running jobs (--all: finished ones too)", NULL, cli_cmd_queue,
     queue_opts, 0},
    {"show", "JOB", "show a job: state, placement, and why it waits", NULL, cli_cmd_show, show_opts, 0},
    {"cancel", "JOB...", "cancel jobs (running tasks get SIGTERM, then SIGKILL)", NULL,
     cli_cmd_cancel, none_opts, 0},
    {"nodes", "", "list nodes and their free capacity, by name",
     "The nodes are fetched from the controller 1,000 a page (GET /v1/nodes?limit=&after=)\n"
     "and printed as one table.",
     cli_cmd_nodes, nodes_opts, 0},
    {"tenants", "", "list tenants, their usage and dominant share", NULL, cli_cmd_tenants, none_opts, 0},
    {"controllers", "", "list the controllers: leader, epoch, each member's applied log and lag",
     "In HA mode (sluiced --ha, docs/ha.md) any member answers, a follower too;\n"
     "a single controller shows itself as the leader. APPLIED is the last log\n"
     "entry in a member's state file; LAG how many entries it is behind the leader.",
     cli_cmd_controllers, none_opts, 0},
    {"drain", "NODE", "take no new work on a node; stop what is left at --deadline",
     "The tasks left at the deadline get their priority class's signal, then\n"
     "SIGKILL after its grace; their jobs are requeued with their submit time.\n"
     "Without --deadline the drain waits for the tasks to end. Admin token.",
     cli_cmd_drain, drain_opts, 0},
    {"resume", "NODE", "end a node's drain: it takes new work again (admin token)", NULL,
     cli_cmd_resume, none_opts, 0},
    {"logs", "JOB", "print a task's output (stdout and stderr)", NULL, cli_cmd_logs, logs_opts, 0},
    {"reservation", "create|list|show NAME|delete NAME", "advance reservations of nodes for tenants",
     "A reservation keeps whole nodes for its tenants during a window: other jobs\n"
     "that would still run at its start keep off them (shorter ones run there\n"
     "before it), and jobs submitted with --reservation NAME run only there and\n"
     "then; they are stopped at the window's end. Creating and deleting take the\n"
     "admin token; deleting ends it now. docs/scheduling.md.",
     cli_cmd_reservation, resv_opts, 0},
    {"secret", "create NAME|list|show NAME|delete NAME", "the tenant's secrets and config maps",
     "A secret holds keys and values that only the tenant's tasks see: jobs name it\n"
     "in their spec's `secrets` (an environment variable, every key as variables,\n"
     "or files of mode 0400 in the job's directory). Values are sealed at rest\n"
     "(AES-256-GCM) and never shown: list and show give keys and sizes. Tenant\n"
     "tokens see their own; the admin token names one with --tenant. docs/secrets.md.",
     cli_cmd_secret, secret_opts, 0},
    {"sbatch", "[SBATCH OPTIONS] SCRIPT [ARG...]", "submit a Slurm batch script (#SBATCH directives)",
     "Takes sbatch's own options (-n, -N, --gres=gpu:2, -t 1-00:00, -p, -A, -o, --array,\n"
     "--dependency, ...), which override the script's #SBATCH directives; the script\n"
     "is copied into the job, an allocation: it runs once, on the first node, and\n"
     "srun inside starts job steps on the allocation's tasks (docs/slurm.md).\n"
     "-N keeps distinct nodes, --exclusive and --mem=0 whole nodes. Every option\n"
     "Sluice does not support is an error naming it and its line, all at once;\n"
     "--ignore-unsupported makes them warnings (not those that ask for resources).\n"
     "Also: --parsable (print the id only),\n"
     "--wrap CMD, --dry-run (print the JSON submission). docs/slurm.md maps every\n"
     "directive. `sluice submit SCRIPT` does the same with Sluice's own flags.",
     cli_cmd_sbatch, none_opts, CLI_RAW_ARGS},
    {"srun", "[OPTIONS] COMMAND [ARG...]", "run a job step: N ranks of COMMAND (also as `srun`)",
     "Inside an allocation (SLURM_JOB_ID set) a step of it; elsewhere an allocation\n"
     "of its own for the step. Options, as Slurm's: -n/--ntasks N, -N/--nodes N,\n"
     "--ntasks-per-node N, -c/--cpus-per-task N, --gpus-per-task [TYPE:]N, -l/--label,\n"
     "--export ALL|NONE|VAR[=val],..., -K/--kill-on-bad-exit, -o/--output FILE and\n"
     "-e/--error FILE (%t rank, %n node index, %N node, %j job, %s step, %u user),\n"
     "--overlap (more ranks than the allocation's tasks), -w/--nodelist A,B or n[1-2],\n"
     "-D/--chdir DIR, --jobid N, --pty (rank 0 on a terminal; srun's input is its);\n"
     "outside an allocation also -J, -t, -p, -A. Accepted\n"
     "and without effect: --exact, --exclusive, --mpi=none|pmix, --cpu-bind, -u, -v,\n"
     "-W, --mem, -Q (a step never exceeds its allocation). Exits with the highest\n"
     "exit code of the ranks, 1 when the step cannot start, 2 for a bad option;\n"
     "SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1/2 go to the ranks. Inside an\n"
     "allocation it uses SLUICE_SERVER and SLUICE_STEP_TOKEN; the global options\n"
     "below go before the command word (`sluice --server URL srun ...`). docs/slurm.md.",
     cli_cmd_srun, none_opts, CLI_RAW_ARGS},
    {"salloc", "[OPTIONS] [COMMAND [ARG...]]", "hold an allocation while a command runs (also as `salloc`)",
     "Makes an allocation (-n, -N, --ntasks-per-node, -c, --gpus-per-task, -t, -J, -p,\n"
     "-A as srun's), waits for it to start, then runs COMMAND (default $SHELL) here\n"
     "with SLURM_JOB_ID, SLURM_NTASKS and SLURM_JOB_NODELIST set, so that srun inside\n"
     "runs steps on it. The allocation ends when the command exits; salloc exits\n"
     "with its status. docs/slurm.md.",
     cli_cmd_salloc, none_opts, CLI_RAW_ARGS},
    {"history", "", "finished jobs from the controller's database (alias: sacct)",
     history_details,
     cli_cmd_history, history_opts, 0},
    {"sacct", "", "the same as history (also as `sacct`)", history_details, cli_cmd_history,
     history_opts, 0},
    {"squeue", "[-h] [-o FORMAT] [-j IDS] [-u USERS] [--me] [-t STATES]",
     "pending and running jobs in Slurm's squeue formats (also as `squeue`)",
     "`squeue --help` lists its options and fields (docs/slurm.md).", cli_cmd_squeue, none_opts,
     CLI_RAW_ALL},
    {"scancel", "JOBID...", "cancel jobs, as Slurm's scancel (also as `scancel`)",
     "`scancel --help` lists its options (docs/slurm.md).", cli_cmd_scancel, none_opts, CLI_RAW_ALL},
    {"sinfo", "[-h] [-o FORMAT] [-p POOLS] [-N]",
     "nodes by pool and state in Slurm's sinfo formats (also as `sinfo`)",
     "`sinfo --help` lists its options and fields (docs/slurm.md).", cli_cmd_sinfo, none_opts,
     CLI_RAW_ALL},
    {"scontrol", "show hostnames|hostlist|job|node [ARG]",
     "Slurm's scontrol show, for host lists, a job, a node (also as `scontrol`)",
     "`scontrol --help` lists what it shows (docs/slurm.md).", cli_cmd_scontrol, none_opts,
     CLI_RAW_ALL},
    {"slurm-commands", "install DIR", "link Slurm's command names to this binary in DIR",
     "Makes DIR/sbatch, srun, salloc, squeue, scancel, sacct, sinfo and scontrol\n"
     "symbolic links to this sluice binary, which answers to each name as that\n"
     "command; put DIR on PATH. An existing link is replaced; a file that is not\n"
     "a link is left as it is (exit 1). Tasks of Sluice's jobs have the names\n"
     "without this (their agent's slurm-bin is first on their PATH).",
     cli_cmd_slurm_commands, none_opts, 0},
    {"report", "", "throughput, delays, fairness, allocation and utilisation over a window",
     "Computed by sluiced from its database (docs/observability.md says how each\n"
     "figure is made). Fragmentation is a live gauge only: see\n"
     "sluice_gpu_fragmentation_ratio in Prometheus.",
     cli_cmd_report, report_opts, 0},
    {"up", "", "run a controller and a local agent (state in ./.sluice); Ctrl-C stops both",
     "Writes DIR/sluiced.yaml (random admin, cluster and tenant tokens; tenant\n"
     "\"default\") and DIR/cli.json, which later `sluice` commands in this directory\n"
     "use, so that `sluice submit -- echo hi` works from another terminal.\n"
     "Logs of both daemons go to the terminal, or with --detach to DIR/*.log.",
     cli_cmd_up, up_opts, 0},
    {"down", "", "stop what `sluice up --detach` started", NULL, cli_cmd_down, down_opts, 0},
    {"version", "", "print the version", NULL, cmd_version, none_opts, 0},
    {"help", "[COMMAND | spec]", "show help for a command, or the job spec's fields",
     "`sluice help spec` lists the fields of a job spec (flags of `submit`, keys\n"
     "of a spec file, JSON fields of POST /v1/jobs) with their ranges.",
     cmd_help, help_opts, 0},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static const char global_help[] =
    "global options:\n"
    "  --server URL     controller URL (env SLUICE_SERVER; default from .sluice/cli.json,\n"
    "                   else http://127.0.0.1:7070); several, comma-separated, are\n"
    "                   tried in turn, and a 307 to the leader is followed\n"
    "  --token TOKEN    API token (env SLUICE_TOKEN; default from .sluice/cli.json)\n"
    "  --cacert FILE    CA (PEM) that signs an https:// server's certificate (env\n"
    "                   SLUICE_CACERT; default from .sluice/cli.json, else the system's)\n"
    "  --json           print the server's JSON instead of a table\n"
    "  -h, --help       help\n"
    "\n"
    "exit codes: 0 ok, 1 the server refused or failed the request, 2 usage error,\n"
    "3 cannot reach the server\n";

static void print_main_help(FILE *f) {
    fprintf(f, "usage: sluice [global options] COMMAND [options] [args]\n\n"
               "Sluice GPU cluster scheduler: submit and watch jobs.\n\ncommands:\n");
    int w = 0; /* the longest name sets the column */
    for (size_t i = 0; i < NCOMMANDS; i++)
        if ((int)strlen(commands[i].name) > w) w = (int)strlen(commands[i].name);
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(f, "  %-*s %s\n", w, commands[i].name, commands[i].summary);
    fprintf(f, "\n%s\nRun `sluice COMMAND --help` for a command's options, `sluice help spec` for\n"
               "the fields of a job spec.\n", global_help);
}

static void print_cmd_help(const cli_cmd_t *cmd, FILE *f) {
    fprintf(f, "usage: sluice %s%s%s%s\n\n%s\n", cmd->name, cmd->opts[0].name ? " [options]" : "",
            cmd->args[0] ? " " : "", cmd->args, cmd->summary);
    if (cmd->details) fprintf(f, "\n%s\n", cmd->details);
    if (cmd->opts[0].name) {
        fprintf(f, "\noptions:\n");
        for (const cli_opt_t *o = cmd->opts; o->name; o++) {
            char left[96];
            if (o->shortname)
                snprintf(left, sizeof left, "-%c, --%s%s%s", o->shortname, o->name,
                         o->metavar ? " " : "", o->metavar ? o->metavar : "");
            else
                snprintf(left, sizeof left, "    --%s%s%s", o->name, o->metavar ? " " : "",
                         o->metavar ? o->metavar : "");
            if (strlen(left) > 28)
                fprintf(f, "  %s\n  %-28s %s\n", left, "", o->help);
            else
                fprintf(f, "  %-28s %s\n", left, o->help);
        }
    }
    fprintf(f, "\n%s", global_help);
}

static int cmd_version(cli_t *c) {
    if (c->json)
        printf("{\"version\": \"%s\"}\n", SLUICE_VERSION);
    else
        printf("sluice %s\n", SLUICE_VERSION);
    return CLI_OK;
}

static int cmd_help(cli_t *c) {
    if (c->npos == 0) {
        print_main_help(stdout);
        return CLI_OK;
    }
    if (strcmp(c->pos[0], "spec") == 0) {
        sl_jobspec_write_table(stdout, cli_has(c, "markdown"));
        return CLI_OK;
    }
    for (size_t i = 0; i < NCOMMANDS; i++) {
        if (strcmp(commands[i].name, c->pos[0]) == 0) {
            print_cmd_help(&commands[i], stdout);
            return CLI_OK;
        }
    }
    return cli_usage_error(c, "no command \"%s\"", c->pos[0]);
}

/* Global options: returns 1 if args[*i] was one (consuming its value), 0 if
 * not, -1 on a usage error. */
static int global_opt(cli_t *c, int argc, char **argv, int *i, int *help) {
    const char *a = argv[*i];
    const char *eq = strchr(a, '=');
    size_t nl = eq ? (size_t)(eq - a) : strlen(a);
    char **dst = NULL;
    if (strcmp(a, "--json") == 0) {
        c->json = 1;
        return 1;
    }
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
        *help = 1;
        return 1;
    }
    if (nl == 8 && strncmp(a, "--server", 8) == 0) dst = &c->server;
    else if (nl == 7 && strncmp(a, "--token", 7) == 0) dst = &c->token;
    else if (nl == 8 && strncmp(a, "--cacert", 8) == 0) dst = &c->cacert;
    else return 0;
    const char *v;
    if (eq) {
        v = eq + 1;
    } else {
        if (*i + 1 >= argc) {
            cli_usage_error(c, "%.*s needs a value", (int)nl, a);
            return -1;
        }
        v = argv[++*i];
    }
    free(*dst);
    *dst = strdup(v);
    return 1;
}

static int parse_args(cli_t *c, int argc, char **argv, int *help) {
    const cli_cmd_t *cmd = c->cmd;
    c->pos = calloc((size_t)argc + 1, sizeof *c->pos);
    if (cmd->rest_is_command >= CLI_RAW_ARGS) {
        /* sbatch: its own parser reads every word; only help is ours
         * (squeue: not even that). */
        *help = cmd->rest_is_command == CLI_RAW_ARGS && argc > 0 &&
                (strcmp(argv[0], "-h") == 0 || strcmp(argv[0], "--help") == 0);
        c->command = argv;
        c->ncommand = argc;
        return 0;
    }
    for (int i = 0; i < argc; i++) {
        char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            c->command_after_dashes = 1;
            if (cmd->rest_is_command) {
                c->command = argv + i + 1;
                c->ncommand = argc - i - 1;
            } else {
                for (int j = i + 1; j < argc; j++) c->pos[c->npos++] = argv[j];
            }
            return 0;
        }
        int g = global_opt(c, argc, argv, &i, help);
        if (g < 0) return -1;
        if (g > 0) continue;
        int idx = -1;
        const char *val = NULL;
        if (a[0] == '-' && a[1] == '-') {
            char *eq = strchr(a, '=');
            char name[64];
            snprintf(name, sizeof name, "%.*s", eq ? (int)(eq - a - 2) : (int)strlen(a + 2), a + 2);
            idx = cli_opt_index(cmd, name, 0);
            if (idx < 0) {
                cli_usage_error(c, "unknown option --%s", name);
                return -1;
            }
            if (eq) {
                if (!cmd->opts[idx].metavar) {
                    cli_usage_error(c, "--%s takes no value", name);
                    return -1;
                }
                val = eq + 1;
            }
        } else if (a[0] == '-' && a[1] && !a[2]) {
            idx = cli_opt_index(cmd, NULL, a[1]);
            if (idx < 0) {
                cli_usage_error(c, "unknown option %s", a);
                return -1;
            }
        } else if (a[0] == '-' && a[1] && !(a[1] >= '0' && a[1] <= '9')) {
            cli_usage_error(c, "unknown option %s", a);
            return -1;
        } else {
            if (cmd->rest_is_command) {
                c->command = argv + i;
                c->ncommand = argc - i;
                return 0;
            }
            c->pos[c->npos++] = a;
            continue;
        }
        const cli_opt_t *o = &cmd->opts[idx];
        if (o->metavar && !val) {
            if (i + 1 >= argc) {
                cli_usage_error(c, "--%s needs a value (%s)", o->name, o->metavar);
                return -1;
            }
            val = argv[++i];
        }
        if (c->set[idx] && !o->repeat) {
            cli_usage_error(c, "--%s given twice", o->name);
            return -1;
        }
        c->set[idx] = 1;
        c->val[idx] = val ? val : "1";
        if (o->repeat) {
            c->multi[idx] = realloc(c->multi[idx], sizeof(char *) * (size_t)(c->nmulti[idx] + 1));
            c->multi[idx][c->nmulti[idx]++] = val;
        }
    }
    return 0;
}

char *cli_find_config(void) {
    char path[PATH_MAX + 32];
    const char *d = getenv("SLUICE_DIR");
    if (d && *d) {
        snprintf(path, sizeof path, "%s/cli.json", d);
        return access(path, R_OK) == 0 ? strdup(path) : NULL;
    }
    char dir[PATH_MAX];
    if (!getcwd(dir, sizeof dir)) return NULL;
    for (;;) {
        snprintf(path, sizeof path, "%s/.sluice/cli.json", strcmp(dir, "/") == 0 ? "" : dir);
        if (access(path, R_OK) == 0) return strdup(path);
        char *slash = strrchr(dir, '/');
        if (!slash || slash == dir) {
            if (strcmp(dir, "/") == 0) return NULL;
            strcpy(dir, "/");
            continue;
        }
        *slash = '\0';
    }
}

static void load_config(cli_t *c) {
    const char *env;
    if (!c->server && (env = getenv("SLUICE_SERVER")) && *env) c->server = strdup(env);
    if (!c->token && (env = getenv("SLUICE_TOKEN")) && *env) c->token = strdup(env);
    if (!c->cacert && (env = getenv("SLUICE_CACERT")) && *env) c->cacert = strdup(env);
    c->config_path = cli_find_config();
    if (c->config_path) {
        json_error_t err;
        json_t *cfg = json_load_file(c->config_path, 0, &err);
        if (!cfg) {
            fprintf(stderr, "sluice: ignoring %s: %s\n", c->config_path, err.text);
        } else {
            const char *s;
            const char *cs = json_string_value(json_object_get(cfg, "server"));
            /* The CA of `sluice up` goes with its own server only. */
            if (!c->cacert && cs && (!c->server || strcmp(c->server, cs) == 0) &&
                (s = json_string_value(json_object_get(cfg, "cacert"))))
                c->cacert = strdup(s);
            if (!c->server && (s = json_string_value(json_object_get(cfg, "server")))) c->server = strdup(s);
            if (!c->token && (s = json_string_value(json_object_get(cfg, "token")))) {
                c->token = strdup(s);
                /* The default tenant only goes with the config's own token. */
                if ((s = json_string_value(json_object_get(cfg, "tenant")))) c->tenant = strdup(s);
            }
            json_decref(cfg);
        }
    }
    if (!c->server) c->server = strdup("http://127.0.0.1:7070");
    /* Several servers (--server A,B,C): each normalised; cli_http tries
     * them in turn (http.c). */
    char list[SL_HOSTPORT_MAX * 520], err[400];
    if (sl_url_list_normalize(c->server, list, sizeof list, err, sizeof err) < 0) {
        fprintf(stderr, "sluice: --server: %s\n", err); /* and cli_http cannot reach it */
        return;
    }
    free(c->server);
    c->server = strdup(list);
}

int main(int argc, char **argv) {
    cli_t c = {0};
    int help = 0, i = 1, rc;
    init_submit_opts();
    /* Called by a Slurm command's name (srun, squeue: links to this binary,
     * as busybox's applets), it is that command. */
    const char *self = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
    bool as_named = false;
    for (size_t k = 0; sl_slurm_commands[k]; k++)
        as_named |= strcmp(sl_slurm_commands[k], self) == 0;
    if (as_named)
        i = 0;
    /* Global options may precede the command. */
    for (; !as_named && i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--version") == 0) {
            printf("sluice %s\n", SLUICE_VERSION);
            return CLI_OK;
        }
        int g = global_opt(&c, argc, argv, &i, &help);
        if (g < 0) return CLI_EUSAGE;
        if (g == 0) return cli_usage_error(&c, "unknown option %s", argv[i]);
    }
    if (i >= argc) {
        print_main_help(help ? stdout : stderr);
        return help ? CLI_OK : CLI_EUSAGE;
    }
    for (size_t k = 0; k < NCOMMANDS; k++)
        if (strcmp(commands[k].name, i == 0 ? self : argv[i]) == 0) c.cmd = &commands[k];
    if (!c.cmd) return cli_usage_error(&c, "no command \"%s\" (see sluice --help)", argv[i]);
    if (parse_args(&c, argc - i - 1, argv + i + 1, &help) != 0) {
        rc = CLI_EUSAGE;
        goto out;
    }
    if (help) {
        print_cmd_help(c.cmd, stdout);
        rc = CLI_OK;
        goto out;
    }
    load_config(&c);
    rc = c.cmd->run(&c);
out:
    cli_http_cleanup();
    for (int k = 0; k < CLI_MAX_OPTS; k++) free(c.multi[k]);
    free(c.pos);
    free(c.server);
    free(c.token);
    free(c.cacert);
    free(c.tenant);
    free(c.config_path);
    return rc;
}
