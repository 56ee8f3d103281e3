"""
test_sec_node.py - node credentials and fencing against real daemons
(issue 8, findings 1 and 7; docs/protocol.md "Hello" and "Fencing").

    - a job that prints its environment sees no token, whether its agent
      was started by `sluice up` or with --token-file (and the agent's own
      /proc environ and cmdline show none either);
    - a token file that group or others may read is refused;
    - `sluiced node-token NAME` prints the token a real agent registers with;
    - forged hellos are refused: a wrong token, another node's token, a
      revoked node (logged with the reason);
    - a second agent under a connected node's name is refused (logged once)
      and the first keeps its task; a restarted agent re-registers at once,
      and a silent connection may be taken over;
    - an agent-port socket that never says hello is closed;
    - an agent cut off from the controller, or stopped with SIGSTOP for
      longer than node_timeout, stops its requeue-able task before the
      controller starts the copy elsewhere. The order is read from the
      task's own start and stop stamps, never from the test's clock.
"""

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import harness  # noqa: E402
import e2e_util as u  # noqa: E402
from harness import Agent, FakeAgent, wait_for  # noqa: E402


def _need(build_dir, prog):
    if not os.access(os.path.join(build_dir, prog), os.X_OK):
        pytest.skip("%s is not built" % prog)


