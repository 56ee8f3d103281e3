/*
 * main.c - the sluice-sim command line.
 *
 *   sluice-sim fill   --nodes F --jobs F [--placement a,b] [--seeds 42-51] ...
 *   sluice-sim replay --nodes F --jobs F [--queue a,b] [--placement a,b]
 *                     [--backfill none,easy] [--sharing on,off] ...
 *   sluice-sim gen sweep|megatron|mix|cluster [--seed N] [--jobs N] -o F
 *
 * Several policies given as comma lists run side by side (the cartesian
 * product for replay) and print one table. Exit status: 0 on success, 1 if
 * a run or a file fails, 2 for a bad command line.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "arraydep.h"
#include "sim.h"

#define MAX_LIST 64

typedef struct list {
    char *item[MAX_LIST];
    size_t n;
    char *buf;
} list_t;

static void list_free(list_t *l) {
    free(l->buf);
    memset(l, 0, sizeof *l);
}

/* Splits "a,b,c" into l (which borrows from a copy). */
static int list_parse(const char *s, const char *what, list_t *l) {
    list_free(l);
    l->buf = strdup(s);
    for (char *save = NULL, *tok = strtok_r(l->buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        if (l->n == MAX_LIST) {
            fprintf(stderr, "sluice-sim: too many %s values (at most %d)\n", what, MAX_LIST);
            return -1;
        }
        l->item[l->n++] = tok;
    }
    if (l->n == 0) {
        fprintf(stderr, "sluice-sim: empty --%s list\n", what);
        return -1;
    }
    return 0;
}

static void print_places(FILE *f) {
    const sl_place_policy_t *const *p = sl_place_policy_list();
    for (size_t i = 0; p && p[i]; i++) fprintf(f, "%s%s", i ? ", " : "", p[i]->name);
}

static void print_queues(FILE *f) {
    const sl_queue_policy_t *const *p = sl_queue_policy_list();
    for (size_t i = 0; p && p[i]; i++) fprintf(f, "%s%s", i ? ", " : "", p[i]->name);
}

static int check_places(list_t *l) {
    if (l->n == 1 && strcmp(l->item[0], "all") == 0) {
        const sl_place_policy_t *const *p = sl_place_policy_list();
        l->n = 0;
        for (size_t i = 0; p && p[i] && l->n < MAX_LIST; i++) l->item[l->n++] = (char *)p[i]->name;
        return 0;
    }
    for (size_t i = 0; i < l->n; i++) {
        if (!sl_place_policy_find(l->item[i])) {
            fprintf(stderr, "sluice-sim: unknown placement \"%s\" (known: ", l->item[i]);
            print_places(stderr);
            fprintf(stderr, ")\n");
            return -1;
        }
    }
    return 0;
}

static int check_queues(list_t *l) {
    for (size_t i = 0; i < l->n; i++) {
        if (!sl_queue_policy_find(l->item[i])) {
            fprintf(stderr, "sluice-sim: unknown queue order \"%s\" (known: ", l->item[i]);
            print_queues(stderr);
            fprintf(stderr, ")\n");
            return -1;
        }
    }
    return 0;
}

static int check_backfills(const list_t *l) {
    for (size_t i = 0; i < l->n; i++) {
        sl_backfill_kind_t k;
        if (sl_backfill_parse(l->item[i], &k) < 0) {
            fprintf(stderr, "sluice-sim: unknown backfill \"%s\" (known: none, easy)\n", l->item[i]);
            return -1;
        }
    }
    return 0;
}

static int parse_u64(const char *s, uint64_t *out) {
    char *end;
    if (!*s || *s == '-') return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end) return -1;
    *out = v;
    return 0;
}

/* "42-51", "1,2,5-7" or "42". */
static int parse_seeds(const char *s, uint64_t *seeds, size_t *n, size_t max) {
    list_t l = {0};
    int rc = -1;
    *n = 0;
    if (list_parse(s, "seeds", &l) < 0) return -1;
    for (size_t i = 0; i < l.n; i++) {
        char *dash = strchr(l.item[i], '-');
        uint64_t a, b;
        if (dash) {
            *dash = '\0';
            if (parse_u64(l.item[i], &a) < 0 || parse_u64(dash + 1, &b) < 0 || b < a) goto bad;
        } else {
            if (parse_u64(l.item[i], &a) < 0) goto bad;
            b = a;
        }
        for (uint64_t x = a; x <= b; x++) {
            if (*n == max) {
                fprintf(stderr, "sluice-sim: at most %zu seeds\n", max);
                goto out;
            }
            seeds[(*n)++] = x;
        }
    }
    rc = 0;
    goto out;
bad:
    fprintf(stderr, "sluice-sim: bad --seeds \"%s\" (expected e.g. 42-51 or 1,2,5-7)\n", s);
out:
    list_free(&l);
    return rc;
}

