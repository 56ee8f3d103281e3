"""
test_agent_proto.py - the real sluice-agent against a controller written
here in Python, so that every message can be checked as docs/protocol.md
writes it, including what a real sluiced never sends: launches and logs
requests with bad fields, unknown message types.

The fake controller listens on 127.0.0.1 (ephemeral port), accepts the
agent's one connection and reads its NDJSON lines on a thread. No
assertion depends on elapsed time: every wait polls with a deadline.
"""

import json
import os
import socket
import threading
import time

import pytest

import harness


class FakeController:
    """Just enough of sluiced's agent port: accept, read lines, send lines."""

    def __init__(self, tmpdir):
        self.dir = str(tmpdir)
        self.cluster_token = "ctok-proto"
        self.lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.lst.bind(("127.0.0.1", 0))
        self.lst.listen(4)
        self.agent_addr = "127.0.0.1:%d" % self.lst.getsockname()[1]
        self.received = []
        self.cv = threading.Condition()
        self.sock = None

    def accept(self, timeout=15.0):
        self.lst.settimeout(timeout)
        self.sock, _ = self.lst.accept()
        self.sock.settimeout(None)
        threading.Thread(target=self._read, args=(self.sock,), daemon=True).start()

    def _read(self, sock):
        with sock.makefile("rb") as f:
            for line in f:
                msg = json.loads(line)
                with self.cv:
                    self.received.append(msg)
                    self.cv.notify_all()

    def send(self, obj):
        data = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
        self.sock.sendall(data + b"\n")

    def wait(self, pred, what, timeout=15.0):
        deadline = time.monotonic() + timeout
        with self.cv:
            while True:
                got = [m for m in self.received if pred(m)]
                if got:
                    return got[0]
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("timed out waiting for %s; got %r" % (what, self.received[-10:]))
                self.cv.wait(left)

    def wait_type(self, mtype, job=None, task=None, req=None):
        return self.wait(lambda m: m.get("type") == mtype and (job is None or m.get("job") == job)
                         and (task is None or m.get("task") == task)
                         and (req is None or m.get("req") == req),
                         "%s job=%s task=%s req=%s" % (mtype, job, task, req))

    def close(self):
        for s in (self.sock, self.lst):
            if s is not None:
                try:
                    s.close()
                except OSError:
                    pass


@pytest.fixture
def fake_ctl(tmp_path, build_dir):
    if not os.access(os.path.join(build_dir, "sluice-agent"), os.X_OK):
        pytest.skip("sluice-agent is not built")
    ctl = FakeController(tmp_path)
    agent = harness.Agent(ctl, "n1", gpus=2, extra_args=["--heartbeat", "1", "--grace", "1"])
    agent.start(wait=False)
    try:
        ctl.accept()
        yield ctl, agent
    finally:
        agent.stop()
        ctl.close()


def _launch(job, task, **kw):
    m = {"type": "launch", "job": job, "task": task, "name": "p", "tenant": "alice",
         "argv": ["sh", "-c", "echo hi; exit 3"], "image": None, "env": {"K": "V"}, "gpus": [1],
         "gpu_milli": 1000, "gpu_memory": 0, "cpu_milli": 1000, "mem_bytes": 1 << 30, "rank": task,
         "world_size": 1, "local_rank": 0, "master_addr": "127.0.0.1", "master_port": 29500 + job,
         "time_limit": 0}
    m.update(kw)
    return m


def test_hello_is_what_protocol_md_says(fake_ctl):
    ctl, agent = fake_ctl
    hello = ctl.wait_type("hello")
    assert set(hello) == {"type", "token", "version", "node", "tasks"}, hello
    assert hello["token"] == ctl.cluster_token
    assert isinstance(hello["version"], str) and hello["version"]
    assert hello["node"] == {"name": "n1", "cpus": "64", "memory": "512Gi", "gpus": 2,
                             "gpu_model": "H100", "gpu_memory": "80Gi"}, hello["node"]
    assert hello["tasks"] == []
    ctl.send({"type": "welcome", "node": "n1", "heartbeat": 1})
    hb = ctl.wait_type("heartbeat")
    # seq (additive, for fencing): numbered from 1, answered by the controller.
    assert set(hb) == {"type", "time", "seq"} and isinstance(hb["time"], float), hb
    assert hb["seq"] >= 1, hb


