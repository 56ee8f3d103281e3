"""
test_cgroup_pool.py - the pool of spare task cgroups on cgroup v1 (issue 9;
docs/enforcement.md "The pool"), with the real v1 controllers of this
machine, a real sluiced and sluice-agent on 127.0.0.1.

The agent keeps spare cgroups ROOT/pool.N made ahead of launches (the
devices deny-all and the standard devices, pids.max and the CPU period
written, no process in them) and renames one to JOB.TASK for a launch,
writing only the task's own limits and GPU rules. These tests check that
a spare holds only what every task shares, that a task in a pooled cgroup
gets exactly its own request's limits and devices and no other task's
processes, that a restarted agent keeps a re-adopted task's cgroup and
removes the spares and empty leftovers of the agent it replaces, and that
an agent stopped cleanly leaves no spare behind. Each test's agent has a
cgroup root of its own (as in test_cgroup_v1.py), which the fixture removes
with everything under it; stand-in GPU device files as there.
"""

import functools
import os
import re
import shutil
import stat
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import harness  # noqa: E402
import e2e_util as u  # noqa: E402

CONTROLLERS = u.CGROUP_V1
MI = 1024 * 1024
# runc's default device list, as the agent allows it (src/agent/cgroup.c).
STANDARD = {"c 1:3 rwm", "c 1:5 rwm", "c 1:7 rwm", "c 1:8 rwm", "c 1:9 rwm", "c 5:0 rwm",
            "c 5:2 rwm", "c 136:* rwm", "c 10:200 rwm"}
GPU_CTL = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset")
UNLIMITED = 1 << 62    # v1 reads "no limit" as a page-rounded 2^63 - 1

MOUNTS = u.v1_mounts(CONTROLLERS)

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or any(c not in MOUNTS or not os.access(MOUNTS[c], os.W_OK)
                             for c in CONTROLLERS),
    reason="needs root and the cgroup v1 controllers %s mounted writable" % ", ".join(CONTROLLERS))


cg_dirs = functools.partial(u.v1_cg_dirs, MOUNTS)  # (root, name=""): {controller: dir}
read = u.cg_read
procs = u.cg_procs


def cg_path(root, ctl, name):
    return os.path.join(MOUNTS[ctl] + root, name)


def spares(root):
    """{hierarchy: sorted pool.N names} under root."""
    return {c: sorted(e for e in os.listdir(d) if e.startswith("pool."))
            for c, d in cg_dirs(root).items()}


def spare_names(root, n):
    """Waits until root holds n spares, the same in every hierarchy;
    returns their names."""
    def check():
        s = spares(root)
        names = s["memory"]
        return names if len(names) == n and all(v == names for v in s.values()) else None
    return harness.wait_for(check, what="%d spare cgroups under %s" % (n, root))


def gpu_ctl_rules():
    """The allow rules of the GPU control files this machine has."""
    out = set()
    for f in GPU_CTL:
        try:
            st = os.stat(f)
        except OSError:
            continue
        if stat.S_ISCHR(st.st_mode):
            out.add("c %d:%d rwm" % (os.major(st.st_rdev), os.minor(st.st_rdev)))
    return out


@pytest.fixture
def devices():
    """Two stand-in GPU device files (GPU 0: 10:229, GPU 1: 10:237)."""
    d = tempfile.mkdtemp(prefix="sluice-gpudev-")
    os.chmod(d, 0o755)
    files = [os.path.join(d, "gpu0"), os.path.join(d, "gpu1")]
    os.mknod(files[0], 0o666 | stat.S_IFCHR, os.makedev(10, 229))
    os.mknod(files[1], 0o666 | stat.S_IFCHR, os.makedev(10, 237))
    for f in files:
        os.chmod(f, 0o666)
    yield files
    shutil.rmtree(d, ignore_errors=True)


GPU_RULE = {0: "c 10:229 rwm", 1: "c 10:237 rwm"}


@pytest.fixture
def v1_agent(controller, devices):
    """v1_agent(**agent_kw) -> (Agent, root): an agent enforcing with cgroup
    v1 under a root of its own, two stand-in GPUs, the default pool (one
    spare per GPU, at least 2: 2 here). Teardown stops the agents and
    removes every cgroup under each root, and the root."""
    made = []

    def make(**kw):
        root = harness.unique_cgroup_root("pool")
        for d in cg_dirs(root).values():
            os.makedirs(d)
        a = harness.Agent(controller, "n%d" % (len(made) + 1), gpus=2, cgroup="v1",
                          cgroup_root=root,
                          extra_args=["--gpu-device-files", ",".join(devices)] +
                          list(kw.pop("extra_args", ())), **kw)
        made.append((a, root))
        a.start()
        return a, root

    yield make
    for a, _ in made:
        a.stop()
    for _, root in made:
        for d in cg_dirs(root).values():
            u.remove_cgroup_tree(d)


