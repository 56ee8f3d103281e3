"""
test_exporter_eff.py - each job's efficiency (docs/metrics-agent.md): the
agents' heartbeat usage summaries, the job JSON's efficiency object, the
job_eff table, the controller's per-job gauges while a job runs, and the
efficiency block of `sluice show`, with the fake NVML's scripted readings
(fixtures/fake_nvml.c) and, where this machine has them, real cgroup v1
controllers for CPU and memory.
"""

import os
import re
import sqlite3
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import harness  # noqa: E402
import e2e_util as u  # noqa: E402
from test_exporter import NvmlAgent, fake_nvml, promtool_check, scrape, series  # noqa: E402,F401

GiB = 1 << 30
PY = "/usr/bin/python3"


@pytest.fixture
def agents():
    made = []
    yield made
    for a in made:
        a.stop()


def waiting(go):
    return u.sh("while [ ! -e %s ]; do sleep 0.05; done" % go)


def show(controller, jid, tmp_path):
    env = u.cli_env(controller, token=controller.admin_token, tmpdir=tmp_path)
    r = u.sluice(["show", str(jid)], env)
    assert r.returncode == 0, r.stderr
    return r.stdout


def efficiency_block(text):
    return text.split("efficiency:\n", 1)[1] if "efficiency:\n" in text else None


# GPU 0 at 30% and GPU 1 at 52%: a task on both has a mean of 41% a
# reading and a peak of 52%; GPU memory peak 23 GiB of 81559 MiB (80 GiB).
SCRIPT = "0 util=30 mem_used=%d\n1 util=52 mem_used=%d\n" % (23 * GiB, 10 * GiB)


def test_show_efficiency_from_scripted_nvml(controller, tmp_path, fake_nvml, agents):
    g = NvmlAgent(controller, tmp_path, fake_nvml, count=2, script=SCRIPT)
    agents.append(g.agent)
    g.agent.start()
    go = tmp_path / "go"
    j = controller.submit({"gpus": 2, "command": waiting(go)}, tenant="bob")
    u.wait_running_pids(controller, j["id"])
    eff = harness.wait_for(lambda: (lambda e: e if e and e["samples"] >= 12 else None)(
        controller.job(j["id"])["efficiency"]), what="12 readings reported")
    assert eff["gpu_util_mean"] == 0.41 and eff["gpu_util_peak"] == 0.52
    assert eff["gpu_mem_peak"] == 23 * GiB and eff["gpu_mem_total"] == 81559 * 1024 * 1024
    assert eff["cpu_seconds"] is None and eff["mem_peak"] is None  # no cgroups: not measured
    # The controller's per-job gauges while the job runs.
    st, text = controller.request("GET", "/metrics", token=controller.admin_token)
    text = text if isinstance(text, str) else text.decode()
    promtool_check(text, tmp_path)
    util = series(text, "sluice_job_gpu_utilization_ratio")
    assert util == {frozenset({("job", str(j["id"])), ("tenant", "bob")}): 0.41}
    assert list(series(text, "sluice_job_gpu_memory_peak_bytes").values()) == [23 * GiB]
    block = efficiency_block(show(controller, j["id"], tmp_path))
    assert "GPUs:        2 GPUs at 41% mean utilisation (peak 52%)" in block, block
    assert "GPU memory:  peak 23 of 80 GiB each: consider --gpu-share 0.5" in block, block
    assert "CPU, memory: not measured" in block
    go.write_text("")
    controller.wait_job(j["id"], "succeeded")
    # Finished: gauges gone, figures kept (in memory, and in job_eff).
    st, text = controller.request("GET", "/metrics", token=controller.admin_token)
    text = text if isinstance(text, str) else text.decode()
    assert not series(text, "sluice_job_gpu_utilization_ratio")

    def row():
        db = sqlite3.connect(controller.db_path)
        try:
            return db.execute("SELECT gpu_util_mean, gpu_util_peak, gpu_mem_peak, gpu_mem_total,"
                              " cpu_seconds, mem_peak, samples FROM job_eff WHERE job = ?",
                              (j["id"],)).fetchone()
        finally:
            db.close()

    r = harness.wait_for(row, what="the job_eff row")
    assert r[:6] == (0.41, 0.52, 23 * GiB, 81559 * 1024 * 1024, None, None) and r[6] >= 12
    controller.restart()
    eff = controller.job(j["id"])["efficiency"]
    assert eff["gpu_util_mean"] == 0.41 and eff["samples"] == r[6]
    block = efficiency_block(show(controller, j["id"], tmp_path))
    assert "2 GPUs at 41% mean utilisation (peak 52%)" in block, block


def test_busy_gpus_get_no_share_advice(controller, tmp_path, fake_nvml, agents):
    g = NvmlAgent(controller, tmp_path, fake_nvml, count=1,
                  script="0 util=90 mem_used=%d\n" % (60 * GiB))
    agents.append(g.agent)
    g.agent.start()
    go = tmp_path / "go"
    j = controller.submit({"gpus": 1, "command": waiting(go)})
    u.wait_running_pids(controller, j["id"])
    harness.wait_for(lambda: (controller.job(j["id"])["efficiency"] or {}).get("samples", 0) >= 12,
                     what="readings")
    block = efficiency_block(show(controller, j["id"], tmp_path))
    assert "1 GPU at 90% mean utilisation (peak 90%)" in block, block
    assert "GPU memory:  peak 60 of 80 GiB each\n" in block, block
    go.write_text("")
    controller.wait_job(j["id"], "succeeded")


