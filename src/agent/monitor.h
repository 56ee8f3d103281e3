/*
 * monitor.h - what sluice-agent (spawn.c, task.c) and sluice-monitor
 * (monitor/monitor.c, a program of its own) agree on: the monitor's
 * command line and the status file it leaves.
 *
 * Command line (argv[0] is the monitor's path):
 *
 *     sluice-monitor STATUS PID
 *
 * PID is the task, already started and the monitor's child (spawn.c forks
 * the task from the process that then execs the monitor); STATUS is where
 * its exit status is written (WORKDIR/status/JOB.TASK). The monitor's
 * standard descriptors are the task's (stdin /dev/null, stdout and stderr
 * the log), where it writes only a failure to record the status.
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

/* The monitor's program, found beside sluice-agent. */
#define AGENT_MONITOR_NAME "sluice-monitor"

#endif