def _node_token_file(ctl, name, path, build_dir):
    """Writes `sluiced node-token name` into path (mode 0600) and returns it."""
    r = subprocess.run([os.path.join(build_dir, "sluiced"), "node-token", name,
                        "--config", ctl.config_path], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    tok = r.stdout.strip()
    fd = os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.write(fd, (tok + "\n").encode())
    os.close(fd)
    return tok


def _proc_bytes(pid, what):
    with open("/proc/%d/%s" % (pid, what), "rb") as f:
        return f.read()


def _wait_log(ctl, jid, text):
    return wait_for(lambda: (lambda s: s if text in s else None)(u.job_log(ctl, jid)),
                    what="%r in the log of job %d" % (text, jid))


# ---- credentials ----

def test_token_file_agent_and_its_jobs_hold_no_token(controller, build_dir, tmp_path):
    """The agent reads its node token from a file (made by `sluiced
    node-token`, which a real agent registers with); the cluster token it
    also finds in its environment is removed before any task starts, and
    neither token is in a task's environment, nor in the agent's
    /proc/PID/environ or cmdline."""
    _need(build_dir, "sluice-agent")
    tokfile = tmp_path / "n1.token"
    node_tok = _node_token_file(controller, "n1", tokfile, build_dir)
    assert node_tok == controller.node_token("n1") and len(node_tok) == 64
    a = Agent(controller, "n1", gpus=0, token_file=tokfile,
              env={"SLUICE_CLUSTER_TOKEN": controller.cluster_token})
    a.start()
    try:
        job = controller.submit({"command": ["sh", "-c", "env; echo END"]})
        controller.wait_job(job["id"], "succeeded")
        out = _wait_log(controller, job["id"], "END")
        assert "SLUICE_JOB_ID=%d" % job["id"] in out, out
        for secret in (controller.cluster_token, node_tok):
            assert secret not in out
            assert secret.encode() not in _proc_bytes(a.proc.pid, "environ")
            assert secret.encode() not in _proc_bytes(a.proc.pid, "cmdline")
        assert "SLUICE_CLUSTER_TOKEN" not in out
    finally:
        a.stop()


def test_token_on_the_command_line_is_blanked_in_ps(controller, build_dir):
    """--token still works (documented as visible in ps until start-up);
    the agent overwrites its argv copy, so cmdline no longer shows it."""
    _need(build_dir, "sluice-agent")
    a = Agent(controller, "n1", gpus=0, token=controller.node_token("n1"))
    a.start()
    try:
        assert controller.node_token("n1").encode() not in _proc_bytes(a.proc.pid, "cmdline")
    finally:
        a.stop()


def test_token_file_readable_by_others_is_refused(controller, build_dir, tmp_path):
    _need(build_dir, "sluice-agent")
    tokfile = tmp_path / "loose.token"
    tokfile.write_text(controller.node_token("n1") + "\n")
    os.chmod(str(tokfile), 0o644)
    r = subprocess.run([os.path.join(build_dir, "sluice-agent"), "--controller",
                        controller.agent_addr, "--token-file", str(tokfile), "--name", "n1",
                        "--workdir", str(tmp_path / "w"), "--gpus", "0"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2, r.stderr
    assert "mode 0644" in r.stderr and "chmod 600" in r.stderr, r.stderr
    assert controller.node("n1") is None


def test_sluice_up_gives_its_agent_a_node_token_by_file(build_dir, tmp_path):
    _need(build_dir, "sluice-agent")
    _need(build_dir, "sluice")
    work = tmp_path / "proj"
    work.mkdir()
    env = u.cli_env()
    env.pop("SLUICE_DIR", None)
    env["SLUICE_CLUSTER_TOKEN"] = "clu-from-the-callers-environment"
    port, aport = harness.free_port(), harness.free_port()
    r = u.sluice(["up", "--detach", "--port", str(port), "--agent-port", str(aport),
                  "--cpus", "2", "--memory", "4Gi", "--name", "local"], env, cwd=str(work))
    state = work / ".sluice"
    try:
        assert r.returncode == 0, r.stderr
        import yaml
        cluster_tok = yaml.safe_load((state / "sluiced.yaml").read_text())["cluster_token"]
        node_tok = (state / "agent.token").read_text().strip()
        assert (os.stat(state / "agent.token").st_mode & 0o777) == 0o600
        assert len(node_tok) == 64 and node_tok != cluster_tok
        r = u.sluice(["submit", "--", "sh", "-c", "env; echo END"], env, cwd=str(work))
        assert r.returncode == 0, r.stderr
        jid = int(r.stdout.split()[2])
        wait_for(lambda: u.sluice_json(["show", str(jid)], env, cwd=str(work))["state"]
                 == "succeeded", what="job succeeded")
        out = u.sluice(["logs", str(jid)], env, cwd=str(work)).stdout
        assert "END" in out and "SLUICE_JOB_ID=%d" % jid in out, out
        pids = dict(line.split() for line in (state / "pids").read_text().splitlines())
        agent_pid = int(pids["sluice-agent"])
        for secret in (cluster_tok, node_tok, "clu-from-the-callers-environment"):
            assert secret not in out
            assert secret.encode() not in _proc_bytes(agent_pid, "environ")
            assert secret.encode() not in _proc_bytes(agent_pid, "cmdline")
    finally:
        u.sluice(["down"], env, cwd=str(work))


def test_forged_hellos_are_refused(controller_factory):
    ctl = controller_factory({"revoked_nodes": ["n3"]})
    wrong = [("n1", secrets.token_hex(32), "bad token"),
             ("n1", ctl.node_token("n2"), "bad token"),          # another node's token
             ("n1", ctl.node_token("n1")[:-1], "bad token"),     # a near miss
             ("n3", ctl.node_token("n3"), "node n3 is revoked"),  # its own, but revoked
             ("n3", ctl.cluster_token, "node n3 is revoked")]
    for name, tok, want in wrong:
        f = FakeAgent(ctl, name, token=tok)
        msg = f.connect()
        f.close()
        assert msg is not None and msg["type"] == "error" and msg["message"].startswith(want), \
            (name, msg)
    assert ctl.node("n1") is None and ctl.node("n3") is None
    assert "rejected: node n3 is revoked (revoked_nodes in the configuration)" in ctl.log()
    good = FakeAgent(ctl, "n1", token=ctl.node_token("n1"))
    try:
        assert good.connect()["type"] == "welcome"
        assert ctl.wait_node("n1", "up")
    finally:
        good.close()


def test_second_agent_with_a_connected_name_is_refused(controller, build_dir, tmp_path):
    """A real agent n1 runs a task; three hellos for n1 (with n1's valid
    token) are refused, logged once; n1 keeps its connection and its task,
    and a kill still reaches it."""
    _need(build_dir, "sluice-agent")
    a = Agent(controller, "n1", gpus=0, token=controller.node_token("n1"))
    a.start()
    try:
        job = controller.submit({"command": ["sleep", "300"]})
        (pid,) = u.wait_running_pids(controller, job["id"])
        for _ in range(3):
            f = FakeAgent(controller, "n1", token=controller.node_token("n1"))
            msg = f.connect()
            f.close()
            assert msg["type"] == "error", msg
            assert msg["message"] == "node n1 is already connected from 127.0.0.1", msg
        assert controller.log().count("already connected") == 1, controller.log()
        n = controller.node("n1")
        assert n["state"] == "up" and n.get("connected", True)
        j = controller.job(job["id"])
        assert j["state"] == "running" and j["placement"][0]["pid"] == pid and u.pid_alive(pid)
        st, _ = controller.request("DELETE", "/v1/jobs/%d" % job["id"],
                                   token=controller.admin_token)
        assert st in (200, 202), st
        controller.wait_job(job["id"], "cancelled")
        wait_for(lambda: not u.pid_alive(pid), what="task stopped by its own agent")
    finally:
        a.stop()


def test_silent_connection_may_be_taken_over(controller_factory):
    """An agent restarted while its old connection is silent (stopped, or
    its machine gone) still registers: a hello is refused while the old
    connection talks, and accepted once it has said nothing for two
    heartbeat intervals; the old connection is then closed."""
    ctl = controller_factory({"heartbeat": 1, "node_timeout": 30})
    old = FakeAgent(ctl, "n1", token=ctl.node_token("n1")).start()
    try:
        old.start_heartbeats(0.2)
        first = FakeAgent(ctl, "n1", token=ctl.node_token("n1"))
        msg = first.connect()
        first.close()
        assert msg["type"] == "error" and "already connected" in msg["message"], msg
        old.closed.set()  # its heartbeats stop; the socket stays open, silent
        new = FakeAgent(ctl, "n1", token=ctl.node_token("n1"))

        def welcomed():
            m = new.connect()
            if m["type"] == "welcome":
                return m
            new.close()
            time.sleep(0.3)
            return None

        wait_for(welcomed, timeout=20, what="takeover of the silent connection")
        old.reader.join(timeout=10)
        assert not old.reader.is_alive()  # the controller closed the old connection
        assert "replaces the one from 127.0.0.1 (silent)" in ctl.log()
        assert ctl.node("n1")["state"] == "up"
        new.close()
    finally:
        old.close()


def test_restarted_agent_re_registers_at_once(controller):
    """An agent that restarts closes its connection and says hello on a
    new one at once: twenty times in a row the hello is welcome, never
    taken for a second agent. (When the hello is read before the old
    connection's end, the old one is no longer ESTABLISHED and is replaced;
    on loopback the end is usually read first.)"""
    tok = controller.node_token("n1")
    for i in range(20):
        f = FakeAgent(controller, "n1", token=tok)
        msg = f.connect()
        f.close()
        assert msg is not None and msg["type"] == "welcome", (i, msg)
    assert "already connected" not in controller.log()


def test_silent_agent_port_socket_is_closed(controller_factory):
    """A socket that never says hello, and one that trickles a hello byte
    by byte, are closed after hello_timeout; the port still serves."""
    ctl = controller_factory({"hello_timeout": 0.5})
    host, port = ctl.agent_addr.rsplit(":", 1)
    silent = socket.create_connection((host, int(port)), timeout=20)
    assert silent.recv(1) == b""  # closed by the controller, not by the timeout here
    silent.close()
    slow = socket.create_connection((host, int(port)), timeout=20)
    closed = False
    for ch in b'{"type":"hello","token":"' * 8:  # bounded: 200 bytes, 0.1 s apart
        try:
            slow.sendall(bytes([ch]))
        except OSError:
            closed = True
            break
        time.sleep(0.1)
    if not closed:
        slow.settimeout(20)
        try:
            closed = slow.recv(1) == b""
        except ConnectionResetError:
            closed = True
    slow.close()
    assert closed
    f = FakeAgent(ctl, "n1", token=ctl.node_token("n1"))
    assert f.connect()["type"] == "welcome"
    f.close()


# ---- fencing ----

# The trap ignores TERM first: the agent and the node's monitor may both
# signal the task's group, and a second TERM would kill the trap's `date`
# (an ignored signal stays ignored in the child) and leave a stamp without
# its time.
STAMPED = ("trap 'trap \"\" TERM; echo stop $SLUICE_NODE $(date +%%s.%%N) >> %(f)s; exit 0' TERM; "
           "echo start $SLUICE_NODE $(date +%%s.%%N) >> %(f)s; "
           "while :; do sleep 0.1; done")


def _stamps(path):
    if not os.path.exists(path):
        return []
    out = []
    # A task may be writing its next stamp as the test reads: only lines
    # with their newline are whole.
    for line in open(path).read().split("\n")[:-1]:
        what, node, t = line.split()
        out.append((what, node, float(t)))
    return out


def _fence_cluster(controller_factory, kill_grace=2):
    # node_timeout 2 s (heartbeat 1 s), kill_grace 2 s: the controller
    # requeues about 5 s after the node's last message.
    return controller_factory({"node_timeout": 2, "heartbeat": 1, "kill_grace": kill_grace})


def _check_fenced_before_copy(stamps_path, first, second):
    """Waits for the copy's start on `second`; the original on `first` must
    have written its stop before that."""
    s = wait_for(lambda: (lambda st: st if ("start", second) in [(w, n) for w, n, _ in st]
                          else None)(_stamps(stamps_path)),
                 timeout=40, what="the copy started on %s" % second)
    starts = {n: t for w, n, t in s if w == "start"}
    stops = {n: t for w, n, t in s if w == "stop"}
    assert first in stops, s
    assert stops[first] <= starts[second], s
    return s


class CuttableLink:
    """A TCP forwarder between one agent and the controller's agent port
    that can be cut: bytes stop moving both ways and new connections are
    held unanswered, while every socket stays open, as an agent sees a
    network partition."""

    def __init__(self, target):
        host, port = target.rsplit(":", 1)
        self.target = (host, int(port))
        self.cut = threading.Event()
        self.done = threading.Event()
        self.socks = []
        self.lsock = socket.socket()
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(16)
        self.addr = "127.0.0.1:%d" % self.lsock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.done.is_set():
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            self.socks.append(c)
            if self.cut.is_set():
                continue  # held: the hello goes nowhere
            up = socket.create_connection(self.target)
            self.socks.append(up)
            for a, b in ((c, up), (up, c)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, a, b):
        while True:
            try:
                data = a.recv(65536)
            except OSError:
                break
            if not data:
                break
            while self.cut.is_set() and not self.done.is_set():
                time.sleep(0.05)  # the link is down: the bytes wait
            if self.done.is_set():
                break
            try:
                b.sendall(data)
            except OSError:
                break
        try:
            b.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def close(self):
        self.done.set()
        for s in [self.lsock] + self.socks:
            try:
                s.close()
            except OSError:
                pass


def test_agent_cut_off_stops_its_task_before_the_copy_starts(controller_factory, build_dir,
                                                             tmp_path):
    """n1 reaches the controller through a link that is then cut: n1 hears
    nothing for node_timeout and stops its requeue-able task (SIGTERM); the
    controller declares n1 down and starts the copy on n2 only after that.
    Without the agent's fencing the original would run on, unreachable."""
    _need(build_dir, "sluice-agent")
    ctl = _fence_cluster(controller_factory)
    link = CuttableLink(ctl.agent_addr)
    stamps = str(tmp_path / "stamps")
    n1 = Agent(ctl, "n1", gpus=1, token=ctl.node_token("n1"), extra_args=["--heartbeat", "1"])
    n1.args[n1.args.index("--controller") + 1] = link.addr
    n2 = Agent(ctl, "n2", gpus=1, token=ctl.node_token("n2"), extra_args=["--heartbeat", "1"])
    try:
        n1.start()
        job = ctl.submit({"gpus": 1, "on_node_failure": "requeue",
                          "command": ["sh", "-c", STAMPED % {"f": stamps}]})
        (pid,) = u.wait_running_pids(ctl, job["id"])
        wait_for(lambda: _stamps(stamps), what="the task's start stamp")
        n2.start()
        link.cut.set()
        s = _check_fenced_before_copy(stamps, "n1", "n2")
        # The agent and the task's monitor (the lease) both fence at the same
        # deadline, so the task may log its SIGTERM twice.
        mine = [w for w, n, _ in s if n == "n1"]
        assert mine[0] == "start" and mine[1:] and set(mine[1:]) == {"stop"}, s
        assert not u.pid_alive(pid)
        # The agent fenced it, or the task's monitor did first (its lease ran
        # out at the same deadline); either way the agent saw the silence.
        assert "no answer from the controller" in n1.log(), n1.log()
        j = ctl.wait_job(job["id"], "running")
        assert j["requeues"] == 1 and j["placement"][0]["node"] == "n2", j
    finally:
        n1.stop()
        n2.stop()
        link.close()


def test_agent_stopped_longer_than_node_timeout_fences_on_resume(controller_factory,
                                                                 build_dir, tmp_path):
    """sluice-agent n1 is stopped (SIGSTOP) until the controller has
    declared n1 down, then resumed: before anything else it sees that its
    last contact is older than node_timeout and stops its requeue-able
    task; the copy on n2 starts after the original's stop."""
    _need(build_dir, "sluice-agent")
    # kill_grace 4 s: the requeue comes at least 6 s after n1's last
    # message, so the agent is resumed well before it (and well after the
    # copy would have started, had the controller not waited for the fence).
    ctl = _fence_cluster(controller_factory, kill_grace=4)
    stamps = str(tmp_path / "stamps")
    n1 = Agent(ctl, "n1", gpus=1, token=ctl.node_token("n1"), extra_args=["--heartbeat", "1"])
    n2 = Agent(ctl, "n2", gpus=1, token=ctl.node_token("n2"), extra_args=["--heartbeat", "1"])
    stopped = False
    try:
        n1.start()
        job = ctl.submit({"gpus": 1, "on_node_failure": "requeue",
                          "command": ["sh", "-c", STAMPED % {"f": stamps}]})
        (pid,) = u.wait_running_pids(ctl, job["id"])
        wait_for(lambda: _stamps(stamps), what="the task's start stamp")
        n2.start()
        n1.proc.send_signal(signal.SIGSTOP)
        stopped = True
        ctl.wait_node("n1", "down", timeout=30)
        time.sleep(1.0)  # stays stopped a while after the controller gave up on it
        n1.proc.send_signal(signal.SIGCONT)
        stopped = False
        s = _check_fenced_before_copy(stamps, "n1", "n2")
        mine = [w for w, n, _ in s if n == "n1"]
        assert mine[0] == "start" and mine[1:] and set(mine[1:]) == {"stop"}, s
        # It fenced on waking, before it registered again (not on the
        # controller's kill after a new hello).
        log = wait_for(lambda: (lambda t: t if t.count("registered with controller") >= 2
                                else None)(n1.log()), what="n1 registered again")
        again = log.index("registered with controller", log.index("registered with controller") + 1)
        assert 0 <= log.find("fenced") < again, log
        wait_for(lambda: not u.pid_alive(pid), what="the original gone")
        j = ctl.wait_job(job["id"], "running")
        assert j["requeues"] == 1 and j["placement"][0]["node"] == "n2", j
    finally:
        if stopped:
            n1.proc.send_signal(signal.SIGCONT)
        n1.stop()
        n2.stop()


def test_fail_on_node_failure_task_is_not_fenced(controller_factory, build_dir, tmp_path):
    """A task whose job says on_node_failure: fail is not the agent's to
    stop: its job fails, it is not copied, and the agent leaves it alone
    while cut off (the controller kills it once the agent is back)."""
    _need(build_dir, "sluice-agent")
    ctl = _fence_cluster(controller_factory)
    link = CuttableLink(ctl.agent_addr)
    stamps = str(tmp_path / "stamps")
    n1 = Agent(ctl, "n1", gpus=1, token=ctl.node_token("n1"), extra_args=["--heartbeat", "1"])
    n1.args[n1.args.index("--controller") + 1] = link.addr
    pid = None
    try:
        n1.start()
        job = ctl.submit({"gpus": 1, "on_node_failure": "fail",
                          "command": ["sh", "-c", STAMPED % {"f": stamps}]})
        (pid,) = u.wait_running_pids(ctl, job["id"])
        link.cut.set()
        ctl.wait_job(job["id"], "failed", timeout=30)
        wait_for(lambda: "no answer from the controller" in n1.log(), what="n1 lost contact")
        assert u.pid_alive(pid) and [w for w, _, _ in _stamps(stamps)] == ["start"]
    finally:
        n1.stop()
        link.close()
        if pid:
            u.kill_pid_group(pid)
