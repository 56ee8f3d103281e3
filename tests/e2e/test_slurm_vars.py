"""
test_slurm_vars.py - Slurm's variables (docs/slurm.md, "Slurm's
variables"): what an allocation's batch script and its steps' ranks see
(SLURM_TASKS_PER_NODE, SLURM_JOB_CPUS_PER_NODE, SLURM_NTASKS_PER_NODE,
SLURM_MEM_PER_NODE, SLURM_SUBMIT_HOST, SLURM_JOB_GPUS, the array's
SLURM_ARRAY_TASK_*), in the formats a Slurm 22.05 slurmd writes; and the
input variables sbatch (SBATCH_*) and srun (SLURM_LABELIO, ...) read as
options, below the command line and above the directives.
"""

import json
import os
import socket
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import harness  # noqa: E402,F401
import e2e_util as u  # noqa: E402


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)
    return str(path)


def env_of(text, tag):
    """{var: value} of the lines 'TAG VAR=VALUE'."""
    out = {}
    for line in text.splitlines():
        if line.startswith(tag + " ") and "=" in line:
            k, v = line[len(tag) + 1:].split("=", 1)
            out[k] = v
    return out


DUMP = "env | grep -E '^SLURMD?_' | sort | sed \"s/^/%s /\""


def test_allocation_and_step_variables_as_slurmd(controller, cluster, tmp_path):
    cluster(2, gpus=2, cpus=2)
    out = tmp_path / "out.txt"
    step = write(tmp_path / "step.sh", "#!/bin/bash\n" + DUMP % "S$SLURM_PROCID" + "\n")
    script = write(tmp_path / "job.sh", """#!/bin/bash
#SBATCH -N 2 --ntasks-per-node=2 --mem=2G --gres=gpu:2 -o %s
%s
srun --ntasks-per-node=1 %s
""" % (out, DUMP % "B", step))
    env = u.cli_env(controller, controller.tenant_tokens["alice"], tmpdir=tmp_path)
    r = u.sluice(["sbatch", script], env, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    jid = int(r.stdout.split()[-1])
    controller.wait_job(jid, "succeeded", timeout=60)
    text = out.read_text()
    b = env_of(text, "B")
    assert b["SLURM_JOB_ID"] == str(jid) and b["SLURM_JOBID"] == str(jid)
    assert b["SLURM_JOB_NODELIST"] == "n[1-2]" and b["SLURM_NNODES"] == "2", text
    assert b["SLURM_JOB_NUM_NODES"] == "2"
    assert b["SLURM_NTASKS"] == "4" and b["SLURM_NPROCS"] == "4"
    assert b["SLURM_TASKS_PER_NODE"] == "2(x2)"
    assert b["SLURM_JOB_CPUS_PER_NODE"] == "2(x2)"
    assert b["SLURM_CPUS_ON_NODE"] == "2" and b["SLURM_CPUS_PER_TASK"] == "1"
    assert b["SLURM_NTASKS_PER_NODE"] == "2"
    assert b["SLURM_MEM_PER_NODE"] == "2048"
    assert "SLURM_MEM_PER_CPU" not in b and "SLURM_GPUS_PER_NODE" not in b
    assert b["SLURM_GPUS_ON_NODE"] == "2" and b["SLURM_JOB_GPUS"] == "0,1"
    assert b["SLURMD_NODENAME"] == "n1" and b["SLURM_NODEID"] == "0"
    assert b["SLURM_PROCID"] == "0" and b["SLURM_LOCALID"] == "0"
    assert b["SLURM_SUBMIT_HOST"] == socket.gethostname()
    assert b["SLURM_SUBMIT_DIR"] == str(tmp_path)
    assert b["SLURM_CLUSTER_NAME"] == "sluice"
    assert b["SLURM_JOB_ACCOUNT"] == "alice" and b["SLURM_JOB_USER"]
    assert b["SLURM_TOPOLOGY_ADDR"] == "n1" and b["SLURM_TOPOLOGY_ADDR_PATTERN"] == "node"
    # Each rank has its own node's variables, not srun's node's.
    s1 = env_of(text, "S1")
    assert s1, text
    assert s1["SLURMD_NODENAME"] == "n2" and s1["SLURM_NODEID"] == "1", text
    assert s1["SLURM_TOPOLOGY_ADDR"] == "n2"
    assert s1["SLURM_JOB_GPUS"] == "0,1" and s1["SLURM_CPUS_ON_NODE"] == "2"
    assert s1["SLURM_STEP_NUM_TASKS"] == "2" and s1["SLURM_STEP_TASKS_PER_NODE"] == "1(x2)"
    assert s1["SLURM_JOB_NODELIST"] == "n[1-2]" and s1["SLURM_MEM_PER_NODE"] == "2048"
    assert s1["SLURM_NTASKS_PER_NODE"] == "1"  # srun's own


def test_array_variables(controller, cluster, tmp_path):
    cluster(1, cpus=4)
    script = write(tmp_path / "arr.sh", """#!/bin/bash
#SBATCH --array=3-7:2 -o %s/a_%%a.txt
%s
""" % (tmp_path, DUMP % "A"))
    env = u.cli_env(controller, controller.tenant_tokens["alice"], tmpdir=tmp_path)
    r = u.sluice(["sbatch", "--parsable", script], env, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    first = int(r.stdout.split("_")[0])
    for k in range(3):
        controller.wait_job(first + k, "succeeded", timeout=60)
    a = env_of((tmp_path / "a_7.txt").read_text(), "A")
    assert a["SLURM_ARRAY_TASK_ID"] == "7" and a["SLURM_ARRAY_JOB_ID"] == str(first)
    assert (a["SLURM_ARRAY_TASK_COUNT"], a["SLURM_ARRAY_TASK_MIN"], a["SLURM_ARRAY_TASK_MAX"],
            a["SLURM_ARRAY_TASK_STEP"]) == ("3", "3", "7", "2")


def dry_run(tmp_path, args, extra, directives="#SBATCH -J fromdirective -t 5\n"):
    script = write(tmp_path / "d.sh", "#!/bin/bash\n" + directives + "true\n")
    env = u.cli_env(None, None, tmpdir=tmp_path, extra=extra)
    return u.sluice(["sbatch", "--dry-run"] + list(args) + [script], env, cwd=str(tmp_path))


def test_sbatch_input_variables_between_flags_and_directives(tmp_path):
    r = dry_run(tmp_path, [], {"SBATCH_JOB_NAME": "fromenv", "SBATCH_TIMELIMIT": "1:00:00"})
    assert r.returncode == 0, r.stderr
    spec = json.loads(r.stdout)
    assert spec["name"] == "fromenv" and spec["time_limit"] == 3600
    r = dry_run(tmp_path, ["-J", "fromflag"], {"SBATCH_JOB_NAME": "fromenv"})
    assert json.loads(r.stdout)["name"] == "fromflag"
    # An option Sluice does not take, given by a variable: the error names it.
    r = dry_run(tmp_path, [], {"SBATCH_WCKEY": "proj"})
    assert r.returncode == 2 and "SBATCH_WCKEY" in r.stderr, r.stderr
    r = dry_run(tmp_path, ["--ignore-unsupported"], {"SBATCH_WCKEY": "proj"})
    assert r.returncode == 0, r.stderr
    # A flag variable: SBATCH_NO_REQUEUE is --no-requeue.
    r = dry_run(tmp_path, [], {"SBATCH_NO_REQUEUE": "1"})
    assert r.returncode == 0, r.stderr
    spec = json.loads(r.stdout)
    assert spec["on_node_failure"] == "fail" and spec["retries"] == 0, spec


def test_sbatch_keeps_the_request_for_the_variables(tmp_path):
    r = dry_run(tmp_path, ["--mem=8G", "--ntasks-per-node=2", "-N", "2", "--gpus-per-node=2"], {})
    assert r.returncode == 0, r.stderr
    slurm = json.loads(r.stdout)["slurm"]
    assert slurm["mem_per_node"] == "8192" and slurm["ntasks_per_node"] == "2"
    assert slurm["gpus_per_node"] == "2" and slurm["submit_host"] == socket.gethostname()


def test_srun_reads_its_input_variables(controller, cluster, tmp_path):
    cluster(1, cpus=4)
    out = tmp_path / "out.txt"
    script = write(tmp_path / "job.sh", """#!/bin/bash
#SBATCH -n 2 -o %s
SLURM_LABELIO=1 srun echo labelled
SLURM_LABELIO=0 srun -n 1 echo plain
""" % out)
    env = u.cli_env(controller, controller.tenant_tokens["alice"], tmpdir=tmp_path)
    r = u.sluice(["sbatch", script], env, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    controller.wait_job(int(r.stdout.split()[-1]), "succeeded", timeout=60)
    lines = out.read_text().splitlines()
    assert sorted(x for x in lines if "labelled" in x) == ["0: labelled", "1: labelled"], lines
    assert "plain" in lines, lines


def test_allocation_without_ntasks_and_pytorch_variables(controller, cluster, tmp_path):
    """As under Slurm: no SLURM_NTASKS when neither -n nor --ntasks-per-node
    was asked; no RANK, WORLD_SIZE, MASTER_ADDR in the batch step (a step's
    ranks get RANK and WORLD_SIZE of their step); a rank whose command
    cannot be executed exits 2, as slurmstepd's."""
    cluster(1, cpus=4)
    out = tmp_path / "out.txt"
    script = write(tmp_path / "job.sh", """#!/bin/bash
#SBATCH -N 1 -o %s
echo "B ntasks=${SLURM_NTASKS-unset} rank=${RANK-unset} world=${WORLD_SIZE-unset} master=${MASTER_ADDR-unset} port=${MASTER_PORT-unset}"
srun -n 2 --overlap bash -c 'echo "S$SLURM_PROCID rank=$RANK world=$WORLD_SIZE master=${MASTER_ADDR-unset}"'
srun /no/such/command
echo "rc=$?"
""" % out)
    env = u.cli_env(controller, controller.tenant_tokens["alice"], tmpdir=tmp_path)
    r = u.sluice(["sbatch", script], env, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    controller.wait_job(int(r.stdout.split()[-1]), "succeeded", timeout=60)
    lines = out.read_text().splitlines()
    assert "B ntasks=unset rank=unset world=unset master=unset port=unset" in lines, lines
    assert "S1 rank=1 world=2 master=unset" in lines, lines
    assert "rc=2" in lines, lines
    assert any("execve(): /no/such/command" in x for x in lines), lines


def test_login_shell_script_reaches_sluices_commands(controller, cluster, tmp_path):
    """#!/bin/bash -l resets PATH from /etc/profile; the script still runs
    Sluice's srun and scontrol (bash functions the runner exports), never
    another Slurm's on the node."""
    cluster(1, cpus=4)
    out = tmp_path / "out.txt"
    script = write(tmp_path / "job.sh", """#!/bin/bash -l
#SBATCH -n 2 -o %s
PATH=/usr/bin:/bin
srun bash -c 'echo "R$SLURM_PROCID step=$SLURM_STEP_ID"'
echo "first=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n1)"
""" % out)
    env = u.cli_env(controller, controller.tenant_tokens["alice"], tmpdir=tmp_path)
    r = u.sluice(["sbatch", script], env, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    controller.wait_job(int(r.stdout.split()[-1]), "succeeded", timeout=60)
    lines = out.read_text().splitlines()
    assert sorted(x for x in lines if x.startswith("R")) == ["R0 step=0", "R1 step=0"], lines
    assert "first=n1" in lines, lines
