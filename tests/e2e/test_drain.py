"""
test_drain.py - node drains with real daemons (issue 11; docs/cli.md
`sluice drain`, docs/api.md POST /v1/nodes/drain and /v1/nodes/resume).

Without a deadline a drain takes no new work and waits for the node's
tasks to end; it survives a controller restart; resume gives the node back.
With a deadline the tasks left get their priority class's signal (here
SIGUSR1), find the SIGKILL time in their SLUICE_PREEMPT_FILE, are killed
with SIGKILL after the class's grace, and their job runs again later with
the same id and its original submit time. Every wait polls with a deadline;
nothing depends on elapsed time.
"""

import os
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import harness  # noqa: E402
import e2e_util as u  # noqa: E402

CLASSES = {"priority_classes": [
    {"name": "batch", "value": 10, "signal": "SIGUSR1", "grace": 2},
    {"name": "urgent", "value": 1000, "may_preempt": True, "tenants": ["alice", "bob"]},
]}


def wait_file(path, timeout=20.0):
    """Waits until the file at path exists; returns its text."""
    def check():
        if not os.path.exists(path):
            return None
        with open(path) as f:
            return f.read() or None
    return harness.wait_for(check, timeout=timeout, what=path)


def test_drain_without_deadline_waits_for_tasks_and_survives_restart(controller, cluster, tmp_path):
    cluster(1, gpus=1)
    env = u.cli_env(controller, controller.admin_token, tmpdir=tmp_path)
    go = tmp_path / "go"
    a = controller.submit({"gpus": 1, "command": ["sh", "-c", "while [ ! -e %s ]; do sleep 0.05; done" % go]})
    controller.wait_job(a["id"], "running")

    r = u.sluice(["drain", "n1", "--reason", "replace a fan"], env)
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert "draining" in r.stdout and "waits for its tasks" in r.stdout
    n = controller.node("n1")
    assert n["state"] == "draining" and n["drain"]["reason"] == "replace a fan"
    assert n["drain"]["deadline"] is None

    # No new placement on a draining node: b waits although n1 will be free.
    b = controller.submit({"gpus": 1, "command": ["true"]})
    time.sleep(0.5)
    assert controller.job(b["id"])["state"] == "pending"
    r = u.sluice(["nodes"], env)
    assert r.returncode == 0 and "draining" in r.stdout and "replace a fan" in r.stdout

    go.write_text("")
    assert controller.wait_job(a["id"], "succeeded")["requeues"] == 0  # not stopped: it ended
    controller.wait_node("n1", "drained")
    assert controller.job(b["id"])["state"] == "pending"

    # Durable: a restarted controller still holds the drain.
    controller.restart()
    n = harness.wait_for(lambda: (controller.node("n1") or {}).get("connected") and controller.node("n1"),
                         what="n1 back")
    assert n["state"] == "drained" and n["drain"]["reason"] == "replace a fan"
    time.sleep(0.5)
    assert controller.job(b["id"])["state"] == "pending"

    # Only the admin may drain or resume.
    st, body = controller.request("POST", "/v1/nodes/resume", {"node": "n1"}, token=controller.token("alice"))
    assert st == 403, (st, body)
    st, body = controller.request("POST", "/v1/nodes/drain", {"node": "nope"}, token=controller.admin_token)
    assert st == 404 and body["error"]["field"] == "node", body
    st, body = controller.request("POST", "/v1/nodes/drain", {"node": "n1", "deadline": "soon"},
                                  token=controller.admin_token)
    assert st == 400 and body["error"]["field"] == "deadline", body

    r = u.sluice(["resume", "n1"], env)
    assert r.returncode == 0, (r.stdout, r.stderr)
    controller.wait_job(b["id"], "succeeded")
    n = controller.node("n1")
    assert n["state"] == "up" and n["drain"] is None
    r = u.sluice(["resume", "n1"], env)
    assert r.returncode == 1 and "not draining" in r.stderr, (r.stdout, r.stderr)

    # A deadline as a local time, shown back in local time; a bad one is a usage error.
    r = u.sluice(["drain", "n1", "--deadline", "2099-01-02 03:04"], env)
    assert r.returncode == 0 and "deadline 2099-01-02 03:04:00" in r.stdout, (r.stdout, r.stderr)
    n = controller.node("n1")
    assert n["state"] == "drained" and n["drain"]["deadline"] > 4e9
    r = u.sluice(["drain", "n1", "--deadline", "tomorrow-ish"], env)
    assert r.returncode == 2 and "--deadline" in r.stderr, (r.stdout, r.stderr)
    assert u.sluice(["resume", "n1"], env).returncode == 0


