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
             counted): GET /v1/nodes (unpaged, a page of 100 and the last
             page of 100), `sluice nodes` (all, 1,000 a page) and `sluice
             nodes --limit 100`, `sluice queue --limit 100` (one page) and
             /metrics latency (median of 5), sluiced's RSS;
  restart    kill -9, start: to every node connected again with every
             running task re-adopted (GET /v1/jobs?state=running counts);
             node_timeout is --node-timeout (60 s), since an agent fences
             its tasks when the controller is away longer than that.
The 1-minute load average is recorded with each step: other sessions
share the machine. Results: one JSON line per size (--out), and plot.py
draws them. --steps runs some of them (registration always; restart
needs known), e.g. `--sizes 10000 --steps known`.

  failure    (--steps failure; a controller and emulator of its own, one
             JSON line per failure in --fail-out, plot.py's
             node_failure_ms.svg) one node holding K tasks fails among N:
             N-1 nodes in one emulator and the failing node in one of its
             own, killed with SIGKILL. Placement is bestfit and the failing
             node has 64 CPUs against the others' 128, so that it is the
             tightest fit and takes the K one-task jobs (one GPU each up to
             8, then an eighth of a GPU each) while the others are empty.
             For each J of --fail-jobs (finished jobs kept in memory, runs
             of 0 s submitted 10,000 at a time) and K of --fail-tasks,
             --fail-reps times: sluice_node_failure_handling_seconds for
             that one failure (the node marked down, its K tasks lost and
             their jobs requeued), the time from the kill to the node
             declared down (sluiced's log, node_timeout 10 s), from then to
             every job running again on another node (the requeue waits
             for the fence: node_timeout + kill_grace (1 s) + a margin after
             the node's last message), and sluiced's CPU time over that
             window against its idle rate just before.
"""

import argparse
import calendar
import http.client
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("SLUICE_BUILD", os.path.join(ROOT, "build"))
STEPS = ["idle", "burst", "churn", "known", "restart"]


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


def stop_proc(proc):
    """SIGTERM to a process this script started, SIGKILL after 60 s."""
    if proc is None or proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


class Ctl:
    def __init__(self, d, n, node_timeout, extra=None):
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
                                  "max_pending_jobs": 1000000}, **(extra or {})}, f)
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
        stop_proc(self.proc)

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
    def __init__(self, ctl, n, name=None, cpus="64"):
        """n nodes named NAME00000.. (the emulator's default prefix without
        a name), each 8 H100 and cpus CPUs."""
        self.log_path = os.path.join(ctl.dir, "emulate-%s.log" % name if name else "emulate.log")
        self.proc = subprocess.Popen(
            [os.path.join(BUILD, "sluice-agent"), "--emulate", str(n),
             "--controller", "127.0.0.1:%d" % ctl.aport, "--token", ctl.cluster,
             "--cpus", cpus, "--memory", "512Gi", "--gpus", "8", "--gpu-model", "H100",
             "--gpu-memory", "80Gi"] + (["--name", name] if name else []),
            stdout=open(self.log_path, "ab"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=dict(os.environ, SLUICE_LOG="info"))

    def registered(self):
        with open(self.log_path, "rb") as f:
            return f.read().count(b"registered with controller")

    def stop(self):
        stop_proc(self.proc)


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


def step_idle(ctl, emu, r, a):
    r["load_idle"] = load1()
    c0, w0 = cpu_s(ctl.proc.pid), time.time()
    e0 = cpu_s(emu.proc.pid)
    time.sleep(a.idle_s)
    w = time.time() - w0
    r["idle_cpu_pct"] = 100 * (cpu_s(ctl.proc.pid) - c0) / w
    r["emu_idle_cpu_pct"] = 100 * (cpu_s(emu.proc.pid) - e0) / w
    print("  idle CPU %.1f%% of a core (emulator %.1f%%)" % (r["idle_cpu_pct"],
          r["emu_idle_cpu_pct"]), flush=True)


def step_burst(ctl, n, r, a):
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


def step_churn(ctl, r, a):
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


def step_known(ctl, n, r, a):
    """The latencies with --known jobs known; the ids of the N running jobs."""
    run_ids = submit_array(ctl, n, {"command": ["x"], "gpus": 8})
    wait(lambda: ctl.metric("sluice_jobs", 'state="running"') >= n, 300, 0.5)
    done = ctl.metric("sluice_jobs_completed_total")
    pend = max(0, a.known - n - int(done))
    submit_array(ctl, pend, {"command": ["x"], "gpus": 1})
    r["known_jobs"] = int(done) + n + pend
    time.sleep(2)
    r["load_known"] = load1()
    r["nodes_ms"] = timed(lambda: ctl.get("/v1/nodes"))
    r["nodes_page_ms"] = timed(lambda: ctl.get("/v1/nodes?limit=100"))
    # The last page, found by walking: keyset paging costs the same anywhere.
    names = sorted(nd["name"] for nd in json.loads(ctl.get("/v1/nodes")[1])["nodes"])
    last = "/v1/nodes?limit=100&after=" + names[-101] if len(names) > 100 else "/v1/nodes?limit=100"
    r["nodes_page_last_ms"] = timed(lambda: ctl.get(last))
    r["metrics_ms"] = timed(lambda: ctl.get("/metrics"))
    env = dict(os.environ, SLUICE_SERVER="http://127.0.0.1:%d" % ctl.port, SLUICE_TOKEN=ctl.admin)
    cli = lambda *args: lambda: subprocess.run(  # noqa: E731
        [os.path.join(BUILD, "sluice")] + list(args), env=env, stdout=subprocess.DEVNULL, check=True)
    r["queue_page_ms"] = timed(cli("queue", "--limit", "100"))
    r["nodes_cli_page_ms"] = timed(cli("nodes", "--limit", "100"))
    r["nodes_cli_ms"] = timed(cli("nodes"))
    if a.cli_before:
        # The same table from a sluice that fetches every node at once,
        # interleaved with this one's, wall and CPU time (the client's
        # parsing and table are most of it).
        before = lambda: subprocess.run(  # noqa: E731
            [a.cli_before, "nodes"], env=env, stdout=subprocess.DEVNULL, check=True)
        w = {"now": [], "before": []}
        u = {"now": [], "before": []}
        for _ in range(5):
            for key, fn in (("now", cli("nodes")), ("before", before)):
                c0, t0 = os.times(), time.perf_counter()
                fn()
                c1 = os.times()
                w[key].append((time.perf_counter() - t0) * 1000)
                u[key].append((c1.children_user + c1.children_system - c0.children_user -
                               c0.children_system) * 1000)
        for key, name in (("now", "nodes_cli"), ("before", "nodes_cli_before")):
            r[name + "_pair_ms"] = sorted(w[key])[2]
            r[name + "_cpu_ms"] = sorted(u[key])[2]
    r["rss_mib"] = rss_mib(ctl.proc.pid)
    print("  %d jobs known: /v1/nodes %.1f ms (?limit=100: %.1f ms, its last page %.1f ms), "
          "sluice nodes %.1f ms (--limit 100: %.1f ms), sluice queue (100) %.1f ms, "
          "/metrics %.1f ms, RSS %.0f MiB" % (
              r["known_jobs"], r["nodes_ms"], r["nodes_page_ms"], r["nodes_page_last_ms"],
              r["nodes_cli_ms"], r["nodes_cli_page_ms"], r["queue_page_ms"], r["metrics_ms"],
              r["rss_mib"]), flush=True)
    if a.cli_before:
        print("  sluice nodes interleaved with %s nodes: %.1f ms (CPU %.0f ms) against %.1f ms "
              "(CPU %.0f ms)" % (a.cli_before, r["nodes_cli_pair_ms"], r["nodes_cli_cpu_ms"],
                                 r["nodes_cli_before_pair_ms"], r["nodes_cli_before_cpu_ms"]),
              flush=True)
    return run_ids


def step_restart(ctl, emu, n, run_ids, r, a):
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


def run_size(n, a):
    r = {"nodes": n, "gpus": 8 * n}
    d = tempfile.mkdtemp(prefix="scale-%d-" % n, dir=a.tmp)
    ctl = Ctl(d, n, a.node_timeout)
    ctl.start(init=True)
    emu = None
    try:
        r["load_register"] = load1()
        t0 = time.time()
        emu = Emu(ctl, n)
        wait(lambda: emu.registered() >= n, 300, 0.1)
        r["register_s"] = time.time() - t0
        print("  %d nodes registered in %.2f s" % (n, r["register_s"]), flush=True)
        time.sleep(3)
        if "idle" in a.steps:
            step_idle(ctl, emu, r, a)
        if "burst" in a.steps:
            step_burst(ctl, n, r, a)
        if "churn" in a.steps:
            step_churn(ctl, r, a)
        if "known" in a.steps:
            run_ids = step_known(ctl, n, r, a)
            if "restart" in a.steps:
                step_restart(ctl, emu, n, run_ids, r, a)
    finally:
        if emu:
            emu.stop()
        ctl.stop()
    return r


def cpu_ns(pid):
    """sluiced's CPU time in nanoseconds, all its threads (schedstat: finer
    than /proc/PID/stat's clock ticks)."""
    total = 0
    for t in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, t)) as f:
                total += int(f.read().split()[0])
        except OSError:
            pass  # a thread that just ended
    return total


