"""
test_steps.py - allocations and job steps (docs/slurm.md, "Allocations and
steps"): `sluice sbatch` scripts run once, on the allocation's first node;
`srun` inside starts steps of N ranks spread over the allocation's nodes
with Slurm's step variables; exit status, -l labels, concurrent steps,
srun outside an allocation, salloc through a pseudo-terminal, and a
hostile tenant's task that cannot reach another's steps.
"""

import json
import os
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import harness  # noqa: E402
import e2e_util as u  # noqa: E402
import netns_util  # noqa: E402


@pytest.fixture
def two_nodes(controller, cluster, build_dir):
    """Nodes n1 and n2, two CPUs and two GPUs each: each agent in a network
    namespace of its own with its own hostname where namespaces can be
    made (netns_util), else both on this host's loopback. Two CPUs a node
    make the core place a 4-task allocation 2 and 2 (it does not read -N as
    a placement constraint yet, docs/slurm.md)."""
    kw = dict(gpus=2, cpus=2)
    if not netns_util.available():
        yield cluster(2, **kw)
        return
    nodes = netns_util.Nodes(["n1", "n2"])
    agents = []
    try:
        nodes.relay(controller.agent_port)
        nodes.relay(controller.port)
        for n in ("n1", "n2"):
            a = netns_util.NsAgent(nodes, controller, n, **kw)
            agents.append(a)
            a.start()
        yield agents
    finally:
        for a in agents:
            a.stop()
        nodes.close()


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)
    return str(path)


