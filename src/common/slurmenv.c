/*
 * slurmenv.c - Slurm's variables (slurmenv.h): an allocation's task's
 * output variables, built from its placement and its request, and the
 * input variables of sbatch and srun turned into their options.
 *
 * Which variables and when, as a Slurm 22.05 slurmd sets them for a batch
 * job (recorded from the peer Slurm of ../shared/peers/slurm): the job's
 * shape always (SLURM_NTASKS, SLURM_TASKS_PER_NODE, SLURM_JOB_CPUS_PER_NODE,
 * SLURM_CPUS_ON_NODE, ...), the GPU variables (SLURM_JOB_GPUS,
 * SLURM_GPUS_ON_NODE) only on a node where the job holds GPUs, and the
 * request's (SLURM_NTASKS_PER_NODE, SLURM_MEM_PER_NODE, SLURM_MEM_PER_CPU,
 * SLURM_GPUS_PER_NODE, SLURM_GPUS_PER_TASK, SLURM_GPUS, SLURM_CPUS_PER_GPU)
 * only when the job asked that way.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostlist.h"
#include "sluice/error.h"
#include "slurmenv.h"

const char *const sl_slurmenv_node_vars[] = {
    "SLURMD_NODENAME", "SLURM_NODEID", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_CPUS_ON_NODE",
    "SLURM_GPUS_ON_NODE", "SLURM_JOB_GPUS", "SLURM_TOPOLOGY_ADDR", "SLURM_TOPOLOGY_ADDR_PATTERN",
    "CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", "RANK", "LOCAL_RANK", NULL};

/* sbatch 22.05's INPUT ENVIRONMENT VARIABLES for the options sbatch.c
 * knows (those it does not support are then refused, naming the
 * variable, as on the command line). */
const sl_slurmenv_input_t sl_slurmenv_sbatch_inputs[] = {
    {"SBATCH_ACCOUNT", "account", false},
    {"SBATCH_ARRAY_INX", "array", false},
    {"SBATCH_CONSTRAINT", "constraint", false},
    {"SBATCH_CPUS_PER_GPU", "cpus-per-gpu", false},
    {"SBATCH_ERROR", "error", false},
    {"SBATCH_EXPORT", "export", false},
    {"SBATCH_GPUS", "gpus", false},
    {"SBATCH_GPUS_PER_NODE", "gpus-per-node", false},
    {"SBATCH_GPUS_PER_TASK", "gpus-per-task", false},
    {"SBATCH_GRES", "gres", false},
    {"SBATCH_JOB_NAME", "job-name", false},
    {"SBATCH_MEM_PER_CPU", "mem-per-cpu", false},
    {"SBATCH_MEM_PER_GPU", "mem-per-gpu", false},
    {"SBATCH_MEM_PER_NODE", "mem", false},
    {"SBATCH_OUTPUT", "output", false},
    {"SBATCH_PARTITION", "partition", false},
    {"SBATCH_QOS", "qos", false},
    {"SBATCH_TIMELIMIT", "time", false},
    {"SBATCH_DISTRIBUTION", "distribution", false},
    {"SBATCH_NO_REQUEUE", "no-requeue", true},
    {"SBATCH_REQUEUE", "requeue", true},
    {"SBATCH_RESERVATION", "reservation", false},
    {"SBATCH_SIGNAL", "signal", false},
    {"SBATCH_WAIT", "wait", true},
    {"SBATCH_WCKEY", "wckey", false},
    {"SBATCH_CONTAINER", "container", false},
    {"SBATCH_OPEN_MODE", "open-mode", false},
    {"SBATCH_GRES_FLAGS", "gres-flags", false},
    {"SBATCH_GPU_BIND", "gpu-bind", false},
    {"SBATCH_CLUSTERS", "clusters", false},
    {NULL, NULL, false}};

/* srun 22.05's for the options srunopt.c knows. Later entries win over
 * earlier ones (SRUN_EXPORT_ENV over SLURM_EXPORT_ENV, as srun's man page
 * says). The shape variables (SLURM_NTASKS, SLURM_NNODES) are not read:
 * inside an allocation they are the allocation's, which is srun's shape
 * without -n and -N already. */
