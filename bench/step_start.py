#!/usr/bin/python3
"""
step_start.py - how long srun takes to start a job step on an allocation
that already runs: from srun's start to its last rank running.

    bench/step_start.py [--reps 30] [--nodes 2] [--per-node 8] [--slurm]

A private sluiced and NODES agents on 127.0.0.1 (build/), one allocation of
NODES x PER_NODE tasks (one CPU each, agents of PER_NODE CPUs, so the core
places PER_NODE a node) that runs nothing but its step daemons; then REPS
steps of NODES x PER_NODE ranks, each rank `sh -c 'date +%s.%N'`, started
by the real `sluice srun --jobid J`. Per step:

  * srun to last rank: the latest time a rank printed, less the time just
    before srun was started (the figure Slurm's is compared with; it
    counts srun's own start, the HTTP request, placement, the agents, the
    step daemons' fork and the ranks' exec of sh and date);
  * POST to last started: the same step over HTTP from this process, from
    the request to the last "started" event of the stream (no CLI, no
    rank exec);
  * srun wall: srun's whole run, to its exit after the last rank's.

With --slurm, the same ranks under the peer Slurm 22.05 of
../shared/peers/slurm (SLURM_CONF=/tmp/slurm-peer/etc/slurm.conf, a
cluster its setup.sh started): `salloc --no-shell -n N`, then
`srun --jobid J -n N sh -c 'date +%s.%N'` REPS times. Its one node runs
all N ranks (a 1 x N allocation). Prints min / median / max of each.
"""

import argparse
import http.client
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))

import harness  # noqa: E402

RANK = ["sh", "-c", "date +%s.%N"]


def stats(xs):
    xs = sorted(xs)
    return "%.1f / %.1f / %.1f ms" % (xs[0] * 1e3, statistics.median(xs) * 1e3, xs[-1] * 1e3)


def last_rank(out):
    return max(float(x) for x in out.split() if x.replace(".", "", 1).isdigit())


def sluice_side(reps, nodes, per_node):
    d = tempfile.mkdtemp(prefix="sluice-step-bench-")
    ctl = harness.Controller(os.path.join(d, "ctl"))
    agents = []
    try:
        ctl.start()
        for i in range(nodes):
            agents.append(harness.Agent(ctl, "n%d" % (i + 1), gpus=0, cpus=str(per_node)).start())
        n = nodes * per_node
        j = ctl.submit({"allocation": True, "tasks": n, "cpus": 1, "memory": "64Mi",
                        "command": ["sluice-stepd"]}, tenant="alice")
        ctl.wait_job(j["id"], "running", timeout=60)
        env = dict(os.environ, SLUICE_SERVER=ctl.url, SLUICE_TOKEN=ctl.tenant_tokens["alice"],
                   SLUICE_DIR=os.path.join(d, "none"))
        env.pop("SLURM_JOB_ID", None)
        srun = [os.path.join(harness.build_dir(), "sluice"), "srun", "--jobid", str(j["id"]),
                "-n", str(n)] + RANK
        for _ in range(3):  # warm-up: the step daemons are listening, caches are warm
            subprocess.run(srun, env=env, capture_output=True, check=True, timeout=60)
        to_last, wall, post = [], [], []
        for _ in range(reps):
            t0 = time.time()
            r = subprocess.run(srun, env=env, capture_output=True, text=True, timeout=60)
            t1 = time.time()
            assert r.returncode == 0 and len(r.stdout.split()) == n, r
            to_last.append(last_rank(r.stdout) - t0)
            wall.append(t1 - t0)
        host, port = ctl.url.split("//")[1].split(":")
        body = json.dumps({"argv": ["true"], "ntasks": n})
        for _ in range(reps):
            c = http.client.HTTPConnection(host, int(port), timeout=60)
            t0 = time.monotonic()
            c.request("POST", "/v1/jobs/%d/steps" % j["id"], body,
                      {"Authorization": "Bearer " + ctl.tenant_tokens["alice"],
                       "Content-Type": "application/json"})
            resp = c.getresponse()
            started, t_last = 0, None
            for line in resp:
                e = json.loads(line)
                if e["type"] == "started":
                    started += 1
                    if started == n:
                        t_last = time.monotonic()
                if e["type"] == "end":
                    break
            c.close()
            post.append(t_last - t0)
        return {"srun to last rank": to_last, "POST to last started": post, "srun wall": wall}
    finally:
        for a in agents:
            a.stop()
        ctl.stop()
        shutil.rmtree(d, ignore_errors=True)


def slurm_side(reps, n):
    env = dict(os.environ, SLURM_CONF="/tmp/slurm-peer/etc/slurm.conf")
    r = subprocess.run(["salloc", "--no-shell", "-n", str(n), "-t", "10"], env=env,
                       capture_output=True, text=True, timeout=120)
    jid = [w for w in r.stderr.split() if w.isdigit()]
    assert r.returncode == 0 and jid, r.stderr
    jid = jid[-1]
    srun = ["srun", "--jobid", jid, "-n", str(n)] + RANK
    try:
        for _ in range(3):
            subprocess.run(srun, env=env, capture_output=True, check=True, timeout=60)
        to_last, wall = [], []
        for _ in range(reps):
            t0 = time.time()
            r = subprocess.run(srun, env=env, capture_output=True, text=True, timeout=60)
            t1 = time.time()
            assert r.returncode == 0, r.stderr
            to_last.append(last_rank(r.stdout) - t0)
            wall.append(t1 - t0)
        return {"srun to last rank": to_last, "srun wall": wall}
    finally:
        subprocess.run(["scancel", jid], env=env, capture_output=True, timeout=60)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--nodes", type=int, default=2)
    ap.add_argument("--per-node", type=int, default=8)
    ap.add_argument("--slurm", action="store_true", help="also the peer Slurm (a 1 x N allocation)")
    a = ap.parse_args()
    n = a.nodes * a.per_node
    print("load before: %s" % open("/proc/loadavg").read().strip())
    res = sluice_side(a.reps, a.nodes, a.per_node)
    print("Sluice, %d x %d ranks, %d steps:" % (a.nodes, a.per_node, a.reps))
    for k, v in res.items():
        print("  %-22s %s" % (k, stats(v)))
    if a.slurm:
        res = slurm_side(a.reps, n)
        print("Slurm 22.05 (peer), 1 x %d ranks, %d steps:" % (n, a.reps))
        for k, v in res.items():
            print("  %-22s %s" % (k, stats(v)))


if __name__ == "__main__":
    main()
