"""
test_oom_report.py - a task killed for memory, as the controller records
and shows it, and the oom_score_adj it sends in each launch (issue 9;
docs/protocol.md "Enforcement", docs/config.md "Task OOM score").

A real sluiced and a scripted agent (harness.FakeAgent) that reports what
an enforcing agent reports: an `exited` (or a hello's exited task) with
oom_killed, mem_peak and mem_limit. The API's job JSON, `sluice show` and
`sluice queue` must say so in words, also after a controller restart and
for a finished job read back from the database. Every wait polls with a
deadline; nothing depends on elapsed time.
"""

import os
import re
import subprocess
import sys
import time
import urllib.request

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import harness  # noqa: E402
import e2e_util as u  # noqa: E402

MI = 1 << 20
REQUEST = 128 * MI
LIMIT = REQUEST * 110 // 100      # 147639500 bytes: 110% of 128Mi, 141Mi to a person
PEAK = 141 * MI                   # 147849216 bytes
SHOW_LINE = "killed:     used 141Mi of its 141Mi hard limit (110% of 128Mi)"
REASON = "OOMKilled: task 0 used 141Mi of its 141Mi hard limit (110% of 128Mi)"


def _running(ctl, fa, spec):
    """Submits spec, waits for its launch on fa and for the job to run;
    returns (job id, the launch message)."""
    jid = ctl.submit(spec)["id"]
    launch = fa.wait_message("launch", job=jid)[0]
    harness.wait_for(lambda: ctl.job(jid)["placement"][0]["state"] == "running",
                     what="job %d task 0 running" % jid)
    return jid, launch


def _oom_exit(fa, jid, task=0):
    fa.running.pop((jid, task), None)
    fa.send({"type": "exited", "job": jid, "task": task, "exit_code": 137, "signal": 9,
             "oom_killed": True, "mem_peak": PEAK, "mem_limit": LIMIT, "time": time.time()})


def _assert_oom_job(ctl, jid):
    j = ctl.job(jid)
    assert j["state"] == "failed", j
    assert j["reason"] == REASON, j["reason"]
    assert j["exit_code"] == 137, j
    p = j["placement"][0]
    assert p["state"] == "exited" and p["signal"] == 9, p
    assert p["oom_killed"] is True, p
    assert p["mem_peak_bytes"] == PEAK and p["mem_limit_bytes"] == LIMIT, p
    assert p["mem_request_bytes"] == REQUEST, p


def _show(ctl, tmp_path, jid):
    env = u.cli_env(ctl, token=ctl.admin_token, tmpdir=tmp_path)
    r = u.sluice(["show", str(jid)], env)
    assert r.returncode == 0, (r.stdout, r.stderr)
    return r.stdout, env


@pytest.fixture
def cli_bin(build_dir):
    if not os.access(os.path.join(build_dir, "sluice"), os.X_OK):
        pytest.skip("sluice is not built")


# max_finished_jobs 0: a finished job is not kept in memory, so every read
# of it (and the restart) goes through the database.
@pytest.mark.parametrize("overrides", [{}, {"max_finished_jobs": 0}], ids=["in-memory", "from-db"])
def test_oom_exit_is_recorded_shown_and_survives_restart(controller_factory, cli_bin, tmp_path,
                                                         overrides):
    ctl = controller_factory(config_overrides=overrides)
    fa = harness.FakeAgent(ctl, "n1", gpus=0).start()
    try:
        jid, launch = _running(ctl, fa, {"command": ["train"], "cpus": "1", "memory": "128Mi"})
        assert launch["mem_bytes"] == REQUEST
        _oom_exit(fa, jid)
        ctl.wait_job(jid, "failed")
        fa.wait_message("ack", job=jid)
        _assert_oom_job(ctl, jid)

        out, env = _show(ctl, tmp_path, jid)
        assert SHOW_LINE + "\n" in out, out
        assert "reason:     " + REASON in out, out
        if not overrides:  # the listing holds the finished jobs kept in memory
            # Its REASON column makes the OOM visible too.
            r = u.sluice(["queue", "--all"], env)
            assert r.returncode == 0, r.stderr
            row = [ln for ln in r.stdout.splitlines() if re.match(r"\s*%d\s" % jid, ln)]
            assert row and "failed" in row[0] and "OOMKilled" in row[0], r.stdout
    finally:
        fa.close()

    ctl.restart()
    _assert_oom_job(ctl, jid)
    out, _ = _show(ctl, tmp_path, jid)
    assert SHOW_LINE + "\n" in out, out


