#!/usr/bin/python3
"""Live-cluster benchmarks of issue 4, Sluice and Slurm side by side.

Real daemons on 127.0.0.1 (build/sluiced, build/sluice-agent, build/sluice),
started with tests/e2e/harness.py; the Slurm 22.05 cluster of
../shared/peers/slurm/setup.sh when it answers.  Four figures:

  startup   100 one-GPU tasks submitted as 100 separate jobs (POST /v1/jobs,
            one after another on one keep-alive connection) to 13 agents x 8
            declared H100s; t = 0 just before the first request is sent;
            "all started" = the latest start stamp written by the tasks' own
            processes (bench/live/stamp.sh: bash $EPOCHREALTIME, the peer's
            Slurm method), and the latest agent-reported start_time in
            GET /v1/jobs/{id}.  The harness only lists the stamp directory
            while it waits.  Slurm: 100 separate sbatch, no GRES.
  turnover  J one-GPU jobs of `sleep S` on one agent with 8 GPUs (J > 8);
            per GPU, next start stamp - previous end stamp (the task's last
            action before exit).  Also from the agents' start/end times.
  submit    durable submissions/s: POST /v1/jobs from C concurrent
            keep-alive connections (bench/live/httpload.py, one thread,
            raw sockets) while 8 blocker jobs hold all 8 GPUs, so every
            submitted job stays pending (and each submission still triggers
            a scheduling pass).  Phases: 1 connection, then C connections up
            to --pending jobs, then --conns2 connections up to --submit-n.
            After the last phase the controller is killed with SIGKILL and
            restarted, and every acknowledged job must still be there.
  queue     with --pending (10,000) pending jobs: `sluice queue`,
            `sluice queue --json` and GET /v1/jobs (whole body read).

Each figure is printed as one line when measured; at the end a markdown
summary table, and JSON + the summary go to --out (default
/tmp/sluice-live-bench/<date>/).  Loops are bounded by counts and
deadlines; only processes this script started (through the harness) are
stopped, by PID.
"""
import argparse
import datetime
import json
import os
import platform
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # leave no __pycache__ in the checkout
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "e2e"))

import gaps  # noqa: E402
import httpload  # noqa: E402
import slurmside  # noqa: E402

STAMP_SH = os.path.join(HERE, "stamp.sh")
TARGETS = {"startup": "< 0.5 s", "turnover": "< 50 ms",
           "submit": ">= 2,000/s", "queue": "< 20 ms"}
# Figures of ../shared/peers/slurm/results.md (reference run, 2026-11-29).
SLURM_REF = {"startup": "6.49 s (6.04-8.10)",
             "turnover": "1.03 s per wave (0.90-1.27)",
             "submit": "82.3/s (4 parallel)",
             "queue": "191.7 ms (178-224)"}


def log(msg):
    print("[live %s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


def mmm(xs):
    xs = [x for x in xs if x is not None and x == x]
    if not xs:
        return None
    return {"min": min(xs), "median": statistics.median(xs), "max": max(xs),
            "n": len(xs)}


def fmt(st, scale=1.0, nd=3, unit=""):
    if not st:
        return "n/a"
    return "%.*f / %.*f / %.*f%s" % (nd, st["min"] * scale, nd,
                                     st["median"] * scale, nd,
                                     st["max"] * scale, unit)


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, int(round(p * len(xs))) - 1))] if xs else None


def fresh_dir(d):
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        os.unlink(os.path.join(d, f))


def read_stamps(d, suffix):
    """Stamps keyed by job id (the stamp files are named after it)."""
    return gaps.read_stamps(d, suffix, key=int)


def wait_stamps(d, suffix, n, deadline_s, interval=0.002):
    return gaps.wait_stamps(d, suffix, n, deadline_s, interval, key=int)


# --------------------------------------------------------------- a cluster
# --agent-args: "{root}" in them stands for a cgroup root of each agent's
# own, made by the bench in each of these cgroup v1 hierarchies (the agent
# wants an explicit --cgroup-root to exist) and removed after the cluster
# stopped.
CGROUP_V1 = ("memory", "cpu", "cpuacct", "pids", "devices")


def cgroup_roots(root, make):
    """Makes (make=True) or removes the cgroup v1 directory `root` in every
    mounted hierarchy of CGROUP_V1; removal takes the tree depth-first and
    returns the directories that could not be removed."""
    stuck = []
    for c in CGROUP_V1:
        base = os.path.join("/sys/fs/cgroup", c)
        d = os.path.join(base, root)
        if make:
            if os.path.isdir(base):
                os.mkdir(d)
            continue
        for sub, _, _ in os.walk(d, topdown=False):
            try:
                os.rmdir(sub)
            except OSError:
                stuck.append(sub)
    return stuck


