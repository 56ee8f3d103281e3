"""
test_logstream.py - GET /v1/jobs/{id}/logs/stream, a task's output as
Server-Sent Events (docs/api.md "Log stream"), against a real sluiced and
a real agent: a line the task prints arrives while it runs, the stream
ends with `eof` once the task has ended, ?offset= resumes, another
tenant's token gets 403 and never a line, a task not yet run is a 409, an
unknown job a 404, and a client that does not read holds the controller
to its bound while the controller keeps answering. `sluice logs -f` reads
the same stream (test_cli.py). Every wait polls with a deadline.
"""

import os
import socket
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import harness  # noqa: E402
import e2e_util as u  # noqa: E402
from sse import SSE  # noqa: E402


def stream(ctl, jid, token, query=""):
    return SSE(ctl, token, path="/v1/jobs/%d/logs/stream" % jid, query=query)


def text(s):
    return "".join(e["data"]["data"] for e in s.snapshot() if e["event"] == "log")


def test_lines_arrive_live_and_the_stream_ends_at_eof(controller, cluster, tmp_path):
    cluster(1, gpus=0)
    go = tmp_path / "go"
    j = controller.submit({"command": u.sh("echo first; while [ ! -e %s ]; do sleep 0.05; done; echo second"
                                           % go)})
    controller.wait_job(j["id"], "running")
    alice = controller.token("alice")
    s = stream(controller, j["id"], alice, "?task=0")
    try:
        assert s.status == 200 and s.headers["Content-Type"].startswith("text/event-stream")
        s.wait(lambda evs: any(e["event"] == "hello" for e in evs), what="hello")
        harness.wait_for(lambda: text(s) == "first\n", what="the first line, live")
        assert not any(e["event"] == "eof" for e in s.snapshot())  # still running
        go.write_text("")
        s.wait(lambda evs: any(e["event"] == "eof" for e in evs), what="eof")
        assert text(s) == "first\nsecond\n"
        eof = [e for e in s.snapshot() if e["event"] == "eof"][0]
        assert eof["data"]["offset"] == len("first\nsecond\n")
        harness.wait_for(lambda: s.closed, what="the stream's end")
        logs = [e for e in s.snapshot() if e["event"] == "log"]
        assert all(e["data"]["job"] == j["id"] and e["data"]["task"] == 0 for e in logs)
    finally:
        s.close()
    # From an offset: only what follows it, then eof at once.
    r = stream(controller, j["id"], alice, "?offset=6")
    try:
        r.wait(lambda evs: any(e["event"] == "eof" for e in evs), what="eof from offset 6")
        assert text(r) == "second\n"
    finally:
        r.close()


def test_other_tenants_unknown_jobs_and_tasks_not_run(controller, cluster):
    cluster(1, gpus=0)
    j = controller.submit({"command": u.sh("echo bob-secret-line; sleep 300")}, tenant="bob")
    controller.wait_job(j["id"], "running")
    s = stream(controller, j["id"], controller.token("alice"))
    assert s.status == 403 and "bob-secret-line" not in s.body and "another tenant" in s.body
    assert stream(controller, 999999, controller.token("alice")).status == 404
    # The admin sees it; bob too.
    for tok in (controller.admin_token, controller.token("bob")):
        ok = stream(controller, j["id"], tok)
        try:
            harness.wait_for(lambda: "bob-secret-line" in text(ok), what="the owner's line")
        finally:
            ok.close()
    p = controller.submit({"gpus": 8, "command": ["true"]})  # cannot fit: pending
    s = stream(controller, p["id"], controller.token("alice"))
    assert s.status == 409 and "has not run yet" in s.body
    s = stream(controller, j["id"], controller.admin_token, "?task=5")
    assert s.status == 400 and "task" in s.body
    s = stream(controller, j["id"], controller.admin_token, "?offset=x")
    assert s.status == 400 and "offset" in s.body
    controller.request("DELETE", "/v1/jobs/%d" % j["id"], token=controller.admin_token)


def test_a_client_that_does_not_read_is_bounded(controller, cluster):
    cluster(1, gpus=0)
    # 8 MiB of output, far more than a stream's bound (256 KiB).
    j = controller.submit({"command": u.sh("head -c 8388608 /dev/zero | tr '\\0' x; sleep 300")})
    controller.wait_job(j["id"], "running")
    sock = socket.create_connection(("127.0.0.1", controller.port), timeout=10)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.sendall(("GET /v1/jobs/%d/logs/stream HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n"
                  % (j["id"], controller.admin_token)).encode())
    try:
        first = sock.recv(4096)
        assert b"200 OK" in first
        # The controller stays answerable and its memory bounded while the
        # stream waits on its reader: RSS grows by well under the output.
        pid = controller.proc.pid

        def rss():
            with open("/proc/%d/status" % pid) as f:
                return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
        before = rss()
        for _ in range(20):
            st, _body = controller.request("GET", "/healthz")
            assert st == 200
        harness.wait_for(lambda: controller.request("GET", "/v1/jobs/%d" % j["id"],
                                                    token=controller.admin_token)[0] == 200, what="answers")
        assert rss() - before < 4 * 1024, (before, rss())  # KiB: not the 8 MiB of output
        # A reader that starts reading gets more than the bound held.
        got = 0
        sock.settimeout(20)
        while got < (1 << 20):
            b = sock.recv(1 << 20)
            assert b
            got += b.count(b"xxxx") * 4  # the output's runs, not a header's stray x
    finally:
        sock.close()
    controller.request("DELETE", "/v1/jobs/%d" % j["id"], token=controller.admin_token)
