"""
test_sec_tls.py - TLS, certificates and hashed tokens (issue 8,
docs/security.md), against real daemons on 127.0.0.1:

- the API over TLS: the CLI and Python's ssl module with verification on;
  a wrong CA is refused; plain HTTP to the TLS port fails at once and the
  daemon keeps answering;
- agents over TLS with client certificates: a certificate for n1 cannot
  hello as n2; no certificate is refused when one is required; jobs run;
- `sluice up` with TLS end to end (keys 0600, submit, queue, logs, the
  certificates reused on the next `up`);
- plain TCP on 0.0.0.0 needs --insecure, on either port;
- sha256: tokens for admin, tenants and the cluster: accepted when right,
  refused when wrong; a malformed one stops sluiced at start.
"""

import hashlib
import hmac
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import warnings

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import e2e_util as u  # noqa: E402
import harness  # noqa: E402
import tlsutil  # noqa: E402


@pytest.fixture
def pki(tmp_path):
    return tlsutil.make_pki(tmp_path / "pki", clients=("n1", "n2"))


@pytest.fixture
def stack(tmp_path):
    """Everything started here is stopped at teardown (agents first)."""
    started = []
    yield started
    for d in reversed(started):
        d.stop()


def _tls_ctl(tmp_path, pki, stack, **kw):
    c = tlsutil.TLSController(tmp_path / "ctl", pki, **kw)
    stack.append(c)
    return c.start()


def test_api_over_tls_with_python_and_cli(tmp_path, pki, stack):
    ctl = _tls_ctl(tmp_path, pki, stack)
    # Python's ssl module, verification and host check on (IP SAN 127.0.0.1).
    st, body = ctl.request("GET", "/v1/nodes", token=ctl.admin_token)
    assert st == 200 and body["nodes"] == []
    with socket.create_connection(("127.0.0.1", ctl.port), timeout=10) as raw:
        with ctl.ssl_context.wrap_socket(raw, server_hostname="127.0.0.1") as s:
            assert s.version() in ("TLSv1.2", "TLSv1.3")
    # TLS 1.1 and older are refused.
    old = tlsutil.client_context(pki["ca.crt"])
    old.minimum_version = ssl.TLSVersion.MINIMUM_SUPPORTED
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        old.maximum_version = ssl.TLSVersion.TLSv1_1
    with pytest.raises((ssl.SSLError, OSError)):
        with socket.create_connection(("127.0.0.1", ctl.port), timeout=10) as raw:
            old.wrap_socket(raw, server_hostname="127.0.0.1").close()
    # A client that trusts another CA refuses the server.
    wrong = tlsutil.client_context(pki["other.crt"])
    with pytest.raises(ssl.SSLCertVerificationError):
        with socket.create_connection(("127.0.0.1", ctl.port), timeout=10) as raw:
            wrong.wrap_socket(raw, server_hostname="127.0.0.1").close()
    # The CLI: --cacert, SLUICE_CACERT, and a wrong CA (exit 3, the reason said).
    env = u.cli_env(ctl, token=ctl.admin_token, tmpdir=tmp_path)
    r = u.sluice(["--cacert", pki["ca.crt"], "queue", "--all"], env)
    assert r.returncode == 0, r.stderr
    env_ca = dict(env, SLUICE_CACERT=pki["ca.crt"])
    r = u.sluice(["submit", "-q", "--tenant", "alice", "--", "true"], env_ca)
    assert r.returncode == 0, r.stderr
    r = u.sluice(["--server", "https://localhost:%d" % ctl.port, "nodes"], env_ca)
    assert r.returncode == 0, r.stderr
    r = u.sluice(["--cacert", pki["other.crt"], "queue"], env)
    assert r.returncode == 3 and "certificate" in r.stderr, r.stderr
    r = u.sluice(["queue"], env)  # the system's trust store does not know the test CA
    assert r.returncode == 3 and "certificate" in r.stderr, r.stderr
    # A certificate for 127.0.0.1 does not pass for another name.
    r = u.sluice(["--server", "https://127.0.0.2:%d" % ctl.port, "queue"], env_ca)
    assert r.returncode == 3, r.stderr
    # Plain HTTP to the TLS port: the connection ends without a reply, at once.
    with socket.create_connection(("127.0.0.1", ctl.port), timeout=10) as s:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        data = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        assert b"200 OK" not in data
    r = u.sluice(["--server", "http://127.0.0.1:%d" % ctl.port, "queue"], env)
    assert r.returncode == 3
    # The daemon still answers over TLS, with a plain-HTTP client left hanging.
    idle = socket.create_connection(("127.0.0.1", ctl.port), timeout=10)
    idle.sendall(b"GET /healthz HTTP/1.1\r\n")
    try:
        assert ctl.request("GET", "/healthz")[0] == 200
    finally:
        idle.close()


