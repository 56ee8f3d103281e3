"""
test_retries.py - retries of failed jobs with real daemons (docs/jobspec.md
"Retries"): a failed attempt goes back to the queue with the same id after
its back-off, `sluice show` and the API list each attempt, dependents see
only the last attempt, a cancel is final, and a controller restarted during
a back-off keeps it. Also the ways in: the config's default, sbatch
--requeue/--no-requeue, Kubernetes backoffLimit and restartPolicy.

Every wait polls with a deadline; no assertion depends on elapsed time.
"""

import json
import os
import sqlite3
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import harness  # noqa: E402
import e2e_util as u  # noqa: E402


def flaky(counter, succeed_at):
    """A command that fails (exit 3) until its succeed_at-th run."""
    return ["sh", "-c", 'n=$(cat %s 2>/dev/null || echo 0); n=$((n+1)); echo $n > %s; '
            '[ "$n" -ge %d ] || exit 3' % (counter, counter, succeed_at)]


def test_failed_attempts_are_retried_with_the_same_id(controller, cluster, tmp_path):
    cluster(1, gpus=1)
    counter = tmp_path / "runs"
    job = controller.submit({"gpus": 1, "retries": 2, "retry_backoff": 0,
                             "command": flaky(counter, 3)})
    done = controller.wait_job(job["id"], "succeeded", timeout=30)
    assert counter.read_text().strip() == "3"
    assert done["attempt"] == 3 and done["retries"] == 2 and done["requeues"] == 2, done
    att = done["attempts"]
    assert [a["attempt"] for a in att] == [1, 2], att
    for a in att:
        assert a["exit_code"] == 3 and a["reason"] == "task 0 exited with code 3", a
        assert a["start_time"] <= a["end_time"] <= a["retry_at"], a

    env = u.cli_env(controller, controller.admin_token)
    r = u.sluice(["show", str(job["id"])], env)
    assert r.returncode == 0, r.stderr
    assert "attempt:    3 of 3" in r.stdout, r.stdout
    assert "attempt 1 ended" in r.stdout and "exit 3: task 0 exited with code 3" in r.stdout

    # Used up: the last failure is final.
    counter2 = tmp_path / "runs2"
    job = controller.submit({"retries": 1, "retry_backoff": 0, "command": flaky(counter2, 99)})
    done = controller.wait_job(job["id"], "failed", timeout=30)
    assert counter2.read_text().strip() == "2"
    assert done["attempt"] == 2 and len(done["attempts"]) == 1, done
    assert done["exit_code"] == 3, done


def test_dependents_wait_for_the_last_attempt_and_cancel_is_final(controller, cluster, tmp_path):
    cluster(1, gpus=1)
    counter = tmp_path / "runs"
    gate = tmp_path / "gate"
    # Fails at once, then waits in a long back-off (an hour, capped at the
    # default retry_backoff_max of 6 minutes).
    first = controller.submit({"retries": 1, "retry_backoff": 3600,
                               "command": flaky(counter, 99)})
    after = controller.submit({"dependency": "afterany:%d" % first["id"], "command": ["true"]})

    def backing_off():
        j = controller.job(first["id"])
        return j if j["reason"].startswith("RetryBackoff:") else None
    j = harness.wait_for(backing_off, timeout=20, what="the back-off")
    assert j["state"] == "pending" and j["attempt"] == 2 and "retry_at" in j, j
    assert j["reason"].startswith("RetryBackoff: attempt 2 of 2 in 6m; attempt 1: task 0 "
                                  "exited with code 3"), j
    # The failed attempt did not end the job: its dependent still waits.
    assert controller.job(after["id"])["state"] == "pending"

    st, body = controller.request("DELETE", "/v1/jobs/%d" % first["id"], token=controller.admin_token)
    assert st in (200, 202), (st, body)
    assert controller.wait_job(first["id"], "cancelled")["attempt"] == 2
    controller.wait_job(after["id"], "succeeded")
    assert counter.read_text().strip() == "1"  # no second run after the cancel
    assert not gate.exists()

    # afterok on a job that fails every attempt: never satisfied, but only
    # once the last attempt has failed.
    c2 = tmp_path / "runs2"
    second = controller.submit({"retries": 2, "retry_backoff": 0, "command": flaky(c2, 99)})
    ok = controller.submit({"dependency": "afterok:%d" % second["id"], "command": ["true"]})
    controller.wait_job(second["id"], "failed", timeout=30)
    assert c2.read_text().strip() == "3"
    j = controller.wait_job(ok["id"], "failed")
    assert "DependencyNeverSatisfied" in j["reason"], j


