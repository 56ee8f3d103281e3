/*
 * batch.h - what one task of a job runs: its argv and environment in the
 * launch message, and for a batch script (`sluice submit script.sh`,
 * docs/slurm.md) the runner that copies the script into the job's
 * directory and Slurm's variables.
 *
 * Everything here is computed by the controller when it launches a task,
 * from the job's spec and its placement, so that the agent and the wire
 * protocol stay as they are: a batch script travels in the launch's
 * environment and a short /bin/sh runner writes it to a file and runs it.
 */
#ifndef SLUICE_CTL_BATCH_H
#define SLUICE_CTL_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "domain/ctl.h"
#include "proto.h"

/* The environment variable that carries a batch script to its runner,
 * which removes it before the script runs. */
#define CTL_BATCH_SCRIPT_ENV "SLUICE_BATCH_SCRIPT"

/* The argv and env of one task's launch. The strings point into the job's
 * spec (valid as long as the job) or into `owned`, which
 * ctl_launch_cmd_fini frees. */
typedef struct ctl_launch_cmd {
    const char **argv;     /* NULL: the job has no command (an image only) */
    size_t argc;
    sl_proto_kv_t *env;    /* keys unique */
    size_t nenv;
    char **owned;
    size_t nowned, owned_cap;
    const char **mounts;   /* an image job's mounts (into the spec), or NULL */
    size_t nmounts;
    const char **image_args; /* its entrypoint's arguments (into the spec), or NULL */
    size_t nimage_args;
    sl_proto_volume_t *volumes; /* the job's volumes resolved (base/volcfg.h), or NULL */
    size_t nvolumes;
} ctl_launch_cmd_t;

/*
 * Fills lc for task i of j (placed: j->tasks[i].node is set). A job
 * without a script gets its spec's command and env as they are (with, for
 * an array's element, its array's id and index unless env names them). A batch
 * script's task gets the runner (/bin/sh -c) with the script's working
 * directory, output and error files (patterns expanded) and the script's
 * arguments, and an env of the spec's variables, then Slurm's (docs/slurm.md:
 * SLURM_JOB_ID, SLURM_PROCID, SLURM_JOB_NODELIST, ...), which win, then the
 * script itself in CTL_BATCH_SCRIPT_ENV. Can't fail (allocation aborts).
 * O(tasks of j + size of the spec).
 */
void ctl_launch_cmd_init(ctl_t *c, const ctl_job_t *j, int32_t i, ctl_launch_cmd_t *lc);
void ctl_launch_cmd_fini(ctl_launch_cmd_t *lc);

/*
 * The launch message of task i of j, placed (j->tasks[i].node set), into
 * *m: argv and env as ctl_launch_cmd_init makes them, into lc (fini it
 * once m is encoded), its GPU indices into gpus, the rest from j's spec
 * and placement and c's config (the Unix user, oom_score_adj); the task's
 * attempt with it. m points into all of these. Can't fail. O(tasks of j +
 * size of the spec).
 */
void ctl_launch_msg_init(ctl_t *c, const ctl_job_t *j, int32_t i, ctl_launch_cmd_t *lc,
                         int32_t gpus[SL_MAX_GPUS_PER_NODE], sl_proto_msg_t *m);

/*
 * Whether every launch of a job submitted as j (validated, not yet
 * queued) fits in one line of the agent protocol (SL_PROTO_MAX_LINE): its
 * launch encoded with the placement's part at its largest (node names as
 * long as the longest registered on as many nodes as it may span, every
 * GPU, the widest numbers, an array's variables). 0, or SL_EOVERFLOW with
 * err saying how large and *field naming the largest of script, env and
 * command. O(size of the spec + tasks of j).
 */
int ctl_launch_check_size(ctl_t *c, const ctl_job_t *j, char *err, size_t errlen,
                          const char **field);


#endif
