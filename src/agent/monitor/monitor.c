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
 * Identity. The monitor keeps the agent's identity (root on a shared
 * node): the status file lives in WORKDIR/status, the agent's own 0700
 * directory, where no tenant can forge or remove another's (or its own)
 * status, and a root monitor cannot be signalled or traced by the task it
 * watches. It takes no input from the task beyond its exit status, reads no
 * file and runs no code of the tenant's; its environment is empty. It is a
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
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "monitor.h"

static const int ignored[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGPIPE};

/* Writes the status file: temporary file, fsync, rename, fsync of the
 * directory, so that a status once written survives a crash of the
 * machine as well as of the agent. Returns 0, or -1 with errno set. */
static int write_status(const char *path, int exit_code, int sig) {
    char tmp[4096], dir[4096], line[128];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int len = snprintf(line, sizeof line, "{\"exit_code\":%d,\"signal\":%d,\"end_time\":%lld.%06ld}\n",
                       exit_code, sig, (long long)ts.tv_sec, ts.tv_nsec / 1000);
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

int main(int argc, char **argv) {
    for (size_t i = 0; i < sizeof ignored / sizeof ignored[0]; i++) signal(ignored[i], SIG_IGN);
    char *end = NULL;
    long pid = argc == 3 ? strtol(argv[2], &end, 10) : 0;
    if (argc != 3 || pid <= 0 || *end != '\0') {
        fprintf(stderr, "usage: %s STATUS PID (started by sluice-agent for its task PID)\n",
                argc > 0 ? argv[0] : "sluice-monitor");
        return 2;
    }
    siginfo_t si;
    memset(&si, 0, sizeof si);
    int rc;
    while ((rc = waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT)) != 0 && errno == EINTR) {}
    if (rc != 0) {
        fprintf(stderr, "sluice-monitor: cannot wait for task %ld: %s\n", pid, strerror(errno));
        return 2;
    }
    kill(-(pid_t)pid, SIGKILL);
    int st = 0;
    while (waitpid((pid_t)pid, &st, 0) < 0 && errno == EINTR) {}
    int exit_code = WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
    int sig = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
    if (write_status(argv[1], exit_code, sig) != 0) {
        /* The log is the one place the task's owner and the operator both
         * read; the agent reports the status unknown. */
        fprintf(stderr, "sluice-monitor: cannot write the exit status (exit code %d) to %s: %s\n",
                exit_code, argv[1], strerror(errno));
        return 1;
    }
    return 0;
}