def test_restart_during_the_back_off_keeps_it(controller, cluster, tmp_path):
    cluster(1, gpus=1)
    counter = tmp_path / "runs"
    job = controller.submit({"retries": 1, "retry_backoff": 4, "command": flaky(counter, 2)})

    def backing_off():
        j = controller.job(job["id"])
        return j if j["reason"].startswith("RetryBackoff:") else None
    before = harness.wait_for(backing_off, timeout=20, what="the back-off")
    controller.restart()
    after = controller.job(job["id"])
    assert after["state"] == "pending" and after["retry_at"] == before["retry_at"], (before, after)
    assert after["attempt"] == 2 and after["attempts"] == before["attempts"], after
    done = controller.wait_job(job["id"], "succeeded", timeout=40)
    assert counter.read_text().strip() == "2"
    assert done["attempts"][0]["exit_code"] == 3 and done["attempt"] == 2, done


def test_config_default_and_a_database_without_the_table(controller_factory, tmp_path):
    ctl = controller_factory(config_overrides={"scheduler": {"default_retries": 1,
                                                             "retry_backoff_max": 0}})
    started = []
    try:
        u.start_agents(ctl, 1, started, gpus=0)
        counter = tmp_path / "runs"
        job = ctl.submit({"command": flaky(counter, 2)})
        assert ctl.job(job["id"])["retries"] == 1
        # A cap of 0 makes every back-off 0, whatever retry_backoff says.
        done = ctl.wait_job(job["id"], "succeeded", timeout=30)
        assert done["attempt"] == 2 and done["retry_backoff"] == 10, done
        none = ctl.submit({"retries": 0, "command": ["false"]})
        assert "retries" not in ctl.wait_job(none["id"], "failed")

        # A database from before attempts gains the table at its next start.
        ctl.stop()
        con = sqlite3.connect(ctl.db_path)
        con.execute("DROP TABLE job_attempts")
        con.commit()
        con.close()
        ctl.start()
        c2 = tmp_path / "runs2"
        job = ctl.submit({"command": flaky(c2, 2)})
        assert ctl.wait_job(job["id"], "succeeded", timeout=30)["attempt"] == 2
    finally:
        for a in started:
            a.stop()


def test_sbatch_requeue_and_kubernetes_backoff_limit(tmp_path):
    env = u.cli_env(tmpdir=tmp_path)
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\n#SBATCH --requeue\n#SBATCH --mail-type=END,FAIL\n"
                      "#SBATCH --mail-user=ana@example.org\ntrue\n")
    r = u.sluice(["sbatch", "--dry-run", str(script)], env)
    assert r.returncode == 0, r.stderr
    spec = json.loads(r.stdout)
    assert spec["on_node_failure"] == "requeue" and "retries" not in spec, spec
    assert spec["mail_type"] == "END,FAIL" and spec["mail_user"] == "ana@example.org", spec

    r = u.sluice(["sbatch", "--dry-run", "--no-requeue", str(script)], env)
    spec = json.loads(r.stdout)
    assert spec["on_node_failure"] == "fail" and spec["retries"] == 0, spec

    bad = tmp_path / "bad.sh"
    bad.write_text("#!/bin/sh\n#SBATCH --mail-type=BEGIN,TIME_LIMIT_90\ntrue\n")
    r = u.sluice(["sbatch", "--dry-run", str(bad)], env)
    assert r.returncode != 0
    assert ('%s:2: --mail-type: "TIME_LIMIT_90" is not supported: Sluice reports no share of a '
            'time limit; use TIME_LIMIT' % bad) in r.stderr, r.stderr

    for policy in ("Never", "OnFailure"):
        m = tmp_path / ("job-%s.yaml" % policy)
        m.write_text("apiVersion: batch/v1\nkind: Job\nmetadata: {name: train}\n"
                     "spec:\n  backoffLimit: 4\n  template:\n    spec:\n"
                     "      restartPolicy: %s\n      containers:\n"
                     "      - {name: c, image: busybox, command: [\"true\"]}\n" % policy)
        r = u.sluice(["submit", "--dry-run", "-f", str(m)], env)
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["retries"] == 4
    m.write_text(m.read_text().replace("OnFailure", "Always"))
    r = u.sluice(["submit", "--dry-run", "-f", str(m)], env)
    assert r.returncode != 0 and "spec.template.spec.restartPolicy" in r.stderr, r.stderr


