"""
test_heartbeat_answers.py - an agent asks the controller to answer only the
heartbeats it needs for fencing (docs/protocol.md, "heartbeat" and
"Fencing"; src/common/proto_hb.h), and fencing still works:

    - against a scripted controller: with node_timeout 5 s and heartbeats
      every second, the agent puts a seq in every second heartbeat,
      never letting its answered contact grow older than half of
      node_timeout; when the answers stop, every heartbeat asks, and the
      agent drops the connection (fences) once node_timeout has passed;
    - against a real sluiced: while it runs, the agent does not fence (for
      three node_timeouts); stopped with SIGSTOP, the agent stops its
      requeue-able task; resumed, the job is requeued once.
"""

import os
import signal
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import harness  # noqa: E402
import e2e_util as u  # noqa: E402
from harness import Agent, wait_for  # noqa: E402
from test_agent_proto import FakeController  # noqa: E402


def _need(build_dir, prog):
    if not os.access(os.path.join(build_dir, prog), os.X_OK):
        pytest.skip("%s is not built" % prog)


def test_agent_asks_for_answers_only_to_keep_contact(tmp_path, build_dir):
    _need(build_dir, "sluice-agent")
    ctl = FakeController(tmp_path)
    agent = harness.Agent(ctl, "n1", gpus=1, extra_args=["--heartbeat", "1"])
    agent.start(wait=False)
    try:
        ctl.accept()
        ctl.wait_type("hello")
        ctl.send({"type": "welcome", "node": "n1", "heartbeat": 1, "node_timeout_ms": 5000,
                  "kill_grace_ms": 1000})
        # Answer what asks, as sluiced does, for eight heartbeats.
        answered, seen = set(), 0
        deadline = time.monotonic() + 30
        while seen < 8 and time.monotonic() < deadline:
            with ctl.cv:
                hbs = [m for m in ctl.received if m.get("type") == "heartbeat"]
            for m in hbs[seen:]:
                if m.get("seq") and m["seq"] not in answered:
                    answered.add(m["seq"])
                    ctl.send({"type": "heartbeat", "seq": m["seq"]})
            seen = len(hbs)
            time.sleep(0.05)
        assert seen >= 8, "only %d heartbeats in 30 s" % seen
        hbs = hbs[:8]
        asks = [m for m in hbs if "seq" in m]
        # Contact must stay within node_timeout / 2 = 2.5 s: the heartbeat
        # one second after an answered one does not ask (2 s), the next
        # does (3 s); never two in a row without (a late timer asks sooner).
        assert 0 < len(asks) < len(hbs), hbs
        for a, b in zip(hbs, hbs[1:]):
            assert "seq" in a or "seq" in b, hbs
        # The seqs still number every heartbeat, those without one too.
        pos = [(i, m["seq"]) for i, m in enumerate(hbs) if "seq" in m]
        for (i, a), (j, b) in zip(pos, pos[1:]):
            assert b - a == j - i, hbs
        # No more answers: every heartbeat asks, and node_timeout (5 s)
        # after the last answered one the agent fences and drops the
        # connection (the next hello comes on a new one).
        with ctl.cv:
            ctl.received.clear()
        ctl.accept(timeout=20)
        with ctl.cv:
            later = [m for m in ctl.received if m.get("type") == "heartbeat"]
        assert later and all("seq" in m for m in later[1:]), later
        wait_for(lambda: "no answer from the controller" in agent.log(), what="the agent fenced")
        assert ctl.wait_type("hello")["node"]["name"] == "n1"
    finally:
        agent.stop()
        ctl.close()


def test_no_fence_while_controller_runs_and_fence_when_stopped(controller_factory, build_dir):
    """node_timeout 5 s, heartbeat 1 s: the agent asks every second
    heartbeat. Fifteen seconds of a running controller fence nothing; a
    SIGSTOP of sluiced makes the agent stop its requeue-able task, and once
    sluiced resumes the job is requeued and runs again."""
    _need(build_dir, "sluice-agent")
    ctl = controller_factory({"node_timeout": 5, "heartbeat": 1, "kill_grace": 1})
    n1 = Agent(ctl, "n1", gpus=1, token=ctl.node_token("n1"), extra_args=["--heartbeat", "1"])
    stopped = False
    pid = None
    try:
        n1.start()
        job = ctl.submit({"gpus": 1, "on_node_failure": "requeue", "command": ["sleep", "300"]})
        (pid,) = u.wait_running_pids(ctl, job["id"])
        time.sleep(15)  # three node_timeouts of a controller that answers
        assert "no answer from the controller" not in n1.log(), n1.log()
        assert u.pid_alive(pid)
        j = ctl.job(job["id"])
        assert j["state"] == "running" and j["requeues"] == 0, j
        ctl.proc.send_signal(signal.SIGSTOP)
        stopped = True
        wait_for(lambda: not u.pid_alive(pid), timeout=30, what="the agent fenced its task")
        # The task's monitor holds the same deadline in the node's lease and
        # may stop the task a moment before the agent's own fence: wait for
        # the agent to have seen the silence (and dropped the connection)
        # before the controller runs again.
        wait_for(lambda: "no answer from the controller" in n1.log(), timeout=10,
                 what="the agent's fence")
        ctl.proc.send_signal(signal.SIGCONT)
        stopped = False
        def again():
            j = ctl.job(job["id"])
            # At least once: a controller resumed after its stall may place
            # the job on n1 again before it reads n1's closed connection,
            # and then requeue that unacknowledged launch too.
            return j if j["state"] == "running" and j["requeues"] >= 1 else None
        try:
            wait_for(again, timeout=40, what="the job requeued and running again")
        except AssertionError:
            raise AssertionError("job %r\nagent log:\n%s\nsluiced log:\n%s" % (
                ctl.job(job["id"]), n1.log()[-3000:], ctl.log()[-3000:]))
    finally:
        if stopped:
            ctl.proc.send_signal(signal.SIGCONT)
        n1.stop()
        if pid and u.pid_alive(pid):
            u.kill_pid_group(pid)


def test_controller_answers_exactly_the_heartbeats_that_ask(controller):
    """sluiced answers a heartbeat with a seq and nothing else, also when
    the line comes in pieces, several lines come in one piece, or a line is
    not in the agent's own form (a space, a usage: the full decoder)."""
    f = harness.FakeAgent(controller, "n1", gpus=1).start()
    try:
        with f.lock:
            f.sock.sendall(b'{"type":"heartbeat","time":1.5}\n{"type":"heartbeat","seq":5,"ti')
            time.sleep(0.2)
            f.sock.sendall(b'me":1.5}\n{"type":"heartbeat","seq":6,"time":2}\n{"type":"heart')
            time.sleep(0.2)
            f.sock.sendall(b'beat","seq":7, "time":2,"usage":[]}\n{"type":"heartbeat","time":3}\n')
        f.send({"type": "heartbeat", "seq": 8, "time": time.time()})
        f.wait_message("heartbeat", count=4)
        time.sleep(0.3)  # nothing more comes
        assert [m["seq"] for m in f.messages("heartbeat")] == [5, 6, 7, 8], f.messages()
        assert controller.node("n1")["state"] == "up"
    finally:
        f.close()
