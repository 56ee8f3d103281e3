"""
test_preempt.py - priority preemption with real daemons (issue 11;
docs/elastic.md "Preemption", docs/config.md "Priority classes").

A job of a class that may preempt, which cannot fit, takes the place of a
strictly lower-priority job: the victim's tasks get their class's signal
(SIGUSR1 here), find the SIGKILL time in SLUICE_PREEMPT_FILE, get SIGKILL
after the class's grace, and the victim is requeued with its id and submit
time and runs again once the preemptor is done. A job of the same priority
preempts nothing. The preemption is recorded on the victim (API, `sluice
show` for its owner) and counted in /metrics. Every wait polls with a
deadline; nothing depends on elapsed time.
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import harness  # noqa: E402
import e2e_util as u  # noqa: E402

CLASSES = {"priority_classes": [
    {"name": "batch", "value": 10, "signal": "SIGUSR1", "grace": 2},
    {"name": "urgent", "value": 1000, "may_preempt": True, "tenants": ["alice", "bob"]},
]}


def victim_script(out):
    """Notes each start; on SIGUSR1 notes its preempt file; ignores SIGTERM,
    so that only the SIGKILL after the grace ends it."""
    return ("trap 'echo \"usr1 $(cat \"$SLUICE_PREEMPT_FILE\")\" >> %s' USR1; trap '' TERM; "
            "echo \"start $SLUICE_JOB_ID\" >> %s; while true; do sleep 0.05; done" % (out, out))


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return ""


def test_preempt_signal_then_sigkill_requeue_same_id(controller_factory, tmp_path):
    ctl = controller_factory(config_overrides=CLASSES)
    n1 = harness.Agent(ctl, "n1", gpus=2)
    n1.start()
    try:
        out = tmp_path / "victim.out"
        v = ctl.submit({"gpus": 2, "priority_class": "batch", "command": ["sh", "-c", victim_script(out)]})
        ctl.wait_job(v["id"], "running")
        harness.wait_for(lambda: "start" in read(out), what="victim started")

        # The same priority preempts nothing: it waits.
        same = ctl.submit({"gpus": 2, "priority_class": "batch", "command": ["true"]}, tenant="bob")
        time.sleep(0.5)
        assert ctl.job(v["id"])["requeues"] == 0 and ctl.job(same["id"])["state"] == "pending"
        assert "usr1" not in read(out)
        ctl.request("DELETE", "/v1/jobs/%d" % same["id"], token=ctl.admin_token)

        done = tmp_path / "urgent.done"
        urg = ctl.submit({"gpus": 2, "priority_class": "urgent",
                          "command": ["sh", "-c", "echo ran > %s" % done]}, tenant="bob")
        t0 = time.time()
        text = harness.wait_for(lambda: "usr1" in read(out) and read(out), what="SIGUSR1 to the victim")
        line = [x for x in text.splitlines() if x.startswith("usr1")][0]
        deadline = float(line.split("SLUICE_PREEMPT_DEADLINE=", 1)[1])
        assert t0 - 5 < deadline < t0 + 2 + 5  # the class's 2 s grace
        harness.wait_for(lambda: "job=%d task=0" % v["id"] in n1.log() and "grace over, SIGKILL" in n1.log(),
                         what="SIGKILL after the grace")
        ctl.wait_job(urg["id"], "succeeded", timeout=30)
        assert read(done).strip() == "ran"

        # The victim runs again, the same job, with its original submit time.
        harness.wait_for(lambda: read(out).count("start") >= 2, timeout=30, what="victim restarted")
        j = ctl.wait_job(v["id"], "running")
        assert j["requeues"] == 1 and j["submit_time"] == v["submit_time"]
        assert "start %d\nusr1" % v["id"] in read(out) and read(out).endswith("start %d\n" % v["id"])
        p = j["preemptions"]
        assert len(p) == 1, p
        assert p[0]["kind"] == "preempt" and p[0]["cause"] == "priority", p
        assert p[0]["by_job"] == urg["id"] and p[0]["by_tenant"] == "bob" and p[0]["tasks"] == 1, p
        assert p[0]["gpu_seconds_lost"] >= 0 and "priority 1000 over 10" in p[0]["reason"], p

        # Its owner sees who took its GPUs; another tenant cannot see the job.
        r = u.sluice(["show", str(v["id"])], u.cli_env(ctl, ctl.token("alice"), tmpdir=tmp_path))
        assert r.returncode == 0, r.stderr
        assert "preempt (priority) for job %d (tenant bob)" % urg["id"] in r.stdout, r.stdout
        st, _ = ctl.request("GET", "/v1/jobs/%d" % v["id"], token=ctl.token("bob"))
        assert st == 403
        metrics = ctl.request("GET", "/metrics", token=ctl.admin_token)[1]
        assert 'sluice_preemptions_total{tenant="alice",reason="priority"} 1' in metrics
        assert 'sluice_preemptions_total{tenant="bob",reason="priority"} 0' in metrics

        # Durable: the record is read back after a restart.
        ctl.restart()
        j = ctl.job(v["id"])
        assert len(j["preemptions"]) == 1 and j["preemptions"][0]["by_job"] == urg["id"]
        ctl.request("DELETE", "/v1/jobs/%d" % v["id"], token=ctl.admin_token)
        ctl.wait_job(v["id"], "cancelled", timeout=30)
    finally:
        n1.stop()


def test_priority_class_errors_name_the_field(controller_factory, tmp_path):
    ctl = controller_factory(config_overrides=CLASSES)
    st, body = ctl.request("POST", "/v1/jobs", {"command": ["true"], "priority_class": "nope"},
                           token=ctl.token("alice"))
    assert st == 400 and body["error"]["field"] == "priority_class", body
    st, body = ctl.request("POST", "/v1/jobs", {"command": ["true"], "priority_class": "batch",
                                                "priority": 3}, token=ctl.token("alice"))
    assert st == 400 and body["error"]["field"] == "priority", body
    st, body = ctl.request("POST", "/v1/jobs", {"command": ["true"], "priority_class": "urgent"},
                           token=ctl.token("alice"))
    assert st == 201 and body["priority"] == 1000, body
    # The CLI's flag and a Kubernetes Job's priorityClassName.
    env = u.cli_env(ctl, ctl.token("alice"), tmpdir=tmp_path)
    r = u.sluice(["--json", "submit", "--priority-class", "batch", "--", "true"], env)
    assert r.returncode == 0, r.stderr
    assert '"priority_class": "batch"' in r.stdout and '"priority": 10' in r.stdout, r.stdout
    manifest = tmp_path / "job.yaml"
    manifest.write_text("""apiVersion: batch/v1
