"""
test_secrets.py - the tenants' secrets and config maps (docs/secrets.md):
POST/GET/DELETE /v1/secrets, `sluice secret`, and their delivery to tasks
through the job spec's `secrets`, against a real sluiced and sluice-agent.

What is checked: every route and CLI command; a tenant sees only its own
objects (another's answers 404, as an absent one); a task gets its
references as variables and as files of mode 0400 in its job directory,
removed when it ends; no value appears in any API answer, the job object,
the event stream, /metrics, the daemons' logs or the database file; a
secret missing at launch fails the job with a reason naming it; a key file
that others may read is refused. With root, tenants run as Unix users and
one tenant's task cannot read another's secret files.
"""

import base64
import hashlib
import json
import os
import stat
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import harness  # noqa: E402
import e2e_util as u  # noqa: E402
from sse import SSE  # noqa: E402
# Throwaway Unix users for the tenants (root only), as test_sec_users.py makes them.
from test_sec_users import base_dir, probe, users  # noqa: E402,F401

PASSWORD = "pw-Zq81-never-shown-7f3c"
TOKEN_VALUE = "tok-Kx92-never-shown-51aa"
BLOB = b"\x00\x01binary-Rr33\xff\xfe"
MODE_VALUE = "fast-mode-Lm07"


def _post(ctl, body, who="alice", query=""):
    return ctl.request("POST", "/v1/secrets" + query, body, token=ctl.token(who))


def _get(ctl, path="", who="alice"):
    return ctl.request("GET", "/v1/secrets" + path, token=ctl.token(who))


def _no_value(text, values=(PASSWORD, TOKEN_VALUE, MODE_VALUE)):
    for v in values:
        assert v not in text, "a secret's value appeared: %r in %.300s" % (v, text)


def test_routes_tenants_and_errors(controller_factory):
    ctl = controller_factory(config_overrides={"secrets": {"max_per_tenant": 3,
                                                           "max_bytes": "1Ki"}})
    st, body = _post(ctl, {"name": "db", "data": {"password": PASSWORD, "user": "admin"},
                           "binary_data": {"blob": base64.b64encode(BLOB).decode()}})
    assert st == 201, body
    _no_value(json.dumps(body))
    assert body["name"] == "db" and body["type"] == "secret"
    assert {k["key"]: k["size"] for k in body["keys"]} == {
        "blob": len(BLOB), "password": len(PASSWORD), "user": 5}
    assert body["created"] > 0
    # The same name again: a conflict naming it.
    st, body = _post(ctl, {"name": "db", "data": {}})
    assert st == 409 and body["error"]["field"] == "name", body
    # Each bad field named.
    for req, field in [({"name": "Bad_Name", "data": {}}, "name"),
                       ({"name": "x", "type": "vault"}, "type"),
                       ({"name": "x", "data": {"bad key": "v"}}, "data"),
                       ({"name": "x", "data": {"k": 1}}, "data"),
                       ({"name": "x", "binary_data": {"k": "not base64!"}}, "binary_data"),
                       ({"name": "x", "data": {"k": "a"}, "binary_data": {"k": "YQ=="}},
                        "binary_data"),
                       ({"name": "x", "data": {"k": "a" * 2000}}, "data"),
                       ({"name": "x", "colour": "red"}, "colour")]:
        st, body = _post(ctl, req)
        assert st == 400 and body["error"]["field"] == field, (req, st, body)
    # Lists: names, types, keys and sizes, never a value.
    st, body = _post(ctl, {"name": "app", "type": "config_map", "data": {"mode": MODE_VALUE}})
    assert st == 201, body
    st, body = _get(ctl)
    assert st == 200 and body["tenant"] == "alice", body
    assert [(s["name"], s["type"]) for s in body["secrets"]] == [("app", "config_map"),
                                                               ("db", "secret")]
    _no_value(json.dumps(body))
    st, one = _get(ctl, "/db")
    assert st == 200 and [k["key"] for k in one["keys"]] == ["blob", "password", "user"], one
    _no_value(json.dumps(one))
    # Another tenant sees nothing of them, and cannot tell them from absent ones.
    st, body = _get(ctl, who="bob")
    assert st == 200 and body["secrets"] == [], body
    st, body = _get(ctl, "/db", who="bob")
    st2, body2 = _get(ctl, "/nosuch", who="bob")
    assert st == st2 == 404, (body, body2)
    assert body["error"]["message"].replace("db", "X") == body2["error"]["message"].replace(
        "nosuch", "X")
    st, _ = ctl.request("DELETE", "/v1/secrets/db", token=ctl.token("bob"))
    assert st == 404
    st, body = _get(ctl, "?tenant=alice", who="bob")
    assert st == 403 and body["error"]["field"] == "tenant", body
    # The admin names a tenant.
    st, body = _get(ctl, who="admin")
    assert st == 400 and body["error"]["field"] == "tenant", body
    st, body = _get(ctl, "?tenant=alice", who="admin")
    assert st == 200 and len(body["secrets"]) == 2, body
    st, body = _post(ctl, {"name": "by-admin", "data": {"k": "v"}}, who="admin",
                     query="?tenant=bob")
    assert st == 201, body
    st, body = _get(ctl, who="bob")
    assert [s["name"] for s in body["secrets"]] == ["by-admin"]
    # The per-tenant limit names its field.
    assert _post(ctl, {"name": "third", "data": {}})[0] == 201
    st, body = _post(ctl, {"name": "fourth", "data": {}})
    assert st == 400 and body["error"]["field"] == "name" and "max_per_tenant" in \
        body["error"]["message"], body
    # Delete.
    st, body = ctl.request("DELETE", "/v1/secrets/db", token=ctl.token("alice"))
    assert st == 200 and body == {"deleted": "db"}, body
    assert _get(ctl, "/db")[0] == 404
    assert ctl.request("DELETE", "/v1/secrets/db", token=ctl.token("alice"))[0] == 404


