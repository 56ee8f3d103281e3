/*
 * batch.c - one task's argv and environment, and a batch script's runner
 * (batch.h).
 *
 * sbatch copies a script into the job at submission and slurmd runs that
 * copy. Sluice does the same without a new message or a new agent feature:
 * the script's text is in the job's spec (the field script, at most
 * SL_JOBSPEC_SCRIPT_MAX bytes), and each task's launch is
 *
 *     /bin/sh -c RUNNER NAME CHDIR OUTPUT ERROR ARG...
 *
 * with the text in the environment variable SLUICE_BATCH_SCRIPT. RUNNER
 * writes it, as the task's user, to TMPDIR/slurm_script.TASK (TMPDIR is
 * the job's own directory on the node, mode 0700; one file per task, so
 * that tasks sharing a node do not write one file at once), mode 0700,
 * removes the variable, enters CHDIR when one is given (else the directory
 * of submission when the node has it, as sbatch would, else it stays in
 * the job's directory), sends stdout and
 * stderr to OUTPUT and ERROR when given (appended; without ERROR stderr
 * goes with stdout, as in Slurm) and executes the copy with the script's
 * arguments. The script therefore needs its own #! line, as under sbatch.
 *
 * An array's element (any job, script or not) also gets its array's id
 * and its index, as SLURM_ARRAY_JOB_ID / SLURM_ARRAY_TASK_ID and
 * SLUICE_ARRAY_JOB_ID / SLUICE_ARRAY_TASK_ID; %A and %a expand to them.
 *
 * Slurm's variables are computed from the placement: the job's nodes are
 * the distinct nodes of its tasks sorted by name, SLURM_NODEID is a task's
 * node's place in that list, SLURM_JOB_NODELIST the list in Slurm's
 * compressed form (n[1-3,5]). They are set for batch scripts only: other
 * jobs' environments stay exactly what their spec says.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "views/batch.h"
#include "arraydep.h"
#include "hostlist.h"
#include "jobspec.h"
#include "slurmenv.h"
#include "views/alloc.h"
#include "base/config.h"
#include "domain/nodes.h"
#include "quantity.h"
#include "domain/whole.h"

/* Slurm's NO_VAL, which it writes for %a in a job that is not an array. */
#define SLURM_NO_ARRAY_INDEX "4294967294"

/* Bash's exported function NAME running slurm-bin's NAME (the first
 * directory of the task's PATH, $b in the runner): a script run by a login
 * shell (#!/bin/bash -l, --login) has its PATH reset by /etc/profile, and
 * finds Sluice's Slurm commands by these rather than another Slurm's. Only
 * such scripts get them. */
#define SLURM_FN(n) "\"BASH_FUNC_" n "%%=() { \\\"$b/" n "\\\" \\\"\\$@\\\"; }\" "

static const char runner[] =
    "f=\"${TMPDIR:-/tmp}/slurm_script.${SLUICE_TASK_INDEX:-0}\"; u=$(umask); umask 077; "
    "printf '%s' \"$" CTL_BATCH_SCRIPT_ENV "\" >\"$f\" && chmod 700 \"$f\" || "
    "{ echo \"sluice: cannot write the batch script to $f\" >&2; exit 127; }; "
    "unset " CTL_BATCH_SCRIPT_ENV "; umask \"$u\"; "
    "if [ -n \"$1\" ]; then cd -- \"$1\" || exit 1; "
    "elif [ -d \"$SLURM_SUBMIT_DIR\" ]; then cd -- \"$SLURM_SUBMIT_DIR\" 2>/dev/null; fi; "
    "t=${SLUICE_OPEN_MODE:-append}; unset SLUICE_OPEN_MODE; "
    "if [ -n \"$2\" ]; then { [ \"$t\" != truncate ] || : >\"$2\"; } || exit 1; "
    "exec >>\"$2\" || exit 1; [ -n \"$3\" ] || exec 2>&1; fi; "
    "if [ -n \"$3\" ]; then { [ \"$t\" != truncate ] || [ \"$3\" = \"$2\" ] || : >\"$3\"; } "
    "|| exit 1; exec 2>>\"$3\" || exit 1; fi; "
    "b=${PATH%%:*}; shift 3; IFS= read -r l <\"$f\"; "
    "case \"$l\" in *bash*' -l'*|*bash*--login*) if [ -x \"$b/srun\" ]; then exec env "
    SLURM_FN("sbatch") SLURM_FN("srun") SLURM_FN("salloc") SLURM_FN("squeue")
    SLURM_FN("scancel") SLURM_FN("sacct") SLURM_FN("sinfo") SLURM_FN("scontrol")
    "\"$f\" \"$@\"; fi;; esac; exec \"$f\" \"$@\"";