def sbatch(ctl, tmp_path, text, who="alice", args=()):
    path = write(tmp_path / "job.sh", text)
    env = u.cli_env(ctl, ctl.tenant_tokens[who], tmpdir=tmp_path)
    r = u.sluice(["sbatch"] + list(args) + [path], env, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    return int(r.stdout.split()[-1])


def ranks(text):
    """{procid: {var: value}} from lines 'R PROCID LOCALID NODEID NODE STEP NTASKS NODELIST'."""
    out = {}
    for line in text.splitlines():
        w = line.split()
        if len(w) == 8 and w[0] == "R":
            out[int(w[1])] = dict(local=int(w[2]), nodeid=int(w[3]), node=w[4], step=w[5],
                                  ntasks=int(w[6]), nodelist=w[7])
    return out


PROBE = ('echo R $SLURM_PROCID $SLURM_LOCALID $SLURM_NODEID $SLURMD_NODENAME '
         '$SLURM_STEP_ID $SLURM_STEP_NUM_TASKS $SLURM_STEP_NODELIST')


def test_two_by_two_allocation_runs_script_once_and_steps_on_both_nodes(controller, two_nodes, tmp_path):
    out = tmp_path / "out.txt"
    jid = sbatch(controller, tmp_path, """#!/bin/bash
#SBATCH -N 2 --ntasks-per-node=2 -o %s
echo "batch on $SLURMD_NODENAME procid=$SLURM_PROCID ntasks=$SLURM_NTASKS"
srun bash -c '%s; echo H $SLURM_PROCID $(hostname)'
echo "step0=$?"
srun -l -n 3 bash -c 'echo hi; exit $SLURM_PROCID'
echo "step1=$?"
""" % (out, PROBE))
    done = controller.wait_job(jid, "succeeded", timeout=60)
    text = out.read_text()
    assert text.count("batch on") == 1, text
    assert "batch on n1 procid=0 ntasks=4" in text, text
    r = ranks(text)
    assert sorted(r) == [0, 1, 2, 3], text
    assert [(r[k]["node"], r[k]["local"], r[k]["nodeid"]) for k in range(4)] == [
        ("n1", 0, 0), ("n1", 1, 0), ("n2", 0, 1), ("n2", 1, 1)], text
    assert all(v["step"] == "0" and v["ntasks"] == 4 and v["nodelist"] == "n[1-2]" for v in r.values())
    if netns_util.available():  # each rank's own host
        hosts = {int(w[1]): w[2] for w in (x.split() for x in text.splitlines()) if w and w[0] == "H"}
        assert hosts == {0: "n1", 1: "n1", 2: "n2", 3: "n2"}, text
    assert "step0=0" in text
    for k in range(3):
        assert "%d: hi" % k in text, text
    # srun's status is the highest of its ranks'; srun names each failure.
    assert "step1=2" in text, text
    assert "task 1: Exited with exit code 1" in text and "task 2: Exited with exit code 2" in text
    assert done["state"] == "succeeded"


def test_concurrent_steps_share_the_allocation(controller, two_nodes, tmp_path):
    out, flag = tmp_path / "out.txt", tmp_path / "flag"
    # The first step waits for a file only the second step makes: both run
    # at once (no clock involved).
    jid = sbatch(controller, tmp_path, """#!/bin/bash
#SBATCH -n 4 -o %s
srun -n 1 bash -c 'while [ ! -e %s ]; do sleep 0.05; done; echo A step=$SLURM_STEP_ID' &
srun -n 1 bash -c 'touch %s; echo B step=$SLURM_STEP_ID' &
wait
srun -N 2 -n 2 --ntasks-per-node=1 bash -c 'echo C $SLURM_PROCID $SLURMD_NODENAME $SLURM_STEP_NUM_NODES'
srun -w n2 bash -c 'echo W $SLURM_PROCID $SLURMD_NODENAME $SLURM_STEP_NODELIST'
srun -w 'n[1-2]' -n 2 --ntasks-per-node=1 bash -c 'echo V $SLURMD_NODENAME'
srun -w n9 true; echo "w9=$?"
""" % (out, flag, flag))
    controller.wait_job(jid, "succeeded", timeout=60)
    text = out.read_text()
    a = [x for x in text.splitlines() if x.startswith("A ")]
    b = [x for x in text.splitlines() if x.startswith("B ")]
    assert len(a) == 1 and len(b) == 1, text
    assert {a[0].split("=")[1], b[0].split("=")[1]} == {"0", "1"}, text
    assert sorted(x for x in text.splitlines() if x.startswith("C ")) == ["C 0 n1 2", "C 1 n2 2"], text
    assert sorted(x for x in text.splitlines() if x.startswith("W ")) == ["W 0 n2 n2", "W 1 n2 n2"], text
    assert sorted(x for x in text.splitlines() if x.startswith("V ")) == ["V n1", "V n2"], text
    assert "w9=1" in text and "-w n9: n9 is not a node of the allocation" in text, text


def test_gpus_output_files_export_and_errors(controller, two_nodes, tmp_path):
    out = tmp_path / "out.txt"
    jid = sbatch(controller, tmp_path, """#!/bin/bash
#SBATCH -n 4 --gpus-per-task=1 -o %s
export MYVAR=from-script
srun -n 4 --gpus-per-task=1 bash -c 'echo G $SLURM_PROCID $SLURMD_NODENAME $CUDA_VISIBLE_DEVICES $MYVAR'
srun -n 2 --export=NONE bash -c 'echo X $SLURM_PROCID "${MYVAR:-unset}"'
cd %s && srun -n 2 -o rank-%%t.txt -e err-%%t.txt bash -c 'echo file-out $SLURM_PROCID; echo file-err >&2'
srun -n 9 true; echo "n9=$?"
srun -N 3 true; echo "N3=$?"
srun --bogus true; echo "bogus=$?"
srun -n 2 --gpus-per-task=2 true; echo "g2=$?"
""" % (out, tmp_path))
    controller.wait_job(jid, "succeeded", timeout=60)
    text = out.read_text()
    g = sorted(x.split()[1:] for x in text.splitlines() if x.startswith("G "))
    assert len(g) == 4, text
    per_node = {}
    for rank, node, cvd, var in g:
        assert var == "from-script"
        per_node.setdefault(node, set()).add(cvd)
    assert per_node == {"n1": {"0", "1"}, "n2": {"0", "1"}}, text
    assert sorted(x for x in text.splitlines() if x.startswith("X ")) == ["X 0 unset", "X 1 unset"]
    for k in (0, 1):
        assert (tmp_path / ("rank-%d.txt" % k)).read_text() == "file-out %d\n" % k
        assert (tmp_path / ("err-%d.txt" % k)).read_text() == "file-err\n"
    # Bad requests: srun says why, naming the option; exit 1 (refused), 2 (usage).
    assert "n9=1" in text and "srun: error: -n 9: the allocation has 4 tasks" in text, text
    assert "N3=1" in text and "srun: error: -N 3: the allocation has 2 nodes" in text, text
    assert "bogus=2" in text and "srun: error: --bogus is not supported" in text, text
    assert "g2=1" in text and "--gpus-per-task=2: 2 ranks on n1 need 4 GPUs; the allocation has 2" in text


def test_sigterm_reaches_the_ranks(controller, two_nodes, tmp_path):
    out, ready = tmp_path / "out.txt", tmp_path / "ready"
    jid = sbatch(controller, tmp_path, """#!/bin/bash
#SBATCH -n 2 -o %s
srun -n 2 bash -c 'trap "echo TERM $SLURM_PROCID; exit 7" TERM; touch %s.$SLURM_PROCID; while :; do sleep 0.05; done' &
pid=$!
while [ ! -e %s.0 ] || [ ! -e %s.1 ]; do sleep 0.05; done
kill -TERM $pid
wait $pid
echo "srun=$?"
""" % (out, ready, ready, ready))
    controller.wait_job(jid, "succeeded", timeout=60)
    text = out.read_text()
    assert "TERM 0" in text and "TERM 1" in text and "srun=7" in text, text


def test_srun_outside_an_allocation_makes_its_own(controller, two_nodes, tmp_path):
    env = u.cli_env(controller, controller.tenant_tokens["alice"], tmpdir=tmp_path)
    r = u.sluice(["srun", "-n", "2", "-l", "bash", "-c", "echo $SLURM_PROCID of $SLURM_NTASKS; exit 3"],
                 env, cwd=str(tmp_path))
    assert r.returncode == 3, r.stderr
    assert sorted(r.stdout.splitlines()) == ["0: 0 of 2", "1: 1 of 2"], r.stdout
    jobs = controller.jobs()
    mine = [j for j in jobs if j.get("name") == "bash"]
    assert mine and all(j["state"] in ("cancelled", "running", "succeeded") for j in mine), jobs


def test_salloc_through_a_pseudo_terminal(controller, two_nodes, tmp_path):
    import pty
    import select
    import subprocess
    env = u.cli_env(controller, controller.tenant_tokens["alice"], tmpdir=tmp_path,
                    extra={"SHELL": "/bin/sh", "PS1": "$ "})
    master, slave = pty.openpty()
    p = subprocess.Popen([os.path.join(harness.build_dir(), "sluice"), "salloc", "-n", "4"],
                         stdin=slave, stdout=slave, stderr=slave, env=env, cwd=str(tmp_path),
                         start_new_session=True)
    os.close(slave)
    seen = b""

    def read_until(what, timeout=30):
        nonlocal seen
        deadline = time.monotonic() + timeout
        while what not in seen:
            assert time.monotonic() < deadline, seen.decode(errors="replace")
            r, _, _ = select.select([master], [], [], 0.2)
            if r:
                try:
                    seen += os.read(master, 65536)
                except OSError:
                    break
        return seen

    try:
        read_until(b"Granted job allocation")
        os.write(master, b"srun -l sh -c 'echo at $SLURMD_NODENAME' | sort; echo done-$SLURM_NTASKS\n")
        read_until(b"done-4")
        os.write(master, b"exit 5\n")
        read_until(b"Relinquishing job allocation")
        assert p.wait(timeout=30) == 5
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        os.close(master)
    text = seen.decode(errors="replace")
    for line in ("0: at n1", "1: at n1", "2: at n2", "3: at n2"):
        assert line in text, text


def test_ranks_die_with_a_killed_srun_and_steps_end_with_their_allocation(controller, two_nodes, tmp_path):
    out, pids = tmp_path / "out.txt", tmp_path / "pid"
    # srun killed outright: the controller sees its stream go and kills the
    # ranks (pids written by the ranks, waited for by the script).
    jid = sbatch(controller, tmp_path, """#!/bin/bash
#SBATCH -n 2 -o %s
srun -n 2 bash -c 'echo $$ > %s.$SLURM_PROCID; exec sleep 1000' &
p=$!
while [ ! -s %s.0 ] || [ ! -s %s.1 ]; do sleep 0.05; done
kill -KILL $p
for f in %s.0 %s.1; do while kill -0 $(cat $f) 2>/dev/null; do sleep 0.1; done; done
echo ranks-gone
srun -n 2 sleep 1000
""" % ((out,) + (pids,) * 5))
    harness.wait_for(lambda: "ranks-gone" in out.read_text(), timeout=60, what="the ranks gone")
    # The last step holds the allocation until it is cancelled: the step
    # ends with it, its ranks lost.
    st, _ = controller.request("DELETE", "/v1/jobs/%d" % jid, token=controller.token("admin"))
    assert st == 200
    controller.wait_job(jid, "cancelled", timeout=30)


def test_srun_in_a_job_that_is_no_allocation_says_so(controller, two_nodes, tmp_path):
    path = write(tmp_path / "plain.sh", "#!/bin/sh\nsrun hostname\necho \"srun=$?\"\n")
    env = u.cli_env(controller, controller.tenant_tokens["alice"], tmpdir=tmp_path)
    r = u.sluice(["submit", "--quiet", path], env, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    jid = int(r.stdout)
    controller.wait_job(jid, "succeeded")
    log = u.job_log(controller, jid)
    assert "it is not an allocation" in log and "srun=1" in log, log


def test_a_step_ends_when_an_agent_of_its_nodes_goes_away(controller, two_nodes, tmp_path):
    out = tmp_path / "out.txt"
    jid = sbatch(controller, tmp_path, """#!/bin/bash
#SBATCH -n 4 -o %s
srun -l bash -c 'echo up; echo $$ > %s.$SLURM_PROCID; exec sleep 1000'
echo "srun=$?"
""" % (out, tmp_path / "pid"))
    harness.wait_for(lambda: out.exists() and out.read_text().count("up") == 4, timeout=60,
                     what="the step's ranks")
    two_nodes[1].kill9()  # n2's agent; its step daemons kill their ranks
    harness.wait_for(lambda: "srun=255" in out.read_text(), timeout=60, what="srun's end")
    assert "the agent of node n2 went away" in out.read_text()
    # The ranks on n1 were killed too.
    for r in (0, 1):
        pid = int((tmp_path / ("pid.%d" % r)).read_text())
        harness.wait_for(lambda: not u.pid_alive(pid), timeout=30, what="rank %d gone" % r)


def test_srun_pty_gives_an_interactive_shell(controller, two_nodes, tmp_path):
    import pty
    import select
    import subprocess
    a = controller.submit({"allocation": True, "tasks": 4, "cpus": 1, "memory": "64Mi",
                           "command": ["sluice-stepd"]}, tenant="alice")
    controller.wait_job(a["id"], "running")
    env = u.cli_env(controller, controller.tenant_tokens["alice"], tmpdir=tmp_path)
    master, slave = pty.openpty()
    p = subprocess.Popen([os.path.join(harness.build_dir(), "sluice"), "srun", "--jobid", str(a["id"]),
                          "--pty", "/bin/sh"], stdin=slave, stdout=slave, stderr=slave, env=env,
                         cwd=str(tmp_path), start_new_session=True)
    os.close(slave)
    seen = b""

    def read_until(what, timeout=30):
        nonlocal seen
        deadline = time.monotonic() + timeout
        while what not in seen:
            assert time.monotonic() < deadline, seen.decode(errors="replace")
            r, _, _ = select.select([master], [], [], 0.2)
            if r:
                try:
                    seen += os.read(master, 65536)
                except OSError:
                    break
        return seen

    try:
        os.write(master, b"tty; echo on-$SLURMD_NODENAME-$SLURM_STEP_NUM_TASKS\r")
        read_until(b"on-n1-1")
        os.write(master, b"exit 6\r")
        assert p.wait(timeout=30) == 6
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        os.close(master)
        controller.request("DELETE", "/v1/jobs/%d" % a["id"], token=controller.token("admin"))
    assert b"/dev/pts/" in seen, seen


def test_an_srun_that_does_not_read_costs_sluiced_no_memory(controller, two_nodes, tmp_path):
    out, done = tmp_path / "out.txt", tmp_path / "done"
    ready, go = tmp_path / "ready", tmp_path / "go"
    # srun stopped while its rank writes 40 MB: sluiced keeps at most 8 MiB
    # for it, drops the rest and says so once srun reads again. The rank
    # waits until srun is stopped before it writes (on a quiet machine 40 MB
    # pass in well under a second, before a stop after a fixed sleep).
    jid = sbatch(controller, tmp_path, """#!/bin/bash
#SBATCH -n 1 -o %s
srun -n 1 bash -c 'touch %s; while [ ! -e %s ]; do sleep 0.05; done; head -c 40000000 /dev/zero | tr "\\\\0" x; echo; touch %s' > %s/big.txt 2>%s/big.err &
p=$!
while [ ! -e %s ]; do sleep 0.05; done
kill -STOP $p $(pgrep -P $p)
touch %s
while [ ! -e %s ]; do sleep 0.1; done
kill -CONT $p $(pgrep -P $p)
wait $p
echo "srun=$?"
""" % (out, ready, go, done, tmp_path, tmp_path, ready, go, done))
    controller.wait_job(jid, "succeeded", timeout=120)
    text = out.read_text()
    err = (tmp_path / "big.err").read_text()
    assert "srun=0" in text and "bytes of the ranks' output dropped" in err, (text, err)
    assert os.path.getsize(tmp_path / "big.txt") < 40000000
