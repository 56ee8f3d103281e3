/*
 * jobspec.c - the table of a job spec's fields and the checks it drives.
 *
 * Each field is checked by its type and range alone (sl_jobspec_check for a
 * JSON value, sl_jobspec_from_text for a flag or a YAML scalar; both share
 * the range and the wording of the message), then sl_jobspec_parse applies
 * the few rules that tie fields together. Quantities are parsed once, here:
 * the server stores their canonical text (sl_qty_format of the parsed
 * value) and hands the parsed integers to the core.
 *
 * Ranges are the server's (it is the authority): gpus 0..16 (one node's
 * GPUs, SL_MAX_GPUS_PER_NODE), priority -1,000,000..1,000,000, tasks
 * 1..4096 (SL_MAX_TASKS), time limits up to 3660 days.
 *
 * Messages speak the user's units: GPUs and fractions of one, quantities as
 * written ("128Gi"), durations in days, hours, minutes and seconds; never
 * milli-GPUs or bytes.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "arraydep.h"
#include "jobspec.h"
#include "mailtype.h"
#include "pod.h"
#include "secretref.h"
#include "sluice/error.h"
#include "sluice/job.h"
#include "sluice/resources.h"
#include "volume.h"

#define NAME_LEN (SL_NAME_MAX - 1)
#define MAX_TIME_LIMIT_S (366LL * 24 * 3600 * 10)
#define MAX_PRIORITY 1000000

const sl_jobspec_field_t sl_jobspec_fields[SL_JS_NFIELDS] = {
    [SL_JS_NAME] = {"name", "name", 0, "NAME", SL_FT_NAME, 0, 1, NAME_LEN, NULL, 0,
                    "the command's or image's last path part", "",
                    "job name"},
    [SL_JS_TENANT] = {"tenant", "tenant", 0, "TENANT", SL_FT_NAME, 0, 1, NAME_LEN, NULL, 0,
                      "the token's tenant", "",
                      "tenant to submit as (admin token only)"},
    [SL_JS_TASKS] = {"tasks", "tasks", 0, "N", SL_FT_INT, 0, 1, SL_MAX_TASKS, NULL, 1, "1", "tasks",
                     "tasks in the gang, all started together"},
    [SL_JS_MIN_TASKS] = {"min_tasks", "min-tasks", 0, "N", SL_FT_INT, 0, 1, SL_MAX_TASKS, NULL, 0,
                         "tasks", "tasks",
                         "elastic jobs: fewest tasks to start with (at most tasks)"},
    [SL_JS_GPUS] = {"gpus", "gpus", 0, "N", SL_FT_INT, 0, 0, SL_MAX_GPUS_PER_NODE, NULL, 0, "0",
                    "GPUs", "whole GPUs per task"},
    [SL_JS_GPU_SHARE] = {"gpu_share", "gpu-share", 0, "F", SL_FT_QTY, SL_QTY_GPU, 1,
                         SL_GPU_MILLI - 1, NULL, 0, NULL, "GPU",
                         "a fraction of one GPU per task, e.g. 0.25 (instead of gpus)"},
    [SL_JS_GPU_MEMORY] = {"gpu_memory", "gpu-memory", 0, "Q", SL_FT_QTY, SL_QTY_MEM, 0, INT64_MAX,
                          NULL, 0, NULL, "",
                          "GPU memory a shared-GPU task needs, e.g. 10Gi (only with gpu_share)"},
    [SL_JS_CPUS] = {"cpus", "cpus", 0, "Q", SL_FT_QTY, SL_QTY_CPU, 0, INT64_MAX, NULL, 1000, "1",
                    "CPUs", "CPUs per task, e.g. 16 or 500m"},
    [SL_JS_MEMORY] = {"memory", "mem", 0, "Q", SL_FT_QTY, SL_QTY_MEM, 0, INT64_MAX, NULL,
                      1024LL * 1024 * 1024, "1Gi", "", "memory per task, e.g. 128Gi"},
    [SL_JS_GPU_MODELS] = {"gpu_models", "gpu-model", 0, "M", SL_FT_NAMES, 0, 1, NAME_LEN, NULL, 0,
                          "any", "",
                          "allowed GPU models (flag: repeat or comma-separate; only with gpus "
                          "or gpu_share)"},
    [SL_JS_POOL] = {"pool", "pool", 0, "POOL", SL_FT_NAME, 0, 1, NAME_LEN, NULL, 0, "any", "",
                    "run only on nodes of this pool"},
    [SL_JS_PRIORITY] = {"priority", "priority", 0, "N", SL_FT_INT, 0, -MAX_PRIORITY, MAX_PRIORITY,
                        NULL, 0, "0", "",
                        "priority (higher first under the priority queue policy)"},
    [SL_JS_TIME_LIMIT] = {"time_limit", "time", 0, "T", SL_FT_DURATION, 0, 0, MAX_TIME_LIMIT_S,
                          NULL, 0, "none", "seconds",
                          "time limit: seconds, or in files and flags 30m, 2h, 1d, 1h30m"},
    [SL_JS_COMMAND] = {"command", NULL, 0, NULL, SL_FT_ARGV, 0, 1, 0, NULL, 0, NULL, "",
                       "the command every task runs (flag: after --; in a file one string "
                       "runs as /bin/sh -c)"},
    [SL_JS_IMAGE] = {"image", "image", 0, "IMAGE", SL_FT_TEXT, 0, 1, 1024, NULL, 0, NULL, "",
                     "container image: runs in a container through the node's OCI runtime "
                     "(agent --runtime, docs/containers.md), else its --launcher"},
    [SL_JS_ENV] = {"env", "env", 'e', "K=V", SL_FT_ENV, 0, 0, 0, NULL, 0, NULL, "",
                   "environment variables of the tasks (flag: repeat)"},
    [SL_JS_ON_NODE_FAILURE] = {"on_node_failure", "on-node-failure", 0, "requeue|fail", SL_FT_ENUM,
                               0, 0, 0, "requeue|fail", 0, "requeue", "",
                               "what happens when a node dies under the job"},
    [SL_JS_ARRAY] = {"array", "array", 0, "LIST", SL_FT_ARRAY, 0, 1, 256, NULL, 0, "none", "",
                     "a job array as sbatch --array: 0-99, 1,3,5-9:2, 0-99%8 (at most 8 run at "
                     "once); docs/arrays.md"},
    [SL_JS_DEPENDENCY] = {"dependency", "dependency", 0, "DEPS", SL_FT_DEPS, 0, 1, 4096, NULL, 0,
                          "none", "",
                          "wait for other jobs as sbatch --dependency: afterok:12:13, "
                          "afterany:12?afterok:13, singleton; docs/arrays.md"},
    [SL_JS_SCRIPT] = {"script", NULL, 0, NULL, SL_FT_TEXT, 0, 1, SL_JOBSPEC_SCRIPT_MAX, NULL, 0,
                      NULL, "",
                      "a batch script every task runs, copied at submission (sluice submit "
                      "script.sh); command is then its name and arguments"},
    [SL_JS_CHDIR] = {"chdir", NULL, 0, NULL, SL_FT_TEXT, 0, 1, 4096, NULL, 0,
                     "the job's directory on the node", "",
                     "batch script: the directory it runs in (sbatch -D)"},
    [SL_JS_OUTPUT] = {"output", NULL, 0, NULL, SL_FT_TEXT, 0, 1, 4096, NULL, 0, "the job's log",
                      "",
                      "batch script: file its stdout goes to, with %j %x %A %a %t %n %N %% "
                      "(sbatch -o)"},
    [SL_JS_ERROR] = {"error", NULL, 0, NULL, SL_FT_TEXT, 0, 1, 4096, NULL, 0, "output", "",
                     "batch script: file its stderr goes to, patterns as output (sbatch -e)"},
    [SL_JS_SUBMIT_DIR] = {"submit_dir", NULL, 0, NULL, SL_FT_TEXT, 0, 1, 4096, NULL, 0, NULL, "",
                          "batch script: the directory it was submitted from "
                          "(SLURM_SUBMIT_DIR)"},
    [SL_JS_PRIORITY_CLASS] = {"priority_class", "priority-class", 0, "CLASS", SL_FT_NAME, 0, 1,
                              NAME_LEN, NULL, 0, "none", "",
                              "a priority class of the config: sets priority, may preempt"},
    [SL_JS_NODE_SELECTOR] = {"node_selector", "node-selector", 0, "K=V", SL_FT_NAMES, 0, 3, 127,
                             NULL, 0, "none", "",
                             "run only on nodes with these labels (flag: repeat or "
                             "comma-separate); docs/placement.md"},
    [SL_JS_CONSTRAINT] = {"constraint", "constraint", 'C', "EXPR", SL_FT_TEXT, 0, 1, 1024, NULL, 0,
                          "none", "",
                          "node labels as sbatch --constraint: features joined by & (all) or by "
                          "a bar (any), k=v, k!=v, k in (a,b), k notin (a,b), !k; "
                          "docs/placement.md"},
    [SL_JS_TOLERATIONS] = {"tolerations", "toleration", 0, "K[=V][:EFFECT]", SL_FT_NAMES, 0, 1,
                           127, NULL, 0, "none", "",
                           "node taints the job tolerates (flag: repeat); * tolerates all; "
                           "docs/placement.md"},
    [SL_JS_TOPOLOGY_REQUIRED] = {"topology_required", "topology-required", 0, "host|rack|block",
                                 SL_FT_ENUM, 0, 0, 0, "host|rack|block", 0, "none", "",
                                 "run the gang inside one such group, waiting rather than "
                                 "spread (YAML: topology: {required: rack}); docs/placement.md"},
    [SL_JS_TOPOLOGY_PREFERRED] = {"topology_preferred", "topology-preferred", 0,
                                  "host|rack|block", SL_FT_ENUM, 0, 0, 0, "host|rack|block", 0,
                                  "none", "",
                                  "prefer one such group: one block whenever one can hold "
                                  "the gang (Kueue's meaning), else the default fewest racks, "
                                  "then blocks (YAML: topology: {preferred: rack}); "
                                  "docs/placement.md"},
    [SL_JS_ALLOCATION] = {"allocation", "allocation", 0, "true|false", SL_FT_BOOL, 0, 0, 0, NULL, 0,
                          "false", "",
                          "an allocation (as sbatch's): one task runs the command, the others "
                          "hold their resources for srun's job steps; docs/slurm.md"},
    [SL_JS_MOUNTS] = {"mounts", "mount", 0, "SRC:DST[:ro]", SL_FT_NAMES, 0, 1, 4096, NULL, 0,
                      "none", "",
                      "image only: host directories bound into the container, SRC:DST or "
                      "SRC:DST:ro (flag: repeat or comma-separate); SRC under a prefix the "
                      "controller's container_mounts allows; docs/containers.md"},
    [SL_JS_SHM_SIZE] = {"shm_size", "shm-size", 0, "Q", SL_FT_QTY, SL_QTY_MEM, 1024 * 1024,
                        INT64_MAX, NULL, 64LL * 1024 * 1024, "64Mi", "",
                        "image only: size of the container's writable /dev/shm, e.g. 8Gi "
                        "(counts against memory)"},
    [SL_JS_WORKDIR] = {"workdir", "workdir", 0, "DIR", SL_FT_TEXT, 0, 1, 4096, NULL, 0,
                       "the image's, else the job's directory", "",
                       "image only: the absolute path inside the container the tasks start in"},
    [SL_JS_RETRIES] = {"retries", "retries", 0, "N", SL_FT_INT, 0, 0, 1000, NULL, 0,
                       "scheduler.default_retries (0)", "",
                       "run a failed job again up to N times, with the same id (sbatch "
                       "--requeue, Kubernetes backoffLimit); docs/jobspec.md"},
    [SL_JS_RETRY_BACKOFF] = {"retry_backoff", "retry-backoff", 0, "T", SL_FT_DURATION, 0, 0, 86400,
                             NULL, 10, "10", "seconds",
                             "wait before the first retry, doubled for each next one up to "
                             "scheduler.retry_backoff_max"},
    [SL_JS_MAIL_TYPE] = {"mail_type", "mail-type", 0, "TYPES", SL_FT_TEXT, 0, 1, 256, NULL, 0,
                         "none", "",
                         "events to notify as sbatch --mail-type: BEGIN, END, FAIL, REQUEUE, "
                         "TIME_LIMIT, INVALID_DEPEND, ALL (the config's notify delivers them)"},
    [SL_JS_MAIL_USER] = {"mail_user", "mail-user", 0, "ADDRESS", SL_FT_TEXT, 0, 1, 256, NULL, 0,
                         "the tenant", "", "who the notifications are for (sbatch --mail-user)"},
    [SL_JS_NODES] = {"nodes", "nodes", 0, "N", SL_FT_INT, 0, 1, SL_MAX_TASKS, NULL, 0, "any", "nodes",
                     "spread the tasks over exactly this many distinct nodes (sbatch -N); "
                     "docs/placement.md"},
    [SL_JS_NODES_MAX] = {"nodes_max", "nodes-max", 0, "N", SL_FT_INT, 0, 1, SL_MAX_TASKS, NULL, 0,
                         "nodes", "nodes",
                         "with nodes: at most this many (sbatch -N min-max); the fewest that fit"},
    [SL_JS_TASKS_PER_NODE] = {"tasks_per_node", "tasks-per-node", 0, "N", SL_FT_INT, 0, 1,
                              SL_MAX_TASKS, NULL, 0, "any", "tasks",
                              "exactly this many tasks on each node (sbatch --ntasks-per-node; "
                              "must divide tasks)"},
    [SL_JS_EXCLUSIVE] = {"exclusive", "exclusive", 0, "true|false", SL_FT_BOOL, 0, 0, 0, NULL, 0,
                         "false", "",
                         "whole nodes: every GPU, CPU and all memory of each node the job uses "
                         "are its own (sbatch --exclusive)"},
    [SL_JS_NODELIST] = {"nodelist", "nodelist", 0, "NODE", SL_FT_NAMES, 0, 1, NAME_LEN, NULL, 0,
                        "none", "",
                        "nodes that must all be among the job's (sbatch -w; flag: repeat or "
                        "comma-separate)"},
    [SL_JS_EXCLUDE] = {"exclude", "exclude", 0, "NODE", SL_FT_NAMES, 0, 1, NAME_LEN, NULL, 0,
                       "none", "", "nodes the job must not use (sbatch -x)"},
    [SL_JS_MEM_PER_GPU] = {"mem_per_gpu", "mem-per-gpu", 0, "Q", SL_FT_QTY, SL_QTY_MEM, 1,
                           INT64_MAX, NULL, 0, "none", "",
                           "memory per GPU: memory becomes gpus x this (sbatch --mem-per-gpu; "
                           "only with gpus)"},
    [SL_JS_COMMENT] = {"comment", "comment", 0, "TEXT", SL_FT_TEXT, 0, 0, 1024, NULL, 0, "none", "",
                       "free text, stored and shown by sluice show (sbatch --comment)"},
    [SL_JS_OPEN_MODE] = {"open_mode", NULL, 0, NULL, SL_FT_ENUM, 0, 0, 0, "truncate|append", 0,
                         "truncate", "",
                         "batch script: truncate or append to its output and error files "
                         "(sbatch --open-mode)"},
    [SL_JS_RESERVATION] = {"reservation", "reservation", 0, "NAME", SL_FT_NAME, 0, 1, NAME_LEN,
                           NULL, 0, "none", "",
                           "run inside this advance reservation: only on its nodes, only in "
                           "its window (sbatch --reservation); docs/scheduling.md"},
    [SL_JS_SLURM] = {"slurm", NULL, 0, NULL, SL_FT_ENV, 0, 0, 0, NULL, 0, NULL, "",
                     "batch script: the request as sbatch read it, which the tasks' SLURM_* "
                     "variables repeat (ntasks when -n or --ntasks-per-node was given, "
                     "ntasks_per_node, mem_per_node and mem_per_cpu in MB, "
                     "gpus_per_node, gpus_per_task, gpus, qos, submit_host); docs/slurm.md"},
    [SL_JS_VOLUMES] = {"volumes", NULL, 0, NULL, SL_FT_VOLUMES, 0, 0, SL_VOLUMES_MAX, NULL, 0,
                       "none", "",
                       "volumes in the tasks: each {path, read_only, sub_path} and one of "
                       "empty_dir {medium, size_limit}, host_path, pvc, nfs {server, path}, "
                       "csi {driver, attributes} (Kubernetes volumes and volumeMounts); docs/jobspec.md \"Volumes\""},
    [SL_JS_SECRETS] = {"secrets", NULL, 0, NULL, SL_FT_SECRETS, 0, 0, 0, NULL, 0, "none", "",
                       "the tenant's secrets and config maps given to its tasks: "
                       "{secret or config_map: NAME, key, env} sets a variable, {.., env_prefix} "
                       "every key, {.., path, items, mode} files; values never shown; "
                       "docs/secrets.md"},
    [SL_JS_NAMESPACE] = {"namespace", NULL, 0, "(metadata.namespace)", SL_FT_NAME, 0, 1, NAME_LEN,
                         NULL, 0, "the token's tenant", "",
                         "Kubernetes namespace: the tenant of that name or of tenants[].namespaces; "
                         "another tenant's is refused (403)"},
    [SL_JS_RUN_AS_USER] = {"run_as_user", NULL, 0, "(securityContext.runAsUser)", SL_FT_INT, 0, 0,
                           4294967294LL, NULL, 0, "the tenant's user", "",
                           "uid the tasks run as: accepted only when it is the tenant's user's "
                           "(tenants[].user on the controller)"},
    [SL_JS_RUN_AS_GROUP] = {"run_as_group", NULL, 0, "(securityContext.runAsGroup)", SL_FT_INT, 0,
                            0, 4294967294LL, NULL, 0, "the tenant's group", "",
                            "gid the tasks run as: accepted only when it is the tenant's group's"},
    [SL_JS_GPU_RESOURCE] = {"gpu_resource", NULL, 0, "(resources: nvidia.com/MODEL)", SL_FT_NAME, 0,
                            1, NAME_LEN, NULL, 0, "none", "",
                            "a Kubernetes extended GPU resource such as nvidia.com/a100: the GPU "
                            "model the config's gpu_resources maps it to (with gpus)"},
    [SL_JS_TTL_AFTER_FINISHED] = {"ttl_after_finished", NULL, 0, "(spec.ttlSecondsAfterFinished)",
                                  SL_FT_DURATION, 0, 0, MAX_TIME_LIMIT_S, NULL, 0,
                                  "scheduler.job_retention", "seconds",
                                  "leave the queue (GET /v1/jobs, sluice queue -a) this long after "
                                  "finishing, sooner than job_retention; sluice history keeps it"},
    [SL_JS_MEMORY_LIMIT] = {"memory_limit", NULL, 0, "(resources.limits.memory)", SL_FT_QTY,
                            SL_QTY_MEM, 0, INT64_MAX, NULL, 0, "110% of memory", "",
                            "each task's hard memory limit (its cgroup's), at least memory, which "
                            "still places it"},
    [SL_JS_CPU_LIMIT] = {"cpu_limit", NULL, 0, "(resources.limits.cpu)", SL_FT_QTY, SL_QTY_CPU, 0,
                         INT64_MAX, NULL, 0, "cpus", "CPUs",
                         "each task's CPU quota (its cgroup's), at least cpus, which still places "
                         "it"},
    [SL_JS_CONTAINERS] = {"containers", NULL, 0, NULL, SL_FT_CONTAINERS, 0, 1, SL_POD_CONTAINERS_MAX,
                          NULL, 0, "none", "",
                          "several containers in each task, started together in its cgroup as a "
                          "Kubernetes pod's: each {name, image, command, env, workdir, volumes, "
                          "gpus}, instead of image and command; docs/containers.md \"Pods\""},
    [SL_JS_ARGS] = {"args", NULL, 0, "(containers[0].args)", SL_FT_ARGV, 0, 1, 0, NULL, 0,
                    "the image's command", "",
                    "with image and without command: the image's entrypoint runs with these "
                    "arguments instead of its command (Kubernetes' args alone)"},
};

const sl_jobspec_field_t *sl_jobspec_find(const char *name) {
    for (int i = 0; i < SL_JS_NFIELDS; i++)
        if (strcmp(sl_jobspec_fields[i].name, name) == 0)
            return &sl_jobspec_fields[i];
    return NULL;
}

/* ---- the user's units ---- */

