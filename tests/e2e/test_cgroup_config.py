"""
test_cgroup_config.py - sluice-agent's choice of enforcement and its
refusals (issue 9; docs/enforcement.md), with a real sluiced on 127.0.0.1.

Bad configuration (a cgroup root that does not exist, one the agent may not
write, cgroup v2 without the memory controller delegated) stops the agent
before it registers: exit status 1 and one line on stderr that names the
file and what to do, so no task ever starts half-limited. cgroup v2 is
exercised through the agent against a directory laid out like cgroupfs
(--cgroup-mount): the files a task's cgroup gets, the agent's leaf, and
removal when the task ends; and against this machine's real cgroup2 mount
(/sys/fs/cgroup/unified, which has no controllers) for the refusal. Every
cgroup a test makes is removed by it.
"""

import os
import shutil
import subprocess
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import harness  # noqa: E402
import e2e_util as u  # noqa: E402

UNIFIED = "/sys/fs/cgroup/unified"
V1_MEMORY = "/sys/fs/cgroup/memory"


def is_cgroup2(path):
    with open("/proc/self/mountinfo") as f:
        return any(line.split(" - ")[1].split()[0] == "cgroup2" and line.split()[4] == path
                   for line in f)


def refused(agent, timeout=20):
    """Starts agent without waiting for it to register; returns (exit
    status, the lines it wrote)."""
    agent.start(wait=False)
    rc = agent.proc.wait(timeout=timeout)
    agent._log.close()
    return rc, [line for line in agent.log().splitlines() if line.strip()]


def only_line(lines, prefix="sluice-agent: "):
    errs = [line for line in lines if line.startswith(prefix)]
    assert len(errs) == 1, lines
    return errs[0]


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root")


@needs_root
@pytest.mark.skipif(not os.access(V1_MEMORY, os.W_OK), reason="no writable cgroup v1 memory controller")
def test_v1_root_that_does_not_exist(controller):
    root = harness.unique_cgroup_root("missing")
    a = harness.Agent(controller, "n1", cgroup="v1", cgroup_root=root)
    rc, lines = refused(a)
    assert rc == 1, lines
    line = only_line(lines)
    assert line.startswith("sluice-agent: cgroup v1: --cgroup-root %s: " % root), line
    assert "No such file or directory (create it in every controller's hierarchy" in line, line
    assert controller.node("n1") is None