static void usage_main(FILE *f) {
    fprintf(f,
            "usage: sluice-sim <command> [options]\n"
            "\n"
            "Runs the Sluice scheduling core (libsluice, unchanged) over a GPU-cluster trace.\n"
            "\n"
            "commands:\n"
            "  fill     the FGD paper's fill protocol: unallocated GPU %% vs arrived GPU %%\n"
            "  replay   discrete-event replay: queueing delay, JCT, utilisation, fairness\n"
            "  gen      write a generated workload (sweep, megatron, mix) or cluster CSV\n"
            "  failures effective training time of one gang under GPU faults (a rate per\n"
            "           GPU-hour, seeded), handled by sluice, Slurm + NHC, or by hand:\n"
            "           --gpus --days --fail-rate --persist --checkpoint --restart --detect\n"
            "           --crash --nhc-interval --human --repair --clear-after --seed --seeds\n"
            "  help     this text; 'sluice-sim <command> --help' for a command's options\n"
            "\n"
            "trace formats (--format, guessed from the jobs file's header when omitted):\n"
            "  alibaba-v2023  nodes sn,cpu_milli,memory_mib,gpu,model; pods name,cpu_milli,\n"
            "                 memory_mib,num_gpu,gpu_milli[,gpu_spec,qos,pod_phase,\n"
            "                 creation_time,deletion_time,scheduled_time]\n"
            "  philly         jobs timestamp,duration,num_gpus,gpu_time,cluster; machines\n"
            "                 machineId,number of GPUs[,single GPU mem]\n"
            "  sluice         nodes name,cpu,memory,gpus,gpu_model,gpu_memory,pool; jobs\n"
            "                 id,tenant,submit,duration,tasks,cpu,memory,gpus,gpu_share,\n"
            "                 gpu_models,pool,priority,time_limit[,gpu_memory]\n"
            "See docs/sim.md.\n");
}

/* The preemption options, the same for fill and replay. */
#define PREEMPT_HELP                                                                      \
    "  --preempt[=LIST]     on | off | off,on: preemption by priority (any job may\n"     \
    "                       preempt a strictly lower priority; under las, a lower\n"     \
    "                       attained-service queue), fair-share reclaim and elastic\n"   \
    "                       growth (docs/sim.md) (default off; alone: on)\n"             \
    "  --checkpoint S       with --preempt: victims lose the work since their last\n"    \
    "                       checkpoint, S seconds apart (default: all since start)\n"

static void usage_fill(FILE *f) {
    fprintf(f,
            "usage: sluice-sim fill --nodes FILE --jobs FILE [options]\n"
            "\n"
            "FGD paper protocol: per seed, shuffle the pod list, inflate it to 130%% of GPU\n"
            "capacity by sampling with replacement, schedule each pod once (no departures),\n"
            "record unallocated GPU %% against arrived GPU %% of capacity.\n"
            "\n"
            "  --nodes FILE         node list\n"
            "  --jobs FILE          pod/job list (every job is one pod or gang)\n"
            "  --format FMT         alibaba-v2023 | philly | sluice (default: from the header)\n"
            "  --placement LIST     comma list of placements, or \"all\" (default: %s)\n"
            "                       known: ",
            sl_place_policy_default());
    print_places(f);
    fprintf(f,
            "\n"
            "  --seeds LIST         seeds, e.g. 42-51 or 1,3,5 (default 42); mean and sd\n"
            "  --seed N             one seed (same as --seeds N)\n"
            PREEMPT_HELP
            "  --json FILE          write results as JSON\n"
            "  --svg DIR            write DIR/fill_unallocated.svg\n"
            "  --dump-order PREFIX  write PREFIX.SEED per seed: \"N node rank\" lines (ties go\n"
            "                       to the lowest rank), then \"P pod\" in arrival order, for\n"
            "                       tools/fgd_reference.go -replay\n"
            "  --check              assert invariants after every pod (slow)\n"
            "  --quiet              no progress bar (it only shows on a terminal anyway)\n"
            "  --topology on|off    off: place as if the nodes file had no topology column\n"
            "  -h, --help           this text\n");
}

