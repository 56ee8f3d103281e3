"""
test_sbatch.py - Slurm batch scripts: `sluice sbatch` and `sluice submit
SCRIPT` against real daemons on 127.0.0.1 (docs/slurm.md).

The script is copied into the job, an allocation, and run once (by the
allocation's first task, on its first node; docs/slurm.md) with its
arguments, in --chdir, its output in the -o/-e files with their patterns
expanded; the tasks see Slurm's variables (a real agent); a job's node
list is Slurm's compressed host list (fake agents n1, n2, n3, n5);
directives Sluice does not support are errors naming the file and line,
or warnings with --ignore-unsupported; bad values name the option.
"""

import json
import os
import stat
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import harness  # noqa: E402
import e2e_util as u  # noqa: E402


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)
    return str(path)


SCRIPT = """#!/bin/bash
#SBATCH --job-name=envprobe
#SBATCH --ntasks=2 --cpus-per-task=1
#SBATCH --mem-per-cpu=256M
#SBATCH -t 5
#SBATCH -o out-%x-%j-%t.txt
#SBATCH --error=err-%j-%2t.txt

echo "args=$*"
echo "zero=$0"
ls -l "$0" | cut -c1-10
env | grep -E '^(SLURM|SLUICE_BATCH)' | sort
echo "cwd=$(pwd)"
echo "to-stderr" >&2
"""


