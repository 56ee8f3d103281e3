"""
test_gpu_health.py - GPU and node health (docs/health.md) against real
daemons on the fake NVML (fixtures/fake_nvml.c: XID events appended to
FAKE_NVML_EVENTS, ECC counts and a lost GPU in FAKE_NVML_SCRIPT): an XID
79 under a 2-task gang fences the GPU and drains its node, the gang is
stopped (its preemption signal), requeued and runs elsewhere, never on
that GPU again until resume; an uncorrectable ECC error fences one GPU
and the node serves its others, durably across a restart; an
application's XID fails only its job; a hanging health command is killed
at its timeout while heartbeats go on; a flapping GPU is not returned to
service in a loop; /metrics shows it all (promtool).
"""

import os
import shutil
import subprocess
import sys
import time

import pytest

import harness

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))
import e2e_util as u  # noqa: E402


HEALTH_CONFIG = {"heartbeat": 1, "kill_grace": 1, "node_timeout": 10}


@pytest.fixture
def fake_nvml(tmp_path):
    return u.build_fake_nvml(tmp_path / "nvml")


class GpuNode:
    """A real agent on its own fake NVML: event(gpu, xid) appends an XID,
    script(text) rewrites its readings."""

    def __init__(self, ctl, tmp_path, nvml, name, count=2, extra=()):
        self.name = name
        self.events = str(tmp_path / ("events-%s" % name))
        self.script_path = str(tmp_path / ("nvml-%s.txt" % name))
        open(self.events, "w").close()
        self.script("")
        env = {"LD_LIBRARY_PATH": nvml, "FAKE_NVML_SCRIPT": self.script_path,
               "FAKE_NVML_EVENTS": self.events, "FAKE_NVML_COUNT": str(count)}
        args = ["--heartbeat", "1", "--health-poll", "0.2"] + list(extra)
        self.agent = harness.Agent(ctl, name, gpus=0, extra_args=args, env=env)

    def event(self, gpu, xid):
        with open(self.events, "a") as f:
            f.write("%d %d\n" % (gpu, xid))

    def script(self, text):
        tmp = self.script_path + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, self.script_path)


@pytest.fixture
def gpu_nodes(tmp_path, fake_nvml):
    made = []

    def make(ctl, names, **kw):
        out = []
        for n in names:
            g = GpuNode(ctl, tmp_path, fake_nvml, n, **kw)
            made.append(g)
            g.agent.start()
            out.append(g)
        return out

    yield make
    for g in made:
        g.agent.stop()


def gpu_health(ctl, node, gpu):
    """The node object's entry for GPU gpu, or None (healthy, not fenced)."""
    n = ctl.node(node)
    for e in n["health"]["gpus"]:
        if e["gpu"] == gpu:
            return e
    return None


def placed(job):
    """{(node, gpu)} of a job's placement."""
    return {(p["node"], g) for p in job.get("placement", []) for g in p.get("gpus", [])}


def metrics(ctl):
    st, body = ctl.request("GET", "/metrics", token=ctl.admin_token)
    assert st == 200
    return body if isinstance(body, str) else body.decode()


def test_xid79_under_a_gang_fences_stops_requeues_and_runs_elsewhere(controller_factory, gpu_nodes,
                                                                     tmp_path):
    ctl = controller_factory(HEALTH_CONFIG)
    nodes = gpu_nodes(ctl, ["g1", "g2", "g3"])
    stamp = str(tmp_path / "stamps")
    os.makedirs(stamp)
    # Each task records the signal it got (the preemption's SIGTERM) before
    # it exits, so that the test sees the gang was signalled, not killed.
    cmd = u.sh("trap 'echo TERM >> %s/$SLUICE_JOB_ID.$RANK; exit 0' TERM; sleep 300 & wait" % stamp)
    j = ctl.submit({"tasks": 2, "gpus": 2, "command": cmd})
    jid = j["id"]
    u.wait_running_pids(ctl, jid, n=2)
    first = placed(ctl.job(jid))
    node = sorted(first)[0][0]
    bad = next(g for g in nodes if g.name == node)
    bad.event(1, 79)

    def fenced():
        e = gpu_health(ctl, node, 1)
        return e if e and e["fenced"] else None

    e = harness.wait_for(fenced, timeout=15, what="GPU 1 of %s fenced" % node)
    assert e["xid"] == 79 and e["reason"] == "xid"
    assert "GPU 1 of %s: XID 79, fell off the bus" % node in e["fence_reason"]
    # Node-level (the catalogue: a reboot): the node is drained.
    assert ctl.node(node)["drain"]["reason"].startswith("health: GPU 1 of %s: XID 79" % node)

    def elsewhere():
        jj = ctl.job(jid)
        return jj if jj["state"] == "running" and jj.get("requeues", 0) >= 1 and \
            all(n != node for n, _ in placed(jj)) and len(placed(jj)) == 4 else None

    jj = harness.wait_for(elsewhere, timeout=30, what="job %d running elsewhere" % jid)
    assert {n for n, _ in placed(jj)} == {g.name for g in nodes} - {node}
    # Signalled (its SIGTERM trap ran) on both ranks of the first run.
    harness.wait_for(lambda: len(os.listdir(stamp)) >= 2, timeout=10, what="both ranks signalled")
    kinds = [p.get("kind") for p in jj.get("preemptions", [])]
    assert "health" in kinds, jj
    reason = [p["reason"] for p in jj["preemptions"] if p.get("kind") == "health"][0]
    assert reason == "GPU 1 of %s: XID 79, fell off the bus" % node
    # sluice show prints it.
    env = u.cli_env(ctl, token=ctl.admin_token, tmpdir=ctl.dir)
    out = u.sluice(["show", str(jid)], env).stdout
    assert "XID 79, fell off the bus" in out, out
    m = metrics(ctl)
    assert 'sluice_gpu_faults_total{xid="79"} 1' in m
    assert 'sluice_gpu_health{node="%s",gpu="1",reason="xid"} 2' % node in m
    assert 'sluice_gpu_fenced{node="%s",gpu="1"} 1' % node in m
    if shutil.which("promtool"):
        r = subprocess.run(["promtool", "check", "metrics"], input=m, capture_output=True,
                           text=True, timeout=60)
        assert r.returncode == 0, r.stdout + r.stderr
    ctl.request("DELETE", "/v1/jobs/%d" % jid, token=ctl.admin_token)


