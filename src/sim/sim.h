/*
 * sim.h - internals of sluice-sim, the trace-driven simulator.
 *
 * The simulator runs the scheduling core (libsluice) unchanged over a trace:
 * loaders turn trace files into a sim_trace_t (plain data, independent of
 * any cluster), each run builds a fresh sl_cluster_t and sl_sched_t from it,
 * and the reports turn the runs' results into a table, JSON, a per-job CSV
 * and SVG plots. Modules:
 *
 *   csv.c     a small RFC 4180 reader (quotes, doubled quotes, CRLF) that
 *             remembers the line and column of every field for errors
 *   load.c    Alibaba GPU v2023, Philly and Sluice's own CSV formats
 *   gen.c     seeded workload generators (sweep, megatron, mix, cluster)
 *   stats.c   percentiles, mean/sd, time-weighted means
 *   fill.c    the FGD paper's fill protocol (sl_sched_try_start)
 *   replay.c  the discrete-event replay (sl_sched_submit/cycle/finish)
 *   report.c  table, JSON (jansson), per-job CSV, progress bar
 *   svg.c     hand-written SVG plots
 *
 * Errors: functions return 0 or a negative SL_E* code and write a message
 * into err; a malformed file gives "FILE:LINE:COL: field \"x\": why".
 */
#ifndef SLUICE_SIM_H
#define SLUICE_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sluice/sluice.h"

#define SIM_ERR_MAX 512

/* ---------------------------------------------------------------- csv.c */

typedef struct sim_csv sim_csv_t;

/* Opens a file and reads it whole. Returns 0, or -errno with a message. */
int sim_csv_open(const char *path, sim_csv_t **out, char *err, size_t errlen);
/* Reads from memory (copied); name is used in messages. Can't fail. */
int sim_csv_open_text(const char *name, const char *text, size_t len, sim_csv_t **out);
void sim_csv_close(sim_csv_t *c); /* accepts NULL */

/*
 * Reads the next record. Returns 1 with its fields, 0 at the end, or
 * SL_EINVAL with "FILE:LINE:COL: why" in err (unterminated quote, text
 * after a closing quote). Completely empty lines are not records (a file
 * that ends with a blank line is common); a line holding only spaces is a
 * record of one empty field. Unquoted fields are trimmed of spaces and tabs.
 */
int sim_csv_next(sim_csv_t *c, char *err, size_t errlen);
size_t sim_csv_nfields(const sim_csv_t *c);
const char *sim_csv_field(const sim_csv_t *c, size_t i); /* "" past the end */
long sim_csv_line(const sim_csv_t *c, size_t i);          /* 1-based line of field i */
long sim_csv_col(const sim_csv_t *c, size_t i);           /* 1-based column of field i */
long sim_csv_record_line(const sim_csv_t *c);             /* line where the record starts */
const char *sim_csv_name(const sim_csv_t *c);

/* Writes "FILE:LINE:COL: field \"fname\": <fmt>" about field i into err and
 * returns SL_EINVAL. fname may be NULL (no "field" part). */
