/*
 * osutil.h - small operating-system helpers the programs share (the agent
 * and the CLI), never the core.
 */
#ifndef SLUICE_COMMON_OSUTIL_H
#define SLUICE_COMMON_OSUTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Creates path and any missing parents, mode 0755 (mkdir -p); a directory
 * that already exists is fine. Returns 0, or -1 with errno set by the
 * mkdir that failed. A path longer than PATH_MAX is cut to it. */
int sl_fs_mkdirs(const char *path);

/* Reads /proc/<pid>/<file> (e.g. "stat", "cmdline") into buf[len] with a
 * NUL after the bytes read, at most len - 1 of them (one read). Returns how
 * many bytes it read, or 0 if the process is gone or the file is empty or
 * unreadable (buf is then unspecified). len must be at least 1. */
size_t sl_proc_read(pid_t pid, const char *file, char *buf, size_t len);

/* The start time of pid in clock ticks since boot (field 22 of
 * /proc/PID/stat), which tells a process from a later one that reuses its
 * pid; 0 if the process is gone or a zombie (it has ended and its parent
 * has not reaped it yet). Can't fail otherwise. */
unsigned long long sl_proc_start_time(pid_t pid);

/* Raises this process's open-file limit (RLIMIT_NOFILE) to at least want
 * descriptors: the soft limit up to the hard one, and the hard one too when
 * the process may (root, CAP_SYS_RESOURCE; at most fs.nr_open). Returns the
 * soft limit now in force (INT64_MAX for unlimited), which is below want
 * when it could not be raised that far; the caller says so. Can't fail. */
int64_t sl_nofile_raise(int64_t want);

/* Takes an exclusive flock(2) on fd without waiting (a lock file, or a
 * directory: flock works on any open file). The lock lasts while the open
 * file does, in this process and in none it execs (open fd with
 * O_CLOEXEC), and goes with the process, kill -9 included. Returns 0; or
 * -EWOULDBLOCK when another open file holds it, with *holder its holder's
 * pid from /proc/locks (0 when it cannot be told); or another -errno. */
int sl_flock_take(int fd, pid_t *holder);

/* The short name of process pid (/proc/PID/comm, "sluice-agent") into buf,
 * or "" when it is gone. Can't fail. */
void sl_proc_name(pid_t pid, char *buf, size_t len);

#endif
