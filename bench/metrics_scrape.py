#!/usr/bin/python3
"""
bench/metrics_scrape.py - what one GET /metrics costs a busy controller:
a real sluiced with 1,000 nodes (8 declared H100s, 64 CPUs, 512 GiB each)
registered by scripted agents (one socket each, speaking docs/protocol.md
from one selector thread: hello, then `started` for every launch) and
10,000 jobs of 10 tenants (30% 1 GPU, 10% 2 GPUs, 60% 8 GPUs; 1-16 CPUs,
4-64 GiB: 75 task shapes; a fixed seed): the small ones all run, most
8-GPU ones wait. Once the queue has settled, every 7th started task ends:
free GPUs scattered in holes the waiting 8-GPU jobs cannot use (FGD's
fragmentation), and once it has settled again /metrics is fetched --scrapes times on one
keep-alive connection; the figure is the round trip (request sent to the
last byte read), which bounds what the scrape costs the controller's loop.
The controller's own CPU time across the scrapes (/proc/PID/stat) is
printed too: it excludes the client's share of the round trip.

    /usr/bin/python3 bench/metrics_scrape.py [--nodes N] [--jobs N] [--scrapes N]
                                             [--distinct] [--perf FILE]

--perf FILE records the controller with `perf record -g` during the
scrapes (read it with `perf report -i FILE`).

Prints min / median / p95 / max in ms, the reply's size and series count.
Needs build/ (`make`; SLUICE_BUILD to change) and Debian's python3-yaml.
"""
import argparse
import http.client
import json
import os
import random
import selectors
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
import harness  # noqa: E402

TENANTS = ["t%d" % i for i in range(10)]


