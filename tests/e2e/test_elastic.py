"""
test_elastic.py - elastic jobs with real daemons (issue 11; docs/elastic.md).

An elastic job (min_tasks < tasks) starts at the size that fits, grows when
an agent joins (its new tasks run on the new node, with WORLD_SIZE and
SLUICE_JOB_SIZE giving the size at their launch), shrinks (highest ranks
first, with its class's signal and grace; the job keeps running) when a
higher-priority job needs the room, and grows again once that job is done.
The size, its history and the shrink are visible in the API, in GET
/v1/jobs/{id}/size and in `sluice show`. Every wait polls with a deadline;
nothing depends on elapsed time.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import harness  # noqa: E402
import e2e_util as u  # noqa: E402

CLASSES = {"priority_classes": [
    {"name": "elastic", "value": 10, "grace": 5},
    {"name": "urgent", "value": 1000, "may_preempt": True, "tenants": ["alice", "bob"]},
]}


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return ""


def size(ctl, jid):
    st, body = ctl.request("GET", "/v1/jobs/%d/size" % jid, token=ctl.token("alice"))
    assert st == 200, (st, body)
    return body


def test_elastic_grows_on_join_shrinks_for_priority_and_grows_back(controller_factory, tmp_path):
    ctl = controller_factory(config_overrides=CLASSES)
    agents = [harness.Agent(ctl, "n1", gpus=2)]
    agents[0].start()
    try:
        out = tmp_path / "elastic.out"
        script = ("trap 'echo \"term $RANK\" >> %s; exit 0' TERM; "
                  "echo \"start $RANK $WORLD_SIZE $SLUICE_JOB_SIZE $SLUICE_NODE\" >> %s; "
                  "while true; do sleep 0.05; done" % (out, out))
        e = ctl.submit({"tasks": 4, "min_tasks": 2, "gpus": 1, "priority_class": "elastic",
                        "command": ["sh", "-c", script]})
        ctl.wait_job(e["id"], "running")
        harness.wait_for(lambda: read(out).count("start") == 2, what="two tasks")
        assert "start 0 2 2 n1" in read(out) and "start 1 2 2 n1" in read(out)
        s = size(ctl, e["id"])
        assert s["size"] == 2 and s["min_tasks"] == 2 and s["tasks"] == 4, s

        # An agent joins: the job grows onto it.
        agents.append(harness.Agent(ctl, "n2", gpus=2))
        agents[1].start()
        harness.wait_for(lambda: size(ctl, e["id"])["size"] == 4, what="grown to 4")
        harness.wait_for(lambda: "start 2 4 4 n2" in read(out) and "start 3 4 4 n2" in read(out),
                         what="ranks 2 and 3 on n2")
        j = ctl.job(e["id"])
        assert [p["node"] for p in j["placement"]] == ["n1", "n1", "n2", "n2"]
        assert j["size"] == 4 and j["size_history"][-1]["size"] == 4, j["size_history"]
        g1 = size(ctl, e["id"])["generation"]

        # A higher-priority job that needs a whole node: the highest ranks stop.
        go = tmp_path / "go"
        urg = ctl.submit({"gpus": 2, "priority_class": "urgent",
                          "command": ["sh", "-c", "while [ ! -e %s ]; do sleep 0.05; done" % go]},
                         tenant="bob")
        r = ctl.wait_job(urg["id"], "running", timeout=30)
        assert r["placement"][0]["node"] == "n2"
        harness.wait_for(lambda: "term 3" in read(out) and "term 2" in read(out), what="ranks 3, 2 stopped")
        assert "term 0" not in read(out) and "term 1" not in read(out)
        harness.wait_for(lambda: size(ctl, e["id"])["size"] == 2, what="shrunk to 2")
        j = ctl.job(e["id"])
        assert j["state"] == "running" and j["requeues"] == 0
        assert [p["node"] for p in j["placement"]] == ["n1", "n1"]
        p = j["preemptions"]
        assert len(p) == 1 and p[0]["kind"] == "shrink" and p[0]["by_job"] == urg["id"], p
        assert p[0]["tasks"] == 2 and p[0]["cause"] == "priority", p
        assert size(ctl, e["id"])["generation"] > g1
        show = u.sluice(["show", str(e["id"])], u.cli_env(ctl, ctl.token("alice"), tmpdir=tmp_path))
        assert show.returncode == 0 and "size:       2 of 2..4 tasks" in show.stdout, show.stdout
        assert "shrink (priority) for job %d" % urg["id"] in show.stdout, show.stdout

        # The preemptor is done: the job grows back.
        go.write_text("")
        ctl.wait_job(urg["id"], "succeeded", timeout=30)
        harness.wait_for(lambda: size(ctl, e["id"])["size"] == 4, timeout=30, what="grown back to 4")
        harness.wait_for(lambda: read(out).count("start 2 4 4 n2") == 2, what="rank 2 again")
        assert ctl.job(e["id"])["state"] == "running"
        ctl.request("DELETE", "/v1/jobs/%d" % e["id"], token=ctl.admin_token)
        ctl.wait_job(e["id"], "cancelled", timeout=30)
    finally:
        for a in agents:
            a.stop()


def test_shrink_survives_controller_kill9_during_grace(controller_factory, tmp_path):
    """sluiced killed while a shrink's ranks are in their grace: after the
    restart those ranks are still the ones stopping, so their ends (even a
    non-zero exit) fail nothing, the job keeps running at its new size and
    the job the shrink was for starts."""
    ctl = controller_factory(config_overrides={"priority_classes": [
        {"name": "elastic", "value": 10, "grace": 120},
        {"name": "urgent", "value": 1000, "may_preempt": True, "tenants": ["alice", "bob"]}]})
    agents = [harness.Agent(ctl, "n1", gpus=2), harness.Agent(ctl, "n2", gpus=2)]
    for a in agents:
        a.start()
    try:
        out = tmp_path / "elastic.out"
        release = tmp_path / "release"
        # A stopped rank says so, then keeps running (inside its grace) until
        # the test releases it, and exits 3.
        script = ("trap 'echo \"term $RANK\" >> %s; while [ ! -e %s ]; do sleep 0.05; done; exit 3' TERM; "
                  "echo \"start $RANK\" >> %s; while true; do sleep 0.05; done" % (out, release, out))
        e = ctl.submit({"tasks": 4, "min_tasks": 2, "gpus": 1, "priority_class": "elastic",
                        "command": ["sh", "-c", script]})
        ctl.wait_job(e["id"], "running")
        harness.wait_for(lambda: read(out).count("start") == 4, what="four ranks")
        urg = ctl.submit({"gpus": 2, "priority_class": "urgent", "command": ["sleep", "60"]},
                         tenant="bob")
        harness.wait_for(lambda: "term 2" in read(out) and "term 3" in read(out), what="ranks 2, 3 stopping")
        assert ctl.job(urg["id"])["state"] == "pending"

        ctl.kill9()
        ctl.start()
        for a in agents:
            ctl.wait_node(a.name)
        assert ctl.job(e["id"])["state"] == "running"
        assert ctl.job(urg["id"])["state"] == "pending"

        release.write_text("")
        ctl.wait_job(urg["id"], "running", timeout=30)
        j = ctl.job(e["id"])
        assert j["state"] == "running" and j["requeues"] == 0, (j["state"], j.get("reason"))
        assert [p["node"] for p in j["placement"]] == ["n1", "n1"], j["placement"]
        assert size(ctl, e["id"])["size"] == 2
        assert "term 0" not in read(out) and "term 1" not in read(out)
        for jid in (e["id"], urg["id"]):
            ctl.request("DELETE", "/v1/jobs/%d" % jid, token=ctl.admin_token)
        ctl.wait_job(urg["id"], "cancelled", timeout=30)
    finally:
        for a in agents:
            a.stop()
