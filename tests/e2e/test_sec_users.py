"""
test_sec_users.py - tenants are Unix users on the node (issue 8, finding 2:
one tenant's job read another's logs and, through /proc/PID/environ, its
API key).

Real sluiced and sluice-agent, the agent as root, with two throwaway Unix
users (sltest_a, sltest_b) and a group (sltest_g) created for this module
and removed after it. A probe task (python3) reports who it runs as
(/proc/self/status), where, what it sees in its environment, and what
happens when it opens paths it is given; the tests check that against the
config's mapping. Skipped unless run as root (CI runs as root).

Everything lives under a directory of /tmp with mode 0711 (not pytest's
0700 tmp_path), so that the tenants' users can reach their job directories
by path, as on a node set up as docs/config.md says.
"""

import json
import grp
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

USERS = ("sltest_a", "sltest_b")
GROUP = "sltest_g"
MARK = "sluice e2e test user"  # the GECOS field of the users we create (and may remove)
MISSING = "sltest_nouser"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="switching users needs root")

# Reports, as one JSON line: /proc/self/status ids, the working directory and
# its owner and mode, the environment, and for each argument path the result
# of reading it ("ok" or the errno name).
PROBE = r"""
import errno, json, os, sys
st = {}
for line in open("/proc/self/status"):
    k, _, v = line.partition(":")
    if k in ("Uid", "Gid", "Groups", "NoNewPrivs"):
        st[k] = v.split()
s = os.stat(".")
tries = {}
for p in sys.argv[1:]:
    try:
        if os.path.isdir(p):
            os.listdir(p)
        else:
            with open(p, "rb") as f:
                f.read(64)
        tries[p] = "ok"
    except OSError as e:
        tries[p] = errno.errorcode.get(e.errno, str(e.errno))
print(json.dumps({"status": st, "cwd": os.getcwd(), "cwd_mode": s.st_mode & 0o7777,
                  "cwd_uid": s.st_uid, "cwd_gid": s.st_gid, "env": dict(os.environ),
                  "tries": tries}))
"""


def probe(*paths):
    return ["/usr/bin/python3", "-c", PROBE] + list(paths)


def _run(*cmd):
    subprocess.run(list(cmd), check=True, capture_output=True, timeout=30)


def _remove_ours():
    for name in USERS:
        try:
            if pwd.getpwnam(name).pw_gecos == MARK:
                subprocess.run(["userdel", name], capture_output=True, timeout=30)
        except KeyError:
            pass
    try:
        grp.getgrnam(GROUP)
        subprocess.run(["groupdel", GROUP], capture_output=True, timeout=30)
    except KeyError:
        pass


@pytest.fixture(scope="module")
def users():
    for tool in ("useradd", "userdel", "groupadd", "groupdel"):
        if not shutil.which(tool):
            pytest.skip("%s is not installed" % tool)
    _remove_ours()  # a run that was killed may have left them
    for name in USERS:
        try:
            pwd.getpwnam(name)
            pytest.skip("user %s exists and is not this test's" % name)
        except KeyError:
            pass
    try:
        _run("groupadd", GROUP)
        for name in USERS:
            _run("useradd", "--no-create-home", "--user-group", "--shell", "/usr/sbin/nologin",
                 "--comment", MARK, name)
        yield {n: pwd.getpwnam(n) for n in USERS}
    finally:
        _remove_ours()


@pytest.fixture(scope="module")
def base_dir():
    d = tempfile.mkdtemp(prefix="sluice-sec-users-", dir="/tmp")
    os.chmod(d, 0o711)
    yield d
    shutil.rmtree(d, ignore_errors=True)


AGENT_ENV = {"SLUICE_CLUSTER_TOKEN": "clu-must-not-leak", "SLUICE_TEST_SECRET": "agent-secret-42",
             "LANG": "C.UTF-8"}


@pytest.fixture(scope="module")
def node(users, base_dir, build_dir):
    """One controller (tenants alice -> sltest_a, bob -> sltest_b:sltest_g,
    carol unmapped, ghost -> a user that does not exist) and one root agent
    n1 whose environment holds a cluster token and a secret of its own."""
    for b in ("sluiced", "sluice-agent"):
        if not os.access(os.path.join(build_dir, b), os.X_OK):
            pytest.skip("%s is not built" % b)
    ctl = harness.Controller(os.path.join(base_dir, "main"), tasks_as_root=False, tenants=[
        {"name": "alice", "user": "sltest_a"},
        {"name": "bob", "user": "sltest_b", "group": GROUP},
        {"name": "carol"},
        {"name": "ghost", "user": MISSING}])
    os.chmod(ctl.dir, 0o711)
    agent = None
    try:
        ctl.start()
        agent = harness.Agent(ctl, "n1", gpus=2, env=AGENT_ENV).start()
        yield ctl, agent
    finally:
        if agent:
            agent.stop()
        ctl.stop()


