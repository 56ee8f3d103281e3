"""
test_fuzz_tls.py - a seeded, bounded fuzz of the TLS handshake path of
both ports of a live sluiced (issue 8, docs/security.md): random bytes,
ClientHellos cut short or with flipped bytes, a TLS record header claiming
a huge length, a complete handshake followed by garbage, and half-open
handshakes held open while the campaign goes on. Deterministic for a seed
(the inputs, not the daemon's timing); bounded in count and in time.

Afterwards /healthz still answers over TLS, the two real TLS agents are
still up and connected, a job still runs through them, and (under an
ASan+UBSan build, SLUICE_BUILD) the daemon's log has no sanitizer report.
"""

import os
import random
import re
import socket
import ssl
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import harness  # noqa: E402
import tlsutil  # noqa: E402

SANITIZER = re.compile(r"ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:")
ROUNDS = 120      # connections per port
HELD_MAX = 40     # half-open handshakes kept open at once


def _client_hello(ctx):
    """The first flight of a real TLS client (a ClientHello record)."""
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(inc, out, server_hostname="127.0.0.1")
    with pytest.raises(ssl.SSLWantReadError):
        obj.do_handshake()
    hello = out.read()
    assert hello[:1] == b"\x16" and len(hello) > 100
    return hello


def _drain(s, limit=65536):
    """Reads what the server says until it closes, the limit, or 0.5 s."""
    s.settimeout(0.5)
    got = 0
    try:
        while got < limit:
            b = s.recv(4096)
            if not b:
                return
            got += len(b)
    except (socket.timeout, OSError):
        return


def _one(r, port, hello, ctx, held):
    kind = r.choice(["random", "truncated", "mutated", "huge_record", "garbage_after",
                     "half_open", "hello_twice"])
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    try:
        if kind == "random":
            s.sendall(bytes(r.getrandbits(8) for _ in range(r.choice([1, 5, 64, 517, 4096]))))
        elif kind == "truncated":
            s.sendall(hello[:r.randrange(1, len(hello))])
        elif kind == "mutated":
            b = bytearray(hello)
            for _ in range(r.randint(1, 8)):
                b[r.randrange(len(b))] = r.getrandbits(8)
            s.sendall(bytes(b))
        elif kind == "huge_record":
            s.sendall(b"\x16\x03\x01\xff\xff" + bytes(r.getrandbits(8) for _ in range(300)))
        elif kind == "hello_twice":
            s.sendall(hello + hello)
        elif kind == "garbage_after":
            t = ctx.wrap_socket(s, server_hostname="127.0.0.1")
            s = t
            junk = r.choice([bytes(r.getrandbits(8) for _ in range(r.choice([1, 100, 3000]))),
                             b"{\"type\": \"hello\"}\n", b"GET / HTTP/1.1\r\n\r\n",
                             b"\x00" * 2000 + b"\n"])
            t.sendall(junk)
        elif kind == "half_open":
            s.sendall(hello[:r.randrange(0, len(hello))])
            held.append(s)
            if len(held) > HELD_MAX:
                held.pop(0).close()
            return kind
        if kind != "truncated" and r.random() < 0.5:
            _drain(s)  # a complete (if bad) flight: the server answers or closes
    except (ssl.SSLError, OSError):
        pass  # the server refusing is the expected outcome
    if s not in held:
        s.close()
    return kind


@pytest.mark.parametrize("seed", [1, 2])
def test_fuzz_tls_handshakes_on_both_ports(tmp_path, seed):
    pki = tlsutil.make_pki(tmp_path / "pki", clients=("n1", "n2", "fz"))
    ctl = tlsutil.TLSController(tmp_path / "ctl", pki)
    agents, held = [], []
    try:
        ctl.start()
        for n in ("n1", "n2"):
            a = tlsutil.tls_agent(ctl, n, gpus=1)
            agents.append(a)
            a.start()
        api_ctx = tlsutil.client_context(pki["ca.crt"])
        agent_ctx = tlsutil.client_context(pki["ca.crt"], pki["fz.crt"], pki["fz.key"])
        r = random.Random(seed)
        kinds = {}
        for port, ctx in ((ctl.port, api_ctx), (ctl.agent_port, agent_ctx)):
            hello = _client_hello(ctx)
            for i in range(ROUNDS):
                k = _one(r, port, hello, ctx, held)
                kinds[k] = kinds.get(k, 0) + 1
                if i % 30 == 29:
                    assert ctl.request("GET", "/healthz", timeout=10)[0] == 200
        assert len(kinds) >= 6, kinds  # the campaign exercised nearly every kind
        # With the half-open handshakes still held: the daemon answers.
        assert held
        assert ctl.request("GET", "/healthz", timeout=10)[0] == 200
        for a in agents:
            n = ctl.node(a.name)
            assert n["state"] == "up" and n["connected"], n
            assert a.alive()
        jid = ctl.submit({"name": "after", "tenant": "alice", "tasks": 2, "gpus": 1,
                          "command": ["true"]})["id"]
        ctl.wait_job(jid, "succeeded")
        assert ctl.alive()
        with open(ctl.log_path, "rb") as f:
            log = f.read().decode(errors="replace")
        assert not SANITIZER.search(log), log[-6000:]
    finally:
        for s in held:
            s.close()
        for a in agents:
            a.stop()
        ctl.stop()
