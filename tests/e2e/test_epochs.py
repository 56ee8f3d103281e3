"""
test_epochs.py - controllers' epochs and several controllers
(docs/protocol.md, "Controllers and epochs"; docs/cli.md, "Several
servers"):

    - every message of a real sluiced carries its epoch, which its store
      bumps at every start;
    - a deposed controller launches and kills nothing: C1 stopped with
      SIGSTOP, C2 started on a copy of its store (a higher epoch) runs the
      job on the agent; C2 lost and C1 resumed, the agent refuses C1
      (welcome, launch, kill) and the task never starts twice (its own
      stamps) and is never killed; C2 back re-adopts it;
    - against a scripted controller: a launch or kill of an older epoch on
      an accepted connection is refused and answered with an error naming
      both epochs; the mark survives the agent's restart (WORKDIR/epoch);
      a controller without an epoch is refused once one was seen; another
      cluster instance starts over;
    - `--controller A,B`: A down, B reached; a standby's redirect followed;
      A stopped (SIGSTOP): the agent moves on to B before it would fence;
    - an epoch mark the agent cannot read keeps it from starting;
    - `sluice --server A,B`: A down, B reached; a 307 followed with the
      same method and body; a 307 to another scheme refused.
"""

import http.server
import json
import os
import shutil
import signal
import socket
import sys
import threading

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import harness  # noqa: E402
import e2e_util as u  # noqa: E402
from harness import Agent, FakeAgent, wait_for  # noqa: E402
from test_agent_proto import FakeController, _launch  # noqa: E402


def _need(build_dir, *progs):
    for prog in progs:
        if not os.access(os.path.join(build_dir, prog), os.X_OK):
            pytest.skip("%s is not built" % prog)


def _dead_addr():
    """A loopback port nothing listens on (bound, then closed)."""
    return "127.0.0.1:%d" % harness.free_port()


def _twin(c1, tmp_path, sub, copy=True):
    """A second Controller with c1's tokens and tenants on a copy of c1's
    state database (c1 stopped: its files hold still; copy=False: later,
    by _copy_store), other ports."""
    c2 = harness.Controller(tmp_path / sub, init=False)
    c2.admin_token, c2.cluster_token = c1.admin_token, c1.cluster_token
    c2.tenant_tokens = dict(c1.tenant_tokens)
    for k in ("admin_token", "cluster_token", "tenants", "node_timeout", "heartbeat",
              "kill_grace", "default_user", "allow_root"):
        if k in c1.config:
            c2.config[k] = c1.config[k]
    c2._write_config()
    if copy:
        _copy_store(c1, c2)
    return c2


def _copy_store(c1, c2):
    for ext in ("", "-wal"):
        if os.path.exists(c1.db_path + ext):
            shutil.copyfile(c1.db_path + ext, c2.db_path + ext)


def test_every_message_carries_the_epoch_bumped_at_each_start(controller):
    a = FakeAgent(controller, "f1", gpus=1)
    w = a.connect()
    e1 = w.get("epoch")
    assert isinstance(e1, int) and e1 >= 1, w
    a.start_heartbeats(0.2)
    job = controller.submit({"gpus": 1, "command": ["true"]})
    launch = a.wait_message("launch", job=job["id"])[0]
    assert launch["epoch"] == e1, launch
    a.send({"type": "heartbeat", "seq": 1, "time": 1.0})
    echo = a.wait_message("heartbeat")[0]
    assert echo["epoch"] == e1, echo
    a.close()
    controller.restart()
    b = FakeAgent(controller, "f1", gpus=1)
    w2 = b.connect()
    assert w2.get("epoch") == e1 + 1, w2
    b.close()


