"""
test_cli.py - the `sluice` command line against real daemons on 127.0.0.1.

Every command (help, submit with flags and with -f, queue, show, cancel,
nodes, tenants, logs, up, down), --json output, and the exit codes scripts
rely on: 0 ok, 1 the server refused, 2 usage error (including a bad spec
file, found before any request), 3 cannot reach the server.
"""

import json
import os
import signal
import subprocess
import sys
import threading

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import harness  # noqa: E402
import e2e_util as u  # noqa: E402

MEGATRON = os.path.join(u.REPO, "examples", "megatron-3b.yaml")
COMMANDS = ["submit", "queue", "show", "cancel", "nodes", "tenants", "logs", "up", "down",
            "version", "help"]


@pytest.fixture
def cli_bin(build_dir):
    exe = os.path.join(build_dir, "sluice")
    if not os.access(exe, os.X_OK):
        pytest.skip("sluice is not built")
    return exe


def test_help_for_every_command(cli_bin, tmp_path):
    env = u.cli_env(tmpdir=tmp_path)
    r = u.sluice(["--help"], env)
    assert r.returncode == 0
    for c in COMMANDS:
        assert "\n  %s " % c in r.stdout, c
    for c in COMMANDS:
        r = u.sluice([c, "--help"], env)
        assert r.returncode == 0, c
        assert r.stdout.startswith("usage: sluice %s" % c), r.stdout
        assert "exit codes: 0 ok, 1" in r.stdout
    r = u.sluice(["submit", "--help"], env)
    for flag in ("--name", "--tenant", "--tasks", "--gpus", "--gpu-share", "--gpu-memory", "--cpus",
                 "--mem", "--gpu-model", "--pool", "--priority", "--time", "-f, --file", "--json"):
        assert flag in r.stdout, flag
    assert u.sluice(["help", "logs"], env).stdout.startswith("usage: sluice logs")
    r = u.sluice(["--version"], env)
    assert r.returncode == 0 and r.stdout.startswith("sluice ")


@pytest.mark.parametrize("args,word", [
    ([], "usage: sluice"),
    (["frobnicate"], 'no command "frobnicate"'),
    (["queue", "--bogus"], "unknown option --bogus"),
    (["submit", "--gpus", "two", "--", "true"], "--gpus"),
    (["submit", "--gpus", "1", "--gpu-share", "0.5", "--", "true"], "exclude"),
    (["submit", "--cpus", "12Qi", "--", "true"], "--cpus"),
    (["submit", "--mem", "lots", "--", "true"], "--mem"),
    (["submit", "--time", "soon", "--", "true"], "--time"),
    (["submit", "--env", "NOEQUALS", "--", "true"], "--env"),
    (["submit", "--on-node-failure", "panic", "--", "true"], "--on-node-failure"),
    (["submit", "--name", "x"], "nothing to run"),
    (["submit", "--name"], "needs a value"),
    (["show"], "give one job id"),
    (["show", "abc"], "not a job id"),
    (["cancel"], "at least one job id"),
    (["logs", "1", "--task", "-3"], "--task"),
    (["queue", "--state", "sleeping"], "--state"),
    (["up", "--port", "99999"], "--port"),
])
def test_usage_errors_exit_2(cli_bin, tmp_path, args, word):
    # The server does not exist: a usage error must be found before any request.
    env = u.cli_env(extra={"SLUICE_SERVER": "http://127.0.0.1:%d" % harness.free_port()},
                    tmpdir=tmp_path)
    r = u.sluice(args, env)
    assert r.returncode == 2, (args, r.returncode, r.stderr)
    assert word in r.stderr, r.stderr


def test_unreachable_server_exit_3(cli_bin, tmp_path):
    env = u.cli_env(extra={"SLUICE_SERVER": "http://127.0.0.1:%d" % harness.free_port(),
                           "SLUICE_TOKEN": "x"}, tmpdir=tmp_path)
    for args in (["queue"], ["nodes"], ["show", "1"], ["submit", "--", "true"], ["cancel", "1"],
                 ["logs", "1"], ["tenants"]):
        r = u.sluice(args, env)
        assert r.returncode == 3, (args, r.returncode, r.stderr)
        assert "cannot reach" in r.stderr


def test_submit_flags_build_the_api_submission(cli_bin, tmp_path):
    env = u.cli_env(tmpdir=tmp_path)
    r = u.sluice(["submit", "--dry-run", "--name", "sweep", "--tenant", "bob", "--tasks", "4",
                  "--min-tasks", "2", "--gpu-share", "0.25", "--gpu-memory", "10Gi", "--cpus", "500m",
                  "--mem", "2Gi", "--gpu-model", "H100,A100", "--gpu-model", "L4", "--pool", "batch",
                  "--priority", "-3", "--time", "1h30m", "--image", "img", "-e", "A=1", "--env", "B=x=y",
                  "--on-node-failure", "fail", "--", "python", "train.py", "--lr", "3e-4"], env)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {
        "name": "sweep", "tenant": "bob", "tasks": 4, "min_tasks": 2, "gpu_share": "0.25",
        "gpu_memory": "10Gi", "cpus": "500m", "memory": "2Gi", "gpu_models": ["H100", "A100", "L4"],
        "pool": "batch", "priority": -3, "time_limit": 5400, "image": "img",
        "env": {"A": "1", "B": "x=y"}, "on_node_failure": "fail",
        "command": ["python", "train.py", "--lr", "3e-4"]}
    # Without "--", the first non-option starts the command.
    r = u.sluice(["submit", "--dry-run", "--gpus", "1", "echo", "--gpus", "2"], env)
    assert json.loads(r.stdout) == {"gpus": 1, "command": ["echo", "--gpus", "2"]}