def test_ecc_fences_one_gpu_the_node_serves_the_others_and_it_lasts(controller_factory, gpu_nodes):
    ctl = controller_factory(HEALTH_CONFIG)
    (g,) = gpu_nodes(ctl, ["h1"], count=4)
    g.script("2 ecc_dbe=1\n")
    e = harness.wait_for(lambda: (gpu_health(ctl, "h1", 2) or {}).get("fenced") and
                         gpu_health(ctl, "h1", 2), timeout=15, what="GPU 2 fenced")
    assert e["reason"] == "ecc_uncorrectable"
    assert ctl.node("h1")["drain"] is None  # a GPU fault: the node keeps serving
    g.script("")  # the reading clears, the fence stays (clear: resume)
    jobs = [ctl.submit({"gpus": 1, "command": u.sh("sleep 300")})["id"] for _ in range(4)]
    for jid in jobs[:3]:
        ctl.wait_job(jid, "running")
    time.sleep(1.5)
    assert ctl.job(jobs[3])["state"] == "pending"
    used = set()
    for jid in jobs[:3]:
        used |= placed(ctl.job(jid))
    assert used == {("h1", 0), ("h1", 1), ("h1", 3)}
    env = u.cli_env(ctl, token=ctl.admin_token, tmpdir=ctl.dir)
    out = u.sluice(["nodes"], env).stdout
    assert "h1 GPU 2: healthy, fenced (none): GPU 2 of h1: 1 uncorrectable ECC errors" in out, out
    # Durable: a restarted controller keeps GPU 2 out.
    ctl.restart()
    harness.wait_for(lambda: ctl.node("h1") and ctl.node("h1")["connected"], timeout=20,
                     what="h1 back")
    assert gpu_health(ctl, "h1", 2)["fenced"]
    time.sleep(1.5)
    assert ctl.job(jobs[3])["state"] == "pending"
    # resume returns it; the waiting job takes it.
    r = u.sluice(["resume", "h1"], env)
    assert r.returncode == 0, r.stdout + r.stderr
    jj = ctl.wait_job(jobs[3], "running")
    assert placed(jj) == {("h1", 2)}
    for jid in jobs:
        ctl.request("DELETE", "/v1/jobs/%d" % jid, token=ctl.admin_token)


def test_application_xid_fails_only_its_job(controller_factory, gpu_nodes):
    ctl = controller_factory(HEALTH_CONFIG)
    (g,) = gpu_nodes(ctl, ["a1"], count=2)
    j1 = ctl.submit({"gpus": 1, "command": u.sh("sleep 300")})["id"]
    j2 = ctl.submit({"gpus": 1, "command": u.sh("sleep 300")})["id"]
    ctl.wait_job(j1, "running")
    ctl.wait_job(j2, "running")
    gpu = sorted(placed(ctl.job(j1)))[0][1]
    g.event(gpu, 13)
    jj = ctl.wait_job(j1, "failed", timeout=15)
    assert "XID 13, graphics engine exception (the application's fault)" in jj["reason"], jj
    assert ctl.job(j2)["state"] == "running"
    e = gpu_health(ctl, "a1", gpu)
    assert e is None or not e["fenced"]
    # The GPU takes work again.
    j3 = ctl.submit({"gpus": 1, "command": u.sh("sleep 300")})["id"]
    assert placed(ctl.wait_job(j3, "running")) == {("a1", gpu)}
    assert 'sluice_gpu_faults_total{xid="13"} 1' in metrics(ctl)
    # A restarted controller hears the agent's old count again: the XID
    # came before it started and before j3 did, so j3 is not its cause.
    ctl.restart()
    harness.wait_for(lambda: ctl.node("a1") and ctl.node("a1")["connected"], timeout=20, what="a1")
    time.sleep(2.5)  # a few heartbeats, each with the report
    assert ctl.job(j3)["state"] == "running"
    for jid in (j2, j3):
        ctl.request("DELETE", "/v1/jobs/%d" % jid, token=ctl.admin_token)


