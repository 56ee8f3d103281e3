/*
 * monitor.h - what sluice-agent and sluice-monitor (monitor/monitor.c, a program
 * of its own) agree on: the monitor's command line, the descriptor it
 * reports on, its report, and the status file it leaves.
 *
 * Command line (argv[0] is the monitor's path):
 *
 *     sluice-monitor STATUS UID GID CHANGE NCANDS CAND... -- ARGV...
 *
 * STATUS is where the exit status is written (WORKDIR/status/JOB.TASK);
 * UID and GID the task's identity, taken when CHANGE is 1 (the agent is
 * root); the NCANDS CANDs are the paths execve tries for the command (as
 * execvp would, resolved by the agent); ARGV the task's argv. The monitor's
 * environment is the task's, its standard descriptors the task's (stdin
 * /dev/null, stdout and stderr the log), its working directory the job
 * directory; descriptor AGENT_MONITOR_FD is the write end of a pipe to the
 * agent, and no other descriptor is open.
 *
 * Report: one agent_monitor_report_t written to AGENT_MONITOR_FD, then the
 * descriptor is closed: pid > 0 once the task has exec'd, or pid 0 with the
 * step that failed and its errno (the monitor then exits 127 and leaves no
 * status file). End of file without a report: the monitor died first.
 *
 * Status file, written once the task has ended (temporary file, fsync,
 * rename, fsync of the directory), one line of JSON:
 *
 *     {"exit_code":7,"signal":0,"end_time":1796094000.123456}
 *
 * exit_code is 128 + signal for a task killed by a signal, as a shell says.
 */
#ifndef SLUICE_AGENT_MONITOR_H
#define SLUICE_AGENT_MONITOR_H

#include <stdint.h>

/* The monitor's program, found beside sluice-agent. */
#define AGENT_MONITOR_NAME "sluice-monitor"

/* The descriptor the monitor reports on. */
#define AGENT_MONITOR_FD 3

/* The step of a start that failed (agent_monitor_report_t.step; spawn.c
 * uses the same numbers for its own steps). */
enum {
    AGENT_STEP_FDS = 1,     /* descriptors, session */
    AGENT_STEP_DIR,         /* entering the job directory */
    AGENT_STEP_MONITOR,     /* executing the monitor */
    AGENT_STEP_FORK,        /* the monitor starting the task */
    AGENT_STEP_IDENT,       /* switching to the task's user */
    AGENT_STEP_NNP,         /* no_new_privs, parent-death signal */
    AGENT_STEP_EXEC,        /* executing the command */
    AGENT_STEP_ARGS         /* a command line the monitor cannot read */
};

typedef struct agent_monitor_report {
    int32_t pid;            /* the task's pid (its session and process group), or 0 */
    int32_t step;           /* AGENT_STEP_*, when pid is 0 */
    int32_t err;            /* errno of that step */
} agent_monitor_report_t;

#endif
