/*
 * cinit.c - sluice-init, the first process (PID 1) of every container a
 * Sluice agent starts (docs/containers.md), bound read-only into it at
 * /.sluice-init.
 *
 *     /.sluice-init -- COMMAND [ARG...]
 *
 * PID 1 of a PID namespace gets no signal it has no handler for, so a task
 * run there directly (`sleep`, a Python trainer without a SIGTERM handler)
 * would ignore the SIGTERM of a cancel or a preemption and the time limit
 * would always end in SIGKILL after the grace. As tini and docker's --init
 * do, this process runs COMMAND as its child in a process group of its own,
 * passes every signal runc forwards to it (TERM, INT, HUP, QUIT, USR1, USR2,
 * CONT, ...) on to that group, reaps every orphan the namespace hands it,
 * and exits as COMMAND did: its exit status, or 128 + the signal that
 * killed it (runc then exits the same, and sluice-cstart turns it back into
 * that signal). Should its parent (runc) die, the kernel kills it
 * (PR_SET_PDEATHSIG), which ends the whole namespace.
 *
 * Linked statically: the image needs no libc of its own.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile pid_t child = -1;

static void pass_on(int sig) {
    if (child > 0) kill(-child, sig);
}

int main(int argc, char **argv) {
    int first = 1;
    if (argc > 1 && strcmp(argv[1], "--") == 0) first = 2;
    if (first >= argc) {
        fprintf(stderr, "sluice-init: no command\n");
        return 125;
    }
    pid_t parent = getppid();
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (getppid() != parent) return 137;
    sigset_t all, old;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, &old);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = pass_on;
    sa.sa_flags = SA_RESTART;
    for (int s = 1; s < NSIG; s++)
        if (s != SIGKILL && s != SIGSTOP && s != SIGCHLD && s != SIGTTIN && s != SIGTTOU &&
            s != SIGTSTP)
            sigaction(s, &sa, NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "sluice-init: fork: %s\n", strerror(errno));
        return 125;
    }
    if (pid == 0) {
        setpgid(0, 0);
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        for (int s = 1; s < NSIG; s++)
            if (s != SIGKILL && s != SIGSTOP) sigaction(s, &dfl, NULL);
        sigprocmask(SIG_SETMASK, &old, NULL);
        execvp(argv[first], argv + first);
        fprintf(stderr, "sluice-init: cannot execute %s: %s\n", argv[first], strerror(errno));
        _exit(errno == ENOENT ? 127 : 126);
    }
    setpgid(pid, pid);
    child = pid;
    sigprocmask(SIG_SETMASK, &old, NULL);
    for (;;) {
        int st;
        pid_t w = wait(&st);
        if (w < 0) {
            if (errno == EINTR) continue;
            return 125; /* no children left, yet COMMAND's end was not seen */
        }
        if (w != pid) continue; /* an orphan, reaped */
        /* COMMAND's end; whatever else it left in the namespace dies with
         * this process. */
        if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
        return WEXITSTATUS(st);
    }
}