def test_megatron_manifest_submits_unchanged(cli_bin, controller, tmp_path):
    shared = os.path.join(os.environ.get("SLUICE_SHARED", os.path.join(u.REPO, "..", "shared")),
                          "examples", "megatron-3b.yaml")
    if os.path.exists(shared):
        with open(shared, "rb") as a, open(MEGATRON, "rb") as b:
            assert a.read() == b.read(), "examples/megatron-3b.yaml must be the seed's manifest verbatim"
    env = u.cli_env(controller, controller.token("alice"), tmpdir=tmp_path)
    r = u.sluice(["submit", "--dry-run", "-f", MEGATRON], env)
    assert json.loads(r.stdout) == {"name": "megatron-3b", "tasks": 8, "gpus": 4, "cpus": "16",
                                    "memory": "128Gi", "image": "nvcr.io/megatron"}
    job = u.sluice_json(["submit", "-f", MEGATRON], env)
    assert (job["name"], job["tasks"], job["gpus"], job["image"], job["tenant"]) == \
        ("megatron-3b", 8, 4, "nvcr.io/megatron", "alice")
    assert job["state"] == "pending"
    # No node: it waits, and `show` says why.
    r = u.sluice(["show", str(job["id"])], env)
    assert r.returncode == 0
    assert "state:      pending" in r.stdout
    reason = controller.job(job["id"])["reason"]
    assert reason and ("waiting:    " + reason) in r.stdout
    assert "tasks:      8 x (4 GPU, 16 CPU, 128Gi)" in r.stdout
    # Flags override the file.
    j2 = u.sluice_json(["submit", "-f", MEGATRON, "--name", "m2", "--priority", "5"], env)
    assert (j2["name"], j2["priority"], j2["tasks"]) == ("m2", 5, 8)