def run_probe(ctl, tenant, *paths, env=None):
    spec = {"command": probe(*paths), "cpus": "0.1", "memory": "64Mi"}
    if env:
        spec["env"] = env
    j = ctl.submit(spec, tenant=tenant)
    done = ctl.wait_job(j["id"], ["succeeded", "failed"])
    assert done["state"] == "succeeded", (done, u.job_log(ctl, j["id"]))
    return j["id"], json.loads(u.job_log(ctl, j["id"]).strip().splitlines()[-1])


def test_task_runs_as_its_tenants_user_in_its_own_directory(node, users):
    ctl, agent = node
    a = users["sltest_a"]
    jid, r = run_probe(ctl, "alice")
    st = r["status"]
    assert st["Uid"] == [str(a.pw_uid)] * 4 and st["Gid"] == [str(a.pw_gid)] * 4, st
    assert st["Groups"] == [], st  # supplementary groups cleared
    assert st["NoNewPrivs"] == ["1"], st
    jobdir = os.path.join(os.path.realpath(agent.workdir), "jobs", u.job_name(ctl, jid))
    assert r["cwd"] == jobdir
    assert (r["cwd_mode"], r["cwd_uid"], r["cwd_gid"]) == (0o700, a.pw_uid, a.pw_gid)
    env = r["env"]
    assert (env["USER"], env["LOGNAME"], env["HOME"]) == ("sltest_a", "sltest_a", a.pw_dir)
    assert env["TMPDIR"] == jobdir
    log = os.stat(os.path.join(agent.workdir, "logs", u.job_name(ctl, jid), "0.log"))
    assert (log.st_mode & 0o7777, log.st_uid) == (0o600, a.pw_uid)
    # The configured group replaces the user's own.
    _, r = run_probe(ctl, "bob")
    g = grp.getgrnam(GROUP).gr_gid
    assert r["status"]["Uid"][0] == str(users["sltest_b"].pw_uid)
    assert r["status"]["Gid"] == [str(g)] * 4 and r["status"]["Groups"] == [], r["status"]
    assert r["cwd_gid"] == g


def test_tenant_cannot_read_another_tenants_log_or_environ(node, users):
    ctl, agent = node
    secret = "sk-bob-0123456789"
    b = ctl.submit({"command": u.sh("echo the key is $API_KEY; exec sleep 1000"),
                    "env": {"API_KEY": secret}, "cpus": "0.1", "memory": "64Mi"}, tenant="bob")
    try:
        (bpid,) = u.wait_running_pids(ctl, b["id"])
        blog = os.path.join(agent.workdir, "logs", u.job_name(ctl, b["id"]), "0.log")
        harness.wait_for(lambda: secret in u.job_log(ctl, b["id"]), what="bob's task wrote its log")
        # What alice's task may not read: bob's log, his job directory, his
        # task's environment (holding the key) and memory map.
        bdir = os.path.join(agent.workdir, "jobs", u.job_name(ctl, b["id"]))
        env_path = "/proc/%d/environ" % bpid
        _, r = run_probe(ctl, "alice", blog, bdir, env_path)
        assert r["tries"][blog] in ("EACCES", "EPERM"), r["tries"]
        assert r["tries"][bdir] in ("EACCES", "EPERM"), r["tries"]
        assert r["tries"][env_path] in ("EACCES", "EPERM"), r["tries"]
        # Bob's own log is his: the agent (root) still serves it to bob.
        assert "the key is " + secret in u.job_log(ctl, b["id"], who="bob")
    finally:
        ctl.request("DELETE", "/v1/jobs/%d" % b["id"], token=ctl.admin_token)


def test_unmapped_tenant_runs_as_the_default_user(node):
    ctl, _ = node
    nobody = pwd.getpwnam("nobody")
    _, r = run_probe(ctl, "carol")
    assert r["status"]["Uid"] == [str(nobody.pw_uid)] * 4, r["status"]
    assert r["env"]["USER"] == "nobody"


def test_user_missing_on_the_node_fails_with_the_reason(node):
    ctl, _ = node
    j = ctl.submit({"command": ["true"], "cpus": "0.1", "memory": "64Mi"}, tenant="ghost")
    done = ctl.wait_job(j["id"], "failed")
    assert "user %s does not exist on node n1" % MISSING in str(done), done


