#!/usr/bin/python3
"""precision.py - allocation precision of node enforcement (issue 9): the CPU
time a busy task receives against its CPU request, and the memory usage at
which the kernel kills a task against 110% of its memory request, for
Sluice (a real sluice-agent with cgroup enforcement) and for Slurm 22.05's
cgroup plugins, in one run.

    bench/enforce/precision.py [--sides sluice,slurm] [--reps 3]
        [--cpu-requests 0.25,0.5,1,1.5] [--seconds 10] [--mem-request 128]
        [--agent-args "--cgroup v1 --cgroup-root {root}"] [--slurm-setup]

Sides (--sides, comma-separated, run interleaved: each repetition runs
every case on every side before the next repetition):

  sluice   build/sluiced and build/sluice-agent started through
           tests/e2e/harness.py on 127.0.0.1; the agent gets --agent-args,
           where {root} is replaced by a cgroup root name unique to this run
           (sluice-prec-PID).  Jobs are POSTed with "cpus" and "memory" and
           run bench/enforce/busy.py or memhog.py as root.
  slurm    the Slurm of bench/enforce/slurm/ (proctrack/cgroup,
           task/cgroup, ConstrainCores, ConstrainRAMSpace with
           AllowedRAMSpace=110, ConstrainSwapSpace with AllowedSwapSpace=0)
           through srun; --slurm-setup starts it first (setup.sh) and stops
           it at the end (teardown.sh).  Slurm confines CPUs by cpuset,
           whole cores: a request of C CPUs is asked as -c ceil(C) and the
           error is reported against C.
  direct   no scheduler: the bench itself makes a cgroup v1 per task with
           the values the issue prescribes (cfs quota = CPUs x 100 ms,
           memory and memsw limit = 110%, soft limit = 90%) and runs the
           task in it: the kernel's own precision, the floor for any agent.

CPU: for each request C, busy.py runs W = floor(C) + 1 spinning processes
(so that the task could use more than C) for --seconds; received CPUs =
the CPU time of its processes from the kernel's accounting of each reaped
child (os.wait4 rusage: the task's own accounting) / its wall time;
error = received / C - 1.  The task's cgroup cpu.stat (periods, throttled
periods) is read by the task too, to tell a quota that binds (throttled in
most periods) from a machine that is busy (this host has 2 cores shared by
other work): with --boost (default on) the task is given precedence over
other processes of the host as each side allows (Sluice, direct: the cpu
cgroup root of this run gets cpu.shares 262144; Slurm, which has no cpu
cgroup: the task is reniced to -20 and so is its session's autogroup,
which is what the kernel weighs when sched_autogroup_enabled is 1, as
here), so that it is the limit, not the neighbours, that holds it back.

Memory: memhog.py touches memory 64 KiB at a time (1 MiB mappings) up to
3x the request and records, after each 64 KiB, its cgroup's
memory.usage_in_bytes; the kill point is the last usage it recorded before
the kernel killed it (the kill came while touching the next 64 KiB), also
checked against the kernel's log line for its PID ("Killed process ...
anon-rss"); target = 110% of the request; error = kill point / target - 1.
A second task that stays at 90% of its request must not be killed.

Prints one line per measurement, then markdown tables; raw JSON to --out
(default /tmp/sluice-enforce-bench/<date>/).  Every daemon it started is
stopped by PID; cgroups it made (direct side) are removed, and so is the
agent's cgroup root of this run if the agent left it empty.
"""
import argparse
import json
import math
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "e2e"))

BUSY = os.path.join(HERE, "busy.py")
MEMHOG = os.path.join(HERE, "memhog.py")
PY = "/usr/bin/python3"
CG = "/sys/fs/cgroup"
MIB = 1024 * 1024
SLURM_DIR = os.path.join(HERE, "slurm")
SLURM_RUN = os.environ.get("RUN", "/tmp/sluice-enforce-slurm")
BOOST_SHARES = 262144