def hist(ctl, name):
    """(sum in seconds, count) of an unlabelled histogram."""
    return ctl.metric(name + "_sum"), ctl.metric(name + "_count")


def log_line_time(line):
    """The wall-clock time of a sluiced log line (2026-12-01T07:30:00.123Z ...)."""
    ts = line.split(" ", 1)[0]
    return calendar.timegm(time.strptime(ts[:19], "%Y-%m-%dT%H:%M:%S")) + float(ts[19:-1] or 0)


def fill_finished(ctl, target):
    """Submits one-GPU jobs that end at once (arrays of 10,000) until
    `target` jobs have completed since sluiced started."""
    done = int(ctl.metric("sluice_jobs_completed_total"))
    while done < target:
        k = min(10000, target - done)
        submit_array(ctl, k, {"command": ["x"], "gpus": 1, "env": {"SLUICE_EMULATED_RUNTIME": "0"}})
        want = done + k
        done = int(wait(lambda: (lambda v: v if v >= want else None)(
            ctl.metric("sluice_jobs_completed_total")), 600, 0.5))


def one_failure(ctl, k, idx, a):
    """One node holding k tasks (k one-task jobs: whole GPUs up to 8, then
    eighths of a GPU) fails among the cluster's: its emulator is killed with
    SIGKILL. Returns the row."""
    r = {"tasks": k}
    name = "zv%02d" % idx  # its node: zvII00000, after every emulated "e" name
    victim = Emu(ctl, 1, name=name, cpus="64")
    node = name + "00000"
    try:
        wait(lambda: victim.registered() >= 1, 120, 0.1)
        spec = {"command": ["x"], "cpus": "1", "array": "0-%d" % (k - 1)}
        spec.update({"gpus": 1} if k <= 8 else {"gpu_share": "0.125"})
        arr = ctl.submit(spec)["id"]

        def placed():
            js = [j for j in ctl.jobs("&state=running") if j.get("array_id") == arr]
            return js if len(js) == k and all(p.get("start_time") for j in js
                                              for p in j["placement"]) else None
        js = wait(placed, 120, 0.5)
        on = {p["node"] for j in js for p in j["placement"]}
        if on != {node}:
            raise RuntimeError("the %d tasks went to %s, not only to %s" % (k, sorted(on), node))
        ids = [j["id"] for j in js]
        r["jobs_in_memory"] = int(ctl.metric("sluice_jobs"))
        r["jobs_submitted"] = int(ctl.metric("sluice_submissions_total"))
        r["jobs_known"] = int(ctl.metric("sluice_jobs_completed_total")) + \
            int(ctl.metric("sluice_jobs", 'state="running"')) + int(ctl.metric("sluice_jobs", 'state="pending"'))
        # sluiced's CPU while nothing fails, the baseline of the window below.
        time.sleep(1)
        c0, w0 = cpu_ns(ctl.proc.pid), time.time()
        time.sleep(a.fail_idle_s)
        idle_rate = (cpu_ns(ctl.proc.pid) - c0) / (time.time() - w0)  # ns per second
        h0, f0 = hist(ctl, "sluice_node_failure_handling_seconds"), ctl.metric("sluice_node_failures_total")
        cyc0, cys0 = ctl.metric("sluice_sched_cycles_total"), ctl.metric("sluice_sched_cycle_seconds_total")
        r["load"] = load1()
        logp = os.path.join(ctl.dir, "sluiced.log")
        with open(logp, "rb") as f:
            f.seek(0, 2)
            log_off = f.tell()
        c1, t_kill = cpu_ns(ctl.proc.pid), time.time()
        victim.proc.send_signal(signal.SIGKILL)
        victim.proc.wait()
        pat = (" node: node=%s down" % node).encode()

        def down():
            with open(logp, "rb") as f:
                f.seek(log_off)
                for line in f.read().splitlines():
                    if pat in line:
                        return line.decode()
            return None
        line = wait(down, a.node_timeout_fail + 60, 0.05)
        t_down = log_line_time(line)
        # Every job running again, on another node, its agent's start reported.
        left = set(ids)
        starts = {}
        deadline = time.time() + 2 * a.node_timeout_fail + 120
        while left and time.time() < deadline:
            for i in sorted(left):
                j = json.loads(ctl.get("/v1/jobs/%d" % i)[1])
                p = j["placement"][0] if j.get("placement") else {}
                if j["state"] == "running" and p.get("node") not in (None, node) and p.get("start_time"):
                    starts[i] = (j["start_time"], p["start_time"])
                    left.discard(i)
            time.sleep(0.5)
        if left:
            raise RuntimeError("%d of %d jobs did not restart elsewhere" % (len(left), k))
        c2, t_end = cpu_ns(ctl.proc.pid), time.time()
        h1, f1 = hist(ctl, "sluice_node_failure_handling_seconds"), ctl.metric("sluice_node_failures_total")
        cyc1, cys1 = ctl.metric("sluice_sched_cycles_total"), ctl.metric("sluice_sched_cycle_seconds_total")
        r["failures"] = int(f1 - f0)  # 1 unless another node timed out meanwhile
        r["handling_ms"] = (h1[0] - h0[0]) * 1000 / max(1, h1[1] - h0[1])
        r["detect_s"] = t_down - t_kill
        r["requeue_start_s"] = max(s for s, _ in starts.values()) - t_down
        r["restarted_s"] = max(p for _, p in starts.values()) - t_down
        r["fence_wait_s"] = a.node_timeout_fail + 1 + 1 + (a.node_timeout_fail + 1) / 100
        # The node's last message was "no message for S s" before it was
        # declared down; the requeue may not come before that plus the
        # fence wait, and comes at the first sweep after (node_timeout / 4).
        m = re.search(r"no message for ([0-9.]+) s", line)
        r["silent_s"] = float(m.group(1)) if m else None
        if m:
            r["restarted_after_fence_s"] = r["restarted_s"] + r["silent_s"] - r["fence_wait_s"]
        r["window_s"] = t_end - t_kill
        r["cpu_window_ms"] = (c2 - c1) / 1e6
        r["cpu_excess_ms"] = (c2 - c1 - idle_rate * (t_end - t_kill)) / 1e6
        r["idle_cpu_pct"] = idle_rate / 1e7
        r["cycles"] = int(cyc1 - cyc0)
        r["cycle_ms"] = (cys1 - cys0) * 1000
        print("    K=%d tasks, %d jobs known: handling %.3f ms (%d failure), declared %.1f s after the "
              "kill, restarted elsewhere %.1f s after (requeue waits for the fence), sluiced CPU "
              "%.0f ms over %.0f s (%.0f ms above its idle %.1f%%), %d cycles %.1f ms, load %.1f" % (
                  k, r["jobs_known"], r["handling_ms"], r["failures"], r["detect_s"],
                  r["restarted_s"], r["cpu_window_ms"], r["window_s"], r["cpu_excess_ms"],
                  r["idle_cpu_pct"], r["cycles"], r["cycle_ms"], r["load"]), flush=True)
        st, _ = ctl.req("DELETE", "/v1/jobs/%d" % arr)
        wait(lambda: all(json.loads(ctl.get("/v1/jobs/%d" % i)[1])["state"] == "cancelled"
                         for i in ids), 120, 0.5)
    finally:
        if victim.proc.poll() is None:
            victim.proc.kill()
            victim.proc.wait()
    return r