static void usage_replay(FILE *f) {
    fprintf(f,
            "usage: sluice-sim replay --nodes FILE --jobs FILE [options]\n"
            "\n"
            "Discrete-event replay: jobs arrive at their submit times, run for their\n"
            "durations; after each batch of same-time events one scheduling cycle runs.\n"
            "Comma lists run every combination side by side.\n"
            "\n"
            "  --nodes FILE         node list\n"
            "  --jobs FILE          job list (needs submit times and durations)\n"
            "  --format FMT         alibaba-v2023 | philly | sluice (default: from the header)\n"
            "  --tenants FILE       name,weight (tenants not listed weigh 1)\n"
            "  --queue LIST         queue orders (default fifo); known: ");
    print_queues(f);
    fprintf(f,
            "\n"
            "  --placement LIST     placements, or \"all\" (default %s); known: ",
            sl_place_policy_default());
    print_places(f);
    fprintf(f,
            "\n"
            "  --backfill LIST      none | easy (default none)\n"
            "  --sharing LIST       on | off: off gives every GPU-share task a whole GPU\n"
            "                       (static allocation) (default on)\n"
            "  --node-fields on|off off ignores the jobs' nodes, tasks_per_node and exclusive\n"
            "                       columns: gangs pack onto as few nodes as fit (default on)\n"
            "  --estimate MODE      runtime estimate for jobs without a time_limit:\n"
            "                       exact = their real duration (default), none = no limit\n"
            "  --seed N             seed for random placement and tie-breaks (default 42)\n"
            "  --load F             scale the arrival rate by F: submit times are divided by\n"
            "                       F, durations kept (default 1 = the trace as recorded)\n"
            PREEMPT_HELP
            "  --json FILE          write results as JSON\n"
            "  --jobs-csv FILE      per-job id,tenant,submit,start,end,tasks,gpus,nodes; with\n"
            "                       several combinations, FILE gets a suffix per combination\n"
            "  --svg DIR            write DIR/queue_delay_cdf.svg and DIR/gpu_allocation.svg\n"
            "  --check              assert invariants after every event (no over-allocation,\n"
            "                       gangs all-or-none, core bookkeeping; with easy under\n"
            "                       any order but priority, no delay to the job holding\n"
            "                       the reservation)\n"
            "  --quiet              no progress bar (it only shows on a terminal anyway)\n"
            "  --topology on|off    off: place as if the nodes file had no topology column\n"
            "  -h, --help           this text\n");
}

static void usage_gen(FILE *f) {
    fprintf(f,
            "usage: sluice-sim gen sweep|megatron|mix|cluster [options] -o FILE\n"
            "\n"
            "  sweep      hyper-parameter trials: 1 task, a GPU share + GPU memory, short\n"
            "  megatron   gangs of 8 tasks x 4 GPUs, hours long\n"
            "  mix        70%% sweep, 20%% fine-tune (1-8 GPUs), 10%% megatron\n"
            "  cluster    a Sluice nodes CSV of identical GPU nodes\n"
            "\n"
            "  --seed N           random seed (default 42); same seed, same file\n"
            "  --jobs N           number of jobs (default 1000)\n"
            "  --interarrival S   mean seconds between submissions (default: sweep 20,\n"
            "                     megatron 14400, mix 1800: about half of the default\n"
            "                     cluster's 128 GPUs busy)\n"
            "  --nodes N          cluster: node count (default 16)\n"
            "  --gpus N           cluster: GPUs per node (default 8)\n"
            "  --gpu-model NAME   cluster: GPU model (default A100)\n"
            "  --gpu-memory Q     cluster: memory per GPU (default 80Gi)\n"
            "  --cpu Q            cluster: CPUs per node (default 128)\n"
            "  --memory Q         cluster: memory per node (default 1Ti)\n"
            "  --array TEXT       sweep: each job an array of this Slurm text, e.g.\n"
            "                     0-99%%8 (one search: trials of one shape, 8 at once)\n"
            "  --blocks N         cluster: topology of N blocks (with --racks; default 1)\n"
            "  --racks N          cluster: N racks per block, in a topology column\n"
            "  --topology-required LEVEL  jobs: every job must run in one host, rack or\n"
            "                     block (a topology_required column)\n"
            "  -o, --output FILE  where to write (default: stdout)\n");
}

enum {
    O_NODES = 1000, O_JOBS, O_FORMAT, O_TENANTS, O_PLACEMENT, O_QUEUE, O_BACKFILL, O_SHARING,
    O_ESTIMATE, O_SEED, O_SEEDS, O_JSON, O_JOBSCSV, O_SVG, O_CHECK, O_QUIET, O_INTER, O_GPUS,
    O_GMODEL, O_GMEM, O_CPU, O_MEM, O_LOAD, O_ARRAY, O_PREEMPT, O_CKPT, O_BLOCKS, O_RACKS,
    O_TOPOREQ, O_TOPOLOGY, O_DUMPORDER, O_NODESEM
};

