"""
test_sec_steps.py - a job step's way in is its own job's alone
(docs/security.md, "Job steps"): a hostile tenant's task, with everything
it can read (its environment, its job directory, /proc), cannot start a
step in another tenant's allocation, reach its step daemon's socket, or
read its step token.

Real sluiced and a root sluice-agent; tenants alice and bob are two
throwaway Unix users made for this module (sltest_sa, sltest_sb) and
removed after it; everything lives under a /tmp directory of mode 0711 so
that the users reach their job directories. Skipped unless root.
"""

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import harness  # noqa: E402
import e2e_util as u  # noqa: E402

USERS = ("sltest_sa", "sltest_sb")
MARK = "sluice e2e steps test user"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="switching users needs root")


def _remove_ours():
    for name in USERS:
        try:
            if pwd.getpwnam(name).pw_gecos == MARK:
                subprocess.run(["userdel", name], capture_output=True, timeout=30)
        except KeyError:
            pass


@pytest.fixture(scope="module")
def node(build_dir):
    if not shutil.which("useradd"):
        pytest.skip("useradd is not installed")
    _remove_ours()
    for name in USERS:
        try:
            pwd.getpwnam(name)
            pytest.skip("user %s exists and is not this test's" % name)
        except KeyError:
            pass
    base = tempfile.mkdtemp(prefix="sluice-sec-steps-", dir="/tmp")
    os.chmod(base, 0o711)
    ctl = agent = None
    try:
        for name in USERS:
            subprocess.run(["useradd", "--no-create-home", "--user-group", "--shell",
                            "/usr/sbin/nologin", "--comment", MARK, name], check=True,
                           capture_output=True, timeout=30)
        ctl = harness.Controller(os.path.join(base, "main"), tasks_as_root=False, tenants=[
            {"name": "alice", "user": "sltest_sa"}, {"name": "bob", "user": "sltest_sb"}])
        os.chmod(ctl.dir, 0o711)
        ctl.start()
        agent = harness.Agent(ctl, "n1", gpus=2, cpus=4).start()
        yield ctl, agent
    finally:
        if agent:
            agent.stop()
        if ctl:
            ctl.stop()
        _remove_ours()
        shutil.rmtree(base, ignore_errors=True)


# bob's task: every way in it can think of, each result on one line of JSON.
HOSTILE = r"""
import errno, http.client, json, os, socket, subprocess, sys
job, pid, sock = sys.argv[1], int(sys.argv[2]), sys.argv[3]
out = {}
def attempt(name, fn):
    try:
        out[name] = fn()
    except OSError as e:
        out[name] = errno.errorcode.get(e.errno, str(e.errno))
attempt("environ", lambda: open("/proc/%d/environ" % pid, "rb").read() and "read")
def connect():
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock)
    return "connected"
attempt("socket", connect)
host = os.environ["SLUICE_SERVER"].split("//")[1]
def post(token):
    c = http.client.HTTPConnection(host, timeout=10)
    h = {"Content-Type": "application/json"}
    if token:
        h["Authorization"] = "Bearer " + token
    c.request("POST", "/v1/jobs/%s/steps" % job, json.dumps({"argv": ["id"]}), h)
    return c.getresponse().status
out["no_token"] = post(None)
out["own_step_token"] = post(os.environ["SLUICE_STEP_TOKEN"])
out["forged"] = post("step-" + "0" * 64)
r = subprocess.run(["srun", "--jobid", job, "id"], capture_output=True, text=True)
out["srun"] = [r.returncode, r.stderr.strip()]
print(json.dumps(out))
"""


def test_hostile_tenant_cannot_reach_another_allocations_steps(node, tmp_path):
    ctl, agent = node
    a = ctl.submit({"allocation": True, "tasks": 2, "cpus": "0.5", "memory": "64Mi",
                    "command": ["/bin/sh", "-c", 'srun -n 2 id -un >"$TMPDIR/who" 2>&1; sleep 120']},
                   tenant="alice")
    try:
        pids = u.wait_running_pids(ctl, a["id"], n=2)
        sock = os.path.join(agent.workdir, "jobs", u.job_name(ctl, a["id"]), ".sluice-step.0")
        harness.wait_for(lambda: os.path.exists(sock), what="alice's step daemon listening")
        b = ctl.submit({"allocation": True, "tasks": 1, "cpus": "0.5", "memory": "64Mi",
                        "command": ["/usr/bin/python3", "-c", HOSTILE, str(a["id"]), str(pids[0]), sock]},
                       tenant="bob")
        done = ctl.wait_job(b["id"], ["succeeded", "failed"], timeout=60)
        log = u.job_log(ctl, b["id"])
        assert done["state"] == "succeeded", log
        r = json.loads(log.strip().splitlines()[-1])
        assert r["environ"] in ("EACCES", "EPERM"), r
        assert r["socket"] in ("EACCES", "EPERM"), r
        assert r["no_token"] == 401 and r["own_step_token"] == 401 and r["forged"] == 401, r
        assert r["srun"][0] == 1 and "not job %d's" % a["id"] in r["srun"][1], r
        # alice's own step ran, both ranks as her user.
        who = os.path.join(agent.workdir, "jobs", u.job_name(ctl, a["id"]), "who")
        harness.wait_for(lambda: open(who).read().count("\n") == 2, what="alice's step")
        assert open(who).read() == "sltest_sa\nsltest_sa\n"
    finally:
        ctl.request("DELETE", "/v1/jobs/%d" % a["id"], token=ctl.token("admin"))