def test_oom_end_in_a_hello_counts_too(controller, cli_bin, tmp_path):
    """An agent that restarted while its task was killed for memory lists
    the exit in its hello, with the same fields."""
    fa = harness.FakeAgent(controller, "n1", gpus=0).start()
    jid, _ = _running(controller, fa, {"command": ["train"], "tasks": 2, "memory": "128Mi"})
    fa.close()
    ended = {"job": jid, "task": 1, "state": "exited", "exit_code": 137, "signal": 9,
             "oom_killed": True, "mem_peak": PEAK, "mem_limit": LIMIT, "end_time": time.time()}
    running = {"job": jid, "task": 0, "state": "running", "pid": fa.running[(jid, 0)]}
    fb = harness.FakeAgent(controller, "n1", gpus=0, tasks=[running, ended])
    fb.running[(jid, 0)] = running["pid"]
    try:
        fb.start()
        controller.wait_job(jid, "failed")
        j = controller.job(jid)
        assert j["reason"] == REASON.replace("task 0", "task 1"), j["reason"]
        p = j["placement"][1]
        assert p["oom_killed"] is True and p["mem_peak_bytes"] == PEAK, p
        assert j["placement"][0]["oom_killed"] is False, j["placement"][0]
        out, _ = _show(controller, tmp_path, jid)
        # In a gang the line names the task.
        assert "killed:     task 1 used 141Mi of its 141Mi hard limit (110% of 128Mi)\n" in out, out
    finally:
        fb.close()


