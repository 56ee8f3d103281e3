"""
test_cluster.py - several real sluice-agents (declared GPUs, distinct names
and work directories on one machine) under one sluiced: the seed's Megatron
manifest on exactly 32 GPUs, DRF between two tenants, cancel, a gang that
cannot fit, a controller kill -9, and agents killed under running jobs.

Tasks that must stay running wait for a file the test creates, so that no
assertion depends on timing.
"""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import harness  # noqa: E402
import e2e_util as u  # noqa: E402

MEGATRON = os.path.join(u.REPO, "examples", "megatron-3b.yaml")


def wait_cmd(path, then="true"):
    return u.sh("while [ ! -e %s ]; do sleep 0.1; done; %s" % (path, then))


@pytest.fixture
def make_cluster(controller_factory):
    """make_cluster(n, config_overrides=None, tenants=None, **agent_kw)
    -> (controller, [Agent]); agents stopped at teardown, before the controller."""
    agents = []

    def make(n, config_overrides=None, tenants=None, **kw):
        ctl = controller_factory(config_overrides=config_overrides, tenants=tenants)
        return ctl, u.start_agents(ctl, n, agents, **kw)

    yield make
    for a in agents:
        a.stop()


def test_megatron_manifest_runs_on_exactly_32_gpus(make_cluster, cli_bin_or_skip, tmp_path):
    rec = tmp_path / "rec"
    ctl, agents = make_cluster(5, gpus=8, cpus="64", memory="512Gi",
                               extra_args=u.launcher_args(str(rec)))
    env = u.cli_env(ctl, ctl.token("alice"), tmpdir=tmp_path)
    job = u.sluice_json(["submit", "-f", MEGATRON], env)
    done = ctl.wait_job(job["id"], "succeeded", timeout=30)
    pl = done["placement"]
    assert len(pl) == 8
    used = [(p["node"], g) for p in pl for g in p["gpus"]]
    assert len(used) == 32 and len(set(used)) == 32
    records = [u.read_record(str(rec / ("launch-%d-%d.txt" % (job["id"], t)))) for t in range(8)]
    assert sorted(int(r["RANK"]) for r in records) == list(range(8))
    assert {r["WORLD_SIZE"] for r in records} == {"8"}
    assert len({(r["MASTER_ADDR"], r["MASTER_PORT"]) for r in records}) == 1
    by_task = {p["task"]: p for p in pl}
    per_node = {}
    for r in records:
        p = by_task[int(r["task"])]
        assert r["image"] == "nvcr.io/megatron" and r["arg"] == []
        assert r["RANK"] == r["task"] == r["SLUICE_TASK_INDEX"]
        assert r["node"] == p["node"]
        assert r["CUDA_VISIBLE_DEVICES"] == ",".join(str(g) for g in p["gpus"])
        assert len(r["CUDA_VISIBLE_DEVICES"].split(",")) == 4
        per_node.setdefault(r["node"], []).append(int(r["LOCAL_RANK"]))
    for node, ranks in per_node.items():
        assert sorted(ranks) == list(range(len(ranks))), (node, ranks)
    assert sum(len(v) for v in per_node.values()) == 8


@pytest.fixture
def cli_bin_or_skip(build_dir):
    if not os.access(os.path.join(build_dir, "sluice"), os.X_OK):
        pytest.skip("sluice is not built")


def test_two_tenants_share_by_drf(make_cluster, tmp_path):
    tenants = [{"name": "alice", "weight": 1}, {"name": "bob", "weight": 1},
               {"name": "carol", "weight": 1}]
    ctl, _ = make_cluster(2, tenants=tenants, gpus=4)
    block, release = tmp_path / "block", tmp_path / "release"
    blocker = ctl.submit({"tasks": 2, "gpus": 4, "command": wait_cmd(block)}, tenant="carol")
    u.wait_running_pids(ctl, blocker["id"], n=2)
    ids = {"alice": [], "bob": []}
    for i in range(8):
        for t in ("alice", "bob"):
            ids[t].append(ctl.submit({"gpus": 1, "command": wait_cmd(release)}, tenant=t)["id"])
    assert all(ctl.job(j)["state"] == "pending" for t in ids for j in ids[t])
    block.write_text("")  # all 8 GPUs free up at once
    ctl.wait_job(blocker["id"], "succeeded")

    def running():
        r = {t: sum(1 for j in ids[t] if ctl.job(j)["state"] == "running") for t in ids}
        return r if sum(r.values()) == 8 else None

    shares = harness.wait_for(running, what="8 GPUs busy")
    assert shares == {"alice": 4, "bob": 4}
    st, body = ctl.request("GET", "/v1/tenants", token=ctl.admin_token)
    ds = {t["name"]: t["dominant_share"] for t in body["tenants"]}
    assert ds["alice"] == pytest.approx(ds["bob"])
    release.write_text("")
    for t in ids:
        for j in ids[t]:
            ctl.wait_job(j, "succeeded")