/* Seconds as the largest exact unit: "3660d", "90m", "0". */
static void dur_text(int64_t s, char *buf, size_t len) {
    if (s != 0 && s % 86400 == 0)
        snprintf(buf, len, "%lldd", (long long)(s / 86400));
    else if (s != 0 && s % 3600 == 0)
        snprintf(buf, len, "%lldh", (long long)(s / 3600));
    else if (s != 0 && s % 60 == 0)
        snprintf(buf, len, "%lldm", (long long)(s / 60));
    else
        snprintf(buf, len, "%lld", (long long)s);
}

static const char *unit_sep(const sl_jobspec_field_t *f) {
    return f->unit[0] ? " " : "";
}

int sl_jobspec_range_text(const sl_jobspec_field_t *f, char *buf, size_t len) {
    char a[48], b[48];
    switch (f->type) {
    case SL_FT_INT:
        return snprintf(buf, len, "%lld to %lld%s%s", (long long)f->min, (long long)f->max,
                        unit_sep(f), f->unit);
    case SL_FT_DURATION:
        dur_text(f->min, a, sizeof a);
        dur_text(f->max, b, sizeof b);
        return snprintf(buf, len, "%s to %s", a, b);
    case SL_FT_QTY:
        sl_qty_format(f->min, f->qty, a, sizeof a);
        if (f->max == INT64_MAX)
            return snprintf(buf, len, "%s or more%s%s", a, unit_sep(f), f->unit);
        sl_qty_format(f->max, f->qty, b, sizeof b);
        return snprintf(buf, len, "%s to %s%s%s", a, b, unit_sep(f), f->unit);
    case SL_FT_NAME:
    case SL_FT_TEXT:
        return snprintf(buf, len, "%lld to %lld characters", (long long)f->min, (long long)f->max);
    case SL_FT_NAMES:
        return snprintf(buf, len, "names of %lld to %lld characters", (long long)f->min,
                        (long long)f->max);
    case SL_FT_ARGV:
        return snprintf(buf, len, "one or more strings");
    case SL_FT_ENV:
        return snprintf(buf, len, "NAME: value");
    case SL_FT_ARRAY:
        return snprintf(buf, len, "indexes 0 to %d", SL_ARRAY_SIZE_CEILING - 1);
    case SL_FT_DEPS:
        return snprintf(buf, len, "up to %d jobs", SL_DEP_MAX_TERMS);
    case SL_FT_BOOL:
        return snprintf(buf, len, "true or false");
    case SL_FT_VOLUMES:
        return snprintf(buf, len, "up to %lld volumes", (long long)f->max);
    case SL_FT_SECRETS:
        return snprintf(buf, len, "up to %d references", SL_SECRET_REFS_MAX);
    case SL_FT_CONTAINERS:
        return snprintf(buf, len, "1 to %lld containers", (long long)f->max);
    case SL_FT_ENUM: {
        size_t n = 0;
        buf[0] = '\0';
        for (const char *p = f->choices; *p && n + 5 < len; p++) {
            if (*p == '|') {
                n += (size_t)snprintf(buf + n, len - n, " or ");
            } else {
                buf[n++] = *p;
                buf[n] = '\0';
            }
        }
        return (int)n;
    }
    }
    return snprintf(buf, len, "any");
}

