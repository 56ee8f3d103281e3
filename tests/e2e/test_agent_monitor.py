"""
test_agent_monitor.py - each task's monitor (sluice-monitor) against a real
sluiced and sluice-agent on 127.0.0.1 (issue 9: exit status that survives an
agent restart).

The agent is killed with SIGKILL while a task runs; the task ends while no
agent runs (exit 7, exit 0, a signal) or after the restarted agent has
re-adopted it; the restarted agent reports the exit status its monitor
recorded in WORKDIR/status/JOB.TASK. A task whose monitor is killed dies
with it and is reported with its status unknown. After every test no
monitor and no task of the test's agents is left running. No assertion
depends on elapsed time: every wait polls for a state with a generous
deadline.
"""

import os
import re
import signal
import stat
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import harness  # noqa: E402
import e2e_util as u  # noqa: E402


def _procs_of(workdir):
    """Pids (not zombies) of processes that belong to an agent's work
    directory: a monitor names its status file there, a task runs in its
    job directory there. The agent itself (whose command line names it too)
    is stopped before this is asked."""
    workdir = os.path.realpath(workdir)
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open("/proc/%s/stat" % name) as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    continue
            with open("/proc/%s/cmdline" % name, "rb") as f:
                cmd = f.read().decode(errors="replace")
            cwd = os.readlink("/proc/%s/cwd" % name)
        except (OSError, IndexError):
            continue
        if workdir in cmd or cwd.startswith(workdir + "/"):
            out.append(int(name))
    return out


@pytest.fixture
def agent_of(controller, cluster):
    """agent_of() -> one agent with one GPU; at teardown, after every agent
    has stopped, no process of its work directory may be left."""
    made = []

    def make():
        (a,) = cluster(1, gpus=1)
        made.append(a)
        return a

    yield make
    for a in made:
        a.stop()
    for a in made:
        left = []
        for _ in range(2):
            left = _procs_of(a.workdir)
            if not left:
                break
            harness.wait_for(lambda: not _procs_of(a.workdir), timeout=10.0,
                             what="the monitors and tasks of %s to end" % a.name)
        assert not left, "processes left behind: %s" % left


def _waiting_task(go, then):
    """A task that waits for file go, then runs the shell words then."""
    return u.sh("while [ ! -e %s ]; do sleep 0.05; done; %s" % (go, then))


def _monitor_of(agent, jid, pid):
    m = re.search(r"job=%d task=0 pid=%d monitor=(\d+) started" % (jid, pid), agent.log())
    assert m, agent.log()
    return int(m.group(1))


def _status_file(agent, jid):
    return os.path.join(agent.workdir, "status", u.task_key(agent.controller, jid))


def _end_while_agent_down(controller, agent, tmp_path, then):
    """Runs a task, kills the agent with -9, lets the task end (shell words
    then) while no agent runs, waits for its monitor to record the status
    and exit, restarts the agent; returns (job id, task pid)."""
    go = tmp_path / "go"
    j = controller.submit({"gpus": 1, "command": _waiting_task(go, then)})
    (pid,) = u.wait_running_pids(controller, j["id"])
    monitor = _monitor_of(agent, j["id"], pid)
    try:
        agent.kill9()
        assert u.pid_alive(pid) and u.pid_alive(monitor)
        go.write_text("")
        harness.wait_for(lambda: not u.pid_alive(monitor), what="the monitor to exit")
        assert not u.pid_alive(pid)
        assert os.path.exists(_status_file(agent, j["id"]))
        agent.start()
    finally:
        go.write_text("")
        u.kill_pid_group(pid)
    return j["id"], pid


def test_exit_7_while_agent_down_is_reported(controller, agent_of, tmp_path):
    agent = agent_of()
    jid, pid = _end_while_agent_down(controller, agent, tmp_path, "exit 7")
    done = controller.wait_job(jid, "failed")
    assert done["placement"][0]["exit_code"] == 7, done
    assert done["placement"][0]["signal"] in (0, None), done
    assert "exit status unknown" not in str(done)
    assert "job=%d task=0 pid=%d ended while the agent was down exit_code=7 signal=0" % (jid, pid) \
        in agent.log()
    # The controller acknowledged the end: the status file goes with the task.
    harness.wait_for(lambda: not os.path.exists(_status_file(agent, jid)),
                     what="the status file to be removed after the ack")


def test_exit_0_while_agent_down_succeeds(controller, agent_of, tmp_path):
    agent = agent_of()
    jid, _ = _end_while_agent_down(controller, agent, tmp_path, "exit 0")
    done = controller.wait_job(jid, "succeeded")
    assert done["placement"][0]["exit_code"] == 0, done


