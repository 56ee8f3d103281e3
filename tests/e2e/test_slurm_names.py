"""
test_slurm_names.py - Slurm's command names over the sluice binary
(docs/slurm.md, "Slurm's command names"): `scontrol show hostnames`
inside a 2-node allocation (MASTER_ADDR as scripts set it), every name on
a task's PATH ahead of any other Slurm's, `sluice slurm-commands install`,
squeue -h -o -j, sbatch --parsable, scancel, sacct -P -n -o, sinfo -h -o,
scontrol show job|node, bad options named, and an agent's SLURM_CONF and
munge variables kept from its tasks.
"""

import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import harness  # noqa: E402
import e2e_util as u  # noqa: E402
from test_steps import two_nodes, sbatch, write  # noqa: E402,F401

NAMES = ["sbatch", "srun", "salloc", "squeue", "scancel", "sacct", "sinfo", "scontrol"]


@pytest.fixture
def bindir(tmp_path):
    d = tmp_path / "slurm-names"
    r = u.sluice(["slurm-commands", "install", str(d)], u.cli_env(tmpdir=tmp_path))
    assert r.returncode == 0, r.stderr
    for n in NAMES:
        assert os.readlink(str(d / n)) == os.path.join(harness.build_dir(), "sluice")
    return d


def run(bindir, name, args, env, cwd=None):
    return subprocess.run([str(bindir / name)] + list(args), env=env, cwd=cwd, timeout=60,
                          capture_output=True, text=True)


def test_scontrol_hostnames_in_a_two_node_allocation(controller, two_nodes, tmp_path):
    out = tmp_path / "out.txt"
    jid = sbatch(controller, tmp_path, """#!/bin/bash
#SBATCH -N 2 --ntasks-per-node=2 -o %s
MASTER_ADDR=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n1)
echo "MA=$MASTER_ADDR"
echo "ALL=$(scontrol show hostnames | tr '\\n' ' ')"
echo "LIST=$(scontrol show hostlist n2,n1)"
for n in %s; do echo "PATH_$n=$(command -v $n)"; done
srun -N 2 --ntasks-per-node=1 bash -c 'echo "RANK$SLURM_PROCID=$(scontrol show hostnames | head -n1)"'
""" % (out, " ".join(NAMES)))
    controller.wait_job(jid, "succeeded", timeout=60)
    text = out.read_text()
    assert "MA=n1\n" in text, text
    assert "ALL=n1 n2 \n" in text, text
    assert "LIST=n[1-2]\n" in text, text
    # Each rank of a step, as torchrun's launchers do it once per node.
    assert "RANK0=n1\n" in text and "RANK1=n1\n" in text, text
    for n in NAMES:
        line = [x for x in text.splitlines() if x.startswith("PATH_%s=" % n)][0]
        assert line.endswith("/slurm-bin/" + n), text


def test_tasks_see_no_slurm_conf_or_munge_of_the_agent(controller, cluster, tmp_path):
    cluster(1, env={"SLURM_CONF": "/etc/slurm/slurm.conf", "MUNGE_SOCKET": "/run/munge/munge.socket.2",
                    "SLURM_JOB_ID": "999", "SBATCH_PARTITION": "real"})
    jid = controller.submit({"command": ["sh", "-c", "env"]})["id"]
    controller.wait_job(jid, "succeeded", timeout=30)
    env = u.job_log(controller, jid)
    assert "PATH=" in env
    for bad in ("SLURM_CONF", "MUNGE", "SLURM_JOB_ID", "SBATCH_PARTITION"):
        assert bad not in env, env


