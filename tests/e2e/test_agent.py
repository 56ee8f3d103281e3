"""
test_agent.py - sluice-agent against a real sluiced on 127.0.0.1.

What a task sees (environment, working directory, logs), how it ends (exit
codes, signals, cancel with SIGTERM then SIGKILL to the whole process group),
container images through a recording launcher, launch failures with their
reasons, and an agent that keeps its tasks through a controller kill -9 and
through its own restart. No assertion depends on elapsed time: every wait
polls for a state with a generous deadline.
"""

import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures"))

import harness  # noqa: E402
import e2e_util as u  # noqa: E402


@pytest.fixture
def cluster_with(controller_factory):
    """cluster_with(config_overrides, n=1, **agent_kw) -> (controller, [Agent])."""
    agents = []

    def make(config_overrides=None, n=1, **kw):
        ctl = controller_factory(config_overrides=config_overrides)
        return ctl, u.start_agents(ctl, n, agents, **kw)

    yield make
    for a in agents:
        a.stop()


def test_agent_flags(build_dir, tmp_path):
    exe = os.path.join(build_dir, "sluice-agent")
    if not os.access(exe, os.X_OK):
        pytest.skip("sluice-agent is not built")

    def run(*args):
        return subprocess.run([exe] + list(args), capture_output=True, text=True, timeout=10)

    r = run("--help")
    assert r.returncode == 0
    for flag in ("--controller", "--token", "--name", "--workdir", "--gpus", "--gpu-model",
                 "--gpu-memory", "--cpus", "--memory", "--pool", "--labels", "--heartbeat",
                 "--launcher", "--grace", "{image}"):
        assert flag in r.stdout, flag
    r = run("--version")
    assert r.returncode == 0 and r.stdout.startswith("sluice-agent ")
    base = ["--controller", "127.0.0.1:1", "--token", "t", "--workdir", str(tmp_path / "w")]
    for args, word in [(["--bogus"], "unknown option"),
                       (["--workdir", "x", "--token", "t"], "--controller"),
                       (base[:2] + base[4:], "--token"),
                       (base + ["--gpus", "many"], "--gpus"),
                       (base + ["--memory", "12Qi"], "--memory"),
                       (base + ["--cpus", "-1"], "--cpus"),
                       (base + ["--labels", "rack"], "--labels"),
                       (base + ["--heartbeat", "0"], "--heartbeat"),
                       (base + ["--launcher", "run {img}"], "placeholder"),
                       (["--controller", "nohostport"] + base[2:], "HOST:PORT")]:
        env = dict(os.environ)
        env.pop("SLUICE_CLUSTER_TOKEN", None)
        r = subprocess.run([exe] + args, capture_output=True, text=True, timeout=10, env=env)
        assert r.returncode == 2, (args, r.returncode, r.stderr)
        assert word in r.stderr, (args, r.stderr)


def test_launch_environment_and_cwd(controller, cluster):
    (agent,) = cluster(1, gpus=4)
    j = controller.submit({"name": "envjob", "tasks": 2, "gpus": 2, "cpus": "1", "memory": "1Gi",
                           "command": u.sh("env; echo cwd=$(pwd)"),
                           "env": {"MY_VAR": "hello world", "RANK": "overridden?"}})
    done = controller.wait_job(j["id"], "succeeded")
    pl = sorted(done["placement"], key=lambda p: p["task"])
    assert [p["task"] for p in pl] == [0, 1]
    local_ranks, gpus_seen, masters = set(), [], set()
    for p in pl:
        env = u.env_lines(u.job_log(controller, j["id"], p["task"]))
        assert env["SLUICE_JOB_ID"] == str(j["id"])
        assert env["SLUICE_TASK_INDEX"] == str(p["task"])
        assert env["RANK"] == str(p["task"])  # Sluice's variables win over the job's env
        assert env["WORLD_SIZE"] == "2"
        assert env["CUDA_VISIBLE_DEVICES"] == ",".join(str(g) for g in p["gpus"])
        assert len(p["gpus"]) == 2
        assert env["MY_VAR"] == "hello world"
        assert env["SLUICE_NODE"] == "n1"
        assert int(env["MASTER_PORT"]) > 0
        assert env["MASTER_ADDR"]
        # Each job works in its own directory (issue 8), which is also its TMPDIR.
        jobdir = os.path.join(os.path.realpath(agent.workdir), "jobs", u.job_name(controller, j["id"]))
        assert env["cwd"] == jobdir and env["TMPDIR"] == jobdir
        local_ranks.add(env["LOCAL_RANK"])
        gpus_seen += p["gpus"]
        masters.add((env["MASTER_ADDR"], env["MASTER_PORT"]))
    assert local_ranks == {"0", "1"}
    assert sorted(gpus_seen) == [0, 1, 2, 3]
    assert len(masters) == 1
    # The log files are where docs/cli.md says.
    assert os.path.exists(os.path.join(agent.workdir, "logs", u.job_name(controller, j["id"]), "0.log"))


