"""
test_exporter.py - the agent's exporter (docs/metrics-agent.md): GET
/metrics on --metrics-listen, checked with promtool; series values are the
fake NVML's scripted readings (fixtures/fake_nvml.c, FAKE_NVML_SCRIPT) and
carry the job and tenant of the task holding each GPU; no utilisation
series without NVML; the dcgm-exporter job mapping files follow the tasks;
a client that never reads does not stall launches.
"""

import os
import re
import shutil
import socket
import subprocess
import sys
import time

import pytest

import harness

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))
import e2e_util as u  # noqa: E402

GiB = 1 << 30


@pytest.fixture
def fake_nvml(tmp_path):
    """A directory holding a fake libnvidia-ml.so.1 (fixtures/fake_nvml.c)."""
    return u.build_fake_nvml(tmp_path / "nvml")


def scrape(port, path="/metrics"):
    """(status, body) of GET path on the agent's metrics port."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % path).encode())
        data = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
    finally:
        s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body.decode()


def series(text, name):
    """{frozenset(labels.items()): value} of family name in text."""
    out = {}
    for line in text.splitlines():
        m = re.match(r'^%s\{(.*)\} (\S+)$' % re.escape(name), line)
        if m:
            labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(1)))
            out[frozenset(labels.items())] = float(m.group(2))
    return out


def by_gpu(text, name):
    """{gpu index: (value, labels)} of family name."""
    return {int(dict(k)["gpu"]): (v, dict(k)) for k, v in series(text, name).items()}


class NvmlAgent:
    """A real agent on the fake NVML, with the exporter on an ephemeral port
    and a mapping directory; script(text) rewrites the NVML readings."""

    def __init__(self, controller, tmp_path, fake_nvml, name="g1", count=4, gpus=None,
                 extra=(), stale=None, script=""):
        self.port = harness.free_port()
        self.script_path = str(tmp_path / ("nvml-%s.txt" % name))
        self.mapdir = str(tmp_path / ("jobmap-%s" % name))
        if stale:  # files a previous agent left in the mapping directory
            os.makedirs(self.mapdir)
            for k, v in stale.items():
                with open(os.path.join(self.mapdir, k), "w") as f:
                    f.write(v)
        self.script(script)  # GPM support is read once, at start-up: script it here
        env = {"LD_LIBRARY_PATH": fake_nvml, "FAKE_NVML_SCRIPT": self.script_path,
               "FAKE_NVML_COUNT": str(count)}
        args = ["--metrics-listen", "127.0.0.1:%d" % self.port, "--metrics-interval", "0.2",
                "--hpc-job-mapping-dir", self.mapdir, "--heartbeat", "1"] + list(extra)
        self.agent = harness.Agent(controller, name, gpus=gpus or 0, extra_args=args, env=env)

    def script(self, text):
        tmp = self.script_path + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, self.script_path)

    def metrics(self):
        st, body = scrape(self.port)
        assert st == 200, body
        return body


@pytest.fixture
def nvml_agent(controller, tmp_path, fake_nvml):
    made = []

    def make(**kw):
        a = NvmlAgent(controller, tmp_path, fake_nvml, **kw)
        made.append(a)
        a.agent.start()
        return a

    yield make
    for a in made:
        a.agent.stop()


def promtool_check(text, tmp_path):
    if not shutil.which("promtool"):
        pytest.skip("promtool is not installed (Debian package prometheus; make deps)")
    r = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


SCRIPT = """* util=0 mem_used=0
0 util=41 mem_used=%d power_mw=350500 temp=63 uuid=GPU-aaaa-0000
1 util=97 mem_used=%d power_mw=200000 temp=55 uuid=GPU-bbbb-1111
""" % (23 * GiB, 40 * GiB)


def test_gpu_series_match_nvml_and_name_the_holder(controller, nvml_agent, tmp_path):
    g = nvml_agent(count=4)
    g.script(SCRIPT)
    j = controller.submit({"gpus": 2, "command": u.sh("sleep 60")}, tenant="bob")
    u.wait_running_pids(controller, j["id"])
    placed = controller.job(j["id"])["placement"][0]["gpus"]
    assert sorted(placed) == [0, 1]

    def ready():
        t = g.metrics()
        util = by_gpu(t, "sluice_gpu_utilization_ratio")
        return t if util.get(0, (0,))[0] == 0.41 and util[0][1]["job"] == str(j["id"]) else None

    text = harness.wait_for(ready, what="scripted utilisation attributed to the job")
    promtool_check(text, tmp_path)
    util = by_gpu(text, "sluice_gpu_utilization_ratio")
    assert set(util) == {0, 1, 2, 3}
    assert util[0][0] == 0.41 and util[1][0] == 0.97 and util[2][0] == 0
    for i in (0, 1):
        assert util[i][1]["job"] == str(j["id"]) and util[i][1]["tenant"] == "bob"
        assert util[i][1]["node"] == "g1" and util[i][1]["model"] == "H100"
    assert util[0][1]["uuid"] == "GPU-aaaa-0000"
    for i in (2, 3):  # free GPUs: empty job and tenant
        assert util[i][1]["job"] == "" and util[i][1]["tenant"] == ""
    mem = by_gpu(text, "sluice_gpu_memory_used_bytes")
    assert mem[0][0] == 23 * GiB and mem[1][0] == 40 * GiB
    total = by_gpu(text, "sluice_gpu_memory_total_bytes")
    assert total[0][0] == 81559 * 1024 * 1024
    power = by_gpu(text, "sluice_gpu_power_watts")
    assert power[0][0] == 350.5 and set(power) == {0, 1}  # only where NVML has it
    assert by_gpu(text, "sluice_gpu_temperature_celsius")[1][0] == 55
    # No GPM on these GPUs: no GPM families.
    assert "sluice_gpu_sm_occupancy_ratio" not in text
    # A value changed in the script shows at a later scrape.
    g.script(SCRIPT.replace("util=41", "util=12"))
    harness.wait_for(lambda: by_gpu(g.metrics(), "sluice_gpu_utilization_ratio")[0][0] == 0.12,
                     what="the new reading")
    controller.request("DELETE", "/v1/jobs/%d" % j["id"], token=controller.admin_token)
    controller.wait_job(j["id"], "cancelled")
    harness.wait_for(lambda: by_gpu(g.metrics(), "sluice_gpu_utilization_ratio")[0][1]["job"] == "",
                     what="GPU 0 free again")


def test_gpm_families_where_supported(controller, nvml_agent, tmp_path):
    g = nvml_agent(count=2, script="0 util=100 gpm=1 gract=37.5 smocc=22\n1 util=50\n")
    text = harness.wait_for(lambda: (lambda t: t if "sluice_gpu_sm_occupancy_ratio{" in t else None)(
        g.metrics()), what="GPM series")
    promtool_check(text, tmp_path)
    occ = by_gpu(text, "sluice_gpu_sm_occupancy_ratio")
    act = by_gpu(text, "sluice_gpu_graphics_active_ratio")
    assert set(occ) == {0} and occ[0][0] == 0.22  # GPU 1 has no GPM: no series
    assert act[0][0] == 0.375
    assert by_gpu(text, "sluice_gpu_utilization_ratio")[0][0] == 1.0


def test_shared_gpu_lists_every_holder(controller, nvml_agent):
    g = nvml_agent(count=1)
    g.script("0 util=60\n")
    ja = controller.submit({"gpu_share": 0.5, "command": u.sh("sleep 60")}, tenant="alice")
    jb = controller.submit({"gpu_share": 0.5, "command": u.sh("sleep 60")}, tenant="bob")
    u.wait_running_pids(controller, ja["id"])
    u.wait_running_pids(controller, jb["id"])

    def both():
        util = by_gpu(g.metrics(), "sluice_gpu_utilization_ratio")
        return util if util[0][1]["job"].count(",") == 1 else None

    util = harness.wait_for(both, what="both holders on GPU 0")
    assert len(util) == 1  # one series per GPU
    assert util[0][1]["job"] == "%d,%d" % (ja["id"], jb["id"])
    assert util[0][1]["tenant"] == "alice,bob"
    with open(os.path.join(g.mapdir, "0")) as f:
        assert f.read() == "%d\n%d\n" % (ja["id"], jb["id"])
    for j in (ja, jb):
        controller.request("DELETE", "/v1/jobs/%d" % j["id"], token=controller.admin_token)


def test_no_utilisation_without_nvml(controller, tmp_path):
    port = harness.free_port()
    a = harness.Agent(controller, "plain", gpus=4,
                      extra_args=["--metrics-listen", "127.0.0.1:%d" % port,
                                  "--metrics-interval", "0.2"],
                      env={"LD_LIBRARY_PATH": str(tmp_path / "nowhere")})
    try:
        a.start()
        j = controller.submit({"gpus": 1, "command": u.sh("sleep 30")})
        u.wait_running_pids(controller, j["id"])
        time.sleep(0.5)  # several sampling periods: still nothing to export
        st, text = scrape(port)
        assert st == 200
        promtool_check(text, tmp_path)
        assert "sluice_gpu_" not in text
        assert 'sluice_agent_nvml_available{node="plain"} 0' in text
        controller.request("DELETE", "/v1/jobs/%d" % j["id"], token=controller.admin_token)
    finally:
        a.stop()


def test_job_mapping_files_follow_tasks(controller, nvml_agent, tmp_path):
    g = nvml_agent(count=4, gpus=4, name="m1", stale={"3": "999\n", "notes.txt": "kept"})
    # A stale file a previous agent left for a GPU no task holds goes; a
    # file that is not a GPU's stays.
    assert os.listdir(g.mapdir) == ["notes.txt"]
    os.unlink(os.path.join(g.mapdir, "notes.txt"))
    j1 = controller.submit({"gpus": 2, "command": u.sh("sleep 60")})
    u.wait_running_pids(controller, j1["id"])
    gpus1 = controller.job(j1["id"])["placement"][0]["gpus"]
    harness.wait_for(lambda: sorted(os.listdir(g.mapdir)) == sorted(str(i) for i in gpus1),
                     what="mapping files of job 1")
    for i in gpus1:
        with open(os.path.join(g.mapdir, str(i))) as f:
            assert f.read() == "%d\n" % j1["id"]
    j2 = controller.submit({"gpus": 1, "command": u.sh("sleep 60")})
    u.wait_running_pids(controller, j2["id"])
    (gpu2,) = controller.job(j2["id"])["placement"][0]["gpus"]
    harness.wait_for(lambda: os.path.exists(os.path.join(g.mapdir, str(gpu2))), what="job 2's file")
    controller.request("DELETE", "/v1/jobs/%d" % j1["id"], token=controller.admin_token)
    controller.wait_job(j1["id"], "cancelled")
    harness.wait_for(lambda: os.listdir(g.mapdir) == [str(gpu2)], what="job 1's files removed")
    # A restarted agent re-adopts job 2 and keeps (rewrites) its file.
    g.agent.kill9()
    os.unlink(os.path.join(g.mapdir, str(gpu2)))
    g.agent.start()
    harness.wait_for(lambda: os.listdir(g.mapdir) == [str(gpu2)], what="re-adopted job's file")
    with open(os.path.join(g.mapdir, str(gpu2))) as f:
        assert f.read() == "%d\n" % j2["id"]
    assert not [n for n in os.listdir(g.mapdir) if n.startswith(".")]
    controller.request("DELETE", "/v1/jobs/%d" % j2["id"], token=controller.admin_token)
    controller.wait_job(j2["id"], "cancelled")
    harness.wait_for(lambda: os.listdir(g.mapdir) == [], what="every file removed")


def test_hostile_metrics_clients_do_not_stall_launches(controller, nvml_agent):
    g = nvml_agent(count=8)
    g.script("* util=5 mem_used=1000 power_mw=1000 temp=40\n")
    harness.wait_for(lambda: "sluice_gpu_utilization_ratio{" in g.metrics(), what="readings")
    socks = []
    try:
        # Clients that send a request and never read the reply, a client
        # that trickles an endless header, one over the request limit, and
        # more connections than the exporter keeps.
        for _ in range(40):
            s = socket.create_connection(("127.0.0.1", g.port), timeout=10)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
            try:  # pipelined requests: the exporter answers one, then closes
                for _ in range(50):
                    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            except OSError:
                pass
            socks.append(s)
        slow = socket.create_connection(("127.0.0.1", g.port), timeout=10)
        slow.sendall(b"GET /metrics HTTP/1.1\r\nX-Slow: ")
        socks.append(slow)
        big = socket.create_connection(("127.0.0.1", g.port), timeout=10)
        big.sendall(b"GET /metrics HTTP/1.1\r\nX-Big: " + b"a" * 9000 + b"\r\n\r\n")
        assert big.recv(100).startswith(b"HTTP/1.1 431")
        big.close()
        for _ in range(40):
            try:
                socks.append(socket.create_connection(("127.0.0.1", g.port), timeout=10))
            except OSError:
                break
        # Launches go on meanwhile.
        for _ in range(3):
            j = controller.submit({"gpus": 1, "command": ["true"]})
            controller.wait_job(j["id"], "succeeded")
        assert g.agent.alive()
    finally:
        for s in socks:
            s.close()
    # And the endpoint serves again once they are gone.
    harness.wait_for(lambda: "sluice_gpu_utilization_ratio{" in g.metrics(), what="scrape after")


def test_metrics_flags_are_checked(controller):
    a = harness.Agent(controller, "bad", gpus=0, extra_args=["--metrics-interval", "0"])
    r = subprocess.run([a.binary] + a.args, capture_output=True, text=True, timeout=10)
    assert r.returncode == 2 and "--metrics-interval" in r.stderr
    a = harness.Agent(controller, "bad2", gpus=0, extra_args=["--metrics-listen", "nocolon"])
    r = subprocess.run([a.binary] + a.args, capture_output=True, text=True, timeout=10)
    assert r.returncode == 1 and "--metrics-listen" in r.stderr and "HOST:PORT" in r.stderr