class Live:
    """A controller and `agents` agents of `gpus` declared H100s each;
    agent_args are added to every agent's command line."""

    def __init__(self, workdir, name, agents, gpus=8, agent_args=()):
        import harness  # tests/e2e/harness.py (needs python3-yaml)
        self.harness = harness
        self.dir = os.path.join(workdir, name)
        if os.path.isdir(self.dir):
            shutil.rmtree(self.dir)
        self.ctl = harness.Controller(self.dir)
        self.n_agents, self.gpus = agents, gpus
        self.agent_args = list(agent_args)
        self.cg_roots = []
        self.agents = []
        self.tok = self.ctl.token("alice")
        self.adm = self.ctl.token("admin")

    def __enter__(self):
        try:
            return self._start()
        except BaseException:
            # `with` calls __exit__ only after __enter__ returned: stop
            # what did start (and remove the cgroup roots made so far).
            self.__exit__(None, None, None)
            raise

    def _start(self):
        self.ctl.start()
        for i in range(self.n_agents):
            name = "n%02d" % (i + 1)
            extra = self.agent_args
            if any("{root}" in x for x in extra):
                root = "sluice-live-%d-%s-%s" % (os.getpid(), os.path.basename(self.dir), name)
                cgroup_roots(root, True)
                self.cg_roots.append(root)
                extra = [x.replace("{root}", root) for x in extra]
            a = self.harness.Agent(self.ctl, name, gpus=self.gpus,
                                   gpu_model="H100", gpu_memory="80Gi",
                                   cpus="64", memory="512Gi", extra_args=extra)
            self.agents.append(a)
            a.start(timeout=30)
        self.conn = httpload.Conn(self.ctl.port, self.tok)
        self.aconn = httpload.Conn(self.ctl.port, self.adm)
        return self

    def __exit__(self, *exc):
        try:
            self.conn.close()
            self.aconn.close()
        except Exception:
            pass
        for a in self.agents:
            a.stop()
        self.ctl.stop()
        self.reap_tasks()
        for root in self.cg_roots:
            stuck = cgroup_roots(root, False)
            if stuck:
                log("cgroups left that could not be removed: %s" % ", ".join(stuck))
        return False

    def task_pids(self):
        """Live processes whose command line names this cluster's directory
        (the stamp directory is under it: stamp.sh's argv, or the argv[0]
        it gives `sleep`), other than the controller and agents themselves:
        the task processes of this benchmark's jobs."""
        own = {os.getpid()}
        for p in [self.ctl.proc] + [a.proc for a in self.agents]:
            if p is not None:
                own.add(p.pid)
        mark = self.dir.encode()
        out = []
        for e in os.listdir("/proc"):
            if not e.isdigit() or int(e) in own:
                continue
            try:
                with open("/proc/%s/cmdline" % e, "rb") as fh:
                    if mark in fh.read():
                        out.append(int(e))
            except OSError:
                pass
        return out

    def reap_tasks(self):
        """SIGKILLs task processes still alive after the agents stopped
        (only after an interrupted run: normally every job was cancelled)."""
        for pid in self.task_pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass

    def submit_raw(self, raws):
        ids = []
        for raw in raws:
            st, body = self.conn.request_raw(raw)
            if st != 201:
                raise RuntimeError("submit -> %d %s" % (st, body[:300]))
            ids.append(json.loads(body)["id"])
        return ids

    def job(self, jid):
        st, js, b = self.aconn.request("GET", "/v1/jobs/%d" % jid)
        if st != 200:
            raise RuntimeError("GET job %d -> %d %s" % (jid, st, b[:300]))
        return js

    def cancel(self, ids):
        for jid in ids:
            st, js, b = self.aconn.request("DELETE", "/v1/jobs/%d" % jid)
            if st not in (200, 409):
                raise RuntimeError("DELETE %d -> %d %s" % (jid, st, b[:300]))

    def wait_jobs(self, ids, states, deadline_s):
        deadline = time.monotonic() + deadline_s
        left = list(ids)
        jobs = {}
        while left and time.monotonic() < deadline:
            nxt = []
            for jid in left:
                j = self.job(jid)
                if j["state"] in states:
                    jobs[jid] = j
                else:
                    nxt.append(jid)
            left = nxt
            if left:
                time.sleep(0.05)
        if left:
            raise TimeoutError("%d jobs not in %s after %.0f s (e.g. %s)"
                               % (len(left), states, deadline_s,
                                  self.job(left[0])))
        return jobs

    def wait_idle(self, deadline_s=60):
        """Until every node reports all its GPUs free and no task process of
        this cluster is left."""
        deadline = time.monotonic() + deadline_s
        while time.monotonic() < deadline:
            st, js, _ = self.aconn.request("GET", "/v1/nodes")
            free = all(n["free"]["gpus"] == n["gpus"] for n in js["nodes"])
            if free and not self.task_pids():
                return
            time.sleep(0.05)
        raise TimeoutError("cluster not idle after %d s" % deadline_s)


def job_spec(name, argv, gpus=1, time_limit=0):
    sp = {"name": name, "gpus": gpus, "cpus": "1", "memory": "1Gi",
          "command": argv}
    if time_limit:
        sp["time_limit"] = time_limit
    return sp


# ------------------------------------------------------------------ startup
def proc_oncpu_s(pid):
    """Seconds the process's threads have run on a CPU (schedstat, ns)."""
    total = 0
    try:
        for tid in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as fh:
                total += int(fh.read().split()[0])
    except (OSError, ValueError, IndexError):
        return float("nan")
    return total / 1e9


