#!/usr/bin/python3
"""
bench/tls_startup.py - what TLS costs the 100-task start-up: a controller
and 13 agents x 8 declared H100s on 127.0.0.1, once with plain TCP and
once with TLS on both ports (client certificates required, made by
tests/e2e/fixtures/tlsutil.py with the openssl command); 100 one-GPU jobs
of `sleep 60` are submitted one after another on one keep-alive connection
(HTTPS for the TLS cluster, verified), and the time is taken from just
before the first request until the controller lists all 100 running
(polled every 5 ms). The runs alternate plain, TLS, plain, TLS, ... so that
drift in the machine's load falls on both alike.

    /usr/bin/python3 bench/tls_startup.py [--reps N] [--agents N] [--jobs N]

Prints the median and each run's figure in ms for both. Needs build/
(`make`; SLUICE_BUILD to change) and Debian's python3-yaml.
"""
import argparse
import http.client
import json
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e", "fixtures"))
import harness  # noqa: E402
import tlsutil  # noqa: E402


def one_run(root, tls, n_agents, n_jobs, pki):
    d = tempfile.mkdtemp(dir=root)
    ctl = tlsutil.TLSController(d, pki) if tls else harness.Controller(d)
    agents = []
    try:
        ctl.start()
        for i in range(n_agents):
            name = "n%02d" % (i + 1)
            a = (tlsutil.tls_agent(ctl, name, gpus=8) if tls else harness.Agent(ctl, name, gpus=8))
            agents.append(a)
            a.start(timeout=30)
        if tls:
            conn = http.client.HTTPSConnection("127.0.0.1", ctl.port, timeout=30,
                                               context=ctl.ssl_context)
        else:
            conn = http.client.HTTPConnection("127.0.0.1", ctl.port, timeout=30)
        hdr = {"Authorization": "Bearer " + ctl.token("alice"), "Content-Type": "application/json"}
        body = json.dumps({"tenant": "alice", "gpus": 1, "cpus": "1", "memory": "1Gi",
                           "command": ["sleep", "60"]})
        conn.connect()  # the handshake is not part of the figure, as a kept-alive client's
        t0 = time.perf_counter()
        for _ in range(n_jobs):
            conn.request("POST", "/v1/jobs", body=body, headers=hdr)
            r = conn.getresponse()
            r.read()
            assert r.status == 201, r.status
        adm = {"Authorization": "Bearer " + ctl.token("admin")}
        deadline = t0 + 60
        while time.perf_counter() < deadline:
            conn.request("GET", "/v1/jobs?state=running", headers=adm)
            r = conn.getresponse()
            jobs = json.loads(r.read())["jobs"]
            if len(jobs) >= n_jobs:
                return (time.perf_counter() - t0) * 1000
            time.sleep(0.005)
        raise RuntimeError("not all %d jobs running within 60 s" % n_jobs)
    finally:
        for a in agents:
            a.stop()
        ctl.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--agents", type=int, default=13)
    ap.add_argument("--jobs", type=int, default=100)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tls_startup.") as root:
        pki = tlsutil.make_pki(os.path.join(root, "pki"),
                               clients=["n%02d" % (i + 1) for i in range(a.agents)])
        res = {"plain": [], "tls": []}
        for _ in range(a.reps):
            for tls in (False, True):
                res["tls" if tls else "plain"].append(one_run(root, tls, a.agents, a.jobs, pki))
        for k, v in res.items():
            print("%-5s %d jobs on %d agents: median %.1f ms  runs %s" %
                  (k, a.jobs, a.agents, statistics.median(v), " ".join("%.1f" % x for x in v)))


if __name__ == "__main__":
    main()
