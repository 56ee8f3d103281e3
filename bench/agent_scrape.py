#!/usr/bin/python3
"""
bench/agent_scrape.py - what the agent's exporter costs (docs/metrics-agent.md):
a controller and one agent on the fake NVML (tests/e2e/fixtures/fake_nvml.c,
8 GPUs with scripted readings, sampled every 0.2 s), 8 one-GPU tasks and
--cpu-tasks CPU tasks of `sleep`, then --scrapes GET /metrics one after
another (a new connection each, as the exporter closes every one), timed
from connect to the last byte. Then the same 100-job start-up (one-GPU
jobs of `true`, submitted one after another, until all succeeded) is timed
once with no metrics client and once while --hostile clients each hold a
connection with a request sent and never read their reply.

    /usr/bin/python3 bench/agent_scrape.py [--scrapes N] [--cpu-tasks N] [--hostile N]

Prints the scrape's median and 99th percentile in ms and its size, and
both start-ups in s. Needs build/ (SLUICE_BUILD to change) and a C compiler.
"""
import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e", "fixtures"))
import harness  # noqa: E402
import e2e_util as u  # noqa: E402


def scrape_ms(port):
    t0 = time.perf_counter()
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    n = 0
    while True:
        b = s.recv(65536)
        if not b:
            break
        n += len(b)
    s.close()
    return (time.perf_counter() - t0) * 1000, n


def startup(ctl, jobs):
    t0 = time.perf_counter()
    ids = [ctl.submit({"gpus": 1, "command": ["true"]})["id"] for _ in range(jobs)]
    for j in ids:
        ctl.wait_job(j, "succeeded", timeout=60)
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scrapes", type=int, default=1000)
    ap.add_argument("--cpu-tasks", type=int, default=100)
    ap.add_argument("--hostile", type=int, default=60)
    ap.add_argument("--jobs", type=int, default=100)
    a = ap.parse_args()
    root = tempfile.mkdtemp(prefix="sluice-bench-scrape-")
    nvml = os.path.join(root, "nvml")
    os.makedirs(nvml)
    subprocess.run(["cc", "-shared", "-fPIC", "-o", os.path.join(nvml, "libnvidia-ml.so.1"),
                    os.path.join(HERE, "..", "tests", "e2e", "fixtures", "fake_nvml.c")], check=True)
    script = os.path.join(root, "nvml.txt")
    with open(script, "w") as f:
        f.write("* util=41 mem_used=24696061952 power_mw=350000 temp=60\n")
    ctl = harness.Controller(os.path.join(root, "ctl"))
    port = harness.free_port()
    agent = harness.Agent(ctl, "b1", gpus=0, cpus="256",
                          extra_args=["--metrics-listen", "127.0.0.1:%d" % port,
                                      "--metrics-interval", "0.2"],
                          env={"LD_LIBRARY_PATH": nvml, "FAKE_NVML_SCRIPT": script})
    try:
        ctl.start()
        agent.start()
        base = startup(ctl, a.jobs)
        held = [ctl.submit({"gpus": 1, "command": ["sleep", "600"]})["id"] for _ in range(8)]
        held += [ctl.submit({"cpus": "1", "command": ["sleep", "600"]})["id"]
                 for _ in range(a.cpu_tasks)]
        for j in held:
            ctl.wait_job(j, "running", timeout=60)
        time.sleep(0.5)
        runs = [scrape_ms(port) for _ in range(a.scrapes)]
        ms = sorted(r[0] for r in runs)
        for j in held:
            ctl.request("DELETE", "/v1/jobs/%d" % j, token=ctl.admin_token)
        for j in held:
            ctl.wait_job(j, "cancelled", timeout=60)
        socks = []
        for _ in range(a.hostile):
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            socks.append(s)
        hostile = startup(ctl, a.jobs)
        for s in socks:
            s.close()
        print("scrape of 8 GPUs with %d running tasks: median %.3f ms, p99 %.3f ms, %d bytes"
              % (8 + a.cpu_tasks, statistics.median(ms), ms[int(len(ms) * 0.99) - 1], runs[0][1]))
        print("%d one-GPU jobs start to end: %.3f s alone, %.3f s with %d clients not reading"
              % (a.jobs, base, hostile, a.hostile))
    finally:
        agent.stop()
        ctl.stop()


if __name__ == "__main__":
    main()