def test_a_deposed_controller_launches_and_kills_nothing(controller_factory, tmp_path, build_dir):
    _need(build_dir, "sluice-agent")
    cfg = {"node_timeout": 60, "heartbeat": 1, "kill_grace": 1}
    c1 = controller_factory(cfg, sub="c1")
    # n1 is known to C1 (registered, then gone), so the job waits for it.
    f = FakeAgent(c1, "n1", gpus=1)
    e1 = f.connect()["epoch"]
    f.close()
    wait_for(lambda: not (c1.node("n1") or {}).get("connected", True), what="n1 disconnected")
    stamp = tmp_path / "stamp"
    job = c1.submit({"gpus": 1, "on_node_failure": "requeue",
                     "command": u.sh("echo $$ >> %s; exec sleep 300" % stamp)})
    c2 = None
    agent = None
    stopped = False
    pid = None
    try:
        c1.proc.send_signal(signal.SIGSTOP)
        stopped = True
        c2 = _twin(c1, tmp_path, "c2")
        c2.start()
        agent = Agent(c2, "n1", gpus=1, token=c1.node_token("n1"),
                      extra_args=["--heartbeat", "1"])
        agent.args[agent.args.index("--controller") + 1] = "%s,%s" % (c2.agent_addr, c1.agent_addr)
        agent.start()
        (pid,) = u.wait_running_pids(c2, job["id"])
        wait_for(lambda: stamp.exists() and stamp.read_text().strip(), what="the task's stamp")
        assert stamp.read_text().split() == [str(pid)]
        assert "epoch=%d" % (e1 + 1) in agent.log(), agent.log()
        # C2 is lost; C1 wakes up believing the job waits for n1.
        c1.proc.send_signal(signal.SIGCONT)
        stopped = False
        c2.kill9()
        refusal = "welcome of epoch %d refused: this agent has accepted epoch %d" % (e1, e1 + 1)
        wait_for(lambda: agent.log().count(refusal) >= 3, timeout=40,
                 what="the agent refusing C1 three times")
        wait_for(lambda: "node=n1 refused this controller (epoch %d)" % e1 in c1.log(),
                 what="C1 told of the refusal")
        assert stamp.read_text().split() == [str(pid)], stamp.read_text()
        assert u.pid_alive(pid), "the task was killed by the deposed controller"
        # C1 did send its launch of the job (after the refused welcome):
        # never acknowledged, it gave it up when the agent hung up.
        wait_for(lambda: "job=%d requeued: task 0 never started" % job["id"] in c1.log(),
                 timeout=40, what="C1's launch, unacted on")
        assert stamp.read_text().split() == [str(pid)], stamp.read_text()
        # C2 back (a higher epoch again): the task is re-adopted, not restarted.
        c2.start()
        # C2's recovered state says n1 up and the task running before the
        # agent, still trying its list with back-off, is back: wait for the
        # agent's own word that it took C2's new epoch.
        wait_for(lambda: "epoch=%d" % (e1 + 2) in agent.log(), timeout=40,
                 what="the agent accepting C2's new epoch")
        wait_for(lambda: (c2.node("n1") or {}).get("connected") is True, timeout=30,
                 what="n1 connected to C2")
        assert u.wait_running_pids(c2, job["id"]) == [pid]
        assert stamp.read_text().split() == [str(pid)]
    finally:
        if stopped:
            c1.proc.send_signal(signal.SIGCONT)
        if agent is not None:
            agent.stop()
        if c2 is not None:
            c2.stop()
        if pid and u.pid_alive(pid):
            u.kill_pid_group(pid)


def test_agent_leaves_a_stopped_controller_before_fencing(controller_factory, tmp_path,
                                                          build_dir):
    """node_timeout 8 s, heartbeat 1 s: C1 stopped (SIGSTOP), the agent
    given C1,C2 moves on once its asked-for answer is late (half of
    node_timeout plus a heartbeat, 5 s), reaches C2 (started on a copy of
    C1's store: the next epoch) and is welcomed before its contact is old
    enough to fence: the task keeps running and is re-adopted."""
    _need(build_dir, "sluice-agent")
    c1 = controller_factory({"node_timeout": 8, "heartbeat": 1, "kill_grace": 1}, sub="c1")
    c2 = _twin(c1, tmp_path, "c2", copy=False)
    agent = Agent(c1, "n1", gpus=1, token=c1.node_token("n1"), extra_args=["--heartbeat", "1"])
    agent.args[agent.args.index("--controller") + 1] = "%s,%s" % (c1.agent_addr, c2.agent_addr)
    stamp = tmp_path / "stamp"
    stopped = False
    pid = None
    try:
        agent.start()
        job = c1.submit({"gpus": 1, "on_node_failure": "requeue",
                         "command": u.sh("echo $$ >> %s; exec sleep 300" % stamp)})
        (pid,) = u.wait_running_pids(c1, job["id"])
        c1.proc.send_signal(signal.SIGSTOP)
        stopped = True
        _copy_store(c1, c2)
        c2.start()
        wait_for(lambda: "trying the next controller" in agent.log(), timeout=30,
                 what="the agent leaving the stopped controller")
        wait_for(lambda: "registered with controller %s" % c2.agent_addr in agent.log(),
                 timeout=30, what="the agent welcomed by C2")
        assert u.wait_running_pids(c2, job["id"]) == [pid]
        assert "no answer from the controller" not in agent.log(), agent.log()
        assert u.pid_alive(pid)
        assert stamp.read_text().split() == [str(pid)]
    finally:
        if stopped:
            c1.proc.send_signal(signal.SIGCONT)
        agent.stop()
        c2.stop()
        if pid and u.pid_alive(pid):
            u.kill_pid_group(pid)


