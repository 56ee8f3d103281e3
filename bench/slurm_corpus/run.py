#!/usr/bin/python3
"""
run.py - real public GPU batch scripts, each run under Sluice and under a
real Slurm 22.05 in the same run, and what each rank saw compared.

    bench/slurm_corpus/run.py --collect   # copy the scripts of sources.txt from
                                          # /work/.mirror (tools' fetch), write
                                          # manifest.json (repo, path, commit, licence)
    bench/slurm_corpus/run.py             # run them all; write results.md
    bench/slurm_corpus/run.py --only 3,7  # some of them

The scripts are third-party and stay out of the repository (scripts/ is
ignored by git): manifest.json names each one's repository, path and the
commit it was taken at, so anyone can fetch the same text.

Each script runs as a CPU-only variant made mechanically (variant()):
- its #SBATCH directives are kept as written (GPU ones too: both clusters
  have eight GPUs a node, emulated), except the names of the authors' site,
  which no test cluster has: -p/--partition, -A/--account, -q/--qos,
  -w/--nodelist, -C/--constraint, --reservation, --mail-*, GPU models
  (--gres=gpu:a100:2 is --gres=gpu:2), and their
  memory sizes (--mem, --mem-per-cpu, --mem-per-gpu), which exceed the test
  nodes' 16000 MB; -o/-e are given on the command line (into the run's
  directory);
- the payload (python, torchrun, accelerate, deepspeed, ray, nvidia-smi,
  a container, ...: the rest of the command after it) is replaced by a
  probe that prints what the rank sees: its node (SLURMD_NODENAME),
  SLURM_PROCID, SLURM_NODEID, SLURM_LOCALID, SLURM_NNODES, SLURM_NTASKS,
  the step, the array index and MASTER_ADDR as the script computed it;
  environment set-up (module, conda, source, pip, virtualenv) is a no-op;
  everything else (srun and its options, scontrol, hostname, the script's
  own shell logic) runs as written.

Slurm: a private slurmctld and two slurmd (nodes n1 and n2, 128 CPUs,
16000 MB and 8 GPUs each, one partition) from Debian's Slurm 22.05, on
loopback ports 6967-6972 under /tmp/s21corpus-slurm (beside the shared
peer's, which it does not touch), started here and stopped at the end.
Sluice: sluiced and two agents n1 and n2 (the same sizes), each in a
network namespace of its own with its own hostname (tests/e2e's
netns_util), from this checkout's build/.

A script agrees when both accept it or both refuse it, the multisets of
probe lines are equal (node names as node names, up to renaming n1 and n2,
which each scheduler picks for each job, an array's element each; MASTER_ADDR a host name or address of a node
is that node) and the exit statuses are equal.
results.md lists every script with why it disagrees.
"""

import argparse
import collections
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SCRIPTS = os.path.join(HERE, "scripts")
MANIFEST = os.path.join(HERE, "manifest.json")
MIRROR = "/work/.mirror"
RUN = "/tmp/s21corpus-slurm"
TIMEOUT = 60

sys.path.insert(0, os.path.join(REPO, "tests", "e2e"))
sys.path.insert(0, os.path.join(REPO, "tests", "e2e", "fixtures"))


# ---- the corpus ----

def sources():
    out = []
    with open(os.path.join(HERE, "sources.txt")) as f:
        for line in f:
            line = line.rstrip("\n")
            if line and not line.startswith("#"):
                repo, path = line.split(" ", 1)
                out.append((repo, path))
    return out


def licence_of(git):
    names = subprocess.run(["git", "--git-dir", git, "ls-tree", "--name-only", "HEAD"],
                           capture_output=True, text=True).stdout.split()
    for n in names:
        if re.match(r"(?i)^(licen[cs]e|copying)(\.|$)", n):
            text = subprocess.run(["git", "--git-dir", git, "show", "HEAD:" + n],
                                  capture_output=True, text=True).stdout
            first = next((x.strip() for x in text.splitlines() if x.strip()), "")
            return "%s: %s" % (n, first[:80])
    return "no licence file in the repository"


