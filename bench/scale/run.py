#!/usr/bin/python3
"""
bench/scale/run.py - the controller's cost as the cluster grows (issue 14,
docs/scale.md): sluiced and `sluice-agent --emulate N` on this machine, for
each N of --sizes.

For each size, on a fresh controller:
  register   emulator start to the last of N nodes welcomed (the emulator's
             log lines), N x 8 GPUs;
  idle       sluiced's CPU (utime+stime from /proc) over --idle-s seconds
             with every node heartbeating at the default interval (2 s);
  burst      --burst one-GPU jobs submitted at once (arrays of 10,000 in
             one POST each): first submission to the last task started
             (the jobs' own start_time), then they end (run time 20 s);
  churn      --churn-rate jobs per second submitted (an array of rate/10
             every 100 ms) for --churn-s seconds, each running 5 s, so
             that as many end as start each second once warm: p50/p99 of
             queueing delay (the job's start_time, the scheduler's start,
             minus submit_time), and p99 to the agent's `started`;
  known      N 8-GPU jobs that run until cancelled (every GPU taken), then
             pending one-GPU jobs up to --known jobs in all (finished ones
             counted): GET /v1/nodes, `sluice queue --limit 100` (one page)
             and /metrics latency (median of 5), sluiced's RSS;
  restart    kill -9, start: to every node connected again with every
             running task re-adopted (GET /v1/jobs?state=running counts);
             node_timeout is --node-timeout (60 s), since an agent fences
             its tasks when the controller is away longer than that.
The 1-minute load average is recorded with each step: other sessions
share the machine. Results: one JSON line per size (--out), and plot.py
draws them.
"""

import argparse
import http.client
import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("SLUICE_BUILD", os.path.join(ROOT, "build"))


def load1():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class Ctl:
    def __init__(self, d, n, node_timeout):
        self.dir = d
        self.port, self.aport = free_port(), free_port()
        self.admin = "adm-" + secrets.token_hex(8)
        self.cluster = "clu-" + secrets.token_hex(8)
        self.cfg = os.path.join(d, "sluiced.yaml")
        conns = n + 256
        with open(self.cfg, "w") as f:
            json.dump({"listen": "127.0.0.1:%d" % self.port,
                       "agent_listen": "127.0.0.1:%d" % self.aport,
                       "state": os.path.join(d, "sluiced.db"),
                       "admin_token": self.admin, "cluster_token": self.cluster,
                       "tenants": [{"name": "bench", "weight": 1, "token": self.admin + "-t"}],
                       "node_timeout": node_timeout,
                       "default_user": "root", "allow_root": True, "max_finished_jobs": 1000000,
                       "limits": {"max_connections": 1024, "max_agent_connections": conns,
                                  "max_connections_per_peer": conns,
                                  "max_pending_jobs": 1000000}}, f)
        self.proc = None
        self.conn = None

    def start(self, init):
        log = open(os.path.join(self.dir, "sluiced.log"), "ab")
        env = dict(os.environ, SLUICE_LOG="warn")
        self.proc = subprocess.Popen([os.path.join(BUILD, "sluiced"), "--config", self.cfg] +
                                     (["--init"] if init else []),
                                     stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     env=env)
        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                if self.get("/healthz")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("sluiced did not start")

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.conn = None

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def req(self, method, path, body=None, tenant=False):
        for attempt in range(2):
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
            try:
                hdrs = {"Authorization": "Bearer " + (self.admin + "-t" if tenant else self.admin)}
                data = None
                if body is not None:
                    data = json.dumps(body).encode()
                    hdrs["Content-Type"] = "application/json"
                self.conn.request(method, path, body=data, headers=hdrs)
                r = self.conn.getresponse()
                return r.status, r.read()
            except (OSError, http.client.HTTPException):
                self.conn.close()
                self.conn = None
                if attempt:
                    raise

    def get(self, path):
        return self.req("GET", path)

    def submit(self, spec):
        st, body = self.req("POST", "/v1/jobs", spec, tenant=True)
        if st != 201:
            raise RuntimeError("submit %s: %s %s" % (spec, st, body[:300]))
        return json.loads(body)

    def metric(self, name, label=None):
        st, body = self.get("/metrics")
        total = 0.0
        for line in body.decode().splitlines():
            if line.startswith(name) and (line[len(name)] in " {") and \
                    (label is None or label in line):
                total += float(line.rsplit(" ", 1)[1])
        return total

    def jobs(self, query):
        """Every job of the list query, through its pages."""
        out, after = [], 0
        while True:
            st, body = self.get("/v1/jobs?limit=10000%s%s" % (
                "&after=%d" % after if after else "", query))
            doc = json.loads(body)
            out += doc["jobs"]
            if doc.get("next_after") is None or not doc["jobs"]:
                return out
            after = doc["next_after"]


