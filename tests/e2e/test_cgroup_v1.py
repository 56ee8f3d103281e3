"""
test_cgroup_v1.py - per-task enforcement with the real cgroup v1
controllers of this machine (issue 9; docs/enforcement.md), against a real
sluiced and sluice-agent on 127.0.0.1.

Each test's agent runs with --cgroup v1 and a cgroup root of its own
(/sluice-test-v1-PID-N, made here in every controller's hierarchy), so
concurrent runs never share a cgroup; the fixture removes everything under
that root (killing what is left in it) and the root itself at teardown, on
failure too. GPU device files are stand-ins: character devices made with
mknod in a temporary directory with the numbers of /dev/fuse (10:229, GPU
0) and /dev/loop-control (10:237, GPU 1), which are harmless to open and
not on the standard allow list, so they go through the same code path as
/dev/nvidiaN. Tasks run as `nobody` (the default user of a root agent).
No assertion depends on elapsed time except the CPU share, which is a
generous band of CPU time over wall time.
"""

import functools
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import harness  # noqa: E402
import e2e_util as u  # noqa: E402

CONTROLLERS = u.CGROUP_V1
PY = "/usr/bin/python3"
MI = 1024 * 1024


MOUNTS = u.v1_mounts(CONTROLLERS)

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or any(c not in MOUNTS or not os.access(MOUNTS[c], os.W_OK)
                             for c in CONTROLLERS),
    reason="needs root and the cgroup v1 controllers %s mounted writable" % ", ".join(CONTROLLERS))


def has_cap_sys_resource():
    """Whether this process (and so the agent it starts) may lower an
    oom_score_adj: CAP_SYS_RESOURCE (24) in its effective set."""
    with open("/proc/self/status") as f:
        caps = dict(line.split(":", 1) for line in f if line.startswith("Cap"))
    return bool(int(caps["CapEff"].strip(), 16) & (1 << 24))


cg_dirs = functools.partial(u.v1_cg_dirs, MOUNTS)  # (root, name=""): {controller: dir}
read = u.cg_read
procs = u.cg_procs


def cg_path(root, ctl, name):
    return os.path.join(MOUNTS[ctl] + root, name)


@pytest.fixture
def devices():
    """Two stand-in GPU device files (GPU 0: 10:229, GPU 1: 10:237) in a
    directory that `nobody` can reach."""
    d = tempfile.mkdtemp(prefix="sluice-gpudev-")
    os.chmod(d, 0o755)
    files = [os.path.join(d, "gpu0"), os.path.join(d, "gpu1")]
    os.mknod(files[0], 0o666 | stat.S_IFCHR, os.makedev(10, 229))
    os.mknod(files[1], 0o666 | stat.S_IFCHR, os.makedev(10, 237))
    for f in files:
        os.chmod(f, 0o666)
    yield files
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def v1_agent(controller, devices):
    """v1_agent(**agent_kw) -> (Agent, root): a started agent enforcing with
    cgroup v1 under a root of its own, two stand-in GPUs. Teardown stops
    the agents and removes every cgroup under each root, and the root."""
    made = []

    def make(**kw):
        root = harness.unique_cgroup_root("v1")
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


def waiting(go, then="exit 0"):
    """A shell task that waits for file go, then runs the words then."""
    return u.sh("while [ ! -e %s ]; do sleep 0.05; done; %s" % (go, then))


def job_dir(ctl, jid):
    return u.task_key(ctl, jid)