def test_signal_while_agent_down_is_reported(controller, agent_of, tmp_path):
    agent = agent_of()
    # The task stops itself with SIGUSR1 (the default action ends it).
    jid, _ = _end_while_agent_down(controller, agent, tmp_path, "kill -USR1 $$; sleep 60")
    done = controller.wait_job(jid, "failed")
    assert done["placement"][0]["signal"] == signal.SIGUSR1, done
    assert done["placement"][0]["exit_code"] == 128 + signal.SIGUSR1, done


def test_readopted_task_exit_code_and_kill(controller, agent_of, tmp_path):
    """Re-adopted tasks: one ends with 7 after the restart and is reported
    with it; another is cancelled through the restarted agent (SIGTERM to
    its process group) and is reported with SIGTERM."""
    agent = agent_of()
    go = tmp_path / "go"
    seven = controller.submit({"gpus": 1, "command": _waiting_task(go, "exit 7")})
    (pid,) = u.wait_running_pids(controller, seven["id"])
    try:
        agent.kill9()
        agent.start()
        harness.wait_for(lambda: "pid=%d re-adopted" % pid in agent.log(), what="re-adoption")
        (pid2,) = u.wait_running_pids(controller, seven["id"])
        assert pid2 == pid
        go.write_text("")
        done = controller.wait_job(seven["id"], "failed")
        assert done["placement"][0]["exit_code"] == 7, done
    finally:
        go.write_text("")
        u.kill_pid_group(pid)

    never = tmp_path / "never"
    sleeper = controller.submit({"gpus": 1, "command": _waiting_task(never, "exit 0")})
    (spid,) = u.wait_running_pids(controller, sleeper["id"])
    try:
        agent.kill9()
        agent.start()
        harness.wait_for(lambda: "pid=%d re-adopted" % spid in agent.log(), what="re-adoption")
        st, body = controller.request("DELETE", "/v1/jobs/%d" % sleeper["id"], token=controller.token("alice"))
        assert st == 200 and body["state"] == "cancelled", (st, body)
        harness.wait_for(lambda: "job=%d task=0 pid=%d exited exit_code=143 signal=15"
                         % (sleeper["id"], spid) in agent.log(), what="the cancelled task's end")
        assert not u.pid_alive(spid)
    finally:
        u.kill_pid_group(spid)


def test_status_directory_is_the_agents(controller, agent_of, tmp_path):
    """WORKDIR/status is the agent's own (0700): a tenant's task cannot
    forge or remove a status there."""
    agent = agent_of()
    st = os.stat(os.path.join(agent.workdir, "status"))
    assert stat.S_IMODE(st.st_mode) == 0o700 and st.st_uid == os.geteuid()
    j = controller.submit({"gpus": 1, "command": u.sh("exit 3")})
    done = controller.wait_job(j["id"], "failed")
    assert done["placement"][0]["exit_code"] == 3


def test_killed_monitor_takes_its_task_along(controller, agent_of, tmp_path):
    """A monitor killed with SIGKILL records nothing: its task is killed
    with it (its parent-death signal) and the end is reported unknown."""
    agent = agent_of()
    never = tmp_path / "never"
    j = controller.submit({"gpus": 1, "command": _waiting_task(never, "exit 0")})
    (pid,) = u.wait_running_pids(controller, j["id"])
    monitor = _monitor_of(agent, j["id"], pid)
    try:
        os.kill(monitor, signal.SIGKILL)
        done = controller.wait_job(j["id"], "failed")
        assert "exit status unknown: the task's monitor (pid %d) was killed by signal 9" % monitor \
            in str(done), done
        harness.wait_for(lambda: not u.pid_alive(pid), what="the task to die with its monitor")
    finally:
        u.kill_pid_group(pid)


def test_monitor_ignores_a_stray_sigterm(controller, agent_of, tmp_path):
    """A SIGTERM aimed at the monitor (a broad kill meant for the agent)
    does not lose the task's status."""
    agent = agent_of()
    go = tmp_path / "go"
    j = controller.submit({"gpus": 1, "command": _waiting_task(go, "exit 5")})
    (pid,) = u.wait_running_pids(controller, j["id"])
    monitor = _monitor_of(agent, j["id"], pid)
    try:
        os.kill(monitor, signal.SIGTERM)
        assert u.pid_alive(monitor) and u.pid_alive(pid)
        go.write_text("")
        done = controller.wait_job(j["id"], "failed")
        assert done["placement"][0]["exit_code"] == 5, done
    finally:
        go.write_text("")
        u.kill_pid_group(pid)