def test_hanging_health_command_is_killed_and_heartbeats_go_on(controller_factory, gpu_nodes,
                                                               tmp_path):
    ctl = controller_factory(HEALTH_CONFIG)
    pidfile = str(tmp_path / "check.pid")
    cmd = "echo $$ > %s; exec sleep 1000" % pidfile
    (g,) = gpu_nodes(ctl, ["c1"], extra=["--health-command", cmd, "--health-timeout", "1",
                                         "--health-interval", "3"])

    def timed_out():
        h = ctl.node("c1")["health"]
        return h if "timed out" in h["message"] else None

    h = harness.wait_for(timed_out, timeout=20, what="health command timed out")
    assert h["state"] == "unhealthy" and h["reason"] == "health_check"
    assert h["message"] == "health command timed out after 1 s and was killed"
    pid = int(open(pidfile).read())
    harness.wait_for(lambda: not u.pid_alive(pid), timeout=10, what="the hung check killed")
    # Heartbeats went on through it: last_seen keeps moving, the node stays
    # connected (drained, by node_fault: drain).
    seen = ctl.node("c1")["last_seen"]
    harness.wait_for(lambda: ctl.node("c1")["last_seen"] > seen + 1.5, timeout=10,
                     what="heartbeats after the kill")
    n = ctl.node("c1")
    assert n["connected"] and n["drain"] and "timed out" in n["drain"]["reason"]


def test_a_flapping_gpu_is_not_returned_to_service_in_a_loop(controller_factory, gpu_nodes):
    cfg = dict(HEALTH_CONFIG, health={"clear": "check", "clear_after": 0.5, "flap_limit": 2,
                                      "flap_window": 3600})
    ctl = controller_factory(cfg)
    (g,) = gpu_nodes(ctl, ["f1"], count=2)

    def state(want_fenced):
        e = gpu_health(ctl, "f1", 0)
        fenced = bool(e and e["fenced"])
        return (e or {"fenced": False}) if fenced == want_fenced else None

    g.script("0 lost=1\n")
    harness.wait_for(lambda: state(True), timeout=15, what="fenced once")
    g.script("")
    e = harness.wait_for(lambda: state(False), timeout=15, what="cleared by its checks")
    g.script("0 lost=1\n")
    e = harness.wait_for(lambda: state(True), timeout=15, what="fenced twice")
    assert e["pinned"] and e["faults"] == 2
    g.script("")
    harness.wait_for(lambda: (gpu_health(ctl, "f1", 0) or {}).get("state") == "healthy",
                     timeout=15, what="healthy again")
    time.sleep(2)  # four times clear_after: still out
    e = gpu_health(ctl, "f1", 0)
    assert e["fenced"] and e["pinned"], e
    r = u.sluice(["resume", "f1"], u.cli_env(ctl, token=ctl.admin_token, tmpdir=ctl.dir))
    assert r.returncode == 0, r.stdout + r.stderr
    assert state(False) is not None


@pytest.mark.parametrize("text,msg", [
    ("health: {gpu_fault: maybe}\n", "health.gpu_fault: must be fence, drain or none"),
    ("health: {node_fault: reboot}\n", "health.node_fault: must be drain or none"),
    ("health: {clear: sometimes}\n", "health.clear: must be resume or check"),
    ("health: {clear_after: soon}\n", "health.clear_after: must be a number of seconds"),
    ("health: {flap_limit: 0}\n", "health.flap_limit: must be a whole number of faults from 1 to 1000"),
    ("health: {fence: true}\n", 'unknown key "fence" in health'),
    ("health: 3\n", "health must be a mapping"),
])
def test_bad_health_config_is_refused_naming_the_key(tmp_path, text, msg):
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(text)
    exe = os.path.join(harness.build_dir(), "sluiced")
    r = subprocess.run([exe, "--config", str(cfg), "--state", str(tmp_path / "s.db"), "--init",
                        "--listen", "127.0.0.1:%d" % harness.free_port(),
                        "--agent-listen", "127.0.0.1:%d" % harness.free_port()],
                       capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    out = r.stdout + r.stderr
    assert r.returncode == 2 and "bad.yaml:1:" in out and msg in out, (r.returncode, out)
