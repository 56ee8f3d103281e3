/*
 * lease.h - the node's fence lease (lease.c): the time after which the
 * controller has given up on this node, kept in a file that each task's
 * monitor reads (monitor.h, "Lease"), so that a task is stopped in time
 * even when the agent itself cannot run (stopped, hung, killed).
 *
 * The deadline is the agent's own fence deadline (docs/protocol.md,
 * "Fencing"): the send time of the latest message the controller answered
 * plus node_timeout, on CLOCK_BOOTTIME, which the agent and its monitors
 * share; the connection renews it with every answer (conn.c).
 */
#ifndef SLUICE_AGENT_LEASE_H
#define SLUICE_AGENT_LEASE_H

#include <stddef.h>
#include <stdint.h>

/* The lease file of the agent whose work directory is workdir,
 * WORKDIR/lease, into buf. */
void agent_lease_path(const char *workdir, char *buf, size_t len);

/*
 * Writes the lease at path: deadline_us (CLOCK_BOOTTIME microseconds; 0:
 * none, the controller does not fence) and grace_ms (SIGTERM to SIGKILL),
 * in monitor.h's format, through a temporary file and rename(2), so that a
 * monitor reads the old lease or the new one, never half. When it cannot
 * be written, the file is removed (a monitor then sees no deadline rather
 * than an old one that a new task would be stopped by) and -errno
 * returned; the caller logs it. The file is in the agent's work directory,
 * which no tenant can write.
 */
int agent_lease_write(const char *path, int64_t deadline_us, int64_t grace_ms);

#endif
