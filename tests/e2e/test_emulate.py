"""
test_emulate.py - `sluice-agent --emulate N` (docs/scale.md): N virtual
nodes in one process, each on its own connection with the real protocol.
Jobs start, end, are cancelled, fail and are logged through emulated nodes
as through real agents, and a controller killed with SIGKILL re-adopts
every task of 200 emulated nodes.
"""

import os
import signal
import subprocess

import pytest

from harness import wait_for

NODES = 200


class Emulator:
    """One sluice-agent --emulate process for `controller`."""

    def __init__(self, controller, n, name="e", gpus=8, extra=()):
        self.controller = controller
        self.n = n
        self.log_path = os.path.join(controller.dir, "emulate-%s.log" % name)
        self.args = [os.path.join(controller.binary[:-len("sluiced")], "sluice-agent"),
                     "--emulate", str(n), "--controller", controller.agent_addr,
                     "--token", controller.cluster_token, "--name", name,
                     "--cpus", "64", "--memory", "512Gi", "--heartbeat", "1"]
        if gpus:
            self.args += ["--gpus", str(gpus), "--gpu-model", "H100", "--gpu-memory", "80Gi"]
        self.args += list(extra)
        self.proc = None
        self._log = None

    def start(self):
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(self.args, stdout=self._log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        return self

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        if self._log:
            self._log.close()
            self._log = None

    def log(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")[-4000:]


def up_nodes(controller, prefix="e"):
    return [n for n in controller.nodes()
            if n["name"].startswith(prefix) and n["state"] == "up" and n.get("connected", True)]


@pytest.fixture
def emulated(controller_factory, build_dir):
    if not os.access(os.path.join(build_dir, "sluice-agent"), os.X_OK):
        pytest.skip("sluice-agent is not built")
    made = []

    def make(n=NODES, **ctl_over):
        over = {"limits": {"max_connections_per_peer": 4 * n + 64, "max_connections": 4 * n + 64}}
        over.update(ctl_over)
        ctl = controller_factory(config_overrides=over)
        em = Emulator(ctl, n).start()
        made.append(em)
        wait_for(lambda: len(up_nodes(ctl)) == n or None, timeout=60,
                 what="%d emulated nodes up" % n)
        return ctl, em

    yield make
    for em in made:
        em.stop()


def job_log(ctl, jid, task=0):
    st, body = ctl.request("GET", "/v1/jobs/%d/logs?task=%d" % (jid, task), token=ctl.admin_token)
    assert st == 200, (st, body)
    return body["data"]


def test_emulated_nodes_register_with_names_and_resources(emulated):
    ctl, em = emulated()
    nodes = {n["name"]: n for n in up_nodes(ctl)}
    assert sorted(nodes) == ["e%05d" % i for i in range(NODES)]
    n = nodes["e00123"]
    assert n["gpus"] == 8 and n.get("gpu_model") == "H100", n


def test_jobs_start_end_cancel_fail_and_log_through_emulated_nodes(emulated):
    ctl, em = emulated()
    # Ends by itself after its emulated run time, on two nodes (a gang).
    done = ctl.submit({"command": ["train"], "tasks": 2, "gpus": 8,
                       "env": {"SLUICE_EMULATED_RUNTIME": "0.5"}})
    j = ctl.wait_job(done["id"], ["succeeded", "failed"], timeout=60)
    assert j["state"] == "succeeded", j
    nodes = {p["node"] for p in j["placement"]}
    assert len(nodes) == 2 and all(x.startswith("e") for x in nodes)
    for t in (0, 1):
        text = job_log(ctl, done["id"], t)
        assert ("emulated task %d.%d on node" % (done["id"], t)) in text, text
        assert "exited with code 0" in text, text

    # Runs until cancelled.
    forever = ctl.submit({"command": ["serve"], "gpus": 1})
    # Running from the scheduler's start; its pid comes with the agent's
    # `started`, a moment later.
    j = wait_for(lambda: (lambda x: x if x["state"] == "running" and x["placement"][0]["pid"]
                          else None)(ctl.job(forever["id"])),
                 timeout=60, what="job running with its pid")
    assert j["placement"][0]["pid"] > 0
    st, body = ctl.request("DELETE", "/v1/jobs/%d" % forever["id"], token=ctl.admin_token)
    assert st == 200, (st, body)
    j = ctl.wait_job(forever["id"], "cancelled", timeout=60)
    text = wait_for(lambda: (lambda s: s if "exited with code 143" in s else None)(
        job_log(ctl, forever["id"])), timeout=30, what="cancelled task's log")
    assert "started at" in text

    # A run time that is not a number fails the job, naming the variable.
    bad = ctl.submit({"command": ["x"], "gpus": 1, "env": {"SLUICE_EMULATED_RUNTIME": "soon"}})
    j = ctl.wait_job(bad["id"], ["failed"], timeout=60)
    assert "SLUICE_EMULATED_RUNTIME" in str(j), j


def test_many_jobs_fill_every_emulated_node(emulated):
    ctl, em = emulated()
    ids = [ctl.submit({"command": ["x"], "gpus": 8, "env": {"SLUICE_EMULATED_RUNTIME": "1"}})["id"]
           for _ in range(NODES)]
    for jid in ids:
        j = ctl.wait_job(jid, ["succeeded", "failed"], timeout=120)
        assert j["state"] == "succeeded", j
    used = {ctl.job(jid)["placement"][0]["node"] for jid in ids[:50]}
    assert len(used) > 1


def test_controller_kill9_readopts_every_task_of_emulated_nodes(emulated):
    ctl, em = emulated()
    ids = [ctl.submit({"command": ["x"], "gpus": 8})["id"] for _ in range(NODES)]

    def all_running():
        js = [j for j in ctl.jobs(query="?state=running&limit=1000") if j["id"] in set(ids)]
        return js if len(js) == NODES else None

    wait_for(all_running, timeout=120, what="%d jobs running" % NODES)
    before = {jid: ctl.job(jid)["placement"][0] for jid in ids}
    assert len({p["node"] for p in before.values()}) == NODES  # one job per node
    ctl.kill9()
    ctl.start(timeout=60)
    wait_for(lambda: len(up_nodes(ctl)) == NODES or None, timeout=120,
             what="every emulated node back")
    for jid in ids:
        j = ctl.job(jid)
        assert j["state"] == "running", j
        p = j["placement"][0]
        assert (p["node"], p["pid"]) == (before[jid]["node"], before[jid]["pid"]), (p, before[jid])
    # Still under control: a cancel reaches the re-adopted task.
    st, _ = ctl.request("DELETE", "/v1/jobs/%d" % ids[0], token=ctl.admin_token)
    assert st == 200
    ctl.wait_job(ids[0], "cancelled", timeout=60)
    assert em.proc.poll() is None, em.log()


def _low_nofile(n):
    import resource
    return lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))


