#!/usr/bin/python3
"""
bench/events_fanout.py - GET /v1/events fanned out to many clients
(docs/api.md "Events"): sluiced's CPU and memory while CLIENTS streams
follow bursts of job events.

    make build && bench/events_fanout.py [--clients 200] [--bursts 20] [--size 50]

Each burst is an array of SIZE jobs (more GPUs than any node has: they
stay pending) cancelled at once: 3 events per element (job.submitted,
job.cancelled, job.finished), every one sent to every client (all read
as the admin; a cancel's 2 x SIZE events leave in one loop iteration,
which must stay under half a client's bound, 128 KiB, or it gets a reset
in their place). A burst ends when every client has its last event; the
next starts then. Printed: events and bytes delivered, the controller's
CPU seconds (utime + stime from /proc) and its RSS before and after and
its peak (VmHWM), clients dropped (/v1/events/stats), and each burst's
time from the submission to its last event at the slowest client.
Clients are Python threads (tests/e2e/fixtures/sse.py) on the same
machine, so the figures include the machine being shared with them.
"""

import argparse
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e", "fixtures"))

import harness  # noqa: E402
from sse import SSE  # noqa: E402


def proc_stats(pid):
    with open("/proc/%d/stat" % pid) as f:
        parts = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    cpu = (int(parts[11]) + int(parts[12])) / tick
    rss = hwm = 0
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) * 1024
            elif line.startswith("VmHWM:"):
                hwm = int(line.split()[1]) * 1024
    return cpu, rss, hwm


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--clients", type=int, default=200)
    ap.add_argument("--bursts", type=int, default=20)
    ap.add_argument("--size", type=int, default=50)
    args = ap.parse_args()
    d = tempfile.mkdtemp(prefix="sluice-fanout-")
    ctl = harness.Controller(d, config_overrides={"limits": {"max_connections": 4096,
                                                             "max_connections_per_peer": 4096}})
    ctl.start()
    clients = []
    try:
        for _ in range(args.clients):
            clients.append(SSE(ctl, ctl.admin_token))
        for c in clients:
            assert c.status == 200, c.status
            c.wait(lambda evs: evs, what="hello")
        cpu0, rss0, _ = proc_stats(ctl.proc.pid)
        t_all = time.monotonic()
        lat = []
        for b in range(args.bursts):
            t0 = time.monotonic()
            j = ctl.submit({"name": "fan%d" % b, "gpus": 16, "array": "0-%d" % (args.size - 1),
                            "command": ["true"]})
            st, _ = ctl.request("DELETE", "/v1/jobs/%d" % j["id"], token=ctl.admin_token)
            assert st == 200, st
            last = j["id"] + args.size - 1

            def done(evs):
                return any(e["event"] == "job.finished" and e["data"]["job"]["id"] == last
                           for e in evs[-8:])
            for c in clients:
                if not c.closed:
                    harness.wait_for(lambda: done(c.snapshot()) or c.closed, timeout=120,
                                     interval=0.01, what="burst %d" % b)
            lat.append(time.monotonic() - t0)
        wall = time.monotonic() - t_all
        cpu1, rss1, hwm = proc_stats(ctl.proc.pid)
        st, stats = ctl.request("GET", "/v1/events/stats", token=ctl.admin_token)
        delivered = sum(len(c.job_events()) for c in clients)
        nbytes = sum(len(json.dumps(e["data"])) + 40 for c in clients for e in c.job_events())
        lat.sort()
        print(json.dumps({
            "clients": args.clients, "bursts": args.bursts, "events_per_burst": 3 * args.size,
            "events_delivered": delivered, "approx_mib_delivered": round(nbytes / 2**20, 1),
            "wall_s": round(wall, 2), "ctl_cpu_s": round(cpu1 - cpu0, 2),
            "ctl_cpu_pct_of_one_core": round(100 * (cpu1 - cpu0) / wall, 1),
            "ctl_rss_mib_before": round(rss0 / 2**20, 1), "ctl_rss_mib_after": round(rss1 / 2**20, 1),
            "ctl_rss_mib_peak": round(hwm / 2**20, 1), "dropped": stats["dropped"],
            "resets": sum(1 for c in clients for e in c.snapshot() if e["event"] == "reset"),
            "burst_s_p50": round(lat[len(lat) // 2], 3), "burst_s_max": round(lat[-1], 3),
        }, indent=1))
    finally:
        for c in clients:
            c.close()
        ctl.stop()


if __name__ == "__main__":
    main()