def test_agents_over_tls_bind_their_node_name(tmp_path, pki, stack):
    ctl = _tls_ctl(tmp_path, pki, stack)
    n1 = tlsutil.tls_agent(ctl, "n1", gpus=2)
    stack.append(n1)
    n1.start()
    # A job runs end to end through the TLS agent port (launch, started, exited).
    jid = ctl.submit({"name": "t", "tenant": "alice", "gpus": 1, "command": ["echo", "over tls"]})["id"]
    ctl.wait_job(jid, "succeeded")
    assert u.job_log(ctl, jid) == "over tls\n"
    # n1's certificate cannot say hello as n2; no certificate cannot either.
    impostor = tlsutil.tls_agent(ctl, "n2", cert="n1", gpus=2)
    nocert = tlsutil.tls_agent(ctl, "n3", cert="", gpus=2)
    stack.extend([impostor, nocert])
    impostor.start(wait=False)
    nocert.start(wait=False)
    harness.wait_for(lambda: "hello as node=n2 refused" in ctl.log(), what="n2 refused")
    harness.wait_for(lambda: "certificate" in nocert.log(), what="n3's TLS failure logged")
    assert [n["name"] for n in ctl.nodes()] == ["n1"]
    assert ctl.node("n1")["state"] == "up" and ctl.node("n1")["connected"]
    # An agent that trusts another CA refuses the controller.
    wrongca = tlsutil.tls_agent(ctl, "n4", cert="n2", ca=pki["other.crt"], gpus=2)
    stack.append(wrongca)
    wrongca.start(wait=False)
    harness.wait_for(lambda: "certificate verify failed" in wrongca.log(), what="wrong CA logged")
    # The right certificate for n2 is accepted (in the impostor's workdir).
    impostor.stop()
    n2 = tlsutil.tls_agent(ctl, "n2", gpus=2)
    stack.append(n2)
    n2.start()
    assert sorted(n["name"] for n in ctl.nodes()) == ["n1", "n2"]


def test_tls_without_client_certs_and_plain_tcp_to_the_agent_port(tmp_path, pki, stack):
    ctl = _tls_ctl(tmp_path, pki, stack, agent_client_cert="none")
    a = tlsutil.tls_agent(ctl, "n1", cert="", gpus=1)
    stack.append(a)
    a.start()
    # A plain-TCP agent cannot talk to a TLS agent port.
    plain = harness.Agent(ctl, "n2", gpus=1)
    stack.append(plain)
    plain.start(wait=False)
    with socket.create_connection(("127.0.0.1", ctl.agent_port), timeout=10) as s:
        s.sendall(json.dumps({"type": "hello", "token": ctl.cluster_token}).encode() + b"\n")
        s.settimeout(10)
        try:
            got = s.recv(4096)
        except ConnectionResetError:
            got = b""
        assert b"welcome" not in got
    assert [n["name"] for n in ctl.nodes()] == ["n1"]


