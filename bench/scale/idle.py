#!/usr/bin/python3
"""
bench/scale/idle.py - an idle sluiced's CPU with N emulated nodes
heartbeating at the default interval (2 s) and the default node_timeout
(10 s), for one or more builds measured interleaved (issue 14's idle
target: under 5% of one core at 10,000 nodes):

    /usr/bin/python3 bench/scale/idle.py --sizes 1000,2000,5000,10000 \\
        --build before=/tmp/s14i-before --build after=build --rounds 2

For each round, each size and each build in turn: a fresh sluiced (that
build's) and `sluice-agent --emulate N` (the same build's), every node
registered, --settle seconds, then sluiced's and the emulator's CPU time
(utime + stime from /proc/PID/stat, so time spent waiting for a CPU on a
loaded machine does not count) over --window seconds, with the 1-minute
load average and the heartbeats and answers counted on the wire side
(sluiced's agent messages from /metrics). A build is a directory holding
sluiced and sluice-agent; `--build NAME=DIR[,AGENTDIR]` takes the
emulator from AGENTDIR when given (old agent with a new controller and
the other way round). One JSON line per measurement goes to --out, if
given (and build NAME's to results.jsonl with --results NAME, for
plot.py), and a table to stdout. About (settle + window + 15) s per
measurement: 4 sizes x 2 builds x 2 rounds at the defaults take 7 minutes.
"""

import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run  # noqa: E402

ROOT = run.ROOT


def ctxt(pid):
    v = 0
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                v += int(line.split()[1])
    return v


def measure(n, ctl_dir, emu_dir, a):
    d = tempfile.mkdtemp(prefix="scale-idle-%d-" % n, dir=a.tmp)
    run.BUILD = ctl_dir
    ctl = run.Ctl(d, n, a.node_timeout)
    ctl.start(init=True)
    emu = None
    try:
        run.BUILD = emu_dir
        emu = run.Emu(ctl, n)
        run.wait(lambda: emu.registered() >= n, 300, 0.1)
        time.sleep(a.settle)
        r = {"nodes": n, "load": run.load1()}
        m0 = ctl.metric("sluice_agent_messages_total")
        c0, e0, x0 = run.cpu_s(ctl.proc.pid), run.cpu_s(emu.proc.pid), ctxt(ctl.proc.pid)
        w0 = time.time()
        time.sleep(a.window)
        c1, e1, x1 = run.cpu_s(ctl.proc.pid), run.cpu_s(emu.proc.pid), ctxt(ctl.proc.pid)
        w = time.time() - w0
        m1 = ctl.metric("sluice_agent_messages_total")
        r["window_s"] = w
        r["idle_cpu_pct"] = 100 * (c1 - c0) / w
        r["emu_idle_cpu_pct"] = 100 * (e1 - e0) / w
        r["msgs_per_s"] = (m1 - m0) / w
        r["ctxt_per_s"] = (x1 - x0) / w
        r["load_end"] = run.load1()
        r["registered"] = emu.registered()
        return r
    finally:
        if emu:
            emu.stop()
        ctl.stop()
        run.BUILD = os.environ.get("SLUICE_BUILD", os.path.join(ROOT, "build"))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,2000,5000,10000")
    ap.add_argument("--build", action="append", default=[],
                    help="NAME=DIR[,AGENTDIR] (default: current=build)")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--window", type=float, default=20)
    ap.add_argument("--settle", type=float, default=6)
    ap.add_argument("--node-timeout", type=float, default=10,
                    help="seconds (10 is sluiced's default)")
    ap.add_argument("--out", default=None)
    ap.add_argument("--results", default=None, metavar="NAME",
                    help="also append build NAME's rows to bench/scale/results.jsonl "
                         "(run.py's format, the idle figures only) for plot.py")
    ap.add_argument("--tmp", default=None)
    a = ap.parse_args()
    builds = []
    for b in a.build or ["current=" + os.path.join(ROOT, "build")]:
        name, dirs = b.split("=", 1)
        ds = [os.path.abspath(os.path.join(ROOT, x)) for x in dirs.split(",")]
        builds.append((name, ds[0], ds[-1]))
    sizes = [int(x) for x in a.sizes.split(",")]
    print("%-6s %-14s %6s %8s %8s %9s %8s %5s" % ("round", "build", "nodes", "sluiced",
          "emulator", "msgs/s", "ctxsw/s", "load"), flush=True)
    for rnd in range(a.rounds):
        for n in sizes:
            for name, cdir, edir in builds:
                r = measure(n, cdir, edir, a)
                r.update({"round": rnd, "build": name, "node_timeout": a.node_timeout,
                          "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                          "args": " ".join(sys.argv[1:])})
                print("%-6d %-14s %6d %7.2f%% %7.2f%% %9.0f %8.0f %5.2f" % (
                    rnd, name, n, r["idle_cpu_pct"], r["emu_idle_cpu_pct"], r["msgs_per_s"],
                    r["ctxt_per_s"], r["load"]), flush=True)
                if a.out:
                    with open(a.out, "a") as f:
                        f.write(json.dumps(r) + "\n")
                if a.results == name:
                    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                           "results.jsonl"), "a") as f:
                        f.write(json.dumps({
                            "nodes": n, "gpus": 8 * n, "load_idle": r["load"],
                            "idle_cpu_pct": r["idle_cpu_pct"],
                            "emu_idle_cpu_pct": r["emu_idle_cpu_pct"], "time": r["time"],
                            "args": "idle.py " + r["args"]}) + "\n")


if __name__ == "__main__":
    main()