static const char *type_text(const sl_jobspec_field_t *f) {
    switch (f->type) {
    case SL_FT_NAME: return "name";
    case SL_FT_TEXT: return "string";
    case SL_FT_INT: return "integer";
    case SL_FT_DURATION: return "seconds (integer)";
    case SL_FT_QTY:
        return f->qty == SL_QTY_CPU   ? "CPU quantity (\"16\", \"500m\")"
               : f->qty == SL_QTY_GPU ? "GPU quantity (\"0.25\", \"250m\")"
                                      : "memory quantity (\"128Gi\", \"512Mi\")";
    case SL_FT_NAMES: return "list of names, or one name";
    case SL_FT_ARGV: return "list of strings";
    case SL_FT_ENV: return "object of strings";
    case SL_FT_ENUM: return "word";
    case SL_FT_ARRAY: return "Slurm array text";
    case SL_FT_DEPS: return "Slurm dependency text";
    case SL_FT_BOOL: return "boolean";
    case SL_FT_VOLUMES: return "list of volume objects";
    case SL_FT_SECRETS: return "list of objects";
    case SL_FT_CONTAINERS: return "list of container objects";
    }
    return "?";
}

/* ---- one value ---- */

static bool name_ok(const char *s, const sl_jobspec_field_t *f) {
    size_t n = strlen(s);
    if ((int64_t)n < f->min || (int64_t)n > f->max)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return false;
    return true;
}

