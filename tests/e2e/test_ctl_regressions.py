"""
test_ctl_regressions.py - regressions of defects found in sluiced by the
review of issue 7 ("Structure before growth"), each named after its
scenario.

- a submission whose row the database refuses was freed twice (the domain
  freed it and the HTTP handler freed it again);
- a GPU model refused at submission must leave nothing behind (4xx, not
  stored, not queued);
- the cluster token was compared with memcmp (now the one constant-time
  compare the API tokens use): every near miss is refused;
- a node failure and an agent's hello walked every job since the oldest
  active one; they now walk the node's own list of live tasks, and must
  touch exactly that node's tasks;
- messages a user reads speak the units the user configured (seconds,
  not milliseconds).
"""

import os
import re
import subprocess

import pytest

import harness
from harness import FakeAgent


def test_two_controllers_on_one_database_refused_insert_answers_500_and_survives(
        controller_factory):
    """A second sluiced started on the same state file (an operator's
    mistake) issues job ids the first one already stored: its INSERT fails
    on the primary key. Before the fix the refused job was freed twice and
    the second controller crashed; now it answers 500, keeps serving, and
    its next job (a fresh id) is accepted."""
    a = controller_factory(sub="a")
    b = controller_factory(config_overrides={"state": a.db_path}, sub="b")
    first = a.submit({"command": ["x"]})
    assert first["id"] == 1
    st, body = b.request("POST", "/v1/jobs", {"command": ["y"]}, token=b.token("alice"))
    assert st == 500, (st, body)
    assert body["error"]["code"] == "internal"
    assert "could not store" in body["error"]["message"]
    assert b.alive(), b.log()
    st, body = b.request("GET", "/healthz")
    assert st == 200 and body["status"] == "ok"
    # Nothing of the refused job stayed in memory or in the queue.
    assert [j["id"] for j in b.jobs()] == []
    st, tenants = b.request("GET", "/v1/tenants", token=b.admin_token)
    alice = [t for t in tenants["tenants"] if t["name"] == "alice"][0]
    assert alice["pending"] == 0 and alice["running"] == 0
    second = b.submit({"command": ["z"]})
    assert second["id"] == 2 and second["state"] == "pending"
    assert [j["id"] for j in b.jobs()] == [2]
    assert "double free" not in b.log() and "AddressSanitizer" not in b.log()


def test_gpu_model_refused_at_submission_stores_nothing(controller):
    """The cluster holds at most 64 GPU model names (a bit mask), of which
    jobs may name 32 that no node has (nodes keep the other half), each of
    the two tenants 16. A job of alice's that names a 17th such model is
    refused with 400 and leaves nothing: no job, no queue entry, and the
    next job gets the next id."""
    for i in range(16):
        job = controller.submit({"command": ["x"], "gpus": 1, "gpu_models": ["m%d" % i]})
        assert job["id"] == i + 1
    st, body = controller.request("POST", "/v1/jobs",
                                  {"command": ["x"], "gpus": 1, "gpu_models": ["one-too-many"]},
                                  token=controller.token("alice"))
    assert st == 400, (st, body)
    assert body["error"]["code"] == "invalid_field"
    assert "gpu_models" in body["error"]["message"]
    assert len(controller.jobs()) == 16
    st, tenants = controller.request("GET", "/v1/tenants", token=controller.admin_token)
    alice = [t for t in tenants["tenants"] if t["name"] == "alice"][0]
    assert alice["pending"] == 16
    nxt = controller.submit({"command": ["x"]})
    assert nxt["id"] == 17


def test_cluster_token_near_misses_are_refused(controller):
    """The cluster token goes through the same constant-time compare as
    the API tokens: a prefix, an extension, one changed byte, an empty or a
    missing token are all refused; the token itself is welcome."""
    tok = controller.cluster_token
    changed = tok[:-1] + ("0" if tok[-1] != "0" else "1")
    for bad in (tok[:-1], tok + "0", changed, "", tok.upper(), None):
        f = FakeAgent(controller, "n-bad")
        f.token = bad  # None goes out as JSON null
        msg = f.connect()
        assert msg is not None and msg["type"] == "error", (bad, msg)
        # A null token stops the decoder before the node's name.
        assert msg["message"] in ("bad token: neither the node token of n-bad nor the cluster token",
                                  "bad token: neither the node token of this node nor the cluster "
                                  "token"), msg
        f.close()
    assert controller.node("n-bad") is None
    good = FakeAgent(controller, "n-good")
    msg = good.connect()
    assert msg["type"] == "welcome" and msg["node"] == "n-good"
    good.close()
    # The API still refuses the cluster token, whatever the compare.
    st, _ = controller.request("GET", "/v1/jobs", token=tok)
    assert st == 403


