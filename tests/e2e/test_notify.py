"""
test_notify.py - job notifications with real daemons (docs/slurm.md
"Notifications", docs/config.md "Notifications"): a job's mail_type events
reach the operator's notify.command (a script that appends what it reads to
a file) and notify.webhook (an HTTP server on 127.0.0.1 started here), off
the controller's loop; a full queue drops events, counted in /metrics.

Every wait polls with a deadline; no assertion depends on elapsed time.
"""

import http.server
import json
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import harness  # noqa: E402
import e2e_util as u  # noqa: E402


class Hook(http.server.BaseHTTPRequestHandler):
    """Records each POST (path, headers, body) into the server's list."""

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        self.server.got.append((self.path, dict(self.headers), json.loads(body)))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


def start_hook():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    srv.got = []
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def write_command(tmp_path, gate=None):
    """A sendmail-like script: appends its variables and its stdin, one
    JSON line per event, to events.txt (after gate exists, if given)."""
    out = tmp_path / "events.txt"
    wait = ('while [ ! -e %s ]; do sleep 0.05; done\n' % gate) if gate else ""
    script = tmp_path / "notify.sh"
    script.write_text("#!/bin/sh\n%s"
                      "body=$(cat)\n"
                      "printf '%%s|%%s|%%s|%%s|%%s\\n' \"$SLUICE_EVENT\" \"$SLUICE_JOB_ID\" "
                      "\"$SLUICE_MAIL_USER\" \"$SLUICE_SUBJECT\" \"$body\" >> %s\n" % (wait, out))
    script.chmod(0o755)
    return str(script), out


def events(path):
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        ev, jid, user, subject, body = line.split("|", 4)
        rows.append({"event": ev, "job": int(jid), "user": user, "subject": subject,
                     "body": json.loads(body)})
    return rows


def metric(ctl, name):
    st, text = ctl.request("GET", "/metrics", token=ctl.admin_token)
    assert st == 200, text
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError("%s not in /metrics" % name)


def test_events_reach_the_command_and_the_webhook(controller_factory, tmp_path):
    hook = start_hook()
    cmd, out = write_command(tmp_path)
    url = "http://127.0.0.1:%d/hooks/sluice" % hook.server_address[1]
    ctl = controller_factory(config_overrides={"notify": {"command": cmd, "webhook": url}})
    started = []
    try:
        u.start_agents(ctl, 1, started, gpus=0)
        ok = ctl.submit({"mail_type": "ALL", "mail_user": "ana@example.org", "name": "train",
                         "command": ["true"]})
        ctl.wait_job(ok["id"], "succeeded")
        counter = tmp_path / "runs"
        bad = ctl.submit({"mail_type": "REQUEUE,FAIL", "retries": 1, "retry_backoff": 0,
                          "command": ["sh", "-c", "echo x >> %s; exit 5" % counter]})
        ctl.wait_job(bad["id"], "failed", timeout=30)
        quiet = ctl.submit({"command": ["true"]})  # no mail_type: no event
        ctl.wait_job(quiet["id"], "succeeded")

        want = [(ok["id"], "BEGIN"), (ok["id"], "END"), (bad["id"], "REQUEUE"), (bad["id"], "FAIL")]
        got = harness.wait_for(lambda: (lambda e: e if len(e) >= 4 else None)(events(out)),
                               timeout=20, what="4 events from the command")
        assert sorted((e["job"], e["event"]) for e in got) == sorted(want), got
        by = {(e["job"], e["event"]): e for e in got}
        end = by[(ok["id"], "END")]
        assert end["user"] == "ana@example.org", end
        assert end["subject"] == "Sluice Job_id=%d Name=train Ended, ExitCode 0" % ok["id"], end
        assert end["body"]["job"]["state"] == "succeeded" and end["body"]["event"] == "END", end
        req = by[(bad["id"], "REQUEUE")]["body"]["job"]
        assert req["attempt"] == 1 and req["reason"] == "task 0 exited with code 5", req
        fail = by[(bad["id"], "FAIL")]
        assert fail["user"] == "alice", fail  # no mail_user: the tenant
        assert fail["body"]["job"]["attempt"] == 2 and fail["body"]["job"]["exit_code"] == 5, fail

        posts = harness.wait_for(lambda: hook.got if len(hook.got) >= 4 else None, timeout=20,
                                 what="4 webhook posts")
        assert all(p[0] == "/hooks/sluice" for p in posts), posts
        assert all(p[1].get("Content-Type") == "application/json" for p in posts), posts
        assert sorted((p[2]["job"]["id"], p[2]["event"]) for p in posts) == sorted(want), posts
        harness.wait_for(lambda: metric(ctl, "sluice_notifications_delivered_total") >= 8,
                         what="8 deliveries counted")
        assert metric(ctl, "sluice_notifications_failed_total") == 0
        assert metric(ctl, "sluice_job_retries_total") == 1
    finally:
        for a in started:
            a.stop()
        hook.shutdown()


