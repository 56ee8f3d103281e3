#!/usr/bin/python3
"""
notify_load.py - what job notifications cost sluiced's loop, and how fast
its worker delivers them.

Starts a sluiced (the e2e harness's Controller) with one fake agent
(tests/e2e/harness.py's FakeAgent, which answers every launch with
`started` at once) and submits N jobs (default 2,000) with mail_type
BEGIN, one at a time on a kept-alive connection, timing each POST /v1/jobs
to its 201. Three runs:

  none      no notify configured (the baseline)
  blocked   notify.command waits forever (until the run ends), notify.queue
            100: the worker is stuck on the first event, the queue fills and
            the rest are dropped; the loop must not notice
  fast      notify.command `cat >/dev/null` (one /bin/sh per event): the
            time until every event is delivered gives the worker's rate

Beside the wall times it prints the CPU time sluiced spent (/proc), which
other processes on a shared machine do not inflate.

Usage: bench/notify_load.py [N] [RUNS]   (RUNS: comma-separated, default
none,blocked,fast; from the repository root after `make build`; writes
only under a temporary directory).
"""

import http.client
import json
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "tests", "e2e"))
import harness  # noqa: E402


def cpu_ms(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000.0 / os.sysconf("SC_CLK_TCK")


def metric(ctl, name):
    st, text = ctl.request("GET", "/metrics", token=ctl.admin_token)
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return 0.0


def run(tmp, label, notify, n):
    over = {"notify": notify} if notify else {}
    ctl = harness.Controller(os.path.join(tmp, label), config_overrides=over).start()
    agent = harness.FakeAgent(ctl, "n1", gpus=0, cpus=str(n + 10), memory="%dGi" % (n + 10))
    try:
        agent.start()
        agent.start_heartbeats(0.5)
        conn = http.client.HTTPConnection("127.0.0.1", ctl.port, timeout=30)
        tok = ctl.token("alice")
        body = json.dumps({"mail_type": "BEGIN", "cpus": "1", "memory": "1Gi",
                           "command": ["true"]})
        cpu0 = cpu_ms(ctl.proc.pid)
        lat = []
        t_all = time.perf_counter()
        for _ in range(n):
            t0 = time.perf_counter()
            conn.request("POST", "/v1/jobs", body=body,
                         headers={"Authorization": "Bearer " + tok,
                                  "Content-Type": "application/json"})
            resp = conn.getresponse()
            resp.read()
            assert resp.status == 201, resp.status
            lat.append((time.perf_counter() - t0) * 1000)
        harness.wait_for(lambda: len(agent.messages("launch")) >= n, timeout=120, what="launches")
        if label == "fast":
            harness.wait_for(lambda: metric(ctl, "sluice_notifications_delivered_total") >= n,
                             timeout=600, interval=0.2, what="deliveries")
        wall = time.perf_counter() - t_all
        cpu = cpu_ms(ctl.proc.pid) - cpu0
        lat.sort()
        print("%-8s POST 201 ms min/median/p99/max %.2f / %.2f / %.2f / %.2f; sluiced CPU %.0f ms; "
              "all %d %s in %.1f s; delivered %d, dropped %d"
              % (label, lat[0], statistics.median(lat), lat[int(0.99 * (n - 1))], lat[-1], cpu, n,
                 "delivered" if label == "fast" else "started", wall,
                 metric(ctl, "sluice_notifications_delivered_total"),
                 metric(ctl, "sluice_notifications_dropped_total")))
    finally:
        agent.close()
        ctl.stop()


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    runs = sys.argv[2].split(",") if len(sys.argv) > 2 else ["none", "blocked", "fast"]
    with tempfile.TemporaryDirectory() as tmp:
        gate = os.path.join(tmp, "never")
        notify = {"none": None,
                  "blocked": {"command": "while [ ! -e %s ]; do sleep 1; done" % gate,
                              "queue": 100, "timeout": 3600},
                  "fast": {"command": "cat >/dev/null"}}
        for r in runs:
            run(tmp, r, notify[r], n)


if __name__ == "__main__":
    main()