def _nofile_of(pid):
    with open("/proc/%d/limits" % pid) as f:
        for line in f:
            if line.startswith("Max open files"):
                return int(line.split()[3])
    return 0


def test_open_file_limit_raised_or_refused_clearly(controller_factory, build_dir):
    """Under a hard limit of 256 open files, sluiced asked for 1,000 agent
    connections and an emulator asked for 1,000 nodes either raise the
    limit (a process with CAP_SYS_RESOURCE may) or refuse to start with a
    message that says what they need and what the limit is."""
    ctl = controller_factory(config_overrides={"limits": {"max_connections": 100,
                                                          "max_agent_connections": 1000}},
                             start=False)
    log = open(ctl.log_path, "ab")
    p = subprocess.Popen([ctl.binary, "--config", ctl.config_path, "--init"], stdout=log,
                         stderr=subprocess.STDOUT, preexec_fn=_low_nofile(256))
    try:
        rc = p.wait(timeout=5)
    except subprocess.TimeoutExpired:
        rc = None
    if rc is None:
        assert _nofile_of(p.pid) >= 1000 + 100 + 64
        p.terminate()
        p.wait(timeout=10)
    else:
        assert rc != 0
        text = ctl.log()
        assert "max_agent_connections=1000" in text and "limit is 256" in text, text
    log.close()

    q = subprocess.Popen([os.path.join(build_dir, "sluice-agent"), "--emulate", "1000",
                          "--controller", "127.0.0.1:1", "--token", "t"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         preexec_fn=_low_nofile(256))
    try:
        out, _ = q.communicate(timeout=5)
        assert q.returncode == 1
        assert b"--emulate 1000 needs 1064 open files" in out and b"limit is 256" in out, out
    except subprocess.TimeoutExpired:
        assert _nofile_of(q.pid) >= 1064
        q.terminate()
        q.wait(timeout=10)
