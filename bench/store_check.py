#!/usr/bin/python3
"""
store_check.py - what the integrity checks of issue 8 cost at start-up and
what `sluiced backup` costs, on a large state database.

Builds a database with sluiced's own schema (sluiced --init creates it) and
JOBS job rows (default 200,000; the last 1,000 pending, the rest finished
long ago, so that start-up loads only the pending ones), then measures:

  quick_check   PRAGMA quick_check through Python's sqlite3 (warm cache)
  startup       sluiced started on it until /healthz answers (quick_check
                and the load of the pending jobs included)
  backup        `sluiced backup COPY --state DB` (wall time)

Usage: bench/store_check.py [JOBS]   (run from the repository root after
`make build`; writes only under a temporary directory). Prints one line
per measure, best of 3.
"""

import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "e2e"))
from harness import free_port  # noqa: E402  (one ephemeral-port picker for tests and benches)

SLUICED = os.path.join(os.environ.get("SLUICE_BUILD", "build"), "sluiced")


def wait_healthy(port, proc, limit_s=60.0):
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit("sluiced exited with %s" % proc.returncode)
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/healthz" % port, timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.005)
    raise SystemExit("sluiced did not answer /healthz")


def start(db, extra=()):
    port, aport = free_port(), free_port()
    proc = subprocess.Popen([SLUICED, "--state", db, "--listen", "127.0.0.1:%d" % port,
                             "--agent-listen", "127.0.0.1:%d" % aport] + list(extra),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return proc, port


def build(db, njobs):
    proc, port = start(db, ["--init"])
    wait_healthy(port, proc)
    proc.terminate()
    proc.wait()
    spec = json.dumps({
        "name": "train-resnet", "tenant": "default", "tasks": 4, "min_tasks": 4, "cpus": "8",
        "memory": "64Gi", "gpus": 2, "gpu_share": None, "gpu_memory": None,
        "gpu_models": ["A100"], "pool": None, "priority": 0, "time_limit": 0,
        "command": ["python", "train.py", "--epochs", "90", "--batch-size", "256"],
        "image": None, "env": {"WANDB_PROJECT": "resnet", "NCCL_DEBUG": "INFO"},
        "on_node_failure": "requeue"}, separators=(",", ":"))
    now = int(time.time() * 1e6)
    old = now - 30 * 86400 * 1000000  # finished a month ago: not loaded at start-up
    con = sqlite3.connect(db)
    rows = []
    for i in range(1, njobs + 1):
        if i > njobs - 1000:
            rows.append((i, "default", spec, "pending", now, None, None, "", None, 0, 0))
        else:
            rows.append((i, "default", spec, "succeeded", old, old, old, "", 0, 0, 0))
    con.executemany("INSERT INTO jobs VALUES (?,?,?,?,?,?,?,?,?,?,?)", rows)
    con.commit()
    con.close()


def best_of(n, fn):
    return min(fn() for _ in range(n))


def main():
    njobs = int(sys.argv[1]) if len(sys.argv) > 1 else 200000
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "sluiced.db")
        build(db, njobs)
        size_mib = os.path.getsize(db) / (1024 * 1024)
        print("database: %d jobs (1,000 pending), %.1f MiB" % (njobs, size_mib))

        def qc():
            con = sqlite3.connect(db)
            t0 = time.monotonic()
            assert con.execute("PRAGMA quick_check").fetchall() == [("ok",)]
            dt = time.monotonic() - t0
            con.close()
            return dt

        print("quick_check: %.3f s" % best_of(3, qc))

        def startup():
            t0 = time.monotonic()
            proc, port = start(db)
            wait_healthy(port, proc)
            dt = time.monotonic() - t0
            proc.terminate()
            proc.wait()
            return dt

        print("startup to /healthz: %.3f s" % best_of(3, startup))

        def backup():
            copy = os.path.join(tmp, "copy.db")
            if os.path.exists(copy):
                os.remove(copy)
            t0 = time.monotonic()
            r = subprocess.run([SLUICED, "backup", copy, "--state", db], capture_output=True,
                               text=True)
            dt = time.monotonic() - t0
            assert r.returncode == 0, r.stderr
            return dt

        print("backup: %.3f s" % best_of(3, backup))


if __name__ == "__main__":
    main()