def test_up_with_tls_end_to_end(tmp_path):
    work = tmp_path / "proj"
    work.mkdir()
    env = u.cli_env(tmpdir=tmp_path)
    env.pop("SLUICE_DIR")
    port, aport = harness.free_port(), harness.free_port()
    r = u.sluice(["up", "--detach", "--port", str(port), "--agent-port", str(aport), "--gpus", "1",
                  "--cpus", "2", "--memory", "4Gi", "--name", "local"], env, cwd=str(work))
    tls = work / ".sluice" / "tls"
    try:
        assert r.returncode == 0, r.stderr
        assert "https://127.0.0.1:%d" % port in r.stdout
        for k in ("ca.key", "server.key", "agent.key"):
            assert (os.stat(tls / k).st_mode & 0o777) == 0o600, k
        cfg = json.loads((work / ".sluice" / "cli.json").read_text())
        assert cfg["server"].startswith("https://") and cfg["cacert"] == str(tls / "ca.crt")
        # The README's commands, with no flags.
        r = u.sluice(["submit", "--name", "hello", "--", "echo", "hello from sluice"], env, cwd=str(work))
        assert r.returncode == 0, r.stderr
        jid = int(r.stdout.split()[2])
        harness.wait_for(lambda: u.sluice_json(["show", str(jid)], env, cwd=str(work))["state"]
                         == "succeeded", what="job succeeded")
        q = u.sluice(["queue", "--all"], env, cwd=str(work))
        assert q.returncode == 0 and "hello" in q.stdout
        assert u.sluice(["logs", str(jid)], env, cwd=str(work)).stdout == "hello from sluice\n"
        # Python verifies the server with the CA of `up`; the agent cert names the node.
        ctx = tlsutil.client_context(str(tls / "ca.crt"))
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
            ctx.wrap_socket(raw, server_hostname="127.0.0.1").close()
        text = subprocess.run(["openssl", "x509", "-noout", "-subject", "-ext", "subjectAltName",
                               "-in", str(tls / "agent.crt")], capture_output=True, text=True).stdout
        assert "CN = local" in text and "DNS:local" in text
        before = {k: (tls / k).read_bytes() for k in ("ca.crt", "server.crt", "agent.crt")}
    finally:
        u.sluice(["down"], env, cwd=str(work))
    r = u.sluice(["up", "--detach", "--name", "local"], env, cwd=str(work))
    try:
        assert r.returncode == 0, r.stderr
        assert {k: (tls / k).read_bytes() for k in before} == before
        assert u.sluice_json(["show", str(jid)], env, cwd=str(work))["state"] == "succeeded"
    finally:
        u.sluice(["down"], env, cwd=str(work))


