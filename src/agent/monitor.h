/*
 * monitor.h - what sluice-agent (spawn.c, task.c, lease.c) and
 * sluice-monitor (monitor/monitor.c, a program of its own) agree on: the
 * monitor's command line, the lease it fences by, and the status file it
 * leaves.
 *
 * Command line (argv[0] is the monitor's path):
 *
 *     sluice-monitor STATUS PID [LEASE]
 *
 * PID is the task, already started and the monitor's child (spawn.c forks
 * the task from the process that then execs the monitor); STATUS is where
 * its exit status is written (WORKDIR/status/JOB.TASK). LEASE, given for a
 * task whose job the controller requeues when its node fails
 * (on_node_failure "requeue"), is the node's lease file (WORKDIR/lease).
 * The monitor's standard descriptors are the task's (stdin /dev/null,
 * stdout and stderr the log), where it writes only a failure to record the
 * status and the line saying it fenced the task.
 *
 * Lease, one line the agent rewrites (temporary file, rename) each time
 * the controller answers it:
 *
 *     DEADLINE_US GRACE_MS
 *
 * DEADLINE_US is a CLOCK_BOOTTIME time in microseconds, the agent's fence
 * deadline (docs/protocol.md, "Fencing": the send time of the latest
 * message the controller answered plus node_timeout); 0, or no file, means
 * none. GRACE_MS is the time from SIGTERM to SIGKILL. Once CLOCK_BOOTTIME
 * passes the deadline the monitor reads there, the controller has given up
 * on the node and will start the job elsewhere, so the monitor stops its
 * task itself, whether or not the agent runs: SIGTERM to the task's
 * process group, SIGKILL GRACE_MS later (the agent, when it runs, does the
 * same at the same time). It reads the file when it starts, then once a
 * second, and at the deadline it last read when that comes sooner.
 *
 * Status file, written once the task has ended (temporary file, fsync,
 * rename, fsync of the directory), one line of JSON:
 *
 *     {"exit_code":7,"signal":0,"end_time":1796094000.123456}
 *
 * exit_code is 128 + signal for a task killed by a signal, as a shell says;
 * "fenced":true is added when the monitor stopped the task because its
 * lease ran out.
 */
#ifndef SLUICE_AGENT_MONITOR_H
#define SLUICE_AGENT_MONITOR_H

/* The monitor's program, found beside sluice-agent. */
#define AGENT_MONITOR_NAME "sluice-monitor"

/* The lease file's name in the agent's work directory. */
#define AGENT_LEASE_NAME "lease"

/* How often a monitor with a lease reads it again (sooner at a deadline), ms. */
#define AGENT_LEASE_POLL_MS 1000

#endif