def test_cancel_a_running_gang_frees_its_gpus(make_cluster, tmp_path):
    ctl, agents = make_cluster(2, gpus=4)
    gang = ctl.submit({"tasks": 2, "gpus": 4, "command": ["sleep", "1000"]})
    pids = u.wait_running_pids(ctl, gang["id"], n=2)
    assert {p["node"] for p in ctl.job(gang["id"])["placement"]} == {"n1", "n2"}
    nxt = ctl.submit({"tasks": 2, "gpus": 4, "command": ["true"]})
    assert ctl.job(nxt["id"])["state"] == "pending"
    env = u.cli_env(ctl, ctl.token("alice"), tmpdir=tmp_path)
    r = u.sluice(["cancel", str(gang["id"])], env)
    assert r.returncode == 0, r.stderr
    for pid in pids:
        harness.wait_for(lambda: not u.pid_alive(pid), what="task %d gone" % pid)
    ctl.wait_job(nxt["id"], "succeeded")
    assert ctl.job(gang["id"])["state"] == "cancelled"
    harness.wait_for(lambda: all(n["free"]["gpus"] == 4 for n in ctl.nodes()), what="GPUs free")


def test_gang_that_does_not_fit_waits_with_a_reason(make_cluster, tmp_path):
    ctl, _ = make_cluster(2, gpus=4)
    too_wide = ctl.submit({"tasks": 1, "gpus": 8, "command": ["true"]})
    too_many = ctl.submit({"tasks": 3, "gpus": 4, "command": ["true"]})
    small = ctl.submit({"tasks": 2, "gpus": 2, "command": ["true"]})
    ctl.wait_job(small["id"], "succeeded")  # the big ones do not block it
    for jid in (too_wide["id"], too_many["id"]):
        j = ctl.job(jid)
        assert j["state"] == "pending" and j["reason"], j
        assert "GPU" in j["reason"], j["reason"]
    env = u.cli_env(ctl, ctl.token("alice"), tmpdir=tmp_path)
    r = u.sluice(["show", str(too_wide["id"])], env)
    assert "waiting:    " + ctl.job(too_wide["id"])["reason"] in r.stdout
    r = u.sluice(["queue"], env)
    assert ctl.job(too_many["id"])["reason"] in r.stdout


def test_controller_kill9_and_restart_loses_nothing(make_cluster, tmp_path):
    ctl, _ = make_cluster(2, gpus=2)
    release, starts = tmp_path / "release", tmp_path / "starts"
    done = ctl.submit({"command": ["true"]})
    ctl.wait_job(done["id"], "succeeded")
    ids = [ctl.submit({"gpus": 1, "command": u.sh(
        "echo $SLUICE_JOB_ID >> %s; while [ ! -e %s ]; do sleep 0.1; done" % (starts, release))})["id"]
        for _ in range(6)]
    harness.wait_for(lambda: sum(ctl.job(j)["state"] == "running" and
                                 all(p.get("pid") for p in ctl.job(j)["placement"]) for j in ids) == 4,
                     what="4 jobs running")
    before = {j: ctl.job(j) for j in ids + [done["id"]]}
    ctl.kill9()
    ctl.start()
    ctl.wait_node("n1")
    ctl.wait_node("n2")
    for j, b in before.items():
        a = ctl.job(j)
        assert a["state"] == b["state"], (j, b["state"], a["state"])
        if b["state"] == "running":
            assert [p["pid"] for p in a["placement"]] == [p["pid"] for p in b["placement"]]
            assert u.pid_alive(a["placement"][0]["pid"])
    release.write_text("")
    for j in ids:
        ctl.wait_job(j, "succeeded")
    assert sorted(int(x) for x in starts.read_text().split()) == sorted(ids)  # each ran once


def test_agent_killed_its_jobs_requeued_or_failed(make_cluster, tmp_path):
    ctl, agents = make_cluster(3, config_overrides={"node_timeout": 3, "heartbeat": 1}, gpus=1,
                               extra_args=["--heartbeat", "1"])
    by_name = {a.name: a for a in agents}
    release = tmp_path / "release"
    orphans = []
    try:
        rq = ctl.submit({"gpus": 1, "command": wait_cmd(release), "on_node_failure": "requeue"})
        fl = ctl.submit({"gpus": 1, "command": wait_cmd(release), "on_node_failure": "fail"})
        (rq_pid,) = u.wait_running_pids(ctl, rq["id"])
        (fl_pid,) = u.wait_running_pids(ctl, fl["id"])
        rq_node = ctl.job(rq["id"])["placement"][0]["node"]
        fl_node = ctl.job(fl["id"])["placement"][0]["node"]
        assert rq_node != fl_node
        by_name[rq_node].kill9()
        orphans.append(rq_pid)
        ctl.wait_node(rq_node, "down")

        def moved():
            j = ctl.job(rq["id"])
            pl = j["placement"]
            return j if j["state"] == "running" and pl and pl[0]["node"] != rq_node \
                and pl[0].get("pid") else None

        j = harness.wait_for(moved, what="requeued job running elsewhere")
        assert j["placement"][0]["node"] != fl_node
        by_name[fl_node].kill9()
        orphans.append(fl_pid)
        ctl.wait_job(fl["id"], "failed")
        release.write_text("")
        ctl.wait_job(rq["id"], "succeeded")
    finally:
        release.write_text("")
        for pid in orphans:
            u.kill_pid_group(pid)