def test_exits_without_an_oom(controller, fake_agent, cli_bin, tmp_path):
    fa = fake_agent("n1", gpus=0)
    # A task that stayed within its limit: its peak is kept, no OOM.
    jid, _ = _running(controller, fa, {"command": ["ok"], "memory": "1Gi"})
    fa.running.pop((jid, 0), None)
    fa.send({"type": "exited", "job": jid, "task": 0, "exit_code": 0, "signal": 0,
             "mem_peak": 300 * MI, "mem_limit": (1 << 30) * 11 // 10, "time": time.time()})
    controller.wait_job(jid, "succeeded")
    p = controller.job(jid)["placement"][0]
    assert p["oom_killed"] is False and p["mem_peak_bytes"] == 300 * MI, p
    assert p["mem_limit_bytes"] == (1 << 30) * 11 // 10 and p["mem_request_bytes"] == 1 << 30, p
    out, _ = _show(controller, tmp_path, jid)
    assert "killed:" not in out, out

    # An agent without enforcement sends none of the fields: all unknown,
    # and a plain SIGKILL is not called an OOM.
    jid2, _ = _running(controller, fa, {"command": ["x"], "memory": "1Gi"})
    fa.exit(jid2, 0, code=137, sig=9)
    j = controller.wait_job(jid2, "failed")
    assert j["reason"] == "task 0 killed by signal 9", j["reason"]
    p = j["placement"][0]
    assert p["oom_killed"] is False, p
    assert p["mem_peak_bytes"] is None and p["mem_limit_bytes"] is None, p
    assert p["mem_request_bytes"] is None, p


def test_bad_enforcement_fields_are_logged_and_the_exit_still_counts(controller, fake_agent):
    """An exit whose mem_peak is not a size is still an exit (its status is
    then recorded as a failure, exit code 255), and acknowledged."""
    fa = fake_agent("n1", gpus=0)
    jid, _ = _running(controller, fa, {"command": ["x"], "memory": "1Gi"})
    fa.running.pop((jid, 0), None)
    fa.send({"type": "exited", "job": jid, "task": 0, "exit_code": 0, "signal": 0,
             "mem_peak": "lots", "time": time.time()})
    j = controller.wait_job(jid, "failed")
    assert j["exit_code"] == 255, j
    fa.wait_message("ack", job=jid)
    harness.wait_for(lambda: "exited: mem_peak: must be a number of bytes" in controller.log(),
                     what="the bad field in sluiced's log")


# ---- oom_score_adj in launches ----

OOM_RULES = [{"min_priority": 100, "value": -800}, {"min_priority": 10, "value": -600}]


def test_launch_carries_oom_score_adj_by_priority(controller_factory):
    ctl = controller_factory(config_overrides={"oom_score_adj": -400,
                                               "oom_score_adj_by_priority": OOM_RULES})
    fa = harness.FakeAgent(ctl, "n1", gpus=0).start()
    try:
        want = {-5: -400, 0: -400, 9: -400, 10: -600, 99: -600, 100: -800, 100000: -800}
        for prio, adj in want.items():
            jid = ctl.submit({"command": ["x"], "cpus": "1", "memory": "1Gi", "priority": prio})["id"]
            launch = fa.wait_message("launch", job=jid)[0]
            assert launch["oom_score_adj"] == adj, (prio, launch)
    finally:
        fa.close()


def test_launch_carries_the_default_oom_score_adj(controller, fake_agent):
    fa = fake_agent("n1", gpus=0)
    jid = controller.submit({"command": ["x"], "priority": 1000})["id"]
    assert fa.wait_message("launch", job=jid)[0]["oom_score_adj"] == -500


def _sluiced_with(tmp_path, text):
    """Runs sluiced on a config of text; returns (exit status, output)."""
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(text)
    exe = os.path.join(harness.build_dir(), "sluiced")
    r = subprocess.run([exe, "--config", str(cfg), "--state", str(tmp_path / "s.db"), "--init",
                        "--listen", "127.0.0.1:%d" % harness.free_port(),
                        "--agent-listen", "127.0.0.1:%d" % harness.free_port()],
                       capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    return r.returncode, r.stdout + r.stderr


@pytest.mark.parametrize("text,msg", [
    ("oom_score_adj: -1000\n", "oom_score_adj: -1000 would make the task unkillable"),
    ("oom_score_adj: -900\n", "oom_score_adj: must be above -900, the agent's own"),
    ("oom_score_adj: 1001\n", "oom_score_adj: must be a whole number from -899 to 1000"),
    ("oom_score_adj: lots\n", "oom_score_adj: must be a whole number"),
    ("oom_score_adj_by_priority: {min_priority: 1, value: -1}\n",
     "oom_score_adj_by_priority must be a sequence"),
    ("oom_score_adj_by_priority:\n  - {min_priority: 1}\n",
     "oom_score_adj_by_priority[]: min_priority and value are both required"),
    ("oom_score_adj_by_priority:\n  - {min_priority: 1, value: -1000}\n",
     "oom_score_adj_by_priority[].value: -1000 would make the task unkillable"),
    ("oom_score_adj_by_priority:\n  - {min_priority: 1, value: -950}\n",
     "oom_score_adj_by_priority[].value: must be above -900"),
    ("oom_score_adj_by_priority:\n  - {min_priority: x, value: 0}\n", "min_priority: must be a whole number"),
    ("oom_score_adj_by_priority:\n  - {min_priority: 1, value: 0, prio: 2}\n",
     'unknown key "prio" in oom_score_adj_by_priority[]'),
    ("oom_score_adj_by_priority:\n  - {min_priority: 5, value: 0}\n  - {min_priority: 5, value: 1}\n",
     "oom_score_adj_by_priority: min_priority 5 is given twice"),
])
def test_bad_oom_config_is_refused_naming_the_key(tmp_path, build_dir, text, msg):
    if not os.access(os.path.join(build_dir, "sluiced"), os.X_OK):
        pytest.skip("sluiced is not built")
    rc, out = _sluiced_with(tmp_path, text)
    assert rc == 2, (rc, out)
    assert "bad.yaml:" in out and msg in out, out


def test_example_config_loads(tmp_path, build_dir):
    """examples/sluiced.yaml (with the oom keys) is a config sluiced takes."""
    text = open(os.path.join(u.REPO, "examples", "sluiced.yaml")).read()
    text = re.sub(r"(?m)^state: .*$", "state: %s" % (tmp_path / "ex.db"), text)
    port, aport = harness.free_port(), harness.free_port()
    text = re.sub(r"(?m)^listen: .*$", "listen: 127.0.0.1:%d" % port, text)
    text = re.sub(r"(?m)^agent_listen: .*$", "agent_listen: 127.0.0.1:%d" % aport, text)
    assert "oom_score_adj_by_priority:" in text
    cfg = tmp_path / "ex.yaml"
    cfg.write_text(text)
    log = open(tmp_path / "ex.log", "wb")
    p = subprocess.Popen([os.path.join(build_dir, "sluiced"), "--config", str(cfg), "--init"],
                         stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        def healthy():
            assert p.poll() is None, open(tmp_path / "ex.log").read()
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/healthz" % port, timeout=1) as r:
                    return r.status == 200
            except OSError:
                return False

        harness.wait_for(healthy, what="sluiced on examples/sluiced.yaml")
    finally:
        harness._stop_process(p)
        log.close()
