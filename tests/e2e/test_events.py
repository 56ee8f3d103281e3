"""
test_events.py - GET /v1/events, the Server-Sent Events of jobs' and nodes'
changes (docs/api.md "Events"), at the HTTP level against a real sluiced,
and `sluice queue --watch` / `sluice show --watch` on top of it.

A tenant's stream carries only its own jobs' events (the admin's all);
ids increase; Last-Event-ID resumes from the ring, an id it no longer
holds gets a reset; heartbeats are comments; a client that never reads is
dropped while the controller keeps answering. Every wait polls with a
deadline; nothing depends on elapsed time.
"""

import os
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import harness  # noqa: E402
import e2e_util as u  # noqa: E402
from sse import SSE  # noqa: E402


def test_tenant_streams_carry_only_their_own_jobs(controller, fake_agent):
    admin = SSE(controller, controller.admin_token)
    alice = SSE(controller, controller.token("alice"))
    bob = SSE(controller, controller.token("bob"))
    try:
        for s in (admin, alice, bob):
            assert s.status == 200
            assert s.headers["Content-Type"].startswith("text/event-stream")
            s.wait(lambda evs: any(e["event"] == "hello" for e in evs), what="hello")
        a = controller.submit({"name": "a-job", "gpus": 1, "command": ["true"]}, tenant="alice")
        b = controller.submit({"name": "b-secret", "gpus": 1, "command": ["true"]}, tenant="bob")
        admin.wait_job(a["id"], "job.submitted")
        admin.wait_job(b["id"], "job.submitted")
        # A node's events reach every token.
        fake_agent("n1", gpus=2)
        for s in (admin, alice, bob):
            s.wait(lambda evs: any(e["event"] == "node.up" and e["data"]["node"]["name"] == "n1"
                                   for e in evs), what="node.up")
        admin.wait_job(a["id"], "job.started")
        admin.wait_job(b["id"], "job.started")
        # A marker after everything: once alice has it, she has had all hers.
        m = controller.submit({"name": "marker", "gpus": 1, "command": ["true"]}, tenant="alice")
        alice.wait_job(m["id"], "job.submitted")
        bob.wait_job(b["id"], "job.started")
        seen_a = {e["data"]["job"]["id"] for e in alice.job_events()}
        seen_b = {e["data"]["job"]["id"] for e in bob.job_events()}
        assert b["id"] not in seen_a and a["id"] in seen_a
        assert a["id"] not in seen_b and m["id"] not in seen_b
        assert all(e["data"]["job"]["tenant"] == "alice" for e in alice.job_events())
        assert all(e["data"]["job"]["tenant"] == "bob" for e in bob.job_events())
        assert "b-secret" not in repr(alice.snapshot())
        # Ids increase along each stream; the event's data names its type.
        for s in (admin, alice, bob):
            ids = [e["id"] for e in s.snapshot() if e["id"] is not None]
            assert ids == sorted(ids) and len(set(ids)) == len(ids)
            for e in s.job_events():
                assert e["data"]["type"] == e["event"] and e["data"]["id"] == e["id"]
    finally:
        for s in (admin, alice, bob):
            s.close()


def test_pending_job_event_carries_its_reason_and_cancel(controller):
    s = SSE(controller, controller.token("alice"))
    try:
        s.wait(lambda evs: evs, what="hello")
        j = controller.submit({"name": "too-big", "gpus": 4, "command": ["true"]})
        e = s.wait_job(j["id"], "job.submitted")
        assert e["data"]["job"]["state"] == "pending"
        assert e["data"]["job"]["reason"], e  # rendered after the cycle: it says why
        st, _ = controller.request("DELETE", "/v1/jobs/%d" % j["id"], token=controller.token("alice"))
        assert st == 200
        e = s.wait_job(j["id"], "job.cancelled")
        assert e["data"]["job"]["state"] == "cancelled"
    finally:
        s.close()


def test_last_event_id_resumes_and_old_ids_reset(controller):
    s = SSE(controller, controller.admin_token)
    j1 = controller.submit({"name": "one", "command": ["true"]})
    e1 = s.wait_job(j1["id"], "job.submitted")
    s.close()
    j2 = controller.submit({"name": "two", "command": ["true"]})
    j3 = controller.submit({"name": "three", "command": ["true"]})
    r = SSE(controller, controller.admin_token, last_event_id=e1["id"])
    try:
        r.wait_job(j3["id"], "job.submitted")
        evs = r.snapshot()
        assert evs[0]["event"] == "hello" and evs[0]["data"]["resumed"] is True
        got = [e["data"]["job"]["id"] for e in r.job_events()]
        assert j1["id"] not in got and got.index(j2["id"]) < got.index(j3["id"])
        assert all(e["id"] > e1["id"] for e in r.job_events())
    finally:
        r.close()
    # The query parameter does the same, for clients that cannot set headers.
    q = SSE(controller, controller.admin_token, query="?last_event_id=%d" % e1["id"])
    try:
        q.wait_job(j2["id"], "job.submitted")
    finally:
        q.close()
    # An id the ring no longer holds: a reset, and the stream goes on.
    old = SSE(controller, controller.admin_token, last_event_id=1)
    try:
        first = old.wait(lambda evs: evs, what="first frame")[0]
        assert first["event"] == "reset" and "list again" in first["data"]["reason"]
        j4 = controller.submit({"name": "four", "command": ["true"]})
        old.wait_job(j4["id"], "job.submitted")
    finally:
        old.close()