def log(msg):
    print("[enforce %s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


def wait_file(path, timeout, alive=None):
    """Waits for path to exist (bounded); alive() False ends the wait."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if os.path.exists(path):
            return True
        if alive is not None and not alive():
            return os.path.exists(path)
        time.sleep(0.02)
    return False


def read_json(path):
    try:
        with open(path) as fh:
            return json.loads(fh.read().strip() or "null")
    except (OSError, ValueError):
        return None


def proc_cgroup(pid, ctrl):
    try:
        with open("/proc/%d/cgroup" % pid) as fh:
            for line in fh:
                hid, ctrls, path = line.rstrip("\n").split(":", 2)
                if ctrl in ctrls.split(","):
                    return path
    except OSError:
        pass
    return None


def dmesg_kill(pid):
    """The kernel's OOM kill line for pid, parsed: {"anon_rss_kib", ...}."""
    try:
        out = subprocess.run(["dmesg"], capture_output=True, text=True,
                             timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    pat = re.compile(r"Killed process %d \(([^)]*)\) total-vm:(\d+)kB, "
                     r"anon-rss:(\d+)kB, file-rss:(\d+)kB, shmem-rss:(\d+)kB" % pid)
    m = None
    for m in pat.finditer(out):
        pass
    if not m:
        return None
    return {"comm": m.group(1), "anon_rss_kib": int(m.group(3)),
            "file_rss_kib": int(m.group(4)), "shmem_rss_kib": int(m.group(5))}


def workers_for(req):
    return int(math.floor(req)) + 1


# ------------------------------------------------------------------ sides
class Side:
    name = "?"

    def __init__(self, a, scratch):
        self.a = a
        self.dir = os.path.join(scratch, self.name)
        os.makedirs(self.dir, exist_ok=True)
        os.chmod(self.dir, 0o777)
        self.n = 0

    def path(self, what):
        self.n += 1
        return os.path.join(self.dir, "%s-%d" % (what, self.n))

    def boost(self, pid):
        """Gives task pid precedence over the rest of the host (see above)."""
        if not self.a.boost:
            return None
        done = []
        try:
            os.setpriority(os.PRIO_PROCESS, pid, -20)
            done.append("nice -20")
        except OSError:
            pass
        # With sched_autogroup_enabled (this host) a task of the root cpu
        # cgroup competes as its session's autogroup, whose weight is set
        # through /proc/PID/autogroup, not by the task's own nice value.
        try:
            with open("/proc/%d/autogroup" % pid, "w") as fh:
                fh.write("-20")
            done.append("its autogroup's nice -20")
        except OSError:
            pass
        return " + ".join(done) or None

    def start(self):
        pass

    def stop(self):
        pass


class SluiceSide(Side):
    name = "sluice"

    def __init__(self, a, scratch):
        super().__init__(a, scratch)
        self.root = "sluice-prec-%d" % os.getpid()
        self.agent_args = shlex.split(a.agent_args.replace("{root}", self.root))
        self.boosted = set()

    V1_CTRLS = ("memory", "cpu", "cpuacct", "pids", "devices")

    def start(self):
        import harness
        self.h = harness
        # sluice-agent --cgroup-root wants the root to exist in every v1
        # hierarchy it uses (the operator's cgroup): this bench makes it.
        if "{root}" in self.a.agent_args:
            for c in self.V1_CTRLS:
                os.mkdir(os.path.join(CG, c, self.root))
            if self.a.boost:
                with open(os.path.join(CG, "cpu", self.root, "cpu.shares"), "w") as fh:
                    fh.write(str(BOOST_SHARES))
                self.boosted.add(os.path.join(CG, "cpu", self.root))
        self.ctl = harness.Controller(os.path.join(self.dir, "cluster"))
        self.ctl.start()
        self.agent = harness.Agent(self.ctl, "prec1", gpus=0, cpus="2", memory="16Gi",
                                   extra_args=self.agent_args)
        self.agent.start(timeout=30)
        log("sluice: sluiced pid %d, sluice-agent pid %d with %s"
            % (self.ctl.proc.pid, self.agent.proc.pid, " ".join(self.agent_args)))
        head = self.agent.log()[:2000].strip().splitlines()
        self.agent_banner = [ln for ln in head if "cgroup" in ln.lower()][:4]
        for ln in self.agent_banner:
            log("sluice-agent: " + ln)

    def stop(self):
        for d in (getattr(self, "agent", None), getattr(self, "ctl", None)):
            if d is not None:
                d.stop()
        # The root of this run (made above): what the agent left under it
        # is reported, then the tree is removed (rmdir refuses a cgroup
        # that still holds a process: reported too).
        left, stuck = [], []
        for ctrl in sorted(os.listdir(CG)):
            d = os.path.join(CG, ctrl, self.root)
            if not os.path.isdir(d):
                continue
            for sub, dirs, _ in os.walk(d, topdown=False):
                if sub != d:
                    left.append(sub)
                try:
                    os.rmdir(sub)
                except OSError:
                    stuck.append(sub)
        self.leftovers = left
        if left or stuck:
            log("sluice: task cgroups the agent left after it stopped: %s; not removable: %s"
                % (", ".join(left) or "none", ", ".join(stuck) or "none"))

    def boost(self, pid):
        if not self.a.boost:
            return None
        super().boost(pid)
        path = proc_cgroup(pid, "cpu") or "/"
        parts = [p for p in path.split("/") if p]
        if not parts or parts[0] != self.root:
            return "nice -20 (task not under /%s in the cpu hierarchy: %s)" % (self.root, path)
        for i in range(1, len(parts)):
            d = os.path.join(CG, "cpu", *parts[:i])
            if d in self.boosted:
                continue
            try:
                with open(os.path.join(d, "cpu.shares"), "w") as fh:
                    fh.write(str(BOOST_SHARES))
                self.boosted.add(d)
            except OSError as e:
                return "cpu.shares of %s: %s" % (d, e)
        return "cpu.shares %d on %s" % (BOOST_SHARES, ", ".join(sorted(self.boosted)))

    def run(self, argv, cpus, mem_bytes, pidfile, timeout):
        spec = {"name": "prec", "cpus": "%gm" % (cpus * 1000), "memory": "%dMi" % (mem_bytes // MIB),
                "command": argv}
        job = self.ctl.submit(spec)
        jid = job["id"]
        info = {"job": jid, "request": {"cpus": spec["cpus"], "memory": spec["memory"]}}
        if pidfile and wait_file(pidfile, 30):
            pid = read_json(pidfile)["pid"]
            info["boost"] = self.boost(pid)
        j = self.h.wait_for(lambda: (lambda x: x if x["state"] not in ("pending", "running")
                                     else None)(self.ctl.job(jid)),
                            timeout=timeout, interval=0.1, what="job %d ended" % jid)
        info["job_end"] = j
        info["outcome"] = j["state"]
        return info


class DirectSide(Side):
    """The bench's own cgroup v1 per task (no scheduler)."""
    name = "direct"

    def __init__(self, a, scratch):
        super().__init__(a, scratch)
        self.root = "sluice-prec-direct-%d" % os.getpid()
        self.ctrls = ("cpu", "cpuacct", "memory")

    def start(self):
        for c in self.ctrls:
            os.mkdir(os.path.join(CG, c, self.root))
        if self.a.boost:
            with open(os.path.join(CG, "cpu", self.root, "cpu.shares"), "w") as fh:
                fh.write(str(BOOST_SHARES))

    def stop(self):
        for c in self.ctrls:
            d = os.path.join(CG, c, self.root)
            for sub, _, _ in sorted(os.walk(d, topdown=False)):
                try:
                    os.rmdir(sub)
                except OSError as e:
                    log("direct: cannot remove %s: %s" % (sub, e))

    def boost(self, pid):
        super().boost(pid)
        return "cpu.shares %d on the run's root + nice -20" % BOOST_SHARES if self.a.boost else None

    def run(self, argv, cpus, mem_bytes, pidfile, timeout):
        leaf = "t%d" % self.n
        dirs = {c: os.path.join(CG, c, self.root, leaf) for c in self.ctrls}
        for d in dirs.values():
            os.mkdir(d)

        def put(c, f, v):
            with open(os.path.join(dirs[c], f), "w") as fh:
                fh.write(str(v))
        put("cpu", "cpu.cfs_period_us", 100000)
        put("cpu", "cpu.cfs_quota_us", int(round(cpus * 100000)))
        hard = mem_bytes * 110 // 100
        put("memory", "memory.limit_in_bytes", hard)
        put("memory", "memory.memsw.limit_in_bytes", hard)
        put("memory", "memory.soft_limit_in_bytes", mem_bytes * 90 // 100)

        def enter():
            for d in dirs.values():
                with open(os.path.join(d, "cgroup.procs"), "w") as fh:
                    fh.write("0")
        # A session of its own, as the agent's and Slurm's tasks have: the
        # boost then renices the task's autogroup, not this bench's.
        p = subprocess.Popen(argv, preexec_fn=enter, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
        info = {"cgroup": "/%s/%s" % (self.root, leaf), "hard_limit_written": hard}
        if pidfile and wait_file(pidfile, 30, lambda: p.poll() is None):
            info["boost"] = self.boost(p.pid)
        try:
            rc = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            rc = p.wait()
        info["outcome"] = "exit %d" % rc if rc >= 0 else "signal %d" % -rc
        for d in dirs.values():
            try:
                os.rmdir(d)
            except OSError:
                pass
        return info


class SlurmSide(Side):
    name = "slurm"

    def __init__(self, a, scratch):
        super().__init__(a, scratch)
        self.env = dict(os.environ, SLURM_CONF=os.path.join(SLURM_RUN, "etc", "slurm.conf"))

    def available(self):
        if not shutil.which("srun") or not os.path.exists(self.env["SLURM_CONF"]):
            return "srun or %s missing" % self.env["SLURM_CONF"]
        try:
            p = subprocess.run(["scontrol", "ping"], env=self.env, capture_output=True,
                               text=True, timeout=15)
        except (OSError, subprocess.SubprocessError) as e:
            return str(e)
        return None if "is UP" in p.stdout else (p.stdout + p.stderr).strip()

    def start(self):
        if self.a.slurm_setup:
            subprocess.run([os.path.join(SLURM_DIR, "setup.sh")], check=True, timeout=300)
        why = self.available()
        if why:
            raise RuntimeError("Slurm of bench/enforce/slurm not answering (%s); "
                               "run bench/enforce/slurm/setup.sh or pass --slurm-setup" % why)
        v = subprocess.run(["scontrol", "--version"], env=self.env, capture_output=True,
                           text=True, timeout=15).stdout.strip()
        with open(os.path.join(SLURM_RUN, "etc", "cgroup.conf")) as fh:
            self.cgroup_conf = [ln.strip() for ln in fh
                                if ln.strip() and not ln.startswith("#")]
        log("slurm: %s, cgroup.conf: %s" % (v, "; ".join(self.cgroup_conf)))

    def stop(self):
        if self.a.slurm_setup:
            subprocess.run([os.path.join(SLURM_DIR, "teardown.sh")], timeout=300)

    def run(self, argv, cpus, mem_bytes, pidfile, timeout):
        cores = int(math.ceil(cpus))
        cmd = ["srun", "-N1", "-n1", "-c", str(cores), "--mem=%dM" % (mem_bytes // MIB),
               "-t", "5", "--chdir", self.dir, "--quiet"] + argv
        p = subprocess.Popen(cmd, env=self.env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        info = {"request": {"cpus_per_task": cores, "mem": "%dM" % (mem_bytes // MIB)}}
        if pidfile and wait_file(pidfile, 60, lambda: p.poll() is None):
            info["boost"] = self.boost(read_json(pidfile)["pid"])
        try:
            out, _ = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGINT)
            out, _ = p.communicate(timeout=30)
        info["srun_output"] = out.decode(errors="replace")[-1000:]
        info["outcome"] = "exit %d" % p.returncode if p.returncode >= 0 else \
            "signal %d" % -p.returncode
        if "oom-kill" in info["srun_output"] or "Out Of Memory" in info["srun_output"]:
            info["outcome"] += " (Slurm: Out Of Memory)"
        return info


# ------------------------------------------------------------------ cases
def cpu_case(side, req, a):
    w = workers_for(req)
    out = side.path("cpu")
    pidf = out + ".pid"
    argv = [PY, BUSY, str(w), str(a.seconds), out, "--pidfile", pidf, "--settle", "0.5"]
    info = side.run(argv, req, 256 * MIB, pidf, a.seconds + 60)
    r = read_json(out)
    res = {"side": side.name, "case": "cpu", "request_cpus": req, "workers": w, **info}
    if not r:
        res["error"] = "no result from busy.py (%s)" % info.get("outcome")
        log("%s cpu %.2f: %s" % (side.name, req, res["error"]))
        return res
    res["task"] = r
    recv = r["cpu_s"] / r["wall_s"]
    res["received_cpus"] = recv
    res["error_pct"] = 100.0 * (recv / req - 1.0)
    cg = r["cgroup"]
    st = cg["cpu_stat_delta"]
    res["throttled_frac"] = (st["nr_throttled"] / st["nr_periods"]) if st["nr_periods"] else None
    if cg.get("cpuacct_usage_s") is not None and cg.get("cpuacct_path") not in (None, "/") \
            and cg.get("cpuacct_path") == cg.get("cpu_path"):
        res["received_cpus_cpuacct"] = cg["cpuacct_usage_s"] / r["wall_s"]
    log("%s cpu request %.2f (%d busy processes): received %.4f CPUs over %.2f s "
        "(error %+.2f%%)%s; quota %s/%s us, throttled in %s of %d periods; cpuset %s; "
        "load %.2f"
        % (side.name, req, w, recv, r["wall_s"], res["error_pct"],
           ", cgroup cpuacct %.4f" % res["received_cpus_cpuacct"]
           if "received_cpus_cpuacct" in res else "",
           cg["cfs_quota_us"], cg["cfs_period_us"], st["nr_throttled"], st["nr_periods"],
           ",".join(map(str, r["cpuset"])), r["loadavg"][0]))
    return res


def mem_case(side, req_mib, a, frac_cap, label):
    st = side.path("mem")
    cap = req_mib * frac_cap
    argv = [PY, MEMHOG, "1", "%g" % cap, st, "64"]
    info = side.run(argv, 1.0, req_mib * MIB, None, 120)
    head, last = read_json(st + ".head"), read_json(st)
    res = {"side": side.name, "case": label, "request_mib": req_mib,
           "cap_mib": cap, **info, "head": head, "last": last}
    target = req_mib * MIB * 1.1
    res["target_bytes"] = target
    if not head or not last:
        res["error"] = "no record from memhog.py (%s)" % info.get("outcome")
        log("%s %s: %s" % (side.name, label, res["error"]))
        return res
    res["killed"] = not last.get("done")
    je = info.get("job_end")
    if je:  # what Sluice itself reports (the agent reads the task's cgroup)
        pl = (je.get("placement") or [{}])[0]
        res["reported"] = "%s; %s" % (je.get("state"), je.get("reason") or "no reason") + (
            "; mem_peak_bytes %s, mem_limit_bytes %s" % (pl.get("mem_peak_bytes"),
                                                         pl.get("mem_limit_bytes"))
            if "mem_peak_bytes" in pl else "")
    elif "srun_output" in info:
        res["reported"] = " / ".join(ln.strip() for ln in info["srun_output"].splitlines()
                                     if "oom" in ln.lower() or "memory" in ln.lower())[:300]
    res["limit_bytes"] = head["limit"]
    res["limit_error_pct"] = 100.0 * (head["limit"] / target - 1.0) if head["limit"] else None
    if res["killed"]:
        res["kill_point_bytes"] = last["usage"]
        res["kill_point_at_limit_bytes"] = last.get("usage_at_limit")
        res["error_pct"] = 100.0 * (last["usage"] / target - 1.0)
        res["dmesg"] = dmesg_kill(head["pid"])
    log("%s %s, request %d MiB (target hard limit %.2f MiB): %s; limit seen by the task "
        "%s MiB (set at %s), memsw %s MiB, soft %s MiB; last usage %.2f MiB after "
        "touching %.2f MiB%s; outcome %s"
        % (side.name, label, req_mib, target / MIB,
           "KILLED" if res["killed"] else "not killed",
           "%.2f" % (head["limit"] / MIB) if head["limit"] < 2 ** 60 else "none",
           head["limit_set_at"], "%.2f" % (head["memsw_limit"] / MIB)
           if head["memsw_limit"] and head["memsw_limit"] < 2 ** 60 else "none",
           "%.2f" % (head["soft_limit"] / MIB)
           if head["soft_limit"] and head["soft_limit"] < 2 ** 60 else "none",
           last["usage"] / MIB, last["touched"] / MIB,
           " (error %+.3f%% vs target)" % res["error_pct"] if res["killed"] else "",
           info.get("outcome")))
    if res.get("reported"):
        log("%s %s: the scheduler reports: %s" % (side.name, label, res["reported"]))
    return res


# ---------------------------------------------------------------- summary
def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def summary(results, a, sides):
    L = []
    L.append("| CPU request | side | asked as | received CPUs (median; min-max) | error (median; min-max) | throttled periods | received by cgroup cpuacct |")
    L.append("|---|---|---|---|---|---|---|")
    for req in a.cpu_requests:
        for s in sides:
            rs = [r for r in results if r["side"] == s and r["case"] == "cpu"
                  and r["request_cpus"] == req and "received_cpus" in r]
            if not rs:
                continue
            rc = [r["received_cpus"] for r in rs]
            er = [r["error_pct"] for r in rs]
            asked = ("-c %d (cpuset %s)" % (rs[0]["request"]["cpus_per_task"],
                                             ",".join(map(str, rs[0]["task"]["cpuset"])))
                     if s == "slurm" else
                     "cfs quota %s us / %s us" % (rs[0]["task"]["cgroup"]["cfs_quota_us"],
                                                  rs[0]["task"]["cgroup"]["cfs_period_us"]))
            tf = [r["throttled_frac"] for r in rs if r.get("throttled_frac") is not None]
            ca = [r["received_cpus_cpuacct"] for r in rs if "received_cpus_cpuacct" in r]
            L.append("| %.2f | %s | %s | %.4f; %.4f-%.4f | %+.2f%%; %+.2f..%+.2f%% | %s | %s |"
                     % (req, s, asked, med(rc), min(rc), max(rc), med(er), min(er), max(er),
                        "%.0f%%" % (100 * med(tf)) if tf else "-",
                        "%.4f" % med(ca) if ca else "-"))
    L.append("")
    L.append("| memory request | side | hard limit the task saw | 110% target | kill point: the task's cgroup usage at its last 64 KiB before the kill (median; min-max) | error vs target | usage of the cgroup that holds the limit, then | kernel's anon-rss at the kill | soft limit | stays at 90%: killed? |")
    L.append("|---|---|---|---|---|---|---|---|---|---|")
    for s in sides:
        rs = [r for r in results if r["side"] == s and r["case"] == "mem-over"
              and r.get("kill_point_bytes")]
        ok = [r for r in results if r["side"] == s and r["case"] == "mem-within" and "killed" in r]
        if not rs:
            continue
        kp = [r["kill_point_bytes"] / MIB for r in rs]
        er = [r["error_pct"] for r in rs]
        anon = [r["dmesg"]["anon_rss_kib"] / 1024 for r in rs if r.get("dmesg")]
        soft = rs[0]["head"]["soft_limit"]
        kl = [r["kill_point_at_limit_bytes"] / MIB for r in rs
              if r.get("kill_point_at_limit_bytes")]
        L.append("| %d MiB | %s | %.2f MiB | %.2f MiB | %.2f MiB; %.2f-%.2f | %+.3f%%; %+.3f..%+.3f%% | %s | %s | %s | %s |"
                 % (a.mem_request, s, rs[0]["limit_bytes"] / MIB, rs[0]["target_bytes"] / MIB,
                    med(kp), min(kp), max(kp), med(er), min(er), max(er),
                    "%.2f MiB" % med(kl) if kl else "-",
                    "%.2f MiB" % med(anon) if anon else "-",
                    "%.2f MiB" % (soft / MIB) if soft and soft < 2 ** 60 else "not set",
                    ", ".join("yes" if r["killed"] else "no" for r in ok) or "-"))
    return "\n".join(L)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--sides", default="sluice,slurm",
                    help="comma-separated: sluice, slurm, direct")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--cases", default="cpu,mem")
    ap.add_argument("--cpu-requests", default="0.25,0.5,1,1.5")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--mem-request", type=int, default=128, help="MiB")
    ap.add_argument("--agent-args", default="--cgroup v1 --cgroup-root {root}",
                    help="extra sluice-agent arguments ({root}: this run's cgroup root name)")
    ap.add_argument("--slurm-setup", action="store_true",
                    help="start bench/enforce/slurm/setup.sh first, teardown.sh at the end")
    ap.add_argument("--no-boost", dest="boost", action="store_false")
    ap.add_argument("--max-load", type=float, default=0,
                    help="before each CPU case wait (at most 60 s) for the 1-minute "
                         "load average to fall below this (0: do not wait)")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    a.cpu_requests = [float(x) for x in a.cpu_requests.split(",") if x]
    a.cases = [c for c in a.cases.split(",") if c]
    a.reps = max(1, min(a.reps, 20))
    a.seconds = max(1.0, min(a.seconds, 60.0))
    a.out = a.out or "/tmp/sluice-enforce-bench/%s" % time.strftime("%Y%m%d-%H%M%S")
    os.makedirs(a.out, exist_ok=True)
    os.chmod(a.out, 0o755)
    names = [s for s in a.sides.split(",") if s]
    kinds = {"sluice": SluiceSide, "slurm": SlurmSide, "direct": DirectSide}
    sides = [kinds[n](a, a.out) for n in names]
    meta = {"date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
            "kernel": os.uname().release, "nproc": os.cpu_count(),
            "args": {k: v for k, v in vars(a).items()}, "loadavg_start": os.getloadavg()}
    try:
        meta["git"] = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                                     capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    results = []

    def on_term(signum, frame):
        raise SystemExit("precision: signal %d: stopping what it started" % signum)
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGHUP, on_term)
    started = []
    try:
        for s in list(sides):
            try:
                s.start()
            except RuntimeError as e:
                if s.name != "slurm":
                    raise
                # Slurm is measured where its cluster runs; say why not.
                log("slurm: not measured: %s" % e)
                meta["slurm_not_measured"] = str(e)
                sides.remove(s)
                names.remove(s.name)
                continue
            started.append(s)
        for rep in range(a.reps):
            log("repetition %d of %d" % (rep + 1, a.reps))
            if "cpu" in a.cases:
                for req in a.cpu_requests:
                    for s in sides:
                        deadline = time.monotonic() + 60
                        while a.max_load > 0 and os.getloadavg()[0] > a.max_load and time.monotonic() < deadline:
                            time.sleep(2)
                        results.append(cpu_case(s, req, a))
            if "mem" in a.cases:
                for s in sides:
                    results.append(mem_case(s, a.mem_request, a, 3, "mem-over"))
                    results.append(mem_case(s, a.mem_request, a, 0.9, "mem-within"))
    finally:
        for s in reversed(started):
            try:
                s.stop()
            except Exception as e:  # keep stopping the others
                log("stopping %s: %s" % (s.name, e))
        meta["loadavg_end"] = os.getloadavg()
        for s in sides:
            for k in ("agent_banner", "leftovers", "cgroup_conf"):
                if hasattr(s, k):
                    meta["%s_%s" % (s.name, k)] = getattr(s, k)
        with open(os.path.join(a.out, "results.json"), "w") as fh:
            json.dump({"meta": meta, "results": results}, fh, indent=1, default=str)
    s = summary(results, a, names)
    with open(os.path.join(a.out, "summary.md"), "w") as fh:
        fh.write(s + "\n")
    print()
    print(s)
    print()
    log("raw results: %s/results.json" % a.out)


if __name__ == "__main__":
    main()