def collect():
    os.makedirs(SCRIPTS, exist_ok=True)
    manifest = []
    for k, (repo, path) in enumerate(sources(), 1):
        git = os.path.join(MIRROR, repo.replace("/", "+"), "repo")
        commit = subprocess.run(["git", "--git-dir", git, "rev-parse", "HEAD"],
                                capture_output=True, text=True).stdout.strip()
        text = subprocess.run(["git", "--git-dir", git, "show", "HEAD:" + path],
                              capture_output=True, text=True)
        if text.returncode != 0 or not commit:
            print("missing: %s %s" % (repo, path), file=sys.stderr)
            continue
        name = "%02d_%s" % (k, re.sub(r"[^A-Za-z0-9._-]", "_", os.path.basename(path)))
        with open(os.path.join(SCRIPTS, name), "w") as f:
            f.write(text.stdout)
        manifest.append({"id": k, "file": name, "repo": repo, "path": path, "commit": commit,
                         "url": "https://github.com/%s/blob/%s/%s" % (repo, commit, path),
                         "licence": licence_of(git)})
    with open(MANIFEST, "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    print("%d scripts from %d repositories" % (len(manifest), len({m["repo"] for m in manifest})))


# ---- the CPU-only variant ----

SITE_OPTS = {"p": "partition", "A": "account", "q": "qos", "w": "nodelist", "C": "constraint"}
SITE_LONG = ("partition", "account", "qos", "nodelist", "constraint", "constraints", "reservation",
             "mail-type", "mail-user", "mem", "mem-per-cpu", "mem-per-gpu", "output", "error")
SITE_SHORT = ("p", "A", "q", "w", "C", "o", "e")
PAYLOAD = r"(?<![\w./$-])(?:python[0-9.]*|torchrun|accelerate|deepspeed|nvidia-smi|ray|" \
          r"singularity|apptainer|mpirun|mpiexec|jupyter|julia|Rscript|\./[\w./-]+)(?![\w.-])"
SETUP = re.compile(r"^\s*(module|ml|conda|source|\.|pip3?|virtualenv|spack|activate)\s")
PROBE = ('#!/bin/sh\necho "PROBE node=${SLURMD_NODENAME:-} procid=${SLURM_PROCID:-} '
         'nodeid=${SLURM_NODEID:-} localid=${SLURM_LOCALID:-} nnodes=${SLURM_NNODES:-} '
         'ntasks=${SLURM_NTASKS:-} step=${SLURM_STEP_ID:-batch} '
         'array=${SLURM_ARRAY_TASK_ID:-} master=${MASTER_ADDR:-} host=$(hostname)"\n')


def strip_site(words):
    """The directive's words less the site's options (see the header)."""
    out, i = [], 0
    while i < len(words):
        w = words[i]
        m = re.match(r"^--([\w-]+)(=.*)?$", w)
        if m and m.group(1) in SITE_LONG:
            i += 1 if m.group(2) is not None else 2
            continue
        m = re.match(r"^-([A-Za-z])(.*)$", w)
        if m and not w.startswith("--") and m.group(1) in SITE_SHORT:
            i += 1 if m.group(2) else 2
            continue
        # GPU models are the site's names too: gpu:a100:2 is gpu:2.
        m = re.match(r"^--gres=gpu:[A-Za-z][\w-]*:(\d+)$", w)
        if m:
            w = "--gres=gpu:" + m.group(1)
        m = re.match(r"^(--gpus(?:-per-node|-per-task)?=)[A-Za-z][\w-]*:(\d+)$", w)
        if m:
            w = m.group(1) + m.group(2)
        out.append(w)
        i += 1
    return out


def variant(text, probe):
    lines = text.split("\n")
    out, in_header, inserted = [], True, False
    # Continuation lines joined, so that a payload's arguments go with it.
    joined = []
    for line in lines:
        if joined and joined[-1].endswith("\\") and not joined[-1].lstrip().startswith("#"):
            joined[-1] = joined[-1][:-1] + " " + line.strip()
        else:
            joined.append(line)
    for k, line in enumerate(joined):
        s = line.strip()
        if in_header and k > 0 and s and not s.startswith("#"):
            in_header = False
        if in_header and s.startswith("#SBATCH"):
            body = s[len("#SBATCH"):]
            words = body.split("#", 1)[0].split()
            kept = strip_site(words)
            out.append("#SBATCH " + " ".join(kept) if kept else "# (site directive dropped)")
            continue
        if not in_header and not inserted:
            out.append("export PROBE=%s" % probe)
            inserted = True
        if s.startswith("#") or not s:
            out.append(line)
            continue
        if SETUP.match(line):
            out.append(": " + line.strip().replace("'", ""))
            continue
        out.append(re.sub(PAYLOAD + r"[^'\"|;&)`]*", "$PROBE ", line))
    if not inserted:
        out.append("export PROBE=%s" % probe)
    return "\n".join(out)


# ---- what the ranks saw ----

def probes(files, names):
    """The probe lines of files as tuples, hosts and addresses of a node
    read as that node (names: value -> node)."""
    got = []
    for f in files:
        try:
            text = open(f, errors="replace").read()
        except OSError:
            continue
        for line in text.splitlines():
            if not line.startswith("PROBE "):
                continue
            kv = dict(w.split("=", 1) for w in line.split()[1:] if "=" in w)
            m = kv.get("master", "")
            kv["master"] = names.get(m, m)
            kv.pop("host", None)
            got.append(tuple(sorted(kv.items())))
    return collections.Counter(got)


# ---- Slurm ----

SLURM_CONF = """ClusterName=s21corpus
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=6967
SlurmdPort=6968
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={run}/munge/munge.socket.2
StateSaveLocation={run}/state
SlurmdSpoolDir={run}/spool/%n
SlurmctldPidFile={run}/run/slurmctld.pid
SlurmdPidFile={run}/run/slurmd-%n.pid
SlurmctldLogFile={run}/log/slurmctld.log
SlurmdLogFile={run}/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
GresTypes=gpu
MaxArraySize=10001
MinJobAge=30
ReturnToService=2
MailProg=/bin/true
SlurmdParameters=config_overrides
NodeName=n1 NodeHostname=localhost NodeAddr=127.0.0.1 Port=6971 CPUs=128 Boards=1 SocketsPerBoard=1 CoresPerSocket=128 ThreadsPerCore=1 RealMemory=16000 Gres=gpu:8 State=UNKNOWN
NodeName=n2 NodeHostname=localhost NodeAddr=127.0.0.1 Port=6972 CPUs=128 Boards=1 SocketsPerBoard=1 CoresPerSocket=128 ThreadsPerCore=1 RealMemory=16000 Gres=gpu:8 State=UNKNOWN
PartitionName=main Nodes=n[1-2] Default=YES MaxTime=INFINITE State=UP
"""


class Slurm:
    def __init__(self):
        self.conf = os.path.join(RUN, "etc", "slurm.conf")
        self.env = dict(os.environ, SLURM_CONF=self.conf)
        for k in list(self.env):
            if k.startswith(("SBATCH_", "SLURM_", "SLUICE_")) and k != "SLURM_CONF":
                del self.env[k]

    def start(self):
        self.stop()
        shutil.rmtree(RUN, ignore_errors=True)
        for d in ("etc", "state", "spool/n1", "spool/n2", "log", "run", "munge", "dev"):
            os.makedirs(os.path.join(RUN, d))
        shutil.chown(os.path.join(RUN, "munge"), "munge", "munge")
        key = os.path.join(RUN, "munge", "munge.key")
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        shutil.chown(key, "munge", "munge")
        os.chmod(key, 0o400)
        for i in range(8):
            p = os.path.join(RUN, "dev", "nvidia%d" % i)
            try:
                os.mknod(p, 0o666 | 0o020000, os.makedev(1, 3))
            except OSError:
                open(p, "w").close()
        with open(self.conf, "w") as f:
            f.write(SLURM_CONF.format(run=RUN))
        with open(os.path.join(RUN, "etc", "gres.conf"), "w") as f:
            f.write("AutoDetect=off\nNodeName=n[1-2] Name=gpu File=%s/dev/nvidia[0-7]\n" % RUN)
        os.chmod(RUN, 0o755)
        os.chmod(os.path.join(RUN, "etc"), 0o755)
        m = os.path.join(RUN, "munge")
        subprocess.run(["runuser", "-u", "munge", "--", "/usr/sbin/munged",
                        "--key-file=%s/munge.key" % m, "--socket=%s/munge.socket.2" % m,
                        "--pid-file=%s/munged.pid" % m, "--log-file=%s/munged.log" % m,
                        "--seed-file=%s/munged.seed" % m], check=True)
        subprocess.run(["slurmctld", "-f", self.conf], check=True, env=self.env)
        for _ in range(100):
            if b"UP" in subprocess.run(["scontrol", "ping"], capture_output=True,
                                       env=self.env).stdout:
                break
            time.sleep(0.2)
        for n in ("n1", "n2"):
            subprocess.run(["slurmd", "-f", self.conf, "-N", n], check=True, env=self.env)
        for _ in range(150):
            st = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], capture_output=True, text=True,
                                env=self.env).stdout.split()
            if st == ["idle", "idle"]:
                return
            time.sleep(0.2)
        raise RuntimeError("the private Slurm's nodes are not idle: %s" % st)

    def stop(self):
        pids = [os.path.join(RUN, "run", "slurmd-n1.pid"), os.path.join(RUN, "run", "slurmd-n2.pid"),
                os.path.join(RUN, "run", "slurmctld.pid"), os.path.join(RUN, "munge", "munged.pid")]
        for p in pids:
            try:
                pid = int(open(p).read().split()[0])
                exe = os.readlink("/proc/%d/exe" % pid)
            except (OSError, ValueError, IndexError):
                continue
            if os.path.basename(exe).split("-")[0] in ("slurmd", "slurmctld", "munged"):
                os.kill(pid, signal.SIGTERM)
                for _ in range(50):
                    if not os.path.exists("/proc/%d" % pid):
                        break
                    time.sleep(0.1)

    def run(self, path, d):
        """(accepted, exit status or the refusal, files)."""
        r = subprocess.run(["timeout", str(TIMEOUT), "sbatch", "--wait", "-o",
                            os.path.join(d, "o_%A_%a.txt"), "-e", os.path.join(d, "e_%A_%a.txt"),
                            "--chdir", d, path], capture_output=True, text=True, env=self.env, cwd=d)
        if r.returncode != 0 and "Submitted batch job" not in r.stdout:
            subprocess.run(["scancel", "-u", "root"], env=self.env, capture_output=True)
            return False, r.stderr.strip().splitlines()[-1:] or ["rc %d" % r.returncode], []
        if r.returncode == 124:
            subprocess.run(["scancel", "-u", "root"], env=self.env, capture_output=True)
        return True, r.returncode, sorted(os.path.join(d, f) for f in os.listdir(d))

    def names(self):
        m = {"localhost": "n1", "127.0.0.1": "n1"}
        host = subprocess.run(["hostname"], capture_output=True, text=True).stdout.strip()
        m[host] = "n1"
        for a in subprocess.run(["hostname", "-I"], capture_output=True, text=True).stdout.split():
            m[a] = "n1"
        for a in subprocess.run(["hostname", "--ip-address"], capture_output=True,
                                text=True).stdout.split():
            m[a] = "n1"
        return m


