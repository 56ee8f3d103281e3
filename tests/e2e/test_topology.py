"""
test_topology.py - topology-aware gangs with real daemons (docs/placement.md,
"Topology"): agents declare `--topology BLOCK/RACK`, which `sluice nodes`
and GET /v1/nodes show; a gang that needs two nodes lands in the one rack
that holds it (ranks by group, MASTER_ADDR the node of rank 0); a job that
requires a rack waits, with a reason that says so, until a rack can hold
it; a Kubernetes manifest's Kueue annotation requires a block.

Tasks that must stay running wait for a file the test creates, so that no
assertion depends on timing.
"""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import harness  # noqa: E402
import e2e_util as u  # noqa: E402


@pytest.fixture
def topo_cluster(controller_factory, build_dir):
    """topo_cluster({name: path}, rec=None) -> (controller, start(name, path));
    agents of 8 GPUs each, stopped at teardown before the controller."""
    if not os.access(os.path.join(build_dir, "sluice"), os.X_OK):
        pytest.skip("sluice is not built")
    agents = []
    state = {}

    def start(name, path):
        extra = ["--topology", path] + state["extra"]
        a = harness.Agent(state["ctl"], name, gpus=8, cpus="64", memory="512Gi",
                          extra_args=extra)
        agents.append(a)
        a.start()
        return a

    def make(layout, rec=None):
        state["ctl"] = controller_factory()
        state["extra"] = u.launcher_args(str(rec)) if rec else []
        for name, path in layout.items():
            start(name, path)
        return state["ctl"], start

    yield make
    for a in agents:
        a.stop()


def wait_cmd(path):
    return u.sh("while [ ! -e %s ]; do sleep 0.1; done" % path)


def test_gang_lands_in_one_rack_and_nodes_show_topology(topo_cluster, tmp_path):
    rec = tmp_path / "rec"
    # Only rack b1/r2 has two nodes; n2 and n4 are not neighbours by name.
    ctl, _ = topo_cluster({"n1": "b1/r1", "n2": "b1/r2", "n3": "b2/r3", "n4": "b1/r2"}, rec=rec)
    env = u.cli_env(ctl, ctl.token("alice"), tmpdir=tmp_path)
    nodes = {n["name"]: n for n in ctl.nodes()}
    assert nodes["n2"]["topology"] == "b1/r2" and nodes["n3"]["topology"] == "b2/r3"
    r = u.sluice(["nodes"], env)
    assert r.returncode == 0, r.stderr
    lines = {ln.split()[0]: ln for ln in r.stdout.splitlines()[1:] if ln.strip()}
    assert "TOPOLOGY" in r.stdout.splitlines()[0]
    assert lines["n1"].rstrip().endswith("b1/r1") and lines["n4"].rstrip().endswith("b1/r2")

    # An image: the recording launcher writes each task's environment.
    job = ctl.submit({"tasks": 2, "gpus": 8, "image": "trainer"})
    done = ctl.wait_job(job["id"], "succeeded", timeout=30)
    pl = sorted(done["placement"], key=lambda p: p["task"])
    assert {p["node"] for p in pl} == {"n2", "n4"}, pl
    recs = [u.read_record(str(rec / ("launch-%d-%d.txt" % (job["id"], t)))) for t in range(2)]
    assert [r["RANK"] for r in recs] == ["0", "1"]
    assert recs[0]["node"] == pl[0]["node"]
    assert recs[0]["MASTER_ADDR"] == recs[1]["MASTER_ADDR"]


def test_required_rack_waits_with_a_reason_until_a_rack_holds_it(topo_cluster, tmp_path):
    ctl, start = topo_cluster({"n1": "b1/r1", "n2": "b1/r2", "n3": "b2/r3"})
    env = u.cli_env(ctl, ctl.token("alice"), tmpdir=tmp_path)
    spec = tmp_path / "job.yaml"
    spec.write_text("tasks: 2\ngpus: 8\ncommand: 'true'\ntopology: {required: rack}\n")
    job = u.sluice_json(["submit", "-f", str(spec)], env)
    free = ctl.submit({"tasks": 2, "gpus": 8, "command": ["true"]})
    ctl.wait_job(free["id"], "succeeded", timeout=30)  # unconstrained, it spreads
    j = ctl.job(job["id"])
    assert j["state"] == "pending", j
    assert "one rack" in j["reason"] and "required" in j["reason"], j["reason"]
    r = u.sluice(["show", str(job["id"])], env)
    assert j["reason"] in r.stdout
    start("n4", "b2/r3")  # now rack b2/r3 holds two nodes
    done = ctl.wait_job(job["id"], "succeeded", timeout=30)
    assert {p["node"] for p in done["placement"]} == {"n3", "n4"}


KUEUE = """apiVersion: batch/v1
kind: Job
metadata:
  name: trainer
spec:
  parallelism: 3
  template:
    metadata:
      annotations:
        kueue.x-k8s.io/podset-required-topology: %s
    spec:
      containers:
      - name: trainer
        image: busybox
        command: ["true"]
        resources:
          limits:
            nvidia.com/gpu: 8
            cpu: 1
            memory: 1Gi
"""


def test_kueue_required_topology_annotation_keeps_a_gang_in_one_block(topo_cluster, tmp_path):
    # Four free nodes, two per block: three tasks fit the cluster, no block.
    ctl, start = topo_cluster({"n1": "b1/r1", "n2": "b1/r2", "n3": "b2/r3", "n4": "b2/r3"},
                              rec=tmp_path / "rec")
    env = u.cli_env(ctl, ctl.token("alice"), tmpdir=tmp_path)
    man = tmp_path / "job.yaml"
    man.write_text(KUEUE % "cloud.google.com/gce-topology-block")
    job = u.sluice_json(["submit", "-f", str(man)], env)
    assert ctl.job(job["id"])["topology_required"] == "block"
    harness.wait_for(lambda: ctl.job(job["id"])["reason"], what="a reason")
    j = ctl.job(job["id"])
    assert j["state"] == "pending" and "one block" in j["reason"], j
    start("n5", "b1/r1")
    done = ctl.wait_job(job["id"], "succeeded", timeout=30)
    pl = sorted(done["placement"], key=lambda p: p["task"])
    assert {p["node"] for p in pl} == {"n1", "n2", "n5"}
    # Ranks by group: rack b1/r1's two nodes hold ranks 0 and 1.
    assert {pl[0]["node"], pl[1]["node"]} == {"n1", "n5"} and pl[2]["node"] == "n2"
    man.write_text(KUEUE % "example.com/zone")
    r = u.sluice(["submit", "-f", str(man)], env)
    assert r.returncode != 0
    assert "kueue.x-k8s.io/podset-required-topology" in r.stderr
    assert "example.com/zone" in r.stderr


def test_agent_refuses_a_bad_topology_path(build_dir, tmp_path):
    import subprocess
    agent = os.path.join(build_dir, "sluice-agent")
    for bad in ("b1//r2", "/r2", "b1/r2,x=y", "b1=r2"):
        p = subprocess.run([agent, "--controller", "127.0.0.1:1", "--token", "t",
                            "--workdir", str(tmp_path), "--topology", bad],
                           capture_output=True, text=True, timeout=30)
        assert p.returncode == 2, (bad, p.returncode, p.stderr)
        assert "--topology" in p.stderr and bad in p.stderr, p.stderr
    p = subprocess.run([agent, "--controller", "127.0.0.1:1", "--token", "t",
                        "--workdir", str(tmp_path), "--topology", "b1/r2",
                        "--labels", "topology=x"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 2 and "not both" in p.stderr, p.stderr