def test_time_limit_and_invalid_dependency_events(controller_factory, tmp_path):
    cmd, out = write_command(tmp_path)
    ctl = controller_factory(config_overrides={"notify": {"command": cmd}})
    started = []
    try:
        u.start_agents(ctl, 1, started, gpus=0)
        slow = ctl.submit({"mail_type": "TIME_LIMIT", "time_limit": 1,
                           "command": ["sleep", "600"]})
        ctl.wait_job(slow["id"], "failed", timeout=30)
        bad = ctl.submit({"command": ["false"]})
        dep = ctl.submit({"mail_type": "INVALID_DEPEND,END", "dependency": "afterok:%d" % bad["id"],
                          "command": ["true"]})
        ctl.wait_job(dep["id"], "failed")
        got = harness.wait_for(lambda: (lambda e: e if len(e) >= 3 else None)(events(out)),
                               timeout=20, what="3 events")
        assert sorted((e["job"], e["event"]) for e in got) == sorted(
            [(slow["id"], "TIME_LIMIT"), (dep["id"], "INVALID_DEPEND"), (dep["id"], "END")]), got
        tl = [e for e in got if e["event"] == "TIME_LIMIT"][0]
        assert tl["body"]["job"]["reason"] == "time limit of 1 s exceeded", tl
        assert tl["subject"].endswith("Reached time limit"), tl
        inv = [e for e in got if e["event"] == "INVALID_DEPEND"][0]
        assert inv["body"]["job"]["reason"].startswith("DependencyNeverSatisfied"), inv
    finally:
        for a in started:
            a.stop()


def test_a_preempted_job_notifies_its_requeue(controller_factory, tmp_path):
    cmd, out = write_command(tmp_path)
    ctl = controller_factory(config_overrides={
        "notify": {"command": cmd},
        "kill_grace": 1,
        "priority_classes": [{"name": "batch", "value": 10},
                             {"name": "urgent", "value": 1000, "may_preempt": True,
                              "tenants": ["alice"]}]})
    started = []
    try:
        u.start_agents(ctl, 1, started, gpus=1)
        low = ctl.submit({"gpus": 1, "priority_class": "batch", "mail_type": "REQUEUE",
                          "command": ["sleep", "600"]}, tenant="bob")
        ctl.wait_job(low["id"], "running")
        high = ctl.submit({"gpus": 1, "priority_class": "urgent", "command": ["true"]})
        ctl.wait_job(high["id"], "succeeded", timeout=30)
        got = harness.wait_for(lambda: events(out) or None, timeout=20, what="the requeue event")
        assert [(e["job"], e["event"]) for e in got] == [(low["id"], "REQUEUE")], got
        assert got[0]["body"]["job"]["reason"].startswith("requeued: "), got
        assert got[0]["user"] == "bob", got
    finally:
        for a in started:
            a.stop()


def test_a_blocked_command_neither_blocks_the_loop_nor_grows_the_queue(controller_factory,
                                                                       tmp_path):
    gate = tmp_path / "gate"
    cmd, out = write_command(tmp_path, gate=gate)
    ctl = controller_factory(config_overrides={"notify": {"command": cmd, "queue": 1,
                                                          "timeout": 60}})
    started = []
    try:
        u.start_agents(ctl, 1, started, gpus=0)
        ids = [ctl.submit({"mail_type": "BEGIN", "command": ["true"]})["id"] for _ in range(5)]
        for jid in ids:  # the loop goes on while the command waits
            ctl.wait_job(jid, "succeeded")
        st, _ = ctl.request("GET", "/healthz")
        assert st == 200
        dropped = harness.wait_for(lambda: metric(ctl, "sluice_notifications_dropped_total") or None,
                                   what="a drop")
        assert dropped >= 3  # one delivering, one queued, the rest dropped
        assert "queue full" in ctl.log()
        gate.write_text("")
        harness.wait_for(lambda: metric(ctl, "sluice_notifications_delivered_total") +
                         dropped == 5 or None, what="the rest delivered")
        assert len(events(out)) == 5 - dropped
    finally:
        for a in started:
            a.stop()


def test_mail_type_is_checked_at_submission(controller):
    st, body = controller.request("POST", "/v1/jobs", {"mail_type": "BEGIN,START",
                                                       "command": ["true"]},
                                  token=controller.token("alice"))
    assert st == 400 and body["error"]["field"] == "mail_type", body
    assert '"START" is not an event type' in body["error"]["message"], body


def test_config_refuses_a_webhook_it_cannot_speak(tmp_path):
    import subprocess
    ctl = harness.Controller(tmp_path / "bad", config_overrides={
        "notify": {"webhook": "https://hooks.example.org/x"}})
    r = subprocess.run([ctl.binary, "--config", ctl.config_path, "--init"], capture_output=True,
                       text=True, timeout=20)
    assert r.returncode == 2, r
    assert "notify.webhook" in r.stderr and "https is not spoken" in r.stderr, r.stderr
