#!/usr/bin/python3
"""
elastic_latency.py - issue 11's elastic scaling latency on a loopback
cluster of real daemons (sluiced and sluice-agent processes on 127.0.0.1;
bench/RESULTS.md "Issue 11 (elastic scaling latency)").

    /usr/bin/python3 bench/elastic/elastic_latency.py [ROUNDS]

(a) grow: 8 agents of 1 GPU run an elastic job (min_tasks 8, tasks
    8+ROUNDS, 1 GPU a task). Each round starts one more agent; measured from
    the controller's registration of it (its "node=NAME up" log line,
    millisecond resolution) to the first instruction of the job's new task
    process on it (the task's own $EPOCHREALTIME).
(b) shrink: 8 agents of 1 GPU run an elastic job at its full 8 tasks
    (min_tasks 1, grace 0); a higher-priority 1-GPU job is submitted;
    measured from just before the POST to its task's first instruction
    (the elastic job's highest rank is stopped first). Then it is cancelled
    and the elastic job grows back before the next round.
(c) preempt: the same with 8 rigid 1-GPU jobs of the low class instead:
    one whole job is preempted (grace 0, requeued) for the high one.

All clocks are CLOCK_REALTIME on one machine. Prints min / median / p95 /
max in milliseconds per measure, and the raw values as JSON.
"""

import json
import os
import re
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "e2e"))

import harness  # noqa: E402

STAMP = os.path.join(HERE, "stamp.sh")
CFG = {
    "node_timeout": 60,
    "priority_classes": [
        {"name": "low", "value": 10, "grace": 0},
        {"name": "high", "value": 1000, "may_preempt": True, "grace": 0},
    ],
}


def stamps(d):
    """{(job, task, node, n): time} of the complete stamp files in d."""
    out = {}
    for f in os.listdir(d):
        p = f.split(".")
        if len(p) != 4:
            continue
        try:
            with open(os.path.join(d, f)) as fh:
                out[(int(p[0]), int(p[1]), p[2], int(p[3]))] = float(fh.read())
        except (ValueError, OSError):
            pass
    return out


def wait_stamp(d, pred, timeout=60.0):
    """The first stamp (key, time) matching pred(key), polled every 2 ms."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for k, t in stamps(d).items():
            if pred(k):
                return k, t
        time.sleep(0.002)
    raise TimeoutError("no stamp in %s after %.0f s" % (d, timeout))


def up_time(ctl, name):
    """When sluiced logged node NAME up (its last such line), in seconds."""
    pat = re.compile(r"^(\S+)\.(\d{3})Z info agent: node=%s up " % re.escape(name))
    t = None
    for ln in ctl.log().splitlines():
        m = pat.match(ln)
        if m:
            base = time.mktime(time.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S")) - time.timezone
            t = base + int(m.group(2)) / 1000.0
    return t


def summary(xs):
    xs = sorted(xs)
    p95 = xs[min(len(xs) - 1, int(0.95 * len(xs) + 0.999) - 1)]
    return "%.1f / %.1f / %.1f / %.1f ms (n=%d)" % (xs[0] * 1e3, statistics.median(xs) * 1e3,
                                                    p95 * 1e3, xs[-1] * 1e3, len(xs))


def cluster(tmp, sub, n):
    ctl = harness.Controller(os.path.join(tmp, sub), config_overrides=CFG)
    ctl.start()
    agents = []
    for i in range(n):
        a = harness.Agent(ctl, "n%d" % (i + 1), gpus=1, cpus=4, memory="8Gi")
        a.start()
        agents.append(a)
    return ctl, agents


def stop(ctl, agents):
    for a in agents:
        a.stop()
    ctl.stop()


def bench_grow(tmp, rounds):
    d = os.path.join(tmp, "stamps-a")
    os.makedirs(d)
    ctl, agents = cluster(tmp, "a", 8)
    out = []
    try:
        e = ctl.submit({"tasks": 8 + rounds, "min_tasks": 8, "gpus": 1, "cpus": "100m",
                        "memory": "16Mi", "priority_class": "low", "command": [STAMP, d]})
        for i in range(8):
            wait_stamp(d, lambda k, i=i: k[0] == e["id"] and k[1] == i)
        for r in range(rounds):
            name = "n%d" % (9 + r)
            a = harness.Agent(ctl, name, gpus=1, cpus=4, memory="8Gi")
            agents.append(a)
            a.start(wait=False)
            k, t1 = wait_stamp(d, lambda k: k[0] == e["id"] and k[2] == name)
            t0 = harness.wait_for(lambda: up_time(ctl, name), what="registration of " + name)
            out.append(t1 - t0)
    finally:
        stop(ctl, agents)
    return out


def bench_take(tmp, rounds, elastic):
    """(b) with elastic True, (c) with False."""
    sub = "b" if elastic else "c"
    d = os.path.join(tmp, "stamps-" + sub)
    os.makedirs(d)
    ctl, agents = cluster(tmp, sub, 8)
    out = []
    try:
        if elastic:
            e = ctl.submit({"tasks": 8, "min_tasks": 1, "gpus": 1, "cpus": "100m", "memory": "16Mi",
                            "priority_class": "low", "command": [STAMP, d]})
            victims = [e["id"]]
        else:
            victims = [ctl.submit({"gpus": 1, "cpus": "100m", "memory": "16Mi", "priority_class": "low",
                                   "command": [STAMP, d]})["id"] for _ in range(8)]
        for r in range(rounds):
            # Everything of the low class runs on all 8 GPUs before a round.
            harness.wait_for(lambda: sum(n["tasks"] for n in ctl.nodes()) == 8 and
                             all(n["free"]["gpus"] == 0 for n in ctl.nodes()),
                             timeout=60, interval=0.01, what="8 low tasks running")
            t0 = time.time()
            h = ctl.submit({"gpus": 1, "cpus": "100m", "memory": "16Mi", "priority_class": "high",
                            "command": [STAMP, d]}, tenant="bob")
            k, t1 = wait_stamp(d, lambda k: k[0] == h["id"])
            out.append(t1 - t0)
            ctl.request("DELETE", "/v1/jobs/%d" % h["id"], token=ctl.admin_token)
            ctl.wait_job(h["id"], "cancelled", timeout=30)
        kinds = [p["kind"] for v in victims for p in ctl.job(v)["preemptions"]]
        assert len(kinds) == rounds and set(kinds) == {"shrink" if elastic else "preempt"}, kinds
    finally:
        stop(ctl, agents)
    return out


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    res = {}
    with tempfile.TemporaryDirectory(prefix="sluice-elastic-") as tmp:
        res["a_grow"] = bench_grow(tmp, rounds)
        res["b_shrink"] = bench_take(tmp, rounds, True)
        res["c_preempt"] = bench_take(tmp, rounds, False)
    print("(a) agent registered -> elastic job's new task running on it: " + summary(res["a_grow"]))
    print("(b) high-priority submit -> its task running, after a shrink: " + summary(res["b_shrink"]))
    print("(c) high-priority submit -> its task running, after a preemption: " + summary(res["c_preempt"]))
    print(json.dumps({k: [round(x * 1e3, 2) for x in v] for k, v in res.items()}))


if __name__ == "__main__":
    main()
