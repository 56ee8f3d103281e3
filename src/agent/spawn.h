/*
 * spawn.h - starting one task's process (spawn.c): its Unix identity, its
 * job directory, its command line (with the --launcher template for
 * images), its environment, its log file. No state: the tasks layer above
 * decides when, and keeps what it started.
 */
#ifndef SLUICE_AGENT_SPAWN_H
#define SLUICE_AGENT_SPAWN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cgroup/cgroup.h"
#include "container.h"
#include "proto.h"

typedef struct agent_spawn {
    const char *workdir;            /* the agent's work directory: jobs/ and logs/ under it */
    const char *node;               /* this node's name (messages, SLUICE_NODE) */
    const char *launcher;           /* --launcher template, or NULL */
    /* How images run (container.h); NULL or no runtime: through launcher. */
    const agent_container_config_t *containers;
    const char *monitor;            /* path of sluice-monitor (monitor.h) */
    uint64_t job;
    int32_t task;
    const char *name;               /* the job's NAME on this node (names.h) */
    bool fresh;                     /* the first task of this run of its job here: a job
                                     * directory already there is set aside, not reused */
    const sl_proto_launch_t *launch; /* the decoded launch (borrowed) */
    /* Enforcement (cgroup.h): the task's child writes "0" to each of
     * cgroup->procs[0..nprocs) (its cgroup's cgroup.procs, one per
     * hierarchy; cgroup NULL: none) and, when set_oom_score_adj, oom_score_adj to
     * /proc/self/oom_score_adj, before it changes identity and execs; a
     * failed write fails the launch (no task runs half-limited). */
    const agent_cgroup_task_t *cgroup;
    bool set_oom_score_adj;
    int oom_score_adj;          /* -1000..1000 */
    /* The node's lease file (lease.h), handed to the monitor, which stops
     * the task once the lease runs out (monitor.h); NULL: the monitor
     * never stops it (a job that is not requeued when its node fails). */
    const char *lease;
} agent_spawn_t;

/*
 * Spawns the task of sp under its monitor (monitor.h): the monitor in a
 * session of its own, as the agent's user; the task in another session and
 * process group, as the launch's user and group when the agent is root,
 * working in WORKDIR/jobs/NAME (0700, the user's: made anew when fresh,
 * an existing one renamed to NAME~N first; else made or reused), stdout
 * and stderr to WORKDIR/logs/NAME/TASK.log (always a new file, 0600, the
 * user's: one left from before is renamed to TASK.log~N), with the
 * scrubbed environment spawn.c describes, in its cgroup and with its
 * oom_score_adj (above). Nothing there follows a link. The monitor writes
 * the task's exit status to WORKDIR/status/NAME.TASK (a stale one is
 * removed first) and
 * exits. Looks the user up (getpwnam: may read files or ask NSS) and blocks
 * until the task and then its monitor have exec'd. Returns 0 with *pid (the task, its process
 * group) and *monitor (the agent's child) set, or -1 with reason (rlen
 * bytes) saying why in words for the job's owner ("user alice-svc does not
 * exist on node n2"; also written to the log when the command could not be
 * executed).
 */
int agent_spawn(const agent_spawn_t *sp, pid_t *pid, pid_t *monitor, char *reason, size_t rlen);

/* The monitor's program: sluice-monitor beside the agent's own binary (as
 * `sluice up` finds sluice-agent beside sluice). Returns a malloc'd path,
 * or NULL (logged) when it is not there or not executable: an agent that
 * cannot watch its tasks refuses to start rather than lose their ends. */
char *agent_spawn_monitor_find(void);

/* Says once at start-up, in the log, who the tasks will run as: as this
 * agent's own user when it is not root, else each as its tenant's user,
 * which must be able to reach WORKDIR/jobs by path (a warning names a
 * directory above it that others cannot search). Can't fail. */
void agent_spawn_identity_notice(const char *workdir);

/*
 * Expands the {placeholders} of one --launcher template word ({image}
 * {workdir} {job} {task} {name} {node} {gpus} {log}). Returns a malloc'd
 * string, or NULL with *bad pointing at the unknown placeholder in word.
 */
char *agent_launcher_expand(const char *word, const char *image, const char *workdir,
                            const char *job, const char *task, const char *name,
                            const char *node, const char *gpus, const char *log,
                            const char **bad);

#endif
