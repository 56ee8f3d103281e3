#!/usr/bin/python3
"""
bench/up_startup.py - how long `sluice up --detach` takes until it returns
(controller healthy, node up): in a new state directory with TLS (the CA
and certificates are made), again in the same directory (reused), and in a
directory whose sluiced.yaml has no TLS (plain HTTP). The three alternate
per repetition so that drift in the machine's load falls on all alike.

    /usr/bin/python3 bench/up_startup.py [--reps N]     (BUILD=dir, default build/)

Prints the median and each run in ms.
"""
import argparse
import os
import sys
import statistics
import subprocess
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "e2e"))
from harness import free_port  # noqa: E402  (one ephemeral-port picker for tests and benches)

HERE = os.path.dirname(os.path.abspath(__file__))
SLUICE = os.path.join(os.environ.get("BUILD", os.path.join(HERE, "..", "build")), "sluice")


def up(args):
    t = time.perf_counter()
    r = subprocess.run([SLUICE, "up", "--detach", "--gpus", "0", "--name", "n"] + args,
                       capture_output=True, text=True, timeout=60)
    ms = (time.perf_counter() - t) * 1000
    if r.returncode != 0:
        raise RuntimeError(r.stderr)
    return ms


def down(d):
    subprocess.run([SLUICE, "down", "--dir", d], capture_output=True, timeout=60)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    res = {"tls, new certificates": [], "tls, reused": [], "plain http": []}
    with tempfile.TemporaryDirectory(prefix="up_startup.") as root:
        for i in range(a.reps):
            d = os.path.join(root, "tls%d" % i)
            try:
                res["tls, new certificates"].append(
                    up(["--dir", d, "--port", str(free_port()), "--agent-port", str(free_port())]))
                down(d)
                res["tls, reused"].append(up(["--dir", d]))
            finally:
                down(d)
            p = os.path.join(root, "plain%d" % i)
            os.makedirs(p)
            with open(os.path.join(p, "sluiced.yaml"), "w") as f:
                f.write("listen: 127.0.0.1:%d\nagent_listen: 127.0.0.1:%d\nstate: %s/sluiced.db\n"
                        "admin_token: adm-bench\ncluster_token: clu-bench\ntenants:\n"
                        "  - name: default\n    token: tok-bench\n" % (free_port(), free_port(), p))
            try:
                res["plain http"].append(up(["--dir", p]))
            finally:
                down(p)
    for k, v in res.items():
        print("%-22s median %6.1f ms  runs %s" % (k, statistics.median(v), " ".join("%.1f" % x for x in v)))


if __name__ == "__main__":
    main()
