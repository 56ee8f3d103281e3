"""
test_placement_labels.py - node labels, selectors, label expressions,
taints, tolerations and dedicated pools against real daemons (sluiced, four
sluice-agent processes and the sluice CLI; docs/placement.md).

Nodes: a1 (gpu.class=a100-80g, zone=a, nvlink=yes), h1 (gpu.class=h100,
zone=b), t1 (zone=a, tainted maint=yes:NoSchedule) and s1 (zone=a, in the
pool `secure`, which the configuration marks dedicated to tenant alice).
Jobs come from `sluice submit` flags, a Sluice YAML file and a Kubernetes
manifest; where each one runs, or why it waits (`sluice show`), is checked.
"""

import json
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import harness  # noqa: E402
import e2e_util as u  # noqa: E402

POOLS = {"pools": ["default", {"name": "secure", "dedicated": True, "tenants": ["alice"]}]}


@pytest.fixture
def labelled(controller_factory, build_dir):
    if not os.access(os.path.join(build_dir, "sluice-agent"), os.X_OK) or \
            not os.access(os.path.join(build_dir, "sluice"), os.X_OK):
        pytest.skip("sluice-agent or sluice is not built")
    ctl = controller_factory(config_overrides=POOLS)
    specs = [("a1", None, "gpu.class=a100-80g,zone=a,nvlink=yes", None),
             ("h1", None, "gpu.class=h100,zone=b", None),
             ("t1", None, "zone=a", "maint=yes:NoSchedule"),
             ("s1", "secure", "zone=a", None)]
    agents = []
    try:
        for name, pool, labels, taints in specs:
            extra = ["--labels", labels] + (["--taints", taints] if taints else [])
            a = harness.Agent(ctl, name, gpus=4, pool=pool, extra_args=extra)
            agents.append(a)
            a.start()
        yield ctl
    finally:
        for a in agents:
            a.stop()


def submit(ctl, args, who="alice", ok=True):
    env = u.cli_env(ctl, token=ctl.token(who))
    r = u.sluice(["submit", "--json"] + args, env)
    if ok:
        assert r.returncode == 0, (args, r.stdout, r.stderr)
        return json.loads(r.stdout)["id"]
    return r


def node_of(ctl, jid, image=False):
    """The node of task 0 of job jid once it started. A job with an image
    fails at once on agents without a launcher (these have none): it was
    placed all the same, which is what these tests check."""
    def started():
        j = ctl.job(jid)
        return j if j["state"] != "pending" else None
    j = harness.wait_for(started, timeout=20.0, what="job %d to start" % jid)
    assert j["state"] == "running" or (image and j["state"] == "failed"), j
    return j["placement"][0]["node"]


def reason_of(ctl, jid):
    def waiting():
        j = ctl.job(jid)
        return j if j["state"] == "pending" and j.get("reason") else None
    harness.wait_for(waiting, timeout=20.0, what="job %d to wait with a reason" % jid)
    r = u.sluice(["show", str(jid)], u.cli_env(ctl, token=ctl.token("admin")))
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_selectors_and_constraints_from_flags_yaml_and_manifest(labelled, tmp_path):
    ctl = labelled
    cmd = ["--", "sleep", "60"]
    j = submit(ctl, ["--gpus", "1", "--node-selector", "gpu.class=a100-80g"] + cmd)
    assert node_of(ctl, j) == "a1"
    j = submit(ctl, ["--gpus", "1", "-C", "gpu.class in (h100)"] + cmd)
    assert node_of(ctl, j) == "h1"
    # Slurm's feature syntax: nvlink (a label key) or zone b: a1 or h1, never t1 or s1.
    j = submit(ctl, ["--gpus", "1", "--constraint", "nvlink|zone=b"] + cmd)
    assert node_of(ctl, j) in ("a1", "h1")
    j = submit(ctl, ["--gpus", "1", "--constraint", "zone=a&nvlink"] + cmd)
    assert node_of(ctl, j) == "a1"
    shown = u.sluice(["show", str(j)], u.cli_env(ctl, token=ctl.token("admin"))).stdout
    assert "constraint: zone=a&nvlink" in shown

    # A Sluice YAML spec.
    y = tmp_path / "job.yaml"
    y.write_text("gpus: 1\nnode_selector: [zone=b]\nconstraint: '!nvlink'\ncommand: [sleep, '60']\n")
    j = submit(ctl, ["-f", str(y)])
    assert node_of(ctl, j) == "h1"
    assert ctl.job(j)["node_selector"] == ["zone=b"]

    # Nobody has this label: the job waits and says why.
    j = submit(ctl, ["--gpus", "1", "--node-selector", "gpu.class=a100-40g"] + cmd)
    assert "no node has label gpu.class=a100-40g" in reason_of(ctl, j)
    j = submit(ctl, ["--gpus", "1", "-C", "zone in (c, d)"] + cmd)
    assert "no node has label zone in (c, d)" in reason_of(ctl, j)

    # A constraint that does not parse is refused, naming the field.
    r = submit(ctl, ["--gpus", "1", "-C", "zone=a &"] + cmd, ok=False)
    assert r.returncode == 1 and "constraint: cannot read a requirement at the end" in r.stdout, r
    r = submit(ctl, ["--gpus", "1", "--node-selector", "zone"] + cmd, ok=False)
    assert r.returncode == 1 and 'node_selector: \\"zone\\" is not key=value' in r.stdout, r