bool sl_jobspec_env_name_ok(const char *k) {
    if (!(isalpha((unsigned char)k[0]) || k[0] == '_'))
        return false;
    for (const char *p = k; *p; p++)
        if (!(isalnum((unsigned char)*p) || *p == '_'))
            return false;
    return strlen(k) < 256;
}

static bool enum_ok(const sl_jobspec_field_t *f, const char *s) {
    size_t n = strlen(s);
    for (const char *p = f->choices; *p;) {
        size_t w = strcspn(p, "|");
        if (w == n && n > 0 && strncmp(p, s, n) == 0)
            return true;
        p += w + (p[w] == '|');
    }
    return false;
}

/* A quantity's text and its range; 0 or SL_EINVAL with a message. */
static int qty_text(const sl_jobspec_field_t *f, const char *text, int64_t *out, char *err,
                    size_t errlen) {
    int64_t v;
    int rc = sl_qty_parse(text, f->qty, &v, err, errlen);
    if (rc < 0)
        return SL_EINVAL;
    if (v < f->min || v > f->max) {
        char range[96];
        sl_jobspec_range_text(f, range, sizeof range);
        snprintf(err, errlen, "\"%s\" is out of range (%s)", text, range);
        return SL_EINVAL;
    }
    *out = v;
    return 0;
}

