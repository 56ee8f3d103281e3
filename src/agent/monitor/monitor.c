/*
 * monitor/monitor.c - sluice-monitor, the small process that watches one
 * task for sluice-agent and records how it ended (monitor.h has the
 * command line and the status file). It plays the part of Slurm's
 * slurmstepd, conmon and containerd-shim: the agent may be restarted (or
 * killed) while its tasks run, and a process that is not the agent's child
 * cannot tell the agent its exit status; the monitor's task is its child,
 * so the status is known here and written where a restarted agent reads it.
 *
 * Life: the task is already running when the monitor starts. sluice-agent
 * (spawn.c) starts one process that leads a new session, forks the task
 * (which leads a session and process group of its own, takes the tenant's
 * user and asks for SIGKILL should its parent die) and, once the task has
 * exec'd, execs this program: the monitor is the task's parent from the
 * first instruction the task runs, and the agent's launch pays one small
 * exec more than a bare task, with no round trip through the monitor.
 * Then it waits: waitid(WNOWAIT) sees the task end without reaping it, so
 * the task's pid, which is its process group's id, cannot be reused while
 * the monitor sweeps the group with SIGKILL (no stray child of a finished
 * task keeps a GPU, even while no agent runs); then it reaps the task,
 * writes the status file and exits 0.
 *
 * Fencing. Given a lease (monitor.h), the monitor also stops its task when
 * the node's fence deadline passes with no renewal: the agent renews the
 * lease each time the controller answers it, so an agent that is stopped
 * (SIGSTOP), hung or killed renews nothing, and the task is stopped at the
 * time the agent itself would have stopped it, before the controller
 * starts the job's copy elsewhere. SIGCHLD is blocked and waited for with
 * a timeout (sigtimedwait) up to the next time the lease must be read (the
 * deadline last read, or a second on if that is sooner) or the SIGKILL
 * after the grace is due, and sleeps in between: one small read a second
 * per monitor at most.
 *
 * Identity. The monitor keeps the agent's identity (root on a shared
 * node): the status file lives in WORKDIR/status, the agent's own 0700
 * directory, where no tenant can forge or remove another's (or its own)
 * status, and a root monitor cannot be signalled or traced by the task it
 * watches. It takes no input from the task beyond its exit status, reads no
 * file but the agent's lease and runs no code of the tenant's; its
 * environment is empty. It is a
 * program of its own, linked with libc only (statically where possible),
 * so its exec is cheap and it holds almost no memory for the task's
 * lifetime.
 *
 * Signals. The monitor leads a session of its own (spawn.c), so no
 * terminal's signals reach it; it ignores SIGHUP, SIGINT, SIGQUIT, SIGTERM
 * and SIGPIPE so that a broad kill aimed at the agent does not lose a
 * status. A SIGKILL still ends it: the task then gets SIGKILL too (its
 * parent-death signal) and the agent reports the status unknown.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "monitor.h"

static const int ignored[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGPIPE};

/* Writes the status file: temporary file, fsync, rename, fsync of the
 * directory, so that a status once written survives a crash of the
 * machine as well as of the agent. Returns 0, or -1 with errno set. */
static int write_status(const char *path, int exit_code, int sig, int fenced) {
    char tmp[4096], dir[4096], line[160];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int len = snprintf(line, sizeof line,
                       "{\"exit_code\":%d,\"signal\":%d,\"end_time\":%lld.%06ld%s}\n", exit_code,
                       sig, (long long)ts.tv_sec, ts.tv_nsec / 1000, fenced ? ",\"fenced\":true" : "");
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) return -1;
    if (write(fd, line, (size_t)len) != len || fsync(fd) != 0) {
        int e = errno ? errno : EIO;
        close(fd);
        unlink(tmp);
        errno = e;
        return -1;
    }
    close(fd);
    if (rename(tmp, path) != 0) return -1;
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = '\0';
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
            fsync(dfd);
            close(dfd);
        }
    }
    return 0;
}

/* CLOCK_BOOTTIME in microseconds: the lease's clock (monitor.h). */
static int64_t boot_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_BOOTTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Reads the lease: *deadline_us (0: none; also when the file is missing
 * or not two numbers) and *grace_ms. */