static char *own(ctl_launch_cmd_t *lc, char *s) {
    if (lc->nowned == lc->owned_cap) {
        lc->owned_cap = lc->owned_cap ? 2 * lc->owned_cap : 16;
        lc->owned = sl_xrealloc(lc->owned, lc->owned_cap * sizeof *lc->owned);
    }
    lc->owned[lc->nowned++] = s;
    return s;
}

static char *own_printf(ctl_launch_cmd_t *lc, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static char *own_printf(ctl_launch_cmd_t *lc, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = sl_xmalloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return own(lc, s);
}

/* ---- a batch script's task ---- */

/* What a task's patterns and variables are made of. */
typedef struct task_ctx {
    const ctl_job_t *j;
    int32_t task;
    int32_t ntasks;       /* the job's placed tasks */
    int32_t local;        /* the task's index among those on its node */
    const char *name;     /* the job's */
    const char *node;     /* the task's node's name */
    int32_t node_id;      /* its place among the job's nodes */
    const char *user;     /* the Unix user the task runs as */
} task_ctx_t;

/* Expands sbatch's filename patterns (%j %x %A %a %t %n %N %u %%, each
 * letter with an optional zero-padding width as %4a) in pat. Unknown
 * letters are kept as written (the CLI refuses them at submission). */
static char *expand(ctl_launch_cmd_t *lc, const char *pat, const task_ctx_t *t) {
    size_t cap = strlen(pat) + 64, n = 0;
    char *out = sl_xmalloc(cap);
    for (const char *p = pat; *p;) {
        char piece[300];
        const char *q = p;
        if (*p == '%') {
            q++;
            int width = 0;
            while (*q >= '0' && *q <= '9' && width < 100)
                width = width * 10 + (*q++ - '0');
            unsigned long long v = 0;
            bool num = true;
            const char *s = NULL;
            switch (*q) {
            case 'j': v = t->j->id; break;
            case 'A': v = t->j->array_id ? t->j->array_id : t->j->id; break;
            case 'a':
                if (t->j->array_id)
                    v = (unsigned long long)t->j->array_index;
                else
                    num = false, s = SLURM_NO_ARRAY_INDEX;
                break;
            case 't': v = (unsigned long long)t->task; break;
            case 'n': v = (unsigned long long)t->node_id; break;
            case 'x': num = false; s = t->name; break;
            case 'N': num = false; s = t->node; break;
            case 'u': num = false; s = t->user; break;
            case '%': num = false; s = "%"; width = 0; break;
            default: num = false; s = NULL; break;
            }
            if (num)
                snprintf(piece, sizeof piece, "%0*llu", width, v);
            else if (s)
                snprintf(piece, sizeof piece, "%s", s);
            else
                snprintf(piece, sizeof piece, "%.*s", (int)(q - p) + (*q != '\0'), p);
            p = *q ? q + 1 : q;
        } else {
            size_t w = strcspn(p, "%");
            snprintf(piece, sizeof piece, "%.*s", (int)(w < 256 ? w : 256), p);
            p += w < 256 ? w : 256;
        }
        size_t pl = strlen(piece);
        if (n + pl + 1 > cap) {
            cap = 2 * (n + pl + 1);
            out = sl_xrealloc(out, cap);
        }
        memcpy(out + n, piece, pl + 1);
        n += pl;
    }
    out[n] = '\0';
    return own(lc, out);
}

/* A limit field of j's spec (as the user gave it: "2Gi", 1.5) in its
 * base unit (bytes, milli-CPUs) when above floor, the request it limits;
 * else 0 (absent: the agent's default from the request). */
static int64_t spec_limit(const ctl_job_t *j, sl_jobspec_id_t id, int64_t floor) {
    json_t *v = json_object_get(j->spec, sl_jobspec_fields[id].name);
    int64_t n = 0;
    char err[160];
    if (v == NULL || sl_jobspec_check(&sl_jobspec_fields[id], v, &n, err, sizeof err) != 0)
        return 0;
    return n > floor ? n : 0;
}

static const char *spec_str(const ctl_job_t *j, const char *key) {
    return json_string_value(json_object_get(j->spec, key));
}

/* SLURM_CLUSTER_NAME: Sluice has one cluster a controller. */
#define SLURM_CLUSTER "sluice"

static const char *req_str(const ctl_job_t *j, const char *key) {
    return json_string_value(json_object_get(json_object_get(j->spec, "slurm"), key));
}

/* The environment: the spec's variables less those Slurm's replace, then
 * Slurm's (slurmenv.h, from the placement: names[k] is task k's node),
 * then the script. */
static void batch_env(ctl_launch_cmd_t *lc, const task_ctx_t *t, const char *const *names) {
    const ctl_job_t *j = t->j;
    int64_t cpu_milli = j->core.task.cpu_milli;
    uint32_t *gpus = sl_xmalloc((size_t)t->ntasks * sizeof *gpus);
    for (int32_t k = 0; k < t->ntasks; k++)
        gpus[k] = k < j->ntasks ? j->tasks[k].gpu_mask : 0;
    sl_array_spec_t as = {0};
    const char *atext = spec_str(j, "array");
    char aerr[200];
    if (!j->array_id || !atext || sl_array_parse(atext, SL_ARRAY_SIZE_CEILING, &as, aerr, sizeof aerr))
        as = (sl_array_spec_t){0};
    sl_slurmenv_alloc_t a = {
        .job_id = j->id, .job_name = t->name, .user = t->user, .account = spec_str(j, "tenant"),
        .partition = spec_str(j, "pool"), .qos = req_str(j, "qos"), .cluster = SLURM_CLUSTER,
        .submit_host = req_str(j, "submit_host"), .submit_dir = spec_str(j, "submit_dir"),
        .ntasks = t->ntasks, .task_node = names, .task_gpus = gpus,
        .ntasks_unasked = ctl_job_is_allocation(j) && json_object_get(j->spec, "slurm") &&
                          !req_str(j, "ntasks"),
        .cpus_per_task = cpu_milli > 0 ? (cpu_milli + 999) / 1000 : 0,
        .ntasks_per_node = req_str(j, "ntasks_per_node"), .mem_per_node = req_str(j, "mem_per_node"),
        .mem_per_cpu = req_str(j, "mem_per_cpu"), .gpus_per_node = req_str(j, "gpus_per_node"),
        .gpus_per_task = req_str(j, "gpus_per_task"), .gpus = req_str(j, "gpus"),
        .array_job_id = j->array_id, .array_index = j->array_index, .array_idx = as.idx,
        .array_n = as.n};
    sl_slurmenv_t se = {0};
    sl_slurmenv_alloc(&a, t->task, &se);
    sl_free(gpus);
    sl_array_spec_fini(&as);
    const struct { const char *k; const char *v; } own_vars[] = {
        {"SLUICE_ARRAY_JOB_ID", j->array_id ? own_printf(lc, "%llu", (unsigned long long)j->array_id) : NULL},
        {"SLUICE_ARRAY_TASK_ID", j->array_id ? own_printf(lc, "%d", j->array_index) : NULL},
        {CTL_BATCH_SCRIPT_ENV, spec_str(j, "script")},
    };
    size_t nown = sizeof own_vars / sizeof own_vars[0];
    json_t *env = json_object_get(j->spec, "env");
    lc->env = sl_xmalloc((json_object_size(env) + se.n + nown) * sizeof *lc->env);
    const char *key;
    json_t *v;
    json_object_foreach(env, key, v) {
        bool replaced = sl_slurmenv_get(&se, key) != NULL;
        for (size_t s = 0; s < nown && !replaced; s++)
            replaced = strcmp(own_vars[s].k, key) == 0;
        if (!replaced)
            lc->env[lc->nenv++] = (sl_proto_kv_t){key, json_string_value(v)};
    }
    for (size_t s = 0; s < se.n; s++)
        lc->env[lc->nenv++] = (sl_proto_kv_t){se.v[s].key, own_printf(lc, "%s", se.v[s].value)};
    for (size_t s = 0; s < nown; s++)
        if (own_vars[s].v)
            lc->env[lc->nenv++] = (sl_proto_kv_t){own_vars[s].k, own_printf(lc, "%s", own_vars[s].v)};
    sl_slurmenv_fini(&se);
}

/* Task i of j's batch runner, with its job's ntasks tasks on the nodes
 * called names[0..ntasks). */
static void batch_cmd(ctl_t *c, const ctl_job_t *j, int32_t i, int32_t ntasks,
                      const char *const *names, ctl_launch_cmd_t *lc) {
    /* This task's place among the job's nodes (sorted by name), for the
     * patterns; the variables are slurmenv's. */
    const char *mine = names[i];
    int32_t node_id = 0, local = 0;
    for (int32_t k = 0; k < ntasks; k++) {
        bool first = true;
        for (int32_t m = 0; m < k && first; m++)
            first = strcmp(names[m], names[k]) != 0;
        local += k < i && strcmp(names[k], mine) == 0;
        if (first)
            node_id += strcmp(names[k], mine) < 0;
    }
    const char *group;
    task_ctx_t t = {.j = j, .task = i, .ntasks = ntasks, .local = local,
                    .name = spec_str(j, "name"), .node = mine, .node_id = node_id,
                    .user = ctl_config_task_user(&c->cfg, spec_str(j, "tenant"), &group)};
    if (t.name == NULL)
        t.name = "";
    if (t.user == NULL)
        t.user = SL_PROTO_DEFAULT_USER;

    json_t *cmd = json_object_get(j->spec, "command");
    size_t nargs = json_array_size(cmd);
    lc->argv = sl_xmalloc((nargs + 7) * sizeof *lc->argv);
    lc->argv[lc->argc++] = "/bin/sh";
    lc->argv[lc->argc++] = "-c";
    lc->argv[lc->argc++] = runner;
    lc->argv[lc->argc++] = nargs ? json_string_value(json_array_get(cmd, 0)) : "script";
    const char *chdir = spec_str(j, "chdir"), *out = spec_str(j, "output"),
               *err = spec_str(j, "error");
    lc->argv[lc->argc++] = chdir ? chdir : "";
    lc->argv[lc->argc++] = out ? expand(lc, out, &t) : "";
    lc->argv[lc->argc++] = err ? expand(lc, err, &t) : "";
    for (size_t k = 1; k < nargs; k++)
        lc->argv[lc->argc++] = json_string_value(json_array_get(cmd, k));
    batch_env(lc, &t, names);
    /* --open-mode: the runner truncates the files first, or appends. */
    const char *mode = spec_str(j, "open_mode");
    if (mode) {
        lc->env = sl_xrealloc(lc->env, (lc->nenv + 1) * sizeof *lc->env);
        lc->env[lc->nenv++] = (sl_proto_kv_t){"SLUICE_OPEN_MODE", mode};
    }
}

/* Sets key to value (copied) in lc's environment, replacing it if set. */
static void env_put(ctl_launch_cmd_t *lc, const char *key, const char *value) {
    for (size_t k = 0; k < lc->nenv; k++)
        if (strcmp(lc->env[k].key, key) == 0) {
            lc->env[k].value = own_printf(lc, "%s", value);
            return;
        }
    lc->env = sl_xrealloc(lc->env, (lc->nenv + 1) * sizeof *lc->env);
    lc->env[lc->nenv++] = (sl_proto_kv_t){key, own_printf(lc, "%s", value)};
}

static void env_drop(ctl_launch_cmd_t *lc, const char *key) {
    for (size_t k = 0; k < lc->nenv; k++)
        if (strcmp(lc->env[k].key, key) == 0)
            lc->env[k] = lc->env[--lc->nenv];
}

/*
 * An allocation's task (alloc.h): every task runs sluice-stepd, which
 * holds the task's resources for job steps; the batch task's runs the
 * command (a script's runner, or the command itself) as its child. A
 * command that is sluice-stepd alone (salloc's, srun's own allocation)
 * asks for no batch step. Every task gets Slurm's variables (the batch
 * step as SLURM_PROCID 0, as sbatch's), the step token and the API's URL.
 */
static void alloc_cmd(ctl_t *c, const ctl_job_t *j, int32_t i, int32_t ntasks,
                      const char *const *names, ctl_launch_cmd_t *lc) {
    int32_t b = ctl_alloc_batch_task(c, j);
    json_t *cmd = json_object_get(j->spec, "command");
    bool script = json_object_get(j->spec, "script") != NULL;
    bool holder_only = !script && json_array_size(cmd) == 1 &&
                       strcmp(json_string_value(json_array_get(cmd, 0)), "sluice-stepd") == 0;
    batch_cmd(c, j, i, ntasks, names, lc);
    if (!script) { /* the command itself, not a runner */
        size_t n = json_array_size(cmd);
        lc->argv = sl_xrealloc(lc->argv, (n + 1) * sizeof *lc->argv);
        lc->argc = 0;
        for (size_t k = 0; k < n; k++)
            lc->argv[lc->argc++] = json_string_value(json_array_get(cmd, k));
    }
    if (i != b || holder_only) {
        lc->argc = 0;
        env_drop(lc, CTL_BATCH_SCRIPT_ENV);
    } else {
        env_put(lc, "SLURM_PROCID", "0");
        env_put(lc, "SLURM_LOCALID", "0");
    }
    lc->argv = sl_xrealloc(lc->argv, (lc->argc + 3) * sizeof *lc->argv);
    memmove(lc->argv + (lc->argc ? 2 : 1), lc->argv, lc->argc * sizeof *lc->argv);
    lc->argv[0] = "sluice-stepd";
    if (lc->argc) {
        lc->argv[1] = "--";
        lc->argc += 2;
    } else {
        lc->argc = 1;
    }
    /* Slurm's tasks per node ("2(x3),1", nodes in SLURM_JOB_NODELIST
     * order), which launchers that start one daemon a node read (OpenMPI). */
    char tpn[1024];
    ctl_alloc_tasks_per_node(c, j, tpn, sizeof tpn);
    env_put(lc, "SLURM_TASKS_PER_NODE", tpn);
    char tok[CTL_STEP_TOKEN_LEN + 1], url[300];
    if (ctl_step_token(c, j, tok, sizeof tok) == 0)
        env_put(lc, CTL_STEP_TOKEN_ENV, tok);
    env_put(lc, CTL_STEP_SERVER_ENV, ctl_step_server(c, url, sizeof url));
}

/* Task i's argv and env with its job's ntasks tasks on the nodes called
 * names[0..ntasks) (ctl_launch_cmd_init). */
static void launch_cmd(ctl_t *c, const ctl_job_t *j, int32_t i, int32_t ntasks,
                       const char *const *names, ctl_launch_cmd_t *lc) {
    *lc = (ctl_launch_cmd_t){0};
    if (ctl_job_is_allocation(j)) {
        alloc_cmd(c, j, i, ntasks, names, lc);
        return;
    }
    if (json_object_get(j->spec, "script") != NULL) {
        batch_cmd(c, j, i, ntasks, names, lc);
        return;
    }
    json_t *cmd = json_object_get(j->spec, "command"), *env = json_object_get(j->spec, "env");
    size_t argc = json_array_size(cmd), nenv = json_object_size(env);
    if (json_is_array(cmd)) {
        lc->argv = sl_xmalloc((argc + 1) * sizeof *lc->argv);
        for (size_t k = 0; k < argc; k++)
            lc->argv[k] = json_string_value(json_array_get(cmd, k));
        lc->argc = argc;
    }
    lc->env = sl_xmalloc((nenv + 5) * sizeof *lc->env);
    const char *key;
    json_t *v;
    json_object_foreach(env, key, v)
        lc->env[lc->nenv++] = (sl_proto_kv_t){key, json_string_value(v)};
    /* An array's element learns its array and index as sbatch's tasks do
     * (docs/arrays.md), unless its own env names the variable. */
    /* JOB_COMPLETION_INDEX is the index as Kubernetes' Indexed Jobs tell
     * it (docs/jobspec.md). */
    static const char *const arr_keys[5] = {"SLUICE_ARRAY_JOB_ID", "SLUICE_ARRAY_TASK_ID",
                                            "SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID",
                                            "JOB_COMPLETION_INDEX"};
    for (int k = 0; k < 5 && j->array_id != 0; k++)
        if (json_object_get(env, arr_keys[k]) == NULL)
            lc->env[lc->nenv++] = (sl_proto_kv_t){
                arr_keys[k], k == 0 || k == 2
                                 ? own_printf(lc, "%llu", (unsigned long long)j->array_id)
                                 : own_printf(lc, "%d", j->array_index)};
}

void ctl_launch_cmd_init(ctl_t *c, const ctl_job_t *j, int32_t i, ctl_launch_cmd_t *lc) {
    const char **names = sl_xmalloc((size_t)(j->ntasks ? j->ntasks : 1) * sizeof *names);
    for (int32_t k = 0; k < j->ntasks; k++)
        names[k] = ctl_node_name(c, j->tasks[k].node);
    launch_cmd(c, j, i, j->ntasks, names, lc);
    sl_free(names);
}

void ctl_launch_cmd_fini(ctl_launch_cmd_t *lc) {
    for (size_t k = 0; k < lc->nowned; k++)
        sl_free(lc->owned[k]);
    sl_free(lc->owned);
    sl_free(lc->argv);
    sl_free(lc->env);
    sl_free(lc->mounts);
    sl_free(lc->image_args);
    sl_free(lc->volumes);
    *lc = (ctl_launch_cmd_t){0};
}

/* ---- the launch message ---- */

/* What a launch's message takes from its task's placement. */
typedef struct where {
    int32_t task;           /* its rank */
    int32_t ntasks;         /* the job's placed tasks: world_size */
    int32_t local_rank;
    const int32_t *gpus;
    size_t ngpus;
    int32_t gpu_milli;
    const char *master_addr;
    int64_t attempt;        /* < 0: none */
    int64_t cpu_milli, mem_bytes; /* what the task holds (domain/whole.h) */
} where_t;

/* The launch of the task at w, with lc's argv and env, into *m (which
 * points into j's spec, c's config, lc and w). */
/* An image job's container options (the normalised spec's mounts, a list,
 * and shm_size, a quantity's text) into m's launch; lc keeps the list. */
static void fill_container(const ctl_job_t *j, ctl_launch_cmd_t *lc, sl_proto_launch_t *l) {
    json_t *ms = json_object_get(j->spec, "mounts"), *x;
    size_t i;
    const char *shm = spec_str(j, "shm_size");
    if (json_array_size(ms) > 0) {
        lc->mounts = sl_xmalloc(json_array_size(ms) * sizeof *lc->mounts);
        json_array_foreach(ms, i, x) lc->mounts[lc->nmounts++] = json_string_value(x);
    }
    l->mounts = lc->mounts;
    l->nmounts = lc->nmounts;
    json_t *as = json_object_get(j->spec, "args");
    if (json_array_size(as) > 0) {
        lc->image_args = sl_xmalloc(json_array_size(as) * sizeof *lc->image_args);
        json_array_foreach(as, i, x) lc->image_args[lc->nimage_args++] = json_string_value(x);
    }
    l->image_args = lc->image_args;
    l->nimage_args = lc->nimage_args;
    char err[128];
    if (shm && sl_qty_parse(shm, SL_QTY_MEM, &l->shm_size, err, sizeof err) < 0)
        l->shm_size = 0;
    l->workdir = spec_str(j, "workdir");
    /* A pod's containers (pod.h): the first's image makes it an image task. */
    json_t *cs = json_object_get(j->spec, "containers");
    if (json_array_size(cs) > 0) {
        l->containers = cs;
        l->image = json_string_value(json_object_get(json_array_get(cs, 0), "image"));
    }
}

/* The job's volumes resolved under the config as it is now (the
 * submission was checked against it then): a volume the config no longer
 * allows carries the reason, and the agent fails the task with it. */
static void fill_volumes(ctl_t *c, const ctl_job_t *j, ctl_launch_cmd_t *lc, int64_t mem_bytes,
                         sl_proto_launch_t *l) {
    json_t *vols = json_object_get(j->spec, "volumes");
    size_t n = json_array_size(vols);
    if (n == 0)
        return;
    char err[1024];
    char **subs = sl_xcalloc(n, sizeof *subs);
    lc->volumes = sl_xcalloc(n, sizeof *lc->volumes);
    lc->nvolumes = n;
    if (ctl_volcfg_resolve(&c->site.volumes, vols, mem_bytes, lc->volumes, subs, err,
                           sizeof err) < 0)
        lc->volumes[0].error = own_printf(lc, "%s", err);
    for (size_t i = 0; i < n; i++)
        if (subs[i])
            own(lc, subs[i]);
    sl_free(subs);
    l->volumes = lc->volumes;
    l->nvolumes = n;
}

static void fill_launch(ctl_t *c, const ctl_job_t *j, ctl_launch_cmd_t *lc, const where_t *w,
                        sl_proto_msg_t *m) {
    /* The Unix identity the task runs as: the tenant's mapping or the
     * configured default, resolved by the agent on its node. */
    const char *tenant = spec_str(j, "tenant"), *group = NULL;
    const char *user = ctl_config_task_user(&c->cfg, tenant, &group);
    *m = (sl_proto_msg_t){
        .type = SL_PROTO_LAUNCH,
        .job = j->id,
        .task = w->task,
        .has_attempt = w->attempt >= 0,
        .attempt = w->attempt >= 0 ? (uint32_t)w->attempt : 0,
        .u.launch = {
            .name = spec_str(j, "name"),
            .tenant = tenant,
            .argv = lc->argv,
            .argc = lc->argc,
            .image = spec_str(j, "image"),
            .env = lc->env,
            .nenv = lc->nenv,
            .gpus = w->gpus,
            .ngpus = w->ngpus,
            .gpu_milli = w->ngpus ? w->gpu_milli : 0,
            .gpu_memory = j->core.task.gpus ? 0 : j->core.task.gpu_mem_bytes,
            .cpu_milli = w->cpu_milli,
            .mem_bytes = w->mem_bytes,
            .rank = w->task,
            .world_size = w->ntasks,
            .local_rank = w->local_rank,
            .master_addr = w->master_addr,
            .master_port = CTL_MASTER_PORT_BASE + (int32_t)(j->id % 1000),
            .time_limit = j->core.time_limit_us / 1000000,
            .user = user,
            .group = group,
            .allow_root = c->cfg.allow_root,
            .on_node_failure = j->requeue_on_node_failure ? "requeue" : "fail",
            /* Always sent, so that the config, not each agent's default,
             * decides which tasks the kernel's OOM killer takes first. */
            .has_oom_score_adj = true,
            .oom_score_adj = ctl_config_oom_score_adj(&c->cfg, j->core.priority),
            .mem_limit = spec_limit(j, SL_JS_MEMORY_LIMIT, w->mem_bytes),
            .cpu_limit_milli = spec_limit(j, SL_JS_CPU_LIMIT, w->cpu_milli),
        }};
    fill_container(j, lc, &m->u.launch);
    fill_volumes(c, j, lc, w->mem_bytes, &m->u.launch);
}

void ctl_launch_msg_init(ctl_t *c, const ctl_job_t *j, int32_t i, ctl_launch_cmd_t *lc,
                         int32_t gpus[SL_MAX_GPUS_PER_NODE], sl_proto_msg_t *m) {
    const ctl_task_t *t = &j->tasks[i];
    ctl_node_t *mn = ctl_node_get(c, j->master_node);
    where_t w = {.task = i, .ntasks = j->ntasks, .gpus = gpus, .gpu_milli = t->gpu_milli,
                 .master_addr = mn && mn->addr[0] ? mn->addr : "127.0.0.1",
                 .attempt = t->attempt};
    for (int32_t k = 0; k < i; k++)
        w.local_rank += j->tasks[k].node == t->node;
    ctl_task_res_t res;
    ctl_task_res(c, j, i, &res);
    w.cpu_milli = res.cpu_milli;
    w.mem_bytes = res.mem_bytes;
    if (res.gpu_mask != t->gpu_mask)
        w.gpu_milli = SL_GPU_MILLI; /* a whole node's GPUs, each entirely */
    for (int g = 0; g < SL_MAX_GPUS_PER_NODE; g++)
        if (res.gpu_mask & (1u << g))
            gpus[w.ngpus++] = g;
    ctl_launch_cmd_init(c, j, i, lc);
    fill_launch(c, j, lc, &w, m);
}

/* The bytes the spec's field key takes as text (strings, array items, an
 * object's keys and values): what a launch copies of it. */
static size_t spec_bytes(const ctl_job_t *j, const char *key) {
    json_t *v = json_object_get(j->spec, key), *x;
    const char *k;
    size_t n = 0, i;
    if (json_is_string(v))
        return json_string_length(v);
    json_array_foreach(v, i, x) n += json_string_length(x) + 1;
    json_object_foreach(v, k, x) n += strlen(k) + json_string_length(x) + 2;
    return n;
}

int ctl_launch_check_size(ctl_t *c, const ctl_job_t *j, char *err, size_t errlen,
                          const char **field) {
    json_int_t nt = json_integer_value(json_object_get(j->spec, "tasks"));
    int32_t n = nt >= 1 && nt <= SL_MAX_TASKS ? (int32_t)nt : 1;
    /* The placement's part, at its largest: node names as long as the
     * longest registered (at least 16 characters) on as many nodes as the
     * job may span, none folding into a range; every GPU; the longest
     * numbers; an array element's variables. */
    size_t len = 16, nnodes = sl_cluster_node_count(c->cl);
    for (size_t k = 0; k < nnodes; k++)
        if (strlen(ctl_node_name(c, (int32_t)k)) > len)
            len = strlen(ctl_node_name(c, (int32_t)k));
    int32_t d = (size_t)n < nnodes ? n : nnodes > 0 ? (int32_t)nnodes : 1;
    char(*made)[SL_NAME_MAX] = sl_xmalloc((size_t)d * sizeof *made);
    const char **names = sl_xmalloc((size_t)n * sizeof *names);
    if (len > SL_NAME_MAX - 1)
        len = SL_NAME_MAX - 1;
    for (int32_t k = 0; k < d; k++) {
        int w = snprintf(made[k], SL_NAME_MAX, "%05d", (int)(k % 100000));
        memset(made[k] + w, 'x', len - (size_t)w);
        made[k][len] = '\0';
    }
    for (int32_t k = 0; k < n; k++)
        names[k] = made[k % d];
    ctl_job_t w = *j; /* a copy with the widest values; it owns nothing */
    w.id = w.array_id = (uint64_t)INT64_MAX;
    w.array_index = INT32_MAX;
    w.requeue_on_node_failure = true;
    /* 19 digits, as INT64_MAX, with room for the arithmetic on them. */
    w.core.task.cpu_milli = w.core.task.mem_bytes = w.core.task.gpu_mem_bytes = INT64_MAX / 2;
    w.core.task.gpus = 0;
    w.core.time_limit_us = INT64_MAX;
    int32_t gpus[SL_MAX_GPUS_PER_NODE];
    for (int g = 0; g < SL_MAX_GPUS_PER_NODE; g++)
        gpus[g] = SL_PROTO_MAX_GPU_INDEX;
    where_t at = {.task = INT32_MAX, .ntasks = INT32_MAX, .local_rank = INT32_MAX, .gpus = gpus,
                  .cpu_milli = INT64_MAX / 2, .mem_bytes = INT64_MAX / 2,
                  .ngpus = SL_MAX_GPUS_PER_NODE, .gpu_milli = 1000, .attempt = INT32_MAX,
                  .master_addr = "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"};
    ctl_launch_cmd_t lc;
    sl_proto_msg_t m;
    size_t need = 0;
    launch_cmd(c, &w, n - 1, n, names, &lc);
    fill_launch(c, &w, &lc, &at, &m);
    int rc = sl_proto_encode(&m, NULL, 0, &need);
    ctl_launch_cmd_fini(&lc);
    sl_free(names);
    sl_free(made);
    if (rc == 0 && need <= (size_t)SL_PROTO_MAX_LINE + 1) /* need counts the newline */
        return 0;
    /* The field that holds most of it. */
    static const char *const keys[] = {"script", "env", "command"};
    *field = "env";
    for (size_t k = 0; k < 3; k++)
        if (spec_bytes(j, keys[k]) > spec_bytes(j, *field))
            *field = keys[k];
    snprintf(err, errlen,
             "a launch of this job would be up to %zu bytes, over the agent protocol's limit of "
             "%d bytes per message (docs/protocol.md); its %s alone is %zu bytes: make it smaller",
             need, SL_PROTO_MAX_LINE, *field, spec_bytes(j, *field));
    return SL_EOVERFLOW;
}