def test_node_failure_requeues_exactly_the_jobs_on_that_node(controller_factory):
    """Four 4-GPU jobs fill two 8-GPU nodes; n1 stops talking. Exactly the
    two jobs on n1 are requeued (and wait: n2 is full), and n2's stay
    running, untouched (no kill reaches n2)."""
    ctl = controller_factory(config_overrides={"node_timeout": 1, "heartbeat": 1})
    n1 = FakeAgent(ctl, "n1", gpus=8)
    n2 = FakeAgent(ctl, "n2", gpus=8)
    try:
        n1.start()
        n2.start()
        n2.start_heartbeats(0.2)
        n1.start_heartbeats(0.2)
        jobs = [ctl.submit({"command": ["x"], "gpus": 4}) for _ in range(4)]
        for j in jobs:
            ctl.wait_job(j["id"], "running")
        on = {}
        for j in jobs:
            on[j["id"]] = ctl.job(j["id"])["placement"][0]["node"]
        assert sorted(on.values()) == ["n1", "n1", "n2", "n2"]
        n1.close()  # no more heartbeats: node_timeout later it is down
        ctl.wait_node("n1", "down", timeout=20)
        for jid, node in on.items():
            if node == "n1":
                j = ctl.wait_job(jid, "pending")
                assert j["requeues"] == 1 and "n1" in j["reason"], j
                # node_timeout is configured in seconds, and so is the reason.
                assert re.search(r"node n1 failed \(no message for \d+\.\d s\)", j["reason"]), j
            else:
                j = ctl.job(jid)
                assert j["state"] == "running" and j["requeues"] == 0, j
        assert n2.messages("kill") == []
        assert ctl.node("n1")["tasks"] == 0 and ctl.node("n2")["tasks"] == 2
    finally:
        n1.close()
        n2.close()


def test_hello_reconciles_listed_unlisted_and_unknown_tasks(controller):
    """An agent reconnects after a controller-side record of three tasks on
    its node: its hello lists job A's two tasks as running, omits job B's
    task, and lists 2,000 tasks the controller never placed. A is re-adopted
    (no new launch), B's task is lost and B requeued and launched again, and
    each unknown task gets exactly one kill."""
    f = FakeAgent(controller, "n1", gpus=8)
    f.start()
    a = controller.submit({"command": ["x"], "tasks": 2, "gpus": 2})
    b = controller.submit({"command": ["y"], "gpus": 1})
    controller.wait_job(a["id"], "running")
    controller.wait_job(b["id"], "running")
    harness.wait_for(lambda: all(t["state"] == "running"
                                 for j in (a, b)
                                 for t in controller.job(j["id"])["placement"]),
                     what="tasks running")
    f.close()
    unknown = [{"job": 100000 + k, "task": 0, "pid": 1, "state": "running"} for k in range(2000)]
    listed = [{"job": a["id"], "task": t, "pid": 10001 + t, "state": "running"} for t in (0, 1)]
    g = FakeAgent(controller, "n1", gpus=8, tasks=listed + unknown)
    g.start()
    try:
        kills = g.wait_message("kill", count=2000, timeout=30)
        kills = [m for m in g.messages("kill") if m["job"] >= 100000]
        assert sorted(m["job"] for m in kills) == list(range(100000, 102000))
        j = controller.wait_job(b["id"], "running")
        assert j["requeues"] == 1
        launches = g.wait_message("launch", job=b["id"])
        assert len(launches) == 1
        assert g.messages("launch", job=a["id"]) == []
        ja = controller.job(a["id"])
        assert ja["state"] == "running" and ja["requeues"] == 0
        assert [t["state"] for t in ja["placement"]] == ["running", "running"]
        assert g.messages("kill", job=a["id"]) == []
        assert controller.node("n1")["tasks"] == 3
    finally:
        g.close()


def test_config_too_small_timeout_names_the_least_value_in_seconds(tmp_path, build_dir):
    """node_timeout is given in seconds; its refusal says the least value in
    seconds too (it said only "too small")."""
    binary = os.path.join(build_dir, "sluiced")
    if not os.access(binary, os.X_OK):
        pytest.skip("sluiced is not built")
    cfg = tmp_path / "c.yaml"
    cfg.write_text("node_timeout: 0.05\n")
    r = subprocess.run([binary, "--config", str(cfg), "--state", str(tmp_path / "x.db")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stderr
    assert "c.yaml:1: node_timeout: too small (at least 0.1 seconds)" in r.stderr, r.stderr