/* The field's range as text, into the caller's buffer "range". */
#define RANGE (sl_jobspec_range_text(f, range, sizeof range), range)

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return SL_EINVAL;
}

/* An array or dependency text: its length, then its syntax (arraydep.h). */
static int slurm_text(const sl_jobspec_field_t *f, const char *text, char *err, size_t errlen) {
    if ((int64_t)strlen(text) > f->max)
        return fail(err, errlen, "at most %lld characters", (long long)f->max);
    if (f->type == SL_FT_ARRAY)
        return sl_array_parse(text, SL_ARRAY_SIZE_CEILING, NULL, err, errlen);
    return sl_dep_parse(text, NULL, err, errlen);
}

int sl_jobspec_check(const sl_jobspec_field_t *f, json_t *v, int64_t *num, char *err,
                     size_t errlen) {
    char range[96]; /* the range for a message, written only on failure */
    switch (f->type) {
    case SL_FT_NAME:
        if (!json_is_string(v) || !name_ok(json_string_value(v), f))
            return fail(err, errlen, "must be a name of %s, none of them control characters",
                        RANGE);
        return 0;
    case SL_FT_TEXT:
        if (!json_is_string(v) || (int64_t)json_string_length(v) < f->min ||
            (int64_t)json_string_length(v) > f->max)
            return fail(err, errlen, "must be a string of %s", RANGE);
        return 0;
    case SL_FT_INT:
        if (!json_is_integer(v) || json_integer_value(v) < f->min || json_integer_value(v) > f->max)
            return fail(err, errlen, "must be a whole number from %s", RANGE);
        *num = json_integer_value(v);
        return 0;
    case SL_FT_DURATION: {
        char most[32];
        dur_text(f->max, most, sizeof most);
        if (!json_is_integer(v) || json_integer_value(v) < f->min || json_integer_value(v) > f->max)
            return fail(err, errlen,
                        "must be a whole number of seconds from %lld (no limit) to %lld (%s)",
                        (long long)f->min, (long long)f->max, most);
        *num = json_integer_value(v);
        return 0;
    }
    case SL_FT_QTY: {
        char text[64];
        if (json_is_string(v)) {
            snprintf(text, sizeof text, "%s", json_string_value(v));
        } else if (json_is_integer(v)) {
            snprintf(text, sizeof text, "%lld", (long long)json_integer_value(v));
        } else if (json_is_real(v)) {
            /* The number as a decimal, trailing zeros dropped, so that the
             * exact parse sees what the user most likely wrote. */
            snprintf(text, sizeof text, "%.9f", json_real_value(v));
            char *e = text + strlen(text) - 1;
            while (e > text && *e == '0')
                *e-- = '\0';
            if (*e == '.')
                *e = '\0';
        } else {
            return fail(err, errlen, "must be a quantity (a string like \"16\", \"500m\", \"128Gi\")");
        }
        return qty_text(f, text, num, err, errlen);
    }
    case SL_FT_NAMES: {
        if (json_is_string(v))
            return name_ok(json_string_value(v), f)
                       ? 0
                       : fail(err, errlen, "must be a list of %s (or one name)", RANGE);
        size_t i;
        json_t *m;
        if (!json_is_array(v))
            return fail(err, errlen, "must be a list of %s (or one name)", RANGE);
        json_array_foreach(v, i, m) {
            if (!json_is_string(m) || !name_ok(json_string_value(m), f))
                return fail(err, errlen, "item %zu: must be a name of %lld to %lld characters", i,
                            (long long)f->min, (long long)f->max);
        }
        return 0;
    }
    case SL_FT_ARGV: {
        size_t i;
        json_t *a;
        if (!json_is_array(v) || json_array_size(v) == 0)
            return fail(err, errlen, "must be a non-empty list of strings");
        json_array_foreach(v, i, a) {
            if (!json_is_string(a))
                return fail(err, errlen, "item %zu must be a string", i);
        }
        return 0;
    }
    case SL_FT_ENV: {
        const char *k;
        json_t *ev;
        if (!json_is_object(v))
            return fail(err, errlen, "must be an object of string values");
        json_object_foreach(v, k, ev) {
            if (!sl_jobspec_env_name_ok(k))
                return fail(err, errlen, "\"%s\" is not a valid variable name", k);
            if (!json_is_string(ev))
                return fail(err, errlen, "value of %s must be a string", k);
        }
        return 0;
    }
    case SL_FT_SECRETS:
        return sl_secretref_check(v, err, errlen) == 0 ? 0 : SL_EINVAL;
    case SL_FT_ENUM:
        if (!json_is_string(v) || !enum_ok(f, json_string_value(v)))
            return fail(err, errlen, "must be %s", RANGE);
        return 0;
    case SL_FT_BOOL:
        return json_is_boolean(v) ? 0 : fail(err, errlen, "must be true or false");
    case SL_FT_VOLUMES:
        return sl_volumes_check(v, err, errlen);
    case SL_FT_CONTAINERS:
        return sl_pod_check(v, err, errlen);
    case SL_FT_ARRAY:
    case SL_FT_DEPS:
        if (!json_is_string(v))
            return fail(err, errlen, "must be a string (%s)", f->type == SL_FT_ARRAY
                        ? "\"0-99\", \"1,3,5-9:2\", \"0-99%8\""
                        : "\"afterok:123\", \"afterany:7:8,afterok:9\", \"singleton\"");
        return slurm_text(f, json_string_value(v), err, errlen);
    }
    return fail(err, errlen, "cannot be checked");
}