kind: Job
metadata: {name: k8s-urgent}
spec:
  template:
    spec:
      priorityClassName: urgent
      restartPolicy: Never
      containers: [{name: c, image: busybox, command: ["true"]}]
""")
    r = u.sluice(["submit", "--dry-run", "-f", str(manifest)], env)
    assert r.returncode == 0 and '"priority_class": "urgent"' in r.stdout, (r.stdout, r.stderr)
    r = u.sluice(["submit", "--priority-class", "nope", "--", "true"], env)
    assert r.returncode == 1 and "priority_class" in r.stderr, r.stderr


def test_priority_class_config_errors(tmp_path):
    bad = [
        ({"priority_classes": [{"name": "x"}]}, "value are both required"),
        ({"priority_classes": [{"name": "x", "value": 1, "signal": "SIGSEGV"}]}, "signal: must be one of"),
        ({"priority_classes": [{"name": "x", "value": 1}, {"name": "x", "value": 2}]}, "duplicate name"),
        ({"priority_classes": [{"name": "x", "value": 1, "grace": "soon"}]}, "grace: must be a number of seconds"),
        ({"preemption": {"max_per_minute": -1}}, "max_per_minute"),
    ]
    for i, (over, msg) in enumerate(bad):
        c = harness.Controller(tmp_path / ("c%d" % i), config_overrides=over)
        try:
            c.start(timeout=5)
            assert False, "sluiced started with %r" % over
        except AssertionError as e:
            assert msg in str(e), (over, str(e))
        finally:
            c.stop()


# ---- who may name a class, and the default bounds on preemption ----

GUARDED = {"priority_classes": [
    {"name": "batch", "value": 10},  # no may_preempt, no tenants: open to every tenant
    {"name": "urgent", "value": 1000, "may_preempt": True, "tenants": ["alice"]},
    {"name": "loud", "value": 500, "may_preempt": True},  # lists nobody: nobody may
]}

K8S_URGENT = """apiVersion: batch/v1
kind: Job
metadata: {name: k8s-urgent}
spec:
  template:
    spec:
      priorityClassName: urgent
      restartPolicy: Never
      containers: [{name: c, image: busybox, command: ["true"]}]