def test_a_node_lost_under_on_node_failure_fail_is_a_failed_attempt(controller_factory):
    """With on_node_failure: fail a node's loss fails the attempt, which a
    retry answers; the next attempt waits at least for the lost node's
    fence (its tasks may still run there), whatever retry_backoff says."""
    ctl = controller_factory(config_overrides={"node_timeout": 2, "kill_grace": 1})
    n1 = harness.FakeAgent(ctl, "n1", gpus=1)
    n2 = None
    try:
        n1.start()
        n1.start_heartbeats(0.2)
        job = ctl.submit({"gpus": 1, "retries": 1, "retry_backoff": 0,
                          "on_node_failure": "fail", "command": ["train"]})
        n1.wait_message("launch", job=job["id"])
        ctl.wait_job(job["id"], "running")
        n1.close()  # silent from here: declared down after node_timeout

        def backing_off():
            j = ctl.job(job["id"])
            return j if j["reason"].startswith("RetryBackoff:") else None
        j = harness.wait_for(backing_off, timeout=30, what="the back-off")
        a = j["attempts"][0]
        assert a["reason"].startswith("node n1 failed") and a["exit_code"] is None, a
        # The fence: node_timeout + kill_grace + 1 s from its last message,
        # of which the loss was seen after node_timeout.
        assert j["retry_at"] >= a["end_time"] + 1, j
        n2 = harness.FakeAgent(ctl, "n2", gpus=1)
        n2.start()
        n2.start_heartbeats(0.2)
        n2.wait_message("launch", job=job["id"], timeout=30)
        n2.exit(job["id"], 0, 0)
        done = ctl.wait_job(job["id"], "succeeded")
        assert done["attempt"] == 2 and done["placement"][0]["node"] == "n2", done
    finally:
        n1.close()
        if n2 is not None:
            n2.close()


def test_a_crash_while_the_failed_attempt_stops_still_retries(controller_factory, tmp_path):
    """Task 0 fails; task 1 ignores SIGTERM, so the attempt takes its
    kill_grace to stop, and the controller is killed (SIGKILL) meanwhile.
    The restarted controller knows the attempt failed and retries the job
    once task 1 has ended."""
    ctl = controller_factory(config_overrides={"kill_grace": 3})
    started = []
    try:
        u.start_agents(ctl, 1, started, gpus=0)
        runs = tmp_path / "runs"
        stopping = tmp_path / "stopping"
        # Each attempt appends its task index; the first attempt's task 0
        # fails, every other run succeeds at once.
        script = ('echo $SLUICE_TASK_INDEX >> %s; '
                  'if [ "$SLUICE_TASK_INDEX" = 1 ] && [ ! -e %s ]; then '
                  'trap "touch %s" TERM; while :; do sleep 0.05; done; fi; '
                  '[ "$SLUICE_TASK_INDEX" = 0 ] && [ "$(grep -c 0 %s)" = 1 ] && exit 3; exit 0'
                  % (runs, stopping, stopping, runs))
        job = ctl.submit({"tasks": 2, "retries": 1, "retry_backoff": 0,
                          "command": ["sh", "-c", script]})
        harness.wait_for(lambda: ctl.job(job["id"])["state"] == "failed" or None, timeout=20,
                         what="the first attempt failed")
        harness.wait_for(lambda: stopping.exists() or None, timeout=20, what="task 1 told to stop")
        ctl.kill9()
        ctl.start()
        done = ctl.wait_job(job["id"], "succeeded", timeout=40)
        assert done["attempt"] == 2 and len(done["attempts"]) == 1, done
        assert done["attempts"][0]["reason"] == "task 0 exited with code 3", done
        assert done["attempts"][0]["retry_at"] is not None, done
    finally:
        for a in started:
            a.stop()
