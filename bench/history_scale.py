#!/usr/bin/python3
"""
history_scale.py - what `sluice history` (GET /v1/history) costs on a large
history.

Builds a state database with sluiced's own schema (a Controller of the
e2e harness, started once with --init and stopped) holding JOBS finished
jobs (default 1,000,000) spread evenly over the last 30 days, four tenants,
names train / eval / sweep (and "rare" for one job in 1,000), one task of
1 to 8 GPUs each (a tasks row with its GPU mask), one job in 17 failed.
Then starts sluiced on it and times, over REPS runs each:

  GET /v1/history, the first page (1,000 jobs) of the last 24 hours
  GET /v1/history, the first page of the last 30 days (every job)
  GET /v1/history, the page after the middle job of the 30 days (after=)
  GET /v1/history?name=rare over 30 days: few matches, so a page stops
      at its scan bound (200,000 rows) and says where to go on
  GET /v1/history?state=failed&tenant=nlp over 30 days, first page
  `sluice history -S now-1days` (whole command: about JOBS / 30 jobs,
      every page, printed)

as the time of the request on a kept-alive connection (the server's part)
or of the whole command. While the requests run, another connection asks
GET /healthz in a loop: its slowest answer shows what a history read costs
everyone else (the read runs on a thread of its own).

Usage: bench/history_scale.py [JOBS] [REPS]   (from the repository root
after `make build`; writes only under a temporary directory). Prints min /
median / max per measure.
"""

import http.client
import json
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "e2e"))
import harness  # noqa: E402
from report_scale import filled_controller, poll_health, stats  # noqa: E402  (bench/, beside this file)

TENANTS = [("vision", 2), ("nlp", 1), ("speech", 1), ("research", 4)]
NAMES = ["train", "eval", "sweep"]


def spec_of(name, tenant, gpus):
    return json.dumps({
        "name": name, "tenant": tenant, "tasks": 1, "min_tasks": 1, "cpus": "8",
        "memory": "64Gi", "gpus": gpus, "gpu_share": None, "gpu_memory": None, "gpu_models": [],
        "pool": None, "priority": 0, "time_limit": 0, "command": ["python", "train.py"],
        "image": None, "env": {}, "on_node_failure": "requeue"}, separators=(",", ":"))


def fill(db, njobs):
    rng = random.Random(10)
    now = int(time.time() * 1e6)
    span = 30 * 86400 * 1000000
    con = sqlite3.connect(db)
    con.execute("PRAGMA synchronous=OFF")
    batch = 100000
    for lo in range(1, njobs + 1, batch):
        jobs, tasks = [], []
        for i in range(lo, min(lo + batch, njobs + 1)):
            end = now - span + (span * i) // (njobs + 1)
            run = rng.randint(60, 4 * 3600) * 1000000
            start = end - run
            submit = start - rng.randint(0, 600) * 1000000
            tenant = TENANTS[i % len(TENANTS)][0]
            gpus = rng.choice((1, 1, 2, 4, 8))
            name = "rare" if i % 1000 == 0 else NAMES[i % 3]
            state = "failed" if i % 17 == 0 else "succeeded"
            jobs.append((i, tenant, spec_of(name, tenant, gpus), state, submit, start, end,
                         "task 0 exited with code 1" if state == "failed" else "",
                         1 if state == "failed" else 0, 0, 0))
            tasks.append((i, 0, "node%04d" % (i % 1000), (1 << gpus) - 1, 1000, 0, "exited",
                          1000 + i % 30000, 0, 0, start, end))
        con.executemany("INSERT INTO jobs VALUES (?,?,?,?,?,?,?,?,?,?,?)", jobs)
        con.executemany("INSERT INTO tasks(job, idx, node, gpu_mask, gpu_milli, gpu_mem, state, pid,"
                        " exit_code, signal, start_us, end_us) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", tasks)
        con.commit()
    con.close()


def main():
    njobs = int(sys.argv[1]) if len(sys.argv) > 1 else 1000000
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    with tempfile.TemporaryDirectory() as tmp:
        ctl = filled_controller(tmp, njobs, fill, TENANTS)
        con = sqlite3.connect(ctl.db_path)
        mid = njobs // 2
        mid_end = con.execute("SELECT end_us FROM jobs WHERE id = ?", (mid,)).fetchone()[0]
        con.close()
        ctl.start(timeout=120)
        try:
            now = int(time.time())
            day, month = "since=%d&until=%d" % (now - 86400, now), "since=%d&until=%d" % (now - 30 * 86400, now)
            conn = http.client.HTTPConnection("127.0.0.1", ctl.port, timeout=600)
            health = []
            stop = threading.Event()
            th = threading.Thread(target=poll_health, args=(ctl.port, stop, health))
            th.start()
            for what, q in (("first page, 24 hours", day),
                            ("first page, 30 days", month),
                            ("a page after job %d (keyset), 30 days" % mid,
                             month + "&after=%d:%d" % (mid_end, mid)),
                            ("name=rare, 30 days (one page)", month + "&name=rare"),
                            ("state=failed&tenant=nlp, 30 days", month + "&state=failed&tenant=nlp")):
                srv = []
                for _ in range(reps):
                    t0 = time.monotonic()
                    conn.request("GET", "/v1/history?" + q,
                                 headers={"Authorization": "Bearer " + ctl.admin_token})
                    body = json.loads(conn.getresponse().read())
                    srv.append(time.monotonic() - t0)
                print("GET /v1/history %s: %d jobs, %d rows examined, next_after %s"
                      % (what, len(body["jobs"]), body["scanned"],
                         "set" if body["next_after"] else "null"))
                print("  %s" % stats(srv))
            conn.close()
            env = dict(os.environ, SLUICE_SERVER=ctl.url, SLUICE_TOKEN=ctl.admin_token,
                       SLUICE_DIR=os.path.join(tmp, "none"), TZ="UTC")
            exe = os.path.join(harness.build_dir(), "sluice")
            cli = []
            for _ in range(reps):
                t0 = time.monotonic()
                r = subprocess.run([exe, "history", "-S", "now-1days", "-P", "-n"], env=env,
                                   capture_output=True, text=True, timeout=600)
                cli.append(time.monotonic() - t0)
                assert r.returncode == 0, r.stderr
            print("sluice history -S now-1days (whole command, %d jobs printed): %s"
                  % (len(r.stdout.splitlines()), stats(cli)))
            stop.set()
            th.join()
            print("GET /healthz meanwhile (%d answers): %s"
                  % (len(health), stats(health) if health else "none"))
        finally:
            ctl.stop()


if __name__ == "__main__":
    main()