@needs_root
@pytest.mark.skipif(not os.access(V1_MEMORY, os.W_OK), reason="no writable cgroup v1 memory controller")
@pytest.mark.skipif(not shutil.which("setpriv"), reason="no setpriv")
def test_v1_root_the_agent_may_not_write(controller, tmp_path):
    """The agent as `nobody` against a root-owned cgroup root."""
    root = harness.unique_cgroup_root("eacces")
    dirs = [m + root for m in ("/sys/fs/cgroup/%s" % c for c in
                               ("memory", "cpu", "cpuacct", "pids", "devices"))]
    work = tempfile.mkdtemp(prefix="sluice-nobody-")
    try:
        for d in dirs:
            os.makedirs(d)
        os.chmod(work, 0o777)
        a = harness.Agent(controller, "n1", cgroup="v1", cgroup_root=root)
        # Only this process (and so the agent) need reach the binaries.
        a.args[a.args.index("--workdir") + 1] = work
        a.log_path = os.path.join(work, "agent.log")
        binary = a.binary
        a.proc = None
        a._log = open(a.log_path, "ab")
        a.proc = subprocess.Popen(["setpriv", "--reuid=nobody", "--regid=nogroup",
                                   "--clear-groups", binary] + a.args, stdout=a._log,
                                  stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        rc = a.proc.wait(timeout=20)
        a._log.close()
        lines = [line for line in open(a.log_path).read().splitlines() if line.strip()]
        if any("Permission denied" in line and "sluice-agent" not in line for line in lines):
            pytest.skip("nobody cannot run %s here: %s" % (binary, lines))
        assert rc == 1, lines
        line = only_line(lines)
        assert line.startswith("sluice-agent: cgroup v1: cannot write /sys/fs/cgroup/"), line
        assert "%s: Permission denied (run the agent as root, or pass --cgroup-root" % root \
            in line, line
        assert controller.node("n1") is None
    finally:
        for d in dirs:
            if os.path.isdir(d):
                os.rmdir(d)
        shutil.rmtree(work, ignore_errors=True)


@needs_root
@pytest.mark.skipif(not is_cgroup2(UNIFIED) or not os.access(UNIFIED, os.W_OK),
                    reason="no writable cgroup2 mount at %s" % UNIFIED)
def test_v2_without_the_memory_controller_is_refused(controller):
    """The real cgroup2 mount here offers no controller: the agent's own
    cgroup there (the default root) and one made for the test are both
    refused, naming cgroup.controllers."""
    a = harness.Agent(controller, "n1", cgroup="v2", extra_args=["--cgroup-mount", UNIFIED])
    rc, lines = refused(a)
    assert rc == 1, lines
    line = only_line(lines)
    assert "cgroup v2: memory controller not delegated to %s" % UNIFIED in line, line
    assert line.endswith("(cgroup.controllers lacks memory): start the agent with systemd "
                         "Delegate=yes or pass --cgroup-root"), line

    root = harness.unique_cgroup_root("v2")
    os.mkdir(UNIFIED + root)
    try:
        b = harness.Agent(controller, "n2", cgroup="v2", cgroup_root=root,
                          extra_args=["--cgroup-mount", UNIFIED])
        rc, lines = refused(b)
        assert rc == 1, lines
        assert "memory controller not delegated to %s%s (cgroup.controllers lacks memory)" \
            % (UNIFIED, root) in only_line(lines)
        # Nothing was left changed: no agent leaf was made.
        assert not os.path.exists(UNIFIED + root + "/agent")
    finally:
        os.rmdir(UNIFIED + root)
    assert controller.node("n1") is None and controller.node("n2") is None


def test_v2_mount_that_is_not_cgroup2(controller, tmp_path):
    a = harness.Agent(controller, "n1", cgroup="v2",
                      extra_args=["--cgroup-mount", str(tmp_path)])
    rc, lines = refused(a)
    assert rc == 1
    assert only_line(lines) == ("sluice-agent: cgroup v2: %s is not a cgroup2 file system: pass "
                                "--cgroup-mount the cgroup2 mount, or --cgroup v1 or --cgroup "
                                "none" % tmp_path)


def test_bad_flags(controller):
    cases = ((["--cgroup", "v3"], '--cgroup: "v3" is not one of v2, v1, none, auto'),
             (["--pids-max", "-1"], "--pids-max: \"-1\" is not a whole number"),
             (["--oom-score-adj", "-1001"], "--oom-score-adj: \"-1001\" is not"))
    for i, (args, want) in enumerate(cases):
        a = harness.Agent(controller, "n%d" % (i + 1), cgroup=None, extra_args=args)
        rc, lines = refused(a)
        assert rc == 2 and want in lines[0], lines


def fake_cgroupfs(base):
    """A directory laid out like a delegated cgroup2 subtree /sluice."""
    os.makedirs(os.path.join(base, "sluice"))
    for rel, text in (("cgroup.controllers", "cpuset cpu io memory pids\n"),
                      ("sluice/cgroup.controllers", "cpuset cpu io memory pids\n"),
                      ("sluice/cgroup.procs", "4242\n"),
                      ("sluice/cgroup.subtree_control", "")):
        with open(os.path.join(base, rel), "w") as f:
            f.write(text)


def test_v2_fake_tree_through_the_agent(controller, tmp_path):
    """The agent with --cgroup v2 on a fake tree: it moves itself into
    ROOT/agent, enables the controllers, and a task's cgroup gets its
    limits (110%/90% of 256Mi, 1.5 CPUs, no swap, group OOM kill) and the
    task itself; the cgroup goes when the task ends."""
    fake = tmp_path / "cgfs"
    fake_cgroupfs(str(fake))
    root = fake / "sluice"
    a = harness.Agent(controller, "n1", gpus=1, cgroup="v2", cgroup_root="/sluice",
                      extra_args=["--cgroup-mount", str(fake)])
    a.start()
    try:
        assert "cgroup v2: memory (hard 110%, soft 90%, no swap), cpu quota, pids.max 4096, " \
            "devices NOT enforced (not a real cgroup2 mount)" in a.log(), a.log()
        procs = (root / "agent" / "cgroup.procs").read_text().split()
        assert procs == ["0", "4242"], procs
        assert (root / "cgroup.subtree_control").read_text() == "+memory +cpu +pids\n"
        assert (root / "tasks" / "cgroup.subtree_control").read_text() == "+memory +cpu +pids\n"
        assert (root / "cgroup.procs").read_text() == "4242\n"      # never written
        assert not (root / "tasks" / "cgroup.procs").exists()      # an internal node

        tmp_path.chmod(0o755)
        go = tmp_path / "go"
        j = controller.submit({"gpus": 1, "cpus": "1.5", "memory": "256Mi",
                               "command": u.sh("while [ ! -e %s ]; do sleep 0.05; done" % go)})
        u.wait_running_pids(controller, j["id"])
        task = root / "tasks" / u.task_key(controller, j["id"])
        try:
            mi = 1 << 20
            want = {"memory.max": str(256 * mi * 11 // 10 // 4096 * 4096),
                    "memory.low": str(256 * mi * 9 // 10 // 4096 * 4096),
                    "memory.swap.max": "0", "memory.oom.group": "1", "cpu.max": "150000 100000",
                    "pids.max": "4096"}
            for f, v in want.items():
                assert (task / f).read_text() == v + "\n", f
            # The task wrote itself in (its child's raw "0"), not its monitor.
            assert (task / "cgroup.procs").read_text() == "0"
        finally:
            go.write_text("")
        controller.wait_job(j["id"], "succeeded")
        harness.wait_for(lambda: not task.exists(), what="the task's cgroup to be removed")
    finally:
        a.stop()


def test_task_gets_the_oom_score_adj_of_its_launch(controller_factory, tmp_path):
    """The controller's oom_score_adj reaches the task's
    /proc/PID/oom_score_adj through the launch (a value above the agent's
    own, which any agent can give). The agent's score is lower than the
    task's whether or not it may lower its own (CAP_SYS_RESOURCE)."""
    ctl = controller_factory(config_overrides={"oom_score_adj": 300})
    a = harness.Agent(ctl, "n1", gpus=0)
    a.start()
    try:
        tmp_path.chmod(0o755)
        go = tmp_path / "go"
        j = ctl.submit({"command": u.sh("while [ ! -e %s ]; do sleep 0.05; done" % go)})
        (pid,) = u.wait_running_pids(ctl, j["id"])
        try:
            with open("/proc/%d/oom_score_adj" % pid) as f:
                assert int(f.read()) == 300
            with open("/proc/%d/oom_score_adj" % a.proc.pid) as f:
                assert int(f.read()) < 300
        finally:
            go.write_text("")
        ctl.wait_job(j["id"], "succeeded")
    finally:
        a.stop()