def proc_cpu_s(pid):
    """utime + stime of a process, seconds."""
    try:
        with open("/proc/%d/stat" % pid) as fh:
            f = fh.read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / float(os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return float("nan")


def startup_submit(lc, mode, specs):
    """Submits the specs; returns (t0, ids, seconds the submissions took).
    mode "seq": one keep-alive connection, one POST after the other (as the
    peer's 100 sequential sbatch); "cN": N concurrent connections; "cli":
    one `sluice submit` process per job, one after the other."""
    if mode == "cli":
        argv, env = cli_base(lc, lc.tok)
        t0 = time.time()
        ids = []
        for sp in specs:
            p = subprocess.run(argv + ["submit", "-q", "--name", sp["name"],
                                       "--gpus", "1", "--cpus", "1", "--mem", "1Gi",
                                       "--"] + sp["command"],
                               env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=60)
            if p.returncode != 0:
                raise RuntimeError("sluice submit -> %d: %s" % (p.returncode, p.stderr[:300]))
            ids.append(int(p.stdout.split()[0]))
        return t0, ids, time.time() - t0
    raws = [httpload.build_request("POST", "/v1/jobs", lc.tok, sp) for sp in specs]
    if mode == "seq":
        t0 = time.time()
        ids = lc.submit_raw(raws)
        return t0, ids, time.time() - t0
    conns = int(mode[1:])
    t0 = time.time()
    r = httpload.run_load(lc.ctl.port, lambda i: raws[i], len(raws), conns, 60,
                          keep_bodies=True)
    t_sub = time.time() - t0
    if r["ok"] != len(raws):
        raise RuntimeError("startup submit: %d of %d ok: %s" % (r["ok"], len(raws),
                                                                r["first_error"]))
    return t0, [json.loads(b)["id"] for b in r["bodies"]], t_sub


def disk_probe(d, n=50):
    """fdatasync latency of 4 KiB appends in d (where the SQLite state
    lives): durable submissions on one connection cannot beat it."""
    p = os.path.join(d, "fsync-probe")
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    ts = []
    try:
        for _ in range(n):
            os.write(fd, b"x" * 4096)
            t = time.perf_counter()
            os.fdatasync(fd)
            ts.append(time.perf_counter() - t)
    finally:
        os.close(fd)
        os.unlink(p)
    return {"p50_ms": 1e3 * pct(ts, 0.5), "p90_ms": 1e3 * pct(ts, 0.9)}


def wait_load(a, what):
    """Waits, bounded, for the shared machine to calm down before a part,
    then records the load and the disk's fdatasync latency."""
    if a.max_load > 0:
        deadline = time.monotonic() + a.max_load_wait
        while os.getloadavg()[0] > a.max_load and time.monotonic() < deadline:
            time.sleep(5)
    if getattr(a, "save", None):
        a.save()  # what is measured so far survives an interrupted run
    dp = disk_probe(a.work)
    a.conditions[what] = {"loadavg1": os.getloadavg()[0], "fdatasync": dp}
    log("%s: load average %.2f; disk fdatasync (4 KiB append) p50 %.2f ms, p90 %.2f ms"
        % (what, os.getloadavg()[0], dp["p50_ms"], dp["p90_ms"]))


def sluice_startup(a, out):
    wait_load(a, "sluice startup")
    n = a.startup_n
    res_all = out["sluice"]["startup"] = {}
    with Live(a.work, "startup", a.agents, agent_args=a.agent_args) as lc:
        log("startup cluster up: %d agents x 8 GPUs (sluiced pid %d)"
            % (a.agents, lc.ctl.proc.pid))
        for mode in a.startup_modes:
            if mode == "cli" and not os.access(cli_base(lc)[0][0], os.X_OK):
                log("startup mode cli skipped: sluice CLI not built")
                continue
            runs = res_all[mode] = []
            for r in range(a.reps):
                d = os.path.join(lc.dir, "stamps-%s-%d" % (mode, r))
                fresh_dir(d)
                specs = [job_spec("start-%s-%d-%d" % (mode, r, i),
                                  ["/bin/bash", STAMP_SH, d, "30"]) for i in range(n)]
                la = os.getloadavg()[0]
                cpu0 = proc_cpu_s(lc.ctl.proc.pid)
                t0, ids, t_sub = startup_submit(lc, mode, specs)
                st = wait_stamps(d, ".s", n, 60)
                cpu1 = proc_cpu_s(lc.ctl.proc.pid)
                starts = sorted(v[0] for v in st.values())
                jobs = lc.wait_jobs(ids, ("running",), 30)
                api = sorted(j["start_time"] for j in jobs.values())
                q = sorted(j["start_time"] - j["submit_time"] for j in jobs.values())
                slots = {(p["node"], tuple(p["gpus"])) for j in jobs.values()
                         for p in j["placement"]}
                nodes = {p["node"] for j in jobs.values() for p in j["placement"]}
                res = {"all_started_stamp_s": starts[-1] - t0,
                       "first_started_stamp_s": starts[0] - t0,
                       "all_started_api_s": api[-1] - t0,
                       "submit_s": t_sub, "queue_delay_max_s": q[-1],
                       "queue_delay_median_s": statistics.median(q),
                       "distinct_gpus": len(slots), "nodes_used": len(nodes),
                       "sluiced_cpu_s": cpu1 - cpu0, "loadavg1_before": la}
                runs.append(res)
                log("sluice startup %s rep %d: all %d started %.3f s by job stamps, "
                    "%.3f s by agents' start_time (first %.3f s; submissions took "
                    "%.3f s; submit->start max %.1f ms; sluiced CPU %.3f s; %d nodes, "
                    "%d distinct GPUs)"
                    % (mode, r + 1, n, res["all_started_stamp_s"],
                       res["all_started_api_s"], res["first_started_stamp_s"],
                       t_sub, 1e3 * q[-1], res["sluiced_cpu_s"], len(nodes), len(slots)))
                lc.cancel(ids)
                lc.wait_jobs(ids, ("cancelled", "failed", "succeeded"), 60)
                lc.wait_idle(60)
                time.sleep(1.0)  # as the Slurm side


def sluice_turnover(a, out):
    wait_load(a, "sluice turnover")
    J, S = a.turnover_jobs, a.turnover_sleep
    runs = []
    with Live(a.work, "turnover", 1, agent_args=a.agent_args) as lc:
        for r in range(a.turnover_reps):
            d = os.path.join(lc.dir, "stamps-%d" % r)
            fresh_dir(d)
            raws = [httpload.build_request(
                "POST", "/v1/jobs", lc.tok,
                job_spec("turn-%d-%d" % (r, i),
                         ["/bin/bash", STAMP_SH, d, repr(S), "end"]))
                for i in range(J)]
            t0 = time.time()
            ids = lc.submit_raw(raws)
            t_sub = time.time() - t0
            ends = wait_stamps(d, ".e", J, 60 + J * 2)
            jobs = lc.wait_jobs(ids, ("succeeded", "failed"), 30)
            starts = read_stamps(d, ".s")
            recs = []
            mismatch = 0
            for jid, j in jobs.items():
                p = j["placement"][0]
                gpu = "%s/%s" % (p["node"], ",".join(str(g) for g in p["gpus"]))
                if starts[jid][1] != ",".join(str(g) for g in p["gpus"]):
                    mismatch += 1
                recs.append({"gpu": gpu, "start": starts[jid][0],
                             "end": ends[jid][0],
                             "start_api": j["start_time"],
                             "end_api": j["end_time"]})
            res = gaps.gpu_gaps(recs, S, 8)
            api = gaps.gpu_gaps(recs, S, 8, "start_api", "end_api")
            mixed = gaps.gpu_gaps(recs, S, 8, "start", "end_api")
            res.update({"api_" + k: v for k, v in api.items()})
            res.update({"exitapi_to_stamp_" + k: v for k, v in mixed.items()})
            res["cvd_mismatch"] = mismatch
            res["submit_s"] = t_sub
            res["all_done_s"] = max(v[0] for v in ends.values()) - t0
            res["failed"] = sum(1 for j in jobs.values() if j["state"] != "succeeded")
            runs.append(res)
            log("sluice turnover rep %d: %d jobs x sleep %s on 8 GPUs done in "
                "%.2f s; exit->next start per GPU (stamps) median %.1f ms, p90 "
                "%.1f, max %.1f ms; agents' end->start median %.1f ms; agent "
                "exit -> next stamp median %.1f ms; per-wave formula %.1f ms; "
                "overlaps %d, CUDA_VISIBLE_DEVICES mismatches %d"
                % (r + 1, J, S, res["all_done_s"], 1e3 * res["gap_median_s"],
                   1e3 * res["gap_p90_s"], 1e3 * res["gap_max_s"],
                   1e3 * api["gap_median_s"], 1e3 * mixed["gap_median_s"],
                   1e3 * res["per_wave_formula_s"], res["overlaps"], mismatch))
            lc.wait_idle(30)
    out["sluice"]["turnover"] = runs


# ------------------------------------------------------- submit and queue
def cli_base(lc, token=None):
    """argv prefix and environment for the sluice CLI against lc."""
    exe = os.path.join(lc.harness.build_dir(), "sluice")
    token = token or lc.adm
    env = dict(os.environ, SLUICE_URL=lc.ctl.url, SLUICE_TOKEN=token,
               SLUICE_SERVER=lc.ctl.url)
    return [exe, "--server", lc.ctl.url, "--token", token], env


def time_calls(fn, reps):
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return ts


def sluice_submit_queue(a, out, time_limit=0, key="submit", full=True):
    """full: also the queue latency and the kill -9 durability check."""
    wait_load(a, "sluice " + key)
    res = {"phases": [], "time_limit": time_limit}
    out["sluice"][key] = res
    with Live(a.work, key, 1, agent_args=a.agent_args) as lc:
        d = os.path.join(lc.dir, "stamps-blockers")
        fresh_dir(d)
        blockers = lc.submit_raw([httpload.build_request(
            "POST", "/v1/jobs", lc.tok,
            job_spec("blocker-%d" % i, ["/bin/bash", STAMP_SH, d, "3000"],
                     time_limit=3600 if time_limit else 0))
            for i in range(8)])
        wait_stamps(d, ".s", 8, 30)
        lc.wait_jobs(blockers, ("running",), 30)
        body = job_spec("q", ["/bin/true"], time_limit=time_limit)
        raw = httpload.build_request("POST", "/v1/jobs", lc.tok, body)
        acked = 0
        phases = [(1, min(a.seq_n, a.pending)), (a.conns, a.pending - min(a.seq_n, a.pending))]
        if a.submit_n > a.pending:
            phases.append((a.conns2, a.submit_n - a.pending))
        for idx, (c, n) in enumerate(phases):
            if n <= 0:
                continue
            cpu0 = proc_cpu_s(lc.ctl.proc.pid)
            r = httpload.run_load(lc.ctl.port, lambda i: raw, n, c,
                                  a.submit_deadline)
            ctl_cpu = proc_cpu_s(lc.ctl.proc.pid) - cpu0
            acked += r["ok"]
            lat = r["latencies_s"]
            ph = {"conns": c, "n": n, "ok": r["ok"], "done": r["done"],
                  "errors": r["errors"], "first_error": r["first_error"],
                  "elapsed_s": r["elapsed_s"],
                  "rate_per_s": r["ok"] / r["elapsed_s"],
                  "lat_p50_ms": 1e3 * pct(lat, 0.5), "lat_p99_ms": 1e3 * pct(lat, 0.99),
                  "lat_max_ms": 1e3 * max(lat) if lat else None,
                  "client_cpu_us_per_req": 1e6 * r["cpu_s"] / max(1, r["done"]),
                  "sluiced_cpu_us_per_req": 1e6 * ctl_cpu / max(1, r["done"]),
                  "jobs_before": acked - r["ok"]}
            res["phases"].append(ph)
            log("sluice %s phase %d: %d POST /v1/jobs over %d keep-alive "
                "connection(s) with %d jobs already queued: %d acknowledged in "
                "%.2f s = %.0f/s (latency p50 %.2f ms, p99 %.2f ms, max %.1f ms; "
                "errors %s; CPU per request: sluiced %.0f us, client %.0f us)"
                % (key, idx + 1, n, c, ph["jobs_before"], r["ok"], r["elapsed_s"],
                   ph["rate_per_s"], ph["lat_p50_ms"], ph["lat_p99_ms"],
                   ph["lat_max_ms"] or 0, r["errors"] or "none",
                   ph["sluiced_cpu_us_per_req"], ph["client_cpu_us_per_req"]))
            if r["ok"] < n:
                log("  first error body: %s" % r["first_error"])
            if full and acked >= a.pending and "queue" not in res:
                res["queue"] = measure_queue(lc, a)
        res["acked"] = acked
        if full and a.durability:
            res["durability"] = durability_check(lc, acked + len(blockers))
        lc.cancel(blockers)
        lc.wait_jobs(blockers, ("cancelled", "failed", "succeeded"), 60)


# GET /v1/jobs is paged (?limit=, at most 10,000 a page, and ?after=);
# the queue figures ask for one page of the largest size, which holds every
# job these benchmarks queue.
PAGE = "limit=10000"


def count_jobs(conn, state=None):
    """Every job (of a state) by following the pages; -1 on an error."""
    n, after = 0, None
    while True:
        q = [PAGE] + (["state=" + state] if state else []) + (["after=%d" % after] if after else [])
        st, js, b = conn.request("GET", "/v1/jobs?" + "&".join(q))
        if st != 200:
            return -1
        n += len(js["jobs"])
        after = js.get("next_after")
        if not after:
            return n


QUEUE_KEYS = ("cli_queue_s", "cli_queue_json_s", "get_jobs_s", "get_jobs_pending_s",
              "get_jobs_fresh_conn_s")


def timed(lc, q, key, fn, reps):
    """Times reps calls of fn into q[key], and adds the controller's CPU
    seconds over them to q[key + "_cpu"] (its utime + stime: what a
    listing costs sluiced, which the machine's other load changes less
    than it changes the wall time). From /proc/PID/schedstat, in
    nanoseconds: /proc/PID/stat counts clock ticks of 10 ms."""
    cpu0 = proc_oncpu_s(lc.ctl.proc.pid)
    q.setdefault(key, []).extend(time_calls(fn, reps))
    q.setdefault(key + "_cpu", []).append((proc_oncpu_s(lc.ctl.proc.pid) - cpu0) / reps)


def measure_queue_once(lc, a, q):
    """One round of the queue figures, appended to the lists in q."""
    raw_all = httpload.build_request("GET", "/v1/jobs?" + PAGE, lc.adm)
    raw_pend = httpload.build_request("GET", "/v1/jobs?state=pending&" + PAGE, lc.adm)
    # Warm-up: the first listing after a start formats each job's fixed
    # part once (api.c), in both views.
    lc.aconn.request_raw(raw_all)
    lc.aconn.request_raw(httpload.build_request(
        "GET", "/v1/jobs?view=table&state=pending,running&" + PAGE, lc.adm))
    timed(lc, q, "get_jobs_s", lambda: lc.aconn.request_raw(raw_all), a.queue_reps)
    timed(lc, q, "get_jobs_pending_s", lambda: lc.aconn.request_raw(raw_pend), a.queue_reps)
    # a fresh connection per call, as a one-shot client would
    def fresh():
        c = httpload.Conn(lc.ctl.port, lc.adm)
        c.request_raw(raw_all)
        c.close()
    timed(lc, q, "get_jobs_fresh_conn_s", fresh, a.queue_reps)
    argv, env = cli_base(lc)
    for name, extra in (("cli_queue_s", ["queue"]), ("cli_queue_json_s", ["--json", "queue"])):
        lines = [0]

        def run():
            p = subprocess.run(argv + extra, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=60)
            if p.returncode != 0:
                raise RuntimeError("%s -> %d: %s" % (" ".join(argv + extra),
                                                    p.returncode, p.stderr[:300]))
            lines[0] = p.stdout.count(b"\n")
        try:
            timed(lc, q, name, run, a.queue_reps)
            q[name.replace("_s", "_lines")] = lines[0]
        except (RuntimeError, OSError, subprocess.SubprocessError) as e:
            q[name.replace("_s", "_error")] = str(e)
            log("  %s failed: %s" % (name, e))


def use_build(lc, d):
    """Restarts the controller on its own state with the binaries of build
    directory d (the CLI of d too: cli_base reads SLUICE_BUILD) and waits
    until agent n01 is back."""
    os.environ["SLUICE_BUILD"] = d
    lc.ctl.stop()
    lc.ctl.start(timeout=120)
    lc.conn.close()
    lc.aconn.close()
    lc.harness.wait_for(lambda: lc.ctl.node("n01") and
                        lc.ctl.node("n01")["state"] == "up", timeout=60,
                        what="agent n01 back")
    time.sleep(1.0)


def measure_queue(lc, a):
    """The queue figures of this build and, with --queue-builds, of each
    other build on the same jobs: the controller is restarted on its state
    with each build in turn, --queue-rounds times (this, others, this,
    others, ...), so that every build sees the same load."""
    time.sleep(1.0)  # let the last commit and checkpoint settle
    q = {"pending": count_jobs(lc.aconn, "pending"), "build": lc.harness.build_dir()}
    q["jobs_total"] = count_jobs(lc.aconn)
    st, js, b = lc.aconn.request("GET", "/v1/jobs?" + PAGE)
    q["body_bytes"] = len(b)  # of the first page
    here = q["build"]
    builds = [here] + [os.path.abspath(d) for d in a.queue_builds]
    per = {d: {} for d in builds}
    rounds = a.queue_rounds if len(builds) > 1 else 1
    for rnd in range(rounds):
        for d in builds:
            if d != lc.harness.build_dir():
                use_build(lc, d)
            measure_queue_once(lc, a, per[d])
    if lc.harness.build_dir() != here:
        use_build(lc, here)
    q.update(per[here])
    if len(builds) > 1:
        q["builds"] = {d: per[d] for d in builds}
    for d in builds:
        for k in QUEUE_KEYS:
            if per[d].get(k):
                cpu = per[d].get(k + "_cpu") or []
                log("sluice queue: %-22s with %s pending (%d jobs in all)%s: "
                    "min/median/max %s ms; sluiced CPU %.2f ms a call"
                    % (k[:-2], q["pending"], q["jobs_total"],
                       "" if d == here else " [build %s]" % d,
                       fmt(mmm(per[d][k]), 1e3, 2),
                       1e3 * sum(cpu) / len(cpu) if cpu else float("nan")))
    return q


def durability_check(lc, expected):
    """kill -9 the controller, restart it, count jobs; the agent reconnects."""
    t = time.perf_counter()
    lc.ctl.kill9()
    t_k = time.perf_counter()
    lc.ctl.start(timeout=120)
    restart_s = time.perf_counter() - t_k
    lc.conn.close()
    lc.aconn.close()
    n = count_jobs(lc.aconn)
    d = {"expected": expected, "found": n, "restart_s": restart_s,
         "lost": expected - n}
    # wait for the agent to come back so the blockers can be cancelled
    lc.harness.wait_for(lambda: lc.ctl.node("n01") and
                        lc.ctl.node("n01")["state"] == "up", timeout=30,
                        what="agent n01 back")
    log("sluice durability: kill -9 + restart with %d acknowledged jobs: %d "
        "found after restart (%d lost), restart to /healthz %.2f s"
        % (expected, n, expected - n, restart_s))
    del t
    return d


# ---------------------------------------------------------------- slurm side
def slurm_all(a, out):
    s = out["slurm"] = {"version": slurmside.version()}
    tests = a.tests
    wait_load(a, "slurm")
    try:
        if "startup" in tests:
            s["startup"] = slurmside.startup(STAMP_SH, a.work, n=a.startup_n,
                                             sleep_s=30, reps=a.slurm_reps, log=log)
        if "turnover" in tests:
            s["turnover"] = slurmside.turnover(STAMP_SH, a.work, a.turnover_jobs,
                                               a.turnover_sleep,
                                               a.slurm_turnover_reps, log=log)
        if "submit" in tests or "queue" in tests:
            s["submit"] = slurmside.submit_and_queue(a.slurm_pending, 4,
                                                     a.queue_reps, log=log)
    except BaseException:
        # leave the peer's cluster empty: cancel what this run submitted
        slurmside.cancel_all_and_wait(timeout=600)
        raise


# ------------------------------------------------------------------ summary
def summary(out, a):
    L = ["| figure | target | Sluice (this run) | Slurm 22.05 (this run) | Slurm reference (peers/slurm/results.md) |",
         "|---|---|---|---|---|"]
    sl = out.get("sluice") or {}
    su = out.get("slurm") or {}

    def col(runs, key, scale=1.0, nd=3):
        return fmt(mmm([r.get(key) for r in runs]), scale, nd) if runs else "not run"

    def row(*cells):
        L.append("| " + " | ".join(cells) + " |")

    s1 = su.get("startup")
    modes = sl.get("startup") or {}
    label = {"seq": "POSTs one after another on 1 connection (as 100 sequential sbatch)",
             "cli": "100 sequential `sluice submit` processes"}
    first = True
    for mode, r1 in modes.items():
        lab = label.get(mode, "POSTs from %s concurrent connections" % mode[1:])
        row("100-task start-up, all started (job stamps), %s, s" % lab,
            TARGETS["startup"], col(r1, "all_started_stamp_s"),
            (col(s1, "all_started_s") + " (100 sequential sbatch, no GRES: 128 CPUs, 1 node)")
            if first and s1 else "", SLURM_REF["startup"] if first else "")
        row("same, by the agents' reported start_time, s", "", col(r1, "all_started_api_s"), "", "")
        row("same, the 100 submissions took, s", "", col(r1, "submit_s"),
            col(s1, "submit_s") if first and s1 else "", "")
        first = False
    if s1 and not modes:
        row("100-task start-up, all started (job stamps), s", TARGETS["startup"], "not run",
            col(s1, "all_started_s"), SLURM_REF["startup"])
    r2, s2 = sl.get("turnover"), su.get("turnover")
    if r2 or s2:
        row("GPU turnover: exit -> next start on that GPU (stamps), median of a run, ms",
            TARGETS["turnover"], col(r2, "gap_median_s", 1e3, 1),
            col(s2, "gap_median_s", 1e3, 1), SLURM_REF["turnover"])
        row("same, p90 of a run, ms", "", col(r2, "gap_p90_s", 1e3, 1),
            col(s2, "gap_p90_s", 1e3, 1), "")
        row("same, max of a run, ms", "", col(r2, "gap_max_s", 1e3, 1),
            col(s2, "gap_max_s", 1e3, 1), "")
        row("same, the peer's per-wave formula (last-first start)/(waves-1)-sleep, ms", "",
            col(r2, "per_wave_formula_s", 1e3, 1), col(s2, "per_wave_formula_s", 1e3, 1), "")
        row("same, agents' end_time -> next start_time (median), ms", "",
            col(r2, "api_gap_median_s", 1e3, 1), "", "")
    sub, ss = sl.get("submit") or {}, su.get("submit")
    phs = [("", ph) for ph in sub.get("phases", [])]
    phs += [(" [all jobs with time limits: EASY backfill scans the queue]", ph)
            for ph in (sl.get("submit_easy") or {}).get("phases", [])]
    for extra, ph in phs:
        row("durable submissions/s: %d connection(s), %d jobs, %d already queued%s"
            % (ph["conns"], ph["n"], ph["jobs_before"], extra), TARGETS["submit"],
            "%.0f/s (p50 %.2f ms, p99 %.2f ms)" % (ph["rate_per_s"], ph["lat_p50_ms"],
                                                    ph["lat_p99_ms"]), "", "")
    if ss:
        row("submissions/s, Slurm: `sbatch --hold`, 4 parallel submitters, %d jobs" % ss["n"],
            TARGETS["submit"], "", "%.1f/s (p50 %.1f ms)" % (ss["rate_per_s"], 1e3 * ss["lat_p50_s"]),
            SLURM_REF["submit"])
    q = sub.get("queue") or {}
    others = [(" [build %s]" % d, r) for d, r in (q.get("builds") or {}).items()
              if d != q.get("build")]
    for k, label in (("cli_queue_s", "`sluice queue`"),
                     ("cli_queue_json_s", "`sluice queue --json`"),
                     ("get_jobs_s", "GET /v1/jobs, keep-alive"),
                     ("get_jobs_fresh_conn_s", "GET /v1/jobs, new connection"),
                     ("get_jobs_pending_s", "GET /v1/jobs?state=pending")):
        for which, r in [("", q)] + others:
            if r.get(k):
                row("queue latency, %s%s, %s pending, ms" % (label, which, q.get("pending")),
                    TARGETS["queue"] if k == "cli_queue_s" and not which else "",
                    fmt(mmm(r[k]), 1e3, 1), "", "")
    if ss:
        row("queue latency, `squeue` (default format), %d pending, ms" % ss["squeue_pending"],
            TARGETS["queue"], "", fmt(mmm(ss["squeue_s"]), 1e3, 1), SLURM_REF["queue"])
    dur = sub.get("durability")
    if dur:
        row("kill -9 + restart: acknowledged jobs lost", "0",
            "%d of %d (restart to /healthz %.2f s)" % (dur["lost"], dur["expected"],
                                                       dur["restart_s"]), "", "")
    cond = (out.get("meta") or {}).get("conditions") or {}
    if cond:
        L.append("")
        L.append("Conditions before each part (1-min load average; fdatasync of a 4 KiB "
                 "append in the state directory, p50/p90): " + "; ".join(
                     "%s %.1f, %.2f/%.2f ms" % (k, v["loadavg1"], v["fdatasync"]["p50_ms"],
                                                 v["fdatasync"]["p90_ms"])
                     for k, v in cond.items()))
    return "\n".join(L)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--tests", default="startup,turnover,submit,queue")
    ap.add_argument("--slurm", choices=("auto", "skip", "only"), default="auto",
                    help="auto: also measure Slurm if its cluster answers")
    ap.add_argument("--reps", type=int, default=5, help="startup repetitions")
    ap.add_argument("--agents", type=int, default=13)
    ap.add_argument("--startup-n", type=int, default=100)
    ap.add_argument("--startup-modes", default="seq,c10,cli",
                    help="seq: POSTs one after another on one connection; cN: "
                         "N concurrent connections; cli: one `sluice submit` each")
    ap.add_argument("--turnover-jobs", type=int, default=40)
    ap.add_argument("--turnover-sleep", type=float, default=0.2)
    ap.add_argument("--turnover-reps", type=int, default=3)
    ap.add_argument("--submit-n", type=int, default=20000)
    ap.add_argument("--pending", type=int, default=10000)
    ap.add_argument("--seq-n", type=int, default=1000,
                    help="first submission phase: this many on 1 connection")
    ap.add_argument("--conns", type=int, default=8)
    ap.add_argument("--conns2", type=int, default=32)
    ap.add_argument("--submit-deadline", type=float, default=120)
    ap.add_argument("--queue-reps", type=int, default=20)
    ap.add_argument("--queue-builds", default="",
                    help="comma-separated build directories (each with sluiced and "
                         "sluice) whose queue figures are measured too, on the same "
                         "pending jobs: the controller is restarted on its state "
                         "with each build in turn, interleaved with this one")
    ap.add_argument("--queue-rounds", type=int, default=2,
                    help="with --queue-builds: rounds of this build then the others "
                         "(--queue-reps calls per figure per round)")
    ap.add_argument("--time-limit", type=int, default=0,
                    help="submit test: give the queued jobs this time_limit (s) and "
                         "the blockers 3600 s, so EASY backfill makes a reservation "
                         "and considers every pending job in each cycle")
    ap.add_argument("--no-durability", dest="durability", action="store_false")
    ap.add_argument("--no-easy-variant", dest="easy_variant", action="store_false",
                    help="skip the second submission run in which every job has a "
                         "time limit (EASY backfill then scans the whole queue)")
    ap.add_argument("--slurm-reps", type=int, default=3)
    ap.add_argument("--slurm-turnover-reps", type=int, default=3)
    ap.add_argument("--slurm-pending", type=int, default=10000)
    ap.add_argument("--agent-args", default="",
                    help="extra sluice-agent arguments for every agent, e.g. "
                         "\"--cgroup v1 --cgroup-root {root}\" ({root}: a cgroup v1 "
                         "root of the agent's own, made and removed by the bench); "
                         "default none: the harness's agent (no enforcement)")
    ap.add_argument("--out", default=None)
    ap.add_argument("--max-load", type=float, default=0,
                    help="before each part, wait (at most --max-load-wait s) until "
                         "the 1-minute load average is below this (0: do not wait)")
    ap.add_argument("--max-load-wait", type=float, default=300)
    a = ap.parse_args()
    a.tests = [t for t in a.tests.split(",") if t]
    a.agent_args = shlex.split(a.agent_args)
    a.startup_modes = [m for m in a.startup_modes.split(",") if m]
    a.queue_builds = [d for d in a.queue_builds.split(",") if d]
    for d in a.queue_builds:
        for b in ("sluiced", "sluice"):
            if not os.access(os.path.join(d, b), os.X_OK):
                sys.exit("--queue-builds: %s has no %s" % (d, b))
    a.reps = max(1, min(a.reps, 50))
    stamp = time.strftime("%Y%m%d-%H%M%S")
    a.out = a.out or "/tmp/sluice-live-bench/%s" % stamp
    a.work = os.path.join(a.out, "work")
    a.conditions = {}
    os.makedirs(a.work, exist_ok=True)
    os.chmod(a.out, 0o755)
    out = {"meta": {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "kernel": platform.release(), "nproc": os.cpu_count(),
        "args": {k: v for k, v in vars(a).items() if k != "conditions"},
        "loadavg_start": os.getloadavg()}, "sluice": {}}
    try:
        out["meta"]["git"] = subprocess.run(
            ["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    if a.slurm != "skip":
        if slurmside.available():
            out["meta"]["slurm"] = "measured in this run"
        elif a.slurm == "only":
            sys.exit("Slurm cluster not answering (run ../shared/peers/slurm/setup.sh)")
        else:
            out["meta"]["slurm"] = "not available: reference figures only"
            log("Slurm cluster not answering: Slurm column = reference figures only")
    def on_term(signum, frame):
        raise SystemExit("livebench: signal %d: stopping what it started" % signum)
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGHUP, on_term)

    def save():
        with open(os.path.join(a.out, "results.json"), "w") as fh:
            json.dump(out, fh, indent=1, default=str)
    a.save = save
    try:
        if a.slurm != "only":
            if "startup" in a.tests:
                sluice_startup(a, out)
            if "turnover" in a.tests:
                sluice_turnover(a, out)
            if "submit" in a.tests or "queue" in a.tests:
                sluice_submit_queue(a, out, a.time_limit)
                if a.easy_variant:
                    sluice_submit_queue(a, out, 600, "submit_easy", full=False)
        if a.slurm != "skip" and out["meta"].get("slurm") == "measured in this run":
            slurm_all(a, out)
    finally:
        out["meta"]["loadavg_end"] = os.getloadavg()
        out["meta"]["conditions"] = a.conditions
        save()
    s = summary(out, a)
    with open(os.path.join(a.out, "summary.md"), "w") as fh:
        fh.write(s + "\n")
    print()
    print(s)
    print()
    log("raw results: %s/results.json" % a.out)


if __name__ == "__main__":
    main()