def test_agent_does_not_start_on_an_unreadable_epoch_mark(tmp_path, build_dir):
    _need(build_dir, "sluice-agent")
    ctl = FakeController(tmp_path)
    agent = harness.Agent(ctl, "n1", gpus=0)
    try:
        with open(os.path.join(agent.workdir, "epoch"), "w") as f:
            f.write("seven\n")
        agent.start(wait=False)
        assert agent.proc.wait(timeout=10) == 1
        assert "epoch: not an epoch mark" in agent.log(), agent.log()
    finally:
        agent.stop()
        ctl.close()


def _accept_hello(ctl):
    with ctl.cv:
        ctl.received.clear()
    ctl.accept(timeout=20)
    return ctl.wait_type("hello")


def _refusal(ctl, what):
    return ctl.wait(lambda m: m.get("type") == "error" and what in m.get("message", ""),
                    "an error saying " + what)


def test_agent_refuses_older_epochs_and_remembers(tmp_path, build_dir):
    _need(build_dir, "sluice-agent")
    ctl = FakeController(tmp_path)
    agent = harness.Agent(ctl, "n1", gpus=2, extra_args=["--heartbeat", "1", "--grace", "1"])
    stamp = tmp_path / "stamp"
    agent.start(wait=False)
    try:
        _accept_hello(ctl)
        ctl.send({"type": "welcome", "node": "n1", "heartbeat": 1, "epoch": 5,
                  "instance": "abc"})
        ctl.send(_launch(1, 0, epoch=4, argv=["sh", "-c", "echo 1 >> %s" % stamp]))
        err = _refusal(ctl, "launch of epoch 4 refused: this agent has accepted epoch 5")
        assert "nothing in it was acted on" in err["message"], err
        # The refusal drops the connection; the next hello lists no job 1.
        hello = _accept_hello(ctl)
        assert hello["tasks"] == [], hello
        assert not stamp.exists()
        assert "controller %s: launch of epoch 4 refused" % ctl.agent_addr in agent.log()
        # A newer epoch is accepted, and raises the mark; an older kill is not.
        ctl.send({"type": "welcome", "node": "n1", "heartbeat": 1, "epoch": 6, "instance": "abc"})
        ctl.send(_launch(2, 0, epoch=6, argv=["sleep", "300"]))
        pid = ctl.wait_type("started", job=2)["pid"]
        ctl.send({"type": "kill", "job": 2, "task": 0, "grace_ms": 100, "epoch": 5})
        _refusal(ctl, "kill of epoch 5 refused: this agent has accepted epoch 6")
        hello = _accept_hello(ctl)
        assert [(t["job"], t["state"]) for t in hello["tasks"]] == [(2, "running")], hello
        assert u.pid_alive(pid)
        with open(os.path.join(agent.workdir, "epoch")) as f:
            assert f.read() == "6 abc\n"
        # A follower that knows no leader (epoch 0, no leader): nothing to
        # refuse in it; the agent just tries again.
        ctl.send({"type": "redirect", "epoch": 0})
        _accept_hello(ctl)
        assert "does not lead and knows no leader (epoch 0)" in agent.log(), agent.log()
        assert "redirect of epoch 0 refused" not in agent.log(), agent.log()
        # Across the agent's restart: epoch 5 is still refused, and so is
        # a controller that sends no epoch (one from before epochs).
        ctl.send({"type": "welcome", "node": "n1", "heartbeat": 1, "epoch": 6, "instance": "abc"})
        agent.stop()
        agent.start(wait=False)
        _accept_hello(ctl)
        ctl.send({"type": "welcome", "node": "n1", "heartbeat": 1, "epoch": 5, "instance": "abc"})
        _refusal(ctl, "welcome of epoch 5 refused: this agent has accepted epoch 6")
        _accept_hello(ctl)
        ctl.send({"type": "welcome", "node": "n1", "heartbeat": 1, "instance": "abc"})
        _refusal(ctl, "welcome of epoch 0 refused: this agent has accepted epoch 6")
        # Another cluster instance (a database made anew) starts over at 1.
        _accept_hello(ctl)
        ctl.send({"type": "welcome", "node": "n1", "heartbeat": 1, "epoch": 1, "instance": "def"})
        ctl.send({"type": "heartbeat", "seq": 999999, "epoch": 1})
        ctl.send(_launch(3, 0, epoch=1, argv=["true"]))
        ctl.wait_type("started", job=3)
        wait_for(lambda: open(os.path.join(agent.workdir, "epoch")).read() == "1 def\n",
                 what="the mark of the new instance")
    finally:
        agent.stop()
        ctl.close()