static void read_lease(const char *path, int64_t *deadline_us, int64_t *grace_ms) {
    char buf[64];
    *deadline_us = 0;
    *grace_ms = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) return;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return;
    buf[n] = '\0';
    char *end;
    long long d = strtoll(buf, &end, 10);
    long long g = strtoll(end, &end, 10);
    if (*end != '\n' || d < 0 || g < 0) return;
    *deadline_us = d;
    *grace_ms = g;
}

/*
 * Waits until task pid has ended (without reaping it). With a lease,
 * stops the task once the lease's deadline has passed: SIGTERM to its
 * process group, SIGKILL grace later; *fenced says whether it did. 0, or
 * -1 with errno when the task cannot be waited for.
 */
static int watch(pid_t pid, const char *lease, int *fenced) {
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, NULL); /* pending until sigtimedwait takes it */
    int64_t next_read_us = 0, kill_us = 0;
    *fenced = 0;
    for (;;) {
        siginfo_t si;
        memset(&si, 0, sizeof si);
        if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT | WNOHANG) != 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (si.si_pid == pid) return 0;
        int64_t now = boot_us(), wait_us = -1;
        if (lease && !*fenced && now >= next_read_us) {
            int64_t deadline, grace_ms;
            read_lease(lease, &deadline, &grace_ms);
            if (deadline > 0 && now > deadline) {
                fprintf(stderr, "sluice-monitor: sluice-agent has not renewed its fence lease "
                        "for %.1f s past the deadline: the controller has given up on this node; "
                        "stopping the task (SIGTERM, SIGKILL in %lld ms)\n",
                        (double)(now - deadline) / 1e6, (long long)grace_ms);
                *fenced = 1;
                kill(-pid, SIGTERM);
                kill_us = now + grace_ms * 1000;
            } else {
                /* Again at the deadline, or sooner: a lease renewed with a
                 * shorter node_timeout may end before the one read. */
                next_read_us = now + AGENT_LEASE_POLL_MS * 1000;
                if (deadline > 0 && deadline + 1 < next_read_us) next_read_us = deadline + 1;
            }
        }
        if (*fenced && kill_us > 0 && now >= kill_us) {
            kill(-pid, SIGKILL);
            kill_us = 0;
        }
        if (lease && !*fenced) wait_us = next_read_us - now;
        else if (kill_us > 0) wait_us = kill_us - now;
        struct timespec ts = {(time_t)(wait_us / 1000000), (long)(wait_us % 1000000) * 1000};
        sigtimedwait(&chld, NULL, wait_us >= 0 ? &ts : NULL); /* EAGAIN, EINTR: look again */
    }
}

int main(int argc, char **argv) {
    for (size_t i = 0; i < sizeof ignored / sizeof ignored[0]; i++) signal(ignored[i], SIG_IGN);
    char *end = NULL;
    long pid = argc == 3 || argc == 4 ? strtol(argv[2], &end, 10) : 0;
    if ((argc != 3 && argc != 4) || pid <= 0 || *end != '\0') {
        fprintf(stderr, "usage: %s STATUS PID [LEASE] (started by sluice-agent for its task PID)\n",
                argc > 0 ? argv[0] : "sluice-monitor");
        return 2;
    }
    int fenced = 0;
    if (watch((pid_t)pid, argc == 4 ? argv[3] : NULL, &fenced) != 0) {
        fprintf(stderr, "sluice-monitor: cannot wait for task %ld: %s\n", pid, strerror(errno));
        return 2;
    }
    kill(-(pid_t)pid, SIGKILL);
    int st = 0;
    while (waitpid((pid_t)pid, &st, 0) < 0 && errno == EINTR) {}
    int exit_code = WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
    int sig = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
    if (write_status(argv[1], exit_code, sig, fenced) != 0) {
        /* The log is the one place the task's owner and the operator both
         * read; the agent reports the status unknown. */
        fprintf(stderr, "sluice-monitor: cannot write the exit status (exit code %d) to %s: %s\n",
                exit_code, argv[1], strerror(errno));
        return 1;
    }
    return 0;
}
