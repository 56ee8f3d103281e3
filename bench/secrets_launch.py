#!/usr/bin/python3
"""
secrets_launch.py - what a job's secrets cost: creating a secret, and the
time from submission to its task running with and without secrets.

    SLUICE_BUILD=build bench/secrets_launch.py [--reps 30] [--keys 8] [--value-bytes 4096]

A private sluiced and one agent on 127.0.0.1 (build/). Per figure:

  * create: POST /v1/secrets of KEYS keys of random text values (base64
    of VALUE_BYTES random bytes, 4/3 as long), to the 201 (validation, one AES-256-GCM seal per value,
    the durable commit);
  * submit to running, plain: a job of `sleep 60` from its POST to the
    state running with the task's pid known (polling GET /v1/jobs/ID every
    millisecond), then cancelled;
  * submit to running, with secrets: the same job with two references to
    the secret, one key as a variable and every key as files (the launch
    opens KEYS values, the agent writes KEYS files of mode 0400).

Prints min / median / max of each.
"""

import argparse
import base64
import os
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))

import harness  # noqa: E402


def stats(xs):
    xs = sorted(xs)
    return "%.2f / %.2f / %.2f ms" % (xs[0] * 1e3, statistics.median(xs) * 1e3, xs[-1] * 1e3)


def to_running(ctl, spec):
    t0 = time.monotonic()
    j = ctl.submit(spec, tenant="alice")
    while True:
        b = ctl.job(j["id"])
        pl = b.get("placement") or []
        if b["state"] == "running" and pl and all(p.get("pid") for p in pl):
            t = time.monotonic() - t0
            break
        assert b["state"] in ("pending", "running"), b
        if time.monotonic() - t0 > 30:
            raise AssertionError("job %d did not start: %s" % (j["id"], b))
        time.sleep(0.001)
    ctl.request("DELETE", "/v1/jobs/%d" % j["id"], token=ctl.admin_token)
    ctl.wait_job(j["id"], ["cancelled", "failed", "succeeded"])
    return t


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--keys", type=int, default=8)
    ap.add_argument("--value-bytes", type=int, default=4096)
    a = ap.parse_args()
    print("load before: %s" % open("/proc/loadavg").read().strip())
    d = tempfile.mkdtemp(prefix="sluice-secrets-bench-")
    ctl = harness.Controller(os.path.join(d, "ctl"),
                             config_overrides={"secrets": {"max_per_tenant": a.reps + 10,
                                                           "max_bytes": "1Mi"}})
    agent = None
    try:
        ctl.start()
        agent = harness.Agent(ctl, "n1", gpus=0).start()
        data = {"k%d" % i: base64.b64encode(os.urandom(a.value_bytes)).decode()
                for i in range(a.keys)}
        create = []
        for i in range(a.reps + 1):
            t0 = time.monotonic()
            st, body = ctl.request("POST", "/v1/secrets", {"name": "s%d" % i, "data": data},
                                   token=ctl.token("alice"))
            create.append(time.monotonic() - t0)
            assert st == 201, body
        base = {"command": ["sleep", "60"], "cpus": "0.1", "memory": "64Mi"}
        with_refs = dict(base, secrets=[{"secret": "s0", "key": "k0", "env": "K0"},
                                        {"secret": "s0", "path": "/etc/s"}])
        plain, secret = [], []
        for i in range(a.reps + 2):  # the first two warm up
            p, s = to_running(ctl, base), to_running(ctl, with_refs)
            if i >= 2:
                plain.append(p)
                secret.append(s)
        print("%d keys of %d bytes, %d runs each:" % (a.keys, a.value_bytes, a.reps))
        print("  %-36s %s" % ("create (POST /v1/secrets to 201)", stats(create[1:])))
        print("  %-36s %s" % ("submit to running, plain", stats(plain)))
        print("  %-36s %s" % ("submit to running, with secrets", stats(secret)))
    finally:
        if agent:
            agent.stop()
        ctl.stop()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