def test_environment_has_none_of_the_agents_variables(node):
    ctl, _ = node
    _, r = run_probe(ctl, "alice", env={"MY_VAR": "mine"})
    env = r["env"]
    assert "SLUICE_CLUSTER_TOKEN" not in env and "SLUICE_TEST_SECRET" not in env, env
    assert all(AGENT_ENV["SLUICE_TEST_SECRET"] not in v and AGENT_ENV["SLUICE_CLUSTER_TOKEN"] not in v
               for v in env.values()), env
    allowed = {"PATH", "HOME", "USER", "LOGNAME", "TZ", "TMPDIR", "LANG", "MY_VAR",
               "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "RANK", "WORLD_SIZE", "LOCAL_RANK",
               "MASTER_ADDR", "MASTER_PORT", "SLUICE_JOB_ID", "SLUICE_JOB_NAME",
               "SLUICE_TASK_INDEX", "SLUICE_NODE", "SLUICE_GPU_MILLI",
               "SLUICE_JOB_SIZE", "SLUICE_PREEMPT_FILE"}  # issue 11 (docs/elastic.md)
    extra = {k for k in env if k not in allowed and not k.startswith("LC_")}
    # python3 itself may add LC_CTYPE coercion; nothing else may appear.
    assert extra == set(), extra
    assert env["LANG"] == "C.UTF-8" and env["MY_VAR"] == "mine"


def test_root_only_with_the_explicit_opt_in(users, base_dir, build_dir):
    if not os.access(os.path.join(build_dir, "sluiced"), os.X_OK):
        pytest.skip("sluiced is not built")
    # Without allow_root, a config that maps anyone to root is refused.
    # (A name that is not a Unix name is refused too, naming the field.)
    root = "needs allow_root: true"
    for i, (tenants, over, msg) in enumerate([
            ([{"name": "alice", "user": "root"}], None, "tenants[].user: root " + root),
            ([{"name": "alice", "group": "root"}], None, "tenants[].group: root " + root),
            ([{"name": "alice"}], {"default_user": "root"}, "default_user: root " + root),
            ([{"name": "alice", "user": "a b"}], None, 'tenants[].user: "a b" is not a Unix name')]):
        bad = harness.Controller(os.path.join(base_dir, "noroot%d" % i), tasks_as_root=False,
                                 tenants=tenants, config_overrides=over)
        r = subprocess.run([bad.binary, "--config", bad.config_path], capture_output=True,
                           text=True, timeout=30)
        assert r.returncode == 2 and msg in r.stderr, (r.returncode, r.stderr)
    # With it, a tenant mapped to root runs as root; the others still do not.
    ctl = harness.Controller(os.path.join(base_dir, "root"), tasks_as_root=False,
                             tenants=[{"name": "alice", "user": "root"}, {"name": "bob",
                                                                         "user": "sltest_b"}],
                             config_overrides={"allow_root": True})
    os.chmod(ctl.dir, 0o711)
    agent = None
    try:
        ctl.start()
        agent = harness.Agent(ctl, "n1", gpus=0).start()
        _, r = run_probe(ctl, "alice")
        assert r["status"]["Uid"] == ["0"] * 4 and r["status"]["NoNewPrivs"] == ["1"], r["status"]
        _, r = run_probe(ctl, "bob")
        assert r["status"]["Uid"] == [str(users["sltest_b"].pw_uid)] * 4, r["status"]
    finally:
        if agent:
            agent.stop()
        ctl.stop()


def test_agent_refuses_root_unless_the_launch_allows_it(users, base_dir, build_dir):
    """The agent's own check, whatever name uid 0 has on the node: a launch
    for root without allow_root fails; a launch without a user runs as
    nobody (the protocol's default)."""
    from test_agent_proto import FakeController, _launch
    if not os.access(os.path.join(build_dir, "sluice-agent"), os.X_OK):
        pytest.skip("sluice-agent is not built")
    ctl = FakeController(os.path.join(base_dir, "fake"))
    os.makedirs(ctl.dir, exist_ok=True)
    os.chmod(ctl.dir, 0o711)
    agent = harness.Agent(ctl, "n1", gpus=2).start(wait=False)
    try:
        ctl.accept()
        ctl.wait_type("hello")
        ctl.send({"type": "welcome", "node": "n1", "heartbeat": 1})
        ctl.send(_launch(1, 0, argv=["true"], user="root"))
        failed = ctl.wait_type("failed", job=1, task=0)
        assert "does not allow tasks to run as root (allow_root)" in failed["reason"], failed
        ctl.send(_launch(2, 0, argv=probe()))
        ctl.wait_type("exited", job=2, task=0)
        with open(os.path.join(agent.workdir, "logs", "2", "0.log")) as f:
            r = json.loads(f.read().strip().splitlines()[-1])
        assert r["status"]["Uid"] == [str(pwd.getpwnam("nobody").pw_uid)] * 4, r
        ctl.send(_launch(3, 0, argv=["true"], user="root", allow_root=True))
        assert ctl.wait_type("exited", job=3, task=0)["exit_code"] == 0
        ctl.send(_launch(4, 0, argv=["true"], user="nobody", group="root"))
        failed = ctl.wait_type("failed", job=4, task=0)
        assert failed["reason"].startswith("group root is root (gid 0) on node n1"), failed
        ctl.send(_launch(5, 0, argv=["true"], user="nobody", group=GROUP + "x"))
        failed = ctl.wait_type("failed", job=5, task=0)
        assert failed["reason"] == "group %sx does not exist on node n1" % GROUP, failed
    finally:
        agent.stop()
        ctl.close()