def test_cli_create_list_show_delete(controller, tmp_path):
    env = u.cli_env(controller, controller.token("alice"), tmpdir=tmp_path)
    f = tmp_path / "pw.txt"
    f.write_bytes(PASSWORD.encode())
    r = u.sluice(["secret", "create", "web", "--from-literal", "user=admin",
                  "--from-file", "password=" + str(f), "--from-file", str(f)], env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "secret web created (3 keys)", r.stdout
    r = u.sluice(["secret", "create", "cfg", "--config-map", "--from-literal", "a=1"], env)
    assert r.returncode == 0 and "config map cfg created" in r.stdout, r.stderr
    r = u.sluice(["secret", "list"], env)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split()[:4] == ["NAME", "TYPE", "KEYS", "SIZE"], lines
    assert lines[1].split()[:3] == ["cfg", "config_map", "1"] and \
        lines[2].split()[:3] == ["web", "secret", "3"], lines
    r = u.sluice(["secret", "show", "web"], env)
    assert r.returncode == 0 and "password" in r.stdout and "pw.txt" in r.stdout, r.stdout
    assert "%d bytes" % len(PASSWORD) in r.stdout, r.stdout
    _no_value(r.stdout + r.stderr)
    got = u.sluice_json(["secret", "show", "web"], env)
    assert sorted(k["key"] for k in got["keys"]) == ["password", "pw.txt", "user"]
    # Usage errors, and another tenant's view.
    r = u.sluice(["secret", "create", "bad", "--from-literal", "novalue"], env)
    assert r.returncode == 2 and "KEY=VALUE" in r.stderr, r.stderr
    r = u.sluice(["secret", "show", "web"], u.cli_env(controller, controller.token("bob"),
                                                      tmpdir=tmp_path))
    assert r.returncode != 0 and "no secret or config map \"web\"" in r.stderr, r.stderr
    r = u.sluice(["secret", "list", "--tenant", "alice"],
                 u.cli_env(controller, controller.admin_token, tmpdir=tmp_path))
    assert r.returncode == 0 and "web" in r.stdout, r.stderr
    r = u.sluice(["secret", "delete", "web"], env)
    assert r.returncode == 0 and r.stdout.strip() == "web deleted", r.stdout
    r = u.sluice(["secret", "show", "web"], env)
    assert r.returncode != 0
    r = u.sluice(["secret", "--help"], env)
    assert r.returncode == 0 and "--from-file" in r.stdout and "--config-map" in r.stdout


# The task: reports what it was given without printing a value: sha256 of
# each variable and file, each file's mode and owner, and the directory.
PROBE = r"""
import hashlib, json, os
def h(b): return hashlib.sha256(b).hexdigest()
d = os.environ.get("SLUICE_SECRETS_DIR", "")
files = {}
for root, dirs, names in os.walk(d):
    for n in names:
        p = os.path.join(root, n)
        st = os.stat(p)
        files[os.path.relpath(p, d)] = {"sha": h(open(p, "rb").read()),
                                        "mode": st.st_mode & 0o7777, "uid": st.st_uid}
    for n in dirs:
        files[os.path.relpath(os.path.join(root, n), d) + "/"] = {
            "mode": os.stat(os.path.join(root, n)).st_mode & 0o7777}
env = {k: h(v.encode()) for k, v in os.environ.items() if k.startswith(("DB_", "APP_", "OPT_"))}
print(json.dumps({"dir": d, "files": files, "env": env}))
"""


def _sha(b):
    return hashlib.sha256(b if isinstance(b, bytes) else b.encode()).hexdigest()


def _probe_result(ctl, jid):
    return json.loads(u.job_log(ctl, jid).strip().splitlines()[-1])


def test_delivery_and_no_value_anywhere(controller, cluster):
    ctl = controller
    (agent,) = cluster(1, gpus=0)
    events = SSE(ctl, ctl.admin_token)
    assert _post(ctl, {"name": "db", "data": {"password": PASSWORD, "token": TOKEN_VALUE},
                       "binary_data": {"blob": base64.b64encode(BLOB).decode()}})[0] == 201
    assert _post(ctl, {"name": "app", "type": "config_map",
                       "data": {"mode": MODE_VALUE, "not-a-var": "x"}})[0] == 201
    refs = [{"secret": "db", "key": "password", "env": "DB_PASS"},
            {"secret": "db", "key": "absent", "env": "OPT_X", "optional": True},
            {"config_map": "app", "env_prefix": "APP_"},
            {"secret": "db", "path": "/etc/db"},
            {"config_map": "app", "path": "/etc/app", "items": {"mode": "conf/mode.txt"},
             "mode": 0o440}]
    j = ctl.submit({"command": ["/usr/bin/python3", "-c", PROBE], "cpus": "0.1",
                    "memory": "64Mi", "secrets": refs}, tenant="alice")
    # The job object shows the references, as given, and no value.
    got = ctl.job(j["id"], who="alice")
    assert got["secrets"] == refs, got
    done = ctl.wait_job(j["id"], ["succeeded", "failed"])
    assert done["state"] == "succeeded", (done, u.job_log(ctl, j["id"]))
    r = _probe_result(ctl, j["id"])
    assert r["env"] == {"DB_PASS": _sha(PASSWORD), "APP_mode": _sha(MODE_VALUE)}, r["env"]
    jobdir = os.path.join(os.path.realpath(agent.workdir), "jobs", u.job_name(ctl, j["id"]))
    assert r["dir"] == os.path.join(jobdir, "secrets", "0"), r
    f = r["files"]
    assert f["db/password"] == {"sha": _sha(PASSWORD), "mode": 0o400, "uid": os.geteuid()}, f
    assert f["db/blob"]["sha"] == _sha(BLOB) and f["db/token"]["mode"] == 0o400, f
    assert f["app/conf/mode.txt"] == {"sha": _sha(MODE_VALUE), "mode": 0o440,
                                      "uid": os.geteuid()}, f
    assert "app/not-a-var" not in f, f  # items: only the keys listed
    assert f["db/"]["mode"] == 0o500 and f["app/conf/"]["mode"] == 0o500, f
    # The files end with the task.
    harness.wait_for(lambda: not os.path.exists(os.path.join(jobdir, "secrets", "0")),
                     what="the task's secret files removed")
    # Nowhere else: API answers, the job object, events, /metrics, logs, the database.
    texts = [json.dumps(ctl.job(j["id"])), json.dumps(ctl.jobs(query="?all=1")),
             ctl.request("GET", "/metrics", token=ctl.admin_token)[1],
             json.dumps(ctl.request("GET", "/v1/history", token=ctl.admin_token)[1]),
             json.dumps(ctl.request("GET", "/v1/report", token=ctl.admin_token)[1]),
             json.dumps(_get(ctl)[1]), json.dumps(_get(ctl, "/db")[1])]
    events.wait_job(j["id"])
    texts.append(json.dumps(events.snapshot()))
    ctl.request("GET", "/v1/jobs/%d" % j["id"], token=ctl.admin_token)
    for path in (ctl.log_path, agent.log_path, os.path.join(agent.workdir, "state.json")):
        if os.path.exists(path):
            with open(path, "rb") as fh:
                texts.append(fh.read().decode(errors="replace"))
    for t in texts:
        _no_value(t)
    for path in (ctl.db_path, ctl.db_path + "-wal"):
        if os.path.exists(path):
            with open(path, "rb") as fh:
                raw = fh.read()
            for v in (PASSWORD, TOKEN_VALUE, MODE_VALUE):
                assert v.encode() not in raw, (path, v)
            assert BLOB not in raw
    key = os.path.join(ctl.dir, "secrets.key")
    st = os.stat(key)
    assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_size == 32


def test_references_checked_at_submit_and_launch(controller, cluster):
    ctl = controller
    cluster(1, gpus=0)
    assert _post(ctl, {"name": "bobs", "data": {"k": "v"}}, who="bob")[0] == 201
    # Another tenant's secret is, to alice, one that does not exist.
    spec = {"command": ["true"], "cpus": "0.1", "memory": "64Mi"}
    st, b1 = ctl.request("POST", "/v1/jobs", dict(spec, secrets=[{"secret": "bobs", "key": "k",
                                                                  "env": "K"}]),
                         token=ctl.token("alice"))
    st2, b2 = ctl.request("POST", "/v1/jobs", dict(spec, secrets=[{"secret": "nosuch",
                                                                   "key": "k", "env": "K"}]),
                          token=ctl.token("alice"))
    assert st == st2 == 400 and b1["error"]["field"] == "secrets", b1
    assert b1["error"]["message"].replace("bobs", "X") == b2["error"]["message"].replace(
        "nosuch", "X"), (b1, b2)
    # A reference's shape is checked, naming the item.
    st, b = ctl.request("POST", "/v1/jobs", dict(spec, secrets=[{"secret": "bobs"}]),
                        token=ctl.token("bob"))
    assert st == 400 and "secrets: [0]" in b["error"]["message"], b
    # Deleted between submission and launch: the job fails naming it.
    assert _post(ctl, {"name": "tmp", "data": {"k": "v"}})[0] == 201
    sleeper = ctl.submit({"command": ["sleep", "300"], "cpus": "0.1", "memory": "64Mi"})
    ctl.wait_job(sleeper["id"], "running")
    j = ctl.submit(dict(spec, secrets=[{"secret": "tmp", "key": "k", "env": "K"}],
                        dependency="afterany:%d" % sleeper["id"]))
    assert ctl.request("DELETE", "/v1/secrets/tmp", token=ctl.token("alice"))[0] == 200
    ctl.request("DELETE", "/v1/jobs/%d" % sleeper["id"], token=ctl.admin_token)
    done = ctl.wait_job(j["id"], "failed", timeout=30)
    assert "secret tmp does not exist" in done["reason"], done
    # A value with a NUL byte cannot be a variable: the job fails saying so.
    assert _post(ctl, {"name": "bin", "binary_data": {"b": base64.b64encode(BLOB).decode()}})[0] \
        == 201
    j = ctl.submit(dict(spec, secrets=[{"secret": "bin", "key": "b", "env": "B"}]))
    done = ctl.wait_job(j["id"], "failed", timeout=30)
    assert "key b of secret bin holds a NUL byte" in done["reason"], done


def test_key_file_readable_by_others_is_refused(tmp_path, build_dir):
    if not os.access(os.path.join(build_dir, "sluiced"), os.X_OK):
        pytest.skip("sluiced is not built")
    ctl = harness.Controller(tmp_path / "ctl")
    key = os.path.join(ctl.dir, "secrets.key")
    with open(key, "wb") as fh:
        fh.write(os.urandom(32))
    os.chmod(key, 0o644)
    r = subprocess.run([ctl.binary, "--config", ctl.config_path, "--init"], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 2 and "secrets.key_file: %s has mode 0644" % key in r.stderr, r.stderr
    with open(key, "wb") as fh:
        fh.write(b"short")
    os.chmod(key, 0o600)
    r = subprocess.run([ctl.binary, "--config", ctl.config_path, "--init"], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 2 and "must hold exactly 32 bytes" in r.stderr, r.stderr


# ---- tenants as Unix users (root) ----

@pytest.mark.skipif(os.geteuid() != 0, reason="switching users needs root")
def test_other_tenants_task_cannot_read_the_files(users, base_dir, build_dir):
    ctl = harness.Controller(os.path.join(base_dir, "secrets"), tasks_as_root=False, tenants=[
        {"name": "alice", "user": "sltest_a"}, {"name": "bob", "user": "sltest_b"}])
    os.chmod(ctl.dir, 0o711)
    agent = None
    try:
        ctl.start()
        agent = harness.Agent(ctl, "n1", gpus=0).start()
        assert _post(ctl, {"name": "db", "data": {"password": PASSWORD}})[0] == 201
        a = ctl.submit({"command": u.sh("exec sleep 300"), "cpus": "0.1", "memory": "64Mi",
                        "secrets": [{"secret": "db", "path": "/etc/db"}]}, tenant="alice")
        ctl.wait_job(a["id"], "running")
        jobdir = os.path.join(os.path.realpath(agent.workdir), "jobs", u.job_name(ctl, a["id"]))
        secret = os.path.join(jobdir, "secrets", "0", "db", "password")
        harness.wait_for(lambda: os.path.exists(secret), what="alice's secret file")
        st = os.stat(secret)
        assert (stat.S_IMODE(st.st_mode), st.st_uid) == (0o400, users["sltest_a"].pw_uid)
        # Bob's task tries to read it, and its directory.
        j = ctl.submit({"command": probe(secret, os.path.dirname(secret)), "cpus": "0.1",
                        "memory": "64Mi"}, tenant="bob")
        done = ctl.wait_job(j["id"], ["succeeded", "failed"])
        assert done["state"] == "succeeded", (done, u.job_log(ctl, j["id"]))
        tries = json.loads(u.job_log(ctl, j["id"]).strip().splitlines()[-1])["tries"]
        assert set(tries.values()) <= {"EACCES", "EPERM"}, tries
        # Alice's own second task reads its own copy.
        k = ctl.submit({"command": ["/usr/bin/python3", "-c", PROBE], "cpus": "0.1",
                        "memory": "64Mi", "secrets": [{"secret": "db", "path": "/etc/db"}]},
                       tenant="alice")
        done = ctl.wait_job(k["id"], ["succeeded", "failed"])
        assert done["state"] == "succeeded", (done, u.job_log(ctl, k["id"]))
        f = _probe_result(ctl, k["id"])["files"]["db/password"]
        assert f == {"sha": _sha(PASSWORD), "mode": 0o400, "uid": users["sltest_a"].pw_uid}, f
        ctl.request("DELETE", "/v1/jobs/%d" % a["id"], token=ctl.admin_token)
    finally:
        if agent:
            agent.stop()
        ctl.stop()


MANIFEST = """\
apiVersion: batch/v1
kind: Job
metadata: {name: envfrom}
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: c
        command: ["/bin/sh", "-c", "echo mode=$APP_mode; ls -a /nowhere-vol 2>&1 | head -1; echo end"]
        envFrom:
        - configMapRef: {name: app2}
          prefix: APP_
        - secretRef: {name: absent-secret, optional: true}
        volumeMounts:
        - {name: gone, mountPath: /nowhere-vol}
      volumes:
      - name: gone
        secret: {secretName: absent-too, optional: true}
"""


def test_envfrom_keys_left_out_are_told_and_optional_objects_give_nothing(controller, cluster,
                                                                          tmp_path):
    ctl = controller
    cluster(1, gpus=0)
    assert _post(ctl, {"name": "app2", "type": "config_map",
                       "data": {"mode": "m1", "not-a-var": "x"}})[0] == 201
    path = tmp_path / "job.yaml"
    path.write_text(MANIFEST)
    env = u.cli_env(ctl, ctl.token("alice"), tmpdir=tmp_path)
    # Optional objects are references the controller honours, not warnings.
    dry = u.sluice(["submit", "--dry-run", "-f", str(path)], env)
    assert dry.returncode == 0 and "optional" not in dry.stderr, dry.stderr
    refs = json.loads(dry.stdout)["secrets"]
    assert {"secret": "absent-secret", "env_prefix": "", "optional": True} in refs, refs
    assert {"secret": "absent-too", "path": "/nowhere-vol", "optional": True} in refs, refs
    r = u.sluice(["--json", "submit", "-f", str(path)], env)
    assert r.returncode == 0, r.stderr
    answer = json.loads(r.stdout)
    want = "secrets[0]: key not-a-var of config map app2 is not a variable name and is left out"
    assert answer["warnings"] == [want], answer
    assert "sluice submit: warning: job %d: %s" % (answer["id"], want) in r.stderr, r.stderr
    done = ctl.wait_job(answer["id"], ["succeeded", "failed"], timeout=30)
    out = u.job_log(ctl, answer["id"])
    assert done["state"] == "succeeded", (done, out)
    # The config map's variable is there; the absent secret gave nothing and
    # its volume no directory (the plain task finds no files there).
    assert "mode=m1" in out.splitlines(), out
    assert "end" in out.splitlines(), out