def test_task_without_gpus_sees_none(controller, cluster):
    cluster(1, gpus=2)
    j = controller.submit({"command": u.sh("echo cvd=[$CUDA_VISIBLE_DEVICES]")})
    controller.wait_job(j["id"], "succeeded")
    assert u.job_log(controller, j["id"]).strip() == "cvd=[]"


def test_logs_pages_offsets_and_binary(controller, cluster):
    cluster(1, gpus=0)
    j = controller.submit({"command": u.sh(
        "i=0; while [ $i -lt 3000 ]; do echo line-$i-................................................; "
        "i=$((i+1)); done; echo tail >&2")})
    controller.wait_job(j["id"], "succeeded")
    text = u.job_log(controller, j["id"])
    lines = text.splitlines()
    assert len(text) > 3 * 65536 // 2
    assert len(lines) == 3001
    assert lines[0].startswith("line-0-") and lines[2999].startswith("line-2999-")
    assert lines[-1] == "tail"  # stderr goes to the same log
    tok = controller.admin_token
    st, body = controller.request("GET", "/v1/jobs/%d/logs?task=0&offset=5&limit=10" % j["id"], token=tok)
    assert st == 200 and body["data"] == text[5:15] and body["offset"] == 5 and not body["eof"]
    st, body = controller.request("GET", "/v1/jobs/%d/logs?task=0&offset=%d" % (j["id"], len(text)),
                                  token=tok)
    assert st == 200 and body["data"] == "" and body["eof"]

    # Bytes that are not UTF-8 come back as '?', one per byte, so offsets stay file offsets.
    b = controller.submit({"command": u.sh("printf 'a\\377\\376b\\303'; printf '\\303\\251z'")})
    controller.wait_job(b["id"], "succeeded")
    assert u.job_log(controller, b["id"]) == "a??b?\u00e9z"


def test_exit_codes_and_signals(controller, cluster):
    cluster(1, gpus=0)
    ok = controller.submit({"command": ["true"]})
    bad = controller.submit({"command": u.sh("exit 3")})
    sig = controller.submit({"command": u.sh("kill -KILL $$")})
    j = controller.wait_job(ok["id"], "succeeded")
    assert j["placement"][0]["exit_code"] == 0
    j = controller.wait_job(bad["id"], "failed")
    assert j["placement"][0]["exit_code"] == 3 and j["placement"][0]["signal"] in (0, None)
    j = controller.wait_job(sig["id"], "failed")
    assert j["placement"][0]["signal"] == 9 and j["placement"][0]["exit_code"] == 137