typedef struct opts {
    const char *nodes, *jobs, *tenants, *json, *jobs_csv, *svg, *estimate;
    const char *dump_order; /* fill --dump-order PREFIX */
    sim_format_t format;
    list_t placement, queue, backfill, sharing, preempt;
    int64_t checkpoint_us;
    uint64_t seeds[1024];
    size_t nseeds;
    double load;
    bool check, quiet;
    bool topology_off; /* --topology off */
    bool nodes_off;    /* --node-fields off */
} opts_t;

static int parse_run_opts(int argc, char **argv, bool replay, opts_t *o) {
    static const struct option lo[] = {
        {"nodes", required_argument, 0, O_NODES},       {"jobs", required_argument, 0, O_JOBS},
        {"format", required_argument, 0, O_FORMAT},     {"tenants", required_argument, 0, O_TENANTS},
        {"placement", required_argument, 0, O_PLACEMENT}, {"queue", required_argument, 0, O_QUEUE},
        {"backfill", required_argument, 0, O_BACKFILL}, {"sharing", required_argument, 0, O_SHARING},
        {"estimate", required_argument, 0, O_ESTIMATE}, {"seed", required_argument, 0, O_SEED},
        {"seeds", required_argument, 0, O_SEEDS},       {"json", required_argument, 0, O_JSON},
        {"jobs-csv", required_argument, 0, O_JOBSCSV},  {"svg", required_argument, 0, O_SVG},
        {"check", no_argument, 0, O_CHECK},             {"quiet", no_argument, 0, O_QUIET},
        {"load", required_argument, 0, O_LOAD},         {"help", no_argument, 0, 'h'},
        {"preempt", optional_argument, 0, O_PREEMPT},   {"checkpoint", required_argument, 0, O_CKPT},
        {"topology", required_argument, 0, O_TOPOLOGY}, {"node-fields", required_argument, 0, O_NODESEM},
        {"dump-order", required_argument, 0, O_DUMPORDER},
        {0, 0, 0, 0}};
    const char *cmd = replay ? "replay" : "fill";
    int c;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
        switch (c) {
        case O_NODES: o->nodes = optarg; break;
        case O_JOBS: o->jobs = optarg; break;
        case O_FORMAT:
            if (sim_format_parse(optarg, &o->format) < 0) {
                fprintf(stderr, "sluice-sim: unknown --format \"%s\" (known: alibaba-v2023, "
                        "philly, sluice)\n", optarg);
                return 2;
            }
            break;
        case O_TENANTS: o->tenants = optarg; break;
        case O_PLACEMENT:
            if (list_parse(optarg, "placement", &o->placement) < 0) return 2;
            break;
        case O_QUEUE:
            if (list_parse(optarg, "queue", &o->queue) < 0) return 2;
            break;
        case O_BACKFILL:
            if (list_parse(optarg, "backfill", &o->backfill) < 0) return 2;
            break;
        case O_SHARING:
            if (list_parse(optarg, "sharing", &o->sharing) < 0) return 2;
            break;
        case O_ESTIMATE: o->estimate = optarg; break;
        case O_SEED:
        case O_SEEDS:
            if (parse_seeds(optarg, o->seeds, &o->nseeds, c == O_SEED ? 1 : 1024) < 0) return 2;
            break;
        case O_JSON: o->json = optarg; break;
        case O_JOBSCSV: o->jobs_csv = optarg; break;
        case O_SVG: o->svg = optarg; break;
        case O_DUMPORDER: o->dump_order = optarg; break;
        case O_CHECK: o->check = true; break;
        case O_QUIET: o->quiet = true; break;
        case O_PREEMPT:
            if (list_parse(optarg ? optarg : "on", "preempt", &o->preempt) < 0) return 2;
            break;
        case O_CKPT:
            if (sim_parse_seconds(optarg, &o->checkpoint_us) < 0 || o->checkpoint_us <= 0) {
                fprintf(stderr, "sluice-sim %s: --checkpoint takes seconds > 0 (got \"%s\")\n",
                        cmd, optarg);
                return 2;
            }
            break;
        case O_TOPOLOGY:
            if (strcmp(optarg, "on") && strcmp(optarg, "off")) {
                fprintf(stderr, "sluice-sim %s: --topology takes on or off (got \"%s\")\n",
                        cmd, optarg);
                return 2;
            }
            o->topology_off = strcmp(optarg, "off") == 0;
            break;
        case O_NODESEM:
            if (strcmp(optarg, "on") && strcmp(optarg, "off")) {
                fprintf(stderr, "sluice-sim %s: --node-fields takes on or off (got \"%s\")\n", cmd, optarg);
                return 2;
            }
            o->nodes_off = strcmp(optarg, "off") == 0;
            break;
        case O_LOAD: {
            char *end;
            o->load = strtod(optarg, &end);
            if (*end || !(o->load > 0) || o->load > 1e6) {
                fprintf(stderr, "sluice-sim %s: --load takes a factor > 0 (got \"%s\")\n", cmd,
                        optarg);
                return 2;
            }
            break;
        }
        case 'h':
            if (replay) usage_replay(stdout);
            else usage_fill(stdout);
            return 0;
        case ':':
            fprintf(stderr, "sluice-sim %s: option %s needs a value\n", cmd, argv[optind - 1]);
            return 2;
        default:
            fprintf(stderr, "sluice-sim %s: unknown option %s (see sluice-sim %s --help)\n", cmd,
                    argv[optind - 1], cmd);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "sluice-sim %s: unexpected argument \"%s\"\n", cmd, argv[optind]);
        return 2;
    }
    if (!o->nodes || !o->jobs) {
        fprintf(stderr, "sluice-sim %s: --nodes FILE and --jobs FILE are required\n", cmd);
        return 2;
    }
    if (!replay && (o->queue.n || o->backfill.n || o->sharing.n || o->estimate || o->jobs_csv ||
                    o->tenants || o->load > 0 || o->preempt.n || o->checkpoint_us)) {
        fprintf(stderr, "sluice-sim fill: --queue, --backfill, --sharing, --estimate, --tenants, "
                "--load, --preempt, --checkpoint and --jobs-csv apply to replay only (fill "
                "schedules each pod once, in order)\n");
        return 2;
    }
    if (replay && o->dump_order) {
        fprintf(stderr, "sluice-sim replay: --dump-order applies to fill only\n");
        return 2;
    }
    if (replay && o->nseeds > 1) {
        fprintf(stderr, "sluice-sim replay: give one --seed\n");
        return 2;
    }
    if (o->placement.n == 0) list_parse(sl_place_policy_default(), "placement", &o->placement);
    if (o->queue.n == 0) list_parse("fifo", "queue", &o->queue);
    if (o->backfill.n == 0) list_parse("none", "backfill", &o->backfill);
    if (o->sharing.n == 0) list_parse("on", "sharing", &o->sharing);
    if (o->preempt.n == 0) list_parse("off", "preempt", &o->preempt);
    for (size_t i = 0; i < o->preempt.n; i++) {
        if (strcmp(o->preempt.item[i], "on") != 0 && strcmp(o->preempt.item[i], "off") != 0) {
            fprintf(stderr, "sluice-sim: --preempt takes on, off or off,on (got \"%s\")\n",
                    o->preempt.item[i]);
            return 2;
        }
    }
    if (o->nseeds == 0) o->seeds[o->nseeds++] = 42;
    if (check_places(&o->placement) < 0 || check_queues(&o->queue) < 0 ||
        check_backfills(&o->backfill) < 0)
        return 2;
    for (size_t i = 0; i < o->sharing.n; i++) {
        if (strcmp(o->sharing.item[i], "on") != 0 && strcmp(o->sharing.item[i], "off") != 0) {
            fprintf(stderr, "sluice-sim: --sharing takes on, off or on,off (got \"%s\")\n",
                    o->sharing.item[i]);
            return 2;
        }
    }
    if (o->estimate && strcmp(o->estimate, "exact") != 0 && strcmp(o->estimate, "none") != 0) {
        fprintf(stderr, "sluice-sim: --estimate takes exact or none (got \"%s\")\n", o->estimate);
        return 2;
    }
    return -1; /* go on */
}

