"""
test_stale_reports.py - a report names the attempt of the task it is
about (docs/protocol.md, "Attempts and the cluster instance"): a late end
of an earlier attempt is never taken for the requeued copy's.

The controller is real; the agent is driven from Python (harness.FakeAgent)
where the test must send what only a delayed agent would: the end of an
attempt the controller has already given up on. The real agent's side
(attempt kept across its restart, kills and acks of another attempt
ignored) is checked against a controller written in Python
(test_agent_proto.FakeController).
"""

import os
import threading

import harness
from test_agent_proto import FakeController, _launch

FAST = {"node_timeout": 2, "kill_grace": 0.5, "heartbeat": 1}


def heartbeats(fake, stop):
    """Heartbeats from fake every 0.2 s until stop is set."""
    def loop():
        while not stop.wait(0.2):
            try:
                fake.heartbeat()
            except (OSError, AttributeError):
                return
    threading.Thread(target=loop, daemon=True).start()


def test_late_end_of_an_earlier_attempt_is_ignored(controller_factory):
    """Attempt 0 runs on f1; f1 goes silent, is declared down and fenced,
    and the job is requeued and started again on f1 as attempt 1. Then the
    end of attempt 0 arrives (the agent that fenced it reporting late): the
    job must go on running, until attempt 1 ends."""
    ctl = controller_factory(FAST)
    f = harness.FakeAgent(ctl, "f1", gpus=1, auto=False).start()
    beat = threading.Event()
    heartbeats(f, beat)
    j = ctl.submit({"command": ["sleep", "100"], "gpus": 1, "on_node_failure": "requeue"})
    jid = j["id"]
    (first,) = f.wait_message("launch", job=jid)
    f.send({"type": "started", "job": jid, "task": 0, "attempt": 0, "pid": 4242})
    ctl.wait_job(jid, "running")

    beat.set()  # silent: declared down after node_timeout, the job requeued
    harness.wait_for(lambda: ctl.job(jid)["requeues"] == 1, what="the requeue")
    f.close()
    f = harness.FakeAgent(ctl, "f1", gpus=1, auto=False).start()
    beat = threading.Event()
    heartbeats(f, beat)
    try:
        (second,) = f.wait_message("launch", job=jid, timeout=30)  # after the fence time
        f.send({"type": "started", "job": jid, "task": 0, "attempt": 1, "pid": 4343})
        harness.wait_for(lambda: ctl.job(jid)["placement"][0].get("pid") == 4343,
                         what="attempt 1 running")

        f.send({"type": "exited", "job": jid, "task": 0, "attempt": 0, "exit_code": 0,
                "signal": 0, "fenced": True})
        (ack,) = f.wait_message("ack", job=jid)  # sent once the report was handled
        job = ctl.job(jid)
        assert job["state"] == "running" and job["requeues"] == 1, job
        assert "exited of attempt 0 ignored: the task runs attempt 1" in ctl.log()
        assert (first.get("attempt"), second.get("attempt"), ack.get("attempt")) == (0, 1, 0)

        f.send({"type": "exited", "job": jid, "task": 0, "attempt": 1, "exit_code": 0,
                "signal": 0})
        done = ctl.wait_job(jid, ["succeeded", "failed"])
        assert done["state"] == "succeeded", done
    finally:
        beat.set()
        f.close()


def test_agent_keeps_the_attempt_across_its_restart(tmp_path, build_dir):
    """The real agent reports the attempt its launch named, keeps it in
    state.json through a kill -9 and restart, and ignores a kill of
    another attempt of the same task."""
    if not os.access(os.path.join(build_dir, "sluice-agent"), os.X_OK):
        import pytest
        pytest.skip("sluice-agent is not built")
    ctl = FakeController(tmp_path)
    agent = harness.Agent(ctl, "n1", gpus=2, extra_args=["--heartbeat", "1", "--grace", "1"])
    agent.start(wait=False)
    try:
        ctl.accept()
        ctl.wait_type("hello")
        ctl.send({"type": "welcome", "node": "n1", "heartbeat": 1, "instance": "c0ffee"})
        ctl.send(_launch(5, 0, argv=["sleep", "100"], attempt=3))
        started = ctl.wait_type("started", job=5, task=0)
        assert started["attempt"] == 3, started
        agent.kill9()  # its connection ends with it; the reader thread sees the end
        agent.start(wait=False)
        ctl.accept()
        hello = ctl.wait(lambda m: m.get("type") == "hello" and m.get("tasks"),
                         "the restarted agent's hello")
        (entry,) = hello["tasks"]
        assert (entry["job"], entry["attempt"], entry["instance"], entry["state"]) == \
            (5, 3, "c0ffee", "running"), entry
        ctl.send({"type": "welcome", "node": "n1", "heartbeat": 1, "instance": "c0ffee"})
        ctl.send({"type": "kill", "job": 5, "task": 0, "attempt": 2, "grace_ms": 0})
        ctl.send({"type": "kill", "job": 5, "task": 0, "attempt": 3, "grace_ms": 0})
        exited = ctl.wait(lambda m: m.get("type") == "exited" and m.get("job") == 5, "the exit")
        assert exited["attempt"] == 3, exited
        assert "kill of attempt 2 ignored: attempt 3 runs here" in agent.log()
    finally:
        agent.stop()
        ctl.close()
