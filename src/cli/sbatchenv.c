/*
 * sbatchenv.c - what sbatch reads from and writes for Slurm's variables
 * (cli.h): its input variables (SBATCH_PARTITION is -p, SBATCH_TIMELIMIT
 * is -t, ...; the table is slurmenv.c's), parsed as options after the
 * command line and before the directives, so that a flag wins over a
 * variable and a variable over a directive, as sbatch 22.05 orders them; and the
 * request's texts the tasks' SLURM_* variables repeat (the spec's slurm
 * object), which the spec's per-task fields no longer say exactly
 * (--mem=8G over 3 tasks a node is 2796202Ki a task; SLURM_MEM_PER_NODE
 * is 8192).
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "slurmenv.h"

static const char *env_get(const char *name, void *ud) {
    (void)ud;
    return getenv(name);
}

int cli_sbatch_env(cli_sbatch_t *sb) {
    char **argv;
    const char **from;
    int n = sl_slurmenv_inputs(sl_slurmenv_sbatch_inputs, env_get, NULL, &argv, &from);
    int rc = CLI_OK;
    for (int i = 0; i < n && rc == CLI_OK; i++) {
        char where[80];
        snprintf(where, sizeof where, "the environment (%s)", from[i]);
        rc = cli_sbatch_opt(sb, argv[i], where);
    }
    free(from);
    sl_slurmenv_argv_free(argv, n);
    return rc;
}

/* Slurm's size text (a number, K, M (default), G or T) in MB, as Slurm
 * writes SLURM_MEM_PER_NODE; -1 when it is none. */
static long long size_mb(const char *s) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || v < 0)
        return -1;
    switch (toupper((unsigned char)*end)) {
    case '\0': return v;
    case 'K': return (v + 1023) / 1024;
    case 'M': return v;
    case 'G': return v <= LLONG_MAX / 1024 ? v * 1024 : -1;
    case 'T': return v <= LLONG_MAX / (1024 * 1024) ? v * 1024 * 1024 : -1;
    default: return -1;
    }
}

void cli_sbatch_slurm_request(const cli_sbatch_t *sb, json_t *spec) {
    json_t *r = json_object();
    static const struct { const char *opt, *key; bool mem; } keep[] = {
        {"ntasks-per-node", "ntasks_per_node", false}, {"mem", "mem_per_node", true},
        {"mem-per-cpu", "mem_per_cpu", true},          {"gpus-per-node", "gpus_per_node", false},
        {"gpus-per-task", "gpus_per_task", false},     {"gpus", "gpus", false},
        {"qos", "qos", false},
    };
    for (size_t k = 0; k < sizeof keep / sizeof keep[0]; k++) {
        const char *v = cli_sbatch_value(sb, keep[k].opt);
        if (v == NULL || v[0] == '\0')
            continue;
        if (keep[k].mem) {
            long long mb = size_mb(v);
            if (mb > 0)
                json_object_set_new(r, keep[k].key, json_sprintf("%lld", mb));
        } else {
            json_object_set_new(r, keep[k].key, json_string(v));
        }
    }
    /* Whether the tasks were asked for: Slurm's SLURM_NTASKS is set only then. */
    const char *n = cli_sbatch_value(sb, "ntasks"), *per = cli_sbatch_value(sb, "ntasks-per-node");
    if ((n && n[0]) || (per && per[0]))
        json_object_set_new(r, "ntasks", json_string(n && n[0] ? n : per));
    char host[256];
    if (gethostname(host, sizeof host) == 0) {
        host[sizeof host - 1] = '\0';
        json_object_set_new(r, "submit_host", json_string(host));
    }
    if (json_object_size(r))
        json_object_set_new(spec, "slurm", r);
    else
        json_decref(r);
}