static void opts_free(opts_t *o) {
    list_free(&o->placement);
    list_free(&o->queue);
    list_free(&o->backfill);
    list_free(&o->sharing);
    list_free(&o->preempt);
}

static int load_trace(const opts_t *o, sim_trace_t *t) {
    char err[SIM_ERR_MAX];
    sim_trace_init(t);
    if (sim_load(t, o->nodes, o->jobs, o->tenants, o->format, err, sizeof err) < 0) {
        fprintf(stderr, "sluice-sim: %s\n", err);
        return 1;
    }
    if (t->gangs_split)
        fprintf(stderr, "sluice-sim: %zu Philly jobs larger than a machine became gangs of "
                "whole-machine tasks\n", t->gangs_split);
    return 0;
}

static int cmd_fill(int argc, char **argv) {
    opts_t o = {0};
    sim_trace_t t;
    sim_fill_result_t *res = NULL;
    size_t nres = 0;
    char err[SIM_ERR_MAX];
    int rc = parse_run_opts(argc, argv, false, &o);
    if (rc >= 0) {
        opts_free(&o);
        return rc;
    }
    if ((rc = load_trace(&o, &t)) != 0) goto out;
    t.topology_off = o.topology_off;
    sim_run_opts_t ro = {.check = o.check, .progress = !o.quiet && isatty(2),
                         .dump_order = o.dump_order};
    res = calloc(o.placement.n, sizeof *res);
    for (size_t i = 0; i < o.placement.n; i++) {
        if (sim_fill_run(&t, o.placement.item[i], o.seeds, o.nseeds, &ro, &res[i], err, sizeof err) < 0) {
            fprintf(stderr, "sluice-sim fill: %s: %s\n", o.placement.item[i], err);
            nres = i + 1;
            rc = 1;
            goto out;
        }
        nres = i + 1;
    }
    printf("fill: %zu nodes, %zu pods, %zu seed(s), format %s\n", t.nnodes, t.njobs, o.nseeds,
           sim_format_name(t.format));
    sim_fill_table(stdout, res, nres);
    if (o.json && sim_fill_json(o.json, res, nres, "fifo", "none", err, sizeof err) < 0) {
        fprintf(stderr, "sluice-sim: %s\n", err);
        rc = 1;
        goto out;
    }
    if (o.svg && sim_fill_svg(o.svg, res, nres, err, sizeof err) < 0) {
        fprintf(stderr, "sluice-sim: %s\n", err);
        rc = 1;
        goto out;
    }
    rc = 0;
out:
    for (size_t i = 0; i < nres; i++) sim_fill_result_fini(&res[i]);
    free(res);
    sim_trace_fini(&t);
    opts_free(&o);
    return rc;
}