int sl_jobspec_parse_duration(const char *str, int64_t *out) {
    const char *p = str;
    int64_t total = 0;
    if (!*p)
        return -1;
    while (*p) {
        if (!isdigit((unsigned char)*p))
            return -1;
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (errno)
            return -1;
        int64_t mul = 1;
        switch (*end) {
        case '\0': mul = 1; break;
        case 's': mul = 1; end++; break;
        case 'm': mul = 60; end++; break;
        case 'h': mul = 3600; end++; break;
        case 'd': mul = 86400; end++; break;
        default: return -1;
        }
        if (v > INT64_MAX / mul / 2 || total > INT64_MAX / 2)
            return -1;
        total += v * mul;
        p = end;
    }
    *out = total;
    return 0;
}

json_t *sl_jobspec_from_text(const sl_jobspec_field_t *f, const char *text, char *err,
                             size_t errlen) {
    char range[96]; /* the range for a message, written only on failure */
    switch (f->type) {
    case SL_FT_NAME:
    case SL_FT_NAMES:
        if (!name_ok(text, f)) {
            fail(err, errlen, "\"%s\" is not a name of %lld to %lld characters, none of them "
                 "control characters", text, (long long)f->min, (long long)f->max);
            return NULL;
        }
        return json_string(text);
    case SL_FT_TEXT:
        if ((int64_t)strlen(text) < f->min || (int64_t)strlen(text) > f->max) {
            fail(err, errlen, "must be a string of %s", RANGE);
            return NULL;
        }
        return json_string(text);
    case SL_FT_INT: {
        char *end;
        errno = 0;
        long long x = strtoll(text, &end, 10);
        if (errno || end == text || *end || x < f->min || x > f->max) {
            fail(err, errlen, "\"%s\" is not a whole number from %s", text, RANGE);
            return NULL;
        }
        return json_integer(x);
    }
    case SL_FT_DURATION: {
        int64_t secs;
        if (sl_jobspec_parse_duration(text, &secs) != 0) {
            fail(err, errlen, "\"%s\" is not a duration (seconds, or e.g. 30m, 2h, 1d)", text);
            return NULL;
        }
        if (secs < f->min || secs > f->max) {
            fail(err, errlen, "\"%s\" is not a duration from %s", text, RANGE);
            return NULL;
        }
        return json_integer(secs);
    }
    case SL_FT_QTY: {
        int64_t v;
        if (qty_text(f, text, &v, err, errlen) < 0)
            return NULL;
        return json_string(text);
    }
    case SL_FT_ENUM:
        if (!enum_ok(f, text)) {
            fail(err, errlen, "\"%s\" is not %s", text, RANGE);
            return NULL;
        }
        return json_string(text);
    case SL_FT_ARRAY:
    case SL_FT_DEPS:
        if (slurm_text(f, text, err, errlen) < 0)
            return NULL;
        return json_string(text);
    case SL_FT_BOOL:
        if (strcmp(text, "true") == 0 || strcmp(text, "false") == 0)
            return json_boolean(strcmp(text, "true") == 0);
        fail(err, errlen, "\"%s\" is not true or false", text);
        return NULL;
    case SL_FT_ARGV:
    case SL_FT_ENV:
    case SL_FT_VOLUMES:
    case SL_FT_SECRETS:
    case SL_FT_CONTAINERS:
        break;
    }
    fail(err, errlen, "has no text form");
    return NULL;
}

/* ---- a whole spec ---- */

