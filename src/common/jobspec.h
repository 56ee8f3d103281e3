/*
 * jobspec.h - the one declaration of a job submission's fields.
 *
 * A job spec (the JSON body of POST /v1/jobs, docs/api.md) has the fields
 * of sl_jobspec_fields[]: name, type, range, unit, default and help. That
 * table drives everything that reads or describes a spec, so that they
 * cannot disagree:
 *
 *   - `sluice submit`'s flags and their --help (src/cli/main.c, cmds.c);
 *   - the CLI's reading of Sluice YAML spec files and of Kubernetes batch/v1
 *     Jobs (src/cli/spec.c), whose values go through sl_jobspec_from_text;
 *   - the server's validation (src/ctl/domain/spec.c), sl_jobspec_parse;
 *   - the field table of docs/jobspec.md, sl_jobspec_write_table (printed by
 *     `sluice help spec --markdown`; a test fails when the two differ).
 *
 * What the table cannot know stays with its caller: the server checks the
 * tenant against the token and the pool against its configuration.
 */
#ifndef SLUICE_COMMON_JOBSPEC_H
#define SLUICE_COMMON_JOBSPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "quantity.h"

/* The most bytes of a batch script (the field script). The controller hands
 * it to the task in one environment variable, and Linux takes at most 128
 * KiB in one (MAX_ARG_STRLEN); Sluice keeps to half of that. */
#define SL_JOBSPEC_SCRIPT_MAX (64 * 1024)

/* The fields, in the order of the table (and of docs and --help). */
typedef enum sl_jobspec_id {
    SL_JS_NAME = 0,
    SL_JS_TENANT,
    SL_JS_TASKS,
    SL_JS_MIN_TASKS,
    SL_JS_GPUS,
    SL_JS_GPU_SHARE,
    SL_JS_GPU_MEMORY,
    SL_JS_CPUS,
    SL_JS_MEMORY,
    SL_JS_GPU_MODELS,
    SL_JS_POOL,
    SL_JS_PRIORITY,
    SL_JS_TIME_LIMIT,
    SL_JS_COMMAND,
    SL_JS_IMAGE,
    SL_JS_ENV,
    SL_JS_ON_NODE_FAILURE,
    SL_JS_ARRAY,          /* Slurm's --array text (arraydep.h) */
    SL_JS_DEPENDENCY,     /* Slurm's --dependency text (arraydep.h) */
    /* A batch script (`sluice submit script.sh`, docs/slurm.md): its text,
     * and where it runs and writes; the last four only with a script. */
    SL_JS_SCRIPT,
    SL_JS_CHDIR,
    SL_JS_OUTPUT,
    SL_JS_ERROR,
    SL_JS_SUBMIT_DIR,
    SL_JS_PRIORITY_CLASS,  /* preemption and its limits */
    SL_JS_NODE_SELECTOR,  /* labels every node must have (sluice/constraint.h) */
    SL_JS_CONSTRAINT,     /* a label expression, Slurm's --constraint and more */
    SL_JS_TOLERATIONS,    /* taints the job tolerates */
    SL_JS_TOPOLOGY_REQUIRED,  /* a level the gang must fit in (sluice/topology.h) */
    SL_JS_TOPOLOGY_PREFERRED, /* a level it should fit in */
    SL_JS_ALLOCATION,     /* an allocation: one task runs the command, steps use the rest */
    /* A container's (only with image, docs/containers.md): host paths bound
     * into it, its /dev/shm size, its working directory. */
    SL_JS_MOUNTS,
    SL_JS_SHM_SIZE,
    SL_JS_WORKDIR,
    /* Retries of a failed job (backoff.h) and its notifications (mailtype.h). */
    SL_JS_RETRIES,
    SL_JS_RETRY_BACKOFF,
    SL_JS_MAIL_TYPE,
    SL_JS_MAIL_USER,
    /* Where a gang's tasks go, as Slurm's -N, --ntasks-per-node,
     * --exclusive, --nodelist, --exclude (sl_task_req_t's node fields). */
    SL_JS_NODES,
    SL_JS_NODES_MAX,
    SL_JS_TASKS_PER_NODE,
    SL_JS_EXCLUSIVE,
    SL_JS_NODELIST,
    SL_JS_EXCLUDE,
    SL_JS_MEM_PER_GPU,    /* memory = gpus x this (sbatch --mem-per-gpu) */
    SL_JS_COMMENT,        /* stored and shown (sbatch --comment) */
    SL_JS_OPEN_MODE,      /* batch script: append to or truncate its output files */
    SL_JS_RESERVATION,    /* an advance reservation it runs in (sluice/resv.h) */
    SL_JS_SLURM,          /* the request as sbatch read it, for the SLURM_* variables */
    SL_JS_VOLUMES,        /* volumes mounted into the tasks (volume.h) */
    SL_JS_SECRETS,        /* references to the tenant's secrets and config maps (secretref.h) */
    SL_JS_NAMESPACE,      /* a Kubernetes namespace: names the tenant (tenants[].namespaces) */
    SL_JS_RUN_AS_USER,    /* securityContext.runAsUser: must be the tenant's uid */
    SL_JS_RUN_AS_GROUP,   /* securityContext.runAsGroup: must be the tenant's gid */
    SL_JS_GPU_RESOURCE,   /* an extended resource ("nvidia.com/a100"): the config's GPU model */
    SL_JS_TTL_AFTER_FINISHED, /* seconds a finished job stays in the queue (ttlSecondsAfterFinished) */
    SL_JS_MEMORY_LIMIT,   /* a task's hard memory limit above its memory request (limits.memory) */
    SL_JS_CPU_LIMIT,      /* a task's CPU quota above its cpus request (limits.cpu) */
    SL_JS_CONTAINERS,     /* several containers in each task, as a pod's (pod.h) */
    SL_JS_ARGS,           /* the image's entrypoint's arguments (Kubernetes' args alone) */
    SL_JS_NFIELDS
} sl_jobspec_id_t;