class _Redirector:
    """A controller that does not lead, as docs/protocol.md says one
    answers: a redirect to `leader` for every hello, then close."""

    def __init__(self, leader, epoch):
        self.lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.lst.bind(("127.0.0.1", 0))
        self.lst.listen(8)
        self.agent_addr = "127.0.0.1:%d" % self.lst.getsockname()[1]
        self.reply = {"type": "redirect", "epoch": epoch}
        if leader:
            self.reply["leader"] = leader
        self.hellos = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                s, _ = self.lst.accept()
            except OSError:
                return
            with s, s.makefile("rb") as f:
                if f.readline():
                    self.hellos += 1
                    s.sendall((json.dumps(self.reply) + "\n").encode())

    def close(self):
        self.lst.close()


def test_agent_tries_its_controllers_and_follows_a_redirect(controller, build_dir):
    _need(build_dir, "sluice-agent")
    # A (nothing listening) first: B is reached.
    a1 = Agent(controller, "n1", gpus=1, token=controller.node_token("n1"))
    a1.args[a1.args.index("--controller") + 1] = "%s,%s" % (_dead_addr(), controller.agent_addr)
    a1.start()
    # A standby that names the leader: followed.
    r = _Redirector(controller.agent_addr, 1)
    a2 = Agent(controller, "n2", gpus=1, token=controller.node_token("n2"))
    a2.args[a2.args.index("--controller") + 1] = r.agent_addr
    try:
        a2.start()
        assert r.hellos >= 1
        assert ("following its redirect to %s" % controller.agent_addr) in a2.log(), a2.log()
        # The leader lost: the agent goes on trying its list (the standby,
        # which sends it back), and is up again once the leader returns.
        controller.restart()
        wait_for(lambda: (controller.node("n2") or {}).get("state") == "up"
                 and controller.node("n2").get("connected", True), timeout=30,
                 what="n2 back through the redirect")
        job = controller.submit({"gpus": 1, "command": ["true"]})
        controller.wait_job(job["id"], ["succeeded", "completed"], timeout=30)
    finally:
        a1.stop()
        a2.stop()
        r.close()


class _Http307(http.server.BaseHTTPRequestHandler):
    """A follower's API: every request answered 307 to the leader's URL
    for the same path."""
    leader = None

    def _redirect(self):
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        body = b'{"error":"not the leader"}'
        self.send_response(307)
        self.send_header("Location", self.leader + self.path)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_DELETE = _redirect

    def log_message(self, *a):
        pass


def _serve_307(leader):
    handler = type("H", (_Http307,), {"leader": leader})
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, "http://127.0.0.1:%d" % srv.server_address[1]


def test_cli_tries_its_servers_and_follows_307(controller, tmp_path, build_dir):
    _need(build_dir, "sluice")
    env = u.cli_env(token=controller.token("alice"), tmpdir=tmp_path)
    dead = "http://" + _dead_addr()
    # --server A,B: A refuses the connection, B answers.
    r = u.sluice(["--server", "%s,%s" % (dead, controller.url), "queue"], env)
    assert r.returncode == 0, (r.stdout, r.stderr)
    # The environment variable takes a list too (scheme optional).
    env2 = dict(env, SLUICE_SERVER="%s, %s" % (dead, controller.url[len("http://"):]))
    r = u.sluice(["--json", "submit", "--gpus", "0", "--", "true"], env2)
    assert r.returncode == 0, (r.stdout, r.stderr)
    first = json.loads(r.stdout)["id"]
    # A follower's 307: followed with the same method and body.
    srv, follower = _serve_307(controller.url)
    try:
        r = u.sluice(["--server", "%s,%s" % (dead, follower), "--json", "submit", "--gpus", "0",
                      "--name", "via-follower", "--", "true"], env)
        assert r.returncode == 0, (r.stdout, r.stderr)
        jid = json.loads(r.stdout)["id"]
        assert jid > first
        assert controller.job(jid)["name"] == "via-follower"
        # Never to another scheme.
        srv.RequestHandlerClass.leader = controller.url.replace("http://", "https://")
        r = u.sluice(["--server", follower, "queue"], env)
        assert r.returncode != 0
        assert "not the scheme of" in r.stderr, r.stderr
    finally:
        srv.shutdown()
        srv.server_close()