class Agents:
    """n scripted agents on one selector thread: each says hello for its
    node and answers every launch with `started`."""

    def __init__(self, ctl, n):
        self.sel = selectors.DefaultSelector()
        self.buf = {}
        self.launches = 0
        self.tasks = []  # (socket, job, task) of every task started
        self.lock = threading.Lock()
        host, port = ctl.agent_addr.rsplit(":", 1)
        for i in range(n):
            s = socket.create_connection((host, int(port)), timeout=30)
            node = {"name": "n%04d" % i, "cpus": "64", "memory": "512Gi", "gpus": 8,
                    "gpu_model": "H100", "gpu_memory": "80Gi"}
            s.sendall((json.dumps({"type": "hello", "token": ctl.cluster_token,
                                   "version": "0.1.0", "node": node, "tasks": []}) + "\n").encode())
            f = s.makefile("rb")
            welcome = json.loads(f.readline())
            assert welcome.get("type") == "welcome", welcome
            s.setblocking(False)
            self.buf[s] = b""
            self.sel.register(s, selectors.EVENT_READ)
        self.stop = threading.Event()
        self.t = threading.Thread(target=self.loop, daemon=True)
        self.t.start()

    def loop(self):
        pid = 10000
        while not self.stop.is_set():
            for key, _ in self.sel.select(timeout=0.1):
                s = key.fileobj
                try:
                    data = s.recv(65536)
                except BlockingIOError:
                    continue
                if not data:
                    self.sel.unregister(s)
                    continue
                self.buf[s] += data
                *lines, self.buf[s] = self.buf[s].split(b"\n")
                out = []
                for line in lines:
                    msg = json.loads(line)
                    if msg.get("type") == "launch":
                        pid += 1
                        self.launches += 1
                        self.tasks.append((s, msg["job"], msg["task"]))
                        out.append(json.dumps({"type": "started", "job": msg["job"],
                                               "task": msg["task"], "pid": pid,
                                               "time": time.time()}))
                if out:
                    self.send(s, out)

    def send(self, s, lines):
        with self.lock:
            s.setblocking(True)
            s.sendall(("\n".join(lines) + "\n").encode())
            s.setblocking(False)

    def end_some(self, every):
        """Ends every every-th task started so far (exit code 0): holes
        of free GPUs across the nodes, which the queue refills in part."""
        for s, job, task in self.tasks[::every]:
            self.send(s, [json.dumps({"type": "exited", "job": job, "task": task,
                                      "exit_code": 0, "signal": 0, "time": time.time()})])

    def close(self):
        self.stop.set()
        self.t.join(5)
        for s in list(self.buf):
            s.close()


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def submit_all(ctl, n_jobs, seed, distinct):
    """Submits n_jobs round-robin over the tenants, one thread (and one
    keep-alive connection) per tenant, so that group commits batch them."""
    rng = random.Random(seed)
    per = {t: [] for t in TENANTS}
    for i in range(n_jobs):
        t = TENANTS[i % len(TENANTS)]
        gpus = rng.choices([1, 2, 8], weights=[3, 1, 6])[0]
        cpus = rng.choice([1, 2, 4, 8, 16])
        mem = rng.choice([4, 8, 16, 32, 64])
        memory = "%dMi" % (1024 * mem + i) if distinct else "%dGi" % mem
        per[t].append({"tenant": t, "command": ["x"], "gpus": gpus, "cpus": str(cpus),
                       "memory": memory, "time_limit": rng.randrange(600, 86400)})
    errs = []

    def run(specs):
        if not specs:
            return
        t = specs[0]["tenant"]
        conn = http.client.HTTPConnection("127.0.0.1", ctl.port, timeout=60)
        hdr = {"Authorization": "Bearer " + ctl.token(t), "Content-Type": "application/json"}
        for spec in specs:
            conn.request("POST", "/v1/jobs", body=json.dumps(spec), headers=hdr)
            r = conn.getresponse()
            body = r.read()
            if r.status != 201:
                errs.append((r.status, body[:200]))
                return
        conn.close()

    # Every tenant's small jobs first (they all fit), then the 8-GPU ones.
    phases = []
    for big in (False, True):
        phases.append({t: [sp for sp in per[t] if (sp["gpus"] == 8) == big] for t in TENANTS})
    for ph in phases:
        th = [threading.Thread(target=run, args=(ph[t],)) for t in TENANTS]
        for x in th:
            x.start()
        for x in th:
            x.join()
    assert not errs, errs[:3]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--jobs", type=int, default=10000)
    ap.add_argument("--scrapes", type=int, default=50)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--distinct", action="store_true",
                    help="every job a shape of its own (memory + i MiB): the worst case of the "
                         "fragmentation gauge's shape gathering")
    ap.add_argument("--perf", help="perf record the controller during the scrapes into this file")
    a = ap.parse_args()
    root = tempfile.mkdtemp(prefix="sluice-metrics-bench-")
    tenants = [{"name": t, "weight": 1 + i % 3} for i, t in enumerate(TENANTS)]
    ctl = harness.Controller(root, tenants=tenants, config_overrides={
        "node_timeout": 3600,
        "limits": {"max_connections_per_peer": 4096, "max_connections": 8192}})
    agents = None
    try:
        ctl.start()
        t0 = time.perf_counter()
        agents = Agents(ctl, a.nodes)
        t1 = time.perf_counter()
        submit_all(ctl, a.jobs, a.seed, a.distinct)
        t2 = time.perf_counter()
        conn = http.client.HTTPConnection("127.0.0.1", ctl.port, timeout=60)
        hdr = {"Authorization": "Bearer " + ctl.admin_token}

        def scrape():
            s = time.perf_counter()
            conn.request("GET", "/metrics", headers=hdr)
            r = conn.getresponse()
            body = r.read()
            assert r.status == 200
            return time.perf_counter() - s, body.decode()

        def settle():
            """Until the job counts by state hold still for 0.5 s."""
            last = None
            for _ in range(600):
                _, text = scrape()
                q = [ln for ln in text.splitlines() if ln.startswith("sluice_jobs{")]
                if q == last:
                    return text
                last = q
                time.sleep(0.5)
            return text

        settle()
        # Churn: every 7th started task ends, so free GPUs are scattered
        # and the pending jobs refill part of them (fragmentation > 0).
        agents.end_some(7)
        text = settle()
        states = {ln.split('"')[1]: float(ln.split()[-1]) for ln in text.splitlines()
                  if ln.startswith("sluice_jobs{")}
        times = []
        perf = None
        if a.perf:
            perf = subprocess.Popen(["perf", "record", "-g", "-q", "-o", a.perf, "-p",
                                     str(ctl.proc.pid)], stdout=subprocess.DEVNULL)
            time.sleep(1)
        c0 = cpu_s(ctl.proc.pid)
        for _ in range(a.scrapes):
            dt, text = scrape()
            times.append(dt * 1000)
        c1 = cpu_s(ctl.proc.pid)
        if perf:
            perf.send_signal(2)  # SIGINT: perf writes its file and exits
            perf.wait(30)
        times.sort()
        series = sum(1 for ln in text.splitlines() if ln and not ln.startswith("#"))
        p95 = times[min(len(times) - 1, int(0.95 * len(times)))]
        print("nodes %d (registered in %.1f s), jobs %d (submitted in %.1f s): %s" % (
            a.nodes, t1 - t0, a.jobs, t2 - t1,
            ", ".join("%s %d" % (k, v) for k, v in states.items() if v)))
        print("scrape round trip over %d scrapes: min %.2f ms, median %.2f ms, p95 %.2f ms, "
              "max %.2f ms; sluiced CPU %.2f ms per scrape; reply %d bytes, %d series" % (
                  a.scrapes, times[0], statistics.median(times), p95, times[-1],
                  (c1 - c0) * 1000 / a.scrapes, len(text), series))
        for ln in text.splitlines():
            if ln.startswith(("sluice_drf_fairness_ratio", "sluice_jain_fairness_index",
                              "sluice_gpu_allocation_ratio", "sluice_gpu_fragmentation_ratio")):
                print("  " + ln)
    finally:
        if agents:
            agents.close()
        ctl.stop()


if __name__ == "__main__":
    main()
