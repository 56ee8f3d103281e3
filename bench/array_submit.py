#!/usr/bin/python3
"""
array_submit.py - what one job-array submission costs sluiced.

Starts a sluiced (the e2e harness's Controller, --init, no agents, so that
nothing runs and every element stays pending) and times, REPS times each,
POST /v1/jobs of an array of N elements (default 10,000) on a kept-alive
connection: the time from sending the request to the 201, which sluiced
sends only after the iteration's COMMIT (the array's row and its N job rows
durable, in one transaction). Two shapes:

  "0-(N-1)"     every element goes into the core's queue at once
  "0-(N-1)%8"   8 elements in the core, the rest held outside it

Then, with REPS arrays of N elements pending, the time of one more plain
submission (its 201, which follows a scheduling cycle over that queue) and
of GET /v1/jobs?view=table&limit=10000 (a page of folded rows).

The machine this runs on may be shared: beside each wall time the
script prints the CPU time sluiced itself spent (user + system, from
/proc/PID/stat), which other processes do not inflate.

Usage: bench/array_submit.py [N] [REPS]   (from the repository root after
`make build`; writes only under a temporary directory). Prints min /
median / max in milliseconds.
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
    """User + system CPU time of process pid so far, in milliseconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000.0 / os.sysconf("SC_CLK_TCK")


def post(conn, token, spec):
    body = json.dumps(spec)
    t0 = time.perf_counter()
    conn.request("POST", "/v1/jobs", body=body,
                 headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
    resp = conn.getresponse()
    data = resp.read()
    dt = (time.perf_counter() - t0) * 1000
    assert resp.status == 201, (resp.status, data[:300])
    return dt, json.loads(data)


def get(conn, token, path):
    t0 = time.perf_counter()
    conn.request("GET", path, headers={"Authorization": "Bearer " + token})
    resp = conn.getresponse()
    data = resp.read()
    assert resp.status == 200, (resp.status, data[:300])
    return (time.perf_counter() - t0) * 1000, data


def show(label, xs):
    print("%-44s min %7.1f  median %7.1f  max %7.1f ms  (%d runs)"
          % (label, min(xs), statistics.median(xs), max(xs), len(xs)))


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    with tempfile.TemporaryDirectory() as tmp:
        ctl = harness.Controller(tmp, config_overrides={
            "limits": {"max_array_size": max(n, 10001), "max_pending_jobs": 10000000}})
        ctl.start()
        try:
            conn = http.client.HTTPConnection("127.0.0.1", ctl.port, timeout=60)
            tok = ctl.tenant_tokens["alice"]
            for shape, text in (("all in the core", "0-%d" % (n - 1)),
                                ("limit 8, the rest held", "0-%d%%8" % (n - 1))):
                xs, cpu = [], []
                for _ in range(reps):
                    c0 = cpu_ms(ctl.proc.pid)
                    dt, body = post(conn, tok, {"command": ["true"], "gpus": 1, "array": text})
                    cpu.append(cpu_ms(ctl.proc.pid) - c0)
                    assert body["array_id"] == body["id"]
                    xs.append(dt)
                show("array of %d, %s" % (n, shape), xs)
                show("  sluiced CPU time for it", cpu)
            xs = [post(conn, tok, {"command": ["true"], "gpus": 1})[0] for _ in range(reps)]
            show("one job, %d array elements pending" % (2 * reps * n), xs)
            xs, size = [], 0
            for _ in range(reps):
                dt, data = get(conn, tok, "/v1/jobs?view=table&limit=10000&state=pending")
                xs.append(dt)
                size = len(data)
            show("queue page (10,000 jobs, %d bytes)" % size, xs)
        finally:
            ctl.stop()


if __name__ == "__main__":
    main()