static int cmd_replay(int argc, char **argv) {
    opts_t o = {0};
    sim_trace_t t;
    sim_replay_result_t *res = NULL;
    size_t nres = 0;
    char err[SIM_ERR_MAX];
    int rc = parse_run_opts(argc, argv, true, &o);
    if (rc >= 0) {
        opts_free(&o);
        return rc;
    }
    if ((rc = load_trace(&o, &t)) != 0) goto out;
    t.topology_off = o.topology_off;
    t.nodes_off = o.nodes_off;
    if (o.load > 0 && o.load != 1)
        for (size_t i = 0; i < t.njobs; i++)
            t.jobs[i].submit_us = (int64_t)llround((double)t.jobs[i].submit_us / o.load);
    sim_run_opts_t ro = {.check = o.check, .progress = !o.quiet && isatty(2)};
    size_t ncombo = o.queue.n * o.placement.n * o.backfill.n * o.sharing.n * o.preempt.n;
    res = calloc(ncombo, sizeof *res);
    for (size_t q = 0; q < o.queue.n; q++)
        for (size_t p = 0; p < o.placement.n; p++)
            for (size_t b = 0; b < o.backfill.n; b++)
                for (size_t s = 0; s < o.sharing.n; s++)
                for (size_t x = 0; x < o.preempt.n; x++) {
                    sim_replay_cfg_t cfg = {.queue = o.queue.item[q],
                                            .placement = o.placement.item[p],
                                            .backfill = o.backfill.item[b],
                                            .sharing = strcmp(o.sharing.item[s], "on") == 0,
                                            .estimate_exact = !o.estimate || strcmp(o.estimate, "exact") == 0,
                                            .seed = o.seeds[0],
                                            .preempt = strcmp(o.preempt.item[x], "on") == 0,
                                            .checkpoint_us = o.checkpoint_us};
                    if (sim_replay_run(&t, &cfg, &ro, &res[nres], err, sizeof err) < 0) {
                        fprintf(stderr, "sluice-sim replay: %s/%s/%s: %s\n", cfg.queue,
                                cfg.placement, cfg.backfill, err);
                        nres++;
                        rc = 1;
                        goto out;
                    }
                    nres++;
                }
    printf("replay: %zu nodes, %zu jobs, %zu tenants, format %s, load x%g\n", t.nnodes, t.njobs,
           t.ntenants, sim_format_name(t.format), o.load > 0 ? o.load : 1.0);
    sim_replay_table(stdout, res, nres);
    if (o.json && sim_replay_json(o.json, &t, res, nres, err, sizeof err) < 0) {
        fprintf(stderr, "sluice-sim: %s\n", err);
        rc = 1;
        goto out;
    }
    if (o.jobs_csv) {
        for (size_t i = 0; i < nres; i++) {
            char path[4096];
            if (nres == 1) {
                snprintf(path, sizeof path, "%s", o.jobs_csv);
            } else {
                const char *dot = strrchr(o.jobs_csv, '.');
                const char *slash = strrchr(o.jobs_csv, '/');
                int stem = dot && (!slash || dot > slash) ? (int)(dot - o.jobs_csv)
                                                          : (int)strlen(o.jobs_csv);
                snprintf(path, sizeof path, "%.*s.%s-%s-%s%s%s%s", stem, o.jobs_csv, res[i].queue,
                         res[i].placement, res[i].backfill, res[i].cfg.sharing ? "" : "-whole",
                         res[i].cfg.preempt ? "-preempt" : "", o.jobs_csv + stem);
            }
            if (sim_jobs_csv(path, &t, &res[i], err, sizeof err) < 0) {
                fprintf(stderr, "sluice-sim: %s\n", err);
                rc = 1;
                goto out;
            }
        }
    }
    if (o.svg && sim_replay_svg(o.svg, res, nres, err, sizeof err) < 0) {
        fprintf(stderr, "sluice-sim: %s\n", err);
        rc = 1;
        goto out;
    }
    rc = 0;
out:
    for (size_t i = 0; i < nres; i++) sim_replay_result_fini(&res[i]);
    free(res);
    sim_trace_fini(&t);
    opts_free(&o);
    return rc;
}