# ---- Sluice ----

class Sluice:
    def __init__(self, work):
        import harness
        import netns_util
        self.h, self.nu = harness, netns_util
        self.work = work

    def start(self):
        self.ctl = self.h.Controller(os.path.join(self.work, "ctl"))
        self.ctl.start()
        self.agents, self.nodes = [], None
        kw = dict(gpus=8, cpus=128, memory="16000Mi")
        if self.nu.available():
            self.nodes = self.nu.Nodes(["n1", "n2"])
            self.nodes.relay(self.ctl.agent_port)
            self.nodes.relay(self.ctl.port)
            for n in ("n1", "n2"):
                a = self.nu.NsAgent(self.nodes, self.ctl, n, **kw)
                self.agents.append(a)
                a.start()
        else:
            for n in ("n1", "n2"):
                a = self.h.Agent(self.ctl, n, **kw)
                self.agents.append(a)
                a.start()
        self.env = dict(os.environ, SLUICE_SERVER=self.ctl.url,
                        SLUICE_TOKEN=self.ctl.tenant_tokens["alice"],
                        SLUICE_DIR=os.path.join(self.work, "no-sluice-dir"))
        for k in list(self.env):
            if k.startswith(("SBATCH_", "SLURM_")):
                del self.env[k]
        os.makedirs(self.env["SLUICE_DIR"], exist_ok=True)

    def stop(self):
        for a in getattr(self, "agents", []):
            a.stop()
        if getattr(self, "nodes", None):
            self.nodes.close()
        if getattr(self, "ctl", None):
            self.ctl.stop()

    def run(self, path, d):
        exe = os.path.join(REPO, "build", "sluice")
        r = subprocess.run([exe, "sbatch", "--parsable", "-o", os.path.join(d, "o_%A_%a.txt"), "-e",
                            os.path.join(d, "e_%A_%a.txt"), "--chdir", d, path],
                           capture_output=True, text=True, env=self.env, cwd=d)
        if r.returncode != 0:
            return False, r.stderr.strip().splitlines()[-1:] or ["rc %d" % r.returncode], []
        first = int(r.stdout.strip().split("_")[0])
        deadline = time.time() + TIMEOUT
        worst, status = 0, None
        while time.time() < deadline:
            jobs = [self.ctl.job(first)]
            arr = jobs[0].get("array_id")
            if arr is not None:
                k = first + 1
                while True:
                    try:
                        j = self.ctl.job(k)
                    except Exception:
                        break
                    if j.get("array_id") != arr:
                        break
                    jobs.append(j)
                    k += 1
            if all(j["state"] in ("succeeded", "failed", "cancelled") for j in jobs):
                for j in jobs:
                    worst = max(worst, j.get("exit_code") or (0 if j["state"] == "succeeded" else 1))
                status = worst
                break
            time.sleep(0.2)
        if status is None:
            subprocess.run([exe, "scancel", "-u", "alice"], env=self.env, capture_output=True)
            status = 124
        return True, status, sorted(os.path.join(d, f) for f in os.listdir(d))

    def names(self):
        m = {"n1": "n1", "n2": "n2"}
        if self.nodes:
            for n, a in self.nodes.addr.items():
                m[a] = n
        else:
            host = subprocess.run(["hostname"], capture_output=True, text=True).stdout.strip()
            m[host] = m["localhost"] = m["127.0.0.1"] = "n1"
        return m