def test_show_says_when_a_node_has_no_nvml(controller, tmp_path, agents):
    a = harness.Agent(controller, "plain", gpus=2, extra_args=["--metrics-interval", "0.2",
                                                               "--heartbeat", "1"],
                      env={"LD_LIBRARY_PATH": str(tmp_path / "nowhere")})
    agents.append(a)
    a.start()
    go = tmp_path / "go"
    j = controller.submit({"gpus": 2, "command": waiting(go)})
    u.wait_running_pids(controller, j["id"])
    eff = harness.wait_for(lambda: controller.job(j["id"])["efficiency"], what="a usage report")
    assert eff["gpu_util_mean"] is None and eff["samples"] == 0
    assert eff["no_nvml_node"] == "plain"
    block = efficiency_block(show(controller, j["id"], tmp_path))
    assert "2 GPUs: no GPU utilisation data (no NVML on node plain)" in block, block
    assert "%" not in block.split("\n")[0]
    st, text = controller.request("GET", "/metrics", token=controller.admin_token)
    text = text if isinstance(text, str) else text.decode()
    assert not series(text, "sluice_job_gpu_utilization_ratio")
    go.write_text("")
    controller.wait_job(j["id"], "succeeded")


# ---- with cgroup v1 (CPU seconds, memory peak, per-task series) ----

@pytest.mark.skipif(not u.have_cgroup_v1(), reason="needs root and the cgroup v1 controllers")
def test_task_cgroup_series_and_cpu_efficiency(controller, tmp_path, fake_nvml, agents):
    mounts = u.v1_mounts()
    root = harness.unique_cgroup_root("exp")
    dirs = sorted({mounts[c] + root for c in u.CGROUP_V1})
    try:
        for d in dirs:
            os.makedirs(d)
        port = harness.free_port()
        script = tmp_path / "nvml.txt"
        script.write_text("* util=20 mem_used=%d\n" % GiB)
        a = harness.Agent(controller, "cg1", gpus=0, cgroup="v1", cgroup_root=root,
                          extra_args=["--metrics-listen", "127.0.0.1:%d" % port,
                                      "--metrics-interval", "0.2", "--heartbeat", "1"],
                          env={"LD_LIBRARY_PATH": fake_nvml, "FAKE_NVML_SCRIPT": str(script),
                               "FAKE_NVML_COUNT": "1"})
        agents.append(a)
        a.start()
        go = tmp_path / "go"
        # One CPU busy for about a second, 64 MiB touched, then waiting.
        burn = ("import os,time\nb=bytearray(64<<20)\nfor i in range(0,len(b),4096): b[i]=1\n"
                "t=time.process_time()\nwhile time.process_time()-t<1.0: pass\n"
                "while not os.path.exists(%r): time.sleep(0.05)\n" % str(go))
        j = controller.submit({"gpus": 1, "cpus": "2", "memory": "1Gi",
                               "command": [PY, "-c", burn]}, tenant="alice")
        u.wait_running_pids(controller, j["id"])

        def cpu_done():
            _, text = scrape(port)
            cpu = series(text, "sluice_task_cpu_seconds_total")
            return text if cpu and list(cpu.values())[0] >= 1.0 else None

        text = harness.wait_for(cpu_done, timeout=30, what="a CPU second in the task's series")
        promtool_check(text, tmp_path)
        labels = dict(list(series(text, "sluice_task_cpu_seconds_total"))[0])
        assert labels == {"node": "cg1", "job": str(j["id"]), "task": "0", "tenant": "alice"}
        peak = list(series(text, "sluice_task_memory_peak_bytes").values())[0]
        assert peak >= 64 << 20
        assert list(series(text, "sluice_task_oom_kills_total").values()) == [0]
        eff = harness.wait_for(lambda: (lambda e: e if e and (e["cpu_seconds"] or 0) >= 1.0 else None)(
            controller.job(j["id"])["efficiency"]), what="CPU seconds reported")
        assert eff["mem_peak"] >= 64 << 20
        block = efficiency_block(show(controller, j["id"], tmp_path))
        m = re.search(r"CPU:\s+(\d+)% of 2 CPUs x 1 task busy \((\d+) CPU seconds in", block)
        assert m, block
        assert re.search(r"memory:\s+peak \d+ MiB of 1\.0 GiB per task \(\d+%\)|"
                         r"memory:\s+peak 0\.\d of 1\.0 GiB per task \(\d+%\)", block), block
        go.write_text("")
        controller.wait_job(j["id"], "succeeded")
        _, text = scrape(port)
        assert "sluice_task_cpu_seconds_total{" not in text  # per task only while it runs
    finally:
        for a in agents:
            a.stop()
        for d in dirs:
            u.remove_cgroup_tree(d)