int sim_csv_error(const sim_csv_t *c, size_t i, const char *fname, char *err, size_t errlen,
                  const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* ---------------------------------------------------------------- load.c */

typedef enum sim_format {
    SIM_FMT_AUTO = 0,
    SIM_FMT_ALIBABA = 1, /* Alibaba GPU trace v2023 ("openb") */
    SIM_FMT_PHILLY = 2,  /* Microsoft Philly (Pollux's philly.csv + machine list) */
    SIM_FMT_SLUICE = 3   /* Sluice's own nodes/jobs CSV */
} sim_format_t;

int sim_format_parse(const char *s, sim_format_t *out); /* SL_EINVAL if unknown */
const char *sim_format_name(sim_format_t f);

typedef struct sim_node {
    char *name;
    int64_t cpu_milli;
    int64_t mem_bytes;
    int32_t gpus;
    char *model;           /* NULL without GPUs */
    int64_t gpu_mem_bytes; /* per GPU; 0 when unknown */
    char *pool;            /* NULL = "default" */
    char *topology;        /* "BLOCK/RACK" (sluice/topology.h), NULL = none */
} sim_node_t;

typedef struct sim_job {
    char *name;            /* the trace's id */
    int32_t tenant;        /* index into sim_trace_t.tenants */
    int32_t priority;
    int64_t submit_us;     /* from the start of the trace */
    int64_t duration_us;   /* how long it runs once started */
    int64_t time_limit_us; /* 0 = none given */
    int32_t ntasks;
    int64_t cpu_milli;     /* per task */
    int64_t mem_bytes;
    int32_t gpus;          /* whole GPUs per task */
    int32_t gpu_milli;     /* share of one GPU (gpus == 0), 0 = none */
    int64_t gpu_mem_bytes; /* GPU memory per share task (0 = not stated) */
    char *models;          /* "A|B" or NULL = any */
    char *pool;            /* NULL = any */
    int32_t orig_gpus;     /* Philly: the GPUs the job asked for before splitting */
    int16_t topo_required; /* Sluice CSV `topology_required` (sluice/topology.h level) */
    int16_t topo_preferred; /* Sluice CSV `topology_preferred` (the same levels) */
    /* Job arrays (Sluice CSV `array` column, arrays.c): the row's Slurm
     * text until the load expands it into one job per index; then each
     * element has its array's first element's trace index and limit. */
    char *array;           /* NULL once expanded, or for a job of no array */
    bool in_array;
    uint32_t array_first;  /* trace index of element 0 of its array */
    int32_t array_limit;   /* at most this many elements run at once; 0 = none */
    int32_t min_tasks;     /* elastic minimum (Sluice CSV min_tasks); 0 = rigid */
    /* Slurm's -N (Sluice CSV `nodes`: "N" or "min-max"), --ntasks-per-node
     * (`tasks_per_node`) and --exclusive (`exclusive`: 0/1); 0 = none
     * (sl_task_req_t's node fields). */
    int16_t nodes_min, nodes_max;
    int16_t tasks_per_node;
    bool exclusive;
} sim_job_t;

typedef struct sim_trace {
    sim_format_t format;
    sim_node_t *nodes;
    size_t nnodes, capnodes;
    sim_job_t *jobs;
    size_t njobs, capjobs;
    char **tenants;
    int32_t *weights;
    size_t ntenants, captenants;
    bool timed;         /* the jobs carry submit times and durations */
    size_t gangs_split; /* Philly jobs turned into gangs of several tasks */
    bool topology_off;  /* --topology off: build the cluster without the paths */
    bool nodes_off;     /* --node-fields off: ignore nodes, tasks_per_node, exclusive (pack) */
} sim_trace_t;

void sim_trace_init(sim_trace_t *t);
void sim_trace_fini(sim_trace_t *t);
/* Returns the tenant's index, adding it with weight 1 if new. */
int32_t sim_tenant_intern(sim_trace_t *t, const char *name);

/* Looks at the header of a jobs or nodes file and says which format it is.
 * SL_EINVAL with a message naming the file if it is none of them. */
int sim_guess_format(const char *path, bool jobs, sim_format_t *out, char *err, size_t errlen);

int sim_load_nodes(sim_trace_t *t, const char *path, sim_format_t fmt, char *err, size_t errlen);
int sim_load_jobs(sim_trace_t *t, const char *path, sim_format_t fmt, char *err, size_t errlen);
int sim_load_tenants(sim_trace_t *t, const char *path, char *err, size_t errlen);
/* Philly: jobs asking for more GPUs than the largest machine has become gangs
 * of n/g tasks of g GPUs, g the largest divisor of n not above that size. */
int sim_philly_split(sim_trace_t *t, char *err, size_t errlen);

/* Loads nodes, jobs and (if tenants != NULL) tenant weights; guesses the
 * format from the jobs header when fmt is SIM_FMT_AUTO. */
int sim_load(sim_trace_t *t, const char *nodes, const char *jobs, const char *tenants,
             sim_format_t fmt, char *err, size_t errlen);

/* Parses "2017-10-09 07:01:55" to seconds since 1970 (as UTC). SL_EINVAL if bad. */
int sim_parse_datetime(const char *s, int64_t *out);
/* Parses seconds ("90", "1.5") to microseconds, >= 0. SL_EINVAL if bad. */
int sim_parse_seconds(const char *s, int64_t *out_us);

/* Builds a cluster holding the trace's nodes. */
int sim_cluster_build(const sim_trace_t *t, sl_cluster_t **out, char *err, size_t errlen);
/*
 * The task request of a job on cl (models and pool interned there). With
 * sharing false, a share of a GPU becomes one whole GPU (static allocation,
 * as the Kubernetes device plugin gives).
 */
/* Parses the `nodes` column: "", "N" or "min-max" (1..4096). 0 or -1. */
int sim_nodes_parse(const char *s, int16_t *min, int16_t *max);
/* Copies j's node fields into req; sim_nodes_clear drops them
 * (--node-fields off: the gang packs onto as few nodes as fit, as before they existed). */
void sim_nodes_req(const sim_job_t *j, sl_task_req_t *req);
void sim_nodes_clear(sl_task_req_t *req);

int sim_job_req(const sim_job_t *j, sl_cluster_t *cl, bool sharing, sl_task_req_t *req,
                char *err, size_t errlen);
/* GPU milli a job asks for in total (all tasks). */
int64_t sim_job_gpu_milli(const sim_job_t *j);

/* ---------------------------------------------------------------- gen.c */

typedef struct sim_gen_opts {
    const char *kind;       /* "sweep", "megatron", "mix", "cluster" */
    uint64_t seed;
    int32_t jobs;           /* number of jobs (workloads) */
    double interarrival_s;  /* mean; 0 = the kind's default */
    int32_t nodes;          /* cluster: number of nodes */
    int32_t gpus;           /* cluster: GPUs per node */
    const char *gpu_model;  /* cluster */
    const char *gpu_memory; /* cluster, e.g. "80Gi" */
    const char *cpu;        /* cluster, e.g. "128" */
    const char *memory;     /* cluster, e.g. "1Ti" */
    const char *array;      /* sweep: each row an array of this Slurm text, NULL none */
    int32_t blocks, racks;  /* cluster: racks per block > 0 adds a topology column */
    const char *topology_required; /* jobs: a topology_required column, NULL none */
} sim_gen_opts_t;

void sim_gen_opts_init(sim_gen_opts_t *o);
/* Writes the generated file to f. SL_EINVAL with a message for bad options. */
int sim_gen(const sim_gen_opts_t *o, FILE *f, char *err, size_t errlen);

/* ---------------------------------------------------------------- stats.c */

typedef struct sim_dvec {
    double *v;
    size_t n, cap;
} sim_dvec_t;

void sim_dvec_push(sim_dvec_t *d, double x);
void sim_dvec_free(sim_dvec_t *d);
void sim_sort(double *v, size_t n);
/* Percentile p (0..100) of sorted v by linear interpolation between closest
 * ranks (numpy's default); 0 for n == 0. */
double sim_percentile(const double *v, size_t n, double p);
double sim_mean(const double *v, size_t n);   /* 0 for n == 0 */
double sim_sd(const double *v, size_t n);     /* sample sd (n-1); 0 for n < 2 */

typedef struct sim_summary {
    size_t n;
    double mean, p50, p95, p99;
} sim_summary_t;

/* Sorts d->v in place and fills *s. */
void sim_summarize(sim_dvec_t *d, sim_summary_t *s);

/* A time-weighted mean: add(value, duration). */
typedef struct sim_twmean {
    double sum, weight;
} sim_twmean_t;

static inline void sim_tw_add(sim_twmean_t *m, double v, double w) {
    if (w > 0) {
        m->sum += v * w;
        m->weight += w;
    }
}
static inline double sim_tw_mean(const sim_twmean_t *m) {
    return m->weight > 0 ? m->sum / m->weight : 0.0;
}

/* ---------------------------------------------------------------- fill.c */

#define SIM_FILL_TARGET_PCT 130
#define SIM_FILL_TYPICAL_PCT 95 /* FGD artifact: typicalPodsConfig.podPopularityThreshold */
#define SIM_FILL_GRID_STEP 0.5 /* percent of capacity between curve points */
#define SIM_FILL_GRID_N 261    /* 0, 0.5, ..., 130 */

/*
 * The FGD paper's arrival order for one seed: the n pods shuffled
 * (Fisher-Yates), then, while the requested GPU total is below target_pct
 * of capacity, pods drawn uniformly with replacement are appended after the
 * originals (the last one crosses the target); if the shuffled list is
 * already above the target, uniformly chosen pods are removed (order of the
 * rest kept) until it is not. req[i] is pod i's GPU request in milli.
 * *out (sl_xmalloc'ed, caller frees with sl_free) holds indices into req.
 */
void sim_fill_order(const int64_t *req, size_t n, int64_t capacity_milli, int target_pct,
                    uint64_t seed, size_t **out, size_t *nout);

/* Curve value at grid point x: the last sample with arrived <= x (samples
 * sorted by arrived); before the first sample, y0. */
double sim_curve_at(const double *arrived, const double *y, size_t n, double y0, double x);

typedef struct sim_fill_result {
    char placement[64];
    size_t nseeds;
    uint64_t *seeds;
    double mean[SIM_FILL_GRID_N]; /* unallocated GPU % at each grid point */
    double sd[SIM_FILL_GRID_N];
    double u100_mean, u100_sd, u130_mean, u130_sd;
    double frag100_mean;          /* FGD fragmentation % of capacity at 100% arrived */
    size_t pods_total, pods_failed; /* summed over seeds */
    double wall_s;                /* whole run, all seeds */
    double *lat_us;               /* per-decision wall time, all seeds */
    size_t nlat;
    double lat_p50, lat_p99;
} sim_fill_result_t;

typedef struct sim_run_opts {
    bool check;    /* assert invariants after every event */
    bool progress; /* progress bar on stderr */
    const char *dump_order; /* fill: write PREFIX.SEED (sim_fill_dump_order), or NULL */
} sim_run_opts_t;

int sim_fill_run(const sim_trace_t *t, const char *placement, const uint64_t *seeds,
                 size_t nseeds, const sim_run_opts_t *o, sim_fill_result_t *res, char *err,
                 size_t errlen);
void sim_fill_result_fini(sim_fill_result_t *r);

/* ---------------------------------------------------------------- arrays.c */

/* Replaces each job of t->jobs[first..] whose `array` text is set by one
 * job per index ("ID_INDEX"), keeping their order; each element takes the
 * row's submit time, duration and resources. SL_EINVAL with "job ID:
 * array: why" for a bad text. O(jobs + elements). */
int sim_trace_expand_arrays(sim_trace_t *t, size_t first, char *err, size_t errlen);

/* ---------------------------------------------------------------- replay.c */

typedef struct sim_replay_cfg {
    const char *queue;
    const char *placement;
    const char *backfill;
    bool sharing;        /* GPU shares as asked (true) or whole GPUs (false) */
    bool estimate_exact; /* time limit = duration when the trace has none */
    uint64_t seed;
    /* Preemption, fair-share reclaim and elastic growth (sl_sched_run;
     * docs/sim.md "Preemption"): a victim stops at once (grace 0) and is
     * requeued with its submit time; its work since its last checkpoint
     * is lost, checkpoint_us apart (0 = none: all work since its start). */
    bool preempt;
    int64_t checkpoint_us;
} sim_replay_cfg_t;

typedef struct sim_job_rec {
    int64_t start_us;    /* first start; -1 if it never started */
    int64_t end_us;
    int32_t tasks;       /* tasks placed (at its last start) */
    int32_t preempted;   /* times it was preempted */
    char *nodes;         /* "n1;n2" */
    bool rejected;       /* can never fit this cluster */
} sim_job_rec_t;

typedef struct sim_tenant_res {
    size_t jobs, completed;
    sim_summary_t queue_delay_s, jct_s;
    double gpu_hours;
} sim_tenant_res_t;

typedef struct sim_series {
    double *t_h;   /* hours from the start */
    double *v;     /* value */
    size_t n;
} sim_series_t;

typedef struct sim_replay_result {
    sim_replay_cfg_t cfg;
    char queue[32], placement[64], backfill[16];
    size_t jobs, completed, rejected;
    double makespan_s;
    double throughput_jobs_per_hour;
    sim_summary_t queue_delay_s, jct_s;
    double gpu_allocation_ratio_mean;
    double gpu_memory_idle_ratio_mean;
    bool gpu_memory_known;
    double fragmentation_ratio_mean;
    /* Gangs on more than one node, and the mean racks and blocks each
     * spans (sl_topo_groups_spanned at its start); 0 without topology. */
    size_t topo_gangs;
    double topo_racks_mean, topo_blocks_mean;
    double drf_fairness_ratio_mean;
    double jain_index_mean;
    double lat_p50_us, lat_p99_us;
    size_t cycles;
    double sched_wall_s; /* sum of the measured cycle times */
    size_t checks; /* invariant checks run (--check) */
    sim_tenant_res_t *tenants;
    size_t ntenants;
    sim_job_rec_t *recs; /* one per trace job */
    size_t nrecs;
    double *qdelay_sorted; /* queueing delays (s) of started jobs, sorted */
    size_t nqdelay;
    sim_series_t alloc;    /* GPU allocation % over time (downsampled) */
    double wall_s;
    size_t preemptions;    /* whole jobs preempted (each time) */
    size_t shrinks, grows; /* elastic resizes */
    double lost_gpu_h;     /* GPU-hours of work lost to preemption */
} sim_replay_result_t;

int sim_replay_run(const sim_trace_t *t, const sim_replay_cfg_t *cfg, const sim_run_opts_t *o,
                   sim_replay_result_t *res, char *err, size_t errlen);
void sim_replay_result_fini(sim_replay_result_t *r);

/* ---------------------------------------------------------------- check.c */

/*
 * The invariants --check asserts after every event: the core's own checks
 * (sl_sched_check, sl_cluster_check), every running job holding all its
 * tasks (gang all-or-none), and every node's free CPU, memory, per-GPU
 * compute and GPU memory equal to its total minus what the running jobs'
 * placements hold, never negative (no over-allocation). Returns 0 or
 * SL_ESTATE with what broke in err. O(running tasks + nodes).
 */
int sim_check(sl_sched_t *s, char *err, size_t errlen);

/* ---------------------------------------------------------------- report.c */

void sim_fill_table(FILE *f, const sim_fill_result_t *r, size_t n);
void sim_replay_table(FILE *f, const sim_replay_result_t *r, size_t n);
int sim_fill_json(const char *path, const sim_fill_result_t *r, size_t n, const char *queue,
                  const char *backfill, char *err, size_t errlen);
int sim_replay_json(const char *path, const sim_trace_t *t, const sim_replay_result_t *r,
                    size_t n, char *err, size_t errlen);
/* Writes the per-job CSV of one result. */
int sim_jobs_csv(const char *path, const sim_trace_t *t, const sim_replay_result_t *r, char *err,
                 size_t errlen);

/* Progress bar on stderr (only if enabled): label and fraction done. */
void sim_progress(bool enabled, const char *label, double frac);
void sim_progress_done(bool enabled);
double sim_now_s(void); /* monotonic clock, seconds */

/* ---------------------------------------------------------------- svg.c */

int sim_fill_svg(const char *dir, const sim_fill_result_t *r, size_t n, char *err,
                 size_t errlen);
int sim_replay_svg(const char *dir, const sim_replay_result_t *r, size_t n, char *err,
                   size_t errlen);

/* ---------------------------------------------------------------- topo.c */

/* Whether any node of the trace has a topology path. O(nodes). */
bool sim_topo_present(const sim_trace_t *t);
/* The racks (level SL_TOPO_RACK) or blocks (SL_TOPO_BLOCK) the running
 * job's tasks span, by the trace's paths. O(tasks^2). */
int32_t sim_topo_spanned(const sim_trace_t *t, const sl_job_t *job, int level);

/* ---- failures (failures.c): GPU faults and effective training time ---- */

typedef struct sim_fail_opts {
    int gpus;                 /* the gang's GPUs, whole nodes of 8 */
    int spare_nodes;          /* nodes beyond the gang's */
    double days;              /* horizon */
    double rate_per_gpu_hour; /* faults per GPU-hour (Llama 3: 419 / (16,384 x 54 days)) */
    double persist;           /* fraction of faults that leave the GPU bad until repaired */
    double ckpt_s, restart_s; /* checkpoint interval; cost of each (re)start */
    double detect_s;          /* sluice: fault to requeue (agent poll + heartbeat) */
    double crash_s;           /* nhc, none: fault to the job's crash (collective timeout) */
    double nhc_interval_s;    /* nhc: HealthCheckInterval */
    double human_s;           /* none: mean time until a person requeues */
    double repair_s;          /* a bad GPU's repair */
    double clear_after_s;     /* sluice: a transient fault's GPU fenced this long */
    uint64_t seed;
    int nseeds;
} sim_fail_opts_t;

#define SIM_FAIL_NPOLICIES 3 /* sluice, nhc, none */
typedef struct sim_fail_result {
    const char *policy;       /* static */
    double effective;         /* training kept / horizon, 0..1, mean over seeds */
    double faults, starts;    /* per run */
} sim_fail_result_t;

/* Every policy over nseeds seeds into res (sluice, nhc, none). 0, or -1
 * for bad options. Deterministic for o. */
int sim_failures_eval(const sim_fail_opts_t *o, sim_fail_result_t res[SIM_FAIL_NPOLICIES]);

/* The defaults above (docs/sim.md "failures"). Can't fail. */
void sim_fail_opts_init(sim_fail_opts_t *o);
/* Runs every policy over nseeds seeds and prints the table to out. 0, or
 * 2 for bad options. */
int sim_failures_run(const sim_fail_opts_t *o, FILE *out);

#endif