"""


def test_a_class_that_may_preempt_is_for_the_tenants_it_lists(controller_factory, tmp_path):
    ctl = controller_factory(config_overrides=GUARDED)
    st, body = ctl.request("POST", "/v1/jobs", {"command": ["true"], "priority_class": "urgent"},
                           token=ctl.token("bob"))
    assert st == 403 and body["error"]["field"] == "priority_class", (st, body)
    assert body["error"]["message"] == ('priority_class: priority class "urgent" is for tenant '
                                        'alice; tenant "bob" may not use it'), body
    # The admin token submits for a tenant: the tenant's right decides.
    st, body = ctl.request("POST", "/v1/jobs", {"command": ["true"], "priority_class": "urgent",
                                                "tenant": "bob"}, token=ctl.admin_token)
    assert st == 403 and body["error"]["field"] == "priority_class", (st, body)
    for who in ("alice", "bob"):
        st, body = ctl.request("POST", "/v1/jobs", {"command": ["true"], "priority_class": "loud"},
                               token=ctl.token(who))
        assert st == 403 and "lists no tenants that may use it" in body["error"]["message"], body
    assert ctl.submit({"command": ["true"], "priority_class": "batch"}, tenant="bob")["priority"] == 10
    assert ctl.submit({"command": ["true"], "priority_class": "urgent"})["priority"] == 1000
    # A Kubernetes Job's priorityClassName goes the same way through the CLI.
    manifest = tmp_path / "job.yaml"
    manifest.write_text(K8S_URGENT)
    r = u.sluice(["submit", "-f", str(manifest)], u.cli_env(ctl, ctl.token("bob"), tmpdir=tmp_path))
    assert r.returncode == 1 and "priority_class" in r.stderr and "may not use it" in r.stderr, \
        (r.returncode, r.stdout, r.stderr)
    r = u.sluice(["--json", "submit", "-f", str(manifest)],
                 u.cli_env(ctl, ctl.token("alice"), tmpdir=tmp_path))
    assert r.returncode == 0 and '"priority_class": "urgent"' in r.stdout, (r.stdout, r.stderr)
    # Nothing of the refused submissions was kept.
    assert all(j["tenant"] == "alice" or j["priority_class"] == "batch" for j in ctl.jobs())


def test_submit_cancel_loop_preempts_a_gang_only_until_it_is_protected(controller_factory):
    """Alice, who may use a class that preempts, submits an 8-GPU job and
    cancels it as soon as it has preempted bob's 2 x 4-GPU gang, eight
    times over. With the default bounds (protect_after 3, max_per_minute
    10) the gang is preempted three times; from then on it is left alone
    and keeps running, and the preemptor waits instead."""
    ctl = controller_factory(config_overrides=dict(GUARDED, kill_grace=1))
    agents = [harness.Agent(ctl, "n%d" % i, gpus=4) for i in (1, 2)]
    for a in agents:
        a.start()
    try:
        gang = ctl.submit({"tasks": 2, "gpus": 4, "command": ["sleep", "600"]}, tenant="bob")["id"]
        ctl.wait_job(gang, "running")
        preempted = 0
        for i in range(8):
            urg = ctl.submit({"tasks": 2, "gpus": 4, "priority_class": "urgent",
                              "command": ["sleep", "600"]})["id"]

            def outcome():
                j = ctl.job(urg)
                why = j.get("reason") or ""
                if why.startswith("waiting for") or j["state"] != "pending":
                    return "preempted"
                return "spared" if why else None

            seen = harness.wait_for(outcome, timeout=30, what="a cycle that tried job %d" % urg)
            st, body = ctl.request("DELETE", "/v1/jobs/%d" % urg, token=ctl.token("alice"))
            assert st == 200, (st, body)
            if seen == "preempted":
                preempted += 1
                harness.wait_for(lambda: (lambda j: j["state"] == "running" and
                                          j["requeues"] == preempted)(ctl.job(gang)),
                                 timeout=60, what="the gang running again")
            else:
                assert ctl.job(gang)["state"] == "running"
        j = ctl.job(gang)
        assert preempted == 3 and len(j["preemptions"]) == 3, (preempted, j["preemptions"])
        assert j["state"] == "running" and j["requeues"] == 3, j
    finally:
        for a in agents:
            a.stop()