def test_cancel_sigterm_then_sigkill_whole_group(cluster_with, tmp_path):
    ctl, (agent,) = cluster_with({"kill_grace": 1}, gpus=0)
    pidfile = tmp_path / "child.pid"
    # Ignores SIGTERM and leaves a child in its process group: SIGKILL after
    # the grace period must take both.
    term_ignorer = ctl.submit({"command": u.sh(
        "trap '' TERM; sleep 1000 & echo $! > %s; while :; do sleep 0.2; done" % pidfile)})
    polite = ctl.submit({"command": ["sleep", "1000"]})
    (spid,) = u.wait_running_pids(ctl, term_ignorer["id"])
    (ppid,) = u.wait_running_pids(ctl, polite["id"])
    u.wait_path(str(pidfile))
    child = int(pidfile.read_text().strip())
    assert u.pid_alive(spid) and u.pid_alive(child) and u.pid_alive(ppid)
    for jid in (term_ignorer["id"], polite["id"]):
        st, body = ctl.request("DELETE", "/v1/jobs/%d" % jid, token=ctl.token("alice"))
        assert st == 200 and body["state"] == "cancelled", (st, body)
    harness.wait_for(lambda: not u.pid_alive(ppid), what="polite task gone")
    harness.wait_for(lambda: not u.pid_alive(spid) and not u.pid_alive(child),
                     what="term_ignorer task and its child gone")
    # The agent reports how each ended: SIGTERM sufficed for one, SIGKILL for the other.
    harness.wait_for(lambda: "job=%d task=0 pid=%d exited exit_code=143 signal=15" % (polite["id"], ppid)
                     in agent.log(), what="polite exit reported")
    harness.wait_for(lambda: "job=%d task=0 pid=%d exited exit_code=137 signal=9" % (term_ignorer["id"], spid)
                     in agent.log(), what="term_ignorer exit reported")
    assert ctl.job(term_ignorer["id"])["state"] == "cancelled"


def test_container_launcher_records_what_it_was_given(controller, cluster, tmp_path):
    rec = tmp_path / "rec"
    (agent,) = cluster(1, gpus=4, extra_args=u.launcher_args(str(rec)))
    j = controller.submit({"image": "nvcr.io/megatron:24.01", "gpus": 2,
                           "command": ["/bin/echo", "train", "--lr", "3e-4"], "env": {"K": "V"}})
    done = controller.wait_job(j["id"], "succeeded")
    r = u.read_record(str(rec / ("launch-%d-0.txt" % j["id"])))
    gpus = ",".join(str(g) for g in done["placement"][0]["gpus"])
    assert r["image"] == "nvcr.io/megatron:24.01"
    assert r["arg"] == ["/bin/echo", "train", "--lr", "3e-4"]
    assert r["job"] == str(j["id"]) and r["task"] == "0" and r["node"] == "n1"
    assert r["gpus"] == gpus and r["CUDA_VISIBLE_DEVICES"] == gpus
    assert r["RANK"] == "0" and r["WORLD_SIZE"] == "1"
    assert u.job_log(controller, j["id"]).strip() == "train --lr 3e-4"
    # An image without a command: the launcher gets no arguments after "--".
    k = controller.submit({"image": "busybox"})
    controller.wait_job(k["id"], "succeeded")
    r = u.read_record(str(rec / ("launch-%d-0.txt" % k["id"])))
    assert r["image"] == "busybox" and r["arg"] == []


def test_image_without_launcher_fails_with_reason(controller, cluster):
    cluster(1, gpus=0)
    j = controller.submit({"image": "nvcr.io/megatron"})
    done = controller.wait_job(j["id"], "failed")
    text = str(done)
    assert "image nvcr.io/megatron needs a container launcher; none is configured on node n1 (--launcher)" \
        in text, done


def test_command_that_cannot_run_fails_with_reason(controller, cluster):
    cluster(1, gpus=0)
    j = controller.submit({"command": ["/nonexistent/prog", "x"]})
    done = controller.wait_job(j["id"], "failed")
    assert "cannot execute /nonexistent/prog on node n1: No such file or directory" in str(done), done
    assert "cannot execute /nonexistent/prog" in u.job_log(controller, j["id"])


