/*
 * bench_core.c - throughput and decision latency of the scheduling core at
 * scale: 10,000 nodes x 8 GPUs and 100,000 pending jobs.
 *
 * Workload: job shapes are sampled with replacement (seeded) from the
 * Alibaba GPU trace (openb_pod_list_default.csv: CPU, memory, whole GPUs or
 * a GPU share); 5% of the jobs are instead 8-task gangs of 4 GPUs each (a
 * Megatron-style job). Jobs belong to 8 tenants of equal weight. The trace
 * shapes, weighted by their frequency, are the workload FGD scores against.
 * The nodes are the trace's common 8-GPU machine (96 CPUs, 384 GiB).
 *
 * Constraints (the lines with selector_pct=20): the same runs, with the
 * nodes labelled gpu.class=g2 and zone=a or zone=b (half each; the label
 * set joins the class key, so the classes can double) and 20% of the jobs
 * carrying a node selector (zone=a or zone=b, or gpu.class=g2 on a quarter
 * of them), compiled and interned once per text as sluiced does
 * (sl_cluster_constraint_intern). Compare with the line without it.
 *
 * Method: for each (queue, placement) combination a fresh cluster and
 * scheduler are built and all jobs submitted (sl_sched_submit). Then every
 * pending job gets exactly one sl_sched_try_start (the FGD paper's "schedule
 * each pod once" protocol), timed with clock_gettime(CLOCK_MONOTONIC) around
 * the call. That is the full scheduler path: job lookup, quota check,
 * sl_place_gang over the free-capacity index, allocation, job start, and for
 * a refusal its readable reason. The order is the queue policy's, live: like
 * the scheduling cycle, the next job is the least tenant head under the
 * scheduler's own `less` (sl_sched_queue_policy) after every start, so under
 * drf a tenant whose dominant share grew waits for the others (a tenant's
 * head moves on after its try, whether it started or not). Picking the next
 * job is outside the timed region. Jobs keep running (nothing finishes), so
 * the cluster fills up and the later attempts are "does not fit" answers;
 * both count as decisions.
 *
 * Output: one line per combination on stdout,
 *   bench core queue=Q placement=P placements_per_s=N p50_us=N p99_us=N peak_rss_mib=N
 * where placements_per_s = placement decisions (started or refused) per
 * second of decision time, and details (jobs started, GPU allocation) on
 * stderr. Usage: bench_core [pod_list.csv [bestfit|fgd [0|20]]] (the last: only the runs
 * with that percentage of selectors); default path is relative to the
 * repository root, where `make bench-core` runs it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "sluice/sluice.h"

#define NODES 10000
#define JOBS 100000
#define TENANTS 8
#define GANG_PCT 5
#define SEED 20240601ULL

typedef struct shape {
    sl_task_req_t req;
} shape_t;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long peak_rss_mib(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024; /* KiB on Linux */
}