static int parse_int_opt(const char *s, const char *name, int64_t lo, int64_t hi, int64_t *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || !*s || *end || v < lo || v > hi) {
        fprintf(stderr, "sluice-sim gen: --%s takes an integer in %" PRId64 "..%" PRId64
                " (got \"%s\")\n", name, lo, hi, s);
        return -1;
    }
    *out = v;
    return 0;
}

static int cmd_gen(int argc, char **argv) {
    static const struct option lo[] = {
        {"seed", required_argument, 0, O_SEED},        {"jobs", required_argument, 0, O_JOBS},
        {"interarrival", required_argument, 0, O_INTER}, {"nodes", required_argument, 0, O_NODES},
        {"gpus", required_argument, 0, O_GPUS},        {"gpu-model", required_argument, 0, O_GMODEL},
        {"gpu-memory", required_argument, 0, O_GMEM},  {"cpu", required_argument, 0, O_CPU},
        {"memory", required_argument, 0, O_MEM},       {"output", required_argument, 0, 'o'},
        {"array", required_argument, 0, O_ARRAY},
        {"blocks", required_argument, 0, O_BLOCKS},    {"racks", required_argument, 0, O_RACKS},
        {"topology-required", required_argument, 0, O_TOPOREQ},
        {"help", no_argument, 0, 'h'},                 {0, 0, 0, 0}};
    sim_gen_opts_t g;
    sim_gen_opts_init(&g);
    const char *out = NULL;
    int64_t v;
    int c;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":ho:", lo, NULL)) != -1) {
        switch (c) {
        case O_SEED:
            if (parse_u64(optarg, &g.seed) < 0) {
                fprintf(stderr, "sluice-sim gen: bad --seed \"%s\"\n", optarg);
                return 2;
            }
            break;
        case O_JOBS:
            if (parse_int_opt(optarg, "jobs", 1, 10000000, &v) < 0) return 2;
            g.jobs = (int32_t)v;
            break;
        case O_INTER: {
            char *end;
            g.interarrival_s = strtod(optarg, &end);
            if (*end || !(g.interarrival_s > 0)) {
                fprintf(stderr, "sluice-sim gen: --interarrival takes seconds > 0\n");
                return 2;
            }
            break;
        }
        case O_NODES:
            if (parse_int_opt(optarg, "nodes", 1, 100000, &v) < 0) return 2;
            g.nodes = (int32_t)v;
            break;
        case O_GPUS:
            if (parse_int_opt(optarg, "gpus", 0, SL_MAX_GPUS_PER_NODE, &v) < 0) return 2;
            g.gpus = (int32_t)v;
            break;
        case O_GMODEL: g.gpu_model = optarg; break;
        case O_BLOCKS:
            if (parse_int_opt(optarg, "blocks", 1, 100000, &v) < 0) return 2;
            g.blocks = (int32_t)v;
            break;
        case O_RACKS:
            if (parse_int_opt(optarg, "racks", 1, 100000, &v) < 0) return 2;
            g.racks = (int32_t)v;
            break;
        case O_TOPOREQ: g.topology_required = optarg; break;
        case O_GMEM: g.gpu_memory = optarg; break;
        case O_CPU: g.cpu = optarg; break;
        case O_MEM: g.memory = optarg; break;
        case O_ARRAY: {
            char msg[200];
            if (sl_array_parse(optarg, SL_ARRAY_SIZE_CEILING, NULL, msg, sizeof msg) < 0) {
                fprintf(stderr, "sluice-sim gen: --array: \"%s\": %s\n", optarg, msg);
                return 2;
            }
            g.array = optarg;
            break;
        }
        case 'o': out = optarg; break;
        case 'h': usage_gen(stdout); return 0;
        case ':':
            fprintf(stderr, "sluice-sim gen: option %s needs a value\n", argv[optind - 1]);
            return 2;
        default:
            fprintf(stderr, "sluice-sim gen: unknown option %s (see sluice-sim gen --help)\n",
                    argv[optind - 1]);
            return 2;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "sluice-sim gen: name one of sweep, megatron, mix, cluster\n");
        return 2;
    }
    g.kind = argv[optind];
    FILE *f = out ? fopen(out, "w") : stdout;
    if (!f) {
        fprintf(stderr, "sluice-sim gen: %s: %s\n", out, strerror(errno));
        return 1;
    }
    char err[SIM_ERR_MAX];
    int rc = sim_gen(&g, f, err, sizeof err);
    if (out && fclose(f) != 0 && rc == 0) {
        fprintf(stderr, "sluice-sim gen: %s: %s\n", out, strerror(errno));
        return 1;
    }
    if (rc < 0) {
        fprintf(stderr, "sluice-sim gen: %s\n", err);
        if (out) remove(out);
        return 2;
    }
    return 0;
}