def test_controller_kill9_and_restart_keeps_tasks_running(controller, cluster, tmp_path):
    cluster(1, gpus=2)
    go, starts = tmp_path / "go", tmp_path / "starts"
    j = controller.submit({"gpus": 1, "command": u.sh(
        "echo x >> %s; while [ ! -e %s ]; do sleep 0.1; done; echo finished" % (starts, go))})
    (pid,) = u.wait_running_pids(controller, j["id"])
    controller.kill9()
    assert u.pid_alive(pid)
    controller.start()
    controller.wait_node("n1", "up")
    (pid2,) = u.wait_running_pids(controller, j["id"])
    assert pid2 == pid and u.pid_alive(pid)
    go.write_text("")
    controller.wait_job(j["id"], "succeeded")
    assert starts.read_text() == "x\n"  # re-adopted, never restarted
    assert u.job_log(controller, j["id"]).strip() == "finished"


def test_agent_restart_readopts_running_task(controller, cluster, tmp_path):
    (agent,) = cluster(1, gpus=1)
    go = tmp_path / "go"
    j = controller.submit({"gpus": 1, "command": u.sh("while [ ! -e %s ]; do sleep 0.1; done" % go)})
    (pid,) = u.wait_running_pids(controller, j["id"])
    try:
        agent.kill9()
        assert u.pid_alive(pid)
        agent.start()
        harness.wait_for(lambda: "pid=%d re-adopted" % pid in agent.log(), what="re-adoption")
        harness.wait_for(lambda: "registered with controller" in agent.log().split("re-adopted", 1)[1],
                         what="the restarted agent registered")
        (pid2,) = u.wait_running_pids(controller, j["id"])
        assert pid2 == pid and u.pid_alive(pid)
        # The task's monitor outlived the agent and records its exit status,
        # which the restarted agent reads (issue 9; before, "exit status unknown").
        go.write_text("")
        done = controller.wait_job(j["id"], "succeeded")
        assert "exit status unknown" not in str(done)
    finally:
        go.write_text("")
        u.kill_pid_group(pid)


@pytest.fixture
def fake_nvml(tmp_path):
    """A directory holding a fake libnvidia-ml.so.1 (fixtures/fake_nvml.c)."""
    return u.build_fake_nvml(tmp_path / "nvml")


@pytest.mark.parametrize("env,expect", [
    ({}, (8, "H100", "81559Mi")),
    ({"FAKE_NVML_COUNT": "2", "FAKE_NVML_NAME": "NVIDIA A100-SXM4-80GB"}, (2, "A100", "81559Mi")),
    ({"FAKE_NVML_FAIL": "1"}, (0, None, None)),
])
def test_gpus_found_through_nvml_at_run_time(controller, fake_nvml, env, expect, monkeypatch):
    # The agent dlopen()s libnvidia-ml.so.1 at start-up: no --gpus here.
    monkeypatch.setenv("LD_LIBRARY_PATH", fake_nvml)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    a = harness.Agent(controller, "gpu1", gpus=0)
    try:
        a.start()
        n = controller.node("gpu1")
        assert (n["gpus"], n["gpu_model"] if n["gpus"] else None,
                n["gpu_memory"] if n["gpus"] else None) == expect, n
        if expect[0]:
            assert "NVML: %d GPU(s)" % expect[0] in a.log()
            j = controller.submit({"gpus": expect[0], "command": u.sh("echo $CUDA_VISIBLE_DEVICES")})
            controller.wait_job(j["id"], "succeeded")
            assert u.job_log(controller, j["id"]).strip() == ",".join(str(i) for i in range(expect[0]))
        else:
            assert "no GPUs: nvmlInit_v2 failed" in a.log()
    finally:
        a.stop()


def test_one_agent_per_workdir(controller, cluster):
    (agent,) = cluster(1, gpus=0)
    second = subprocess.run([agent.binary] + agent.args[:4] + ["--name", "other", "--workdir", agent.workdir],
                            capture_output=True, text=True, timeout=10)
    assert second.returncode == 2
    assert "is in use by process %d (sluice-agent)" % agent.proc.pid in second.stderr
    assert controller.node("other") is None
