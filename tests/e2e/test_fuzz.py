"""
test_fuzz.py - small seeded fuzz campaigns against a live sluiced: mutated
job submissions and raw HTTP on the API port, and mutated NDJSON on the
agent port (docs/protocol.md). Bounded in count; deterministic for a seed
(the mutations, not the daemon's timing). After each campaign the
controller must still answer /healthz and keep well-behaved nodes up.

The long campaigns that found the bugs these guard (an exit status of
signal 2^31-1 overflowing 128+signal; quadratic YAML parses) ran against an
AddressSanitizer+UBSan build; under such a build (SLUICE_BUILD) these
checks also fail on any sanitizer report in the daemon's log.
"""

import json
import random
import re
import socket

from harness import FakeAgent

SANITIZER = re.compile(r"ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:")

VALID = {"name": "fz", "tenant": "alice", "tasks": 2, "min_tasks": 1, "cpus": "2",
         "memory": "1Gi", "gpus": 1, "gpu_models": ["H100"], "priority": 3,
         "time_limit": 3600, "command": ["sleep", "1"], "env": {"A": "B"},
         "on_node_failure": "requeue"}

WEIRD = [None, True, 0, -1, 2**31, 2**63 - 1, -2**63, 1e308, -0.0, 0.5, "", "1e309", "-0",
         "0x10", "9223372036854775808m", "99999999999999999999Ei", "NaN", "5.", " 1", "x" * 300,
         "\u00e9", [], {}, [1, [2]], {"a": {"b": 1}}]

NUMS = [0, 1, -1, 2**31 - 1, -2**31, 2**32, 2**63 - 1, -2**63, 1e300, 0.5, "1", None, [], {}]


def _sanitizer_free(ctl):
    with open(ctl.log_path, "rb") as f:
        log = f.read().decode(errors="replace")
    assert not SANITIZER.search(log), log[-6000:]


def _mutated_spec(r):
    s = json.loads(json.dumps(VALID))
    for _ in range(r.choice([0, 1, 1, 2, 3])):
        c = r.random()
        if c < 0.2 and s:
            del s[r.choice(sorted(s))]
        elif c < 0.8:
            s[r.choice(sorted(VALID) + ["image", "gpu_share", "gpu_memory", "bogus"])] = r.choice(WEIRD)
        else:
            v = "x"
            for _ in range(r.choice([5, 200])):
                v = [v] if r.random() < 0.5 else {"k": v}
            s[r.choice(["env", "command"])] = v
    return s


def _raw_body(r, spec):
    b = json.dumps(spec).encode()
    c = r.random()
    if c < 0.3:
        return b[:r.randint(0, len(b))]
    if c < 0.45:
        i = r.randint(0, len(b))
        return b[:i] + bytes([r.randint(0, 255)]) + b[i:]
    if c < 0.55:
        return b[:-1] + b', "name": "dup"}'
    if c < 0.6:
        return b"[" * 5000 + b"]" * 5000
    return b


def _raw_http(ctl, data):
    s = socket.create_connection(("127.0.0.1", ctl.port), timeout=2)
    try:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        while s.recv(65536):
            pass
    except OSError:
        pass  # the server answered early (413, 400) and closed
    finally:
        s.close()


def test_api_survives_mutated_requests(controller):
    r = random.Random(20261129)
    tok = controller.tenant_tokens["alice"]
    statuses = set()
    for i in range(250):
        c = r.random()
        if c < 0.55:
            spec = _mutated_spec(r)
            if r.random() < 0.5:
                st, body = controller.request("POST", "/v1/jobs", raw=_raw_body(r, spec), token=tok)
            else:
                st, body = controller.request("POST", "/v1/jobs", spec, token=tok)
            assert st in (201, 400, 403), (st, body, spec)
            statuses.add(st)
            if st == 400:
                assert isinstance(body, dict) and body["error"]["code"], body
        elif c < 0.85:
            path = r.choice(["/v1/jobs", "/v1/jobs/1", "/v1/jobs/1/logs", "/v1/jobs/99999999999999999999",
                             "/v1/nodes", "/v1/tenants", "/metrics", "/", "//", "/v1/jobs/%2e%2e",
                             "/v1/jobs/-1", "/v1/jobs/1a"])
            q = r.choice(["", "?limit=-1", "?state=,,", "?state=", "?limit=99999999999999999999",
                          "?tenant=", "?view=", "?task=-1", "?offset=-5", "?%zz", "?a=%", "?&&&", "?=",
                          "?state=" + "x" * 3000, "?task=0&offset=18446744073709551615"])
            m = r.choice(["GET", "POST", "DELETE", "PUT", "HEAD", "PATCH", "OPTIONS"])
            headers = {}
            auth = r.choice([tok, controller.admin_token, controller.cluster_token, None, "x" * 5000])
            if r.random() < 0.2:
                headers["Authorization"] = r.choice(["Bearer", "Bearer ", "Basic abc", "bearer " + tok])
                auth = None
            st, _ = controller.request(m, path + q, token=auth, headers=headers)
            assert 200 <= st < 600
        else:
            good = json.dumps(_mutated_spec(r)).encode()
            head = b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + tok.encode() + b"\r\n"
            _raw_http(controller, r.choice([
                head + b"Content-Length: -1\r\n\r\n" + good,
                head + b"Content-Length: 99999999999999999999\r\n\r\n" + good,
                head + b"Transfer-Encoding: chunked\r\n\r\nzz\r\n" + good,
                head + b"Content-Length: %d\r\n\r\n" % (2 * 1024 * 1024) + b"x" * (2 * 1024 * 1024),
                bytes(r.randint(0, 255) for _ in range(r.randint(1, 500))),
                b"GET /v1/jobs HTTP/1.1\r\nX-A: " + b"y" * 100000 + b"\r\n\r\n",
            ]))
        if i % 50 == 49:
            assert controller.alive(), controller.log()
            assert controller.request("GET", "/healthz")[0] == 200
    assert 201 in statuses and 400 in statuses
    assert controller.alive()
    _sanitizer_free(controller)