/* What a field holds. In JSON (the API), and as text (a flag or a YAML
 * scalar) where the field has a text form. */
typedef enum sl_jobspec_type {
    SL_FT_NAME = 0, /* a string of min..max printable characters (no control characters) */
    SL_FT_TEXT,     /* a string of min..max bytes */
    SL_FT_INT,      /* a whole number min..max */
    SL_FT_DURATION, /* whole seconds min..max; text also "30m", "2h", "1d", "1h30m" */
    SL_FT_QTY,      /* a quantity of kind qty (sl_qty_parse), min..max in its base unit;
                     * JSON: a string or a number */
    SL_FT_NAMES,    /* a list of names (each as SL_FT_NAME), or one name */
    SL_FT_ARGV,     /* a non-empty list of strings */
    SL_FT_ENV,      /* an object of variable names to strings */
    SL_FT_ENUM,     /* one of the words in choices ("a|b") */
    SL_FT_ARRAY,    /* a job array's indexes as Slurm writes them ("0-99%8"; arraydep.h) */
    SL_FT_DEPS,     /* job dependencies as Slurm writes them ("afterok:12"; arraydep.h) */
    SL_FT_BOOL,     /* true or false; text "true", "false" */
    SL_FT_VOLUMES,  /* a list of volume objects (volume.h, sl_volumes_check); no text form */
    SL_FT_SECRETS,  /* a list of secret references (secretref.h); no text form */
    SL_FT_CONTAINERS /* a list of container objects (pod.h, sl_pod_check); no text form */
} sl_jobspec_type_t;

typedef struct sl_jobspec_field {
    const char *name;      /* key in JSON and YAML */
    const char *flag;      /* `sluice submit --FLAG`, NULL if none */
    char shortflag;        /* 0 if none */
    const char *metavar;   /* the flag's value in --help */
    sl_jobspec_type_t type;
    sl_qty_kind_t qty;     /* SL_FT_QTY only */
    int64_t min, max;      /* numbers: the range; names and text: the length */
    const char *choices;   /* SL_FT_ENUM: "requeue|fail" */
    int64_t dflt;          /* numbers: the value when absent */
    const char *dflt_text; /* the default as the user sees it, NULL if none */
    const char *unit;      /* the unit as the user sees it ("GPUs", "seconds"), or "" */
    const char *help;      /* one line, for --help and docs */
} sl_jobspec_field_t;

extern const sl_jobspec_field_t sl_jobspec_fields[SL_JS_NFIELDS];

/* The field with this JSON/YAML key, or NULL. O(fields). */
const sl_jobspec_field_t *sl_jobspec_find(const char *name);