def test_manifest_constraints(labelled, tmp_path):
    ctl = labelled
    m = tmp_path / "job-k8s.yaml"
    m.write_text("""apiVersion: batch/v1
kind: Job
spec:
  template:
    spec:
      nodeSelector:
        zone: a
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
            - matchExpressions:
              - {key: gpu.class, operator: DoesNotExist}
      tolerations:
      - {key: maint, operator: Equal, value: "yes", effect: NoSchedule}
      restartPolicy: Never
      containers:
      - image: busybox
        command: [sleep, "60"]
        resources:
          limits: {nvidia.com/gpu: 1}
""")
    # zone=a without gpu.class: t1 (tolerated) or s1 (dedicated: not named): t1.
    j = submit(ctl, ["-f", str(m)])
    assert node_of(ctl, j, image=True) == "t1"
    job = ctl.job(j)
    assert job["node_selector"] == ["zone=a"]
    assert job["constraint"] == "!gpu.class"
    assert job["tolerations"] == ["maint=yes:NoSchedule"]
    bad = m.read_text().replace("requiredDuring", "preferredDuring")
    m.write_text(bad)
    r = submit(ctl, ["-f", str(m)], ok=False)
    assert r.returncode == 2 and "preferredDuringSchedulingIgnoredDuringExecution: not supported" \
        in r.stderr, r.stderr


def test_taints_tolerations_and_dedicated_pools(labelled):
    ctl = labelled
    cmd = ["--", "sleep", "60"]
    # zone=a without gpu.class: t1 (maint) and s1 (dedicated) are both tainted.
    j = submit(ctl, ["--gpus", "1", "-C", "zone=a & !gpu.class"] + cmd)
    why = reason_of(ctl, j)
    assert "tolerates no taint of pool default (maint=yes:NoSchedule)" in why, why
    j = submit(ctl, ["--gpus", "1", "-C", "zone=a & !gpu.class", "--toleration",
                     "maint=yes:NoSchedule"] + cmd)
    assert node_of(ctl, j) == "t1"
    # The dedicated pool: alice may name it and runs there; bob may not.
    j = submit(ctl, ["--gpus", "1", "--pool", "secure"] + cmd)
    assert node_of(ctl, j) == "s1"
    r = submit(ctl, ["--gpus", "1", "--pool", "secure"] + cmd, who="bob", ok=False)
    assert r.returncode == 1
    assert 'pool \\"secure\\" is dedicated to tenant alice' in r.stdout, r
    # Jobs that do not name it never go there, even with room nowhere else.
    ids = [submit(ctl, ["--gpus", "1", "-C", "zone=a"] + cmd, who="bob") for _ in range(2)]
    placed = [node_of(ctl, ids[0])]
    j2 = ctl.job(ids[1])
    if j2["state"] == "running":
        placed.append(j2["placement"][0]["node"])
    assert "s1" not in placed and "t1" not in placed
    # sluice nodes shows labels and taints.
    r = u.sluice(["nodes"], u.cli_env(ctl, token=ctl.token("admin")))
    assert r.returncode == 0
    lines = {ln.split()[0]: ln for ln in r.stdout.splitlines()[1:] if ln.strip()}
    assert "LABELS" in r.stdout and "TAINTS" in r.stdout
    assert "gpu.class=a100-80g,zone=a,nvlink=yes" in lines["a1"]
    assert "maint=yes:NoSchedule" in lines["t1"]
    assert "sluice.io/dedicated=secure:NoSchedule" in lines["s1"]
    nodes = {n["name"]: n for n in ctl.nodes()}
    assert nodes["t1"]["taints"] == "maint=yes:NoSchedule"
    assert nodes["h1"]["taints"] == ""


def test_agent_rejects_a_bad_taint(build_dir, tmp_path):
    exe = os.path.join(build_dir, "sluice-agent")
    if not os.access(exe, os.X_OK):
        pytest.skip("sluice-agent is not built")
    import subprocess
    r = subprocess.run([exe, "--controller", "127.0.0.1:1", "--token", "x", "--name", "n",
                        "--workdir", str(tmp_path), "--taints", "maint=yes"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2
    assert 'taints: "maint=yes" is not key[=value]:NoSchedule|PreferNoSchedule|NoExecute' in r.stderr


def test_constraints_survive_a_restart(labelled):
    """The store keeps the spec; recovery compiles the constraint again, so a
    waiting job keeps its reason and a new node that has the label takes it."""
    ctl = labelled
    j = submit(ctl, ["--gpus", "1", "--node-selector", "gpu.class=l40s", "--", "sleep", "60"])
    assert "no node has label gpu.class=l40s" in reason_of(ctl, j)
    ctl.restart()
    assert "no node has label gpu.class=l40s" in reason_of(ctl, j)
    a = harness.Agent(ctl, "l1", gpus=1, extra_args=["--labels", "gpu.class=l40s"])
    try:
        a.start()
        assert node_of(ctl, j) == "l1"
    finally:
        a.stop()
