/*
 * batchcmd.c - `sluice sbatch`: a Slurm batch script with sbatch's own
 * command line (sbatch.c reads both), submitted as one job.
 *
 * As sbatch: flags, then the script's path (or --wrap CMD, or the script
 * on stdin when neither is given), then the script's arguments; it prints
 * "Submitted batch job N", or N alone with --parsable.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char usage[] =
    "usage: sluice sbatch [SBATCH OPTIONS] SCRIPT [ARG...]\n"
    "       sluice sbatch [SBATCH OPTIONS] --wrap COMMAND\n"
    "Run `sluice help sbatch` for more; docs/slurm.md maps every directive.\n";

int cli_cmd_sbatch(cli_t *c) {
    cli_sbatch_t *sb = cli_sbatch_new(false);
    json_t *job = NULL, *out = NULL;
    char *text = NULL;
    const char *path = "sbatch";
    int at, rc = cli_sbatch_args(sb, c->ncommand, c->command, &at);
    if (rc == CLI_OK)
        rc = cli_sbatch_env(sb);
    if (rc != CLI_OK)
        goto out;
    if (cli_sbatch_flag(sb, "help")) {
        fputs(usage, stdout);
        goto out;
    }
    const char *wrap = cli_sbatch_value(sb, "wrap");
    if (wrap) {
        if (at < c->ncommand) {
            rc = cli_usage_error(c, "--wrap and a script (\"%s\") exclude each other",
                                 c->command[at]);
            goto out;
        }
        /* The script sbatch itself writes for --wrap. */
        if (asprintf(&text, "#!/bin/sh\n# This script was created by sbatch --wrap.\n\n%s\n",
                     wrap) < 0)
            abort();
    } else if (at < c->ncommand) {
        path = c->command[at++];
        if ((rc = cli_sbatch_read(path, &text)) != CLI_OK)
            goto out;
    } else if (!isatty(STDIN_FILENO)) {
        if ((rc = cli_sbatch_read("-", &text)) != CLI_OK)
            goto out;
    } else {
        fputs(usage, stderr);
        rc = CLI_EUSAGE;
        goto out;
    }
    if (strncmp(text, "#!", 2) != 0) {
        fprintf(stderr, "sluice: %s: a batch script must begin with #! (e.g. #!/bin/bash), as "
                "sbatch asks\n", path);
        rc = CLI_EUSAGE;
        goto out;
    }
    rc = CLI_EUSAGE;
    if (cli_sbatch_script(sb, path, text) != CLI_OK)
        goto out;
    if ((job = cli_sbatch_spec(sb, path, text, c->command + at, c->ncommand - at)) == NULL)
        goto out;
    cli_sbatch_slurm_request(sb, job);
    /* sbatch's job is an allocation: the script runs once, srun starts steps.
     * A script in a container (pyxis' --container-image) runs in each
     * task's container instead: the step daemon is the node's, not the
     * image's (docs/containers.md). */
    if (!json_object_get(job, "image"))
        json_object_set_new(job, "allocation", json_true());
    if (!json_object_get(job, "tenant") && c->tenant)
        json_object_set_new(job, "tenant", json_string(c->tenant));
    if (cli_sbatch_flag(sb, "dry-run")) {
        cli_print_json(job);
        rc = CLI_OK;
        goto out;
    }
    if ((rc = cli_call(c, "POST", "/v1/jobs", job, &out)) != CLI_OK)
        goto out;
    long long id = (long long)json_integer_value(json_object_get(out, "id"));
    if (c->json)
        cli_print_json(out);
    else if (cli_sbatch_flag(sb, "parsable"))
        printf("%lld\n", id);
    else if (!cli_sbatch_flag(sb, "quiet"))
        printf("Submitted batch job %lld\n", id);
out:
    free(text);
    json_decref(job);
    json_decref(out);
    cli_sbatch_free(sb);
    return rc;
}