def _hello(ctl, name, tasks=()):
    return {"type": "hello", "token": ctl.cluster_token, "version": "0.1.0",
            "node": {"name": name, "cpus": "64", "memory": "512Gi", "gpus": 4,
                     "gpu_model": "H100", "gpu_memory": "80Gi"}, "tasks": list(tasks)}


def _read_launches(s, into):
    """Reads what the controller sent so far; records launches."""
    s.settimeout(0.02)
    try:
        while True:
            data = s.recv(1 << 20)
            if not data:
                return
            for line in data.split(b"\n"):
                try:
                    m = json.loads(line)
                except ValueError:
                    continue
                if m.get("type") == "launch":
                    into.append((m["job"], m["task"]))
    except (socket.timeout, OSError):
        return


def test_agent_port_survives_mutated_messages(controller):
    r = random.Random(4)
    good = [FakeAgent(controller, name, gpus=4).start() for name in ("n1", "n2")]
    for g in good:
        g.start_heartbeats(0.2)
    launched = []
    tok = controller.tenant_tokens["alice"]

    def msg():
        m = {"type": r.choice(["started", "exited", "exited", "failed", "heartbeat", "logs", "bogus", 5])}
        job, task = r.choice(launched) if launched and r.random() < 0.7 else (r.choice(NUMS), r.choice(NUMS))
        m["job"], m["task"] = job, task
        for f in ("pid", "exit_code", "signal", "time", "end_time", "req", "offset", "reason", "data"):
            if r.random() < 0.4:
                m[f] = r.choice(NUMS)
        return json.dumps(m).encode()

    for i in range(100):
        if i % 5 == 0:
            controller.request("POST", "/v1/jobs", {"command": ["x"], "gpus": r.choice([0, 1, 4]),
                               "tasks": r.choice([1, 2])}, token=tok)
        name = "f%d" % r.randint(1, 3)
        try:
            s = socket.create_connection(("127.0.0.1", int(controller.agent_addr.rsplit(":", 1)[1])),
                                         timeout=2)
            kind = r.random()
            if kind < 0.15:
                s.sendall(msg() + b"\n")  # before hello
            elif kind < 0.3:
                h = _hello(controller, name)
                h["node"][r.choice(["name", "cpus", "memory", "gpus", "gpu_memory"])] = r.choice(
                    NUMS + ["", "n" * 70, "1e309", "-0", "0x10", "9223372036854775808m"])
                s.sendall(json.dumps(h).encode() + b"\n")
            else:
                tasks = [{"job": j, "task": t, "state": r.choice(["running", "exited", "failed", "zz"]),
                          "pid": r.choice(NUMS), "exit_code": r.choice(NUMS), "signal": r.choice(NUMS),
                          "end_time": r.choice(NUMS)}
                         for j, t in r.sample(launched, min(len(launched), r.randint(0, 3)))]
                s.sendall(json.dumps(_hello(controller, name, tasks)).encode() + b"\n")
                _read_launches(s, launched)
                for _ in range(r.randint(0, 20)):
                    s.sendall(msg() + b"\n")
                    if r.random() < 0.2:
                        _read_launches(s, launched)
                if r.random() < 0.05:
                    s.sendall(b'{"type":"heartbeat","pad":"' + b"p" * (1024 * 1024 + 10))
                if r.random() < 0.1:
                    s.sendall(b"\xff\xfe not json\n")
                _read_launches(s, launched)
            if r.random() < 0.5:
                s.sendall(b'{"type":"exi')  # a partial line, then the connection goes
            s.close()
        except OSError:
            pass  # the controller closed a connection it rejected
        if i % 25 == 24:
            assert controller.alive(), controller.log()
            assert controller.request("GET", "/healthz")[0] == 200
            for g in good:
                assert controller.node(g.name)["state"] == "up"
    assert launched, "no launch reached a fuzzed node"
    for g in good:
        g.close()
    assert controller.alive()
    _sanitizer_free(controller)
