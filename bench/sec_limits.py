#!/usr/bin/python3
"""
bench/sec_limits.py - the controller under hostile clients (issue 8,
finding 3): /healthz latency with 0 and with 2,000 idle sockets open, and
sluiced's RSS with 200 clients that never read their GET /v1/jobs.

    bench/sec_limits.py [--build DIR] [--jobs N] [--probes N] [--nofile N]

Starts its own sluiced (build/sluiced by default) on ephemeral 127.0.0.1
ports in a temporary directory, stopped by PID at the end. Each latency
figure is over --probes (default 500) sequential GET /healthz, each on a
new connection (what a monitoring probe does), timed with
time.perf_counter around connect, send and the whole reply. The 2,000
idle sockets are opened from this process (its RLIMIT_NOFILE raised) to
the API port, then to the agent port, and held while probing. RSS is
VmRSS of /proc/PID/status: before, and with 200 sockets that each sent
GET /v1/jobs?limit=10000 over --jobs (default 5,000) pending jobs of about
2.2 KB and read nothing (receive buffers shrunk to 4 KiB). --nofile N
starts sluiced with RLIMIT_NOFILE N (soft and hard), as on a host whose
default is 1024, to show what happens when idle sockets outnumber the
descriptors; sluiced's log size is printed after each phase.
"""

import argparse
import http.client
import json
import os
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "e2e"))
from harness import free_port  # noqa: E402  (one ephemeral-port picker for tests and benches)

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def rss_mib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def probe(port, n):
    lat = []
    for _ in range(n):
        t0 = time.perf_counter()
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        c.request("GET", "/healthz")
        r = c.getresponse()
        r.read()
        c.close()
        assert r.status == 200
        lat.append((time.perf_counter() - t0) * 1000)
    lat.sort()
    return statistics.median(lat), lat[int(len(lat) * 0.99) - 1], lat[-1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(HERE, "build"))
    ap.add_argument("--jobs", type=int, default=5000)
    ap.add_argument("--probes", type=int, default=500)
    ap.add_argument("--nofile", type=int, default=0)
    a = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))
    d = tempfile.mkdtemp(prefix="sec_limits.")
    port, aport = free_port(), free_port()
    cfg = os.path.join(d, "sluiced.yaml")
    with open(cfg, "w") as f:
        f.write("listen: 127.0.0.1:%d\nagent_listen: 127.0.0.1:%d\nstate: %s/s.db\n"
                "admin_token: adm-bench\ncluster_token: clu-bench\n" % (port, aport, d))
    log = open(os.path.join(d, "log"), "wb")
    def limit():
        if a.nofile:
            resource.setrlimit(resource.RLIMIT_NOFILE, (a.nofile, a.nofile))
    sluiced = os.path.join(a.build, "sluiced")
    # A new state database needs --init since issue 8; a build from before
    # that does not know the flag (and creates the file by itself).
    helptext = subprocess.run([sluiced, "--help"], capture_output=True, text=True).stdout
    init = ["--init"] if "--init" in helptext else []
    proc = subprocess.Popen([sluiced, "--config", cfg] + init,
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            preexec_fn=limit)
    logsize = lambda: os.path.getsize(os.path.join(d, "log")) / 1e6
    try:
        for _ in range(200):
            try:
                probe(port, 1)
                break
            except OSError:
                time.sleep(0.05)
        print("healthz, 0 idle sockets:        p50 %.2f ms  p99 %.2f ms  max %.2f ms" % probe(port, a.probes))
        for name, p in (("API", port), ("agent", aport)):
            cpu0 = cpu_s(proc.pid)
            socks = []
            try:
                for _ in range(2000):
                    socks.append(socket.create_connection(("127.0.0.1", p), timeout=5))
            except OSError as e:
                print("opening idle sockets: %d opened, then %s" % (len(socks), e))
            time.sleep(0.5)
            try:
                r = probe(port, a.probes)
            except OSError as e:
                r = (float("nan"),) * 3
                print("healthz failed: %s" % e)
            print("healthz, 2000 idle on %-5s port: p50 %.2f ms  p99 %.2f ms  max %.2f ms  (sluiced CPU %.2f s, "
                  "log %.1f MB)" % ((name,) + r + (cpu_s(proc.pid) - cpu0, logsize())))
            if r[0] != r[0]:  # healthz failed: sluiced is stalled, the rest would only wait
                for s in socks:
                    s.close()
                break
            for s in socks:
                s.close()
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        hdrs = {"Authorization": "Bearer adm-bench", "Content-Type": "application/json"}
        for i in range(a.jobs):
            c.request("POST", "/v1/jobs", json.dumps({"command": ["x" * 2000, str(i)], "gpus": 1}), hdrs)
            r = c.getresponse()
            r.read()
            assert r.status == 201
        c.request("GET", "/v1/jobs?limit=10000", headers=hdrs)
        r = c.getresponse()
        page = r.read()
        c.close()
        time.sleep(0.5)
        before = rss_mib(proc.pid)
        req = b"GET /v1/jobs?limit=10000 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer adm-bench\r\n\r\n"
        socks = []
        for _ in range(200):
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.connect(("127.0.0.1", port))
            s.sendall(req)
            socks.append(s)
        time.sleep(2.0)
        during = rss_mib(proc.pid)
        r = probe(port, 50)
        print("%d jobs, one page %.1f MB; RSS before %.0f MiB, with 200 unread pages %.0f MiB "
              "(limits.reply_buffer 256 MiB); healthz meanwhile p50 %.2f ms p99 %.2f ms"
              % (a.jobs, len(page) / 1e6, before, during, r[0], r[1]))
        for s in socks:
            s.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
        shutil.rmtree(d, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
