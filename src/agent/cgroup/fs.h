/*
 * fs.h - reading and writing cgroup file systems (fs.c): the
 * small file operations both cgroup backends make, the mount table, the
 * agent's own cgroup, and device rules. Knows no backend.
 *
 * Each function returns 0 (or a count) on success and -errno on failure,
 * as the system call that failed set it, so a caller can name the file in
 * its message.
 */
#ifndef SLUICE_AGENT_CGROUPFS_H
#define SLUICE_AGENT_CGROUPFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cgroup/cgroup.h"

/* How files are written. */
typedef struct cg_fs {
    agent_cgroup_trace_fn trace;    /* told of every write; NULL */
    void *trace_ud;
    bool fake;          /* a plain directory tree standing in for cgroupfs (tests):
                         * files are created by the write, and appended to */
} cg_fs_t;

/* One device the task may use: type 'c' or 'b', major, minor (-1: any),
 * access a subset of "rwm". */
typedef struct cg_dev_rule {
    char type;
    int64_t major;
    int64_t minor;
    char access[4];
} cg_dev_rule_t;

/* Writes value to dir/file (one write(2), as cgroupfs wants). */
int cg_write(const cg_fs_t *fs, const char *dir, const char *file, const char *value);

/* cg_write of a decimal number, or "max" for a negative one. */
int cg_write_i64(const cg_fs_t *fs, const char *dir, const char *file, int64_t v);

/* Reads dir/file into buf[len] (NUL-terminated). Returns the length, or
 * -errno. */
ssize_t cg_read(const char *dir, const char *file, char *buf, size_t len);

/* Reads a number ("max" reads as -1). 0 or -errno (-EINVAL: not a number). */
int cg_read_i64(const char *dir, const char *file, int64_t *out);

/* Reads the value of `key` in a file of "key value" lines (memory.events,
 * cpu.stat, memory.oom_control). 0, -ENOENT when the key is absent, or
 * -errno. */
int cg_read_key(const char *dir, const char *file, const char *key, int64_t *out);

/* Whether dir/file exists. */
bool cg_exists(const char *dir, const char *file);

/* Opens dir/file for writing (O_CLOEXEC), file being cgroup.procs or, on
 * v1, tasks; the fd or -errno. */
int cg_open_procs(const cg_fs_t *fs, const char *dir, const char *file);

/* The pids listed in dir/cgroup.procs, at most n into pids; the count (may
 * exceed n), or -errno. */
int cg_procs(const char *dir, pid_t *pids, int n);

/* A cgroup name as the agent makes them (cgroup.h) fits here. */
#define CG_NAME_MAX AGENT_CGROUP_NAME_MAX

/* Adds to names[0..n) the subdirectories of dir not already there (names
 * of CG_NAME_MAX bytes or more are skipped), at most cap in all; returns
 * the new count. A missing dir adds nothing. */
int cg_subdirs(const char *dir, char (*names)[CG_NAME_MAX], int n, int cap);

/* SIGKILL to every pid listed in dir/cgroup.procs; how many, or -errno. */
int cg_kill_procs(const char *dir);

/*
 * Finds the mount point of a cgroup hierarchy in /proc/self/mountinfo:
 * fstype "cgroup2" (opt NULL), or "cgroup" with `opt` among its super
 * options (a v1 controller: "memory", "cpu"; co-mounted controllers share
 * one mount). Returns 0 with out set, or -ENOENT.
 */
int cg_find_mount(const char *fstype, const char *opt, char *out, size_t len);

/* The agent's own cgroup path (from /proc/self/cgroup): of the v1
 * controller ctl, or of v2 with ctl NULL. 0 or -ENOENT. */
int cg_self_path(const char *ctl, char *out, size_t len);

/* Whether path is on a cgroup2 file system. */
bool cg_is_cgroup2(const char *path);

/* The rule for the device file at path (its type and major:minor), with
 * access "rwm". 0, -errno from stat, or -ENODEV when it is not a device. */
int cg_dev_rule(const char *path, cg_dev_rule_t *out);

/*
 * Locks the cgroup directory dir, the agent's root (an flock on the
 * directory itself: cgroupfs, like any file system, allows it), so that a
 * second agent given the same root refuses to start instead of removing
 * the first one's cgroups as leftovers. Returns 0 with *fd the lock's
 * descriptor (O_CLOEXEC; closing it, or the process ending, unlocks);
 * -EBUSY when another process holds it, with err naming that process; or
 * -errno of the open, with err naming dir. `what` ("cgroup v1") starts err.
 */
int cg_lock_dir(const char *dir, const char *what, int *fd, char *err, size_t errlen);

/* Formats a rule as the v1 devices.allow line "c 195:0 rwm". */
void cg_dev_format(const cg_dev_rule_t *r, char *buf, size_t len);

#endif