def _manifest(tmp_path, text, name="bad.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


with open(MEGATRON) as _f:
    _MEG = _f.read()

BAD_SPECS = [
    (_MEG.replace("      containers:", "      volumes:\n      - name: data\n      containers:"),
     "spec.template.spec.volumes[0]: needs exactly one source"),
    (_MEG.replace("      containers:", "      affinity: {podAffinity: {requiredDuringSchedulingIgnoredDuringExecution: "
                  "[{topologyKey: kubernetes.io/hostname}]}}\n      containers:"),
     "spec.template.spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]: "
     "topologyKey \"kubernetes.io/hostname\" is not supported"),
    (_MEG.replace("  parallelism: 8", "  parallelism: 8\n  completions: 16").replace(
        "    spec:\n      containers", "    metadata: {annotations: {sluice.io/gang: 'true'}}\n"
        "    spec:\n      containers"),
     "spec.completions: 16 differs from spec.parallelism 8"),
    (_MEG + "      - name: sidecar\n        command: [\"true\"]\n",
     "spec.template.spec.containers[1]: needs an image"),
    (_MEG.replace("kind: Job", "kind: Deployment"), 'kind: "Deployment" is not supported'),
    (_MEG.replace("batch/v1", "batch/v2"), 'apiVersion: "batch/v2" is not supported'),
    (_MEG.replace("        image: nvcr.io/megatron",
                  "        image: nvcr.io/megatron\n        env:\n        - name: A\n          valueFrom: {}"),
     "spec.template.spec.containers[0].env[0].valueFrom: needs exactly one of secretKeyRef"),
    (_MEG.replace("            memory: 128Gi", "            memory: 128Gi\n            hugepages-2Mi: 1Gi"),
     "spec.template.spec.containers[0].resources.limits.hugepages-2Mi: not supported"),
    (_MEG.replace("nvidia.com/gpu: 4", "nvidia.com/gpu: 0.5"),
     "spec.template.spec.containers[0].resources.limits.nvidia.com/gpu: \"0.5\" is not a whole number"),
    (_MEG.replace("  parallelism: 8", "  parallelism: 8\n  backoffLimit: 5000"),
     "spec.backoffLimit: \"5000\" is not a whole number from 0 to 1000"),
    (_MEG.replace("      containers:", "      restartPolicy: Always\n      containers:"),
     "spec.template.spec.restartPolicy: \"Always\" is not supported"),
    (_MEG + "status: {}\n", "status: not supported"),
    ("name: x\ngpus: 2\nfoo: 1\ncommand: [a]\n", "foo: unknown field"),
    ("name: x\ntasks: many\ncommand: [a]\n", "tasks: \"many\" is not a whole number"),
    ("name: x\ncommand: [a\n", "bad.yaml:"),
    ("- just\n- a list\n", "the top level must be a mapping"),
]


@pytest.mark.parametrize("text,message", BAD_SPECS)
def test_bad_specs_name_the_field(cli_bin, tmp_path, text, message):
    env = u.cli_env(extra={"SLUICE_SERVER": "http://127.0.0.1:%d" % harness.free_port()},
                    tmpdir=tmp_path)
    r = u.sluice(["submit", "-f", _manifest(tmp_path, text)], env)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert message in r.stderr, r.stderr


def test_sluice_spec_file(cli_bin, controller, cluster, tmp_path):
    cluster(1, gpus=2)
    env = u.cli_env(controller, controller.token("bob"), tmpdir=tmp_path)
    spec = _manifest(tmp_path, "name: spec-job\ntasks: 2\ngpus: 1\ncpus: 500m\nmemory: 256Mi\n"
                               "env:\n  GREETING: hi\ncommand: echo $GREETING $RANK/$WORLD_SIZE\n",
                     "job.yaml")
    job = u.sluice_json(["submit", "-f", spec], env)
    assert (job["name"], job["tasks"], job["gpus"], job["cpus"], job["tenant"]) == \
        ("spec-job", 2, 1, "500m", "bob")
    controller.wait_job(job["id"], "succeeded")
    for t in (0, 1):
        r = u.sluice(["logs", str(job["id"]), "--task", str(t)], env)
        assert r.returncode == 0 and r.stdout == "hi %d/2\n" % t
    # The same spec as JSON.
    jspec = _manifest(tmp_path, json.dumps({"name": "j", "command": ["true"]}), "job.json")
    assert u.sluice_json(["submit", "-f", jspec], env)["name"] == "j"


def test_commands_against_a_cluster(cli_bin, controller, cluster, tmp_path):
    cluster(2, gpus=4)
    env = u.cli_env(controller, controller.token("alice"), tmpdir=tmp_path)
    r = u.sluice(["submit", "--name", "hello", "--gpus", "1", "--", "sh", "-c", "echo hello $RANK"], env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("submitted job ")
    jid = int(r.stdout.split()[2])
    controller.wait_job(jid, "succeeded")
    r = u.sluice(["logs", str(jid)], env)
    assert (r.returncode, r.stdout) == (0, "hello 0\n")
    out = u.sluice_json(["logs", str(jid)], env)
    assert out["data"] == "hello 0\n" and out["eof"] is True

    r = u.sluice(["submit", "-q", "--gpus", "4", "--tasks", "2", "--", "sleep", "1000"], env)
    assert r.returncode == 0
    gang = int(r.stdout)
    u.wait_running_pids(controller, gang, n=2)
    waiting = u.sluice_json(["submit", "--gpus", "4", "--", "true"], env)
    assert waiting["state"] == "pending"

    # queue: pending and running only; --all adds finished ones.
    r = u.sluice(["queue"], env)
    assert r.returncode == 0
    header, *rows = r.stdout.splitlines()
    assert header.split()[:5] == ["ID", "NAME", "TENANT", "STATE", "TASKS"]
    ids = [int(row.split()[0]) for row in rows]
    assert sorted(ids) == sorted([gang, waiting["id"]])
    q = u.sluice_json(["queue"], env)
    assert {j["id"]: j["state"] for j in q["jobs"]} == {gang: "running", waiting["id"]: "pending"}
    q = u.sluice_json(["queue", "--all"], env)
    assert {j["id"] for j in q["jobs"]} >= {jid, gang, waiting["id"]}
    q = u.sluice_json(["queue", "--state", "succeeded"], env)
    assert [j["id"] for j in q["jobs"]] == [jid]

    # show: placement of the running gang; the reason of the waiting job.
    r = u.sluice(["show", str(gang)], env)
    assert "state:      running" in r.stdout and "placement:" in r.stdout
    assert "n1" in r.stdout and "n2" in r.stdout
    assert u.sluice_json(["show", str(gang)], env)["id"] == gang
    r = u.sluice(["show", str(waiting["id"])], env)
    assert "waiting:" in r.stdout

    # nodes and tenants.
    r = u.sluice(["nodes"], env)
    assert r.returncode == 0 and r.stdout.splitlines()[0].startswith("NAME")
    assert {n["name"]: n["free"]["gpus"] for n in u.sluice_json(["nodes"], env)["nodes"]} == \
        {"n1": 0, "n2": 0}
    admin = u.cli_env(controller, controller.admin_token, tmpdir=tmp_path)
    t = u.sluice_json(["tenants"], admin)
    assert {x["name"] for x in t["tenants"]} == {"alice", "bob"}
    assert "DOMINANT SHARE" in u.sluice(["tenants"], admin).stdout

    # cancel: the gang stops, the waiting job starts on the freed GPUs.
    r = u.sluice(["cancel", str(gang)], env)
    assert (r.returncode, r.stdout) == (0, "cancelled job %d\n" % gang)
    controller.wait_job(waiting["id"], "succeeded")
    assert controller.job(gang)["state"] == "cancelled"
    # Cancelling a finished job is refused by the server: exit 1.
    r = u.sluice(["cancel", str(gang)], env)
    assert r.returncode == 1 and "HTTP 409" in r.stderr
    r = u.sluice(["cancel", str(gang), "--json"], env)
    assert r.returncode == 1 and json.loads(r.stdout)["error"]["code"] == "conflict"


def test_server_errors_exit_1(cli_bin, controller, tmp_path):
    bad = u.cli_env(controller, "not-a-token", tmpdir=tmp_path)
    r = u.sluice(["queue"], bad)
    assert r.returncode == 1 and "HTTP 401" in r.stderr
    none = u.cli_env(controller, tmpdir=tmp_path)
    r = u.sluice(["queue"], none)
    assert r.returncode == 1 and "no token" in r.stderr
    env = u.cli_env(controller, controller.token("alice"), tmpdir=tmp_path)
    r = u.sluice(["show", "424242"], env)
    assert r.returncode == 1 and "HTTP 404" in r.stderr
    # Rejected by the server, not by the CLI: the server names the field.
    r = u.sluice(["submit", "--tasks", "2", "--min-tasks", "3", "--", "true"], env)
    assert r.returncode == 1 and "min_tasks" in r.stderr
    # Another tenant's job: 403 (or hidden as 404).
    j = controller.submit({"command": ["true"]}, tenant="bob")
    r = u.sluice(["cancel", str(j["id"])], env)
    assert r.returncode == 1 and ("HTTP 403" in r.stderr or "HTTP 404" in r.stderr)


def test_logs_follow_until_the_task_ends(cli_bin, controller, cluster, tmp_path):
    cluster(1, gpus=0)
    env = u.cli_env(controller, controller.token("alice"), tmpdir=tmp_path)
    go = tmp_path / "go"
    j = controller.submit({"command": u.sh("echo first; while [ ! -e %s ]; do sleep 0.05; done; echo second"
                                           % go)})
    exe = os.path.join(harness.build_dir(), "sluice")
    p = subprocess.Popen([exe, "logs", "-f", str(j["id"])], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    watchdog = threading.Timer(60, p.kill)  # a hung follow fails the test, not the suite
    watchdog.start()
    try:
        assert p.stdout.readline() == "first\n"
        go.write_text("")
        out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    watchdog.cancel()
    assert p.returncode == 0, err
    assert out == "second\n"


def _up_env(tmp_path):
    env = u.cli_env()
    env.pop("SLUICE_DIR", None)
    return env


def test_up_detach_submit_down(cli_bin, tmp_path):
    work = tmp_path / "proj"
    (work / "sub").mkdir(parents=True)
    env = _up_env(tmp_path)
    port, aport = harness.free_port(), harness.free_port()
    r = u.sluice(["up", "--detach", "--port", str(port), "--agent-port", str(aport), "--gpus", "2",
                  "--cpus", "4", "--memory", "8Gi", "--name", "local"], env, cwd=str(work))
    try:
        assert r.returncode == 0, r.stderr
        assert "Sluice is up" in r.stdout and "sluice down" in r.stdout
        state = work / ".sluice"
        assert (os.stat(state / "sluiced.yaml").st_mode & 0o777) == 0o600
        cfg = json.loads((state / "cli.json").read_text())
        # TLS by default (issue 8): the URL is https and the CA sits beside it.
        assert cfg["server"] == "https://127.0.0.1:%d" % port
        assert cfg["cacert"] == str(state / "tls" / "ca.crt")
        # From a subdirectory, with no flags or environment: the README's commands.
        sub = str(work / "sub")
        r = u.sluice(["submit", "--name", "hello", "--", "echo", "hello from sluice"], env, cwd=sub)
        assert r.returncode == 0, r.stderr
        jid = int(r.stdout.split()[2])
        harness.wait_for(lambda: u.sluice_json(["show", str(jid)], env, cwd=sub)["state"] == "succeeded",
                         what="job succeeded")
        assert u.sluice(["logs", str(jid)], env, cwd=sub).stdout == "hello from sluice\n"
        # A task that asks for no memory gets the machine's per CPU (8Gi / 4 CPUs).
        text = (state / "sluiced.yaml").read_text()
        assert "default_memory_per_cpu: 2048Mi" in text and "default_memory_per_gpu: 4096Mi" in text
        assert u.sluice_json(["show", str(jid)], env, cwd=sub)["memory"] == "2Gi"
        nodes = u.sluice_json(["nodes"], env, cwd=sub)["nodes"]
        assert [(n["name"], n["gpus"], n["state"]) for n in nodes] == [("local", 2, "up")]
        # A second `up` in the same place refuses.
        r2 = u.sluice(["up", "--detach"], env, cwd=str(work))
        assert r2.returncode == 1 and "already up" in r2.stderr
        pids = [int(line.split()[1]) for line in (state / "pids").read_text().splitlines()]
    finally:
        d = u.sluice(["down"], env, cwd=str(work))
    assert d.returncode == 0 and "stopped sluiced" in d.stdout, (d.stdout, d.stderr)
    for pid in pids:
        harness.wait_for(lambda: not u.pid_alive(pid), what="pid %d gone" % pid)
    # Up again: same tokens, the job is still there (SQLite state in .sluice).
    r = u.sluice(["up", "--detach"], env, cwd=str(work))
    try:
        assert r.returncode == 0, r.stderr
        assert json.loads((work / ".sluice" / "cli.json").read_text()) == cfg
        assert u.sluice_json(["show", str(jid)], env, cwd=str(work))["state"] == "succeeded"
    finally:
        u.sluice(["down"], env, cwd=str(work))


def test_up_foreground_ctrl_c_stops_both(cli_bin, tmp_path):
    work = tmp_path / "fg"
    work.mkdir()
    env = _up_env(tmp_path)
    exe = os.path.join(harness.build_dir(), "sluice")
    port, aport = harness.free_port(), harness.free_port()
    p = subprocess.Popen([exe, "up", "--port", str(port), "--agent-port", str(aport)], cwd=str(work),
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    watchdog = threading.Timer(90, p.kill)
    watchdog.start()
    try:
        assert p.stdout.readline().startswith("Sluice is up")
        pids = [int(line.split()[1]) for line in (work / ".sluice" / "pids").read_text().splitlines()]
        r = u.sluice(["submit", "-q", "--", "sleep", "1000"], env, cwd=str(work))
        jid = int(r.stdout)
        harness.wait_for(lambda: u.sluice_json(["show", str(jid)], env, cwd=str(work))["placement"][0].get("pid"),
                         what="task started")
        tpid = u.sluice_json(["show", str(jid)], env, cwd=str(work))["placement"][0]["pid"]
        p.send_signal(signal.SIGINT)
        assert p.wait(timeout=40) == 0
    finally:
        watchdog.cancel()
        if p.poll() is None:
            p.kill()
            p.wait()
        pidfile = work / ".sluice" / "pids"
        if pidfile.exists():  # `up` died without stopping its daemons: stop them here
            u.sluice(["down"], env, cwd=str(work))
    for pid in pids + [tpid]:
        assert not u.pid_alive(pid), pid
    assert not (work / ".sluice" / "pids").exists()


def test_every_example_job_spec_parses(cli_bin, tmp_path):
    env = u.cli_env(tmpdir=tmp_path)
    d = os.path.join(u.REPO, "examples")
    specs = [f for f in sorted(os.listdir(d)) if f.endswith(".yaml") and f != "sluiced.yaml"]
    assert "megatron-3b.yaml" in specs and len(specs) >= 2
    for f in specs:
        r = u.sluice(["submit", "--dry-run", "-f", os.path.join(d, f)], env)
        assert r.returncode == 0, (f, r.stderr)
        job = json.loads(r.stdout)
        assert job.get("command") or job.get("image"), f


# ---- queue: the server's table; --json: the server's bytes ----

def _cut_time(text):
    """The table's lines with the TIME column blanked (it moves with the clock)."""
    lines = text.split("\n")
    start = lines[0].index("TIME")
    end = lines[0].index("REASON")
    return [line[:start] + line[end:] for line in lines]


def test_queue_prints_the_servers_table(cli_bin, controller, fake_agent, tmp_path):
    env = u.cli_env(controller, controller.admin_token, tmpdir=tmp_path)
    r = u.sluice(["queue"], env)
    assert (r.returncode, r.stdout) == (0, "no pending or running jobs (sluice queue --all shows finished ones)\n")
    assert u.sluice(["queue", "--all"], env).stdout.split() == \
        ["ID", "NAME", "TENANT", "STATE", "TASKS", "EACH", "NODES", "TIME", "REASON"]
    fake_agent("n1", gpus=4)
    run = controller.submit({"name": "run", "command": ["x"], "gpus": 4})
    harness.wait_for(lambda: controller.job(run["id"])["state"] == "running", what="job running")
    wait = controller.submit({"name": "wait", "command": ["x"], "gpus": 2}, tenant="bob")
    gone = controller.submit({"name": "gone", "command": ["x"], "gpus": 1})
    assert u.sluice(["cancel", str(gone["id"])], env).returncode == 0

    r = u.sluice(["queue"], env)
    assert r.returncode == 0, r.stderr
    st, table = controller.request("GET", "/v1/jobs?view=table&state=pending,running",
                                   token=controller.admin_token)
    assert st == 200
    assert _cut_time(r.stdout) == _cut_time(table)
    header, *rows = r.stdout.splitlines()
    # Jobs by id (the API pages by id, issue 8).
    assert [int(x.split()[0]) for x in rows] == [run["id"], wait["id"]]
    assert rows[1].split()[1:4] == ["wait", "bob", "pending"]
    assert "4 GPU, 1 CPU, 1Gi" in rows[0] and " n1 " in rows[0]

    assert [x.split()[0] for x in u.sluice(["queue", "--limit", "1"], env).stdout.splitlines()[1:]] == \
        [str(run["id"])]
    assert [x.split()[1] for x in u.sluice(["queue", "--tenant", "alice"], env).stdout.splitlines()[1:]] == \
        ["run"]
    r = u.sluice(["queue", "--state", "cancelled"], env)
    assert [x.split()[:4] for x in r.stdout.splitlines()[1:]] == [[str(gone["id"]), "gone", "alice", "cancelled"]]

    # --json: the job objects, exactly as GET /v1/jobs gives them.
    r = u.sluice(["queue", "--json"], env)
    assert r.returncode == 0 and r.stdout.endswith("}\n")
    # The server's page as sent: the jobs and, since issue 8, next_after (null: the last page).
    assert json.loads(r.stdout) == {"jobs": controller.jobs("admin", "?state=pending,running"),
                                    "next_after": None}
    q = u.sluice_json(["queue", "--all"], env)
    assert [j["id"] for j in q["jobs"]] == [run["id"], wait["id"], gone["id"]]
    assert u.sluice_json(["queue", "--state", "cancelled"], env)["jobs"][0]["reason"] == "cancelled"
    # An error while streaming --json: the server's error object, exit 1.
    r = u.sluice(["queue", "--json", "--tenant", "nobody"], env)
    assert r.returncode == 1 and json.loads(r.stdout)["error"]["field"] == "tenant"
    # A host name (every address it resolves to is tried in turn).
    lh = u.cli_env(extra={"SLUICE_SERVER": "http://localhost:%d/" % controller.port,
                          "SLUICE_TOKEN": controller.admin_token}, tmpdir=tmp_path)
    r = u.sluice(["queue", "--limit", "1"], lh)
    assert r.returncode == 0 and r.stdout.splitlines()[1].split()[0] == str(run["id"])


class ScriptedHTTP:
    """An HTTP server on 127.0.0.1 that answers with canned raw replies, to
    test the CLI's own HTTP client on what sluiced never sends (chunked
    bodies, 1xx, HTTP/1.0, closed keep-alive connections, garbage).

    Each request gets the next reply of `replies` (bytes); a connection is
    closed after `per_conn` replies, or when the replies run out. Requests
    are recorded as (request line, {header: value}, body)."""

    def __init__(self, replies, per_conn=100):
        import socket
        self.replies = list(replies)
        self.per_conn = per_conn
        self.requests = []
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(30)
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _read_request(self, f):
        line = f.readline()
        if not line:
            return None
        headers = {}
        while True:
            h = f.readline()
            if h in (b"\r\n", b"\n", b""):
                break
            k, _, v = h.decode().partition(":")
            headers[k.strip().lower()] = v.strip()
        body = f.read(int(headers.get("content-length", "0")))
        return line.decode().rstrip("\r\n"), headers, body

    def _serve(self):
        while self.replies:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(30)
                f = conn.makefile("rb")
                for _ in range(self.per_conn):
                    if not self.replies:
                        break
                    try:
                        req = self._read_request(f)
                    except OSError:
                        break
                    if req is None:
                        break
                    self.requests.append(req)
                    conn.sendall(self.replies.pop(0))
                f.close()

    def url(self, prefix=""):
        return "http://127.0.0.1:%d%s" % (self.port, prefix)

    def close(self):
        self.sock.close()


def _reply(body, status="200 OK", ctype="application/json", extra=""):
    data = body.encode()
    return ("HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n%s\r\n"
            % (status, ctype, len(data), extra)).encode() + data


def _chunked(parts, status="200 OK"):
    out = "HTTP/1.1 %s\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" % status
    for i, p in enumerate(parts):
        out += "%x%s\r\n%s\r\n" % (len(p.encode()), ";ext=1" if i == 1 else "", p)
    return (out + "0\r\nX-Trailer: t\r\n\r\n").encode()


def _scripted(replies, tmp_path, prefix="", per_conn=100):
    srv = ScriptedHTTP(replies, per_conn=per_conn)
    env = u.cli_env(extra={"SLUICE_SERVER": srv.url(prefix), "SLUICE_TOKEN": "tok-1"}, tmpdir=tmp_path)
    return srv, env


def test_http_client_reads_every_body_framing(cli_bin, tmp_path):
    nodes = '{"nodes": [{"name": "n\\u00e9", "gpus": 8}]}'
    jobs = '{"jobs": [{"id": 7, "state": "pending"}]}\n'
    srv, env = _scripted([
        _chunked([nodes[:5], nodes[5:20], nodes[20:]]),
        b"HTTP/1.1 100 Continue\r\n\r\n" + _reply(jobs),
        _chunked([jobs[:9], jobs[9:]]),
        b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + jobs.encode(),
    ], tmp_path, prefix="/api/")
    try:
        assert u.sluice_json(["nodes"], env) == json.loads(nodes)
        r = u.sluice(["queue", "--json", "--all"], env)
        assert (r.returncode, r.stdout) == (0, jobs)
        r = u.sluice(["queue", "--json", "--state", "pending"], env)
        assert (r.returncode, r.stdout) == (0, jobs)
        assert u.sluice_json(["queue", "--limit", "3"], env) == json.loads(jobs)
    finally:
        srv.close()
    line, headers, body = srv.requests[0]
    # `sluice nodes` asks for a page (issue 14); a reply without next_after,
    # as an older sluiced sends, is the last one.
    assert line == "GET /api/v1/nodes?limit=1000 HTTP/1.1"
    assert headers["host"] == "127.0.0.1:%d" % srv.port
    assert headers["authorization"] == "Bearer tok-1"
    assert body == b""
    assert srv.requests[1][0] == "GET /api/v1/jobs?limit=10000 HTTP/1.1"
    assert srv.requests[2][0] == "GET /api/v1/jobs?limit=10000&state=pending HTTP/1.1"
    assert srv.requests[3][0] == "GET /api/v1/jobs?limit=3&state=pending,running HTTP/1.1"


def test_queue_json_streams_the_pages_as_one_document(cli_bin, tmp_path):
    """--json over several pages: the first page's head, each page's jobs as
    the server wrote them (a comma between pages), the last page's tail; the
    next page from Sluice-Next-After or, without it, the tail's next_after
    (never a next_after inside a job). Chunks cut the pages anywhere."""
    p1 = '{"jobs":[{"id":1,"name":"a]b","command":["x"]},{"id":2,"env":{"next_after":"7"}}],"next_after":2}\n'
    p2 = '{"jobs": [ {"id": 3, "placement": []} ], "next_after": 3}\n'
    p3 = '{"jobs":[],"next_after":null}\n'
    cuts = [4, 9, 60, len(p1) - 12, len(p1) - 3]
    parts = [p1[a:b] for a, b in zip([0] + cuts, cuts + [len(p1)])]
    srv, env = _scripted([_chunked(parts), _reply(p2, extra="Sluice-Next-After: 3\r\n"),
                          _reply(p3)], tmp_path)
    try:
        r = u.sluice(["queue", "--json"], env)
    finally:
        srv.close()
    assert r.returncode == 0, r.stderr
    assert r.stdout == ('{"jobs":[{"id":1,"name":"a]b","command":["x"]},{"id":2,"env":{"next_after":"7"}},'
                        '{"id": 3, "placement": []} ],"next_after":null}\n')
    assert [j["id"] for j in json.loads(r.stdout)["jobs"]] == [1, 2, 3]
    assert [q[0] for q in srv.requests] == [
        "GET /v1/jobs?limit=10000&state=pending,running HTTP/1.1",
        "GET /v1/jobs?limit=10000&after=2&state=pending,running HTTP/1.1",
        "GET /v1/jobs?limit=10000&after=3&state=pending,running HTTP/1.1"]
    # A page that fails after the first has gone out: exit 1, the error on
    # stderr, stdout the document as far as it got, ended by a newline.
    err = '{"error": {"code": "unavailable", "message": "try later"}}'
    srv, env = _scripted([_reply(p1), _reply(err, "503 Service Unavailable")], tmp_path)
    try:
        r = u.sluice(["queue", "--json"], env)
    finally:
        srv.close()
    assert r.returncode == 1
    assert r.stdout == '{"jobs":[{"id":1,"name":"a]b","command":["x"]},{"id":2,"env":{"next_after":"7"}}\n'
    assert "try later" in r.stderr


def test_http_client_keepalive_and_retry_on_a_closed_connection(cli_bin, tmp_path):
    job = lambda i: _reply('{"id": %d, "state": "cancelled"}' % i)  # noqa: E731
    # One connection for all three requests of `cancel 1 2 3`.
    srv, env = _scripted([job(1), job(2), job(3)], tmp_path)
    try:
        r = u.sluice(["cancel", "1", "2", "3"], env)
    finally:
        srv.close()
    assert (r.returncode, r.stdout) == (0, "cancelled job 1\ncancelled job 2\ncancelled job 3\n")
    assert [q[0] for q in srv.requests] == ["DELETE /v1/jobs/%d HTTP/1.1" % i for i in (1, 2, 3)]
    # The server closes every connection after one reply (without saying so):
    # the next request on the dead connection is sent again on a new one.
    srv, env = _scripted([job(4), job(5)], tmp_path, per_conn=1)
    try:
        r = u.sluice(["cancel", "4", "5"], env)
    finally:
        srv.close()
    assert (r.returncode, r.stdout) == (0, "cancelled job 4\ncancelled job 5\n"), r.stderr
    # A POST body arrives whole, with its length and type.
    srv, env = _scripted([_reply('{"id": 9, "name": "x", "state": "pending"}', "201 Created")], tmp_path)
    try:
        r = u.sluice(["submit", "--name", "x", "--", "echo", "h\u00e9"], env)
    finally:
        srv.close()
    assert r.returncode == 0 and r.stdout.startswith("submitted job 9 (x): pending")
    line, headers, body = srv.requests[0]
    assert line == "POST /v1/jobs HTTP/1.1" and headers["content-type"] == "application/json"
    assert json.loads(body) == {"name": "x", "command": ["echo", "h\u00e9"]}


@pytest.mark.parametrize("reply,word", [
    (b"hello\r\n\r\n", "not HTTP"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"nodes\"", "in the middle of the reply"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "bad chunk size"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: ten\r\n\r\n", "Content-Length"),
    (b"", "closed the connection without replying"),
])
def test_http_client_bad_replies_exit_3(cli_bin, tmp_path, reply, word):
    srv, env = _scripted([reply], tmp_path)
    try:
        r = u.sluice(["nodes"], env)
    finally:
        srv.close()
    assert r.returncode == 3, (r.returncode, r.stdout, r.stderr)
    assert "cannot reach" in r.stderr and word in r.stderr, r.stderr


def test_http_client_errors_and_urls(cli_bin, tmp_path):
    # A server error in a chunked body is still the server's error: exit 1.
    err = '{"error": {"code": "not_found", "field": "id", "message": "no job 5"}}'
    srv, env = _scripted([_chunked([err[:10], err[10:]], status="404 Not Found")], tmp_path)
    try:
        r = u.sluice(["show", "5"], env)
    finally:
        srv.close()
    assert r.returncode == 1 and "no job 5 (HTTP 404)" in r.stderr
    for url, word in (("ftp://127.0.0.1:1", "only http:// and https://"), ("http://127.0.0.1:99999", "bad port"),
                      ("http://[::1", "IPv6"), ("http://127.0.0.1:1/x?y=1", "query")):
        env = u.cli_env(extra={"SLUICE_SERVER": url, "SLUICE_TOKEN": "t"}, tmpdir=tmp_path)
        r = u.sluice(["queue"], env)
        assert r.returncode == 3 and "cannot reach" in r.stderr and word in r.stderr, (url, r.stderr)
    env = u.cli_env(extra={"SLUICE_SERVER": "http://127.0.0.1:1", "SLUICE_TOKEN": "a\nb"}, tmpdir=tmp_path)
    r = u.sluice(["queue"], env)
    assert r.returncode == 2 and "control character" in r.stderr


# ---- version, help, global flags, tenants as a tenant, down with nothing up ----

def test_version_and_help_commands(cli_bin, controller, tmp_path):
    env = u.cli_env(tmpdir=tmp_path)
    r = u.sluice(["version"], env)
    assert r.returncode == 0 and r.stderr == ""
    st, health = controller.request("GET", "/healthz")
    assert r.stdout == "sluice %s\n" % health["version"]  # the CLI and sluiced agree
    assert u.sluice(["--version"], env).stdout == r.stdout
    assert u.sluice_json(["version"], env) == {"version": health["version"]}
    r = u.sluice(["help"], env)
    assert r.returncode == 0
    assert r.stdout == u.sluice(["--help"], env).stdout
    assert r.stdout.startswith("usage: sluice [global options] COMMAND")
    for c in COMMANDS:
        assert u.sluice(["help", c], env).stdout == u.sluice([c, "--help"], env).stdout, c
    r = u.sluice(["help", "frobnicate"], env)
    assert r.returncode == 2 and 'no command "frobnicate"' in r.stderr
    r = u.sluice(["version", "--bogus"], env)
    assert r.returncode == 2 and "--bogus" in r.stderr


def test_global_server_and_token_flags(cli_bin, controller, tmp_path):
    """--server and --token work without the environment, before or after the
    command name, and override SLUICE_SERVER / SLUICE_TOKEN."""
    j = controller.submit({"command": ["true"], "name": "flagged"}, tenant="alice")
    none = u.cli_env(tmpdir=tmp_path)
    tok = controller.token("alice")
    r = u.sluice(["--server", controller.url, "--token", tok, "--json", "queue"], none)
    assert r.returncode == 0, r.stderr
    assert [x["id"] for x in json.loads(r.stdout)["jobs"]] == [j["id"]]
    r = u.sluice(["show", str(j["id"]), "--server", controller.url, "--token", tok, "--json"], none)
    assert r.returncode == 0 and json.loads(r.stdout)["name"] == "flagged"
    # Flags beat the environment: a dead server and a bad token in the env.
    wrong = u.cli_env(extra={"SLUICE_SERVER": "http://127.0.0.1:%d" % harness.free_port(),
                             "SLUICE_TOKEN": "not-a-token"}, tmpdir=tmp_path)
    r = u.sluice(["--server", controller.url, "--token", tok, "queue"], wrong)
    assert r.returncode == 0 and "flagged" in r.stdout
    r = u.sluice(["--server", controller.url, "queue"], wrong)  # env token is used: refused
    assert r.returncode == 1 and "HTTP 401" in r.stderr
    # bob cannot see alice's job through the flag either.
    r = u.sluice(["--server", controller.url, "--token", controller.token("bob"), "--json", "queue"], none)
    assert r.returncode == 0 and json.loads(r.stdout)["jobs"] == []
    r = u.sluice(["--server"], none)
    assert r.returncode == 2


def test_tenants_as_a_tenant_sees_only_itself(cli_bin, controller, fake_agent, tmp_path):
    fake_agent("n1", gpus=8)
    job = controller.submit({"command": ["x"], "gpus": 2}, tenant="bob")
    controller.wait_job(job["id"], "running")
    bob = u.cli_env(controller, controller.token("bob"), tmpdir=tmp_path)
    t = u.sluice_json(["tenants"], bob)["tenants"]
    assert [x["name"] for x in t] == ["bob"]
    r = u.sluice(["tenants"], bob)
    assert r.returncode == 0
    header, *rows = r.stdout.splitlines()
    assert "DOMINANT SHARE" in header
    assert len(rows) == 1 and rows[0].split()[0] == "bob"
    admin = u.cli_env(controller, controller.admin_token, tmpdir=tmp_path)
    t = {x["name"]: x for x in u.sluice_json(["tenants"], admin)["tenants"]}
    assert set(t) == {"alice", "bob"}
    st, api = controller.request("GET", "/v1/tenants", token=controller.admin_token)
    assert {x["name"]: x for x in api["tenants"]} == t  # the CLI prints the server's objects
    rows = {line.split()[0]: line for line in u.sluice(["tenants"], admin).stdout.splitlines()[1:]}
    assert set(rows) == {"alice", "bob"}
    r = u.sluice(["tenants", "extra"], admin)
    assert r.returncode == 2


def test_down_with_nothing_up_exits_1(cli_bin, tmp_path):
    env = u.cli_env(tmpdir=tmp_path)
    d = tmp_path / "never-up"
    r = u.sluice(["down", "--dir", str(d)], env)
    assert r.returncode == 1 and "nothing to stop" in r.stderr
    # A stale pids file naming processes that are not sluiced or sluice-agent:
    # nothing is signalled, the file is removed, exit 0.
    victim = subprocess.Popen(["sleep", "60"])
    try:
        (d / "pids").write_text("sluiced %d\nsluice-agent %d\n" % (victim.pid, victim.pid))
        r = u.sluice(["down", "--dir", str(d)], env)
        assert r.returncode == 0, r.stderr
        assert "nothing was running" in r.stdout
        assert victim.poll() is None  # not ours to stop
        assert not (d / "pids").exists()
        r = u.sluice(["down", "--dir", str(d), "extra"], env)
        assert r.returncode == 2
    finally:
        victim.kill()
        victim.wait()


def test_spec_nested_a_million_deep_is_refused_at_once(cli_bin, tmp_path):
    """-f of 1,000,000 "[" (a file, or stdin) exits 2 naming the line and
    column of the level past 64; libyaml's own parse of that nesting is
    quadratic (found by fuzzing -f). u.sluice's timeout only bounds a
    regression."""
    env = u.cli_env(extra={"SLUICE_SERVER": "http://127.0.0.1:%d" % harness.free_port()},
                    tmpdir=tmp_path)
    deep = "name: x\ncommand: " + "[" * 1000000 + "\n"
    r = u.sluice(["submit", "--dry-run", "-f", _manifest(tmp_path, deep)], env)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "bad.yaml:2:" in r.stderr and "too deep" in r.stderr, r.stderr
    r = u.sluice(["submit", "--dry-run", "-f", "-"], env, input=deep)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "-:2:" in r.stderr and "too deep" in r.stderr, r.stderr
    # The same file nested 8 deep, like a real manifest, still parses.
    ok = "name: x\ncommand: [a]\nenv: {A: b}\n"
    r = u.sluice(["submit", "--dry-run", "-f", "-"], env, input=ok)
    assert r.returncode == 0 and json.loads(r.stdout)["command"] == ["a"], r.stderr
