/*
 * monitor/monitor.c - sluice-monitor, the small process that runs one task for
 * sluice-agent and records how it ended (monitor.h has the command line,
 * the report and the status file). It plays the part of Slurm's
 * slurmstepd, conmon and containerd-shim: the agent may be restarted (or
 * killed) while its tasks run, and a process that is not the agent's child
 * cannot tell the agent its exit status; the monitor's task is its child,
 * so the status is known here and written where a restarted agent reads it.
 *
 * Life: fork the task; the task's side leads a new session and process
 * group (what the agent signals to stop it), takes the task's user (groups
 * cleared, gid, uid), asks for SIGKILL should the monitor die, sets
 * no_new_privs and execs the command. A close-on-exec pipe tells the
 * monitor whether the exec succeeded; the monitor passes that on to the
 * agent (the agent waits for it, so a bad command is reported failed
 * before anything says started) and closes its report pipe. Then it waits:
 * waitid(WNOWAIT) sees the task end without reaping it, so the task's pid,
 * which is its process group's id, cannot be reused while the monitor
 * sweeps the group with SIGKILL (no stray child of a finished task keeps a
 * GPU, even while no agent runs); then it reaps the task, writes the status
 * file and exits 0.
 *
 * Identity. The monitor keeps the agent's identity (root on a shared
 * node): the status file lives in WORKDIR/status, the agent's own 0700
 * directory, where no tenant can forge or remove another's (or its own)
 * status, and a root monitor cannot be signalled or traced by the task it
 * watches. It takes no input from the task beyond its exit status, reads no
 * file and runs no code of the tenant's. The task's side drops to the
 * tenant's user exactly as spawn.c did before the monitor existed. It is a
 * program of its own, linked with libc only, so the exec that starts it
 * is cheap and it holds almost no memory for the task's lifetime.
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
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <grp.h>
#include <linux/close_range.h>

#include "monitor.h"

extern char **environ;

static const int ignored[] = {SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGPIPE};

static void report(int32_t pid, int32_t step, int32_t err) {
    agent_monitor_report_t r = {.pid = pid, .step = step, .err = err};
    ssize_t n;
    while ((n = write(AGENT_MONITOR_FD, &r, sizeof r)) < 0 && errno == EINTR) {}
    close(AGENT_MONITOR_FD);
}

/* The task's side of the fork: never returns. Failures go to errfd as
 * (step, errno). */
static void task_child(int errfd, pid_t monitor, int change, uid_t uid, gid_t gid, char **cands,
                       char **argv) {
    int32_t fail[2] = {AGENT_STEP_FDS, 0};
    for (size_t i = 0; i < sizeof ignored / sizeof ignored[0]; i++) signal(ignored[i], SIG_DFL);
    if (setsid() < 0) goto fail;
    fail[0] = AGENT_STEP_IDENT;
    /* Groups and gid while still root, uid last. */
    if (change && (setgroups(0, NULL) != 0 || setgid(gid) != 0 || setuid(uid) != 0)) goto fail;
    fail[0] = AGENT_STEP_NNP;
    /* After the identity change, which clears a parent-death signal. The
     * check of getppid closes the race with a monitor that died first. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) goto fail;
    if (getppid() != monitor) _exit(127);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) goto fail;
    /* The report pipe is the monitor's, not the task's; any other
     * descriptor (errfd included) closes on exec. */
    fail[0] = AGENT_STEP_FDS;
    close(AGENT_MONITOR_FD);
    if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) != 0) goto fail;
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    fail[0] = AGENT_STEP_EXEC;
    int err = ENOENT;
    int denied = 0;
    for (size_t i = 0; cands[i]; i++) {
        execve(cands[i], argv, environ);
        /* As execvp: go on to the next directory unless another directory
         * cannot help; EACCES wins if nothing runs. */
        err = errno;
        denied |= err == EACCES;
        if (err != ENOENT && err != ENOTDIR && err != EACCES && err != ENODEV &&
            err != ETIMEDOUT && err != ESTALE) {
            denied = 0;
            break;
        }
    }
    errno = denied ? EACCES : err ? err : ENOEXEC;
fail:
    fail[1] = errno ? errno : EIO;
    while (write(errfd, fail, sizeof fail) < 0 && errno == EINTR) {}
    _exit(127);
}

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

static int parse_id(const char *s, long *out) {
    char *end;
    errno = 0;
    *out = strtol(s, &end, 10);
    return errno == 0 && end != s && *end == '\0' && *out >= 0 ? 0 : -1;
}

int main(int argc, char **argv) {
    long uid, gid, change, ncands;
    if (argc < 8 || parse_id(argv[2], &uid) || parse_id(argv[3], &gid) ||
        parse_id(argv[4], &change) || parse_id(argv[5], &ncands) || ncands < 1 ||
        ncands > argc - 8 || strcmp(argv[6 + ncands], "--") != 0) {
        /* Started by hand, or by an agent of another version. */
        fprintf(stderr, "usage: %s STATUS UID GID CHANGE NCANDS CAND... -- ARGV... "
                "(started by sluice-agent, with descriptor %d open)\n", argv[0], AGENT_MONITOR_FD);
        report(0, AGENT_STEP_ARGS, EINVAL);
        return 2;
    }
    const char *status = argv[1];
    char **cands = argv + 6, **targv = argv + 7 + ncands;
    argv[6 + ncands] = NULL;  /* ends the candidates */

    for (size_t i = 0; i < sizeof ignored / sizeof ignored[0]; i++) signal(ignored[i], SIG_IGN);
    int ep[2];
    if (pipe2(ep, O_CLOEXEC) != 0) {
        report(0, AGENT_STEP_FORK, errno);
        return 127;
    }
    pid_t self = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        report(0, AGENT_STEP_FORK, errno);
        return 127;
    }
    if (pid == 0) {
        close(ep[0]);
        task_child(ep[1], self, change == 1, (uid_t)uid, (gid_t)gid, cands, targv);
    }
    close(ep[1]);
    int32_t fail[2];
    ssize_t n;
    while ((n = read(ep[0], fail, sizeof fail)) < 0 && errno == EINTR) {}
    close(ep[0]);
    if (n > 0) {
        /* The task did not exec: reap it, tell the agent why. */
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {}
        report(0, n == (ssize_t)sizeof fail ? fail[0] : AGENT_STEP_EXEC,
               n == (ssize_t)sizeof fail ? fail[1] : EIO);
        return 127;
    }
    report((int32_t)pid, 0, 0);

    siginfo_t si;
    memset(&si, 0, sizeof si);
    while (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) != 0 && errno == EINTR) {}
    kill(-pid, SIGKILL);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    int exit_code = WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
    int sig = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
    if (write_status(status, exit_code, sig) != 0) {
        /* The log is the one place the task's owner and the operator both
         * read; the agent reports the status unknown. */
        fprintf(stderr, "sluice-monitor: cannot write the exit status (exit code %d) to %s: %s\n",
                exit_code, status, strerror(errno));
        return 1;
    }
    return 0;
}
