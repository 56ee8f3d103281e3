#!/usr/bin/python3
"""list_cost.py - what one listing of N pending jobs costs sluiced, in
instructions (valgrind's callgrind), for one or more builds.

Wall-clock figures of the list paths (run.sh --tests queue) move with the
machine's other load by a factor of two on a shared 2-core machine; the
instructions a request executes do not. For each build this fills a
state of N pending jobs once (POST /v1/jobs, no agent, so that every job
stays pending with a reason), then restarts that build's sluiced on a copy
of it under callgrind with instrumentation off, warms each view with one
request, and counts the instructions of --reps requests of each view:

  json    GET /v1/jobs?limit=10000            (sluice queue --json pages)
  table   GET /v1/jobs?view=table&state=pending,running&limit=10000
                                              (sluice queue)

Prints instructions per request and per job for each build and view.

  bench/live/list_cost.py build                  # this build, 10,000 jobs
  bench/live/list_cost.py /tmp/before build      # before/after, same jobs

Needs valgrind (callgrind_control). Listens on 127.0.0.1 only; stops only
the processes it started, by PID. Scratch in a temporary directory.
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "e2e"))
sys.path.insert(0, HERE)
import harness  # noqa: E402
import httpload  # noqa: E402

VIEWS = (("json", "/v1/jobs?limit=10000"),
         ("table", "/v1/jobs?view=table&state=pending,running&limit=10000"))


def fill(build, d, n):
    os.environ["SLUICE_BUILD"] = build
    c = harness.Controller(d)
    c.start()
    conn = httpload.Conn(c.port, c.admin_token)
    for i in range(n):
        st, _, b = conn.request("POST", "/v1/jobs", {
            "name": "j%d" % i, "tenant": ("alice", "bob")[i % 2], "gpus": 1,
            "command": ["true"]})
        if st not in (200, 201):
            raise SystemExit("list_cost: submission %d -> %d: %s" % (i, st, b[:200]))
    conn.close()
    c.stop()
    return c


def total_ir(path):
    """The totals line's instruction count of a callgrind output file
    (its summary line counts only the part dumped last)."""
    with open(path) as fh:
        for line in fh:
            m = re.match(r"totals:\s+(\d+)", line)
            if m:
                return int(m.group(1))
    raise SystemExit("list_cost: no totals in %s" % path)


def measure(build, proto, d, reps):
    """Instructions per request of each view, build's sluiced on a copy of
    proto's state in d."""
    shutil.copytree(proto.dir, d)
    os.environ["SLUICE_BUILD"] = build
    c = harness.Controller(d)
    c.admin_token, c.cluster_token = proto.admin_token, proto.cluster_token
    c.port, c.agent_port = harness.free_port(), harness.free_port()
    c.config.update({"listen": "127.0.0.1:%d" % c.port,
                     "agent_listen": "127.0.0.1:%d" % c.agent_port,
                     "state": os.path.join(d, "sluiced.db"),
                     "admin_token": proto.admin_token, "cluster_token": proto.cluster_token})
    c.config_path = os.path.join(d, "sluiced.yaml")
    c._write_config()
    out = {}
    for view, path in VIEWS:
        cg = os.path.join(d, "cg.%s.out" % view)
        log = open(os.path.join(d, "cg.%s.log" % view), "wb")
        p = subprocess.Popen(["valgrind", "--tool=callgrind", "--instr-atstart=no",
                              "--callgrind-out-file=" + cg,
                              os.path.join(build, "sluiced"), "--config", c.config_path],
                             stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            harness.wait_for(lambda: c.request("GET", "/healthz", timeout=2.0)[0] == 200,
                             timeout=180, what="sluiced under callgrind")
            conn = httpload.Conn(c.port, c.admin_token)
            raw = httpload.build_request("GET", path, c.admin_token)
            conn.request_raw(raw)  # warm: a job's fixed part is formatted once
            subprocess.run(["callgrind_control", "-i", "on", str(p.pid)], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for _ in range(reps):
                conn.request_raw(raw)
            subprocess.run(["callgrind_control", "-i", "off", str(p.pid)], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            conn.close()
        finally:
            p.send_signal(signal.SIGTERM)
            p.wait(120)
            log.close()
        out[view] = total_ir(cg) / reps
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("builds", nargs="+", help="build directories (sluiced inside)")
    ap.add_argument("--jobs", type=int, default=10000, help="pending jobs (at most 10,000: one page)")
    ap.add_argument("--reps", type=int, default=3, help="requests of each view counted")
    a = ap.parse_args()
    if not 1 <= a.jobs <= 10000:
        raise SystemExit("list_cost: --jobs must be from 1 to 10000 (one page)")
    builds = [os.path.abspath(b) for b in a.builds]
    tmp = tempfile.mkdtemp(prefix="sluice-list-cost-")
    try:
        proto = fill(builds[-1], os.path.join(tmp, "proto"), a.jobs)
        print("| build | view | instructions a request | a job |")
        print("|---|---|---|---|")
        for i, b in enumerate(builds):
            r = measure(b, proto, os.path.join(tmp, "b%d" % i), a.reps)
            for view, _ in VIEWS:
                print("| %s | %s | %.2f M | %.0f |" % (b, view, r[view] / 1e6, r[view] / a.jobs))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