# ---- the comparison ----

def renamed(c, mapping):
    """The probe lines of c with node names renamed (node and master)."""
    out = collections.Counter()
    for t, k in c.items():
        out[tuple((key, mapping.get(v, v) if key in ("node", "master") else v)
                  for key, v in t)] += k
    return out


def why(a, b):
    """Why Sluice's (a) and Slurm's (b) runs differ, in words. Which node
    is which is each scheduler's choice: the nodes of one run may be the
    other's renamed (a one-node job on n2 here and on n1 there agrees)."""
    if a[0] and b[0] and a[3] != b[3]:
        # Each job (an array's element) places itself: rename per element.
        swap = {"n1": "n2", "n2": "n1"}
        fixed = collections.Counter()
        for idx in {dict(t).get("array", "") for t in list(a[3]) + list(b[3])}:
            mine = collections.Counter({t: k for t, k in a[3].items()
                                        if dict(t).get("array", "") == idx})
            theirs = collections.Counter({t: k for t, k in b[3].items()
                                          if dict(t).get("array", "") == idx})
            fixed += theirs if mine != theirs and renamed(mine, swap) == theirs else mine
        a = (a[0], a[1], a[2], fixed)
    if a[0] != b[0]:
        if not a[0]:
            return "Sluice refused it: %s" % " ".join(a[1])
        return "Slurm refused it: %s" % " ".join(b[1])
    if not a[0]:
        return ""
    out = []
    if a[1] != b[1]:
        out.append("exit status %s under Sluice, %s under Slurm" % (a[1], b[1]))
    pa, pb = a[3], b[3]
    if pa != pb:
        only_a = list((pa - pb).elements())
        only_b = list((pb - pa).elements())
        keys = collections.Counter()
        for x, y in zip(sorted(only_a), sorted(only_b)):
            for (k, v), (k2, v2) in zip(x, y):
                if v != v2:
                    keys[k] += 1
        if len(only_a) != len(only_b):
            out.append("%d probe lines under Sluice, %d under Slurm" % (sum(pa.values()),
                                                                      sum(pb.values())))
        if keys:
            out.append("differs in " + ", ".join("%s" % k for k in sorted(keys)))
            x, y = sorted(only_a)[0], sorted(only_b)[0]
            out.append("e.g. Sluice {%s} Slurm {%s}" % (
                " ".join("%s=%s" % kv for kv in x if dict(y).get(kv[0]) != kv[1]),
                " ".join("%s=%s" % kv for kv in y if dict(x).get(kv[0]) != kv[1])))
    return "; ".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--collect", action="store_true")
    ap.add_argument("--only", help="comma-separated ids")
    ap.add_argument("--out", default=os.path.join(HERE, "results.md"))
    ap.add_argument("--keep", action="store_true", help="keep the run's directory")
    o = ap.parse_args()
    if o.collect:
        collect()
        return 0
    manifest = json.load(open(MANIFEST))
    if o.only:
        ids = {int(x) for x in o.only.split(",")}
        manifest = [m for m in manifest if m["id"] in ids]
    work = tempfile.mkdtemp(prefix="s21corpus-")
    os.chmod(work, 0o755)
    probe = os.path.join(work, "probe.sh")
    with open(probe, "w") as f:
        f.write(PROBE)
    os.chmod(probe, 0o755)
    slurm, sluice = Slurm(), Sluice(work)
    rows = []
    try:
        slurm.start()
        sluice.start()
        sn, un = slurm.names(), sluice.names()
        for m in manifest:
            text = open(os.path.join(SCRIPTS, m["file"])).read()
            res = {}
            for who, sys_, names in (("sluice", sluice, un), ("slurm", slurm, sn)):
                d = os.path.join(work, "%02d-%s" % (m["id"], who))
                os.makedirs(d)
                os.chmod(d, 0o777)
                path = os.path.join(d, "job.sh")
                with open(path, "w") as f:
                    f.write(variant(text, probe))
                os.chmod(path, 0o755)
                acc, st, files = sys_.run(path, d)
                files = [f for f in files if os.path.basename(f).startswith(("o_", "e_"))]
                with open(os.path.join(d, "result.json"), "w") as f:
                    json.dump({"accepted": acc, "status": st}, f)
                res[who] = (acc, st, files, probes(files, names))
            a, b = res["sluice"], res["slurm"]
            w = why(a, b)
            rows.append((m, not w, w, a, b))
            print("%02d %-9s %s" % (m["id"], "agree" if not w else "DISAGREE", w), flush=True)
    finally:
        sluice.stop()
        slurm.stop()
    agree = sum(1 for r in rows if r[1])
    with open(o.out, "w") as f:
        f.write("# The Slurm corpus under Sluice and under Slurm 22.05\n\n")
        f.write("Written by `bench/slurm_corpus/run.py` (its header says how each script is run "
                "and compared) on %s: **%d of %d** scripts behave as under Slurm.\n\n"
                % (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), agree, len(rows)))
        f.write("| # | script | agree | ranks (Sluice / Slurm) | exit (Sluice / Slurm) | why not |\n")
        f.write("|---|---|---|---|---|---|\n")
        for m, ok, w, a, b in rows:
            f.write("| %d | [%s:%s](%s) | %s | %s / %s | %s / %s | %s |\n" % (
                m["id"], m["repo"], m["path"], m["url"], "yes" if ok else "**no**",
                sum(a[3].values()), sum(b[3].values()),
                a[1] if a[0] else "refused", b[1] if b[0] else "refused",
                w.replace("|", "\\|")))
    print("%d of %d agree; %s" % (agree, len(rows), o.out))
    if o.keep:
        print("the run's files: %s" % work)
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