/* Reads the pod list: name,cpu_milli,memory_mib,num_gpu,gpu_milli,... */
static size_t load_shapes(const char *path, shape_t **out) {
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "bench_core: cannot open %s: %s\n", path, strerror(errno));
        exit(1);
    }
    char line[1024];
    size_t n = 0, cap = 1024;
    shape_t *v = malloc(cap * sizeof *v);
    if (!fgets(line, sizeof line, f)) exit(1); /* header */
    while (fgets(line, sizeof line, f)) {
        char name[128];
        long long cpu, mem_mib, ngpu, milli;
        if (sscanf(line, "%127[^,],%lld,%lld,%lld,%lld", name, &cpu, &mem_mib, &ngpu, &milli) != 5) continue;
        if (n == cap) v = realloc(v, (cap *= 2) * sizeof *v);
        sl_task_req_t *r = &v[n].req;
        sl_task_req_init(r);
        r->cpu_milli = cpu;
        r->mem_bytes = mem_mib * 1024 * 1024;
        if (ngpu >= 1 && milli >= 1000)
            r->gpus = (int32_t)ngpu;
        else if (ngpu >= 1 && milli > 0)
            r->gpu_milli = (int32_t)milli;
        n++;
    }
    fclose(f);
    *out = v;
    return n;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void run(const char *queue, const char *placement, const shape_t *shapes, size_t nshapes,
                int sel_pct) {
    sl_cluster_t *cl;
    sl_cluster_create(&cl);
    char err[256];
    for (int i = 0; i < NODES; i++) {
        char name[32];
        snprintf(name, sizeof name, "node-%05d", i);
        sl_node_spec_t sp = {.name = name, .cpu_milli = 96000, .mem_bytes = 384LL << 30,
                             .gpus = 8, .gpu_model = "G2", .pool = NULL};
        if (sel_pct > 0) sp.labels = i % 2 ? "gpu.class=g2,zone=b" : "gpu.class=g2,zone=a";
        if (sl_cluster_add_node(cl, &sp, NULL, err, sizeof err) != 0) {
            fprintf(stderr, "bench_core: %s\n", err);
            exit(1);
        }
    }
    sl_sched_config_t cfg;
    sl_sched_config_init(&cfg);
    cfg.queue = queue;
    cfg.placement = placement;
    cfg.backfill = "none";
    cfg.seed = SEED;
    sl_sched_t *s;
    if (sl_sched_create(&cfg, cl, &s, err, sizeof err) != 0) {
        fprintf(stderr, "bench_core: %s\n", err);
        exit(1);
    }
    for (size_t i = 0; i < nshapes; i++) sl_workload_add(sl_sched_workload(s), &shapes[i].req, 1);
    for (int t = 0; t < TENANTS; t++) {
        char name[32];
        snprintf(name, sizeof name, "team-%d", t);
        sl_tenant_spec_t ts = {.name = name, .weight = 1};
        if (sl_sched_add_tenant(s, &ts) < 0) exit(1);
    }
    sl_rng_t rng;
    sl_rng_seed(&rng, SEED);
    const sl_constraint_t *sel[3] = {NULL, NULL, NULL};
    if (sel_pct > 0) {
        const char *txt[3] = {"zone=a", "zone=b", "gpu.class=g2"};
        for (int k = 0; k < 3; k++) {
            sl_constraint_spec_t cs = {.selector = txt[k]};
            if (sl_cluster_constraint_intern(cl, &cs, &sel[k], err, sizeof err) != 0) exit(1);
        }
    }
    /* Each tenant's jobs in its queue order (equal priority: submit order). */
    uint64_t *tjobs[TENANTS];
    size_t tn[TENANTS] = {0}, tpos[TENANTS] = {0};
    for (int t = 0; t < TENANTS; t++) tjobs[t] = malloc(JOBS * sizeof(uint64_t));
    for (uint64_t id = 1; id <= JOBS; id++) {
        sl_job_spec_t js = {.id = id, .tenant = (int32_t)sl_rng_below(&rng, TENANTS),
                            .submit_us = (int64_t)id, .ntasks = 1};
        tjobs[js.tenant][tn[js.tenant]++] = id;
        if (sl_rng_below(&rng, 100) < GANG_PCT) {
            sl_task_req_init(&js.task);
            js.task.cpu_milli = 32000;
            js.task.mem_bytes = 128LL << 30;
            js.task.gpus = 4;
            js.ntasks = 8;
        } else {
            js.task = shapes[sl_rng_below(&rng, nshapes)].req;
        }
        if (sel_pct > 0 && sl_rng_below(&rng, 100) < (uint64_t)sel_pct) {
            uint64_t k = sl_rng_below(&rng, 4);
            js.task.cons = sel[k < 3 ? k : 2]; /* a, b, then g2 on half of the rest */
        }
        if (sl_sched_submit(s, &js, err, sizeof err) != 0) {
            fprintf(stderr, "bench_core: submit: %s\n", err);
            exit(1);
        }
    }
    const sl_queue_policy_t *qp = sl_sched_queue_policy(s);
    const int64_t now = (int64_t)JOBS + 1;
    size_t ndec = 0;
    double *lat = malloc(JOBS * sizeof *lat);
    double total = 0.0, total_fit = 0.0;
    size_t started = 0;
    for (;;) {
        /* The next job: the least tenant head under the queue policy, now. */
        const sl_job_t *head = NULL;
        int ht = -1;
        for (int t = 0; t < TENANTS; t++) {
            if (tpos[t] == tn[t]) continue;
            const sl_job_t *j = sl_sched_job(s, tjobs[t][tpos[t]]);
            if (!head || qp->less(s, j, head, now)) head = j, ht = t;
        }
        if (!head) break;
        uint64_t id = sl_job_id(head);
        tpos[ht]++;
        double t0 = now_s();
        int rc = sl_sched_try_start(s, id, now);
        double t1 = now_s();
        lat[ndec++] = (t1 - t0) * 1e6;
        total += t1 - t0;
        started += rc == SL_FIT;
        if (rc == SL_FIT) total_fit += t1 - t0;
    }
    double smin = 1e300, smax = 0.0;
    for (int t = 0; t < TENANTS; t++) {
        double sh = sl_sched_tenant_share(s, t);
        if (sh < smin) smin = sh;
        if (sh > smax) smax = sh;
        free(tjobs[t]);
    }
    qsort(lat, ndec, sizeof *lat, cmp_double);
    double p50 = lat[ndec / 2], p99 = lat[(size_t)((double)ndec * 0.99)];
    sl_res_t cap, fr;
    sl_cluster_capacity(cl, &cap, &fr);
    printf("bench core queue=%s placement=%s%s placements_per_s=%.0f p50_us=%.1f p99_us=%.1f peak_rss_mib=%ld\n",
           queue, placement, sel_pct > 0 ? " selector_pct=20" : "", (double)ndec / total, p50, p99,
           peak_rss_mib());
    fflush(stdout);
    fprintf(stderr, "  (%zu decisions in %.3f s; %zu jobs started, mean %.1f us; %zu refused, mean %.1f us; "
            "GPU allocated %.2f%%; %zu classes; tenant dominant shares %.4f..%.4f)\n",
            ndec, total, started, started ? total_fit * 1e6 / (double)started : 0.0, ndec - started,
            ndec > started ? (total - total_fit) * 1e6 / (double)(ndec - started) : 0.0,
            100.0 * (double)(cap.gpu_milli - fr.gpu_milli) / (double)cap.gpu_milli, sl_cluster_class_count(cl),
            smin, smax);
    fflush(stderr);
    free(lat);
    sl_sched_destroy(s);
    for (int k = 0; k < 3; k++) sl_cluster_constraint_release(cl, sel[k]);
    sl_cluster_destroy(cl);
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : "../shared/traces/alibaba-gpu-v2023/openb_pod_list_default.csv";
    shape_t *shapes;
    size_t n = load_shapes(path, &shapes);
    if (n == 0) {
        fprintf(stderr, "bench_core: no pods in %s\n", path);
        return 1;
    }
    const char *only = argc > 2 ? argv[2] : NULL; /* optional: one placement policy */
    /* optional third argument: only the runs with this selector percentage (0 or 20) */
    int only_sel = argc > 3 ? atoi(argv[3]) : -1;
    for (int sel = 0; sel <= 20; sel += 20) {
        if (only_sel >= 0 && sel != only_sel) continue;
        if (!only || strcmp(only, "bestfit") == 0) {
            run("fifo", "bestfit", shapes, n, sel);
            run("drf", "bestfit", shapes, n, sel);
        }
        if (!only || strcmp(only, "fgd") == 0) run("drf", "fgd", shapes, n, sel);
    }
    free(shapes);
    return 0;
}