const sl_slurmenv_input_t sl_slurmenv_srun_inputs[] = {
    {"SLURM_NTASKS_PER_NODE", "ntasks-per-node", false},
    {"SRUN_CPUS_PER_TASK", "cpus-per-task", false},
    {"SLURM_GPUS_PER_TASK", "gpus-per-task", false},
    {"SLURM_LABELIO", "label", true},
    {"SLURM_KILL_BAD_EXIT", "kill-on-bad-exit", false},
    {"SLURM_OVERLAP", "overlap", true},
    {"SLURM_EXACT", "exact", true},
    {"SLURM_UNBUFFEREDIO", "unbuffered", true},
    {"SLURM_EXPORT_ENV", "export", false},
    {"SRUN_EXPORT_ENV", "export", false},
    {"SLURM_STDOUTMODE", "output", false},
    {"SLURM_STDERRMODE", "error", false},
    {"SLURM_WORKING_DIR", "chdir", false},
    {"SLURM_JOB_NAME", "job-name", false},
    {"SLURM_PARTITION", "partition", false},
    {"SLURM_ACCOUNT", "account", false},
    {"SLURM_TIMELIMIT", "time", false},
    {"SLURM_MPI_TYPE", "mpi", false},
    {"SLURM_CPU_BIND", "cpu-bind", false},
    {NULL, NULL, false}};

void sl_slurmenv_put(sl_slurmenv_t *e, const char *key, const char *value) {
    char *v = strdup(value ? value : "");
    if (v == NULL)
        abort();
    for (size_t i = 0; i < e->n; i++)
        if (strcmp(e->v[i].key, key) == 0) {
            free(e->v[i].value);
            e->v[i].value = v;
            return;
        }
    if (e->n == e->cap) {
        e->cap = e->cap ? 2 * e->cap : 64;
        e->v = realloc(e->v, e->cap * sizeof *e->v);
        if (e->v == NULL)
            abort();
    }
    e->v[e->n++] = (sl_slurmenv_var_t){key, v};
}

