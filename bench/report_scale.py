#!/usr/bin/python3
"""
report_scale.py - what `sluice report` costs on a large history.

Builds a state database with sluiced's own schema (a Controller of the
e2e harness, started once with --init and stopped) holding JOBS finished
jobs (default 1,000,000) spread evenly over the last 30 days, four tenants,
one task of 1 to 8 GPUs each (a tasks row with its GPU mask, as the agent
placement writes it), a job_sched row for every job and a job_eff row for
half of them. Then starts sluiced on it and times, over REPS runs each:

  `sluice report --since 24h`   (about JOBS / 30 jobs in the window)
  `sluice report --since 30d`   (every job)

as the wall time of the whole command (process start, request, the
server's read and aggregation, printing), and the server's part alone as
the time of GET /v1/report on a kept-alive connection. While each report
of the second series runs, another connection asks GET /healthz in a
loop: its slowest answer shows what a report costs everyone else (the
report runs on its own thread, so the event loop goes on answering).

Usage: bench/report_scale.py [JOBS] [REPS]   (from the repository root after
`make build`; writes only under a temporary directory). Prints min /
median / max per measure.
"""

import http.client
import json
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "e2e"))
import harness  # noqa: E402

TENANTS = [("vision", 2), ("nlp", 1), ("speech", 1), ("research", 4)]


def fill(db, njobs):
    spec = json.dumps({
        "name": "train", "tenant": "vision", "tasks": 1, "min_tasks": 1, "cpus": "8",
        "memory": "64Gi", "gpus": 2, "gpu_share": None, "gpu_memory": None, "gpu_models": [],
        "pool": None, "priority": 0, "time_limit": 0, "command": ["python", "train.py"],
        "image": None, "env": {}, "on_node_failure": "requeue"}, separators=(",", ":"))
    rng = random.Random(10)
    now = int(time.time() * 1e6)
    span = 30 * 86400 * 1000000
    con = sqlite3.connect(db)
    con.execute("PRAGMA synchronous=OFF")
    batch = 100000
    for lo in range(1, njobs + 1, batch):
        jobs, tasks, sched, eff = [], [], [], []
        for i in range(lo, min(lo + batch, njobs + 1)):
            end = now - span + (span * i) // (njobs + 1)
            run = rng.randint(60, 4 * 3600) * 1000000
            wait = rng.randint(0, 600) * 1000000
            start = end - run
            submit = start - wait
            tenant = TENANTS[i % len(TENANTS)][0]
            gpus = rng.choice((1, 1, 2, 4, 8))
            state = "failed" if i % 17 == 0 else "succeeded"
            jobs.append((i, tenant, spec, state, submit, start, end, "", 0, 0, 0))
            tasks.append((i, 0, "node%04d" % (i % 1000), (1 << gpus) - 1, 1000, 0, "exited",
                          1000 + i % 30000, 0, 0, start, end))
            sched.append((i, rng.randint(50, 5000)))
            if i % 2 == 0:
                eff.append((i, rng.random(), 1.0, rng.randint(1, 80) << 30, 80 << 30, 100.0,
                            1 << 30, 60))
        con.executemany("INSERT INTO jobs VALUES (?,?,?,?,?,?,?,?,?,?,?)", jobs)
        con.executemany("INSERT INTO tasks(job, idx, node, gpu_mask, gpu_milli, gpu_mem, state, pid,"
                        " exit_code, signal, start_us, end_us) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", tasks)
        con.executemany("INSERT INTO job_sched VALUES (?,?)", sched)
        con.executemany("INSERT INTO job_eff VALUES (?,?,?,?,?,?,?,?)", eff)
        con.commit()
    con.close()


def poll_health(port, stop, out):
    """GET /healthz on one kept-alive connection until stop is set, each
    answer's time appended to out."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    while not stop.is_set():
        t0 = time.monotonic()
        conn.request("GET", "/healthz")
        conn.getresponse().read()
        out.append(time.monotonic() - t0)
        time.sleep(0.005)
    conn.close()


def stats(xs):
    return "min %.3f s / median %.3f s / max %.3f s" % (min(xs), statistics.median(xs), max(xs))


def filled_controller(tmp, njobs, fill_db, tenants=TENANTS):
    """A stopped sluiced in tmp whose database fill_db(db, njobs) has filled
    with njobs finished jobs (its schema made by one start first)."""
    ctl = harness.Controller(tmp, tenants=[{"name": n, "weight": w} for n, w in tenants])
    ctl.start()
    ctl.stop()
    t0 = time.monotonic()
    fill_db(ctl.db_path, njobs)
    print("database: %d finished jobs over 30 days, %.0f MiB (filled in %.0f s)"
          % (njobs, os.path.getsize(ctl.db_path) / 2**20, time.monotonic() - t0))
    return ctl


def main():
    njobs = int(sys.argv[1]) if len(sys.argv) > 1 else 1000000
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    with tempfile.TemporaryDirectory() as tmp:
        ctl = filled_controller(tmp, njobs, fill)
        ctl.start(timeout=120)
        try:
            env = dict(os.environ, SLUICE_SERVER=ctl.url, SLUICE_TOKEN=ctl.admin_token,
                       SLUICE_DIR=os.path.join(tmp, "none"))
            exe = os.path.join(harness.build_dir(), "sluice")
            for since, secs in (("24h", 86400), ("30d", 30 * 86400)):
                cli, srv = [], []
                for _ in range(reps):
                    t0 = time.monotonic()
                    r = subprocess.run([exe, "report", "--since", since], env=env,
                                       capture_output=True, text=True, timeout=600)
                    cli.append(time.monotonic() - t0)
                    assert r.returncode == 0, r.stderr
                conn = http.client.HTTPConnection("127.0.0.1", ctl.port, timeout=600)
                health = []
                for _ in range(reps):
                    stop = threading.Event()
                    th = threading.Thread(target=poll_health, args=(ctl.port, stop, health))
                    th.start()
                    t0 = time.monotonic()
                    conn.request("GET", "/v1/report?since=%d" % secs,
                                 headers={"Authorization": "Bearer " + ctl.admin_token})
                    body = json.loads(conn.getresponse().read())
                    srv.append(time.monotonic() - t0)
                    stop.set()
                    th.join()
                conn.close()
                ran = body["throughput"]["jobs_ran"] + body["throughput"]["cancelled"]
                print("--since %s: %d jobs in the window" % (since, ran))
                print("  sluice report (whole command): %s" % stats(cli))
                print("  GET /v1/report (server):       %s" % stats(srv))
                print("  GET /healthz meanwhile (%d answers): %s"
                      % (len(health), stats(health) if health else "none"))
        finally:
            ctl.stop()


if __name__ == "__main__":
    main()
