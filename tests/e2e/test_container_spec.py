"""
test_container_spec.py - an image job's container fields between the API
and the agent protocol, without a container runtime (docs/containers.md;
the runtime's own tests are test_containers.py): the controller's
container_mounts, the launch's mounts, shm_size and workdir, and the
config's refusals. Real sluiced, scripted agent (harness.FakeAgent).
"""

import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import harness  # noqa: E402


def test_launch_carries_the_container_fields_only_when_set(controller_factory, fake_agent):
    ctl = controller_factory(config_overrides={"container_mounts": ["/datasets", "/scratch/"]})
    fa = fake_agent("n1", ctl=ctl, gpus=0)
    jid = ctl.submit({"image": "nvcr.io/megatron", "command": ["x"],
                      "mounts": ["/datasets/imagenet:/data:ro", "/scratch:/scratch"],
                      "shm_size": "8Gi", "workdir": "/workspace"})["id"]
    launch = fa.wait_message("launch", job=jid)[0]
    assert launch["image"] == "nvcr.io/megatron"
    assert launch["mounts"] == ["/datasets/imagenet:/data:ro", "/scratch:/scratch"], launch
    assert launch["shm_size"] == 8 << 30 and launch["workdir"] == "/workspace", launch
    j = ctl.job(jid)
    assert j["mounts"] == ["/datasets/imagenet:/data:ro", "/scratch:/scratch"]
    assert j["shm_size"] == "8Gi" and j["workdir"] == "/workspace"
    plain = ctl.submit({"image": "nvcr.io/megatron"})["id"]
    launch = fa.wait_message("launch", job=plain)[0]
    assert not ({"mounts", "shm_size", "workdir"} & set(launch)), launch
    # A prefix matches at a '/' only: /datasets2 is not under /datasets.
    st, body = ctl.request("POST", "/v1/jobs", token=ctl.token("alice"), body={
        "image": "i", "mounts": ["/datasets2:/d"]})
    assert st == 400 and body["error"]["field"] == "mounts", body
    assert body["error"]["message"] == (
        "mounts: /datasets2 is not under a path the cluster allows containers to mount "
        "(container_mounts: /datasets, /scratch/)"), body


def test_no_container_mounts_allows_none(controller):
    st, body = controller.request("POST", "/v1/jobs", token=controller.token("alice"), body={
        "image": "i", "mounts": ["/data:/data"]})
    assert st == 400 and "(container_mounts: none)" in body["error"]["message"], body


@pytest.mark.parametrize("text,msg", [
    ("container_mounts: /data\n", "container_mounts must be a sequence of absolute paths"),
    ("container_mounts: [data]\n", "container_mounts[]: must be an absolute path without .."),
    ("container_mounts: [/data/../etc]\n", "container_mounts[]: must be an absolute path"),
])
def test_bad_container_mounts_are_refused_naming_the_key(tmp_path, build_dir, text, msg):
    exe = os.path.join(build_dir, "sluiced")
    if not os.access(exe, os.X_OK):
        pytest.skip("sluiced is not built")
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(text)
    r = subprocess.run([exe, "--config", str(cfg), "--state", str(tmp_path / "s.db"), "--init",
                        "--listen", "127.0.0.1:%d" % harness.free_port(),
                        "--agent-listen", "127.0.0.1:%d" % harness.free_port()],
                       capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    out = r.stdout + r.stderr
    assert r.returncode == 2 and "bad.yaml:" in out and msg in out, (r.returncode, out)


def test_agent_container_flags_are_checked_at_start_up(build_dir, tmp_path):
    exe = os.path.join(build_dir, "sluice-agent")
    if not os.access(exe, os.X_OK):
        pytest.skip("sluice-agent is not built")
    r = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=10)
    for flag in ("--runtime", "--image-store", "--image-pull", "--cdi-dirs"):
        assert flag in r.stdout, flag
    base = ["--controller", "127.0.0.1:1", "--token", "t", "--workdir", str(tmp_path / "w")]
    for args, word in [(["--runtime", "runc"], "--runtime: runc is not an executable"),
                       (["--runtime", "/bin/true", "--launcher", "x {image}"],
                        "--runtime and --launcher"),
                       (["--runtime", "/bin/true", "--image-pull", "sometimes"],
                        "--image-pull: \"sometimes\" is not never, if-not-present or always"),
                       (["--runtime", "/bin/true", "--image-store", "store"],
                        "--image-store: store is not an absolute path")]:
        env = dict(os.environ)
        env.pop("SLUICE_CLUSTER_TOKEN", None)
        r = subprocess.run([exe] + base + args, capture_output=True, text=True, timeout=10,
                           env=env)
        assert r.returncode == 2, (args, r.returncode, r.stderr)
        assert word in r.stderr, (args, r.stderr)