static void putf(sl_slurmenv_t *e, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void putf(sl_slurmenv_t *e, const char *key, const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    sl_slurmenv_put(e, key, buf);
}

/* key = value, only when value is given and not empty. */
static void put_some(sl_slurmenv_t *e, const char *key, const char *value) {
    if (value && value[0])
        sl_slurmenv_put(e, key, value);
}

const char *sl_slurmenv_get(const sl_slurmenv_t *e, const char *key) {
    for (size_t i = 0; i < e->n; i++)
        if (strcmp(e->v[i].key, key) == 0)
            return e->v[i].value;
    return NULL;
}

void sl_slurmenv_fini(sl_slurmenv_t *e) {
    for (size_t i = 0; i < e->n; i++)
        free(e->v[i].value);
    free(e->v);
    *e = (sl_slurmenv_t){0};
}

size_t sl_slurmenv_counts(const int64_t *counts, size_t n, char *buf, size_t len) {
    size_t need = 0;
    if (len)
        buf[0] = '\0';
    for (size_t i = 0; i < n;) {
        size_t e = i;
        while (e + 1 < n && counts[e + 1] == counts[i])
            e++;
        char piece[64];
        int pl = e > i ? snprintf(piece, sizeof piece, "%s%lld(x%zu)", need ? "," : "",
                                  (long long)counts[i], e - i + 1)
                       : snprintf(piece, sizeof piece, "%s%lld", need ? "," : "",
                                  (long long)counts[i]);
        if (need + (size_t)pl < len)
            memcpy(buf + need, piece, (size_t)pl + 1);
        else if (len)
            buf[need < len ? need : len - 1] = '\0';
        need += (size_t)pl;
        i = e + 1;
    }
    return need;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The job's distinct nodes, sorted by name, into *nodes (owned array of
 * borrowed names); the count. */
static size_t distinct_nodes(const sl_slurmenv_alloc_t *a, const char ***nodes) {
    const char **v = malloc(((size_t)a->ntasks + 1) * sizeof *v);
    if (v == NULL)
        abort();
    size_t n = 0;
    for (int32_t k = 0; k < a->ntasks; k++) {
        const char *name = a->task_node[k] ? a->task_node[k] : "";
        bool seen = false;
        for (size_t m = 0; m < n && !seen; m++)
            seen = strcmp(v[m], name) == 0;
        if (!seen)
            v[n++] = name;
    }
    qsort(v, n, sizeof *v, cmp_str);
    *nodes = v;
    return n;
}

/* SLURM_ARRAY_TASK_STEP: the difference of the indexes when they step
 * evenly, else 1. */
static int32_t array_step(const int32_t *idx, int32_t n) {
    if (n < 2)
        return 1;
    int32_t d = idx[1] - idx[0];
    for (int32_t i = 2; i < n; i++)
        if (idx[i] - idx[i - 1] != d)
            return 1;
    return d > 0 ? d : 1;
}

int sl_slurmenv_alloc(const sl_slurmenv_alloc_t *a, int32_t task, sl_slurmenv_t *out) {
    if (a->ntasks < 1 || task < 0 || task >= a->ntasks || a->task_node == NULL)
        return SL_EINVAL;
    const char **nodes;
    size_t nn = distinct_nodes(a, &nodes);
    const char *mine = a->task_node[task] ? a->task_node[task] : "";
    int64_t *per = calloc(nn, sizeof *per);
    if (per == NULL)
        abort();
    int32_t local = 0, node_id = 0;
    uint32_t node_gpus = 0;
    for (int32_t k = 0; k < a->ntasks; k++) {
        const char *name = a->task_node[k] ? a->task_node[k] : "";
        for (size_t m = 0; m < nn; m++)
            if (strcmp(nodes[m], name) == 0)
                per[m]++;
        if (strcmp(name, mine) == 0) {
            local += k < task;
            if (a->task_gpus)
                node_gpus |= a->task_gpus[k];
        }
    }
    for (size_t m = 0; m < nn; m++)
        if (strcmp(nodes[m], mine) == 0)
            node_id = (int32_t)m;

    putf(out, "SLURM_JOB_ID", "%llu", a->job_id);
    putf(out, "SLURM_JOBID", "%llu", a->job_id);
    put_some(out, "SLURM_JOB_NAME", a->job_name);
    if (!a->ntasks_unasked) {
        putf(out, "SLURM_NTASKS", "%d", a->ntasks);
        putf(out, "SLURM_NPROCS", "%d", a->ntasks);
    }
    putf(out, "SLURM_PROCID", "%d", task);
    putf(out, "SLURM_LOCALID", "%d", local);
    putf(out, "SLURM_NODEID", "%d", node_id);

    size_t need = sl_hostlist_format(nodes, nn, NULL, 0);
    char *list = malloc(need + 1);
    if (list == NULL)
        abort();
    sl_hostlist_format(nodes, nn, list, need + 1);
    sl_slurmenv_put(out, "SLURM_JOB_NODELIST", list);
    sl_slurmenv_put(out, "SLURM_NODELIST", list);
    free(list);
    putf(out, "SLURM_JOB_NUM_NODES", "%zu", nn);
    putf(out, "SLURM_NNODES", "%zu", nn);

    char buf[4096];
    sl_slurmenv_counts(per, nn, buf, sizeof buf);
    sl_slurmenv_put(out, "SLURM_TASKS_PER_NODE", buf);
    if (a->cpus_per_task > 0) {
        int64_t *cpn = malloc(nn * sizeof *cpn);
        if (cpn == NULL)
            abort();
        for (size_t m = 0; m < nn; m++)
            cpn[m] = per[m] * a->cpus_per_task;
        sl_slurmenv_counts(cpn, nn, buf, sizeof buf);
        sl_slurmenv_put(out, "SLURM_JOB_CPUS_PER_NODE", buf);
        putf(out, "SLURM_CPUS_ON_NODE", "%lld", (long long)(per[node_id] * a->cpus_per_task));
        putf(out, "SLURM_CPUS_PER_TASK", "%lld", (long long)a->cpus_per_task);
        free(cpn);
    }
    put_some(out, "SLURM_NTASKS_PER_NODE", a->ntasks_per_node);
    put_some(out, "SLURM_MEM_PER_NODE", a->mem_per_node);
    put_some(out, "SLURM_MEM_PER_CPU", a->mem_per_cpu);
    put_some(out, "SLURM_GPUS_PER_NODE", a->gpus_per_node);
    put_some(out, "SLURM_GPUS_PER_TASK", a->gpus_per_task);
    put_some(out, "SLURM_GPUS", a->gpus);
    put_some(out, "SLURM_CPUS_PER_GPU", a->cpus_per_gpu);
    if (node_gpus) {
        size_t bl = 0;
        int count = 0;
        for (int g = 0; g < 32; g++)
            if (node_gpus & (1u << g)) {
                bl += (size_t)snprintf(buf + bl, sizeof buf - bl, "%s%d", bl ? "," : "", g);
                count++;
            }
        sl_slurmenv_put(out, "SLURM_JOB_GPUS", buf);
        putf(out, "SLURM_GPUS_ON_NODE", "%d", count);
    }

    put_some(out, "SLURMD_NODENAME", mine);
    put_some(out, "SLURM_TOPOLOGY_ADDR", mine);
    sl_slurmenv_put(out, "SLURM_TOPOLOGY_ADDR_PATTERN", "node");
    put_some(out, "SLURM_JOB_USER", a->user);
    put_some(out, "SLURM_JOB_ACCOUNT", a->account);
    put_some(out, "SLURM_JOB_PARTITION", a->partition);
    put_some(out, "SLURM_JOB_QOS", a->qos);
    put_some(out, "SLURM_CLUSTER_NAME", a->cluster);
    put_some(out, "SLURM_SUBMIT_HOST", a->submit_host);
    put_some(out, "SLURM_SUBMIT_DIR", a->submit_dir);

    if (a->array_job_id) {
        putf(out, "SLURM_ARRAY_JOB_ID", "%llu", a->array_job_id);
        putf(out, "SLURM_ARRAY_TASK_ID", "%d", a->array_index);
        if (a->array_idx && a->array_n > 0) {
            putf(out, "SLURM_ARRAY_TASK_COUNT", "%d", a->array_n);
            putf(out, "SLURM_ARRAY_TASK_MIN", "%d", a->array_idx[0]);
            putf(out, "SLURM_ARRAY_TASK_MAX", "%d", a->array_idx[a->array_n - 1]);
            putf(out, "SLURM_ARRAY_TASK_STEP", "%d", array_step(a->array_idx, a->array_n));
        }
    }
    free(per);
    free(nodes);
    return 0;
}

int sl_slurmenv_inputs(const sl_slurmenv_input_t *table, const char *(*get)(const char *, void *),
                       void *ud, char ***argv, const char ***from) {
    int n = 0;
    size_t cap = 0;
    for (const sl_slurmenv_input_t *t = table; t->var; t++)
        cap++;
    char **v = calloc(cap + 1, sizeof *v);
    const char **f = calloc(cap + 1, sizeof *f);
    if (v == NULL || f == NULL)
        abort();
    for (const sl_slurmenv_input_t *t = table; t->var; t++) {
        const char *val = get(t->var, ud);
        if (val == NULL || val[0] == '\0')
            continue;
        if (t->flag && strcmp(val, "0") == 0)
            continue;
        char *w;
        if (t->flag ? asprintf(&w, "--%s", t->opt) < 0
                    : asprintf(&w, "--%s=%s", t->opt, val) < 0)
            abort();
        f[n] = t->var;
        v[n++] = w;
    }
    *argv = v;
    if (from)
        *from = f;
    else
        free(f);
    return n;
}

void sl_slurmenv_argv_free(char **argv, int argc) {
    for (int i = 0; i < argc; i++)
        free(argv[i]);
    free(argv);
}