def test_launch_exit_ack_and_logs(fake_ctl):
    ctl, agent = fake_ctl
    ctl.wait_type("hello")
    ctl.send({"type": "welcome", "node": "n1", "heartbeat": 1})
    ctl.send(_launch(5, 0))
    started = ctl.wait_type("started", job=5, task=0)
    assert set(started) == {"type", "job", "task", "pid", "time"} and started["pid"] > 0, started
    exited = ctl.wait_type("exited", job=5, task=0)
    assert set(exited) == {"type", "job", "task", "exit_code", "signal", "time"}, exited
    assert (exited["exit_code"], exited["signal"]) == (3, 0)
    ctl.send({"type": "logs", "req": 7, "job": 5, "task": 0, "offset": 0, "limit": 65536})
    logs = ctl.wait_type("logs", req=7)
    assert logs["data"] == "hi\n" and logs["offset"] == 0 and logs["eof"] is True, logs
    assert (logs["job"], logs["task"]) == (5, 0)
    ctl.send({"type": "logs", "req": 8, "job": 5, "task": 9})
    assert "no log for job 5 task 9 on node n1" in ctl.wait_type("logs", req=8)["error"]
    # Once acknowledged, the exit is forgotten: a kill now finds no task.
    ctl.send({"type": "ack", "job": 5, "task": 0})
    ctl.send({"type": "kill", "job": 5, "task": 0, "grace_ms": 0})
    failed = ctl.wait_type("failed", job=5, task=0)
    assert failed["reason"] == "no such task on node n1", failed


def test_bad_messages_are_answered_or_ignored(fake_ctl):
    """A launch or logs request with a bad field is still answered (the
    controller waits for one), naming the field; other bad lines and unknown
    types are ignored and the connection stays up."""
    ctl, agent = fake_ctl
    ctl.wait_type("hello")
    ctl.send({"type": "welcome", "node": "n1", "heartbeat": 1})
    ctl.send(b"\xff\xfe not json")
    ctl.send({"type": "bogus", "job": 1})
    ctl.send({"no": "type"})
    ctl.send({"type": "ack", "job": "one", "task": 0})
    ctl.send(_launch(6, 0, argv=["sh", 5]))
    failed = ctl.wait_type("failed", job=6, task=0)
    assert failed["reason"] == "launch: argv[1]: must be a string", failed
    ctl.send(_launch(6, 1, gpus=[0, "1"]))
    assert "launch: gpus[1]: must be a GPU index" in ctl.wait_type("failed", job=6, task=1)["reason"]
    ctl.send({"type": "logs", "req": 9, "job": 6, "task": 0, "offset": "x"})
    assert ctl.wait_type("logs", req=9)["error"].startswith("logs: offset: must be")
    # Still serving: a good launch runs.
    ctl.send(_launch(7, 0, argv=["true"]))
    assert ctl.wait_type("exited", job=7, task=0)["exit_code"] == 0
    assert agent.alive()


def test_reconnect_reports_unacknowledged_exits_in_hello(fake_ctl):
    ctl, agent = fake_ctl
    ctl.wait_type("hello")
    ctl.send({"type": "welcome", "node": "n1", "heartbeat": 1})
    ctl.send(_launch(8, 2, argv=["sh", "-c", "exit 4"]))
    ctl.wait_type("exited", job=8, task=2)
    ctl.send(_launch(8, 3, argv=["sleep", "60"]))
    pid = ctl.wait_type("started", job=8, task=3)["pid"]
    # The controller goes away without acknowledging; the agent reconnects.
    ctl.sock.shutdown(socket.SHUT_RDWR)
    ctl.sock.close()
    with ctl.cv:
        ctl.received.clear()
    ctl.accept()
    hello = ctl.wait_type("hello")
    tasks = sorted(hello["tasks"], key=lambda t: t["task"])
    assert [t["state"] for t in tasks] == ["exited", "running"], tasks
    assert tasks[0]["exit_code"] == 4 and tasks[0]["signal"] == 0 and tasks[0]["end_time"] > 0
    assert tasks[1]["pid"] == pid and tasks[1]["start_time"] > 0
    ctl.send({"type": "welcome", "node": "n1"})
    ctl.send({"type": "kill", "job": 8, "task": 3, "grace_ms": 100})
    ex = ctl.wait_type("exited", job=8, task=3)
    assert (ex["exit_code"], ex["signal"]) == (143, 15), ex