def waiting(go):
    return u.sh("while [ ! -e %s ]; do sleep 0.05; done" % go)


def gpu_of(pid):
    env = read("/proc/%d/environ" % pid).replace("\0", "\n")
    return int(re.search(r"CUDA_VISIBLE_DEVICES=(\d)", env).group(1))


def assert_exactly(root, name, pid, mem, quota, devices):
    """The cgroup root/name holds exactly a task of `mem` bytes requested
    (None: no limit), CPU quota `quota` us (-1: none) and the device rules
    `devices`, and only processes of the task pid's session."""
    m = cg_path(root, "memory", name)
    limit = int(read(os.path.join(m, "memory.limit_in_bytes")))
    soft = int(read(os.path.join(m, "memory.soft_limit_in_bytes")))
    if mem is None:
        assert limit >= UNLIMITED and soft >= UNLIMITED, (limit, soft)
    else:
        assert (limit, soft) == (mem * 11 // 10 // 4096 * 4096, mem * 9 // 10 // 4096 * 4096)
        if os.path.exists(os.path.join(m, "memory.memsw.limit_in_bytes")):
            assert int(read(os.path.join(m, "memory.memsw.limit_in_bytes"))) == limit
    c = cg_path(root, "cpu", name)
    assert int(read(os.path.join(c, "cpu.cfs_quota_us"))) == quota
    assert int(read(os.path.join(c, "cpu.cfs_period_us"))) == 100000
    assert read(os.path.join(cg_path(root, "pids", name), "pids.max")) == "4096"
    got = set(read(os.path.join(cg_path(root, "devices", name), "devices.list")).splitlines())
    assert got == devices, (sorted(got), sorted(devices))
    for ctl, d in cg_dirs(root, name).items():
        ps = procs(d)
        assert pid in ps, (ctl, ps)
        for p in ps:
            assert os.getsid(p) == pid, (ctl, p, "not of task", pid)


def test_spares_hold_only_what_every_task_shares(controller, v1_agent):
    agent, root = v1_agent()
    assert "2 spare task cgroups made ahead" in agent.log(), agent.log()
    for name in spare_names(root, 2):
        for ctl, d in cg_dirs(root, name).items():
            assert procs(d) == [], (ctl, name)
        devs = set(read(os.path.join(cg_path(root, "devices", name), "devices.list"))
                   .splitlines())
        assert devs == STANDARD, sorted(devs)
        m = cg_path(root, "memory", name)
        assert int(read(os.path.join(m, "memory.limit_in_bytes"))) >= UNLIMITED
        assert int(read(os.path.join(cg_path(root, "cpu", name), "cpu.cfs_quota_us"))) == -1
        assert read(os.path.join(cg_path(root, "pids", name), "pids.max")) == "4096"


def test_pooled_cgroups_carry_only_their_own_tasks_limits(controller, v1_agent, tmp_path):
    """Task A (GPU, 1.5 CPUs, 200Mi) takes the oldest spare; task B (the
    other GPU, 0.5 CPU, 64Mi) the next one, while A runs; once A has ended,
    task C (no GPU, 0.25 CPU, 32Mi) takes a spare made after A's launch.
    Each cgroup has exactly its own task's limits and devices, and only its
    own task's processes."""
    agent, root = v1_agent()
    tmp_path.chmod(0o755)
    first = spare_names(root, 2)
    go_a, go_b, go_c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    ja = controller.submit({"gpus": 1, "cpus": "1500m", "memory": "200Mi",
                            "command": waiting(go_a)})
    try:
        (pa,) = u.wait_running_pids(controller, ja["id"])
        name_a = u.task_key(controller, ja["id"])
        # A's cgroup is the renamed oldest spare; another is made for the pool.
        assert first[0] not in spares(root)["memory"]
        spare_names(root, 2)
        jb = controller.submit({"gpus": 1, "cpus": "500m", "memory": "64Mi",
                                "command": waiting(go_b)})
        (pb,) = u.wait_running_pids(controller, jb["id"])
        name_b = u.task_key(controller, jb["id"])
        assert first[1] not in spares(root)["memory"]
        ga, gb = gpu_of(pa), gpu_of(pb)
        assert ga != gb
        ctl = gpu_ctl_rules()
        assert_exactly(root, name_a, pa, 200 * MI, 150000, STANDARD | ctl | {GPU_RULE[ga]})
        assert_exactly(root, name_b, pb, 64 * MI, 50000, STANDARD | ctl | {GPU_RULE[gb]})
        go_a.write_text("")
        controller.wait_job(ja["id"], "succeeded")
        harness.wait_for(lambda: not any(os.path.exists(d)
                                         for d in cg_dirs(root, name_a).values()),
                         what="A's cgroups to be removed")
        made_after_a = spare_names(root, 2)[0]
        jc = controller.submit({"cpus": "250m", "memory": "32Mi", "command": waiting(go_c)})
        (pc,) = u.wait_running_pids(controller, jc["id"])
        assert made_after_a not in spares(root)["memory"]
        assert_exactly(root, u.task_key(controller, jc["id"]), pc, 32 * MI, 25000, STANDARD)
        # B's cgroup is unchanged by C's launch.
        assert_exactly(root, name_b, pb, 64 * MI, 50000, STANDARD | ctl | {GPU_RULE[gb]})
    finally:
        for go in (go_a, go_b, go_c):
            go.write_text("")
    for j in (jb, jc):
        controller.wait_job(j["id"], "succeeded")


def test_restart_keeps_the_tasks_cgroup_and_removes_spares_and_leftovers(
        controller, v1_agent, tmp_path):
    """kill -9 of the agent while it holds spares and a task runs, an empty
    leftover beside them: the restarted agent re-adopts the task, which
    keeps its cgroup; the dead agent's spares and the leftover are removed;
    the new agent makes spares of its own."""
    agent, root = v1_agent()
    tmp_path.chmod(0o755)
    go = tmp_path / "go"
    j = controller.submit({"gpus": 1, "cpus": "1", "memory": "64Mi", "command": waiting(go)})
    (pid,) = u.wait_running_pids(controller, j["id"])
    name = u.task_key(controller, j["id"])
    try:
        old = spare_names(root, 2)
        old_inodes = {os.stat(d).st_ino for n in old for d in cg_dirs(root, n).values()}
        agent.kill9()
        leftover = cg_dirs(root, "999999.0")
        for d in leftover.values():
            os.makedirs(d)
        agent.start()
        harness.wait_for(lambda: "pid=%d re-adopted" % pid in agent.log(), what="re-adoption")
        for n in old:
            assert "removed leftover cgroup %s" % n in agent.log(), agent.log()
        assert "removed leftover cgroup 999999.0" in agent.log()
        assert not any(os.path.exists(d) for d in leftover.values())
        new = spare_names(root, 2)
        now_inodes = {os.stat(d).st_ino for n in new for d in cg_dirs(root, n).values()}
        assert not old_inodes & now_inodes, "a dead agent's spare survived its restart"
        entries = {e for d in cg_dirs(root).values() for e in os.listdir(d)
                   if os.path.isdir(os.path.join(d, e))}
        assert entries == set(new) | {name}, entries
        for ctl, d in cg_dirs(root, name).items():
            assert pid in procs(d), ctl
    finally:
        go.write_text("")
    controller.wait_job(j["id"], "succeeded")
    harness.wait_for(lambda: not any(os.path.exists(d) for d in cg_dirs(root, name).values()),
                     what="the re-adopted task's cgroups to be removed")


def test_a_clean_stop_leaves_no_spare(controller, v1_agent):
    agent, root = v1_agent()
    j = controller.submit({"cpus": "1", "memory": "64Mi", "command": ["true"]})
    controller.wait_job(j["id"], "succeeded")
    spare_names(root, 2)
    agent.stop()
    for ctl, d in cg_dirs(root).items():
        left = [e for e in os.listdir(d) if os.path.isdir(os.path.join(d, e))]
        assert left == [], (ctl, left)


def test_pool_off_makes_each_cgroup_at_launch(controller, v1_agent, tmp_path):
    agent, root = v1_agent(extra_args=["--cgroup-pool", "0"])
    assert "spare task cgroup" not in agent.log()
    tmp_path.chmod(0o755)
    go = tmp_path / "go"
    j = controller.submit({"gpus": 1, "cpus": "500m", "memory": "64Mi", "command": waiting(go)})
    try:
        (pid,) = u.wait_running_pids(controller, j["id"])
        assert spares(root)["memory"] == []
        assert_exactly(root, u.task_key(controller, j["id"]), pid, 64 * MI, 50000,
                       STANDARD | gpu_ctl_rules() | {GPU_RULE[gpu_of(pid)]})
    finally:
        go.write_text("")
    controller.wait_job(j["id"], "succeeded")


@pytest.mark.parametrize("value", ["9", "-1", "two"])
def test_bad_pool_size_is_refused(controller, value):
    a = harness.Agent(controller, "bad", cgroup=None, extra_args=["--cgroup-pool", value])
    a.start(wait=False)
    rc = a.proc.wait(timeout=20)
    a.stop()
    assert rc == 2, a.log()
    assert "--cgroup-pool: \"%s\" is not a whole number of cgroups from 0 to 8" % value \
        in a.log(), a.log()
