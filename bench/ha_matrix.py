#!/usr/bin/python3
"""
bench/ha_matrix.py - the HA fault matrix (docs/ha.md, "Verified"): real
daemons in network namespaces of their own (tests/e2e/fixtures/hanetns.py:
three etcd members in one cluster, three sluiced --ha, two agents with
emulated GPUs and `--controller A,B,C`), a stream of submissions (plain
jobs, arrays of 4, afterok dependencies; every 201 recorded) while faults
happen, N rounds of each scenario:

  kill      kill -9 of the leader (started again after the takeover)
  stop      SIGSTOP of the leader for TTL + 2 s, then SIGCONT
  cut       the leader's namespace cut off (iptables DROP on its eth0:
            etcd, agents and clients all silent) until the takeover + 1 s
  wipe      the leader's state directory deleted, the leader killed -9 and
            started again (it must rebuild from etcd and rejoin)
  etcd      the etcd member the leader is connected to killed -9 (started
            again at the end of the round)
  etcdcut   that etcd member's namespace cut off (iptables DROP) until the
            first 201 after the fault + 1 s (not in the default list)

Per round: the takeover (from the fault to the first 201 whose request
was sent after it, from another member than the faulted leader; for etcd
from any member), found by POSTing a job to each candidate every 50 ms
besides the stream; acknowledged jobs absent from the new leader (lost).
At the end, once every acknowledged job has ended: jobs not succeeded,
(job, task) pairs whose stamps outnumber 1 + the job's requeues, or two
of whose runs overlapped in time (double runs), and launches the agents accepted of an epoch lower than their
highest (the agent's own check) or of an epoch lower than that of a
leader already elected (the controllers' logs) or seen acknowledging by
the bench (a deposed leader's launch). Before each round the group must
be whole again (three controllers, one leader, every member's file within
20 log entries of the leader's, three etcd members, both nodes up).

    /usr/bin/python3 bench/ha_matrix.py [--rounds 20] [--scenarios kill,stop,cut,wipe,etcd,etcdcut]
                                        [--ttl 3] [--rate 4] [--octet 231] [--json OUT]

Needs root (ip netns, iptables), Debian's etcd-server and build/ (make;
SLUICE_BUILD to change). Everything it creates (namespaces hmPID-*, its
processes) is removed by name and PID at the end, also on failure.
"""
import argparse
import json
import os
import signal
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e", "fixtures"))
import hanetns  # noqa: E402

from hanetns import SCENARIOS, audit, one_round, pct, settle  # noqa: E402


def table(rounds, out):
    lines = ["| scenario | rounds | takeover p50 | p99 | max | acknowledged lost | "
             "double runs | deposed launches accepted |", "|---|---|---|---|---|---|---|---|"]
    for scen in SCENARIOS:
        rs = [r for r in rounds if r["scenario"] == scen]
        if not rs:
            continue
        ts = [r["takeover_s"] for r in rs if r["takeover_s"] is not None]
        fails = len(rs) - len(ts)
        f = (lambda v: "%.2f s" % v if v is not None else "-")
        lines.append("| %s | %d | %s | %s | %s%s | %d | %d | %d |" % (
            scen, len(rs), f(pct(ts, 0.5)), f(pct(ts, 0.99)), f(max(ts) if ts else None),
            " (%d none)" % fails if fails else "", sum(len(r["lost"]) for r in rs),
            sum(len(r.get("doubles", [])) for r in rs), sum(len(r.get("deposed", [])) for r in rs)))
    lines.append("| Slurm backup controller (SlurmctldTimeout default) | | 120 s | | | "
                 "up to ~5 s of changes | | no fencing |")
    lines.append("| Kubernetes control plane (lease 15 s, renew 10 s, retry 2 s) | | ~15-17 s | | "
                 "| | | |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=20, help="rounds of each scenario")
    ap.add_argument("--scenarios", default="kill,stop,cut,wipe,etcd",
                    help="comma-separated, of %s (default: all but etcdcut)" % ",".join(SCENARIOS))
    ap.add_argument("--ttl", type=int, default=3, help="the controllers' --lease-ttl, s")
    ap.add_argument("--rate", type=float, default=4.0, help="submissions a second")
    ap.add_argument("--octet", type=int, default=231, help="the subnet: 10.OCTET.0.0/24")
    ap.add_argument("--settle", type=float, default=300, help="seconds for every job to end")
    ap.add_argument("--json", help="also write every round's record here")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    a = ap.parse_args()
    scens = [s for s in a.scenarios.split(",") if s]
    for s in scens:
        if s not in SCENARIOS:
            ap.error("--scenarios: %s is not one of %s" % (s, ",".join(SCENARIOS)))
    why = hanetns.unavailable()
    if why:
        print("ha_matrix: cannot run: %s" % why, file=sys.stderr)
        return 2

    def log(msg):
        print("%s %s" % (time.strftime("%H:%M:%S"), msg), file=sys.stderr, flush=True)

    tmp = tempfile.mkdtemp(prefix="ha-matrix-")
    g = hanetns.Group(tmp, octet=a.octet, ttl=a.ttl)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    rounds, summary = [], {}
    t_start = time.time()
    load0 = os.getloadavg()
    try:
        g.start()
        log("group up in %s: %s" % (tmp, g.net.tag))
        stream = hanetns.Stream(g, rate=a.rate)
        stream.start()
        for scen in scens:
            for rnd in range(1, a.rounds + 1):
                rounds.append(one_round(g, stream, scen, rnd, a.ttl, log))
        stream.stop_flag.set()
        stream.join(10)
        jobs, ids, open_ = settle(g, stream, a.settle)
        summary = audit(g, rounds, jobs, ids)
        summary["still_open_at_end"] = len(open_)
        summary["submit_errors"] = stream.errors
    finally:
        g.close()
        if not a.keep:
            import shutil
            shutil.rmtree(tmp, ignore_errors=True)
    out = {"rounds": rounds, "summary": summary, "ttl_s": a.ttl, "rate": a.rate,
           "seconds": round(time.time() - t_start), "load_before": load0,
           "load_after": os.getloadavg(), "nproc": os.cpu_count()}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1, default=str)
    print(table(rounds, out))
    s = summary
    print("\nacknowledged %d jobs; at the end: missing %d, not succeeded %d, still open %d; "
          "stamped tasks %d, launches accepted %d, agents' own epoch check violated %d, "
          "refused as of an older epoch %s; %d s, load %s -> %s on %d CPUs" % (
              rounds[-1]["acked"] if rounds else 0, len(s.get("missing_at_end", [])),
              len(s.get("not_succeeded", [])), s.get("still_open_at_end", 0),
              s.get("stamped_tasks", 0), s.get("launches", 0),
              len(s.get("own_check_violations", [])),
              json.dumps(s.get("refusals", {}), sort_keys=True), out["seconds"],
              "/".join("%.1f" % x for x in load0),
              "/".join("%.1f" % x for x in out["load_after"]), os.cpu_count()))
    bad = (sum(len(r["lost"]) for r in rounds) + len(s.get("doubles", [])) +
           len(s.get("deposed", [])) + len(s.get("missing_at_end", [])))
    if bad:
        print("FAILURES: see --json for the records", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
