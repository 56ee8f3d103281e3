"""
test_mps.py - the MPS limits a real sluice-agent gives a GPU-share task
(docs/mps.md), on GPUs found through a fake NVML library
(fixtures/fake_nvml.c: 8 H100 of 81559Mi unless told otherwise).

A share task's environment carries CUDA_MPS_ACTIVE_THREAD_PERCENTAGE (its
share in percent) and CUDA_MPS_PINNED_DEVICE_MEM_LIMIT ("0=<its GPU
memory>", device 0 because CUDA_VISIBLE_DEVICES shows it one GPU); a
whole-GPU task gets neither and sees only its own GPUs. Each task prints
its environment into its log, read back through the API.
"""

import os
import shutil
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import harness  # noqa: E402
import e2e_util as u  # noqa: E402

MPS_VARS = ("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT")


@pytest.fixture
def nvml_agent(controller, tmp_path, monkeypatch, build_dir):
    """A real agent whose GPUs come from the fake NVML library."""
    if not os.access(os.path.join(build_dir, "sluice-agent"), os.X_OK):
        pytest.skip("sluice-agent is not built")
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler to build the fake NVML library")
    d = tmp_path / "nvml"
    d.mkdir()
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(d / "libnvidia-ml.so.1"),
                    os.path.join(u.FIXTURES, "fake_nvml.c")], check=True, timeout=60)
    monkeypatch.setenv("LD_LIBRARY_PATH", str(d))
    a = harness.Agent(controller, "g1", gpus=0)
    try:
        a.start()
        assert controller.node("g1")["gpus"] == 8
        yield a
    finally:
        a.stop()


def _env_of(ctl, spec):
    j = ctl.submit(dict(spec, command=u.sh("env")))
    done = ctl.wait_job(j["id"], "succeeded")
    p = done["placement"][0]
    return u.env_lines(u.job_log(ctl, j["id"])), p


@pytest.mark.parametrize("share,gpu_memory,pct,limit", [
    ("0.25", "10Gi", "25", "0=10G"),
    ("0.5", "1536Mi", "50", "0=1536M"),
    ("125m", "1Gi", "12", "0=1G"),      # 12.5% rounds down: never more than the share
    ("0.005", None, "1", None),         # at least 1%; no GPU memory asked, no memory limit
])
def test_share_task_gets_mps_limits(controller, nvml_agent, share, gpu_memory, pct, limit):
    spec = {"gpu_share": share, "cpus": "1", "memory": "1Gi"}
    if gpu_memory:
        spec["gpu_memory"] = gpu_memory
    env, p = _env_of(controller, spec)
    assert len(p["gpus"]) == 1, p
    assert env["CUDA_VISIBLE_DEVICES"] == str(p["gpus"][0]), env
    assert env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] == pct, env
    if limit:
        assert env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] == limit, env
    else:
        assert "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT" not in env, env


def test_share_task_cannot_raise_its_own_limits(controller, nvml_agent):
    env, _ = _env_of(controller, {"gpu_share": "0.25", "gpu_memory": "2Gi",
                                  "env": {"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "100",
                                          "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": "0=80G"}})
    assert env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] == "25", env
    assert env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] == "0=2G", env


@pytest.mark.parametrize("gpus", [1, 3])
def test_whole_gpu_task_gets_no_mps_limits_and_sees_only_its_gpus(controller, nvml_agent, gpus):
    # The placement says which GPUs the job got; the task sees exactly those.
    env, p = _env_of(controller, {"gpus": gpus, "cpus": "1", "memory": "1Gi"})
    assert len(p["gpus"]) == gpus, p
    assert env["CUDA_VISIBLE_DEVICES"] == ",".join(str(g) for g in p["gpus"]), env
    for k in MPS_VARS:
        assert k not in env, (k, env)
    assert env["SLUICE_GPU_MILLI"] == "1000", env


def test_task_without_gpus_gets_no_mps_limits(controller, nvml_agent):
    env, p = _env_of(controller, {"cpus": "1", "memory": "1Gi"})
    assert p["gpus"] == [] and env["CUDA_VISIBLE_DEVICES"] == "", (p, env)
    for k in MPS_VARS:
        assert k not in env, (k, env)
