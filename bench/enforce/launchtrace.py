#!/usr/bin/python3
"""launchtrace.py - where a task launch's cgroup set-up spends its time in
sluice-agent: the agent (and every process it forks) under strace, N
one-task jobs of `true` submitted one at a time (--gap seconds apart, as
the GPU turnover launches them), then the time of each cgroup system call
summed per kind.

    bench/enforce/launchtrace.py [--n 30] [--gap 0.2] [--task-sleep S]
        [--agent-args "--cgroup v1 --cgroup-root {root}"] [--build DIR] [--no-strace]

strace -f -y -T -e trace=mkdir,rmdir,rename,openat,write,read,close,... on
the agent: -y names each descriptor's file, -T gives the time spent in
each call.  Calls are grouped by what they touch: mkdir/rmdir/rename of a
task's cgroup, the limit files written, the write of "0" into
cgroup.procs (or tasks) by the task's child, which moves it into its
cgroup, the OOM eventfd registration, the reads of the outcome.  Prints
per group: calls per launch and the median / 90th percentile / total time
per launch, in milliseconds, then the same split by where the agent's
loop was: on the critical path (after a launch from the controller or a
SIGCHLD came in, until the agent's next report to the controller went
out: the launch's set-up, the task's child joining, the outcome read) or
off it (after a report went out: the removal of ended tasks' cgroups, the
pool's spares).  strace slows every call it traces, so the absolute
figures are upper bounds; what matters is which group dominates and how
many calls lie on the critical path.  {root} is a cgroup v1 root made for
the run in every hierarchy and removed at the end.  Takes about
n x (gap + 0.1) s plus 10 s.
"""
import argparse
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "e2e"))
CG = "/sys/fs/cgroup"
CTRLS = ("memory", "cpu", "cpuacct", "pids", "devices")

LINE = re.compile(r"^(\d+)\s+(\w+)\((.*)\)\s+=\s+(-?\d+|\?)(?:<[^>]*>)?[^<]*<([\d.]+)>$")
# A call strace split because another process ran meanwhile: its start
# (the arguments) and its end (the result and time) on two lines.
UNFINISHED = re.compile(r"^(\d+)\s+(\w+)\((.*?)\s*<unfinished \.\.\.>$")
RESUMED = re.compile(r"^(\d+)\s+<\.\.\. (\w+) resumed>(.*)$")


def joined(lines):
    """The trace's lines with each split call joined again into one
    "PID call(args) = rc <time>" line."""
    pending = {}
    for line in lines:
        line = line.strip()
        m = UNFINISHED.match(line)
        if m:
            pending[m.group(1)] = (m.group(2), m.group(3))
            continue
        m = RESUMED.match(line)
        if m and m.group(1) in pending:
            call, args = pending.pop(m.group(1))
            rest = m.group(3)
            if rest.startswith(")"):
                yield "%s %s(%s%s" % (m.group(1), call, args, rest)
            else:
                yield "%s %s(%s, %s" % (m.group(1), call, args, rest.lstrip(", "))
            continue
        yield line


def classify(call, args):
    if "/sys/fs/cgroup" not in args:
        return None
    if call == "mkdir":
        return "mkdir task cgroup"
    if call == "rmdir":
        return "rmdir task cgroup"
    if call == "write":
        if "cgroup.procs>" in args or "/tasks>" in args:
            return "write 0 into cgroup.procs/tasks (task's child joins)"
        if "cgroup.event_control>" in args:
            return "OOM eventfd registration"
        return "write limit files"
    if call == "openat":
        return "open cgroup files"
    if call == "read":
        return "read outcome files"
    if call == "close":
        return "close cgroup files"
    return call + " (cgroup)"