def test_files_written_match_the_request(controller, v1_agent, tmp_path):
    agent, root = v1_agent(extra_args=["--pids-max", "321"])
    assert "cgroup v1: memory (hard 110%, soft 90%, no swap), cpu quota, pids.max 321" \
        in agent.log(), agent.log()
    go = tmp_path / "go"
    go.parent.chmod(0o755)
    j = controller.submit({"gpus": 1, "cpus": "500m", "memory": "100Mi",
                           "command": waiting(go)})
    (pid,) = u.wait_running_pids(controller, j["id"])
    name = job_dir(controller, j["id"])
    try:
        mem = cg_path(root, "memory", name)
        assert int(read(os.path.join(mem, "memory.limit_in_bytes"))) == 110 * MI
        assert int(read(os.path.join(mem, "memory.soft_limit_in_bytes"))) == 90 * MI
        if os.path.exists(os.path.join(mem, "memory.memsw.limit_in_bytes")):
            assert int(read(os.path.join(mem, "memory.memsw.limit_in_bytes"))) == 110 * MI
        cpu = cg_path(root, "cpu", name)
        assert int(read(os.path.join(cpu, "cpu.cfs_period_us"))) == 100000
        assert int(read(os.path.join(cpu, "cpu.cfs_quota_us"))) == 50000
        assert read(os.path.join(cg_path(root, "pids", name), "pids.max")) == "321"
        # Devices: the standard ones and this task's GPU, nothing else.
        gpu = int(re.search(r"CUDA_VISIBLE_DEVICES=(\d)", read("/proc/%d/environ" % pid)
                            .replace("\0", "\n")).group(1))
        allowed = read(os.path.join(cg_path(root, "devices", name), "devices.list")).splitlines()
        assert "c 1:3 rwm" in allowed and "c 136:* rwm" in allowed, allowed
        assert ("c 10:%d rwm" % (229 if gpu == 0 else 237)) in allowed, allowed
        assert ("c 10:%d rwm" % (237 if gpu == 0 else 229)) not in allowed, allowed
        assert "a *:* rwm" not in allowed
        # The task is in its cgroup in every hierarchy; its monitor is not.
        monitor = int(re.search(r"job=%d task=0 pid=%d monitor=(\d+)" % (j["id"], pid),
                                agent.log()).group(1))
        for ctl, d in cg_dirs(root, name).items():
            assert pid in procs(d), (ctl, procs(d))
            assert monitor not in procs(d), ctl
        # oom_score_adj: the task -500, the agent lower (-900). Lowering a
        # score takes CAP_SYS_RESOURCE: an agent without it keeps its own
        # score, says so, and gives its tasks no lower one.
        task_adj = int(read("/proc/%d/oom_score_adj" % pid))
        agent_adj = int(read("/proc/%d/oom_score_adj" % agent.proc.pid))
        if has_cap_sys_resource():
            assert (task_adj, agent_adj) == (-500, -900)
        else:
            assert "cannot lower the agent's oom_score_adj to -900" in agent.log()
            assert task_adj == max(-500, agent_adj)
    finally:
        go.write_text("")
    done = controller.wait_job(j["id"], "succeeded")
    assert done["placement"][0]["exit_code"] == 0
    # Removed once the task ended and its outcome was read.
    harness.wait_for(lambda: not any(os.path.exists(d) for d in cg_dirs(root, name).values()),
                     what="the task's cgroups to be removed")