def test_script_runs_with_slurm_environment(controller, cluster, tmp_path):
    cluster(1, gpus=2)
    run = tmp_path / "run"
    run.mkdir()
    path = write(tmp_path / "probe.sh", SCRIPT)
    env = u.cli_env(controller, controller.tenant_tokens["alice"], tmpdir=tmp_path)
    r = u.sluice(["sbatch", "--chdir", str(run), path, "first arg", "2"], env, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("Submitted batch job "), r.stdout
    jid = int(r.stdout.split()[-1])
    done = controller.wait_job(jid, "succeeded")
    assert done["name"] == "envprobe" and done["tasks"] == 2
    assert done["script"] == SCRIPT and done["command"] == ["probe.sh", "first arg", "2"]
    nodes = set()
    # The batch step is the allocation's task 0, alone: no output of task 1.
    assert not (run / ("out-envprobe-%d-1.txt" % jid)).exists()
    for t in (0,):
        out = (run / ("out-envprobe-%d-%d.txt" % (jid, t))).read_text()
        err = (run / ("err-%d-%02d.txt" % (jid, t))).read_text()
        assert err == "to-stderr\n"
        lines = out.splitlines()
        assert lines[0] == "args=first arg 2"
        assert lines[1].startswith("zero=") and lines[1].endswith("/slurm_script.%d" % t)
        assert lines[2] == "-rwx------"  # the copy is the task user's, mode 0700
        e = u.env_lines(out)
        assert "SLUICE_BATCH_SCRIPT" not in e  # the runner removes it before the script runs
        assert e["SLURM_JOB_ID"] == str(jid) and e["SLURM_JOB_NAME"] == "envprobe"
        assert e["SLURM_NTASKS"] == "2" and e["SLURM_PROCID"] == str(t)
        assert e["SLURM_LOCALID"] == "0" and e["SLURM_NODEID"] == "0"
        assert e["SLURM_JOB_NODELIST"] == "n1" and e["SLURM_JOB_NUM_NODES"] == "1"
        assert e["SLURM_CPUS_PER_TASK"] == "1"
        assert e["SLURM_SUBMIT_DIR"] == str(tmp_path)
        assert e["SLURM_JOB_ACCOUNT"] == "alice"
        assert e["cwd"] == str(run)
        nodes.add(e["SLURMD_NODENAME"])
    assert nodes == {"n1"}
    # Without -o the output is the job's log, and without --chdir the
    # script runs where it was submitted from.
    path2 = write(tmp_path / "plain.sh", "#!/bin/sh\necho \"in=$(pwd) $SLURM_NTASKS\"\n")
    r = u.sluice(["submit", "--quiet", path2], env, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    jid2 = int(r.stdout)
    controller.wait_job(jid2, "succeeded")
    assert u.job_log(controller, jid2) == "in=%s 1\n" % tmp_path


def test_node_list_is_slurms_compressed_form(controller, fake_agent, tmp_path):
    agents = [fake_agent(n, gpus=8) for n in ("n1", "n2", "n3", "n5")]
    path = write(tmp_path / "wide.sh", "#!/bin/sh\n#SBATCH -N 4 --ntasks-per-node=1\n"
                 "#SBATCH --gpus-per-node=8\nhostname\n")
    env = u.cli_env(controller, controller.tenant_tokens["alice"], tmpdir=tmp_path)
    r = u.sluice(["sbatch", "--parsable", path], env, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    jid = int(r.stdout)
    launches = []
    for a in agents:
        launches += a.wait_message("launch", job=jid)
    assert len(launches) == 4
    for m in launches:
        e = m["env"]
        assert e["SLURM_JOB_NODELIST"] == "n[1-3,5]", e
        assert e["SLURM_NNODES"] == "4" and e["SLURM_NTASKS"] == "4"
        assert e["SLURM_PROCID"] == str(m["task"]) and e["SLURM_LOCALID"] == "0"
        assert e["SLURM_TASKS_PER_NODE"] == "1(x4)"
        assert e["SLUICE_STEP_TOKEN"].startswith("step-") and len(e["SLUICE_STEP_TOKEN"]) == 69
        assert len(m["gpus"]) == 8
    # An allocation: every task runs the step daemon, the first node's also
    # the script; only that one is handed the script.
    batch = [m for m in launches if m["argv"] != ["sluice-stepd"]]
    assert len(batch) == 1 and batch[0]["env"]["SLURMD_NODENAME"] == "n1"
    assert batch[0]["argv"][:4] == ["sluice-stepd", "--", "/bin/sh", "-c"]
    assert batch[0]["env"]["SLUICE_BATCH_SCRIPT"].startswith("#!")
    assert all("SLUICE_BATCH_SCRIPT" not in m["env"] for m in launches if m is not batch[0])
    # A node's id is its place in the sorted list.
    ids = {m["env"]["SLURMD_NODENAME"]: m["env"]["SLURM_NODEID"] for m in launches}
    assert ids == {"n1": "0", "n2": "1", "n3": "2", "n5": "3"}
    # Zero-padded numbers keep their width; a name without a number stands alone.
    more = [fake_agent(n, gpus=8, pool="p2") for n in ("gpu07", "gpu08", "gpu10", "login")]
    path = write(tmp_path / "wide2.sh", "#!/bin/sh\n#SBATCH -N 4 -p p2 --gres=gpu:8\nhostname\n")
    r = u.sluice(["sbatch", "--parsable", path], env, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    jid = int(r.stdout)
    for a in more:
        (m,) = a.wait_message("launch", job=jid)
        assert m["env"]["SLURM_JOB_NODELIST"] == "gpu[07-08,10],login", m["env"]
        assert m["env"]["SLURM_JOB_PARTITION"] == "p2"


def test_unsupported_directives_name_the_line(tmp_path):
    path = write(tmp_path / "mail.sh", "#!/bin/bash\n#SBATCH -n 2\n\n# note\n"
                 "#SBATCH --profile=task\n#SBATCH --constraint=a100\n"
                 "#SBATCH --frobnicate 3 -c 2\nsrun hostname\n"
                 "#SBATCH --bogus-after-the-top\n")
    env = u.cli_env(tmpdir=tmp_path)
    r = u.sluice(["sbatch", "--dry-run", path], env)
    assert r.returncode == 2
    assert "%s:5: --profile is not supported" % path in r.stderr, r.stderr
    r = u.sluice(["sbatch", "--dry-run", "--ignore-unsupported", path], env)
    assert r.returncode == 0, r.stderr
    assert "warning: %s:5: --profile is not supported" % path in r.stderr
    assert "bogus" not in r.stderr  # directives end at the first command
    assert "warning: %s:7: --frobnicate is not supported: not an sbatch option" % path in r.stderr
    spec = json.loads(r.stdout)
    assert spec["tasks"] == 2 and spec["cpus"] == "2" and spec["constraint"] == "a100"
    r = u.sluice(["submit", "--dry-run", path], env)
    assert r.returncode == 2 and "%s:5: --profile" % path in r.stderr
    r = u.sluice(["submit", "--dry-run", "--ignore-unsupported", path], env)
    assert r.returncode == 0 and "warning:" in r.stderr
    # A script with DOS line breaks is refused, as sbatch refuses it.
    dos = tmp_path / "dos.sh"
    dos.write_bytes(b"#!/bin/sh\r\n#SBATCH -n 2\r\ntrue\r\n")
    r = u.sluice(["sbatch", "--dry-run", str(dos)], env)
    assert r.returncode == 2 and "DOS line breaks" in r.stderr
    # On the command line the place is the command line.
    ok = write(tmp_path / "ok.sh", "#!/bin/sh\ntrue\n")
    r = u.sluice(["sbatch", "--dry-run", "--profile=task", ok], env)
    assert r.returncode == 2 and "the command line: --profile is not supported" in r.stderr


@pytest.mark.parametrize("directive,word", [
    ("-n many", "-n/--ntasks: \"many\" is not a whole number"),
    ("--time=1:2:3:4", "-t/--time: \"1:2:3:4\" is not a time"),
    ("--mem=12Q", "--mem: \"12Q\" is not a size"),
    ("--gres=fpga:1", "--gres: \"fpga:1\": Sluice schedules GPUs only"),
    ("-n 3 --gpus=4", "--gpus: 4 GPUs cannot be divided evenly among 3 tasks"),
    ("--gpus-per-node=1 --ntasks-per-node=3",
     "--gpus-per-node: 1 GPUs cannot be divided evenly among 3 tasks of a node"),
    ("-N 4-2", "-N/--nodes: \"4-2\" is not a node count N or min-max"),
    ("-p a,b", "-p/--partition: \"a,b\": a Sluice job runs in one pool"),
    ("-o out-%J.txt", "-o/--output: the pattern %J is not supported"),
    ("-n", "-n/--ntasks needs a value"),
    ("--mem 1G --mem-per-cpu 1G", "give one of --mem, --mem-per-cpu and --mem-per-gpu"),
    ("--parsable", "--parsable is a flag of the command line"),
    ("-J x" + " -c 1" * 40, "the directive has more than 64 words"),
    ("-J " + "x" * 5000, "the directive is longer than 4095 bytes"),
])
def test_bad_directives_name_the_option(tmp_path, directive, word):
    path = write(tmp_path / "bad.sh", "#!/bin/sh\n#SBATCH %s\ntrue\n" % directive)
    r = u.sluice(["sbatch", "--dry-run", path], u.cli_env(tmpdir=tmp_path))
    assert r.returncode == 2, r.stdout
    assert "%s:2: " % path in r.stderr and word in r.stderr, r.stderr


def test_command_line_overrides_directives(tmp_path):
    path = write(tmp_path / "o.sh", "#!/bin/bash\n#SBATCH -J fromfile -n 2 -t 10\n"
                 "#SBATCH --gres=gpu:h100:4 --ntasks-per-node=2\ntrue\n")
    env = u.cli_env(tmpdir=tmp_path)
    spec = json.loads(u.sluice(["sbatch", "--dry-run", "-J", "fromflag", "-t", "1:30", "-n4",
                                "--ntasks-per-node", "4", path, "x"], env).stdout)
    assert spec["name"] == "fromflag" and spec["tasks"] == 4 and spec["time_limit"] == 120
    assert spec["gpus"] == 1 and spec["gpu_models"] == ["h100"]
    assert spec["command"] == ["o.sh", "x"]
    # `sluice submit SCRIPT`: Sluice's own flags override the directives.
    spec = json.loads(u.sluice(["submit", "--dry-run", "--tasks", "3", "--name", "n",
                                path], env).stdout)
    assert spec["tasks"] == 3 and spec["name"] == "n" and spec["gpus"] == 2
    # After --, a script is an ordinary command.
    spec = json.loads(u.sluice(["submit", "--dry-run", "--", path], env).stdout)
    assert spec["command"] == [path] and "script" not in spec
    # --wrap, as sbatch writes it.
    spec = json.loads(u.sluice(["sbatch", "--dry-run", "--wrap", "echo hi"], env).stdout)
    assert spec["script"] == "#!/bin/sh\n# This script was created by sbatch --wrap.\n\necho hi\n"


def test_export(tmp_path):
    path = write(tmp_path / "e.sh", "#!/bin/sh\n#SBATCH --export=NONE,LR=0.1,KEEP\ntrue\n")
    env = u.cli_env(tmpdir=tmp_path, extra={"KEEP": "kept", "OTHER": "x", "SLUICE_TOKEN": "s"})
    spec = json.loads(u.sluice(["sbatch", "--dry-run", path], env).stdout)
    assert spec["env"] == {"LR": "0.1", "KEEP": "kept"}
    spec = json.loads(u.sluice(["sbatch", "--dry-run", "--export=ALL", path], env).stdout)
    assert spec["env"]["OTHER"] == "x" and spec["env"]["KEEP"] == "kept"
    assert "SLUICE_TOKEN" not in spec["env"] and "HOME" not in spec["env"]


def test_script_size_is_bounded(controller, tmp_path):
    big = write(tmp_path / "big.sh", "#!/bin/sh\n" + "#" * (64 * 1024) + "\n")
    r = u.sluice(["sbatch", "--dry-run", big], u.cli_env(tmpdir=tmp_path))
    assert r.returncode == 2 and "over 64 KiB" in r.stderr
    # The server checks it too.
    st, body = controller.request("POST", "/v1/jobs", {"script": "#!/bin/sh\n" + "x" * 70000},
                                  token=controller.tenant_tokens["alice"])
    assert st == 400 and body["error"]["field"] == "script", body
    st, body = controller.request("POST", "/v1/jobs", {"command": ["true"], "chdir": "/tmp"},
                                  token=controller.tenant_tokens["alice"])
    assert st == 400 and body["error"]["field"] == "chdir", body


def test_array_script_and_dependency(controller, cluster, tmp_path):
    """An array's elements each run the script with their index; a script
    that depends on the array starts once every element has succeeded."""
    cluster(1, gpus=2)
    path = write(tmp_path / "arr.sh", "#!/bin/sh\n#SBATCH --array=0-2%2\n#SBATCH -o arr-%A_%a.out\n"
                 "echo \"$SLURM_ARRAY_JOB_ID $SLURM_ARRAY_TASK_ID $SLURM_JOB_ID\"\n")
    env = u.cli_env(controller, controller.tenant_tokens["alice"], tmpdir=tmp_path)
    r = u.sluice(["sbatch", "--parsable", path], env, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    a = int(r.stdout)
    after = write(tmp_path / "after.sh", "#!/bin/sh\n#SBATCH -d afterok:%d\n#SBATCH -o after.out\n"
                  "cat arr-*.out | sort\n" % a)
    r = u.sluice(["sbatch", "--parsable", after], env, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    b = int(r.stdout)
    controller.wait_job(b, "succeeded", timeout=60)
    for k in range(3):
        # element k is job a + k (docs/arrays.md)
        assert (tmp_path / ("arr-%d_%d.out" % (a, k))).read_text() == "%d %d %d\n" % (a, k, a + k)
    assert (tmp_path / "after.out").read_text().splitlines() == sorted(
        "%d %d %d" % (a, k, a + k) for k in range(3))


def test_help(tmp_path):
    env = u.cli_env(tmpdir=tmp_path)
    r = u.sluice(["--help"], env)
    for c in ("sbatch", "history", "sacct"):
        assert "\n  %s " % c in r.stdout, c
    r = u.sluice(["sbatch", "--help"], env)
    assert r.returncode == 0 and r.stdout.startswith("usage: sluice sbatch")
    assert "--ignore-unsupported" in r.stdout and "docs/slurm.md" in r.stdout
    for c in ("history", "sacct"):
        r = u.sluice([c, "--help"], env)
        assert r.returncode == 0 and r.stdout.startswith("usage: sluice %s" % c)
        for flag in ("-S, --starttime", "-E, --endtime", "-s, --state", "-o, --format", "AllocTRES"):
            assert flag in r.stdout, flag
    r = u.sluice(["submit", "--help"], env)
    assert "--ignore-unsupported" in r.stdout and "SCRIPT" in r.stdout


def test_qos_is_a_priority_class_where_they_exist(tmp_path):
    """-q/--qos names a priority class when the job spec has them (issue
    11); a build without them says so, at the directive's line."""
    env = u.cli_env(tmpdir=tmp_path)
    path = write(tmp_path / "q.sh", "#!/bin/sh\n#SBATCH -q high\ntrue\n")
    r = u.sluice(["sbatch", "--dry-run", path], env)
    if "priority_class" in u.sluice(["help", "spec"], env).stdout:
        assert r.returncode == 0 and json.loads(r.stdout)["priority_class"] == "high", r.stderr
    else:
        assert r.returncode == 2
        assert "%s:2: -q/--qos is not supported: priority classes are not configured" % path \
            in r.stderr


def test_fewer_gpus_than_a_nodes_tasks_are_shared(tmp_path):
    """--gpus-per-node=1 --ntasks-per-node=4 (Slurm: the node's four tasks
    share its GPU) asks each task for a quarter of one GPU, so that the
    node holds the one GPU Slurm gives it; --gpus counts the job's."""
    env = u.cli_env(tmpdir=tmp_path)
    for directive, share, tasks in (("--gpus-per-node=1 --ntasks-per-node=4", "0.25", 4),
                                    ("-N 2 --gpus-per-node=2 --ntasks-per-node=8", "0.25", 16),
                                    ("-n 2 --gpus=1", "0.5", 2)):
        path = write(tmp_path / "share.sh", "#!/bin/sh\n#SBATCH %s\ntrue\n" % directive)
        r = u.sluice(["sbatch", "--dry-run", path], env)
        assert r.returncode == 0, (directive, r.stderr)
        spec = json.loads(r.stdout)
        assert spec["gpu_share"] == share and spec["tasks"] == tasks and "gpus" not in spec, spec