def sweep(tmp):
    """Stops what is left of this run: a SIGTERM to strace makes it detach
    and exit, leaving the traced agent running, so every process whose
    command line names this run's directory gets SIGTERM, then SIGKILL
    after 10 s."""
    def left():
        out = []
        for e in os.listdir("/proc"):
            if not e.isdigit() or int(e) == os.getpid():
                continue
            try:
                with open("/proc/%s/cmdline" % e, "rb") as fh:
                    if tmp.encode() in fh.read():
                        out.append(int(e))
            except OSError:
                pass
        return out
    for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        pids = left()
        for pid in pids:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        deadline = time.monotonic() + wait
        while pids and time.monotonic() < deadline:
            time.sleep(0.05)
            pids = [p for p in pids if os.path.exists("/proc/%d" % p)]
        if not pids:
            return


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--n", type=int, default=30)
    ap.add_argument("--gap", type=float, default=0.2)
    ap.add_argument("--task-sleep", type=float, default=0.0,
                    help="each task runs `sleep S` instead of `true` (S > 0), so that it "
                         "outlives the agent's idle-time work after its launch, as the "
                         "turnover's `sleep 0.2` tasks do")
    ap.add_argument("--agent-args", default="--cgroup v1 --cgroup-root {root}")
    ap.add_argument("--build", help="build directory (default: SLUICE_BUILD or build/)")
    ap.add_argument("--no-strace", dest="strace", action="store_false",
                    help="no strace: only the agent's own spawn_us per launch")
    a = ap.parse_args()
    a.n = max(1, min(a.n, 500))
    if not shutil.which("strace"):
        sys.exit("launchtrace: strace is not installed (apt-get install strace)")
    build = os.path.abspath(a.build or os.environ.get("SLUICE_BUILD") or
                            os.path.join(REPO, "build"))
    tmp = tempfile.mkdtemp(prefix="sluice-launchtrace-")
    os.chmod(tmp, 0o755)
    # A build directory whose sluice-agent is the real one under strace.
    wrap = os.path.join(tmp, "bin")
    os.mkdir(wrap)
    trace = os.path.join(tmp, "agent.strace")
    for b in ("sluiced", "sluice", "sluice-monitor"):
        if os.path.exists(os.path.join(build, b)):
            os.symlink(os.path.join(build, b), os.path.join(wrap, b))
    with open(os.path.join(wrap, "sluice-agent"), "w") as fh:
        real = shlex.quote(os.path.join(build, "sluice-agent"))
        if a.strace:
            fh.write("#!/bin/sh\nexec strace -f -y -T -qq -o %s "
                     "-e trace=mkdir,rmdir,rename,openat,write,writev,read,readv,"
                     "sendmsg,recvmsg,sendto,recvfrom,close,eventfd2 %s \"$@\"\n"
                     % (shlex.quote(trace), real))
        else:
            fh.write("#!/bin/sh\nexec %s \"$@\"\n" % real)
    os.chmod(os.path.join(wrap, "sluice-agent"), 0o755)
    os.environ["SLUICE_BUILD"] = wrap
    import harness
    root = "sluice-trace-%d" % os.getpid()
    args = shlex.split(a.agent_args.replace("{root}", root))
    made = []
    if "{root}" in a.agent_args:
        for c in CTRLS:
            os.mkdir(os.path.join(CG, c, root))
            made.append(os.path.join(CG, c, root))
    ctl = harness.Controller(os.path.join(tmp, "cluster"))
    agent = None
    try:
        ctl.start()
        agent = harness.Agent(ctl, "t1", gpus=0, cpus="2", memory="8Gi", extra_args=args)
        agent.start(timeout=60)
        for _ in range(a.n):
            cmd = ["/bin/sleep", str(a.task_sleep)] if a.task_sleep > 0 else ["/bin/true"]
            j = ctl.submit({"command": cmd, "cpus": "1", "memory": "64Mi"})
            ctl.wait_job(j["id"], ["succeeded", "failed"], timeout=60)
            time.sleep(a.gap)
        agent.stop()
    finally:
        if agent:
            agent.stop()
        ctl.stop()
        sweep(tmp)
        for d in made:
            for sub, _, _ in os.walk(d, topdown=False):
                try:
                    os.rmdir(sub)
                except OSError as e:
                    print("cannot remove %s: %s" % (sub, e), file=sys.stderr)
    with open(agent.log_path, errors="replace") as fh:
        text = fh.read()
    pairs = re.findall(r"started spawn_us=(\d+) cgroup_us=(\d+)", text)
    reads = [(x,) for x in re.findall(r" cgroup: oom_killed=.* read_us=(\d+)", text)]
    for rows, col, key, what in ((pairs, 0, "spawn_us", "decoded launch -> task running"),
                                 (pairs, 1, "cgroup_us", "of it, the task cgroup's set-up"),
                                 (reads, 0, "read_us", "the outcome read at the task's end")):
        us = sorted(int(p[col]) for p in rows)
        if us:
            print("%s (%s, the agent's log): median %.3f ms, p90 %.3f ms, min %.3f ms over %d "
                  "launches" % (key, what, statistics.median(us) / 1e3,
                                us[int(0.9 * (len(us) - 1))] / 1e3, us[0] / 1e3, len(us)))
    if not a.strace:
        return
    groups = {}
    phase = {}          # group -> [on-path calls, on-path ms, off-path calls, off-path ms]
    agent_pid, critical = None, False
    with open(trace, errors="replace") as fh:
        for line in joined(fh):
            pid = line.split(" ", 1)[0]
            if agent_pid is None and pid.isdigit():
                agent_pid = pid
            if pid == agent_pid and "--- SIGCHLD" in line:
                critical = True
                continue
            m = LINE.match(line)
            if not m:
                continue
            call, cargs = m.group(2), m.group(3)
            if pid == agent_pid and "<socket:" in cargs:
                # A launch in starts the critical path; a report out ends it.
                if call in ("read", "readv", "recvmsg", "recvfrom") and '\\"launch\\"' in cargs:
                    critical = True
                elif call in ("write", "writev", "sendmsg", "sendto"):
                    critical = False
                continue
            g = classify(call, cargs)
            if not g:
                continue
            ms = float(m.group(5)) * 1e3
            groups.setdefault(g, []).append(ms)
            on = critical or pid != agent_pid   # the task's child joining: before exec
            ph = phase.setdefault(g, [0, 0.0, 0, 0.0])
            ph[0 if on else 2] += 1
            ph[1 if on else 3] += ms
    print("%d launches, %s, agent args: %s" % (a.n, build, " ".join(args)))
    print("| system calls on the task's cgroup | calls per launch | median per call, ms | p90 per call, ms | max, ms | total per launch, ms |")
    print("|---|---|---|---|---|---|")
    for g, ts in sorted(groups.items(), key=lambda kv: -sum(kv[1])):
        ts.sort()
        print("| %s | %.1f | %.3f | %.3f | %.3f | %.3f |"
              % (g, len(ts) / a.n, statistics.median(ts), ts[int(0.9 * (len(ts) - 1))],
                 ts[-1], sum(ts) / a.n))
    print()
    print("| where | system calls on the task's cgroup per launch | their time per launch, ms |")
    print("|---|---|---|")
    for g, ph in sorted(phase.items(), key=lambda kv: -kv[1][1]):
        print("| on the critical path: %s | %.1f | %.3f |" % (g, ph[0] / a.n, ph[1] / a.n))
    print("| **on the critical path, all** | **%.1f** | **%.3f** |"
          % (sum(p[0] for p in phase.values()) / a.n, sum(p[1] for p in phase.values()) / a.n))
    print("| off the critical path (after a report went out), all | %.1f | %.3f |"
          % (sum(p[2] for p in phase.values()) / a.n, sum(p[3] for p in phase.values()) / a.n))
    print("trace: %s" % trace)


if __name__ == "__main__":
    main()