def test_task_past_110_percent_is_oom_killed_whole(controller, v1_agent, tmp_path):
    """64Mi requested, 100Mi touched: the kernel kills the allocator at the
    hard limit (70.4Mi) and the agent kills the rest of the task, a
    process in a session of its own included."""
    agent, root = v1_agent()
    tmp_path.chmod(0o755)
    pidfile = tmp_path / "stray.pid"
    script = ("setsid sleep 300 & echo $! > %s; "
              "%s -c 'import time; x = b\"\\x01\" * (100 << 20); time.sleep(30)'"
              % (pidfile, PY))
    j = controller.submit({"cpus": "1", "memory": "64Mi", "command": u.sh(script)})
    done = controller.wait_job(j["id"], "failed", timeout=60)
    p = done["placement"][0]
    assert p["signal"] == signal.SIGKILL or p["exit_code"] == 128 + signal.SIGKILL, done
    assert re.search(r"job=%d task=0 cgroup: oom_killed=1 oom_kills=\d+ mem_peak=\d+ mem_limit=%d"
                     % (j["id"], 64 * MI * 11 // 10 // 4096 * 4096),
                     agent.log()), agent.log()
    # Reported to the controller as killed for memory, with its limit.
    assert p["oom_killed"] is True, p
    assert p["mem_limit_bytes"] == 64 * MI * 11 // 10 // 4096 * 4096, p
    assert p["mem_peak_bytes"] >= p["mem_limit_bytes"] - 4 * MI, p
    assert done["reason"].startswith("OOMKilled: task 0 used"), done["reason"]
    stray = int(pidfile.read_text())
    harness.wait_for(lambda: not u.pid_alive(stray), what="the task's stray process to die")
    harness.wait_for(lambda: not any(os.path.exists(d)
                                     for d in cg_dirs(root, job_dir(controller, j["id"])).values()),
                     what="the task's cgroups to be removed")


def test_task_within_its_request_is_not_killed(controller, v1_agent):
    agent, root = v1_agent()
    j = controller.submit({"cpus": "1", "memory": "128Mi",
                           "command": [PY, "-c", "x = b'\\x01' * (48 << 20); print(len(x))"]})
    done = controller.wait_job(j["id"], "succeeded", timeout=60)
    assert done["placement"][0]["exit_code"] == 0
    assert not done["placement"][0].get("oom_killed"), done
    assert done["placement"][0]["mem_limit_bytes"] == 128 * MI * 11 // 10 // 4096 * 4096
    assert re.search(r"job=%d task=0 cgroup: oom_killed=0 oom_kills=0 mem_peak=\d+ mem_limit=%d"
                     % (j["id"], 128 * MI * 11 // 10 // 4096 * 4096), agent.log()), agent.log()


BUSY = ("import time, os, sys\n"
        "t0, c0 = time.monotonic(), time.process_time()\n"
        "while time.monotonic() - t0 < 3.0: pass\n"
        "share = (time.process_time() - c0) / (time.monotonic() - t0)\n"
        "open(sys.argv[1], 'w').write('%.3f' % share)\n"
        "while len(sys.argv) > 2 and not os.path.exists(sys.argv[2]): time.sleep(0.05)\n")


def test_half_a_cpu_gets_about_half_a_cpu(controller, v1_agent, tmp_path):
    """A busy loop with 0.5 CPU for 3 s of wall time gets about half a CPU:
    its CPU time over wall time stays well below 1 (the quota holds it: the
    kernel throttled it whenever there was CPU to spare), and no lower than
    a busy loop without a quota that runs beside it gets, up to the quota
    (a loaded machine gives both less)."""
    agent, root = v1_agent()
    tmp_path.chmod(0o755)
    out, ref_out, go = tmp_path / "share", tmp_path / "ref", tmp_path / "go"
    j = controller.submit({"cpus": "500m", "memory": "256Mi",
                           "command": [PY, "-c", BUSY, str(out), str(go)]})
    ref = None
    try:
        u.wait_running_pids(controller, j["id"])
        ref = subprocess.Popen([PY, "-c", BUSY, str(ref_out)])
        harness.wait_for(lambda: out.exists() and out.read_text(), timeout=60,
                         what="the CPU share")
        stat_lines = read(os.path.join(cg_path(root, "cpu", job_dir(controller, j["id"])),
                                       "cpu.stat")).splitlines()
        throttled = int(dict(line.split() for line in stat_lines)["nr_throttled"])
        assert ref.wait(timeout=60) == 0
    finally:
        go.write_text("")
        if ref and ref.poll() is None:
            ref.kill()
            ref.wait()
    share, unlimited = float(out.read_text()), float(ref_out.read_text())
    assert share <= 0.7, (share, unlimited)
    assert share >= min(0.3, unlimited * 0.5), (share, unlimited)
    if unlimited >= 0.75:
        # There was CPU to spare: the quota, not other load, held it.
        assert throttled > 0, (share, unlimited)
    controller.wait_job(j["id"], "succeeded", timeout=30)


def test_task_opens_only_its_own_gpu_device(controller, v1_agent, devices):
    agent, root = v1_agent()
    prog = ("import os\n"
            "for i, f in enumerate(%r):\n"
            "    try:\n"
            "        os.close(os.open(f, os.O_RDWR)); print('gpu%%d ok' %% i)\n"
            "    except OSError as e:\n"
            "        print('gpu%%d %%s' %% (i, e.strerror))\n"
            "os.close(os.open('/dev/null', os.O_RDWR)); print('null ok')\n"
            "print('visible', os.environ['CUDA_VISIBLE_DEVICES'])\n" % (devices,))
    j = controller.submit({"gpus": 1, "cpus": "1", "memory": "256Mi",
                           "command": [PY, "-c", prog]})
    controller.wait_job(j["id"], "succeeded", timeout=30)
    log = u.job_log(controller, j["id"])
    mine = int(re.search(r"visible (\d)", log).group(1))
    other = 1 - mine
    assert "gpu%d ok" % mine in log, log
    assert "gpu%d Operation not permitted" % other in log, log
    assert "null ok" in log


def test_restart_keeps_a_live_tasks_cgroup_and_cleans_leftovers(controller, v1_agent,
                                                                 tmp_path):
    """Agent kill -9 while a task runs; meanwhile a leftover (an empty task
    cgroup of no task) and a cgroup of no task that holds a live process
    appear. The restarted agent re-adopts the task, which keeps its cgroup;
    it removes the empty leftover and leaves the one with a live process."""
    agent, root = v1_agent()
    tmp_path.chmod(0o755)
    go = tmp_path / "go"
    j = controller.submit({"cpus": "1", "memory": "64Mi", "command": waiting(go)})
    (pid,) = u.wait_running_pids(controller, j["id"])
    name = job_dir(controller, j["id"])
    stray = None
    try:
        agent.kill9()
        leftover = cg_dirs(root, "999999.0")
        for d in leftover.values():
            os.makedirs(d)
        busy = cg_dirs(root, "999998.0")
        for d in busy.values():
            os.makedirs(d)
        stray = subprocess.Popen(["sleep", "300"])
        with open(os.path.join(busy["memory"], "cgroup.procs"), "w") as f:
            f.write(str(stray.pid))
        agent.start()
        harness.wait_for(lambda: "pid=%d re-adopted" % pid in agent.log(), what="re-adoption")
        harness.wait_for(lambda: not any(os.path.exists(d) for d in leftover.values()),
                         what="the leftover cgroup to be removed")
        assert "removed leftover cgroup 999999.0" in agent.log()
        assert os.path.isdir(busy["memory"])
        assert "cgroup 999998.0 of no task this agent knows still holds a live process" \
            in agent.log()
        for ctl, d in cg_dirs(root, name).items():
            assert pid in procs(d), ctl
    finally:
        go.write_text("")
        if stray:
            stray.kill()
            stray.wait()
    controller.wait_job(j["id"], "succeeded")
    harness.wait_for(lambda: not any(os.path.exists(d) for d in cg_dirs(root, name).values()),
                     what="the re-adopted task's cgroups to be removed")


def test_task_that_ends_while_agent_is_down_has_its_cgroup_read_and_removed(
        controller, v1_agent, tmp_path):
    agent, root = v1_agent()
    tmp_path.chmod(0o755)
    go = tmp_path / "go"
    j = controller.submit({"cpus": "1", "memory": "64Mi", "command": waiting(go, "exit 7")})
    (pid,) = u.wait_running_pids(controller, j["id"])
    name = job_dir(controller, j["id"])
    try:
        agent.kill9()
        go.write_text("")
        harness.wait_for(lambda: not u.pid_alive(pid), what="the task to end")
        assert os.path.isdir(cg_dirs(root, name)["memory"])
        agent.start()
    finally:
        go.write_text("")
    done = controller.wait_job(j["id"], "failed")
    assert done["placement"][0]["exit_code"] == 7
    # The exit report may reach the controller before the re-adopting
    # agent has read and removed the cgroup: wait for both.
    pat = (r"job=%d task=0 cgroup: oom_killed=0 oom_kills=0 mem_peak=\d+ mem_limit=%d"
           % (j["id"], 64 * MI * 11 // 10 // 4096 * 4096))
    harness.wait_for(lambda: re.search(pat, agent.log()), what="the cgroup's figures in the log")
    harness.wait_for(lambda: not any(os.path.exists(d) for d in cg_dirs(root, name).values()),
                     what="the task's cgroups to be removed")


def test_stray_of_an_ended_task_is_killed_with_its_cgroup(controller, v1_agent, tmp_path):
    """A task leaves a process in a session of its own (the monitor's
    sweep of the task's process group misses it) and exits: removing the
    task's cgroup finds it busy, kills the stray and removes the cgroup."""
    agent, root = v1_agent()
    tmp_path.chmod(0o755)
    pidfile = tmp_path / "stray.pid"
    j = controller.submit({"cpus": "1", "memory": "64Mi",
                           "command": u.sh("setsid sleep 300 & echo $! > %s" % pidfile)})
    controller.wait_job(j["id"], "succeeded")
    stray = int(pidfile.read_text())
    harness.wait_for(lambda: not u.pid_alive(stray), what="the stray process to be killed")
    harness.wait_for(lambda: not any(os.path.exists(d)
                                     for d in cg_dirs(root, job_dir(controller, j["id"])).values()),
                     what="the task's cgroups to be removed")
    assert "cannot remove its cgroup" not in agent.log()


def test_limit_that_cannot_be_written_fails_the_launch(controller, v1_agent):
    """v1 refuses a child CPU quota above its parent's: with the agent's
    root held to half a CPU, a task asking for one CPU cannot be limited,
    so it does not start; the reason names the file, and its cgroup is
    gone."""
    agent, root = v1_agent()
    with open(os.path.join(cg_dirs(root)["cpu"], "cpu.cfs_quota_us"), "w") as f:
        f.write("50000")
    j = controller.submit({"cpus": "1", "memory": "64Mi", "command": ["true"]})
    done = controller.wait_job(j["id"], "failed")
    name = job_dir(controller, j["id"])
    want = "cgroup v1: cannot write %s/cpu.cfs_quota_us: Invalid argument" \
        % cg_path(root, "cpu", name)
    assert want in done["reason"] or want in str(done["placement"]), done
    assert "job=%d task=0 pid=" % j["id"] not in agent.log()
    assert not any(os.path.exists(d) for d in cg_dirs(root, name).values())


def test_oom_kill_while_agent_is_down_is_reported_after_restart(controller, v1_agent,
                                                                 tmp_path):
    """The kernel kills a task for memory while no agent runs: its cgroup
    is still there when the agent restarts, which reads the OOM kill from
    it and reports the task's end as killed for memory, with its limit."""
    agent, root = v1_agent()
    tmp_path.chmod(0o755)
    go = tmp_path / "go"
    alloc = "%s -c 'import time; x = b\"\\x01\" * (100 << 20); time.sleep(30)'" % PY
    j = controller.submit({"cpus": "1", "memory": "64Mi", "command": waiting(go, alloc)})
    (pid,) = u.wait_running_pids(controller, j["id"])
    try:
        agent.kill9()
        go.write_text("")
        harness.wait_for(lambda: not u.pid_alive(pid), timeout=60, what="the task to end")
        agent.start()
    finally:
        go.write_text("")
    done = controller.wait_job(j["id"], "failed", timeout=60)
    p = done["placement"][0]
    assert p["exit_code"] == 128 + signal.SIGKILL, done
    assert p["oom_killed"] is True, p
    assert p["mem_limit_bytes"] == 64 * MI * 11 // 10 // 4096 * 4096, p
    assert not any(os.path.exists(d) for d in cg_dirs(root, job_dir(controller, j["id"])).values())


def test_limits_above_the_requests_bound_the_task_and_the_requests_place_it(controller, v1_agent,
                                                                           tmp_path):
    """memory_limit and cpu_limit (Kubernetes' limits above its requests):
    the job is placed by its requests (a limit of 2Gi on a node of 1Gi),
    and its cgroup's hard memory limit is the limit itself, the soft one
    90% of the request, the CPU quota the CPU limit."""
    _, root = v1_agent(memory="1Gi")
    go = tmp_path / "go"
    go.parent.chmod(0o755)
    j = controller.submit({"cpus": "500m", "cpu_limit": "2", "memory": "100Mi",
                           "memory_limit": "2Gi", "command": waiting(go)})
    u.wait_running_pids(controller, j["id"])
    name = job_dir(controller, j["id"])
    try:
        mem = cg_path(root, "memory", name)
        assert int(read(os.path.join(mem, "memory.limit_in_bytes"))) == 2048 * MI
        assert int(read(os.path.join(mem, "memory.soft_limit_in_bytes"))) == 90 * MI
        if os.path.exists(os.path.join(mem, "memory.memsw.limit_in_bytes")):
            assert int(read(os.path.join(mem, "memory.memsw.limit_in_bytes"))) == 2048 * MI
        cpu = cg_path(root, "cpu", name)
        assert int(read(os.path.join(cpu, "cpu.cfs_quota_us"))) == 200000
        assert controller.job(j["id"])["memory_limit"] == "2Gi"
    finally:
        go.write_text("")
    controller.wait_job(j["id"], "succeeded")
    # A limit below its request is refused, naming the field.
    st, body = controller.request("POST", "/v1/jobs", {"command": ["true"], "memory": "1Gi",
                                                       "memory_limit": "512Mi"},
                                  token=controller.token("alice"))
    assert st == 400 and body["error"]["field"] == "memory_limit", (st, body)
    assert "must be at least memory (1Gi)" in body["error"]["message"], body
