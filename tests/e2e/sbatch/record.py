#!/usr/bin/python3
"""
record.py - what Slurm 22.05's sbatch makes of each script of this corpus,
recorded from a real slurmctld as tests/e2e/sbatch/expected/NAME.json.

    tests/e2e/sbatch/record.py --setup      # start a private slurmctld (root)
    tests/e2e/sbatch/record.py              # record expected/*.json
    tests/e2e/sbatch/record.py --teardown   # stop it

The private cluster lives under /tmp/sluice-sbatch-slurm (its own ports,
6857/6858, and its own munged) so that it runs beside
../shared/peers/slurm's and other tests' clusters. It is made from the
peer's configuration (Debian 12's Slurm 22.05 packages, loopback only)
with what the corpus needs: four nodes sb[1-4] of 128 CPUs, 1 TiB and eight
a100 GPUs each, with the feature a100, and partitions main (the default),
gpu and debug. No slurmd runs: every job is submitted held (--hold), read
back with `scontrol show job` and `scontrol write batch_script`, and
cancelled, so nothing is ever started.

Before the corpus, three held placeholder jobs take ids 1, 2 and 3 (a fresh
cluster's first ids), which the dependency scripts name. Each script is
submitted unchanged from a fixed directory (SUBMIT_DIR), which the record
writes as "$SUBMIT_DIR" so that the test can put its own in.

test_sbatch_corpus.py imports this file: with the private cluster running
it submits every script again and compares the live answer as well.
"""

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RUN = "/tmp/sluice-sbatch-slurm"
CONF = os.path.join(RUN, "etc", "slurm.conf")
SUBMIT_DIR = os.path.join(RUN, "submit")
PLACEHOLDERS = 3

# The fields of `scontrol show job` the test compares.
FIELDS = ["JobName", "NumNodes", "NumCPUs", "NumTasks", "CPUs/Task", "MinMemoryNode",
          "MinMemoryCPU", "TimeLimit", "Partition", "Account", "StdOut", "StdErr", "WorkDir",
          "Dependency", "ArrayTaskId", "ArrayTaskThrottle", "TresPerNode", "TresPerTask",
          "TresPerJob", "Features", "OverSubscribe", "TRES", "Command"]

SLURM_CONF = """# The private cluster of tests/e2e/sbatch/record.py (see its header).
ClusterName=sluicesb
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=6857
SlurmdPort=6858
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={run}/munge/munge.socket.2
StateSaveLocation={run}/state
SlurmdSpoolDir={run}/spool
SlurmctldPidFile={run}/run/slurmctld.pid
SlurmdPidFile={run}/run/slurmd-%n.pid
SlurmctldLogFile={run}/log/slurmctld.log
SlurmdLogFile={run}/log/slurmd-%n.log
SlurmctldDebug=info
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
NodeName=sb[1-4] NodeHostname=localhost NodeAddr=127.0.0.1 CPUs=128 Boards=1 SocketsPerBoard=1 CoresPerSocket=128 ThreadsPerCore=1 RealMemory=1048576 Gres=gpu:a100:8 Features=a100 State=UNKNOWN
PartitionName=main Nodes=sb[1-4] Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu Nodes=sb[1-4] MaxTime=INFINITE State=UP
PartitionName=debug Nodes=sb[1-2] MaxTime=INFINITE State=UP
"""


def env():
    e = dict(os.environ)
    e["SLURM_CONF"] = CONF
    for k in list(e):
        if k.startswith("SBATCH_") or k.startswith("SLURM_") and k != "SLURM_CONF":
            del e[k]
    return e


def sh(args, **kw):
    return subprocess.run(args, env=env(), capture_output=True, text=True, timeout=60, **kw)


def up():
    """Whether the private cluster answers."""
    if not os.path.exists(CONF):
        return False
    try:
        return "is UP" in sh(["scontrol", "ping"]).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False


def pid_of(path):
    try:
        with open(path) as f:
            pid = int(f.read().strip())
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError):
        return None


def teardown():
    for path, exe in ((os.path.join(RUN, "run", "slurmctld.pid"), "slurmctld"),
                      (os.path.join(RUN, "munge", "munged.pid"), "munged")):
        pid = pid_of(path)
        if pid is None:
            continue
        want = os.path.realpath(shutil.which(exe) or "/usr/sbin/" + exe)
        if os.path.realpath("/proc/%d/exe" % pid) != want:
            print("record.py: pid %d is not %s; left alone" % (pid, exe), file=sys.stderr)
            continue
        os.kill(pid, 15)
        for _ in range(100):
            if pid_of(path) is None:
                break
            time.sleep(0.1)


