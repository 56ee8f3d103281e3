/*
 * srunopt.h - srun's and salloc's command line as Slurm 22.05 writes it
 * (srunopt.c; docs/slurm.md "srun's options"): options first, then the
 * command. One table of the options Sluice takes; any other is an error
 * naming it.
 */
#ifndef SLUICE_COMMON_SRUNOPT_H
#define SLUICE_COMMON_SRUNOPT_H

#include <stdbool.h>
#include <stddef.h>

typedef struct sl_srun_opts {
    long long ntasks, nodes, per_node, cpus, gpus; /* 0: not given */
    long long time_s;          /* -t, seconds; 0: not given */
    long long jobid;           /* --jobid; 0: not given */
    const char *output, *error, *export_, *name, *pool, *account, *chdir, *nodelist;
    bool label, kill_bad, overlap, quiet, help, pty;
    char **argv;               /* the command (borrowed from the argv given) */
    int argc;
} sl_srun_opts_t;

/*
 * Parses argv[0..argc) (the words after the program's name) into *o:
 * `--opt=V`, `--opt V`, `-nV` and `-n V`, flags without values, up to the
 * first word that is not an option, which begins the command. Returns 0,
 * or SL_EINVAL with err (errlen bytes) naming the option ("--nodes=2-4: a
 * range of nodes is not supported; give one number", "--bogus is not
 * supported (see srun --help)"); prog names the program in that message.
 * Strings in *o are borrowed from argv. O(words).
 */
int sl_srun_opts_parse(const char *prog, int argc, char **argv, sl_srun_opts_t *o, char *err,
                       size_t errlen);

/* Slurm's time text (-t): M, M:S, H:M:S, D-H, D-H:M, D-H:M:S, as seconds
 * into *out. 0, or SL_EINVAL for text that is none of them. */
int sl_srun_time_parse(const char *text, long long *out);

#endif