def _sluiced(args, timeout=20):
    return subprocess.run([os.path.join(harness.build_dir(), "sluiced")] + args,
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("key", ["listen", "agent_listen"])
def test_plain_tcp_off_loopback_needs_insecure(tmp_path, key, stack):
    ctl = harness.Controller(tmp_path / "ctl")
    port = ctl.port if key == "listen" else ctl.agent_port
    ctl.config[key] = "0.0.0.0:%d" % port
    ctl._write_config()
    r = _sluiced(["--config", ctl.config_path])
    assert r.returncode == 2
    assert "0.0.0.0:%d" % port in r.stderr and "--insecure" in r.stderr and key in r.stderr
    # With --insecure it serves (in a network namespace of its own: tests
    # listen on loopback only).
    _stays_up_in_own_netns(ctl, ["--insecure"])


def _stays_up_in_own_netns(ctl, extra):
    """Runs ctl's sluiced in a network namespace of its own (no interface
    but a loopback that is down, so 0.0.0.0 reaches nothing outside) and
    checks that it keeps running past its checks and opens its state."""
    if shutil.which("unshare") is None or subprocess.run(
            ["unshare", "-n", "true"], capture_output=True).returncode != 0:
        pytest.skip("no network namespaces here (unshare -n)")
    p = subprocess.Popen(["unshare", "-n", ctl.binary, "--config", ctl.config_path, "--init"] + extra,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        out = p.communicate(timeout=1.5)[1]
        pytest.fail("sluiced %s exited %s: %s" % (" ".join(extra), p.returncode, out))
    except subprocess.TimeoutExpired:
        pass  # still serving
    finally:
        p.kill()
        p.wait()
    assert os.path.exists(ctl.db_path)


def test_tls_on_any_address_needs_no_flag(tmp_path, pki):
    ctl = tlsutil.TLSController(tmp_path / "ctl", pki)
    ctl.config["listen"] = "0.0.0.0:%d" % ctl.port
    ctl._write_config()
    _stays_up_in_own_netns(ctl, [])


def _hashed(tok):
    r = subprocess.run([os.path.join(harness.build_dir(), "sluiced"), "hash-token"],
                       input=tok + "\n", capture_output=True, text=True, timeout=20)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_hashed_tokens(tmp_path, stack):
    admin, cluster, alice = "adm-plain-1", "clu-plain-2", "tok-alice-3"
    h = _hashed(admin)
    assert h == "sha256:" + hashlib.sha256(admin.encode()).hexdigest()
    ctl = harness.Controller(tmp_path / "ctl", config_overrides={
        "admin_token": h, "cluster_token": _hashed(cluster),
        "tenants": [{"name": "alice", "weight": 1, "token": _hashed(alice)}]})
    ctl.admin_token, ctl.cluster_token, ctl.tenant_tokens = admin, cluster, {"alice": alice}
    stack.append(ctl)
    ctl.start()
    assert ctl.request("GET", "/v1/nodes", token=admin)[0] == 200
    assert ctl.request("GET", "/v1/nodes", token=h)[0] == 401  # the stored form is no password
    assert ctl.request("GET", "/v1/nodes", token="adm-plain-x")[0] == 401
    assert ctl.request("POST", "/v1/jobs", {"tenant": "alice", "command": ["true"]},
                       token=alice)[0] == 201
    assert ctl.request("POST", "/v1/jobs", {"tenant": "alice", "command": ["true"]},
                       token=alice + "x")[0] == 401
    good = harness.Agent(ctl, "n1", gpus=1)
    stack.append(good)
    good.start()
    bad = harness.Agent(ctl, "n2", gpus=1)
    bad.args[bad.args.index("--token") + 1] = "clu-wrong"
    stack.append(bad)
    bad.start(wait=False)
    harness.wait_for(lambda: "bad token" in bad.log(), what="wrong cluster token refused")
    assert [n["name"] for n in ctl.nodes()] == ["n1"]
    # A hashed cluster token derives no node tokens: the hash is no secret
    # (anyone who reads the config has it), so a token keyed with it is
    # refused, and `sluiced node-token` says why.
    r = _sluiced(["node-token", "n3", "--config", ctl.config_path])
    assert r.returncode == 2 and "hashed" in r.stderr, r.stderr
    forged = hmac.new(ctl.config["cluster_token"].encode(), b"sluice-node:n3",
                      hashlib.sha256).hexdigest()
    bad3 = harness.Agent(ctl, "n3", gpus=1, token=forged)
    stack.append(bad3)
    bad3.start(wait=False)
    harness.wait_for(lambda: "bad token" in bad3.log(), what="node token keyed with the hash refused")
    assert [n["name"] for n in ctl.nodes()] == ["n1"]


def test_malformed_hashed_token_stops_sluiced(tmp_path):
    ctl = harness.Controller(tmp_path / "ctl", config_overrides={"admin_token": "sha256:abc"})
    r = _sluiced(["--config", ctl.config_path])
    assert r.returncode == 2 and "admin_token" in r.stderr and "64" in r.stderr, r.stderr
    r = subprocess.run([os.path.join(harness.build_dir(), "sluiced"), "hash-token"], input="",
                       capture_output=True, text=True, timeout=20)
    assert r.returncode == 2 and "no token" in r.stderr
