#!/usr/bin/python3
"""busy.py - the CPU-bound task of the allocation-precision benchmark.

    busy.py WORKERS SECONDS OUT.json [--pidfile FILE] [--settle S]

With --pidfile it first writes {"pid": PID} to FILE and sleeps --settle
seconds (default 0), so that the benchmark can find the task (and raise
its priority) before the measured interval begins.  Then it forks WORKERS processes that spin (a tight Python loop that looks at the
monotonic clock every 20,000 iterations) until SECONDS have passed, waits
for them and writes one JSON object to OUT.json (temp file + rename, so a
reader never sees half of it):

  wall_s      CLOCK_MONOTONIC from just before the first fork to just
              after the last child was reaped
  cpu_s       the CPU time (user + system) the workers received, from the
              kernel's accounting of each reaped child (os.wait4's rusage)
              plus this parent's own: the task's own accounting
  cgroup      the task's cpu cgroup (path, cfs quota and period, cpu.stat
              deltas: periods, throttled periods, throttled time) and its
              cpuacct cgroup (path, cpuacct.usage delta in ns), read at
              the start and at the end from /proc/self/cgroup's paths
  cpuset      the CPUs the task may run on (sched_getaffinity)

The workers are separate processes, not threads, so that more than one CPU
can be used by a Python task (one interpreter lock per process).
"""
import json
import os
import resource
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cgself  # noqa: E402


def spin(deadline):
    now = time.monotonic
    while True:
        for _ in range(20000):
            pass
        if now() >= deadline:
            return


def snapshot():
    p = cgself.paths()
    cpu, acct = cgself.cgdir("cpu", p), cgself.cgdir("cpuacct", p)
    return {"cpu_path": p.get("cpu"), "cpuacct_path": p.get("cpuacct"),
            "cfs_quota_us": cgself.read_int(cpu, "cpu.cfs_quota_us"),
            "cfs_period_us": cgself.read_int(cpu, "cpu.cfs_period_us"),
            "cpu_stat": cgself.read_kv(cpu, "cpu.stat"),
            "cpuacct_usage_ns": cgself.read_int(acct, "cpuacct.usage")}


def main():
    workers, seconds, out = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
    opts = dict(zip(sys.argv[4::2], sys.argv[5::2]))
    if "--pidfile" in opts:
        tmp = opts["--pidfile"] + ".tmp"
        with open(tmp, "w") as fh:
            json.dump({"pid": os.getpid()}, fh)
        os.rename(tmp, opts["--pidfile"])
    time.sleep(float(opts.get("--settle", 0)))
    s0 = snapshot()
    self0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.monotonic()
    deadline = t0 + seconds
    pids = []
    for _ in range(workers):
        pid = os.fork()
        if pid == 0:
            try:
                spin(deadline)
            finally:
                os._exit(0)
        pids.append(pid)
    cpu = 0.0
    for pid in pids:
        _, status, ru = os.wait4(pid, 0)
        cpu += ru.ru_utime + ru.ru_stime
    t1 = time.monotonic()
    self1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu += (self1.ru_utime - self0.ru_utime) + (self1.ru_stime - self0.ru_stime)
    s1 = snapshot()
    d = {k: s1["cpu_stat"].get(k, 0) - s0["cpu_stat"].get(k, 0)
         for k in ("nr_periods", "nr_throttled", "throttled_time")}
    acct = None
    if s0["cpuacct_usage_ns"] is not None and s1["cpuacct_usage_ns"] is not None:
        acct = (s1["cpuacct_usage_ns"] - s0["cpuacct_usage_ns"]) / 1e9
    res = {"workers": workers, "seconds": seconds, "wall_s": t1 - t0, "cpu_s": cpu,
           "cgroup": {"cpu_path": s1["cpu_path"], "cpuacct_path": s1["cpuacct_path"],
                      "cfs_quota_us": s1["cfs_quota_us"],
                      "cfs_period_us": s1["cfs_period_us"],
                      "cpu_stat_delta": d, "cpuacct_usage_s": acct},
           "cpuset": sorted(os.sched_getaffinity(0)), "pid": os.getpid(),
           "loadavg": os.getloadavg()}
    tmp = out + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(res, fh)
    os.rename(tmp, out)


if __name__ == "__main__":
    main()