def test_heartbeat_and_bad_requests(controller):
    s = SSE(controller, controller.token("bob"), query="?heartbeat=1")
    try:
        harness.wait_for(lambda: s.comments >= 2, what="two heartbeats")
    finally:
        s.close()
    for query, hdr, field in (("?heartbeat=0", None, "heartbeat"),
                              ("?heartbeat=x", None, "heartbeat"),
                              ("", "abc", "Last-Event-ID"),
                              ("?last_event_id=-1", None, "last_event_id")):
        hdrs = {"Last-Event-ID": hdr} if hdr else None
        st, body = controller.request("GET", "/v1/events" + query, token=controller.admin_token,
                                      headers=hdrs)
        assert st == 400 and body["error"]["field"] == field, (query, st, body)
    st, body = controller.request("GET", "/v1/events")
    assert st == 401
    st, body = controller.request("GET", "/v1/events/stats", token=controller.token("alice"))
    assert st == 403 and body["error"]["code"] == "forbidden"
    st, body = controller.request("GET", "/v1/events/stats", token=controller.admin_token)
    assert st == 200 and body["clients"] >= 0 and "dropped" in body


def test_client_that_never_reads_is_dropped(controller):
    # A raw socket that asks for the stream and then never reads, with a
    # small receive buffer so that the kernel does not hold it all.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", controller.port))
    sock.sendall(("GET /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n"
                  % controller.admin_token).encode())
    try:
        harness.wait_for(lambda: controller.request("GET", "/v1/events/stats",
                                                    token=controller.admin_token)[1]["clients"] == 1,
                         what="the stream open")
        # Each burst is an array's worth of events (submitted, cancelled,
        # finished: ~80 KiB, less than half the client's bound, so each is
        # sent whole); unread, they pile up to the bound, which drops it.
        for burst in range(400):
            st, body = controller.request("GET", "/v1/events/stats", token=controller.admin_token)
            assert st == 200
            if body["dropped"] >= 1:
                break
            j = controller.submit({"name": "x" * 60, "gpus": 16, "array": "0-39",
                                   "command": ["true"]})
            st, _ = controller.request("DELETE", "/v1/jobs/%d" % j["id"], token=controller.admin_token)
            assert st == 200
        st, body = controller.request("GET", "/v1/events/stats", token=controller.admin_token)
        assert body["dropped"] >= 1 and body["clients"] == 0, body
        # The controller answers meanwhile and after, and its socket to the
        # client is closed (the client reads an end once it drains).
        st, h = controller.request("GET", "/healthz")
        assert st == 200 and h["status"] == "ok"
        sock.settimeout(10)
        total = 0
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            total += len(chunk)
            assert total < (64 << 20)
    finally:
        sock.close()


def test_queue_and_show_watch_reprint_on_events(controller, fake_agent, tmp_path):
    env = u.cli_env(controller, controller.token("alice"), tmpdir=tmp_path)
    q = subprocess.Popen([os.path.join(harness.build_dir(), "sluice"), "queue", "--watch"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = []
    try:
        j = controller.submit({"name": "watched-job", "gpus": 1, "command": ["true"]})
        # Reads lines until the new job's name shows in a reprint.
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            line = q.stdout.readline()
            if not line:
                break
            out.append(line)
            if "watched-job" in line:
                break
        assert any("watched-job" in l for l in out), (out, q.poll())
    finally:
        q.terminate()
        q.wait(timeout=10)
    # show --watch follows one job and returns once it has ended.
    s = subprocess.Popen([os.path.join(harness.build_dir(), "sluice"), "show", "--watch",
                          str(j["id"])], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        f = fake_agent("n1", gpus=1)
        f.wait_message("launch", job=j["id"])
        controller.wait_job(j["id"], "running")
        f.exit(j["id"], 0, 0)
        stdout, stderr = s.communicate(timeout=30)
    finally:
        if s.poll() is None:
            s.kill()
            s.wait()
    assert s.returncode == 0, (stdout, stderr)
    assert "state:" in stdout and "succeeded" in stdout.split("job %d" % j["id"])[-1], stdout


def test_stream_over_tls(tmp_path):
    """The same stream over the API's TLS (docs/security.md): events and
    heartbeats through OpenSSL's bufferevents."""
    import tlsutil
    ctl = tlsutil.TLSController(tmp_path / "ctl", tlsutil.make_pki(tmp_path / "pki"))
    ctl.start()
    s = None
    try:
        s = SSE(ctl, ctl.token("alice"), query="?heartbeat=1", connect=lambda: ctl._connect(60))
        assert s.status == 200
        j = ctl.submit({"name": "over-tls", "command": ["true"]})
        e = s.wait_job(j["id"], "job.submitted")
        assert e["data"]["job"]["name"] == "over-tls"
        harness.wait_for(lambda: s.comments >= 1, what="a heartbeat over TLS")
    finally:
        if s:
            s.close()
        ctl.stop()


def test_burst_larger_than_the_ring_resets_and_follows(controller):
    """An array of 5,000 (more changes in one iteration than the ring
    holds, and more bytes than a client's bound): a reading client gets a
    reset, is not dropped, and follows what comes next."""
    s = SSE(controller, controller.admin_token)
    try:
        s.wait(lambda evs: evs, what="hello")
        controller.submit({"name": "big", "gpus": 16, "array": "0-4999", "command": ["true"]})
        reset = s.wait(lambda evs: [e for e in evs if e["event"] == "reset"], what="a reset")[0]
        assert "list again" in reset["data"]["reason"] and reset["id"] is not None
        j = controller.submit({"name": "after", "command": ["true"]})
        e = s.wait_job(j["id"], "job.submitted")
        assert e["id"] > reset["id"]
        st, body = controller.request("GET", "/v1/events/stats", token=controller.admin_token)
        assert body["dropped"] == 0 and body["clients"] == 1 and body["ring_events"] <= 4096
    finally:
        s.close()