@pytest.mark.parametrize("ctl_kw", [CLASSES])
def test_drain_deadline_preempts_with_class_signal_then_sigkill_and_requeues(controller_factory, tmp_path, ctl_kw):
    ctl = controller_factory(config_overrides=ctl_kw)
    env = u.cli_env(ctl, ctl.admin_token, tmpdir=tmp_path)
    n1 = harness.Agent(ctl, "n1", gpus=1)
    n1.start()
    out = tmp_path / "out"
    # The task notes each start, then on SIGUSR1 its preempt file, and
    # ignores SIGTERM: only the SIGKILL after the grace ends it.
    script = ("trap 'echo \"usr1 $(cat \"$SLUICE_PREEMPT_FILE\")\" >> %s' USR1; trap '' TERM; "
              "echo \"start $SLUICE_NODE $WORLD_SIZE $SLUICE_JOB_SIZE\" >> %s; "
              "while true; do sleep 0.05; done" % (out, out))
    j = ctl.submit({"gpus": 1, "priority_class": "batch", "command": ["sh", "-c", script]})
    assert j["priority"] == 10 and j["priority_class"] == "batch"
    ctl.wait_job(j["id"], "running")
    wait_file(str(out))
    r = u.sluice(["drain", "n1", "--deadline", "0", "--reason", "kernel update"], env)
    assert r.returncode == 0, (r.stdout, r.stderr)
    t_drain = time.time()

    text = harness.wait_for(lambda: "usr1" in open(out).read() and open(out).read(), what="SIGUSR1")
    line = [x for x in text.splitlines() if x.startswith("usr1")][0]
    assert line.startswith("usr1 SLUICE_PREEMPT_DEADLINE="), line
    deadline = float(line.split("=", 1)[1])
    assert t_drain - 5 < deadline < t_drain + 2 + 5  # now + the class's 2 s grace
    # SIGTERM was not what it got (it ignores that); SIGKILL came after the grace.
    harness.wait_for(lambda: "grace over, SIGKILL" in n1.log(), what="SIGKILL in the agent's log")
    pj = ctl.wait_job(j["id"], "pending")
    assert pj["requeues"] == 1 and pj["submit_time"] == j["submit_time"]
    assert "requeued: node n1 drained at its deadline" in pj["reason"], pj["reason"]
    pre = pj["preemptions"]
    assert len(pre) == 1 and pre[0]["kind"] == "drain" and pre[0]["cause"] == "drain", pre
    assert pre[0]["tasks"] == 1 and pre[0]["gpu_seconds_lost"] >= 0 and "kernel update" in pre[0]["reason"]
    ctl.wait_node("n1", "drained")
    # Its owner sees it.
    r = u.sluice(["show", str(j["id"])], u.cli_env(ctl, ctl.token("alice"), tmpdir=tmp_path))
    assert r.returncode == 0 and "preempted:" in r.stdout and "drain (drain)" in r.stdout, r.stdout
    assert "(class batch)" in r.stdout
    m = harness.wait_for(lambda: 'sluice_preemptions_total{tenant="alice",reason="drain"} 1' in
                         ctl.request("GET", "/metrics", token=ctl.admin_token)[1], what="metric")
    assert m

    # A new node takes it: the same job id runs again.
    n2 = harness.Agent(ctl, "n2", gpus=1)
    n2.start()
    try:
        rj = ctl.wait_job(j["id"], "running")
        assert rj["placement"][0]["node"] == "n2"
        harness.wait_for(lambda: "start n2 1 1" in open(out).read(), what="second start on n2")
        ctl.request("DELETE", "/v1/jobs/%d" % j["id"], token=ctl.admin_token)
        ctl.wait_job(j["id"], "cancelled", timeout=30)
    finally:
        n2.stop()
        n1.stop()
