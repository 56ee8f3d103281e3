#!/usr/bin/python3
"""cost.py - what per-task cgroup enforcement costs on the live benchmarks
(issue 9): the 100-task start-up and the GPU turnover of bench/live, with
every agent at --cgroup none and at --cgroup v1, in one sitting.

    bench/enforce/cost.py [--rounds 4] [--reps 3] [--turnover-reps 2]
        [--modes seq,c10] [--variants "none=--cgroup none" "v1=--cgroup v1 --cgroup-root {root}"]
        [--build NAME=DIR ...] [--root-cpu-shares NAME=N ...] [--autogroup-nice N]

Each round runs bench/live/livebench.py once per variant (--tests
startup,turnover --slurm skip, --agent-args from the variant), the order
alternating from round to round (none, v1 / v1, none / ...) so that a
drift in the shared machine's load falls on both alike.  From every
repetition of every round it takes: all 100 started (job stamps; the
agents' start_time), the per-GPU exit -> next start gap of the turnover
(stamps; agents' times), and from the agents' own logs each launch's
spawn_us (decoded launch -> running task, inside sluice-agent).  Prints,
per figure, the median over all repetitions of each variant (min-max), and
the ratio of the medians to the first variant.  Raw output of each
livebench run stays under --out (default /tmp/sluice-enforce-cost/<date>/);
the work directories (daemon state, stamps) are removed once read.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
LIVEBENCH = os.path.join(REPO, "bench", "live", "livebench.py")


def log(msg):
    print("[cost %s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


def spawn_us(work, part):
    """spawn_us of every launch the agents of one live part logged."""
    out = []
    d = os.path.join(work, part)
    if not os.path.isdir(d):
        return out
    for ag in sorted(os.listdir(d)):
        p = os.path.join(d, ag, "agent.log")
        if ag.startswith("agent-") and os.path.exists(p):
            with open(p, errors="replace") as fh:
                out += [int(x) for x in re.findall(r"started spawn_us=(\d+)", fh.read())]
    return out


def one(a, variant, args, rnd):
    out = os.path.join(a.out, "r%d-%s" % (rnd, variant))
    cmd = ["/usr/bin/python3", LIVEBENCH, "--slurm", "skip", "--tests", a.tests,
           "--reps", str(a.reps), "--turnover-reps", str(a.turnover_reps),
           "--startup-modes", a.modes, "--agent-args", args, "--out", out]
    log("round %d, %s: %s" % (rnd, variant, " ".join(cmd[1:])))
    env = dict(os.environ)
    if variant in a.builds:
        env["SLUICE_BUILD"] = a.builds[variant]
    shares = a.shares.get(variant)
    with open(out + ".log", "w") as fh:
        p = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env)
        stop = threading.Event()
        th = None
        if shares:
            th = threading.Thread(target=set_shares, args=(p.pid, shares, stop), daemon=True)
            th.start()
        try:
            p.wait(timeout=1200)
        finally:
            stop.set()
            if th:
                th.join()
            if p.poll() is None:
                p.terminate()
                p.wait(timeout=60)
    if p.returncode != 0:
        raise RuntimeError("livebench (%s) exited %d; see %s.log" % (variant, p.returncode, out))
    with open(os.path.join(out, "results.json")) as fh:
        r = json.load(fh)
    r["spawn_us"] = {"startup": spawn_us(os.path.join(out, "work"), "startup"),
                     "turnover": spawn_us(os.path.join(out, "work"), "turnover")}
    shutil.rmtree(os.path.join(out, "work"), ignore_errors=True)
    return r


def set_shares(pid, shares, stop):
    """Gives every cgroup v1 root livebench `pid` makes for its agents
    (/sys/fs/cgroup/cpu/sluice-live-PID-*, see bench/live/livebench.py)
    cpu.shares `shares` as soon as it appears, before its agent starts
    tasks: the weight of all of that agent's tasks together against the
    host's other processes (each task's own cgroup keeps 1024)."""
    base, pre, done = "/sys/fs/cgroup/cpu", "sluice-live-%d-" % pid, set()
    while not stop.wait(0.02):
        try:
            names = [n for n in os.listdir(base) if n.startswith(pre) and n not in done]
        except OSError:
            continue
        for n in names:
            try:
                with open(os.path.join(base, n, "cpu.shares"), "w") as fh:
                    fh.write(str(shares))
                done.add(n)
            except OSError:
                pass


FIGS = [
    # (label, getter over one variant's list of results -> list of values, unit scale, digits)
    ("100-task start-up, all started (job stamps), POSTs on 1 connection, s",
     lambda rs: [x["all_started_stamp_s"] for r in rs for x in r["sluice"].get("startup", {}).get("seq", [])], 1, 3),
    ("same, by the agents' start_time, s",
     lambda rs: [x["all_started_api_s"] for r in rs for x in r["sluice"].get("startup", {}).get("seq", [])], 1, 3),
    ("100-task start-up, all started (job stamps), 10 connections, s",
     lambda rs: [x["all_started_stamp_s"] for r in rs for x in r["sluice"].get("startup", {}).get("c10", [])], 1, 3),
    ("GPU turnover, exit -> next start on that GPU (stamps), median of a run, ms",
     lambda rs: [x["gap_median_s"] for r in rs for x in r["sluice"].get("turnover", [])], 1e3, 2),
    ("same, agents' end_time -> next start_time, median of a run, ms",
     lambda rs: [x["api_gap_median_s"] for r in rs for x in r["sluice"].get("turnover", [])], 1e3, 2),
    ("launch inside the agent (spawn_us), start-up's 100-task bursts, median of all launches, ms",
     lambda rs: [u / 1e3 for r in rs for u in r["spawn_us"]["startup"]], 1, 3),
    ("same, turnover (one task at a time), median of all launches, ms",
     lambda rs: [u / 1e3 for r in rs for u in r["spawn_us"]["turnover"]], 1, 3),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--reps", type=int, default=3, help="start-up repetitions per livebench run")
    ap.add_argument("--turnover-reps", type=int, default=2)
    ap.add_argument("--modes", default="seq,c10", help="livebench --startup-modes")
    ap.add_argument("--tests", default="startup,turnover", help="livebench --tests")
    ap.add_argument("--variants", nargs="+",
                    default=["none=--cgroup none", "v1=--cgroup v1 --cgroup-root {root}"],
                    help="NAME=AGENT-ARGS; the first is the baseline of the ratios")
    ap.add_argument("--build", action="append", default=[], metavar="NAME=DIR",
                    help="run variant NAME with the binaries of build directory DIR "
                         "(SLUICE_BUILD; default: build/), e.g. an agent with a patch")
    ap.add_argument("--root-cpu-shares", action="append", default=[], metavar="NAME=N",
                    help="variant NAME: each agent's cgroup root gets cpu.shares N (as "
                         "kubelet gives kubepods the node's CPUs x 1024)")
    ap.add_argument("--autogroup-nice", type=int, default=None,
                    help="set this session's autogroup nice value (-20..19) for the run, "
                         "restored at the end: with sched_autogroup_enabled, how much CPU "
                         "the bench and its daemons get against the host's other sessions")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    a.builds = dict(b.split("=", 1) for b in a.build)
    a.shares = {k: int(v) for k, v in (x.split("=", 1) for x in a.root_cpu_shares)}
    a.rounds = max(1, min(a.rounds, 20))
    variants = [v.split("=", 1) for v in a.variants]
    a.out = a.out or "/tmp/sluice-enforce-cost/%s" % time.strftime("%Y%m%d-%H%M%S")
    os.makedirs(a.out, exist_ok=True)
    res = {name: [] for name, _ in variants}
    load = []
    old_nice = None
    if a.autogroup_nice is not None:
        # This session's autogroup (the bench, the daemons it starts, not
        # the tasks, which setsid into autogroups of their own) weighs as
        # a process of this nice value against the host's other sessions.
        with open("/proc/self/autogroup") as fh:
            old_nice = int(fh.read().split("nice")[1])
        with open("/proc/self/autogroup", "w") as fh:
            fh.write(str(a.autogroup_nice))
    try:
        for rnd in range(a.rounds):
            order = variants if rnd % 2 == 0 else list(reversed(variants))
            for name, args in order:
                load.append(os.getloadavg()[0])
                res[name].append(one(a, name, args, rnd + 1))
    finally:
        if old_nice is not None:
            with open("/proc/self/autogroup", "w") as fh:
                fh.write(str(old_nice))
    names = [n for n, _ in variants]
    L = ["| figure | " + " | ".join("%s: median (min-max)" % n for n in names) + " | " +
         " | ".join("%s / %s" % (n, names[0]) for n in names[1:]) + " |",
         "|---|" + "---|" * (len(names) * 2 - 1)]
    summary = {}
    for label, get, scale, nd in FIGS:
        cells, meds = [], []
        for n in names:
            xs = [x * scale for x in get(res[n]) if x is not None]
            if not xs:
                cells.append("n/a")
                meds.append(None)
                continue
            m = statistics.median(xs)
            meds.append(m)
            cells.append("%.*f (%.*f-%.*f, n=%d)" % (nd, m, nd, min(xs), nd, max(xs), len(xs)))
        ratios = ["%.2f" % (m / meds[0]) if m is not None and meds[0] else "n/a"
                  for m in meds[1:]]
        summary[label] = {"medians": dict(zip(names, meds))}
        L.append("| %s | %s | %s |" % (label, " | ".join(cells), " | ".join(ratios)))
    L.append("")
    L.append("1-minute load average before each livebench run: %s"
             % ", ".join("%.1f" % x for x in load))
    s = "\n".join(L)
    with open(os.path.join(a.out, "summary.md"), "w") as fh:
        fh.write(s + "\n")
    with open(os.path.join(a.out, "cost.json"), "w") as fh:
        json.dump({"args": vars(a), "summary": summary, "load": load,
                   "spawn_us": {n: [r["spawn_us"] for r in res[n]] for n in names}},
                  fh, indent=1)
    print()
    print(s)
    log("raw: %s" % a.out)


if __name__ == "__main__":
    main()