/* `failures`: every option is a number (docs/sim.md "failures"). */
static int cmd_failures(int argc, char **argv) {
    sim_fail_opts_t o;
    sim_fail_opts_init(&o);
    static const struct {
        const char *flag;
        size_t off;
        bool is_int;
    } opts[] = {
        {"--gpus", offsetof(sim_fail_opts_t, gpus), true},
        {"--spare-nodes", offsetof(sim_fail_opts_t, spare_nodes), true},
        {"--seeds", offsetof(sim_fail_opts_t, nseeds), true},
        {"--days", offsetof(sim_fail_opts_t, days), false},
        {"--fail-rate", offsetof(sim_fail_opts_t, rate_per_gpu_hour), false},
        {"--persist", offsetof(sim_fail_opts_t, persist), false},
        {"--checkpoint", offsetof(sim_fail_opts_t, ckpt_s), false},
        {"--restart", offsetof(sim_fail_opts_t, restart_s), false},
        {"--detect", offsetof(sim_fail_opts_t, detect_s), false},
        {"--crash", offsetof(sim_fail_opts_t, crash_s), false},
        {"--nhc-interval", offsetof(sim_fail_opts_t, nhc_interval_s), false},
        {"--human", offsetof(sim_fail_opts_t, human_s), false},
        {"--repair", offsetof(sim_fail_opts_t, repair_s), false},
        {"--clear-after", offsetof(sim_fail_opts_t, clear_after_s), false},
    };
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
            if (parse_u64(argv[++i], &o.seed) < 0) {
                fprintf(stderr, "sluice-sim failures: --seed: \"%s\" is not a whole number\n", argv[i]);
                return 2;
            }
            continue;
        }
        size_t k = 0;
        while (k < sizeof opts / sizeof opts[0] && strcmp(argv[i], opts[k].flag) != 0) k++;
        if (k == sizeof opts / sizeof opts[0] || i + 1 >= argc) {
            fprintf(stderr, "sluice-sim failures: unknown option or missing value: %s\n", argv[i]);
            return 2;
        }
        char *end;
        double v = strtod(argv[++i], &end);
        if (end == argv[i] || *end || !(v >= 0) || v > 1e12 || (opts[k].is_int && v != floor(v))) {
            fprintf(stderr, "sluice-sim failures: %s: \"%s\" is not a %s, 0 or more\n", opts[k].flag,
                    argv[i], opts[k].is_int ? "whole number" : "number");
            return 2;
        }
        if (opts[k].is_int)
            *(int *)((char *)&o + opts[k].off) = (int)v;
        else
            *(double *)((char *)&o + opts[k].off) = v;
    }
    if (o.nseeds < 1) o.nseeds = 1;
    return sim_failures_run(&o, stdout);
}

int main(int argc, char **argv) {
    sl_log_init_from_env();
    if (argc < 2) {
        usage_main(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "fill") == 0) return cmd_fill(argc - 1, argv + 1);
    if (strcmp(cmd, "replay") == 0) return cmd_replay(argc - 1, argv + 1);
    if (strcmp(cmd, "gen") == 0) return cmd_gen(argc - 1, argv + 1);
    if (strcmp(cmd, "failures") == 0) return cmd_failures(argc - 1, argv + 1);
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        if (argc > 2 && strcmp(argv[2], "fill") == 0) usage_fill(stdout);
        else if (argc > 2 && strcmp(argv[2], "replay") == 0) usage_replay(stdout);
        else if (argc > 2 && strcmp(argv[2], "gen") == 0) usage_gen(stdout);
        else usage_main(stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("sluice-sim %s\n", SLUICE_VERSION);
        return 0;
    }
    fprintf(stderr, "sluice-sim: unknown command \"%s\" (fill, replay, gen, help)\n", cmd);
    return 2;
}