def test_squeue_sbatch_scancel_sacct_sinfo_by_name(controller, cluster, bindir, tmp_path):
    cluster(2, gpus=2, cpus=2)
    env = u.cli_env(controller, controller.tenant_tokens["alice"], tmpdir=tmp_path)
    admin = u.cli_env(controller, controller.token("admin"), tmpdir=tmp_path)
    r = run(bindir, "sinfo", ["-h", "-o", "%N %T"], admin)
    assert r.returncode == 0 and r.stdout == "n[1-2] idle\n", (r.stdout, r.stderr)
    r = run(bindir, "sinfo", [], admin)
    assert r.stdout.split("\n")[0].split() == ["PARTITION", "AVAIL", "TIMELIMIT", "NODES", "STATE",
                                               "NODELIST"], r.stdout

    script = write(tmp_path / "sleep.sh", "#!/bin/sh\n#SBATCH -J sleeper\nsleep 300\n")
    r = run(bindir, "sbatch", ["--parsable", script], env, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    jid = int(r.stdout.strip())
    assert r.stdout == "%d\n" % jid
    controller.wait_job(jid, "running", timeout=30)

    r = run(bindir, "squeue", ["-h", "-o", "%i %T", "-j", str(jid)], env)
    assert r.returncode == 0 and r.stdout == "%d RUNNING\n" % jid, (r.stdout, r.stderr)
    r = run(bindir, "squeue", ["-o", "%.6i|%j|%u|%t|%D|%N|%R|%C"], env)
    lines = r.stdout.splitlines()
    assert lines[0] == " JOBID|NAME|USER|ST|NODES|NODELIST|NODELIST(REASON)|CPUS", r.stdout
    assert lines[1] == "%6d|sleeper|alice|R|1|n1|n1|1" % jid, r.stdout
    r = run(bindir, "squeue", ["-h", "-t", "PD", "-o", "%i"], env)
    assert r.returncode == 0 and r.stdout == "", r.stdout
    r = run(bindir, "squeue", ["-h", "-u", "bob", "-o", "%i"], env)
    assert r.stdout == "", r.stdout
    r = run(bindir, "squeue", ["-h", "-o", "%i"], env)
    assert r.stdout == "%d\n" % jid, r.stdout

    r = run(bindir, "scontrol", ["show", "job", str(jid)], env)
    assert r.returncode == 0, r.stderr
    for kv in ("JobId=%d" % jid, "JobName=sleeper", "UserId=alice", "JobState=RUNNING",
               "NumNodes=1", "NumTasks=1", "NodeList=n1"):
        assert kv in r.stdout.split(), r.stdout
    assert "TRES=cpu=1,mem=1024M,node=1" in r.stdout.split(), r.stdout
    r = run(bindir, "scontrol", ["show", "node", "n2"], admin)
    assert r.returncode == 0, r.stderr
    for kv in ("NodeName=n2", "State=IDLE", "CPUTot=2", "Gres=gpu:H100:2"):
        assert kv in r.stdout.split(), r.stdout

    r = run(bindir, "scancel", [str(jid)], env)
    assert r.returncode == 0 and r.stdout == "", (r.stdout, r.stderr)
    controller.wait_job(jid, "cancelled", timeout=30)
    r = run(bindir, "squeue", ["-h", "-o", "%i %T", "-j", str(jid)], env)
    assert r.stdout == "%d CANCELLED\n" % jid, r.stdout

    done = run(bindir, "sbatch", ["--parsable", "--wrap", "true"], env, cwd=str(tmp_path))
    did = int(done.stdout)
    controller.wait_job(did, "succeeded", timeout=30)
    r = run(bindir, "sacct", ["-P", "-n", "-o", "JobID,State", "-j", "%d,%d" % (jid, did)], env)
    assert r.returncode == 0, r.stderr
    assert sorted(r.stdout.splitlines()) == sorted(["%d|CANCELLED" % jid, "%d|COMPLETED" % did]), r.stdout


@pytest.mark.parametrize("name,args,says", [
    ("squeue", ["--bogus"], "unrecognized option '--bogus'"),
    ("squeue", ["-o", "%q"], "%q: not a field"),
    ("squeue", ["-t", "WAITING"], "-t/--states: \"WAITING\""),
    ("sinfo", ["-x"], "unrecognized option '-x'"),
    ("scancel", ["--signal=KILL", "1"], "--signal (KILL) is not supported"),
    ("scancel", [], "No job identification provided"),
    ("scontrol", ["update", "x"], "only `scontrol show"),
    ("scontrol", ["show", "hostnames", "n[3-1]"], "n[3-1]: a range must not go down"),
    ("sacct", ["--bogus"], "--bogus"),
])
def test_bad_options_are_named(bindir, tmp_path, name, args, says):
    env = u.cli_env(tmpdir=tmp_path)
    env.pop("SLURM_JOB_NODELIST", None)
    r = run(bindir, name, args, env)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert says in r.stderr, r.stderr


@pytest.mark.parametrize("name", ["squeue", "sinfo", "scancel", "scontrol", "sacct", "sbatch"])
def test_help_of_each_name(bindir, tmp_path, name):
    r = run(bindir, name, ["--help"], u.cli_env(tmpdir=tmp_path))
    assert r.returncode == 0 and "usage:" in r.stdout, (r.stdout, r.stderr)