int sl_jobspec_parse(json_t *spec, sl_jobspec_t *out, const char **field, char *err,
                     size_t errlen) {
    memset(out, 0, sizeof *out);
    *field = NULL;
    if (!json_is_object(spec))
        return fail(err, errlen, "the body must be a JSON object (a job spec)");
    const char *key;
    json_t *v;
    json_object_foreach(spec, key, v) {
        if (sl_jobspec_find(key) == NULL) {
            *field = key;
            size_t n = (size_t)snprintf(err, errlen, "unknown field (known:");
            for (int i = 0; i < SL_JS_NFIELDS && n < errlen; i++)
                n += (size_t)snprintf(err + n, errlen - n, "%s %s", i ? "," : "",
                                      sl_jobspec_fields[i].name);
            if (n < errlen)
                snprintf(err + n, errlen - n, ")");
            return SL_ENOENT;
        }
    }
    /* Every field's value is checked, and every bad one said at once: the
     * first's message as it is (its name is *field), then "; also NAME:
     * message" for each other. */
    const char *first = NULL;
    size_t used = 0;
    for (int i = 0; i < SL_JS_NFIELDS; i++) {
        const sl_jobspec_field_t *f = &sl_jobspec_fields[i];
        out->num[i] = f->dflt;
        v = json_object_get(spec, f->name);
        if (v == NULL || json_is_null(v))
            continue;
        char one[1024];
        if (sl_jobspec_check(f, v, &out->num[i], one, sizeof one) < 0) {
            if (first == NULL)
                first = f->name;
            /* A list's messages name their places themselves: volumes[2].path. */
            size_t fl = strlen(f->name);
            bool self = strncmp(one, f->name, fl) == 0 && one[fl] == '[';
            if (used < errlen)
                used += (size_t)snprintf(err + used, errlen - used, "%s%s%s%s",
                                         used ? "; also " : "", used && !self ? f->name : "",
                                         used && !self ? ": " : "", one);
            out->num[i] = f->dflt;
            continue;
        }
        out->val[i] = v;
    }
    if (first != NULL) {
        *field = first;
        return SL_EINVAL;
    }
    int64_t *num = out->num;
    json_t **val = out->val;
    if (val[SL_JS_MIN_TASKS] == NULL) {
        num[SL_JS_MIN_TASKS] = num[SL_JS_TASKS];
    } else if (num[SL_JS_MIN_TASKS] > num[SL_JS_TASKS]) {
        *field = "min_tasks";
        return fail(err, errlen, "must be a whole number from 1 to tasks (%lld)",
                    (long long)num[SL_JS_TASKS]);
    }
    for (int i = SL_JS_MEMORY_LIMIT; i <= SL_JS_CPU_LIMIT; i++) {
        int req = i == SL_JS_MEMORY_LIMIT ? SL_JS_MEMORY : SL_JS_CPUS;
        if (val[i] && num[i] < num[req]) {
            char q[48];
            sl_qty_format(num[req], sl_jobspec_fields[req].qty, q, sizeof q);
            *field = sl_jobspec_fields[i].name;
            return fail(err, errlen, "must be at least %s (%s), the request it limits",
                        sl_jobspec_fields[req].name, q);
        }
    }
    if (val[SL_JS_GPU_SHARE] && num[SL_JS_GPUS] > 0) {
        *field = "gpu_share";
        return fail(err, errlen, "cannot be combined with gpus (ask for whole GPUs or a share)");
    }
    if (val[SL_JS_GPU_MEMORY] && !val[SL_JS_GPU_SHARE]) {
        *field = "gpu_memory";
        return fail(err, errlen, "only allowed with gpu_share");
    }
    json_t *models = val[SL_JS_GPU_MODELS];
    if (models && (json_is_string(models) || json_array_size(models) > 0) &&
        num[SL_JS_GPUS] == 0 && !val[SL_JS_GPU_SHARE]) {
        *field = "gpu_models";
        return fail(err, errlen, "only allowed with gpus or gpu_share");
    }
    int rc = sl_jobspec_nodes_rules(out, field, err, errlen);
    if (rc < 0)
        return rc;
    if (val[SL_JS_OPEN_MODE] && !val[SL_JS_SCRIPT]) {
        *field = "open_mode";
        return fail(err, errlen, "only allowed with script");
    }
    for (int i = SL_JS_CHDIR; i <= SL_JS_SUBMIT_DIR; i++) {
        if (val[i] && !val[SL_JS_SCRIPT]) {
            *field = sl_jobspec_fields[i].name;
            return fail(err, errlen, "only allowed with script");
        }
    }
    if (val[SL_JS_CONTAINERS] && (val[SL_JS_IMAGE] || val[SL_JS_COMMAND])) {
        *field = val[SL_JS_IMAGE] ? "image" : "command";
        return fail(err, errlen, "cannot be combined with containers (give each container's)");
    }
    if (val[SL_JS_ARGS] && (!val[SL_JS_IMAGE] || val[SL_JS_COMMAND])) {
        *field = "args";
        return fail(err, errlen, val[SL_JS_COMMAND] ? "cannot be combined with command (give the "
                    "arguments after the command)" : "only allowed with image (its entrypoint's)");
    }
    if (val[SL_JS_CONTAINERS] &&
        sl_pod_rules(val[SL_JS_CONTAINERS], val[SL_JS_VOLUMES], num[SL_JS_GPUS], err, errlen) != 0) {
        *field = "containers";
        return SL_EINVAL;
    }
    for (int i = SL_JS_MOUNTS; i <= SL_JS_WORKDIR; i++) {
        if (val[i] && !val[SL_JS_IMAGE] && !val[SL_JS_CONTAINERS]) {
            *field = sl_jobspec_fields[i].name;
            return fail(err, errlen, "only allowed with image");
        }
    }
    if (val[SL_JS_ALLOCATION] && json_is_true(val[SL_JS_ALLOCATION]) &&
        (val[SL_JS_IMAGE] || val[SL_JS_CONTAINERS])) {
        *field = "allocation";
        return fail(err, errlen, "cannot be combined with image (the step daemon runs on the "
                    "node, not in a container)");
    }
    if (val[SL_JS_WORKDIR] && json_string_value(val[SL_JS_WORKDIR])[0] != '/') {
        *field = "workdir";
        return fail(err, errlen, "must be an absolute path inside the container (\"%s\")",
                    json_string_value(val[SL_JS_WORKDIR]));
    }
    if (val[SL_JS_MOUNTS]) {
        json_t *ms = val[SL_JS_MOUNTS], *m;
        size_t i, n = json_is_array(ms) ? json_array_size(ms) : 1;
        for (i = 0; i < n; i++) {
            m = json_is_array(ms) ? json_array_get(ms, i) : ms;
            if (sl_jobspec_mount_parse(json_string_value(m), NULL, NULL, NULL, err, errlen) != 0) {
                *field = "mounts";
                return SL_EINVAL;
            }
        }
    }
    if (val[SL_JS_MAIL_TYPE]) {
        uint32_t mask;
        if (sl_mail_types_parse(json_string_value(val[SL_JS_MAIL_TYPE]), &mask, err, errlen) < 0) {
            *field = "mail_type";
            return SL_EINVAL;
        }
    }
    if (!val[SL_JS_COMMAND] && !val[SL_JS_IMAGE] && !val[SL_JS_SCRIPT] && !val[SL_JS_CONTAINERS]) {
        *field = "command";
        return fail(err, errlen, "required (or give an image, containers or a script)");
    }
    *field = NULL;
    return 0;
}

/* ---- a container's mount ---- */