def run_failure(n, a):
    """Node failure among n nodes (N-1 in the emulator, and one per failure
    in an emulator of its own), for each count of jobs known and tasks on
    the failed node. Placement is bestfit and the emulator's nodes have
    128 CPUs against the failing node's 64, so that the failing node is
    the tightest fit and takes the k tasks while every other node is
    empty; once it fails they go elsewhere."""
    rows = []
    d = tempfile.mkdtemp(prefix="scale-fail-%d-" % n, dir=a.tmp)
    ctl = Ctl(d, n, a.node_timeout_fail, extra={"kill_grace": 1,
                                                 "scheduler": {"placement": "bestfit"}})
    ctl.start(init=True)
    emu = None
    try:
        t0 = time.time()
        emu = Emu(ctl, n - 1, cpus="128")
        wait(lambda: emu.registered() >= n - 1, 300, 0.1)
        print("  %d nodes registered in %.2f s" % (n - 1, time.time() - t0), flush=True)
        idx = 0
        for jobs in sorted(int(x) for x in a.fail_jobs.split(",")):
            t0 = time.time()
            fill_finished(ctl, jobs)
            print("  %d jobs finished (%.0f s)" % (jobs, time.time() - t0), flush=True)
            for k in [int(x) for x in a.fail_tasks.split(",")]:
                for rep in range(a.fail_reps):
                    r = one_failure(ctl, k, idx, a)
                    idx += 1
                    r.update({"nodes": n, "jobs_target": jobs, "rep": rep})
                    rows.append(r)
    finally:
        if emu:
            emu.stop()
        ctl.stop()
    return rows


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
    ap.add_argument("--steps", default=",".join(STEPS),
                    help="comma-separated, of %s (registration always runs; restart needs known; "
                         "failure has a controller of its own)" % ",".join(STEPS + ["failure"]))
    ap.add_argument("--cli-before", default=None,
                    help="known: also time this sluice binary's `sluice nodes` (e.g. one built "
                         "before paging, which asks for every node at once)")
    ap.add_argument("--fail-jobs", default="10000,50000,100000",
                    help="failure: jobs finished before the failures, in turn")
    ap.add_argument("--fail-tasks", default="1,8,64", help="failure: tasks on the failed node, in turn")
    ap.add_argument("--fail-reps", type=int, default=3,
                    help="failure: failures per (jobs, tasks), plot.py takes their median")
    ap.add_argument("--fail-idle-s", type=float, default=5,
                    help="failure: sluiced's idle CPU measured this long before each failure")
    ap.add_argument("--node-timeout-fail", type=float, default=10,
                    help="failure: node_timeout (seconds), the default")
    ap.add_argument("--fail-out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                       "failure.jsonl"))
    a = ap.parse_args()
    a.steps = a.steps.split(",")
    bad = [x for x in a.steps if x not in STEPS + ["failure"]]
    if bad:
        ap.error("--steps: unknown step %s (known: %s)" % (bad[0], ",".join(STEPS + ["failure"])))
    stamp = lambda r: r.update(time=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),  # noqa: E731
                               args=" ".join(sys.argv[1:]))
    for n in [int(x) for x in a.sizes.split(",")]:
        if any(x in STEPS for x in a.steps):
            print("size %d nodes (load %.2f)" % (n, load1()), flush=True)
            t0 = time.time()
            r = run_size(n, a)
            r["wall_s"] = time.time() - t0
            stamp(r)
            with open(a.out, "a") as f:
                f.write(json.dumps(r) + "\n")
        if "failure" in a.steps:
            print("size %d nodes: node failures (load %.2f)" % (n, load1()), flush=True)
            t0 = time.time()
            rows = run_failure(n, a)
            print("  failure step: %.0f s" % (time.time() - t0), flush=True)
            with open(a.fail_out, "a") as f:
                for r in rows:
                    stamp(r)
                    f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
