/*
 * slurmenv.h - Slurm's variables, in one place (slurmenv.c): the output
 * ones an allocation's tasks see (SLURM_JOB_ID, SLURM_JOB_NODELIST,
 * SLURM_TASKS_PER_NODE "2(x3),1", SLURM_JOB_GPUS, ...), made from the
 * job's placement and its request as sbatch read it, and the input ones
 * sbatch and srun read as options (SBATCH_PARTITION is -p, SLURM_LABELIO
 * is -l, ...). Names and formats are Slurm 22.05's, checked against a
 * real slurmd's (docs/slurm.md "Slurm's variables").
 */
#ifndef SLUICE_COMMON_SLURMENV_H
#define SLUICE_COMMON_SLURMENV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What an allocation's variables are made of. Strings are borrowed; NULL
 * (or 0) where a thing is unknown or was not asked for, and its variable
 * is then not set, as Slurm leaves it unset. */
typedef struct sl_slurmenv_alloc {
    unsigned long long job_id;
    const char *job_name;
    const char *user;          /* the Unix user the tasks run as */
    const char *account;       /* the tenant */
    const char *partition;     /* the pool, when the job names one */
    const char *qos;
    const char *cluster;       /* SLURM_CLUSTER_NAME */
    const char *submit_host, *submit_dir;
    int32_t ntasks;            /* placed tasks */
    bool ntasks_unasked;       /* neither -n nor --ntasks-per-node was given: Slurm then
                                * sets no SLURM_NTASKS / SLURM_NPROCS for the batch step */
    const char *const *task_node; /* [ntasks]: each task's node's name */
    const uint32_t *task_gpus; /* [ntasks]: each task's GPU indexes, a bit mask; NULL: none */
    int64_t cpus_per_task;     /* whole CPUs a task; 0: unknown */
    /* The request as sbatch read it (the spec's slurm object), the text
     * Slurm writes back: "4", "8192", "a100:2". */
    const char *ntasks_per_node, *mem_per_node, *mem_per_cpu, *gpus_per_node,
        *gpus_per_task, *gpus, *cpus_per_gpu;
    /* An array's element: array_job_id 0 for a job that is none. */
    unsigned long long array_job_id;
    int32_t array_index;
    const int32_t *array_idx;  /* the array's indexes, ascending */
    int32_t array_n;
} sl_slurmenv_alloc_t;

typedef struct sl_slurmenv_var {
    const char *key;  /* a static name */
    char *value;      /* owned */
} sl_slurmenv_var_t;

typedef struct sl_slurmenv {
    sl_slurmenv_var_t *v;
    size_t n, cap;
} sl_slurmenv_t;

/*
 * The variables of task `task` of a (0 <= task < a->ntasks) into *out
 * (zeroed by the caller; sl_slurmenv_fini frees it): the job's, its node's
 * (SLURMD_NODENAME, SLURM_NODEID, SLURM_CPUS_ON_NODE, SLURM_GPUS_ON_NODE,
 * SLURM_JOB_GPUS, SLURM_TOPOLOGY_ADDR) and the task's (SLURM_PROCID,
 * SLURM_LOCALID). The job's nodes are the distinct nodes of its tasks
 * sorted by name, as SLURM_JOB_NODELIST lists them. Returns 0, or
 * SL_EINVAL for a task out of range. O(ntasks^2) name comparisons, for
 * gangs of at most a few hundred tasks.
 */
int sl_slurmenv_alloc(const sl_slurmenv_alloc_t *a, int32_t task, sl_slurmenv_t *out);

/* The value of key in e, or NULL. O(n). */
const char *sl_slurmenv_get(const sl_slurmenv_t *e, const char *key);
/* Sets key (a static string) to a copy of value, replacing it. */
void sl_slurmenv_put(sl_slurmenv_t *e, const char *key, const char *value);
void sl_slurmenv_fini(sl_slurmenv_t *e);

/*
 * Slurm's count list (SLURM_TASKS_PER_NODE, SLURM_JOB_CPUS_PER_NODE):
 * counts[0..n) with runs of an equal count as N(xK): {2,2,2,1} is
 * "2(x3),1". Into buf (snprintf semantics); returns the length needed.
 */
size_t sl_slurmenv_counts(const int64_t *counts, size_t n, char *buf, size_t len);

/*
 * The variables that belong to a node (its name, its GPUs, its CPUs, its
 * place), NULL-ended: srun does not carry them from its node to the
 * ranks on others, where the node's own are set.
 */
extern const char *const sl_slurmenv_node_vars[];

/* An input variable and the option it stands for. */
typedef struct sl_slurmenv_input {
    const char *var;   /* "SBATCH_PARTITION" */
    const char *opt;   /* "partition" */
    bool flag;         /* an option without a value: set when the variable is
                        * (srun's "1"/"0" variables: set when not "0") */
} sl_slurmenv_input_t;

/* sbatch's input variables (SBATCH_*) that name options Sluice takes, and
 * srun's (SLURM_*, SRUN_*) that do; {NULL}-ended. */
extern const sl_slurmenv_input_t sl_slurmenv_sbatch_inputs[];
extern const sl_slurmenv_input_t sl_slurmenv_srun_inputs[];

/*
 * The options the input variables in table stand for, read with
 * get(name, ud) (getenv's meaning), as command-line words "--opt=value"
 * or "--opt" into *argv (an array of *argc strings, each owned; free with
 * sl_slurmenv_argv_free), and with from not NULL the variable each came
 * from into *from (an array the caller frees; names static): options to
 * parse before the command line's, so that the command line wins over
 * them, as in Slurm. Variables set empty are skipped. Returns the count.
 * O(table).
 */
int sl_slurmenv_inputs(const sl_slurmenv_input_t *table, const char *(*get)(const char *, void *),
                       void *ud, char ***argv, const char ***from);
void sl_slurmenv_argv_free(char **argv, int argc);

#endif