/*
 * A spec parsed by sl_jobspec_parse. val[] borrows from the parsed JSON (it
 * is valid as long as that is): NULL where the field is absent or null.
 * num[] holds the value of every number field (INT, DURATION, QTY: the
 * quantity in its base unit, milli-CPUs, bytes, milli-GPUs), its default
 * where absent; min_tasks defaults to tasks.
 */
typedef struct sl_jobspec {
    json_t *val[SL_JS_NFIELDS];
    int64_t num[SL_JS_NFIELDS];
} sl_jobspec_t;

/*
 * Checks one JSON value v (not null) against field f: its type and range.
 * Sets *num for a number field. Returns 0, or SL_EINVAL with a message in
 * err in the user's units, not naming the field (the caller prefixes it).
 */
int sl_jobspec_check(const sl_jobspec_field_t *f, json_t *v, int64_t *num, char *err,
                     size_t errlen);

/*
 * Parses and checks a whole spec: every key must be a field; every value
 * passes sl_jobspec_check; then the rules between fields: min_tasks at most
 * tasks, gpu_share not with gpus, gpu_memory only with gpu_share, gpu_models
 * only with gpus or gpu_share, command or image required. Fills *out.
 * Returns 0; SL_ENOENT for an unknown key; SL_EINVAL otherwise. On failure
 * *field is the offending key (NULL when spec is not an object) and err
 * the message. Reads only; O(size of spec).
 */
int sl_jobspec_parse(json_t *spec, sl_jobspec_t *out, const char **field, char *err,
                     size_t errlen);

/* The rules between the node fields (nodes, nodes_max, tasks_per_node,
 * exclusive, nodelist, exclude, mem_per_gpu) and tasks, min_tasks, gpus;
 * part of sl_jobspec_parse, for callers that check a spec built in parts.
 * 0, or SL_EINVAL with *field and err. */
int sl_jobspec_nodes_rules(const sl_jobspec_t *js, const char **field, char *err, size_t errlen);

/*
 * The JSON value of a field given as text (a flag's value, a YAML scalar):
 * a whole number, a duration's seconds, a quantity's text as given, a name
 * or a word, checked as sl_jobspec_check would check it. For SL_FT_NAMES
 * text is one name (the result a string). Returns a new reference, or NULL
 * with a message in err (SL_FT_ARGV and SL_FT_ENV have no text form).
 */
json_t *sl_jobspec_from_text(const sl_jobspec_field_t *f, const char *text, char *err,
                             size_t errlen);

/* Whether k may be an environment variable's name: [A-Za-z_][A-Za-z0-9_]*,
 * shorter than 256 bytes. */
bool sl_jobspec_env_name_ok(const char *k);

/* Parses a duration, "90" or "90s", "30m", "2h", "1d", and sums like
 * "1h30m", into seconds. Returns 0, or -1 for bad syntax or an overflow. */
int sl_jobspec_parse_duration(const char *text, int64_t *out);

/* Longest path of a container mount's side, with its NUL. */
#define SL_JOBSPEC_PATH_MAX 4096

/*
 * A container mount as the spec writes it, "SRC:DST" or "SRC:DST:ro" (or
 * ":rw"), pyxis' --container-mounts form: both absolute, no "..". Fills
 * src and dst (each SL_JOBSPEC_PATH_MAX bytes) and *ro when not NULL.
 * Returns 0, or SL_EINVAL with a message naming the text in err.
 */
int sl_jobspec_mount_parse(const char *text, char *src, char *dst, bool *ro, char *err,
                           size_t errlen);

/* Whether host path src lies under one of the n prefixes (a prefix matches
 * itself and what is below it at a '/' boundary; "/" matches everything). */
bool sl_jobspec_mount_allowed(const char *src, const char *const *prefixes, size_t n);

/* The field's range in the user's units ("0 to 16", "0.001 to 0.999",
 * "1 to 63 characters", "any"), snprintf semantics. */
int sl_jobspec_range_text(const sl_jobspec_field_t *f, char *buf, size_t len);

/* Writes the table of fields to f: a Markdown table (docs/jobspec.md) or
 * aligned text (`sluice help spec`). */
void sl_jobspec_write_table(FILE *f, bool markdown);

#endif