class Emu:
    def __init__(self, ctl, n):
        self.log_path = os.path.join(ctl.dir, "emulate.log")
        self.proc = subprocess.Popen(
            [os.path.join(BUILD, "sluice-agent"), "--emulate", str(n),
             "--controller", "127.0.0.1:%d" % ctl.aport, "--token", ctl.cluster,
             "--cpus", "64", "--memory", "512Gi", "--gpus", "8", "--gpu-model", "H100",
             "--gpu-memory", "80Gi"],
            stdout=open(self.log_path, "ab"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=dict(os.environ, SLUICE_LOG="info"))

    def registered(self):
        with open(self.log_path, "rb") as f:
            return f.read().count(b"registered with controller")

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def wait(pred, timeout, interval=0.2):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(interval)
    raise RuntimeError("timed out")


def submit_array(ctl, count, spec):
    """count one-task jobs as arrays of at most 10,000; the ids."""
    ids = []
    while count > 0:
        k = min(count, 10000)
        s = dict(spec, array="0-%d" % (k - 1))
        ids.append(ctl.submit(s)["id"])
        count -= k
    return ids


def percentile(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100.0 * len(xs)))] if xs else None


def timed(fn, reps=5):
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return sorted(ts)[len(ts) // 2] * 1000


def run_size(n, a):
    r = {"nodes": n, "gpus": 8 * n}
    d = tempfile.mkdtemp(prefix="scale-%d-" % n, dir=a.tmp)
    ctl = Ctl(d, n, a.node_timeout)
    ctl.start(init=True)
    emu = None
    try:
        # register
        r["load_register"] = load1()
        t0 = time.time()
        emu = Emu(ctl, n)
        wait(lambda: emu.registered() >= n, 300, 0.1)
        r["register_s"] = time.time() - t0
        print("  %d nodes registered in %.2f s" % (n, r["register_s"]), flush=True)
        # idle
        time.sleep(3)
        r["load_idle"] = load1()
        c0, w0 = cpu_s(ctl.proc.pid), time.time()
        e0 = cpu_s(emu.proc.pid)
        time.sleep(a.idle_s)
        w = time.time() - w0
        r["idle_cpu_pct"] = 100 * (cpu_s(ctl.proc.pid) - c0) / w
        r["emu_idle_cpu_pct"] = 100 * (cpu_s(emu.proc.pid) - e0) / w
        print("  idle CPU %.1f%% of a core (emulator %.1f%%)" % (r["idle_cpu_pct"],
              r["emu_idle_cpu_pct"]), flush=True)
        # burst
        burst = min(a.burst, 8 * n)
        r["burst_jobs"] = burst
        r["load_burst"] = load1()
        started0 = ctl.metric("sluice_jobs_started_total")
        t0 = time.time()
        ids = submit_array(ctl, burst, {"command": ["x"], "gpus": 1,
                                        "env": {"SLUICE_EMULATED_RUNTIME": "20"}})
        r["burst_submit_s"] = time.time() - t0
        wait(lambda: ctl.metric("sluice_jobs_started_total") - started0 >= burst, 300, 0.25)
        # A task started when its agent said so (placement start_time).
        def all_started():
            js = [j for j in ctl.jobs("&state=running,succeeded") if j.get("array_id") in ids]
            ok = len(js) == burst and all(p["start_time"] for j in js for p in j["placement"])
            return js if ok else None
        js = wait(all_started, 300, 0.5)
        last = max(p["start_time"] for j in js for p in j["placement"])
        first = min(j["submit_time"] for j in js)
        r["burst_s"] = last - first
        r["burst_wall_s"] = time.time() - t0
        print("  %d one-GPU jobs: first submission to last start %.2f s" % (burst, r["burst_s"]),
              flush=True)
        wait(lambda: ctl.metric("sluice_jobs", 'state="running"') == 0, 300, 0.5)
        # churn
        r["load_churn"] = load1()
        per = max(1, a.churn_rate // 10)
        cids = []
        t0 = time.time()
        k = 0
        while time.time() - t0 < a.churn_s:
            cids.append(ctl.submit({"command": ["x"], "gpus": 1, "array": "0-%d" % (per - 1),
                                    "env": {"SLUICE_EMULATED_RUNTIME": "5"}})["id"])
            k += 1
            sl = t0 + k * 0.1 - time.time()
            if sl > 0:
                time.sleep(sl)
        r["churn_submit_rate"] = k * per / (time.time() - t0)
        r["load_churn_end"] = load1()
        wait(lambda: ctl.metric("sluice_jobs", 'state="running"') == 0 and
             ctl.metric("sluice_jobs", 'state="pending"') == 0, 300, 0.5)
        cset = set(cids)
        js = [j for j in ctl.jobs("&state=succeeded") if j.get("array_id") in cset]
        delays = [j["start_time"] - j["submit_time"] for j in js]
        tdelays = [j["placement"][0]["start_time"] - j["submit_time"] for j in js]
        r["churn_jobs"] = len(js)
        r["churn_p50_ms"] = percentile(delays, 50) * 1000
        r["churn_p99_ms"] = percentile(delays, 99) * 1000
        r["churn_task_p99_ms"] = percentile(tdelays, 99) * 1000
        print("  churn %.0f/s for %d s: queueing delay p50 %.1f ms p99 %.1f ms (to the agent's "
              "started: p99 %.1f ms)" % (r["churn_submit_rate"], a.churn_s, r["churn_p50_ms"],
                                        r["churn_p99_ms"], r["churn_task_p99_ms"]), flush=True)
        # known
        run_ids = submit_array(ctl, n, {"command": ["x"], "gpus": 8})
        wait(lambda: ctl.metric("sluice_jobs", 'state="running"') >= n, 300, 0.5)
        done = ctl.metric("sluice_jobs_completed_total")
        pend = max(0, a.known - n - int(done))
        submit_array(ctl, pend, {"command": ["x"], "gpus": 1})
        r["known_jobs"] = int(done) + n + pend
        time.sleep(2)
        r["load_known"] = load1()
        r["nodes_ms"] = timed(lambda: ctl.get("/v1/nodes"))
        r["metrics_ms"] = timed(lambda: ctl.get("/metrics"))
        env = dict(os.environ, SLUICE_SERVER="http://127.0.0.1:%d" % ctl.port, SLUICE_TOKEN=ctl.admin)
        r["queue_page_ms"] = timed(lambda: subprocess.run(
            [os.path.join(BUILD, "sluice"), "queue", "--limit", "100"], env=env,
            stdout=subprocess.DEVNULL, check=True))
        r["rss_mib"] = rss_mib(ctl.proc.pid)
        print("  %d jobs known: /v1/nodes %.1f ms, sluice queue (100) %.1f ms, /metrics %.1f ms, "
              "RSS %.0f MiB" % (r["known_jobs"], r["nodes_ms"], r["queue_page_ms"], r["metrics_ms"],
                                r["rss_mib"]), flush=True)
        # restart
        r["load_restart"] = load1()
        before = emu.registered()
        ctl.kill9()
        t0 = time.time()
        ctl.start(init=False)
        r["restart_healthy_s"] = time.time() - t0
        wait(lambda: emu.registered() >= before + n, 300, 0.1)
        r["restart_nodes_s"] = time.time() - t0
        runids = set(run_ids)
        running = [j for j in ctl.jobs("&state=running") if j.get("array_id") in runids]
        r["restart_running"] = len(running)
        r["restart_s"] = time.time() - t0
        print("  kill -9: healthy %.2f s, %d nodes back %.2f s, %d/%d running" % (
            r["restart_healthy_s"], n, r["restart_nodes_s"], len(running), n), flush=True)
    finally:
        if emu:
            emu.stop()
        ctl.stop()
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,2000,5000,10000")
    ap.add_argument("--idle-s", type=float, default=20)
    ap.add_argument("--burst", type=int, default=10000)
    ap.add_argument("--churn-rate", type=int, default=1000)
    ap.add_argument("--churn-s", type=int, default=60)
    ap.add_argument("--known", type=int, default=100000)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                  "results.jsonl"))
    ap.add_argument("--tmp", default=None)
    # A restart slower than node_timeout (seconds) fences the agents' tasks
    # (docs/protocol.md, Fencing): the restart figure wants it longer than
    # a restart takes on this loaded machine (docs/scale.md).
    ap.add_argument("--node-timeout", type=float, default=60)
    a = ap.parse_args()
    for n in [int(x) for x in a.sizes.split(",")]:
        print("size %d nodes (load %.2f)" % (n, load1()), flush=True)
        r = run_size(n, a)
        r["time"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        r["args"] = " ".join(sys.argv[1:])
        with open(a.out, "a") as f:
            f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