def setup():
    teardown()
    subprocess.run(["rm", "-rf", RUN], check=True)
    for d in ("etc", "state", "spool", "log", "run", "munge", "submit"):
        os.makedirs(os.path.join(RUN, d))
    with open(CONF, "w") as f:
        f.write(SLURM_CONF.format(run=RUN))
    m = os.path.join(RUN, "munge")
    subprocess.run(["chown", "munge:munge", m], check=True)
    with open(os.path.join(m, "munge.key"), "wb") as f:
        f.write(os.urandom(1024))
    subprocess.run(["chown", "munge:munge", os.path.join(m, "munge.key")], check=True)
    os.chmod(os.path.join(m, "munge.key"), 0o400)
    subprocess.run(["runuser", "-u", "munge", "--", "/usr/sbin/munged",
                    "--key-file=%s/munge.key" % m, "--socket=%s/munge.socket.2" % m,
                    "--pid-file=%s/munged.pid" % m, "--log-file=%s/munged.log" % m,
                    "--seed-file=%s/munged.seed" % m, "--num-threads=2"], check=True)
    subprocess.run(["slurmctld", "-f", CONF], env=env(), check=True)
    for _ in range(150):
        if up():
            break
        time.sleep(0.2)
    else:
        sys.exit("record.py: slurmctld did not come up; see %s/log/slurmctld.log" % RUN)
    for _ in range(PLACEHOLDERS):
        r = sh(["sbatch", "--hold", "--parsable", "-J", "placeholder", "--wrap", "true"],
               cwd=SUBMIT_DIR)
        if r.returncode != 0:
            sys.exit("record.py: placeholder: " + r.stderr)
    print("record.py: private Slurm up (SLURM_CONF=%s)" % CONF)


def show_job(jid):
    """`scontrol show job -o` as a dict of its key=value pairs."""
    r = sh(["scontrol", "show", "job", "-o", str(jid)])
    if r.returncode != 0:
        raise RuntimeError("scontrol show job %s: %s" % (jid, r.stderr))
    line = r.stdout.splitlines()[0]
    return dict(re.findall(r"(?:^| )([A-Za-z][A-Za-z/:]*)=(.*?)(?= [A-Za-z][A-Za-z/:]*=|$)", line))


def corpus():
    return sorted(glob.glob(os.path.join(HERE, "*.sh")))


def submit(path, cwd=SUBMIT_DIR):
    """Submits path held, unchanged, from cwd; returns the recorded fields
    (the submit directory written as $SUBMIT_DIR) and the stored script."""
    r = sh(["sbatch", "--hold", "--parsable", path], cwd=cwd)
    if r.returncode != 0:
        return {"error": r.stderr.strip()}, None
    jid = int(r.stdout.strip().split(";")[0])
    try:
        job = show_job(jid)
        script = sh(["scontrol", "write", "batch_script", str(jid), "-"]).stdout
    finally:
        sh(["scancel", str(jid)])
    rec = {k: job[k].replace(cwd, "$SUBMIT_DIR") for k in FIELDS if k in job}
    rec["JobId"] = jid
    return rec, script


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--setup", action="store_true", help="start the private cluster")
    ap.add_argument("--teardown", action="store_true", help="stop it")
    a = ap.parse_args()
    if a.teardown:
        teardown()
        return
    if a.setup:
        setup()
        return
    if not up():
        sys.exit("record.py: the private cluster is not running; run record.py --setup")
    version = sh(["sbatch", "--version"]).stdout.strip()
    for path in corpus():
        rec, script = submit(path)
        with open(path) as f:
            if script is not None and script != f.read():
                sys.exit("record.py: Slurm stored %s differently" % path)
        name = os.path.basename(path)[:-3]
        out = {"script": os.path.basename(path), "slurm_version": version, "slurm": rec}
        with open(os.path.join(HERE, "expected", name + ".json"), "w") as f:
            json.dump(out, f, indent=1, sort_keys=True)
            f.write("\n")
        print("%s: %s" % (name, rec.get("error") or "job %d" % rec["JobId"]))


if __name__ == "__main__":
    main()