int sl_jobspec_mount_parse(const char *text, char *src, char *dst, bool *ro, char *err,
                           size_t errlen) {
    const char *c1 = strchr(text, ':');
    const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    size_t sl = c1 ? (size_t)(c1 - text) : 0;
    size_t dl = c1 ? (c2 ? (size_t)(c2 - c1 - 1) : strlen(c1 + 1)) : 0;
    const char *opt = c2 ? c2 + 1 : "rw";
    if (!c1 || sl == 0 || dl == 0)
        return fail(err, errlen, "\"%s\" is not SRC:DST or SRC:DST:ro", text);
    if (text[0] != '/' || c1[1] != '/')
        return fail(err, errlen, "\"%s\": SRC and DST must be absolute paths", text);
    if (strcmp(opt, "ro") != 0 && strcmp(opt, "rw") != 0)
        return fail(err, errlen, "\"%s\": the option must be ro or rw, not \"%s\"", text, opt);
    for (const char *p = text; *p; p++) {
        if (p[0] == '/' && p[1] == '.' && p[2] == '.' && (p[3] == '/' || p[3] == ':' || !p[3]))
            return fail(err, errlen, "\"%s\": no .. in a mount's paths", text);
    }
    if (sl >= SL_JOBSPEC_PATH_MAX || dl >= SL_JOBSPEC_PATH_MAX)
        return fail(err, errlen, "\"%s\": a path is too long", text);
    if (src) {
        memcpy(src, text, sl);
        src[sl] = '\0';
    }
    if (dst) {
        memcpy(dst, c1 + 1, dl);
        dst[dl] = '\0';
    }
    if (ro)
        *ro = strcmp(opt, "ro") == 0;
    return 0;
}

bool sl_jobspec_mount_allowed(const char *src, const char *const *prefixes, size_t n) {
    for (size_t i = 0; i < n; i++) {
        size_t pl = strlen(prefixes[i]);
        while (pl > 1 && prefixes[i][pl - 1] == '/')
            pl--;
        if (strncmp(src, prefixes[i], pl) == 0 &&
            (src[pl] == '\0' || src[pl] == '/' || (pl == 1 && prefixes[i][0] == '/')))
            return true;
    }
    return false;
}

/* The rules between the node fields and the others. */
int sl_jobspec_nodes_rules(const sl_jobspec_t *js, const char **field, char *err, size_t errlen) {
    const int64_t *num = js->num;
    json_t *const *val = js->val;
    int64_t tasks = num[SL_JS_TASKS], n = num[SL_JS_NODES], k = num[SL_JS_TASKS_PER_NODE];
    int64_t hi = val[SL_JS_NODES_MAX] ? num[SL_JS_NODES_MAX] : n;
    if (val[SL_JS_NODES_MAX] && !val[SL_JS_NODES]) {
        *field = "nodes_max";
        return fail(err, errlen, "only allowed with nodes");
    }
    if (val[SL_JS_NODES_MAX] && hi < n) {
        *field = "nodes_max";
        return fail(err, errlen, "%lld is below nodes (%lld)", (long long)hi, (long long)n);
    }
    if (val[SL_JS_NODES] && n > tasks) {
        *field = "nodes";
        return fail(err, errlen, "%lld nodes need at least %lld tasks, the job has %lld (give "
                    "tasks or tasks_per_node)", (long long)n, (long long)n, (long long)tasks);
    }
    if (val[SL_JS_TASKS_PER_NODE] && tasks % k) {
        *field = "tasks_per_node";
        return fail(err, errlen, "%lld tasks do not divide into %lld per node", (long long)tasks,
                    (long long)k);
    }
    if (val[SL_JS_TASKS_PER_NODE] && val[SL_JS_NODES] && (tasks / k < n || tasks / k > hi)) {
        *field = "tasks_per_node";
        return fail(err, errlen, "%lld tasks at %lld per node use %lld nodes, outside nodes "
                    "%lld..%lld", (long long)tasks, (long long)k, (long long)(tasks / k),
                    (long long)n, (long long)hi);
    }
    bool placed = val[SL_JS_NODES] || val[SL_JS_TASKS_PER_NODE] || json_is_true(val[SL_JS_EXCLUSIVE]) ||
                  val[SL_JS_NODELIST] || val[SL_JS_EXCLUDE];
    if (placed && num[SL_JS_MIN_TASKS] < tasks) {
        *field = "min_tasks";
        return fail(err, errlen, "an elastic job cannot also ask for its nodes (nodes, "
                    "tasks_per_node, exclusive, nodelist, exclude)");
    }
    if (val[SL_JS_MEM_PER_GPU] && num[SL_JS_GPUS] == 0) {
        *field = "mem_per_gpu";
        return fail(err, errlen, "only allowed with gpus (whole GPUs per task)");
    }
    return 0;
}

/* ---- the table for people ---- */

void sl_jobspec_write_table(FILE *out, bool markdown) {
    if (markdown)
        fprintf(out, "| field | `sluice submit` flag | type | range | default | meaning |\n"
                     "|---|---|---|---|---|---|\n");
    for (int i = 0; i < SL_JS_NFIELDS; i++) {
        const sl_jobspec_field_t *f = &sl_jobspec_fields[i];
        char range[96], flag[64];
        sl_jobspec_range_text(f, range, sizeof range);
        if (f->flag && f->shortflag)
            snprintf(flag, sizeof flag, "-%c, --%s %s", f->shortflag, f->flag, f->metavar);
        else if (f->flag)
            snprintf(flag, sizeof flag, "--%s %s", f->flag, f->metavar);
        else if (i == SL_JS_COMMAND)
            snprintf(flag, sizeof flag, "-- COMMAND...");
        else if (f->type == SL_FT_VOLUMES || f->type == SL_FT_CONTAINERS)
            snprintf(flag, sizeof flag, "(a spec file or manifest)");
        else if (i == SL_JS_SECRETS)
            snprintf(flag, sizeof flag, "(a spec file or manifest)");
        else if (f->metavar) /* no flag: where the field comes from */
            snprintf(flag, sizeof flag, "%s", f->metavar);
        else
            snprintf(flag, sizeof flag, "(from a batch script)");
        if (markdown) {
            /* A "|" in a cell (requeue|fail) would end the cell: escape it. */
            char cell[96];
            size_t n = 0;
            for (const char *p = flag; *p && n + 3 < sizeof cell; p++) {
                if (*p == '|')
                    cell[n++] = '\\';
                cell[n++] = *p;
            }
            cell[n] = '\0';
            fprintf(out, "| `%s` | `%s` | %s | %s | %s | %s |\n", f->name, cell, type_text(f), range,
                    f->dflt_text ? f->dflt_text : "-", f->help);
        } else {
            fprintf(out, "%s (%s; %s)\n    %s\n    range: %s; default: %s\n", f->name, flag,
                    type_text(f), f->help, range, f->dflt_text ? f->dflt_text : "none");
        }
    }
}
